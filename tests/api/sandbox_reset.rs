//! `POST /sandbox/reset` (CONTRACT 12): the calling commerce's test data goes, counted, in one
//! transaction; the other commerce's stays; customers can be kept; ids can be used again; and
//! production answers 404 like every sandbox operation.

use lopdf::{Dictionary, Document, Object, Stream, dictionary};
use serde_json::{Value, json};

use crate::helpers::*;

/// A one-page PDF, enough for a signature process.
pub fn tiny_pdf() -> Vec<u8> {
    let mut doc = Document::with_version("1.5");
    let pages_id = doc.new_object_id();
    let content = doc.add_object(Stream::new(
        Dictionary::new(),
        b"BT /F1 12 Tf 20 20 Td (Contrato) Tj ET".to_vec(),
    ));
    let font = doc.add_object(dictionary! {
        "Type" => "Font", "Subtype" => "Type1", "BaseFont" => "Helvetica",
    });
    let page = doc.add_object(dictionary! {
        "Type" => "Page", "Parent" => pages_id, "Contents" => content,
        "MediaBox" => vec![0.into(), 0.into(), 595.into(), 842.into()],
    });
    doc.objects.insert(
        pages_id,
        Object::Dictionary(dictionary! {
            "Type" => "Pages", "Count" => 1, "Kids" => vec![Object::from(page)],
            "Resources" => dictionary! { "Font" => dictionary! { "F1" => font } },
        }),
    );
    let catalog = doc.add_object(dictionary! { "Type" => "Catalog", "Pages" => pages_id });
    doc.trailer.set("Root", catalog);
    let mut out = Vec::new();
    doc.save_to(&mut out).unwrap();
    out
}

/// A customer, a mandate with an installment due today, activated with an approving card and
/// charged (a charge attempt, activation and payment events), and a signature process.
pub async fn populate(app: &TestApp, user: &str, rut_body: u32, mandate: &str) {
    use base64::Engine;
    app.create_customer(user, &rut(rut_body)).await;
    let created = app
        .create_mandate(&dynamic_body(
            app,
            user,
            mandate,
            &[("c1", 1000, 0), ("c2", 2000, 30)],
        ))
        .await;
    let internal = created["mandate"]["internalId"].as_str().unwrap();
    app.post(
        &format!("/sandbox/mandates/{internal}/activate"),
        &json!({"paymentMethodId": 3, "card": {"number": "4242424242424242", "expiry": "12/30", "cvv": "123"}}),
    )
    .await
    .expect(200, "SANDBOX_ACTIVATE_OK");
    app.post("/signature", &json!({
        "process": {"processName": "Contrato", "externalProcessId": "P-1"},
        "signatories": [{"userId": user, "order": 1, "type": "FES"}],
        "documents": [{"documentName": "contrato.pdf",
                       "contentBase64": base64::engine::general_purpose::STANDARD.encode(tiny_pdf()),
                       "signatureData": [{"signatory": {"userId": user}, "mode": "LAST_PAGE"}]}],
        "urls": {"callback": "https://merchant.example/done", "webhook": "https://merchant.example/hooks/signature"}
    }))
    .await
    .expect(201, "SIGNATURE_CREATE_OK");
}

