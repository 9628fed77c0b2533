//! The customer's e-mail address (CONTRACT 5, `contacts.email`).
//!
//! The check is deliberately practical rather than a full RFC 5322 parser: it accepts the
//! addresses real mail systems deliver to (`ana.perez+gym@mail.example.cl`) and refuses the
//! mistakes that would make a notification undeliverable (no domain, spaces, a missing top-level
//! domain), so a bad address is reported to the merchant at once instead of bouncing later.

use std::fmt;

use thiserror::Error;

/// The longest address SMTP can carry (RFC 5321, 4.5.3.1.3, a 256-octet path minus the brackets).
pub const MAX_LENGTH: usize = 254;
/// The longest local part (before the `@`) SMTP accepts (RFC 5321, 4.5.3.1.1).
pub const MAX_LOCAL_LENGTH: usize = 64;
/// The longest domain name label (RFC 1035, 2.3.4).
const MAX_LABEL_LENGTH: usize = 63;

/// Why a text is not an acceptable e-mail address.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Error)]
pub enum EmailError {
    /// Nothing but whitespace was given.
    #[error("the e-mail address is empty")]
    Empty,
    /// The address is longer than 254 characters.
    #[error("the e-mail address is longer than 254 characters")]
    TooLong,
    /// The address does not have exactly one `@`.
    #[error("the e-mail address must contain exactly one '@'")]
    MissingAt,
    /// The part before the `@` is empty, longer than 64 characters, or has spaces, control
    /// characters, characters that need quoting, or misplaced dots.
    #[error("the part of the e-mail address before the '@' is not valid")]
    InvalidLocalPart,
    /// The part after the `@` is not a domain name with a top-level domain of at least two letters.
    #[error("the domain of the e-mail address is not valid")]
    InvalidDomain,
}

/// A syntactically valid e-mail address, as the merchant wrote it minus surrounding whitespace.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Email(String);

impl Email {
    /// Checks an address: trimmed, at most 254 characters, exactly one `@`, a local part of 1 to
    /// 64 characters without spaces, control characters or characters that would need quoting,
    /// and a domain of dot-separated labels (ASCII letters, digits and inner hyphens) ending in a
    /// top-level domain of at least two letters.
    pub fn parse(text: &str) -> Result<Email, EmailError> {
        let text = text.trim();
        if text.is_empty() {
            return Err(EmailError::Empty);
        }
        if text.chars().count() > MAX_LENGTH {
            return Err(EmailError::TooLong);
        }
        let (local, domain) = text.split_once('@').ok_or(EmailError::MissingAt)?;
        if domain.contains('@') {
            return Err(EmailError::MissingAt);
        }
        if !is_valid_local_part(local) {
            return Err(EmailError::InvalidLocalPart);
        }
        if !is_valid_domain(domain) {
            return Err(EmailError::InvalidDomain);
        }
        Ok(Email(text.to_owned()))
    }

