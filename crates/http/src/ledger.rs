//! The merchant's ledger: its entries (oldest first, keyset-paged), daily settlements, the
//! reconciliation of an acquirer payout report, and the sandbox's payout report. The wire
//! shapes here also serve the staff API and the CLI.

use std::collections::HashMap;

use axum::extract::{OriginalUri, Query, State};
use axum::http::{HeaderMap, HeaderName, Uri, header};
use axum::response::{AppendHeaders, IntoResponse, Response};
use rust_decimal::Decimal;
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};

use super::AppState;
use super::accept;
use super::auth::Authed;
use super::envelope::Envelope;
use super::error::{ApiResult, ErrorBody};
use super::json::Body;
use super::sandbox::sandbox_only;
use mandato_core::domain::date::Date;
use mandato_core::domain::ledger::EntryKind;
use mandato_core::domain::text::spreadsheet_safe;
use mandato_core::error::{Error, FieldErrors};
use mandato_engine::operations::Ctx;
use mandato_engine::operations::ledger::{self as operation, Reconciled};
use mandato_engine::records::{Db, EntryFilter, EntryRow, NewReconciliation, SettlementRow};

/// Entries per page unless `limit` says otherwise.
pub const DEFAULT_LIMIT: i64 = 50;
/// The most entries one page holds.
pub const MAX_LIMIT: i64 = 500;
/// The largest payout report accepted, in characters of CSV. The body limit is 1 MiB (CONTRACT
/// 11), and JSON may spell each character as a six-byte `\uXXXX` escape: 160,000 characters
/// always fit, so a report over the limit is a 400 at `csv`, never a 413 for the whole body.
pub const MAX_REPORT_CHARS: usize = 160_000;

/// Tab, line breaks, and printable characters of the Basic Multilingual Plane (accents, ñ, a
/// byte-order mark): what a payout report holds. Written as the schema's `pattern` too.
pub fn report_char_allowed(c: char) -> bool {
    matches!(c, '\t' | '\n' | '\r' | ' '..='~' | '\u{A0}'..='\u{FFFD}')
}

/// What an entry records (see the README's ledger section).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum LedgerKind {
    Charge,
    Reversal,
    ManualPayment,
    Annulment,
}

impl From<EntryKind> for LedgerKind {
    fn from(kind: EntryKind) -> Self {
        match kind {
            EntryKind::Charge => LedgerKind::Charge,
            EntryKind::Reversal => LedgerKind::Reversal,
            EntryKind::ManualPayment => LedgerKind::ManualPayment,
            EntryKind::Annulment => LedgerKind::Annulment,
        }
    }
}

/// How the money moved: the enrolled instrument's method, or MANUAL for a payment recorded
/// by hand.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum LedgerMethod {
    CreditCard,
    DebitCard,
    PrepaidCard,
    Pac,
    Epac,
    DirectEpac,
    Manual,
}

