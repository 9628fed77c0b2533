//! A customer's payment history for staff: every charge and payment of their installments
//! across mandates, newest first, with amounts (UF and its value for UF installments), method
//! and outcome; paged.

use chrono::Duration;
use serde_json::{Value, json};

use crate::helpers::*;
use crate::link::{CARD_DECLINED, linked};
use crate::staff_ui_api::{Desk, owner};

const APPROVE: &str = "4111111111111111";

async fn activate(app: &TestApp, internal_id: &str, number: &str) {
    app.post(
        &format!("/sandbox/mandates/{internal_id}/activate"),
        &json!({"paymentMethodId": 3, "card": {"number": number, "expiry": "12/35", "cvv": "123"}}),
    )
    .await
    .expect(200, "SANDBOX_ACTIVATE_OK");
}

async fn payments(desk: &Desk<'_>, customer: &str, query: &str) -> Value {
    let reply = desk
        .get(&format!("/customers/{customer}/payments{query}"))
        .await;
    reply.expect(200, "CUSTOMER_PAYMENTS_OK");
    reply.body["payload"].clone()
}

#[tokio::test(flavor = "multi_thread")]
async fn a_customers_charges_and_payments_across_mandates_newest_first() {
    let l = linked(|app| dynamic_body(app, "cust-001", "DYN-1", &[("c1", 15000, 0)])).await;
    activate(&l.app, &l.internal_id, CARD_DECLINED).await;
    let uf = l
        .app
        .create_mandate(&json!({"customer": {"userId": "cust-001"},
            "mandate": {"id": "UF-1", "type": "DYNAMIC", "name": "Arriendo", "charges": {"currencyId": "CLF"}},
            "installments": [{"id": "u1", "amount": 1.5, "currencyId": "CLF", "installmentDueDate": l.app.date_in(1)}]}))
        .await;
    let uf_id = uf["mandate"]["internalId"].as_str().unwrap().to_string();
    activate(&l.app, &uf_id, APPROVE).await;
    let admin = owner(&l.app).await;
    let customer = admin
        .get(&format!("/mandates/{}", l.internal_id))
        .await
        .body["payload"]["customer"]["internalUserId"]
        .as_str()
        .unwrap()
        .to_string();
    assert_eq!(payments(&admin, &customer, "").await["total"], 0);

    let d0 = l.app.today();
    let d1 = d0 + Duration::days(1);
    l.app.run_charging(d0).await;
    admin
        .post(
            "/uf",
            json!({"csv": format!("date,value\n{d1},39123.45\n")}),
        )
        .await
        .expect(200, "UF_IMPORT_OK");
    l.app.run_charging(d1).await;
    // The rejected installment, paid by hand.
    let detail = admin.get(&format!("/mandates/{}", l.internal_id)).await;
    let installment = detail.body["payload"]["installments"][0]["internalId"]
        .as_str()
        .unwrap()
        .to_string();
    admin
        .post(
            &format!("/mandates/{}/payments", l.internal_id),
            json!({"installmentIds": [installment],
                   "payment": {"date": d0.to_string(), "amount": 15000, "currencyId": "CLP",
                               "method": "TRANSFER", "authorizationCode": "TRX-1"}}),
        )
        .await
        .expect(200, "MANDATE_OK");

    let page = payments(&admin, &customer, "").await;
    let items = page["items"].as_array().unwrap();
    let kinds: Vec<(&str, &str, &str)> = items
        .iter()
        .map(|p| {
            (
                p["kind"].as_str().unwrap(),
                p["mandateId"].as_str().unwrap(),
                p["outcome"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        kinds,
        [
            ("MANUAL", "DYN-1", "PAID"),
            ("CHARGE", "UF-1", "PAID"),
            ("CHARGE", "DYN-1", "REJECTED"),
            ("CHARGE", "DYN-1", "REJECTED"),
        ],
        "{page}"
    );
    assert_eq!(page["total"], 4);
    let manual = &items[0];
    assert_eq!(manual["amount"], 15000);
    assert_eq!(manual["method"], "MANUAL");
    assert_eq!(manual["mandateInternalId"], l.internal_id.as_str());
    let first = &items[3];
    assert_eq!(first["rejectionCode"], "INSUFFICIENT_FUNDS");
    assert_eq!(first["method"], "CREDIT_CARD");
    assert_eq!(first["businessDate"], d0.to_string());
    assert_eq!(first["installmentId"], "c1");
    let uf_line = &items[1];
    assert_eq!(uf_line["amount"], 58685);
    assert_eq!(uf_line["currencyId"], "CLP");
    assert_eq!(uf_line["installmentAmount"], 1.5);
    assert_eq!(uf_line["installmentCurrencyId"], "CLF");
    assert_eq!(uf_line["ufValue"], 39123.45);

    // Two to a page: the second page continues where the first ended.
    let one = payments(&admin, &customer, "?limit=2").await;
    let cursor = one["nextCursor"].as_str().unwrap();
    let two = payments(
        &admin,
        &customer,
        &format!("?limit=2&cursor={}", encode(cursor)),
    )
    .await;
    assert!(two["nextCursor"].is_null());
    let paged: Vec<&Value> = one["items"]
        .as_array()
        .unwrap()
        .iter()
        .chain(two["items"].as_array().unwrap())
        .collect();
    assert_eq!(paged, items.iter().collect::<Vec<_>>());

    admin
        .get("/customers/usr_nobody/payments")
        .await
        .expect(404, "CUSTOMER_NOT_FOUND");
    let bad = admin
        .get(&format!(
            "/customers/{customer}/payments?cursor=1.nope&limit=999"
        ))
        .await;
    bad.expect(400, "VALIDATION_ERROR");
    assert_eq!(sorted_fields(&bad), ["query.cursor", "query.limit"]);
}
