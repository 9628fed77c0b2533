//! Crash torture: the real `mandato serve` is killed with SIGKILL at seeded random moments of
//! charging runs (sandbox clock advances over many due installments), of merchant writes in
//! flight and of webhook delivery bursts (to a receiver that is slow or fails now and then, so
//! that retries are pending), and started again on the same data directory each time. After a
//! final clean run that drains and a clean stop, SQL on the database file (read-only) and the
//! real HTTPS receiver prove: nobody was charged twice and the installments agree with the
//! simulated acquirer's own ledger, no answered write was lost, and every event arrived.
//!
//! `MANDATO_TORTURE_KILLS` sets the number of kills (25 by default; 100 or more for the full
//! run); `MANDATO_TORTURE_SEED` replays a run (the seed is printed). The assertions are
//! invariants, which hold wherever the kills land; timings only steer where they land.

use std::collections::{BTreeMap, BTreeSet, HashSet};
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use chrono::NaiveDate;
use reqwest::Method;
use rusqlite::{Connection, OpenFlags};
use serde_json::{Value, json};
use tokio::task::JoinHandle;

use crate::process::{Api, install, kill, serve_logged, stop};
use crate::receiver::{Answer, Receiver};

const CODE: &str = "TORTURE-1";
const PASSWORD: &str = "torture-password";
/// Installments charged by the clock, per kill asked for.
const CHARGED_PER_KILL: usize = 50;
/// Installments per charged mandate.
const PER_MANDATE: usize = 100;

/// splitmix64: small and seedable; it decides what each round does and when the kill lands.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }

    /// Uniform in [0, 1).
    fn fraction(&mut self) -> f64 {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64
    }
}

fn env_number(name: &str) -> Option<u64> {
    std::env::var(name).ok().and_then(|v| v.trim().parse().ok())
}

/// What the server answered with a 2xx: each of these must be in the database afterwards.
#[derive(Default)]
struct Answered {
    customers: BTreeSet<String>,
    /// By external id.
    mandates: BTreeMap<String, Created>,
    paid: BTreeSet<(String, String)>,
    annulled: BTreeSet<(String, String)>,
    cancelled: BTreeSet<String>,
    activated: BTreeSet<String>,
    advanced_days: i64,
    writes: usize,
    /// The correlationIds of the answered writes.
    correlation_ids: Vec<String>,
    /// Answers that were refusals (4xx: a write after an unanswered one that committed), by
    /// path and name; and server errors (5xx).
    refused: BTreeMap<String, usize>,
    server_errors: Vec<String>,
}

/// A mandate whose creation was answered.
struct Created {
    /// The customer's userId.
    user: String,
    internal: String,
    installments: Vec<String>,
}

/// What the test has sent, answered or not, so that no two writes touch the same thing.
#[derive(Default)]
struct Sent {
    next_id: usize,
    /// Installments a PAYMENT or ANNULMENT was sent for (answered or not).
    touched: BTreeSet<(String, String)>,
    /// Every PAYMENT sent: the only installments that may be PAID without an acquirer charge.
    manual_payments: BTreeSet<(String, String)>,
    /// Mandates a cancellation or an activation was sent for.
    closed: BTreeSet<String>,
    cancel_sent: BTreeSet<String>,
    activation_sent: BTreeSet<String>,
    writes: usize,
}

#[derive(Clone, Debug)]
enum Write {
    Customer {
        user: String,
    },
    Mandate {
        user: String,
        id: String,
        installments: Vec<String>,
        due: NaiveDate,
    },
    Pay {
        mandate: String,
        ids: Vec<String>,
        date: NaiveDate,
    },
    Annul {
        mandate: String,
        ids: Vec<String>,
    },
    Cancel {
        mandate: String,
        user: String,
    },
    Add {
        mandate: String,
        user: String,
        ids: Vec<String>,
        due: NaiveDate,
    },
    Activate {
        mandate: String,
        internal: String,
    },
}

fn customer_body(user: &str, n: usize) -> Value {
    json!({"customer": {"userId": user,
        "identificationDocument": {"type": "RUT", "number": crate::helpers::rut(20_000_000 + n as u32)},
        "personalInformation": {"firstName": "Ana", "lastName": "Pérez"},
        "contacts": {"email": "ana@example.cl"}}})
}

