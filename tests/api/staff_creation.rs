//! Staff create customers and mandates for a commerce (`POST /admin/api/customers`,
//! `POST /admin/api/mandates`): the merchant API's bodies and rules, refusals at the same
//! paths, the commerce chosen by its code, operators and admins only, each creation in the
//! staff audit log; a mandate's answer carries its Magic Link.

use serde_json::{Value, json};

use crate::helpers::*;
use crate::staff_ui_api::{member, owner};

/// A staff customer body for the test commerce: the merchant's, without a userId.
fn staff_customer(rut: &str) -> Value {
    let mut body = customer_body("unused", rut);
    remove(&mut body, "/customer/userId");
    body["commerce"] = json!(COMMERCE);
    body
}

/// The staff audit log's actions on a target, oldest first.
async fn audited(desk: &crate::staff_ui_api::Desk<'_>, target: &str) -> Vec<(String, String)> {
    let reply = desk.get(&format!("/audit/staff?target={target}")).await;
    reply.expect(200, "STAFF_AUDIT_OK");
    let mut items: Vec<(String, String)> = reply.body["payload"]["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| {
            (
                i["action"].as_str().unwrap().to_string(),
                i["email"].as_str().unwrap_or_default().to_string(),
            )
        })
        .collect();
    items.reverse();
    items
}

