//! Each commerce's money moves through its own acquirer (CONTRACT 13): production never
//! simulates a charge, and a cards rail set to Transbank enrols cards on Webpay's page
//! (Oneclick inscriptions from the Magic Link) and charges them through Oneclick Mall, against
//! the stand-in of `transbank.rs`.

use reqwest::redirect::Policy;
use serde_json::{Value, json};

use mandato::domain::acquirer::{AcquirerInput, AcquirerSetting};
use mandato::secret::Secret;

use crate::helpers::*;
use crate::transbank::{
    self, ANSWER_LOST, CHILD, DECLINED, KEY, MALL, OVER_DAILY_LIMIT, PREPAGO, REDCOMPRA,
    REFUSED_CARD, VISA, WEBPAY,
};

/// Sets the commerce's cards rail to Transbank at `base_url`, as `mandato acquirer set` does.
pub(crate) fn set_transbank(app: &TestApp, base_url: &str) {
    set_transbank_at(app, base_url, None)
}

/// As [`set_transbank`], with the commerce's level of response codes when given.
fn set_transbank_at(app: &TestApp, base_url: &str, level: Option<&str>) {
    let sandbox = app.running.state.config.environment.is_sandbox();
    let setting = AcquirerSetting::parse(
        AcquirerInput {
            rail: Some("cards".into()),
            kind: Some("transbank".into()),
            mall_code: Some(MALL.into()),
            child_code: Some(CHILD.into()),
            webpay_code: Some(WEBPAY.into()),
            response_code_level: level.map(str::to_string),
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
                // A change is a new `updated_at`: the engine rebuilds its client on it.
                &format!("2026-11-28T12:00:0{}.000Z", level.unwrap_or("1")),
            )
        })
        .unwrap();
}

/// A browser that does not follow redirects, to see each hop, and trusts the
/// installation's development CA (the HTTPS stand-in's certificate comes from it).
pub fn browser(app: &TestApp) -> reqwest::Client {
    let ca = mandato::cli::dev_ca(app.running.state.store()).expect("dev CA");
    reqwest::Client::builder()
        .redirect(Policy::none())
        .add_root_certificate(reqwest::Certificate::from_pem(ca.cert_pem.as_bytes()).unwrap())
        .build()
        .unwrap()
}

/// The value of the first `name="{name}"` input after `after` in `html`.
pub(crate) fn input_after(html: &str, after: &str, name: &str) -> String {
    let from = html
        .find(after)
        .unwrap_or_else(|| panic!("{after} in {html}"));
    let rest = &html[from..];
    let at = rest
        .find(&format!("name=\"{name}\" value=\""))
        .unwrap_or_else(|| panic!("{name} after {after}"))
        + name.len()
        + 15;
    rest[at..rest[at..].find('"').unwrap() + at].to_string()
}

pub(crate) fn location(response: &reqwest::Response) -> String {
    response.headers()[reqwest::header::LOCATION]
        .to_str()
        .unwrap()
        .to_string()
}

/// The customer's way through the Magic Link and Webpay with `card` (or cancelling there):
/// answers the last response, the one of the return to the Magic Link.
pub(crate) async fn enrol_on_webpay(
    app: &TestApp,
    link: &str,
    card: Option<&str>,
) -> reqwest::Response {
    enrol_through_webpay(&browser(app), &app.base, link, card).await
}

