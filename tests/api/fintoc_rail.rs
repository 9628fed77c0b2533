//! The bank rail on Fintoc Direct Debit (CONTRACT 13): the engine's client against the
//! stand-in of `fintoc.rs`: one charge per attempt under the attempt's key, its outcome
//! learned later, subscription intents read back, and every call in the acquirer call log.

use std::sync::Arc;

use mandato::clock::Clock;
use mandato::domain::acquirer::{AcquirerInput, AcquirerSetting};
use mandato::domain::money::{Currency, Money};
use mandato::domain::state::{PaymentMethod, RejectionCode};
use mandato::rails::Acquirer;
use mandato::rails::fintoc::Fintoc;
use mandato::secret::Secret;
use mandato_core::processor::{ChargeRequest, ChargeResult, Processor};

use crate::fintoc::{
    self, FailureCode, Outcome, PUBLIC_KEY, SANDBOX_PASSWORD, SANDBOX_RUTS, SECRET,
    active_subscription, through_widget,
};
use crate::helpers::*;

/// Sets the commerce's bank rail to Fintoc at `base_url`, as `mandato acquirer set` does, and
/// answers the engine's client.
fn set_fintoc(app: &TestApp, base_url: &str) -> Arc<Fintoc> {
    set_fintoc_with(app, base_url, None)
}

/// The secret of the webhook endpoint "registered at Fintoc" in these tests.
const WEBHOOK_SECRET: &str = "whsec_mandato_standin_9f2c";

/// As [`set_fintoc`], with Fintoc's webhook secret when given.
fn set_fintoc_with(app: &TestApp, base_url: &str, webhook: Option<&str>) -> Arc<Fintoc> {
    set_fintoc_keys(app, base_url, PUBLIC_KEY, SECRET, webhook)
}

/// Sets the commerce's bank rail to Fintoc at `base_url` with these keys.
pub(crate) fn set_fintoc_keys(
    app: &TestApp,
    base_url: &str,
    public_key: &str,
    secret: &str,
    webhook: Option<&str>,
) -> Arc<Fintoc> {
    let setting = AcquirerSetting::parse(
        AcquirerInput {
            rail: Some("bank".into()),
            kind: Some("fintoc".into()),
            public_key: Some(public_key.into()),
            base_url: Some(base_url.into()),
            secret: Some(Secret::new(secret.to_string())),
            webhook_secret: webhook.map(|w| Secret::new(w.to_string())),
            ..AcquirerInput::default()
        },
        true,
    )
    .expect("a valid setting");
    let state = &app.running.state;
    let commerce = state.commerce_by_code(&app.commerce).unwrap().unwrap();
    state
        .store()
        .write(|tx| {
            mandato::operations::acquirers::set(
                tx,
                commerce.id,
                &setting,
                "2026-11-29T12:00:00.000Z",
            )
        })
        .unwrap();
    match state.acquirer_for(commerce.id, PaymentMethod::Pac).unwrap() {
        Acquirer::Fintoc(fintoc) => fintoc,
        _ => panic!("the bank rail is Fintoc"),
    }
}

fn clp(n: i64) -> Money {
    Money::from_decimal(n.into(), Currency::Clp).unwrap()
}

/// Charges `amount` to `subscription` under `key`, off the async workers.
async fn charge(fintoc: &Arc<Fintoc>, key: &str, subscription: &str, amount: i64) -> ChargeResult {
    let (fintoc, key, subscription) = (
        Arc::clone(fintoc),
        key.to_string(),
        subscription.to_string(),
    );
    tokio::task::spawn_blocking(move || {
        fintoc.charge(&ChargeRequest {
            idempotency_key: &key,
            token: &subscription,
            customer_ref: "usr_1",
            method: PaymentMethod::Pac,
            amount: &clp(amount),
            forced: None,
        })
    })
    .await
    .unwrap()
    .expect("Fintoc answered")
}

async fn blocking<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> T {
    tokio::task::spawn_blocking(f).await.unwrap()
}

