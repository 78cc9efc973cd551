//! The upstreams' own model lists, for `GET /v1/models`.
//!
//! Each wire API has its provider's documented list endpoint, asked with the provider's key:
//!
//! | wire API | request | answer | paging |
//! | --- | --- | --- | --- |
//! | Chat Completions, Responses | `GET {base}/models`, `Authorization: Bearer` | `{"data": [{"id"}]}` | none |
//! | Anthropic Messages | `GET {base}/v1/models?limit=1000`, `x-api-key`, `anthropic-version: 2023-06-01` | `{"data": [{"id"}], "has_more", "last_id"}` | `after_id` while `has_more` |
//! | Gemini | `GET {base}/v1beta/models?pageSize=1000`, `x-goog-api-key` | `{"models": [{"name": "models/…", "supportedGenerationMethods"}], "nextPageToken"}` | `pageToken` |
//!
//! Gemini names lose their `models/` prefix, and only models that support `generateContent`
//! (the method the adapter calls) are kept. Bounds: every request has its own timeout
//! ([`ModelListSettings::request_timeout`], 5 s by default), a page body is read up to 8 MiB, at
//! most [`MAX_PAGES`] pages and [`MAX_MODELS`] models are taken from one provider.
//!
//! [`UpstreamModels`] does one listing; the [`Registry`](crate::Registry) keeps one per provider
//! and caches its result ([`ModelListSettings`]). Errors carry neither the key nor the URL.
//!
//! [`ModelListSettings`]: crate::ModelListSettings
//! [`ModelListSettings::request_timeout`]: crate::ModelListSettings::request_timeout

use std::collections::HashSet;
use std::time::Duration;

use engine::model::ModelError;
use reqwest::Url;
use reqwest::header::{ACCEPT, HeaderName, HeaderValue};
use serde_json::Value;

use crate::ProvidersError;
use crate::config::{ClientOptions, ProviderConfig, WireApi};
use crate::http::{self, Credential};
use crate::redact::{self, Redactor};

/// The most pages followed for one provider; a longer list is cut there.
pub const MAX_PAGES: usize = 20;
/// The most upstream models taken from one provider; a longer list is cut there.
pub const MAX_MODELS: usize = 2000;

/// The most of one page's body we read.
const MAX_PAGE_BYTES: usize = 8 * 1024 * 1024;
/// The page size asked of Anthropic and Gemini (both allow up to 1000).
const PAGE_SIZE: &str = "1000";
/// The Anthropic API version the adapter speaks, sent with the list request too.
const ANTHROPIC_VERSION: &str = "2023-06-01";

/// One provider's model-list endpoint: the URL, the key's header and the wire API's paging.
pub struct UpstreamModels {
    http: reqwest::Client,
    api: WireApi,
    /// The list URL (the base URL's query string, if any, kept).
    url: Url,
    /// The key's header and value (marked sensitive); `None` for a keyless server.
    credential: Option<(HeaderName, HeaderValue)>,
    redactor: Redactor,
}

impl std::fmt::Debug for UpstreamModels {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("UpstreamModels")
            .field("api", &self.api)
            .field("url", &self.url_for_logs())
            .field("has_api_key", &self.credential.is_some())
            .finish_non_exhaustive()
    }
}

impl UpstreamModels {
    /// The list endpoint of `provider`, with its own HTTP client.
    pub fn new(provider: &ProviderConfig, options: &ClientOptions) -> Result<Self, ProvidersError> {
        UpstreamModels::with_client(provider, http::build_client(options)?)
    }

    /// The list endpoint of `provider`, sharing `http`.
    pub(crate) fn with_client(
        provider: &ProviderConfig,
        http: reqwest::Client,
    ) -> Result<Self, ProvidersError> {
        let path: &[&str] = match provider.api {
            WireApi::ChatCompletions | WireApi::Responses => &["models"],
            WireApi::AnthropicMessages => &["v1", "models"],
            WireApi::Gemini => &["v1beta", "models"],
        };
        let url = http::endpoint(&provider.base_url, path).map_err(|reason| {
            ProvidersError::InvalidBaseUrl {
                provider: provider.name.clone(),
                reason,
            }
        })?;
        let key = provider.api_key.as_deref().filter(|key| !key.is_empty());
        let credential = Credential::of(provider.api).header(provider)?;
        Ok(UpstreamModels {
            http,
            api: provider.api,
            url,
            credential,
            redactor: Redactor::new(key),
        })
    }

    /// The list URL without its query string (a gateway may take a key there), for logs.
    pub fn url_for_logs(&self) -> String {
        let mut url = self.url.clone();
        url.set_query(None);
        url.into()
    }

