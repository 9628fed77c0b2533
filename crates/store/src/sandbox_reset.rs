//! The sandbox reset (CONTRACT 12): one commerce's test data removed in the caller's
//! transaction, children before parents, so that no foreign key is left pointing at a removed
//! row and a later read never meets a half-removed mandate or process.
//!
//! What stays: the commerce itself, its API keys and secrets, the audit log (a record of what
//! was asked, not business data), charging run summaries (installation-wide) and the simulated
//! acquirer's ledger (keyed by idempotency keys that are never reused).

use super::db::{self, Backend, Db, params};

/// How many rows of each kind a reset removed.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ResetCounts {
    pub customers: u64,
    pub mandates: u64,
    pub installments: u64,
    pub charge_attempts: u64,
    pub events: u64,
    pub delivery_attempts: u64,
    pub signature_processes: u64,
    pub ledger_entries: u64,
}

/// Removes the commerce's mandates (with their instruments, acceptances, portal attempts and
/// installments), ledger entries and reconciliations, charge attempts, events (with their delivery attempts), signature processes
/// (with documents, placements, signatories and audit), the answers recorded for creations
/// (`creation_replays`) and, unless `keep_customers`, its customers (and their answers).
pub fn reset<'c>(
    db: impl Into<Db<'c>>,
    commerce_id: i64,
    keep_customers: bool,
) -> db::Result<ResetCounts> {
    let db = db.into();
    let run = |sql: &str| db.execute(sql, &params![commerce_id]);
    if db.backend() == Backend::Postgres {
        // The delivery worker may be recording an attempt of one of these events right now.
        // Its transaction is waited for here, before the attempts are read for removal: taken
        // later, its committed attempt would still point at an event this reset removes. One
        // that starts afterwards finds its event gone and records nothing. (SQLite's single
        // writer runs the two one after the other anyway.)
        db.query_map(
            "SELECT seq FROM events WHERE commerce_id = ?1 FOR UPDATE",
            &params![commerce_id],
            |_| Ok(()),
        )?;
    }
    let mut counts = ResetCounts {
        delivery_attempts: run("DELETE FROM delivery_attempts WHERE event_seq IN
                (SELECT seq FROM events WHERE commerce_id = ?1)")?,
        ..ResetCounts::default()
    };
    counts.events = run("DELETE FROM events WHERE commerce_id = ?1")?;

    const PROCESSES: &str = "SELECT seq FROM signature_processes WHERE commerce_id = ?1";
    run(&format!(
        "DELETE FROM mandate_signatures WHERE process_seq IN ({PROCESSES})"
    ))?;
    run(&format!(
        "DELETE FROM signature_placements WHERE document_seq IN
            (SELECT seq FROM signature_documents WHERE process_seq IN ({PROCESSES}))"
    ))?;
    run(&format!(
        "DELETE FROM signature_documents WHERE process_seq IN ({PROCESSES})"
    ))?;
    run(&format!(
        "DELETE FROM signature_audit WHERE process_seq IN ({PROCESSES})"
    ))?;
    run(&format!(
        "DELETE FROM signature_signatories WHERE process_seq IN ({PROCESSES})"
    ))?;
    counts.signature_processes = run("DELETE FROM signature_processes WHERE commerce_id = ?1")?;

    counts.ledger_entries = super::ledger::erase_for_sandbox_reset(db, commerce_id)?;
    run("DELETE FROM fintoc_events WHERE commerce_id = ?1")?;
    run("DELETE FROM fintoc_charges WHERE idempotency_key IN
            (SELECT idempotency_key FROM charge_attempts WHERE installment_seq IN
                (SELECT seq FROM installments WHERE commerce_id = ?1))")?;
    counts.charge_attempts = run("DELETE FROM charge_attempts WHERE installment_seq IN
            (SELECT seq FROM installments WHERE commerce_id = ?1)")?;
    run("DELETE FROM webpay_payments WHERE installment_seq IN
            (SELECT seq FROM installments WHERE commerce_id = ?1)")?;
    counts.installments = run("DELETE FROM installments WHERE commerce_id = ?1")?;
    const MANDATES: &str = "SELECT seq FROM mandates WHERE commerce_id = ?1";
    for table in [
        "instruments",
        "acceptances",
        "portal_attempts",
        "oneclick_inscriptions",
        "fintoc_enrolments",
    ] {
        run(&format!(
            "DELETE FROM {table} WHERE mandate_seq IN ({MANDATES})"
        ))?;
    }
    counts.mandates = run("DELETE FROM mandates WHERE commerce_id = ?1")?;
    // What the creations answered: a replay must not answer for a mandate that is gone.
    super::creation_replays::erase_for_sandbox_reset(db, commerce_id, keep_customers)?;
    if !keep_customers {
        counts.customers = run("DELETE FROM customers WHERE commerce_id = ?1")?;
    }
    Ok(counts)
}

#[cfg(test)]
mod tests {
    use std::str::FromStr;

    use rust_decimal::Decimal;

    use super::*;
    use crate::deliveries::{self, Attempt, AttemptKind, Outcome};
    use crate::mandates::tests::mandate;
    use crate::pg_test::on_both;
    use crate::{charging, events, installments};
    use mandato_core::domain::date::Date;
    use mandato_core::domain::money::{Currency, Money};

    #[test]
    fn a_reset_removes_the_commerce_s_data_children_first() {
        on_both(|db| {
            let m = mandate(db, "m-1");
            let items = [installments::NewInstallment {
                external_id: "i-1".to_string(),
                amount: Money::from_decimal(Decimal::from_str("1000").unwrap(), Currency::Clp)
                    .unwrap(),
                due_date: Date::parse("2026-12-01").unwrap(),
            }];
            let rows =
                installments::insert_many(db, m.seq, m.commerce_id, &items, "installments", "t0")
                    .unwrap();
            charging::insert_attempt(
                db,
                &charging::NewAttempt {
                    installment_seq: rows[0].seq,
                    run_seq: None,
                    attempt_no: 1,
                    business_date: "2026-12-01",
                    idempotency_key: "ins-1-2026-12-01",
                    amount: "1000",
                    currency: "CLP",
                    now: "t1",
                },
            )
            .unwrap()
            .unwrap();
            events::insert(
                db,
                &events::NewEvent {
                    id: "evt_1",
                    commerce_id: m.commerce_id,
                    mandate_seq: Some(m.seq),
                    installment_seq: Some(rows[0].seq),
                    kind: "payment",
                    sequence: 1,
                    url: Some("https://localhost/hooks"),
                    body: "{}",
                    created_at: "t1",
                },
            )
            .unwrap();
            let (event_seq, _) = deliveries::event_by_id(db, "evt_1").unwrap().unwrap();
            deliveries::record_attempts(
                db,
                &[Attempt {
                    event_seq,
                    kind: AttemptKind::First,
                    started_at: "t2".into(),
                    duration_ms: 1,
                    status_code: Some(200),
                    response_excerpt: None,
                    error: None,
                    outcome: Outcome::Delivered,
                    counts: true,
                    sent: None,
                }],
            )
            .unwrap();

            let counts = reset(db, m.commerce_id, true).unwrap();
            assert_eq!(
                counts,
                ResetCounts {
                    customers: 0,
                    mandates: 1,
                    installments: 1,
                    charge_attempts: 1,
                    events: 1,
                    delivery_attempts: 1,
                    signature_processes: 0,
                    ledger_entries: 0,
                }
            );
            let again = reset(db, m.commerce_id, false).unwrap();
            assert_eq!(again.customers, 1);
            assert_eq!(again.mandates, 0);
        });
    }
}
