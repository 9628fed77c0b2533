//! The Notifications list filtered by a mandate as staff know it: our `man_...` or the
//! merchant's own mandate id.

use serde_json::Value;

use crate::ledger::fixture;
use crate::staff_ui_api::{Desk, owner};

async fn listed(desk: &Desk<'_>, query: &str) -> Vec<Value> {
    let page = desk.get(&format!("/notifications?{query}")).await;
    page.expect(200, "EVENTS_OK");
    page.body["payload"]["items"].as_array().unwrap().clone()
}

#[tokio::test(flavor = "multi_thread")]
async fn notifications_are_found_by_either_id_of_their_mandate() {
    let (app, internal) = fixture(&[("c1", 10000, 0)]).await;
    app.run_charging(app.today()).await;
    let admin = owner(&app).await;

    let by_ours = listed(&admin, &format!("mandate={internal}")).await;
    assert!(by_ours.len() >= 2, "activation and payment: {by_ours:?}");
    let by_merchants = listed(&admin, "mandate=M-1").await;
    let ids = |items: &[Value]| -> Vec<String> {
        items
            .iter()
            .map(|e| e["eventId"].as_str().unwrap().to_string())
            .collect()
    };
    assert_eq!(ids(&by_merchants), ids(&by_ours));
    assert!(by_merchants.iter().all(|e| e["mandateId"] == "M-1"));
    assert_eq!(
        ids(&listed(&admin, "mandate=%20M-1%20").await),
        ids(&by_ours),
        "spaces around a pasted id do not matter"
    );
    assert!(listed(&admin, "mandate=M-2").await.is_empty());
    // The exact filter by our id is kept.
    assert_eq!(
        ids(&listed(&admin, &format!("mandateInternalId={internal}")).await),
        ids(&by_ours)
    );
    assert!(listed(&admin, "mandateInternalId=M-1").await.is_empty());
}
