//! Internal ids: a type prefix and a UUIDv7 in hex (`man_0193...`). Opaque to clients; time
//! ordered, so new rows land at the end of their index.

use rand::RngCore;

pub fn new_id(prefix: &str) -> String {
    format!("{prefix}_{}", uuid::Uuid::now_v7().simple())
}

/// A random 128-bit token in URL-safe base64 (Magic Links, signing links).
pub fn new_token() -> String {
    use base64::Engine;
    let mut bytes = [0u8; 16];
    rand::rng().fill_bytes(&mut bytes);
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes)
}

#[cfg(test)]
mod tests {
    #[test]
    fn ids_carry_their_prefix_and_differ() {
        let a = super::new_id("man");
        let b = super::new_id("man");
        assert!(a.starts_with("man_") && a.len() == 36);
        assert_ne!(a, b);
        assert_eq!(super::new_token().len(), 22);
    }
}
