//! The staff Notifications screen's API: each event names its mandate (the merchant's id), the
//! customer, the state it announces and the latest HTTP status; the detail shows the headers
//! each attempt sent; a pasted secret is checked against both signatures.

use std::time::Duration;

use base64::Engine;
use mandato::notify::delivery::DeliveryConfig;
use serde_json::{Value, json};

use crate::receiver::Answer;
use crate::staff_ui_api::{Desk, owner};
use crate::webhooks::{fast_delivery, mandate_to, pay, setup};

/// The staff listing until `ready` holds for the event of `event_kind` announcing `state`.
async fn listed(desk: &Desk<'_>, ready: impl Fn(&Value) -> bool) -> Vec<Value> {
    for _ in 0..200 {
        let reply = desk.get("/notifications").await;
        reply.expect(200, "EVENTS_OK");
        let items = reply.body["payload"]["items"].as_array().unwrap().clone();
        if !items.is_empty() && items.iter().all(&ready) {
            return items;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    panic!(
        "the events never got there: {}",
        desk.get("/notifications").await.body
    );
}

fn a_foreign_secret() -> String {
    format!(
        "whsec_{}",
        base64::engine::general_purpose::STANDARD.encode([7u8; 32])
    )
}

#[tokio::test(flavor = "multi_thread")]
async fn the_list_names_mandate_customer_state_and_status_and_the_detail_the_sent_headers() {
    let s = setup(fast_delivery()).await;
    let mandate = mandate_to(&s, "M-1").await;
    pay(&s, "M-1", &["a"], 1000).await;
    let received = s.receiver.wait_for(1, Duration::from_secs(10)).await;
    let desk = owner(&s.app).await;
    let items = listed(&desk, |e| e["deliveryState"] == "DELIVERED").await;
    assert_eq!(items.len(), 1);
    let event = &items[0];
    assert_eq!(event["mandateId"], "M-1");
    assert_eq!(event["mandateInternalId"], mandate["mandate"]["internalId"]);
    assert_eq!(event["customerName"], "Ana Pérez Soto");
    assert_eq!(event["kind"], "payment");
    assert_eq!(event["announcedState"], "PAID");
    assert_eq!(event["rejectionCode"], Value::Null);
    assert_eq!(event["lastStatusCode"], 200);
    assert_eq!(event["lastError"], Value::Null);

    let event_id = event["eventId"].as_str().unwrap();
    let reply = desk.get(&format!("/notifications/{event_id}")).await;
    reply.expect(200, "EVENT_OK");
    let headers: Vec<(String, String)> = reply.body["payload"]["attempts"][0]["headers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| {
            (
                h["name"].as_str().unwrap().to_string(),
                h["value"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    let got = &received[0];
    let expected: Vec<(String, String)> = [
        "content-type",
        "webhook-id",
        "webhook-timestamp",
        "webhook-signature",
    ]
    .iter()
    .map(|name| (name.to_string(), got.header(name).to_string()))
    .collect();
    assert_eq!(headers, expected, "the headers the receiver got");
    assert!(
        !reply.body.to_string().contains(&s.secret),
        "the secret never shows"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_retried_event_shows_its_last_status_and_next_attempt() {
    let delivery = DeliveryConfig {
        retry_schedule: vec![Duration::from_secs(3600); 7],
        ..fast_delivery()
    };
    let s = setup(delivery).await;
    s.receiver.otherwise(Answer::Status(503));
    mandate_to(&s, "M-2").await;
    pay(&s, "M-2", &["b"], 2000).await;
    let desk = owner(&s.app).await;
    let items = listed(&desk, |e| e["lastStatusCode"] == 503).await;
    let event = &items[0];
    assert_eq!(event["deliveryState"], "PENDING");
    assert_eq!(event["attempts"], 1);
    let next = chrono::DateTime::parse_from_rfc3339(event["nextAttemptAt"].as_str().unwrap())
        .expect("an RFC 3339 time");
    let wait = next.with_timezone(&chrono::Utc) - s.app.clock_now();
    assert!(
        wait > chrono::Duration::minutes(55),
        "the next attempt is an hour away: {wait}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_pasted_secret_is_checked_against_both_signatures() {
    let s = setup(fast_delivery()).await;
    mandate_to(&s, "M-3").await;
    pay(&s, "M-3", &["a", "b"], 3000).await;
    s.receiver.wait_for(2, Duration::from_secs(10)).await;
    let desk = owner(&s.app).await;
    let items = listed(&desk, |e| e["deliveryState"] == "DELIVERED").await;
    let event_id = items[0]["eventId"].as_str().unwrap();
    let verify = |secret: Value| {
        let desk = &desk;
        async move {
            desk.post(
                &format!("/notifications/{event_id}/verify"),
                json!({ "secret": secret }),
            )
            .await
        }
    };

    let right = verify(json!(s.secret)).await;
    right.expect(200, "SIGNATURES_CHECKED");
    let checks = &right.body["payload"];
    assert_eq!(checks["body"]["valid"], true);
    assert_eq!(checks["body"]["sent"].as_str().unwrap().len(), 64);
    let headers = checks["headers"].as_array().unwrap();
    assert_eq!(headers.len(), 1, "one attempt sent");
    assert_eq!(headers[0]["attempt"], 1);
    assert_eq!(headers[0]["valid"], true);
    assert!(!right.body.to_string().contains(&s.secret));

    let wrong = verify(json!(a_foreign_secret())).await;
    wrong.expect(200, "SIGNATURES_CHECKED");
    assert_eq!(wrong.body["payload"]["body"]["valid"], false);
    assert_eq!(wrong.body["payload"]["headers"][0]["valid"], false);

    for bad in [json!("not a secret"), json!("whsec_%%%"), json!("")] {
        let reply = verify(bad.clone()).await;
        reply.expect(400, "VALIDATION_ERROR");
        assert_eq!(reply.error_fields(), ["secret"], "{bad}");
    }
    let missing = desk
        .post(&format!("/notifications/{event_id}/verify"), json!({}))
        .await;
    missing.expect(400, "VALIDATION_ERROR");
    assert_eq!(missing.error_fields(), ["secret"]);
    desk.post(
        "/notifications/evt_unknown/verify",
        json!({ "secret": s.secret }),
    )
    .await
    .expect(404, "EVENT_NOT_FOUND");
}
