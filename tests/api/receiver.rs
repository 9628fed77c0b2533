//! A real HTTPS webhook receiver for the tests: rustls with a `localhost` certificate issued by
//! the installation's development CA. It records every request and answers from a script.
//! Its signature checks share no code with the engine: the Standard Webhooks header with plain
//! `hmac`, the body `signature` with a JCS canonicalization written here.

use std::collections::VecDeque;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use hmac::{Hmac, KeyInit, Mac};
use serde_json::Value;
use sha2::Sha256;

/// One request as the receiver saw it.
#[derive(Clone, Debug)]
pub struct Received {
    pub headers: HeaderMap,
    pub body: String,
    pub at: std::time::Instant,
}

impl Received {
    pub fn json(&self) -> Value {
        serde_json::from_str(&self.body).expect("the body is JSON")
    }

    pub fn header(&self, name: &str) -> &str {
        self.headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .unwrap_or("")
    }
}

/// How the receiver answers the next request.
#[derive(Clone, Debug)]
pub enum Answer {
    Status(u16),
    /// 429 or 503 with a `Retry-After` in seconds.
    RetryAfter(u16, u64),
    /// Waits this long before answering 200.
    Hang(Duration),
    /// This status with a body that does not end (it stops at 4 GiB, or when the engine hangs
    /// up). `sent` counts the body bytes handed to the connection.
    Endless(u16, Arc<std::sync::atomic::AtomicU64>),
    /// This status with this body (with a Content-Length).
    Body(u16, String),
    /// This status with this body sent chunked, without a Content-Length.
    Chunked(u16, String),
}

#[derive(Default)]
struct Inner {
    received: Vec<Received>,
    script: VecDeque<Answer>,
    /// What to answer once the script is used up.
    otherwise: Option<Answer>,
}

#[derive(Clone)]
pub struct Receiver {
    inner: Arc<Mutex<Inner>>,
    pub addr: SocketAddr,
}

impl Receiver {
    /// Starts on a free port with the given certificate and key (PEM).
    pub async fn start(cert_pem: &str, key_pem: &str) -> Receiver {
        let inner = Arc::new(Mutex::new(Inner::default()));
        let app = axum::Router::new()
            .fallback(receive)
            .with_state(Arc::clone(&inner));
        let _ = rustls::crypto::aws_lc_rs::default_provider().install_default();
        let config = axum_server::tls_rustls::RustlsConfig::from_pem(
            cert_pem.as_bytes().to_vec(),
            key_pem.as_bytes().to_vec(),
        )
        .await
        .expect("TLS config");
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.set_nonblocking(true).unwrap();
        let addr = listener.local_addr().unwrap();
        let server = axum_server::from_tcp_rustls(listener, config).expect("TLS listener");
        tokio::spawn(async move { server.serve(app.into_make_service()).await });
        Receiver { inner, addr }
    }

    pub fn url(&self, path: &str) -> String {
        format!("https://localhost:{}{path}", self.addr.port())
    }

    /// Answers these, in order, then `otherwise` (200 unless set).
    pub fn script(&self, answers: impl IntoIterator<Item = Answer>) {
        self.inner.lock().unwrap().script.extend(answers);
    }

    pub fn otherwise(&self, answer: Answer) {
        self.inner.lock().unwrap().otherwise = Some(answer);
    }

    pub fn received(&self) -> Vec<Received> {
        self.inner.lock().unwrap().received.clone()
    }

