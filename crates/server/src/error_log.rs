//! Each error answer logged once, where it leaves (errors are not logged where they are built).

use axum::http::Method;
use axum::response::Response;

use crate::error::ErrorLog;

/// Logs `response` if it is an error answer ([`ErrorLog`]): 5xx at error level, others at info.
/// `path` is the path only: query strings may carry values we do not want in logs.
pub fn log(method: &Method, path: &str, response: &Response) {
    if let Some(ErrorLog(detail)) = response.extensions().get::<ErrorLog>() {
        let status = response.status().as_u16();
        if response.status().is_server_error() {
            tracing::error!(%method, %path, status, error = %detail, "request failed");
        } else {
            tracing::info!(%method, %path, status, error = %detail, "request refused");
        }
    }
}
