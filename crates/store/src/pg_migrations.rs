//! PostgreSQL's embedded migrations (`migrations/postgres/`), applied in order at start.
//!
//! Several engines may start together on one database: the migrations run under a
//! session-level advisory lock, so one engine applies them while the others wait, then find
//! them recorded in `schema_migrations` and apply nothing. Each migration commits with its
//! record, all or nothing.

use super::db::{self, PgConn, params};

const MIGRATIONS: &[(&str, &str)] = &[
    (
        "0001_schema",
        include_str!("../../../migrations/postgres/0001_schema.sql"),
    ),
    (
        "0002_acquirers",
        include_str!("../../../migrations/postgres/0002_acquirers.sql"),
    ),
    (
        "0003_webpay_payments",
        include_str!("../../../migrations/postgres/0003_webpay_payments.sql"),
    ),
    (
        "0004_fee_rules",
        include_str!("../../../migrations/postgres/0004_fee_rules.sql"),
    ),
    (
        "0005_acquirer_calls",
        include_str!("../../../migrations/postgres/0005_acquirer_calls.sql"),
    ),
    (
        "0006_fintoc",
        include_str!("../../../migrations/postgres/0006_fintoc.sql"),
    ),
    (
        "0007_fintoc_webhooks",
        include_str!("../../../migrations/postgres/0007_fintoc_webhooks.sql"),
    ),
    (
        "0008_creation_replays",
        include_str!("../../../migrations/postgres/0008_creation_replays.sql"),
    ),
    (
        "0009_sandbox_trigger_records",
        include_str!("../../../migrations/postgres/0009_sandbox_trigger_records.sql"),
    ),
    (
        "0010_correlation_claims_by_id",
        include_str!("../../../migrations/postgres/0010_correlation_claims_by_id.sql"),
    ),
    (
        "0011_payment_evidence_files",
        include_str!("../../../migrations/postgres/0011_payment_evidence_files.sql"),
    ),
    (
        "0012_charge_attempts_by_run",
        include_str!("../../../migrations/postgres/0012_charge_attempts_by_run.sql"),
    ),
    (
        "0013_mandates_fillfactor",
        include_str!("../../../migrations/postgres/0013_mandates_fillfactor.sql"),
    ),
];

/// The advisory lock's key: any constant no other application on the database uses
/// (the bytes of "mandato" as an integer).
const LOCK_KEY: i64 = 0x006d_616e_6461_746f;

/// Brings the database to this build's schema.
pub fn run(conn: &PgConn) -> anyhow::Result<()> {
    conn.batch(&format!("SELECT pg_advisory_lock({LOCK_KEY})"))?;
    let applied = apply(conn);
    // The lock is the session's: released even when a migration failed.
    let unlocked = conn.batch(&format!("SELECT pg_advisory_unlock({LOCK_KEY})"));
    applied?;
    unlocked?;
    Ok(())
}

