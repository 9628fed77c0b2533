//! Automatic backups of the SQLite database, their rotation, and restore.
//!
//! While the engine runs it checks at start and then every hour whether today (the
//! America/Santiago date of the wall clock) already has a backup; when not, it takes one with
//! SQLite's online backup (`Store::backup_to`, which copies in steps beside the writers) into
//! `DATA_DIR/backups/` under a temporary name, checks it (`PRAGMA integrity_check`, and that it
//! is a mandato database), and renames it into place as `mandato-YYYY-MM-DDTHHMMSSZ.db`. Then
//! rotation deletes what `kept` does not keep. A failure is logged and tried again at the next
//! check; it never stops the engine.
//!
//! The engine holds a shared lock on `DATA_DIR/mandato.lock` for its lifetime; `restore` takes
//! it exclusively, so a database is never swapped under a running engine.

use std::collections::BTreeSet;
use std::fs::{self, File, OpenOptions};
use std::io;
use std::num::NonZeroU32;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use chrono::{DateTime, Datelike, IsoWeek, NaiveDate, NaiveDateTime, Utc};
use chrono_tz::Tz;
use tokio::sync::Notify;

use mandato_core::clock::Clock;
use mandato_store::{COMPANION_SUFFIXES, Store, companion};

/// Whose calendar day decides whether today's backup exists: the merchant's, from the wall
/// clock, whatever the sandbox's business offset says.
pub const BACKUP_TIME_ZONE: Tz = chrono_tz::America::Santiago;
/// The directory beside the database that holds the backups.
pub const DIR_NAME: &str = "backups";
/// The file the engine locks (shared) and `restore` locks (exclusively).
pub const LOCK_FILE: &str = "mandato.lock";
/// How often a running engine looks whether today's backup is still to be made.
const CHECK_EVERY: Duration = Duration::from_secs(3600);
/// `mandato-2026-11-25T031500Z.db`: sortable, and free of `:` for file systems that refuse it.
const NAME_FORMAT: &str = "%Y-%m-%dT%H%M%SZ";

/// `serve --backup-keep-daily N --backup-keep-weekly N`, `--no-backups`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BackupConfig {
    pub enabled: bool,
    /// At least one: the backup just taken is always kept.
    pub keep_daily: NonZeroU32,
    pub keep_weekly: u32,
}

impl Default for BackupConfig {
    fn default() -> Self {
        BackupConfig {
            enabled: true,
            keep_daily: NonZeroU32::new(7).expect("seven is not zero"),
            keep_weekly: 4,
        }
    }
}

/// One backup file found in the backups directory.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Backup {
    pub path: PathBuf,
    pub file: String,
    /// When it was taken (UTC, to the second), read from its name.
    pub taken_at: DateTime<Utc>,
    pub size: u64,
}

pub fn directory(data_dir: &Path) -> PathBuf {
    data_dir.join(DIR_NAME)
}

pub fn file_name(taken_at: DateTime<Utc>) -> String {
    format!("mandato-{}.db", taken_at.format(NAME_FORMAT))
}

/// The time in a backup's name, for names `file_name` makes and nothing else.
pub fn parse_file_name(name: &str) -> Option<DateTime<Utc>> {
    let stamp = name.strip_prefix("mandato-")?.strip_suffix(".db")?;
    let at = NaiveDateTime::parse_from_str(stamp, NAME_FORMAT)
        .ok()?
        .and_utc();
    (file_name(at) == name).then_some(at)
}

/// The backups in `dir`, newest first; none when the directory does not exist yet.
pub fn list(dir: &Path) -> io::Result<Vec<Backup>> {
    let entries = match fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(e),
    };
    let mut backups = Vec::new();
    for entry in entries {
        let entry = entry?;
        let Some(name) = entry.file_name().to_str().map(str::to_string) else {
            continue;
        };
        let Some(taken_at) = parse_file_name(&name) else {
            continue;
        };
        let meta = entry.metadata()?;
        if !meta.is_file() {
            continue;
        }
        backups.push(Backup {
            path: entry.path(),
            file: name,
            taken_at,
            size: meta.len(),
        });
    }
    backups.sort_by_key(|b| std::cmp::Reverse(b.taken_at));
    Ok(backups)
}

/// The calendar day a backup (or now) belongs to.
pub fn day_of(at: DateTime<Utc>) -> NaiveDate {
    at.with_timezone(&BACKUP_TIME_ZONE).date_naive()
}

