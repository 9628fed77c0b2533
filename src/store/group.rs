//! Group commit: the write requests that queue up while the disk syncs commit together.
//!
//! A durable commit (`synchronous=FULL`) waits for the disk; giving every request its own would
//! cap writes at the disk's sync rate and keep the writer busy waiting. Instead one drainer at
//! a time takes every queued operation, runs each inside its own `SAVEPOINT` of a single
//! `BEGIN IMMEDIATE` transaction (an operation that fails is rolled back to its savepoint, so
//! each request stays all or nothing and never sees another's failure), commits once, and
//! only then answers every request: an answer always follows the commit that made it durable.
//! A merchant request's correlationId commits with its successful operation, so an answered
//! write can never be replayed, even after a crash.

use std::collections::VecDeque;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use rusqlite::{Connection, Transaction, TransactionBehavior};
use tokio::sync::oneshot;

use super::audit::{CorrelationClaim, record_claim};
use super::db::Db;
use super::{Engine, SqliteStore, Store};
use crate::error::Error;

/// The most operations committed together; more wait for the next commit.
const MAX_GROUP: usize = 256;

/// The queue of operations waiting for the writer, and whether a drainer is at work on it.
#[derive(Default)]
pub(super) struct Queue {
    jobs: Mutex<VecDeque<Box<dyn Job>>>,
    draining: AtomicBool,
}

