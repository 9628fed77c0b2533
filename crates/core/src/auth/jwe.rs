//! Login passwords travel as compact JWE, never in clear text.
//!
//! The environment holds one RSA-3072 key pair (made at first start). Merchants encrypt the
//! commerce password to its public key; `POST /login` hands the compact JWE to
//! [`JweKeyPair::decrypt_password`]. Encrypting at the application layer means the password is
//! unreadable in proxies, access logs and request dumps even where TLS is terminated early.
//!
//! We accept key management `RSA-OAEP-256` and `RSA-OAEP` with content encryption `A256GCM`,
//! `A128GCM`, `A128CBC-HS256` or `A256CBC-HS512`, and refuse everything else. Notably `RSA1_5`
//! (a Bleichenbacher padding oracle), `dir` (a symmetric key we never shared) and compression
//! (`zip`, a decompression bomb and a length side channel on the password).
//!
//! The header is parsed and checked here, before josekit sees the token, so that the policy does
//! not depend on what josekit happens to support and so that "not a JWE at all" (a client sending
//! the plain password, answered 400) is told apart from "a JWE we refuse" (403).

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use josekit::jwe::alg::rsaes::RsaesJweDecrypter;
use josekit::jwe::{JweDecrypter, JweHeader, RSA_OAEP, RSA_OAEP_256};
use josekit::jwk::KeyPair;
use std::fmt;

use super::kid_from_spki_der;
use crate::secret::Secret;

/// Key size of a generated key pair, and the minimum accepted when loading one.
pub const RSA_BITS: u32 = 3072;

/// The `alg` we publish with the public key (and use in [`encrypt_password`]).
pub const PUBLISHED_ALG: &str = "RSA-OAEP-256";

/// The `enc` we publish with the public key (and use in [`encrypt_password`]).
pub const PUBLISHED_ENC: &str = "A256GCM";

/// Key management algorithms accepted in a login JWE.
pub const ACCEPTED_ALGS: [&str; 2] = ["RSA-OAEP-256", "RSA-OAEP"];

/// Content encryption algorithms accepted in a login JWE.
pub const ACCEPTED_ENCS: [&str; 4] = ["A256GCM", "A128GCM", "A128CBC-HS256", "A256CBC-HS512"];

/// Header values echoed in [`JweError::AlgorithmRefused`] are cut to this many characters: they
/// come from the client and end up in logs.
const ECHO_MAX_CHARS: usize = 32;

/// Why a key could not be made or loaded, or a JWE could not be made or read.
///
/// No variant carries key material, the plaintext or josekit's own error text (which may quote
/// header values or key details); the messages are safe to log and to return to clients.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum JweError {
    /// The system could not generate an RSA key pair.
    #[error("could not generate the JWE RSA key pair")]
    KeyGeneration,
    /// The private key PEM is not an RSA private key of at least 3072 bits.
    #[error("the JWE private key is not a PKCS#8 PEM RSA key of at least 3072 bits")]
    InvalidPrivateKey,
    /// The public key PEM is not an RSA public key (SPKI or PKCS#1 PEM, at least 2048 bits).
    #[error("the public key is not an RSA public key in PEM form")]
    InvalidPublicKey,
    /// The input is not a compact JWE at all (most likely a plain-text password). HTTP 400.
    #[error("the password is not a compact JWE; plain text is refused")]
    NotCompactJwe,
    /// A well-formed JWE whose `alg`/`enc` are not accepted, or that asks for compression (`zip`)
    /// or critical extensions (`crit`). `alg` and `enc` echo the header (cut short). HTTP 403.
    #[error("JWE refused: alg {alg:?} with enc {enc:?} is not accepted")]
    AlgorithmRefused { alg: String, enc: String },
    /// Decryption failed: another key, a tampered token, or a plaintext that is not UTF-8.
    /// Deliberately one variant for all causes, so a client learns nothing about which. HTTP 403.
    #[error("the JWE could not be decrypted")]
    DecryptionFailed,
    /// josekit could not produce the JWE (should not happen with a valid key).
    #[error("could not encrypt the password")]
    EncryptionFailed,
}

/// The environment's JWE key pair (RSA, 3072 bits when generated here).
///
/// Holds ready-made decrypters for both accepted key management algorithms, so a login costs
/// one RSA decryption and no key parsing.
#[derive(Clone)]
pub struct JweKeyPair {
    private_pem: Secret<String>,
    public_pem: String,
    kid: String,
    oaep_256: RsaesJweDecrypter,
    oaep: RsaesJweDecrypter,
}

