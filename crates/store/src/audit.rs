//! The request audit log and correlationId replay protection, written off the request path.
//!
//! Every API request produces one audit row and (when it names a commerce) one correlationId
//! row. Giving each its own durable commit would cap the API at the disk's fsync rate, so a
//! background thread gathers them for a few milliseconds and writes each batch in one
//! transaction. Replay refusal must not wait for that batch: ids not yet written are held in
//! memory (`pending`, a sharded set, so concurrent requests rarely share a lock) until their
//! batch commits, and a reservation claims the id in memory before it looks in the database.
//!
//! Requests refused before their API key was accepted write no row of their own: they are
//! counted per minute and reason (`audit_refusals`), so a flood of them cannot fill the disk.
//! The same thread prunes the request logs past their retention, a small batch at a time
//! between its writes, so pruning never holds the writes up.

use std::collections::{HashMap, HashSet};
use std::hash::{BuildHasher, RandomState};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender, TryRecvError};
use std::sync::{Arc, Mutex, OnceLock};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use rusqlite::Connection;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use super::db::{self, Backend, Db, params};
use super::write_turn::{Turn, WriteTurn};
use super::{Durability, Store, open_connection, settings};
use mandato_core::clock::Clock;
use mandato_core::error::Error;

/// How long the audit log and the refusal counts are kept unless staff chose otherwise.
pub const DEFAULT_RETENTION_DAYS: i64 = 90;
/// The settings entry holding staff's choice.
const RETENTION_SETTING: &str = "audit_retention_days";
/// Retention staff may choose, in days.
pub const RETENTION_RANGE: std::ops::RangeInclusive<i64> = 1..=3650;

/// Why a request was refused before its API key was accepted.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Refusal {
    /// Common headers missing or malformed.
    InvalidHeaders,
    /// An unknown or revoked API key.
    InvalidApiKey,
    /// A `Host` this installation does not serve (or two of them).
    HostNotAllowed,
}

impl Refusal {
    pub fn as_str(self) -> &'static str {
        match self {
            Refusal::InvalidHeaders => "INVALID_HEADERS",
            Refusal::InvalidApiKey => "INVALID_API_KEY",
            Refusal::HostNotAllowed => "HOST_NOT_ALLOWED",
        }
    }
}

#[derive(Debug, Clone)]
pub struct AuditEntry {
    pub at: String,
    pub method: String,
    /// The path without its query string, which may hold a password (`GET /login`).
    pub path: String,
    pub status: u16,
    pub duration_ms: f64,
    pub commerce: Option<String>,
    pub correlation_id: Option<String>,
    pub api_key_prefix: Option<String>,
    /// The common headers as a JSON object, with `x-api-key` and `Authorization` removed.
    pub headers: String,
    pub peer: Option<String>,
}

type CorrelationKey = (i64, String);

enum Record {
    /// A request's row, with its place in the queue (`AUDIT_ROWS_QUEUED`): dropping the record
    /// gives the place back.
    Audit {
        entry: AuditEntry,
        _place: AuditPlace,
    },
    Correlation {
        key: CorrelationKey,
        seen_at: String,
    },
    /// `count` refusals for `reason` in the minute starting at `minute`.
    Refusal {
        minute: String,
        reason: Refusal,
        count: i64,
    },
    /// New counts wait in `RefusalCounts`.
    Refusals,
    /// An API key accepted at `at` (its last use, kept in `api_keys.last_used_at`).
    KeyUsed {
        key_id: i64,
        at: String,
    },
    Flush(Sender<()>),
    /// Prune now; answered once everything expired is gone.
    Prune(Option<Sender<()>>),
}

/// CorrelationIds reserved but not yet committed, in shards chosen by a hash of the key.
struct Pending {
    shards: Vec<Mutex<HashSet<CorrelationKey>>>,
    hasher: RandomState,
}

const PENDING_SHARDS: usize = 16;

impl Pending {
    fn new() -> Pending {
        Pending {
            shards: (0..PENDING_SHARDS)
                .map(|_| Mutex::new(HashSet::new()))
                .collect(),
            hasher: RandomState::new(),
        }
    }

    fn shard(&self, key: &CorrelationKey) -> &Mutex<HashSet<CorrelationKey>> {
        // The modulo keeps the value below PENDING_SHARDS, so the cast cannot truncate.
        #[allow(clippy::cast_possible_truncation)]
        let index = (self.hasher.hash_one(key) % PENDING_SHARDS as u64) as usize;
        &self.shards[index]
    }

    /// Claims `key`; `false` when it is already claimed.
    fn claim(&self, key: CorrelationKey) -> bool {
        let shard = self.shard(&key);
        shard.lock().unwrap_or_else(|p| p.into_inner()).insert(key)
    }

    fn release(&self, key: &CorrelationKey) {
        let shard = self.shard(key);
        shard.lock().unwrap_or_else(|p| p.into_inner()).remove(key);
    }
}

/// Every correlationId stored or used since start, as a Bloom filter: an id it has never
/// seen is fresh without a database read; one it may have seen is looked up. It holds the ids
/// committed before start (loaded in the background; until that finishes every id is looked
/// up) and every id reserved since. Pruned ids stay set, which only costs lookups; past its
/// capacity it answers "maybe" more often, never a wrong "no".
struct SeenFilter {
    /// 512-bit blocks: each key sets `PROBES` bits of one block, one cache line per check.
    /// The blocks come in page-sized chunks allocated on first use, so a quiet installation
    /// (or a test) holds only the pages its ids touched.
    chunks: Box<[OnceLock<Box<[Block]>>]>,
    hasher: RandomState,
    loaded: AtomicBool,
}

type Block = [AtomicU64; 8];

/// 2^17 blocks of 64 bytes: 8 MiB at most, about 1% false "maybe" at 5 million ids.
const FILTER_BLOCKS: usize = 1 << 17;
/// 64 blocks (4 KiB) per chunk.
const CHUNK_BLOCKS: usize = 64;
const PROBES: usize = 7;

impl SeenFilter {
    fn new() -> SeenFilter {
        SeenFilter {
            chunks: (0..FILTER_BLOCKS / CHUNK_BLOCKS)
                .map(|_| OnceLock::new())
                .collect(),
            hasher: RandomState::new(),
            loaded: AtomicBool::new(false),
        }
    }

    /// The block index and the bits (word, mask) of a key.
    fn probes(&self, commerce_id: i64, correlation_id: &str) -> (usize, [(usize, u64); PROBES]) {
        let h = self.hasher.hash_one((commerce_id, correlation_id));
        let g = h.rotate_left(32).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        // The mask keeps the value below FILTER_BLOCKS, so the cast cannot truncate.
        #[allow(clippy::cast_possible_truncation)]
        let block = (h as usize) & (FILTER_BLOCKS - 1);
        let bits = std::array::from_fn(|i| {
            // 9 bits of `g` per probe: a word of the block (3 bits) and a bit in it (6 bits).
            #[allow(clippy::cast_possible_truncation)]
            let v = (g >> (9 * i)) as usize;
            ((v >> 6) & 7, 1u64 << (v & 63))
        });
        (block, bits)
    }

    fn insert(&self, commerce_id: i64, correlation_id: &str) {
        let (block, bits) = self.probes(commerce_id, correlation_id);
        let chunk = self.chunks[block / CHUNK_BLOCKS].get_or_init(|| {
            (0..CHUNK_BLOCKS)
                .map(|_| std::array::from_fn(|_| AtomicU64::new(0)))
                .collect()
        });
        let block = &chunk[block % CHUNK_BLOCKS];
        for (word, mask) in bits {
            block[word].fetch_or(mask, Ordering::Release);
        }
    }

    /// `false` only when the id was certainly never inserted (and the load has finished).
    fn may_contain(&self, commerce_id: i64, correlation_id: &str) -> bool {
        if !self.loaded.load(Ordering::Acquire) {
            return true;
        }
        let (block, bits) = self.probes(commerce_id, correlation_id);
        let Some(chunk) = self.chunks[block / CHUNK_BLOCKS].get() else {
            return false;
        };
        let block = &chunk[block % CHUNK_BLOCKS];
        bits.into_iter()
            .all(|(word, mask)| block[word].load(Ordering::Acquire) & mask == mask)
    }

