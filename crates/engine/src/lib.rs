//! mandato-engine: every state-changing use case, over the store.
//!
//! - [`Engine`]: the handle front doors hold: `Engine::start` opens the store and starts every
//!   background task; its methods are the use cases, each one transaction.
//! - [`records`]: the rows and filters the engine's methods take and answer.
//! - [`operations`]: the merchant operations and the customer's enrolment, one transaction each.
//! - [`charging`]: the daily run over due installments, retries, reconciliation after a crash,
//!   its schedule, and the simulated acquirer behind `mandato_core::processor`.
//! - [`notify`]: event bodies, their HMAC signatures, and the delivery worker with its retry
//!   schedule and TLS trust.
//! - [`esign`]: signature processes: the ceremony, the hash-chained audit, PDF inspection and
//!   sealing.
//! - [`documents`]: the mandate document and the Spanish wording customers read.
//! - [`config`], [`backups`], [`auth`]: the engine's settings, its daily backups, and the
//!   async password calls.
//!
//! Invariants:
//! - Every state change and the event it causes commit in one store transaction: a crash at
//!   any point loses no notification and charges nobody twice.
//! - Nothing here knows HTTP: no axum, no status codes; refusals are `mandato_core::error::Error`.
//! - Time comes from an injected `Clock`; business dates are in America/Santiago.

pub mod auth;
pub mod backups;
pub mod charging;
pub mod config;
pub mod documents;
pub mod engine;
pub mod esign;
pub mod notify;
pub mod operations;
pub mod rails;
pub mod records;
pub mod staff;

pub use engine::{Engine, Keys};
