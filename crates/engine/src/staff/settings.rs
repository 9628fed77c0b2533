//! The installation's settings: commerces, API keys, trusted roots, staff accounts, the UF
//! table and the request audit's retention. Every change made by a staff member is recorded
//! in the staff audit log in the change's own transaction; the command line (no staff member,
//! `actor` None) makes the same changes through the same functions.

use std::collections::HashMap;

use chrono::{DateTime, Utc};

use mandato_core::clock::timestamp;
use mandato_core::domain::activation::ActivationMode;
use mandato_core::domain::holidays::ChargingRule;
use mandato_core::domain::state::PaymentMethod;
use mandato_core::error::{Error, Result};
use mandato_core::secret::Secret;
use mandato_store::db::Db;
use mandato_store::staff::{self, Role};
use mandato_store::staff_views::{self as views, ApiKeyLine, CommerceLine, RootLine, StaffLine};
use mandato_store::{commerces, deliveries};

use crate::Engine;
use crate::notify::tls::RootCert;

/// Records a staff member's change in the staff audit log.
pub fn record(
    tx: Db<'_>,
    actor: &str,
    now: DateTime<Utc>,
    action: &str,
    target: &str,
    detail: Option<&str>,
) -> Result<()> {
    Ok(staff::record_action(
        tx,
        &timestamp(now),
        actor,
        action,
        Some(target),
        detail,
    )?)
}

fn record_by(
    tx: Db<'_>,
    actor: Option<&str>,
    now: DateTime<Utc>,
    action: &str,
    target: &str,
    detail: Option<&str>,
) -> Result<()> {
    match actor {
        Some(actor) => record(tx, actor, now, action, target, detail),
        None => Ok(()),
    }
}

/// A commerce to register, validated.
pub struct NewCommerce<'a> {
    pub code: &'a str,
    pub name: &'a str,
    pub password_hash: &'a str,
    pub channels: &'a [String],
    pub payment_methods: &'a [PaymentMethod],
    pub webhook_secret: &'a Secret<String>,
    pub authorization_required: bool,
}

/// Registers a commerce (staff's Settings and `mandato commerce create`).
pub fn create_commerce(
    tx: Db<'_>,
    actor: Option<&str>,
    now: DateTime<Utc>,
    new: &NewCommerce<'_>,
) -> Result<()> {
    commerces::insert(
        tx,
        &commerces::NewCommerce {
            code: new.code,
            name: new.name,
            password_hash: new.password_hash,
            channels: (!new.channels.is_empty()).then_some(new.channels),
            payment_methods: new.payment_methods,
            webhook_secret: new.webhook_secret,
            authorization_required: new.authorization_required,
            created_at: &timestamp(now),
        },
    )?;
    record_by(tx, actor, now, "commerce.create", new.code, Some(new.name))
}

/// Stores a new API key (its hash) for the commerces named, or every commerce when none
/// (staff's Settings and `mandato apikey create`).
pub fn create_api_key(
    tx: Db<'_>,
    actor: Option<&str>,
    now: DateTime<Utc>,
    key: &crate::auth::api_key::NewApiKey,
    codes: &[String],
    name: Option<&str>,
) -> Result<()> {
    commerces::insert_api_key(tx, &key.prefix, &key.hash, codes, &timestamp(now))?;
    if let Some(name) = name {
        commerces::name_api_key(tx, &key.hash, name)?;
    }
    let scope = if codes.is_empty() {
        "every commerce".to_string()
    } else {
        codes.join(",")
    };
    record_by(tx, actor, now, "api-key.create", &key.prefix, Some(&scope))
}

/// Revokes the active API keys with this prefix (`API_KEY_NOT_FOUND` when none); answers how
/// many.
pub fn revoke_api_key(
    tx: Db<'_>,
    actor: Option<&str>,
    now: DateTime<Utc>,
    prefix: &str,
) -> Result<u64> {
    let revoked = commerces::revoke_api_key(tx, prefix, &timestamp(now))?;
    if revoked == 0 {
        return Err(Error::not_found("API key"));
    }
    record_by(tx, actor, now, "api-key.revoke", prefix, None)?;
    Ok(revoked)
}

