//! Throughput benchmark of the webhook delivery worker (`notify::delivery`).
//!
//! `cargo bench --bench delivery` (release; 100,000 events), or with `MANDATO_BENCH_QUICK=1`
//! (10,000 events). Steps:
//! 1. a fresh database in a temp dir (`Store::open`, the real migrations), a commerce and the
//!    development CA, made through the library;
//! 2. a local HTTPS receiver (axum-server + rustls, `TCP_NODELAY`, a `localhost` certificate
//!    from that dev CA, on its own tokio runtime, as a separate process would be) that answers
//!    200 at once, counts requests and checks every webhook's `webhook-id`,
//!    `webhook-timestamp` and `webhook-signature` (the Standard Webhooks HMAC, recomputed here);
//! 3. the outbox filled with N signed payment events shaped like `notify::events` writes them
//!    (about 700 bytes, PENDING, due a minute ago) with plain SQL in 10,000-row transactions;
//! 4. rounds of four timed scenarios, interleaved so that the machine's drift (other builds,
//!    page cache, CPU clock) hits all of them alike:
//!    - `bare64`: the same N bodies POSTed by a bare reqwest loop, 64 in flight (keep-alive,
//!      the dev CA trusted, the worker's client settings, no signing, no database);
//!    - `delivery64`: `Deliverer::start` on a fresh copy of the filled database, per-host limit
//!      lifted (`max_in_flight` = `max_per_host` = 64), timed until every event is DELIVERED;
//!    - `bare32`: the bare loop with 32 in flight;
//!    - `default`: the worker with `DeliveryConfig::default()` (64 in flight, 8 per host).
//!
//! Completion is detected without slowing the worker down: the receiver's count of distinct
//! webhook ids is watched first (in memory), then `count(*)` of PENDING events (a partial
//! index) until it reaches 0, and the result is confirmed with
//! `SELECT count(*) FROM events WHERE delivery_state = 'DELIVERED'` = N (a full scan, once).
//! Each run also asserts no request lacked the webhook headers or had a wrong signature.
//!
//! Figures (median of the rounds, with min and max) are printed as a table and written to
//! `target/bench-delivery.json`. Knobs: `MANDATO_BENCH_EVENTS` (N), `MANDATO_BENCH_ROUNDS`
//! (default 3), `MANDATO_BENCH_SCENARIOS` (comma list of the names above),
//! `MANDATO_BENCH_PROGRESS=1` (a line per second while delivering), `MANDATO_BENCH_KEEP=1`
//! (keep the temp dir and print it).

mod common;

use std::collections::HashSet;
use std::path::Path;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::extract::{Request, State};
use axum::http::{StatusCode, Version};
use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use chrono::Utc;
use hmac::{Hmac, KeyInit, Mac};
use mandato::clock::{SystemClock, timestamp};
use mandato::notify::delivery::{Deliverer, DeliveryConfig};
use mandato::secret::Secret;
use mandato::store::Store;
use mandato::store::commerces::{self, Commerce, NewCommerce};
use rusqlite::params;
use serde_json::{Value, json};
use sha2::Sha256;

const ROWS_PER_TRANSACTION: usize = 10_000;
/// A run that makes no progress for this long has failed.
const STALL_LIMIT: Duration = Duration::from_secs(60);

// ---------------------------------------------------------------------------------------------
// Parameters
// ---------------------------------------------------------------------------------------------

struct Params {
    quick: bool,
    events: usize,
    rounds: usize,
    scenarios: Vec<String>,
    progress: bool,
    keep: bool,
}

/// In the order each round runs them.
const ALL_SCENARIOS: [&str; 4] = ["bare64", "delivery64", "bare32", "default"];

