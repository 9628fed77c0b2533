//! The staff API: first-start setup, sessions (cookie + CSRF), roles, the origin guard, and the
//! notifications screens' operations.

use mandato::store::db::Backend;
use reqwest::Method;
use serde_json::{Value, json};

use crate::helpers::*;

struct StaffClient<'a> {
    app: &'a TestApp,
    cookie: Option<String>,
    csrf: Option<String>,
}

impl<'a> StaffClient<'a> {
    fn new(app: &'a TestApp) -> Self {
        StaffClient {
            app,
            cookie: None,
            csrf: None,
        }
    }

    async fn call(
        &self,
        method: Method,
        path: &str,
        body: Option<Value>,
        extra: &[(&str, &str)],
    ) -> Reply {
        let mut request = self
            .app
            .client
            .request(method, format!("{}/admin/api{path}", self.app.base));
        if let Some(cookie) = &self.cookie {
            request = request.header("cookie", cookie);
        }
        if let Some(csrf) = &self.csrf {
            request = request.header("x-csrf-token", csrf);
        }
        for (name, value) in extra {
            request = request.header(*name, *value);
        }
        if let Some(body) = body {
            request = request.json(&body);
        }
        let response = request.send().await.unwrap();
        let status = response.status();
        let headers = response.headers().clone();
        let body = response.json().await.unwrap_or(Value::Null);
        Reply {
            status,
            headers,
            body,
        }
    }

    /// Keeps the session cookie and CSRF token of a sign-in reply.
    fn adopt(&mut self, reply: &Reply) {
        let set_cookie = reply.headers["set-cookie"].to_str().unwrap();
        assert!(set_cookie.contains("HttpOnly") && set_cookie.contains("SameSite=Strict"));
        self.cookie = Some(set_cookie.split(';').next().unwrap().to_string());
        self.csrf = reply.body["payload"]["csrfToken"]
            .as_str()
            .map(str::to_string);
    }
}

async fn signed_in_admin(app: &TestApp) -> StaffClient<'_> {
    let mut staff = StaffClient::new(app);
    let reply = staff
        .call(
            Method::POST,
            "/setup",
            Some(json!({"email": "owner@merchant.example", "password": "a long password"})),
            &[],
        )
        .await;
    reply.expect(201, "SETUP_OK");
    staff.adopt(&reply);
    staff
}

#[tokio::test(flavor = "multi_thread")]
async fn first_start_setup_then_sessions() {
    let app = spawn_app().await;
    let staff = StaffClient::new(&app);
    let status = staff.call(Method::GET, "/setup", None, &[]).await;
    assert_eq!(status.body["payload"]["needsSetup"], true);
    staff
        .call(
            Method::POST,
            "/setup",
            Some(json!({"email": "bad", "password": "short"})),
            &[],
        )
        .await
        .expect(400, "VALIDATION_ERROR");
    let admin = signed_in_admin(&app).await;
    assert_eq!(
        staff.call(Method::GET, "/setup", None, &[]).await.body["payload"]["needsSetup"],
        false
    );
    staff
        .call(
            Method::POST,
            "/setup",
            Some(json!({"email": "other@merchant.example", "password": "another long one"})),
            &[],
        )
        .await
        .expect(400, "SETUP_DONE");

    let me = admin.call(Method::GET, "/session", None, &[]).await;
    me.expect(200, "SESSION_OK");
    assert_eq!(me.body["payload"]["role"], "admin");
    staff
        .call(Method::GET, "/events", None, &[])
        .await
        .expect(401, "SESSION_REQUIRED");

    // Wrong password, then a proper sign-in.
    let mut again = StaffClient::new(&app);
    again
        .call(
            Method::POST,
            "/session",
            Some(json!({"email": "owner@merchant.example", "password": "nope"})),
            &[],
        )
        .await
        .expect(403, "INVALID_CREDENTIALS");
    let reply = again
        .call(
            Method::POST,
            "/session",
            Some(json!({"email": "owner@merchant.example", "password": "a long password"})),
            &[],
        )
        .await;
    reply.expect(200, "SESSION_OK");
    again.adopt(&reply);

    // Sign-out ends the session on the server.
    again
        .call(Method::DELETE, "/session", None, &[])
        .await
        .expect(200, "SESSION_CLOSED");
    again
        .call(Method::GET, "/events", None, &[])
        .await
        .expect(401, "SESSION_REQUIRED");
    admin
        .call(Method::GET, "/events", None, &[])
        .await
        .expect(200, "EVENTS_OK");

    // Idle sessions expire.
    app.advance_clock(chrono::Duration::minutes(61));
    admin
        .call(Method::GET, "/events", None, &[])
        .await
        .expect(401, "SESSION_REQUIRED");
}