/// The attempt key of the one charge made on Fintoc.
fn only_charge_key(app: &TestApp) -> String {
    app.running
        .state
        .store()
        .read(|c| {
            Ok(
                c.query_row("SELECT idempotency_key FROM fintoc_charges", &[], |r| {
                    r.get::<String>(0)
                })?,
            )
        })
        .unwrap()
}

fn charge_id(app: &TestApp, key: &str) -> String {
    let key = key.to_string();
    app.running
        .state
        .store()
        .read(|c| Ok(mandato_store::fintoc::charge_of(c, &key)?))
        .unwrap()
        .expect("the charge is recorded under the attempt's key")
}

#[tokio::test(flavor = "multi_thread")]
async fn a_charge_per_attempt_whose_outcome_the_bank_gives_later() {
    let app = spawn_app().await;
    let (standin, base) = fintoc::start().await;
    let fintoc = set_fintoc(&app, &base);
    let subscription = active_subscription(&standin, &base).await;

    // Pending until the bank answers; the same attempt sent again is the same charge.
    assert_eq!(
        charge(&fintoc, "att-1", &subscription, 5000).await,
        ChargeResult::Pending
    );
    assert_eq!(
        charge(&fintoc, "att-1", &subscription, 5000).await,
        ChargeResult::Pending
    );
    assert_eq!(
        standin
            .charges_created
            .load(std::sync::atomic::Ordering::SeqCst),
        1
    );
    let paid = charge_id(&app, "att-1");
    let f = Arc::clone(&fintoc);
    assert_eq!(
        blocking(move || f.status("att-1").unwrap()).await,
        Some(ChargeResult::Pending)
    );
    standin.settle_charge(&paid, Outcome::Succeeded);
    let f = Arc::clone(&fintoc);
    assert_eq!(
        blocking(move || f.settle("att-1").unwrap()).await,
        ChargeResult::Approved {
            authorization_code: paid.clone(),
            fee: None
        }
    );

    // A failure carries Fintoc's code, mapped.
    assert_eq!(
        charge(&fintoc, "att-2", &subscription, 7000).await,
        ChargeResult::Pending
    );
    standin.settle_charge(
        &charge_id(&app, "att-2"),
        Outcome::Failed(FailureCode::InsufficientFunds),
    );
    let f = Arc::clone(&fintoc);
    assert_eq!(
        blocking(move || f.settle("att-2").unwrap()).await,
        ChargeResult::Rejected {
            code: RejectionCode::InsufficientFunds
        }
    );
    // A key Fintoc never answered for is unknown, so the engine may send it.
    let f = Arc::clone(&fintoc);
    assert_eq!(
        blocking(move || f.status("never-sent").unwrap()).await,
        None
    );

    // A subscription that is not active is refused: nothing charged.
    standin.cancel(&subscription);
    assert!(matches!(
        charge(&fintoc, "att-3", &subscription, 9000).await,
        ChargeResult::Rejected { .. }
    ));

    // Every call is in the log, never the secret.
    let desk = crate::staff_ui_api::owner(&app).await;
    let calls = desk
        .get(&format!("/commerces/{COMMERCE}/acquirer-calls?limit=500"))
        .await;
    calls.expect(200, "ACQUIRER_CALLS_OK");
    let items = calls.body["payload"]["items"].as_array().unwrap();
    assert!(
        items
            .iter()
            .filter(|c| c["operation"] == "fintoc.charge.create")
            .count()
            >= 3,
        "{items:?}"
    );
    assert!(!calls.body.to_string().contains(SECRET));
}

