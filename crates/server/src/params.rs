//! Path and query extractors whose refusals are [`ApiError`]s (the JSON envelope), where
//! axum's own answer `text/plain`: a path segment that is not valid UTF-8 once
//! percent-decoded, a query string that does not decode.

use axum::extract::{FromRequestParts, Path, Query};
use axum::http::request::Parts;
use serde::de::DeserializeOwned;

use crate::error::ApiError;

/// The route's path parameters (`{id}`, …), like [`axum::extract::Path`].
#[derive(Debug)]
pub struct PathParams<T>(pub T);

impl<T, S> FromRequestParts<S> for PathParams<T>
where
    T: DeserializeOwned + Send,
    S: Send + Sync,
{
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, ApiError> {
        match Path::<T>::from_request_parts(parts, state).await {
            Ok(Path(value)) => Ok(PathParams(value)),
            Err(rejection) => Err(ApiError::InvalidPath(format!(
                "the path is not valid: {}",
                rejection.body_text()
            ))),
        }
    }
}

/// The query string, like [`axum::extract::Query`].
#[derive(Debug)]
pub struct QueryParams<T>(pub T);

impl<T, S> FromRequestParts<S> for QueryParams<T>
where
    T: DeserializeOwned,
    S: Send + Sync,
{
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, ApiError> {
        match Query::<T>::from_request_parts(parts, state).await {
            Ok(Query(value)) => Ok(QueryParams(value)),
            Err(rejection) => Err(ApiError::InvalidQuery {
                message: format!("the query string is not valid: {}", rejection.body_text()),
                param: "query".to_owned(),
            }),
        }
    }
}
