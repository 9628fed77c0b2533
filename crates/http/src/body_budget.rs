//! Memory for request bodies in flight, bounded whatever the concurrency (SECURITY.md, "What is
//! refused, and the limits").
//!
//! Each route caps its own body (16 MiB for `POST /api/v1/signature`, 8 MiB for a staff manual
//! payment with its evidence file, 1 MiB by default, 16 KiB on the routes anyone may call
//! unauthenticated: sign-in, setup, the JWE helper), but many
//! requests at once could still hold many bodies: forty 14 MiB uploads took 900 MB. So a
//! request with a body reserves twice its size (the bytes, and what parsing them into values
//! costs beside them) from one budget for the whole process, before the body is read, and
//! gives it back with its answer. A request that finds the budget spent waits for it, at most
//! [`WAIT`], then is answered 503 `SERVICE_BUSY` with `Retry-After`: memory stays bounded, and
//! the requests that do run run at full speed.
//!
//! A body declared larger than its route allows reserves nothing: the route refuses it (413)
//! before reading it. A chunked body (no `Content-Length`) reserves its route's whole limit.

use std::time::Duration;

use axum::extract::Request;
use axum::http::{Method, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use tokio::sync::Semaphore;

use mandato_core::error::{Error, SERVICE_BUSY};

use super::error::ApiError;

/// The bytes request bodies may hold at once, reservations included (twice each body).
pub const BUDGET_BYTES: usize = 160 * 1024 * 1024;
/// The budget counts in KiB: a semaphore's permits are `u32`, and no body needs finer.
const UNIT: usize = 1024;
/// How long a request waits for its reservation before it is answered 503.
pub const WAIT: Duration = Duration::from_secs(10);
/// The body cap of the routes anyone may call without credentials.
pub const SMALL_BODY: usize = 16 * 1024;
/// The body cap of a staff member's manual payment, which may carry its evidence file (at most
/// 5 MiB, in base64 a third more) beside the payment's few fields.
pub const EVIDENCE_BODY: usize = 8 * 1024 * 1024;

static BUDGET: Semaphore = Semaphore::const_new(BUDGET_BYTES / UNIT);

/// The body limit of the route a request goes to, as the router's layers set it.
fn route_limit(request: &Request) -> usize {
    let path = request.uri().path();
    if path == "/api/v1/signature" || path == "/admin/api/signatures" {
        mandato_core::signature::BODY_LIMIT
    } else if is_small_body_route(path) {
        SMALL_BODY
    } else if is_evidence_route(path) {
        EVIDENCE_BODY
    } else {
        1024 * 1024
    }
}

/// The unauthenticated routes that take a body, each capped at [`SMALL_BODY`].
pub fn is_small_body_route(path: &str) -> bool {
    matches!(
        path,
        "/api/v1/login" | "/api/v1/jwe/encrypt" | "/admin/api/session" | "/admin/api/setup"
    )
}

/// `/admin/api/mandates/{internalId}/payments`, the one staff route whose body may hold a file.
pub fn is_evidence_route(path: &str) -> bool {
    path.strip_prefix("/admin/api/mandates/")
        .and_then(|rest| rest.strip_suffix("/payments"))
        .is_some_and(|id| !id.is_empty() && !id.contains('/'))
}

/// A route with [`EVIDENCE_BODY`] as its body cap instead of the listener's 1 MiB.
pub fn evidence_body(
    route: utoipa_axum::router::UtoipaMethodRouter<crate::AppState>,
) -> utoipa_axum::router::UtoipaMethodRouter<crate::AppState> {
    use utoipa_axum::router::UtoipaMethodRouterExt;
    route.layer(axum::extract::DefaultBodyLimit::max(EVIDENCE_BODY))
}

/// What a request's body reserves: `None` for none (no body, or one its route refuses).
fn reservation(request: &Request) -> Option<u32> {
    if matches!(
        *request.method(),
        Method::GET | Method::HEAD | Method::OPTIONS
    ) {
        return None;
    }
    let limit = route_limit(request);
    let declared = match request.headers().get(header::CONTENT_LENGTH) {
        Some(value) => value.to_str().ok()?.trim().parse::<usize>().ok()?,
        None if request.headers().contains_key(header::TRANSFER_ENCODING) => limit,
        None => return None,
    };
    if declared == 0 || declared > limit {
        return None;
    }
    let bytes = (declared * 2).min(BUDGET_BYTES);
    u32::try_from(bytes.div_ceil(UNIT)).ok()
}

/// The layer: reserves, runs the request, gives the reservation back with the answer.
pub async fn layer(request: Request, next: Next) -> Response {
    let Some(units) = reservation(&request) else {
        return next.run(request).await;
    };
    match tokio::time::timeout(WAIT, BUDGET.acquire_many(units)).await {
        Ok(Ok(reserved)) => {
            let response = next.run(request).await;
            drop(reserved);
            response
        }
        _ => {
            tracing::warn!(
                bytes = units as usize * UNIT,
                "request refused: the memory for request bodies stayed spent for 10 s"
            );
            ApiError(Error::Unavailable {
                name: SERVICE_BUSY,
                message: "too many large requests are being received; try again shortly".into(),
                retry_after_secs: 5,
            })
            .into_response()
        }
    }
}

/// The budget left, in bytes (for tests).
pub fn available_bytes() -> usize {
    BUDGET.available_permits() * UNIT
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(method: Method, path: &str, headers: &[(&str, &str)]) -> Request {
        let mut builder = axum::http::Request::builder().method(method).uri(path);
        for (name, value) in headers {
            builder = builder.header(*name, *value);
        }
        builder.body(axum::body::Body::empty()).unwrap()
    }

    #[test]
    fn a_body_reserves_twice_its_size_within_its_routes_limit() {
        let post =
            |path, headers: &[(&str, &str)]| reservation(&request(Method::POST, path, headers));
        assert_eq!(
            post("/api/v1/mandate", &[("content-length", "10240")]),
            Some(20)
        );
        assert_eq!(post("/api/v1/mandate", &[("content-length", "0")]), None);
        assert_eq!(post("/api/v1/mandate", &[]), None);
        // Beyond the route's limit: refused by the route (413) without reading, so nothing.
        assert_eq!(
            post("/api/v1/mandate", &[("content-length", "2097152")]),
            None
        );
        assert_eq!(
            post("/api/v1/signature", &[("content-length", "14680064")]),
            Some(28 * 1024)
        );
        assert_eq!(
            post("/admin/api/session", &[("content-length", "1048576")]),
            None
        );
        // A manual payment may carry its evidence file: up to 8 MiB, no more.
        assert_eq!(
            post(
                "/admin/api/mandates/man_1/payments",
                &[("content-length", "7340032")]
            ),
            Some(14 * 1024)
        );
        assert_eq!(
            post(
                "/admin/api/mandates/man_1/payments",
                &[("content-length", "9437184")]
            ),
            None
        );
        assert_eq!(
            post(
                "/admin/api/mandates/man_1/annulments",
                &[("content-length", "2097152")]
            ),
            None
        );
        assert_eq!(
            post("/admin/api/session", &[("transfer-encoding", "chunked")]),
            Some(32)
        );
        assert_eq!(
            post("/api/v1/user", &[("transfer-encoding", "chunked")]),
            Some(2048)
        );
        assert_eq!(
            reservation(&request(
                Method::GET,
                "/api/v1/mandate/id/x",
                &[("content-length", "5")]
            )),
            None
        );
    }
}
