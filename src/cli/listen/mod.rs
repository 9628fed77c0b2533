//! Developer commands for integrators (sandbox installations): `mandato listen`, an HTTPS
//! receiver registered with the running engine as a lease, and `mandato events` (events.rs).
//!
//! The listener binds a free loopback port with a `localhost` certificate from the
//! installation's development CA (which the engine's delivery worker trusts), writes its lease
//! (commerce, URL, event types, expiry) and renews it while it runs. The engine sends it a copy
//! of every event of the commerce created meanwhile. Ctrl-C or SIGTERM removes the lease; a
//! listener killed outright leaves a lease that the engine stops using at its expiry.

pub mod events;

use std::net::IpAddr;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use serde_json::{Value, json};

use crate::clock::timestamp;
use crate::config::Config;
use crate::notify::signing::{sign_body, standard_webhooks_signature};
use crate::secret::Secret;
use crate::store::{Store, listen_leases};

/// How far a `webhook-timestamp` may be from this machine's clock (the Standard Webhooks
/// reference libraries' tolerance).
const TIMESTAMP_TOLERANCE_SECS: i64 = 5 * 60;

/// What `mandato listen` was asked for.
#[derive(Debug, Clone)]
pub struct ListenOptions {
    pub commerce: Option<String>,
    pub forward_to: Option<String>,
    /// Forward deliveries whose signatures do not verify too (by default only verified ones
    /// reach the integrator's receiver).
    pub forward_unverified: bool,
    /// Comma-separated kinds; `None`: every kind.
    pub events: Option<String>,
    pub lease_seconds: u64,
    pub json: bool,
}

/// The event kinds a listener may ask for.
pub const EVENT_TYPES: [&str; 3] = ["activation", "payment", "signature"];

/// The commerce to act for: the one named (by code), or the installation's only one.
pub fn resolve_commerce(store: &Store, code: Option<&str>) -> anyhow::Result<(i64, String)> {
    match code {
        Some(code) => {
            let commerce = store
                .read(|c| Ok(crate::store::commerces::by_code(c, code)?))
                .map_err(|e| anyhow::anyhow!("{e}"))?
                .ok_or_else(|| anyhow::anyhow!("no commerce has code {code}"))?;
            Ok((commerce.id, commerce.code))
        }
        None => store
            .read(|c| Ok(listen_leases::sole_commerce(c)?))
            .map_err(|e| anyhow::anyhow!("{e}"))?
            .ok_or_else(|| {
                anyhow::anyhow!("the installation has no commerce, or several: pass --commerce")
            }),
    }
}

/// `activation,payment` → the same, checked and without repeats; empty or absent → every kind.
/// A `trigger` scenario's name (`payment.paid`, `mandate.cancelled`) and a signature body's
/// `event` (`SIGNATURE_COMPLETED`) stand for their kind (`domain::event_kind`).
pub fn parse_types(text: Option<&str>) -> anyhow::Result<Option<String>> {
    let Some(text) = text.filter(|t| !t.trim().is_empty()) else {
        return Ok(None);
    };
    let mut types: Vec<&str> = Vec::new();
    for named in text.split(',').map(str::trim).filter(|t| !t.is_empty()) {
        let t = crate::domain::event_kind::kind_named(named).ok_or_else(|| {
            anyhow::anyhow!("unknown event type {named:?}: use activation, payment or signature")
        })?;
        if !types.contains(&t) {
            types.push(t);
        }
    }
    Ok(Some(types.join(",")))
}

/// A forwarding target: http or https, on this machine only (the exact body and signatures
/// go there, so never to another host).
pub fn parse_forward_to(text: &str) -> anyhow::Result<reqwest::Url> {
    let url = reqwest::Url::parse(text).with_context(|| format!("--forward-to {text:?}"))?;
    anyhow::ensure!(
        matches!(url.scheme(), "http" | "https"),
        "--forward-to must be an http:// or https:// URL"
    );
    let local = match url.host() {
        Some(url::Host::Domain(name)) => name.eq_ignore_ascii_case("localhost"),
        Some(url::Host::Ipv4(ip)) => IpAddr::V4(ip).is_loopback(),
        Some(url::Host::Ipv6(ip)) => IpAddr::V6(ip).is_loopback(),
        None => false,
    };
    anyhow::ensure!(
        local,
        "--forward-to must point at this machine (localhost or a loopback address)"
    );
    Ok(url)
}