impl LedgerMethod {
    fn parse(stored: &str) -> Option<LedgerMethod> {
        serde_json::from_value(serde_json::Value::String(stored.to_string())).ok()
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub enum LedgerCurrency {
    #[serde(rename = "CLP")]
    Clp,
    #[serde(rename = "CLF")]
    Clf,
    #[serde(rename = "USD")]
    Usd,
}

impl From<mandato_core::domain::money::Currency> for LedgerCurrency {
    fn from(c: mandato_core::domain::money::Currency) -> Self {
        use mandato_core::domain::money::Currency;
        match c {
            Currency::Clp => LedgerCurrency::Clp,
            Currency::Clf => LedgerCurrency::Clf,
            Currency::Usd => LedgerCurrency::Usd,
        }
    }
}

/// An exact decimal as a JSON number in its shortest form.
fn number(amount: Decimal) -> serde_json::Number {
    amount
        .normalize()
        .to_string()
        .parse()
        .unwrap_or_else(|_| serde_json::Number::from(0u8))
}

/// One ledger entry.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct LedgerEntry {
    /// `led_...`
    pub entry_id: String,
    pub kind: LedgerKind,
    /// Exact decimal in the currency's major unit; negative for reversals. For annulments, the
    /// receivable written off (no money moved).
    #[schema(value_type = f64)]
    pub amount: serde_json::Number,
    pub currency_id: LedgerCurrency,
    /// The acquirer's fee, when it reported one.
    #[schema(value_type = Option<f64>)]
    pub fee: Option<serde_json::Number>,
    /// `amount - fee`, when there is a fee.
    #[schema(value_type = Option<f64>)]
    pub net: Option<serde_json::Number>,
    /// Null for annulments.
    pub payment_method: Option<LedgerMethod>,
    pub mandate_internal_id: String,
    pub mandate_id: String,
    pub installment_internal_id: String,
    pub installment_id: String,
    /// The acquirer's authorization code (charges; reversals carry their charge's), or the
    /// merchant's code of a manual payment.
    pub acquirer_reference: Option<String>,
    /// The business date (America/Santiago) the money moved on.
    pub business_date: String,
    pub created_at: String,
}

impl From<&EntryRow> for LedgerEntry {
    fn from(e: &EntryRow) -> Self {
        LedgerEntry {
            entry_id: e.id.clone(),
            kind: e.kind.into(),
            amount: number(e.amount),
            currency_id: e.currency.into(),
            fee: e.fee.map(number),
            net: e.net.map(number),
            payment_method: e.payment_method.as_deref().and_then(LedgerMethod::parse),
            mandate_internal_id: e.mandate_id.clone(),
            mandate_id: e.mandate_external_id.clone(),
            installment_internal_id: e.installment_id.clone(),
            installment_id: e.installment_external_id.clone(),
            acquirer_reference: e.acquirer_reference.clone(),
            business_date: e.business_date.clone(),
            created_at: e.created_at.clone(),
        }
    }
}

#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct LedgerPage {
    pub items: Vec<LedgerEntry>,
    /// Pass as `cursor` for the next (newer) page; null on the last page.
    #[schema(pattern = "^[1-9][0-9]{0,17}$")]
    pub next_cursor: Option<String>,
}

#[derive(IntoParams)]
#[into_params(parameter_in = Query)]
#[allow(dead_code)]
pub struct LedgerQuery {
    /// First business date, inclusive.
    from: Option<chrono::NaiveDate>,
    /// Last business date, inclusive.
    to: Option<chrono::NaiveDate>,
    /// Only entries of this kind.
    kind: Option<LedgerKind>,
    /// Entries per page.
    #[param(minimum = 1, maximum = 500, default = 50)]
    limit: Option<i64>,
    /// The `nextCursor` of the previous page, unchanged.
    #[param(pattern = "^[1-9][0-9]{0,17}$")]
    cursor: Option<String>,
}

#[derive(IntoParams)]
#[into_params(parameter_in = Query)]
#[allow(dead_code)]
pub struct PeriodQuery {
    /// First business date, inclusive.
    from: Option<chrono::NaiveDate>,
    /// Last business date, inclusive.
    to: Option<chrono::NaiveDate>,
}

fn date_param(
    query: &HashMap<String, String>,
    name: &str,
    errors: &mut FieldErrors,
) -> Option<String> {
    let text = query.get(name)?;
    match Date::parse(text) {
        Ok(d) => Some(d.to_string()),
        Err(_) => {
            errors.push(
                format!("query.{name}"),
                "INVALID_DATE",
                "a date as YYYY-MM-DD",
            );
            None
        }
    }
}

/// `from` and `to`, each a date, `from` not after `to`.
pub fn parse_period(
    query: &HashMap<String, String>,
    errors: &mut FieldErrors,
) -> (Option<String>, Option<String>) {
    let from = date_param(query, "from", errors);
    let to = date_param(query, "to", errors);
    if let (Some(f), Some(t)) = (&from, &to)
        && f > t
    {
        errors.push("query.to", "INVALID_PERIOD", "to must not be before from");
    }
    (from, to)
}

