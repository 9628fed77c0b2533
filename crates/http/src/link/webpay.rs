//! Portal payments on Transbank Webpay Plus (CONTRACT 13): where a commerce's cards are served
//! by Transbank, "Pagar en Webpay" creates a transaction for the installment and hands the
//! customer to Webpay with `token_ws`; Webpay brings the customer back to
//! `/link/{token}/webpay/return` (by GET or POST, as Transbank's guide warns), where the
//! transaction is committed and its outcome recorded (`mandato_engine::rails::webpay`). No
//! card number, expiry or CVV reaches this server.

use std::collections::HashMap;

use axum::Form;
use axum::extract::rejection::{FormRejection, QueryRejection};
use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use axum::response::Response;

use super::oneclick::{hand_off, webpay_url_acceptable};
use super::render::{self, Loaded, Notice};
use super::{AppState, bad_form, failure, html, not_offered, open, page, see_other, unavailable};
use mandato_core::error::Error;
use mandato_core::processor::ProcessorError;
use mandato_engine::rails::webpay::{Applied, NotStarted, PaymentStart, Return};
use mandato_engine::records::InstallmentRow;

/// Starts the Webpay Plus payment of a payable CLP installment.
pub(super) async fn start(
    state: &AppState,
    token: &str,
    loaded: &Loaded,
    installment: &InstallmentRow,
) -> Response {
    let Ok(amount) = installment
        .amount
        .amount()
        .trunc()
        .to_string()
        .parse::<i64>()
    else {
        return unavailable(&loaded.commerce.name);
    };
    let start = PaymentStart {
        commerce_id: loaded.commerce.id,
        mandate_seq: loaded.mandate.seq,
        installment_seq: installment.seq,
        installment_id: installment.id.clone(),
        amount,
        return_url: format!("{}/link/{token}/webpay/return", state.public_base_url),
    };
    let started = match state.start_portal_payment(start).await {
        Ok(Ok(started)) => started,
        Ok(Err(NotStarted::NotOffered)) => return not_offered(state, token, loaded),
        Ok(Err(NotStarted::TooMany(until))) => {
            return super::too_many_declines(state, &loaded.commerce.name, until);
        }
        Ok(Err(NotStarted::Acquirer(ProcessorError::Refused(reason)))) => {
            tracing::warn!(%reason, "transbank refused a portal payment");
            return unavailable(&loaded.commerce.name);
        }
        Ok(Err(NotStarted::Acquirer(ProcessorError::Unavailable(reason)))) => {
            tracing::warn!(%reason, "transbank unavailable for a portal payment");
            return unavailable(&loaded.commerce.name);
        }
        Err(e) => return failure(&e),
    };
    if !webpay_url_acceptable(&started.url, state.config.environment.is_sandbox()) {
        tracing::error!("transbank answered a Webpay Plus url that is not https");
        return unavailable(&loaded.commerce.name);
    }
    hand_off(
        &started.url,
        render::WebpayErrand::Payment,
        &started.token,
        &loaded.commerce.name,
    )
}

pub(super) async fn returned_by_get(
    state: State<AppState>,
    token: Path<String>,
    query: Result<Query<HashMap<String, String>>, QueryRejection>,
) -> Response {
    let params = query.map(|Query(q)| q).unwrap_or_default();
    returned(state, token, params).await
}

pub(super) async fn returned_by_post(
    state: State<AppState>,
    token: Path<String>,
    query: Result<Query<HashMap<String, String>>, QueryRejection>,
    form: Result<Form<HashMap<String, String>>, FormRejection>,
) -> Response {
    // Webpay posts its fields; a proxy may have kept them in the query instead.
    let mut params = query.map(|Query(q)| q).unwrap_or_default();
    match form {
        Ok(Form(form)) => params.extend(form),
        Err(rejection) => return bad_form(&rejection),
    }
    returned(state, token, params).await
}

