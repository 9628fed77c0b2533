//! Session tokens: ES256 JWTs issued at login and checked on every merchant request.
//!
//! ES256 (ECDSA P-256 / SHA-256) rather than HMAC so the public key can be published
//! (`/.well-known/jwks.json`) and merchants can verify tokens without holding a secret.
//!
//! `jsonwebtoken` encodes, decodes and validates the tokens: the signature, with the algorithm
//! list pinned to ES256 (so neither `none` nor HS256 keyed with our public key is ever tried),
//! `iss`, `aud` and the presence of the claims. josekit only handles the key material (generation,
//! PEM, the public coordinates of the JWKS). Two checks stay here: the header's `kid`, `typ` and
//! `crit`, which jsonwebtoken does not judge, and the time claims, which are compared with the
//! application clock passed in (jsonwebtoken would read the system clock), with no leeway.

use base64::Engine;
use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};
use chrono::{DateTime, Utc};
use josekit::jwk::KeyPair;
use josekit::jws::ES256;
use jsonwebtoken::errors::ErrorKind;
use jsonwebtoken::{Algorithm, DecodingKey, EncodingKey, Header, Validation};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};
use std::collections::HashMap;
use std::fmt;
use std::sync::{Arc, Mutex};

use super::kid_from_spki_der;
use crate::secret::Secret;

/// The `iss` of every token we issue, and the only one we accept.
pub const ISSUER: &str = "mandato";

/// The only signature algorithm issued and accepted.
pub const ALG: &str = "ES256";
const ALGORITHM: Algorithm = Algorithm::ES256;

/// Header values echoed in [`JwtError::AlgorithmRefused`] are cut to this many characters.
const ECHO_MAX_CHARS: usize = 32;

/// Why a signer could not be made, a token issued, or a token accepted.
///
/// Every verification failure maps to HTTP 403; the variants exist for logs and tests. None
/// carries the token, key material or the library's own error text.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum JwtError {
    /// The system could not generate a P-256 key.
    #[error("could not generate the JWT signing key")]
    KeyGeneration,
    /// The PEM is not a P-256 private key (PKCS#8; SEC1 `EC PRIVATE KEY` is also read).
    #[error("the JWT private key is not a P-256 private key in PEM form")]
    InvalidPrivateKey,
    /// `lifetime_secs` is not positive, or `now + lifetime` does not fit a timestamp.
    #[error("the token lifetime must be a positive number of seconds")]
    InvalidLifetime,
    /// Signing failed (should not happen with a valid key).
    #[error("could not sign the token")]
    Signing,
    /// Not three base64url parts, or a header/payload that is not a JSON object, or a required
    /// claim missing or of the wrong type, or an unsupported `typ`/`crit`.
    #[error("the token is malformed")]
    Malformed,
    /// The header `alg` is not `ES256` (e.g. `none`, `HS256`); echoes it, cut short.
    #[error("token algorithm {alg:?} is refused")]
    AlgorithmRefused { alg: String },
    /// The header names a `kid` that is not our key (e.g. a token from before a key change).
    #[error("the token was signed by an unknown key")]
    UnknownKey,
    /// The signature does not verify (tampered header or payload, or another key).
    #[error("the token signature is invalid")]
    InvalidSignature,
    /// `iss` is not `mandato`.
    #[error("the token issuer is not accepted")]
    WrongIssuer,
    /// `aud` does not name this environment.
    #[error("the token is for another audience")]
    WrongAudience,
    /// `exp` is at or before now.
    #[error("the token has expired")]
    Expired,
    /// `nbf` is after now.
    #[error("the token is not valid yet")]
    NotYetValid,
}

/// A freshly issued token, with what the login response reports about it.
#[derive(Debug, Clone)]
pub struct IssuedToken {
    /// The compact JWT (`header.payload.signature`).
    pub token: Secret<String>,
    /// The `exp` claim as a date-time (whole seconds).
    pub expires_at: DateTime<Utc>,
    /// The `jti` claim (a UUID v4), for logs and revocation lists.
    pub jti: String,
}

/// The claims of a verified token that callers need, read back once the signature verified.
///
/// `iss` and `aud` are judged by jsonwebtoken's `Validation`; these must be present with these
/// types (an `exp` or `iat` that is not a whole number, a `sub` that is not a string, is
/// malformed). Other claims are ignored.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct Claims {
    /// The commerce code the token was issued to; callers compare it with the `commerce` header.
    pub sub: String,
    /// Expiry, Unix seconds.
    pub exp: i64,
    /// Issue time, Unix seconds.
    pub iat: i64,
    /// Token id.
    pub jti: String,
    /// Not before, Unix seconds, if the token says.
    #[serde(default)]
    pub nbf: Option<i64>,
}

