//! A commerce's code. Written as a RUT (digits, optional thousands dots, a dash and a check
//! digit), it must be a valid RUT and is kept normalized (`76.123.456-0` becomes
//! `76123456-0`), so the same commerce cannot be registered twice under two spellings;
//! anything else must be an issued code (1 to 64 letters, digits, `-`, `_`, `.`). The command
//! line and the staff API both read codes with [`CommerceCode::parse`] and limit names to
//! [`MAX_NAME_CHARS`].

use std::fmt;

use super::external_id::ExternalId;
use super::rut::{self, Rut, RutError};

/// The longest name a commerce may have, in characters (shown text: `text::check_shown_text`).
pub const MAX_NAME_CHARS: usize = 200;

/// A valid commerce code, normalized.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CommerceCode(String);

/// Why a text is not a commerce code. `INVALID_RUT` for the first two, `INVALID_CODE` for the
/// last ([`CommerceCodeError::name`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CommerceCodeError {
    /// Written as a RUT whose check digit does not match its number; `expected` is the right
    /// one for that number, when the number reads.
    WrongCheckDigit { expected: Option<(u32, char)> },
    /// Written as a RUT that is not one for another reason.
    InvalidRut(RutError),
    /// Neither a RUT nor an issued code.
    InvalidCode,
}

impl CommerceCode {
    pub fn parse(text: &str) -> Result<CommerceCode, CommerceCodeError> {
        let text = text.trim();
        if rut::looks_like_rut(text) {
            return match Rut::parse(text) {
                Ok(rut) => Ok(CommerceCode(rut.to_string())),
                Err(RutError::WrongCheckDigit) => Err(CommerceCodeError::WrongCheckDigit {
                    expected: rut::body_before_dash(text)
                        .map(|body| (body, rut::check_digit(body))),
                }),
                Err(e) => Err(CommerceCodeError::InvalidRut(e)),
            };
        }
        ExternalId::parse(text)
            .map(|id| CommerceCode(id.as_str().to_string()))
            .map_err(|_| CommerceCodeError::InvalidCode)
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }

    pub fn into_string(self) -> String {
        self.0
    }
}

impl CommerceCodeError {
    /// The refusal's name, as the command line and the staff API answer it.
    pub fn name(&self) -> &'static str {
        match self {
            CommerceCodeError::WrongCheckDigit { .. } | CommerceCodeError::InvalidRut(_) => {
                "INVALID_RUT"
            }
            CommerceCodeError::InvalidCode => "INVALID_CODE",
        }
    }
}

impl fmt::Display for CommerceCodeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CommerceCodeError::WrongCheckDigit { expected } => {
                write!(f, "the RUT's check digit does not match its number")?;
                match expected {
                    Some((body, digit)) => write!(f, " (for {body} it is {digit})"),
                    None => Ok(()),
                }
            }
            CommerceCodeError::InvalidRut(e) => write!(f, "not a valid RUT: {e}"),
            CommerceCodeError::InvalidCode => write!(
                f,
                "a RUT (12.345.678-5), or 1 to 64 letters, digits, '-', '_' or '.'"
            ),
        }
    }
}

impl std::error::Error for CommerceCodeError {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ruts_are_normalized_and_need_their_check_digit() {
        assert_eq!(
            CommerceCode::parse(" 76.123.456-0 ").unwrap().as_str(),
            "76123456-0"
        );
        let wrong = CommerceCode::parse("76.123.456-1").unwrap_err();
        assert_eq!(
            wrong,
            CommerceCodeError::WrongCheckDigit {
                expected: Some((76123456, '0'))
            }
        );
        assert_eq!(wrong.name(), "INVALID_RUT");
        assert!(
            wrong.to_string().ends_with("(for 76123456 it is 0)"),
            "{wrong}"
        );
    }

    #[test]
    fn issued_codes_are_kept_as_typed() {
        assert_eq!(CommerceCode::parse("GYM-SUR").unwrap().as_str(), "GYM-SUR");
        let bad = CommerceCode::parse("no spaces allowed").unwrap_err();
        assert_eq!(bad, CommerceCodeError::InvalidCode);
        assert_eq!(bad.name(), "INVALID_CODE");
    }
}
