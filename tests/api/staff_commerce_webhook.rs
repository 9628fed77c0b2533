//! A commerce's webhook URL in Settings › Comercios: listed with the commerce, set and
//! cleared by an admin through `PUT /admin/api/commerces/{code}/webhook-url`, checked as a
//! mandate's webhook URLs are, and every change in the staff audit.

use serde_json::{Value, json};

use crate::helpers::*;
use crate::staff_ui_api::{Desk, member, owner};

async fn listed_url(desk: &Desk<'_>) -> Value {
    let commerces = desk.get("/commerces").await;
    commerces.expect(200, "COMMERCES_OK");
    commerces.body["payload"]["items"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["code"] == COMMERCE)
        .unwrap()["webhookUrl"]
        .clone()
}

async fn put(desk: &Desk<'_>, code: &str, body: Value) -> Reply {
    desk.call(
        reqwest::Method::PUT,
        &format!("/commerces/{code}/webhook-url"),
        Some(body),
    )
    .await
}

#[tokio::test(flavor = "multi_thread")]
async fn staff_see_and_edit_a_commerces_webhook_url_with_an_audit_record() {
    let app = spawn_app().await;
    let admin = owner(&app).await;
    assert_eq!(listed_url(&admin).await, Value::Null);

    let set = put(
        &admin,
        COMMERCE,
        json!({"webhookUrl": " https://hooks.gimnasio.cl/mandato "}),
    )
    .await;
    set.expect(200, "WEBHOOK_URL_OK");
    assert_eq!(
        set.body["payload"]["webhookUrl"],
        "https://hooks.gimnasio.cl/mandato"
    );
    assert_eq!(
        listed_url(&admin).await,
        "https://hooks.gimnasio.cl/mandato"
    );

    // Refused as a mandate's webhook URL is, at its field, and nothing changes.
    for bad in [
        "http://hooks.gimnasio.cl",
        "hooks.gimnasio.cl",
        "https://user:pw@x.cl/",
    ] {
        let refused = put(&admin, COMMERCE, json!({"webhookUrl": bad})).await;
        refused.expect(400, "VALIDATION_ERROR");
        assert_eq!(refused.error_fields(), ["webhookUrl"], "{bad}");
        assert_eq!(error_codes(&refused), ["INVALID_URL"], "{bad}");
    }
    assert_eq!(
        listed_url(&admin).await,
        "https://hooks.gimnasio.cl/mandato"
    );
    put(&admin, "nope", json!({"webhookUrl": "https://x.cl/"}))
        .await
        .expect(404, "COMMERCE_NOT_FOUND");
    let operator = member(&app, &admin, "operator").await;
    put(&operator, COMMERCE, json!({"webhookUrl": "https://x.cl/"}))
        .await
        .expect(403, "ROLE_NOT_ALLOWED");
    assert_eq!(
        listed_url(&operator).await,
        "https://hooks.gimnasio.cl/mandato",
        "every role sees it"
    );

    put(&admin, COMMERCE, json!({"webhookUrl": null}))
        .await
        .expect(200, "WEBHOOK_URL_OK");
    assert_eq!(listed_url(&admin).await, Value::Null);

    let audit = admin.get("/audit/staff?action=commerce.webhook-url").await;
    let entries = audit.body["payload"]["items"].as_array().unwrap().clone();
    let details: Vec<(&str, &str)> = entries
        .iter()
        .map(|e| {
            assert_eq!(e["action"], "commerce.webhook-url");
            assert_eq!(e["target"], COMMERCE);
            (
                e["email"].as_str().unwrap_or_default(),
                e["detail"].as_str().unwrap_or_default(),
            )
        })
        .collect();
    assert_eq!(
        details,
        [
            ("owner@merchant.example", "none"),
            (
                "owner@merchant.example",
                "https://hooks.gimnasio.cl/mandato"
            ),
        ],
        "{}",
        audit.body
    );
}
