//! Storage: the only module with SQL. One file per aggregate. SQLite is the default backend;
//! PostgreSQL is being added beside it (`db.rs`, `pg_migrations.rs`, ARCHITECTURE.md's
//! "Storage backends"): an aggregate ported to `db::Db` runs on both.
//!
//! One database file in WAL mode. Writes go through a single connection, each operation in one
//! `BEGIN IMMEDIATE` transaction (all or nothing, and other processes such as the CLI wait their
//! turn instead of failing); the API's writes share their commit with the other writes queued
//! meanwhile, each in its own savepoint (`group.rs`). Reads use a small pool of read-only connections, which WAL lets run
//! beside the writer.

pub mod acquirer_calls;
pub mod acquirers;
pub mod audit;
pub mod calendar;
pub mod charging;
mod checkpoint;
pub mod commerces;
pub mod creation_replays;
pub mod customers;
pub mod db;
pub mod deliveries;
pub mod dev_tools;
pub mod events;
pub mod fee_rules;
pub mod fintoc;
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
pub mod oneclick;
pub mod payment_evidence;
mod pg_connect;
pub mod pg_migrations;
#[cfg(test)]
pub(crate) mod pg_test;
pub mod sandbox_reset;
pub mod search;
pub mod settings;
pub mod signatures;
pub mod sim_acquirer;
pub mod sqlite_file;
pub mod sqlite_setup;
pub mod staff;
pub mod staff_audit;
pub mod staff_past_due;
pub mod staff_views;
mod stored_json;
pub mod webpay;
pub(crate) mod write_turn;

use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

pub use checkpoint::Checkpointer;
use rusqlite::{Connection, OpenFlags, TransactionBehavior};
pub use stored_json::StoredJson;

use mandato_core::error::Error;

/// The files SQLite may keep beside a database: the write-ahead log, its shared-memory index
/// and a rollback journal. Whoever moves, removes or protects a database does the same to them.
pub const COMPANION_SUFFIXES: [&str; 3] = ["-wal", "-shm", "-journal"];

/// The file SQLite names `<database><suffix>` (a suffix of `COMPANION_SUFFIXES`).
pub fn companion(db: &Path, suffix: &str) -> PathBuf {
    let mut name = db.as_os_str().to_owned();
    name.push(suffix);
    PathBuf::from(name)
}

/// How durable a commit is. `Full` survives a power cut once answered; the background audit
/// writer uses `Normal`, which survives a crash of the process.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Durability {
    Full,
    Normal,
}

pub struct Store {
    engine: Engine,
    /// The request path's cache of API keys and commerces (`commerces::CredentialCache`).
    pub credentials: commerces::CredentialCache,
    /// The request path's cache of calendars and charging rules (`calendar::ChargeDatesCache`).
    pub charge_dates: calendar::ChargeDatesCache,
}

/// The database behind a `Store`. A match on it is the whole cost of having two backends: the
/// SQLite path allocates and dispatches exactly as it did alone.
enum Engine {
    Sqlite(SqliteStore),
    Postgres(db::PgPool),
}

/// SQLite's machinery: the single writer, the pool of readers, the group commit's queue.
pub struct SqliteStore {
    path: PathBuf,
    writer: Mutex<Connection>,
    readers: Mutex<Vec<Connection>>,
    group: group::Queue,
    /// Shared with the audit writer's connection: whose turn it is to write the file.
    turn: std::sync::Arc<write_turn::WriteTurn>,
    /// Whether a read or write ran since `release_memory_if_idle` last looked.
    used: AtomicBool,
    /// Whether the connections' memory was released since they were last used.
    released: AtomicBool,
}

/// Where the data lives: SQLite's file (the default) or a PostgreSQL database.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Location {
    Sqlite(PathBuf),
    /// A `postgres://` URL; it may hold a password, so it is never printed.
    Postgres(mandato_core::secret::Secret<String>),
}

impl Location {
    /// `url` when one was given (it must be a PostgreSQL URL), otherwise SQLite's `file`.
    pub fn from_url(url: Option<&str>, file: PathBuf) -> anyhow::Result<Location> {
        match url {
            None => Ok(Location::Sqlite(file)),
            Some(url) if url.starts_with("postgres://") || url.starts_with("postgresql://") => Ok(
                Location::Postgres(mandato_core::secret::Secret::new(url.to_string())),
            ),
            Some(_) => anyhow::bail!(
                "--database-url must be a PostgreSQL URL (postgres://user:password@host:port/database); \
                 without it the engine uses SQLite in its data directory"
            ),
        }
    }
}

impl Store {
    /// Opens the store at `location`: SQLite's file (see `open`) or a PostgreSQL database,
    /// whose schema is brought up to date (`pg_migrations`), connected as `postgres` says.
    pub fn open_at(location: &Location, postgres: &db::PgSettings) -> anyhow::Result<Store> {
        match location {
            Location::Sqlite(path) => Store::open(path),
            Location::Postgres(url) => Store::open_postgres(url.expose(), postgres),
        }
    }

