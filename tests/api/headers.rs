//! The common headers (CONTRACT 2): each one missing or malformed is named; credentials are
//! 403; correlationIds cannot be replayed; every request is audited without secrets.

use reqwest::Method;
use serde_json::json;

use crate::helpers::*;

const HEADERS: [&str; 8] = [
    "country",
    "commerce",
    "channel",
    "requestDateTime",
    "correlationId",
    "processId",
    "salesExecutiveId",
    "x-api-key",
];

#[tokio::test(flavor = "multi_thread")]
async fn each_missing_header_is_named() {
    let mut app = spawn_app().await;
    app.login().await;
    for header in HEADERS {
        let reply = app
            .request_with(Method::GET, "/mandate/id/none", None, |h| {
                h.retain(|(n, _)| n != header)
            })
            .await;
        reply.expect(400, "VALIDATION_ERROR");
        assert_eq!(
            reply.error_fields(),
            vec![format!("header.{header}")],
            "missing {header}"
        );
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn every_malformed_header_is_listed_at_once() {
    let app = spawn_app().await;
    let reply = app
        .request_with(Method::POST, "/login", Some(&json!({})), |h| {
            for (name, value) in h.iter_mut() {
                match name.as_str() {
                    "country" => *value = "AR".into(),
                    "requestDateTime" => *value = "yesterday".into(),
                    "correlationId" => *value = "not-a-uuid".into(),
                    "processId" => *value = "OTHER".into(),
                    "channel" => *value = "x".repeat(65),
                    "salesExecutiveId" => *value = " ".into(),
                    _ => {}
                }
            }
        })
        .await;
    reply.expect(400, "VALIDATION_ERROR");
    let mut fields = reply.error_fields();
    fields.sort();
    assert_eq!(
        fields,
        [
            "header.channel",
            "header.correlationId",
            "header.country",
            "header.processId",
            "header.requestDateTime",
            "header.salesExecutiveId"
        ]
    );
    assert!(
        reply.body["correlationId"].is_null(),
        "an invalid correlationId is not echoed"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn request_time_must_be_within_five_minutes() {
    let app = spawn_app().await;
    for (offset_secs, ok) in [(-290, true), (290, true), (-310, false), (400, false)] {
        let at = (app.clock_now() + chrono::Duration::seconds(offset_secs)).to_rfc3339();
        let reply = app
            .request_with(Method::GET, "/.well-known/jwe-public-key", None, |_| {})
            .await;
        reply.expect(200, "JWE_PUBLIC_KEY_OK");
        let reply = app
            .request_with(Method::POST, "/login", Some(&json!({})), |h| {
                set(h, "requestDateTime", &at)
            })
            .await;
        if ok {
            // Headers pass; the empty body is what fails.
            assert_eq!(
                reply.error_fields(),
                ["username", "password"],
                "offset {offset_secs}"
            );
        } else {
            assert_eq!(
                reply.error_fields(),
                ["header.requestDateTime"],
                "offset {offset_secs}"
            );
            assert_eq!(reply.body["errors"][0]["code"], "CLOCK_SKEW");
        }
    }
}

pub fn set(headers: &mut [(String, String)], name: &str, value: &str) {
    for (n, v) in headers.iter_mut() {
        if n == name {
            *v = value.to_string();
        }
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn unknown_api_key_or_commerce_is_forbidden() {
    let mut app = spawn_app().await;
    app.login().await;
    let reply = app
        .request_with(Method::GET, "/mandate/id/x", None, |h| {
            set(h, "x-api-key", "mk_unknown")
        })
        .await;
    reply.expect(403, "INVALID_API_KEY");
    let reply = app
        .request_with(Method::GET, "/mandate/id/x", None, |h| {
            set(h, "commerce", "99999999-9")
        })
        .await;
    reply.expect(403, "UNKNOWN_COMMERCE");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_revoked_or_foreign_key_is_forbidden() {
    let app = spawn_app().await;
    let store = &app.running.state.store();
    let limited = mandato::auth::api_key::generate();
    store
        .write(|tx| {
            mandato::store::commerces::insert_api_key(
                tx,
                &limited.prefix,
                &limited.hash,
                &[OTHER_COMMERCE.to_string()],
                "2026-01-01T00:00:00.000Z",
            )
        })
        .unwrap();
    let key = limited.key.expose().clone();
    let reply = app
        .request_with(Method::POST, "/login", Some(&json!({})), |h| {
            set(h, "x-api-key", &key)
        })
        .await;
    reply.expect(403, "API_KEY_NOT_ALLOWED");
    store
        .write(|tx| {
            mandato::store::commerces::revoke_api_key(
                tx,
                &limited.prefix,
                "2026-01-02T00:00:00.000Z",
            )
        })
        .unwrap();
    let reply = app
        .request_with(Method::POST, "/login", Some(&json!({})), |h| {
            set(h, "x-api-key", &key)
        })
        .await;
    reply.expect(403, "INVALID_API_KEY");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_correlation_id_cannot_be_reused() {
    let mut app = spawn_app().await;
    app.login().await;
    let id = uuid::Uuid::new_v4().to_string();
    let first = app
        .request_with(Method::GET, "/mandate/id/none", None, |h| {
            set(h, "correlationId", &id)
        })
        .await;
    first.expect(404, "MANDATE_NOT_FOUND");
    assert_eq!(first.headers["correlationId"], id.as_str());
    assert_eq!(first.body["correlationId"], id.as_str());
    let again = app
        .request_with(Method::GET, "/mandate/id/none", None, |h| {
            set(h, "correlationId", &id)
        })
        .await;
    again.expect(400, "CORRELATION_ID_REUSED");
    assert_eq!(again.error_fields(), ["header.correlationId"]);
    // The same UUID in capitals is the same id.
    let upper = id.to_ascii_uppercase();
    app.request_with(Method::GET, "/mandate/id/none", None, |h| {
        set(h, "correlationId", &upper)
    })
    .await
    .expect(400, "CORRELATION_ID_REUSED");
    // Still refused once written to the database.
    app.running.state.audit.flush();
    let later = app
        .request_with(Method::GET, "/mandate/id/none", None, |h| {
            set(h, "correlationId", &id)
        })
        .await;
    later.expect(400, "CORRELATION_ID_REUSED");
}

#[tokio::test(flavor = "multi_thread")]
async fn requests_are_audited_without_secrets() {
    let mut app = spawn_app().await;
    app.login().await;
    let jwe = app.encrypt(PASSWORD).await;
    let query = format!("/login?username={COMMERCE}&password={jwe}");
    app.get(&query).await.expect(200, "LOGIN_OK");
    app.running.state.audit.flush();
    let rows: Vec<(String, String, i64, String)> = app
        .running
        .state
        .store()
        .read(|db| {
            Ok(db.query_map(
                "SELECT method, path, status, headers FROM audit_log ORDER BY seq",
                &[],
                |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)),
            )?)
        })
        .unwrap();
    assert!(
        rows.iter()
            .any(|(m, p, s, _)| m == "GET" && p == "/api/v1/login" && *s == 200)
    );
    let dump = format!("{rows:?}");
    assert!(!dump.contains(&jwe), "the GET /login query is never logged");
    assert!(!dump.contains(&app.api_key), "the API key is never logged");
    assert!(
        !dump.contains(app.token.as_ref().unwrap()),
        "the token is never logged"
    );
    assert!(rows.iter().all(|(_, _, _, h)| h.contains("correlationId")));
}

#[tokio::test(flavor = "multi_thread")]
async fn foreign_host_headers_are_refused() {
    let app = spawn_app().await;
    let url = format!("{}/api/v1/.well-known/jwks.json", app.base);
    let ok = app.client.get(&url).send().await.unwrap();
    assert_eq!(ok.status(), 200);
    let refused = app
        .client
        .get(&url)
        .header("Host", "evil.example")
        .send()
        .await
        .unwrap();
    assert_eq!(refused.status(), 403);
    let body: serde_json::Value = refused.json().await.unwrap();
    assert_eq!(body["name"], "HOST_NOT_ALLOWED");
}

/// Sends `request` as written (headers a client library would merge or refuse) and reads the
/// whole answer; the request asks the server to close afterwards.
async fn raw_exchange(app: &TestApp, request: &str) -> (u16, serde_json::Value) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut tcp = tokio::net::TcpStream::connect(app.running.addr)
        .await
        .unwrap();
    tcp.write_all(request.as_bytes()).await.unwrap();
    let mut answer = Vec::new();
    tcp.read_to_end(&mut answer).await.unwrap();
    let text = String::from_utf8_lossy(&answer);
    let status = text
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("not an HTTP answer: {text}"));
    let body = text.split_once("\r\n\r\n").map_or("", |(_, b)| b);
    (status, serde_json::from_str(body).unwrap_or_default())
}

#[tokio::test(flavor = "multi_thread")]
async fn two_host_headers_are_refused() {
    let app = spawn_app().await;
    let path = "/api/v1/.well-known/jwks.json";
    let (status, _) = raw_exchange(
        &app,
        &format!("GET {path} HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n"),
    )
    .await;
    assert_eq!(status, 200, "one loopback Host is served");
    for hosts in [
        ["localhost", "evil.example"],
        ["evil.example", "localhost"],
        ["localhost", "localhost"],
        ["127.0.0.1", "localhost:7420"],
    ] {
        let (status, body) = raw_exchange(
            &app,
            &format!(
                "GET {path} HTTP/1.1\r\nHost: {}\r\nHost: {}\r\nConnection: close\r\n\r\n",
                hosts[0], hosts[1]
            ),
        )
        .await;
        assert_eq!(
            (status, body["name"].as_str()),
            (403, Some("HOST_NOT_ALLOWED")),
            "Host headers {hosts:?}"
        );
    }
}
