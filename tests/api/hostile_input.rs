//! Inputs found by fuzzing (fuzz/, scripts/fuzz.sh) that once crashed a parser, replayed over
//! HTTP: each must be answered with the error envelope.

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use josekit::jwe::{JweHeader, RSA_OAEP_256};
use serde_json::json;

use crate::helpers::*;

/// A login JWE whose initialization vector is shorter than its `enc` needs (8 bytes for
/// A128CBC-HS256, which uses 16) made OpenSSL's binding panic inside the login; it is an
/// undecryptable password like any other.
#[tokio::test(flavor = "multi_thread")]
async fn a_login_jwe_with_a_short_iv_is_refused() {
    let app = spawn_app().await;
    let key = app.public_key().await;
    let encrypter = RSA_OAEP_256.encrypter_from_pem(key.as_bytes()).unwrap();
    for (enc, iv_len) in [("A128CBC-HS256", 8), ("A256CBC-HS512", 0), ("A256GCM", 4)] {
        let mut header = JweHeader::new();
        header.set_content_encryption(enc);
        let token =
            josekit::jwe::serialize_compact(PASSWORD.as_bytes(), &header, &encrypter).unwrap();
        let mut parts: Vec<String> = token.split('.').map(str::to_string).collect();
        parts[2] = URL_SAFE_NO_PAD.encode(vec![7u8; iv_len]);
        let forged = parts.join(".");
        app.post("/login", &json!({"username": COMMERCE, "password": forged}))
            .await
            .expect(403, "INVALID_CREDENTIALS");
    }
    // The same key and password with a proper IV still sign in.
    let good = app.encrypt(PASSWORD).await;
    app.post("/login", &json!({"username": COMMERCE, "password": good}))
        .await
        .expect(200, "LOGIN_OK");
}