    /// Inserts every stored id, then lets `may_contain` answer. All of them, not only those
    /// of the current window: a wall clock set back would bring older ones into it again
    /// (pruning keeps the table to the window anyway).
    fn load(&self, conn: &Connection) -> rusqlite::Result<()> {
        let mut stmt =
            conn.prepare("SELECT commerce_id, correlation_id FROM correlation_claims")?;
        let mut rows = stmt.query([])?;
        while let Some(row) = rows.next()? {
            self.insert(row.get(0)?, row.get_ref(1)?.as_str()?);
        }
        self.loaded.store(true, Ordering::Release);
        Ok(())
    }
}

/// The correlationId of the merchant request being served, so that the request's own writes
/// can record it durably (`record_claim`): the batch writer records it too, but a crash in the
/// milliseconds between an answered write and that batch would otherwise forget it and let
/// the write be replayed after a restart.
#[derive(Clone, Debug)]
pub struct CorrelationClaim {
    pub commerce_id: i64,
    pub correlation_id: String,
    pub seen_at: String,
    /// A read-only request's claim on PostgreSQL, taken by the request's first transaction
    /// rather than by one of its own (`Reservation::Deferred`).
    pub deferred: Option<Arc<DeferredClaim>>,
}

tokio::task_local! {
    /// Set by the common-headers layer around an admitted merchant request.
    pub static CORRELATION_CLAIM: CorrelationClaim;
}

impl CorrelationClaim {
    /// The claim of the request the current task serves, if it is a merchant request.
    pub fn current() -> Option<CorrelationClaim> {
        CORRELATION_CLAIM.try_with(Clone::clone).ok()
    }

    /// The deferred claim of the read-only request the current task serves, if any.
    pub(crate) fn current_deferred() -> Option<Arc<DeferredClaim>> {
        CORRELATION_CLAIM
            .try_with(|claim| claim.deferred.clone())
            .ok()
            .flatten()
    }
}

/// Records a claim in the caller's transaction, so it commits with the write it guards (SQLite,
/// where the claim is otherwise only in memory until the batch writer's next commit). A
/// deferred claim is not recorded this way: it is taken with its check
/// (`DeferredClaim::take_with`, or `settle` after the handler), and a row written here would
/// make that check find the id used.
pub fn record_claim<'c>(db: impl Into<Db<'c>>, claim: &CorrelationClaim) -> db::Result<()> {
    let db = db.into();
    // On PostgreSQL a write's claim was committed before the request went on
    // (`reserve_correlation`), or goes in with the write's own transaction (a creation's,
    // `RequestKind::DatabaseWrite`, which is deferred): either way the write's commit makes it
    // durable too (the WAL is flushed in order). Recording it again would only find it.
    if claim.deferred.is_some() || db.backend() == Backend::Postgres {
        return Ok(());
    }
    db.execute(
        "INSERT INTO correlation_claims (day, commerce_id, correlation_id, seen_at)
         VALUES (substr(CAST(?3 AS TEXT), 1, 10), ?1, ?2, ?3) ON CONFLICT DO NOTHING",
        &params![claim.commerce_id, &claim.correlation_id, &claim.seen_at],
    )?;
    Ok(())
}

/// Claims a correlationId in the database for the engine serving the request (PostgreSQL,
/// where several engines share it): `false` when the commerce used it at `cutoff` or later.
/// The database function `mandato_claim_correlation` (PostgreSQL migration 0010) takes a
/// transaction-scoped advisory lock on the id, so concurrent claims of one id (on any
/// engine, across a day boundary too) take turns and exactly one finds it unused, then checks
/// the window with one index seek and records the claim.
fn claim_shared<'c>(
    db: impl Into<Db<'c>>,
    commerce_id: i64,
    correlation_id: &str,
    cutoff: &str,
    seen_at: &str,
) -> db::Result<bool> {
    db.into().query_row(
        "SELECT mandato_claim_correlation(?1, CAST(?2 AS TEXT), CAST(?3 AS TEXT), CAST(?4 AS TEXT))",
        &params![commerce_id, correlation_id, cutoff, seen_at],
        |r| r.get(0),
    )
}

/// `claim_shared` as a statement without parameters, to be sent with the transaction's
/// `BEGIN` in one round trip. Only for values that need no quoting: an id of UUID characters
/// (the common headers accept nothing else) and timestamps as the engine writes them; `None`
/// otherwise, and the claim takes a round trip of its own.
fn claim_statement(
    commerce_id: i64,
    correlation_id: &str,
    cutoff: &str,
    seen_at: &str,
) -> Option<String> {
    let plain = |text: &str, extra: &[u8]| {
        !text.is_empty()
            && text
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || extra.contains(&b))
    };
    (plain(correlation_id, b"-{}:") && plain(cutoff, b"-:.") && plain(seen_at, b"-:.")).then(|| {
        format!(
            "SELECT mandato_claim_correlation({commerce_id}, '{correlation_id}', '{cutoff}', '{seen_at}')"
        )
    })
}

/// What `claim_statement` answered, as PostgreSQL writes a boolean in text.
fn claim_answer(answer: Option<&str>) -> Result<bool, Error> {
    match answer {
        Some("t") => Ok(true),
        Some("f") => Ok(false),
        other => Err(Error::Internal(anyhow::anyhow!(
            "the correlationId claim answered {other:?}"
        ))),
    }
}

/// A claim's transaction commits without waiting for the disk (see `Claim::then`).
const NO_DISK_WAIT: &str = "SET LOCAL synchronous_commit TO OFF";

/// A correlationId to claim on PostgreSQL: the commerce's id, used since `cutoff` or not,
/// recorded as seen at `seen_at`.
struct Claim {
    commerce_id: i64,
    correlation_id: String,
    cutoff: String,
    seen_at: String,
}

impl Claim {
    /// Runs `f` in a transaction that takes the claim first: `None` when the id was used (the
    /// transaction rolled back before `f`), `f`'s answer otherwise. A failure of `f` rolls the
    /// claim back with the rest.
    ///
    /// The claim is sent with the transaction's `BEGIN` in one round trip when its values
    /// allow (`claim_statement`), and the commit does not wait for the disk
    /// (`synchronous_commit` off for this transaction): the claim is durable within
    /// PostgreSQL's WAL writer delay (0.6 s at most by default), or as soon as any later commit
    /// is, whichever comes first. What a server crash can lose is a claim of a request that
    /// wrote nothing durable after it; its id may then be used once more, which only reads or
    /// writes afresh. A request that writes commits its writes after its claim: the WAL is
    /// flushed in order, so a durable write makes its claim durable too, and a replayed write
    /// is refused after any crash (and the write records the claim itself, `record_claim`,
    /// besides). The same holds for what a read writes in its claim's transaction (the
    /// deprecated `GET /login`'s throttle): it commits without waiting for the disk too.
    ///
    /// `durable`: the transaction is a write's (`RequestKind::DatabaseWrite`), and its commit
    /// waits for the disk as every write's does.
    fn then<T>(
        &self,
        pool: &db::PgPool,
        durable: bool,
        f: impl FnOnce(Db<'_>) -> Result<T, Error>,
    ) -> Result<Option<T>, Error> {
        let statement = claim_statement(
            self.commerce_id,
            &self.correlation_id,
            &self.cutoff,
            &self.seen_at,
        );
        let wait = if durable { None } else { Some(NO_DISK_WAIT) };
        let prologue = [wait, statement.as_deref()]
            .into_iter()
            .flatten()
            .collect::<Vec<_>>()
            .join("; ");
        let mut replayed = false;
        let outcome = pool.transaction_after(&prologue, |db, answer| {
            let fresh = match statement {
                Some(_) => claim_answer(answer)?,
                None => claim_shared(
                    db,
                    self.commerce_id,
                    &self.correlation_id,
                    &self.cutoff,
                    &self.seen_at,
                )?,
            };
            if !fresh {
                replayed = true;
                return Err(correlation_reused());
            }
            f(db)
        });
        match outcome {
            Err(_) if replayed => Ok(None),
            other => other.map(Some),
        }
    }

    /// Takes the claim in a transaction of its own: `false` when the id was used.
    fn take(&self, store: &Store) -> Result<bool, Error> {
        store.on_postgres(|pool| Ok(self.then(pool, false, |_| Ok(()))?.is_some()))
    }
}

/// Claims a correlationId on PostgreSQL in a transaction of its own (`Claim::then`).
fn claim_on_postgres(
    store: &Store,
    commerce_id: i64,
    correlation_id: &str,
    cutoff: &str,
    seen_at: &str,
) -> Result<bool, Error> {
    Claim {
        commerce_id,
        correlation_id: correlation_id.to_string(),
        cutoff: cutoff.to_string(),
        seen_at: seen_at.to_string(),
    }
    .take(store)
}

/// Whether the commerce used the correlationId at `cutoff` or later.
fn was_seen<'c>(
    db: impl Into<Db<'c>>,
    commerce_id: i64,
    correlation_id: &str,
    cutoff: &str,
) -> db::Result<bool> {
    let db = db.into();
    let sql = match db.backend() {
        // One seek per day from the cutoff's to the last stored one (the claims are keyed by
        // the day first).
        Backend::Sqlite => {
            "WITH RECURSIVE days(day) AS (
                 SELECT substr(?3, 1, 10)
                 UNION ALL SELECT date(day, '+1 day') FROM days
                 WHERE day < (SELECT max(day) FROM correlation_claims))
             SELECT EXISTS (SELECT 1 FROM correlation_claims
                 WHERE day IN (SELECT day FROM days) AND commerce_id = ?1
                   AND correlation_id = ?2 AND seen_at >= ?3)"
        }
        // One seek of `correlation_claims_by_id`.
        Backend::Postgres => {
            "SELECT EXISTS (SELECT 1 FROM correlation_claims
                 WHERE commerce_id = ?1 AND correlation_id = ?2 AND seen_at >= CAST(?3 AS TEXT))"
        }
    };
    db.query_row(sql, &params![commerce_id, correlation_id, cutoff], |r| {
        r.get(0)
    })
}

