//! The `mandato` command line, run as a real process, including while `mandato serve` runs on
//! the same data directory.

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, Command, Stdio};

use serde_json::{Value, json};

const BIN: &str = env!("CARGO_BIN_EXE_mandato");

/// Runs `command` (a `mandato` command line, its data directory set) with `--json` and
/// `args`, `stdin` written to its input: what it exited with and printed.
pub fn json_output<S: AsRef<std::ffi::OsStr>>(
    mut command: Command,
    args: &[S],
    stdin: Option<&str>,
) -> std::process::Output {
    let mut child = command
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
    child.wait_with_output().unwrap()
}

/// Runs a CLI command on the engine's database (`helpers::cli_command`); it must succeed.
/// Its JSON output.
pub fn mandato(dir: &std::path::Path, args: &[&str], stdin: Option<&str>) -> Value {
    let out = json_output(crate::helpers::cli_command(dir), args, stdin);
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
        // Charges on any date, so that tests do not depend on the weekday they run.
        .env("MANDATO_BUSINESS_DAYS", "every-day")
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
    let said = String::from_utf8_lossy(&again.stderr).to_string();
    assert!(said.contains("already exists"), "{said}");
    assert_eq!(
        said.matches("already exists").count(),
        1,
        "said once: {said}"
    );
    let unknown = run(&["apikey", "create", "--commerce", "NOPE"]);
    assert!(!unknown.status.success());
    let bad_code = run(&["commerce", "add", "--code", "bad code!", "--name", "C"]);
    assert!(!bad_code.status.success());
    // An unknown event is named as such, not as a generic failure.
    let resend = run(&["--json", "events", "resend", "evt_nope"]);
    assert!(!resend.status.success());
    let answer: serde_json::Value = serde_json::from_slice(&resend.stdout).unwrap();
    assert_eq!(answer["error"]["name"], "EVENT_NOT_FOUND", "{answer}");
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

/// Runs `mandato --json ARGS`, which must fail: its one JSON object on stdout and exit code.
fn mandato_refused(dir: &std::path::Path, args: &[&str]) -> (Value, i32) {
    let out = Command::new(BIN)
        .arg("--data-dir")
        .arg(dir)
        .arg("--json")
        .args(args)
        .stdin(Stdio::null())
        .output()
        .expect("mandato runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        stdout.lines().count(),
        1,
        "mandato {args:?}: one line on stdout, got {stdout:?}"
    );
    let value: Value = serde_json::from_str(&stdout)
        .unwrap_or_else(|e| panic!("{args:?} printed no JSON ({e}): {stdout:?}"));
    (value, out.status.code().unwrap_or(-1))
}

#[track_caller]
pub fn assert_refused(dir: &std::path::Path, args: &[&str], name: &str) -> String {
    let (value, code) = mandato_refused(dir, args);
    assert_eq!(code, 1, "mandato {args:?} exits 1: {value}");
    assert_eq!(value["error"]["name"], name, "mandato {args:?}: {value}");
    let message = value["error"]["message"].as_str().unwrap_or("").to_string();
    assert!(!message.is_empty(), "a message says why: {value}");
    assert_eq!(
        value.as_object().unwrap().len(),
        1,
        "only the error member: {value}"
    );
    message
}

#[test]
fn json_errors_are_one_named_object_and_exit_1() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path();
    // A RUT with a wrong check digit is refused, not taken as an issued code.
    let message = assert_refused(
        data,
        &["commerce", "add", "--code", "12.345.678-9", "--name", "A"],
        "INVALID_RUT",
    );
    assert!(message.contains("check digit"), "{message}");
    assert_refused(
        data,
        &["commerce", "add", "--code", "bad code!", "--name", "A"],
        "INVALID_CODE",
    );
    // Valid RUTs are stored normalized, however typed.
    let added = mandato(
        data,
        &["commerce", "add", "--code", "12.345.678-5", "--name", "A"],
        None,
    );
    assert_eq!(added["code"], "12345678-5");
    let added = mandato(
        data,
        &["commerce", "add", "--code", "76.123.456-0", "--name", "B"],
        None,
    );
    assert_eq!(added["code"], "76123456-0");
    assert_refused(
        data,
        &["commerce", "add", "--code", "76123456-0", "--name", "C"],
        "COMMERCE_EXISTS",
    );
    assert_refused(data, &["commerce", "show", "NOPE"], "COMMERCE_NOT_FOUND");
    assert_refused(data, &["commerce", "frobnicate"], "INVALID_ARGUMENTS");
    assert_refused(data, &["trigger", "payment.teleported"], "UNKNOWN_SCENARIO");
    // Two commerces: which one must be said.
    assert_refused(data, &["sandbox", "reset"], "COMMERCE_REQUIRED");
    assert_refused(
        data,
        &["trigger", "activation", "--commerce", "76123456-0"],
        "NO_WEBHOOK_URL",
    );
    assert_refused(
        data,
        &[
            "commerce",
            "set-webhook",
            "--code",
            "76123456-0",
            "--url",
            "http://plain.example/hook",
        ],
        "INVALID_URL",
    );
    assert_refused(data, &["trust", "remove", "abcd"], "INVALID_FINGERPRINT");
    assert_refused(
        data,
        &["trust", "remove", &"ab".repeat(32)],
        "ROOT_NOT_FOUND",
    );
    assert_refused(data, &["apikey", "revoke", "mdt_nope"], "API_KEY_NOT_FOUND");
    assert_refused(
        data,
        &["apikey", "create", "--commerce", "NOPE"],
        "COMMERCE_NOT_FOUND",
    );
    assert_refused(
        data,
        &["commerce", "rotate-secret", "--code", "NOPE"],
        "COMMERCE_NOT_FOUND",
    );

    // Once the installation has run as production, the sandbox tools refuse.
    let mut server = Command::new(BIN)
        .arg("--data-dir")
        .arg(data)
        .args([
            "serve",
            "--listen",
            "127.0.0.1:0",
            "--environment",
            "production",
        ])
        .stderr(Stdio::piped())
        .spawn()
        .expect("serve starts");
    let mut lines = BufReader::new(server.stderr.take().unwrap()).lines();
    while !lines
        .next()
        .expect("serve logs its URL")
        .unwrap()
        .contains("url=")
    {}
    let _ = server.kill();
    let _ = server.wait();
    assert_refused(
        data,
        &["sandbox", "reset", "--commerce", "76123456-0"],
        "NOT_SANDBOX",
    );
    assert_refused(
        data,
        &["trigger", "activation", "--commerce", "76123456-0"],
        "NOT_SANDBOX",
    );
}