/// Whether today has no backup yet.
pub fn is_due(taken: &[DateTime<Utc>], now: DateTime<Utc>) -> bool {
    let today = day_of(now);
    !taken.iter().any(|t| day_of(*t) == today)
}

/// The backups rotation keeps: the newest of each of the `keep_daily` most recent days that have
/// one, then, among the older ones, the newest of each of the `keep_weekly` most recent ISO
/// weeks that have one. Days and weeks are those of `BACKUP_TIME_ZONE`.
pub fn kept(
    taken: &[DateTime<Utc>],
    keep_daily: NonZeroU32,
    keep_weekly: u32,
) -> BTreeSet<DateTime<Utc>> {
    let mut newest_first = taken.to_vec();
    newest_first.sort_unstable_by_key(|t| std::cmp::Reverse(*t));
    newest_first.dedup();
    let mut days: Vec<NaiveDate> = Vec::new();
    let mut weeks: Vec<IsoWeek> = Vec::new();
    let mut kept = BTreeSet::new();
    for at in newest_first {
        let day = day_of(at);
        // Newest first, so a day seen before already has its newest backup.
        if days.last() == Some(&day) {
            continue;
        }
        if days.len() < keep_daily.get() as usize {
            days.push(day);
            kept.insert(at);
            continue;
        }
        let week = day.iso_week();
        if weeks.last() == Some(&week) {
            continue;
        }
        if weeks.len() < keep_weekly as usize {
            weeks.push(week);
            kept.insert(at);
        }
    }
    kept
}

/// Deletes the backups in `dir` that `kept` does not keep; answers the ones deleted.
pub fn rotate(dir: &Path, config: &BackupConfig) -> io::Result<Vec<Backup>> {
    let backups = list(dir)?;
    let times: Vec<_> = backups.iter().map(|b| b.taken_at).collect();
    let keep = kept(&times, config.keep_daily, config.keep_weekly);
    let mut removed = Vec::new();
    for backup in backups {
        if !keep.contains(&backup.taken_at) {
            fs::remove_file(&backup.path)?;
            removed.push(backup);
        }
    }
    Ok(removed)
}

/// Takes a backup of `store` into `dir` now: copied under a temporary name, checked, then
/// renamed into place, so a file with a backup's name is always a whole, sound database.
pub fn take(store: &Store, dir: &Path, now: DateTime<Utc>) -> anyhow::Result<Backup> {
    create_private_dir(dir).with_context(|| format!("creating {}", dir.display()))?;
    let name = file_name(now);
    let path = dir.join(&name);
    anyhow::ensure!(!path.exists(), "{} already exists", path.display());
    let partial = dir.join(format!(".{name}.partial"));
    remove_with_companions(&partial)?;
    let made = store
        .backup_to(&partial)
        .context("copying the database")
        .and_then(|()| check_database(&partial))
        .and_then(|_| {
            fs::rename(&partial, &path)?;
            sync_dir(dir);
            Ok(())
        });
    if let Err(e) = made {
        let _ = remove_with_companions(&partial);
        return Err(e);
    }
    Ok(Backup {
        size: fs::metadata(&path)?.len(),
        path,
        file: name,
        taken_at: now,
    })
}

/// One look: today's backup when it is missing, then rotation.
pub fn check(
    store: &Store,
    clock: &dyn Clock,
    dir: &Path,
    config: &BackupConfig,
) -> anyhow::Result<Option<Backup>> {
    let now = clock.now();
    let taken: Vec<_> = list(dir)?.iter().map(|b| b.taken_at).collect();
    let made = if is_due(&taken, now) {
        Some(take(store, dir, now)?)
    } else {
        None
    };
    for removed in rotate(dir, config)? {
        tracing::info!(file = %removed.file, "old backup removed by rotation");
    }
    remove_abandoned_partials(dir, now)?;
    Ok(made)
}

/// Removes the temporary files of copies that a crash or power cut interrupted. Only those
/// begun over an hour ago: a younger one may be another engine's copy under way.
pub fn remove_abandoned_partials(dir: &Path, now: DateTime<Utc>) -> io::Result<usize> {
    let entries = match fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(0),
        Err(e) => return Err(e),
    };
    let mut removed = 0;
    for entry in entries {
        let entry = entry?;
        let name = entry.file_name();
        let Some(begun) = name
            .to_str()
            .and_then(|n| n.strip_prefix('.')?.strip_suffix(".partial"))
            .and_then(parse_file_name)
        else {
            continue;
        };
        if now - begun > chrono::Duration::hours(1) {
            remove_with_companions(&entry.path())?;
            removed += 1;
        }
    }
    Ok(removed)
}

