//! Idempotent creation by the merchant's own ids (CONTRACT 14): `POST /user`, `/mandate`,
//! `/installments` and `/signature` sent again with an equal request (whatever the members'
//! order and whitespace, with a new correlationId as clients must) answer what the first
//! answered, byte for byte, with `Mandato-Replayed: true`, and write nothing; another request
//! for the same id is refused at that id's field; after a restart and under a race too.

use reqwest::{Method, StatusCode};
use serde_json::{Value, json};

use crate::helpers::*;
use crate::signatures::{app_with_customers, simple_body};

const REPLAYED: &str = "mandato-replayed";

/// An answer as it came over the wire.
struct Raw {
    status: StatusCode,
    replayed: Option<String>,
    body: String,
}

impl Raw {
    fn json(&self) -> Value {
        serde_json::from_str(&self.body).expect("a JSON body")
    }

    #[track_caller]
    fn expect_first(&self, status: u16) {
        assert_eq!(self.status.as_u16(), status, "{}", self.body);
        assert_eq!(self.replayed, None, "a first answer is not marked");
    }

    #[track_caller]
    fn expect_replay_of(&self, first: &Raw) {
        assert_eq!(self.status, first.status, "{}", self.body);
        assert_eq!(self.body, first.body, "the first answer, byte for byte");
        assert_eq!(self.replayed.as_deref(), Some("true"));
    }

    #[track_caller]
    fn expect_refused_at(&self, name: &str, field: &str) {
        let body = self.json();
        assert_eq!(
            (self.status.as_u16(), body["name"].as_str()),
            (400, Some(name)),
            "{}",
            self.body
        );
        assert_eq!(body["errors"][0]["field"], field, "{}", self.body);
        assert_eq!(self.replayed, None);
    }
}

/// POSTs `body` as these exact bytes, with fresh common headers (a new correlationId).
async fn post_text(app: &TestApp, path: &str, body: &str) -> Raw {
    send(prepared(app, path, body)).await
}

/// A POST of `body` as these exact bytes, with fresh common headers (a new correlationId).
fn prepared(app: &TestApp, path: &str, body: &str) -> reqwest::RequestBuilder {
    let mut request = app.client.request(Method::POST, app.url(path));
    for (name, value) in common_headers(app) {
        request = request.header(name, value);
    }
    if let Some(token) = &app.token {
        request = request.header("Authorization", format!("Bearer {token}"));
    }
    request
        .header("Content-Type", "application/json")
        .body(body.to_string())
}

async fn send(request: reqwest::RequestBuilder) -> Raw {
    let response = request.send().await.expect("request sent");
    Raw {
        status: response.status(),
        replayed: response
            .headers()
            .get(REPLAYED)
            .map(|v| v.to_str().unwrap().to_string()),
        body: response.text().await.expect("body read"),
    }
}

async fn post(app: &TestApp, path: &str, body: &Value) -> Raw {
    post_text(app, path, &body.to_string()).await
}

/// The same JSON with every object's members in reverse order, pretty-printed.
fn reordered(value: &Value) -> String {
    fn reverse(value: &Value) -> Value {
        match value {
            Value::Object(map) => Value::Object(
                map.iter()
                    .rev()
                    .map(|(k, v)| (k.clone(), reverse(v)))
                    .collect(),
            ),
            Value::Array(items) => Value::Array(items.iter().map(reverse).collect()),
            other => other.clone(),
        }
    }
    let text = serde_json::to_string_pretty(&reverse(value)).unwrap();
    assert_ne!(text, value.to_string());
    text
}

/// A count of the calling commerce's rows, by SQL taking the commerce's id as `?1`.
fn count(app: &TestApp, sql: &str) -> i64 {
    app.running
        .state
        .store()
        .read(|db| {
            let id: i64 = db.query_row(
                "SELECT id FROM commerces WHERE code = ?1",
                &[COMMERCE.into()],
                |r| r.get(0),
            )?;
            Ok(db.query_row(sql, &[id.into()], |r| r.get(0))?)
        })
        .unwrap()
}

