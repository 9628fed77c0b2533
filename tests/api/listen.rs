//! `mandato listen` and `mandato events`, run as real processes beside a real `mandato serve`:
//! the listener gets each new event, checks both signatures, forwards the exact body and
//! headers to a plain-http receiver here, and its copy is logged as a LISTEN attempt that
//! leaves the event's own delivery alone; a killed listener's lease expires.

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::http::HeaderMap;
use reqwest::Method;
use serde_json::{Value, json};

use crate::cli::{assert_refused, mandato};
use crate::process::{Api, Server, install, kill, serve_logged, stop};
use crate::receiver::{Answer, Received, Receiver, standard_signature_valid};

const BIN: &str = env!("CARGO_BIN_EXE_mandato");
const CODE: &str = "76123456-0";
const PASSWORD: &str = "correct horse battery";

/// A plain-http receiver that records every request and answers 202.
#[derive(Clone, Default)]
struct Plain(Arc<Mutex<Vec<Received>>>);

impl Plain {
    async fn start(&self) -> String {
        let seen = self.clone();
        let app = axum::Router::new().fallback(move |headers: HeaderMap, body: String| {
            let seen = seen.clone();
            async move {
                seen.0.lock().unwrap().push(Received {
                    headers,
                    body,
                    at: std::time::Instant::now(),
                });
                axum::http::StatusCode::ACCEPTED
            }
        });
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(async move { axum::serve(listener, app).await });
        format!("http://127.0.0.1:{}/forwarded", addr.port())
    }

    fn received(&self) -> Vec<Received> {
        self.0.lock().unwrap().clone()
    }
}

/// A running `mandato listen`: its stdout lines arrive on a channel.
struct Listen {
    child: Child,
    lines: std::sync::mpsc::Receiver<String>,
}

impl Listen {
    /// Starts it and waits until its lease is written (it says so on stderr).
    fn start(data: &std::path::Path, extra: &[&str]) -> Listen {
        let mut child = Command::new(BIN)
            .arg("--data-dir")
            .arg(data)
            .args(["--json", "listen", "--lease-seconds", "3"])
            .args(extra)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("listen starts");
        let mut errors = BufReader::new(child.stderr.take().unwrap()).lines();
        let first = errors
            .next()
            .expect("listen says where it listens")
            .unwrap();
        assert!(first.starts_with("listening"), "{first}");
        std::thread::spawn(move || for _ in errors {});
        let (tx, lines) = std::sync::mpsc::channel();
        let out = BufReader::new(child.stdout.take().unwrap());
        std::thread::spawn(move || {
            for line in out.lines().map_while(Result::ok) {
                let _ = tx.send(line);
            }
        });
        Listen { child, lines }
    }

    async fn next_line(&self) -> Value {
        for _ in 0..400 {
            if let Ok(line) = self.lines.try_recv() {
                return serde_json::from_str(&line)
                    .unwrap_or_else(|e| panic!("not one JSON object ({e}): {line}"));
            }
            tokio::time::sleep(Duration::from_millis(25)).await;
        }
        panic!("listen printed nothing in 10 s");
    }
}