/// One queued operation, its outcome, and the caller waiting for it.
trait Job: Send {
    /// Runs the operation in the group's transaction; `true` when it succeeded.
    fn run(&mut self, tx: &Transaction<'_>) -> bool;
    /// Answers the caller once the group's commit has succeeded (`None`) or failed.
    fn finish(self: Box<Self>, commit_error: Option<&str>);
}

struct Pending<T, F> {
    operation: Option<F>,
    /// The merchant request's correlationId, committed with the operation when it succeeds.
    claim: Option<CorrelationClaim>,
    outcome: Option<Result<T, Error>>,
    reply: oneshot::Sender<Result<T, Error>>,
}

impl<T, F> Job for Pending<T, F>
where
    T: Send,
    F: FnOnce(Db<'_>) -> Result<T, Error> + Send,
{
    fn run(&mut self, tx: &Transaction<'_>) -> bool {
        let Some(operation) = self.operation.take() else {
            return false;
        };
        let outcome =
            catch_unwind(AssertUnwindSafe(|| operation(Db::Sqlite(tx)))).unwrap_or_else(|_| {
                Err(Error::Internal(anyhow::anyhow!(
                    "the write operation panicked"
                )))
            });
        let outcome = match (outcome, &self.claim) {
            (Ok(value), Some(claim)) => record_claim(tx, claim)
                .map(|()| value)
                .map_err(|e| Error::Internal(e.into())),
            (outcome, _) => outcome,
        };
        let ok = outcome.is_ok();
        self.outcome = Some(outcome);
        ok
    }

    fn finish(self: Box<Self>, commit_error: Option<&str>) {
        let outcome = match (self.outcome, commit_error) {
            (Some(Ok(_)), Some(e)) => Err(Error::Internal(anyhow::anyhow!(
                "the group commit failed: {e}"
            ))),
            (Some(outcome), _) => outcome,
            (None, Some(e)) => Err(Error::Internal(anyhow::anyhow!(
                "the write operation did not run: {e}"
            ))),
            (None, None) => Err(Error::Internal(anyhow::anyhow!(
                "the write operation did not run"
            ))),
        };
        // The caller may have gone away (a dropped connection); the commit stands regardless.
        let _ = self.reply.send(outcome);
    }
}

impl Store {
    /// Runs `operation` in its own savepoint of the next group commit and answers after that
    /// commit: `Ok` means durably committed, an error means none of it was written. On
    /// PostgreSQL, which groups concurrent commits' WAL flushes itself, the operation runs in
    /// a transaction of its own, and the merchant request's correlationId commits in it.
    ///
    /// Needs a Tokio runtime: the group is run and synced on a blocking thread.
    pub async fn write_grouped<T, F>(self: &Arc<Self>, operation: F) -> Result<T, Error>
    where
        T: Send + 'static,
        F: FnOnce(Db<'_>) -> Result<T, Error> + Send + 'static,
    {
        let claim = CorrelationClaim::current();
        let Engine::Sqlite(sqlite) = &self.engine else {
            let store = Arc::clone(self);
            return tokio::task::spawn_blocking(move || {
                store.write(|db| {
                    let value = operation(db)?;
                    if let Some(claim) = &claim {
                        record_claim(db, claim).map_err(|e| Error::Internal(e.into()))?;
                    }
                    Ok(value)
                })
            })
            .await
            .unwrap_or_else(|_| {
                Err(Error::Internal(anyhow::anyhow!(
                    "the write operation panicked"
                )))
            });
        };
        sqlite.note_use();
        let (reply, answer) = oneshot::channel();
        let job = Box::new(Pending {
            operation: Some(operation),
            claim,
            outcome: None,
            reply,
        });
        sqlite
            .group
            .jobs
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push_back(job);
        if !sqlite.group.draining.swap(true, Ordering::AcqRel) {
            let store = Arc::clone(self);
            tokio::task::spawn_blocking(move || {
                if let Some(sqlite) = store.sqlite() {
                    sqlite.drain();
                }
            });
        }
        answer.await.unwrap_or_else(|_| {
            Err(Error::Internal(anyhow::anyhow!(
                "the writer stopped before answering"
            )))
        })
    }
}

impl SqliteStore {
    /// Commits groups until the queue is empty. Only one drainer runs at a time.
    fn drain(&self) {
        loop {
            let group: Vec<Box<dyn Job>> = {
                let mut jobs = self.group.jobs.lock().unwrap_or_else(|p| p.into_inner());
                let n = jobs.len().min(MAX_GROUP);
                jobs.drain(..n).collect()
            };
            if group.is_empty() {
                self.group.draining.store(false, Ordering::Release);
                // A job queued after the queue looked empty but before the flag dropped found
                // the flag still set and started no drainer: take it on, unless one started.
                let queued = !self
                    .group
                    .jobs
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .is_empty();
                if queued && !self.group.draining.swap(true, Ordering::AcqRel) {
                    continue;
                }
                return;
            }
            let mut conn = self.writer.lock().unwrap_or_else(|p| p.into_inner());
            commit_group(&mut conn, group);
        }
    }
}

/// Runs one group in one transaction and answers each of its jobs after the commit.
fn commit_group(conn: &mut Connection, group: Vec<Box<dyn Job>>) {
    let mut ran = Vec::with_capacity(group.len());
    let mut jobs = group.into_iter();
    let failure = match conn.transaction_with_behavior(TransactionBehavior::Immediate) {
        Err(e) => Some(e.to_string()),
        Ok(tx) => {
            let mut failure = None;
            for mut job in jobs.by_ref() {
                let stepped = run_in_savepoint(&tx, job.as_mut());
                ran.push(job);
                if let Err(e) = stepped {
                    // The transaction itself is in doubt (e.g. SQLite rolled it back after an
                    // I/O error): nothing of this group is committed.
                    failure = Some(e.to_string());
                    break;
                }
            }
            match failure {
                None => tx.commit().err().map(|e| e.to_string()),
                Some(e) => Some(e),
            }
        }
    };
    for job in ran.into_iter().chain(jobs) {
        job.finish(failure.as_deref());
    }
}

/// Runs one job between `SAVEPOINT` and `RELEASE`, rolling back to the savepoint if it failed.
fn run_in_savepoint(tx: &Transaction<'_>, job: &mut dyn Job) -> rusqlite::Result<()> {
    tx.prepare_cached("SAVEPOINT request")?.execute([])?;
    if !job.run(tx) {
        tx.prepare_cached("ROLLBACK TO request")?.execute([])?;
    }
    tx.prepare_cached("RELEASE request")?.execute([])?;
    Ok(())
}