pub struct AuditWriter {
    sender: Mutex<Option<Sender<Record>>>,
    /// Refusals counted since the writer last took them: a flood of refused requests costs
    /// one entry per minute and reason, and one `Record::Refusals` each.
    refusals: Arc<RefusalCounts>,
    /// Places for audit rows not yet written (`AUDIT_ROWS_QUEUED`): a row's place is free
    /// again once the writer has consumed its record.
    queue_room: Arc<Semaphore>,
    pending: Arc<Pending>,
    seen: Arc<SeenFilter>,
    retention_days: i64,
    thread: Mutex<Option<JoinHandle<()>>>,
    /// When each API key's use was last sent to the writer: at most one write per key a minute.
    key_uses: Mutex<HashMap<i64, Instant>>,
}

/// Refusals per minute (its first millisecond, RFC 3339) and reason.
type RefusalCounts = Mutex<HashMap<(String, Refusal), i64>>;

/// How often an API key's last use is written while it is in use.
const KEY_USE_EVERY: Duration = Duration::from_secs(60);

/// Audit rows that may wait for the writer, at most: 3 s of 22,000 lookups a second, past how
/// far behind the bench's full lookup load leaves the writer (1.2 to 1.8 s), a few hundred
/// bytes each (their headers' JSON is most of it). When the writer falls that far behind (a
/// load that leaves it too little CPU), requests wait for a place before they run, so the
/// queue's memory stays bounded and every request that runs keeps its row.
const AUDIT_ROWS_QUEUED: usize = 65_536;

/// What a merchant request may do before its first transaction, which decides when its
/// correlationId is claimed on PostgreSQL (`AuditWriter::reserve_correlation`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RequestKind {
    /// `GET` and `HEAD`: nothing a replay could repeat. The claim goes in with the request's
    /// first transaction, whose commit does not wait for the disk.
    Read,
    /// A write that acts on nothing outside the database (the creations: `POST /user`,
    /// `/mandate`, `/installments`). The claim goes in with its first transaction, which
    /// commits durably, so the claim commits with the write it guards.
    DatabaseWrite,
    /// Any other write: it may call an acquirer or write a file before its first transaction,
    /// and a replay must be refused before anything happens, so the claim is taken and
    /// committed in a transaction of its own before the handler runs.
    Write,
}

/// Whether a correlationId may be used.
#[derive(Debug)]
pub enum Reservation {
    Fresh,
    Replayed,
    /// A read, or a write that acts only on the database, on PostgreSQL: its claim is taken
    /// inside the first transaction the request runs (`Store::read` or `write`, through
    /// `CORRELATION_CLAIM`), saving the round trips of a transaction of its own; the request's
    /// layer takes it after the handler when no transaction did (`DeferredClaim::settle`).
    Deferred(Arc<DeferredClaim>),
}

/// The refusal of a correlationId already used.
pub fn correlation_reused() -> Error {
    Error::refused_at(
        "CORRELATION_ID_REUSED",
        "header.correlationId",
        "this correlationId was already used; send a new one for every attempt",
    )
}

/// The correlationId of a read or of a database-only write on PostgreSQL, not claimed yet
/// (`Reservation::Deferred`).
///
/// Why not every write: one could act outside the database (call an acquirer, write a file)
/// before its first transaction, and a replay must be refused before anything happens
/// (`RequestKind::Write`). A read does nothing a replay could repeat, and a database-only write
/// does nothing before the transaction that takes its claim; either is answered only after its
/// claim was taken, by its transaction or by `settle`.
pub struct DeferredClaim {
    claim: Claim,
    /// A write's: the transaction that takes the claim commits durably (it may be the write).
    durable: bool,
    state: std::sync::atomic::AtomicU8,
    /// The engine's in-memory claims, released once this one is settled either way.
    pending: Arc<Pending>,
}

const UNCLAIMED: u8 = 0;
const CLAIMING: u8 = 1;
const TAKEN: u8 = 2;
const REPLAYED: u8 = 3;

impl DeferredClaim {
    /// Takes the claim inside the transaction `pool` opens for `f`, when it is still to take
    /// and no other transaction of the request is taking it (a nested one would wait for the
    /// advisory lock its own request holds). A used id fails the transaction before `f` runs;
    /// a failure of `f` rolls the claim back with the rest, to be taken again later.
    pub(crate) fn take_with<T>(
        &self,
        pool: &db::PgPool,
        f: impl FnOnce(Db<'_>) -> Result<T, Error>,
    ) -> Result<T, Error> {
        if self
            .state
            .compare_exchange(UNCLAIMED, CLAIMING, Ordering::AcqRel, Ordering::Acquire)
            .is_err()
        {
            return pool.transaction(f);
        }
        let outcome = self.claim.then(pool, self.durable, f);
        let state = match &outcome {
            Ok(Some(_)) => TAKEN,
            Ok(None) => REPLAYED,
            Err(_) => UNCLAIMED,
        };
        self.state.store(state, Ordering::Release);
        outcome?.ok_or_else(correlation_reused)
    }

    /// After the handler: `Ok(())` when the claim was taken (now, in a transaction of its own,
    /// if no transaction of the request took it), the refusal when the id was used.
    pub fn settle(&self, store: &Store) -> Result<(), Error> {
        let fresh = match self.state.load(Ordering::Acquire) {
            TAKEN => true,
            REPLAYED => false,
            _ => self.claim.take(store)?,
        };
        self.state
            .store(if fresh { TAKEN } else { REPLAYED }, Ordering::Release);
        if fresh {
            Ok(())
        } else {
            Err(correlation_reused())
        }
    }
}

impl std::fmt::Debug for DeferredClaim {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DeferredClaim")
            .field("commerce_id", &self.claim.commerce_id)
            .field("correlation_id", &self.claim.correlation_id)
            .field("state", &self.state)
            .finish_non_exhaustive()
    }
}

impl Drop for DeferredClaim {
    fn drop(&mut self) {
        self.pending
            .release(&(self.claim.commerce_id, self.claim.correlation_id.clone()));
    }
}

impl AuditWriter {
    /// `retention_days` is the correlationIds' (replays are refused that long); the audit log's
    /// own retention is a setting staff change (`set_retention_days`).
    /// The writer keeps a connection of its own: on SQLite a second writer with `NORMAL`
    /// durability, on PostgreSQL one outside the store's pool.
    pub fn start(
        store: &Store,
        retention_days: i64,
        clock: Arc<dyn Clock>,
    ) -> anyhow::Result<AuditWriter> {
        Self::start_with_room(store, retention_days, clock, AUDIT_ROWS_QUEUED)
    }

