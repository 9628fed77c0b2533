//! What staff do in the back office, as engine methods: their accounts and sessions, settings,
//! the lists and details they read, and the changes they make. Each method is one transaction;
//! the refusals (the last admin, one's own account) are decided here.
pub mod acquirer_calls;
pub mod acquirers;
pub mod calendar;
pub mod creation;
pub mod events;
pub mod fees;
pub mod mandates;
pub mod past_due;
pub mod refunds;
pub mod search;
pub mod sessions;
pub mod settings;
pub mod signatures;
pub mod views;
