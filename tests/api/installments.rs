//! Installments (CONTRACT 5): adding them to DYNAMIC mandates (all or nothing), and marking them
//! paid or annulled by hand, with the state machine, the payment evidence, the events and the
//! mandates that finish.

use reqwest::Method;
use serde_json::{Value, json};

use crate::helpers::*;

const CHANGE: &str = "/installments/status/change";

async fn app_with_dynamic(installments: &[(&str, i64, i64)]) -> TestApp {
    let mut app = spawn_app().await;
    app.login().await;
    app.create_customer("cust-001", "12.345.678-5").await;
    app.create_mandate(&dynamic_body(&app, "cust-001", "DYN-1", installments))
        .await;
    app
}

fn s(pairs: &[(&str, i64)]) -> Vec<(String, i64)> {
    pairs.iter().map(|(id, st)| (id.to_string(), *st)).collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn installments_are_added_to_a_dynamic_mandate() {
    let app = app_with_dynamic(&[("c1", 10000, 5)]).await;
    let found = app.mandate("DYN-1").await;
    let internal = found["mandate"]["internalId"].as_str().unwrap().to_string();
    let internal_user = found["customer"]["internalUserId"]
        .as_str()
        .unwrap()
        .to_string();

    let reply = app
        .post(
            "/installments",
            &installments_body(
                &app,
                "cust-001",
                "DYN-1",
                &[("c2", 20000, 15), ("c3", 100000, 25)],
            ),
        )
        .await;
    reply.expect(201, "INSTALLMENTS_CREATE_OK");
    assert_eq!(reply.body["statusCode"], 201);
    let payload = &reply.body["payload"];
    assert_eq!(
        payload["product"],
        json!({"internalId": internal, "id": "DYN-1", "state": {"id": 1, "name": "PENDING"}})
    );
    assert_eq!(
        id_states(&payload["installments"]),
        s(&[("c2", 1), ("c3", 1)])
    );
    assert_eq!(payload["installments"][0]["amount"], 20000);
    assert_eq!(
        payload["installments"][0]["installmentDueDate"],
        app.date_in(15)
    );
    assert!(
        payload["installments"][0]["internalId"]
            .as_str()
            .unwrap()
            .starts_with("ins_")
    );

    // By our ids, with urls (accepted, the mandate's are used).
    let mut body = installments_body(&app, "cust-001", "DYN-1", &[("c4", 500, 0)]);
    body["customer"] = json!({"internalUserId": internal_user});
    body["product"] = json!({"internalId": internal});
    body["urls"] = json!({"paymentWebhook": "https://elsewhere.example/hook"});
    app.post("/installments", &body)
        .await
        .expect(201, "INSTALLMENTS_CREATE_OK");

    let found = app.mandate("DYN-1").await;
    assert_eq!(
        id_states(&found["installments"]),
        s(&[("c4", 1), ("c1", 1), ("c2", 1), ("c3", 1)])
    );
    assert_eq!(
        found["mandate"]["urls"]["paymentWebhook"],
        "https://merchant.example/hooks/payment"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn refused_additions_add_nothing() {
    let app = app_with_dynamic(&[("c1", 10000, 5)]).await;
    let internal_user = app.mandate("DYN-1").await["customer"]["internalUserId"].clone();
    let base = installments_body(
        &app,
        "cust-001",
        "DYN-1",
        &[("n1", 1000, 10), ("n2", 2000, 20)],
    );
    let v = |value: Value| Some(value);
    let cases: Vec<(Changes, &str, Vec<&str>)> = vec![
        (
            vec![("/installmentsNumber", v(json!(3)))],
            "VALIDATION_ERROR",
            vec!["installmentsNumber"],
        ),
        (
            vec![("/installmentsNumber", v(json!(1)))],
            "VALIDATION_ERROR",
            vec!["installmentsNumber"],
        ),
        (
            vec![("/installmentsNumber", None)],
            "VALIDATION_ERROR",
            vec!["installmentsNumber"],
        ),
        (
            vec![("/installments/1/id", v(json!("n1")))],
            "VALIDATION_ERROR",
            vec!["installments[1].id"],
        ),
        // An id the mandate already has, after a new one: the new one is not added either.
        (
            vec![("/installments/1/id", v(json!("c1")))],
            "DUPLICATED_INSTALLMENT_ID",
            vec!["installments[1].id"],
        ),
        (
            vec![("/installments/0/id", v(json!("c1")))],
            "DUPLICATED_INSTALLMENT_ID",
            vec!["installments[0].id"],
        ),
        (
            vec![("/installments/1/currencyId", v(json!("USD")))],
            "VALIDATION_ERROR",
            vec!["installments[1].currencyId"],
        ),
        (
            vec![("/installments/1/amount", v(json!(100001)))],
            "VALIDATION_ERROR",
            vec!["installments[1].amount"],
        ),
        (
            vec![("/installments/0/amount", v(json!(0)))],
            "VALIDATION_ERROR",
            vec!["installments[0].amount"],
        ),
        (
            vec![("/installments/0/amount", v(json!(10.5)))],
            "VALIDATION_ERROR",
            vec!["installments[0].amount"],
        ),
        (
            vec![(
                "/installments/0/installmentDueDate",
                v(json!(app.date_in(-1))),
            )],
            "VALIDATION_ERROR",
            vec!["installments[0].installmentDueDate"],
        ),
        (
            vec![("/installments/0/installmentDueDate", v(json!("2026-02-30")))],
            "VALIDATION_ERROR",
            vec!["installments[0].installmentDueDate"],
        ),
        (
            vec![("/installments/0/id", None)],
            "VALIDATION_ERROR",
            vec!["installments[0].id"],
        ),
        (
            vec![
                ("/installments", v(json!([]))),
                ("/installmentsNumber", v(json!(0))),
            ],
            "VALIDATION_ERROR",
            vec!["installments"],
        ),
        (
            vec![
                ("/installments", None),
                ("/installmentsNumber", v(json!(0))),
            ],
            "VALIDATION_ERROR",
            vec!["installments"],
        ),
        // Exactly one of the alternative ids, for the customer and for the product.
        (
            vec![("/customer/internalUserId", v(internal_user.clone()))],
            "VALIDATION_ERROR",
            vec!["customer"],
        ),
        (
            vec![("/customer/userId", None)],
            "VALIDATION_ERROR",
            vec!["customer"],
        ),
        (
            vec![("/customer", None)],
            "VALIDATION_ERROR",
            vec!["customer"],
        ),
        (
            vec![("/product/internalId", v(json!("man_x")))],
            "VALIDATION_ERROR",
            vec!["product"],
        ),
        (
            vec![("/product/id", None)],
            "VALIDATION_ERROR",
            vec!["product"],
        ),
        (
            vec![("/customer", v(json!({}))), ("/product", v(json!({})))],
            "VALIDATION_ERROR",
            vec!["customer", "product"],
        ),
        // Wrong types.
        (
            vec![("/installmentsNumber", v(json!("2")))],
            "VALIDATION_ERROR",
            vec!["installmentsNumber"],
        ),
        (
            vec![("/installments", v(json!({"id": "n1"})))],
            "VALIDATION_ERROR",
            vec!["installments"],
        ),
        (
            vec![("/installments/1/amount", v(json!("2000")))],
            "VALIDATION_ERROR",
            vec!["installments[1].amount"],
        ),
    ];
    for (changes, name, fields) in cases {
        let reply = app.post("/installments", &changed(&base, &changes)).await;
        reply.expect(400, name);
        assert_eq!(sorted_fields(&reply), fields, "{changes:?}");
    }
    let reply = app
        .request_raw(Method::POST, "/installments", "{installments: 1}")
        .await;
    reply.expect(400, "VALIDATION_ERROR");
    assert_eq!(reply.error_fields(), ["body"]);
    assert_eq!(app.installment_states("DYN-1").await, s(&[("c1", 1)]));
    // The same body, valid, then goes through.
    app.post("/installments", &base)
        .await
        .expect(201, "INSTALLMENTS_CREATE_OK");
    assert_eq!(
        app.installment_states("DYN-1").await,
        s(&[("c1", 1), ("n1", 1), ("n2", 1)])
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn installments_are_added_only_to_live_dynamic_mandates_of_the_customer() {
    let app = app_with_dynamic(&[("c1", 10000, 5)]).await;
    app.create_customer("cust-002", &rut(11_111_111)).await;
    app.create_mandate(&subscription_body(&app, "cust-001", "SUB-1", 2))
        .await;
    app.create_mandate(&onepay_body(&app, "cust-001", "OP-1", 5000, None))
        .await;
    app.create_mandate(&dynamic_body(&app, "cust-001", "DYN-X", &[]))
        .await;
    app.delete(
        "/mandate/cancel/id/DYN-X/userId/cust-001?description=Cierre",
        None,
    )
    .await
    .expect(200, "MANDATE_CANCEL_OK");
    let items = [("n1", 1000, 10)];
    let cases = [
        (
            "cust-001",
            "SUB-1",
            400,
            "MANDATE_TYPE_CONFLICT",
            vec!["product"],
        ),
        (
            "cust-001",
            "OP-1",
            400,
            "MANDATE_TYPE_CONFLICT",
            vec!["product"],
        ),
        ("cust-001", "DYN-X", 400, "MANDATE_STATE_CONFLICT", vec![]),
        // A 404 names the field of what it could not find: another customer's mandate is
        // not this customer's.
        (
            "cust-002",
            "DYN-1",
            404,
            "MANDATE_NOT_FOUND",
            vec!["customer.userId"],
        ),
        (
            "nobody",
            "DYN-1",
            404,
            "MANDATE_NOT_FOUND",
            vec!["customer.userId"],
        ),
        (
            "cust-001",
            "NOPE",
            404,
            "MANDATE_NOT_FOUND",
            vec!["product.id"],
        ),
    ];
    for (user, mandate, status, name, fields) in cases {
        let reply = app
            .post(
                "/installments",
                &installments_body(&app, user, mandate, &items),
            )
            .await;
        reply.expect(status, name);
        assert_eq!(reply.error_fields(), fields, "{user} {mandate}");
    }
    assert_eq!(app.installment_states("DYN-1").await, s(&[("c1", 1)]));
    assert_eq!(
        app.installment_states("SUB-1").await,
        s(&[("1", 1), ("2", 1)])
    );
    assert_eq!(app.installment_states("DYN-X").await, vec![]);
}

#[tokio::test(flavor = "multi_thread")]
async fn payment_by_ids_and_by_internal_ids() {
    let app = app_with_dynamic(&[("c1", 10000, 5), ("c2", 20000, 10), ("c3", 30000, 15)]).await;
    let found = app.mandate("DYN-1").await;
    let internal = found["mandate"]["internalId"].as_str().unwrap().to_string();
    let c3 = found["installments"][2]["internalId"]
        .as_str()
        .unwrap()
        .to_string();

    // By external ids, two at once, with PUT.
    let reply = app
        .put(CHANGE, &payment_body(&app, "DYN-1", &["c1", "c2"], 30000))
        .await;
    reply.expect(200, "INSTALLMENTS_STATUS_CHANGE_OK");
    assert_eq!(reply.body["statusCode"], 200);
    let payload = &reply.body["payload"];
    assert_eq!(payload["product"]["id"], "DYN-1");
    assert_eq!(
        id_states(&payload["installments"]),
        s(&[("c1", 2), ("c2", 2)])
    );
    let paid = &payload["installments"][0];
    assert_eq!(paid["state"], json!({"id": 2, "name": "PAID"}));
    assert_eq!(paid["authorizationCode"], "TRX-889");
    assert_eq!(
        paid["payment"],
        json!({"date": app.date_in(0), "amount": 30000, "currencyId": "CLP",
               "authorizationCode": "TRX-889", "method": "TRANSFER"})
    );

    // By our ids, with POST, dated in the past, without the optional fields.
    let body = json!({
        "product": {"internalId": internal},
        "installments": {"internalIds": [c3]},
        "action": "PAYMENT",
        "payment": {"date": app.date_in(-3), "amount": 30000, "currencyId": "CLP"}
    });
    let reply = app.request(Method::POST, CHANGE, Some(&body)).await;
    reply.expect(200, "INSTALLMENTS_STATUS_CHANGE_OK");
    let paid = &reply.body["payload"]["installments"][0];
    assert_eq!(paid["internalId"], c3.as_str());
    assert_eq!(paid["state"]["id"], 2);
    assert_eq!(paid["authorizationCode"], Value::Null);
    assert_eq!(paid["payment"]["date"], app.date_in(-3));
    assert_eq!(paid["payment"]["method"], Value::Null);
    assert_eq!(
        app.installment_states("DYN-1").await,
        s(&[("c1", 2), ("c2", 2), ("c3", 2)])
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn payment_refusals_change_nothing() {
    let app = app_with_dynamic(&[("c1", 10000, 5), ("c2", 20000, 10)]).await;
    let other = app
        .create_mandate(&dynamic_body(
            &app,
            "cust-001",
            "DYN-2",
            &[("x1", 10000, 5)],
        ))
        .await;
    let other_installment = other["installments"][0]["internalId"].clone();
    let base = payment_body(&app, "DYN-1", &["c1", "c2"], 30000);
    let v = |value: Value| Some(value);
    let cases: Vec<(Changes, u16, &str, Vec<&str>)> = vec![
        (
            vec![("/payment/amount", v(json!(29999)))],
            400,
            "VALIDATION_ERROR",
            vec!["payment.amount"],
        ),
        (
            vec![("/payment/amount", v(json!(10000)))],
            400,
            "VALIDATION_ERROR",
            vec!["payment.amount"],
        ),
        (
            vec![("/payment/amount", v(json!(30000.5)))],
            400,
            "VALIDATION_ERROR",
            vec!["payment.amount"],
        ),
        (
            vec![("/payment/amount", None)],
            400,
            "VALIDATION_ERROR",
            vec!["payment.amount"],
        ),
        (
            vec![("/payment", None)],
            400,
            "VALIDATION_ERROR",
            vec!["payment"],
        ),
        (
            vec![("/payment/currencyId", v(json!("USD")))],
            400,
            "VALIDATION_ERROR",
            vec!["payment.currencyId"],
        ),
        (
            vec![("/payment/currencyId", v(json!("XXX")))],
            400,
            "VALIDATION_ERROR",
            vec!["payment.currencyId"],
        ),
        (
            vec![("/payment/date", v(json!(app.date_in(1))))],
            400,
            "VALIDATION_ERROR",
            vec!["payment.date"],
        ),
        (
            vec![("/payment/date", None)],
            400,
            "VALIDATION_ERROR",
            vec!["payment.date"],
        ),
        (
            vec![("/action", v(json!("REFUND")))],
            400,
            "VALIDATION_ERROR",
            vec!["action"],
        ),
        (
            vec![("/action", v(json!("payment")))],
            400,
            "VALIDATION_ERROR",
            vec!["action"],
        ),
        (
            vec![("/action", None)],
            400,
            "VALIDATION_ERROR",
            vec!["action"],
        ),
        (
            vec![("/installments/internalIds", v(json!(["ins_x"])))],
            400,
            "VALIDATION_ERROR",
            vec!["installments"],
        ),
        (
            vec![("/installments", v(json!({})))],
            400,
            "VALIDATION_ERROR",
            vec!["installments"],
        ),
        (
            vec![("/installments/ids", v(json!([])))],
            400,
            "VALIDATION_ERROR",
            vec!["installments.ids"],
        ),
        (
            vec![
                ("/installments/ids", v(json!(["c1", "c1"]))),
                ("/payment/amount", v(json!(20000))),
            ],
            400,
            "VALIDATION_ERROR",
            vec!["installments.ids[1]"],
        ),
        (
            vec![("/product/internalId", v(json!("man_x")))],
            400,
            "VALIDATION_ERROR",
            vec!["product"],
        ),
        (
            vec![("/product", None)],
            400,
            "VALIDATION_ERROR",
            vec!["product"],
        ),
        (
            vec![
                ("/product", None),
                ("/installments", None),
                ("/action", None),
            ],
            400,
            "VALIDATION_ERROR",
            vec!["action", "installments", "product"],
        ),
        (
            vec![("/installments/ids", v(json!("c1")))],
            400,
            "VALIDATION_ERROR",
            vec!["installments.ids"],
        ),
        (
            vec![("/payment/amount", v(json!("30000")))],
            400,
            "VALIDATION_ERROR",
            vec!["payment.amount"],
        ),
        (
            vec![("/installments/ids", v(json!(["c1", "nope"])))],
            404,
            "INSTALLMENT_NOT_FOUND",
            vec!["installments.ids[1]"],
        ),
        (
            vec![
                ("/installments/ids", v(json!(["x1"]))),
                ("/payment/amount", v(json!(10000))),
            ],
            404,
            "INSTALLMENT_NOT_FOUND",
            vec!["installments.ids[0]"],
        ),
        (
            vec![
                (
                    "/installments",
                    v(json!({"internalIds": [other_installment]})),
                ),
                ("/payment/amount", v(json!(10000))),
            ],
            404,
            "INSTALLMENT_NOT_FOUND",
            vec!["installments.internalIds[0]"],
        ),
        (
            vec![("/payment/amount", v(json!({"value": 30000})))],
            400,
            "VALIDATION_ERROR",
            vec!["payment.amount"],
        ),
        (
            vec![("/product/id", v(json!("NOPE")))],
            404,
            "MANDATE_NOT_FOUND",
            vec!["product.id"],
        ),
    ];
    for (changes, status, name, fields) in cases {
        let reply = app.put(CHANGE, &changed(&base, &changes)).await;
        reply.expect(status, name);
        assert_eq!(sorted_fields(&reply), fields, "{changes:?}");
    }
    let reply = app.request_raw(Method::PUT, CHANGE, "action=PAYMENT").await;
    reply.expect(400, "VALIDATION_ERROR");
    assert_eq!(reply.error_fields(), ["body"]);
    assert_eq!(
        app.installment_states("DYN-1").await,
        s(&[("c1", 1), ("c2", 1)])
    );
    assert_eq!(app.installment_states("DYN-2").await, s(&[("x1", 1)]));
    let internal = app.mandate("DYN-1").await["mandate"]["internalId"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(app.events_of(&internal).is_empty());
    // Without authorizationCode: this commerce's contract does not require it.
    let mut body = base.clone();
    remove(&mut body, "/payment/authorizationCode");
    app.put(CHANGE, &body)
        .await
        .expect(200, "INSTALLMENTS_STATUS_CHANGE_OK");
}

#[tokio::test(flavor = "multi_thread")]
async fn the_authorization_code_is_required_when_the_contract_says_so() {
    let mut app = spawn_app_with(Options {
        authorization_required: true,
        ..Options::default()
    })
    .await;
    app.login().await;
    app.create_customer("cust-001", "12.345.678-5").await;
    app.create_mandate(&dynamic_body(
        &app,
        "cust-001",
        "DYN-1",
        &[("c1", 10000, 5)],
    ))
    .await;
    let base = payment_body(&app, "DYN-1", &["c1"], 10000);
    for code in [None, Some(json!("")), Some(json!("   "))] {
        let mut body = base.clone();
        match code {
            None => remove(&mut body, "/payment/authorizationCode"),
            Some(c) => set(&mut body, "/payment/authorizationCode", c),
        }
        let reply = app.put(CHANGE, &body).await;
        reply.expect(400, "VALIDATION_ERROR");
        assert_eq!(reply.error_fields(), ["payment.authorizationCode"]);
    }
    assert_eq!(app.installment_states("DYN-1").await, s(&[("c1", 1)]));
    let reply = app.put(CHANGE, &base).await;
    reply.expect(200, "INSTALLMENTS_STATUS_CHANGE_OK");
    assert_eq!(
        reply.body["payload"]["installments"][0]["authorizationCode"],
        "TRX-889"
    );
    // An annulment needs no evidence.
    app.post(
        "/installments",
        &installments_body(&app, "cust-001", "DYN-1", &[("c2", 1000, 5)]),
    )
    .await
    .expect(201, "INSTALLMENTS_CREATE_OK");
    app.put(CHANGE, &annulment_body("DYN-1", &["c2"]))
        .await
        .expect(200, "INSTALLMENTS_STATUS_CHANGE_OK");
}

#[tokio::test(flavor = "multi_thread")]
async fn annulment_and_the_moves_the_state_machine_refuses() {
    let app = app_with_dynamic(&[
        ("c1", 1000, 5),
        ("c2", 2000, 10),
        ("c3", 3000, 15),
        ("c4", 4000, 20),
    ])
    .await;
    let reply = app.put(CHANGE, &annulment_body("DYN-1", &["c1"])).await;
    reply.expect(200, "INSTALLMENTS_STATUS_CHANGE_OK");
    let annulled = &reply.body["payload"]["installments"][0];
    assert_eq!(annulled["state"], json!({"id": 4, "name": "ANNULLED"}));
    assert_eq!(annulled["payment"], Value::Null);
    app.put(CHANGE, &payment_body(&app, "DYN-1", &["c2"], 2000))
        .await
        .expect(200, "INSTALLMENTS_STATUS_CHANGE_OK");
    let conflicts: Vec<(Value, &str)> = vec![
        // ANNULLED is final.
        (
            payment_body(&app, "DYN-1", &["c1"], 1000),
            "installments.ids[0]",
        ),
        (annulment_body("DYN-1", &["c1"]), "installments.ids[0]"),
        // PAID only moves to REVERSED (by the processor).
        (annulment_body("DYN-1", &["c2"]), "installments.ids[0]"),
        (
            payment_body(&app, "DYN-1", &["c2"], 2000),
            "installments.ids[0]",
        ),
        // All or nothing: the legal first move is not made when the second is illegal.
        (
            annulment_body("DYN-1", &["c3", "c2"]),
            "installments.ids[1]",
        ),
        (
            payment_body(&app, "DYN-1", &["c3", "c4", "c1"], 8000),
            "installments.ids[2]",
        ),
    ];
    for (body, field) in conflicts {
        let reply = app.put(CHANGE, &body).await;
        reply.expect(400, "INSTALLMENT_STATE_CONFLICT");
        assert_eq!(reply.error_fields(), [field], "{body}");
    }
    let reply = app
        .put(CHANGE, &annulment_body("DYN-1", &["c3", "ghost"]))
        .await;
    reply.expect(404, "INSTALLMENT_NOT_FOUND");
    assert_eq!(
        app.installment_states("DYN-1").await,
        s(&[("c1", 4), ("c2", 2), ("c3", 1), ("c4", 1)])
    );
    // By our ids.
    let found = app.mandate("DYN-1").await;
    let body = json!({"product": {"internalId": found["mandate"]["internalId"]},
                      "installments": {"internalIds": [found["installments"][2]["internalId"],
                                                       found["installments"][3]["internalId"]]},
                      "action": "ANNULMENT"});
    app.request(Method::POST, CHANGE, Some(&body))
        .await
        .expect(200, "INSTALLMENTS_STATUS_CHANGE_OK");
    assert_eq!(
        app.installment_states("DYN-1").await,
        s(&[("c1", 4), ("c2", 2), ("c3", 4), ("c4", 4)])
    );
    // A DYNAMIC mandate never finishes on its own.
    assert_eq!(found["mandate"]["state"]["id"], 1);
    assert_eq!(app.mandate("DYN-1").await["mandate"]["state"]["id"], 1);
}

#[tokio::test(flavor = "multi_thread")]
async fn every_state_change_writes_a_payment_event() {
    let app = app_with_dynamic(&[("c1", 1000, 5), ("c2", 2000, 10), ("c3", 3000, 15)]).await;
    let found = app.mandate("DYN-1").await;
    let internal = found["mandate"]["internalId"].as_str().unwrap().to_string();
    app.put(CHANGE, &payment_body(&app, "DYN-1", &["c2", "c1"], 3000))
        .await
        .expect(200, "INSTALLMENTS_STATUS_CHANGE_OK");
    app.advance_clock(chrono::Duration::seconds(2));
    app.put(CHANGE, &annulment_body("DYN-1", &["c3"]))
        .await
        .expect(200, "INSTALLMENTS_STATUS_CHANGE_OK");
    let events = app.events_of(&internal);
    let summary: Vec<(String, i64, String, i64)> = events
        .iter()
        .map(|e| {
            (
                e["event"].as_str().unwrap().to_string(),
                e["sequence"].as_i64().unwrap(),
                e["installment"]["id"].as_str().unwrap().to_string(),
                e["installment"]["state"]["id"].as_i64().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        summary,
        [
            ("payment".to_string(), 1, "c2".to_string(), 2),
            ("payment".to_string(), 2, "c1".to_string(), 2),
            ("payment".to_string(), 3, "c3".to_string(), 4),
        ]
    );
    let after = app.mandate("DYN-1").await;
    for event in &events {
        let installment = &event["installment"];
        let current = after["installments"]
            .as_array()
            .unwrap()
            .iter()
            .find(|i| i["id"] == installment["id"])
            .unwrap();
        assert_eq!(installment["internalId"], current["internalId"]);
        assert_eq!(installment["state"], current["state"]);
        assert_eq!(installment["dateTime"], current["dateTime"]);
        assert_eq!(installment["amount"], current["amount"]);
        assert_eq!(
            installment["installmentDueDate"],
            current["installmentDueDate"]
        );
        assert_eq!(
            event["product"],
            json!({"internalId": internal, "id": "DYN-1", "type": "DYNAMIC"})
        );
        assert_eq!(event["customer"]["userId"], "cust-001");
        assert_eq!(event["signature"].as_str().unwrap().len(), 64);
    }
    assert_eq!(events[0]["installment"]["authorizationCode"], "TRX-889");
    assert_eq!(events[2]["installment"]["authorizationCode"], Value::Null);
    assert_ne!(
        events[0]["installment"]["dateTime"],
        events[2]["installment"]["dateTime"]
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_subscription_finishes_when_every_installment_is_final() {
    let mut app = spawn_app().await;
    app.login().await;
    app.create_customer("cust-001", "12.345.678-5").await;
    app.create_mandate(&subscription_body(&app, "cust-001", "SUB-1", 3))
        .await;
    let reply = app
        .put(CHANGE, &payment_body(&app, "SUB-1", &["1"], 29990))
        .await;
    reply.expect(200, "INSTALLMENTS_STATUS_CHANGE_OK");
    assert_eq!(
        reply.body["payload"]["product"]["state"],
        json!({"id": 1, "name": "PENDING"})
    );
    let reply = app.put(CHANGE, &annulment_body("SUB-1", &["2"])).await;
    assert_eq!(reply.body["payload"]["product"]["state"]["id"], 1);
    let reply = app
        .put(CHANGE, &payment_body(&app, "SUB-1", &["3"], 29990))
        .await;
    reply.expect(200, "INSTALLMENTS_STATUS_CHANGE_OK");
    assert_eq!(
        reply.body["payload"]["product"]["state"],
        json!({"id": 4, "name": "FINISHED"})
    );
    let found = app.mandate("SUB-1").await;
    assert_eq!(
        found["mandate"]["state"],
        json!({"id": 4, "name": "FINISHED"})
    );
    assert_eq!(
        id_states(&found["installments"]),
        s(&[("1", 2), ("2", 4), ("3", 2)])
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_onepay_mandate_finishes_when_paid_unless_told_otherwise() {
    let mut app = spawn_app().await;
    app.login().await;
    app.create_customer("cust-001", "12.345.678-5").await;
    app.create_mandate(&onepay_body(&app, "cust-001", "OP-1", 50000, None))
        .await;
    let mut body = onepay_body(&app, "cust-001", "OP-2", 50000, None);
    set(&mut body, "/mandate/terminateWhenCharged", json!(false));
    app.create_mandate(&body).await;
    for (id, state) in [
        ("OP-1", json!({"id": 4, "name": "FINISHED"})),
        ("OP-2", json!({"id": 1, "name": "PENDING"})),
    ] {
        let reply = app
            .put(CHANGE, &payment_body(&app, id, &["1"], 50000))
            .await;
        reply.expect(200, "INSTALLMENTS_STATUS_CHANGE_OK");
        assert_eq!(reply.body["payload"]["product"]["state"], state, "{id}");
        let confirmed = app.get(&format!("/mandate/onepay/confirm/id/{id}")).await;
        confirmed.expect(200, "MANDATE_DETAIL_OK");
        assert_eq!(confirmed.body["payload"]["mandate"]["state"], state, "{id}");
        assert_eq!(
            confirmed.body["payload"]["installments"][0]["state"]["id"],
            2
        );
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn installments_of_a_cancelled_mandate_do_not_change() {
    let app = app_with_dynamic(&[("c1", 1000, 5)]).await;
    app.create_mandate(&dynamic_body(&app, "cust-001", "DYN-2", &[("c1", 1000, 5)]))
        .await;
    app.put(CHANGE, &payment_body(&app, "DYN-2", &["c1"], 1000))
        .await
        .expect(200, "INSTALLMENTS_STATUS_CHANGE_OK");
    for id in ["DYN-1", "DYN-2"] {
        app.delete(
            &format!("/mandate/cancel/id/{id}/userId/cust-001?description=Cierre"),
            None,
        )
        .await
        .expect(200, "MANDATE_CANCEL_OK");
    }
    for body in [
        payment_body(&app, "DYN-1", &["c1"], 1000),
        annulment_body("DYN-1", &["c1"]),
        annulment_body("DYN-2", &["c1"]),
    ] {
        let reply = app.put(CHANGE, &body).await;
        reply.expect(400, "MANDATE_STATE_CONFLICT");
    }
    assert_eq!(app.installment_states("DYN-1").await, s(&[("c1", 4)]));
    assert_eq!(app.installment_states("DYN-2").await, s(&[("c1", 2)]));
}
