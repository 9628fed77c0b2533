//! `mandato events`: a commerce's recent events, a line each, newest first; `--follow` then
//! prints new ones as they are written. `mandato events resend EVENT_ID` schedules one again
//! (a running engine's delivery worker sends it on its next look).

use std::time::Duration;

use serde_json::json;

use crate::clock::timestamp;
use crate::config::Config;
use crate::http::events::EventItem;
use crate::store::Store;
use crate::store::deliveries::{self, CommerceEvent, CommerceEventFilter};

/// How often `--follow` looks for new events.
const FOLLOW_EVERY: Duration = Duration::from_millis(500);

pub struct EventsOptions {
    pub commerce: Option<String>,
    pub follow: bool,
    pub limit: i64,
    pub json: bool,
}

fn item_json(event: CommerceEvent) -> anyhow::Result<serde_json::Value> {
    let item = EventItem::from_row(event).map_err(|e| anyhow::anyhow!("{e}"))?;
    Ok(serde_json::to_value(item)?)
}

fn line(event: &CommerceEvent) -> String {
    let subject = event
        .mandate_id
        .as_deref()
        .or(event.signature_id.as_deref())
        .unwrap_or("-");
    format!(
        "{}  {:<10} {}  seq {}  {}  {}  attempts {}",
        event.created_at,
        event.kind,
        subject,
        event.sequence,
        event.event_id,
        event.delivery_state,
        event.attempts
    )
}

fn read_events(store: &Store, filter: &CommerceEventFilter) -> anyhow::Result<Vec<CommerceEvent>> {
    store
        .read(|c| Ok(deliveries::list_for_commerce(c, filter)?))
        .map_err(|e| anyhow::anyhow!("{e}"))
}

/// Lists, then (with `follow`) polls for events written after the newest one shown.
pub fn list(config: &Config, options: EventsOptions) -> anyhow::Result<()> {
    anyhow::ensure!(
        (1..=crate::http::events::MAX_LIMIT).contains(&options.limit),
        "--limit must be 1 to {}",
        crate::http::events::MAX_LIMIT
    );
    let store = config.open_store()?;
    let (commerce_id, _) = super::resolve_commerce(&store, options.commerce.as_deref())?;
    let mut filter = CommerceEventFilter {
        commerce_id,
        kind: None,
        mandate_id: None,
        delivery_state: None,
        before_seq: None,
        after_seq: None,
        limit: options.limit,
    };
    let events = read_events(&store, &filter)?;
    let mut newest = events.first().map_or(0, |e| e.seq);
    if options.json && !options.follow {
        let items = events
            .into_iter()
            .map(item_json)
            .collect::<anyhow::Result<Vec<_>>>()?;
        crate::cli::out(format_args!("{}", json!({ "items": items })));
        return Ok(());
    }
    // With --follow and --json, one object per line: the listing, then each new event.
    for event in events {
        print_event(options.json, event)?;
    }
    if !options.follow {
        return Ok(());
    }
    filter.limit = crate::http::events::MAX_LIMIT;
    loop {
        std::thread::sleep(FOLLOW_EVERY);
        filter.after_seq = Some(newest);
        for event in read_events(&store, &filter)? {
            newest = newest.max(event.seq);
            print_event(options.json, event)?;
        }
    }
}

fn print_event(json_mode: bool, event: CommerceEvent) -> anyhow::Result<()> {
    if json_mode {
        crate::cli::out(format_args!("{}", item_json(event)?));
    } else {
        crate::cli::out(format_args!("{}", line(&event)));
    }
    Ok(())
}

/// Schedules an event to be sent again now, whatever its state.
pub fn resend(
    config: &Config,
    commerce: Option<&str>,
    event_id: &str,
    json_mode: bool,
) -> anyhow::Result<()> {
    let store = config.open_store()?;
    let commerce_id = match commerce {
        Some(code) => Some(super::resolve_commerce(&store, Some(code))?.0),
        None => None,
    };
    let now = timestamp(chrono::Utc::now());
    let scheduled = store
        .write(|tx| {
            Ok(deliveries::request_redelivery(
                tx,
                commerce_id,
                event_id,
                &now,
            )?)
        })
        .map_err(|e| anyhow::anyhow!("{e}"))?;
    if !scheduled {
        return Err(crate::cli::dev::fail(
            "EVENT_NOT_FOUND",
            format!(
                "no event {event_id} with a webhook URL{}",
                commerce.map_or(String::new(), |c| format!(" in commerce {c}"))
            ),
        ));
    }
    if json_mode {
        crate::cli::out(format_args!(
            "{}",
            json!({"eventId": event_id, "scheduled": true})
        ));
    } else {
        crate::cli::out(format_args!(
            "{event_id} scheduled: a running mandato serve sends it again now"
        ));
    }
    Ok(())
}
