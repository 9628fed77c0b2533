//! Commerces, API keys and staff accounts; the request path's cache of keys and commerces.

use std::sync::Arc;
use std::time::Duration;

use super::db::{self, Db, Row, params};
use super::fresh_cache::{Epoch, FreshCache};
use mandato_core::domain::activation::ActivationMode;
use mandato_core::domain::state::PaymentMethod;
use mandato_core::error::{Error, Result};
use mandato_core::secret::Secret;

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

fn commerce_from_row(row: &Row<'_>) -> db::Result<Commerce> {
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

pub fn by_code<'c>(db: impl Into<Db<'c>>, code: &str) -> db::Result<Option<Commerce>> {
    let sql = format!("SELECT {COMMERCE_COLUMNS} FROM commerces WHERE code = ?1");
    db.into().query_opt(&sql, &params![code], commerce_from_row)
}

pub fn by_id<'c>(db: impl Into<Db<'c>>, id: i64) -> db::Result<Option<Commerce>> {
    let sql = format!("SELECT {COMMERCE_COLUMNS} FROM commerces WHERE id = ?1");
    db.into().query_opt(&sql, &params![id], commerce_from_row)
}

pub fn insert<'c>(db: impl Into<Db<'c>>, new: &NewCommerce<'_>) -> Result<Commerce> {
    let methods: Vec<i64> = new.payment_methods.iter().map(|m| m.id()).collect();
    let channels = new.channels.map(serde_json::to_string).transpose()?;
    let sql = format!(
        "INSERT INTO commerces (code, name, password_hash, channels, payment_methods,
                                webhook_secret, authorization_required, created_at)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8) ON CONFLICT (code) DO NOTHING
         RETURNING {COMMERCE_COLUMNS}"
    );
    let inserted = db.into().query_opt(
        &sql,
        &params![
            new.code,
            new.name,
            new.password_hash,
            &channels,
            &serde_json::to_string(&methods)?,
            new.webhook_secret.expose().as_str(),
            new.authorization_required,
            new.created_at
        ],
        commerce_from_row,
    )?;
    credentials_changed();
    inserted.ok_or_else(|| {
        Error::refused_at(
            "COMMERCE_EXISTS",
            "code",
            format!("a commerce with code {} already exists", new.code),
        )
    })
}

/// Sets the commerce's default activation mode; `false` for an unknown code. Drops the
/// cached commerces, so the next request of this process sees the new mode.
pub fn set_activation_mode<'c>(
    db: impl Into<Db<'c>>,
    code: &str,
    mode: ActivationMode,
) -> db::Result<bool> {
    let changed = db.into().execute(
        "UPDATE commerces SET activation_mode = ?2 WHERE code = ?1",
        &params![code, mode.name()],
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

pub fn active_api_key_by_hash<'c>(
    db: impl Into<Db<'c>>,
    key_hash: &str,
) -> db::Result<Option<ApiKey>> {
    let db = db.into();
    let found = db.query_opt(
        "SELECT id, prefix, all_commerces FROM api_keys WHERE key_hash = ?1 AND revoked_at IS NULL",
        &params![key_hash],
        |r| Ok((r.get::<i64>(0)?, r.get::<String>(1)?, r.get::<bool>(2)?)),
    )?;
    let Some((id, prefix, all_commerces)) = found else {
        return Ok(None);
    };
    let commerce_ids = if all_commerces {
        Vec::new()
    } else {
        db.query_map(
            "SELECT commerce_id FROM api_key_commerces WHERE api_key_id = ?1",
            &params![id],
            |r| r.get(0),
        )?
    };
    Ok(Some(ApiKey {
        id,
        prefix,
        all_commerces,
        commerce_ids,
    }))
}

/// Stores a new key's hash, valid for the given commerces (every commerce when empty).
pub fn insert_api_key<'c>(
    db: impl Into<Db<'c>>,
    prefix: &str,
    key_hash: &str,
    commerce_codes: &[String],
    created_at: &str,
) -> Result<()> {
    let db = db.into();
    let mut commerce_ids = Vec::with_capacity(commerce_codes.len());
    for code in commerce_codes {
        match by_code(db, code)? {
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
    let key_id: i64 = db.query_row(
        "INSERT INTO api_keys (prefix, key_hash, all_commerces, created_at) VALUES (?1, ?2, ?3, ?4)
         RETURNING id",
        &params![prefix, key_hash, commerce_ids.is_empty(), created_at],
        |r| r.get(0),
    )?;
    for commerce_id in commerce_ids {
        db.execute(
            "INSERT INTO api_key_commerces (api_key_id, commerce_id) VALUES (?1, ?2)",
            &params![key_id, commerce_id],
        )?;
    }
    Ok(())
}

/// Names the key with `key_hash` (how staff recognise it in the list).
pub fn name_api_key<'c>(db: impl Into<Db<'c>>, key_hash: &str, name: &str) -> Result<()> {
    db.into().execute(
        "UPDATE api_keys SET name = ?2 WHERE key_hash = ?1",
        &params![key_hash, name],
    )?;
    Ok(())
}

/// Records the latest use of each key; an older time never replaces a newer one.
pub fn record_api_key_uses<'c>(db: impl Into<Db<'c>>, uses: &[(i64, String)]) -> db::Result<()> {
    let db = db.into();
    for (id, at) in uses {
        db.execute(
            "UPDATE api_keys SET last_used_at = ?2
             WHERE id = ?1 AND (last_used_at IS NULL OR last_used_at < ?2)",
            &params![id, at],
        )?;
    }
    Ok(())
}