/// A listing's filters, validated.
pub struct ListFilter {
    pub from: Option<String>,
    pub to: Option<String>,
    pub kind: Option<EntryKind>,
    pub after_seq: Option<i64>,
    pub limit: i64,
}

impl ListFilter {
    pub fn for_commerce(&self, commerce_id: i64) -> EntryFilter<'_> {
        EntryFilter {
            commerce_id,
            from: self.from.as_deref(),
            to: self.to.as_deref(),
            kind: self.kind,
            after_seq: self.after_seq,
            limit: self.limit,
        }
    }
}

/// The listing's filters, validated; every bad one is reported at once.
pub fn parse_filter(query: &HashMap<String, String>) -> Result<ListFilter, Error> {
    let mut errors = FieldErrors::new();
    let (from, to) = parse_period(query, &mut errors);
    let kind = query.get("kind").and_then(|k| match EntryKind::parse(k) {
        Some(k) => Some(k),
        None => {
            errors.push(
                "query.kind",
                "INVALID_VALUE",
                "CHARGE, REVERSAL, MANUAL_PAYMENT or ANNULMENT",
            );
            None
        }
    });
    let limit = match query.get("limit").map(|l| l.parse::<i64>()) {
        None => DEFAULT_LIMIT,
        Some(Ok(n)) if (1..=MAX_LIMIT).contains(&n) => n,
        Some(_) => {
            errors.push("query.limit", "OUT_OF_RANGE", "an integer from 1 to 500");
            DEFAULT_LIMIT
        }
    };
    let after = match query.get("cursor") {
        None => None,
        Some(c) => match c.parse::<i64>() {
            Ok(n) if n > 0 && c.len() <= 18 && !c.starts_with(['+', '0']) => Some(n),
            _ => {
                errors.push(
                    "query.cursor",
                    "INVALID_CURSOR",
                    "pass the nextCursor of the previous page unchanged",
                );
                None
            }
        },
    };
    errors.into_result()?;
    Ok(ListFilter {
        from,
        to,
        kind,
        after_seq: after,
        limit,
    })
}

/// One page of a commerce's entries, oldest first, and the cursor of the next.
pub fn page(conn: Db<'_>, filter: &EntryFilter<'_>) -> Result<LedgerPage, Error> {
    let (rows, next) = operation::entries_page(conn, filter)?;
    Ok(LedgerPage {
        items: rows.iter().map(LedgerEntry::from).collect(),
        next_cursor: next.map(|seq| seq.to_string()),
    })
}

/// The response header that carries the next page's cursor (absent on the last page).
pub const NEXT_CURSOR_HEADER: &str = "mandato-next-cursor";

/// The media types the listing answers in, the default first.
fn listing_types() -> [mime::Mime; 2] {
    [mime::APPLICATION_JSON, mime::TEXT_CSV]
}

/// The listing's URL with `cursor` set to `next`, the other parameters kept as sent: the
/// target of the `Link: <...>; rel="next"` header.
fn next_page_link(uri: &Uri, next: &str) -> String {
    let kept = url::form_urlencoded::parse(uri.query().unwrap_or("").as_bytes())
        .filter(|(name, _)| name != "cursor");
    let query = url::form_urlencoded::Serializer::new(String::new())
        .extend_pairs(kept)
        .append_pair("cursor", next)
        .finish();
    format!("<{}?{query}>; rel=\"next\"", uri.path())
}