/// As `enrol_on_webpay`, for any installation at `base`.
pub async fn enrol_through_webpay(
    browser: &reqwest::Client,
    base: &str,
    link: &str,
    card: Option<&str>,
) -> reqwest::Response {
    let path = &link[link.find("/link/").unwrap()..];
    let page = browser
        .get(link)
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(page.contains("Inscribir"), "{page}");
    assert!(
        !page.contains("name=\"number\""),
        "no card field on our page"
    );
    let action = format!("action=\"{path}/oneclick\"");
    let terms = input_after(&page, &action, "termsSha256");
    let handoff = browser
        .post(format!("{base}{path}/oneclick"))
        .header("content-type", "application/x-www-form-urlencoded")
        .body(format!("termsSha256={terms}&accept=1"))
        .send()
        .await
        .unwrap();
    assert_eq!(handoff.status(), 200);
    let policy = handoff.headers()["content-security-policy"]
        .to_str()
        .unwrap()
        .to_string();
    assert!(policy.contains("script-src 'sha256-"), "{policy}");
    let handoff = handoff.text().await.unwrap();
    let url_webpay = {
        let at = handoff
            .find("id=\"webpay\" method=\"post\" action=\"")
            .unwrap()
            + 34;
        handoff[at..handoff[at..].find('"').unwrap() + at].to_string()
    };
    let tbk_token = input_after(&handoff, "id=\"webpay\"", "TBK_TOKEN");
    let typed = match card {
        Some(card) => format!("TBK_TOKEN={tbk_token}&card={card}"),
        None => format!("TBK_TOKEN={tbk_token}&cancel=1"),
    };
    let back = browser
        .post(&url_webpay)
        .header("content-type", "application/x-www-form-urlencoded")
        .body(typed)
        .send()
        .await
        .unwrap();
    assert_eq!(back.status(), 303);
    browser.get(location(&back)).send().await.unwrap()
}

/// A customer of its own (Oneclick keeps one card per username) with a DYNAMIC mandate of
/// one installment of `amount` CLP due tomorrow, enrolled on Webpay with the VISA test card;
/// answers the mandate's internal id.
pub(crate) async fn active_mandate(app: &TestApp, id: &str, amount: i64) -> String {
    let customer = format!("cust-{id}");
    app.create_customer(&customer, &rut(10_000_000 + amount as u32))
        .await;
    let payload = app
        .create_mandate(&dynamic_body(app, &customer, id, &[("c1", amount, 1)]))
        .await;
    let internal = payload["mandate"]["internalId"]
        .as_str()
        .unwrap()
        .to_string();
    let link = payload["mandate"]["magicLink"].as_str().unwrap();
    let returned = enrol_on_webpay(app, link, Some(VISA)).await;
    assert_eq!(returned.status(), 303, "{:?}", returned.text().await);
    internal
}

async fn installment_of(app: &TestApp, internal: &str) -> Value {
    let reply = app.get(&format!("/mandate/internalId/{internal}")).await;
    reply.body["payload"]["installments"][0].clone()
}