pub fn revoke_api_key<'c>(db: impl Into<Db<'c>>, prefix: &str, at: &str) -> Result<u64> {
    credentials_changed();
    Ok(db.into().execute(
        "UPDATE api_keys SET revoked_at = ?2 WHERE prefix = ?1 AND revoked_at IS NULL",
        &params![prefix, at],
    )?)
}

pub fn insert_staff<'c>(
    db: impl Into<Db<'c>>,
    email: &str,
    password_hash: &str,
    role: &str,
    at: &str,
) -> Result<()> {
    let inserted = db.into().execute(
        "INSERT INTO staff (email, password_hash, role, created_at) VALUES (?1, ?2, ?3, ?4)
         ON CONFLICT (email) DO NOTHING",
        &params![email, password_hash, role, at],
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

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::pg_test::on_both;

    /// A commerce to hang other rows on, in the store tests of any aggregate.
    pub(crate) fn commerce(db: Db<'_>, code: &str) -> Commerce {
        insert(
            db,
            &NewCommerce {
                code,
                name: "Tienda",
                password_hash: "argon2-hash",
                channels: Some(&["WEB".to_string()]),
                payment_methods: &[PaymentMethod::CreditCard],
                webhook_secret: &Secret::new("whsec_dGVzdA==".to_string()),
                authorization_required: true,
                created_at: "2026-11-25T12:00:00.000Z",
            },
        )
        .unwrap()
    }

    fn refusal_name(error: Error) -> &'static str {
        match error {
            Error::Refused { name, .. } => name,
            other => panic!("expected a refusal, got {other}"),
        }
    }

    #[test]
    fn a_commerce_is_stored_once_per_code_and_read_back_whole() {
        on_both(|db| {
            let created = commerce(db, "76123456-0");
            assert_eq!(created.code, "76123456-0");
            assert_eq!(created.channels, Some(vec!["WEB".to_string()]));
            assert_eq!(created.payment_methods, vec![PaymentMethod::CreditCard]);
            assert!(created.authorization_required);
            assert_eq!(created.activation_mode, ActivationMode::Direct);
            assert_eq!(created.webhook_secret.expose(), "whsec_dGVzdA==");

            let again = insert(
                db,
                &NewCommerce {
                    code: "76123456-0",
                    name: "Otra",
                    password_hash: "x",
                    channels: None,
                    payment_methods: &[],
                    webhook_secret: &Secret::new("whsec_x".to_string()),
                    authorization_required: false,
                    created_at: "2026-11-25T12:00:00.000Z",
                },
            );
            assert_eq!(refusal_name(again.unwrap_err()), "COMMERCE_EXISTS");

            let by_id = by_id(db, created.id).unwrap().unwrap();
            assert_eq!(by_id.name, "Tienda");
            assert!(by_code(db, "11111111-1").unwrap().is_none());

            assert!(set_activation_mode(db, "76123456-0", ActivationMode::Signature).unwrap());
            assert!(!set_activation_mode(db, "11111111-1", ActivationMode::Signature).unwrap());
            let changed = by_code(db, "76123456-0").unwrap().unwrap();
            assert_eq!(changed.activation_mode, ActivationMode::Signature);
        });
    }

    #[test]
    fn api_keys_serve_their_commerces_until_revoked() {
        on_both(|db| {
            let one = commerce(db, "76123456-0");
            let two = commerce(db, "77123456-K");
            insert_api_key(db, "mk_one", "hash-one", &["76123456-0".to_string()], "t0").unwrap();
            insert_api_key(db, "mk_all", "hash-all", &[], "t0").unwrap();

            let key = active_api_key_by_hash(db, "hash-one").unwrap().unwrap();
            assert_eq!(key.prefix, "mk_one");
            assert!(!key.all_commerces);
            assert!(key.allows(one.id));
            assert!(!key.allows(two.id));
            let every = active_api_key_by_hash(db, "hash-all").unwrap().unwrap();
            assert!(every.all_commerces && every.allows(two.id));

            let unknown = insert_api_key(db, "mk_x", "hash-x", &["1-9".to_string()], "t0");
            assert_eq!(refusal_name(unknown.unwrap_err()), "COMMERCE_NOT_FOUND");

            assert_eq!(revoke_api_key(db, "mk_one", "t1").unwrap(), 1);
            assert_eq!(revoke_api_key(db, "mk_one", "t2").unwrap(), 0);
            assert!(active_api_key_by_hash(db, "hash-one").unwrap().is_none());
        });
    }

    #[test]
    fn a_key_s_last_use_only_moves_forward() {
        on_both(|db| {
            insert_api_key(db, "mk_all", "hash-all", &[], "t0").unwrap();
            name_api_key(db, "hash-all", "checkout").unwrap();
            let id = active_api_key_by_hash(db, "hash-all").unwrap().unwrap().id;
            let later = "2026-11-25T12:00:02.000Z".to_string();
            let earlier = "2026-11-25T12:00:01.000Z".to_string();
            record_api_key_uses(db, &[(id, later.clone()), (id, earlier)]).unwrap();
            let (name, used): (String, String) = db
                .query_row(
                    "SELECT name, last_used_at FROM api_keys WHERE id = ?1",
                    &params![id],
                    |r| Ok((r.get(0)?, r.get(1)?)),
                )
                .unwrap();
            assert_eq!((name.as_str(), used), ("checkout", later));
        });
    }

    #[test]
    fn a_staff_e_mail_is_taken_whatever_its_case() {
        on_both(|db| {
            insert_staff(db, "Ana@Tienda.cl", "hash", "admin", "t0").unwrap();
            let again = insert_staff(db, "ana@tienda.cl", "hash", "viewer", "t0");
            assert_eq!(refusal_name(again.unwrap_err()), "STAFF_EXISTS");
        });
    }
}
