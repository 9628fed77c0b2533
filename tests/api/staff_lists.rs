//! The staff lists' search, sort and counts, and the dashboard's money, over real HTTP.

use chrono::{Datelike, Duration};
use serde_json::{Value, json};

use crate::helpers::*;
use crate::staff_ui_api::owner;

const APPROVE: &str = "4111111111111111";
const EXPIRED: &str = "4000000000000069";

fn items(reply: &Reply) -> Vec<Value> {
    reply.body["payload"]["items"].as_array().unwrap().clone()
}

fn column(reply: &Reply, pointer: &str) -> Vec<String> {
    items(reply)
        .iter()
        .map(|i| i.pointer(pointer).unwrap().as_str().unwrap().to_string())
        .collect()
}

/// A customer with a name of its own.
async fn customer(app: &TestApp, user_id: &str, rut: &str, first: &str, last: &str) {
    let mut body = customer_body(user_id, rut);
    set(
        &mut body,
        "/customer/personalInformation/firstName",
        json!(first),
    );
    set(
        &mut body,
        "/customer/personalInformation/lastName",
        json!(last),
    );
    app.post("/user", &body).await.expect(201, "USER_CREATE_OK");
}

/// Ana Pérez (cust-1, 12.345.678-5), Luis Soto (cust-2) and José Muñoz (cust-010); GYM-1 and
/// GYM-10 of Ana, DYN-1 of José, created in that order.
async fn people(app: &mut TestApp) {
    app.login().await;
    customer(app, "cust-1", "12.345.678-5", "Ana", "Pérez").await;
    customer(app, "cust-2", &rut(7654321), "Luis", "Soto").await;
    customer(app, "cust-010", &rut(11222333), "José", "Muñoz").await;
    app.create_mandate(&subscription_body(app, "cust-1", "GYM-1", 2))
        .await;
    app.create_mandate(&subscription_body(app, "cust-1", "GYM-10", 2))
        .await;
    app.create_mandate(&dynamic_body(app, "cust-010", "DYN-1", &[("a", 1000, 5)]))
        .await;
}

