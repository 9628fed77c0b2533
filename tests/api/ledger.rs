//! The reconciliation ledger over real HTTP: an entry for every money movement (card charge in
//! the charging run, reversal, manual payment, annulment) committed with its state change,
//! keyset pages, daily settlements, the sandbox payout report reconciled back (and planted
//! mismatches reported on their side), the CLI export, and one commerce never seeing another's.

use serde_json::{Value, json};

use crate::helpers::*;

const APPROVE: &str = "4111111111111111";
const CHANGE: &str = "/installments/status/change";

/// A logged-in app with cust-1 and a DYNAMIC mandate M-1 with these installments
/// (`[id, amount, days from today]`), activated with an approving credit card.
pub(crate) async fn fixture(installments: &[(&str, i64, i64)]) -> (TestApp, String) {
    let mut app = spawn_app().await;
    app.login().await;
    app.create_customer("cust-1", "12.345.678-5").await;
    let payload = app
        .create_mandate(&dynamic_body(&app, "cust-1", "M-1", installments))
        .await;
    let mandate = payload["mandate"]["internalId"]
        .as_str()
        .unwrap()
        .to_string();
    app.post(
        &format!("/sandbox/mandates/{mandate}/activate"),
        &json!({"paymentMethodId": 3, "card": {"number": APPROVE, "expiry": "12/30", "cvv": "123"}}),
    )
    .await
    .expect(200, "SANDBOX_ACTIVATE_OK");
    (app, mandate)
}

async fn entries(app: &TestApp, query: &str) -> Vec<Value> {
    let reply = app.get(&format!("/ledger{query}")).await;
    reply.expect(200, "LEDGER_OK");
    reply.body["payload"]["items"].as_array().unwrap().clone()
}

/// `kind installment amount fee net method reference?` of each entry, for comparisons.
fn summary(entries: &[Value]) -> Vec<String> {
    entries
        .iter()
        .map(|e| {
            format!(
                "{} {} {} {} {} {} {}",
                e["kind"].as_str().unwrap(),
                e["installmentId"].as_str().unwrap(),
                e["amount"],
                e["fee"],
                e["net"],
                e["paymentMethod"],
                if e["acquirerReference"].is_string() {
                    "ref"
                } else {
                    "-"
                }
            )
        })
        .collect()
}

async fn internal_id(app: &TestApp, external: &str) -> String {
    let mandate = app.mandate("M-1").await;
    mandate["installments"]
        .as_array()
        .unwrap()
        .iter()
        .find(|i| i["id"] == external)
        .unwrap()["internalId"]
        .as_str()
        .unwrap()
        .to_string()
}

fn count(app: &TestApp, sql: &str) -> i64 {
    app.running
        .state
        .store()
        .read(|c| Ok(c.query_row(sql, &[], |r| r.get(0))?))
        .unwrap()
}

