//! The bodies of activation and payment events (CONTRACT 7), signed and written to the outbox.

use chrono::{DateTime, Utc};
use mandato_store::db::Db;
use serde_json::{Value, json};

use super::signing;
use mandato_core::clock::timestamp;
use mandato_core::domain::holidays::ChargeDates;
use mandato_core::error::Result;
use mandato_store::StoredJson;
use mandato_store::commerces::Commerce;
use mandato_store::customers::CustomerRow;
use mandato_store::events::{self, NewEvent};
use mandato_store::installments::InstallmentRow;
use mandato_store::mandates::{self, MandateRow};

fn state_json(id: i64, name: &str) -> Value {
    json!({"id": id, "name": name})
}

fn customer_ref(customer: &CustomerRow) -> Value {
    json!({"internalUserId": customer.id, "userId": customer.user_id})
}

/// A payment event: one per installment state change. `charge_dates`: the commerce's calendar
/// and rule (`store::calendar::charge_dates`), read once by callers that record many events.
pub fn record_payment(
    conn: Db<'_>,
    commerce: &Commerce,
    charge_dates: &ChargeDates,
    mandate: &MandateRow,
    customer: &CustomerRow,
    installment: &InstallmentRow,
    now: DateTime<Utc>,
) -> Result<String> {
    let body = payment_body(charge_dates, mandate, customer, installment);
    let url = mandate.url_payment_webhook.as_deref();
    record(
        conn,
        commerce,
        mandate,
        Some(installment.seq),
        "payment",
        url,
        body,
        now,
    )
}

/// One installment's payment event, for [`record_payments`].
pub struct Payment<'a> {
    pub commerce: &'a Commerce,
    pub charge_dates: &'a ChargeDates,
    pub mandate: &'a MandateRow,
    pub customer: &'a CustomerRow,
    pub installment: &'a InstallmentRow,
}

/// `record_payment` for many installments (a charging page's), numbered within each mandate
/// in the order given: every mandate's numbers taken in one statement and every event written
/// in one (`mandates::next_event_sequences`, `events::insert_many`).
pub fn record_payments(conn: Db<'_>, payments: &[Payment<'_>], now: DateTime<Utc>) -> Result<()> {
    let mut wanted: Vec<(i64, i64)> = Vec::new();
    for payment in payments {
        match wanted
            .iter_mut()
            .find(|(seq, _)| *seq == payment.mandate.seq)
        {
            Some((_, count)) => *count += 1,
            None => wanted.push((payment.mandate.seq, 1)),
        }
    }
    // The next number of each mandate: the first of those just taken.
    let mut next: std::collections::HashMap<i64, i64> =
        mandates::next_event_sequences(conn, &wanted)?
            .into_iter()
            .map(|(seq, last)| {
                let count = wanted.iter().find(|(s, _)| *s == seq).map_or(0, |w| w.1);
                (seq, last - count + 1)
            })
            .collect();
    let created_at = timestamp(now);
    let mut sealed = Vec::with_capacity(payments.len());
    for payment in payments {
        let sequence = next.get_mut(&payment.mandate.seq).ok_or_else(|| {
            mandato_core::error::Error::Internal(anyhow::anyhow!(
                "mandate {} is gone",
                payment.mandate.id
            ))
        })?;
        let body = payment_body(
            payment.charge_dates,
            payment.mandate,
            payment.customer,
            payment.installment,
        );
        let event_id = mandato_core::ids::new_id("evt");
        let body = seal(
            payment.commerce,
            "payment",
            &event_id,
            &created_at,
            *sequence,
            body,
        )?;
        sealed.push((event_id, *sequence, body));
        *sequence += 1;
    }
    let events: Vec<NewEvent<'_>> = payments
        .iter()
        .zip(&sealed)
        .map(|(payment, (event_id, sequence, body))| NewEvent {
            id: event_id,
            commerce_id: payment.commerce.id,
            mandate_seq: Some(payment.mandate.seq),
            installment_seq: Some(payment.installment.seq),
            kind: "payment",
            sequence: *sequence,
            url: payment.mandate.url_payment_webhook.as_deref(),
            body,
            created_at: &created_at,
        })
        .collect();
    events::insert_many(conn, &events)?;
    Ok(())
}

