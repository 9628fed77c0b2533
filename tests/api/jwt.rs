//! The session token's refusals over HTTP: expiry and `nbf` on the application clock, tokens of
//! the other environment, and headers and claims signed with the environment's own key.
//!
//! A token of ours whose time is up is `403 TOKEN_EXPIRED`; every other refusal is `403
//! INVALID_TOKEN`. Each case has a control that the same construction with the right value is
//! accepted, so a refusal cannot come from a broken forgery.

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use chrono::Duration;
use mandato::config::Environment;
use reqwest::Method;
use serde_json::{Value, json};

use crate::helpers::*;

/// A protected operation: `404 MANDATE_NOT_FOUND` once the token is accepted.
const PATH: &str = "/mandate/id/any";

/// `GET PATH` with `token` as the bearer token.
async fn get_with(app: &TestApp, token: &str) -> Reply {
    app.request_with(Method::GET, PATH, None, |h| {
        h.retain(|(n, _)| n != "Authorization");
        h.push(("Authorization".into(), format!("Bearer {token}")));
    })
    .await
}

#[track_caller]
fn accepted(reply: &Reply) {
    reply.expect(404, "MANDATE_NOT_FOUND");
}

#[track_caller]
fn refused(reply: &Reply) {
    reply.expect(403, "INVALID_TOKEN");
}

/// A token with any header and claims, signed ES256 with the environment's private key.
fn forge(app: &TestApp, header: &Value, claims: &Value) -> String {
    let pem = app.running.state.keys.jwt.private_pem().expose().clone();
    let signer = josekit::jws::ES256.signer_from_pem(pem).unwrap();
    let input = format!(
        "{}.{}",
        URL_SAFE_NO_PAD.encode(header.to_string()),
        URL_SAFE_NO_PAD.encode(claims.to_string())
    );
    let signature = josekit::jws::JwsSigner::sign(&signer, input.as_bytes()).unwrap();
    format!("{input}.{}", URL_SAFE_NO_PAD.encode(signature))
}

fn our_header(app: &TestApp) -> Value {
    json!({"alg": "ES256", "typ": "JWT", "kid": app.running.state.keys.jwt.kid()})
}

fn good_claims(app: &TestApp) -> Value {
    let now = app.clock_now().timestamp();
    json!({
        "iss": "mandato",
        "sub": COMMERCE,
        "aud": "sandbox",
        "iat": now,
        "exp": now + 3600,
        "jti": "0b0e6f43-6f3c-4a57-9d38-5f3c2b8f9a11",
    })
}

#[tokio::test(flavor = "multi_thread")]
async fn expiry_and_nbf_follow_the_application_clock() {
    let mut app = spawn_app().await;
    app.login().await;
    let token = app.token.clone().unwrap();
    accepted(&get_with(&app, &token).await);
    // No leeway: valid through the second before `exp`, refused at `exp` (the token was checked
    // and remembered above, so this is also the remembered token's own time check).
    app.advance_clock(Duration::seconds(3599));
    accepted(&get_with(&app, &token).await);
    app.advance_clock(Duration::seconds(1));
    get_with(&app, &token).await.expect(403, "TOKEN_EXPIRED");

    // `nbf` one second ahead of the application clock: refused, then accepted a second later.
    let mut claims = good_claims(&app);
    claims["nbf"] = json!(app.clock_now().timestamp() + 1);
    let early = forge(&app, &our_header(&app), &claims);
    refused(&get_with(&app, &early).await);
    app.advance_clock(Duration::seconds(1));
    accepted(&get_with(&app, &early).await);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_token_of_the_other_environment_is_refused() {
    let mut app = spawn_app().await;
    app.login().await;
    let sandbox_token = app.token.clone().unwrap();
    accepted(&get_with(&app, &sandbox_token).await);
    let production_token = app
        .running
        .state
        .keys
        .jwt
        .issue(COMMERCE, "production", app.clock_now(), 3600)
        .unwrap();
    let production_token = production_token.token.expose().clone();
    refused(&get_with(&app, &production_token).await);

    // The same database (so the same signing key) started as production: only the audience
    // tells the two environments' tokens apart.
    let app = app
        .restarted(Options {
            environment: Environment::Production,
            ..Options::default()
        })
        .await;
    refused(&get_with(&app, &sandbox_token).await);
    accepted(&get_with(&app, &production_token).await);
}

#[tokio::test(flavor = "multi_thread")]
async fn headers_and_claims_signed_with_our_key_are_still_checked() {
    let app = spawn_app().await;
    let header = our_header(&app);
    let claims = good_claims(&app);
    // Controls: the forgery itself is sound, with or without `kid`, `typ` in any case.
    accepted(&get_with(&app, &forge(&app, &header, &claims)).await);
    let lowercase_typ = forge(&app, &json!({"alg": "ES256", "typ": "jwt"}), &claims);
    accepted(&get_with(&app, &lowercase_typ).await);

    let kid = app.running.state.keys.jwt.kid().to_string();
    for bad_header in [
        json!({"alg": "ES256", "typ": "JWT", "kid": "another-key"}),
        json!({"alg": "ES256", "typ": "JWT", "kid": 7}),
        json!({"alg": "ES256", "typ": "JWE", "kid": kid}),
        json!({"alg": "ES256", "kid": kid, "crit": ["b64"], "b64": false}),
        json!({"alg": "ES384", "kid": kid}),
        json!({"alg": "none", "kid": kid}),
        json!({"typ": "JWT", "kid": kid}),
    ] {
        refused(&get_with(&app, &forge(&app, &bad_header, &claims)).await);
    }

    let exp_as_text = claims["exp"].to_string();
    let edits: [(&str, Option<Value>); 11] = [
        ("iss", Some(json!("Mandato"))),
        ("iss", None),
        ("aud", Some(json!("production"))),
        ("aud", Some(json!(["production", "staging"]))),
        ("aud", None),
        ("exp", Some(json!(exp_as_text))),
        ("exp", None),
        ("sub", Some(json!(76123456))),
        ("iat", None),
        ("jti", None),
        ("nbf", Some(json!("now"))),
    ];
    for (name, value) in edits {
        let mut bad = claims.clone();
        match value {
            Some(value) => bad[name] = value,
            None => {
                bad.as_object_mut().unwrap().remove(name);
            }
        }
        let reply = get_with(&app, &forge(&app, &header, &bad)).await;
        assert_eq!(
            (reply.status.as_u16(), reply.name()),
            (403, "INVALID_TOKEN"),
            "{bad}"
        );
    }
    // An audience list naming this environment is accepted.
    let mut listed = claims.clone();
    listed["aud"] = json!(["production", "sandbox"]);
    accepted(&get_with(&app, &forge(&app, &header, &listed)).await);
}
