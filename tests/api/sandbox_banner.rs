//! The Magic Link page of a sandbox installation lists the test instruments and what each does;
//! a production installation's page never does.

use mandato::config::Environment;
use serde_json::json;

use crate::helpers::*;

/// The page of a fresh mandate in an installation of `environment`.
async fn magic_link_page(environment: Environment) -> String {
    let mut app = spawn_app_with(Options {
        environment,
        ..Options::default()
    })
    .await;
    // Encrypted here: the JWE helper is a sandbox operation.
    let key = app.public_key().await;
    let jwe = mandato::auth::jwe::encrypt_password(PASSWORD, &key).expect("JWE");
    let reply = app
        .post(
            "/login",
            &json!({"username": app.commerce, "password": jwe}),
        )
        .await;
    reply.expect(200, "LOGIN_OK");
    app.token = Some(reply.body["payload"]["token"].as_str().unwrap().to_string());
    app.create_customer("cust-1", "12.345.678-5").await;
    let payload = app
        .create_mandate(&subscription_body(&app, "cust-1", "GYM-1", 3))
        .await;
    let link = payload["mandate"]["magicLink"].as_str().unwrap();
    let response = reqwest::get(link).await.unwrap();
    assert_eq!(response.status(), 200);
    response.text().await.unwrap()
}

#[tokio::test(flavor = "multi_thread")]
async fn the_sandbox_page_lists_the_test_instruments_and_production_never() {
    let page = magic_link_page(Environment::Sandbox).await;
    assert!(page.contains("Entorno de pruebas (sandbox)"), "{page}");
    for instrument in [
        "4242 4242 4242 4242",
        "4000 0000 0000 0002",
        "INSUFFICIENT_FUNDS",
        "4000 0000 0000 0069",
        "EXPIRED_CARD",
        "123450000",
        "9999",
        "BANK_VALIDATION_FAILED",
        "0119",
    ] {
        assert!(page.contains(instrument), "the banner names {instrument}");
    }
    // The banner comes before the forms it explains.
    assert!(page.find("Entorno de pruebas").unwrap() < page.find("<form").unwrap());

    let page = magic_link_page(Environment::Production).await;
    // No acquirer is set: production offers no typed card or account form (CONTRACT 13).
    assert!(
        !page.contains("name=\"number\""),
        "production has no card field"
    );
    assert!(
        page.contains("aún no se pueden registrar en línea"),
        "{page}"
    );
    for absent in [
        "Entorno de pruebas",
        "class=\"sandbox\"",
        "4242",
        "INSUFFICIENT_FUNDS",
    ] {
        assert!(!page.contains(absent), "production shows {absent}");
    }
}
