//! `/openapi.json` documents every operation of the merchant API, with its headers, body,
//! responses and errors; and every documented operation is really served.

use reqwest::Method;
use serde_json::Value;

use crate::helpers::*;

/// Every merchant operation of the contract: (method, path, takes the common headers, has a body).
const OPERATIONS: &[(&str, &str, bool, bool)] = &[
    ("post", "/login", true, true),
    ("get", "/login", true, false),
    ("post", "/jwe/encrypt", true, true),
    ("get", "/.well-known/jwe-public-key", false, false),
    ("get", "/.well-known/jwks.json", false, false),
    ("post", "/user", true, true),
    ("post", "/mandate", true, true),
    ("get", "/mandate/{mandateTypeId}/{mandateId}", true, false),
    (
        "get",
        "/mandate/{mandateTypeId}/{mandateId}/document",
        true,
        false,
    ),
    (
        "get",
        "/mandate/onepay/confirm/id/{mandateExternalId}",
        true,
        false,
    ),
    (
        "delete",
        "/mandate/cancel/{mandateTypeId}/{mandateId}/{userTypeId}/{userId}",
        true,
        true,
    ),
    ("post", "/installments", true, true),
    ("put", "/installments/status/change", true, true),
    ("post", "/installments/status/change", true, true),
    ("get", "/receivables", true, false),
    ("get", "/calendar/holidays", true, false),
    ("post", "/signature", true, true),
    ("get", "/signature/internalId/{internalId}", true, false),
    ("delete", "/signature/cancel", true, true),
    ("get", "/events", true, false),
    ("get", "/events/{eventId}", true, false),
    ("post", "/events/{eventId}/redeliver", true, false),
    ("get", "/ledger", true, false),
    ("get", "/ledger/settlements", true, false),
    ("post", "/ledger/reconciliations", true, true),
    ("get", "/sandbox/payout-report", true, false),
    (
        "post",
        "/sandbox/notifications/{eventId}/redeliver",
        true,
        false,
    ),
    ("get", "/sandbox/notifications/{eventId}", true, false),
    ("get", "/sandbox/notifications/faults", true, false),
    ("put", "/sandbox/notifications/faults", true, true),
    ("get", "/sandbox/clock", true, false),
    ("post", "/sandbox/clock", true, true),
    ("post", "/sandbox/charging/run", true, false),
    (
        "post",
        "/sandbox/mandates/{internalId}/activate",
        true,
        true,
    ),
    (
        "post",
        "/sandbox/installments/{internalId}/outcome",
        true,
        true,
    ),
    ("post", "/sandbox/reset", true, true),
];

const COMMON: [&str; 8] = [
    "country",
    "commerce",
    "channel",
    "requestDateTime",
    "correlationId",
    "processId",
    "salesExecutiveId",
    "x-api-key",
];

async fn document(app: &TestApp) -> Value {
    served(app, "/openapi.json").await
}

/// The staff API's document, served apart (CONTRACT 14).
async fn staff_document(app: &TestApp) -> Value {
    served(app, "/admin/openapi.json").await
}

async fn served(app: &TestApp, path: &str) -> Value {
    let response = app
        .client
        .get(format!("{}{path}", app.base))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    response.json().await.unwrap()
}

