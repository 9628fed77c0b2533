//! The staff audit's hash chain: staff actions over the staff API chain on one another, and
//! `mandato audit verify` (the real binary) and `GET /admin/api/audit/verify` find it intact;
//! a record changed or removed in the file while the engine is stopped is named by both; the
//! chain survives a backup (taken by the command or by the engine) and a restore and goes on
//! after it; concurrent actions never fork it.
//! The command checks the signature processes' trails as well.

use std::path::Path;
use std::process::Stdio;

use mandato::backups;
use reqwest::StatusCode;
use serde_json::{Value, json};

use crate::cli::{mandato, serve};
use crate::helpers::*;

/// The command's report when every chain holds: `records` staff actions, no signature process.
fn intact(records: i64) -> Value {
    json!({"ok": true, "records": records,
           "signatureProcesses": {"checked": 0, "broken": []}})
}

/// A signed-in staff member of the engine at `base`: the session cookie and the CSRF token.
struct Desk {
    client: reqwest::Client,
    base: String,
    cookie: String,
    csrf: String,
}

impl Desk {
    /// Sets the installation up; the owner is signed in by it.
    async fn owner(base: &str) -> Desk {
        let client = reqwest::Client::new();
        let reply = client
            .post(format!("{base}/admin/api/setup"))
            .json(&json!({"email": "owner@merchant.example", "password": "a long password"}))
            .send()
            .await
            .unwrap();
        assert_eq!(reply.status(), StatusCode::CREATED);
        Desk::adopt(client, base, reply).await
    }

    async fn sign_in(base: &str) -> Desk {
        let client = reqwest::Client::new();
        let reply = client
            .post(format!("{base}/admin/api/session"))
            .json(&json!({"email": "owner@merchant.example", "password": "a long password"}))
            .send()
            .await
            .unwrap();
        assert_eq!(reply.status(), StatusCode::OK);
        Desk::adopt(client, base, reply).await
    }

    async fn adopt(client: reqwest::Client, base: &str, reply: reqwest::Response) -> Desk {
        let cookie = reply.headers()["set-cookie"]
            .to_str()
            .unwrap()
            .split(';')
            .next()
            .unwrap()
            .to_string();
        let body: Value = reply.json().await.unwrap();
        Desk {
            client,
            base: base.to_string(),
            cookie,
            csrf: body["payload"]["csrfToken"].as_str().unwrap().to_string(),
        }
    }

    async fn call(&self, method: reqwest::Method, path: &str, body: Option<Value>) -> Value {
        let mut request = self
            .client
            .request(method.clone(), format!("{}/admin/api{path}", self.base))
            .header("cookie", &self.cookie)
            .header("x-csrf-token", &self.csrf);
        if let Some(body) = body {
            request = request.json(&body);
        }
        let reply = request.send().await.unwrap();
        let status = reply.status();
        let body: Value = reply.json().await.unwrap();
        assert!(status.is_success(), "{method} {path}: {status} {body}");
        body
    }

    /// Three staff actions: the request audit's retention, an API key, a staff account.
    async fn act(&self, days: i64) {
        self.call(
            reqwest::Method::PUT,
            "/settings/audit-retention",
            Some(json!({"days": days})),
        )
        .await;
        self.call(reqwest::Method::POST, "/api-keys", Some(json!({})))
            .await;
        self.call(
            reqwest::Method::POST,
            "/staff",
            Some(json!({"email": format!("viewer{days}@merchant.example"),
                        "password": "ten or more chars", "role": "viewer"})),
        )
        .await;
    }

    async fn verify(&self) -> Value {
        let body = self.call(reqwest::Method::GET, "/audit/verify", None).await;
        assert_eq!(body["name"], "AUDIT_CHAIN_CHECKED");
        body["payload"].clone()
    }
}

/// `mandato audit verify` with `--json`: its JSON and exit code.
fn cli_verify(data: &Path) -> (Value, i32) {
    let out = crate::helpers::cli_command(data)
        .args(["--json", "audit", "verify"])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("no JSON ({e}): {}", String::from_utf8_lossy(&out.stdout)));
    (value, out.status.code().unwrap())
}

/// `mandato audit verify` without `--json`: its text and exit code.
fn cli_verify_text(data: &Path) -> (String, i32) {
    let out = crate::helpers::cli_command(data)
        .args(["audit", "verify"])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        out.status.code().unwrap(),
    )
}

fn open(data: &Path) -> rusqlite::Connection {
    rusqlite::Connection::open(data.join("mandato.db")).unwrap()
}

