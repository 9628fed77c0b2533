//! What the staff UI reads across commerces: dashboard counts, customer search, the mandates
//! list, a mandate's history, settings and the audit logs; and the few settings it changes.
//!
//! Lists are newest first unless another sort is asked for, and keyset-paged: a page asks for
//! the rows after the last one it showed (in the sort's order), never for an offset, so a page
//! costs the same at row 200,000 as at row 50. The indexes of `0006_staff_views.sql` give each
//! filter its rows already in that order; `0020_staff_search.sql` adds the other sorts' indexes
//! and the trigram indexes text searches read.

use super::StoredJson;
use super::customers::CustomerRow;
use super::db::{self, Backend, Db, Param, Row, params};
use super::sandbox_reset::{TRIGGER_MANDATE_IDS, TRIGGER_MANDATES};

/// Where a page starts: the sort key and `seq` of the last row of the previous page.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Keyset {
    /// The value of the sorted column (the creation time when sorted by it).
    pub key: String,
    pub seq: i64,
}

impl Keyset {
    /// The opaque cursor handed to clients: `<seq>.<key>`.
    pub fn encode(&self) -> String {
        format!("{}.{}", self.seq, self.key)
    }

    pub fn decode(text: &str) -> Option<Keyset> {
        let (seq, key) = text.split_once('.')?;
        Some(Keyset {
            key: key.to_string(),
            seq: seq.parse().ok()?,
        })
    }
}

/// The way a list is read: by which column, and which way.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Sort<C> {
    pub column: C,
    pub descending: bool,
}

impl<C: Default> Default for Sort<C> {
    /// Newest first, the lists' order when none is asked for.
    fn default() -> Self {
        Sort {
            column: C::default(),
            descending: true,
        }
    }
}

/// The columns the mandates list can be sorted by; each one is read in order from an index.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum MandateColumn {
    #[default]
    CreatedAt,
    /// The merchant's mandate id (`mandates_by_external_id`).
    MandateId,
}

impl MandateColumn {
    /// The column as the query orders it: texts compare as bytes on both backends (SQLite's
    /// BINARY), whatever PostgreSQL's database collation.
    fn expression(self, backend: Backend) -> &'static str {
        match (self, backend) {
            (MandateColumn::CreatedAt, _) => "m.created_at",
            (MandateColumn::MandateId, Backend::Sqlite) => "m.external_id",
            (MandateColumn::MandateId, Backend::Postgres) => "m.external_id COLLATE \"C\"",
        }
    }

    /// The cursor key of a row in this order.
    pub fn key_of(self, line: &MandateLine) -> String {
        match self {
            MandateColumn::CreatedAt => line.created_at.clone(),
            MandateColumn::MandateId => line.external_id.clone(),
        }
    }
}

/// The columns the customers list can be sorted by; each one is read in order from an index.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum CustomerColumn {
    #[default]
    CreatedAt,
    /// The last name, case-insensitively (`customers_by_last_name`).
    LastName,
}

impl CustomerColumn {
    /// The column as the query orders it, and the cursor key as it is compared with it.
    /// SQLite's NOCASE folds ASCII letters and compares bytes; PostgreSQL's lower case under
    /// the "C" collation does the same (`customers_by_last_name` holds that expression).
    fn expression(self, backend: Backend) -> (&'static str, &'static str) {
        match (self, backend) {
            (CustomerColumn::CreatedAt, _) => ("c.created_at", "?"),
            (CustomerColumn::LastName, Backend::Sqlite) => ("c.last_name COLLATE NOCASE", "?"),
            (CustomerColumn::LastName, Backend::Postgres) => {
                ("lower(c.last_name) COLLATE \"C\"", "lower(CAST(? AS TEXT))")
            }
        }
    }

    /// The cursor key of a row in this order.
    pub fn key_of(self, customer: &CustomerRow) -> String {
        match self {
            CustomerColumn::CreatedAt => customer.created_at.clone(),
            CustomerColumn::LastName => customer.last_name.clone(),
        }
    }
}

/// An argument of a query built from its parts, owned by the query.
#[derive(Debug, Clone)]
enum Arg {
    Int(i64),
    Text(String),
}

impl From<i64> for Arg {
    fn from(v: i64) -> Self {
        Arg::Int(v)
    }
}

impl From<String> for Arg {
    fn from(v: String) -> Self {
        Arg::Text(v)
    }
}

impl Arg {
    fn param(&self) -> Param<'_> {
        match self {
            Arg::Int(v) => Param::Int(*v),
            Arg::Text(v) => Param::Text(v),
        }
    }
}

/// Builds a `WHERE` clause and its arguments one condition at a time.
struct Query {
    backend: Backend,
    sql: String,
    args: Vec<Arg>,
}

impl Query {
    fn new(backend: Backend, select: &str) -> Self {
        Query {
            backend,
            sql: format!("{select} WHERE 1 = 1"),
            args: Vec::new(),
        }
    }

    fn and(&mut self, clause: &str, values: impl IntoIterator<Item = Arg>) {
        self.sql.push_str(" AND ");
        self.sql.push_str(clause);
        self.args.extend(values);
    }

    fn and_in(&mut self, column: &str, values: &[i64]) {
        let marks = vec!["?"; values.len()].join(", ");
        self.and(
            &format!("{column} IN ({marks})"),
            values.iter().map(|v| Arg::from(*v)),
        );
    }

    /// Rows strictly after the keyset in the sort's order; `key_arg` is how the cursor's key
    /// is compared with the column (`?`, or the same folding the column has).
    fn after(
        &mut self,
        (key, key_arg): (&str, &str),
        seq: &str,
        keyset: Option<&Keyset>,
        descending: bool,
    ) {
        if let Some(k) = keyset {
            let (beyond_or_at, beyond) = if descending { ("<=", "<") } else { (">=", ">") };
            self.and(
                &format!(
                    "{key} {beyond_or_at} {key_arg} AND ({key} {beyond} {key_arg} OR {seq} {beyond} ?)"
                ),
                [k.key.clone().into(), k.key.clone().into(), k.seq.into()],
            );
        }
    }

    /// The page's order and size; `seq` breaks ties so the order is total.
    fn order_and_limit(&mut self, key: &str, seq: &str, descending: bool, limit: i64) {
        let direction = if descending { "DESC" } else { "ASC" };
        self.sql.push_str(&format!(
            " ORDER BY {key} {direction}, {seq} {direction} LIMIT ?"
        ));
        self.args.push(limit.into());
    }

    fn params(&self) -> Vec<Param<'_>> {
        self.args.iter().map(Arg::param).collect()
    }

    /// A filter value holding a NUL selects nothing: no stored text holds one, and PostgreSQL
    /// refuses one in any text it is sent, so neither backend is asked.
    fn selects_nothing(&self) -> bool {
        self.args
            .iter()
            .any(|arg| matches!(arg, Arg::Text(text) if text.contains('\0')))
    }

    fn count(self, db: Db<'_>) -> db::Result<i64> {
        if self.selects_nothing() {
            return Ok(0);
        }
        db.query_row(&self.sql, &self.params(), |r| r.get(0))
    }

    fn rows<T>(self, db: Db<'_>, f: impl FnMut(&Row<'_>) -> db::Result<T>) -> db::Result<Vec<T>> {
        if self.selects_nothing() {
            return Ok(Vec::new());
        }
        db.query_map(&self.sql, &self.params(), f)
    }
}

/// The words of a search text, each with the spellings that may match it: the word itself and,
/// for a RUT-looking word, the RUT without its dots and dash. Control characters separate words
/// as spaces do (a NUL never reaches either backend); words shorter than the three characters
/// a trigram needs are left out.
fn search_words(text: &str) -> Vec<Vec<String>> {
    text.split(|c: char| c.is_whitespace() || c.is_control())
        .filter(|w| w.chars().count() >= 3)
        .map(|word| {
            let compact = rut_prefix(word)
                .map(|rut| rut.replace('-', ""))
                .filter(|rut| rut.len() >= 3 && rut != word);
            std::iter::once(word.to_string()).chain(compact).collect()
        })
        .collect()
}

/// A search text with its control characters as spaces, trimmed; `None` when nothing is left.
fn search_text(text: Option<&str>) -> Option<String> {
    let text: String = text?
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect();
    let text = text.trim();
    (!text.is_empty()).then(|| text.to_string())
}

/// PostgreSQL's counterpart of an FTS5 match over the trigram indexes: every word (any of
/// its spellings) appears in `terms`, the expression a `pg_trgm` index of `0001_schema.sql`
/// holds, folded as the index folds it.
fn trigram_match(terms: &str, words: &[Vec<String>]) -> (String, Vec<Arg>) {
    let mut args = Vec::new();
    let clauses: Vec<String> = words
        .iter()
        .map(|spellings| {
            let alternatives: Vec<String> = spellings
                .iter()
                .map(|spelling| {
                    args.push(Arg::Text(like_escape(spelling)));
                    format!(
                        "mandato_search_fold({terms}) LIKE \
                         '%' || mandato_search_fold(CAST(? AS TEXT)) || '%' ESCAPE '\\'"
                    )
                })
                .collect();
            format!("({})", alternatives.join(" OR "))
        })
        .collect();
    (clauses.join(" AND "), args)
}

