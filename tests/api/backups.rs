//! Automatic backups and restore: an engine with backups on writes a sound one at start and
//! the staff API lists it; `mandato restore` (the real binary) brings a backup's data back,
//! keeps the database it replaced, and refuses while `mandato serve` runs on the directory.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use mandato::backups;
use reqwest::StatusCode;
use serde_json::{Value, json};

use crate::cli::{mandato, serve};
use crate::helpers::*;

const BIN: &str = env!("CARGO_BIN_EXE_mandato");

/// The first backup in `data`'s backups directory, once the engine has renamed it into place
/// (a file with a backup's name is always complete).
fn first_backup(data: &Path) -> backups::Backup {
    let dir = backups::directory(data);
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        if let Some(backup) = backups::list(&dir).unwrap().into_iter().next() {
            return backup;
        }
        assert!(
            Instant::now() < deadline,
            "no backup appeared in {}",
            dir.display()
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

fn mode(path: &Path) -> u32 {
    std::fs::metadata(path).unwrap().permissions().mode() & 0o777
}

fn integrity(path: &Path) -> String {
    let conn =
        rusqlite::Connection::open_with_flags(path, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY)
            .unwrap();
    conn.query_row("PRAGMA integrity_check", [], |r| r.get(0))
        .unwrap()
}

/// The commerce codes a database file holds, read beside whatever else has it open.
fn commerce_codes(db: &Path) -> Vec<String> {
    let conn =
        rusqlite::Connection::open_with_flags(db, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY)
            .unwrap();
    let mut stmt = conn
        .prepare("SELECT code FROM commerces ORDER BY code")
        .unwrap();
    stmt.query_map([], |r| r.get(0))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap()
}

fn add_commerce(data: &Path, code: &str) {
    mandato(
        data,
        &[
            "commerce",
            "add",
            "--code",
            code,
            "--name",
            "Comercio",
            "--password-stdin",
        ],
        Some("s3cret-pass\n"),
    );
}

/// `mandato --data-dir DATA --json ARGS`, whatever its outcome.
fn run(data: &Path, args: &[&str]) -> Output {
    Command::new(BIN)
        .arg("--data-dir")
        .arg(data)
        .arg("--json")
        .args(args)
        .stdin(Stdio::null())
        .output()
        .expect("mandato runs")
}

fn replaced_files(data: &Path) -> Vec<PathBuf> {
    std::fs::read_dir(data)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with("mandato.db.replaced-"))
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn an_engine_backs_up_at_start_and_staff_see_the_last_backup() {
    let app = spawn_app_with(Options {
        backups: true,
        ..Options::default()
    })
    .await;
    if crate::postgres::chosen() {
        // PostgreSQL's backups are the server's (`pg_dump`): the engine takes none, and staff
        // are told the automatic backups are off.
        tokio::time::sleep(Duration::from_secs(1)).await;
        assert!(!backups::directory(app.dir.path()).exists());
        let payload = staff_backups(&app).await;
        assert_eq!(payload["enabled"], false);
        assert_eq!(payload["items"], json!([]));
        return;
    }
    let data = app.dir.path().to_path_buf();
    let backup = tokio::task::spawn_blocking(move || first_backup(&data))
        .await
        .unwrap();

    assert_eq!(integrity(&backup.path), "ok");
    assert_eq!(mode(&backup.path), 0o600);
    assert_eq!(mode(&backups::directory(app.dir.path())), 0o700);
    assert_eq!(
        backups::day_of(backup.taken_at),
        backups::day_of(app.clock_now()),
        "today's backup, by Santiago's calendar"
    );
    // Nothing half-written is left beside it.
    let names: Vec<String> = std::fs::read_dir(backups::directory(app.dir.path()))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(names, std::slice::from_ref(&backup.file));

    let payload = staff_backups(&app).await;
    assert_eq!(payload["enabled"], true);
    let expected = json!({
        "file": backup.file,
        "takenAt": mandato::clock::timestamp(backup.taken_at),
        "sizeBytes": backup.size,
    });
    assert_eq!(payload["last"], expected);
    assert_eq!(payload["items"], json!([expected]));
}

/// `GET /admin/api/backups`: refused without a session, then read by the first owner.
async fn staff_backups(app: &TestApp) -> Value {
    let url = format!("{}/admin/api/backups", app.base);
    let anonymous = app.client.get(&url).send().await.unwrap();
    assert_eq!(anonymous.status(), StatusCode::UNAUTHORIZED);
    let refusal: Value = anonymous.json().await.unwrap();
    assert_eq!(refusal["name"], "SESSION_REQUIRED");

    let setup = app
        .client
        .post(format!("{}/admin/api/setup", app.base))
        .json(&json!({"email": "owner@merchant.example", "password": "a long password"}))
        .send()
        .await
        .unwrap();
    assert_eq!(setup.status(), StatusCode::CREATED);
    let cookie = setup.headers()["set-cookie"]
        .to_str()
        .unwrap()
        .split(';')
        .next()
        .unwrap()
        .to_string();
    let listed = app
        .client
        .get(&url)
        .header("cookie", cookie)
        .send()
        .await
        .unwrap();
    assert_eq!(listed.status(), StatusCode::OK);
    let body: Value = listed.json().await.unwrap();
    assert_eq!(body["name"], "BACKUPS_OK");
    body["payload"].clone()
}

#[tokio::test(flavor = "multi_thread")]
async fn restore_brings_the_backed_up_data_back_and_keeps_the_replaced_database() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path();
    add_commerce(data, "76123456-0");

    // `serve` backs up at start; it is then killed, leaving its WAL behind.
    let (mut server, _url) = serve(data);
    let backup = first_backup(data);
    server.kill().unwrap();
    server.wait().unwrap();

    let listed = mandato(data, &["backups"], None);
    assert_eq!(listed["backups"][0]["file"], backup.file.as_str());
    assert_eq!(listed["backups"][0]["size"], backup.size);

    add_commerce(data, "77000111-0");
    let db = data.join("mandato.db");
    assert_eq!(commerce_codes(&db), ["76123456-0", "77000111-0"]);

    let restored = mandato(data, &["restore", backup.path.to_str().unwrap()], None);
    let replaced = PathBuf::from(restored["replaced"].as_str().unwrap());
    assert_eq!(restored["database"], db.display().to_string());
    assert_eq!(replaced_files(data), std::slice::from_ref(&replaced));

    assert_eq!(
        commerce_codes(&db),
        ["76123456-0"],
        "the backup's data is back"
    );
    assert_eq!(
        commerce_codes(&replaced),
        ["76123456-0", "77000111-0"],
        "the replaced database is whole on its own"
    );
    assert_eq!(integrity(&db), "ok");
    assert_eq!(mode(&db), 0o600);
    assert_eq!(mode(&replaced), 0o600);
    for stale in ["mandato.db-wal", "mandato.db-shm", ".mandato.db.restoring"] {
        assert!(!data.join(stale).exists(), "{stale} is left");
    }
    // The backup itself is untouched, and the installation works on the restored database.
    assert_eq!(backups::list(&backups::directory(data)).unwrap(), [backup]);
    add_commerce(data, "78000222-0");
    assert_eq!(commerce_codes(&db), ["76123456-0", "78000222-0"]);
}

#[tokio::test(flavor = "multi_thread")]
async fn restore_is_refused_while_serve_runs_and_changes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path();
    add_commerce(data, "76123456-0");
    let (mut server, url) = serve(data);
    let backup = first_backup(data);
    add_commerce(data, "77000111-0");

    let refused = run(data, &["restore", backup.path.to_str().unwrap()]);
    assert!(!refused.status.success());
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert!(stderr.contains("stop mandato first"), "{stderr}");

    assert!(replaced_files(data).is_empty());
    assert!(!data.join(".mandato.db.restoring").exists());
    assert_eq!(
        commerce_codes(&data.join("mandato.db")),
        ["76123456-0", "77000111-0"]
    );
    // The engine serves on, untroubled.
    let setup = reqwest::get(format!("{url}/admin/api/setup"))
        .await
        .unwrap();
    assert_eq!(setup.status(), StatusCode::OK);

    server.kill().unwrap();
    server.wait().unwrap();
}

