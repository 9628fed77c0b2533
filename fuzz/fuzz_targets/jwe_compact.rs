//! The login password's compact JWE parser and decrypter on arbitrary text, with the fixed
//! test key of `tests/fixtures/jwe/key.pem`: it never panics, and refuses or decrypts.
#![no_main]

use std::sync::LazyLock;

use libfuzzer_sys::fuzz_target;
use mandato::auth::jwe::JweKeyPair;

static KEY: LazyLock<JweKeyPair> = LazyLock::new(|| {
    JweKeyPair::from_private_pem(include_str!("../../tests/fixtures/jwe/key.pem"))
        .expect("the fixture key loads")
});

fuzz_target!(|data: &[u8]| {
    // The password arrives in a JSON string, so only UTF-8 text reaches the decrypter.
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let _ = KEY.decrypt_password(text);
});
