//! Slow and numerous clients (CONTRACT 12, "HTTP"), over real TCP: headers must arrive in time,
//! a request is answered or cut within its limit (reading its body included), connections
//! beyond the cap wait in the backlog without keeping a normal request from being answered,
//! and idle sockets reopened as fast as they are cut (from one address or many) do not starve
//! real clients: idle connections make room for newcomers.
//! The limits are configured short here; the defaults are the contract's.

use std::time::{Duration, Instant};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use crate::helpers::*;

fn limits(header_read_secs: u64, request_secs: u64, max_connections: usize) -> Options {
    Options {
        http: mandato::config::HttpLimits {
            header_read_timeout: Duration::from_secs(header_read_secs),
            request_timeout: Duration::from_secs(request_secs),
            signature_request_timeout: Duration::from_secs(request_secs * 2),
            max_connections,
        },
        ..Options::default()
    }
}

/// Reads until the server closes the connection; a guard against a hang, not a measure.
async fn read_until_closed(tcp: &mut TcpStream) -> Vec<u8> {
    let mut answer = Vec::new();
    let read = tokio::time::timeout(Duration::from_secs(30), async {
        let mut buf = [0u8; 4096];
        loop {
            match tcp.read(&mut buf).await {
                Ok(0) | Err(_) => break,
                Ok(n) => answer.extend_from_slice(&buf[..n]),
            }
        }
    })
    .await;
    assert!(read.is_ok(), "the server never closed the connection");
    answer
}

#[test]
fn the_defaults_are_the_contracts() {
    let config = mandato::config::Config::new("unused".into());
    assert_eq!(config.http.header_read_timeout, Duration::from_secs(10));
    assert_eq!(config.http.request_timeout, Duration::from_secs(60));
    assert_eq!(
        config.http.signature_request_timeout,
        Duration::from_secs(120)
    );
    assert_eq!(config.http.max_connections, 1024);
}

#[tokio::test(flavor = "multi_thread")]
async fn half_a_request_line_is_cut_at_the_header_limit() {
    let app = spawn_app_with(limits(1, 60, 1024)).await;
    let mut tcp = TcpStream::connect(app.running.addr).await.unwrap();
    let started = Instant::now();
    tcp.write_all(b"GET /api/v1/.well-kn").await.unwrap();
    read_until_closed(&mut tcp).await;
    let held = started.elapsed();
    println!("a stalled request line held its connection {held:?} (limit 1 s)");
    assert!(held >= Duration::from_millis(900), "cut before the limit");
    // The slot is given back as the connection's task ends, just after the close.
    let mut waited = 0;
    while app.running.connections() > 0 && waited < 100 {
        tokio::time::sleep(Duration::from_millis(10)).await;
        waited += 1;
    }
    assert_eq!(app.running.connections(), 0, "its slot is free again");
}