/// The claims written into every token.
#[derive(Serialize)]
struct OutgoingClaims<'a> {
    iss: &'a str,
    sub: &'a str,
    aud: &'a str,
    iat: i64,
    exp: i64,
    jti: &'a str,
}

/// The environment's ES256 signing key (P-256), able to issue and verify session tokens.
#[derive(Clone)]
pub struct JwtSigner {
    private_pem: Secret<String>,
    kid: String,
    x: String,
    y: String,
    encoding_key: EncodingKey,
    decoding_key: DecodingKey,
    header: Header,
    verified: Arc<VerifiedTokens>,
}

impl fmt::Debug for JwtSigner {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("JwtSigner")
            .field("kid", &self.kid)
            .field("private_pem", &self.private_pem)
            .finish_non_exhaustive()
    }
}

impl JwtSigner {
    /// Generates a new P-256 key.
    pub fn generate() -> Result<Self, JwtError> {
        let key_pair = ES256
            .generate_key_pair()
            .map_err(|_| JwtError::KeyGeneration)?;
        let pem = String::from_utf8(key_pair.to_pem_private_key())
            .map_err(|_| JwtError::KeyGeneration)?;
        Self::from_private_pem(&pem).map_err(|_| JwtError::KeyGeneration)
    }

    /// Loads the key from a PKCS#8 PEM (`-----BEGIN PRIVATE KEY-----`) as stored by the
    /// application. josekit also reads SEC1 (`EC PRIVATE KEY`); [`Self::private_pem`] always
    /// gives back PKCS#8, which is also the form jsonwebtoken signs with. Keys on other curves
    /// are refused.
    pub fn from_private_pem(pem: &str) -> Result<Self, JwtError> {
        let key_pair = ES256
            .key_pair_from_pem(pem.trim().as_bytes())
            .map_err(|_| JwtError::InvalidPrivateKey)?;
        let private_pem = Secret::new(
            String::from_utf8(key_pair.to_pem_private_key())
                .map_err(|_| JwtError::InvalidPrivateKey)?,
        );
        let kid = kid_from_spki_der(&key_pair.to_der_public_key());
        let jwk = key_pair.to_jwk_public_key();
        let coordinate = |name: &str| match jwk.parameter(name) {
            Some(Value::String(v)) => Ok(v.clone()),
            _ => Err(JwtError::InvalidPrivateKey),
        };
        let (x, y) = (coordinate("x")?, coordinate("y")?);
        let encoding_key = EncodingKey::from_ec_der(&pkcs8_der(private_pem.expose())?);
        let decoding_key =
            DecodingKey::from_ec_components(&x, &y).map_err(|_| JwtError::InvalidPrivateKey)?;
        // jsonwebtoken parses the key only when signing: try it once here, so that a key it
        // cannot use is refused at start rather than at the first login.
        jsonwebtoken::crypto::sign(b"", &encoding_key, ALGORITHM)
            .map_err(|_| JwtError::InvalidPrivateKey)?;
        let mut header = Header::new(ALGORITHM);
        header.kid = Some(kid.clone());
        Ok(Self {
            private_pem,
            kid,
            x,
            y,
            encoding_key,
            decoding_key,
            header,
            verified: Arc::new(VerifiedTokens::default()),
        })
    }

    /// The private key as PKCS#8 PEM, for the application to store.
    #[must_use]
    pub fn private_pem(&self) -> &Secret<String> {
        &self.private_pem
    }

    /// Key id: base64url of the first 16 bytes of SHA-256 of the public key's SPKI DER.
    #[must_use]
    pub fn kid(&self) -> &str {
        &self.kid
    }

