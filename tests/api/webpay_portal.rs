//! Portal payments on Transbank Webpay Plus (CONTRACT 13): where a commerce's cards are served
//! by Transbank, a due or rejected installment is paid on Webpay's page (create, hand-off with
//! `token_ws`, commit on `/link/{token}/webpay/return`), never on a card form of ours; an
//! approval the installment can no longer take is given back; a customer who never came
//! back is settled by the next charging run; staff refund a Webpay Plus payment.

use chrono::Duration;
use serde_json::{Value, json};

use crate::helpers::*;
use crate::rails::{browser, enrol_on_webpay, input_after, location, set_transbank};
use crate::transbank::{self, REFUSED_CARD, Standin, VISA};

/// An ACTIVE mandate (card inscribed on Webpay) whose installments are all due today;
/// answers its internal id and Magic Link.
async fn mandate_due_today(app: &TestApp, id: &str, amounts: &[i64]) -> (String, String) {
    let customer = format!("cust-{id}");
    app.create_customer(&customer, &rut(20_000_000 + amounts[0] as u32))
        .await;
    let items: Vec<(String, i64, i64)> = amounts
        .iter()
        .enumerate()
        .map(|(n, amount)| (format!("c{}", n + 1), *amount, 0))
        .collect();
    let items: Vec<(&str, i64, i64)> = items.iter().map(|(i, a, d)| (i.as_str(), *a, *d)).collect();
    let payload = app
        .create_mandate(&dynamic_body(app, &customer, id, &items))
        .await;
    let internal = payload["mandate"]["internalId"]
        .as_str()
        .unwrap()
        .to_string();
    let link = payload["mandate"]["magicLink"]
        .as_str()
        .unwrap()
        .to_string();
    let returned = enrol_on_webpay(app, &link, Some(VISA)).await;
    assert_eq!(returned.status(), 303, "{:?}", returned.text().await);
    (internal, link)
}

async fn installments_of(app: &TestApp, internal: &str) -> Vec<Value> {
    let reply = app.get(&format!("/mandate/internalId/{internal}")).await;
    reply.body["payload"]["installments"]
        .as_array()
        .unwrap()
        .clone()
}

async fn installment(app: &TestApp, internal: &str, external: &str) -> Value {
    installments_of(app, internal)
        .await
        .into_iter()
        .find(|i| i["id"] == external)
        .unwrap_or_else(|| panic!("installment {external}"))
}

/// "Pagar en Webpay" for one installment: answers Webpay's URL and the transaction's token.
async fn start_payment(app: &TestApp, link: &str, installment_id: &str) -> (String, String) {
    let path = &link[link.find("/link/").unwrap()..];
    let browser = browser(app);
    let page = browser
        .get(link)
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    let action = format!("action=\"{path}/pay/{installment_id}\"");
    assert!(
        page.contains(&action),
        "the portal offers the installment: {page}"
    );
    assert!(page.contains("Pagar en Webpay"), "{page}");
    assert!(
        !page.contains("name=\"number\""),
        "no card field on our page"
    );
    let handoff = browser
        .post(format!("{}{path}/pay/{installment_id}", app.base))
        .header("content-type", "application/x-www-form-urlencoded")
        .body("")
        .send()
        .await
        .unwrap();
    assert_eq!(handoff.status(), 200);
    let handoff = handoff.text().await.unwrap();
    let url = {
        let at = handoff
            .find("id=\"webpay\" method=\"post\" action=\"")
            .unwrap()
            + 34;
        handoff[at..handoff[at..].find('"').unwrap() + at].to_string()
    };
    let token = input_after(&handoff, "id=\"webpay\"", "token_ws");
    (url, token)
}

/// What the customer does on Webpay's page (`card=...`, `cancel=1` or `timeout=1`): answers
/// where Webpay sends the browser back to.
async fn on_webpay(app: &TestApp, url: &str, token: &str, action: &str) -> String {
    let back = browser(app)
        .post(url)
        .header("content-type", "application/x-www-form-urlencoded")
        .body(format!("token_ws={token}&{action}"))
        .send()
        .await
        .unwrap();
    assert_eq!(back.status(), 303);
    location(&back)
}

