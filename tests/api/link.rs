//! The Magic Link pages (CONTRACT 6, seed 1.3 and 1.7): the activation page and its forms,
//! enrolment by card and by EPAC (with its PDF), links that are unknown, expired, used or
//! cancelled, and the payment portal with approvals, declines and repeated payments.

use std::collections::HashMap;

use base64::Engine;
use chrono::{Datelike, Duration, NaiveDate, Weekday};
use mandato::domain::holidays::HolidayCalendar;
use reqwest::StatusCode;
use reqwest::redirect::Policy;
use serde_json::{Value, json};

use crate::helpers::*;

const CARD_OK: &str = "4111111111111111";
pub(crate) const CARD_OK_4242: &str = "4242424242424242";
/// Luhn-valid and ending 0002: the simulated acquirer declines it (INSUFFICIENT_FUNDS).
pub(crate) const CARD_DECLINED: &str = "4000000000000002";

/// A browser that does not follow redirects, so the 303s can be checked.
fn browser() -> reqwest::Client {
    reqwest::Client::builder()
        .redirect(Policy::none())
        .build()
        .unwrap()
}

pub struct Page {
    pub status: StatusCode,
    pub location: Option<String>,
    pub headers: reqwest::header::HeaderMap,
    pub html: String,
}

pub async fn get_page(url: &str) -> Page {
    let response = browser().get(url).send().await.expect("page");
    page_of(response).await
}

pub async fn post_form(url: &str, fields: &[(&str, &str)]) -> Page {
    let response = browser()
        .post(url)
        .header("Content-Type", "application/x-www-form-urlencoded")
        .header("User-Agent", "link-test/1.0")
        .body(form_body(fields))
        .send()
        .await
        .expect("form posted");
    page_of(response).await
}

fn form_body(fields: &[(&str, &str)]) -> String {
    url::form_urlencoded::Serializer::new(String::new())
        .extend_pairs(fields)
        .finish()
}

async fn page_of(response: reqwest::Response) -> Page {
    let status = response.status();
    let headers = response.headers().clone();
    let location = headers
        .get("location")
        .map(|l| l.to_str().unwrap().to_string());
    Page {
        status,
        location,
        headers,
        html: response.text().await.unwrap(),
    }
}

/// The `termsSha256` the page put in the form of `method`.
pub fn terms_sha(html: &str, method: i64) -> String {
    let marker = format!("name=\"method\" value=\"{method}\">");
    let at = html.find(&marker).expect("the method's form");
    let rest = &html[at..];
    let start = rest.find("name=\"termsSha256\" value=\"").unwrap() + 26;
    rest[start..start + 64].to_string()
}

pub(crate) struct Linked {
    pub app: TestApp,
    /// Absolute URL of the Magic Link.
    pub link: String,
    pub external_id: String,
    pub internal_id: String,
}

impl Linked {
    pub async fn lookup(&self) -> Value {
        self.app.mandate(&self.external_id).await
    }

    pub fn events(&self, kind: &str) -> Vec<Value> {
        self.app
            .events_of(&self.internal_id)
            .into_iter()
            .filter(|e| e["event"] == kind)
            .collect()
    }

    /// How many charges the simulated acquirer holds for portal payments of an installment.
    fn portal_charges(&self, installment: &str) -> i64 {
        self.app
            .running
            .state
            .store()
            .read(|conn| {
                Ok(mandato::store::sim_acquirer::charges_per_key_prefix(
                    conn,
                    &format!("portal-{installment}-"),
                )?)
            })
            .unwrap()
    }

    pub fn pay_url(&self, installment: &str) -> String {
        format!("{}/pay/{installment}", self.link)
    }

    /// The page's path, as the pages write it in their redirects.
    pub fn path(&self) -> String {
        self.link.trim_start_matches(&self.app.base).to_string()
    }
}

pub(crate) async fn linked(body: impl FnOnce(&TestApp) -> Value) -> Linked {
    linked_with(Options::default(), body).await
}

async fn linked_with(options: Options, body: impl FnOnce(&TestApp) -> Value) -> Linked {
    let mut app = spawn_app_with(options).await;
    app.login().await;
    app.create_customer("cust-001", "12.345.678-5").await;
    let body = body(&app);
    let payload = app.create_mandate(&body).await;
    Linked {
        link: payload["mandate"]["magicLink"]
            .as_str()
            .unwrap()
            .to_string(),
        external_id: payload["mandate"]["id"].as_str().unwrap().to_string(),
        internal_id: payload["mandate"]["internalId"]
            .as_str()
            .unwrap()
            .to_string(),
        app,
    }
}

