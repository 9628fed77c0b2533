//! Hostile receivers and destinations (CONTRACT 12, "Webhook responses" and "Webhook
//! destinations"): endless, huge, trickling and close-delimited answers cost at most 64 KiB and
//! the delivery timeout; in production no webhook reaches this machine or its network, whether
//! the URL writes the address out or a name resolves to it; the development CA certifies only
//! `localhost` and is not trusted by production; `serve --allow-private-webhooks` lifts the
//! destination rule for receivers on premises.
//!
//! The misbehaving receivers are raw TLS servers written here, so that they can break HTTP in
//! ways a well-behaved server library refuses to; the real HTTPS receiver of `receiver.rs`
//! serves the endless body over its negotiated protocol.

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use mandato::config::Environment;
use mandato::notify::delivery::{DeliveryConfig, MAX_EXCERPT};
use mandato::store::deliveries::{self, AttemptRow};
use mandato::store::{commerces, events, settings};
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio_rustls::rustls;

use crate::helpers::*;
use crate::receiver::{Answer, HOSTILE_MARK, Receiver};

const GIB: u64 = 1 << 30;

// ----- a receiver that misbehaves -----

#[derive(Clone, Copy, Debug)]
enum Misbehaviour {
    /// This status, chunked, a body that never ends (bounded at 4 GiB for the test's sake).
    Endless(u16),
    /// This status and a `Content-Length` of this many bytes, all sent if read.
    Sized(u16, u64),
    /// HTTP/1.0 without `Content-Length`: the body ends when the connection closes (with TLS
    /// close_notify, or without, as many servers do).
    CloseDelimited {
        status: u16,
        body: &'static str,
        close_notify: bool,
    },
    /// 200, then one byte of body every 100 ms (bounded at 60 s).
    Trickle,
}

struct Hostile {
    addr: SocketAddr,
    requests: Arc<AtomicUsize>,
    /// Body bytes handed to the connection.
    body_sent: Arc<AtomicU64>,
    /// The engine hung up before the whole body was sent.
    cut_off: Arc<AtomicBool>,
}

impl Hostile {
    async fn start(cert_pem: &str, key_pem: &str, how: Misbehaviour) -> Hostile {
        let _ = rustls::crypto::aws_lc_rs::default_provider().install_default();
        use rustls::pki_types::pem::PemObject;
        let certs = rustls::pki_types::CertificateDer::pem_slice_iter(cert_pem.as_bytes())
            .collect::<Result<Vec<_>, _>>()
            .unwrap();
        let key = rustls::pki_types::PrivateKeyDer::from_pem_slice(key_pem.as_bytes()).unwrap();
        let config = rustls::ServerConfig::builder()
            .with_no_client_auth()
            .with_single_cert(certs, key)
            .unwrap();
        let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(config));
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let hostile = Hostile {
            addr: listener.local_addr().unwrap(),
            requests: Arc::default(),
            body_sent: Arc::default(),
            cut_off: Arc::default(),
        };
        let (requests, sent, cut_off) = (
            Arc::clone(&hostile.requests),
            Arc::clone(&hostile.body_sent),
            Arc::clone(&hostile.cut_off),
        );
        tokio::spawn(async move {
            // At most a few dozen connections: the engine's retries of one event.
            for _ in 0..64 {
                let Ok((tcp, _)) = listener.accept().await else {
                    return;
                };
                let acceptor = acceptor.clone();
                let (requests, sent, cut_off) = (
                    Arc::clone(&requests),
                    Arc::clone(&sent),
                    Arc::clone(&cut_off),
                );
                tokio::spawn(async move {
                    let Ok(mut tls) = acceptor.accept(tcp).await else {
                        return;
                    };
                    if !read_request(&mut tls).await {
                        return;
                    }
                    requests.fetch_add(1, Ordering::SeqCst);
                    if !misbehave(&mut tls, how, &sent).await {
                        cut_off.store(true, Ordering::SeqCst);
                    }
                });
            }
        });
        hostile
    }

    fn url(&self) -> String {
        format!("https://localhost:{}/hooks", self.addr.port())
    }
}

/// Reads one request's head and its `Content-Length` body; false if the connection broke.
async fn read_request<S: AsyncReadExt + Unpin>(stream: &mut S) -> bool {
    let mut data = Vec::new();
    let mut buf = [0u8; 8192];
    let head_end = loop {
        if let Some(i) = data.windows(4).position(|w| w == b"\r\n\r\n") {
            break i + 4;
        }
        match stream.read(&mut buf).await {
            Ok(0) | Err(_) => return false,
            Ok(n) => data.extend_from_slice(&buf[..n]),
        }
        if data.len() > 1 << 20 {
            return false;
        }
    };
    let head = String::from_utf8_lossy(&data[..head_end]).to_ascii_lowercase();
    let length: usize = head
        .lines()
        .find_map(|l| l.strip_prefix("content-length:"))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or(0);
    while data.len() < head_end + length {
        match stream.read(&mut buf).await {
            Ok(0) | Err(_) => return false,
            Ok(n) => data.extend_from_slice(&buf[..n]),
        }
    }
    true
}