    /// Issues a token for `commerce`, valid for `lifetime_secs` from `now`.
    ///
    /// Claims: `iss` `mandato`, `sub` the commerce, `aud` the audience (a single string), `iat`,
    /// `exp`, `jti` (UUID v4). Header: `typ` JWT, `alg` ES256, `kid`. `now` is a parameter so
    /// that callers use the application clock (and tests a fixed one).
    pub fn issue(
        &self,
        commerce: &str,
        audience: &str,
        now: DateTime<Utc>,
        lifetime_secs: i64,
    ) -> Result<IssuedToken, JwtError> {
        if lifetime_secs <= 0 {
            return Err(JwtError::InvalidLifetime);
        }
        let iat = now.timestamp();
        let exp = iat
            .checked_add(lifetime_secs)
            .ok_or(JwtError::InvalidLifetime)?;
        let expires_at =
            DateTime::<Utc>::from_timestamp(exp, 0).ok_or(JwtError::InvalidLifetime)?;
        let jti = uuid::Uuid::new_v4().to_string();
        let claims = OutgoingClaims {
            iss: ISSUER,
            sub: commerce,
            aud: audience,
            iat,
            exp,
            jti: &jti,
        };
        let token = jsonwebtoken::encode(&self.header, &claims, &self.encoding_key)
            .map_err(|_| JwtError::Signing)?;
        Ok(IssuedToken {
            token: Secret::new(token),
            expires_at,
            jti,
        })
    }

    /// Verifies a token and returns its claims.
    ///
    /// Checks, in order: shape and header, with `alg` exactly `ES256` (before touching any key),
    /// `typ` (if present) `JWT`, no `crit`, `kid` (if present) ours; then jsonwebtoken checks
    /// the signature, the types of the claims, `iss`, and `aud` (a string equal to `audience`,
    /// or an array containing it); last `exp > now` and `nbf <= now` if present. Comparing `sub`
    /// with the `commerce` header is the caller's job.
    ///
    /// A token whose signature and claims were accepted once is remembered (by a SHA-256 of the
    /// audience and the token) until it expires, so a client reusing its token does not pay for
    /// an ECDSA verification on every request; the time checks are repeated on every use.
    pub fn verify(
        &self,
        token: &str,
        audience: &str,
        now: DateTime<Utc>,
    ) -> Result<Claims, JwtError> {
        let now = now.timestamp();
        let digest = VerifiedTokens::digest(token, audience);
        if let Some(known) = self.verified.get(&digest) {
            known.check_time(now)?;
            return Ok(known);
        }
        let claims = self.verify_uncached(token, audience)?;
        claims.check_time(now)?;
        self.verified.insert(digest, claims.clone(), now);
        Ok(claims)
    }

    /// The checks of [`Self::verify`] that do not depend on the time.
    fn verify_uncached(&self, token: &str, audience: &str) -> Result<Claims, JwtError> {
        let header = jsonwebtoken::decode_header(token).map_err(|_| unreadable_header(token))?;
        if header.alg != ALGORITHM {
            // The Debug form of jsonwebtoken's algorithms is their JOSE name.
            return Err(JwtError::AlgorithmRefused {
                alg: format!("{:?}", header.alg),
            });
        }
        match header.typ.as_deref() {
            None => {}
            Some(typ) if typ.eq_ignore_ascii_case("JWT") => {}
            Some(_) => return Err(JwtError::Malformed),
        }
        // RFC 7515 4.1.11: extensions named in `crit` must be understood; we understand none.
        if header.crit.is_some() {
            return Err(JwtError::Malformed);
        }
        match header.kid.as_deref() {
            None => {}
            Some(kid) if kid == self.kid => {}
            Some(_) => return Err(JwtError::UnknownKey),
        }

        let mut validation = Validation::new(ALGORITHM);
        validation.leeway = 0;
        // Time is judged against the application clock, in `Claims::check_time`.
        validation.validate_exp = false;
        validation.validate_nbf = false;
        validation.set_required_spec_claims(&["exp", "iss", "aud", "sub"]);
        validation.set_issuer(&[ISSUER]);
        validation.set_audience(&[audience]);
        jsonwebtoken::decode::<Claims>(token, &self.decoding_key, &validation)
            .map(|data| data.claims)
            .map_err(|e| refusal(e.kind()))
    }

    /// The public key as a bare RFC 7517 JWK Set (no envelope), for `/.well-known/jwks.json`.
    /// Public parts only: never `d`.
    #[must_use]
    pub fn jwks(&self) -> Value {
        json!({
            "keys": [{
                "kty": "EC",
                "crv": "P-256",
                "x": self.x,
                "y": self.y,
                "use": "sig",
                "alg": ALG,
                "kid": self.kid,
            }]
        })
    }
}

/// The DER inside a PKCS#8 PEM as written by [`JwtSigner::from_private_pem`] (jsonwebtoken's
/// own PEM reader is behind a feature this build leaves off).
fn pkcs8_der(pem: &str) -> Result<Vec<u8>, JwtError> {
    let body: String = pem
        .lines()
        .filter(|line| !line.starts_with("-----"))
        .collect();
    STANDARD
        .decode(body)
        .map_err(|_| JwtError::InvalidPrivateKey)
}

