//! A SQLite database file on its own, outside a running store: the checks a backup passes
//! before it is kept or restored, and folding a replaced database's WAL into it.

use std::fs::File;
use std::path::Path;

use anyhow::Context;
use rusqlite::Connection;

/// Tables every mandato database has had since its first schema: a file without them is not
/// one of ours, however healthy.
const KNOWN_TABLES: [&str; 6] = [
    "settings",
    "commerces",
    "api_keys",
    "customers",
    "mandates",
    "installments",
];

/// Checks that `path` is a sound mandato database this binary can open (after migrating it),
/// and leaves it a single self-contained file (rollback journal, no WAL). Answers its schema
/// version.
pub fn check_database(path: &Path) -> anyhow::Result<i64> {
    crate::sqlite_setup::configure();
    let conn = Connection::open(path)?;
    let mode: String = conn
        .query_row("PRAGMA journal_mode = DELETE", [], |r| r.get(0))
        .context("not a readable SQLite database")?;
    anyhow::ensure!(
        mode.eq_ignore_ascii_case("delete"),
        "could not leave WAL mode"
    );
    let problems: Vec<String> = conn
        .prepare("PRAGMA integrity_check")?
        .query_map([], |r| r.get(0))?
        .collect::<Result<_, _>>()?;
    anyhow::ensure!(
        problems == ["ok"],
        "integrity_check found problems: {}",
        problems
            .iter()
            .take(3)
            .cloned()
            .collect::<Vec<_>>()
            .join("; ")
    );
    let version: i64 = conn.query_row("PRAGMA user_version", [], |r| r.get(0))?;
    let latest = crate::migrations::latest_version();
    anyhow::ensure!(
        version >= 1,
        "it is not a mandato database (no schema version)"
    );
    anyhow::ensure!(
        version <= latest,
        "it was written by a newer mandato (schema {version}, this binary knows {latest})"
    );
    for table in KNOWN_TABLES {
        let found: bool = conn.query_row(
            "SELECT EXISTS (SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?1)",
            [table],
            |r| r.get(0),
        )?;
        anyhow::ensure!(found, "it is not a mandato database (no {table} table)");
    }
    drop(conn);
    File::open(path)?.sync_all()?;
    Ok(version)
}

/// Folds the WAL into the database file (`wal_checkpoint(TRUNCATE)`), so the file is whole on
/// its own.
pub fn fold_wal(database: &Path) -> rusqlite::Result<()> {
    crate::sqlite_setup::configure();
    let conn = Connection::open(database)?;
    conn.query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |r| {
        r.get::<_, i64>(0)
    })?;
    conn.close().map_err(|(_, e)| e)
}