#[tokio::test(flavor = "multi_thread")]
async fn changes_need_the_csrf_token_a_same_origin_and_the_role() {
    let app = spawn_app().await;
    let admin = signed_in_admin(&app).await;
    let body = json!({"eventIds": ["evt_x"]});
    let without_csrf = StaffClient {
        app: &app,
        cookie: admin.cookie.clone(),
        csrf: None,
    };
    without_csrf
        .call(Method::POST, "/events/redeliver", Some(body.clone()), &[])
        .await
        .expect(403, "CSRF_TOKEN_INVALID");
    admin
        .call(
            Method::POST,
            "/events/redeliver",
            Some(body.clone()),
            &[("origin", "https://evil.example")],
        )
        .await
        .expect(403, "ORIGIN_NOT_ALLOWED");
    let same_origin = format!("http://{}", app.running.addr);
    let ok = admin
        .call(
            Method::POST,
            "/events/redeliver",
            Some(body.clone()),
            &[("origin", &same_origin)],
        )
        .await;
    ok.expect(200, "REDELIVER_OK");
    assert_eq!(ok.body["payload"]["notFound"], json!(["evt_x"]));

    // A viewer reads but changes nothing.
    app.running
        .state
        .store()
        .write(|tx| {
            let hash = mandato::auth::password::hash_password(&mandato::secret::Secret::new(
                "viewer password".into(),
            ));
            mandato::store::commerces::insert_staff(
                tx,
                "viewer@merchant.example",
                &hash,
                "viewer",
                "2026-01-01T00:00:00.000Z",
            )
        })
        .unwrap();
    let mut viewer = StaffClient::new(&app);
    let reply = viewer
        .call(
            Method::POST,
            "/session",
            Some(json!({"email": "viewer@merchant.example", "password": "viewer password"})),
            &[],
        )
        .await;
    viewer.adopt(&reply);
    viewer
        .call(Method::GET, "/events", None, &[])
        .await
        .expect(200, "EVENTS_OK");
    viewer
        .call(Method::POST, "/events/redeliver", Some(body), &[])
        .await
        .expect(403, "ROLE_NOT_ALLOWED");
    viewer
        .call(
            Method::POST,
            &format!("/commerces/{COMMERCE}/rotate-secret"),
            Some(json!({})),
            &[],
        )
        .await
        .expect(403, "ROLE_NOT_ALLOWED");
    viewer
        .call(
            Method::POST,
            &format!("/commerces/{COMMERCE}/reveal-secret"),
            None,
            &[],
        )
        .await
        .expect(403, "ROLE_NOT_ALLOWED");
}