impl Drop for Listen {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

fn db(data: &std::path::Path) -> rusqlite::Connection {
    rusqlite::Connection::open(data.join("mandato.db")).unwrap()
}

/// The running listener's URL, and a client that trusts its certificate: a sender that is
/// not the engine.
fn straight_to_the_listener(data: &std::path::Path) -> (String, reqwest::Client) {
    let url: String = db(data)
        .query_row("SELECT url FROM listen_leases", [], |r| r.get(0))
        .unwrap();
    let ca = std::fs::read(data.join("tls").join("mandato-dev-ca.pem")).unwrap();
    let client = reqwest::Client::builder()
        .tls_certs_merge(reqwest::Certificate::from_pem_bundle(&ca).unwrap())
        .build()
        .unwrap();
    (url, client)
}

fn leases(data: &std::path::Path) -> i64 {
    db(data)
        .query_row("SELECT count(*) FROM listen_leases", [], |r| r.get(0))
        .unwrap()
}

struct World {
    _dir: tempfile::TempDir,
    data: std::path::PathBuf,
    _server: Server,
    api: Api,
    receiver: Receiver,
    secret: String,
    paid: usize,
}

/// An installation with `serve` running, a customer, and mandate M-1 of 10 installments whose
/// own webhooks go to an HTTPS receiver that always answers 500.
async fn world() -> World {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().to_path_buf();
    let installation = install(&data, CODE, PASSWORD);
    let receiver = Receiver::start(&installation.cert_pem, &installation.key_pem).await;
    receiver.otherwise(Answer::Status(500));
    let (server, base) = serve_logged(&data, &[], &data.join("serve.log"));
    let mut api = Api::new(base, installation.api_key.clone(), CODE);
    api.login(PASSWORD).await;
    api.call(
        Method::POST,
        "/user",
        Some(json!({"customer": {"userId": "u1", "identificationDocument": {"type": "RUT", "number": "12.345.678-5"},
            "personalInformation": {"firstName": "Ana", "lastName": "Pérez"}, "contacts": {"email": "ana@example.cl"}}})),
    )
    .await;
    let due = (chrono::Utc::now() + chrono::Duration::days(5))
        .date_naive()
        .to_string();
    let installments: Vec<Value> = (0..10)
        .map(|i| json!({"id": format!("i{i}"), "amount": 1000, "currencyId": "CLP", "installmentDueDate": due}))
        .collect();
    api.call(
        Method::POST,
        "/mandate",
        Some(json!({"customer": {"userId": "u1"},
           "mandate": {"id": "M-1", "type": "DYNAMIC", "name": "Escucha", "charges": {"currencyId": "CLP"}},
           "installments": installments,
           "urls": {"paymentWebhook": receiver.url("/pay"), "activationWebhook": receiver.url("/act")}})),
    )
    .await;
    World {
        _dir: dir,
        data,
        _server: server,
        api,
        receiver,
        secret: installation.webhook_secret,
        paid: 0,
    }
}

impl World {
    /// Pays the next installment: one new payment event.
    async fn pay(&mut self) {
        let today = chrono::Utc::now()
            .with_timezone(&chrono_tz::America::Santiago)
            .date_naive();
        let id = format!("i{}", self.paid);
        self.paid += 1;
        self.api
            .call(
                Method::PUT,
                "/installments/status/change",
                Some(json!({"product": {"id": "M-1"}, "installments": {"ids": [id]}, "action": "PAYMENT",
                            "payment": {"date": today.to_string(), "amount": 1000, "currencyId": "CLP"}})),
            )
            .await;
    }

    async fn event(&self, event_id: &str) -> Value {
        self.api
            .call(Method::GET, &format!("/events/{event_id}"), None)
            .await["payload"]
            .clone()
    }

    /// Polls the event until `done` holds (or panics after 15 s).
    async fn wait_event(&self, event_id: &str, done: impl Fn(&Value) -> bool) -> Value {
        for _ in 0..600 {
            let e = self.event(event_id).await;
            if done(&e) {
                return e;
            }
            tokio::time::sleep(Duration::from_millis(25)).await;
        }
        panic!(
            "event {event_id} never got there: {}",
            self.event(event_id).await
        );
    }

