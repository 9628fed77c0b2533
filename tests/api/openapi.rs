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
    ("post", "/signature", true, true),
    ("get", "/signature/internalId/{internalId}", true, false),
    ("delete", "/signature/cancel", true, true),
    ("get", "/events", true, false),
    ("get", "/events/{eventId}", true, false),
    ("post", "/events/{eventId}/redeliver", true, false),
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
    let response = app
        .client
        .get(format!("{}/openapi.json", app.base))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    response.json().await.unwrap()
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
    ("get", "/desk/sign-in"),
    ("get", "/notifications"),
    ("get", "/notifications/{eventId}"),
    ("post", "/notifications/redeliver"),
    ("post", "/commerces/{code}/rotate-secret"),
    ("get", "/charging"),
    ("post", "/charging/run"),
    ("post", "/uf"),
    ("get", "/signatures"),
    ("get", "/signatures/{internalId}"),
    (
        "get",
        "/signatures/{internalId}/documents/{documentId}/{version}",
    ),
    ("post", "/charging/clock"),
    // The staff UI's screens.
    ("get", "/dashboard"),
    ("get", "/customers"),
    ("get", "/customers/{internalUserId}"),
    ("get", "/mandates"),
    ("get", "/mandates/{internalId}"),
    ("post", "/mandates/{internalId}/payments"),
    ("post", "/mandates/{internalId}/annulments"),
    ("post", "/mandates/{internalId}/installments"),
    ("post", "/mandates/{internalId}/cancel"),
    ("get", "/commerces"),
    ("post", "/commerces"),
    ("put", "/commerces/{code}/retry-policy"),
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
    ("get", "/audit/staff"),
    ("get", "/audit/requests"),
    ("get", "/audit/refusals"),
    ("get", "/settings/audit-retention"),
    ("put", "/settings/audit-retention"),
    ("get", "/backups"),
];

#[tokio::test(flavor = "multi_thread")]
async fn the_staff_api_is_documented_under_its_own_server() {
    let app = spawn_app().await;
    let doc = document(&app).await;
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
    let doc = document(&app).await;
    for (path, item) in doc["paths"].as_object().unwrap() {
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
    let doc = document(&app).await;
    let mut seen = std::collections::HashSet::new();
    for (path, item) in doc["paths"].as_object().unwrap() {
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