#[tokio::test(flavor = "multi_thread")]
async fn every_money_movement_has_its_entry_and_settlements_sum_them() {
    let (mut app, _) = fixture(&[
        ("c1", 10000, 0),
        ("c2", 5000, 0),
        ("c3", 3000, 30),
        ("c4", 2000, 30),
    ])
    .await;
    app.run_charging(app.today()).await;
    let c2 = internal_id(&app, "c2").await;
    app.post(
        &format!("/sandbox/installments/{c2}/outcome"),
        &json!({"result": "REVERSED"}),
    )
    .await
    .expect(200, "SANDBOX_OUTCOME_OK");
    app.put(CHANGE, &payment_body(&app, "M-1", &["c3"], 3000))
        .await
        .expect(200, "INSTALLMENTS_STATUS_CHANGE_OK");
    app.put(CHANGE, &annulment_body("M-1", &["c4"]))
        .await
        .expect(200, "INSTALLMENTS_STATUS_CHANGE_OK");

    let all = entries(&app, "").await;
    // Credit card fee: 2.95% commission plus 19% IVA on it, each rounded to whole pesos.
    assert_eq!(
        summary(&all),
        [
            "CHARGE c1 10000 351 9649 \"CREDIT_CARD\" ref",
            "CHARGE c2 5000 176 4824 \"CREDIT_CARD\" ref",
            "REVERSAL c2 -5000 null null \"CREDIT_CARD\" ref",
            "MANUAL_PAYMENT c3 3000 null null \"MANUAL\" ref",
            "ANNULMENT c4 2000 null null null -",
        ]
    );
    let mandate = app.mandate("M-1").await;
    assert_eq!(
        all[0]["acquirerReference"], mandate["installments"][0]["authorizationCode"],
        "the charge carries the processor's authorization code"
    );
    assert_eq!(all[2]["acquirerReference"], all[1]["acquirerReference"]);
    assert_eq!(all[3]["acquirerReference"], "TRX-889");
    let today = app.today().to_string();
    for entry in &all {
        assert_eq!(entry["businessDate"], today.as_str());
        assert_eq!(entry["currencyId"], "CLP");
        assert_eq!(entry["mandateId"], "M-1");
        assert!(entry["entryId"].as_str().unwrap().starts_with("led_"));
    }
    assert_eq!(
        summary(&entries(&app, "?kind=REVERSAL").await),
        ["REVERSAL c2 -5000 null null \"CREDIT_CARD\" ref"]
    );
    let tomorrow = app.date_in(1);
    assert!(entries(&app, &format!("?from={tomorrow}")).await.is_empty());

    let settlements = app
        .get(&format!("/ledger/settlements?from={today}&to={today}"))
        .await;
    settlements.expect(200, "LEDGER_SETTLEMENTS_OK");
    assert_eq!(
        settlements.body["payload"]["items"],
        json!([
            {"businessDate": today, "paymentMethod": "CREDIT_CARD", "currencyId": "CLP",
             "gross": 10000, "fees": 527, "net": 9473, "count": 3},
            {"businessDate": today, "paymentMethod": "MANUAL", "currencyId": "CLP",
             "gross": 3000, "fees": 0, "net": 3000, "count": 1},
        ])
    );

    // Another commerce sees none of it.
    app.act_as(OTHER_COMMERCE).await;
    assert!(entries(&app, "").await.is_empty());
    let other = app.get("/ledger/settlements").await;
    assert_eq!(other.body["payload"]["items"], json!([]));
    let report = app
        .get(&format!("/sandbox/payout-report?date={today}"))
        .await;
    assert_eq!(report.body, json!("date,reference,amount\n"));
}

#[tokio::test(flavor = "multi_thread")]
async fn a_bank_debit_enters_the_ledger_when_the_bank_approves_it() {
    let mut app = spawn_app().await;
    app.login().await;
    app.create_customer("cust-1", "12.345.678-5").await;
    let payload = app
        .create_mandate(&dynamic_body(&app, "cust-1", "M-1", &[("b1", 10000, 0)]))
        .await;
    let mandate = payload["mandate"]["internalId"].as_str().unwrap();
    app.post(
        &format!("/sandbox/mandates/{mandate}/activate"),
        &json!({"paymentMethodId": 5, "bankAccount": {"bankCode": "012", "accountType": "CHECKING",
                "accountNumber": "123450000", "holderRut": "12.345.678-5"}}),
    )
    .await
    .expect(200, "SANDBOX_ACTIVATE_OK");
    let today = app.today();
    app.run_charging(today).await;
    assert!(
        entries(&app, "").await.is_empty(),
        "IN_VALIDATION moves no money yet"
    );
    let tomorrow = today + chrono::Duration::days(1);
    app.run_charging(tomorrow).await;
    let all = entries(&app, "").await;
    // Bank debit: 0.60% commission (60) plus IVA (11.4, rounded to 11).
    assert_eq!(summary(&all), ["CHARGE b1 10000 71 9929 \"PAC\" ref"]);
    assert_eq!(all[0]["businessDate"], tomorrow.to_string());
}