#[tokio::test(flavor = "multi_thread")]
async fn an_intent_is_read_back_with_its_subscription() {
    let app = spawn_app().await;
    let (standin, base) = fintoc::start().await;
    let fintoc = set_fintoc(&app, &base);
    assert_eq!(fintoc.widget_script(), format!("{base}/widget/v1/"));
    let f = Arc::clone(&fintoc);
    let started = blocking(move || f.create_intent("Gimnasio Los Andes").unwrap()).await;
    assert!(
        started
            .widget_token
            .starts_with(&format!("{}_sec_", started.id))
    );
    assert_eq!(
        standin.intent(&started.id).unwrap()["business_profile"]["name"],
        "Gimnasio Los Andes"
    );

    let subscribed = through_widget(&base, SANDBOX_RUTS[1], SANDBOX_PASSWORD, "authorize").await;
    let f = Arc::clone(&fintoc);
    let intent = blocking(move || f.intent(&subscribed).unwrap()).await;
    assert_eq!(intent.status, "succeeded");
    let subscription = intent.subscription.expect("the subscription");
    assert_eq!(subscription.status, "pending");
    let account = subscription.account.expect("its account");
    assert!(account.number.is_some() && account.institution.is_some());

    let refused = through_widget(&base, SANDBOX_RUTS[2], "wrong", "authorize").await;
    let f = Arc::clone(&fintoc);
    let intent = blocking(move || f.intent(&refused).unwrap()).await;
    assert_eq!(intent.status, "failed");
    assert_eq!(
        intent.public_error.as_deref(),
        Some("login_invalid_credentials")
    );
}

/// The value of `data-{name}` in the widget page.
fn data_attribute(page: &str, name: &str) -> String {
    let marker = format!("data-{name}=\"");
    let at = page
        .find(&marker)
        .unwrap_or_else(|| panic!("{name} in {page}"))
        + marker.len();
    page[at..at + page[at..].find('"').unwrap()].replace("&amp;", "&")
}

/// The customer's way through the Magic Link's bank step and the stand-in's widget, with
/// `password` at the bank: answers where the return sent the browser and its status.
async fn authorize_on_fintoc(
    app: &TestApp,
    base: &str,
    link: &str,
    password: &str,
) -> (u16, String) {
    let browser = crate::rails::browser(app);
    let path = &link[link.find("/link/").unwrap()..];
    let page = browser
        .get(link)
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(page.contains("Autorizar con mi banco"), "{page}");
    assert!(
        !page.contains("name=\"accountNumber\""),
        "no account field on our page"
    );
    let action = format!("action=\"{path}/fintoc\"");
    let terms = crate::rails::input_after(&page, &action, "termsSha256");
    let widget = browser
        .post(format!("{}{path}/fintoc", app.base))
        .header("content-type", "application/x-www-form-urlencoded")
        .body(format!("termsSha256={terms}&accept=1"))
        .send()
        .await
        .unwrap();
    assert_eq!(widget.status(), 200);
    let policy = widget.headers()["content-security-policy"]
        .to_str()
        .unwrap()
        .to_string();
    assert!(
        policy.contains(base),
        "the widget's origin is allowed: {policy}"
    );
    let widget = widget.text().await.unwrap();
    assert!(
        widget.contains(&format!("src=\"{base}/widget/v1/\"")),
        "{widget}"
    );
    let token = data_attribute(&widget, "token");
    let returned = data_attribute(&widget, "returned");
    assert_eq!(data_attribute(&widget, "key"), PUBLIC_KEY);
    // What the stand-in's widget does: its page, then the bank's login.
    let opened = url::Url::parse_with_params(
        &format!("{base}/widget/subscribe"),
        &[
            ("widget_token", token.as_str()),
            ("public_key", PUBLIC_KEY),
            ("product", "subscriptions"),
            ("holder_type", "individual"),
            ("return", returned.as_str()),
        ],
    )
    .unwrap();
    assert_eq!(browser.get(opened).send().await.unwrap().status(), 200);
    let login = url::form_urlencoded::Serializer::new(String::new())
        .extend_pairs([
            ("widget_token", token.as_str()),
            ("return", returned.as_str()),
            ("username", SANDBOX_RUTS[0]),
            ("password", password),
            ("action", "authorize"),
        ])
        .finish();
    let back = browser
        .post(format!("{base}/widget/subscribe"))
        .header("content-type", "application/x-www-form-urlencoded")
        .body(login)
        .send()
        .await
        .unwrap();
    assert_eq!(back.status(), 303);
    let to = crate::rails::location(&back);
    let response = browser.get(&to).send().await.unwrap();
    let status = response.status().as_u16();
    let location = response
        .headers()
        .get(reqwest::header::LOCATION)
        .map(|v| v.to_str().unwrap().to_string());
    (
        status,
        location.unwrap_or_default() + &response.text().await.unwrap(),
    )
}