    /// Connects to the PostgreSQL database at `url` and migrates it. The migrations run on a
    /// connection of their own, without the statement timeout: a schema change may rightly
    /// take long.
    pub fn open_postgres(url: &str, settings: &db::PgSettings) -> anyhow::Result<Store> {
        off_async(|| {
            let pool = db::PgPool::open(url, settings)?;
            pg_migrations::run(&pool.connect()?)?;
            Ok(Store::with_engine(Engine::Postgres(pool)))
        })
    }

    fn with_engine(engine: Engine) -> Store {
        Store {
            engine,
            credentials: commerces::CredentialCache::default(),
            charge_dates: calendar::ChargeDatesCache::default(),
        }
    }

    /// Opens (creating if needed) the SQLite database and brings its schema up to date.
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
        Ok(Store::with_engine(Engine::Sqlite(SqliteStore {
            path: path.to_path_buf(),
            writer: Mutex::new(writer),
            readers: Mutex::new(Vec::new()),
            group: group::Queue::default(),
            turn: std::sync::Arc::default(),
            used: AtomicBool::new(false),
            released: AtomicBool::new(false),
        })))
    }

    /// SQLite's own machinery (its file, backups, checkpoints), or `None` on PostgreSQL.
    pub fn sqlite(&self) -> Option<&SqliteStore> {
        match &self.engine {
            Engine::Sqlite(sqlite) => Some(sqlite),
            Engine::Postgres(_) => None,
        }
    }

    pub fn backend(&self) -> db::Backend {
        match &self.engine {
            Engine::Sqlite(_) => db::Backend::Sqlite,
            Engine::Postgres(_) => db::Backend::Postgres,
        }
    }

    /// A PostgreSQL connection outside the pool, for a thread that keeps one; `None` on SQLite.
    pub(crate) fn postgres_connection(&self) -> Option<db::Result<db::PgConn>> {
        match &self.engine {
            Engine::Sqlite(_) => None,
            Engine::Postgres(pool) => Some(off_async(|| pool.connect())),
        }
    }

    /// SQLite's file, or `None` on PostgreSQL.
    pub fn path(&self) -> Option<&Path> {
        self.sqlite().map(SqliteStore::path)
    }

    /// Gives idle SQLite connections' memory back (`SqliteStore::release_memory_if_idle`);
    /// PostgreSQL's caches are the server's.
    pub fn release_memory_if_idle(&self) {
        if let Some(sqlite) = self.sqlite() {
            sqlite.release_memory_if_idle();
        }
    }

    /// Runs `f` in one write transaction: committed if it returns `Ok`, rolled back otherwise.
    /// On SQLite it is the writer's `BEGIN IMMEDIATE`; on PostgreSQL a pooled connection's.
    pub fn write<T>(&self, f: impl FnOnce(db::Db<'_>) -> Result<T, Error>) -> Result<T, Error> {
        match &self.engine {
            Engine::Sqlite(sqlite) => sqlite.write(f),
            Engine::Postgres(pool) => off_async(|| postgres_transaction(pool, f)),
        }
    }

    /// Runs `f` with PostgreSQL's pool, off the async runtime's threads like `write`; an
    /// error on SQLite.
    pub(crate) fn on_postgres<T>(
        &self,
        f: impl FnOnce(&db::PgPool) -> Result<T, Error>,
    ) -> Result<T, Error> {
        match &self.engine {
            Engine::Sqlite(_) => Err(Error::Internal(anyhow::anyhow!(
                "this works on PostgreSQL only"
            ))),
            Engine::Postgres(pool) => off_async(|| f(pool)),
        }
    }

    /// Runs `f` in one read transaction: every statement of `f` sees the same snapshot. On
    /// PostgreSQL the transaction commits when `f` succeeds, so a read that claims work (the
    /// delivery worker's due events) keeps its claim.
    pub fn read<T>(&self, f: impl FnOnce(db::Db<'_>) -> Result<T, Error>) -> Result<T, Error> {
        match &self.engine {
            Engine::Sqlite(sqlite) => sqlite.read(f),
            Engine::Postgres(pool) => off_async(|| postgres_transaction(pool, f)),
        }
    }

    /// `read` with SQLite's own connection, for what reaches into the file itself (tests that
    /// inspect or damage it); an error on PostgreSQL.
    pub fn read_sqlite<T>(
        &self,
        f: impl FnOnce(&Connection) -> Result<T, Error>,
    ) -> Result<T, Error> {
        self.read(|db| f(db.as_sqlite().ok_or_else(not_sqlite)?))
    }

    /// `write` with SQLite's own transaction; an error on PostgreSQL.
    pub fn write_sqlite<T>(
        &self,
        f: impl FnOnce(&Connection) -> Result<T, Error>,
    ) -> Result<T, Error> {
        self.write(|db| f(db.as_sqlite().ok_or_else(not_sqlite)?))
    }

    /// A consistent copy of the live SQLite database, safe while other connections write.
    /// PostgreSQL's copies are `pg_dump`'s.
    pub fn backup_to(&self, dest: &Path) -> anyhow::Result<()> {
        match self.sqlite() {
            Some(sqlite) => sqlite.backup_to(dest),
            None => anyhow::bail!(BACKUP_ON_POSTGRES),
        }
    }
}

impl Drop for Store {
    fn drop(&mut self) {
        // Closing a PostgreSQL connection waits for the server, like any of its calls.
        if let Engine::Postgres(pool) = &self.engine {
            off_async(|| pool.close_idle());
        }
    }
}

/// Runs blocking PostgreSQL work from wherever the caller is. The synchronous client drives
/// each call on a small runtime of its own, which cannot run on a thread that drives async
/// tasks: on such a thread (a multi-threaded runtime's worker) the work first moves the
/// thread's tasks elsewhere (`block_in_place`); on blocking or plain threads it just runs.
fn off_async<T>(work: impl FnOnce() -> T) -> T {
    match tokio::runtime::Handle::try_current() {
        Ok(handle) if handle.runtime_flavor() == tokio::runtime::RuntimeFlavor::MultiThread => {
            tokio::task::block_in_place(work)
        }
        _ => work(),
    }
}

/// A transaction on PostgreSQL. Inside a read-only merchant request whose correlationId is
/// still to claim, the claim goes in with it (`audit::DeferredClaim`).
fn postgres_transaction<T>(
    pool: &db::PgPool,
    f: impl FnOnce(db::Db<'_>) -> Result<T, Error>,
) -> Result<T, Error> {
    match audit::CorrelationClaim::current_deferred() {
        Some(claim) => claim.take_with(pool, f),
        None => pool.transaction(f),
    }
}

fn not_sqlite() -> Error {
    Error::Internal(anyhow::anyhow!("this works on SQLite's file only"))
}

/// Why backups refuse on PostgreSQL.
pub const BACKUP_ON_POSTGRES: &str = "mandato's backups copy its SQLite file; on PostgreSQL \
     back the database up with pg_dump (and restore it with pg_restore or psql)";

impl SqliteStore {
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

    /// The turns at writing the file, for another connection of this engine that writes it
    /// (the audit writer's).
    pub(crate) fn write_turn(&self) -> std::sync::Arc<write_turn::WriteTurn> {
        std::sync::Arc::clone(&self.turn)
    }

    /// For a long-running engine: commits stop checkpointing the WAL themselves and a
    /// background thread does it (see `checkpoint.rs`) until the returned value is dropped.
    /// Connections that write besides the writer (the audit writer) turn theirs off too.
    pub fn start_checkpointer(&self) -> anyhow::Result<checkpoint::Checkpointer> {
        let checkpointer = checkpoint::Checkpointer::start(&self.path, self.write_turn())?;
        self.writer
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .pragma_update(None, "wal_autocheckpoint", 0)?;
        Ok(checkpointer)
    }

    fn write<T>(&self, f: impl FnOnce(db::Db<'_>) -> Result<T, Error>) -> Result<T, Error> {
        self.note_use();
        let mut conn = self.writer.lock().unwrap_or_else(|p| p.into_inner());
        let _turn = self.turn.take();
        let tx = conn
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(db::Error::from)?;
        let value = f(db::Db::Sqlite(&tx))?;
        tx.commit().map_err(db::Error::from)?;
        Ok(value)
    }

    /// On a read-only connection from the pool (opening one when none is free); the WAL read
    /// lock is taken once rather than once per statement.
    fn read<T>(&self, f: impl FnOnce(db::Db<'_>) -> Result<T, Error>) -> Result<T, Error> {
        self.note_use();
        let pooled = self.readers.lock().unwrap_or_else(|p| p.into_inner()).pop();
        let conn = match pooled {
            Some(conn) => conn,
            None => open_reader(&self.path).map_err(db::Error::from)?,
        };
        conn.prepare_cached("BEGIN")
            .and_then(|mut begin| begin.execute([]))
            .map_err(db::Error::from)?;
        let result = f(db::Db::Sqlite(&conn));
        let committed = conn
            .prepare_cached("COMMIT")
            .map_err(db::Error::from)?
            .execute([]);
        if committed.is_err() {
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

    fn backup_to(&self, dest: &Path) -> anyhow::Result<()> {
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
    // A WAL that a burst of writes made large is cut back when it starts over (`checkpoint.rs`).
    conn.pragma_update(
        None,
        "journal_size_limit",
        checkpoint::WAL_KEPT_BYTES as i64,
    )?;
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

#[cfg(test)]
mod tests {
    use super::*;

    fn pooled_readers(store: &Store) -> usize {
        store.sqlite().unwrap().readers.lock().unwrap().len()
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
                store.read(|db| {
                    Ok(db.query_row("SELECT count(*) FROM commerces", &[], |r| r.get::<i64>(0))?)
                })
            })
            .unwrap();
        store
            .write(|db| Ok(db.execute("DELETE FROM holidays", &[])?))
            .unwrap();
        assert_eq!(pooled_readers(&store), 2);
        store.release_memory_if_idle();
        assert_eq!(pooled_readers(&store), 2);
    }
}
