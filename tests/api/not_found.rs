//! Every 404 of the merchant API names what it could not find (CONTRACT 14): `errors[0].field`
//! is the path or body field of the id, `errors[0].value` the id as sent.

use reqwest::Method;
use serde_json::Value;

use crate::helpers::*;

/// The one located error of a 404 named `name`: its field and value.
fn located(reply: &Reply, name: &str) -> (String, String) {
    reply.expect(404, name);
    let errors = reply.body["errors"].as_array().expect("errors");
    assert_eq!(errors.len(), 1, "{}", reply.body);
    let text = |v: &Value| v.as_str().unwrap_or_default().to_string();
    assert_eq!(errors[0]["code"], name);
    (text(&errors[0]["field"]), text(&errors[0]["value"]))
}

fn pair(field: &str, value: &str) -> (String, String) {
    (field.to_string(), value.to_string())
}

#[tokio::test(flavor = "multi_thread")]
async fn a_404_names_the_field_and_the_value_it_could_not_find() {
    let mut app = spawn_app().await;
    app.login().await;
    app.create_customer("cust-001", "12.345.678-5").await;
    app.create_customer("cust-002", "11.111.111-1").await;
    app.create_mandate(&dynamic_body(&app, "cust-001", "DYN-1", &[("c1", 1000, 5)]))
        .await;

    let reply = app.get("/mandate/id/NOPE-1").await;
    assert_eq!(
        located(&reply, "MANDATE_NOT_FOUND"),
        pair("path.mandateId", "NOPE-1")
    );
    let reply = app.get("/mandate/internalId/man_nope").await;
    assert_eq!(
        located(&reply, "MANDATE_NOT_FOUND"),
        pair("path.mandateId", "man_nope")
    );

    // A body's id: the product, then the customer the mandate does not belong to.
    let reply = app
        .post(
            "/installments",
            &installments_body(&app, "cust-001", "NOPE-2", &[("c9", 500, 9)]),
        )
        .await;
    assert_eq!(
        located(&reply, "MANDATE_NOT_FOUND"),
        pair("product.id", "NOPE-2")
    );
    let reply = app
        .post(
            "/installments",
            &installments_body(&app, "cust-002", "DYN-1", &[("c9", 500, 9)]),
        )
        .await;
    assert_eq!(
        located(&reply, "MANDATE_NOT_FOUND"),
        pair("customer.userId", "cust-002")
    );
    assert!(
        reply.body["errors"][0]["message"]
            .as_str()
            .unwrap()
            .contains("customer.userId"),
        "{}",
        reply.body
    );

    // The installment a status change names, by its place in the list.
    let reply = app
        .put(
            "/installments/status/change",
            &payment_body(&app, "DYN-1", &["c1", "c-nope"], 1000),
        )
        .await;
    assert_eq!(
        located(&reply, "INSTALLMENT_NOT_FOUND"),
        pair("installments.ids[1]", "c-nope")
    );

    let reply = app.get("/events/evt_nope").await;
    assert_eq!(
        located(&reply, "EVENT_NOT_FOUND"),
        pair("path.eventId", "evt_nope")
    );
    let reply = app.get("/signature/internalId/sig_nope").await;
    assert_eq!(
        located(&reply, "SIGNATURE_PROCESS_NOT_FOUND"),
        pair("path.internalId", "sig_nope")
    );
    let reply = app.request_raw(Method::GET, "/no/such/route", "").await;
    assert_eq!(
        located(&reply, "ROUTE_NOT_FOUND"),
        pair("path", "/api/v1/no/such/route")
    );
    let _ = &mut app;
}
