//! The customer's pages answer the customer's questions: a receipt after paying, why a charge
//! was rejected and how to replace the card (then the rejected installment is charged again),
//! and on the signing pages local times with their zone and the sealed document's real length.

use reqwest::StatusCode;
use serde_json::json;

use crate::helpers::*;
use crate::link::{
    CARD_DECLINED, CARD_OK_4242, Linked, card, get_page, linked, post_form, with_due_installment,
};
use crate::signatures::{
    Browser, RUT_A, RUT_B, StaffSession, app_with_customers, create, detail, sign_as, simple_body,
    token_of,
};

/// Luhn-valid and ending 0069: the simulated acquirer declines it as EXPIRED_CARD (hard).
const CARD_EXPIRED: &str = "4000000000000069";

/// The `termsSha256` of the card change form.
fn card_change_sha(html: &str) -> String {
    let at = html.find("/tarjeta\"").expect("the card change form");
    let rest = &html[at..];
    let start = rest.find("name=\"termsSha256\" value=\"").unwrap() + 26;
    rest[start..start + 64].to_string()
}

async fn activate_with(l: &Linked, number: &str) {
    let page = get_page(&l.link).await;
    let sha = crate::link::terms_sha(&page.html, 3);
    let activated = post_form(
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
    .await;
    assert_eq!(
        activated.status,
        StatusCode::SEE_OTHER,
        "{}",
        activated.html
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_portal_payment_has_a_printable_receipt() {
    let (l, due, later) = with_due_installment().await;
    let paid = post_form(&l.pay_url(&due), &card(CARD_OK_4242)).await;
    assert_eq!(paid.status, StatusCode::SEE_OTHER, "{}", paid.html);
    let shown = get_page(&format!("{}{}", l.app.base, paid.location.unwrap())).await;
    let receipt_path = format!("{}/comprobante/{due}", l.path());
    assert!(
        shown.html.contains(&format!("href=\"{receipt_path}\"")),
        "the banner links the receipt: {}",
        shown.html
    );

    let receipt = get_page(&format!("{}{receipt_path}", l.app.base)).await;
    assert_eq!(receipt.status, StatusCode::OK);
    let code = l.lookup().await["installments"][0]["authorizationCode"]
        .as_str()
        .unwrap()
        .to_string();
    for expected in [
        "Comprobante de pago",
        "$15.000",
        "c1",
        &code,
        &due,
        "Tarjeta de crédito",
        "hora de America/Santiago",
        "@media print",
    ] {
        assert!(
            receipt.html.contains(expected),
            "{expected}: {}",
            receipt.html
        );
    }
    assert!(
        !receipt.html.contains("****"),
        "a portal card is never kept, so it is not shown"
    );
    assert_eq!(
        receipt.headers["cache-control"], "no-store",
        "a receipt is as private as the page"
    );

    let unpaid = get_page(&format!("{}{}/comprobante/{later}", l.app.base, l.path())).await;
    assert_eq!(unpaid.status, StatusCode::NOT_FOUND);
    let unknown = get_page(&format!(
        "{}/link/AAAAAAAAAAAAAAAAAAAAAA/comprobante/{due}",
        l.app.base
    ))
    .await;
    assert_eq!(unknown.status, StatusCode::NOT_FOUND);
}

#[tokio::test(flavor = "multi_thread")]
async fn an_engine_charge_receipt_names_the_card_masked() {
    let l = linked(|app| dynamic_body(app, "cust-001", "DYN-1", &[("c1", 15000, 0)])).await;
    activate_with(&l, CARD_OK_4242).await;
    l.app.run_charging(l.app.today()).await;
    let found = l.lookup().await;
    assert_eq!(found["installments"][0]["state"]["name"], "PAID");
    let id = found["installments"][0]["internalId"].as_str().unwrap();
    let page = get_page(&l.link).await;
    assert!(
        page.html
            .contains(&format!("/comprobante/{id}\">Comprobante"))
    );
    let receipt = get_page(&format!("{}/comprobante/{id}", l.link)).await;
    assert_eq!(receipt.status, StatusCode::OK);
    assert!(receipt.html.contains("**** 4242"), "{}", receipt.html);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_rejected_charge_says_why_and_a_new_card_is_charged_at_the_next_run() {
    let l = linked(|app| dynamic_body(app, "cust-001", "DYN-1", &[("c1", 15000, 0)])).await;
    // Before activation there is no card to replace.
    let early = post_form(&format!("{}/tarjeta", l.link), &card(CARD_OK_4242)).await;
    assert_eq!(early.status, StatusCode::CONFLICT);

    activate_with(&l, CARD_EXPIRED).await;
    l.app.run_charging(l.app.today()).await;
    let found = l.lookup().await;
    assert_eq!(found["installments"][0]["state"]["name"], "REJECTED");
    assert_eq!(
        found["installments"][0]["rejection"]["code"],
        "EXPIRED_CARD"
    );

    let page = get_page(&l.link).await;
    for expected in [
        "Un cobro fue rechazado",
        "La tarjeta registrada está vencida",
        "No volveremos a intentarlo con el medio de pago registrado",
        "Registrar otra tarjeta",
    ] {
        assert!(page.html.contains(expected), "{expected}: {}", page.html);
    }
    let sha = card_change_sha(&page.html);
    let url = format!("{}/tarjeta", l.link);

    // Problems come back beside their fields, and nothing changes.
    let mut fields = card("4242424242424241");
    fields.push(("termsSha256", &sha));
    let refused = post_form(&url, &fields).await;
    assert_eq!(refused.status, StatusCode::BAD_REQUEST);
    assert!(refused.html.contains("t-number-err"), "{}", refused.html);
    assert!(refused.html.contains("t-accept-err"));
    assert!(
        !refused.html.contains("4242424242424241"),
        "never written back"
    );

    let mut fields = card(CARD_OK_4242);
    fields.extend([("accept", "1"), ("termsSha256", sha.as_str())]);
    let changed = post_form(&url, &fields).await;
    assert_eq!(changed.status, StatusCode::SEE_OTHER, "{}", changed.html);
    let location = changed.location.unwrap();
    assert_eq!(location, format!("{}?tarjeta=1", l.path()));
    let shown = get_page(&format!("{}{location}", l.app.base)).await;
    assert!(shown.html.contains("Tarjeta actualizada"));
    assert!(shown.html.contains("próximo proceso de cobro"));
    assert!(
        shown.html.contains(
            "Con su nuevo medio de pago lo volveremos a intentar en el próximo proceso de cobro."
        ),
        "{}",
        shown.html
    );
    assert!(!shown.html.contains("La tarjeta registrada está vencida"));
    let found = l.lookup().await;
    assert!(
        found["paymentMethod"]["instrument"]
            .as_str()
            .unwrap()
            .ends_with("4242"),
        "{}",
        found["paymentMethod"]
    );
    assert_eq!(found["mandate"]["state"]["name"], "ACTIVE");

    // Today's run already tried it; the next day's charges the new card.
    let tomorrow = l.app.today() + chrono::Duration::days(1);
    l.app.run_charging(tomorrow).await;
    let found = l.lookup().await;
    assert_eq!(found["installments"][0]["state"]["name"], "PAID");
    assert_eq!(found["installments"][0]["attempts"], 2);
    let page = get_page(&l.link).await;
    assert!(!page.html.contains("Un cobro fue rechazado"));
    assert!(page.html.contains("¿Cambió su tarjeta?"));
}

#[tokio::test(flavor = "multi_thread")]
async fn a_soft_decline_names_its_next_retry() {
    let l = linked(|app| dynamic_body(app, "cust-001", "DYN-1", &[("c1", 15000, 0)])).await;
    activate_with(&l, CARD_DECLINED).await;
    l.app.run_charging(l.app.today()).await;
    let page = get_page(&l.link).await;
    assert!(page.html.contains("no había saldo o cupo suficiente"));
    assert!(
        page.html.contains("Volveremos a intentar el cobro el"),
        "{}",
        page.html
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn signing_pages_show_local_times_and_the_sealed_page_count() {
    let app = app_with_customers().await;
    let staff = StaffSession::start(&app).await;
    let browser = Browser::new(&app);
    let created = create(
        &app,
        &simple_body(&[("cust-a", 1, "FES"), ("cust-b", 2, "FES")]),
    )
    .await;
    let id = created["process"]["internalId"]
        .as_str()
        .unwrap()
        .to_string();
    let signers = created["signatories"].as_array().unwrap().clone();
    let first = token_of(&signers[0]);
    let page = browser.open(&first).await;
    assert!(page.html.contains("· 1 página<"), "{}", page.html);

    sign_as(&browser, &staff, &id, &signers[0], &rut(RUT_A), None).await;
    let page = browser.open(&first).await;
    assert!(page.html.contains("Usted ya firmó"));
    assert!(
        page.html.contains("(hora de America/Santiago, UTC-0"),
        "{}",
        page.html
    );
    assert!(!page.html.contains(" UTC<"), "no bare UTC time");

    sign_as(&browser, &staff, &id, &signers[1], &rut(RUT_B), None).await;
    let done = detail(&app, &id).await;
    assert_eq!(done["process"]["state"]["name"], "COMPLETED");
    let page = browser.open(&first).await;
    assert!(page.html.contains("Documentos firmados"));
    let sealed = app
        .client
        .get(format!("{}/sign/{first}/documentos/1", app.base))
        .send()
        .await
        .unwrap()
        .bytes()
        .await
        .unwrap();
    let pages = lopdf::Document::load_mem(&sealed)
        .unwrap()
        .get_pages()
        .len();
    assert!(pages > 1, "the seal adds pages");
    assert!(
        page.html.contains(&format!("· {pages} páginas<")),
        "{pages}: {}",
        page.html
    );
    assert_eq!(json!(done["documents"][0]["pageCount"]), json!(1));
}
