//! The backend-neutral query layer: what a store function uses instead of rusqlite directly.
//!
//! A [`Db`] is a copyable handle on either a SQLite connection (or transaction) or a
//! PostgreSQL session ([`PgConn`]) inside a transaction. Store functions write their SQL once,
//! with SQLite's placeholders (`?1`, `?2`, or bare `?`); on PostgreSQL the text is translated to
//! `$1`, `$2` once per statement and the prepared statement is cached on the connection, keyed
//! by the original text. On SQLite every call goes straight to rusqlite's `prepare_cached`:
//! parameters are bound from a slice of [`Param`] on the stack, so nothing is allocated that
//! a direct rusqlite call would not allocate.
//!
//! Columns are read with [`Row::get`]. Integers are `i64` on both backends; flags are `bool`
//! in Rust and `0`/`1` in both schemas (PostgreSQL's columns are `BIGINT`), so `WHERE flag = 1`
//! is one SQL text. Where the dialects truly differ, the store function matches on
//! [`Db::backend`] and keeps both texts side by side.
//!
//! A PostgreSQL transaction is aborted by its first failing statement: code that expects a
//! statement to fail (a unique violation it handles) writes `ON CONFLICT` instead, which both
//! dialects understand.

use std::cell::RefCell;
use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use postgres::types::{IsNull, ToSql as PgToSql, Type};
use rusqlite::types::{ToSqlOutput, ValueRef};

pub use super::pg_connect::{PgSettings, PgTarget};

/// Which database a [`Db`] talks to, for the few statements written twice.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Backend {
    Sqlite,
    Postgres,
}

/// A failed statement, from either backend.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error(transparent)]
    Sqlite(#[from] rusqlite::Error),
    #[error(transparent)]
    Postgres(#[from] postgres::Error),
    /// `query_row` found nothing; `query_opt` answers `None` instead.
    #[error("the query returned no rows")]
    NoRows,
    /// A column held a value the Rust type cannot represent.
    #[error("column {index}: {message}")]
    Column { index: usize, message: String },
    /// A new PostgreSQL connection failed; `place` names the server, never the password. The
    /// message carries the causes (refused, timed out, the certificate's fault), which the
    /// driver's own message leaves to its sources.
    #[error("could not connect to PostgreSQL at {place}: {}", with_causes(cause))]
    Connect {
        place: String,
        cause: postgres::Error,
    },
    /// The server did not finish a new connection in time (it accepted TCP and went quiet).
    #[error("could not connect to PostgreSQL at {place}: {why}")]
    ConnectTimeout { place: String, why: String },
    /// Every connection the pool may open was in use for as long as a caller waits.
    #[error("all {max} PostgreSQL connections stayed in use for {waited:?}")]
    Busy { max: usize, waited: Duration },
    /// The CA file named for the server's certificate cannot be used.
    #[error("the PostgreSQL CA file {}: {message}", path.display())]
    CaFile { path: PathBuf, message: String },
    /// TLS to the server cannot be set up as asked.
    #[error("PostgreSQL TLS: {0}")]
    Tls(String),
    /// The PostgreSQL URL cannot be read (the message never repeats the URL).
    #[error("the PostgreSQL URL: {0}")]
    Url(String),
}

impl Error {
    /// Column `index` held a value its Rust type cannot represent, for the reason `message`.
    pub fn column(index: usize, message: impl std::fmt::Display) -> Error {
        Error::Column {
            index,
            message: message.to_string(),
        }
    }

    /// Column `index` held an id that names no `what` (a state, a type) this build knows.
    pub fn unknown(index: usize, what: &str) -> Error {
        Error::column(index, format_args!("unknown {what}"))
    }

    /// A `UNIQUE` (or primary key) constraint refused the row.
    pub fn is_unique_violation(&self) -> bool {
        match self {
            Error::Sqlite(rusqlite::Error::SqliteFailure(e, _)) => matches!(
                e.extended_code,
                rusqlite::ffi::SQLITE_CONSTRAINT_UNIQUE
                    | rusqlite::ffi::SQLITE_CONSTRAINT_PRIMARYKEY
            ),
            Error::Postgres(e) => e.code() == Some(&postgres::error::SqlState::UNIQUE_VIOLATION),
            _ => false,
        }
    }

    /// The database is overloaded rather than broken: no free connection in time, a statement
    /// cancelled by the statement timeout, a server with no connection slot left or too slow
    /// to finish a new connection. Worth trying again shortly; nothing was written.
    pub fn is_busy(&self) -> bool {
        use postgres::error::SqlState;
        let code = match self {
            Error::Busy { .. } | Error::ConnectTimeout { .. } => return true,
            Error::Postgres(e) | Error::Connect { cause: e, .. } => e.code(),
            _ => None,
        };
        code.is_some_and(|code| {
            [
                SqlState::QUERY_CANCELED,
                SqlState::TOO_MANY_CONNECTIONS,
                SqlState::CANNOT_CONNECT_NOW,
            ]
            .contains(code)
        })
    }
}

/// `error` and each of its sources, as one line.
pub(super) fn with_causes(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        let cause_text = cause.to_string();
        // Some causes repeat their parent's text.
        if !text.ends_with(&cause_text) {
            text.push_str(": ");
            text.push_str(&cause_text);
        }
        source = cause.source();
    }
    text
}

impl From<Error> for mandato_core::error::Error {
    fn from(e: Error) -> Self {
        if e.is_busy() {
            mandato_core::error::Error::busy(&e)
        } else {
            mandato_core::error::Error::Internal(e.into())
        }
    }
}

pub type Result<T, E = Error> = std::result::Result<T, E>;

/// One statement parameter. Built with [`params!`](crate::db_params) or `Param::from`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Param<'a> {
    Null,
    Int(i64),
    /// Stored as `0`/`1` on both backends.
    Bool(bool),
    /// Measurements only (durations, page coordinates); money is TEXT.
    Real(f64),
    Text(&'a str),
    Blob(&'a [u8]),
}

impl From<i64> for Param<'_> {
    fn from(v: i64) -> Self {
        Param::Int(v)
    }
}

impl From<bool> for Param<'_> {
    fn from(v: bool) -> Self {
        Param::Bool(v)
    }
}

impl From<f64> for Param<'_> {
    fn from(v: f64) -> Self {
        Param::Real(v)
    }
}

impl<'a> From<&'a str> for Param<'a> {
    fn from(v: &'a str) -> Self {
        Param::Text(v)
    }
}

impl<'a> From<&'a String> for Param<'a> {
    fn from(v: &'a String) -> Self {
        Param::Text(v)
    }
}

impl<'a> From<&'a [u8]> for Param<'a> {
    fn from(v: &'a [u8]) -> Self {
        Param::Blob(v)
    }
}

impl<'a> From<&'a Vec<u8>> for Param<'a> {
    fn from(v: &'a Vec<u8>) -> Self {
        Param::Blob(v)
    }
}

impl From<&i64> for Param<'_> {
    fn from(v: &i64) -> Self {
        Param::Int(*v)
    }
}

impl From<&bool> for Param<'_> {
    fn from(v: &bool) -> Self {
        Param::Bool(*v)
    }
}

impl<'a, T: Into<Param<'a>>> From<Option<T>> for Param<'a> {
    fn from(v: Option<T>) -> Self {
        v.map_or(Param::Null, Into::into)
    }
}