/// Rows of each kind belonging to `commerce`, counted with SQL beside the engine.
pub fn rows_of(app: &TestApp, commerce: &str) -> Value {
    app.running
        .state
        .store()
        .read(|c| {
            let id: i64 =
                c.query_row("SELECT id FROM commerces WHERE code = ?1", &[commerce.into()], |r| {
                    r.get(0)
                })?;
            let count = |sql: &str| -> mandato::store::db::Result<i64> {
                c.query_row(sql, &[id.into()], |r| r.get(0))
            };
            Ok(json!({
                "customers": count("SELECT count(*) FROM customers WHERE commerce_id = ?1")?,
                "mandates": count("SELECT count(*) FROM mandates WHERE commerce_id = ?1")?,
                "installments": count("SELECT count(*) FROM installments WHERE commerce_id = ?1")?,
                "chargeAttempts": count("SELECT count(*) FROM charge_attempts WHERE installment_seq IN
                    (SELECT seq FROM installments WHERE commerce_id = ?1)")?,
                "events": count("SELECT count(*) FROM events WHERE commerce_id = ?1")?,
                "deliveryAttempts": count("SELECT count(*) FROM delivery_attempts WHERE event_seq IN
                    (SELECT seq FROM events WHERE commerce_id = ?1)")?,
                "signatureProcesses": count("SELECT count(*) FROM signature_processes WHERE commerce_id = ?1")?,
            }))
        })
        .unwrap()
}

#[tokio::test(flavor = "multi_thread")]
async fn reset_removes_only_the_callers_data_and_ids_can_be_used_again() {
    let mut app = spawn_app().await;
    app.act_as(OTHER_COMMERCE).await;
    populate(&app, "cust-other", 13_000_000, "M-OTHER").await;
    app.act_as(COMMERCE).await;
    populate(&app, "cust-1", 12_000_000, "M-1").await;
    app.create_customer("cust-2", &rut(12_500_000)).await;
    app.run_charging(app.today()).await;

    let before = rows_of(&app, COMMERCE);
    let other_before = rows_of(&app, OTHER_COMMERCE);
    assert_eq!(before["mandates"], 1);
    assert_eq!(before["installments"], 2);
    assert_eq!(before["chargeAttempts"], 1, "{before}");
    assert!(before["events"].as_i64().unwrap() >= 2, "{before}");

    let reply = app
        .post("/sandbox/reset", &json!({"keepCustomers": false}))
        .await;
    reply.expect(200, "SANDBOX_RESET_OK");
    let counts = &reply.body["payload"];
    // The counts are what was there (delivery attempts may grow until the moment of the reset,
    // so they are checked for what SQL sees afterwards: none).
    for field in [
        "customers",
        "mandates",
        "installments",
        "chargeAttempts",
        "events",
        "signatureProcesses",
    ] {
        assert_eq!(counts[field], before[field], "{field}: {counts}");
    }
    assert!(
        counts["deliveryAttempts"].as_i64().unwrap()
            >= before["deliveryAttempts"].as_i64().unwrap()
    );
    let after = rows_of(&app, COMMERCE);
    for (field, n) in after.as_object().unwrap() {
        assert_eq!(n, 0, "{field} left after the reset: {after}");
    }
    let other_after = rows_of(&app, OTHER_COMMERCE);
    for field in [
        "customers",
        "mandates",
        "installments",
        "events",
        "signatureProcesses",
    ] {
        assert_eq!(
            other_after[field], other_before[field],
            "the other commerce's {field}"
        );
    }
    let integrity: Vec<String> = app
        .running
        .state
        .store()
        .read(|db| match db.as_sqlite() {
            Some(c) => {
                let check = || -> rusqlite::Result<Vec<String>> {
                    c.prepare("PRAGMA foreign_key_check")?
                        .query_map([], |r| r.get::<_, String>(0))?
                        .collect()
                };
                Ok(check().map_err(mandato::store::db::Error::from)?)
            }
            // PostgreSQL checks every foreign key at each statement: none can dangle.
            None => Ok(Vec::new()),
        })
        .unwrap();
    assert!(integrity.is_empty(), "dangling references: {integrity:?}");

    // The same ids work again: customer, mandate, and its lookup finds the new one.
    assert_eq!(app.get("/mandate/id/M-1").await.status, 404);
    let reply = app
        .post("/user", &customer_body("cust-1", &rut(12_000_000)))
        .await;
    reply.expect(201, "USER_CREATE_OK");
    let again = app
        .create_mandate(&dynamic_body(&app, "cust-1", "M-1", &[("c1", 1000, 0)]))
        .await;
    let found = app.get("/mandate/id/M-1").await;
    found.expect(200, "MANDATE_DETAIL_OK");
    assert_eq!(
        found.body["payload"]["mandate"]["internalId"],
        again["mandate"]["internalId"]
    );

    // keepCustomers: the mandate goes, the customer stays (and is counted as kept).
    let reply = app
        .post("/sandbox/reset", &json!({"keepCustomers": true}))
        .await;
    reply.expect(200, "SANDBOX_RESET_OK");
    assert_eq!(reply.body["payload"]["customers"], 0);
    assert_eq!(reply.body["payload"]["mandates"], 1);
    let kept = rows_of(&app, COMMERCE);
    assert_eq!(kept["customers"], 1);
    assert_eq!(kept["mandates"], 0);
    // The kept customer can hold a new mandate with the reused id at once.
    app.create_mandate(&dynamic_body(&app, "cust-1", "M-1", &[("c1", 1000, 0)]))
        .await;

    // An empty body is a 400 naming it, not a reset.
    let reply = app
        .request_raw(reqwest::Method::POST, "/sandbox/reset", "")
        .await;
    assert_eq!(reply.status, 400);
    assert_eq!(rows_of(&app, COMMERCE)["mandates"], 1);
}

#[tokio::test(flavor = "multi_thread")]
async fn reset_is_refused_in_production() {
    let mut app = spawn_app_with(Options {
        environment: mandato::config::Environment::Production,
        ..Options::default()
    })
    .await;
    // The JWE helper is sandbox-only too: the password is encrypted here.
    let key = app.public_key().await;
    let jwe = mandato::auth::jwe::encrypt_password(PASSWORD, &key).expect("JWE");
    let reply = app
        .post(
            "/login",
            &json!({"username": app.commerce, "password": jwe}),
        )
        .await;
    reply.expect(200, "LOGIN_OK");
    app.token = Some(reply.body["payload"]["token"].as_str().unwrap().to_string());
    app.create_customer("cust-1", &rut(12_000_000)).await;
    let reply = app
        .post("/sandbox/reset", &json!({"keepCustomers": false}))
        .await;
    assert_eq!(reply.status, 404, "{}", reply.body);
    assert_eq!(rows_of(&app, COMMERCE)["customers"], 1);
}