#[tokio::test(flavor = "multi_thread")]
async fn the_merchant_and_staff_documents_are_apart() {
    let app = spawn_app().await;
    let merchant = document(&app).await;
    let staff = staff_document(&app).await;
    assert_eq!(staff["servers"][0]["url"], "/admin/api");
    let paths = merchant["paths"].as_object().unwrap();
    assert!(
        paths.values().all(|item| item.get("servers").is_none()),
        "no staff operation in the merchant's document"
    );
    // The merchant's holidays, with its headers, beside the staff's own of the same path.
    let holidays = &merchant["paths"]["/calendar/holidays"]["get"];
    let params: Vec<&str> = holidays["parameters"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["name"].as_str().unwrap())
        .collect();
    assert!(
        params.contains(&"x-api-key") && params.contains(&"year"),
        "{params:?}"
    );
    assert!(staff["paths"]["/calendar/holidays"]["get"].is_object());
    // The cancel reason may come in the query alone: the body is optional.
    let cancel = &merchant["paths"]["/mandate/cancel/{mandateTypeId}/{mandateId}/{userTypeId}/{userId}"]
        ["delete"];
    assert_eq!(cancel["requestBody"]["required"], false);
    // A PDF download is binary, under its media type.
    let pdf = &staff["paths"]["/mandates/{internalId}/document"]["get"]["responses"]["200"]["content"]
        ["application/pdf"]["schema"];
    assert_eq!(
        pdf,
        &serde_json::json!({"type": "string", "format": "binary"})
    );
    // Each document holds what its operations use; the staff's is the UI's.
    assert!(merchant["components"]["schemas"]["AcquirerRequest"].is_null());
    assert!(staff["components"]["schemas"]["AcquirerRequest"].is_object());
}

#[tokio::test(flavor = "multi_thread")]
async fn every_operation_is_documented_with_headers_bodies_and_errors() {
    let app = spawn_app().await;
    let doc = document(&app).await;
    assert_eq!(doc["openapi"], "3.1.0");
    assert_eq!(doc["servers"][0]["url"], "/api/v1");
    for (method, path, common, body) in OPERATIONS {
        let op = &doc["paths"][path][method];
        assert!(
            op.is_object(),
            "{method} {path} is missing from /openapi.json"
        );
        let params: Vec<&str> = op["parameters"]
            .as_array()
            .map(|a| a.iter().map(|p| p["name"].as_str().unwrap()).collect())
            .unwrap_or_default();
        for header in COMMON {
            assert_eq!(
                params.contains(&header),
                *common,
                "{method} {path}: header {header}"
            );
        }
        for segment in path.split('/').filter(|s| s.starts_with('{')) {
            let name = segment.trim_matches(['{', '}']);
            assert!(
                params.contains(&name),
                "{method} {path}: path parameter {name}"
            );
        }
        assert_eq!(
            op["requestBody"].is_object(),
            *body,
            "{method} {path}: request body"
        );
        let responses = op["responses"].as_object().unwrap();
        assert!(
            responses.keys().any(|k| k.starts_with('2')),
            "{method} {path}: a success response"
        );
        assert!(responses.contains_key("500"), "{method} {path}: 500");
        if *common {
            for status in ["400", "403"] {
                assert!(responses.contains_key(status), "{method} {path}: {status}");
            }
        }
        if *body {
            assert!(responses.contains_key("413"), "{method} {path}: 413");
        }
    }
    let merchant: usize = doc["paths"]
        .as_object()
        .unwrap()
        .values()
        .filter(|item| item.get("servers").is_none())
        .map(|item| item.as_object().unwrap().len())
        .sum();
    assert_eq!(
        merchant,
        OPERATIONS.len(),
        "a merchant operation is documented that this test does not know"
    );
}

