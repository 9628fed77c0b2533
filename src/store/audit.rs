//! The request audit log and correlationId replay protection, written off the request path.
//!
//! Every API request produces one audit row and (when it names a commerce) one correlationId
//! row. Giving each its own durable commit would cap the API at the disk's fsync rate, so a
//! background thread gathers them for a few milliseconds and writes each batch in one
//! transaction. Replay refusal must not wait for that batch: ids not yet written are held in
//! memory (`pending`, a sharded set, so concurrent requests rarely share a lock) until their
//! batch commits, and a reservation claims the id in memory before it looks in the database.

use std::collections::HashSet;
use std::hash::{BuildHasher, RandomState};
use std::path::Path;
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender, TryRecvError};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use rusqlite::{Connection, params};
use serde_json::Value;

use super::{Durability, Store, open_connection};
use crate::error::Error;

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
    /// The common headers, with `x-api-key` and `Authorization` removed.
    pub headers: Value,
    pub peer: Option<String>,
}

type CorrelationKey = (i64, String);

enum Record {
    Audit(AuditEntry),
    Correlation {
        key: CorrelationKey,
        seen_at: String,
    },
    Flush(Sender<()>),
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

pub struct AuditWriter {
    sender: Mutex<Option<Sender<Record>>>,
    pending: Arc<Pending>,
    retention_days: i64,
    thread: Mutex<Option<JoinHandle<()>>>,
}

/// Whether a correlationId may be used.
#[derive(Debug, PartialEq, Eq)]
pub enum Reservation {
    Fresh,
    Replayed,
}

impl AuditWriter {
    pub fn start(db_path: &Path, retention_days: i64) -> anyhow::Result<AuditWriter> {
        let conn = open_connection(db_path, Durability::Normal)?;
        let pending = Arc::new(Pending::new());
        let (sender, receiver) = mpsc::channel();
        let thread_pending = Arc::clone(&pending);
        let thread = std::thread::Builder::new()
            .name("audit-writer".into())
            .spawn(move || write_loop(conn, receiver, &thread_pending, retention_days))?;
        Ok(AuditWriter {
            sender: Mutex::new(Some(sender)),
            pending,
            retention_days,
            thread: Mutex::new(Some(thread)),
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
    /// so a concurrent use finds either the claim or the committed row, never neither.
    pub fn reserve_correlation(
        &self,
        store: &Store,
        commerce_id: i64,
        correlation_id: &str,
        now: chrono::DateTime<chrono::Utc>,
    ) -> Result<Reservation, Error> {
        let key = (commerce_id, correlation_id.to_string());
        if !self.pending.claim(key.clone()) {
            return Ok(Reservation::Replayed);
        }
        let cutoff = crate::clock::timestamp(now - chrono::Duration::days(self.retention_days));
        let seen = store.read(|conn| {
            Ok(conn
                .prepare_cached(
                    "SELECT EXISTS (SELECT 1 FROM correlation_ids
                     WHERE commerce_id = ?1 AND correlation_id = ?2 AND seen_at >= ?3)",
                )?
                .query_row(params![commerce_id, correlation_id, cutoff], |r| r.get(0))?)
        });
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
        self.send(Record::Correlation {
            key,
            seen_at: crate::clock::timestamp(now),
        });
        Ok(Reservation::Fresh)
    }

    pub fn log(&self, entry: AuditEntry) {
        self.send(Record::Audit(entry));
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

const MAX_BATCH: usize = 4_000;
/// How long the writer gathers records after the first one before it commits them: a commit
/// per request would cost more than the request, and every commit also makes the readers drop
/// their page caches.
const GATHER: Duration = Duration::from_millis(50);
const PURGE_EVERY: Duration = Duration::from_secs(3_600);

fn write_loop(
    mut conn: Connection,
    receiver: Receiver<Record>,
    pending: &Pending,
    retention_days: i64,
) {
    let mut last_purge = Instant::now() - PURGE_EVERY;
    let mut open = true;
    while open {
        let first = match receiver.recv_timeout(Duration::from_secs(60)) {
            Ok(record) => record,
            Err(RecvTimeoutError::Timeout) => {
                purge_if_due(&conn, &mut last_purge, retention_days);
                continue;
            }
            Err(RecvTimeoutError::Disconnected) => return,
        };
        // Sleeping rather than blocking on the channel lets senders skip waking this thread.
        if !matches!(first, Record::Flush(_)) {
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
        let mut flushes = Vec::new();
        let mut written = Vec::new();
        match write_batch(&mut conn, batch, &mut flushes, &mut written) {
            // Only committed ids leave memory; after a failed batch they stay refused.
            Ok(()) => {
                for key in &written {
                    pending.release(key);
                }
            }
            Err(e) => tracing::error!(error = %e, "could not write the audit batch"),
        }
        for done in flushes {
            let _ = done.send(());
        }
        purge_if_due(&conn, &mut last_purge, retention_days);
    }
}

fn write_batch(
    conn: &mut Connection,
    batch: Vec<Record>,
    flushes: &mut Vec<Sender<()>>,
    written: &mut Vec<CorrelationKey>,
) -> rusqlite::Result<()> {
    let tx = conn.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?;
    {
        let mut audit = tx.prepare_cached(
            "INSERT INTO audit_log (at, method, path, status, duration_ms, commerce, correlation_id,
                    api_key_prefix, headers, peer)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)",
        )?;
        let mut correlation = tx.prepare_cached(
            "INSERT INTO correlation_ids (commerce_id, correlation_id, seen_at) VALUES (?1, ?2, ?3)
             ON CONFLICT DO UPDATE SET seen_at = excluded.seen_at",
        )?;
        for record in batch {
            match record {
                Record::Audit(e) => {
                    audit.execute(params![
                        e.at,
                        e.method,
                        e.path,
                        e.status,
                        e.duration_ms,
                        e.commerce,
                        e.correlation_id,
                        e.api_key_prefix,
                        e.headers.to_string(),
                        e.peer
                    ])?;
                }
                Record::Correlation { key, seen_at } => {
                    correlation.execute(params![key.0, key.1, seen_at])?;
                    written.push(key);
                }
                Record::Flush(done) => flushes.push(done),
            }
        }
    }
    tx.commit()
}

fn purge_if_due(conn: &Connection, last_purge: &mut Instant, retention_days: i64) {
    if last_purge.elapsed() < PURGE_EVERY {
        return;
    }
    *last_purge = Instant::now();
    let cutoff =
        crate::clock::timestamp(chrono::Utc::now() - chrono::Duration::days(retention_days));
    if let Err(e) = conn.execute("DELETE FROM correlation_ids WHERE seen_at < ?1", [cutoff]) {
        tracing::warn!(error = %e, "could not purge old correlation ids");
    }
}
