//! The Magic Link payment portal under card testing (CONTRACT 12): at most 5 declined attempts
//! per link per hour, counted in the database across restarts and across every route that
//! reaches the processor; then 429 with a page and `Retry-After`, even for a good card. And
//! the sandbox's activation refuses an expired link as the page does.

use chrono::Duration;
use reqwest::StatusCode;
use serde_json::{Value, json};

use crate::helpers::*;
use crate::link::{Page, get_page, post_form, terms_sha};

const CARD_OK: &str = "4242424242424242";
/// Declined at the charge (INSUFFICIENT_FUNDS) by the simulated acquirer.
const CARD_DECLINED: &str = "4000000000000002";
/// Refused at enrolment by the simulated acquirer (last four 0119).
const CARD_NOT_ENROLLED: &str = "4000000000000119";

/// The link of a mandate made through the API, with its token, and the app.
struct Portal {
    app: TestApp,
    token: String,
    external_id: String,
}

impl Portal {
    async fn new(body: impl FnOnce(&TestApp) -> Value) -> Portal {
        let mut app = spawn_app().await;
        app.login().await;
        app.create_customer("cust-1", "12.345.678-5").await;
        let payload = app.create_mandate(&body(&app)).await;
        let link = payload["mandate"]["magicLink"].as_str().unwrap();
        Portal {
            token: link.rsplit('/').next().unwrap().to_string(),
            external_id: payload["mandate"]["id"].as_str().unwrap().to_string(),
            app,
        }
    }

    /// The link on the running engine (its port changes with a restart).
    fn link(&self) -> String {
        format!("{}/link/{}", self.app.base, self.token)
    }

    async fn lookup(&mut self) -> Value {
        // The wall clock may have jumped past the session's expiry.
        self.app.login().await;
        self.app.mandate(&self.external_id).await
    }

    async fn pay(&self, installment: &str, number: &str) -> Page {
        let url = format!("{}/pay/{installment}", self.link());
        let form = [
            ("method", "3"),
            ("number", number),
            ("expiry", "12/35"),
            ("cvv", "123"),
        ];
        post_form(&url, &form).await
    }

    async fn enrol_card(&self, number: &str) -> Page {
        let page = get_page(&self.link()).await;
        let sha = terms_sha(&page.html, 3);
        let form = [
            ("method", "3"),
            ("number", number),
            ("expiry", "12/35"),
            ("cvv", "123"),
            ("accept", "1"),
            ("termsSha256", sha.as_str()),
        ];
        post_form(&self.link(), &form).await
    }

    async fn enrol_bank(&self, account: &str) -> Page {
        let page = get_page(&self.link()).await;
        let sha = terms_sha(&page.html, 5);
        let form = [
            ("method", "5"),
            ("bankCode", "012"),
            ("accountType", "CHECKING"),
            ("accountNumber", account),
            ("holderRut", "12.345.678-5"),
            ("accept", "1"),
            ("termsSha256", sha.as_str()),
        ];
        post_form(&self.link(), &form).await
    }

    /// Portal charges the simulated acquirer holds for an installment.
    fn portal_charges(&self, installment: &str) -> i64 {
        self.app
            .running
            .state
            .store()
            .read(|conn| {
                Ok(mandato::store::sim_acquirer::charges_per_key_prefix(
                    conn,
                    &format!("portal-{installment}-"),
                )?)
            })
            .unwrap()
    }
}

#[track_caller]
fn assert_limited(page: &Page, now: chrono::DateTime<chrono::Utc>) {
    assert_eq!(page.status, StatusCode::TOO_MANY_REQUESTS, "{}", page.html);
    let retry: i64 = page.headers["retry-after"]
        .to_str()
        .unwrap()
        .parse()
        .unwrap();
    // The oldest decline is seconds old (minutes on a loaded machine): about an hour to wait.
    assert!(
        (3000..=3601).contains(&retry),
        "Retry-After {retry} at {now}"
    );
    assert!(page.html.contains("Demasiados intentos rechazados"));
    assert!(page.html.contains("Podrá intentarlo otra vez en"));
    assert_eq!(
        page.headers["content-type"].to_str().unwrap(),
        "text/html; charset=utf-8"
    );
}

async fn with_due_installment() -> (Portal, String) {
    let mut portal =
        Portal::new(|app| dynamic_body(app, "cust-1", "DYN-1", &[("c1", 15000, 0)])).await;
    let found = portal.lookup().await;
    let id = found["installments"][0]["internalId"]
        .as_str()
        .unwrap()
        .to_string();
    (portal, id)
}

#[tokio::test(flavor = "multi_thread")]
async fn five_declines_close_the_portal_for_an_hour_even_to_a_good_card_and_across_a_restart() {
    let (portal, due) = with_due_installment().await;
    for _ in 0..5 {
        let page = portal.pay(&due, CARD_DECLINED).await;
        assert_eq!(page.status, StatusCode::PAYMENT_REQUIRED, "{}", page.html);
    }
    assert_eq!(portal.portal_charges(&due), 5);

    // The count lives in the database: a restart does not reopen the link.
    let Portal {
        app,
        token,
        external_id,
    } = portal;
    let app = app.restarted(Options::default()).await;
    let mut portal = Portal {
        app,
        token,
        external_id,
    };
    let page = portal.pay(&due, CARD_OK).await;
    assert_limited(&page, portal.app.clock_now());
    assert_eq!(
        portal.portal_charges(&due),
        5,
        "the good card never reached the acquirer"
    );
    let found = portal.lookup().await;
    assert_eq!(found["installments"][0]["state"]["name"], "PENDING");

    // An hour after those declines the link takes payments again.
    portal.app.advance_clock(Duration::minutes(61));
    let page = portal.pay(&due, CARD_OK).await;
    assert_eq!(page.status, StatusCode::SEE_OTHER, "{}", page.html);
    let found = portal.lookup().await;
    assert_eq!(found["installments"][0]["state"]["name"], "PAID");
}