/// What a customer is found by, as `customers_search` indexes it.
const CUSTOMER_TERMS: &str = "c.first_name || ' ' || c.last_name || ' ' || \
    coalesce(c.second_last_name, '') || ' ' || c.user_id || ' ' || c.id || ' ' || c.rut || ' ' || \
    replace(c.rut, '-', '') || ' ' || c.email";

/// What a mandate (`x`, in a subquery) is found by, as `mandates_search` indexes it.
const MANDATE_TERMS: &str = "x.external_id || ' ' || x.id || ' ' || x.name";

/// A search text as an FTS5 query over the trigram indexes of `0020_staff_search.sql`:
/// every word must appear (in any order), each as a substring; a RUT-looking word also
/// matches without its dots and dash. `None` when no word has the three characters a trigram
/// needs; those searches fall back to reading the rows.
pub fn search_terms(text: &str) -> Option<String> {
    let quoted = |word: &str| format!("\"{}\"", word.replace('"', "\"\""));
    let words: Vec<String> = search_words(text)
        .iter()
        .map(|spellings| match spellings.as_slice() {
            [word] => quoted(word),
            spellings => {
                let quoted: Vec<String> = spellings.iter().map(|s| quoted(s)).collect();
                format!("({})", quoted.join(" OR "))
            }
        })
        .collect();
    (!words.is_empty()).then(|| words.join(" AND "))
}

// Dashboard.

/// `(state id, count)` of mandates, optionally of one commerce, `mandato trigger`'s left out.
pub fn mandate_counts<'c>(
    db: impl Into<Db<'c>>,
    commerce_id: Option<i64>,
) -> db::Result<Vec<(i64, i64)>> {
    db.into().query_map(
        "SELECT state, count(*) FROM mandates
         WHERE (CAST(?1 AS BIGINT) IS NULL OR commerce_id = ?1) AND sandbox_trigger = 0
         GROUP BY state",
        &params![commerce_id],
        |r| Ok((r.get(0)?, r.get(1)?)),
    )
}

/// `(state id, count)` of installments, optionally of one commerce, `mandato trigger`'s left
/// out. The whole count reads the state index alone; the trigger's few installments, counted
/// through their mandates, are taken away from it rather than every row joined to its mandate.
pub fn installment_counts<'c>(
    db: impl Into<Db<'c>>,
    commerce_id: Option<i64>,
) -> db::Result<Vec<(i64, i64)>> {
    let db = db.into();
    let pair = |r: &Row<'_>| Ok((r.get::<i64>(0)?, r.get::<i64>(1)?));
    let mut counts = match commerce_id {
        None => db.query_map(
            "SELECT state, count(*) FROM installments GROUP BY state",
            &params![],
            pair,
        )?,
        Some(id) => db.query_map(
            "SELECT state, count(*) FROM installments WHERE commerce_id = ?1 GROUP BY state",
            &params![id],
            pair,
        )?,
    };
    let triggers = db.query_map(
        "SELECT state, count(*) FROM installments WHERE mandate_seq IN
            (SELECT seq FROM mandates WHERE sandbox_trigger = 1
               AND (CAST(?1 AS BIGINT) IS NULL OR commerce_id = ?1))
         GROUP BY state",
        &params![commerce_id],
        pair,
    )?;
    for (state, excluded) in triggers {
        if let Some((_, count)) = counts.iter_mut().find(|(s, _)| *s == state) {
            *count -= excluded;
        }
    }
    counts.retain(|(_, count)| *count > 0);
    Ok(counts)
}

/// An amount that changed state at a time (or on a business date).
#[derive(Debug, Clone)]
pub struct DatedAmount {
    /// RFC 3339 timestamp, or a `YYYY-MM-DD` business date.
    pub at: String,
    pub amount: String,
    pub currency: String,
}

/// The money the ledger moved on business dates from `since` on: charges, payments marked
/// paid and reversals (negative), as the ledger's settlements count them; annulments move no
/// money and are left out. `at` is the entry's business date and the amount is what was
/// charged (pesos for a UF installment), so the dashboard's figures add up to the ledger's.
pub fn ledger_money_since<'c>(
    db: impl Into<Db<'c>>,
    since: &str,
    commerce_id: Option<i64>,
) -> db::Result<Vec<DatedAmount>> {
    db.into().query_map(
        &format!(
            "SELECT business_date, amount, currency FROM ledger_entries
             WHERE kind <> 'ANNULMENT' AND business_date >= ?1
               AND (CAST(?2 AS BIGINT) IS NULL OR commerce_id = ?2)
               AND mandate_id NOT IN ({TRIGGER_MANDATE_IDS})"
        ),
        &params![since, commerce_id],
        |r| {
            Ok(DatedAmount {
                at: r.get(0)?,
                amount: r.get(1)?,
                currency: r.get(2)?,
            })
        },
    )
}

/// Rejected charge attempts on business dates from `since` on.
pub fn rejected_attempts_since<'c>(
    db: impl Into<Db<'c>>,
    since: &str,
    commerce_id: Option<i64>,
) -> db::Result<Vec<DatedAmount>> {
    db.into().query_map(
        &format!(
        "SELECT a.business_date, a.amount, a.currency FROM charge_attempts a
         JOIN installments i ON i.seq = a.installment_seq
         WHERE a.state = 'REJECTED' AND a.business_date >= ?1 AND (CAST(?2 AS BIGINT) IS NULL OR i.commerce_id = ?2)
           AND i.mandate_seq NOT IN ({TRIGGER_MANDATES})"
        ),
        &params![since, commerce_id], |r| {
        Ok(DatedAmount {
            at: r.get(0)?,
            amount: r.get(1)?,
            currency: r.get(2)?,
        })
    })
}

/// Unpaid installments (PENDING, or REJECTED and waiting for a retry) of ACTIVE mandates due
/// before `today`; `at` is the due date. Read through `installments_due` (state, due_date).
pub fn overdue_amounts<'c>(
    db: impl Into<Db<'c>>,
    today: &str,
    commerce_id: Option<i64>,
) -> db::Result<Vec<DatedAmount>> {
    db.into().query_map(
        "SELECT i.due_date, i.amount, i.currency FROM installments i
         JOIN mandates m ON m.seq = i.mandate_seq
         WHERE i.state IN (1, -99) AND i.due_date < ?1 AND m.state = 2 AND m.sandbox_trigger = 0
           AND (CAST(?2 AS BIGINT) IS NULL OR i.commerce_id = ?2)",
        &params![today, commerce_id],
        |r| {
            Ok(DatedAmount {
                at: r.get(0)?,
                amount: r.get(1)?,
                currency: r.get(2)?,
            })
        },
    )
}

/// An installment with what identifies it on a list: its mandate, customer and commerce.
#[derive(Debug, Clone)]
pub struct InstallmentLine {
    pub installment_id: String,
    pub external_id: String,
    pub amount: String,
    pub currency: String,
    pub due_date: String,
    pub state: i64,
    pub mandate_id: String,
    pub mandate_external_id: String,
    pub mandate_name: String,
    pub commerce_code: String,
    pub customer_name: String,
}

/// The next installments the engine will charge: PENDING ones of ACTIVE mandates, by due date.
pub fn next_charges<'c>(
    db: impl Into<Db<'c>>,
    limit: i64,
    commerce_id: Option<i64>,
) -> db::Result<Vec<InstallmentLine>> {
    db.into().query_map(
        "SELECT i.id, i.external_id, i.amount, i.currency, i.due_date, i.state, m.id, m.external_id,
                m.name, co.code, c.first_name || ' ' || c.last_name
         FROM installments i
         JOIN mandates m ON m.seq = i.mandate_seq
         JOIN customers c ON c.seq = m.customer_seq
         JOIN commerces co ON co.id = m.commerce_id
         WHERE i.state = 1 AND m.state = 2 AND m.sandbox_trigger = 0
           AND (CAST(?2 AS BIGINT) IS NULL OR i.commerce_id = ?2)
         ORDER BY i.due_date, i.seq LIMIT ?1",
        &params![limit, commerce_id], |r| {
        Ok(InstallmentLine {
            installment_id: r.get(0)?,
            external_id: r.get(1)?,
            amount: r.get(2)?,
            currency: r.get(3)?,
            due_date: r.get(4)?,
            state: r.get(5)?,
            mandate_id: r.get(6)?,
            mandate_external_id: r.get(7)?,
            mandate_name: r.get(8)?,
            commerce_code: r.get(9)?,
            customer_name: r.get(10)?,
        })
    })
}

/// Webhooks in trouble: how many FAILED, how many PENDING after a failed attempt, and the
/// newest of both.
#[derive(Debug, Clone)]
pub struct FailingWebhooks {
    pub failed: i64,
    pub retrying: i64,
    pub recent: Vec<FailingEvent>,
}

