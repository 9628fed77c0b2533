//! Fee rules per commerce and payment method (CONTRACT 13): set by admins, and what the ledger
//! records for an approval whose acquirer reported no fee (Transbank never does).

use reqwest::Method;
use serde_json::{Value, json};

use crate::helpers::*;
use crate::rails::{active_mandate, set_transbank};
use crate::staff_ui_api::{Desk, member, owner};
use crate::transbank;

async fn put(desk: &Desk<'_>, path: &str, body: Value) -> Reply {
    desk.call(Method::PUT, path, Some(body)).await
}

fn rule(reply: &Reply, method: i64) -> Value {
    reply.body["payload"]["rules"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["methodId"] == method)
        .cloned()
        .unwrap_or_else(|| panic!("method {method} in {}", reply.body))
}

#[tokio::test(flavor = "multi_thread")]
async fn admins_set_and_reset_a_commerces_fee_rules() {
    let app = spawn_app().await;
    let admin = owner(&app).await;
    let operator = member(&app, &admin, "operator").await;
    let list = format!("/commerces/{COMMERCE}/fees");
    let credit = format!("/commerces/{COMMERCE}/fees/3");

    let shown = admin.get(&list).await;
    shown.expect(200, "FEES_OK");
    assert_eq!(shown.body["payload"]["rules"].as_array().unwrap().len(), 6);
    let default = rule(&shown, 3);
    assert_eq!(default["commissionPercent"], "2.95", "{default}");
    assert_eq!(default["own"], false);

    put(&operator, &credit, json!({"commissionPercent": "1.49"}))
        .await
        .expect(403, "ROLE_NOT_ALLOWED");
    let bad = put(
        &admin,
        &credit,
        json!({"commissionPercent": "150", "fixed": 1.5}),
    )
    .await;
    bad.expect(400, "VALIDATION_ERROR");
    let mut fields = bad.error_fields();
    fields.sort();
    assert_eq!(fields, ["commissionPercent", "fixed"]);
    put(
        &admin,
        &format!("/commerces/{COMMERCE}/fees/7"),
        json!({"commissionPercent": 1}),
    )
    .await
    .expect(400, "VALIDATION_ERROR");

    let set = put(
        &admin,
        &credit,
        json!({"commissionPercent": 1.49, "fixed": "50", "iva": false}),
    )
    .await;
    set.expect(200, "FEE_SET_OK");
    let own = rule(&set, 3);
    assert_eq!(own["commissionPercent"], "1.49");
    assert_eq!(own["fixed"], "50");
    assert_eq!(own["iva"], false);
    assert_eq!(own["own"], true);
    assert_eq!(
        rule(&set, 4)["own"],
        false,
        "other methods keep the default"
    );

    let reset = admin.call(Method::DELETE, &credit, None).await;
    reset.expect(200, "FEE_RESET_OK");
    assert_eq!(rule(&reset, 3)["commissionPercent"], "2.95");
    admin
        .call(Method::DELETE, &credit, None)
        .await
        .expect(404, "FEE_RULE_NOT_FOUND");
}

#[tokio::test(flavor = "multi_thread")]
async fn the_ledger_charges_a_transbank_approval_at_the_commerces_rule() {
    let mut app = spawn_app().await;
    app.login().await;
    let (_standin, base) = transbank::start().await;
    set_transbank(&app, &base);
    let admin = owner(&app).await;
    // 1.49 % of 10.000 = 149, + 50 fixed = 199, + IVA 37.81 → 38: a fee of 237.
    put(
        &admin,
        &format!("/commerces/{COMMERCE}/fees/3"),
        json!({"commissionPercent": "1.49", "fixed": 50, "iva": true}),
    )
    .await
    .expect(200, "FEE_SET_OK");
    let internal = active_mandate(&app, "M-FEES", 10_000).await;
    app.run_charging(app.today() + chrono::Duration::days(1))
        .await;
    let reply = app.get("/ledger").await;
    reply.expect(200, "LEDGER_OK");
    let charge = reply.body["payload"]["items"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["kind"] == "CHARGE" && e["mandateInternalId"] == internal.as_str())
        .cloned()
        .unwrap_or_else(|| panic!("the charge in {}", reply.body));
    assert_eq!(charge["amount"], 10000, "{charge}");
    assert_eq!(charge["fee"], 237, "{charge}");
    assert_eq!(charge["net"], 9763, "{charge}");
    let _ = &mut app;
}