#[tokio::test(flavor = "multi_thread")]
async fn a_failed_operation_leaves_no_entry() {
    use mandato::operations::installments::{Action, ChangeStatus, OwnedRefs, change_status};
    use mandato::operations::{Ctx, MandateRef};

    let (app, _) = fixture(&[("c1", 1000, 30), ("c2", 2000, 30)]).await;
    // Refused requests: a payment that does not add up, a reversal of an unpaid installment.
    app.put(CHANGE, &payment_body(&app, "M-1", &["c1"], 999))
        .await
        .expect(400, "VALIDATION_ERROR");
    let c1 = internal_id(&app, "c1").await;
    app.post(
        &format!("/sandbox/installments/{c1}/outcome"),
        &json!({"result": "REVERSED"}),
    )
    .await
    .expect(400, "INSTALLMENT_STATE_CONFLICT");
    assert_eq!(count(&app, "SELECT count(*) FROM ledger_entries"), 0);

    // An annulment whose transaction fails after the operation ran: neither the state nor
    // the entry survives.
    let store = &app.running.state.store();
    let failed = store.write(|db| {
        let commerce = mandato::store::commerces::by_code(db, COMMERCE)?.unwrap();
        let ctx = Ctx {
            commerce: &commerce,
            charge_dates: &store.charge_dates,
            now: app.clock_now(),
            today: app.today(),
        };
        change_status(
            db,
            &ctx,
            &ChangeStatus {
                product: MandateRef::External("M-1".into()),
                installments: OwnedRefs::External(vec!["c1".into(), "c2".into()]),
                action: Action::Annulment,
            },
        )?;
        assert_eq!(
            db.query_row("SELECT count(*) FROM ledger_entries", &[], |r| r
                .get::<i64>(0))?,
            2,
            "the entries are written in the operation's transaction"
        );
        Err::<(), _>(mandato::error::Error::refused("TEST_ABORT", "abort"))
    });
    assert!(failed.is_err());
    assert_eq!(count(&app, "SELECT count(*) FROM ledger_entries"), 0);
    assert_eq!(
        app.installment_states("M-1").await,
        [("c1".to_string(), 1), ("c2".to_string(), 1)]
    );
    // Nor can an entry be changed or removed afterwards.
    app.put(CHANGE, &annulment_body("M-1", &["c1"]))
        .await
        .expect(200, "INSTALLMENTS_STATUS_CHANGE_OK");
    let refused = store.write(|db| Ok(db.execute("UPDATE ledger_entries SET amount = '1'", &[])?));
    assert!(refused.is_err());
    let refused = store.write(|db| Ok(db.execute("DELETE FROM ledger_entries", &[])?));
    assert!(refused.is_err());
    assert_eq!(count(&app, "SELECT count(*) FROM ledger_entries"), 1);
}