impl Params {
    fn from_env() -> Params {
        let flag = |name: &str| std::env::var(name).is_ok_and(|v| v == "1" || v == "true");
        let quick = flag("MANDATO_BENCH_QUICK");
        let events = std::env::var("MANDATO_BENCH_EVENTS")
            .ok()
            .and_then(|v| v.trim().replace('_', "").parse().ok())
            .unwrap_or(if quick { 10_000 } else { 100_000 })
            .max(1);
        let rounds = std::env::var("MANDATO_BENCH_ROUNDS")
            .ok()
            .and_then(|v| v.trim().parse().ok())
            .unwrap_or(3usize)
            .max(1);
        let scenarios: Vec<String> = match std::env::var("MANDATO_BENCH_SCENARIOS") {
            Ok(list) if !list.trim().is_empty() => list
                .split(',')
                .map(|s| s.trim().to_string())
                .filter(|s| !s.is_empty())
                .collect(),
            _ => ALL_SCENARIOS.iter().map(|s| s.to_string()).collect(),
        };
        for s in &scenarios {
            assert!(
                ALL_SCENARIOS.contains(&s.as_str()),
                "unknown scenario {s:?}; known: {ALL_SCENARIOS:?}"
            );
        }
        Params {
            quick,
            events,
            rounds,
            scenarios,
            progress: flag("MANDATO_BENCH_PROGRESS"),
            keep: flag("MANDATO_BENCH_KEEP"),
        }
    }

    fn wants(&self, scenario: &str) -> bool {
        self.scenarios.iter().any(|s| s == scenario)
    }
}

// ---------------------------------------------------------------------------------------------
// The receiver
// ---------------------------------------------------------------------------------------------

/// What the receiver saw. Webhooks go to `/hook`, the bare loop's requests to `/bare`.
struct Seen {
    secret_key: Vec<u8>,
    hooks: AtomicU64,
    bare: AtomicU64,
    missing_headers: AtomicU64,
    bad_signatures: AtomicU64,
    http2: AtomicU64,
    other_path: AtomicU64,
    /// Distinct `webhook-id`s: at least once allows duplicates, so requests can exceed them.
    ids: Mutex<HashSet<String>>,
}

impl Seen {
    fn reset(&self) {
        for counter in [
            &self.hooks,
            &self.bare,
            &self.missing_headers,
            &self.bad_signatures,
            &self.http2,
            &self.other_path,
        ] {
            counter.store(0, Ordering::SeqCst);
        }
        self.ids.lock().unwrap().clear();
    }

    fn distinct_ids(&self) -> usize {
        self.ids.lock().unwrap().len()
    }
}

struct Receiver {
    seen: Arc<Seen>,
    port: u16,
}

impl Receiver {
    fn url(&self, path: &str) -> String {
        format!("https://localhost:{}{path}", self.port)
    }
}

/// Starts the receiver on its own runtime (two worker threads) in a background thread.
fn start_receiver(cert_pem: &str, key_pem: &str, secret_key: Vec<u8>) -> Receiver {
    let seen = Arc::new(Seen {
        secret_key,
        hooks: AtomicU64::new(0),
        bare: AtomicU64::new(0),
        missing_headers: AtomicU64::new(0),
        bad_signatures: AtomicU64::new(0),
        http2: AtomicU64::new(0),
        other_path: AtomicU64::new(0),
        ids: Mutex::new(HashSet::new()),
    });
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind the receiver");
    listener.set_nonblocking(true).unwrap();
    let port = listener.local_addr().unwrap().port();
    let (cert, key) = (cert_pem.as_bytes().to_vec(), key_pem.as_bytes().to_vec());
    let state = Arc::clone(&seen);
    let (ready_tx, ready_rx) = std::sync::mpsc::channel();
    std::thread::Builder::new()
        .name("receiver".into())
        .spawn(move || {
            let rt = tokio::runtime::Builder::new_multi_thread()
                .worker_threads(2)
                .thread_name("receiver-rt")
                .enable_all()
                .build()
                .expect("receiver runtime");
            rt.block_on(async move {
                let config = axum_server::tls_rustls::RustlsConfig::from_pem(cert, key)
                    .await
                    .expect("TLS config");
                let server = axum_server::from_tcp_rustls(listener, config)
                    .expect("TLS listener")
                    .map(|tls| tls.acceptor(axum_server::accept::NoDelayAcceptor::new()));
                let app = axum::Router::new().fallback(receive).with_state(state);
                ready_tx.send(()).unwrap();
                server
                    .serve(app.into_make_service())
                    .await
                    .expect("receiver");
            });
        })
        .expect("receiver thread");
    ready_rx.recv().expect("the receiver started");
    Receiver { seen, port }
}

