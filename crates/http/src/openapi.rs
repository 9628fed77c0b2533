//! The served `/openapi.json`: utoipa's document from the handlers' annotations, then made to
//! say in schema keywords what the handlers enforce (CONTRACT 12), so that a generated client
//! refuses what the server would refuse and a schema-valid request is one the server accepts:
//! required members are not nullable, closed sets are `enum`, numbers have their bounds,
//! strings their lengths, patterns and formats; the eight common headers their formats and
//! enums; and the webhook bodies are described under `webhooks`.
//!
//! The rules name schemas and properties of the DTOs; a rule that names one the document lacks
//! panics when the document is built (`tests/api/openapi.rs` builds it), so a renamed field
//! cannot leave its constraint behind silently.

use serde_json::{Map, Value, json};

use mandato_engine::config::Config;

/// Letters, digits, `-`, `_`, `.`: the merchant's ids (`domain::external_id`).
pub const EXTERNAL_ID: &str = "^[A-Za-z0-9._-]{1,64}$";
/// Text shown to people (`domain::text`): not blank at either end, and no control or
/// text-direction characters anywhere.
const SHOWN_TEXT: &str = "^[^\\s\\x00-\\x1f\\x7f-\\x9f\\u061c\\u200e\\u200f\\u202a-\\u202e\\u2066-\\u2069]([^\\x00-\\x1f\\x7f-\\x9f\\u061c\\u200e\\u200f\\u202a-\\u202e\\u2066-\\u2069]*[^\\s\\x00-\\x1f\\x7f-\\x9f\\u061c\\u200e\\u200f\\u202a-\\u202e\\u2066-\\u2069])?$";
/// A RUT with or without dots and dash (`12.345.678-5`, `12345678-5`, `123456785`); the check
/// digit (modulo 11) is beyond a pattern.
const RUT: &str = "^(\\d{1,2}(\\.\\d{3}){2}|\\d{1,8})-?[0-9Kk]$";
/// `YYYY-MM-DD` from 1900 to 9999 (`domain::date`).
const DATE: &str = "^(19|[2-9][0-9])[0-9]{2}-[0-9]{2}-[0-9]{2}$";
const PAYMENT_METHODS: [i64; 6] = [3, 4, 5, 6, 11, 14];
const CURRENCIES: [&str; 3] = ["CLP", "CLF", "USD"];

fn text(max: u64) -> Value {
    json!({"type": "string", "minLength": 1, "maxLength": max, "pattern": SHOWN_TEXT})
}

/// Text that may be blank (then it counts as absent), otherwise as [`text`].
fn optional_text(max: u64) -> Value {
    json!({"type": "string", "maxLength": max,
           "pattern": "^[^\\x00-\\x1f\\x7f-\\x9f\\u061c\\u200e\\u200f\\u202a-\\u202e\\u2066-\\u2069]*$"})
}

fn external_id() -> Value {
    json!({"type": "string", "minLength": 1, "maxLength": 64, "pattern": EXTERNAL_ID})
}

fn internal_id(prefix: &str) -> Value {
    json!({"type": "string", "minLength": 5, "maxLength": 64,
           "pattern": format!("^{prefix}_[A-Za-z0-9-]{{1,60}}$"),
           "description": format!("`{prefix}_...`")})
}

/// One of the service's ids as a filter: any id form is accepted (one of another kind matches
/// nothing).
fn filter_id(prefix: &str) -> Value {
    json!({"type": "string", "minLength": 1, "maxLength": 64, "pattern": EXTERNAL_ID,
           "description": format!("`{prefix}_...`")})
}

fn date() -> Value {
    json!({"type": "string", "format": "date", "pattern": DATE})
}

/// Host names the URL parser takes as they are (labels of letters, digits and `-`), an
/// optional port and path.
const URL_REST: &str =
    "[A-Za-z0-9-]+(\\.[A-Za-z0-9-]+)*(:[0-9]{1,4})?(/[A-Za-z0-9._~!$&'()*+,;=:@/-]*)?$";

fn https_url() -> Value {
    json!({"type": "string", "format": "uri", "maxLength": 2048,
           "pattern": format!("^https://{URL_REST}")})
}

fn callback_url() -> Value {
    json!({"type": "string", "format": "uri", "maxLength": 2048,
           "pattern": format!("^(https://{URL_REST}|http://(localhost|127\\.0\\.0\\.1){URL_REST_LOCAL})")})
}

/// What may follow `http://localhost` in a callback: an optional port and path.
const URL_REST_LOCAL: &str = "(:[0-9]{1,4})?(/[A-Za-z0-9._~!$&'()*+,;=:@/-]*)?$";

/// An amount: above 0 and below 10^14 (`domain::money`), with at most the currency's decimals
/// (CLP 0, USD 2, CLF 4): a rule across two members that the description states.
fn amount() -> Value {
    json!({"type": "number", "exclusiveMinimum": 0, "exclusiveMaximum": 100_000_000_000_000i64,
           "description": "In the currency's major unit, with at most its decimals: CLP 0, USD 2, CLF 4."})
}

/// A compact JWE: five base64url parts.
fn jwe() -> Value {
    json!({"type": "string", "minLength": 1, "maxLength": 4096,
           "pattern": "^[A-Za-z0-9_-]+\\.[A-Za-z0-9_-]*\\.[A-Za-z0-9_-]+\\.[A-Za-z0-9_-]+\\.[A-Za-z0-9_-]+$",
           "description": "The commerce password as a compact JWE (five base64url parts) under the environment's public key."})
}

