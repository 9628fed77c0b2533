//! mandato-core: the rules and value types every other crate shares, with no I/O.
//!
//! - [`domain`]: every value that comes from outside (RUT, money, dates, schedules, contacts,
//!   states, the holiday calendar, the ledger's rules) parsed into a type that holds only valid
//!   values.
//! - [`error`]: the failures an operation can end in, independent of HTTP.
//! - [`ids`], [`secret`], [`clock`]: internal ids, values that must never be printed, and
//!   injected time (business dates in America/Santiago).
//! - [`dev_ca`]: the development CA's certificates, name-constrained to loopback.
//! - [`jcs`] and [`chain`]: RFC 8785 canonical JSON and the hash chains built on it.
//! - [`signature`]: electronic signature processes as data (states, types, limits, turns).
//! - [`processor`]: the acquirer port the charging engine talks to.
//! - [`auth`]: JWE, JWT, API keys, password hashing and the sign-in throttle's rule.
//!
//! Invariants:
//! - No I/O crate (tokio, axum, hyper, rusqlite, postgres, reqwest) is a dependency, so nothing
//!   here opens a file, a socket or a database; `tests/api/layering.rs` checks it.
//! - No `now()` in a rule: time comes in as a value or through [`clock::Clock`].
//! - Money is decimal ([`domain::money::Money`]), never floating point.
//! - A secret crosses every API wrapped in [`secret::Secret`], which cannot be printed.

pub mod auth;
pub mod chain;
pub mod clock;
pub mod dev_ca;
pub mod domain;
pub mod error;
pub mod ids;
pub mod jcs;
pub mod processor;
pub mod secret;
pub mod signature;