impl fmt::Debug for JweKeyPair {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("JweKeyPair")
            .field("kid", &self.kid)
            .field("private_pem", &self.private_pem)
            .finish_non_exhaustive()
    }
}

impl JweKeyPair {
    /// Generates a new RSA-3072 key pair (OpenSSL; takes a fraction of a second to seconds).
    pub fn generate() -> Result<Self, JweError> {
        let key_pair = RSA_OAEP_256
            .generate_key_pair(RSA_BITS)
            .map_err(|_| JweError::KeyGeneration)?;
        let pem = String::from_utf8(key_pair.to_pem_private_key())
            .map_err(|_| JweError::KeyGeneration)?;
        Self::from_private_pem(&pem).map_err(|_| JweError::KeyGeneration)
    }

    /// Loads a key pair from a PKCS#8 PEM (`-----BEGIN PRIVATE KEY-----`), as stored by the
    /// application. A PKCS#1 PEM (`RSA PRIVATE KEY`) is accepted too, because josekit reads it;
    /// either way [`Self::private_pem`] gives back PKCS#8. Keys under 3072 bits are refused.
    pub fn from_private_pem(pem: &str) -> Result<Self, JweError> {
        let key_pair = RSA_OAEP_256
            .key_pair_from_pem(pem.trim().as_bytes())
            .map_err(|_| JweError::InvalidPrivateKey)?;
        if key_pair.key_len() * 8 < RSA_BITS {
            return Err(JweError::InvalidPrivateKey);
        }
        let private_pem = String::from_utf8(key_pair.to_pem_private_key())
            .map_err(|_| JweError::InvalidPrivateKey)?;
        let public_pem = String::from_utf8(key_pair.to_pem_public_key())
            .map_err(|_| JweError::InvalidPrivateKey)?;
        let kid = kid_from_spki_der(&key_pair.to_der_public_key());
        // `to_der_private_key` is PKCS#8 DER for RSA in josekit.
        let der = Secret::new(key_pair.to_der_private_key());
        let oaep_256 = RSA_OAEP_256
            .decrypter_from_der(der.expose())
            .map_err(|_| JweError::InvalidPrivateKey)?;
        let oaep = RSA_OAEP
            .decrypter_from_der(der.expose())
            .map_err(|_| JweError::InvalidPrivateKey)?;
        Ok(Self {
            private_pem: Secret::new(private_pem),
            public_pem,
            kid,
            oaep_256,
            oaep,
        })
    }

    /// The private key as PKCS#8 PEM, for the application to store.
    #[must_use]
    pub fn private_pem(&self) -> &Secret<String> {
        &self.private_pem
    }

    /// The public key as SPKI PEM (`-----BEGIN PUBLIC KEY-----`), to publish to merchants.
    #[must_use]
    pub fn public_pem(&self) -> &str {
        &self.public_pem
    }

    /// Key id: base64url of the first 16 bytes of SHA-256 of the public key's SPKI DER.
    /// The same key always has the same `kid`.
    #[must_use]
    pub fn kid(&self) -> &str {
        &self.kid
    }

    /// Decrypts a login password sent as a compact JWE.
    ///
    /// Order of checks, each with its own answer: shape (5 base64url parts, a JSON object header
    /// with string `alg` and `enc`) → [`JweError::NotCompactJwe`]; policy (`alg`, `enc`, no
    /// `zip`, no `crit`) → [`JweError::AlgorithmRefused`]; then decryption and UTF-8 →
    /// [`JweError::DecryptionFailed`]. A `kid` in the header is not required to match ours: with
    /// one key, a token for another key simply fails to decrypt. Surrounding ASCII whitespace
    /// (a stray newline from a copy-paste) is ignored.
    pub fn decrypt_password(&self, compact: &str) -> Result<Secret<String>, JweError> {
        let compact = compact.trim_ascii();
        let header = parse_compact_header(compact)?;
        check_policy(&header)?;
        check_iv_length(compact, &header)?;

        let (plaintext, _header) =
            josekit::jwe::deserialize_compact_with_selector(compact, |header: &JweHeader| {
                let decrypter: &dyn JweDecrypter = match header.algorithm() {
                    Some("RSA-OAEP-256") => &self.oaep_256,
                    Some("RSA-OAEP") => &self.oaep,
                    _ => return Ok(None),
                };
                Ok(Some(decrypter))
            })
            .map_err(|_| JweError::DecryptionFailed)?;
        String::from_utf8(plaintext)
            .map(Secret::new)
            .map_err(|_| JweError::DecryptionFailed)
    }
}

