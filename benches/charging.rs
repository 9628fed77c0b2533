//! Benchmark of the daily charging run (see `bench/README.md`).
//!
//! `cargo bench --bench charging` (release). Steps:
//! 1. a child process (this binary, `MANDATO_BENCH_PHASE=fill`) creates the database through
//!    `Store::open` (the real migrations) and a commerce through the library, then writes with
//!    plain SQL customers, ACTIVE SUBSCRIPTION mandates with an enrolled card of the simulated
//!    acquirer (instrument, acceptance, the acquirer's record of the card, the activation
//!    event) and their installments, the first of each due on the run's business date;
//! 2. the run: the real binary, `mandato --data-dir D charge-run --date D` (the code path of the
//!    CLI and of the daily schedule, the simulated acquirer answering at once), timed from spawn
//!    to exit, i.e. until every state and every event is committed durably; its RSS is sampled
//!    every 250 ms from `/proc/<pid>/status`;
//! 3. the result is checked with SQL: every due installment PAID after exactly one attempt, one
//!    acquirer charge per idempotency key, its IN_PROCESS and PAID payment events in the outbox
//!    with gapless per-mandate sequences, nothing else touched;
//! 4. the raw SQLite rate on the same file: as many single-row `UPDATE installments ... WHERE
//!    seq = ?` + `INSERT INTO events` pairs as there were due installments, 1,000 pairs per
//!    transaction, WAL and `synchronous=FULL`.
//!
//! Figures are printed as a table and written to `target/charging-bench-results.json`.
//!
//! `MANDATO_BENCH_ACQUIRER=transbank` runs the same fill against a Transbank Oneclick Mall
//! stand-in instead of the simulation: an HTTP server in this process answering each
//! authorization after `MANDATO_BENCH_LATENCY_MS` (200), the commerce's cards rail set to it
//! with `mandato acquirer set`. It reports the run's time against the ideal `N × latency /
//! in-flight bound` (64, the engine's default), the run's RSS, and checks at the stand-in that
//! no buy order was sent twice and that every installment is PAID after one authorization
//! (`target/charging-bench-transbank.json`).

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use chrono::{NaiveDate, TimeZone, Utc};
use rusqlite::{Connection, params};
use serde_json::{Value, json};

use common::{TICKS_PER_S, env_u64, fsync_probe, id7, machine_busy_ticks, mix, round1, round3, ts};

const COMMERCE: &str = "76123456-0";
const DB_FILE: &str = "mandato.db";
const FILL_MARKER: &str = "charging-bench-fill.json";
const PRISTINE: &str = "charging-bench-filled.db";
/// The simulated acquirer's approving test card (CONTRACT 6).
const CARD_LAST4: &str = "1111";
const PAYMENT_HOOK: &str = "https://merchant.example/hooks/payment";
const ACTIVATION_HOOK: &str = "https://merchant.example/hooks/activation";

// ---------------------------------------------------------------------------------------------
// Parameters
// ---------------------------------------------------------------------------------------------

#[derive(Clone, Debug)]
struct Params {
    quick: bool,
    /// Due installments = mandates (each mandate has one installment due on the run's date).
    count: u64,
    per_mandate: u64,
    raw_batch: u64,
    keep_db: Option<PathBuf>,
    wait_quiet: Duration,
    skip_raw: bool,
    /// `MANDATO_BENCH_BACKEND=postgres`: the runs on PostgreSQL (see `charging_on_postgres`)
    /// instead of SQLite's.
    postgres: bool,
    /// The engine counts of the PostgreSQL runs, in order (`MANDATO_BENCH_PG_ENGINES`, default
    /// `1,2`).
    pg_engines: Vec<usize>,
}

