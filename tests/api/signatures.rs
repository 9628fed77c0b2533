//! Signature processes over HTTP (CONTRACT 8): every refusal of `POST /signature` at its JSON
//! path, the signing pages in order (out-of-turn refused, equal orders in parallel), FES and
//! FEA/FAO identity steps with the sandbox codes read through the staff API, rejection, expiry
//! by the sandbox clock, cancellation and 410, the events and their signatures, the audit hash
//! chain, and the sealed PDFs parsed back. The PDFs are made here with lopdf.

use std::time::Duration;

use base64::Engine;
use lopdf::{Dictionary, Document, Object, Stream, dictionary};
use reqwest::Method;
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

use crate::helpers::*;
use crate::receiver::{Received, body_signature_valid, standard_signature_valid};
use crate::webhooks::{fast_delivery, setup};

// ----- PDFs -----

/// One page: its MediaBox, optional CropBox and Rotate.
#[derive(Clone, Copy)]
struct PageSpec {
    media: [f64; 4],
    crop: Option<[f64; 4]>,
    rotate: Option<i64>,
}

const A4: PageSpec = PageSpec {
    media: [0.0, 0.0, 595.0, 842.0],
    crop: None,
    rotate: None,
};
const LETTER: PageSpec = PageSpec {
    media: [0.0, 0.0, 612.0, 792.0],
    crop: None,
    rotate: None,
};
/// A small landscape page shown rotated: displayed 200 wide, 300 high.
const TURNED: PageSpec = PageSpec {
    media: [0.0, 0.0, 300.0, 200.0],
    crop: None,
    rotate: Some(90),
};
/// A cropped page: displayed 400 x 500 (its MediaBox is larger).
const CROPPED: PageSpec = PageSpec {
    media: [0.0, 0.0, 612.0, 792.0],
    crop: Some([50.0, 100.0, 450.0, 600.0]),
    rotate: None,
};

fn rect(r: [f64; 4]) -> Vec<Object> {
    r.iter().map(|v| Object::Real(*v as f32)).collect()
}

/// A PDF with these pages; the font resources are inherited from the page tree, and the
/// content streams are compressed when `compress`.
fn make_pdf(pages: &[PageSpec], compress: bool) -> Vec<u8> {
    let mut doc = Document::with_version("1.5");
    let pages_id = doc.new_object_id();
    let font = doc.add_object(dictionary! {
        "Type" => "Font", "Subtype" => "Type1", "BaseFont" => "Courier",
    });
    let mut kids = Vec::new();
    for (i, spec) in pages.iter().enumerate() {
        let text = format!("BT /F1 14 Tf 20 20 Td (Pagina de prueba {}) Tj ET", i + 1);
        let content = doc.add_object(Stream::new(Dictionary::new(), text.into_bytes()));
        let mut page = dictionary! {
            "Type" => "Page",
            "Parent" => pages_id,
            "MediaBox" => rect(spec.media),
            "Contents" => content,
        };
        if let Some(crop) = spec.crop {
            page.set("CropBox", rect(crop));
        }
        if let Some(rotate) = spec.rotate {
            page.set("Rotate", rotate);
        }
        kids.push(Object::from(doc.add_object(page)));
    }
    doc.objects.insert(
        pages_id,
        Object::Dictionary(dictionary! {
            "Type" => "Pages",
            "Count" => kids.len() as i64,
            "Kids" => kids,
            "Resources" => dictionary! { "Font" => dictionary! { "F1" => font } },
        }),
    );
    let catalog = doc.add_object(dictionary! { "Type" => "Catalog", "Pages" => pages_id });
    doc.trailer.set("Root", catalog);
    if compress {
        doc.compress();
    }
    let mut out = Vec::new();
    doc.save_to(&mut out).unwrap();
    out
}

fn b64(bytes: &[u8]) -> String {
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

fn sha256(bytes: &[u8]) -> String {
    hex::encode(Sha256::digest(bytes))
}

/// Every page's text as poppler's `pdftotext` reads it (whitespace runs made one space): the
/// seal's stamps are in an embedded CID font, so its text shows only once decoded.
fn page_texts(pdf: &[u8]) -> Vec<String> {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("sealed.pdf");
    std::fs::write(&path, pdf).unwrap();
    let output = std::process::Command::new("pdftotext")
        .args(["-layout", "-enc", "UTF-8"])
        .arg(&path)
        .arg("-")
        .output()
        .expect("pdftotext (poppler-utils, scripts/setup.sh)");
    assert!(output.status.success(), "pdftotext reads the sealed PDF");
    let text = String::from_utf8(output.stdout).unwrap();
    let mut pages: Vec<String> = text
        .split('\x0c')
        .map(|p| p.split_whitespace().collect::<Vec<_>>().join(" "))
        .collect();
    // pdftotext ends every page with a form feed, the last one too.
    pages.pop();
    pages
}

/// Every page's decompressed content, in order.
fn page_contents(pdf: &[u8]) -> Vec<String> {
    let doc = Document::load_mem(pdf).expect("the sealed PDF parses");
    doc.get_pages()
        .values()
        .map(|id| String::from_utf8_lossy(&doc.get_page_content(*id)).to_string())
        .collect()
}

// ----- the merchant side -----

pub(crate) const RUT_A: u32 = 11_111_111;
pub(crate) const RUT_B: u32 = 22_222_222;
const RUT_C: u32 = 15_555_555;

/// An app logged in as the commerce, with customers cust-a, cust-b and cust-c.
pub(crate) async fn app_with_customers() -> TestApp {
    let mut app = spawn_app().await;
    app.login().await;
    for (user, body) in [("cust-a", RUT_A), ("cust-b", RUT_B), ("cust-c", RUT_C)] {
        app.create_customer(user, &rut(body)).await;
    }
    app
}

fn urls() -> Value {
    json!({"callback": "https://merchant.example/firmas/listo",
           "webhook": "https://merchant.example/hooks/signature"})
}

/// A one-document process for `signers` (userId, order, type), each on the last page, with an
/// `externalProcessId` of its own (`P-001-<n>`): the merchant's id names one process.
pub(crate) fn simple_body(signers: &[(&str, i64, &str)]) -> Value {
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);
    let external_id = format!(
        "P-001-{}",
        NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
    );
    let signatories: Vec<Value> = signers
        .iter()
        .map(|(u, o, t)| json!({"userId": u, "order": o, "type": t}))
        .collect();
    let data: Vec<Value> = signers
        .iter()
        .map(|(u, _, _)| json!({"signatory": {"userId": u}, "mode": "LAST_PAGE"}))
        .collect();
    json!({
        "process": {"processName": "Contrato de arriendo", "externalProcessId": external_id,
                    "requestUser": "ops@merchant.example"},
        "signatories": signatories,
        "documents": [{"documentName": "contrato.pdf", "contentBase64": b64(&make_pdf(&[A4], false)),
                       "signatureData": data}],
        "urls": urls(),
    })
}