/// Why a header jsonwebtoken could not read is refused. It knows only the algorithms it
/// implements, so a header naming another one (`none`, `es256`) fails to parse: that is still
/// reported as a refused algorithm, anything else as malformed.
fn unreadable_header(token: &str) -> JwtError {
    #[derive(Deserialize)]
    struct NamedAlgorithm {
        alg: String,
    }
    let named = token
        .split('.')
        .next()
        .and_then(|part| URL_SAFE_NO_PAD.decode(part).ok())
        .and_then(|json| serde_json::from_slice::<NamedAlgorithm>(&json).ok());
    match named {
        Some(NamedAlgorithm { alg }) if alg != ALG => JwtError::AlgorithmRefused {
            alg: alg.chars().take(ECHO_MAX_CHARS).collect(),
        },
        _ => JwtError::Malformed,
    }
}

/// jsonwebtoken's reason for refusing a token, in this module's terms.
fn refusal(kind: &ErrorKind) -> JwtError {
    match kind {
        ErrorKind::InvalidSignature => JwtError::InvalidSignature,
        ErrorKind::InvalidIssuer => JwtError::WrongIssuer,
        ErrorKind::InvalidAudience => JwtError::WrongAudience,
        ErrorKind::MissingRequiredClaim(claim) if claim == "iss" => JwtError::WrongIssuer,
        ErrorKind::MissingRequiredClaim(claim) if claim == "aud" => JwtError::WrongAudience,
        _ => JwtError::Malformed,
    }
}

impl Claims {
    /// The checks that depend on the time of use, repeated on every use of a remembered token.
    fn check_time(&self, now: i64) -> Result<(), JwtError> {
        if self.exp <= now {
            return Err(JwtError::Expired);
        }
        if self.nbf.is_some_and(|nbf| nbf > now) {
            return Err(JwtError::NotYetValid);
        }
        Ok(())
    }
}

/// Tokens already verified, keyed by a SHA-256 of audience and token; bounded in size.
///
/// Sharded so that concurrent requests rarely wait on one another. Only tokens whose signature
/// verified are ever inserted, so a forged token always goes through the full check.
struct VerifiedTokens {
    shards: Vec<Mutex<HashMap<[u8; 32], Claims>>>,
}

const CACHE_SHARDS: usize = 16;
/// Entries per shard; 16 shards hold up to 16,384 live tokens (a few MB at most).
const CACHE_SHARD_CAPACITY: usize = 1_024;

impl Default for VerifiedTokens {
    fn default() -> Self {
        Self {
            shards: (0..CACHE_SHARDS)
                .map(|_| Mutex::new(HashMap::new()))
                .collect(),
        }
    }
}

impl VerifiedTokens {
    fn digest(token: &str, audience: &str) -> [u8; 32] {
        let mut hasher = Sha256::new();
        hasher.update(audience.as_bytes());
        hasher.update([0u8]);
        hasher.update(token.as_bytes());
        hasher.finalize().into()
    }

    fn shard(&self, digest: &[u8; 32]) -> &Mutex<HashMap<[u8; 32], Claims>> {
        &self.shards[usize::from(digest[0]) % CACHE_SHARDS]
    }

    fn get(&self, digest: &[u8; 32]) -> Option<Claims> {
        let shard = self.shard(digest).lock().unwrap_or_else(|p| p.into_inner());
        shard.get(digest).cloned()
    }

    /// Remembers a verified token. A full shard first drops its expired tokens, then, if still
    /// full, an arbitrary one (a dropped token is simply verified again at its next use).
    fn insert(&self, digest: [u8; 32], claims: Claims, now: i64) {
        let mut shard = self
            .shard(&digest)
            .lock()
            .unwrap_or_else(|p| p.into_inner());
        if shard.len() >= CACHE_SHARD_CAPACITY {
            shard.retain(|_, v| v.exp > now);
        }
        if shard.len() >= CACHE_SHARD_CAPACITY
            && let Some(victim) = shard.keys().next().copied()
        {
            shard.remove(&victim);
        }
        shard.insert(digest, claims);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;
    use std::sync::OnceLock;

    const AUD: &str = "sandbox";

    fn signer() -> &'static JwtSigner {
        static KEY: OnceLock<JwtSigner> = OnceLock::new();
        KEY.get_or_init(|| JwtSigner::generate().expect("generate"))
    }

    fn t0() -> DateTime<Utc> {
        Utc.with_ymd_and_hms(2026, 3, 1, 12, 0, 0).unwrap()
    }

