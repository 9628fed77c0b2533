//! The sandbox reset (CONTRACT 12): one commerce's test data removed in the caller's
//! transaction, children before parents, so that no foreign key is left pointing at a removed
//! row and a later read never meets a half-removed mandate or process.
//!
//! What stays: the commerce itself, its API keys and secrets, the audit log (a record of what
//! was asked, not business data), charging run summaries (installation-wide) and the simulated
//! acquirer's ledger (keyed by idempotency keys that are never reused).

use rusqlite::Connection;

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
/// (with documents, placements, signatories and audit) and, unless `keep_customers`, its
/// customers.
pub fn reset(
    tx: &Connection,
    commerce_id: i64,
    keep_customers: bool,
) -> rusqlite::Result<ResetCounts> {
    let run = |sql: &str| -> rusqlite::Result<u64> {
        Ok(tx.prepare_cached(sql)?.execute([commerce_id])? as u64)
    };
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

    counts.ledger_entries =
        super::ledger::erase_for_sandbox_reset(tx, commerce_id).map_err(|e| match e {
            super::db::Error::Sqlite(e) => e,
            other => rusqlite::Error::ToSqlConversionFailure(Box::new(other)),
        })?;
    counts.charge_attempts = run("DELETE FROM charge_attempts WHERE installment_seq IN
            (SELECT seq FROM installments WHERE commerce_id = ?1)")?;
    counts.installments = run("DELETE FROM installments WHERE commerce_id = ?1")?;
    const MANDATES: &str = "SELECT seq FROM mandates WHERE commerce_id = ?1";
    for table in ["instruments", "acceptances", "portal_attempts"] {
        run(&format!(
            "DELETE FROM {table} WHERE mandate_seq IN ({MANDATES})"
        ))?;
    }
    counts.mandates = run("DELETE FROM mandates WHERE commerce_id = ?1")?;
    if !keep_customers {
        counts.customers = run("DELETE FROM customers WHERE commerce_id = ?1")?;
    }
    Ok(counts)
}
