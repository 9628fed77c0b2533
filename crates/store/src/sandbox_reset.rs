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

/// What a reset removes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Scope {
    /// All of the commerce's test data; its customers too unless `keep_customers`.
    Everything { keep_customers: bool },
    /// Only what `mandato trigger` made (the records marked `sandbox_trigger`): the
    /// integrator's own customers, mandates, processes, imports and answers stay.
    TriggersOnly,
}

/// The marked records of `mandato trigger` (CONTRACT 14), for queries that leave them out of
/// totals: `mandate_seq NOT IN (TRIGGER_MANDATES)`. A partial index keeps it as small as the
/// marks.
pub const TRIGGER_MANDATES: &str = "SELECT seq FROM mandates WHERE sandbox_trigger = 1";
/// The same mandates by public id, for the ledger (whose entries name mandates by id).
pub const TRIGGER_MANDATE_IDS: &str = "SELECT id FROM mandates WHERE sandbox_trigger = 1";

/// Marks a customer, mandate or signature process as made by `mandato trigger`.
pub fn mark_trigger_record<'c>(db: impl Into<Db<'c>>, record: TriggerRecord) -> db::Result<()> {
    let (table, seq) = match record {
        TriggerRecord::Customer(seq) => ("customers", seq),
        TriggerRecord::Mandate(seq) => ("mandates", seq),
        TriggerRecord::SignatureProcess(seq) => ("signature_processes", seq),
    };
    db.into().execute(
        &format!("UPDATE {table} SET sandbox_trigger = 1 WHERE seq = ?1"),
        &params![seq],
    )?;
    Ok(())
}

/// A record `mandato trigger` made, by its `seq`.
#[derive(Clone, Copy, Debug)]
pub enum TriggerRecord {
    Customer(i64),
    Mandate(i64),
    SignatureProcess(i64),
}

/// The SQL that picks a reset's rows of each table (`?1` is the commerce).
struct Picks {
    mandates: String,
    processes: String,
    customers: String,
    installments: String,
    events: String,
    ledger_mandate_ids: Option<String>,
}

impl Picks {
    fn of(scope: Scope) -> Picks {
        let marked = match scope {
            Scope::Everything { .. } => "",
            Scope::TriggersOnly => " AND sandbox_trigger = 1",
        };
        let mandates = format!("SELECT seq FROM mandates WHERE commerce_id = ?1{marked}");
        let processes =
            format!("SELECT seq FROM signature_processes WHERE commerce_id = ?1{marked}");
        Picks {
            customers: format!("SELECT seq FROM customers WHERE commerce_id = ?1{marked}"),
            installments: format!("SELECT seq FROM installments WHERE mandate_seq IN ({mandates})"),
            events: match scope {
                Scope::Everything { .. } => "SELECT seq FROM events WHERE commerce_id = ?1".into(),
                Scope::TriggersOnly => format!(
                    "SELECT seq FROM events WHERE commerce_id = ?1
                       AND (mandate_seq IN ({mandates}) OR signature_process_seq IN ({processes}))"
                ),
            },
            ledger_mandate_ids: match scope {
                Scope::Everything { .. } => None,
                Scope::TriggersOnly => Some(format!(
                    "SELECT id FROM mandates WHERE commerce_id = ?1{marked}"
                )),
            },
            mandates,
            processes,
        }
    }
}

