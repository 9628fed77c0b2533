//! No secret in the log, none in clear in the database: a whole journey against the real
//! binary with logging at debug level (`MANDATO_LOG=debug`, its stderr kept in a file), then
//! both searched for every secret the journey used.
//!
//! Some secrets the service must keep to do its work, so they are in the database and only
//! the log is searched for them: the webhook secrets (they sign every delivery), the outbox's
//! exact event bodies (an EPAC activation carries the mandate document as `fileBase64`), the
//! uploaded signature documents (`contentBase64` decoded), the Magic Link token (the link's
//! key) and the CSRF token (compared on every staff change). Everything else (passwords, the
//! API key, the JWE and the JWT, the session cookie, the card number, its CVV and the full bank
//! account number) is kept only as a hash, a processor token or its last four digits.

use std::path::Path;
use std::time::Duration;

use base64::Engine;
use lopdf::{Dictionary, Document, Object, Stream, dictionary};
use reqwest::{Method, StatusCode};
use serde_json::{Value, json};

use crate::link::{get_page, post_form, terms_sha};
use crate::process::{Api, install, serve_logged, stop};
use crate::receiver::Receiver;

const CODE: &str = "SECRETOS-1";
const MERCHANT_PASSWORD: &str = "Merchant-Pass-q7Xw2Lz9";
const STAFF_PASSWORD: &str = "Staff-Pass-v3Nd8Rk5Tm";
/// Any card number approves in the sandbox except 0002 and 0069 endings.
const CARD: &str = "4242424242424242";
/// Four digits, so that it cannot turn up in a log or a file by chance as a whole number.
const CVV: &str = "7193";
/// Ending 0000: approved at settlement.
const ACCOUNT: &str = "5550918273640000";
/// Refusals are where a careless log line would show what was sent.
const WRONG_PASSWORD: &str = "Wrong-Pass-h6Tc1Pq8";

/// A one-page PDF whose text holds `nonce`, so that its base64 is like no other.
fn pdf_with(nonce: &str) -> Vec<u8> {
    let mut doc = Document::with_version("1.5");
    let pages_id = doc.new_object_id();
    let font = doc.add_object(dictionary! {
        "Type" => "Font", "Subtype" => "Type1", "BaseFont" => "Courier",
    });
    let text = format!("BT /F1 12 Tf 40 700 Td (Contrato {nonce}) Tj ET");
    let content = doc.add_object(Stream::new(Dictionary::new(), text.into_bytes()));
    let page = doc.add_object(dictionary! {
        "Type" => "Page",
        "Parent" => pages_id,
        "MediaBox" => vec![0.into(), 0.into(), 595.into(), 842.into()],
        "Contents" => content,
    });
    doc.objects.insert(
        pages_id,
        Object::Dictionary(dictionary! {
            "Type" => "Pages", "Count" => 1, "Kids" => vec![Object::from(page)],
            "Resources" => dictionary! { "Font" => dictionary! { "F1" => font } },
        }),
    );
    let catalog = doc.add_object(dictionary! { "Type" => "Catalog", "Pages" => pages_id });
    doc.trailer.set("Root", catalog);
    let mut out = Vec::new();
    doc.save_to(&mut out).unwrap();
    out
}

/// Whether `needle` occurs in `haystack`; a short one only as a whole, not run together with
/// letters or digits (a four-digit CVV inside a longer number or an id is not that CVV).
fn occurs(haystack: &[u8], needle: &str) -> bool {
    let needle = needle.as_bytes();
    let whole = |at: usize| {
        let before = at.checked_sub(1).map(|i| haystack[i]);
        let after = haystack.get(at + needle.len()).copied();
        [before, after]
            .into_iter()
            .flatten()
            .all(|b| !b.is_ascii_alphanumeric())
    };
    haystack
        .windows(needle.len())
        .enumerate()
        .any(|(at, w)| w == needle && (needle.len() >= 12 || whole(at)))
}

/// A staff browser: the session cookie and CSRF token of its last sign-in.
struct Staff {
    base: String,
    client: reqwest::Client,
    cookie: String,
    csrf: String,
}

impl Staff {
    async fn sign_in(base: &str, path: &str, expected: StatusCode) -> Staff {
        let client = reqwest::Client::new();
        let response = client
            .post(format!("{base}/admin/api{path}"))
            .json(&json!({"email": "owner@secretos.example", "password": STAFF_PASSWORD}))
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), expected, "{path}");
        // And a wrong password, refused.
        let refused = client
            .post(format!("{base}/admin/api/session"))
            .json(&json!({"email": "owner@secretos.example", "password": WRONG_PASSWORD}))
            .send()
            .await
            .unwrap();
        assert_eq!(refused.status(), StatusCode::FORBIDDEN);
        let cookie = response.headers()["set-cookie"]
            .to_str()
            .unwrap()
            .split(';')
            .next()
            .unwrap()
            .to_string();
        let body: Value = response.json().await.unwrap();
        Staff {
            base: base.to_string(),
            client,
            cookie,
            csrf: body["payload"]["csrfToken"].as_str().unwrap().to_string(),
        }
    }

    async fn post(&self, path: &str, body: Value) -> Value {
        let response = self
            .client
            .post(format!("{}/admin/api{path}", self.base))
            .header("cookie", &self.cookie)
            .header("x-csrf-token", &self.csrf)
            .json(&body)
            .send()
            .await
            .unwrap();
        assert!(response.status().is_success(), "{path}");
        response.json().await.unwrap()
    }
}

