//! Password hashing for commerce and staff passwords.
//!
//! Passwords are low-entropy, so they are stored as argon2id PHC strings (memory-hard, salted)
//! with the argon2 crate's defaults (argon2id v19, m = 19 MiB, t = 2, p = 1, the OWASP
//! recommendation). The PHC string carries its own parameters, so raising the defaults later
//! keeps old hashes verifiable.

use argon2::password_hash::phc::PasswordHash;
use argon2::password_hash::{PasswordHasher, PasswordVerifier};
use argon2::{Algorithm, Argon2};

use crate::secret::Secret;

/// Hashes a password to an argon2id PHC string (`$argon2id$v=19$m=...,t=...,p=...$salt$hash`)
/// with a fresh random 16-byte salt.
///
/// # Panics
/// Only if the operating system's random generator fails, which leaves nothing sensible to do.
#[must_use]
pub fn hash_password(password: &Secret<String>) -> String {
    Argon2::default()
        .hash_password(password.expose().as_bytes())
        .expect("argon2id hashing failed (system RNG unavailable?)")
        .to_string()
}

/// Checks a password against a stored PHC string.
///
/// Answers `false`, never an error, for a malformed hash or one that is not argon2id: a login
/// can only succeed or fail, and refusing other algorithms means a tampered row cannot
/// downgrade us to a weaker variant. The comparison of outputs is constant-time (argon2 crate).
#[must_use]
pub fn verify_password(password: &Secret<String>, phc: &str) -> bool {
    let Ok(parsed) = PasswordHash::new(phc) else {
        return false;
    };
    if parsed.algorithm != Algorithm::Argon2id.ident() {
        return false;
    }
    Argon2::default()
        .verify_password(password.expose().as_bytes(), &parsed)
        .is_ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(v: &str) -> Secret<String> {
        Secret::new(v.to_string())
    }

    #[test]
    fn round_trip() {
        let phc = hash_password(&s("contraseña-ñandú-€"));
        assert!(phc.starts_with("$argon2id$v=19$"), "{phc}");
        assert!(verify_password(&s("contraseña-ñandú-€"), &phc));
        assert!(!verify_password(&s("contrasena-nandu-E"), &phc));
        assert!(!verify_password(&s(""), &phc));
    }

    #[test]
    fn salts_differ() {
        let a = hash_password(&s("same"));
        let b = hash_password(&s("same"));
        assert_ne!(a, b);
        assert!(verify_password(&s("same"), &a));
        assert!(verify_password(&s("same"), &b));
    }

    #[test]
    fn malformed_hash_is_false() {
        for bad in [
            "",
            "plain",
            "$argon2id$",
            "$argon2id$v=19$m=19456,t=2,p=1$$",
        ] {
            assert!(!verify_password(&s("x"), bad), "{bad:?}");
        }
    }

    #[test]
    fn other_argon2_variants_are_refused() {
        let argon2i = Argon2::new(
            Algorithm::Argon2i,
            argon2::Version::V0x13,
            argon2::Params::default(),
        );
        let phc = argon2i.hash_password(b"pw").unwrap().to_string();
        assert!(phc.starts_with("$argon2i$"));
        assert!(!verify_password(&s("pw"), &phc));
    }
}
