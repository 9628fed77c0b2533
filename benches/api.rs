//! Load benchmark of the merchant API (see `bench/README.md`).
//!
//! `cargo bench --bench api` (release). Steps:
//! 1. a child process (this binary, `MANDATO_BENCH_PHASE=fill`) creates the database through
//!    `Store::open` (the real migrations), a commerce, an API key and the environment keys
//!    through the library, then bulk-fills customers, mandates and installments with plain SQL;
//! 2. the engine is started with `app::start` over that file, once with the file evicted from
//!    the page cache (cold) and once warm, timing start to the first authenticated lookup;
//! 3. a keep-alive HTTP/1.1 load generator (hyper, one connection per tokio task) drives the
//!    the reference handlers (bare, a lookup's HTTP exchange answered with stored bytes, one
//!    SQLite point SELECT, the lookup's three SELECTs), the authenticated mandate lookup and
//!    mandate creation, one after the other;
//! 4. resident memory is read from `/proc/self/status`.
//!
//! Figures are printed as a table and written to `target/bench-results.json`.

mod common;

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::extract::{Path as UrlPath, State};
use chrono::{NaiveDate, SecondsFormat, TimeZone, Utc};
use http_body_util::{BodyExt, Full};
use hyper::body::Bytes;
use hyper::{Method, Request};
use hyper_util::rt::TokioIo;
use mandato::app;
use mandato::clock::{Clock, SystemClock};
use mandato::config::Config;
use rusqlite::{Connection, OpenFlags, params};
use serde_json::{Value, json};

/// The allocator of the `mandato` binary, so the engine measured here allocates as it does
/// in production.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// Numbers every created mandate of this process: a rerun of a disturbed `create` scenario
/// (or a second scenario) never sends an id already used, which the engine would refuse.
static NEXT_MANDATE: AtomicU64 = AtomicU64::new(1);
/// The database's WAL file, whose size each scenario's window watches (set once the database
/// directory is known).
static WAL_FILE: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();

use common::{
    TICKS_PER_S, env_u64, fsync_probe, id7, machine_busy_ticks, mix, round1, round3, stat_ticks, ts,
};

const COMMERCE: &str = "76123456-0";
const PASSWORD: &str = "bench password 1";
const FILL_MARKER: &str = "bench-fill.json";
const DB_FILE: &str = "mandato.db";

// ---------------------------------------------------------------------------------------------
// Parameters
// ---------------------------------------------------------------------------------------------

#[derive(Clone, Debug)]
struct Params {
    quick: bool,
    customers: u64,
    mandates: u64,
    installments_per_mandate: u64,
    warmup: Duration,
    duration: Duration,
    connections: usize,
    client_threads: usize,
    server_threads: usize,
    scenarios: Vec<String>,
    keep_db: Option<PathBuf>,
    wait_quiet: Duration,
    /// `MANDATO_BENCH_BACKEND=postgres`: compare the backends (see `compare_backends`)
    /// instead of the SQLite run.
    postgres: bool,
}

fn env_secs(name: &str) -> Option<Duration> {
    std::env::var(name)
        .ok()
        .and_then(|v| v.trim().parse::<f64>().ok())
        .map(Duration::from_secs_f64)
}

impl Params {
    fn from_env() -> Params {
        let quick = std::env::var("MANDATO_BENCH_QUICK").is_ok_and(|v| v == "1" || v == "true");
        let (customers, mandates, installments, warmup, duration) = if quick {
            (20_000, 40_000, 400_000, 1.0, 3.0)
        } else {
            (100_000, 200_000, 2_000_000, 2.0, 10.0)
        };
        let customers = env_u64("MANDATO_BENCH_CUSTOMERS")
            .unwrap_or(customers)
            .max(1);
        let mandates = env_u64("MANDATO_BENCH_MANDATES").unwrap_or(mandates).max(1);
        let installments = env_u64("MANDATO_BENCH_INSTALLMENTS").unwrap_or(installments);
        Params {
            quick,
            customers,
            mandates,
            installments_per_mandate: (installments / mandates).clamp(1, 1200),
            warmup: env_secs("MANDATO_BENCH_WARMUP_SECS")
                .unwrap_or(Duration::from_secs_f64(warmup)),
            duration: env_secs("MANDATO_BENCH_DURATION_SECS")
                .unwrap_or(Duration::from_secs_f64(duration)),
            connections: env_u64("MANDATO_BENCH_CONNECTIONS").unwrap_or(64).max(1) as usize,
            client_threads: env_u64("MANDATO_BENCH_CLIENT_THREADS").unwrap_or(2).max(1) as usize,
            server_threads: env_u64("MANDATO_BENCH_SERVER_THREADS")
                .unwrap_or_else(|| {
                    std::thread::available_parallelism().map_or(2, |n| n.get() as u64)
                })
                .max(1) as usize,
            scenarios: std::env::var("MANDATO_BENCH_SCENARIOS")
                .unwrap_or_else(|_| "bare,answer,select,reads,lookup,create".into())
                .split(',')
                .map(|s| s.trim().to_string())
                .filter(|s| !s.is_empty())
                .collect(),
            keep_db: std::env::var_os("MANDATO_BENCH_DB_DIR").map(PathBuf::from),
            wait_quiet: env_secs("MANDATO_BENCH_WAIT_QUIET_SECS").unwrap_or(Duration::ZERO),
            postgres: match std::env::var("MANDATO_BENCH_BACKEND").as_deref() {
                Ok("postgres") => true,
                Ok("sqlite") | Err(_) => false,
                Ok(other) => panic!("MANDATO_BENCH_BACKEND is sqlite or postgres, not {other}"),
            },
        }
    }

    fn runs(&self, scenario: &str) -> bool {
        self.scenarios.iter().any(|s| s == scenario)
    }
}

// ---------------------------------------------------------------------------------------------
// Deterministic data: the load generator recomputes ids from sequence numbers instead of
// holding 200,000 strings in memory (which would inflate the RSS figure).
// ---------------------------------------------------------------------------------------------

#[derive(Clone, Copy, Debug)]
struct Layout {
    base_ms: i64,
    customers: u64,
    mandates: u64,
}

impl Layout {
    fn spacing_ms(&self) -> i64 {
        (365 * 86_400_000 / self.mandates as i64).max(1)
    }
    fn mandate_ms(&self, m: u64) -> i64 {
        self.base_ms + m as i64 * self.spacing_ms()
    }
    fn customer_of(&self, m: u64) -> u64 {
        (m - 1) % self.customers + 1
    }
    fn customer_ms(&self, c: u64) -> i64 {
        self.mandate_ms(c) - 60_000
    }
    fn mandate_id(&self, m: u64) -> String {
        id7("man", self.mandate_ms(m), 2, m, 0)
    }
    fn customer_id(&self, c: u64) -> String {
        id7("usr", self.customer_ms(c), 1, c, 0)
    }
    fn installment_id(&self, m: u64, k: u64) -> String {
        id7("ins", self.mandate_ms(m), 3, m, k as u8)
    }
}

fn user_id(c: u64) -> String {
    format!("U{c:07}")
}

fn date_of(ms: i64) -> NaiveDate {
    Utc.timestamp_millis_opt(ms)
        .single()
        .expect("valid time")
        .date_naive()
}

// ---------------------------------------------------------------------------------------------
// Phase 1: the fill (child process)
// ---------------------------------------------------------------------------------------------

fn fill_main() {
    let dir = PathBuf::from(std::env::var_os("MANDATO_BENCH_FILL_DIR").expect("fill dir"));
    let layout_customers = env_u64("MANDATO_BENCH_FILL_CUSTOMERS").expect("customers");
    let layout_mandates = env_u64("MANDATO_BENCH_FILL_MANDATES").expect("mandates");
    let per_mandate = env_u64("MANDATO_BENCH_FILL_PER_MANDATE").expect("per mandate");
    let marker = dir.join(FILL_MARKER);
    let wanted = json!({"customers": layout_customers, "mandates": layout_mandates,
                        "per_mandate": per_mandate});

    let started = Instant::now();
    let mut config = Config::new(dir.clone());
    config.listen = "127.0.0.1:0".parse().unwrap();
    let db = config.database_path();

    let previous: Option<Value> = std::fs::read_to_string(&marker)
        .ok()
        .and_then(|t| serde_json::from_str(&t).ok())
        .filter(|m: &Value| m["layout"] == wanted && db.exists());
    let mut report = match previous {
        Some(p) => {
            eprintln!("[fill] reusing the database in {}", dir.display());
            let mut p = p;
            p["reused"] = json!(true);
            p
        }
        None => {
            let _ = std::fs::remove_file(&db);
            let _ = std::fs::remove_file(dir.join(format!("{DB_FILE}-wal")));
            let _ = std::fs::remove_file(dir.join(format!("{DB_FILE}-shm")));
            let report = fill_fresh(&config, layout_customers, layout_mandates, per_mandate);
            let mut r = report;
            r["layout"] = wanted;
            r["reused"] = json!(false);
            std::fs::write(&marker, serde_json::to_string_pretty(&r).unwrap()).unwrap();
            r
        }
    };
    // A session token signed with the stored key, as a client that logged in before a restart
    // holds; used for the time-to-first-request measurement.
    let (_store, keys) = app::open(&config).expect("open for the token");
    let token = keys
        .jwt
        .issue(COMMERCE, config.environment.as_str(), Utc::now(), 3600)
        .expect("token");
    report["jwt"] = json!(token.token.expose());
    report["child_total_ms"] = json!(started.elapsed().as_secs_f64() * 1000.0);
    println!("{}", serde_json::to_string(&report).unwrap());
}

/// An installment's (state, state_at, attempts, method, auth code, rejection code, message).
type InstallmentFill = (
    i64,
    String,
    i64,
    Option<i64>,
    Option<String>,
    Option<&'static str>,
    Option<&'static str>,
);