/// The commerce's ledger entries, oldest first (append order). The cursor is a keyset on the
/// entry's row: entries appended between pages are never skipped or repeated, and a client
/// that keeps the last cursor sees only what came after it.
///
/// `Accept: text/csv` answers the same page as CSV, with the columns of the staff export and
/// `mandato ledger export`; JSON is the default. Both forms carry the next page's cursor in
/// `Mandato-Next-Cursor` and `Link: <...>; rel="next"` (absent on the last page). Errors are
/// JSON envelopes whatever the `Accept`.
#[utoipa::path(get, path = "/ledger", tag = "ledger",
    params(super::common::CommonHeaders, LedgerQuery),
    responses(
        (status = 200, description = "LEDGER_OK (JSON), or the page as CSV with a header row when `Accept` prefers `text/csv`",
            content(
                (Envelope<LedgerPage> = "application/json"),
                (String = "text/csv"),
            ),
            headers(
                ("Mandato-Next-Cursor" = String, description = "The next page's `cursor`; absent on the last page"),
                ("Link" = String, description = "`<...>; rel=\"next\"`: this listing's URL with the next page's `cursor`; absent on the last page"),
                ("Vary" = String, description = "`Accept`: the form depends on it"),
            )),
        (status = 400, description = "Invalid common headers, or VALIDATION_ERROR naming the bad filter (`query.from`, `query.kind`, `query.cursor`, ...); JSON whatever the `Accept`", body = ErrorBody),
        (status = 403, description = "Credentials refused", body = ErrorBody),
        (status = 406, description = "NOT_ACCEPTABLE: `Accept` admits neither `application/json` nor `text/csv`", body = ErrorBody),
    ),
    security(("apiKey" = [], "bearer" = [])))]
pub async fn list_ledger(
    State(state): State<AppState>,
    authed: Authed,
    OriginalUri(uri): OriginalUri,
    headers: HeaderMap,
    Query(query): Query<HashMap<String, String>>,
) -> ApiResult<Response> {
    let as_csv = match accept::preferred(&headers, &listing_types()) {
        Some(0) => false,
        Some(_) => true,
        None => {
            return Err(Error::NotAcceptable {
                message: "the ledger is served as application/json or text/csv".into(),
            }
            .into());
        }
    };
    let filter = parse_filter(&query)?;
    let page = state.read(&authed.commerce, |conn, ctx| {
        page(conn, &filter.for_commerce(ctx.commerce.id))
    })?;
    let mut paging = vec![(header::VARY, "Accept".to_string())];
    if let Some(next) = &page.next_cursor {
        paging.push((HeaderName::from_static(NEXT_CURSOR_HEADER), next.clone()));
        paging.push((header::LINK, next_page_link(&uri, next)));
    }
    let paging = AppendHeaders(paging);
    if as_csv {
        let csv = entries_csv(&page.items);
        return Ok((
            paging,
            [(header::CONTENT_TYPE, "text/csv; charset=utf-8")],
            csv,
        )
            .into_response());
    }
    let envelope = Envelope::ok("LEDGER_OK", "ledger entries, oldest first", page);
    Ok((paging, envelope).into_response())
}

/// One business date's money of one payment method and currency.
#[derive(Debug, Clone, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Settlement {
    pub business_date: String,
    pub payment_method: LedgerMethod,
    pub currency_id: LedgerCurrency,
    /// Sum of the amounts (reversals subtract).
    #[schema(value_type = f64)]
    pub gross: serde_json::Number,
    /// Sum of the acquirer's fees.
    #[schema(value_type = f64, minimum = 0)]
    pub fees: serde_json::Number,
    /// gross - fees.
    #[schema(value_type = f64)]
    pub net: serde_json::Number,
    /// How many entries.
    #[schema(minimum = 1)]
    pub count: i64,
}

impl From<&SettlementRow> for Settlement {
    fn from(s: &SettlementRow) -> Self {
        Settlement {
            business_date: s.business_date.clone(),
            payment_method: LedgerMethod::parse(&s.payment_method).unwrap_or(LedgerMethod::Manual),
            currency_id: s.currency.into(),
            gross: number(s.gross),
            fees: number(s.fees),
            net: number(s.net),
            count: s.count,
        }
    }
}

#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Settlements {
    /// By business date, then payment method and currency.
    pub items: Vec<Settlement>,
}

/// The commerce's daily settlements: charges, reversals and manual payments summed per
/// business date, payment method and currency (annulments move no money and are left out).
#[utoipa::path(get, path = "/ledger/settlements", tag = "ledger",
    params(super::common::CommonHeaders, PeriodQuery),
    responses(
        (status = 200, description = "LEDGER_SETTLEMENTS_OK", body = Envelope<Settlements>),
        (status = 400, description = "Invalid common headers, or VALIDATION_ERROR at `query.from` / `query.to`", body = ErrorBody),
        (status = 403, description = "Credentials refused", body = ErrorBody),
    ),
    security(("apiKey" = [], "bearer" = [])))]