async fn receive(State(seen): State<Arc<Seen>>, request: Request) -> StatusCode {
    let (parts, body) = request.into_parts();
    let Ok(body) = axum::body::to_bytes(body, 1 << 20).await else {
        return StatusCode::BAD_REQUEST;
    };
    if parts.version == Version::HTTP_2 {
        seen.http2.fetch_add(1, Ordering::Relaxed);
    }
    match parts.uri.path() {
        "/hook" => {
            seen.hooks.fetch_add(1, Ordering::Relaxed);
            let header = |name: &str| {
                parts
                    .headers
                    .get(name)
                    .and_then(|v| v.to_str().ok())
                    .filter(|v| !v.is_empty())
            };
            let (Some(id), Some(ts), Some(signatures)) = (
                header("webhook-id"),
                header("webhook-timestamp"),
                header("webhook-signature"),
            ) else {
                seen.missing_headers.fetch_add(1, Ordering::Relaxed);
                return StatusCode::OK;
            };
            if !signature_valid(&seen.secret_key, id, ts, &body, signatures) {
                seen.bad_signatures.fetch_add(1, Ordering::Relaxed);
            }
            seen.ids.lock().unwrap().insert(id.to_string());
        }
        "/bare" => {
            seen.bare.fetch_add(1, Ordering::Relaxed);
        }
        _ => {
            seen.other_path.fetch_add(1, Ordering::Relaxed);
        }
    }
    StatusCode::OK
}

/// Standard Webhooks: some `v1,<base64>` is the HMAC-SHA256 of `id.timestamp.body`.
fn signature_valid(key: &[u8], id: &str, ts: &str, body: &[u8], signatures: &str) -> bool {
    let mut mac = Hmac::<Sha256>::new_from_slice(key).unwrap();
    mac.update(id.as_bytes());
    mac.update(b".");
    mac.update(ts.as_bytes());
    mac.update(b".");
    mac.update(body);
    let expected = STANDARD.encode(mac.finalize().into_bytes());
    signatures
        .split(' ')
        .filter_map(|s| s.strip_prefix("v1,"))
        .any(|s| s == expected)
}

// ---------------------------------------------------------------------------------------------
// The database
// ---------------------------------------------------------------------------------------------

fn secret_key_bytes(secret: &Secret<String>) -> Vec<u8> {
    let encoded = secret.expose().trim_start_matches("whsec_");
    STANDARD.decode(encoded).expect("whsec_<base64>")
}

fn new_commerce(store: &Store) -> Commerce {
    let secret = mandato::auth::api_key::generate_webhook_secret();
    let now = timestamp(Utc::now());
    store
        .write(|tx| {
            commerces::insert(
                tx,
                &NewCommerce {
                    code: "76123456-0",
                    name: "Bench Delivery SpA",
                    password_hash: "not-a-login",
                    channels: None,
                    payment_methods: &[],
                    webhook_secret: &secret,
                    authorization_required: false,
                    created_at: &now,
                },
            )
        })
        .expect("insert the commerce")
}

