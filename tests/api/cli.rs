//! The `mandato` command line, run as a real process, including while `mandato serve` runs on
//! the same data directory.

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, Command, Stdio};

use serde_json::{Value, json};

const BIN: &str = env!("CARGO_BIN_EXE_mandato");

pub fn mandato(dir: &std::path::Path, args: &[&str], stdin: Option<&str>) -> Value {
    let mut child = Command::new(BIN)
        .arg("--data-dir")
        .arg(dir)
        .arg("--json")
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("mandato runs");
    if let Some(input) = stdin {
        child
            .stdin
            .take()
            .unwrap()
            .write_all(input.as_bytes())
            .unwrap();
    }
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "mandato {args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{args:?} printed no JSON ({e}): {:?}", out.stdout))
}

/// Starts `mandato serve` on a free port and returns it with its base URL.
pub fn serve(dir: &std::path::Path) -> (Child, String) {
    let mut child = Command::new(BIN)
        .arg("--data-dir")
        .arg(dir)
        .args(["serve", "--listen", "127.0.0.1:0"])
        .stderr(Stdio::piped())
        .spawn()
        .expect("serve starts");
    let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
    let url = loop {
        let line = lines.next().expect("serve logs its URL").unwrap();
        if let Some(rest) = line.split("url=").nth(1) {
            break rest.split_whitespace().next().unwrap().to_string();
        }
    };
    // Keep draining stderr so the server never blocks on a full pipe.
    std::thread::spawn(move || for _ in lines {});
    (child, url)
}

pub fn headers(commerce: &str, api_key: &str) -> reqwest::header::HeaderMap {
    let mut h = reqwest::header::HeaderMap::new();
    for (name, value) in [
        ("country", "CL".to_string()),
        ("commerce", commerce.to_string()),
        ("channel", "WEB".to_string()),
        ("requestDateTime", chrono::Utc::now().to_rfc3339()),
        ("correlationId", uuid::Uuid::new_v4().to_string()),
        ("processId", "API".to_string()),
        ("salesExecutiveId", "SE-9".to_string()),
        ("x-api-key", api_key.to_string()),
    ] {
        h.insert(
            reqwest::header::HeaderName::from_bytes(name.as_bytes()).unwrap(),
            value.parse().unwrap(),
        );
    }
    h
}

