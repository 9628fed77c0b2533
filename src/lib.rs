//! mandato: a self-contained payment-mandate service.
//!
//! Modules in reading order: `domain` (rules and value types, no I/O), `store` (SQLite, the
//! only SQL), `auth` (JWE, JWT, API keys, passwords), `operations` (the merchant operations,
//! one transaction each), `notify` (event bodies, signatures, the outbox), `http` (the axum
//! listener: DTOs, envelope, errors), `app` (wires it all and runs it), `cli` (the commands).

pub mod app;
pub mod auth;
pub mod backups;
pub mod chain;
pub mod charging;
pub mod cli;
pub mod clock;
pub mod config;
pub mod documents;
pub mod domain;
pub mod error;
pub mod esign;
pub mod http;
pub mod ids;
pub mod listen;
pub mod notify;
pub mod operations;
pub mod secret;
pub mod store;
pub mod trigger;