/// Creates a staff account with a password already hashed (staff's Settings and
/// `mandato staff add`).
pub fn create_staff(
    tx: Db<'_>,
    actor: Option<&str>,
    now: DateTime<Utc>,
    email: &str,
    password_hash: &str,
    role: Role,
) -> Result<()> {
    commerces::insert_staff(tx, email, password_hash, role.as_str(), &timestamp(now))?;
    record_by(tx, actor, now, "staff.create", email, Some(role.as_str()))
}

/// Trusts the roots not trusted yet; answers the subjects of those added.
pub fn add_trusted_roots(
    tx: Db<'_>,
    actor: Option<&str>,
    now: DateTime<Utc>,
    roots: &[RootCert],
) -> Result<Vec<String>> {
    let mut added = Vec::new();
    for root in roots {
        if deliveries::add_trusted_root(
            tx,
            &root.pem,
            &root.fingerprint,
            &root.subject,
            &timestamp(now),
        )? {
            record_by(
                tx,
                actor,
                now,
                "trusted-root.add",
                &root.fingerprint,
                Some(&root.subject),
            )?;
            added.push(root.subject.clone());
        }
    }
    Ok(added)
}

/// A change to a staff account: `None` keeps what it is.
pub struct StaffChange {
    pub role: Option<Role>,
    pub disabled: Option<bool>,
}

/// Changes another staff member's role or access. An admin never changes their own account
/// here (`OWN_ACCOUNT`), and the installation keeps at least one active admin (`LAST_ADMIN`).
fn update_staff(
    tx: Db<'_>,
    actor: &str,
    now: DateTime<Utc>,
    email: &str,
    change: &StaffChange,
) -> Result<StaffLine> {
    refuse_own_account(actor, email, "ask another admin to change your own account")?;
    let current = views::staff_member(tx, email)?.ok_or(Error::not_found("staff member"))?;
    let new_role = change
        .role
        .map_or(current.role.clone(), |r| r.as_str().to_string());
    let disabled_at = match change.disabled {
        None => current.disabled_at.clone(),
        Some(false) => None,
        Some(true) => current.disabled_at.clone().or_else(|| Some(timestamp(now))),
    };
    let was_admin = current.role == "admin" && current.disabled_at.is_none();
    let stays_admin = new_role == "admin" && disabled_at.is_none();
    if was_admin && !stays_admin && views::active_admins(tx)? <= 1 {
        return Err(Error::refused(
            "LAST_ADMIN",
            "the installation needs at least one active admin",
        ));
    }
    views::update_staff(tx, &current.email, &new_role, disabled_at.as_deref())?;
    let disabled = if disabled_at.is_some() {
        ", disabled"
    } else {
        ""
    };
    let detail = format!("role={}->{new_role}{disabled}", current.role);
    record(
        tx,
        actor,
        now,
        "staff.update",
        &current.email,
        Some(&detail),
    )?;
    views::staff_member(tx, &current.email)?.ok_or(Error::not_found("staff member"))
}

fn refuse_own_account(actor: &str, email: &str, message: &str) -> Result<()> {
    if email.eq_ignore_ascii_case(actor) {
        return Err(Error::refused("OWN_ACCOUNT", message));
    }
    Ok(())
}

const TEMPORARY_ALPHABET: &[u8; 32] = b"abcdefghjkmnpqrstuvwxyz23456789A";

/// A temporary password to read out: 16 characters from an alphabet without look-alikes, in
/// groups of four (80 bits).
pub fn temporary_password() -> Secret<String> {
    use rand::RngCore;
    let mut bytes = [0u8; 16];
    rand::rng().fill_bytes(&mut bytes);
    let chars: Vec<char> = bytes
        .iter()
        .map(|b| char::from(TEMPORARY_ALPHABET[usize::from(b % 32)]))
        .collect();
    Secret::new(
        chars
            .chunks(4)
            .map(|c| c.iter().collect::<String>())
            .collect::<Vec<_>>()
            .join("-"),
    )
}

/// A page of the UF table, newest first, and the table's extent.
pub struct UfPage {
    /// `(date, value)`, at most `limit + 1`: one more tells that a next page exists.
    pub rows: Vec<(String, String)>,
    pub total: i64,
    pub first_date: Option<String>,
    pub last_date: Option<String>,
}

