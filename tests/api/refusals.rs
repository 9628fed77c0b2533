//! Requests refused before their API key is accepted are counted per minute and reason, not
//! written one row each; request logs past their retention (a staff setting, 90 days by
//! default) are pruned in the background.

use reqwest::Method;
use serde_json::{Value, json};

use crate::helpers::*;

/// The owner's session on the staff API: the cookie and the CSRF token.
async fn owner_session(app: &TestApp) -> (String, String) {
    let reply = app
        .client
        .post(format!("{}/admin/api/setup", app.base))
        .json(&json!({"email": "owner@merchant.example", "password": "a long password"}))
        .send()
        .await
        .unwrap();
    assert_eq!(reply.status(), 201);
    let cookie = reply.headers()["set-cookie"]
        .to_str()
        .unwrap()
        .split(';')
        .next()
        .unwrap()
        .to_string();
    let body: Value = reply.json().await.unwrap();
    (
        cookie,
        body["payload"]["csrfToken"].as_str().unwrap().into(),
    )
}

async fn staff_call(
    app: &TestApp,
    session: &(String, String),
    method: Method,
    path: &str,
    body: Option<Value>,
) -> (u16, Value) {
    let mut request = app
        .client
        .request(method, format!("{}/admin/api{path}", app.base))
        .header("cookie", &session.0)
        .header("x-csrf-token", &session.1);
    if let Some(body) = body {
        request = request.json(&body);
    }
    let reply = request.send().await.unwrap();
    (reply.status().as_u16(), reply.json().await.unwrap())
}

async fn flush(app: &TestApp) {
    let audit = app.running.state.audit.clone();
    tokio::task::spawn_blocking(move || audit.flush())
        .await
        .unwrap();
}

async fn prune(app: &TestApp) {
    let audit = app.running.state.audit.clone();
    tokio::task::spawn_blocking(move || audit.prune_now())
        .await
        .unwrap();
}

fn count(app: &TestApp, sql: &str) -> i64 {
    app.running
        .state
        .store()
        .read(|c| Ok(c.query_row(sql, &[], |r| r.get::<Option<i64>>(0))?))
        .unwrap()
        .unwrap_or(0)
}

#[tokio::test(flavor = "multi_thread")]
async fn a_thousand_bad_api_keys_make_no_rows_and_one_count() {
    let app = std::sync::Arc::new(spawn_app().await);
    let mut sent = tokio::task::JoinSet::new();
    for worker in 0..20 {
        let app = app.clone();
        sent.spawn(async move {
            for i in 0..50 {
                let reply = app
                    .request_with(Method::GET, "/mandate/id/none", None, |h| {
                        for (name, value) in h.iter_mut() {
                            if name == "x-api-key" {
                                *value = format!("mk_not-a-key-{worker}-{i}");
                            }
                        }
                    })
                    .await;
                reply.expect(403, "INVALID_API_KEY");
            }
        });
    }
    while let Some(done) = sent.join_next().await {
        done.unwrap();
    }
    // Missing headers and a foreign Host are counted too, each under its reason.
    app.request_with(Method::GET, "/mandate/id/none", None, |h| {
        h.retain(|(n, _)| n != "country")
    })
    .await
    .expect(400, "VALIDATION_ERROR");
    let foreign = app
        .client
        .get(app.url("/.well-known/jwks.json"))
        .header("Host", "evil.example")
        .send()
        .await
        .unwrap();
    assert_eq!(foreign.status(), 403);
    // An accepted key still makes its row, even when the request is refused after it.
    app.get("/mandate/id/none")
        .await
        .expect(403, "MISSING_TOKEN");
    flush(&app).await;
    assert_eq!(count(&app, "SELECT count(*) FROM audit_log"), 1);
    assert_eq!(
        count(
            &app,
            "SELECT count(*) FROM audit_log WHERE api_key_prefix IS NULL"
        ),
        0,
        "refusals before authentication write no row"
    );
    assert_eq!(
        count(
            &app,
            "SELECT CAST(sum(count) AS BIGINT) FROM audit_refusals WHERE reason = 'INVALID_API_KEY'"
        ),
        1_000
    );
    assert!(
        count(&app, "SELECT count(*) FROM audit_refusals") <= 6,
        "one row per minute and reason"
    );
    let session = owner_session(&app).await;
    let (status, page) = staff_call(&app, &session, Method::GET, "/audit/refusals", None).await;
    assert_eq!(status, 200, "{page}");
    let totals: std::collections::HashMap<String, i64> = page["payload"]["totals"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| {
            (
                t["reason"].as_str().unwrap().into(),
                t["count"].as_i64().unwrap(),
            )
        })
        .collect();
    assert_eq!(totals["INVALID_API_KEY"], 1_000);
    assert_eq!(totals["INVALID_HEADERS"], 1);
    assert_eq!(totals["HOST_NOT_ALLOWED"], 1);
    assert_eq!(page["payload"]["retentionDays"], 90);
}