pub(crate) async fn create(app: &TestApp, body: &Value) -> Value {
    let reply = app.post("/signature", body).await;
    reply.expect(201, "SIGNATURE_CREATE_OK");
    assert_eq!(reply.body["statusCode"], 201);
    reply.body["payload"].clone()
}

pub(crate) async fn detail(app: &TestApp, id: &str) -> Value {
    let reply = app.get(&format!("/signature/internalId/{id}")).await;
    reply.expect(200, "SIGNATURE_DETAIL_OK");
    reply.body["payload"].clone()
}

pub(crate) fn token_of(signatory: &Value) -> String {
    signatory["signingUrl"]
        .as_str()
        .unwrap()
        .rsplit('/')
        .next()
        .unwrap()
        .to_string()
}

/// The process's events in the outbox, in sequence order (body parsed, raw text kept).
fn signature_events(app: &TestApp, process_id: &str) -> Vec<(Value, String)> {
    app.running
        .state
        .store()
        .read(|c| {
            let seq: i64 = c.query_row(
                "SELECT seq FROM signature_processes WHERE id = ?1",
                &[process_id.into()],
                |r| r.get(0),
            )?;
            Ok(mandato::store::signatures::event_bodies(c, seq)?
                .into_iter()
                .map(|(_, body)| (serde_json::from_str(&body).unwrap(), body))
                .collect())
        })
        .unwrap()
}

fn event_names(events: &[(Value, String)]) -> Vec<String> {
    events
        .iter()
        .map(|(b, _)| b["event"].as_str().unwrap().to_string())
        .collect()
}

// ----- the signatory's browser -----

pub(crate) struct Browser {
    client: reqwest::Client,
    base: String,
}

pub(crate) struct Page {
    pub status: u16,
    pub location: Option<String>,
    pub html: String,
}

impl Browser {
    pub(crate) fn new(app: &TestApp) -> Browser {
        Browser {
            client: reqwest::Client::builder()
                .redirect(reqwest::redirect::Policy::none())
                .user_agent("Mozilla/5.0 (Linux; Android 14) Prueba")
                .build()
                .unwrap(),
            base: app.base.clone(),
        }
    }

    async fn read(response: reqwest::Response) -> Page {
        let status = response.status().as_u16();
        let location = response
            .headers()
            .get("location")
            .map(|l| l.to_str().unwrap().to_string());
        Page {
            status,
            location,
            html: response.text().await.unwrap(),
        }
    }

    pub(crate) async fn get(&self, path: &str) -> Page {
        Self::read(
            self.client
                .get(format!("{}{path}", self.base))
                .send()
                .await
                .unwrap(),
        )
        .await
    }

    pub(crate) async fn open(&self, token: &str) -> Page {
        self.get(&format!("/sign/{token}")).await
    }

    async fn post(&self, token: &str, step: &str, fields: &[(&str, &str)]) -> Page {
        let body: String = url::form_urlencoded::Serializer::new(String::new())
            .extend_pairs(fields)
            .finish();
        Self::read(
            self.client
                .post(format!("{}/sign/{token}/{step}", self.base))
                .header("content-type", "application/x-www-form-urlencoded")
                .body(body)
                .send()
                .await
                .unwrap(),
        )
        .await
    }
}

// ----- staff -----

pub(crate) struct StaffSession {
    client: reqwest::Client,
    base: String,
    cookie: String,
}

impl StaffSession {
    pub(crate) async fn start(app: &TestApp) -> StaffSession {
        let client = reqwest::Client::new();
        let response = client
            .post(format!("{}/admin/api/setup", app.base))
            .json(&json!({"email": "owner@merchant.example", "password": "a long password"}))
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), 201);
        let cookie = response.headers()["set-cookie"]
            .to_str()
            .unwrap()
            .split(';')
            .next()
            .unwrap()
            .to_string();
        StaffSession {
            client,
            base: app.base.clone(),
            cookie,
        }
    }

    async fn get(&self, path: &str) -> reqwest::Response {
        self.client
            .get(format!("{}/admin/api{path}", self.base))
            .header("cookie", &self.cookie)
            .send()
            .await
            .unwrap()
    }

    async fn process(&self, id: &str) -> Value {
        let response = self.get(&format!("/signatures/{id}")).await;
        assert_eq!(response.status(), 200);
        let body: Value = response.json().await.unwrap();
        assert_eq!(body["name"], "SIGNATURE_OK");
        body["payload"].clone()
    }

    /// The current sandbox one-time code of a signatory.
    async fn code(&self, process: &str, signatory: &str) -> String {
        let detail = self.process(process).await;
        detail["signatories"]
            .as_array()
            .unwrap()
            .iter()
            .find(|s| s["internalId"] == signatory)
            .and_then(|s| s["sandboxCode"]["code"].as_str())
            .expect("a sandbox code")
            .to_string()
    }

    async fn document(&self, process: &str, document: &str, version: &str) -> Vec<u8> {
        let response = self
            .get(&format!(
                "/signatures/{process}/documents/{document}/{version}"
            ))
            .await;
        assert_eq!(response.status(), 200, "{version} of {document}");
        assert_eq!(response.headers()["content-type"], "application/pdf");
        response.bytes().await.unwrap().to_vec()
    }
}

/// Runs a signatory's whole ceremony in its page; answers where the browser went at the end.
pub(crate) async fn sign_as(
    browser: &Browser,
    staff: &StaffSession,
    process: &str,
    signatory: &Value,
    rut_text: &str,
    serial: Option<&str>,
) -> String {
    let token = token_of(signatory);
    let page = browser.open(&token).await;
    assert_eq!(page.status, 200, "{}", page.html);
    assert!(page.html.contains("Confirme su identidad"), "{}", page.html);
    let sent = browser.post(&token, "codigo", &[("rut", rut_text)]).await;
    assert_eq!(sent.status, 303, "{}", sent.html);
    let code = staff
        .code(process, signatory["internalId"].as_str().unwrap())
        .await;
    // The code is for staff in the sandbox, never in the page.
    let page = browser.open(&token).await;
    assert!(page.html.contains("Ingrese el código"));
    assert!(!page.html.contains(&code), "the page shows the code");
    let verified = browser
        .post(&token, "verificar", &[("codigo", &code)])
        .await;
    assert_eq!(verified.status, 303, "{}", verified.html);
    if let Some(serial) = serial {
        let page = browser.open(&token).await;
        assert!(page.html.contains("123456789"), "sandbox test values shown");
        let checked = browser
            .post(&token, "identidad", &[("serie", serial)])
            .await;
        assert_eq!(checked.status, 303, "{}", checked.html);
    }
    let page = browser.open(&token).await;
    assert!(page.html.contains("Firmar documentos"), "{}", page.html);
    let signed = browser.post(&token, "firmar", &[("acepto", "si")]).await;
    assert_eq!(signed.status, 303, "{}", signed.html);
    signed.location.expect("a redirect")
}

