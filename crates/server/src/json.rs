//! The strict JSON body extractor: size limit (413) and path-aware parse errors (400).

use axum::body::Body;
use axum::extract::{FromRequest, Request};
use axum::http::header::CONTENT_LENGTH;
use protocol::request::CreateRequest;

use crate::error::ApiError;

/// The largest request body accepted (32 MiB, spec §2).
pub const MAX_BODY_BYTES: usize = 32 * 1024 * 1024;

/// A create request parsed strictly.
pub struct StrictRequest(pub CreateRequest);

impl<S: Send + Sync> FromRequest<S> for StrictRequest {
    type Rejection = ApiError;

    async fn from_request(req: Request, _state: &S) -> Result<Self, Self::Rejection> {
        let declared = req
            .headers()
            .get(CONTENT_LENGTH)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.parse::<u64>().ok());
        if declared.is_some_and(|len| len > MAX_BODY_BYTES as u64) {
            return Err(ApiError::PayloadTooLarge {
                limit: MAX_BODY_BYTES,
            });
        }
        let body: Body = req.into_body();
        let bytes = axum::body::to_bytes(body, MAX_BODY_BYTES)
            .await
            .map_err(|_| ApiError::PayloadTooLarge {
                limit: MAX_BODY_BYTES,
            })?;
        Ok(StrictRequest(CreateRequest::parse(&bytes)?))
    }
}
