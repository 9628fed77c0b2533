//! The reconciliation ledger: every money movement appends its entry in the transaction of the
//! state change that causes it (the `record_*` functions take that transaction), and payout
//! reports are matched against the entries.

use chrono::NaiveDate;
use mandato_store::db::Db;
use rust_decimal::Decimal;

use super::Ctx;
use mandato_core::domain::ledger::{
    self, EntryKind, EntryMethod, Mismatch, PayoutDue, PayoutLine, match_payouts,
};
use mandato_core::domain::money::{Currency, Money};
use mandato_core::domain::state::PaymentMethod;
use mandato_core::error::{Error, Result};
use mandato_store::installments::InstallmentRow;
use mandato_store::ledger::{
    self as store, EntryFilter, EntryRow, NewEntry, NewReconciliation, ReconciliationRow,
    SettlementRow,
};
use mandato_store::mandates::MandateRow;

/// The installment a movement belongs to, and when it happened.
pub struct Movement<'a> {
    pub mandate: &'a MandateRow,
    pub installment: &'a InstallmentRow,
    /// The business date (America/Santiago) the money moved on.
    pub business_date: NaiveDate,
    pub now: &'a str,
}

/// What the processor approved.
pub struct Approval<'a> {
    /// The amount charged (CLP for UF installments).
    pub charged: &'a Money,
    pub method: PaymentMethod,
    pub authorization_code: &'a str,
    pub fee: Option<Decimal>,
}

struct Line<'a> {
    kind: EntryKind,
    amount: Decimal,
    currency: Currency,
    fee: Option<Decimal>,
    method: Option<&'a str>,
    reference: Option<&'a str>,
}

fn append(conn: Db<'_>, at: &Movement<'_>, line: Line<'_>) -> Result<()> {
    let business_date = at.business_date.to_string();
    store::insert(conn, &new_entry(at, &business_date, line))?;
    Ok(())
}

fn new_entry<'a>(at: &Movement<'a>, business_date: &'a str, line: Line<'a>) -> NewEntry<'a> {
    NewEntry {
        commerce_id: at.mandate.commerce_id,
        kind: line.kind,
        amount: line.amount,
        currency: line.currency,
        fee: line.fee,
        payment_method: line.method,
        mandate_id: &at.mandate.id,
        mandate_external_id: &at.mandate.external_id,
        installment_id: &at.installment.id,
        installment_external_id: &at.installment.external_id,
        acquirer_reference: line.reference,
        business_date,
        created_at: at.now,
    }
}

/// A charge the processor approved (charging run, settled bank debit, Magic Link portal). An
/// acquirer that reported no fee (Transbank, Fintoc) is charged at the commerce's fee rule
/// for the method, which a reconciliation import corrects later.
pub fn record_charge(conn: Db<'_>, at: &Movement<'_>, approval: &Approval<'_>) -> Result<()> {
    record_charges(conn, &[(at, approval)])
}

/// `record_charge` for many approvals (a charging page's), appended in one statement.
pub fn record_charges(conn: Db<'_>, charges: &[(&Movement<'_>, &Approval<'_>)]) -> Result<()> {
    let dates: Vec<String> = charges
        .iter()
        .map(|(at, _)| at.business_date.to_string())
        .collect();
    let mut entries = Vec::with_capacity(charges.len());
    // A page of Transbank approvals (no fee reported) reads each commerce's rule once.
    let mut rules = std::collections::HashMap::new();
    for ((at, approval), business_date) in charges.iter().zip(&dates) {
        let fee = match approval.fee {
            Some(reported) => reported,
            None => {
                let key = (at.mandate.commerce_id, approval.method);
                let rule = match rules.entry(key) {
                    std::collections::hash_map::Entry::Occupied(known) => known.into_mut(),
                    std::collections::hash_map::Entry::Vacant(slot) => {
                        slot.insert(super::fees::rule_for(conn, key.0, key.1)?)
                    }
                };
                rule.fee(approval.charged)
            }
        };
        let line = Line {
            kind: EntryKind::Charge,
            amount: approval.charged.amount(),
            currency: approval.charged.currency(),
            fee: Some(fee),
            method: Some(approval.method.name()),
            reference: Some(approval.authorization_code),
        };
        entries.push(new_entry(at, business_date, line));
    }
    store::insert_many(conn, &entries)
}

