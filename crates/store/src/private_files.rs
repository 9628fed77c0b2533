//! The data directory and the database hold the environment's private keys, the development
//! CA's key and every commerce's webhook secret, so nobody but the installation's own user may
//! read them (CONTRACT 12, "Files"): the directory is `0700`, the database and its WAL and SHM
//! files `0600`. Modes are set explicitly, whatever the umask, and an older installation made
//! with wider modes is tightened at start (and says so in the log).

use std::fs::{self, OpenOptions};
use std::io;
use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::Path;

const DIR_MODE: u32 = 0o700;
const FILE_MODE: u32 = 0o600;

/// Makes the database's directory (private) and the database file (private, empty: SQLite
/// treats an empty file as a new database), or tightens them when they exist.
pub(super) fn prepare(db: &Path) -> io::Result<()> {
    if let Some(dir) = db.parent().filter(|d| !d.as_os_str().is_empty()) {
        if dir.exists() {
            tighten_dir(dir)?;
        } else {
            fs::DirBuilder::new()
                .recursive(true)
                .mode(DIR_MODE)
                .create(dir)?;
        }
    }
    match OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(FILE_MODE)
        .open(db)
    {
        Ok(_) => set_mode(db, FILE_MODE),
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => tighten_file(db),
        Err(e) => Err(e),
    }
}

/// Tightens the WAL and SHM files beside the database, where they exist.
pub(super) fn tighten_companions(db: &Path) -> io::Result<()> {
    for suffix in super::COMPANION_SUFFIXES {
        let path = super::companion(db, suffix);
        if path.exists() {
            tighten_file(&path)?;
        }
    }
    Ok(())
}

/// Creates `path` (which must not exist) readable by its owner only.
pub(super) fn create_private(path: &Path) -> io::Result<()> {
    OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(FILE_MODE)
        .open(path)?;
    // `mode` at creation is filtered by the umask; this is not.
    set_mode(path, FILE_MODE)
}

fn set_mode(path: &Path, mode: u32) -> io::Result<()> {
    fs::set_permissions(path, fs::Permissions::from_mode(mode))
}

fn tighten_file(path: &Path) -> io::Result<()> {
    let mode = fs::metadata(path)?.mode() & 0o777;
    if mode & !FILE_MODE != 0 {
        set_mode(path, FILE_MODE)?;
        tracing::warn!(
            file = %path.display(),
            was = format!("{mode:04o}"),
            "the file was readable by other users; it is now 0600"
        );
    }
    Ok(())
}

fn tighten_dir(dir: &Path) -> io::Result<()> {
    let meta = fs::metadata(dir)?;
    let mode = meta.mode() & 0o7777;
    if mode & 0o077 == 0 {
        return Ok(());
    }
    // A shared directory (`/tmp`, with its sticky bit) given as the data directory is not ours
    // to close: the files in it are private all the same.
    if mode & 0o1000 != 0 {
        tracing::warn!(
            directory = %dir.display(),
            "the data directory is shared with other users; keep mandato's data in its own directory"
        );
        return Ok(());
    }
    set_mode(dir, DIR_MODE)?;
    tracing::warn!(
        directory = %dir.display(),
        was = format!("{:04o}", mode & 0o777),
        "the data directory was open to other users; it is now 0700"
    );
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mode(path: &Path) -> u32 {
        fs::metadata(path).unwrap().mode() & 0o777
    }

    #[test]
    fn a_sticky_shared_directory_is_left_alone() {
        let root = tempfile::tempdir().unwrap();
        let shared = root.path().join("shared");
        fs::create_dir(&shared).unwrap();
        set_mode(&shared, 0o1777).unwrap();
        prepare(&shared.join("mandato.db")).unwrap();
        assert_eq!(fs::metadata(&shared).unwrap().mode() & 0o7777, 0o1777);
        assert_eq!(mode(&shared.join("mandato.db")), 0o600);
    }
}
