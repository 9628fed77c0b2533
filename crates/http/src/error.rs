//! The wire form of failures (CONTRACT 3). Every error body carries the request's
//! correlationId, read from the task-local the common-headers layer sets for the request.

use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde::Serialize;
use utoipa::ToSchema;

use mandato_core::error::{Error, FieldError};

tokio::task_local! {
    /// The correlationId of the request being served, when it sent a valid one.
    pub static CORRELATION_ID: Option<String>;
}

pub fn current_correlation_id() -> Option<String> {
    CORRELATION_ID.try_with(|c| c.clone()).ok().flatten()
}

/// `{"statusCode", "name", "message", "correlationId", "errors"}`.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ErrorBody {
    pub status_code: u16,
    pub name: String,
    pub message: String,
    pub correlation_id: Option<String>,
    pub errors: Vec<FieldError>,
}

/// An operation's failure on its way to the client.
#[derive(Debug)]
pub struct ApiError(pub Error);

impl From<Error> for ApiError {
    fn from(e: Error) -> Self {
        ApiError(e)
    }
}

impl ApiError {
    /// See [`Error::located`].
    pub fn located(self, field: &str, value: &str) -> Self {
        ApiError(self.0.located(field, value))
    }

    pub fn status(&self) -> StatusCode {
        match &self.0 {
            Error::Validation(_) | Error::Refused { .. } => StatusCode::BAD_REQUEST,
            Error::Forbidden { .. } => StatusCode::FORBIDDEN,
            Error::Unauthenticated { .. } => StatusCode::UNAUTHORIZED,
            Error::NotFound { .. } => StatusCode::NOT_FOUND,
            Error::Gone { .. } => StatusCode::GONE,
            Error::NotAcceptable { .. } => StatusCode::NOT_ACCEPTABLE,
            Error::Unavailable { .. } => StatusCode::SERVICE_UNAVAILABLE,
            Error::Internal(_) => StatusCode::INTERNAL_SERVER_ERROR,
        }
    }

    pub fn body(&self) -> ErrorBody {
        let (name, message, errors) = match &self.0 {
            Error::Validation(errors) => (
                "VALIDATION_ERROR".to_string(),
                summary(errors),
                errors.clone(),
            ),
            Error::Refused {
                name,
                message,
                field,
            } => {
                let errors = field
                    .iter()
                    .map(|f| FieldError::new(f.clone(), name, message.clone()))
                    .collect();
                (name.to_string(), message.clone(), errors)
            }
            Error::Forbidden { name, message }
            | Error::Gone { name, message }
            | Error::Unavailable { name, message, .. } => {
                (name.to_string(), message.clone(), Vec::new())
            }
            Error::Unauthenticated { message } => {
                ("SESSION_REQUIRED".to_string(), message.clone(), Vec::new())
            }
            Error::NotAcceptable { message } => {
                ("NOT_ACCEPTABLE".to_string(), message.clone(), Vec::new())
            }
            Error::NotFound { what, at } => {
                let name = format!("{}_NOT_FOUND", what.to_uppercase().replace(' ', "_"));
                let located = at.iter().map(|(field, value)| FieldError {
                    value: Some(value.clone()),
                    ..FieldError::new(field, &name, format!("no {what} for {field} {value}"))
                });
                (name.clone(), format!("{what} not found"), located.collect())
            }
            Error::Internal(_) => (
                "INTERNAL_ERROR".to_string(),
                "the request could not be completed; quote the correlationId to support"
                    .to_string(),
                Vec::new(),
            ),
        };
        ErrorBody {
            status_code: self.status().as_u16(),
            name,
            message,
            correlation_id: current_correlation_id(),
            errors,
        }
    }
}

fn summary(errors: &[FieldError]) -> String {
    let fields: Vec<&str> = errors.iter().map(|e| e.field.as_str()).collect();
    format!("the request has invalid fields: {}", fields.join(", "))
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        if let Error::Internal(e) = &self.0 {
            tracing::error!(error = %e, correlation_id = ?current_correlation_id(), "request failed");
        }
        let mut response = (self.status(), axum::Json(self.body())).into_response();
        if let Error::Unavailable {
            retry_after_secs, ..
        } = &self.0
        {
            response.headers_mut().insert(
                axum::http::header::RETRY_AFTER,
                axum::http::HeaderValue::from(*retry_after_secs),
            );
        }
        response
    }
}

pub type ApiResult<T> = Result<T, ApiError>;
