//! The Gemini API's own wire format: `POST {base_url}/v1beta/models/{model}:streamGenerateContent?alt=sse`
//! with the key in the `x-goog-api-key` header (never in the URL, where it would reach logs).
//!
//! Every turn streams: each SSE event is one whole `GenerateContentResponse` chunk, decoded
//! ([`decode`]) and forwarded as soon as it arrives. A server that ignores `alt=sse` and answers
//! JSON (one response, or the array of chunks the non-SSE stream sends) is adapted too.
//!
//! - [`wire`]: the request body and the response types (serde), with the mapping decisions.
//! - [`decode`]: chunks to [`ModelEvent`](engine::model::ModelEvent)s (pure, unit-tested).
//! - this file: the client and its request; the HTTP exchange, timeouts and error mapping are
//!   shared (`crate::http::Upstream`, `crate::sse`).
//!
//! Errors: an HTTP error status is [`ModelError::Upstream`] with Google's `status` before its
//! message (`RESOURCE_EXHAUSTED: Quota exceeded…` for a 429); an error inside the stream is
//! `Upstream` with its code too; a broken connection is [`ModelError::Transport`] and silence
//! longer than the idle timeout [`ModelError::Timeout`]. No message carries the key.

pub(crate) mod decode;
mod wire;

use std::sync::OnceLock;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::SystemTime;

use engine::model::{ModelClient, ModelError, ModelRequest, ModelStream, Unsupported};
use reqwest::Url;
use reqwest::header::HeaderName;

use crate::ProvidersError;
use crate::config::{ClientOptions, ProviderConfig};
use crate::http::{self, Credential, Upstream};
use decode::Decoder;
use wire::{ErrorBody, GenerateRequest};

pub use wire::REASONING_PREFIX;

/// The header Google's API keys travel in.
const API_KEY_HEADER: HeaderName = HeaderName::from_static("x-goog-api-key");

/// A [`ModelClient`] for one provider speaking the Gemini API (`google`, or a gateway with the
/// same wire format).
///
/// Cheap to share behind an `Arc`: one instance per provider serves every run.
pub struct GeminiClient {
    /// The pooled HTTP client, `{base_url}/v1beta/models` (each turn appends
    /// `{model}:streamGenerateContent`), the `x-goog-api-key` key and the timeout.
    upstream: Upstream,
}

impl std::fmt::Debug for GeminiClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.upstream.debug(f, "GeminiClient", "models_url")
    }
}

impl GeminiClient {
    /// A client for `provider` (its `api` is not checked here: the registry picks the adapter).
    pub fn new(provider: &ProviderConfig, options: &ClientOptions) -> Result<Self, ProvidersError> {
        let upstream = Upstream::new(
            provider,
            options,
            &["v1beta", "models"],
            Credential::Header(API_KEY_HEADER),
        )?;
        Ok(GeminiClient { upstream })
    }

    /// The URL a turn of `model` is posted to.
    pub fn endpoint(&self, model: &str) -> String {
        stream_url(self.upstream.url(), model).map_or_else(|_| String::new(), String::from)
    }
}

#[async_trait::async_trait]
impl ModelClient for GeminiClient {
    fn check(&self, request: &ModelRequest) -> Result<(), Unsupported> {
        wire::check(request)
    }

    async fn stream(&self, request: ModelRequest) -> Result<ModelStream, ModelError> {
        let url = stream_url(self.upstream.url(), &request.model)?;
        let post = self
            .upstream
            .post(url)
            .json_text(GenerateRequest::from(&request).to_json())?;
        self.upstream
            .turn(
                post,
                error_message,
                |body| decode::body_events(body, Box::new(next_call_id)),
                Decoder::new(Box::new(next_call_id)),
            )
            .await
    }
}

