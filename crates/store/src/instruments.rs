//! Enrolled payment instruments (tokens and masked data only) and the customer's acceptance.

use super::db::{self, Db, params};

pub struct NewInstrument<'a> {
    pub mandate_seq: i64,
    pub method_id: i64,
    pub processor_token: &'a str,
    pub brand: Option<&'a str>,
    pub last4: &'a str,
    pub bank_code: Option<&'a str>,
    pub account_type: Option<&'a str>,
    pub holder_rut: Option<&'a str>,
    pub created_at: &'a str,
}

#[derive(Debug, Clone)]
pub struct InstrumentRow {
    pub method_id: i64,
    pub processor_token: String,
    pub last4: String,
}

/// Takes a `Db` (not `impl Into<Db>`) so that it and `replace` can be passed as a function.
pub fn insert(db: Db<'_>, i: &NewInstrument<'_>) -> db::Result<()> {
    write(db, i, "")
}

/// Stores the instrument of a mandate awaiting its signature, replacing the one an earlier
/// enrolment stored (a customer who starts again after a rejected signature may enrol another).
pub fn replace(db: Db<'_>, i: &NewInstrument<'_>) -> db::Result<()> {
    write(
        db,
        i,
        "ON CONFLICT (mandate_seq) DO UPDATE SET method_id = excluded.method_id,
                processor_token = excluded.processor_token, brand = excluded.brand,
                last4 = excluded.last4, bank_code = excluded.bank_code,
                account_type = excluded.account_type, holder_rut = excluded.holder_rut,
                created_at = excluded.created_at",
    )
}

fn write(db: Db<'_>, i: &NewInstrument<'_>, on_conflict: &str) -> db::Result<()> {
    db.execute(
        &format!(
            "INSERT INTO instruments (mandate_seq, method_id, processor_token, brand, last4, bank_code,
                account_type, holder_rut, created_at)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9) {on_conflict}"
        ),
        &params![
        i.mandate_seq,
        i.method_id,
        i.processor_token,
        i.brand,
        i.last4,
        i.bank_code,
        i.account_type,
        i.holder_rut,
        i.created_at
        ],
    )?;
    Ok(())
}

pub fn for_mandate<'c>(
    db: impl Into<Db<'c>>,
    mandate_seq: i64,
) -> db::Result<Option<InstrumentRow>> {
    db.into().query_opt(
        "SELECT method_id, processor_token, last4 FROM instruments WHERE mandate_seq = ?1",
        &params![mandate_seq],
        |r| {
            Ok(InstrumentRow {
                method_id: r.get(0)?,
                processor_token: r.get(1)?,
                last4: r.get(2)?,
            })
        },
    )
}

/// The instruments of the mandates `seqs`, each with its mandate's seq, in any order. One
/// statement on PostgreSQL (a charging page's); SQLite reads each in-process.
pub fn for_mandates<'c>(
    db: impl Into<Db<'c>>,
    seqs: &[i64],
) -> db::Result<Vec<(i64, InstrumentRow)>> {
    let db = db.into();
    match db {
        Db::Sqlite(_) => {
            let mut found = Vec::with_capacity(seqs.len());
            for seq in seqs {
                found.extend(for_mandate(db, *seq)?.map(|i| (*seq, i)));
            }
            Ok(found)
        }
        Db::Postgres(_) => db.query_map(
            &format!(
                "SELECT mandate_seq, method_id, processor_token, last4 FROM instruments
                 WHERE mandate_seq = {}",
                db::ANY_KEY
            ),
            &params![db::key_array(seqs).as_str()],
            |r| {
                Ok((
                    r.get(0)?,
                    InstrumentRow {
                        method_id: r.get(1)?,
                        processor_token: r.get(2)?,
                        last4: r.get(3)?,
                    },
                ))
            },
        ),
    }
}

pub struct NewAcceptance<'a> {
    pub mandate_seq: i64,
    pub accepted_at: &'a str,
    pub ip: Option<&'a str>,
    pub user_agent: Option<&'a str>,
    pub terms: &'a str,
    pub terms_sha256: &'a str,
    pub document_sha256: Option<&'a str>,
}

pub fn insert_acceptance<'c>(db: impl Into<Db<'c>>, a: &NewAcceptance<'_>) -> db::Result<()> {
    db.into().execute(
        "INSERT INTO acceptances (mandate_seq, accepted_at, ip, user_agent, terms, terms_sha256, document_sha256)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
        &params![a.mandate_seq, a.accepted_at, a.ip, a.user_agent, a.terms, a.terms_sha256, a.document_sha256],
    )?;
    Ok(())
}