#[test]
fn lists_show_what_is_there_and_never_a_key() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path();
    let first = mandato(
        data,
        &[
            "commerce",
            "add",
            "--code",
            "76.123.456-0",
            "--name",
            "Gimnasio",
        ],
        None,
    );
    mandato(
        data,
        &["commerce", "add", "--code", "SHOP-2", "--name", "Tienda"],
        None,
    );
    let listed = mandato(data, &["commerce", "list"], None);
    let codes: Vec<&str> = listed["commerces"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["code"].as_str().unwrap())
        .collect();
    assert_eq!(codes, ["76123456-0", "SHOP-2"]);
    assert!(
        !listed.to_string().contains("whsec_"),
        "no secret in a list"
    );

    // show: the secret only when asked.
    let shown = mandato(data, &["commerce", "show", "76123456-0"], None);
    assert_eq!(shown["name"], "Gimnasio");
    assert!(shown.get("webhookSecret").is_none());
    let shown = mandato(
        data,
        &["commerce", "show", "76.123.456-0", "--secret"],
        None,
    );
    assert_eq!(shown["webhookSecret"], first["webhookSecret"]);

    let set = mandato(
        data,
        &[
            "commerce",
            "set-webhook",
            "--code",
            "SHOP-2",
            "--url",
            "https://localhost:9443/hooks",
        ],
        None,
    );
    assert_eq!(set["webhookUrl"], "https://localhost:9443/hooks");
    let shown = mandato(data, &["commerce", "show", "SHOP-2"], None);
    assert_eq!(shown["webhookUrl"], "https://localhost:9443/hooks");

    let every = mandato(data, &["apikey", "create", "--name", "  Tienda web "], None);
    assert_eq!(every["name"], "Tienda web");
    let long_name = "x".repeat(101);
    assert_refused(
        data,
        &["apikey", "create", "--name", &long_name],
        "INVALID_NAME",
    );
    assert_refused(
        data,
        &["apikey", "create", "--name", "caja\u{202e}1"],
        "INVALID_NAME",
    );
    let limited = mandato(data, &["apikey", "create", "--commerce", "SHOP-2"], None);
    let prefix = limited["prefix"].as_str().unwrap();
    mandato(data, &["apikey", "revoke", prefix], None);
    let keys = mandato(data, &["apikey", "list"], None);
    let text = keys.to_string();
    for key in [&every, &limited] {
        assert!(
            !text.contains(key["apiKey"].as_str().unwrap()),
            "a key is shown once, at creation"
        );
    }
    let keys = keys["apiKeys"].as_array().unwrap();
    assert_eq!(keys.len(), 2);
    assert_eq!(keys[0]["prefix"], every["prefix"]);
    assert_eq!(keys[0]["name"], "Tienda web");
    assert_eq!(keys[0]["commerces"], json!([]));
    assert_eq!(keys[0]["revokedAt"], Value::Null);
    assert_eq!(keys[0]["lastUsedAt"], Value::Null, "never used yet");
    assert_eq!(keys[1]["name"], Value::Null);
    assert_eq!(keys[1]["commerces"], json!(["SHOP-2"]));
    assert!(keys[1]["revokedAt"].is_string());

    // trust: add the development CA, list it, remove it by fingerprint, add and remove by file.
    let files = mandato(
        data,
        &["dev-cert", "--out", data.join("tls").to_str().unwrap()],
        None,
    );
    let ca = files["ca"].as_str().unwrap();
    mandato(data, &["trust", "add-root", ca], None);
    let roots = mandato(data, &["trust", "list"], None)["roots"].clone();
    assert_eq!(roots.as_array().unwrap().len(), 1);
    let fingerprint = roots[0]["fingerprint"].as_str().unwrap().to_string();
    assert_eq!(fingerprint.len(), 64);
    let removed = mandato(
        data,
        &["trust", "remove", &fingerprint.to_uppercase()],
        None,
    );
    assert_eq!(removed["removed"], json!([fingerprint]));
    assert_eq!(mandato(data, &["trust", "list"], None)["roots"], json!([]));
    mandato(data, &["trust", "add-root", ca], None);
    mandato(data, &["trust", "remove", ca], None);
    assert_eq!(mandato(data, &["trust", "list"], None)["roots"], json!([]));

    // Text mode: a line per item.
    let text = Command::new(BIN)
        .arg("--data-dir")
        .arg(data)
        .args(["commerce", "list"])
        .output()
        .unwrap();
    assert!(text.status.success());
    let text = String::from_utf8(text.stdout).unwrap();
    assert_eq!(text.lines().count(), 2, "{text}");
    assert!(
        text.lines()
            .next()
            .unwrap()
            .starts_with("76123456-0\tGimnasio")
    );
}