fn installments(ids: &[String], due: NaiveDate) -> Vec<Value> {
    ids.iter()
        .map(|id| json!({"id": id, "amount": 1000, "currencyId": "CLP", "installmentDueDate": due.to_string()}))
        .collect()
}

impl Write {
    fn request(&self, receiver: &Receiver) -> (Method, String, Value) {
        match self {
            Write::Customer { user } => {
                let n: usize = user.trim_start_matches('c').parse().unwrap();
                (Method::POST, "/user".into(), customer_body(user, n))
            }
            Write::Mandate {
                user,
                id,
                installments: ids,
                due,
            } => (
                Method::POST,
                "/mandate".into(),
                json!({"customer": {"userId": user},
                    "mandate": {"id": id, "type": "DYNAMIC", "name": "Tortura", "charges": {"currencyId": "CLP"}},
                    "installments": installments(ids, *due),
                    "urls": {"paymentWebhook": receiver.url("/pay"), "activationWebhook": receiver.url("/act")}}),
            ),
            Write::Pay { mandate, ids, date } => (
                Method::PUT,
                "/installments/status/change".into(),
                json!({"product": {"id": mandate}, "installments": {"ids": ids}, "action": "PAYMENT",
                    "payment": {"date": date.to_string(), "amount": 1000 * ids.len(), "currencyId": "CLP"}}),
            ),
            Write::Annul { mandate, ids } => (
                Method::PUT,
                "/installments/status/change".into(),
                json!({"product": {"id": mandate}, "installments": {"ids": ids}, "action": "ANNULMENT"}),
            ),
            Write::Cancel { mandate, user } => (
                Method::DELETE,
                format!("/mandate/cancel/id/{mandate}/userId/{user}"),
                json!({"description": "tortura"}),
            ),
            Write::Add {
                mandate,
                user,
                ids,
                due,
            } => (
                Method::POST,
                "/installments".into(),
                json!({"customer": {"userId": user}, "product": {"id": mandate},
                    "installmentsNumber": ids.len(), "installments": installments(ids, *due)}),
            ),
            Write::Activate { internal, .. } => (
                Method::POST,
                format!("/sandbox/mandates/{internal}/activate"),
                json!({"paymentMethodId": 3, "card": {"number": "4111111111111111", "expiry": "12/35", "cvv": "123"}}),
            ),
        }
    }

    /// Records an answered write.
    fn record(&self, answer: &Value, answered: &mut Answered) {
        answered.writes += 1;
        match self {
            Write::Customer { user } => {
                answered.customers.insert(user.clone());
            }
            Write::Mandate {
                user,
                id,
                installments,
                ..
            } => {
                let internal = answer["payload"]["mandate"]["internalId"]
                    .as_str()
                    .expect("a created mandate has an internalId")
                    .to_string();
                answered.mandates.insert(
                    id.clone(),
                    Created {
                        user: user.clone(),
                        internal,
                        installments: installments.clone(),
                    },
                );
            }
            Write::Pay { mandate, ids, .. } => {
                for id in ids {
                    answered.paid.insert((mandate.clone(), id.clone()));
                }
            }
            Write::Annul { mandate, ids } => {
                for id in ids {
                    answered.annulled.insert((mandate.clone(), id.clone()));
                }
            }
            Write::Cancel { mandate, .. } => {
                answered.cancelled.insert(mandate.clone());
            }
            Write::Add { mandate, ids, .. } => {
                if let Some(m) = answered.mandates.get_mut(mandate) {
                    m.installments.extend(ids.iter().cloned());
                }
            }
            Write::Activate { mandate, .. } => {
                answered.activated.insert(mandate.clone());
            }
        }
    }
}

/// Sends a write; records it when a 2xx comes back. A kill leaves it unanswered.
fn send(
    api: &Api,
    receiver: &Receiver,
    write: Write,
    answered: &Arc<Mutex<Answered>>,
) -> JoinHandle<bool> {
    let (method, path, body) = write.request(receiver);
    let api = api.clone();
    let answered = Arc::clone(answered);
    tokio::spawn(async move {
        let Ok((status, reply, correlation)) = api.try_call_echo(method, &path, Some(&body)).await
        else {
            return false;
        };
        let mut answered = answered.lock().unwrap();
        if status.is_success() {
            write.record(&reply, &mut answered);
            answered.correlation_ids.push(correlation);
            true
        } else {
            if status.is_server_error() {
                answered
                    .server_errors
                    .push(format!("{path}: {status} {reply}"));
            } else {
                let name = reply["name"].as_str().unwrap_or_default();
                *answered
                    .refused
                    .entry(format!(
                        "{} {name}",
                        path.split('/').nth(1).unwrap_or_default()
                    ))
                    .or_default() += 1;
            }
            false
        }
    })
}