#[tokio::test(flavor = "multi_thread")]
async fn a_card_inscribed_on_webpay_activates_and_is_charged_through_oneclick() {
    let mut app = spawn_app().await;
    app.login().await;
    let (standin, base) = transbank::start().await;
    set_transbank(&app, &base);
    let paid = active_mandate(&app, "M-PAID", 5000).await;
    let declined = active_mandate(&app, "M-DECLINED", DECLINED).await;
    let limited = active_mandate(&app, "M-LIMIT", OVER_DAILY_LIMIT).await;
    let lost = active_mandate(&app, "M-LOST", ANSWER_LOST).await;

    // Activated as a typed card would be: the card's brand and last four, its event.
    let active = app.get(&format!("/mandate/internalId/{paid}")).await;
    let mandate = &active.body["payload"]["mandate"];
    assert_eq!(mandate["state"]["name"], "ACTIVE", "{mandate}");
    let method = &active.body["payload"]["paymentMethod"];
    assert_eq!(method["id"], 3, "{method}");
    assert_eq!(method["instrument"], "Visa **** 6623");
    let customer = active.body["payload"]["customer"]["internalUserId"]
        .as_str()
        .unwrap_or_default()
        .to_string();

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
    // Oneclick's username is the customer's internalUserId, the card its inscription's.
    if !customer.is_empty() {
        assert_eq!(first["username"], customer.as_str());
    }
    let users = standin.users.lock().unwrap().clone();
    assert!(users.contains_key(first["tbk_user"].as_str().unwrap()));
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
    let (standin, base) = transbank::start().await;
    set_transbank(&app, &base);
    let mandate = active_mandate(&app, "M-1", 5000).await;
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
    // Activated in the sandbox, with the simulation's card.
    let payload = app
        .create_mandate(&dynamic_body(
            &app,
            "cust-1",
            "M-ACTIVE",
            &[("c1", 5000, 1)],
        ))
        .await;
    let active = payload["mandate"]["internalId"]
        .as_str()
        .unwrap()
        .to_string();
    app.post(
        &format!("/sandbox/mandates/{active}/activate"),
        &json!({"paymentMethodId": 3, "card": {"number": "4111111111111111", "expiry": "12/30", "cvv": "123"}}),
    )
    .await
    .expect(200, "SANDBOX_ACTIVATE_OK");
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

#[tokio::test(flavor = "multi_thread")]
async fn refused_cancelled_and_unwanted_cards_leave_the_mandate_pending() {
    let mut app = spawn_app().await;
    app.login().await;
    let (standin, base) = transbank::start().await;
    set_transbank(&app, &base);
    app.create_customer("cust-1", "12.345.678-5").await;
    let mut body = dynamic_body(&app, "cust-1", "M-CREDIT", &[("c1", 5000, 1)]);
    set(&mut body, "/paymentMethods", json!([3]));
    let payload = app.create_mandate(&body).await;
    let link = payload["mandate"]["magicLink"]
        .as_str()
        .unwrap()
        .to_string();
    let pending = |reply: Value| reply["payload"]["mandate"]["state"]["name"].clone();

    // Cancelled on Webpay: nothing registered.
    let cancelled = enrol_on_webpay(&app, &link, None).await;
    assert_eq!(cancelled.status(), 400);
    let text = cancelled.text().await.unwrap();
    assert!(text.contains("Anuló la inscripción"), "{text}");
    // Refused by Transbank (the integration environment's refused MasterCard).
    let refused = enrol_on_webpay(&app, &link, Some(REFUSED_CARD)).await;
    assert_eq!(refused.status(), 400);
    assert!(refused.text().await.unwrap().contains("código -1"));
    // A debit card on a credit-only mandate: refused, and its inscription deleted.
    let debit = enrol_on_webpay(&app, &link, Some(REDCOMPRA)).await;
    assert_eq!(debit.status(), 400);
    assert!(debit.text().await.unwrap().contains("no admite"));
    assert_eq!(standin.deleted.lock().unwrap().len(), 1);
    let mandate = app.get("/mandate/id/M-CREDIT").await.body;
    assert_eq!(pending(mandate), "PENDING");

    // A prepaid card where prepaid is allowed: method 11 follows the card.
    app.create_customer("cust-2", &rut(11_111_112)).await;
    let mut body = dynamic_body(&app, "cust-2", "M-PREPAID", &[("c1", 5000, 1)]);
    set(&mut body, "/paymentMethods", json!([3, 11]));
    let payload = app.create_mandate(&body).await;
    let link = payload["mandate"]["magicLink"]
        .as_str()
        .unwrap()
        .to_string();
    let activated = enrol_on_webpay(&app, &link, Some(PREPAGO)).await;
    assert_eq!(activated.status(), 303);
    let mandate = app.get("/mandate/id/M-PREPAID").await.body;
    assert_eq!(mandate["payload"]["mandate"]["state"]["name"], "ACTIVE");
    assert_eq!(mandate["payload"]["paymentMethod"]["id"], 11);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_run_keeps_many_authorizations_in_flight() {
    let mut app = spawn_app().await;
    app.login().await;
    let (standin, base) = transbank::start().await;
    set_transbank(&app, &base);
    let mandates = 24;
    for n in 0..mandates {
        active_mandate(&app, &format!("M-{n}"), 1000 + n).await;
    }
    *standin.latency.lock().unwrap() = std::time::Duration::from_millis(300);
    let run = app
        .run_charging(app.today() + chrono::Duration::days(1))
        .await;
    assert_eq!(run.counts.paid, mandates, "{run:?}");
    // One at a time would never overlap; the run's bound (64) lets them all.
    let most = standin
        .max_in_flight
        .load(std::sync::atomic::Ordering::SeqCst);
    assert!(most >= 12, "at most {most} authorizations in flight");
    let sends = standin.sends.lock().unwrap().clone();
    assert!(sends.values().all(|n| *n == 1), "{sends:?}");
}

/// Production over HTTPS: Transbank's base URL must be `https://`, its certificate is trusted
/// through the installation's trusted roots, and the whole way (inscription, charge) works
/// without the simulation.
#[tokio::test(flavor = "multi_thread")]
async fn production_enrols_and_charges_through_transbank_over_https() {
    let mut app = spawn_app_with(Options {
        environment: mandato::config::Environment::Production,
        ..Options::default()
    })
    .await;
    let jwe = mandato::auth::jwe::encrypt_password(PASSWORD, &app.public_key().await).unwrap();
    let login = app
        .post(
            "/login",
            &json!({"username": app.commerce, "password": jwe}),
        )
        .await;
    login.expect(200, "LOGIN_OK");
    app.token = Some(login.body["payload"]["token"].as_str().unwrap().to_string());

    let store = app.running.state.store();
    let ca = mandato::cli::dev_ca(store).expect("dev CA");
    let (cert, key) = ca.issue_localhost().expect("localhost certificate");
    let (standin, base) = transbank::start_https(&cert, key.expose()).await;
    // Production trusts no CA of its own until it is added as a root.
    let root = mandato::notify::tls::parse_roots(&ca.cert_pem)
        .unwrap()
        .remove(0);
    store
        .write(|tx| {
            mandato::store::deliveries::add_trusted_root(
                tx,
                &root.pem,
                &root.fingerprint,
                &root.subject,
                "2026-01-01T00:00:00.000Z",
            )?;
            Ok(())
        })
        .unwrap();
    // An `http://` Transbank is refused in production.
    let refused = AcquirerSetting::parse(
        AcquirerInput {
            rail: Some("cards".into()),
            kind: Some("transbank".into()),
            mall_code: Some(MALL.into()),
            child_code: Some(CHILD.into()),
            webpay_code: Some(WEBPAY.into()),
            base_url: Some("http://127.0.0.1:9".into()),
            secret: Some(Secret::new(KEY.to_string())),
            ..AcquirerInput::default()
        },
        false,
    );
    assert!(refused.is_err());
    set_transbank(&app, &base);

    let internal = active_mandate(&app, "M-LIVE", 12990).await;
    let run = app
        .run_charging(app.today() + chrono::Duration::days(1))
        .await;
    assert_eq!(run.counts.paid, 1, "{run:?}");
    assert_eq!(run.counts.acquirer_not_configured, 0, "{run:?}");
    let paid = installment_of(&app, &internal).await;
    assert_eq!(paid["state"]["name"], "PAID", "{paid}");
    assert_eq!(standin.authorizations.lock().unwrap().len(), 1);
}

#[tokio::test(flavor = "multi_thread")]
async fn staff_refund_a_card_charge_through_oneclick() {
    let mut app = spawn_app().await;
    app.login().await;
    let (standin, base) = transbank::start().await;
    set_transbank(&app, &base);
    let internal = active_mandate(&app, "M-REFUND", 15990).await;
    app.run_charging(app.today() + chrono::Duration::days(1))
        .await;
    let paid = installment_of(&app, &internal).await;
    assert_eq!(paid["state"]["name"], "PAID", "{paid}");
    let installment = paid["internalId"].as_str().unwrap().to_string();

    let admin = crate::staff_ui_api::owner(&app).await;
    let path = format!("/installments/{installment}/refund");
    admin
        .post(&path, json!({}))
        .await
        .expect(400, "VALIDATION_ERROR");
    let refunded = admin
        .post(&path, json!({"reason": "El cliente canceló el servicio"}))
        .await;
    refunded.expect(200, "MANDATE_OK");
    assert_eq!(standin.refunded.lock().unwrap().len(), 1);
    let reversed = installment_of(&app, &internal).await;
    assert_eq!(reversed["state"]["name"], "REVERSED", "{reversed}");
    // Its payment event and the ledger's REVERSAL.
    let events = app.events_of(&internal);
    assert!(
        events
            .iter()
            .any(|e| e["installment"]["state"]["name"] == "REVERSED"),
        "{events:?}"
    );
    // Only once.
    admin
        .post(&path, json!({"reason": "otra vez"}))
        .await
        .expect(400, "INSTALLMENT_STATE_CONFLICT");
    assert_eq!(standin.refunded.lock().unwrap().len(), 1);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_card_is_replaced_through_a_new_inscription() {
    let mut app = spawn_app().await;
    app.login().await;
    let (standin, base) = transbank::start().await;
    set_transbank(&app, &base);
    app.create_customer("cust-1", "12.345.678-5").await;
    let mut body = dynamic_body(&app, "cust-1", "M-CHANGE", &[("c1", 5000, 1)]);
    set(&mut body, "/paymentMethods", json!([3, 4]));
    let payload = app.create_mandate(&body).await;
    let link = payload["mandate"]["magicLink"]
        .as_str()
        .unwrap()
        .to_string();
    assert_eq!(enrol_on_webpay(&app, &link, Some(VISA)).await.status(), 303);
    let first_user = standin.users.lock().unwrap().keys().next().unwrap().clone();

    // The active mandate's page offers a new inscription; a debit card replaces the credit one.
    let changed = enrol_on_webpay(&app, &link, Some(REDCOMPRA)).await;
    assert_eq!(changed.status(), 303);
    assert!(
        location(&changed).contains("tarjeta="),
        "{}",
        location(&changed)
    );
    let mandate = app.get("/mandate/id/M-CHANGE").await.body;
    assert_eq!(mandate["payload"]["mandate"]["state"]["name"], "ACTIVE");
    assert_eq!(mandate["payload"]["paymentMethod"]["id"], 4, "{mandate}");
    assert_eq!(
        mandate["payload"]["paymentMethod"]["instrument"],
        "Redcompra **** 7763"
    );
    // One card per Oneclick username: the old inscription is gone at Transbank, and the run
    // charges the new one.
    assert!(!standin.users.lock().unwrap().contains_key(&first_user));
    let run = app
        .run_charging(app.today() + chrono::Duration::days(1))
        .await;
    assert_eq!(run.counts.paid, 1, "{run:?}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_link_starts_at_most_twenty_inscriptions_an_hour() {
    let mut app = spawn_app().await;
    app.login().await;
    let (_standin, base) = transbank::start().await;
    set_transbank(&app, &base);
    app.create_customer("cust-1", "12.345.678-5").await;
    let payload = app
        .create_mandate(&dynamic_body(&app, "cust-1", "M-SPAM", &[("c1", 5000, 1)]))
        .await;
    let link = payload["mandate"]["magicLink"]
        .as_str()
        .unwrap()
        .to_string();
    let path = &link[link.find("/link/").unwrap()..];
    let browser = browser(&app);
    let start = || {
        browser
            .post(format!("{}{path}/oneclick", app.base))
            .header("content-type", "application/x-www-form-urlencoded")
            .body("accept=1")
            .send()
    };
    for _ in 0..20 {
        assert_eq!(start().await.unwrap().status(), 200);
    }
    let refused = start().await.unwrap();
    assert_eq!(refused.status(), 429);
    assert!(refused.headers().contains_key("retry-after"));
}

#[tokio::test(flavor = "multi_thread")]
async fn a_customers_new_card_moves_their_other_mandates_to_it() {
    let mut app = spawn_app().await;
    app.login().await;
    let (standin, base) = transbank::start().await;
    set_transbank(&app, &base);
    app.create_customer("cust-two", &rut(12_121_212)).await;
    let mut links = Vec::new();
    let mut ids = Vec::new();
    for (id, amount) in [("M-FIRST", 4100), ("M-SECOND", 4200)] {
        let payload = app
            .create_mandate(&dynamic_body(&app, "cust-two", id, &[("c1", amount, 1)]))
            .await;
        ids.push(
            payload["mandate"]["internalId"]
                .as_str()
                .unwrap()
                .to_string(),
        );
        links.push(
            payload["mandate"]["magicLink"]
                .as_str()
                .unwrap()
                .to_string(),
        );
    }
    let page = browser(&app)
        .get(&links[0])
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(
        page.contains("la nueva la reemplaza también en sus otros mandatos"),
        "{page}"
    );
    assert_eq!(
        enrol_on_webpay(&app, &links[0], Some(VISA)).await.status(),
        303
    );
    // The second mandate's inscription replaces the customer's card at Transbank.
    assert_eq!(
        enrol_on_webpay(&app, &links[1], Some(REDCOMPRA))
            .await
            .status(),
        303
    );
    assert_eq!(
        standin.users.lock().unwrap().len(),
        1,
        "one card per username"
    );
    let first = app.get(&format!("/mandate/internalId/{}", ids[0])).await;
    assert_eq!(
        first.body["payload"]["paymentMethod"]["instrument"], "Redcompra **** 7763",
        "{}",
        first.body
    );
    assert_eq!(first.body["payload"]["paymentMethod"]["id"], 4);

    let run = app
        .run_charging(app.today() + chrono::Duration::days(1))
        .await;
    assert_eq!(
        run.counts.paid, 2,
        "both charged to the card Transbank holds: {run:?}"
    );
    let _ = &mut app;
}

#[tokio::test(flavor = "multi_thread")]
async fn every_call_to_transbank_is_logged_without_secrets() {
    let mut app = spawn_app().await;
    app.login().await;
    let (standin, base) = transbank::start().await;
    set_transbank(&app, &base);
    active_mandate(&app, "M-LOG-PAID", 5100).await;
    active_mandate(&app, "M-LOG-LOST", ANSWER_LOST).await;
    app.run_charging(app.today() + chrono::Duration::days(1))
        .await;

    let desk = crate::staff_ui_api::owner(&app).await;
    let calls = desk
        .get(&format!("/commerces/{COMMERCE}/acquirer-calls?limit=500"))
        .await;
    calls.expect(200, "ACQUIRER_CALLS_OK");
    let items = calls.body["payload"]["items"].as_array().unwrap().clone();
    let of = |operation: &str| -> Vec<Value> {
        items
            .iter()
            .filter(|c| c["operation"] == operation)
            .cloned()
            .collect()
    };
    assert_eq!(of("oneclick.inscription.start").len(), 2, "{items:?}");
    assert_eq!(of("oneclick.inscription.finish").len(), 2, "{items:?}");
    let authorizations = of("oneclick.authorize");
    assert_eq!(authorizations.len(), 2, "{items:?}");
    let approved = authorizations
        .iter()
        .find(|c| c["httpStatus"] == 200)
        .expect("the approved authorization");
    assert_eq!(approved["responseCode"], 0);
    assert_eq!(approved["reference"].as_str().unwrap().len(), 26);
    assert!(approved["durationMs"].as_i64().unwrap() >= 0);
    let lost = authorizations
        .iter()
        .find(|c| c["httpStatus"] == 502)
        .expect("the lost answer");
    assert!(lost["error"].as_str().unwrap().contains("502"), "{lost}");

    // Filtered by the buy order: that attempt's calls only.
    let reference = approved["reference"].as_str().unwrap();
    let one = desk
        .get(&format!(
            "/commerces/{COMMERCE}/acquirer-calls?reference={reference}"
        ))
        .await;
    let only = one.body["payload"]["items"].as_array().unwrap();
    assert_eq!(only.len(), 1, "{only:?}");

    // Never a secret or a card token.
    let text = calls.body.to_string();
    assert!(!text.contains(KEY));
    for tbk_user in standin.users.lock().unwrap().keys() {
        assert!(!text.contains(tbk_user.as_str()), "{tbk_user}");
    }
    desk.get(&format!("/commerces/{COMMERCE}/acquirer-calls?limit=0"))
        .await
        .expect(400, "VALIDATION_ERROR");
    let _ = &mut app;
}

#[tokio::test(flavor = "multi_thread")]
async fn response_codes_are_read_at_the_commerces_level() {
    let mut app = spawn_app().await;
    app.login().await;
    let (_standin, base) = transbank::start().await;
    let tomorrow = app.today() + chrono::Duration::days(1);
    // Level 1 (the default): -8 is no level 1 code, a decline like any other.
    set_transbank(&app, &base);
    let one = active_mandate(&app, "M-LEVEL1", transbank::CARD_EXPIRED_AT_LEVEL_TWO).await;
    app.run_charging(tomorrow).await;
    let declined = installment_of(&app, &one).await;
    assert_eq!(declined["rejection"]["code"], "CARD_DECLINED", "{declined}");
    // Level 2: -8 is "Tarjeta vencida".
    set_transbank_at(&app, &base, Some("2"));
    let two = active_mandate(
        &app,
        "M-LEVEL2",
        transbank::CARD_EXPIRED_AT_LEVEL_TWO + 10_000,
    )
    .await;
    app.run_charging(tomorrow + chrono::Duration::days(1)).await;
    let expired = installment_of(&app, &two).await;
    assert_eq!(expired["rejection"]["code"], "EXPIRED_CARD", "{expired}");
    let _ = &mut app;
}