/// Encrypts a password to a public key as a compact JWE (`RSA-OAEP-256` / `A256GCM`): what a
/// merchant's client does, offered by the sandbox's `POST /jwe/encrypt` and used in tests.
///
/// The key may be SPKI PEM (`PUBLIC KEY`) or PKCS#1 PEM (`RSA PUBLIC KEY`); josekit refuses RSA
/// keys under 2048 bits. Anything else is [`JweError::InvalidPublicKey`].
pub fn encrypt_password(password: &str, public_key_pem: &str) -> Result<String, JweError> {
    let encrypter = RSA_OAEP_256
        .encrypter_from_pem(public_key_pem.trim().as_bytes())
        .map_err(|_| JweError::InvalidPublicKey)?;
    let mut header = JweHeader::new();
    header.set_content_encryption(PUBLISHED_ENC);
    josekit::jwe::serialize_compact(password.as_bytes(), &header, &encrypter)
        .map_err(|_| JweError::EncryptionFailed)
}

/// Checks the compact shape and returns the decoded protected header.
fn parse_compact_header(
    compact: &str,
) -> Result<serde_json::Map<String, serde_json::Value>, JweError> {
    let parts: Vec<&str> = compact.split('.').collect();
    if parts.len() != 5 || parts[0].is_empty() {
        return Err(JweError::NotCompactJwe);
    }
    let mut decoded = Vec::with_capacity(5);
    for part in &parts {
        decoded.push(
            URL_SAFE_NO_PAD
                .decode(part)
                .map_err(|_| JweError::NotCompactJwe)?,
        );
    }
    let header: serde_json::Map<String, serde_json::Value> =
        serde_json::from_slice(&decoded[0]).map_err(|_| JweError::NotCompactJwe)?;
    let is_string = |name: &str| matches!(header.get(name), Some(serde_json::Value::String(_)));
    if !is_string("alg") || !is_string("enc") {
        return Err(JweError::NotCompactJwe);
    }
    Ok(header)
}

/// Applies the algorithm policy to a header that [`parse_compact_header`] accepted.
fn check_policy(header: &serde_json::Map<String, serde_json::Value>) -> Result<(), JweError> {
    let alg = header.get("alg").and_then(|v| v.as_str()).unwrap_or("");
    let enc = header.get("enc").and_then(|v| v.as_str()).unwrap_or("");
    let accepted = ACCEPTED_ALGS.contains(&alg)
        && ACCEPTED_ENCS.contains(&enc)
        && !header.contains_key("zip")
        && !header.contains_key("crit");
    if accepted {
        Ok(())
    } else {
        Err(JweError::AlgorithmRefused {
            alg: echo(alg),
            enc: echo(enc),
        })
    }
}

/// The initialization vector must have the length its `enc` defines (RFC 7518: 96 bits for
/// AES-GCM, 128 bits for AES-CBC-HMAC-SHA2). josekit hands a shorter one to OpenSSL, whose
/// binding panics on it, so a client could crash the login with a crafted token.
fn check_iv_length(
    compact: &str,
    header: &serde_json::Map<String, serde_json::Value>,
) -> Result<(), JweError> {
    let enc = header.get("enc").and_then(|v| v.as_str()).unwrap_or("");
    let expected = if enc.ends_with("GCM") { 12 } else { 16 };
    match compact
        .split('.')
        .nth(2)
        .map(|iv| URL_SAFE_NO_PAD.decode(iv))
    {
        Some(Ok(iv)) if iv.len() == expected => Ok(()),
        _ => Err(JweError::DecryptionFailed),
    }
}

