//! A charging run for one business date.
//!
//! On a day that is not a business day (`domain::holidays`) nothing is settled or charged.
//!
//! 1. Settle: direct debits left IN_VALIDATION by earlier dates get the bank's answer.
//! 2. Charge: every installment due that date, in batches (a due date on a weekend or holiday
//!    is charged by the next business day's run, or by the one before it for commerces whose
//!    rule is `PREVIOUS`). Each attempt is first written
//!    IN_PROCESS with its idempotency key (`{installment}-{date}`) and committed; only then is
//!    the processor called; then the outcome is written. A crash between the two leaves the
//!    attempt IN_PROCESS, and `reconcile` asks the processor with the same key, which never
//!    charges twice. The UNIQUE (installment, date) attempt row means at most one attempt per
//!    installment and business date, whoever runs it.
//! 3. PERMANENT mandates are topped up to their 12 upcoming installments.
//!
//! Every state change writes its payment event in the same transaction.

use std::collections::HashMap;
use std::str::FromStr;
use std::sync::{Arc, Mutex};

use chrono::NaiveDate;
use mandato_store::db::Db;
use rust_decimal::Decimal;
use rust_decimal::prelude::RoundingStrategy;

use crate::notify::events;
use crate::operations::installments::finish_all_if_complete;
use crate::operations::ledger;
use mandato_core::clock::{Clock, timestamp};
use mandato_core::domain::date::Date;
use mandato_core::domain::holidays::ChargeDates;
use mandato_core::domain::mandate::PERMANENT_HORIZON;
use mandato_core::domain::money::{Currency, Money};
use mandato_core::domain::schedule::{Periodicity, nth_due_date};
use mandato_core::domain::state::{InstallmentState, PaymentMethod, RejectionCode};
use mandato_core::error::{Error, Result};
use mandato_core::processor::{ChargeRequest, ChargeResult, Forced, Processor, ProcessorError};

use crate::rails::transbank::WebpayOutcome;
use crate::rails::{Acquirer, Rails, rail_of, webpay};
use mandato_core::domain::acquirer::Rail;
use mandato_store::charging::{
    self as store, BeginCharge, FinishedAttempt, InstallmentOutcome, NewAttempt, OpenAttempt,
    RunCounts,
};
use mandato_store::commerces::{self, Commerce};
use mandato_store::customers::CustomerRow;
use mandato_store::installments::{self, InstallmentRow, NewInstallment};
use mandato_store::mandates::MandateRow;
use mandato_store::{Store, calendar, customers, instruments, mandates};

/// Installments per page: one transaction writes their attempts, one acquirer call charges
/// them, one transaction writes their outcomes.
const BATCH: usize = 1000;

/// How long after it was recorded an IN_PROCESS attempt counts as abandoned by its engine:
/// well past the longest a processor call may take.
const ABANDONED_AFTER: chrono::Duration = chrono::Duration::minutes(10);

/// Default retry policy: days after the first rejection, for soft declines only.
pub const DEFAULT_RETRY_DAYS: [i64; 3] = [1, 3, 7];

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Trigger {
    Schedule,
    CatchUp,
    Manual,
    Sandbox,
}

impl Trigger {
    pub fn as_str(self) -> &'static str {
        match self {
            Trigger::Schedule => "SCHEDULE",
            Trigger::CatchUp => "CATCH_UP",
            Trigger::Manual => "MANUAL",
            Trigger::Sandbox => "SANDBOX",
        }
    }
}

#[derive(Debug, Clone)]
pub struct RunSummary {
    pub date: NaiveDate,
    pub counts: RunCounts,
    /// Whether `date` is a business day: on another day nothing is charged or settled.
    pub business_day: bool,
    /// The first business day after `date`, when `date` is not one: when the run charges.
    pub next_business_day: Option<NaiveDate>,
}

/// The progress of the run under way, for the log and the staff API.
#[derive(Debug, Clone, Default)]
pub struct Progress {
    pub date: Option<NaiveDate>,
    pub done: i64,
    pub total: i64,
}

pub struct Charger {
    store: Arc<Store>,
    /// Each commerce's acquirers: the processor of an installment is its commerce's.
    rails: Arc<Rails>,
    clock: Arc<dyn Clock>,
    /// Sandbox-forced outcomes are honoured only in the sandbox.
    sandbox: bool,
    /// Called after every committed batch, so the webhook worker sends at once.
    on_events: Box<dyn Fn() + Send + Sync>,
    /// One run at a time in this process (other processes are kept out by the attempt rows).
    running: Mutex<()>,
    progress: Mutex<Progress>,
}

/// How long calls to acquirers stay in their log: past any dispute of a card charge.
pub const ACQUIRER_CALLS_KEPT_DAYS: i64 = 180;

/// An attempt written IN_PROCESS, ready for the processor.
struct Begun {
    attempt_seq: i64,
    installment_seq: i64,
    key: String,
    token: String,
    customer_ref: String,
    method: PaymentMethod,
    amount: Money,
    forced: Option<Forced>,
    processor: Arc<dyn Processor>,
    /// Read in the attempt's transaction, for the outcome's event (the mandate's state is read
    /// again then: it is the only part that can change meanwhile).
    known: Known,
}

/// An installment ready to be attempted, with what it is charged with and by whom.
struct Prepared {
    installment: InstallmentRow,
    key: String,
    amount: Money,
    /// `amount`'s decimal, as the attempt records it.
    amount_text: String,
    /// UF installments: the CLP amount charged.
    charged_clp: Option<String>,
    token: String,
    method: PaymentMethod,
    processor: Arc<dyn Processor>,
    forced: Option<Forced>,
    known: Known,
}

impl Prepared {
    /// The attempt `attempt_seq` this installment's claim inserted, ready for the processor.
    fn begun(self, attempt_seq: i64) -> Begun {
        Begun {
            attempt_seq,
            installment_seq: self.installment.seq,
            key: self.key,
            token: self.token,
            customer_ref: self.known.customer.id.clone(),
            method: self.method,
            amount: self.amount,
            forced: self.forced,
            processor: self.processor,
            known: self.known,
        }
    }
}

/// An attempt with its acquirer's answer, for `apply`.
struct Answered {
    attempt: OpenAttempt,
    /// The mandate and customer read when the attempt began, if in this process.
    known: Option<Known>,
    result: std::result::Result<ChargeResult, ProcessorError>,
}