#[derive(Debug, Clone)]
pub struct FailingEvent {
    pub event_id: String,
    pub kind: String,
    pub url: Option<String>,
    pub delivery_state: String,
    pub attempts: i64,
    pub created_at: String,
    pub mandate_id: Option<String>,
    /// The merchant's mandate id.
    pub mandate_external_id: Option<String>,
    pub customer_name: Option<String>,
    pub commerce_code: String,
    pub last_error: Option<String>,
    pub last_status: Option<i64>,
}

pub fn failing_webhooks<'c>(db: impl Into<Db<'c>>, limit: i64) -> db::Result<FailingWebhooks> {
    let db = db.into();
    let failed = db.query_row(
        "SELECT count(*) FROM events WHERE delivery_state = 'FAILED'",
        &params![],
        |r| r.get(0),
    )?;
    let retrying = db.query_row(
        "SELECT count(*) FROM events WHERE delivery_state = 'PENDING' AND attempts > 0",
        &params![],
        |r| r.get(0),
    )?;
    let recent = db.query_map(
        "SELECT e.id, e.kind, e.url, e.delivery_state, e.attempts, e.created_at, m.id, c.code,
                m.external_id, cu.first_name || ' ' || cu.last_name,
                (SELECT coalesce(a.error, a.response_excerpt) FROM delivery_attempts a
                  WHERE a.event_seq = e.seq ORDER BY a.seq DESC LIMIT 1),
                (SELECT a.status_code FROM delivery_attempts a
                  WHERE a.event_seq = e.seq ORDER BY a.seq DESC LIMIT 1)
         FROM events e
         JOIN commerces c ON c.id = e.commerce_id
         LEFT JOIN mandates m ON m.seq = e.mandate_seq
         LEFT JOIN customers cu ON cu.seq = m.customer_seq
         WHERE e.seq IN (
             SELECT seq FROM (SELECT seq FROM events WHERE delivery_state = 'FAILED'
                              ORDER BY seq DESC LIMIT ?1) AS failed
             UNION ALL
             SELECT seq FROM (SELECT seq FROM events WHERE delivery_state = 'PENDING' AND attempts > 0
                              ORDER BY seq DESC LIMIT ?1) AS retrying)
         ORDER BY e.seq DESC LIMIT ?1",
        &params![limit],
        |r| {
            Ok(FailingEvent {
                event_id: r.get(0)?,
                kind: r.get(1)?,
                url: r.get(2)?,
                delivery_state: r.get(3)?,
                attempts: r.get(4)?,
                created_at: r.get(5)?,
                mandate_id: r.get(6)?,
                commerce_code: r.get(7)?,
                mandate_external_id: r.get(8)?,
                customer_name: r.get(9)?,
                last_error: r.get(10)?,
                last_status: r.get(11)?,
            })
        },
    )?;
    Ok(FailingWebhooks {
        failed,
        retrying,
        recent,
    })
}

// Customers.

#[derive(Debug, Default)]
pub struct CustomerFilter {
    /// Words of a name (any part, any order, accents and case ignored), a RUT or part of one
    /// (with or without dots and dash), a userId or part of one, a usr_ id, an e-mail.
    pub text: Option<String>,
    pub commerce_id: Option<i64>,
    pub sort: Sort<CustomerColumn>,
    pub after: Option<Keyset>,
    pub limit: i64,
}
#[derive(Debug, Clone)]
pub struct CustomerLine {
    pub customer: CustomerRow,
    pub commerce_code: String,
    pub mandates: i64,
}

const CUSTOMER_COLUMNS: &str = "c.seq, c.id, c.commerce_id, c.user_id, c.rut, c.first_name, \
    c.last_name, c.second_last_name, c.address, c.email, c.phone, c.created_at, c.updated_at";

fn customer_from_row(row: &Row<'_>) -> db::Result<CustomerRow> {
    let address: Option<String> = row.get(8)?;
    Ok(CustomerRow {
        seq: row.get(0)?,
        id: row.get(1)?,
        commerce_id: row.get(2)?,
        user_id: row.get(3)?,
        rut: row.get(4)?,
        first_name: row.get(5)?,
        last_name: row.get(6)?,
        second_last_name: row.get(7)?,
        address: address.and_then(|a| StoredJson::from_text(a).ok()),
        email: row.get(9)?,
        phone: row.get(10)?,
        created_at: row.get(11)?,
        updated_at: row.get(12)?,
    })
}

/// The RUT-looking form of a search text: digits and a check digit, without dots and dash
/// (`12.345.678-5` → `12345678-5`, `12345678` → `12345678`); `None` when it is not one.
pub fn rut_prefix(text: &str) -> Option<String> {
    let compact: String = text
        .chars()
        .filter(|c| *c != '.' && *c != '-' && !c.is_whitespace())
        .collect::<String>()
        .to_uppercase();
    if compact.len() < 2 || !compact.chars().all(|c| c.is_ascii_digit() || c == 'K') {
        return None;
    }
    if compact[..compact.len() - 1].contains('K') {
        return None;
    }
    if text.contains('-') {
        let (body, check) = compact.split_at(compact.len() - 1);
        Some(format!("{body}-{check}"))
    } else {
        Some(compact)
    }
}

/// LIKE pattern characters matched literally.
fn like_escape(text: &str) -> String {
    text.replace('\\', "\\\\")
        .replace('%', "\\%")
        .replace('_', "\\_")
}

/// Adds the filter's conditions (not its page) to a query over `customers c`.
fn customer_conditions(q: &mut Query, filter: &CustomerFilter) {
    if let Some(id) = filter.commerce_id {
        q.and("c.commerce_id = ?", [id.into()]);
    }
    let Some(text) = search_text(filter.text.as_deref()) else {
        return;
    };
    match (q.backend, search_terms(&text)) {
        (Backend::Sqlite, Some(terms)) => q.and(
            "c.seq IN (SELECT rowid FROM customer_search WHERE customer_search MATCH ?)",
            [terms.into()],
        ),
        (Backend::Postgres, Some(_)) => {
            let (clause, args) = trigram_match(CUSTOMER_TERMS, &search_words(&text));
            q.and(&clause, args);
        }
        // One or two characters: too short for a trigram, so the rows are read.
        (backend, None) => q.and(
            &format!(
                "(c.id = ? OR c.user_id {like} ? ESCAPE '\\' OR c.rut {like} ? ESCAPE '\\' OR \
                 (c.first_name || ' ' || c.last_name || ' ' || coalesce(c.second_last_name, '')) \
                 {like} ? ESCAPE '\\')",
                like = case_insensitive_like(backend)
            ),
            [
                text.clone().into(),
                format!("{}%", like_escape(&text)).into(),
                format!("{}%", like_escape(&text)).into(),
                format!("%{}%", like_escape(&text)).into(),
            ],
        ),
    }
}

/// SQLite's LIKE ignores the case of ASCII letters; PostgreSQL's ILIKE is its counterpart.
fn case_insensitive_like(backend: Backend) -> &'static str {
    match backend {
        Backend::Sqlite => "LIKE",
        Backend::Postgres => "ILIKE",
    }
}

/// A page of customers in the filter's order.
pub fn search_customers<'c>(
    db: impl Into<Db<'c>>,
    filter: &CustomerFilter,
) -> db::Result<Vec<CustomerLine>> {
    let db = db.into();
    let join = match db.backend() {
        Backend::Sqlite => "CROSS JOIN",
        Backend::Postgres => "JOIN",
    };
    let mut q = Query::new(
        db.backend(),
        &format!(
            "SELECT {CUSTOMER_COLUMNS}, co.code,
                (SELECT count(*) FROM mandates m WHERE m.customer_seq = c.seq)
         FROM customers c {join} commerces co ON co.id = c.commerce_id"
        ),
    );
    customer_conditions(&mut q, filter);
    let key = filter.sort.column.expression(db.backend());
    q.after(key, "c.seq", filter.after.as_ref(), filter.sort.descending);
    q.order_and_limit(key.0, "c.seq", filter.sort.descending, filter.limit);
    q.rows(db, |r| {
        Ok(CustomerLine {
            customer: customer_from_row(r)?,
            commerce_code: r.get(13)?,
            mandates: r.get(14)?,
        })
    })
}

/// How many customers the filter selects, every page together.
pub fn count_customers<'c>(db: impl Into<Db<'c>>, filter: &CustomerFilter) -> db::Result<i64> {
    let db = db.into();
    let mut q = Query::new(db.backend(), "SELECT count(*) FROM customers c");
    customer_conditions(&mut q, filter);
    q.count(db)
}

/// A customer of any commerce by our id, with its commerce's code.
pub fn customer_by_id<'c>(
    db: impl Into<Db<'c>>,
    id: &str,
) -> db::Result<Option<(CustomerRow, String)>> {
    let sql = format!(
        "SELECT {CUSTOMER_COLUMNS}, co.code FROM customers c JOIN commerces co ON co.id = c.commerce_id
         WHERE c.id = ?1"
    );
    db.into().query_opt(&sql, &params![id], |r| {
        Ok((customer_from_row(r)?, r.get(13)?))
    })
}