fn hostile_chunk(first: bool) -> Vec<u8> {
    let mut chunk = vec![b'x'; 64 * 1024];
    if first {
        chunk[..HOSTILE_MARK.len()].copy_from_slice(HOSTILE_MARK.as_bytes());
    }
    chunk
}

/// Answers as told; false when the engine hung up before the answer was complete.
async fn misbehave<S: AsyncWriteExt + Unpin>(
    stream: &mut S,
    how: Misbehaviour,
    sent: &AtomicU64,
) -> bool {
    match how {
        Misbehaviour::Endless(status) => {
            let head = format!("HTTP/1.1 {status} Oops\r\nTransfer-Encoding: chunked\r\n\r\n");
            if stream.write_all(head.as_bytes()).await.is_err() {
                return false;
            }
            let mut written = 0u64;
            while written < 4 * GIB {
                let chunk = hostile_chunk(written == 0);
                let mut frame = format!("{:x}\r\n", chunk.len()).into_bytes();
                frame.extend_from_slice(&chunk);
                frame.extend_from_slice(b"\r\n");
                if stream.write_all(&frame).await.is_err() {
                    return false;
                }
                written += chunk.len() as u64;
                sent.fetch_add(chunk.len() as u64, Ordering::SeqCst);
            }
            true
        }
        Misbehaviour::Sized(status, length) => {
            let head = format!("HTTP/1.1 {status} Oops\r\nContent-Length: {length}\r\n\r\n");
            if stream.write_all(head.as_bytes()).await.is_err() {
                return false;
            }
            let mut written = 0u64;
            while written < length {
                let mut chunk = hostile_chunk(written == 0);
                chunk.truncate((length - written).min(chunk.len() as u64) as usize);
                if stream.write_all(&chunk).await.is_err() {
                    return false;
                }
                written += chunk.len() as u64;
                sent.fetch_add(chunk.len() as u64, Ordering::SeqCst);
            }
            stream.flush().await.is_ok()
        }
        Misbehaviour::CloseDelimited {
            status,
            body,
            close_notify,
        } => {
            let answer =
                format!("HTTP/1.0 {status} Legacy\r\nContent-Type: text/plain\r\n\r\n{body}");
            if stream.write_all(answer.as_bytes()).await.is_err() {
                return false;
            }
            sent.fetch_add(body.len() as u64, Ordering::SeqCst);
            if stream.flush().await.is_err() {
                return false;
            }
            if close_notify {
                let _ = stream.shutdown().await;
            }
            // Dropping the stream closes the TCP connection: the end of the body.
            true
        }
        Misbehaviour::Trickle => {
            if stream
                .write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 1000000\r\n\r\n")
                .await
                .is_err()
            {
                return false;
            }
            for _ in 0..600 {
                if stream.write_all(b"t").await.is_err() || stream.flush().await.is_err() {
                    return false;
                }
                sent.fetch_add(1, Ordering::SeqCst);
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
            true
        }
    }
}

// ----- the engine's side -----

/// Retries quickly (so a test sees them), with the contract's 15 s delivery timeout unless
/// told otherwise.
fn delivery(timeout: Duration) -> DeliveryConfig {
    DeliveryConfig {
        retry_schedule: vec![Duration::from_millis(200); 2],
        timeout,
        jitter: 0.0,
        poll_interval: Duration::from_millis(50),
        ..DeliveryConfig::default()
    }
}

/// A localhost certificate and key from the installation's development CA.
fn dev_cert(app: &TestApp) -> (String, String) {
    let ca = mandato::cli::dev_ca(app.running.state.store()).expect("dev CA");
    let (cert, key) = ca.issue_localhost().expect("localhost certificate");
    (cert, key.expose().clone())
}

/// Writes an outbox event to `url` as if an older version (or the sandbox) had accepted it,
/// and wakes the worker. Answers the event id.
fn event_to(app: &TestApp, url: &str) -> String {
    event_of(app, COMMERCE, url)
}

/// `event_to` for one commerce's event.
fn event_of(app: &TestApp, commerce_code: &str, url: &str) -> String {
    let id = format!("evt_{}", uuid::Uuid::now_v7().simple());
    let created_at = mandato::clock::timestamp(app.clock_now());
    app.running
        .state
        .store()
        .write(|tx| {
            let commerce = commerces::by_code(tx, commerce_code)?.expect("the commerce");
            events::insert(
                tx,
                &events::NewEvent {
                    id: &id,
                    commerce_id: commerce.id,
                    mandate_seq: None,
                    installment_seq: None,
                    kind: "payment",
                    sequence: 1,
                    url: Some(url),
                    body: r#"{"event":"payment"}"#,
                    created_at: &created_at,
                },
            )?;
            Ok(())
        })
        .expect("event written");
    app.running.state.deliverer.wake();
    id
}

fn attempts(app: &TestApp, event_id: &str) -> Vec<AttemptRow> {
    app.running
        .state
        .store()
        .read(|c| {
            let (seq, _) = deliveries::event_by_id(c, event_id)?.expect("the event");
            Ok(deliveries::attempts_of(c, seq)?)
        })
        .expect("attempts")
}

/// The first attempt of the event, once logged (at most `limit` from now).
async fn first_attempt(app: &TestApp, event_id: &str, limit: Duration) -> AttemptRow {
    let deadline = Instant::now() + limit;
    loop {
        if let Some(a) = attempts(app, event_id).into_iter().next() {
            return a;
        }
        assert!(
            Instant::now() < deadline,
            "no attempt of {event_id} in {limit:?}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// What one hostile answer may cost the engine's process at most, in MiB. The process also
/// runs the other tests of this binary (two at a time), so what is measured is the growth from
/// just before the event is sent to the peak while it is handled; before the 64 KiB limit an
/// endless answer grew it by gigabytes.
const RSS_LIMIT_MIB: u64 = 300;

/// Samples the resident memory every 10 ms until told to stop; answers the peak.
fn watch_rss() -> (Arc<AtomicBool>, tokio::task::JoinHandle<u64>) {
    let stop = Arc::new(AtomicBool::new(false));
    let done = Arc::clone(&stop);
    let task = tokio::spawn(async move {
        let mut peak = resident_bytes("self") / (1024 * 1024);
        while !done.load(Ordering::SeqCst) {
            peak = peak.max(resident_bytes("self") / (1024 * 1024));
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        peak.max(resident_bytes("self") / (1024 * 1024))
    });
    (stop, task)
}

fn assert_hostile_excerpt(attempt: &AttemptRow) {
    let excerpt = attempt.response_excerpt.as_deref().expect("an excerpt");
    assert!(
        excerpt.len() <= MAX_EXCERPT && excerpt.len() > 1024,
        "excerpt of {} bytes",
        excerpt.len()
    );
    assert!(excerpt.starts_with(HOSTILE_MARK), "{excerpt:.80}");
}

#[tokio::test(flavor = "multi_thread")]
async fn an_endless_body_is_read_to_64_kib_then_the_connection_is_dropped() {
    let app = spawn_app_with(Options {
        delivery: delivery(Duration::from_secs(15)),
        ..Options::default()
    })
    .await;
    let (cert, key) = dev_cert(&app);
    let hostile = Hostile::start(&cert, &key, Misbehaviour::Endless(500)).await;
    let before = resident_bytes("self") / (1024 * 1024);
    let (stop, peak) = watch_rss();
    let event = event_to(&app, &hostile.url());
    let attempt = first_attempt(&app, &event, Duration::from_secs(60)).await;
    stop.store(true, Ordering::SeqCst);
    let peak = peak.await.unwrap();
    eprintln!(
        "endless body: RSS {before} MiB before, peak {peak} MiB, attempt {} ms",
        attempt.duration_ms
    );
    assert!(
        peak.saturating_sub(before) < RSS_LIMIT_MIB,
        "the engine's process grew from {before} MiB to {peak} MiB"
    );
    assert_eq!(attempt.status_code, Some(500));
    assert_eq!(attempt.outcome, "RETRY");
    assert!(attempt.error.is_none(), "{:?}", attempt.error);
    assert_hostile_excerpt(&attempt);
    assert!(
        attempt.duration_ms < 15_000,
        "took {} ms",
        attempt.duration_ms
    );
    // Dropped, not drained: the receiver's writes fail once the socket buffers are full.
    let deadline = Instant::now() + Duration::from_secs(10);
    while !hostile.cut_off.load(Ordering::SeqCst) {
        assert!(Instant::now() < deadline, "the connection stayed open");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(hostile.body_sent.load(Ordering::SeqCst) < 64 * 1024 * 1024);
}

/// One commerce's 200 events to eight black-holed ports (connections accepted, nothing ever
/// answered: each attempt holds its slot for the 15 s timeout) once took every sending slot, and
/// another commerce's event waited for them (56 s measured). A commerce past its share of the
/// slots leaves the rest to the others: the other commerce's event goes at once.
#[tokio::test(flavor = "multi_thread")]
async fn one_commerces_dead_receivers_do_not_delay_anothers_events() {
    let app = spawn_app_with(Options {
        delivery: delivery(Duration::from_secs(15)),
        ..Options::default()
    })
    .await;
    let mut holes = Vec::new();
    for _ in 0..8 {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        holes.push(format!(
            "https://localhost:{}/hooks",
            listener.local_addr().unwrap().port()
        ));
        tokio::spawn(async move {
            let mut held = Vec::new();
            while let Ok((tcp, _)) = listener.accept().await {
                held.push(tcp);
            }
        });
    }
    for n in 0..200 {
        event_of(&app, COMMERCE, &holes[n % holes.len()]);
    }
    // The black holes now hold what they can.
    tokio::time::sleep(Duration::from_secs(1)).await;
    let (cert, key) = dev_cert(&app);
    let answering = Hostile::start(&cert, &key, Misbehaviour::Sized(200, 2)).await;
    let started = Instant::now();
    let event = event_of(&app, OTHER_COMMERCE, &answering.url());
    let attempt = first_attempt(&app, &event, Duration::from_secs(10)).await;
    eprintln!(
        "another commerce's event, behind 200 to black holes: attempted after {:?}",
        started.elapsed()
    );
    assert_eq!(attempt.status_code, Some(200));
    assert_eq!(attempt.outcome, "DELIVERED");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_one_gigabyte_body_ends_the_attempt_well_within_the_budget() {
    let app = spawn_app_with(Options {
        delivery: delivery(Duration::from_secs(15)),
        ..Options::default()
    })
    .await;
    let (cert, key) = dev_cert(&app);
    let hostile = Hostile::start(&cert, &key, Misbehaviour::Sized(500, GIB)).await;
    let before = resident_bytes("self") / (1024 * 1024);
    let (stop, peak) = watch_rss();
    let event = event_to(&app, &hostile.url());
    let started = Instant::now();
    let attempt = first_attempt(&app, &event, Duration::from_secs(60)).await;
    let waited = started.elapsed();
    stop.store(true, Ordering::SeqCst);
    let peak = peak.await.unwrap();
    eprintln!(
        "1 GiB body: RSS {before} MiB before, peak {peak} MiB, attempt {} ms",
        attempt.duration_ms
    );
    assert!(
        peak.saturating_sub(before) < RSS_LIMIT_MIB,
        "the engine's process grew from {before} MiB to {peak} MiB"
    );
    assert_eq!(attempt.status_code, Some(500));
    assert_hostile_excerpt(&attempt);
    assert!(
        attempt.duration_ms < 15_000 && waited < Duration::from_secs(15),
        "attempt {} ms, logged after {waited:?}",
        attempt.duration_ms
    );
    let deadline = Instant::now() + Duration::from_secs(10);
    while !hostile.cut_off.load(Ordering::SeqCst) {
        assert!(Instant::now() < deadline, "the connection stayed open");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(hostile.body_sent.load(Ordering::SeqCst) < GIB / 16);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_trickling_body_ends_at_the_timeout_and_its_2xx_still_counts() {
    let timeout = Duration::from_secs(2);
    let app = spawn_app_with(Options {
        delivery: delivery(timeout),
        ..Options::default()
    })
    .await;
    let (cert, key) = dev_cert(&app);
    let hostile = Hostile::start(&cert, &key, Misbehaviour::Trickle).await;
    let event = event_to(&app, &hostile.url());
    let attempt = first_attempt(&app, &event, Duration::from_secs(30)).await;
    assert_eq!(attempt.status_code, Some(200));
    assert_eq!(attempt.outcome, "DELIVERED");
    let excerpt = attempt.response_excerpt.expect("the bytes that came");
    assert!(excerpt.chars().all(|c| c == 't'), "{excerpt}");
    // Cut at the timeout: neither before the status came nor long after the budget.
    assert!(
        attempt.duration_ms >= 1_000 && attempt.duration_ms < 15_000,
        "took {} ms",
        attempt.duration_ms
    );
    assert_eq!(hostile.requests.load(Ordering::SeqCst), 1);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_close_delimited_http_1_0_body_keeps_its_excerpt() {
    let app = spawn_app_with(Options {
        delivery: delivery(Duration::from_secs(15)),
        ..Options::default()
    })
    .await;
    let (cert, key) = dev_cert(&app);
    for (status, close_notify, outcome) in [
        (500, false, "RETRY"),
        (500, true, "RETRY"),
        (200, false, "DELIVERED"),
    ] {
        let body = "legacy receiver: queue full, come back later";
        let hostile = Hostile::start(
            &cert,
            &key,
            Misbehaviour::CloseDelimited {
                status,
                body,
                close_notify,
            },
        )
        .await;
        let event = event_to(&app, &hostile.url());
        let attempt = first_attempt(&app, &event, Duration::from_secs(30)).await;
        let case = format!("{status}, close_notify {close_notify}: {attempt:?}");
        assert_eq!(attempt.status_code, Some(i64::from(status)), "{case}");
        assert_eq!(attempt.outcome, outcome, "{case}");
        assert_eq!(attempt.response_excerpt.as_deref(), Some(body), "{case}");
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn the_real_https_receivers_endless_answer_costs_no_more() {
    let app = spawn_app_with(Options {
        delivery: delivery(Duration::from_secs(15)),
        ..Options::default()
    })
    .await;
    let (cert, key) = dev_cert(&app);
    let receiver = Receiver::start(&cert, &key).await;
    let sent = Arc::new(AtomicU64::new(0));
    receiver.otherwise(Answer::Endless(503, Arc::clone(&sent)));
    let before = resident_bytes("self") / (1024 * 1024);
    let (stop, peak) = watch_rss();
    let event = event_to(&app, &receiver.url("/hooks/payment"));
    let attempt = first_attempt(&app, &event, Duration::from_secs(60)).await;
    stop.store(true, Ordering::SeqCst);
    let peak = peak.await.unwrap();
    eprintln!(
        "endless body from the HTTPS receiver: RSS {before} MiB before, peak {peak} MiB, attempt {} ms",
        attempt.duration_ms
    );
    assert!(
        peak.saturating_sub(before) < RSS_LIMIT_MIB,
        "the engine's process grew from {before} MiB to {peak} MiB"
    );
    assert_eq!(attempt.status_code, Some(503));
    assert_hostile_excerpt(&attempt);
    assert!(attempt.duration_ms < 15_000);
    // The stream was abandoned: the body stops growing far short of its 4 GiB.
    tokio::time::sleep(Duration::from_millis(500)).await;
    let settled = sent.load(Ordering::SeqCst);
    tokio::time::sleep(Duration::from_millis(500)).await;
    let later = sent.load(Ordering::SeqCst);
    assert!(
        later < GIB / 16,
        "{later} bytes sent (from {settled} half a second earlier)"
    );
}

// ----- destinations -----

/// A production installation (the sandbox's JWE helper is absent there, so the password is
/// encrypted here), logged in, with customer `cust-1`.
async fn production(allow_private_webhooks: bool, timeout: Duration) -> TestApp {
    let mut app = spawn_app_with(Options {
        environment: Environment::Production,
        allow_private_webhooks,
        delivery: delivery(timeout),
        ..Options::default()
    })
    .await;
    let key = app.public_key().await;
    let jwe = mandato::auth::jwe::encrypt_password(PASSWORD, &key).expect("JWE");
    let reply = app
        .post(
            "/login",
            &json!({"username": app.commerce, "password": jwe}),
        )
        .await;
    reply.expect(200, "LOGIN_OK");
    app.token = Some(reply.body["payload"]["token"].as_str().unwrap().to_string());
    app.create_customer("cust-1", "12.345.678-5").await;
    app
}

fn mandate_with(app: &TestApp, id: &str, field: &str, url: &str) -> Value {
    let mut body = dynamic_body(app, "cust-1", id, &[("a", 1000, 5)]);
    body["urls"] = json!({
        "activationWebhook": "https://hooks.merchant.example/activation",
        "paymentWebhook": "https://hooks.merchant.example/payment",
    });
    body["urls"][field] = json!(url);
    body
}

/// The addresses of this machine and its networks, in the spellings a URL parser accepts.
const INTERNAL: [&str; 16] = [
    "https://127.0.0.1/h",
    "https://127.0.0.1:8443/h",
    "https://localhost/h",
    "https://LocalHost./h",
    "https://admin.localhost/h",
    "https://0.0.0.0/h",
    "https://2130706433/h",
    "https://0x7f000001/h",
    "https://0177.0.0.1/h",
    "https://127.1/h",
    "https://[::1]/h",
    "https://[::ffff:127.0.0.1]/h",
    "https://[fd00::5]/h",
    "https://10.1.2.3/h",
    "https://169.254.169.254/latest/meta-data/",
    "https://100.64.0.1/h",
];

#[tokio::test(flavor = "multi_thread")]
async fn production_refuses_webhook_urls_that_name_internal_addresses() {
    let app = production(false, Duration::from_secs(15)).await;
    for (i, url) in INTERNAL.iter().enumerate() {
        for field in ["activationWebhook", "paymentWebhook"] {
            let body = mandate_with(&app, &format!("M-{i}-{field}"), field, url);
            let reply = app.post("/mandate", &body).await;
            reply.expect(400, "WEBHOOK_URL_NOT_ALLOWED");
            assert_eq!(
                reply.error_fields(),
                [format!("urls.{field}")],
                "{url}: {}",
                reply.body
            );
            // Coarse: the refusal does not echo the address or how it was read.
            assert!(
                !reply.body.to_string().contains("127.0.0.1"),
                "{}",
                reply.body
            );
        }
    }
    // Names are judged when they resolve, at delivery.
    let body = mandate_with(
        &app,
        "M-public",
        "paymentWebhook",
        "https://hooks.merchant.example/p",
    );
    app.post("/mandate", &body)
        .await
        .expect(201, "MANDATE_CREATE_OK");

    let pdf = one_page_pdf();
    for url in [
        "https://127.0.0.1:9/sign",
        "https://[::1]/sign",
        "https://localhost/s",
    ] {
        let body = json!({
            "process": {"processName": "Contrato", "externalProcessId": "P-1"},
            "signatories": [{"userId": "cust-1", "order": 1, "type": "FES"}],
            "documents": [{"documentName": "c.pdf", "contentBase64": pdf,
                           "signatureData": [{"signatory": {"userId": "cust-1"}, "mode": "LAST_PAGE"}]}],
            "urls": {"callback": "https://merchant.example/listo", "webhook": url},
        });
        let reply = app.post("/signature", &body).await;
        reply.expect(400, "WEBHOOK_URL_NOT_ALLOWED");
        assert_eq!(reply.error_fields(), ["urls.webhook"], "{url}");
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn the_sandbox_and_the_on_premises_flag_accept_local_receivers() {
    let mut sandbox = spawn_app().await;
    sandbox.login().await;
    sandbox.create_customer("cust-1", "12.345.678-5").await;
    let on_premises = production(true, Duration::from_secs(15)).await;
    for app in [&sandbox, &on_premises] {
        for (i, url) in INTERNAL.iter().enumerate() {
            let body = mandate_with(app, &format!("M-{i}"), "paymentWebhook", url);
            app.post("/mandate", &body)
                .await
                .expect(201, "MANDATE_CREATE_OK");
        }
    }
}

fn one_page_pdf() -> String {
    use lopdf::{Document, Object, Stream, dictionary};
    let mut doc = Document::with_version("1.5");
    let pages = doc.new_object_id();
    let content = doc.add_object(Stream::new(lopdf::Dictionary::new(), b"".to_vec()));
    let page = doc.add_object(dictionary! {
        "Type" => "Page", "Parent" => pages, "Contents" => content,
        "MediaBox" => vec![Object::Integer(0), Object::Integer(0), Object::Integer(595), Object::Integer(842)],
    });
    doc.objects.insert(
        pages,
        Object::Dictionary(dictionary! {
            "Type" => "Pages", "Count" => 1, "Kids" => vec![Object::from(page)],
        }),
    );
    let catalog = doc.add_object(dictionary! { "Type" => "Catalog", "Pages" => pages });
    doc.trailer.set("Root", catalog);
    let mut out = Vec::new();
    doc.save_to(&mut out).unwrap();
    base64::Engine::encode(&base64::engine::general_purpose::STANDARD, out)
}

#[tokio::test(flavor = "multi_thread")]
async fn production_never_connects_to_internal_destinations_whatever_the_row_says() {
    let app = production(false, Duration::from_secs(15)).await;
    // A receiver on this machine that production would otherwise reach: its root is trusted
    // explicitly, so only the destination rule stands in the way.
    let (cert, key) = dev_cert(&app);
    trust_dev_ca(&app);
    let receiver = Receiver::start(&cert, &key).await;
    let port = receiver.addr.port();
    let urls = [
        // A name: refused after resolution, by the delivery client's resolver.
        receiver.url("/hooks/payment"),
        // Addresses written out: connected to without resolution, so checked at send time.
        format!("https://127.0.0.1:{port}/hooks"),
        format!("https://2130706433:{port}/hooks"),
        format!("https://[::ffff:127.0.0.1]:{port}/hooks"),
        format!("https://[::1]:{port}/hooks"),
    ];
    let ids: Vec<String> = urls.iter().map(|u| event_to(&app, u)).collect();
    for (url, id) in urls.iter().zip(&ids) {
        let attempt = first_attempt(&app, id, Duration::from_secs(30)).await;
        assert_eq!(
            attempt.error.as_deref(),
            Some("DESTINATION_NOT_ALLOWED"),
            "{url}: {attempt:?}"
        );
        assert_eq!(attempt.status_code, None, "{url}");
        assert_eq!(attempt.response_excerpt, None, "{url}");
        assert_eq!(attempt.outcome, "RETRY", "{url}");
    }
    // Retries are refused the same way; nothing ever arrived.
    tokio::time::sleep(Duration::from_millis(600)).await;
    for id in &ids {
        for a in attempts(&app, id) {
            assert_eq!(a.error.as_deref(), Some("DESTINATION_NOT_ALLOWED"));
        }
    }
    assert!(receiver.received().is_empty());
}

/// Trusts the development CA as an added root, as `mandato trust add-root` does.
fn trust_dev_ca(app: &TestApp) {
    let store = &app.running.state.store();
    let ca = mandato::cli::dev_ca(store).expect("dev CA");
    let root = mandato::notify::tls::parse_roots(&ca.cert_pem)
        .unwrap()
        .remove(0);
    store
        .write(|tx| {
            deliveries::add_trusted_root(
                tx,
                &root.pem,
                &root.fingerprint,
                &root.subject,
                "2026-01-01T00:00:00.000Z",
            )?;
            Ok(())
        })
        .expect("root added");
}

#[tokio::test(flavor = "multi_thread")]
async fn production_trusts_the_dev_ca_only_when_added_as_a_root() {
    // On premises: private destinations allowed, so TLS trust is what is left to check.
    let app = production(true, Duration::from_secs(5)).await;
    let (cert, key) = dev_cert(&app);
    let receiver = Receiver::start(&cert, &key).await;
    let refused = event_to(&app, &receiver.url("/hooks/payment"));
    let attempt = first_attempt(&app, &refused, Duration::from_secs(30)).await;
    let error = attempt.error.clone().unwrap_or_default();
    assert!(error.contains("UnknownIssuer"), "{attempt:?}");
    assert!(receiver.received().is_empty());

    trust_dev_ca(&app);
    // The worker reloads its roots within its poll interval.
    let trusted = event_to(&app, &receiver.url("/hooks/payment"));
    let got = receiver.wait_for(1, Duration::from_secs(10)).await;
    assert_eq!(got[0].header("webhook-id"), trusted);
    let attempt = first_attempt(&app, &trusted, Duration::from_secs(10)).await;
    assert_eq!(attempt.outcome, "DELIVERED");
}

/// A certificate for `names`, issued with the CA's key as stored.
fn issue(ca_cert: &str, ca_key: &str, names: &[&str]) -> (String, String) {
    let issuer =
        rcgen::Issuer::from_ca_cert_pem(ca_cert, rcgen::KeyPair::from_pem(ca_key).unwrap())
            .unwrap();
    let key = rcgen::KeyPair::generate().unwrap();
    let mut params =
        rcgen::CertificateParams::new(names.iter().map(|n| n.to_string()).collect::<Vec<_>>())
            .unwrap();
    params.use_authority_key_identifier_extension = true;
    (
        params.signed_by(&key, &issuer).unwrap().pem(),
        key.serialize_pem(),
    )
}

#[tokio::test(flavor = "multi_thread")]
async fn the_dev_ca_vouches_for_localhost_only() {
    let app = spawn_app_with(Options {
        delivery: delivery(Duration::from_secs(5)),
        ..Options::default()
    })
    .await;
    let ca = mandato::cli::dev_ca(app.running.state.store()).expect("dev CA");
    // A certificate that also claims another site: outside the CA's name constraints.
    let (cert, key) = issue(
        &ca.cert_pem,
        ca.key_pem.expose(),
        &["localhost", "bank.example"],
    );
    let overreaching = Receiver::start(&cert, &key).await;
    let event = event_to(&app, &overreaching.url("/hooks"));
    let attempt = first_attempt(&app, &event, Duration::from_secs(30)).await;
    let error = attempt.error.clone().unwrap_or_default();
    assert!(error.contains("NameConstraintViolation"), "{attempt:?}");
    assert!(overreaching.received().is_empty());

    let (cert, key) = issue(&ca.cert_pem, ca.key_pem.expose(), &["localhost"]);
    let local = Receiver::start(&cert, &key).await;
    let event = event_to(&app, &local.url("/hooks"));
    local.wait_for(1, Duration::from_secs(10)).await;
    assert_eq!(
        first_attempt(&app, &event, Duration::from_secs(10))
            .await
            .outcome,
        "DELIVERED"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn an_unconstrained_dev_ca_is_replaced_at_start() {
    let app = spawn_app_with(Options {
        delivery: delivery(Duration::from_secs(5)),
        ..Options::default()
    })
    .await;
    // A CA as made before name constraints, with a certificate it issued.
    let old_key = rcgen::KeyPair::generate().unwrap();
    let mut params = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
    params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Constrained(0));
    params
        .distinguished_name
        .push(rcgen::DnType::CommonName, "mandato local development CA");
    let old_cert = params.self_signed(&old_key).unwrap().pem();
    let old_key = old_key.serialize_pem();
    app.running
        .state
        .store()
        .write(|tx| {
            settings::set(tx, settings::DEV_CA_CERT, &old_cert)?;
            settings::set(tx, settings::DEV_CA_KEY, &old_key)?;
            Ok(())
        })
        .unwrap();
    let (issued_cert, issued_key) = issue(&old_cert, &old_key, &["localhost"]);

    let app = app
        .restarted(Options {
            delivery: delivery(Duration::from_secs(5)),
            ..Options::default()
        })
        .await;
    let (now_cert, _) = app
        .running
        .state
        .store()
        .read(|c| {
            Ok((
                settings::get(c, settings::DEV_CA_CERT)?.unwrap(),
                settings::get(c, settings::DEV_CA_KEY)?.unwrap(),
            ))
        })
        .unwrap();
    assert_ne!(now_cert, old_cert, "the old CA was kept");
    assert!(mandato::notify::tls::is_name_constrained(&now_cert));

    // What the old CA issued no longer verifies; what the new one issues does.
    let stale = Receiver::start(&issued_cert, &issued_key).await;
    let event = event_to(&app, &stale.url("/hooks"));
    let attempt = first_attempt(&app, &event, Duration::from_secs(30)).await;
    let error = attempt.error.clone().unwrap_or_default();
    assert!(error.contains("UnknownIssuer"), "{attempt:?}");
    assert!(stale.received().is_empty());
    let (cert, key) = dev_cert(&app);
    let fresh = Receiver::start(&cert, &key).await;
    let event = event_to(&app, &fresh.url("/hooks"));
    fresh.wait_for(1, Duration::from_secs(10)).await;
    assert_eq!(
        first_attempt(&app, &event, Duration::from_secs(10))
            .await
            .outcome,
        "DELIVERED"
    );
}

/// `mandato serve --environment production [--allow-private-webhooks]` as a real process.
fn serve_production(dir: &std::path::Path, allow_private: bool) -> (std::process::Child, String) {
    use std::io::BufRead;
    let mut args = vec![
        "serve",
        "--listen",
        "127.0.0.1:0",
        "--environment",
        "production",
    ];
    if allow_private {
        args.push("--allow-private-webhooks");
    }
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_mandato"))
        .arg("--data-dir")
        .arg(dir)
        .args(&args)
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("serve starts");
    let mut lines = std::io::BufReader::new(child.stderr.take().unwrap()).lines();
    let url = loop {
        let line = lines.next().expect("serve logs its URL").unwrap();
        if let Some(rest) = line.split("url=").nth(1) {
            break rest.split_whitespace().next().unwrap().to_string();
        }
    };
    std::thread::spawn(move || for _ in lines {});
    (child, url)
}

#[tokio::test(flavor = "multi_thread")]
async fn serve_allow_private_webhooks_lifts_the_rule_for_on_premises_receivers() {
    use crate::cli::{headers, mandato};
    for allow_private in [false, true] {
        let dir = tempfile::tempdir().unwrap();
        let data = dir.path();
        mandato(
            data,
            &[
                "commerce",
                "add",
                "--code",
                "76.123.456-0",
                "--name",
                "Gimnasio",
                "--password-stdin",
            ],
            Some("s3cret-pass\n"),
        );
        let key = mandato(data, &["apikey", "create"], None)["apiKey"]
            .as_str()
            .unwrap()
            .to_string();
        let (mut server, base) = serve_production(data, allow_private);
        let client = reqwest::Client::new();
        let api = |path: &str| format!("{base}/api/v1{path}");
        let public_key: Value = client
            .get(api("/.well-known/jwe-public-key"))
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        let jwe = mandato::auth::jwe::encrypt_password(
            "s3cret-pass",
            public_key["payload"]["publicKey"].as_str().unwrap(),
        )
        .unwrap();
        let login: Value = client
            .post(api("/login"))
            .headers(headers("76123456-0", &key))
            .json(&json!({"username": "76123456-0", "password": jwe}))
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        let token = login["payload"]["token"]
            .as_str()
            .expect("a token")
            .to_string();
        let created = client
            .post(api("/user"))
            .headers(headers("76123456-0", &key))
            .bearer_auth(&token)
            .json(&customer_body("cust-1", "12.345.678-5"))
            .send()
            .await
            .unwrap();
        assert_eq!(created.status(), 201);
        let mandate = client
            .post(api("/mandate"))
            .headers(headers("76123456-0", &key))
            .bearer_auth(&token)
            .json(&json!({
                "customer": {"userId": "cust-1"},
                "mandate": {"id": "M-1", "type": "DYNAMIC", "name": "Cuenta corriente",
                            "charges": {"currencyId": "CLP", "maxAmount": 100000}},
                "installments": [{"id": "a", "amount": 1000, "currencyId": "CLP",
                                  "installmentDueDate": "2031-01-06"}],
                "urls": {"paymentWebhook": "https://127.0.0.1:9/hooks/payment"}
            }))
            .send()
            .await
            .unwrap();
        let status = mandate.status();
        let body: Value = mandate.json().await.unwrap();
        if allow_private {
            assert_eq!(status, 201, "{body}");
        } else {
            assert_eq!(status, 400, "{body}");
            assert_eq!(body["name"], "WEBHOOK_URL_NOT_ALLOWED");
            assert_eq!(body["errors"][0]["field"], "urls.paymentWebhook");
        }
        server.kill().unwrap();
        server.wait().unwrap();
    }
}