impl Params {
    fn from_env() -> Params {
        let quick = std::env::var("MANDATO_BENCH_QUICK").is_ok_and(|v| v == "1");
        Params {
            quick,
            count: env_u64("MANDATO_BENCH_COUNT").unwrap_or(if quick {
                100_000
            } else {
                1_000_000
            }),
            per_mandate: env_u64("MANDATO_BENCH_PER_MANDATE").unwrap_or(3).max(1),
            raw_batch: env_u64("MANDATO_BENCH_RAW_BATCH").unwrap_or(1_000).max(1),
            keep_db: std::env::var_os("MANDATO_BENCH_DB_DIR").map(PathBuf::from),
            wait_quiet: Duration::from_secs(env_u64("MANDATO_BENCH_WAIT_QUIET_SECS").unwrap_or(0)),
            skip_raw: std::env::var("MANDATO_BENCH_SKIP_RAW").is_ok_and(|v| v == "1"),
            postgres: match std::env::var("MANDATO_BENCH_BACKEND").as_deref() {
                Ok("postgres") => true,
                Ok("sqlite") | Err(_) => false,
                Ok(other) => panic!("MANDATO_BENCH_BACKEND is sqlite or postgres, not {other}"),
            },
            pg_engines: std::env::var("MANDATO_BENCH_PG_ENGINES")
                .unwrap_or_else(|_| "1,2".into())
                .split(',')
                .map(|n| {
                    n.trim()
                        .parse::<usize>()
                        .ok()
                        .filter(|&n| n >= 1)
                        .unwrap_or_else(|| {
                            panic!("MANDATO_BENCH_PG_ENGINES: {n:?} is not an engine count")
                        })
                })
                .collect(),
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Reproducible ids and times
// ---------------------------------------------------------------------------------------------

/// The installment seq of mandate `m`'s `k`-th installment (written in this order).
fn installment_seq(m: u64, k: u64, per_mandate: u64) -> i64 {
    ((m - 1) * per_mandate + k + 1) as i64
}

// ---------------------------------------------------------------------------------------------
// Phase 1: the fill (child process)
// ---------------------------------------------------------------------------------------------

fn fill_main() {
    let dir = PathBuf::from(std::env::var_os("MANDATO_BENCH_FILL_DIR").expect("fill dir"));
    let count = env_u64("MANDATO_BENCH_FILL_COUNT").expect("count");
    let per_mandate = env_u64("MANDATO_BENCH_FILL_PER_MANDATE").expect("per mandate");
    let date: NaiveDate = std::env::var("MANDATO_BENCH_FILL_DATE")
        .expect("date")
        .parse()
        .expect("date");
    let wanted = json!({"count": count, "per_mandate": per_mandate, "date": date.to_string()});
    let db = dir.join(DB_FILE);
    let pristine = dir.join(PRISTINE);
    let marker = dir.join(FILL_MARKER);
    for suffix in ["", "-wal", "-shm"] {
        let _ = std::fs::remove_file(dir.join(format!("{DB_FILE}{suffix}")));
    }
    let reuse = std::env::var("MANDATO_BENCH_FILL_KEEP").is_ok_and(|v| v == "1");
    if reuse {
        let previous: Option<Value> = std::fs::read_to_string(&marker)
            .ok()
            .and_then(|t| serde_json::from_str(&t).ok());
        if let Some(mut p) = previous.filter(|p| p["layout"] == wanted && pristine.exists()) {
            eprintln!("[fill] reusing the filled database in {}", dir.display());
            let t = Instant::now();
            std::fs::copy(&pristine, &db).expect("copy the filled database");
            p["reused"] = json!(true);
            p["copy_ms"] = json!(t.elapsed().as_secs_f64() * 1000.0);
            println!("{}", serde_json::to_string(&p).unwrap());
            return;
        }
    }
    let mut report = fill_fresh(&db, count, per_mandate, date);
    report["layout"] = wanted;
    report["reused"] = json!(false);
    if reuse {
        std::fs::copy(&db, &pristine).expect("keep the filled database");
        std::fs::write(&marker, serde_json::to_string_pretty(&report).unwrap()).unwrap();
    }
    println!("{}", serde_json::to_string(&report).unwrap());
}

fn fill_fresh(db: &Path, count: u64, per_mandate: u64, date: NaiveDate) -> Value {
    use mandato::auth::{api_key, password};
    use mandato::documents::spanish::{self, TermsSubject};
    use mandato::domain::schedule::{Periodicity, nth_due_date};
    use mandato::domain::state::{InstallmentState, MandateState, MandateType, PaymentMethod};
    use mandato::secret::Secret;
    use mandato::store::Store;
    use mandato::store::commerces::{self, NewCommerce};

    let setup_started = Instant::now();
    // Schema and commerce through the library.
    let store = Store::open(db).expect("open the store");
    let hash = password::hash_password(&Secret::new("bench password 1".to_string()));
    let secret = api_key::generate_webhook_secret();
    let commerce_name = "Comercio de carga";
    store
        .write(|tx| {
            commerces::insert(
                tx,
                &NewCommerce {
                    code: COMMERCE,
                    name: commerce_name,
                    password_hash: &hash,
                    channels: None,
                    payment_methods: PaymentMethod::ALL,
                    webhook_secret: &secret,
                    authorization_required: false,
                    created_at: "2025-01-01T00:00:00.000Z",
                },
            )?;
            Ok(())
        })
        .expect("commerce");
    let commerce = store
        .read(|c| Ok(commerces::by_code(c, COMMERCE)?))
        .expect("commerce")
        .expect("commerce row");
    drop(store);
    let setup_ms = setup_started.elapsed().as_secs_f64() * 1000.0;

    let mut conn = Connection::open(db).expect("bulk connection");
    conn.execute_batch(
        "PRAGMA synchronous = OFF; PRAGMA cache_size = -262144; PRAGMA temp_store = MEMORY;
         PRAGMA foreign_keys = OFF;",
    )
    .unwrap();
    const BATCH: u64 = 20_000;
    let fill_started = Instant::now();
    // Mandates were created and activated over the 30 days before the run; installments are
    // monthly from the run's date.
    let run_noon = Utc
        .from_utc_datetime(&date.and_hms_opt(9, 0, 0).unwrap())
        .timestamp_millis();
    let first_ms = run_noon - 30 * 86_400_000;
    let spacing = (29 * 86_400_000 / count as i64).max(1);
    let customers = count.div_ceil(2);
    let customer_of = |m: u64| (m - 1) % customers + 1;
    let mandate_ms = |m: u64| first_ms + (m as i64) * spacing;
    let customer_ms = |c: u64| mandate_ms(c) - 60_000;

    // Customers (two mandates each).
    let t = Instant::now();
    let mut c = 1;
    while c <= customers {
        let tx = conn.transaction().unwrap();
        {
            let mut stmt = tx
                .prepare_cached(
                    "INSERT INTO customers (seq, id, commerce_id, user_id, rut, first_name, last_name,
                        second_last_name, address, email, phone, created_at, updated_at)
                     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?12)",
                )
                .unwrap();
            let end = (c + BATCH).min(customers + 1);
            for seq in c..end {
                const FIRST: [&str; 4] = ["Ana", "Benjamín", "Catalina", "Diego"];
                const LAST: [&str; 4] = ["Pérez", "González", "Muñoz", "Rojas"];
                let body = 10_000_000 + seq as u32;
                let rut = format!("{body}-{}", mandato::domain::rut::check_digit(body));
                let h = mix(seq);
                let address = json!({"street": "Av. Providencia", "number": format!("{}", h % 9000 + 100),
                    "commune": "Providencia", "city": "Santiago", "region": "RM", "country": "CL"});
                stmt.execute(params![
                    seq as i64,
                    id7("usr", customer_ms(seq), 1, seq, 0),
                    commerce.id,
                    format!("U{seq:07}"),
                    rut,
                    FIRST[(h % 4) as usize],
                    LAST[((h >> 8) % 4) as usize],
                    (!h.is_multiple_of(5)).then_some(LAST[((h >> 16) % 4) as usize]),
                    (!h.is_multiple_of(7)).then(|| address.to_string()),
                    format!("cliente{seq}@example.cl"),
                    Some(format!("+569{:08}", h % 100_000_000)),
                    ts(customer_ms(seq)),
                ])
                .unwrap();
            }
            c = end;
        }
        tx.commit().unwrap();
    }
    let customers_ms = t.elapsed().as_secs_f64() * 1000.0;
    eprintln!("[fill] {customers} customers in {customers_ms:.0} ms");

    // ACTIVE SUBSCRIPTION mandates, each with its instrument, acceptance, the acquirer's record
    // of the card, its activation event and its installments (the first due on `date`).
    let t = Instant::now();
    let mut m = 1;
    while m <= count {
        let tx = conn.transaction().unwrap();
        {
            let mut mstmt = tx
                .prepare_cached(
                    "INSERT INTO mandates (seq, id, commerce_id, customer_seq, external_id, type, state,
                        name, detail, terminate_when_charged, charges, payment_methods, metadata,
                        url_callback, url_activation_webhook, url_payment_webhook, magic_link_token,
                        magic_link_expires_at, enrolled_method, cancel_description, event_sequence,
                        created_at, updated_at, activated_at)
                     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, 0, ?10, '[3,4,5]', ?11, ?12, ?13,
                        ?14, ?15, ?16, ?17, NULL, 1, ?18, ?19, ?19)",
                )
                .unwrap();
            let mut istmt = tx
                .prepare_cached(
                    "INSERT INTO installments (seq, id, mandate_seq, commerce_id, external_id, amount,
                        currency, due_date, state, state_at, attempts, created_at)
                     VALUES (?1, ?2, ?3, ?4, ?5, ?6, 'CLP', ?7, ?8, ?9, 0, ?9)",
                )
                .unwrap();
            let mut instr = tx
                .prepare_cached(
                    "INSERT INTO instruments (mandate_seq, method_id, processor_token, brand, last4,
                        bank_code, account_type, holder_rut, created_at)
                     VALUES (?1, ?2, ?3, 'VISA', ?4, NULL, NULL, NULL, ?5)",
                )
                .unwrap();
            let mut sim = tx
                .prepare_cached(
                    "INSERT INTO sim_instruments (token, kind, last4, created_at)
                     VALUES (?1, 'CARD', ?2, ?3)",
                )
                .unwrap();
            let mut acc = tx
                .prepare_cached(
                    "INSERT INTO acceptances (mandate_seq, accepted_at, ip, user_agent, terms,
                        terms_sha256, document_sha256)
                     VALUES (?1, ?2, ?3, ?4, ?5, ?6, NULL)",
                )
                .unwrap();
            let mut ev = tx
                .prepare_cached(
                    "INSERT INTO events (id, commerce_id, mandate_seq, installment_seq, kind, sequence,
                        url, body, delivery_state, next_attempt_at, created_at, attempts, delivered_at)
                     VALUES (?1, ?2, ?3, NULL, 'activation', 1, ?4, ?5, 'DELIVERED', ?6, ?6, 1, ?7)",
                )
                .unwrap();
            let end = (m + BATCH).min(count + 1);
            for seq in m..end {
                let h = mix(seq ^ 0xABCD);
                let created_ms = mandate_ms(seq);
                let created = ts(created_ms);
                let activated_ms = created_ms + 600_000;
                let activated = ts(activated_ms);
                let amount = [9_990u64, 19_990, 29_990, 49_990][(h % 4) as usize];
                let name = ["Plan mensual", "Gimnasio", "Seguro hogar", "Colegiatura"]
                    [(h >> 4) as usize % 4];
                let external_id = format!("SUB-{seq:08}");
                let charges = json!({"currencyId": "CLP", "amount": amount, "periodicity": "MONTHLY",
                    "startDate": date.to_string(), "count": per_mandate, "endDate": null,
                    "dueDate": null, "maxAmount": null});
                let method = PaymentMethod::from_id(3).expect("credit card");
                let enrolled = json!({"id": method.id(), "name": method.name(),
                    "instrument": format!("VISA **** {CARD_LAST4}")});
                let mut token = [0u8; 16];
                token[..8].copy_from_slice(&seq.to_be_bytes());
                token[8..].copy_from_slice(&h.to_be_bytes());
                use base64::Engine;
                let link_token = base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(token);
                let mandate_id = id7("man", created_ms, 2, seq, 0);
                let customer_seq = customer_of(seq);
                mstmt
                    .execute(params![
                        seq as i64,
                        mandate_id,
                        commerce.id,
                        customer_seq as i64,
                        external_id,
                        MandateType::Subscription.id(),
                        MandateState::Active.id(),
                        name,
                        (!h.is_multiple_of(3)).then_some("Cargo mensual automático"),
                        charges.to_string(),
                        h.is_multiple_of(2)
                            .then(|| json!({"plan": "gold", "branch": h % 50}).to_string()),
                        Some("https://merchant.example/return"),
                        Some(ACTIVATION_HOOK),
                        Some(PAYMENT_HOOK),
                        link_token,
                        ts(created_ms + 7 * 86_400_000),
                        enrolled.to_string(),
                        created,
                        activated,
                    ])
                    .unwrap();
                for k in 0..per_mandate {
                    let start = mandato::domain::date::Date::new(date).expect("fill date in range");
                    let due = nth_due_date(start, Periodicity::Monthly, k as u32).expect("date");
                    istmt
                        .execute(params![
                            installment_seq(seq, k, per_mandate),
                            id7("ins", created_ms, 3, seq, k as u8),
                            seq as i64,
                            commerce.id,
                            (k + 1).to_string(),
                            amount.to_string(),
                            due.to_string(),
                            InstallmentState::Pending.id(),
                            created,
                        ])
                        .unwrap();
                }
                let processor_token = id7("tok", activated_ms, 4, seq, 0);
                instr
                    .execute(params![
                        seq as i64,
                        method.id(),
                        processor_token,
                        CARD_LAST4,
                        activated
                    ])
                    .unwrap();
                sim.execute(params![processor_token, CARD_LAST4, activated])
                    .unwrap();
                let summary = format!(
                    "{per_mandate} cuotas mensuales de ${amount} desde el {}",
                    date.format("%d-%m-%Y")
                );
                let terms = spanish::terms(
                    &TermsSubject {
                        commerce_name,
                        commerce_code: COMMERCE,
                        mandate_id: &external_id,
                        mandate_name: name,
                        summary: &summary,
                    },
                    method,
                );
                use sha2::Digest;
                acc.execute(params![
                    seq as i64,
                    activated,
                    format!("203.0.113.{}", h % 250 + 1),
                    "Mozilla/5.0 (Linux; Android 14) AppleWebKit/537.36 Chrome/124.0 Mobile Safari/537.36",
                    terms,
                    hex::encode(sha2::Sha256::digest(terms.as_bytes())),
                ])
                .unwrap();
                // The activation event as `notify::events::record_activation` writes it, signed
                // with the commerce's secret, delivered.
                let event_id = id7("evt", activated_ms, 5, seq, 0);
                let body = json!({
                    "event": "activation", "eventId": event_id, "createdAt": activated,
                    "sequence": 1,
                    "product": {"internalId": mandate_id, "id": external_id, "type": "SUBSCRIPTION",
                                "state": {"id": 2, "name": "ACTIVE"}},
                    "customer": {"internalUserId": id7("usr", customer_ms(customer_seq), 1, customer_seq, 0),
                                 "userId": format!("U{customer_seq:07}")},
                    "paymentMethod": enrolled, "dateTime": activated, "fileBase64": null,
                });
                let signed = mandato::notify::signing::sign_body(body, &commerce.webhook_secret);
                ev.execute(params![
                    event_id,
                    commerce.id,
                    seq as i64,
                    ACTIVATION_HOOK,
                    signed.to_string(),
                    activated,
                    ts(activated_ms + 250),
                ])
                .unwrap();
            }
            m = end;
        }
        tx.commit().unwrap();
        if m % (count / 5).max(1) < BATCH {
            eprintln!(
                "[fill] {} mandates, {:.0} s",
                m - 1,
                t.elapsed().as_secs_f64()
            );
        }
    }
    // The staff search terms the store writes with each mandate.
    mandato::store::mandates::index_filled_mandates(&conn).unwrap();
    let mandates_ms = t.elapsed().as_secs_f64() * 1000.0;
    let t = Instant::now();
    conn.execute_batch("PRAGMA wal_checkpoint(TRUNCATE);")
        .unwrap();
    drop(conn);
    let checkpoint_ms = t.elapsed().as_secs_f64() * 1000.0;
    let fill_ms = fill_started.elapsed().as_secs_f64() * 1000.0;
    let db_bytes = std::fs::metadata(db).map(|m| m.len()).unwrap_or(0);
    eprintln!(
        "[fill] {count} mandates, {} installments in {mandates_ms:.0} ms; checkpoint {checkpoint_ms:.0} ms; {:.0} MB",
        count * per_mandate,
        db_bytes as f64 / 1e6
    );
    json!({
        "setup_ms": setup_ms,
        "fill_ms": fill_ms,
        "customers_ms": customers_ms,
        "mandates_ms": mandates_ms,
        "checkpoint_ms": checkpoint_ms,
        "rows": {"customers": customers, "mandates": count, "installments": count * per_mandate,
                 "due": count},
        "db_bytes": db_bytes,
    })
}

