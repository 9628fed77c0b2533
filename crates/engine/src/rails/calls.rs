//! The log of calls to real acquirers (CONTRACT 13): each client keeps its calls' operation,
//! reference, HTTP status, response code and duration while they run, and writes them in one
//! transaction when the blocking call that made them returns.

use mandato_store::acquirer_calls::{self, AcquirerCall};

/// The most bytes of an acquirer's error text a call's row keeps.
const ERROR_KEPT: usize = 300;

/// Where each call to an acquirer is logged: kept in memory while its futures run, then written
/// in one transaction when the blocking call that made them returns.
pub struct CallLog {
    commerce_id: i64,
    /// `None`: a client without a database (the live test), whose calls are only traced.
    store: Option<std::sync::Arc<mandato_store::Store>>,
    clock: std::sync::Arc<dyn mandato_core::clock::Clock>,
    pending: std::sync::Mutex<Vec<AcquirerCall>>,
}

impl CallLog {
    pub fn new(
        commerce_id: i64,
        store: std::sync::Arc<mandato_store::Store>,
        clock: std::sync::Arc<dyn mandato_core::clock::Clock>,
    ) -> CallLog {
        CallLog {
            commerce_id,
            store: Some(store),
            clock,
            pending: std::sync::Mutex::new(Vec::new()),
        }
    }

    /// A log that keeps nothing: for a client used without an installation's database.
    pub fn unkept() -> CallLog {
        CallLog {
            commerce_id: 0,
            store: None,
            clock: std::sync::Arc::new(mandato_core::clock::SystemClock),
            pending: std::sync::Mutex::new(Vec::new()),
        }
    }

    pub(super) fn keep(&self, mut call: AcquirerCall) {
        if self.store.is_none() {
            return;
        }
        // The error is the acquirer's own text: kept short, whatever it sent.
        if let Some(error) = &mut call.error
            && error.len() > ERROR_KEPT
        {
            let cut = (0..=ERROR_KEPT)
                .rev()
                .find(|&i| error.is_char_boundary(i))
                .unwrap_or(0);
            error.truncate(cut);
        }
        self.pending
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(call);
    }

    /// Writes the calls kept so far. The log is diagnostic: a failed write is itself logged,
    /// never an error of the payment that made the call.
    pub(super) fn flush(&self) {
        let Some(store) = &self.store else {
            return;
        };
        let calls = std::mem::take(&mut *self.pending.lock().unwrap_or_else(|p| p.into_inner()));
        if calls.is_empty() {
            return;
        }
        let written = store.write(|tx| {
            for call in &calls {
                acquirer_calls::insert(tx, call)?;
            }
            Ok(())
        });
        if let Err(e) = written {
            tracing::warn!(error = %e, calls = calls.len(), "acquirer calls not logged");
        }
    }
}

impl CallLog {
    /// The commerce whose calls these are.
    pub(super) fn commerce_id(&self) -> i64 {
        self.commerce_id
    }

    /// The time a call is logged at.
    pub(super) fn now(&self) -> String {
        mandato_core::clock::timestamp(self.clock.now())
    }
}