/// A signed payment event body shaped like `notify::events::record_payment` writes it.
fn payment_body(commerce: &Commerce, i: usize, event_id: &str, created_at: &str) -> String {
    let states = [(2, "PAID"), (3, "REJECTED"), (1, "PENDING")];
    let (state_id, state_name) = states[i % states.len()];
    let rejection = if state_id == 3 {
        json!({"code": "51", "message": "Fondos insuficientes"})
    } else {
        Value::Null
    };
    let body = json!({
        "event": "payment",
        "eventId": event_id,
        "createdAt": created_at,
        "sequence": (i % 36) + 2,
        "product": {
            "internalId": mandato::ids::new_id("man"),
            "id": format!("sub-{:06}", i / 12),
            "type": "DYNAMIC",
        },
        "customer": {
            "internalUserId": mandato::ids::new_id("usr"),
            "userId": format!("cust-{:06}", i / 12),
        },
        "installment": {
            "internalId": mandato::ids::new_id("ins"),
            "id": format!("q{:02}", i % 12 + 1),
            "amount": 19_990 + (i % 7) as i64 * 1_000,
            "currencyId": "CLP",
            "installmentDueDate": "2026-05-05",
            "state": {"id": state_id, "name": state_name},
            "dateTime": created_at,
            "attempt": 1 + (i % 3),
            "paymentMethodId": if state_id == 2 { json!(3) } else { Value::Null },
            "authorizationCode": if state_id == 2 { json!(format!("{:06}", i % 1_000_000)) } else { Value::Null },
            "rejection": rejection,
        },
    });
    let signed = mandato::notify::signing::sign_body(body, &commerce.webhook_secret);
    serde_json::to_string(&signed).unwrap()
}

/// Writes `n` PENDING events, due a minute ago, to `url`; returns their bodies.
fn fill_outbox(store: &Store, commerce: &Commerce, url: &str, n: usize) -> Vec<String> {
    let created_at = timestamp(Utc::now() - chrono::Duration::minutes(1));
    let mut bodies = Vec::with_capacity(n);
    let mut next = 0;
    while next < n {
        let end = (next + ROWS_PER_TRANSACTION).min(n);
        store
            .write(|db| {
                let tx = db.as_sqlite().expect("the benchmark's store is SQLite");
                let mut insert = tx
                    .prepare_cached(
                        "INSERT INTO events (id, commerce_id, mandate_seq, installment_seq, kind,
                            sequence, url, body, delivery_state, next_attempt_at, created_at)
                     VALUES (?1, ?2, NULL, NULL, 'payment', ?3, ?4, ?5, 'PENDING', ?6, ?6)",
                    )
                    .map_err(mandato::store::db::Error::from)?;
                for i in next..end {
                    let event_id = mandato::ids::new_id("evt");
                    let body = payment_body(commerce, i, &event_id, &created_at);
                    insert
                        .execute(params![
                            event_id,
                            commerce.id,
                            (i % 36 + 2) as i64,
                            url,
                            body,
                            created_at
                        ])
                        .map_err(mandato::store::db::Error::from)?;
                    bodies.push(body);
                }
                Ok(())
            })
            .expect("fill the outbox");
        next = end;
    }
    bodies
}

fn count(store: &Store, sql: &str) -> i64 {
    store
        .read(|c| Ok(c.query_row(sql, &[], |r| r.get(0))?))
        .expect("count")
}

// ---------------------------------------------------------------------------------------------
// Measurements
// ---------------------------------------------------------------------------------------------

/// User + system CPU seconds of this process (client, worker and receiver together).
fn cpu_seconds() -> f64 {
    // SAFETY: getrusage writes into the zeroed struct we pass and reads nothing else.
    let usage = unsafe {
        let mut usage: libc::rusage = std::mem::zeroed();
        libc::getrusage(libc::RUSAGE_SELF, &mut usage);
        usage
    };
    let secs = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    secs(usage.ru_utime) + secs(usage.ru_stime)
}

struct Outcome {
    name: String,
    what: String,
    items: usize,
    seconds: f64,
    cpu_seconds: f64,
    extra: Value,
}

impl Outcome {
    fn rate(&self) -> f64 {
        self.items as f64 / self.seconds
    }
}