fn fill_fresh(config: &Config, customers: u64, mandates: u64, per_mandate: u64) -> Value {
    use mandato::auth::{api_key, password};
    use mandato::domain::state::PaymentMethod;
    use mandato::secret::Secret;
    use mandato::store::commerces::{self, NewCommerce};

    let setup_started = Instant::now();
    // Schema, commerce, API key and the environment's keys through the library.
    let (store, _keys) = app::open(config).expect("open the store");
    let hash = password::hash_password(&Secret::new(PASSWORD.to_string()));
    let secret = api_key::generate_webhook_secret();
    let key = api_key::generate();
    store
        .write(|tx| {
            commerces::insert(
                tx,
                &NewCommerce {
                    code: COMMERCE,
                    name: "Comercio de carga",
                    password_hash: &hash,
                    channels: None,
                    payment_methods: PaymentMethod::ALL,
                    webhook_secret: &secret,
                    authorization_required: false,
                    created_at: "2025-01-01T00:00:00.000Z",
                },
            )?;
            commerces::insert_api_key(tx, &key.prefix, &key.hash, &[], "2025-01-01T00:00:00.000Z")
        })
        .expect("commerce and API key");
    let commerce_id: i64 = store
        .read_sqlite(|c| {
            Ok(c.query_row(
                "SELECT id FROM commerces WHERE code = ?1",
                [COMMERCE],
                |r| r.get(0),
            )
            .map_err(mandato::store::db::Error::from)?)
        })
        .expect("commerce id");
    drop(store);
    let setup_ms = setup_started.elapsed().as_secs_f64() * 1000.0;

    let now = Utc::now();
    let layout = Layout {
        base_ms: (now - chrono::Duration::days(366)).timestamp_millis(),
        customers,
        mandates,
    };
    let today = now.date_naive();

    let mut conn = Connection::open(config.database_path()).expect("bulk connection");
    conn.execute_batch(
        "PRAGMA synchronous = OFF; PRAGMA cache_size = -262144; PRAGMA temp_store = MEMORY;
         PRAGMA foreign_keys = OFF;",
    )
    .unwrap();
    const BATCH: u64 = 50_000;
    let fill_started = Instant::now();

    // Customers.
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
                const FIRST: [&str; 8] = [
                    "Ana",
                    "Benjamín",
                    "Catalina",
                    "Diego",
                    "Elena",
                    "Felipe",
                    "Gabriela",
                    "Héctor",
                ];
                const LAST: [&str; 8] = [
                    "Pérez",
                    "González",
                    "Muñoz",
                    "Rojas",
                    "Díaz",
                    "Soto",
                    "Contreras",
                    "Silva",
                ];
                let body = 10_000_000 + seq as u32;
                let rut = format!("{body}-{}", mandato::domain::rut::check_digit(body));
                let h = mix(seq);
                let address = json!({"street": "Av. Providencia", "number": format!("{}", h % 9000 + 100),
                    "commune": "Providencia", "city": "Santiago", "region": "RM", "country": "CL"});
                stmt.execute(params![
                    seq as i64,
                    layout.customer_id(seq),
                    commerce_id,
                    user_id(seq),
                    rut,
                    FIRST[(h % 8) as usize],
                    LAST[((h >> 8) % 8) as usize],
                    if h.is_multiple_of(5) {
                        None
                    } else {
                        Some(LAST[((h >> 16) % 8) as usize])
                    },
                    if h.is_multiple_of(7) {
                        None
                    } else {
                        Some(address.to_string())
                    },
                    format!("cliente{seq}@example.cl"),
                    Some(format!("+569{:08}", h % 100_000_000)),
                    ts(layout.customer_ms(seq)),
                ])
                .unwrap();
            }
            c = end;
        }
        tx.commit().unwrap();
    }
    let customers_ms = t.elapsed().as_secs_f64() * 1000.0;
    eprintln!("[fill] {customers} customers in {customers_ms:.0} ms");

    // Mandates (SUBSCRIPTION, monthly, `per_mandate` installments) and their installments,
    // written together so installments keep the creation order of a live system.
    let t = Instant::now();
    let mut installments_rows = 0u64;
    let mut m = 1;
    let charge_dates = |start: NaiveDate, k: u64| {
        let start = mandato::domain::date::Date::new(start).expect("fill date in range");
        mandato::domain::schedule::nth_due_date(
            start,
            mandato::domain::schedule::Periodicity::Monthly,
            k as u32,
        )
        .expect("date")
        .naive()
    };
    while m <= mandates {
        let tx = conn.transaction().unwrap();
        {
            let mut mstmt = tx
                .prepare_cached(
                    "INSERT INTO mandates (seq, id, commerce_id, customer_seq, external_id, type, state,
                        name, detail, terminate_when_charged, charges, payment_methods, metadata,
                        url_callback, url_activation_webhook, url_payment_webhook, magic_link_token,
                        magic_link_expires_at, enrolled_method, cancel_description, event_sequence,
                        created_at, updated_at)
                     VALUES (?1, ?2, ?3, ?4, ?5, 3, ?6, ?7, ?8, 0, ?9, '[3,4,5]', ?10, ?11, ?12, ?13,
                        ?14, ?15, ?16, ?17, ?18, ?19, ?20)",
                )
                .unwrap();
            let mut istmt = tx
                .prepare_cached(
                    "INSERT INTO installments (id, mandate_seq, commerce_id, external_id, amount,
                        currency, due_date, state, state_at, attempts, payment_method_id,
                        authorization_code, rejection_code, rejection_message, created_at)
                     VALUES (?1, ?2, ?3, ?4, ?5, 'CLP', ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14)",
                )
                .unwrap();
            let end = (m + BATCH / per_mandate.max(1)).clamp(m + 1, mandates + 1);
            for seq in m..end {
                let h = mix(seq ^ 0xABCD);
                let created_ms = layout.mandate_ms(seq);
                let created = ts(created_ms);
                let start = date_of(created_ms) + chrono::Duration::days(7);
                let amount = [9_990u64, 19_990, 29_990, 49_990][(h % 4) as usize];
                let recent = (now.timestamp_millis() - created_ms) < 20 * 86_400_000;
                // 5% cancelled, recent ones mostly still awaiting activation, the rest active
                // (finished once every installment is paid).
                let cancelled = h % 20 == 7;
                let pending = !cancelled && recent && !h.is_multiple_of(3);
                let cancel_ms = created_ms + ((h >> 20) % 120 + 1) as i64 * 86_400_000;
                let cancel_date = date_of(cancel_ms);
                let mut rejected_any = false;
                let mut settled = 0;
                let mut rows = Vec::with_capacity(per_mandate as usize);
                for k in 0..per_mandate {
                    let due = charge_dates(start, k);
                    let hk = mix(h ^ k);
                    let due_ms = Utc
                        .from_utc_datetime(&due.and_hms_opt(13, 0, 0).unwrap())
                        .timestamp_millis();
                    let row: InstallmentFill = if pending {
                        (1, created.clone(), 0, None, None, None, None)
                    } else if cancelled && (due >= cancel_date || due >= today) {
                        (
                            4,
                            ts(cancel_ms.min(now.timestamp_millis())),
                            0,
                            None,
                            None,
                            None,
                            None,
                        )
                    } else if due < today {
                        if hk.is_multiple_of(25) {
                            rejected_any = true;
                            (
                                -99,
                                ts(due_ms),
                                3,
                                Some(3),
                                None,
                                Some("51"),
                                Some("Fondos insuficientes"),
                            )
                        } else {
                            settled += 1;
                            (
                                2,
                                ts(due_ms),
                                1,
                                Some(3),
                                Some(format!("A{:06}", hk % 1_000_000)),
                                None,
                                None,
                            )
                        }
                    } else {
                        (1, created.clone(), 0, None, None, None, None)
                    };
                    rows.push((k, due, row));
                }
                let state = if cancelled {
                    3
                } else if pending {
                    1
                } else if !rejected_any && settled == per_mandate {
                    4
                } else {
                    2
                };
                let charges = json!({"currencyId": "CLP", "amount": amount, "periodicity": "MONTHLY",
                    "startDate": start.to_string(), "count": per_mandate, "endDate": null,
                    "dueDate": null, "maxAmount": null});
                let enrolled = (state != 1).then(|| {
                    json!({"id": 3, "name": "CREDIT_CARD", "instrument": format!("XXXX-XXXX-XXXX-{:04}", h % 10_000)})
                        .to_string()
                });
                let mut token = [0u8; 16];
                token[..8].copy_from_slice(&seq.to_be_bytes());
                token[8..].copy_from_slice(&h.to_be_bytes());
                use base64::Engine;
                let token = base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(token);
                let updated = if state == 1 {
                    created.clone()
                } else {
                    ts((created_ms + 3_600_000)
                        .max(cancel_ms.min(now.timestamp_millis()) * (state == 3) as i64))
                };
                mstmt
                    .execute(params![
                        seq as i64,
                        layout.mandate_id(seq),
                        commerce_id,
                        layout.customer_of(seq) as i64,
                        format!("SUB-{seq:08}"),
                        state,
                        ["Plan mensual", "Gimnasio", "Seguro hogar", "Colegiatura"]
                            [(h >> 4) as usize % 4],
                        (!h.is_multiple_of(3)).then_some("Cargo mensual automático"),
                        charges.to_string(),
                        h.is_multiple_of(2)
                            .then(|| json!({"plan": "gold", "branch": h % 50}).to_string()),
                        Some("https://merchant.example/return"),
                        Some("https://merchant.example/hooks/activation"),
                        Some("https://merchant.example/hooks/payment"),
                        token,
                        ts(created_ms + 30 * 86_400_000),
                        enrolled,
                        cancelled.then_some("El cliente solicitó la baja"),
                        1 + settled as i64 + (state == 3) as i64,
                        created,
                        updated,
                    ])
                    .unwrap();
                for (k, due, (st, st_at, attempts, method, auth, rcode, rmsg)) in rows {
                    istmt
                        .execute(params![
                            layout.installment_id(seq, k),
                            seq as i64,
                            commerce_id,
                            (k + 1).to_string(),
                            amount.to_string(),
                            due.to_string(),
                            st,
                            st_at,
                            attempts,
                            method,
                            auth,
                            rcode,
                            rmsg,
                            created,
                        ])
                        .unwrap();
                    installments_rows += 1;
                }
            }
            m = end;
        }
        tx.commit().unwrap();
        if m % (mandates / 10).max(1) < BATCH / per_mandate.max(1) {
            eprintln!(
                "[fill] {} mandates, {installments_rows} installments, {:.0} s",
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
    let db_bytes = std::fs::metadata(config.database_path())
        .map(|m| m.len())
        .unwrap_or(0);
    eprintln!(
        "[fill] {mandates} mandates + {installments_rows} installments in {mandates_ms:.0} ms; checkpoint {checkpoint_ms:.0} ms; {:.0} MB",
        db_bytes as f64 / 1e6
    );
    json!({
        "api_key": key.key.expose(),
        "base_ms": layout.base_ms,
        "setup_ms": setup_ms,
        "fill_ms": fill_ms,
        "customers_ms": customers_ms,
        "mandates_and_installments_ms": mandates_ms,
        "checkpoint_ms": checkpoint_ms,
        "rows": {"customers": customers, "mandates": mandates, "installments": installments_rows},
        "db_bytes": db_bytes,
    })
}

// ---------------------------------------------------------------------------------------------
// HTTP client
// ---------------------------------------------------------------------------------------------

type Sender = hyper::client::conn::http1::SendRequest<Full<Bytes>>;

async fn connect(addr: SocketAddr) -> std::io::Result<Sender> {
    let stream = tokio::net::TcpStream::connect(addr).await?;
    stream.set_nodelay(true)?;
    let (sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
        .await
        .map_err(std::io::Error::other)?;
    tokio::spawn(async move {
        let _ = conn.await;
    });
    Ok(sender)
}

/// Sends one request and reads the whole answer.
async fn send(sender: &mut Sender, req: Request<Full<Bytes>>) -> Result<(u16, Bytes), String> {
    sender.ready().await.map_err(|e| e.to_string())?;
    let resp = sender.send_request(req).await.map_err(|e| e.to_string())?;
    let status = resp.status().as_u16();
    let body = resp
        .into_body()
        .collect()
        .await
        .map_err(|e| e.to_string())?
        .to_bytes();
    Ok((status, body))
}

#[derive(Clone)]
struct Credentials {
    host: String,
    api_key: String,
    jwt: Option<String>,
}

/// A request with the eight common headers (fresh correlationId and requestDateTime) and,
/// when there is one, the bearer token.
fn merchant_request(
    creds: &Credentials,
    method: Method,
    path: &str,
    body: Option<String>,
) -> Request<Full<Bytes>> {
    let mut b = Request::builder()
        .method(method)
        .uri(path)
        .header("host", creds.host.as_str())
        .header("country", "CL")
        .header("commerce", COMMERCE)
        .header("channel", "WEB")
        .header(
            "requestDateTime",
            Utc::now().to_rfc3339_opts(SecondsFormat::Millis, true),
        )
        .header("correlationId", uuid::Uuid::new_v4().to_string())
        .header("processId", "API")
        .header("salesExecutiveId", "SE-01")
        .header("x-api-key", creds.api_key.as_str());
    if let Some(jwt) = &creds.jwt {
        b = b.header("authorization", format!("Bearer {jwt}"));
    }
    let body = match body {
        Some(json) => {
            b = b.header("content-type", "application/json");
            Full::new(Bytes::from(json))
        }
        None => Full::new(Bytes::new()),
    };
    b.body(body).expect("request")
}

fn plain_get(host: &str, path: &str) -> Request<Full<Bytes>> {
    Request::builder()
        .uri(path)
        .header("host", host)
        .body(Full::new(Bytes::new()))
        .expect("request")
}

/// Logs in as the helpers do: public key, the sandbox JWE helper, then `POST /login`.
async fn login(addr: SocketAddr, creds: &Credentials) -> Result<String, String> {
    let mut s = connect(addr).await.map_err(|e| e.to_string())?;
    let (st, body) = send(
        &mut s,
        plain_get(&creds.host, "/api/v1/.well-known/jwe-public-key"),
    )
    .await?;
    let v: Value = serde_json::from_slice(&body).map_err(|e| e.to_string())?;
    if st != 200 {
        return Err(format!("public key: {st} {v}"));
    }
    let key = v["payload"]["publicKey"]
        .as_str()
        .ok_or("no public key")?
        .to_string();
    let req = merchant_request(
        creds,
        Method::POST,
        "/api/v1/jwe/encrypt",
        Some(json!({"password": PASSWORD, "publicKey": key}).to_string()),
    );
    let (st, body) = send(&mut s, req).await?;
    let v: Value = serde_json::from_slice(&body).map_err(|e| e.to_string())?;
    if st != 200 {
        return Err(format!("encrypt: {st} {v}"));
    }
    let jwe = v["payload"]["token"].as_str().ok_or("no JWE")?.to_string();
    let req = merchant_request(
        creds,
        Method::POST,
        "/api/v1/login",
        Some(json!({"username": COMMERCE, "password": jwe}).to_string()),
    );
    let (st, body) = send(&mut s, req).await?;
    let v: Value = serde_json::from_slice(&body).map_err(|e| e.to_string())?;
    if st != 200 {
        return Err(format!("login: {st} {v}"));
    }
    Ok(v["payload"]["token"]
        .as_str()
        .ok_or("no token")?
        .to_string())
}

// ---------------------------------------------------------------------------------------------
// Load generator
// ---------------------------------------------------------------------------------------------

struct TaskCtx {
    n: u64,
    rng: u64,
}

impl TaskCtx {
    fn next(&mut self) -> u64 {
        self.rng = self.rng.wrapping_add(0x9E37_79B9_7F4A_7C15);
        mix(self.rng)
    }
}

type MakeRequest = Arc<dyn Fn(&mut TaskCtx) -> Request<Full<Bytes>> + Send + Sync>;

struct Scenario {
    name: &'static str,
    /// The engines' addresses: connection `i` goes to `addrs[i % addrs.len()]`, so the load is
    /// split evenly between engines that share one database.
    addrs: Vec<SocketAddr>,
    expect: u16,
    make: MakeRequest,
    meter: Meter,
}

/// Where the serving side's CPU time is read.
#[derive(Clone)]
enum Meter {
    /// The engine runs in this process: this process minus the load generator's threads.
    InProcess,
    /// The engines are `mandato serve` processes, and their database server may be a
    /// PostgreSQL cluster this process started (whose processes are read too).
    Processes {
        engines: Vec<u32>,
        cluster: Option<Arc<common::pg::Cluster>>,
    },
}

impl Meter {
    fn sample(&self) -> CpuSample {
        let mut sample = cpu_sample();
        if let Meter::Processes { engines, cluster } = self {
            sample.engines = engines
                .iter()
                .filter_map(|pid| {
                    stat_ticks(&std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?)
                })
                .sum();
            sample.database = cluster.as_ref().and_then(|c| c.server_ticks());
        }
        sample
    }

    /// (own cores, other cores, engine cores, database cores) between two samples `secs` apart.
    fn split(&self, a: &CpuSample, b: &CpuSample, secs: f64) -> (f64, f64, f64, Option<f64>) {
        match self {
            Meter::InProcess => {
                let (own, other, engine) = cpu_split(*a, *b, secs);
                (own, other, engine, None)
            }
            Meter::Processes { .. } => {
                let cores = |x: u64, y: u64| y.saturating_sub(x) as f64 / TICKS_PER_S / secs;
                let own = cores(a.own, b.own);
                let busy = cores(a.busy, b.busy);
                let engines = cores(a.engines, b.engines);
                let database = match (a.database, b.database) {
                    (Some(x), Some(y)) => Some(cores(x, y)),
                    _ => None,
                };
                let other = busy - own - engines - database.unwrap_or(0.0);
                (own, other.max(0.0), engines, database)
            }
        }
    }
}

#[derive(Default)]
struct TaskResult {
    latencies_us: Vec<u32>,
    errors: u64,
    io_errors: u64,
    first_error: Option<String>,
}

#[derive(Debug, Clone)]
struct Stats {
    name: &'static str,
    requests: u64,
    rps: f64,
    errors: u64,
    p50_ms: f64,
    p90_ms: f64,
    p99_ms: f64,
    p999_ms: f64,
    max_ms: f64,
    mean_ms: f64,
    first_error: Option<String>,
    /// Cores used by this process (engine + load generator) during the measured window.
    own_cores: f64,
    /// Cores used by everything else on the machine meanwhile (approximate: busy time from
    /// /proc/stat, softirq excluded, minus this process's user + system time). Figures taken
    /// while it is high are not comparable.
    other_cores: f64,
    /// CPU time of the serving side per request (this process minus the load generator's
    /// threads), in microseconds: less sensitive to a busy machine than requests/s.
    engine_cpu_us: f64,
    /// CPU time of the PostgreSQL server's processes per request, in microseconds, when the
    /// engines run on a cluster this process started.
    database_cpu_us: Option<f64>,
    /// Of `engine_cpu_us`, the in-process engine's audit writer and checkpoint threads
    /// (`None` for engines in processes of their own).
    audit_writer_cpu_us: Option<f64>,
    checkpoint_cpu_us: Option<f64>,
    /// The WAL file's largest size during the measured window, in MB (`None` on PostgreSQL,
    /// where there is none).
    wal_peak_mb: Option<f64>,
}

impl Stats {
    fn to_json(&self) -> Value {
        json!({"requests": self.requests, "requests_per_s": round1(self.rps), "errors": self.errors,
               "p50_ms": round3(self.p50_ms), "p90_ms": round3(self.p90_ms), "p99_ms": round3(self.p99_ms),
               "p999_ms": round3(self.p999_ms), "max_ms": round3(self.max_ms), "mean_ms": round3(self.mean_ms),
               "first_error": self.first_error, "own_cores": round3(self.own_cores),
               "other_cores": round3(self.other_cores), "engine_cpu_us_per_request": round1(self.engine_cpu_us),
               "valid": self.errors == 0})
        .as_object()
        .cloned()
        .map(|mut row| {
            if let Some(us) = self.database_cpu_us {
                row.insert("database_cpu_us_per_request".into(), json!(round1(us)));
            }
            if let Some(mb) = self.wal_peak_mb {
                row.insert("wal_peak_mb".into(), json!(round1(mb)));
            }
            if let (Some(audit), Some(checkpoint)) = (self.audit_writer_cpu_us, self.checkpoint_cpu_us) {
                row.insert("audit_writer_cpu_us_per_request".into(), json!(round1(audit)));
                row.insert("checkpoint_cpu_us_per_request".into(), json!(round1(checkpoint)));
            }
            Value::Object(row)
        })
        .expect("an object")
    }
}

/// Clock ticks: busy ticks of the whole machine (softirq apart, which is mostly this
/// benchmark's loopback traffic), and this process's own user + system ticks.
#[derive(Clone, Copy, Debug, Default)]
struct CpuSample {
    busy: u64,
    own: u64,
    /// Ticks of the load generator's threads (named `loadgen`), to tell the engine's share.
    loadgen: u64,
    /// Ticks of the in-process engine's audit writer and checkpoint threads (by their names),
    /// to tell what the request threads spend from what the records they leave cost.
    audit_writer: u64,
    checkpoint: u64,
    /// Ticks of engines running as processes of their own (see `Meter`).
    engines: u64,
    /// Ticks of the PostgreSQL server's processes, when known.
    database: Option<u64>,
}

/// User + system ticks of this process's threads named `name`.
fn thread_ticks(name: &str) -> u64 {
    let Ok(tasks) = std::fs::read_dir("/proc/self/task") else {
        return 0;
    };
    tasks
        .flatten()
        .filter(|t| std::fs::read_to_string(t.path().join("comm")).is_ok_and(|c| c.trim() == name))
        .filter_map(|t| stat_ticks(&std::fs::read_to_string(t.path().join("stat")).ok()?))
        .sum()
}

fn cpu_sample() -> CpuSample {
    let own = std::fs::read_to_string("/proc/self/stat")
        .ok()
        .and_then(|s| stat_ticks(&s))
        .unwrap_or(0);
    CpuSample {
        busy: machine_busy_ticks(),
        own,
        loadgen: thread_ticks("loadgen"),
        audit_writer: thread_ticks("audit-writer"),
        checkpoint: thread_ticks("checkpoint"),
        engines: 0,
        database: None,
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

/// (own cores, other cores, engine cores) between two samples `secs` apart; the engine's share
/// is this process minus the load generator's threads.
fn cpu_split(a: CpuSample, b: CpuSample, secs: f64) -> (f64, f64, f64) {
    let hz = TICKS_PER_S;
    let own = b.own.saturating_sub(a.own) as f64 / hz / secs;
    let busy = b.busy.saturating_sub(a.busy) as f64 / hz / secs;
    let loadgen = b.loadgen.saturating_sub(a.loadgen) as f64 / hz / secs;
    (own, (busy - own).max(0.0), (own - loadgen).max(0.0))
}

async fn run_scenario(s: &Scenario, p: &Params) -> Stats {
    let begin = Instant::now();
    let measure_from = begin + p.warmup;
    let end = measure_from + p.duration;
    let meter = s.meter.clone();
    let sampler = tokio::spawn(async move {
        tokio::time::sleep_until(measure_from.into()).await;
        let a = meter.sample();
        tokio::time::sleep_until(end.into()).await;
        (a, meter.sample())
    });
    // Engines on PostgreSQL have no WAL file of their own: the SQLite file's is not theirs.
    let wal_file = match &s.meter {
        Meter::Processes {
            cluster: Some(_), ..
        } => None,
        _ => WAL_FILE.get().cloned(),
    };
    let wal_watch = tokio::spawn(async move {
        tokio::time::sleep_until(measure_from.into()).await;
        let mut peak: Option<u64> = None;
        while Instant::now() < end {
            if let Some(len) = wal_file
                .as_ref()
                .and_then(|f| std::fs::metadata(f).ok())
                .map(|m| m.len())
            {
                peak = Some(peak.map_or(len, |p| p.max(len)));
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        peak
    });
    let mut handles = Vec::with_capacity(p.connections);
    for task in 0..p.connections {
        let make = Arc::clone(&s.make);
        let addr = s.addrs[task % s.addrs.len()];
        let expect = s.expect;
        handles.push(tokio::spawn(async move {
            let mut out = TaskResult {
                latencies_us: Vec::with_capacity(1 << 14),
                ..Default::default()
            };
            let mut ctx = TaskCtx {
                n: 0,
                rng: mix(task as u64 + 1) ^ begin.elapsed().as_nanos() as u64,
            };
            'outer: while Instant::now() < end {
                let mut sender = match connect(addr).await {
                    Ok(s) => s,
                    Err(e) => {
                        out.io_errors += 1;
                        out.first_error.get_or_insert(format!("connect: {e}"));
                        tokio::time::sleep(Duration::from_millis(10)).await;
                        continue;
                    }
                };
                loop {
                    let sent = Instant::now();
                    if sent >= end {
                        break 'outer;
                    }
                    let req = make(&mut ctx);
                    ctx.n += 1;
                    let result = send(&mut sender, req).await;
                    let measured = sent >= measure_from;
                    match result {
                        Ok((status, body)) => {
                            if measured {
                                let us = sent.elapsed().as_micros().min(u32::MAX as u128) as u32;
                                out.latencies_us.push(us);
                                if status != expect {
                                    out.errors += 1;
                                    out.first_error.get_or_insert_with(|| {
                                        format!(
                                            "{status}: {}",
                                            String::from_utf8_lossy(&body[..body.len().min(300)])
                                        )
                                    });
                                }
                            }
                        }
                        Err(e) => {
                            if measured {
                                out.io_errors += 1;
                                out.first_error.get_or_insert(e);
                            }
                            continue 'outer;
                        }
                    }
                }
            }
            out
        }));
    }
    let mut all = Vec::new();
    let mut errors = 0;
    let mut first_error = None;
    for h in handles {
        let r = h.await.expect("load task");
        all.extend_from_slice(&r.latencies_us);
        errors += r.errors + r.io_errors;
        if first_error.is_none() {
            first_error = r.first_error;
        }
    }
    all.sort_unstable();
    let pct = |q: f64| -> f64 {
        if all.is_empty() {
            return f64::NAN;
        }
        let i = ((all.len() as f64 * q).ceil() as usize).clamp(1, all.len()) - 1;
        all[i] as f64 / 1000.0
    };
    let requests = all.len() as u64;
    let (a, b) = sampler.await.expect("sampler");
    let wal_peak_mb = wal_watch
        .await
        .expect("WAL watch")
        .map(|bytes| bytes as f64 / 1e6);
    let (own_cores, other_cores, engine_cores, database_cores) =
        s.meter.split(&a, &b, p.duration.as_secs_f64());
    let per_request_us = |cores: f64| {
        if requests > 0 {
            cores * p.duration.as_secs_f64() * 1e6 / requests as f64
        } else {
            f64::NAN
        }
    };
    let thread_us = |ticks: fn(&CpuSample) -> u64| match s.meter {
        Meter::InProcess => Some(per_request_us(
            ticks(&b).saturating_sub(ticks(&a)) as f64 / TICKS_PER_S / p.duration.as_secs_f64(),
        )),
        Meter::Processes { .. } => None,
    };
    Stats {
        own_cores,
        other_cores,
        engine_cpu_us: per_request_us(engine_cores),
        database_cpu_us: database_cores.map(per_request_us),
        audit_writer_cpu_us: thread_us(|c| c.audit_writer),
        checkpoint_cpu_us: thread_us(|c| c.checkpoint),
        wal_peak_mb,
        name: s.name,
        requests,
        rps: requests as f64 / p.duration.as_secs_f64(),
        errors,
        p50_ms: pct(0.50),
        p90_ms: pct(0.90),
        p99_ms: pct(0.99),
        p999_ms: pct(0.999),
        max_ms: all.last().map_or(f64::NAN, |&v| v as f64 / 1000.0),
        mean_ms: if all.is_empty() {
            f64::NAN
        } else {
            all.iter().map(|&v| v as f64).sum::<f64>() / all.len() as f64 / 1000.0
        },
        first_error,
    }
}

// ---------------------------------------------------------------------------------------------
// Reference servers: a bare handler, and one SQLite point SELECT on a pooled connection
// ---------------------------------------------------------------------------------------------

async fn serve(router: axum::Router) -> SocketAddr {
    use axum::serve::ListenerExt;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let addr = listener.local_addr().unwrap();
    let listener = listener.tap_io(|tcp| {
        let _ = tcp.set_nodelay(true);
    });
    tokio::spawn(async move {
        let _ = axum::serve(listener, router).await;
    });
    addr
}

async fn bare() -> axum::Json<Value> {
    axum::Json(json!({"statusCode": 200, "name": "OK", "message": "hello"}))
}

struct SelectPool {
    path: PathBuf,
    conns: Mutex<Vec<Connection>>,
}

impl SelectPool {
    /// A pooled read-only connection, or a new one when every pooled one is in use.
    fn take(&self) -> Connection {
        let pooled = self.conns.lock().unwrap().pop();
        pooled.unwrap_or_else(|| {
            Connection::open_with_flags(
                &self.path,
                OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX,
            )
            .expect("reader")
        })
    }

    fn give_back(&self, conn: Connection) {
        self.conns.lock().unwrap().push(conn);
    }
}

async fn select_one(
    State(pool): State<Arc<SelectPool>>,
    UrlPath(seq): UrlPath<i64>,
) -> axum::Json<Value> {
    let conn = pool.take();
    let row: Option<(String, String, i64)> = conn
        .prepare_cached("SELECT id, external_id, state FROM mandates WHERE seq = ?1")
        .unwrap()
        .query_row([seq], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
        .ok();
    pool.give_back(conn);
    axum::Json(
        json!({"found": row.is_some(), "mandate": row.map(|r| json!({"internalId": r.0, "id": r.1, "state": r.2}))}),
    )
}

/// The lookup's reads and nothing else, the floor under its SQLite part.
struct ReadsState {
    pool: SelectPool,
    layout: Layout,
    commerce_id: i64,
}

/// The three statements a lookup runs (the mandate by our id in its commerce, its customer,
/// its installments in order), in one read transaction on a pooled read-only connection as
/// the engine's readers do; every column of every row is stepped over as SQLite's raw value,
/// and nothing is decoded, checked or serialised beyond a tiny answer.
async fn lookup_reads(
    State(state): State<Arc<ReadsState>>,
    UrlPath(m): UrlPath<u64>,
) -> axum::Json<Value> {
    let conn = state.pool.take();
    let touch = |row: &rusqlite::Row<'_>| -> rusqlite::Result<usize> {
        let mut bytes = 0;
        for i in 0..row.as_ref().column_count() {
            bytes += match row.get_ref(i)? {
                rusqlite::types::ValueRef::Text(t) | rusqlite::types::ValueRef::Blob(t) => t.len(),
                _ => 8,
            };
        }
        Ok(bytes)
    };
    let read = || -> rusqlite::Result<(usize, usize)> {
        conn.prepare_cached("BEGIN")?.execute([])?;
        let (seq, customer_seq, mut bytes) = conn
            .prepare_cached("SELECT * FROM mandates WHERE id = ?1 AND commerce_id = ?2")?
            .query_row(
                params![state.layout.mandate_id(m), state.commerce_id],
                |r| {
                    Ok((
                        r.get::<_, i64>("seq")?,
                        r.get::<_, i64>("customer_seq")?,
                        touch(r)?,
                    ))
                },
            )?;
        bytes += conn
            .prepare_cached("SELECT * FROM customers WHERE seq = ?1")?
            .query_row([customer_seq], touch)?;
        let mut installments = conn.prepare_cached(
            "SELECT * FROM installments WHERE mandate_seq = ?1 ORDER BY due_date, seq",
        )?;
        let mut rows = installments.query([seq])?;
        let mut count = 0;
        while let Some(row) = rows.next()? {
            bytes += touch(row)?;
            count += 1;
        }
        drop(rows);
        conn.prepare_cached("COMMIT")?.execute([])?;
        Ok((count, bytes))
    };
    let answer = read();
    if answer.is_err() {
        let _ = conn.execute_batch("ROLLBACK");
    }
    state.pool.give_back(conn);
    let (installments, bytes) = answer.expect("the lookup's reads");
    axum::Json(json!({"installments": installments, "bytes": bytes}))
}

// ---------------------------------------------------------------------------------------------
// Measurements
// ---------------------------------------------------------------------------------------------

fn status_kb(field: &str) -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with(field))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|v| v.parse().ok())
        })
        .unwrap_or(0)
}