async fn subscription() -> Linked {
    linked(|app| subscription_body(app, "cust-001", "GYM-1", 3)).await
}

async fn card_activation(l: &Linked, number: &str) -> Page {
    let page = get_page(&l.link).await;
    let sha = terms_sha(&page.html, 3);
    post_form(
        &l.link,
        &[
            ("method", "3"),
            ("number", number),
            ("expiry", "12/35"),
            ("cvv", "123"),
            ("accept", "1"),
            ("termsSha256", &sha),
        ],
    )
    .await
}

/// Every file of the app's data directory (database, WAL), as bytes.
fn data_files(app: &TestApp) -> Vec<(String, Vec<u8>)> {
    let mut files = Vec::new();
    let mut dirs = vec![app.dir.path().to_path_buf()];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(dir).unwrap().flatten() {
            let path = entry.path();
            if path.is_dir() {
                dirs.push(path);
            } else if let Ok(bytes) = std::fs::read(&path) {
                files.push((path.display().to_string(), bytes));
            }
        }
    }
    files
}

fn contains(haystack: &[u8], needle: &str) -> bool {
    haystack
        .windows(needle.len())
        .any(|w| w == needle.as_bytes())
}

#[tokio::test(flavor = "multi_thread")]
async fn the_page_shows_the_commerce_the_mandate_and_a_form_per_method() {
    let l = subscription().await;
    let page = get_page(&l.link).await;
    assert_eq!(page.status, StatusCode::OK);
    assert!(
        page.headers["content-type"]
            .to_str()
            .unwrap()
            .starts_with("text/html")
    );
    assert_eq!(page.headers["cache-control"], "no-store");
    assert_eq!(page.headers["referrer-policy"], "no-referrer");
    let html = &page.html;
    assert!(html.contains("lang=\"es-CL\""));
    assert!(html.contains("Comercio de prueba"));
    assert!(html.contains("Plan mensual") && html.contains("Gimnasio"));
    assert!(html.contains("$29.990"), "CLP amounts as pesos");
    assert!(html.contains("mensual, 3 cuotas"));
    assert!(html.contains("Calendario de cuotas"));
    assert_eq!(
        html.matches("<tr><td>").count(),
        3,
        "one row per installment"
    );
    // subscription_body allows 3, 4 and 5: one form for each, and no other.
    let action = format!("action=\"{}\"", l.path());
    assert_eq!(html.matches(&action).count(), 3);
    for method in [3, 4, 5] {
        assert!(html.contains(&format!("name=\"method\" value=\"{method}\"")));
        assert_eq!(terms_sha(html, method).len(), 64);
    }
    assert!(!html.contains("name=\"method\" value=\"6\""));
    for field in [
        "number",
        "expiry",
        "cvv",
        "bankCode",
        "accountType",
        "accountNumber",
        "holderRut",
        "accept",
    ] {
        assert!(html.contains(&format!("name=\"{field}\"")), "{field}");
    }
    assert!(html.contains("BancoEstado") && html.contains("Cuenta corriente"));
    // Nothing is due yet: no payment forms.
    assert!(!html.contains("Pagar ahora"));
}

#[tokio::test(flavor = "multi_thread")]
async fn the_schedule_names_the_charge_day_of_an_installment_due_on_a_weekend() {
    let calendar = HolidayCalendar::new([]);
    let options = Options {
        business_days: mandato::config::BusinessDays::Chile,
        ..Options::default()
    };
    // A Saturday whose Friday and Monday are business days, a few days ahead.
    let mut saturday = None;
    let l = linked_with(options, |app| {
        let day = (3..60)
            .map(|n| app.today() + Duration::days(n))
            .find(|d| {
                d.weekday() == Weekday::Sat
                    && calendar.is_business_day(*d - Duration::days(1))
                    && calendar.is_business_day(*d + Duration::days(2))
            })
            .unwrap();
        saturday = Some(day);
        let days = (day - app.today()).num_days();
        dynamic_body(
            app,
            "cust-001",
            "GYM-1",
            &[("c1", 5000, days - 1), ("c2", 5000, days)],
        )
    })
    .await;
    let saturday = saturday.unwrap();
    let (friday, monday) = (saturday - Duration::days(1), saturday + Duration::days(2));
    let date = |d: NaiveDate| d.format("%d-%m-%Y").to_string();

    let html = get_page(&l.link).await.html;
    // The Saturday's installment shows its due date and the Monday it is charged on.
    let moved = format!(
        "<td>{} (se cobra el lunes {})</td>",
        date(saturday),
        date(monday)
    );
    assert!(html.contains(&moved), "{moved} in {html}");
    // The Friday's is charged on its due date: the date alone.
    assert!(
        html.contains(&format!("<td>{}</td>", date(friday))),
        "{html}"
    );
    assert_eq!(html.matches("se cobra el").count(), 1, "{html}");

    // The merchant's API says the same.
    let lookup = l.lookup().await;
    let second = &lookup["installments"][1];
    assert_eq!(second["installmentDueDate"], saturday.to_string());
    assert_eq!(second["chargeDate"], monday.to_string());
}

