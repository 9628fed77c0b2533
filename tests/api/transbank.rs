//! A Transbank stand-in: Oneclick Mall's REST API and Webpay's inscription page, on a
//! loopback port, for the tests of the cards rail (CONTRACT 13).
//!
//! Every path, header and body comes from Transbank's official Python SDK
//! (`TransbankDevelopers/transbank-sdk-python` at 195398a): `transbank/webpay/oneclick/
//! mall_inscription.py` and `mall_transaction.py` (paths and request bodies),
//! `transbank/common/headers_builder.py` (`Tbk-Api-Key-Id`, `Tbk-Api-Key-Secret`), and the
//! fixtures of `tests/mocks/responses_api_mocks.py`: `inscription_finish_response` and
//! `inscription_finish_fail` (finish), `authorize_response` (authorize and status),
//! `buy_order_not_found` (status of an unknown order), `create_error` (401 `Not
//! Authorized` for a wrong key). Behaviour seen by the PHP SDK's tests against the
//! integration environment (`TransbankDevelopers/transbank-sdk-php` at 4e17ccb): finishing an
//! inscription the customer never completed answers `{"response_code": -96}`, and an
//! authorization with an unknown `tbk_user` answers HTTP 500. The return to `response_url`
//! carries only `TBK_TOKEN`, or also `TBK_ORDEN_COMPRA` and `TBK_ID_SESION` when the customer
//! cancelled (transbankdevelopers.cl/documentacion/oneclick, "Resumen de flujos").
//!
//! Webpay Plus (portal payments) follows `transbank/webpay/webpay_plus/transaction.py` and the
//! fixtures `create_response` (`{token, url}` with `.../webpayserver/initTransaction`),
//! `commit_status_response` (commit and status), `commit_error` (422 "Invalid status 0 ..."
//! for a commit before the customer paid) and `create_error`; its return carries `token_ws`,
//! or `TBK_TOKEN`, `TBK_ORDEN_COMPRA` and `TBK_ID_SESION` after a cancellation, or only the
//! last two after a timeout (transbankdevelopers.cl/documentacion/webpay-plus, "Resumen de
//! flujos"). Transbank does not document what a second commit of the same token answers; the
//! stand-in refuses it with a 422, which is all the engine relies on (it asks the status).
//!
//! The stand-in's Webpay page takes the integration environment's documented test cards
//! (transbankdevelopers.cl/documentacion/como_empezar): VISA 4051 8856 0044 6623 (approved),
//! Redcompra 4051 8842 3993 7763 (debit, approved), Prepago VISA 4051 8860 0005 6590
//! (prepaid, approved) and MASTERCARD 5186 0595 5959 0568 (refused). Authorizations are
//! decided by amount (a real issuer decides by the card), so one card tries every outcome.

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::Form;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{Html, IntoResponse, Response};
use axum::routing::{get, post, put};
use axum::{Json, Router};
use serde_json::{Value, json};

pub const MALL: &str = "597055555541";
pub const CHILD: &str = "597055555542";
pub const WEBPAY: &str = "597055555532";
/// Transbank's published integration key (`IntegrationApiKeys.WEBPAY` in the SDKs).
pub const KEY: &str = "579B532A7440BB0C9079DED94D31EA1615BACEB56610332264630D42D0A36B1C";
const ONECLICK: &str = "/rswebpaytransaction/api/oneclick/v1.2";
const WEBPAY_PAGE: &str = "/webpayserver/bp_multicode_inscription.cgi";
const WEBPAY_PLUS: &str = "/rswebpaytransaction/api/webpay/v1.2";
const WEBPAY_PLUS_PAGE: &str = "/webpayserver/initTransaction";

pub const VISA: &str = "4051885600446623";
pub const REDCOMPRA: &str = "4051884239937763";
pub const PREPAGO: &str = "4051886000056590";
pub const REFUSED_CARD: &str = "5186059559590568";