    fn start_with_room(
        store: &Store,
        retention_days: i64,
        clock: Arc<dyn Clock>,
        audit_rows_queued: usize,
    ) -> anyhow::Result<AuditWriter> {
        let (conn, reader) = match store.path() {
            Some(db_path) => {
                let conn = open_connection(db_path, Durability::Normal)?;
                // A batch inserts into today's part of the correlationId claims and of the
                // audit log's correlationId index (`0021_day_local_request_keys.sql`), at
                // random places within it: 8 MiB of cache (SQLite's default is 2 MiB) keeps
                // those pages between batches.
                conn.pragma_update(None, "cache_size", -8192)?;
                // The engine's checkpoint thread copies the WAL back
                // (`SqliteStore::start_checkpointer`).
                conn.pragma_update(None, "wal_autocheckpoint", 0)?;
                let reader = super::open_reader(db_path)?;
                let turn = store
                    .sqlite()
                    .expect("a store with a SQLite file")
                    .write_turn();
                (WriterConn::Sqlite(conn, turn), Some(reader))
            }
            None => {
                let conn = store
                    .postgres_connection()
                    .expect("a store without a SQLite file is on PostgreSQL")?;
                (WriterConn::Postgres(Box::new(conn)), None)
            }
        };
        let pending = Arc::new(Pending::new());
        let seen = Arc::new(SeenFilter::new());
        match reader {
            Some(reader) => {
                // Ids committed before this start; the request path looks every id up
                // meanwhile.
                let seen = Arc::clone(&seen);
                std::thread::Builder::new()
                    .name("correlation-load".into())
                    .spawn(move || {
                        if let Err(e) = seen.load(&reader) {
                            tracing::error!(error = %e, "could not load the recent correlationIds");
                        }
                    })?;
            }
            // PostgreSQL: the database decides every claim (`claim_shared`), nothing to load.
            None => seen.loaded.store(true, Ordering::Release),
        }
        let (sender, receiver) = mpsc::channel();
        let thread_pending = Arc::clone(&pending);
        let queue_room = Arc::new(Semaphore::new(audit_rows_queued));
        let thread_room = Arc::clone(&queue_room);
        let refusals = Arc::new(RefusalCounts::default());
        let thread_refusals = Arc::clone(&refusals);
        let pruner = Pruner {
            clock,
            correlation_days: retention_days,
            last_start: None,
            cutoffs: None,
            waiters: Vec::new(),
        };
        let thread = std::thread::Builder::new()
            .name("audit-writer".into())
            .spawn(move || {
                // However the thread ends, requests stop waiting for room it will not give.
                let _close = CloseOnDrop(&thread_room);
                let queues = Queues {
                    pending: &thread_pending,
                    refusals: &thread_refusals,
                };
                write_loop(conn, receiver, queues, pruner)
            })?;
        Ok(AuditWriter {
            sender: Mutex::new(Some(sender)),
            refusals,
            queue_room,
            pending,
            seen,
            retention_days,
            thread: Mutex::new(Some(thread)),
            key_uses: Mutex::new(HashMap::new()),
        })
    }

    fn send(&self, record: Record) {
        if let Some(sender) = self
            .sender
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .as_ref()
        {
            // The thread only ends at shutdown, after which nothing is recorded.
            let _ = sender.send(record);
        }
    }

    /// Records the first use of a correlationId by a commerce; a second use within the
    /// retention window is a replay.
    ///
    /// The id is claimed in memory first, then looked up in the database in a read transaction
    /// that starts after the claim. An id's claim is released only after its batch committed,
    /// so a concurrent use finds either the claim or the committed row, never neither. The
    /// lookup is skipped when the filter of seen ids has certainly never seen the id: every id
    /// enters it here, before its claim is released.
    ///
    /// On PostgreSQL the claim of a read or a database-only write is deferred to the
    /// request's first transaction (`Reservation::Deferred`, `RequestKind`).
    pub fn reserve_correlation(
        &self,
        store: &Store,
        commerce_id: i64,
        correlation_id: &str,
        now: chrono::DateTime<chrono::Utc>,
        kind: RequestKind,
    ) -> Result<Reservation, Error> {
        let key = (commerce_id, correlation_id.to_string());
        if !self.pending.claim(key.clone()) {
            return Ok(Reservation::Replayed);
        }
        let cutoff =
            mandato_core::clock::timestamp(now - chrono::Duration::days(self.retention_days));
        if store.backend() == Backend::Postgres && kind != RequestKind::Write {
            return Ok(Reservation::Deferred(Arc::new(DeferredClaim {
                claim: Claim {
                    commerce_id,
                    correlation_id: correlation_id.to_string(),
                    cutoff,
                    seen_at: mandato_core::clock::timestamp(now),
                },
                durable: kind == RequestKind::DatabaseWrite,
                state: std::sync::atomic::AtomicU8::new(UNCLAIMED),
                pending: Arc::clone(&self.pending),
            })));
        }
        if store.backend() == Backend::Postgres {
            // Engines that share the database know each other's ids only from it: the claim
            // is taken there before the request goes on, so of several engines one wins. It
            // is committed already, so neither the in-memory filter nor the batch has a part.
            let seen_at = mandato_core::clock::timestamp(now);
            let fresh = claim_on_postgres(store, commerce_id, correlation_id, &cutoff, &seen_at);
            self.pending.release(&key);
            return Ok(if fresh? {
                Reservation::Fresh
            } else {
                Reservation::Replayed
            });
        }
        let seen = if !self.seen.may_contain(commerce_id, correlation_id) {
            Ok(false)
        } else {
            store.read(|conn| Ok(was_seen(conn, commerce_id, correlation_id, &cutoff)?))
        };
        match seen {
            Ok(false) => {}
            Ok(true) => {
                self.pending.release(&key);
                return Ok(Reservation::Replayed);
            }
            Err(e) => {
                self.pending.release(&key);
                return Err(e);
            }
        }
        self.seen.insert(commerce_id, correlation_id);
        self.send(Record::Correlation {
            key,
            seen_at: mandato_core::clock::timestamp(now),
        });
        Ok(Reservation::Fresh)
    }

    /// Whether the correlationIds committed before this start are in the in-memory filter
    /// (until then every id is looked up in the database).
    pub fn recent_ids_loaded(&self) -> bool {
        self.seen.loaded.load(Ordering::Acquire)
    }

    /// Waits for a place in the queue of audit rows (`AUDIT_ROWS_QUEUED`). A request takes it
    /// before it runs, so a writer that falls behind holds requests back before they do any
    /// work, and the rows queued never outnumber the places.
    pub async fn place(&self) -> AuditPlace {
        // Closed once the writer's thread has ended: the row will go nowhere, as after
        // `shutdown`, and nothing is waited for.
        AuditPlace {
            _permit: Arc::clone(&self.queue_room).acquire_owned().await.ok(),
        }
    }

    /// Queues a request's audit row in the place it took.
    pub fn log(&self, entry: AuditEntry, place: AuditPlace) {
        self.send(Record::Audit {
            entry,
            _place: place,
        });
    }

    /// Notes that an API key was accepted: the first use, then one a minute, reaches the
    /// writer, which keeps it as the key's last use. The request path only reads a map.
    pub fn key_used(&self, key_id: i64, at: chrono::DateTime<chrono::Utc>) {
        let now = Instant::now();
        {
            let mut uses = self.key_uses.lock().unwrap_or_else(|p| p.into_inner());
            match uses.get(&key_id) {
                Some(sent) if now.duration_since(*sent) < KEY_USE_EVERY => return,
                _ => {
                    uses.insert(key_id, now);
                }
            }
        }
        self.send(Record::KeyUsed {
            key_id,
            at: mandato_core::clock::timestamp(at),
        });
    }

    /// Counts a request refused before its API key was accepted, in the minute of `at`.
    pub fn refused(&self, at: chrono::DateTime<chrono::Utc>, reason: Refusal) {
        use chrono::{DurationRound, TimeDelta};
        let minute = at.duration_trunc(TimeDelta::minutes(1)).unwrap_or(at);
        let first = {
            let mut counts = self.refusals.lock().unwrap_or_else(|p| p.into_inner());
            let count = counts
                .entry((mandato_core::clock::timestamp(minute), reason))
                .or_default();
            *count += 1;
            *count == 1
        };
        // The writer takes every count there is when it meets this record, so one record per
        // new entry is enough.
        if first {
            self.send(Record::Refusals);
        }
    }

    /// Deletes what is past its retention now (rather than at the hourly round) and waits
    /// until it is gone.
    pub fn prune_now(&self) {
        let (done, wait) = mpsc::channel();
        self.send(Record::Prune(Some(done)));
        let _ = wait.recv_timeout(Duration::from_secs(60));
    }

    /// Starts a pruning round soon, without waiting for it (the retention just changed).
    pub fn prune_soon(&self) {
        self.send(Record::Prune(None));
    }

    /// Waits until everything recorded so far is committed.
    pub fn flush(&self) {
        let (done, wait) = mpsc::channel();
        self.send(Record::Flush(done));
        let _ = wait.recv_timeout(Duration::from_secs(10));
    }