fn payment_body(
    charge_dates: &ChargeDates,
    mandate: &MandateRow,
    customer: &CustomerRow,
    installment: &InstallmentRow,
) -> Value {
    // The day the installment is charged: its due date moved off weekends and holidays by
    // the commerce's rule. `installmentDueDate` stays the contractual date.
    let charge_date = charge_dates.of(installment.due_date);
    let rejection = match &installment.rejection_code {
        Some(code) => json!({"code": code, "message": installment.rejection_message}),
        None => Value::Null,
    };
    json!({
        "event": "payment",
        "product": {
            "internalId": mandate.id,
            "id": mandate.external_id,
            "type": mandate.mandate_type.name(),
        },
        "customer": customer_ref(customer),
        "installment": {
            "internalId": installment.id,
            "id": installment.external_id,
            "amount": installment.amount.to_json_number(),
            "currencyId": installment.amount.currency().code(),
            "installmentDueDate": installment.due_date.to_string(),
            "chargeDate": charge_date.to_string(),
            "state": state_json(installment.state.id(), installment.state.name()),
            "dateTime": installment.state_at,
            "attempt": installment.attempts,
            "paymentMethodId": installment.payment_method_id,
            "authorizationCode": installment.authorization_code,
            "rejection": rejection,
            // Whether the engine will try again after this rejection, and when.
            "retryScheduled": installment.retry_scheduled,
            "nextRetryDate": installment.next_retry_date.as_deref().filter(|_| installment.retry_scheduled),
        },
    })
}

/// An activation event: sent when a mandate becomes active and when it is cancelled.
/// `file_base64` is the EPAC mandate document, when there is one.
pub fn record_activation(
    conn: Db<'_>,
    commerce: &Commerce,
    mandate: &MandateRow,
    customer: &CustomerRow,
    file_base64: Option<&str>,
    now: DateTime<Utc>,
) -> Result<String> {
    let body = activation_body(mandate, customer, file_base64);
    let url = mandate.url_activation_webhook.as_deref();
    record(conn, commerce, mandate, None, "activation", url, body, now)
}

/// The signed mandate document behind a signature-gated activation.
pub struct SignedDocument<'a> {
    /// The signature process, `sig_...`.
    pub signature_internal_id: &'a str,
    /// Lowercase hex SHA-256 of the sealed PDF.
    pub sha256: &'a str,
}

/// The activation event of a mandate activated by its completed signature process: the same
/// body plus `signedDocument`, so the merchant can check the sealed PDF it fetches.
pub fn record_signed_activation(
    conn: Db<'_>,
    commerce: &Commerce,
    mandate: &MandateRow,
    customer: &CustomerRow,
    file_base64: Option<&str>,
    signed: &SignedDocument<'_>,
    now: DateTime<Utc>,
) -> Result<String> {
    let mut body = activation_body(mandate, customer, file_base64);
    body["signedDocument"] = json!({
        "signatureInternalId": signed.signature_internal_id,
        "sha256": signed.sha256,
    });
    let url = mandate.url_activation_webhook.as_deref();
    record(conn, commerce, mandate, None, "activation", url, body, now)
}

fn activation_body(
    mandate: &MandateRow,
    customer: &CustomerRow,
    file_base64: Option<&str>,
) -> Value {
    json!({
        "event": "activation",
        "product": {
            "internalId": mandate.id,
            "id": mandate.external_id,
            "type": mandate.mandate_type.name(),
            "state": state_json(mandate.state.id(), mandate.state.name()),
        },
        "customer": customer_ref(customer),
        "paymentMethod": mandate.enrolled_method.as_ref().map_or(Value::Null, StoredJson::value),
        "dateTime": mandate.updated_at,
        "fileBase64": file_base64,
    })
}

/// Numbers the event within its mandate, signs it and writes it to the outbox.
#[allow(clippy::too_many_arguments)]
fn record(
    conn: Db<'_>,
    commerce: &Commerce,
    mandate: &MandateRow,
    installment_seq: Option<i64>,
    kind: &str,
    url: Option<&str>,
    body: Value,
    now: DateTime<Utc>,
) -> Result<String> {
    let event_id = mandato_core::ids::new_id("evt");
    let sequence = mandates::next_event_sequence(conn, mandate.seq)?;
    let created_at = timestamp(now);
    let body = seal(commerce, kind, &event_id, &created_at, sequence, body)?;
    events::insert(
        conn,
        &NewEvent {
            id: &event_id,
            commerce_id: commerce.id,
            mandate_seq: Some(mandate.seq),
            installment_seq,
            kind,
            sequence,
            url,
            body: &body,
            created_at: &created_at,
        },
    )?;
    Ok(event_id)
}

/// The event's body as sent: `event`, `eventId`, `createdAt` and `sequence` lead it (for
/// readers of raw payloads), signed with the commerce's webhook secret.
fn seal(
    commerce: &Commerce,
    kind: &str,
    event_id: &str,
    created_at: &str,
    sequence: i64,
    mut body: Value,
) -> Result<String> {
    let map = body.as_object_mut().expect("event bodies are objects");
    let rest = std::mem::take(map);
    map.insert("event".into(), json!(kind));
    map.insert("eventId".into(), json!(event_id));
    map.insert("createdAt".into(), json!(created_at));
    map.insert("sequence".into(), json!(sequence));
    map.extend(rest.into_iter().filter(|(k, _)| k != "event"));
    let signed = signing::sign_body(body, &commerce.webhook_secret);
    Ok(serde_json::to_string(&signed)?)
}
