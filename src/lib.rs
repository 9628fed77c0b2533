//! mandato: a self-contained payment-mandate service.
//!
//! Modules in reading order: `domain` (rules and value types, no I/O), `store` (SQLite, the
//! only SQL), `auth` (JWE, JWT, API keys, passwords), `operations` (the merchant operations,
//! one transaction each), `notify` (event bodies, signatures, the outbox), `http` (the axum
//! listener: DTOs, envelope, errors), `app` (wires it all and runs it), `cli` (the commands).

pub mod app;
pub mod auth;
pub mod backups;
pub mod charging;
pub mod cli;
pub mod config;
pub mod documents;
pub mod esign;
pub mod http;
pub mod listen;
pub mod notify;
pub mod operations;
pub mod store;
pub mod trigger;

// The rules and value types, at the paths the rest of this crate and its tests use.
pub use mandato_core::{chain, clock, domain, error, ids, secret};