/// The staff API, documented in the same document under its own server.
const STAFF_OPERATIONS: &[(&str, &str)] = &[
    ("get", "/setup"),
    ("post", "/setup"),
    ("get", "/session"),
    ("post", "/session"),
    ("delete", "/session"),
    ("put", "/session/password"),
    ("get", "/desk/sign-in"),
    ("get", "/notifications"),
    ("get", "/notifications/{eventId}"),
    ("post", "/notifications/{eventId}/verify"),
    ("post", "/notifications/redeliver"),
    ("post", "/commerces/{code}/rotate-secret"),
    ("post", "/commerces/{code}/reveal-secret"),
    ("get", "/charging"),
    ("post", "/charging/run"),
    ("post", "/uf"),
    ("get", "/uf"),
    ("get", "/signatures"),
    ("get", "/signatures/{internalId}"),
    (
        "get",
        "/signatures/{internalId}/documents/{documentId}/{version}",
    ),
    ("get", "/signatures/{internalId}/audit/verify"),
    ("post", "/signatures"),
    ("post", "/signatures/{internalId}/cancel"),
    ("post", "/customers"),
    ("post", "/mandates"),
    ("post", "/charging/clock"),
    // The staff UI's screens.
    ("get", "/dashboard"),
    ("get", "/customers"),
    ("get", "/customers/{internalUserId}"),
    ("get", "/customers/{internalUserId}/payments"),
    ("get", "/past-due"),
    ("get", "/charging/runs/{runId}"),
    ("get", "/mandates"),
    ("get", "/mandates/{internalId}"),
    ("get", "/mandates/{internalId}/document"),
    ("post", "/mandates/{internalId}/payments"),
    ("get", "/payment-evidence/{fileId}"),
    ("get", "/search"),
    ("post", "/mandates/{internalId}/annulments"),
    ("post", "/mandates/{internalId}/installments"),
    ("post", "/mandates/{internalId}/cancel"),
    ("get", "/commerces"),
    ("post", "/commerces"),
    ("put", "/commerces/{code}/retry-policy"),
    ("put", "/commerces/{code}/activation-mode"),
    ("put", "/commerces/{code}/webhook-url"),
    ("get", "/commerces/{code}/acquirers"),
    ("put", "/commerces/{code}/acquirers/{rail}"),
    ("delete", "/commerces/{code}/acquirers/{rail}"),
    ("get", "/commerces/{code}/fees"),
    ("get", "/commerces/{code}/acquirer-calls"),
    ("put", "/commerces/{code}/fees/{methodId}"),
    ("delete", "/commerces/{code}/fees/{methodId}"),
    ("post", "/installments/{internalId}/refund"),
    ("get", "/api-keys"),
    ("post", "/api-keys"),
    ("delete", "/api-keys/{prefix}"),
    ("get", "/environment"),
    ("get", "/trusted-roots"),
    ("post", "/trusted-roots"),
    ("delete", "/trusted-roots/{fingerprint}"),
    ("get", "/staff"),
    ("post", "/staff"),
    ("put", "/staff/{email}"),
    ("post", "/staff/{email}/password-reset"),
    ("get", "/audit/staff"),
    ("get", "/audit/requests"),
    ("get", "/audit/refusals"),
    ("get", "/audit/verify"),
    ("get", "/settings/audit-retention"),
    ("put", "/settings/audit-retention"),
    ("get", "/backups"),
    ("put", "/commerces/{code}/charging-rule"),
    ("get", "/calendar/holidays"),
    ("post", "/calendar/holidays"),
    ("delete", "/calendar/holidays/{date}"),
    ("get", "/ledger-entries"),
    ("get", "/ledger-settlements"),
    ("get", "/ledger-export"),
    ("get", "/ledger-reconciliations"),
    ("post", "/ledger-reconciliations"),
];