impl<'a> From<&'a Option<String>> for Param<'a> {
    fn from(v: &'a Option<String>) -> Self {
        v.as_deref().into()
    }
}

impl From<&Option<i64>> for Param<'_> {
    fn from(v: &Option<i64>) -> Self {
        (*v).into()
    }
}

/// The parameters of one statement, as an array on the stack:
/// `db_params![commerce_id, user_id.as_str(), now]`.
#[macro_export]
macro_rules! db_params {
    () => { [] as [$crate::db::Param<'_>; 0] };
    ($($value:expr),+ $(,)?) => { [$($crate::db::Param::from($value)),+] };
}
pub use crate::db_params as params;

impl rusqlite::ToSql for Param<'_> {
    fn to_sql(&self) -> rusqlite::Result<ToSqlOutput<'_>> {
        Ok(ToSqlOutput::Borrowed(match *self {
            Param::Null => ValueRef::Null,
            Param::Int(v) => ValueRef::Integer(v),
            Param::Bool(v) => ValueRef::Integer(i64::from(v)),
            Param::Real(v) => ValueRef::Real(v),
            Param::Text(v) => ValueRef::Text(v.as_bytes()),
            Param::Blob(v) => ValueRef::Blob(v),
        }))
    }
}

impl PgToSql for Param<'_> {
    fn to_sql(
        &self,
        ty: &Type,
        out: &mut bytes::BytesMut,
    ) -> std::result::Result<IsNull, Box<dyn std::error::Error + Sync + Send>> {
        match *self {
            Param::Null => Ok(IsNull::Yes),
            Param::Int(v) => int_to_sql(v, ty, out),
            Param::Bool(v) if *ty == Type::BOOL => v.to_sql(ty, out),
            Param::Bool(v) => int_to_sql(i64::from(v), ty, out),
            Param::Real(v) => v.to_sql(ty, out),
            Param::Text(v) => v.to_sql(ty, out),
            Param::Blob(v) => v.to_sql(ty, out),
        }
    }

    /// The variant decides the encoding; `to_sql` refuses a column type it cannot write.
    fn accepts(_: &Type) -> bool {
        true
    }

    postgres::types::to_sql_checked!();
}

/// An integer for an integer column of any width (a narrower one refuses what does not fit).
fn int_to_sql(
    v: i64,
    ty: &Type,
    out: &mut bytes::BytesMut,
) -> std::result::Result<IsNull, Box<dyn std::error::Error + Sync + Send>> {
    match *ty {
        Type::INT2 => i16::try_from(v)?.to_sql(ty, out),
        Type::INT4 => i32::try_from(v)?.to_sql(ty, out),
        Type::BOOL => (v != 0).to_sql(ty, out),
        _ => v.to_sql(ty, out),
    }
}

/// One result row of either backend or of a JSON array of rows (`json_rows`), or the columns
/// of one from a place on (`columns_from`): a row of several tables read by each table's own
/// reader.
pub struct Row<'r> {
    source: RowSource<'r>,
    /// Where this view's column 0 is in the row.
    first: usize,
}