fn mandate_body(id: &str, methods: &[i64], receiver: &Receiver) -> Value {
    json!({"customer": {"userId": "u1"},
        "mandate": {"id": id, "type": "SUBSCRIPTION", "name": "Plan", "charges": {"currencyId": "CLP",
            "amount": 15990, "periodicity": "MONTHLY",
            "startDate": (chrono::Utc::now().date_naive() + chrono::Duration::days(10)).to_string(), "count": 3}},
        "paymentMethods": methods,
        // No callback: the page then sends the customer to the link itself, token and query.
        "urls": {"activationWebhook": receiver.url("/act"), "paymentWebhook": receiver.url("/pay")}})
}

/// Opens the Magic Link page, enrols with `fields` and follows the redirect (the token in a
/// query string); the link's token.
async fn enrol(link: &str, method: i64, fields: &[(&str, &str)]) -> String {
    let page = get_page(link).await;
    let sha = terms_sha(&page.html, method);
    let method = method.to_string();
    let mut form = vec![("method", method.as_str()), ("accept", "1")];
    form.extend_from_slice(fields);
    form.push(("termsSha256", &sha));
    let done = post_form(link, &form).await;
    assert_eq!(done.status, StatusCode::SEE_OTHER, "{}", done.html);
    let location = done.location.unwrap();
    assert!(location.contains('?'), "{location}");
    let base = link.split("/link/").next().unwrap();
    assert_eq!(
        get_page(&format!("{base}{location}")).await.status,
        StatusCode::OK
    );
    link.rsplit('/').next().unwrap().to_string()
}

fn read(path: &Path) -> Vec<u8> {
    std::fs::read(path).unwrap_or_default()
}

