//! PostgreSQL for the benchmarks: a throwaway durable cluster (or the server of
//! `MANDATO_TEST_DATABASE_URL`), fresh databases whose schema the engine's own migrations make,
//! and a copy of a filled SQLite database into one of them, so both backends are measured on
//! the same rows.

use std::collections::{BTreeMap, BTreeSet};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use postgres::{Client, NoTls};

use super::stat_ticks;

/// A PostgreSQL server the benchmark may create and drop databases on.
pub struct Cluster {
    /// A URL of the server (its database part is replaced for each database).
    url: String,
    /// The cluster's directory when this process started it (it is removed at drop).
    dir: Option<PathBuf>,
}

impl Cluster {
    /// The server of `MANDATO_TEST_DATABASE_URL`, or a new cluster from `scripts/pg.sh` with
    /// PostgreSQL's durable defaults (fsync on, `synchronous_commit=on`, full page writes) and
    /// room for the connections of two engines under load.
    pub fn start() -> Cluster {
        if let Ok(url) = std::env::var("MANDATO_TEST_DATABASE_URL") {
            eprintln!("[pg] using the server of MANDATO_TEST_DATABASE_URL");
            return Cluster { url, dir: None };
        }
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/pg.sh");
        let out = Command::new(script)
            .args(["start", "--durable", "--set", "max_connections=400"])
            // Every statement's calls, plans and time, per scenario (`StatementStats`).
            .args(["--set", "shared_preload_libraries=pg_stat_statements"])
            .args(["--set", "pg_stat_statements.track_planning=on"])
            .args(["--owner-pid", &std::process::id().to_string()])
            .output()
            .expect("scripts/pg.sh runs");
        assert!(
            out.status.success(),
            "scripts/pg.sh start failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let text = String::from_utf8_lossy(&out.stdout);
        let value = |key: &str| {
            text.lines()
                .find_map(|l| l.strip_prefix(key))
                .unwrap_or_else(|| panic!("pg.sh printed no {key}"))
                .to_string()
        };
        let cluster = Cluster {
            url: value("MANDATO_TEST_DATABASE_URL="),
            dir: Some(PathBuf::from(value("MANDATO_TEST_PG_DIR="))),
        };
        eprintln!(
            "[pg] cluster started in {}",
            cluster.dir.as_ref().unwrap().display()
        );
        cluster
    }

    /// The URL of database `name` on this server.
    pub fn url_of(&self, name: &str) -> String {
        let (base, query) = match self.url.split_once('?') {
            Some((b, q)) => (b, Some(q)),
            None => (self.url.as_str(), None),
        };
        let server = base.rsplit_once('/').map_or(base, |(s, _)| s);
        match query {
            Some(q) => format!("{server}/{name}?{q}"),
            None => format!("{server}/{name}"),
        }
    }

    fn admin(&self) -> Client {
        Client::connect(&self.url_of("postgres"), NoTls).expect("connect to the server")
    }

    /// Creates database `name` (dropping any of that name first), empty or as a copy of
    /// `template`, and returns its URL.
    pub fn create_database(&self, name: &str, template: Option<&str>) -> String {
        let mut admin = self.admin();
        admin
            .batch_execute(&format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)"))
            .expect("drop the old database");
        let sql = match template {
            Some(t) => format!("CREATE DATABASE {name} TEMPLATE {t}"),
            None => format!("CREATE DATABASE {name}"),
        };
        admin.batch_execute(&sql).expect("create the database");
        self.url_of(name)
    }

    pub fn drop_database(&self, name: &str) {
        let _ = self
            .admin()
            .batch_execute(&format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)"));
    }

    /// CPU ticks used so far by the server's processes, when this process started the cluster
    /// (`None` for an outside server): the postmaster's own and its ended children's (a
    /// connection's backend that exits is counted there), and its live children's.
    pub fn server_ticks(&self) -> Option<u64> {
        let pid_file = self.dir.as_ref()?.join("data/postmaster.pid");
        let postmaster: u32 = std::fs::read_to_string(pid_file)
            .ok()?
            .lines()
            .next()?
            .trim()
            .parse()
            .ok()?;
        let mut ticks = 0;
        for entry in std::fs::read_dir("/proc").ok()?.flatten() {
            let Some(pid) = entry
                .file_name()
                .to_str()
                .and_then(|n| n.parse::<u32>().ok())
            else {
                continue;
            };
            let Ok(stat) = std::fs::read_to_string(entry.path().join("stat")) else {
                continue;
            };
            let parent = stat
                .rsplit_once(')')
                .and_then(|(_, rest)| rest.split_whitespace().nth(1))
                .and_then(|v| v.parse::<u32>().ok());
            if pid == postmaster {
                ticks += stat_ticks(&stat).unwrap_or(0) + ended_children_ticks(&stat).unwrap_or(0);
            } else if parent == Some(postmaster) {
                ticks += stat_ticks(&stat).unwrap_or(0);
            }
        }
        Some(ticks)
    }

    /// Sessions opened so far on the database at `url` (`pg_stat_database.sessions`, which the
    /// server's statistics update within about a second).
    pub fn sessions(&self, url: &str) -> i64 {
        let mut c = Client::connect(url, NoTls).expect("connect for the statistics");
        c.query_one(
            "SELECT sessions FROM pg_stat_database WHERE datname = current_database()",
            &[],
        )
        .map(|r| r.get(0))
        .unwrap_or(0)
    }

    /// Starts counting statements afresh (`pg_stat_statements`): `None` when the server does
    /// not have the module loaded (an outside server of `MANDATO_TEST_DATABASE_URL`).
    pub fn statements_reset(&self) -> Option<()> {
        let mut admin = self.admin();
        admin
            .batch_execute("CREATE EXTENSION IF NOT EXISTS pg_stat_statements")
            .ok()?;
        admin
            .batch_execute("SELECT pg_stat_statements_reset()")
            .ok()
    }

    /// What the server executed on the database at `url` since `statements_reset`: every
    /// statement the engines sent (`BEGIN` and `COMMIT` included), each one round trip.
    pub fn statements(&self, url: &str) -> Option<StatementStats> {
        let database = url.rsplit_once('/')?.1.split('?').next()?.to_string();
        let mut admin = self.admin();
        let rows = admin
            .query(
                "SELECT s.query, s.calls, s.plans, s.total_exec_time + s.total_plan_time, s.rows
                 FROM pg_stat_statements s JOIN pg_database d ON d.oid = s.dbid
                 WHERE d.datname = $1 ORDER BY 4 DESC",
                &[&database],
            )
            .ok()?;
        let mut stats = StatementStats::default();
        for row in rows {
            let statement = Statement {
                query: row
                    .get::<_, String>(0)
                    .split_whitespace()
                    .collect::<Vec<_>>()
                    .join(" "),
                calls: row.get(1),
                plans: row.get(2),
                ms: row.get(3),
                rows: row.get(4),
            };
            stats.calls += statement.calls;
            stats.plans += statement.plans;
            stats.ms += statement.ms;
            stats.top.push(statement);
        }
        stats.top.truncate(12);
        Some(stats)
    }

    /// The disk's price of one durable commit as PostgreSQL pays it now: the median time of
    /// single-row autocommitted inserts on a table of its own, in milliseconds.
    pub fn commit_probe_ms(&self, url: &str, commits: usize) -> f64 {
        let mut c = Client::connect(url, NoTls).expect("connect for the probe");
        c.batch_execute("CREATE TABLE IF NOT EXISTS bench_commit_probe (n BIGINT)")
            .unwrap();
        let mut lat: Vec<f64> = (0..commits)
            .map(|n| {
                let t = Instant::now();
                c.execute("INSERT INTO bench_commit_probe VALUES ($1)", &[&(n as i64)])
                    .unwrap();
                t.elapsed().as_secs_f64() * 1000.0
            })
            .collect();
        c.batch_execute("DROP TABLE bench_commit_probe").unwrap();
        lat.sort_by(|a, b| a.total_cmp(b));
        lat[lat.len() / 2]
    }
}

/// The statements one scenario made the server run.
#[derive(Default, Debug)]
pub struct StatementStats {
    /// Statements executed: each is one round trip of the engine's.
    pub calls: i64,
    /// Times a statement was planned (a prepared statement reused with its generic plan is
    /// not planned again).
    pub plans: i64,
    /// Milliseconds the server spent planning and executing them.
    pub ms: f64,
    /// The statements that took the most time, most first.
    pub top: Vec<Statement>,
}

#[derive(Debug)]
pub struct Statement {
    pub query: String,
    pub calls: i64,
    pub plans: i64,
    pub ms: f64,
    pub rows: i64,
}

/// cutime + cstime of a `/proc/.../stat` line: the ticks of the children it has waited for.
fn ended_children_ticks(stat: &str) -> Option<u64> {
    let v: Vec<&str> = stat.rsplit_once(')')?.1.split_whitespace().collect();
    Some(v.get(13)?.parse::<u64>().ok()? + v.get(14)?.parse::<u64>().ok()?)
}

impl Drop for Cluster {
    fn drop(&mut self) {
        if let Some(dir) = &self.dir {
            let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/pg.sh");
            let _ = Command::new(script).arg("stop").arg(dir).status();
        }
    }
}

/// What [`copy_from_sqlite`] did.
pub struct CopyReport {
    pub tables: usize,
    pub rows: u64,
    pub ms: f64,
}

/// Copies every row of the SQLite database at `sqlite` into the PostgreSQL database at `url`,
/// whose schema the engine's migrations made: the tables both schemas have, the columns both
/// tables have, parents before children, with `COPY`; then moves each identity column's
/// sequence past the copied keys and analyses the tables, as a server that has been running
/// would have them.
pub fn copy_from_sqlite(sqlite: &Path, url: &str) -> CopyReport {
    let started = Instant::now();
    let source = rusqlite::Connection::open_with_flags(
        sqlite,
        rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY | rusqlite::OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )
    .expect("open the filled SQLite database");
    let mut pg = Client::connect(url, NoTls).expect("connect to PostgreSQL");
    let tables = tables_parents_first(&mut pg);
    let mut rows = 0;
    let mut copied = 0;
    let mut tx = pg.transaction().unwrap();
    for table in tables.iter().rev() {
        tx.batch_execute(&format!("DELETE FROM {table}")).unwrap();
    }
    for table in &tables {
        let sqlite_columns: BTreeSet<String> = source
            .prepare(&format!("SELECT name FROM pragma_table_info('{table}')"))
            .unwrap()
            .query_map([], |r| r.get(0))
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap();
        if sqlite_columns.is_empty() {
            continue;
        }
        let columns: Vec<(String, String)> = tx
            .query(
                "SELECT column_name, data_type FROM information_schema.columns
                 WHERE table_schema = 'public' AND table_name = $1 ORDER BY ordinal_position",
                &[table],
            )
            .unwrap()
            .into_iter()
            .map(|r| (r.get::<_, String>(0), r.get::<_, String>(1)))
            .filter(|(name, _)| sqlite_columns.contains(name))
            .collect();
        let names: Vec<&str> = columns.iter().map(|(n, _)| n.as_str()).collect();
        let table_rows = copy_table(&source, &mut tx, table, &columns);
        if table_rows > 0 {
            eprintln!("[pg] {table}: {table_rows} rows ({})", names.join(", "));
            copied += 1;
        }
        rows += table_rows;
    }
    let identities: Vec<(String, String)> = tx
        .query(
            "SELECT table_name, column_name FROM information_schema.columns
             WHERE table_schema = 'public' AND is_identity = 'YES'",
            &[],
        )
        .unwrap()
        .into_iter()
        .map(|r| (r.get(0), r.get(1)))
        .collect();
    for (table, column) in identities {
        tx.batch_execute(&format!(
            "SELECT setval(pg_get_serial_sequence('{table}', '{column}'),
                           GREATEST((SELECT max({column}) FROM {table}), 1))"
        ))
        .unwrap();
    }
    tx.commit().unwrap();
    // Statistics for the planner, and every copied row marked visible and frozen now: left to
    // autovacuum, that work would run during the first measured rows and count as their
    // server CPU.
    pg.batch_execute("VACUUM (FREEZE, ANALYZE)").unwrap();
    CopyReport {
        tables: copied,
        rows,
        ms: started.elapsed().as_secs_f64() * 1000.0,
    }
}

