//! `GET /receivables` (CONTRACT 5, 11): the filters, the limits, the cursor, and paging that stays
//! exact while installments are being added.

use std::collections::HashSet;

use chrono::Duration;
use serde_json::{Value, json};

use crate::helpers::*;

const CHANGE: &str = "/installments/status/change";

/// Two customers: cust-a with DYNAMIC D-A (a1 due in 10 days, a2 in 20, a3 in 30) and
/// cust-b with SUBSCRIPTION S-B (three monthly installments from day 7).
/// a1 is paid and a2 annulled 10 seconds after creation.
struct Fixture {
    app: TestApp,
    created_at: String,
    changed_at: String,
}

async fn fixture() -> Fixture {
    let mut app = spawn_app().await;
    app.login().await;
    app.create_customer("cust-a", "12.345.678-5").await;
    app.create_customer("cust-b", &rut(11_111_111)).await;
    app.create_mandate(&dynamic_body(
        &app,
        "cust-a",
        "D-A",
        &[("a1", 1000, 10), ("a2", 2000, 20), ("a3", 3000, 30)],
    ))
    .await;
    app.create_mandate(&subscription_body(&app, "cust-b", "S-B", 3))
        .await;
    let created_at = app.mandate("D-A").await["installments"][0]["dateTime"]
        .as_str()
        .unwrap()
        .to_string();
    app.advance_clock(Duration::seconds(10));
    app.put(CHANGE, &payment_body(&app, "D-A", &["a1"], 1000))
        .await
        .expect(200, "INSTALLMENTS_STATUS_CHANGE_OK");
    app.put(CHANGE, &annulment_body("D-A", &["a2"]))
        .await
        .expect(200, "INSTALLMENTS_STATUS_CHANGE_OK");
    let changed_at = app.mandate("D-A").await["installments"][0]["dateTime"]
        .as_str()
        .unwrap()
        .to_string();
    assert_ne!(created_at, changed_at);
    Fixture {
        app,
        created_at,
        changed_at,
    }
}

/// `mandate/installment` of every item of a page.
fn keys(reply: &Reply) -> Vec<String> {
    reply.body["payload"]["items"]
        .as_array()
        .unwrap_or_else(|| panic!("no items: {}", reply.body))
        .iter()
        .map(|i| {
            format!(
                "{}/{}",
                i["product"]["id"].as_str().unwrap(),
                i["installment"]["id"].as_str().unwrap()
            )
        })
        .collect()
}

const ALL: [&str; 6] = ["D-A/a1", "D-A/a2", "D-A/a3", "S-B/1", "S-B/2", "S-B/3"];

