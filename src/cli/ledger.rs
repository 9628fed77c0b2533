//! `mandato ledger export|reconcile` and `mandato sandbox payout-report`: the merchant API's
//! ledger operations, run in process against the database.

use std::path::Path;
use std::sync::Arc;

use chrono::NaiveDate;
use serde_json::json;

use super::dev::{fail, require_sandbox, resolve_commerce};
use super::out;
use crate::clock::{BusinessCalendar, Clock, SystemClock};
use crate::config::Config;
use crate::domain::date::Date;
use crate::error::Error;
use crate::http::ledger::{all_entries, entries_csv, import_report};
use crate::operations::Ctx;
use crate::store::{Store, settings};

/// The export's output.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum ExportFormat {
    Csv,
    Json,
}

fn open(config: &Config) -> anyhow::Result<Arc<Store>> {
    Ok(Arc::new(config.open_store()?))
}

/// A date the store compares as text must be a `Date` (1900 to 9999).
fn bounded(date: Option<NaiveDate>, flag: &str) -> anyhow::Result<Option<String>> {
    date.map(|d| {
        Date::new(d)
            .map(|d| d.to_string())
            .map_err(|e| fail("INVALID_DATE", format!("--{flag}: {e}")))
    })
    .transpose()
}

/// The operation's error for the command line: every bad field of a refused import named.
fn refused(error: Error) -> anyhow::Error {
    match error {
        Error::Validation(fields) => fail(
            "VALIDATION_ERROR",
            fields
                .iter()
                .map(|f| format!("{}: {} ({})", f.field, f.message, f.code))
                .collect::<Vec<_>>()
                .join("; "),
        ),
        other => anyhow::anyhow!("{other}"),
    }
}

pub fn export(
    config: &Config,
    commerce: Option<&str>,
    from: Option<NaiveDate>,
    to: Option<NaiveDate>,
    format: ExportFormat,
) -> anyhow::Result<()> {
    let store = open(config)?;
    let commerce = resolve_commerce(&store, commerce)?;
    let (from, to) = (bounded(from, "from")?, bounded(to, "to")?);
    let entries = store
        .read(|c| all_entries(c, commerce.id, from.as_deref(), to.as_deref()))
        .map_err(refused)?;
    match format {
        ExportFormat::Csv => out(format_args!("{}", entries_csv(&entries).trim_end())),
        ExportFormat::Json => out(format_args!("{}", json!({ "items": entries }))),
    }
    Ok(())
}

pub fn reconcile(
    config: &Config,
    json_mode: bool,
    commerce: Option<&str>,
    file: &Path,
) -> anyhow::Result<()> {
    let report = std::fs::read_to_string(file)
        .map_err(|e| fail("FILE_UNREADABLE", format!("{}: {e}", file.display())))?;
    let store = open(config)?;
    let commerce = resolve_commerce(&store, commerce)?;
    let offset = store.read(|c| Ok(settings::get(c, settings::SANDBOX_OFFSET_DAYS)?))?;
    let calendar = BusinessCalendar::new(
        config.time_zone,
        offset.and_then(|o| o.parse().ok()).unwrap_or(0),
    );
    let now = SystemClock.now();
    let ctx = Ctx {
        commerce: &commerce,
        charge_dates: &store.charge_dates,
        now,
        today: calendar.today(now),
    };
    let result = store
        .write(|tx| import_report(tx, &ctx, &report, "CLI"))
        .map_err(refused)?;
    if json_mode {
        out(format_args!("{}", json!(result)));
        return Ok(());
    }
    let c = &result.counts;
    out(format_args!(
        "{}: {} lines, {} matched, {} entries without a payout line, {} lines without an entry",
        result.reconciliation_id,
        c.lines,
        c.matched,
        c.entries_without_payout,
        c.lines_without_entry
    ));
    for e in &result.entries_without_payout {
        out(format_args!(
            "unpaid  {} {} {} {} {}",
            e.business_date,
            e.entry_id,
            json!(e.kind).as_str().unwrap_or_default(),
            e.acquirer_reference.as_deref().unwrap_or("-"),
            e.net.as_ref().unwrap_or(&e.amount)
        ));
    }
    for u in &result.lines_without_entry {
        out(format_args!(
            "line {}  {} {} {} {}",
            u.line.line,
            u.line.date,
            u.line.reference,
            u.line.amount,
            json!(u.reason).as_str().unwrap_or_default()
        ));
    }
    Ok(())
}

pub fn payout_report(
    config: &Config,
    json_mode: bool,
    commerce: Option<&str>,
    date: NaiveDate,
) -> anyhow::Result<()> {
    let store = open(config)?;
    require_sandbox(&store, "sandbox payout-report")?;
    let commerce = resolve_commerce(&store, commerce)?;
    let date = Date::new(date).map_err(|e| fail("INVALID_DATE", format!("--date: {e}")))?;
    let report = store
        .read(|c| crate::operations::ledger::sandbox_payout_report(c, commerce.id, date.naive()))
        .map_err(refused)?;
    if json_mode {
        out(format_args!(
            "{}",
            json!({"commerce": commerce.code, "date": date.to_string(), "csv": report})
        ));
    } else {
        out(format_args!("{}", report.trim_end()));
    }
    Ok(())
}
