//! The past-due list of the staff API: mandates with rejected installments, whether declined
//! for good or still retried, with the latest reason, the next retry, what they owe and their
//! customer; paged and filtered by commerce like the other staff lists.

use chrono::Duration;
use serde_json::{Value, json};

use crate::helpers::*;
use crate::link::{CARD_DECLINED, Linked, linked};
use crate::staff_ui_api::{Desk, owner};

const APPROVE: &str = "4111111111111111";
const EXPIRED: &str = "4000000000000069";

async fn activate(app: &TestApp, internal_id: &str, number: &str) {
    app.post(
        &format!("/sandbox/mandates/{internal_id}/activate"),
        &json!({"paymentMethodId": 3, "card": {"number": number, "expiry": "12/35", "cvv": "123"}}),
    )
    .await
    .expect(200, "SANDBOX_ACTIVATE_OK");
}

/// Another DYNAMIC mandate of `cust-001` with one installment due today, activated with the card.
async fn another(l: &Linked, id: &str, amount: i64, card: &str) -> String {
    let created = l
        .app
        .create_mandate(&dynamic_body(&l.app, "cust-001", id, &[("c1", amount, 0)]))
        .await;
    let internal = created["mandate"]["internalId"]
        .as_str()
        .unwrap()
        .to_string();
    activate(&l.app, &internal, card).await;
    internal
}

async fn past_due(desk: &Desk<'_>, query: &str) -> Value {
    let reply = desk.get(&format!("/past-due{query}")).await;
    reply.expect(200, "PAST_DUE_OK");
    reply.body["payload"].clone()
}

#[tokio::test(flavor = "multi_thread")]
async fn a_soft_decline_is_past_due_with_its_reason_and_retry_until_its_final_decline() {
    let l = linked(|app| {
        dynamic_body(
            app,
            "cust-001",
            "DYN-1",
            &[("c1", 15000, 0), ("c2", 2500, 0)],
        )
    })
    .await;
    activate(&l.app, &l.internal_id, CARD_DECLINED).await;
    let paying = another(&l, "DYN-OK", 9000, APPROVE).await;
    let admin = owner(&l.app).await;
    assert_eq!(past_due(&admin, "").await["total"], 0);

    let d0 = l.app.today();
    l.app.run_charging(d0).await;
    let page = past_due(&admin, "").await;
    assert_eq!(page["total"], 1, "{page}");
    let line = &page["items"][0];
    assert_eq!(line["internalId"], l.internal_id.as_str());
    assert_ne!(
        line["internalId"],
        paying.as_str(),
        "a paid mandate is not past due"
    );
    assert_eq!(line["id"], "DYN-1");
    assert_eq!(line["state"]["name"], "ACTIVE");
    assert_eq!(line["rejected"], 2);
    assert_eq!(line["lastRejectionCode"], "INSUFFICIENT_FUNDS");
    assert_eq!(line["nextRetryDate"], (d0 + Duration::days(1)).to_string());
    assert_eq!(line["finalDecline"], false);
    assert_eq!(
        line["amountDue"],
        json!([{"amount": 17500, "currencyId": "CLP"}])
    );
    assert_eq!(line["customer"]["name"], "Ana Pérez Soto");
    assert_eq!(line["customer"]["rut"], "12345678-5");
    assert!(
        line["customer"]["internalUserId"]
            .as_str()
            .unwrap()
            .starts_with("usr_")
    );
    assert_eq!(line["installments"].as_array().unwrap().len(), 2);
    assert_eq!(line["installments"][0]["id"], "c1");
    assert_eq!(
        line["installments"][0]["nextRetryDate"],
        (d0 + Duration::days(1)).to_string()
    );

    // The retries after 1, 3 and 7 days, all declined: the last is final.
    for day in [1, 3, 7] {
        l.app.run_charging(d0 + Duration::days(day)).await;
    }
    let line = past_due(&admin, "").await["items"][0].clone();
    assert_eq!(line["finalDecline"], true, "{line}");
    assert!(line["nextRetryDate"].is_null());
    assert!(line["installments"][0]["nextRetryDate"].is_null());
    assert_eq!(line["installments"][0]["attempts"], 4);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_hard_decline_is_final_at_once_and_a_payment_takes_the_mandate_off_the_list() {
    let l = linked(|app| dynamic_body(app, "cust-001", "DYN-1", &[("c1", 15000, 0)])).await;
    activate(&l.app, &l.internal_id, EXPIRED).await;
    let admin = owner(&l.app).await;
    l.app.run_charging(l.app.today()).await;
    let line = past_due(&admin, "").await["items"][0].clone();
    assert_eq!(line["lastRejectionCode"], "EXPIRED_CARD");
    assert_eq!(line["finalDecline"], true);
    assert!(line["nextRetryDate"].is_null());

    let installment = line["installments"][0]["internalId"].as_str().unwrap();
    admin
        .post(
            &format!("/mandates/{}/payments", l.internal_id),
            json!({"installmentIds": [installment],
                   "payment": {"date": l.app.date_in(0), "amount": 15000, "currencyId": "CLP",
                               "method": "TRANSFER", "authorizationCode": "TRX-1"}}),
        )
        .await
        .expect(200, "MANDATE_OK");
    assert_eq!(past_due(&admin, "").await["total"], 0);
}

#[tokio::test(flavor = "multi_thread")]
async fn the_past_due_list_pages_by_cursor_and_filters_by_commerce() {
    let l = linked(|app| dynamic_body(app, "cust-001", "DYN-1", &[("c1", 1000, 0)])).await;
    activate(&l.app, &l.internal_id, CARD_DECLINED).await;
    another(&l, "DYN-2", 2000, CARD_DECLINED).await;
    another(&l, "DYN-3", 3000, EXPIRED).await;
    let admin = owner(&l.app).await;
    l.app.run_charging(l.app.today()).await;

    let first = past_due(&admin, "?limit=2").await;
    assert_eq!(first["total"], 3);
    assert_eq!(first["items"].as_array().unwrap().len(), 2);
    let cursor = first["nextCursor"].as_str().unwrap();
    let second = past_due(&admin, &format!("?limit=2&cursor={}", encode(cursor))).await;
    assert_eq!(second["items"].as_array().unwrap().len(), 1);
    assert!(second["nextCursor"].is_null());
    let mut ids: Vec<String> = first["items"]
        .as_array()
        .unwrap()
        .iter()
        .chain(second["items"].as_array().unwrap())
        .map(|i| i["id"].as_str().unwrap().to_string())
        .collect();
    ids.sort();
    assert_eq!(ids, ["DYN-1", "DYN-2", "DYN-3"]);

    let commerce = first["items"][0]["commerce"].as_str().unwrap().to_string();
    assert_eq!(
        past_due(&admin, &format!("?commerce={commerce}")).await["total"],
        3
    );
    let unknown = admin
        .get("/past-due?commerce=11111111-1&limit=0&cursor=x")
        .await;
    unknown.expect(400, "VALIDATION_ERROR");
    assert_eq!(
        sorted_fields(&unknown),
        ["query.commerce", "query.cursor", "query.limit"]
    );
}