    /// Asks the upstream for its models, following pages, each request bounded by `timeout`.
    /// The names come in the upstream's order, without duplicates, as the upstream's model
    /// names (no `provider/` prefix). No error carries the key or the URL.
    pub async fn fetch(&self, timeout: Duration) -> Result<Vec<String>, ModelError> {
        self.fetch_pages(timeout)
            .await
            .map_err(|err| self.redactor.scrub(err))
    }

    async fn fetch_pages(&self, timeout: Duration) -> Result<Vec<String>, ModelError> {
        let mut models = Vec::new();
        let mut seen = HashSet::new();
        let mut cursor: Option<String> = None;
        for _ in 0..MAX_PAGES {
            let page = self.page(cursor.as_deref(), timeout).await?;
            for id in page.ids {
                if models.len() >= MAX_MODELS {
                    return Ok(models);
                }
                if !id.is_empty() && seen.insert(id.clone()) {
                    models.push(id);
                }
            }
            match page.next {
                // A cursor that does not move would only repeat the same page.
                Some(next) if !next.is_empty() && cursor.as_deref() != Some(next.as_str()) => {
                    cursor = Some(next);
                }
                _ => return Ok(models),
            }
        }
        Ok(models)
    }

    /// One page: after `cursor` (Anthropic's `after_id`, Gemini's `pageToken`).
    async fn page(&self, cursor: Option<&str>, timeout: Duration) -> Result<Page, ModelError> {
        let mut url = self.url.clone();
        match self.api {
            WireApi::ChatCompletions | WireApi::Responses => {}
            WireApi::AnthropicMessages => {
                let mut query = url.query_pairs_mut();
                query.append_pair("limit", PAGE_SIZE);
                if let Some(cursor) = cursor {
                    query.append_pair("after_id", cursor);
                }
            }
            WireApi::Gemini => {
                let mut query = url.query_pairs_mut();
                query.append_pair("pageSize", PAGE_SIZE);
                if let Some(cursor) = cursor {
                    query.append_pair("pageToken", cursor);
                }
            }
        }
        let mut request = self
            .http
            .get(url)
            .header(ACCEPT, "application/json")
            .timeout(timeout);
        if let Some((name, value)) = &self.credential {
            request = request.header(name, value.clone());
        }
        if self.api == WireApi::AnthropicMessages {
            request = request.header(
                HeaderName::from_static("anthropic-version"),
                HeaderValue::from_static(ANTHROPIC_VERSION),
            );
        }
        let response = request.send().await.map_err(redact::transport_error)?;
        if !response.status().is_success() {
            return Err(http::upstream_error(response, timeout, http::error_message).await);
        }
        let body = http::read_body(response, MAX_PAGE_BYTES + 1, timeout).await?;
        if body.len() > MAX_PAGE_BYTES {
            return Err(ModelError::Protocol(format!(
                "the model list is larger than {} MiB",
                MAX_PAGE_BYTES / (1024 * 1024)
            )));
        }
        decode_page(self.api, &body)
    }
}

/// One page of a list: the model names and the cursor of the next page, if there is one.
#[derive(Debug, Default, PartialEq)]
struct Page {
    ids: Vec<String>,
    next: Option<String>,
}

/// Reads one page in the wire API's shape. Entries without a usable name are skipped; a body
/// that is not the documented envelope is [`ModelError::Protocol`].
fn decode_page(api: WireApi, body: &[u8]) -> Result<Page, ModelError> {
    let json: Value = serde_json::from_slice(body)
        .map_err(|err| ModelError::Protocol(format!("the model list is not JSON: {err}")))?;
    if !json.is_object() {
        return Err(ModelError::Protocol(
            "the model list is not a JSON object".to_owned(),
        ));
    }
    let string =
        |value: &Value, key: &str| value.get(key).and_then(Value::as_str).map(str::to_owned);
    match api {
        WireApi::ChatCompletions | WireApi::Responses | WireApi::AnthropicMessages => {
            let data = json.get("data").and_then(Value::as_array).ok_or_else(|| {
                ModelError::Protocol("the model list has no \"data\" array".to_owned())
            })?;
            let ids: Vec<String> = data
                .iter()
                .filter_map(|entry| string(entry, "id"))
                .collect();
            let next = if api == WireApi::AnthropicMessages
                && json.get("has_more").and_then(Value::as_bool) == Some(true)
            {
                string(&json, "last_id").or_else(|| ids.last().cloned())
            } else {
                None
            };
            Ok(Page { ids, next })
        }
        WireApi::Gemini => {
            // Google's JSON leaves out empty lists: no "models" is an empty page.
            let ids = json
                .get("models")
                .and_then(Value::as_array)
                .map(|models| {
                    models
                        .iter()
                        .filter(|model| generates_content(model))
                        .filter_map(|model| string(model, "name"))
                        .map(|name| name.strip_prefix("models/").unwrap_or(&name).to_owned())
                        .collect()
                })
                .unwrap_or_default();
            Ok(Page {
                ids,
                next: string(&json, "nextPageToken"),
            })
        }
    }
}

