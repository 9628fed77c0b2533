//! Embedded migrations, applied in order at open. `PRAGMA user_version` records how many ran.

use rusqlite::Connection;

const MIGRATIONS: &[(&str, &str)] = &[
    ("0001_init", include_str!("../../migrations/0001_init.sql")),
    (
        "0002_delivery",
        include_str!("../../migrations/0002_delivery.sql"),
    ),
];

pub fn run(conn: &mut Connection) -> anyhow::Result<()> {
    let applied: usize =
        conn.query_row("PRAGMA user_version", [], |r| r.get::<_, i64>(0))? as usize;
    if applied > MIGRATIONS.len() {
        anyhow::bail!(
            "the database was written by a newer mandato (schema {applied}, this build knows {})",
            MIGRATIONS.len()
        );
    }
    for (index, (name, sql)) in MIGRATIONS.iter().enumerate().skip(applied) {
        let tx = conn.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?;
        // Another process may have migrated while we waited for the lock.
        let now_applied: i64 = tx.query_row("PRAGMA user_version", [], |r| r.get(0))?;
        if now_applied as usize > index {
            continue;
        }
        tx.execute_batch(sql)
            .map_err(|e| anyhow::anyhow!("migration {name} failed: {e}"))?;
        tx.pragma_update(None, "user_version", (index + 1) as i64)?;
        tx.commit()?;
        tracing::info!(migration = name, "applied migration");
    }
    Ok(())
}
