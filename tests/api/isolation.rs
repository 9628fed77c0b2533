//! Isolation between commerces (seed 2.2, CONTRACT 3): another commerce's customers, mandates
//! and installments are never found, changed or listed, even by their exact ids.

use reqwest::Method;
use serde_json::{Value, json};

use crate::helpers::*;

const CHANGE: &str = "/installments/status/change";

/// What COMMERCE created, with its ids; the app then acts as OTHER_COMMERCE.
struct Theirs {
    app: TestApp,
    user_internal: String,
    sub_internal: String,
    dyn_internal: String,
    dyn_installment: String,
    one_internal: String,
}

async fn theirs() -> Theirs {
    let mut app = spawn_app().await;
    app.login().await;
    let user_internal = app.create_customer("cust-001", "12.345.678-5").await;
    let sub = app
        .create_mandate(&subscription_body(&app, "cust-001", "SUB-1", 2))
        .await;
    let dynamic = app
        .create_mandate(&dynamic_body(&app, "cust-001", "DYN-1", &[("c1", 1000, 5)]))
        .await;
    let one = app
        .create_mandate(&onepay_body(&app, "cust-001", "OP-1", 5000, None))
        .await;
    let text = |v: &Value| v.as_str().unwrap().to_string();
    let theirs = Theirs {
        user_internal,
        sub_internal: text(&sub["mandate"]["internalId"]),
        dyn_internal: text(&dynamic["mandate"]["internalId"]),
        dyn_installment: text(&dynamic["installments"][0]["internalId"]),
        one_internal: text(&one["mandate"]["internalId"]),
        app,
    };
    let mut theirs = theirs;
    theirs.app.act_as(OTHER_COMMERCE).await;
    theirs
}