#[tokio::test(flavor = "multi_thread")]
async fn concurrent_declines_cannot_slip_past_the_limit() {
    let (portal, due) = with_due_installment().await;
    let url = format!("{}/pay/{due}", portal.link());
    let mut tries = tokio::task::JoinSet::new();
    for _ in 0..12 {
        let url = url.clone();
        tries.spawn(async move {
            let form = [
                ("method", "3"),
                ("number", CARD_DECLINED),
                ("expiry", "12/35"),
                ("cvv", "123"),
            ];
            post_form(&url, &form).await
        });
    }
    let pages = tries.join_all().await;
    let statuses: Vec<u16> = pages.iter().map(|p| p.status.as_u16()).collect();
    assert_eq!(
        statuses.iter().filter(|s| **s == 402).count(),
        5,
        "{statuses:?}"
    );
    assert_eq!(
        statuses.iter().filter(|s| **s == 429).count(),
        7,
        "{statuses:?}"
    );
    assert_eq!(portal.portal_charges(&due), 5);
}

/// Racing submits of a good card take turns: one charge, one payment page, the others told the
/// installment is already paid (never a second charge, never another card's outcome).
#[tokio::test(flavor = "multi_thread")]
async fn racing_payments_of_one_installment_charge_once() {
    let (mut portal, due) = with_due_installment().await;
    let url = format!("{}/pay/{due}", portal.link());
    let mut tries = tokio::task::JoinSet::new();
    for _ in 0..6 {
        let url = url.clone();
        tries.spawn(async move {
            let form = [
                ("method", "3"),
                ("number", CARD_OK),
                ("expiry", "12/35"),
                ("cvv", "123"),
            ];
            post_form(&url, &form).await
        });
    }
    let pages = tries.join_all().await;
    let mut statuses: Vec<u16> = pages.iter().map(|p| p.status.as_u16()).collect();
    statuses.sort_unstable();
    assert_eq!(statuses, [303, 409, 409, 409, 409, 409]);
    assert_eq!(portal.portal_charges(&due), 1);
    let found = portal.lookup().await;
    assert_eq!(found["installments"][0]["state"]["name"], "PAID");
}

#[tokio::test(flavor = "multi_thread")]
async fn enrolment_declines_by_card_and_bank_count_on_the_same_link() {
    let mut portal = Portal::new(|app| subscription_body(app, "cust-1", "GYM-1", 3)).await;
    for n in 0..5 {
        let page = if n % 2 == 0 {
            portal.enrol_card(CARD_NOT_ENROLLED).await
        } else {
            portal.enrol_bank("123450119").await
        };
        assert_eq!(page.status, StatusCode::BAD_REQUEST, "{}", page.html);
        assert!(page.html.contains("El medio de pago fue rechazado"));
    }
    assert_limited(&portal.enrol_card(CARD_OK).await, portal.app.clock_now());
    assert_limited(
        &portal.enrol_bank("123450000").await,
        portal.app.clock_now(),
    );
    assert_eq!(portal.lookup().await["mandate"]["state"]["name"], "PENDING");

    portal.app.advance_clock(Duration::minutes(61));
    let page = portal.enrol_card(CARD_OK).await;
    assert_eq!(page.status, StatusCode::SEE_OTHER, "{}", page.html);
    assert_eq!(portal.lookup().await["mandate"]["state"]["name"], "ACTIVE");
}

#[tokio::test(flavor = "multi_thread")]
async fn accepted_attempts_do_not_count() {
    let (portal, due) = with_due_installment().await;
    // Four declines, then a good card: paid, and the link is not at its limit.
    for _ in 0..4 {
        assert_eq!(
            portal.pay(&due, CARD_DECLINED).await.status,
            StatusCode::PAYMENT_REQUIRED
        );
    }
    assert_eq!(
        portal.pay(&due, CARD_OK).await.status,
        StatusCode::SEE_OTHER
    );
    assert_eq!(
        portal.enrol_card(CARD_OK).await.status,
        StatusCode::SEE_OTHER
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn the_sandbox_does_not_activate_an_expired_link() {
    let mut portal = Portal::new(|app| subscription_body(app, "cust-1", "GYM-1", 3)).await;
    let internal = portal.lookup().await["mandate"]["internalId"]
        .as_str()
        .unwrap()
        .to_string();
    // Links expire by business time: thirty days on the sandbox clock.
    let reply = portal
        .app
        .post("/sandbox/clock", &json!({"advanceDays": 31}))
        .await;
    reply.expect(200, "SANDBOX_CLOCK_OK");
    assert_eq!(get_page(&portal.link()).await.status, StatusCode::GONE);
    let reply = portal
        .app
        .post(
            &format!("/sandbox/mandates/{internal}/activate"),
            &json!({"paymentMethodId": 3, "card": {"number": CARD_OK, "expiry": "12/35", "cvv": "123"}}),
        )
        .await;
    reply.expect(400, "MAGIC_LINK_EXPIRED");
    assert_eq!(portal.lookup().await["mandate"]["state"]["name"], "PENDING");
}
