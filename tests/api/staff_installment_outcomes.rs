//! What staff read of an installment's outcome, matching what its customer reads: a final
//! decline says no retry remains (and a retry's date while one does), and a UF installment
//! shows the pesos charged and the UF value used, on the staff page and on the receipt.

use chrono::Duration;
use serde_json::{Value, json};

use crate::helpers::*;
use crate::link::{CARD_DECLINED, Linked, get_page, linked};
use crate::staff_ui_api::{Desk, owner};

const APPROVE: &str = "4111111111111111";

async fn activate(l: &Linked, number: &str) {
    l.app
        .post(
            &format!("/sandbox/mandates/{}/activate", l.internal_id),
            &json!({"paymentMethodId": 3, "card": {"number": number, "expiry": "12/35", "cvv": "123"}}),
        )
        .await
        .expect(200, "SANDBOX_ACTIVATE_OK");
}

async fn first_installment(desk: &Desk<'_>, mandate: &str) -> Value {
    let detail = desk.get(&format!("/mandates/{mandate}")).await;
    detail.expect(200, "MANDATE_OK");
    detail.body["payload"]["installments"][0].clone()
}

#[tokio::test(flavor = "multi_thread")]
async fn after_the_final_decline_staff_read_that_no_retry_remains() {
    let l = linked(|app| dynamic_body(app, "cust-001", "DYN-1", &[("c1", 15000, 0)])).await;
    activate(&l, CARD_DECLINED).await;
    let admin = owner(&l.app).await;
    let d0 = l.app.today();
    l.app.run_charging(d0).await;
    let rejected = first_installment(&admin, &l.internal_id).await;
    assert_eq!(rejected["state"]["name"], "REJECTED");
    assert_eq!(rejected["rejection"]["code"], "INSUFFICIENT_FUNDS");
    assert_eq!(
        rejected["nextRetryDate"],
        (d0 + Duration::days(1)).to_string()
    );
    let page = get_page(&l.link).await;
    assert!(
        page.html.contains("Volveremos a intentar el cobro"),
        "{}",
        page.html
    );

    // Retries after 1, 3 and 7 days, all declined: the last is final.
    for day in [1, 3, 7] {
        l.app.run_charging(d0 + Duration::days(day)).await;
    }
    let last = first_installment(&admin, &l.internal_id).await;
    assert_eq!(last["state"]["name"], "REJECTED");
    assert_eq!(last["attempts"], 4);
    assert!(last["nextRetryDate"].is_null(), "{last}");
    let page = get_page(&l.link).await;
    assert!(
        page.html
            .contains("No volveremos a intentarlo con el medio de pago registrado"),
        "{}",
        page.html
    );
    assert!(first_installment(&admin, &l.internal_id).await["ufCharge"].is_null());
}

#[tokio::test(flavor = "multi_thread")]
async fn a_uf_installment_shows_the_pesos_charged_and_the_uf_value_used() {
    let l = linked(|app| {
        json!({"customer": {"userId": "cust-001"},
            "mandate": {"id": "UF-1", "type": "DYNAMIC", "name": "Arriendo", "charges": {"currencyId": "CLF"}},
            "installments": [{"id": "u1", "amount": 1.5, "currencyId": "CLF", "installmentDueDate": app.date_in(0)}]})
    })
    .await;
    activate(&l, APPROVE).await;
    let today = l.app.today();
    let admin = owner(&l.app).await;
    admin
        .post(
            "/uf",
            json!({"csv": format!("date,value\n{today},39123.45\n")}),
        )
        .await
        .expect(200, "UF_IMPORT_OK");
    l.app.run_charging(today).await;

    let paid = first_installment(&admin, &l.internal_id).await;
    assert_eq!(paid["state"]["name"], "PAID");
    assert_eq!(paid["amount"], 1.5);
    assert_eq!(paid["currencyId"], "CLF");
    assert_eq!(
        paid["ufCharge"],
        json!({"clp": 58685, "date": today.to_string(), "ufValue": 39123.45}),
        "1.5 UF at 39123.45 CLP, rounded to the peso"
    );

    let receipt = get_page(&format!(
        "{}/comprobante/{}",
        l.link,
        paid["internalId"].as_str().unwrap()
    ))
    .await;
    assert_eq!(receipt.status, reqwest::StatusCode::OK);
    for expected in ["UF 1,50", "$58.685", "$39.123,45"] {
        assert!(
            receipt.html.contains(expected),
            "{expected}: {}",
            receipt.html
        );
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_recorded_payments_receipt_has_the_date_entered_the_method_in_words_and_a_dotted_rut() {
    let l = linked(|app| dynamic_body(app, "cust-001", "DYN-1", &[("c1", 15000, 10)])).await;
    activate(&l, APPROVE).await;
    let admin = owner(&l.app).await;
    let installment = first_installment(&admin, &l.internal_id).await;
    let id = installment["internalId"].as_str().unwrap();
    let paid_on = l.app.today() - Duration::days(2);
    admin
        .post(
            &format!("/mandates/{}/payments", l.internal_id),
            json!({"installmentIds": [id],
                   "payment": {"date": paid_on.to_string(), "amount": 15000, "currencyId": "CLP",
                               "method": "TRANSFER", "authorizationCode": "TRX-1"}}),
        )
        .await
        .expect(200, "MANDATE_OK");

    let receipt = get_page(&format!("{}/comprobante/{id}", l.link)).await;
    assert_eq!(receipt.status, reqwest::StatusCode::OK);
    let entered = paid_on.format("%d-%m-%Y").to_string();
    for expected in [
        format!("<dt>Fecha del pago</dt><dd>{entered}</dd>"),
        "<dd>Transferencia, registrado por el comercio</dd>".to_string(),
        "$15.000".to_string(),
        "TRX-1".to_string(),
    ] {
        assert!(
            receipt.html.contains(&expected),
            "{expected}: {}",
            receipt.html
        );
    }
    assert!(!receipt.html.contains("TRANSFER"), "{}", receipt.html);
    assert!(
        !receipt.html.contains("hora de"),
        "the date entered has no time"
    );
    // The commerce's RUT as people in Chile write it.
    assert_eq!(COMMERCE, "76123456-0");
    assert!(
        receipt.html.contains("(RUT 76.123.456-0)"),
        "{}",
        receipt.html
    );
}
