//! The charging engine: the processor it charges through, the daily run over due
//! installments, retries, reconciliation after a crash, and the schedule that triggers runs.

mod fintoc;
pub mod run;
pub mod schedule;
pub mod simulated;