/// Amounts the stand-in answers specially.
pub const DECLINED: i64 = 6666;
pub const OVER_DAILY_LIMIT: i64 = 9797;
pub const ANSWER_LOST: i64 = 5555;
/// Answered `response_code` -8 (also for 18888, 28888...): level 2's "Tarjeta vencida" (transbankdevelopers.cl/producto/
/// webpay, "Códigos de respuesta de autorización"); not a level 1 code.
pub const CARD_EXPIRED_AT_LEVEL_TWO: i64 = 8888;

struct Inscription {
    username: String,
    response_url: String,
    /// The card typed on the Webpay page, once the customer submitted it.
    card: Option<String>,
    finished: bool,
}

/// A Webpay Plus transaction, from `create` on.
#[derive(Clone, Debug)]
pub struct Payment {
    pub buy_order: String,
    pub session_id: String,
    pub amount: i64,
    return_url: String,
    /// `INITIALIZED` until the customer pays, then `AUTHORIZED` or `FAILED`.
    pub status: String,
    pub response_code: Option<i64>,
    pub payment_type_code: Option<String>,
    /// How many commits succeeded (at most one).
    pub commits: usize,
    pub refunded: bool,
}

#[derive(Default)]
pub struct Standin {
    /// Webpay Plus transactions by token.
    pub payments: Mutex<HashMap<String, Payment>>,
    inscriptions: Mutex<HashMap<String, Inscription>>,
    /// tbk_user → (username, card number).
    pub users: Mutex<HashMap<String, (String, String)>>,
    /// Every authorization Transbank would hold, by parent buy order.
    pub authorizations: Mutex<HashMap<String, Value>>,
    /// How many POST /transactions named each parent buy order.
    pub sends: Mutex<HashMap<String, usize>>,
    pub requests: Mutex<Vec<Value>>,
    pub deleted: Mutex<Vec<String>>,
    /// Parent buy orders refunded (`reversed_response`).
    pub refunded: Mutex<Vec<String>>,
    /// How long each authorization takes to answer (Transbank's latency).
    pub latency: Mutex<Duration>,
    in_flight: AtomicUsize,
    /// The most authorizations that were in flight at once.
    pub max_in_flight: AtomicUsize,
    next: Mutex<u64>,
    base: Mutex<String>,
}

impl Standin {
    fn fresh(&self, prefix: &str) -> String {
        let mut next = self.next.lock().unwrap();
        *next += 1;
        format!("{prefix}{:060}", *next)
    }
}

fn authorized(headers: &HeaderMap) -> bool {
    headers.get("tbk-api-key-id").and_then(|v| v.to_str().ok()) == Some(MALL)
        && headers
            .get("tbk-api-key-secret")
            .and_then(|v| v.to_str().ok())
            == Some(KEY)
}

fn authorized_webpay(headers: &HeaderMap) -> bool {
    headers.get("tbk-api-key-id").and_then(|v| v.to_str().ok()) == Some(WEBPAY)
        && headers
            .get("tbk-api-key-secret")
            .and_then(|v| v.to_str().ok())
            == Some(KEY)
}

fn error(status: StatusCode, message: &str) -> (StatusCode, Json<Value>) {
    (status, Json(json!({ "error_message": message })))
}

async fn start_inscription(
    State(standin): State<Arc<Standin>>,
    headers: HeaderMap,
    Json(body): Json<Value>,
) -> (StatusCode, Json<Value>) {
    if !authorized(&headers) {
        return error(StatusCode::UNAUTHORIZED, "Not Authorized");
    }
    let username = body["username"].as_str().unwrap_or_default();
    if username.is_empty() {
        return error(StatusCode::UNPROCESSABLE_ENTITY, "username is required");
    }
    if !body["email"].as_str().unwrap_or_default().contains('@') {
        return error(
            StatusCode::UNPROCESSABLE_ENTITY,
            "Invalid value for parameter: email",
        );
    }
    let token = standin.fresh("01ab");
    standin.inscriptions.lock().unwrap().insert(
        token.clone(),
        Inscription {
            username: username.to_string(),
            response_url: body["response_url"]
                .as_str()
                .unwrap_or_default()
                .to_string(),
            card: None,
            finished: false,
        },
    );
    let base = standin.base.lock().unwrap().clone();
    (
        StatusCode::OK,
        Json(json!({ "token": token, "url_webpay": format!("{base}{WEBPAY_PAGE}") })),
    )
}

