//! The business-day calendar: the holidays endpoint and CLI, and charging that moves due dates
//! off weekends and holidays (to the next business day, or the previous one by the commerce's
//! rule) through the sandbox clock. The 2024-2027 official tables are unit tests of
//! `domain::holidays`.

use std::process::Stdio;

use chrono::{Datelike, Duration, NaiveDate, Weekday};
use mandato::domain::holidays::{HolidayCalendar, HolidayYear, national_holidays};
use serde_json::{Value, json};

use crate::cli::mandato as run_cli;
use crate::helpers::*;

async fn chilean_app() -> TestApp {
    let mut app = spawn_app_with(Options {
        business_days: mandato::config::BusinessDays::Chile,
        ..Options::default()
    })
    .await;
    app.login().await;
    app.create_customer("cust-1", "12.345.678-5").await;
    app
}

/// A holiday on a weekday with business days on both sides, at least two days ahead: from
/// 2026-11-25 that is Tuesday 2026-12-08 (Inmaculada Concepción).
fn weekday_holiday_ahead(today: NaiveDate) -> NaiveDate {
    let calendar = HolidayCalendar::new([]);
    [today.year(), today.year() + 1]
        .into_iter()
        .flat_map(|y| national_holidays(HolidayYear::new(y).unwrap()))
        .map(|h| h.date)
        .find(|d| {
            *d > today + Duration::days(2)
                && !matches!(d.weekday(), Weekday::Sat | Weekday::Sun)
                && calendar.is_business_day(*d - Duration::days(1))
                && calendar.is_business_day(*d + Duration::days(1))
        })
        .expect("a weekday holiday within two years")
}

/// A DYNAMIC mandate with one 5000 CLP installment due on `due`, activated with an approving
/// card (or a bank account, for a PAC); returns the mandate's internal id.
async fn mandate_due_on(app: &TestApp, id: &str, due: NaiveDate, bank: bool) -> String {
    let days = (due - app.today()).num_days();
    let payload = app
        .create_mandate(&dynamic_body(app, "cust-1", id, &[("c1", 5000, days)]))
        .await;
    let internal = payload["mandate"]["internalId"]
        .as_str()
        .unwrap()
        .to_string();
    let instrument = if bank {
        json!({"paymentMethodId": 5, "bankAccount": {"bankCode": "012", "accountType": "CHECKING",
               "accountNumber": "123450000", "holderRut": "12.345.678-5"}})
    } else {
        json!({"paymentMethodId": 3, "card": {"number": "4111111111111111", "expiry": "12/30", "cvv": "123"}})
    };
    app.post(
        &format!("/sandbox/mandates/{internal}/activate"),
        &instrument,
    )
    .await
    .expect(200, "SANDBOX_ACTIVATE_OK");
    internal
}

async fn advance_to(app: &TestApp, date: NaiveDate) {
    app.post("/sandbox/clock", &json!({"advanceTo": date.to_string()}))
        .await
        .expect(200, "SANDBOX_CLOCK_OK");
}

async fn installment(app: &TestApp, mandate: &str) -> Value {
    let reply = app.get(&format!("/mandate/internalId/{mandate}")).await;
    reply.expect(200, "MANDATE_DETAIL_OK");
    reply.body["payload"]["installments"][0].clone()
}

fn paid_event(app: &TestApp, mandate: &str) -> Option<Value> {
    app.events_of(mandate)
        .into_iter()
        .find(|e| e["event"] == "payment" && e["installment"]["state"]["name"] == "PAID")
}

