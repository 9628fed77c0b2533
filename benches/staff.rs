//! The staff UI's lists at scale: server time of a mandates page (and the dashboard, the
//! customer search) with 200,000 mandates.
//!
//! `cargo bench --bench staff` (release). A fresh database is made through `Store::open` (the
//! real migrations, so the real indexes), bulk-filled with plain SQL (`STAFF_BENCH_MANDATES`
//! mandates, default 200,000, of 3 installments each, over 50,000 customers and 4 commerces),
//! then the engine is started with `app::start` and each request is timed over loopback with
//! a signed-in admin's session: first pages, deep pages (following `nextCursor`), and every
//! filter of the screen. Figures (median and p95 of 30 runs, in ms) are printed and written
//! to `target/bench-staff.json`.

use std::sync::Arc;
use std::time::{Duration, Instant};

use mandato::app;
use mandato::clock::{Clock, SystemClock};
use mandato::config::Config;
use rusqlite::params;
use serde_json::{Value, json};

const RUNS: usize = 30;

fn main() {
    let mandates: i64 = std::env::var("STAFF_BENCH_MANDATES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(200_000);
    let dir = tempfile::tempdir().expect("temp dir");
    let mut config = Config::new(dir.path().to_path_buf());
    config.listen = "127.0.0.1:0".parse().unwrap();
    config.charge_at = None;
    let started = Instant::now();
    fill(&config, mandates);
    println!(
        "filled {mandates} mandates in {:.1} s",
        started.elapsed().as_secs_f64()
    );
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(measure(config, mandates));
}

fn fill(config: &Config, mandates: i64) {
    let store = mandato::store::Store::open(&config.database_path()).expect("store");
    drop(store);
    let mut conn = rusqlite::Connection::open(config.database_path()).unwrap();
    conn.execute_batch("PRAGMA journal_mode = WAL; PRAGMA synchronous = OFF;")
        .unwrap();
    let tx = conn.transaction().unwrap();
    for c in 1..=4 {
        tx.execute(
            "INSERT INTO commerces (id, code, name, password_hash, payment_methods, webhook_secret, created_at)
             VALUES (?1, 'C' || ?1, 'Comercio ' || ?1, 'x', '[3,4,5]', 'whsec_x', '2026-01-01T00:00:00.000Z')",
            [c],
        )
        .unwrap();
    }
    let customers = (mandates / 4).max(1);
    {
        let mut insert = tx
            .prepare(
                "INSERT INTO customers (seq, id, commerce_id, user_id, rut, first_name, last_name, email,
                        created_at, updated_at)
                 VALUES (?1, 'usr_' || ?1, ?2, 'cust-' || ?1, ?3, 'Nombre' || ?1, 'Apellido' || (?1 % 977),
                         'c' || ?1 || '@example.cl', ?4, ?4)",
            )
            .unwrap();
        for n in 1..=customers {
            insert
                .execute(params![
                    n,
                    1 + n % 4,
                    format!("{}-{}", 10_000_000 + n, n % 10),
                    stamp(n)
                ])
                .unwrap();
        }
    }
    {
        let mut mandate = tx
            .prepare(
                "INSERT INTO mandates (seq, id, commerce_id, customer_seq, external_id, type, state, name,
                        terminate_when_charged, charges, payment_methods, magic_link_token,
                        magic_link_expires_at, created_at, updated_at)
                 VALUES (?1, 'man_' || ?1, ?2, ?3, 'M-' || ?1, ?4, ?5, 'Plan', 0,
                         '{\"currencyId\":\"CLP\",\"amount\":29990,\"periodicity\":\"MONTHLY\"}', '[3]',
                         'tok' || ?1, '2027-01-01T00:00:00.000Z', ?6, ?6)",
            )
            .unwrap();
        let mut installment = tx
            .prepare(
                "INSERT INTO installments (id, mandate_seq, commerce_id, external_id, amount, currency,
                        due_date, state, state_at, created_at)
                 VALUES ('ins_' || ?1 || '_' || ?2, ?1, ?3, ?2, '29990', 'CLP', ?4, ?5, ?6, ?6)",
            )
            .unwrap();
        for n in 1..=mandates {
            let customer = 1 + n % customers;
            let commerce = 1 + customer % 4;
            // Mostly ACTIVE and PENDING; some CANCELLED, FINISHED and a few DELETED.
            let state = match n % 20 {
                0..=10 => 2,
                11..=15 => 1,
                16..=17 => 3,
                18 => 4,
                _ => 5,
            };
            let at = stamp(n);
            mandate
                .execute(params![n, commerce, customer, 1 + n % 4, state, at])
                .unwrap();
            for k in 1..=3 {
                let paid = k == 1 && state == 2;
                installment
                    .execute(params![
                        n,
                        k.to_string(),
                        commerce,
                        format!("2026-{:02}-{:02}", 1 + (n + k) % 12, 1 + n % 28),
                        if paid { 2 } else { 1 },
                        at
                    ])
                    .unwrap();
            }
        }
    }
    // The staff search terms the store writes with each mandate.
    mandato::store::mandates::index_filled_mandates(&tx).unwrap();
    tx.commit().unwrap();
    conn.execute_batch("PRAGMA optimize; PRAGMA wal_checkpoint(TRUNCATE);")
        .unwrap();
}

