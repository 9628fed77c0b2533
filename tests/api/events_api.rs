//! The merchant Events API: filters, keyset paging while events keep arriving, the attempt
//! log (kinds, counts, excerpts of error answers), redelivery, and isolation between commerces.

use std::time::Duration;

use mandato::config::Environment;
use serde_json::{Value, json};

use crate::helpers::*;
use crate::receiver::Answer;
use crate::webhooks::{Setup, fast_delivery, mandate_to, pay, setup};

async fn list(app: &TestApp, query: &str) -> Value {
    let reply = app.get(&format!("/events{query}")).await;
    reply.expect(200, "EVENTS_OK");
    reply.body["payload"].clone()
}

async fn event(app: &TestApp, event_id: &str) -> Value {
    let reply = app.get(&format!("/events/{event_id}")).await;
    reply.expect(200, "EVENT_OK");
    reply.body["payload"].clone()
}

fn ids(page: &Value) -> Vec<String> {
    page["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["eventId"].as_str().unwrap().to_string())
        .collect()
}

/// Polls the event until `done` holds (or panics after 10 s).
async fn wait_event(app: &TestApp, event_id: &str, done: impl Fn(&Value) -> bool) -> Value {
    for _ in 0..400 {
        let e = event(app, event_id).await;
        if done(&e) {
            return e;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    panic!(
        "event {event_id} never got there: {}",
        event(app, event_id).await
    );
}

/// Pays one installment of a mandate: one payment event.
async fn pay_one(s: &Setup, mandate: &str, id: &str, amount: i64) {
    pay(s, mandate, &[id], amount).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn pages_never_skip_or_repeat_while_new_events_arrive() {
    let s = setup(fast_delivery()).await;
    mandate_to(&s, "M-1").await;
    mandate_to(&s, "M-2").await;
    for (id, amount) in [("a", 1000), ("b", 2000), ("c", 3000)] {
        pay_one(&s, "M-1", id, amount).await;
    }
    pay_one(&s, "M-2", "a", 1000).await;
    let all = list(&s.app, "?limit=100").await;
    let before: Vec<String> = ids(&all);
    assert_eq!(before.len(), 4, "{all}");
    // Newest first: the last payment (M-2's) leads.
    assert_eq!(all["items"][0]["body"]["product"]["id"], "M-2");
    assert!(all["nextCursor"].is_null());

    let mut seen = Vec::new();
    let mut cursor: Option<String> = None;
    let mut arrivals = ["b", "c"].into_iter();
    loop {
        let query = match &cursor {
            Some(c) => format!("?limit=1&cursor={c}"),
            None => "?limit=1".to_string(),
        };
        let page = list(&s.app, &query).await;
        assert_eq!(page["items"].as_array().unwrap().len(), 1, "{page}");
        seen.extend(ids(&page));
        // A new event between pages sorts before the first page: it must not show up here.
        if let Some(id) = arrivals.next() {
            pay_one(&s, "M-2", id, if id == "b" { 2000 } else { 3000 }).await;
        }
        match page["nextCursor"].as_str() {
            Some(c) => cursor = Some(c.to_string()),
            None => break,
        }
    }
    assert_eq!(seen, before, "every event once, newest first");
    let now = ids(&list(&s.app, "?limit=100").await);
    assert_eq!(now.len(), 6);
    assert_eq!(&now[2..], &before[..], "the two new ones lead");
}

#[tokio::test(flavor = "multi_thread")]
async fn filters_select_and_bad_filters_name_their_field() {
    let s = setup(fast_delivery()).await;
    let m1 = mandate_to(&s, "M-1").await;
    let m1_id = m1["mandate"]["internalId"].as_str().unwrap().to_string();
    mandate_to(&s, "M-2").await;
    pay_one(&s, "M-1", "a", 1000).await;
    pay_one(&s, "M-2", "a", 1000).await;
    s.app
        .delete(
            "/mandate/cancel/id/M-2/userId/cust-1",
            Some(&json!({"description": "cliente se retira"})),
        )
        .await
        .expect(200, "MANDATE_CANCEL_OK");
    s.receiver.wait_for(5, Duration::from_secs(10)).await;

    let activations = list(&s.app, "?type=activation").await;
    let items = activations["items"].as_array().unwrap();
    assert_eq!(items.len(), 1, "{activations}");
    assert_eq!(items[0]["type"], "activation");
    assert_eq!(items[0]["body"]["event"], "activation");
    // Other names of the kind filter alike: a trigger scenario's, a body's.
    for alias in ["mandate.cancelled", "activation.any"] {
        let same = list(&s.app, &format!("?type={alias}")).await;
        assert_eq!(same["items"], activations["items"], "{alias}");
    }
    let payments = list(&s.app, "?type=payment").await;
    assert_eq!(
        list(&s.app, "?type=payment.paid").await["items"],
        payments["items"]
    );
    let signatures = list(&s.app, "?type=SIGNATURE_COMPLETED").await;
    assert_eq!(
        signatures["items"],
        list(&s.app, "?type=signature").await["items"]
    );

    let of_m1 = list(&s.app, &format!("?mandateInternalId={m1_id}")).await;
    let items = of_m1["items"].as_array().unwrap();
    assert_eq!(items.len(), 1, "{of_m1}");
    assert_eq!(items[0]["mandateInternalId"], m1_id.as_str());
    assert_eq!(items[0]["type"], "payment");
    assert_eq!(items[0]["sequence"], 1);
    let item = &items[0];
    for member in ["eventId", "createdAt", "status", "attempts", "url", "body"] {
        assert!(!item[member].is_null(), "{member} in {item}");
    }
    assert!(item["body"]["signature"].is_string());

    // Delivered, all of them, once the receiver answered.
    for e in ids(&list(&s.app, "").await) {
        wait_event(&s.app, &e, |v| v["status"] == "DELIVERED").await;
    }
    assert_eq!(ids(&list(&s.app, "?status=DELIVERED").await).len(), 5);
    assert!(ids(&list(&s.app, "?status=FAILED").await).is_empty());
    assert!(ids(&list(&s.app, "?mandateInternalId=man_unknown").await).is_empty());

    for (query, field) in [
        ("?type=refund", "query.type"),
        ("?status=LOST", "query.status"),
        ("?limit=0", "query.limit"),
        ("?limit=101", "query.limit"),
        ("?limit=ten", "query.limit"),
        ("?cursor=abc", "query.cursor"),
        ("?cursor=-5", "query.cursor"),
        ("?cursor=0", "query.cursor"),
        // Empty values are values, and not allowed ones.
        ("?cursor=", "query.cursor"),
        ("?type=", "query.type"),
        ("?status=", "query.status"),
        ("?mandateInternalId=", "query.mandateInternalId"),
        ("?limit=", "query.limit"),
    ] {
        let reply = s.app.get(&format!("/events{query}")).await;
        reply.expect(400, "VALIDATION_ERROR");
        assert_eq!(reply.error_fields(), [field], "{query}: {}", reply.body);
    }
    let reply = s.app.get("/events?type=refund&cursor=x&limit=1000").await;
    reply.expect(400, "VALIDATION_ERROR");
    assert_eq!(
        sorted_fields(&reply),
        ["query.cursor", "query.limit", "query.type"]
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn the_attempt_log_counts_every_attempt_with_its_kind_and_excerpt() {
    let s = setup(fast_delivery()).await;
    s.receiver.script([
        Answer::Body(503, "busy: queue full, try later".into()),
        Answer::Chunked(503, "still busy (chunked)".into()),
    ]);
    mandate_to(&s, "M-1").await;
    pay_one(&s, "M-1", "a", 1000).await;
    let first = s.receiver.wait_for(1, Duration::from_secs(10)).await[0].clone();
    let event_id = first.header("webhook-id").to_string();
    let e = wait_event(&s.app, &event_id, |v| v["status"] == "DELIVERED").await;
    let log = e["attemptLog"].as_array().unwrap();
    assert_eq!(e["attempts"], log.len(), "{e}");
    assert_eq!(log.len(), 3, "{e}");
    let kinds: Vec<&str> = log.iter().map(|a| a["kind"].as_str().unwrap()).collect();
    assert_eq!(kinds, ["INITIAL", "RETRY", "RETRY"]);
    assert_eq!(log[0]["httpStatus"], 503);
    assert_eq!(log[0]["responseExcerpt"], "busy: queue full, try later");
    assert_eq!(log[0]["outcome"], "RETRY");
    assert_eq!(log[1]["httpStatus"], 503);
    assert_eq!(log[1]["responseExcerpt"], "still busy (chunked)");
    assert_eq!(log[2]["httpStatus"], 200);
    assert_eq!(log[2]["outcome"], "DELIVERED");
    for a in log {
        assert!(a["durationMs"].as_i64().unwrap() >= 0);
        assert!(chrono::DateTime::parse_from_rfc3339(a["at"].as_str().unwrap()).is_ok());
    }
    assert!(e["nextAttemptAt"].is_null(), "nothing more is due: {e}");

    // Redelivery: 202, the same body again, logged as MANUAL; the count follows the log.
    let reply = s
        .app
        .post(&format!("/events/{event_id}/redeliver"), &json!({}))
        .await;
    reply.expect(202, "EVENT_REDELIVERY_SCHEDULED");
    assert_eq!(
        reply.body["payload"],
        json!({"eventId": event_id, "status": "PENDING"})
    );
    let again = s.receiver.wait_for(4, Duration::from_secs(10)).await[3].clone();
    assert_eq!(again.body, first.body);
    let e = wait_event(&s.app, &event_id, |v| {
        v["attemptLog"].as_array().unwrap().len() == 4 && v["status"] == "DELIVERED"
    })
    .await;
    assert_eq!(e["attempts"], 4);
    assert_eq!(e["attemptLog"][3]["kind"], "MANUAL");
    // The listing counts the same way.
    let listed = list(&s.app, "").await;
    assert_eq!(listed["items"][0]["attempts"], 4);

    s.app
        .post("/events/evt_unknown/redeliver", &json!({}))
        .await
        .expect(404, "EVENT_NOT_FOUND");
    s.app
        .get("/events/evt_unknown")
        .await
        .expect(404, "EVENT_NOT_FOUND");
}

#[tokio::test(flavor = "multi_thread")]
async fn another_commerces_event_is_404_on_all_three() {
    let mut s = setup(fast_delivery()).await;
    let m = mandate_to(&s, "M-1").await;
    pay_one(&s, "M-1", "a", 1000).await;
    let got = s.receiver.wait_for(1, Duration::from_secs(10)).await;
    let event_id = got[0].header("webhook-id").to_string();
    let mandate_id = got[0].json()["product"]["internalId"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(!m.is_null());
    s.app.act_as(OTHER_COMMERCE).await;
    s.app
        .get(&format!("/events/{event_id}"))
        .await
        .expect(404, "EVENT_NOT_FOUND");
    s.app
        .post(&format!("/events/{event_id}/redeliver"), &json!({}))
        .await
        .expect(404, "EVENT_NOT_FOUND");
    assert!(ids(&list(&s.app, "").await).is_empty());
    assert!(
        ids(&list(&s.app, &format!("?mandateInternalId={mandate_id}")).await).is_empty(),
        "another commerce's mandate matches nothing"
    );
    // Nothing was scheduled by the refused redelivery.
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(s.receiver.received().len(), 1);
}

#[tokio::test(flavor = "multi_thread")]
async fn production_serves_the_events_api_too() {
    let mut app = spawn_app_with(Options {
        environment: Environment::Production,
        ..Options::default()
    })
    .await;
    // Production has no JWE helper: the password is encrypted here, as a merchant would.
    let jwe = mandato::auth::jwe::encrypt_password(PASSWORD, &app.public_key().await).unwrap();
    let reply = app
        .post(
            "/login",
            &json!({"username": app.commerce, "password": jwe}),
        )
        .await;
    reply.expect(200, "LOGIN_OK");
    app.token = Some(reply.body["payload"]["token"].as_str().unwrap().to_string());
    let page = list(&app, "?limit=5").await;
    assert_eq!(page, json!({"items": [], "nextCursor": null}));
    app.get("/events/evt_nothing")
        .await
        .expect(404, "EVENT_NOT_FOUND");
}

#[tokio::test(flavor = "multi_thread")]
async fn an_event_without_a_webhook_url_is_history_and_cannot_be_redelivered() {
    let s = setup(fast_delivery()).await;
    let mut body = dynamic_body(&s.app, "cust-1", "M-1", &[("a", 1000, 5)]);
    remove(&mut body, "/urls");
    s.app.create_mandate(&body).await;
    pay_one(&s, "M-1", "a", 1000).await;
    let page = list(&s.app, "").await;
    let item = &page["items"][0];
    assert_eq!(item["status"], "NO_URL", "{page}");
    assert!(item["url"].is_null() && item["nextAttemptAt"].is_null());
    assert_eq!(item["attempts"], 0);
    let event_id = item["eventId"].as_str().unwrap();
    assert_eq!(ids(&list(&s.app, "?status=NO_URL").await), [event_id]);
    s.app
        .post(&format!("/events/{event_id}/redeliver"), &json!({}))
        .await
        .expect(400, "EVENT_HAS_NO_URL");
    assert_eq!(event(&s.app, event_id).await["attemptLog"], json!([]));
}

#[tokio::test(flavor = "multi_thread")]
async fn a_redelivery_asked_for_during_an_attempt_still_happens() {
    let s = setup(fast_delivery()).await;
    // The first send hangs a second: the redelivery request lands while it is in flight.
    s.receiver
        .script([Answer::Hang(Duration::from_millis(1_000))]);
    mandate_to(&s, "M-1").await;
    pay_one(&s, "M-1", "a", 1000).await;
    let first = s.receiver.wait_for(1, Duration::from_secs(10)).await[0].clone();
    let event_id = first.header("webhook-id").to_string();
    s.app
        .post(&format!("/events/{event_id}/redeliver"), &json!({}))
        .await
        .expect(202, "EVENT_REDELIVERY_SCHEDULED");
    // The in-flight attempt ends delivered; the redelivery asked for meanwhile follows it.
    let e = wait_event(&s.app, &event_id, |v| {
        v["attemptLog"].as_array().unwrap().len() == 2 && v["status"] == "DELIVERED"
    })
    .await;
    assert_eq!(e["attemptLog"][0]["kind"], "INITIAL");
    assert_eq!(e["attemptLog"][1]["kind"], "MANUAL");
    assert_eq!(s.receiver.received().len(), 2);
}