#[tokio::test(flavor = "multi_thread")]
async fn customers_are_found_without_accents_by_part_and_by_rut_in_any_form() {
    let mut app = spawn_app().await;
    people(&mut app).await;
    let staff = owner(&app).await;
    for (q, expected) in [
        ("munoz", vec!["cust-010"]),
        ("MUÑOZ", vec!["cust-010"]),
        ("jose%20munoz", vec!["cust-010"]),
        ("munoz%20jose", vec!["cust-010"]),
        ("cust-01", vec!["cust-010"]),
        ("12.345.678-5", vec!["cust-1"]),
        ("12345678-5", vec!["cust-1"]),
        ("123456785", vec!["cust-1"]),
        ("12.345", vec!["cust-1"]),
        ("perez", vec!["cust-1"]),
        ("nadie", vec![]),
    ] {
        let found = staff.get(&format!("/customers?q={q}")).await;
        found.expect(200, "CUSTOMERS_OK");
        assert_eq!(column(&found, "/customer/userId"), expected, "q={q}");
        assert_eq!(
            found.body["payload"]["total"],
            json!(expected.len()),
            "q={q}"
        );
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn customers_sort_by_name_and_page_through_that_order() {
    let mut app = spawn_app().await;
    people(&mut app).await;
    let staff = owner(&app).await;
    let names = |reply: &Reply| column(reply, "/customer/personalInformation/lastName");
    let asc = staff.get("/customers?sort=name.asc").await;
    asc.expect(200, "CUSTOMERS_OK");
    assert_eq!(names(&asc), ["Muñoz", "Pérez", "Soto"]);
    assert_eq!(asc.body["payload"]["total"], 3);
    let desc = staff.get("/customers?sort=name.desc").await;
    assert_eq!(names(&desc), ["Soto", "Pérez", "Muñoz"]);
    let newest = staff.get("/customers").await;
    assert_eq!(
        column(&newest, "/customer/userId"),
        ["cust-010", "cust-2", "cust-1"]
    );

    // One row a page, following the cursors, in the sorted order; the total stays whole.
    let mut seen = Vec::new();
    let mut cursor: Option<String> = None;
    loop {
        let path = match &cursor {
            Some(c) => format!("/customers?sort=name.asc&limit=1&cursor={}", encode(c)),
            None => "/customers?sort=name.asc&limit=1".to_string(),
        };
        let page = staff.get(&path).await;
        page.expect(200, "CUSTOMERS_OK");
        assert_eq!(page.body["payload"]["total"], 3);
        seen.extend(names(&page));
        match page.body["payload"]["nextCursor"].as_str() {
            Some(next) => cursor = Some(next.to_string()),
            None => break,
        }
    }
    assert_eq!(seen, ["Muñoz", "Pérez", "Soto"]);

    let refused = staff.get("/customers?sort=rut.asc&limit=0").await;
    refused.expect(400, "VALIDATION_ERROR");
    assert_eq!(sorted_fields(&refused), ["query.limit", "query.sort"]);
    let reply = staff.get("/customers?sort=name").await;
    reply.expect(400, "VALIDATION_ERROR");
    assert_eq!(sorted_fields(&reply), ["query.sort"]);
    // A cursor of the name order is not one of the creation-time order.
    let by_name = staff.get("/customers?sort=name.asc&limit=1").await;
    let cursor = by_name.body["payload"]["nextCursor"].as_str().unwrap();
    let reply = staff
        .get(&format!("/customers?cursor={}", encode(cursor)))
        .await;
    reply.expect(400, "VALIDATION_ERROR");
    assert_eq!(sorted_fields(&reply), ["query.cursor"]);
}

#[tokio::test(flavor = "multi_thread")]
async fn mandates_are_found_by_part_of_their_mandate_id_or_their_customer_and_sorted() {
    let mut app = spawn_app().await;
    people(&mut app).await;
    let staff = owner(&app).await;
    let mandate_ids = |reply: &Reply| column(reply, "/id");
    for (q, expected) in [
        ("gym-1", vec!["GYM-10", "GYM-1"]),
        ("GYM-10", vec!["GYM-10"]),
        ("munoz", vec!["DYN-1"]),
        ("12.345.678-5", vec!["GYM-10", "GYM-1"]),
        ("cust-01", vec!["DYN-1"]),
        ("DY", vec!["DYN-1"]),
        ("nada", vec![]),
    ] {
        let found = staff.get(&format!("/mandates?q={q}")).await;
        found.expect(200, "MANDATES_OK");
        assert_eq!(mandate_ids(&found), expected, "q={q}");
        assert_eq!(
            found.body["payload"]["total"],
            json!(expected.len()),
            "q={q}"
        );
    }
    // `id` names one mandate exactly, by the merchant's id or ours.
    let exact = staff.get("/mandates?id=GYM-1").await;
    assert_eq!(mandate_ids(&exact), ["GYM-1"]);
    let internal = items(&exact)[0]["internalId"].as_str().unwrap().to_string();
    let ours = staff.get(&format!("/mandates?q={internal}")).await;
    assert_eq!(mandate_ids(&ours), ["GYM-1"]);

    let asc = staff.get("/mandates?sort=mandateId.asc").await;
    asc.expect(200, "MANDATES_OK");
    assert_eq!(mandate_ids(&asc), ["DYN-1", "GYM-1", "GYM-10"]);
    let desc = staff.get("/mandates?sort=mandateId.desc&limit=2").await;
    assert_eq!(mandate_ids(&desc), ["GYM-10", "GYM-1"]);
    assert_eq!(desc.body["payload"]["total"], 3);
    let cursor = desc.body["payload"]["nextCursor"].as_str().unwrap();
    let rest = staff
        .get(&format!(
            "/mandates?sort=mandateId.desc&limit=2&cursor={}",
            encode(cursor)
        ))
        .await;
    assert_eq!(mandate_ids(&rest), ["DYN-1"]);
    assert!(rest.body["payload"]["nextCursor"].is_null());
    let oldest = staff.get("/mandates?sort=createdAt.asc").await;
    assert_eq!(mandate_ids(&oldest), ["GYM-1", "GYM-10", "DYN-1"]);

    let typed = staff.get("/mandates?type=SUBSCRIPTION&q=gym").await;
    assert_eq!(typed.body["payload"]["total"], 2);
    let refused = staff.get("/mandates?sort=name.asc").await;
    refused.expect(400, "VALIDATION_ERROR");
    assert_eq!(sorted_fields(&refused), ["query.sort"]);
}

async fn activate(app: &TestApp, internal_id: &str, card: &str) {
    app.post(
        &format!("/sandbox/mandates/{internal_id}/activate"),
        &json!({"paymentMethodId": 3, "card": {"number": card, "expiry": "12/30", "cvv": "123"}}),
    )
    .await
    .expect(200, "SANDBOX_ACTIVATE_OK");
}

async fn one_installment(app: &TestApp, id: &str, amount: i64, days: i64, card: &str) {
    let payload = app
        .create_mandate(&dynamic_body(app, "cust-1", id, &[("c1", amount, days)]))
        .await;
    activate(
        app,
        payload["mandate"]["internalId"].as_str().unwrap(),
        card,
    )
    .await;
}

#[tokio::test(flavor = "multi_thread")]
async fn the_dashboard_totals_the_months_money_per_commerce_and_currency() {
    let mut app = spawn_app().await;
    // Two days pass below: start where they stay in one month.
    if app.today().day() > 26 {
        let next_month = (app.today() + Duration::days(10)).with_day(2).unwrap();
        app.advance_clock(Duration::days((next_month - app.today()).num_days()));
    }
    app.login().await;
    app.create_customer("cust-1", "12.345.678-5").await;
    one_installment(&app, "PAID-1", 5000, 0, APPROVE).await;
    one_installment(&app, "REJ-1", 7000, 0, EXPIRED).await;
    one_installment(&app, "LATE-1", 3000, 1, APPROVE).await;
    let run = app.run_charging(app.today()).await;
    assert_eq!((run.counts.paid, run.counts.rejected), (1, 1));
    // LATE-1 falls due tomorrow and no run charges it: two days on, it is overdue, and so is
    // the rejected installment.
    app.advance_clock(Duration::days(2));

    let staff = owner(&app).await;
    let dashboard = staff.get(&format!("/dashboard?commerce={COMMERCE}")).await;
    dashboard.expect(200, "DASHBOARD_OK");
    let payload = &dashboard.body["payload"];
    let first = app.today().with_day(1).unwrap().to_string();
    assert_eq!(payload["monthStart"], first);
    assert_eq!(
        payload["totals"],
        json!([{"currencyId": "CLP", "collectedThisMonth": "5000", "overdue": "10000",
                "rejectedThisMonth": "7000"}])
    );
    let everyone = staff.get("/dashboard").await;
    assert_eq!(everyone.body["payload"]["totals"], payload["totals"]);
    let other = staff
        .get(&format!("/dashboard?commerce={OTHER_COMMERCE}"))
        .await;
    other.expect(200, "DASHBOARD_OK");
    assert_eq!(other.body["payload"]["totals"], json!([]));
}