fn rss_mb() -> f64 {
    status_kb("VmRSS:") as f64 / 1024.0
}

/// Writes the database files to disk and drops them from the page cache, so the next open
/// reads them from the device (a restart after the machine was busy with other things).
fn evict_from_page_cache(dir: &Path) {
    use std::os::fd::AsRawFd;
    for name in [
        DB_FILE.to_string(),
        format!("{DB_FILE}-wal"),
        format!("{DB_FILE}-shm"),
    ] {
        if let Ok(f) = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .open(dir.join(name))
        {
            let _ = f.sync_all();
            unsafe {
                libc::posix_fadvise(f.as_raw_fd(), 0, 0, libc::POSIX_FADV_DONTNEED);
            }
        }
    }
}

/// Reads the database files once, so the load scenarios find them in the OS page cache as a
/// server that has been serving for a while does (the cold start above dropped them).
fn load_into_page_cache(dir: &Path) {
    for name in [DB_FILE.to_string(), format!("{DB_FILE}-wal")] {
        if let Ok(mut f) = std::fs::File::open(dir.join(name)) {
            let _ = std::io::copy(&mut f, &mut std::io::sink());
        }
    }
}

struct StartFigures {
    app_start_ms: f64,
    first_request_ms: f64,
    attempts: u32,
}