/// The schema's tables (but its migration record), every table after the tables it refers to.
fn tables_parents_first(pg: &mut Client) -> Vec<String> {
    let all: Vec<String> = pg
        .query(
            "SELECT table_name FROM information_schema.tables
             WHERE table_schema = 'public' AND table_type = 'BASE TABLE'
               AND table_name <> 'schema_migrations' ORDER BY table_name",
            &[],
        )
        .unwrap()
        .into_iter()
        .map(|r| r.get(0))
        .collect();
    let mut parents: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for r in pg
        .query(
            "SELECT conrelid::regclass::text, confrelid::regclass::text FROM pg_constraint
             WHERE contype = 'f' AND conrelid <> confrelid",
            &[],
        )
        .unwrap()
    {
        parents
            .entry(r.get(0))
            .or_default()
            .insert(r.get::<_, String>(1));
    }
    let mut ordered: Vec<String> = Vec::new();
    while ordered.len() < all.len() {
        let before = ordered.len();
        for t in &all {
            let ready = !ordered.contains(t)
                && parents
                    .get(t)
                    .is_none_or(|ps| ps.iter().all(|p| ordered.contains(p) || !all.contains(p)));
            if ready {
                ordered.push(t.clone());
            }
        }
        assert!(ordered.len() > before, "foreign keys form a cycle");
    }
    ordered
}

