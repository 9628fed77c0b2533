//! Each commerce's acquirer per rail (`acquirers`): its kind, its public terms as JSON, where
//! its API is, and its secret. The store keeps what the engine checked; it decides nothing.

use mandato_core::secret::Secret;

use super::db::{self, Db, params};

/// A rail's acquirer as stored.
#[derive(Debug)]
pub struct AcquirerRow {
    pub rail: String,
    pub kind: String,
    /// JSON: Transbank's `{"mallCode", "childCode", "webpayCode"}`, Fintoc's `{"publicKey"}`,
    /// `{}` for the simulation.
    pub terms: String,
    pub base_url: Option<String>,
    pub secret: Option<Secret<String>>,
    /// Fintoc's webhook endpoint secret, when one is set.
    pub webhook_secret: Option<Secret<String>>,
    pub updated_at: String,
}

/// A rail's acquirer to store (replacing the rail's previous one).
pub struct NewAcquirer<'a> {
    pub commerce_id: i64,
    pub rail: &'a str,
    pub kind: &'a str,
    pub terms: &'a str,
    pub base_url: Option<&'a str>,
    pub secret: Option<&'a Secret<String>>,
    pub webhook_secret: Option<&'a Secret<String>>,
    pub at: &'a str,
}

pub fn set<'c>(db: impl Into<Db<'c>>, a: &NewAcquirer<'_>) -> db::Result<()> {
    db.into().execute(
        "INSERT INTO acquirers (commerce_id, rail, kind, terms, base_url, secret, webhook_secret,
             updated_at)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)
         ON CONFLICT (commerce_id, rail) DO UPDATE SET kind = excluded.kind,
             terms = excluded.terms, base_url = excluded.base_url, secret = excluded.secret,
             webhook_secret = excluded.webhook_secret, updated_at = excluded.updated_at",
        &params![
            a.commerce_id,
            a.rail,
            a.kind,
            a.terms,
            a.base_url,
            a.secret.map(|s| s.expose().as_str()),
            a.webhook_secret.map(|s| s.expose().as_str()),
            a.at
        ],
    )?;
    Ok(())
}

/// The commerce's acquirers, cards first.
pub fn of_commerce<'c>(db: impl Into<Db<'c>>, commerce_id: i64) -> db::Result<Vec<AcquirerRow>> {
    db.into().query_map(
        "SELECT rail, kind, terms, base_url, secret, webhook_secret, updated_at FROM acquirers
         WHERE commerce_id = ?1 ORDER BY CASE rail WHEN 'cards' THEN 0 ELSE 1 END",
        &params![commerce_id],
        |r| {
            Ok(AcquirerRow {
                rail: r.get(0)?,
                kind: r.get(1)?,
                terms: r.get(2)?,
                base_url: r.get(3)?,
                secret: r.get::<Option<String>>(4)?.map(Secret::new),
                webhook_secret: r.get::<Option<String>>(5)?.map(Secret::new),
                updated_at: r.get(6)?,
            })
        },
    )
}

/// Every commerce's id and code, for the rails that check each one.
pub fn commerce_codes<'c>(db: impl Into<Db<'c>>) -> db::Result<Vec<(i64, String)>> {
    db.into().query_map(
        "SELECT id, code FROM commerces ORDER BY id",
        &params![],
        |r| Ok((r.get(0)?, r.get(1)?)),
    )
}

/// Every commerce whose bank rail is Fintoc with a webhook secret, and that secret: the
/// candidates a `Fintoc-Signature` is checked against.
pub fn fintoc_webhook_secrets<'c>(db: impl Into<Db<'c>>) -> db::Result<Vec<(i64, Secret<String>)>> {
    db.into().query_map(
        "SELECT commerce_id, webhook_secret FROM acquirers
         WHERE rail = 'bank' AND kind = 'fintoc' AND webhook_secret IS NOT NULL
         ORDER BY commerce_id",
        &params![],
        |r| Ok((r.get(0)?, Secret::new(r.get::<String>(1)?))),
    )
}

/// Removes a rail's acquirer; false when it had none.
pub fn remove<'c>(db: impl Into<Db<'c>>, commerce_id: i64, rail: &str) -> db::Result<bool> {
    let removed = db.into().execute(
        "DELETE FROM acquirers WHERE commerce_id = ?1 AND rail = ?2",
        &params![commerce_id, rail],
    )?;
    Ok(removed > 0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pg_test::on_both;

    #[test]
    fn a_rail_holds_one_acquirer_and_can_be_emptied() {
        on_both(|db| {
            let commerce = crate::commerces::tests::commerce(db, "76123456-0").id;
            let secret = Secret::new("sk_test_1".to_string());
            let mut fintoc = NewAcquirer {
                commerce_id: commerce,
                rail: "bank",
                kind: "fintoc",
                terms: r#"{"publicKey":"pk_test_1"}"#,
                base_url: Some("https://api.fintoc.com"),
                secret: Some(&secret),
                webhook_secret: Some(&secret),
                at: "2026-11-28T12:00:00.000Z",
            };
            set(db, &fintoc).unwrap();
            let secrets = fintoc_webhook_secrets(db).unwrap();
            assert_eq!(secrets.len(), 1);
            assert_eq!(secrets[0].0, commerce);
            fintoc.kind = "simulated";
            fintoc.terms = "{}";
            fintoc.secret = None;
            fintoc.webhook_secret = None;
            set(db, &fintoc).unwrap();
            assert!(fintoc_webhook_secrets(db).unwrap().is_empty());
            let rows = of_commerce(db, commerce).unwrap();
            assert_eq!(rows.len(), 1);
            assert_eq!(rows[0].kind, "simulated");
            assert!(rows[0].secret.is_none());
            assert!(remove(db, commerce, "bank").unwrap());
            assert!(!remove(db, commerce, "bank").unwrap());
        });
    }
}