/// The customers a mandate filter's text names: by usr_ id, userId or RUT, in any commerce.
pub fn customer_seqs_matching<'c>(db: impl Into<Db<'c>>, text: &str) -> db::Result<Vec<i64>> {
    let Some(text) = search_text(Some(text)) else {
        return Ok(Vec::new());
    };
    let rut = rut_prefix(&text).filter(|r| r.contains('-'));
    db.into().query_map(
        "SELECT seq FROM customers WHERE id = ?1 OR user_id = ?1 OR (CAST(?2 AS TEXT) IS NOT NULL AND rut = ?2)
         LIMIT 1000",
        &params![&text, &rut],
        |r| r.get(0),
    )
}

// Mandates.

#[derive(Debug, Default)]
pub struct MandateFilter {
    pub states: Vec<i64>,
    pub types: Vec<i64>,
    pub commerce_id: Option<i64>,
    /// `Some(empty)` when the customer filter matched nobody.
    pub customer_seqs: Option<Vec<i64>>,
    /// The mandate's id, ours (man_...) or the merchant's.
    pub id: Option<String>,
    /// Words found in the mandate (its mandateId or part of it, our id, its name) or its
    /// customer (as the customers search finds them); accents and case ignored.
    pub text: Option<String>,
    /// Created at or after / before (RFC 3339).
    pub created_from: Option<String>,
    pub created_to: Option<String>,
    pub sort: Sort<MandateColumn>,
    pub after: Option<Keyset>,
    pub limit: i64,
}
#[derive(Debug, Clone)]
pub struct MandateLine {
    pub seq: i64,
    pub id: String,
    pub external_id: String,
    pub type_id: i64,
    pub state_id: i64,
    pub name: String,
    pub charges: serde_json::Value,
    pub created_at: String,
    pub updated_at: String,
    pub commerce_code: String,
    pub customer_id: String,
    pub customer_user_id: String,
    pub customer_rut: String,
    pub customer_name: String,
}

fn mandate_line(r: &Row<'_>) -> db::Result<MandateLine> {
    let charges: String = r.get(6)?;
    Ok(MandateLine {
        seq: r.get(0)?,
        id: r.get(1)?,
        external_id: r.get(2)?,
        type_id: r.get(3)?,
        state_id: r.get(4)?,
        name: r.get(5)?,
        charges: serde_json::from_str(&charges).unwrap_or(serde_json::Value::Null),
        created_at: r.get(7)?,
        updated_at: r.get(8)?,
        commerce_code: r.get(9)?,
        customer_id: r.get(10)?,
        customer_user_id: r.get(11)?,
        customer_rut: r.get(12)?,
        customer_name: r.get(13)?,
    })
}

/// `CROSS JOIN` keeps mandates the outer loop (SQLite never reorders it): with statistics,
/// the planner would otherwise start from the four-row commerces table and sort every mandate.
const MANDATE_LINE_SELECT: &str = "SELECT m.seq, m.id, m.external_id, m.type, m.state, m.name, \
    m.charges, m.created_at, m.updated_at, co.code, c.id, c.user_id, c.rut, \
    c.first_name || ' ' || c.last_name \
    FROM mandates m CROSS JOIN commerces co ON co.id = m.commerce_id \
    CROSS JOIN customers c ON c.seq = m.customer_seq";

/// PostgreSQL has no `CROSS JOIN ... ON`, and its planner chooses the join order itself.
const MANDATE_LINE_SELECT_PG: &str = "SELECT m.seq, m.id, m.external_id, m.type, m.state, m.name, \
    m.charges, m.created_at, m.updated_at, co.code, c.id, c.user_id, c.rut, \
    c.first_name || ' ' || c.last_name \
    FROM mandates m JOIN commerces co ON co.id = m.commerce_id \
    JOIN customers c ON c.seq = m.customer_seq";

fn mandate_line_select(backend: Backend) -> &'static str {
    match backend {
        Backend::Sqlite => MANDATE_LINE_SELECT,
        Backend::Postgres => MANDATE_LINE_SELECT_PG,
    }
}

/// Adds the filter's conditions (not its page) to a query over `mandates m`.
fn mandate_conditions(q: &mut Query, filter: &MandateFilter) {
    if !filter.states.is_empty() {
        q.and_in("m.state", &filter.states);
    }
    if !filter.types.is_empty() {
        q.and_in("m.type", &filter.types);
    }
    if let Some(id) = filter.commerce_id {
        q.and("m.commerce_id = ?", [id.into()]);
    }
    if let Some(seqs) = &filter.customer_seqs {
        q.and_in("m.customer_seq", seqs);
    }
    if let Some(id) = &filter.id {
        q.and(
            "(m.id = ? OR m.external_id = ?)",
            [id.clone().into(), id.clone().into()],
        );
    }
    if let Some(text) = search_text(filter.text.as_deref()) {
        match (q.backend, search_terms(&text)) {
            (Backend::Sqlite, Some(terms)) => q.and(
                "(m.seq IN (SELECT rowid FROM mandate_search WHERE mandate_search MATCH ?) \
                 OR m.customer_seq IN \
                 (SELECT rowid FROM customer_search WHERE customer_search MATCH ?))",
                [terms.clone().into(), terms.into()],
            ),
            (Backend::Postgres, Some(_)) => {
                let words = search_words(&text);
                let (in_mandate, mut args) = trigram_match(MANDATE_TERMS, &words);
                let (in_customer, customer_args) = trigram_match(CUSTOMER_TERMS, &words);
                args.extend(customer_args);
                // One set of matching mandates, each half read through its trigram index (an
                // OR of the two would read every mandate).
                q.and(
                    &format!(
                        "m.seq IN (SELECT x.seq FROM mandates x WHERE {in_mandate} \
                         UNION SELECT x.seq FROM mandates x WHERE x.customer_seq IN \
                         (SELECT c.seq FROM customers c WHERE {in_customer}))"
                    ),
                    args,
                );
            }
            // One or two characters: too short for a trigram; a mandateId that starts so.
            (backend, None) => q.and(
                &format!(
                    "(m.id = ? OR m.external_id {} ? ESCAPE '\\')",
                    case_insensitive_like(backend)
                ),
                [
                    text.clone().into(),
                    format!("{}%", like_escape(&text)).into(),
                ],
            ),
        }
    }
    if let Some(from) = &filter.created_from {
        q.and("m.created_at >= ?", [from.clone().into()]);
    }
    if let Some(to) = &filter.created_to {
        q.and("m.created_at < ?", [to.clone().into()]);
    }
}

/// A page of mandates in the filter's order. Each single filter is served in order by an
/// index of `0006_staff_views.sql`, so a page reads about `limit` rows whatever the table's
/// size; a text search reads its matches from the trigram indexes of `0020_staff_search.sql`
/// and costs what it finds: at 200,000 mandates a mandateId, RUT or name found in a few dozen
/// rows takes 1 to 3 ms (page and count), a word found in every mandate (a plan's name) about
/// 0.4 s, since every match is collected before the page is cut.
pub fn list_mandates<'c>(
    db: impl Into<Db<'c>>,
    filter: &MandateFilter,
) -> db::Result<Vec<MandateLine>> {
    if filter.customer_seqs.as_ref().is_some_and(Vec::is_empty) {
        return Ok(Vec::new());
    }
    let db = db.into();
    let mut q = Query::new(db.backend(), mandate_line_select(db.backend()));
    mandate_conditions(&mut q, filter);
    let key = filter.sort.column.expression(db.backend());
    q.after(
        (key, "?"),
        "m.seq",
        filter.after.as_ref(),
        filter.sort.descending,
    );
    q.order_and_limit(key, "m.seq", filter.sort.descending, filter.limit);
    q.rows(db, mandate_line)
}

/// How many mandates the filter selects, every page together.
pub fn count_mandates<'c>(db: impl Into<Db<'c>>, filter: &MandateFilter) -> db::Result<i64> {
    if filter.customer_seqs.as_ref().is_some_and(Vec::is_empty) {
        return Ok(0);
    }
    let db = db.into();
    let mut q = Query::new(db.backend(), "SELECT count(*) FROM mandates m");
    mandate_conditions(&mut q, filter);
    q.count(db)
}

/// Every mandate of a customer, newest first.
pub fn mandates_of_customer<'c>(
    db: impl Into<Db<'c>>,
    customer_seq: i64,
) -> db::Result<Vec<MandateLine>> {
    let db = db.into();
    let sql = format!(
        "{} WHERE m.customer_seq = ?1 ORDER BY m.created_at DESC, m.seq DESC",
        mandate_line_select(db.backend())
    );
    db.query_map(&sql, &params![customer_seq], mandate_line)
}

/// `(seq, commerce id)` of a mandate of any commerce, by our id.
pub fn mandate_owner<'c>(db: impl Into<Db<'c>>, id: &str) -> db::Result<Option<(i64, i64)>> {
    db.into().query_opt(
        "SELECT seq, commerce_id FROM mandates WHERE id = ?1",
        &params![id],
        |r| Ok((r.get(0)?, r.get(1)?)),
    )
}

