//! Embedded migrations, applied in order at open. `PRAGMA user_version` records how many ran.

use rusqlite::Connection;

const MIGRATIONS: &[(&str, &str)] = &[
    (
        "0001_init",
        include_str!("../../../migrations/0001_init.sql"),
    ),
    (
        "0002_delivery",
        include_str!("../../../migrations/0002_delivery.sql"),
    ),
    (
        "0003_staff",
        include_str!("../../../migrations/0003_staff.sql"),
    ),
    (
        "0004_charging",
        include_str!("../../../migrations/0004_charging.sql"),
    ),
    (
        "0005_signatures",
        include_str!("../../../migrations/0005_signatures.sql"),
    ),
    (
        "0006_staff_views",
        include_str!("../../../migrations/0006_staff_views.sql"),
    ),
    (
        "0007_pending_due",
        include_str!("../../../migrations/0007_pending_due.sql"),
    ),
    (
        "0008_audit_refusals",
        include_str!("../../../migrations/0008_audit_refusals.sql"),
    ),
    (
        "0009_portal_attempts",
        include_str!("../../../migrations/0009_portal_attempts.sql"),
    ),
    (
        "0010_login_throttle",
        include_str!("../../../migrations/0010_login_throttle.sql"),
    ),
    (
        "0011_events_api",
        include_str!("../../../migrations/0011_events_api.sql"),
    ),
    (
        "0012_commerce_webhook_url",
        include_str!("../../../migrations/0012_commerce_webhook_url.sql"),
    ),
    (
        "0013_holidays",
        include_str!("../../../migrations/0013_holidays.sql"),
    ),
    (
        "0014_ledger",
        include_str!("../../../migrations/0014_ledger.sql"),
    ),
    (
        "0015_signature_activation",
        include_str!("../../../migrations/0015_signature_activation.sql"),
    ),
    (
        "0016_staff_audit_chain",
        include_str!("../../../migrations/0016_staff_audit_chain.sql"),
    ),
    (
        "0017_staff_safety",
        include_str!("../../../migrations/0017_staff_safety.sql"),
    ),
    (
        "0019_sent_headers",
        include_str!("../../../migrations/0019_sent_headers.sql"),
    ),
    (
        "0020_staff_search",
        include_str!("../../../migrations/0020_staff_search.sql"),
    ),
    (
        "0021_day_local_request_keys",
        include_str!("../../../migrations/0021_day_local_request_keys.sql"),
    ),
    (
        "0022_mandate_search_by_store",
        include_str!("../../../migrations/0022_mandate_search_by_store.sql"),
    ),
    (
        "0023_acquirers",
        include_str!("../../../migrations/0023_acquirers.sql"),
    ),
    (
        "0024_webpay_payments",
        include_str!("../../../migrations/0024_webpay_payments.sql"),
    ),
    (
        "0025_fee_rules",
        include_str!("../../../migrations/0025_fee_rules.sql"),
    ),
    (
        "0026_acquirer_calls",
        include_str!("../../../migrations/0026_acquirer_calls.sql"),
    ),
    (
        "0027_fintoc",
        include_str!("../../../migrations/0027_fintoc.sql"),
    ),
    (
        "0028_fintoc_webhooks",
        include_str!("../../../migrations/0028_fintoc_webhooks.sql"),
    ),
    (
        "0029_creation_replays",
        include_str!("../../../migrations/0029_creation_replays.sql"),
    ),
    (
        "0030_sandbox_trigger_records",
        include_str!("../../../migrations/0030_sandbox_trigger_records.sql"),
    ),
    (
        "0031_payment_evidence_files",
        include_str!("../../../migrations/0031_payment_evidence_files.sql"),
    ),
    (
        "0032_charge_attempts_by_run",
        include_str!("../../../migrations/0032_charge_attempts_by_run.sql"),
    ),
];

/// What a migration needs that SQL cannot compute, run in its transaction right after its SQL.
fn after(name: &str, tx: &rusqlite::Transaction<'_>) -> rusqlite::Result<()> {
    match name {
        "0016_staff_audit_chain" => super::staff_audit::chain_existing(tx).map_err(|e| match e {
            super::db::Error::Sqlite(e) => e,
            other => rusqlite::Error::ToSqlConversionFailure(Box::new(other)),
        }),
        _ => Ok(()),
    }
}

/// The schema version (`user_version`) this binary brings a database to.
pub fn latest_version() -> i64 {
    MIGRATIONS.len() as i64
}

pub fn run(conn: &mut Connection) -> anyhow::Result<()> {
    apply(conn, MIGRATIONS.len())
}

/// Brings a database to the schema of an older build: the migrations before `name`.
#[cfg(test)]
pub(super) fn run_before(conn: &mut Connection, name: &str) -> anyhow::Result<()> {
    apply(
        conn,
        MIGRATIONS.iter().take_while(|(m, _)| *m < name).count(),
    )
}

/// Applies the first `count` migrations that have not run yet.
fn apply(conn: &mut Connection, count: usize) -> anyhow::Result<()> {
    let applied: usize =
        conn.query_row("PRAGMA user_version", [], |r| r.get::<_, i64>(0))? as usize;
    if applied > MIGRATIONS.len() {
        anyhow::bail!(
            "the database was written by a newer mandato (schema {applied}, this build knows {})",
            MIGRATIONS.len()
        );
    }
    for (index, (name, sql)) in MIGRATIONS.iter().enumerate().take(count).skip(applied) {
        let tx = conn.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?;
        // Another process may have migrated while we waited for the lock.
        let now_applied: i64 = tx.query_row("PRAGMA user_version", [], |r| r.get(0))?;
        if now_applied as usize > index {
            continue;
        }
        tx.execute_batch(sql)
            .map_err(|e| anyhow::anyhow!("migration {name} failed: {e}"))?;
        after(name, &tx).map_err(|e| anyhow::anyhow!("migration {name} failed: {e}"))?;
        tx.pragma_update(None, "user_version", (index + 1) as i64)?;
        tx.commit()?;
        tracing::info!(migration = name, "applied migration");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    #[test]
    fn every_migration_file_is_embedded_in_order() {
        let mut files: Vec<String> =
            std::fs::read_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/../../migrations"))
                .unwrap()
                .map(|e| e.unwrap())
                // migrations/postgres/ holds PostgreSQL's own (`pg_migrations.rs`).
                .filter(|e| e.file_type().unwrap().is_file())
                .map(|e| {
                    e.file_name()
                        .to_string_lossy()
                        .trim_end_matches(".sql")
                        .to_string()
                })
                .collect();
        files.sort();
        let embedded: Vec<&str> = super::MIGRATIONS.iter().map(|(name, _)| *name).collect();
        assert_eq!(files, embedded);
    }

    #[test]
    fn migrations_apply_to_an_empty_database_and_twice_is_a_no_op() {
        let mut conn = rusqlite::Connection::open_in_memory().unwrap();
        super::run(&mut conn).unwrap();
        super::run(&mut conn).unwrap();
        let version: i64 = conn
            .query_row("PRAGMA user_version", [], |r| r.get(0))
            .unwrap();
        assert_eq!(version as usize, super::MIGRATIONS.len());
    }
}
