//! WAL checkpoints off the commit path, and a WAL that stays bounded under any write load.
//!
//! SQLite's automatic checkpoint runs inside the commit that crosses its threshold: every
//! request of that group commit waits while tens of megabytes are copied into the database
//! file and synced. A running engine turns it off on its own connections and checkpoints from
//! this thread instead, once a second, so a commit only appends to the WAL.
//!
//! Copying frames back is not enough to bound the WAL: SQLite starts it over from its
//! beginning only when a write begins after every frame in it was copied, that is when the
//! writers pause for longer than a checkpoint pass takes (an engine at rest, a trickle of
//! writes). Under a steady stream of commits a passive checkpoint never catches up with them,
//! and the WAL grows for as long as the stream lasts, until the disk is full: on the bench
//! machine by about 200 MB a second, whether 64 clients create mandates as fast as they can or
//! four do one after the other (1,700 a second; `bench/README.md`). When the WAL passes
//! `WAL_BOUND`, a round therefore chases the writers with passive passes, each copying what was
//! committed during the one before, and copies the rest holding the write turn
//! (`write_turn.rs`), so that the next write starts the WAL over. The writers wait for that
//! last pass, which under such a stream has as much to copy as the passes before it: on the
//! bench machine about a third of a second, which cost a tenth of the creations of the 12
//! seconds around it. The bound is therefore high (4 GiB, some 20 seconds of such a stream
//! there): a flood of writes ends in short pauses rather than a full disk, and shorter bursts
//! never pause. A WAL that grew is cut back to `WAL_KEPT_BYTES` when it starts over.
//!
//! Commands run by hand (the CLI) keep SQLite's automatic checkpoint.

use std::path::Path;
use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use rusqlite::Connection;

use super::write_turn::WriteTurn;
use super::{Durability, open_connection};

/// How often the WAL is copied back: at most about one second of writes waits in it.
const EVERY: Duration = Duration::from_secs(1);
/// The WAL's size past which the writers wait for a checkpoint to catch up with them, looked
/// at every 100 ms: at 200 MB a second of writes it is passed by 20 MB at most.
const WAL_BOUND: WalBound = WalBound {
    most_bytes: 4 << 30,
    look_every: Duration::from_millis(100),
};
/// The WAL file's size kept when it starts over (`PRAGMA journal_size_limit`, set on every
/// connection that writes).
pub(super) const WAL_KEPT_BYTES: u64 = 64 << 20;
/// Passive passes that chase the writers before the last pass takes the write turn.
const CHASES: usize = 8;
/// Frames committed during a pass under which chasing stops: the next pass has about as many
/// to copy.
const FEW_FRAMES: i64 = 256;

/// The WAL's size past which writers wait, and how often it is looked at.
#[derive(Clone, Copy)]
struct WalBound {
    most_bytes: u64,
    look_every: Duration,
}

/// The background checkpoint; stopped (after a last checkpoint) when dropped.
pub struct Checkpointer {
    stop: Arc<(Mutex<bool>, Condvar)>,
    thread: Option<JoinHandle<()>>,
}

impl Checkpointer {
    /// `turn`: the turns at writing the file that every writing connection takes.
    pub(super) fn start(db: &Path, turn: Arc<WriteTurn>) -> rusqlite::Result<Checkpointer> {
        Checkpointer::bounding_wal(db, turn, WAL_BOUND)
    }

    fn bounding_wal(
        db: &Path,
        turn: Arc<WriteTurn>,
        bound: WalBound,
    ) -> rusqlite::Result<Checkpointer> {
        let conn = open_connection(db, Durability::Full)?;
        let wal = super::companion(db, "-wal");
        let stop = Arc::new((Mutex::new(false), Condvar::new()));
        let signal = Arc::clone(&stop);
        let thread = std::thread::Builder::new()
            .name("checkpoint".into())
            .spawn(move || run(&conn, &wal, bound, &turn, &signal))
            .map_err(|e| rusqlite::Error::ToSqlConversionFailure(Box::new(e)))?;
        Ok(Checkpointer {
            stop,
            thread: Some(thread),
        })
    }
}