/// Transbank's tokens are at most 64 letters and digits; its buy orders ours (26).
fn shaped(value: &str) -> bool {
    (1..=64).contains(&value.len()) && value.bytes().all(|b| b.is_ascii_alphanumeric())
}

/// The customer is back from Webpay: learn the payment's outcome and say it.
async fn returned(
    State(state): State<AppState>,
    Path(token): Path<String>,
    params: HashMap<String, String>,
) -> Response {
    let (loaded, _) = match open(&state, &token) {
        Ok(opened) => opened,
        Err(response) => return *response,
    };
    let back_to_page = || {
        see_other(&format!("/link/{token}#pagar"))
            .unwrap_or_else(|| page(&state, StatusCode::OK, &token, &loaded, None, None, None))
    };
    let returned = Return::of(|name| params.get(name).cloned());
    let Some(returned) = returned.filter(|r| match r {
        Return::Finished { token } | Return::Cancelled { token } => shaped(token),
        Return::TimedOut { buy_order } => shaped(buy_order),
    }) else {
        return back_to_page();
    };
    let applied = match state
        .portal_payment_returned(loaded.mandate.seq, returned)
        .await
    {
        Ok(Some(applied)) => applied,
        // Not a payment of this mandate: nothing to do here.
        Ok(None) => return back_to_page(),
        Err(Error::Unavailable { message, .. }) => {
            tracing::warn!(%message, "transbank unavailable on a portal payment's return");
            return html(
                StatusCode::SERVICE_UNAVAILABLE,
                render::message_page(
                    "No pudimos confirmar el pago",
                    "Transbank no respondió. Vuelva a cargar esta página en unos minutos para \
                     saber el resultado: no vuelva a pagar la cuota mientras tanto.",
                    Some(&loaded.commerce.name),
                ),
            );
        }
        Err(e) => return failure(&e),
    };
    let (payment, applied) = applied;
    let installment = loaded
        .installments
        .iter()
        .find(|i| i.seq == payment.installment_seq);
    let external = installment.map_or("", |i| i.external_id.as_str());
    let notice = |status: StatusCode, notice: Notice| {
        page(&state, status, &token, &loaded, Some(notice), None, None)
    };
    match applied {
        Applied::Paid => {
            let id = installment.map_or("", |i| i.id.as_str());
            see_other(&format!("/link/{token}?pagada={id}"))
                .unwrap_or_else(|| notice(StatusCode::OK, Notice::Info("Pago aprobado.".into())))
        }
        Applied::Refused { reason, .. } => notice(
            StatusCode::PAYMENT_REQUIRED,
            Notice::Problem(format!(
                "Webpay rechazó el pago de la cuota {external}: {} No se hizo ningún cargo. \
                 Puede intentarlo con otra tarjeta.",
                crate::link::spanish::rejection(reason.as_str())
            )),
        ),
        Applied::NotPaid => notice(
            StatusCode::ACCEPTED,
            Notice::Info(format!(
                "El pago de la cuota {external} no se completó en Webpay. Si pagó, el resultado \
                 aparecerá aquí en unos minutos; no vuelva a pagarla mientras tanto."
            )),
        ),
        Applied::Abandoned => notice(
            StatusCode::OK,
            Notice::Problem(format!(
                "No se pagó la cuota {external}: el pago se anuló en Webpay o se agotó el tiempo \
                 para completarlo. No se hizo ningún cargo; puede intentarlo otra vez."
            )),
        ),
        Applied::Refunded => notice(
            StatusCode::CONFLICT,
            Notice::Problem(format!(
                "La cuota {external} cambió mientras pagaba en Webpay (ya estaba pagada o dejó de \
                 admitir pagos), así que anulamos ese pago: no se le cobró."
            )),
        ),
        Applied::NeedsRefund { authorization_code } => notice(
            StatusCode::CONFLICT,
            Notice::Problem(format!(
                "El pago fue aprobado (código {authorization_code}), pero la cuota {external} \
                 cambió mientras pagaba. El comercio le devolverá el dinero; contáctelo con este \
                 código."
            )),
        ),
    }
}