fn apply(conn: &PgConn) -> anyhow::Result<()> {
    conn.batch(
        "CREATE TABLE IF NOT EXISTS schema_migrations (
            name        TEXT PRIMARY KEY,
            applied_at  TIMESTAMPTZ NOT NULL DEFAULT now()
        )",
    )?;
    let applied: Vec<String> = conn.transaction(|db| {
        db.query_map(
            "SELECT name FROM schema_migrations ORDER BY name",
            &params![],
            |r| r.get(0),
        )
    })?;
    if let Some(unknown) = applied
        .iter()
        .find(|name| !MIGRATIONS.iter().any(|(known, _)| known == name))
    {
        anyhow::bail!(
            "the database was written by a newer mandato (migration {unknown} is unknown to this build)"
        );
    }
    for (name, sql) in MIGRATIONS {
        if applied.iter().any(|done| done == name) {
            continue;
        }
        conn.transaction(|db| -> Result<(), db::Error> {
            db.execute_batch(sql)?;
            db.execute(
                "INSERT INTO schema_migrations (name) VALUES (?1)",
                &params![*name],
            )?;
            Ok(())
        })
        .map_err(|e| anyhow::anyhow!("migration {name} failed: {e}"))?;
        tracing::info!(migration = name, "applied PostgreSQL migration");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pg_test;

    #[test]
    fn every_postgres_migration_file_is_embedded_in_order() {
        let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../../migrations/postgres");
        let mut files: Vec<String> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| {
                e.unwrap()
                    .file_name()
                    .to_string_lossy()
                    .trim_end_matches(".sql")
                    .to_string()
            })
            .collect();
        files.sort();
        let embedded: Vec<&str> = MIGRATIONS.iter().map(|(name, _)| *name).collect();
        assert_eq!(files, embedded);
    }

    #[test]
    fn migrations_apply_once_and_twice_is_a_no_op() {
        let database = pg_test::empty_database();
        let conn = database.connect();
        run(&conn).unwrap();
        run(&conn).unwrap();
        let recorded = conn
            .transaction(|db| {
                db.query_row("SELECT count(*) FROM schema_migrations", &params![], |r| {
                    r.get::<i64>(0)
                })
            })
            .unwrap();
        assert_eq!(recorded as usize, MIGRATIONS.len());
    }

    #[test]
    fn engines_starting_together_migrate_once() {
        let database = pg_test::empty_database();
        let url = database.url().to_string();
        let engines: Vec<_> = (0..3)
            .map(|_| {
                let url = url.clone();
                std::thread::spawn(move || run(&PgConn::connect(&url).unwrap()))
            })
            .collect();
        for engine in engines {
            engine.join().unwrap().unwrap();
        }
    }

    #[test]
    fn a_database_from_a_newer_build_is_refused() {
        let database = pg_test::database();
        let conn = database.connect();
        conn.batch("INSERT INTO schema_migrations (name) VALUES ('9999_future')")
            .unwrap();
        let error = run(&conn).unwrap_err().to_string();
        assert!(error.contains("newer mandato"), "{error}");
    }

    /// Columns only PostgreSQL has, for what only several engines sharing one database need:
    /// the delivery claim's lease (`deliveries::due`).
    const POSTGRES_ONLY: &[(&str, &str)] = &[("events", "claimed_until")];

    /// The schema holds what the SQLite one holds: every table with the same columns, besides
    /// `POSTGRES_ONLY`.
    #[test]
    fn the_schema_has_sqlite_s_tables_and_columns() {
        let sqlite = rusqlite::Connection::open_in_memory().unwrap();
        let mut sqlite = sqlite;
        crate::migrations::run(&mut sqlite).unwrap();
        let sqlite_columns: Vec<(String, String)> = sqlite
            .prepare(
                "SELECT m.name, p.name FROM sqlite_master m, pragma_table_info(m.name) p
                 WHERE m.type = 'table' AND m.name NOT LIKE 'sqlite_%'
                   AND m.name NOT LIKE '%_search%'
                 ORDER BY 1, 2",
            )
            .unwrap()
            .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap();

        let database = pg_test::database();
        let pg_columns: Vec<(String, String)> = database
            .connect()
            .transaction(|db| {
                db.query_map(
                    "SELECT table_name::text, column_name::text FROM information_schema.columns
                     WHERE table_schema = 'public' AND table_name <> 'schema_migrations'
                     ORDER BY table_name::text COLLATE \"C\", column_name::text COLLATE \"C\"",
                    &params![],
                    |r| Ok((r.get(0)?, r.get(1)?)),
                )
            })
            .unwrap();
        for only in POSTGRES_ONLY {
            let column = (only.0.to_string(), only.1.to_string());
            assert!(pg_columns.contains(&column), "{only:?} is in the schema");
        }
        let shared: Vec<(String, String)> = pg_columns
            .into_iter()
            .filter(|(table, column)| !POSTGRES_ONLY.contains(&(table.as_str(), column.as_str())))
            .collect();
        assert_eq!(shared, sqlite_columns);
    }
}