    fn b64(bytes: impl AsRef<[u8]>) -> String {
        URL_SAFE_NO_PAD.encode(bytes)
    }

    fn parts(token: &str) -> Vec<String> {
        token.split('.').map(str::to_string).collect()
    }

    fn decode_part(part: &str) -> Value {
        serde_json::from_slice(&URL_SAFE_NO_PAD.decode(part).unwrap()).unwrap()
    }

    /// Signs arbitrary header and payload JSON with our key, to test the claim checks.
    fn sign_raw(s: &JwtSigner, header: &Value, payload: &Value) -> String {
        sign_parts(s, &header.to_string(), &payload.to_string())
    }

    fn sign_parts(s: &JwtSigner, header: &str, payload: &str) -> String {
        let input = format!("{}.{}", b64(header), b64(payload));
        let sig = jsonwebtoken::crypto::sign(input.as_bytes(), &s.encoding_key, ALGORITHM).unwrap();
        format!("{input}.{sig}")
    }

    fn claims_json(now: i64) -> Value {
        json!({"iss": ISSUER, "sub": "76123456-7", "aud": AUD, "iat": now, "exp": now + 60, "jti": "j"})
    }

    fn our_header(s: &JwtSigner) -> Value {
        json!({"alg": "ES256", "typ": "JWT", "kid": s.kid()})
    }

    #[test]
    fn round_trip() {
        let s = signer();
        let issued = s.issue("76123456-7", AUD, t0(), 3600).unwrap();
        assert_eq!(issued.expires_at, t0() + chrono::Duration::seconds(3600));
        let token = issued.token.expose();

        let p = parts(token);
        assert_eq!(p.len(), 3);
        assert_eq!(
            decode_part(&p[0]),
            json!({"alg": "ES256", "typ": "JWT", "kid": s.kid()})
        );
        let payload = decode_part(&p[1]);
        assert_eq!(payload["iss"], "mandato");
        assert_eq!(payload["aud"], AUD);
        assert_eq!(URL_SAFE_NO_PAD.decode(&p[2]).unwrap().len(), 64);
        assert!(uuid::Uuid::parse_str(&issued.jti).is_ok());

        let claims = s.verify(token, AUD, t0()).unwrap();
        assert_eq!(
            claims,
            Claims {
                sub: "76123456-7".into(),
                exp: t0().timestamp() + 3600,
                iat: t0().timestamp(),
                jti: issued.jti.clone(),
                nbf: None,
            }
        );
        // Still valid one second before expiry.
        let later = t0() + chrono::Duration::seconds(3599);
        assert!(s.verify(token, AUD, later).is_ok());
    }

    #[test]
    fn reloaded_key_verifies_and_keeps_kid() {
        let s = signer();
        let again = JwtSigner::from_private_pem(s.private_pem().expose()).unwrap();
        assert_eq!(again.kid(), s.kid());
        assert_eq!(again.jwks(), s.jwks());
        let issued = again.issue("c", AUD, t0(), 60).unwrap();
        assert!(s.verify(issued.token.expose(), AUD, t0()).is_ok());
        assert!(
            s.private_pem()
                .expose()
                .starts_with("-----BEGIN PRIVATE KEY-----")
        );
        assert_eq!(s.kid().len(), 22);
    }

    #[test]
    fn jti_is_unique() {
        let s = signer();
        let a = s.issue("c", AUD, t0(), 60).unwrap();
        let b = s.issue("c", AUD, t0(), 60).unwrap();
        assert_ne!(a.jti, b.jti);
    }

    #[test]
    fn expired() {
        let s = signer();
        let issued = s.issue("c", AUD, t0(), 60).unwrap();
        let token = issued.token.expose();
        let at_exp = t0() + chrono::Duration::seconds(60);
        assert_eq!(s.verify(token, AUD, at_exp), Err(JwtError::Expired));
        let after = t0() + chrono::Duration::days(1);
        assert_eq!(s.verify(token, AUD, after), Err(JwtError::Expired));
    }

    #[test]
    fn tampered_payload() {
        let s = signer();
        let issued = s.issue("76123456-7", AUD, t0(), 60).unwrap();
        let mut p = parts(issued.token.expose());
        let mut payload = decode_part(&p[1]);
        payload["sub"] = json!("99999999-9");
        p[1] = b64(payload.to_string());
        assert_eq!(
            s.verify(&p.join("."), AUD, t0()),
            Err(JwtError::InvalidSignature)
        );
    }

