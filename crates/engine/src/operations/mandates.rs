//! Creating, finding and cancelling mandates.

use std::sync::Arc;

use mandato_core::domain::holidays::ChargeDates;
use mandato_store::calendar;
use mandato_store::db::Db;
use serde_json::Value;

use super::{Ctx, CustomerRef, MandateRef};
use crate::notify::events;
use mandato_core::domain::activation::ActivationMode;
use mandato_core::domain::mandate::Charges;
use mandato_core::domain::state::{InstallmentState, MandateState, MandateType, PaymentMethod};
use mandato_core::error::{Error, Result};
use mandato_store::customers::{self, CustomerRow};
use mandato_store::installments::{self, InstallmentRow, NewInstallment, StateChange};
use mandato_store::mandate_signatures::{self, MandateSignatureRow};
use mandato_store::mandates::{self, MandateKey, MandateRow, MandateWithParts, NewMandate};

/// A mandate, its customer and its installments: the payload of every lookup.
pub struct MandateView {
    pub mandate: MandateRow,
    pub customer: CustomerRow,
    pub installments: Vec<InstallmentRow>,
    /// The latest signature process of a signature-gated mandate's enrolment.
    pub signature: Option<MandateSignatureRow>,
    /// The commerce's calendar and rule, for the installments' charge dates.
    pub charge_dates: Arc<ChargeDates>,
    /// A PENDING mandate whose bank account the bank is validating (Fintoc Direct Debit).
    pub bank_validating: bool,
}

pub struct Urls {
    pub callback: Option<String>,
    pub activation_webhook: Option<String>,
    pub payment_webhook: Option<String>,
}

/// A validated `POST /mandate`.
pub struct CreateMandate {
    pub customer: CustomerRef,
    pub external_id: String,
    pub name: String,
    pub detail: Option<String>,
    pub charges: Charges,
    pub terminate_when_charged: bool,
    pub payment_methods: Option<Vec<PaymentMethod>>,
    /// Installments sent by the merchant (DYNAMIC, or ONEPAY's single one).
    pub installments: Vec<NewInstallment>,
    pub metadata: Option<Value>,
    pub urls: Urls,
    /// `mandate.activation`; absent: the commerce's default.
    pub activation: Option<ActivationMode>,
}

pub struct MagicLinkPolicy {
    pub valid_days: i64,
    /// Days the business clock runs ahead of the wall clock (the sandbox clock's offset): a
    /// link expires by business time, as activation checks it.
    pub business_offset_days: i64,
}

pub fn create(
    conn: Db<'_>,
    ctx: &Ctx<'_>,
    cmd: &CreateMandate,
    link: &MagicLinkPolicy,
) -> Result<MandateView> {
    let customer = super::customers::find(conn, ctx, &cmd.customer, customer_field(&cmd.customer))?;
    let methods = allowed_methods(ctx, cmd.payment_methods.as_deref())?;
    let method_ids: Vec<i64> = methods.iter().map(|m| m.id()).collect();
    let charges_json = cmd.charges.to_json();
    let token = mandato_core::ids::new_token();
    let expires_at = mandato_core::clock::timestamp(
        ctx.now + chrono::Duration::days(link.business_offset_days + link.valid_days),
    );
    let now = ctx.timestamp();
    let mandate = mandates::insert(
        conn,
        &NewMandate {
            commerce_id: ctx.commerce.id,
            customer_seq: customer.seq,
            external_id: &cmd.external_id,
            mandate_type: cmd.charges.mandate_type(),
            name: &cmd.name,
            detail: cmd.detail.as_deref(),
            terminate_when_charged: cmd.terminate_when_charged,
            charges: &charges_json,
            payment_methods: &method_ids,
            metadata: cmd.metadata.as_ref(),
            url_callback: cmd.urls.callback.as_deref(),
            url_activation_webhook: cmd.urls.activation_webhook.as_deref(),
            url_payment_webhook: cmd.urls.payment_webhook.as_deref(),
            magic_link_token: &token,
            magic_link_expires_at: &expires_at,
            activation_mode: cmd.activation.unwrap_or(ctx.commerce.activation_mode),
            now: &now,
        },
    )?;
    let scheduled: Vec<NewInstallment>;
    let planned: &[NewInstallment] = if cmd.installments.is_empty() {
        scheduled = cmd
            .charges
            .scheduled_installments()
            .map_err(|e| Error::validation("mandate.charges", "INVALID_SCHEDULE", e.to_string()))?
            .into_iter()
            .map(|p| NewInstallment {
                external_id: p.id,
                amount: p.amount,
                due_date: p.due_date,
            })
            .collect();
        &scheduled
    } else {
        &cmd.installments
    };
    let rows = installments::insert_many(
        conn,
        mandate.seq,
        ctx.commerce.id,
        planned,
        "installments",
        &now,
    )?;
    Ok(MandateView {
        charge_dates: ctx.charge_dates(conn)?,
        mandate,
        customer,
        installments: sorted(rows),
        signature: None,
        bank_validating: false,
    })
}