impl Engine {
    /// Runs a staff change in one transaction without holding an async worker while the
    /// commit waits for the disk.
    fn staff_write<T>(&self, change: impl FnOnce(Db<'_>) -> Result<T>) -> Result<T> {
        tokio::task::block_in_place(|| self.store().write(change))
    }

    /// Whether the installation has no staff account yet (its first visitor creates the owner).
    pub fn has_no_staff(&self) -> Result<bool> {
        Ok(self.store().read(|c| Ok(staff::count(c)?))? == 0)
    }

    /// Every commerce, and each one's charging rule by code.
    pub fn commerces(&self) -> Result<(Vec<CommerceLine>, HashMap<String, ChargingRule>)> {
        self.store().read(|c| {
            Ok((
                views::commerces(c)?,
                mandato_store::calendar::charging_rules(c)?,
            ))
        })
    }

    pub fn create_commerce(&self, actor: &str, new: &NewCommerce<'_>) -> Result<()> {
        let now = self.clock.now();
        self.staff_write(|tx| create_commerce(tx, Some(actor), now, new))
    }

    /// Sets a commerce's retry days (`{"afterDays": [...]}`), or its default with `None`.
    pub fn set_retry_policy(&self, actor: &str, code: &str, policy: Option<&str>) -> Result<()> {
        let now = self.clock.now();
        self.staff_write(|tx| {
            if !views::set_retry_policy(tx, code, policy)? {
                return Err(Error::not_found("commerce"));
            }
            let detail = policy.unwrap_or("default");
            record(tx, actor, now, "commerce.retry-policy", code, Some(detail))
        })
    }

    pub fn set_activation_mode(&self, actor: &str, code: &str, mode: ActivationMode) -> Result<()> {
        let now = self.clock.now();
        self.staff_write(|tx| {
            if !commerces::set_activation_mode(tx, code, mode)? {
                return Err(Error::not_found("commerce"));
            }
            let detail = Some(mode.name());
            record(tx, actor, now, "commerce.activation-mode", code, detail)
        })
    }

    /// Sets (or with `None` clears) a commerce's webhook URL, already checked by the caller.
    pub fn set_commerce_webhook_url(
        &self,
        actor: &str,
        code: &str,
        url: Option<&str>,
    ) -> Result<()> {
        let now = self.clock.now();
        self.staff_write(|tx| {
            if !mandato_store::dev_tools::set_webhook_url(tx, code, url)? {
                return Err(Error::not_found("commerce"));
            }
            record(
                tx,
                actor,
                now,
                "commerce.webhook-url",
                code,
                Some(url.unwrap_or("none")),
            )
        })
    }

    pub fn api_keys(&self) -> Result<Vec<ApiKeyLine>> {
        self.store().read(|c| Ok(views::api_keys(c)?))
    }

    /// Stores a new API key (its hash) for the commerces named, or every commerce when none.
    pub fn create_api_key(
        &self,
        actor: &str,
        key: &crate::auth::api_key::NewApiKey,
        codes: &[String],
        name: Option<&str>,
    ) -> Result<()> {
        let now = self.clock.now();
        self.staff_write(|tx| create_api_key(tx, Some(actor), now, key, codes, name))
    }

    pub fn revoke_api_key(&self, actor: &str, prefix: &str) -> Result<()> {
        let now = self.clock.now();
        self.staff_write(|tx| revoke_api_key(tx, Some(actor), now, prefix).map(drop))
    }

    pub fn trusted_roots(&self) -> Result<Vec<RootLine>> {
        self.store().read(|c| Ok(views::trusted_roots(c)?))
    }

    pub fn add_trusted_roots(&self, actor: &str, roots: &[RootCert]) -> Result<Vec<String>> {
        let now = self.clock.now();
        self.staff_write(|tx| add_trusted_roots(tx, Some(actor), now, roots))
    }

    pub fn remove_trusted_root(&self, actor: &str, fingerprint: &str) -> Result<()> {
        let now = self.clock.now();
        self.staff_write(|tx| {
            if !views::remove_trusted_root(tx, fingerprint)? {
                return Err(Error::not_found("trusted root"));
            }
            record(tx, actor, now, "trusted-root.remove", fingerprint, None)
        })
    }

    pub fn staff_members(&self) -> Result<Vec<StaffLine>> {
        self.store().read(|c| Ok(views::staff_members(c)?))
    }

    /// Creates a staff account with a password already hashed.
    pub fn create_staff(
        &self,
        actor: &str,
        email: &str,
        password_hash: &str,
        role: Role,
    ) -> Result<StaffLine> {
        let now = self.clock.now();
        self.staff_write(|tx| {
            create_staff(tx, Some(actor), now, email, password_hash, role)?;
            views::staff_member(tx, email)?.ok_or(Error::not_found("staff member"))
        })
    }

    pub fn update_staff(
        &self,
        actor: &str,
        email: &str,
        change: &StaffChange,
    ) -> Result<StaffLine> {
        let now = self.clock.now();
        self.staff_write(|tx| update_staff(tx, actor, now, email, change))
    }

    /// Gives another staff member a temporary password (shown once, to be changed at their next
    /// sign-in) and ends their sessions; answers their e-mail and the password.
    pub async fn reset_staff_password(
        &self,
        actor: &str,
        email: &str,
    ) -> Result<(String, Secret<String>)> {
        refuse_own_account(
            actor,
            email,
            "change your own password with your current one",
        )?;
        let exists = self.store().read(|c| Ok(staff::id_by_email(c, email)?))?;
        if exists.is_none() {
            return Err(Error::not_found("staff member"));
        }
        let temporary = temporary_password();
        let hash = crate::auth::password::hash(Secret::new(temporary.expose().clone()))
            .await
            .map_err(Error::Internal)?;
        let now = self.clock.now();
        let email = self.staff_write(|tx| {
            let id = staff::id_by_email(tx, email)?.ok_or(Error::not_found("staff member"))?;
            staff::set_password(tx, id, &hash, true)?;
            staff::end_sessions(tx, id, None)?;
            let member = views::staff_member(tx, email)?.ok_or(Error::not_found("staff member"))?;
            record(tx, actor, now, "staff.password-reset", &member.email, None)?;
            Ok(member.email)
        })?;
        Ok((email, temporary))
    }

    /// UF values before `before` (newest first), at most `limit + 1`.
    pub fn uf_values(&self, before: Option<&str>, limit: i64) -> Result<UfPage> {
        self.store().read(|c| {
            let rows = mandato_store::charging::uf_values(c, before, limit + 1)?;
            let (total, first_date, last_date) = mandato_store::charging::uf_coverage(c)?;
            Ok(UfPage {
                rows,
                total,
                first_date,
                last_date,
            })
        })
    }

    /// How many days request logs are kept.
    pub fn audit_retention_days(&self) -> Result<i64> {
        use mandato_store::audit::{DEFAULT_RETENTION_DAYS, retention_days};
        self.store()
            .read(|c| Ok(retention_days(c).unwrap_or(DEFAULT_RETENTION_DAYS)))
    }

    /// Sets how many days request logs are kept (`AUDIT_RETENTION_DAYS`), and prunes soon.
    pub fn set_audit_retention_days(&self, actor: &str, days: i64) -> Result<()> {
        if !AUDIT_RETENTION_DAYS.contains(&days) {
            return Err(Error::validation("days", "OUT_OF_RANGE", "1 to 3650 days"));
        }
        let now = self.clock.now();
        self.staff_write(|tx| {
            mandato_store::audit::set_retention_days(tx, days)?;
            let detail = format!("days={days}");
            record(
                tx,
                actor,
                now,
                "audit-retention.set",
                "audit",
                Some(&detail),
            )
        })?;
        self.audit.prune_soon();
        Ok(())
    }
}

/// The days request logs may be kept.
pub const AUDIT_RETENTION_DAYS: std::ops::RangeInclusive<i64> =
    mandato_store::audit::RETENTION_RANGE;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_temporary_password_is_long_and_easy_to_read_out() {
        let password = temporary_password();
        let text = password.expose();
        assert_eq!(text.len(), 19);
        assert_eq!(text.split('-').count(), 4);
        assert!(
            text.chars()
                .filter(|c| *c != '-')
                .all(|c| TEMPORARY_ALPHABET.contains(&(c as u8)))
        );
    }
}