// ---------------------------------------------------------------------------------------------
// Machine load and memory (/proc)
// ---------------------------------------------------------------------------------------------

/// Clock ticks: busy ticks of the whole machine, and this process's own and its waited-for
/// children's user + system ticks.
#[derive(Clone, Copy, Debug, Default)]
struct CpuSample {
    busy: u64,
    own: u64,
    children: u64,
}

fn stat_fields(stat: &str) -> Vec<u64> {
    // Fields after the command name start at field 3 (state).
    stat.rsplit_once(')')
        .map(|(_, rest)| {
            rest.split_whitespace()
                .map(|v| v.parse().unwrap_or(0))
                .collect()
        })
        .unwrap_or_default()
}

fn cpu_sample() -> CpuSample {
    let own = stat_fields(&std::fs::read_to_string("/proc/self/stat").unwrap_or_default());
    let at = |i: usize| own.get(i).copied().unwrap_or(0);
    CpuSample {
        busy: machine_busy_ticks(),
        // utime, stime (fields 14, 15); cutime, cstime (16, 17).
        own: at(11) + at(12),
        children: at(13) + at(14),
    }
}

/// Waits (up to `limit`) for a quiet machine; see [`common::wait_for_quiet`].
fn wait_for_quiet(limit: Duration) -> f64 {
    common::wait_for_quiet(limit, || {
        let a = cpu_sample();
        std::thread::sleep(Duration::from_secs(1));
        cpu_split(a, cpu_sample(), 1.0).1
    })
}

/// (this benchmark's cores, including waited-for children; other processes' cores).
fn cpu_split(a: CpuSample, b: CpuSample, secs: f64) -> (f64, f64) {
    let hz = TICKS_PER_S;
    let own = (b.own + b.children).saturating_sub(a.own + a.children) as f64 / hz / secs;
    let busy = b.busy.saturating_sub(a.busy) as f64 / hz / secs;
    (own, (busy - own).max(0.0))
}

fn status_kb(pid: u32, field: &str) -> Option<u64> {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()?
        .lines()
        .find(|l| l.starts_with(field))?
        .split_whitespace()
        .nth(1)?
        .parse()
        .ok()
}

// ---------------------------------------------------------------------------------------------
// Phase 2: the raw SQLite rate
// ---------------------------------------------------------------------------------------------

struct Raw {
    pairs: u64,
    secs: f64,
    other_cores: f64,
    own_cores: f64,
}