    /// The address, trimmed, exactly as accepted.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for Email {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// A local part is 1 to 64 characters, with no whitespace, control characters or RFC 5322
/// "specials" (which are only valid inside quotes, a form no real customer address uses), and
/// dots only between other characters.
fn is_valid_local_part(local: &str) -> bool {
    const SPECIALS: &[char] = &['(', ')', '<', '>', '[', ']', ':', ';', ',', '\\', '"'];
    !local.is_empty()
        && local.chars().count() <= MAX_LOCAL_LENGTH
        && local
            .chars()
            .all(|c| !c.is_whitespace() && !c.is_control() && !SPECIALS.contains(&c))
        && !local.starts_with('.')
        && !local.ends_with('.')
        && !local.contains("..")
}

/// A domain is at least two dot-separated labels of 1 to 63 ASCII letters, digits and hyphens,
/// no label starting or ending with a hyphen, the last one (the top-level domain) being at least
/// two letters.
fn is_valid_domain(domain: &str) -> bool {
    let labels: Vec<&str> = domain.split('.').collect();
    let Some(tld) = labels.last() else {
        return false;
    };
    labels.len() >= 2
        && labels.iter().all(|label| is_valid_label(label))
        && tld.len() >= 2
        && tld.bytes().all(|b| b.is_ascii_alphabetic())
}

fn is_valid_label(label: &str) -> bool {
    !label.is_empty()
        && label.len() <= MAX_LABEL_LENGTH
        && label
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-')
        && !label.starts_with('-')
        && !label.ends_with('-')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accepts_valid_addresses() {
        let long_local = "a".repeat(64);
        let long_local_address = format!("{long_local}@example.cl");
        let long_label_address = format!("ana@{}.cl", "b".repeat(63));
        // 64 + 1 + 63 + 1 + 63 + 1 + 61 = 254 characters.
        let longest = format!(
            "{}@{}.{}.{}",
            "a".repeat(64),
            "b".repeat(63),
            "c".repeat(63),
            "d".repeat(61)
        );
        assert_eq!(longest.len(), 254);
        let cases: Vec<(&str, &str)> = vec![
            ("ana@example.cl", "ana@example.cl"),
            ("  ana@example.cl\n", "ana@example.cl"),
            ("\tana@example.cl ", "ana@example.cl"),
            ("Ana.Perez@Example.CL", "Ana.Perez@Example.CL"),
            (
                "ana.perez+gym@mail.example.cl",
                "ana.perez+gym@mail.example.cl",
            ),
            ("ana_perez-soto@example.com", "ana_perez-soto@example.com"),
            ("a@b.co", "a@b.co"),
            ("1234@123.example.org", "1234@123.example.org"),
            ("o'higgins@example.cl", "o'higgins@example.cl"),
            (
                "user!#$%&*/=?^`{|}~@example.cl",
                "user!#$%&*/=?^`{|}~@example.cl",
            ),
            ("josé@example.cl", "josé@example.cl"),
            ("ana@sub-domain.example.cl", "ana@sub-domain.example.cl"),
            ("ana@xn--pea-8ma.cl", "ana@xn--pea-8ma.cl"),
            ("ana@a.b.c.d.museum", "ana@a.b.c.d.museum"),
            (&long_local_address, &long_local_address),
            (&long_label_address, &long_label_address),
            (&longest, &longest),
        ];
        for (input, expected) in cases {
            let email = Email::parse(input).unwrap_or_else(|e| panic!("{input:?} refused: {e}"));
            assert_eq!(email.as_str(), expected);
            assert_eq!(email.to_string(), expected);
        }
    }

    #[test]
    fn refuses_invalid_addresses() {
        let too_long = format!(
            "{}@{}.{}.{}",
            "a".repeat(64),
            "b".repeat(63),
            "c".repeat(63),
            "d".repeat(62)
        );
        let local_too_long = format!("{}@example.cl", "a".repeat(65));
        let label_too_long = format!("ana@{}.cl", "b".repeat(64));
        let cases: Vec<(&str, EmailError)> = vec![
            ("", EmailError::Empty),
            ("   ", EmailError::Empty),
            (&too_long, EmailError::TooLong),
            ("ana.example.cl", EmailError::MissingAt),
            ("ana", EmailError::MissingAt),
            ("ana@@example.cl", EmailError::MissingAt),
            ("ana@example@cl.cl", EmailError::MissingAt),
            ("@example.cl", EmailError::InvalidLocalPart),
            (&local_too_long, EmailError::InvalidLocalPart),
            ("ana perez@example.cl", EmailError::InvalidLocalPart),
            ("ana\tperez@example.cl", EmailError::InvalidLocalPart),
            ("ana\u{0}@example.cl", EmailError::InvalidLocalPart),
            ("ana\u{7f}@example.cl", EmailError::InvalidLocalPart),
            ("ana\u{a0}@example.cl", EmailError::InvalidLocalPart),
            (".ana@example.cl", EmailError::InvalidLocalPart),
            ("ana.@example.cl", EmailError::InvalidLocalPart),
            ("ana..perez@example.cl", EmailError::InvalidLocalPart),
            ("\"ana\"@example.cl", EmailError::InvalidLocalPart),
            ("ana,perez@example.cl", EmailError::InvalidLocalPart),
            ("<ana>@example.cl", EmailError::InvalidLocalPart),
            ("ana:perez@example.cl", EmailError::InvalidLocalPart),
            ("ana;perez@example.cl", EmailError::InvalidLocalPart),
            ("ana\\perez@example.cl", EmailError::InvalidLocalPart),
            ("ana(x)@example.cl", EmailError::InvalidLocalPart),
            ("ana@", EmailError::InvalidDomain),
            ("ana@localhost", EmailError::InvalidDomain),
            ("ana@example", EmailError::InvalidDomain),
            ("ana@example.c", EmailError::InvalidDomain),
            ("ana@example.c1", EmailError::InvalidDomain),
            ("ana@example.123", EmailError::InvalidDomain),
            ("ana@192.168.0.1", EmailError::InvalidDomain),
            ("ana@[192.168.0.1]", EmailError::InvalidDomain),
            ("ana@.example.cl", EmailError::InvalidDomain),
            ("ana@example.cl.", EmailError::InvalidDomain),
            ("ana@example..cl", EmailError::InvalidDomain),
            ("ana@-example.cl", EmailError::InvalidDomain),
            ("ana@example-.cl", EmailError::InvalidDomain),
            ("ana@example.-cl", EmailError::InvalidDomain),
            ("ana@exa_mple.cl", EmailError::InvalidDomain),
            ("ana@exa mple.cl", EmailError::InvalidDomain),
            ("ana@peña.cl", EmailError::InvalidDomain),
            ("ana@example.cl ;x", EmailError::InvalidDomain),
            (&label_too_long, EmailError::InvalidDomain),
        ];
        for (input, expected) in cases {
            assert_eq!(Email::parse(input), Err(expected), "input {input:?}");
        }
    }
}
