//! What the developer commands read and set besides the merchant operations: the listings of
//! commerces, API keys and trusted roots (never a secret but the one asked for), and the
//! commerce's own webhook URL, where `mandato trigger` sends its events.

use rusqlite::{Connection, params};

use super::optional;

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

fn listing(row: &rusqlite::Row<'_>) -> rusqlite::Result<CommerceListing> {
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
pub fn commerces(conn: &Connection) -> rusqlite::Result<Vec<CommerceListing>> {
    conn.prepare(&format!("{LISTING} ORDER BY c.id"))?
        .query_map([], listing)?
        .collect()
}

pub fn commerce(conn: &Connection, code: &str) -> rusqlite::Result<Option<CommerceListing>> {
    optional(
        conn.prepare(&format!("{LISTING} WHERE c.code = ?1"))?
            .query_row([code], listing),
    )
}

/// Sets (or with `None` clears) the commerce's webhook URL; `false` when no commerce has `code`.
pub fn set_webhook_url(conn: &Connection, code: &str, url: Option<&str>) -> rusqlite::Result<bool> {
    Ok(conn.execute(
        "UPDATE commerces SET webhook_url = ?2 WHERE code = ?1",
        params![code, url],
    )? > 0)
}

pub fn webhook_url(conn: &Connection, commerce_id: i64) -> rusqlite::Result<Option<String>> {
    Ok(optional(conn.query_row(
        "SELECT webhook_url FROM commerces WHERE id = ?1",
        [commerce_id],
        |r| r.get::<_, Option<String>>(0),
    ))?
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
pub fn api_keys(conn: &Connection) -> rusqlite::Result<Vec<ApiKeyListing>> {
    let mut scope = conn.prepare(
        "SELECT c.code FROM api_key_commerces k JOIN commerces c ON c.id = k.commerce_id
         WHERE k.api_key_id = ?1 ORDER BY c.code",
    )?;
    let keys = conn
        .prepare(
            "SELECT id, prefix, all_commerces, created_at, revoked_at, name, last_used_at
             FROM api_keys ORDER BY id",
        )?
        .query_map([], |r| {
            Ok((
                r.get::<_, i64>(0)?,
                r.get::<_, bool>(2)?,
                ApiKeyListing {
                    prefix: r.get(1)?,
                    name: r.get(5)?,
                    commerces: Vec::new(),
                    created_at: r.get(3)?,
                    revoked_at: r.get(4)?,
                    last_used_at: r.get(6)?,
                },
            ))
        })?
        .collect::<rusqlite::Result<Vec<_>>>()?;
    keys.into_iter()
        .map(|(id, all, mut listing)| {
            if !all {
                listing.commerces = scope
                    .query_map([id], |r| r.get(0))?
                    .collect::<rusqlite::Result<Vec<String>>>()?;
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
pub fn events_of(
    conn: &Connection,
    mandate_seq: Option<i64>,
    process_seq: Option<i64>,
) -> rusqlite::Result<Vec<EventListing>> {
    conn.prepare(
        "SELECT id, kind, sequence, url, body, created_at FROM events
         WHERE mandate_seq = ?1 OR signature_process_seq = ?2 ORDER BY seq",
    )?
    .query_map(params![mandate_seq, process_seq], |r| {
        Ok(EventListing {
            id: r.get(0)?,
            kind: r.get(1)?,
            sequence: r.get(2)?,
            url: r.get(3)?,
            body: r.get(4)?,
            created_at: r.get(5)?,
        })
    })?
    .collect()
}
