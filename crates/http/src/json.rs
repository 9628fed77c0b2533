//! Request bodies: not JSON, or JSON that is not an object, is a 400 at `body`; JSON of the
//! wrong shape a 400 at the path of the first problem; never a 500. Unknown fields are ignored.

use axum::body::Bytes;
use axum::extract::{FromRequest, Request};
use serde::de::DeserializeOwned;
use sha2::{Digest, Sha256};

use super::error::ApiError;
use mandato_core::error::Error;

pub struct Body<T>(pub T);

impl<S: Send + Sync, T: DeserializeOwned> FromRequest<S> for Body<T> {
    type Rejection = axum::response::Response;

    async fn from_request(req: Request, state: &S) -> Result<Self, Self::Rejection> {
        let bytes = read(req, state).await?;
        parse(&bytes).map(Body).map_err(refusal)
    }
}

/// A body and the lowercase hex SHA-256 of its canonical JSON (RFC 8785, `jcs`): equal
/// requests whatever their members' order and whitespace, for the creations that an equal
/// request repeats (`replay.rs`).
pub struct HashedBody<T>(pub T, pub String);

impl<S: Send + Sync, T: DeserializeOwned> FromRequest<S> for HashedBody<T> {
    type Rejection = axum::response::Response;

    async fn from_request(req: Request, state: &S) -> Result<Self, Self::Rejection> {
        let bytes = read(req, state).await?;
        let value = parse_object(&bytes).map_err(refusal)?;
        let canonical = mandato_core::jcs::canonicalize(&value);
        let sha256 = hex::encode(Sha256::digest(canonical.as_bytes()));
        let body = deserialize(value).map_err(refusal)?;
        Ok(HashedBody(body, sha256))
    }
}

async fn read<S: Send + Sync>(req: Request, state: &S) -> Result<Bytes, axum::response::Response> {
    use axum::response::IntoResponse;
    Bytes::from_request(req, state).await.map_err(|rejection| {
        if rejection.status() == axum::http::StatusCode::PAYLOAD_TOO_LARGE {
            too_large()
        } else {
            ApiError(Error::validation(
                "body",
                "UNREADABLE_BODY",
                rejection.body_text(),
            ))
            .into_response()
        }
    })
}

fn refusal(error: Error) -> axum::response::Response {
    use axum::response::IntoResponse;
    ApiError(error).into_response()
}

/// Parses a body, naming where it went wrong.
pub fn parse<T: DeserializeOwned>(bytes: &[u8]) -> Result<T, Error> {
    deserialize(parse_object(bytes)?)
}

/// The body as JSON, which must be an object.
fn parse_object(bytes: &[u8]) -> Result<serde_json::Value, Error> {
    let value: serde_json::Value = serde_json::from_slice(bytes).map_err(|e| {
        Error::validation(
            "body",
            "INVALID_JSON",
            format!("the body is not valid JSON: {e}"),
        )
    })?;
    // Every body of this API is an object. serde would otherwise read a struct from an array of
    // its fields in order, so `[]` passed as an empty object for a body whose members all have
    // defaults.
    if !value.is_object() {
        return Err(Error::validation(
            "body",
            "INVALID_TYPE",
            "the body must be a JSON object",
        ));
    }
    Ok(value)
}

/// The body's shape, naming the path of the first problem.
fn deserialize<T: DeserializeOwned>(value: serde_json::Value) -> Result<T, Error> {
    serde_path_to_error::deserialize(value).map_err(|e| {
        let path = e.path().to_string();
        let field = if path == "." {
            "body".to_string()
        } else {
            path
        };
        Error::validation(field, "INVALID_TYPE", e.inner().to_string())
    })
}

fn too_large() -> axum::response::Response {
    use axum::response::IntoResponse;
    let body = super::error::ErrorBody {
        status_code: 413,
        name: "PAYLOAD_TOO_LARGE".into(),
        message: "the body is larger than this operation accepts".into(),
        correlation_id: super::error::current_correlation_id(),
        errors: Vec::new(),
    };
    (axum::http::StatusCode::PAYLOAD_TOO_LARGE, axum::Json(body)).into_response()
}

#[cfg(test)]
mod tests {
    use super::parse;

    #[derive(Debug, serde::Deserialize)]
    struct Defaults {
        #[serde(default)]
        _reorder: bool,
    }

    #[test]
    fn only_an_object_is_a_body() {
        for text in ["[]", "[true]", "1", "\"x\"", "null"] {
            match parse::<Defaults>(text.as_bytes()) {
                Err(mandato_core::error::Error::Validation(errors)) => {
                    assert_eq!(errors.len(), 1, "{text}");
                    assert_eq!(errors[0].field, "body", "{text}");
                    assert_eq!(errors[0].code, "INVALID_TYPE", "{text}");
                }
                other => panic!("{text}: {other:?}"),
            }
        }
        assert!(parse::<Defaults>(b"{}").is_ok());
    }
}