#[test]
fn a_file_that_is_not_a_mandato_backup_is_refused_and_changes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path();
    add_commerce(data, "76123456-0");
    let stranger = data.join("stranger.db");
    rusqlite::Connection::open(&stranger)
        .unwrap()
        .execute_batch("CREATE TABLE notes (body TEXT); PRAGMA user_version = 3;")
        .unwrap();

    let refused = run(data, &["restore", stranger.to_str().unwrap()]);
    assert!(!refused.status.success());
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert!(stderr.contains("not a mandato database"), "{stderr}");
    assert!(replaced_files(data).is_empty());
    assert!(!data.join(".mandato.db.restoring").exists());
    assert_eq!(commerce_codes(&data.join("mandato.db")), ["76123456-0"]);
}

/// Backups made under a wide umask (or copied in) are the whole database, secrets included:
/// `serve` closes their directory and files to other users at start, as it does the data
/// directory's.
#[tokio::test(flavor = "multi_thread")]
async fn serve_closes_existing_backups_to_other_users_at_start() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path();
    add_commerce(data, "76123456-0");
    let backups_dir = backups::directory(data);
    std::fs::create_dir(&backups_dir).unwrap();
    std::fs::set_permissions(&backups_dir, std::fs::Permissions::from_mode(0o755)).unwrap();
    let old = backups_dir.join("copied-by-hand.db");
    std::fs::write(&old, b"an old backup").unwrap();
    std::fs::set_permissions(&old, std::fs::Permissions::from_mode(0o644)).unwrap();

    let (mut server, _url) = serve(data);
    assert_eq!(mode(&backups_dir), 0o700);
    assert_eq!(mode(&old), 0o600);
    // The backup the engine then takes is private too.
    let taken = first_backup(data);
    assert_eq!(mode(&taken.path), 0o600);
    server.kill().unwrap();
    server.wait().unwrap();
}