struct Listener {
    store: Arc<Store>,
    commerce_id: i64,
    forward: Option<(reqwest::Url, reqwest::Client)>,
    forward_unverified: bool,
    json: bool,
}

/// Runs `mandato listen` until Ctrl-C or SIGTERM.
pub fn run(config: &Config, options: ListenOptions) -> anyhow::Result<()> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    runtime.block_on(listen(config, options))
}

async fn listen(config: &Config, options: ListenOptions) -> anyhow::Result<()> {
    let store = Arc::new(config.open_store()?);
    let (commerce_id, code) = resolve_commerce(&store, options.commerce.as_deref())?;
    let types = parse_types(options.events.as_deref())?;
    let forward_to = options
        .forward_to
        .as_deref()
        .map(parse_forward_to)
        .transpose()?;
    anyhow::ensure!(
        (2..=3600).contains(&options.lease_seconds),
        "--lease-seconds must be 2 to 3600"
    );
    let ca = crate::cli::dev_ca(&store)?;
    let (cert, key) = ca.issue_localhost()?;
    let forward = match forward_to {
        Some(url) => Some((url, forward_client(&ca.cert_pem)?)),
        None => None,
    };

    let _ = rustls::crypto::aws_lc_rs::default_provider().install_default();
    let tls = axum_server::tls_rustls::RustlsConfig::from_pem(
        cert.into_bytes(),
        key.expose().as_bytes().to_vec(),
    )
    .await
    .context("the listener's TLS configuration")?;
    let socket = std::net::TcpListener::bind("127.0.0.1:0").context("binding a loopback port")?;
    socket.set_nonblocking(true)?;
    let port = socket.local_addr()?.port();
    let url = format!("https://127.0.0.1:{port}/");
    let state = Arc::new(Listener {
        store: Arc::clone(&store),
        commerce_id,
        forward,
        forward_unverified: options.forward_unverified,
        json: options.json,
    });
    let app = axum::Router::new().fallback(receive).with_state(state);
    let handle = axum_server::Handle::new();
    let server = axum_server::from_tcp_rustls(socket, tls)?.handle(handle.clone());
    let serving = tokio::spawn(async move { server.serve(app.into_make_service()).await });

    let lease_id = crate::ids::new_id("lis");
    let lease = Duration::from_secs(options.lease_seconds);
    write_lease(
        &store,
        &lease_id,
        commerce_id,
        &url,
        types.as_deref(),
        lease,
    )?;
    eprintln!(
        "listening for {} events of commerce {code} at {url} (lease {lease_id}); Ctrl-C to stop",
        types.as_deref().unwrap_or("all")
    );

    // Renewed three times per lease period, so one late renewal never lets it lapse.
    let mut renew = tokio::time::interval(lease / 3);
    renew.tick().await;
    let shutdown = shutdown_signal();
    tokio::pin!(shutdown);
    let mut serving = serving;
    loop {
        tokio::select! {
            _ = &mut shutdown => break,
            ended = &mut serving => {
                eprintln!("error: the receiver stopped: {ended:?}");
                break;
            }
            _ = renew.tick() => {
                if let Err(e) = write_lease(&store, &lease_id, commerce_id, &url, types.as_deref(), lease) {
                    eprintln!("warning: could not renew the lease: {e:#}");
                }
            }
        }
    }
    handle.graceful_shutdown(Some(Duration::from_secs(2)));
    let removed = store.write(|tx| Ok(listen_leases::remove(tx, &lease_id)?));
    if let Err(e) = removed {
        eprintln!("warning: could not remove the lease: {e}");
    }
    eprintln!("stopped; lease {lease_id} removed");
    Ok(())
}

