//! The merchant request path keeps API keys, commerces and recent correlationIds in memory;
//! these tests hold it to the same answers the database gives.

use std::time::Duration;

use reqwest::Method;

use crate::helpers::*;

/// Waits until the engine has loaded the correlationIds committed before its start, so the
/// requests that follow are answered by the in-memory filter rather than the fallback lookup.
async fn recent_ids_loaded(app: &TestApp) {
    for _ in 0..500 {
        if app.running.state.audit.recent_ids_loaded() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("the recent correlationIds were never loaded");
}

async fn lookup_with(app: &TestApp, correlation_id: &str) -> Reply {
    app.request_with(Method::GET, "/mandate/id/none", None, |h| {
        crate::headers::set(h, "correlationId", correlation_id)
    })
    .await
}

#[tokio::test(flavor = "multi_thread")]
async fn correlation_ids_used_before_a_restart_stay_refused_after_it() {
    let mut app = spawn_app().await;
    app.login().await;
    let ids: Vec<String> = (0..40).map(|_| uuid::Uuid::new_v4().to_string()).collect();
    for id in &ids {
        lookup_with(&app, id).await.expect(404, "MANDATE_NOT_FOUND");
    }
    let mut app = app.restarted(Options::default()).await;
    app.login().await;
    recent_ids_loaded(&app).await;
    for id in &ids {
        let again = lookup_with(&app, id).await;
        again.expect(400, "CORRELATION_ID_REUSED");
        assert_eq!(again.error_fields(), ["header.correlationId"]);
    }
    // A fresh id is still served.
    lookup_with(&app, &uuid::Uuid::new_v4().to_string())
        .await
        .expect(404, "MANDATE_NOT_FOUND");
}

#[tokio::test(flavor = "multi_thread")]
async fn correlation_ids_of_every_day_of_the_window_stay_refused() {
    let app = spawn_app().await;
    let now = app.clock_now();
    let commerce_id = app
        .running
        .state
        .store()
        .read(|db| {
            Ok(db.query_row(
                "SELECT id FROM commerces WHERE code = ?1",
                &[COMMERCE.into()],
                |r| r.get::<i64>(0),
            )?)
        })
        .unwrap();
    // Claims stored on earlier days (each under its own day's key), before the start that
    // loads them.
    let seen = |days: i64, hours: i64| {
        let at = now - chrono::Duration::days(days) - chrono::Duration::hours(hours);
        (
            uuid::Uuid::new_v4().to_string(),
            mandato::clock::timestamp(at),
        )
    };
    let within: Vec<_> = [(0, 1), (1, 0), (3, 5), (6, 23)]
        .into_iter()
        .map(|(d, h)| seen(d, h))
        .collect();
    let outside = seen(7, 1);
    app.running
        .state
        .store()
        .write(|db| {
            for (id, at) in within.iter().chain([&outside]) {
                db.execute(
                    "INSERT INTO correlation_claims (day, commerce_id, correlation_id, seen_at)
                     VALUES (substr(?3, 1, 10), ?1, ?2, ?3)",
                    &[commerce_id.into(), id.into(), at.into()],
                )?;
            }
            Ok(())
        })
        .unwrap();
    let mut app = app.restarted(Options::default()).await;
    app.login().await;
    recent_ids_loaded(&app).await;
    for (id, at) in &within {
        let again = lookup_with(&app, id).await;
        assert_eq!(again.status, 400, "{id} seen at {at}");
        again.expect(400, "CORRELATION_ID_REUSED");
    }
    // Past the 7 days, the id may be used again.
    lookup_with(&app, &outside.0)
        .await
        .expect(404, "MANDATE_NOT_FOUND");
}

#[tokio::test(flavor = "multi_thread")]
async fn correlation_ids_are_refused_while_pending_and_once_committed() {
    let mut app = spawn_app().await;
    app.login().await;
    recent_ids_loaded(&app).await;
    let ids: Vec<String> = (0..100).map(|_| uuid::Uuid::new_v4().to_string()).collect();
    for id in &ids {
        lookup_with(&app, id).await.expect(404, "MANDATE_NOT_FOUND");
    }
    // Some may still be in the writer's batch: refused from memory.
    for id in ids.iter().take(10) {
        lookup_with(&app, id)
            .await
            .expect(400, "CORRELATION_ID_REUSED");
    }
    app.running.state.audit.flush();
    for id in &ids {
        lookup_with(&app, id)
            .await
            .expect(400, "CORRELATION_ID_REUSED");
    }
    // An id is the commerce's own: the other commerce may use the same one.
    app.act_as(OTHER_COMMERCE).await;
    lookup_with(&app, &ids[0])
        .await
        .expect(404, "MANDATE_NOT_FOUND");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_key_revoked_by_another_process_is_refused_soon_after() {
    let mut app = spawn_app().await;
    app.login().await;
    app.get("/mandate/id/none")
        .await
        .expect(404, "MANDATE_NOT_FOUND");
    // Another process (the CLI) revokes the key: its change reaches this engine only through
    // the database, so the cached key is read again once its time to live has passed.
    let other = app.running.state.config.open_store().unwrap();
    let revoked = other
        .write(|db| {
            Ok(db.execute(
                "UPDATE api_keys SET revoked_at = '2026-01-02T00:00:00.000Z' WHERE revoked_at IS NULL",
                &[],
            )?)
        })
        .unwrap();
    assert_eq!(revoked, 1);
    let mut last = String::new();
    for _ in 0..100 {
        let reply = app.get("/mandate/id/none").await;
        last = reply.name().to_string();
        if reply.status == 403 {
            reply.expect(403, "INVALID_API_KEY");
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("the revoked key was still accepted; last answer {last}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_key_revoked_in_this_process_is_refused_at_once() {
    let mut app = spawn_app().await;
    app.login().await;
    app.get("/mandate/id/none")
        .await
        .expect(404, "MANDATE_NOT_FOUND");
    let prefix = &app.api_key[..mandato::auth::api_key::DISPLAY_PREFIX_LEN];
    let store = &app.running.state.store();
    let revoked = store
        .write(|tx| {
            mandato::store::commerces::revoke_api_key(tx, prefix, "2026-01-02T00:00:00.000Z")
        })
        .unwrap();
    assert_eq!(revoked, 1);
    app.get("/mandate/id/none")
        .await
        .expect(403, "INVALID_API_KEY");
}
