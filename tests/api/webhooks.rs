//! Webhook delivery to a real HTTPS receiver: both signatures verified by independent code,
//! the retry schedule, FAILED, redelivery, secret rotation, timeouts, and http:// refusal.

use std::time::Duration;

use mandato::notify::delivery::DeliveryConfig;
use serde_json::{Value, json};

use crate::helpers::*;
use crate::receiver::{Answer, Receiver, body_signature_valid, standard_signature_valid};

/// A schedule in milliseconds, so every step of it runs within a test.
pub fn fast_delivery() -> DeliveryConfig {
    DeliveryConfig {
        retry_schedule: [100, 150, 200, 250, 300, 350, 400]
            .map(Duration::from_millis)
            .to_vec(),
        timeout: Duration::from_millis(1_500),
        jitter: 0.0,
        poll_interval: Duration::from_millis(50),
        ..DeliveryConfig::default()
    }
}

pub struct Setup {
    pub app: TestApp,
    pub receiver: Receiver,
    pub secret: String,
}

/// An app with a fast schedule, a receiver whose certificate comes from the app's dev CA, and
/// a logged-in commerce with a customer `cust-1`.
pub async fn setup(delivery: DeliveryConfig) -> Setup {
    let mut app = spawn_app_with(Options {
        delivery,
        ..Options::default()
    })
    .await;
    let store = &app.running.state.store();
    let ca = mandato::cli::dev_ca(store).expect("dev CA");
    let (cert, key) = ca.issue_localhost().expect("localhost certificate");
    let receiver = Receiver::start(&cert, key.expose()).await;
    let secret = store
        .read(|c| Ok(mandato::store::commerces::by_code(c, COMMERCE)?.unwrap()))
        .unwrap()
        .webhook_secret
        .expose()
        .clone();
    app.login().await;
    app.create_customer("cust-1", "12.345.678-5").await;
    Setup {
        app,
        receiver,
        secret,
    }
}

/// A DYNAMIC mandate whose webhooks go to the receiver, with installments a, b, c.
pub async fn mandate_to(s: &Setup, id: &str) -> Value {
    let mut body = dynamic_body(
        &s.app,
        "cust-1",
        id,
        &[("a", 1000, 5), ("b", 2000, 10), ("c", 3000, 15)],
    );
    body["urls"] = json!({
        "activationWebhook": s.receiver.url("/hooks/activation"),
        "paymentWebhook": s.receiver.url("/hooks/payment"),
    });
    s.app.create_mandate(&body).await
}

pub async fn pay(s: &Setup, mandate: &str, ids: &[&str], amount: i64) {
    s.app
        .put(
            "/installments/status/change",
            &json!({"product": {"id": mandate}, "installments": {"ids": ids}, "action": "PAYMENT",
                    "payment": {"date": s.app.date_in(0), "amount": amount, "currencyId": "CLP"}}),
        )
        .await
        .expect(200, "INSTALLMENTS_STATUS_CHANGE_OK");
}

async fn notification(app: &TestApp, event_id: &str) -> Value {
    let reply = app.get(&format!("/sandbox/notifications/{event_id}")).await;
    reply.expect(200, "SANDBOX_NOTIFICATION_OK");
    reply.body["payload"].clone()
}