    /// Writes what is queued and stops the thread.
    pub fn shutdown(&self) {
        self.sender.lock().unwrap_or_else(|p| p.into_inner()).take();
        if let Some(thread) = self.thread.lock().unwrap_or_else(|p| p.into_inner()).take() {
            let _ = thread.join();
        }
    }
}

/// Records per commit, at most: a quarter second of a busy engine (two records a request).
const MAX_BATCH: usize = 16_000;
/// How long the writer gathers records after the first one before it commits them: a commit
/// per request would cost more than the request, and every commit also makes the readers drop
/// their page caches. The keys of a batch land at random places of two indexes, so each commit
/// rewrites about one page per row until a batch covers the index: fewer, larger commits write
/// each page once for many rows (profiled: 50 ms batches made the writer 15% of a lookup's CPU).
const GATHER: Duration = Duration::from_millis(250);
const PRUNE_EVERY: Duration = Duration::from_secs(3_600);
/// Rows deleted per table and step: a step takes a few milliseconds, and queued records are
/// written between steps.
const PRUNE_BATCH: i64 = 500;

/// Records written, at most, before the audit writer lets a waiting group commit have the
/// file (`write_turn`): about 5 ms of writing.
const RECORDS_PER_TURN: usize = 500;

/// How long the writer waits for a record before it gives its page cache back.
const IDLE_AFTER: Duration = Duration::from_secs(1);

/// The audit writer's own connection.
enum WriterConn {
    /// With the turns it shares with the store's writer (`write_turn`).
    Sqlite(Connection, Arc<WriteTurn>),
    /// Boxed: a PostgreSQL client is several times a SQLite handle's size.
    Postgres(Box<super::db::PgConn>),
}

impl WriterConn {
    /// Outside any transaction: each statement commits on its own.
    fn db(&self) -> Db<'_> {
        match self {
            WriterConn::Sqlite(conn, _) => Db::Sqlite(conn),
            WriterConn::Postgres(conn) => Db::Postgres(conn),
        }
    }

    /// A turn at writing SQLite's file (`write_turn`); PostgreSQL's writers need none.
    fn turn(&self) -> Option<Turn<'_>> {
        match self {
            WriterConn::Sqlite(_, turn) => Some(turn.take()),
            WriterConn::Postgres(_) => None,
        }
    }

    /// Gives SQLite's page cache back; PostgreSQL's is the server's.
    fn release_memory(&self) {
        if let WriterConn::Sqlite(conn, _) = self {
            let _ = conn.release_memory();
            super::return_freed_memory();
        }
    }
}

/// A request's place in the queue of audit rows; dropped, it is free again.
pub struct AuditPlace {
    _permit: Option<OwnedSemaphorePermit>,
}

struct CloseOnDrop<'a>(&'a Semaphore);

impl Drop for CloseOnDrop<'_> {
    fn drop(&mut self) {
        self.0.close();
    }
}

/// What the request path hands the writer besides its channel.
struct Queues<'a> {
    /// Correlation ids claimed, released once committed.
    pending: &'a Pending,
    refusals: &'a RefusalCounts,
}

fn write_loop(
    mut conn: WriterConn,
    receiver: Receiver<Record>,
    queues: Queues,
    mut pruner: Pruner,
) {
    let mut open = true;
    // Whether this connection wrote since it last gave its page cache back.
    let mut holds_cache = false;
    while open {
        // While a pruning round is under way the loop only looks for records between steps.
        let wait = if pruner.busy() {
            Duration::ZERO
        } else if holds_cache {
            IDLE_AFTER
        } else {
            Duration::from_secs(60)
        };
        let first = match receiver.recv_timeout(wait) {
            Ok(record) => Some(record),
            Err(RecvTimeoutError::Timeout) => None,
            Err(RecvTimeoutError::Disconnected) => return,
        };
        if first.is_none() && holds_cache && !pruner.busy() {
            // No request for a while: the cache goes back to the system until the next batch.
            conn.release_memory();
            holds_cache = false;
        }
        if let Some(first) = first {
            holds_cache = true;
            // Sleeping rather than blocking on the channel lets senders skip waking this thread.
            if matches!(first, Record::Audit { .. } | Record::Correlation { .. }) {
                std::thread::sleep(GATHER);
            }
            let mut batch = vec![first];
            while batch.len() < MAX_BATCH {
                match receiver.try_recv() {
                    Ok(record) => batch.push(record),
                    Err(TryRecvError::Empty) => break,
                    Err(TryRecvError::Disconnected) => {
                        open = false;
                        break;
                    }
                }
            }
            if batch.iter().any(|r| matches!(r, Record::Refusals)) {
                let counts =
                    std::mem::take(&mut *queues.refusals.lock().unwrap_or_else(|p| p.into_inner()));
                batch.extend(
                    counts
                        .into_iter()
                        .map(|((minute, reason), count)| Record::Refusal {
                            minute,
                            reason,
                            count,
                        }),
                );
            }
            let mut flushes = Vec::new();
            let mut written = Vec::new();
            // Each record gives its place back as the batch consumes it, written or not.
            match write_batch(&mut conn, batch, &mut flushes, &mut written, &mut pruner) {
                // Only committed ids leave memory; after a failed batch they stay refused.
                Ok(()) => {
                    for key in &written {
                        queues.pending.release(key);
                    }
                }
                Err(e) => tracing::error!(error = %e, "could not write the audit batch"),
            }
            for done in flushes {
                let _ = done.send(());
            }
        }
        // Each pruning step deletes in a statement of its own, so it takes its own turn.
        let _turn = if pruner.busy() { conn.turn() } else { None };
        pruner.step(conn.db());
    }
}

/// One batch in one transaction.
fn write_batch(
    conn: &mut WriterConn,
    batch: Vec<Record>,
    flushes: &mut Vec<Sender<()>>,
    written: &mut Vec<CorrelationKey>,
    pruner: &mut Pruner,
) -> db::Result<()> {
    match conn {
        WriterConn::Sqlite(conn, turn) => {
            // While the store's writer waits for the file (group commits), the batch commits
            // in chunks and hands the turn over after each: a whole batch held creations up
            // for tens of milliseconds. Alone, it commits at once, which writes each page of
            // its random-keyed indexes once for many rows.
            let mut records = batch.into_iter().peekable();
            while records.peek().is_some() {
                let _turn = turn.take();
                let tx =
                    conn.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?;
                loop {
                    let chunk = records.by_ref().take(RECORDS_PER_TURN).collect();
                    write_records(Db::from(&tx), chunk, flushes, written, pruner)?;
                    if records.peek().is_none() || turn.awaited() {
                        break;
                    }
                }
                tx.commit()?;
            }
            Ok(())
        }
        WriterConn::Postgres(conn) => {
            conn.transaction(|db| write_records(db, batch, flushes, written, pruner))
        }
    }
}

/// One batch's records, in the writer's transaction.
fn write_records(
    db: Db<'_>,
    batch: Vec<Record>,
    flushes: &mut Vec<Sender<()>>,
    written: &mut Vec<CorrelationKey>,
    pruner: &mut Pruner,
) -> db::Result<()> {
    let mut refusals: HashMap<(String, Refusal), i64> = HashMap::new();
    let mut correlations = Vec::new();
    let mut key_uses = Vec::new();
    let mut audit_rows = Vec::new();
    for record in batch {
        match record {
            Record::Audit { entry, .. } => audit_rows.push(entry),
            Record::Correlation { key, seen_at } => correlations.push((key, seen_at)),
            Record::Refusal {
                minute,
                reason,
                count,
            } => {
                *refusals.entry((minute, reason)).or_default() += count;
            }
            Record::Refusals => {}
            Record::KeyUsed { key_id, at } => key_uses.push((key_id, at)),
            Record::Flush(done) => flushes.push(done),
            Record::Prune(done) => pruner.start(done),
        }
    }
    insert_audit_rows(db, &audit_rows)?;
    super::commerces::record_api_key_uses(db, &key_uses)?;
    // In key order, each insert finds its B-tree page next to the previous one's.
    correlations.sort_unstable();
    for (key, seen_at) in correlations {
        db.execute(
            "INSERT INTO correlation_claims (day, commerce_id, correlation_id, seen_at)
             VALUES (substr(CAST(?3 AS TEXT), 1, 10), ?1, ?2, ?3)
             ON CONFLICT (day, commerce_id, correlation_id)
             DO UPDATE SET seen_at = excluded.seen_at",
            &params![key.0, &key.1, &seen_at],
        )?;
        written.push(key);
    }
    for ((minute, reason), n) in refusals {
        db.execute(
            "INSERT INTO audit_refusals (minute, reason, count) VALUES (?1, ?2, ?3)
             ON CONFLICT (minute, reason)
             DO UPDATE SET count = audit_refusals.count + excluded.count",
            &params![&minute, reason.as_str(), n],
        )?;
    }
    Ok(())
}