async fn back_from_webpay(app: &TestApp, to: &str) -> (u16, String, String) {
    let response = browser(app).get(to).send().await.unwrap();
    let status = response.status().as_u16();
    let to = response
        .headers()
        .get(reqwest::header::LOCATION)
        .map(|v| v.to_str().unwrap().to_string())
        .unwrap_or_default();
    (status, to, response.text().await.unwrap())
}

fn payment_of(standin: &Standin, token: &str) -> transbank::Payment {
    standin.payments.lock().unwrap()[token].clone()
}

#[tokio::test(flavor = "multi_thread")]
async fn a_due_installment_is_paid_on_webpay_plus_and_refunded_by_staff() {
    let mut app = spawn_app().await;
    app.login().await;
    let (standin, base) = transbank::start().await;
    set_transbank(&app, &base);
    let (internal, link) = mandate_due_today(&app, "M-PORTAL", &[5000, 7000]).await;
    let first = installment(&app, &internal, "c1").await;
    let first_id = first["internalId"].as_str().unwrap().to_string();

    let (url, token) = start_payment(&app, &link, &first_id).await;
    let created = payment_of(&standin, &token);
    assert_eq!(created.amount, 5000);
    assert_eq!(created.session_id, first_id);
    assert_eq!(created.buy_order.len(), 26);
    let to = on_webpay(&app, &url, &token, &format!("card={VISA}")).await;
    let (status, paid_at, _) = back_from_webpay(&app, &to).await;
    assert_eq!(status, 303);
    assert!(
        paid_at.ends_with(&format!("?pagada={first_id}")),
        "{paid_at}"
    );
    let paid = installment(&app, &internal, "c1").await;
    assert_eq!(paid["state"]["name"], "PAID", "{paid}");
    assert_eq!(paid["authorizationCode"], "1213", "{paid}");
    assert_eq!(payment_of(&standin, &token).commits, 1);
    let events = app.events_of(&internal);
    assert!(
        events
            .iter()
            .any(|e| e["installment"]["id"] == "c1" && e["installment"]["state"]["name"] == "PAID"),
        "{events:?}"
    );

    // A reload of the return (or the back button) shows the same outcome and commits nothing.
    let (status, again, _) = back_from_webpay(&app, &to).await;
    assert_eq!((status, again.as_str()), (303, paid_at.as_str()));
    assert_eq!(payment_of(&standin, &token).commits, 1);

    // A refused card, a cancellation and a timeout on Webpay leave the installment due.
    let second = installment(&app, &internal, "c2").await;
    let second_id = second["internalId"].as_str().unwrap().to_string();
    let (url, token) = start_payment(&app, &link, &second_id).await;
    let to = on_webpay(&app, &url, &token, &format!("card={REFUSED_CARD}")).await;
    let (status, _, page) = back_from_webpay(&app, &to).await;
    assert_eq!(status, 402, "{page}");
    assert!(page.contains("Webpay rechazó el pago"), "{page}");
    for action in ["cancel=1", "timeout=1"] {
        let (url, token) = start_payment(&app, &link, &second_id).await;
        let to = on_webpay(&app, &url, &token, action).await;
        let (status, _, page) = back_from_webpay(&app, &to).await;
        assert_eq!(status, 200, "{action}: {page}");
        assert!(page.contains("No se hizo ningún cargo"), "{action}: {page}");
        assert_eq!(payment_of(&standin, &token).commits, 0, "{action}");
    }
    let due = installment(&app, &internal, "c2").await;
    assert_eq!(due["state"]["name"], "PENDING", "{due}");

    // Staff refund the Webpay Plus payment.
    let admin = crate::staff_ui_api::owner(&app).await;
    let detail = admin.get(&format!("/mandates/{internal}")).await;
    let staff_first = detail.body["payload"]["installments"]
        .as_array()
        .unwrap()
        .iter()
        .find(|i| i["id"] == "c1")
        .cloned()
        .unwrap();
    assert_eq!(staff_first["canRefund"], true, "{staff_first}");
    admin
        .post(
            &format!("/installments/{first_id}/refund"),
            json!({"reason": "Pago duplicado"}),
        )
        .await
        .expect(200, "MANDATE_OK");
    let first_token = standin
        .payments
        .lock()
        .unwrap()
        .iter()
        .find(|(_, p)| p.session_id == first_id && p.commits == 1)
        .map(|(t, _)| t.clone())
        .unwrap();
    assert!(payment_of(&standin, &first_token).refunded);
    let reversed = installment(&app, &internal, "c1").await;
    assert_eq!(reversed["state"]["name"], "REVERSED", "{reversed}");
    // Oneclick was never asked to charge anything.
    assert!(standin.authorizations.lock().unwrap().is_empty());
    let _ = &mut app;
}