fn run(
    conn: &Connection,
    wal: &Path,
    bound: WalBound,
    turn: &WriteTurn,
    stop: &(Mutex<bool>, Condvar),
) {
    let (stopped, wake) = stop;
    let mut last_copy = Instant::now();
    // The WAL's size at the last catch-up: one that did not start the WAL over (a long read
    // still needs its frames) is tried again once the writers have made it grow.
    let mut caught_up_at = None;
    loop {
        let guard = stopped.lock().unwrap_or_else(|p| p.into_inner());
        let (guard, _) = wake
            .wait_timeout_while(guard, bound.look_every, |stopped| !*stopped)
            .unwrap_or_else(|p| p.into_inner());
        let last = *guard;
        drop(guard);
        let size = wal_bytes(wal);
        let copied = if size > bound.most_bytes && caught_up_at != Some(size) {
            caught_up_at = Some(size);
            catch_up(conn, turn)
        } else if last || last_copy.elapsed() >= EVERY {
            passive(conn).map(drop)
        } else {
            continue;
        };
        if let Err(e) = copied {
            tracing::warn!(error = %e, "WAL checkpoint failed; retried in a second");
        }
        last_copy = Instant::now();
        if last {
            return;
        }
    }
}

fn wal_bytes(wal: &Path) -> u64 {
    std::fs::metadata(wal).map(|m| m.len()).unwrap_or(0)
}

/// Copies the whole WAL back into the database file: passive passes while the writers commit
/// many frames during each, then one more holding the write turn. No write transaction is open
/// across that last pass, so the next write finds every frame copied and starts the WAL over.
fn catch_up(conn: &Connection, turn: &WriteTurn) -> rusqlite::Result<()> {
    let mut in_wal = passive(conn)?;
    for _ in 1..CHASES {
        let before = in_wal;
        in_wal = passive(conn)?;
        // Frames committed during the pass before: about what this one had to copy.
        if in_wal - before <= FEW_FRAMES {
            break;
        }
    }
    let _turn = turn.take();
    passive(conn).map(drop)
}

/// One passive checkpoint: copies what no reader still needs, never waits for readers or
/// writers. Returns the frames in the WAL.
fn passive(conn: &Connection) -> rusqlite::Result<i64> {
    conn.query_row("PRAGMA wal_checkpoint(PASSIVE)", [], |row| row.get(1))
}