/// The same schema, also allowing `null`.
/// Enumerations stay whole beside their `null` (generators make one enum type of them).
fn nullable(mut schema: Value) -> Value {
    match schema.get("type").cloned() {
        Some(Value::String(kind)) if schema.get("enum").is_none() => {
            schema["type"] = json!([kind, "null"]);
            schema
        }
        _ => json!({"oneOf": [schema, {"type": "null"}]}),
    }
}

fn string_enum(values: &[&str]) -> Value {
    json!({"type": "string", "enum": values})
}

/// What one property of a request schema becomes, and whether it is required.
struct Rule {
    schema: &'static str,
    property: &'static str,
    required: bool,
    value: Value,
}

fn rule(schema: &'static str, property: &'static str, required: bool, value: Value) -> Rule {
    Rule {
        schema,
        property,
        required,
        value,
    }
}

fn reference(schema: &str) -> Value {
    json!({"$ref": format!("#/components/schemas/{schema}")})
}

/// The request bodies of the merchant and sandbox operations, property by property.
fn request_rules() -> Vec<Rule> {
    vec![
        // Authentication.
        rule(
            "LoginRequest",
            "username",
            true,
            json!({"type": "string", "minLength": 1, "maxLength": 64}),
        ),
        rule("LoginRequest", "password", true, jwe()),
        rule(
            "EncryptRequest",
            "password",
            true,
            json!({"type": "string", "minLength": 1, "maxLength": 200}),
        ),
        rule(
            "EncryptRequest",
            "publicKey",
            true,
            json!({"type": "string", "minLength": 100, "maxLength": 10000,
                   "description": "The environment's public key (PEM), as `/.well-known/jwe-public-key` gives it."}),
        ),
        // Customers.
        rule("UserRequest", "customer", true, reference("CustomerIn")),
        rule("CustomerIn", "userId", true, external_id()),
        rule(
            "CustomerIn",
            "identificationDocument",
            true,
            reference("IdentificationDocumentIn"),
        ),
        rule(
            "CustomerIn",
            "personalInformation",
            true,
            reference("PersonalInformationIn"),
        ),
        rule("CustomerIn", "address", false, reference("AddressIn")),
        rule("CustomerIn", "contacts", true, reference("ContactsIn")),
        rule(
            "IdentificationDocumentIn",
            "type",
            false,
            string_enum(&["RUT"]),
        ),
        rule(
            "IdentificationDocumentIn",
            "number",
            true,
            json!({"type": "string", "maxLength": 12, "pattern": RUT,
                   "description": "The RUT, with or without dots and dash; its check digit (modulo 11, `K` either case) must be right."}),
        ),
        rule("PersonalInformationIn", "firstName", true, text(100)),
        rule("PersonalInformationIn", "lastName", true, text(100)),
        rule("PersonalInformationIn", "secondLastName", false, text(100)),
        rule("AddressIn", "street", false, optional_text(200)),
        rule("AddressIn", "number", false, optional_text(200)),
        rule("AddressIn", "apartment", false, optional_text(200)),
        rule("AddressIn", "commune", false, optional_text(200)),
        rule("AddressIn", "city", false, optional_text(200)),
        rule("AddressIn", "region", false, optional_text(200)),
        rule("AddressIn", "country", false, optional_text(200)),
        rule(
            "ContactsIn",
            "email",
            true,
            json!({"type": "string", "format": "email", "maxLength": 254,
                   "pattern": "^[^\\s@()<>\\[\\]:;,\\\\\"]+@([A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?\\.)+[A-Za-z]{2,63}$"}),
        ),
        rule(
            "ContactsIn",
            "phone",
            false,
            json!({"type": "string", "pattern": "^\\+?[0-9]{8,15}$"}),
        ),
        // Mandates.
        rule(
            "MandateRequest",
            "customer",
            true,
            reference("CustomerRefIn"),
        ),
        rule("MandateRequest", "mandate", true, reference("MandateIn")),
        rule(
            "MandateRequest",
            "paymentMethods",
            false,
            json!({"type": "array", "minItems": 1, "uniqueItems": true,
                   "items": {"type": "integer", "enum": PAYMENT_METHODS}}),
        ),
        rule(
            "MandateRequest",
            "installments",
            false,
            json!({"type": "array", "maxItems": 1000, "items": reference("InstallmentIn")}),
        ),
        rule(
            "MandateRequest",
            "metadata",
            false,
            json!({"type": "object", "description": "Merchant-owned JSON object (at most 16 KiB), returned as sent."}),
        ),
        rule("MandateRequest", "urls", false, reference("UrlsIn")),
        rule("CustomerRefIn", "userId", false, external_id()),
        rule("CustomerRefIn", "internalUserId", false, internal_id("usr")),
        rule("MandateIn", "id", true, external_id()),
        rule(
            "MandateIn",
            "type",
            true,
            string_enum(&["DYNAMIC", "PERMANENT", "SUBSCRIPTION", "ONEPAY"]),
        ),
        rule("MandateIn", "name", true, text(200)),
        rule("MandateIn", "detail", false, text(1000)),
        rule("MandateIn", "charges", true, reference("ChargesIn")),
        rule(
            "MandateIn",
            "terminateWhenCharged",
            false,
            json!({"type": "boolean"}),
        ),
        rule(
            "MandateIn",
            "activation",
            false,
            string_enum(&["DIRECT", "SIGNATURE"]),
        ),
        rule("ChargesIn", "currencyId", true, string_enum(&CURRENCIES)),
        rule("ChargesIn", "amount", false, amount()),
        rule(
            "ChargesIn",
            "periodicity",
            false,
            string_enum(&[
                "WEEKLY",
                "MONTHLY",
                "BIMONTHLY",
                "QUARTERLY",
                "SEMIANNUAL",
                "ANNUAL",
            ]),
        ),
        rule("ChargesIn", "startDate", false, date()),
        rule(
            "ChargesIn",
            "count",
            false,
            json!({"type": "integer", "minimum": 1, "maximum": 1200}),
        ),
        rule("ChargesIn", "endDate", false, date()),
        rule("ChargesIn", "dueDate", false, date()),
        rule("ChargesIn", "maxAmount", false, amount()),
        rule("InstallmentIn", "id", true, external_id()),
        rule("InstallmentIn", "amount", true, amount()),
        rule("InstallmentIn", "installmentDueDate", true, date()),
        rule(
            "InstallmentIn",
            "currencyId",
            true,
            string_enum(&CURRENCIES),
        ),
        rule("UrlsIn", "callback", false, callback_url()),
        rule("UrlsIn", "activationWebhook", false, https_url()),
        rule("UrlsIn", "paymentWebhook", false, https_url()),
        rule(
            "CancelRequest",
            "description",
            true,
            json!({"type": "string", "minLength": 3, "maxLength": 500, "pattern": SHOWN_TEXT}),
        ),
        // Installments.
        rule(
            "AddInstallmentsRequest",
            "customer",
            true,
            reference("CustomerRefIn"),
        ),
        rule(
            "AddInstallmentsRequest",
            "product",
            true,
            reference("ProductRefIn"),
        ),
        rule(
            "AddInstallmentsRequest",
            "installmentsNumber",
            true,
            json!({"type": "integer", "minimum": 1, "maximum": 1000}),
        ),
        rule(
            "AddInstallmentsRequest",
            "installments",
            true,
            json!({"type": "array", "minItems": 1, "maxItems": 1000, "items": reference("InstallmentIn")}),
        ),
        rule("AddInstallmentsRequest", "urls", false, reference("UrlsIn")),
        rule("ProductRefIn", "id", false, external_id()),
        rule("ProductRefIn", "internalId", false, internal_id("man")),
        rule(
            "StatusChangeRequest",
            "product",
            true,
            reference("ProductRefIn"),
        ),
        rule(
            "StatusChangeRequest",
            "installments",
            true,
            reference("InstallmentIdsIn"),
        ),
        rule(
            "StatusChangeRequest",
            "action",
            true,
            string_enum(&["PAYMENT", "ANNULMENT"]),
        ),
        rule(
            "StatusChangeRequest",
            "payment",
            false,
            reference("PaymentIn"),
        ),
        rule(
            "InstallmentIdsIn",
            "ids",
            false,
            json!({"type": "array", "minItems": 1, "maxItems": 1000, "items": external_id()}),
        ),
        rule(
            "InstallmentIdsIn",
            "internalIds",
            false,
            json!({"type": "array", "minItems": 1, "maxItems": 1000, "items": internal_id("ins")}),
        ),
        rule("PaymentIn", "date", true, date()),
        rule("PaymentIn", "amount", true, amount()),
        rule("PaymentIn", "currencyId", true, string_enum(&CURRENCIES)),
        rule("PaymentIn", "authorizationCode", false, text(64)),
        rule("PaymentIn", "method", false, text(32)),
        // Signatures.
        rule("SignatureRequest", "process", true, reference("ProcessIn")),
        rule(
            "SignatureRequest",
            "signatories",
            true,
            json!({"type": "array", "minItems": 1, "maxItems": 50, "items": reference("SignatoryIn")}),
        ),
        rule(
            "SignatureRequest",
            "documents",
            true,
            json!({"type": "array", "minItems": 1, "maxItems": 20, "items": reference("DocumentIn")}),
        ),
        rule(
            "SignatureRequest",
            "urls",
            true,
            reference("SignatureUrlsIn"),
        ),
        rule("ProcessIn", "processName", true, text(200)),
        rule("ProcessIn", "externalProcessId", false, optional_text(64)),
        rule("ProcessIn", "requestUser", false, optional_text(200)),
        rule(
            "ProcessIn",
            "expirationDays",
            false,
            json!({"type": "integer", "minimum": 1, "maximum": 365}),
        ),
        rule("SignatoryIn", "userId", false, external_id()),
        rule("SignatoryIn", "internalUserId", false, internal_id("usr")),
        rule(
            "SignatoryIn",
            "order",
            true,
            json!({"type": "integer", "minimum": 1, "maximum": 1000}),
        ),
        rule(
            "SignatoryIn",
            "type",
            true,
            string_enum(&["FES", "FEA", "FAO"]),
        ),
        rule("SignatoryRefIn", "userId", false, external_id()),
        rule(
            "SignatoryRefIn",
            "internalUserId",
            false,
            internal_id("usr"),
        ),
        rule("DocumentIn", "documentName", true, text(200)),
        rule(
            "DocumentIn",
            "contentBase64",
            true,
            json!({"type": "string", "minLength": 4, "contentEncoding": "base64", "contentMediaType": "application/pdf",
                   "pattern": "^[A-Za-z0-9+/]+={0,2}$"}),
        ),
        rule(
            "DocumentIn",
            "signatureData",
            true,
            json!({"type": "array", "minItems": 1, "maxItems": 200, "items": reference("SignatureDataIn")}),
        ),
        rule(
            "SignatureDataIn",
            "signatory",
            true,
            reference("SignatoryRefIn"),
        ),
        rule(
            "SignatureDataIn",
            "mode",
            true,
            string_enum(&["MANUAL", "LAST_PAGE"]),
        ),
        rule(
            "SignatureDataIn",
            "page",
            false,
            json!({"type": "integer", "minimum": 1}),
        ),
        rule(
            "SignatureDataIn",
            "x",
            false,
            json!({"type": "number", "minimum": 0}),
        ),
        rule(
            "SignatureDataIn",
            "y",
            false,
            json!({"type": "number", "minimum": 0}),
        ),
        rule(
            "SignatureDataIn",
            "width",
            false,
            json!({"type": "number", "exclusiveMinimum": 0}),
        ),
        rule(
            "SignatureDataIn",
            "height",
            false,
            json!({"type": "number", "exclusiveMinimum": 0}),
        ),
        rule("SignatureUrlsIn", "callback", true, callback_url()),
        rule("SignatureUrlsIn", "webhook", true, https_url()),
        rule(
            "CancelSignatureRequest",
            "process",
            true,
            reference("CancelProcessIn"),
        ),
        rule("CancelProcessIn", "internalId", true, internal_id("sig")),
        // Sandbox.
        rule("AdvanceRequest", "advanceTo", false, date()),
        rule(
            "AdvanceRequest",
            "advanceDays",
            false,
            json!({"type": "integer", "minimum": 1, "maximum": 400}),
        ),
        rule(
            "ActivateRequest",
            "paymentMethodId",
            true,
            json!({"type": "integer", "enum": PAYMENT_METHODS}),
        ),
        rule("ActivateRequest", "card", false, reference("CardIn")),
        rule(
            "ActivateRequest",
            "bankAccount",
            false,
            reference("BankAccountIn"),
        ),
        rule(
            "CardIn",
            "number",
            true,
            json!({"type": "string", "pattern": "^[0-9]{12,19}$"}),
        ),
        rule(
            "CardIn",
            "expiry",
            true,
            json!({"type": "string", "pattern": "^(0[1-9]|1[0-2])/[0-9]{2}$"}),
        ),
        rule(
            "CardIn",
            "cvv",
            true,
            json!({"type": "string", "pattern": "^[0-9]{3,4}$"}),
        ),
        rule(
            "BankAccountIn",
            "bankCode",
            true,
            json!({"type": "string", "pattern": "^[0-9]{3}$"}),
        ),
        rule(
            "BankAccountIn",
            "accountType",
            true,
            string_enum(&["CHECKING", "VISTA", "SAVINGS"]),
        ),
        rule(
            "BankAccountIn",
            "accountNumber",
            true,
            json!({"type": "string", "pattern": "^[0-9]{4,20}$"}),
        ),
        rule(
            "BankAccountIn",
            "holderRut",
            true,
            json!({"type": "string", "maxLength": 12, "pattern": RUT}),
        ),
        rule(
            "OutcomeRequest",
            "result",
            true,
            string_enum(&["PAID", "REJECTED", "REVERSED"]),
        ),
        rule(
            "OutcomeRequest",
            "code",
            false,
            string_enum(&[
                "INSUFFICIENT_FUNDS",
                "CARD_DECLINED",
                "EXPIRED_CARD",
                "ACCOUNT_CLOSED",
                "BANK_VALIDATION_FAILED",
            ]),
        ),
        rule(
            "FaultsIn",
            "duplicateEvery",
            false,
            json!({"type": "integer", "minimum": 0, "maximum": crate::sandbox::MAX_DUPLICATE_EVERY,
                   "description": "Deliver every n-th event twice (0: never)."}),
        ),
        rule(
            "FaultsIn",
            "delaySeconds",
            false,
            json!({"type": "integer", "minimum": 0, "maximum": crate::sandbox::MAX_DELAY_SECONDS,
                   "description": "Hold each event this long after its creation before its first attempt."}),
        ),
        rule("NewHolidayRequest", "date", true, date()),
        rule("NewHolidayRequest", "name", true, text(100)),
        rule(
            "ChargingRuleRequest",
            "chargingRule",
            true,
            string_enum(&["NEXT", "PREVIOUS"]),
        ),
        // Staff: the signature check and the changes of several installments.
        rule(
            "VerifyRequest",
            "secret",
            true,
            json!({"type": "string", "maxLength": 200, "pattern": "^whsec_[A-Za-z0-9+/]+={0,2}$"}),
        ),
        rule(
            "StaffPaymentRequest",
            "installmentIds",
            true,
            staff_installment_ids(),
        ),
        rule(
            "StaffAnnulRequest",
            "installmentIds",
            true,
            staff_installment_ids(),
        ),
        // Staff settings and safety.
        rule(
            "RotateRequest",
            "overlapHours",
            false,
            json!({"type": "integer", "minimum": 0, "maximum": 720,
                   "description": "Hours the previous secret keeps signing beside the new one (default 24)."}),
        ),
        rule("NewApiKeyRequest", "name", false, optional_text(100)),
        rule(
            "PasswordChangeRequest",
            "currentPassword",
            true,
            json!({"type": "string", "minLength": 1}),
        ),
        rule(
            "PasswordChangeRequest",
            "newPassword",
            true,
            json!({"type": "string", "minLength": crate::admin::session::MIN_PASSWORD_CHARS}),
        ),
    ]
}

