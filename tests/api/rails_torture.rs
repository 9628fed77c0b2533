//! Crash torture on the Transbank rail (CONTRACT 13): the real `mandato serve` charges cards
//! through the Oneclick stand-in (each authorization answered after 1 s, up to 64 in flight)
//! and is killed with SIGKILL at seeded random moments of its charging runs, then started
//! again on the same data directory. The stand-in finishes an authorization whose caller died,
//! as Transbank does, so a restart meets authorizations still under way that Transbank
//! "has not seen" yet. Afterwards no buy order was ever sent twice, every installment has at
//! most one approved authorization, every approved authorization is PAID here, and every PAID
//! attempt was approved there: nobody is charged twice or charged unrecorded.
//!
//! `MANDATO_TORTURE_SEED` replays a run (the seed is printed).

use std::collections::HashMap;
use std::time::Duration;

use chrono::NaiveDate;
use reqwest::Method;
use rusqlite::{Connection, OpenFlags};
use serde_json::json;

use crate::cli::mandato;
use crate::process::{Api, install, kill, serve_logged, stop};
use crate::rails::enrol_through_webpay;
use crate::transbank::{self, CHILD, KEY, MALL, VISA, WEBPAY};

const CODE: &str = "TORTURE-TBK";
const PASSWORD: &str = "torture-password";
const MANDATES: usize = 40;
const DAYS: usize = 6;
/// The acquirer call limit the server runs with: an attempt Transbank has not seen is sent
/// again only twice this long after it was recorded.
const TIMEOUT_SECS: &str = "2";

async fn business_today(api: &Api) -> NaiveDate {
    let clock = api.call(Method::GET, "/sandbox/clock", None).await;
    clock["payload"]["today"].as_str().unwrap().parse().unwrap()
}

