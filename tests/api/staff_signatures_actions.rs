//! What staff do to signature processes from the back office: start one for a commerce
//! (`POST /admin/api/signatures`, the merchant's body and rules, its 16 MiB limit), read each
//! signatory's link, and cancel one (`POST /admin/api/signatures/{id}/cancel`): the state, the
//! trail's act, the webhook event and the staff audit in one change; refused when already
//! cancelled (410) or finished (400).

use serde_json::{Value, json};

use crate::helpers::*;
use crate::signatures::{
    Browser, RUT_A, RUT_B, StaffSession, app_with_customers, sign_as, simple_body,
};
use crate::staff_ui_api::{Desk, member};

/// The owner (set up by `StaffSession::start`) signed in again with a CSRF token.
async fn owner_desk(app: &TestApp) -> Desk<'_> {
    let reply = Desk::anonymous(app)
        .post(
            "/session",
            json!({"email": "owner@merchant.example", "password": "a long password"}),
        )
        .await;
    reply.expect(200, "SESSION_OK");
    Desk::adopt(app, &reply)
}

/// A staff body: the merchant's, for the test commerce, without `requestUser`.
fn staff_body(signers: &[(&str, i64, &str)]) -> Value {
    let mut body = simple_body(signers);
    remove(&mut body, "/process/requestUser");
    body["commerce"] = json!(COMMERCE);
    body
}

