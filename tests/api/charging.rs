//! The charging engine through the sandbox: due installments of active mandates are charged
//! once per business date, soft declines retried after 1, 3 and 7 days, bank debits settled at
//! the next run, UF amounts converted, and the sandbox clock drives it all.

use chrono::{Duration, NaiveDate, NaiveTime};
use serde_json::{Value, json};

use crate::helpers::*;

const APPROVE: &str = "4111111111111111";
const INSUFFICIENT: &str = "4000000000000002";
const EXPIRED: &str = "4000000000000069";

async fn ready(app: &mut TestApp) {
    app.login().await;
    app.create_customer("cust-1", "12.345.678-5").await;
}

async fn activate_card(app: &TestApp, internal_id: &str, number: &str) -> Value {
    let reply = app
        .post(
            &format!("/sandbox/mandates/{internal_id}/activate"),
            &json!({"paymentMethodId": 3, "card": {"number": number, "expiry": "12/30", "cvv": "123"}}),
        )
        .await;
    reply.expect(200, "SANDBOX_ACTIVATE_OK");
    reply.body["payload"].clone()
}

async fn activate_bank(app: &TestApp, internal_id: &str, account: &str) -> Value {
    let reply = app
        .post(
            &format!("/sandbox/mandates/{internal_id}/activate"),
            &json!({"paymentMethodId": 5, "bankAccount": {"bankCode": "012", "accountType": "CHECKING",
                    "accountNumber": account, "holderRut": "12.345.678-5"}}),
        )
        .await;
    reply.expect(200, "SANDBOX_ACTIVATE_OK");
    reply.body["payload"].clone()
}

/// A DYNAMIC mandate with one installment of 5000 CLP due in `days`; returns (mandate, installment) ids.
async fn one_installment(app: &TestApp, id: &str, days: i64) -> (String, String) {
    let payload = app
        .create_mandate(&dynamic_body(app, "cust-1", id, &[("c1", 5000, days)]))
        .await;
    (
        payload["mandate"]["internalId"]
            .as_str()
            .unwrap()
            .to_string(),
        payload["installments"][0]["internalId"]
            .as_str()
            .unwrap()
            .to_string(),
    )
}

async fn installment(app: &TestApp, mandate: &str) -> Value {
    let reply = app.get(&format!("/mandate/internalId/{mandate}")).await;
    reply.expect(200, "MANDATE_DETAIL_OK");
    reply.body["payload"]["installments"][0].clone()
}

