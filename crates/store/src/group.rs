//! Group commit: the write requests that queue up while the disk syncs commit together.
//!
//! A durable commit (`synchronous=FULL`) waits for the disk; giving every request its own would
//! cap writes at the disk's sync rate and keep the writer busy waiting. Instead one drainer at
//! a time takes every queued operation, runs them all in a single `BEGIN IMMEDIATE`
//! transaction, commits once, and only then answers every request: an answer always follows
//! the commit that made it durable. A merchant request's correlationId commits with its
//! successful operation, so an answered write can never be replayed, even after a crash.
//!
//! Each request stays all or nothing and never sees another's failure. The group first runs
//! its operations one after the other with nothing in between; when all succeed (the usual
//! case) it commits. When one fails, the whole transaction is rolled back and the group runs
//! again, this time each operation but the failed one inside its own `SAVEPOINT` (one that
//! fails again is rolled back to its savepoint alone). Operations are therefore `Fn`: they
//! write only through the transaction, so running one again after a rollback is safe.
//! Savepoints are kept off the usual path because they are not free: SQLite copies every page
//! a request is first to change into the savepoint's journal, and FTS5 writes its pending
//! terms to disk at every savepoint (an A/B measured 5-8% of a creation's CPU: the history of
//! `bench/README.md`).

use std::collections::VecDeque;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use rusqlite::{Connection, Transaction, TransactionBehavior};
use tokio::sync::oneshot;

use super::audit::{CorrelationClaim, record_claim};
use super::db::Db;
use super::{Engine, SqliteStore, Store};
use mandato_core::error::Error;

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
    /// Runs the operation in the group's transaction; `true` when it succeeded. A job may run
    /// again after the transaction was rolled back; its last outcome is the one answered.
    fn run(&mut self, tx: &Transaction<'_>) -> bool;
    /// Answers the caller once the group's commit has succeeded (`None`) or failed.
    fn finish(self: Box<Self>, commit_error: Option<&str>);
}

struct Pending<T, F> {
    operation: F,
    /// The merchant request's correlationId, committed with the operation when it succeeds.
    claim: Option<CorrelationClaim>,
    outcome: Option<Result<T, Error>>,
    reply: oneshot::Sender<Result<T, Error>>,
}