/// The `installmentIds` of a staff change: 1 to 1000 internal installment ids.
fn staff_installment_ids() -> Value {
    json!({"type": "array", "minItems": 1, "maxItems": 1000,
           "items": {"type": "string", "minLength": 1, "maxLength": 64}})
}

/// The members of `charges` each mandate type takes and needs (CONTRACT 5), as `if`/`then`.
fn charges_by_type(doc: &mut Value) {
    let needs = |required: &[&str], forbidden: &[&str]| {
        let mut properties = serde_json::Map::new();
        for name in required {
            properties.insert((*name).into(), json!({"not": {"type": "null"}}));
        }
        for name in forbidden {
            properties.insert((*name).into(), json!({"not": {}}));
        }
        json!({"required": required, "properties": properties})
    };
    let cases = [
        (
            "ONEPAY",
            needs(
                &["currencyId", "amount"],
                &["periodicity", "startDate", "count", "endDate", "maxAmount"],
            ),
        ),
        (
            "SUBSCRIPTION",
            json!({"allOf": [
                needs(&["currencyId", "amount", "periodicity", "startDate"], &["dueDate", "maxAmount"]),
                // Exactly one of count and endDate has a value (null is none).
                {"oneOf": [
                    {"required": ["count"], "properties": {"count": {"not": {"type": "null"}}},
                     "not": {"required": ["endDate"], "properties": {"endDate": {"not": {"type": "null"}}}}},
                    {"required": ["endDate"], "properties": {"endDate": {"not": {"type": "null"}}},
                     "not": {"required": ["count"], "properties": {"count": {"not": {"type": "null"}}}}},
                ]},
            ]}),
        ),
        (
            "PERMANENT",
            needs(
                &["currencyId", "amount", "periodicity", "startDate"],
                &["count", "endDate", "dueDate", "maxAmount"],
            ),
        ),
        (
            "DYNAMIC",
            needs(
                &["currencyId"],
                &[
                    "amount",
                    "periodicity",
                    "startDate",
                    "count",
                    "endDate",
                    "dueDate",
                ],
            ),
        ),
    ];
    let all: Vec<Value> = cases
        .into_iter()
        .map(|(kind, charges)| {
            json!({"if": {"properties": {"type": {"const": kind}}, "required": ["type"]},
                   "then": {"properties": {"charges": charges}}})
        })
        .collect();
    schemas(doc).get_mut("MandateIn").expect("MandateIn")["allOf"] = Value::Array(all);
}