/// Single-row `UPDATE installments ... WHERE seq = ?` + `INSERT INTO events` pairs, `batch` per
/// transaction, on `db` (the database after the run), WAL and `synchronous=FULL`. The event
/// bodies have the size of a real payment event.
fn raw_rate(db: &Path, p: &Params, commerce_id: i64) -> Raw {
    let mut conn = Connection::open(db).expect("raw connection");
    conn.execute_batch("PRAGMA journal_mode = WAL; PRAGMA synchronous = FULL;")
        .unwrap();
    let sample_body: String = conn
        .query_row(
            "SELECT body FROM events WHERE kind = 'activation' LIMIT 1",
            [],
            |r| r.get(0),
        )
        .unwrap();
    // A payment event body is about 1.4x an activation body (the installment object).
    let pad = "x".repeat(sample_body.len() * 2 / 5);
    let a = cpu_sample();
    let started = Instant::now();
    let mut m = 1;
    while m <= p.count {
        let tx = conn.transaction().unwrap();
        {
            let mut up = tx
                .prepare_cached(
                    "UPDATE installments SET state = 2, state_at = ?2, authorization_code = ?3
                     WHERE seq = ?1",
                )
                .unwrap();
            let mut ins = tx
                .prepare_cached(
                    "INSERT INTO events (id, commerce_id, mandate_seq, installment_seq, kind, sequence,
                        url, body, delivery_state, next_attempt_at, created_at)
                     VALUES (?1, ?2, ?3, ?4, 'payment', 2, ?5, ?6, 'PENDING', ?7, ?7)",
                )
                .unwrap();
            let end = (m + p.raw_batch).min(p.count + 1);
            for seq in m..end {
                let now = ts(Utc::now().timestamp_millis());
                let installment = installment_seq(seq, 0, p.per_mandate);
                up.execute(params![
                    installment,
                    now,
                    format!("AUT-{:08X}", mix(seq) as u32)
                ])
                .unwrap();
                ins.execute(params![
                    format!("evt_{}", uuid::Uuid::now_v7().simple()),
                    commerce_id,
                    seq as i64,
                    installment,
                    PAYMENT_HOOK,
                    format!("{sample_body}{pad}"),
                    now,
                ])
                .unwrap();
            }
            m = end;
        }
        tx.commit().unwrap();
    }
    let secs = started.elapsed().as_secs_f64();
    let b = cpu_sample();
    let (own, other) = cpu_split(a, b, secs);
    Raw {
        pairs: p.count,
        secs,
        other_cores: other,
        own_cores: own,
    }
}

// ---------------------------------------------------------------------------------------------
// Phase 3: the run, through the real binary
// ---------------------------------------------------------------------------------------------

struct Run {
    secs: f64,
    stdout: Value,
    rss_start_mb: f64,
    rss_max_mb: f64,
    rss_end_mb: f64,
    hwm_mb: f64,
    samples: Vec<(f64, f64)>,
    other_cores: f64,
    own_cores: f64,
}

fn charge_run(dir: &Path, date: NaiveDate) -> Run {
    let log = std::fs::File::create(dir.join("charge-run.log")).expect("log file");
    let a = cpu_sample();
    let started = Instant::now();
    let bin = std::env::var_os("MANDATO_BENCH_BIN")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_BIN_EXE_mandato")));
    let mut child = Command::new(bin)
        .arg("--data-dir")
        .arg(dir)
        .arg("--json")
        .args(["charge-run", "--date", &date.to_string()])
        .stdout(Stdio::piped())
        .stderr(Stdio::from(log))
        .spawn()
        .expect("mandato charge-run");
    let pid = child.id();
    let done = Arc::new(AtomicBool::new(false));
    let sampler = {
        let done = Arc::clone(&done);
        std::thread::spawn(move || {
            let mut samples = Vec::new();
            let mut hwm = 0u64;
            let t0 = Instant::now();
            while !done.load(Ordering::Relaxed) {
                if let Some(kb) = status_kb(pid, "VmRSS:") {
                    samples.push((t0.elapsed().as_secs_f64(), kb as f64 / 1024.0));
                }
                if let Some(kb) = status_kb(pid, "VmHWM:") {
                    hwm = hwm.max(kb);
                }
                std::thread::sleep(Duration::from_millis(250));
            }
            (samples, hwm)
        })
    };
    let mut stdout = String::new();
    use std::io::Read;
    child
        .stdout
        .take()
        .unwrap()
        .read_to_string(&mut stdout)
        .unwrap();
    let status = child.wait().expect("charge-run exits");
    let secs = started.elapsed().as_secs_f64();
    let b = cpu_sample();
    done.store(true, Ordering::Relaxed);
    let (samples, hwm) = sampler.join().unwrap();
    if !status.success() {
        let log = std::fs::read_to_string(dir.join("charge-run.log")).unwrap_or_default();
        let tail: Vec<&str> = log.lines().rev().take(20).collect();
        panic!("charge-run failed ({status}): {}", tail.join("\n"));
    }
    let (own, other) = cpu_split(a, b, secs);
    // The first sample is taken right after spawn, before the engine has started: the start
    // figure is the first one at least 250 ms in.
    let start = samples
        .iter()
        .find(|(t, _)| *t >= 0.25)
        .or(samples.first())
        .map(|s| s.1)
        .unwrap_or(0.0);
    Run {
        secs,
        stdout: serde_json::from_str(stdout.trim()).unwrap_or(json!(stdout)),
        rss_start_mb: start,
        rss_max_mb: samples.iter().map(|s| s.1).fold(0.0, f64::max),
        rss_end_mb: samples.last().map(|s| s.1).unwrap_or(0.0),
        hwm_mb: hwm as f64 / 1024.0,
        samples,
        other_cores: other,
        own_cores: own,
    }
}

// ---------------------------------------------------------------------------------------------
// Phase 4: the checks
// ---------------------------------------------------------------------------------------------

/// Every check as (name, expected, found).
fn verify(db: &Path, p: &Params, date: NaiveDate) -> Vec<(String, i64, i64)> {
    let conn = Connection::open(db).expect("verify connection");
    let n = p.count as i64;
    let day = date.to_string();
    let one = |sql: &str| -> i64 {
        conn.query_row(sql, params![day], |r| r.get(0))
            .unwrap_or_else(|e| panic!("{sql}: {e}"))
    };
    let mut checks = Vec::new();
    let mut check = |name: &str, expected: i64, sql: &str| {
        checks.push((name.to_string(), expected, one(sql)));
    };
    check(
        "due installments PAID after one attempt, with an authorization code",
        n,
        "SELECT count(*) FROM installments WHERE due_date = ?1 AND state = 2 AND attempts = 1
           AND last_attempt_date = ?1 AND payment_method_id = 3 AND authorization_code LIKE 'AUT-%'",
    );
    check(
        "installments not due left untouched (PENDING, no attempt)",
        n * (p.per_mandate as i64 - 1),
        "SELECT count(*) FROM installments WHERE due_date > ?1 AND state = 1 AND attempts = 0
           AND last_attempt_date IS NULL",
    );
    check(
        "charge attempts (one per due installment, attempt 1, PAID, finished)",
        n,
        "SELECT count(*) FROM charge_attempts a JOIN installments i ON i.seq = a.installment_seq
         WHERE a.business_date = ?1 AND i.due_date = ?1 AND a.attempt_no = 1 AND a.state = 'PAID'
           AND a.finished_at IS NOT NULL AND a.idempotency_key = i.id || '-' || ?1",
    );
    check(
        "installments with an attempt",
        n,
        "SELECT count(DISTINCT installment_seq) FROM charge_attempts WHERE ?1 IS NOT NULL",
    );
    check(
        "attempts in all",
        n,
        "SELECT count(*) FROM charge_attempts WHERE ?1 IS NOT NULL",
    );
    check(
        "attempts left IN_PROCESS",
        0,
        "SELECT count(*) FROM charge_attempts WHERE state <> 'PAID' AND ?1 IS NOT NULL",
    );
    check(
        "acquirer charges, approved (one per idempotency key)",
        n,
        "SELECT count(*) FROM sim_charges s JOIN charge_attempts a ON a.idempotency_key = s.idempotency_key
         WHERE s.result = 'APPROVED' AND a.business_date = ?1",
    );
    check(
        "acquirer charges in all",
        n,
        "SELECT count(*) FROM sim_charges WHERE ?1 IS NOT NULL",
    );
    check(
        "payment events (IN_PROCESS and PAID per installment)",
        2 * n,
        "SELECT count(*) FROM events WHERE kind = 'payment' AND url IS NOT NULL
           AND delivery_state = 'PENDING' AND ?1 IS NOT NULL",
    );
    check(
        "installments with exactly one IN_PROCESS (seq 2) and one PAID (seq 3) event",
        n,
        "SELECT count(*) FROM (
           SELECT e.installment_seq,
                  sum(e.sequence = 2 AND json_extract(e.body, '$.installment.state.name') = 'IN_PROCESS') AS began,
                  sum(e.sequence = 3 AND json_extract(e.body, '$.installment.state.name') = 'PAID'
                      AND json_extract(e.body, '$.installment.attempt') = 1) AS paid,
                  count(*) AS events
           FROM events e JOIN installments i ON i.seq = e.installment_seq
           WHERE e.kind = 'payment' AND i.due_date = ?1
           GROUP BY e.installment_seq)
         WHERE began = 1 AND paid = 1 AND events = 2",
    );
    check(
        "mandates ACTIVE with event_sequence 3 (activation, IN_PROCESS, PAID)",
        n,
        "SELECT count(*) FROM mandates WHERE state = 2 AND event_sequence = 3 AND ?1 IS NOT NULL",
    );
    check(
        "finished run rows with attempted = paid = done = total",
        1,
        &format!(
            "SELECT count(*) FROM charge_runs WHERE business_date = ?1 AND state = 'FINISHED'
               AND attempted = {n} AND paid = {n} AND done = {n} AND total = {n} AND rejected = 0
               AND in_process = 0"
        ),
    );
    checks
}

