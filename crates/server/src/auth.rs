//! Authentication as an extractor: a handler that takes [`Project`] cannot forget it.
//!
//! With keys in the store, `Authorization: Bearer KEY` must name one; it selects the project.
//! With no key at all the server is in open mode (allowed only on loopback, checked at start):
//! every request belongs to the `default` project, and requests from web pages are refused
//! before they get here (`crate::web_guard`).

use axum::extract::FromRequestParts;
use axum::http::header::AUTHORIZATION;
use axum::http::request::Parts;

use crate::error::ApiError;
use crate::state::AppState;
use crate::web_guard::OpenModeChecked;

/// The project the request acts for.
#[derive(Debug, Clone)]
pub struct Project(pub String);

/// Who the request is: key, project and role (the admin routes take this).
#[derive(Debug, Clone)]
pub struct Key(pub engine::Caller);

impl FromRequestParts<AppState> for Key {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self, ApiError> {
        state
            .auth
            .caller_for(&state.engine, bearer(parts), checked_open(parts))
            .await
            .map(Key)
    }
}

/// Whether the server is in open mode, if the web guard already checked it for this request.
fn checked_open(parts: &Parts) -> Option<bool> {
    parts
        .extensions
        .get::<OpenModeChecked>()
        .map(|checked| checked.0)
}

/// The bearer key of a request, if any.
fn bearer(parts: &Parts) -> Option<&str> {
    parts
        .headers
        .get(AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| {
            v.strip_prefix("Bearer ")
                .or_else(|| v.strip_prefix("bearer "))
        })
        .map(str::trim)
        .filter(|k| !k.is_empty())
}

impl FromRequestParts<AppState> for Project {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self, ApiError> {
        state
            .auth
            .caller_for(&state.engine, bearer(parts), checked_open(parts))
            .await
            .map(|caller| Project(caller.project_id))
    }
}