impl Theirs {
    /// Back to COMMERCE, to check that nothing of its own changed.
    async fn as_owner(&mut self) -> &TestApp {
        self.app.act_as(COMMERCE).await;
        &self.app
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn lookups_do_not_find_another_commerces_mandates() {
    let t = theirs().await;
    let paths = [
        "/mandate/id/SUB-1".to_string(),
        format!("/mandate/internalId/{}", t.sub_internal),
        "/mandate/id/OP-1".to_string(),
        format!("/mandate/internalId/{}", t.one_internal),
        "/mandate/onepay/confirm/id/OP-1".to_string(),
        format!("/mandate/internalId/{}", t.dyn_internal),
    ];
    for path in paths {
        let reply = t.app.get(&path).await;
        reply.expect(404, "MANDATE_NOT_FOUND");
        // The 404 names what was asked for, and nothing of what the other commerce holds.
        let named = &reply.body["errors"][0];
        assert!(
            named["field"].as_str().unwrap().starts_with("path."),
            "{path}"
        );
        assert_eq!(named["value"], path.rsplit('/').next().unwrap(), "{path}");
        assert_eq!(reply.body["errors"].as_array().unwrap().len(), 1, "{path}");
        assert!(reply.body.get("payload").is_none(), "{path}");
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn cancel_does_not_reach_another_commerces_mandates() {
    let mut t = theirs().await;
    // The other commerce may even have a customer with the same userId.
    t.app.create_customer("cust-001", "12.345.678-5").await;
    let paths = [
        "/mandate/cancel/id/SUB-1/userId/cust-001".to_string(),
        format!(
            "/mandate/cancel/internalId/{}/internalUserId/{}",
            t.sub_internal, t.user_internal
        ),
        format!(
            "/mandate/cancel/internalId/{}/userId/cust-001",
            t.dyn_internal
        ),
        format!("/mandate/cancel/id/OP-1/internalUserId/{}", t.user_internal),
    ];
    for path in paths {
        let reply = t
            .app
            .delete(&path, Some(&json!({"description": "Intento ajeno"})))
            .await;
        reply.expect(404, "MANDATE_NOT_FOUND");
    }
    let sub_internal = t.sub_internal.clone();
    let app = t.as_owner().await;
    for id in ["SUB-1", "DYN-1", "OP-1"] {
        assert_eq!(app.mandate(id).await["mandate"]["state"]["id"], 1, "{id}");
    }
    assert!(app.events_of(&sub_internal).is_empty());
}

#[tokio::test(flavor = "multi_thread")]
async fn installments_cannot_be_added_to_another_commerces_mandates() {
    let mut t = theirs().await;
    let items = [("n1", 1000, 10)];
    let by_ids = installments_body(&t.app, "cust-001", "DYN-1", &items);
    let mut by_internal = by_ids.clone();
    by_internal["customer"] = json!({"internalUserId": t.user_internal});
    by_internal["product"] = json!({"internalId": t.dyn_internal});
    for body in [by_ids, by_internal] {
        let reply = t.app.post("/installments", &body).await;
        reply.expect(404, "MANDATE_NOT_FOUND");
    }
    let app = t.as_owner().await;
    assert_eq!(
        app.installment_states("DYN-1").await,
        [("c1".to_string(), 1)]
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn installment_states_of_another_commerce_cannot_change() {
    let mut t = theirs().await;
    let bodies = [
        (Method::PUT, payment_body(&t.app, "DYN-1", &["c1"], 1000)),
        (Method::PUT, payment_body(&t.app, "OP-1", &["1"], 5000)),
        (Method::POST, annulment_body("SUB-1", &["1", "2"])),
        (
            Method::PUT,
            json!({"product": {"internalId": t.dyn_internal},
                   "installments": {"internalIds": [t.dyn_installment]},
                   "action": "ANNULMENT"}),
        ),
    ];
    for (method, body) in bodies {
        let reply = t.app.request(method, CHANGE, Some(&body)).await;
        reply.expect(404, "MANDATE_NOT_FOUND");
    }
    let dyn_internal = t.dyn_internal.clone();
    let app = t.as_owner().await;
    assert_eq!(
        app.installment_states("DYN-1").await,
        [("c1".to_string(), 1)]
    );
    assert_eq!(app.installment_states("OP-1").await, [("1".to_string(), 1)]);
    assert_eq!(
        app.installment_states("SUB-1").await,
        [("1".to_string(), 1), ("2".to_string(), 1)]
    );
    assert!(app.events_of(&dyn_internal).is_empty());
}

#[tokio::test(flavor = "multi_thread")]
async fn mandates_cannot_name_another_commerces_customer() {
    let t = theirs().await;
    let by_user_id = subscription_body(&t.app, "cust-001", "MINE-1", 2);
    let mut by_internal = by_user_id.clone();
    by_internal["customer"] = json!({"internalUserId": t.user_internal});
    for (body, field) in [
        (by_user_id, "customer.userId"),
        (by_internal, "customer.internalUserId"),
    ] {
        let reply = t.app.post("/mandate", &body).await;
        reply.expect(400, "USER_NOT_FOUND");
        assert_eq!(reply.error_fields(), [field]);
    }
    // With its own customer, the other commerce may reuse the same mandate id.
    t.app.create_customer("cust-001", "12.345.678-5").await;
    let mine = t
        .app
        .create_mandate(&subscription_body(&t.app, "cust-001", "SUB-1", 1))
        .await;
    assert_ne!(mine["mandate"]["internalId"], t.sub_internal.as_str());
    assert_ne!(mine["customer"]["internalUserId"], t.user_internal.as_str());
    assert_eq!(mine["installments"].as_array().unwrap().len(), 1);
}

#[tokio::test(flavor = "multi_thread")]
async fn the_same_user_id_and_rut_make_a_separate_customer() {
    let mut t = theirs().await;
    let mut body = customer_body("cust-001", "12345678-5");
    set(
        &mut body,
        "/customer/personalInformation/firstName",
        json!("Otra"),
    );
    let reply = t.app.post("/user", &body).await;
    reply.expect(201, "USER_CREATE_OK");
    let mine = reply.body["payload"]["customer"]["internalUserId"]
        .as_str()
        .unwrap()
        .to_string();
    assert_ne!(mine, t.user_internal);
    // A second time, the same request is answered as the first was (CONTRACT 14).
    let again = t.app.post("/user", &body).await;
    again.expect(201, "USER_CREATE_OK");
    assert_eq!(again.headers["mandato-replayed"], "true");
    assert_eq!(again.body, reply.body);
    let user_internal = t.user_internal.clone();
    let app = t.as_owner().await;
    // The owner's own first request again: a replay of its creation, the other commerce's
    // customer of the same userId and RUT notwithstanding.
    let reply = app
        .post("/user", &customer_body("cust-001", "12.345.678-5"))
        .await;
    reply.expect(201, "USER_CREATE_OK");
    assert_eq!(reply.headers["mandato-replayed"], "true");
    assert_eq!(
        reply.body["payload"]["customer"]["internalUserId"],
        user_internal.as_str()
    );
    let found = app.mandate("SUB-1").await;
    assert_eq!(found["customer"]["personalInformation"]["firstName"], "Ana");
}

#[tokio::test(flavor = "multi_thread")]
async fn receivables_never_list_another_commerces_installments() {
    let t = theirs().await;
    let queries = [
        String::new(),
        "mandateExternalId=SUB-1".to_string(),
        format!("mandateInternalId={}", t.sub_internal),
        format!("mandateInternalId={}", t.dyn_internal),
        "userId=cust-001".to_string(),
        format!("internalUserId={}", t.user_internal),
        "state=1".to_string(),
    ];
    for query in queries {
        let reply = t.app.get(&format!("/receivables?{query}")).await;
        reply.expect(200, "RECEIVABLES_OK");
        assert_eq!(
            reply.body["payload"],
            json!({"items": [], "nextCursor": null}),
            "?{query}"
        );
    }
    // Its own installments, under the same ids, are the only ones it sees.
    t.app.create_customer("cust-001", "12.345.678-5").await;
    t.app
        .create_mandate(&subscription_body(&t.app, "cust-001", "SUB-1", 1))
        .await;
    let reply = t.app.get("/receivables?mandateExternalId=SUB-1").await;
    reply.expect(200, "RECEIVABLES_OK");
    assert_eq!(reply.body["payload"]["items"].as_array().unwrap().len(), 1);
}
