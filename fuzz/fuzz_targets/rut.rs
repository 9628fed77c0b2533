//! `Rut::parse` on arbitrary text: it never panics, and whatever it accepts is a RUT whose
//! normalised form parses back to the same RUT, with the check digit of its body.
#![no_main]

use libfuzzer_sys::fuzz_target;
use mandato::domain::rut::{MAX_BODY, Rut, check_digit};

fuzz_target!(|data: &[u8]| {
    // Merchants' RUTs arrive inside JSON strings, so only UTF-8 text can reach the parser.
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let Ok(rut) = Rut::parse(text) else {
        return;
    };
    let again = Rut::parse(rut.as_str()).expect("a normalised RUT parses again");
    assert_eq!(again, rut, "normalising is idempotent");
    assert_eq!(again.as_str(), rut.as_str());
    assert!(rut.body() >= 1 && rut.body() <= MAX_BODY);
    assert_eq!(
        rut.as_str(),
        format!("{}-{}", rut.body(), check_digit(rut.body())),
        "the normalised form is the body, a dash and its check digit"
    );
});