/// Whether a Gemini model supports `generateContent` (what the adapter calls).
fn generates_content(model: &Value) -> bool {
    model
        .get("supportedGenerationMethods")
        .and_then(Value::as_array)
        .is_some_and(|methods| {
            methods
                .iter()
                .any(|method| method.as_str() == Some("generateContent"))
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn page(api: WireApi, body: &str) -> Result<Page, ModelError> {
        decode_page(api, body.as_bytes())
    }

    fn ids(names: &[&str]) -> Vec<String> {
        names.iter().map(|name| (*name).to_owned()).collect()
    }

    #[test]
    fn openai_shape() {
        let got = page(
            WireApi::ChatCompletions,
            r#"{"object":"list","data":[{"id":"gpt-5","object":"model"},{"object":"model"},{"id":7},{"id":"o4"}]}"#,
        );
        assert_eq!(
            got,
            Ok(Page {
                ids: ids(&["gpt-5", "o4"]),
                next: None
            })
        );
        // has_more means nothing outside Anthropic.
        let got = page(
            WireApi::Responses,
            r#"{"data":[{"id":"a"}],"has_more":true,"last_id":"a"}"#,
        );
        assert_eq!(got.map(|page| page.next), Ok(None));
    }

    #[test]
    fn anthropic_shape_and_cursor() {
        let more = page(
            WireApi::AnthropicMessages,
            r#"{"data":[{"id":"claude-a","type":"model"},{"id":"claude-b"}],"has_more":true,"first_id":"claude-a","last_id":"claude-b"}"#,
        );
        assert_eq!(
            more,
            Ok(Page {
                ids: ids(&["claude-a", "claude-b"]),
                next: Some("claude-b".to_owned())
            })
        );
        let last = page(
            WireApi::AnthropicMessages,
            r#"{"data":[{"id":"claude-c"}],"has_more":false,"last_id":"claude-c"}"#,
        );
        assert_eq!(last.map(|page| page.next), Ok(None));
    }

    #[test]
    fn gemini_shape_filter_and_prefix() {
        let got = page(
            WireApi::Gemini,
            r#"{"models":[
                {"name":"models/gemini-3-pro","supportedGenerationMethods":["generateContent","countTokens"]},
                {"name":"models/text-embedding-004","supportedGenerationMethods":["embedContent"]},
                {"name":"models/no-methods"},
                {"name":"tunedModels/mine","supportedGenerationMethods":["generateContent"]}
            ],"nextPageToken":"tok"}"#,
        );
        assert_eq!(
            got,
            Ok(Page {
                ids: ids(&["gemini-3-pro", "tunedModels/mine"]),
                next: Some("tok".to_owned())
            })
        );
        assert_eq!(page(WireApi::Gemini, "{}"), Ok(Page::default()));
    }

    #[test]
    fn garbage_is_a_protocol_error() {
        for (api, body) in [
            (WireApi::ChatCompletions, "<html>nope</html>"),
            (WireApi::ChatCompletions, "{}"),
            (WireApi::ChatCompletions, r#"{"data":{}}"#),
            (WireApi::AnthropicMessages, "[]"),
            (WireApi::Gemini, "null"),
        ] {
            assert!(
                matches!(page(api, body), Err(ModelError::Protocol(_))),
                "{api} {body}"
            );
        }
    }

    #[test]
    fn urls_and_logs() -> Result<(), ProvidersError> {
        let config = |api, base: &str| ProviderConfig {
            name: "p".into(),
            api,
            base_url: base.into(),
            api_key: Some("secret-key-1234".into()),
            models: vec![],
        };
        for (api, base, want) in [
            (
                WireApi::ChatCompletions,
                "https://api.openai.com/v1",
                "https://api.openai.com/v1/models",
            ),
            (
                WireApi::Responses,
                "https://api.openai.com/v1/",
                "https://api.openai.com/v1/models",
            ),
            (
                WireApi::AnthropicMessages,
                "https://api.anthropic.com",
                "https://api.anthropic.com/v1/models",
            ),
            (
                WireApi::Gemini,
                "https://generativelanguage.googleapis.com",
                "https://generativelanguage.googleapis.com/v1beta/models",
            ),
            (
                WireApi::ChatCompletions,
                "https://gw.example/v1?api-key=secret-key-1234",
                "https://gw.example/v1/models",
            ),
        ] {
            let upstream = UpstreamModels::new(&config(api, base), &ClientOptions::default())?;
            assert_eq!(upstream.url_for_logs(), want);
            let debug = format!("{upstream:?}");
            assert!(!debug.contains("secret-key-1234"), "{debug}");
        }
        Ok(())
    }
}
