//! The body of `POST /api/v1/signature` through the handler's own parsing and validation
//! (`mandato::http::signature::validate_request`), with every signatory's customer found
//! except those whose id starts with `missing`: any bytes give a command or field errors,
//! never a panic. The PDF inside is inspected as the handler does; `pdf_intake` fuzzes that
//! part on its own.
#![no_main]

use libfuzzer_sys::fuzz_target;
use mandato::error::Error;
use mandato::operations::CustomerRef;
use mandato::store::customers::CustomerRow;

fn customer(reference: &CustomerRef) -> Option<CustomerRow> {
    let (user_id, id) = match reference {
        CustomerRef::UserId(user_id) => (user_id.clone(), format!("cus_{user_id}")),
        CustomerRef::InternalUserId(id) => (format!("user-{id}"), id.clone()),
    };
    if user_id.starts_with("missing") || id.starts_with("missing") {
        return None;
    }
    // Distinct customers get distinct rows; the same reference twice is the same customer.
    let seq = user_id
        .bytes()
        .fold(7i64, |h, b| h.wrapping_mul(31).wrapping_add(i64::from(b)));
    Some(CustomerRow {
        seq,
        id,
        commerce_id: 1,
        user_id,
        rut: "12345678-5".into(),
        first_name: "Ana".into(),
        last_name: "Pérez".into(),
        second_last_name: None,
        address: None,
        email: "ana@example.cl".into(),
        phone: None,
        created_at: "2026-06-15T12:00:00Z".into(),
        updated_at: "2026-06-15T12:00:00Z".into(),
    })
}

fuzz_target!(|data: &[u8]| {
    match mandato::http::signature::validate_request(data, customer) {
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