#[tokio::test(flavor = "multi_thread")]
async fn an_approval_the_installment_can_no_longer_take_is_given_back() {
    let mut app = spawn_app().await;
    app.login().await;
    let (standin, base) = transbank::start().await;
    set_transbank(&app, &base);
    let (internal, link) = mandate_due_today(&app, "M-RACE", &[8000]).await;
    let due = installment(&app, &internal, "c1").await;
    let id = due["internalId"].as_str().unwrap().to_string();
    let (url, token) = start_payment(&app, &link, &id).await;
    let to = on_webpay(&app, &url, &token, &format!("card={VISA}")).await;

    // While the customer was on Webpay, the merchant recorded a payment of the installment.
    app.put(
        "/installments/status/change",
        &json!({"product": {"internalId": internal}, "installments": {"internalIds": [id]},
                "action": "PAYMENT",
                "payment": {"date": app.today().to_string(), "amount": 8000, "currencyId": "CLP"}}),
    )
    .await
    .expect(200, "INSTALLMENTS_STATUS_CHANGE_OK");

    let (status, _, page) = back_from_webpay(&app, &to).await;
    assert_eq!(status, 409, "{page}");
    assert!(page.contains("anulamos ese pago"), "{page}");
    let payment = payment_of(&standin, &token);
    assert_eq!(payment.commits, 1);
    assert!(payment.refunded, "the customer's money went back");
    let paid = installment(&app, &internal, "c1").await;
    assert_eq!(paid["state"]["name"], "PAID");
    assert_ne!(
        paid["authorizationCode"], "1213",
        "the merchant's payment stands"
    );
    let _ = &mut app;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_customer_who_never_came_back_is_settled_by_the_next_run() {
    let mut app = spawn_app().await;
    app.login().await;
    let (standin, base) = transbank::start().await;
    set_transbank(&app, &base);
    let (internal, link) = mandate_due_today(&app, "M-GONE", &[9000, 9100]).await;
    let paid_id = installment(&app, &internal, "c1").await["internalId"]
        .as_str()
        .unwrap()
        .to_string();
    let left_id = installment(&app, &internal, "c2").await["internalId"]
        .as_str()
        .unwrap()
        .to_string();
    // Paid on Webpay, but the browser never came back; and one left on Webpay unpaid.
    let (url, paid_token) = start_payment(&app, &link, &paid_id).await;
    on_webpay(&app, &url, &paid_token, &format!("card={VISA}")).await;
    let (_, left_token) = start_payment(&app, &link, &left_id).await;

    // Too early: the customer may still be on Webpay, so the run neither asks nor charges.
    app.advance_clock(Duration::minutes(5));
    let run = app.run_charging(app.today()).await;
    assert_eq!(payment_of(&standin, &paid_token).commits, 0, "{run:?}");
    assert_eq!(run.counts.attempted, 0, "{run:?}");

    app.advance_clock(Duration::minutes(20));
    let run = app.run_charging(app.today()).await;
    assert_eq!(payment_of(&standin, &paid_token).commits, 1, "{run:?}");
    let paid = installment(&app, &internal, "c1").await;
    assert_eq!(paid["state"]["name"], "PAID", "{paid}");
    assert_eq!(paid["authorizationCode"], "1213", "{paid}");
    // The one left unpaid at Webpay was charged by the run through Oneclick, once; the one
    // paid on Webpay was not charged again.
    let sent: Vec<i64> = standin
        .requests
        .lock()
        .unwrap()
        .iter()
        .map(|r| r["details"][0]["amount"].as_i64().unwrap())
        .collect();
    assert!(!sent.contains(&9000), "{sent:?}");
    assert_eq!(sent.iter().filter(|a| **a == 9100).count(), 1, "{sent:?}");
    assert_eq!(payment_of(&standin, &left_token).commits, 0);
    let _ = &mut app;
}