/// The engine's backup task: a check at start, then every hour, until `stop` is notified (a
/// backup under way finishes first). The copy runs on the blocking pool.
pub async fn run(
    store: Arc<Store>,
    clock: Arc<dyn Clock>,
    dir: PathBuf,
    config: BackupConfig,
    stop: Arc<Notify>,
) {
    loop {
        let (store, clock, dir, config) = (
            Arc::clone(&store),
            Arc::clone(&clock),
            dir.clone(),
            config.clone(),
        );
        let outcome =
            in_background_thread(move || check(&store, clock.as_ref(), &dir, &config)).await;
        match outcome {
            Ok(Ok(Some(backup))) => tracing::info!(
                file = %backup.path.display(),
                size = backup.size,
                "database backed up"
            ),
            Ok(Ok(None)) => {}
            Ok(Err(e)) => tracing::error!(
                error = format!("{e:#}"),
                "the database backup failed; it is tried again at the next hourly check"
            ),
            Err(e) => tracing::error!(error = %e, "the database backup stopped unexpectedly"),
        }
        tokio::select! {
            _ = tokio::time::sleep(CHECK_EVERY) => {}
            _ = stop.notified() => break,
        }
    }
}

/// Runs `work` on a thread of its own at the lowest CPU priority: a backup copies and checks the
/// whole file (seconds of CPU for a large database), and requests arriving meanwhile must keep
/// the cores. Not the blocking pool, whose threads the group commit reuses: a lowered priority
/// would stay with the thread.
async fn in_background_thread<T: Send + 'static>(
    work: impl FnOnce() -> T + Send + 'static,
) -> Result<T, tokio::sync::oneshot::error::RecvError> {
    let (done, outcome) = tokio::sync::oneshot::channel();
    let spawned = std::thread::Builder::new()
        .name("backup".into())
        .spawn(move || {
            lower_own_priority();
            let _ = done.send(work());
        });
    if let Err(e) = spawned {
        tracing::error!(error = %e, "could not start the backup thread");
    }
    outcome.await
}

/// Nice 19 for the calling thread (Linux keeps a nice value per thread); elsewhere, and if
/// refused, the thread keeps the normal priority.
fn lower_own_priority() {
    #[cfg(target_os = "linux")]
    // SAFETY: setpriority only reads its integer arguments; `who` 0 names the calling thread.
    unsafe {
        libc::setpriority(libc::PRIO_PROCESS, 0, 19);
    }
}

/// Checks that `path` is a sound mandato database this binary can open (after migrating it),
/// and leaves it a single self-contained file (rollback journal, no WAL). Answers its schema
/// version.
pub fn check_database(path: &Path) -> anyhow::Result<i64> {
    mandato_store::sqlite_file::check_database(path)
}

/// Held by a running engine: `restore` cannot take the data directory from under it.
#[derive(Debug)]
pub struct EngineLock(
    // Never read: holding the open file holds the lock, and dropping it releases it.
    #[allow(dead_code)] File,
);

/// Takes the engine's shared lock on `DATA_DIR/mandato.lock` (creating the directory, private,
/// when it does not exist).
pub fn lock_engine(data_dir: &Path) -> anyhow::Result<EngineLock> {
    let file = open_lock_file(data_dir)?;
    match file.try_lock_shared() {
        Ok(()) => Ok(EngineLock(file)),
        Err(fs::TryLockError::WouldBlock) => anyhow::bail!(
            "a restore is under way on {}; start mandato again when it has finished",
            data_dir.display()
        ),
        Err(fs::TryLockError::Error(e)) => {
            Err(e).with_context(|| format!("locking {}", data_dir.join(LOCK_FILE).display()))
        }
    }
}

fn open_lock_file(data_dir: &Path) -> anyhow::Result<File> {
    if !data_dir.exists() {
        create_private_dir(data_dir).with_context(|| format!("creating {}", data_dir.display()))?;
    }
    let path = data_dir.join(LOCK_FILE);
    let mut options = OpenOptions::new();
    options.read(true).write(true).create(true).truncate(false);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    options
        .open(&path)
        .with_context(|| format!("opening {}", path.display()))
}

