//! What the developer commands read and set besides the merchant operations: the listings of
//! commerces, API keys and trusted roots (never a secret but the one asked for), and the
//! commerce's own webhook URL, where `mandato trigger` sends its events.

use super::db::{self, Db, Row, params};

#[derive(Clone, Debug)]
pub struct CommerceListing {
    pub code: String,
    pub name: String,
    pub created_at: String,
    pub webhook_url: Option<String>,
    pub channels: Option<Vec<String>>,
    pub payment_methods: Vec<i64>,
    pub authorization_required: bool,
    pub customers: i64,
    pub mandates: i64,
}

const LISTING: &str = "SELECT c.code, c.name, c.created_at, c.webhook_url, c.channels,
        c.payment_methods, c.authorization_required,
        (SELECT count(*) FROM customers WHERE commerce_id = c.id),
        (SELECT count(*) FROM mandates WHERE commerce_id = c.id)
    FROM commerces c";

fn listing(row: &Row<'_>) -> db::Result<CommerceListing> {
    let channels: Option<String> = row.get(4)?;
    let methods: String = row.get(5)?;
    Ok(CommerceListing {
        code: row.get(0)?,
        name: row.get(1)?,
        created_at: row.get(2)?,
        webhook_url: row.get(3)?,
        channels: channels.and_then(|c| serde_json::from_str(&c).ok()),
        payment_methods: serde_json::from_str(&methods).unwrap_or_default(),
        authorization_required: row.get(6)?,
        customers: row.get(7)?,
        mandates: row.get(8)?,
    })
}

/// Every commerce, in the order they were registered.
pub fn commerces<'c>(db: impl Into<Db<'c>>) -> db::Result<Vec<CommerceListing>> {
    db.into()
        .query_map(&format!("{LISTING} ORDER BY c.id"), &params![], listing)
}

pub fn commerce<'c>(db: impl Into<Db<'c>>, code: &str) -> db::Result<Option<CommerceListing>> {
    db.into().query_opt(
        &format!("{LISTING} WHERE c.code = ?1"),
        &params![code],
        listing,
    )
}

/// Sets (or with `None` clears) the commerce's webhook URL; `false` when no commerce has `code`.
pub fn set_webhook_url<'c>(
    db: impl Into<Db<'c>>,
    code: &str,
    url: Option<&str>,
) -> db::Result<bool> {
    Ok(db.into().execute(
        "UPDATE commerces SET webhook_url = ?2 WHERE code = ?1",
        &params![code, url],
    )? > 0)
}

pub fn webhook_url<'c>(db: impl Into<Db<'c>>, commerce_id: i64) -> db::Result<Option<String>> {
    Ok(db
        .into()
        .query_opt(
            "SELECT webhook_url FROM commerces WHERE id = ?1",
            &params![commerce_id],
            |r| r.get::<Option<String>>(0),
        )?
        .flatten())
}

#[derive(Clone, Debug)]
pub struct ApiKeyListing {
    pub prefix: String,
    /// What staff or the CLI called it, if anything.
    pub name: Option<String>,
    /// Empty: valid for every commerce.
    pub commerces: Vec<String>,
    pub created_at: String,
    pub revoked_at: Option<String>,
    /// The latest accepted request made with it (recorded within seconds of the request).
    pub last_used_at: Option<String>,
}

/// Every API key ever made, oldest first: its prefix and scope, never its hash.
pub fn api_keys<'c>(db: impl Into<Db<'c>>) -> db::Result<Vec<ApiKeyListing>> {
    let db = db.into();
    let keys = db.query_map(
        "SELECT id, prefix, all_commerces, created_at, revoked_at, name, last_used_at
         FROM api_keys ORDER BY id",
        &params![],
        |r| {
            Ok((
                r.get::<i64>(0)?,
                r.get::<bool>(2)?,
                ApiKeyListing {
                    prefix: r.get(1)?,
                    name: r.get(5)?,
                    commerces: Vec::new(),
                    created_at: r.get(3)?,
                    revoked_at: r.get(4)?,
                    last_used_at: r.get(6)?,
                },
            ))
        },
    )?;
    keys.into_iter()
        .map(|(id, all, mut listing)| {
            if !all {
                // Codes sort as bytes on both backends, whatever the database's collation.
                let sql = match db.backend() {
                    db::Backend::Sqlite => {
                        "SELECT c.code FROM api_key_commerces k JOIN commerces c ON c.id = k.commerce_id
                         WHERE k.api_key_id = ?1 ORDER BY c.code"
                    }
                    db::Backend::Postgres => {
                        "SELECT c.code FROM api_key_commerces k JOIN commerces c ON c.id = k.commerce_id
                         WHERE k.api_key_id = ?1 ORDER BY c.code COLLATE \"C\""
                    }
                };
                listing.commerces = db.query_map(sql, &params![id], |r| r.get(0))?;
            }
            Ok(listing)
        })
        .collect()
}

