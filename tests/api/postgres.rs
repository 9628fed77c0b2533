//! The real `mandato` binary on PostgreSQL: `serve --database-url` on a fresh database of a
//! throwaway cluster (`scripts/pg.sh`), a merchant's journey over HTTP, and the CLI on the
//! same database. With `MANDATO_TEST_BACKEND=postgres`, `spawn_app()` runs every engine it
//! starts on a fresh PostgreSQL database too (the engine's own blocking calls need the
//! multi-threaded runtime: `#[tokio::test(flavor = "multi_thread")]`).

use std::process::Command;
use std::sync::OnceLock;

use reqwest::{Method, StatusCode};
use serde_json::{Value, json};

use crate::cli::headers;
use crate::process::{Api, serve_logged, stop};

const BIN: &str = env!("CARGO_BIN_EXE_mandato");
const CODE: &str = "PG-1";
const PASSWORD: &str = "pg-password";

/// The cluster's URL: `MANDATO_TEST_DATABASE_URL` when set, otherwise a cluster started once
/// for this test binary and removed when it exits.
fn server_url() -> &'static str {
    static URL: OnceLock<String> = OnceLock::new();
    URL.get_or_init(|| match std::env::var("MANDATO_TEST_DATABASE_URL") {
        Ok(url) if !url.is_empty() => url,
        _ => {
            let script = concat!(env!("CARGO_MANIFEST_DIR"), "/scripts/pg.sh");
            let output = Command::new("nice")
                .args(["-n", "19", script, "start", "--owner-pid"])
                .arg(std::process::id().to_string())
                .output()
                .expect("scripts/pg.sh runs");
            assert!(
                output.status.success(),
                "scripts/pg.sh start failed: {}",
                String::from_utf8_lossy(&output.stderr)
            );
            String::from_utf8_lossy(&output.stdout)
                .lines()
                .find_map(|line| line.strip_prefix("MANDATO_TEST_DATABASE_URL="))
                .expect("scripts/pg.sh prints the database URL")
                .to_string()
        }
    })
}

/// Whether `spawn_app()` runs its engines on PostgreSQL (`MANDATO_TEST_BACKEND=postgres`);
/// SQLite otherwise.
pub fn chosen() -> bool {
    std::env::var("MANDATO_TEST_BACKEND").is_ok_and(|backend| backend == "postgres")
}

/// A new, empty database on the cluster (the engine migrates it at start); its URL. It
/// blocks: call it off async threads.
pub fn fresh_database() -> String {
    let name = format!("api_{}", uuid::Uuid::new_v4().simple());
    let mut admin =
        postgres::Client::connect(server_url(), postgres::NoTls).expect("the cluster answers");
    admin
        .batch_execute(&format!("CREATE DATABASE {name}"))
        .expect("CREATE DATABASE");
    let mut url = url::Url::parse(server_url()).expect("a postgres:// URL");
    url.set_path(&format!("/{name}"));
    url.to_string()
}

/// Runs a CLI command: whether it succeeded, and its JSON answer (or its output as text).
pub fn run_cli<S: AsRef<std::ffi::OsStr>>(
    data: &std::path::Path,
    args: &[S],
    stdin: Option<&str>,
) -> (bool, Value) {
    let mut command = Command::new(BIN);
    command.arg("--data-dir").arg(data);
    let out = crate::cli::json_output(command, args, stdin);
    let answer = serde_json::from_slice(&out.stdout).unwrap_or_else(|_| {
        Value::String(format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        ))
    });
    (out.status.success(), answer)
}

/// Runs a CLI command on the PostgreSQL database at `url`, as `run_cli` does.
fn mandato(data: &std::path::Path, url: &str, args: &[&str], stdin: Option<&str>) -> (bool, Value) {
    let with_url: Vec<&str> = ["--database-url", url]
        .iter()
        .chain(args)
        .copied()
        .collect();
    run_cli(data, &with_url, stdin)
}

