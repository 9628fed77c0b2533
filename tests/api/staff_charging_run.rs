//! One charging run for staff: the installments it charged with their outcomes, amounts,
//! mandates and counts; a UF installment with the pesos charged and the UF value used.

use serde_json::{Value, json};

use crate::helpers::*;
use crate::link::{CARD_DECLINED, linked};
use crate::staff_ui_api::{Desk, owner};

const APPROVE: &str = "4111111111111111";

async fn activate(app: &TestApp, internal_id: &str, number: &str) {
    app.post(
        &format!("/sandbox/mandates/{internal_id}/activate"),
        &json!({"paymentMethodId": 3, "card": {"number": number, "expiry": "12/35", "cvv": "123"}}),
    )
    .await
    .expect(200, "SANDBOX_ACTIVATE_OK");
}

async fn latest_run(desk: &Desk<'_>) -> Value {
    let overview = desk.get("/charging").await;
    overview.expect(200, "CHARGING_OK");
    overview.body["payload"]["runs"][0].clone()
}

async fn run_page(desk: &Desk<'_>, id: i64, query: &str) -> Value {
    let reply = desk.get(&format!("/charging/runs/{id}{query}")).await;
    reply.expect(200, "CHARGING_RUN_DETAIL_OK");
    reply.body["payload"].clone()
}

#[tokio::test(flavor = "multi_thread")]
async fn a_run_lists_the_installments_it_charged_with_their_outcomes() {
    let l = linked(|app| dynamic_body(app, "cust-001", "DYN-1", &[("c1", 15000, 0)])).await;
    activate(&l.app, &l.internal_id, CARD_DECLINED).await;
    let ok = l
        .app
        .create_mandate(&dynamic_body(
            &l.app,
            "cust-001",
            "DYN-OK",
            &[("p1", 9000, 0)],
        ))
        .await;
    let ok_id = ok["mandate"]["internalId"].as_str().unwrap().to_string();
    activate(&l.app, &ok_id, APPROVE).await;
    let admin = owner(&l.app).await;
    let today = l.app.today();
    l.app.run_charging(today).await;

    let run = latest_run(&admin).await;
    let id = run["runId"].as_i64().expect("runId");
    assert_eq!(run["attempted"], 2);
    let page = run_page(&admin, id, "").await;
    assert_eq!(page["run"]["runId"], id);
    assert_eq!(page["run"]["businessDate"], today.to_string());
    assert_eq!(
        page["outcomes"],
        json!({"paid": 1, "rejected": 1, "inProcess": 0, "inValidation": 0})
    );
    let attempts = page["attempts"].as_array().unwrap();
    assert_eq!(attempts.len(), 2);
    let rejected = attempts
        .iter()
        .find(|a| a["outcome"] == "REJECTED")
        .unwrap();
    assert_eq!(rejected["mandateInternalId"], l.internal_id.as_str());
    assert_eq!(rejected["mandateId"], "DYN-1");
    assert_eq!(rejected["installmentId"], "c1");
    assert_eq!(rejected["rejectionCode"], "INSUFFICIENT_FUNDS");
    assert_eq!(rejected["amount"], 15000);
    assert_eq!(rejected["currencyId"], "CLP");
    assert_eq!(rejected["installmentState"]["name"], "REJECTED");
    assert_eq!(rejected["nextRetryDate"], l.app.date_in(1));
    assert_eq!(rejected["customerName"], "Ana Pérez");
    let paid = attempts.iter().find(|a| a["outcome"] == "PAID").unwrap();
    assert_eq!(paid["mandateInternalId"], ok_id.as_str());
    assert_eq!(paid["amount"], 9000);
    assert!(paid["authorizationCode"].is_string());
    assert!(paid["ufValue"].is_null());

    // Filtered by outcome, and paged.
    let only = run_page(&admin, id, "?state=REJECTED").await;
    assert_eq!(only["attempts"].as_array().unwrap().len(), 1);
    let first = run_page(&admin, id, "?limit=1").await;
    assert_eq!(first["attempts"].as_array().unwrap().len(), 1);
    let cursor = first["nextCursor"].as_str().unwrap();
    let second = run_page(&admin, id, &format!("?limit=1&cursor={cursor}")).await;
    assert_eq!(second["attempts"].as_array().unwrap().len(), 1);
    assert_ne!(
        second["attempts"][0]["attemptId"],
        first["attempts"][0]["attemptId"]
    );
    assert!(second["nextCursor"].is_null());

    let missing = admin.get(&format!("/charging/runs/{}", id + 1000)).await;
    missing.expect(404, "CHARGING_RUN_NOT_FOUND");
    admin
        .get("/charging/runs/abc")
        .await
        .expect(404, "CHARGING_RUN_NOT_FOUND");
    let bad = admin
        .get(&format!("/charging/runs/{id}?state=LOST&cursor=x"))
        .await;
    bad.expect(400, "VALIDATION_ERROR");
    assert_eq!(sorted_fields(&bad), ["query.cursor", "query.state"]);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_uf_installment_of_a_run_shows_the_pesos_charged_and_the_uf_value() {
    let l = linked(|app| {
        json!({"customer": {"userId": "cust-001"},
            "mandate": {"id": "UF-1", "type": "DYNAMIC", "name": "Arriendo", "charges": {"currencyId": "CLF"}},
            "installments": [{"id": "u1", "amount": 1.5, "currencyId": "CLF", "installmentDueDate": app.date_in(0)}]})
    })
    .await;
    activate(&l.app, &l.internal_id, APPROVE).await;
    let admin = owner(&l.app).await;
    let today = l.app.today();

    // Without the day's UF value the run waits: counted, never charged.
    l.app.run_charging(today).await;
    let waiting = latest_run(&admin).await;
    assert_eq!(waiting["waitingUf"], 1);
    let page = run_page(&admin, waiting["runId"].as_i64().unwrap(), "").await;
    assert_eq!(page["run"]["waitingUf"], 1);
    assert!(page["attempts"].as_array().unwrap().is_empty());

    admin
        .post(
            "/uf",
            json!({"csv": format!("date,value\n{today},39123.45\n")}),
        )
        .await
        .expect(200, "UF_IMPORT_OK");
    l.app.run_charging(today).await;
    let run = latest_run(&admin).await;
    let page = run_page(&admin, run["runId"].as_i64().unwrap(), "").await;
    let attempt = &page["attempts"][0];
    assert_eq!(attempt["outcome"], "PAID");
    assert_eq!(attempt["amount"], 58685);
    assert_eq!(attempt["currencyId"], "CLP");
    assert_eq!(attempt["installmentAmount"], 1.5);
    assert_eq!(attempt["installmentCurrencyId"], "CLF");
    assert_eq!(attempt["ufValue"], 39123.45);
}