/// Streams one table's rows in `COPY`'s text format; returns the number of rows.
fn copy_table(
    source: &rusqlite::Connection,
    tx: &mut postgres::Transaction<'_>,
    table: &str,
    columns: &[(String, String)],
) -> u64 {
    let names: Vec<&str> = columns.iter().map(|(n, _)| n.as_str()).collect();
    let list = names.join(", ");
    let mut select = source
        .prepare(&format!("SELECT {list} FROM {table}"))
        .unwrap();
    let mut rows = select.query([]).unwrap();
    let Some(mut row) = rows.next().unwrap() else {
        return 0;
    };
    let writer = tx
        .copy_in(&format!("COPY {table} ({list}) FROM STDIN"))
        .unwrap();
    let mut out = std::io::BufWriter::with_capacity(1 << 20, writer);
    let mut line = Vec::with_capacity(4096);
    let mut count = 0;
    loop {
        line.clear();
        for (i, (_, pg_type)) in columns.iter().enumerate() {
            if i > 0 {
                line.push(b'\t');
            }
            write_value(&mut line, row.get_ref(i).unwrap(), pg_type);
        }
        line.push(b'\n');
        out.write_all(&line).unwrap();
        count += 1;
        match rows.next().unwrap() {
            Some(next) => row = next,
            None => break,
        }
    }
    out.into_inner()
        .map_err(|e| e.into_error())
        .unwrap()
        .finish()
        .unwrap();
    count
}