/// Renews the lease, or writes it again when the engine swept it (a pause longer than the
/// lease, a laptop asleep).
fn write_lease(
    store: &Store,
    id: &str,
    commerce_id: i64,
    url: &str,
    types: Option<&str>,
    lease: Duration,
) -> anyhow::Result<()> {
    let now = chrono::Utc::now();
    let expires_at = timestamp(now + chrono::Duration::from_std(lease)?);
    store
        .write(|tx| {
            if !listen_leases::renew(tx, id, &expires_at)? {
                listen_leases::insert(
                    tx,
                    &listen_leases::NewLease {
                        id,
                        commerce_id,
                        url,
                        event_types: types,
                        expires_at: &expires_at,
                        created_at: &timestamp(now),
                    },
                )?;
            }
            Ok(())
        })
        .map_err(|e| anyhow::anyhow!("{e}"))
}

fn forward_client(dev_ca_pem: &str) -> anyhow::Result<reqwest::Client> {
    Ok(reqwest::Client::builder()
        .tls_certs_merge(reqwest::Certificate::from_pem_bundle(
            dev_ca_pem.as_bytes(),
        )?)
        .timeout(Duration::from_secs(15))
        .redirect(reqwest::redirect::Policy::none())
        .no_proxy()
        .build()?)
}

async fn shutdown_signal() {
    let ctrl_c = tokio::signal::ctrl_c();
    #[cfg(unix)]
    {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut term) => {
                tokio::select! {
                    _ = ctrl_c => {},
                    _ = term.recv() => {},
                }
            }
            Err(_) => {
                let _ = ctrl_c.await;
            }
        }
    }
    #[cfg(not(unix))]
    let _ = ctrl_c.await;
}

/// Why a delivery's signatures do not hold, or `None` when both verify.
pub fn verify(
    headers: &HeaderMap,
    body: &[u8],
    secrets: &[Secret<String>],
    now: i64,
) -> Option<String> {
    let header = |name: &str| headers.get(name).and_then(|v| v.to_str().ok());
    let Ok(text) = std::str::from_utf8(body) else {
        return Some("the body is not UTF-8".into());
    };
    let Ok(parsed) = serde_json::from_str::<Value>(text) else {
        return Some("the body is not JSON".into());
    };
    let (Some(id), Some(ts), Some(signatures)) = (
        header("webhook-id"),
        header("webhook-timestamp"),
        header("webhook-signature"),
    ) else {
        return Some(
            "a webhook-id, webhook-timestamp or webhook-signature header is missing".into(),
        );
    };
    if parsed["eventId"].as_str() != Some(id) {
        return Some("webhook-id differs from the body's eventId".into());
    }
    let Ok(ts) = ts.parse::<i64>() else {
        return Some("webhook-timestamp is not a number".into());
    };
    if (now - ts).abs() > TIMESTAMP_TOLERANCE_SECS {
        return Some("webhook-timestamp is more than 5 minutes off".into());
    }
    let offered: Vec<&str> = signatures.split(' ').collect();
    let header_ok = secrets.iter().any(|secret| {
        let expected = standard_webhooks_signature(secret, id, ts, text);
        offered
            .iter()
            .any(|s| constant_time_eq(s.as_bytes(), expected.as_bytes()))
    });
    if !header_ok {
        return Some("webhook-signature does not match the commerce's secret".into());
    }
    let Some(signature) = parsed["signature"].as_str() else {
        return Some("the body has no signature".into());
    };
    let body_ok = secrets.iter().any(|secret| {
        sign_body(parsed.clone(), secret)["signature"]
            .as_str()
            .is_some_and(|s| constant_time_eq(s.as_bytes(), signature.as_bytes()))
    });
    if !body_ok {
        return Some("the body signature does not match the commerce's secret".into());
    }
    None
}

fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// Handles one delivery: verify, print, forward; the engine gets 200 whatever the outcome, so
/// that the copy is logged as delivered to this listener.
async fn receive(
    State(listener): State<Arc<Listener>>,
    headers: HeaderMap,
    body: Bytes,
) -> StatusCode {
    let now = chrono::Utc::now();
    let (store, commerce_id, at) = (
        Arc::clone(&listener.store),
        listener.commerce_id,
        timestamp(now),
    );
    let secrets = tokio::task::spawn_blocking(move || {
        store.read(|c| Ok(listen_leases::webhook_secrets(c, commerce_id, &at)?))
    })
    .await
    .ok()
    .and_then(|r| r.ok())
    .unwrap_or_default();
    let failure = verify(&headers, &body, &secrets, now.timestamp());
    let parsed: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    // A body that does not verify did not come from the engine (or was changed on the way):
    // the receiver behind the listener trusts what it is handed, so it is not handed that.
    let forwarded = match &listener.forward {
        Some((url, _)) if failure.is_some() && !listener.forward_unverified => {
            Some(Forwarded::Withheld(url.to_string()))
        }
        Some((url, client)) => Some(forward(client, url, &headers, body.clone()).await),
        None => None,
    };
    print_line(listener.json, &timestamp(now), &parsed, failure, forwarded);
    StatusCode::OK
}

/// What became of a forward: the target's status, or why none came.
enum Forwarded {
    Status(String, u16),
    Failed(String, String),
    /// Not forwarded: its signatures did not verify (and `--forward-unverified` was not given).
    Withheld(String),
}

async fn forward(
    client: &reqwest::Client,
    url: &reqwest::Url,
    headers: &HeaderMap,
    body: Bytes,
) -> Forwarded {
    let mut request = client.post(url.clone()).body(body);
    for name in [
        "content-type",
        "webhook-id",
        "webhook-timestamp",
        "webhook-signature",
    ] {
        if let Some(value) = headers.get(name) {
            request = request.header(name, value.as_bytes());
        }
    }
    match request.send().await {
        Ok(response) => Forwarded::Status(url.to_string(), response.status().as_u16()),
        Err(e) => Forwarded::Failed(url.to_string(), e.to_string()),
    }
}

fn safe(text: &str) -> std::borrow::Cow<'_, str> {
    crate::domain::text::terminal_safe(text)
}