#[tokio::test(flavor = "multi_thread")]
async fn the_cursor_pages_without_skipping_or_repeating() {
    let items: Vec<(String, i64, i64)> = (1..=9).map(|n| (format!("i{n}"), 1000, 30)).collect();
    let refs: Vec<(&str, i64, i64)> = items.iter().map(|(i, a, d)| (i.as_str(), *a, *d)).collect();
    let (app, _) = fixture(&refs).await;
    for n in 1..=5 {
        app.put(CHANGE, &annulment_body("M-1", &[&format!("i{n}")]))
            .await
            .expect(200, "INSTALLMENTS_STATUS_CHANGE_OK");
    }
    let mut seen = Vec::new();
    let mut cursor: Option<String> = None;
    let mut appended = 5;
    loop {
        let query = match &cursor {
            Some(c) => format!("?limit=2&cursor={c}"),
            None => "?limit=2".to_string(),
        };
        let reply = app.get(&format!("/ledger{query}")).await;
        reply.expect(200, "LEDGER_OK");
        let page = &reply.body["payload"];
        for item in page["items"].as_array().unwrap() {
            seen.push(item["installmentId"].as_str().unwrap().to_string());
        }
        let Some(next) = page["nextCursor"].as_str() else {
            break;
        };
        cursor = Some(next.to_string());
        // Entries appended between pages come after the cursor, never before it.
        if appended < 9 {
            appended += 1;
            app.put(CHANGE, &annulment_body("M-1", &[&format!("i{appended}")]))
                .await
                .expect(200, "INSTALLMENTS_STATUS_CHANGE_OK");
        }
    }
    assert_eq!(appended, 8, "three appended while paging");
    let expected: Vec<String> = (1..=8).map(|n| format!("i{n}")).collect();
    assert_eq!(seen, expected);

    let bad = app
        .get("/ledger?limit=0&kind=REFUND&from=2026-13-01&cursor=abc")
        .await;
    bad.expect(400, "VALIDATION_ERROR");
    assert_eq!(
        sorted_fields(&bad),
        ["query.cursor", "query.from", "query.kind", "query.limit"]
    );
    let backwards = app
        .get("/ledger/settlements?from=2026-12-02&to=2026-12-01")
        .await;
    backwards.expect(400, "VALIDATION_ERROR");
    assert_eq!(backwards.error_fields(), ["query.to"]);
}

/// The payout report's lines, header first.
fn report_lines(reply: &Reply) -> Vec<String> {
    reply
        .body
        .as_str()
        .unwrap_or_else(|| panic!("not CSV: {}", reply.body))
        .lines()
        .map(str::to_string)
        .collect()
}

async fn reconcile(app: &TestApp, csv: &str) -> Value {
    let reply = app
        .post("/ledger/reconciliations", &json!({"csv": csv}))
        .await;
    reply.expect(201, "RECONCILIATION_OK");
    reply.body["payload"].clone()
}