#[tokio::test(flavor = "multi_thread")]
async fn values_are_escaped() {
    let l = linked(|app| {
        changed(
            &subscription_body(app, "cust-001", "GYM-1", 1),
            &[
                ("/mandate/name", Some(json!("<script>alert(1)</script>"))),
                ("/mandate/detail", Some(json!("\"quoted\" & 'single'"))),
            ],
        )
    })
    .await;
    let html = get_page(&l.link).await.html;
    assert!(!html.contains("<script>"));
    assert!(html.contains("&lt;script&gt;alert(1)&lt;/script&gt;"));
    // Attribute values are always double-quoted, so a single quote needs no escape.
    assert!(html.contains("&quot;quoted&quot; &amp; 'single'"));
}

#[tokio::test(flavor = "multi_thread")]
async fn a_card_activates_the_mandate_and_only_its_last_four_are_kept() {
    let l = subscription().await;
    let page = card_activation(&l, "4111 1111 1111 1111").await;
    assert_eq!(page.status, StatusCode::SEE_OTHER, "{}", page.html);
    assert_eq!(
        page.location.as_deref(),
        Some("https://merchant.example/return")
    );

    let found = l.lookup().await;
    assert_eq!(
        found["mandate"]["state"],
        json!({"id": 2, "name": "ACTIVE"})
    );
    assert_eq!(found["paymentMethod"]["id"], 3);
    let instrument = found["paymentMethod"]["instrument"].as_str().unwrap();
    assert!(instrument.ends_with("1111"), "{instrument}");
    assert!(!found.to_string().contains(CARD_OK));

    let activations = l.events("activation");
    assert_eq!(activations.len(), 1);
    let event = &activations[0];
    assert_eq!(event["product"]["state"]["name"], "ACTIVE");
    assert!(
        event["paymentMethod"]["instrument"]
            .as_str()
            .unwrap()
            .ends_with("**** 1111")
    );
    assert_eq!(event["fileBase64"], Value::Null, "cards have no document");

    // Not in the instruments, the events, nor anywhere in the database files.
    let stored: Vec<String> = l
        .app
        .running
        .state
        .store()
        .read(|db| {
            let mut rows = Vec::new();
            for sql in [
                "SELECT processor_token || '|' || COALESCE(brand, '') || '|' || last4 FROM instruments",
                "SELECT body FROM events",
                "SELECT terms || COALESCE(user_agent, '') FROM acceptances",
            ] {
                rows.extend(db.query_map(sql, &[], |r| r.get::<String>(0))?);
            }
            Ok(rows)
        })
        .unwrap();
    assert!(stored.len() >= 3);
    assert!(stored[0].ends_with("|1111"), "{}", stored[0]);
    for row in &stored {
        assert!(!row.contains(CARD_OK), "{row}");
    }
    for (path, bytes) in data_files(&l.app) {
        assert!(!contains(&bytes, CARD_OK), "the card number is in {path}");
    }

    // The success page when the merchant gave no callback is the link itself.
    let page = get_page(&l.link).await;
    assert_eq!(page.status, StatusCode::OK);
    assert!(page.html.contains("ya está activo"));
    assert!(page.html.contains("**** 1111"));
    assert!(
        !page.html.contains(&format!("action=\"{}\"", l.path())),
        "no activation forms"
    );
    assert!(
        page.html
            .contains(&format!("action=\"{}/tarjeta\"", l.path())),
        "only the card change"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn without_a_callback_the_customer_lands_on_a_success_page() {
    let l = linked(|app| {
        changed(
            &subscription_body(app, "cust-001", "GYM-1", 1),
            &[("/urls/callback", None)],
        )
    })
    .await;
    let page = card_activation(&l, CARD_OK).await;
    assert_eq!(page.status, StatusCode::SEE_OTHER);
    let location = page.location.unwrap();
    assert_eq!(location, format!("{}?activado=1", l.path()));
    let page = get_page(&format!("{}{location}", l.app.base)).await;
    assert_eq!(page.status, StatusCode::OK);
    assert!(page.html.contains("Su mandato quedó activo"));
}

#[tokio::test(flavor = "multi_thread")]
async fn each_problem_is_shown_beside_its_field_and_nothing_is_saved() {
    let l = subscription().await;
    let page = post_form(
        &l.link,
        &[
            ("method", "3"),
            ("number", "4111111111111112"),
            ("expiry", "01/20"),
            ("cvv", "12"),
        ],
    )
    .await;
    assert_eq!(page.status, StatusCode::BAD_REQUEST);
    let html = &page.html;
    for (field, message) in [
        ("number", "El número de tarjeta no es válido"),
        ("expiry", "La tarjeta está vencida"),
        ("cvv", "3 o 4 dígitos"),
        ("accept", "Debe aceptar los términos"),
    ] {
        let id = format!("id=\"m3-{field}-err\"");
        let at = html
            .find(&id)
            .unwrap_or_else(|| panic!("no error for {field}"));
        assert!(
            html[at..at + 200].contains(message),
            "{field}: {}",
            &html[at..at + 200]
        );
        assert!(html.contains(&format!("aria-describedby=\"m3-{field}-err\"")));
    }
    // The expiry is kept; the card number and CVV are not written back.
    assert!(html.contains("value=\"01/20\""));
    assert!(!html.contains("4111111111111112"));
    assert!(!html.contains("value=\"12\""));

    // A bank form's problems, with its values kept.
    let page = post_form(
        &l.link,
        &[
            ("method", "5"),
            ("bankCode", "999"),
            ("accountType", "GOLD"),
            ("accountNumber", "12"),
            ("holderRut", "12.345.678-9"),
            ("accept", "1"),
        ],
    )
    .await;
    assert_eq!(page.status, StatusCode::BAD_REQUEST);
    for field in ["bankCode", "accountType", "accountNumber", "holderRut"] {
        assert!(
            page.html.contains(&format!("id=\"m5-{field}-err\"")),
            "{field}"
        );
    }
    assert!(page.html.contains("value=\"12.345.678-9\""));

    // A method the mandate does not allow.
    let page = post_form(&l.link, &[("method", "6"), ("accept", "1")]).await;
    assert_eq!(page.status, StatusCode::BAD_REQUEST);

    let found = l.lookup().await;
    assert_eq!(found["mandate"]["state"]["name"], "PENDING");
    assert_eq!(found["paymentMethod"], Value::Null);
    assert!(l.app.events_of(&l.internal_id).is_empty());
}

#[tokio::test(flavor = "multi_thread")]
async fn epac_sends_the_mandate_document_with_the_account_masked() {
    let l = linked(|app| {
        changed(
            &subscription_body(app, "cust-001", "GYM-1", 3),
            &[("/paymentMethods", Some(json!([6])))],
        )
    })
    .await;
    let page = get_page(&l.link).await;
    let sha = terms_sha(&page.html, 6);
    let page = post_form(
        &l.link,
        &[
            ("method", "6"),
            ("bankCode", "012"),
            ("accountType", "CHECKING"),
            ("accountNumber", "123450000"),
            ("holderRut", "12.345.678-5"),
            ("accept", "on"),
            ("termsSha256", &sha),
        ],
    )
    .await;
    assert_eq!(page.status, StatusCode::SEE_OTHER, "{}", page.html);

    let found = l.lookup().await;
    assert_eq!(found["mandate"]["state"]["name"], "ACTIVE");
    assert_eq!(
        found["paymentMethod"]["instrument"],
        "BancoEstado **** 0000"
    );

    let activations = l.events("activation");
    assert_eq!(activations.len(), 1);
    let file = activations[0]["fileBase64"].as_str().expect("fileBase64");
    let pdf = base64::engine::general_purpose::STANDARD
        .decode(file)
        .unwrap();
    assert!(pdf.starts_with(b"%PDF-"));
    let doc = lopdf::Document::load_mem(&pdf).expect("the document parses");
    let pages: Vec<u32> = doc.get_pages().keys().copied().collect();
    let text = doc.extract_text(&pages).unwrap();
    let flat = text.split_whitespace().collect::<Vec<_>>().join(" ");
    for expected in [
        "**** 0000",
        "BancoEstado",
        "RUT 12.345.678-5",
        "GYM-1",
        "Comercio de prueba",
        "Código 76.123.456-0",
        "Ana Pérez Soto",
        "$29.990",
        "EPAC",
    ] {
        assert!(flat.contains(expected), "{expected} missing from {flat}");
    }
    assert!(!flat.contains("123450000"));
    assert!(!contains(&pdf, "123450000"));

    // The acceptance keeps the terms shown and the document's digest.
    let (terms_sha, document_sha, user_agent): (String, String, String) = l
        .app
        .running
        .state
        .store()
        .read(|db| {
            Ok(db.query_row(
                "SELECT terms_sha256, document_sha256, user_agent FROM acceptances",
                &[],
                |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
            )?)
        })
        .unwrap();
    assert_eq!(terms_sha, sha);
    assert!(
        flat.contains(&sha),
        "the document prints the terms' SHA-256"
    );
    use sha2::Digest;
    assert_eq!(document_sha, hex::encode(sha2::Sha256::digest(&pdf)));
    assert_eq!(user_agent, "link-test/1.0");
    for (path, bytes) in data_files(&l.app) {
        assert!(
            !contains(&bytes, "123450000"),
            "the account number is in {path}"
        );
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn unknown_expired_and_cancelled_links_get_a_clear_page() {
    let l = subscription().await;

    for token in ["AAAAAAAAAAAAAAAAAAAAAA", "no%20such", "x"] {
        let url = format!("{}/link/{token}", l.app.base);
        let page = get_page(&url).await;
        assert_eq!(page.status, StatusCode::NOT_FOUND, "{token}");
        assert!(page.html.contains("Enlace no válido"));
        let page = post_form(&url, &[("method", "3")]).await;
        assert_eq!(page.status, StatusCode::NOT_FOUND);
    }

    // Cancelled by the merchant.
    let cancel = l
        .app
        .delete(
            &format!(
                "/mandate/cancel/id/GYM-1/userId/cust-001?description={}",
                encode("cliente desiste")
            ),
            None,
        )
        .await;
    assert_eq!(cancel.status, 200, "{:?}", cancel.body);
    let page = get_page(&l.link).await;
    assert_eq!(page.status, StatusCode::GONE);
    assert!(page.html.contains("Mandato cancelado"));
    let page = card_post_without_page(&l.link).await;
    assert_eq!(page.status, StatusCode::GONE);
    assert_eq!(l.events("activation").len(), 1, "only the cancellation");
}

async fn card_post_without_page(url: &str) -> Page {
    post_form(
        url,
        &[
            ("method", "3"),
            ("number", CARD_OK),
            ("expiry", "12/35"),
            ("cvv", "123"),
            ("accept", "1"),
        ],
    )
    .await
}

#[tokio::test(flavor = "multi_thread")]
async fn an_expired_link_is_gone() {
    let mut l = subscription().await;
    l.app.advance_clock(Duration::days(31));
    let page = get_page(&l.link).await;
    assert_eq!(page.status, StatusCode::GONE);
    assert!(page.html.contains("El enlace ha expirado"));
    let page = card_post_without_page(&l.link).await;
    assert_eq!(page.status, StatusCode::GONE);
    l.app.login().await; // The session expired with the jump too.
    let found = l.app.mandate("GYM-1").await;
    assert_eq!(found["mandate"]["state"]["name"], "PENDING");
}

#[tokio::test(flavor = "multi_thread")]
async fn the_sandbox_offset_expires_links_too() {
    let l = subscription().await;
    l.app.running.state.calendar.set_offset_days(31);
    let page = get_page(&l.link).await;
    assert_eq!(page.status, StatusCode::GONE);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_second_activation_changes_nothing() {
    let l = subscription().await;
    let page = get_page(&l.link).await;
    let sha = terms_sha(&page.html, 3);
    assert_eq!(
        card_activation(&l, CARD_OK).await.status,
        StatusCode::SEE_OTHER
    );
    let page = post_form(
        &l.link,
        &[
            ("method", "3"),
            ("number", CARD_OK_4242),
            ("expiry", "12/35"),
            ("cvv", "123"),
            ("accept", "1"),
            ("termsSha256", &sha),
        ],
    )
    .await;
    assert_eq!(page.status, StatusCode::OK);
    assert!(page.html.contains("ya está activo"));
    assert_eq!(l.events("activation").len(), 1);
    let found = l.lookup().await;
    assert!(
        found["paymentMethod"]["instrument"]
            .as_str()
            .unwrap()
            .ends_with("1111")
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn terms_that_changed_since_the_page_was_shown_are_asked_again() {
    let l = subscription().await;
    let page = post_form(
        &l.link,
        &[
            ("method", "3"),
            ("number", CARD_OK),
            ("expiry", "12/35"),
            ("cvv", "123"),
            ("accept", "1"),
            ("termsSha256", &"0".repeat(64)),
        ],
    )
    .await;
    assert_eq!(page.status, StatusCode::BAD_REQUEST);
    assert!(page.html.contains("Los términos cambiaron"));
    assert_eq!(l.lookup().await["mandate"]["state"]["name"], "PENDING");
}

/// A DYNAMIC mandate with one installment due today and one next month.
pub(crate) async fn with_due_installment() -> (Linked, String, String) {
    let l = linked(|app| {
        dynamic_body(
            app,
            "cust-001",
            "DYN-1",
            &[("c1", 15000, 0), ("c2", 20000, 30)],
        )
    })
    .await;
    let found = l.lookup().await;
    let id = |n: usize| {
        found["installments"][n]["internalId"]
            .as_str()
            .unwrap()
            .to_string()
    };
    let (due, later) = (id(0), id(1));
    (l, due, later)
}

pub(crate) fn card(number: &str) -> Vec<(&str, &str)> {
    vec![
        ("method", "3"),
        ("number", number),
        ("expiry", "12/35"),
        ("cvv", "123"),
    ]
}

#[tokio::test(flavor = "multi_thread")]
async fn the_portal_pays_a_due_installment_before_activation() {
    let (l, due, later) = with_due_installment().await;
    let page = get_page(&l.link).await;
    assert_eq!(page.status, StatusCode::OK);
    assert!(page.html.contains("Cuotas por pagar"));
    assert!(
        page.html
            .contains(&format!("action=\"{}/pay/{due}\"", l.path()))
    );
    assert!(!page.html.contains(&format!("/pay/{later}")), "not due yet");
    assert!(page.html.contains("Pagar ahora $15.000"));

    let paid = post_form(&l.pay_url(&due), &card(CARD_OK_4242)).await;
    assert_eq!(paid.status, StatusCode::SEE_OTHER, "{}", paid.html);
    let location = paid.location.unwrap();
    assert_eq!(location, format!("{}?pagada={due}", l.path()));

    let found = l.lookup().await;
    assert_eq!(
        found["mandate"]["state"]["name"], "PENDING",
        "still to activate"
    );
    let installment = &found["installments"][0];
    assert_eq!(installment["state"], json!({"id": 2, "name": "PAID"}));
    let code = installment["authorizationCode"].as_str().unwrap();
    assert!(code.starts_with("AUT-"), "{code}");
    assert_eq!(installment["paymentMethodId"], 3);
    assert_eq!(found["installments"][1]["state"]["name"], "PENDING");

    let payments = l.events("payment");
    assert_eq!(payments.len(), 1);
    assert_eq!(payments[0]["installment"]["internalId"], due.as_str());
    assert_eq!(payments[0]["installment"]["state"]["name"], "PAID");
    assert_eq!(payments[0]["installment"]["authorizationCode"], code);
    assert_eq!(l.portal_charges(&due), 1);
    // Its ledger entry: the card's fee is 2.95% (443) plus IVA (84).
    let ledger = l.app.get("/ledger").await;
    let entry = &ledger.body["payload"]["items"][0];
    assert_eq!(
        (
            &entry["kind"],
            &entry["installmentInternalId"],
            &entry["amount"]
        ),
        (&json!("CHARGE"), &json!(due), &json!(15000))
    );
    assert_eq!((&entry["fee"], &entry["net"]), (&json!(527), &json!(14473)));
    assert_eq!(entry["acquirerReference"], code);

    let shown = get_page(&format!("{}{location}", l.app.base)).await;
    assert!(shown.html.contains("Pago aprobado"));
    assert!(shown.html.contains(code));
    assert!(
        !shown.html.contains("Cuotas por pagar"),
        "nothing else is due"
    );

    // Paying it again is refused before the processor is asked.
    let again = post_form(&l.pay_url(&due), &card(CARD_OK_4242)).await;
    assert_eq!(again.status, StatusCode::CONFLICT);
    assert!(again.html.contains("ya está pagada"));
    assert_eq!(l.portal_charges(&due), 1);
    assert_eq!(l.events("payment").len(), 1);

    // An installment that is not due yet, and one of another mandate, cannot be paid here.
    let early = post_form(&l.pay_url(&later), &card(CARD_OK_4242)).await;
    assert_eq!(early.status, StatusCode::CONFLICT);
    assert_eq!(l.portal_charges(&later), 0);
    let foreign = post_form(&l.pay_url("ins_nope"), &card(CARD_OK_4242)).await;
    assert_eq!(foreign.status, StatusCode::NOT_FOUND);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_declined_card_changes_nothing_and_another_card_can_pay() {
    let (l, due, _) = with_due_installment().await;
    let declined = post_form(&l.pay_url(&due), &card(CARD_DECLINED)).await;
    assert_eq!(declined.status, StatusCode::PAYMENT_REQUIRED);
    assert!(
        declined
            .html
            .contains("Pago rechazado: Fondos insuficientes.")
    );
    assert!(!declined.html.contains(CARD_DECLINED));
    assert_eq!(l.portal_charges(&due), 1);
    let found = l.lookup().await;
    assert_eq!(found["installments"][0]["state"]["name"], "PENDING");
    assert_eq!(found["installments"][0]["attempts"], 0);
    assert!(
        l.app.events_of(&l.internal_id).is_empty(),
        "no event for a portal decline"
    );

    // The next try is a new charge, not the old decline answered again.
    let paid = post_form(&l.pay_url(&due), &card(CARD_OK)).await;
    assert_eq!(paid.status, StatusCode::SEE_OTHER, "{}", paid.html);
    assert_eq!(l.portal_charges(&due), 2);
    assert_eq!(l.lookup().await["installments"][0]["state"]["name"], "PAID");
    assert_eq!(l.events("payment").len(), 1);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_double_submit_charges_once() {
    let (l, due, _) = with_due_installment().await;
    let url = l.pay_url(&due);
    let (card_a, card_b) = (card(CARD_OK), card(CARD_OK));
    let (a, b) = tokio::join!(post_form(&url, &card_a), post_form(&url, &card_b));
    let statuses = [a.status, b.status];
    assert!(statuses.contains(&StatusCode::SEE_OTHER), "{statuses:?}");
    assert_eq!(l.portal_charges(&due), 1);
    assert_eq!(l.events("payment").len(), 1);
    let ledger = l.app.get("/ledger").await;
    assert_eq!(ledger.body["payload"]["items"].as_array().unwrap().len(), 1);
}

#[tokio::test(flavor = "multi_thread")]
async fn the_portal_works_after_activation_and_not_on_cancelled_mandates() {
    let (l, due, _) = with_due_installment().await;
    let page = get_page(&l.link).await;
    let sha = terms_sha(&page.html, 3);
    let activated = post_form(
        &l.link,
        &[
            ("method", "3"),
            ("number", CARD_OK),
            ("expiry", "12/35"),
            ("cvv", "123"),
            ("accept", "1"),
            ("termsSha256", &sha),
        ],
    )
    .await;
    assert_eq!(activated.status, StatusCode::SEE_OTHER);
    let page = get_page(&l.link).await;
    assert_eq!(page.status, StatusCode::OK);
    assert!(page.html.contains("Cuotas por pagar"));

    let cancel = l
        .app
        .delete(
            &format!(
                "/mandate/cancel/id/DYN-1/userId/cust-001?description={}",
                encode("cierre de cuenta")
            ),
            None,
        )
        .await;
    assert_eq!(cancel.status, 200);
    let events_before = l.app.events_of(&l.internal_id).len();
    let refused = post_form(&l.pay_url(&due), &card(CARD_OK)).await;
    assert_eq!(refused.status, StatusCode::GONE);
    assert_eq!(l.portal_charges(&due), 0);
    assert_eq!(l.app.events_of(&l.internal_id).len(), events_before);
}

#[tokio::test(flavor = "multi_thread")]
async fn uf_installments_cannot_be_paid_online() {
    let l = linked(|app| {
        json!({
            "customer": {"userId": "cust-001"},
            "mandate": {"id": "UF-1", "type": "DYNAMIC", "name": "Arriendo",
                        "charges": {"currencyId": "CLF"}},
            "installments": [{"id": "u1", "amount": 12.5, "currencyId": "CLF",
                              "installmentDueDate": app.date_in(0)}],
        })
    })
    .await;
    let found = l.lookup().await;
    let due = found["installments"][0]["internalId"]
        .as_str()
        .unwrap()
        .to_string();
    let page = get_page(&l.link).await;
    assert!(page.html.contains("UF 12,50"));
    assert!(
        page.html
            .contains("puede pagarse en línea sin el valor de la UF")
    );
    assert!(!page.html.contains(&format!("/pay/{due}")));
    let refused = post_form(&l.pay_url(&due), &card(CARD_OK)).await;
    assert_eq!(refused.status, StatusCode::BAD_REQUEST);
    assert!(refused.html.contains("valor de la UF"));
    assert_eq!(l.portal_charges(&due), 0);
}

#[tokio::test(flavor = "multi_thread")]
async fn forms_are_limited_to_64_kib_and_must_be_forms() {
    let l = subscription().await;
    let big = "x".repeat(70 * 1024);
    let page = post_form(&l.link, &[("method", "3"), ("number", &big)]).await;
    assert_eq!(page.status, StatusCode::PAYLOAD_TOO_LARGE);
    let response = browser()
        .post(&l.link)
        .header("Content-Type", "application/json")
        .body("{}")
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::BAD_REQUEST);
    assert_eq!(l.lookup().await["mandate"]["state"]["name"], "PENDING");
}

#[tokio::test(flavor = "multi_thread")]
async fn the_pages_are_not_in_the_openapi_document() {
    let l = subscription().await;
    let doc: HashMap<String, Value> = reqwest::get(format!("{}/openapi.json", l.app.base))
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let paths = doc["paths"].as_object().unwrap();
    assert!(paths.keys().all(|p| !p.starts_with("/link")));
}

#[tokio::test(flavor = "multi_thread")]
async fn an_installment_the_engine_rejected_can_be_paid_in_the_portal() {
    let (l, due, _) = with_due_installment().await;
    // Enrolled with a card the acquirer declines, then charged by the daily run.
    let page = get_page(&l.link).await;
    let sha = terms_sha(&page.html, 3);
    let activated = post_form(
        &l.link,
        &[
            ("method", "3"),
            ("number", CARD_DECLINED),
            ("expiry", "12/35"),
            ("cvv", "123"),
            ("accept", "1"),
            ("termsSha256", &sha),
        ],
    )
    .await;
    assert_eq!(activated.status, StatusCode::SEE_OTHER);
    l.app.run_charging(l.app.today()).await;
    let found = l.lookup().await;
    assert_eq!(found["installments"][0]["state"]["name"], "REJECTED");
    assert_eq!(found["installments"][0]["attempts"], 1);
    let engine_charges = |l: &Linked| {
        l.app
            .running
            .state
            .store()
            .read(|conn| {
                Ok(mandato::store::sim_acquirer::charges_per_key_prefix(
                    conn,
                    &format!("{due}-"),
                )?)
            })
            .unwrap()
    };
    assert_eq!(engine_charges(&l), 1);

    let page = get_page(&l.link).await;
    assert!(page.html.contains("Rechazada: Fondos insuficientes."));
    assert!(page.html.contains(&format!("/pay/{due}")));
    let paid = post_form(&l.pay_url(&due), &card(CARD_OK_4242)).await;
    assert_eq!(paid.status, StatusCode::SEE_OTHER, "{}", paid.html);
    let found = l.lookup().await;
    assert_eq!(found["installments"][0]["state"]["name"], "PAID");
    assert_eq!(l.portal_charges(&due), 1);
    // The portal's key follows the engine's attempts: this is the second.
    let key = format!("portal-{due}-2");
    let held = l
        .app
        .running
        .state
        .store()
        .read(|conn| Ok(mandato::store::sim_acquirer::charge(conn, &key)?))
        .unwrap();
    assert_eq!(held.map(|h| h.result).as_deref(), Some("APPROVED"));
    let states: Vec<String> = l
        .events("payment")
        .iter()
        .map(|e| {
            e["installment"]["state"]["name"]
                .as_str()
                .unwrap()
                .to_string()
        })
        .collect();
    assert_eq!(states, ["IN_PROCESS", "REJECTED", "PAID"]);

    // The engine's retries leave a paid installment alone.
    for days in [1, 3, 7] {
        l.app
            .run_charging(l.app.today() + Duration::days(days))
            .await;
    }
    assert_eq!(engine_charges(&l), 1);
    assert_eq!(l.lookup().await["installments"][0]["state"]["name"], "PAID");
}