/// Removes the commerce's mandates (with their instruments, acceptances, portal attempts and
/// installments), ledger entries and reconciliations, charge attempts, events (with their
/// delivery attempts), signature processes (with documents, placements, signatories and
/// audit), the answers recorded for creations (`creation_replays`) and, unless
/// `keep_customers`, its customers (and their answers). With [`Scope::TriggersOnly`], only
/// `mandato trigger`'s marked records and what hangs off them.
pub fn reset<'c>(db: impl Into<Db<'c>>, commerce_id: i64, scope: Scope) -> db::Result<ResetCounts> {
    let db = db.into();
    let run = |sql: &str| db.execute(sql, &params![commerce_id]);
    let picks = Picks::of(scope);
    if db.backend() == Backend::Postgres {
        // The delivery worker may be recording an attempt of one of these events right now.
        // Its transaction is waited for here, before the attempts are read for removal: taken
        // later, its committed attempt would still point at an event this reset removes. One
        // that starts afterwards finds its event gone and records nothing. (SQLite's single
        // writer runs the two one after the other anyway.)
        db.query_map(
            &format!(
                "SELECT seq FROM events WHERE seq IN ({}) FOR UPDATE",
                picks.events
            ),
            &params![commerce_id],
            |_| Ok(()),
        )?;
    }
    let mut counts = ResetCounts {
        delivery_attempts: run(&format!(
            "DELETE FROM delivery_attempts WHERE event_seq IN ({})",
            picks.events
        ))?,
        ..ResetCounts::default()
    };
    counts.events = run(&format!(
        "DELETE FROM events WHERE seq IN ({})",
        picks.events
    ))?;

    let processes = &picks.processes;
    run(&format!(
        "DELETE FROM mandate_signatures WHERE process_seq IN ({processes})"
    ))?;
    run(&format!(
        "DELETE FROM signature_placements WHERE document_seq IN
            (SELECT seq FROM signature_documents WHERE process_seq IN ({processes}))"
    ))?;
    for table in [
        "signature_documents",
        "signature_audit",
        "signature_signatories",
    ] {
        run(&format!(
            "DELETE FROM {table} WHERE process_seq IN ({processes})"
        ))?;
    }
    counts.signature_processes = run(&format!(
        "DELETE FROM signature_processes WHERE seq IN ({processes})"
    ))?;

    counts.ledger_entries = match &picks.ledger_mandate_ids {
        None => super::ledger::erase_for_sandbox_reset(db, commerce_id)?,
        Some(mandate_ids) => {
            super::ledger::erase_entries_of_mandates(db, commerce_id, mandate_ids)?
        }
    };
    if picks.ledger_mandate_ids.is_none() {
        // Fintoc's events name the commerce, not a record: a whole reset only.
        run("DELETE FROM fintoc_events WHERE commerce_id = ?1")?;
    }
    let installments = &picks.installments;
    run(&format!(
        "DELETE FROM fintoc_charges WHERE idempotency_key IN
            (SELECT idempotency_key FROM charge_attempts WHERE installment_seq IN ({installments}))"
    ))?;
    counts.charge_attempts = run(&format!(
        "DELETE FROM charge_attempts WHERE installment_seq IN ({installments})"
    ))?;
    run(&format!(
        "DELETE FROM webpay_payments WHERE installment_seq IN ({installments})"
    ))?;
    counts.installments = run(&format!(
        "DELETE FROM installments WHERE seq IN ({installments})"
    ))?;
    let mandates = &picks.mandates;
    for table in [
        "instruments",
        "acceptances",
        "portal_attempts",
        "oneclick_inscriptions",
        "fintoc_enrolments",
    ] {
        run(&format!(
            "DELETE FROM {table} WHERE mandate_seq IN ({mandates})"
        ))?;
    }
    counts.mandates = run(&format!("DELETE FROM mandates WHERE seq IN ({mandates})"))?;
    match scope {
        Scope::Everything { keep_customers } => {
            // What the creations answered: a replay must not answer for a mandate that is gone.
            super::creation_replays::erase_for_sandbox_reset(db, commerce_id, keep_customers)?;
            if !keep_customers {
                counts.customers = run("DELETE FROM customers WHERE commerce_id = ?1")?;
            }
        }
        Scope::TriggersOnly => {
            // The trigger creates through the engine, never through a recorded request: no
            // answers of its records to remove. A marked customer with a mandate of the
            // integrator's own (none is made that way) would stay.
            counts.customers = run(&format!(
                "DELETE FROM customers WHERE seq IN ({0})
                   AND seq NOT IN (SELECT customer_seq FROM mandates WHERE commerce_id = ?1)
                   AND seq NOT IN (SELECT x.customer_seq FROM signature_signatories x
                                   WHERE x.customer_seq IN ({0}))",
                picks.customers
            ))?;
        }
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

            let counts = reset(
                db,
                m.commerce_id,
                Scope::Everything {
                    keep_customers: true,
                },
            )
            .unwrap();
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
            let again = reset(
                db,
                m.commerce_id,
                Scope::Everything {
                    keep_customers: false,
                },
            )
            .unwrap();
            assert_eq!(again.customers, 1);
            assert_eq!(again.mandates, 0);
        });
    }
}
