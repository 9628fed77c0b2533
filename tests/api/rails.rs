//! Each commerce's money moves through its own acquirer (CONTRACT 13): production never
//! simulates a charge, and a cards rail set to Transbank charges through Oneclick Mall.
//!
//! The Oneclick stand-in below answers what Transbank's official Python SDK documents
//! (`TransbankDevelopers/transbank-sdk-python` at 195398a): the paths of
//! `transbank/webpay/oneclick/mall_transaction.py`, the headers of
//! `transbank/common/headers_builder.py`, and the bodies of the fixtures in
//! `tests/mocks/responses_api_mocks.py` (`authorize_response`, `captured_status_response` and
//! `buy_order_not_found`). It refuses a wrong key or commerce code (401, as `create_error`
//! `Not Authorized`) and a repeated buy order.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::routing::{get, post};
use axum::{Json, Router};
use serde_json::{Value, json};

use mandato::domain::acquirer::{AcquirerInput, AcquirerSetting};
use mandato::secret::Secret;

use crate::helpers::*;

const MALL: &str = "597055555541";
const CHILD: &str = "597055555542";
const WEBPAY: &str = "597055555532";
/// Transbank's published integration key (`IntegrationApiKeys.WEBPAY` in the SDKs).
const KEY: &str = "579B532A7440BB0C9079DED94D31EA1615BACEB56610332264630D42D0A36B1C";
const ONECLICK: &str = "/rswebpaytransaction/api/oneclick/v1.2";

/// Amounts the stand-in answers specially (a real issuer decides by the card; the stand-in
/// by the amount, so one inscription tries every outcome).
const DECLINED: i64 = 6666;
const OVER_DAILY_LIMIT: i64 = 9797;
const ANSWER_LOST: i64 = 5555;

#[derive(Default)]
struct Standin {
    /// Every authorization Transbank would hold, by parent buy order.
    authorizations: Mutex<HashMap<String, Value>>,
    /// How many POST /transactions named each parent buy order.
    sends: Mutex<HashMap<String, usize>>,
    requests: Mutex<Vec<Value>>,
}

fn authorized(headers: &HeaderMap) -> bool {
    headers.get("tbk-api-key-id").and_then(|v| v.to_str().ok()) == Some(MALL)
        && headers
            .get("tbk-api-key-secret")
            .and_then(|v| v.to_str().ok())
            == Some(KEY)
}

fn error(status: StatusCode, message: &str) -> (StatusCode, Json<Value>) {
    (status, Json(json!({ "error_message": message })))
}

async fn authorize(
    State(standin): State<Arc<Standin>>,
    headers: HeaderMap,
    Json(body): Json<Value>,
) -> (StatusCode, Json<Value>) {
    if !authorized(&headers) {
        return error(StatusCode::UNAUTHORIZED, "Not Authorized");
    }
    standin.requests.lock().unwrap().push(body.clone());
    let parent = body["buy_order"].as_str().unwrap_or_default().to_string();
    let detail = &body["details"][0];
    let child = detail["buy_order"].as_str().unwrap_or_default();
    let amount = detail["amount"].as_i64().unwrap_or(0);
    *standin
        .sends
        .lock()
        .unwrap()
        .entry(parent.clone())
        .or_default() += 1;
    if detail["commerce_code"] != CHILD {
        return error(
            StatusCode::UNPROCESSABLE_ENTITY,
            "Invalid value for parameter: commerce_code",
        );
    }
    if parent.is_empty() || parent.len() > 26 || child.is_empty() || child.len() > 26 {
        return error(
            StatusCode::UNPROCESSABLE_ENTITY,
            "Invalid value for parameter: buy_order",
        );
    }
    if standin.authorizations.lock().unwrap().contains_key(&parent) {
        return error(
            StatusCode::UNPROCESSABLE_ENTITY,
            "Invalid value for parameter: buy_order already used",
        );
    }
    let response_code = match amount {
        DECLINED => -1,
        OVER_DAILY_LIMIT => -97,
        _ => 0,
    };
    // `authorize_response`.
    let answer = json!({
        "details": [{
            "amount": amount,
            "status": if response_code == 0 { "AUTHORIZED" } else { "FAILED" },
            "authorization_code": if response_code == 0 { "1213" } else { "000000" },
            "payment_type_code": "VN",
            "response_code": response_code,
            "installments_number": 0,
            "commerce_code": CHILD,
            "buy_order": child,
        }],
        "buy_order": parent,
        "card_detail": { "card_number": "6623" },
        "accounting_date": "1019",
        "transaction_date": "2023-10-19T21:30:21.095Z",
    });
    standin
        .authorizations
        .lock()
        .unwrap()
        .insert(parent, answer.clone());
    if amount == ANSWER_LOST {
        // Charged, but the answer never arrives whole: a gateway error after the fact.
        return error(StatusCode::BAD_GATEWAY, "upstream connection reset");
    }
    (StatusCode::OK, Json(answer))
}

