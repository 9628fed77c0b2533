//! Mandates activated by an electronic signature: the customer enrols on the Magic Link, is
//! sent to sign the mandate document, and the mandate becomes ACTIVE (with its activation
//! event carrying the sealed document's hash) only when that signature completes. A rejected
//! signature leaves it PENDING with the reason, and the link starts a new process; the
//! commerce's default applies when the mandate does not say; direct activation is unchanged.

use std::time::Duration;

use base64::Engine;
use reqwest::Method;
use reqwest::StatusCode;
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

use crate::helpers::*;
use crate::link::{Page, get_page, post_form, terms_sha};

const CARD_OK: &str = "4111111111111111";
const CUSTOMER_RUT: &str = "12.345.678-5";

struct Gated {
    app: TestApp,
    link: String,
    external_id: String,
    internal_id: String,
}

impl Gated {
    async fn lookup(&self) -> Value {
        self.app.mandate(&self.external_id).await
    }

    fn activations(&self) -> Vec<Value> {
        self.app
            .events_of(&self.internal_id)
            .into_iter()
            .filter(|e| e["event"] == "activation")
            .collect()
    }

    async fn document(&self) -> Reply {
        self.app
            .get(&format!(
                "/mandate/internalId/{}/document",
                self.internal_id
            ))
            .await
    }
}

