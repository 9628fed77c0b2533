//! Notifications to merchants: event bodies, their signatures, and (next) their delivery.
//!
//! Events are written to the outbox (`store::events`) inside the transaction of the state change
//! that causes them; a crash can therefore never lose one.

pub mod delivery;
pub mod destination;
pub mod events;
pub mod listen;
pub mod signing;
pub mod tls;
