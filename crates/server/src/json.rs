//! The strict JSON body extractor: a JSON content type (415), the size limit (413), the body
//! timeout (408), path-aware parse errors and the operator's request limits (400); the same
//! for the other JSON bodies ([`StrictJson`]: conversations, items, compact).

use axum::body::Body;
use axum::extract::{FromRequest, Request};
use axum::http::HeaderMap;
use axum::http::header::{CONTENT_LENGTH, CONTENT_TYPE};
use bytes::Bytes;
use protocol::request::CreateRequest;
use serde::de::DeserializeOwned;

use crate::error::ApiError;
use crate::state::AppState;

/// The largest request body accepted (32 MiB, spec §2).
pub const MAX_BODY_BYTES: usize = 32 * 1024 * 1024;

/// A create request parsed strictly.
pub struct StrictRequest(pub CreateRequest);

impl FromRequest<AppState> for StrictRequest {
    type Rejection = ApiError;

    async fn from_request(req: Request, state: &AppState) -> Result<Self, Self::Rejection> {
        let settings = state.requests;
        let bytes = read_body(req, state).await?;
        // Far too many tools in a large body are refused before they are built (each costs
        // memory).
        let request = CreateRequest::parse_within(&bytes, &settings.limits)?;
        Ok(StrictRequest(request))
    }
}

/// Any other JSON body, parsed strictly (unknown fields and wrong types name the field path);
/// an empty body reads as `{}`.
pub struct StrictJson<T>(pub T);

impl<T: DeserializeOwned> FromRequest<AppState> for StrictJson<T> {
    type Rejection = ApiError;

    async fn from_request(req: Request, state: &AppState) -> Result<Self, Self::Rejection> {
        let bytes = read_body(req, state).await?;
        let bytes: &[u8] = if bytes.iter().all(u8::is_ascii_whitespace) {
            b"{}"
        } else {
            &bytes
        };
        Ok(StrictJson(protocol::parse_json(bytes)?))
    }
}

/// The body of a JSON request: its content type checked (415), within the size limit (413)
/// and the body timeout (408).
async fn read_body(req: Request, state: &AppState) -> Result<Bytes, ApiError> {
    check_content_type(req.headers())?;
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
    let settings = state.requests;
    let body: Body = req.into_body();
    tokio::time::timeout(
        settings.body_timeout,
        axum::body::to_bytes(body, MAX_BODY_BYTES),
    )
    .await
    .map_err(|_| ApiError::RequestTimeout {
        seconds: settings.body_timeout.as_secs(),
    })?
    .map_err(|_| ApiError::PayloadTooLarge {
        limit: MAX_BODY_BYTES,
    })
}

/// A body without `Content-Type` is read as JSON; one with another type than JSON
/// (`application/json`, `…+json`) is refused. A web page can send `text/plain`, form and
/// multipart bodies to any origin without asking first; JSON it cannot.
pub(crate) fn check_content_type(headers: &HeaderMap) -> Result<(), ApiError> {
    let Some(value) = headers.get(CONTENT_TYPE) else {
        return Ok(());
    };
    let essence = value
        .to_str()
        .unwrap_or_default()
        .split(';')
        .next()
        .unwrap_or_default()
        .trim()
        .to_ascii_lowercase();
    let is_json = essence == "application/json"
        || essence
            .strip_prefix("application/")
            .is_some_and(|subtype| subtype.ends_with("+json"));
    if is_json {
        Ok(())
    } else {
        Err(ApiError::UnsupportedMediaType(format!(
            "the body must be JSON: send Content-Type: application/json (got {essence:?})"
        )))
    }
}