fn payment_states(app: &TestApp, mandate: &str) -> Vec<String> {
    app.events_of(mandate)
        .iter()
        .filter(|e| e["event"] == "payment")
        .map(|e| {
            e["installment"]["state"]["name"]
                .as_str()
                .unwrap()
                .to_string()
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn an_approved_card_is_charged_once_per_date() {
    let mut app = spawn_app().await;
    ready(&mut app).await;
    let (mandate, _) = one_installment(&app, "M-1", 0).await;
    // A PENDING mandate's installments wait for activation.
    let before = app.run_charging(app.today()).await;
    assert_eq!(before.counts.attempted, 0);
    let active = activate_card(&app, &mandate, APPROVE).await;
    assert_eq!(
        active["mandate"]["state"],
        json!({"id": 2, "name": "ACTIVE"})
    );
    assert_eq!(active["paymentMethod"]["id"], 3);
    assert!(
        active["paymentMethod"]["instrument"]
            .as_str()
            .unwrap()
            .ends_with("1111")
    );

    let run = app.run_charging(app.today()).await;
    assert_eq!((run.counts.attempted, run.counts.paid), (1, 1));
    let paid = installment(&app, &mandate).await;
    assert_eq!(paid["state"], json!({"id": 2, "name": "PAID"}));
    assert_eq!(paid["attempts"], 1);
    assert_eq!(paid["paymentMethodId"], 3);
    assert!(
        paid["authorizationCode"]
            .as_str()
            .unwrap()
            .starts_with("AUT-")
    );
    assert_eq!(payment_states(&app, &mandate), ["IN_PROCESS", "PAID"]);

    let again = app.run_charging(app.today()).await;
    assert_eq!(
        again.counts.attempted, 0,
        "the same date picks up nothing already attempted"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn soft_declines_are_retried_after_1_3_and_7_days_hard_ones_never() {
    let mut app = spawn_app().await;
    ready(&mut app).await;
    let (soft, _) = one_installment(&app, "M-soft", 0).await;
    let (hard, _) = one_installment(&app, "M-hard", 0).await;
    activate_card(&app, &soft, INSUFFICIENT).await;
    activate_card(&app, &hard, EXPIRED).await;
    let d0 = app.today();
    let run = app.run_charging(d0).await;
    assert_eq!((run.counts.attempted, run.counts.rejected), (2, 2));

    let rejected = installment(&app, &soft).await;
    assert_eq!(rejected["state"], json!({"id": -99, "name": "REJECTED"}));
    assert_eq!(rejected["rejection"]["code"], "INSUFFICIENT_FUNDS");
    let last = app.events_of(&soft).last().unwrap().clone();
    assert_eq!(last["installment"]["retryScheduled"], true);
    assert_eq!(
        last["installment"]["nextRetryDate"],
        (d0 + Duration::days(1)).to_string()
    );
    let hard_event = app.events_of(&hard).last().unwrap().clone();
    assert_eq!(
        hard_event["installment"]["rejection"]["code"],
        "EXPIRED_CARD"
    );
    assert_eq!(hard_event["installment"]["retryScheduled"], false);

    let mut attempted_on = Vec::new();
    for day in 1..=10 {
        let run = app.run_charging(d0 + Duration::days(day)).await;
        if run.counts.attempted > 0 {
            attempted_on.push(day);
        }
    }
    assert_eq!(
        attempted_on,
        [1, 3, 7],
        "retries after 1, 3 and 7 days, then it stays REJECTED"
    );
    let finally = installment(&app, &soft).await;
    assert_eq!(finally["attempts"], 4);
    assert_eq!(finally["state"]["name"], "REJECTED");
    assert_eq!(installment(&app, &hard).await["attempts"], 1);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_rejected_installment_paid_by_hand_is_not_retried() {
    let mut app = spawn_app().await;
    ready(&mut app).await;
    let (mandate, installment_id) = one_installment(&app, "M-soft", 0).await;
    activate_card(&app, &mandate, INSUFFICIENT).await;
    let d0 = app.today();
    app.run_charging(d0).await;
    let rejected_event = app.events_of(&mandate).last().unwrap().clone();
    assert_eq!(rejected_event["installment"]["retryScheduled"], true);

    let reply = app
        .put(
            "/installments/status/change",
            &json!({"product": {"internalId": mandate}, "installments": {"internalIds": [installment_id]},
                    "action": "PAYMENT", "payment": {"date": d0.to_string(), "amount": 5000, "currencyId": "CLP"}}),
        )
        .await;
    reply.expect(200, "INSTALLMENTS_STATUS_CHANGE_OK");
    let paid_event = app.events_of(&mandate).last().unwrap().clone();
    assert_eq!(paid_event["installment"]["state"]["name"], "PAID");
    assert_eq!(paid_event["installment"]["retryScheduled"], false);
    assert_eq!(paid_event["installment"]["nextRetryDate"], Value::Null);

    let retry_day = app.run_charging(d0 + Duration::days(1)).await;
    assert_eq!(
        retry_day.counts.attempted, 0,
        "a paid installment is never retried"
    );
    assert_eq!(installment(&app, &mandate).await["attempts"], 1);
}

#[tokio::test(flavor = "multi_thread")]
async fn sandbox_epac_activation_sends_the_mandate_document() {
    let mut app = spawn_app().await;
    ready(&mut app).await;
    let (mandate, _) = one_installment(&app, "M-epac", 3).await;
    let reply = app
        .post(
            &format!("/sandbox/mandates/{mandate}/activate"),
            &json!({"paymentMethodId": 6, "bankAccount": {"bankCode": "012", "accountType": "CHECKING",
                    "accountNumber": "123450000", "holderRut": "12.345.678-5"}}),
        )
        .await;
    reply.expect(200, "SANDBOX_ACTIVATE_OK");
    app.activation_document(&mandate);
}

/// Rows of a query on the app's database (either backend), each row's `width` text columns.
fn rows(app: &TestApp, sql: &str, width: usize) -> Vec<Vec<String>> {
    app.running
        .state
        .store()
        .read(|db| {
            Ok(db.query_map(sql, &[], |r| {
                (0..width).map(|i| r.get::<String>(i)).collect()
            })?)
        })
        .expect("query")
}

#[tokio::test(flavor = "multi_thread")]
async fn dates_missed_while_closed_run_at_start_in_order() {
    let mut app = spawn_app().await;
    ready(&mut app).await;
    let d0 = app.today();
    let payload = app
        .create_mandate(&dynamic_body(
            &app,
            "cust-1",
            "M-gap",
            &[("c1", 1000, 1), ("c2", 2000, 2), ("c3", 3000, 3)],
        ))
        .await;
    let mandate = payload["mandate"]["internalId"]
        .as_str()
        .unwrap()
        .to_string();
    activate_card(&app, &mandate, APPROVE).await;
    app.run_charging(d0).await;

    // Closed for four days, then opened with the daily schedule on.
    app.clock.advance(Duration::days(4));
    let app = app
        .restarted(Options {
            charge_at: NaiveTime::from_hms_opt(0, 0, 0),
            ..Default::default()
        })
        .await;
    let expected_runs: Vec<Vec<String>> = std::iter::once(vec![d0.to_string(), "MANUAL".into()])
        .chain((1..=4).map(|d| vec![(d0 + Duration::days(d)).to_string(), "CATCH_UP".into()]))
        .collect();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    let runs = loop {
        let runs = rows(
            &app,
            "SELECT business_date, trigger FROM charge_runs WHERE state = 'FINISHED' ORDER BY seq",
            2,
        );
        if runs.len() >= expected_runs.len() || std::time::Instant::now() > deadline {
            break runs;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    };
    assert_eq!(runs, expected_runs, "every missed date, oldest first");
    let attempts = rows(
        &app,
        "SELECT i.external_id, a.business_date, a.state FROM charge_attempts a
         JOIN installments i ON i.seq = a.installment_seq ORDER BY a.seq",
        3,
    );
    let on = |d: i64| (d0 + Duration::days(d)).to_string();
    assert_eq!(
        attempts,
        [
            ["c1".to_string(), on(1), "PAID".into()],
            ["c2".to_string(), on(2), "PAID".into()],
            ["c3".to_string(), on(3), "PAID".into()],
        ],
        "each installment charged on its own due date"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn bank_debits_settle_at_the_next_run() {
    let mut app = spawn_app().await;
    ready(&mut app).await;
    let (ok, _) = one_installment(&app, "M-ok", 0).await;
    let (bad, _) = one_installment(&app, "M-bad", 0).await;
    activate_bank(&app, &ok, "123450000").await;
    activate_bank(&app, &bad, "123459999").await;
    let d0 = app.today();
    let run = app.run_charging(d0).await;
    assert_eq!((run.counts.attempted, run.counts.in_validation), (2, 2));
    assert_eq!(
        installment(&app, &ok).await["state"],
        json!({"id": 6, "name": "IN_VALIDATION"})
    );
    let same_day = app.run_charging(d0).await;
    assert_eq!(
        same_day.counts.settled, 0,
        "settled at a later business date only"
    );
    let next = app.run_charging(d0 + Duration::days(1)).await;
    assert_eq!(next.counts.settled, 2);
    assert_eq!(installment(&app, &ok).await["state"]["name"], "PAID");
    let bad_one = installment(&app, &bad).await;
    assert_eq!(bad_one["state"]["name"], "REJECTED");
    assert_eq!(bad_one["rejection"]["code"], "BANK_VALIDATION_FAILED");
    assert_eq!(
        payment_states(&app, &ok),
        ["IN_PROCESS", "IN_VALIDATION", "PAID"]
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn onepay_finishes_and_permanent_keeps_twelve_upcoming() {
    let mut app = spawn_app().await;
    ready(&mut app).await;
    let onepay = app
        .create_mandate(&json!({"customer": {"userId": "cust-1"},
            "mandate": {"id": "OP-1", "type": "ONEPAY", "name": "Compra", "charges": {"currencyId": "CLP", "amount": 15990}}}))
        .await;
    let onepay_id = onepay["mandate"]["internalId"].as_str().unwrap();
    activate_card(&app, onepay_id, APPROVE).await;
    let permanent = app
        .create_mandate(&json!({"customer": {"userId": "cust-1"},
            "mandate": {"id": "PERM-1", "type": "PERMANENT", "name": "Seguro",
                        "charges": {"currencyId": "CLP", "amount": 9990, "periodicity": "MONTHLY", "startDate": app.date_in(0)}}}))
        .await;
    let permanent_id = permanent["mandate"]["internalId"].as_str().unwrap();
    activate_card(&app, permanent_id, APPROVE).await;
    app.run_charging(app.today()).await;

    let done = app.get(&format!("/mandate/internalId/{onepay_id}")).await;
    assert_eq!(
        done.body["payload"]["mandate"]["state"],
        json!({"id": 4, "name": "FINISHED"})
    );
    let perm = app
        .get(&format!("/mandate/internalId/{permanent_id}"))
        .await;
    let items = perm.body["payload"]["installments"].as_array().unwrap();
    assert_eq!(items.len(), 13, "the paid one and 12 upcoming");
    assert_eq!(items[0]["state"]["name"], "PAID");
    assert!(items[1..].iter().all(|i| i["state"]["name"] == "PENDING"));
    assert_eq!(items[12]["id"], "13");
}

#[tokio::test(flavor = "multi_thread")]
async fn uf_installments_wait_for_the_days_value_then_charge_in_pesos() {
    let mut app = spawn_app().await;
    ready(&mut app).await;
    let body = json!({"customer": {"userId": "cust-1"},
        "mandate": {"id": "UF-1", "type": "DYNAMIC", "name": "Arriendo", "charges": {"currencyId": "CLF"}},
        "installments": [{"id": "u1", "amount": 1.5, "currencyId": "CLF", "installmentDueDate": app.date_in(0)}]});
    let payload = app.create_mandate(&body).await;
    let mandate = payload["mandate"]["internalId"]
        .as_str()
        .unwrap()
        .to_string();
    activate_card(&app, &mandate, APPROVE).await;
    let today = app.today();
    let waiting = app.run_charging(today).await;
    assert_eq!(
        (waiting.counts.attempted, waiting.counts.waiting_uf),
        (0, 1)
    );
    assert_eq!(
        installment(&app, &mandate).await["state"]["name"],
        "PENDING"
    );
    app.running
        .state
        .store()
        .write(|tx| {
            Ok(mandato::store::charging::upsert_uf(
                tx,
                &today.to_string(),
                "39123.45",
            )?)
        })
        .unwrap();
    let charged = app.run_charging(today).await;
    assert_eq!((charged.counts.attempted, charged.counts.paid), (1, 1));
    let amount: String = app
        .running
        .state
        .store()
        .read(|db| Ok(db.query_row("SELECT amount FROM sim_charges", &[], |r| r.get(0))?))
        .unwrap();
    assert_eq!(
        amount, "58685",
        "1.5 UF at 39123.45 CLP, rounded to the peso"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn the_sandbox_clock_runs_every_crossed_date() {
    let mut app = spawn_app().await;
    ready(&mut app).await;
    let clock = app.get("/sandbox/clock").await;
    clock.expect(200, "SANDBOX_CLOCK_OK");
    let today: NaiveDate = clock.body["payload"]["today"]
        .as_str()
        .unwrap()
        .parse()
        .unwrap();
    assert_eq!(clock.body["payload"]["offsetDays"], 0);
    let (mandate, _) = one_installment(&app, "M-1", 3).await;
    activate_card(&app, &mandate, INSUFFICIENT).await;

    let moved = app.post("/sandbox/clock", &json!({"advanceDays": 5})).await;
    moved.expect(200, "SANDBOX_CLOCK_OK");
    let payload = &moved.body["payload"];
    assert_eq!(payload["today"], (today + Duration::days(5)).to_string());
    assert_eq!(payload["offsetDays"], 5);
    let runs = payload["runs"].as_array().unwrap();
    let dates: Vec<&str> = runs.iter().map(|r| r["date"].as_str().unwrap()).collect();
    let expected: Vec<String> = (1..=5)
        .map(|d| (today + Duration::days(d)).to_string())
        .collect();
    assert_eq!(dates, expected);
    // Due on day 3 (rejected), retried on day 4.
    let attempted: Vec<i64> = runs
        .iter()
        .map(|r| r["attempted"].as_i64().unwrap())
        .collect();
    assert_eq!(attempted, [0, 0, 1, 1, 0]);
    assert_eq!(app.today(), today + Duration::days(5));

    app.post("/sandbox/clock", &json!({"advanceTo": today.to_string()}))
        .await
        .expect(400, "VALIDATION_ERROR");
    app.post(
        "/sandbox/clock",
        &json!({"advanceDays": 1, "advanceTo": "2030-01-01"}),
    )
    .await
    .expect(400, "VALIDATION_ERROR");
    let run = app.post("/sandbox/charging/run", &json!({})).await;
    run.expect(200, "SANDBOX_CHARGING_RUN_OK");
    assert_eq!(
        run.body["payload"]["date"],
        (today + Duration::days(5)).to_string()
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn forced_outcomes_and_reversal() {
    let mut app = spawn_app().await;
    ready(&mut app).await;
    let (mandate, inst) = one_installment(&app, "M-1", 0).await;
    activate_card(&app, &mandate, APPROVE).await;
    let path = format!("/sandbox/installments/{inst}/outcome");
    app.post(&path, &json!({"result": "REJECTED"}))
        .await
        .expect(400, "VALIDATION_ERROR");
    app.post(&path, &json!({"result": "REVERSED"}))
        .await
        .expect(400, "INSTALLMENT_STATE_CONFLICT");
    app.post(
        &path,
        &json!({"result": "REJECTED", "code": "INSUFFICIENT_FUNDS"}),
    )
    .await
    .expect(200, "SANDBOX_OUTCOME_OK");
    let d0 = app.today();
    app.run_charging(d0).await;
    assert_eq!(
        installment(&app, &mandate).await["rejection"]["code"],
        "INSUFFICIENT_FUNDS"
    );
    app.post(&path, &json!({"result": "PAID"}))
        .await
        .expect(200, "SANDBOX_OUTCOME_OK");
    app.run_charging(d0 + Duration::days(1)).await;
    assert_eq!(installment(&app, &mandate).await["state"]["name"], "PAID");
    let reversed = app.post(&path, &json!({"result": "REVERSED"})).await;
    reversed.expect(200, "SANDBOX_OUTCOME_OK");
    assert_eq!(
        reversed.body["payload"]["state"],
        json!({"id": 5, "name": "REVERSED"})
    );
    assert_eq!(
        payment_states(&app, &mandate),
        ["IN_PROCESS", "REJECTED", "IN_PROCESS", "PAID", "REVERSED"]
    );
    app.post(
        "/sandbox/installments/ins_unknown/outcome",
        &json!({"result": "PAID"}),
    )
    .await
    .expect(404, "INSTALLMENT_NOT_FOUND");
}

#[tokio::test(flavor = "multi_thread")]
async fn sandbox_activation_refusals() {
    let mut app = spawn_app().await;
    ready(&mut app).await;
    let (mandate, _) = one_installment(&app, "M-1", 0).await;
    let path = format!("/sandbox/mandates/{mandate}/activate");
    let bad = app
        .post(&path, &json!({"paymentMethodId": 3, "card": {"number": "4111111111111112", "expiry": "01/20", "cvv": "1"}}))
        .await;
    bad.expect(400, "VALIDATION_ERROR");
    let mut fields = bad.error_fields();
    fields.sort();
    assert_eq!(fields, ["card.cvv", "card.expiry", "card.number"]);
    app.post(&path, &json!({"paymentMethodId": 7}))
        .await
        .expect(400, "VALIDATION_ERROR");
    activate_card(&app, &mandate, APPROVE).await;
    app.post(&path, &json!({"paymentMethodId": 3, "card": {"number": APPROVE, "expiry": "12/30", "cvv": "123"}}))
        .await
        .expect(400, "MANDATE_STATE_CONFLICT");
    let activations = app
        .events_of(&mandate)
        .iter()
        .filter(|e| e["event"] == "activation")
        .count();
    assert_eq!(activations, 1);
    app.post("/sandbox/mandates/man_unknown/activate", &json!({"paymentMethodId": 3, "card": {"number": APPROVE, "expiry": "12/30", "cvv": "123"}}))
        .await
        .expect(404, "MANDATE_NOT_FOUND");
}