/// A paid installment taken back: minus what its payment brought in, under the charge's
/// authorization code (the acquirer deducts it under that reference; its fee is not refunded).
pub fn record_reversal(conn: Db<'_>, at: &Movement<'_>) -> Result<()> {
    let paid = store::last_charge_of(conn, at.mandate.commerce_id, &at.installment.id)?;
    let (amount, currency, method, reference) = match &paid {
        Some(entry) => (
            entry.amount,
            entry.currency,
            entry.payment_method.clone(),
            entry
                .acquirer_reference
                .clone()
                .filter(|_| entry.kind == EntryKind::Charge),
        ),
        // Paid before the ledger was kept: what the installment itself says.
        None => {
            let charged = at
                .installment
                .charged_clp
                .as_deref()
                .and_then(|c| c.parse::<Decimal>().ok());
            let (amount, currency) = match charged {
                Some(clp) => (clp, Currency::Clp),
                None => (
                    at.installment.amount.amount(),
                    at.installment.amount.currency(),
                ),
            };
            let method = at
                .installment
                .payment_method_id
                .and_then(PaymentMethod::from_id)
                .map(EntryMethod::Instrument)
                .unwrap_or(EntryMethod::Manual);
            (
                amount,
                currency,
                Some(method.as_str().to_string()),
                at.installment.authorization_code.clone(),
            )
        }
    };
    append(
        conn,
        at,
        Line {
            kind: EntryKind::Reversal,
            amount: -amount,
            currency,
            fee: None,
            method: method.as_deref(),
            reference: reference.as_deref(),
        },
    )
}

/// A payment the merchant recorded by hand: the installment's amount, outside the acquirer.
pub fn record_manual_payment(
    conn: Db<'_>,
    at: &Movement<'_>,
    authorization_code: Option<&str>,
) -> Result<()> {
    append(
        conn,
        at,
        Line {
            kind: EntryKind::ManualPayment,
            amount: at.installment.amount.amount(),
            currency: at.installment.amount.currency(),
            fee: None,
            method: Some(EntryMethod::Manual.as_str()),
            reference: authorization_code,
        },
    )
}

/// An annulled installment: no cash moves, the receivable is written off. Kept in the ledger
/// so the write-off is visible beside the money; settlements and reconciliation leave it out.
pub fn record_annulment(conn: Db<'_>, at: &Movement<'_>) -> Result<()> {
    append(
        conn,
        at,
        Line {
            kind: EntryKind::Annulment,
            amount: at.installment.amount.amount(),
            currency: at.installment.amount.currency(),
            fee: None,
            method: None,
            reference: None,
        },
    )
}

/// A payout line matched with its entry.
pub struct Matched {
    pub line: PayoutLine,
    pub entry: EntryRow,
}

/// A payout line no entry accounts for.
pub struct Unmatched {
    pub line: PayoutLine,
    pub reason: Mismatch,
}

/// The result of matching a payout report against the commerce's ledger.
pub struct Reconciled {
    pub id: String,
    /// The report's first and last line dates (none for a report without lines).
    pub period: Option<(NaiveDate, NaiveDate)>,
    pub lines: usize,
    pub matched: Vec<Matched>,
    /// Charges and reversals of the period the report does not pay.
    pub entries_without_payout: Vec<EntryRow>,
    pub lines_without_entry: Vec<Unmatched>,
}