#[tokio::test(flavor = "multi_thread")]
async fn staff_create_a_customer_under_the_merchant_rules() {
    let mut app = spawn_app().await;
    app.login().await;
    let admin = owner(&app).await;
    let operator = member(&app, &admin, "operator").await;
    let viewer = member(&app, &admin, "viewer").await;

    // The RUT with dots and dash; without a userId the normalised RUT is the customer's.
    let reply = operator
        .post("/customers", staff_customer("12.345.678-5"))
        .await;
    reply.expect(201, "CUSTOMER_CREATED");
    let created = &reply.body["payload"];
    assert_eq!(created["commerce"], COMMERCE);
    assert_eq!(created["customer"]["userId"], "12345678-5");
    assert_eq!(
        created["customer"]["identificationDocument"]["number"],
        "12345678-5"
    );
    assert_eq!(created["customer"]["contacts"]["email"], "ana@example.cl");
    assert_eq!(created["customer"]["contacts"]["phone"], "+56912345678");
    assert_eq!(created["customer"]["address"]["commune"], "Providencia");
    let internal = created["customer"]["internalUserId"].as_str().unwrap();
    assert!(internal.starts_with("usr_"));

    // Without dots, with a userId of the staff member's choice.
    let mut plain = staff_customer(&rut(7_654_321).replace('.', ""));
    plain["customer"]["userId"] = json!("cliente-77");
    operator
        .post("/customers", plain)
        .await
        .expect(201, "CUSTOMER_CREATED");

    // The customer is the commerce's: the merchant finds it by its userId.
    let merchant = app
        .post(
            "/mandate",
            &subscription_body(&app, "12345678-5", "STAFF-CUST-1", 2),
        )
        .await;
    merchant.expect(201, "MANDATE_CREATE_OK");
    assert_eq!(
        merchant.body["payload"]["customer"]["internalUserId"],
        internal
    );

    // The staff page shows it, in its commerce.
    let page = admin.get(&format!("/customers/{internal}")).await;
    page.expect(200, "CUSTOMER_OK");
    assert_eq!(page.body["payload"]["commerce"], COMMERCE);

    // A staff creation never updates: the same RUT again, under its userId or another.
    let twice = operator
        .post("/customers", staff_customer("12345678-5"))
        .await;
    twice.expect(400, "DUPLICATED_RUT");
    assert_eq!(
        twice.error_fields(),
        ["customer.identificationDocument.number"]
    );
    let mut other_user = staff_customer("12.345.678-5");
    other_user["customer"]["userId"] = json!("otro");
    operator
        .post("/customers", other_user)
        .await
        .expect(400, "DUPLICATED_RUT");
    let mut taken = staff_customer(&rut(5_555_555));
    taken["customer"]["userId"] = json!("cliente-77");
    let taken = operator.post("/customers", taken).await;
    taken.expect(400, "DUPLICATED_USER_ID");
    assert_eq!(taken.error_fields(), ["customer.userId"]);

    // The same RUT in the other commerce is another customer.
    let mut elsewhere = staff_customer("12.345.678-5");
    elsewhere["commerce"] = json!(OTHER_COMMERCE);
    operator
        .post("/customers", elsewhere)
        .await
        .expect(201, "CUSTOMER_CREATED");

    // Every bad field at once, at the merchant API's paths, beside the commerce's.
    let mut bad = staff_customer("12.345.678-9");
    set(&mut bad, "/customer/contacts/email", json!("not-an-email"));
    set(&mut bad, "/customer/contacts/phone", json!("call me"));
    set(
        &mut bad,
        "/customer/personalInformation/firstName",
        json!(" "),
    );
    bad["commerce"] = json!("99999999-9");
    let refused = operator.post("/customers", bad.clone()).await;
    refused.expect(400, "VALIDATION_ERROR");
    assert_eq!(
        sorted_fields(&refused),
        [
            "commerce",
            "customer.contacts.email",
            "customer.contacts.phone",
            "customer.identificationDocument.number",
            "customer.personalInformation.firstName",
        ]
    );
    assert_eq!(
        error_codes(&refused)[0],
        "COMMERCE_NOT_FOUND",
        "the commerce first"
    );
    // The merchant API names the same customer fields for the same member.
    let mut merchant_bad = bad.clone();
    remove(&mut merchant_bad, "/commerce");
    set(&mut merchant_bad, "/customer/userId", json!("x-1"));
    let merchant_refused = app.post("/user", &merchant_bad).await;
    let mut staff_fields = sorted_fields(&refused);
    staff_fields.retain(|f| f != "commerce");
    assert_eq!(sorted_fields(&merchant_refused), staff_fields);

    let missing = operator.post("/customers", json!({"customer": {}})).await;
    missing.expect(400, "VALIDATION_ERROR");
    assert!(missing.error_fields().contains(&"commerce".to_string()));
    assert!(
        missing
            .error_fields()
            .contains(&"customer.identificationDocument".to_string())
    );

    // Viewers read only.
    viewer
        .post("/customers", staff_customer(&rut(3_333_333)))
        .await
        .expect(403, "ROLE_NOT_ALLOWED");

    assert_eq!(
        audited(&admin, internal).await,
        [(
            "customer.create".to_string(),
            "operator@merchant.example".to_string()
        )]
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn staff_create_mandates_of_every_type_with_their_magic_link() {
    let mut app = spawn_app().await;
    app.login().await;
    let admin = owner(&app).await;
    let viewer = member(&app, &admin, "viewer").await;
    let customer = admin
        .post("/customers", staff_customer("12.345.678-5"))
        .await;
    customer.expect(201, "CUSTOMER_CREATED");
    let usr = customer.body["payload"]["customer"]["internalUserId"]
        .as_str()
        .unwrap()
        .to_string();
    let body = |mandate: Value, installments: Value| {
        json!({"commerce": COMMERCE, "customer": {"internalUserId": usr},
               "mandate": mandate, "installments": installments})
    };
    let cases = [
        (
            "DYN-1",
            body(
                json!({"id": "DYN-1", "type": "DYNAMIC", "name": "Consumo",
                       "charges": {"currencyId": "CLF"}}),
                json!([
                    {"id": "1", "amount": 1.25, "currencyId": "CLF", "installmentDueDate": app.date_in(5)},
                    {"id": "2", "amount": 2.5, "currencyId": "CLF", "installmentDueDate": app.date_in(35)},
                ]),
            ),
            2,
        ),
        (
            "PER-1",
            body(
                json!({"id": "PER-1", "type": "PERMANENT", "name": "Arriendo",
                       "charges": {"currencyId": "CLP", "amount": 350000, "periodicity": "MONTHLY",
                                   "startDate": app.date_in(3)}}),
                json!([]),
            ),
            12,
        ),
        (
            "SUB-1",
            body(
                json!({"id": "SUB-1", "type": "SUBSCRIPTION", "name": "Gimnasio",
                       "charges": {"currencyId": "CLP", "amount": 29990, "periodicity": "MONTHLY",
                                   "startDate": app.date_in(3), "count": 6}}),
                json!([]),
            ),
            6,
        ),
        (
            "ONE-1",
            body(
                json!({"id": "ONE-1", "type": "ONEPAY", "name": "Matrícula",
                       "charges": {"currencyId": "CLP", "amount": 150000, "dueDate": app.date_in(2)}}),
                json!([]),
            ),
            1,
        ),
    ];
    for (id, request, installments) in cases {
        let reply = admin.post("/mandates", request).await;
        reply.expect(201, "MANDATE_CREATED");
        let payload = &reply.body["payload"];
        assert_eq!(payload["commerce"], COMMERCE);
        let mandate = &payload["mandate"]["mandate"];
        assert_eq!(mandate["id"], id);
        assert_eq!(mandate["state"]["name"], "PENDING");
        let link = mandate["magicLink"].as_str().unwrap();
        assert!(link.starts_with(&format!("{}/link/", app.base)), "{link}");
        assert_eq!(
            payload["mandate"]["installments"].as_array().unwrap().len(),
            installments,
            "{id}"
        );
        let internal = mandate["internalId"].as_str().unwrap();
        admin
            .get(&format!("/mandates/{internal}"))
            .await
            .expect(200, "MANDATE_OK");
        assert_eq!(
            audited(&admin, internal).await,
            [(
                "mandate.create".to_string(),
                "owner@merchant.example".to_string()
            )]
        );
        // The Magic Link opens the customer's page.
        let page = app.client.get(link).send().await.unwrap();
        assert_eq!(page.status(), 200, "{link}");
    }

    // The merchant sees the staff's mandate as its own.
    app.get("/mandate/id/DYN-1")
        .await
        .expect(200, "MANDATE_DETAIL_OK");
    // And its id is taken.
    let again = admin
        .post(
            "/mandates",
            body(
                json!({"id": "DYN-1", "type": "DYNAMIC", "name": "Otra vez",
                       "charges": {"currencyId": "CLP"}}),
                json!([]),
            ),
        )
        .await;
    again.expect(400, "DUPLICATED_MANDATE_ID");

    // The merchant's rules, at its paths: a ONEPAY with a periodicity, an installment in the
    // past, a SUBSCRIPTION with both count and endDate, beside a missing commerce.
    let bad = json!({"customer": {"internalUserId": usr},
        "mandate": {"id": "BAD-1", "type": "ONEPAY", "name": "Mal",
                    "charges": {"currencyId": "CLP", "amount": 1000, "periodicity": "MONTHLY"}},
        "installments": [{"id": "1", "amount": 1000, "currencyId": "CLP",
                          "installmentDueDate": app.date_in(-1)}]});
    let refused = admin.post("/mandates", bad.clone()).await;
    refused.expect(400, "VALIDATION_ERROR");
    let merchant = app.post("/mandate", &bad).await;
    let mut merchant_fields = sorted_fields(&merchant);
    merchant_fields.push("commerce".into());
    merchant_fields.sort();
    assert_eq!(sorted_fields(&refused), merchant_fields);
    assert!(
        refused
            .error_fields()
            .contains(&"mandate.charges.periodicity".to_string())
    );

    // A customer of another commerce is not found in this one.
    let mut foreign = body(
        json!({"id": "DYN-9", "type": "DYNAMIC", "name": "Ajeno",
               "charges": {"currencyId": "CLP"}}),
        json!([]),
    );
    foreign["commerce"] = json!(OTHER_COMMERCE);
    let foreign = admin.post("/mandates", foreign).await;
    foreign.expect(400, "USER_NOT_FOUND");
    assert_eq!(foreign.error_fields(), ["customer.internalUserId"]);

    viewer
        .post(
            "/mandates",
            body(
                json!({"id": "DYN-V", "type": "DYNAMIC", "name": "Lector",
                       "charges": {"currencyId": "CLP"}}),
                json!([]),
            ),
        )
        .await
        .expect(403, "ROLE_NOT_ALLOWED");
}