fn count(data: &Path) -> i64 {
    crate::helpers::store_of(data)
        .read(|db| Ok(db.query_row("SELECT count(*) FROM staff_audit", &[], |r| r.get(0))?))
        .unwrap()
}

/// The `(seq, at)` of the staff audit record of `action`.
fn record_of(data: &Path, action: &str) -> (i64, String) {
    open(data)
        .query_row(
            "SELECT seq, at FROM staff_audit WHERE action = ?1 ORDER BY seq LIMIT 1",
            [action],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .unwrap()
}

fn stop(mut server: std::process::Child) {
    server.kill().unwrap();
    server.wait().unwrap();
}

#[tokio::test(flavor = "multi_thread")]
async fn a_changed_or_removed_record_is_named_by_the_cli_and_the_staff_api() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path();
    let (server, url) = serve(data);
    let desk = Desk::owner(&url).await;
    desk.act(30).await;
    let records = count(data);
    assert!(records >= 4, "setup and three actions: {records}");

    assert_eq!(
        desk.verify().await,
        json!({"ok": true, "records": records, "broken": null})
    );
    // Beside the running engine, as every command can.
    assert_eq!(cli_verify(data), (intact(records), 0));
    stop(server);

    let (seq, at) = record_of(data, "audit-retention.set");
    open(data)
        .execute(
            "UPDATE staff_audit SET detail = 'days=3650' WHERE seq = ?1",
            [seq],
        )
        .unwrap();
    let (report, code) = cli_verify(data);
    assert_eq!(code, 1, "{report}");
    assert_eq!(report["ok"], false);
    assert_eq!(report["records"], seq - 1);
    assert_eq!(
        report["broken"],
        json!({"seq": seq, "at": at, "problem": "HASH_MISMATCH",
               "message": "its fields do not match its hash: the record was changed"})
    );
    assert_eq!(report["error"]["name"], "AUDIT_CHAIN_BROKEN");
    let (text, code) = cli_verify_text(data);
    assert_eq!(code, 1);
    assert!(
        text.starts_with(&format!("staff audit chain broken at record {seq} ({at})")),
        "{text}"
    );

    let (server, url) = serve(data);
    let desk = Desk::sign_in(&url).await;
    let checked = desk.verify().await;
    assert_eq!(checked["ok"], false);
    assert_eq!(checked["broken"]["seq"], seq);
    assert_eq!(checked["broken"]["at"], at.as_str());
    assert_eq!(checked["broken"]["problem"], "HASH_MISMATCH");
    stop(server);

    // The original value back, the chain holds again; a removed record breaks its successor.
    open(data)
        .execute(
            "UPDATE staff_audit SET detail = 'days=30' WHERE seq = ?1",
            [seq],
        )
        .unwrap();
    assert_eq!(cli_verify(data).1, 0);
    open(data)
        .execute("DELETE FROM staff_audit WHERE seq = ?1", [seq])
        .unwrap();
    let (report, code) = cli_verify(data);
    assert_eq!(code, 1);
    assert_eq!(report["broken"]["seq"], seq + 1);
    assert_eq!(report["broken"]["problem"], "BROKEN_LINK");

    // Removing the last records is noticed too.
    open(data)
        .execute("DELETE FROM staff_audit WHERE seq >= ?1", [seq])
        .unwrap();
    let (report, code) = cli_verify(data);
    assert_eq!(code, 1);
    assert_eq!(report["broken"]["problem"], "RECORDS_MISSING");
    assert_eq!(report["broken"]["seq"], seq);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_restored_backup_verifies_and_new_records_chain_on_after_it() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path();
    let backup = dir.path().join("kept.db");
    let (server, url) = serve(data);
    let desk = Desk::owner(&url).await;
    desk.act(30).await;
    let at_backup = count(data);
    mandato(data, &["backup", backup.to_str().unwrap()], None);
    desk.act(60).await;
    stop(server);
    let full = count(data);
    assert!(full > at_backup);

    // The engine's own backup, taken at its next start (the first start's came before any
    // staff action).
    std::fs::remove_dir_all(backups::directory(data)).unwrap();
    let (server, _) = serve(data);
    let automatic = automatic_backup(data);
    stop(server);

    mandato(data, &["restore", backup.to_str().unwrap()], None);
    assert_eq!(count(data), at_backup);
    assert_eq!(cli_verify(data), (intact(at_backup), 0));

    let (server, url) = serve(data);
    let desk = Desk::sign_in(&url).await;
    desk.act(90).await;
    let after = count(data);
    assert_eq!(after, at_backup + 4, "a sign-in and three actions");
    assert_eq!(
        desk.verify().await,
        json!({"ok": true, "records": after, "broken": null})
    );
    stop(server);
    assert_eq!(cli_verify(data), (intact(after), 0));

    mandato(data, &["restore", automatic.to_str().unwrap()], None);
    assert_eq!(cli_verify(data), (intact(full), 0));
}