impl Drop for Checkpointer {
    fn drop(&mut self) {
        let (stopped, wake) = &*self.stop;
        *stopped.lock().unwrap_or_else(|p| p.into_inner()) = true;
        wake.notify_one();
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::Store;

    fn file_size(path: &std::path::Path) -> u64 {
        std::fs::metadata(path).map(|m| m.len()).unwrap_or(0)
    }

    #[test]
    fn the_thread_copies_committed_pages_into_the_database_file() {
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("mandato.db");
        let store = Store::open(&db).unwrap();
        let checkpointer = store.sqlite().unwrap().start_checkpointer().unwrap();
        let before = file_size(&db);
        store
            .write(|db| {
                let tx = db.as_sqlite().unwrap();
                tx.execute_batch("CREATE TABLE filler (b BLOB NOT NULL)")
                    .map_err(crate::db::Error::from)?;
                let mut insert = tx
                    .prepare("INSERT INTO filler (b) VALUES (zeroblob(4096))")
                    .map_err(crate::db::Error::from)?;
                for _ in 0..512 {
                    insert.execute([]).map_err(crate::db::Error::from)?;
                }
                Ok(())
            })
            .unwrap();
        // Two megabytes committed: in the WAL only, until the thread's next round.
        let waited = std::time::Instant::now();
        while file_size(&db) < before + 2 * 1024 * 1024 {
            assert!(
                waited.elapsed() < std::time::Duration::from_secs(10),
                "the WAL was not checkpointed"
            );
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
        drop(checkpointer);
    }

    fn wal_of(db: &std::path::Path) -> std::path::PathBuf {
        crate::companion(db, "-wal")
    }

    /// A store whose commits leave checkpoints to the test, with a table to fill.
    fn store_for_filling(db: &std::path::Path) -> Store {
        let store = Store::open(db).unwrap();
        store
            .write(|db| {
                let tx = db.as_sqlite().unwrap();
                tx.pragma_update(None, "wal_autocheckpoint", 0)
                    .map_err(crate::db::Error::from)?;
                tx.execute_batch("CREATE TABLE filler (b BLOB NOT NULL)")
                    .map_err(crate::db::Error::from)?;
                Ok(())
            })
            .unwrap();
        store
    }

    /// Commits `pages` rows of a page each in one transaction.
    fn fill(store: &Store, pages: usize) {
        store
            .write(|db| {
                let tx = db.as_sqlite().unwrap();
                let mut insert = tx
                    .prepare_cached("INSERT INTO filler (b) VALUES (zeroblob(4000))")
                    .map_err(crate::db::Error::from)?;
                for _ in 0..pages {
                    insert.execute([]).map_err(crate::db::Error::from)?;
                }
                Ok(())
            })
            .unwrap();
    }

    /// Waits until `done`, failing the test after a minute (a writer that panicked).
    fn wait_until(mut done: impl FnMut() -> bool, what: &str) {
        let started = std::time::Instant::now();
        while !done() {
            assert!(
                started.elapsed() < std::time::Duration::from_secs(60),
                "waited a minute for {what}"
            );
            std::thread::yield_now();
        }
    }

    #[test]
    fn after_a_catch_up_the_next_write_starts_the_wal_over_though_writers_never_pause() {
        use std::sync::Arc;
        use std::sync::atomic::{AtomicUsize, Ordering};

        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("mandato.db");
        let store = Arc::new(store_for_filling(&db));
        // The writer commits back to back until it has made `last` commits.
        let (commits, last) = (
            Arc::new(AtomicUsize::new(0)),
            Arc::new(AtomicUsize::new(usize::MAX)),
        );
        let writer = {
            let (store, commits, last) =
                (Arc::clone(&store), Arc::clone(&commits), Arc::clone(&last));
            std::thread::spawn(move || {
                while commits.load(Ordering::SeqCst) < last.load(Ordering::SeqCst) {
                    fill(&store, 16);
                    commits.fetch_add(1, Ordering::SeqCst);
                }
            })
        };
        // Thousands of frames, which passive checkpoints alone never start over while the
        // writer commits back to back.
        wait_until(|| file_size(&wal_of(&db)) > 16 << 20, "a 16 MiB WAL");
        let conn = super::open_connection(&db, super::Durability::Full).unwrap();
        let turn = store.sqlite().unwrap().write_turn();
        super::catch_up(&conn, &turn).unwrap();
        last.store(commits.load(Ordering::SeqCst) + 4, Ordering::SeqCst);
        writer.join().unwrap();
        // The WAL now holds the commits made since the catch-up: a few of 16 pages each (tens
        // if this thread was slow to set `last`), not the thousands of frames before it.
        let in_wal = super::passive(&conn).unwrap();
        assert!(
            in_wal < 1_000,
            "the WAL did not start over: {in_wal} frames in it"
        );
    }

    #[test]
    fn writers_that_never_pause_keep_the_wal_bounded() {
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("mandato.db");
        let store = store_for_filling(&db);
        let bound = super::WalBound {
            most_bytes: 4 << 20,
            look_every: std::time::Duration::from_millis(10),
        };
        let checkpointer =
            super::Checkpointer::bounding_wal(&db, store.sqlite().unwrap().write_turn(), bound)
                .unwrap();
        // 192 MiB committed back to back, 256 KiB at a time: without the bound, the WAL would
        // hold all of it.
        let mut largest = 0;
        for _ in 0..768 {
            fill(&store, 64);
            largest = largest.max(file_size(&wal_of(&db)));
        }
        drop(checkpointer);
        assert!(
            largest < 32 * bound.most_bytes,
            "the WAL grew to {largest} bytes, its bound is {}",
            bound.most_bytes
        );
    }
}
