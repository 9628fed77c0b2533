//! The request examples of the merchant document (CONTRACT 14): `POST /mandate` for each of the
//! four types, and one each for adding installments, changing their state, activating in the
//! sandbox and opening a signature process. They build on one another as a first integration
//! would: the customer `cust-001` (`POST /user`), the DYNAMIC mandate `PLAN-DYN-001`, its
//! installment `c-2` added then annulled. `tests/api/openapi.rs` sends every one of them to
//! the server, in that order, and each is accepted.
//!
//! Dates are in 2030, so that every example stays in the future for years (the server refuses
//! due dates before today).

use serde_json::{Value, json};

/// A one-page A4 PDF with nothing on it, for the signature example.
const BLANK_PDF_BASE64: &str = "JVBERi0xLjQKMSAwIG9iago8PCAvVHlwZSAvQ2F0YWxvZyAvUGFnZXMgMiAwIFIgPj4KZW5kb2JqCjIgMCBvYmoKPDwgL1R5cGUgL1BhZ2VzIC9LaWRzIFszIDAgUl0gL0NvdW50IDEgPj4KZW5kb2JqCjMgMCBvYmoKPDwgL1R5cGUgL1BhZ2UgL1BhcmVudCAyIDAgUiAvTWVkaWFCb3ggWzAgMCA1OTUgODQyXSAvUmVzb3VyY2VzIDw8ID4+IC9Db250ZW50cyA0IDAgUiA+PgplbmRvYmoKNCAwIG9iago8PCAvTGVuZ3RoIDAgPj4Kc3RyZWFtCgplbmRzdHJlYW0KZW5kb2JqCnhyZWYKMCA1CjAwMDAwMDAwMDAgNjU1MzUgZiAKMDAwMDAwMDAwOSAwMDAwMCBuIAowMDAwMDAwMDU4IDAwMDAwIG4gCjAwMDAwMDAxMTUgMDAwMDAgbiAKMDAwMDAwMDIxOSAwMDAwMCBuIAp0cmFpbGVyCjw8IC9TaXplIDUgL1Jvb3QgMSAwIFIgPj4Kc3RhcnR4cmVmCjI2OAolJUVPRgo=";

fn urls() -> Value {
    json!({"callback": "https://merchant.example/return",
           "activationWebhook": "https://merchant.example/hooks/activation",
           "paymentWebhook": "https://merchant.example/hooks/payment"})
}

fn example(summary: &str, value: Value) -> Value {
    json!({"summary": summary, "value": value})
}

/// Each operation's examples: method, path and named examples.
fn examples() -> Vec<(&'static str, &'static str, Value)> {
    vec![
        (
            "post",
            "/mandate",
            json!({
                "dynamic": example("DYNAMIC: installments the merchant lists, up to a maximum", json!({
                    "customer": {"userId": "cust-001"},
                    "mandate": {"id": "PLAN-DYN-001", "type": "DYNAMIC", "name": "Cuenta corriente",
                                "charges": {"currencyId": "CLP", "maxAmount": 100000}},
                    "installments": [{"id": "c-1", "amount": 25000, "currencyId": "CLP",
                                      "installmentDueDate": "2030-01-15"}],
                    "paymentMethods": [3, 4, 5],
                    "urls": urls()})),
                "subscription": example("SUBSCRIPTION: a fixed amount every period, a number of times", json!({
                    "customer": {"userId": "cust-001"},
                    "mandate": {"id": "PLAN-SUB-001", "type": "SUBSCRIPTION", "name": "Plan mensual",
                                "detail": "Gimnasio",
                                "charges": {"currencyId": "CLP", "amount": 29990, "periodicity": "MONTHLY",
                                            "startDate": "2030-01-05", "count": 12}},
                    "paymentMethods": [3, 4],
                    "metadata": {"plan": "gold"},
                    "urls": urls()})),
                "permanent": example("PERMANENT: a fixed amount every period until cancelled", json!({
                    "customer": {"userId": "cust-001"},
                    "mandate": {"id": "PLAN-PERM-001", "type": "PERMANENT", "name": "Seguro",
                                "charges": {"currencyId": "CLP", "amount": 9990, "periodicity": "MONTHLY",
                                            "startDate": "2030-01-10"}},
                    "paymentMethods": [5, 6],
                    "urls": urls()})),
                "onepay": example("ONEPAY: one payment", json!({
                    "customer": {"userId": "cust-001"},
                    "mandate": {"id": "PLAN-ONE-001", "type": "ONEPAY", "name": "Compra única",
                                "charges": {"currencyId": "CLP", "amount": 50000, "dueDate": "2030-01-20"}},
                    "paymentMethods": [3],
                    "urls": urls()})),
            }),
        ),
        (
            "post",
            "/installments",
            json!({"add": example("Two more installments of the DYNAMIC mandate", json!({
            "customer": {"userId": "cust-001"},
            "product": {"id": "PLAN-DYN-001"},
            "installmentsNumber": 2,
            "installments": [
                {"id": "c-2", "amount": 25000, "currencyId": "CLP", "installmentDueDate": "2030-02-15"},
                {"id": "c-3", "amount": 25000, "currencyId": "CLP", "installmentDueDate": "2030-03-15"}
            ]}))}),
        ),
        (
            "put",
            "/installments/status/change",
            json!({"annul": example("Annul an installment not yet charged", json!({
                "product": {"id": "PLAN-DYN-001"},
                "installments": {"ids": ["c-2"]},
                "action": "ANNULMENT"}))}),
        ),
        (
            "post",
            "/sandbox/mandates/{internalId}/activate",
            json!({"card": example("Activate with the sandbox's approving test card", json!({
                "paymentMethodId": 3,
                "card": {"number": "4111111111111111", "expiry": "12/30", "cvv": "123"}}))}),
        ),
        (
            "post",
            "/signature",
            json!({"contract": example("One customer signs one document on its last page", json!({
                "process": {"processName": "Contrato de servicio", "externalProcessId": "P-001",
                            "requestUser": "ops@merchant.example"},
                "signatories": [{"userId": "cust-001", "order": 1, "type": "FES"}],
                "documents": [{"documentName": "contrato.pdf", "contentBase64": BLANK_PDF_BASE64,
                               "signatureData": [{"signatory": {"userId": "cust-001"}, "mode": "LAST_PAGE"}]}],
                "urls": {"callback": "https://merchant.example/firmas/listo",
                         "webhook": "https://merchant.example/hooks/signature"}}))}),
        ),
    ]
}

/// Puts the examples under each operation's JSON request body.
pub fn add(doc: &mut Value) {
    for (method, path, named) in examples() {
        let body = &mut doc["paths"][path][method]["requestBody"]["content"]["application/json"];
        if body.is_object() {
            body["examples"] = named;
        }
    }
}