#[tokio::test(flavor = "multi_thread")]
async fn request_logs_past_their_retention_are_pruned() {
    let app = spawn_app().await;
    let now = app.clock_now();
    let ago = |days: i64| mandato::clock::timestamp(now - chrono::Duration::days(days));
    let minute = |days: i64| format!("{}:00.000Z", &ago(days)[..16]);
    app.running
        .state
        .store()
        .write(|db| {
            for days in [400, 91, 30, 1] {
                db.execute(
                    "INSERT INTO audit_log (at, method, path, status, duration_ms, headers)
                     VALUES (?1, 'GET', '/api/v1/mandate/id/x', 200, 1.0, '{}')",
                    &[ago(days).as_str().into()],
                )?;
                db.execute(
                    "INSERT INTO audit_refusals (minute, reason, count)
                     VALUES (?1, 'INVALID_API_KEY', 3)",
                    &[minute(days).as_str().into()],
                )?;
            }
            for (i, days) in [8, 1].into_iter().enumerate() {
                db.execute(
                    "INSERT INTO correlation_claims (day, commerce_id, correlation_id, seen_at)
                     VALUES (substr(?2, 1, 10), 1, ?1, ?2)",
                    &[
                        format!("old-or-new-{i}").as_str().into(),
                        ago(days).as_str().into(),
                    ],
                )?;
            }
            Ok(())
        })
        .unwrap();
    prune(&app).await;
    // The default: 90 days for the audit, 7 for correlationIds.
    assert_eq!(count(&app, "SELECT count(*) FROM audit_log"), 2);
    assert_eq!(count(&app, "SELECT count(*) FROM audit_refusals"), 2);
    assert_eq!(count(&app, "SELECT count(*) FROM correlation_claims"), 1);
    assert_eq!(
        count(
            &app,
            &format!("SELECT count(*) FROM audit_log WHERE at < '{}'", ago(90))
        ),
        0
    );

    // Staff shorten it; the next round keeps only the last week.
    let session = owner_session(&app).await;
    let (status, reply) = staff_call(
        &app,
        &session,
        Method::PUT,
        "/settings/audit-retention",
        Some(json!({"days": 0})),
    )
    .await;
    assert_eq!(
        (status, reply["errors"][0]["field"].as_str()),
        (400, Some("days"))
    );
    let (status, reply) = staff_call(
        &app,
        &session,
        Method::PUT,
        "/settings/audit-retention",
        Some(json!({"days": 7})),
    )
    .await;
    assert_eq!(status, 200, "{reply}");
    prune(&app).await;
    assert_eq!(count(&app, "SELECT count(*) FROM audit_log"), 1);
    assert_eq!(count(&app, "SELECT count(*) FROM audit_refusals"), 1);
    let (status, reply) = staff_call(
        &app,
        &session,
        Method::GET,
        "/settings/audit-retention",
        None,
    )
    .await;
    assert_eq!((status, &reply["payload"]["days"]), (200, &json!(7)));
}

#[tokio::test(flavor = "multi_thread")]
async fn pruning_goes_in_small_batches_and_takes_everything() {
    let app = spawn_app().await;
    let old = mandato::clock::timestamp(app.clock_now() - chrono::Duration::days(120));
    app.running
        .state
        .store()
        .write(|db| {
            for _ in 0..2_345 {
                db.execute(
                    "INSERT INTO audit_log (at, method, path, status, duration_ms, headers)
                     VALUES (?1, 'GET', '/api/v1/x', 200, 1.0, '{}')",
                    &[old.as_str().into()],
                )?;
            }
            Ok(())
        })
        .unwrap();
    prune(&app).await;
    assert_eq!(count(&app, "SELECT count(*) FROM audit_log"), 0);
}
