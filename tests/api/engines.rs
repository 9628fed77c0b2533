//! Several `mandato serve` processes on one PostgreSQL database, as an installation that
//! outgrew one machine runs them: each engine has its own port and data directory, and the
//! database is all they share. These tests run on PostgreSQL whatever `MANDATO_TEST_BACKEND`
//! says, and check the database itself with a client of their own:
//! - engines charging the same business date at once charge every installment exactly once;
//! - an engine killed while it delivers leaves its events to the others once its lease ends,
//!   and no event is ever in flight from two engines at once;
//! - a correlationId is used once across all engines, and staff sessions, API keys and the
//!   sandbox clock are the installation's, not one engine's.

use std::collections::{HashMap, HashSet};
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use reqwest::Method;
use serde_json::{Value, json};

use crate::cli::headers;
use crate::postgres::fresh_database;
use crate::process::{Api, Server, kill, serve_logged, stop};

const CODE: &str = "ENGINES-1";
const PASSWORD: &str = "engines-password";
/// The delivery lease the engines run with: the shortest `serve` accepts, so that a killed
/// engine's events are taken over within the test's time.
const LEASE_SECS: u64 = 20;

/// One database, the CLI's set-up of it, and the engines started on it.
struct Installation {
    url: String,
    dir: tempfile::TempDir,
    api_key: String,
    cert_pem: String,
    key_pem: String,
    engines: Vec<Engine>,
}

struct Engine {
    server: Server,
    base: String,
}

impl Installation {
    /// A fresh database with a commerce, an API key and a development certificate, all made
    /// with the CLI.
    async fn new() -> Installation {
        let url = tokio::task::spawn_blocking(fresh_database).await.unwrap();
        let dir = tempfile::tempdir().unwrap();
        let cli_dir = dir.path().join("cli");
        let added = crate::postgres::ok(
            &cli_dir,
            &url,
            &[
                "commerce",
                "add",
                "--code",
                CODE,
                "--name",
                "Comercio Motores",
                "--password-stdin",
            ],
            Some(&format!("{PASSWORD}\n")),
        );
        assert!(added["webhookSecret"].is_string(), "{added}");
        let api_key = crate::postgres::ok(&cli_dir, &url, &["apikey", "create"], None)["apiKey"]
            .as_str()
            .unwrap()
            .to_string();
        let files = crate::postgres::ok(
            &cli_dir,
            &url,
            &["dev-cert", "--out", cli_dir.join("tls").to_str().unwrap()],
            None,
        );
        Installation {
            cert_pem: std::fs::read_to_string(files["certificate"].as_str().unwrap()).unwrap(),
            key_pem: std::fs::read_to_string(files["key"].as_str().unwrap()).unwrap(),
            url,
            dir,
            api_key,
            engines: Vec::new(),
        }
    }

    /// Starts `count` more engines on the database, each with its own data directory and port.
    fn start_engines(&mut self, count: usize) {
        for _ in 0..count {
            let data = self
                .dir
                .path()
                .join(format!("engine-{}", self.engines.len()));
            std::fs::create_dir_all(&data).unwrap();
            let lease = LEASE_SECS.to_string();
            let (server, base) = serve_logged(
                &data,
                &[
                    ("MANDATO_DATABASE_URL", &self.url),
                    ("MANDATO_DELIVERY_LEASE_SECS", &lease),
                ],
                &data.join("serve.log"),
            );
            self.engines.push(Engine { server, base });
        }
    }

    /// The merchant API through engine `i`, signed in.
    async fn api(&self, i: usize) -> Api {
        let mut api = Api::new(self.engines[i].base.clone(), self.api_key.clone(), CODE);
        api.login(PASSWORD).await;
        api
    }

    /// A client of the test's own on the database.
    async fn sql<T: Send + 'static>(
        &self,
        f: impl FnOnce(&mut postgres::Client) -> T + Send + 'static,
    ) -> T {
        let url = self.url.clone();
        tokio::task::spawn_blocking(move || {
            let mut client = postgres::Client::connect(&url, postgres::NoTls).unwrap();
            f(&mut client)
        })
        .await
        .unwrap()
    }

    async fn count(&self, sql: &'static str) -> i64 {
        self.sql(move |c| c.query_one(sql, &[]).unwrap().get(0))
            .await
    }

    /// Ends every engine still running with SIGTERM; each must stop cleanly.
    fn stop_all(&mut self) {
        for engine in &mut self.engines {
            if let Ok(None) = engine.server.0.try_wait() {
                stop(&mut engine.server.0);
            }
        }
    }
}