#[tokio::test(flavor = "multi_thread")]
async fn events_are_listed_filtered_inspected_and_redelivered() {
    let mut app = spawn_app().await;
    app.login().await;
    app.create_customer("cust-1", "12.345.678-5").await;
    let mandate = app
        .create_mandate(&dynamic_body(
            &app,
            "cust-1",
            "M-1",
            &[("a", 1000, 5), ("b", 2000, 6)],
        ))
        .await;
    let internal = mandate["mandate"]["internalId"]
        .as_str()
        .unwrap()
        .to_string();
    app.delete(
        "/mandate/cancel/id/M-1/userId/cust-1?description=cierre%20de%20cuenta",
        None,
    )
    .await
    .expect(200, "MANDATE_CANCEL_OK");
    // An EPAC-like activation event carrying a document, to check the masking.
    app.running
        .state
        .store()
        .write(|db| {
            let sql = match db.backend() {
                Backend::Sqlite => {
                    "UPDATE events SET body = json_set(body, '$.fileBase64', 'JVBERi0xLjcgc2VjcmV0') WHERE kind = 'activation'"
                }
                Backend::Postgres => {
                    "UPDATE events SET body = jsonb_set(body::jsonb, '{fileBase64}', '\"JVBERi0xLjcgc2VjcmV0\"')::text WHERE kind = 'activation'"
                }
            };
            db.execute(sql, &[])?;
            Ok(())
        })
        .unwrap();
    let admin = signed_in_admin(&app).await;
    let all = admin
        .call(
            Method::GET,
            &format!("/events?mandateInternalId={internal}"),
            None,
            &[],
        )
        .await;
    all.expect(200, "EVENTS_OK");
    let items = all.body["payload"]["items"].as_array().unwrap().clone();
    assert_eq!(items.len(), 3, "two annulments and the cancellation");
    assert!(
        items
            .windows(2)
            .all(|w| w[0]["sequence"].as_i64() > w[1]["sequence"].as_i64()),
        "newest first"
    );
    let activation = items.iter().find(|e| e["kind"] == "activation").unwrap();
    let page = admin
        .call(Method::GET, "/events?kind=payment&limit=1", None, &[])
        .await;
    assert_eq!(page.body["payload"]["items"].as_array().unwrap().len(), 1);
    let cursor = page.body["payload"]["nextCursor"]
        .as_str()
        .unwrap()
        .to_string();
    let next = admin
        .call(
            Method::GET,
            &format!("/events?kind=payment&limit=1&cursor={cursor}"),
            None,
            &[],
        )
        .await;
    assert_ne!(
        next.body["payload"]["items"][0]["eventId"],
        page.body["payload"]["items"][0]["eventId"]
    );
    admin
        .call(Method::GET, "/events?state=LOST&limit=0", None, &[])
        .await
        .expect(400, "VALIDATION_ERROR");

    let id = activation["eventId"].as_str().unwrap();
    let detail = admin
        .call(Method::GET, &format!("/events/{id}"), None, &[])
        .await;
    detail.expect(200, "EVENT_OK");
    assert_eq!(detail.body["payload"]["body"]["fileBase64"], "***");
    assert!(
        !detail.body.to_string().contains("JVBERi0xLjcgc2VjcmV0"),
        "fileBase64 never shown"
    );
    assert!(
        detail.body["payload"]["verification"]
            .as_str()
            .unwrap()
            .contains("RFC 8785")
    );

    let redeliver = admin
        .call(
            Method::POST,
            "/events/redeliver",
            Some(json!({"eventIds": [id]})),
            &[],
        )
        .await;
    redeliver.expect(200, "REDELIVER_OK");
    assert_eq!(redeliver.body["payload"]["scheduled"], json!([id]));

    let rotated = admin
        .call(
            Method::POST,
            &format!("/commerces/{COMMERCE}/rotate-secret"),
            Some(json!({"overlapHours": 2})),
            &[],
        )
        .await;
    rotated.expect(200, "SECRET_ROTATED");
    assert!(
        rotated.body["payload"]["webhookSecret"]
            .as_str()
            .unwrap()
            .starts_with("whsec_")
    );
    admin
        .call(
            Method::POST,
            "/commerces/NOPE/rotate-secret",
            Some(json!({})),
            &[],
        )
        .await
        .expect(404, "COMMERCE_NOT_FOUND");

    // An admin sees the current secret again, and the act is in the staff audit.
    let revealed = admin
        .call(
            Method::POST,
            &format!("/commerces/{COMMERCE}/reveal-secret"),
            None,
            &[],
        )
        .await;
    revealed.expect(200, "SECRET_REVEALED");
    assert_eq!(
        revealed.body["payload"]["webhookSecret"],
        rotated.body["payload"]["webhookSecret"]
    );
    let audited: i64 = app
        .running
        .state
        .store()
        .read(|db| {
            Ok(db.query_row(
                "SELECT count(*) FROM staff_audit WHERE action = 'commerce.reveal-secret'",
                &[],
                |r| r.get(0),
            )?)
        })
        .unwrap();
    assert_eq!(audited, 1);
    admin
        .call(Method::POST, "/commerces/NOPE/reveal-secret", None, &[])
        .await
        .expect(404, "COMMERCE_NOT_FOUND");
}

