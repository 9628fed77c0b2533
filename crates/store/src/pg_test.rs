//! PostgreSQL for the store's tests: one server per test binary, one fresh database per test.
//!
//! The server is `MANDATO_TEST_DATABASE_URL` when it is set (a cluster started beforehand with
//! `scripts/pg.sh start`); otherwise the first test to ask starts one with `scripts/pg.sh`,
//! which removes it once this process has exited. Each [`TestDatabase`] is a new database
//! (`t_<random>`) on that server, with the PostgreSQL schema applied, dropped when the value
//! is dropped.

use std::process::Command;
use std::sync::OnceLock;

use super::db::PgConn;

/// The server's URL (any database on it); the cluster is started at most once.
fn server_url() -> &'static str {
    static URL: OnceLock<String> = OnceLock::new();
    URL.get_or_init(|| match std::env::var("MANDATO_TEST_DATABASE_URL") {
        Ok(url) if !url.is_empty() => url,
        _ => start_cluster(),
    })
}

const SCRIPT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../scripts/pg.sh");

fn start_cluster() -> String {
    started_cluster().0
}

/// Starts a cluster with `scripts/pg.sh`: its URL and its directory.
fn started_cluster() -> (String, String) {
    let script = SCRIPT;
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
    let stdout = String::from_utf8_lossy(&output.stdout);
    let printed = |name: &str| {
        stdout
            .lines()
            .find_map(|line| line.strip_prefix(name))
            .unwrap_or_else(|| panic!("scripts/pg.sh prints {name}"))
            .to_string()
    };
    (
        printed("MANDATO_TEST_DATABASE_URL="),
        printed("MANDATO_TEST_PG_DIR="),
    )
}

/// A server of its own for a test that changes the server's settings (TLS), stopped and
/// removed when dropped.
pub struct OwnCluster {
    pub url: String,
    pub dir: std::path::PathBuf,
}

impl OwnCluster {
    pub fn start() -> OwnCluster {
        let (url, dir) = started_cluster();
        OwnCluster {
            url,
            dir: dir.into(),
        }
    }

    /// The server's data directory (where `server.crt` and `server.key` go).
    pub fn data_dir(&self) -> std::path::PathBuf {
        self.dir.join("data")
    }
}

impl Drop for OwnCluster {
    fn drop(&mut self) {
        let _ = Command::new(SCRIPT).arg("stop").arg(&self.dir).status();
    }
}

/// The same server, another database.
fn url_of(database: &str) -> String {
    let mut url = url::Url::parse(server_url()).expect("a postgres:// URL");
    url.set_path(&format!("/{database}"));
    url.to_string()
}

/// A fresh database with the PostgreSQL schema, dropped at the end of the test.
pub struct TestDatabase {
    name: String,
    url: String,
}

impl TestDatabase {
    pub fn url(&self) -> &str {
        &self.url
    }

    /// A new connection to this database.
    pub fn connect(&self) -> PgConn {
        PgConn::connect(&self.url).expect("the test database accepts connections")
    }
}

impl Drop for TestDatabase {
    fn drop(&mut self) {
        if let Ok(admin) = PgConn::connect(server_url()) {
            let _ = admin.batch(&format!(
                "DROP DATABASE IF EXISTS {} WITH (FORCE)",
                self.name
            ));
        }
    }
}

/// An empty database of its own for one test.
pub fn empty_database() -> TestDatabase {
    let name = format!("t_{}", hex::encode(rand::random::<[u8; 8]>()));
    let admin = PgConn::connect(server_url()).expect("the test server accepts connections");
    admin
        .batch(&format!("CREATE DATABASE {name}"))
        .expect("the test database is created");
    TestDatabase {
        url: url_of(&name),
        name,
    }
}

/// A database of its own for one test, with the whole schema.
pub fn database() -> TestDatabase {
    let database = empty_database();
    super::pg_migrations::run(&database.connect()).expect("the PostgreSQL migrations apply");
    database
}

/// Runs `check` on a fresh SQLite database and on a fresh PostgreSQL one, each with the whole
/// schema: the same store code must behave the same on both.
pub fn on_both(check: impl Fn(super::db::Db<'_>)) {
    let mut sqlite = rusqlite::Connection::open_in_memory().expect("an in-memory database");
    super::migrations::run(&mut sqlite).expect("the SQLite migrations apply");
    sqlite
        .execute_batch("PRAGMA foreign_keys = ON")
        .expect("foreign keys are enforced");
    // As every connection `Store` opens: PostgreSQL's schema defines the same functions.
    super::search::register(&sqlite).expect("the search functions register");
    check(super::db::Db::Sqlite(&sqlite));

    let database = database();
    let pg = database.connect();
    pg.transaction(|db| {
        check(db);
        Ok::<(), super::db::Error>(())
    })
    .expect("the PostgreSQL transaction commits");
}
