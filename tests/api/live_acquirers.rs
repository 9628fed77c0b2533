//! Against Transbank's real integration environment (`https://webpay3gint.transbank.cl`) with
//! its published test commerce codes and key: the Oneclick Mall client's calls, as far as they
//! go without a person typing a card on Webpay. It needs the internet, so it is ignored unless
//! asked for:
//!
//! ```text
//! MANDATO_LIVE_ACQUIRERS=1 cargo test --test api live_ -- --ignored
//! ```
//!
//! Fintoc publishes no shared test key, so its test also needs the keys of a Fintoc test-mode
//! account: `MANDATO_LIVE_FINTOC_PUBLIC_KEY` (`pk_test_...`) and
//! `MANDATO_LIVE_FINTOC_SECRET_KEY` (`sk_test_...`).
//!
//! What it expects is what Transbank's own SDK tests see there (`transbank-sdk-php` at
//! 4e17ccb, `tests/Webpay/OneClick/TransbankOneclickTest.php`): an inscription starts with a
//! token and Webpay's URL; finishing one the customer never completed answers -96; the status
//! of an unknown buy order is "not found"; an authorization for an unknown card is an HTTP 500,
//! which declines nobody here.

use mandato::config::AcquirerLimits;
use mandato::domain::acquirer::{TRANSBANK_INTEGRATION, TransbankCode, TransbankCodes};
use mandato::domain::money::{Currency, Money};
use mandato::domain::state::PaymentMethod;
use mandato::rails::transbank::{CallLog, InscriptionOutcome, Oneclick, Runtime};
use mandato::secret::Secret;
use mandato_core::processor::{ChargeRequest, Processor, ProcessorError};

use crate::transbank::{CHILD, KEY, MALL, WEBPAY};

fn live() -> Oneclick {
    assert_eq!(
        std::env::var("MANDATO_LIVE_ACQUIRERS").as_deref(),
        Ok("1"),
        "set MANDATO_LIVE_ACQUIRERS=1 to reach Transbank's integration environment"
    );
    let code = |c: &str| TransbankCode::parse(c).unwrap();
    Oneclick::new(
        CallLog::unkept(),
        TRANSBANK_INTEGRATION,
        TransbankCodes {
            mall: code(MALL),
            child: code(CHILD),
            webpay: code(WEBPAY),
            // Transbank's default level.
            response_codes: Default::default(),
        },
        Secret::new(KEY.to_string()),
        reqwest::Client::new(),
        Runtime::current_or_own().unwrap(),
        AcquirerLimits {
            in_flight: 4,
            timeout: std::time::Duration::from_secs(30),
        },
    )
}

#[test]
#[ignore = "reaches Transbank's integration environment: MANDATO_LIVE_ACQUIRERS=1 ... -- --ignored"]
fn live_transbank_oneclick_answers_as_documented() {
    let oneclick = live();
    let username = format!("mandato-live-{}", uuid::Uuid::new_v4().simple());
    let started = oneclick
        .start_inscription(&username, "live@example.cl", "https://example.cl/return")
        .expect("an inscription starts");
    assert!(!started.token.is_empty() && started.token.len() <= 64);
    assert!(
        started
            .url_webpay
            .starts_with("https://webpay3gint.transbank.cl/"),
        "{}",
        started.url_webpay
    );
    match oneclick.finish_inscription(&started.token) {
        Ok(InscriptionOutcome::Refused { response_code }) => assert_eq!(response_code, -96),
        other => panic!("an inscription nobody completed: {other:?}"),
    }
    let key = format!("live-{}", uuid::Uuid::new_v4().simple());
    assert!(
        matches!(oneclick.status(&key), Ok(None)),
        "unknown buy order"
    );
    let amount = Money::from_decimal(1000.into(), Currency::Clp).unwrap();
    let charged = oneclick.charge(&ChargeRequest {
        idempotency_key: &key,
        token: "not-a-tbk-user",
        customer_ref: &username,
        method: PaymentMethod::CreditCard,
        amount: &amount,
        forced: None,
    });
    assert!(
        matches!(charged, Err(ProcessorError::Unavailable(_))),
        "an unknown card declines nobody: {charged:?}"
    );
}

#[tokio::test(flavor = "multi_thread")]
#[ignore = "reaches Fintoc's API in test mode: MANDATO_LIVE_ACQUIRERS=1 and the MANDATO_LIVE_FINTOC_* keys ... -- --ignored"]
async fn live_fintoc_direct_debit_answers_as_documented() {
    assert_eq!(
        std::env::var("MANDATO_LIVE_ACQUIRERS").as_deref(),
        Ok("1"),
        "set MANDATO_LIVE_ACQUIRERS=1 to reach Fintoc"
    );
    let key = |name: &str| {
        std::env::var(name).unwrap_or_else(|_| panic!("{name}: a Fintoc test-mode key"))
    };
    let (public_key, secret) = (
        key("MANDATO_LIVE_FINTOC_PUBLIC_KEY"),
        key("MANDATO_LIVE_FINTOC_SECRET_KEY"),
    );
    assert!(
        secret.starts_with("sk_test_"),
        "only a test-mode key moves no money"
    );
    let mut app = crate::helpers::spawn_app().await;
    let fintoc = crate::fintoc_rail::set_fintoc_keys(
        &app,
        mandato::domain::acquirer::FINTOC_API,
        &public_key,
        &secret,
        None,
    );
    let answers = tokio::task::spawn_blocking(move || {
        let started = fintoc.create_intent("mandato live test")?;
        let read = fintoc.intent(&started.id)?;
        let missing = fintoc.subscription("sub_mandatoLiveMissing");
        Ok::<_, ProcessorError>((started, read, missing))
    })
    .await
    .unwrap();
    let (started, read, missing) = answers.expect("Fintoc answers the intent's calls");
    // docs.fintoc.com subscription-intents-create: an `si_` id and the widget's token.
    assert!(started.id.starts_with("si_"), "{}", started.id);
    assert!(!started.widget_token.is_empty());
    assert_eq!(read.id, started.id);
    assert!(read.subscription.is_none(), "nobody authorized it");
    assert!(
        matches!(missing, Err(ProcessorError::Refused(_))),
        "an unknown subscription is refused: {missing:?}"
    );
    let _ = &mut app;
}
