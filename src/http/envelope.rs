//! The success envelope: `{"statusCode", "name", "message", "payload"}` (CONTRACT 3).

use axum::http::StatusCode;
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

impl<T: Serialize> IntoResponse for Envelope<T> {
    fn into_response(self) -> Response {
        let status = StatusCode::from_u16(self.status_code).unwrap_or(StatusCode::OK);
        (status, axum::Json(self)).into_response()
    }
}

/// An empty payload, written `{}`.
#[derive(Debug, Serialize, ToSchema)]
pub struct Empty {}