/// Writes a batch's audit rows in their order. SQLite takes one prepared insert per row (in
/// process, nothing to save); PostgreSQL takes the whole batch in one statement, the rows
/// passed as one JSON array, where a statement per row cost a round trip per request.
fn insert_audit_rows(db: Db<'_>, rows: &[AuditEntry]) -> db::Result<()> {
    match db.backend() {
        Backend::Sqlite => {
            for e in rows {
                db.execute(
                    "INSERT INTO audit_log (at, method, path, status, duration_ms, commerce,
                            correlation_id, api_key_prefix, headers, peer)
                     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)",
                    &params![
                        &e.at,
                        &e.method,
                        &e.path,
                        i64::from(e.status),
                        e.duration_ms,
                        &e.commerce,
                        &e.correlation_id,
                        &e.api_key_prefix,
                        &e.headers,
                        &e.peer
                    ],
                )?;
            }
        }
        Backend::Postgres if rows.is_empty() => {}
        Backend::Postgres => {
            let rows_json = serde_json::Value::Array(
                rows.iter()
                    .map(|e| {
                        serde_json::json!({
                            "at": e.at, "method": e.method, "path": e.path,
                            "status": e.status, "duration_ms": e.duration_ms,
                            "commerce": e.commerce, "correlation_id": e.correlation_id,
                            "api_key_prefix": e.api_key_prefix, "headers": e.headers,
                            "peer": e.peer,
                        })
                    })
                    .collect(),
            )
            .to_string();
            db.execute(
                "INSERT INTO audit_log (at, method, path, status, duration_ms, commerce,
                        correlation_id, api_key_prefix, headers, peer)
                 SELECT r.at, r.method, r.path, r.status, r.duration_ms, r.commerce,
                        r.correlation_id, r.api_key_prefix, r.headers, r.peer
                 FROM ROWS FROM (jsonb_to_recordset(CAST(CAST(?1 AS TEXT) AS JSONB))
                        AS (at TEXT, method TEXT, path TEXT, status BIGINT,
                            duration_ms DOUBLE PRECISION, commerce TEXT, correlation_id TEXT,
                            api_key_prefix TEXT, headers TEXT, peer TEXT))
                     WITH ORDINALITY AS r(at, method, path, status, duration_ms, commerce,
                        correlation_id, api_key_prefix, headers, peer, n)
                 ORDER BY r.n",
                &params![&rows_json],
            )?;
        }
    }
    Ok(())
}

/// Deletes request logs past their retention: the audit log and the refusal counts after the
/// retention staff chose, correlationIds after their replay window. A round starts every hour
/// (or when asked) and goes a small batch per step.
struct Pruner {
    clock: Arc<dyn Clock>,
    correlation_days: i64,
    last_start: Option<Instant>,
    /// The round under way: the audit cutoff and the correlationIds' cutoff.
    cutoffs: Option<(String, String)>,
    waiters: Vec<Sender<()>>,
}

impl Pruner {
    fn busy(&self) -> bool {
        self.cutoffs.is_some() || self.last_start.is_none_or(|t| t.elapsed() >= PRUNE_EVERY)
    }

    /// Asks for a round now (one under way restarts with fresh cutoffs when it ends).
    fn start(&mut self, done: Option<Sender<()>>) {
        self.last_start = None;
        self.waiters.extend(done);
    }

    fn step(&mut self, conn: Db<'_>) {
        if self.cutoffs.is_none() {
            if !self.busy() {
                return;
            }
            self.last_start = Some(Instant::now());
            let now = self.clock.now();
            let days = retention_days(conn).unwrap_or(DEFAULT_RETENTION_DAYS);
            self.cutoffs = Some((
                mandato_core::clock::timestamp(now - chrono::Duration::days(days)),
                mandato_core::clock::timestamp(now - chrono::Duration::days(self.correlation_days)),
            ));
        }
        let Some((audit_cutoff, correlation_cutoff)) = &self.cutoffs else {
            return;
        };
        let deleted = prune_batch(conn, audit_cutoff, correlation_cutoff);
        let finished = match deleted {
            Ok(n) => n == 0,
            Err(e) => {
                tracing::warn!(error = %e, "could not prune the request logs");
                true
            }
        };
        if finished {
            self.cutoffs = None;
            // A round asked for while this one ran starts next; its waiters wait for it.
            if self.last_start.is_some() {
                for done in self.waiters.drain(..) {
                    let _ = done.send(());
                }
            }
        }
    }
}

/// Deletes one batch of each log past its cutoff; how many rows went.
fn prune_batch(db: Db<'_>, audit_cutoff: &str, correlation_cutoff: &str) -> db::Result<u64> {
    Ok(db.execute(
        "DELETE FROM audit_log WHERE seq IN
         (SELECT seq FROM audit_log WHERE at < ?1 ORDER BY at LIMIT ?2)",
        &params![audit_cutoff, PRUNE_BATCH],
    )? + db.execute(
        "DELETE FROM audit_refusals WHERE (minute, reason) IN
         (SELECT minute, reason FROM audit_refusals WHERE minute < ?1 LIMIT ?2)",
        &params![audit_cutoff, PRUNE_BATCH],
    )? + db.execute(
        // Whole days before the cutoff's; the cutoff's own day goes the next day (the lookup
        // ignores its rows older than the cutoff).
        "DELETE FROM correlation_claims WHERE (day, commerce_id, correlation_id) IN
         (SELECT day, commerce_id, correlation_id FROM correlation_claims
          WHERE day < substr(CAST(?1 AS TEXT), 1, 10) ORDER BY day LIMIT ?2)",
        &params![correlation_cutoff, PRUNE_BATCH],
    )?)
}

/// Staff's retention for the audit log and the refusal counts, if they chose one.
pub fn retention_days<'c>(db: impl Into<Db<'c>>) -> Option<i64> {
    settings::get(db, RETENTION_SETTING)
        .ok()
        .flatten()
        .and_then(|v| v.parse().ok())
}

/// Stores staff's retention (the caller checked it is in `RETENTION_RANGE`).
pub fn set_retention_days<'c>(db: impl Into<Db<'c>>, days: i64) -> db::Result<()> {
    settings::set(db, RETENTION_SETTING, &days.to_string())
}

/// Refused requests counted in one minute for one reason.
#[derive(Debug)]
pub struct RefusalCount {
    pub minute: String,
    pub reason: String,
    pub count: i64,
}

/// The refusal counts in `[from, to)`, newest first, at most `limit`.
pub fn refusals<'c>(
    db: impl Into<Db<'c>>,
    from: Option<&str>,
    to: Option<&str>,
    limit: i64,
) -> db::Result<Vec<RefusalCount>> {
    db.into().query_map(
        "SELECT minute, reason, count FROM audit_refusals
         WHERE (CAST(?1 AS TEXT) IS NULL OR minute >= ?1)
           AND (CAST(?2 AS TEXT) IS NULL OR minute < ?2)
         ORDER BY minute DESC, reason LIMIT ?3",
        &params![from, to, limit],
        |r| {
            Ok(RefusalCount {
                minute: r.get(0)?,
                reason: r.get(1)?,
                count: r.get(2)?,
            })
        },
    )
}

/// The totals per reason in `[from, to)`.
pub fn refusal_totals<'c>(
    db: impl Into<Db<'c>>,
    from: Option<&str>,
    to: Option<&str>,
) -> db::Result<Vec<(String, i64)>> {
    // sum() of BIGINT is NUMERIC on PostgreSQL: the total is brought back to an integer.
    db.into().query_map(
        "SELECT reason, CAST(sum(count) AS BIGINT) FROM audit_refusals
         WHERE (CAST(?1 AS TEXT) IS NULL OR minute >= ?1)
           AND (CAST(?2 AS TEXT) IS NULL OR minute < ?2)
         GROUP BY reason ORDER BY reason",
        &params![from, to],
        |r| Ok((r.get(0)?, r.get(1)?)),
    )
}

#[cfg(test)]
mod tests {
    use super::SeenFilter;
    use super::*;
    use crate::pg_test::on_both;
    use std::sync::atomic::Ordering;

    fn pruner() -> Pruner {
        Pruner {
            clock: Arc::new(mandato_core::clock::SystemClock),
            correlation_days: 1,
            last_start: None,
            cutoffs: None,
            waiters: Vec::new(),
        }
    }