/// Plans `n` writes on what is known to exist, never two on the same installment.
fn plan(
    rng: &mut Rng,
    sent: &mut Sent,
    answered: &Answered,
    today: NaiveDate,
    n: usize,
) -> Vec<Write> {
    let wall_today = chrono::Utc::now()
        .with_timezone(&chrono_tz::America::Santiago)
        .date_naive();
    let mut writes = Vec::new();
    let open: Vec<(&String, &Created)> = answered
        .mandates
        .iter()
        .filter(|(id, _)| !sent.closed.contains(*id))
        .collect();
    for _ in 0..n {
        sent.next_id += 1;
        let k = sent.next_id;
        let due = today + chrono::Duration::days(20 + rng.below(40) as i64);
        let choice = rng.below(10);
        let mandate = (!open.is_empty()).then(|| open[rng.below(open.len() as u64) as usize]);
        let free = |sent: &Sent, (id, m): (&String, &Created)| -> Vec<String> {
            m.installments
                .iter()
                .filter(|i| !sent.touched.contains(&(id.clone(), (*i).clone())))
                .cloned()
                .collect()
        };
        let write = match (choice, mandate) {
            (5..=7, Some(m)) if !free(sent, m).is_empty() => {
                let free = free(sent, m);
                let take = 1 + rng.below(free.len().min(4) as u64) as usize;
                let ids: Vec<String> = free.into_iter().take(take).collect();
                for id in &ids {
                    sent.touched.insert((m.0.clone(), id.clone()));
                }
                if choice == 7 {
                    Write::Annul {
                        mandate: m.0.clone(),
                        ids,
                    }
                } else {
                    for id in &ids {
                        sent.manual_payments.insert((m.0.clone(), id.clone()));
                    }
                    Write::Pay {
                        mandate: m.0.clone(),
                        ids,
                        date: wall_today,
                    }
                }
            }
            (8, Some(m)) if !sent.closed.contains(m.0) => {
                sent.closed.insert(m.0.clone());
                sent.cancel_sent.insert(m.0.clone());
                Write::Cancel {
                    mandate: m.0.clone(),
                    user: m.1.user.clone(),
                }
            }
            (9, Some(m)) if k.is_multiple_of(2) && !sent.activation_sent.contains(m.0) => {
                sent.activation_sent.insert(m.0.clone());
                Write::Activate {
                    mandate: m.0.clone(),
                    internal: m.1.internal.clone(),
                }
            }
            (9, Some(m)) if !sent.closed.contains(m.0) => Write::Add {
                mandate: m.0.clone(),
                user: m.1.user.clone(),
                ids: (0..1 + rng.below(3)).map(|j| format!("a{k}-{j}")).collect(),
                due,
            },
            (2..=9, _) if !answered.customers.is_empty() => {
                let users: Vec<&String> = answered.customers.iter().collect();
                Write::Mandate {
                    user: users[rng.below(users.len() as u64) as usize].clone(),
                    id: format!("W-{k}"),
                    installments: (0..3 + rng.below(6)).map(|j| format!("i{j}")).collect(),
                    due,
                }
            }
            _ => Write::Customer {
                user: format!("c{k}"),
            },
        };
        sent.writes += 1;
        writes.push(write);
    }
    writes
}

fn read_only(data: &Path) -> Connection {
    Connection::open_with_flags(
        data.join("mandato.db"),
        OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )
    .unwrap()
}

fn count(conn: &Connection, sql: &str) -> i64 {
    conn.query_row(sql, [], |r| r.get(0))
        .unwrap_or_else(|e| panic!("{sql}: {e}"))
}

fn received_ids(receiver: &Receiver) -> HashSet<String> {
    receiver
        .received()
        .iter()
        .map(|r| r.header("webhook-id").to_string())
        .collect()
}