// ---------------------------------------------------------------------------------------------
// PostgreSQL: one and two engines charging one database
// ---------------------------------------------------------------------------------------------

/// A charging run on PostgreSQL by `engines` processes at once.
struct PgRun {
    engines: usize,
    secs: f64,
    /// Each process's JSON summary, in start order.
    summaries: Vec<Value>,
    /// Cores of the engine processes (and this process), and of the PostgreSQL server.
    engine_cores: f64,
    database_cores: Option<f64>,
    other_cores: f64,
    checks: Vec<(String, i64, i64)>,
    /// What the server executed, per installment charged (`pg_stat_statements`).
    statements: Option<Value>,
}

/// Prints the statements the run made the server execute, per installment, the most costly
/// first, and returns them for the JSON (`None` without `pg_stat_statements`).
fn report_statements(cluster: &common::pg::Cluster, url: &str, installments: f64) -> Option<Value> {
    let st = cluster.statements(url)?;
    let per = |x: f64| x / installments.max(1.0);
    eprintln!(
        "[run] statements per installment {:.2}, plans {:.4}, server time {:.0} us; the most costly:",
        per(st.calls as f64),
        per(st.plans as f64),
        per(st.ms * 1000.0)
    );
    for q in &st.top {
        eprintln!(
            "    {:>7.3}/i {:>7.0} us/i  {}",
            per(q.calls as f64),
            per(q.ms * 1000.0),
            q.query.chars().take(140).collect::<String>()
        );
    }
    Some(json!({
        "per_installment": round3(per(st.calls as f64)),
        "plans_per_installment": per(st.plans as f64),
        "server_us_per_installment": round1(per(st.ms * 1000.0)),
        "most_costly": st.top.iter().map(|q| json!({
            "query": q.query, "calls": q.calls, "plans": q.plans, "ms": round1(q.ms), "rows": q.rows,
        })).collect::<Vec<_>>(),
    }))
}

/// `engines` real `mandato --database-url URL charge-run --date D` processes started together
/// on one database, as engines whose daily schedules fire at the same moment; timed from the
/// first spawn to the last exit, i.e. until every state and every event is committed.
fn charge_run_postgres(
    dir: &Path,
    url: &str,
    date: NaiveDate,
    engines: usize,
    cluster: &common::pg::Cluster,
) -> (f64, Vec<Value>, f64, Option<f64>, f64) {
    let bin = std::env::var_os("MANDATO_BENCH_BIN")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_BIN_EXE_mandato")));
    let a = cpu_sample();
    let db_a = cluster.server_ticks();
    let started = Instant::now();
    let children: Vec<(std::process::Child, PathBuf)> = (0..engines)
        .map(|i| {
            let data_dir = dir.join(format!("pg-engine-{i}"));
            std::fs::create_dir_all(&data_dir).expect("engine data dir");
            let log = data_dir.join("charge-run.log");
            let child = Command::new(&bin)
                .arg("--data-dir")
                .arg(&data_dir)
                .args(["--database-url", url, "--json"])
                .args(["charge-run", "--date", &date.to_string()])
                .stdout(Stdio::piped())
                .stderr(Stdio::from(std::fs::File::create(&log).expect("log file")))
                .spawn()
                .expect("mandato charge-run");
            (child, log)
        })
        .collect();
    let mut summaries = Vec::new();
    for (child, log) in children {
        let out = child.wait_with_output().expect("charge-run exits");
        if !out.status.success() {
            let log = std::fs::read_to_string(&log).unwrap_or_default();
            let tail: Vec<&str> = log.lines().rev().take(20).collect();
            panic!("charge-run failed ({}): {}", out.status, tail.join("\n"));
        }
        let text = String::from_utf8_lossy(&out.stdout);
        summaries.push(serde_json::from_str(text.trim()).unwrap_or(json!(text)));
    }
    let secs = started.elapsed().as_secs_f64();
    let b = cpu_sample();
    let db_b = cluster.server_ticks();
    let (own, busy_other) = cpu_split(a, b, secs);
    let database = match (db_a, db_b) {
        (Some(x), Some(y)) => Some(y.saturating_sub(x) as f64 / TICKS_PER_S / secs),
        _ => None,
    };
    let other = (busy_other - database.unwrap_or(0.0)).max(0.0);
    (secs, summaries, own, database, other)
}

/// The checks of [`verify`] in PostgreSQL's dialect, and that two engines never charged one
/// installment twice: every check as (name, expected, found).
fn verify_postgres(url: &str, p: &Params, date: NaiveDate) -> Vec<(String, i64, i64)> {
    let mut pg = postgres::Client::connect(url, postgres::NoTls).expect("verify connection");
    let n = p.count as i64;
    let day = date.to_string();
    let mut checks = Vec::new();
    let mut check = |name: &str, expected: i64, sql: &str| {
        let uses_day = sql.contains("$1");
        let row = if uses_day {
            pg.query_one(sql, &[&day])
        } else {
            pg.query_one(sql, &[])
        }
        .unwrap_or_else(|e| panic!("{sql}: {e}"));
        checks.push((name.to_string(), expected, row.get::<_, i64>(0)));
    };
    check(
        "due installments PAID after one attempt, with an authorization code",
        n,
        "SELECT count(*) FROM installments WHERE due_date = $1 AND state = 2 AND attempts = 1
           AND last_attempt_date = $1 AND payment_method_id = 3 AND authorization_code LIKE 'AUT-%'",
    );
    check(
        "installments not due left untouched (PENDING, no attempt)",
        n * (p.per_mandate as i64 - 1),
        "SELECT count(*) FROM installments WHERE due_date > $1 AND state = 1 AND attempts = 0
           AND last_attempt_date IS NULL",
    );
    check(
        "charge attempts (one per due installment, attempt 1, PAID, finished)",
        n,
        "SELECT count(*) FROM charge_attempts a JOIN installments i ON i.seq = a.installment_seq
         WHERE a.business_date = $1 AND i.due_date = $1 AND a.attempt_no = 1 AND a.state = 'PAID'
           AND a.finished_at IS NOT NULL AND a.idempotency_key = i.id || '-' || $1",
    );
    check(
        "installments with an attempt",
        n,
        "SELECT count(DISTINCT installment_seq) FROM charge_attempts",
    );
    check("attempts in all", n, "SELECT count(*) FROM charge_attempts");
    check(
        "installments with more than one attempt (charged twice)",
        0,
        "SELECT count(*) FROM (SELECT installment_seq FROM charge_attempts
           GROUP BY installment_seq HAVING count(*) > 1) twice",
    );
    check(
        "attempts left IN_PROCESS",
        0,
        "SELECT count(*) FROM charge_attempts WHERE state <> 'PAID'",
    );
    check(
        "acquirer charges, approved (one per idempotency key)",
        n,
        "SELECT count(*) FROM sim_charges s JOIN charge_attempts a ON a.idempotency_key = s.idempotency_key
         WHERE s.result = 'APPROVED' AND a.business_date = $1",
    );
    check(
        "acquirer charges in all",
        n,
        "SELECT count(*) FROM sim_charges",
    );
    check(
        "payment events (IN_PROCESS and PAID per installment)",
        2 * n,
        "SELECT count(*) FROM events WHERE kind = 'payment' AND url IS NOT NULL
           AND delivery_state = 'PENDING'",
    );
    check(
        "installments with exactly one IN_PROCESS (seq 2) and one PAID (seq 3) event",
        n,
        "SELECT count(*) FROM (
           SELECT e.installment_seq,
                  count(*) FILTER (WHERE e.sequence = 2
                      AND CAST(e.body AS json) #>> '{installment,state,name}' = 'IN_PROCESS') AS began,
                  count(*) FILTER (WHERE e.sequence = 3
                      AND CAST(e.body AS json) #>> '{installment,state,name}' = 'PAID'
                      AND CAST(e.body AS json) #>> '{installment,attempt}' = '1') AS paid,
                  count(*) AS events
           FROM events e JOIN installments i ON i.seq = e.installment_seq
           WHERE e.kind = 'payment' AND i.due_date = $1
           GROUP BY e.installment_seq) per_installment
         WHERE began = 1 AND paid = 1 AND events = 2",
    );
    check(
        "mandates ACTIVE with event_sequence 3 (activation, IN_PROCESS, PAID)",
        n,
        "SELECT count(*) FROM mandates WHERE state = 2 AND event_sequence = 3",
    );
    check(
        "installments PAID by the runs of the date, all engines together",
        n,
        "SELECT CAST(coalesce(sum(paid), 0) AS BIGINT) FROM charge_runs WHERE business_date = $1",
    );
    checks
}