/// What `restore` did.
#[derive(Debug)]
pub struct Restored {
    pub database: PathBuf,
    /// Where the database it replaced now is, when there was one.
    pub replaced: Option<PathBuf>,
    pub schema_version: i64,
}

/// Puts `backup` in place of `DATA_DIR/mandato.db`, keeping the database it replaces (its WAL
/// checkpointed into it first) as `mandato.db.replaced-<stamp>`. Refused while an engine runs
/// on the directory; nothing changes unless the backup is a sound mandato database.
pub fn restore(data_dir: &Path, backup: &Path, now: DateTime<Utc>) -> anyhow::Result<Restored> {
    let meta = fs::metadata(backup).with_context(|| format!("reading {}", backup.display()))?;
    anyhow::ensure!(meta.is_file(), "{} is not a file", backup.display());
    let lock = open_lock_file(data_dir)?;
    match lock.try_lock() {
        Ok(()) => {}
        Err(fs::TryLockError::WouldBlock) => anyhow::bail!(
            "mandato is running on {}: stop mandato first, then restore",
            data_dir.display()
        ),
        Err(fs::TryLockError::Error(e)) => return Err(e).context("locking the data directory"),
    }
    let database = data_dir.join("mandato.db");
    let incoming = data_dir.join(".mandato.db.restoring");
    remove_with_companions(&incoming)?;
    copy_private(backup, &incoming).with_context(|| format!("copying {}", backup.display()))?;
    let schema_version = match check_database(&incoming) {
        Ok(version) => version,
        Err(e) => {
            let _ = remove_with_companions(&incoming);
            return Err(e.context(format!(
                "{} cannot be restored; nothing was changed",
                backup.display()
            )));
        }
    };
    let replaced = if database.exists() {
        checkpoint(&database);
        let replaced = unused_replaced_name(data_dir, now);
        fs::rename(&database, &replaced)?;
        // What the checkpoint could not fold in goes along, where SQLite looks for it.
        for suffix in COMPANION_SUFFIXES {
            let beside = companion(&database, suffix);
            if beside.exists() {
                fs::rename(&beside, companion(&replaced, suffix))?;
            }
        }
        Some(replaced)
    } else {
        for suffix in COMPANION_SUFFIXES {
            remove_if_exists(&companion(&database, suffix))?;
        }
        None
    };
    fs::rename(&incoming, &database)?;
    sync_dir(data_dir);
    drop(lock);
    Ok(Restored {
        database,
        replaced,
        schema_version,
    })
}

/// `mandato.db.replaced-<stamp>`, or `-<stamp>-2`, `-3`, ... when restores follow each other
/// within a second: a replaced database is never overwritten.
fn unused_replaced_name(data_dir: &Path, now: DateTime<Utc>) -> PathBuf {
    let stamp = now.format("%Y%m%dT%H%M%SZ").to_string();
    let taken =
        |p: &Path| p.exists() || COMPANION_SUFFIXES.iter().any(|s| companion(p, s).exists());
    let first = data_dir.join(format!("mandato.db.replaced-{stamp}"));
    if !taken(&first) {
        return first;
    }
    (2..)
        .map(|n| data_dir.join(format!("mandato.db.replaced-{stamp}-{n}")))
        .find(|p| !taken(p))
        .expect("an unused name")
}

/// Folds the WAL into the database file, so the replaced file is whole on its own. A database
/// too damaged to open keeps its WAL beside it instead.
fn checkpoint(database: &Path) {
    if let Err(e) = mandato_store::sqlite_file::fold_wal(database) {
        tracing::warn!(error = %e, "could not checkpoint the replaced database; its WAL is kept beside it");
    }
}

fn remove_if_exists(path: &Path) -> io::Result<()> {
    match fs::remove_file(path) {
        Err(e) if e.kind() != io::ErrorKind::NotFound => Err(e),
        _ => Ok(()),
    }
}

/// A temporary database and whatever journal SQLite left beside it.
fn remove_with_companions(path: &Path) -> io::Result<()> {
    remove_if_exists(path)?;
    for suffix in COMPANION_SUFFIXES {
        remove_if_exists(&companion(path, suffix))?;
    }
    Ok(())
}

/// Copies `from` to the new file `to`, readable by its owner only from its first byte.
fn copy_private(from: &Path, to: &Path) -> io::Result<()> {
    let mut source = File::open(from)?;
    let mut options = OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    let mut dest = options.open(to)?;
    #[cfg(unix)]
    fs::set_permissions(to, std::os::unix::fs::PermissionsExt::from_mode(0o600))?;
    io::copy(&mut source, &mut dest)?;
    dest.sync_all()
}

