//! Mandates (CONTRACT 5): creation of each type and its schedule, money, every refusal, the
//! Magic Link, the three lookups, and cancellation with its events (CONTRACT 7).

use chrono::{DateTime, Datelike, Duration, Months, NaiveDate, Utc};
use hmac::{Hmac, KeyInit, Mac};
use reqwest::Method;
use serde_json::{Value, json};

use crate::helpers::*;

async fn app_with_customer() -> TestApp {
    let mut app = spawn_app().await;
    app.login().await;
    app.create_customer("cust-001", "12.345.678-5").await;
    app
}

fn date(text: &str) -> NaiveDate {
    NaiveDate::parse_from_str(text, "%Y-%m-%d").unwrap()
}

fn due_dates(payload: &Value) -> Vec<String> {
    payload["installments"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["installmentDueDate"].as_str().unwrap().to_string())
        .collect()
}

fn ids(payload: &Value) -> Vec<String> {
    payload["installments"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["id"].as_str().unwrap().to_string())
        .collect()
}

fn subscription(app: &TestApp, mandate_id: &str, charges: Value) -> Value {
    let mut body = subscription_body(app, "cust-001", mandate_id, 1);
    set(&mut body, "/mandate/charges", charges);
    body
}

#[tokio::test(flavor = "multi_thread")]
async fn a_subscription_by_count_generates_its_schedule() {
    let app = app_with_customer().await;
    let start = app.date_in(7);
    let reply = app
        .post("/mandate", &subscription_body(&app, "cust-001", "GYM-1", 3))
        .await;
    reply.expect(201, "MANDATE_CREATE_OK");
    assert_eq!(reply.body["statusCode"], 201);
    let payload = &reply.body["payload"];
    let mandate = &payload["mandate"];
    assert!(mandate["internalId"].as_str().unwrap().starts_with("man_"));
    assert_eq!(mandate["id"], "GYM-1");
    assert_eq!(mandate["type"], "SUBSCRIPTION");
    assert_eq!(mandate["state"], json!({"id": 1, "name": "PENDING"}));
    assert_eq!(mandate["name"], "Plan mensual");
    assert_eq!(mandate["detail"], "Gimnasio");
    assert_eq!(mandate["terminateWhenCharged"], false);
    assert_eq!(mandate["charges"]["currencyId"], "CLP");
    assert_eq!(mandate["charges"]["amount"], 29990);
    assert_eq!(mandate["charges"]["periodicity"], "MONTHLY");
    assert_eq!(mandate["charges"]["startDate"], start.as_str());
    assert_eq!(mandate["charges"]["count"], 3);
    assert_eq!(mandate["charges"]["endDate"], Value::Null);
    assert_eq!(mandate["paymentMethods"], json!([3, 4, 5]));
    assert_eq!(mandate["metadata"], json!({"plan": "gold"}));
    assert_eq!(
        mandate["urls"],
        json!({"callback": "https://merchant.example/return",
               "activationWebhook": "https://merchant.example/hooks/activation",
               "paymentWebhook": "https://merchant.example/hooks/payment"})
    );
    assert_eq!(mandate["cancellation"], Value::Null);
    assert_eq!(payload["customer"]["userId"], "cust-001");
    assert_eq!(payload["paymentMethod"], Value::Null);

    let s = date(&start);
    let expected: Vec<String> = (0..3).map(|n| (s + Months::new(n)).to_string()).collect();
    assert_eq!(due_dates(payload), expected);
    assert_eq!(ids(payload), ["1", "2", "3"]);
    let timestamps = [
        &mandate["createdAt"],
        &mandate["updatedAt"],
        &mandate["magicLinkExpiresAt"],
        &payload["customer"]["createdAt"],
        &payload["installments"][0]["dateTime"],
    ];
    for timestamp in timestamps {
        let text = timestamp.as_str().unwrap();
        assert!(
            text.len() == 24 && text.ends_with('Z') && &text[19..20] == ".",
            "RFC 3339 UTC with milliseconds: {text}"
        );
    }
    for installment in payload["installments"].as_array().unwrap() {
        assert!(
            installment["internalId"]
                .as_str()
                .unwrap()
                .starts_with("ins_")
        );
        assert_eq!(installment["amount"], 29990);
        assert_eq!(installment["currencyId"], "CLP");
        assert_eq!(installment["state"], json!({"id": 1, "name": "PENDING"}));
        assert_eq!(installment["attempts"], 0);
        assert_eq!(installment["authorizationCode"], Value::Null);
        assert_eq!(installment["rejection"], Value::Null);
        assert!(installment["dateTime"].as_str().unwrap().ends_with('Z'));
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_subscription_end_date_is_inclusive() {
    let app = app_with_customer().await;
    let start = date(&app.date_in(7));
    let cases = [
        ("MONTHLY", start + Months::new(2), 3),
        ("MONTHLY", start + Months::new(2) - Duration::days(1), 2),
        ("MONTHLY", start, 1),
        ("WEEKLY", start + Duration::days(21), 4),
        ("WEEKLY", start + Duration::days(20), 3),
        ("QUARTERLY", start + Months::new(6), 3),
        ("ANNUAL", start + Months::new(24), 3),
    ];
    for (n, (periodicity, end, count)) in cases.into_iter().enumerate() {
        let charges = json!({"currencyId": "CLP", "amount": 15000, "periodicity": periodicity,
                             "startDate": start.to_string(), "endDate": end.to_string()});
        let payload = app
            .create_mandate(&subscription(&app, &format!("END-{n}"), charges))
            .await;
        let dates = due_dates(&payload);
        assert_eq!(dates.len(), count, "{periodicity} until {end}: {dates:?}");
        assert_eq!(dates[0], start.to_string());
        assert!(dates.iter().all(|d| date(d) <= end));
        assert_eq!(payload["mandate"]["charges"]["endDate"], end.to_string());
        assert_eq!(payload["mandate"]["charges"]["count"], Value::Null);
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn monthly_dates_keep_the_start_day_clamped_to_the_month_end() {
    let app = app_with_customer().await;
    let year = app.today().year() + 1;
    let feb_end = |y: i32| {
        if NaiveDate::from_ymd_opt(y, 2, 29).is_some() {
            29
        } else {
            28
        }
    };
    let (feb_end, feb_end_next) = (feb_end(year), feb_end(year + 1));
    let ymd = |y: i32, m: u32, d: u32| NaiveDate::from_ymd_opt(y, m, d).unwrap().to_string();
    let cases = [
        (
            "MONTHLY",
            ymd(year, 1, 31),
            5,
            vec![
                ymd(year, 1, 31),
                ymd(year, 2, feb_end),
                ymd(year, 3, 31),
                ymd(year, 4, 30),
                ymd(year, 5, 31),
            ],
        ),
        (
            "MONTHLY",
            ymd(year, 8, 31),
            3,
            vec![ymd(year, 8, 31), ymd(year, 9, 30), ymd(year, 10, 31)],
        ),
        (
            "BIMONTHLY",
            ymd(year, 12, 31),
            3,
            vec![
                ymd(year, 12, 31),
                ymd(year + 1, 2, feb_end_next),
                ymd(year + 1, 4, 30),
            ],
        ),
        (
            "QUARTERLY",
            ymd(year, 5, 31),
            3,
            vec![ymd(year, 5, 31), ymd(year, 8, 31), ymd(year, 11, 30)],
        ),
    ];
    for (n, (periodicity, start, count, expected)) in cases.into_iter().enumerate() {
        let charges = json!({"currencyId": "CLP", "amount": 15000, "periodicity": periodicity,
                             "startDate": start, "count": count});
        let payload = app
            .create_mandate(&subscription(&app, &format!("CLAMP-{n}"), charges))
            .await;
        assert_eq!(due_dates(&payload), expected, "{periodicity} from {start}");
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_permanent_mandate_keeps_exactly_twelve_installments() {
    let app = app_with_customer().await;
    let start = date(&app.date_in(3));
    let mut body = subscription(
        &app,
        "PERM-1",
        json!({"currencyId": "CLP", "amount": 9990, "periodicity": "MONTHLY",
               "startDate": start.to_string()}),
    );
    set(&mut body, "/mandate/type", json!("PERMANENT"));
    let payload = app.create_mandate(&body).await;
    assert_eq!(payload["mandate"]["type"], "PERMANENT");
    let expected: Vec<String> = (0..12)
        .map(|n| (start + Months::new(n)).to_string())
        .collect();
    assert_eq!(due_dates(&payload), expected);
    assert_eq!(
        ids(&payload),
        (1..=12).map(|n| n.to_string()).collect::<Vec<_>>()
    );
    assert_eq!(payload["mandate"]["charges"]["count"], Value::Null);
    assert_eq!(payload["mandate"]["terminateWhenCharged"], false);
}

#[tokio::test(flavor = "multi_thread")]
async fn onepay_with_and_without_its_single_installment() {
    let app = app_with_customer().await;

    // Without installments and without dueDate: one installment for the total, due today.
    let payload = app
        .create_mandate(&onepay_body(&app, "cust-001", "OP-1", 50000, None))
        .await;
    assert_eq!(payload["mandate"]["type"], "ONEPAY");
    assert_eq!(payload["mandate"]["terminateWhenCharged"], true);
    assert_eq!(payload["mandate"]["charges"]["dueDate"], app.date_in(0));
    assert_eq!(id_states(&payload["installments"]), [("1".to_string(), 1)]);
    assert_eq!(payload["installments"][0]["amount"], 50000);
    assert_eq!(
        payload["installments"][0]["installmentDueDate"],
        app.date_in(0)
    );

    // With a dueDate.
    let mut body = onepay_body(&app, "cust-001", "OP-2", 50000, None);
    set(
        &mut body,
        "/mandate/charges/dueDate",
        json!(app.date_in(10)),
    );
    let payload = app.create_mandate(&body).await;
    assert_eq!(due_dates(&payload), [app.date_in(10)]);

    // With its single installment, which must be for the total.
    let payload = app
        .create_mandate(&onepay_body(
            &app,
            "cust-001",
            "OP-3",
            50000,
            Some(("pay-1", 5)),
        ))
        .await;
    assert_eq!(
        id_states(&payload["installments"]),
        [("pay-1".to_string(), 1)]
    );
    assert_eq!(payload["installments"][0]["amount"], 50000);
    assert_eq!(due_dates(&payload), [app.date_in(5)]);
    assert_eq!(payload["mandate"]["terminateWhenCharged"], true);

    // terminateWhenCharged may be turned off.
    let mut body = onepay_body(&app, "cust-001", "OP-4", 50000, Some(("pay-1", 5)));
    set(&mut body, "/mandate/terminateWhenCharged", json!(false));
    let payload = app.create_mandate(&body).await;
    assert_eq!(payload["mandate"]["terminateWhenCharged"], false);
}

#[tokio::test(flavor = "multi_thread")]
async fn dynamic_mandates_take_any_number_of_installments_up_to_max_amount() {
    let app = app_with_customer().await;
    let payload = app
        .create_mandate(&dynamic_body(
            &app,
            "cust-001",
            "DYN-1",
            &[("c1", 100000, 30), ("c2", 5000, 10), ("c3", 1, 20)],
        ))
        .await;
    assert_eq!(payload["mandate"]["type"], "DYNAMIC");
    assert_eq!(payload["mandate"]["charges"]["maxAmount"], 100000);
    assert_eq!(payload["mandate"]["charges"]["amount"], Value::Null);
    assert_eq!(payload["mandate"]["terminateWhenCharged"], false);
    // Ordered by due date, in the creation response as in the lookup.
    assert_eq!(ids(&payload), ["c2", "c3", "c1"]);
    assert_eq!(
        due_dates(&payload),
        [app.date_in(10), app.date_in(20), app.date_in(30)]
    );
    let found = app.mandate("DYN-1").await;
    assert_eq!(ids(&found), ["c2", "c3", "c1"]);

    // Without installments and without maxAmount.
    let mut body = dynamic_body(&app, "cust-001", "DYN-2", &[]);
    remove(&mut body, "/mandate/charges/maxAmount");
    remove(&mut body, "/installments");
    let payload = app.create_mandate(&body).await;
    assert_eq!(payload["installments"], json!([]));
    assert_eq!(payload["mandate"]["charges"]["maxAmount"], Value::Null);
    // Omitted paymentMethods: every method the commerce has enabled.
    assert_eq!(
        payload["mandate"]["paymentMethods"],
        json!([3, 4, 11, 5, 6, 14])
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn amounts_keep_their_currency_decimals() {
    let app = app_with_customer().await;
    let accepted = [
        ("CLF", "1.2345", "1.2345"),
        ("CLF", "2.50", "2.5"),
        ("USD", "10.55", "10.55"),
        ("USD", "10.50", "10.5"),
        ("CLP", "29990.0", "29990"),
    ];
    for (n, (currency, amount, shown)) in accepted.into_iter().enumerate() {
        let body = format!(
            r#"{{"customer": {{"userId": "cust-001"}},
                "mandate": {{"id": "MONEY-{n}", "type": "SUBSCRIPTION", "name": "Plan",
                            "charges": {{"currencyId": "{currency}", "amount": {amount},
                                        "periodicity": "MONTHLY", "startDate": "{start}", "count": 2}}}}}}"#,
            start = app.date_in(7)
        );
        let reply = app.request_raw(Method::POST, "/mandate", &body).await;
        reply.expect(201, "MANDATE_CREATE_OK");
        let payload = &reply.body["payload"];
        assert_eq!(payload["mandate"]["charges"]["amount"].to_string(), shown);
        for installment in payload["installments"].as_array().unwrap() {
            assert_eq!(
                installment["amount"].to_string(),
                shown,
                "{currency} {amount}"
            );
            assert_eq!(installment["currencyId"], currency);
        }
    }
    let refused = [
        ("CLF", "1.23456"),
        ("USD", "10.555"),
        ("CLP", "29990.5"),
        ("CLP", "0"),
        ("USD", "-10"),
    ];
    for (currency, amount) in refused {
        let body = format!(
            r#"{{"customer": {{"userId": "cust-001"}},
                "mandate": {{"id": "MONEY-BAD", "type": "SUBSCRIPTION", "name": "Plan",
                            "charges": {{"currencyId": "{currency}", "amount": {amount},
                                        "periodicity": "MONTHLY", "startDate": "{start}", "count": 2}}}}}}"#,
            start = app.date_in(7)
        );
        let reply = app.request_raw(Method::POST, "/mandate", &body).await;
        reply.expect(400, "VALIDATION_ERROR");
        assert_eq!(
            reply.error_fields(),
            ["mandate.charges.amount"],
            "{currency} {amount}"
        );
        assert_eq!(error_codes(&reply), ["INVALID_AMOUNT"]);
    }
    // The same rule for an installment sent in the body, and for maxAmount.
    let body = format!(
        r#"{{"customer": {{"userId": "cust-001"}},
            "mandate": {{"id": "MONEY-BAD", "type": "DYNAMIC", "name": "Cuenta",
                        "charges": {{"currencyId": "USD", "maxAmount": 100.001}}}},
            "installments": [{{"id": "c1", "amount": 1.234, "currencyId": "USD",
                               "installmentDueDate": "{due}"}}]}}"#,
        due = app.date_in(7)
    );
    let reply = app.request_raw(Method::POST, "/mandate", &body).await;
    reply.expect(400, "VALIDATION_ERROR");
    assert_eq!(
        sorted_fields(&reply),
        ["installments[0].amount", "mandate.charges.maxAmount"]
    );
    let reply = app.get("/mandate/id/MONEY-BAD").await;
    reply.expect(404, "MANDATE_NOT_FOUND");
}

#[tokio::test(flavor = "multi_thread")]
async fn creation_refusals_name_their_fields_and_create_nothing() {
    let app = app_with_customer().await;
    let internal = app.create_customer("cust-002", &rut(11_111_111)).await;
    let sub = subscription_body(&app, "cust-001", "BAD-1", 3);
    let one = onepay_body(&app, "cust-001", "BAD-1", 50000, Some(("p1", 5)));
    let dynamic = dynamic_body(&app, "cust-001", "BAD-1", &[("c1", 1000, 5)]);
    let item = |id: &str, amount: i64, currency: &str, days: i64| {
        json!({"id": id, "amount": amount, "currencyId": currency,
               "installmentDueDate": app.date_in(days)})
    };
    let empty = json!({});
    let v = |value: Value| Some(value);
    type Case<'a> = (
        &'a Value,
        Vec<(&'a str, Option<Value>)>,
        u16,
        &'a str,
        Vec<&'a str>,
    );
    let cases: Vec<Case> = vec![
        // Installments are generated by SUBSCRIPTION and PERMANENT mandates, never sent.
        (
            &sub,
            vec![("/installments", v(json!([item("x", 29990, "CLP", 7)])))],
            400,
            "VALIDATION_ERROR",
            vec!["installments"],
        ),
        (
            &sub,
            vec![
                ("/mandate/type", v(json!("PERMANENT"))),
                ("/mandate/charges/count", None),
                ("/installments", v(json!([item("x", 29990, "CLP", 7)]))),
            ],
            400,
            "VALIDATION_ERROR",
            vec!["installments"],
        ),
        // ONEPAY: one installment, for the total.
        (
            &one,
            vec![("/installments/0/amount", v(json!(49999)))],
            400,
            "VALIDATION_ERROR",
            vec!["installments[0].amount"],
        ),
        (
            &one,
            vec![(
                "/installments",
                v(json!([
                    item("p1", 50000, "CLP", 5),
                    item("p2", 50000, "CLP", 5)
                ])),
            )],
            400,
            "VALIDATION_ERROR",
            vec!["installments"],
        ),
        (
            &one,
            vec![("/installments/0/currencyId", v(json!("USD")))],
            400,
            "VALIDATION_ERROR",
            vec!["installments[0].currencyId"],
        ),
        (
            &one,
            vec![("/mandate/charges/dueDate", v(json!(app.date_in(10))))],
            400,
            "VALIDATION_ERROR",
            vec!["installments[0].installmentDueDate"],
        ),
        (
            &one,
            vec![
                ("/mandate/charges/dueDate", v(json!(app.date_in(-1)))),
                ("/installments", v(json!([]))),
            ],
            400,
            "VALIDATION_ERROR",
            vec!["mandate.charges.dueDate"],
        ),
        (
            &one,
            vec![("/mandate/charges/periodicity", v(json!("MONTHLY")))],
            400,
            "VALIDATION_ERROR",
            vec!["mandate.charges.periodicity"],
        ),
        (
            &one,
            vec![("/mandate/charges/amount", None)],
            400,
            "VALIDATION_ERROR",
            vec!["mandate.charges.amount"],
        ),
        // DYNAMIC: its currency and maxAmount bound the installments.
        (
            &dynamic,
            vec![("/installments/0/currencyId", v(json!("USD")))],
            400,
            "VALIDATION_ERROR",
            vec!["installments[0].currencyId"],
        ),
        (
            &dynamic,
            vec![("/installments/0/amount", v(json!(100001)))],
            400,
            "VALIDATION_ERROR",
            vec!["installments[0].amount"],
        ),
        (
            &dynamic,
            vec![("/mandate/charges/amount", v(json!(1000)))],
            400,
            "VALIDATION_ERROR",
            vec!["mandate.charges.amount"],
        ),
        (
            &dynamic,
            vec![(
                "/installments",
                v(json!([item("c1", 1, "CLP", 5), item("c1", 2, "CLP", 6)])),
            )],
            400,
            "VALIDATION_ERROR",
            vec!["installments[1].id"],
        ),
        (
            &dynamic,
            vec![(
                "/installments/0/installmentDueDate",
                v(json!(app.date_in(-1))),
            )],
            400,
            "VALIDATION_ERROR",
            vec!["installments[0].installmentDueDate"],
        ),
        // Customer: exactly one of the ids, of an existing customer of the commerce.
        (
            &sub,
            vec![("/customer/internalUserId", v(json!(internal)))],
            400,
            "VALIDATION_ERROR",
            vec!["customer"],
        ),
        (
            &sub,
            vec![("/customer/userId", None)],
            400,
            "VALIDATION_ERROR",
            vec!["customer"],
        ),
        (
            &sub,
            vec![("/customer", None)],
            400,
            "VALIDATION_ERROR",
            vec!["customer"],
        ),
        (
            &sub,
            vec![("/customer/userId", v(json!("nobody")))],
            400,
            "USER_NOT_FOUND",
            vec!["customer.userId"],
        ),
        (
            &sub,
            vec![
                ("/customer/userId", None),
                ("/customer/internalUserId", v(json!("usr_nobody"))),
            ],
            400,
            "USER_NOT_FOUND",
            vec!["customer.internalUserId"],
        ),
        // URLs.
        (
            &sub,
            vec![(
                "/urls/activationWebhook",
                v(json!("http://merchant.example/hooks/activation")),
            )],
            400,
            "VALIDATION_ERROR",
            vec!["urls.activationWebhook"],
        ),
        (
            &sub,
            vec![(
                "/urls/paymentWebhook",
                v(json!("http://localhost/hooks/payment")),
            )],
            400,
            "VALIDATION_ERROR",
            vec!["urls.paymentWebhook"],
        ),
        (
            &sub,
            vec![("/urls/paymentWebhook", v(json!("not a url")))],
            400,
            "VALIDATION_ERROR",
            vec!["urls.paymentWebhook"],
        ),
        (
            &sub,
            vec![("/urls/callback", v(json!("http://merchant.example/return")))],
            400,
            "VALIDATION_ERROR",
            vec!["urls.callback"],
        ),
        (
            &sub,
            vec![("/urls/callback", v(json!("ftp://localhost/return")))],
            400,
            "VALIDATION_ERROR",
            vec!["urls.callback"],
        ),
        // Payment methods.
        (
            &sub,
            vec![("/paymentMethods", v(json!([3, 7])))],
            400,
            "VALIDATION_ERROR",
            vec!["paymentMethods[1]"],
        ),
        (
            &sub,
            vec![("/paymentMethods", v(json!([1, 3, 2])))],
            400,
            "VALIDATION_ERROR",
            vec!["paymentMethods[0]", "paymentMethods[2]"],
        ),
        (
            &sub,
            vec![("/paymentMethods", v(json!([3, 3])))],
            400,
            "VALIDATION_ERROR",
            vec!["paymentMethods[1]"],
        ),
        (
            &sub,
            vec![("/paymentMethods", v(json!([])))],
            400,
            "VALIDATION_ERROR",
            vec!["paymentMethods"],
        ),
        // Type, charges and schedule.
        (
            &sub,
            vec![("/mandate/type", v(json!("MONTHLY")))],
            400,
            "VALIDATION_ERROR",
            vec!["mandate.type"],
        ),
        (
            &sub,
            vec![("/mandate/type", None)],
            400,
            "VALIDATION_ERROR",
            vec!["mandate.type"],
        ),
        (
            &sub,
            vec![("/mandate/charges", None)],
            400,
            "VALIDATION_ERROR",
            vec!["mandate.charges"],
        ),
        (
            &sub,
            vec![("/mandate/charges/currencyId", v(json!("EUR")))],
            400,
            "VALIDATION_ERROR",
            vec!["mandate.charges.currencyId"],
        ),
        (
            &sub,
            vec![("/mandate/charges/periodicity", v(json!("DAILY")))],
            400,
            "VALIDATION_ERROR",
            vec!["mandate.charges.periodicity"],
        ),
        (
            &sub,
            vec![("/mandate/charges/startDate", v(json!(app.date_in(-1))))],
            400,
            "VALIDATION_ERROR",
            vec!["mandate.charges.startDate"],
        ),
        (
            &sub,
            vec![("/mandate/charges/startDate", v(json!("05-12-2026")))],
            400,
            "VALIDATION_ERROR",
            vec!["mandate.charges.startDate"],
        ),
        (
            &sub,
            vec![("/mandate/charges/endDate", v(json!(app.date_in(90))))],
            400,
            "VALIDATION_ERROR",
            vec!["mandate.charges"],
        ),
        (
            &sub,
            vec![("/mandate/charges/count", None)],
            400,
            "VALIDATION_ERROR",
            vec!["mandate.charges"],
        ),
        (
            &sub,
            vec![
                ("/mandate/charges/count", None),
                ("/mandate/charges/endDate", v(json!(app.date_in(6)))),
            ],
            400,
            "VALIDATION_ERROR",
            vec!["mandate.charges.endDate"],
        ),
        (
            &sub,
            vec![("/mandate/charges/count", v(json!(0)))],
            400,
            "VALIDATION_ERROR",
            vec!["mandate.charges.count"],
        ),
        (
            &sub,
            vec![("/mandate/charges/count", v(json!(1201)))],
            400,
            "VALIDATION_ERROR",
            vec!["mandate.charges.count"],
        ),
        (
            &sub,
            vec![("/mandate/type", v(json!("PERMANENT")))],
            400,
            "VALIDATION_ERROR",
            vec!["mandate.charges.count"],
        ),
        // Ids, names, metadata.
        (
            &sub,
            vec![("/mandate/id", v(json!("GYM 2026")))],
            400,
            "VALIDATION_ERROR",
            vec!["mandate.id"],
        ),
        (
            &sub,
            vec![("/mandate/name", v(json!("")))],
            400,
            "VALIDATION_ERROR",
            vec!["mandate.name"],
        ),
        (
            &sub,
            vec![("/metadata", v(json!(["gold"])))],
            400,
            "VALIDATION_ERROR",
            vec!["metadata"],
        ),
        // Missing parts, all listed at once.
        (
            &empty,
            vec![],
            400,
            "VALIDATION_ERROR",
            vec!["customer", "mandate"],
        ),
        (
            &sub,
            vec![("/mandate", v(json!({})))],
            400,
            "VALIDATION_ERROR",
            vec![
                "mandate.charges",
                "mandate.id",
                "mandate.name",
                "mandate.type",
            ],
        ),
        // Wrong JSON types.
        (
            &sub,
            vec![("/mandate/charges/amount", v(json!("29990")))],
            400,
            "VALIDATION_ERROR",
            vec!["mandate.charges.amount"],
        ),
        (
            &sub,
            vec![("/mandate/charges/count", v(json!("3")))],
            400,
            "VALIDATION_ERROR",
            vec!["mandate.charges.count"],
        ),
        (
            &sub,
            vec![("/paymentMethods", v(json!(["3"])))],
            400,
            "VALIDATION_ERROR",
            vec!["paymentMethods[0]"],
        ),
        (
            &sub,
            vec![("/mandate/terminateWhenCharged", v(json!("yes")))],
            400,
            "VALIDATION_ERROR",
            vec!["mandate.terminateWhenCharged"],
        ),
        (
            &dynamic,
            vec![("/installments/0/amount", v(json!({"value": 1})))],
            400,
            "VALIDATION_ERROR",
            vec!["installments[0].amount"],
        ),
        (
            &dynamic,
            vec![("/installments/0/amount", v(json!(true)))],
            400,
            "VALIDATION_ERROR",
            vec!["installments[0].amount"],
        ),
        (
            &dynamic,
            vec![("/mandate/charges/maxAmount", v(json!({"amount": 100000})))],
            400,
            "VALIDATION_ERROR",
            vec!["mandate.charges.maxAmount"],
        ),
    ];
    for (base, changes, status, name, fields) in cases {
        let body = changed(base, &changes);
        let reply = app.post("/mandate", &body).await;
        reply.expect(status, name);
        let mut expected: Vec<String> = fields.iter().map(|f| f.to_string()).collect();
        expected.sort();
        assert_eq!(sorted_fields(&reply), expected, "{changes:?}");
    }
    for raw in ["mandate", "{\"mandate\": ", ""] {
        let reply = app.request_raw(Method::POST, "/mandate", raw).await;
        reply.expect(400, "VALIDATION_ERROR");
        assert_eq!(reply.error_fields(), ["body"], "body {raw:?}");
    }
    let reply = app.get("/mandate/id/BAD-1").await;
    reply.expect(404, "MANDATE_NOT_FOUND");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_mandate_id_is_used_once_per_commerce() {
    let app = app_with_customer().await;
    let first = app
        .create_mandate(&subscription_body(&app, "cust-001", "GYM-1", 2))
        .await;
    for body in [
        subscription_body(&app, "cust-001", "GYM-1", 5),
        dynamic_body(&app, "cust-001", "GYM-1", &[("c1", 1000, 5)]),
    ] {
        let reply = app.post("/mandate", &body).await;
        reply.expect(400, "DUPLICATED_MANDATE_ID");
        assert_eq!(reply.error_fields(), ["mandate.id"]);
    }
    let found = app.mandate("GYM-1").await;
    assert_eq!(
        found["mandate"]["internalId"],
        first["mandate"]["internalId"]
    );
    assert_eq!(found["installments"].as_array().unwrap().len(), 2);
}

#[tokio::test(flavor = "multi_thread")]
async fn urls_and_metadata_are_kept_as_sent() {
    let app = app_with_customer().await;
    let metadata = json!({"plan": "gold", "crm": {"account": 12, "tags": ["a", "b"]},
                          "price": 10.5, "active": true, "note": null});
    let callbacks = [
        "http://localhost:3000/return?x=1",
        "http://127.0.0.1/return",
        "https://merchant.example/return",
    ];
    for (n, callback) in callbacks.into_iter().enumerate() {
        let mut body = subscription_body(&app, "cust-001", &format!("URL-{n}"), 1);
        set(&mut body, "/urls/callback", json!(callback));
        set(&mut body, "/metadata", metadata.clone());
        let payload = app.create_mandate(&body).await;
        assert_eq!(payload["mandate"]["urls"]["callback"], callback);
        assert_eq!(payload["mandate"]["metadata"], metadata);
        assert_eq!(
            payload["mandate"]["metadata"].to_string(),
            metadata.to_string(),
            "members keep their order"
        );
        let found = app.mandate(&format!("URL-{n}")).await;
        assert_eq!(found["mandate"]["metadata"], metadata);
        assert_eq!(found["mandate"]["urls"]["callback"], callback);
    }
    // Without urls nor metadata: nulls.
    let mut body = subscription_body(&app, "cust-001", "URL-NONE", 1);
    remove(&mut body, "/urls");
    remove(&mut body, "/metadata");
    let payload = app.create_mandate(&body).await;
    assert_eq!(
        payload["mandate"]["urls"],
        json!({"callback": null, "activationWebhook": null, "paymentWebhook": null})
    );
    assert_eq!(payload["mandate"]["metadata"], Value::Null);
}

#[tokio::test(flavor = "multi_thread")]
async fn the_magic_link_is_absolute_and_lasts_thirty_days() {
    let app = app_with_customer().await;
    let mut links = Vec::new();
    for id in ["ML-1", "ML-2"] {
        let payload = app
            .create_mandate(&subscription_body(&app, "cust-001", id, 1))
            .await;
        let link = payload["mandate"]["magicLink"]
            .as_str()
            .unwrap()
            .to_string();
        let prefix = format!("{}/link/", app.base);
        assert!(link.starts_with(&prefix), "{link}");
        let token = &link[prefix.len()..];
        assert_eq!(token.len(), 22, "128 bits in URL-safe base64: {token}");
        assert!(
            token
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
        );
        let url = url::Url::parse(&link).unwrap();
        assert!(url.has_host());
        let expires = payload["mandate"]["magicLinkExpiresAt"].as_str().unwrap();
        assert!(expires.ends_with('Z'), "{expires}");
        let expires: DateTime<Utc> = expires.parse().unwrap();
        let expected = app.clock_now() + Duration::days(30);
        assert!(
            (expires - expected).num_seconds().abs() <= 60,
            "{expires} vs {expected}"
        );
        links.push(link);
    }
    assert_ne!(links[0], links[1], "every mandate has its own token");
}

#[tokio::test(flavor = "multi_thread")]
async fn the_three_lookups() {
    let app = app_with_customer().await;
    let sub = app
        .create_mandate(&subscription_body(&app, "cust-001", "GYM-1", 2))
        .await;
    let one = app
        .create_mandate(&onepay_body(&app, "cust-001", "OP-1", 50000, None))
        .await;
    let sub_internal = sub["mandate"]["internalId"].as_str().unwrap();
    let one_internal = one["mandate"]["internalId"].as_str().unwrap();
    let found: [(String, &Value); 4] = [
        ("/mandate/id/GYM-1".into(), &sub),
        (format!("/mandate/internalId/{sub_internal}"), &sub),
        ("/mandate/onepay/confirm/id/OP-1".into(), &one),
        (format!("/mandate/internalId/{one_internal}"), &one),
    ];
    for (path, created) in found {
        let reply = app.get(&path).await;
        reply.expect(200, "MANDATE_DETAIL_OK");
        assert_eq!(reply.body["statusCode"], 200);
        // A lookup answers what creation answered, nothing having changed since.
        assert_eq!(&reply.body["payload"], created, "{path}");
    }
    let missing = [
        (
            "/mandate/onepay/confirm/id/GYM-1".to_string(),
            404,
            "ONEPAY_MANDATE_NOT_FOUND",
            vec!["path.mandateExternalId"],
        ),
        (
            "/mandate/onepay/confirm/id/NOPE".to_string(),
            404,
            "MANDATE_NOT_FOUND",
            vec!["path.mandateExternalId"],
        ),
        (
            "/mandate/id/NOPE".to_string(),
            404,
            "MANDATE_NOT_FOUND",
            vec!["path.mandateId"],
        ),
        (
            "/mandate/id/gym-1".to_string(),
            404,
            "MANDATE_NOT_FOUND",
            vec!["path.mandateId"],
        ),
        (
            format!("/mandate/id/{sub_internal}"),
            404,
            "MANDATE_NOT_FOUND",
            vec!["path.mandateId"],
        ),
        (
            "/mandate/internalId/GYM-1".to_string(),
            404,
            "MANDATE_NOT_FOUND",
            vec!["path.mandateId"],
        ),
        (
            "/mandate/externalId/GYM-1".to_string(),
            400,
            "VALIDATION_ERROR",
            vec!["path.mandateTypeId"],
        ),
        (
            "/mandate/ID/GYM-1".to_string(),
            400,
            "VALIDATION_ERROR",
            vec!["path.mandateTypeId"],
        ),
    ];
    for (path, status, name, fields) in missing {
        let reply = app.get(&path).await;
        reply.expect(status, name);
        assert_eq!(reply.error_fields(), fields, "{path}");
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn installments_are_listed_by_due_date() {
    let app = app_with_customer().await;
    app.create_mandate(&dynamic_body(
        &app,
        "cust-001",
        "DYN-1",
        &[("z", 1000, 40), ("a", 1000, 5), ("m", 1000, 20)],
    ))
    .await;
    let reply = app
        .post(
            "/installments",
            &installments_body(
                &app,
                "cust-001",
                "DYN-1",
                &[("b", 2000, 1), ("y", 2000, 30)],
            ),
        )
        .await;
    reply.expect(201, "INSTALLMENTS_CREATE_OK");
    let payload = app.mandate("DYN-1").await;
    assert_eq!(ids(&payload), ["b", "a", "m", "y", "z"]);
    let dates = due_dates(&payload);
    let mut sorted = dates.clone();
    sorted.sort();
    assert_eq!(dates, sorted);
}

#[tokio::test(flavor = "multi_thread")]
async fn cancel_in_both_path_forms() {
    let app = app_with_customer().await;
    let first = app
        .create_mandate(&subscription_body(&app, "cust-001", "GYM-1", 2))
        .await;
    let second = app
        .create_mandate(&subscription_body(&app, "cust-001", "GYM-2", 2))
        .await;
    let internal_user = first["customer"]["internalUserId"].as_str().unwrap();
    let cases = [
        (
            "GYM-1",
            format!(
                "/mandate/cancel/id/GYM-1/userId/cust-001?description={}",
                encode("Cliente se cambió de plan")
            ),
            None,
            "Cliente se cambió de plan",
        ),
        (
            "GYM-2",
            format!(
                "/mandate/cancel/internalId/{}/internalUserId/{internal_user}",
                second["mandate"]["internalId"].as_str().unwrap()
            ),
            Some(json!({"description": "Solicitud del cliente"})),
            "Solicitud del cliente",
        ),
    ];
    for (id, path, body, description) in cases {
        let reply = app.delete(&path, body.as_ref()).await;
        reply.expect(200, "MANDATE_CANCEL_OK");
        let payload = &reply.body["payload"];
        assert_eq!(payload["mandate"]["id"], id);
        assert_eq!(
            payload["mandate"]["state"],
            json!({"id": 3, "name": "CANCELLED"})
        );
        assert_eq!(
            payload["mandate"]["cancellation"]["description"],
            description
        );
        assert_eq!(
            id_states(&payload["installments"]),
            [("1".to_string(), 4), ("2".to_string(), 4)]
        );
        let found = app.mandate(id).await;
        assert_eq!(found["mandate"]["state"]["id"], 3);
        assert_eq!(
            found["installments"][0]["state"],
            json!({"id": 4, "name": "ANNULLED"})
        );
    }
    // The mixed forms are the same operation.
    app.create_mandate(&subscription_body(&app, "cust-001", "GYM-3", 1))
        .await;
    let reply = app
        .delete(
            &format!("/mandate/cancel/id/GYM-3/internalUserId/{internal_user}?description=Baja"),
            None,
        )
        .await;
    reply.expect(200, "MANDATE_CANCEL_OK");
}

#[tokio::test(flavor = "multi_thread")]
async fn cancel_refusals() {
    let app = app_with_customer().await;
    app.create_customer("cust-002", &rut(11_111_111)).await;
    app.create_mandate(&subscription_body(&app, "cust-001", "GYM-1", 2))
        .await;
    let ok = Some(json!({"description": "Solicitud del cliente"}));
    let long = "x".repeat(501);
    type Case<'a> = (String, Option<Value>, u16, &'a str, Vec<&'a str>);
    let cases: Vec<Case> = vec![
        (
            "/mandate/cancel/id/GYM-1/userId/cust-001".into(),
            None,
            400,
            "VALIDATION_ERROR",
            vec!["description"],
        ),
        (
            "/mandate/cancel/id/GYM-1/userId/cust-001".into(),
            Some(json!({})),
            400,
            "VALIDATION_ERROR",
            vec!["description"],
        ),
        (
            "/mandate/cancel/id/GYM-1/userId/cust-001?description=".into(),
            None,
            400,
            "VALIDATION_ERROR",
            vec!["description"],
        ),
        (
            "/mandate/cancel/id/GYM-1/userId/cust-001?description=ab".into(),
            None,
            400,
            "VALIDATION_ERROR",
            vec!["description"],
        ),
        (
            "/mandate/cancel/id/GYM-1/userId/cust-001".into(),
            Some(json!({"description": "  ab  "})),
            400,
            "VALIDATION_ERROR",
            vec!["description"],
        ),
        (
            format!("/mandate/cancel/id/GYM-1/userId/cust-001?description={long}"),
            None,
            400,
            "VALIDATION_ERROR",
            vec!["description"],
        ),
        (
            "/mandate/cancel/id/GYM-1/userId/cust-001".into(),
            Some(json!({"description": 42})),
            400,
            "VALIDATION_ERROR",
            vec!["description"],
        ),
        (
            "/mandate/cancel/mandateId/GYM-1/userId/cust-001".into(),
            ok.clone(),
            400,
            "VALIDATION_ERROR",
            vec!["path.mandateTypeId"],
        ),
        (
            "/mandate/cancel/id/GYM-1/rut/cust-001".into(),
            ok.clone(),
            400,
            "VALIDATION_ERROR",
            vec!["path.userTypeId"],
        ),
        (
            "/mandate/cancel/id/GYM-1/rut/cust-001".into(),
            None,
            400,
            "VALIDATION_ERROR",
            vec!["description", "path.userTypeId"],
        ),
        // A customer that exists but does not own the mandate, or none at all.
        (
            "/mandate/cancel/id/GYM-1/userId/cust-002".into(),
            ok.clone(),
            404,
            "MANDATE_NOT_FOUND",
            vec!["path.userId"],
        ),
        (
            "/mandate/cancel/id/GYM-1/userId/nobody".into(),
            ok.clone(),
            404,
            "MANDATE_NOT_FOUND",
            vec!["path.userId"],
        ),
        (
            "/mandate/cancel/id/GYM-1/internalUserId/cust-001".into(),
            ok.clone(),
            404,
            "MANDATE_NOT_FOUND",
            vec!["path.userId"],
        ),
        (
            "/mandate/cancel/id/NOPE/userId/cust-001".into(),
            ok.clone(),
            404,
            "MANDATE_NOT_FOUND",
            vec!["path.mandateId"],
        ),
    ];
    for (path, body, status, name, fields) in cases {
        let reply = app.delete(&path, body.as_ref()).await;
        reply.expect(status, name);
        assert_eq!(sorted_fields(&reply), fields, "{path} {body:?}");
    }
    let reply = app
        .request_raw(
            Method::DELETE,
            "/mandate/cancel/id/GYM-1/userId/cust-001",
            "reason: moving",
        )
        .await;
    reply.expect(400, "VALIDATION_ERROR");
    assert_eq!(reply.error_fields(), ["body"]);
    // None of them cancelled anything.
    let found = app.mandate("GYM-1").await;
    assert_eq!(
        found["mandate"]["state"],
        json!({"id": 1, "name": "PENDING"})
    );
    assert!(
        app.events_of(found["mandate"]["internalId"].as_str().unwrap())
            .is_empty()
    );

    // Once cancelled, a second cancellation is a state conflict.
    let path = "/mandate/cancel/id/GYM-1/userId/cust-001";
    app.delete(path, ok.as_ref())
        .await
        .expect(200, "MANDATE_CANCEL_OK");
    let reply = app.delete(path, ok.as_ref()).await;
    reply.expect(400, "MANDATE_STATE_CONFLICT");

    // So is cancelling a FINISHED mandate.
    app.create_mandate(&onepay_body(&app, "cust-001", "OP-1", 50000, None))
        .await;
    app.put(
        "/installments/status/change",
        &payment_body(&app, "OP-1", &["1"], 50000),
    )
    .await
    .expect(200, "INSTALLMENTS_STATUS_CHANGE_OK");
    let reply = app
        .delete("/mandate/cancel/id/OP-1/userId/cust-001", ok.as_ref())
        .await;
    reply.expect(400, "MANDATE_STATE_CONFLICT");
    assert_eq!(app.mandate("OP-1").await["mandate"]["state"]["id"], 4);
}

#[tokio::test(flavor = "multi_thread")]
async fn cancel_annuls_pending_installments_and_records_signed_events() {
    let app = app_with_customer().await;
    let created = app
        .create_mandate(&subscription_body(&app, "cust-001", "GYM-1", 3))
        .await;
    let internal = created["mandate"]["internalId"].as_str().unwrap();
    assert!(app.events_of(internal).is_empty(), "creation sends nothing");
    // The first installment is paid, so only the other two are annulled.
    app.put(
        "/installments/status/change",
        &payment_body(&app, "GYM-1", &["1"], 29990),
    )
    .await
    .expect(200, "INSTALLMENTS_STATUS_CHANGE_OK");
    app.delete(
        "/mandate/cancel/id/GYM-1/userId/cust-001?description=Cambio%20de%20plan",
        None,
    )
    .await
    .expect(200, "MANDATE_CANCEL_OK");
    assert_eq!(
        app.installment_states("GYM-1").await,
        [
            ("1".to_string(), 2),
            ("2".to_string(), 4),
            ("3".to_string(), 4)
        ]
    );

    let events = app.events_of(internal);
    let summary: Vec<(String, i64, Value)> = events
        .iter()
        .map(|e| {
            let state = if e["event"] == "payment" {
                json!([e["installment"]["id"], e["installment"]["state"]])
            } else {
                e["product"]["state"].clone()
            };
            (
                e["event"].as_str().unwrap().to_string(),
                e["sequence"].as_i64().unwrap(),
                state,
            )
        })
        .collect();
    assert_eq!(
        summary,
        [
            (
                "payment".to_string(),
                1,
                json!(["1", {"id": 2, "name": "PAID"}])
            ),
            (
                "payment".to_string(),
                2,
                json!(["2", {"id": 4, "name": "ANNULLED"}])
            ),
            (
                "payment".to_string(),
                3,
                json!(["3", {"id": 4, "name": "ANNULLED"}])
            ),
            (
                "activation".to_string(),
                4,
                json!({"id": 3, "name": "CANCELLED"})
            ),
        ]
    );
    let activation = &events[3];
    assert_eq!(activation["paymentMethod"], Value::Null);
    assert_eq!(activation["product"]["internalId"], internal);
    assert_eq!(activation["product"]["id"], "GYM-1");
    assert_eq!(activation["product"]["type"], "SUBSCRIPTION");
    assert_eq!(activation["customer"]["userId"], "cust-001");
    assert_eq!(
        activation["customer"]["internalUserId"],
        created["customer"]["internalUserId"]
    );
    for key in ["dateTime", "fileBase64", "eventId", "createdAt"] {
        assert!(activation.get(key).is_some(), "activation has {key}");
    }
    for event in &events {
        assert!(event["eventId"].as_str().unwrap().starts_with("evt_"));
        assert_eq!(event["product"]["internalId"], internal);
        let signature = event["signature"].as_str().unwrap();
        assert_eq!(signature.len(), 64, "{signature}");
        assert!(
            signature
                .bytes()
                .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
        );
        assert_eq!(signature, expected_signature(&app, event), "{event}");
    }
    for payment in &events[1..3] {
        let installment = &payment["installment"];
        assert_eq!(installment["amount"], 29990);
        assert_eq!(installment["currencyId"], "CLP");
        assert!(
            installment["internalId"]
                .as_str()
                .unwrap()
                .starts_with("ins_")
        );
        assert_eq!(installment["rejection"], Value::Null);
    }
}

/// HMAC-SHA256, keyed with the commerce's decoded secret, of the JCS form of the body without
/// its `signature` (CONTRACT 7).
fn expected_signature(app: &TestApp, event: &Value) -> String {
    use base64::Engine;
    let secret = app.webhook_secret(COMMERCE);
    let key = base64::engine::general_purpose::STANDARD
        .decode(secret.strip_prefix("whsec_").unwrap())
        .unwrap();
    let mut body = event.clone();
    body.as_object_mut().unwrap().shift_remove("signature");
    let mut mac = Hmac::<sha2::Sha256>::new_from_slice(&key).unwrap();
    mac.update(mandato_core::jcs::canonicalize(&body).as_bytes());
    hex::encode(mac.finalize().into_bytes())
}

/// `(field, code)` of every error of a reply, sorted.
fn field_codes(reply: &Reply) -> Vec<(String, String)> {
    let mut pairs: Vec<(String, String)> = reply.body["errors"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            (
                e["field"].as_str().unwrap().to_string(),
                e["code"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    pairs.sort();
    pairs
}

fn invalid_characters(fields: &[&str]) -> Vec<(String, String)> {
    let mut pairs: Vec<(String, String)> = fields
        .iter()
        .map(|f| (f.to_string(), "INVALID_CHARACTERS".to_string()))
        .collect();
    pairs.sort();
    pairs
}

#[tokio::test(flavor = "multi_thread")]
async fn shown_texts_refuse_control_and_direction_characters_at_every_field() {
    let app = app_with_customer().await;

    // A customer: every bad name and address field is named in one refusal; nothing is stored.
    let customer = changed(
        &customer_body("cust-bad", &rut(11_111_111)),
        &[
            (
                "/customer/personalInformation/firstName",
                Some(json!("Ana\u{0}")),
            ),
            (
                "/customer/personalInformation/lastName",
                Some(json!("Pérez\nSoto")),
            ),
            (
                "/customer/personalInformation/secondLastName",
                Some(json!("\u{202E}otoS")),
            ),
            (
                "/customer/address/street",
                Some(json!("Av.\u{2066} Providencia")),
            ),
            ("/customer/address/city", Some(json!("Santiago\u{200F}"))),
            (
                "/customer/address/commune",
                Some(json!("Provi\u{1B}[2Jdencia")),
            ),
        ],
    );
    let reply = app.post("/user", &customer).await;
    reply.expect(400, "VALIDATION_ERROR");
    assert_eq!(
        field_codes(&reply),
        invalid_characters(&[
            "customer.personalInformation.firstName",
            "customer.personalInformation.lastName",
            "customer.personalInformation.secondLastName",
            "customer.address.street",
            "customer.address.city",
            "customer.address.commune",
        ])
    );
    let mut good = customer_body("cust-bad", &rut(11_111_111));
    set(
        &mut good,
        "/customer/personalInformation/firstName",
        json!("Zoë محمد"),
    );
    // Created, not updated: the refused request stored nothing.
    app.post("/user", &good).await.expect(201, "USER_CREATE_OK");

    // A mandate's name and detail, together with another kind of problem.
    let mut body = subscription_body(&app, "cust-001", "GYM-BIDI", 2);
    set(&mut body, "/mandate/name", json!("Plan\u{202E}lasnem"));
    set(
        &mut body,
        "/mandate/detail",
        json!("Gimnasio\r\nLínea falsa"),
    );
    let reply = app.post("/mandate", &body).await;
    reply.expect(400, "VALIDATION_ERROR");
    assert_eq!(
        field_codes(&reply),
        invalid_characters(&["mandate.detail", "mandate.name"])
    );
    app.get("/mandate/id/GYM-BIDI")
        .await
        .expect(404, "MANDATE_NOT_FOUND");

    // A cancellation's reason is one line too.
    app.create_mandate(&subscription_body(&app, "cust-001", "GYM-1", 2))
        .await;
    let reply = app
        .delete(
            "/mandate/cancel/id/GYM-1/userId/cust-001",
            Some(&json!({"description": "Pedido\nFirmado: el banco"})),
        )
        .await;
    reply.expect(400, "VALIDATION_ERROR");
    assert_eq!(field_codes(&reply), invalid_characters(&["description"]));
    assert_eq!(
        app.mandate("GYM-1").await["mandate"]["state"]["name"],
        "PENDING"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn staff_refuse_a_commerce_name_with_control_characters() {
    let app = spawn_app().await;
    let url = |path: &str| format!("{}/admin/api{path}", app.base);
    let setup = app
        .client
        .post(url("/setup"))
        .json(&json!({"email": "owner@merchant.example", "password": "a long password"}))
        .send()
        .await
        .unwrap();
    assert_eq!(setup.status().as_u16(), 201);
    let cookie = setup.headers()["set-cookie"]
        .to_str()
        .unwrap()
        .split(';')
        .next()
        .unwrap()
        .to_string();
    let payload: Value = setup.json().await.unwrap();
    let csrf = payload["payload"]["csrfToken"]
        .as_str()
        .unwrap()
        .to_string();
    let create = |name: &str| {
        app.client
            .post(url("/commerces"))
            .header("cookie", &cookie)
            .header("x-csrf-token", &csrf)
            .json(&json!({"code": rut(78_000_111), "name": name}))
            .send()
    };
    let refused = create("Tienda\u{0}\u{202E}").await.unwrap();
    assert_eq!(refused.status().as_u16(), 400);
    let body: Value = refused.json().await.unwrap();
    assert_eq!(body["name"], "VALIDATION_ERROR");
    assert_eq!(body["errors"][0]["field"], "name");
    assert_eq!(body["errors"][0]["code"], "INVALID_CHARACTERS");
    let created = create("Tienda Ñuñoa").await.unwrap();
    assert_eq!(created.status().as_u16(), 201);
}