/// Starts the engine and sends the authenticated lookup until it answers 200.
fn start_engine(
    server_rt: &tokio::runtime::Runtime,
    client_rt: &tokio::runtime::Runtime,
    config: &Config,
    creds: &Credentials,
    probe_path: &str,
) -> (app::Running, StartFigures) {
    let t0 = Instant::now();
    let running = server_rt
        .block_on(app::start(
            config.clone(),
            Arc::new(SystemClock) as Arc<dyn Clock>,
        ))
        .expect("engine starts");
    let app_start_ms = t0.elapsed().as_secs_f64() * 1000.0;
    let addr = running.addr;
    let creds = Credentials {
        host: addr.to_string(),
        ..creds.clone()
    };
    let mut attempts = 0;
    client_rt.block_on(async {
        loop {
            attempts += 1;
            let ok = async {
                let mut s = connect(addr).await.map_err(|e| e.to_string())?;
                let (st, body) = send(
                    &mut s,
                    merchant_request(&creds, Method::GET, probe_path, None),
                )
                .await?;
                if st == 200 {
                    Ok(())
                } else {
                    Err(format!("{st}: {}", String::from_utf8_lossy(&body)))
                }
            }
            .await;
            match ok {
                Ok(()) => break,
                Err(e) if attempts < 50 => {
                    eprintln!("first request attempt {attempts}: {e}");
                    tokio::time::sleep(Duration::from_millis(5)).await;
                }
                Err(e) => panic!("the engine never answered the lookup: {e}"),
            }
        }
    });
    let first_request_ms = t0.elapsed().as_secs_f64() * 1000.0;
    (
        running,
        StartFigures {
            app_start_ms,
            first_request_ms,
            attempts,
        },
    )
}