/// Reads a payout report and matches it against the acting commerce's ledger. Every bad cell
/// is a validation error at `csv.line[N].<column>`.
pub fn reconcile(conn: Db<'_>, ctx: &Ctx<'_>, report: &str) -> Result<Reconciled> {
    let lines = ledger::parse_payout_report(report).map_err(|e| Error::Validation(e.into_vec()))?;
    let period = ledger::report_period(&lines);
    let entries = match period {
        Some((first, last)) => {
            let references: Vec<&str> = lines.iter().map(|l| l.reference.as_str()).collect();
            store::acquirer_entries(
                conn,
                ctx.commerce.id,
                &first.to_string(),
                &last.to_string(),
                &references,
            )?
        }
        None => Vec::new(),
    };
    let dues: Vec<PayoutDue> = entries
        .iter()
        .map(|e| {
            let business_date = e.business_date.parse().map_err(|_| {
                Error::Internal(anyhow::anyhow!("entry {} has no business date", e.id))
            })?;
            Ok(PayoutDue {
                reference: e.acquirer_reference.clone().unwrap_or_default(),
                amount: e.payout_amount(),
                business_date,
                expected: period
                    .is_some_and(|(first, last)| business_date >= first && business_date <= last),
            })
        })
        .collect::<Result<_>>()?;
    let matching = match_payouts(&dues, &lines);
    Ok(Reconciled {
        id: mandato_core::ids::new_id("rec"),
        period,
        lines: lines.len(),
        matched: matching
            .matched
            .iter()
            .map(|(l, d)| Matched {
                line: lines[*l].clone(),
                entry: entries[*d].clone(),
            })
            .collect(),
        entries_without_payout: matching
            .unpaid
            .iter()
            .map(|d| entries[*d].clone())
            .collect(),
        lines_without_entry: matching
            .unmatched_lines
            .iter()
            .map(|(l, reason)| Unmatched {
                line: lines[*l].clone(),
                reason: *reason,
            })
            .collect(),
    })
}

/// The simulated acquirer's payout report of `date` for the commerce: one line per charge of
/// that business date, net of its fee, and one per reversal, deducted.
pub fn sandbox_payout_report(conn: Db<'_>, commerce_id: i64, date: NaiveDate) -> Result<String> {
    let day = date.to_string();
    let entries = store::acquirer_entries(conn, commerce_id, &day, &day, &[])?;
    let lines: Vec<(NaiveDate, String, Decimal)> = entries
        .iter()
        .filter_map(|e| {
            let reference = e.acquirer_reference.clone()?;
            Some((date, reference, e.payout_amount()))
        })
        .collect();
    Ok(ledger::write_payout_report(&lines))
}

/// One page of a commerce's entries, oldest first (`filter.limit` of them), and the sequence
/// number the next page starts after.
pub fn entries_page(
    conn: Db<'_>,
    filter: &EntryFilter<'_>,
) -> Result<(Vec<EntryRow>, Option<i64>)> {
    let mut rows = store::list(
        conn,
        &EntryFilter {
            limit: filter.limit + 1,
            ..*filter
        },
    )?;
    let next = if rows.len() as i64 > filter.limit {
        rows.truncate(filter.limit as usize);
        rows.last().map(|r| r.seq)
    } else {
        None
    };
    Ok((rows, next))
}

/// Every entry of a commerce in a period, oldest first, read page by page (exports).
pub fn all_entries(
    conn: Db<'_>,
    commerce_id: i64,
    from: Option<&str>,
    to: Option<&str>,
) -> Result<Vec<EntryRow>> {
    let mut all = Vec::new();
    let mut after_seq = None;
    loop {
        let rows = store::list(
            conn,
            &EntryFilter {
                commerce_id,
                from,
                to,
                kind: None,
                after_seq,
                limit: 1000,
            },
        )?;
        let Some(last) = rows.last() else { break };
        after_seq = Some(last.seq);
        all.extend(rows);
    }
    Ok(all)
}

/// A commerce's daily settlements in a period.
pub fn settlements(
    conn: Db<'_>,
    commerce_id: i64,
    from: Option<&str>,
    to: Option<&str>,
) -> Result<Vec<SettlementRow>> {
    Ok(store::settlements(conn, commerce_id, from, to)?)
}

/// A commerce's latest payout report imports, newest first.
pub fn reconciliations(
    conn: Db<'_>,
    commerce_id: i64,
    limit: i64,
) -> Result<Vec<ReconciliationRow>> {
    Ok(store::reconciliations(conn, commerce_id, limit)?)
}

/// Stores a payout report's import with its result.
pub fn save_reconciliation(conn: Db<'_>, import: &NewReconciliation<'_>) -> Result<()> {
    Ok(store::insert_reconciliation(conn, import)?)
}