    /// Waits until at least `n` requests arrived (or panics after `limit`).
    pub async fn wait_for(&self, n: usize, limit: Duration) -> Vec<Received> {
        let deadline = tokio::time::Instant::now() + limit;
        loop {
            let got = self.received();
            if got.len() >= n {
                return got;
            }
            assert!(
                tokio::time::Instant::now() < deadline,
                "only {} of {n} webhooks arrived in {limit:?}",
                got.len()
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
}

async fn receive(
    State(inner): State<Arc<Mutex<Inner>>>,
    headers: HeaderMap,
    body: String,
) -> Response {
    let answer = {
        let mut inner = inner.lock().unwrap();
        inner.received.push(Received {
            headers,
            body,
            at: std::time::Instant::now(),
        });
        inner
            .script
            .pop_front()
            .or_else(|| inner.otherwise.clone())
            .unwrap_or(Answer::Status(200))
    };
    match answer {
        Answer::Status(code) => StatusCode::from_u16(code).unwrap().into_response(),
        Answer::RetryAfter(code, secs) => (
            StatusCode::from_u16(code).unwrap(),
            [("retry-after", secs.to_string())],
        )
            .into_response(),
        Answer::Hang(wait) => {
            tokio::time::sleep(wait).await;
            StatusCode::OK.into_response()
        }
        Answer::Body(code, text) => (StatusCode::from_u16(code).unwrap(), text).into_response(),
        Answer::Chunked(code, text) => (
            StatusCode::from_u16(code).unwrap(),
            axum::body::Body::new(ChunkedBody(Some(text))),
        )
            .into_response(),
        Answer::Endless(code, sent) => (
            StatusCode::from_u16(code).unwrap(),
            axum::body::Body::new(EndlessBody {
                left: 1 << 32,
                sent,
            }),
        )
            .into_response(),
    }
}

/// A finite body whose size is not told in advance, so it goes out chunked.
struct ChunkedBody(Option<String>);

impl hyper::body::Body for ChunkedBody {
    type Data = axum::body::Bytes;
    type Error = std::convert::Infallible;

    fn poll_frame(
        mut self: std::pin::Pin<&mut Self>,
        _: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<Result<hyper::body::Frame<Self::Data>, Self::Error>>> {
        std::task::Poll::Ready(
            self.0
                .take()
                .map(|text| Ok(hyper::body::Frame::data(text.into()))),
        )
    }
}

/// A response body of 64 KiB chunks, produced as fast as the client reads them.
struct EndlessBody {
    left: u64,
    sent: Arc<std::sync::atomic::AtomicU64>,
}

/// The start of every hostile body: what a receiver's internals might say.
pub const HOSTILE_MARK: &str = "internal-service-detail:";

impl hyper::body::Body for EndlessBody {
    type Data = axum::body::Bytes;
    type Error = std::convert::Infallible;

    fn poll_frame(
        mut self: std::pin::Pin<&mut Self>,
        _: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<Result<hyper::body::Frame<Self::Data>, Self::Error>>> {
        if self.left == 0 {
            return std::task::Poll::Ready(None);
        }
        let mut chunk = vec![b'x'; 64 * 1024];
        if self.sent.load(std::sync::atomic::Ordering::Relaxed) == 0 {
            chunk[..HOSTILE_MARK.len()].copy_from_slice(HOSTILE_MARK.as_bytes());
        }
        self.left = self.left.saturating_sub(chunk.len() as u64);
        self.sent
            .fetch_add(chunk.len() as u64, std::sync::atomic::Ordering::Relaxed);
        std::task::Poll::Ready(Some(Ok(hyper::body::Frame::data(chunk.into()))))
    }
}

fn key_bytes(secret: &str) -> Vec<u8> {
    STANDARD
        .decode(secret.trim_start_matches("whsec_"))
        .expect("whsec_ base64")
}

fn hmac(key: &[u8], message: &[u8]) -> Vec<u8> {
    let mut mac = Hmac::<Sha256>::new_from_slice(key).unwrap();
    mac.update(message);
    mac.finalize().into_bytes().to_vec()
}

/// Standard Webhooks: some `v1,<base64>` in the header is the HMAC of `id.timestamp.body`.
pub fn standard_signature_valid(received: &Received, secret: &str) -> bool {
    let id = received.header("webhook-id");
    let ts = received.header("webhook-timestamp");
    let expected = STANDARD.encode(hmac(
        &key_bytes(secret),
        format!("{id}.{ts}.{}", received.body).as_bytes(),
    ));
    received
        .header("webhook-signature")
        .split(' ')
        .filter_map(|s| s.strip_prefix("v1,"))
        .any(|s| s == expected)
}

/// The body `signature`: hex HMAC-SHA256 of the RFC 8785 form of the body without it.
pub fn body_signature_valid(received: &Received, secret: &str) -> bool {
    let mut body = received.json();
    let Some(Value::String(signature)) = body.as_object_mut().and_then(|m| m.remove("signature"))
    else {
        return false;
    };
    hex::encode(hmac(&key_bytes(secret), canonical(&body).as_bytes())) == signature
}

/// RFC 8785, written independently of the engine: keys sorted by UTF-16 code units, numbers in
/// ECMAScript's shortest round-trip form, strings with JSON's minimal escaping.
fn canonical(value: &Value) -> String {
    match value {
        Value::Null => "null".into(),
        Value::Bool(b) => b.to_string(),
        Value::Number(n) => {
            let text = n.to_string();
            match text.parse::<i64>() {
                Ok(i) => i.to_string(),
                Err(_) => {
                    let f: f64 = text.parse().unwrap();
                    if f.fract() == 0.0 && f.abs() < 1e21 {
                        format!("{}", f as i64)
                    } else {
                        format!("{f}")
                    }
                }
            }
        }
        Value::String(s) => {
            let mut out = String::from("\"");
            for c in s.chars() {
                match c {
                    '"' => out.push_str("\\\""),
                    '\\' => out.push_str("\\\\"),
                    '\n' => out.push_str("\\n"),
                    '\r' => out.push_str("\\r"),
                    '\t' => out.push_str("\\t"),
                    '\u{8}' => out.push_str("\\b"),
                    '\u{c}' => out.push_str("\\f"),
                    c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
                    c => out.push(c),
                }
            }
            out.push('"');
            out
        }
        Value::Array(items) => format!(
            "[{}]",
            items.iter().map(canonical).collect::<Vec<_>>().join(",")
        ),
        Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort_by_key(|k| k.encode_utf16().collect::<Vec<u16>>());
            let members: Vec<String> = keys
                .into_iter()
                .map(|k| {
                    format!(
                        "{}:{}",
                        canonical(&Value::String(k.clone())),
                        canonical(&map[k])
                    )
                })
                .collect();
            format!("{{{}}}", members.join(","))
        }
    }
}
