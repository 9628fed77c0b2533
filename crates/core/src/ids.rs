//! Internal ids: a type prefix and a UUIDv7 in hex (`man_0193...`). Opaque to clients; time
//! ordered to the millisecond, so new rows land at the end of their index.

use std::time::{SystemTime, UNIX_EPOCH};

use rand::RngCore;

pub fn new_id(prefix: &str) -> String {
    format!("{prefix}_{}", uuid_v7().simple())
}

/// A UUIDv7 whose random part comes from the thread's generator (`rand::rng()`: ChaCha,
/// seeded by the operating system). `Uuid::now_v7` asks the kernel for fresh bytes on every
/// call, a system call per id: thirteen of them in every mandate creation, 2% of its CPU, in
/// the part that runs one request at a time (`bench/README.md`).
fn uuid_v7() -> uuid::Uuid {
    let millis = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |since| since.as_millis() as u64);
    let mut random = [0u8; 10];
    rand::rng().fill_bytes(&mut random);
    uuid::Builder::from_unix_timestamp_millis(millis, &random).into_uuid()
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

    #[test]
    fn ids_are_version_7_and_ordered_by_their_millisecond() {
        let first = super::uuid_v7();
        std::thread::sleep(std::time::Duration::from_millis(2));
        let later = super::uuid_v7();
        assert_eq!(first.get_version_num(), 7);
        assert_eq!(first.get_variant(), uuid::Variant::RFC4122);
        assert!(first.simple().to_string() < later.simple().to_string());
        let unix_seconds = |id: uuid::Uuid| id.get_timestamp().unwrap().to_unix().0;
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_secs();
        assert!(now - unix_seconds(later) <= 1);
    }
}