/// An attempt with its acquirer's decided answer, taken for settling in this transaction.
struct Decided {
    attempt: OpenAttempt,
    known: Option<Known>,
    result: ChargeResult,
}

/// The answered attempts with a decided outcome that are still open, each now taken by this
/// transaction (`store::take_open_attempts`). An acquirer that refused the request declined
/// the card; one unavailable left the outcome unknown: that attempt stays IN_PROCESS.
fn take_decided(
    tx: Db<'_>,
    answered: Vec<Answered>,
    counts: &mut RunCounts,
) -> Result<Vec<Decided>> {
    let mut decided = Vec::with_capacity(answered.len());
    for a in answered {
        let result = match a.result {
            Ok(r) => r,
            Err(ProcessorError::Refused(_)) => ChargeResult::Rejected {
                code: RejectionCode::CardDeclined,
            },
            Err(ProcessorError::Unavailable(e)) => {
                tracing::warn!(key = %a.attempt.idempotency_key, error = %e, "processor unavailable");
                counts.in_process += 1;
                continue;
            }
        };
        decided.push(Decided {
            attempt: a.attempt,
            known: a.known,
            result,
        });
    }
    // Another engine may have moved an attempt on meanwhile (PostgreSQL), with the processor's
    // same answer for the same key: that outcome is already applied.
    let mut taken = std::collections::HashSet::new();
    for state in distinct(decided.iter().map(|d| d.attempt.state.clone())) {
        let seqs: Vec<i64> = decided
            .iter()
            .filter(|d| d.attempt.state == state)
            .map(|d| d.attempt.seq)
            .collect();
        taken.extend(store::take_open_attempts(tx, &seqs, &state)?);
    }
    decided.retain(|d| taken.contains(&d.attempt.seq));
    Ok(decided)
}