    #[test]
    fn tampered_signature_and_header() {
        let s = signer();
        let issued = s.issue("c", AUD, t0(), 60).unwrap();
        let p = parts(issued.token.expose());

        let mut sig = URL_SAFE_NO_PAD.decode(&p[2]).unwrap();
        sig[10] ^= 0x40;
        let flipped = format!("{}.{}.{}", p[0], p[1], b64(&sig));
        assert_eq!(
            s.verify(&flipped, AUD, t0()),
            Err(JwtError::InvalidSignature)
        );

        // A header without kid is allowed, but it is signed: changing it breaks the signature.
        let no_kid = format!(
            "{}.{}.{}",
            b64(r#"{"alg":"ES256","typ":"JWT"}"#),
            p[1],
            p[2]
        );
        assert_eq!(
            s.verify(&no_kid, AUD, t0()),
            Err(JwtError::InvalidSignature)
        );

        // DER-encoded or truncated signatures are refused.
        let short = format!("{}.{}.{}", p[0], p[1], b64(&sig[..63]));
        assert_eq!(s.verify(&short, AUD, t0()), Err(JwtError::InvalidSignature));
        let empty = format!("{}.{}.", p[0], p[1]);
        assert_eq!(s.verify(&empty, AUD, t0()), Err(JwtError::InvalidSignature));
    }

    #[test]
    fn another_key_is_refused() {
        let other = JwtSigner::generate().unwrap();
        let issued = other.issue("c", AUD, t0(), 60).unwrap();
        assert_eq!(
            signer().verify(issued.token.expose(), AUD, t0()),
            Err(JwtError::UnknownKey)
        );
        // Same token without the kid: the signature check catches it.
        let token = sign_raw(
            &other,
            &json!({"alg": "ES256", "typ": "JWT"}),
            &claims_json(t0().timestamp()),
        );
        assert_eq!(
            signer().verify(&token, AUD, t0()),
            Err(JwtError::InvalidSignature)
        );
    }

    #[test]
    fn alg_none_is_refused() {
        let s = signer();
        let payload = claims_json(t0().timestamp());
        for alg in ["none", "None", "NONE"] {
            let header = json!({"alg": alg, "typ": "JWT", "kid": s.kid()});
            for sig in ["", "AAAA"] {
                let token = format!(
                    "{}.{}.{sig}",
                    b64(header.to_string()),
                    b64(payload.to_string())
                );
                assert_eq!(
                    s.verify(&token, AUD, t0()),
                    Err(JwtError::AlgorithmRefused { alg: alg.into() })
                );
            }
        }
    }

    #[test]
    fn hs256_keyed_with_our_public_key_is_refused() {
        let s = signer();
        // The classic confusion: HMAC keyed with the public key an attacker can download.
        let public_pem = {
            let pair = ES256.key_pair_from_pem(s.private_pem().expose()).unwrap();
            pair.to_pem_public_key()
        };
        let hmac = josekit::jws::HS256.signer_from_bytes(&public_pem).unwrap();
        let header = json!({"alg": "HS256", "typ": "JWT", "kid": s.kid()});
        let payload = claims_json(t0().timestamp());
        let input = format!("{}.{}", b64(header.to_string()), b64(payload.to_string()));
        let token = format!("{input}.{}", b64(hmac.sign(input.as_bytes()).unwrap()));
        assert_eq!(
            s.verify(&token, AUD, t0()),
            Err(JwtError::AlgorithmRefused {
                alg: "HS256".into()
            })
        );
        // Also with the JWKS JSON as the key.
        let hmac = josekit::jws::HS256
            .signer_from_bytes(s.jwks().to_string())
            .unwrap();
        let token = format!("{input}.{}", b64(hmac.sign(input.as_bytes()).unwrap()));
        assert!(matches!(
            s.verify(&token, AUD, t0()),
            Err(JwtError::AlgorithmRefused { .. })
        ));
    }

    #[test]
    fn other_algs_and_bad_headers() {
        let s = signer();
        let payload = claims_json(t0().timestamp());
        for alg in ["RS256", "ES384", "es256", "PS256", "EdDSA"] {
            let token = sign_raw(s, &json!({"alg": alg, "kid": s.kid()}), &payload);
            assert_eq!(
                s.verify(&token, AUD, t0()),
                Err(JwtError::AlgorithmRefused { alg: alg.into() })
            );
        }
        for header in [
            json!({"typ": "JWT"}),
            json!({"alg": null}),
            json!({"alg": ["ES256"]}),
            json!({"alg": "ES256", "typ": "JWE"}),
            json!({"alg": "ES256", "crit": ["b64"], "b64": false}),
            json!({"alg": "ES256", "kid": 7}),
            json!(["ES256"]),
        ] {
            let token = sign_raw(s, &header, &payload);
            assert_eq!(
                s.verify(&token, AUD, t0()),
                Err(JwtError::Malformed),
                "{header}"
            );
        }
        // Signed by us but with a lowercase typ and no kid: fine.
        let token = sign_raw(s, &json!({"alg": "ES256", "typ": "jwt"}), &payload);
        assert!(s.verify(&token, AUD, t0()).is_ok());
    }

    #[test]
    fn wrong_audience() {
        let s = signer();
        let issued = s.issue("c", "production", t0(), 60).unwrap();
        assert_eq!(
            s.verify(issued.token.expose(), AUD, t0()),
            Err(JwtError::WrongAudience)
        );
        let now = t0().timestamp();
        let mut payload = claims_json(now);
        payload["aud"] = json!(["other", AUD]);
        assert!(
            s.verify(&sign_raw(s, &our_header(s), &payload), AUD, t0())
                .is_ok()
        );
        for aud in [json!(["other"]), json!(null), json!(1), json!("Sandbox")] {
            payload["aud"] = aud;
            assert_eq!(
                s.verify(&sign_raw(s, &our_header(s), &payload), AUD, t0()),
                Err(JwtError::WrongAudience)
            );
        }
        payload.as_object_mut().unwrap().remove("aud");
        assert_eq!(
            s.verify(&sign_raw(s, &our_header(s), &payload), AUD, t0()),
            Err(JwtError::WrongAudience)
        );
    }

    #[test]
    fn wrong_issuer() {
        let s = signer();
        let mut payload = claims_json(t0().timestamp());
        for iss in [json!("Mandato"), json!("evil"), json!(null)] {
            payload["iss"] = iss;
            assert_eq!(
                s.verify(&sign_raw(s, &our_header(s), &payload), AUD, t0()),
                Err(JwtError::WrongIssuer)
            );
        }
    }

    #[test]
    fn claim_types_and_nbf() {
        let s = signer();
        let now = t0().timestamp();
        let check = |edit: &dyn Fn(&mut Value), want: Result<(), JwtError>| {
            let mut payload = claims_json(now);
            edit(&mut payload);
            let got = s
                .verify(&sign_raw(s, &our_header(s), &payload), AUD, t0())
                .map(|_| ());
            assert_eq!(got, want, "{payload}");
        };
        check(
            &|p| p["exp"] = json!((now + 60).to_string()),
            Err(JwtError::Malformed),
        );
        check(
            &|p| p["exp"] = json!(now as f64 + 60.5),
            Err(JwtError::Malformed),
        );
        check(&|p| p["iat"] = json!(null), Err(JwtError::Malformed));
        check(&|p| p["sub"] = json!(1), Err(JwtError::Malformed));
        check(
            &|p| {
                p.as_object_mut().unwrap().remove("jti");
            },
            Err(JwtError::Malformed),
        );
        check(
            &|p| {
                p.as_object_mut().unwrap().remove("exp");
            },
            Err(JwtError::Malformed),
        );
        check(&|p| p["nbf"] = json!(now), Ok(()));
        check(&|p| p["nbf"] = json!(now + 1), Err(JwtError::NotYetValid));
        check(&|p| p["nbf"] = json!("soon"), Err(JwtError::Malformed));
    }

    #[test]
    fn malformed_tokens() {
        let s = signer();
        let issued = s.issue("c", AUD, t0(), 60).unwrap();
        let token = issued.token.expose();
        let p = parts(token);
        for bad in [
            String::new(),
            "abc".to_string(),
            "a.b".to_string(),
            format!("{token}.x"),
            format!("{}.{}", p[0], p[1]),
            format!("{}=.{}.{}", p[0], p[1], p[2]),
            format!("{}.{}.{}+", p[0], p[1], p[2]),
            format!("{}.{}.{}", b64("not json"), p[1], p[2]),
            format!(" {token}"),
        ] {
            assert_eq!(
                s.verify(&bad, AUD, t0()),
                Err(JwtError::Malformed),
                "{bad:?}"
            );
        }
        // A payload that is not an object, properly signed.
        let token = sign_parts(s, &our_header(s).to_string(), "[1,2]");
        assert_eq!(s.verify(&token, AUD, t0()), Err(JwtError::Malformed));
    }

    #[test]
    fn bad_lifetimes() {
        let s = signer();
        for lifetime in [0, -1, i64::MAX] {
            assert_eq!(
                s.issue("c", AUD, t0(), lifetime).unwrap_err(),
                JwtError::InvalidLifetime
            );
        }
    }

    #[test]
    fn jwks_is_public_only_and_verifies() {
        let s = signer();
        let jwks = s.jwks();
        let keys = jwks["keys"].as_array().unwrap();
        assert_eq!(keys.len(), 1);
        let key = keys[0].as_object().unwrap();
        assert!(!key.contains_key("d"));
        let names: Vec<&str> = key.keys().map(String::as_str).collect();
        assert_eq!(names, ["kty", "crv", "x", "y", "use", "alg", "kid"]);
        assert_eq!(key["kty"], "EC");
        assert_eq!(key["crv"], "P-256");
        assert_eq!(key["kid"], s.kid());
        assert_eq!(
            URL_SAFE_NO_PAD
                .decode(key["x"].as_str().unwrap())
                .unwrap()
                .len(),
            32
        );
        assert_eq!(
            URL_SAFE_NO_PAD
                .decode(key["y"].as_str().unwrap())
                .unwrap()
                .len(),
            32
        );

        // An independent verifier built from the JWKS alone accepts our tokens.
        let jwk = josekit::jwk::Jwk::from_bytes(keys[0].to_string()).unwrap();
        let verifier = ES256.verifier_from_jwk(&jwk).unwrap();
        let issued = s.issue("c", AUD, t0(), 60).unwrap();
        let (payload, header) =
            josekit::jwt::decode_with_verifier(issued.token.expose(), &verifier).unwrap();
        assert_eq!(header.algorithm(), Some("ES256"));
        assert_eq!(payload.subject(), Some("c"));
    }

    #[test]
    fn secrets_stay_out_of_debug() {
        let s = signer();
        let dbg = format!("{s:?}");
        assert!(!dbg.contains("PRIVATE KEY"));
        let issued = s.issue("c", AUD, t0(), 60).unwrap();
        assert!(!format!("{issued:?}").contains(issued.token.expose().as_str()));
    }

    #[test]
    fn bad_private_keys() {
        let p384 = josekit::jws::ES384.generate_key_pair().unwrap();
        let p384 = String::from_utf8(p384.to_pem_private_key()).unwrap();
        let rsa = josekit::jwe::RSA_OAEP.generate_key_pair(2048).unwrap();
        let rsa = String::from_utf8(rsa.to_pem_private_key()).unwrap();
        for bad in ["", "junk", p384.as_str(), rsa.as_str()] {
            assert_eq!(
                JwtSigner::from_private_pem(bad).unwrap_err(),
                JwtError::InvalidPrivateKey
            );
        }
    }

    #[test]
    fn remembered_tokens_are_still_checked_for_time_and_audience() {
        let s = JwtSigner::generate().unwrap();
        let now = t0().timestamp();
        let mut payload = claims_json(now);
        payload["nbf"] = json!(now);
        let token = sign_raw(&s, &our_header(&s), &payload);
        assert!(s.verify(&token, AUD, t0()).is_ok());
        // Remembered now; expiry, nbf and audience are still enforced on every use.
        let at_exp = t0() + chrono::Duration::seconds(60);
        assert_eq!(s.verify(&token, AUD, at_exp), Err(JwtError::Expired));
        let before = t0() - chrono::Duration::seconds(1);
        assert_eq!(s.verify(&token, AUD, before), Err(JwtError::NotYetValid));
        assert_eq!(
            s.verify(&token, "production", t0()),
            Err(JwtError::WrongAudience)
        );
        assert!(s.verify(&token, AUD, t0()).is_ok());
    }

    #[test]
    fn the_cache_of_verified_tokens_is_bounded() {
        let s = JwtSigner::generate().unwrap();
        let total = CACHE_SHARDS * CACHE_SHARD_CAPACITY + 500;
        let fake = |i: usize| Claims {
            sub: format!("c{i}"),
            exp: t0().timestamp() + 60,
            iat: t0().timestamp(),
            jti: "j".into(),
            nbf: None,
        };
        for i in 0..total {
            let digest = VerifiedTokens::digest(&i.to_string(), AUD);
            s.verified.insert(digest, fake(i), t0().timestamp());
        }
        let held: usize = s
            .verified
            .shards
            .iter()
            .map(|shard| shard.lock().unwrap().len())
            .sum();
        assert!(held <= CACHE_SHARDS * CACHE_SHARD_CAPACITY, "{held}");
    }
}