async fn status(
    State(standin): State<Arc<Standin>>,
    headers: HeaderMap,
    Path(buy_order): Path<String>,
) -> (StatusCode, Json<Value>) {
    if !authorized(&headers) {
        return error(StatusCode::UNAUTHORIZED, "Not Authorized");
    }
    match standin.authorizations.lock().unwrap().get(&buy_order) {
        Some(answer) => (StatusCode::OK, Json(answer.clone())),
        None => error(
            StatusCode::UNPROCESSABLE_ENTITY,
            "Invalid value for parameter: buy order not found",
        ),
    }
}

/// Starts the stand-in on a loopback port; answers its base URL.
async fn start_standin() -> (Arc<Standin>, String) {
    let standin = Arc::new(Standin::default());
    let router = Router::new()
        .route(&format!("{ONECLICK}/transactions"), post(authorize))
        .route(
            &format!("{ONECLICK}/transactions/{{buy_order}}"),
            get(status),
        )
        .with_state(Arc::clone(&standin));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, router).await.unwrap() });
    (standin, base)
}

/// Sets the commerce's cards rail to Transbank at `base_url`, as `mandato acquirer set` does.
fn set_transbank(app: &TestApp, base_url: &str) {
    let sandbox = app.running.state.config.environment.is_sandbox();
    let setting = AcquirerSetting::parse(
        AcquirerInput {
            rail: Some("cards".into()),
            kind: Some("transbank".into()),
            mall_code: Some(MALL.into()),
            child_code: Some(CHILD.into()),
            webpay_code: Some(WEBPAY.into()),
            base_url: Some(base_url.into()),
            secret: Some(Secret::new(KEY.to_string())),
            ..AcquirerInput::default()
        },
        sandbox,
    )
    .expect("a valid setting");
    let store = app.running.state.store();
    let commerce = app
        .running
        .state
        .commerce_by_code(&app.commerce)
        .unwrap()
        .unwrap();
    store
        .write(|tx| {
            mandato::operations::acquirers::set(
                tx,
                commerce.id,
                &setting,
                "2026-11-28T12:00:00.000Z",
            )
        })
        .unwrap();
}

async fn activate_card(app: &TestApp, internal_id: &str) {
    app.post(
        &format!("/sandbox/mandates/{internal_id}/activate"),
        &json!({"paymentMethodId": 3, "card": {"number": "4111111111111111", "expiry": "12/30", "cvv": "123"}}),
    )
    .await
    .expect(200, "SANDBOX_ACTIVATE_OK");
}

/// A DYNAMIC mandate with one installment of `amount` CLP due tomorrow, activated with a
/// card; answers the mandate's internal id.
async fn active_mandate(app: &TestApp, id: &str, amount: i64) -> String {
    let payload = app
        .create_mandate(&dynamic_body(app, "cust-1", id, &[("c1", amount, 1)]))
        .await;
    let internal = payload["mandate"]["internalId"]
        .as_str()
        .unwrap()
        .to_string();
    activate_card(app, &internal).await;
    internal
}

async fn installment_of(app: &TestApp, internal: &str) -> Value {
    let reply = app.get(&format!("/mandate/internalId/{internal}")).await;
    reply.body["payload"]["installments"][0].clone()
}

