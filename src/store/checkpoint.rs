//! WAL checkpoints off the commit path. SQLite's automatic checkpoint runs inside the commit
//! that crosses its threshold: every request of that group commit waits while tens of
//! megabytes are copied into the database file and synced. A running engine turns it off on
//! its own connections and checkpoints from this thread instead, once a second, so a commit
//! only appends to the WAL. Commands run by hand (the CLI) keep SQLite's automatic checkpoint.

use std::path::Path;
use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

use rusqlite::Connection;

use super::{Durability, open_connection};

/// How often the WAL is copied back: at most about one second of writes waits in it.
const EVERY: Duration = Duration::from_secs(1);

/// The background checkpoint; stopped (after a last checkpoint) when dropped.
pub struct Checkpointer {
    stop: Arc<(Mutex<bool>, Condvar)>,
    thread: Option<JoinHandle<()>>,
}

impl Checkpointer {
    pub(super) fn start(db: &Path) -> rusqlite::Result<Checkpointer> {
        let conn = open_connection(db, Durability::Full)?;
        let stop = Arc::new((Mutex::new(false), Condvar::new()));
        let signal = Arc::clone(&stop);
        let thread = std::thread::Builder::new()
            .name("checkpoint".into())
            .spawn(move || run(&conn, &signal))
            .map_err(|e| rusqlite::Error::ToSqlConversionFailure(Box::new(e)))?;
        Ok(Checkpointer {
            stop,
            thread: Some(thread),
        })
    }
}

fn run(conn: &Connection, stop: &(Mutex<bool>, Condvar)) {
    let (stopped, wake) = stop;
    loop {
        let guard = stopped.lock().unwrap_or_else(|p| p.into_inner());
        let (guard, _) = wake
            .wait_timeout_while(guard, EVERY, |stopped| !*stopped)
            .unwrap_or_else(|p| p.into_inner());
        let last = *guard;
        drop(guard);
        // PASSIVE: copies what no reader still needs, never waits for readers or the writer.
        if let Err(e) = conn.query_row("PRAGMA wal_checkpoint(PASSIVE)", [], |_| Ok(())) {
            tracing::warn!(error = %e, "WAL checkpoint failed; retried in a second");
        }
        if last {
            return;
        }
    }
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
                tx.execute_batch("CREATE TABLE filler (b BLOB NOT NULL)")?;
                let mut insert = tx.prepare("INSERT INTO filler (b) VALUES (zeroblob(4096))")?;
                for _ in 0..512 {
                    insert.execute([])?;
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
}