fn customer_field(customer: &CustomerRef) -> &'static str {
    match customer {
        CustomerRef::UserId(_) => "customer.userId",
        CustomerRef::InternalUserId(_) => "customer.internalUserId",
    }
}

/// The mandate's methods: the ones asked for, which the commerce must have enabled, or all of
/// the commerce's when none were asked for.
fn allowed_methods(ctx: &Ctx<'_>, asked: Option<&[PaymentMethod]>) -> Result<Vec<PaymentMethod>> {
    let enabled = &ctx.commerce.payment_methods;
    let Some(asked) = asked else {
        return Ok(enabled.clone());
    };
    let mut errors = mandato_core::error::FieldErrors::new();
    for (i, method) in asked.iter().enumerate() {
        if !enabled.contains(method) {
            errors.push(
                format!("paymentMethods[{i}]"),
                "PAYMENT_METHOD_NOT_ENABLED",
                format!(
                    "payment method {} is not enabled for this commerce",
                    method.id()
                ),
            );
        }
    }
    errors.into_result()?;
    Ok(asked.to_vec())
}

fn sorted(mut rows: Vec<InstallmentRow>) -> Vec<InstallmentRow> {
    rows.sort_by(|a, b| a.due_date.cmp(&b.due_date).then(a.seq.cmp(&b.seq)));
    rows
}

pub fn find_row(conn: Db<'_>, ctx: &Ctx<'_>, mandate: &MandateRef) -> Result<MandateRow> {
    let found = match mandate {
        MandateRef::External(id) => mandates::by_external_id(conn, ctx.commerce.id, id)?,
        MandateRef::Internal(id) => mandates::by_internal_id(conn, ctx.commerce.id, id)?,
    };
    found.ok_or(Error::not_found("mandate"))
}

/// The mandate with its customer, installments and signature process.
pub fn view(conn: Db<'_>, mandate: MandateRow) -> Result<MandateView> {
    let charge_dates = Arc::new(calendar::charge_dates(conn, mandate.commerce_id)?);
    view_of(conn, mandates::parts_of(conn, mandate)?, charge_dates)
}

fn view_of(
    conn: Db<'_>,
    parts: MandateWithParts,
    charge_dates: Arc<ChargeDates>,
) -> Result<MandateView> {
    let MandateWithParts {
        mandate,
        customer,
        installments,
    } = parts;
    // Only a signature-gated mandate's enrolment starts a signature process.
    let signature = match mandate.activation_mode {
        ActivationMode::Signature => mandate_signatures::latest_of_mandate(conn, mandate.seq)?,
        ActivationMode::Direct => None,
    };
    // Only a PENDING mandate can be waiting for its bank (one indexed read, only then).
    let bank_validating = mandate.state == mandato_core::domain::state::MandateState::Pending
        && mandato_store::fintoc::latest_of_mandate(conn, mandate.seq)?
            .is_some_and(|e| e.state == "VALIDATING");
    Ok(MandateView {
        charge_dates,
        mandate,
        customer,
        installments,
        signature,
        bank_validating,
    })
}