fn events(app: &TestApp) -> i64 {
    count(app, "SELECT count(*) FROM events WHERE commerce_id = ?1")
}

#[tokio::test(flavor = "multi_thread")]
async fn a_user_sent_again_is_answered_as_the_last_time_and_another_body_updates() {
    let mut app = spawn_app().await;
    app.login().await;
    let body = customer_body("cust-1", &rut(12_345_678));
    let first = post(&app, "/user", &body).await;
    first.expect_first(201);
    post(&app, "/user", &body).await.expect_replay_of(&first);
    post_text(&app, "/user", &reordered(&body))
        .await
        .expect_replay_of(&first);

    // Another request for the userId and its RUT updates, as before (CONTRACT 5); that
    // update is then what the same request is answered.
    let renamed = changed(
        &body,
        &[(
            "/customer/personalInformation/firstName",
            Some(json!("Ana María")),
        )],
    );
    let update = post(&app, "/user", &renamed).await;
    update.expect_first(200);
    assert_eq!(update.json()["name"], "USER_UPDATE_OK");
    post(&app, "/user", &renamed)
        .await
        .expect_replay_of(&update);
    // The first body again is another request by now: it updates back.
    post(&app, "/user", &body).await.expect_first(200);
    // Another RUT for the userId stays refused.
    let other_rut = changed(
        &body,
        &[(
            "/customer/identificationDocument/number",
            Some(json!(rut(11_111_111))),
        )],
    );
    post(&app, "/user", &other_rut).await.expect_refused_at(
        "USER_RUT_MISMATCH",
        "customer.identificationDocument.number",
    );
    assert_eq!(
        count(
            &app,
            "SELECT count(*) FROM customers WHERE commerce_id = ?1"
        ),
        1
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_mandate_sent_again_is_answered_as_the_first_time_and_another_body_is_refused() {
    let mut app = spawn_app().await;
    app.login().await;
    app.create_customer("cust-1", &rut(12_345_678)).await;
    let body = subscription_body(&app, "cust-1", "GYM-1", 3);
    let first = post(&app, "/mandate", &body).await;
    first.expect_first(201);
    let events_before = events(&app);

    post(&app, "/mandate", &body).await.expect_replay_of(&first);
    post_text(&app, "/mandate", &reordered(&body))
        .await
        .expect_replay_of(&first);
    let other = changed(&body, &[("/mandate/name", Some(json!("Plan anual")))]);
    post(&app, "/mandate", &other)
        .await
        .expect_refused_at("DUPLICATED_MANDATE_ID", "mandate.id");

    assert_eq!(
        count(&app, "SELECT count(*) FROM mandates WHERE commerce_id = ?1"),
        1
    );
    assert_eq!(
        count(
            &app,
            "SELECT count(*) FROM installments WHERE commerce_id = ?1"
        ),
        3
    );
    assert_eq!(events(&app), events_before, "a replay writes no event");
}

#[tokio::test(flavor = "multi_thread")]
async fn installments_sent_again_are_answered_as_the_first_time() {
    let mut app = spawn_app().await;
    app.login().await;
    app.create_customer("cust-1", &rut(12_345_678)).await;
    app.create_mandate(&dynamic_body(&app, "cust-1", "DYN-1", &[]))
        .await;
    let body = installments_body(&app, "cust-1", "DYN-1", &[("c2", 2000, 5), ("c1", 1000, 3)]);
    let first = post(&app, "/installments", &body).await;
    first.expect_first(201);
    let events_before = events(&app);

    post(&app, "/installments", &body)
        .await
        .expect_replay_of(&first);
    post_text(&app, "/installments", &reordered(&body))
        .await
        .expect_replay_of(&first);
    // The same ids with another amount, or listed in another order (another JSON array),
    // are another request: refused at the first id already used.
    let other_amount = changed(&body, &[("/installments/0/amount", Some(json!(2500)))]);
    post(&app, "/installments", &other_amount)
        .await
        .expect_refused_at("DUPLICATED_INSTALLMENT_ID", "installments[0].id");
    let swapped = installments_body(&app, "cust-1", "DYN-1", &[("c1", 1000, 3), ("c2", 2000, 5)]);
    post(&app, "/installments", &swapped)
        .await
        .expect_refused_at("DUPLICATED_INSTALLMENT_ID", "installments[0].id");

    assert_eq!(
        app.installment_states("DYN-1").await,
        [("c1".to_string(), 1), ("c2".to_string(), 1)]
    );
    assert_eq!(events(&app), events_before, "a replay writes no event");
}

/// An equal request is answered as the first time even when the checks before the creation
/// would now refuse it (its dates are past), and a new creation of that body is refused.
#[tokio::test(flavor = "multi_thread")]
async fn a_creation_sent_again_after_its_dates_passed_is_still_answered_as_the_first_time() {
    let mut app = spawn_app().await;
    app.login().await;
    app.create_customer("cust-1", &rut(12_345_678)).await;
    let mandate = dynamic_body(&app, "cust-1", "DYN-1", &[("c1", 1000, 3)]);
    let first_mandate = post(&app, "/mandate", &mandate).await;
    first_mandate.expect_first(201);
    let installments = installments_body(&app, "cust-1", "DYN-1", &[("c2", 2000, 5)]);
    let first_installments = post(&app, "/installments", &installments).await;
    first_installments.expect_first(201);

    app.advance_clock(chrono::Duration::days(30));
    app.login().await;
    post(&app, "/mandate", &mandate)
        .await
        .expect_replay_of(&first_mandate);
    post(&app, "/installments", &installments)
        .await
        .expect_replay_of(&first_installments);

    let anew = changed(&mandate, &[("/mandate/id", Some(json!("DYN-2")))]);
    let refused = post(&app, "/mandate", &anew).await;
    assert_eq!(refused.status.as_u16(), 400, "{}", refused.body);
    assert_eq!(refused.replayed, None);
    assert_eq!(
        count(&app, "SELECT count(*) FROM mandates WHERE commerce_id = ?1"),
        1
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_signature_process_sent_again_is_answered_as_the_first_time() {
    let app = app_with_customers().await;
    let body = simple_body(&[("cust-a", 1, "FES")]);
    let external_id = body["process"]["externalProcessId"].clone();
    let first = post(&app, "/signature", &body).await;
    first.expect_first(201);
    let events_before = events(&app);

    post(&app, "/signature", &body)
        .await
        .expect_replay_of(&first);
    post_text(&app, "/signature", &reordered(&body))
        .await
        .expect_replay_of(&first);
    let mut other = simple_body(&[("cust-b", 1, "FES")]);
    set(&mut other, "/process/externalProcessId", external_id);
    post(&app, "/signature", &other).await.expect_refused_at(
        "DUPLICATED_EXTERNAL_PROCESS_ID",
        "process.externalProcessId",
    );
    // Without an externalProcessId nothing names the process: each request creates one.
    let mut anonymous = simple_body(&[("cust-a", 1, "FES")]);
    remove(&mut anonymous, "/process/externalProcessId");
    post(&app, "/signature", &anonymous).await.expect_first(201);
    post(&app, "/signature", &anonymous).await.expect_first(201);

    assert_eq!(
        count(
            &app,
            "SELECT count(*) FROM signature_processes WHERE commerce_id = ?1"
        ),
        3
    );
    assert_eq!(events(&app), events_before, "a replay writes no event");
}

#[tokio::test(flavor = "multi_thread")]
async fn answers_are_replayed_after_a_restart() {
    let mut app = spawn_app().await;
    app.login().await;
    let customer = customer_body("cust-1", &rut(12_345_678));
    let user = post(&app, "/user", &customer).await;
    let mandate_body = dynamic_body(&app, "cust-1", "DYN-1", &[("c1", 1000, 3)]);
    let mandate = post(&app, "/mandate", &mandate_body).await;
    mandate.expect_first(201);
    let more = installments_body(&app, "cust-1", "DYN-1", &[("c2", 2000, 5)]);
    let installments = post(&app, "/installments", &more).await;
    installments.expect_first(201);

    let mut app = app.restarted(Options::default()).await;
    app.login().await;
    post(&app, "/user", &customer).await.expect_replay_of(&user);
    post(&app, "/mandate", &mandate_body)
        .await
        .expect_replay_of(&mandate);
    post(&app, "/installments", &more)
        .await
        .expect_replay_of(&installments);
}

/// Sends `body` to `path` eight times at once: exactly one creates, the others are replays of
/// its answer.
async fn race(app: &TestApp, path: &str, body: &Value) -> Raw {
    let body = body.to_string();
    let mut racing = tokio::task::JoinSet::new();
    for _ in 0..8 {
        racing.spawn(send(prepared(app, path, &body)));
    }
    let answers = racing.join_all().await;
    let (firsts, replays): (Vec<Raw>, Vec<Raw>) =
        answers.into_iter().partition(|a| a.replayed.is_none());
    assert_eq!(
        firsts.len(),
        1,
        "one creation: {:?}",
        firsts.iter().map(|a| &a.body).collect::<Vec<_>>()
    );
    let first = firsts.into_iter().next().unwrap();
    first.expect_first(201);
    for replay in &replays {
        replay.expect_replay_of(&first);
    }
    first
}

#[tokio::test(flavor = "multi_thread")]
async fn racing_equal_creations_make_one_of_each_and_replays_for_the_rest() {
    let app = app_with_customers().await;
    race(&app, "/user", &customer_body("cust-1", &rut(12_345_678))).await;
    race(
        &app,
        "/mandate",
        &subscription_body(&app, "cust-1", "GYM-1", 3),
    )
    .await;
    race(
        &app,
        "/mandate",
        &dynamic_body(&app, "cust-1", "DYN-1", &[]),
    )
    .await;
    let more = installments_body(&app, "cust-1", "DYN-1", &[("c1", 1000, 3)]);
    race(&app, "/installments", &more).await;
    race(&app, "/signature", &simple_body(&[("cust-a", 1, "FES")])).await;

    let rows = |table: &str| {
        count(
            &app,
            &format!("SELECT count(*) FROM {table} WHERE commerce_id = ?1"),
        )
    };
    // cust-a, cust-b and cust-c of the set-up, and cust-1.
    assert_eq!(rows("customers"), 4);
    assert_eq!(rows("mandates"), 2);
    assert_eq!(rows("installments"), 4);
    assert_eq!(rows("signature_processes"), 1);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_sandbox_reset_forgets_the_answers_with_what_they_answered_for() {
    let mut app = spawn_app().await;
    app.login().await;
    app.create_customer("cust-1", &rut(12_345_678)).await;
    let body = dynamic_body(&app, "cust-1", "DYN-1", &[("c1", 1000, 3)]);
    let first = post(&app, "/mandate", &body).await;
    first.expect_first(201);
    app.post("/sandbox/reset", &json!({"keepCustomers": true}))
        .await
        .expect(200, "SANDBOX_RESET_OK");
    let again = post(&app, "/mandate", &body).await;
    again.expect_first(201);
    assert_ne!(
        again.json()["payload"]["mandate"]["internalId"],
        first.json()["payload"]["mandate"]["internalId"]
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn the_openapi_document_names_the_replay_header_on_the_four_creations() {
    let app = spawn_app().await;
    let doc: Value = app
        .client
        .get(format!("{}/openapi.json", app.base))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    for (path, status) in [
        ("/user", "201"),
        ("/user", "200"),
        ("/mandate", "201"),
        ("/installments", "201"),
        ("/signature", "201"),
    ] {
        let header =
            &doc["paths"][path]["post"]["responses"][status]["headers"]["Mandato-Replayed"];
        assert!(
            header["description"].is_string(),
            "{path} {status}: {header}"
        );
    }
}
