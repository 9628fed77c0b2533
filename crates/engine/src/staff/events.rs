//! Staff's view of webhooks: events and their delivery attempts, redelivery, and each
//! commerce's webhook secret (rotated or shown again).

use chrono::{DateTime, Utc};

use mandato_core::clock::timestamp;
use mandato_core::error::{Error, Result};
use mandato_core::secret::Secret;
use mandato_store::db::Db;
use mandato_store::deliveries::{self, AttemptRow, EventFilter, EventSummary, ListedEvent};

use crate::Engine;

/// One event with its stored body and every delivery attempt.
pub struct EventRecord {
    pub summary: EventSummary,
    /// The body exactly as sent (JSON text).
    pub body: String,
    pub attempts: Vec<AttemptRow>,
}

/// What a redelivery request scheduled, and the ids that named no event.
pub struct Redelivery {
    pub scheduled: Vec<String>,
    pub not_found: Vec<String>,
}

fn record(tx: Db<'_>, actor: &str, now: DateTime<Utc>, action: &str, target: &str) -> Result<()> {
    super::settings::record(tx, actor, now, action, target, None)
}

/// Starts a commerce's new webhook secret; the previous one keeps signing until `until`
/// (staff's Settings and `mandato commerce rotate-secret`). False when no commerce has `code`.
pub fn rotate_webhook_secret(
    tx: Db<'_>,
    actor: Option<&str>,
    now: DateTime<Utc>,
    code: &str,
    secret: &Secret<String>,
    until: &str,
) -> Result<bool> {
    if !deliveries::rotate_secret(tx, code, secret, until)? {
        return Ok(false);
    }
    if let Some(actor) = actor {
        record(tx, actor, now, "commerce.rotate-secret", code)?;
    }
    Ok(true)
}

impl Engine {
    pub fn events(&self, filter: &EventFilter) -> Result<Vec<ListedEvent>> {
        self.store()
            .read(|c| Ok(deliveries::list_events(c, filter)?))
    }

    /// An event by id, with its body and attempts (`EVENT_NOT_FOUND` otherwise).
    pub fn event(&self, event_id: &str) -> Result<EventRecord> {
        self.store().read(|c| {
            let (seq, _, summary, body) =
                deliveries::event_with_body(c, event_id)?.ok_or(Error::not_found("event"))?;
            Ok(EventRecord {
                summary,
                body,
                attempts: deliveries::attempts_of(c, seq)?,
            })
        })
    }

    /// Schedules the events named for delivery again, at once, and wakes delivery.
    pub fn redeliver(&self, actor: &str, event_ids: Vec<String>) -> Result<Redelivery> {
        let now = self.clock.now();
        let result = self.store().write(|tx| {
            let mut result = Redelivery {
                scheduled: Vec::new(),
                not_found: Vec::new(),
            };
            for id in event_ids {
                if deliveries::request_redelivery(tx, None, &id, &timestamp(now))? {
                    record(tx, actor, now, "event.redeliver", &id)?;
                    result.scheduled.push(id);
                } else {
                    result.not_found.push(id);
                }
            }
            Ok(result)
        })?;
        self.deliverer.wake();
        Ok(result)
    }

    pub fn rotate_webhook_secret(
        &self,
        actor: &str,
        code: &str,
        secret: &Secret<String>,
        until: &str,
    ) -> Result<()> {
        let now = self.clock.now();
        let rotated = self
            .store()
            .write(|tx| rotate_webhook_secret(tx, Some(actor), now, code, secret, until))?;
        if !rotated {
            return Err(Error::not_found("commerce"));
        }
        Ok(())
    }

    /// A commerce's current webhook secret; showing it again is recorded.
    pub fn reveal_webhook_secret(&self, actor: &str, code: &str) -> Result<Secret<String>> {
        let now = self.clock.now();
        self.store().write(|tx| {
            let commerce =
                mandato_store::commerces::by_code(tx, code)?.ok_or(Error::not_found("commerce"))?;
            record(tx, actor, now, "commerce.reveal-secret", code)?;
            Ok(commerce.webhook_secret)
        })
    }
}