/// Polls the event until its delivery state is `state`.
/// The notification once `count` attempts are logged.
async fn wait_attempts(app: &TestApp, event_id: &str, count: usize) -> Value {
    for _ in 0..200 {
        let n = notification(app, event_id).await;
        if n["attempts"].as_array().is_some_and(|a| a.len() >= count) {
            return n;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    panic!(
        "event {event_id} never had {count} attempts: {}",
        notification(app, event_id).await
    );
}

async fn wait_state(app: &TestApp, event_id: &str, state: &str) -> Value {
    for _ in 0..200 {
        let n = notification(app, event_id).await;
        if n["event"]["deliveryState"] == state {
            return n;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    panic!(
        "event {event_id} never became {state}: {}",
        notification(app, event_id).await
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn events_arrive_signed_and_verifiable_by_independent_code() {
    let s = setup(fast_delivery()).await;
    mandate_to(&s, "M-1").await;
    pay(&s, "M-1", &["a", "b"], 3000).await;
    s.app
        .delete(
            "/mandate/cancel/id/M-1/userId/cust-1",
            Some(&json!({"description": "cliente se retira"})),
        )
        .await
        .expect(200, "MANDATE_CANCEL_OK");
    // a and b PAID (2), c ANNULLED (1), the mandate CANCELLED (1).
    let got = s.receiver.wait_for(4, Duration::from_secs(10)).await;
    assert_eq!(got.len(), 4);
    let mut sequences = Vec::new();
    for r in &got {
        assert!(
            standard_signature_valid(r, &s.secret),
            "webhook-signature: {:?}",
            r.headers
        );
        assert!(
            body_signature_valid(r, &s.secret),
            "body signature: {}",
            r.body
        );
        let body = r.json();
        assert_eq!(r.header("webhook-id"), body["eventId"].as_str().unwrap());
        assert_eq!(r.header("content-type"), "application/json");
        let ts: i64 = r.header("webhook-timestamp").parse().unwrap();
        assert!((chrono::Utc::now().timestamp() - ts).abs() < 60);
        sequences.push(body["sequence"].as_i64().unwrap());
    }
    sequences.sort();
    assert_eq!(sequences, [1, 2, 3, 4]);
    let payments: Vec<Value> = got
        .iter()
        .map(|r| r.json())
        .filter(|b| b["event"] == "payment")
        .collect();
    assert_eq!(payments.len(), 3);
    let activation = got
        .iter()
        .map(|r| r.json())
        .find(|b| b["event"] == "activation")
        .unwrap();
    assert_eq!(
        activation["product"]["state"],
        json!({"id": 3, "name": "CANCELLED"})
    );
    assert!(got.iter().all(|r| !r.body.is_empty()));
}

#[tokio::test(flavor = "multi_thread")]
async fn every_retry_step_then_failed_with_the_same_body_and_id() {
    let s = setup(fast_delivery()).await;
    s.receiver.otherwise(Answer::Status(500));
    mandate_to(&s, "M-1").await;
    pay(&s, "M-1", &["a"], 1000).await;
    let got = s.receiver.wait_for(8, Duration::from_secs(10)).await;
    let event_id = got[0].header("webhook-id").to_string();
    let n = wait_state(&s.app, &event_id, "FAILED").await;
    tokio::time::sleep(Duration::from_millis(600)).await;
    let got = s.receiver.received();
    assert_eq!(
        got.len(),
        8,
        "the first attempt and seven retries, then nothing"
    );
    assert!(
        got.iter()
            .all(|r| r.body == got[0].body && r.header("webhook-id") == event_id)
    );
    // The gaps follow the schedule (100, 150, ... 400 ms), give or take scheduling noise.
    for (i, pair) in got.windows(2).enumerate() {
        let gap = pair[1].at - pair[0].at;
        let step = Duration::from_millis(100 + 50 * i as u64);
        assert!(
            gap >= step,
            "retry {} came after {gap:?}, before its {step:?}",
            i + 1
        );
    }
    let kinds: Vec<&str> = n["attempts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["kind"].as_str().unwrap())
        .collect();
    assert_eq!(
        kinds,
        [
            "FIRST", "RETRY", "RETRY", "RETRY", "RETRY", "RETRY", "RETRY", "RETRY"
        ]
    );
    assert!(
        n["attempts"]
            .as_array()
            .unwrap()
            .iter()
            .all(|a| a["statusCode"] == 500)
    );
    assert_eq!(n["attempts"][7]["outcome"], "FAILED");
    assert_eq!(n["event"]["attempts"], 8);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_delivered_event_can_be_redelivered() {
    let s = setup(fast_delivery()).await;
    mandate_to(&s, "M-1").await;
    pay(&s, "M-1", &["a"], 1000).await;
    let first = s.receiver.wait_for(1, Duration::from_secs(10)).await[0].clone();
    let event_id = first.header("webhook-id").to_string();
    wait_state(&s.app, &event_id, "DELIVERED").await;
    let reply = s
        .app
        .post(
            &format!("/sandbox/notifications/{event_id}/redeliver"),
            &json!({}),
        )
        .await;
    reply.expect(200, "SANDBOX_REDELIVER_OK");
    assert_eq!(
        reply.body["payload"],
        json!({"eventId": event_id, "scheduled": true})
    );
    let again = s.receiver.wait_for(2, Duration::from_secs(10)).await[1].clone();
    assert_eq!(
        again.body, first.body,
        "the same body, so the same body signature"
    );
    assert_eq!(again.header("webhook-id"), event_id);
    assert!(standard_signature_valid(&again, &s.secret));
    let n = wait_state(&s.app, &event_id, "DELIVERED").await;
    let kinds: Vec<&str> = n["attempts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["kind"].as_str().unwrap())
        .collect();
    assert_eq!(kinds, ["FIRST", "MANUAL"]);
    s.app
        .post("/sandbox/notifications/evt_unknown/redeliver", &json!({}))
        .await
        .expect(404, "EVENT_NOT_FOUND");
}

#[tokio::test(flavor = "multi_thread")]
async fn during_a_rotation_both_secrets_sign() {
    let s = setup(fast_delivery()).await;
    let new_secret = mandato::auth::api_key::generate_webhook_secret();
    let until = mandato::clock::timestamp(chrono::Utc::now() + chrono::Duration::hours(1));
    s.app
        .running
        .state
        .store()
        .write(|tx| {
            Ok(mandato::store::deliveries::rotate_secret(
                tx,
                COMMERCE,
                &new_secret,
                &until,
            )?)
        })
        .unwrap();
    mandate_to(&s, "M-1").await;
    pay(&s, "M-1", &["a"], 1000).await;
    let got = s.receiver.wait_for(1, Duration::from_secs(10)).await;
    let r = &got[0];
    assert_eq!(r.header("webhook-signature").split(' ').count(), 2);
    assert!(
        standard_signature_valid(r, &s.secret),
        "the old secret still verifies"
    );
    assert!(
        standard_signature_valid(r, new_secret.expose()),
        "the new secret verifies"
    );
    assert!(
        body_signature_valid(r, new_secret.expose()),
        "the body is signed with the newest secret"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn answers_410_429_and_timeouts() {
    let s = setup(fast_delivery()).await;
    s.receiver.script([
        Answer::Status(410),
        Answer::RetryAfter(429, 1),
        Answer::Hang(Duration::from_secs(3)),
        Answer::Status(200),
    ]);
    mandate_to(&s, "M-1").await;
    pay(&s, "M-1", &["a"], 1000).await;
    let gone = s.receiver.wait_for(1, Duration::from_secs(10)).await[0]
        .header("webhook-id")
        .to_string();
    let n = wait_state(&s.app, &gone, "FAILED").await;
    assert_eq!(
        n["attempts"].as_array().unwrap().len(),
        1,
        "410 asks for no more attempts"
    );

    pay(&s, "M-1", &["b"], 2000).await;
    let got = s.receiver.wait_for(4, Duration::from_secs(15)).await;
    let event = got[1].header("webhook-id").to_string();
    assert!(got[2..].iter().all(|r| r.header("webhook-id") == event));
    assert!(
        got[2].at - got[1].at >= Duration::from_secs(1),
        "Retry-After: 1 was honoured"
    );
    let n = wait_state(&s.app, &event, "DELIVERED").await;
    let attempts = n["attempts"].as_array().unwrap();
    assert_eq!(attempts[0]["statusCode"], 429);
    assert!(attempts[1]["statusCode"].is_null());
    assert!(
        attempts[1]["error"]
            .as_str()
            .unwrap()
            .starts_with("timeout"),
        "{}",
        attempts[1]
    );
    assert_eq!(attempts[2]["statusCode"], 200);
}

#[tokio::test(flavor = "multi_thread")]
async fn http_urls_are_never_contacted() {
    let s = setup(fast_delivery()).await;
    // The API refuses http:// webhook URLs...
    let mut body = dynamic_body(&s.app, "cust-1", "M-http", &[("a", 1000, 5)]);
    body["urls"]["paymentWebhook"] = json!("http://127.0.0.1:9/hooks");
    s.app
        .post("/mandate", &body)
        .await
        .expect(400, "VALIDATION_ERROR");
    // ...and the worker refuses one that got into the outbox anyway, without connecting.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let port = listener.local_addr().unwrap().port();
    let payload = mandate_to(&s, "M-1").await;
    let internal = payload["mandate"]["internalId"].as_str().unwrap();
    s.app
        .running
        .state
        .store()
        .write(|db| {
            db.execute(
                "UPDATE mandates SET url_payment_webhook = ?1 WHERE id = ?2",
                &[
                    format!("http://127.0.0.1:{port}/hooks").as_str().into(),
                    internal.into(),
                ],
            )?;
            Ok(())
        })
        .unwrap();
    pay(&s, "M-1", &["a"], 1000).await;
    let event_id = s.app.events_of(internal).last().unwrap()["eventId"]
        .as_str()
        .unwrap()
        .to_string();
    let n = wait_state(&s.app, &event_id, "FAILED").await;
    assert!(
        n["attempts"][0]["error"]
            .as_str()
            .unwrap()
            .contains("https")
    );
    assert!(
        listener.accept().is_err(),
        "nothing connected to the http:// address"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn sandbox_faults_duplicate_and_delay_deliveries() {
    let s = setup(fast_delivery()).await;
    let reply = s.app.get("/sandbox/notifications/faults").await;
    reply.expect(200, "SANDBOX_FAULTS_OK");
    assert_eq!(
        reply.body["payload"],
        json!({"duplicateEvery": 0, "reorder": false, "delaySeconds": 0})
    );
    s.app
        .put(
            "/sandbox/notifications/faults",
            &json!({"duplicateEvery": 1, "delaySeconds": 1}),
        )
        .await
        .expect(200, "SANDBOX_FAULTS_OK");
    mandate_to(&s, "M-1").await;
    let paid_at = std::time::Instant::now();
    pay(&s, "M-1", &["a"], 1000).await;
    let got = s.receiver.wait_for(2, Duration::from_secs(10)).await;
    assert!(
        got[0].at - paid_at >= Duration::from_millis(900),
        "held for delaySeconds"
    );
    assert_eq!(got[0].body, got[1].body, "delivered twice, identically");
    assert_eq!(got[0].header("webhook-id"), got[1].header("webhook-id"));
    let id = got[0].header("webhook-id");
    wait_state(&s.app, id, "DELIVERED").await;
    // The injected copy is logged by the writer's next batch, which may follow the first's.
    let n = wait_attempts(&s.app, id, 2).await;
    let kinds: Vec<&str> = n["attempts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["kind"].as_str().unwrap())
        .collect();
    assert_eq!(kinds, ["FIRST", "INJECTED"]);
    // Off again.
    s.app
        .put(
            "/sandbox/notifications/faults",
            &json!({"duplicateEvery": 0}),
        )
        .await
        .expect(200, "SANDBOX_FAULTS_OK");
    s.app
        .put(
            "/sandbox/notifications/faults",
            &json!({"delaySeconds": "soon"}),
        )
        .await
        .expect(400, "VALIDATION_ERROR");
}