/// `code` comes with REJECTED (and only a rejection has one).
fn outcome_code(doc: &mut Value) {
    schemas(doc)
        .get_mut("OutcomeRequest")
        .expect("OutcomeRequest")["allOf"] = json!([
        {"if": {"properties": {"result": {"const": "REJECTED"}}, "required": ["result"]},
         "then": {"required": ["code"], "properties": {"code": {"not": {"type": "null"}}}}},
    ]);
}

/// Schemas whose members are alternatives: exactly one of them is sent.
const ONE_OF: &[(&str, &str, &str)] = &[
    ("CustomerRefIn", "userId", "internalUserId"),
    ("ProductRefIn", "id", "internalId"),
    ("InstallmentIdsIn", "ids", "internalIds"),
    ("AdvanceRequest", "advanceTo", "advanceDays"),
    ("SignatoryIn", "userId", "internalUserId"),
    ("SignatoryRefIn", "userId", "internalUserId"),
];

fn schemas(doc: &mut Value) -> &mut Map<String, Value> {
    doc.pointer_mut("/components/schemas")
        .and_then(Value::as_object_mut)
        .expect("the document has component schemas")
}

fn apply_request_rules(doc: &mut Value) {
    let schemas = schemas(doc);
    // Each member's schema without its `null`, for the alternatives below.
    let mut plain = std::collections::HashMap::new();
    for rule in request_rules() {
        plain.insert((rule.schema, rule.property), rule.value.clone());
        let schema = schemas
            .get_mut(rule.schema)
            .unwrap_or_else(|| panic!("openapi rule for the absent schema {}", rule.schema));
        let properties = schema
            .get_mut("properties")
            .and_then(Value::as_object_mut)
            .unwrap_or_else(|| panic!("{} has no properties", rule.schema));
        let property = properties.get_mut(rule.property).unwrap_or_else(|| {
            panic!(
                "openapi rule for the absent property {}.{}",
                rule.schema, rule.property
            )
        });
        // An optional member sent as `null` counts as absent, as the server reads it.
        let mut value = if rule.required {
            rule.value
        } else {
            nullable(rule.value)
        };
        // The DTO's own words stay.
        if let (Some(description), Some(target)) =
            (property.get("description").cloned(), value.as_object_mut())
        {
            target.entry("description").or_insert(description);
        }
        *property = value;
        if rule.required {
            let required = schema
                .as_object_mut()
                .expect("schema object")
                .entry("required")
                .or_insert_with(|| json!([]));
            let list = required.as_array_mut().expect("required is a list");
            if !list.iter().any(|r| r == rule.property) {
                list.push(json!(rule.property));
            }
        }
    }
    // Exactly one of the two has a value (a member sent as `null` has none).
    for (name, first, second) in ONE_OF {
        let has_value = |member: &str| {
            let schema = plain
                .get(&(*name, member))
                .cloned()
                .expect("a rule per alternative");
            json!({"type": "object", "required": [member], "properties": {member: schema}})
        };
        let no_value = |member: &str| json!({"not": {"required": [member], "properties": {member: {"not": {"type": "null"}}}}});
        let schema = schemas.get_mut(*name).expect("one-of schema");
        schema["oneOf"] = json!([
            {"allOf": [has_value(first), no_value(second)]},
            {"allOf": [has_value(second), no_value(first)]},
        ]);
    }
    // The JSON request bodies are objects; `null` is not one.
    for name in [
        "LoginRequest",
        "EncryptRequest",
        "UserRequest",
        "MandateRequest",
        "AddInstallmentsRequest",
        "StatusChangeRequest",
        "CancelSignatureRequest",
        "AdvanceRequest",
        "ActivateRequest",
        "OutcomeRequest",
        "FaultsIn",
        "SignatureRequest",
    ] {
        schemas.get_mut(name).expect("request schema")["additionalProperties"] = json!(true);
    }
}

