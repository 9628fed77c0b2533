//! Authentication primitives, free of I/O: the pieces the HTTP layer and the store call.
//!
//! - [`jwe`]: the environment's RSA key pair and the decryption of login passwords, which merchants
//!   send as compact JWE so that the password never travels (or gets logged) in clear text.
//! - [`jwt`]: ES256 session tokens issued at login and checked on every merchant request.
//! - [`password`]: argon2id hashing of commerce and staff passwords.
//! - [`api_key`]: environment API keys and commerce webhook secrets.
//! - [`throttle`]: the sign-in throttle's rule (5 attempts per key in a 15-minute window).
//!
//! Every secret crosses these APIs wrapped in [`crate::secret::Secret`].

pub mod api_key;
pub mod jwe;
pub mod jwt;
pub mod password;
pub mod throttle;

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use sha2::{Digest, Sha256};

/// The `kid` of a public key: base64url (no padding) of the first 16 bytes of the SHA-256 of its
/// SubjectPublicKeyInfo DER. Derived rather than random so the same key always has the same
/// `kid` (across restarts and exports) and a client can tell when the key has changed.
fn kid_from_spki_der(spki_der: &[u8]) -> String {
    let digest = Sha256::digest(spki_der);
    URL_SAFE_NO_PAD.encode(&digest[..16])
}
