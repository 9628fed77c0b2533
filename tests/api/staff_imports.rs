//! Staff imports read the forms Chilean spreadsheets write: UF values as
//! `21-12-2026;39.740,55`, and payout reports whose amounts group thousands with dots
//! (`9.649` is 9649 pesos) and whose dates come day first; a refused file names every bad line
//! and column.

use serde_json::json;

use crate::helpers::*;
use crate::ledger::fixture;
use crate::staff_ui_api::owner;

#[tokio::test(flavor = "multi_thread")]
async fn uf_values_in_the_chilean_form_are_imported_and_bad_lines_named() {
    let app = spawn_app().await;
    let admin = owner(&app).await;
    let imported = admin
        .post(
            "/uf",
            json!({"csv": "fecha;valor\n21-12-2026;39.740,55\n22/12/2026;39.741\n2026-12-23;39.742,1\n"}),
        )
        .await;
    imported.expect(200, "UF_IMPORT_OK");
    assert_eq!(imported.body["payload"]["imported"], 3);
    let listed = admin.get("/uf").await;
    let values = serde_json::to_string(&listed.body["payload"]).unwrap();
    for expected in ["2026-12-21", "39740.55", "2026-12-22", "39741", "39742.1"] {
        assert!(values.contains(expected), "{expected}: {values}");
    }

    let refused = admin
        .post(
            "/uf",
            json!({"csv": "fecha;valor\n32-12-2026;39.740,55\n24-12-2026;cero\n25-12-2026\n"}),
        )
        .await;
    refused.expect(400, "VALIDATION_ERROR");
    assert_eq!(
        refused.error_fields(),
        ["csv.line[2].date", "csv.line[3].value", "csv.line[4]"]
    );
    assert_eq!(
        error_codes(&refused),
        ["INVALID_DATE", "INVALID_AMOUNT", "INVALID_FORMAT"]
    );
    // Nothing of a refused file is kept.
    let listed = admin.get("/uf").await;
    assert!(
        !serde_json::to_string(&listed.body["payload"])
            .unwrap()
            .contains("2026-12-24")
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_payout_report_with_thousands_dots_and_day_first_dates_reconciles() {
    let (app, _) = fixture(&[("c1", 10000, 0)]).await;
    app.run_charging(app.today()).await;
    let today = app.today();
    let report = app
        .get(&format!("/sandbox/payout-report?date={today}"))
        .await
        .body
        .as_str()
        .unwrap()
        .to_string();
    let line = report.lines().nth(1).unwrap();
    let [_, reference, amount] = line.split(',').collect::<Vec<_>>()[..] else {
        panic!("{line}");
    };
    // The net of 10000 by credit card, 9649 pesos, as a Chilean spreadsheet writes it.
    assert_eq!(amount, "9649");
    let chilean = format!(
        "date;reference;amount\n{};{reference};9.649\n",
        today.format("%d-%m-%Y")
    );
    let admin = owner(&app).await;
    let imported = admin
        .post(
            "/ledger-reconciliations",
            json!({"commerce": COMMERCE, "csv": chilean}),
        )
        .await;
    imported.expect(201, "RECONCILIATION_OK");
    let counts = &imported.body["payload"]["counts"];
    assert_eq!(counts["matched"], 1, "{}", imported.body);
}