/// A PENDING mandate of `user` that allows only PAC, due in three days: its internalId and
/// Magic Link.
async fn bank_mandate(app: &TestApp, user: &str, id: &str, amount: i64) -> (String, String) {
    bank_mandate_of(app, user, id, amount, &[5]).await
}

/// As [`bank_mandate`], allowing `methods`.
async fn bank_mandate_of(
    app: &TestApp,
    user: &str,
    id: &str,
    amount: i64,
    methods: &[i64],
) -> (String, String) {
    let mut body = dynamic_body(app, user, id, &[("c1", amount, 3)]);
    body["paymentMethods"] = serde_json::json!(methods);
    let payload = app.create_mandate(&body).await;
    let field = |name: &str| payload["mandate"][name].as_str().unwrap().to_string();
    (field("internalId"), field("magicLink"))
}

/// The subscription Fintoc made for an intent the engine asked about.
fn subscription_made(standin: &fintoc::Standin) -> String {
    standin
        .requests
        .lock()
        .unwrap()
        .iter()
        .filter_map(|r| {
            r.uri
                .strip_prefix("/v1/subscription_intents/")
                .map(str::to_string)
        })
        .filter_map(|id| standin.intent(&id))
        .find_map(|i| i["subscription"]["id"].as_str().map(str::to_string))
        .expect("the subscription")
}

#[tokio::test(flavor = "multi_thread")]
async fn a_bank_account_authorized_on_fintoc_activates_once_the_bank_validates_it_and_is_charged() {
    let mut app = spawn_app().await;
    app.login().await;
    let (standin, base) = fintoc::start().await;
    set_fintoc(&app, &base);
    app.create_customer("cust-bank", &rut(15_151_515)).await;
    let (internal, link) = bank_mandate(&app, "cust-bank", "M-FINTOC", 12_000).await;

    // A wrong bank password: refused, with the reason; the mandate stays PENDING.
    let (status, said) = authorize_on_fintoc(&app, &base, &link, "wrong").await;
    assert_eq!(status, 400, "{said}");
    assert!(
        said.contains("los datos de acceso a su banco no son correctos"),
        "{said}"
    );

    // Authorized: the bank validates the subscription; the mandate waits, PENDING.
    let (status, to) = authorize_on_fintoc(&app, &base, &link, SANDBOX_PASSWORD).await;
    assert_eq!(status, 303, "{to}");
    assert!(to.contains("banco=validando"), "{to}");
    let waiting = app.get(&format!("/mandate/internalId/{internal}")).await;
    assert_eq!(
        waiting.body["payload"]["mandate"]["state"]["name"],
        "PENDING"
    );
    assert_eq!(
        waiting.body["payload"]["mandate"]["activationStatus"],
        "IN_VALIDATION"
    );
    // The Magic Link says so, and does not start a second authorization meanwhile.
    let browser = crate::rails::browser(&app);
    let shown = browser
        .get(&link)
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(shown.contains("Su banco está validando"), "{shown}");
    assert!(!shown.contains("Autorizar con mi banco"), "{shown}");
    let path = &link[link.find("/link/").unwrap()..];
    let again = browser
        .post(format!("{}{path}/fintoc", app.base))
        .header("content-type", "application/x-www-form-urlencoded")
        .body("accept=1")
        .send()
        .await
        .unwrap();
    assert_eq!(again.status(), 400);

    // The bank confirms; the next run activates the mandate with the account.
    let sub = subscription_made(&standin);
    standin.activate(&sub);
    app.run_charging(app.today()).await;
    let active = app.get(&format!("/mandate/internalId/{internal}")).await;
    assert_eq!(
        active.body["payload"]["mandate"]["state"]["name"], "ACTIVE",
        "{}",
        active.body
    );
    assert_eq!(active.body["payload"]["paymentMethod"]["id"], 5);
    assert_eq!(
        active.body["payload"]["mandate"]["activationStatus"],
        serde_json::Value::Null
    );

    // Charged on its date: IN_VALIDATION until Fintoc says the charge succeeded.
    let due = app.today() + chrono::Duration::days(3);
    let run = app.run_charging(due).await;
    assert_eq!(run.counts.in_validation, 1, "{run:?}");
    let installment = &app
        .get(&format!("/mandate/internalId/{internal}"))
        .await
        .body["payload"]["installments"][0]
        .clone();
    assert_eq!(
        installment["state"]["name"], "IN_VALIDATION",
        "{installment}"
    );
    let charge = standin
        .requests
        .lock()
        .unwrap()
        .iter()
        .filter(|r| r.uri == "/v1/charges")
        .count();
    assert_eq!(charge, 1);
    let key = only_charge_key(&app);
    standin.settle_charge(&charge_id(&app, &key), Outcome::Succeeded);
    app.run_charging(due + chrono::Duration::days(1)).await;
    let paid = &app
        .get(&format!("/mandate/internalId/{internal}"))
        .await
        .body["payload"]["installments"][0]
        .clone();
    assert_eq!(paid["state"]["name"], "PAID", "{paid}");
    let _ = &mut app;
}

