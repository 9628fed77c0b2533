//! SQLite storage: the only module with SQL. One file per aggregate.
//!
//! One database file in WAL mode. Writes go through a single connection, each operation in one
//! `BEGIN IMMEDIATE` transaction (all or nothing, and other processes such as the CLI wait their
//! turn instead of failing); the API's writes share their commit with the other writes queued
//! meanwhile, each in its own savepoint (`group.rs`). Reads use a small pool of read-only connections, which WAL lets run
//! beside the writer.

pub mod audit;
pub mod calendar;
pub mod charging;
mod checkpoint;
pub mod commerces;
pub mod customers;
pub mod deliveries;
pub mod dev_tools;
pub mod events;
mod fresh_cache;
mod group;
#[cfg(unix)]
mod private_files;
/// Elsewhere the platform's per-user data directory already keeps other users out.
#[cfg(not(unix))]
mod private_files {
    use std::path::Path;
    pub(super) fn prepare(db: &Path) -> std::io::Result<()> {
        match db.parent() {
            Some(dir) => std::fs::create_dir_all(dir),
            None => Ok(()),
        }
    }
    pub(super) fn tighten_companions(_db: &Path) -> std::io::Result<()> {
        Ok(())
    }
    pub(super) fn create_private(path: &Path) -> std::io::Result<()> {
        std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(path)
            .map(drop)
    }
}
pub mod installments;
pub mod instruments;
pub mod ledger;
pub mod listen_leases;
pub mod login_throttle;
pub mod mandate_signatures;
pub mod mandates;
pub mod migrations;
pub mod sandbox_reset;
mod search;
pub mod settings;
pub mod signatures;
pub mod sim_acquirer;
pub(crate) mod sqlite_setup;
pub mod staff;
pub mod staff_audit;
pub mod staff_views;

use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

pub use checkpoint::Checkpointer;
use rusqlite::{Connection, OpenFlags, Transaction, TransactionBehavior};

use crate::error::Error;

/// How durable a commit is. `Full` survives a power cut once answered; the background audit
/// writer uses `Normal`, which survives a crash of the process.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Durability {
    Full,
    Normal,
}

pub struct Store {
    path: PathBuf,
    writer: Mutex<Connection>,
    readers: Mutex<Vec<Connection>>,
    group: group::Queue,
    /// The request path's cache of API keys and commerces (`commerces::CredentialCache`).
    pub credentials: commerces::CredentialCache,
    /// The request path's cache of calendars and charging rules (`calendar::ChargeDatesCache`).
    pub charge_dates: calendar::ChargeDatesCache,
    /// Whether a read or write ran since `release_memory_if_idle` last looked.
    used: AtomicBool,
    /// Whether the connections' memory was released since they were last used.
    released: AtomicBool,
}

impl Store {
    /// Opens (creating if needed) the database and brings its schema up to date.
    pub fn open(path: &Path) -> anyhow::Result<Store> {
        private_files::prepare(path)?;
        let mut writer = open_connection(path, Durability::Full)?;
        // SQLite made any missing WAL and SHM files with the database file's mode; older
        // installations may still have wider ones.
        private_files::tighten_companions(path)?;
        // Group commits run each request in a savepoint, whose sub-journal is a temporary file:
        // kept in memory, it costs a copy of each page instead of a write to disk.
        writer.pragma_update(None, "temp_store", "MEMORY")?;
        // Every write goes through this connection: a page cache of its own (16 MiB instead of
        // SQLite's 2 MiB) keeps the hot index pages of large batches (a charging run) in memory,
        // and checkpoints every 40 MB of WAL rather than every 4 MB, so a hot page is copied
        // back to the database file less often.
        writer.execute_batch("PRAGMA cache_size = -16384; PRAGMA wal_autocheckpoint = 10000;")?;
        migrations::run(&mut writer)?;
        Ok(Store {
            path: path.to_path_buf(),
            writer: Mutex::new(writer),
            readers: Mutex::new(Vec::new()),
            group: group::Queue::default(),
            credentials: commerces::CredentialCache::default(),
            charge_dates: calendar::ChargeDatesCache::default(),
            used: AtomicBool::new(false),
            released: AtomicBool::new(false),
        })
    }

