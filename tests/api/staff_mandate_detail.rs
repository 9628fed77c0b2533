//! The staff mandate detail a clerk works in: several installments paid or annulled in one
//! request (all or nothing, each refused one named), the latest date a payment may carry, the
//! acceptance evidence and EPAC document, and when the Magic Link is still worth sending.

use base64::Engine;
use serde_json::{Value, json};
use sha2::Digest;

use crate::helpers::*;
use crate::staff_ui_api::{Desk, owner};

/// A DYNAMIC mandate with installments a (1000), b (2000) and c (3000); its internal id and
/// the internal ids of its installments by the merchant's id.
async fn dynamic(app: &mut TestApp, id: &str) -> (String, Vec<String>) {
    app.login().await;
    app.create_customer("cust-1", "12.345.678-5").await;
    let payload = app
        .create_mandate(&dynamic_body(
            app,
            "cust-1",
            id,
            &[("a", 1000, 5), ("b", 2000, 10), ("c", 3000, 15)],
        ))
        .await;
    let installments = payload["installments"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["internalId"].as_str().unwrap().to_string())
        .collect();
    (
        payload["mandate"]["internalId"]
            .as_str()
            .unwrap()
            .to_string(),
        installments,
    )
}

fn states(reply: &Reply) -> Vec<String> {
    reply.body["payload"]["installments"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["state"]["name"].as_str().unwrap().to_string())
        .collect()
}

async fn detail(desk: &Desk<'_>, mandate: &str) -> Reply {
    let reply = desk.get(&format!("/mandates/{mandate}")).await;
    reply.expect(200, "MANDATE_OK");
    reply
}

fn payment(ids: &[&String], date: &str, amount: i64) -> Value {
    json!({"installmentIds": ids,
           "payment": {"date": date, "amount": amount, "currencyId": "CLP", "method": "TRANSFER"}})
}