fn customer() -> Value {
    json!({"customer": {"userId": "u1",
        "identificationDocument": {"type": "RUT", "number": "12.345.678-5"},
        "personalInformation": {"firstName": "Ana", "lastName": "Pérez"},
        "contacts": {"email": "ana@example.cl"}}})
}

/// A DYNAMIC mandate of `count` installments, all due on `due`.
fn mandate(id: &str, count: usize, due: &str, webhook: Option<&str>) -> Value {
    let installments: Vec<Value> = (0..count)
        .map(|i| json!({"id": format!("i{i}"), "amount": 1000 + i, "currencyId": "CLP", "installmentDueDate": due}))
        .collect();
    let mut body = json!({"customer": {"userId": "u1"},
        "mandate": {"id": id, "type": "DYNAMIC", "name": "Plan", "charges": {"currencyId": "CLP"}},
        "installments": installments});
    if let Some(url) = webhook {
        body["urls"] = json!({"paymentWebhook": url, "activationWebhook": url});
    }
    body
}

/// Runs `request` through every engine at the same moment (a task each); the answers in the
/// engines' order.
async fn on_every_engine<T, F, Fut>(apis: &[Api], request: F) -> Vec<T>
where
    T: Send + 'static,
    F: Fn(Api) -> Fut,
    Fut: std::future::Future<Output = T> + Send + 'static,
{
    let tasks: Vec<_> = apis
        .iter()
        .map(|api| tokio::spawn(request(api.clone())))
        .collect();
    let mut answers = Vec::new();
    for task in tasks {
        answers.push(task.await.expect("the request's task ends"));
    }
    answers
}

async fn business_today(api: &Api) -> String {
    let clock = api.call(Method::GET, "/sandbox/clock", None).await;
    clock["payload"]["today"].as_str().unwrap().to_string()
}