fn actions(detail: &Value) -> Vec<(String, String)> {
    detail["audit"]["records"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            (
                r["action"].as_str().unwrap().to_string(),
                r["actor"]["kind"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn staff_start_a_process_and_cancel_it_once() {
    let app = app_with_customers().await;
    let session = StaffSession::start(&app).await;
    let admin = owner_desk(&app).await;
    let viewer = member(&app, &admin, "viewer").await;

    let reply = admin
        .post(
            "/signatures",
            staff_body(&[("cust-a", 1, "FES"), ("cust-b", 2, "FES")]),
        )
        .await;
    reply.expect(201, "SIGNATURE_CREATED");
    let payload = &reply.body["payload"];
    assert_eq!(payload["commerce"], COMMERCE);
    let process = payload["signature"]["process"]["internalId"]
        .as_str()
        .unwrap()
        .to_string();
    assert_eq!(payload["signature"]["process"]["state"]["name"], "PENDING");
    // The staff member asked for it.
    assert_eq!(
        payload["signature"]["process"]["requestUser"],
        "owner@merchant.example"
    );
    // Each signatory's own link, to copy from the process page.
    let detail = admin.get(&format!("/signatures/{process}")).await;
    detail.expect(200, "SIGNATURE_OK");
    let links: Vec<&str> = detail.body["payload"]["signature"]["signatories"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["signingUrl"].as_str().unwrap())
        .collect();
    assert_eq!(links.len(), 2);
    for link in &links {
        assert!(link.starts_with(&format!("{}/sign/", app.base)), "{link}");
        let page = app.client.get(*link).send().await.unwrap();
        assert_eq!(page.status(), 200);
    }
    assert_eq!(
        actions(&detail.body["payload"]),
        [("CREATED".to_string(), "MERCHANT".to_string())]
    );

    // The merchant sees it as its own process.
    app.get(&format!("/signature/internalId/{process}"))
        .await
        .expect(200, "SIGNATURE_DETAIL_OK");

    // Viewers neither start nor cancel.
    viewer
        .post("/signatures", staff_body(&[("cust-a", 1, "FES")]))
        .await
        .expect(403, "ROLE_NOT_ALLOWED");
    viewer
        .post(&format!("/signatures/{process}/cancel"), json!({}))
        .await
        .expect(403, "ROLE_NOT_ALLOWED");

    // Cancelled: state, trail, event and staff audit together.
    let cancelled = admin
        .post(
            &format!("/signatures/{process}/cancel"),
            json!({"reason": "El cliente desistió"}),
        )
        .await;
    cancelled.expect(200, "SIGNATURE_CANCELLED");
    let after = &cancelled.body["payload"];
    assert_eq!(after["signature"]["process"]["state"]["name"], "CANCELLED");
    // Opening the links was audited too (VIEWED); the cancellation is the last act.
    let trail = actions(after);
    assert_eq!(
        trail.last().unwrap(),
        &("CANCELLED".to_string(), "STAFF".to_string())
    );
    assert_eq!(after["audit"]["valid"], true);
    let events = admin.get("/notifications?kind=signature").await;
    events.expect(200, "EVENTS_OK");
    let mut announced = Vec::new();
    for item in events.body["payload"]["items"].as_array().unwrap() {
        // Each signature event names its process, for the staff UI's link.
        assert!(
            item["signatureProcessId"]
                .as_str()
                .is_some_and(|id| id.starts_with("sig_")),
            "{item}"
        );
        let id = item["eventId"].as_str().unwrap();
        let event = admin.get(&format!("/notifications/{id}")).await;
        if item["signatureProcessId"] == process.as_str() {
            assert_eq!(
                event.body["payload"]["body"]["process"]["internalId"],
                process
            );
            announced.push(event.body["payload"]["body"]["event"].clone());
        }
    }
    assert_eq!(announced, [json!("SIGNATURE_CANCELLED")]);
    let audit = admin.get(&format!("/audit/staff?target={process}")).await;
    let mut audited: Vec<(String, String)> = audit.body["payload"]["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| {
            (
                i["action"].as_str().unwrap().to_string(),
                i["detail"].as_str().unwrap_or_default().to_string(),
            )
        })
        .collect();
    audited.sort();
    assert_eq!(audited[0].0, "signature.cancel");
    assert_eq!(audited[0].1, "El cliente desistió");
    assert_eq!(audited[1].0, "signature.create");

    // Once only: 410, and nothing more recorded.
    admin
        .post(&format!("/signatures/{process}/cancel"), json!({}))
        .await
        .expect(410, "SIGNATURE_ALREADY_CANCELLED");
    let detail = admin.get(&format!("/signatures/{process}")).await;
    assert_eq!(actions(&detail.body["payload"]).len(), trail.len());
    // The merchant's cancel agrees.
    app.delete(
        "/signature/cancel",
        Some(&json!({"process": {"internalId": process}})),
    )
    .await
    .expect(410, "SIGNATURE_ALREADY_CANCELLED");

    admin
        .post("/signatures/sig_nothing/cancel", json!({}))
        .await
        .expect(404, "SIGNATURE_PROCESS_NOT_FOUND");
    drop(session);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_completed_process_is_not_cancelled() {
    let app = app_with_customers().await;
    let session = StaffSession::start(&app).await;
    let admin = owner_desk(&app).await;
    let reply = admin
        .post("/signatures", staff_body(&[("cust-a", 1, "FES")]))
        .await;
    reply.expect(201, "SIGNATURE_CREATED");
    let signature = reply.body["payload"]["signature"].clone();
    let process = signature["process"]["internalId"].as_str().unwrap();
    let browser = Browser::new(&app);
    sign_as(
        &browser,
        &session,
        process,
        &signature["signatories"][0],
        &rut(RUT_A),
        None,
    )
    .await;
    let detail = admin.get(&format!("/signatures/{process}")).await;
    assert_eq!(
        detail.body["payload"]["signature"]["process"]["state"]["name"],
        "COMPLETED"
    );
    let refused = admin
        .post(&format!("/signatures/{process}/cancel"), json!({}))
        .await;
    refused.expect(400, "SIGNATURE_STATE_CONFLICT");
    let detail = admin.get(&format!("/signatures/{process}")).await;
    assert_eq!(
        detail.body["payload"]["signature"]["process"]["state"]["name"],
        "COMPLETED"
    );
    let audit = admin.get(&format!("/audit/staff?target={process}")).await;
    let audited: Vec<&str> = audit.body["payload"]["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["action"].as_str().unwrap())
        .collect();
    assert_eq!(audited, ["signature.create"]);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_staff_process_is_checked_as_the_merchants_is() {
    let app = app_with_customers().await;
    let _session = StaffSession::start(&app).await;
    let admin = owner_desk(&app).await;

    // Every problem at the merchant API's paths: an unknown signatory, a file that is not a
    // PDF, a webhook that is not https.
    let mut bad = staff_body(&[("cust-a", 1, "FES"), ("nobody", 2, "FES")]);
    set(
        &mut bad,
        "/documents/0/contentBase64",
        json!("bm90IGEgcGRm"),
    );
    set(
        &mut bad,
        "/urls/webhook",
        json!("http://merchant.example/h"),
    );
    let refused = admin.post("/signatures", bad.clone()).await;
    refused.expect(400, "VALIDATION_ERROR");
    let mut merchant_body = bad.clone();
    remove(&mut merchant_body, "/commerce");
    let merchant_refused = app.post("/signature", &merchant_body).await;
    assert_eq!(sorted_fields(&refused), sorted_fields(&merchant_refused));
    assert!(
        refused
            .error_fields()
            .contains(&"signatories[1].userId".to_string())
    );
    assert!(
        refused
            .error_fields()
            .contains(&"documents[0].contentBase64".to_string())
    );

    // The commerce is named; a customer of another commerce is not a signatory here.
    let mut missing = staff_body(&[("cust-a", 1, "FES")]);
    remove(&mut missing, "/commerce");
    let reply = admin.post("/signatures", missing).await;
    reply.expect(400, "VALIDATION_ERROR");
    assert_eq!(reply.error_fields(), ["commerce"]);
    let mut elsewhere = staff_body(&[("cust-b", 1, "FES")]);
    elsewhere["commerce"] = json!(OTHER_COMMERCE);
    let reply = admin.post("/signatures", elsewhere).await;
    reply.expect(400, "VALIDATION_ERROR");
    assert_eq!(reply.error_fields(), ["signatories[0].userId"]);
    let _ = RUT_B;

    // Over 1 MiB is taken (a PDF upload), over 16 MiB is not.
    let mut large = staff_body(&[("cust-a", 1, "FES")]);
    large["padding"] = json!("x".repeat(3 * 1024 * 1024));
    admin
        .post("/signatures", large)
        .await
        .expect(201, "SIGNATURE_CREATED");
    let mut huge = staff_body(&[("cust-a", 1, "FES")]);
    huge["padding"] = json!("x".repeat(17 * 1024 * 1024));
    admin
        .post("/signatures", huge)
        .await
        .expect(413, "PAYLOAD_TOO_LARGE");
}