#[tokio::test(flavor = "multi_thread")]
async fn sigkill_during_authorizations_charges_nobody_twice() {
    let seed = std::env::var("MANDATO_TORTURE_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap()
                .as_nanos() as u64
        });
    eprintln!("MANDATO_TORTURE_SEED={seed}");
    let mut rng = seed;
    let mut next = move || {
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        rng
    };

    let dir = tempfile::tempdir().unwrap();
    let data = dir.path();
    let installation = install(data, CODE, PASSWORD);
    let (standin, base) = transbank::start().await;
    *standin.latency.lock().unwrap() = Duration::from_millis(1_000);
    mandato(
        data,
        &[
            "acquirer",
            "set",
            "--commerce",
            CODE,
            "--rail",
            "cards",
            "--kind",
            "transbank",
            "--mall-code",
            MALL,
            "--child-code",
            CHILD,
            "--webpay-code",
            WEBPAY,
            "--base-url",
            &base,
            "--secret-stdin",
        ],
        Some(KEY),
    );
    let log = data.join("serve.log");
    let env = [("MANDATO_ACQUIRER_TIMEOUT_SECS", TIMEOUT_SECS)];
    let (mut server, mut url) = serve_logged(data, &env, &log);
    let mut api = Api::new(url.clone(), installation.api_key.clone(), CODE);
    api.login(PASSWORD).await;

    // Each customer enrols their own card on Webpay; each mandate has an installment due on
    // each of the next DAYS days.
    let today = business_today(&api).await;
    let browser = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap();
    for m in 0..MANDATES {
        let user = format!("u{m}");
        api.call(
            Method::POST,
            "/user",
            Some(json!({"customer": {"userId": user,
                "identificationDocument": {"type": "RUT", "number": crate::helpers::rut(30_000_000 + m as u32)},
                "personalInformation": {"firstName": "Ana", "lastName": "Pérez"},
                "contacts": {"email": "ana@example.cl"}}})),
        )
        .await;
        let installments: Vec<_> = (1..=DAYS)
            .map(|d| {
                json!({"id": format!("d{d}"), "amount": 1000 + m, "currencyId": "CLP",
                "installmentDueDate": (today + chrono::Duration::days(d as i64)).to_string()})
            })
            .collect();
        let created = api
            .call(
                Method::POST,
                "/mandate",
                Some(json!({"customer": {"userId": user},
                    "mandate": {"id": format!("M{m}"), "type": "DYNAMIC", "name": "Tortura",
                                "charges": {"currencyId": "CLP"}},
                    "installments": installments})),
            )
            .await;
        let link = created["payload"]["mandate"]["magicLink"].as_str().unwrap();
        let back = enrol_through_webpay(&browser, &url, link, Some(VISA)).await;
        assert_eq!(back.status(), 303, "M{m} enrolled");
    }

    // Each day's run is cut at a random moment, while its authorizations are in flight.
    let mut cut_with_attempts_open = 0;
    for day in 1..=DAYS {
        let advancing = {
            let mut advancer = Api::new(url.clone(), installation.api_key.clone(), CODE);
            advancer.token = api.token.clone();
            tokio::spawn(async move {
                advancer
                    .try_call(
                        Method::POST,
                        "/sandbox/clock",
                        Some(&json!({"advanceDays": 1})),
                    )
                    .await
            })
        };
        tokio::time::sleep(Duration::from_millis(100 + next() % 1_200)).await;
        kill(&mut server.0);
        let _ = advancing.await;
        let open = open_attempts(data);
        if open > 0 {
            cut_with_attempts_open += 1;
        }
        eprintln!("day {day}: killed with {open} attempt(s) IN_PROCESS");
        (server, url) = serve_logged(data, &env, &log);
        api = Api::new(url.clone(), installation.api_key.clone(), CODE);
        api.login(PASSWORD).await;
    }
    // Past twice the call limit, a restart settles whatever a kill left, and a last run
    // charges what is still due.
    tokio::time::sleep(Duration::from_millis(4_500)).await;
    stop(&mut server.0);
    (server, url) = serve_logged(data, &env, &log);
    api = Api::new(url.clone(), installation.api_key.clone(), CODE);
    api.login(PASSWORD).await;
    api.call(
        Method::POST,
        "/sandbox/clock",
        Some(json!({"advanceDays": 1})),
    )
    .await;
    stop(&mut server.0);
    eprintln!("{cut_with_attempts_open} of {DAYS} kills landed with attempts in process");

    // Checks, on the database and at the stand-in.
    let conn =
        Connection::open_with_flags(data.join("mandato.db"), OpenFlags::SQLITE_OPEN_READ_ONLY)
            .unwrap();
    let mut attempts = conn
        .prepare("SELECT a.idempotency_key, a.state, a.installment_seq FROM charge_attempts a")
        .unwrap();
    let rows: Vec<(String, String, i64)> = attempts
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    let authorized = standin.authorizations.lock().unwrap().clone();
    let mut per_installment: HashMap<i64, usize> = HashMap::new();
    for (key, state, installment) in &rows {
        let (parent, _) = mandato::rails::transbank::buy_orders(key);
        let approved = authorized.contains_key(&parent);
        if approved {
            *per_installment.entry(*installment).or_default() += 1;
        }
        match state.as_str() {
            "PAID" => assert!(approved, "{key} PAID without an authorization"),
            "IN_PROCESS" => {}
            other => assert!(!approved, "{key} {other} although Transbank authorized it"),
        }
    }
    let sends = standin.sends.lock().unwrap().clone();
    assert!(
        sends.values().all(|n| *n == 1),
        "a buy order sent twice: {:?}",
        sends.iter().filter(|(_, n)| **n > 1).collect::<Vec<_>>()
    );
    assert!(
        per_installment.values().all(|n| *n <= 1),
        "an installment authorized twice: {per_installment:?}"
    );
    let ours: std::collections::HashSet<String> = rows
        .iter()
        .map(|(k, _, _)| mandato::rails::transbank::buy_orders(k).0)
        .collect();
    assert!(
        authorized.keys().all(|b| ours.contains(b)),
        "an authorization for no attempt of ours"
    );
    let paid: i64 = conn
        .query_row(
            "SELECT count(*) FROM charge_attempts WHERE state = 'PAID'",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(
        paid as usize,
        authorized.len(),
        "every authorization is PAID here"
    );
    assert_eq!(
        paid as usize,
        MANDATES * DAYS,
        "every installment charged once in the end"
    );
}

fn open_attempts(data: &std::path::Path) -> i64 {
    let conn =
        Connection::open_with_flags(data.join("mandato.db"), OpenFlags::SQLITE_OPEN_READ_ONLY)
            .unwrap();
    conn.query_row(
        "SELECT count(*) FROM charge_attempts WHERE state = 'IN_PROCESS'",
        [],
        |r| r.get(0),
    )
    .unwrap()
}