/// Closes an existing backups directory (`0700`) and its files (`0600`) to other users, as the
/// data directory and the database are at start: a backup is the whole database, secrets
/// included. An installation whose backups were made under a wide umask, or copied in, says
/// so in the log once.
pub fn tighten(dir: &Path) -> io::Result<()> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let private = |path: &Path, mode: u32| -> io::Result<bool> {
            let was = fs::symlink_metadata(path)?.permissions().mode() & 0o777;
            if was & 0o077 == 0 {
                return Ok(false);
            }
            fs::set_permissions(path, fs::Permissions::from_mode(mode))?;
            Ok(true)
        };
        if !dir.is_dir() {
            return Ok(());
        }
        let opened_dir = private(dir, 0o700)?;
        let mut opened_files = 0;
        for entry in fs::read_dir(dir)? {
            let entry = entry?;
            // Links are not followed: what they point at is not the engine's to change.
            if entry.file_type()?.is_file() && private(&entry.path(), 0o600)? {
                opened_files += 1;
            }
        }
        if opened_dir || opened_files > 0 {
            tracing::warn!(
                directory = %dir.display(),
                files = opened_files,
                "backups were readable by other users; the directory is now 0700 and its files 0600"
            );
        }
    }
    Ok(())
}

/// Creates `dir` (and its parents) `0700`, as the data directory is.
fn create_private_dir(dir: &Path) -> io::Result<()> {
    if dir.is_dir() {
        return Ok(());
    }
    let mut builder = fs::DirBuilder::new();
    builder.recursive(true);
    #[cfg(unix)]
    std::os::unix::fs::DirBuilderExt::mode(&mut builder, 0o700);
    builder.create(dir)
}

