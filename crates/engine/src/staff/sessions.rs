//! Staff accounts signing in and out: the owner's first account, sessions, password changes,
//! and the sign-in throttle shared with the merchant API's login.

use mandato_core::auth::throttle::{Decision, ThrottleKey};
use mandato_core::clock::timestamp;
use mandato_core::error::{Error, Result};
use mandato_store::login_throttle;
use mandato_store::staff::{self, NewSession, Session, StaffMember};

use crate::Engine;

/// A session to open: the hashes and times are the caller's (the token itself is never stored).
pub struct SessionStart<'a> {
    pub token_hash: &'a str,
    pub csrf_token: &'a str,
    pub expires_at: &'a str,
}

impl Engine {
    /// Counts a sign-in attempt for `key` now, or answers that the key is locked.
    pub async fn begin_sign_in(&self, key: &ThrottleKey) -> Result<Decision> {
        let now = self.clock.now();
        let counted = key.clone();
        self.store()
            .write_grouped(move |tx| Ok(login_throttle::begin(tx, &counted, now)?))
            .await
    }

    /// The attempt succeeded: its key's failures are forgotten.
    pub async fn sign_in_succeeded(&self, key: ThrottleKey) -> Result<()> {
        self.store()
            .write_grouped(move |tx| Ok(login_throttle::clear(tx, &key)?))
            .await
    }

    /// The attempt guessed nothing (a malformed request): it does not count.
    pub async fn withdraw_sign_in(&self, key: ThrottleKey) -> Result<()> {
        self.store()
            .write_grouped(move |tx| Ok(login_throttle::withdraw(tx, &key)?))
            .await
    }

    pub fn staff_by_email(&self, email: &str) -> Result<Option<StaffMember>> {
        self.store().read(|c| Ok(staff::by_email(c, email)?))
    }

    /// The installation's owner: its first enabled admin.
    pub fn owner(&self) -> Result<Option<StaffMember>> {
        self.store().read(|c| Ok(staff::owner(c)?))
    }

    /// Creates the first (owner, admin) account; false when the installation already has one
    /// (another first visitor won the race).
    pub fn create_owner(
        &self,
        email: &str,
        password_hash: &str,
        via: Option<&str>,
    ) -> Result<bool> {
        let now = timestamp(self.clock.now());
        self.store()
            .write(|tx| staff::create_owner(tx, email, password_hash, &now, via))
    }

    pub fn session(&self, token_hash: &str) -> Result<Option<Session>> {
        self.store().read(|c| Ok(staff::session(c, token_hash)?))
    }

    /// Marks the session seen now (its idle expiry slides).
    pub fn touch_session(&self, token_hash: &str) -> Result<()> {
        let now = timestamp(self.clock.now());
        self.store()
            .write(|tx| Ok(staff::touch_session(tx, token_hash, &now)?))
    }

    /// Opens a session for `member` and records the sign-in.
    pub fn start_session(&self, member: &StaffMember, start: &SessionStart<'_>) -> Result<()> {
        let now = timestamp(self.clock.now());
        self.store().write(|tx| {
            staff::insert_session(
                tx,
                &NewSession {
                    token_hash: start.token_hash,
                    staff_id: member.id,
                    csrf_token: start.csrf_token,
                    now: &now,
                    expires_at: start.expires_at,
                },
            )?;
            Ok(staff::record_action(
                tx,
                &now,
                &member.email,
                "sign-in",
                None,
                None,
            )?)
        })
    }

    /// Ends a session and records the sign-out.
    pub fn end_session(&self, member: &StaffMember, token_hash: &str) -> Result<()> {
        let now = timestamp(self.clock.now());
        self.store().write(|tx| {
            staff::delete_session(tx, token_hash)?;
            Ok(staff::record_action(
                tx,
                &now,
                &member.email,
                "sign-out",
                None,
                None,
            )?)
        })
    }

    /// Sets a member's own new password (hashed) and ends their other sessions; answers the
    /// session that stays.
    pub fn change_own_password(
        &self,
        member: &StaffMember,
        token_hash: &str,
        password_hash: &str,
    ) -> Result<Session> {
        let now = timestamp(self.clock.now());
        self.store().write(|tx| {
            staff::set_password(tx, member.id, password_hash, false)?;
            let ended = staff::end_sessions(tx, member.id, Some(token_hash))?;
            let detail = format!("other sessions ended: {ended}");
            staff::record_action(
                tx,
                &now,
                &member.email,
                "password.change",
                Some(&member.email),
                Some(&detail),
            )?;
            staff::session(tx, token_hash)?
                .ok_or_else(|| Error::Internal(anyhow::anyhow!("session vanished")))
        })
    }

    /// Records a staff member's action in the staff audit log, in its own transaction.
    pub fn record_staff_action(
        &self,
        actor: &str,
        action: &str,
        target: Option<&str>,
    ) -> Result<()> {
        let now = timestamp(self.clock.now());
        self.store()
            .write(|tx| Ok(staff::record_action(tx, &now, actor, action, target, None)?))
    }
}