/// The worker's client settings (reqwest 0.13, dev CA trusted), without the worker.
fn bare_client(ca_pem: &str, in_flight: usize) -> reqwest::Client {
    let certs = reqwest::Certificate::from_pem_bundle(ca_pem.as_bytes()).expect("CA PEM");
    reqwest::Client::builder()
        .tls_certs_merge(certs)
        .timeout(Duration::from_secs(15))
        .connect_timeout(Duration::from_secs(15))
        .redirect(reqwest::redirect::Policy::none())
        .user_agent("mandato-bench/bare")
        .pool_max_idle_per_host(in_flight)
        .build()
        .expect("client")
}

async fn bare_loop(
    name: &str,
    receiver: &Receiver,
    ca_pem: &str,
    bodies: &Arc<Vec<String>>,
    in_flight: usize,
) -> Outcome {
    receiver.seen.reset();
    let client = bare_client(ca_pem, in_flight);
    let url = receiver.url("/bare");
    // Open the connection (TLS handshake) before the clock starts, as the worker's warm pool.
    client
        .post(&url)
        .body("{}")
        .send()
        .await
        .expect("warm-up request");
    receiver.seen.reset();
    let next = Arc::new(AtomicUsize::new(0));
    let cpu = cpu_seconds();
    let started = Instant::now();
    let tasks: Vec<_> = (0..in_flight)
        .map(|_| {
            let (client, url, bodies, next) = (
                client.clone(),
                url.clone(),
                Arc::clone(bodies),
                Arc::clone(&next),
            );
            tokio::spawn(async move {
                let mut failures = 0u64;
                loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    let Some(body) = bodies.get(i) else { break };
                    let sent = client
                        .post(&url)
                        .header("content-type", "application/json")
                        .body(body.clone())
                        .send()
                        .await;
                    match sent {
                        Ok(response) if response.status().is_success() => {
                            let _ = response.bytes().await;
                        }
                        _ => failures += 1,
                    }
                }
                failures
            })
        })
        .collect();
    let mut failures = 0;
    for task in tasks {
        failures += task.await.expect("bare task");
    }
    let seconds = started.elapsed().as_secs_f64();
    let cpu_seconds = cpu_seconds() - cpu;
    let seen = &receiver.seen;
    let received = seen.bare.load(Ordering::SeqCst);
    assert_eq!(failures, 0, "{name}: {failures} requests failed");
    assert_eq!(received as usize, bodies.len(), "{name}: requests received");
    Outcome {
        name: name.into(),
        what: format!("bare reqwest POST loop, {in_flight} in flight"),
        items: bodies.len(),
        seconds,
        cpu_seconds,
        extra: json!({
            "in_flight": in_flight,
            "http2_requests": seen.http2.load(Ordering::SeqCst),
        }),
    }
}