/// A subscription of cust-001 paid by card or bank account (3, 4, 5, 6), with `activation`
/// as its `mandate.activation` (absent when `None`).
async fn gated(activation: Option<&str>) -> Gated {
    let mut app = spawn_app().await;
    app.login().await;
    app.create_customer("cust-001", CUSTOMER_RUT).await;
    let mut body = subscription_body(&app, "cust-001", "GYM-1", 3);
    set(&mut body, "/paymentMethods", json!([3, 4, 5, 6]));
    if let Some(mode) = activation {
        set(&mut body, "/mandate/activation", json!(mode));
    }
    let payload = app.create_mandate(&body).await;
    Gated {
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

async fn enrol_card(g: &Gated) -> Page {
    let page = get_page(&g.link).await;
    let sha = terms_sha(&page.html, 3);
    post_form(
        &g.link,
        &[
            ("method", "3"),
            ("number", CARD_OK),
            ("expiry", "12/35"),
            ("cvv", "123"),
            ("accept", "1"),
            ("termsSha256", &sha),
        ],
    )
    .await
}

async fn enrol_epac(g: &Gated) -> Page {
    let page = get_page(&g.link).await;
    let sha = terms_sha(&page.html, 6);
    post_form(
        &g.link,
        &[
            ("method", "6"),
            ("bankCode", "012"),
            ("accountType", "CHECKING"),
            ("accountNumber", "123450000"),
            ("holderRut", CUSTOMER_RUT),
            ("accept", "1"),
            ("termsSha256", &sha),
        ],
    )
    .await
}

/// The signing token the enrolment redirected to.
fn signing_token(enrolled: &Page) -> String {
    assert_eq!(enrolled.status, StatusCode::SEE_OTHER, "{}", enrolled.html);
    let location = enrolled.location.as_deref().expect("a redirect");
    location
        .strip_prefix("/sign/")
        .unwrap_or_else(|| panic!("the customer is sent to sign, not to {location}"))
        .to_string()
}

/// The sandbox one-time code of the signatory holding `token`, as staff would read it.
fn sandbox_code(app: &TestApp, token: &str) -> String {
    app.running
        .state
        .store()
        .read(|c| mandato::store::signatures::signatory_by_token(c, token))
        .unwrap()
        .and_then(|s| s.code_plain)
        .expect("a sandbox code")
}

/// The customer's identity steps on the signing page: RUT, then the one-time code.
async fn confirm_identity(g: &Gated, token: &str) {
    let sign = format!("{}/sign/{token}", g.app.base);
    let page = get_page(&sign).await;
    assert_eq!(page.status, StatusCode::OK, "{}", page.html);
    assert!(page.html.contains("Confirme su identidad"), "{}", page.html);
    let sent = post_form(&format!("{sign}/codigo"), &[("rut", CUSTOMER_RUT)]).await;
    assert_eq!(sent.status, StatusCode::SEE_OTHER, "{}", sent.html);
    let code = sandbox_code(&g.app, token);
    let verified = post_form(&format!("{sign}/verificar"), &[("codigo", &code)]).await;
    assert_eq!(verified.status, StatusCode::SEE_OTHER, "{}", verified.html);
}

/// Signs; answers where the browser goes next.
async fn sign(g: &Gated, token: &str) -> String {
    confirm_identity(g, token).await;
    let signed = post_form(
        &format!("{}/sign/{token}/firmar", g.app.base),
        &[("acepto", "si")],
    )
    .await;
    assert_eq!(signed.status, StatusCode::SEE_OTHER, "{}", signed.html);
    signed.location.expect("back to the Magic Link")
}

async fn reject(g: &Gated, token: &str) -> String {
    confirm_identity(g, token).await;
    let rejected = post_form(
        &format!("{}/sign/{token}/rechazar", g.app.base),
        &[("motivo", "El monto no es el que acordé")],
    )
    .await;
    assert_eq!(rejected.status, StatusCode::SEE_OTHER, "{}", rejected.html);
    rejected.location.expect("back to the Magic Link")
}

fn sha256(bytes: &[u8]) -> String {
    hex::encode(Sha256::digest(bytes))
}

/// The sealed document the API returns: its bytes, after checking the envelope around them.
async fn sealed_document(g: &Gated, process_id: &str) -> Vec<u8> {
    let reply = g.document().await;
    reply.expect(200, "MANDATE_DOCUMENT_OK");
    let document = &reply.body["payload"]["document"];
    assert_eq!(document["signatureInternalId"], process_id);
    assert_eq!(document["contentType"], "application/pdf");
    assert_eq!(document["documentName"], "mandato-GYM-1.pdf");
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(document["contentBase64"].as_str().unwrap())
        .unwrap();
    assert_eq!(document["sha256"], sha256(&bytes));
    bytes
}

/// The text of a PDF, whitespace folded.
fn pdf_text(bytes: &[u8]) -> String {
    let doc = lopdf::Document::load_mem(bytes).expect("a PDF lopdf parses");
    let pages: Vec<u32> = doc.get_pages().keys().copied().collect();
    assert!(
        pages.len() >= 2,
        "the signature page and certificate follow"
    );
    let text = doc.extract_text(&pages).unwrap();
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

#[tokio::test(flavor = "multi_thread")]
async fn a_signature_gated_mandate_becomes_active_only_when_its_document_is_signed() {
    let mut g = gated(Some("SIGNATURE")).await;
    let created = g.lookup().await;
    assert_eq!(created["mandate"]["activation"], "SIGNATURE");
    assert_eq!(created["mandate"]["signature"], Value::Null);
    assert_eq!(created["mandate"]["activationFailure"], Value::Null);

    // The page says a signature step follows.
    let page = get_page(&g.link).await;
    assert!(
        page.html.contains("requiere su firma electrónica"),
        "{}",
        page.html
    );
    assert!(page.html.contains("Autorizar y continuar a la firma"));

    // Enrolling stores the card and sends the customer to sign; the mandate stays PENDING.
    let token = signing_token(&enrol_card(&g).await);
    let pending = g.lookup().await;
    assert_eq!(pending["mandate"]["state"]["name"], "PENDING");
    assert_eq!(pending["paymentMethod"], Value::Null);
    let signature = &pending["mandate"]["signature"];
    let process_id = signature["internalId"].as_str().unwrap().to_string();
    assert!(process_id.starts_with("sig_"), "{signature}");
    assert_eq!(signature["state"], json!({"id": 1, "name": "PENDING"}));
    assert_eq!(signature["sealedSha256"], Value::Null);
    assert!(g.activations().is_empty(), "no activation before signing");
    g.document()
        .await
        .expect(404, "SIGNED_MANDATE_DOCUMENT_NOT_FOUND");
    // The process is the commerce's, with the customer as its single signatory.
    let process = g
        .app
        .get(&format!("/signature/internalId/{process_id}"))
        .await;
    process.expect(200, "SIGNATURE_DETAIL_OK");
    let signatories = process.body["payload"]["signatories"].as_array().unwrap();
    assert_eq!(signatories.len(), 1);
    assert_eq!(signatories[0]["userId"], "cust-001");
    // The page now offers to continue the pending signature.
    let page = get_page(&g.link).await;
    assert!(
        page.html.contains(&format!("/sign/{token}")),
        "{}",
        page.html
    );

    // Signing completes the process and activates the mandate in the same write.
    let back = sign(&g, &token).await;
    assert!(back.starts_with(&g.link), "{back}");
    assert!(back.contains("result=SIGNED") && back.contains("completed=true"));
    let active = g.lookup().await;
    assert_eq!(active["mandate"]["state"]["name"], "ACTIVE");
    assert!(
        active["paymentMethod"]["instrument"]
            .as_str()
            .unwrap()
            .ends_with("**** 1111"),
        "{}",
        active["paymentMethod"]
    );
    let signature = &active["mandate"]["signature"];
    assert_eq!(signature["state"], json!({"id": 3, "name": "COMPLETED"}));
    let activations = g.activations();
    assert_eq!(activations.len(), 1);
    let event = &activations[0];
    assert_eq!(event["product"]["state"]["name"], "ACTIVE");
    assert_eq!(event["signedDocument"]["signatureInternalId"], process_id);
    assert_eq!(event["fileBase64"], Value::Null, "a card has no EPAC file");

    // The sealed document: the hash in the event and the lookup is the document's.
    let sealed = sealed_document(&g, &process_id).await;
    assert_eq!(event["signedDocument"]["sha256"], sha256(&sealed));
    assert_eq!(signature["sealedSha256"], sha256(&sealed));
    let text = pdf_text(&sealed);
    for expected in [
        "GYM-1",
        "Mandato de cargo en tarjeta",
        "Tarjeta de crédito",
        "VISA terminada en 1111",
        "12345678-5",
        "Certificado de firma electrónica",
    ] {
        assert!(text.contains(expected), "missing {expected:?} in {text}");
    }
    // A card is described as a card: no bank-account rows.
    for absent in ["Banco", "Tipo de cuenta", "RUT del titular", "**** 1111"] {
        assert!(!text.contains(absent), "{absent:?} in {text}");
    }
    assert!(
        !text.contains(CARD_OK),
        "the full card number never appears"
    );

    // Back on the link, the customer goes on to the merchant's callback.
    let landed = get_page(&back).await;
    assert_eq!(landed.status, StatusCode::SEE_OTHER);
    assert_eq!(
        landed.location.as_deref(),
        Some("https://merchant.example/return")
    );

    // Another commerce cannot tell the mandate or its document exist.
    g.app.act_as(OTHER_COMMERCE).await;
    g.document().await.expect(404, "MANDATE_NOT_FOUND");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_rejected_signature_leaves_it_pending_and_the_link_starts_again() {
    let g = gated(Some("SIGNATURE")).await;
    let first = signing_token(&enrol_epac(&g).await);
    let back = reject(&g, &first).await;
    assert!(back.contains("result=REJECTED"), "{back}");

    let pending = g.lookup().await;
    assert_eq!(pending["mandate"]["state"]["name"], "PENDING");
    assert_eq!(
        pending["mandate"]["signature"]["state"],
        json!({"id": 5, "name": "REJECTED"})
    );
    let failure = &pending["mandate"]["activationFailure"];
    assert_eq!(failure["reason"], "SIGNATURE_REJECTED");
    assert!(failure["at"].as_str().unwrap().ends_with('Z'), "{failure}");
    assert!(g.activations().is_empty());
    let first_process = pending["mandate"]["signature"]["internalId"].clone();

    // The page says so and offers the forms again; a new enrolment starts a new process.
    let page = get_page(&back).await;
    assert_eq!(page.status, StatusCode::OK);
    assert!(
        page.html.contains("Usted rechazó la firma"),
        "{}",
        page.html
    );
    let second = signing_token(&enrol_epac(&g).await);
    assert_ne!(first, second);
    let again = g.lookup().await;
    assert_ne!(again["mandate"]["signature"]["internalId"], first_process);
    assert_eq!(again["mandate"]["signature"]["state"]["name"], "PENDING");
    assert_eq!(again["mandate"]["activationFailure"], Value::Null);

    sign(&g, &second).await;
    let active = g.lookup().await;
    assert_eq!(active["mandate"]["state"]["name"], "ACTIVE");
    assert_eq!(
        active["paymentMethod"]["instrument"],
        "BancoEstado **** 0000"
    );
    let activations = g.activations();
    assert_eq!(activations.len(), 1);
    // EPAC: the file sent is the sealed document itself.
    let process_id = active["mandate"]["signature"]["internalId"]
        .as_str()
        .unwrap();
    let sealed = sealed_document(&g, process_id).await;
    let file = base64::engine::general_purpose::STANDARD
        .decode(activations[0]["fileBase64"].as_str().expect("fileBase64"))
        .unwrap();
    assert_eq!(file, sealed);
    assert_eq!(activations[0]["signedDocument"]["sha256"], sha256(&sealed));
    let text = pdf_text(&sealed);
    assert!(text.contains("BancoEstado **** 0000"), "{text}");
    assert!(
        !text.contains("123450000"),
        "the full account never appears"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn the_commerce_default_applies_when_the_mandate_does_not_say() {
    let mut app = spawn_app().await;
    app.login().await;
    app.create_customer("cust-001", CUSTOMER_RUT).await;

    // Staff set the commerce's default to SIGNATURE.
    let setup = app
        .client
        .post(format!("{}/admin/api/setup", app.base))
        .json(&json!({"email": "owner@merchant.example", "password": "a long password"}))
        .send()
        .await
        .unwrap();
    assert_eq!(setup.status(), 201);
    let cookie = setup.headers()["set-cookie"]
        .to_str()
        .unwrap()
        .split(';')
        .next()
        .unwrap()
        .to_string();
    let csrf = setup.json::<Value>().await.unwrap()["payload"]["csrfToken"]
        .as_str()
        .unwrap()
        .to_string();
    let staff = |method: Method, path: &str| {
        app.client
            .request(method, format!("{}/admin/api{path}", app.base))
            .header("cookie", &cookie)
            .header("x-csrf-token", &csrf)
    };
    let saved = staff(
        Method::PUT,
        &format!("/commerces/{COMMERCE}/activation-mode"),
    )
    .json(&json!({"mode": "SIGNATURE"}))
    .send()
    .await
    .unwrap();
    assert_eq!(saved.status(), 200);
    let bad = staff(
        Method::PUT,
        &format!("/commerces/{COMMERCE}/activation-mode"),
    )
    .json(&json!({"mode": "FIRMA"}))
    .send()
    .await
    .unwrap();
    assert_eq!(bad.status(), 400);
    let listed: Value = staff(Method::GET, "/commerces")
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(listed["payload"]["items"][0]["activationMode"], "SIGNATURE");

    let body = subscription_body(&app, "cust-001", "DEFAULTED", 3);
    let defaulted = app.create_mandate(&body).await;
    assert_eq!(defaulted["mandate"]["activation"], "SIGNATURE");
    let mut direct = subscription_body(&app, "cust-001", "SAID-DIRECT", 3);
    set(&mut direct, "/mandate/activation", json!("DIRECT"));
    let direct = app.create_mandate(&direct).await;
    assert_eq!(direct["mandate"]["activation"], "DIRECT");

    // A mandate keeps the mode it was created with.
    staff(
        Method::PUT,
        &format!("/commerces/{COMMERCE}/activation-mode"),
    )
    .json(&json!({"mode": "DIRECT"}))
    .send()
    .await
    .unwrap();
    assert_eq!(
        app.mandate("DEFAULTED").await["mandate"]["activation"],
        "SIGNATURE"
    );
    let later = app
        .create_mandate(&subscription_body(&app, "cust-001", "LATER", 3))
        .await;
    assert_eq!(later["mandate"]["activation"], "DIRECT");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_bad_activation_is_a_400_naming_the_field() {
    let mut app = spawn_app().await;
    app.login().await;
    app.create_customer("cust-001", CUSTOMER_RUT).await;
    for bad in [json!("signature"), json!("ESIGN"), json!("")] {
        let mut body = subscription_body(&app, "cust-001", "GYM-1", 3);
        set(&mut body, "/mandate/activation", bad.clone());
        let reply = app.post("/mandate", &body).await;
        reply.expect(400, "VALIDATION_ERROR");
        assert_eq!(reply.error_fields(), ["mandate.activation"], "{bad}");
    }
    let mut body = subscription_body(&app, "cust-001", "GYM-1", 3);
    set(&mut body, "/mandate/activation", json!(2));
    let reply = app.post("/mandate", &body).await;
    assert_eq!(reply.status, 400, "{}", reply.body);
    assert!(
        reply
            .error_fields()
            .iter()
            .any(|f| f.contains("activation")),
        "{}",
        reply.body
    );
    // Nothing was created.
    app.get("/mandate/id/GYM-1")
        .await
        .expect(404, "MANDATE_NOT_FOUND");
}

#[tokio::test(flavor = "multi_thread")]
async fn direct_activation_is_unchanged_and_has_no_document() {
    let g = gated(None).await;
    assert_eq!(g.lookup().await["mandate"]["activation"], "DIRECT");
    let page = get_page(&g.link).await;
    assert!(!page.html.contains("requiere su firma electrónica"));
    let enrolled = enrol_card(&g).await;
    assert_eq!(enrolled.status, StatusCode::SEE_OTHER);
    assert_eq!(
        enrolled.location.as_deref(),
        Some("https://merchant.example/return")
    );
    let active = g.lookup().await;
    assert_eq!(active["mandate"]["state"]["name"], "ACTIVE");
    assert_eq!(active["mandate"]["signature"], Value::Null);
    let activations = g.activations();
    assert_eq!(activations.len(), 1);
    assert!(activations[0].get("signedDocument").is_none());
    g.document()
        .await
        .expect(404, "SIGNED_MANDATE_DOCUMENT_NOT_FOUND");
}

#[tokio::test(flavor = "multi_thread")]
async fn cancelling_the_mandate_cancels_its_open_signature() {
    let g = gated(Some("SIGNATURE")).await;
    let token = signing_token(&enrol_card(&g).await);
    let process_id = g.lookup().await["mandate"]["signature"]["internalId"]
        .as_str()
        .unwrap()
        .to_string();
    g.app
        .delete(
            "/mandate/cancel/id/GYM-1/userId/cust-001",
            Some(&json!({"description": "El cliente desistió"})),
        )
        .await
        .expect(200, "MANDATE_CANCEL_OK");
    let process = g
        .app
        .get(&format!("/signature/internalId/{process_id}"))
        .await;
    assert_eq!(
        process.body["payload"]["process"]["state"],
        json!({"id": 4, "name": "CANCELLED"})
    );
    let page = get_page(&format!("{}/sign/{token}", g.app.base)).await;
    assert_eq!(page.status, StatusCode::GONE);
    let cancelled = g.lookup().await;
    assert_eq!(cancelled["mandate"]["state"]["name"], "CANCELLED");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_seal_owed_at_a_crash_activates_the_mandate_at_the_next_start() {
    let g = gated(Some("SIGNATURE")).await;
    let token = signing_token(&enrol_card(&g).await);
    confirm_identity(&g, &token).await;
    // The last signature commits and the engine stops before sealing.
    let state = &g.app.running.state;
    let now = g.app.clock_now();
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
    assert_eq!(g.lookup().await["mandate"]["state"]["name"], "PENDING");

    let Gated {
        app,
        link,
        external_id,
        internal_id,
    } = g;
    let mut app = app.restarted(Options::default()).await;
    app.login().await;
    let g = Gated {
        app,
        link,
        external_id,
        internal_id,
    };
    let mut found = Value::Null;
    for _ in 0..200 {
        found = g.lookup().await;
        if found["mandate"]["state"]["name"] == "ACTIVE" {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(found["mandate"]["state"]["name"], "ACTIVE", "{found}");
    assert_eq!(found["mandate"]["signature"]["state"]["name"], "COMPLETED");
    let activations = g.activations();
    assert_eq!(activations.len(), 1);
    let process_id = found["mandate"]["signature"]["internalId"]
        .as_str()
        .unwrap();
    let sealed = sealed_document(&g, process_id).await;
    assert_eq!(activations[0]["signedDocument"]["sha256"], sha256(&sealed));
}

#[test]
fn the_cli_sets_and_shows_the_commerce_activation_mode() {
    use crate::cli::{assert_refused, mandato};
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path();
    mandato(
        data,
        &["commerce", "add", "--code", "SHOP-1", "--name", "Tienda"],
        None,
    );
    let shown = mandato(data, &["commerce", "show", "SHOP-1"], None);
    assert_eq!(shown["activationMode"], "DIRECT");
    let set = mandato(
        data,
        &[
            "commerce",
            "set-activation",
            "--code",
            "SHOP-1",
            "--mode",
            "signature",
        ],
        None,
    );
    assert_eq!(
        set,
        json!({"code": "SHOP-1", "activationMode": "SIGNATURE"})
    );
    let shown = mandato(data, &["commerce", "show", "SHOP-1"], None);
    assert_eq!(shown["activationMode"], "SIGNATURE");
    assert_refused(
        data,
        &[
            "commerce",
            "set-activation",
            "--code",
            "SHOP-1",
            "--mode",
            "firma",
        ],
        "INVALID_ACTIVATION_MODE",
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn the_sandbox_activation_activates_directly_and_closes_the_open_signature() {
    let g = gated(Some("SIGNATURE")).await;
    let token = signing_token(&enrol_card(&g).await);
    let reply = g
        .app
        .post(
            &format!("/sandbox/mandates/{}/activate", g.internal_id),
            &json!({"paymentMethodId": 3, "card": {"number": "4242424242424242", "expiry": "12/35", "cvv": "123"}}),
        )
        .await;
    reply.expect(200, "SANDBOX_ACTIVATE_OK");
    let active = g.lookup().await;
    assert_eq!(active["mandate"]["state"]["name"], "ACTIVE");
    assert!(
        active["paymentMethod"]["instrument"]
            .as_str()
            .unwrap()
            .ends_with("**** 4242")
    );
    assert_eq!(active["mandate"]["signature"]["state"]["name"], "CANCELLED");
    assert_eq!(active["mandate"]["activationFailure"], Value::Null);
    assert_eq!(g.activations().len(), 1);
    let page = get_page(&format!("{}/sign/{token}", g.app.base)).await;
    assert_eq!(page.status, StatusCode::GONE);
}

#[tokio::test(flavor = "multi_thread")]
async fn an_expired_signature_leaves_it_pending_with_the_reason() {
    let g = gated(Some("SIGNATURE")).await;
    signing_token(&enrol_card(&g).await);
    let process_id = g.lookup().await["mandate"]["signature"]["internalId"]
        .as_str()
        .unwrap()
        .to_string();
    g.app
        .post("/sandbox/clock", &json!({"advanceDays": 31}))
        .await
        .expect(200, "SANDBOX_CLOCK_OK");
    // The process's lookup meets its expiry (as the periodic sweep would).
    let process = g
        .app
        .get(&format!("/signature/internalId/{process_id}"))
        .await;
    assert_eq!(
        process.body["payload"]["process"]["state"]["name"],
        "EXPIRED"
    );
    let pending = g.lookup().await;
    assert_eq!(pending["mandate"]["state"]["name"], "PENDING");
    assert_eq!(
        pending["mandate"]["activationFailure"]["reason"],
        "SIGNATURE_EXPIRED"
    );
    assert!(g.activations().is_empty());
}
