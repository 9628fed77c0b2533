//! The bank rail on Fintoc Direct Debit (CONTRACT 13): the engine's client against the
//! stand-in of `fintoc.rs`: one charge per attempt under the attempt's key, its outcome
//! learned later, subscription intents read back, and every call in the acquirer call log.

use std::sync::Arc;

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
    let setting = AcquirerSetting::parse(
        AcquirerInput {
            rail: Some("bank".into()),
            kind: Some("fintoc".into()),
            public_key: Some(PUBLIC_KEY.into()),
            base_url: Some(base_url.into()),
            secret: Some(Secret::new(SECRET.to_string())),
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
