//! The success envelope: `{"statusCode", "name", "message", "payload"}` (CONTRACT 3).

use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde::Serialize;
use utoipa::ToSchema;

#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Envelope<T> {
    pub status_code: u16,
    pub name: &'static str,
    pub message: &'static str,
    pub payload: T,
}

impl<T: Serialize> Envelope<T> {
    pub fn ok(name: &'static str, message: &'static str, payload: T) -> Self {
        Envelope {
            status_code: 200,
            name,
            message,
            payload,
        }
    }

    pub fn created(name: &'static str, message: &'static str, payload: T) -> Self {
        Envelope {
            status_code: 201,
            name,
            message,
            payload,
        }
    }
}

/// The first allocation for an answer's body: a mandate with twelve installments is about 5 KB.
const BODY_CAPACITY: usize = 8 * 1024;

impl<T: Serialize> IntoResponse for Envelope<T> {
    fn into_response(self) -> Response {
        let status = StatusCode::from_u16(self.status_code).unwrap_or(StatusCode::OK);
        // One buffer sized for a mandate with a year of installments. axum's `Json` starts at
        // 128 bytes and writes each fragment through `BytesMut`'s writer: in the lookup profile
        // that bookkeeping and its regrowth were a third of the serialisation's cost.
        let mut body = Vec::with_capacity(BODY_CAPACITY);
        match serde_json::to_writer(&mut body, &self) {
            Ok(()) => (
                status,
                [(
                    header::CONTENT_TYPE,
                    HeaderValue::from_static("application/json"),
                )],
                body,
            )
                .into_response(),
            Err(e) => super::error::ApiError(mandato_core::error::Error::Internal(e.into()))
                .into_response(),
        }
    }
}

/// An empty payload, written `{}`.
#[derive(Debug, Serialize, ToSchema)]
pub struct Empty {}