/// The eight common headers (CONTRACT 2): formats and enums from the installation's settings.
fn common_headers() -> Vec<(&'static str, Value)> {
    vec![
        ("country", reference("Country")),
        (
            "commerce",
            json!({"type": "string", "minLength": 1, "maxLength": 64}),
        ),
        (
            "channel",
            json!({"type": "string", "minLength": 1, "maxLength": 64, "pattern": "\\S"}),
        ),
        // An RFC 3339 date-time; written as a pattern, since generators type a `date-time`
        // (or `uuid`) header as an object that some of them cannot put in a header.
        (
            "requestDateTime",
            json!({"type": "string", "maxLength": 40,
                   "pattern": "^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}(\\.[0-9]{1,9})?(Z|[+-][0-9]{2}:[0-9]{2})$",
                   "description": "RFC 3339 date-time with offset (`2026-11-25T12:00:00.000Z`), within 5 minutes of the server's clock."}),
        ),
        // A UUID, as a pattern for the same reason.
        (
            "correlationId",
            json!({"type": "string",
                   "pattern": "^[0-9A-Fa-f]{8}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{12}$",
                   "description": "A UUID, never reused by the commerce within 7 days."}),
        ),
        ("processId", reference("ProcessId")),
        (
            "salesExecutiveId",
            json!({"type": "string", "minLength": 1, "maxLength": 64, "pattern": "\\S"}),
        ),
        (
            "x-api-key",
            json!({"type": "string", "minLength": 1, "maxLength": 200}),
        ),
    ]
}