/// `MANDATO_BENCH_BACKEND=postgres`: the filled SQLite database is copied into a PostgreSQL
/// database whose schema the engine's migrations made (the same rows as SQLite's run), kept
/// as a template; each run charges a fresh copy of it, with one engine and then with two (a
/// single run charges it directly).
fn charging_on_postgres(p: &Params, dir: &Path, date: NaiveDate, fill_wall_ms: f64, mode: &str) {
    let cluster = common::pg::Cluster::start();
    let template = "charging_filled";
    let url = cluster.create_database(template, None);
    let t = Instant::now();
    drop(
        mandato::store::Store::open_postgres(&url, &Default::default())
            .expect("the engine's migrations"),
    );
    let migrate_ms = t.elapsed().as_secs_f64() * 1000.0;
    let copy = common::pg::copy_from_sqlite(&dir.join(DB_FILE), &url);
    eprintln!(
        "[pg] schema in {migrate_ms:.0} ms; {} rows copied in {:.1} s",
        copy.rows,
        copy.ms / 1000.0
    );
    if p.keep_db.is_none() {
        // At a million mandates SQLite's file holds gigabytes the runs below do not read.
        for suffix in ["", "-wal", "-shm"] {
            let _ = std::fs::remove_file(dir.join(format!("{DB_FILE}{suffix}")));
        }
    }
    // A single run charges the filled database itself: no second copy of the rows on disk.
    let single = p.pg_engines.len() == 1;
    let mut runs: Vec<PgRun> = Vec::new();
    for &engines in &p.pg_engines {
        let url = if single {
            url.clone()
        } else {
            cluster.create_database("charging_run", Some(template))
        };
        if !p.wait_quiet.is_zero() {
            wait_for_quiet(p.wait_quiet);
        }
        eprintln!(
            "[run] {engines} x mandato --database-url .. charge-run --date {date} over {} due installments...",
            p.count
        );
        cluster.statements_reset();
        let (secs, summaries, engine_cores, database_cores, other_cores) =
            charge_run_postgres(dir, &url, date, engines, &cluster);
        eprintln!("[run] {secs:.1} s, others {other_cores:.2} cores; checking...");
        let statements = report_statements(&cluster, &url, p.count as f64);
        let checks = verify_postgres(&url, p, date);
        if !single {
            cluster.drop_database("charging_run");
        }
        runs.push(PgRun {
            engines,
            statements,
            secs,
            summaries,
            engine_cores,
            database_cores,
            other_cores,
            checks,
        });
    }
    cluster.drop_database(template);

    let mut out = String::new();
    use std::fmt::Write;
    let _ = writeln!(
        out,
        "\ncharging run on PostgreSQL, {} due card installments ({} mandates x {} installments), date {date}, commit {}",
        p.count,
        p.count,
        p.per_mandate,
        git_commit()
    );
    let _ = writeln!(
        out,
        "fill {:.1} s (SQLite), schema by the engine's migrations {:.1} s, {} rows copied to PostgreSQL in {:.1} s",
        fill_wall_ms / 1000.0,
        migrate_ms / 1000.0,
        copy.rows,
        copy.ms / 1000.0
    );
    let _ = writeln!(
        out,
        "| engines | installments/s | seconds | / one engine | engines + this cores | PostgreSQL cores | others cores | checks |"
    );
    let _ = writeln!(out, "|---|---|---|---|---|---|---|---|");
    let one = runs
        .iter()
        .find(|r| r.engines == 1)
        .map(|r| p.count as f64 / r.secs);
    for r in &runs {
        let rate = p.count as f64 / r.secs;
        let failed = r.checks.iter().filter(|c| c.1 != c.2).count();
        let _ = writeln!(
            out,
            "| {} | {:.0} | {:.1} | {} | {:.2} | {} | {:.2} | {} |",
            r.engines,
            rate,
            r.secs,
            one.map_or("-".into(), |o| format!("{:.2}", rate / o)),
            r.engine_cores,
            r.database_cores.map_or("n/a".into(), |c| format!("{c:.2}")),
            r.other_cores,
            if failed == 0 {
                "all passed".to_string()
            } else {
                format!("{failed} FAILED")
            }
        );
    }
    for r in &runs {
        let _ = writeln!(out, "{} engine(s):", r.engines);
        for (name, expected, found) in &r.checks {
            let _ = writeln!(
                out,
                "  [{}] {name}: expected {expected}, found {found}",
                if expected == found { "ok" } else { "FAIL" }
            );
        }
        for (i, s) in r.summaries.iter().enumerate() {
            let _ = writeln!(out, "  engine {i}: {s}");
        }
    }
    println!("{out}");

    let report = json!({
        "mode": mode,
        "backend": "postgres",
        "commit": git_commit(),
        "date": date.to_string(),
        "params": {"count": p.count, "per_mandate": p.per_mandate},
        "fill_wall_ms": round1(fill_wall_ms),
        "postgres": {"migrate_ms": round1(migrate_ms), "copy_ms": round1(copy.ms), "copied_rows": copy.rows,
                     "synchronous_commit": "on", "fsync": "on"},
        "runs": runs.iter().map(|r| json!({
            "engines": r.engines,
            "seconds": round3(r.secs),
            "installments_per_s": round1(p.count as f64 / r.secs),
            "engine_cores": round3(r.engine_cores),
            "database_cores": r.database_cores.map(round3),
            "other_cores": round3(r.other_cores),
            "summaries": r.summaries,
            "checks": r.checks.iter().map(|(n, e, f)| json!({"check": n, "expected": e, "found": f})).collect::<Vec<_>>(),
            "checks_passed": r.checks.iter().all(|c| c.1 == c.2),
            "postgres_statements": r.statements,
        })).collect::<Vec<_>>(),
    });
    let path = common::results_path(&format!("charging-bench-results-postgres-{mode}.json"));
    if let Some(parent) = path.parent() {
        let _ = std::fs::create_dir_all(parent);
    }
    std::fs::write(&path, serde_json::to_string_pretty(&report).unwrap()).expect("results file");
    eprintln!("results written to {}", path.display());
    let failed: Vec<_> = runs
        .iter()
        .flat_map(|r| r.checks.iter().filter(|c| c.1 != c.2))
        .collect();
    assert!(failed.is_empty(), "a run's result is wrong: {failed:?}");
}

// ---------------------------------------------------------------------------------------------
// Main
// ---------------------------------------------------------------------------------------------

fn git_commit() -> String {
    Command::new("git")
        .args(["rev-parse", "--short", "HEAD"])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .unwrap_or_default()
}

