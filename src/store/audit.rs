//! The request audit log and correlationId replay protection, written off the request path.
//!
//! Every API request produces one audit row and (when it names a commerce) one correlationId
//! row. Giving each its own durable commit would cap the API at the disk's fsync rate, so a
//! background thread writes them in batches, one transaction per batch. Replay refusal must
//! not wait for that batch: ids not yet written are held in memory (`pending`) until their
//! batch commits, and a reservation checks memory and the database under one lock.

use std::collections::HashSet;
use std::path::Path;
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use rusqlite::{Connection, params};
use serde_json::Value;

use super::{Durability, open_connection};

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

pub struct AuditWriter {
    sender: Mutex<Option<Sender<Record>>>,
    pending: Arc<Mutex<HashSet<CorrelationKey>>>,
    reader: Mutex<Connection>,
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
        let reader = open_connection(db_path, Durability::Normal)?;
        let pending = Arc::new(Mutex::new(HashSet::new()));
        let (sender, receiver) = mpsc::channel();
        let thread_pending = Arc::clone(&pending);
        let thread = std::thread::Builder::new()
            .name("audit-writer".into())
            .spawn(move || write_loop(conn, receiver, thread_pending, retention_days))?;
        Ok(AuditWriter {
            sender: Mutex::new(Some(sender)),
            pending,
            reader: Mutex::new(reader),
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
    pub fn reserve_correlation(
        &self,
        commerce_id: i64,
        correlation_id: &str,
        now: chrono::DateTime<chrono::Utc>,
    ) -> anyhow::Result<Reservation> {
        let key = (commerce_id, correlation_id.to_string());
        let cutoff = crate::clock::timestamp(now - chrono::Duration::days(self.retention_days));
        let mut pending = self.pending.lock().unwrap_or_else(|p| p.into_inner());
        if pending.contains(&key) {
            return Ok(Reservation::Replayed);
        }
        let seen: bool = {
            let reader = self.reader.lock().unwrap_or_else(|p| p.into_inner());
            reader
                .prepare_cached(
                    "SELECT EXISTS (SELECT 1 FROM correlation_ids
                     WHERE commerce_id = ?1 AND correlation_id = ?2 AND seen_at >= ?3)",
                )?
                .query_row(params![commerce_id, correlation_id, cutoff], |r| r.get(0))?
        };
        if seen {
            return Ok(Reservation::Replayed);
        }
        pending.insert(key.clone());
        drop(pending);
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

const MAX_BATCH: usize = 2_000;
const PURGE_EVERY: Duration = Duration::from_secs(3_600);

fn write_loop(
    mut conn: Connection,
    receiver: Receiver<Record>,
    pending: Arc<Mutex<HashSet<CorrelationKey>>>,
    retention_days: i64,
) {
    let mut last_purge = Instant::now() - PURGE_EVERY;
    loop {
        let first = match receiver.recv_timeout(Duration::from_secs(60)) {
            Ok(record) => record,
            Err(RecvTimeoutError::Timeout) => {
                purge_if_due(&conn, &mut last_purge, retention_days);
                continue;
            }
            Err(RecvTimeoutError::Disconnected) => return,
        };
        let mut batch = vec![first];
        while batch.len() < MAX_BATCH {
            match receiver.try_recv() {
                Ok(record) => batch.push(record),
                Err(_) => break,
            }
        }
        let mut flushes = Vec::new();
        let mut written = Vec::new();
        if let Err(e) = write_batch(&mut conn, batch, &mut flushes, &mut written) {
            tracing::error!(error = %e, "could not write the audit batch");
        }
        {
            let mut pending = pending.lock().unwrap_or_else(|p| p.into_inner());
            for key in &written {
                pending.remove(key);
            }
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