// ----- tests -----

#[tokio::test(flavor = "multi_thread")]
async fn every_refusal_is_named_at_its_json_path() {
    let mut app = app_with_customers().await;

    // Nothing at all.
    let reply = app.post("/signature", &json!({})).await;
    reply.expect(400, "VALIDATION_ERROR");
    assert_eq!(
        sorted_fields(&reply),
        ["documents", "process", "signatories", "urls"]
    );

    // Empty lists, missing names and URLs.
    let reply = app
        .post(
            "/signature",
            &json!({"process": {}, "signatories": [], "documents": [], "urls": {}}),
        )
        .await;
    reply.expect(400, "VALIDATION_ERROR");
    assert_eq!(
        sorted_fields(&reply),
        [
            "documents",
            "process.processName",
            "signatories",
            "urls.callback",
            "urls.webhook"
        ]
    );
    assert_eq!(error_codes(&reply)[1], "EMPTY");

    // A body that is not JSON, and a field of the wrong type.
    app.request_raw(Method::POST, "/signature", "{not json")
        .await
        .expect(400, "VALIDATION_ERROR");
    let reply = app
        .post("/signature", &json!({"signatories": [{"userId": 5}]}))
        .await;
    reply.expect(400, "VALIDATION_ERROR");
    assert_eq!(reply.error_fields(), ["signatories[0].userId"]);

    // Every field of signatories, documents and signatureData at once.
    let two_pages = b64(&make_pdf(&[A4, LETTER], false));
    let other = {
        app.act_as(OTHER_COMMERCE).await;
        let id = app.create_customer("foreign", &rut(33_333_333)).await;
        app.act_as(COMMERCE).await;
        id
    };
    let body = json!({
        "process": {"processName": "x".repeat(201), "expirationDays": 0},
        "signatories": [
            {"userId": "cust-a", "internalUserId": "usr_x", "order": 1, "type": "FES"},
            {"userId": "cust-b", "order": 0, "type": "XYZ"},
            {"userId": "nobody", "order": 1, "type": "FES"},
            {"internalUserId": other, "order": 1.5, "type": "FAO"},
            {"userId": "cust-c", "order": 2, "type": "FEA"},
            {"userId": "cust-c", "order": 3, "type": "FEA"},
        ],
        "documents": [
            {"documentName": "dos.pdf", "contentBase64": two_pages,
             "signatureData": [
                 {"signatory": {"userId": "cust-b"}, "mode": "MANUAL", "page": 1, "x": 10, "y": 10, "width": 100, "height": 40},
                 {"signatory": {"userId": "cust-b"}, "mode": "MANUAL", "page": 3, "x": 10, "y": 10, "width": 100, "height": 40},
                 {"signatory": {"userId": "cust-b"}, "mode": "MANUAL", "page": 2, "x": 620, "y": 10, "width": 100, "height": 40},
                 {"signatory": {"userId": "cust-b"}, "mode": "MANUAL", "page": 2, "x": 10, "y": 760, "width": 100, "height": 40},
                 {"signatory": {"userId": "cust-b"}, "mode": "MANUAL", "page": 1, "x": -1, "y": 10, "width": 0},
                 {"signatory": {"userId": "cust-b"}, "mode": "SOMEWHERE"},
                 {"signatory": {"userId": "cust-b"}},
                 {"signatory": {"userId": "cust-c"}, "mode": "LAST_PAGE", "page": 1},
                 {"signatory": {"userId": "stranger"}, "mode": "LAST_PAGE"},
                 {"mode": "LAST_PAGE"},
             ]},
            {"documentName": "", "contentBase64": "%%% not base64 %%%", "signatureData": []},
            {"documentName": "hola.pdf", "contentBase64": b64(b"hola, no soy un PDF"),
             "signatureData": [{"signatory": {"userId": "cust-b"}, "mode": "LAST_PAGE"}]},
            {"documentName": "roto.pdf", "contentBase64": b64(b"%PDF-1.7\n1 0 obj\n<< /Type /Catalog >>\n%%EOF"),
             "signatureData": [{"signatory": {"userId": "cust-b"}, "mode": "LAST_PAGE"}]},
        ],
        "urls": {"callback": "ftp://merchant.example/x", "webhook": "http://merchant.example/hooks"},
    });
    let reply = app.post("/signature", &body).await;
    reply.expect(400, "VALIDATION_ERROR");
    let found: Vec<(String, String)> = reply.body["errors"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            (
                e["field"].as_str().unwrap().to_string(),
                e["code"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    let expected = [
        ("process.processName", "TOO_LONG"),
        ("process.expirationDays", "OUT_OF_RANGE"),
        ("signatories[0]", "ONE_OF_REQUIRED"),
        ("signatories[1].order", "OUT_OF_RANGE"),
        ("signatories[1].type", "INVALID_VALUE"),
        ("signatories[3].order", "INVALID_VALUE"),
        ("documents[0].signatureData[1].page", "PAGE_OUT_OF_RANGE"),
        ("documents[0].signatureData[2].x", "OUTSIDE_PAGE"),
        ("documents[0].signatureData[3].height", "OUTSIDE_PAGE"),
        ("documents[0].signatureData[4].x", "OUT_OF_RANGE"),
        ("documents[0].signatureData[4].width", "OUT_OF_RANGE"),
        ("documents[0].signatureData[4].height", "REQUIRED"),
        ("documents[0].signatureData[5].mode", "INVALID_VALUE"),
        ("documents[0].signatureData[6].mode", "REQUIRED"),
        ("documents[0].signatureData[7].page", "NOT_ALLOWED"),
        ("documents[0].signatureData[9].signatory", "REQUIRED"),
        ("documents[1].documentName", "REQUIRED"),
        ("documents[1].contentBase64", "INVALID_BASE64"),
        ("documents[1].signatureData", "EMPTY"),
        ("documents[2].contentBase64", "INVALID_PDF"),
        ("documents[3].contentBase64", "INVALID_PDF"),
        ("urls.callback", "INVALID_URL"),
        ("urls.webhook", "INVALID_URL"),
        // Found with the database: unknown customers (another commerce's too), the same
        // customer twice, a signatory the process does not have, and who is missing where.
        ("signatories[2].userId", "USER_NOT_FOUND"),
        ("signatories[3].internalUserId", "USER_NOT_FOUND"),
        ("signatories[5]", "DUPLICATED_SIGNATORY"),
        (
            "documents[0].signatureData[8].signatory",
            "UNKNOWN_SIGNATORY",
        ),
        ("documents[2].signatureData", "MISSING_SIGNATORY"),
        ("documents[3].signatureData", "MISSING_SIGNATORY"),
    ];
    for (field, code) in expected {
        assert!(
            found.contains(&(field.to_string(), code.to_string())),
            "missing {field} {code} in {found:#?}"
        );
    }
    // Nothing else: each problem is named once, where it is.
    assert_eq!(found.len(), expected.len(), "{found:#?}");

    // A box is checked against the page as displayed: rotated and cropped pages.
    let odd = b64(&make_pdf(&[TURNED, CROPPED], true));
    let placed = |page: i64, x: i64, y: i64, w: i64, h: i64| {
        json!({
            "process": {"processName": "Páginas raras"},
            "signatories": [{"userId": "cust-a", "order": 1, "type": "FES"}],
            "documents": [{"documentName": "raro.pdf", "contentBase64": odd,
                "signatureData": [{"signatory": {"userId": "cust-a"}, "mode": "MANUAL",
                                   "page": page, "x": x, "y": y, "width": w, "height": h}]}],
            "urls": urls(),
        })
    };
    // Page 1 is 300 x 200 turned: 200 wide and 300 high as shown.
    let reply = app.post("/signature", &placed(1, 10, 10, 250, 40)).await;
    reply.expect(400, "VALIDATION_ERROR");
    assert_eq!(
        reply.error_fields(),
        ["documents[0].signatureData[0].width"]
    );
    create(&app, &placed(1, 10, 240, 180, 50)).await;
    // Page 2 shows its 400 x 500 CropBox, not its 612 x 792 MediaBox.
    let reply = app.post("/signature", &placed(2, 10, 480, 100, 40)).await;
    assert_eq!(
        reply.error_fields(),
        ["documents[0].signatureData[0].height"]
    );
    create(&app, &placed(2, 290, 450, 110, 50)).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn size_limits_are_per_document_and_per_route() {
    let app = app_with_customers().await;
    // Over 10 MiB decoded: refused at the document, in a body the route accepts.
    let mut body = simple_body(&[("cust-a", 1, "FES")]);
    body["documents"][0]["contentBase64"] = json!(b64(&vec![b'x'; 10 * 1024 * 1024 + 1]));
    let reply = app.post("/signature", &body).await;
    reply.expect(400, "VALIDATION_ERROR");
    assert_eq!(reply.error_fields(), ["documents[0].contentBase64"]);
    assert_eq!(error_codes(&reply), ["TOO_LARGE"]);

    // A real PDF of 3 MiB: the body is far over the listener's 1 MiB, and it is accepted.
    let big = {
        let mut doc = Document::load_mem(&make_pdf(&[A4], false)).unwrap();
        let filler = doc.add_object(Stream::new(
            Dictionary::new(),
            "% relleno\n".repeat(300_000).into_bytes(),
        ));
        let info = doc.add_object(dictionary! { "Filler" => filler });
        doc.trailer.set("Info", info);
        let mut out = Vec::new();
        doc.save_to(&mut out).unwrap();
        out
    };
    assert!(big.len() > 3_000_000);
    let mut body = simple_body(&[("cust-a", 1, "FES")]);
    body["documents"][0]["contentBase64"] = json!(b64(&big));
    let created = create(&app, &body).await;
    assert_eq!(created["documents"][0]["sha256"], sha256(&big));
    assert_eq!(created["documents"][0]["sizeBytes"], big.len());

    // Over 16 MiB: 413, before anything is parsed.
    let huge = format!(
        "{{\"process\":{{\"processName\":\"x\"}},\"documents\":[{{\"contentBase64\":\"{}\"}}]}}",
        "A".repeat(17 * 1024 * 1024)
    );
    app.request_raw(Method::POST, "/signature", &huge)
        .await
        .expect(413, "PAYLOAD_TOO_LARGE");
    // The other operations keep the listener's 1 MiB.
    let two_mib = format!(
        "{{\"customer\":{{\"userId\":\"{}\"}}}}",
        "a".repeat(2 << 20)
    );
    app.request_raw(Method::POST, "/user", &two_mib)
        .await
        .expect(413, "PAYLOAD_TOO_LARGE");
}

#[tokio::test(flavor = "multi_thread")]
async fn signed_in_order_with_parallel_equals_then_sealed_with_stamps_on_their_pages() {
    let app = app_with_customers().await;
    let staff = StaffSession::start(&app).await;
    let browser = Browser::new(&app);
    // Three pages of three sizes; a compressed one-page document turned on its side.
    let contract = make_pdf(&[A4, LETTER, CROPPED], false);
    let annex = make_pdf(&[TURNED], true);
    let body = json!({
        "process": {"processName": "Contrato de arriendo", "externalProcessId": "P-001",
                    "requestUser": "ops@merchant.example"},
        "signatories": [
            {"userId": "cust-a", "order": 1, "type": "FES"},
            {"userId": "cust-b", "order": 1, "type": "FEA"},
            {"userId": "cust-c", "order": 2, "type": "FAO"},
        ],
        "documents": [
            {"documentName": "contrato.pdf", "contentBase64": b64(&contract), "signatureData": [
                {"signatory": {"userId": "cust-a"}, "mode": "MANUAL", "page": 1, "x": 72, "y": 640, "width": 180, "height": 50},
                {"signatory": {"userId": "cust-b"}, "mode": "MANUAL", "page": 2, "x": 300, "y": 700, "width": 200, "height": 60},
                {"signatory": {"userId": "cust-c"}, "mode": "MANUAL", "page": 3, "x": 20, "y": 20, "width": 150, "height": 45},
            ]},
            {"documentName": "anexo.pdf", "contentBase64": b64(&annex), "signatureData": [
                {"signatory": {"userId": "cust-a"}, "mode": "LAST_PAGE"},
                {"signatory": {"userId": "cust-b"}, "mode": "LAST_PAGE"},
                {"signatory": {"userId": "cust-c"}, "mode": "LAST_PAGE"},
                {"signatory": {"userId": "cust-c"}, "mode": "MANUAL", "page": 1, "x": 10, "y": 240, "width": 180, "height": 50},
            ]},
        ],
        "urls": urls(),
    });
    let created = create(&app, &body).await;
    let id = created["process"]["internalId"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(id.starts_with("sig_"));
    assert_eq!(
        created["process"]["state"],
        json!({"id": 1, "name": "PENDING"})
    );
    assert_eq!(created["process"]["finishedAt"], Value::Null);
    let signers = created["signatories"].as_array().unwrap().clone();
    assert_eq!(signers.len(), 3);
    for s in &signers {
        assert_eq!(s["state"], json!({"id": 1, "name": "PENDING"}));
        assert!(
            s["signingUrl"]
                .as_str()
                .unwrap()
                .starts_with(&format!("{}/sign/", app.base))
        );
    }
    assert_eq!(created["documents"][0]["pageCount"], 3);
    assert_eq!(created["documents"][0]["sha256"], sha256(&contract));
    assert_eq!(created["documents"][1]["sealedSha256"], Value::Null);

    // The order-2 signatory may look, but not act, even with the right RUT.
    let late = token_of(&signers[2]);
    let page = browser.open(&late).await;
    assert_eq!(page.status, 200);
    assert!(page.html.contains("Aún no es su turno"));
    assert!(!page.html.contains("name=\"rut\""));
    for (step, field, value) in [
        ("codigo", "rut", rut(RUT_C)),
        ("verificar", "codigo", "000000".to_string()),
        ("firmar", "acepto", "si".to_string()),
    ] {
        let refused = browser.post(&late, step, &[(field, &value)]).await;
        assert_eq!(refused.status, 409, "{step}: {}", refused.html);
        assert!(refused.html.contains("Aún no es su turno"));
    }
    let c = &staff.process(&id).await["signatories"][2];
    assert_eq!(c["codesSent"], 0);
    assert_eq!(c["sandboxCode"], Value::Null);

    // Equal orders sign in parallel: B before A.
    let done = sign_as(
        &browser,
        &staff,
        &id,
        &signers[1],
        "22.222.222-2",
        Some("123456789"),
    )
    .await;
    assert!(done.starts_with("https://merchant.example/firmas/listo?internalId="));
    assert!(done.contains("result=SIGNED") && done.contains("completed=false"));
    let now = detail(&app, &id).await;
    assert_eq!(
        now["process"]["state"],
        json!({"id": 2, "name": "IN_PROGRESS"})
    );
    assert_eq!(
        now["signatories"][1]["state"],
        json!({"id": 2, "name": "SIGNED"})
    );
    assert!(
        now["signatories"][1]["signedAt"]
            .as_str()
            .unwrap()
            .ends_with('Z')
    );
    // C still waits for A.
    let refused = browser.post(&late, "codigo", &[("rut", &rut(RUT_C))]).await;
    assert_eq!(refused.status, 409);

    // A: a wrong RUT and a wrong code are refused and counted, then the right ones.
    let a = token_of(&signers[0]);
    browser.open(&a).await;
    let wrong = browser.post(&a, "codigo", &[("rut", &rut(RUT_B))]).await;
    assert_eq!(wrong.status, 400);
    assert!(wrong.html.contains("El RUT no coincide"));
    let sent = browser.post(&a, "codigo", &[("rut", "11111111-1")]).await;
    assert_eq!(sent.status, 303, "{}", sent.html);
    let code = staff
        .code(&id, signers[0]["internalId"].as_str().unwrap())
        .await;
    let other_code = if code == "000000" { "111111" } else { "000000" };
    let wrong = browser
        .post(&a, "verificar", &[("codigo", other_code)])
        .await;
    assert_eq!(wrong.status, 400);
    assert!(wrong.html.contains("Le quedan 4 intento(s)"));
    // Signing before the identity is confirmed is refused on the server.
    let early = browser.post(&a, "firmar", &[("acepto", "si")]).await;
    assert_eq!(early.status, 400);
    assert_eq!(
        browser
            .post(&a, "verificar", &[("codigo", &code)])
            .await
            .status,
        303
    );
    let unticked = browser.post(&a, "firmar", &[]).await;
    assert_eq!(unticked.status, 400);
    let signed = browser.post(&a, "firmar", &[("acepto", "si")]).await;
    assert_eq!(signed.status, 303);
    assert_eq!(staff.process(&id).await["signatories"][0]["failures"], 2);

    // Now C's turn: the simulated provider refuses 999999999, then confirms 123456789.
    browser.open(&late).await;
    browser.post(&late, "codigo", &[("rut", &rut(RUT_C))]).await;
    let code = staff
        .code(&id, signers[2]["internalId"].as_str().unwrap())
        .await;
    assert_eq!(
        browser
            .post(&late, "verificar", &[("codigo", &code)])
            .await
            .status,
        303
    );
    let denied = browser
        .post(&late, "identidad", &[("serie", "999999999")])
        .await;
    assert_eq!(denied.status, 400);
    assert!(denied.html.contains("no pudo confirmar"));
    assert_eq!(
        browser
            .post(&late, "identidad", &[("serie", "123.456.789")])
            .await
            .status,
        303
    );
    let last = browser.post(&late, "firmar", &[("acepto", "si")]).await;
    assert_eq!(last.status, 303);
    assert!(last.location.unwrap().contains("completed=true"));

    // COMPLETED: every signatory SIGNED, each document sealed, the originals kept.
    let done = detail(&app, &id).await;
    assert_eq!(
        done["process"]["state"],
        json!({"id": 3, "name": "COMPLETED"})
    );
    assert!(
        done["process"]["finishedAt"]
            .as_str()
            .unwrap()
            .ends_with('Z')
    );
    for s in done["signatories"].as_array().unwrap() {
        assert_eq!(s["state"], json!({"id": 2, "name": "SIGNED"}));
    }
    let documents = done["documents"].as_array().unwrap();
    let mut sealed = Vec::new();
    for (doc, original) in documents.iter().zip([&contract, &annex]) {
        let doc_id = doc["internalId"].as_str().unwrap();
        let kept = staff.document(&id, doc_id, "original").await;
        assert_eq!(&kept, original);
        let bytes = staff.document(&id, doc_id, "sealed").await;
        assert_eq!(doc["sealedSha256"], sha256(&bytes));
        assert_ne!(doc["sealedSha256"], doc["sha256"]);
        sealed.push(bytes);
    }

    // The contract: three pages, each with the stamp of its signatory only, then the
    // certificate; no signature page (nobody signs it on LAST_PAGE).
    let pages = page_texts(&sealed[0]);
    assert!(pages.len() >= 4, "{} pages", pages.len());
    // The stamp writes the RUT as people read it, with its dots.
    let stamp = |n: u32| format!("RUT {}", mandato_core::domain::rut::dotted(&rut(n)));
    for (page, (mine, others)) in [
        (RUT_A, [RUT_B, RUT_C]),
        (RUT_B, [RUT_A, RUT_C]),
        (RUT_C, [RUT_A, RUT_B]),
    ]
    .iter()
    .enumerate()
    {
        assert!(pages[page].contains(&stamp(*mine)), "page {}", page + 1);
        assert!(
            pages[page].contains("Pagina de prueba"),
            "the original content stays"
        );
        for other in others {
            assert!(!pages[page].contains(&stamp(*other)), "page {}", page + 1);
        }
    }
    assert!(pages[1].contains("Firmado electrónicamente (FEA)"));
    assert!(pages[3].contains("Certificado de firma electrónica"));
    assert!(!pages[3..].iter().any(|p| p.contains("Página de firmas")));
    let certificate = pages[3..].concat();
    assert!(certificate.contains(&sha256(&contract)));
    assert!(certificate.contains("Firmado"));
    // The sealed pages keep their sizes.
    let doc = Document::load_mem(&sealed[0]).unwrap();
    let first = doc.get_pages()[&1];
    let media = doc.get_dictionary(first).unwrap().get(b"MediaBox").unwrap();
    assert_eq!(media.as_array().unwrap()[2].as_float().unwrap(), 595.0);

    // The annex: its page with C's box (drawn turned, as the page is shown), then the
    // signature page with all three, then the certificate.
    let pages = page_texts(&sealed[1]);
    assert!(pages.len() >= 3);
    assert!(pages[0].contains(&stamp(RUT_C)) && !pages[0].contains(&stamp(RUT_A)));
    let contents = page_contents(&sealed[1]);
    assert!(contents[0].contains("0 1 -1 0 300 0 cm"), "{}", contents[0]);
    assert!(pages[1].contains("Página de firmas"));
    for n in [RUT_A, RUT_B, RUT_C] {
        assert!(pages[1].contains(&stamp(n)));
    }
    assert!(pages[2].contains("Certificado de firma"));

    // Events: three SIGNATORY_SIGNED, then SIGNATURE_COMPLETED with the sealed hashes;
    // numbered 1.. per process and signed with the commerce's secret.
    let events = signature_events(&app, &id);
    assert_eq!(
        event_names(&events),
        [
            "SIGNATORY_SIGNED",
            "SIGNATORY_SIGNED",
            "SIGNATORY_SIGNED",
            "SIGNATURE_COMPLETED"
        ]
    );
    let secret = app.webhook_secret(COMMERCE);
    for (i, (body, raw)) in events.iter().enumerate() {
        assert_eq!(body["sequence"], i as i64 + 1);
        assert_eq!(body["process"]["internalId"], id.as_str());
        let received = Received {
            headers: Default::default(),
            body: raw.clone(),
            at: std::time::Instant::now(),
        };
        assert!(body_signature_valid(&received, &secret), "{raw}");
    }
    assert_eq!(events[0].0["signatory"]["userId"], "cust-b");
    assert_eq!(events[0].0["process"]["state"]["name"], "IN_PROGRESS");
    let completed = &events[3].0;
    assert_eq!(
        completed["process"]["state"],
        json!({"id": 3, "name": "COMPLETED"})
    );
    assert_eq!(
        completed["documents"][0]["sealedSha256"],
        documents[0]["sealedSha256"]
    );

    // The audit trail: every act, with IP, browser and the documents' hashes, verifies...
    let trail = staff.process(&id).await["audit"].clone();
    assert_eq!(trail["valid"], true);
    let actions: Vec<&str> = trail["records"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["action"].as_str().unwrap())
        .collect();
    assert_eq!(actions[0], "CREATED");
    assert_eq!(*actions.last().unwrap(), "COMPLETED");
    for expected in [
        "VIEWED",
        "CODE_SENT",
        "CODE_FAILED",
        "CODE_VERIFIED",
        "IDENTITY_FAILED",
        "IDENTITY_CONFIRMED",
        "SIGNED",
    ] {
        assert!(actions.contains(&expected), "{expected} in {actions:?}");
    }
    let signed_record = trail["records"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["action"] == "SIGNED")
        .unwrap();
    assert_eq!(signed_record["ip"], "127.0.0.1");
    assert!(
        signed_record["userAgent"]
            .as_str()
            .unwrap()
            .contains("Prueba")
    );
    assert_eq!(signed_record["documents"][0]["sha256"], sha256(&contract));
    // ... and a changed record breaks it where it was changed.
    app.running
        .state
        .store()
        .write(|db| {
            db.execute(
                "UPDATE signature_audit SET ip = '10.9.9.9' WHERE position = 3
                 AND process_seq = (SELECT seq FROM signature_processes WHERE id = ?1)",
                &[id.as_str().into()],
            )?;
            Ok(())
        })
        .unwrap();
    let trail = staff.process(&id).await["audit"].clone();
    assert_eq!(trail["valid"], false);
    assert_eq!(trail["brokenAt"], 3);

    // A signatory's page now offers the sealed documents; the process cannot be cancelled.
    let page = browser.open(&a).await;
    assert!(page.html.contains("Proceso completado"));
    let downloaded = browser.get(&format!("/sign/{a}/documentos/1")).await;
    assert_eq!(downloaded.status, 200);
    app.delete(
        "/signature/cancel",
        Some(&json!({"process": {"internalId": id}})),
    )
    .await
    .expect(400, "SIGNATURE_STATE_CONFLICT");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_rejection_ends_the_process_with_its_reason() {
    let app = app_with_customers().await;
    let staff = StaffSession::start(&app).await;
    let browser = Browser::new(&app);
    let created = create(
        &app,
        &simple_body(&[("cust-a", 1, "FES"), ("cust-b", 2, "FES")]),
    )
    .await;
    let id = created["process"]["internalId"].as_str().unwrap();
    let a = &created["signatories"][0];
    let token = token_of(a);
    browser.open(&token).await;
    // Rejecting needs the identity confirmed too.
    let early = browser
        .post(&token, "rechazar", &[("motivo", "No estoy de acuerdo")])
        .await;
    assert_eq!(early.status, 400);
    browser
        .post(&token, "codigo", &[("rut", &rut(RUT_A))])
        .await;
    let code = staff.code(id, a["internalId"].as_str().unwrap()).await;
    browser
        .post(&token, "verificar", &[("codigo", &code)])
        .await;
    let short = browser.post(&token, "rechazar", &[("motivo", "no")]).await;
    assert_eq!(short.status, 400);
    assert!(short.html.contains("motivo"));
    let rejected = browser
        .post(
            &token,
            "rechazar",
            &[("motivo", "El monto del arriendo no es el acordado")],
        )
        .await;
    assert_eq!(rejected.status, 303);
    let location = rejected.location.unwrap();
    assert!(location.contains("result=REJECTED"), "{location}");

    let now = detail(&app, id).await;
    assert_eq!(
        now["process"]["state"],
        json!({"id": 5, "name": "REJECTED"})
    );
    assert_eq!(
        now["process"]["rejectionReason"],
        "El monto del arriendo no es el acordado"
    );
    assert_eq!(
        now["signatories"][0]["state"],
        json!({"id": 3, "name": "REJECTED"})
    );
    assert_eq!(
        now["signatories"][1]["state"],
        json!({"id": 1, "name": "PENDING"})
    );
    let events = signature_events(&app, id);
    assert_eq!(event_names(&events), ["SIGNATURE_REJECTED"]);
    assert_eq!(
        events[0].0["rejection"]["reason"],
        "El monto del arriendo no es el acordado"
    );
    assert_eq!(events[0].0["signatory"]["state"]["id"], 3);
    // The next signatory's link is closed; so is the first one's.
    let b = token_of(&created["signatories"][1]);
    assert_eq!(browser.open(&b).await.status, 410);
    let retry = browser.post(&token, "firmar", &[("acepto", "si")]).await;
    assert_eq!(retry.status, 410);
    app.delete(
        "/signature/cancel",
        Some(&json!({"process": {"internalId": id}})),
    )
    .await
    .expect(400, "SIGNATURE_STATE_CONFLICT");
}

#[tokio::test(flavor = "multi_thread")]
async fn processes_expire_by_the_sandbox_clock() {
    let app = app_with_customers().await;
    let browser = Browser::new(&app);
    let default = create(&app, &simple_body(&[("cust-a", 1, "FES")])).await;
    let mut longer = simple_body(&[("cust-b", 1, "FES")]);
    longer["process"]["expirationDays"] = json!(45);
    let longer = create(&app, &longer).await;
    let id = default["process"]["internalId"].as_str().unwrap();
    let long_id = longer["process"]["internalId"].as_str().unwrap();

    app.post("/sandbox/clock", &json!({"advanceDays": 31}))
        .await
        .expect(200, "SANDBOX_CLOCK_OK");
    // The lookup meets the expired process and expires it (with its event), once.
    let now = detail(&app, id).await;
    assert_eq!(now["process"]["state"], json!({"id": 6, "name": "EXPIRED"}));
    detail(&app, id).await;
    let events = signature_events(&app, id);
    assert_eq!(event_names(&events), ["SIGNATURE_EXPIRED"]);
    assert_eq!(events[0].0["sequence"], 1);
    // The page says so; no step is possible.
    let token = token_of(&default["signatories"][0]);
    let page = browser.open(&token).await;
    assert_eq!(page.status, 410);
    assert!(page.html.contains("expirado"));
    assert_eq!(
        browser
            .post(&token, "codigo", &[("rut", &rut(RUT_A))])
            .await
            .status,
        410
    );
    app.delete(
        "/signature/cancel",
        Some(&json!({"process": {"internalId": id}})),
    )
    .await
    .expect(400, "SIGNATURE_STATE_CONFLICT");

    // The one given 45 days is still open; its page expires it once its time comes.
    assert_eq!(detail(&app, long_id).await["process"]["state"]["id"], 1);
    app.post("/sandbox/clock", &json!({"advanceDays": 15}))
        .await
        .expect(200, "SANDBOX_CLOCK_OK");
    let long_token = token_of(&longer["signatories"][0]);
    assert_eq!(browser.open(&long_token).await.status, 410);
    assert_eq!(
        event_names(&signature_events(&app, long_id)),
        ["SIGNATURE_EXPIRED"]
    );
    assert_eq!(detail(&app, long_id).await["process"]["state"]["id"], 6);

    // The periodic sweep finds what no page or lookup met (here called directly rather than
    // waiting for its minute).
    let unseen = create(&app, &simple_body(&[("cust-c", 1, "FES")])).await;
    let unseen_id = unseen["process"]["internalId"].as_str().unwrap();
    app.post("/sandbox/clock", &json!({"advanceDays": 31}))
        .await
        .expect(200, "SANDBOX_CLOCK_OK");
    let state = &app.running.state;
    let wall = state.clock.now();
    let act = mandato::esign::ceremony::Act {
        now: wall,
        business_now: state.calendar.now(wall),
        ip: None,
        user_agent: None,
        sandbox: true,
    };
    let swept = state
        .store()
        .write(|tx| mandato::esign::ceremony::sweep(tx, &act, 100))
        .unwrap();
    assert_eq!(swept, 1, "only the process nobody looked at was still open");
    assert_eq!(
        event_names(&signature_events(&app, unseen_id)),
        ["SIGNATURE_EXPIRED"]
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn cancel_then_410_and_other_commerces_see_nothing() {
    let mut app = app_with_customers().await;
    let staff = StaffSession::start(&app).await;
    let browser = Browser::new(&app);
    let created = create(&app, &simple_body(&[("cust-a", 1, "FES")])).await;
    let id = created["process"]["internalId"]
        .as_str()
        .unwrap()
        .to_string();
    let cancel = json!({"process": {"internalId": id}});

    // Bad bodies, unknown and foreign processes.
    let reply = app.delete("/signature/cancel", Some(&json!({}))).await;
    reply.expect(400, "VALIDATION_ERROR");
    assert_eq!(reply.error_fields(), ["process"]);
    let reply = app
        .delete("/signature/cancel", Some(&json!({"process": {}})))
        .await;
    assert_eq!(reply.error_fields(), ["process.internalId"]);
    app.delete(
        "/signature/cancel",
        Some(&json!({"process": {"internalId": "sig_nope"}})),
    )
    .await
    .expect(404, "SIGNATURE_PROCESS_NOT_FOUND");
    app.act_as(OTHER_COMMERCE).await;
    app.get(&format!("/signature/internalId/{id}"))
        .await
        .expect(404, "SIGNATURE_PROCESS_NOT_FOUND");
    app.delete("/signature/cancel", Some(&cancel))
        .await
        .expect(404, "SIGNATURE_PROCESS_NOT_FOUND");
    app.act_as(COMMERCE).await;

    let reply = app.delete("/signature/cancel", Some(&cancel)).await;
    reply.expect(200, "SIGNATURE_CANCEL_OK");
    assert_eq!(reply.body["payload"], json!({}));
    app.delete("/signature/cancel", Some(&cancel))
        .await
        .expect(410, "SIGNATURE_ALREADY_CANCELLED");
    let now = detail(&app, &id).await;
    assert_eq!(
        now["process"]["state"],
        json!({"id": 4, "name": "CANCELLED"})
    );

    // Documents and the audit trail are kept; the event went out; the link is closed.
    let doc = now["documents"][0]["internalId"].as_str().unwrap();
    let original = staff.document(&id, doc, "original").await;
    assert_eq!(now["documents"][0]["sha256"], sha256(&original));
    let trail = staff.process(&id).await["audit"].clone();
    assert_eq!(trail["valid"], true);
    assert_eq!(
        trail["records"].as_array().unwrap().last().unwrap()["action"],
        "CANCELLED"
    );
    assert_eq!(
        event_names(&signature_events(&app, &id)),
        ["SIGNATURE_CANCELLED"]
    );
    let token = token_of(&created["signatories"][0]);
    let page = browser.open(&token).await;
    assert_eq!(page.status, 410);
    assert!(page.html.contains("cancel"));

    // Staff list the processes, filtered by state.
    let listed: Value = staff
        .get("/signatures?state=CANCELLED")
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(listed["payload"]["items"][0]["internalId"], id.as_str());
    assert_eq!(listed["payload"]["items"][0]["commerce"], COMMERCE);
    let bad = staff.get("/signatures?state=NOPE").await;
    assert_eq!(bad.status(), 400);
}

#[tokio::test(flavor = "multi_thread")]
async fn events_reach_a_real_receiver_signed_with_a_sequence_per_process() {
    let s = setup(fast_delivery()).await;
    let staff = StaffSession::start(&s.app).await;
    let browser = Browser::new(&s.app);
    let mut body = simple_body(&[("cust-1", 1, "FES")]);
    body["urls"]["webhook"] = json!(s.receiver.url("/hooks/signature"));
    let signed = create(&s.app, &body).await;
    // Another process needs another id: the same request again is answered as the first.
    body["process"]["externalProcessId"] = json!("P-002");
    let cancelled = create(&s.app, &body).await;
    let signed_id = signed["process"]["internalId"].as_str().unwrap();
    let cancelled_id = cancelled["process"]["internalId"].as_str().unwrap();

    sign_as(
        &browser,
        &staff,
        signed_id,
        &signed["signatories"][0],
        "12.345.678-5",
        None,
    )
    .await;
    s.app
        .delete(
            "/signature/cancel",
            Some(&json!({"process": {"internalId": cancelled_id}})),
        )
        .await
        .expect(200, "SIGNATURE_CANCEL_OK");

    let got = s.receiver.wait_for(3, Duration::from_secs(10)).await;
    let mut seen = Vec::new();
    for r in &got {
        assert!(standard_signature_valid(r, &s.secret), "{:?}", r.headers);
        assert!(body_signature_valid(r, &s.secret), "{}", r.body);
        let b = r.json();
        assert_eq!(r.header("webhook-id"), b["eventId"].as_str().unwrap());
        seen.push((
            b["process"]["internalId"].as_str().unwrap().to_string(),
            b["sequence"].as_i64().unwrap(),
            b["event"].as_str().unwrap().to_string(),
        ));
    }
    seen.sort();
    let mut expected = vec![
        (signed_id.to_string(), 1, "SIGNATORY_SIGNED".to_string()),
        (signed_id.to_string(), 2, "SIGNATURE_COMPLETED".to_string()),
        (
            cancelled_id.to_string(),
            1,
            "SIGNATURE_CANCELLED".to_string(),
        ),
    ];
    expected.sort();
    assert_eq!(seen, expected);
}

#[tokio::test(flavor = "multi_thread")]
async fn signing_pages_escape_what_they_show_and_refuse_unknown_links() {
    let app = app_with_customers().await;
    let browser = Browser::new(&app);
    let mut body = simple_body(&[("cust-a", 1, "FES")]);
    body["process"]["processName"] = json!("<script>alert('x')</script> & \"co\"");
    body["documents"][0]["documentName"] = json!("<b>contrato</b>.pdf");
    let created = create(&app, &body).await;
    let page = browser.open(&token_of(&created["signatories"][0])).await;
    assert_eq!(page.status, 200);
    assert!(!page.html.contains("<script>alert"));
    assert!(
        page.html
            .contains("&lt;script&gt;alert('x')&lt;/script&gt; &amp; &quot;co&quot;")
    );
    assert!(page.html.contains("&lt;b&gt;contrato&lt;/b&gt;.pdf"));
    assert!(page.html.contains("name=\"viewport\""));
    assert_eq!(browser.open("AAAAAAAAAAAAAAAAAAAAAA").await.status, 404);
    assert_eq!(browser.open("not%20a%20token").await.status, 404);
    assert_eq!(
        browser
            .post("AAAAAAAAAAAAAAAAAAAAAA", "firmar", &[("acepto", "si")])
            .await
            .status,
        404
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_seal_owed_when_the_engine_stopped_is_finished_at_the_next_start() {
    let app = app_with_customers().await;
    let staff = StaffSession::start(&app).await;
    let browser = Browser::new(&app);
    let created = create(&app, &simple_body(&[("cust-a", 1, "FES")])).await;
    let id = created["process"]["internalId"]
        .as_str()
        .unwrap()
        .to_string();
    let signer = &created["signatories"][0];
    let token = token_of(signer);
    browser.open(&token).await;
    let sent = browser
        .post(&token, "codigo", &[("rut", &rut(RUT_A))])
        .await;
    assert_eq!(sent.status, 303, "{}", sent.html);
    let code = staff
        .code(&id, signer["internalId"].as_str().unwrap())
        .await;
    let verified = browser
        .post(&token, "verificar", &[("codigo", &code)])
        .await;
    assert_eq!(verified.status, 303, "{}", verified.html);

    // The last signature commits and the engine stops before sealing: the signature's own
    // transaction, run without the seal that follows it.
    let state = &app.running.state;
    let now = app.clock_now();
    let act = mandato::esign::ceremony::Act {
        now,
        business_now: state.calendar.now(now),
        ip: Some("127.0.0.1"),
        user_agent: None,
        sandbox: true,
    };
    let signed = state
        .store()
        .write(|tx| mandato::esign::ceremony::sign(tx, &token, &act, true))
        .unwrap();
    assert!(matches!(signed, Ok(ref s) if s.completed));
    let owed = detail(&app, &id).await;
    assert_eq!(
        owed["process"]["state"],
        json!({"id": 2, "name": "IN_PROGRESS"})
    );
    assert_eq!(
        owed["signatories"][0]["state"],
        json!({"id": 2, "name": "SIGNED"})
    );
    assert_eq!(owed["documents"][0]["sealedSha256"], Value::Null);
    assert_eq!(
        event_names(&signature_events(&app, &id)),
        ["SIGNATORY_SIGNED"]
    );
    // Every signature is in: its expiry passing does not undo that.
    app.post("/sandbox/clock", &json!({"advanceDays": 31}))
        .await
        .expect(200, "SANDBOX_CLOCK_OK");
    let still = detail(&app, &id).await;
    assert_eq!(still["process"]["state"]["name"], "IN_PROGRESS");

    // At the next start the sweep seals it: COMPLETED, the sealed hash, the event.
    let mut app = app.restarted(Options::default()).await;
    app.login().await;
    let mut finished = Value::Null;
    for _ in 0..200 {
        finished = detail(&app, &id).await;
        if finished["process"]["state"]["name"] == "COMPLETED" {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(
        finished["process"]["state"],
        json!({"id": 3, "name": "COMPLETED"})
    );
    let sealed_sha = finished["documents"][0]["sealedSha256"]
        .as_str()
        .expect("a sealed hash")
        .to_string();
    let events = signature_events(&app, &id);
    assert_eq!(
        event_names(&events),
        ["SIGNATORY_SIGNED", "SIGNATURE_COMPLETED"]
    );
    assert_eq!(
        events[1].0["documents"][0]["sealedSha256"].as_str(),
        Some(sealed_sha.as_str())
    );
    // The signatory's page now serves the sealed document.
    let sealed = app
        .client
        .get(format!("{}/sign/{token}/documentos/1", app.base))
        .send()
        .await
        .unwrap()
        .bytes()
        .await
        .unwrap()
        .to_vec();
    assert_eq!(sha256(&sealed), sealed_sha);
    assert!(page_contents(&sealed).len() >= 2, "signature page appended");
}
