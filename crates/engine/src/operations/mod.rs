//! The merchant operations: each takes a transaction (or a read connection), the acting
//! commerce and the time, applies the domain rules and writes through `store`. Every state
//! change records its event in the same transaction.

pub mod acquirers;
pub mod activation;
pub mod card_update;
pub mod customers;
pub mod events;
pub mod fees;
pub mod fintoc;
pub mod installments;
pub mod ledger;
pub mod link;
pub mod mandates;
pub mod oneclick;
pub mod portal;
pub mod replays;
pub mod sandbox;
pub mod signed_activation;
pub mod uf;

use chrono::{DateTime, NaiveDate, Utc};

use std::sync::Arc;

use mandato_store::db::Db;

use mandato_core::domain::holidays::ChargeDates;
use mandato_store::calendar::ChargeDatesCache;
use mandato_store::commerces::Commerce;

/// Who acts, and when.
pub struct Ctx<'a> {
    pub commerce: &'a Commerce,
    /// The store's cache of calendars and charging rules (`Ctx::charge_dates`).
    pub charge_dates: &'a ChargeDatesCache,
    /// Wall-clock time of the request.
    pub now: DateTime<Utc>,
    /// The business date (environment time zone, sandbox offset applied).
    pub today: NaiveDate,
}

impl Ctx<'_> {
    pub fn timestamp(&self) -> String {
        mandato_core::clock::timestamp(self.now)
    }

    /// The acting commerce's calendar and charging rule.
    pub fn charge_dates(&self, conn: Db<'_>) -> mandato_store::db::Result<Arc<ChargeDates>> {
        self.charge_dates.get(conn, self.commerce.id)
    }
}

/// A customer named by the merchant's id or by ours.
#[derive(Clone, Debug)]
pub enum CustomerRef {
    UserId(String),
    InternalUserId(String),
}

impl CustomerRef {
    /// The body field that names the customer this way, under `prefix`, and the id.
    pub fn field(&self, prefix: &str) -> (String, &str) {
        match self {
            CustomerRef::UserId(id) => (format!("{prefix}.userId"), id),
            CustomerRef::InternalUserId(id) => (format!("{prefix}.internalUserId"), id),
        }
    }
}

/// A mandate named by the merchant's id or by ours.
#[derive(Clone, Debug)]
pub enum MandateRef {
    External(String),
    Internal(String),
}

impl MandateRef {
    /// The body field that names the mandate this way, under `prefix`, and the id.
    pub fn field(&self, prefix: &str) -> (String, &str) {
        match self {
            MandateRef::External(id) => (format!("{prefix}.id"), id),
            MandateRef::Internal(id) => (format!("{prefix}.internalId"), id),
        }
    }
}
