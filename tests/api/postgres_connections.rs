//! The engine's PostgreSQL connections, through the real binary: an unreachable server is
//! reported at once, naming it and never the password; the pool stays within
//! `--database-max-connections` under concurrent requests; a statement held up past
//! `--database-statement-timeout` is answered 503 `SERVICE_BUSY` with `Retry-After`, and the
//! engine serves on.

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use reqwest::{Method, StatusCode};
use serde_json::Value;

use crate::cli::headers;
use crate::postgres::{fresh_database, run_cli as mandato};
use crate::process::{Api, serve_logged, stop};

const BIN: &str = env!("CARGO_BIN_EXE_mandato");
const CODE: &str = "PGC-1";
const PASSWORD: &str = "pgc-password";

/// A loopback port nothing listens on.
fn closed_port() -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.local_addr().unwrap().port()
}

#[test]
fn an_unreachable_server_is_named_at_once_and_its_password_never() {
    let dir = tempfile::tempdir().unwrap();
    let port = closed_port();
    let url = format!("postgres://mandato:s3cret-pw@127.0.0.1:{port}/mandato");

    let started = Instant::now();
    let (success, answer) = mandato(
        dir.path(),
        &["--database-url", &url, "commerce", "list"],
        None,
    );
    assert!(!success, "{answer}");
    assert!(started.elapsed() < Duration::from_secs(5), "it failed fast");
    let text = answer.to_string();
    assert!(
        text.contains(&format!(
            "127.0.0.1:{port} (database mandato, user mandato)"
        )),
        "{text}"
    );
    assert!(text.contains("Connection refused"), "{text}");
    assert!(!text.contains("s3cret-pw"), "{text}");

    // `serve` gives up as fast, with the same message in its log.
    let started = Instant::now();
    let out = Command::new(BIN)
        .arg("--data-dir")
        .arg(dir.path())
        .args(["serve", "--listen", "127.0.0.1:0"])
        .env("MANDATO_DATABASE_URL", &url)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(started.elapsed() < Duration::from_secs(5));
    let log = String::from_utf8_lossy(&out.stderr);
    assert!(log.contains(&format!("127.0.0.1:{port}")), "{log}");
    assert!(!log.contains("s3cret-pw"), "{log}");
}

#[test]
fn connection_flags_out_of_bounds_are_refused_by_name() {
    let dir = tempfile::tempdir().unwrap();
    for args in [
        ["--database-max-connections", "0"],
        ["--database-statement-timeout", "86401"],
    ] {
        let (success, answer) = mandato(dir.path(), &[args[0], args[1], "commerce", "list"], None);
        assert!(!success, "{args:?}: {answer}");
        assert_eq!(answer["error"]["name"], "INVALID_ARGUMENTS", "{answer}");
        assert!(answer.to_string().contains(args[0]), "{answer}");
    }
}

/// Sessions the server has open on `database` besides the caller's own.
fn sessions_on(admin: &mut postgres::Client, database: &str) -> i64 {
    admin
        .query_one(
            "SELECT count(*) FROM pg_stat_activity WHERE datname = $1 AND pid <> pg_backend_pid()",
            &[&database],
        )
        .unwrap()
        .get(0)
}

#[tokio::test(flavor = "multi_thread")]
async fn the_pool_stays_within_its_bound_and_a_stuck_statement_is_answered_busy() {
    let url = tokio::task::spawn_blocking(fresh_database).await.unwrap();
    let database = url.rsplit('/').next().unwrap().to_string();
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path();
    let with_url = |args: &[&'static str]| -> Vec<String> {
        ["--database-url", url.as_str()]
            .iter()
            .chain(args)
            .map(|a| a.to_string())
            .collect()
    };
    let (made, answer) = mandato(
        data,
        &with_url(&[
            "commerce",
            "add",
            "--code",
            CODE,
            "--name",
            "Comercio PGC",
            "--password-stdin",
        ]),
        Some(&format!("{PASSWORD}\n")),
    );
    assert!(made, "{answer}");
    let (made, key) = mandato(data, &with_url(&["apikey", "create"]), None);
    assert!(made, "{key}");
    let key = key["apiKey"].as_str().unwrap().to_string();

    let log = data.join("serve.log");
    let (mut server, base) = serve_logged(
        data,
        &[
            ("MANDATO_DATABASE_URL", &url),
            ("MANDATO_DATABASE_MAX_CONNECTIONS", "2"),
            ("MANDATO_DATABASE_STATEMENT_TIMEOUT", "1"),
        ],
        &log,
    );
    let mut api = Api::new(base.clone(), key.clone(), CODE);
    api.login(PASSWORD).await;

    // Many requests at once: the engine opens at most 2 pooled connections (its audit writer
    // keeps 2 of its own).
    let mut lookups = tokio::task::JoinSet::new();
    for i in 0..24 {
        let request = api
            .client
            .request(Method::GET, format!("{base}/api/v1/mandate/id/none-{i}"))
            .headers(headers(CODE, &key))
            .bearer_auth(api.token.as_deref().unwrap());
        lookups.spawn(async move { request.send().await.unwrap().status() });
    }
    while let Some(status) = lookups.join_next().await {
        let status = status.unwrap();
        assert!(
            status == StatusCode::NOT_FOUND || status == StatusCode::SERVICE_UNAVAILABLE,
            "{status}"
        );
    }
    let (admin, sessions) = tokio::task::spawn_blocking({
        let url = url.clone();
        let database = database.clone();
        move || {
            let mut admin = postgres::Client::connect(&url, postgres::NoTls).unwrap();
            let sessions = sessions_on(&mut admin, &database);
            (admin, sessions)
        }
    })
    .await
    .unwrap();
    assert!(
        sessions <= 4,
        "{sessions} sessions on the engine's database"
    );

    // Someone holds the mandates table: the lookup's statement is cancelled after 1 s and
    // answered as busy, never as a fault, and nothing hangs.
    let admin = tokio::task::spawn_blocking(move || {
        let mut admin = admin;
        admin
            .batch_execute("BEGIN; LOCK TABLE mandates IN ACCESS EXCLUSIVE MODE")
            .unwrap();
        admin
    })
    .await
    .unwrap();
    let started = Instant::now();
    let held_up = api
        .client
        .request(Method::GET, format!("{base}/api/v1/mandate/id/held-up"))
        .headers(headers(CODE, &key))
        .bearer_auth(api.token.as_deref().unwrap())
        .send()
        .await
        .unwrap();
    assert!(started.elapsed() < Duration::from_secs(10));
    assert_eq!(held_up.status(), StatusCode::SERVICE_UNAVAILABLE);
    assert_eq!(
        held_up
            .headers()
            .get("retry-after")
            .unwrap()
            .to_str()
            .unwrap(),
        "1"
    );
    let body: Value = held_up.json().await.unwrap();
    assert_eq!(body["name"], "SERVICE_BUSY", "{body}");
    assert_eq!(body["statusCode"], 503, "{body}");

    // Released, the same engine answers as usual on its connections.
    tokio::task::spawn_blocking(move || {
        let mut admin = admin;
        admin.batch_execute("ROLLBACK").unwrap();
    })
    .await
    .unwrap();
    let (status, body) = api
        .try_call(Method::GET, "/mandate/id/after", None)
        .await
        .unwrap();
    assert_eq!(status, StatusCode::NOT_FOUND, "{body}");

    stop(&mut server.0);
}
