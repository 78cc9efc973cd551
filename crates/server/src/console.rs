//! `GET /console` and its files ([`crate::console_assets`]): the web console, served from the
//! binary with a strict Content-Security-Policy (scripts, styles and connections to this origin
//! only, no inline script or style, never framed). The console signs in with an API key kept in
//! the tab's `sessionStorage` and calls the public and admin API like any client (a bearer key in
//! `Authorization`, never a cookie): the page itself needs no key.

use axum::http::header::{
    CACHE_CONTROL, CONTENT_SECURITY_POLICY, CONTENT_TYPE, REFERRER_POLICY, X_CONTENT_TYPE_OPTIONS,
    X_FRAME_OPTIONS,
};
use axum::http::{HeaderValue, Uri};
use axum::response::{IntoResponse, Response};

use crate::console_assets;
use crate::error::ApiError;

/// The policy every console answer carries.
pub const CONTENT_SECURITY_POLICY_VALUE: &str = "default-src 'self'; script-src 'self'; \
     style-src 'self'; img-src 'self' data:; connect-src 'self'; font-src 'self'; \
     object-src 'none'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

/// Serves the file the route names.
pub async fn serve(uri: Uri) -> Result<Response, ApiError> {
    let Some(asset) = console_assets::find(uri.path()) else {
        return Err(ApiError::NotFound("no such route".to_owned()));
    };
    Ok((
        [
            (CONTENT_TYPE, HeaderValue::from_static(asset.content_type)),
            (
                CONTENT_SECURITY_POLICY,
                HeaderValue::from_static(CONTENT_SECURITY_POLICY_VALUE),
            ),
            (X_CONTENT_TYPE_OPTIONS, HeaderValue::from_static("nosniff")),
            (X_FRAME_OPTIONS, HeaderValue::from_static("DENY")),
            (REFERRER_POLICY, HeaderValue::from_static("no-referrer")),
            (CACHE_CONTROL, HeaderValue::from_static("no-cache")),
        ],
        asset.body,
    )
        .into_response())
}