    fn write(db: Db<'_>, batch: Vec<Record>) -> Vec<CorrelationKey> {
        let mut written = Vec::new();
        write_records(db, batch, &mut Vec::new(), &mut written, &mut pruner()).unwrap();
        written
    }

    fn entry(at: &str) -> AuditEntry {
        AuditEntry {
            at: at.to_string(),
            method: "POST".to_string(),
            path: "/v1/mandates".to_string(),
            status: 201,
            duration_ms: 1.25,
            commerce: Some("76123456-0".to_string()),
            correlation_id: Some("c-1".to_string()),
            api_key_prefix: None,
            headers: "{}".to_string(),
            peer: None,
        }
    }

    fn audit_entry(at: &str) -> Record {
        Record::Audit {
            entry: entry(at),
            _place: AuditPlace { _permit: None },
        }
    }

    #[test]
    fn a_batch_writes_its_audit_entries_correlations_and_refusal_counts() {
        on_both(|db| {
            let refusal = |minute: &str, reason| Record::Refusal {
                minute: minute.to_string(),
                reason,
                count: 1,
            };
            let written = write(
                db,
                vec![
                    audit_entry("2026-11-25T12:00:00.000Z"),
                    Record::Correlation {
                        key: (7, "c-1".to_string()),
                        seen_at: "2026-11-25T12:00:00.000Z".to_string(),
                    },
                    refusal("2026-11-25T12:00:00.000Z", Refusal::InvalidApiKey),
                    refusal("2026-11-25T12:00:00.000Z", Refusal::InvalidApiKey),
                    refusal("2026-11-25T12:01:00.000Z", Refusal::InvalidHeaders),
                ],
            );
            assert_eq!(written, vec![(7, "c-1".to_string())]);
            // The same minute and reason again adds to its count.
            write(
                db,
                vec![refusal("2026-11-25T12:00:00.000Z", Refusal::InvalidApiKey)],
            );

            let counts = refusals(db, None, None, 10).unwrap();
            let counts: Vec<_> = counts
                .iter()
                .map(|c| (c.minute.as_str(), c.reason.as_str(), c.count))
                .collect();
            assert_eq!(
                counts,
                vec![
                    ("2026-11-25T12:01:00.000Z", "INVALID_HEADERS", 1),
                    ("2026-11-25T12:00:00.000Z", "INVALID_API_KEY", 3),
                ]
            );
            let first_minute = refusals(db, None, Some("2026-11-25T12:01:00.000Z"), 10).unwrap();
            assert_eq!(first_minute.len(), 1);
            assert_eq!(
                refusal_totals(db, Some("2026-11-25T12:00:00.000Z"), None).unwrap(),
                vec![
                    ("INVALID_API_KEY".to_string(), 3),
                    ("INVALID_HEADERS".to_string(), 1)
                ]
            );
            let logged: (i64, f64) = db
                .query_row(
                    "SELECT status, duration_ms FROM audit_log",
                    &params![],
                    |r| Ok((r.get(0)?, r.get(1)?)),
                )
                .unwrap();
            assert_eq!(logged, (201, 1.25));
        });
    }

    #[test]
    fn a_claimed_correlation_id_is_seen_within_its_window() {
        on_both(|db| {
            let claim = CorrelationClaim {
                commerce_id: 7,
                correlation_id: "c-1".to_string(),
                seen_at: "2026-11-25T12:00:00.000Z".to_string(),
                deferred: None,
            };
            match db.backend() {
                Backend::Sqlite => {
                    record_claim(db, &claim).unwrap();
                    // The batch writer records the same id again: no conflict.
                    record_claim(db, &claim).unwrap();
                }
                // PostgreSQL's claim is the database function's, taken before the request
                // goes on; the write's `record_claim` then adds nothing.
                Backend::Postgres => {
                    let cutoff = "2026-11-18T12:00:00.000Z";
                    assert!(claim_shared(db, 7, "c-1", cutoff, &claim.seen_at).unwrap());
                    record_claim(db, &claim).unwrap();
                }
            }
            let rows: i64 = db
                .query_row("SELECT count(*) FROM correlation_claims", &[], |r| r.get(0))
                .unwrap();
            assert_eq!(rows, 1);
            assert!(was_seen(db, 7, "c-1", "2026-11-25T00:00:00.000Z").unwrap());
            assert!(!was_seen(db, 7, "c-1", "2026-11-26T00:00:00.000Z").unwrap());
            assert!(!was_seen(db, 8, "c-1", "2026-11-25T00:00:00.000Z").unwrap());
        });
    }

    #[test]
    fn pruning_deletes_only_what_is_past_its_cutoff() {
        on_both(|db| {
            write(
                db,
                vec![
                    audit_entry("2026-11-01T00:00:00.000Z"),
                    audit_entry("2026-11-25T00:00:00.000Z"),
                    Record::Correlation {
                        key: (7, "old".to_string()),
                        seen_at: "2026-11-20T00:00:00.000Z".to_string(),
                    },
                    Record::Correlation {
                        key: (7, "new".to_string()),
                        seen_at: "2026-11-25T00:00:00.000Z".to_string(),
                    },
                ],
            );
            let audit_cutoff = "2026-11-10T00:00:00.000Z";
            let correlation_cutoff = "2026-11-24T00:00:00.000Z";
            assert_eq!(
                prune_batch(db, audit_cutoff, correlation_cutoff).unwrap(),
                2
            );
            assert_eq!(
                prune_batch(db, audit_cutoff, correlation_cutoff).unwrap(),
                0
            );
            assert!(was_seen(db, 7, "new", "2026-11-01T00:00:00.000Z").unwrap());
            assert!(!was_seen(db, 7, "old", "2026-11-01T00:00:00.000Z").unwrap());
        });
    }

    #[test]
    fn the_retention_is_a_setting() {
        on_both(|db| {
            assert_eq!(retention_days(db), None);
            set_retention_days(db, 30).unwrap();
            set_retention_days(db, 45).unwrap();
            assert_eq!(retention_days(db), Some(45));
        });
    }

    #[test]
    fn the_filter_never_forgets_an_id_and_rarely_imagines_one() {
        let filter = SeenFilter::new();
        filter.loaded.store(true, Ordering::Release);
        let ids: Vec<String> = (0..50_000).map(|i| format!("id-{i}")).collect();
        for id in &ids {
            filter.insert(7, id);
        }
        assert!(ids.iter().all(|id| filter.may_contain(7, id)));
        let imagined = (0..50_000)
            .filter(|i| filter.may_contain(7, &format!("other-{i}")))
            .count();
        // 50,000 ids in 131,072 blocks: far below one false "maybe" in a hundred.
        assert!(imagined < 500, "{imagined} false positives");
        // The commerce is part of the key.
        let other = ids.iter().filter(|id| filter.may_contain(8, id)).count();
        assert!(other < 500, "{other} false positives for another commerce");
    }

    #[test]
    fn before_its_load_the_filter_sends_every_id_to_the_database() {
        let filter = SeenFilter::new();
        assert!(filter.may_contain(1, "never-seen"));
        filter.loaded.store(true, Ordering::Release);
        assert!(!filter.may_contain(1, "never-seen"));
    }

