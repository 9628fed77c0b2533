//! The `Authorization: Bearer <JWT>` check of every operation but login and the helpers.

use std::sync::Arc;

use axum::extract::FromRequestParts;
use axum::http::request::Parts;

use super::AppState;
use super::common::MerchantRequest;
use super::error::ApiError;
use mandato_core::auth::jwt::JwtError;
use mandato_core::error::Error;
use mandato_engine::records::Commerce;

/// A request whose headers, API key and JWT were all accepted, for the commerce of both.
pub struct Authed {
    pub commerce: Arc<Commerce>,
}

impl FromRequestParts<AppState> for Authed {
    type Rejection = ApiError;

    async fn from_request_parts(
        parts: &mut Parts,
        state: &AppState,
    ) -> Result<Self, Self::Rejection> {
        let merchant = merchant(parts)?;
        let token = parts
            .headers
            .get(axum::http::header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| {
                v.strip_prefix("Bearer ")
                    .or_else(|| v.strip_prefix("bearer "))
            })
            .map(str::trim)
            .ok_or_else(|| {
                Error::forbidden(
                    "MISSING_TOKEN",
                    "send the login token as Authorization: Bearer <JWT>",
                )
            })?;
        let claims = state
            .keys
            .jwt
            .verify(token, state.config.environment.as_str(), state.clock.now())
            .map_err(|e| match e {
                // Checked only once the signature verified: the token is ours, and its time
                // is up (CONTRACT 14).
                JwtError::Expired => Error::forbidden(
                    "TOKEN_EXPIRED",
                    "the token expired; log in again for a new one",
                ),
                _ => Error::forbidden("INVALID_TOKEN", "the token is not valid; log in again"),
            })?;
        if claims.sub != merchant.commerce.code {
            return Err(Error::forbidden(
                "COMMERCE_MISMATCH",
                "the token was issued to another commerce",
            )
            .into());
        }
        Ok(Authed {
            commerce: merchant.commerce,
        })
    }
}

/// What the common-headers layer established; its absence is a wiring fault.
pub fn merchant(parts: &Parts) -> Result<MerchantRequest, ApiError> {
    parts
        .extensions
        .get::<MerchantRequest>()
        .cloned()
        .ok_or_else(|| {
            ApiError(Error::Internal(anyhow::anyhow!(
                "route is missing the common-headers layer"
            )))
        })
}

/// The `MerchantRequest` as an extractor, for login and the helpers that take no JWT.
impl FromRequestParts<AppState> for MerchantRequest {
    type Rejection = ApiError;

    async fn from_request_parts(
        parts: &mut Parts,
        _state: &AppState,
    ) -> Result<Self, Self::Rejection> {
        merchant(parts)
    }
}
