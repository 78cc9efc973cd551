//! The last word on error answers: every 4xx and 5xx leaves the server on the JSON envelope.
//! Our own errors ([`ApiError`]) already are; anything else — axum's own answers (405, to
//! which the router adds its `Allow` header; rejections of extractors), a layer's refusal —
//! is put on the envelope here, with the row of the code table its status has.

use axum::http::header::{ALLOW, CONTENT_TYPE};
use axum::http::{HeaderMap, Method, StatusCode};
use axum::response::{IntoResponse, Response};

use crate::error::{ApiError, ErrorLog, code_of_status};

/// Longest body of another layer's error answer read for its message.
const MAX_MESSAGE_BYTES: usize = 4096;

/// Whether `response` is an error answer not yet on the envelope (one [`rewrite`] must put
/// there).
pub fn needed(response: &Response) -> bool {
    let status = response.status();
    let is_error = status.is_client_error() || status.is_server_error();
    is_error && response.extensions().get::<ErrorLog>().is_none()
}

/// `response` (an answer [`needed`] is true of) on the envelope, for a request of `method`.
pub async fn rewrite(method: &Method, response: Response) -> Response {
    let status = response.status();
    let (parts, body) = response.into_parts();
    let text = match axum::body::to_bytes(body, MAX_MESSAGE_BYTES).await {
        Ok(bytes) if is_text(&parts.headers) => String::from_utf8(bytes.to_vec()).ok(),
        _ => None,
    };
    let message = message(status, method, text);
    let mut answer = ApiError::Other {
        code: code_of_status(status),
        message,
    }
    .into_response();
    if let Some(allow) = parts.headers.get(ALLOW) {
        answer.headers_mut().insert(ALLOW, allow.clone());
    }
    answer
}

fn is_text(headers: &HeaderMap) -> bool {
    headers
        .get(CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("text/plain"))
}

/// What the envelope says: the method and what the path allows for a 405, the other layer's
/// own text for a client error, nothing of its text for a server error.
fn message(status: StatusCode, method: &Method, text: Option<String>) -> String {
    if status == StatusCode::METHOD_NOT_ALLOWED {
        // The router adds the `Allow` header after this layer has run.
        return format!(
            "{method} is not allowed on this path (its Allow header lists the methods it takes)"
        );
    }
    let reason = status.canonical_reason().unwrap_or("error").to_lowercase();
    match text.map(|t| t.trim().to_owned()) {
        Some(text) if status.is_client_error() && !text.is_empty() => text,
        _ if status.is_server_error() => "internal error".to_owned(),
        _ => reason,
    }
}
