//! The two webhook signatures of CONTRACT 7: the body `signature` field (HMAC-SHA256 over the
//! JCS form of the body without `signature`, lowercase hex) and the Standard Webhooks header.

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use hmac::{Hmac, KeyInit, Mac};
use serde_json::Value;
use sha2::Sha256;

use mandato_core::jcs;
use mandato_core::secret::Secret;

type HmacSha256 = Hmac<Sha256>;

/// Whether `text` has the form of a commerce's secret: `whsec_` then standard base64 of at
/// least one byte. A secret pasted by hand is checked with this before anything is signed.
pub fn is_well_formed_secret(text: &str) -> bool {
    text.strip_prefix("whsec_")
        .is_some_and(|encoded| STANDARD.decode(encoded).is_ok_and(|key| !key.is_empty()))
}

/// The key bytes of a `whsec_<base64>` secret.
pub fn secret_key(secret: &Secret<String>) -> Vec<u8> {
    let encoded = secret
        .expose()
        .strip_prefix("whsec_")
        .unwrap_or(secret.expose());
    STANDARD
        .decode(encoded)
        .unwrap_or_else(|_| secret.expose().as_bytes().to_vec())
}

fn hmac(key: &[u8], message: &[u8]) -> Vec<u8> {
    let mut mac = HmacSha256::new_from_slice(key).expect("HMAC takes keys of any length");
    mac.update(message);
    mac.finalize().into_bytes().to_vec()
}

/// The body `signature` of an event: lowercase hex HMAC-SHA256 over the JCS form of the body
/// without its `signature` member.
pub fn body_signature(body: &Value, secret: &Secret<String>) -> String {
    let mut unsigned = body.clone();
    if let Value::Object(map) = &mut unsigned {
        map.remove("signature");
    }
    hex::encode(hmac(
        &secret_key(secret),
        jcs::canonicalize(&unsigned).as_bytes(),
    ))
}

/// Signs an event body: returns it with its `signature` member set.
pub fn sign_body(mut body: Value, secret: &Secret<String>) -> Value {
    let signature = body_signature(&body, secret);
    if let Value::Object(map) = &mut body {
        map.insert("signature".into(), Value::String(signature));
    }
    body
}

/// `v1,<base64 HMAC-SHA256 of "{id}.{timestamp}.{body}">` per the Standard Webhooks spec.
pub fn standard_webhooks_signature(
    secret: &Secret<String>,
    id: &str,
    timestamp: i64,
    body: &str,
) -> String {
    let message = format!("{id}.{timestamp}.{body}");
    format!(
        "v1,{}",
        STANDARD.encode(hmac(&secret_key(secret), message.as_bytes()))
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn body_signature_ignores_an_existing_signature_and_member_order() {
        let secret = Secret::new("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw".to_string());
        let a = sign_body(json!({"b": 1, "a": "x", "signature": "old"}), &secret);
        let b = sign_body(json!({"a": "x", "b": 1}), &secret);
        assert_eq!(a["signature"], b["signature"]);
        assert_eq!(a["signature"].as_str().unwrap().len(), 64);
    }

    #[test]
    fn only_whsec_and_base64_is_a_secret() {
        assert!(is_well_formed_secret(
            "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
        ));
        for text in [
            "MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw",
            "whsec_",
            "whsec_not base64!",
            "",
        ] {
            assert!(!is_well_formed_secret(text), "{text}");
        }
    }

    #[test]
    fn standard_webhooks_reference_vector() {
        // The example of the Standard Webhooks specification.
        let secret = Secret::new("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw".to_string());
        let body = r#"{"test": 2432232314}"#;
        let sig =
            standard_webhooks_signature(&secret, "msg_p5jXN8AQM9LWM0D4loKWxJek", 1614265330, body);
        assert_eq!(sig, "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=");
    }
}