/// POSTs a webhook to `/acquirers/fintoc/webhook` as Fintoc would; answers the status and body.
async fn deliver(app: &TestApp, body: &str, signature: Option<&str>) -> (u16, serde_json::Value) {
    let mut request = app
        .client
        .post(format!("{}/acquirers/fintoc/webhook", app.base))
        .header("content-type", "application/json")
        .body(body.to_string());
    if let Some(signature) = signature {
        request = request.header("Fintoc-Signature", signature);
    }
    let response = request.send().await.unwrap();
    let status = response.status().as_u16();
    (
        status,
        response.json().await.unwrap_or(serde_json::Value::Null),
    )
}

/// The mandate's lookup once `done` holds of it (the follower acts on a webhook in the
/// background), or the last one after ten seconds.
async fn lookup_until(
    app: &TestApp,
    internal: &str,
    done: impl Fn(&serde_json::Value) -> bool,
) -> serde_json::Value {
    let mut last = serde_json::Value::Null;
    for _ in 0..100 {
        last = app
            .get(&format!("/mandate/internalId/{internal}"))
            .await
            .body["payload"]
            .clone();
        if done(&last) {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    last
}

#[tokio::test(flavor = "multi_thread")]
async fn fintoc_webhooks_are_verified_and_prompt_the_engine_to_ask_fintoc() {
    let mut app = spawn_app().await;
    app.login().await;
    let (standin, base) = fintoc::start().await;
    set_fintoc_with(&app, &base, Some(WEBHOOK_SECRET));
    app.create_customer("cust-hook", &rut(16_161_616)).await;
    let (internal, link) = bank_mandate(&app, "cust-hook", "M-HOOK", 9_900).await;
    let (status, to) = authorize_on_fintoc(&app, &base, &link, SANDBOX_PASSWORD).await;
    assert_eq!(status, 303, "{to}");
    let sub = subscription_made(&standin);
    let activated = standin.activate(&sub);
    let now = app.clock.now().timestamp();
    let (event, signature) =
        standin.signed_event(WEBHOOK_SECRET, "subscription.activated", activated, now);

    // Unsigned, signed with another secret, tampered with, or stale: refused, nothing changes.
    let (status, said) = deliver(&app, &event, None).await;
    assert_eq!(
        (status, said["name"].as_str()),
        (400, Some("INVALID_SIGNATURE"))
    );
    let other = fintoc::signature("whsec_someone_else", now, &event);
    let (status, said) = deliver(&app, &event, Some(&other)).await;
    assert_eq!(
        (status, said["name"].as_str()),
        (400, Some("INVALID_SIGNATURE"))
    );
    let tampered = event.replace("subscription.activated", "subscription.canceled");
    let (status, _) = deliver(&app, &tampered, Some(&signature)).await;
    assert_eq!(status, 400);
    let stale = fintoc::signature(WEBHOOK_SECRET, now - 301, &event);
    let (status, said) = deliver(&app, &event, Some(&stale)).await;
    assert_eq!(
        (status, said["name"].as_str()),
        (400, Some("SIGNATURE_EXPIRED"))
    );
    tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    let still = app.get(&format!("/mandate/internalId/{internal}")).await;
    assert_eq!(still.body["payload"]["mandate"]["state"]["name"], "PENDING");

    // Verified: the engine asks Fintoc and activates the mandate, without a run.
    let (status, said) = deliver(&app, &event, Some(&signature)).await;
    assert_eq!(status, 200, "{said}");
    assert_eq!(said["received"], true);
    let active = lookup_until(&app, &internal, |m| {
        m["mandate"]["state"]["name"] == "ACTIVE"
    })
    .await;
    assert_eq!(active["mandate"]["state"]["name"], "ACTIVE", "{active}");
    assert_eq!(active["paymentMethod"]["id"], 5);
    // The same signed request again is a replay; Fintoc's resend, signed anew, is taken.
    let (status, said) = deliver(&app, &event, Some(&signature)).await;
    assert_eq!(
        (status, said["name"].as_str()),
        (400, Some("EVENT_REPLAYED"))
    );
    let resent = fintoc::signature(WEBHOOK_SECRET, now + 1, &event);
    assert_eq!(deliver(&app, &event, Some(&resent)).await.0, 200);

    // A charge's failure, told by webhook: rejected as Fintoc's API says, without a run.
    let due = app.today() + chrono::Duration::days(3);
    let run = app.run_charging(due).await;
    assert_eq!(run.counts.in_validation, 1, "{run:?}");
    let key = only_charge_key(&app);
    let charge = standin.settle_charge(
        &charge_id(&app, &key),
        Outcome::Failed(FailureCode::InsufficientFunds),
    );
    // A body that lies is not believed: the engine applies what Fintoc's API answers.
    let mut lying = charge.clone();
    lying["status"] = serde_json::json!("succeeded");
    lying["failure_code"] = serde_json::Value::Null;
    let now = app.clock.now().timestamp();
    let (event, signature) = standin.signed_event(WEBHOOK_SECRET, "charge.succeeded", lying, now);
    assert_eq!(deliver(&app, &event, Some(&signature)).await.0, 200);
    let rejected = lookup_until(&app, &internal, |m| {
        m["installments"][0]["state"]["name"] == "REJECTED"
    })
    .await;
    let installment = &rejected["installments"][0];
    assert_eq!(installment["state"]["name"], "REJECTED", "{rejected}");
    assert_eq!(installment["rejection"]["code"], "INSUFFICIENT_FUNDS");
    let _ = &mut app;
}

#[tokio::test(flavor = "multi_thread")]
async fn an_epac_mandate_on_fintoc_activates_with_its_signed_document() {
    let mut app = spawn_app().await;
    app.login().await;
    let (standin, base) = fintoc::start().await;
    set_fintoc(&app, &base);
    app.create_customer("cust-epac", &rut(17_171_717)).await;
    let (internal, link) = bank_mandate_of(&app, "cust-epac", "M-EPAC", 15_000, &[6, 3]).await;
    let shown = crate::rails::browser(&app)
        .get(&link)
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(shown.contains("EPAC: mandato electrónico"), "{shown}");
    let (status, to) = authorize_on_fintoc(&app, &base, &link, SANDBOX_PASSWORD).await;
    assert_eq!(status, 303, "{to}");
    standin.activate(&subscription_made(&standin));
    app.run_charging(app.today()).await;
    let active = app.get(&format!("/mandate/internalId/{internal}")).await;
    assert_eq!(
        active.body["payload"]["mandate"]["state"]["name"], "ACTIVE",
        "{}",
        active.body
    );
    assert_eq!(active.body["payload"]["paymentMethod"]["id"], 6);
    app.activation_document(&internal);
    let _ = &mut app;
}