/// `GET /api/v1/mandate/internalId/{random filled mandate}` with the eight headers and the JWT.
fn lookup_scenario(
    name: &'static str,
    addrs: &[SocketAddr],
    meter: Meter,
    creds: Arc<Credentials>,
    layout: Layout,
) -> Scenario {
    Scenario {
        name,
        addrs: addrs.to_vec(),
        meter,
        expect: 200,
        make: Arc::new(move |ctx| {
            let m = ctx.next() % layout.mandates + 1;
            merchant_request(
                &creds,
                Method::GET,
                &format!("/api/v1/mandate/internalId/{}", layout.mandate_id(m)),
                None,
            )
        }),
    }
}

/// `GET /{name}/{m}` on a reference server, for a random filled mandate `m`.
fn mandate_reference_scenario(name: &'static str, addr: SocketAddr, mandates: u64) -> Scenario {
    let host = addr.to_string();
    Scenario {
        name,
        addrs: vec![addr],
        meter: Meter::InProcess,
        expect: 200,
        make: Arc::new(move |ctx| {
            plain_get(&host, &format!("/{name}/{}", ctx.next() % mandates + 1))
        }),
    }
}

/// `POST /api/v1/mandate`: SUBSCRIPTION x12 for a random filled customer, a never-repeated id.
fn create_scenario(
    addrs: &[SocketAddr],
    meter: Meter,
    creds: Arc<Credentials>,
    layout: Layout,
) -> Scenario {
    let run = Utc::now().timestamp_millis();
    let start = (Utc::now().date_naive() + chrono::Duration::days(7)).to_string();
    Scenario {
        name: "create",
        addrs: addrs.to_vec(),
        meter,
        expect: 201,
        make: Arc::new(move |ctx| {
            let c = ctx.next() % layout.customers + 1;
            let body = json!({
                "customer": {"userId": user_id(c)},
                "mandate": {"id": format!("B{run}-{}", NEXT_MANDATE.fetch_add(1, Ordering::Relaxed)), "type": "SUBSCRIPTION",
                            "name": "Plan mensual", "detail": "Gimnasio",
                            "charges": {"currencyId": "CLP", "amount": 29990, "periodicity": "MONTHLY",
                                        "startDate": start, "count": 12}},
                "paymentMethods": [3, 4, 5],
                "metadata": {"plan": "gold"},
                "urls": {"callback": "https://merchant.example/return",
                         "activationWebhook": "https://merchant.example/hooks/activation",
                         "paymentWebhook": "https://merchant.example/hooks/payment"}
            });
            merchant_request(
                &creds,
                Method::POST,
                "/api/v1/mandate",
                Some(body.to_string()),
            )
        }),
    }
}

/// The memory of a process, from `/proc/<pid>/status`, in MB.
fn proc_status_mb(pid: u32, field: &str) -> f64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with(field))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|v| v.parse::<f64>().ok())
        })
        .map_or(0.0, |kb| kb / 1024.0)
}

/// A `mandato serve` process on `127.0.0.1:0` without automatic backups (which would copy the
/// file during the load), on SQLite's file in `data_dir` or on the PostgreSQL database at
/// `database_url`.
struct ServeProcess {
    child: std::process::Child,
    pid: u32,
    addr: SocketAddr,
}

impl ServeProcess {
    fn start(data_dir: &Path, database_url: Option<&str>) -> ServeProcess {
        use std::io::BufRead;
        // `MANDATO_BENCH_BIN`: another build of the engine, for an A/B in one run.
        let bin = std::env::var_os("MANDATO_BENCH_BIN")
            .map(std::path::PathBuf::from)
            .unwrap_or_else(|| env!("CARGO_BIN_EXE_mandato").into());
        let mut command = Command::new(bin);
        command.arg("--data-dir").arg(data_dir);
        if let Some(url) = database_url {
            command.args(["--database-url", url]);
        }
        let mut child = command
            .args(["serve", "--listen", "127.0.0.1:0", "--no-backups"])
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("mandato serve starts");
        let pid = child.id();
        let mut lines = std::io::BufReader::new(child.stderr.take().unwrap()).lines();
        let url = loop {
            let line = lines.next().expect("serve logs its URL").unwrap();
            if let Some(rest) = line.split("url=").nth(1) {
                break rest.split_whitespace().next().unwrap().to_string();
            }
        };
        std::thread::spawn(move || for _ in lines {});
        let addr = url
            .trim_start_matches("http://")
            .parse()
            .expect("serve's address");
        ServeProcess { child, pid, addr }
    }

    /// SIGTERM: serve shuts down in order (the audit batch and, on SQLite, the WAL checkpoint
    /// written).
    fn stop(mut self) {
        let _ = Command::new("kill").arg(self.pid.to_string()).status();
        let _ = self.child.wait();
    }
}

/// One row of the backend comparison.
struct BackendRow {
    backend: &'static str,
    engines: usize,
    stats: Stats,
    /// PostgreSQL sessions the engines opened per request during the scenario (warm-up
    /// included): a pool that keeps too few connections for the load opens new ones.
    sessions_per_request: Option<f64>,
    /// What the server executed per request (`pg_stat_statements`, warm-up included).
    statements: Option<PerRequestStatements>,
}

/// `pg_stat_statements` divided by the requests sent.
struct PerRequestStatements {
    statements: f64,
    plans: f64,
    server_us: f64,
    top: Vec<common::pg::Statement>,
}