#[tokio::test(flavor = "multi_thread")]
async fn the_endpoint_lists_a_years_holidays_and_refuses_a_bad_year() {
    let mut app = spawn_app().await;
    app.login().await;
    let reply = app.get("/calendar/holidays?year=2026").await;
    reply.expect(200, "HOLIDAYS_OK");
    let payload = &reply.body["payload"];
    assert_eq!(payload["year"], 2026);
    let holidays = payload["holidays"].as_array().unwrap();
    assert_eq!(holidays.len(), 17);
    assert_eq!(
        holidays[0],
        json!({"date": "2026-01-01", "name": "Año Nuevo"})
    );
    assert!(holidays.contains(&json!({"date": "2026-12-08", "name": "Inmaculada Concepción"})));
    assert!(holidays.contains(&json!({"date": "2026-12-31", "name": "Feriado bancario"})));
    let dates: Vec<&str> = holidays
        .iter()
        .map(|h| h["date"].as_str().unwrap())
        .collect();
    assert!(dates.windows(2).all(|w| w[0] <= w[1]), "sorted by date");

    for bad in [
        "",
        "?year=",
        "?year=2007",
        "?year=3000",
        "?year=20x6",
        "?year=-2026",
    ] {
        let reply = app.get(&format!("/calendar/holidays{bad}")).await;
        reply.expect(400, "VALIDATION_ERROR");
        assert_eq!(reply.error_fields(), vec!["query.year"], "{bad}");
    }
}

/// Runs `mandato --json ARGS`, which must fail: its JSON error and exit code.
fn refused(dir: &std::path::Path, args: &[&str]) -> (Value, i32) {
    let out = crate::helpers::cli_command(dir)
        .arg("--json")
        .args(args)
        .stdin(Stdio::null())
        .output()
        .expect("mandato runs");
    (
        serde_json::from_slice(&out.stdout).expect("one JSON object"),
        out.status.code().unwrap_or(-1),
    )
}