#[derive(Clone, Debug)]
pub struct EventListing {
    pub id: String,
    pub kind: String,
    pub sequence: i64,
    pub url: Option<String>,
    pub body: String,
    pub created_at: String,
}

/// The events of one mandate or signature process, in the order they were written.
pub fn events_of<'c>(
    db: impl Into<Db<'c>>,
    mandate_seq: Option<i64>,
    process_seq: Option<i64>,
) -> db::Result<Vec<EventListing>> {
    db.into().query_map(
        "SELECT id, kind, sequence, url, body, created_at FROM events
         WHERE mandate_seq = ?1 OR signature_process_seq = ?2 ORDER BY seq",
        &params![mandate_seq, process_seq],
        |r| {
            Ok(EventListing {
                id: r.get(0)?,
                kind: r.get(1)?,
                sequence: r.get(2)?,
                url: r.get(3)?,
                body: r.get(4)?,
                created_at: r.get(5)?,
            })
        },
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::commerces::tests::commerce;
    use crate::pg_test::on_both;

    #[test]
    fn commerces_are_listed_with_their_counts_and_webhook_url() {
        on_both(|db| {
            let first = commerce(db, "76123456-0");
            commerce(db, "77123456-K");
            let listed = commerces(db).unwrap();
            let codes: Vec<&str> = listed.iter().map(|c| c.code.as_str()).collect();
            assert_eq!(codes, ["76123456-0", "77123456-K"]);
            assert_eq!((listed[0].customers, listed[0].mandates), (0, 0));
            assert!(listed[0].authorization_required);

            assert!(set_webhook_url(db, "76123456-0", Some("https://example.cl/hook")).unwrap());
            assert!(!set_webhook_url(db, "11111111-1", None).unwrap());
            assert_eq!(
                webhook_url(db, first.id).unwrap().as_deref(),
                Some("https://example.cl/hook")
            );
            let one = commerce_listing(db, "76123456-0");
            assert_eq!(one.webhook_url.as_deref(), Some("https://example.cl/hook"));
            assert!(super::commerce(db, "11111111-1").unwrap().is_none());
            set_webhook_url(db, "76123456-0", None).unwrap();
            assert_eq!(webhook_url(db, first.id).unwrap(), None);
            assert!(events_of(db, Some(1), None).unwrap().is_empty());
        });
    }

    fn commerce_listing(db: Db<'_>, code: &str) -> CommerceListing {
        super::commerce(db, code).unwrap().unwrap()
    }

    #[test]
    fn api_keys_list_their_scope_in_code_order() {
        on_both(|db| {
            let b = commerce(db, "77123456-K");
            let a = commerce(db, "76123456-0");
            db.execute_batch(
                "INSERT INTO api_keys (id, prefix, key_hash, all_commerces, created_at)
                 VALUES (1, 'mk_all', 'h1', 1, '2026-11-25T10:00:00.000Z'),
                        (2, 'mk_two', 'h2', 0, '2026-11-25T11:00:00.000Z')",
            )
            .unwrap();
            for id in [b.id, a.id] {
                db.execute(
                    "INSERT INTO api_key_commerces (api_key_id, commerce_id) VALUES (2, ?1)",
                    &params![id],
                )
                .unwrap();
            }
            let keys = api_keys(db).unwrap();
            assert_eq!(keys.len(), 2);
            assert_eq!(
                (keys[0].prefix.as_str(), keys[0].commerces.len()),
                ("mk_all", 0)
            );
            assert_eq!(keys[1].commerces, ["76123456-0", "77123456-K"]);
        });
    }
}