/// `MANDATO_BENCH_BACKEND=postgres`: the lookup and create loads against `mandato serve` on
/// SQLite's filled file, then on a PostgreSQL database holding the same rows (copied from that
/// file into a schema made by the engine's migrations) with one engine and with two engines on
/// that one database, the connections alternating between them. Every engine is a process of
/// its own, so each row's serving CPU is read the same way, and the PostgreSQL server's
/// processes are read beside them.
fn compare_backends(p: &Params, dir: &Path, layout: Layout, api_key: &str, mode: &str) {
    let client_rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(p.client_threads)
        .thread_name("loadgen")
        .enable_all()
        .build()
        .unwrap();
    let cluster = Arc::new(common::pg::Cluster::start());
    let url = cluster.create_database("mandato_bench", None);
    let t = Instant::now();
    drop(
        mandato::store::Store::open_postgres(&url, &Default::default())
            .expect("the engine's migrations"),
    );
    let migrate_ms = t.elapsed().as_secs_f64() * 1000.0;
    let copy = common::pg::copy_from_sqlite(&dir.join(DB_FILE), &url);
    eprintln!(
        "[pg] schema in {migrate_ms:.0} ms; {} rows of {} tables copied in {:.1} s",
        copy.rows,
        copy.tables,
        copy.ms / 1000.0
    );
    let sqlite_commit_ms = fsync_probe(dir, 1.0);
    let pg_commit_ms = cluster.commit_probe_ms(&url, 300);

    let mut rows: Vec<BackendRow> = Vec::new();
    for (backend, engines) in [("sqlite", 1), ("postgres", 1), ("postgres", 2)] {
        let on_postgres = backend == "postgres";
        if !on_postgres {
            load_into_page_cache(dir);
        }
        let serving: Vec<ServeProcess> = (0..engines)
            .map(|i| {
                if on_postgres {
                    let data_dir = dir.join(format!("pg-engine-{i}"));
                    std::fs::create_dir_all(&data_dir).expect("engine data dir");
                    ServeProcess::start(&data_dir, Some(&url))
                } else {
                    ServeProcess::start(dir, None)
                }
            })
            .collect();
        let addrs: Vec<SocketAddr> = serving.iter().map(|e| e.addr).collect();
        let mut creds = Credentials {
            host: addrs[0].to_string(),
            api_key: api_key.to_string(),
            jwt: None,
        };
        creds.jwt = Some(client_rt.block_on(login(addrs[0], &creds)).expect("login"));
        let creds = Arc::new(creds);
        let meter = Meter::Processes {
            engines: serving.iter().map(|e| e.pid).collect(),
            cluster: on_postgres.then(|| Arc::clone(&cluster)),
        };
        let mut scenarios = Vec::new();
        if p.runs("lookup") {
            scenarios.push(lookup_scenario(
                "lookup",
                &addrs,
                meter.clone(),
                Arc::clone(&creds),
                layout,
            ));
        }
        if p.runs("create") {
            scenarios.push(create_scenario(
                &addrs,
                meter.clone(),
                Arc::clone(&creds),
                layout,
            ));
        }
        for s in &scenarios {
            if !p.wait_quiet.is_zero() {
                wait_for_quiet(p.wait_quiet);
            }
            eprintln!(
                "running {} on {backend} with {engines} engine(s) for {:?} (+{:?} warm-up) at {} connections",
                s.name, p.duration, p.warmup, p.connections
            );
            let sessions = || on_postgres.then(|| cluster.sessions(&url));
            let statements_reset = || on_postgres.then(|| cluster.statements_reset()).flatten();
            let mut before = sessions();
            statements_reset();
            let mut stats = client_rt.block_on(run_scenario(s, p));
            let mut retries = 0;
            while !p.wait_quiet.is_zero() && stats.other_cores > 0.2 && retries < 2 {
                retries += 1;
                eprintln!(
                    "  disturbed ({:.2} cores used by other processes); running {} again",
                    stats.other_cores, s.name
                );
                wait_for_quiet(p.wait_quiet);
                before = sessions();
                statements_reset();
                stats = client_rt.block_on(run_scenario(s, p));
            }
            // The statistics reach pg_stat_database within a second.
            std::thread::sleep(Duration::from_millis(1500));
            let sent = (stats.rps * (p.duration + p.warmup).as_secs_f64()).max(1.0);
            let sessions_per_request = before.zip(sessions()).map(|(a, b)| (b - a) as f64 / sent);
            let statements = on_postgres
                .then(|| cluster.statements(&url))
                .flatten()
                .map(|st| PerRequestStatements {
                    statements: st.calls as f64 / sent,
                    plans: st.plans as f64 / sent,
                    server_us: st.ms * 1000.0 / sent,
                    top: st.top,
                });
            eprintln!(
                "  {:.0} req/s, p99 {:.2} ms, errors {}; engines {:.0} us/req, database {} us/req; others {:.2}{}",
                stats.rps,
                stats.p99_ms,
                stats.errors,
                stats.engine_cpu_us,
                stats
                    .database_cpu_us
                    .map_or("n/a".into(), |us| format!("{us:.0}")),
                stats.other_cores,
                stats
                    .first_error
                    .as_ref()
                    .map(|e| format!(" (first: {e})"))
                    .unwrap_or_default()
            );
            if let Some(per) = sessions_per_request {
                eprintln!("  PostgreSQL sessions opened per request: {per:.3}");
            }
            if let Some(st) = &statements {
                eprintln!(
                    "  statements per request {:.2}, plans {:.3}, server time {:.0} us; the most costly:",
                    st.statements, st.plans, st.server_us
                );
                for q in &st.top {
                    eprintln!(
                        "    {:>7.3}/r {:>8.0} us/r plans {:>8} rows {:>9}  {}",
                        q.calls as f64 / sent,
                        q.ms * 1000.0 / sent,
                        q.plans,
                        q.rows,
                        q.query.chars().take(140).collect::<String>()
                    );
                }
            }
            rows.push(BackendRow {
                backend,
                engines,
                stats,
                sessions_per_request,
                statements,
            });
            std::thread::sleep(Duration::from_millis(500));
        }
        for engine in serving {
            engine.stop();
        }
    }
    cluster.drop_database("mandato_bench");

    let sqlite_rps = |name: &str| {
        rows.iter()
            .find(|r| r.backend == "sqlite" && r.stats.name == name)
            .map(|r| r.stats.rps)
    };
    let ratio = |r: &BackendRow| sqlite_rps(r.stats.name).map(|base| r.stats.rps / base);
    let mut out = String::new();
    use std::fmt::Write;
    let _ = writeln!(
        out,
        "\n== mandato API benchmark, SQLite and PostgreSQL ({mode}) =="
    );
    let _ = writeln!(
        out,
        "data: {} customers, {} mandates, {} installments per mandate; {} connections, {} client threads, {:?} measured after {:?} warm-up",
        p.customers,
        p.mandates,
        p.installments_per_mandate,
        p.connections,
        p.client_threads,
        p.duration,
        p.warmup
    );
    let _ = writeln!(
        out,
        "PostgreSQL: schema by the engine's migrations in {migrate_ms:.0} ms, {} rows copied from the SQLite fill in {:.1} s",
        copy.rows,
        copy.ms / 1000.0
    );
    let _ = writeln!(
        out,
        "\n{:<8} {:<9} {:>7} {:>9} {:>8} {:>8} {:>7} {:>9} {:>8} {:>9} {:>9} {:>9} {:>9} {:>8} {:>8}",
        "load",
        "backend",
        "engines",
        "req/s",
        "p50 ms",
        "p99 ms",
        "errors",
        "engine us",
        "db us",
        "sessions/r",
        "stmts/r",
        "plans/r",
        "own cores",
        "others*",
        "/ sqlite"
    );
    for r in &rows {
        let s = &r.stats;
        let _ = writeln!(
            out,
            "{:<8} {:<9} {:>7} {:>9.0} {:>8.2} {:>8.2} {:>7} {:>9.0} {:>8} {:>9} {:>9} {:>9} {:>9.2} {:>8.2} {:>8}{}",
            s.name,
            r.backend,
            r.engines,
            s.rps,
            s.p50_ms,
            s.p99_ms,
            s.errors,
            s.engine_cpu_us,
            s.database_cpu_us
                .map_or("n/a".into(), |us| format!("{us:.0}")),
            r.sessions_per_request
                .map_or("n/a".into(), |x| format!("{x:.3}")),
            r.statements
                .as_ref()
                .map_or("n/a".into(), |x| format!("{:.2}", x.statements)),
            r.statements
                .as_ref()
                .map_or("n/a".into(), |x| format!("{:.3}", x.plans)),
            s.own_cores,
            s.other_cores,
            ratio(r).map_or("n/a".into(), |x| format!("{x:.3}")),
            if s.errors > 0 {
                "  INVALID (errors)"
            } else {
                ""
            }
        );
    }
    let _ = writeln!(
        out,
        "engine us: CPU of the mandato serve processes per request; db us: CPU of the PostgreSQL server's processes per request (n/a: SQLite, or a server this run did not start); stmts/r, plans/r: statements the server executed (BEGIN and COMMIT included; statements sent together in one simple query count one each) and planned per request (pg_stat_statements, warm-up included)\n* cores used by other processes during the window (the load generator, engines and PostgreSQL excluded); above ~0.2 the row is not comparable"
    );
    let _ = writeln!(
        out,
        "durable commit now: SQLite's disk 4 KiB write + fdatasync median {sqlite_commit_ms:.2} ms; PostgreSQL single-row autocommit median {pg_commit_ms:.2} ms"
    );
    println!("{out}");

    let report = json!({
        "mode": mode,
        "at": Utc::now().to_rfc3339_opts(SecondsFormat::Secs, true),
        "machine": {"cpus": std::thread::available_parallelism().map_or(0, |n| n.get())},
        "params": {"customers": p.customers, "mandates": p.mandates,
                   "installments_per_mandate": p.installments_per_mandate,
                   "warmup_s": p.warmup.as_secs_f64(), "duration_s": p.duration.as_secs_f64(),
                   "connections": p.connections, "client_threads": p.client_threads},
        "postgres": {"migrate_ms": round1(migrate_ms), "copy_ms": round1(copy.ms), "copied_rows": copy.rows,
                     "synchronous_commit": "on", "fsync": "on"},
        "durable_commit_ms": {"sqlite_fdatasync_4k_median": round3(sqlite_commit_ms),
                              "postgres_autocommit_insert_median": round3(pg_commit_ms)},
        "rows": rows.iter().map(|r| {
            let mut row = r.stats.to_json();
            row["scenario"] = json!(r.stats.name);
            row["backend"] = json!(r.backend);
            row["engines"] = json!(r.engines);
            row["ratio_to_sqlite"] = json!(ratio(r).map(round3));
            row["postgres_sessions_per_request"] = json!(r.sessions_per_request.map(round3));
            if let Some(st) = &r.statements {
                row["postgres_statements"] = json!({
                    "per_request": round3(st.statements),
                    "plans_per_request": round3(st.plans),
                    "server_us_per_request": round1(st.server_us),
                    "most_costly": st.top.iter().map(|q| json!({
                        "query": q.query, "calls": q.calls, "plans": q.plans,
                        "ms": round1(q.ms), "rows": q.rows,
                    })).collect::<Vec<_>>(),
                });
            }
            row
        }).collect::<Vec<_>>(),
    });
    let path = common::results_path(&format!("bench-results-backends-{mode}.json"));
    let _ = std::fs::create_dir_all(path.parent().unwrap());
    std::fs::write(&path, serde_json::to_string_pretty(&report).unwrap()).expect("write results");
    eprintln!("results written to {}", path.display());
}

/// The engine alone: the figures above share one process with the load generator and the
/// reference servers, so the `mandato serve` binary is started on the same database (no
/// automatic backup, which would copy the file during the load) and given the same lookups
/// and creations from this process; its own RSS is read from /proc after start, after 2 s
/// idle, after the load and 2 s idle, and its peak.
fn engine_alone(
    dir: &Path,
    client_rt: &tokio::runtime::Runtime,
    p: &Params,
    layout: Layout,
    api_key: &str,
) -> Value {
    let engine = ServeProcess::start(dir, None);
    let (pid, addr) = (engine.pid, engine.addr);
    let rss_after_start = proc_status_mb(pid, "VmRSS:");
    std::thread::sleep(Duration::from_secs(2));
    let rss_idle_before_load = proc_status_mb(pid, "VmRSS:");
    let mut creds = Credentials {
        host: addr.to_string(),
        api_key: api_key.to_string(),
        jwt: None,
    };
    creds.jwt = Some(
        client_rt
            .block_on(login(addr, &creds))
            .expect("login to serve"),
    );
    let creds = Arc::new(creds);
    let meter = Meter::Processes {
        engines: vec![pid],
        cluster: None,
    };
    let mut load = serde_json::Map::new();
    for scenario in [
        lookup_scenario("lookup", &[addr], meter.clone(), Arc::clone(&creds), layout),
        create_scenario(&[addr], meter.clone(), Arc::clone(&creds), layout),
    ] {
        eprintln!(
            "running {} against mandato serve (pid {pid})",
            scenario.name
        );
        let stats = client_rt.block_on(run_scenario(&scenario, p));
        eprintln!(
            "  {:.0} req/s, p99 {:.2} ms, errors {}",
            stats.rps, stats.p99_ms, stats.errors
        );
        load.insert(
            scenario.name.to_string(),
            json!({"rps": round1(stats.rps), "p99_ms": round3(stats.p99_ms), "errors": stats.errors}),
        );
        std::thread::sleep(Duration::from_millis(500));
    }
    std::thread::sleep(Duration::from_secs(2));
    let rss_idle_after_load = proc_status_mb(pid, "VmRSS:");
    let rss_peak = proc_status_mb(pid, "VmHWM:");
    engine.stop();
    json!({"after_start": round1(rss_after_start), "idle_2s_before_load": round1(rss_idle_before_load),
           "idle_2s_after_load": round1(rss_idle_after_load), "peak": round1(rss_peak), "load": load})
}

