//! What the HTTP back ends share: the guarded client, endpoint URLs, capped bodies and
//! error mapping.

use std::time::Duration;

use netguard::Policy;
use serde::de::DeserializeOwned;
use url::Url;

use crate::backend::BackendError;

/// How long one back-end request may take, connect to last byte.
pub const REQUEST_TIMEOUT: Duration = Duration::from_secs(20);

/// The largest answer a search service may send.
pub const MAX_RESPONSE_BYTES: usize = 4 * 1024 * 1024;

/// How much of an error answer is kept for the message.
const ERROR_EXCERPT_CHARS: usize = 300;

/// A client from the network guard with the back-end timeout. The operator's back-end
/// host must be allowed by `policy` when it is on a private address.
pub fn client(policy: &Policy) -> Result<reqwest::Client, BackendError> {
    // reqwest is built without a TLS crypto provider of its own; building a client
    // without one installed panics. The first install wins, so this is harmless when the
    // process installed one already.
    let _ = rustls::crypto::ring::default_provider().install_default();
    policy
        .client_builder()
        .timeout(REQUEST_TIMEOUT)
        .build()
        .map_err(|err| BackendError::Config(netguard::describe(&err)))
}

/// `{base}{path}`, where `base` may end with `/` or not, checked by the guard (IP
/// literals are only caught here; host names are checked again when resolved).
pub fn endpoint(policy: &Policy, base: &str, path: &str) -> Result<Url, BackendError> {
    let base = base.trim();
    if base.is_empty() {
        return Err(BackendError::Config("the base URL is empty".to_owned()));
    }
    let joined = format!("{}{path}", base.trim_end_matches('/'));
    policy
        .check_url(&joined)
        .map_err(|blocked| BackendError::Blocked(blocked.0))
}

/// A header value carrying an API key (`prefix` + key), marked sensitive so it is never
/// printed. `service` names the key in errors; the key itself never appears.
pub fn secret_header(
    service: &str,
    api_key: &str,
    prefix: &str,
) -> Result<reqwest::header::HeaderValue, BackendError> {
    let key = api_key.trim();
    if key.is_empty() {
        return Err(BackendError::Config(format!(
            "the {service} API key is empty"
        )));
    }
    let mut value =
        reqwest::header::HeaderValue::from_str(&format!("{prefix}{key}")).map_err(|_| {
            BackendError::Config(format!("the {service} API key is not a valid header value"))
        })?;
    value.set_sensitive(true);
    Ok(value)
}

/// Sends a request and decodes a JSON answer of at most [`MAX_RESPONSE_BYTES`].
pub async fn send_json<T: DeserializeOwned>(
    request: reqwest::RequestBuilder,
) -> Result<T, BackendError> {
    let response = request.send().await.map_err(transport)?;
    let status = response.status();
    if !status.is_success() {
        let body = read_capped(response, 64 * 1024).await.unwrap_or_default();
        return Err(BackendError::Status {
            status: status.as_u16(),
            message: error_message(&body),
        });
    }
    let body = read_capped(response, MAX_RESPONSE_BYTES).await?;
    serde_json::from_slice(&body).map_err(|err| BackendError::Decode(err.to_string()))
}

/// Reads a body, refusing one larger than `limit` without reading it all.
pub async fn read_capped(
    mut response: reqwest::Response,
    limit: usize,
) -> Result<Vec<u8>, BackendError> {
    if response
        .content_length()
        .is_some_and(|length| length > limit as u64)
    {
        return Err(BackendError::TooLarge { limit });
    }
    let mut body = Vec::new();
    while let Some(chunk) = response.chunk().await.map_err(transport)? {
        if body.len() + chunk.len() > limit {
            return Err(BackendError::TooLarge { limit });
        }
        body.extend_from_slice(&chunk);
    }
    Ok(body)
}

/// A reqwest error as a back-end error: the guard's refusal, or a one-line description
/// that never contains the URL (whose query may carry a key) or header values.
pub fn transport(err: reqwest::Error) -> BackendError {
    match netguard::blocked_reason(&err) {
        Some(blocked) => BackendError::Blocked(blocked.0),
        None => BackendError::Transport(netguard::describe(&err)),
    }
}

/// The message of an error answer: a JSON `error.message`, `error`, `message` or
/// `detail` when there is one, else the start of the text.
fn error_message(body: &[u8]) -> String {
    let text = String::from_utf8_lossy(body);
    let from_json = serde_json::from_slice::<serde_json::Value>(body)
        .ok()
        .and_then(|value| {
            let candidates = [
                value.pointer("/error/message"),
                value.pointer("/error/detail"),
                value.get("error"),
                value.get("message"),
                value.pointer("/detail/error"),
                value.get("detail"),
            ];
            candidates.into_iter().flatten().find_map(|v| match v {
                serde_json::Value::String(s) => Some(s.clone()),
                serde_json::Value::Null | serde_json::Value::Object(_) => None,
                other => Some(other.to_string()),
            })
        });
    let message = from_json.unwrap_or_else(|| text.into_owned());
    let message = message.split_whitespace().collect::<Vec<_>>().join(" ");
    crate::budget::truncate(&message, ERROR_EXCERPT_CHARS)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn error_messages_come_from_json_or_text() {
        assert_eq!(
            error_message(br#"{"error":{"message":"bad key","type":"x"}}"#),
            "bad key"
        );
        assert_eq!(error_message(br#"{"detail":{"error":"quota"}}"#), "quota");
        assert_eq!(error_message(br#"{"message":"nope"}"#), "nope");
        assert_eq!(
            error_message(b"  Internal\n Server Error "),
            "Internal Server Error"
        );
        assert_eq!(error_message(b""), "");
    }

    #[test]
    fn endpoints_join_and_are_checked() {
        let open = Policy::with_allowed(&["127.0.0.0/8".to_owned()]).unwrap();
        assert_eq!(
            endpoint(&open, "http://127.0.0.1:8888/", "/search")
                .unwrap()
                .as_str(),
            "http://127.0.0.1:8888/search"
        );
        assert_eq!(
            endpoint(&open, "http://127.0.0.1:8888/searx", "/search")
                .unwrap()
                .as_str(),
            "http://127.0.0.1:8888/searx/search"
        );
        assert!(matches!(
            endpoint(&Policy::strict(), "http://127.0.0.1:8888", "/search"),
            Err(BackendError::Blocked(_))
        ));
        assert!(matches!(
            endpoint(&open, " ", "/search"),
            Err(BackendError::Config(_))
        ));
    }
}