#[tokio::test(flavor = "multi_thread")]
async fn the_sandbox_payout_report_reconciles_and_mismatches_land_on_their_side() {
    let (app, _) = fixture(&[("c1", 10000, 0), ("c2", 5000, 0), ("c3", 7000, 0)]).await;
    app.run_charging(app.today()).await;
    let c3 = internal_id(&app, "c3").await;
    app.post(
        &format!("/sandbox/installments/{c3}/outcome"),
        &json!({"result": "REVERSED"}),
    )
    .await
    .expect(200, "SANDBOX_OUTCOME_OK");
    let today = app.today().to_string();
    let report = app
        .get(&format!("/sandbox/payout-report?date={today}"))
        .await;
    assert_eq!(report.status, 200);
    assert!(
        report.headers["content-type"]
            .to_str()
            .unwrap()
            .starts_with("text/csv")
    );
    let lines = report_lines(&report);
    assert_eq!(lines.len(), 5, "{lines:?}");
    assert_eq!(lines[0], "date,reference,amount");
    assert!(lines[1].starts_with(&today) && lines[1].ends_with(",9649"));
    assert!(lines[4].ends_with(",-7000"), "the reversal is deducted");

    // The loop: the acquirer's report matches the ledger entirely, with either separator.
    let full = reconcile(&app, &lines.join("\n")).await;
    assert_eq!(
        full["counts"],
        json!({"lines": 4, "matched": 4, "entriesWithoutPayout": 0, "linesWithoutEntry": 0})
    );
    assert_eq!(full["matched"][0]["entry"]["installmentId"], "c1");
    assert_eq!(full["periodFrom"], today.as_str());
    let semicolons = lines.join("\r\n").replace(',', ";");
    assert_eq!(reconcile(&app, &semicolons).await["counts"]["matched"], 4);

    // Planted: c1's amount changed, c2's line missing, a reference nobody issued.
    let changed = lines[1].replace(",9649", ",9650");
    let planted = [
        lines[0].clone(),
        changed,
        lines[3].clone(),
        lines[4].clone(),
        format!("{today},AUT-NOBODY,1234"),
    ]
    .join("\n");
    let result = reconcile(&app, &planted).await;
    assert_eq!(
        result["counts"],
        json!({"lines": 4, "matched": 2, "entriesWithoutPayout": 2, "linesWithoutEntry": 2})
    );
    let unpaid: Vec<&str> = result["entriesWithoutPayout"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["installmentId"].as_str().unwrap())
        .collect();
    assert_eq!(unpaid, ["c1", "c2"]);
    let unmatched: Vec<(i64, &str)> = result["linesWithoutEntry"]
        .as_array()
        .unwrap()
        .iter()
        .map(|u| {
            (
                u["line"]["line"].as_i64().unwrap(),
                u["reason"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(unmatched, [(2, "AMOUNT_DIFFERS"), (5, "UNKNOWN_REFERENCE")]);

    // A bad report names each bad cell and stores nothing.
    let bad = app
        .post(
            "/ledger/reconciliations",
            &json!({"csv": format!("date,reference,amount\n{today},AUT-1,12.5.0\n2026-02-30,AUT-2,10\n")}),
        )
        .await;
    bad.expect(400, "VALIDATION_ERROR");
    assert_eq!(
        bad.error_fields(),
        ["csv.line[2].amount", "csv.line[3].date"]
    );
    let missing = app
        .post("/ledger/reconciliations", &json!({"csv": "fecha;monto\n"}))
        .await;
    missing.expect(400, "VALIDATION_ERROR");
    assert_eq!(
        missing.error_fields(),
        [
            "csv.line[1].date",
            "csv.line[1].reference",
            "csv.line[1].amount"
        ]
    );
    assert_eq!(count(&app, "SELECT count(*) FROM reconciliations"), 3);
    app.get("/sandbox/payout-report?date=2026-99-01")
        .await
        .expect(400, "VALIDATION_ERROR");

    // The CLI exports the same entries as CSV, and reconciles a file.
    let out = crate::helpers::cli_command(app.dir.path())
        .args(["ledger", "export", "--commerce", COMMERCE])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let csv = String::from_utf8(out.stdout).unwrap();
    let rows: Vec<&str> = csv.lines().collect();
    assert_eq!(rows.len(), 5, "{csv}");
    assert!(rows[0].starts_with("entryId,kind,businessDate,amount,currencyId,fee,net"));
    assert!(rows[1].contains(",CHARGE,") && rows[1].contains(",10000,CLP,351,9649,CREDIT_CARD,"));
    assert!(rows[4].contains(",REVERSAL,") && rows[4].contains(",-7000,CLP,"));
    let json_export = crate::cli::mandato(
        app.dir.path(),
        &[
            "ledger",
            "export",
            "--commerce",
            COMMERCE,
            "--format",
            "json",
            "--from",
            &today,
        ],
        None,
    );
    assert_eq!(json_export["items"].as_array().unwrap().len(), 4);
    let as_json = crate::cli::mandato(
        app.dir.path(),
        &[
            "sandbox",
            "payout-report",
            "--commerce",
            COMMERCE,
            "--date",
            &today,
        ],
        None,
    );
    assert_eq!(as_json["csv"].as_str().unwrap().lines().count(), 5);
    let file = app.dir.path().join("payout.csv");
    let cli_report = crate::helpers::cli_command(app.dir.path())
        .args([
            "sandbox",
            "payout-report",
            "--commerce",
            COMMERCE,
            "--date",
            &today,
        ])
        .output()
        .unwrap();
    assert!(cli_report.status.success());
    std::fs::write(&file, &cli_report.stdout).unwrap();
    let cli = crate::cli::mandato(
        app.dir.path(),
        &[
            "ledger",
            "reconcile",
            "--commerce",
            COMMERCE,
            file.to_str().unwrap(),
        ],
        None,
    );
    assert_eq!(cli["counts"]["matched"], 4);
    assert_eq!(cli["createdBy"], "CLI");
}

/// A report over the character limit is a 400 at `csv`, not a 413 for the body, however JSON
/// spells its characters (here each as a six-byte `\uXXXX` escape); a control character is
/// refused at `csv` too.
#[tokio::test(flavor = "multi_thread")]
async fn an_oversized_or_binary_report_is_refused_at_its_field() {
    let (app, _) = fixture(&[]).await;
    let escaped = "\\u00e9".repeat(160_001);
    let body = format!(r#"{{"csv":"{escaped}"}}"#);
    assert!(
        body.len() < 1024 * 1024,
        "the body itself stays within 1 MiB"
    );
    let mut request = app
        .client
        .post(app.url("/ledger/reconciliations"))
        .header("Content-Type", "application/json")
        .header(
            "Authorization",
            format!("Bearer {}", app.token.as_ref().unwrap()),
        );
    for (name, value) in common_headers(&app) {
        request = request.header(name.as_str(), value.as_str());
    }
    let response = request.body(body).send().await.unwrap();
    assert_eq!(response.status(), 400);
    let reply: Value = response.json().await.unwrap();
    assert_eq!(reply["errors"][0]["field"], "csv", "{reply}");
    assert_eq!(reply["errors"][0]["code"], "TOO_LONG", "{reply}");

    let binary = app
        .post(
            "/ledger/reconciliations",
            &json!({"csv": "date,reference,amount\n2026-12-01,AUT-1,10\u{1}\n"}),
        )
        .await;
    binary.expect(400, "VALIDATION_ERROR");
    assert_eq!(binary.error_fields(), ["csv"]);
    assert_eq!(count(&app, "SELECT count(*) FROM reconciliations"), 0);
}

#[tokio::test(flavor = "multi_thread")]
async fn the_sandbox_reset_removes_the_ledger_and_production_has_no_payout_report() {
    let (app, _) = fixture(&[("c1", 1000, 30)]).await;
    app.put(CHANGE, &payment_body(&app, "M-1", &["c1"], 1000))
        .await
        .expect(200, "INSTALLMENTS_STATUS_CHANGE_OK");
    let reset = app.post("/sandbox/reset", &json!({})).await;
    reset.expect(200, "SANDBOX_RESET_OK");
    assert_eq!(reset.body["payload"]["ledgerEntries"], 1);
    assert!(entries(&app, "").await.is_empty());

    let mut production = spawn_app_with(Options {
        environment: mandato::config::Environment::Production,
        ..Options::default()
    })
    .await;
    // Production has no JWE helper: the password is encrypted here, as a merchant would.
    let jwe =
        mandato::auth::jwe::encrypt_password(PASSWORD, &production.public_key().await).unwrap();
    let login = production
        .post(
            "/login",
            &json!({"username": production.commerce, "password": jwe}),
        )
        .await;
    login.expect(200, "LOGIN_OK");
    production.token = Some(login.body["payload"]["token"].as_str().unwrap().to_string());
    production
        .get("/sandbox/payout-report?date=2026-12-01")
        .await
        .expect(404, "OPERATION_NOT_FOUND");
    production.get("/ledger").await.expect(200, "LEDGER_OK");
}

#[tokio::test(flavor = "multi_thread")]
async fn staff_see_the_ledger_export_it_and_reconcile_with_an_audit_record() {
    use crate::staff_ui_api::{member, owner};

    let (app, _) = fixture(&[("c1", 10000, 0)]).await;
    app.run_charging(app.today()).await;
    let today = app.today().to_string();
    let report = app
        .get(&format!("/sandbox/payout-report?date={today}"))
        .await
        .body
        .as_str()
        .unwrap()
        .to_string();
    let admin = owner(&app).await;
    let viewer = member(&app, &admin, "viewer").await;

    let page = viewer
        .get(&format!("/ledger-entries?commerce={COMMERCE}"))
        .await;
    page.expect(200, "STAFF_LEDGER_OK");
    assert_eq!(page.body["payload"]["items"][0]["fee"], 351);
    viewer
        .get(&format!(
            "/ledger-settlements?commerce={COMMERCE}&from={today}"
        ))
        .await
        .expect(200, "STAFF_LEDGER_SETTLEMENTS_OK");
    let other = viewer
        .get(&format!("/ledger-entries?commerce={OTHER_COMMERCE}"))
        .await;
    assert_eq!(other.body["payload"]["items"], json!([]));
    viewer
        .get("/ledger-entries")
        .await
        .expect(400, "VALIDATION_ERROR");
    let export = app
        .client
        .get(format!(
            "{}/admin/api/ledger-export?commerce={COMMERCE}",
            app.base
        ))
        .header("cookie", viewer.cookie.clone().unwrap())
        .send()
        .await
        .unwrap();
    assert_eq!(export.status(), 200);
    assert_eq!(export.text().await.unwrap().lines().count(), 2);

    // A viewer changes nothing; an operator's import is kept and audited.
    viewer
        .post(
            "/ledger-reconciliations",
            json!({"commerce": COMMERCE, "csv": report}),
        )
        .await
        .expect(403, "ROLE_NOT_ALLOWED");
    let imported = admin
        .post(
            "/ledger-reconciliations",
            json!({"commerce": COMMERCE, "csv": report}),
        )
        .await;
    imported.expect(201, "RECONCILIATION_OK");
    assert_eq!(imported.body["payload"]["counts"]["matched"], 1);
    let kept = viewer
        .get(&format!("/ledger-reconciliations?commerce={COMMERCE}"))
        .await;
    kept.expect(200, "STAFF_RECONCILIATIONS_OK");
    assert_eq!(
        kept.body["payload"]["items"][0], imported.body["payload"],
        "the stored result is the one answered"
    );
    assert_eq!(
        count(
            &app,
            "SELECT count(*) FROM staff_audit WHERE action = 'ledger.reconcile'"
        ),
        1
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn settlements_of_the_largest_amounts_add_up_exactly() {
    let mut app = spawn_app().await;
    app.login().await;
    app.create_customer("cust-big", &rut(13_131_313)).await;
    const LARGEST: i64 = 99_999_999_999_999;
    let items: Vec<Value> = (1..=15)
        .map(|n| {
            json!({"id": format!("c{n}"), "amount": LARGEST, "currencyId": "CLP",
                   "installmentDueDate": app.date_in(5)})
        })
        .collect();
    let payload = app
        .create_mandate(&json!({
            "customer": {"userId": "cust-big"},
            "mandate": {"id": "M-BIG", "type": "DYNAMIC", "name": "Grande",
                        "charges": {"currencyId": "CLP"}},
            "installments": items,
            "urls": {"activationWebhook": "https://merchant.example/hooks/activation",
                     "paymentWebhook": "https://merchant.example/hooks/payment"}
        }))
        .await;
    let mandate = payload["mandate"]["internalId"]
        .as_str()
        .unwrap()
        .to_string();
    let ids: Vec<String> = payload["installments"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["internalId"].as_str().unwrap().to_string())
        .collect();
    let today = app.today().to_string();
    for id in &ids {
        app.put(
            "/installments/status/change",
            &json!({"product": {"internalId": mandate}, "installments": {"internalIds": [id]},
                    "action": "PAYMENT",
                    "payment": {"date": today, "amount": LARGEST, "currencyId": "CLP"}}),
        )
        .await
        .expect(200, "INSTALLMENTS_STATUS_CHANGE_OK");
    }
    let settlements = app.get("/ledger/settlements").await;
    settlements.expect(200, "LEDGER_SETTLEMENTS_OK");
    let row = &settlements.body["payload"]["items"][0];
    assert_eq!(row["count"], 15, "{row}");
    // 15 × 99,999,999,999,999 = 1,499,999,999,999,985: beyond an i64 in ten-thousandths.
    assert_eq!(row["gross"].to_string(), "1499999999999985", "{row}");
    assert_eq!(row["net"].to_string(), "1499999999999985", "{row}");
    let _ = &mut app;
}
