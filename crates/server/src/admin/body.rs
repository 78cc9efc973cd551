//! The admin API's JSON body: a JSON content type (415), at most 1 MiB (413), the body timeout
//! (408), strict parsing naming the field (400) without ever quoting a secret value.

use axum::extract::{FromRequest, Request};
use serde::de::DeserializeOwned;

use crate::error::ApiError;
use crate::state::AppState;

/// The largest admin body.
const MAX_ADMIN_BODY: usize = 1024 * 1024;

pub struct AdminBody<T>(pub T);

impl<T: DeserializeOwned> FromRequest<AppState> for AdminBody<T> {
    type Rejection = ApiError;

    async fn from_request(req: Request, state: &AppState) -> Result<Self, ApiError> {
        crate::json::check_content_type(req.headers())?;
        let timeout = state.requests.body_timeout;
        let bytes = tokio::time::timeout(
            timeout,
            axum::body::to_bytes(req.into_body(), MAX_ADMIN_BODY),
        )
        .await
        .map_err(|_| ApiError::RequestTimeout {
            seconds: timeout.as_secs(),
        })?
        .map_err(|_| ApiError::PayloadTooLarge {
            limit: MAX_ADMIN_BODY,
        })?;
        Ok(AdminBody(protocol::admin::parse(&bytes)?))
    }
}