/// The path of the first automatic backup in `data`, once the engine has renamed it into place.
fn automatic_backup(data: &Path) -> std::path::PathBuf {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(120);
    loop {
        if let Some(backup) = backups::list(&backups::directory(data)).unwrap().pop() {
            return backup.path;
        }
        assert!(std::time::Instant::now() < deadline, "no automatic backup");
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn concurrent_staff_actions_never_fork_the_chain() {
    let app = spawn_app().await;
    let desk = std::sync::Arc::new(Desk::owner(&app.base).await);
    let data = app.dir.path();
    let before = count(data);
    let mut actions = tokio::task::JoinSet::new();
    for i in 0..24 {
        let desk = desk.clone();
        actions.spawn(async move {
            if i % 2 == 0 {
                desk.call(
                    reqwest::Method::PUT,
                    "/settings/audit-retention",
                    Some(json!({"days": 10 + i})),
                )
                .await
            } else {
                desk.call(reqwest::Method::POST, "/api-keys", Some(json!({})))
                    .await
            }
        });
    }
    while let Some(done) = actions.join_next().await {
        done.unwrap();
    }

    let records = count(data);
    assert_eq!(records, before + 24);
    assert_eq!(
        desk.verify().await,
        json!({"ok": true, "records": records, "broken": null})
    );
    // One line: every record follows exactly the one before it.
    let links: i64 = crate::helpers::store_of(data)
        .read(|db| {
            Ok(db.query_row(
                "SELECT count(*) FROM staff_audit a JOIN staff_audit b ON b.prev_hash = a.hash
                 WHERE b.seq = a.seq + 1",
                &[],
                |r| r.get(0),
            )?)
        })
        .unwrap();
    assert_eq!(links, records - 1);
}

#[tokio::test(flavor = "multi_thread")]
async fn verification_needs_a_session() {
    let app = spawn_app().await;
    let reply = app
        .client
        .get(format!("{}/admin/api/audit/verify", app.base))
        .send()
        .await
        .unwrap();
    assert_eq!(reply.status(), StatusCode::UNAUTHORIZED);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_changed_signature_act_is_named_by_its_process() {
    use crate::signatures::{app_with_customers, create, simple_body};
    let app = app_with_customers().await;
    let first = create(&app, &simple_body(&[("cust-a", 1, "FES")])).await;
    let second = create(&app, &simple_body(&[("cust-b", 1, "FES")])).await;
    let data = app.dir.path();
    let (report, code) = cli_verify(data);
    assert_eq!(code, 0, "{report}");
    assert_eq!(
        report["signatureProcesses"],
        json!({"checked": 2, "broken": []})
    );

    let id = second["process"]["internalId"].as_str().unwrap();
    crate::helpers::store_of(data)
        .write(|db| {
            Ok(db.execute(
                "UPDATE signature_audit SET ip = '203.0.113.9' WHERE position = 1 AND process_seq =
                 (SELECT seq FROM signature_processes WHERE id = ?1)",
                &[id.into()],
            )?)
        })
        .unwrap();
    let (report, code) = cli_verify(data);
    assert_eq!(code, 1, "{report}");
    assert_eq!(report["ok"], false);
    assert_eq!(
        report["signatureProcesses"],
        json!({"checked": 2, "broken": [{"processId": id, "position": 1}]})
    );
    assert!(
        report.get("broken").is_none(),
        "the staff chain holds: {report}"
    );
    assert_eq!(report["error"]["name"], "AUDIT_CHAIN_BROKEN");
    assert_ne!(first["process"]["internalId"], id);
}

#[test]
fn a_data_directory_without_a_database_is_refused_not_found_intact() {
    let dir = tempfile::tempdir().unwrap();
    let message =
        crate::cli::assert_refused(dir.path(), &["audit", "verify"], "DATABASE_NOT_FOUND");
    assert!(message.contains("mandato.db"), "{message}");
    assert!(
        !dir.path().join("mandato.db").exists(),
        "no database was made"
    );
}
