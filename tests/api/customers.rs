//! `POST /user` (CONTRACT 5, "Customer"): creation with a normalized RUT, the idempotent update,
//! the uniqueness of `userId` and RUT within a commerce, and every class of bad input.

use reqwest::Method;
use serde_json::{Value, json};

use crate::helpers::*;

#[tokio::test(flavor = "multi_thread")]
async fn creates_customers_with_a_normalized_rut() {
    let mut app = spawn_app().await;
    app.login().await;
    let cases = [
        ("c-dots", "12.345.678-5", "12345678-5"),
        ("c-lower-k", "10.000.013-k", "10000013-K"),
        ("c-upper-k", "1000005-K", "1000005-K"),
        ("c-no-dash", "111111111", "11111111-1"),
        ("c-short-k", "6k", "6-K"),
        ("c-spaces", " 7654321-6 ", "7654321-6"),
    ];
    for (user_id, given, normalized) in cases {
        let reply = app.post("/user", &customer_body(user_id, given)).await;
        reply.expect(201, "USER_CREATE_OK");
        assert_eq!(reply.body["statusCode"], 201);
        let customer = &reply.body["payload"]["customer"];
        assert_eq!(
            customer["identificationDocument"],
            json!({"type": "RUT", "number": normalized}),
            "RUT {given:?}"
        );
        assert_eq!(customer["userId"], user_id);
        let internal = customer["internalUserId"].as_str().unwrap();
        assert!(internal.starts_with("usr_"), "{internal}");
        assert_eq!(
            customer["personalInformation"],
            json!({"firstName": "Ana", "lastName": "Pérez", "secondLastName": "Soto"})
        );
        assert_eq!(
            customer["contacts"],
            json!({"email": "ana@example.cl", "phone": "+56912345678"})
        );
        assert_eq!(customer["address"]["street"], "Av. Providencia");
        assert_eq!(
            customer["address"]["apartment"],
            Value::Null,
            "absent fields are null"
        );
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn the_same_user_id_and_rut_updates_the_customer() {
    let mut app = spawn_app().await;
    app.login().await;
    let internal = app.create_customer("cust-001", "12.345.678-5").await;
    app.advance_clock(chrono::Duration::seconds(5));

    // The RUT may come in another form: it is the same RUT.
    let mut body = customer_body("cust-001", "123456785");
    set(
        &mut body,
        "/customer/personalInformation/firstName",
        json!("Ana María"),
    );
    set(
        &mut body,
        "/customer/contacts/email",
        json!("ana.maria@example.cl"),
    );
    set(
        &mut body,
        "/customer/contacts/phone",
        json!("+56 9 8765 4321"),
    );
    remove(&mut body, "/customer/address");
    let reply = app.post("/user", &body).await;
    reply.expect(200, "USER_UPDATE_OK");
    assert_eq!(reply.body["statusCode"], 200);
    let customer = &reply.body["payload"]["customer"];
    assert_eq!(customer["internalUserId"], internal.as_str());
    assert_eq!(customer["identificationDocument"]["number"], "12345678-5");
    assert_eq!(customer["personalInformation"]["firstName"], "Ana María");
    assert_eq!(customer["contacts"]["email"], "ana.maria@example.cl");
    assert_eq!(customer["contacts"]["phone"], "+56 9 8765 4321");
    assert_eq!(customer["address"], Value::Null);
    assert_ne!(customer["updatedAt"], customer["createdAt"]);

    // The update is what later operations see.
    let mandate = app
        .create_mandate(&subscription_body(&app, "cust-001", "M-1", 1))
        .await;
    assert_eq!(mandate["customer"]["internalUserId"], internal.as_str());
    assert_eq!(
        mandate["customer"]["contacts"]["email"],
        "ana.maria@example.cl"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn user_id_and_rut_are_each_unique_in_the_commerce() {
    let mut app = spawn_app().await;
    app.login().await;
    let internal = app.create_customer("cust-001", "12.345.678-5").await;
    app.create_customer("cust-002", &rut(11_111_111)).await;
    let cases = [
        // The same userId with another RUT (one held by nobody, and one held by another userId).
        ("cust-001", rut(22_222_222), "USER_RUT_MISMATCH"),
        ("cust-001", rut(11_111_111), "USER_RUT_MISMATCH"),
        // A RUT held by another userId, in any of its written forms.
        ("cust-003", "12.345.678-5".to_string(), "DUPLICATED_RUT"),
        ("cust-003", "123456785".to_string(), "DUPLICATED_RUT"),
    ];
    for (user_id, rut, name) in cases {
        let mut body = customer_body(user_id, &rut);
        set(
            &mut body,
            "/customer/personalInformation/firstName",
            json!("Intruso"),
        );
        let reply = app.post("/user", &body).await;
        reply.expect(400, name);
        assert_eq!(
            reply.error_fields(),
            ["customer.identificationDocument.number"],
            "{user_id} {rut}"
        );
    }
    // Nothing changed: cust-001 keeps its name and cust-003 was never created.
    let reply = app
        .post("/user", &customer_body("cust-001", "12345678-5"))
        .await;
    reply.expect(200, "USER_UPDATE_OK");
    assert_eq!(
        reply.body["payload"]["customer"]["internalUserId"],
        internal.as_str()
    );
    let reply = app
        .post("/mandate", &subscription_body(&app, "cust-003", "M-1", 1))
        .await;
    reply.expect(400, "USER_NOT_FOUND");
}

#[tokio::test(flavor = "multi_thread")]
async fn invalid_fields_are_named() {
    let mut app = spawn_app().await;
    app.login().await;
    let valid = customer_body("cust-001", "12.345.678-5");
    let cases: Vec<(Changes, Vec<&str>, &str)> = vec![
        (
            vec![(
                "/customer/identificationDocument/number",
                Some(json!("12.345.678-6")),
            )],
            vec!["customer.identificationDocument.number"],
            "INVALID_RUT",
        ),
        (
            vec![(
                "/customer/identificationDocument/number",
                Some(json!("12.345.678-K")),
            )],
            vec!["customer.identificationDocument.number"],
            "INVALID_RUT",
        ),
        (
            vec![(
                "/customer/identificationDocument/number",
                Some(json!("12-345-678")),
            )],
            vec!["customer.identificationDocument.number"],
            "INVALID_RUT",
        ),
        (
            vec![("/customer/identificationDocument/number", Some(json!("")))],
            vec!["customer.identificationDocument.number"],
            "INVALID_RUT",
        ),
        (
            vec![("/customer/identificationDocument/type", Some(json!("DNI")))],
            vec!["customer.identificationDocument.type"],
            "INVALID_VALUE",
        ),
        (
            vec![("/customer/contacts/email", Some(json!("ana@")))],
            vec!["customer.contacts.email"],
            "INVALID_EMAIL",
        ),
        (
            vec![("/customer/contacts/email", Some(json!("ana example.cl")))],
            vec!["customer.contacts.email"],
            "INVALID_EMAIL",
        ),
        (
            vec![("/customer/contacts/email", Some(json!("ana@example")))],
            vec!["customer.contacts.email"],
            "INVALID_EMAIL",
        ),
        (
            vec![("/customer/contacts/email", Some(json!("ana@@example.cl")))],
            vec!["customer.contacts.email"],
            "INVALID_EMAIL",
        ),
        (
            vec![("/customer/userId", Some(json!("cust 001")))],
            vec!["customer.userId"],
            "INVALID_ID",
        ),
        (
            vec![("/customer/userId", Some(json!("x".repeat(65))))],
            vec!["customer.userId"],
            "INVALID_ID",
        ),
        (
            vec![("/customer/personalInformation/firstName", Some(json!("  ")))],
            vec!["customer.personalInformation.firstName"],
            "REQUIRED",
        ),
        (
            vec![("/customer/contacts/phone", Some(json!("call me")))],
            vec!["customer.contacts.phone"],
            "INVALID_PHONE",
        ),
        // Several at once are all reported.
        (
            vec![
                (
                    "/customer/identificationDocument/number",
                    Some(json!("12.345.678-6")),
                ),
                ("/customer/contacts/email", Some(json!("nope"))),
                ("/customer/personalInformation/lastName", None),
            ],
            vec![
                "customer.contacts.email",
                "customer.identificationDocument.number",
                "customer.personalInformation.lastName",
            ],
            "",
        ),
    ];
    for (changes, fields, code) in cases {
        let body = changed(&valid, &changes);
        let reply = app.post("/user", &body).await;
        reply.expect(400, "VALIDATION_ERROR");
        assert_eq!(sorted_fields(&reply), fields, "{changes:?}");
        if !code.is_empty() {
            assert_eq!(error_codes(&reply), [code], "{changes:?}");
        }
    }
    // None of them registered the customer.
    app.create_customer("cust-001", "12.345.678-5").await;
}

#[tokio::test(flavor = "multi_thread")]
async fn missing_required_fields_are_listed_at_once() {
    let mut app = spawn_app().await;
    app.login().await;
    let cases = [
        (json!({}), vec!["customer"]),
        (json!({"customer": null}), vec!["customer"]),
        (
            json!({"customer": {}}),
            vec![
                "customer.contacts",
                "customer.identificationDocument",
                "customer.personalInformation",
                "customer.userId",
            ],
        ),
        (
            json!({"customer": {"userId": "cust-001", "identificationDocument": {},
                                "personalInformation": {}, "contacts": {}}}),
            vec![
                "customer.contacts.email",
                "customer.identificationDocument.number",
                "customer.personalInformation.firstName",
                "customer.personalInformation.lastName",
            ],
        ),
    ];
    for (body, fields) in cases {
        let reply = app.post("/user", &body).await;
        reply.expect(400, "VALIDATION_ERROR");
        assert_eq!(sorted_fields(&reply), fields, "{body}");
        assert!(
            error_codes(&reply).iter().all(|c| c == "REQUIRED"),
            "{}",
            reply.body
        );
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn wrong_json_types_and_bodies_that_are_not_json_are_400_at_their_path() {
    let mut app = spawn_app().await;
    app.login().await;
    let valid = customer_body("cust-001", "12.345.678-5");
    let typed: Vec<(&str, Value, &str)> = vec![
        ("/customer/userId", json!(1001), "customer.userId"),
        ("/customer", json!("cust-001"), "customer"),
        (
            "/customer/contacts/email",
            json!(["ana@example.cl"]),
            "customer.contacts.email",
        ),
        (
            "/customer/personalInformation",
            json!("Ana Pérez"),
            "customer.personalInformation",
        ),
        (
            "/customer/identificationDocument/number",
            json!(123456785),
            "customer.identificationDocument.number",
        ),
        (
            "/customer/address/number",
            json!(1234),
            "customer.address.number",
        ),
    ];
    for (pointer, value, field) in typed {
        let body = changed(&valid, &[(pointer, Some(value))]);
        let reply = app.post("/user", &body).await;
        reply.expect(400, "VALIDATION_ERROR");
        assert_eq!(reply.error_fields(), [field], "{pointer}");
        assert_eq!(error_codes(&reply), ["INVALID_TYPE"], "{pointer}");
    }
    for raw in [
        "not json",
        "{\"customer\": {\"userId\": ",
        "",
        "[]",
        "null",
        "\"customer\"",
        "{\"customer\": {}} trailing",
    ] {
        let reply = app.request_raw(Method::POST, "/user", raw).await;
        reply.expect(400, "VALIDATION_ERROR");
        assert_eq!(reply.error_fields(), ["body"], "body {raw:?}");
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn unknown_fields_are_ignored() {
    let mut app = spawn_app().await;
    app.login().await;
    let mut body = customer_body("cust-001", "12.345.678-5");
    set(&mut body, "/tracking", json!({"source": "crm"}));
    set(&mut body, "/customer/nickname", json!("Anita"));
    set(&mut body, "/customer/contacts/fax", json!(12345));
    set(
        &mut body,
        "/customer/identificationDocument/issuedBy",
        json!("SRCeI"),
    );
    let reply = app.post("/user", &body).await;
    reply.expect(201, "USER_CREATE_OK");
    let customer = &reply.body["payload"]["customer"];
    assert!(customer.get("nickname").is_none());
    assert_eq!(customer["identificationDocument"]["number"], "12345678-5");
}
