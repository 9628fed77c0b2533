//! Commerces, API keys and staff accounts; the request path's cache of keys and commerces.

use std::sync::Arc;
use std::time::Duration;

use rusqlite::{Connection, Row, params};

use super::fresh_cache::{Epoch, FreshCache};
use super::optional;
use crate::domain::activation::ActivationMode;
use crate::domain::state::PaymentMethod;
use crate::error::{Error, Result};
use crate::secret::Secret;

#[derive(Debug, Clone)]
pub struct Commerce {
    pub id: i64,
    pub code: String,
    pub name: String,
    pub channels: Option<Vec<String>>,
    pub payment_methods: Vec<PaymentMethod>,
    pub webhook_secret: Secret<String>,
    pub authorization_required: bool,
    pub password_hash: String,
    /// How its mandates are activated when the creating request does not say.
    pub activation_mode: ActivationMode,
}

pub struct NewCommerce<'a> {
    pub code: &'a str,
    pub name: &'a str,
    pub password_hash: &'a str,
    pub channels: Option<&'a [String]>,
    pub payment_methods: &'a [PaymentMethod],
    pub webhook_secret: &'a Secret<String>,
    pub authorization_required: bool,
    pub created_at: &'a str,
}

const COMMERCE_COLUMNS: &str = "id, code, name, channels, payment_methods, webhook_secret, \
                                authorization_required, password_hash, activation_mode";

fn commerce_from_row(row: &Row<'_>) -> rusqlite::Result<Commerce> {
    let channels: Option<String> = row.get(3)?;
    let methods: String = row.get(4)?;
    let method_ids: Vec<i64> = serde_json::from_str(&methods).unwrap_or_default();
    Ok(Commerce {
        id: row.get(0)?,
        code: row.get(1)?,
        name: row.get(2)?,
        channels: channels.and_then(|c| serde_json::from_str(&c).ok()),
        payment_methods: method_ids
            .into_iter()
            .filter_map(PaymentMethod::from_id)
            .collect(),
        webhook_secret: Secret::new(row.get(5)?),
        authorization_required: row.get(6)?,
        password_hash: row.get(7)?,
        activation_mode: {
            let name: String = row.get(8)?;
            ActivationMode::from_name(&name).unwrap_or_default()
        },
    })
}

pub fn by_code(conn: &Connection, code: &str) -> rusqlite::Result<Option<Commerce>> {
    let sql = format!("SELECT {COMMERCE_COLUMNS} FROM commerces WHERE code = ?1");
    optional(
        conn.prepare_cached(&sql)?
            .query_row([code], commerce_from_row),
    )
}

pub fn by_id(conn: &Connection, id: i64) -> rusqlite::Result<Option<Commerce>> {
    let sql = format!("SELECT {COMMERCE_COLUMNS} FROM commerces WHERE id = ?1");
    optional(
        conn.prepare_cached(&sql)?
            .query_row([id], commerce_from_row),
    )
}

pub fn insert(conn: &Connection, new: &NewCommerce<'_>) -> Result<Commerce> {
    let methods: Vec<i64> = new.payment_methods.iter().map(|m| m.id()).collect();
    let channels = new.channels.map(serde_json::to_string).transpose()?;
    let inserted = conn.execute(
        "INSERT INTO commerces (code, name, password_hash, channels, payment_methods,
                                webhook_secret, authorization_required, created_at)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8) ON CONFLICT (code) DO NOTHING",
        params![
            new.code,
            new.name,
            new.password_hash,
            channels,
            serde_json::to_string(&methods)?,
            new.webhook_secret.expose(),
            new.authorization_required,
            new.created_at
        ],
    )?;
    credentials_changed();
    if inserted == 0 {
        return Err(Error::refused_at(
            "COMMERCE_EXISTS",
            "code",
            format!("a commerce with code {} already exists", new.code),
        ));
    }
    Ok(by_code(conn, new.code)?.expect("the commerce was just inserted"))
}

/// Sets the commerce's default activation mode; `false` for an unknown code. Drops the
/// cached commerces, so the next request of this process sees the new mode.
pub fn set_activation_mode(
    conn: &Connection,
    code: &str,
    mode: ActivationMode,
) -> rusqlite::Result<bool> {
    let changed = conn.execute(
        "UPDATE commerces SET activation_mode = ?2 WHERE code = ?1",
        params![code, mode.name()],
    )?;
    credentials_changed();
    Ok(changed > 0)
}

/// An active API key and the commerces it may act for.
#[derive(Debug, Clone)]
pub struct ApiKey {
    pub id: i64,
    pub prefix: String,
    pub all_commerces: bool,
    pub commerce_ids: Vec<i64>,
}

impl ApiKey {
    pub fn allows(&self, commerce_id: i64) -> bool {
        self.all_commerces || self.commerce_ids.contains(&commerce_id)
    }
}

pub fn active_api_key_by_hash(
    conn: &Connection,
    key_hash: &str,
) -> rusqlite::Result<Option<ApiKey>> {
    let found = optional(
        conn.prepare_cached(
            "SELECT id, prefix, all_commerces FROM api_keys WHERE key_hash = ?1 AND revoked_at IS NULL",
        )?
        .query_row([key_hash], |r| Ok((r.get::<_, i64>(0)?, r.get::<_, String>(1)?, r.get::<_, bool>(2)?))),
    )?;
    let Some((id, prefix, all_commerces)) = found else {
        return Ok(None);
    };
    let commerce_ids = if all_commerces {
        Vec::new()
    } else {
        let mut stmt =
            conn.prepare_cached("SELECT commerce_id FROM api_key_commerces WHERE api_key_id = ?1")?;
        stmt.query_map([id], |r| r.get(0))?
            .collect::<rusqlite::Result<_>>()?
    };
    Ok(Some(ApiKey {
        id,
        prefix,
        all_commerces,
        commerce_ids,
    }))
}