    #[test]
    fn engines_sharing_postgresql_accept_a_correlation_id_once() {
        let database = crate::pg_test::database();
        let claim = |url: String, seen_at: &'static str| {
            let conn = db::PgConn::connect(&url).unwrap();
            conn.transaction(|db| claim_shared(db, 1, "id-1", "2026-11-20T00:00:00.000Z", seen_at))
                .unwrap()
        };
        // Eight engines given the same id at the same moment: exactly one accepts it.
        let accepted = (0..8)
            .map(|_| {
                let url = database.url().to_string();
                std::thread::spawn(move || claim(url, "2026-11-25T12:00:00.000Z"))
            })
            .collect::<Vec<_>>()
            .into_iter()
            .map(|engine| engine.join().unwrap())
            .filter(|&fresh| fresh)
            .count();
        assert_eq!(accepted, 1);
        // On a later day of the window it is still refused; another commerce's is its own.
        assert!(!claim(
            database.url().to_string(),
            "2026-11-27T08:00:00.000Z"
        ));
        let other = database
            .connect()
            .transaction(|db| {
                claim_shared(
                    db,
                    2,
                    "id-1",
                    "2026-11-20T00:00:00.000Z",
                    "2026-11-25T12:00:00.000Z",
                )
            })
            .unwrap();
        assert!(other);
        // Past the window's cutoff, the id may be used again.
        let after_window = database
            .connect()
            .transaction(|db| {
                claim_shared(
                    db,
                    1,
                    "id-1",
                    "2026-11-26T00:00:00.000Z",
                    "2026-12-03T12:00:00.000Z",
                )
            })
            .unwrap();
        assert!(after_window);
    }

    #[test]
    fn engines_claim_in_one_round_trip_and_take_turns_on_one_id() {
        let database = crate::pg_test::database();
        let stores: Vec<Arc<Store>> = (0..2)
            .map(|_| Arc::new(Store::open_postgres(database.url(), &Default::default()).unwrap()))
            .collect();
        let cutoff = "2026-11-20T00:00:00.000Z";
        // A UUID's claim goes with the `BEGIN`; any other id's takes a round trip of its own.
        for id in [
            "0b5f3c1e-7d7a-4a55-9a3e-1f2b3c4d5e6f",
            "not a uuid, it's text",
        ] {
            assert_eq!(
                claim_statement(1, id, cutoff, "2026-11-25T12:00:00.000Z").is_some(),
                !id.contains(' ')
            );
            let accepted = (0..8)
                .map(|n| {
                    let store = Arc::clone(&stores[n % 2]);
                    std::thread::spawn(move || {
                        claim_on_postgres(&store, 1, id, cutoff, "2026-11-25T12:00:00.000Z")
                            .unwrap()
                    })
                })
                .collect::<Vec<_>>()
                .into_iter()
                .map(|engine| engine.join().unwrap())
                .filter(|&fresh| fresh)
                .count();
            assert_eq!(accepted, 1, "{id}");
            // A later day of the window still knows it, through the index on the id.
            assert!(
                !claim_on_postgres(&stores[1], 1, id, cutoff, "2026-11-27T08:00:00.000Z").unwrap()
            );
            assert!(
                stores[0]
                    .read(|db| Ok(was_seen(db, 1, id, cutoff)?))
                    .unwrap()
            );
        }
        // The connections stay usable after a claim that found its id used.
        assert!(
            claim_on_postgres(
                &stores[0],
                2,
                "0b5f3c1e-7d7a-4a55-9a3e-1f2b3c4d5e6f",
                cutoff,
                "2026-11-25T12:00:00.000Z"
            )
            .unwrap()
        );
    }

    #[test]
    fn a_creation_s_claim_commits_durably_with_its_write_and_a_read_s_without_waiting() {
        let database = crate::pg_test::database();
        // The test cluster commits without waiting for the disk (`scripts/pg.sh`); this
        // database's sessions wait, as a production server's do.
        database
            .connect()
            .batch(
                "DO $$ BEGIN EXECUTE format('ALTER DATABASE %I SET synchronous_commit TO on',
                                            current_database()); END $$",
            )
            .unwrap();
        let store = Store::open_postgres(database.url(), &Default::default()).unwrap();
        let deferred = |id: &str, durable: bool| DeferredClaim {
            claim: Claim {
                commerce_id: 1,
                correlation_id: id.to_string(),
                cutoff: "2026-11-20T00:00:00.000Z".to_string(),
                seen_at: "2026-11-25T12:00:00.000Z".to_string(),
            },
            durable,
            state: std::sync::atomic::AtomicU8::new(UNCLAIMED),
            pending: Arc::new(Pending::new()),
        };
        let synchronous_commit = |db: Db<'_>| -> Result<String, Error> {
            Ok(db.query_row("SHOW synchronous_commit", &params![], |r| r.get(0))?)
        };
        let failed = deferred("0b5f3c1e-7d7a-4a55-9a3e-1f2b3c4d5e62", true);
        store
            .on_postgres(|pool| {
                let write = deferred("0b5f3c1e-7d7a-4a55-9a3e-1f2b3c4d5e60", true);
                assert_eq!(write.take_with(pool, synchronous_commit).unwrap(), "on");
                let read = deferred("0b5f3c1e-7d7a-4a55-9a3e-1f2b3c4d5e61", false);
                assert_eq!(read.take_with(pool, synchronous_commit).unwrap(), "off");
                // Both claims committed: the same ids again are replays, whoever sends them.
                for id in [
                    "0b5f3c1e-7d7a-4a55-9a3e-1f2b3c4d5e60",
                    "0b5f3c1e-7d7a-4a55-9a3e-1f2b3c4d5e61",
                ] {
                    let again = deferred(id, true).take_with(pool, |_| Ok(()));
                    assert!(again.is_err(), "{id}");
                }
                // A write that fails rolls its claim back with it: the id is not spent.
                let refused: Result<(), Error> =
                    failed.take_with(pool, |_| Err(Error::refused("NOPE", "refused")));
                assert!(refused.is_err());
                Ok(())
            })
            .unwrap();
        assert!(
            failed.settle(&store).is_ok(),
            "taken afresh after the handler"
        );
    }

    #[test]
    fn requests_wait_for_room_while_the_writer_is_behind() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(&dir.path().join("mandato.db")).unwrap();
        let clock = Arc::new(mandato_core::clock::SystemClock);
        let writer = AuditWriter::start_with_room(&store, 1, clock, 3).unwrap();
        let entry = |n: usize| entry(&format!("2026-11-25T12:00:0{n}.000Z"));
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_time()
            .build()
            .unwrap();
        // The store's writer holds the file, so the audit writer cannot write.
        let turn = store.sqlite().unwrap().write_turn();
        let held = turn.take();
        runtime.block_on(async {
            for n in 0..3 {
                let place = writer.place().await;
                writer.log(entry(n), place);
            }
            let fourth = writer.place();
            tokio::pin!(fourth);
            let waited = tokio::time::timeout(Duration::from_millis(600), &mut fourth).await;
            assert!(
                waited.is_err(),
                "a fourth request found room in a queue of three"
            );
            // A request dropped while it waits (its timeout, a closed connection) has done
            // nothing yet, and holds no place.
            let dropped = tokio::time::timeout(Duration::from_millis(50), writer.place()).await;
            assert!(dropped.is_err());
            drop(held);
            let place = tokio::time::timeout(Duration::from_secs(10), fourth)
                .await
                .expect("room once the writer has written");
            writer.log(entry(3), place);
        });
        writer.flush();
        let rows: i64 = store
            .read(
                |db| Ok(db.query_row("SELECT count(*) FROM audit_log", &params![], |r| r.get(0))?),
            )
            .unwrap();
        assert_eq!(rows, 4);
        // Every place came back.
        assert_eq!(writer.queue_room.available_permits(), 3);
        writer.shutdown();
    }

    #[test]
    fn a_flood_of_refusals_is_counted_in_memory_and_written_whole() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(&dir.path().join("mandato.db")).unwrap();
        let at = |s: &str| s.parse::<chrono::DateTime<chrono::Utc>>().unwrap();
        let totals = || {
            store
                .read(|db| Ok(refusal_totals(db, None, None)?))
                .unwrap()
        };
        // The store's writer holds the file from before the audit writer starts. Its first
        // step, the pruning round every start begins with, then waits for the turn before it
        // has taken any record.
        let turn = store.sqlite().unwrap().write_turn();
        let held = turn.take();
        let writer =
            AuditWriter::start(&store, 1, Arc::new(mandato_core::clock::SystemClock)).unwrap();
        let deadline = Instant::now() + Duration::from_secs(10);
        while !turn.awaited() {
            assert!(
                Instant::now() < deadline,
                "the audit writer never asked for the turn"
            );
            std::thread::sleep(Duration::from_millis(5));
        }
        for n in 0..1_000 {
            let second = n % 60;
            writer.refused(
                at(&format!("2026-11-25T12:00:{second:02}Z")),
                Refusal::InvalidApiKey,
            );
        }
        for _ in 0..3 {
            writer.refused(at("2026-11-25T12:01:30Z"), Refusal::InvalidHeaders);
        }
        // While the writer cannot write, the flood is two counts in memory.
        assert_eq!(writer.refusals.lock().unwrap().len(), 2);
        drop(held);
        writer.flush();
        let expected = |key_refusals| {
            vec![
                ("INVALID_API_KEY".to_string(), key_refusals),
                ("INVALID_HEADERS".to_string(), 3),
            ]
        };
        assert_eq!(totals(), expected(1_000));
        // Counts made after the writer took the last ones reach it too.
        for _ in 0..5 {
            writer.refused(at("2026-11-25T12:00:10Z"), Refusal::InvalidApiKey);
        }
        writer.flush();
        assert_eq!(totals(), expected(1_005));
        writer.shutdown();
    }
}
