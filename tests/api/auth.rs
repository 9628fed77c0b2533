//! Login with a JWE password, the deprecated GET form, the encrypt helper, the keys, and the
//! JWT checks on every protected operation.

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use reqwest::Method;
use serde_json::{Value, json};

use crate::helpers::*;

#[tokio::test(flavor = "multi_thread")]
async fn login_with_a_jwe_password_gives_an_es256_token() {
    let app = spawn_app().await;
    let jwe = app.encrypt(PASSWORD).await;
    let reply = app
        .post("/login", &json!({"username": COMMERCE, "password": jwe}))
        .await;
    reply.expect(200, "LOGIN_OK");
    let payload = &reply.body["payload"];
    assert_eq!(payload["tokenType"], "Bearer");
    assert_eq!(payload["expiresIn"], 3600);
    let token = payload["token"].as_str().unwrap();
    let parts: Vec<&str> = token.split('.').collect();
    let header: Value = serde_json::from_slice(&URL_SAFE_NO_PAD.decode(parts[0]).unwrap()).unwrap();
    let claims: Value = serde_json::from_slice(&URL_SAFE_NO_PAD.decode(parts[1]).unwrap()).unwrap();
    assert_eq!(header["alg"], "ES256");
    assert_eq!(claims["iss"], "mandato");
    assert_eq!(claims["sub"], COMMERCE);
    assert_eq!(claims["aud"], "sandbox");
    assert_eq!(
        claims["exp"].as_i64().unwrap() - claims["iat"].as_i64().unwrap(),
        3600
    );
    // The JWKS publishes the verifying key under the token's kid, without private parts.
    let jwks: Value = app
        .client
        .get(app.url("/.well-known/jwks.json"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(jwks["keys"][0]["kid"], header["kid"]);
    assert_eq!(jwks["keys"][0]["crv"], "P-256");
    assert!(jwks["keys"][0].get("d").is_none());
}

#[tokio::test(flavor = "multi_thread")]
async fn login_refusals() {
    let app = spawn_app().await;
    let good = app.encrypt(PASSWORD).await;
    let wrong = app.encrypt("wrong password").await;
    let cases = [
        (
            json!({"username": COMMERCE, "password": "correct horse battery"}),
            400,
            "VALIDATION_ERROR",
        ),
        (
            json!({"username": COMMERCE, "password": wrong}),
            403,
            "INVALID_CREDENTIALS",
        ),
        (
            json!({"username": OTHER_COMMERCE, "password": good}),
            403,
            "USERNAME_MISMATCH",
        ),
        (json!({"username": COMMERCE}), 400, "VALIDATION_ERROR"),
        (
            json!({"username": 12, "password": good}),
            400,
            "VALIDATION_ERROR",
        ),
    ];
    for (body, status, name) in cases {
        app.post("/login", &body).await.expect(status, name);
    }
    let plain = app
        .post(
            "/login",
            &json!({"username": COMMERCE, "password": "plain"}),
        )
        .await;
    assert_eq!(plain.body["errors"][0]["code"], "PASSWORD_NOT_JWE");
}

/// A compact JWE whose header claims `alg`/`enc` (RSA1_5, dir): refused before decryption.
fn forged_jwe(alg: &str, enc: &str) -> String {
    let header = URL_SAFE_NO_PAD.encode(json!({"alg": alg, "enc": enc}).to_string());
    format!("{header}.AAAA.AAAAAAAAAAAAAAAA.AAAA.AAAAAAAAAAAAAAAAAAAAAA")
}

#[tokio::test(flavor = "multi_thread")]
async fn rsa1_5_and_dir_are_refused_with_403() {
    let app = spawn_app().await;
    for (alg, enc) in [
        ("RSA1_5", "A128GCM"),
        ("dir", "A256GCM"),
        ("RSA-OAEP-256", "A192GCM"),
    ] {
        app.post(
            "/login",
            &json!({"username": COMMERCE, "password": forged_jwe(alg, enc)}),
        )
        .await
        .expect(403, "JWE_ALGORITHM_REFUSED");
    }
    // Corrupt ciphertext under an accepted algorithm: a credential problem, 403.
    app.post(
        "/login",
        &json!({"username": COMMERCE, "password": forged_jwe("RSA-OAEP-256", "A256GCM")}),
    )
    .await
    .expect(403, "INVALID_CREDENTIALS");
}

#[tokio::test(flavor = "multi_thread")]
async fn deprecated_get_login_still_works_and_says_so() {
    let app = spawn_app().await;
    let jwe = app.encrypt(PASSWORD).await;
    let reply = app
        .get(&format!("/login?username={COMMERCE}&password={jwe}"))
        .await;
    reply.expect(200, "LOGIN_OK");
    let deprecation = reply.headers["Deprecation"].to_str().unwrap();
    assert!(deprecation.starts_with('@') && deprecation[1..].parse::<i64>().is_ok());
    assert_eq!(
        reply.headers["Link"],
        "</api/v1/login>; rel=\"successor-version\""
    );
    let refused = app
        .get(&format!("/login?username={COMMERCE}&password=plain"))
        .await;
    refused.expect(400, "VALIDATION_ERROR");
    assert!(refused.headers.contains_key("Deprecation"));
}

#[tokio::test(flavor = "multi_thread")]
async fn encrypt_helper_checks_lengths_and_is_absent_in_production() {
    let app = spawn_app().await;
    let key = app.public_key().await;
    let reply = app
        .post(
            "/jwe/encrypt",
            &json!({"password": "", "publicKey": "short"}),
        )
        .await;
    reply.expect(400, "VALIDATION_ERROR");
    assert_eq!(reply.error_fields(), ["password", "publicKey"]);
    let long = "x".repeat(201);
    let reply = app
        .post("/jwe/encrypt", &json!({"password": long, "publicKey": key}))
        .await;
    assert_eq!(reply.error_fields(), ["password"]);
    let reply = app
        .post(
            "/jwe/encrypt",
            &json!({"password": "p", "publicKey": "y".repeat(150)}),
        )
        .await;
    reply.expect(400, "VALIDATION_ERROR");
    assert_eq!(reply.body["errors"][0]["code"], "INVALID_PUBLIC_KEY");

    let production = spawn_app_with(Options {
        environment: mandato::config::Environment::Production,
        ..Options::default()
    })
    .await;
    production
        .post("/jwe/encrypt", &json!({"password": "p", "publicKey": key}))
        .await
        .expect(404, "OPERATION_NOT_FOUND");
}

#[tokio::test(flavor = "multi_thread")]
async fn protected_operations_need_a_valid_token_for_the_same_commerce() {
    let mut app = spawn_app().await;
    let path = "/mandate/id/any";
    app.get(path).await.expect(403, "MISSING_TOKEN");
    app.login().await;
    app.get(path).await.expect(404, "MANDATE_NOT_FOUND");
    let token = app.token.clone().unwrap();
    let parts: Vec<&str> = token.split('.').collect();

    // Tampered claims: the signature no longer matches.
    let mut claims: Value =
        serde_json::from_slice(&URL_SAFE_NO_PAD.decode(parts[1]).unwrap()).unwrap();
    claims["sub"] = json!(OTHER_COMMERCE);
    let tampered = format!(
        "{}.{}.{}",
        parts[0],
        URL_SAFE_NO_PAD.encode(claims.to_string()),
        parts[2]
    );
    // alg none, and HS256 signed with the public key as secret (algorithm confusion).
    let none = format!(
        "{}.{}.",
        URL_SAFE_NO_PAD.encode(r#"{"alg":"none","typ":"JWT"}"#),
        parts[1]
    );
    let hs = format!(
        "{}.{}.c2lnbmF0dXJl",
        URL_SAFE_NO_PAD.encode(r#"{"alg":"HS256","typ":"JWT"}"#),
        parts[1]
    );
    for bad in [tampered, none, hs, "garbage".to_string()] {
        let reply = app
            .request_with(Method::GET, path, None, |h| {
                h.retain(|(n, _)| n != "Authorization");
                h.push(("Authorization".into(), format!("Bearer {bad}")));
            })
            .await;
        reply.expect(403, "INVALID_TOKEN");
    }

    // Another commerce's header with this commerce's token.
    let reply = app
        .request_with(Method::GET, path, None, |h| {
            crate::headers::set(h, "commerce", OTHER_COMMERCE)
        })
        .await;
    reply.expect(403, "COMMERCE_MISMATCH");

    // Expired: told apart from a token that is not ours, so a client knows to log in again.
    app.advance_clock(chrono::Duration::seconds(3601));
    app.get(path).await.expect(403, "TOKEN_EXPIRED");
}