fn main() {
    if std::env::var("MANDATO_BENCH_PHASE").as_deref() == Ok("fill") {
        fill_main();
        return;
    }
    let transbank = std::env::var("MANDATO_BENCH_ACQUIRER").as_deref() == Ok("transbank");
    let p = Params::from_env();
    let mode = if p.quick { "quick" } else { "full" };
    eprintln!("mandato charging benchmark ({mode}): {p:?}");
    // The run's business date: the latest business day by today in the environment's time
    // zone (a weekend's or holiday's run charges nothing).
    let today = Utc::now()
        .with_timezone(&chrono_tz::America::Santiago)
        .date_naive();
    let date = mandato::domain::holidays::HolidayCalendar::new([])
        .on_or_before(today)
        .unwrap_or(today);

    // 1. Fill, in a child process.
    let temp;
    let dir = match &p.keep_db {
        Some(d) => {
            std::fs::create_dir_all(d).unwrap();
            d.clone()
        }
        None => {
            temp = tempfile::tempdir().expect("temp dir");
            temp.path().to_path_buf()
        }
    };
    let t = Instant::now();
    let child = Command::new(std::env::current_exe().unwrap())
        .env("MANDATO_BENCH_PHASE", "fill")
        .env("MANDATO_BENCH_FILL_DIR", &dir)
        .env("MANDATO_BENCH_FILL_COUNT", p.count.to_string())
        .env("MANDATO_BENCH_FILL_PER_MANDATE", p.per_mandate.to_string())
        .env("MANDATO_BENCH_FILL_DATE", date.to_string())
        .env(
            "MANDATO_BENCH_FILL_KEEP",
            if p.keep_db.is_some() { "1" } else { "0" },
        )
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .output()
        .expect("fill process");
    assert!(child.status.success(), "the fill failed");
    let fill: Value = serde_json::from_slice(&child.stdout).expect("fill report");
    let fill_wall_ms = t.elapsed().as_secs_f64() * 1000.0;
    if p.postgres {
        charging_on_postgres(&p, &dir, date, fill_wall_ms, mode);
        return;
    }
    if transbank {
        transbank_run(&p, &dir, date, fill_wall_ms);
        return;
    }
    let db = dir.join(DB_FILE);
    let commerce_id: i64 = Connection::open(&db)
        .unwrap()
        .query_row(
            "SELECT id FROM commerces WHERE code = ?1",
            [COMMERCE],
            |r| r.get(0),
        )
        .unwrap();

    let mut quiet_before = Vec::new();

    // 2. The run. A disturbed run cannot be repeated on the same data; it is reported as is.
    if !p.wait_quiet.is_zero() {
        quiet_before.push(("run", wait_for_quiet(p.wait_quiet)));
    }
    eprintln!(
        "[run] mandato charge-run --date {date} over {} due installments...",
        p.count
    );
    let run = charge_run(&dir, date);
    eprintln!(
        "[run] {:.1} s, others {:.2} cores; checking...",
        run.secs, run.other_cores
    );

    // 3. Checks.
    let t = Instant::now();
    let checks = verify(&db, &p, date);
    let verify_ms = t.elapsed().as_secs_f64() * 1000.0;
    let failed: Vec<&(String, i64, i64)> = checks.iter().filter(|c| c.1 != c.2).collect();
    let db_bytes = std::fs::metadata(&db).map(|m| m.len()).unwrap_or(0);
    let fsync_ms = fsync_probe(&dir, 1.0);

    // 4. The raw rate, on the same database file (now also holding the run's rows).
    let mut raw_runs: Vec<Raw> = Vec::new();
    if !p.skip_raw {
        for round in 0..3 {
            if !p.wait_quiet.is_zero() {
                quiet_before.push(("raw", wait_for_quiet(p.wait_quiet)));
            }
            eprintln!("[raw] {} UPDATE + INSERT pairs...", p.count);
            let raw = raw_rate(&db, &p, commerce_id);
            eprintln!(
                "[raw] {:.0} pairs/s ({:.1} s), others {:.2} cores",
                raw.pairs as f64 / raw.secs,
                raw.secs,
                raw.other_cores
            );
            let disturbed = raw.other_cores > 0.2;
            raw_runs.push(raw);
            if !disturbed || p.wait_quiet.is_zero() || round == 2 {
                break;
            }
            eprintln!("[raw] disturbed by other processes: measuring again");
        }
    }

    // Report.
    let rate = p.count as f64 / run.secs;
    let raw = raw_runs.last();
    let raw_rate = raw.map(|r| r.pairs as f64 / r.secs);
    let ratio = raw_rate.map(|r| rate / r);
    let memory_flat = run.rss_max_mb < 100.0;
    let targets = json!({
        "under_90_s_for_the_million": (p.count == 1_000_000).then_some(run.secs < 90.0),
        "rate_at_least_11111_per_s": rate >= 1_000_000.0 / 90.0,
        "at_least_a_third_of_raw": ratio.map(|r| r >= 1.0 / 3.0),
        "rss_max_under_100_mb": memory_flat,
    });
    let mut out = String::new();
    use std::fmt::Write;
    let _ = writeln!(
        out,
        "\ncharging run, {} due card installments ({} mandates x {} installments), date {date}, commit {}",
        p.count,
        p.count,
        p.per_mandate,
        git_commit()
    );
    let _ = writeln!(
        out,
        "| | per second | seconds | ratio | RSS start / max / end MB | own cores | others cores |"
    );
    let _ = writeln!(out, "|---|---|---|---|---|---|---|");
    let _ = writeln!(
        out,
        "| charging run (installments) | {:.0} | {:.1} | {} | {:.0} / {:.0} / {:.0} | {:.2} | {:.2} |",
        rate,
        run.secs,
        ratio.map(|r| format!("{r:.2}")).unwrap_or("-".into()),
        run.rss_start_mb,
        run.rss_max_mb,
        run.rss_end_mb,
        run.own_cores,
        run.other_cores
    );
    if let Some(r) = raw {
        let _ = writeln!(
            out,
            "| raw SQLite UPDATE + INSERT pairs, {} per tx | {:.0} | {:.1} | 1 | - | {:.2} | {:.2} |",
            p.raw_batch,
            r.pairs as f64 / r.secs,
            r.secs,
            r.own_cores,
            r.other_cores
        );
    }
    let _ = writeln!(
        out,
        "fill {:.1} s ({:.0} MB), fsync 4 KiB {:.2} ms, VmHWM {:.0} MB, checks {:.1} s: {}",
        fill_wall_ms / 1000.0,
        db_bytes as f64 / 1e6,
        fsync_ms,
        run.hwm_mb,
        verify_ms / 1000.0,
        if failed.is_empty() {
            "all passed".to_string()
        } else {
            format!("{} FAILED", failed.len())
        }
    );
    for (name, expected, found) in &checks {
        let _ = writeln!(
            out,
            "  [{}] {name}: expected {expected}, found {found}",
            if expected == found { "ok" } else { "FAIL" }
        );
    }
    let _ = writeln!(out, "targets: {targets}");
    println!("{out}");

    let report = json!({
        "mode": mode,
        "commit": git_commit(),
        "date": date.to_string(),
        "params": {"count": p.count, "per_mandate": p.per_mandate, "raw_batch": p.raw_batch},
        "fill": fill,
        "fill_wall_ms": round1(fill_wall_ms),
        "db_bytes_after": db_bytes,
        "fsync_4k_ms": round3(fsync_ms),
        "run": {
            "seconds": round3(run.secs),
            "installments_per_s": round1(rate),
            "summary": run.stdout,
            "rss_mb": {"start": round1(run.rss_start_mb), "max": round1(run.rss_max_mb),
                       "end": round1(run.rss_end_mb), "hwm": round1(run.hwm_mb)},
            "rss_samples": run.samples.iter().map(|(t, m)| json!([round1(*t), round1(*m)])).collect::<Vec<_>>(),
            "own_cores": round3(run.own_cores),
            "other_cores": round3(run.other_cores),
        },
        "raw": raw_runs.iter().map(|r| json!({"pairs": r.pairs, "seconds": round3(r.secs),
            "pairs_per_s": round1(r.pairs as f64 / r.secs), "own_cores": round3(r.own_cores),
            "other_cores": round3(r.other_cores)})).collect::<Vec<_>>(),
        "ratio": ratio.map(round3),
        "quiet_wait_other_cores": quiet_before.iter().map(|(n, c)| json!([n, round3(*c)])).collect::<Vec<_>>(),
        "checks": checks.iter().map(|(n, e, f)| json!({"check": n, "expected": e, "found": f})).collect::<Vec<_>>(),
        "checks_passed": failed.is_empty(),
        "targets": targets,
    });
    let path = common::results_path("charging-bench-results.json");
    let text = serde_json::to_string_pretty(&report).unwrap();
    if let Some(parent) = path.parent() {
        let _ = std::fs::create_dir_all(parent);
    }
    std::fs::write(&path, &text).expect("results file");
    let _ = std::fs::write(
        path.with_file_name(format!("charging-bench-results-{mode}.json")),
        &text,
    );
    eprintln!("results written to {}", path.display());
    assert!(failed.is_empty(), "the run's result is wrong: {failed:?}");
}