/// Stores a new key's hash, valid for the given commerces (every commerce when empty).
pub fn insert_api_key(
    conn: &Connection,
    prefix: &str,
    key_hash: &str,
    commerce_codes: &[String],
    created_at: &str,
) -> Result<()> {
    let mut commerce_ids = Vec::with_capacity(commerce_codes.len());
    for code in commerce_codes {
        match by_code(conn, code)? {
            Some(c) => commerce_ids.push(c.id),
            None => {
                return Err(Error::refused_at(
                    "COMMERCE_NOT_FOUND",
                    "commerce",
                    format!("no commerce with code {code}"),
                ));
            }
        }
    }
    credentials_changed();
    conn.execute(
        "INSERT INTO api_keys (prefix, key_hash, all_commerces, created_at) VALUES (?1, ?2, ?3, ?4)",
        params![prefix, key_hash, commerce_ids.is_empty(), created_at],
    )?;
    let key_id = conn.last_insert_rowid();
    for commerce_id in commerce_ids {
        conn.execute(
            "INSERT INTO api_key_commerces (api_key_id, commerce_id) VALUES (?1, ?2)",
            params![key_id, commerce_id],
        )?;
    }
    Ok(())
}

/// Names the key with `key_hash` (how staff recognise it in the list).
pub fn name_api_key(conn: &Connection, key_hash: &str, name: &str) -> Result<()> {
    conn.execute(
        "UPDATE api_keys SET name = ?2 WHERE key_hash = ?1",
        params![key_hash, name],
    )?;
    Ok(())
}

/// Records the latest use of each key; an older time never replaces a newer one.
pub fn record_api_key_uses(conn: &Connection, uses: &[(i64, String)]) -> rusqlite::Result<()> {
    let mut stmt = conn.prepare_cached(
        "UPDATE api_keys SET last_used_at = ?2
         WHERE id = ?1 AND (last_used_at IS NULL OR last_used_at < ?2)",
    )?;
    for (id, at) in uses {
        stmt.execute(params![id, at])?;
    }
    Ok(())
}

pub fn revoke_api_key(conn: &Connection, prefix: &str, at: &str) -> Result<usize> {
    credentials_changed();
    Ok(conn.execute(
        "UPDATE api_keys SET revoked_at = ?2 WHERE prefix = ?1 AND revoked_at IS NULL",
        params![prefix, at],
    )?)
}

pub fn insert_staff(
    conn: &Connection,
    email: &str,
    password_hash: &str,
    role: &str,
    at: &str,
) -> Result<()> {
    let inserted = conn.execute(
        "INSERT INTO staff (email, password_hash, role, created_at) VALUES (?1, ?2, ?3, ?4)
         ON CONFLICT (email) DO NOTHING",
        params![email, password_hash, role, at],
    )?;
    if inserted == 0 {
        return Err(Error::refused_at(
            "STAFF_EXISTS",
            "email",
            format!("a staff account for {email} already exists"),
        ));
    }
    Ok(())
}

/// Bumped by every change this process makes to commerces and API keys, which drops what the
/// `CredentialCache`s hold.
static CREDENTIALS_EPOCH: Epoch = Epoch::new();

/// How long a cached key and commerce are trusted without reading them again: the bound on how
/// late a change made by another process (the CLI) is seen.
pub const CREDENTIALS_TTL: Duration = Duration::from_secs(1);

/// Cached pairs, at most (a flood of distinct valid pairs is rare, since only accepted pairs are
/// cached).
const CREDENTIALS_MAX: usize = 1_024;

/// Called by every function that changes a commerce or an API key.
pub fn credentials_changed() {
    CREDENTIALS_EPOCH.bump();
}

/// The active API key with `key_hash` and the commerce with `code`, each if it exists.
pub type Credentials = (Option<Arc<ApiKey>>, Option<Arc<Commerce>>);

/// The API key and commerce of each accepted (key hash, commerce code) pair, so a merchant
/// request does not read them from the database every time. Only pairs where both exist are
/// kept: unknown keys and codes are read each time and cannot fill the cache.
pub struct CredentialCache(FreshCache<(String, String), Credentials>);

impl Default for CredentialCache {
    fn default() -> Self {
        let pairs = FreshCache::new(&CREDENTIALS_EPOCH, CREDENTIALS_TTL, CREDENTIALS_MAX)
            .keeping_only(|(key, commerce): &Credentials| key.is_some() && commerce.is_some());
        CredentialCache(pairs)
    }
}

impl CredentialCache {
    /// The cached pair when it is still current; otherwise `read` loads it.
    pub fn get(
        &self,
        key_hash: &str,
        code: &str,
        read: impl FnOnce() -> std::result::Result<(Option<ApiKey>, Option<Commerce>), Error>,
    ) -> std::result::Result<Credentials, Error> {
        self.0
            .get_or_load((key_hash.to_owned(), code.to_owned()), || {
                let (api_key, commerce) = read()?;
                Ok((api_key.map(Arc::new), commerce.map(Arc::new)))
            })
    }
}