pub async fn settlements(
    State(state): State<AppState>,
    authed: Authed,
    Query(query): Query<HashMap<String, String>>,
) -> ApiResult<Envelope<Settlements>> {
    let mut errors = FieldErrors::new();
    let (from, to) = parse_period(&query, &mut errors);
    errors.into_result()?;
    let items = state.read(&authed.commerce, |conn, ctx| {
        Ok(
            operation::settlements(conn, ctx.commerce.id, from.as_deref(), to.as_deref())?
                .iter()
                .map(Settlement::from)
                .collect(),
        )
    })?;
    Ok(Envelope::ok(
        "LEDGER_SETTLEMENTS_OK",
        "daily settlements",
        Settlements { items },
    ))
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ReconciliationRequest {
    /// The acquirer's payout report: a header row `date,reference,amount` (`,` or `;`
    /// separated), then a line per payout; amounts are exact decimals.
    #[schema(
        min_length = 1,
        max_length = 160000,
        pattern = r"^[\t\n\r\x20-\x7E\u00A0-\uD7FF\uE000-\uFFFD]*$"
    )]
    pub csv: String,
}

/// Why a payout line has no entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum MismatchReason {
    UnknownReference,
    AmountDiffers,
    OutsideSettlementWindow,
    DuplicateLine,
}

impl From<mandato_core::domain::ledger::Mismatch> for MismatchReason {
    fn from(m: mandato_core::domain::ledger::Mismatch) -> Self {
        use mandato_core::domain::ledger::Mismatch;
        match m {
            Mismatch::UnknownReference => MismatchReason::UnknownReference,
            Mismatch::AmountDiffers => MismatchReason::AmountDiffers,
            Mismatch::OutsideSettlementWindow => MismatchReason::OutsideSettlementWindow,
            Mismatch::DuplicateLine => MismatchReason::DuplicateLine,
        }
    }
}

/// A line of the payout report.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct PayoutLineDto {
    /// The line's number in the file (the header is line 1).
    #[schema(minimum = 2)]
    pub line: i64,
    pub date: String,
    pub reference: String,
    #[schema(value_type = f64)]
    pub amount: serde_json::Number,
}

impl From<&mandato_core::domain::ledger::PayoutLine> for PayoutLineDto {
    fn from(l: &mandato_core::domain::ledger::PayoutLine) -> Self {
        PayoutLineDto {
            line: l.line as i64,
            date: l.date.to_string(),
            reference: l.reference.clone(),
            amount: number(l.amount),
        }
    }
}

#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct MatchedLine {
    pub line: PayoutLineDto,
    pub entry: LedgerEntry,
}

#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct UnmatchedLine {
    pub line: PayoutLineDto,
    pub reason: MismatchReason,
}

#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ReconciliationCounts {
    #[schema(minimum = 0)]
    pub lines: i64,
    #[schema(minimum = 0)]
    pub matched: i64,
    #[schema(minimum = 0)]
    pub entries_without_payout: i64,
    #[schema(minimum = 0)]
    pub lines_without_entry: i64,
}

/// A payout report matched against the ledger, as stored.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Reconciliation {
    /// `rec_...`
    pub reconciliation_id: String,
    pub created_at: String,
    /// API, CLI, or the staff member's e-mail.
    pub created_by: String,
    /// The report's first line date (null for a report without lines).
    pub period_from: Option<String>,
    pub period_to: Option<String>,
    pub counts: ReconciliationCounts,
    /// Lines paired with their entry (same reference and payout amount, dated within 3 days
    /// of the entry's business date).
    pub matched: Vec<MatchedLine>,
    /// Charges and reversals of the report's period that no line pays.
    pub entries_without_payout: Vec<LedgerEntry>,
    /// Lines no entry accounts for, with the reason.
    pub lines_without_entry: Vec<UnmatchedLine>,
}

