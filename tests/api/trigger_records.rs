//! `mandato trigger`'s throwaway records (CONTRACT 14): marked when made, left out of the
//! money views (ledger, settlements, the sandbox payout report, receivables, the staff
//! dashboard's counts and totals), and removed alone by `sandbox reset --triggers-only`.

use serde_json::{Value, json};

use crate::cli::mandato;
use crate::helpers::*;
use crate::sandbox_reset::{populate, rows_of};
use crate::staff_ui_api::owner;

/// What the merchant and staff see of the commerce's money and records.
async fn views(app: &TestApp, desk: &crate::staff_ui_api::Desk<'_>) -> Value {
    let today = app.today();
    let payload = |reply: &Reply| reply.body["payload"].clone();
    let ledger = app.get("/ledger").await;
    let settlements = app
        .get(&format!("/ledger/settlements?from={today}&to={today}"))
        .await;
    let receivables = app.get("/receivables").await;
    let payout = app
        .get(&format!("/sandbox/payout-report?date={today}"))
        .await;
    assert_eq!(payout.status, 200);
    let dashboard = desk.get("/dashboard").await;
    dashboard.expect(200, "DASHBOARD_OK");
    let d = payload(&dashboard);
    json!({
        "ledger": payload(&ledger),
        "settlements": payload(&settlements),
        "receivables": payload(&receivables),
        "payout": payout.body,
        "dashboard": {"mandates": d["mandates"], "installments": d["installments"],
                      "totals": d["totals"], "nextCharges": d["nextCharges"]},
    })
}

/// `mandato trigger` needs somewhere to send its events: a URL nobody answers will do.
fn give_a_webhook_url(app: &TestApp) {
    mandato(
        app.dir.path(),
        &[
            "commerce",
            "set-webhook",
            "--code",
            COMMERCE,
            "--url",
            "https://127.0.0.1:9/hooks",
        ],
        None,
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn trigger_records_stay_out_of_the_money_views_and_go_alone() {
    let mut app = spawn_app().await;
    app.login().await;
    let desk = owner(&app).await;
    populate(&app, "cust-1", 12_000_000, "M-1").await;
    app.run_charging(app.today()).await;
    let before = views(&app, &desk).await;
    let rows_before = rows_of(&app, COMMERCE);
    assert_eq!(
        before["ledger"]["items"].as_array().map(Vec::len),
        Some(1),
        "the integrator's own charge is in the ledger: {before}"
    );

    give_a_webhook_url(&app);
    let dir = app.dir.path();
    for scenario in ["payment.paid", "payment.rejected", "signature.completed"] {
        mandato(dir, &["trigger", scenario, "--commerce", COMMERCE], None);
    }
    let with_triggers = rows_of(&app, COMMERCE);
    assert_eq!(
        with_triggers["mandates"].as_i64().unwrap(),
        rows_before["mandates"].as_i64().unwrap() + 2,
        "{with_triggers}"
    );
    assert_eq!(
        with_triggers["signatureProcesses"].as_i64().unwrap(),
        rows_before["signatureProcesses"].as_i64().unwrap() + 1
    );
    // Paid, rejected and signed, yet nothing of it in any total or report.
    assert_eq!(views(&app, &desk).await, before);

    let reset = mandato(
        dir,
        &[
            "sandbox",
            "reset",
            "--triggers-only",
            "--commerce",
            COMMERCE,
        ],
        None,
    );
    assert_eq!(reset["mandates"], 2, "{reset}");
    assert_eq!(reset["signatureProcesses"], 1, "{reset}");
    assert_eq!(reset["customers"], 3, "{reset}");
    assert_eq!(reset["ledgerEntries"], 1, "{reset}");
    assert_eq!(reset["installments"], 2, "{reset}");
    // The integrator's own records are all still there, and only theirs.
    let after = rows_of(&app, COMMERCE);
    for field in [
        "customers",
        "mandates",
        "installments",
        "chargeAttempts",
        "signatureProcesses",
    ] {
        assert_eq!(
            after[field], rows_before[field],
            "{field}: {after} vs {rows_before}"
        );
    }
    assert_eq!(views(&app, &desk).await, before);
    app.mandate("M-1").await;

    // --keep-customers means nothing without the whole reset: refused together.
    let out = crate::cli::json_output(
        cli_command(dir),
        &["sandbox", "reset", "--triggers-only", "--keep-customers"],
        None,
    );
    assert!(!out.status.success());
    let refusal: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(refusal["error"]["name"], "INVALID_ARGUMENTS");
}

#[tokio::test(flavor = "multi_thread")]
async fn the_api_reset_takes_triggers_only_too() {
    let mut app = spawn_app().await;
    app.login().await;
    populate(&app, "cust-1", 12_000_000, "M-1").await;
    give_a_webhook_url(&app);
    mandato(
        app.dir.path(),
        &["trigger", "activation", "--commerce", COMMERCE],
        None,
    );
    let reply = app
        .post("/sandbox/reset", &json!({"triggersOnly": true}))
        .await;
    reply.expect(200, "SANDBOX_RESET_OK");
    assert_eq!(reply.body["payload"]["mandates"], 1);
    assert_eq!(reply.body["payload"]["customers"], 1);
    assert_eq!(reply.body["payload"]["signatureProcesses"], 0);
    app.mandate("M-1").await;
}
