//! Oneclick inscriptions started from a Magic Link (`oneclick_inscriptions`), kept until
//! Transbank brings the customer back. Only the SHA-256 of Transbank's token is stored.

use super::db::{self, Db, params};

/// An inscription as started: what the customer accepted and what finishing it does.
#[derive(Debug, Clone)]
pub struct StartedInscription {
    pub mandate_seq: i64,
    /// `ACTIVATION` or `CARD_CHANGE`.
    pub purpose: String,
    pub terms: String,
    pub ip: Option<String>,
    pub user_agent: Option<String>,
    pub state: String,
    pub created_at: String,
}

pub struct NewInscription<'a> {
    pub token_sha256: &'a str,
    pub mandate_seq: i64,
    pub purpose: &'a str,
    pub terms: &'a str,
    pub ip: Option<&'a str>,
    pub user_agent: Option<&'a str>,
    pub at: &'a str,
}

pub fn insert<'c>(db: impl Into<Db<'c>>, i: &NewInscription<'_>) -> db::Result<()> {
    db.into().execute(
        "INSERT INTO oneclick_inscriptions
             (token_sha256, mandate_seq, purpose, terms, ip, user_agent, created_at)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
        &params![
            i.token_sha256,
            i.mandate_seq,
            i.purpose,
            i.terms,
            i.ip,
            i.user_agent,
            i.at
        ],
    )?;
    Ok(())
}

/// The mandate's inscription with this token hash, whatever its state.
pub fn find<'c>(
    db: impl Into<Db<'c>>,
    token_sha256: &str,
    mandate_seq: i64,
) -> db::Result<Option<StartedInscription>> {
    let rows = db.into().query_map(
        "SELECT mandate_seq, purpose, terms, ip, user_agent, state, created_at
         FROM oneclick_inscriptions WHERE token_sha256 = ?1 AND mandate_seq = ?2",
        &params![token_sha256, mandate_seq],
        |r| {
            Ok(StartedInscription {
                mandate_seq: r.get(0)?,
                purpose: r.get(1)?,
                terms: r.get(2)?,
                ip: r.get(3)?,
                user_agent: r.get(4)?,
                state: r.get(5)?,
                created_at: r.get(6)?,
            })
        },
    )?;
    Ok(rows.into_iter().next())
}

/// How many inscriptions the mandate started since `since`.
pub fn started_since<'c>(db: impl Into<Db<'c>>, mandate_seq: i64, since: &str) -> db::Result<i64> {
    db.into().query_row(
        "SELECT count(*) FROM oneclick_inscriptions WHERE mandate_seq = ?1 AND created_at >= ?2",
        &params![mandate_seq, since],
        |r| r.get(0),
    )
}

/// Ends a STARTED inscription in `state`; false when it had already ended (a second return).
pub fn end<'c>(
    db: impl Into<Db<'c>>,
    token_sha256: &str,
    state: &str,
    at: &str,
) -> db::Result<bool> {
    let changed = db.into().execute(
        "UPDATE oneclick_inscriptions SET state = ?2, finished_at = ?3
         WHERE token_sha256 = ?1 AND state = 'STARTED'",
        &params![token_sha256, state, at],
    )?;
    Ok(changed > 0)
}