/// Makes a rename durable; where directories cannot be opened the rename stands as it is.
fn sync_dir(dir: &Path) {
    if let Ok(d) = File::open(dir) {
        let _ = d.sync_all();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;
    use rusqlite::Connection;

    fn at(y: i32, m: u32, d: u32, h: u32) -> DateTime<Utc> {
        Utc.with_ymd_and_hms(y, m, d, h, 0, 0).unwrap()
    }

    fn nz(n: u32) -> NonZeroU32 {
        NonZeroU32::new(n).unwrap()
    }

    #[cfg(unix)]
    #[test]
    fn existing_backups_are_closed_to_other_users_at_start() {
        use std::os::unix::fs::PermissionsExt;
        let root = tempfile::tempdir().unwrap();
        let dir = root.path().join(DIR_NAME);
        fs::create_dir(&dir).unwrap();
        fs::set_permissions(&dir, fs::Permissions::from_mode(0o755)).unwrap();
        let file = dir.join(file_name(at(2026, 11, 1, 3)));
        fs::write(&file, b"a backup").unwrap();
        fs::set_permissions(&file, fs::Permissions::from_mode(0o644)).unwrap();
        tighten(&dir).unwrap();
        let mode = |p: &Path| fs::metadata(p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode(&dir), 0o700);
        assert_eq!(mode(&file), 0o600);
        tighten(&root.path().join("absent")).unwrap();
    }

    #[test]
    fn restores_within_one_second_keep_every_replaced_database() {
        let dir = tempfile::tempdir().unwrap();
        let now = at(2026, 11, 25, 17);
        let first = unused_replaced_name(dir.path(), now);
        assert!(first.ends_with("mandato.db.replaced-20261125T170000Z"));
        fs::write(&first, b"one").unwrap();
        let second = unused_replaced_name(dir.path(), now);
        assert!(second.ends_with("mandato.db.replaced-20261125T170000Z-2"));
        fs::write(companion(&second, "-wal"), b"wal").unwrap();
        let third = unused_replaced_name(dir.path(), now);
        assert!(third.ends_with("mandato.db.replaced-20261125T170000Z-3"));
    }

    #[test]
    fn names_round_trip_and_strangers_are_ignored() {
        let t = Utc.with_ymd_and_hms(2026, 11, 25, 3, 15, 9).unwrap();
        assert_eq!(file_name(t), "mandato-2026-11-25T031509Z.db");
        assert_eq!(parse_file_name(&file_name(t)), Some(t));
        for other in [
            "mandato.db",
            "mandato-2026-11-25T031509Z.db-wal",
            ".mandato-2026-11-25T031509Z.db.partial",
            "mandato-2026-11-25T03:15:09Z.db",
            "mandato-2026-13-25T031509Z.db",
        ] {
            assert_eq!(parse_file_name(other), None, "{other}");
        }
    }

    #[test]
    fn the_day_is_santiagos_not_utcs() {
        // 02:00 UTC on 25 November is still the 24th in Santiago (UTC-3 in summer).
        assert_eq!(
            day_of(at(2026, 11, 25, 2)),
            NaiveDate::from_ymd_opt(2026, 11, 24).unwrap()
        );
        assert!(!is_due(&[at(2026, 11, 24, 12)], at(2026, 11, 25, 2)));
        assert!(is_due(&[at(2026, 11, 24, 12)], at(2026, 11, 25, 4)));
        assert!(is_due(&[], at(2026, 11, 25, 4)));
    }

    #[test]
    fn one_a_day_for_sixty_days_keeps_seven_days_and_four_weeks() {
        // Daily at 12:00 UTC (09:00 in Santiago) from 1 September to 30 October 2026.
        let start = at(2026, 9, 1, 12);
        let taken: Vec<_> = (0..60).map(|d| start + chrono::Duration::days(d)).collect();
        let keep = kept(&taken, nz(7), 4);
        let days: Vec<String> = keep.iter().rev().map(|t| day_of(*t).to_string()).collect();
        // 24–30 October daily; then the newest of each older ISO week: Friday 23 October
        // (week 43), Sunday 18 October (week 42), the 11th (41) and the 4th (40).
        assert_eq!(
            days,
            [
                "2026-10-30",
                "2026-10-29",
                "2026-10-28",
                "2026-10-27",
                "2026-10-26",
                "2026-10-25",
                "2026-10-24",
                "2026-10-23",
                "2026-10-18",
                "2026-10-11",
                "2026-10-04",
            ]
        );
    }

    #[test]
    fn the_newest_of_a_day_wins_and_gaps_do_not_count_as_days() {
        let taken = [
            at(2026, 11, 20, 13),
            at(2026, 11, 20, 15), // the newest of the 20th
            at(2026, 11, 10, 15),
            at(2026, 11, 1, 15),
        ];
        let keep = kept(&taken, nz(2), 0);
        assert_eq!(
            keep,
            BTreeSet::from([at(2026, 11, 20, 15), at(2026, 11, 10, 15)])
        );
        // Days without a backup are skipped: the last seven days *that have one* are kept.
        let all = kept(&taken, nz(7), 0);
        assert_eq!(all.len(), 3);
        assert!(!all.contains(&at(2026, 11, 20, 13)));
    }

    #[test]
    fn weeks_count_only_the_backups_older_than_the_kept_days() {
        // Two a week, on Monday and Thursday, for ten weeks from Monday 7 September 2026.
        let monday = at(2026, 9, 7, 15);
        let taken: Vec<_> = (0..10)
            .flat_map(|w| {
                let week = monday + chrono::Duration::weeks(w);
                [week, week + chrono::Duration::days(3)]
            })
            .collect();
        let keep = kept(&taken, nz(3), 2);
        let days: Vec<String> = keep.iter().rev().map(|t| day_of(*t).to_string()).collect();
        // Days: Thu 12 Nov, Mon 9 Nov, Thu 5 Nov. Weeks: Mon 2 Nov (the rest of week 45),
        // then Thu 29 Oct (week 44).
        assert_eq!(
            days,
            [
                "2026-11-12",
                "2026-11-09",
                "2026-11-05",
                "2026-11-02",
                "2026-10-29"
            ]
        );
    }

    #[test]
    fn rotation_deletes_what_is_not_kept_and_leaves_other_files() {
        let dir = tempfile::tempdir().unwrap();
        let start = at(2026, 10, 1, 12);
        for d in 0..20 {
            let t = start + chrono::Duration::days(d);
            fs::write(dir.path().join(file_name(t)), b"backup").unwrap();
        }
        fs::write(dir.path().join("notes.txt"), b"mine").unwrap();
        let config = BackupConfig {
            enabled: true,
            keep_daily: nz(5),
            keep_weekly: 1,
        };
        let removed = rotate(dir.path(), &config).unwrap();
        assert_eq!(removed.len(), 14);
        let left: Vec<String> = list(dir.path())
            .unwrap()
            .iter()
            .map(|b| day_of(b.taken_at).to_string())
            .collect();
        // 16–20 October, then Thursday 15 October, the newest of week 42 before them.
        assert_eq!(
            left,
            [
                "2026-10-20",
                "2026-10-19",
                "2026-10-18",
                "2026-10-17",
                "2026-10-16",
                "2026-10-15"
            ]
        );
        assert!(dir.path().join("notes.txt").exists());
        // Idempotent: nothing more to remove.
        assert!(rotate(dir.path(), &config).unwrap().is_empty());
    }

    /// The copy is taken in steps with pauses between them; writes go on meanwhile, and the
    /// copy still finishes (it reads one snapshot, so other connections' commits do not make
    /// it start over) and holds the data as it was when it began.
    #[test]
    fn a_backup_finishes_while_writes_keep_coming() {
        use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
        let dir = tempfile::tempdir().unwrap();
        let store = Arc::new(Store::open(&dir.path().join("mandato.db")).unwrap());
        let filler = "x".repeat(1000);
        store
            .write(|tx| {
                for i in 0..4000 {
                    mandato_store::settings::set(tx, &format!("filler-{i}"), &filler)?;
                }
                Ok(())
            })
            .unwrap();
        let stop = Arc::new(AtomicBool::new(false));
        let written = Arc::new(AtomicUsize::new(0));
        let writer = {
            let (store, stop, written) =
                (Arc::clone(&store), Arc::clone(&stop), Arc::clone(&written));
            std::thread::spawn(move || {
                while !stop.load(Ordering::Relaxed) {
                    let n = written.fetch_add(1, Ordering::Relaxed);
                    store
                        .write(|tx| {
                            Ok(mandato_store::settings::set(
                                tx,
                                &format!("during-{n}"),
                                "v",
                            )?)
                        })
                        .unwrap();
                }
            })
        };
        while written.load(Ordering::Relaxed) < 10 {
            std::thread::yield_now();
        }
        let backups = dir.path().join(DIR_NAME);
        let before = written.load(Ordering::Relaxed);
        let started = std::time::Instant::now();
        let backup = take(&store, &backups, Utc::now()).unwrap();
        let took = started.elapsed();
        let during = written.load(Ordering::Relaxed) - before;
        stop.store(true, Ordering::Relaxed);
        writer.join().unwrap();
        eprintln!(
            "backup of {} bytes in {took:?}; {during} writes committed meanwhile",
            backup.size
        );
        assert!(during > 0, "writes went on while the backup ran");
        assert_eq!(
            check_database(&backup.path).unwrap(),
            mandato_store::migrations::latest_version()
        );
        let copied: i64 = Connection::open(&backup.path)
            .unwrap()
            .query_row(
                "SELECT count(*) FROM settings WHERE name LIKE 'filler-%'",
                [],
                |r| r.get(0),
            )
            .unwrap();
        assert_eq!(copied, 4000);
    }

    #[test]
    fn copies_a_crash_interrupted_are_removed_an_hour_later() {
        let dir = tempfile::tempdir().unwrap();
        let now = at(2026, 11, 25, 12);
        let old = dir
            .path()
            .join(format!(".{}.partial", file_name(at(2026, 11, 24, 12))));
        let young = dir.path().join(format!(
            ".{}.partial",
            file_name(now - chrono::Duration::minutes(5))
        ));
        let backup = dir.path().join(file_name(at(2026, 11, 20, 12)));
        for file in [&old, &young, &backup] {
            fs::write(file, b"pages").unwrap();
        }
        fs::write(companion(&old, "-journal"), b"journal").unwrap();
        assert_eq!(remove_abandoned_partials(dir.path(), now).unwrap(), 1);
        assert!(!old.exists() && !companion(&old, "-journal").exists());
        assert!(young.exists() && backup.exists());
    }

    #[test]
    fn a_file_that_is_not_a_mandato_database_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let text = dir.path().join("text.db");
        fs::write(&text, b"not a database at all, just some words").unwrap();
        assert!(check_database(&text).is_err());
        let other = dir.path().join("other.db");
        Connection::open(&other)
            .unwrap()
            .execute_batch("CREATE TABLE notes (body TEXT); PRAGMA user_version = 1;")
            .unwrap();
        let refusal = check_database(&other).unwrap_err().to_string();
        assert!(refusal.contains("not a mandato database"), "{refusal}");
    }
}
