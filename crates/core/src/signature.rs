//! Electronic signature processes as data (CONTRACT 8): the limits of a process, the states of a
//! process and of a signatory with their wire ids, the signature types and placements, a
//! validated creation, and the turn rule. The ceremony that moves these states lives in the
//! engine's `esign`; this module does no I/O.

/// How long a process stays open when the request does not say (business days).
pub const DEFAULT_EXPIRY_DAYS: i64 = 30;
/// The longest `process.expirationDays` accepted.
pub const MAX_EXPIRY_DAYS: i64 = 365;
/// The largest document accepted, decoded.
pub const MAX_DOCUMENT_BYTES: usize = 10 * 1024 * 1024;
/// The body limit of `POST /signature` (CONTRACT 11).
pub const BODY_LIMIT: usize = 16 * 1024 * 1024;
pub const MAX_SIGNATORIES: usize = 50;
pub const MAX_DOCUMENTS: usize = 20;
/// `signatureData` entries of one document.
pub const MAX_PLACEMENTS: usize = 200;
/// A one-time code is valid this long (wall clock) ...
pub const CODE_VALIDITY_MINUTES: i64 = 10;
/// ... and for this many wrong entries.
pub const MAX_CODE_ATTEMPTS: i64 = 5;
/// Codes one signatory may ask for.
pub const MAX_CODES_SENT: i64 = 10;
/// Wrong RUTs, codes and identity answers together, after which the link is locked.
pub const MAX_FAILURES: i64 = 10;

/// The simulated identity check of `FEA` and `FAO` in the sandbox: the serial number of the
/// signatory's identity card ("número de serie de la cédula").
pub mod sandbox {
    /// Confirms the identity.
    pub const SERIAL_APPROVED: &str = "123456789";
    /// The simulated provider refuses the identity (counts as a failure).
    pub const SERIAL_DENIED: &str = "999999999";
}

/// `1 PENDING`, `2 IN_PROGRESS`, `3 COMPLETED`, `4 CANCELLED`, `5 REJECTED`, `6 EXPIRED`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ProcessState {
    Pending,
    InProgress,
    Completed,
    Cancelled,
    Rejected,
    Expired,
}

impl ProcessState {
    pub const ALL: [ProcessState; 6] = [
        ProcessState::Pending,
        ProcessState::InProgress,
        ProcessState::Completed,
        ProcessState::Cancelled,
        ProcessState::Rejected,
        ProcessState::Expired,
    ];

    pub fn id(self) -> i64 {
        match self {
            ProcessState::Pending => 1,
            ProcessState::InProgress => 2,
            ProcessState::Completed => 3,
            ProcessState::Cancelled => 4,
            ProcessState::Rejected => 5,
            ProcessState::Expired => 6,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            ProcessState::Pending => "PENDING",
            ProcessState::InProgress => "IN_PROGRESS",
            ProcessState::Completed => "COMPLETED",
            ProcessState::Cancelled => "CANCELLED",
            ProcessState::Rejected => "REJECTED",
            ProcessState::Expired => "EXPIRED",
        }
    }

    pub fn from_id(id: i64) -> Option<Self> {
        Self::ALL.into_iter().find(|s| s.id() == id)
    }

    pub fn from_name(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|s| s.name() == name)
    }

    /// PENDING and IN_PROGRESS: signatories may still act; it may be cancelled or expire.
    pub fn is_open(self) -> bool {
        matches!(self, ProcessState::Pending | ProcessState::InProgress)
    }

    pub fn spanish(self) -> &'static str {
        match self {
            ProcessState::Pending => "Pendiente",
            ProcessState::InProgress => "En curso",
            ProcessState::Completed => "Completado",
            ProcessState::Cancelled => "Cancelado",
            ProcessState::Rejected => "Rechazado",
            ProcessState::Expired => "Expirado",
        }
    }
}

/// A signatory's `1 PENDING`, `2 SIGNED`, `3 REJECTED`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SignatoryState {
    Pending,
    Signed,
    Rejected,
}

impl SignatoryState {
    pub fn id(self) -> i64 {
        match self {
            SignatoryState::Pending => 1,
            SignatoryState::Signed => 2,
            SignatoryState::Rejected => 3,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            SignatoryState::Pending => "PENDING",
            SignatoryState::Signed => "SIGNED",
            SignatoryState::Rejected => "REJECTED",
        }
    }

