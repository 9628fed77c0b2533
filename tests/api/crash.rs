//! At least once across crashes: the real `mandato serve` binary is killed with SIGKILL
//! before and during delivery, started again, and every event still arrives.

use std::collections::HashSet;
use std::time::Duration;

use reqwest::Method;
use serde_json::{Value, json};

use crate::cli::{headers, serve};
use crate::process::{Api, expected_events, install, kill};
use crate::receiver::{Answer, Receiver};

const CODE: &str = "CRASH-1";
const PASSWORD: &str = "crash-password";

#[tokio::test(flavor = "multi_thread")]
async fn every_event_arrives_despite_sigkill_before_and_during_delivery() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path();
    let installation = install(data, CODE, PASSWORD);
    let key = installation.api_key.clone();
    let receiver = Receiver::start(&installation.cert_pem, &installation.key_pem).await;
    // Slow answers, so that a kill lands while deliveries are in flight.
    receiver.otherwise(Answer::Hang(Duration::from_millis(200)));

    let (mut server, base) = serve(data);
    let mut api = Api::new(base, key, CODE);
    api.login(PASSWORD).await;
    api.call(
        Method::POST,
        "/user",
        Some(json!({"customer": {"userId": "u1", "identificationDocument": {"type": "RUT", "number": "12.345.678-5"},
            "personalInformation": {"firstName": "Ana", "lastName": "Pérez"}, "contacts": {"email": "ana@example.cl"}}})),
    )
    .await;
    let today = chrono::Utc::now()
        .with_timezone(&chrono_tz::America::Santiago)
        .date_naive();
    let due = (today + chrono::Duration::days(3)).to_string();
    let round = |n: usize| {
        let installments: Vec<Value> = (0..20)
            .map(|i| json!({"id": format!("i{i}"), "amount": 1000, "currencyId": "CLP", "installmentDueDate": due}))
            .collect();
        json!({"customer": {"userId": "u1"},
               "mandate": {"id": format!("M-{n}"), "type": "DYNAMIC", "name": "Crash", "charges": {"currencyId": "CLP"}},
               "installments": installments,
               "urls": {"paymentWebhook": receiver.url("/pay"), "activationWebhook": receiver.url("/act")}})
    };

    // Round 1: 20 payment events and a cancellation; killed at once, before delivery gets far.
    api.call(Method::POST, "/mandate", Some(round(1))).await;
    let ids: Vec<String> = (0..20).map(|i| format!("i{i}")).collect();
    api.call(
        Method::PUT,
        "/installments/status/change",
        Some(
            json!({"product": {"id": "M-1"}, "installments": {"ids": ids}, "action": "PAYMENT",
                    "payment": {"date": today.to_string(), "amount": 20000, "currencyId": "CLP"}}),
        ),
    )
    .await;
    kill(&mut server);

    // Round 2: restart, more events, and a kill while deliveries are in flight.
    let (mut server, base) = serve(data);
    api.base = base;
    api.call(Method::POST, "/mandate", Some(round(2))).await;
    api.call(
        Method::DELETE,
        "/mandate/cancel/id/M-2/userId/u1",
        Some(json!({"description": "crash test"})),
    )
    .await;
    receiver.wait_for(3, Duration::from_secs(30)).await;
    kill(&mut server);

    // Round 3: a final start delivers whatever is left.
    let expected = expected_events(data);
    assert_eq!(
        expected.len(),
        20 + 20 + 1,
        "20 payments, 20 annulments and a cancellation"
    );
    let before: HashSet<String> = receiver
        .received()
        .iter()
        .map(|r| r.header("webhook-id").to_string())
        .collect();
    assert!(
        before.len() < expected.len(),
        "the kills left deliveries to the next start"
    );
    let (mut server, _) = serve(data);
    let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
    loop {
        let arrived: HashSet<String> = receiver
            .received()
            .iter()
            .map(|r| r.header("webhook-id").to_string())
            .collect();
        if expected.is_subset(&arrived) {
            break;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "{} of {} events never arrived",
            expected.difference(&arrived).count(),
            expected.len()
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    kill(&mut server);
}

/// Kills the real binary in the middle of a charging run of thousands of installments; after a
/// restart every installment was charged exactly once and every event was delivered.
#[tokio::test(flavor = "multi_thread")]
async fn a_charging_run_killed_midway_charges_everyone_exactly_once() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path();
    let installation = install(data, CODE, PASSWORD);
    let key = installation.api_key.clone();
    let receiver = Receiver::start(&installation.cert_pem, &installation.key_pem).await;

    let (mut server, base) = serve(data);
    let mut api = Api::new(base, key, CODE);
    api.login(PASSWORD).await;
    api.call(
        Method::POST,
        "/user",
        Some(json!({"customer": {"userId": "u1", "identificationDocument": {"type": "RUT", "number": "12.345.678-5"},
            "personalInformation": {"firstName": "Ana", "lastName": "Pérez"}, "contacts": {"email": "ana@example.cl"}}})),
    )
    .await;
    let today = chrono::Utc::now()
        .with_timezone(&chrono_tz::America::Santiago)
        .date_naive();
    const MANDATES: usize = 30;
    const PER_MANDATE: usize = 100;
    for m in 0..MANDATES {
        let installments: Vec<Value> = (0..PER_MANDATE)
            .map(|i| json!({"id": format!("i{i}"), "amount": 1000 + i, "currencyId": "CLP", "installmentDueDate": today.to_string()}))
            .collect();
        let created = api
            .call(
                Method::POST,
                "/mandate",
                Some(json!({"customer": {"userId": "u1"},
                    "mandate": {"id": format!("M-{m}"), "type": "DYNAMIC", "name": "Carga", "charges": {"currencyId": "CLP"}},
                    "installments": installments,
                    "urls": {"paymentWebhook": receiver.url("/pay"), "activationWebhook": receiver.url("/act")}})),
            )
            .await;
        let internal = created["payload"]["mandate"]["internalId"]
            .as_str()
            .unwrap()
            .to_string();
        // Alternate approving and declining cards.
        let number = if m % 2 == 0 {
            "4111111111111111"
        } else {
            "4000000000000002"
        };
        api.call(
            Method::POST,
            &format!("/sandbox/mandates/{internal}/activate"),
            Some(json!({"paymentMethodId": 3, "card": {"number": number, "expiry": "12/30", "cvv": "123"}})),
        )
        .await;
    }
    let total = MANDATES * PER_MANDATE;

    // Start the run in the background and kill the server while it is under way.
    let run = {
        let (base, key, token) = (api.base.clone(), api.key.clone(), api.token.clone());
        tokio::spawn(async move {
            let _ = reqwest::Client::new()
                .post(format!("{base}/api/v1/sandbox/charging/run"))
                .headers(headers(CODE, &key))
                .bearer_auth(token.unwrap())
                .send()
                .await;
        })
    };
    let db = data.join("mandato.db");
    let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
    loop {
        let conn = rusqlite::Connection::open(&db).unwrap();
        let attempts: i64 = conn
            .query_row("SELECT count(*) FROM charge_attempts", [], |r| r.get(0))
            .unwrap();
        if attempts > 200 {
            break;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "the run never got going"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    kill(&mut server);
    let _ = run.await;
    let conn = rusqlite::Connection::open(&db).unwrap();
    let at_kill: i64 = conn
        .query_row("SELECT count(*) FROM charge_attempts", [], |r| r.get(0))
        .unwrap();
    assert!(
        (at_kill as usize) < total,
        "killed mid-run ({at_kill} of {total} attempted)"
    );

    // Restart: reconciliation settles what was in process; today's run is run again by hand.
    let (mut server, base) = serve(data);
    api.base = base;
    api.call(Method::POST, "/sandbox/charging/run", None).await;
    let conn = rusqlite::Connection::open(&db).unwrap();
    let charged: i64 = conn
        .query_row("SELECT count(*) FROM sim_charges", [], |r| r.get(0))
        .unwrap();
    let distinct: i64 = conn
        .query_row(
            "SELECT count(DISTINCT installment_seq) FROM charge_attempts",
            [],
            |r| r.get(0),
        )
        .unwrap();
    let open: i64 = conn
        .query_row(
            "SELECT count(*) FROM charge_attempts WHERE state = 'IN_PROCESS'",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(
        charged as usize, total,
        "the acquirer charged every installment exactly once"
    );
    assert_eq!(distinct as usize, total, "one attempt per installment");
    assert_eq!(open, 0, "nothing left in process");
    let unfinished: i64 = conn
        .query_row(
            "SELECT count(*) FROM installments WHERE state NOT IN (2, -99)",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(unfinished, 0);

    // Every event reaches the receiver (duplicates allowed).
    let expected = expected_events(data);
    assert_eq!(
        expected.len(),
        total * 2 + MANDATES,
        "one activation per mandate, IN_PROCESS and the outcome for each installment"
    );
    let deadline = tokio::time::Instant::now() + Duration::from_secs(120);
    loop {
        let arrived: HashSet<String> = receiver
            .received()
            .iter()
            .map(|r| r.header("webhook-id").to_string())
            .collect();
        let missing = expected.difference(&arrived).count();
        if missing == 0 {
            break;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "{missing} events never arrived"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    kill(&mut server);
}