impl Reconciliation {
    fn new(r: &Reconciled, created_at: String, created_by: &str) -> Reconciliation {
        Reconciliation {
            reconciliation_id: r.id.clone(),
            created_at,
            created_by: created_by.to_string(),
            period_from: r.period.map(|(f, _)| f.to_string()),
            period_to: r.period.map(|(_, t)| t.to_string()),
            counts: ReconciliationCounts {
                lines: r.lines as i64,
                matched: r.matched.len() as i64,
                entries_without_payout: r.entries_without_payout.len() as i64,
                lines_without_entry: r.lines_without_entry.len() as i64,
            },
            matched: r
                .matched
                .iter()
                .map(|m| MatchedLine {
                    line: (&m.line).into(),
                    entry: (&m.entry).into(),
                })
                .collect(),
            entries_without_payout: r.entries_without_payout.iter().map(Into::into).collect(),
            lines_without_entry: r
                .lines_without_entry
                .iter()
                .map(|u| UnmatchedLine {
                    line: (&u.line).into(),
                    reason: u.reason.into(),
                })
                .collect(),
        }
    }
}

/// Matches a payout report against the acting commerce's ledger and stores the import with
/// its result (the API, the staff screen and the CLI share it).
pub fn import_report(
    tx: Db<'_>,
    ctx: &Ctx<'_>,
    report: &str,
    created_by: &str,
) -> Result<Reconciliation, Error> {
    if report.chars().count() > MAX_REPORT_CHARS {
        return Err(Error::validation(
            "csv",
            "TOO_LONG",
            format!("a payout report is at most {MAX_REPORT_CHARS} characters"),
        ));
    }
    if !report.chars().all(report_char_allowed) {
        return Err(Error::validation(
            "csv",
            mandato_core::domain::text::INVALID_CHARACTERS,
            "a payout report holds text only: no control characters but tab and line breaks",
        ));
    }
    let reconciled = operation::reconcile(tx, ctx, report)?;
    let result = Reconciliation::new(&reconciled, ctx.timestamp(), created_by);
    operation::save_reconciliation(
        tx,
        &NewReconciliation {
            id: &result.reconciliation_id,
            commerce_id: ctx.commerce.id,
            lines: result.counts.lines,
            matched: result.counts.matched,
            unpaid: result.counts.entries_without_payout,
            unknown: result.counts.lines_without_entry,
            result: &serde_json::to_string(&result).map_err(|e| Error::Internal(e.into()))?,
            created_by,
            created_at: &result.created_at,
        },
    )?;
    Ok(result)
}

/// Match the acquirer's payout report against the ledger. The import and its result are
/// stored (staff see them again). Bad cells are 400 at `csv.line[N].<column>`, N being the
/// line's number in the file (the header is line 1).
#[utoipa::path(post, path = "/ledger/reconciliations", tag = "ledger",
    params(super::common::CommonHeaders),
    request_body = ReconciliationRequest,
    responses(
        (status = 201, description = "RECONCILIATION_OK", body = Envelope<Reconciliation>),
        (status = 400, description = "Invalid common headers, or VALIDATION_ERROR naming each bad cell (`csv.line[3].amount`)", body = ErrorBody),
        (status = 403, description = "Credentials refused", body = ErrorBody),
    ),
    security(("apiKey" = [], "bearer" = [])))]
pub async fn reconcile(
    State(state): State<AppState>,
    authed: Authed,
    Body(body): Body<ReconciliationRequest>,
) -> ApiResult<Envelope<Reconciliation>> {
    let result = state
        .write(authed.commerce, move |tx, ctx| {
            import_report(tx, ctx, &body.csv, "API")
        })
        .await?;
    Ok(Envelope::created(
        "RECONCILIATION_OK",
        "payout report reconciled",
        result,
    ))
}

#[derive(IntoParams)]
#[into_params(parameter_in = Query)]
#[allow(dead_code)]
pub struct PayoutReportQuery {
    /// The payout date.
    date: chrono::NaiveDate,
}