    pub fn from_id(id: i64) -> Option<Self> {
        [
            SignatoryState::Pending,
            SignatoryState::Signed,
            SignatoryState::Rejected,
        ]
        .into_iter()
        .find(|s| s.id() == id)
    }
}

/// The kind of electronic signature.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SignatureType {
    /// Firma electrónica simple: RUT and a one-time code.
    Fes,
    /// Firma electrónica avanzada: and the identity card's serial number.
    Fea,
    /// Avanzada con verificación en línea: and an online identity check (simulated).
    Fao,
}

impl SignatureType {
    pub fn parse(text: &str) -> Option<Self> {
        match text {
            "FES" => Some(SignatureType::Fes),
            "FEA" => Some(SignatureType::Fea),
            "FAO" => Some(SignatureType::Fao),
            _ => None,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            SignatureType::Fes => "FES",
            SignatureType::Fea => "FEA",
            SignatureType::Fao => "FAO",
        }
    }

    /// FEA and FAO confirm identity with a second step after the code.
    pub fn needs_extra_step(self) -> bool {
        !matches!(self, SignatureType::Fes)
    }

    pub fn spanish(self) -> &'static str {
        match self {
            SignatureType::Fes => "Firma electrónica simple",
            SignatureType::Fea => "Firma electrónica avanzada",
            SignatureType::Fao => "Firma electrónica avanzada con verificación en línea",
        }
    }
}

/// Where a signatory signs a document.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Placement {
    /// A box on a page (1-based), in PDF points with the origin at the top-left corner of the
    /// page as displayed (after CropBox and Rotate).
    Manual {
        page: u32,
        x: f64,
        y: f64,
        width: f64,
        height: f64,
    },
    /// On the signature page appended when sealing.
    LastPage,
}

impl Placement {
    pub fn mode(&self) -> &'static str {
        match self {
            Placement::Manual { .. } => "MANUAL",
            Placement::LastPage => "LAST_PAGE",
        }
    }
}

/// A validated signatory of a creation: the customer found, its order and type.
#[derive(Clone, Debug)]
pub struct NewSignatory {
    pub customer_seq: i64,
    pub order: i64,
    pub kind: SignatureType,
}

/// A validated document: parsed, hashed, and where each signatory (by index in the request's
/// signatories) signs it.
#[derive(Clone, Debug)]
pub struct NewDocument {
    pub name: String,
    pub bytes: Vec<u8>,
    pub sha256: String,
    pub page_count: u32,
    pub placements: Vec<(usize, Placement)>,
}

/// A validated `POST /signature`.
#[derive(Clone, Debug)]
pub struct CreateProcess {
    pub name: String,
    pub external_id: Option<String>,
    pub request_user: Option<String>,
    pub expiry_days: i64,
    pub signatories: Vec<NewSignatory>,
    pub documents: Vec<NewDocument>,
    pub callback: String,
    pub webhook: String,
}

/// The turn rule: a pending signatory may act when no other pending signatory has a lower
/// order (equal orders act in parallel).
pub fn is_turn(pending_orders: impl IntoIterator<Item = i64>, mine: i64) -> bool {
    pending_orders.into_iter().all(|other| other >= mine)
}

/// Lowercase hex SHA-256.
pub fn sha256_hex(bytes: &[u8]) -> String {
    use sha2::{Digest, Sha256};
    hex::encode(Sha256::digest(bytes))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lower_orders_go_first_and_equal_orders_in_parallel() {
        assert!(is_turn([1, 1, 2], 1));
        assert!(!is_turn([1, 2], 2));
        assert!(is_turn([2, 2, 3], 2));
        assert!(is_turn([], 5));
    }

    #[test]
    fn states_round_trip() {
        for s in ProcessState::ALL {
            assert_eq!(ProcessState::from_id(s.id()), Some(s));
            assert_eq!(ProcessState::from_name(s.name()), Some(s));
        }
        assert_eq!(ProcessState::Expired.id(), 6);
        assert_eq!(SignatoryState::from_id(3), Some(SignatoryState::Rejected));
    }
}