#[tokio::test(flavor = "multi_thread")]
async fn several_installments_change_together_or_not_at_all_each_refusal_named() {
    let mut app = spawn_app().await;
    let (mandate, ins) = dynamic(&mut app, "M-bulk").await;
    let desk = owner(&app).await;
    let (a, b, c) = (&ins[0], &ins[1], &ins[2]);
    let today = app.date_in(0);

    desk.post(
        &format!("/mandates/{mandate}/annulments"),
        json!({"installmentIds": [c]}),
    )
    .await
    .expect(200, "MANDATE_OK");
    // c is ANNULLED: paying a and c changes nothing and names c.
    let refused = desk
        .post(
            &format!("/mandates/{mandate}/payments"),
            payment(&[a, c], &today, 4000),
        )
        .await;
    refused.expect(400, "INSTALLMENT_STATE_CONFLICT");
    assert_eq!(refused.body["errors"][0]["field"], "installmentIds[1]");
    assert!(
        refused.body["errors"][0]["message"]
            .as_str()
            .unwrap()
            .contains("installment c is ANNULLED"),
        "{}",
        refused.body
    );
    assert_eq!(
        states(&detail(&desk, &mandate).await),
        ["PENDING", "PENDING", "ANNULLED"]
    );

    let paid = desk
        .post(
            &format!("/mandates/{mandate}/payments"),
            payment(&[a, b], &today, 3000),
        )
        .await;
    paid.expect(200, "MANDATE_OK");
    assert_eq!(states(&paid), ["PAID", "PAID", "ANNULLED"]);
    assert_eq!(app.events_of(&mandate).len(), 3, "one event per change");

    // Annulling three that cannot be annulled names every one of them.
    let refused = desk
        .post(
            &format!("/mandates/{mandate}/annulments"),
            json!({"installmentIds": [a, b, c]}),
        )
        .await;
    refused.expect(400, "VALIDATION_ERROR");
    assert_eq!(
        refused.error_fields(),
        [
            "installmentIds[0]",
            "installmentIds[1]",
            "installmentIds[2]"
        ]
    );
    assert!(
        refused.body["errors"]
            .as_array()
            .unwrap()
            .iter()
            .all(|e| e["code"] == "INSTALLMENT_STATE_CONFLICT")
    );
    desk.post(
        &format!("/mandates/{mandate}/annulments"),
        json!({"installmentIds": [a, "ins_unknown"]}),
    )
    .await
    .expect(404, "INSTALLMENT_NOT_FOUND");
    assert_eq!(app.events_of(&mandate).len(), 3, "nothing changed");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_payment_is_dated_today_at_the_latest_in_business_time() {
    let mut app = spawn_app().await;
    let (mandate, ins) = dynamic(&mut app, "M-date").await;
    let desk = owner(&app).await;
    let shown = detail(&desk, &mandate).await;
    assert_eq!(
        shown.body["payload"]["businessDate"],
        app.today().to_string()
    );
    let tomorrow = desk
        .post(
            &format!("/mandates/{mandate}/payments"),
            payment(&[&ins[0]], &app.date_in(1), 1000),
        )
        .await;
    tomorrow.expect(400, "VALIDATION_ERROR");
    assert_eq!(tomorrow.error_fields(), ["payment.date"]);
    assert_eq!(tomorrow.body["errors"][0]["code"], "DATE_IN_FUTURE");
    desk.post(
        &format!("/mandates/{mandate}/payments"),
        payment(&[&ins[0]], &app.date_in(0), 1000),
    )
    .await
    .expect(200, "MANDATE_OK");
}

async fn raw_document(app: &TestApp, desk: &Desk<'_>, mandate: &str) -> reqwest::Response {
    app.client
        .get(format!(
            "{}/admin/api/mandates/{mandate}/document",
            app.base
        ))
        .header("cookie", desk.cookie.clone().unwrap())
        .send()
        .await
        .unwrap()
}

#[tokio::test(flavor = "multi_thread")]
async fn the_acceptance_evidence_and_the_epac_document_of_an_activation() {
    let mut app = spawn_app().await;
    let (mandate, _) = dynamic(&mut app, "M-epac").await;
    let desk = owner(&app).await;

    let pending = detail(&desk, &mandate).await;
    assert_eq!(pending.body["payload"]["acceptance"], Value::Null);
    assert_eq!(pending.body["payload"]["actions"]["shareMagicLink"], true);
    assert_eq!(raw_document(&app, &desk, &mandate).await.status(), 404);

    app.post(
        &format!("/sandbox/mandates/{mandate}/activate"),
        &json!({"paymentMethodId": 6, "bankAccount": {"bankCode": "012", "accountType": "CHECKING",
                "accountNumber": "123450000", "holderRut": "12.345.678-5"}}),
    )
    .await
    .expect(200, "SANDBOX_ACTIVATE_OK");
    let active = detail(&desk, &mandate).await;
    let payload = &active.body["payload"];
    assert_eq!(
        payload["actions"]["shareMagicLink"], false,
        "already active"
    );
    assert_eq!(payload["paymentMethod"]["name"], "EPAC");
    let acceptance = &payload["acceptance"];
    assert!(acceptance["acceptedAt"].as_str().unwrap().ends_with('Z'));
    assert_eq!(acceptance["termsSha256"].as_str().unwrap().len(), 64);
    assert_eq!(acceptance["documentAvailable"], true);

    let response = raw_document(&app, &desk, &mandate).await;
    assert_eq!(response.status(), 200);
    assert_eq!(response.headers()["content-type"], "application/pdf");
    assert!(
        response.headers()["content-disposition"]
            .to_str()
            .unwrap()
            .contains("mandato-M-epac.pdf")
    );
    let pdf = response.bytes().await.unwrap();
    assert!(pdf.starts_with(b"%PDF-"));
    assert_eq!(
        acceptance["documentSha256"],
        hex::encode(sha2::Sha256::digest(&pdf))
    );
    // The same bytes the merchant got in the activation event.
    let activation = app
        .events_of(&mandate)
        .into_iter()
        .find(|e| e["event"] == "activation")
        .unwrap();
    let sent = base64::engine::general_purpose::STANDARD
        .decode(activation["fileBase64"].as_str().unwrap())
        .unwrap();
    assert_eq!(pdf.as_ref(), sent.as_slice());
}

#[tokio::test(flavor = "multi_thread")]
async fn a_cancelled_mandate_offers_no_magic_link_and_a_card_no_document() {
    let mut app = spawn_app().await;
    let (cancelled, _) = dynamic(&mut app, "M-gone").await;
    let desk = owner(&app).await;
    desk.post(
        &format!("/mandates/{cancelled}/cancel"),
        json!({"description": "cliente se retira"}),
    )
    .await
    .expect(200, "MANDATE_OK");
    let shown = detail(&desk, &cancelled).await;
    assert_eq!(shown.body["payload"]["actions"]["shareMagicLink"], false);

    let card = app
        .create_mandate(&dynamic_body(&app, "cust-1", "M-card", &[("a", 1000, 5)]))
        .await;
    let card = card["mandate"]["internalId"].as_str().unwrap();
    app.post(
        &format!("/sandbox/mandates/{card}/activate"),
        &json!({"paymentMethodId": 3, "card": {"number": "4111111111111111", "expiry": "12/30", "cvv": "123"}}),
    )
    .await
    .expect(200, "SANDBOX_ACTIVATE_OK");
    let shown = detail(&desk, card).await;
    assert_eq!(
        shown.body["payload"]["acceptance"]["documentSha256"],
        Value::Null
    );
    assert_eq!(
        shown.body["payload"]["acceptance"]["documentAvailable"],
        false
    );
    assert_eq!(raw_document(&app, &desk, card).await.status(), 404);
}