#[tokio::test(flavor = "multi_thread")]
async fn charging_runs_progress_clock_and_uf_for_staff() {
    let mut app = spawn_app().await;
    app.login().await;
    let admin = signed_in_admin(&app).await;
    let overview = admin.call(Method::GET, "/charging", None, &[]).await;
    overview.expect(200, "CHARGING_OK");
    assert_eq!(overview.body["payload"]["sandbox"], true);
    assert!(overview.body["payload"]["running"].is_null());

    let run = admin.call(Method::POST, "/charging/run", None, &[]).await;
    run.expect(200, "CHARGING_RUN_OK");
    assert_eq!(run.body["payload"]["date"], app.today().to_string());
    let today = app.today();
    let moved = admin
        .call(
            Method::POST,
            "/charging/clock",
            Some(json!({"advanceDays": 2})),
            &[],
        )
        .await;
    moved.expect(200, "SANDBOX_CLOCK_OK");
    assert_eq!(moved.body["payload"]["runs"].as_array().unwrap().len(), 2);
    assert_eq!(app.today(), today + chrono::Duration::days(2));
    let runs =
        admin.call(Method::GET, "/charging", None, &[]).await.body["payload"]["runs"].clone();
    assert_eq!(runs.as_array().unwrap().len(), 3);
    assert_eq!(runs[0]["state"], "FINISHED");
    assert_eq!(runs[0]["trigger"], "SANDBOX");

    let imported = admin
        .call(
            Method::POST,
            "/uf",
            Some(json!({"csv": "fecha;valor\n2026-12-01;39.123,45\n2026-12-02;39.130,01\n"})),
            &[],
        )
        .await;
    imported.expect(200, "UF_IMPORT_OK");
    assert_eq!(imported.body["payload"]["imported"], 2);
    let stored: String = app
        .running
        .state
        .store()
        .read(|db| {
            Ok(db.query_row(
                "SELECT value FROM uf_values WHERE date = '2026-12-01'",
                &[],
                |r| r.get(0),
            )?)
        })
        .unwrap();
    assert_eq!(stored, "39123.45");
    let bad = admin
        .call(
            Method::POST,
            "/uf",
            Some(json!({"csv": "2026-12-01,abc"})),
            &[],
        )
        .await;
    bad.expect(400, "VALIDATION_ERROR");
    assert!(
        bad.body["errors"][0]["message"]
            .as_str()
            .unwrap()
            .contains("line 1")
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn an_ended_session_gives_no_csrf_token() {
    let app = spawn_app().await;
    let admin = signed_in_admin(&app).await;
    admin
        .call(Method::GET, "/session", None, &[])
        .await
        .expect(200, "SESSION_OK");

    // Unused for longer than the idle limit: ended, and its token is not handed out.
    app.advance_clock(chrono::Duration::minutes(61));
    let ended = admin.call(Method::GET, "/session", None, &[]).await;
    ended.expect(401, "SESSION_REQUIRED");
    assert!(ended.body.get("payload").is_none(), "{}", ended.body);
    assert!(!ended.body.to_string().contains("csrfToken"));

    // Used every 50 minutes, it still ends 12 hours after sign-in.
    let mut staff = StaffClient::new(&app);
    let reply = staff
        .call(
            Method::POST,
            "/session",
            Some(json!({"email": "owner@merchant.example", "password": "a long password"})),
            &[],
        )
        .await;
    reply.expect(200, "SESSION_OK");
    staff.adopt(&reply);
    for _ in 0..14 {
        app.advance_clock(chrono::Duration::minutes(50));
        staff
            .call(Method::GET, "/session", None, &[])
            .await
            .expect(200, "SESSION_OK");
        staff
            .call(Method::GET, "/events", None, &[])
            .await
            .expect(200, "EVENTS_OK");
    }
    app.advance_clock(chrono::Duration::minutes(50));
    staff
        .call(Method::GET, "/session", None, &[])
        .await
        .expect(401, "SESSION_REQUIRED");
}
