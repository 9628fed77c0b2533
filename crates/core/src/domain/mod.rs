//! The rules of the product, with no I/O: every value that comes from outside is parsed here
//! into a type that can only hold a valid value, so the rest of the crate never re-checks it.

pub mod acquirer;
pub mod activation;
pub mod commerce;
pub mod contact;
pub mod date;
pub mod event_kind;
pub mod external_id;
pub mod fees;
pub mod holidays;
pub mod instrument;
pub mod ledger;
pub mod mandate;
pub mod money;
pub mod rut;
pub mod schedule;
pub mod search;
pub mod state;
pub mod text;
pub mod uf;