/// Path and query parameters of the merchant and sandbox operations.
fn parameter_rules() -> Vec<(&'static str, &'static str, Value)> {
    vec![
        ("mandateTypeId", "path", string_enum(&["id", "internalId"])),
        (
            "userTypeId",
            "path",
            string_enum(&["userId", "internalUserId"]),
        ),
        (
            "mandateExternalId",
            "path",
            json!({"type": "string", "minLength": 1, "maxLength": 64, "pattern": EXTERNAL_ID}),
        ),
        (
            "limit",
            "query",
            json!({"type": "integer", "minimum": 1, "maximum": 1000, "default": 100}),
        ),
        (
            "state",
            "query",
            json!({"type": "string", "pattern": "^(1|2|4|5|6|9|-99)(,(1|2|4|5|6|9|-99))*$",
                   "description": "Installment state ids, comma-separated (`1,-99`): 1 PENDING, 9 IN_PROCESS, 6 IN_VALIDATION, 2 PAID, -99 REJECTED, 4 ANNULLED, 5 REVERSED."}),
        ),
        ("mandateExternalId", "query", external_id()),
        ("mandateInternalId", "query", filter_id("man")),
        ("userId", "query", external_id()),
        ("internalUserId", "query", filter_id("usr")),
        ("dueFrom", "query", date()),
        ("dueTo", "query", date()),
        (
            "updatedFrom",
            "query",
            json!({"type": "string", "format": "date-time"}),
        ),
        (
            "updatedTo",
            "query",
            json!({"type": "string", "format": "date-time"}),
        ),
        (
            "cursor",
            "query",
            json!({"type": "string", "minLength": 1, "maxLength": 200}),
        ),
        (
            "username",
            "query",
            json!({"type": "string", "minLength": 1, "maxLength": 64}),
        ),
        ("password", "query", jwe()),
        (
            "description",
            "query",
            json!({"type": "string", "minLength": 3, "maxLength": 500, "pattern": SHOWN_TEXT}),
        ),
    ]
}

fn merchant_operations(doc: &mut Value) -> impl Iterator<Item = (&String, &mut Value)> {
    doc["paths"]
        .as_object_mut()
        .expect("paths")
        .iter_mut()
        .filter(|(_, item)| item.get("servers").is_none())
        .flat_map(|(path, item)| {
            item.as_object_mut()
                .expect("path item")
                .iter_mut()
                .map(move |(_, operation)| (path, operation))
        })
}