#[tokio::test(flavor = "multi_thread")]
async fn the_staff_api_is_documented_under_its_own_server() {
    let app = spawn_app().await;
    let doc = staff_document(&app).await;
    for (method, path) in STAFF_OPERATIONS {
        let item = &doc["paths"][path];
        assert_eq!(item["servers"][0]["url"], "/admin/api", "{path}");
        assert!(
            item[method]["responses"]["500"].is_object(),
            "{method} {path}"
        );
    }
    let staff: usize = doc["paths"]
        .as_object()
        .unwrap()
        .values()
        .filter(|item| item.get("servers").is_some())
        .map(|item| item.as_object().unwrap().len() - 1)
        .sum();
    assert_eq!(
        staff,
        STAFF_OPERATIONS.len(),
        "a staff operation is documented that this test does not know"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn every_documented_operation_is_served() {
    let mut app = spawn_app().await;
    app.login().await;
    let (merchant, staff) = (document(&app).await, staff_document(&app).await);
    let documented = merchant["paths"]
        .as_object()
        .unwrap()
        .iter()
        .chain(staff["paths"].as_object().unwrap());
    for (path, item) in documented {
        let staff = item.get("servers").is_some();
        for method in item.as_object().unwrap().keys().filter(|k| *k != "servers") {
            let concrete = path
                .replace("{mandateTypeId}", "id")
                .replace("{userTypeId}", "userId")
                .replace(['{', '}'], "");
            let method = Method::from_bytes(method.to_uppercase().as_bytes()).unwrap();
            let reply = if staff {
                let url = format!("{}/admin/api{concrete}", app.base);
                let response = app
                    .client
                    .request(method.clone(), url)
                    .send()
                    .await
                    .unwrap();
                let status = response.status();
                let body: serde_json::Value = response.json().await.unwrap_or_default();
                Reply {
                    status,
                    headers: Default::default(),
                    body,
                }
            } else {
                app.request(method.clone(), &concrete, None).await
            };
            assert_ne!(
                reply.name(),
                "ROUTE_NOT_FOUND",
                "{method} {path} is documented but not served"
            );
            assert_ne!(reply.status.as_u16(), 405, "{method} {path}");
        }
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn every_operation_id_is_unique() {
    // Generated clients (the UI's among them) name their functions after operationIds.
    let app = spawn_app().await;
    let (merchant, staff) = (document(&app).await, staff_document(&app).await);
    let mut seen = std::collections::HashSet::new();
    let documented = merchant["paths"]
        .as_object()
        .unwrap()
        .iter()
        .chain(staff["paths"].as_object().unwrap());
    for (path, item) in documented {
        for (method, operation) in item.as_object().unwrap() {
            if method == "servers" {
                continue;
            }
            let id = operation["operationId"].as_str().unwrap_or_default();
            assert!(!id.is_empty(), "{method} {path} has no operationId");
            assert!(seen.insert(id.to_string()), "{method} {path}: {id} repeats");
        }
    }
}

/// A schema of the document, by name.
fn schema<'a>(doc: &'a Value, name: &str) -> &'a Value {
    let schema = &doc["components"]["schemas"][name];
    assert!(schema.is_object(), "schema {name} is missing");
    schema
}

fn required(schema: &Value) -> Vec<&str> {
    schema["required"]
        .as_array()
        .map(|a| a.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default()
}

#[tokio::test(flavor = "multi_thread")]
async fn request_schemas_state_the_rules_the_server_enforces() {
    let app = spawn_app().await;
    let doc = document(&app).await;
    // Required members, not nullable.
    let mandate = schema(&doc, "MandateIn");
    for member in ["id", "type", "name", "charges"] {
        assert!(required(mandate).contains(&member), "MandateIn.{member}");
        let property = &mandate["properties"][member];
        assert!(
            !property.to_string().contains("\"null\""),
            "MandateIn.{member} is required yet nullable: {property}"
        );
    }
    assert_eq!(
        mandate["properties"]["type"]["enum"],
        serde_json::json!(["DYNAMIC", "PERMANENT", "SUBSCRIPTION", "ONEPAY"])
    );
    // Enumerations, bounds, lengths, patterns and formats.
    let charges = schema(&doc, "ChargesIn");
    assert_eq!(
        charges["properties"]["currencyId"]["enum"],
        serde_json::json!(["CLP", "CLF", "USD"])
    );
    assert_eq!(charges["properties"]["count"]["maximum"], 1200);
    assert_eq!(charges["properties"]["startDate"]["format"], "date");
    // An optional member sent as null counts as absent.
    assert_eq!(
        charges["properties"]["count"]["type"],
        serde_json::json!(["integer", "null"])
    );
    let customer = schema(&doc, "CustomerIn");
    assert_eq!(customer["properties"]["userId"]["maxLength"], 64);
    assert!(customer["properties"]["userId"]["pattern"].is_string());
    let number = &schema(&doc, "IdentificationDocumentIn")["properties"]["number"];
    assert!(number["pattern"].is_string(), "the RUT has a pattern");
    let faults = schema(&doc, "FaultsIn");
    for member in ["duplicateEvery", "delaySeconds"] {
        let bounds = &faults["properties"][member];
        assert_eq!(bounds["minimum"], 0, "{member}");
        assert!(
            bounds["maximum"].as_i64().unwrap() < 2_147_483_648,
            "{member}"
        );
    }
    // Exactly one of two alternatives.
    assert_eq!(
        schema(&doc, "CustomerRefIn")["oneOf"]
            .as_array()
            .unwrap()
            .len(),
        2
    );
    // The mandate type decides the members of `charges`.
    assert_eq!(mandate["allOf"].as_array().unwrap().len(), 4);
}

#[tokio::test(flavor = "multi_thread")]
async fn common_headers_have_their_formats_and_enums() {
    let app = spawn_app().await;
    let doc = document(&app).await;
    let op = &doc["paths"]["/mandate"]["post"];
    let header = |name: &str| {
        op["parameters"]
            .as_array()
            .unwrap()
            .iter()
            .find(|p| p["name"] == name)
            .unwrap_or_else(|| panic!("header {name}"))["schema"]
            .clone()
    };
    assert!(header("correlationId")["pattern"].is_string());
    assert!(header("requestDateTime")["pattern"].is_string());
    assert_eq!(header("channel")["maxLength"], 64);
    assert_eq!(header("salesExecutiveId")["maxLength"], 64);
    assert_eq!(header("country")["$ref"], "#/components/schemas/Country");
    assert_eq!(schema(&doc, "Country")["enum"], serde_json::json!(["CL"]));
    assert_eq!(
        schema(&doc, "ProcessId")["enum"],
        serde_json::json!(["HYBRID", "API", "BATCH"])
    );
    // The JWT is the credential; x-api-key is the header parameter it already is.
    assert_eq!(op["security"], serde_json::json!([{"bearer": []}]));
}

#[tokio::test(flavor = "multi_thread")]
async fn responses_carry_every_member_and_webhooks_are_described() {
    let app = spawn_app().await;
    let doc = document(&app).await;
    let installment = schema(&doc, "InstallmentDto");
    for member in [
        "paymentMethodId",
        "authorizationCode",
        "rejection",
        "payment",
    ] {
        assert!(
            required(installment).contains(&member),
            "InstallmentDto.{member} is always present (null when empty)"
        );
    }
    for (webhook, body) in [
        ("payment", "PaymentEvent"),
        ("activation", "ActivationEvent"),
        ("signature", "SignatureEvent"),
    ] {
        let post = &doc["webhooks"][webhook]["post"];
        assert_eq!(
            post["requestBody"]["content"]["application/json"]["schema"]["$ref"],
            format!("#/components/schemas/{body}")
        );
        let headers: Vec<&str> = post["parameters"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| p["name"].as_str().unwrap())
            .collect();
        assert_eq!(
            headers,
            ["webhook-id", "webhook-timestamp", "webhook-signature"]
        );
        let event = schema(&doc, body);
        for member in ["event", "eventId", "createdAt", "sequence", "signature"] {
            assert!(required(event).contains(&member), "{body}.{member}");
        }
    }
}

/// A stored activation event body matches the webhook schema's required members.
#[tokio::test(flavor = "multi_thread")]
async fn an_event_body_has_every_member_its_schema_requires() {
    let mut app = spawn_app().await;
    app.login().await;
    let doc = document(&app).await;
    app.create_customer("cust-001", "12.345.678-5").await;
    let created = app
        .create_mandate(&subscription_body(&app, "cust-001", "GYM-1", 3))
        .await;
    let internal_id = created["mandate"]["internalId"].as_str().unwrap();
    app.post(
        &format!("/sandbox/mandates/{internal_id}/activate"),
        &serde_json::json!({"paymentMethodId": 3,
            "card": {"number": "4242424242424242", "expiry": "12/39", "cvv": "123"}}),
    )
    .await
    .expect(200, "SANDBOX_ACTIVATE_OK");
    let events = app.events_of(internal_id);
    let activation = events
        .iter()
        .find(|e| e["event"] == "activation")
        .expect("an activation event");
    let event_schema = schema(&doc, "ActivationEvent");
    for member in required(event_schema) {
        assert!(
            activation.get(member).is_some(),
            "the activation body lacks {member}: {activation}"
        );
    }
    for member in activation.as_object().unwrap().keys() {
        assert!(
            event_schema["properties"].get(member).is_some(),
            "the activation body has {member}, which ActivationEvent does not describe"
        );
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn fault_numbers_past_their_documented_bounds_are_refused_not_stored() {
    let mut app = spawn_app().await;
    app.login().await;
    // 2^31: past the document's maximum, though it fits the stored u32.
    let reply = app
        .put(
            "/sandbox/notifications/faults",
            &serde_json::json!({"duplicateEvery": 2_147_483_648u64}),
        )
        .await;
    reply.expect(400, "VALIDATION_ERROR");
    assert_eq!(reply.error_fields(), ["duplicateEvery"]);
    let reply = app
        .put(
            "/sandbox/notifications/faults",
            &serde_json::json!({"delaySeconds": -1, "duplicateEvery": 1.5}),
        )
        .await;
    reply.expect(400, "VALIDATION_ERROR");
    assert_eq!(reply.error_fields(), ["duplicateEvery", "delaySeconds"]);
    let stored = app.get("/sandbox/notifications/faults").await;
    stored.expect(200, "SANDBOX_FAULTS_OK");
    assert_eq!(stored.body["payload"]["duplicateEvery"], 0);
    // A JSON integer may carry a zero fraction; the maximum itself is accepted.
    let reply = app
        .put(
            "/sandbox/notifications/faults",
            &serde_json::json!({"duplicateEvery": 1000.0, "delaySeconds": 86400}),
        )
        .await;
    reply.expect(200, "SANDBOX_FAULTS_OK");
    assert_eq!(reply.body["payload"]["duplicateEvery"], 1000);
}

#[tokio::test(flavor = "multi_thread")]
async fn receivable_filters_the_document_forbids_are_refused() {
    let mut app = spawn_app().await;
    app.login().await;
    for (query, field) in [
        ("userId=%C3%97%C2%9B", "query.userId"),
        ("mandateInternalId=man%20x", "query.mandateInternalId"),
        ("dueFrom=", "query.dueFrom"),
        ("state=%201", "query.state"),
    ] {
        let reply = app.get(&format!("/receivables?{query}")).await;
        reply.expect(400, "VALIDATION_ERROR");
        assert_eq!(reply.error_fields(), [field], "{query}");
    }
    app.get("/receivables?userId=cust-001&mandateInternalId=man_01ab&state=1,-99")
        .await
        .expect(200, "RECEIVABLES_OK");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_mandate_made_after_the_sandbox_clock_moved_can_be_activated() {
    let mut app = spawn_app().await;
    app.login().await;
    app.post("/sandbox/clock", &serde_json::json!({"advanceDays": 40}))
        .await
        .expect(200, "SANDBOX_CLOCK_OK");
    app.create_customer("cust-001", "12.345.678-5").await;
    let today = app.get("/sandbox/clock").await.body["payload"]["today"]
        .as_str()
        .unwrap()
        .to_string();
    let mut body = subscription_body(&app, "cust-001", "GYM-1", 3);
    let start =
        chrono::NaiveDate::parse_from_str(&today, "%Y-%m-%d").unwrap() + chrono::Duration::days(7);
    body["mandate"]["charges"]["startDate"] = serde_json::json!(start.to_string());
    let created = app.create_mandate(&body).await;
    let internal_id = created["mandate"]["internalId"].as_str().unwrap();
    // The link lasts 30 days of business time, as activation reads it.
    let expires = created["mandate"]["magicLinkExpiresAt"].as_str().unwrap();
    assert!(expires[..10] > *today.as_str(), "{expires} vs {today}");
    app.post(
        &format!("/sandbox/mandates/{internal_id}/activate"),
        &serde_json::json!({"paymentMethodId": 3,
            "card": {"number": "4242424242424242", "expiry": "12/39", "cvv": "123"}}),
    )
    .await
    .expect(200, "SANDBOX_ACTIVATE_OK");
}

/// A one-page PDF (US Letter) written by hand, with its cross-reference table.
fn one_page_pdf() -> Vec<u8> {
    let objects = [
        "<< /Type /Catalog /Pages 2 0 R >>",
        "<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        "<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] >>",
    ];
    let mut out = String::from("%PDF-1.4\n");
    let mut offsets = Vec::new();
    for (i, body) in objects.iter().enumerate() {
        offsets.push(out.len());
        out.push_str(&format!("{} 0 obj\n{body}\nendobj\n", i + 1));
    }
    let xref = out.len();
    out.push_str("xref\n0 4\n0000000000 65535 f \n");
    for offset in offsets {
        out.push_str(&format!("{offset:010} 00000 n \n"));
    }
    out.push_str(&format!(
        "trailer\n<< /Size 4 /Root 1 0 R >>\nstartxref\n{xref}\n%%EOF\n"
    ));
    out.into_bytes()
}

#[tokio::test(flavor = "multi_thread")]
async fn signature_integers_may_be_written_with_a_zero_fraction() {
    // JSON Schema's `integer` includes 2.0; a client that writes it so is not refused.
    use base64::Engine;
    let mut app = spawn_app().await;
    app.login().await;
    app.create_customer("cust-001", "12.345.678-5").await;
    let pdf = base64::engine::general_purpose::STANDARD.encode(one_page_pdf());
    let body = serde_json::json!({
        "process": {"processName": "Contrato", "expirationDays": 2.0},
        "signatories": [{"userId": "cust-001", "order": 1.0, "type": "FES"}],
        "documents": [{"documentName": "contrato.pdf", "contentBase64": pdf,
            "signatureData": [{"signatory": {"userId": "cust-001"}, "mode": "MANUAL",
                               "page": 1.0, "x": 72, "y": 72, "width": 180, "height": 50}]}],
        "urls": {"callback": "https://merchant.example/done",
                 "webhook": "https://merchant.example/hooks/signature"}
    });
    app.post("/signature", &body)
        .await
        .expect(201, "SIGNATURE_CREATE_OK");
}

#[tokio::test(flavor = "multi_thread")]
async fn every_request_example_is_accepted_in_order() {
    let mut app = spawn_app().await;
    app.login().await;
    app.create_customer("cust-001", "12.345.678-5").await;
    let doc = document(&app).await;
    let examples = |method: &str, path: &str| -> Vec<(String, Value)> {
        doc["paths"][path][method]["requestBody"]["content"]["application/json"]["examples"]
            .as_object()
            .unwrap_or_else(|| panic!("{method} {path} has examples"))
            .iter()
            .map(|(name, e)| (name.clone(), e["value"].clone()))
            .collect()
    };
    let mandates = examples("post", "/mandate");
    let names: Vec<&str> = mandates.iter().map(|(n, _)| n.as_str()).collect();
    for kind in ["dynamic", "subscription", "permanent", "onepay"] {
        assert!(names.contains(&kind), "{names:?}");
    }
    let mut dynamic = String::new();
    for (name, body) in &mandates {
        let reply = app.post("/mandate", body).await;
        reply.expect(201, "MANDATE_CREATE_OK");
        if name == "dynamic" {
            dynamic = reply.body["payload"]["mandate"]["internalId"]
                .as_str()
                .unwrap()
                .to_string();
        }
    }
    for (_, body) in examples("post", "/installments") {
        app.post("/installments", &body)
            .await
            .expect(201, "INSTALLMENTS_CREATE_OK");
    }
    for (_, body) in examples("put", "/installments/status/change") {
        app.put("/installments/status/change", &body)
            .await
            .expect(200, "INSTALLMENTS_STATUS_CHANGE_OK");
    }
    for (_, body) in examples("post", "/sandbox/mandates/{internalId}/activate") {
        app.post(&format!("/sandbox/mandates/{dynamic}/activate"), &body)
            .await
            .expect(200, "SANDBOX_ACTIVATE_OK");
    }
    for (_, body) in examples("post", "/signature") {
        app.post("/signature", &body)
            .await
            .expect(201, "SIGNATURE_CREATE_OK");
    }
    let _ = &mut app;
}
