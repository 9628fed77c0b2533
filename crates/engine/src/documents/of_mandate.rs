//! The mandate document of an activation, from the records it is about: who, what, with
//! which instrument, and what the customer accepted. Shared by the Magic Link (a bank account
//! typed or a card before its signature) and the engine (a Fintoc subscription the bank
//! validated later, when no page is open).

use chrono::{DateTime, Utc};

use mandato_core::clock::timestamp;
use mandato_core::domain::instrument::{InstrumentFacts, bank_name};
use mandato_core::domain::state::PaymentMethod;
use mandato_core::processor::Enrolled;
use mandato_core::secret::Secret;
use mandato_store::commerces::Commerce;
use mandato_store::customers::CustomerRow;
use mandato_store::installments::InstallmentRow;
use mandato_store::mandates::MandateRow;

use super::{
    ChargedInstrument, DocumentInstallment, LastFour, MandateDocument, mandate_document, spanish,
};
use crate::operations::activation::Acceptance;

/// The records a mandate document states.
pub struct Subject<'a> {
    pub commerce: &'a Commerce,
    pub customer: &'a CustomerRow,
    pub mandate: &'a MandateRow,
    /// The mandate's installments known at acceptance.
    pub installments: &'a [InstallmentRow],
}

/// What the mandate document states, for a bank account or (signature-gated activation) a
/// card.
pub fn document_of(
    subject: &Subject<'_>,
    instrument: &InstrumentFacts,
    enrolled: &Enrolled,
    acceptance: &Acceptance,
    now: DateTime<Utc>,
) -> MandateDocument {
    let last4 = LastFour::of(&enrolled.last4);
    let charged = match instrument {
        InstrumentFacts::Bank {
            method,
            bank_code,
            account_type,
            holder_rut,
        } => ChargedInstrument::BankAccount {
            method: *method,
            bank_name: bank_name(bank_code).unwrap_or(bank_code).to_string(),
            account_type: account_type.clone(),
            last4,
            holder_rut: holder_rut.to_string(),
        },
        InstrumentFacts::Card { method } => ChargedInstrument::Card {
            method: *method,
            brand: enrolled.brand.clone(),
            last4,
        },
    };
    let c = subject.customer;
    let customer_name = [
        Some(c.first_name.as_str()),
        Some(c.last_name.as_str()),
        c.second_last_name.as_deref(),
    ]
    .into_iter()
    .flatten()
    .filter(|p| !p.is_empty())
    .collect::<Vec<_>>()
    .join(" ");
    let mandate = subject.mandate;
    MandateDocument {
        commerce_name: subject.commerce.name.clone(),
        commerce_code: subject.commerce.code.clone(),
        customer_name,
        customer_rut: c.rut.clone(),
        mandate_id: mandate.external_id.clone(),
        mandate_internal_id: mandate.id.clone(),
        mandate_name: mandate.name.clone(),
        mandate_detail: mandate.detail.clone(),
        mandate_type: mandate.mandate_type,
        charges_summary: spanish::charges_summary(mandate.mandate_type, &mandate.charges.value()),
        installments: subject
            .installments
            .iter()
            .map(|i| DocumentInstallment {
                id: i.external_id.clone(),
                due_date: i.due_date,
                amount: i.amount.clone(),
            })
            .collect(),
        instrument: charged,
        accepted_at: timestamp(now),
        ip: acceptance.ip.clone(),
        terms: acceptance.terms.clone(),
    }
}

/// The EPAC mandate PDF, for the methods that produce one (EPAC and direct EPAC).
pub fn epac_document(
    subject: &Subject<'_>,
    instrument: &InstrumentFacts,
    enrolled: &Enrolled,
    acceptance: &Acceptance,
    now: DateTime<Utc>,
) -> Option<Secret<Vec<u8>>> {
    matches!(
        instrument.method(),
        PaymentMethod::Epac | PaymentMethod::DirectEpac
    )
    .then(|| {
        Secret::new(mandate_document(&document_of(
            subject, instrument, enrolled, acceptance, now,
        )))
    })
}