/// The merchant's lookup: the mandate, its customer and its installments in one read
/// (`mandates::with_parts`), then what only some mandates have.
pub fn find(conn: Db<'_>, ctx: &Ctx<'_>, mandate: &MandateRef) -> Result<MandateView> {
    let key = match mandate {
        MandateRef::External(id) => MandateKey::External(id),
        MandateRef::Internal(id) => MandateKey::Internal(id),
    };
    let parts =
        mandates::with_parts(conn, ctx.commerce.id, key)?.ok_or(Error::not_found("mandate"))?;
    view_of(conn, parts, ctx.charge_dates(conn)?)
}

/// The ONEPAY confirm lookup: a mandate of any other type is not found here.
pub fn find_onepay(conn: Db<'_>, ctx: &Ctx<'_>, external_id: &str) -> Result<MandateView> {
    let view = find(conn, ctx, &MandateRef::External(external_id.to_string()))?;
    if view.mandate.mandate_type != MandateType::Onepay {
        return Err(Error::not_found("ONEPAY mandate"));
    }
    Ok(view)
}

/// Cancels a PENDING or ACTIVE mandate of the named customer: installments not yet submitted
/// for charge are annulled (each with its payment event), then the activation event tells the
/// merchant the mandate is CANCELLED.
pub fn cancel(
    conn: Db<'_>,
    ctx: &Ctx<'_>,
    mandate: &MandateRef,
    customer: &CustomerRef,
    description: &str,
) -> Result<MandateView> {
    let row = find_row(conn, ctx, mandate)?;
    let owner = customers::by_seq(conn, row.customer_seq)?;
    let named = match customer {
        CustomerRef::UserId(id) => owner.user_id == *id,
        CustomerRef::InternalUserId(id) => owner.id == *id,
    };
    if !named {
        // The mandate exists, but not for this customer: the 404 names the customer (the
        // cancel path's `userId`).
        let (_, id) = customer.field("path");
        return Err(Error::not_found_at("mandate", "path.userId", id));
    }
    if !row.state.can_cancel() {
        return Err(Error::refused(
            "MANDATE_STATE_CONFLICT",
            format!("a {} mandate cannot be cancelled", row.state.name()),
        ));
    }
    let now = ctx.timestamp();
    mandates::set_state(
        conn,
        row.seq,
        MandateState::Cancelled,
        Some(description),
        &now,
    )?;
    let cancelled = mandates::by_seq(conn, row.seq)?;
    super::signed_activation::cancel_open_process(
        conn,
        ctx.commerce,
        row.seq,
        ctx.now,
        super::signed_activation::CancelledBy::MandateCancellation,
    )?;
    let charge_dates = calendar::charge_dates(conn, ctx.commerce.id)?;
    for installment in installments::for_mandate(conn, row.seq)? {
        if installment.state.annulled_on_cancel() {
            let annulled = installments::set_state(
                conn,
                installment.seq,
                InstallmentState::Annulled,
                &now,
                &StateChange::default(),
            )?;
            super::ledger::record_annulment(
                conn,
                &super::ledger::Movement {
                    mandate: &cancelled,
                    installment: &annulled,
                    business_date: ctx.today,
                    now: &now,
                },
            )?;
            events::record_payment(
                conn,
                ctx.commerce,
                &charge_dates,
                &cancelled,
                &owner,
                &annulled,
                ctx.now,
            )?;
        }
    }
    events::record_activation(conn, ctx.commerce, &cancelled, &owner, None, ctx.now)?;
    view(conn, cancelled)
}