#[tokio::test(flavor = "multi_thread")]
async fn a_transbank_rail_charges_through_oneclick_and_asks_for_lost_answers() {
    let mut app = spawn_app().await;
    app.login().await;
    let customer = app.create_customer("cust-1", "12.345.678-5").await;
    let paid = active_mandate(&app, "M-PAID", 5000).await;
    let declined = active_mandate(&app, "M-DECLINED", DECLINED).await;
    let limited = active_mandate(&app, "M-LIMIT", OVER_DAILY_LIMIT).await;
    let lost = active_mandate(&app, "M-LOST", ANSWER_LOST).await;
    let (standin, base) = start_standin().await;
    set_transbank(&app, &base);

    let tomorrow = app.today() + chrono::Duration::days(1);
    let run = app.run_charging(tomorrow).await;
    assert_eq!(run.counts.attempted, 4, "{run:?}");
    assert_eq!(run.counts.paid, 1, "{run:?}");
    assert_eq!(run.counts.rejected, 2, "{run:?}");
    assert_eq!(run.counts.in_process, 1, "{run:?}");

    let approved = installment_of(&app, &paid).await;
    assert_eq!(approved["state"]["name"], "PAID", "{approved}");
    assert_eq!(approved["authorizationCode"], "1213", "{approved}");
    let refused = installment_of(&app, &declined).await;
    assert_eq!(refused["rejection"]["code"], "CARD_DECLINED", "{refused}");
    let soft = installment_of(&app, &limited).await;
    assert_eq!(soft["rejection"]["code"], "INSUFFICIENT_FUNDS", "{soft}");

    // What the engine sent is Oneclick's authorization, in whole pesos for the child store.
    let requests = standin.requests.lock().unwrap().clone();
    let first = requests
        .iter()
        .find(|r| r["details"][0]["amount"] == 5000)
        .expect("the 5000 authorization");
    // Oneclick's username is the customer's internalUserId.
    assert_eq!(first["username"], customer.as_str());
    assert!(!first["tbk_user"].as_str().unwrap().is_empty());
    assert_eq!(first["details"][0]["commerce_code"], CHILD);
    assert_eq!(first["buy_order"].as_str().unwrap().len(), 26);

    // The lost answer stays IN_PROCESS; a restart asks Transbank for its buy order and
    // applies what it says, without a second authorization.
    let unknown = installment_of(&app, &lost).await;
    assert_eq!(unknown["state"]["name"], "IN_PROCESS", "{unknown}");
    let mut app = app.restarted(Options::default()).await;
    app.login().await;
    let settled = installment_of(&app, &lost).await;
    assert_eq!(
        settled["state"]["name"], "PAID",
        "PAID after the status query: {settled}"
    );
    let sends = standin.sends.lock().unwrap().clone();
    assert_eq!(sends.len(), 4, "one buy order per attempt: {sends:?}");
    assert!(
        sends.values().all(|n| *n == 1),
        "never sent twice: {sends:?}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_wrong_key_declines_nobody_and_the_charge_waits() {
    let mut app = spawn_app().await;
    app.login().await;
    app.create_customer("cust-1", "12.345.678-5").await;
    let mandate = active_mandate(&app, "M-1", 5000).await;
    let (standin, base) = start_standin().await;
    set_transbank(&app, &base);
    // The key is replaced by a wrong one: Transbank answers 401 to everything.
    let store = app.running.state.store();
    store
        .write(|tx| {
            Ok(tx.execute(
                "UPDATE acquirers SET secret = 'wrong', updated_at = 'later'",
                &mandato::store::db::params![],
            )?)
        })
        .unwrap();
    let run = app
        .run_charging(app.today() + chrono::Duration::days(1))
        .await;
    assert_eq!(run.counts.rejected, 0, "{run:?}");
    assert_eq!(run.counts.in_process, 1, "{run:?}");
    let waiting = installment_of(&app, &mandate).await;
    assert_eq!(waiting["state"]["name"], "IN_PROCESS", "{waiting}");
    assert!(standin.authorizations.lock().unwrap().is_empty());
}

#[tokio::test(flavor = "multi_thread")]
async fn production_never_simulates_and_charges_nothing_without_an_acquirer() {
    let mut app = spawn_app().await;
    app.login().await;
    app.create_customer("cust-1", "12.345.678-5").await;
    let active = active_mandate(&app, "M-ACTIVE", 5000).await;
    let pending = app
        .create_mandate(&dynamic_body(
            &app,
            "cust-1",
            "M-PENDING",
            &[("c1", 5000, 3)],
        ))
        .await;
    let link = pending["mandate"]["magicLink"]
        .as_str()
        .unwrap()
        .to_string();
    let path = link[link.find("/link/").unwrap()..].to_string();

    // The same installation, now in production, with no acquirer set for its commerce.
    let production = app
        .restarted(Options {
            environment: mandato::config::Environment::Production,
            ..Options::default()
        })
        .await;
    let run = production
        .run_charging(production.today() + chrono::Duration::days(1))
        .await;
    assert_eq!(run.counts.attempted, 0, "{run:?}");
    assert_eq!(run.counts.paid, 0, "{run:?}");
    assert_eq!(run.counts.acquirer_not_configured, 1, "{run:?}");
    let untouched = production
        .running
        .state
        .store()
        .read(|c| {
            Ok(c.query_row(
                "SELECT count(*) FROM charge_attempts",
                &mandato::store::db::params![],
                |r| r.get::<i64>(0),
            )?)
        })
        .unwrap();
    assert_eq!(untouched, 0, "nothing attempted for {active}");

    // Its Magic Link offers no card or account fields, and a hand-made form is refused.
    let page = reqwest::get(format!("{}{path}", production.base))
        .await
        .unwrap();
    assert_eq!(page.status(), 200);
    let html = page.text().await.unwrap();
    assert!(!html.contains("name=\"number\""), "no card number field");
    assert!(!html.contains("name=\"accountNumber\""), "no account field");
    assert!(
        html.contains("aún no se pueden registrar en línea"),
        "{html}"
    );
    let posted = reqwest::Client::new()
        .post(format!("{}{path}", production.base))
        .header("content-type", "application/x-www-form-urlencoded")
        .body("method=3&number=4111111111111111&expiry=12%2F30&cvv=123&accept=1")
        .send()
        .await
        .unwrap();
    assert_eq!(posted.status(), 400);
    assert!(
        posted
            .text()
            .await
            .unwrap()
            .contains("no se puede registrar")
    );
}