    async fn newest_event(&self) -> Value {
        self.api.call(Method::GET, "/events?limit=1", None).await["payload"]["items"][0].clone()
    }
}

fn kinds(event: &Value) -> Vec<String> {
    event["attemptLog"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["kind"].as_str().unwrap().to_string())
        .collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn listen_verifies_forwards_and_leaves_the_events_own_delivery_alone() {
    let mut w = world().await;
    let plain = Plain::default();
    let forward_to = plain.start().await;
    // One commerce only: no --commerce needed.
    let listen = Listen::start(&w.data, &["--forward-to", &forward_to]);
    assert_eq!(leases(&w.data), 1);
    w.pay().await;

    let line = listen.next_line().await;
    let event_id = line["eventId"].as_str().unwrap().to_string();
    assert_eq!(line["type"], "payment", "{line}");
    assert_eq!(line["verified"], true, "{line}");
    assert!(line["failure"].is_null(), "{line}");
    assert_eq!(line["sequence"], 1);
    assert!(
        line["mandateInternalId"]
            .as_str()
            .unwrap()
            .starts_with("man_")
    );
    assert_eq!(line["forwarded"]["status"], 202, "{line}");

    // The forward carried the exact stored body and the Standard Webhooks headers.
    let forwarded = plain.received();
    assert_eq!(forwarded.len(), 1);
    let stored: String = db(&w.data)
        .query_row("SELECT body FROM events WHERE id = ?1", [&event_id], |r| {
            r.get(0)
        })
        .unwrap();
    assert_eq!(forwarded[0].body, stored, "byte for byte");
    assert_eq!(forwarded[0].header("webhook-id"), event_id);
    assert_eq!(forwarded[0].header("content-type"), "application/json");
    assert!(standard_signature_valid(&forwarded[0], &w.secret));

    // The copy is a LISTEN attempt; the event's own receiver keeps failing, so it stays PENDING.
    let e = w
        .wait_event(&event_id, |e| {
            kinds(e).contains(&"LISTEN".to_string()) && kinds(e).contains(&"INITIAL".to_string())
        })
        .await;
    let log = e["attemptLog"].as_array().unwrap();
    assert_eq!(e["attempts"], log.len());
    let copy = log.iter().find(|a| a["kind"] == "LISTEN").unwrap();
    assert_eq!(copy["httpStatus"], 200);
    assert_eq!(copy["outcome"], "DELIVERED");
    assert_eq!(
        e["status"], "PENDING",
        "the copy delivered nothing of its own: {e}"
    );
    assert!(e["nextAttemptAt"].is_string());
    let own = log.iter().find(|a| a["kind"] == "INITIAL").unwrap();
    assert_eq!(own["httpStatus"], 500);
    assert!(!w.receiver.received().is_empty());

    // A delivery that does not come from the engine: the line says which signature failed.
    let (listen_url, client) = straight_to_the_listener(&w.data);
    let forged = forwarded[0]
        .body
        .replace("\"amount\":1000", "\"amount\":9000");
    assert_ne!(forged, forwarded[0].body);
    let answer = client
        .post(&listen_url)
        .header("content-type", "application/json")
        .header("webhook-id", &event_id)
        .header(
            "webhook-timestamp",
            chrono::Utc::now().timestamp().to_string(),
        )
        .header(
            "webhook-signature",
            forwarded[0].header("webhook-signature"),
        )
        .body(forged)
        .send()
        .await
        .unwrap();
    assert!(answer.status().is_success());
    let line = listen.next_line().await;
    assert_eq!(line["verified"], false, "{line}");
    assert!(
        line["failure"]
            .as_str()
            .unwrap()
            .contains("webhook-signature"),
        "{line}"
    );
    // ... and it is not handed on: the receiver behind the listener sees only verified bodies.
    assert_eq!(line["forwarded"]["withheld"], "unverified", "{line}");
    assert_eq!(
        plain.received().len(),
        1,
        "the forged body was not forwarded"
    );

    // Ctrl-C's twin, SIGTERM: the listener ends cleanly and its lease goes with it.
    let mut listen = listen;
    stop(&mut listen.child);
    assert_eq!(leases(&w.data), 0);
}

/// A body nobody signed, full of terminal escape sequences (a window title, the clipboard, a
/// direction override, a forged line): the text line shows them escaped, and nothing of them
/// reaches the terminal as control characters.
#[tokio::test(flavor = "multi_thread")]
async fn listen_shows_escape_sequences_instead_of_running_them() {
    let w = world().await;
    let mut child = Command::new(BIN)
        .arg("--data-dir")
        .arg(&w.data)
        .args(["listen", "--lease-seconds", "3"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("listen starts");
    let mut errors = BufReader::new(child.stderr.take().unwrap()).lines();
    let first = errors.next().unwrap().unwrap();
    assert!(first.starts_with("listening"), "{first}");
    std::thread::spawn(move || for _ in errors {});
    let (listen_url, client) = straight_to_the_listener(&w.data);
    let hostile = json!({
        "event": "payment\u{1b}]0;owned\u{7}",
        "eventId": "evt_\u{1b}]52;c;Y3VybCBldmlsLnNoIHwgc2g=\u{7}",
        "product": {"internalId": "man_\u{202e}gnp.exe\nforged line"},
        "sequence": 1
    });
    let answer = client
        .post(&listen_url)
        .header("content-type", "application/json")
        .body(hostile.to_string())
        .send()
        .await
        .unwrap();
    assert!(answer.status().is_success());
    let mut out = BufReader::new(child.stdout.take().unwrap());
    let mut line = String::new();
    out.read_line(&mut line).unwrap();
    let _ = child.kill();
    let _ = child.wait();
    assert!(
        !line.trim_end_matches('\n').chars().any(char::is_control),
        "a control character reached the terminal: {line:?}"
    );
    assert!(!line.contains('\u{202e}'), "{line:?}");
    for shown in [
        "\\u{001B}]0;owned\\u{0007}",
        "\\u{001B}]52;c;",
        "\\u{202E}gnp.exe\\u{000A}forged line",
    ] {
        assert!(line.contains(shown), "{shown} in {line:?}");
    }
    assert!(
        line.contains("webhook-signature") || line.contains("missing"),
        "{line:?}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_killed_listeners_lease_expires_and_filters_hold() {
    let mut w = world().await;
    // Only activation events: a payment is not sent to this listener.
    let mut only_activations =
        Listen::start(&w.data, &["--commerce", CODE, "--events", "activation"]);
    w.pay().await;
    let paid = w.newest_event().await;
    let paid_id = paid["eventId"].as_str().unwrap().to_string();
    w.wait_event(&paid_id, |e| kinds(e).contains(&"INITIAL".to_string()))
        .await;
    kill(&mut only_activations.child);

    let mut listen = Listen::start(&w.data, &[]);
    w.pay().await;
    let line = listen.next_line().await;
    assert_eq!(line["verified"], true, "{line}");
    // Killed without a chance to remove its lease: the lease outlives it until it expires.
    kill(&mut listen.child);
    assert!(leases(&w.data) >= 1);
    tokio::time::sleep(Duration::from_millis(3_500)).await;

    w.pay().await;
    let after = w.newest_event().await;
    let after_id = after["eventId"].as_str().unwrap().to_string();
    let e = w
        .wait_event(&after_id, |e| kinds(e).contains(&"INITIAL".to_string()))
        .await;
    // Give a copy every chance to be (wrongly) attempted.
    tokio::time::sleep(Duration::from_millis(1_500)).await;
    let e2 = w.event(&after_id).await;
    assert!(!kinds(&e2).contains(&"LISTEN".to_string()), "{e2}");
    assert!(!kinds(&e).contains(&"LISTEN".to_string()));
    let queued: i64 = db(&w.data)
        .query_row("SELECT count(*) FROM listen_deliveries", [], |r| r.get(0))
        .unwrap();
    assert_eq!(queued, 0);
    assert_eq!(leases(&w.data), 0, "expired leases are swept");
    // The filtered listener never got the payment.
    let paid = w.event(&paid_id).await;
    assert!(!kinds(&paid).contains(&"LISTEN".to_string()), "{paid}");
}

#[tokio::test(flavor = "multi_thread")]
async fn events_lists_follows_and_resends() {
    let mut w = world().await;
    w.pay().await;
    w.pay().await;
    let listed = mandato(&w.data, &["events", "--limit", "5"], None);
    let items = listed["items"].as_array().unwrap();
    assert_eq!(items.len(), 2, "{listed}");
    assert_eq!(items[0]["sequence"], 2, "newest first");
    assert_eq!(items[1]["sequence"], 1);
    let first = items[1]["eventId"].as_str().unwrap().to_string();
    let before = kinds(&w.event(&first).await).len();

    let resent = mandato(&w.data, &["events", "resend", &first], None);
    assert_eq!(resent, json!({"eventId": first, "scheduled": true}));
    w.wait_event(&first, |e| kinds(e).contains(&"MANUAL".to_string()))
        .await;
    assert!(kinds(&w.event(&first).await).len() > before);

    // --follow prints the recent ones, then each new event as it is written.
    let mut follow = Command::new(BIN)
        .arg("--data-dir")
        .arg(&w.data)
        .args(["--json", "events", "--follow", "--limit", "1"])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    let out = BufReader::new(follow.stdout.take().unwrap());
    std::thread::spawn(move || {
        for line in out.lines().map_while(Result::ok) {
            let _ = tx.send(line);
        }
    });
    let recv = |rx: &std::sync::mpsc::Receiver<String>| -> Value {
        serde_json::from_str(&rx.recv_timeout(Duration::from_secs(10)).unwrap()).unwrap()
    };
    assert_eq!(recv(&rx)["sequence"], 2);
    w.pay().await;
    let new = recv(&rx);
    assert_eq!(new["sequence"], 3);
    assert_eq!(new["type"], "payment");
    kill(&mut follow);

    let unknown = Command::new(BIN)
        .arg("--data-dir")
        .arg(&w.data)
        .args(["events", "resend", "evt_unknown"])
        .output()
        .unwrap();
    assert!(!unknown.status.success());
}

/// The shortest way to a verified webhook: a commerce with no webhook URL of its own, a
/// listener, and `mandato trigger payment.paid`. The trigger's events reach the listener, signed
/// and verified; without a listener the trigger says how to get one.
#[tokio::test(flavor = "multi_thread")]
async fn trigger_without_a_webhook_url_reaches_a_running_listener() {
    let w = world().await;
    let refused = assert_refused(&w.data, &["trigger", "payment.paid"], "NO_WEBHOOK_URL");
    assert!(refused.contains("mandato listen"), "{refused}");

    let listen = Listen::start(&w.data, &[]);
    let played = mandato(&w.data, &["trigger", "payment.paid"], None);
    assert!(played["webhookUrl"].is_null(), "{played}");
    let made: Vec<String> = played["events"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["eventId"].as_str().unwrap().to_string())
        .collect();
    assert!(!made.is_empty(), "{played}");
    let mut seen = Vec::new();
    while seen.len() < made.len() {
        let line = listen.next_line().await;
        assert_eq!(line["verified"], true, "{line}");
        seen.push(line["eventId"].as_str().unwrap().to_string());
    }
    seen.sort();
    let mut made = made;
    made.sort();
    assert_eq!(seen, made, "every event the trigger made, and only those");
}