fn main() {
    // As the mandato binary does (see `app::without_huge_pages`).
    mandato::app::without_huge_pages();
    if std::env::var("MANDATO_BENCH_PHASE").as_deref() == Ok("fill") {
        fill_main();
        return;
    }
    let p = Params::from_env();
    let mode = if p.quick { "quick" } else { "full" };
    eprintln!("mandato API benchmark ({mode}): {p:?}");

    // 1. Fill, in a child process so its allocations do not count in this process's RSS.
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
    let _ = WAL_FILE.set(dir.join(format!("{DB_FILE}-wal")));
    let t = Instant::now();
    let child = Command::new(std::env::current_exe().unwrap())
        .env("MANDATO_BENCH_PHASE", "fill")
        .env("MANDATO_BENCH_FILL_DIR", &dir)
        .env("MANDATO_BENCH_FILL_CUSTOMERS", p.customers.to_string())
        .env("MANDATO_BENCH_FILL_MANDATES", p.mandates.to_string())
        .env(
            "MANDATO_BENCH_FILL_PER_MANDATE",
            p.installments_per_mandate.to_string(),
        )
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .output()
        .expect("fill process");
    assert!(child.status.success(), "the fill failed");
    let fill: Value = serde_json::from_slice(&child.stdout).expect("fill report");
    let fill_wall_ms = t.elapsed().as_secs_f64() * 1000.0;
    let layout = Layout {
        base_ms: fill["base_ms"].as_i64().unwrap(),
        customers: p.customers,
        mandates: p.mandates,
    };
    let api_key = fill["api_key"].as_str().unwrap().to_string();
    let stored_jwt = fill["jwt"].as_str().unwrap().to_string();
    if p.postgres {
        compare_backends(&p, &dir, layout, &api_key, mode);
        return;
    }

    let server_rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(p.server_threads)
        .thread_name("server")
        // As `mandato serve` and Mandato Desk build theirs.
        .on_thread_park(mandato::app::release_idle_memory)
        .enable_all()
        .build()
        .unwrap();
    let client_rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(p.client_threads)
        .thread_name("loadgen")
        .enable_all()
        .build()
        .unwrap();
    let rss_baseline = rss_mb();

    let mut config = Config::new(dir.clone());
    config.listen = "127.0.0.1:0".parse().unwrap();
    // The daily backup copies and checks the whole file once a day; an engine that starts on a
    // freshly filled database takes that day's backup at once, inside the measured windows.
    config.backups.enabled = false;
    let creds0 = Credentials {
        host: String::new(),
        api_key: api_key.clone(),
        jwt: Some(stored_jwt),
    };
    let probe = format!(
        "/api/v1/mandate/internalId/{}",
        layout.mandate_id(p.mandates / 2 + 1)
    );

    // 2. Start to first authenticated lookup: cold (files evicted from the page cache), then warm.
    evict_from_page_cache(&dir);
    let (running, cold) = start_engine(&server_rt, &client_rt, &config, &creds0, &probe);
    server_rt.block_on(running.shutdown()).expect("shutdown");
    let (running, warm) = start_engine(&server_rt, &client_rt, &config, &creds0, &probe);
    let rss_after_start = rss_mb();
    std::thread::sleep(Duration::from_secs(2));
    let rss_idle_before_load = rss_mb();
    load_into_page_cache(&dir);

    let addr = running.addr;
    let t = Instant::now();
    let jwt = client_rt
        .block_on(login(
            addr,
            &Credentials {
                host: addr.to_string(),
                ..creds0.clone()
            },
        ))
        .expect("login");
    let login_ms = t.elapsed().as_secs_f64() * 1000.0;
    let creds = Arc::new(Credentials {
        host: addr.to_string(),
        api_key,
        jwt: Some(jwt),
    });

    // Reference servers, on the engine's runtime.
    let bare_addr = server_rt.block_on(serve(
        axum::Router::new().route("/bare", axum::routing::get(bare)),
    ));
    // The bytes of one real lookup answer, served as they are to the lookup's own requests:
    // what the HTTP exchange of a lookup costs a handler that does nothing else.
    let answer_body = client_rt.block_on(async {
        let mut s = connect(addr).await.expect("connect for the answer");
        let (status, body) = send(&mut s, merchant_request(&creds, Method::GET, &probe, None))
            .await
            .expect("the probe lookup");
        assert_eq!(status, 200, "the probe lookup");
        body
    });
    let answer_bytes = answer_body.len();
    let answer_addr = server_rt.block_on(serve(axum::Router::new().route(
        "/api/v1/mandate/internalId/{id}",
        axum::routing::get(move || {
            let body = answer_body.clone();
            async move {
                (
                    [(axum::http::header::CONTENT_TYPE, "application/json")],
                    body,
                )
            }
        }),
    )));
    let pool = Arc::new(SelectPool {
        path: config.database_path(),
        conns: Mutex::new(Vec::new()),
    });
    let select_addr = server_rt.block_on(serve(
        axum::Router::new()
            .route("/select/{seq}", axum::routing::get(select_one))
            .with_state(pool),
    ));
    let commerce_id: i64 =
        Connection::open_with_flags(config.database_path(), OpenFlags::SQLITE_OPEN_READ_ONLY)
            .and_then(|c| {
                c.query_row(
                    "SELECT id FROM commerces WHERE code = ?1",
                    [COMMERCE],
                    |r| r.get(0),
                )
            })
            .expect("the commerce's id");
    let reads = Arc::new(ReadsState {
        pool: SelectPool {
            path: config.database_path(),
            conns: Mutex::new(Vec::new()),
        },
        layout,
        commerce_id,
    });
    let reads_addr = server_rt.block_on(serve(
        axum::Router::new()
            .route("/reads/{m}", axum::routing::get(lookup_reads))
            .with_state(reads),
    ));

    // 3. Load.
    let mut scenarios: Vec<Scenario> = Vec::new();
    if p.runs("bare") {
        let host = bare_addr.to_string();
        scenarios.push(Scenario {
            name: "bare",
            addrs: vec![bare_addr],
            meter: Meter::InProcess,
            expect: 200,
            make: Arc::new(move |_| plain_get(&host, "/bare")),
        });
    }
    if p.runs("answer") {
        scenarios.push(lookup_scenario(
            "answer",
            &[answer_addr],
            Meter::InProcess,
            Arc::clone(&creds),
            layout,
        ));
    }
    for (name, addr) in [("select", select_addr), ("reads", reads_addr)] {
        if p.runs(name) {
            scenarios.push(mandate_reference_scenario(name, addr, p.mandates));
        }
    }
    if p.runs("lookup") {
        scenarios.push(lookup_scenario(
            "lookup",
            &[addr],
            Meter::InProcess,
            Arc::clone(&creds),
            layout,
        ));
    }
    if p.runs("create") {
        scenarios.push(create_scenario(
            &[addr],
            Meter::InProcess,
            Arc::clone(&creds),
            layout,
        ));
    }
    let mut results: Vec<Stats> = Vec::new();
    let mut quiet_before: Vec<(String, f64)> = Vec::new();
    let mut fsync_ms = None;
    for s in &scenarios {
        if !p.wait_quiet.is_zero() {
            quiet_before.push((s.name.to_string(), wait_for_quiet(p.wait_quiet)));
        }
        if s.name == "create" {
            // What one durable commit costs on this disk now: the ceiling of a writer that
            // commits (and syncs) once per request is 1000 / this.
            fsync_ms = Some(fsync_probe(&dir, 1.0));
        }
        eprintln!(
            "running {} for {:?} (+{:?} warm-up) at {} connections",
            s.name, p.duration, p.warmup, p.connections
        );
        let mut stats = client_rt.block_on(run_scenario(s, &p));
        // With MANDATO_BENCH_WAIT_QUIET_SECS set, a run disturbed by other processes is
        // repeated (up to twice) once the machine is quiet again.
        let mut retries = 0;
        while !p.wait_quiet.is_zero() && stats.other_cores > 0.2 && retries < 2 {
            retries += 1;
            eprintln!(
                "  disturbed ({:.2} cores used by other processes, {:.0} req/s); running {} again",
                stats.other_cores, stats.rps, s.name
            );
            wait_for_quiet(p.wait_quiet);
            if s.name == "create" {
                fsync_ms = Some(fsync_probe(&dir, 1.0));
            }
            stats = client_rt.block_on(run_scenario(s, &p));
        }
        eprintln!(
            "  {:.0} req/s, p50 {:.2} ms, p99 {:.2} ms, errors {}; engine CPU {:.0} us/req; cores: this process {:.2}, others {:.2}{}",
            stats.rps,
            stats.p50_ms,
            stats.p99_ms,
            stats.errors,
            stats.engine_cpu_us,
            stats.own_cores,
            stats.other_cores,
            stats
                .first_error
                .as_ref()
                .map(|e| format!(" (first: {e})"))
                .unwrap_or_default()
        );
        // The audit writer may still hold this scenario's last records: the next scenario
        // starts once they are written, so that it does not pay for them. What the catch-up
        // took is reported beside the row (it is not in the row's window).
        let before = cpu_sample();
        let started = Instant::now();
        running.state.audit.flush();
        let after = cpu_sample();
        let engine_ticks = (after.own - after.loadgen).saturating_sub(before.own - before.loadgen);
        eprintln!(
            "  audit writer caught up {:.0} ms after the window, {:.0} ms of engine CPU",
            started.elapsed().as_secs_f64() * 1e3,
            engine_ticks as f64 / TICKS_PER_S * 1e3
        );
        results.push(stats);
    }
    std::thread::sleep(Duration::from_secs(2));
    let rss_idle_after_load = rss_mb();
    let rss_peak = status_kb("VmHWM:") as f64 / 1024.0;
    server_rt.block_on(running.shutdown()).expect("shutdown");

    // 4. The engine alone, in its own process.
    let alone = engine_alone(&dir, &client_rt, &p, layout, &creds.api_key);
    let alone_rss = alone["idle_2s_after_load"].as_f64().unwrap_or(f64::MAX);

    // 5. Report.
    let get = |n: &str| results.iter().find(|s| s.name == n);
    let ratio = |a: &str, b: &str| match (get(a), get(b)) {
        (Some(a), Some(b)) if b.rps > 0.0 => Some(a.rps / b.rps),
        _ => None,
    };
    let lookup_bare = ratio("lookup", "bare");
    let lookup_select = ratio("lookup", "select");
    let reads_bare = ratio("reads", "bare");
    let answer_bare = ratio("answer", "bare");
    let verdict = |ok: Option<bool>| match ok {
        Some(true) => "PASS",
        Some(false) => "MISS",
        None => "n/a",
    };
    let t_lookup = get("lookup")
        .map(|l| lookup_bare.is_some_and(|r| r >= 0.30) && l.p99_ms < 5.0 && l.errors == 0);
    let t_lookup_cpu = get("lookup").map(|l| l.engine_cpu_us <= 35.0);
    let t_create = get("create").map(|c| c.rps >= 5000.0 && c.p99_ms < 30.0 && c.errors == 0);
    let t_start = Some(cold.first_request_ms < 300.0);
    let t_start_warm = Some(warm.first_request_ms < 300.0);
    let t_rss = Some(rss_idle_before_load < 100.0);
    let t_rss_after = Some(rss_idle_after_load < 100.0);
    let t_rss_alone = Some(alone_rss < 100.0);

    let mut out = String::new();
    use std::fmt::Write;
    let _ = writeln!(out, "\n== mandato API benchmark ({mode}) ==");
    let _ = writeln!(
        out,
        "data: {} customers, {} mandates, {} installments; db {:.0} MB; {} connections, {} client + {} server threads, {:?} measured after {:?} warm-up",
        p.customers,
        p.mandates,
        fill["rows"]["installments"],
        fill["db_bytes"].as_f64().unwrap_or(0.0) / 1e6,
        p.connections,
        p.client_threads,
        p.server_threads,
        p.duration,
        p.warmup
    );
    if fill["reused"] == json!(true) {
        let _ = writeln!(
            out,
            "fill: reused the database in {} (fill time of its creation below)",
            dir.display()
        );
    }
    let _ = writeln!(
        out,
        "fill: {:.1} s bulk SQL (customers {:.1} s, mandates+installments {:.1} s, checkpoint {:.1} s); setup through the library {:.1} s; child process {:.1} s",
        fill["fill_ms"].as_f64().unwrap_or(0.0) / 1000.0,
        fill["customers_ms"].as_f64().unwrap_or(0.0) / 1000.0,
        fill["mandates_and_installments_ms"].as_f64().unwrap_or(0.0) / 1000.0,
        fill["checkpoint_ms"].as_f64().unwrap_or(0.0) / 1000.0,
        fill["setup_ms"].as_f64().unwrap_or(0.0) / 1000.0,
        fill_wall_ms / 1000.0
    );
    let _ = writeln!(
        out,
        "\n{:<34} {:>9} {:>8} {:>8} {:>8} {:>8} {:>7} {:>11} {:>9} {:>8}",
        "load (HTTP/1.1 keep-alive)",
        "req/s",
        "p50 ms",
        "p90 ms",
        "p99 ms",
        "max ms",
        "errors",
        "engine us/r",
        "own cores",
        "others*"
    );
    for s in &results {
        let label = match s.name {
            "bare" => "bare axum JSON handler",
            "answer" => "bare axum, a lookup's HTTP exchange",
            "select" => "axum + 1 SQLite PK SELECT",
            "reads" => "axum + the lookup's 3 SELECTs",
            "lookup" => "GET /mandate/internalId/{id}",
            "create" => "POST /mandate (SUBSCRIPTION x12)",
            other => other,
        };
        let _ = writeln!(
            out,
            "{:<34} {:>9.0} {:>8.2} {:>8.2} {:>8.2} {:>8.1} {:>7} {:>11.0} {:>9.2} {:>8.2}{}",
            label,
            s.rps,
            s.p50_ms,
            s.p90_ms,
            s.p99_ms,
            s.max_ms,
            s.errors,
            s.engine_cpu_us,
            s.own_cores,
            s.other_cores,
            // A row with errors measured something else than the scenario: not a figure.
            if s.errors > 0 {
                "  INVALID (errors)"
            } else {
                ""
            }
        );
    }
    for s in results
        .iter()
        .filter(|s| matches!(s.name, "lookup" | "create"))
    {
        if let (Some(audit), Some(checkpoint)) = (s.audit_writer_cpu_us, s.checkpoint_cpu_us) {
            let _ = writeln!(
                out,
                "{:<34} engine us/r {:.0} = request threads {:.0} + audit writer {:.0} + checkpoint {:.0}",
                format!("  {} split", s.name),
                s.engine_cpu_us,
                s.engine_cpu_us - audit - checkpoint,
                audit,
                checkpoint
            );
        }
        if let Some(mb) = s.wal_peak_mb {
            let _ = writeln!(
                out,
                "{:<34} WAL file at most {mb:.0} MB during the window",
                ""
            );
        }
    }
    if get("answer").is_some() {
        let _ = writeln!(
            out,
            "{:<34} the lookup's requests; its answer, {answer_bytes} bytes, sent as it is",
            "  answer"
        );
    }
    // What no lookup can do without: its reads, its HTTP exchange, and the records of §2.
    if let (Some(reads), Some(answer), Some(bare), Some(lookup)) =
        (get("reads"), get("answer"), get("bare"), get("lookup"))
        && let (Some(audit), Some(checkpoint)) =
            (lookup.audit_writer_cpu_us, lookup.checkpoint_cpu_us)
    {
        let exchange = answer.engine_cpu_us - bare.engine_cpu_us;
        let _ = writeln!(
            out,
            "{:<34} engine us/r {:.0} = reads {:.0} + the larger HTTP exchange {:.0} + audit writer {:.0} + checkpoint {:.0}",
            "  lookup floor",
            reads.engine_cpu_us + exchange + audit + checkpoint,
            reads.engine_cpu_us,
            exchange,
            audit,
            checkpoint
        );
    }
    let _ = writeln!(
        out,
        "engine us/r: CPU of the serving side (this process minus the load generator's threads) per request\n* cores used by other processes during the window (approx.); above ~0.2 the machine was shared and the row is not comparable"
    );
    if let Some(ms) = fsync_ms {
        let _ = writeln!(
            out,
            "disk: 4 KiB write + fdatasync median {:.2} ms just before the create run -> at most {:.0} commits/s for a writer that syncs once per request",
            ms,
            1000.0 / ms
        );
    }
    if let Some(r) = lookup_bare {
        let _ = writeln!(out, "ratio lookup / bare:   {:.3}", r);
    }
    if let Some(r) = reads_bare {
        let _ = writeln!(
            out,
            "ratio reads / bare:    {:.3} (the lookup's reads alone)",
            r
        );
    }
    if let Some(r) = lookup_select {
        let _ = writeln!(out, "ratio lookup / select: {:.3}", r);
    }
    let _ = writeln!(out, "\n{:<58} {:>10}", "start", "ms");
    let _ = writeln!(
        out,
        "{:<58} {:>10.1}",
        "cold: app::start returned", cold.app_start_ms
    );
    let _ = writeln!(
        out,
        "{:<58} {:>10.1}",
        "cold: start -> first authenticated lookup answered 200", cold.first_request_ms
    );
    let _ = writeln!(
        out,
        "{:<58} {:>10.1}",
        "warm: app::start returned", warm.app_start_ms
    );
    let _ = writeln!(
        out,
        "{:<58} {:>10.1}",
        "warm: start -> first authenticated lookup answered 200", warm.first_request_ms
    );
    let _ = writeln!(
        out,
        "{:<58} {:>10.1}",
        "login (public key + JWE helper + POST /login)", login_ms
    );
    let _ = writeln!(
        out,
        "\n{:<58} {:>10}",
        "resident memory of this process (engine + load generator)", "MB"
    );
    let _ = writeln!(
        out,
        "{:<58} {:>10.1}",
        "baseline: runtimes up, before the engine starts", rss_baseline
    );
    let _ = writeln!(
        out,
        "{:<58} {:>10.1}",
        "right after start (first lookup served)", rss_after_start
    );
    let _ = writeln!(
        out,
        "{:<58} {:>10.1}",
        "after start, idle 2 s, before load", rss_idle_before_load
    );
    let _ = writeln!(
        out,
        "{:<58} {:>10.1}",
        "after the load, idle 2 s", rss_idle_after_load
    );
    let _ = writeln!(out, "{:<58} {:>10.1}", "peak (VmHWM)", rss_peak);
    let _ = writeln!(out, "\ntargets (reported, not asserted):");
    let _ = writeln!(
        out,
        "  [{}] lookups >= 30% of bare ({}) with p99 < 5 ms ({}) and no errors",
        verdict(t_lookup),
        lookup_bare.map_or("n/a".into(), |r| format!("{:.1}%", r * 100.0)),
        get("lookup").map_or("n/a".into(), |l| format!("{:.2} ms", l.p99_ms))
    );
    let _ = writeln!(
        out,
        "  [{}] engine CPU <= 35 us per lookup ({})",
        verdict(t_lookup_cpu),
        get("lookup").map_or("n/a".into(), |l| format!("{:.0} us", l.engine_cpu_us))
    );
    let _ = writeln!(
        out,
        "  [{}] >= 5,000 durable mandate creations/s with p99 < 30 ms ({})",
        verdict(t_create),
        get("create").map_or("n/a".into(), |c| format!(
            "{:.0}/s, p99 {:.1} ms",
            c.rps, c.p99_ms
        ))
    );
    let _ = writeln!(
        out,
        "  [{}] open + first request < 300 ms, cold ({:.0} ms)",
        verdict(t_start),
        cold.first_request_ms
    );
    let _ = writeln!(
        out,
        "  [{}] open + first request < 300 ms, warm ({:.0} ms)",
        verdict(t_start_warm),
        warm.first_request_ms
    );
    let _ = writeln!(
        out,
        "  [{}] RSS idle < 100 MB, before load ({:.1} MB, includes the load generator)",
        verdict(t_rss),
        rss_idle_before_load
    );
    let _ = writeln!(
        out,
        "  [{}] RSS idle < 100 MB, after load ({:.1} MB, includes the load generator)",
        verdict(t_rss_after),
        rss_idle_after_load
    );
    let _ = writeln!(
        out,
        "  [{}] RSS idle < 100 MB after load, the engine alone (mandato serve: {:.1} MB; {:.1} after start, peak {:.1})",
        verdict(t_rss_alone),
        alone_rss,
        alone["after_start"].as_f64().unwrap_or(0.0),
        alone["peak"].as_f64().unwrap_or(0.0)
    );
    println!("{out}");

    let report = json!({
        "mode": mode,
        "at": Utc::now().to_rfc3339_opts(SecondsFormat::Secs, true),
        "machine": {"cpus": std::thread::available_parallelism().map_or(0, |n| n.get())},
        "params": {"customers": p.customers, "mandates": p.mandates,
                   "installments_per_mandate": p.installments_per_mandate,
                   "warmup_s": p.warmup.as_secs_f64(), "duration_s": p.duration.as_secs_f64(),
                   "connections": p.connections, "client_threads": p.client_threads,
                   "server_threads": p.server_threads},
        "fill": {"reused": fill["reused"], "bulk_sql_ms": fill["fill_ms"], "customers_ms": fill["customers_ms"],
                 "mandates_and_installments_ms": fill["mandates_and_installments_ms"],
                 "checkpoint_ms": fill["checkpoint_ms"], "setup_ms": fill["setup_ms"],
                 "child_process_ms": fill_wall_ms, "rows": fill["rows"], "db_bytes": fill["db_bytes"]},
        "start": {"cold_app_start_ms": round3(cold.app_start_ms), "cold_first_request_ms": round3(cold.first_request_ms),
                  "cold_attempts": cold.attempts,
                  "warm_app_start_ms": round3(warm.app_start_ms), "warm_first_request_ms": round3(warm.first_request_ms),
                  "warm_attempts": warm.attempts, "login_ms": round3(login_ms)},
        "load": results.iter().map(|s| (s.name.to_string(), s.to_json())).collect::<serde_json::Map<_, _>>(),
        "ratios": {"lookup_over_bare": lookup_bare, "lookup_over_select": lookup_select, "reads_over_bare": reads_bare, "answer_over_bare": answer_bare},
        "answer_bytes": answer_bytes,
        "disk": {"fdatasync_4k_median_ms": fsync_ms.map(round3),
                 "serial_commit_ceiling_per_s": fsync_ms.map(|ms| round1(1000.0 / ms))},
        "quiet_wait_other_cores": quiet_before.iter().map(|(n, c)| (n.clone(), json!(round3(*c)))).collect::<serde_json::Map<_, _>>(),
        "rss_mb": {"baseline_before_start": round1(rss_baseline), "after_start": round1(rss_after_start),
                   "idle_2s_before_load": round1(rss_idle_before_load), "idle_2s_after_load": round1(rss_idle_after_load),
                   "peak": round1(rss_peak), "note": "one process: engine + load generator + reference servers"},
        "engine_alone": alone,
        "targets": {"lookup_30pct_of_bare_p99_under_5ms": t_lookup, "lookup_engine_cpu_at_most_35us": t_lookup_cpu,
                    "create_5000_per_s_p99_under_30ms": t_create,
                    "cold_start_first_request_under_300ms": t_start, "warm_start_first_request_under_300ms": t_start_warm,
                    "rss_idle_under_100mb_before_load": t_rss, "rss_idle_under_100mb_after_load": t_rss_after,
                    "rss_idle_under_100mb_after_load_engine_alone": t_rss_alone},
    });
    let path = common::results_path("bench-results.json");
    let text = serde_json::to_string_pretty(&report).unwrap();
    let _ = std::fs::create_dir_all(path.parent().unwrap());
    std::fs::write(&path, &text).expect("write results");
    let _ = std::fs::write(
        path.with_file_name(format!("bench-results-{mode}.json")),
        &text,
    );
    eprintln!("results written to {}", path.display());
}
