//! The acquirer behind the charging engine. Everything the engine knows of it is this trait,
//! so a real acquirer plugs in where the simulation does.

use crate::domain::instrument::InstrumentInput;
use crate::domain::money::Money;
use crate::domain::state::{PaymentMethod, RejectionCode};

/// What the processor keeps of an enrolled instrument, and all we keep too. The token (a
/// Transbank `tbk_user`) charges the card: its `Debug` never shows it.
#[derive(Clone)]
pub struct Enrolled {
    pub token: String,
    pub brand: Option<String>,
    pub last4: String,
}

impl std::fmt::Debug for Enrolled {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Enrolled")
            .field("token", &"[redacted]")
            .field("brand", &self.brand)
            .field("last4", &self.last4)
            .finish()
    }
}

/// A sandbox instruction for the next charge of an installment.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Forced {
    Paid,
    Rejected(RejectionCode),
}

pub struct ChargeRequest<'a> {
    /// The same key always means the same charge: a repeated request must not charge again.
    pub idempotency_key: &'a str,
    pub token: &'a str,
    /// Who the customer is at the acquirer: our `internalUserId`, which is Transbank
    /// Oneclick's `username` for the inscription behind `token`.
    pub customer_ref: &'a str,
    pub method: PaymentMethod,
    /// The amount to charge, in CLP for UF installments (already converted).
    pub amount: &'a Money,
    pub forced: Option<Forced>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ChargeResult {
    Approved {
        authorization_code: String,
        /// The acquirer's fee on the charge, in its currency, when it reports one.
        fee: Option<rust_decimal::Decimal>,
    },
    Rejected {
        code: RejectionCode,
    },
    /// Accepted for validation by the bank (direct debit): settles later.
    Pending,
}

#[derive(Debug, thiserror::Error)]
pub enum ProcessorError {
    /// The instrument was refused at enrolment.
    #[error("instrument refused: {0}")]
    Refused(String),
    /// The processor could not be reached or failed; the outcome is unknown.
    #[error("processor unavailable: {0}")]
    Unavailable(String),
}

pub trait Processor: Send + Sync {
    fn enroll(&self, instrument: &InstrumentInput) -> Result<Enrolled, ProcessorError>;

    /// Charges once per idempotency key; a repeated key answers the first outcome.
    fn charge(&self, request: &ChargeRequest<'_>) -> Result<ChargeResult, ProcessorError>;

    /// Several charges, answered in order, each exactly as `charge` would answer it. The
    /// default sends them one by one; an acquirer with a batch interface answers them together.
    fn charge_many(
        &self,
        requests: &[ChargeRequest<'_>],
    ) -> Vec<Result<ChargeResult, ProcessorError>> {
        requests.iter().map(|r| self.charge(r)).collect()
    }

    /// The outcome of a charge by its key, or `None` when the processor never received it.
    fn status(&self, idempotency_key: &str) -> Result<Option<ChargeResult>, ProcessorError>;

    /// The final outcome of a `Pending` charge, once the bank has answered.
    fn settle(&self, idempotency_key: &str) -> Result<ChargeResult, ProcessorError>;

    /// How long after an attempt was recorded a charge this processor says it never received
    /// may be sent again: an earlier send by a process that died with it in flight may still
    /// be under way at the acquirer until then. Zero for a processor that answers in this
    /// process.
    fn resend_after(&self) -> std::time::Duration {
        std::time::Duration::ZERO
    }

    /// Gives back the whole of an approved charge. Asking again for a charge already
    /// refunded succeeds: the money went back once.
    fn refund(&self, idempotency_key: &str, amount: &Money) -> Result<(), ProcessorError>;
}