/// What each decided outcome writes on its installment and on its attempt, counted.
fn outcome_writes<'d>(
    decided: &'d [Decided],
    retries: &'d HashMap<i64, (String, Option<String>)>,
    counts: &mut RunCounts,
) -> (Vec<(i64, InstallmentOutcome<'d>)>, Vec<FinishedAttempt<'d>>) {
    let mut outcomes = Vec::with_capacity(decided.len());
    let mut finished = Vec::with_capacity(decided.len());
    for d in decided {
        let seq = d.attempt.installment_seq;
        let finish = |state, authorization_code, rejection_code| FinishedAttempt {
            seq: d.attempt.seq,
            state,
            authorization_code,
            rejection_code,
        };
        let (outcome, attempt) = match &d.result {
            ChargeResult::Approved {
                authorization_code, ..
            } => {
                counts.paid += 1;
                (
                    InstallmentOutcome::Paid { authorization_code },
                    finish("PAID", Some(authorization_code.as_str()), None),
                )
            }
            ChargeResult::Pending => {
                counts.in_validation += 1;
                (
                    InstallmentOutcome::InValidation,
                    finish("IN_VALIDATION", None, None),
                )
            }
            ChargeResult::Rejected { code } => {
                let Some((first, next)) = retries.get(&seq) else {
                    continue;
                };
                counts.rejected += 1;
                (
                    InstallmentOutcome::Rejected {
                        code: code.as_str(),
                        message: code.message(),
                        next_retry_date: next.as_deref(),
                        first_rejected_date: first,
                    },
                    finish("REJECTED", None, Some(code.as_str())),
                )
            }
        };
        outcomes.push((seq, outcome));
        finished.push(attempt);
    }
    (outcomes, finished)
}

/// The mandate and customer of each decided attempt's installment, by mandate seq: those
/// read when the attempt began with their state read again (the only part that can change
/// meanwhile), the others read now.
fn parties_now(
    tx: Db<'_>,
    decided: &mut [Decided],
    installments: &HashMap<i64, InstallmentRow>,
) -> Result<HashMap<i64, Known>> {
    let mut parties: HashMap<i64, Known> = HashMap::new();
    for d in decided.iter_mut() {
        let Some(installment) = installments.get(&d.attempt.installment_seq) else {
            continue;
        };
        if let Some(known) = d.known.take()
            && known.mandate.seq == installment.mandate_seq
        {
            parties.entry(known.mandate.seq).or_insert(known);
        }
    }
    let (mut read, customers): (Vec<MandateRow>, Vec<CustomerRow>) = parties
        .into_values()
        .map(|k| (k.mandate, k.customer))
        .unzip();
    mandates::refresh_states(tx, &mut read)?;
    let mut parties: HashMap<i64, Known> = read
        .into_iter()
        .zip(customers)
        .map(|(mandate, customer)| (mandate.seq, Known { mandate, customer }))
        .collect();
    let unknown = distinct(
        installments
            .values()
            .map(|i| i.mandate_seq)
            .filter(|seq| !parties.contains_key(seq)),
    );
    for (mandate, customer) in mandates::by_seqs_with_customer(tx, &unknown)? {
        parties.insert(mandate.seq, Known { mandate, customer });
    }
    Ok(parties)
}

/// Whether an installment read for a page is to be attempted on `day`: PENDING or REJECTED,
/// not attempted that day yet, and not being paid on Webpay right now. (A race the other way,
/// a payment started during the run, is given back when its approval finds the installment
/// charged: `rails::webpay`.)
fn is_ready(cache: &Cache, installment: &InstallmentRow, day: &str) -> bool {
    let ready = matches!(
        installment.state,
        InstallmentState::Pending | InstallmentState::Rejected
    ) && installment
        .last_attempt_date
        .as_deref()
        .is_none_or(|d| d < day);
    if ready && cache.paying_on_webpay.contains(&installment.seq) {
        tracing::info!(installment = %installment.id, "being paid on Webpay; not charged");
        return false;
    }
    ready
}

/// The distinct values of `values`, in their first order.
fn distinct<T: Eq + std::hash::Hash + Clone>(values: impl Iterator<Item = T>) -> Vec<T> {
    let mut seen = std::collections::HashSet::new();
    values.filter(|v| seen.insert(v.clone())).collect()
}

/// The installment's mandate and customer, as read for its attempt.
struct Known {
    mandate: MandateRow,
    customer: CustomerRow,
}

impl Charger {
    pub fn new(
        store: Arc<Store>,
        rails: Arc<Rails>,
        clock: Arc<dyn Clock>,
        sandbox: bool,
        on_events: Box<dyn Fn() + Send + Sync>,
    ) -> Charger {
        Charger {
            store,
            rails,
            clock,
            sandbox,
            on_events,
            running: Mutex::new(()),
            progress: Mutex::new(Progress::default()),
        }
    }

    pub fn progress(&self) -> Progress {
        self.progress
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    fn set_progress(&self, date: Option<NaiveDate>, done: i64, total: i64) {
        *self.progress.lock().unwrap_or_else(|p| p.into_inner()) = Progress { date, done, total };
    }

    fn now(&self) -> String {
        timestamp(self.clock.now())
    }

    pub(super) fn store(&self) -> &Arc<Store> {
        &self.store
    }

    pub(super) fn rails(&self) -> &Rails {
        &self.rails
    }

    pub(super) fn clock(&self) -> &Arc<dyn Clock> {
        &self.clock
    }

    /// Wakes webhook delivery for events just committed.
    pub(super) fn events_written(&self) {
        (self.on_events)();
    }

    /// Runs the engine for `date`. Blocking: call it off the async workers.
    pub fn run(&self, date: NaiveDate, trigger: Trigger) -> Result<RunSummary> {
        // Every date the run writes or compares is this one or derived from it, as text: a
        // day past 9999-12-31 would not order as a date there, so such a run never starts.
        let day = Date::new(date)
            .map_err(|e| {
                Error::refused(mandato_core::domain::date::DATE_OUT_OF_RANGE, e.to_string())
            })?
            .to_string();
        let _one_at_a_time = self.running.lock().unwrap_or_else(|p| p.into_inner());
        self.settle_abandoned()?;
        self.settle_portal_payments(date)?;
        self.settle_fintoc_enrolments()?;
        self.prune_acquirer_calls()?;
        self.prune_fintoc_events()?;
        let run_seq = self
            .store
            .write(|tx| Ok(store::insert_run(tx, &day, trigger.as_str(), &self.now())?))?;
        let mut counts = RunCounts::default();
        let mut cache = Cache {
            paying_on_webpay: self
                .store
                .read(|c| Ok(mandato_store::webpay::open_installments(c)?))?
                .into_iter()
                .collect(),
            ..Cache::default()
        };
        // On a weekend or holiday nothing is charged and no bank answers: the run only
        // records itself and tops up permanent mandates.
        let calendar = self.store.read(|c| Ok(calendar::load(c)?))?;
        let business_day = calendar.is_business_day(date);
        let horizon = Date::new(calendar.previous_rule_horizon(date))
            .unwrap_or(Date::MAX)
            .to_string();
        if !business_day {
            tracing::info!(date = %day, "not a business day: nothing charged or settled");
        }

        let settling = if business_day {
            self.store
                .read(|c| Ok(store::open_attempts(c, "IN_VALIDATION", Some(&day))?))?
        } else {
            Vec::new()
        };
        counts.settled += self.settle_validations(&settling, date)? as i64;

        counts.total = if business_day {
            self.store
                .read(|c| Ok(store::count_due(c, &day, &horizon)?))?
        } else {
            0
        };
        self.set_progress(Some(date), 0, counts.total);
        tracing::info!(date = %day, due = counts.total, trigger = trigger.as_str(), "charging run started");
        // Page by page in (due date, seq) order, so memory does not grow with the run.
        let mut after: Option<(String, i64)> = None;
        loop {
            let page = if business_day {
                self.store.read(|c| {
                    let after = after.as_ref().map(|(d, s)| (d.as_str(), *s));
                    Ok(store::due_page(c, &day, &horizon, after, BATCH)?)
                })?
            } else {
                Vec::new()
            };
            let Some((last_seq, last_due)) = page.last() else {
                break;
            };
            after = Some((last_due.clone(), *last_seq));
            let seqs: Vec<i64> = page.iter().map(|(seq, _)| *seq).collect();
            self.charge_page(&mut cache, &seqs, date, run_seq, &mut counts)?;
            (self.on_events)();
            self.set_progress(Some(date), counts.done, counts.total);
            tracing::info!(date = %day, done = counts.done, total = counts.total, "charging progress");
        }

        self.top_up_permanent(date)?;
        self.store
            .write(|tx| Ok(store::update_run(tx, run_seq, &counts, Some(&self.now()))?))?;
        self.set_progress(None, counts.done, counts.total);
        (self.on_events)();
        tracing::info!(date = %day, ?counts, "charging run finished");
        let next_business_day = (!business_day)
            .then(|| date.succ_opt().and_then(|d| calendar.on_or_after(d)))
            .flatten();
        Ok(RunSummary {
            date,
            counts,
            business_day,
            next_business_day,
        })
    }

    /// Charges one page of installments as of `date`: every attempt recorded IN_PROCESS and
    /// committed, only then sent to the acquirers, then the outcomes and their events committed
    /// together. An installment no longer ready (charged meanwhile) is skipped. Each step is a
    /// few statements for the whole page (`begin_page`, `apply`): on PostgreSQL a page is a
    /// handful of round trips, not a few per installment.
    fn charge_page(
        &self,
        cache: &mut Cache,
        page: &[i64],
        date: NaiveDate,
        run_seq: i64,
        counts: &mut RunCounts,
    ) -> Result<()> {
        let day = date.to_string();
        // 1. Every attempt of the page IN_PROCESS with its key, committed.
        let begun = self.store.write(|tx| {
            let begun = self.begin_page(tx, cache, page, date, run_seq, counts)?;
            store::update_run(tx, run_seq, counts, None)?;
            Ok(begun)
        })?;
        (self.on_events)();
        // 2. Only then the processor.
        let results = charge_by_acquirer(&begun);
        // 3. The outcomes and their events, committed together.
        self.store.write(|tx| {
            let answered = begun
                .into_iter()
                .zip(results)
                .map(|(b, result)| Answered {
                    attempt: OpenAttempt {
                        seq: b.attempt_seq,
                        installment_seq: b.installment_seq,
                        idempotency_key: b.key,
                        business_date: day.clone(),
                        amount: String::new(),
                        currency: String::new(),
                        state: "IN_PROCESS".to_string(),
                        created_at: String::new(),
                    },
                    known: Some(b.known),
                    result,
                })
                .collect();
            self.apply(tx, cache, answered, date, counts)?;
            counts.done += page.len() as i64;
            // Installments that fell due during the run are charged too.
            counts.total = counts.total.max(counts.done);
            store::update_run(tx, run_seq, counts, None).map_err(Error::from)
        })?;
        Ok(())
    }

    /// Charges only these installments, on the business date `date`, as a run charges any:
    /// `mandato trigger` charges its own throwaway mandate this way and nobody else's.
    pub fn charge_only(
        &self,
        date: NaiveDate,
        installment_seqs: &[i64],
        trigger: Trigger,
    ) -> Result<RunSummary> {
        let day = Date::new(date)
            .map_err(|e| {
                Error::refused(mandato_core::domain::date::DATE_OUT_OF_RANGE, e.to_string())
            })?
            .to_string();
        let _one_at_a_time = self.running.lock().unwrap_or_else(|p| p.into_inner());
        let run_seq = self
            .store
            .write(|tx| Ok(store::insert_run(tx, &day, trigger.as_str(), &self.now())?))?;
        let mut cache = Cache::default();
        let mut counts = RunCounts {
            total: installment_seqs.len() as i64,
            ..RunCounts::default()
        };
        self.charge_page(&mut cache, installment_seqs, date, run_seq, &mut counts)?;
        self.store
            .write(|tx| Ok(store::update_run(tx, run_seq, &counts, Some(&self.now()))?))?;
        (self.on_events)();
        Ok(RunSummary {
            date,
            counts,
            business_day: true,
            next_business_day: None,
        })
    }

    /// Writes the attempts of a page's installments IN_PROCESS, with their installments' new
    /// state and its events: the attempts begun, in the page's order. An installment is left
    /// out when it is not to be attempted (attempted meanwhile, being paid on Webpay, no
    /// instrument or acquirer, or a UF amount without the day's UF value).
    fn begin_page(
        &self,
        tx: Db<'_>,
        cache: &mut Cache,
        page: &[i64],
        date: NaiveDate,
        run_seq: i64,
        counts: &mut RunCounts,
    ) -> Result<Vec<Begun>> {
        let day = date.to_string();
        let mut read: HashMap<i64, InstallmentRow> = installments::by_seqs(tx, page)?
            .into_iter()
            .map(|i| (i.seq, i))
            .collect();
        let ready: Vec<InstallmentRow> = page
            .iter()
            .filter_map(|seq| read.remove(seq))
            .filter(|i| is_ready(cache, i, &day))
            .collect();
        let mandate_seqs = distinct(ready.iter().map(|i| i.mandate_seq));
        let parties: HashMap<i64, (MandateRow, CustomerRow)> =
            mandates::by_seqs_with_customer(tx, &mandate_seqs)?
                .into_iter()
                .map(|(m, c)| (m.seq, (m, c)))
                .collect();
        let instruments: HashMap<i64, instruments::InstrumentRow> =
            instruments::for_mandates(tx, &mandate_seqs)?
                .into_iter()
                .collect();
        let mut prepared = Vec::with_capacity(ready.len());
        for installment in ready {
            let Some((mandate, customer)) = parties.get(&installment.mandate_seq) else {
                continue;
            };
            let Some(instrument) = instruments.get(&mandate.seq).cloned() else {
                tracing::warn!(mandate = %mandate.id, "active mandate without an instrument; not charged");
                continue;
            };
            let known = Known {
                mandate: mandate.clone(),
                customer: customer.clone(),
            };
            if let Some(p) =
                self.prepare(tx, cache, installment, known, instrument, date, counts)?
            {
                prepared.push(p);
            }
        }
        let now = self.now();
        let attempts: Vec<NewAttempt<'_>> = prepared
            .iter()
            .map(|p| NewAttempt {
                installment_seq: p.installment.seq,
                run_seq: Some(run_seq),
                attempt_no: p.installment.attempts + 1,
                business_date: &day,
                idempotency_key: &p.key,
                amount: &p.amount_text,
                currency: p.amount.currency().code(),
                now: &now,
            })
            .collect();
        let inserted = store::insert_attempts(tx, &attempts)?;
        drop(attempts);
        // An installment another engine attempted first is its: left out here.
        let claimed: Vec<(Prepared, i64)> = prepared
            .into_iter()
            .zip(inserted)
            .filter_map(|(p, attempt_seq)| attempt_seq.map(|seq| (p, seq)))
            .collect();
        let charges: Vec<BeginCharge<'_>> = claimed
            .iter()
            .map(|(p, _)| BeginCharge {
                installment_seq: p.installment.seq,
                date: &day,
                method_id: p.method.id(),
                charged_clp: p.charged_clp.as_deref(),
            })
            .collect();
        let in_process: HashMap<i64, InstallmentRow> = store::begin_charges(tx, &charges, &now)?
            .into_iter()
            .map(|i| (i.seq, i))
            .collect();
        drop(charges);
        let changed: Vec<(&Known, &InstallmentRow)> = claimed
            .iter()
            .filter_map(|(p, _)| Some((&p.known, in_process.get(&p.installment.seq)?)))
            .collect();
        self.record_events(tx, cache, &changed)?;
        counts.attempted += claimed.len() as i64;
        Ok(claimed
            .into_iter()
            .map(|(p, attempt_seq)| p.begun(attempt_seq))
            .collect())
    }

    /// What one ready installment is charged with and by whom; `None` when it cannot be
    /// charged now (no acquirer for its rail, or a UF amount without the day's UF value).
    #[allow(clippy::too_many_arguments)]
    fn prepare(
        &self,
        tx: Db<'_>,
        cache: &mut Cache,
        installment: InstallmentRow,
        known: Known,
        instrument: instruments::InstrumentRow,
        date: NaiveDate,
        counts: &mut RunCounts,
    ) -> Result<Option<Prepared>> {
        let Some(method) = PaymentMethod::from_id(instrument.method_id) else {
            return Ok(None);
        };
        let mandate = &known.mandate;
        let Some(processor) = cache.processor(&self.rails, tx, mandate.commerce_id, method)? else {
            counts.acquirer_not_configured += 1;
            tracing::warn!(mandate = %mandate.id, rail = %rail_of(method), "ACQUIRER_NOT_CONFIGURED: the commerce has no acquirer for the rail; not charged");
            return Ok(None);
        };
        let (amount, charged_clp) = match installment.amount.currency() {
            Currency::Clf => match store::uf_value(tx, &date.to_string())? {
                Some(uf) => {
                    let clp = uf_to_clp(installment.amount.amount(), &uf)?;
                    let text = clp.amount().to_string();
                    (clp, Some(text))
                }
                None => {
                    counts.waiting_uf += 1;
                    tracing::warn!(installment = %installment.id, date = %date, "no UF value for the date; the charge waits");
                    return Ok(None);
                }
            },
            _ => (installment.amount.clone(), None),
        };
        let forced = if self.sandbox {
            parse_forced(installment.forced_outcome.as_deref())
        } else {
            None
        };
        Ok(Some(Prepared {
            key: format!("{}-{date}", installment.id),
            amount_text: amount.amount().to_string(),
            amount,
            charged_clp,
            token: instrument.processor_token,
            method,
            processor,
            forced,
            installment,
            known,
        }))
    }

    /// Writes attempts' outcomes on their installments and attempts, with their events: a
    /// page's in a few statements. An outcome not known (the acquirer unavailable) leaves its
    /// attempt IN_PROCESS, to be reconciled by its key later.
    fn apply(
        &self,
        tx: Db<'_>,
        cache: &mut Cache,
        answered: Vec<Answered>,
        date: NaiveDate,
        counts: &mut RunCounts,
    ) -> Result<()> {
        let now = self.now();
        let mut decided = take_decided(tx, answered, counts)?;
        let installment_seqs: Vec<i64> =
            decided.iter().map(|d| d.attempt.installment_seq).collect();
        let mut installments: HashMap<i64, InstallmentRow> =
            installments::by_seqs(tx, &installment_seqs)?
                .into_iter()
                .map(|i| (i.seq, i))
                .collect();
        let parties = parties_now(tx, &mut decided, &installments)?;
        decided.retain(|d| {
            installments
                .get(&d.attempt.installment_seq)
                .is_some_and(|i| parties.contains_key(&i.mandate_seq))
        });
        let retries = self.retry_dates(tx, cache, &decided, &installments, &parties, date)?;
        let (outcomes, finished) = outcome_writes(&decided, &retries, counts);
        // The ledger reads the installments as they were charged (method and CLP amount).
        record_charge_entries(tx, &decided, &installments, &parties, date, &now)?;
        for row in store::record_outcomes(tx, &outcomes, &now)? {
            installments.insert(row.seq, row);
        }
        store::finish_attempts(tx, &finished, &now)?;
        let changed: Vec<(&Known, &InstallmentRow)> = outcomes
            .iter()
            .map(|(seq, _)| {
                let installment = &installments[seq];
                (&parties[&installment.mandate_seq], installment)
            })
            .collect();
        self.record_events(tx, cache, &changed)?;
        // A mandate whose last installment is now settled finishes (not while one awaits the
        // bank).
        let finishing = distinct(
            decided
                .iter()
                .filter(|d| !matches!(d.result, ChargeResult::Pending))
                .map(|d| installments[&d.attempt.installment_seq].mandate_seq),
        );
        let finishing: Vec<&MandateRow> =
            finishing.iter().map(|seq| &parties[seq].mandate).collect();
        finish_all_if_complete(tx, &finishing, &now)?;
        Ok(())
    }

    /// Each rejected installment's first rejection date and next retry date (a business day
    /// of its commerce's calendar, by its retry policy; `None` when it is not retried).
    fn retry_dates(
        &self,
        tx: Db<'_>,
        cache: &mut Cache,
        decided: &[Decided],
        installments: &HashMap<i64, InstallmentRow>,
        parties: &HashMap<i64, Known>,
        date: NaiveDate,
    ) -> Result<HashMap<i64, (String, Option<String>)>> {
        let mut retries = HashMap::new();
        // Each commerce's retry policy, read once for the page's rejections.
        let mut policies: HashMap<i64, Vec<i64>> = HashMap::new();
        for d in decided {
            let ChargeResult::Rejected { code } = &d.result else {
                continue;
            };
            let installment = &installments[&d.attempt.installment_seq];
            let commerce_id = parties[&installment.mandate_seq].mandate.commerce_id;
            let first = installment
                .first_rejected_date
                .as_deref()
                .filter(|_| installment.attempts > 1)
                .and_then(|d| NaiveDate::from_str(d).ok())
                .unwrap_or(date);
            let policy = match policies.entry(commerce_id) {
                std::collections::hash_map::Entry::Occupied(known) => known.into_mut(),
                std::collections::hash_map::Entry::Vacant(slot) => {
                    slot.insert(retry_days(tx, commerce_id)?)
                }
            };
            let calendar = &cache.commerce(tx, commerce_id)?.charge_dates.calendar;
            let next = next_retry(*code, first, date, policy)
                .and_then(|d| calendar.on_or_after(d))
                .and_then(|d| Date::new(d).ok())
                .map(|d| d.to_string());
            retries.insert(installment.seq, (first.to_string(), next));
        }
        Ok(retries)
    }

    /// The payment events of installments' current states, for their mandates and customers.
    fn record_events(
        &self,
        tx: Db<'_>,
        cache: &mut Cache,
        changed: &[(&Known, &InstallmentRow)],
    ) -> Result<()> {
        for (known, _) in changed {
            cache.commerce(tx, known.mandate.commerce_id)?;
        }
        let mut payments = Vec::with_capacity(changed.len());
        for (known, installment) in changed {
            let Some(terms) = cache.commerces.get(&known.mandate.commerce_id) else {
                continue;
            };
            payments.push(events::Payment {
                commerce: &terms.commerce,
                charge_dates: &terms.charge_dates,
                mandate: &known.mandate,
                customer: &known.customer,
                installment,
            });
        }
        events::record_payments(tx, &payments, self.clock.now())
    }

    /// Keeps every ACTIVE PERMANENT mandate with its 12 upcoming installments.
    fn top_up_permanent(&self, date: NaiveDate) -> Result<()> {
        let day = date.to_string();
        let mandates_to_check = self
            .store
            .read(|c| Ok(store::active_permanent_mandates(c)?))?;
        for mandate_seq in mandates_to_check {
            self.store.write(|tx| {
                let (total, upcoming) = store::installment_counts(tx, mandate_seq, &day)?;
                if upcoming >= i64::from(PERMANENT_HORIZON) {
                    return Ok(());
                }
                let mandate = mandates::by_seq(tx, mandate_seq)?;
                let charges = mandate.charges.value();
                let (Some(start), Some(periodicity), Some(currency), Some(amount)) = (
                    charges["startDate"]
                        .as_str()
                        .and_then(|d| Date::parse(d).ok()),
                    charges["periodicity"].as_str().and_then(Periodicity::parse),
                    charges["currencyId"].as_str().and_then(Currency::parse),
                    charges["amount"].as_number(),
                ) else {
                    return Ok(());
                };
                let amount = Money::parse(amount, currency)
                    .map_err(|e| Error::Internal(anyhow::anyhow!("{e}")))?;
                let mut new = Vec::new();
                let mut n = total;
                let mut ahead = upcoming;
                while ahead < i64::from(PERMANENT_HORIZON) {
                    // Past 9999-12-31 there is no next date: the mandate simply stops
                    // generating, and the run goes on with the others.
                    let Some(due_date) = nth_due_date(start, periodicity, n as u32) else {
                        break;
                    };
                    n += 1;
                    if due_date > date {
                        ahead += 1;
                    }
                    new.push(NewInstallment {
                        external_id: n.to_string(),
                        amount: amount.clone(),
                        due_date,
                    });
                }
                installments::insert_many(
                    tx,
                    mandate_seq,
                    mandate.commerce_id,
                    &new,
                    "installments",
                    &self.now(),
                )?;
                Ok(())
            })?;
        }
        Ok(())
    }

    /// At start: finishes attempts a crash left IN_PROCESS by asking the processor with the
    /// same idempotency key (which charges at most once), and marks interrupted runs.
    pub fn reconcile(&self) -> Result<usize> {
        let _one_at_a_time = self.running.lock().unwrap_or_else(|p| p.into_inner());
        self.store.write(|tx| Ok(store::interrupt_running(tx)?))?;
        let open = self
            .store
            .read(|c| Ok(store::open_attempts(c, "IN_PROCESS", None)?))?;
        self.settle_in_process(&open)
    }

    /// Before a run: attempts a dead process left IN_PROCESS are settled here, as a restart
    /// would. On SQLite one engine runs at a time and holds `running`, so every IN_PROCESS
    /// attempt is one a start left waiting (`resend_after`). On PostgreSQL, those another
    /// engine left longer ago than any processor call takes (it died between recording them
    /// and their outcome). Settling takes each attempt first (`take_open_attempt`), so one
    /// still in flight elsewhere is settled once, with the processor's one answer for its key.
    fn settle_abandoned(&self) -> Result<usize> {
        if self.store.backend() != mandato_store::db::Backend::Postgres {
            let left = self
                .store
                .read(|c| Ok(store::open_attempts(c, "IN_PROCESS", None)?))?;
            return self.settle_in_process(&left);
        }
        let cutoff = timestamp(self.clock.now() - ABANDONED_AFTER);
        let abandoned = self
            .store
            .read(|c| Ok(store::in_process_created_before(c, &cutoff)?))?;
        self.settle_in_process(&abandoned)
    }

    /// Before a run: Webpay Plus portal payments whose customer never came back from Webpay
    /// (or came back while no server answered) are asked about, so an installment paid there
    /// is recorded, not charged again. A payment Transbank does not answer for stays open
    /// for the next run.
    fn settle_portal_payments(&self, date: NaiveDate) -> Result<usize> {
        let now = self.clock.now();
        let cutoff = timestamp(now - crate::rails::webpay::OPEN_FOR);
        let open = self
            .store
            .read(|c| Ok(mandato_store::webpay::open_before(c, &cutoff, 1_000)?))?;
        let mut settled = 0;
        for payment in &open {
            let acquirer = self
                .store
                .read(|c| self.rails.acquirer(c, payment.commerce_id, Rail::Cards))?;
            let Acquirer::Transbank(oneclick) = acquirer else {
                continue;
            };
            // A commit, not a status: a customer who paid and never came back still owes the
            // commerce its confirmation; one already committed is answered with its status.
            let applied = match oneclick.webpay_commit(&payment.token) {
                Ok(WebpayOutcome::NotPaid) => webpay::abandon(&self.store, payment, now)?,
                Ok(outcome) => webpay::apply(&self.store, &oneclick, payment, outcome, date, now)?,
                Err(e) => {
                    tracing::warn!(buy_order = %payment.buy_order, error = %e, "portal payment status unknown");
                    continue;
                }
            };
            tracing::info!(buy_order = %payment.buy_order, ?applied, "portal payment settled");
            settled += 1;
        }
        if settled > 0 {
            (self.on_events)();
        }
        Ok(settled)
    }

    /// The acquirer call log keeps [`ACQUIRER_CALLS_KEPT_DAYS`] days.
    fn prune_acquirer_calls(&self) -> Result<usize> {
        let before = timestamp(self.clock.now() - chrono::Duration::days(ACQUIRER_CALLS_KEPT_DAYS));
        self.store
            .write(|tx| Ok(mandato_store::acquirer_calls::prune(tx, &before)?))
    }

    /// Asks the bank about attempts IN_VALIDATION and applies each answer given, as of the
    /// business date `date`; answers how many were decided. One the bank has not decided yet
    /// (Fintoc's `pending`) stays as it is, asked again later.
    pub(super) fn settle_validations(
        &self,
        open: &[OpenAttempt],
        date: NaiveDate,
    ) -> Result<usize> {
        let mut cache = Cache::default();
        let mut decided = 0;
        for attempt in open {
            let Some(charged) = self.charged_by(attempt)? else {
                continue;
            };
            let result = charged.processor.settle(&attempt.idempotency_key);
            if matches!(result, Ok(ChargeResult::Pending)) {
                continue;
            }
            self.store.write(|tx| {
                let mut ignored = RunCounts::default();
                let answered = Answered {
                    attempt: attempt.clone(),
                    known: None,
                    result,
                };
                self.apply(tx, &mut cache, vec![answered], date, &mut ignored)
            })?;
            decided += 1;
        }
        if decided > 0 {
            (self.on_events)();
        }
        Ok(decided)
    }

    /// Settles attempts left IN_PROCESS by asking the processor with their idempotency keys.
    fn settle_in_process(&self, open: &[OpenAttempt]) -> Result<usize> {
        let mut cache = Cache::default();
        for attempt in open {
            let Some(charged) = self.charged_by(attempt)? else {
                continue;
            };
            let currency = Currency::parse(&attempt.currency).unwrap_or(Currency::Clp);
            let amount = Decimal::from_str(&attempt.amount)
                .ok()
                .and_then(|d| Money::from_decimal(d, currency).ok())
                .ok_or_else(|| {
                    Error::Internal(anyhow::anyhow!("attempt {} has no amount", attempt.seq))
                })?;
            let result = match charged.processor.status(&attempt.idempotency_key) {
                Ok(Some(known)) => Ok(known),
                // Not received, perhaps not yet: a send by a process that died may still be
                // under way at the acquirer. It waits for the next run or start.
                Ok(None) if !self.may_resend(attempt, charged.processor.as_ref()) => {
                    tracing::info!(key = %attempt.idempotency_key, "an attempt the acquirer has not seen waits until an earlier send cannot be under way");
                    continue;
                }
                // Never received: send it now, with the same key.
                Ok(None) => charged.processor.charge(&ChargeRequest {
                    idempotency_key: &attempt.idempotency_key,
                    token: &charged.token,
                    customer_ref: &charged.customer_ref,
                    method: charged.method,
                    amount: &amount,
                    forced: charged.forced,
                }),
                Err(e) => Err(e),
            };
            let date = NaiveDate::from_str(&attempt.business_date)
                .map_err(|e| Error::Internal(e.into()))?;
            self.store.write(|tx| {
                let mut counts = RunCounts::default();
                let answered = Answered {
                    attempt: attempt.clone(),
                    known: None,
                    result,
                };
                self.apply(tx, &mut cache, vec![answered], date, &mut counts)
            })?;
        }
        if !open.is_empty() {
            tracing::info!(
                attempts = open.len(),
                "reconciled charge attempts left in process"
            );
            (self.on_events)();
        }
        Ok(open.len())
    }
}

impl Charger {
    /// Whether an attempt the processor has not seen was recorded long enough ago that no
    /// earlier send of it can still be under way (`Processor::resend_after`).
    fn may_resend(&self, attempt: &OpenAttempt, processor: &dyn Processor) -> bool {
        let wait = processor.resend_after();
        if wait.is_zero() {
            return true;
        }
        let Ok(recorded) = chrono::DateTime::parse_from_rfc3339(&attempt.created_at) else {
            return true;
        };
        let wait = chrono::Duration::from_std(wait).unwrap_or(chrono::Duration::MAX);
        self.clock.now() - recorded.with_timezone(&chrono::Utc) >= wait
    }
}

/// What an open attempt was charged with, to ask its acquirer about it.
struct ChargedWith {
    processor: Arc<dyn Processor>,
    token: String,
    customer_ref: String,
    method: PaymentMethod,
    forced: Option<Forced>,
}

impl Charger {
    /// The acquirer, instrument and customer of an open attempt; `None` when its mandate has
    /// no instrument any more or its commerce's rail lost its acquirer (the attempt stays
    /// open until one is set again).
    fn charged_by(&self, attempt: &OpenAttempt) -> Result<Option<ChargedWith>> {
        self.store.read(|c| {
            let installment = installments::by_seq(c, attempt.installment_seq)?;
            let mandate = mandates::by_seq(c, installment.mandate_seq)?;
            let Some(instrument) = instruments::for_mandate(c, mandate.seq)? else {
                return Ok(None);
            };
            let Some(method) = PaymentMethod::from_id(instrument.method_id) else {
                return Ok(None);
            };
            let Some(processor) = self.rails.processor(c, mandate.commerce_id, method)? else {
                tracing::warn!(key = %attempt.idempotency_key, "ACQUIRER_NOT_CONFIGURED: an open attempt waits for its acquirer");
                return Ok(None);
            };
            let customer = customers::by_seq(c, mandate.customer_seq)?;
            Ok(Some(ChargedWith {
                processor,
                token: instrument.processor_token,
                customer_ref: customer.id,
                method,
                forced: if self.sandbox {
                    parse_forced(installment.forced_outcome.as_deref())
                } else {
                    None
                },
            }))
        })
    }
}

/// Sends a page's attempts to their acquirers, one batch per acquirer, and answers the
/// outcomes in the page's order.
fn charge_by_acquirer(begun: &[Begun]) -> Vec<std::result::Result<ChargeResult, ProcessorError>> {
    let mut results: Vec<Option<std::result::Result<ChargeResult, ProcessorError>>> =
        begun.iter().map(|_| None).collect();
    let mut done = vec![false; begun.len()];
    for first in 0..begun.len() {
        if done[first] {
            continue;
        }
        let processor = &begun[first].processor;
        let batch: Vec<usize> = (first..begun.len())
            .filter(|&i| !done[i] && Arc::ptr_eq(&begun[i].processor, processor))
            .collect();
        let requests: Vec<ChargeRequest<'_>> = batch
            .iter()
            .map(|&i| {
                let b = &begun[i];
                ChargeRequest {
                    idempotency_key: &b.key,
                    token: &b.token,
                    customer_ref: &b.customer_ref,
                    method: b.method,
                    amount: &b.amount,
                    forced: b.forced,
                }
            })
            .collect();
        for (i, result) in batch.iter().zip(processor.charge_many(&requests)) {
            results[*i] = Some(result);
            done[*i] = true;
        }
    }
    results
        .into_iter()
        .map(|r| r.unwrap_or_else(|| Err(ProcessorError::Unavailable("not sent".into()))))
        .collect()
}

/// The ledger entries of the approved charges among `decided`, in the outcomes' transaction:
/// the amount charged (CLP for UF installments, as `begin_charge` recorded it) by the
/// installment's method, with the acquirer's fee when it reported one and the default
/// schedule's otherwise (Transbank reports no fee when it charges: the ledger uses the
/// commerce's fee rule, which a reconciliation import corrects).
fn record_charge_entries(
    tx: Db<'_>,
    decided: &[Decided],
    installments: &HashMap<i64, InstallmentRow>,
    parties: &HashMap<i64, Known>,
    date: NaiveDate,
    now: &str,
) -> Result<()> {
    let mut charged = Vec::new();
    for d in decided {
        let ChargeResult::Approved {
            authorization_code,
            fee,
        } = &d.result
        else {
            continue;
        };
        let installment = &installments[&d.attempt.installment_seq];
        let movement = ledger::Movement {
            mandate: &parties[&installment.mandate_seq].mandate,
            installment,
            business_date: date,
            now,
        };
        let (amount, method) = charged_with(installment)?;
        charged.push((movement, amount, method, authorization_code.as_str(), *fee));
    }
    let approvals: Vec<ledger::Approval<'_>> = charged
        .iter()
        .map(
            |(_, amount, method, authorization_code, fee)| ledger::Approval {
                charged: amount,
                method: *method,
                authorization_code,
                fee: *fee,
            },
        )
        .collect();
    let entries: Vec<_> = charged
        .iter()
        .zip(&approvals)
        .map(|((movement, ..), approval)| (movement, approval))
        .collect();
    ledger::record_charges(tx, &entries)
}

/// What a charged installment was charged (CLP for UF installments), and by which method.
fn charged_with(installment: &InstallmentRow) -> Result<(Money, PaymentMethod)> {
    let charged = match installment.charged_clp.as_deref() {
        Some(clp) => Decimal::from_str(clp)
            .ok()
            .and_then(|d| Money::from_decimal(d, Currency::Clp).ok())
            .ok_or_else(|| {
                Error::Internal(anyhow::anyhow!(
                    "installment {} charged_clp",
                    installment.id
                ))
            })?,
        None => installment.amount.clone(),
    };
    let method = installment
        .payment_method_id
        .and_then(PaymentMethod::from_id)
        .ok_or_else(|| {
            Error::Internal(anyhow::anyhow!(
                "installment {} was charged without a method",
                installment.id
            ))
        })?;
    Ok((charged, method))
}

/// The commerce's retry policy (days after the first rejection), or the default.
fn retry_days(tx: Db<'_>, commerce_id: i64) -> Result<Vec<i64>> {
    let stored = store::retry_policy(tx, commerce_id)?;
    Ok(stored
        .and_then(|p| serde_json::from_str::<serde_json::Value>(&p).ok())
        .and_then(|v| serde_json::from_value::<Vec<i64>>(v["afterDays"].clone()).ok())
        .unwrap_or_else(|| DEFAULT_RETRY_DAYS.to_vec()))
}

/// A commerce and the calendar and rule its charge dates follow.
struct CommerceTerms {
    commerce: Commerce,
    charge_dates: ChargeDates,
}

/// Commerces by id, loaded once per run (not once per event or rejection).
#[derive(Default)]
struct Cache {
    commerces: HashMap<i64, CommerceTerms>,
    /// Installments the customer is paying on Webpay Plus right now (read once per run,
    /// after the payments left open were settled): the run leaves them to the customer.
    paying_on_webpay: std::collections::HashSet<i64>,
    /// Each commerce's processor per rail, read once per run.
    processors: HashMap<(i64, Rail), Option<Arc<dyn Processor>>>,
}

impl Cache {
    fn processor(
        &mut self,
        rails: &Rails,
        conn: Db<'_>,
        commerce_id: i64,
        method: PaymentMethod,
    ) -> Result<Option<Arc<dyn Processor>>> {
        let key = (commerce_id, rail_of(method));
        if let Some(known) = self.processors.get(&key) {
            return Ok(known.clone());
        }
        let processor = rails.processor(conn, commerce_id, method)?;
        self.processors.insert(key, processor.clone());
        Ok(processor)
    }

    fn commerce(&mut self, conn: Db<'_>, id: i64) -> Result<&CommerceTerms> {
        Ok(match self.commerces.entry(id) {
            std::collections::hash_map::Entry::Occupied(known) => known.into_mut(),
            std::collections::hash_map::Entry::Vacant(slot) => slot.insert(CommerceTerms {
                commerce: commerces::by_id(conn, id)?
                    .ok_or_else(|| Error::Internal(anyhow::anyhow!("commerce {id} vanished")))?,
                charge_dates: calendar::charge_dates(conn, id)?,
            }),
        })
    }
}

/// The next retry date for a rejection on `today` of a series that began on `first`: the
/// first policy day after today, for soft declines only.
pub fn next_retry(
    code: RejectionCode,
    first: NaiveDate,
    today: NaiveDate,
    policy_days: &[i64],
) -> Option<NaiveDate> {
    if !code.is_soft() {
        return None;
    }
    // A retry that would fall after 9999-12-31 is no retry: such a date cannot be stored.
    policy_days
        .iter()
        .filter_map(|d| first.checked_add_days(chrono::Days::new(u64::try_from(*d).ok()?)))
        .find(|d| *d > today)
        .filter(|d| Date::new(*d).is_ok())
}

/// A UF amount in CLP at the day's value, rounded half up to whole pesos.
fn uf_to_clp(uf_amount: Decimal, uf_value: &str) -> Result<Money> {
    let value = Decimal::from_str(uf_value)
        .map_err(|e| Error::Internal(anyhow::anyhow!("stored UF value: {e}")))?;
    let clp = (uf_amount * value).round_dp_with_strategy(0, RoundingStrategy::MidpointAwayFromZero);
    Money::from_decimal(clp, Currency::Clp).map_err(|e| Error::Internal(anyhow::anyhow!("{e}")))
}

/// The sandbox's decided outcome, stored as `{"result": "PAID"|"REJECTED", "code": ...}`.
pub fn parse_forced(stored: Option<&str>) -> Option<Forced> {
    let value: serde_json::Value = serde_json::from_str(stored?).ok()?;
    match value["result"].as_str()? {
        "PAID" => Some(Forced::Paid),
        "REJECTED" => value["code"]
            .as_str()
            .and_then(RejectionCode::parse)
            .map(Forced::Rejected),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn d(s: &str) -> NaiveDate {
        s.parse().unwrap()
    }

    #[test]
    fn soft_declines_retry_after_1_3_and_7_days_then_stop() {
        let first = d("2026-12-05");
        let soft = RejectionCode::InsufficientFunds;
        assert_eq!(
            next_retry(soft, first, d("2026-12-05"), &DEFAULT_RETRY_DAYS),
            Some(d("2026-12-06"))
        );
        assert_eq!(
            next_retry(soft, first, d("2026-12-06"), &DEFAULT_RETRY_DAYS),
            Some(d("2026-12-08"))
        );
        assert_eq!(
            next_retry(soft, first, d("2026-12-08"), &DEFAULT_RETRY_DAYS),
            Some(d("2026-12-12"))
        );
        assert_eq!(
            next_retry(soft, first, d("2026-12-12"), &DEFAULT_RETRY_DAYS),
            None
        );
        assert_eq!(
            next_retry(
                RejectionCode::ExpiredCard,
                first,
                first,
                &DEFAULT_RETRY_DAYS
            ),
            None
        );
    }

    #[test]
    fn uf_amounts_convert_to_whole_pesos() {
        let clp = uf_to_clp(Decimal::from_str("1.5").unwrap(), "39123.45").unwrap();
        assert_eq!(clp.amount().to_string(), "58685");
    }
}