#[tokio::test(flavor = "multi_thread")]
async fn the_cli_adds_and_lists_holidays_which_the_api_then_shows() {
    let mut app = spawn_app().await;
    let dir = app.dir.path().to_path_buf();
    let added = run_cli(
        &dir,
        &["holidays", "add", "2027-03-01", "Censo de población"],
        None,
    );
    assert_eq!(
        added,
        json!({"date": "2027-03-01", "name": "Censo de población"})
    );
    let listed = run_cli(&dir, &["holidays", "list", "--year", "2027"], None);
    assert_eq!(
        listed,
        json!({"year": 2027, "holidays": [
            {"date": "2027-01-01", "name": "Año Nuevo"},
            {"date": "2027-03-01", "name": "Censo de población"},
            {"date": "2027-03-26", "name": "Viernes Santo"},
            {"date": "2027-03-27", "name": "Sábado Santo"},
            {"date": "2027-05-01", "name": "Día Nacional del Trabajo"},
            {"date": "2027-05-21", "name": "Día de las Glorias Navales"},
            {"date": "2027-06-21", "name": "Día Nacional de los Pueblos Indígenas"},
            {"date": "2027-06-28", "name": "San Pedro y San Pablo"},
            {"date": "2027-07-16", "name": "Día de la Virgen del Carmen"},
            {"date": "2027-08-15", "name": "Asunción de la Virgen"},
            {"date": "2027-09-18", "name": "Independencia Nacional"},
            {"date": "2027-09-19", "name": "Día de las Glorias del Ejército"},
            {"date": "2027-10-11", "name": "Encuentro de Dos Mundos"},
            {"date": "2027-10-31", "name": "Día de las Iglesias Evangélicas y Protestantes"},
            {"date": "2027-11-01", "name": "Día de Todos los Santos"},
            {"date": "2027-12-08", "name": "Inmaculada Concepción"},
            {"date": "2027-12-25", "name": "Navidad"},
            {"date": "2027-12-31", "name": "Feriado bancario"},
        ]})
    );

    app.login().await;
    let reply = app.get("/calendar/holidays?year=2027").await;
    reply.expect(200, "HOLIDAYS_OK");
    assert_eq!(reply.body["payload"], listed);

    // The same day twice, a bad date, a bad name and a bad year are refused by name.
    for (args, name) in [
        (
            vec!["holidays", "add", "2027-03-01", "Otra vez"],
            "HOLIDAY_EXISTS",
        ),
        (
            vec!["holidays", "add", "2027-02-30", "Nada"],
            "INVALID_DATE",
        ),
        (vec!["holidays", "add", "2027-04-01", "  "], "INVALID_NAME"),
        (vec!["holidays", "list", "--year", "1999"], "INVALID_YEAR"),
        (
            vec!["holidays", "remove", "2027-04-01"],
            "HOLIDAY_NOT_FOUND",
        ),
    ] {
        let (error, code) = refused(&dir, &args);
        assert_eq!(code, 1, "{args:?}");
        assert_eq!(error["error"]["name"], name, "{args:?}: {error}");
    }
    let removed = run_cli(&dir, &["holidays", "remove", "2027-03-01"], None);
    assert_eq!(removed["removed"], true);
    let listed = run_cli(&dir, &["holidays", "list", "--year", "2027"], None);
    assert_eq!(listed["holidays"].as_array().unwrap().len(), 17);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_due_date_on_a_holiday_is_charged_the_next_business_day() {
    let app = chilean_app().await;
    let holiday = weekday_holiday_ahead(app.today());
    let next_day = holiday + Duration::days(1);
    let mandate = mandate_due_on(&app, "m-holiday", holiday, false).await;

    let before = installment(&app, &mandate).await;
    assert_eq!(before["installmentDueDate"], holiday.to_string());
    assert_eq!(before["chargeDate"], next_day.to_string());

    advance_to(&app, holiday).await;
    assert_eq!(
        installment(&app, &mandate).await["state"]["name"],
        "PENDING"
    );
    assert!(paid_event(&app, &mandate).is_none());

    advance_to(&app, next_day).await;
    assert_eq!(installment(&app, &mandate).await["state"]["name"], "PAID");
    let event = paid_event(&app, &mandate).expect("the payment event");
    assert_eq!(
        event["installment"]["installmentDueDate"],
        holiday.to_string()
    );
    assert_eq!(event["installment"]["chargeDate"], next_day.to_string());

    let receivables = app.get("/receivables").await;
    receivables.expect(200, "RECEIVABLES_OK");
    assert_eq!(
        receivables.body["payload"]["items"][0]["installment"]["chargeDate"],
        next_day.to_string()
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn with_the_previous_rule_it_is_charged_the_business_day_before() {
    let app = chilean_app().await;
    let dir = app.dir.path().to_path_buf();
    let set = run_cli(
        &dir,
        &[
            "commerce",
            "set-charging-rule",
            "--code",
            COMMERCE,
            "--rule",
            "previous",
        ],
        None,
    );
    assert_eq!(set, json!({"code": COMMERCE, "chargingRule": "PREVIOUS"}));
    let shown = run_cli(&dir, &["commerce", "show", COMMERCE], None);
    assert_eq!(shown["chargingRule"], "PREVIOUS");

    let holiday = weekday_holiday_ahead(app.today());
    let day_before = holiday - Duration::days(1);
    let mandate = mandate_due_on(&app, "m-previous", holiday, false).await;
    assert_eq!(
        installment(&app, &mandate).await["chargeDate"],
        day_before.to_string()
    );

    advance_to(&app, day_before).await;
    assert_eq!(installment(&app, &mandate).await["state"]["name"], "PAID");
    let event = paid_event(&app, &mandate).expect("the payment event");
    assert_eq!(
        event["installment"]["installmentDueDate"],
        holiday.to_string()
    );
    assert_eq!(event["installment"]["chargeDate"], day_before.to_string());

    let (error, code) = refused(
        &dir,
        &[
            "commerce",
            "set-charging-rule",
            "--code",
            COMMERCE,
            "--rule",
            "later",
        ],
    );
    assert_eq!(
        (error["error"]["name"].as_str(), code),
        (Some("INVALID_RULE"), 1)
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_saturday_due_date_waits_for_monday_and_bank_debits_settle_on_business_days() {
    let app = chilean_app().await;
    let calendar = HolidayCalendar::new([]);
    // A Friday that is a business day, followed by a business Monday, a few days ahead.
    let friday = (3..60)
        .map(|n| app.today() + Duration::days(n))
        .find(|d| {
            d.weekday() == Weekday::Fri
                && calendar.is_business_day(*d)
                && calendar.is_business_day(*d + Duration::days(3))
        })
        .unwrap();
    let (saturday, monday) = (friday + Duration::days(1), friday + Duration::days(3));
    let card = mandate_due_on(&app, "m-saturday", saturday, false).await;
    let pac = mandate_due_on(&app, "m-pac", friday, true).await;

    advance_to(&app, friday).await;
    assert_eq!(
        installment(&app, &pac).await["state"]["name"],
        "IN_VALIDATION"
    );
    assert_eq!(installment(&app, &card).await["state"]["name"], "PENDING");

    // The weekend: nothing charged, and the bank's answer waits.
    advance_to(&app, monday - Duration::days(1)).await;
    assert_eq!(
        installment(&app, &pac).await["state"]["name"],
        "IN_VALIDATION"
    );
    assert_eq!(installment(&app, &card).await["state"]["name"], "PENDING");

    advance_to(&app, monday).await;
    assert_eq!(installment(&app, &pac).await["state"]["name"], "PAID");
    assert_eq!(installment(&app, &card).await["state"]["name"], "PAID");
    let event = paid_event(&app, &card).unwrap();
    assert_eq!(
        event["installment"]["installmentDueDate"],
        saturday.to_string()
    );
    assert_eq!(event["installment"]["chargeDate"], monday.to_string());
}

#[tokio::test(flavor = "multi_thread")]
async fn the_dashboard_names_the_day_each_next_charge_is_made() {
    use reqwest::Method;
    let app = chilean_app().await;
    let calendar = HolidayCalendar::new([]);
    let friday = (3..60)
        .map(|n| app.today() + Duration::days(n))
        .find(|d| {
            d.weekday() == Weekday::Fri
                && calendar.is_business_day(*d)
                && calendar.is_business_day(*d + Duration::days(3))
        })
        .unwrap();
    let (saturday, monday) = (friday + Duration::days(1), friday + Duration::days(3));
    mandate_due_on(&app, "m-friday", friday, false).await;
    mandate_due_on(&app, "m-saturday", saturday, false).await;

    let setup = staff_call(
        &app,
        None,
        Method::POST,
        "/setup",
        Some(json!({"email": "owner@merchant.example", "password": "a long password"})),
    )
    .await;
    setup.expect(201, "SETUP_OK");
    let admin = session_of(&setup);
    let dashboard = staff_call(&app, Some(&admin), Method::GET, "/dashboard", None).await;
    dashboard.expect(200, "DASHBOARD_OK");
    let next: Vec<(String, String, String)> = dashboard.body["payload"]["nextCharges"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| {
            (
                n["mandateId"].as_str().unwrap().to_string(),
                n["installmentDueDate"].as_str().unwrap().to_string(),
                n["chargeDate"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    assert_eq!(
        next,
        vec![
            ("m-friday".into(), friday.to_string(), friday.to_string()),
            (
                "m-saturday".into(),
                saturday.to_string(),
                monday.to_string()
            ),
        ]
    );

    // With the previous-business-day rule, the Saturday's is charged on the Friday.
    staff_call(
        &app,
        Some(&admin),
        Method::PUT,
        &format!("/commerces/{COMMERCE}/charging-rule"),
        Some(json!({"chargingRule": "PREVIOUS"})),
    )
    .await
    .expect(200, "CHARGING_RULE_OK");
    let dashboard = staff_call(&app, Some(&admin), Method::GET, "/dashboard", None).await;
    let moved = &dashboard.body["payload"]["nextCharges"][1];
    assert_eq!(moved["installmentDueDate"], saturday.to_string());
    assert_eq!(moved["chargeDate"], friday.to_string());
}

/// A staff session (cookie and CSRF token) calling the staff API.
async fn staff_call(
    app: &TestApp,
    session: Option<&(String, String)>,
    method: reqwest::Method,
    path: &str,
    body: Option<Value>,
) -> Reply {
    let mut request = app
        .client
        .request(method, format!("{}/admin/api{path}", app.base));
    if let Some((cookie, csrf)) = session {
        request = request
            .header("cookie", cookie)
            .header("x-csrf-token", csrf);
    }
    if let Some(body) = body {
        request = request.json(&body);
    }
    let response = request.send().await.unwrap();
    Reply {
        status: response.status(),
        headers: response.headers().clone(),
        body: response.json().await.unwrap_or(Value::Null),
    }
}

fn session_of(reply: &Reply) -> (String, String) {
    let cookie = reply.headers["set-cookie"].to_str().unwrap();
    (
        cookie.split(';').next().unwrap().to_string(),
        reply.body["payload"]["csrfToken"]
            .as_str()
            .unwrap()
            .to_string(),
    )
}

#[tokio::test(flavor = "multi_thread")]
async fn staff_add_and_remove_holidays_and_set_a_commerces_rule() {
    use reqwest::Method;
    let app = spawn_app().await;
    let setup = staff_call(
        &app,
        None,
        Method::POST,
        "/setup",
        Some(json!({"email": "owner@merchant.example", "password": "a long password"})),
    )
    .await;
    setup.expect(201, "SETUP_OK");
    let admin = session_of(&setup);

    let bad = staff_call(
        &app,
        Some(&admin),
        Method::POST,
        "/calendar/holidays",
        Some(json!({"date": "2026-02-30", "name": "\u{202e}x"})),
    )
    .await;
    bad.expect(400, "VALIDATION_ERROR");
    assert_eq!(sorted_fields(&bad), vec!["date", "name"]);

    staff_call(
        &app,
        Some(&admin),
        Method::POST,
        "/calendar/holidays",
        Some(json!({"date": "2026-12-28", "name": "Feriado decretado"})),
    )
    .await
    .expect(201, "HOLIDAY_ADDED");
    staff_call(
        &app,
        Some(&admin),
        Method::POST,
        "/calendar/holidays",
        Some(json!({"date": "2026-12-28", "name": "Otra vez"})),
    )
    .await
    .expect(400, "HOLIDAY_EXISTS");

    let list = staff_call(
        &app,
        Some(&admin),
        Method::GET,
        "/calendar/holidays?year=2026",
        None,
    )
    .await;
    list.expect(200, "HOLIDAYS_OK");
    let holidays = list.body["payload"]["holidays"].as_array().unwrap();
    assert_eq!(holidays.len(), 18);
    assert!(
        holidays
            .contains(&json!({"date": "2026-12-28", "name": "Feriado decretado", "added": true}))
    );
    assert!(holidays.contains(&json!({"date": "2026-12-25", "name": "Navidad", "added": false})));

    staff_call(
        &app,
        Some(&admin),
        Method::DELETE,
        "/calendar/holidays/2026-12-25",
        None,
    )
    .await
    .expect(404, "HOLIDAY_NOT_FOUND");
    staff_call(
        &app,
        Some(&admin),
        Method::DELETE,
        "/calendar/holidays/2026-12-28",
        None,
    )
    .await
    .expect(200, "HOLIDAY_REMOVED");

    let path = format!("/commerces/{COMMERCE}/charging-rule");
    staff_call(
        &app,
        Some(&admin),
        Method::PUT,
        &path,
        Some(json!({"chargingRule": "sooner"})),
    )
    .await
    .expect(400, "VALIDATION_ERROR");
    staff_call(
        &app,
        Some(&admin),
        Method::PUT,
        &path,
        Some(json!({"chargingRule": "PREVIOUS"})),
    )
    .await
    .expect(200, "CHARGING_RULE_OK");
    let commerces = staff_call(&app, Some(&admin), Method::GET, "/commerces", None).await;
    let ours = commerces.body["payload"]["items"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["code"] == COMMERCE)
        .unwrap()
        .clone();
    assert_eq!(ours["chargingRule"], "PREVIOUS");

    // A viewer reads the calendar and changes nothing.
    staff_call(
        &app,
        Some(&admin),
        Method::POST,
        "/staff",
        Some(json!({"email": "viewer@merchant.example", "password": "ten or more chars", "role": "viewer"})),
    )
    .await
    .expect(201, "STAFF_CREATED");
    let signed_in = staff_call(
        &app,
        None,
        Method::POST,
        "/session",
        Some(json!({"email": "viewer@merchant.example", "password": "ten or more chars"})),
    )
    .await;
    signed_in.expect(200, "SESSION_OK");
    let viewer = session_of(&signed_in);
    staff_call(
        &app,
        Some(&viewer),
        Method::GET,
        "/calendar/holidays?year=2026",
        None,
    )
    .await
    .expect(200, "HOLIDAYS_OK");
    staff_call(
        &app,
        Some(&viewer),
        Method::POST,
        "/calendar/holidays",
        Some(json!({"date": "2026-12-29", "name": "Feriado"})),
    )
    .await
    .expect(403, "ROLE_NOT_ALLOWED");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_holiday_added_later_moves_the_charge_of_an_installment_not_yet_charged() {
    let app = chilean_app().await;
    let calendar = HolidayCalendar::new([]);
    // A Wednesday with business days on both sides, a few days ahead.
    let wednesday = (3..60)
        .map(|n| app.today() + Duration::days(n))
        .find(|d| {
            d.weekday() == Weekday::Wed
                && [-1, 0, 1]
                    .iter()
                    .all(|n| calendar.is_business_day(*d + Duration::days(*n)))
        })
        .unwrap();
    let thursday = wednesday + Duration::days(1);
    let mandate = mandate_due_on(&app, "m-decreed", wednesday, false).await;
    assert_eq!(
        installment(&app, &mandate).await["chargeDate"],
        wednesday.to_string()
    );

    run_cli(
        app.dir.path(),
        &[
            "holidays",
            "add",
            &wednesday.to_string(),
            "Feriado decretado",
        ],
        None,
    );
    // Another process's change reaches the cached calendar within a second.
    let mut moved = installment(&app, &mandate).await;
    for _ in 0..30 {
        if moved["chargeDate"] == thursday.to_string() {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
        moved = installment(&app, &mandate).await;
    }
    assert_eq!(moved["installmentDueDate"], wednesday.to_string());
    assert_eq!(moved["chargeDate"], thursday.to_string());

    advance_to(&app, wednesday).await;
    assert_eq!(
        installment(&app, &mandate).await["state"]["name"],
        "PENDING"
    );
    advance_to(&app, thursday).await;
    assert_eq!(installment(&app, &mandate).await["state"]["name"], "PAID");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_run_on_a_weekend_says_so_and_names_the_next_business_day() {
    let app = chilean_app().await;
    let calendar = HolidayCalendar::new([]);
    let saturday = (1..60)
        .map(|n| app.today() + Duration::days(n))
        .find(|d| d.weekday() == Weekday::Sat && calendar.is_business_day(*d + Duration::days(2)))
        .unwrap();
    let monday = saturday + Duration::days(2);
    advance_to(&app, saturday).await;
    let run = app.post("/sandbox/charging/run", &json!({})).await;
    run.expect(200, "SANDBOX_CHARGING_RUN_OK");
    assert_eq!(run.body["payload"]["date"], saturday.to_string());
    assert_eq!(run.body["payload"]["businessDay"], false);
    assert_eq!(run.body["payload"]["nextBusinessDay"], monday.to_string());
    advance_to(&app, monday).await;
    let run = app.post("/sandbox/charging/run", &json!({})).await;
    assert_eq!(run.body["payload"]["businessDay"], true);
    assert_eq!(run.body["payload"]["nextBusinessDay"], Value::Null);
}