#[derive(Clone, Copy)]
enum RowSource<'r> {
    Sqlite(&'r rusqlite::Row<'r>),
    Postgres(&'r postgres::Row),
    /// A row a statement aggregated into a JSON array of its values, in column order
    /// (`json_rows`): the rows of a child table read with their parent's in one statement.
    Json(&'r [serde_json::Value]),
}

impl<'r> Row<'r> {
    fn sqlite(row: &'r rusqlite::Row<'r>) -> Row<'r> {
        Row {
            source: RowSource::Sqlite(row),
            first: 0,
        }
    }

    fn postgres(row: &'r postgres::Row) -> Row<'r> {
        Row {
            source: RowSource::Postgres(row),
            first: 0,
        }
    }

    /// Each row of `text`, a JSON array of rows each a JSON array of column values (what
    /// PostgreSQL's `json_agg(json_build_array(..))` makes, NULL for none), read by `f` as
    /// any row is: integers, text, booleans and NULLs read as their columns would.
    pub fn json_rows<T>(
        text: Option<&str>,
        mut f: impl FnMut(&Row<'_>) -> Result<T>,
    ) -> Result<Vec<T>> {
        let Some(text) = text else {
            return Ok(Vec::new());
        };
        let rows: Vec<Vec<serde_json::Value>> =
            serde_json::from_str(text).map_err(|e| Error::column(0, e))?;
        rows.iter()
            .map(|values| {
                f(&Row {
                    source: RowSource::Json(values),
                    first: 0,
                })
            })
            .collect()
    }

    /// The same row seen from its column `first` on: that column is the view's column 0.
    pub fn columns_from(&self, first: usize) -> Row<'r> {
        Row {
            source: self.source,
            first: self.first + first,
        }
    }

    /// The column at `index` (from 0) as `T`.
    pub fn get<T: Column>(&self, index: usize) -> Result<T> {
        let index = self.first + index;
        match self.source {
            RowSource::Sqlite(row) => T::from_sqlite(row, index),
            RowSource::Postgres(row) => T::from_postgres(row, index),
            RowSource::Json(values) => match values.get(index) {
                Some(value) => T::from_json(value, index),
                None => Err(Error::column(index, "no such column in the JSON row")),
            },
        }
    }
}

/// A Rust type a column can be read as, on both backends.
pub trait Column: Sized {
    fn from_sqlite(row: &rusqlite::Row<'_>, index: usize) -> Result<Self>;
    fn from_postgres(row: &postgres::Row, index: usize) -> Result<Self>;
    /// A column of a row read from JSON (`Row::json_rows`).
    fn from_json(value: &serde_json::Value, index: usize) -> Result<Self>;
}

/// The value of a column read from JSON, or why it cannot be a `what`.
fn json_value<T>(
    value: &serde_json::Value,
    index: usize,
    what: &str,
    read: impl FnOnce(&serde_json::Value) -> Option<T>,
) -> Result<T> {
    read(value).ok_or_else(|| Error::column(index, format!("{value} is not {what}")))
}

/// `Option<T>` of a JSON column: NULL is `None`, anything else is read as `T`.
fn json_option<T: Column>(value: &serde_json::Value, index: usize) -> Result<Option<T>> {
    match value {
        serde_json::Value::Null => Ok(None),
        value => T::from_json(value, index).map(Some),
    }
}

/// Types both drivers read the same way.
macro_rules! same_on_both {
    ($($t:ty => $from_json:expr),*) => {$(
        impl Column for $t {
            fn from_sqlite(row: &rusqlite::Row<'_>, index: usize) -> Result<Self> {
                Ok(row.get(index)?)
            }
            fn from_postgres(row: &postgres::Row, index: usize) -> Result<Self> {
                Ok(row.try_get(index)?)
            }
            fn from_json(value: &serde_json::Value, index: usize) -> Result<Self> {
                let read: fn(&serde_json::Value, usize) -> Result<Self> = $from_json;
                read(value, index)
            }
        }
    )*};
}
same_on_both!(
    String => |value, index| json_value(value, index, "text", |v| v.as_str().map(str::to_string)),
    Option<String> => json_option,
    Vec<u8> => |_, index| Err(Error::column(index, "bytes are not read from JSON")),
    Option<Vec<u8>> => json_option,
    f64 => |value, index| json_value(value, index, "a number", serde_json::Value::as_f64),
    Option<f64> => json_option
);

impl Column for Option<i64> {
    fn from_sqlite(row: &rusqlite::Row<'_>, index: usize) -> Result<Self> {
        Ok(row.get(index)?)
    }

    /// `BIGINT` columns and `count(*)` are `INT8`; an `INT4` expression widens.
    fn from_postgres(row: &postgres::Row, index: usize) -> Result<Self> {
        let ty = row.columns().get(index).map(|c| c.type_().clone());
        Ok(match ty {
            Some(Type::INT4) => row.try_get::<_, Option<i32>>(index)?.map(i64::from),
            Some(Type::INT2) => row.try_get::<_, Option<i16>>(index)?.map(i64::from),
            Some(Type::BOOL) => row.try_get::<_, Option<bool>>(index)?.map(i64::from),
            _ => row.try_get(index)?,
        })
    }

    fn from_json(value: &serde_json::Value, index: usize) -> Result<Self> {
        json_option(value, index)
    }
}

impl Column for i64 {
    fn from_sqlite(row: &rusqlite::Row<'_>, index: usize) -> Result<Self> {
        Ok(row.get(index)?)
    }

    fn from_postgres(row: &postgres::Row, index: usize) -> Result<Self> {
        Option::<i64>::from_postgres(row, index)?.ok_or_else(|| null_column(index))
    }

    fn from_json(value: &serde_json::Value, index: usize) -> Result<Self> {
        json_value(value, index, "an integer", serde_json::Value::as_i64)
    }
}

impl Column for Option<bool> {
    fn from_sqlite(row: &rusqlite::Row<'_>, index: usize) -> Result<Self> {
        Ok(row.get(index)?)
    }

    /// Flags are `BIGINT` 0/1 in the schema; a boolean expression (`EXISTS`) reads as well.
    fn from_postgres(row: &postgres::Row, index: usize) -> Result<Self> {
        let is_bool = row
            .columns()
            .get(index)
            .is_some_and(|c| *c.type_() == Type::BOOL);
        if is_bool {
            Ok(row.try_get(index)?)
        } else {
            Ok(Option::<i64>::from_postgres(row, index)?.map(|v| v != 0))
        }
    }

    fn from_json(value: &serde_json::Value, index: usize) -> Result<Self> {
        json_option(value, index)
    }
}

impl Column for bool {
    fn from_sqlite(row: &rusqlite::Row<'_>, index: usize) -> Result<Self> {
        Ok(row.get(index)?)
    }

    fn from_postgres(row: &postgres::Row, index: usize) -> Result<Self> {
        Option::<bool>::from_postgres(row, index)?.ok_or_else(|| null_column(index))
    }

    /// A flag is `true`/`false`, or a 0/1 integer as the schema stores it.
    fn from_json(value: &serde_json::Value, index: usize) -> Result<Self> {
        json_value(value, index, "a flag", |v| {
            v.as_bool().or_else(|| v.as_i64().map(|n| n != 0))
        })
    }
}

fn null_column(index: usize) -> Error {
    Error::column(index, "NULL where a value was expected")
}

/// Many rows' keys as one parameter of a PostgreSQL statement, read there by [`ANY_KEY`]: a
/// page of a thousand installments is one statement, not a thousand round trips.
pub fn key_array(keys: &[i64]) -> String {
    let listed: Vec<String> = keys.iter().map(i64::to_string).collect();
    format!("{{{}}}", listed.join(","))
}

/// `seq = ANY(..)` of the keys `key_array` wrote into `?1`. The parameter is declared text (an
/// array literal), as every `Param::Text` is sent.
pub const ANY_KEY: &str = "ANY(CAST(CAST(?1 AS TEXT) AS bigint[]))";

/// Many rows as one parameter of a PostgreSQL statement, read there by [`json_records`]: a
/// JSON array of objects, one per row, with serde_json's escaping (no SQL is assembled from
/// values).
pub fn json_rows_param(rows: Vec<serde_json::Value>) -> String {
    serde_json::Value::Array(rows).to_string()
}

/// The rows `json_rows_param` wrote into `?1`, as a relation `x` with the typed `columns`
/// (`seq bigint, state text`): `FROM {json_records(..)}`.
pub fn json_records(columns: &str) -> String {
    format!("json_to_recordset(CAST(CAST(?1 AS TEXT) AS json)) AS x({columns})")
}

/// `columns` (a comma-separated list) each prefixed with `alias.`.
pub(crate) fn qualified(alias: &str, columns: &str) -> String {
    columns
        .split(',')
        .map(|column| format!("{alias}.{}", column.trim()))
        .collect::<Vec<_>>()
        .join(", ")
}

/// A handle on a connection inside a transaction, of either backend. Cheap to copy: pass it
/// by value from one store function to the next.
#[derive(Clone, Copy)]
pub enum Db<'a> {
    Sqlite(&'a rusqlite::Connection),
    Postgres(&'a PgConn),
}

impl<'a> From<&'a rusqlite::Connection> for Db<'a> {
    fn from(conn: &'a rusqlite::Connection) -> Self {
        Db::Sqlite(conn)
    }
}

impl<'a> From<&'a rusqlite::Transaction<'_>> for Db<'a> {
    fn from(tx: &'a rusqlite::Transaction<'_>) -> Self {
        Db::Sqlite(tx)
    }
}

impl<'a> From<&'a PgConn> for Db<'a> {
    fn from(conn: &'a PgConn) -> Self {
        Db::Postgres(conn)
    }
}

impl<'a> Db<'a> {
    /// The SQLite connection underneath, for SQLite's own machinery (and tests that fill a
    /// SQLite store directly); `None` on PostgreSQL.
    pub fn as_sqlite(self) -> Option<&'a rusqlite::Connection> {
        match self {
            Db::Sqlite(conn) => Some(conn),
            Db::Postgres(_) => None,
        }
    }

    pub fn backend(self) -> Backend {
        match self {
            Db::Sqlite(_) => Backend::Sqlite,
            Db::Postgres(_) => Backend::Postgres,
        }
    }

    /// Runs a statement; the number of rows it changed.
    pub fn execute(self, sql: &str, params: &[Param<'_>]) -> Result<u64> {
        match self {
            Db::Sqlite(conn) => {
                let changed = conn
                    .prepare_cached(sql)?
                    .execute(rusqlite::params_from_iter(params))?;
                Ok(changed as u64)
            }
            Db::Postgres(pg) => pg.with_statement(sql, |client, stmt| {
                Ok(client.execute(stmt, &pg_params(params))?)
            }),
        }
    }

    /// The first row, read by `f`; [`Error::NoRows`] when there is none.
    pub fn query_row<T>(
        self,
        sql: &str,
        params: &[Param<'_>],
        f: impl FnOnce(&Row<'_>) -> Result<T>,
    ) -> Result<T> {
        self.query_opt(sql, params, f)?.ok_or(Error::NoRows)
    }

    /// The first row, read by `f`, or `None`.
    pub fn query_opt<T>(
        self,
        sql: &str,
        params: &[Param<'_>],
        f: impl FnOnce(&Row<'_>) -> Result<T>,
    ) -> Result<Option<T>> {
        match self {
            Db::Sqlite(conn) => {
                let mut stmt = conn.prepare_cached(sql)?;
                let mut rows = stmt.query(rusqlite::params_from_iter(params))?;
                match rows.next()? {
                    Some(row) => f(&Row::sqlite(row)).map(Some),
                    None => Ok(None),
                }
            }
            Db::Postgres(pg) => {
                let row = pg.with_statement(sql, |client, stmt| {
                    Ok(client.query_opt(stmt, &pg_params(params))?)
                })?;
                row.map(|row| f(&Row::postgres(&row))).transpose()
            }
        }
    }

    /// Every row, each read by `f`, in the order the query gives them.
    pub fn query_map<T>(
        self,
        sql: &str,
        params: &[Param<'_>],
        mut f: impl FnMut(&Row<'_>) -> Result<T>,
    ) -> Result<Vec<T>> {
        match self {
            Db::Sqlite(conn) => {
                let mut stmt = conn.prepare_cached(sql)?;
                let mut rows = stmt.query(rusqlite::params_from_iter(params))?;
                let mut out = Vec::new();
                while let Some(row) = rows.next()? {
                    out.push(f(&Row::sqlite(row))?);
                }
                Ok(out)
            }
            Db::Postgres(pg) => {
                // The rows are fetched before `f` runs, so `f` may query again.
                let rows = pg.with_statement(sql, |client, stmt| {
                    Ok(client.query(stmt, &pg_params(params))?)
                })?;
                rows.iter().map(|row| f(&Row::postgres(row))).collect()
            }
        }
    }

    /// Runs several statements without parameters (schema changes).
    pub fn execute_batch(self, sql: &str) -> Result<()> {
        match self {
            Db::Sqlite(conn) => Ok(conn.execute_batch(sql)?),
            Db::Postgres(pg) => Ok(pg.inner.borrow_mut().client.batch_execute(sql)?),
        }
    }
}

/// The parameters as the PostgreSQL driver takes them. At most a handful per statement, and
/// PostgreSQL's own round trip dwarfs this small vector.
fn pg_params<'p>(params: &'p [Param<'_>]) -> Vec<&'p (dyn PgToSql + Sync)> {
    params.iter().map(|p| p as &(dyn PgToSql + Sync)).collect()
}

/// The most prepared statements a PostgreSQL connection keeps.
const STATEMENT_CACHE_CAPACITY: usize = 512;

/// How long a prepared statement is reused before it is prepared again, for a fresh plan.
/// After five executions PostgreSQL keeps a statement's generic plan until the tables'
/// statistics change, and a plan made while a table was empty scans it whole: a lookup by
/// primary key in a table that starts empty (the attempts, the acquirers' calls) then reads
/// every row written since, until the autovacuum's next analysis (a minute or more, as the
/// table grows). Preparing again plans with the table's current size. Measured in
/// `bench/README.md` ("Charging on PostgreSQL"): one `Parse` per statement and connection
/// every few seconds costs nothing beside the scans it ends.
/// (The store's own tests wait less for it.)
const STATEMENT_FRESH_FOR: Duration = if cfg!(test) {
    Duration::from_millis(300)
} else {
    Duration::from_secs(5)
};

/// One PostgreSQL connection and its prepared statements.
pub struct PgConn {
    inner: RefCell<PgInner>,
}

struct PgInner {
    client: postgres::Client,
    /// Keyed by the SQL as the store wrote it (SQLite placeholders), with when each was
    /// prepared (`STATEMENT_FRESH_FOR`).
    statements: HashMap<String, (postgres::Statement, Instant)>,
    /// The first column of the last row the last `simple_query` answered.
    last_answer: Option<String>,
}

impl PgConn {
    /// Connects to `url` (`postgres://user@host:port/database`, or with `?host=/socket/dir`)
    /// with the default settings and no statement timeout: migrations, tests, admin work.
    pub fn connect(url: &str) -> Result<PgConn> {
        PgTarget::new(url, &PgSettings::default())?.connect_unbounded()
    }

    pub(super) fn from_client(client: postgres::Client) -> PgConn {
        PgConn {
            inner: RefCell::new(PgInner {
                client,
                statements: HashMap::new(),
                last_answer: None,
            }),
        }
    }

    /// Runs `f` in one transaction: committed if it returns `Ok`, rolled back otherwise.
    /// A connection whose `f` panicked is left inside its transaction: drop it, never reuse it.
    pub fn transaction<T, E: From<Error>>(
        &self,
        f: impl FnOnce(Db<'_>) -> std::result::Result<T, E>,
    ) -> std::result::Result<T, E> {
        self.batch("BEGIN")?;
        self.finish(f(Db::Postgres(self)))
    }

    /// Ends the transaction this connection is in by what the work inside it answered.
    fn finish<T, E: From<Error>>(
        &self,
        outcome: std::result::Result<T, E>,
    ) -> std::result::Result<T, E> {
        match outcome {
            Ok(value) => {
                self.batch("COMMIT")?;
                Ok(value)
            }
            Err(e) => {
                // The operation's error is the one to answer; a connection that cannot even
                // roll back is closed, which `is_closed` tells whoever would reuse it.
                if let Err(rollback) = self.batch("ROLLBACK") {
                    tracing::warn!(error = %rollback, "could not roll back a PostgreSQL transaction");
                }
                Err(e)
            }
        }
    }

    /// Whether the server closed the connection (or it broke): such a one is dropped.
    pub fn is_closed(&self) -> bool {
        self.inner.borrow().client.is_closed()
    }

    /// Statements outside any transaction of ours (`CREATE DATABASE`, advisory locks).
    pub fn batch(&self, sql: &str) -> Result<()> {
        Ok(self.inner.borrow_mut().client.batch_execute(sql)?)
    }

    /// Statements without parameters in one round trip, keeping the first column of the last
    /// row they answered (`last_answer`).
    fn simple_query(&self, sql: &str) -> Result<()> {
        let mut inner = self.inner.borrow_mut();
        let messages = inner.client.simple_query(sql)?;
        inner.last_answer = messages.iter().rev().find_map(|message| match message {
            postgres::SimpleQueryMessage::Row(row) => row.get(0).map(str::to_string),
            _ => None,
        });
        Ok(())
    }

    /// Runs `f` with the prepared statement for `sql`, preparing (and caching) it the first
    /// time this connection sees the text.
    fn with_statement<T>(
        &self,
        sql: &str,
        f: impl FnOnce(&mut postgres::Client, &postgres::Statement) -> Result<T>,
    ) -> Result<T> {
        let mut inner = self.inner.borrow_mut();
        let PgInner {
            client, statements, ..
        } = &mut *inner;
        let stmt = match statements.get(sql) {
            Some((stmt, prepared_at)) if prepared_at.elapsed() < STATEMENT_FRESH_FOR => {
                stmt.clone()
            }
            _ => {
                let stmt = client.prepare(&to_postgres_placeholders(sql))?;
                // Filters build some texts from their parts: the cache is bounded, like
                // rusqlite's, so an unusual mix of them cannot grow it for good.
                if statements.len() >= STATEMENT_CACHE_CAPACITY {
                    statements.clear();
                }
                statements.insert(sql.to_string(), (stmt.clone(), Instant::now()));
                stmt
            }
        };
        f(client, &stmt)
    }
}

/// PostgreSQL connections for one database, reused from one transaction to the next. A
/// closure runs on the caller's (blocking) thread with a connection of its own, as a SQLite
/// read takes a reader from `Store`'s pool.
///
/// At most `max_connections` are open at once, idle ones included, so a busy engine never
/// makes the server refuse it with "too many clients": a caller finding them all in use waits
/// up to `acquire_timeout` for one to come back, then gets [`Error::Busy`] (answered 503
/// `SERVICE_BUSY` with `Retry-After`). A transaction opened inside another on the same thread
/// (an operation that reads through the store while it writes) does not wait: its thread
/// already holds a connection of this pool, and waiting for a second one while holding the
/// first could wait for itself. Such a nested connection is counted, may go past the bound
/// for as long as it is held, and is closed when it comes back.
pub struct PgPool {
    /// Boxed: two parsed configurations and a TLS connector are large beside SQLite's store.
    target: Box<PgTarget>,
    /// Tells this pool's connections held by a thread from another pool's.
    id: u64,
    slots: Mutex<Slots>,
    /// Signalled whenever a connection comes back or closes.
    returned: Condvar,
    max_connections: usize,
    acquire_timeout: Duration,
}

struct Slots {
    idle: Vec<PgConn>,
    /// This pool's connections that exist: the idle ones and those in use.
    open: usize,
}

thread_local! {
    /// The pools (by id) this thread holds connections of, once per connection held.
    static HELD: RefCell<Vec<u64>> = const { RefCell::new(Vec::new()) };
}

static NEXT_POOL_ID: AtomicU64 = AtomicU64::new(1);

impl PgPool {
    /// A pool for `url`, checked by opening its first connection.
    pub fn open(url: &str, settings: &PgSettings) -> Result<PgPool> {
        let target = Box::new(PgTarget::new(url, settings)?);
        let first = target.connect()?;
        Ok(PgPool {
            target,
            id: NEXT_POOL_ID.fetch_add(1, Ordering::Relaxed),
            slots: Mutex::new(Slots {
                idle: vec![first],
                open: 1,
            }),
            returned: Condvar::new(),
            max_connections: settings.max_connections.max(1),
            acquire_timeout: settings.acquire_timeout,
        })
    }

    /// Runs `f` in one transaction on a pooled connection (a new one when none is idle and
    /// the bound allows). An idle connection the server ended meanwhile (a restart, an idle
    /// timeout) fails its `BEGIN`, before any work: it is closed and the next one tried. A
    /// connection that broke during the work, or whose closure panicked, is not kept.
    pub fn transaction<T, E: From<Error>>(
        &self,
        f: impl FnOnce(Db<'_>) -> std::result::Result<T, E>,
    ) -> std::result::Result<T, E> {
        self.transaction_after("", |db, _| f(db))
    }

    /// `transaction`, with `prologue` (statements without parameters: `SET LOCAL`, a call
    /// with literal arguments) run first inside it, sent with its `BEGIN` in one round trip.
    /// `f` is given the first column of the prologue's last row (as text), if it answered one.
    pub fn transaction_after<T, E: From<Error>>(
        &self,
        prologue: &str,
        f: impl FnOnce(Db<'_>, Option<&str>) -> std::result::Result<T, E>,
    ) -> std::result::Result<T, E> {
        let (lease, answer) = self.begin(prologue)?;
        lease
            .conn()
            .finish(f(Db::Postgres(lease.conn()), answer.as_deref()))
    }

    /// Closes the idle connections (the pool stays usable: later work opens new ones).
    pub fn close_idle(&self) {
        let idle = {
            let mut slots = self.lock();
            let idle = std::mem::take(&mut slots.idle);
            slots.open -= idle.len();
            idle
        };
        drop(idle);
        self.returned.notify_all();
    }

    /// A connection of its own, outside the pool and its bound, for a thread that keeps one
    /// (the audit writer, whose start-up load and pruning may rightly run long).
    pub fn connect(&self) -> Result<PgConn> {
        self.target.connect_unbounded()
    }

    /// A connection inside a new transaction that ran `prologue`, and the prologue's answer
    /// (`transaction_after`): an idle connection that still answers, or a new one.
    fn begin(&self, prologue: &str) -> Result<(Lease<'_>, Option<String>)> {
        if prologue.is_empty() {
            return self.begin_with("BEGIN").map(|lease| (lease, None));
        }
        let sql = format!("BEGIN; {prologue}");
        let lease = self.begin_with(&sql)?;
        let answer = lease.conn().inner.borrow_mut().last_answer.take();
        Ok((lease, answer))
    }

    fn begin_with(&self, sql: &str) -> Result<Lease<'_>> {
        let prologue = sql != "BEGIN";
        loop {
            let mut lease = self.acquire()?;
            let begun = if prologue {
                lease.conn().simple_query(sql)
            } else {
                lease.conn().batch(sql)
            };
            match begun {
                Ok(()) => return Ok(lease),
                Err(e) if lease.fresh => {
                    lease.keep = false;
                    return Err(e);
                }
                // A connection that still answers refused the prologue itself (a lock wait
                // past the statement timeout): that is the answer, another would refuse too.
                Err(e) if prologue && !lease.conn().is_closed() => {
                    if lease.conn().batch("ROLLBACK").is_err() {
                        lease.keep = false;
                    }
                    return Err(e);
                }
                Err(_) => lease.keep = false,
            }
        }
    }

    /// An idle connection, or a new one while fewer than the bound are open; otherwise waits
    /// for one to come back, for `acquire_timeout` at most.
    fn acquire(&self) -> Result<Lease<'_>> {
        let nested = HELD.with(|held| held.borrow().contains(&self.id));
        let started = Instant::now();
        let mut slots = self.lock();
        loop {
            if let Some(conn) = slots.idle.pop() {
                return Ok(Lease::new(self, conn, false));
            }
            if slots.open < self.max_connections || nested {
                slots.open += 1;
                drop(slots);
                return match self.target.connect() {
                    Ok(conn) => Ok(Lease::new(self, conn, true)),
                    Err(e) => {
                        self.forget_one();
                        Err(e)
                    }
                };
            }
            let waited = started.elapsed();
            let left = self.acquire_timeout.saturating_sub(waited);
            if left.is_zero() {
                return Err(Error::Busy {
                    max: self.max_connections,
                    waited,
                });
            }
            slots = self
                .returned
                .wait_timeout(slots, left)
                .unwrap_or_else(|p| p.into_inner())
                .0;
        }
    }

    /// Takes back a connection that was in use: idle again, or closed.
    fn give_back(&self, conn: PgConn, keep: bool) {
        if keep {
            let mut slots = self.lock();
            // A nested connection beyond the bound closes rather than stay idle.
            if slots.open <= self.max_connections {
                slots.idle.push(conn);
                drop(slots);
                self.returned.notify_one();
                return;
            }
        }
        // Closing talks to the server: outside the lock.
        drop(conn);
        self.forget_one();
    }

    /// One connection fewer exists: a waiter may open another.
    fn forget_one(&self) {
        self.lock().open -= 1;
        self.returned.notify_one();
    }

    fn lock(&self) -> MutexGuard<'_, Slots> {
        self.slots.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Connections open now, idle ones included.
    #[cfg(test)]
    fn open_connections(&self) -> usize {
        self.lock().open
    }
}

/// A connection taken from the pool, given back when dropped (also when its closure panics).
struct Lease<'p> {
    pool: &'p PgPool,
    /// Always `Some` until the lease is dropped.
    conn: Option<PgConn>,
    /// Opened for this lease rather than taken idle.
    fresh: bool,
    /// Whether the connection may serve again; a failed `BEGIN` says it may not.
    keep: bool,
}

impl<'p> Lease<'p> {
    fn new(pool: &'p PgPool, conn: PgConn, fresh: bool) -> Lease<'p> {
        HELD.with(|held| held.borrow_mut().push(pool.id));
        Lease {
            pool,
            conn: Some(conn),
            fresh,
            keep: true,
        }
    }

    fn conn(&self) -> &PgConn {
        self.conn
            .as_ref()
            .expect("a lease holds its connection until dropped")
    }
}

impl Drop for Lease<'_> {
    fn drop(&mut self) {
        HELD.with(|held| {
            let mut held = held.borrow_mut();
            if let Some(at) = held.iter().rposition(|&id| id == self.pool.id) {
                held.swap_remove(at);
            }
        });
        if let Some(conn) = self.conn.take() {
            // A closure that panicked left its transaction open.
            let keep = self.keep && !std::thread::panicking() && !conn.is_closed();
            self.pool.give_back(conn, keep);
        }
    }
}

/// SQLite's placeholders (`?`, `?NNN`) as PostgreSQL's (`$N`). A bare `?` takes the number
/// after the highest seen so far, as SQLite numbers it. Quoted strings, quoted identifiers and
/// comments are copied as they are.
fn to_postgres_placeholders(sql: &str) -> String {
    let mut out = String::with_capacity(sql.len() + 8);
    let mut highest = 0u32;
    let mut chars = sql.char_indices().peekable();
    while let Some((_, c)) = chars.next() {
        match c {
            '\'' | '"' => {
                out.push(c);
                for (_, inner) in chars.by_ref() {
                    out.push(inner);
                    // A doubled quote ends and reopens: the copy stays the same.
                    if inner == c {
                        break;
                    }
                }
            }
            '-' if chars.peek().is_some_and(|&(_, n)| n == '-') => {
                out.push(c);
                for (_, inner) in chars.by_ref() {
                    out.push(inner);
                    if inner == '\n' {
                        break;
                    }
                }
            }
            '/' if chars.peek().is_some_and(|&(_, n)| n == '*') => {
                out.push(c);
                let mut previous = ' ';
                for (_, inner) in chars.by_ref() {
                    out.push(inner);
                    if previous == '*' && inner == '/' {
                        break;
                    }
                    previous = inner;
                }
            }
            '?' => {
                let mut digits = String::new();
                while let Some(&(_, d)) = chars.peek() {
                    if !d.is_ascii_digit() {
                        break;
                    }
                    digits.push(d);
                    chars.next();
                }
                let number = match digits.parse::<u32>() {
                    Ok(n) => n,
                    Err(_) => highest + 1,
                };
                highest = highest.max(number);
                out.push('$');
                out.push_str(&number.to_string());
            }
            _ => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pg_test;

    #[test]
    fn placeholders_are_numbered_as_sqlite_numbers_them() {
        assert_eq!(
            to_postgres_placeholders("SELECT a FROM t WHERE b = ?1 AND c = ?2 OR d = ?1"),
            "SELECT a FROM t WHERE b = $1 AND c = $2 OR d = $1"
        );
        assert_eq!(
            to_postgres_placeholders("INSERT INTO t VALUES (?, ?, ?)"),
            "INSERT INTO t VALUES ($1, $2, $3)"
        );
        assert_eq!(
            to_postgres_placeholders("VALUES (?10, ?)"),
            "VALUES ($10, $11)"
        );
    }

    #[test]
    fn quoted_text_and_comments_keep_their_question_marks() {
        assert_eq!(
            to_postgres_placeholders("SELECT 'why?', \"a?\" -- really?\n, ?1 /* ?2 */"),
            "SELECT 'why?', \"a?\" -- really?\n, $1 /* ?2 */"
        );
        assert_eq!(
            to_postgres_placeholders("SELECT 'it''s ?' || ?"),
            "SELECT 'it''s ?' || $1"
        );
    }

    const SCHEMA: &str = "CREATE TABLE things (
        seq BIGINT PRIMARY KEY,
        name TEXT NOT NULL UNIQUE,
        note TEXT,
        active BIGINT NOT NULL,
        weight DOUBLE PRECISION,
        body BYTEA
    )";

    /// Runs `check` on a fresh SQLite database and a fresh PostgreSQL one, each with `SCHEMA`.
    fn on_both(check: impl Fn(Db<'_>)) {
        let sqlite = rusqlite::Connection::open_in_memory().unwrap();
        sqlite
            .execute_batch(
                &SCHEMA
                    .replace("BYTEA", "BLOB")
                    .replace("DOUBLE PRECISION", "REAL"),
            )
            .unwrap();
        check(Db::Sqlite(&sqlite));

        let database = pg_test::empty_database();
        let pg = PgConn::connect(database.url()).unwrap();
        pg.batch(SCHEMA).unwrap();
        check(Db::Postgres(&pg));
    }

    fn insert(db: Db<'_>, seq: i64, name: &str, note: Option<&str>, active: bool) -> Result<u64> {
        db.execute(
            "INSERT INTO things (seq, name, note, active, weight, body) VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
            &params![seq, name, note, active, 1.5, &b"\x00\x01"[..]],
        )
    }

    #[test]
    fn rows_round_trip_every_parameter_type() {
        on_both(|db| {
            assert_eq!(insert(db, 1, "one", Some("first"), true).unwrap(), 1);
            assert_eq!(insert(db, 2, "two", None, false).unwrap(), 1);
            let rows = db
                .query_map(
                    "SELECT seq, name, note, active, weight, body FROM things ORDER BY seq",
                    &params![],
                    |r| {
                        Ok((
                            r.get::<i64>(0)?,
                            r.get::<String>(1)?,
                            r.get::<Option<String>>(2)?,
                            r.get::<bool>(3)?,
                            r.get::<f64>(4)?,
                            r.get::<Vec<u8>>(5)?,
                        ))
                    },
                )
                .unwrap();
            assert_eq!(
                rows,
                vec![
                    (1, "one".into(), Some("first".into()), true, 1.5, vec![0, 1]),
                    (2, "two".into(), None, false, 1.5, vec![0, 1]),
                ]
            );
            let count = db
                .query_row(
                    "SELECT count(*) FROM things WHERE active = 1",
                    &params![],
                    |r| r.get::<i64>(0),
                )
                .unwrap();
            assert_eq!(count, 1);
        });
    }

    #[test]
    fn query_row_and_query_opt_tell_a_missing_row() {
        on_both(|db| {
            insert(db, 1, "one", None, true).unwrap();
            let sql = "SELECT name FROM things WHERE seq = ?1";
            let found = db.query_opt(sql, &params![1_i64], |r| r.get::<String>(0));
            assert_eq!(found.unwrap().as_deref(), Some("one"));
            let missing = db.query_opt(sql, &params![7_i64], |r| r.get::<String>(0));
            assert_eq!(missing.unwrap(), None);
            let missing = db.query_row(sql, &params![7_i64], |r| r.get::<String>(0));
            assert!(matches!(missing, Err(Error::NoRows)));
        });
    }

    #[test]
    fn returning_and_on_conflict_are_one_text_for_both() {
        on_both(|db| {
            let sql = "INSERT INTO things (seq, name, active) VALUES (?1, ?2, 0)
                       ON CONFLICT (name) DO NOTHING RETURNING seq";
            let first = db.query_opt(sql, &params![5_i64, "five"], |r| r.get::<i64>(0));
            assert_eq!(first.unwrap(), Some(5));
            let again = db.query_opt(sql, &params![6_i64, "five"], |r| r.get::<i64>(0));
            assert_eq!(again.unwrap(), None);
        });
    }

    #[test]
    fn a_unique_violation_is_told_apart() {
        on_both(|db| {
            insert(db, 1, "one", None, true).unwrap();
            let error = insert(db, 2, "one", None, true).unwrap_err();
            assert!(error.is_unique_violation(), "{error}");
            let error = db
                .execute("INSERT INTO nowhere VALUES (1)", &params![])
                .unwrap_err();
            assert!(!error.is_unique_violation(), "{error}");
        });
    }

    #[test]
    fn json_rows_read_as_their_columns_would() {
        let text = r#"[[7, "ins_1", null, 1, 0, 2.5], [8, "ins_2", "x", 0, true, null]]"#;
        let rows = Row::json_rows(Some(text), |r| {
            Ok((
                r.get::<i64>(0)?,
                r.get::<String>(1)?,
                r.get::<Option<String>>(2)?,
                r.get::<bool>(3)?,
                r.get::<Option<bool>>(4)?,
                r.get::<Option<f64>>(5)?,
            ))
        })
        .unwrap();
        assert_eq!(
            rows,
            vec![
                (7, "ins_1".into(), None, true, Some(false), Some(2.5)),
                (8, "ins_2".into(), Some("x".into()), false, Some(true), None),
            ]
        );
        assert!(
            Row::json_rows(None, |r| r.get::<i64>(0))
                .unwrap()
                .is_empty()
        );
        let misread = Row::json_rows(Some(r#"[["seven"]]"#), |r| r.get::<i64>(0));
        assert!(matches!(misread, Err(Error::Column { .. })), "{misread:?}");
        let missing = Row::json_rows(Some("[[1]]"), |r| r.get::<i64>(1));
        assert!(matches!(missing, Err(Error::Column { .. })), "{missing:?}");
        assert!(Row::json_rows(Some("[1, 2"), |r| r.get::<i64>(0)).is_err());
    }

    /// A lookup by primary key planned while its table was empty scans the whole table for as
    /// long as the plan is kept; a statement prepared again after `STATEMENT_FRESH_FOR` seeks
    /// the index once the table has grown. The scans are counted by the server's backend
    /// (`pg_stat_xact_user_tables`: what it has not reported yet, so compared before and after).
    #[test]
    fn a_statement_planned_on_an_empty_table_is_planned_again_once_it_grew() {
        let database = pg_test::empty_database();
        let pg = PgConn::connect(database.url()).unwrap();
        pg.batch(SCHEMA).unwrap();
        pg.batch("ANALYZE things").unwrap();
        let lookup = |pg: &PgConn, seq: i64| {
            Db::Postgres(pg)
                .query_opt(
                    "SELECT name FROM things WHERE seq = ?1",
                    &params![seq],
                    |r| r.get::<String>(0),
                )
                .unwrap()
        };
        let scans = |pg: &PgConn| -> (i64, i64) {
            Db::Postgres(pg)
                .query_row(
                    "SELECT COALESCE(seq_scan, 0), COALESCE(idx_scan, 0)
                     FROM pg_stat_xact_user_tables WHERE relname = 'things'",
                    &[],
                    |r| Ok((r.get(0)?, r.get(1)?)),
                )
                .unwrap()
        };
        for seq in 0..8 {
            assert_eq!(lookup(&pg, seq), None);
        }
        pg.batch(
            "INSERT INTO things (seq, name, active)
             SELECT n, 'thing ' || n, 1 FROM generate_series(1, 20000) AS n",
        )
        .unwrap();

        // The scans of `lookups`, counted inside one transaction: a backend reports its counts
        // only between transactions, and the view shows what it has not reported yet.
        let scanned_by = |lookups: &dyn Fn()| {
            pg.batch("BEGIN").unwrap();
            let (seq_before, index_before) = scans(&pg);
            lookups();
            let (seq_after, index_after) = scans(&pg);
            pg.batch("COMMIT").unwrap();
            (seq_after - seq_before, index_after - index_before)
        };
        let kept_plan = scanned_by(&|| assert_eq!(lookup(&pg, 7).as_deref(), Some("thing 7")));
        assert_eq!(
            kept_plan,
            (1, 0),
            "the plan made on the empty table scans it"
        );

        std::thread::sleep(STATEMENT_FRESH_FOR);
        let fresh_plan = scanned_by(&|| {
            for seq in 1..=20 {
                assert_eq!(lookup(&pg, seq), Some(format!("thing {seq}")));
            }
        });
        assert_eq!(fresh_plan, (0, 20));
    }

    #[test]
    fn a_connection_the_server_ended_says_it_is_closed() {
        let database = pg_test::empty_database();
        let pg = PgConn::connect(database.url()).unwrap();
        let admin = PgConn::connect(database.url()).unwrap();
        // pg_backend_pid() is an INT4 and pg_terminate_backend() takes one: integers of any
        // width read and bind as i64. The timeout makes it wait until the backend has ended.
        let pid = pg
            .transaction(|db| {
                db.query_row("SELECT pg_backend_pid()", &params![], |r| r.get::<i64>(0))
            })
            .unwrap();
        assert!(!pg.is_closed());
        let ended = admin
            .transaction(|db| {
                db.query_row(
                    "SELECT pg_terminate_backend(?1, 10000)",
                    &params![pid],
                    |r| r.get::<bool>(0),
                )
            })
            .unwrap();
        assert!(ended);
        let failed = pg.transaction(|db| db.execute("SELECT 1", &params![]));
        assert!(failed.is_err());
        assert!(pg.is_closed());
    }

    #[test]
    fn the_pool_reuses_its_connections_and_drops_broken_ones() {
        let database = pg_test::empty_database();
        let settings = PgSettings {
            max_connections: 2,
            ..PgSettings::default()
        };
        let pool = PgPool::open(database.url(), &settings).unwrap();
        let backend_pid =
            |db: Db<'_>| db.query_row("SELECT pg_backend_pid()", &params![], |r| r.get::<i64>(0));
        let first = pool.transaction(backend_pid).unwrap();
        assert_eq!(pool.transaction(backend_pid).unwrap(), first);

        // Two at once: the second closure gets a connection of its own.
        let nested = pool
            .transaction(|outer| {
                let inner = pool.transaction(backend_pid)?;
                Ok::<_, Error>((backend_pid(outer)?, inner))
            })
            .unwrap();
        assert_ne!(nested.0, nested.1);

        // The server ends both idle connections.
        let admin = PgConn::connect(database.url()).unwrap();
        for pid in [nested.0, nested.1] {
            admin
                .transaction(|db| {
                    db.query_row(
                        "SELECT pg_terminate_backend(?1, 10000)",
                        &params![pid],
                        |r| r.get::<bool>(0),
                    )
                })
                .unwrap();
        }
        // Neither is handed out again: the next transaction runs on a new connection.
        let fresh = pool.transaction(backend_pid).unwrap();
        assert!(fresh != nested.0 && fresh != nested.1);
        assert_eq!(pool.transaction(backend_pid).unwrap(), fresh);
    }

    fn bounded_pool(url: &str, max_connections: usize, acquire_timeout: Duration) -> PgPool {
        let settings = PgSettings {
            max_connections,
            acquire_timeout,
            ..PgSettings::default()
        };
        PgPool::open(url, &settings).unwrap()
    }

    /// Holds a pooled connection for `hold`, answering its backend's pid.
    fn hold(pool: &PgPool, hold: Duration) -> Result<i64> {
        pool.transaction(|db| {
            let pid = db.query_row("SELECT pg_backend_pid()", &params![], |r| r.get::<i64>(0))?;
            std::thread::sleep(hold);
            Ok(pid)
        })
    }

    #[test]
    fn the_pool_never_opens_more_than_its_bound() {
        let database = pg_test::empty_database();
        let pool = bounded_pool(database.url(), 2, Duration::from_secs(30));
        let in_use = std::sync::atomic::AtomicUsize::new(0);
        let most_in_use = std::sync::atomic::AtomicUsize::new(0);
        let pids: Vec<i64> = std::thread::scope(|scope| {
            let workers: Vec<_> = (0..6)
                .map(|_| {
                    scope.spawn(|| {
                        pool.transaction(|db| {
                            let now = in_use.fetch_add(1, Ordering::SeqCst) + 1;
                            most_in_use.fetch_max(now, Ordering::SeqCst);
                            assert!(pool.open_connections() <= 2);
                            std::thread::sleep(Duration::from_millis(150));
                            in_use.fetch_sub(1, Ordering::SeqCst);
                            db.query_row("SELECT pg_backend_pid()", &params![], |r| r.get::<i64>(0))
                        })
                    })
                })
                .collect();
            workers
                .into_iter()
                .map(|w| w.join().unwrap().unwrap())
                .collect()
        });
        assert_eq!(most_in_use.load(Ordering::SeqCst), 2);
        let mut distinct = pids.clone();
        distinct.sort_unstable();
        distinct.dedup();
        assert!(distinct.len() <= 2, "{pids:?}");
        assert_eq!(pool.open_connections(), 2);
        // The server agrees: two sessions on this database.
        let sessions = PgConn::connect(database.url())
            .unwrap()
            .transaction(|db| {
                db.query_row(
                    "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() \
                     AND pid <> pg_backend_pid()",
                    &params![],
                    |r| r.get::<i64>(0),
                )
            })
            .unwrap();
        assert_eq!(sessions, 2);
    }

    #[test]
    fn a_waiter_gets_the_connection_given_back() {
        let database = pg_test::empty_database();
        let pool = bounded_pool(database.url(), 1, Duration::from_secs(10));
        let (started, holding) = std::sync::mpsc::channel();
        let (held, waited) = std::thread::scope(|scope| {
            let holder = scope.spawn(|| {
                pool.transaction(|db| {
                    started.send(()).unwrap();
                    std::thread::sleep(Duration::from_millis(400));
                    db.query_row("SELECT pg_backend_pid()", &params![], |r| r.get::<i64>(0))
                })
            });
            holding.recv().unwrap();
            let asked = Instant::now();
            let waited = hold(&pool, Duration::ZERO).unwrap();
            assert!(asked.elapsed() >= Duration::from_millis(200));
            (holder.join().unwrap().unwrap(), waited)
        });
        assert_eq!(held, waited, "the one connection served both");
        assert_eq!(pool.open_connections(), 1);
    }

    #[test]
    fn a_waiter_past_the_bound_is_refused_as_busy() {
        let database = pg_test::empty_database();
        let pool = bounded_pool(database.url(), 1, Duration::from_millis(200));
        let (started, holding) = std::sync::mpsc::channel();
        std::thread::scope(|scope| {
            let holder = scope.spawn(|| {
                pool.transaction(|db| {
                    started.send(()).unwrap();
                    std::thread::sleep(Duration::from_millis(1500));
                    db.execute("SELECT 1", &params![])
                })
            });
            holding.recv().unwrap();
            let asked = Instant::now();
            let refused = hold(&pool, Duration::ZERO).unwrap_err();
            assert!(matches!(refused, Error::Busy { max: 1, .. }), "{refused}");
            assert!(asked.elapsed() >= Duration::from_millis(200));
            assert!(asked.elapsed() < Duration::from_millis(1400));
            // An operation answers it as 503 SERVICE_BUSY, never as a fault.
            let answered = mandato_core::error::Error::from(refused);
            assert!(
                matches!(answered, mandato_core::error::Error::Unavailable { name, .. } if name == mandato_core::error::SERVICE_BUSY),
                "{answered}"
            );
            holder.join().unwrap().unwrap();
        });
        // Given back, the connection serves again.
        hold(&pool, Duration::ZERO).unwrap();
    }

    #[test]
    fn a_transaction_inside_another_does_not_wait_for_the_bound() {
        let database = pg_test::empty_database();
        let pool = bounded_pool(database.url(), 1, Duration::from_millis(100));
        let (outer, inner) = pool
            .transaction(|outer| {
                let inner = hold(&pool, Duration::ZERO)?;
                let outer =
                    outer.query_row("SELECT pg_backend_pid()", &params![], |r| r.get::<i64>(0))?;
                Ok::<_, Error>((outer, inner))
            })
            .unwrap();
        assert_ne!(outer, inner);
        // The nested one closed on its way back: the bound holds again.
        assert_eq!(pool.open_connections(), 1);
    }

    #[test]
    fn a_statement_past_the_timeout_is_cancelled_and_the_connection_serves_on() {
        let database = pg_test::empty_database();
        let settings = PgSettings {
            max_connections: 1,
            statement_timeout: Some(Duration::from_millis(300)),
            ..PgSettings::default()
        };
        let pool = PgPool::open(database.url(), &settings).unwrap();
        let started = Instant::now();
        let cancelled = pool
            .transaction(|db| db.execute("SELECT pg_sleep(5)", &params![]))
            .unwrap_err();
        assert!(started.elapsed() < Duration::from_secs(3));
        assert!(cancelled.is_busy(), "{cancelled}");
        assert!(matches!(
            mandato_core::error::Error::from(cancelled),
            mandato_core::error::Error::Unavailable { .. }
        ));
        // The same connection (the only one the pool may open) works afterwards.
        assert_eq!(
            hold(&pool, Duration::ZERO).unwrap(),
            hold(&pool, Duration::ZERO).unwrap()
        );
        // Outside the pool (migrations) nothing is cut short.
        let unbounded = pool.connect().unwrap();
        unbounded
            .transaction(|db| db.execute("SELECT pg_sleep(0.5)", &params![]))
            .unwrap();
    }

    #[test]
    fn a_postgres_transaction_commits_on_ok_and_rolls_back_on_error() {
        let database = pg_test::empty_database();
        let pg = PgConn::connect(database.url()).unwrap();
        pg.batch(SCHEMA).unwrap();
        pg.transaction(|db| insert(db, 1, "kept", None, true))
            .unwrap();
        let failed: Result<()> = pg.transaction(|db| {
            insert(db, 2, "dropped", None, true)?;
            Err(Error::NoRows)
        });
        assert!(failed.is_err());
        let names = pg
            .transaction(|db| {
                db.query_map("SELECT name FROM things ORDER BY seq", &params![], |r| {
                    r.get::<String>(0)
                })
            })
            .unwrap();
        assert_eq!(names, vec!["kept".to_string()]);
    }
}
