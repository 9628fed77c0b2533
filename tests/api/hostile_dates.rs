//! Dates at the end of the calendar (CONTRACT 12): nothing after 9999-12-31 is stored, a
//! schedule that would pass it is refused at the field that pushes it there, and the charging run
//! compares due dates as dates, so a far-future installment is never charged today.

use chrono::NaiveDate;
use serde_json::{Value, json};

use crate::helpers::*;

async fn ready(app: &mut TestApp) {
    app.login().await;
    app.create_customer("cust-1", "12.345.678-5").await;
}

fn subscription(app: &TestApp, id: &str, periodicity: &str, start: &str, count: u32) -> Value {
    let mut body = subscription_body(app, "cust-1", id, count);
    set(
        &mut body,
        "/mandate/charges/periodicity",
        json!(periodicity),
    );
    set(&mut body, "/mandate/charges/startDate", json!(start));
    body
}

/// A refusal of exactly one field, under the date's own name, and nothing stored.
async fn refused_at(app: &TestApp, body: &Value, field: &str) {
    let reply = app.post("/mandate", body).await;
    reply.expect(400, "DATE_OUT_OF_RANGE");
    assert_eq!(reply.error_fields(), vec![field.to_string()], "{body}");
    assert_eq!(error_codes(&reply), vec!["DATE_OUT_OF_RANGE".to_string()]);
    let id = body["mandate"]["id"].as_str().unwrap();
    app.get(&format!("/mandate/id/{id}"))
        .await
        .expect(404, "MANDATE_NOT_FOUND");
}

fn installment_count(app: &TestApp) -> i64 {
    app.running
        .state
        .store()
        .read(|db| Ok(db.query_row("SELECT count(*) FROM installments", &[], |r| r.get(0))?))
        .unwrap()
}