#[allow(clippy::too_many_arguments)]
async fn delivery_run(
    name: &str,
    what: &str,
    template: &Store,
    dir: &Path,
    receiver: &Receiver,
    n: usize,
    config: DeliveryConfig,
    progress: bool,
) -> Outcome {
    // A fresh copy of the filled database for every run: same start, nothing left over.
    let path = dir.join(format!("{name}.db"));
    template.backup_to(&path).expect("copy the filled database");
    let store = Arc::new(Store::open(&path).expect("open the copy"));
    assert_eq!(
        count(
            &store,
            "SELECT count(*) FROM events WHERE delivery_state = 'PENDING'"
        ),
        n as i64
    );
    receiver.seen.reset();
    let seen = Arc::clone(&receiver.seen);
    let settings = json!({
        "max_in_flight": config.max_in_flight,
        "max_per_host": config.max_per_host,
        "timeout_s": config.timeout.as_secs_f64(),
    });

    let cpu = cpu_seconds();
    let started = Instant::now();
    let deliverer = Deliverer::start(
        Arc::clone(&store),
        Arc::new(SystemClock),
        config,
        true, // sandbox, the default environment (no faults configured)
        mandato::notify::destination::Destinations::Any, // the receiver is on loopback
    );
    // Phase 1: every event has reached the receiver (cheap, in memory).
    let mut last = (0, Instant::now());
    let mut last_report = Instant::now();
    let mut per_second = Vec::new();
    loop {
        let got = seen.distinct_ids();
        if got >= n {
            break;
        }
        if got != last.0 {
            last = (got, Instant::now());
        }
        assert!(
            last.1.elapsed() < STALL_LIMIT,
            "{name}: stalled at {got} of {n} events received"
        );
        if last_report.elapsed() >= Duration::from_secs(1) {
            let total = seen.hooks.load(Ordering::Relaxed);
            per_second.push(total);
            if progress {
                eprintln!(
                    "  {name}: {:>5.1}s  {got} received",
                    started.elapsed().as_secs_f64()
                );
            }
            last_report = Instant::now();
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let all_received = started.elapsed().as_secs_f64();
    // Phase 2: every result is committed (the partial index of PENDING events).
    let mut last = (i64::MAX, Instant::now());
    loop {
        let pending = count(
            &store,
            "SELECT count(*) FROM events WHERE delivery_state = 'PENDING'",
        );
        if pending == 0 {
            break;
        }
        if pending != last.0 {
            last = (pending, Instant::now());
        }
        assert!(
            last.1.elapsed() < STALL_LIMIT,
            "{name}: stalled with {pending} events PENDING"
        );
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
    let seconds = started.elapsed().as_secs_f64();
    let cpu_seconds = cpu_seconds() - cpu;
    deliverer.shutdown().await;

    let delivered = count(
        &store,
        "SELECT count(*) FROM events WHERE delivery_state = 'DELIVERED'",
    );
    let attempts = count(&store, "SELECT count(*) FROM delivery_attempts");
    let requests = seen.hooks.load(Ordering::SeqCst);
    let missing = seen.missing_headers.load(Ordering::SeqCst);
    let bad = seen.bad_signatures.load(Ordering::SeqCst);
    assert_eq!(delivered, n as i64, "{name}: events DELIVERED");
    assert_eq!(missing, 0, "{name}: requests without the webhook headers");
    assert_eq!(bad, 0, "{name}: requests with a wrong webhook-signature");
    assert_eq!(seen.other_path.load(Ordering::SeqCst), 0);
    drop(store);
    let _ = std::fs::remove_file(&path);
    let _ = std::fs::remove_file(path.with_extension("db-wal"));
    let _ = std::fs::remove_file(path.with_extension("db-shm"));
    Outcome {
        name: name.into(),
        what: what.into(),
        items: n,
        seconds,
        cpu_seconds,
        extra: json!({
            "config": settings,
            "all_received_s": all_received,
            "commit_lag_s": seconds - all_received,
            "requests": requests,
            "duplicates": requests as i64 - n as i64,
            "attempt_rows": attempts,
            "missing_webhook_headers": missing,
            "bad_signatures": bad,
            "http2_requests": seen.http2.load(Ordering::SeqCst),
            "received_cumulative_per_second": per_second,
        }),
    }
}

// ---------------------------------------------------------------------------------------------
// Main
// ---------------------------------------------------------------------------------------------

fn main() {
    let params = Params::from_env();
    let _ = rustls::crypto::aws_lc_rs::default_provider().install_default();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("runtime");
    rt.block_on(run(params));
}

async fn run(params: Params) {
    let n = params.events;
    let temp = tempfile::Builder::new()
        .prefix("mandato-bench-delivery-")
        .tempdir()
        .expect("temp dir");
    let dir = temp.path().to_path_buf();
    eprintln!(
        "delivery bench: {n} events{}, scenarios {:?}, in {}",
        if params.quick { " (quick)" } else { "" },
        params.scenarios,
        dir.display()
    );

    // The database, its commerce and its development CA.
    let store = Store::open(&dir.join("filled.db")).expect("open the store");
    let commerce = new_commerce(&store);
    let ca = mandato::cli::dev_ca(&store).expect("dev CA");
    let (cert, key) = ca.issue_localhost().expect("localhost certificate");
    let receiver = start_receiver(
        &cert,
        key.expose(),
        secret_key_bytes(&commerce.webhook_secret),
    );

    let fill_started = Instant::now();
    let bodies = fill_outbox(&store, &commerce, &receiver.url("/hook"), n);
    let fill_seconds = fill_started.elapsed().as_secs_f64();
    let body_bytes = bodies.iter().map(String::len).sum::<usize>() as f64 / n as f64;
    let bodies = Arc::new(bodies);
    eprintln!(
        "filled {n} events ({body_bytes:.0} bytes per body on average) in {fill_seconds:.2} s"
    );

    let mut outcomes: Vec<Outcome> = Vec::new();
    let lifted = DeliveryConfig {
        max_in_flight: 64,
        max_per_host: 64,
        ..DeliveryConfig::default()
    };
    let default = DeliveryConfig::default();
    let default_what = format!(
        "Deliverer, default config ({} in flight, {} per host)",
        default.max_in_flight, default.max_per_host
    );
    for round in 1..=params.rounds {
        eprintln!("round {round} of {}", params.rounds);
        for scenario in ALL_SCENARIOS {
            if !params.wants(scenario) {
                continue;
            }
            let outcome = match scenario {
                "bare64" => bare_loop(scenario, &receiver, &ca.cert_pem, &bodies, 64).await,
                "bare32" => bare_loop(scenario, &receiver, &ca.cert_pem, &bodies, 32).await,
                "delivery64" => {
                    delivery_run(
                        scenario,
                        "Deliverer, 64 in flight, 64 per host",
                        &store,
                        &dir,
                        &receiver,
                        n,
                        lifted.clone(),
                        params.progress,
                    )
                    .await
                }
                "default" => {
                    delivery_run(
                        scenario,
                        &default_what,
                        &store,
                        &dir,
                        &receiver,
                        n,
                        default.clone(),
                        params.progress,
                    )
                    .await
                }
                _ => unreachable!(),
            };
            eprintln!(
                "  {:<11} {:>9.0}/s  ({:.2} s, {:.2} CPU s)",
                outcome.name,
                outcome.rate(),
                outcome.seconds,
                outcome.cpu_seconds
            );
            outcomes.push(outcome);
        }
    }

    report(&params, fill_seconds, body_bytes, &outcomes);
    if params.keep {
        let kept = temp.keep();
        eprintln!("kept {}", kept.display());
    }
}

fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    let mid = values.len() / 2;
    if values.len() % 2 == 1 {
        values[mid]
    } else {
        (values[mid - 1] + values[mid]) / 2.0
    }
}

/// One scenario over all rounds.
struct Summary<'a> {
    name: &'a str,
    what: &'a str,
    runs: Vec<&'a Outcome>,
}

impl Summary<'_> {
    fn rates(&self) -> Vec<f64> {
        self.runs.iter().map(|o| o.rate()).collect()
    }

    fn median_rate(&self) -> f64 {
        median(self.rates())
    }

    fn min_rate(&self) -> f64 {
        self.rates().into_iter().fold(f64::INFINITY, f64::min)
    }

    fn max_rate(&self) -> f64 {
        self.rates().into_iter().fold(0.0, f64::max)
    }

    fn median_seconds(&self) -> f64 {
        median(self.runs.iter().map(|o| o.seconds).collect())
    }

    fn median_cpu_us(&self) -> f64 {
        median(
            self.runs
                .iter()
                .map(|o| o.cpu_seconds * 1e6 / o.items as f64)
                .collect(),
        )
    }
}

