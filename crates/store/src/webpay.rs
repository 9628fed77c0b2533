//! Portal payments on Transbank Webpay Plus (`webpay_payments`): a transaction created for one
//! installment, from the hand-off to Webpay until its outcome is recorded here.

use super::db::{self, Db, params};

/// A Webpay Plus transaction as created.
#[derive(Debug, Clone)]
pub struct WebpayPayment {
    pub seq: i64,
    pub token: String,
    pub buy_order: String,
    pub mandate_seq: i64,
    pub commerce_id: i64,
    pub installment_seq: i64,
    /// Whole pesos.
    pub amount: i64,
    /// `STARTED`, `APPROVED`, `REFUSED`, `ABANDONED` or `REFUNDED`.
    pub state: String,
    pub response_code: Option<i64>,
    pub authorization_code: Option<String>,
    pub created_at: String,
}

pub struct NewPayment<'a> {
    pub token: &'a str,
    pub buy_order: &'a str,
    pub mandate_seq: i64,
    pub commerce_id: i64,
    pub installment_seq: i64,
    pub amount: i64,
    pub at: &'a str,
}

const COLUMNS: &str = "seq, token, buy_order, mandate_seq, commerce_id, installment_seq, amount, \
                       state, response_code, authorization_code, created_at";

fn row(r: &db::Row<'_>) -> db::Result<WebpayPayment> {
    Ok(WebpayPayment {
        seq: r.get(0)?,
        token: r.get(1)?,
        buy_order: r.get(2)?,
        mandate_seq: r.get(3)?,
        commerce_id: r.get(4)?,
        installment_seq: r.get(5)?,
        amount: r.get(6)?,
        state: r.get(7)?,
        response_code: r.get(8)?,
        authorization_code: r.get(9)?,
        created_at: r.get(10)?,
    })
}

pub fn insert<'c>(db: impl Into<Db<'c>>, p: &NewPayment<'_>) -> db::Result<()> {
    db.into().execute(
        "INSERT INTO webpay_payments
             (token, buy_order, mandate_seq, commerce_id, installment_seq, amount, created_at)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
        &params![
            p.token,
            p.buy_order,
            p.mandate_seq,
            p.commerce_id,
            p.installment_seq,
            p.amount,
            p.at
        ],
    )?;
    Ok(())
}

/// The mandate's payment with this token.
pub fn by_token<'c>(
    db: impl Into<Db<'c>>,
    token: &str,
    mandate_seq: i64,
) -> db::Result<Option<WebpayPayment>> {
    db.into().query_opt(
        &format!("SELECT {COLUMNS} FROM webpay_payments WHERE token = ?1 AND mandate_seq = ?2"),
        &params![token, mandate_seq],
        row,
    )
}

/// The mandate's payment with this buy order (Webpay's timeout return names only that).
pub fn by_buy_order<'c>(
    db: impl Into<Db<'c>>,
    buy_order: &str,
    mandate_seq: i64,
) -> db::Result<Option<WebpayPayment>> {
    db.into().query_opt(
        &format!("SELECT {COLUMNS} FROM webpay_payments WHERE buy_order = ?1 AND mandate_seq = ?2"),
        &params![buy_order, mandate_seq],
        row,
    )
}

/// The approved payment that paid this installment, if Webpay Plus paid it.
pub fn approved_for<'c>(
    db: impl Into<Db<'c>>,
    installment_seq: i64,
) -> db::Result<Option<WebpayPayment>> {
    db.into().query_opt(
        &format!(
            "SELECT {COLUMNS} FROM webpay_payments
             WHERE installment_seq = ?1 AND state = 'APPROVED' ORDER BY seq DESC LIMIT 1"
        ),
        &params![installment_seq],
        row,
    )
}

/// How many payments the mandate's link started since `since`.
pub fn started_since<'c>(db: impl Into<Db<'c>>, mandate_seq: i64, since: &str) -> db::Result<i64> {
    db.into().query_row(
        "SELECT count(*) FROM webpay_payments WHERE mandate_seq = ?1 AND created_at >= ?2",
        &params![mandate_seq, since],
        |r| r.get(0),
    )
}

/// Payments still STARTED that were created before `before`: the customer never came back,
/// or came back while this server was down. The oldest first, at most `limit`.
pub fn open_before<'c>(
    db: impl Into<Db<'c>>,
    before: &str,
    limit: i64,
) -> db::Result<Vec<WebpayPayment>> {
    db.into().query_map(
        &format!(
            "SELECT {COLUMNS} FROM webpay_payments
             WHERE state = 'STARTED' AND created_at < ?1 ORDER BY created_at LIMIT ?2"
        ),
        &params![before, limit],
        row,
    )
}

/// How a payment ended.
pub struct Ending<'a> {
    pub state: &'a str,
    pub response_code: Option<i64>,
    pub authorization_code: Option<&'a str>,
    pub at: &'a str,
}

/// Ends a STARTED payment; false when it had already ended (a second return).
pub fn end<'c>(db: impl Into<Db<'c>>, seq: i64, ending: &Ending<'_>) -> db::Result<bool> {
    let changed = db.into().execute(
        "UPDATE webpay_payments
         SET state = ?2, response_code = ?3, authorization_code = ?4, ended_at = ?5
         WHERE seq = ?1 AND state = 'STARTED'",
        &params![
            seq,
            ending.state,
            ending.response_code,
            ending.authorization_code,
            ending.at
        ],
    )?;
    Ok(changed > 0)
}

/// An APPROVED payment given back to the customer (its installment could not take it).
pub fn mark_refunded<'c>(db: impl Into<Db<'c>>, seq: i64, at: &str) -> db::Result<()> {
    db.into().execute(
        "UPDATE webpay_payments SET state = 'REFUNDED', ended_at = ?2 WHERE seq = ?1",
        &params![seq, at],
    )?;
    Ok(())
}

/// The payment `seq`, as it stands now.
pub fn by_seq<'c>(db: impl Into<Db<'c>>, seq: i64) -> db::Result<WebpayPayment> {
    db.into().query_row(
        &format!("SELECT {COLUMNS} FROM webpay_payments WHERE seq = ?1"),
        &params![seq],
        row,
    )
}

/// The mandate's installments (by sequence number) paid on Webpay Plus.
pub fn approved_installments<'c>(db: impl Into<Db<'c>>, mandate_seq: i64) -> db::Result<Vec<i64>> {
    db.into().query_map(
        "SELECT installment_seq FROM webpay_payments WHERE mandate_seq = ?1 AND state = 'APPROVED'",
        &params![mandate_seq],
        |r| r.get(0),
    )
}

/// The installments (by sequence number) with a payment still STARTED.
pub fn open_installments<'c>(db: impl Into<Db<'c>>) -> db::Result<Vec<i64>> {
    db.into().query_map(
        "SELECT DISTINCT installment_seq FROM webpay_payments WHERE state = 'STARTED'",
        &params![],
        |r| r.get(0),
    )
}
