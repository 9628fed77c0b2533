//! What a creation by the merchant's own id answered (`creation_replays`, CONTRACT 14), so
//! that the same request sent again (a retry after a lost answer) is answered the same, after
//! restarts and on any engine. Rows are written in the creation's own transaction.

use super::db::{self, Db, params};

/// The four creations keyed by a merchant id.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Creation {
    /// `POST /user`, by `customer.userId`.
    User,
    /// `POST /mandate`, by `mandate.id`.
    Mandate,
    /// `POST /installments`, by the mandate and the request's installment ids.
    Installments,
    /// `POST /signature`, by `process.externalProcessId`.
    Signature,
}

impl Creation {
    /// The `kind` column's value.
    pub fn name(self) -> &'static str {
        match self {
            Creation::User => "user",
            Creation::Mandate => "mandate",
            Creation::Installments => "installments",
            Creation::Signature => "signature",
        }
    }
}

/// One creation's request and answer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Replay {
    pub commerce_id: i64,
    pub creation: Creation,
    pub merchant_key: String,
    /// Lowercase hex SHA-256 of the request body's canonical JSON.
    pub request_sha256: String,
    /// The HTTP status answered.
    pub status: i64,
    /// The body answered, exactly.
    pub response: String,
}

/// The answer recorded for the commerce's creation with this merchant key, if any.
pub fn find<'c>(
    db: impl Into<Db<'c>>,
    commerce_id: i64,
    creation: Creation,
    merchant_key: &str,
) -> db::Result<Option<Replay>> {
    db.into().query_opt(
        "SELECT request_sha256, status, response FROM creation_replays
         WHERE commerce_id = ?1 AND kind = ?2 AND merchant_key = ?3",
        &params![commerce_id, creation.name(), merchant_key],
        |r| {
            Ok(Replay {
                commerce_id,
                creation,
                merchant_key: merchant_key.to_string(),
                request_sha256: r.get(0)?,
                status: r.get(1)?,
                response: r.get(2)?,
            })
        },
    )
}

/// Records a creation's answer. A second record for the same key is a unique violation, which
/// is what makes the later of two racing creations fail (and roll back) on PostgreSQL.
pub fn insert<'c>(db: impl Into<Db<'c>>, replay: &Replay, at: &str) -> db::Result<()> {
    write(db, replay, at, "")
}

/// Records a write's answer in place of the key's earlier one: a customer's record follows
/// its latest write, since `POST /user` with another request for the same `userId` updates.
pub fn replace<'c>(db: impl Into<Db<'c>>, replay: &Replay, at: &str) -> db::Result<()> {
    write(
        db,
        replay,
        at,
        "ON CONFLICT (commerce_id, kind, merchant_key) DO UPDATE SET
             request_sha256 = excluded.request_sha256, status = excluded.status,
             response = excluded.response, created_at = excluded.created_at",
    )
}

fn write<'c>(
    db: impl Into<Db<'c>>,
    replay: &Replay,
    at: &str,
    on_conflict: &str,
) -> db::Result<()> {
    db.into().execute(
        &format!(
            "INSERT INTO creation_replays
                 (commerce_id, kind, merchant_key, request_sha256, status, response, created_at)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7) {on_conflict}"
        ),
        &params![
            replay.commerce_id,
            replay.creation.name(),
            replay.merchant_key.as_str(),
            replay.request_sha256.as_str(),
            replay.status,
            replay.response.as_str(),
            at
        ],
    )?;
    Ok(())
}

/// Removes the commerce's records (the sandbox reset), but its customers' when they stay.
pub fn erase_for_sandbox_reset<'c>(
    db: impl Into<Db<'c>>,
    commerce_id: i64,
    keep_customers: bool,
) -> db::Result<u64> {
    let sql = if keep_customers {
        "DELETE FROM creation_replays WHERE commerce_id = ?1 AND kind <> 'user'"
    } else {
        "DELETE FROM creation_replays WHERE commerce_id = ?1"
    };
    db.into().execute(sql, &params![commerce_id])
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pg_test::on_both;

    fn replay(commerce_id: i64, creation: Creation, key: &str, sha: &str) -> Replay {
        Replay {
            commerce_id,
            creation,
            merchant_key: key.into(),
            request_sha256: sha.into(),
            status: 201,
            response: format!(r#"{{"statusCode":201,"payload":{{"id":"{key}"}}}}"#),
        }
    }

    #[test]
    fn a_creation_is_recorded_once_per_commerce_kind_and_key() {
        on_both(|db| {
            let a = crate::commerces::tests::commerce(db, "76123456-0").id;
            let b = crate::commerces::tests::commerce(db, "96543210-3").id;
            let first = replay(a, Creation::Mandate, "GYM-1", "aa");
            insert(db, &first, "t0").unwrap();
            assert_eq!(
                find(db, a, Creation::Mandate, "GYM-1").unwrap(),
                Some(first.clone())
            );
            // Another kind, another commerce: other keys.
            assert_eq!(find(db, a, Creation::User, "GYM-1").unwrap(), None);
            assert_eq!(find(db, b, Creation::Mandate, "GYM-1").unwrap(), None);
            insert(db, &replay(a, Creation::User, "GYM-1", "bb"), "t0").unwrap();
            insert(db, &replay(b, Creation::Mandate, "GYM-1", "cc"), "t0").unwrap();
        });
    }

    #[test]
    fn a_second_record_for_a_key_is_a_unique_violation() {
        on_both(|db| {
            let a = crate::commerces::tests::commerce(db, "76123456-0").id;
            insert(db, &replay(a, Creation::Signature, "P-1", "aa"), "t0").unwrap();
            let again = insert(db, &replay(a, Creation::Signature, "P-1", "bb"), "t1");
            assert!(again.unwrap_err().is_unique_violation());
        });
    }

    #[test]
    fn a_replaced_record_answers_the_latest_write() {
        on_both(|db| {
            let a = crate::commerces::tests::commerce(db, "76123456-0").id;
            replace(db, &replay(a, Creation::User, "cust-1", "aa"), "t0").unwrap();
            let updated = Replay {
                status: 200,
                ..replay(a, Creation::User, "cust-1", "bb")
            };
            replace(db, &updated, "t1").unwrap();
            assert_eq!(
                find(db, a, Creation::User, "cust-1").unwrap(),
                Some(updated)
            );
        });
    }

    #[test]
    fn the_sandbox_reset_keeps_the_customers_records_only_when_the_customers_stay() {
        on_both(|db| {
            let a = crate::commerces::tests::commerce(db, "76123456-0").id;
            let b = crate::commerces::tests::commerce(db, "96543210-3").id;
            insert(db, &replay(a, Creation::User, "cust-1", "aa"), "t0").unwrap();
            insert(db, &replay(a, Creation::Mandate, "GYM-1", "aa"), "t0").unwrap();
            insert(db, &replay(b, Creation::Mandate, "GYM-1", "aa"), "t0").unwrap();
            assert_eq!(erase_for_sandbox_reset(db, a, true).unwrap(), 1);
            assert!(find(db, a, Creation::User, "cust-1").unwrap().is_some());
            assert_eq!(erase_for_sandbox_reset(db, a, false).unwrap(), 1);
            assert!(find(db, a, Creation::User, "cust-1").unwrap().is_none());
            assert!(find(db, b, Creation::Mandate, "GYM-1").unwrap().is_some());
        });
    }
}
