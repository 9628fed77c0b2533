//! Environment-wide values by name: generated key material, the sandbox clock offset.

use super::db::{self, Db, params};

pub const JWE_PRIVATE_KEY: &str = "jwe_private_key_pem";
pub const JWT_PRIVATE_KEY: &str = "jwt_private_key_pem";
pub const SANDBOX_OFFSET_DAYS: &str = "sandbox_offset_days";
pub const DEV_CA_CERT: &str = "dev_ca_cert_pem";
pub const DEV_CA_KEY: &str = "dev_ca_key_pem";
/// The environment `serve` last ran as, so that commands know a production installation.
pub const INSTALLATION_ENVIRONMENT: &str = "installation_environment";

pub fn get<'c>(db: impl Into<Db<'c>>, name: &str) -> db::Result<Option<String>> {
    db.into().query_opt(
        "SELECT value FROM settings WHERE name = ?1",
        &params![name],
        |r| r.get(0),
    )
}

/// Stores `value` unless a value is already there (another process may have won the race);
/// returns the value that holds afterwards.
pub fn get_or_insert<'c>(db: impl Into<Db<'c>>, name: &str, value: &str) -> db::Result<String> {
    let db = db.into();
    db.execute(
        "INSERT INTO settings (name, value) VALUES (?1, ?2) ON CONFLICT (name) DO NOTHING",
        &params![name, value],
    )?;
    db.query_row(
        "SELECT value FROM settings WHERE name = ?1",
        &params![name],
        |r| r.get(0),
    )
}

pub fn set<'c>(db: impl Into<Db<'c>>, name: &str, value: &str) -> db::Result<()> {
    db.into().execute(
        "INSERT INTO settings (name, value) VALUES (?1, ?2)
         ON CONFLICT (name) DO UPDATE SET value = excluded.value",
        &params![name, value],
    )?;
    Ok(())
}
