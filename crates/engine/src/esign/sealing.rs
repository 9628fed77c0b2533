//! Sealing signature processes, and the sweep that keeps them moving.
//!
//! A process whose last signature is in is sealed after that signature's transaction, never
//! inside it: its documents are read in one snapshot, sealed on one blocking thread under the
//! process-wide PDF permit, and only the result is written, in a short transaction of its own
//! (CONTRACT 12). The last signature's request seals it at once ([`Sealer::seal`]); the sweep
//! ([`Sealer::sweep`], started with the engine) seals at start and then once a minute whatever
//! a crash left owed, and makes open processes past their expiry (business time) EXPIRED with
//! their `SIGNATURE_EXPIRED` event.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use mandato_core::clock::{BusinessCalendar, Clock, timestamp};
use mandato_core::error::Error;
use mandato_core::signature::ProcessState;
use mandato_store::Store;
use mandato_store::signatures;

use super::ceremony::{self, Act};
use super::pdf;
use crate::notify::delivery::Deliverer;
use crate::operations::signed_activation;

/// How often the sweep looks for expired processes and for seals still owed.
const SWEEP_EVERY: Duration = Duration::from_secs(60);
/// Processes sealed per sweep at most.
const SEAL_BATCH: i64 = 20;
/// Processes expired per sweep at most.
const EXPIRE_BATCH: i64 = 500;

/// Seals the engine's signature processes; one per engine.
pub struct Sealer {
    store: Arc<Store>,
    clock: Arc<dyn Clock>,
    calendar: Arc<BusinessCalendar>,
    sandbox: bool,
    deliverer: Arc<Deliverer>,
    /// Processes this engine is sealing now: a second caller (the sweep beside the signing
    /// request) waits for the first instead of sealing twice.
    sealing: Mutex<Vec<i64>>,
}

/// A claim on sealing one process, released when dropped: also when the request that holds it
/// is cut while waiting for its turn, so the sweep can take the process over.
struct Claim<'a> {
    sealer: &'a Sealer,
    process_seq: i64,
}

impl Drop for Claim<'_> {
    fn drop(&mut self) {
        self.sealer
            .sealing
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .retain(|&seq| seq != self.process_seq);
    }
}

impl Sealer {
    pub fn new(
        store: Arc<Store>,
        clock: Arc<dyn Clock>,
        calendar: Arc<BusinessCalendar>,
        sandbox: bool,
        deliverer: Arc<Deliverer>,
    ) -> Sealer {
        Sealer {
            store,
            clock,
            calendar,
            sandbox,
            deliverer,
            sealing: Mutex::new(Vec::new()),
        }
    }

    fn claim(&self, process_seq: i64) -> Option<Claim<'_>> {
        let mut busy = self.sealing.lock().unwrap_or_else(|e| e.into_inner());
        if busy.contains(&process_seq) {
            return None;
        }
        busy.push(process_seq);
        Some(Claim {
            sealer: self,
            process_seq,
        })
    }

    /// The act of the engine itself (no client), at the current wall and business times.
    fn act(&self) -> Act<'static> {
        let now = self.clock.now();
        Act {
            now,
            business_now: self.calendar.now(now),
            ip: None,
            user_agent: None,
            sandbox: self.sandbox,
        }
    }

    /// Seals a process awaiting its seal. `true` when the process is now COMPLETED. A failure
    /// leaves it awaiting, for the sweep to try again.
    pub async fn seal(&self, process_seq: i64) -> bool {
        // Another caller (the sweep, or the last signature's request) may be sealing it now:
        // wait for its turn, then answer what the process is, rather than "not completed" for
        // a process a moment from being completed. The caller's time limit bounds the wait.
        let _claim = loop {
            if let Some(claim) = self.claim(process_seq) {
                break claim;
            }
            tokio::time::sleep(Duration::from_millis(25)).await;
        };
        let permit = pdf::turn(pdf::Party::Installation).await;
        let store = Arc::clone(&self.store);
        let act = self.act();
        let result = tokio::task::spawn_blocking(move || {
            let job = store.read(|conn| ceremony::prepare_seal(conn, process_seq, &act))?;
            let Some(job) = job else {
                // Nothing to seal: sealed meanwhile by the caller that held the claim, or
                // never due.
                let process = store.read(|conn| signatures::process_by_seq(conn, process_seq))?;
                return Ok(process.state == ProcessState::Completed);
            };
            let id = job.process_id().to_string();
            let sealed = job.run();
            drop(permit);
            let done = store.write(|tx| {
                let Some(done) = ceremony::complete_seal(tx, sealed?, &act)? else {
                    return Ok(false);
                };
                // A mandate waiting for this signature becomes ACTIVE in this same write: a
                // completed process never stands beside a PENDING mandate, whoever sealed it
                // (page, sweep, trigger).
                signed_activation::process_completed(tx, &done.commerce, &done.view, act.now)?;
                Ok(true)
            })?;
            if done {
                tracing::info!(process = %id, "signature process sealed");
            }
            Ok::<bool, Error>(done)
        })
        .await;
        match result {
            Ok(Ok(done)) => {
                if done {
                    self.deliverer.wake();
                }
                done
            }
            Ok(Err(e)) => {
                tracing::error!(error = %e, process_seq, "sealing failed; the sweep tries again");
                false
            }
            Err(e) => {
                tracing::error!(error = %e, process_seq, "sealing panicked");
                false
            }
        }
    }

    /// Seals every process awaiting its seal: at start (a crash between the last signature
    /// and its seal) and with each sweep.
    async fn seal_pending(&self) {
        let store = Arc::clone(&self.store);
        let due = tokio::task::spawn_blocking(move || {
            store.read(|c| signatures::awaiting_seal(c, SEAL_BATCH))
        })
        .await;
        if let Ok(Ok(due)) = due {
            for seq in due {
                self.seal(seq).await;
            }
        }
    }

    /// Makes open processes past their expiry EXPIRED, with their events.
    async fn expire_due(&self) {
        let act = self.act();
        let business = timestamp(act.business_now);
        let store = Arc::clone(&self.store);
        let due = tokio::task::spawn_blocking(move || {
            store.read(|c| signatures::expired_open(c, &business, 1))
        })
        .await;
        if !matches!(due, Ok(Ok(ref v)) if !v.is_empty()) {
            return;
        }
        let store = Arc::clone(&self.store);
        let result = tokio::task::spawn_blocking(move || {
            store.write(|tx| ceremony::sweep(tx, &act, EXPIRE_BATCH))
        })
        .await;
        match result {
            Ok(Ok(n)) if n > 0 => {
                tracing::info!(expired = n, "signature processes expired");
                self.deliverer.wake();
            }
            Ok(Ok(_)) => {}
            Ok(Err(e)) => tracing::error!(error = %e, "signature expiry sweep failed"),
            Err(e) => tracing::error!(error = %e, "signature expiry sweep panicked"),
        }
    }

    /// Seals what is owed at once, then once a minute seals and expires, for as long as the
    /// runtime lives.
    pub async fn sweep(self: Arc<Self>) {
        loop {
            self.seal_pending().await;
            tokio::time::sleep(SWEEP_EVERY).await;
            self.expire_due().await;
        }
    }
}
