//! Benchmark of the store's query layer on SQLite (see `bench/README.md`, "Query layer").
//!
//! `cargo bench --bench db` (release). The same primary-key lookup (four columns of four
//! types, two parameters) run N times directly through rusqlite's `prepare_cached` and N times
//! through `store::db::Db`, alternately in three rounds, printing nanoseconds per query: what
//! the backend-neutral layer costs SQLite's request path.
//!
//! `MANDATO_BENCH_DB_N` overrides N (default 1,000,000).

use std::hint::black_box;
use std::time::Instant;

use mandato::store::db::{Db, params};
use rusqlite::OptionalExtension;

const ROWS: i64 = 1_000;
const SQL: &str = "SELECT seq, id, name, flag FROM t WHERE seq = ?1 AND commerce_id = ?2";

type Found = Option<(i64, String, Option<String>, bool)>;

fn main() {
    let n: i64 = std::env::var("MANDATO_BENCH_DB_N")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1_000_000);
    let conn = rusqlite::Connection::open_in_memory().expect("an in-memory database");
    conn.execute_batch(
        "CREATE TABLE t (seq INTEGER PRIMARY KEY, id TEXT NOT NULL, commerce_id INTEGER NOT NULL,
                         name TEXT, flag INTEGER NOT NULL)",
    )
    .expect("the table");
    for seq in 0..ROWS {
        conn.execute(
            "INSERT INTO t (seq, id, commerce_id, name, flag) VALUES (?1, ?2, 7, 'name', 1)",
            rusqlite::params![seq, format!("id{seq}")],
        )
        .expect("a row");
    }
    for round in 1..=3 {
        let direct = time(n, |seq| {
            conn.prepare_cached(SQL)
                .expect("prepared")
                .query_row(rusqlite::params![seq, 7_i64], |r| {
                    Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?))
                })
                .optional()
                .expect("queried")
        });
        let db = Db::Sqlite(&conn);
        let layered = time(n, |seq| {
            db.query_opt(SQL, &params![seq, 7_i64], |r| {
                Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?))
            })
            .expect("queried")
        });
        println!("round {round}: rusqlite {direct:.0} ns/query, store::db {layered:.0} ns/query");
    }
}

/// Nanoseconds per call of `lookup` over `n` calls.
fn time(n: i64, lookup: impl Fn(i64) -> Found) -> f64 {
    let start = Instant::now();
    for k in 0..n {
        black_box(lookup(black_box(k % ROWS)));
    }
    start.elapsed().as_nanos() as f64 / n as f64
}
