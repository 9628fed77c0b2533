//! The data directory is private (CONTRACT 12, "Files"): the directory `0700`, the database and
//! its WAL and SHM `0600`, backups `0600`, and an older, wider installation is tightened at start.

use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::sync::Arc;

use mandato::app;
use mandato::clock::{Clock, SystemClock};
use mandato::config::Config;

fn mode(path: &Path) -> u32 {
    std::fs::metadata(path)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
        .permissions()
        .mode()
        & 0o777
}

fn companion(db: &Path, suffix: &str) -> std::path::PathBuf {
    let mut name = db.as_os_str().to_owned();
    name.push(suffix);
    name.into()
}

async fn start(data_dir: &Path) -> app::Running {
    let mut config = Config::new(data_dir.to_path_buf());
    config.listen = "127.0.0.1:0".parse().unwrap();
    app::start(config, Arc::new(SystemClock) as Arc<dyn Clock>)
        .await
        .expect("engine starts")
}

#[track_caller]
fn assert_private(data_dir: &Path) {
    let db = data_dir.join("mandato.db");
    assert_eq!(mode(data_dir), 0o700, "the data directory");
    for path in [db.clone(), companion(&db, "-wal"), companion(&db, "-shm")] {
        assert_eq!(mode(&path), 0o600, "{}", path.display());
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_new_installation_is_private() {
    let root = tempfile::tempdir().unwrap();
    // Made by the engine, below a directory that does not exist yet either.
    let data_dir = root.path().join("home/user/.local/share/mandato");
    let running = start(&data_dir).await;
    assert_private(&data_dir);
    running.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread")]
async fn a_wider_installation_is_tightened_at_start() {
    let root = tempfile::tempdir().unwrap();
    let data_dir = root.path().join("mandato");
    start(&data_dir).await.shutdown().await.unwrap();
    // As an older version left it: world-readable directory and files.
    let db = data_dir.join("mandato.db");
    std::fs::set_permissions(&data_dir, std::fs::Permissions::from_mode(0o755)).unwrap();
    for path in [db.clone(), companion(&db, "-wal"), companion(&db, "-shm")] {
        if path.exists() {
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
        }
    }
    assert_eq!(mode(&db), 0o644);
    let running = start(&data_dir).await;
    assert_private(&data_dir);
    running.shutdown().await.unwrap();
}

#[test]
fn backups_are_private() {
    let dir = tempfile::tempdir().unwrap();
    crate::cli::mandato(dir.path(), &["public-key"], None);
    let copy = dir.path().join("copy.db");
    crate::cli::mandato(dir.path(), &["backup", copy.to_str().unwrap()], None);
    assert_eq!(mode(&copy), 0o600);
    let keys: i64 = rusqlite::Connection::open(&copy)
        .unwrap()
        .query_row("SELECT count(*) FROM settings", [], |r| r.get(0))
        .unwrap();
    assert!(keys >= 2, "the copy holds the keys");
}