async fn business_today(api: &Api) -> NaiveDate {
    let clock = api.call(Method::GET, "/sandbox/clock", None).await;
    clock["payload"]["today"].as_str().unwrap().parse().unwrap()
}

/// Where the kills landed.
#[derive(Default, Debug)]
struct Landed {
    during_charging_run: usize,
    with_attempts_in_process: usize,
    with_writes_unanswered: usize,
    during_delivery: usize,
    advances_cut: usize,
    at_start: usize,
}

#[tokio::test(flavor = "multi_thread")]
async fn sigkill_anywhere_charges_nobody_twice_loses_no_answered_write_and_no_event() {
    let started = Instant::now();
    let kills = env_number("MANDATO_TORTURE_KILLS").unwrap_or(25).max(1) as usize;
    let seed = env_number("MANDATO_TORTURE_SEED").unwrap_or_else(|| {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_nanos() as u64
    });
    println!("torture: seed {seed} (MANDATO_TORTURE_SEED={seed} replays it), {kills} kills");
    let mut rng = Rng(seed);

    let dir = tempfile::tempdir().unwrap();
    let data = dir.path();
    let log = data.join("serve.log");
    let installation = install(data, CODE, PASSWORD);
    let receiver = Receiver::start(&installation.cert_pem, &installation.key_pem).await;
    // Slow now and then, and failing now and then with a short Retry-After (so that retries
    // are pending at the kills and still fall due within the drain); plain 200s afterwards.
    receiver.script((0..kills * 120).map(|_| match rng.below(100) {
        0..=11 => Answer::RetryAfter(if rng.below(2) == 0 { 503 } else { 429 }, 1),
        12..=36 => Answer::Hang(Duration::from_millis(20 + rng.below(300))),
        _ => Answer::Status(200),
    }));
    let env = [("MANDATO_LOG", "info")];
    let (mut server, base) = serve_logged(data, &env, &log);
    let mut api = Api::new(base, installation.api_key.clone(), CODE);
    api.login(PASSWORD).await;
    let answered = Arc::new(Mutex::new(Answered::default()));
    let mut sent = Sent::default();
    let mut today = business_today(&api).await;

    // The installments the clock charges: due over the coming days, on cards that approve,
    // decline softly (retried on later dates) or hard, and on bank accounts (settled a date
    // later).
    let total_charged = kills * CHARGED_PER_KILL;
    let horizon = (kills as i64 / 3).max(4);
    for m in 0..total_charged.div_ceil(PER_MANDATE) {
        let user = format!("c{}", 900_000 + m);
        api.call(
            Method::POST,
            "/user",
            Some(customer_body(&user, 900_000 + m)),
        )
        .await;
        let items: Vec<Value> = (0..PER_MANDATE)
            .map(|i| json!({"id": format!("i{i}"), "amount": 1000 + i, "currencyId": "CLP",
                "installmentDueDate": (today + chrono::Duration::days(1 + (i as i64 * 7 + m as i64) % horizon)).to_string()}))
            .collect();
        let created = api
            .call(
                Method::POST,
                "/mandate",
                Some(json!({"customer": {"userId": user},
                    "mandate": {"id": format!("C-{m}"), "type": "DYNAMIC", "name": "Carga", "charges": {"currencyId": "CLP"}},
                    "installments": items,
                    "urls": {"paymentWebhook": receiver.url("/pay"), "activationWebhook": receiver.url("/act")}})),
            )
            .await;
        let internal = created["payload"]["mandate"]["internalId"]
            .as_str()
            .unwrap()
            .to_string();
        let instrument = match m % 6 {
            3 => {
                json!({"paymentMethodId": 3, "card": {"number": "4000000000000002", "expiry": "12/35", "cvv": "123"}})
            }
            4 => {
                json!({"paymentMethodId": 5, "bankAccount": {"bankCode": "012", "accountType": "CHECKING",
                "accountNumber": "123450000", "holderRut": "12.345.678-5"}})
            }
            5 => {
                json!({"paymentMethodId": 3, "card": {"number": "4000000000000069", "expiry": "12/35", "cvv": "123"}})
            }
            _ => {
                json!({"paymentMethodId": 3, "card": {"number": "4111111111111111", "expiry": "12/35", "cvv": "123"}})
            }
        };
        api.call(
            Method::POST,
            &format!("/sandbox/mandates/{internal}/activate"),
            Some(instrument),
        )
        .await;
        sent.closed.insert(format!("C-{m}"));
    }
    // A few customers for the writes to start from.
    for _ in 0..3 {
        let writes = plan(&mut rng, &mut sent, &answered.lock().unwrap(), today, 1);
        for w in writes {
            assert!(send(&api, &receiver, w, &answered).await.unwrap());
        }
    }
    println!(
        "torture: set up in {:.1?} ({total_charged} installments to charge over {horizon} days)",
        started.elapsed()
    );

    let mut landed = Landed::default();
    // How long the last completed advance and write batch took: kills land within that.
    let mut advance_took = Duration::from_millis(800);
    let mut writes_took = Duration::from_millis(300);
    for round in 0..kills {
        // One round in seven kills the process just started, while it settles what the last
        // kill left (reconciliation, missed dates, pending deliveries).
        let mode = if rng.below(7) == 0 { 3 } else { rng.below(3) };
        let mut tasks: Vec<JoinHandle<bool>> = Vec::new();
        let begun = Instant::now();
        let delay;
        let mut advance: Option<JoinHandle<Option<(Duration, i64)>>> = None;
        match mode {
            0 => {
                // A charging run: the clock crosses one to three dates, each charging its due
                // installments and the retries of earlier declines.
                let days = 1 + rng.below(3) as i64;
                sent.writes += 1;
                let api2 = api.clone();
                advance = Some(tokio::spawn(async move {
                    let t = Instant::now();
                    match api2
                        .try_call(
                            Method::POST,
                            "/sandbox/clock",
                            Some(&json!({"advanceDays": days})),
                        )
                        .await
                    {
                        Ok((status, _)) if status.is_success() => Some((t.elapsed(), days)),
                        Ok((status, body)) => panic!("clock advance: {status} {body}"),
                        Err(_) => None,
                    }
                }));
                for w in plan(&mut rng, &mut sent, &answered.lock().unwrap(), today, 3) {
                    tasks.push(send(&api, &receiver, w, &answered));
                }
                delay = advance_took.mul_f64(rng.fraction() * 1.2);
            }
            1 => {
                // Writes in flight.
                let n = 8 + rng.below(17) as usize;
                for w in plan(&mut rng, &mut sent, &answered.lock().unwrap(), today, n) {
                    tasks.push(send(&api, &receiver, w, &answered));
                }
                delay = writes_took.mul_f64(rng.fraction() * 1.2);
            }
            3 => {
                landed.at_start += 1;
                delay = Duration::from_millis(rng.below(150));
            }
            _ => {
                // A delivery burst: a mandate whose 25 installments are all paid, or which is
                // cancelled (25 annulments and the cancellation), answered; then the kill
                // while those events go out.
                sent.next_id += 1;
                let id = format!("B-{}", sent.next_id);
                let user = answered
                    .lock()
                    .unwrap()
                    .customers
                    .iter()
                    .next()
                    .unwrap()
                    .clone();
                let ids: Vec<String> = (0..25).map(|i| format!("i{i}")).collect();
                let create = Write::Mandate {
                    user: user.clone(),
                    id: id.clone(),
                    installments: ids.clone(),
                    due: today + chrono::Duration::days(30),
                };
                assert!(send(&api, &receiver, create, &answered).await.unwrap());
                sent.closed.insert(id.clone());
                let burst = if rng.below(2) == 0 {
                    for i in &ids {
                        sent.touched.insert((id.clone(), i.clone()));
                        sent.manual_payments.insert((id.clone(), i.clone()));
                    }
                    Write::Pay {
                        mandate: id,
                        ids,
                        date: chrono::Utc::now()
                            .with_timezone(&chrono_tz::America::Santiago)
                            .date_naive(),
                    }
                } else {
                    Write::Cancel { mandate: id, user }
                };
                sent.writes += 2;
                let before = receiver.received().len();
                assert!(send(&api, &receiver, burst, &answered).await.unwrap());
                let wait = Instant::now();
                while receiver.received().len() == before && wait.elapsed() < Duration::from_secs(5)
                {
                    tokio::time::sleep(Duration::from_millis(5)).await;
                }
                delay = Duration::from_millis(rng.below(400));
            }
        }
        tokio::time::sleep(delay).await;
        let in_delivery = receiver.received().len();
        kill(&mut server.0);
        let mut unanswered = 0;
        for task in tasks {
            if !task.await.unwrap() {
                unanswered += 1;
            }
        }
        let all_answered = unanswered == 0;
        if let Some(advance) = advance {
            match advance.await.unwrap() {
                Some((took, days)) => {
                    advance_took = took;
                    answered.lock().unwrap().advanced_days += days;
                    answered.lock().unwrap().writes += 1;
                }
                None => {
                    landed.advances_cut += 1;
                    // Cut again: aim a little later next time, so that some runs finish.
                    advance_took = advance_took.mul_f64(1.3);
                }
            }
        }
        if mode == 1 && all_answered {
            writes_took = begun.elapsed();
        }
        if !all_answered {
            landed.with_writes_unanswered += 1;
        }
        if mode == 2 && in_delivery > 0 {
            landed.during_delivery += 1;
        }
        {
            // Where the kill landed, seen in the database it left.
            let conn = Connection::open(data.join("mandato.db")).unwrap();
            if count(
                &conn,
                "SELECT count(*) FROM charge_runs WHERE state = 'RUNNING'",
            ) > 0
            {
                landed.during_charging_run += 1;
            }
            if count(
                &conn,
                "SELECT count(*) FROM charge_attempts WHERE state = 'IN_PROCESS'",
            ) > 0
            {
                landed.with_attempts_in_process += 1;
            }
        }
        // Start again on the same data; a restart that fails fails the test here.
        let (next, base) = serve_logged(data, &env, &log);
        server = next;
        api.base = base;
        today = business_today(&api).await;
        if round % 10 == 9 {
            println!("torture: {} kills in {:.1?}", round + 1, started.elapsed());
        }
    }

    // The final clean run: the clock moves once more (the engine still charges), everything
    // pending is delivered, then a clean stop.
    let moved = api
        .call(
            Method::POST,
            "/sandbox/clock",
            Some(json!({"advanceDays": 1})),
        )
        .await;
    assert_eq!(moved["payload"]["runs"].as_array().unwrap().len(), 1);
    answered.lock().unwrap().advanced_days += 1;
    let deadline = Instant::now() + Duration::from_secs(240);
    loop {
        let conn = read_only(data);
        let busy = count(
            &conn,
            "SELECT count(*) FROM charge_runs WHERE state = 'RUNNING'",
        ) + count(
            &conn,
            "SELECT count(*) FROM events WHERE url IS NOT NULL AND delivery_state = 'PENDING'",
        );
        drop(conn);
        let expected = crate::process::expected_events(data);
        let arrived = received_ids(&receiver);
        if busy == 0 && expected.is_subset(&arrived) {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "not drained: {busy} runs or events pending, {} events never arrived",
            expected.difference(&arrived).count()
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    stop(&mut server.0);

    // The proofs, on the file as the last process left it.
    let conn = read_only(data);
    let answered = answered.lock().unwrap();
    assert!(
        answered.server_errors.is_empty(),
        "server errors: {:?}",
        answered.server_errors
    );

    // 1. Nobody charged twice: the acquirer's ledger holds at most one approved charge per
    //    installment, at most one charge per installment and business date, and every charge
    //    belongs to an attempt committed before the acquirer was called.
    const APPROVED: &str =
        "(s.result = 'APPROVED' OR (s.result = 'PENDING' AND s.settles_as = 'APPROVED'))";
    assert_eq!(
        count(
            &conn,
            &format!(
                "SELECT count(*) FROM (SELECT a.installment_seq FROM sim_charges s
                 JOIN charge_attempts a ON a.idempotency_key = s.idempotency_key
                 WHERE {APPROVED} GROUP BY a.installment_seq HAVING count(*) > 1)"
            )
        ),
        0,
        "an installment approved twice by the acquirer"
    );
    assert_eq!(
        count(
            &conn,
            "SELECT count(*) FROM (SELECT a.installment_seq FROM sim_charges s
             JOIN charge_attempts a ON a.idempotency_key = s.idempotency_key
             GROUP BY a.installment_seq, a.business_date HAVING count(*) > 1)"
        ),
        0,
        "two charges for one installment and date"
    );
    assert_eq!(
        count(
            &conn,
            "SELECT count(*) FROM sim_charges s WHERE NOT EXISTS
             (SELECT 1 FROM charge_attempts a WHERE a.idempotency_key = s.idempotency_key)"
        ),
        0,
        "a charge the engine has no attempt for"
    );

    // 2. The engine's records agree with the ledger: nothing left in process, every attempt
    //    has its charge and the same outcome, every approved installment is PAID (or, for a
    //    bank debit, IN_VALIDATION until its settlement), and nothing is PAID without either
    //    an approved charge or a payment the merchant reported.
    assert_eq!(
        count(
            &conn,
            "SELECT count(*) FROM charge_attempts WHERE state = 'IN_PROCESS'"
        ),
        0,
        "attempts left in process"
    );
    assert_eq!(
        count(&conn, "SELECT count(*) FROM installments WHERE state = 9"),
        0,
        "installments left IN_PROCESS"
    );
    assert_eq!(
        count(
            &conn,
            "SELECT count(*) FROM charge_attempts a WHERE NOT EXISTS
             (SELECT 1 FROM sim_charges s WHERE s.idempotency_key = a.idempotency_key)"
        ),
        0,
        "an attempt the acquirer never saw"
    );
    let disagreeing: Vec<(String, String, String, Option<String>)> = {
        let mut stmt = conn
            .prepare(
                "SELECT a.idempotency_key, a.state, s.result, s.settles_as FROM charge_attempts a
                 JOIN sim_charges s ON s.idempotency_key = a.idempotency_key
                 WHERE NOT ((a.state = 'PAID' AND (s.result = 'APPROVED' OR s.settles_as = 'APPROVED'))
                         OR (a.state = 'REJECTED' AND (s.result = 'REJECTED' OR s.settles_as = 'REJECTED'))
                         OR (a.state = 'IN_VALIDATION' AND s.result = 'PENDING'))",
            )
            .unwrap();
        stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)))
            .unwrap()
            .map(Result::unwrap)
            .collect()
    };
    assert!(
        disagreeing.is_empty(),
        "attempts that disagree with the ledger: {disagreeing:?}"
    );
    let approved_not_paid = count(
        &conn,
        &format!(
            "SELECT count(*) FROM installments i WHERE EXISTS
             (SELECT 1 FROM charge_attempts a JOIN sim_charges s ON s.idempotency_key = a.idempotency_key
              WHERE a.installment_seq = i.seq AND {APPROVED}
                AND NOT (i.state = 2 OR (i.state = 6 AND a.state = 'IN_VALIDATION')))"
        ),
    );
    assert_eq!(
        approved_not_paid, 0,
        "approved charges whose installment is not PAID"
    );
    let rejected_latest = count(
        &conn,
        "SELECT count(*) FROM installments i WHERE i.state = -99 AND NOT EXISTS
         (SELECT 1 FROM charge_attempts a WHERE a.installment_seq = i.seq AND a.state = 'REJECTED'
          AND a.business_date = (SELECT max(business_date) FROM charge_attempts b WHERE b.installment_seq = i.seq))",
    );
    assert_eq!(
        rejected_latest, 0,
        "REJECTED installments whose latest attempt is not a rejection"
    );
    let paid_without_charge: Vec<(String, String)> = {
        let mut stmt = conn
            .prepare(&format!(
                "SELECT m.external_id, i.external_id FROM installments i JOIN mandates m ON m.seq = i.mandate_seq
                 WHERE i.state = 2 AND NOT EXISTS
                 (SELECT 1 FROM charge_attempts a JOIN sim_charges s ON s.idempotency_key = a.idempotency_key
                  WHERE a.installment_seq = i.seq AND {APPROVED})"
            ))
            .unwrap();
        stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
            .unwrap()
            .map(Result::unwrap)
            .collect()
    };
    for paid in &paid_without_charge {
        assert!(
            sent.manual_payments.contains(paid),
            "{paid:?} is PAID with neither a charge nor a reported payment"
        );
    }

    // 3. No answered write was lost.
    let exists = |sql: &str, params: &[&dyn rusqlite::ToSql]| -> bool {
        conn.query_row(sql, params, |_| Ok(())).is_ok()
    };
    for user in &answered.customers {
        assert!(
            exists(
                "SELECT 1 FROM customers WHERE user_id = ?1",
                rusqlite::params![user]
            ),
            "customer {user} answered 201 and is gone"
        );
    }
    let state_of = |mandate: &str, installment: &str| -> i64 {
        conn.query_row(
            "SELECT i.state FROM installments i JOIN mandates m ON m.seq = i.mandate_seq
             WHERE m.external_id = ?1 AND i.external_id = ?2",
            [mandate, installment],
            |r| r.get(0),
        )
        .unwrap_or_else(|e| panic!("installment {mandate}/{installment} answered and is gone: {e}"))
    };
    for (
        id,
        Created {
            internal,
            installments,
            ..
        },
    ) in &answered.mandates
    {
        assert!(
            exists(
                "SELECT 1 FROM mandates WHERE external_id = ?1 AND id = ?2",
                rusqlite::params![id, internal]
            ),
            "mandate {id} answered 201 and is gone"
        );
        for installment in installments {
            state_of(id, installment);
        }
    }
    for (mandate, installment) in &answered.paid {
        assert_eq!(
            state_of(mandate, installment),
            2,
            "{mandate}/{installment} PAID"
        );
    }
    for (mandate, installment) in &answered.annulled {
        assert_eq!(
            state_of(mandate, installment),
            4,
            "{mandate}/{installment} ANNULLED"
        );
    }
    let mandate_state = |id: &str| -> i64 {
        conn.query_row(
            "SELECT state FROM mandates WHERE external_id = ?1",
            [id],
            |r| r.get(0),
        )
        .unwrap()
    };
    for id in &answered.cancelled {
        assert_eq!(mandate_state(id), 3, "{id} CANCELLED");
    }
    for id in &answered.activated {
        // ACTIVE, FINISHED once all is paid, or CANCELLED by a later cancellation (which may
        // have committed even if the kill took its answer).
        let state = mandate_state(id);
        assert!(
            [2, 4].contains(&state) || (state == 3 && sent.cancel_sent.contains(id)),
            "{id} answered its activation and is in state {state}"
        );
    }
    let offset: i64 = conn
        .query_row(
            "SELECT value FROM settings WHERE name = 'sandbox_offset_days'",
            [],
            |r| r.get::<_, String>(0),
        )
        .unwrap()
        .parse()
        .unwrap();
    assert!(
        offset >= answered.advanced_days,
        "the clock moved {} days in answered advances, {offset} kept",
        answered.advanced_days
    );

    // 4. Every event arrived at least once (checked again on the stopped file).
    let expected: HashSet<String> = {
        let mut stmt = conn
            .prepare("SELECT id FROM events WHERE url IS NOT NULL")
            .unwrap();
        stmt.query_map([], |r| r.get(0))
            .unwrap()
            .map(Result::unwrap)
            .collect()
    };
    let arrived = received_ids(&receiver);
    let missing: Vec<&String> = expected.difference(&arrived).collect();
    assert!(missing.is_empty(), "events never received: {missing:?}");

    // Replay protection outlives a crash: every answered write's correlationId committed with
    // the write itself (the audit rows are batched after the answer and may be lost).
    let unaudited: Vec<&String> = answered
        .correlation_ids
        .iter()
        .filter(|id| {
            conn.query_row(
                "SELECT 1 FROM correlation_claims WHERE correlation_id = ?1",
                [id],
                |_| Ok(()),
            )
            .is_err()
        })
        .collect();
    assert!(
        unaudited.is_empty(),
        "answered writes whose correlationId a kill took: {unaudited:?}"
    );
    let unaudited = unaudited.len();
    let installments = count(&conn, "SELECT count(*) FROM installments");
    let charges = count(&conn, "SELECT count(*) FROM sim_charges");
    let approved = count(
        &conn,
        &format!("SELECT count(*) FROM sim_charges s WHERE {APPROVED}"),
    );
    let interrupted = count(
        &conn,
        "SELECT count(*) FROM charge_runs WHERE state = 'INTERRUPTED'",
    );
    println!(
        "torture: seed {seed}: {kills} kills in {:.1?}; {installments} installments, {charges} charges \
         ({approved} approved), {} events ({} requests received), {} answered writes of {} sent \
         (refused: {:?}; {unaudited} whose correlationId a kill took), {} days advanced, \
         {interrupted} runs interrupted; kills landed: {landed:?}",
        started.elapsed(),
        expected.len(),
        receiver.received().len(),
        answered.writes,
        sent.writes,
        answered.refused,
        answered.advanced_days,
    );
}
