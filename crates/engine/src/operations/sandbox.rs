//! The sandbox's own operations on a commerce's data.

use std::sync::Arc;

use chrono::NaiveDate;
use serde_json::json;

use mandato_core::domain::holidays::ChargeDates;
use mandato_core::domain::state::{MandateState, RejectionCode};
use mandato_core::error::{Error, Result};
use mandato_store::audit::CorrelationClaim;
use mandato_store::db::Db;
use mandato_store::deliveries::{self, AttemptRow, EventSummary};
use mandato_store::installments::{self, InstallmentRow};
use mandato_store::sandbox_reset::{self, ResetCounts, Scope, TriggerRecord};
use mandato_store::{calendar, mandates, settings};

use super::Ctx;
use crate::Engine;
use crate::charging::run::{RunSummary, Trigger};

/// Removes one commerce's test data (all of it, or only `mandato trigger`'s), children first,
/// in the caller's transaction (`POST /sandbox/reset` and `mandato sandbox reset`).
pub fn reset(tx: Db<'_>, commerce_id: i64, scope: Scope) -> Result<ResetCounts> {
    Ok(sandbox_reset::reset(tx, commerce_id, scope)?)
}

/// Marks a record `mandato trigger` made, in its creation's transaction, so that totals leave
/// it out and `sandbox reset --triggers-only` finds it.
pub fn mark_trigger_record(tx: Db<'_>, record: TriggerRecord) -> Result<()> {
    Ok(sandbox_reset::mark_trigger_record(tx, record)?)
}

/// Sends one of the acting commerce's events again now; false when it has no such event with
/// a webhook URL.
pub fn redeliver(tx: Db<'_>, ctx: &Ctx<'_>, event_id: &str) -> Result<bool> {
    Ok(deliveries::request_redelivery(
        tx,
        Some(ctx.commerce.id),
        event_id,
        &ctx.timestamp(),
    )?)
}

/// One of the acting commerce's events with its stored body and attempts
/// (`EVENT_NOT_FOUND` otherwise).
pub fn notification(
    conn: Db<'_>,
    ctx: &Ctx<'_>,
    event_id: &str,
) -> Result<(EventSummary, String, Vec<AttemptRow>)> {
    let Some((seq, commerce_id, event, body)) = deliveries::event_with_body(conn, event_id)? else {
        return Err(Error::not_found("event"));
    };
    if commerce_id != ctx.commerce.id {
        return Err(Error::not_found("event"));
    }
    Ok((event, body, deliveries::attempts_of(conn, seq)?))
}

/// The acting commerce's webhook fault injection as stored (JSON), if any.
pub fn faults(conn: Db<'_>, ctx: &Ctx<'_>) -> Result<Option<String>> {
    Ok(deliveries::faults(conn, ctx.commerce.id)?)
}

/// Sets (or with `None` turns off) the acting commerce's webhook fault injection.
pub fn set_faults(tx: Db<'_>, ctx: &Ctx<'_>, faults: Option<&str>) -> Result<()> {
    Ok(deliveries::set_faults(tx, ctx.commerce.id, faults)?)
}

/// What a forced outcome asks of an installment's next charge.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ForcedOutcome {
    Paid,
    Rejected(RejectionCode),
    /// Reverses a paid installment at once.
    Reversed,
}

/// Forces the outcome of one of the acting commerce's installments: its next charge's result,
/// or a reversal now. Answers the installment as it is afterwards and the commerce's charge
/// dates.
pub fn force_outcome(
    tx: Db<'_>,
    ctx: &Ctx<'_>,
    internal_id: &str,
    outcome: ForcedOutcome,
) -> Result<(InstallmentRow, ChargeDates)> {
    let row = installments::by_internal_id(tx, ctx.commerce.id, internal_id)?
        .ok_or(Error::not_found("installment"))?;
    let mandate = mandates::by_seq(tx, row.mandate_seq)?;
    if matches!(
        mandate.state,
        MandateState::Cancelled | MandateState::Deleted
    ) {
        return Err(Error::refused(
            "MANDATE_STATE_CONFLICT",
            format!("the mandate is {}", mandate.state.name()),
        ));
    }
    if outcome == ForcedOutcome::Reversed {
        let reversed = super::installments::reverse(tx, ctx, &row, &mandate)?;
        let dates = calendar::charge_dates(tx, ctx.commerce.id)?;
        return Ok((reversed, dates));
    }
    if row.state.is_settled() {
        return Err(Error::refused(
            "INSTALLMENT_STATE_CONFLICT",
            format!(
                "a {} installment will not be charged again",
                row.state.name()
            ),
        ));
    }
    let forced = match outcome {
        ForcedOutcome::Rejected(code) => json!({"result": "REJECTED", "code": code.as_str()}),
        _ => json!({"result": "PAID", "code": null}),
    };
    mandato_store::charging::set_forced_outcome(tx, row.seq, Some(&forced.to_string()))?;
    Ok((
        installments::by_seq(tx, row.seq)?,
        calendar::charge_dates(tx, ctx.commerce.id)?,
    ))
}

impl Engine {
    /// Takes the business clock as stored: engines that share a PostgreSQL database share one
    /// sandbox clock, and another engine may have moved it since this one last looked.
    pub async fn follow_stored_clock(&self) -> Result<()> {
        let store = Arc::clone(self.store());
        let stored = tokio::task::spawn_blocking(move || {
            store.read(|c| Ok(settings::get(c, settings::SANDBOX_OFFSET_DAYS)?))
        })
        .await
        .map_err(|e| Error::Internal(e.into()))??;
        if let Some(days) = stored.and_then(|o| o.parse().ok()) {
            self.calendar.catch_up_to(days);
        }
        Ok(())
    }

    /// Moves the business clock a day at a time up to `target`, running the charging engine
    /// for each date crossed, in order; the offset is stored so that it survives a restart.
    /// Each day's offset commits on its own; the request's correlationId (the current claim)
    /// commits with the first, so an answered advance cannot be replayed after a crash.
    pub async fn advance_business_clock(&self, target: NaiveDate) -> Result<Vec<RunSummary>> {
        let today = self.today();
        let mut runs = Vec::new();
        let mut claim = CorrelationClaim::current();
        let mut offset = self.calendar.offset_days();
        for date in (today + chrono::Duration::days(1))
            .iter_days()
            .take_while(|d| *d <= target)
        {
            offset += 1;
            self.calendar.set_offset_days(offset);
            let store = Arc::clone(self.store());
            let claim = claim.take();
            tokio::task::spawn_blocking(move || {
                store.write(|tx| {
                    if let Some(claim) = &claim {
                        mandato_store::audit::record_claim(tx, claim)?;
                    }
                    let days = offset.to_string();
                    Ok(settings::set(tx, settings::SANDBOX_OFFSET_DAYS, &days)?)
                })
            })
            .await
            .map_err(|e| Error::Internal(e.into()))??;
            let charger = Arc::clone(&self.charger);
            let summary = tokio::task::spawn_blocking(move || charger.run(date, Trigger::Sandbox))
                .await
                .map_err(|e| Error::Internal(e.into()))??;
            runs.push(summary);
        }
        self.schedule_wake.notify_one();
        self.deliverer.wake();
        Ok(runs)
    }
}