/// `{models_url}/{model}:streamGenerateContent?alt=sse`. The model is one path segment (a `/` in
/// it is escaped); a `models/` prefix, as Google's SDKs accept, is dropped.
fn stream_url(models_url: &Url, model: &str) -> Result<Url, ModelError> {
    let model = model.strip_prefix("models/").unwrap_or(model);
    let mut url = models_url.clone();
    url.path_segments_mut()
        .map_err(|()| ModelError::Protocol("the base URL cannot have a path".to_owned()))?
        .push(&format!("{model}:streamGenerateContent"));
    url.query_pairs_mut().append_pair("alt", "sse");
    Ok(url)
}

/// The id of a call Gemini sent without one: `call_<n>`, unique in the process and, as `n` starts
/// from the clock (microseconds) at first use, across restarts too; ids are the correlation keys
/// of a whole conversation, not just of one turn.
fn next_call_id() -> String {
    static NEXT: OnceLock<AtomicU64> = OnceLock::new();
    let next = NEXT.get_or_init(|| {
        let micros = SystemTime::now()
            .duration_since(SystemTime::UNIX_EPOCH)
            .map(|since| since.as_micros())
            .unwrap_or_default();
        AtomicU64::new(u64::try_from(micros).unwrap_or_default())
    });
    format!("call_{}", next.fetch_add(1, Ordering::Relaxed))
}

/// The message of an error body: Google's `status: message` when the body is its envelope, else
/// what the shared reader finds.
fn error_message(body: &[u8]) -> Option<String> {
    serde_json::from_slice::<ErrorBody>(body)
        .ok()
        .and_then(|envelope| envelope.status().and_then(wire::ErrorStatus::describe))
        .or_else(|| http::error_message(body))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn client(base_url: &str, key: Option<&str>) -> Result<GeminiClient, ProvidersError> {
        GeminiClient::new(
            &ProviderConfig {
                name: "google".into(),
                api: crate::WireApi::Gemini,
                base_url: base_url.into(),
                api_key: key.map(str::to_owned),
                models: vec![],
            },
            &ClientOptions::default(),
        )
    }

    #[test]
    fn endpoint_appends_the_wire_path() -> Result<(), ProvidersError> {
        let cases = [
            (
                "https://generativelanguage.googleapis.com",
                "gemini-2.5-flash",
                "https://generativelanguage.googleapis.com/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse",
            ),
            (
                "https://generativelanguage.googleapis.com/",
                "models/gemini-3-pro-preview",
                "https://generativelanguage.googleapis.com/v1beta/models/gemini-3-pro-preview:streamGenerateContent?alt=sse",
            ),
            (
                "http://127.0.0.1:8080/gw?tenant=a",
                "x/y",
                "http://127.0.0.1:8080/gw/v1beta/models/x%2Fy:streamGenerateContent?tenant=a&alt=sse",
            ),
        ];
        for (base, model, want) in cases {
            assert_eq!(client(base, None)?.endpoint(model), want);
        }
        Ok(())
    }

    #[test]
    fn debug_shows_neither_key_nor_query() -> Result<(), ProvidersError> {
        let client = client(
            "https://gw.example/?key=query-secret",
            Some("AIza-secret-test"),
        )?;
        let text = format!("{client:?}");
        assert!(!text.contains("query-secret"), "{text}");
        assert!(!text.contains("AIza-secret-test"), "{text}");
        assert!(text.contains("https://gw.example/v1beta/models"), "{text}");
        Ok(())
    }

    #[test]
    fn bad_urls_and_keys_are_refused() {
        assert!(client("ftp://example.com", None).is_err());
        assert!(client("generativelanguage.googleapis.com", None).is_err());
        assert!(client("https://example.com", Some("bad\nkey")).is_err());
    }

    #[test]
    fn generated_call_ids_are_unique() {
        let a = next_call_id();
        let b = next_call_id();
        assert!(a.starts_with("call_") && b.starts_with("call_"), "{a} {b}");
        assert_ne!(a, b);
    }
}