/// Runs a CLI command on the PostgreSQL database; it must succeed. Its JSON output.
pub fn ok(data: &std::path::Path, url: &str, args: &[&str], stdin: Option<&str>) -> Value {
    let (success, answer) = mandato(data, url, args, stdin);
    assert!(success, "mandato {args:?} failed: {answer}");
    answer
}

#[tokio::test(flavor = "multi_thread")]
async fn a_merchant_journey_on_postgresql() {
    // The synchronous client blocks: off the test's async threads.
    let url = tokio::task::spawn_blocking(fresh_database).await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path();

    // The installation is made with the CLI, straight into PostgreSQL.
    ok(
        data,
        &url,
        &[
            "commerce",
            "add",
            "--code",
            CODE,
            "--name",
            "Comercio PG",
            "--password-stdin",
        ],
        Some(&format!("{PASSWORD}\n")),
    );
    let key = ok(data, &url, &["apikey", "create"], None)["apiKey"]
        .as_str()
        .unwrap()
        .to_string();

    let log = data.join("serve.log");
    let (mut server, base) = serve_logged(data, &[("MANDATO_DATABASE_URL", &url)], &log);
    assert!(
        !data.join("mandato.db").exists(),
        "on PostgreSQL no SQLite file is made"
    );
    let mut api = Api::new(base.clone(), key.clone(), CODE);
    api.login(PASSWORD).await;

    let customer = json!({"customer": {"userId": "u1",
        "identificationDocument": {"type": "RUT", "number": "12.345.678-5"},
        "personalInformation": {"firstName": "Ana", "lastName": "Pérez"},
        "contacts": {"email": "ana@example.cl"}}});
    api.call(Method::POST, "/user", Some(customer)).await;

    let due = (chrono::Utc::now()
        .with_timezone(&chrono_tz::America::Santiago)
        .date_naive()
        + chrono::Duration::days(5))
    .to_string();
    let mandate = json!({"customer": {"userId": "u1"},
        "mandate": {"id": "M-PG", "type": "DYNAMIC", "name": "Plan PG", "charges": {"currencyId": "CLP"}},
        "installments": [{"id": "c1", "amount": 15000, "currencyId": "CLP", "installmentDueDate": due}]});
    api.call(Method::POST, "/mandate", Some(mandate)).await;

    let found = api.call(Method::GET, "/mandate/id/M-PG", None).await;
    let text = found.to_string();
    assert!(text.contains("M-PG"), "the mandate is found: {text}");
    assert!(text.contains("15000"), "with its installment: {text}");

    // A correlationId is used once: the same one again is refused, on PostgreSQL as on SQLite.
    let mut fixed = headers(CODE, &key);
    fixed.insert(
        "correlationId",
        uuid::Uuid::new_v4().to_string().parse().unwrap(),
    );
    let send = || {
        api.client
            .request(Method::GET, format!("{base}/api/v1/mandate/id/M-PG"))
            .headers(fixed.clone())
            .bearer_auth(api.token.as_deref().unwrap())
            .send()
    };
    let first = send().await.unwrap();
    assert_eq!(first.status(), StatusCode::OK);
    let again = send().await.unwrap();
    assert_eq!(again.status(), StatusCode::BAD_REQUEST);
    let refusal: Value = again.json().await.unwrap();
    assert!(
        refusal.to_string().contains("CORRELATION_ID_REUSED"),
        "{refusal}"
    );

    // The CLI reads the same database while the engine runs.
    let listed = ok(data, &url, &["commerce", "list"], None);
    assert!(listed.to_string().contains(CODE), "{listed}");

    // Backups are SQLite's: on PostgreSQL the command refuses and names pg_dump.
    let (success, refused) = mandato(
        data,
        &url,
        &["backup", data.join("copy.db").to_str().unwrap()],
        None,
    );
    assert!(!success, "backup must refuse on PostgreSQL");
    assert!(refused.to_string().contains("pg_dump"), "{refused}");

    stop(&mut server.0);
}