/// `(seq, created_at)` of each installment of a mandate: where its history starts.
pub fn installment_creation<'c>(
    db: impl Into<Db<'c>>,
    mandate_seq: i64,
) -> db::Result<Vec<(i64, String)>> {
    db.into().query_map(
        "SELECT seq, created_at FROM installments WHERE mandate_seq = ?1",
        &params![mandate_seq],
        |r| Ok((r.get(0)?, r.get(1)?)),
    )
}

/// One charge attempt of an installment, for its history.
#[derive(Debug, Clone)]
pub struct AttemptLine {
    pub installment_seq: i64,
    pub attempt_no: i64,
    pub business_date: String,
    pub state: String,
    pub amount: String,
    pub currency: String,
    pub authorization_code: Option<String>,
    pub rejection_code: Option<String>,
    pub created_at: String,
    pub finished_at: Option<String>,
}

pub fn attempts_of_mandate<'c>(
    db: impl Into<Db<'c>>,
    mandate_seq: i64,
) -> db::Result<Vec<AttemptLine>> {
    db.into().query_map(
        "SELECT a.installment_seq, a.attempt_no, a.business_date, a.state, a.amount, a.currency,
                a.authorization_code, a.rejection_code, a.created_at, a.finished_at
         FROM charge_attempts a JOIN installments i ON i.seq = a.installment_seq
         WHERE i.mandate_seq = ?1 ORDER BY a.seq",
        &params![mandate_seq],
        |r| {
            Ok(AttemptLine {
                installment_seq: r.get(0)?,
                attempt_no: r.get(1)?,
                business_date: r.get(2)?,
                state: r.get(3)?,
                amount: r.get(4)?,
                currency: r.get(5)?,
                authorization_code: r.get(6)?,
                rejection_code: r.get(7)?,
                created_at: r.get(8)?,
                finished_at: r.get(9)?,
            })
        },
    )
}

// Settings.

#[derive(Debug, Clone)]
pub struct CommerceLine {
    pub code: String,
    pub name: String,
    pub channels: Option<String>,
    pub payment_methods: String,
    pub authorization_required: bool,
    pub retry_policy: Option<String>,
    pub previous_secret_expires_at: Option<String>,
    pub created_at: String,
    /// `DIRECT` or `SIGNATURE`.
    pub activation_mode: String,
    /// The commerce's own receiver, where the developer commands send their events.
    pub webhook_url: Option<String>,
}

pub fn commerces<'c>(db: impl Into<Db<'c>>) -> db::Result<Vec<CommerceLine>> {
    db.into().query_map(
        "SELECT code, name, channels, payment_methods, authorization_required, retry_policy,
                previous_secret_expires_at, created_at, activation_mode, webhook_url
         FROM commerces ORDER BY id",
        &params![],
        |r| {
            Ok(CommerceLine {
                code: r.get(0)?,
                name: r.get(1)?,
                channels: r.get(2)?,
                payment_methods: r.get(3)?,
                authorization_required: r.get(4)?,
                retry_policy: r.get(5)?,
                previous_secret_expires_at: r.get(6)?,
                created_at: r.get(7)?,
                activation_mode: r.get(8)?,
                webhook_url: r.get(9)?,
            })
        },
    )
}

/// Sets (or with `None` clears) a commerce's retry policy JSON; `false` for an unknown code.
pub fn set_retry_policy<'c>(
    db: impl Into<Db<'c>>,
    code: &str,
    policy: Option<&str>,
) -> db::Result<bool> {
    Ok(db.into().execute(
        "UPDATE commerces SET retry_policy = ?2 WHERE code = ?1",
        &params![code, policy],
    )? > 0)
}

#[derive(Debug, Clone)]
pub struct ApiKeyLine {
    pub prefix: String,
    pub name: Option<String>,
    pub last_used_at: Option<String>,
    pub all_commerces: bool,
    pub commerces: Vec<String>,
    pub created_at: String,
    pub revoked_at: Option<String>,
}

pub fn api_keys<'c>(db: impl Into<Db<'c>>) -> db::Result<Vec<ApiKeyLine>> {
    let db = db.into();
    // The commerces a key is limited to, as one comma-separated text.
    let sql = match db.backend() {
        Backend::Sqlite => {
            "SELECT k.prefix, k.all_commerces, k.created_at, k.revoked_at,
                (SELECT group_concat(c.code, ',') FROM api_key_commerces x
                  JOIN commerces c ON c.id = x.commerce_id WHERE x.api_key_id = k.id),
                k.name, k.last_used_at
         FROM api_keys k ORDER BY k.id DESC"
        }
        Backend::Postgres => {
            "SELECT k.prefix, k.all_commerces, k.created_at, k.revoked_at,
                (SELECT string_agg(c.code, ',') FROM api_key_commerces x
                  JOIN commerces c ON c.id = x.commerce_id WHERE x.api_key_id = k.id),
                k.name, k.last_used_at
         FROM api_keys k ORDER BY k.id DESC"
        }
    };
    db.query_map(sql, &params![], |r| {
        let codes: Option<String> = r.get(4)?;
        Ok(ApiKeyLine {
            prefix: r.get(0)?,
            all_commerces: r.get(1)?,
            created_at: r.get(2)?,
            revoked_at: r.get(3)?,
            name: r.get(5)?,
            last_used_at: r.get(6)?,
            commerces: codes
                .map(|c| c.split(',').map(str::to_string).collect())
                .unwrap_or_default(),
        })
    })
}

#[derive(Debug, Clone)]
pub struct RootLine {
    pub fingerprint: String,
    pub subject: String,
    pub added_at: String,
}

pub fn trusted_roots<'c>(db: impl Into<Db<'c>>) -> db::Result<Vec<RootLine>> {
    db.into().query_map(
        "SELECT fingerprint, subject, added_at FROM trusted_roots ORDER BY seq",
        &params![],
        |r| {
            Ok(RootLine {
                fingerprint: r.get(0)?,
                subject: r.get(1)?,
                added_at: r.get(2)?,
            })
        },
    )
}

/// Stops trusting a root; `false` when it was not trusted.
pub fn remove_trusted_root<'c>(db: impl Into<Db<'c>>, fingerprint: &str) -> db::Result<bool> {
    Ok(db.into().execute(
        "DELETE FROM trusted_roots WHERE fingerprint = ?1",
        &params![fingerprint],
    )? > 0)
}

#[derive(Debug, Clone)]
pub struct StaffLine {
    pub email: String,
    pub role: String,
    pub created_at: String,
    pub disabled_at: Option<String>,
    /// The password is a temporary one an admin set; a new one is due at the next sign-in.
    pub password_change_required: bool,
}

pub fn staff_members<'c>(db: impl Into<Db<'c>>) -> db::Result<Vec<StaffLine>> {
    db.into().query_map(
        "SELECT email, role, created_at, disabled_at, password_change_required FROM staff ORDER BY id",
        &params![],
        staff_line,
    )
}

fn staff_line(r: &Row<'_>) -> db::Result<StaffLine> {
    Ok(StaffLine {
        email: r.get(0)?,
        role: r.get(1)?,
        created_at: r.get(2)?,
        disabled_at: r.get(3)?,
        password_change_required: r.get(4)?,
    })
}

pub fn staff_member<'c>(db: impl Into<Db<'c>>, email: &str) -> db::Result<Option<StaffLine>> {
    db.into().query_opt(
        "SELECT email, role, created_at, disabled_at, password_change_required FROM staff WHERE email = ?1",
        &params![email],
        staff_line,
    )
}

/// Admin accounts that can still sign in.
pub fn active_admins<'c>(db: impl Into<Db<'c>>) -> db::Result<i64> {
    db.into().query_row(
        "SELECT count(*) FROM staff WHERE role = 'admin' AND disabled_at IS NULL",
        &params![],
        |r| r.get(0),
    )
}

/// Changes a staff member's role and whether it is disabled; disabling ends its sessions.
pub fn update_staff<'c>(
    db: impl Into<Db<'c>>,
    email: &str,
    role: &str,
    disabled_at: Option<&str>,
) -> db::Result<bool> {
    let db = db.into();
    let changed = db.execute(
        "UPDATE staff SET role = ?2, disabled_at = ?3 WHERE email = ?1",
        &params![email, role, disabled_at],
    )?;
    if disabled_at.is_some() {
        db.execute(
            "DELETE FROM staff_sessions WHERE staff_id = (SELECT id FROM staff WHERE email = ?1)",
            &params![email],
        )?;
    }
    Ok(changed > 0)
}

// Audit.

#[derive(Debug, Default)]
pub struct StaffAuditFilter {
    pub email: Option<String>,
    /// The action or its family (`mandate.` matches every mandate action).
    pub action: Option<String>,
    pub target: Option<String>,
    pub from: Option<String>,
    pub to: Option<String>,
    pub before_seq: Option<i64>,
    pub limit: i64,
}

#[derive(Debug, Clone)]
pub struct StaffAuditLine {
    pub seq: i64,
    pub at: String,
    pub email: String,
    pub action: String,
    pub target: Option<String>,
    pub detail: Option<String>,
}

