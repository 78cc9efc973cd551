//! What the HTTP back ends share: the guarded client, endpoint URLs, key headers, capped
//! answers and error mapping (rate limits included).

use std::time::Duration;

use netguard::Policy;
use reqwest::header::HeaderValue;
use serde::de::DeserializeOwned;
use url::Url;

use crate::backend::DirectoryError;

/// How long one request may take, connect to last byte.
pub const REQUEST_TIMEOUT: Duration = Duration::from_secs(20);
/// The largest answer read.
pub const MAX_RESPONSE_BYTES: usize = 4 * 1024 * 1024;

/// A guarded client. The operator's back-end host must be allowed by `policy` when it is
/// on a private address (a SCIM server in the office network).
pub fn client(policy: &Policy) -> Result<reqwest::Client, DirectoryError> {
    // reqwest has no TLS provider of its own here; the first install wins.
    let _ = rustls::crypto::ring::default_provider().install_default();
    policy
        .client_builder()
        .timeout(REQUEST_TIMEOUT)
        .build()
        .map_err(|err| DirectoryError::Config(netguard::describe(&err)))
}

/// `{base}{path}` (`base` with or without a trailing `/`), checked by the guard.
pub fn endpoint(policy: &Policy, base: &str, path: &str) -> Result<Url, DirectoryError> {
    let base = base.trim();
    if base.is_empty() {
        return Err(DirectoryError::Config("the base URL is empty".to_owned()));
    }
    policy
        .check_url(&format!("{}{path}", base.trim_end_matches('/')))
        .map_err(|blocked| DirectoryError::Blocked(blocked.0))
}

/// A header value with a secret, marked sensitive. `service` names it in errors.
pub fn secret_header(
    service: &str,
    secret: &str,
    prefix: &str,
) -> Result<HeaderValue, DirectoryError> {
    let secret = secret.trim();
    if secret.is_empty() {
        return Err(DirectoryError::Config(format!(
            "the {service} key is empty"
        )));
    }
    let mut value = HeaderValue::from_str(&format!("{prefix}{secret}")).map_err(|_| {
        DirectoryError::Config(format!("the {service} key is not a valid header value"))
    })?;
    value.set_sensitive(true);
    Ok(value)
}

/// An answer: status, the rate-limit headers, the body.
#[derive(Debug, Clone)]
pub struct Answer {
    pub status: u16,
    /// `Retry-After` in seconds, when given so.
    pub retry_after: Option<u64>,
    /// `x-ratelimit-remaining: 0` (GitHub's way of saying a 403 is its rate limit).
    pub limit_exhausted: bool,
    pub body: Vec<u8>,
}

/// Sends a request built on a client from [`client`] (its URL was checked by
/// [`endpoint`]; names and redirects are checked by the client) and reads at most
/// [`MAX_RESPONSE_BYTES`] of the answer.
pub async fn send(request: reqwest::RequestBuilder) -> Result<Answer, DirectoryError> {
    let mut response = request.send().await.map_err(transport)?;
    let header = |name: &str| {
        response
            .headers()
            .get(name)
            .and_then(|value| value.to_str().ok())
            .map(str::trim)
            .map(str::to_owned)
    };
    let retry_after = header("retry-after").and_then(|value| value.parse().ok());
    let limit_exhausted = header("x-ratelimit-remaining").as_deref() == Some("0");
    let status = response.status().as_u16();
    if response
        .content_length()
        .is_some_and(|length| length > MAX_RESPONSE_BYTES as u64)
    {
        return Err(too_large());
    }
    let mut body = Vec::new();
    while let Some(chunk) = response.chunk().await.map_err(transport)? {
        if body.len() + chunk.len() > MAX_RESPONSE_BYTES {
            return Err(too_large());
        }
        body.extend_from_slice(&chunk);
    }
    Ok(Answer {
        status,
        retry_after,
        limit_exhausted,
        body,
    })
}

fn too_large() -> DirectoryError {
    DirectoryError::Decode(format!(
        "the answer is larger than {MAX_RESPONSE_BYTES} bytes"
    ))
}

/// A reqwest error: the guard's refusal, or a description without the URL.
fn transport(err: reqwest::Error) -> DirectoryError {
    match netguard::blocked_reason(&err) {
        Some(blocked) => DirectoryError::Blocked(blocked.0),
        None => DirectoryError::Transport(netguard::describe(&err)),
    }
}

impl Answer {
    /// The JSON of a successful answer; error statuses mapped (429, and a 403 with
    /// `x-ratelimit-remaining: 0`, are [`DirectoryError::RateLimited`]).
    pub fn json<T: DeserializeOwned>(&self) -> Result<T, DirectoryError> {
        if self.status == 429 || (self.status == 403 && self.limit_exhausted) {
            return Err(DirectoryError::RateLimited {
                retry_after: self.retry_after,
            });
        }
        if !(200..300).contains(&self.status) {
            return Err(DirectoryError::Status {
                status: self.status,
                message: error_message(&self.body),
            });
        }
        serde_json::from_slice(&self.body).map_err(|err| DirectoryError::Decode(err.to_string()))
    }
}

/// The message of an error answer: a JSON `error.message`, `error`, `message`, `detail`
/// or `error-desc` when there is one, else the start of the text. At most 300 characters.
pub fn error_message(body: &[u8]) -> String {
    let from_json = serde_json::from_slice::<serde_json::Value>(body)
        .ok()
        .and_then(|value| {
            [
                value.pointer("/error/message"),
                value.get("error"),
                value.get("message"),
                value.get("detail"),
                value.get("error-desc"),
                value.get("developer-message"),
            ]
            .into_iter()
            .flatten()
            .find_map(|v| match v {
                serde_json::Value::String(s) => Some(s.clone()),
                serde_json::Value::Object(map) => {
                    map.get("value").and_then(|v| v.as_str().map(str::to_owned))
                }
                _ => None,
            })
        });
    let message = from_json.unwrap_or_else(|| String::from_utf8_lossy(body).into_owned());
    let message = message.split_whitespace().collect::<Vec<_>>().join(" ");
    message.chars().take(300).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn error_messages() {
        assert_eq!(
            error_message(br#"{"status":401,"error":{"type":"auth","message":"bad key"}}"#),
            "bad key"
        );
        assert_eq!(
            error_message(br#"{"message":"API rate limit exceeded"}"#),
            "API rate limit exceeded"
        );
        assert_eq!(
            error_message(br#"{"error-desc":{"value":"bad q"}}"#),
            "bad q"
        );
        assert_eq!(error_message(b" plain\n text "), "plain text");
    }
}