fn print_line(
    json_mode: bool,
    at: &str,
    body: &Value,
    failure: Option<String>,
    forwarded: Option<Forwarded>,
) {
    let kind = body["event"].as_str().unwrap_or("?");
    let event_id = body["eventId"].as_str().unwrap_or("?");
    let mandate = body["product"]["internalId"].as_str();
    let process = body["process"]["internalId"].as_str();
    let sequence = body["sequence"].as_i64();
    if json_mode {
        let mut line = json!({
            "receivedAt": at,
            "eventId": event_id,
            "type": kind,
            "sequence": sequence,
            "verified": failure.is_none(),
            "failure": failure,
        });
        if let Some(m) = mandate {
            line["mandateInternalId"] = json!(m);
        }
        if let Some(p) = process {
            line["signatureInternalId"] = json!(p);
        }
        match forwarded {
            Some(Forwarded::Status(url, status)) => {
                line["forwarded"] = json!({"url": url, "status": status})
            }
            Some(Forwarded::Failed(url, error)) => {
                line["forwarded"] = json!({"url": url, "error": error})
            }
            Some(Forwarded::Withheld(url)) => {
                line["forwarded"] = json!({"url": url, "withheld": "unverified"})
            }
            None => {}
        }
        crate::cli::out(format_args!("{line}"));
    } else {
        // Everything but `at` comes from the request, signed or not: shown, never obeyed.
        let subject = safe(mandate.or(process).unwrap_or("-"));
        let (kind, event_id) = (safe(kind), safe(event_id));
        let sequence = sequence.map_or("-".to_string(), |s| s.to_string());
        let verdict = safe(failure.as_deref().unwrap_or("verified")).into_owned();
        let forwarded = match forwarded {
            Some(Forwarded::Status(url, status)) => format!(" -> {url} {status}"),
            Some(Forwarded::Failed(url, error)) => format!(" -> {url} failed: {}", safe(&error)),
            Some(Forwarded::Withheld(url)) => {
                format!(" -> {url} not forwarded (unverified; --forward-unverified sends it)")
            }
            None => String::new(),
        };
        crate::cli::out(format_args!(
            "{at}  {kind:<10} {subject}  seq {sequence}  {event_id}  {verdict}{forwarded}"
        ));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn delivery(secret: &Secret<String>, ts: i64) -> (HeaderMap, String) {
        let body = sign_body(
            json!({"event": "payment", "eventId": "evt_1", "sequence": 1, "amount": 10.5}),
            secret,
        )
        .to_string();
        let mut headers = HeaderMap::new();
        headers.insert("webhook-id", "evt_1".parse().unwrap());
        headers.insert("webhook-timestamp", ts.to_string().parse().unwrap());
        let signature = standard_webhooks_signature(secret, "evt_1", ts, &body);
        headers.insert("webhook-signature", signature.parse().unwrap());
        (headers, body)
    }

    #[test]
    fn both_signatures_are_checked_and_each_failure_says_why() {
        let secret = Secret::new("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw".to_string());
        let other = Secret::new("whsec_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=".to_string());
        let now = 1_800_000_000;
        let (headers, body) = delivery(&secret, now);
        assert_eq!(
            verify(
                &headers,
                body.as_bytes(),
                std::slice::from_ref(&secret),
                now
            ),
            None
        );
        // During a rotation the previous secret still verifies.
        assert_eq!(
            verify(
                &headers,
                body.as_bytes(),
                &[other.clone(), secret.clone()],
                now
            ),
            None
        );
        let why = |h: &HeaderMap, b: &str, s: &Secret<String>, at: i64| {
            verify(h, b.as_bytes(), std::slice::from_ref(s), at).unwrap()
        };
        assert!(why(&headers, &body, &other, now).starts_with("webhook-signature"));
        assert!(why(&headers, &body, &secret, now + 301).contains("5 minutes"));
        // A changed body: the header signature (over the raw body) fails first.
        let tampered = body.replace("10.5", "11");
        assert!(why(&headers, &tampered, &secret, now).starts_with("webhook-signature"));
        // A body re-signed in the header but not in its own field: the body signature fails.
        let mut reheaded = headers.clone();
        reheaded.insert(
            "webhook-signature",
            standard_webhooks_signature(&secret, "evt_1", now, &tampered)
                .parse()
                .unwrap(),
        );
        assert!(why(&reheaded, &tampered, &secret, now).starts_with("the body signature"));
        let mut no_id = headers.clone();
        no_id.remove("webhook-id");
        assert!(why(&no_id, &body, &secret, now).contains("missing"));
        assert_eq!(
            why(&headers, "not json", &secret, now),
            "the body is not JSON"
        );
    }

    #[test]
    fn forwarding_stays_on_this_machine_and_types_are_checked() {
        for ok in [
            "http://localhost:3000/hooks",
            "https://127.0.0.1:8443/",
            "http://[::1]:9000/x",
        ] {
            assert!(parse_forward_to(ok).is_ok(), "{ok}");
        }
        for refused in [
            "http://example.com/hooks",
            "ftp://localhost/x",
            "http://10.0.0.1/",
            "not a url",
        ] {
            assert!(parse_forward_to(refused).is_err(), "{refused}");
        }
        assert_eq!(parse_types(None).unwrap(), None);
        assert_eq!(
            parse_types(Some("payment, activation,payment"))
                .unwrap()
                .as_deref(),
            Some("payment,activation")
        );
        assert!(parse_types(Some("payment,refund")).is_err());
        // `trigger`'s scenario names stand for their kinds.
        assert_eq!(
            parse_types(Some("payment.paid,payment.rejected"))
                .unwrap()
                .as_deref(),
            Some("payment")
        );
        assert!(parse_types(Some("refund.paid")).is_err());
    }
}
