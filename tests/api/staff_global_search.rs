//! The search box of every staff page (`GET /admin/api/search?q=`): one text finds customers
//! (name, RUT with or without dots and dash, userId, usr_ id), mandates (mandateId, man_ id,
//! or their customer's), installments (ins_ id, the merchant's id) and events (evt_ id),
//! grouped by kind, a bounded number of each; a missing, too long or control-character text
//! is a 400 at `query.q`.

use serde_json::{Value, json};

use crate::helpers::*;
use crate::staff_ui_api::{Desk, owner};

/// Two customers with different names and RUTs, a mandate of each.
async fn seeded(app: &mut TestApp) -> (String, String) {
    app.login().await;
    let mut body = customer_body("cli-norte", "11.111.111-1");
    body["customer"]["personalInformation"] =
        json!({"firstName": "José", "lastName": "Muñoz", "secondLastName": "Lagos"});
    app.post("/user", &body).await.expect(201, "USER_CREATE_OK");
    let mut body = customer_body("cli-sur", &rut(15_555_555));
    body["customer"]["personalInformation"] =
        json!({"firstName": "Beatriz", "lastName": "Rojas", "secondLastName": "Vera"});
    app.post("/user", &body).await.expect(201, "USER_CREATE_OK");
    let norte = app
        .create_mandate(&dynamic_body(
            app,
            "cli-norte",
            "NORTE-77",
            &[("cuota-n1", 5000, 10)],
        ))
        .await;
    app.create_mandate(&dynamic_body(
        app,
        "cli-sur",
        "SUR-88",
        &[("cuota-s1", 7000, 10)],
    ))
    .await;
    // Activated, so that it has an event (its activation's notification).
    let norte_id = norte["mandate"]["internalId"].as_str().unwrap();
    app.post(
        &format!("/sandbox/mandates/{norte_id}/activate"),
        &json!({"paymentMethodId": 3,
                "card": {"number": "4111111111111111", "expiry": "12/35", "cvv": "123"}}),
    )
    .await
    .expect(200, "SANDBOX_ACTIVATE_OK");
    (
        norte["mandate"]["internalId"].as_str().unwrap().to_string(),
        norte["installments"][0]["internalId"]
            .as_str()
            .map(str::to_string)
            .unwrap_or_default(),
    )
}

async fn search(desk: &Desk<'_>, q: &str) -> Value {
    let reply = desk.get(&format!("/search?q={}", encode(q))).await;
    reply.expect(200, "SEARCH_OK");
    reply.body["payload"].clone()
}

fn ids(found: &Value, kind: &str, field: &str) -> Vec<String> {
    found[kind]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| {
            v.pointer(field)
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_string()
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn one_text_finds_customers_mandates_installments_and_events_by_any_id_name_or_rut() {
    let mut app = spawn_app().await;
    let (mandate, _) = seeded(&mut app).await;
    let admin = owner(&app).await;

    // A name without its accents, in any case; the customer and the customer's mandate.
    let found = search(&admin, "munoz").await;
    assert_eq!(ids(&found, "customers", "/customer/userId"), ["cli-norte"]);
    assert_eq!(ids(&found, "mandates", "/id"), ["NORTE-77"]);
    assert!(found["installments"].as_array().unwrap().is_empty());

    // A RUT with dots and dash, without them, or without the dash only.
    for rut in ["11.111.111-1", "111111111", "11111111-1"] {
        let found = search(&admin, rut).await;
        assert_eq!(
            ids(&found, "customers", "/customer/userId"),
            ["cli-norte"],
            "{rut}"
        );
    }

    // The merchant's ids and ours.
    let found = search(&admin, "SUR-88").await;
    assert_eq!(ids(&found, "mandates", "/id"), ["SUR-88"]);
    let found = search(&admin, &mandate).await;
    assert_eq!(ids(&found, "mandates", "/internalId"), [mandate.as_str()]);
    let usr = ids(
        &search(&admin, "cli-sur").await,
        "customers",
        "/customer/internalUserId",
    );
    assert_eq!(usr.len(), 1);
    let found = search(&admin, &usr[0]).await;
    assert_eq!(ids(&found, "customers", "/customer/userId"), ["cli-sur"]);

    // An installment by the merchant's id and by ours, with its mandate to link to.
    let found = search(&admin, "cuota-n1").await;
    assert_eq!(ids(&found, "installments", "/id"), ["cuota-n1"]);
    assert_eq!(
        ids(&found, "installments", "/mandateInternalId"),
        [mandate.as_str()]
    );
    let ins = ids(&found, "installments", "/internalId");
    let found = search(&admin, &ins[0]).await;
    assert_eq!(ids(&found, "installments", "/mandateId"), ["NORTE-77"]);

    // An event (notification) by its id.
    let detail = admin.get(&format!("/mandates/{mandate}")).await;
    let event = detail.body["payload"]["events"][0]["eventId"]
        .as_str()
        .expect("the activation's event")
        .to_string();
    {
        let found = search(&admin, &event).await;
        assert_eq!(ids(&found, "events", "/eventId"), [event.as_str()]);
        assert_eq!(
            ids(&found, "events", "/mandateInternalId"),
            [mandate.as_str()]
        );
    }

    // Nothing found is an empty answer of every kind.
    let found = search(&admin, "zzz-nadie").await;
    for kind in ["customers", "mandates", "installments", "events"] {
        assert!(found[kind].as_array().unwrap().is_empty(), "{kind}");
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn results_are_bounded_per_kind_and_bad_texts_are_400_at_query_q() {
    let mut app = spawn_app().await;
    seeded(&mut app).await;
    let admin = owner(&app).await;

    // "cli-" is in both customers' userIds: one of each kind when asked for one.
    let reply = admin.get("/search?q=cli-&limit=1").await;
    reply.expect(200, "SEARCH_OK");
    assert_eq!(
        reply.body["payload"]["customers"].as_array().unwrap().len(),
        1
    );
    assert_eq!(
        search(&admin, "cli-").await["customers"]
            .as_array()
            .unwrap()
            .len(),
        2
    );

    for (path, field) in [
        ("/search".to_string(), "query.q"),
        ("/search?q=%20%20".to_string(), "query.q"),
        (format!("/search?q={}", "a".repeat(101)), "query.q"),
        ("/search?q=a%00b".to_string(), "query.q"),
        ("/search?q=ana&limit=0".to_string(), "query.limit"),
        ("/search?q=ana&limit=21".to_string(), "query.limit"),
    ] {
        let reply = admin.get(&path).await;
        reply.expect(400, "VALIDATION_ERROR");
        assert_eq!(reply.error_fields(), [field], "{path}");
    }
    // Both at once.
    let reply = admin.get("/search?limit=x").await;
    reply.expect(400, "VALIDATION_ERROR");
    assert_eq!(sorted_fields(&reply), ["query.limit", "query.q"]);

    // Staff only.
    Desk::anonymous(&app)
        .get("/search?q=ana")
        .await
        .expect(401, "SESSION_REQUIRED");
}