pub fn staff_audit<'c>(
    db: impl Into<Db<'c>>,
    filter: &StaffAuditFilter,
) -> db::Result<Vec<StaffAuditLine>> {
    let db = db.into();
    let mut q = Query::new(
        db.backend(),
        "SELECT seq, at, staff_email, action, target, detail FROM staff_audit",
    );
    if let Some(v) = &filter.email {
        let same_email = match db.backend() {
            Backend::Sqlite => "staff_email = ? COLLATE NOCASE",
            Backend::Postgres => "lower(staff_email) = lower(CAST(? AS TEXT))",
        };
        q.and(same_email, [v.clone().into()]);
    }
    if let Some(v) = &filter.action {
        q.and(
            &format!(
                "(action = ? OR action {} ? ESCAPE '\\')",
                case_insensitive_like(db.backend())
            ),
            [v.clone().into(), format!("{}%", like_escape(v)).into()],
        );
    }
    if let Some(v) = &filter.target {
        q.and("target = ?", [v.clone().into()]);
    }
    if let Some(v) = &filter.from {
        q.and("at >= ?", [v.clone().into()]);
    }
    if let Some(v) = &filter.to {
        q.and("at < ?", [v.clone().into()]);
    }
    if let Some(v) = filter.before_seq {
        q.and("seq < ?", [v.into()]);
    }
    q.sql.push_str(" ORDER BY seq DESC LIMIT ?");
    q.args.push(filter.limit.into());
    q.rows(db, |r| {
        Ok(StaffAuditLine {
            seq: r.get(0)?,
            at: r.get(1)?,
            email: r.get(2)?,
            action: r.get(3)?,
            target: r.get(4)?,
            detail: r.get(5)?,
        })
    })
}

#[derive(Debug, Default)]
pub struct RequestAuditFilter {
    pub commerce: Option<String>,
    pub method: Option<String>,
    /// A part of the path.
    pub path: Option<String>,
    /// An exact status, or a class as its first digit (`4` for 4xx).
    pub status: Option<(i64, i64)>,
    pub correlation_id: Option<String>,
    pub from: Option<String>,
    pub to: Option<String>,
    pub before_seq: Option<i64>,
    pub limit: i64,
}

#[derive(Debug, Clone)]
pub struct RequestAuditLine {
    pub seq: i64,
    pub at: String,
    pub method: String,
    pub path: String,
    pub status: i64,
    pub duration_ms: f64,
    pub commerce: Option<String>,
    pub correlation_id: Option<String>,
    pub api_key_prefix: Option<String>,
    pub headers: String,
    pub peer: Option<String>,
}