/// The cancel reason travels in the query string (`?description=`) or in the body: either
/// does, so the body is optional (CONTRACT 14).
fn cancel_body_optional(doc: &mut Value) {
    let body = doc
        .pointer_mut("/paths/~1mandate~1cancel~1{mandateTypeId}~1{mandateId}~1{userTypeId}~1{userId}/delete/requestBody")
        .expect("the cancel operation has a body");
    body["required"] = json!(false);
    body["description"] = json!(
        "The reason, when not sent as the query parameter `description` (which takes its place)."
    );
    body["content"]["application/json"]["schema"] = reference("CancelRequest");
}

fn apply_parameter_rules(doc: &mut Value, config: &Config) {
    // The closed sets of two headers, named once so that clients share one type for each.
    let schemas = schemas(doc);
    schemas.insert(
        "Country".into(),
        json!({"type": "string", "enum": config.countries,
               "description": "The `country` header: one of the installation's countries."}),
    );
    schemas.insert(
        "ProcessId".into(),
        json!({"type": "string", "enum": config.process_ids,
               "description": "The `processId` header: one of the installation's process ids."}),
    );
    let headers = common_headers();
    let parameters = parameter_rules();
    for (path, operation) in merchant_operations(doc) {
        let Some(list) = operation
            .get_mut("parameters")
            .and_then(Value::as_array_mut)
        else {
            continue;
        };
        for parameter in list.iter_mut() {
            let name = parameter["name"].as_str().unwrap_or_default().to_string();
            let location = parameter["in"].as_str().unwrap_or_default().to_string();
            let replacement = if location == "header" {
                headers
                    .iter()
                    .find(|(h, _)| *h == name)
                    .map(|(_, v)| v.clone())
            } else if location == "path" && (name == "mandateId" || name == "userId") {
                Some(external_or_internal())
            } else if location == "path" && name == "internalId" {
                Some(internal_id(if path.contains("installments") {
                    "ins"
                } else if path.contains("signature") {
                    "sig"
                } else {
                    "man"
                }))
            } else if location == "path" && name == "eventId" {
                Some(internal_id("evt"))
            } else if (path.starts_with("/ledger") && (name == "from" || name == "to"))
                || (path == "/sandbox/payout-report" && name == "date")
            {
                Some(date())
            } else if path.starts_with("/events") || path.starts_with("/ledger") {
                // The Events API and the ledger state their own query (their `limit` bounds,
                // their cursor a row number): the receivables' rules of the same names are not
                // theirs.
                None
            } else {
                parameters
                    .iter()
                    .find(|(n, l, _)| *n == name && *l == location)
                    .map(|(_, _, v)| v.clone())
            };
            if let Some(schema) = replacement {
                parameter["schema"] = schema;
            }
        }
    }
}

/// A path id that is the merchant's or ours, as the type segment before it says.
fn external_or_internal() -> Value {
    json!({"type": "string", "minLength": 1, "maxLength": 64, "pattern": EXTERNAL_ID})
}

/// The component schemas `value` refers to (`$ref`), anywhere inside it.
fn refs(value: &Value, found: &mut Vec<String>) {
    match value {
        Value::Object(map) => {
            if let Some(Value::String(target)) = map.get("$ref")
                && let Some(name) = target.strip_prefix("#/components/schemas/")
            {
                found.push(name.to_string());
            }
            map.values().for_each(|v| refs(v, found));
        }
        Value::Array(items) => items.iter().for_each(|v| refs(v, found)),
        _ => {}
    }
}

/// `pending` and every schema they refer to, directly or through other schemas.
fn reachable(doc: &Value, mut pending: Vec<String>) -> std::collections::HashSet<String> {
    let mut seen = std::collections::HashSet::new();
    while let Some(name) = pending.pop() {
        if seen.insert(name.clone()) {
            refs(&doc["components"]["schemas"][&name], &mut pending);
        }
    }
    seen
}

/// The component schemas a request body refers to, directly or through other schemas.
fn request_schemas(doc: &Value) -> std::collections::HashSet<String> {
    let mut pending = Vec::new();
    for item in doc["paths"]
        .as_object()
        .into_iter()
        .flat_map(|p| p.values())
    {
        for operation in item.as_object().into_iter().flat_map(|o| o.values()) {
            refs(&operation["requestBody"], &mut pending);
        }
    }
    reachable(doc, pending)
}

/// The staff API's server, and the prefix its paths carry in the document before `split`.
pub const STAFF_SERVER: &str = "/admin/api";

/// The two served documents (CONTRACT 14): the merchant's (`/openapi.json`: `/api/v1`, the
/// public keys and the webhooks) and the staff's (`/admin/openapi.json`, server
/// `/admin/api`), so that a generator makes one client of each; the merchant's keeps only the
/// component schemas its operations and webhooks use.
pub fn split(mut merchant: Value) -> (Value, Value) {
    let paths = std::mem::take(
        merchant["paths"]
            .as_object_mut()
            .expect("the document has paths"),
    );
    let mut staff = merchant.clone();
    let (mut merchant_paths, mut staff_paths) = (Map::new(), Map::new());
    for (path, item) in paths {
        match path.strip_prefix(STAFF_SERVER) {
            Some(staff_path) => staff_paths.insert(staff_path.to_string(), item),
            None => merchant_paths.insert(path, item),
        };
    }
    merchant["paths"] = Value::Object(merchant_paths);
    staff["paths"] = Value::Object(staff_paths);
    staff["servers"] = json!([{"url": STAFF_SERVER}]);
    staff["info"]["title"] = json!("mandato staff API");
    staff["info"]["description"] = json!(
        "The staff API of Mandato Desk's UI, under /admin/api: a signed-in session (cookie) \
         and its CSRF token. The merchant API is /openapi.json."
    );
    if let Some(document) = staff.as_object_mut() {
        document.remove("webhooks");
    }
    // The staff document keeps every schema: the UI names some that its operations inline.
    keep_used_schemas(&mut merchant);
    (merchant, staff)
}

