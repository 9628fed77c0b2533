//! The dashboard's money against the ledger: "collected this month" is the ledger's money of
//! the month's business dates (charges, payments marked paid, reversals), also after the
//! sandbox clock has moved into another month.

use chrono::{Datelike, Duration};
use rust_decimal::Decimal;
use serde_json::{Value, json};
use std::str::FromStr;

use crate::helpers::*;
use crate::ledger::fixture;
use crate::staff_ui_api::{Desk, owner};

/// The ledger's entries of the commerce from `from` on, as staff read them.
async fn ledger_since(desk: &Desk<'_>, from: &str) -> Vec<Value> {
    let page = desk
        .get(&format!(
            "/ledger-entries?commerce={COMMERCE}&from={from}&limit=500"
        ))
        .await;
    page.expect(200, "STAFF_LEDGER_OK");
    page.body["payload"]["items"].as_array().unwrap().clone()
}

/// The CLP money of the entries that move money (annulments move none).
fn money(entries: &[Value]) -> Decimal {
    entries
        .iter()
        .filter(|e| e["kind"] != "ANNULMENT" && e["currencyId"] == "CLP")
        .map(|e| Decimal::from_str(&e["amount"].to_string()).unwrap())
        .sum()
}

async fn dashboard_money(desk: &Desk<'_>) -> (String, Value) {
    let reply = desk.get(&format!("/dashboard?commerce={COMMERCE}")).await;
    reply.expect(200, "DASHBOARD_OK");
    let payload = reply.body["payload"].clone();
    let clp = payload["totals"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["currencyId"] == "CLP")
        .cloned()
        .unwrap_or(Value::Null);
    (payload["monthStart"].as_str().unwrap().to_string(), clp)
}

#[tokio::test(flavor = "multi_thread")]
async fn collected_this_month_is_the_ledgers_money_of_the_months_business_dates() {
    let (app, mandate_id) = fixture(&[
        ("c1", 10000, 0),
        ("c2", 5000, 0),
        ("c3", 3000, 40),
        ("c4", 2000, 45),
        ("c5", 1000, 45),
    ])
    .await;
    app.run_charging(app.today()).await;
    let mandate = app.mandate("M-1").await;
    let c2 = mandate["installments"][1]["internalId"].as_str().unwrap();
    app.post(
        &format!("/sandbox/installments/{c2}/outcome"),
        &json!({"result": "REVERSED"}),
    )
    .await
    .expect(200, "SANDBOX_OUTCOME_OK");
    let admin = owner(&app).await;

    let (month_start, totals) = dashboard_money(&admin).await;
    assert_eq!(month_start, app.today().with_day(1).unwrap().to_string());
    let entries = ledger_since(&admin, &month_start).await;
    assert_eq!(entries.len(), 3, "two charges and a reversal");
    assert_eq!(money(&entries), Decimal::from(10000));
    assert_eq!(totals["collectedThisMonth"], money(&entries).to_string());
    let days = admin.get(&format!("/dashboard?commerce={COMMERCE}")).await;
    let today = days.body["payload"]["days"]
        .as_array()
        .unwrap()
        .last()
        .cloned()
        .unwrap();
    assert_eq!(today["date"], app.today().to_string());
    assert_eq!(
        today["collected"],
        json!([{"amount": 10000, "currencyId": "CLP"}])
    );

    // The sandbox clock moves into another month: that month's business dates count, the
    // earlier month's money does not.
    app.advance_clock(Duration::days(40));
    app.run_charging(app.today()).await;
    // Forty days end the session: sign in again.
    let signed_in = Desk::anonymous(&app)
        .post(
            "/session",
            json!({"email": "owner@merchant.example", "password": "a long password"}),
        )
        .await;
    signed_in.expect(200, "SESSION_OK");
    let admin = Desk::adopt(&app, &signed_in);
    let detail = admin.get(&format!("/mandates/{mandate_id}")).await;
    let internal = |n: usize| detail.body["payload"]["installments"][n]["internalId"].clone();
    admin
        .post(
            &format!("/mandates/{mandate_id}/payments"),
            json!({"installmentIds": [internal(3)],
                   "payment": {"date": app.date_in(0), "amount": 2000, "currencyId": "CLP",
                               "method": "TRANSFER"}}),
        )
        .await
        .expect(200, "MANDATE_OK");
    admin
        .post(
            &format!("/mandates/{mandate_id}/annulments"),
            json!({"installmentIds": [internal(4)]}),
        )
        .await
        .expect(200, "MANDATE_OK");
    let (month_start, totals) = dashboard_money(&admin).await;
    assert_eq!(month_start, app.today().with_day(1).unwrap().to_string());
    let entries = ledger_since(&admin, &month_start).await;
    assert_eq!(
        entries
            .iter()
            .map(|e| e["kind"].as_str().unwrap())
            .collect::<Vec<_>>(),
        ["CHARGE", "MANUAL_PAYMENT", "ANNULMENT"]
    );
    assert_eq!(money(&entries), Decimal::from(5000));
    assert_eq!(totals["collectedThisMonth"], "5000");
    assert_eq!(totals["rejectedThisMonth"], "0");
}