/// Engines charging one business date at the same moment: every due installment is charged
/// exactly once, whichever engine reached it.
async fn engines_charge_one_date_together(engines: usize) {
    const MANDATES: usize = 30;
    const PER_MANDATE: usize = 10;
    /// Every fifth mandate's card is declined (a soft decline, retried on a later date).
    const DECLINED: usize = MANDATES / 5;
    let total = (MANDATES * PER_MANDATE) as i64;
    let rejected = (DECLINED * PER_MANDATE) as i64;
    let paid = total - rejected;
    let mut installation = Installation::new().await;
    installation.start_engines(engines);
    let mut apis = Vec::new();
    for i in 0..engines {
        apis.push(installation.api(i).await);
    }
    let first = &apis[0];
    first.call(Method::POST, "/user", Some(customer())).await;
    let today = business_today(first).await;
    for m in 0..MANDATES {
        // Mandates made and activated through every engine in turn.
        let api = &apis[m % engines];
        let created = api
            .call(
                Method::POST,
                "/mandate",
                Some(mandate(&format!("M-{m}"), PER_MANDATE, &today, None)),
            )
            .await;
        let internal = created["payload"]["mandate"]["internalId"]
            .as_str()
            .unwrap()
            .to_string();
        let card = if m % 5 == 4 {
            "4000000000000002"
        } else {
            "4111111111111111"
        };
        api.call(
            Method::POST,
            &format!("/sandbox/mandates/{internal}/activate"),
            Some(json!({"paymentMethodId": 3,
                "card": {"number": card, "expiry": "12/30", "cvv": "123"}})),
        )
        .await;
    }
    assert_eq!(
        installation
            .count("SELECT count(*) FROM charge_attempts")
            .await,
        0,
        "nothing is charged before the runs"
    );

    // Every engine runs today's charging at the same moment: each run starts before any ends.
    let runs = on_every_engine(&apis, |api| async move {
        let started = tokio::time::Instant::now();
        let run = api.call(Method::POST, "/sandbox/charging/run", None).await;
        (started, run, tokio::time::Instant::now())
    })
    .await;
    let last_start = runs.iter().map(|(started, _, _)| *started).max().unwrap();
    let first_end = runs.iter().map(|(_, _, ended)| *ended).min().unwrap();
    assert!(last_start < first_end, "the runs overlapped");
    let attempted: Vec<i64> = runs
        .iter()
        .map(|(_, run, _)| {
            assert_eq!(run["payload"]["date"], today.as_str(), "{run}");
            run["payload"]["attempted"].as_i64().unwrap()
        })
        .collect();
    assert_eq!(
        attempted.iter().sum::<i64>(),
        total,
        "the runs together attempted each installment once: {attempted:?}"
    );

    let checked_date = today.clone();
    let (attempts, distinct, on_date, twice) = installation
        .sql(move |c| {
            let row = c
                .query_one(
                    "SELECT count(*), count(DISTINCT installment_seq),
                            count(*) FILTER (WHERE business_date = $1)
                     FROM charge_attempts",
                    &[&checked_date],
                )
                .unwrap();
            let twice: i64 = c
                .query_one(
                    "SELECT count(*) FROM (SELECT installment_seq FROM charge_attempts
                     GROUP BY installment_seq, business_date HAVING count(*) > 1) d",
                    &[],
                )
                .unwrap()
                .get(0);
            (
                row.get::<_, i64>(0),
                row.get::<_, i64>(1),
                row.get::<_, i64>(2),
                twice,
            )
        })
        .await;
    assert_eq!(attempts, total, "one charge attempt per installment");
    assert_eq!(distinct, total, "every installment was attempted");
    assert_eq!(on_date, total, "all of them for today's date");
    assert_eq!(twice, 0, "no installment has two attempts for one date");
    assert_eq!(
        installation.count("SELECT count(*) FROM sim_charges").await,
        total,
        "the acquirer charged each installment once"
    );
    assert_eq!(
        installation
            .count(
                "SELECT count(*) FROM (SELECT installment_id FROM ledger_entries
                 WHERE kind = 'CHARGE' GROUP BY installment_id HAVING count(*) = 1) once"
            )
            .await,
        paid,
        "one ledger CHARGE entry for every installment paid"
    );
    assert_eq!(
        installation
            .count("SELECT count(*) FROM ledger_entries WHERE kind = 'CHARGE'")
            .await,
        paid,
        "and no other"
    );
    assert_eq!(
        installation
            .count("SELECT count(*) FROM installments WHERE state = 2")
            .await,
        paid,
        "every installment with an approving card is PAID"
    );
    assert_eq!(
        installation
            .count("SELECT count(*) FROM installments WHERE state = -99")
            .await,
        rejected,
        "and every one with a declining card REJECTED"
    );
    assert_eq!(
        installation
            .count(
                "SELECT count(*) FROM (SELECT installment_seq FROM events
                 WHERE kind = 'payment'
                   AND CAST(body AS JSON) #>> '{installment,state,name}' IN ('PAID', 'REJECTED')
                 GROUP BY installment_seq HAVING count(*) = 1) once"
            )
            .await,
        total,
        "one payment event with its outcome for every installment"
    );
    assert_eq!(
        installation
            .count(
                "SELECT count(*) FROM events WHERE kind = 'payment'
                   AND CAST(body AS JSON) #>> '{installment,state,name}' IN ('PAID', 'REJECTED')"
            )
            .await,
        total,
        "and no other"
    );
    installation.stop_all();
}

