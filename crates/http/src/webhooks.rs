//! The `webhooks` section of `/openapi.json` (OpenAPI 3.1): the bodies `notify::events` and
//! `esign::events` write (CONTRACT 7 and 8), and the Standard Webhooks headers each delivery
//! carries, so that a generated client can type what it receives.

use serde_json::{Value, json};

const TIMESTAMP: &str = "^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}\\.[0-9]{3}Z$";

fn state(ids: &[(i64, &str)]) -> Value {
    let (id, name): (Vec<i64>, Vec<&str>) = ids.iter().copied().unzip();
    json!({"type": "object", "required": ["id", "name"],
           "properties": {"id": {"type": "integer", "enum": id},
                          "name": {"type": "string", "enum": name}}})
}

fn timestamp() -> Value {
    json!({"type": "string", "format": "date-time", "pattern": TIMESTAMP})
}

fn nullable(mut schema: Value) -> Value {
    match schema.get_mut("type") {
        Some(Value::String(t)) => {
            let t = t.clone();
            schema["type"] = json!([t, "null"]);
            if let Some(values) = schema.get_mut("enum").and_then(Value::as_array_mut) {
                values.push(Value::Null);
            }
            schema
        }
        _ => json!({"oneOf": [schema, {"type": "null"}]}),
    }
}

fn object(properties: Value) -> Value {
    let required: Vec<&String> = properties.as_object().expect("properties").keys().collect();
    json!({"type": "object", "required": required, "properties": properties})
}

/// What every event body starts with, and its body signature.
fn envelope(event: Value, rest: Value) -> Value {
    let mut properties = json!({
        "event": event,
        "eventId": {"type": "string", "pattern": "^evt_", "description": "Also the `webhook-id` header; the same on every retry."},
        "createdAt": timestamp(),
        "sequence": {"type": "integer", "minimum": 1, "description": "Increases by one with each event of the same mandate (or signature process)."},
    });
    let map = properties.as_object_mut().expect("object");
    map.extend(rest.as_object().expect("object").clone());
    map.insert(
        "signature".into(),
        json!({"type": "string", "pattern": "^[0-9a-f]{64}$",
               "description": "Lowercase hex HMAC-SHA256 (key: the commerce secret's decoded bytes) of the RFC 8785 canonical JSON of this body without `signature`."}),
    );
    object(properties)
}

fn mandate_product(with_state: bool) -> Value {
    let mut properties = json!({
        "internalId": {"type": "string", "pattern": "^man_"},
        "id": {"type": "string"},
        "type": {"type": "string", "enum": ["DYNAMIC", "PERMANENT", "SUBSCRIPTION", "ONEPAY"]},
    });
    if with_state {
        properties["state"] = state(&[
            (1, "PENDING"),
            (2, "ACTIVE"),
            (3, "CANCELLED"),
            (4, "FINISHED"),
            (5, "DELETED"),
        ]);
    }
    object(properties)
}

fn customer() -> Value {
    object(json!({
        "internalUserId": {"type": "string", "pattern": "^usr_"},
        "userId": {"type": "string"},
    }))
}

fn payment_body() -> Value {
    envelope(
        json!({"type": "string", "const": "payment"}),
        json!({
            "product": mandate_product(false),
            "customer": customer(),
            "installment": object(json!({
                "internalId": {"type": "string", "pattern": "^ins_"},
                "id": {"type": "string"},
                "amount": {"type": "number", "exclusiveMinimum": 0, "description": "Exact, in the currency's major unit, shortest form."},
                "currencyId": {"type": "string", "enum": ["CLP", "CLF", "USD"]},
                "installmentDueDate": {"type": "string", "format": "date", "description": "The contractual due date."},
                "chargeDate": {"type": "string", "format": "date", "description": "The business day the installment is charged: the due date moved off weekends and holidays by the commerce's charging rule (next or previous business day)."},
                "state": state(&[(1, "PENDING"), (9, "IN_PROCESS"), (6, "IN_VALIDATION"), (2, "PAID"), (-99, "REJECTED"), (4, "ANNULLED"), (5, "REVERSED")]),
                "dateTime": timestamp(),
                "attempt": {"type": "integer", "minimum": 0},
                "paymentMethodId": nullable(json!({"type": "integer", "enum": [3, 4, 5, 6, 11, 14]})),
                "authorizationCode": nullable(json!({"type": "string"})),
                "rejection": nullable(object(json!({
                    "code": {"type": "string", "enum": ["INSUFFICIENT_FUNDS", "CARD_DECLINED", "EXPIRED_CARD", "ACCOUNT_CLOSED", "BANK_VALIDATION_FAILED"]},
                    "message": nullable(json!({"type": "string"})),
                }))),
                "retryScheduled": {"type": "boolean", "description": "Whether the engine will try again after this rejection."},
                "nextRetryDate": nullable(json!({"type": "string", "format": "date"})),
            })),
        }),
    )
}

fn activation_body() -> Value {
    let mut body = envelope(
        json!({"type": "string", "const": "activation"}),
        json!({
            "product": mandate_product(true),
            "customer": customer(),
            "paymentMethod": {"oneOf": [{"$ref": "#/components/schemas/EnrolledMethod"}, {"type": "null"}],
                "description": "The enrolled method (`id`, `name`, masked instrument); null for a mandate cancelled before activation."},
            "dateTime": timestamp(),
            "fileBase64": nullable(json!({"type": "string", "contentEncoding": "base64", "contentMediaType": "application/pdf",
                "description": "EPAC and direct EPAC: the signed mandate document (PDF)."})),
        }),
    );
    // Only on the activation of a `SIGNATURE` mandate, so not among the required members.
    body["properties"]["signedDocument"] = json!({
        "type": "object",
        "required": ["signatureInternalId", "sha256"],
        "properties": {
            "signatureInternalId": {"type": "string", "pattern": "^sig_"},
            "sha256": {"type": "string", "pattern": "^[0-9a-f]{64}$",
                "description": "SHA-256 of the sealed mandate document, as `GET /mandate/internalId/{internalId}/document` returns it."},
        },
        "description": "A mandate activated by its completed signature process (`SIGNATURE` activation): the process and the sealed document's hash."
    });
    body
}

