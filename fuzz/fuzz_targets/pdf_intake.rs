//! The inspection of an uploaded PDF (`POST /api/v1/signature`) on arbitrary bytes: it
//! answers pages or a problem, never panics; scripts/fuzz.sh runs it with memory and time
//! limits, so an input that parses too slowly or inflates too far is a finding.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let _ = mandato::esign::pdf::inspect(data);
});