/// One value in `COPY`'s text format: `\N` for NULL, backslash escapes for text, `\\x` hex for
/// bytes, `t`/`f` for a boolean column.
fn write_value(out: &mut Vec<u8>, value: rusqlite::types::ValueRef<'_>, pg_type: &str) {
    use rusqlite::types::ValueRef;
    match value {
        ValueRef::Null => out.extend_from_slice(b"\\N"),
        ValueRef::Integer(v) if pg_type == "boolean" => {
            out.push(if v != 0 { b't' } else { b'f' });
        }
        ValueRef::Integer(v) => {
            let _ = write!(out, "{v}");
        }
        ValueRef::Real(v) => {
            let _ = write!(out, "{v}");
        }
        ValueRef::Text(t) => escape_text(out, t),
        ValueRef::Blob(b) if pg_type == "bytea" => {
            out.extend_from_slice(b"\\\\x");
            out.extend_from_slice(hex::encode(b).as_bytes());
        }
        ValueRef::Blob(b) => escape_text(out, b),
    }
}

fn escape_text(out: &mut Vec<u8>, text: &[u8]) {
    for &c in text {
        match c {
            b'\\' => out.extend_from_slice(b"\\\\"),
            b'\t' => out.extend_from_slice(b"\\t"),
            b'\n' => out.extend_from_slice(b"\\n"),
            b'\r' => out.extend_from_slice(b"\\r"),
            _ => out.push(c),
        }
    }
}
