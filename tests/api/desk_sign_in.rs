//! The desktop app's sign-in link: the shell asks the engine (a function, not HTTP) for a
//! single-use link that signs its window in as the owner with the ordinary staff session.

use chrono::Duration;
use mandato::http::admin::desk::sign_in_path;
use reqwest::Method;
use serde_json::{Value, json};

use crate::helpers::*;

/// A client that does not follow redirects, to see the link's own answer.
fn browser() -> reqwest::Client {
    reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap()
}

async fn link(app: &TestApp, user: &str) -> String {
    let path = sign_in_path(&app.running.state, user)
        .await
        .expect("a sign-in link");
    format!("{}{}", app.base, path.expose())
}

async fn open(app: &TestApp, url: &str) -> (reqwest::StatusCode, Option<String>, Value) {
    let response = browser().get(url).send().await.unwrap();
    let status = response.status();
    let cookie = response.headers().get("set-cookie").map(|v| {
        let value = v.to_str().unwrap();
        assert!(value.contains("HttpOnly") && value.contains("SameSite=Strict"));
        value.split(';').next().unwrap().to_string()
    });
    if status.as_u16() == 303 {
        assert_eq!(response.headers()["location"], "/", "{}", app.base);
    }
    let body = response.json().await.unwrap_or(Value::Null);
    (status, cookie, body)
}

async fn staff_call(
    app: &TestApp,
    method: Method,
    path: &str,
    cookie: &str,
    csrf: Option<&str>,
    body: Option<Value>,
) -> Reply {
    let mut request = app
        .client
        .request(method, format!("{}/admin/api{path}", app.base))
        .header("cookie", cookie);
    if let Some(csrf) = csrf {
        request = request.header("x-csrf-token", csrf);
    }
    if let Some(body) = body {
        request = request.json(&body);
    }
    let response = request.send().await.unwrap();
    Reply {
        status: response.status(),
        headers: response.headers().clone(),
        body: response.json().await.unwrap_or(Value::Null),
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_first_start_link_creates_the_owner_and_works_once() {
    let app = spawn_app().await;
    let url = link(&app, "Ana").await;
    assert!(url.contains("/admin/api/desk/sign-in?token="), "{url}");

    let (status, cookie, body) = open(&app, &url).await;
    assert_eq!(status.as_u16(), 303, "{body}");
    assert_eq!(body["name"], "DESK_SIGN_IN_OK");
    let cookie = cookie.expect("a session cookie");
    let me = staff_call(&app, Method::GET, "/session", &cookie, None, None).await;
    me.expect(200, "SESSION_OK");
    assert_eq!(me.body["payload"]["email"], "ana@mandato.localhost");
    assert_eq!(me.body["payload"]["role"], "admin");
    let csrf = me.body["payload"]["csrfToken"]
        .as_str()
        .unwrap()
        .to_string();
    staff_call(&app, Method::GET, "/setup", &cookie, None, None)
        .await
        .expect(200, "SETUP_STATUS_OK")
        .body["payload"]["needsSetup"]
        .as_bool()
        .filter(|needs| !needs)
        .expect("setup is done");
    staff_call(&app, Method::GET, "/mandates", &cookie, None, None)
        .await
        .expect(200, "MANDATES_OK");

    // The session's CSRF rules are those of any session.
    let commerce = json!({"code": "TIENDADESK", "name": "Tienda de escritorio"});
    staff_call(
        &app,
        Method::POST,
        "/commerces",
        &cookie,
        None,
        Some(commerce.clone()),
    )
    .await
    .expect(403, "CSRF_TOKEN_INVALID");
    staff_call(
        &app,
        Method::POST,
        "/commerces",
        &cookie,
        Some("not-the-token"),
        Some(commerce.clone()),
    )
    .await
    .expect(403, "CSRF_TOKEN_INVALID");
    staff_call(
        &app,
        Method::POST,
        "/commerces",
        &cookie,
        Some(&csrf),
        Some(commerce),
    )
    .await
    .expect(201, "COMMERCE_CREATED");

    // Used once: refused, and no session.
    let (status, again, body) = open(&app, &url).await;
    assert_eq!(
        (status.as_u16(), body["name"].as_str()),
        (403, Some("DESK_LINK_INVALID"))
    );
    assert!(again.is_none());

    // Signing out ends that session like any other.
    staff_call(&app, Method::DELETE, "/session", &cookie, Some(&csrf), None)
        .await
        .expect(200, "SESSION_CLOSED");
    staff_call(&app, Method::GET, "/mandates", &cookie, None, None)
        .await
        .expect(401, "SESSION_REQUIRED");
}

#[tokio::test(flavor = "multi_thread")]
async fn expired_unknown_and_missing_tokens_are_refused() {
    let app = spawn_app().await;
    let url = link(&app, "ana").await;
    app.clock.advance(Duration::seconds(61));
    let base = format!("{}/admin/api/desk/sign-in", app.base);
    for url in [url, format!("{base}?token=never-issued"), base.clone()] {
        let (status, cookie, body) = open(&app, &url).await;
        assert_eq!(
            (status.as_u16(), body["name"].as_str()),
            (403, Some("DESK_LINK_INVALID")),
            "{url}"
        );
        assert!(cookie.is_none(), "{url}");
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn the_link_signs_in_as_the_existing_owner() {
    let app = spawn_app().await;
    let setup = app
        .client
        .post(format!("{}/admin/api/setup", app.base))
        .json(&json!({"email": "duena@gimnasio.cl", "password": "una clave larga 123"}))
        .send()
        .await
        .unwrap();
    assert_eq!(setup.status().as_u16(), 201);
    let url = link(&app, "someone-else").await;
    let (status, cookie, _) = open(&app, &url).await;
    assert_eq!(status.as_u16(), 303);
    let cookie = cookie.unwrap();
    let me = staff_call(&app, Method::GET, "/session", &cookie, None, None).await;
    assert_eq!(me.body["payload"]["email"], "duena@gimnasio.cl");
    let staff = staff_call(&app, Method::GET, "/staff", &cookie, None, None).await;
    assert_eq!(
        staff.body["payload"]["items"].as_array().map(Vec::len),
        Some(1),
        "no second account: {}",
        staff.body
    );
}
