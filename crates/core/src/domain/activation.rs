//! How a mandate becomes ACTIVE: at once when the customer enrols an instrument on the Magic
//! Link (`DIRECT`), or only once the customer has also signed the mandate document
//! electronically (`SIGNATURE`). A commerce has a default; a mandate may say otherwise.

/// The activation mode of a commerce (its default) or of a mandate.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum ActivationMode {
    /// Enrolling the instrument activates the mandate.
    #[default]
    Direct,
    /// Enrolling stores the instrument and starts a signature process over the mandate
    /// document; its completion activates the mandate.
    Signature,
}

impl ActivationMode {
    pub const ALL: [ActivationMode; 2] = [ActivationMode::Direct, ActivationMode::Signature];

    /// The wire and stored name: `DIRECT` or `SIGNATURE`.
    pub fn name(self) -> &'static str {
        match self {
            ActivationMode::Direct => "DIRECT",
            ActivationMode::Signature => "SIGNATURE",
        }
    }

    /// Parses the wire name exactly (`DIRECT`, `SIGNATURE`).
    pub fn from_name(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|m| m.name() == name)
    }

    /// Parses the command line's spelling: either case (`direct`, `SIGNATURE`).
    pub fn from_cli(text: &str) -> Option<Self> {
        Self::from_name(&text.trim().to_ascii_uppercase())
    }
}

/// Why the latest signature process of a mandate ended without activating it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ActivationFailure {
    /// The customer rejected the document.
    SignatureRejected,
    /// The process passed its expiry unsigned.
    SignatureExpired,
    /// The process was cancelled (through the signature API) before it completed.
    SignatureCancelled,
}

impl ActivationFailure {
    pub const ALL: [ActivationFailure; 3] = [
        ActivationFailure::SignatureRejected,
        ActivationFailure::SignatureExpired,
        ActivationFailure::SignatureCancelled,
    ];

    pub fn name(self) -> &'static str {
        match self {
            ActivationFailure::SignatureRejected => "SIGNATURE_REJECTED",
            ActivationFailure::SignatureExpired => "SIGNATURE_EXPIRED",
            ActivationFailure::SignatureCancelled => "SIGNATURE_CANCELLED",
        }
    }

    pub fn from_name(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|f| f.name() == name)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn modes_parse_by_their_wire_name_and_the_cli_takes_either_case() {
        for mode in ActivationMode::ALL {
            assert_eq!(ActivationMode::from_name(mode.name()), Some(mode));
        }
        assert_eq!(ActivationMode::from_name("signature"), None);
        assert_eq!(
            ActivationMode::from_cli("signature"),
            Some(ActivationMode::Signature)
        );
        assert_eq!(
            ActivationMode::from_cli("Direct"),
            Some(ActivationMode::Direct)
        );
        assert_eq!(ActivationMode::from_cli("firma"), None);
        assert_eq!(ActivationMode::default(), ActivationMode::Direct);
    }

    #[test]
    fn failures_round_trip() {
        for failure in ActivationFailure::ALL {
            assert_eq!(ActivationFailure::from_name(failure.name()), Some(failure));
        }
        assert_eq!(ActivationFailure::from_name("REJECTED"), None);
    }
}