#[tokio::test(flavor = "multi_thread")]
async fn no_secret_reaches_the_debug_log_or_sits_in_clear_in_the_database() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    std::fs::create_dir(&data).unwrap();
    let log = dir.path().join("serve.log");
    let installation = install(&data, CODE, MERCHANT_PASSWORD);
    let receiver = Receiver::start(&installation.cert_pem, &installation.key_pem).await;
    let (mut server, base) = serve_logged(&data, &[("MANDATO_LOG", "debug")], &log);

    // The merchant: the sandbox's JWE helper, login, a customer and two mandates.
    let mut api = Api::new(base.clone(), installation.api_key.clone(), CODE);
    let jwe = api.encrypt(MERCHANT_PASSWORD).await;
    let wrong_jwe = api.encrypt(WRONG_PASSWORD).await;
    let (status, _) = api
        .try_call(
            Method::POST,
            "/login",
            Some(&json!({"username": CODE, "password": wrong_jwe})),
        )
        .await
        .unwrap();
    assert_eq!(status, StatusCode::FORBIDDEN, "a wrong password");
    let wrong_key = "mk_live_NotTheKeyButLooksLikeOne4c8e2a9f7b1d";
    let mut stranger = api.clone();
    stranger.key = wrong_key.to_string();
    let (status, _) = stranger
        .try_call(Method::GET, "/mandate/id/CARD-1", None)
        .await
        .unwrap();
    assert!(status.is_client_error(), "a wrong API key: {status}");
    api.login(MERCHANT_PASSWORD).await;
    let jwt = api.token.clone().unwrap();
    api.call(
        Method::POST,
        "/user",
        Some(json!({"customer": {"userId": "u1",
            "identificationDocument": {"type": "RUT", "number": "12.345.678-5"},
            "personalInformation": {"firstName": "Ana", "lastName": "Pérez", "secondLastName": "Soto"},
            "contacts": {"email": "ana@example.cl"}}})),
    )
    .await;
    let card_mandate = api
        .call(
            Method::POST,
            "/mandate",
            Some(mandate_body("CARD-1", &[3], &receiver)),
        )
        .await;
    let epac_mandate = api
        .call(
            Method::POST,
            "/mandate",
            Some(mandate_body("EPAC-1", &[6], &receiver)),
        )
        .await;

    // The customer enrols a card on one Magic Link page and a bank account (EPAC) on the other.
    let card_token = enrol(
        card_mandate["payload"]["mandate"]["magicLink"]
            .as_str()
            .unwrap(),
        3,
        &[("number", CARD), ("expiry", "12/35"), ("cvv", CVV)],
    )
    .await;
    let epac_token = enrol(
        epac_mandate["payload"]["mandate"]["magicLink"]
            .as_str()
            .unwrap(),
        6,
        &[
            ("bankCode", "012"),
            ("accountType", "CHECKING"),
            ("accountNumber", ACCOUNT),
            ("holderRut", "12.345.678-5"),
        ],
    )
    .await;

    // A signature process with its document.
    let nonce = uuid::Uuid::new_v4().simple().to_string();
    let document = base64::engine::general_purpose::STANDARD.encode(pdf_with(&nonce));
    api.call(
        Method::POST,
        "/signature",
        Some(json!({
            "process": {"processName": "Contrato", "externalProcessId": "P-1", "requestUser": "ops@merchant.example"},
            "signatories": [{"userId": "u1", "order": 1, "type": "FES"}],
            "documents": [{"documentName": "contrato.pdf", "contentBase64": document,
                           "signatureData": [{"signatory": {"userId": "u1"}, "mode": "LAST_PAGE"}]}],
            "urls": {"callback": "https://merchant.example/firmas", "webhook": receiver.url("/firma")}})),
    )
    .await;

    // Staff: first-visit setup, a sign-in, and a webhook secret rotation.
    let setup = Staff::sign_in(&base, "/setup", StatusCode::CREATED).await;
    let staff = Staff::sign_in(&base, "/session", StatusCode::OK).await;
    let rotated = staff
        .post(
            &format!("/commerces/{CODE}/rotate-secret"),
            json!({"overlapHours": 1}),
        )
        .await;
    let new_secret = rotated["payload"]["webhookSecret"]
        .as_str()
        .unwrap()
        .to_string();
    // A cancellation signed with both secrets, so that the rotated one is used too.
    api.call(
        Method::DELETE,
        "/mandate/cancel/id/CARD-1/userId/u1",
        Some(json!({"description": "fin"})),
    )
    .await;

    // Both activations (the EPAC one with the document) and the cancellation arrive.
    let received = receiver.wait_for(3, Duration::from_secs(30)).await;
    let file = received
        .iter()
        .find_map(|r| r.json()["fileBase64"].as_str().map(str::to_string))
        .expect("the EPAC activation carries fileBase64");
    stop(&mut server.0);

    let session = |s: &Staff| s.cookie.split_once('=').unwrap().1.to_string();
    let middle = |s: &str| s[s.len() / 2 - 40..s.len() / 2 + 40].to_string();
    // (what, value): none of these may be in the log.
    let mut secrets: Vec<(&str, String)> = vec![
        ("merchant password", MERCHANT_PASSWORD.into()),
        ("staff password", STAFF_PASSWORD.into()),
        ("JWE", jwe.clone()),
        ("JWT", jwt.clone()),
        ("API key", installation.api_key.clone()),
        ("session cookie (setup)", session(&setup)),
        ("session cookie", session(&staff)),
        ("wrong password", WRONG_PASSWORD.into()),
        ("its JWE", wrong_jwe.clone()),
        ("wrong API key", wrong_key.into()),
        ("card number", CARD.into()),
        ("CVV", CVV.into()),
        ("account number", ACCOUNT.into()),
    ];
    let never_stored = secrets.len();
    secrets.extend([
        ("webhook secret", installation.webhook_secret.clone()),
        ("rotated webhook secret", new_secret),
        ("CSRF token (setup)", setup.csrf.clone()),
        ("CSRF token", staff.csrf.clone()),
        ("fileBase64", file.clone()),
        ("a slice of fileBase64", middle(&file)),
        ("a slice of the document", middle(&document)),
        ("Magic Link token (card)", card_token),
        ("Magic Link token (EPAC)", epac_token),
    ]);
    let logged = read(&log);
    let text = String::from_utf8_lossy(&logged);
    assert!(
        text.contains("DEBUG") && text.contains("webhook delivered"),
        "the log is at debug level and has the deliveries: {text}"
    );
    let in_log: Vec<&str> = secrets
        .iter()
        .filter(|(_, value)| occurs(&logged, value))
        .map(|(what, _)| *what)
        .collect();
    assert!(in_log.is_empty(), "in the debug log: {in_log:?}");

    let mut stored = read(&data.join("mandato.db"));
    stored.extend(read(&data.join("mandato.db-wal")));
    assert!(stored.len() > 100_000, "the database was read");
    let in_database: Vec<&str> = secrets[..never_stored]
        .iter()
        .filter(|(_, value)| occurs(&stored, value))
        .map(|(what, _)| *what)
        .collect();
    assert!(
        in_database.is_empty(),
        "in clear in the database: {in_database:?}"
    );
    // The check can see: what the service must keep is found in the same bytes.
    assert!(occurs(&stored, &installation.webhook_secret));
    assert!(stored.windows(80).any(|w| w == middle(&file).as_bytes()));
}