fn signature_body() -> Value {
    let signatory = object(json!({
        "internalId": {"type": "string"},
        "userId": {"type": "string"},
        "internalUserId": {"type": "string", "pattern": "^usr_"},
        "order": {"type": "integer", "minimum": 1, "maximum": 1000},
        "type": {"type": "string", "enum": ["FES", "FEA", "FAO"]},
        "state": state(&[(1, "PENDING"), (2, "SIGNED"), (3, "REJECTED")]),
        "signedAt": nullable(timestamp()),
        "rejectedAt": nullable(timestamp()),
    }));
    envelope(
        json!({"type": "string", "enum": ["SIGNATORY_SIGNED", "SIGNATURE_COMPLETED", "SIGNATURE_REJECTED", "SIGNATURE_CANCELLED", "SIGNATURE_EXPIRED"]}),
        json!({
            "process": object(json!({
                "internalId": {"type": "string", "pattern": "^sig_"},
                "processName": {"type": "string"},
                "externalProcessId": nullable(json!({"type": "string"})),
                "requestUser": nullable(json!({"type": "string"})),
                "state": state(&[(1, "PENDING"), (2, "IN_PROGRESS"), (3, "COMPLETED"), (4, "CANCELLED"), (5, "REJECTED"), (6, "EXPIRED")]),
            })),
            "signatory": nullable(signatory.clone()),
            "signatories": {"type": "array", "items": signatory},
            "documents": {"type": "array", "items": object(json!({
                "internalId": {"type": "string"},
                "documentName": {"type": "string"},
                "sha256": {"type": "string", "pattern": "^[0-9a-f]{64}$"},
                "sealedSha256": nullable(json!({"type": "string", "pattern": "^[0-9a-f]{64}$"})),
            }))},
            "rejection": nullable(object(json!({"reason": {"type": "string"}}))),
            "dateTime": timestamp(),
        }),
    )
}

/// The Standard Webhooks headers of every delivery.
fn headers() -> Value {
    json!([
        {"name": "webhook-id", "in": "header", "required": true,
         "description": "The event's `eventId`; the same on retries and redeliveries.",
         "schema": {"type": "string", "pattern": "^evt_"}},
        {"name": "webhook-timestamp", "in": "header", "required": true,
         "description": "Unix time of this attempt, in seconds.",
         "schema": {"type": "string", "pattern": "^[0-9]{1,12}$"}},
        {"name": "webhook-signature", "in": "header", "required": true,
         "description": "`v1,<base64 HMAC-SHA256 of \"{webhook-id}.{webhook-timestamp}.{raw body}\">`, space-separated for each secret during a rotation.",
         "schema": {"type": "string", "pattern": "^v1,[A-Za-z0-9+/]+={0,2}( v1,[A-Za-z0-9+/]+={0,2})*$"}},
    ])
}

fn webhook(summary: &str, schema: &str, description: &str) -> Value {
    json!({"post": {
        "summary": summary,
        "description": description,
        "operationId": format!("webhook_{}", schema.trim_end_matches("Event").to_lowercase()),
        "parameters": headers(),
        "requestBody": {"required": true, "content": {"application/json": {
            "schema": {"$ref": format!("#/components/schemas/{schema}")}}}},
        "responses": {"2XX": {"description": "Delivered. Anything else (or no answer within 15 s) is retried after 5 s, 5 min, 30 min, 2 h, 5 h, 10 h and 10 h."}},
    }})
}

/// The schemas the stored body of an event listed by the API can have (`EventItem.body`,
/// `NotificationPayload.body`): one of the three webhook bodies, told apart by `event`.
fn any_event_body(description: &str) -> Value {
    json!({"oneOf": [{"$ref": "#/components/schemas/PaymentEvent"},
                     {"$ref": "#/components/schemas/ActivationEvent"},
                     {"$ref": "#/components/schemas/SignatureEvent"}],
           "description": description})
}

/// Adds the event schemas and the `webhooks` section to the served document, and types the
/// event bodies the events API and the sandbox serve with them.
pub fn describe(doc: &mut Value) {
    let schemas = doc
        .pointer_mut("/components/schemas")
        .and_then(Value::as_object_mut)
        .expect("component schemas");
    schemas.insert("PaymentEvent".into(), payment_body());
    schemas.insert("ActivationEvent".into(), activation_body());
    schemas.insert("SignatureEvent".into(), signature_body());
    for owner in ["EventItem", "NotificationPayload"] {
        let body = schemas
            .get_mut(owner)
            .and_then(|schema| schema.pointer_mut("/properties/body"))
            .expect("an event listing with a body");
        let description = body["description"].as_str().unwrap_or_default().to_string();
        *body = any_event_body(&description);
    }
    doc["webhooks"] = json!({
        "payment": webhook("An installment changed state", "PaymentEvent",
            "POSTed to the mandate's `urls.paymentWebhook` on every installment state change."),
        "activation": webhook("A mandate was activated or cancelled", "ActivationEvent",
            "POSTed to the mandate's `urls.activationWebhook` when it becomes ACTIVE and when it is cancelled."),
        "signature": webhook("A signature process advanced", "SignatureEvent",
            "POSTed to the process's `urls.webhook` when a signatory signs and when the process completes, is rejected, cancelled or expires."),
    });
}