#[tokio::test(flavor = "multi_thread")]
async fn an_idle_kept_alive_connection_is_closed_at_the_header_limit() {
    let app = spawn_app_with(limits(1, 60, 1024)).await;
    let mut tcp = TcpStream::connect(app.running.addr).await.unwrap();
    tcp.write_all(b"GET /api/v1/.well-known/jwks.json HTTP/1.1\r\nHost: localhost\r\n\r\n")
        .await
        .unwrap();
    let answer = read_until_closed(&mut tcp).await;
    assert!(
        String::from_utf8_lossy(&answer).starts_with("HTTP/1.1 200"),
        "the request itself is answered"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_body_trickled_byte_by_byte_is_cut_at_the_request_limit() {
    let app = spawn_app_with(limits(1, 2, 1024)).await;
    let mut tcp = TcpStream::connect(app.running.addr).await.unwrap();
    let mut head = String::from("POST /api/v1/login HTTP/1.1\r\nHost: localhost\r\n");
    for (name, value) in common_headers(&app) {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    head.push_str("Content-Type: application/json\r\nContent-Length: 400\r\n\r\n");
    let started = Instant::now();
    tcp.write_all(head.as_bytes()).await.unwrap();
    let (mut reader, mut writer) = tcp.into_split();
    // One byte every 200 ms: the headers were on time, the body never will be.
    let trickle = tokio::spawn(async move {
        for _ in 0..400 {
            tokio::time::sleep(Duration::from_millis(200)).await;
            if writer.write_all(b" ").await.is_err() {
                break;
            }
        }
    });
    let mut answer = Vec::new();
    let read = tokio::time::timeout(Duration::from_secs(30), reader.read_to_end(&mut answer)).await;
    assert!(read.is_ok(), "the trickling request was never cut");
    let cut_after = started.elapsed();
    trickle.abort();
    let text = String::from_utf8_lossy(&answer);
    println!("a trickled body was cut after {cut_after:?} (limit 2 s)");
    assert!(text.starts_with("HTTP/1.1 408"), "answer: {text}");
    let body: serde_json::Value =
        serde_json::from_str(text.split_once("\r\n\r\n").map_or("", |(_, b)| b)).unwrap();
    assert_eq!(body["name"], "REQUEST_TIMEOUT");
    assert_eq!(body["statusCode"], 408);
    assert!(cut_after < Duration::from_secs(20));
    // The cut request keeps its audit row (CONTRACT 2), with the status it was answered.
    assert_eq!(login_audit_statuses(&app).await, vec![408]);
}

/// The statuses of the audit rows of `POST /api/v1/login`, in order, once the audit writer
/// has written what it holds; waits up to 10 s for the first one (a request its client
/// dropped queues its row when the server notices).
async fn login_audit_statuses(app: &TestApp) -> Vec<i64> {
    let audit = app.running.state.audit.clone();
    let store = app.running.state.store().clone();
    tokio::task::spawn_blocking(move || {
        for _ in 0..200 {
            audit.flush();
            let statuses: Vec<i64> = store
                .read(|db| {
                    Ok(db.query_map(
                        "SELECT status FROM audit_log WHERE path = '/api/v1/login' ORDER BY seq",
                        &[],
                        |r| r.get(0),
                    )?)
                })
                .unwrap();
            if !statuses.is_empty() {
                return statuses;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        Vec::new()
    })
    .await
    .unwrap()
}

#[tokio::test(flavor = "multi_thread")]
async fn a_request_whose_client_leaves_before_the_answer_keeps_its_row_as_499() {
    let app = spawn_app_with(limits(1, 30, 1024)).await;
    // A stored hash of a hundred argon2 passes (the default is two): checking a login against
    // it keeps the server busy for about a second, whatever the password.
    let slow = format!(
        "$argon2id$v=19$m=19456,t=100,p=1$c2FsdHNhbHRzYWx0c2FsdA${}",
        "A".repeat(43)
    );
    let code = app.commerce.clone();
    app.running
        .state
        .store()
        .write(|db| {
            Ok(db.execute(
                "UPDATE commerces SET password_hash = ?1 WHERE code = ?2",
                &[slow.as_str().into(), code.as_str().into()],
            )?)
        })
        .unwrap();
    let body =
        serde_json::json!({"username": app.commerce, "password": app.encrypt(PASSWORD).await})
            .to_string();
    let mut request = String::from("POST /api/v1/login HTTP/1.1\r\nHost: localhost\r\n");
    for (name, value) in common_headers(&app) {
        request.push_str(&format!("{name}: {value}\r\n"));
    }
    request.push_str(&format!(
        "Content-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    ));
    let mut tcp = TcpStream::connect(app.running.addr).await.unwrap();
    tcp.write_all(request.as_bytes()).await.unwrap();
    // Admitted, its password being checked: the client goes away before the answer.
    tokio::time::sleep(Duration::from_millis(300)).await;
    drop(tcp);
    // CONTRACT 2 keeps a row for every admitted request; no answer was sent, and the row says so.
    assert_eq!(login_audit_statuses(&app).await, vec![499]);
}

fn raise_open_file_limit(wanted: u64) {
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit and setrlimit only read and write the struct passed.
    unsafe {
        assert_eq!(libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit), 0);
        if limit.rlim_cur < wanted {
            limit.rlim_cur = wanted.min(limit.rlim_max);
            assert_eq!(libc::setrlimit(libc::RLIMIT_NOFILE, &limit), 0);
        }
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn idle_connections_beyond_the_cap_do_not_starve_a_request() {
    const CAP: usize = 100;
    const IDLE: usize = 1_100;
    // Each idle connection costs this process two descriptors: the client's and, once
    // accepted, the server's.
    raise_open_file_limit(8_192);
    let app = spawn_app_with(limits(1, 60, CAP)).await;
    let addr = app.running.addr;
    let idle: Vec<_> = (0..IDLE)
        .map(|_| {
            tokio::spawn(async move {
                // Connected and silent, as a slowloris client; kept open until the test ends.
                let tcp = tokio::time::timeout(Duration::from_secs(60), TcpStream::connect(addr))
                    .await
                    .ok()
                    .and_then(Result::ok);
                tokio::time::sleep(Duration::from_secs(90)).await;
                drop(tcp);
            })
        })
        .collect();
    tokio::time::sleep(Duration::from_millis(500)).await;
    let held = app.running.connections();
    let started = Instant::now();
    // The number of connections served is sampled while the request waits its turn.
    let mut peak = held;
    let request = app.client.get(app.url("/.well-known/jwks.json")).send();
    tokio::pin!(request);
    let reply = loop {
        tokio::select! {
            reply = &mut request => break reply,
            _ = tokio::time::sleep(Duration::from_millis(5)) => {
                peak = peak.max(app.running.connections());
            }
        }
    };
    let waited = started.elapsed();
    let reply = reply.expect("the request is answered");
    println!(
        "with {IDLE} idle connections and a cap of {CAP}: answered after {waited:?}, \
         at most {peak} connections served at once"
    );
    assert_eq!(reply.status(), 200);
    assert!(peak <= CAP, "{peak} connections served at once, cap {CAP}");
    assert!(
        held >= CAP / 2,
        "the idle connections did fill the slots ({held})"
    );
    for task in idle {
        task.abort();
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_client_that_stops_reading_its_answer_gives_its_slot_back() {
    // Headers may take long here, so that only a stalled answer can end the connection.
    let app = spawn_app_with(limits(60, 2, 1024)).await;
    // A small receive window, so the answers (the OpenAPI document, hundreds of KiB each)
    // cannot all sit in buffers: the server's writes wait for this client, which never reads.
    let socket = tokio::net::TcpSocket::new_v4().unwrap();
    socket.set_recv_buffer_size(4096).unwrap();
    let mut tcp = socket.connect(app.running.addr).await.unwrap();
    // Pipelined requests: together their answers are far more than any socket buffer.
    let requests = "GET /openapi.json HTTP/1.1\r\nHost: localhost\r\n\r\n".repeat(100);
    tcp.write_all(requests.as_bytes()).await.unwrap();
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(app.running.connections(), 1, "the answer is being written");
    let started = Instant::now();
    while app.running.connections() > 0 && started.elapsed() < Duration::from_secs(20) {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    println!(
        "a client reading nothing held its slot {:?} more (limit 2 s)",
        started.elapsed()
    );
    assert_eq!(app.running.connections(), 0, "the stalled answer was cut");
    drop(tcp);
}

/// A body over the limit is answered 413 before it is all read. The client, still sending, must
/// get that answer: a server closing at once would reset the connection under the unread bytes,
/// and the client would see "broken pipe" or "connection reset" instead (seen on a loaded
/// machine). Repeated, since the reset is a race the server used to lose now and then.
#[tokio::test(flavor = "multi_thread")]
async fn an_oversized_body_gets_its_413_not_a_reset() {
    let mut app = spawn_app().await;
    app.login().await;
    let body = format!(
        "{{\"customer\":{{\"userId\":\"{}\"}}}}",
        "x".repeat(4 * 1024 * 1024)
    );
    for _ in 0..8 {
        app.request_raw(reqwest::Method::POST, "/user", &body)
            .await
            .expect(413, "PAYLOAD_TOO_LARGE");
    }
}

/// Attackers that hold connections open without sending anything and reconnect the moment one
/// is cut, from `addresses` loopback addresses (127.0.0.2 and on; the first is this test's own
/// client's, 127.0.0.1). Returns the seconds each of `requests` real requests took, each on a
/// new connection from 127.0.0.1.
async fn requests_under_idle_attack(
    cap: usize,
    attackers: usize,
    addresses: u8,
    requests: usize,
) -> Vec<f64> {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, Ordering};
    raise_open_file_limit(16_384);
    // The production header limit: an idle socket is not cut by time within this test.
    let app = spawn_app_with(limits(10, 60, cap)).await;
    let addr = app.running.addr;
    let stop = Arc::new(AtomicBool::new(false));
    let tasks: Vec<_> = (0..attackers)
        .map(|n| {
            let stop = Arc::clone(&stop);
            let own = std::net::Ipv4Addr::new(
                127,
                0,
                0,
                if addresses == 1 {
                    1
                } else {
                    2 + (n % usize::from(addresses)) as u8
                },
            );
            tokio::spawn(async move {
                while !stop.load(Ordering::Relaxed) {
                    let socket = tokio::net::TcpSocket::new_v4().unwrap();
                    socket.bind((own, 0).into()).unwrap();
                    let Ok(mut tcp) = socket.connect(addr).await else {
                        tokio::time::sleep(Duration::from_millis(10)).await;
                        continue;
                    };
                    // Silent until the server closes it; then at once again.
                    let mut buf = [0u8; 64];
                    let _ = tokio::time::timeout(Duration::from_secs(30), tcp.read(&mut buf)).await;
                }
            })
        })
        .collect();
    let deadline = Instant::now() + Duration::from_secs(30);
    while app.running.connections() < cap * 3 / 4 {
        assert!(
            Instant::now() < deadline,
            "the attackers did not take the listener"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let client = reqwest::Client::builder()
        .pool_max_idle_per_host(0)
        .local_address(std::net::IpAddr::from([127, 0, 0, 1]))
        .build()
        .unwrap();
    let mut took = Vec::new();
    for _ in 0..requests {
        let started = Instant::now();
        // A guard against starvation (the header limit, 10 s, is what the attackers' sockets
        // cost before), not a measure: the figures are printed.
        let reply = tokio::time::timeout(
            Duration::from_secs(5),
            client.get(app.url("/.well-known/jwks.json")).send(),
        )
        .await
        .expect("answered while the attack goes on")
        .expect("answered, not cut");
        assert_eq!(reply.status(), 200);
        took.push(started.elapsed().as_secs_f64());
    }
    stop.store(true, Ordering::Relaxed);
    for task in tasks {
        task.abort();
    }
    took
}

fn report(what: &str, mut took: Vec<f64>) {
    took.sort_by(f64::total_cmp);
    let at = |q: f64| took[((took.len() - 1) as f64 * q).round() as usize];
    println!(
        "{what}: {} requests, median {:.3} s, p99 {:.3} s, max {:.3} s",
        took.len(),
        at(0.5),
        at(0.99),
        at(1.0)
    );
}

/// 150 attackers on a listener of 100 connections, all from the real client's own address: the
/// real client's connections are answered (an idle attacker's connection makes room) instead of
/// waiting behind silent sockets that are reopened as soon as they are cut.
#[tokio::test(flavor = "multi_thread")]
async fn reconnecting_idle_attackers_from_one_address_do_not_starve_requests() {
    let took = requests_under_idle_attack(100, 150, 1, 20).await;
    report("150 idle attackers, one address, cap 100", took);
}

/// The same from ten other addresses: no address can hold the listener against another.
#[tokio::test(flavor = "multi_thread")]
async fn reconnecting_idle_attackers_from_ten_addresses_do_not_starve_requests() {
    let took = requests_under_idle_attack(100, 150, 10, 20).await;
    report("150 idle attackers over ten addresses, cap 100", took);
}

/// The figures at the production cap (1,024) with 1,500 attackers, for the record (run with
/// `cargo nextest run --release --test api idle_attack_at_production_scale --run-ignored
/// only --no-capture`).
#[tokio::test(flavor = "multi_thread")]
#[ignore = "a measurement: 1,500 sockets, about a minute"]
async fn idle_attack_at_production_scale() {
    for addresses in [1, 10] {
        let took = requests_under_idle_attack(1024, 1_500, addresses, 200).await;
        report(
            &format!("1,500 idle attackers over {addresses} address(es), cap 1,024"),
            took,
        );
    }
}
