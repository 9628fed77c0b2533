//! Hostile PDFs at `POST /signature` (CONTRACT 12, "Documents"): small uploads that would
//! inflate past 256 MiB, hold more than 1,000,000 values or nest past the parser's depth are
//! refused with 400 `DOCUMENT_TOO_COMPLEX` at their document's `contentBase64`; `mandato serve`
//! stays under 300 MB resident through them (measured on the server's own process), under
//! 400 MB through forty 13 MiB uploads and a thousand strangers' bodies at once, and another
//! commerce's writes are answered while bombs are measured. The bombs are made here.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use base64::Engine;
use flate2::{Compress, Compression, FlushCompress};
use lopdf::{Document, Object, Stream, dictionary};
use serde_json::{Value, json};

use crate::cli::{headers, serve};
use crate::helpers::*;

/// The resident memory the contract allows through a bomb.
const RSS_LIMIT: u64 = 300 * 1024 * 1024;

fn b64(bytes: &[u8]) -> String {
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

/// A harmless one-page PDF.
fn plain_pdf() -> Vec<u8> {
    let mut doc = Document::with_version("1.5");
    let pages_id = doc.new_object_id();
    let content = doc.add_object(Stream::new(
        lopdf::Dictionary::new(),
        b"BT /F1 12 Tf 20 20 Td (hola) Tj ET".to_vec(),
    ));
    let page = doc.add_object(dictionary! {
        "Type" => "Page", "Parent" => pages_id, "Contents" => content,
        "MediaBox" => vec![0.into(), 0.into(), 595.into(), 842.into()],
    });
    doc.objects.insert(
        pages_id,
        Object::Dictionary(dictionary! {
            "Type" => "Pages", "Kids" => vec![page.into()], "Count" => 1,
        }),
    );
    let catalog = doc.add_object(dictionary! { "Type" => "Catalog", "Pages" => pages_id });
    doc.trailer.set("Root", catalog);
    let mut out = Vec::new();
    doc.save_to(&mut out).unwrap();
    out
}

/// A zlib stream of `chunks` MiB of spaces, made without holding them: each MiB is deflated
/// by a fresh compressor and ends in a full flush, so the pieces concatenate.
fn inflating_spaces(chunks: u64) -> Vec<u8> {
    const MIB: usize = 1024 * 1024;
    let piece = |input: &[u8], flush| {
        let mut c = Compress::new(Compression::best(), false);
        let mut out = Vec::with_capacity(64 * 1024);
        c.compress_vec(input, &mut out, flush).unwrap();
        out
    };
    let block = piece(&vec![b' '; MIB], FlushCompress::Full);
    let mut z = vec![0x78, 0xda];
    for _ in 0..chunks {
        z.extend_from_slice(&block);
    }
    z.extend(piece(&[], FlushCompress::Finish));
    // Adler-32 of n bytes of 0x20, in closed form.
    let n = u128::from(chunks) * MIB as u128;
    let a = (1 + n * 32) % 65521;
    let b = (n + 32 * (n * (n + 1) / 2)) % 65521;
    z.extend(((b << 16 | a) as u32).to_be_bytes());
    z
}

fn zlib(data: &[u8]) -> Vec<u8> {
    let mut c = Compress::new(Compression::best(), true);
    let mut out = Vec::with_capacity(data.len() / 100 + 1024);
    c.compress_vec(data, &mut out, FlushCompress::Finish)
        .unwrap();
    out
}

/// A PDF whose object 4 is a stream with this dictionary (without `/Length`) and data.
fn pdf_with_stream(dict: &str, data: &[u8]) -> Vec<u8> {
    let mut pdf = b"%PDF-1.5\n".to_vec();
    pdf.extend(b"1 0 obj\n<< /Type /Catalog /Pages 2 0 R >>\nendobj\n");
    pdf.extend(b"2 0 obj\n<< /Type /Pages /Kids [3 0 R] /Count 1 >>\nendobj\n");
    pdf.extend(
        b"3 0 obj\n<< /Type /Page /Parent 2 0 R /MediaBox [0 0 595 842] /Contents 4 0 R >>\nendobj\n",
    );
    pdf.extend(format!("4 0 obj\n<< {dict} /Length {} >>\nstream\n", data.len()).as_bytes());
    pdf.extend(data);
    pdf.extend(b"\nendstream\nendobj\ntrailer\n<< /Root 1 0 R /Size 5 >>\n%%EOF\n");
    pdf
}

/// An object stream that inflates to 300 MiB.
fn object_stream_bomb() -> Vec<u8> {
    pdf_with_stream(
        "/Type /ObjStm /N 1 /First 4 /Filter /FlateDecode",
        &inflating_spaces(300),
    )
}

/// A page content stream that inflates to 300 MiB.
fn content_stream_bomb() -> Vec<u8> {
    pdf_with_stream("/Filter /FlateDecode", &inflating_spaces(300))
}

/// An object stream whose one member is an array of 1,100,000 integers.
fn values_bomb() -> Vec<u8> {
    let mut content = b"5 0 [".to_vec();
    content.extend(b"0 ".repeat(1_100_000));
    content.push(b']');
    pdf_with_stream(
        "/Type /ObjStm /N 1 /First 4 /Filter /FlateDecode",
        &zlib(&content),
    )
}

/// A valid one-page PDF whose object stream holds `values` integers: costly to parse, within
/// the budget.
fn heavy_pdf(values: usize) -> Vec<u8> {
    let mut content = b"5 0 [".to_vec();
    content.extend(b"0 ".repeat(values));
    content.push(b']');
    pdf_with_stream(
        "/Type /ObjStm /N 1 /First 4 /Filter /FlateDecode",
        &zlib(&content),
    )
}

/// 50,000 arrays, each inside the one before.
fn nested_bomb() -> Vec<u8> {
    let mut pdf = plain_pdf();
    let tail = pdf.split_off(pdf.len() - 6);
    pdf.extend(b"\n99 0 obj\n");
    pdf.extend(std::iter::repeat_n(b'[', 50_000));
    pdf.extend(std::iter::repeat_n(b']', 50_000));
    pdf.extend(b"\nendobj\n");
    pdf.extend(tail);
    pdf
}

fn body(documents: &[Vec<u8>]) -> Value {
    let documents: Vec<Value> = documents
        .iter()
        .enumerate()
        .map(|(i, pdf)| {
            json!({"documentName": format!("doc{i}.pdf"), "contentBase64": b64(pdf),
                   "signatureData": [{"signatory": {"userId": "cust-a"}, "mode": "LAST_PAGE"}]})
        })
        .collect();
    json!({
        "process": {"processName": "Contrato"},
        "signatories": [{"userId": "cust-a", "order": 1, "type": "FES"}],
        "documents": documents,
        "urls": {"callback": "https://merchant.example/listo",
                 "webhook": "https://merchant.example/hooks/signature"},
    })
}

/// Samples this process's resident memory until dropped; `peak` is the highest seen.
struct RssWatch {
    stop: Arc<AtomicBool>,
    peak: Arc<AtomicU64>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl RssWatch {
    fn start() -> RssWatch {
        RssWatch::of("self".into())
    }

    /// Samples the process `pid` (`self`: this one).
    fn of(pid: String) -> RssWatch {
        let stop = Arc::new(AtomicBool::new(false));
        let peak = Arc::new(AtomicU64::new(resident_bytes(&pid)));
        let (s, p) = (Arc::clone(&stop), Arc::clone(&peak));
        let thread = std::thread::spawn(move || {
            while !s.load(Ordering::Relaxed) {
                p.fetch_max(resident_bytes(&pid), Ordering::Relaxed);
                std::thread::sleep(Duration::from_millis(5));
            }
        });
        RssWatch {
            stop,
            peak,
            thread: Some(thread),
        }
    }

    fn peak(mut self) -> u64 {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            t.join().unwrap();
        }
        self.peak.load(Ordering::Relaxed)
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn bombs_are_refused_as_too_complex_at_their_document_in_bounded_memory() {
    let mut app = spawn_app().await;
    app.login().await;
    let bombs = [
        ("object stream inflating to 300 MiB", object_stream_bomb()),
        ("content stream inflating to 300 MiB", content_stream_bomb()),
        ("1,100,000 values", values_bomb()),
        ("arrays nested 50,000 deep", nested_bomb()),
    ];
    for (what, bomb) in bombs {
        assert!(bomb.len() < 1024 * 1024, "{what}: {} bytes", bomb.len());
        let request = body(&[plain_pdf(), bomb.clone()]);
        let watch = RssWatch::start();
        let started = Instant::now();
        let reply = app.post("/signature", &request).await;
        let took = started.elapsed();
        let peak = watch.peak();
        println!(
            "{what}: upload {} KiB, refused in {took:?}, peak RSS {} MiB",
            bomb.len() / 1024,
            peak / (1024 * 1024)
        );
        reply.expect(400, "DOCUMENT_TOO_COMPLEX");
        assert_eq!(
            reply.error_fields(),
            ["documents[1].contentBase64"],
            "{what}"
        );
        assert_eq!(reply.body["errors"][0]["code"], "DOCUMENT_TOO_COMPLEX");
        // This process also runs the other tests of the binary, so its resident size is
        // printed only; `the_server_stays_under_300_mb_through_bombs` measures a server alone.
    }
    // Nothing was stored.
    let stored: i64 = app
        .running
        .state
        .store()
        .read(|db| {
            Ok(
                db.query_row("SELECT COUNT(*) FROM signature_processes", &[], |r| {
                    r.get(0)
                })?,
            )
        })
        .unwrap();
    assert_eq!(stored, 0);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_plain_document_beside_the_budget_is_accepted() {
    let mut app = spawn_app().await;
    app.login().await;
    app.create_customer("cust-a", &rut(11_111_111)).await;
    // 200 MiB inflated in one content stream: within the budget.
    let big = pdf_with_stream("/Filter /FlateDecode", &inflating_spaces(200));
    let reply = app.post("/signature", &body(&[big])).await;
    reply.expect(201, "SIGNATURE_CREATE_OK");
}

#[tokio::test(flavor = "multi_thread")]
async fn another_commerces_writes_are_answered_while_bombs_are_refused() {
    let mut app = spawn_app().await;
    app.act_as(OTHER_COMMERCE).await;
    let other_token = app.token.clone().unwrap();
    app.act_as(COMMERCE).await;
    let bombs = body(&[object_stream_bomb()]);
    let many = body(&[values_bomb()]);

    let refusals = async {
        let started = Instant::now();
        let (a, b, c) = tokio::join!(
            app.post("/signature", &bombs),
            app.post("/signature", &many),
            app.post("/signature", &bombs),
        );
        for reply in [&a, &b, &c] {
            reply.expect(400, "DOCUMENT_TOO_COMPLEX");
        }
        started.elapsed()
    };
    let writes = async {
        // Let the bombs reach the parser first.
        tokio::time::sleep(Duration::from_millis(100)).await;
        let mut latencies = Vec::new();
        for i in 0..10 {
            let started = Instant::now();
            let reply = app
                .request_with(
                    reqwest::Method::POST,
                    "/user",
                    Some(&customer_body(&format!("other-{i}"), &rut(20_000_000 + i))),
                    |headers| {
                        for (name, value) in headers.iter_mut() {
                            if name == "commerce" {
                                *value = OTHER_COMMERCE.to_string();
                            }
                            if name == "Authorization" {
                                *value = format!("Bearer {other_token}");
                            }
                        }
                    },
                )
                .await;
            reply.expect(201, "USER_CREATE_OK");
            latencies.push(started.elapsed());
        }
        latencies
    };
    let (refused_in, latencies) = tokio::join!(refusals, writes);
    let slowest = latencies.iter().max().copied().unwrap_or_default();
    println!(
        "3 bombs refused in {refused_in:?}; another commerce's POST /user meanwhile: {:?} \
         (slowest {slowest:?})",
        latencies
    );
    // Measured, not timed: only a stall of the whole writer would come near this.
    assert!(
        slowest < Duration::from_secs(30),
        "slowest write {slowest:?}"
    );
}

/// One commerce's heavy uploads wait behind each other, not ahead of another commerce's: five
/// of them, each of documents near the parsing budget, sent at once; another commerce's small
/// upload, sent after them, is answered while most of them still wait (in one queue for
/// everyone it waited until the last but one had started).
#[tokio::test(flavor = "multi_thread")]
async fn one_commerces_heavy_uploads_do_not_queue_ahead_of_anothers() {
    let mut app = spawn_app().await;
    app.act_as(OTHER_COMMERCE).await;
    app.create_customer("cust-a", &rut(21_000_000)).await;
    let other_token = app.token.clone().unwrap();
    app.act_as(COMMERCE).await;
    let heavy = body(&vec![heavy_pdf(900_000); 10]);
    let small = body(&[plain_pdf()]);
    let order = std::sync::Mutex::new(Vec::new());
    let heavy_uploads = async {
        let one = |n: usize| {
            let (app, heavy, order) = (&app, &heavy, &order);
            async move {
                let reply = app.post("/signature", heavy).await;
                assert_ne!(reply.status.as_u16(), 500, "{:?}", reply.body);
                order.lock().unwrap().push(format!("heavy {n}"));
            }
        };
        tokio::join!(one(1), one(2), one(3), one(4), one(5));
    };
    let other = async {
        // After the heavy ones have reached the parser's queue.
        tokio::time::sleep(Duration::from_millis(150)).await;
        let started = Instant::now();
        let reply = app
            .request_with(
                reqwest::Method::POST,
                "/signature",
                Some(&small),
                |headers| {
                    for (name, value) in headers.iter_mut() {
                        if name == "commerce" {
                            *value = OTHER_COMMERCE.to_string();
                        }
                        if name == "Authorization" {
                            *value = format!("Bearer {other_token}");
                        }
                    }
                },
            )
            .await;
        reply.expect(201, "SIGNATURE_CREATE_OK");
        order.lock().unwrap().push("other".to_string());
        started.elapsed()
    };
    let started = Instant::now();
    let ((), other_took) = tokio::join!(heavy_uploads, other);
    let order = order.into_inner().unwrap();
    println!(
        "five heavy uploads done in {:?}; the other commerce's answered in {other_took:?}; \
         order {order:?}",
        started.elapsed()
    );
    let after_other = order.len() - 1 - order.iter().position(|o| o == "other").unwrap();
    assert!(
        after_other >= 3,
        "the other commerce waited behind the heavy uploads: {order:?}"
    );
}

/// `mandato serve` alone in its process: its resident memory through every bomb, sampled.
#[tokio::test(flavor = "multi_thread")]
async fn the_server_stays_under_300_mb_through_bombs() {
    let dir = tempfile::tempdir().unwrap();
    let served = Served::start(dir.path()).await;
    let Served {
        ref base,
        ref key,
        ref token,
        ..
    } = served;
    let client = reqwest::Client::new();
    let call = |path: &str, body: Value, token: Option<&str>| {
        let mut request = client
            .post(format!("{base}/api/v1{path}"))
            .headers(headers(COMMERCE, key))
            .json(&body);
        if let Some(token) = token {
            request = request.bearer_auth(token);
        }
        request.send()
    };
    let token = token.as_str();
    let idle = resident_bytes(&served.pid);
    let watch = RssWatch::of(served.pid.clone());
    // Two at once, as many as may parse together.
    let bombs = [
        object_stream_bomb(),
        content_stream_bomb(),
        values_bomb(),
        nested_bomb(),
    ];
    let started = Instant::now();
    for pair in bombs.chunks(2) {
        let replies = futures_join(
            call("/signature", body(&[pair[0].clone()]), Some(token)),
            call("/signature", body(&[pair[1].clone()]), Some(token)),
        )
        .await;
        for reply in replies {
            let reply = reply.unwrap();
            assert_eq!(reply.status(), 400);
            let body: Value = reply.json().await.unwrap();
            assert_eq!(body["name"], "DOCUMENT_TOO_COMPLEX", "{body}");
            assert_eq!(body["errors"][0]["field"], "documents[0].contentBase64");
        }
    }
    let took = started.elapsed();
    let peak = watch.peak();
    drop(served);
    println!(
        "server alone: idle {} MiB, peak {} MiB through 4 bombs (2 at once) refused in {took:?}",
        idle / (1024 * 1024),
        peak / (1024 * 1024)
    );
    assert!(idle > 0, "the server's VmRSS was read");
    assert!(peak < RSS_LIMIT, "peak RSS {peak} bytes");
}

/// A valid PDF of about `mib` MiB: one page and an uncompressed stream of spaces, cheap to
/// parse, large to hold.
fn large_pdf(mib: usize) -> Vec<u8> {
    pdf_with_stream("", &vec![b' '; mib * 1024 * 1024])
}

/// Forty uploads of 14 MiB at once, and a thousand strangers each sending a 1 MiB body to the
/// staff sign-in: `mandato serve` stays under 400 MB resident (it grew by about 23 MB per
/// concurrent upload, and by 1 MiB per stranger). Uploads beyond the memory for bodies in
/// flight wait their turn, or are told to come back (503 `SERVICE_BUSY` with `Retry-After`);
/// the strangers' bodies are refused at 16 KiB.
#[tokio::test(flavor = "multi_thread")]
async fn the_server_stays_under_400_mb_through_40_large_uploads_and_1000_strangers() {
    use tokio::io::AsyncWriteExt;
    const LIMIT: u64 = 400 * 1024 * 1024;
    let dir = tempfile::tempdir().unwrap();
    let served = Served::start(dir.path()).await;
    let idle = resident_bytes(&served.pid);
    let watch = RssWatch::of(served.pid.clone());
    let addr: std::net::SocketAddr = served.base.trim_start_matches("http://").parse().unwrap();
    let strangers: Vec<_> = (0..1_000)
        .map(|_| {
            tokio::spawn(async move {
                let Ok(mut tcp) = tokio::net::TcpStream::connect(addr).await else {
                    return;
                };
                let head = format!(
                    "POST /admin/api/session HTTP/1.1\r\nHost: {addr}\r\n\
                     Content-Type: application/json\r\nContent-Length: {}\r\n\r\n",
                    1024 * 1024
                );
                let _ = tcp.write_all(head.as_bytes()).await;
                let _ = tcp.write_all(&vec![b' '; 1024 * 1024]).await;
                tokio::time::sleep(Duration::from_secs(30)).await;
            })
        })
        .collect();
    let upload = bytes::Bytes::from(serde_json::to_vec(&body(&[large_pdf(10)])).unwrap());
    assert!(upload.len() > 13 * 1024 * 1024 && upload.len() < 15 * 1024 * 1024);
    let client = reqwest::Client::new();
    let started = Instant::now();
    let mut uploads = tokio::task::JoinSet::new();
    for _ in 0..40 {
        uploads.spawn(
            client
                .post(format!("{}/api/v1/signature", served.base))
                .headers(headers(COMMERCE, &served.key))
                .bearer_auth(&served.token)
                .header("content-type", "application/json")
                .body(upload.clone())
                .send(),
        );
    }
    let mut statuses = std::collections::BTreeMap::<u16, usize>::new();
    while let Some(reply) = uploads.join_next().await {
        let status = reply.unwrap().expect("answered").status().as_u16();
        *statuses.entry(status).or_default() += 1;
    }
    let took = started.elapsed();
    let peak = watch.peak();
    for stranger in strangers {
        stranger.abort();
    }
    println!(
        "40 uploads of {} MiB and 1,000 strangers' 1 MiB bodies: idle {} MiB, peak {} MiB; \
         answers {statuses:?} in {took:?}",
        upload.len() / (1024 * 1024),
        idle / (1024 * 1024),
        peak / (1024 * 1024)
    );
    // Parsed and refused at the unknown signatory (400), or told to come back (503).
    assert!(
        statuses.keys().all(|s| [400, 503].contains(s)),
        "{statuses:?}"
    );
    assert!(
        statuses.get(&400).copied().unwrap_or(0) >= 5,
        "{statuses:?}"
    );
    assert!(peak < LIMIT, "peak RSS {} MiB", peak / (1024 * 1024));
}

/// `mandato serve` in its own process on `data`, with a commerce, an API key and a session.
struct Served {
    server: std::process::Child,
    pid: String,
    base: String,
    key: String,
    token: String,
}

impl Served {
    async fn start(data: &std::path::Path) -> Served {
        let installation = crate::process::install(data, COMMERCE, "bomb-password");
        let (server, base) = serve(data);
        let mut api =
            crate::process::Api::new(base.clone(), installation.api_key.clone(), COMMERCE);
        api.login("bomb-password").await;
        let (key, token) = (installation.api_key, api.token.expect("a session"));
        Served {
            pid: server.id().to_string(),
            server,
            base,
            key,
            token,
        }
    }
}

impl Drop for Served {
    fn drop(&mut self) {
        let _ = self.server.kill();
        let _ = self.server.wait();
    }
}

/// Both requests at once; their answers in order.
async fn futures_join<A, B>(a: A, b: B) -> [A::Output; 2]
where
    A: std::future::Future,
    B: std::future::Future<Output = A::Output>,
{
    let (a, b) = tokio::join!(a, b);
    [a, b]
}
