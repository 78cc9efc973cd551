//! Errors in each wire API's own error envelope.

use axum::http::StatusCode;
use axum::response::Response;
use providers::WireApi;

use super::render::json_response;
use super::{anthropic, chat_completions, gemini};

/// An HTTP error in the wire API's error envelope.
pub(super) fn error_response(wire: WireApi, status: u16, message: &str) -> Response {
    let body = match wire {
        WireApi::ChatCompletions | WireApi::Responses => {
            chat_completions::error_body(status, message)
        }
        WireApi::AnthropicMessages => anthropic::error_body(status, message),
        WireApi::Gemini => gemini::error_body(status, message),
    };
    let status = StatusCode::from_u16(status).map_or(500, |status| status.as_u16());
    json_response(status, body.to_string())
}