impl<T, F> Job for Pending<T, F>
where
    T: Send,
    F: Fn(Db<'_>) -> Result<T, Error> + Send,
{
    fn run(&mut self, tx: &Transaction<'_>) -> bool {
        let operation = &self.operation;
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
    /// Runs `operation` in the next group commit and answers after that commit: `Ok` means
    /// durably committed, an error means none of it was written. `operation` must write only
    /// through the `Db` it is given: it runs again when another operation of its group fails
    /// (see the module's comment). On
    /// PostgreSQL, which groups concurrent commits' WAL flushes itself, the operation runs in
    /// a transaction of its own, and the merchant request's correlationId commits in it.
    ///
    /// Needs a Tokio runtime: the group is run and synced on a blocking thread.
    pub async fn write_grouped<T, F>(self: &Arc<Self>, operation: F) -> Result<T, Error>
    where
        T: Send + 'static,
        F: Fn(Db<'_>) -> Result<T, Error> + Send + 'static,
    {
        let claim = CorrelationClaim::current();
        let Engine::Sqlite(sqlite) = &self.engine else {
            let store = Arc::clone(self);
            return tokio::task::spawn_blocking(move || {
                let Engine::Postgres(pool) = &store.engine else {
                    unreachable!("the engine is not SQLite's")
                };
                // A read-only request's deferred claim is taken by its transaction (on this
                // blocking thread the task's own claim is out of reach of `Store::write`).
                if let Some(deferred) = claim.as_ref().and_then(|c| c.deferred.as_ref()) {
                    return deferred.take_with(pool, &operation);
                }
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
            operation,
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
            let _turn = self.turn.take();
            commit_group(&mut conn, group);
        }
    }
}

/// Runs one group in one transaction and answers each of its jobs after the commit.
fn commit_group(conn: &mut Connection, mut group: Vec<Box<dyn Job>>) {
    let failure = match run_straight(conn, &mut group) {
        Straight::Committed => None,
        Straight::Failed(e) => Some(e),
        Straight::JobFailed(failed) => run_with_savepoints(conn, &mut group, failed),
    };
    for job in group {
        job.finish(failure.as_deref());
    }
}

/// How a group's first run, without savepoints, ended.
enum Straight {
    /// Every job succeeded and the transaction committed.
    Committed,
    /// The job at this index failed; the transaction was rolled back.
    JobFailed(usize),
    /// The transaction itself failed (to begin, to commit, or an I/O error): nothing of the
    /// group is written.
    Failed(String),
}

/// Runs every job one after the other in one transaction and commits, or rolls everything
/// back at the first job that fails.
fn run_straight(conn: &mut Connection, group: &mut [Box<dyn Job>]) -> Straight {
    let tx = match conn.transaction_with_behavior(TransactionBehavior::Immediate) {
        Ok(tx) => tx,
        Err(e) => return Straight::Failed(e.to_string()),
    };
    for (index, job) in group.iter_mut().enumerate() {
        if !job.run(&tx) {
            return match tx.rollback() {
                Ok(()) => Straight::JobFailed(index),
                Err(e) => Straight::Failed(e.to_string()),
            };
        }
    }
    match tx.commit() {
        Ok(()) => Straight::Committed,
        Err(e) => Straight::Failed(e.to_string()),
    }
}

/// Runs the group again in a new transaction, each job but `failed` (whose error stands) in a
/// savepoint of its own, and commits what succeeded. Returns the transaction's failure, if any.
fn run_with_savepoints(
    conn: &mut Connection,
    group: &mut [Box<dyn Job>],
    failed: usize,
) -> Option<String> {
    if group.len() == 1 {
        return None;
    }
    let tx = match conn.transaction_with_behavior(TransactionBehavior::Immediate) {
        Ok(tx) => tx,
        Err(e) => return Some(e.to_string()),
    };
    for (index, job) in group.iter_mut().enumerate() {
        if index == failed {
            continue;
        }
        if let Err(e) = run_in_savepoint(&tx, job.as_mut()) {
            // The transaction itself is in doubt (e.g. SQLite rolled it back after an I/O
            // error): nothing of this group is committed.
            return Some(e.to_string());
        }
    }
    tx.commit().err().map(|e| e.to_string())
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::db::Param;
    use std::sync::atomic::AtomicUsize;

    type Answer = oneshot::Receiver<Result<i64, Error>>;

    /// A job that inserts `value` and then succeeds or fails, counting how often it ran.
    fn job(value: i64, fails: bool, runs: &Arc<AtomicUsize>) -> (Box<dyn Job>, Answer) {
        let (reply, answer) = oneshot::channel();
        let runs = Arc::clone(runs);
        let operation = move |db: Db<'_>| {
            runs.fetch_add(1, Ordering::SeqCst);
            db.execute("INSERT INTO t (v) VALUES (?1)", &[Param::from(value)])?;
            if fails {
                return Err(Error::validation("v", "REFUSED", "refused"));
            }
            Ok(value)
        };
        let job = Box::new(Pending {
            operation,
            claim: None,
            outcome: None,
            reply,
        });
        (job, answer)
    }

    fn stored(conn: &Connection) -> Vec<i64> {
        let mut statement = conn.prepare("SELECT v FROM t ORDER BY v").unwrap();
        statement
            .query_map([], |row| row.get(0))
            .unwrap()
            .map(Result::unwrap)
            .collect()
    }

    fn table() -> Connection {
        let conn = Connection::open_in_memory().unwrap();
        conn.execute_batch("CREATE TABLE t (v INTEGER NOT NULL)")
            .unwrap();
        conn
    }

    #[test]
    fn a_group_without_failures_runs_each_operation_once_and_commits_them_all() {
        let mut conn = table();
        let runs = Arc::new(AtomicUsize::new(0));
        let (jobs, answers): (Vec<_>, Vec<_>) = (1..=3).map(|v| job(v, false, &runs)).unzip();
        commit_group(&mut conn, jobs);
        for (v, mut answer) in (1..=3).zip(answers) {
            assert_eq!(answer.try_recv().unwrap().unwrap(), v);
        }
        assert_eq!(runs.load(Ordering::SeqCst), 3);
        assert_eq!(stored(&conn), vec![1, 2, 3]);
    }

    #[test]
    fn a_failed_operation_leaves_nothing_and_the_others_of_its_group_commit() {
        let mut conn = table();
        let runs = Arc::new(AtomicUsize::new(0));
        let (jobs, answers): (Vec<_>, Vec<_>) = [(1, false), (2, true), (3, false), (4, true)]
            .into_iter()
            .map(|(v, fails)| job(v, fails, &runs))
            .unzip();
        commit_group(&mut conn, jobs);
        let outcomes: Vec<Result<i64, Error>> = answers
            .into_iter()
            .map(|mut a| a.try_recv().unwrap())
            .collect();
        assert_eq!(outcomes[0].as_ref().unwrap(), &1);
        assert!(matches!(outcomes[1], Err(Error::Validation(_))));
        assert_eq!(outcomes[2].as_ref().unwrap(), &3);
        assert!(matches!(outcomes[3], Err(Error::Validation(_))));
        assert_eq!(stored(&conn), vec![1, 3]);
        // The straight run stopped at the first failure (1, 2); the savepoint run ran the
        // others (1, 3, 4).
        assert_eq!(runs.load(Ordering::SeqCst), 5);
    }

    #[test]
    fn a_failed_operation_alone_in_its_group_writes_nothing() {
        let mut conn = table();
        let runs = Arc::new(AtomicUsize::new(0));
        let (job, mut answer) = job(7, true, &runs);
        commit_group(&mut conn, vec![job]);
        assert!(answer.try_recv().unwrap().is_err());
        assert!(stored(&conn).is_empty());
        assert_eq!(runs.load(Ordering::SeqCst), 1);
    }

    #[test]
    fn a_panicking_operation_is_answered_as_an_error_and_its_group_commits() {
        let mut conn = table();
        let runs = Arc::new(AtomicUsize::new(0));
        let (first, mut first_answer) = job(1, false, &runs);
        let (reply, mut panicked) = oneshot::channel::<Result<i64, Error>>();
        let panicking = Box::new(Pending {
            operation: |db: Db<'_>| -> Result<i64, Error> {
                db.execute("INSERT INTO t (v) VALUES (99)", &[])?;
                panic!("an operation's bug");
            },
            claim: None,
            outcome: None,
            reply,
        });
        commit_group(&mut conn, vec![first, panicking]);
        assert_eq!(first_answer.try_recv().unwrap().unwrap(), 1);
        assert!(matches!(
            panicked.try_recv().unwrap(),
            Err(Error::Internal(_))
        ));
        assert_eq!(stored(&conn), vec![1]);
    }
}