pub fn request_audit<'c>(
    db: impl Into<Db<'c>>,
    filter: &RequestAuditFilter,
) -> db::Result<Vec<RequestAuditLine>> {
    let db = db.into();
    let mut q = Query::new(
        db.backend(),
        "SELECT seq, at, method, path, status, duration_ms, commerce, correlation_id, api_key_prefix,
                headers, peer FROM audit_log",
    );
    if let Some(v) = &filter.commerce {
        q.and("commerce = ?", [v.clone().into()]);
    }
    if let Some(v) = &filter.method {
        q.and("method = ?", [v.clone().into()]);
    }
    if let Some(v) = &filter.path {
        q.and(
            &format!("path {} ? ESCAPE '\\'", case_insensitive_like(db.backend())),
            [format!("%{}%", like_escape(v)).into()],
        );
    }
    if let Some((low, high)) = filter.status {
        q.and("status BETWEEN ? AND ?", [low.into(), high.into()]);
    }
    if let Some(v) = &filter.correlation_id {
        // The index is by day first (`0021_day_local_request_keys.sql`): one seek per day the
        // log holds.
        let next_day = match db.backend() {
            Backend::Sqlite => "date(day, '+1 day')",
            Backend::Postgres => "to_char(CAST(day AS DATE) + 1, 'YYYY-MM-DD')",
        };
        q.and(
            &format!(
                "substr(at, 1, 10) IN (WITH RECURSIVE days(day) AS (
                 SELECT substr((SELECT min(at) FROM audit_log), 1, 10)
                 UNION ALL SELECT {next_day} FROM days
                 WHERE day < substr((SELECT max(at) FROM audit_log), 1, 10))
               SELECT day FROM days) AND correlation_id = ?"
            ),
            [v.clone().into()],
        );
    }
    if let Some(v) = &filter.from {
        q.and("at >= ?", [v.clone().into()]);
    }
    if let Some(v) = &filter.to {
        q.and("at < ?", [v.clone().into()]);
    }
    if let Some(v) = filter.before_seq {
        q.and("seq < ?", [v.into()]);
    }
    q.sql.push_str(" ORDER BY seq DESC LIMIT ?");
    q.args.push(filter.limit.into());
    q.rows(db, |r| {
        Ok(RequestAuditLine {
            seq: r.get(0)?,
            at: r.get(1)?,
            method: r.get(2)?,
            path: r.get(3)?,
            status: r.get(4)?,
            duration_ms: r.get(5)?,
            commerce: r.get(6)?,
            correlation_id: r.get(7)?,
            api_key_prefix: r.get(8)?,
            headers: r.get(9)?,
            peer: r.get(10)?,
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pg_test::on_both;

    #[test]
    fn rut_prefixes_are_normalized_like_stored_ruts() {
        assert_eq!(rut_prefix("12.345.678-5").as_deref(), Some("12345678-5"));
        assert_eq!(rut_prefix("12345678").as_deref(), Some("12345678"));
        assert_eq!(rut_prefix("7654321-k").as_deref(), Some("7654321-K"));
        assert_eq!(rut_prefix("Ana"), None);
        assert_eq!(rut_prefix("1"), None);
        assert_eq!(rut_prefix("12K45"), None);
    }

    #[test]
    fn cursors_round_trip_and_reject_garbage() {
        let k = Keyset {
            key: "2026-11-22T08:00:00.123Z".into(),
            seq: 42,
        };
        assert_eq!(Keyset::decode(&k.encode()), Some(k));
        let dotted = Keyset {
            key: "M.1.2".into(),
            seq: 7,
        };
        assert_eq!(Keyset::decode(&dotted.encode()), Some(dotted));
        assert_eq!(Keyset::decode("42"), None);
        assert_eq!(Keyset::decode("x.2026-11-22T08:00:00.123Z"), None);
    }

    fn seed(db: Db<'_>) {
        db.execute_batch(
            "INSERT INTO commerces (id, code, name, password_hash, payment_methods, webhook_secret, created_at)
               VALUES (1, 'C1', 'Uno', 'x', '[3]', 's', '2026-01-01T00:00:00.000Z');
             INSERT INTO customers (seq, id, commerce_id, user_id, rut, first_name, last_name, email, created_at, updated_at)
               VALUES (1, 'usr_1', 1, 'cust-1', '12345678-5', 'Ana', 'Pérez', 'ana@example.cl', '2026-01-01T00:00:00.000Z', '2026-01-01T00:00:00.000Z'),
                      (2, 'usr_2', 1, 'cust-2', '7654321-6', 'Luis', 'Soto', 'luis@example.cl', '2026-01-02T00:00:00.000Z', '2026-01-02T00:00:00.000Z'),
                      (3, 'usr_3', 1, 'cust-010', '11111111-1', 'José', 'Muñoz', 'jose@example.cl', '2026-01-03T00:00:00.000Z', '2026-01-03T00:00:00.000Z');",
        )
        .unwrap();
        for n in 1..=30_i64 {
            db.execute(
                "INSERT INTO mandates (seq, id, commerce_id, customer_seq, external_id, type, state, name,
                        terminate_when_charged, charges, payment_methods, magic_link_token,
                        magic_link_expires_at, created_at, updated_at)
                 VALUES (?1, ?2, 1, ?3, ?4, ?5, ?6, 'Plan', 0, '{}', '[3]', ?7,
                         '2027-01-01T00:00:00.000Z', ?8, ?8)",
                &params![
                    n,
                    &format!("man_{n}"),
                    1 + n % 2,
                    &format!("M-{n}"),
                    1 + n % 4,
                    1 + n % 3,
                    &format!("tok{n}"),
                    &format!("2026-02-{:02}T00:00:00.000Z", n)
                ],
            )
            .unwrap();
        }
        // The search terms `mandates::insert` writes with each mandate.
        if let Some(conn) = db.as_sqlite() {
            crate::mandates::index_filled_mandates(conn).unwrap();
        }
    }

    /// Runs `check` on both backends, each seeded with the same rows.
    fn on_both_seeded(check: impl Fn(Db<'_>)) {
        on_both(|db| {
            seed(db);
            check(db);
        });
    }

    /// A seeded SQLite database, for what only SQLite has (its query plans).
    fn sqlite_seeded() -> rusqlite::Connection {
        let mut conn = rusqlite::Connection::open_in_memory().unwrap();
        super::super::migrations::run(&mut conn).unwrap();
        seed(Db::Sqlite(&conn));
        conn
    }

    #[test]
    fn mandate_pages_cover_every_row_once_newest_first() {
        on_both_seeded(|conn| {
            let mut seen = Vec::new();
            let mut before = None;
            loop {
                let page = list_mandates(
                    conn,
                    &MandateFilter {
                        states: vec![1, 2],
                        after: before.clone(),
                        limit: 7,
                        ..Default::default()
                    },
                )
                .unwrap();
                if page.is_empty() {
                    break;
                }
                before = page.last().map(|m| Keyset {
                    key: m.created_at.clone(),
                    seq: m.seq,
                });
                seen.extend(page.into_iter().map(|m| m.seq));
            }
            let expected: Vec<i64> = (1..=30).rev().filter(|n| n % 3 < 2).collect();
            assert_eq!(seen, expected);
        });
    }

    #[test]
    fn customers_are_found_by_name_rut_and_user_id() {
        on_both_seeded(|conn| {
            let find = |text: &str| -> Vec<String> {
                search_customers(
                    conn,
                    &CustomerFilter {
                        text: Some(text.into()),
                        limit: 10,
                        ..Default::default()
                    },
                )
                .unwrap()
                .into_iter()
                .map(|c| c.customer.user_id)
                .collect()
            };
            assert_eq!(find("pérez"), vec!["cust-1"]);
            assert_eq!(find("PEREZ"), vec!["cust-1"]);
            assert_eq!(find("munoz"), vec!["cust-010"]);
            assert_eq!(find("muñoz jose"), vec!["cust-010"]);
            assert_eq!(find("12.345.678-5"), vec!["cust-1"]);
            assert_eq!(find("123456785"), vec!["cust-1"]);
            assert_eq!(find("12.345"), vec!["cust-1"]);
            assert_eq!(find("1234"), vec!["cust-1"]);
            assert_eq!(find("cust-2"), vec!["cust-2"]);
            assert_eq!(find("cust-01"), vec!["cust-010"]);
            assert_eq!(find("usr_2"), vec!["cust-2"]);
            assert_eq!(find("So"), vec!["cust-2"]);
            assert!(find("nadie").is_empty());
            assert!(find("\"").is_empty());
            assert_eq!(find("pérez\u{0}cust-1"), vec!["cust-1"]);
        });
    }

    #[test]
    fn request_audit_finds_a_correlation_id_on_every_day_through_its_index() {
        on_both_seeded(|conn| {
            for (at, id) in [
                ("2026-03-01T23:59:59.999Z", "c-1"),
                ("2026-03-02T00:00:00.000Z", "c-2"),
                ("2026-03-05T10:00:00.000Z", "c-1"),
                ("2026-03-09T08:00:00.000Z", "c-1"),
            ] {
                conn.execute(
                    "INSERT INTO audit_log (at, method, path, status, duration_ms, correlation_id, headers)
                     VALUES (?1, 'GET', '/api/v1/mandate/id/x', 200, 1.0, ?2, '{}')",
                    &params![at, id],
                )
                .unwrap();
            }
            let filter = |id: &str| RequestAuditFilter {
                correlation_id: Some(id.into()),
                limit: 10,
                ..Default::default()
            };
            let found = |id: &str| -> Vec<String> {
                request_audit(conn, &filter(id))
                    .unwrap()
                    .into_iter()
                    .map(|l| l.at)
                    .collect()
            };
            assert_eq!(
                found("c-1"),
                [
                    "2026-03-09T08:00:00.000Z",
                    "2026-03-05T10:00:00.000Z",
                    "2026-03-01T23:59:59.999Z"
                ]
            );
            assert_eq!(found("c-2"), ["2026-03-02T00:00:00.000Z"]);
            assert!(found("c-3").is_empty());
        });
        let conn = sqlite_seeded();
        let plan: Vec<String> = conn
            .prepare(
                "EXPLAIN QUERY PLAN SELECT seq FROM audit_log WHERE substr(at, 1, 10) IN
                 (SELECT '2026-03-01') AND correlation_id = 'c-1'",
            )
            .unwrap()
            .query_map([], |r| r.get(3))
            .unwrap()
            .collect::<rusqlite::Result<_>>()
            .unwrap();
        assert!(
            plan.iter()
                .any(|step| step.contains("audit_log_by_day_correlation")),
            "{plan:?}"
        );
    }

    #[test]
    fn search_text_never_reaches_fts5_as_syntax() {
        on_both_seeded(|conn| {
            for text in [
                "\"",
                "\"\"\"",
                "***",
                "AND",
                "OR x",
                "NEAR(a b)",
                "col:val",
                "^abc",
                "-abc",
                "a\"b c",
                "(((",
                "ñ̃ñ",
                "usr_2 OR 1=1",
                "\u{1b}\u{7bd69}\u{98}\u{0}\u{8a55b}",
                "abc\u{0}def",
                "\u{0}\u{0}\u{0}",
            ] {
                let filter = CustomerFilter {
                    text: Some(text.into()),
                    limit: 5,
                    ..Default::default()
                };
                search_customers(conn, &filter).unwrap_or_else(|e| panic!("{text}: {e}"));
                let filter = MandateFilter {
                    text: Some(text.into()),
                    limit: 5,
                    ..Default::default()
                };
                list_mandates(conn, &filter).unwrap_or_else(|e| panic!("{text}: {e}"));
            }
        });
    }

    #[test]
    fn search_follows_updates_and_deletes() {
        on_both_seeded(|conn| {
            let count = |text: &str| {
                count_customers(
                    conn,
                    &CustomerFilter {
                        text: Some(text.into()),
                        ..Default::default()
                    },
                )
                .unwrap()
            };
            conn.execute(
                "UPDATE customers SET last_name = 'Núñez' WHERE seq = 1",
                &params![],
            )
            .unwrap();
            assert_eq!((count("perez"), count("nunez")), (0, 1));
            conn.execute("DELETE FROM customers WHERE seq = 3", &params![])
                .unwrap();
            assert_eq!(count("munoz"), 0);
        });
    }

    #[test]
    fn mandates_are_found_by_part_of_their_id_or_their_customer() {
        on_both_seeded(|conn| {
            let find = |text: &str| -> Vec<i64> {
                list_mandates(
                    conn,
                    &MandateFilter {
                        text: Some(text.into()),
                        limit: 50,
                        ..Default::default()
                    },
                )
                .unwrap()
                .into_iter()
                .map(|m| m.seq)
                .collect()
            };
            assert_eq!(find("M-25"), vec![25]);
            assert_eq!(find("m-2"), (20..=29).rev().chain([2]).collect::<Vec<_>>());
            assert_eq!(find("man_7"), vec![7]);
            // Customer 2 (Luis Soto) holds the odd mandates.
            assert_eq!(find("soto").len(), 15);
            assert_eq!(find("M-"), (1..=30).rev().collect::<Vec<_>>());
        });
    }

    #[test]
    fn sorted_pages_cover_every_row_once_in_order() {
        on_both_seeded(|conn| {
            for descending in [false, true] {
                let mut seen = Vec::new();
                let mut after = None;
                loop {
                    let sort = Sort {
                        column: MandateColumn::MandateId,
                        descending,
                    };
                    let page = list_mandates(
                        conn,
                        &MandateFilter {
                            sort,
                            after: after.clone(),
                            limit: 4,
                            ..Default::default()
                        },
                    )
                    .unwrap();
                    let Some(last) = page.last() else { break };
                    after = Some(Keyset {
                        key: sort.column.key_of(last),
                        seq: last.seq,
                    });
                    seen.extend(page.into_iter().map(|m| m.external_id));
                }
                let mut expected: Vec<String> = (1..=30).map(|n| format!("M-{n}")).collect();
                expected.sort();
                if descending {
                    expected.reverse();
                }
                assert_eq!(seen, expected);
            }
            let filter = MandateFilter {
                states: vec![2],
                ..Default::default()
            };
            assert_eq!(count_mandates(conn, &filter).unwrap(), 10);
        });
    }

    #[test]
    fn filters_use_the_staff_indexes() {
        let conn = sqlite_seeded();
        let plan = |sql: &str| -> String {
            let mut stmt = conn.prepare(&format!("EXPLAIN QUERY PLAN {sql}")).unwrap();
            stmt.query_map([], |r| r.get::<_, String>(3))
                .unwrap()
                .map(Result::unwrap)
                .collect::<Vec<_>>()
                .join(" | ")
        };
        for (filter, index) in [
            ("m.state = 2", "mandates_by_state_created"),
            ("m.type = 1", "mandates_by_type_created"),
            ("m.commerce_id = 1", "mandates_by_commerce_created"),
            ("1 = 1", "mandates_by_created"),
        ] {
            let p = plan(&format!(
                "{MANDATE_LINE_SELECT} WHERE {filter} ORDER BY m.created_at DESC, m.seq DESC LIMIT 51"
            ));
            assert!(p.contains(index), "{filter}: {p}");
            assert!(!p.contains("TEMP B-TREE"), "{filter} sorts: {p}");
        }
        for (sort, index) in [
            ("m.external_id ASC, m.seq ASC", "mandates_by_external_id"),
            ("m.external_id DESC, m.seq DESC", "mandates_by_external_id"),
        ] {
            let p = plan(&format!(
                "{MANDATE_LINE_SELECT} WHERE 1 = 1 ORDER BY {sort} LIMIT 51"
            ));
            assert!(p.contains(index), "{sort}: {p}");
            assert!(!p.contains("TEMP B-TREE"), "{sort} sorts: {p}");
        }
        let p =
            plan("SELECT seq FROM customers c ORDER BY c.last_name COLLATE NOCASE, c.seq LIMIT 51");
        assert!(p.contains("customers_by_last_name"), "{p}");
        assert!(!p.contains("TEMP B-TREE"), "{p}");
    }

    #[test]
    fn customers_sorted_by_last_name_page_alike_on_both_backends() {
        on_both_seeded(|db| {
            db.execute_batch(
                "INSERT INTO customers (seq, id, commerce_id, user_id, rut, first_name, last_name, email, created_at, updated_at)
                   VALUES (4, 'usr_4', 1, 'cust-4', '22222222-2', 'Eva', 'soto', 'eva@example.cl', '2026-01-04T00:00:00.000Z', '2026-01-04T00:00:00.000Z'),
                          (5, 'usr_5', 1, 'cust-5', '33333333-3', 'Iván', 'Álvarez', 'ivan@example.cl', '2026-01-05T00:00:00.000Z', '2026-01-05T00:00:00.000Z'),
                          (6, 'usr_6', 1, 'cust-6', '44444444-4', 'Olga', 'de la Fuente', 'olga@example.cl', '2026-01-06T00:00:00.000Z', '2026-01-06T00:00:00.000Z'),
                          (7, 'usr_7', 1, 'cust-7', '55555555-5', 'Ugo', 'Zapata', 'ugo@example.cl', '2026-01-07T00:00:00.000Z', '2026-01-07T00:00:00.000Z');",
            )
            .unwrap();
            for descending in [false, true] {
                let sort = Sort {
                    column: CustomerColumn::LastName,
                    descending,
                };
                let mut seen = Vec::new();
                let mut after = None;
                loop {
                    let filter = CustomerFilter {
                        sort,
                        after: after.clone(),
                        limit: 2,
                        ..Default::default()
                    };
                    let page = search_customers(db, &filter).unwrap();
                    let Some(last) = page.last() else { break };
                    after = Some(Keyset {
                        key: sort.column.key_of(&last.customer),
                        seq: last.customer.seq,
                    });
                    seen.extend(page.into_iter().map(|c| c.customer.seq));
                }
                // ASCII letters fold, other characters compare as bytes (after every ASCII
                // letter), and equal names keep their creation order.
                let mut expected = vec![6, 3, 1, 2, 4, 7, 5];
                if descending {
                    expected.reverse();
                }
                assert_eq!(seen, expected, "descending: {descending}");
            }
        });
    }

    #[test]
    fn staff_audit_filters_by_email_in_any_case_and_by_action_family() {
        on_both_seeded(|db| {
            for (email, action) in [
                ("Ana@Example.cl", "mandate.cancel"),
                ("eva@example.cl", "mandate.retry"),
                ("ana@example.cl", "settings.retention"),
            ] {
                crate::staff_audit::append(
                    db,
                    "2026-11-25T10:00:00.000Z",
                    email,
                    action,
                    None,
                    None,
                )
                .unwrap();
            }
            let actions = |filter: StaffAuditFilter| -> Vec<String> {
                staff_audit(
                    db,
                    &StaffAuditFilter {
                        limit: 10,
                        ..filter
                    },
                )
                .unwrap()
                .into_iter()
                .map(|l| l.action)
                .collect()
            };
            let by_email = StaffAuditFilter {
                email: Some("ANA@example.CL".into()),
                ..Default::default()
            };
            assert_eq!(actions(by_email), ["settings.retention", "mandate.cancel"]);
            let family = StaffAuditFilter {
                action: Some("mandate.".into()),
                ..Default::default()
            };
            assert_eq!(actions(family), ["mandate.retry", "mandate.cancel"]);
            let literal = StaffAuditFilter {
                action: Some("mandate%".into()),
                ..Default::default()
            };
            assert!(actions(literal).is_empty());
        });
    }

    #[test]
    fn settings_lists_read_alike_on_both_backends() {
        on_both_seeded(|db| {
            db.execute_batch(
                "INSERT INTO commerces (id, code, name, password_hash, payment_methods, webhook_secret, created_at)
                   VALUES (2, 'C2', 'Dos', 'x', '[3]', 's', '2026-01-01T00:00:00.000Z');
                 INSERT INTO api_keys (id, prefix, key_hash, all_commerces, created_at)
                   VALUES (1, 'mk_all', 'h1', 1, '2026-11-25T10:00:00.000Z'),
                          (2, 'mk_two', 'h2', 0, '2026-11-25T11:00:00.000Z');
                 INSERT INTO api_key_commerces (api_key_id, commerce_id) VALUES (2, 1), (2, 2);
                 INSERT INTO staff (email, password_hash, role, created_at)
                   VALUES ('ana@example.cl', 'h', 'admin', '2026-11-25T10:00:00.000Z');",
            )
            .unwrap();
            let keys = api_keys(db).unwrap();
            assert_eq!(keys[0].prefix, "mk_two");
            let mut scope = keys[0].commerces.clone();
            scope.sort();
            assert_eq!(scope, ["C1", "C2"]);
            assert!(keys[1].commerces.is_empty() && keys[1].all_commerces);

            assert!(set_retry_policy(db, "C1", Some("{\"maxAttempts\":2}")).unwrap());
            assert!(!set_retry_policy(db, "C9", None).unwrap());
            let lines = commerces(db).unwrap();
            assert_eq!(
                lines[0].retry_policy.as_deref(),
                Some("{\"maxAttempts\":2}")
            );

            assert_eq!(active_admins(db).unwrap(), 1);
            assert!(update_staff(db, "ana@example.cl", "viewer", Some("t1")).unwrap());
            assert_eq!(active_admins(db).unwrap(), 0);
            let member = staff_member(db, "ana@example.cl").unwrap().unwrap();
            assert_eq!(
                (member.role.as_str(), member.disabled_at.as_deref()),
                ("viewer", Some("t1"))
            );
            assert_eq!(staff_members(db).unwrap().len(), 1);

            let counts = mandate_counts(db, Some(1)).unwrap();
            assert_eq!(counts.iter().map(|(_, n)| n).sum::<i64>(), 30);
            assert!(mandate_counts(db, Some(2)).unwrap().is_empty());
            assert!(failing_webhooks(db, 5).unwrap().recent.is_empty());
            assert_eq!(mandates_of_customer(db, 2).unwrap().len(), 15);
        });
    }

    #[test]
    fn postgres_searches_read_the_trigram_indexes() {
        let database = crate::pg_test::database();
        let pg = database.connect();
        pg.transaction(|db| {
            seed(db);
            db.execute_batch("SET LOCAL enable_seqscan = off")?;
            let mut q = Query::new(Backend::Postgres, "EXPLAIN SELECT c.seq FROM customers c");
            customer_conditions(
                &mut q,
                &CustomerFilter {
                    text: Some("munoz jose".into()),
                    ..Default::default()
                },
            );
            let plan = q.rows(db, |r| r.get::<String>(0))?.join("\n");
            assert!(plan.contains("customers_search"), "{plan}");
            let mut q = Query::new(Backend::Postgres, "EXPLAIN SELECT m.seq FROM mandates m");
            mandate_conditions(
                &mut q,
                &MandateFilter {
                    text: Some("M-25".into()),
                    ..Default::default()
                },
            );
            let plan = q.rows(db, |r| r.get::<String>(0))?.join("\n");
            assert!(plan.contains("mandates_search"), "{plan}");
            Ok::<(), db::Error>(())
        })
        .unwrap();
    }

    #[test]
    fn a_filter_value_with_a_nul_selects_nothing_on_both_backends() {
        on_both_seeded(|db| {
            let by_id = MandateFilter {
                id: Some("man_1\u{0}".into()),
                limit: 5,
                ..Default::default()
            };
            assert!(list_mandates(db, &by_id).unwrap().is_empty());
            assert_eq!(count_mandates(db, &by_id).unwrap(), 0);
            let after = MandateFilter {
                after: Some(Keyset {
                    key: "2026\u{0}".into(),
                    seq: 3,
                }),
                limit: 5,
                ..Default::default()
            };
            assert!(list_mandates(db, &after).unwrap().is_empty());
            let email = StaffAuditFilter {
                email: Some("ana\u{0}@example.cl".into()),
                limit: 5,
                ..Default::default()
            };
            assert!(staff_audit(db, &email).unwrap().is_empty());
            let path = RequestAuditFilter {
                path: Some("/api\u{0}".into()),
                correlation_id: Some("\u{0}".into()),
                limit: 5,
                ..Default::default()
            };
            assert!(request_audit(db, &path).unwrap().is_empty());
            // Search text is cut into words at control characters instead.
            let text = CustomerFilter {
                text: Some("soto\u{0}luis".into()),
                limit: 5,
                ..Default::default()
            };
            assert_eq!(count_customers(db, &text).unwrap(), 1);
        });
    }
}