/// Webpay's page: the form where the customer types the card (GET or POST with `TBK_TOKEN`),
/// and its submission (`card`, or `cancel`), which sends the browser back to the commerce.
async fn webpay_page(
    State(standin): State<Arc<Standin>>,
    Form(form): Form<HashMap<String, String>>,
) -> Response {
    let token = form.get("TBK_TOKEN").cloned().unwrap_or_default();
    let mut inscriptions = standin.inscriptions.lock().unwrap();
    let Some(inscription) = inscriptions.get_mut(&token) else {
        return (StatusCode::BAD_REQUEST, "token desconocido").into_response();
    };
    if form.contains_key("cancel") {
        let to = format!(
            "{}?TBK_TOKEN={token}&TBK_ORDEN_COMPRA=&TBK_ID_SESION=",
            inscription.response_url
        );
        return (StatusCode::SEE_OTHER, [(header::LOCATION, to)]).into_response();
    }
    if let Some(card) = form.get("card") {
        inscription.card = Some(card.replace(' ', ""));
        let to = format!("{}?TBK_TOKEN={token}", inscription.response_url);
        return (StatusCode::SEE_OTHER, [(header::LOCATION, to)]).into_response();
    }
    Html(format!(
        "<!doctype html><html lang=\"es\"><head><title>Webpay</title></head><body>\
         <h1>Webpay (stand-in)</h1>\
         <form method=\"post\" action=\"{WEBPAY_PAGE}\">\
         <input type=\"hidden\" name=\"TBK_TOKEN\" value=\"{token}\">\
         <label for=\"card\">Número de tarjeta</label><input id=\"card\" name=\"card\">\
         <button type=\"submit\">Inscribir</button></form>\
         <form method=\"post\" action=\"{WEBPAY_PAGE}\">\
         <input type=\"hidden\" name=\"TBK_TOKEN\" value=\"{token}\">\
         <input type=\"hidden\" name=\"cancel\" value=\"1\">\
         <button type=\"submit\">Anular</button></form></body></html>"
    ))
    .into_response()
}

async fn finish_inscription(
    State(standin): State<Arc<Standin>>,
    headers: HeaderMap,
    Path(token): Path<String>,
) -> (StatusCode, Json<Value>) {
    if !authorized(&headers) {
        return error(StatusCode::UNAUTHORIZED, "Not Authorized");
    }
    let mut inscriptions = standin.inscriptions.lock().unwrap();
    let Some(inscription) = inscriptions.get_mut(&token) else {
        return error(StatusCode::NOT_FOUND, "Invalid value for parameter: token");
    };
    let card = match (&inscription.card, inscription.finished) {
        (Some(card), false) => card.clone(),
        // `inscription_finish_fail` / never completed (-96).
        (None, _) | (_, true) => return (StatusCode::OK, Json(json!({ "response_code": -96 }))),
    };
    inscription.finished = true;
    let card_type = match card.as_str() {
        VISA => "Visa",
        REDCOMPRA => "Redcompra",
        PREPAGO => "Prepago",
        _ => return (StatusCode::OK, Json(json!({ "response_code": -1 }))),
    };
    let tbk_user = format!("08ed03b1-{}", &standin.fresh("")[48..]);
    // One card per username: a new inscription invalidates the user's previous one.
    let mut users = standin.users.lock().unwrap();
    users.retain(|_, (username, _)| *username != inscription.username);
    users.insert(
        tbk_user.clone(),
        (inscription.username.clone(), card.clone()),
    );
    (
        StatusCode::OK,
        Json(json!({
            "response_code": 0,
            "tbk_user": tbk_user,
            "authorization_code": "1213",
            "card_type": card_type,
            "card_number": format!("XXXXXXXXXXXX{}", &card[card.len() - 4..]),
        })),
    )
}

