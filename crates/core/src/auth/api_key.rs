//! API keys (`x-api-key`) and commerce webhook secrets.
//!
//! An API key is 256 random bits, so unlike a password it cannot be brute-forced from its hash:
//! a plain SHA-256 at rest is enough, and being fast and deterministic it lets the store find the
//! key by its hash on every request without a slow KDF. The full key is shown once, at creation;
//! afterwards only its `prefix` (to tell keys apart in the UI) and its `hash` are kept.

use base64::Engine;
use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};
use rand::RngCore;
use sha2::{Digest, Sha256};

use crate::secret::Secret;

/// Every API key starts with this, so a leaked key is recognisable (e.g. by secret scanners).
pub const KEY_PREFIX: &str = "mk_";

/// Every webhook secret starts with this, as the Standard Webhooks specification does.
pub const WEBHOOK_SECRET_PREFIX: &str = "whsec_";

/// How many leading characters of a key are kept in clear as its display prefix.
pub const DISPLAY_PREFIX_LEN: usize = 8;

/// A freshly generated API key: `key` is shown to the staff member once and never stored.
#[derive(Debug)]
pub struct NewApiKey {
    /// The full key, `mk_` followed by 43 base64url characters (32 random bytes).
    pub key: Secret<String>,
    /// The first 8 characters of the key, safe to store and display.
    pub prefix: String,
    /// Lowercase hex SHA-256 of the whole key, what the store keeps and looks up.
    pub hash: String,
}

/// Makes a new API key from 32 bytes of the operating system's CSPRNG (through `rand`'s
/// thread-local generator, which is seeded from it).
#[must_use]
pub fn generate() -> NewApiKey {
    let mut bytes = [0u8; 32];
    rand::rng().fill_bytes(&mut bytes);
    let key = format!("{KEY_PREFIX}{}", URL_SAFE_NO_PAD.encode(bytes));
    let prefix = key[..DISPLAY_PREFIX_LEN].to_string();
    let hash = hash_key(&key);
    NewApiKey {
        key: Secret::new(key),
        prefix,
        hash,
    }
}

/// Lowercase hex SHA-256 of a presented key, to look it up in the store.
///
/// Takes `&str` rather than a `Secret` because the caller has the raw header value at hand;
/// only the hash leaves this function.
#[must_use]
pub fn hash_key(key: &str) -> String {
    hex::encode(Sha256::digest(key.as_bytes()))
}

/// Makes a commerce webhook secret: `whsec_` + standard base64 (with padding) of 32 random
/// bytes, the form Standard Webhooks verifiers expect (CONTRACT section 7). The HMAC key is the
/// decoded bytes, not the text.
#[must_use]
pub fn generate_webhook_secret() -> Secret<String> {
    let mut bytes = [0u8; 32];
    rand::rng().fill_bytes(&mut bytes);
    Secret::new(format!("{WEBHOOK_SECRET_PREFIX}{}", STANDARD.encode(bytes)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn key_has_the_documented_shape() {
        let k = generate();
        let key = k.key.expose();
        assert_eq!(key.len(), 3 + 43);
        assert!(key.starts_with("mk_"));
        assert!(
            key[3..]
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
        );
        assert_eq!(URL_SAFE_NO_PAD.decode(&key[3..]).unwrap().len(), 32);
        assert_eq!(k.prefix, key[..8]);
        assert_eq!(k.hash, hash_key(key));
    }

    #[test]
    fn hash_is_lowercase_hex_sha256() {
        // SHA-256("abc"), FIPS 180-2 test vector.
        assert_eq!(
            hash_key("abc"),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
        let h = generate().hash;
        assert_eq!(h.len(), 64);
        assert!(
            h.bytes()
                .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
        );
    }

    #[test]
    fn keys_are_unique() {
        let a = generate();
        let b = generate();
        assert_ne!(a.key, b.key);
        assert_ne!(a.hash, b.hash);
    }

    #[test]
    fn debug_does_not_show_the_key() {
        let k = generate();
        let dbg = format!("{k:?}");
        assert!(!dbg.contains(k.key.expose().as_str()));
        assert!(dbg.contains(&k.prefix));
    }

    #[test]
    fn webhook_secret_shape() {
        let s = generate_webhook_secret();
        let s = s.expose();
        let b64 = s.strip_prefix("whsec_").expect("whsec_ prefix");
        assert_eq!(b64.len(), 44);
        assert_eq!(STANDARD.decode(b64).unwrap().len(), 32);
        assert_ne!(generate_webhook_secret().expose(), s);
    }
}