#[tokio::test(flavor = "multi_thread")]
async fn an_annual_schedule_from_9999_12_01_is_refused_at_its_count() {
    let mut app = spawn_app().await;
    ready(&mut app).await;
    let body = subscription(&app, "ANNUAL-9999", "ANNUAL", "9999-12-01", 2);
    refused_at(&app, &body, "mandate.charges.count").await;
    // A single installment on that day fits, and is stored in its four-digit form.
    let body = subscription(&app, "ANNUAL-9999-ONE", "ANNUAL", "9999-12-01", 1);
    let payload = app.create_mandate(&body).await;
    assert_eq!(
        payload["installments"][0]["installmentDueDate"],
        "9999-12-01"
    );
    assert_eq!(installment_count(&app), 1);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_twelve_month_schedule_from_9999_06_01_is_refused_and_nothing_is_stored() {
    let mut app = spawn_app().await;
    ready(&mut app).await;
    let body = subscription(&app, "MONTHLY-9999", "MONTHLY", "9999-06-01", 12);
    refused_at(&app, &body, "mandate.charges.count").await;
    // PERMANENT keeps twelve ahead from its start: the start date is what pushes it past.
    let mut permanent = subscription(&app, "PERMANENT-9999", "MONTHLY", "9999-06-01", 1);
    set(&mut permanent, "/mandate/type", json!("PERMANENT"));
    remove(&mut permanent, "/mandate/charges/count");
    refused_at(&app, &permanent, "mandate.charges.startDate").await;
    assert_eq!(installment_count(&app), 0);
    // The same schedule from the start of the year ends on 9999-12-01 and is accepted.
    let body = subscription(&app, "MONTHLY-9999-JAN", "MONTHLY", "9999-01-01", 12);
    let payload = app.create_mandate(&body).await;
    assert_eq!(
        payload["installments"][11]["installmentDueDate"],
        "9999-12-01"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn every_date_the_api_accepts_stops_at_9999_12_31() {
    let mut app = spawn_app().await;
    ready(&mut app).await;
    for (field, pointer, value) in [
        (
            "mandate.charges.startDate",
            "/mandate/charges/startDate",
            "10000-01-01",
        ),
        (
            "mandate.charges.startDate",
            "/mandate/charges/startDate",
            "+10000-12-01",
        ),
    ] {
        let body = changed(
            &subscription_body(&app, "cust-1", "S-FAR", 3),
            &[(pointer, Some(json!(value)))],
        );
        refused_at(&app, &body, field).await;
    }
    let body = changed(
        &subscription_body(&app, "cust-1", "S-END", 3),
        &[
            ("/mandate/charges/count", None),
            ("/mandate/charges/endDate", Some(json!("+10000-01-01"))),
        ],
    );
    refused_at(&app, &body, "mandate.charges.endDate").await;
    let mut onepay = onepay_body(&app, "cust-1", "O-FAR", 5000, None);
    set(
        &mut onepay,
        "/mandate/charges/dueDate",
        json!("10000-01-01"),
    );
    refused_at(&app, &onepay, "mandate.charges.dueDate").await;

    // Two at once: each is named, under the general validation name.
    let mut dynamic = dynamic_body(&app, "cust-1", "D-FAR", &[("c1", 100, 1), ("c2", 100, 2)]);
    set(
        &mut dynamic,
        "/installments/0/installmentDueDate",
        json!("10000-01-01"),
    );
    set(
        &mut dynamic,
        "/installments/1/installmentDueDate",
        json!("9999-12-31"),
    );
    set(&mut dynamic, "/mandate/charges/currencyId", json!("XXX"));
    let reply = app.post("/mandate", &dynamic).await;
    reply.expect(400, "VALIDATION_ERROR");
    assert_eq!(
        sorted_fields(&reply),
        vec![
            "installments[0].installmentDueDate",
            "mandate.charges.currencyId"
        ]
    );
    assert!(error_codes(&reply).contains(&"DATE_OUT_OF_RANGE".to_string()));

    // The last day itself is a date like any other.
    set(
        &mut dynamic,
        "/installments/0/installmentDueDate",
        json!("9999-12-30"),
    );
    set(&mut dynamic, "/mandate/charges/currencyId", json!("CLP"));
    let payload = app.create_mandate(&dynamic).await;
    assert_eq!(
        payload["installments"][1]["installmentDueDate"],
        "9999-12-31"
    );

    // Adding installments, paying them and filtering receivables read dates the same way.
    let add = changed(
        &installments_body(&app, "cust-1", "D-FAR", &[("c3", 100, 3)]),
        &[(
            "/installments/0/installmentDueDate",
            Some(json!("10000-01-01")),
        )],
    );
    let reply = app.post("/installments", &add).await;
    reply.expect(400, "DATE_OUT_OF_RANGE");
    assert_eq!(
        reply.error_fields(),
        vec!["installments[0].installmentDueDate"]
    );
    let mut pay = payment_body(&app, "D-FAR", &["c1"], 100);
    set(&mut pay, "/payment/date", json!("+10000-01-01"));
    let reply = app.put("/installments/status/change", &pay).await;
    reply.expect(400, "DATE_OUT_OF_RANGE");
    assert_eq!(reply.error_fields(), vec!["payment.date"]);
    for (query, field) in [
        ("dueFrom=10000-01-01", "query.dueFrom"),
        ("dueTo=1899-12-31", "query.dueTo"),
    ] {
        let reply = app.get(&format!("/receivables?{query}")).await;
        reply.expect(400, "DATE_OUT_OF_RANGE");
        assert_eq!(reply.error_fields(), vec![field]);
    }
    let reply = app.get("/receivables?dueFrom=9999-12-31").await;
    reply.expect(200, "RECEIVABLES_OK");
    assert_eq!(reply.body["payload"]["items"].as_array().unwrap().len(), 1);
}

#[tokio::test(flavor = "multi_thread")]
async fn the_run_of_today_does_not_charge_a_far_future_installment() {
    let mut app = spawn_app().await;
    ready(&mut app).await;
    let mut body = dynamic_body(
        &app,
        "cust-1",
        "D-1",
        &[("now", 5000, 0), ("last", 5000, 1)],
    );
    set(
        &mut body,
        "/installments/1/installmentDueDate",
        json!("9999-12-31"),
    );
    let payload = app.create_mandate(&body).await;
    let internal = payload["mandate"]["internalId"]
        .as_str()
        .unwrap()
        .to_string();
    // A row as an unbounded schedule once wrote it: a signed five-digit year, which sorts
    // before every four-digit date as text.
    app.running
        .state
        .store()
        .write(|db| {
            db.execute(
                "INSERT INTO installments (id, mandate_seq, commerce_id, external_id, amount,
                        currency, due_date, state, state_at, created_at)
                 SELECT 'ins_legacy', seq, commerce_id, 'legacy', '5000', 'CLP', '+10000-12-01',
                        1, created_at, created_at FROM mandates WHERE id = ?1",
                &[internal.as_str().into()],
            )?;
            Ok(())
        })
        .unwrap();
    app.post(
        &format!("/sandbox/mandates/{internal}/activate"),
        &json!({"paymentMethodId": 3, "card": {"number": "4111111111111111", "expiry": "12/30", "cvv": "123"}}),
    )
    .await
    .expect(200, "SANDBOX_ACTIVATE_OK");

    let summary = app.run_charging(app.today()).await;
    assert_eq!(summary.counts.attempted, 1, "{:?}", summary.counts);
    assert_eq!(summary.counts.paid, 1);
    let mut states = app.installment_states("D-1").await;
    states.sort();
    assert_eq!(
        states,
        vec![
            ("last".to_string(), 1),
            ("legacy".to_string(), 1),
            ("now".to_string(), 2)
        ]
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn the_sandbox_clock_cannot_pass_9999_12_31() {
    let mut app = spawn_app().await;
    app.login().await;
    let reply = app
        .post("/sandbox/clock", &json!({"advanceTo": "10000-01-01"}))
        .await;
    reply.expect(400, "DATE_OUT_OF_RANGE");
    assert_eq!(reply.error_fields(), vec!["advanceTo"]);

    // Bring the business date to 9999-12-25, as a long-lived sandbox would reach it.
    let target = NaiveDate::from_ymd_opt(9999, 12, 25).unwrap();
    let calendar = &app.running.state.calendar;
    calendar.set_offset_days(calendar.offset_days() + (target - app.today()).num_days());
    assert_eq!(app.today(), target);

    let reply = app.post("/sandbox/clock", &json!({"advanceDays": 7})).await;
    reply.expect(400, "DATE_OUT_OF_RANGE");
    assert_eq!(reply.error_fields(), vec!["advanceDays"]);
    assert_eq!(app.today(), target);

    let reply = app
        .post("/sandbox/clock", &json!({"advanceTo": "9999-12-31"}))
        .await;
    reply.expect(200, "SANDBOX_CLOCK_OK");
    assert_eq!(reply.body["payload"]["today"], "9999-12-31");
    assert_eq!(reply.body["payload"]["runs"].as_array().unwrap().len(), 6);
    app.post("/sandbox/clock", &json!({"advanceDays": 1}))
        .await
        .expect(400, "DATE_OUT_OF_RANGE");
}