fn echo(value: &str) -> String {
    value.chars().take(ECHO_MAX_CHARS).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use josekit::jwe::alg::rsaes::RsaesJweAlgorithm;
    use std::sync::OnceLock;

    const FIXTURE_KEY: &str = include_str!("../../../../tests/fixtures/jwe/key.pem");
    const FIXTURE_VECTORS: &str = include_str!("../../../../tests/fixtures/jwe/vectors.json");

    /// RSA-3072 generation is slow-ish in debug builds: generate once for all tests.
    fn generated() -> &'static JweKeyPair {
        static KEY: OnceLock<JweKeyPair> = OnceLock::new();
        KEY.get_or_init(|| JweKeyPair::generate().expect("generate"))
    }

    fn fixture() -> JweKeyPair {
        JweKeyPair::from_private_pem(FIXTURE_KEY).expect("fixture key loads")
    }

    fn b64(bytes: &[u8]) -> String {
        URL_SAFE_NO_PAD.encode(bytes)
    }

    /// Replaces the protected header of a compact JWE (which breaks the AAD, but our checks
    /// that run before decryption do not care).
    fn with_header(token: &str, header: &str) -> String {
        let rest = token.split_once('.').unwrap().1;
        format!("{}.{rest}", b64(header.as_bytes()))
    }

    #[test]
    fn generated_key_shape() {
        let k = generated();
        assert!(k.public_pem().starts_with("-----BEGIN PUBLIC KEY-----"));
        assert!(
            k.private_pem()
                .expose()
                .starts_with("-----BEGIN PRIVATE KEY-----")
        );
        assert_eq!(k.kid().len(), 22);
        assert!(URL_SAFE_NO_PAD.decode(k.kid()).is_ok());
        let again = JweKeyPair::from_private_pem(k.private_pem().expose()).unwrap();
        assert_eq!(again.kid(), k.kid());
        assert_eq!(again.public_pem(), k.public_pem());
        assert_eq!(again.private_pem(), k.private_pem());
    }

    #[test]
    fn kid_is_deterministic_and_per_key() {
        assert_eq!(fixture().kid(), fixture().kid());
        assert_ne!(fixture().kid(), generated().kid());
    }

    #[test]
    fn debug_hides_the_private_key() {
        let k = generated();
        let dbg = format!("{k:?}");
        assert!(dbg.contains(k.kid()));
        assert!(!dbg.contains("PRIVATE KEY"));
    }

    #[test]
    fn round_trip_through_our_encrypt() {
        let k = generated();
        for password in ["contraseña-ñandú-€", "x", "with spaces and \"quotes\""] {
            let token = encrypt_password(password, k.public_pem()).unwrap();
            let header = parse_compact_header(&token).unwrap();
            assert_eq!(header["alg"], "RSA-OAEP-256");
            assert_eq!(header["enc"], "A256GCM");
            assert_eq!(k.decrypt_password(&token).unwrap().expose(), password);
        }
    }

    #[test]
    fn encrypt_accepts_pkcs1_public_pem() {
        let k = fixture();
        let pair = RSA_OAEP_256.key_pair_from_pem(FIXTURE_KEY).unwrap();
        let pkcs1 = String::from_utf8(pair.to_traditional_pem_public_key()).unwrap();
        assert!(pkcs1.starts_with("-----BEGIN RSA PUBLIC KEY-----"));
        let token = encrypt_password("ñ", &pkcs1).unwrap();
        assert_eq!(k.decrypt_password(&token).unwrap().expose(), "ñ");
    }

    #[test]
    fn encrypt_refuses_bad_public_keys() {
        for bad in [
            "",
            "not a pem",
            FIXTURE_KEY,
            "-----BEGIN PUBLIC KEY-----\nAAAA\n-----END PUBLIC KEY-----",
        ] {
            assert_eq!(
                encrypt_password("pw", bad),
                Err(JweError::InvalidPublicKey),
                "{bad:?}"
            );
        }
    }

    #[test]
    fn interop_vectors_from_jwcrypto() {
        let k = fixture();
        let vectors: Vec<serde_json::Value> = serde_json::from_str(FIXTURE_VECTORS).unwrap();
        assert_eq!(vectors.len(), 10);
        let (mut ok, mut refused) = (0, 0);
        for v in &vectors {
            let (alg, enc) = (v["alg"].as_str().unwrap(), v["enc"].as_str().unwrap());
            let token = v["token"].as_str().unwrap();
            let result = k.decrypt_password(token);
            match v["expect"].as_str().unwrap() {
                "ok" => {
                    ok += 1;
                    let got = result.unwrap_or_else(|e| panic!("{alg}/{enc}: {e}"));
                    assert_eq!(got.expose(), v["password"].as_str().unwrap(), "{alg}/{enc}");
                }
                "refused" => {
                    refused += 1;
                    assert_eq!(
                        result.unwrap_err(),
                        JweError::AlgorithmRefused {
                            alg: alg.to_string(),
                            enc: enc.to_string()
                        },
                        "{alg}/{enc}"
                    );
                }
                other => panic!("unknown expectation {other}"),
            }
        }
        assert_eq!((ok, refused), (8, 2));
    }

    #[test]
    fn fixture_vectors_fail_under_another_key() {
        let vectors: Vec<serde_json::Value> = serde_json::from_str(FIXTURE_VECTORS).unwrap();
        let token = vectors[0]["token"].as_str().unwrap();
        assert_eq!(
            generated().decrypt_password(token).unwrap_err(),
            JweError::DecryptionFailed
        );
    }

    #[test]
    fn plain_text_and_malformed_are_not_compact_jwe() {
        let k = generated();
        let good = encrypt_password("pw", k.public_pem()).unwrap();
        let parts: Vec<&str> = good.split('.').collect();
        let cases = vec![
            "plain-password".to_string(),
            String::new(),
            "a.b.c.d".to_string(),
            format!("{good}.x"),
            format!(".{}", parts[1..].join(".")),
            // bad base64url: '+', '=' padding, spaces
            format!("{}.{}+.{}", parts[0], parts[1], parts[2..].join(".")),
            format!("{}=.{}", parts[0], parts[1..].join(".")),
            "my pass.word with.five.dot.parts".to_string(),
            // header is not a JSON object with string alg and enc
            with_header(&good, "not json"),
            with_header(&good, "[\"RSA-OAEP-256\"]"),
            with_header(&good, r#"{"alg":"RSA-OAEP-256"}"#),
            with_header(&good, r#"{"enc":"A256GCM"}"#),
            with_header(&good, r#"{"alg":1,"enc":"A256GCM"}"#),
            with_header(&good, r#"{"alg":"RSA-OAEP-256","enc":null}"#),
        ];
        for case in cases {
            assert_eq!(
                k.decrypt_password(&case).unwrap_err(),
                JweError::NotCompactJwe,
                "{case:?}"
            );
        }
    }

    #[test]
    fn surrounding_whitespace_is_ignored() {
        let k = generated();
        let token = encrypt_password("pw", k.public_pem()).unwrap();
        let padded = format!("  {token}\n");
        assert_eq!(k.decrypt_password(&padded).unwrap().expose(), "pw");
    }

    #[test]
    fn policy_refusals() {
        let k = generated();
        let good = encrypt_password("pw", k.public_pem()).unwrap();
        let cases = [
            (r#"{"alg":"RSA1_5","enc":"A128GCM"}"#, "RSA1_5", "A128GCM"),
            (r#"{"alg":"dir","enc":"A256GCM"}"#, "dir", "A256GCM"),
            (
                r#"{"alg":"RSA-OAEP-384","enc":"A256GCM"}"#,
                "RSA-OAEP-384",
                "A256GCM",
            ),
            (r#"{"alg":"none","enc":"A256GCM"}"#, "none", "A256GCM"),
            (
                r#"{"alg":"RSA-OAEP-256","enc":"A192GCM"}"#,
                "RSA-OAEP-256",
                "A192GCM",
            ),
            (
                r#"{"alg":"rsa-oaep-256","enc":"A256GCM"}"#,
                "rsa-oaep-256",
                "A256GCM",
            ),
            (
                r#"{"alg":"RSA-OAEP-256","enc":"A256GCM","zip":"DEF"}"#,
                "RSA-OAEP-256",
                "A256GCM",
            ),
            (
                r#"{"alg":"RSA-OAEP-256","enc":"A256GCM","crit":["exp"],"exp":1}"#,
                "RSA-OAEP-256",
                "A256GCM",
            ),
        ];
        for (header, alg, enc) in cases {
            assert_eq!(
                k.decrypt_password(&with_header(&good, header)).unwrap_err(),
                JweError::AlgorithmRefused {
                    alg: alg.into(),
                    enc: enc.into()
                },
                "{header}"
            );
        }
    }

    #[test]
    fn refused_values_are_cut_short_in_the_error() {
        let k = generated();
        let good = encrypt_password("pw", k.public_pem()).unwrap();
        let long = "A".repeat(500);
        let header = format!(r#"{{"alg":"{long}","enc":"A256GCM"}}"#);
        match k.decrypt_password(&with_header(&good, &header)) {
            Err(JweError::AlgorithmRefused { alg, .. }) => assert_eq!(alg.len(), ECHO_MAX_CHARS),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn zip_made_by_josekit_is_refused() {
        let k = generated();
        let encrypter = RSA_OAEP_256.encrypter_from_pem(k.public_pem()).unwrap();
        let mut header = JweHeader::new();
        header.set_content_encryption("A256GCM");
        header.set_compression("DEF");
        let token = josekit::jwe::serialize_compact(b"pw", &header, &encrypter).unwrap();
        assert!(matches!(
            k.decrypt_password(&token),
            Err(JweError::AlgorithmRefused { .. })
        ));
    }

    #[test]
    fn tampering_fails_decryption() {
        let k = generated();
        let good = encrypt_password("contraseña", k.public_pem()).unwrap();
        let parts: Vec<&str> = good.split('.').collect();

        // Header changed to another accepted enc: the AAD no longer matches.
        let other_enc = with_header(&good, r#"{"alg":"RSA-OAEP-256","enc":"A128GCM"}"#);
        // Header with RSA-OAEP instead of RSA-OAEP-256: wrong OAEP hash.
        let other_alg = with_header(&good, r#"{"alg":"RSA-OAEP","enc":"A256GCM"}"#);
        // A flipped ciphertext byte, a flipped tag byte, a flipped key byte.
        let flip = |i: usize| {
            let mut bytes = URL_SAFE_NO_PAD.decode(parts[i]).unwrap();
            bytes[0] ^= 1;
            let mut p: Vec<String> = parts.iter().map(|s| s.to_string()).collect();
            p[i] = b64(&bytes);
            p.join(".")
        };
        // Empty encrypted key and empty tag.
        let no_key = format!("{}..{}", parts[0], parts[2..].join("."));
        let no_tag = format!("{}.", parts[..4].join("."));

        for case in [
            other_enc,
            other_alg,
            flip(1),
            flip(2),
            flip(3),
            flip(4),
            no_key,
            no_tag,
        ] {
            assert_eq!(
                k.decrypt_password(&case).unwrap_err(),
                JweError::DecryptionFailed,
                "{case}"
            );
        }
    }

    #[test]
    fn non_utf8_plaintext_fails() {
        let k = generated();
        let encrypter = RSA_OAEP_256.encrypter_from_pem(k.public_pem()).unwrap();
        let mut header = JweHeader::new();
        header.set_content_encryption("A256GCM");
        let token =
            josekit::jwe::serialize_compact(&[0xff, 0xfe, 0x00], &header, &encrypter).unwrap();
        assert_eq!(
            k.decrypt_password(&token).unwrap_err(),
            JweError::DecryptionFailed
        );
    }

    #[test]
    fn bad_private_keys_are_refused() {
        let small = RsaesJweAlgorithm::RsaOaep256
            .generate_key_pair(2048)
            .unwrap();
        let small_pem = String::from_utf8(small.to_pem_private_key()).unwrap();
        let ec = josekit::jws::ES256.generate_key_pair().unwrap();
        let ec_pem = String::from_utf8(ec.to_pem_private_key()).unwrap();
        for bad in [
            "",
            "garbage",
            small_pem.as_str(),
            ec_pem.as_str(),
            generated().public_pem(),
        ] {
            assert_eq!(
                JweKeyPair::from_private_pem(bad).unwrap_err(),
                JweError::InvalidPrivateKey
            );
        }
    }

    #[test]
    fn pkcs1_private_pem_is_normalised_to_pkcs8() {
        let pair = RSA_OAEP_256.key_pair_from_pem(FIXTURE_KEY).unwrap();
        let pkcs1 = String::from_utf8(pair.to_traditional_pem_private_key()).unwrap();
        assert!(pkcs1.starts_with("-----BEGIN RSA PRIVATE KEY-----"));
        let k = JweKeyPair::from_private_pem(&pkcs1).unwrap();
        assert_eq!(k.kid(), fixture().kid());
        assert!(
            k.private_pem()
                .expose()
                .starts_with("-----BEGIN PRIVATE KEY-----")
        );
    }

    #[test]
    fn error_messages_carry_no_secrets() {
        let k = generated();
        let password = "contraseña-ñandú-€";
        let token = encrypt_password(password, k.public_pem()).unwrap();
        let errors = [
            fixture().decrypt_password(&token).unwrap_err(),
            k.decrypt_password(password).unwrap_err(),
            JweKeyPair::from_private_pem(k.private_pem().expose().replace('A', "B").as_str())
                .unwrap_err(),
        ];
        for e in errors {
            let text = format!("{e} {e:?}");
            assert!(!text.contains(password), "{text}");
            assert!(!text.contains("PRIVATE"), "{text}");
        }
    }
}
