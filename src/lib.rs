//! mandato: a self-contained payment-mandate service.
//!
//! The crates below it, re-exported at the paths this crate and its tests use: `domain` and the
//! other rules and value types (`mandato-core`, no I/O), `store` (`mandato-store`, the only
//! SQL), `operations`, `charging`, `notify`, `esign`, `documents`, `config`, `backups`, `auth`
//! (`mandato-engine`, the use cases). Its own modules: `http` (the axum listener: DTOs,
//! envelope, errors, pages), `app` (wires it all and runs it), `cli` (the commands, `trigger`
//! and `listen` among them).

pub mod app;
pub mod cli;
mod connections;

// The developer commands, at the paths their tests use.
pub use cli::{listen, trigger};

// The rules and value types, at the paths the rest of this crate and its tests use.
pub use mandato_core::{chain, clock, domain, error, ids, secret};
// Storage, at the path the rest of this crate and its tests use.
pub use mandato_store as store;
// The use cases, at the paths the rest of this crate and its tests use.
pub use mandato_engine::{
    auth, backups, charging, config, documents, esign, notify, operations, rails,
};
// The HTTP front doors, at the path the rest of this crate and its tests use.
pub use mandato_http as http;