/// The customer's latest acceptance of a mandate, as recorded at activation.
#[derive(Debug, Clone)]
pub struct AcceptanceRow {
    pub accepted_at: String,
    pub ip: Option<String>,
    pub user_agent: Option<String>,
    pub terms_sha256: String,
    pub document_sha256: Option<String>,
}

pub fn latest_acceptance<'c>(
    db: impl Into<Db<'c>>,
    mandate_seq: i64,
) -> db::Result<Option<AcceptanceRow>> {
    db.into().query_opt(
        "SELECT accepted_at, ip, user_agent, terms_sha256, document_sha256 FROM acceptances
         WHERE mandate_seq = ?1 ORDER BY seq DESC LIMIT 1",
        &params![mandate_seq],
        |r| {
            Ok(AcceptanceRow {
                accepted_at: r.get(0)?,
                ip: r.get(1)?,
                user_agent: r.get(2)?,
                terms_sha256: r.get(3)?,
                document_sha256: r.get(4)?,
            })
        },
    )
}

/// The mandates (by sequence number) other than `except` whose instrument is a card of the
/// customer `customer_seq`.
pub fn other_cards_of_customer<'c>(
    db: impl Into<Db<'c>>,
    customer_seq: i64,
    except: i64,
) -> db::Result<Vec<i64>> {
    db.into().query_map(
        "SELECT i.mandate_seq FROM instruments i JOIN mandates m ON m.seq = i.mandate_seq
         WHERE m.customer_seq = ?1 AND m.seq <> ?2 AND i.method_id IN (3, 4, 11)
         ORDER BY i.mandate_seq",
        &params![customer_seq, except],
        |r| r.get(0),
    )
}

/// Points a mandate's card instrument at another card of the same customer.
pub fn repoint_card<'c>(
    db: impl Into<Db<'c>>,
    mandate_seq: i64,
    method_id: i64,
    processor_token: &str,
    brand: Option<&str>,
    last4: &str,
) -> db::Result<()> {
    db.into().execute(
        "UPDATE instruments SET method_id = ?2, processor_token = ?3, brand = ?4, last4 = ?5
         WHERE mandate_seq = ?1",
        &params![mandate_seq, method_id, processor_token, brand, last4],
    )?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mandates::tests::mandate;
    use crate::pg_test::on_both;

    fn card<'a>(mandate_seq: i64, token: &'a str, last4: &'a str) -> NewInstrument<'a> {
        NewInstrument {
            mandate_seq,
            method_id: 3,
            processor_token: token,
            brand: Some("VISA"),
            last4,
            bank_code: None,
            account_type: None,
            holder_rut: None,
            created_at: "t0",
        }
    }

    #[test]
    fn a_mandate_holds_one_instrument_and_a_new_enrolment_replaces_it() {
        on_both(|db| {
            let m = mandate(db, "m-1");
            assert!(for_mandate(db, m.seq).unwrap().is_none());
            insert(db, &card(m.seq, "tok_1", "4242")).unwrap();
            let held = for_mandate(db, m.seq).unwrap().unwrap();
            assert_eq!(
                (
                    held.method_id,
                    held.processor_token.as_str(),
                    held.last4.as_str()
                ),
                (3, "tok_1", "4242")
            );
            // A plain insert refuses a second instrument; `replace` takes its place.
            let error = insert(db, &card(m.seq, "tok_2", "1111")).unwrap_err();
            assert!(error.is_unique_violation(), "{error}");
        });
        on_both(|db| {
            let m = mandate(db, "m-1");
            insert(db, &card(m.seq, "tok_1", "4242")).unwrap();
            replace(db, &card(m.seq, "tok_2", "1111")).unwrap();
            let held = for_mandate(db, m.seq).unwrap().unwrap();
            assert_eq!(
                (held.processor_token.as_str(), held.last4.as_str()),
                ("tok_2", "1111")
            );
        });
    }

    #[test]
    fn the_latest_acceptance_is_the_one_shown() {
        on_both(|db| {
            let m = mandate(db, "m-1");
            assert!(latest_acceptance(db, m.seq).unwrap().is_none());
            for (at, sha) in [("t1", "aa"), ("t2", "bb")] {
                insert_acceptance(
                    db,
                    &NewAcceptance {
                        mandate_seq: m.seq,
                        accepted_at: at,
                        ip: Some("203.0.113.7"),
                        user_agent: None,
                        terms: "Acepto los cargos",
                        terms_sha256: sha,
                        document_sha256: None,
                    },
                )
                .unwrap();
            }
            let latest = latest_acceptance(db, m.seq).unwrap().unwrap();
            assert_eq!(
                (latest.accepted_at.as_str(), latest.terms_sha256.as_str()),
                ("t2", "bb")
            );
            assert_eq!(latest.ip.as_deref(), Some("203.0.113.7"));
        });
    }
}
