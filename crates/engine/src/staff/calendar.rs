//! Staff's calendar and charging: added holidays, each commerce's charging rule, the UF table,
//! and runs started by hand.

use chrono::NaiveDate;

use mandato_core::clock::timestamp;
use mandato_core::domain::holidays::{ChargingRule, Holiday};
use mandato_core::domain::uf::UfValue;
use mandato_core::error::{Error, Result};
use mandato_store::charging::RunRow;
use mandato_store::{calendar, commerces};

use super::settings::record;
use crate::Engine;
use crate::charging::run::{RunSummary, Trigger};

impl Engine {
    /// The holidays staff added to the national calendar.
    pub fn added_holidays(&self) -> Result<Vec<Holiday>> {
        self.store().read(|c| Ok(calendar::added(c)?))
    }

    /// Adds a holiday (`HOLIDAY_EXISTS` when the date already has one).
    pub fn add_holiday(&self, actor: &str, holiday: &Holiday) -> Result<()> {
        let now = self.clock.now();
        let day = holiday.date.to_string();
        self.store().write(|tx| {
            if !calendar::add(tx, holiday.date, &holiday.name, &timestamp(now))? {
                return Err(Error::refused_at(
                    "HOLIDAY_EXISTS",
                    "date",
                    format!("{day} already has an added holiday"),
                ));
            }
            let name = Some(holiday.name.as_str());
            record(tx, actor, now, "calendar.holiday-add", &day, name)
        })
    }

    /// Removes an added holiday; answers its name.
    pub fn remove_holiday(&self, actor: &str, day: NaiveDate) -> Result<String> {
        let now = self.clock.now();
        self.store().write(|tx| {
            let name = calendar::added(tx)?
                .into_iter()
                .find(|h| h.date == day)
                .map(|h| h.name)
                .ok_or(Error::not_found("holiday"))?;
            calendar::remove(tx, day)?;
            let target = day.to_string();
            record(
                tx,
                actor,
                now,
                "calendar.holiday-remove",
                &target,
                Some(&name),
            )?;
            Ok(name)
        })
    }

    /// Where a commerce's charges due on a weekend or holiday go.
    pub fn set_charging_rule(&self, actor: &str, code: &str, rule: ChargingRule) -> Result<()> {
        let now = self.clock.now();
        self.store().write(|tx| {
            let commerce = commerces::by_code(tx, code)?.ok_or(Error::not_found("commerce"))?;
            calendar::set_charging_rule(tx, commerce.id, rule)?;
            record(
                tx,
                actor,
                now,
                "commerce.charging-rule",
                code,
                Some(rule.as_str()),
            )
        })
    }

    /// The latest charging runs, newest first.
    pub fn charging_runs(&self, limit: i64) -> Result<Vec<RunRow>> {
        self.store()
            .read(|c| Ok(mandato_store::charging::runs(c, limit)?))
    }

    /// Charges today's due installments now (a staff member's run), then wakes delivery.
    pub async fn run_charging_now(&self, actor: &str) -> Result<RunSummary> {
        let date = self.today();
        self.record_staff_action(actor, "charging.run", Some(&date.to_string()))?;
        self.charge_today(Trigger::Manual).await
    }

    /// Charges today's due installments (only what is due and not yet attempted today), off
    /// the async workers, then wakes delivery.
    pub async fn charge_today(&self, trigger: Trigger) -> Result<RunSummary> {
        let date = self.today();
        let charger = std::sync::Arc::clone(&self.charger);
        let summary = tokio::task::spawn_blocking(move || charger.run(date, trigger))
            .await
            .map_err(|e| Error::Internal(e.into()))??;
        self.deliverer.wake();
        Ok(summary)
    }

    /// Imports UF values (new dates added, known dates corrected).
    pub fn import_uf(&self, actor: &str, values: &[UfValue]) -> Result<()> {
        let now = self.clock.now();
        self.store().write(|tx| {
            crate::operations::uf::import(tx, values)?;
            let count = format!("{} values", values.len());
            Ok(mandato_store::staff::record_action(
                tx,
                &timestamp(now),
                actor,
                "uf.import",
                Some(&count),
                None,
            )?)
        })
    }
}