/// Drops the component schemas no operation or webhook of the document refers to.
fn keep_used_schemas(doc: &mut Value) {
    let mut pending = Vec::new();
    refs(&doc["paths"], &mut pending);
    refs(&doc["webhooks"], &mut pending);
    let used = reachable(doc, pending);
    schemas(doc).retain(|name, _| used.contains(name));
}

/// Responses always carry every member (`null` when it has no value, CONTRACT 11): every
/// member of an object schema, and of the object schemas inside it, is required.
fn require_members(schema: &mut Value) {
    match schema {
        Value::Object(map) => {
            if let Some(Value::Object(properties)) = map.get("properties") {
                let required: Vec<Value> = properties.keys().map(|p| json!(p)).collect();
                map.insert("required".into(), Value::Array(required));
            }
            map.values_mut().for_each(require_members);
        }
        Value::Array(items) => items.iter_mut().for_each(require_members),
        _ => {}
    }
}

fn response_members_required(doc: &mut Value) {
    let requests = request_schemas(doc);
    for (name, schema) in schemas(doc).iter_mut() {
        if !requests.contains(name) {
            require_members(schema);
            response_formats(schema);
        }
    }
}

/// Response members written as business dates (`YYYY-MM-DD`).
const DATE_MEMBERS: [&str; 9] = [
    "businessDate",
    "chargeDate",
    "date",
    "dueDate",
    "endDate",
    "installmentDueDate",
    "nextRetryDate",
    "startDate",
    "today",
];

/// Dates and timestamps in responses get their `format`: every timestamp the service writes is
/// RFC 3339 (`clock::timestamp`), every date `YYYY-MM-DD` (`domain::date`).
fn response_formats(schema: &mut Value) {
    match schema {
        Value::Object(map) => {
            if let Some(Value::Object(properties)) = map.get_mut("properties") {
                for (name, property) in properties.iter_mut() {
                    let is_string = matches!(
                        property.get("type"),
                        Some(t) if *t == json!("string") || *t == json!(["string", "null"])
                    );
                    if !is_string || property.get("format").is_some() {
                        continue;
                    }
                    let format = if DATE_MEMBERS.contains(&name.as_str()) {
                        "date"
                    } else if name.ends_with("At")
                        || ["dateTime", "now", "at"].contains(&name.as_str())
                    {
                        "date-time"
                    } else {
                        continue;
                    };
                    property["format"] = json!(format);
                }
            }
            map.values_mut().for_each(response_formats);
        }
        Value::Array(items) => items.iter_mut().for_each(response_formats),
        _ => {}
    }
}

/// `x-api-key` is the eighth common header, a required parameter of every operation that
/// takes them; named again as a security requirement it would be the same header twice, and
/// its absence is a 400 among the other headers' (CONTRACT 2), not a credential refusal. The
/// requirement that stays is the JWT (`bearer`), refused with 403 when missing or invalid.
fn bearer_only(doc: &mut Value) {
    for (_, operation) in merchant_operations(doc) {
        let Some(requirements) = operation.get_mut("security").and_then(Value::as_array_mut) else {
            continue;
        };
        for requirement in requirements.iter_mut() {
            if let Some(schemes) = requirement.as_object_mut() {
                schemes.remove("apiKey");
            }
        }
        requirements.retain(|r| r.as_object().is_some_and(|o| !o.is_empty()));
        if requirements.is_empty() {
            operation
                .as_object_mut()
                .expect("operation")
                .remove("security");
        }
    }
}

/// A download of bytes (a PDF) is `format: binary` under its media type, not the array of
/// integers its Rust type would say (CONTRACT 14).
fn binary_downloads(doc: &mut Value) {
    let Some(paths) = doc["paths"].as_object_mut() else {
        return;
    };
    let contents = paths
        .values_mut()
        .filter_map(Value::as_object_mut)
        .flat_map(|item| item.values_mut())
        .filter_map(|operation| {
            operation
                .get_mut("responses")
                .and_then(Value::as_object_mut)
        })
        .flat_map(|responses| responses.values_mut())
        .filter_map(|response| response.get_mut("content").and_then(Value::as_object_mut));
    for content in contents {
        for (media, body) in content.iter_mut() {
            if media == "application/pdf" || media == "application/octet-stream" {
                body["schema"] = json!({"type": "string", "format": "binary"});
            }
        }
    }
}

/// The finished document, as served.
pub fn document(doc: &utoipa::openapi::OpenApi, config: &Config) -> Value {
    let mut doc = serde_json::to_value(doc).expect("the OpenAPI document is JSON");
    apply_request_rules(&mut doc);
    charges_by_type(&mut doc);
    outcome_code(&mut doc);
    apply_parameter_rules(&mut doc, config);
    cancel_body_optional(&mut doc);
    binary_downloads(&mut doc);
    super::openapi_examples::add(&mut doc);
    bearer_only(&mut doc);
    response_members_required(&mut doc);
    super::webhooks::describe(&mut doc);
    doc
}
