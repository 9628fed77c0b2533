//! The merchant's own identifiers (CONTRACT 5): `userId`, `mandate.id`, installment `id` and
//! `externalProcessId`.
//!
//! They travel in URL paths (`/mandate/id/{mandateId}`) and in webhook bodies, so they are kept to
//! a character set that needs no escaping anywhere and cannot be confused with a path separator:
//! 1 to 64 ASCII letters, digits, `-`, `_` and `.`.

use std::fmt;

use thiserror::Error;

/// The longest external id accepted.
pub const MAX_LENGTH: usize = 64;

/// Why a text is not an acceptable external id.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Error)]
pub enum ExternalIdError {
    /// The id is empty.
    #[error("the id is empty")]
    Empty,
    /// The id is longer than 64 characters.
    #[error("the id is longer than 64 characters")]
    TooLong,
    /// The id has a character other than ASCII letters, digits, '-', '_' and '.'.
    #[error("the id may only contain ASCII letters, digits, '-', '_' and '.'")]
    InvalidCharacter,
}

/// An identifier chosen by the merchant, kept exactly as sent (ids are case-sensitive and never
/// trimmed, because the merchant looks them up by the exact value).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct ExternalId(String);

impl ExternalId {
    /// Checks that the id is 1 to 64 characters of ASCII letters, digits, `-`, `_` and `.`.
    pub fn parse(text: &str) -> Result<ExternalId, ExternalIdError> {
        if text.is_empty() {
            return Err(ExternalIdError::Empty);
        }
        if !text
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'))
        {
            return Err(ExternalIdError::InvalidCharacter);
        }
        // Every accepted character is one byte, so the byte length is the character count.
        if text.len() > MAX_LENGTH {
            return Err(ExternalIdError::TooLong);
        }
        Ok(ExternalId(text.to_owned()))
    }

    /// The id exactly as the merchant sent it.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for ExternalId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accepts_valid_ids() {
        let longest = "a".repeat(64);
        let cases: Vec<&str> = vec![
            "cust-001",
            "GYM-2026-001",
            "c1",
            "1",
            "a",
            "A.b_c-D",
            "...",
            "-",
            "_",
            "2026.12.05",
            "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_",
            &longest,
        ];
        for input in cases {
            let id = ExternalId::parse(input).unwrap_or_else(|e| panic!("{input:?} refused: {e}"));
            assert_eq!(id.as_str(), input);
            assert_eq!(id.to_string(), input);
        }
    }

    #[test]
    fn refuses_invalid_ids() {
        let too_long = "a".repeat(65);
        let too_long_and_invalid = format!("{} ", "a".repeat(70));
        let cases: Vec<(&str, ExternalIdError)> = vec![
            ("", ExternalIdError::Empty),
            (&too_long, ExternalIdError::TooLong),
            (" cust-001", ExternalIdError::InvalidCharacter),
            ("cust-001 ", ExternalIdError::InvalidCharacter),
            ("cust 001", ExternalIdError::InvalidCharacter),
            (" ", ExternalIdError::InvalidCharacter),
            ("cust/001", ExternalIdError::InvalidCharacter),
            ("cust\\001", ExternalIdError::InvalidCharacter),
            ("cust?001", ExternalIdError::InvalidCharacter),
            ("cust#001", ExternalIdError::InvalidCharacter),
            ("cust%20001", ExternalIdError::InvalidCharacter),
            ("cust+001", ExternalIdError::InvalidCharacter),
            ("cust:001", ExternalIdError::InvalidCharacter),
            ("cust@001", ExternalIdError::InvalidCharacter),
            ("cust\n001", ExternalIdError::InvalidCharacter),
            ("cust\u{0}", ExternalIdError::InvalidCharacter),
            ("peña", ExternalIdError::InvalidCharacter),
            ("ｃｕｓｔ", ExternalIdError::InvalidCharacter),
            (
                "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_.",
                ExternalIdError::TooLong,
            ),
            (&too_long_and_invalid, ExternalIdError::InvalidCharacter),
        ];
        for (input, expected) in cases {
            assert_eq!(ExternalId::parse(input), Err(expected), "input {input:?}");
        }
    }

    #[test]
    fn ids_are_case_sensitive() {
        assert_ne!(
            ExternalId::parse("abc").unwrap(),
            ExternalId::parse("ABC").unwrap()
        );
        assert_eq!(
            ExternalId::parse("abc").unwrap(),
            ExternalId::parse("abc").unwrap()
        );
    }
}