fn report(params: &Params, fill_seconds: f64, body_bytes: f64, outcomes: &[Outcome]) {
    let summaries: Vec<Summary<'_>> = ALL_SCENARIOS
        .iter()
        .filter_map(|name| {
            let runs: Vec<&Outcome> = outcomes.iter().filter(|o| o.name == *name).collect();
            let what = runs.first()?.what.as_str();
            Some(Summary { name, what, runs })
        })
        .collect();
    let rate = |name: &str| {
        summaries
            .iter()
            .find(|s| s.name == name)
            .map(Summary::median_rate)
    };
    let ratio = |a: Option<f64>, b: Option<f64>| a.zip(b).map(|(a, b)| a / b);
    let delivery_vs_bare64 = ratio(rate("delivery64"), rate("bare64"));
    let delivery_vs_bare32 = ratio(rate("delivery64"), rate("bare32"));
    let default_vs_bare64 = ratio(rate("default"), rate("bare64"));
    // Each round's delivery against the same round's bare loop: less exposed to drift.
    let runs_of = |name: &'static str| outcomes.iter().filter(move |o| o.name == name);
    let per_round: Vec<f64> = runs_of("delivery64")
        .zip(runs_of("bare64"))
        .map(|(d, b)| d.rate() / b.rate())
        .collect();

    println!();
    println!(
        "webhook delivery, {} events, {body_bytes:.0}-byte bodies, {} round(s), medians (fill {fill_seconds:.2} s)",
        params.events, params.rounds
    );
    println!(
        "{:<11} {:<52} {:>9} {:>9} {:>9} {:>7} {:>10}",
        "scenario", "what", "rate/s", "min", "max", "wall s", "CPU µs/ea"
    );
    for s in &summaries {
        println!(
            "{:<11} {:<52} {:>9.0} {:>9.0} {:>9.0} {:>7.2} {:>10.1}",
            s.name,
            s.what,
            s.median_rate(),
            s.min_rate(),
            s.max_rate(),
            s.median_seconds(),
            s.median_cpu_us()
        );
    }
    let show = |label: &str, value: Option<f64>| {
        if let Some(v) = value {
            println!("{label:<40} {v:>6.2}");
        }
    };
    println!();
    show("delivery64 / bare64", delivery_vs_bare64);
    show("delivery64 / bare32", delivery_vs_bare32);
    show("default (8 per host) / bare64", default_vs_bare64);
    if !per_round.is_empty() {
        let list: Vec<String> = per_round.iter().map(|r| format!("{r:.2}")).collect();
        println!(
            "{:<40} {}",
            "delivery64 / bare64, per round",
            list.join(" ")
        );
    }
    if let Some(r) = delivery_vs_bare64 {
        println!(
            "target: delivery at least half the bare loop's rate: {}",
            if r >= 0.5 { "MET" } else { "MISSED" }
        );
    }

    let results: Vec<Value> = summaries
        .iter()
        .map(|s| {
            let runs: Vec<Value> = s
                .runs
                .iter()
                .map(|o| {
                    json!({
                        "seconds": o.seconds,
                        "per_second": o.rate(),
                        "cpu_seconds": o.cpu_seconds,
                        "detail": o.extra,
                    })
                })
                .collect();
            json!({
                "name": s.name,
                "what": s.what,
                "items": s.runs[0].items,
                "per_second_median": s.median_rate(),
                "per_second_min": s.min_rate(),
                "per_second_max": s.max_rate(),
                "seconds_median": s.median_seconds(),
                "cpu_us_per_item_median": s.median_cpu_us(),
                "runs": runs,
            })
        })
        .collect();
    let doc = json!({
        "bench": "delivery",
        "quick": params.quick,
        "events": params.events,
        "rounds": params.rounds,
        "body_bytes_mean": body_bytes,
        "fill_seconds": fill_seconds,
        "cores": std::thread::available_parallelism().map(|n| n.get()).unwrap_or(0),
        "results": results,
        "ratios": {
            "delivery64_over_bare64": delivery_vs_bare64,
            "delivery64_over_bare32": delivery_vs_bare32,
            "default_over_bare64": default_vs_bare64,
            "delivery64_over_bare64_per_round": per_round,
        },
        "target_half_of_bare_met": delivery_vs_bare64.map(|r| r >= 0.5),
    });
    let path = common::results_path("bench-delivery.json");
    if let Some(parent) = path.parent() {
        let _ = std::fs::create_dir_all(parent);
    }
    std::fs::write(&path, serde_json::to_string_pretty(&doc).unwrap() + "\n")
        .expect("write the results");
    println!("\nwritten to {}", path.display());
}