/// Sandbox: what the simulated acquirer pays out on a business date, as its CSV payout
/// report: each charge of that date net of its fee, each reversal deducted.
#[utoipa::path(get, path = "/sandbox/payout-report", tag = "sandbox",
    params(super::common::CommonHeaders, PayoutReportQuery),
    responses(
        (status = 200, description = "The payout report (`date,reference,amount`)", content_type = "text/csv", body = String),
        (status = 400, description = "Invalid common headers, or VALIDATION_ERROR at `query.date`", body = ErrorBody),
        (status = 403, description = "Credentials refused", body = ErrorBody),
        (status = 404, description = "Production", body = ErrorBody),
    ),
    security(("apiKey" = [], "bearer" = [])))]
pub async fn payout_report(
    State(state): State<AppState>,
    authed: Authed,
    Query(query): Query<HashMap<String, String>>,
) -> ApiResult<Response> {
    sandbox_only(&state)?;
    let date = match query.get("date").map(|d| Date::parse(d)) {
        Some(Ok(d)) => d.naive(),
        Some(Err(_)) => {
            return Err(
                Error::validation("query.date", "INVALID_DATE", "a date as YYYY-MM-DD").into(),
            );
        }
        None => return Err(Error::validation("query.date", "REQUIRED", "the payout date").into()),
    };
    let report = state.read(&authed.commerce, |conn, ctx| {
        operation::sandbox_payout_report(conn, ctx.commerce.id, date)
    })?;
    Ok(([(header::CONTENT_TYPE, "text/csv; charset=utf-8")], report).into_response())
}

/// The columns of the CSV form of entries, in order.
pub const CSV_COLUMNS: [&str; 14] = [
    "entryId",
    "kind",
    "businessDate",
    "amount",
    "currencyId",
    "fee",
    "net",
    "paymentMethod",
    "mandateInternalId",
    "mandateId",
    "installmentInternalId",
    "installmentId",
    "acquirerReference",
    "createdAt",
];

/// Entries as CSV: a header row, then one line per entry, amounts exact. The one writer of
/// the merchant API's CSV listing, the staff export and `mandato ledger export`. Text cells
/// pass through `spreadsheet_safe` (merchant ids and references could otherwise run as
/// formulas); the numeric cells are written as they are.
pub fn entries_csv(entries: &[LedgerEntry]) -> String {
    let mut writer = csv::Writer::from_writer(Vec::new());
    // Writing into memory cannot fail.
    let _ = writer.write_record(CSV_COLUMNS);
    let safe = |cell: &str| spreadsheet_safe(cell).into_owned();
    for e in entries {
        let _ = writer.write_record([
            safe(&e.entry_id),
            safe(&text(&e.kind)),
            safe(&e.business_date),
            e.amount.to_string(),
            safe(&text(&e.currency_id)),
            e.fee.as_ref().map(ToString::to_string).unwrap_or_default(),
            e.net.as_ref().map(ToString::to_string).unwrap_or_default(),
            safe(&text(&e.payment_method)),
            safe(&e.mandate_internal_id),
            safe(&e.mandate_id),
            safe(&e.installment_internal_id),
            safe(&e.installment_id),
            safe(e.acquirer_reference.as_deref().unwrap_or_default()),
            safe(&e.created_at),
        ]);
    }
    String::from_utf8(writer.into_inner().unwrap_or_default()).unwrap_or_default()
}

/// A wire enum's name (empty for null), for a CSV cell.
fn text(value: &impl Serialize) -> String {
    match serde_json::to_value(value) {
        Ok(serde_json::Value::String(s)) => s,
        Ok(serde_json::Value::Null) | Err(_) => String::new(),
        Ok(other) => other.to_string(),
    }
}

/// Every entry of a commerce in a period, oldest first (exports).
pub fn all_entries(
    conn: Db<'_>,
    commerce_id: i64,
    from: Option<&str>,
    to: Option<&str>,
) -> Result<Vec<LedgerEntry>, Error> {
    let rows = operation::all_entries(conn, commerce_id, from, to)?;
    Ok(rows.iter().map(LedgerEntry::from).collect())
}
