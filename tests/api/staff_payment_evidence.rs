//! The file staff attach to a payment they record by hand: kept with the payment in its
//! transaction, refused (400 at its field) when it is no PDF, PNG or JPEG by its bytes or is
//! too large, shown on the installment's page (name, size, kind) and read back as uploaded.

use base64::Engine;
use chrono::Duration;
use serde_json::{Value, json};

use crate::helpers::*;
use crate::link::{Linked, get_page, linked};
use crate::staff_ui_api::{Desk, member, owner};

const APPROVE: &str = "4111111111111111";

fn b64(bytes: &[u8]) -> String {
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

/// A small PNG: its signature and the start of a header are what the check reads.
fn png() -> Vec<u8> {
    let mut bytes = b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR".to_vec();
    bytes.extend_from_slice(&[7; 64]);
    bytes
}

async fn paid_mandate() -> Linked {
    let l = linked(|app| {
        dynamic_body(
            app,
            "cust-001",
            "DYN-EV",
            &[("c1", 15000, 10), ("c2", 15000, 40), ("c3", 15000, 70)],
        )
    })
    .await;
    l.app
        .post(
            &format!("/sandbox/mandates/{}/activate", l.internal_id),
            &json!({"paymentMethodId": 3, "card": {"number": APPROVE, "expiry": "12/35", "cvv": "123"}}),
        )
        .await
        .expect(200, "SANDBOX_ACTIVATE_OK");
    l
}

async fn installments(desk: &Desk<'_>, mandate: &str) -> Vec<Value> {
    let detail = desk.get(&format!("/mandates/{mandate}")).await;
    detail.expect(200, "MANDATE_OK");
    detail.body["payload"]["installments"]
        .as_array()
        .unwrap()
        .clone()
}

fn pay_body(l: &Linked, ids: &[&str], amount: i64, file: Option<Value>) -> Value {
    let mut body = json!({"installmentIds": ids,
        "payment": {"date": (l.app.today() - Duration::days(1)).to_string(), "amount": amount,
                    "currencyId": "CLP", "method": "TRANSFER", "authorizationCode": "TRX-77"}});
    if let Some(file) = file {
        body["evidenceFile"] = file;
    }
    body
}

/// The file as staff read it: status, headers and bytes.
async fn download(l: &Linked, desk: &Desk<'_>, url: &str) -> reqwest::Response {
    let mut request = l.app.client.get(format!("{}{url}", l.app.base));
    if let Some(cookie) = &desk.cookie {
        request = request.header("cookie", cookie);
    }
    request.send().await.unwrap()
}

#[tokio::test(flavor = "multi_thread")]
async fn a_payments_file_is_kept_with_it_shown_on_its_installments_and_read_back() {
    let l = paid_mandate().await;
    let admin = owner(&l.app).await;
    let rows = installments(&admin, &l.internal_id).await;
    let (c1, c2) = (
        rows[0]["internalId"].as_str().unwrap().to_string(),
        rows[1]["internalId"].as_str().unwrap().to_string(),
    );
    let pdf = b"%PDF-1.4\n% voucher of the transfer TRX-77\n%%EOF\n".to_vec();
    let reply = admin
        .post(
            &format!("/mandates/{}/payments", l.internal_id),
            pay_body(
                &l,
                &[&c1, &c2],
                30000,
                Some(
                    json!({"name": "C:\\fakepath\\comprobante transferencia.pdf",
                            "contentBase64": b64(&pdf)}),
                ),
            ),
        )
        .await;
    reply.expect(200, "MANDATE_OK");
    let after = reply.body["payload"]["installments"].as_array().unwrap();
    let file = after[0]["evidenceFile"].clone();
    assert_eq!(file["name"], "comprobante transferencia.pdf");
    assert_eq!(file["contentType"], "application/pdf");
    assert_eq!(file["sizeBytes"], pdf.len());
    assert_eq!(file["uploadedBy"], "owner@merchant.example");
    assert_eq!(after[0]["payment"]["authorizationCode"], "TRX-77");
    // One payment, one file, for both installments it paid; none on the third.
    assert_eq!(after[1]["evidenceFile"], file);
    assert!(after[2]["evidenceFile"].is_null(), "{}", after[2]);

    // Any staff role reads it back as uploaded, under its name, never as something to run.
    let viewer = member(&l.app, &admin, "viewer").await;
    let url = file["url"].as_str().unwrap();
    let response = download(&l, &viewer, url).await;
    assert_eq!(response.status(), 200);
    let headers = response.headers().clone();
    assert_eq!(headers["content-type"], "application/pdf");
    let disposition = headers["content-disposition"].to_str().unwrap();
    assert!(
        disposition.starts_with("inline; filename=\"comprobante transferencia.pdf\""),
        "{disposition}"
    );
    assert!(
        headers["content-security-policy"]
            .to_str()
            .unwrap()
            .contains("sandbox")
    );
    assert_eq!(response.bytes().await.unwrap().to_vec(), pdf);

    // Without a session, nothing; an unknown id is a 404.
    let anonymous = Desk::anonymous(&l.app);
    assert_eq!(download(&l, &anonymous, url).await.status(), 401);
    admin
        .get("/payment-evidence/pef_nothing")
        .await
        .expect(404, "EVIDENCE_FILE_NOT_FOUND");

    // The customer's receipt says a file backs the payment: its name, kind and size.
    let receipt = get_page(&format!("{}/comprobante/{c1}", l.link)).await;
    assert_eq!(receipt.status, reqwest::StatusCode::OK);
    assert!(
        receipt.html.contains(&format!(
            "<dt>Respaldo adjunto</dt><dd>comprobante transferencia.pdf (PDF, {} B)</dd>",
            pdf.len()
        )),
        "{}",
        receipt.html
    );

    // The staff audit names the file by name, kind, size and digest, not by its bytes.
    let audit = admin.get("/audit/staff").await;
    let text = audit.body.to_string();
    assert!(text.contains("comprobante transferencia.pdf"), "{text}");
    assert!(!text.contains(&b64(&pdf)), "{text}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_file_that_is_no_pdf_png_or_jpeg_by_its_bytes_is_refused_and_nothing_is_paid() {
    let l = paid_mandate().await;
    let admin = owner(&l.app).await;
    let rows = installments(&admin, &l.internal_id).await;
    let c1 = rows[0]["internalId"].as_str().unwrap().to_string();
    let path = format!("/mandates/{}/payments", l.internal_id);
    // A script named as a PDF: the name is not trusted.
    let reply = admin
        .post(
            &path,
            pay_body(
                &l,
                &[&c1],
                15000,
                Some(json!({"name": "voucher.pdf", "contentBase64": b64(b"<script>alert(1)</script>")})),
            ),
        )
        .await;
    reply.expect(400, "VALIDATION_ERROR");
    assert_eq!(reply.error_fields(), ["evidenceFile.contentBase64"]);
    assert_eq!(error_codes(&reply), ["UNSUPPORTED_FILE_TYPE"]);

    // Every bad field at once: no name, not base64.
    let reply = admin
        .post(
            &path,
            pay_body(&l, &[&c1], 15000, Some(json!({"contentBase64": "%%%"}))),
        )
        .await;
    reply.expect(400, "VALIDATION_ERROR");
    assert_eq!(
        sorted_fields(&reply),
        ["evidenceFile.contentBase64", "evidenceFile.name"]
    );

    // Over 5 MiB, though inside the route's body limit.
    let mut big = png();
    big.resize(5 * 1024 * 1024 + 1, 0);
    let reply = admin
        .post(
            &path,
            pay_body(
                &l,
                &[&c1],
                15000,
                Some(json!({"name": "big.png", "contentBase64": b64(&big)})),
            ),
        )
        .await;
    reply.expect(400, "VALIDATION_ERROR");
    assert_eq!(error_codes(&reply), ["FILE_TOO_LARGE"]);

    // Nothing was paid, and no file kept.
    let rows = installments(&admin, &l.internal_id).await;
    assert_eq!(rows[0]["state"]["name"], "PENDING");
    assert!(rows[0]["evidenceFile"].is_null());

    // A payment refused for another reason keeps no file either (one transaction).
    let reply = admin
        .post(
            &path,
            pay_body(
                &l,
                &[&c1],
                99,
                Some(json!({"name": "ok.png", "contentBase64": b64(&png())})),
            ),
        )
        .await;
    assert_eq!(reply.status, 400, "{}", reply.body);
    let rows = installments(&admin, &l.internal_id).await;
    assert!(rows[0]["evidenceFile"].is_null());
}

#[tokio::test(flavor = "multi_thread")]
async fn a_five_mib_jpeg_fits_the_routes_body_limit_and_a_larger_body_is_413() {
    let l = paid_mandate().await;
    let admin = owner(&l.app).await;
    let rows = installments(&admin, &l.internal_id).await;
    let c1 = rows[0]["internalId"].as_str().unwrap().to_string();
    let path = format!("/mandates/{}/payments", l.internal_id);
    let mut jpeg = vec![0xFF, 0xD8, 0xFF, 0xE0];
    jpeg.resize(5 * 1024 * 1024, 0x11);
    let reply = admin
        .post(
            &path,
            pay_body(
                &l,
                &[&c1],
                15000,
                Some(json!({"name": "foto.jpg", "contentBase64": b64(&jpeg)})),
            ),
        )
        .await;
    reply.expect(200, "MANDATE_OK");
    let file = &reply.body["payload"]["installments"][0]["evidenceFile"];
    assert_eq!(file["contentType"], "image/jpeg");
    assert_eq!(file["sizeBytes"], 5 * 1024 * 1024);

    // The route stays bounded: a body over 8 MiB is refused before it is read.
    let c2 = rows[1]["internalId"].as_str().unwrap().to_string();
    let mut body = pay_body(&l, &[&c2], 15000, None);
    body["padding"] = json!("x".repeat(9 * 1024 * 1024));
    let reply = admin.post(&path, body).await;
    assert_eq!(reply.status, 413, "{}", reply.body);
}

/// The real binary at debug level: neither the bytes of an evidence file (accepted or
/// refused) nor their base64 reach its log.
#[tokio::test(flavor = "multi_thread")]
async fn an_evidence_files_bytes_never_reach_the_log() {
    use crate::process::{Api, install, serve_logged, stop};
    use reqwest::Method;

    const CODE: &str = "EVIDENCIA-1";
    const PASSWORD: &str = "Merchant-Pass-e5Vd2Kq8";
    let data = tempfile::tempdir().unwrap();
    let log = data.path().join("serve.log");
    let installation = install(data.path(), CODE, PASSWORD);
    let (mut server, base) = serve_logged(data.path(), &[("MANDATO_LOG", "debug")], &log);

    let mut api = Api::new(base.clone(), installation.api_key.clone(), CODE);
    api.login(PASSWORD).await;
    api.call(
        Method::POST,
        "/user",
        Some(json!({"customer": {"userId": "u1",
            "identificationDocument": {"type": "RUT", "number": "12.345.678-5"},
            "personalInformation": {"firstName": "Ana", "lastName": "Pérez"},
            "contacts": {"email": "ana@example.cl"}}})),
    )
    .await;
    let due = (chrono::Utc::now().date_naive() + Duration::days(10)).to_string();
    let created = api
        .call(
            Method::POST,
            "/mandate",
            Some(json!({"customer": {"userId": "u1"},
                "mandate": {"id": "LOG-1", "type": "DYNAMIC", "name": "Cuenta",
                            "charges": {"currencyId": "CLP", "maxAmount": 100000}},
                "installments": [{"id": "c1", "amount": 1000, "currencyId": "CLP", "installmentDueDate": due}]})),
        )
        .await;
    let mandate = created["payload"]["mandate"]["internalId"]
        .as_str()
        .unwrap()
        .to_string();
    api.call(
        Method::POST,
        &format!("/sandbox/mandates/{mandate}/activate"),
        Some(json!({"paymentMethodId": 3, "card": {"number": APPROVE, "expiry": "12/35", "cvv": "123"}})),
    )
    .await;

    // The owner, signed in at first start.
    let client = reqwest::Client::new();
    let setup = client
        .post(format!("{base}/admin/api/setup"))
        .json(&json!({"email": "owner@evidencia.example", "password": "a long password"}))
        .send()
        .await
        .unwrap();
    assert_eq!(setup.status(), 201);
    let cookie = setup.headers()["set-cookie"]
        .to_str()
        .unwrap()
        .split(';')
        .next()
        .unwrap()
        .to_string();
    let csrf = setup.json::<Value>().await.unwrap()["payload"]["csrfToken"]
        .as_str()
        .unwrap()
        .to_string();
    let staff = |method: Method, path: &str| {
        client
            .request(method, format!("{base}/admin/api{path}"))
            .header("cookie", &cookie)
            .header("x-csrf-token", &csrf)
    };
    let detail: Value = staff(Method::GET, &format!("/mandates/{mandate}"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let installment = detail["payload"]["installments"][0]["internalId"]
        .as_str()
        .unwrap()
        .to_string();
    let pay = |file: Value| {
        json!({"installmentIds": [installment],
            "payment": {"date": chrono::Utc::now().date_naive().pred_opt().unwrap().to_string(),
                        "amount": 1000, "currencyId": "CLP", "method": "TRANSFER"},
            "evidenceFile": file})
    };

    // Refused (no PDF by its bytes), then accepted: each holds a text like no other.
    let refused = b"REFUSED-EVIDENCE-q4Zm8Tx2 not a pdf".to_vec();
    let accepted = b"%PDF-1.4\n% ACCEPTED-EVIDENCE-w7Kp3Ny6\n%%EOF\n".to_vec();
    let response = staff(Method::POST, &format!("/mandates/{mandate}/payments"))
        .json(&pay(
            json!({"name": "a.pdf", "contentBase64": b64(&refused)}),
        ))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 400);
    let response = staff(Method::POST, &format!("/mandates/{mandate}/payments"))
        .json(&pay(
            json!({"name": "b.pdf", "contentBase64": b64(&accepted)}),
        ))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    let paid: Value = response.json().await.unwrap();
    let url = paid["payload"]["installments"][0]["evidenceFile"]["url"]
        .as_str()
        .unwrap()
        .to_string();
    let read = client
        .get(format!("{base}{url}"))
        .header("cookie", &cookie)
        .send()
        .await
        .unwrap();
    assert_eq!(read.bytes().await.unwrap().to_vec(), accepted);

    stop(&mut server.0);
    let text = std::fs::read_to_string(&log).unwrap();
    assert!(text.contains("mandato is serving"), "{text}");
    for secret in [
        "REFUSED-EVIDENCE-q4Zm8Tx2".to_string(),
        "ACCEPTED-EVIDENCE-w7Kp3Ny6".to_string(),
        b64(&refused)[..24].to_string(),
        b64(&accepted)[..24].to_string(),
    ] {
        assert!(!text.contains(&secret), "{secret} is in the log");
    }
}