// ---------------------------------------------------------------------------------------------
// The Transbank rail (`MANDATO_BENCH_ACQUIRER=transbank`)
// ---------------------------------------------------------------------------------------------

/// The in-flight bound of the engine's default (`config::DEFAULT_ACQUIRER_IN_FLIGHT`).
const IN_FLIGHT: u64 = 64;

/// A Oneclick Mall stand-in for the bench: authorizations answered after `latency` as the
/// SDK's `authorize_response` fixture does (any card approved), each parent buy order counted;
/// the status of an order it never saw is `buy_order_not_found`.
#[derive(Default)]
struct BenchStandin {
    sends: std::sync::Mutex<std::collections::HashMap<String, u64>>,
    in_flight: std::sync::atomic::AtomicU64,
    max_in_flight: std::sync::atomic::AtomicU64,
}

fn start_bench_standin(latency: Duration) -> (Arc<BenchStandin>, String) {
    use axum::routing::{get, post};
    let standin = Arc::new(BenchStandin::default());
    let (tx, rx) = std::sync::mpsc::channel();
    let shared = Arc::clone(&standin);
    std::thread::spawn(move || {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .unwrap();
        runtime.block_on(async move {
            let authorize = {
                let standin = Arc::clone(&shared);
                move |axum::Json(body): axum::Json<Value>| {
                    let standin = Arc::clone(&standin);
                    async move {
                        let now = standin.in_flight.fetch_add(1, Ordering::SeqCst) + 1;
                        standin.max_in_flight.fetch_max(now, Ordering::SeqCst);
                        tokio::time::sleep(latency).await;
                        standin.in_flight.fetch_sub(1, Ordering::SeqCst);
                        let parent = body["buy_order"].as_str().unwrap_or_default().to_string();
                        let detail = body["details"][0].clone();
                        *standin.sends.lock().unwrap().entry(parent.clone()).or_default() += 1;
                        axum::Json(json!({
                            "details": [{
                                "amount": detail["amount"], "status": "AUTHORIZED",
                                "authorization_code": "1213", "payment_type_code": "VN",
                                "response_code": 0, "installments_number": 0,
                                "commerce_code": detail["commerce_code"],
                                "buy_order": detail["buy_order"],
                            }],
                            "buy_order": parent,
                            "card_detail": {"card_number": "6623"},
                            "accounting_date": "1019",
                            "transaction_date": "2023-10-19T21:30:21.095Z",
                        }))
                    }
                }
            };
            let not_found = || async {
                (
                    axum::http::StatusCode::UNPROCESSABLE_ENTITY,
                    axum::Json(json!({"error_message": "Invalid value for parameter: buy order not found"})),
                )
            };
            let app = axum::Router::new()
                .route("/rswebpaytransaction/api/oneclick/v1.2/transactions", post(authorize))
                .route(
                    "/rswebpaytransaction/api/oneclick/v1.2/transactions/{buy_order}",
                    get(not_found),
                );
            let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
            tx.send(listener.local_addr().unwrap()).unwrap();
            axum::serve(listener, app).await.unwrap();
        });
    });
    let addr = rx.recv().unwrap();
    (standin, format!("http://{addr}"))
}

fn transbank_run(p: &Params, dir: &Path, date: NaiveDate, fill_wall_ms: f64) {
    let latency = Duration::from_millis(env_u64("MANDATO_BENCH_LATENCY_MS").unwrap_or(200));
    let (standin, base) = start_bench_standin(latency);
    let bin = std::env::var_os("MANDATO_BENCH_BIN")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_BIN_EXE_mandato")));
    let mut set = Command::new(&bin)
        .arg("--data-dir")
        .arg(dir)
        .args([
            "--json",
            "acquirer",
            "set",
            "--commerce",
            COMMERCE,
            "--rail",
            "cards",
            "--kind",
            "transbank",
            "--mall-code",
            "597055555541",
            "--child-code",
            "597055555542",
            "--webpay-code",
            "597055555532",
            "--base-url",
            &base,
            "--secret-stdin",
        ])
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .spawn()
        .expect("mandato acquirer set");
    {
        use std::io::Write;
        let mut stdin = set.stdin.take().unwrap();
        stdin
            .write_all(b"579B532A7440BB0C9079DED94D31EA1615BACEB56610332264630D42D0A36B1C\n")
            .unwrap();
    }
    assert!(set.wait().unwrap().success(), "acquirer set failed");
    eprintln!(
        "[run] charge-run over {} due installments against a Transbank stand-in answering in {} ms...",
        p.count,
        latency.as_millis()
    );
    let run = charge_run(dir, date);
    let ideal = p.count as f64 * latency.as_secs_f64() / IN_FLIGHT as f64;
    let sends = standin.sends.lock().unwrap().clone();
    let sent_twice = sends.values().filter(|n| **n > 1).count();
    let db = Connection::open(dir.join(DB_FILE)).unwrap();
    let paid: i64 = db
        .query_row(
            "SELECT count(*) FROM charge_attempts WHERE state = 'PAID' AND business_date = ?1",
            [date.to_string()],
            |r| r.get(0),
        )
        .unwrap();
    let max_in_flight = standin.max_in_flight.load(Ordering::SeqCst);
    let report = json!({
        "commit": git_commit(),
        "date": date.to_string(),
        "count": p.count,
        "latency_ms": latency.as_millis() as u64,
        "in_flight_bound": IN_FLIGHT,
        "max_in_flight_at_the_standin": max_in_flight,
        "fill_ms": round1(fill_wall_ms),
        "run_s": round1(run.secs),
        "ideal_s": round1(ideal),
        "ratio_to_ideal": round3(run.secs / ideal),
        "rss_max_mb": round1(run.rss_max_mb),
        "authorizations": sends.len(),
        "buy_orders_sent_twice": sent_twice,
        "paid_attempts": paid,
        "targets": {
            "within_1_25_of_ideal": run.secs <= 1.25 * ideal,
            "rss_under_300_mb": run.rss_max_mb < 300.0,
            "no_double_charge": sent_twice == 0 && paid as usize == sends.len(),
        },
    });
    println!(
        "\ncharging run on the Transbank rail, {} installments, {} ms per authorization, bound {IN_FLIGHT}\n\
         | run s | ideal s | ratio | RSS max MB | max in flight | authorizations | sent twice | PAID |\n\
         |---|---|---|---|---|---|---|---|\n\
         | {:.1} | {:.1} | {:.3} | {:.0} | {} | {} | {} | {} |",
        p.count,
        latency.as_millis(),
        run.secs,
        ideal,
        run.secs / ideal,
        run.rss_max_mb,
        max_in_flight,
        sends.len(),
        sent_twice,
        paid
    );
    let out =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("target/charging-bench-transbank.json");
    std::fs::write(&out, serde_json::to_string_pretty(&report).unwrap()).unwrap();
    assert_eq!(sent_twice, 0, "a buy order was sent twice");
    assert_eq!(paid as u64, p.count, "every due installment PAID");
}