/// Creation times spread over the year before the business date, in creation order.
fn stamp(n: i64) -> String {
    let base = chrono::DateTime::parse_from_rfc3339("2025-11-01T00:00:00Z").unwrap();
    (base + chrono::Duration::seconds(n * 120))
        .with_timezone(&chrono::Utc)
        .format("%Y-%m-%dT%H:%M:%S%.3fZ")
        .to_string()
}

async fn measure(config: Config, mandates: i64) {
    let running = app::start(config, Arc::new(SystemClock) as Arc<dyn Clock>)
        .await
        .expect("engine starts");
    let base = running.base_url();
    let client = reqwest::Client::new();
    let setup = client
        .post(format!("{base}/admin/api/setup"))
        .json(&json!({"email": "bench@example.cl", "password": "bench password"}))
        .send()
        .await
        .unwrap();
    let cookie = setup.headers()["set-cookie"]
        .to_str()
        .unwrap()
        .split(';')
        .next()
        .unwrap()
        .to_string();
    let get = |path: String| {
        let client = client.clone();
        let cookie = cookie.clone();
        let url = format!("{base}/admin/api{path}");
        async move {
            let started = Instant::now();
            let response = client
                .get(&url)
                .header("cookie", cookie)
                .send()
                .await
                .unwrap();
            assert!(
                response.status().is_success(),
                "{url}: {}",
                response.status()
            );
            let body: Value = response.json().await.unwrap();
            (started.elapsed(), body)
        }
    };
    // A cursor deep in the list: follow ten pages of 200.
    let mut cursor = String::new();
    for _ in 0..10 {
        let (_, body) = get(format!("/mandates?limit=200{cursor}")).await;
        cursor = format!(
            "&cursor={}",
            body["payload"]["nextCursor"].as_str().unwrap()
        );
    }
    let deep = cursor.clone();
    let cases: Vec<(&str, String)> = vec![
        ("mandates, first page (50)", "/mandates".into()),
        (
            "mandates, page after 2,000 rows",
            format!("/mandates?limit=50{deep}"),
        ),
        ("mandates, state=ACTIVE", "/mandates?state=ACTIVE".into()),
        (
            "mandates, state=DELETED (rare)",
            "/mandates?state=DELETED".into(),
        ),
        ("mandates, type=ONEPAY", "/mandates?type=ONEPAY".into()),
        ("mandates, commerce=C2", "/mandates?commerce=C2".into()),
        (
            "mandates, state+type+commerce",
            "/mandates?state=PENDING&type=DYNAMIC&commerce=C3".into(),
        ),
        (
            "mandates, created in one month",
            "/mandates?createdFrom=2026-03-01&createdTo=2026-03-31".into(),
        ),
        (
            "mandates, by customer userId",
            "/mandates?customer=cust-4242".into(),
        ),
        ("mandates, by mandate id", "/mandates?id=M-123456".into()),
        ("customers, first page", "/customers".into()),
        ("customers, by RUT", "/customers?q=10004242-2".into()),
        ("customers, by name", "/customers?q=Nombre4242".into()),
        (
            "customers, sorted by name",
            "/customers?sort=name.asc".into(),
        ),
        (
            "mandates, search part of an id",
            "/mandates?q=M-12345".into(),
        ),
        (
            "mandates, search a customer name",
            "/mandates?q=nombre4242".into(),
        ),
        ("mandates, search common text", "/mandates?q=plan".into()),
        (
            "mandates, sorted by mandateId",
            "/mandates?sort=mandateId.asc".into(),
        ),
        ("dashboard", "/dashboard".into()),
    ];
    let mut results = Vec::new();
    println!("{:<36} {:>10} {:>10}", "request", "median ms", "p95 ms");
    for (name, path) in cases {
        let mut times: Vec<Duration> = Vec::with_capacity(RUNS);
        let (_, body) = get(path.clone()).await;
        let rows = body["payload"]["items"].as_array().map_or(0, Vec::len);
        for _ in 0..RUNS {
            times.push(get(path.clone()).await.0);
        }
        times.sort();
        let ms = |d: Duration| d.as_secs_f64() * 1000.0;
        let median = ms(times[RUNS / 2]);
        let p95 = ms(times[RUNS * 95 / 100]);
        println!("{name:<36} {median:>10.2} {p95:>10.2}   ({rows} rows)");
        results.push(
            json!({"request": name, "path": path, "medianMs": median, "p95Ms": p95, "rows": rows}),
        );
    }
    let out = json!({"mandates": mandates, "installments": mandates * 3, "runs": RUNS, "results": results});
    let target = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("target/bench-staff.json");
    std::fs::write(&target, serde_json::to_string_pretty(&out).unwrap()).unwrap();
    println!("written to {}", target.display());
    running.shutdown().await.expect("clean shutdown");
}