async fn delete_inscription(
    State(standin): State<Arc<Standin>>,
    headers: HeaderMap,
    Json(body): Json<Value>,
) -> Response {
    if !authorized(&headers) {
        return error(StatusCode::UNAUTHORIZED, "Not Authorized").into_response();
    }
    let tbk_user = body["tbk_user"].as_str().unwrap_or_default().to_string();
    standin.users.lock().unwrap().remove(&tbk_user);
    standin.deleted.lock().unwrap().push(tbk_user);
    StatusCode::NO_CONTENT.into_response()
}

/// An authorization goes through at Transbank whether or not the caller is still connected
/// (a client killed mid-request does not cancel it): the work runs in a task of its own.
async fn authorize(
    State(standin): State<Arc<Standin>>,
    headers: HeaderMap,
    Json(body): Json<Value>,
) -> (StatusCode, Json<Value>) {
    if !authorized(&headers) {
        return error(StatusCode::UNAUTHORIZED, "Not Authorized");
    }
    tokio::spawn(authorize_detached(standin, body))
        .await
        .unwrap_or_else(|_| error(StatusCode::INTERNAL_SERVER_ERROR, "stand-in task failed"))
}

async fn authorize_detached(standin: Arc<Standin>, body: Value) -> (StatusCode, Json<Value>) {
    standin.requests.lock().unwrap().push(body.clone());
    // Counted on arrival: a buy order sent again while (or after) the first send is processed.
    let arrived = body["buy_order"].as_str().unwrap_or_default().to_string();
    *standin.sends.lock().unwrap().entry(arrived).or_default() += 1;
    let now = standin.in_flight.fetch_add(1, Ordering::SeqCst) + 1;
    standin.max_in_flight.fetch_max(now, Ordering::SeqCst);
    let latency = *standin.latency.lock().unwrap();
    tokio::time::sleep(latency).await;
    standin.in_flight.fetch_sub(1, Ordering::SeqCst);
    let parent = body["buy_order"].as_str().unwrap_or_default().to_string();
    let detail = &body["details"][0];
    let child = detail["buy_order"].as_str().unwrap_or_default();
    let amount = detail["amount"].as_i64().unwrap_or(0);
    let known = standin
        .users
        .lock()
        .unwrap()
        .get(body["tbk_user"].as_str().unwrap_or_default())
        .is_some_and(|(username, _)| Some(username.as_str()) == body["username"].as_str());
    if !known {
        // What the integration environment answers an unknown tbk_user.
        return (
            StatusCode::INTERNAL_SERVER_ERROR,
            Json(json!({ "description": "Internal server error" })),
        );
    }
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
    if amount <= 0 {
        return error(
            StatusCode::UNPROCESSABLE_ENTITY,
            "Invalid value for parameter: amount",
        );
    }

    let response_code = match amount {
        DECLINED => -1,
        OVER_DAILY_LIMIT => -97,
        _ if amount % 10_000 == CARD_EXPIRED_AT_LEVEL_TWO => -8,
        _ => 0,
    };
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
    {
        // A repeated buy order is refused, checked and recorded at once.
        let mut authorizations = standin.authorizations.lock().unwrap();
        if authorizations.contains_key(&parent) {
            return error(
                StatusCode::UNPROCESSABLE_ENTITY,
                "Invalid value for parameter: buy_order",
            );
        }
        authorizations.insert(parent, answer.clone());
    }
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

fn router(standin: &Arc<Standin>) -> Router {
    Router::new()
        .route(
            &format!("{ONECLICK}/inscriptions"),
            post(start_inscription).delete(delete_inscription),
        )
        .route(
            &format!("{ONECLICK}/inscriptions/{{token}}"),
            put(finish_inscription),
        )
        .route(&format!("{ONECLICK}/transactions"), post(authorize))
        .route(
            &format!("{ONECLICK}/transactions/{{buy_order}}"),
            get(status),
        )
        .route(
            &format!("{ONECLICK}/transactions/{{buy_order}}/refunds"),
            post(refund),
        )
        .route(WEBPAY_PAGE, post(webpay_page))
        .route(&format!("{WEBPAY_PLUS}/transactions"), post(create_payment))
        .route(
            &format!("{WEBPAY_PLUS}/transactions/{{token}}"),
            put(commit_payment).get(payment_status),
        )
        .route(
            &format!("{WEBPAY_PLUS}/transactions/{{token}}/refunds"),
            post(refund_payment),
        )
        .route(WEBPAY_PLUS_PAGE, post(webpay_plus_page))
        .with_state(Arc::clone(standin))
}

/// Webpay Plus `create` (`transaction.py`): the SDK's lengths (buy order 26, session id 61,
/// return URL 255) and a positive amount, answered with `create_response`'s shape.
async fn create_payment(
    State(standin): State<Arc<Standin>>,
    headers: HeaderMap,
    Json(body): Json<Value>,
) -> (StatusCode, Json<Value>) {
    if !authorized_webpay(&headers) {
        return error(StatusCode::UNAUTHORIZED, "Not Authorized");
    }
    let text = |name: &str| body[name].as_str().unwrap_or_default().to_string();
    let (buy_order, session_id, return_url) =
        (text("buy_order"), text("session_id"), text("return_url"));
    for (name, value, max) in [
        ("buy_order", &buy_order, 26),
        ("session_id", &session_id, 61),
        ("return_url", &return_url, 255),
    ] {
        if value.is_empty() || value.len() > max {
            return error(
                StatusCode::UNPROCESSABLE_ENTITY,
                &format!("Invalid value for parameter: {name}"),
            );
        }
    }
    let amount = body["amount"].as_i64().unwrap_or(0);
    if amount <= 0 {
        return error(
            StatusCode::UNPROCESSABLE_ENTITY,
            "Invalid value for parameter: amount",
        );
    }
    let token = standin.fresh("01ab");
    standin.payments.lock().unwrap().insert(
        token.clone(),
        Payment {
            buy_order,
            session_id,
            amount,
            return_url,
            status: "INITIALIZED".into(),
            response_code: None,
            payment_type_code: None,
            commits: 0,
            refunded: false,
        },
    );
    let base = standin.base.lock().unwrap().clone();
    (
        StatusCode::OK,
        Json(json!({ "token": token, "url": format!("{base}{WEBPAY_PLUS_PAGE}") })),
    )
}

/// Webpay Plus's payment page: the card form (posted `token_ws`), and its submission (`card`,
/// `cancel` or `timeout`), which sends the browser back to the commerce's return URL.
async fn webpay_plus_page(
    State(standin): State<Arc<Standin>>,
    Form(form): Form<HashMap<String, String>>,
) -> Response {
    let token = form.get("token_ws").cloned().unwrap_or_default();
    let mut payments = standin.payments.lock().unwrap();
    let Some(payment) = payments.get_mut(&token) else {
        return (StatusCode::BAD_REQUEST, "token desconocido").into_response();
    };
    let back = |query: String| {
        let to = format!("{}?{query}", payment.return_url);
        (StatusCode::SEE_OTHER, [(header::LOCATION, to)]).into_response()
    };
    if form.contains_key("cancel") {
        return back(format!(
            "TBK_TOKEN={token}&TBK_ORDEN_COMPRA={}&TBK_ID_SESION={}",
            payment.buy_order, payment.session_id
        ));
    }
    if form.contains_key("timeout") {
        return back(format!(
            "TBK_ORDEN_COMPRA={}&TBK_ID_SESION={}",
            payment.buy_order, payment.session_id
        ));
    }
    if let Some(card) = form.get("card") {
        let (status, code, kind) = match card.replace(' ', "").as_str() {
            VISA => ("AUTHORIZED", 0, "VN"),
            REDCOMPRA => ("AUTHORIZED", 0, "VD"),
            PREPAGO => ("AUTHORIZED", 0, "VP"),
            _ => ("FAILED", -1, "VN"),
        };
        payment.status = status.into();
        payment.response_code = Some(code);
        payment.payment_type_code = Some(kind.into());
        let to = format!("{}?token_ws={token}", payment.return_url);
        return (StatusCode::SEE_OTHER, [(header::LOCATION, to)]).into_response();
    }
    Html(format!(
        "<!doctype html><html lang=\"es\"><head><title>Webpay</title></head><body>\
         <h1>Webpay Plus (stand-in)</h1><p>Monto: ${}</p>\
         <form method=\"post\" action=\"{WEBPAY_PLUS_PAGE}\">\
         <input type=\"hidden\" name=\"token_ws\" value=\"{token}\">\
         <label for=\"card\">Número de tarjeta</label><input id=\"card\" name=\"card\">\
         <button type=\"submit\">Pagar</button></form>\
         <form method=\"post\" action=\"{WEBPAY_PLUS_PAGE}\">\
         <input type=\"hidden\" name=\"token_ws\" value=\"{token}\">\
         <input type=\"hidden\" name=\"cancel\" value=\"1\">\
         <button type=\"submit\">Anular compra</button></form></body></html>",
        payment.amount
    ))
    .into_response()
}

/// `commit_status_response`'s shape for a transaction.
fn payment_answer(payment: &Payment) -> Value {
    json!({
        "vci": "TSY",
        "amount": payment.amount,
        "status": payment.status,
        "buy_order": payment.buy_order,
        "session_id": payment.session_id,
        "card_detail": { "card_number": "6623" },
        "accounting_date": "0624",
        "transaction_date": "2020-06-24T12:26:21.463Z",
        "authorization_code": if payment.response_code == Some(0) { "1213" } else { "000000" },
        "payment_type_code": payment.payment_type_code,
        "response_code": payment.response_code,
        "installments_number": 0,
    })
}

async fn commit_payment(
    State(standin): State<Arc<Standin>>,
    headers: HeaderMap,
    Path(token): Path<String>,
) -> (StatusCode, Json<Value>) {
    if !authorized_webpay(&headers) {
        return error(StatusCode::UNAUTHORIZED, "Not Authorized");
    }
    let mut payments = standin.payments.lock().unwrap();
    let Some(payment) = payments.get_mut(&token) else {
        return error(
            StatusCode::UNPROCESSABLE_ENTITY,
            "Invalid value for parameter: token",
        );
    };
    if payment.status == "INITIALIZED" {
        return error(
            StatusCode::UNPROCESSABLE_ENTITY,
            "Invalid status 0 for transaction while authorizing. Commerce will be notified by \
             webpay to authorize",
        );
    }
    if payment.commits > 0 {
        return error(
            StatusCode::UNPROCESSABLE_ENTITY,
            "Transaction already committed",
        );
    }
    payment.commits += 1;
    (StatusCode::OK, Json(payment_answer(payment)))
}

async fn payment_status(
    State(standin): State<Arc<Standin>>,
    headers: HeaderMap,
    Path(token): Path<String>,
) -> (StatusCode, Json<Value>) {
    if !authorized_webpay(&headers) {
        return error(StatusCode::UNAUTHORIZED, "Not Authorized");
    }
    match standin.payments.lock().unwrap().get(&token) {
        Some(payment) => (StatusCode::OK, Json(payment_answer(payment))),
        None => error(
            StatusCode::UNPROCESSABLE_ENTITY,
            "Invalid value for parameter: token",
        ),
    }
}

async fn refund_payment(
    State(standin): State<Arc<Standin>>,
    headers: HeaderMap,
    Path(token): Path<String>,
    Json(body): Json<Value>,
) -> (StatusCode, Json<Value>) {
    if !authorized_webpay(&headers) {
        return error(StatusCode::UNAUTHORIZED, "Not Authorized");
    }
    let mut payments = standin.payments.lock().unwrap();
    let Some(payment) = payments.get_mut(&token) else {
        return error(
            StatusCode::UNPROCESSABLE_ENTITY,
            "Invalid value for parameter: token",
        );
    };
    if payment.status != "AUTHORIZED" || payment.commits == 0 {
        return error(
            StatusCode::UNPROCESSABLE_ENTITY,
            "Invalid status for transaction",
        );
    }
    if body["amount"].as_i64().unwrap_or(0) > payment.amount {
        return error(
            StatusCode::UNPROCESSABLE_ENTITY,
            "Amount to refund is bigger than authorized",
        );
    }
    if payment.refunded {
        return error(
            StatusCode::UNPROCESSABLE_ENTITY,
            "Transaction already fully refunded",
        );
    }
    payment.refunded = true;
    (StatusCode::OK, Json(json!({ "type": "REVERSED" })))
}

/// `POST .../transactions/{buy_order}/refunds` (`mall_transaction.py` `refund`): the whole
/// amount of an authorized detail comes back as `{"type": "REVERSED"}`; a second refund is
/// `already_refunded_error`, more than authorized `bigger_amount_mall`.
async fn refund(
    State(standin): State<Arc<Standin>>,
    headers: HeaderMap,
    Path(buy_order): Path<String>,
    Json(body): Json<Value>,
) -> (StatusCode, Json<Value>) {
    if !authorized(&headers) {
        return error(StatusCode::UNAUTHORIZED, "Not Authorized");
    }
    let Some(authorization) = standin
        .authorizations
        .lock()
        .unwrap()
        .get(&buy_order)
        .cloned()
    else {
        return error(
            StatusCode::UNPROCESSABLE_ENTITY,
            "Invalid value for parameter: buy order not found",
        );
    };
    let detail = &authorization["details"][0];
    if detail["buy_order"] != body["detail_buy_order"] || body["commerce_code"] != CHILD {
        return error(
            StatusCode::UNPROCESSABLE_ENTITY,
            "Invalid value for parameter: Transaction Detail not found",
        );
    }
    if body["amount"].as_i64().unwrap_or(0) > detail["amount"].as_i64().unwrap_or(0) {
        return error(
            StatusCode::UNPROCESSABLE_ENTITY,
            "Amount to refund is bigger than authorized",
        );
    }
    let mut refunded = standin.refunded.lock().unwrap();
    if refunded.contains(&buy_order) {
        return error(
            StatusCode::UNPROCESSABLE_ENTITY,
            "Transaction already fully refunded",
        );
    }
    refunded.push(buy_order);
    (StatusCode::OK, Json(json!({ "type": "REVERSED" })))
}

/// Starts the stand-in over plain HTTP on a loopback port (a sandbox accepts an `http://`
/// base URL); answers it and its base URL.
pub async fn start() -> (Arc<Standin>, String) {
    let standin = Arc::new(Standin::default());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    *standin.base.lock().unwrap() = base.clone();
    let app = router(&standin);
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    (standin, base)
}

/// Starts the stand-in over HTTPS with this `localhost` certificate, as production reaches
/// Transbank; answers it and its base URL.
pub async fn start_https(cert_pem: &str, key_pem: &str) -> (Arc<Standin>, String) {
    let standin = Arc::new(Standin::default());
    let _ = rustls::crypto::aws_lc_rs::default_provider().install_default();
    let config = axum_server::tls_rustls::RustlsConfig::from_pem(
        cert_pem.as_bytes().to_vec(),
        key_pem.as_bytes().to_vec(),
    )
    .await
    .expect("TLS config");
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let base = format!(
        "https://localhost:{}",
        listener.local_addr().unwrap().port()
    );
    *standin.base.lock().unwrap() = base.clone();
    let server = axum_server::from_tcp_rustls(listener, config).expect("TLS listener");
    let app = router(&standin);
    tokio::spawn(async move { server.serve(app.into_make_service()).await });
    (standin, base)
}