#[tokio::test(flavor = "multi_thread")]
async fn filters_select_the_matching_installments() {
    let Fixture {
        app,
        created_at,
        changed_at,
    } = fixture().await;
    let d_a = app.mandate("D-A").await;
    let s_b = app.mandate("S-B").await;
    let d_a_internal = d_a["mandate"]["internalId"].as_str().unwrap();
    let user_b = s_b["customer"]["internalUserId"].as_str().unwrap();
    let s_b_second = s_b["installments"][1]["installmentDueDate"]
        .as_str()
        .unwrap();
    let cases: Vec<(String, Vec<&str>)> = vec![
        (String::new(), ALL.to_vec()),
        ("state=2".into(), vec!["D-A/a1"]),
        ("state=4".into(), vec!["D-A/a2"]),
        ("state=2,4".into(), vec!["D-A/a1", "D-A/a2"]),
        ("state=1".into(), vec!["D-A/a3", "S-B/1", "S-B/2", "S-B/3"]),
        ("state=-99,9,6,5".into(), vec![]),
        (
            "mandateExternalId=D-A".into(),
            vec!["D-A/a1", "D-A/a2", "D-A/a3"],
        ),
        ("mandateExternalId=NOPE".into(), vec![]),
        (
            format!("mandateInternalId={d_a_internal}"),
            vec!["D-A/a1", "D-A/a2", "D-A/a3"],
        ),
        ("mandateInternalId=D-A".into(), vec![]),
        ("userId=cust-b".into(), vec!["S-B/1", "S-B/2", "S-B/3"]),
        (
            format!("internalUserId={user_b}"),
            vec!["S-B/1", "S-B/2", "S-B/3"],
        ),
        ("userId=nobody".into(), vec![]),
        // Due dates: both ends inclusive.
        (
            format!("dueFrom={}&dueTo={}", app.date_in(20), app.date_in(30)),
            vec!["D-A/a2", "D-A/a3"],
        ),
        (
            format!("dueFrom={}", app.date_in(21)),
            vec!["D-A/a3", "S-B/2", "S-B/3"],
        ),
        (
            format!("dueTo={}", app.date_in(10)),
            vec!["D-A/a1", "S-B/1"],
        ),
        (
            format!("dueFrom={0}&dueTo={0}", app.date_in(7)),
            vec!["S-B/1"],
        ),
        (format!("dueFrom={0}&dueTo={0}", s_b_second), vec!["S-B/2"]),
        (
            format!("dueFrom={}&dueTo={}", app.date_in(11), app.date_in(19)),
            vec![],
        ),
        // Updates: from inclusive, to exclusive, on the installment's dateTime.
        (
            format!("updatedFrom={}", encode(&changed_at)),
            vec!["D-A/a1", "D-A/a2"],
        ),
        (
            format!("updatedTo={}", encode(&changed_at)),
            vec!["D-A/a3", "S-B/1", "S-B/2", "S-B/3"],
        ),
        (
            format!(
                "updatedFrom={}&updatedTo={}",
                encode(&created_at),
                encode(&changed_at)
            ),
            vec!["D-A/a3", "S-B/1", "S-B/2", "S-B/3"],
        ),
        (format!("updatedTo={}", encode(&created_at)), vec![]),
        // Any offset, as RFC 3339 allows.
        (
            format!(
                "updatedFrom={}",
                encode(
                    &chrono::DateTime::parse_from_rfc3339(&changed_at)
                        .unwrap()
                        .with_timezone(&chrono::FixedOffset::west_opt(3 * 3600).unwrap())
                        .to_rfc3339()
                )
            ),
            vec!["D-A/a1", "D-A/a2"],
        ),
        // Combined.
        ("userId=cust-a&state=1".into(), vec!["D-A/a3"]),
        (
            format!("mandateExternalId=S-B&dueTo={}", app.date_in(7)),
            vec!["S-B/1"],
        ),
        ("mandateExternalId=D-A&userId=cust-b".into(), vec![]),
        (
            format!("state=1,2&updatedFrom={}", encode(&changed_at)),
            vec!["D-A/a1"],
        ),
    ];
    for (query, expected) in cases {
        let reply = app.get(&format!("/receivables?{query}")).await;
        reply.expect(200, "RECEIVABLES_OK");
        assert_eq!(keys(&reply), expected, "?{query}");
        assert_eq!(reply.body["payload"]["nextCursor"], Value::Null, "?{query}");
    }
    // An item carries the installment, its mandate and its customer.
    let reply = app.get("/receivables?mandateExternalId=D-A&state=2").await;
    let item = &reply.body["payload"]["items"][0];
    assert_eq!(item["installment"], d_a["installments"][0]);
    assert_eq!(
        item["product"],
        json!({"internalId": d_a_internal, "id": "D-A", "type": "DYNAMIC"})
    );
    assert_eq!(
        item["customer"],
        json!({"internalUserId": d_a["customer"]["internalUserId"], "userId": "cust-a"})
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn bad_filters_limits_and_cursors_are_named() {
    let Fixture { app, .. } = fixture().await;
    let other_version = {
        use base64::Engine;
        base64::engine::general_purpose::URL_SAFE_NO_PAD.encode("v2:1")
    };
    let cases: Vec<(String, Vec<&str>)> = vec![
        ("limit=0".into(), vec!["query.limit"]),
        ("limit=1001".into(), vec!["query.limit"]),
        ("limit=-1".into(), vec!["query.limit"]),
        ("limit=ten".into(), vec!["query.limit"]),
        ("limit=2.5".into(), vec!["query.limit"]),
        ("cursor=not-a-cursor".into(), vec!["query.cursor"]),
        ("cursor=!!".into(), vec!["query.cursor"]),
        (format!("cursor={other_version}"), vec!["query.cursor"]),
        ("state=3".into(), vec!["query.state"]),
        ("state=PAID".into(), vec!["query.state"]),
        ("state=1,".into(), vec!["query.state"]),
        ("dueFrom=2026-13-01".into(), vec!["query.dueFrom"]),
        ("dueTo=tomorrow".into(), vec!["query.dueTo"]),
        ("updatedFrom=2026-01-01".into(), vec!["query.updatedFrom"]),
        (
            "updatedTo=2026-01-01T00:00:00".into(),
            vec!["query.updatedTo"],
        ),
        (
            "limit=0&cursor=x&dueFrom=x".into(),
            vec!["query.cursor", "query.dueFrom", "query.limit"],
        ),
    ];
    for (query, fields) in cases {
        let reply = app.get(&format!("/receivables?{query}")).await;
        reply.expect(400, "VALIDATION_ERROR");
        assert_eq!(sorted_fields(&reply), fields, "?{query}");
    }
    for (limit, count) in [("1", 1), ("5", 5), ("6", 6), ("1000", 6)] {
        let reply = app.get(&format!("/receivables?limit={limit}")).await;
        reply.expect(200, "RECEIVABLES_OK");
        assert_eq!(keys(&reply).len(), count, "limit {limit}");
        assert_eq!(
            reply.body["payload"]["nextCursor"].is_string(),
            count < 6,
            "limit {limit}"
        );
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn the_default_limit_is_one_hundred() {
    let mut app = spawn_app().await;
    app.login().await;
    app.create_customer("cust-a", "12.345.678-5").await;
    let names: Vec<String> = (0..105).map(|n| format!("i{n:03}")).collect();
    let items: Vec<(&str, i64, i64)> = names.iter().map(|n| (n.as_str(), 1000, 5)).collect();
    app.create_mandate(&dynamic_body(&app, "cust-a", "D-A", &items))
        .await;
    let reply = app.get("/receivables").await;
    reply.expect(200, "RECEIVABLES_OK");
    assert_eq!(keys(&reply).len(), 100);
    let cursor = reply.body["payload"]["nextCursor"]
        .as_str()
        .unwrap()
        .to_string();
    let reply = app.get(&format!("/receivables?cursor={cursor}")).await;
    reply.expect(200, "RECEIVABLES_OK");
    assert_eq!(keys(&reply).len(), 5);
    assert_eq!(reply.body["payload"]["nextCursor"], Value::Null);
}

/// Pages through `query` with `limit=3`, calling `between` with each page number after it.
async fn page_through(
    app: &TestApp,
    query: &str,
    mut between: impl AsyncFnMut(&TestApp, usize),
) -> Vec<Vec<String>> {
    let mut pages = Vec::new();
    let mut cursor: Option<String> = None;
    loop {
        let path = match &cursor {
            None => format!("/receivables?limit=3{query}"),
            Some(c) => format!("/receivables?limit=3{query}&cursor={c}"),
        };
        let reply = app.get(&path).await;
        reply.expect(200, "RECEIVABLES_OK");
        let page = keys(&reply);
        assert!(page.len() <= 3, "{page:?}");
        pages.push(page);
        between(app, pages.len()).await;
        match reply.body["payload"]["nextCursor"].as_str() {
            Some(c) => cursor = Some(c.to_string()),
            None => break,
        }
        assert!(pages.len() < 50, "paging does not end");
    }
    pages
}

#[tokio::test(flavor = "multi_thread")]
async fn paging_returns_every_item_once_while_installments_are_added() {
    let mut app = spawn_app().await;
    app.login().await;
    app.create_customer("cust-a", "12.345.678-5").await;
    app.create_customer("cust-b", &rut(11_111_111)).await;
    app.create_mandate(&dynamic_body(
        &app,
        "cust-a",
        "D-A",
        &[
            ("a1", 1000, 40),
            ("a2", 1000, 30),
            ("a3", 1000, 20),
            ("a4", 1000, 10),
        ],
    ))
    .await;
    app.create_mandate(&dynamic_body(
        &app,
        "cust-b",
        "D-B",
        &[("b1", 1000, 50), ("b2", 1000, 5), ("b3", 1000, 25)],
    ))
    .await;

    // New installments, due before every existing one, are added after the first and the
    // second page.
    let pages = page_through(&app, "", async |app, page| {
        let (user, mandate, items): (&str, &str, &[(&str, i64, i64)]) = match page {
            1 => ("cust-a", "D-A", &[("n1", 500, 1), ("n2", 500, 2)]),
            2 => ("cust-b", "D-B", &[("n3", 500, 0)]),
            _ => return,
        };
        app.post(
            "/installments",
            &installments_body(app, user, mandate, items),
        )
        .await
        .expect(201, "INSTALLMENTS_CREATE_OK");
    })
    .await;
    let all: Vec<String> = pages.concat();
    let unique: HashSet<&String> = all.iter().collect();
    assert_eq!(unique.len(), all.len(), "an item was repeated: {pages:?}");
    let mut sorted = all.clone();
    sorted.sort();
    assert_eq!(
        sorted,
        [
            "D-A/a1", "D-A/a2", "D-A/a3", "D-A/a4", "D-A/n1", "D-A/n2", "D-B/b1", "D-B/b2",
            "D-B/b3", "D-B/n3"
        ],
        "an item was skipped: {pages:?}"
    );
    assert_eq!(pages.len(), 4, "{pages:?}");
    assert!(pages[..3].iter().all(|p| p.len() == 3), "{pages:?}");
    // Each new installment comes after the page that was served before it was added.
    let position = |key: &str| all.iter().position(|k| k == key).unwrap();
    assert!(
        position("D-A/n1") >= 3 && position("D-A/n2") >= 3,
        "{pages:?}"
    );
    assert!(position("D-B/n3") >= 6, "{pages:?}");

    // The same with a filter: the cursor stays valid across the pages of a filtered query.
    let pages = page_through(&app, "&userId=cust-a", async |app, page| {
        if page == 1 {
            app.post(
                "/installments",
                &installments_body(app, "cust-a", "D-A", &[("n4", 500, 3)]),
            )
            .await
            .expect(201, "INSTALLMENTS_CREATE_OK");
        }
    })
    .await;
    let all: Vec<String> = pages.concat();
    let mut sorted = all.clone();
    sorted.sort();
    assert_eq!(
        sorted,
        [
            "D-A/a1", "D-A/a2", "D-A/a3", "D-A/a4", "D-A/n1", "D-A/n2", "D-A/n4"
        ],
        "{pages:?}"
    );
    assert_eq!(all.last().unwrap(), "D-A/n4");
}
