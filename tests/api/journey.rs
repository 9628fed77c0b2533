//! The whole life of a mandate, end to end over HTTP as its three parties see it: the merchant
//! creates it, the customer activates it on the Magic Link page (a form POST as a browser sends
//! it), the sandbox clock moves past every due date, the engine charges, and a real HTTPS
//! receiver gets every webhook, each verified by code independent of the engine's.

use std::time::Duration;

use reqwest::StatusCode;
use serde_json::{Value, json};

use crate::link::{get_page, post_form, terms_sha};
use crate::receiver::{body_signature_valid, standard_signature_valid};
use crate::webhooks::{fast_delivery, mandate_to, setup};

#[tokio::test(flavor = "multi_thread")]
async fn created_activated_on_its_page_charged_by_the_clock_and_every_webhook_verified() {
    let s = setup(fast_delivery()).await;
    // Installments a, b, c due in 5, 10 and 15 days.
    let created = mandate_to(&s, "LIFE-1").await;
    let link = created["mandate"]["magicLink"]
        .as_str()
        .unwrap()
        .to_string();
    let internal = created["mandate"]["internalId"]
        .as_str()
        .unwrap()
        .to_string();

    // The customer opens the page and enrols a card.
    let page = get_page(&link).await;
    assert_eq!(page.status, StatusCode::OK);
    let enrolled = post_form(
        &link,
        &[
            ("method", "3"),
            ("number", "4242424242424242"),
            ("expiry", "12/35"),
            ("cvv", "123"),
            ("accept", "1"),
            ("termsSha256", &terms_sha(&page.html, 3)),
        ],
    )
    .await;
    assert_eq!(enrolled.status, StatusCode::SEE_OTHER, "{}", enrolled.html);

    // Fifteen days pass in the sandbox: every crossed date is run, in order.
    let moved = s
        .app
        .post("/sandbox/clock", &json!({"advanceDays": 15}))
        .await;
    moved.expect(200, "SANDBOX_CLOCK_OK");
    let runs = moved.body["payload"]["runs"].as_array().unwrap();
    assert_eq!(runs.len(), 15);
    let paid_runs: Vec<i64> = runs.iter().map(|r| r["paid"].as_i64().unwrap()).collect();
    assert_eq!(paid_runs.iter().sum::<i64>(), 3);
    assert_eq!(
        (paid_runs[4], paid_runs[9], paid_runs[14]),
        (1, 1, 1),
        "each on its due date"
    );

    // Activation, then IN_PROCESS and PAID for each installment: seven webhooks.
    let received = s.receiver.wait_for(7, Duration::from_secs(20)).await;
    for r in &received {
        assert!(standard_signature_valid(r, &s.secret), "webhook-signature");
        assert!(body_signature_valid(r, &s.secret), "body signature");
    }
    let mut bodies: Vec<Value> = received.iter().map(|r| r.json()).collect();
    bodies.sort_by_key(|b| b["sequence"].as_i64().unwrap());
    bodies.dedup_by_key(|b| b["eventId"].clone());
    let seen: Vec<(String, String, String)> = bodies
        .iter()
        .map(|b| {
            (
                b["event"].as_str().unwrap().to_string(),
                b["installment"]["id"].as_str().unwrap_or("").to_string(),
                b["installment"]["state"]["name"]
                    .as_str()
                    .or(b["product"]["state"]["name"].as_str())
                    .unwrap_or("")
                    .to_string(),
            )
        })
        .collect();
    let step = |e: &str, i: &str, st: &str| (e.to_string(), i.to_string(), st.to_string());
    assert_eq!(
        seen,
        [
            step("activation", "", "ACTIVE"),
            step("payment", "a", "IN_PROCESS"),
            step("payment", "a", "PAID"),
            step("payment", "b", "IN_PROCESS"),
            step("payment", "b", "PAID"),
            step("payment", "c", "IN_PROCESS"),
            step("payment", "c", "PAID"),
        ]
    );
    assert!(
        bodies
            .iter()
            .all(|b| b["product"]["internalId"] == internal.as_str())
    );
    let paid = bodies.last().unwrap();
    assert!(
        paid["installment"]["authorizationCode"]
            .as_str()
            .unwrap()
            .starts_with("AUT-")
    );
    assert_eq!(paid["installment"]["attempt"], 1);
    assert_eq!(paid["installment"]["paymentMethodId"], 3);
    let activation = &bodies[0];
    assert_eq!(activation["paymentMethod"]["id"], 3);
    assert!(
        activation["paymentMethod"]["instrument"]
            .as_str()
            .unwrap()
            .ends_with("4242")
    );

    // The merchant's lookup agrees with the webhooks.
    let lookup = s.app.get(&format!("/mandate/internalId/{internal}")).await;
    lookup.expect(200, "MANDATE_DETAIL_OK");
    let states: Vec<&str> = lookup.body["payload"]["installments"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["state"]["name"].as_str().unwrap())
        .collect();
    assert_eq!(states, ["PAID", "PAID", "PAID"]);
}
