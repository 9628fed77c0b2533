//! The body of `POST /api/v1/mandate` through the handler's own parsing and validation
//! (`mandato::http::mandates::validate_request`): any bytes give a command or field errors,
//! never a panic, and every error names a field.
#![no_main]

use chrono::NaiveDate;
use libfuzzer_sys::fuzz_target;
use mandato::error::Error;

fuzz_target!(|data: &[u8]| {
    // A fixed business date keeps every run reproducible.
    let today = NaiveDate::from_ymd_opt(2026, 6, 15).expect("a valid date");
    match mandato::http::mandates::validate_request(data, today) {
        Ok(_) => {}
        Err(Error::Validation(errors)) => {
            assert!(!errors.is_empty(), "a refusal names at least one field");
        }
        // A lone problem with a name of its own (DATE_OUT_OF_RANGE) is answered under that
        // name, still at its field.
        Err(Error::Refused {
            field: Some(field), ..
        }) => {
            assert!(!field.is_empty(), "a named refusal names its field");
        }
        Err(other) => panic!("validation answered something other than field errors: {other:?}"),
    }
});