    /// Notes a read or write for `release_memory_if_idle`. Loaded first, so that a busy store
    /// does not write the shared flag on every request.
    fn note_use(&self) {
        if !self.used.load(Ordering::Relaxed) {
            self.used.store(true, Ordering::Relaxed);
        }
    }

    /// Gives memory back to the system once the store has been idle since the last call:
    /// closes the pooled readers but one, empties the page caches of that one and of the
    /// writer, and returns the freed heap. Called periodically (`app`); an engine on a
    /// workstation sits idle most of the day, and after a burst its caches (up to 16 MiB for
    /// the writer and 2 MiB for each of up to 16 readers) would otherwise stay resident. The
    /// next requests read their pages again, from the system's file cache.
    pub fn release_memory_if_idle(&self) {
        if self.used.swap(false, Ordering::Relaxed) {
            self.released.store(false, Ordering::Relaxed);
            return;
        }
        if self.released.swap(true, Ordering::Relaxed) {
            return;
        }
        let closed: Vec<Connection> = {
            let mut pool = self.readers.lock().unwrap_or_else(|p| p.into_inner());
            let kept = pool.len().min(1);
            let closed = pool.split_off(kept);
            for reader in pool.iter() {
                let _ = reader.release_memory();
            }
            closed
        };
        drop(closed);
        // A writer at work is not idle after all: it keeps its cache.
        if let Ok(writer) = self.writer.try_lock() {
            let _ = writer.release_memory();
        }
        return_freed_memory();
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// For a long-running engine: commits stop checkpointing the WAL themselves and a
    /// background thread does it (see `checkpoint.rs`) until the returned value is dropped.
    /// Connections that write besides the writer (the audit writer) turn theirs off too.
    pub fn start_checkpointer(&self) -> anyhow::Result<checkpoint::Checkpointer> {
        let checkpointer = checkpoint::Checkpointer::start(&self.path)?;
        self.writer
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .pragma_update(None, "wal_autocheckpoint", 0)?;
        Ok(checkpointer)
    }

    /// Runs `f` in one write transaction: committed if it returns `Ok`, rolled back otherwise.
    pub fn write<T>(
        &self,
        f: impl FnOnce(&Transaction<'_>) -> Result<T, Error>,
    ) -> Result<T, Error> {
        self.note_use();
        let mut conn = self.writer.lock().unwrap_or_else(|p| p.into_inner());
        let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
        let value = f(&tx)?;
        tx.commit()?;
        Ok(value)
    }

    /// Runs `f` in one read transaction on a read-only connection from the pool (opening one
    /// when none is free): every statement of `f` sees the same snapshot, and the WAL read lock
    /// is taken once rather than once per statement.
    pub fn read<T>(&self, f: impl FnOnce(&Connection) -> Result<T, Error>) -> Result<T, Error> {
        self.note_use();
        let pooled = self.readers.lock().unwrap_or_else(|p| p.into_inner()).pop();
        let conn = match pooled {
            Some(conn) => conn,
            None => open_reader(&self.path)?,
        };
        conn.prepare_cached("BEGIN")?.execute([])?;
        let result = f(&conn);
        if conn.prepare_cached("COMMIT")?.execute([]).is_err() {
            // A connection left inside a transaction must not go back to the pool.
            let _ = conn.execute_batch("ROLLBACK");
            if !conn.is_autocommit() {
                return result;
            }
        }
        let mut pool = self.readers.lock().unwrap_or_else(|p| p.into_inner());
        if pool.len() < 16 {
            pool.push(conn);
        }
        result
    }

    /// A consistent copy of the live database, safe while other connections write.
    pub fn backup_to(&self, dest: &Path) -> anyhow::Result<()> {
        let src = open_reader(&self.path)?;
        // The copy holds the same keys and secrets as the database: private from its first byte.
        private_files::create_private(dest)?;
        let mut dst = Connection::open(dest)?;
        // One read transaction for the whole copy: its steps read one snapshot, so commits by
        // other connections between steps do not make the copy start over (under a steady
        // stream of writes it would never finish), and in WAL the writers are not held up.
        src.execute_batch("BEGIN")?;
        src.query_row("SELECT count(*) FROM sqlite_master", [], |_| Ok(()))?;
        let backup = rusqlite::backup::Backup::new(&src, &mut dst)?;
        backup.run_to_completion(256, Duration::from_millis(5), None)?;
        drop(backup);
        src.execute_batch("COMMIT")?;
        Ok(())
    }
}

/// Hands the heap this thread freed back to the system: mimalloc's, which holds SQLite's page
/// caches (`sqlite_setup`) and the Rust side's when it is the global allocator, and the C
/// library's, which holds them instead when SQLite was initialised before the store.
pub(crate) fn return_freed_memory() {
    // SAFETY: `mi_collect` only frees this thread's unused allocator pages; with another global
    // allocator, mimalloc's heap of this thread is empty and nothing happens.
    unsafe { libmimalloc_sys::mi_collect(true) };
    // SAFETY: `malloc_trim` only returns free memory of glibc's arenas to the system.
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    unsafe {
        libc::malloc_trim(0);
    }
}

/// A read-write connection with the pragmas every connection of ours needs.
pub fn open_connection(path: &Path, durability: Durability) -> rusqlite::Result<Connection> {
    sqlite_setup::configure();
    let conn = Connection::open(path)?;
    conn.busy_timeout(Duration::from_secs(10))?;
    let sync = match durability {
        Durability::Full => "FULL",
        Durability::Normal => "NORMAL",
    };
    conn.execute_batch(&format!(
        "PRAGMA journal_mode = WAL; PRAGMA synchronous = {sync}; PRAGMA foreign_keys = ON;"
    ))?;
    search::register(&conn)?;
    Ok(conn)
}

pub(crate) fn open_reader(path: &Path) -> rusqlite::Result<Connection> {
    sqlite_setup::configure();
    let conn = Connection::open_with_flags(
        path,
        OpenFlags::SQLITE_OPEN_READ_ONLY
            | OpenFlags::SQLITE_OPEN_NO_MUTEX
            | OpenFlags::SQLITE_OPEN_URI,
    )?;
    conn.busy_timeout(Duration::from_secs(10))?;
    conn.execute_batch("PRAGMA foreign_keys = ON;")?;
    search::register(&conn)?;
    Ok(conn)
}

/// `Some(row)` or `None` for a query expected to match at most one row.
pub(crate) fn optional<T>(result: rusqlite::Result<T>) -> rusqlite::Result<Option<T>> {
    match result {
        Ok(v) => Ok(Some(v)),
        Err(rusqlite::Error::QueryReturnedNoRows) => Ok(None),
        Err(e) => Err(e),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pooled_readers(store: &Store) -> usize {
        store.readers.lock().unwrap().len()
    }

    #[test]
    fn an_idle_store_keeps_one_reader_and_a_busy_one_keeps_them_all() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(&dir.path().join("mandato.db")).unwrap();
        // A read inside a read needs a second connection: both go back to the pool.
        store
            .read(|_| store.read(|_| store.read(|_| Ok(()))))
            .unwrap();
        assert_eq!(pooled_readers(&store), 3);

        // Used since the last look: not idle yet.
        store.release_memory_if_idle();
        assert_eq!(pooled_readers(&store), 3);
        // Idle for a whole period: one reader stays, emptied.
        store.release_memory_if_idle();
        assert_eq!(pooled_readers(&store), 1);

        // The store works as before, and a new burst fills the pool again.
        store
            .read(|_| {
                store.read(|c| {
                    Ok(c.query_row("SELECT count(*) FROM commerces", [], |r| r.get::<_, i64>(0))?)
                })
            })
            .unwrap();
        store
            .write(|tx| Ok(tx.execute("DELETE FROM holidays", [])?))
            .unwrap();
        assert_eq!(pooled_readers(&store), 2);
        store.release_memory_if_idle();
        assert_eq!(pooled_readers(&store), 2);
    }
}