#[tokio::test(flavor = "multi_thread")]
async fn commands_work_on_their_own_and_beside_a_running_server() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path();

    let added = mandato(
        data,
        &[
            "commerce",
            "add",
            "--code",
            "76.123.456-0",
            "--name",
            "Gimnasio",
            "--password-stdin",
        ],
        Some("s3cret-pass\n"),
    );
    assert_eq!(added["code"], "76123456-0", "a RUT code is normalized");
    let secret = added["webhookSecret"].as_str().unwrap();
    assert!(secret.starts_with("whsec_") && secret.len() > 40);
    assert!(
        added.get("password").is_none(),
        "a password read from stdin is not echoed"
    );

    let everyone = mandato(data, &["apikey", "create"], None);
    assert_eq!(everyone["commerces"], json!([]));
    assert_eq!(
        everyone["prefix"].as_str().unwrap(),
        &everyone["apiKey"].as_str().unwrap()[..8]
    );

    let staff = mandato(
        data,
        &[
            "staff",
            "add",
            "--email",
            "ops@merchant.example",
            "--role",
            "viewer",
            "--password-stdin",
        ],
        Some("staff-password\n"),
    );
    assert_eq!(
        staff,
        json!({"email": "ops@merchant.example", "role": "viewer"})
    );

    let pem = mandato(data, &["public-key"], None);
    assert!(
        pem["publicKey"]
            .as_str()
            .unwrap()
            .starts_with("-----BEGIN PUBLIC KEY-----")
    );

    let (mut server, base) = serve(data);
    let client = reqwest::Client::new();
    // The key printed by `public-key` is the one the server uses.
    let served: Value = client
        .get(format!("{base}/api/v1/.well-known/jwe-public-key"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(served["payload"]["publicKey"], pem["publicKey"]);

    // While the server runs: a new commerce and a key limited to it, usable at once.
    let second = mandato(
        data,
        &["commerce", "add", "--code", "SHOP-2", "--name", "Tienda"],
        None,
    );
    let password = second["password"]
        .as_str()
        .expect("a generated password is shown once")
        .to_string();
    let limited = mandato(data, &["apikey", "create", "--commerce", "SHOP-2"], None);
    assert_eq!(limited["commerces"], json!(["SHOP-2"]));
    let key = limited["apiKey"].as_str().unwrap();
    let encrypted: Value = client
        .post(format!("{base}/api/v1/jwe/encrypt"))
        .headers(headers("SHOP-2", key))
        .json(&json!({"password": password, "publicKey": pem["publicKey"]}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let login = client
        .post(format!("{base}/api/v1/login"))
        .headers(headers("SHOP-2", key))
        .json(&json!({"username": "SHOP-2", "password": encrypted["payload"]["token"]}))
        .send()
        .await
        .unwrap();
    assert_eq!(login.status(), 200);
    // The limited key does not work for the first commerce.
    let refused = client
        .post(format!("{base}/api/v1/login"))
        .headers(headers("76123456-0", key))
        .json(&json!({}))
        .send()
        .await
        .unwrap();
    assert_eq!(refused.status(), 403);

    let copy = data.join("copy.db");
    let backup = mandato(data, &["backup", copy.to_str().unwrap()], None);
    assert_eq!(backup["backup"], copy.to_str().unwrap());
    let conn = rusqlite::Connection::open(&copy).unwrap();
    let commerces: i64 = conn
        .query_row("SELECT count(*) FROM commerces", [], |r| r.get(0))
        .unwrap();
    assert_eq!(commerces, 2);
    let integrity: String = conn
        .query_row("PRAGMA integrity_check", [], |r| r.get(0))
        .unwrap();
    assert_eq!(integrity, "ok");

    // SIGTERM stops it gracefully, with success.
    let pid = server.id().to_string();
    assert!(
        Command::new("kill")
            .args(["-TERM", &pid])
            .status()
            .unwrap()
            .success()
    );
    let status = server.wait().unwrap();
    assert!(
        status.success(),
        "serve exits cleanly on SIGTERM: {status:?}"
    );
}

#[test]
fn refusals_are_errors_with_a_message() {
    let dir = tempfile::tempdir().unwrap();
    let run = |args: &[&str]| {
        Command::new(BIN)
            .arg("--data-dir")
            .arg(dir.path())
            .args(args)
            .stdin(Stdio::null())
            .output()
            .unwrap()
    };
    assert!(
        run(&["commerce", "add", "--code", "SHOP", "--name", "A"])
            .status
            .success()
    );
    let again = run(&["commerce", "add", "--code", "SHOP", "--name", "B"]);
    assert!(!again.status.success());
    assert!(String::from_utf8_lossy(&again.stderr).contains("already exists"));
    let unknown = run(&["apikey", "create", "--commerce", "NOPE"]);
    assert!(!unknown.status.success());
    let bad_code = run(&["commerce", "add", "--code", "bad code!", "--name", "C"]);
    assert!(!bad_code.status.success());
}

/// Runs `mandato ARGS` with stdout a pipe whose reading end is already closed, as with
/// `mandato public-key | head -c 0`: every write meets a broken pipe.
fn run_into_closed_pipe(dir: &std::path::Path, args: &[&str]) -> std::process::Output {
    let (reader, writer) = std::io::pipe().expect("a pipe");
    drop(reader);
    Command::new(BIN)
        .arg("--data-dir")
        .arg(dir)
        .args(args)
        .stdin(Stdio::null())
        .stdout(writer)
        .stderr(Stdio::piped())
        .output()
        .expect("mandato runs")
}

#[test]
fn output_into_a_closed_pipe_ends_quietly() {
    let dir = tempfile::tempdir().unwrap();
    for args in [
        &["public-key"][..],
        &["--json", "public-key"],
        &["commerce", "add", "--code", "SHOP-9", "--name", "Tienda"],
        &["--json", "apikey", "create"],
    ] {
        let out = run_into_closed_pipe(dir.path(), args);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            out.status.success(),
            "mandato {args:?} into a closed pipe: {:?}, stderr: {stderr}",
            out.status
        );
        assert!(
            !stderr.contains("panicked") && !stderr.contains("error"),
            "mandato {args:?} into a closed pipe wrote to stderr: {stderr}"
        );
    }
}