#[test]
fn listings_and_errors_into_a_closed_pipe_end_quietly() {
    let dir = tempfile::tempdir().unwrap();
    mandato(
        dir.path(),
        &["commerce", "add", "--code", "SHOP-1", "--name", "Tienda"],
        None,
    );
    mandato(dir.path(), &["apikey", "create"], None);
    for args in [
        &["commerce", "list"][..],
        &["--json", "commerce", "list"],
        &["commerce", "show", "SHOP-1", "--secret"],
        &["apikey", "list"],
        &["trust", "list"],
        &["trigger", "--list"],
        &["--json", "trigger", "--list"],
    ] {
        let out = run_into_closed_pipe(dir.path(), args);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            out.status.success() && !stderr.contains("panicked"),
            "mandato {args:?} into a closed pipe: {:?}, stderr: {stderr}",
            out.status
        );
    }
}

#[test]
fn charge_run_says_when_the_date_is_not_a_business_day() {
    let dir = tempfile::tempdir().unwrap();
    // Saturday 2026-12-05: nothing is charged; Monday 2026-12-07 is the next business day.
    let weekend = mandato(dir.path(), &["charge-run", "--date", "2026-12-05"], None);
    assert_eq!(weekend["businessDay"], false);
    assert_eq!(weekend["nextBusinessDay"], "2026-12-07");
    assert_eq!(weekend["attempted"], 0);
    let monday = mandato(dir.path(), &["charge-run", "--date", "2026-12-07"], None);
    assert_eq!(monday["businessDay"], true);
    assert_eq!(monday["nextBusinessDay"], Value::Null);
}

#[test]
fn the_sandbox_clock_is_shown_and_moved_forward_from_the_command_line() {
    let dir = tempfile::tempdir().unwrap();
    let shown = mandato(dir.path(), &["sandbox", "clock"], None);
    assert_eq!(shown["offsetDays"], 0);
    let today: chrono::NaiveDate = shown["today"].as_str().unwrap().parse().unwrap();
    let moved = mandato(
        dir.path(),
        &["sandbox", "clock", "advance", "--days", "3"],
        None,
    );
    assert_eq!(moved["offsetDays"], 3);
    assert_eq!(
        moved["today"],
        (today + chrono::Duration::days(3)).to_string()
    );
    assert_eq!(moved["runs"].as_array().unwrap().len(), 3, "{moved}");
    let to = (today + chrono::Duration::days(5)).to_string();
    let moved = mandato(
        dir.path(),
        &["sandbox", "clock", "advance", "--to", &to],
        None,
    );
    assert_eq!(moved["today"], to.as_str());
    assert_eq!(
        mandato(dir.path(), &["sandbox", "clock", "show"], None)["offsetDays"],
        5
    );
    // Only forward, and not too far: the API's rules.
    let back = today.to_string();
    assert_refused(
        dir.path(),
        &["sandbox", "clock", "advance", "--to", &back],
        "VALIDATION_ERROR",
    );
    assert_refused(
        dir.path(),
        &["sandbox", "clock", "advance", "--days", "401"],
        "VALIDATION_ERROR",
    );
}