#[tokio::test(flavor = "multi_thread")]
async fn two_engines_charging_one_date_at_once_charge_each_installment_once() {
    engines_charge_one_date_together(2).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn three_engines_charging_one_date_at_once_charge_each_installment_once() {
    engines_charge_one_date_together(3).await;
}

/// What the receiver saw of one event.
#[derive(Default)]
struct Deliveries {
    /// When each request for it arrived.
    arrivals: Vec<SystemTime>,
    in_flight: usize,
    /// The most requests for it in flight at once.
    most_in_flight: usize,
}

/// An HTTPS webhook receiver that answers slowly and keeps, per `webhook-id`, every arrival and
/// how many requests for it were in flight at once.
#[derive(Clone, Default)]
struct SlowReceiver {
    seen: Arc<Mutex<HashMap<String, Deliveries>>>,
    addr: Option<SocketAddr>,
}

/// Counts a request out when its handler ends, answered or dropped with its connection.
struct InFlight {
    seen: Arc<Mutex<HashMap<String, Deliveries>>>,
    id: String,
}

impl Drop for InFlight {
    fn drop(&mut self) {
        let mut seen = self.seen.lock().unwrap();
        if let Some(d) = seen.get_mut(&self.id) {
            d.in_flight -= 1;
        }
    }
}

const ANSWER_AFTER: Duration = Duration::from_millis(300);

impl SlowReceiver {
    async fn start(cert_pem: &str, key_pem: &str) -> SlowReceiver {
        let mut receiver = SlowReceiver::default();
        let app = axum::Router::new()
            .fallback(slow_receive)
            .with_state(Arc::clone(&receiver.seen));
        let _ = rustls::crypto::aws_lc_rs::default_provider().install_default();
        let config = axum_server::tls_rustls::RustlsConfig::from_pem(
            cert_pem.as_bytes().to_vec(),
            key_pem.as_bytes().to_vec(),
        )
        .await
        .expect("TLS config");
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.set_nonblocking(true).unwrap();
        receiver.addr = Some(listener.local_addr().unwrap());
        let server = axum_server::from_tcp_rustls(listener, config).expect("TLS listener");
        tokio::spawn(async move { server.serve(app.into_make_service()).await });
        receiver
    }

    fn url(&self) -> String {
        format!("https://localhost:{}/hook", self.addr.unwrap().port())
    }

    fn arrivals(&self) -> usize {
        self.seen
            .lock()
            .unwrap()
            .values()
            .map(|d| d.arrivals.len())
            .sum()
    }

    fn in_flight(&self) -> HashSet<String> {
        self.seen
            .lock()
            .unwrap()
            .iter()
            .filter(|(_, d)| d.in_flight > 0)
            .map(|(id, _)| id.clone())
            .collect()
    }

    /// No event was ever in flight twice at once (from two engines, or twice from one).
    fn assert_never_twice_in_flight(&self) {
        for (id, deliveries) in self.seen.lock().unwrap().iter() {
            assert_eq!(
                deliveries.most_in_flight, 1,
                "{id} was in flight twice at once"
            );
        }
    }

    fn received(&self) -> HashSet<String> {
        self.seen.lock().unwrap().keys().cloned().collect()
    }
}

async fn slow_receive(
    State(seen): State<Arc<Mutex<HashMap<String, Deliveries>>>>,
    headers: HeaderMap,
) -> StatusCode {
    let id = headers
        .get("webhook-id")
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_string();
    let _counted = {
        let mut map = seen.lock().unwrap();
        let d = map.entry(id.clone()).or_default();
        d.arrivals.push(SystemTime::now());
        d.in_flight += 1;
        d.most_in_flight = d.most_in_flight.max(d.in_flight);
        InFlight {
            seen: Arc::clone(&seen),
            id,
        }
    };
    tokio::time::sleep(ANSWER_AFTER).await;
    StatusCode::OK
}

fn parse_time(text: &str) -> SystemTime {
    chrono::DateTime::parse_from_rfc3339(text)
        .expect("an RFC 3339 time")
        .with_timezone(&chrono::Utc)
        .into()
}

/// Polls `check` every 100 ms until it holds, for at most `limit`.
async fn eventually<F, Fut>(limit: Duration, what: &str, mut check: F)
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    let deadline = tokio::time::Instant::now() + limit;
    while !check().await {
        assert!(
            tokio::time::Instant::now() < deadline,
            "{what}: not within {limit:?}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn an_engine_killed_mid_delivery_leaves_its_events_to_another_after_its_lease() {
    const MANDATES: usize = 6;
    const PER_MANDATE: usize = 20;
    let mut installation = Installation::new().await;
    let receiver = SlowReceiver::start(&installation.cert_pem, &installation.key_pem).await;
    installation.start_engines(2);
    let (a, b) = (installation.api(0).await, installation.api(1).await);
    a.call(Method::POST, "/user", Some(customer())).await;
    let today = business_today(&a).await;

    // 120 payment events, written through both engines, so that both deliver.
    for m in 0..MANDATES {
        let api = if m % 2 == 0 { &a } else { &b };
        let id = format!("M-{m}");
        api.call(
            Method::POST,
            "/mandate",
            Some(mandate(&id, PER_MANDATE, &today, Some(&receiver.url()))),
        )
        .await;
        let ids: Vec<String> = (0..PER_MANDATE).map(|i| format!("i{i}")).collect();
        let amount: usize = (0..PER_MANDATE).map(|i| 1000 + i).sum();
        api.call(
            Method::PUT,
            "/installments/status/change",
            Some(
                json!({"product": {"id": id}, "installments": {"ids": ids}, "action": "PAYMENT",
                "payment": {"date": today, "amount": amount, "currencyId": "CLP"}}),
            ),
        )
        .await;
    }
    let expected = installation
        .count("SELECT count(*) FROM events WHERE url IS NOT NULL")
        .await;
    assert_eq!(expected, (MANDATES * PER_MANDATE) as i64);

    // Engine A dies with deliveries in flight.
    eventually(Duration::from_secs(30), "deliveries under way", || async {
        receiver.arrivals() >= 30
    })
    .await;
    let in_flight = receiver.in_flight();
    let killed_at = SystemTime::now();
    kill(&mut installation.engines[0].server.0);
    assert!(!in_flight.is_empty(), "the kill lands mid-batch");

    // B's own sends end and are recorded within moments; what stays PENDING of what was in
    // flight is A's, held by A's lease.
    tokio::time::sleep(Duration::from_secs(3)).await;
    receiver.assert_never_twice_in_flight();
    let ids: Vec<String> = in_flight.iter().cloned().collect();
    let held: HashMap<String, String> = installation
        .sql(move |c| {
            c.query(
                "SELECT id, claimed_until FROM events
                 WHERE delivery_state = 'PENDING' AND id = ANY($1)",
                &[&ids],
            )
            .unwrap()
            .iter()
            .map(|r| {
                let until: Option<String> = r.get(1);
                (r.get(0), until.expect("a pending event A sent is claimed"))
            })
            .collect()
        })
        .await;
    assert!(
        !held.is_empty(),
        "A had claimed events in flight when it died: {in_flight:?}"
    );
    for (id, until) in &held {
        assert!(
            parse_time(until) > killed_at,
            "{id}: A's claim still held at the kill (until {until})"
        );
    }

    // B delivers everything: its own events at once, A's once A's lease ends.
    eventually(
        Duration::from_secs(LEASE_SECS + 40),
        "every event DELIVERED",
        || async {
            installation
                .count("SELECT count(*) FROM events WHERE delivery_state <> 'DELIVERED'")
                .await
                == 0
        },
    )
    .await;
    let delivered_ids: HashSet<String> = installation
        .sql(|c| {
            c.query("SELECT id FROM events WHERE url IS NOT NULL", &[])
                .unwrap()
                .iter()
                .map(|r| r.get(0))
                .collect()
        })
        .await;
    let received = receiver.received();
    assert!(
        delivered_ids.is_subset(&received),
        "{} events DELIVERED without arriving",
        delivered_ids.difference(&received).count()
    );
    receiver.assert_never_twice_in_flight();
    let seen = receiver.seen.lock().unwrap();
    for (id, until) in &held {
        let lease_end = parse_time(until);
        let again: Vec<&SystemTime> = seen[id]
            .arrivals
            .iter()
            .filter(|at| **at > killed_at)
            .collect();
        assert!(
            !again.is_empty(),
            "{id}, claimed by A when it died, was sent again by B"
        );
        assert!(
            again.iter().all(|at| **at >= lease_end),
            "{id} was sent again before A's lease ended ({until}): {again:?}"
        );
    }
    drop(seen);
    installation.engines.remove(0);
    installation.stop_all();
}

/// The staff API through engine `base`.
async fn staff_call(
    client: &reqwest::Client,
    base: &str,
    method: Method,
    path: &str,
    cookie: Option<&str>,
    body: Option<Value>,
) -> (StatusCode, HeaderMap, Value) {
    let mut request = client.request(method, format!("{base}/admin/api{path}"));
    if let Some(cookie) = cookie {
        request = request.header("cookie", cookie);
    }
    if let Some(body) = body {
        request = request.json(&body);
    }
    let response = request.send().await.unwrap();
    let status = StatusCode::from_u16(response.status().as_u16()).unwrap();
    let headers = response.headers().clone();
    (
        status,
        headers,
        response.json().await.unwrap_or(Value::Null),
    )
}

/// Sends one merchant request with the given correlationId; its status and `name`.
async fn with_correlation(api: &Api, correlation: &str) -> (u16, String) {
    get_with_correlation(api, "/sandbox/clock", correlation).await
}

/// Sends `GET path` with the given correlationId; its status and `name`.
async fn get_with_correlation(api: &Api, path: &str, correlation: &str) -> (u16, String) {
    let mut fixed = headers(CODE, &api.key);
    fixed.insert("correlationId", correlation.parse().unwrap());
    let response = api
        .client
        .get(format!("{}/api/v1{path}", api.base))
        .headers(fixed)
        .bearer_auth(api.token.as_deref().unwrap())
        .send()
        .await
        .unwrap();
    let status = response.status().as_u16();
    let body: Value = response.json().await.unwrap();
    let name = body["name"]
        .as_str()
        .or_else(|| body["error"]["name"].as_str())
        .unwrap_or_default()
        .to_string();
    (status, name)
}

#[tokio::test(flavor = "multi_thread")]
async fn correlation_ids_sessions_keys_and_the_sandbox_clock_are_shared_by_all_engines() {
    let mut installation = Installation::new().await;
    installation.start_engines(3);

    // The API key the CLI made signs in on every engine.
    let mut apis = Vec::new();
    for i in 0..3 {
        let api = installation.api(i).await;
        assert!(api.token.is_some(), "engine {i} accepted the API key");
        api.call(Method::GET, "/events", None).await;
        apis.push(api);
    }

    // A correlationId accepted on one engine is refused on the others.
    let used = uuid::Uuid::new_v4().to_string();
    assert_eq!(with_correlation(&apis[0], &used).await.0, 200);
    for api in &apis[1..] {
        let (status, name) = with_correlation(api, &used).await;
        assert_eq!(status, 400, "{name}");
        assert_eq!(name, "CORRELATION_ID_REUSED");
    }
    // Sent to every engine at the same moment, exactly one of them accepts it.
    for _ in 0..10 {
        let shared = uuid::Uuid::new_v4().to_string();
        let answers = on_every_engine(&apis, |api| {
            let shared = shared.clone();
            async move { with_correlation(&api, &shared).await }
        })
        .await;
        let accepted = answers.iter().filter(|(status, _)| *status == 200).count();
        assert_eq!(accepted, 1, "{answers:?}");
        for (status, name) in answers.iter().filter(|(status, _)| *status != 200) {
            assert_eq!(*status, 400);
            assert_eq!(name, "CORRELATION_ID_REUSED");
        }
    }
    // A read's claim goes in with the read's own transaction on PostgreSQL, or is taken
    // after a read that found nothing (404, its transaction rolled back): either way, of the
    // engines given one id at once exactly one answers, and the id is used for good.
    for (path, answered) in [("/events", 200), ("/mandate/internalId/man_none", 404)] {
        for _ in 0..5 {
            let shared = uuid::Uuid::new_v4().to_string();
            let answers = on_every_engine(&apis, |api| {
                let shared = shared.clone();
                async move { get_with_correlation(&api, path, &shared).await }
            })
            .await;
            let refused: Vec<_> = answers
                .iter()
                .filter(|(status, name)| *status == 400 && name == "CORRELATION_ID_REUSED")
                .collect();
            assert_eq!(refused.len(), apis.len() - 1, "{path}: {answers:?}");
            assert!(
                answers.iter().any(|(status, _)| *status == answered),
                "{path}: {answers:?}"
            );
            let (status, name) = get_with_correlation(&apis[0], path, &shared).await;
            assert_eq!(
                (status, name.as_str()),
                (400, "CORRELATION_ID_REUSED"),
                "{path}"
            );
        }
    }

    // A staff session made on engine A works on B and C.
    let client = reqwest::Client::new();
    let (status, headers, body) = staff_call(
        &client,
        &installation.engines[0].base,
        Method::POST,
        "/setup",
        None,
        Some(json!({"email": "owner@merchant.example", "password": "a long password"})),
    )
    .await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    let cookie = headers["set-cookie"]
        .to_str()
        .unwrap()
        .split(';')
        .next()
        .unwrap()
        .to_string();
    for engine in &installation.engines[1..] {
        let (status, _, body) = staff_call(
            &client,
            &engine.base,
            Method::GET,
            "/session",
            Some(&cookie),
            None,
        )
        .await;
        assert_eq!(status, StatusCode::OK, "{body}");
        assert_eq!(body["payload"]["email"], "owner@merchant.example", "{body}");
    }

    // The sandbox clock is the database's: moved through A, B and C read the new date.
    let before = business_today(&apis[1]).await;
    let moved = apis[0]
        .call(
            Method::POST,
            "/sandbox/clock",
            Some(json!({"advanceDays": 3})),
        )
        .await;
    let after = moved["payload"]["today"].as_str().unwrap().to_string();
    assert_ne!(before, after);
    for api in &apis[1..] {
        assert_eq!(business_today(api).await, after, "{}", api.base);
        let run = api.call(Method::POST, "/sandbox/charging/run", None).await;
        assert_eq!(run["payload"]["date"], after.as_str(), "{run}");
    }
    installation.stop_all();
}
