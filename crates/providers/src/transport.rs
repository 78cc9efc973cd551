//! How a provider's requests travel: the one request type the adapters build
//! ([`UpstreamRequest`]: URL, headers, the JSON body as `Bytes`, so a retry is a cheap clone),
//! and the two clients that send it ([`Transport`]):
//!
//! - the in-task HTTP/1.1 client (`h1_client`) for a plain-`http` upstream when no proxy
//!   variable is set: self-hosted model servers on loopback or the LAN (vLLM, Ollama,
//!   llama.cpp, gateways). Its connection is driven by the turn's own task;
//! - reqwest for everything else: `https` (TLS, HTTP/2 by ALPN), and any upstream when
//!   `HTTP_PROXY`, `http_proxy`, `ALL_PROXY` or `all_proxy` is set (reqwest honours them, with
//!   `NO_PROXY`; rather than re-implement that matching, a proxy variable keeps reqwest).
//!
//! Both hand back an [`Answer`]: status, headers and the body as a stream of chunks whose
//! errors are already [`ModelError`]s without the URL.

use std::pin::Pin;

use bytes::Bytes;
use engine::model::ModelError;
use futures::{Stream, StreamExt};
use reqwest::header::{CONTENT_TYPE, HeaderMap, HeaderName, HeaderValue};
use reqwest::{StatusCode, Url};

use crate::config::ClientOptions;
use crate::h1_client::{H1Pool, SendFailure};
use crate::redact::transport_error;

/// An answer's body: its data chunks as they arrive.
pub(crate) type BodyStream = Pin<Box<dyn Stream<Item = Result<Bytes, ModelError>> + Send>>;

/// The environment variables that make reqwest send plain-`http` requests through a proxy.
const PROXY_VARIABLES: [&str; 4] = ["HTTP_PROXY", "http_proxy", "ALL_PROXY", "all_proxy"];

/// One `POST` to an upstream, as the adapters build it.
#[derive(Debug, Clone)]
pub(crate) struct UpstreamRequest {
    pub(crate) url: Url,
    pub(crate) headers: HeaderMap,
    pub(crate) body: Bytes,
}

impl UpstreamRequest {
    /// A `POST` to `url` with no body yet.
    pub(crate) fn post(url: Url) -> Self {
        UpstreamRequest {
            url,
            headers: HeaderMap::new(),
            body: Bytes::new(),
        }
    }

    /// The request with this header added.
    pub(crate) fn header(mut self, name: HeaderName, value: HeaderValue) -> Self {
        self.headers.append(name, value);
        self
    }

    /// The request with `json`, written already by the wire's `to_json` (or the error
    /// writing it), as its JSON body.
    pub(crate) fn json_text(
        mut self,
        json: Result<String, serde_json::Error>,
    ) -> Result<Self, ModelError> {
        let json = json
            .map_err(|err| ModelError::Transport(format!("could not encode the request: {err}")))?;
        self.body = Bytes::from(json);
        self.headers
            .insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
        Ok(self)
    }
}

/// An upstream's answer head and body.
pub(crate) struct Answer {
    pub(crate) status: StatusCode,
    pub(crate) headers: HeaderMap,
    pub(crate) body: BodyStream,
}

/// The client a provider sends its turns with (see the module doc).
pub(crate) enum Transport {
    Reqwest(reqwest::Client),
    InTask(H1Pool),
}

impl Transport {
    /// The client for the upstream at `url`: the in-task one when [`in_task_eligible`] (with
    /// the process environment), else `client()`.
    pub(crate) fn new<E>(
        url: &Url,
        options: &ClientOptions,
        client: impl FnOnce() -> Result<reqwest::Client, E>,
    ) -> Result<Self, E> {
        let env = |name: &str| std::env::var_os(name).map(|value| !value.is_empty());
        if in_task_eligible(url, &env)
            && let Some(pool) = H1Pool::new(url, options)
        {
            return Ok(Transport::InTask(pool));
        }
        client().map(Transport::Reqwest)
    }

    /// Whether this is the in-task client (for tests and `Debug`).
    pub(crate) fn is_in_task(&self) -> bool {
        matches!(self, Transport::InTask(_))
    }

    /// Sends `request` and waits for the answer's head.
    pub(crate) async fn send(&self, request: &UpstreamRequest) -> Result<Answer, SendFailure> {
        match self {
            Transport::InTask(pool) => {
                let (status, headers, body) = pool
                    .send(&request.url, &request.headers, &request.body)
                    .await?;
                Ok(Answer {
                    status,
                    headers,
                    body: Box::pin(body),
                })
            }
            Transport::Reqwest(client) => {
                let sent = client
                    .post(request.url.clone())
                    .headers(request.headers.clone())
                    .body(request.body.clone())
                    .send()
                    .await;
                let mut response = sent.map_err(|err| SendFailure {
                    connect: err.is_connect(),
                    error: transport_error(err),
                })?;
                let status = response.status();
                let headers = std::mem::take(response.headers_mut());
                let body = response
                    .bytes_stream()
                    .map(|chunk| chunk.map_err(transport_error));
                Ok(Answer {
                    status,
                    headers,
                    body: Box::pin(body),
                })
            }
        }
    }
}

/// Whether the upstream at `url` takes the in-task client: plain `http`, and no proxy variable
/// set (`proxy_set(name)` says whether a variable is set and not empty; `None` when unset).
pub(crate) fn in_task_eligible(url: &Url, proxy_set: &dyn Fn(&str) -> Option<bool>) -> bool {
    url.scheme() == "http"
        && !PROXY_VARIABLES
            .iter()
            .any(|name| proxy_set(name).unwrap_or(false))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn eligible(url: &str, set: &[&str]) -> bool {
        let Ok(url) = Url::parse(url) else {
            return false;
        };
        in_task_eligible(&url, &|name| Some(set.contains(&name)))
    }

    #[test]
    fn plain_http_without_a_proxy_takes_the_in_task_client() {
        assert!(eligible("http://127.0.0.1:8000/v1", &[]));
        assert!(eligible(
            "http://ollama.lan:11434/v1",
            &["HTTPS_PROXY", "NO_PROXY"]
        ));
        assert!(!eligible("https://api.openai.com/v1", &[]));
        for variable in PROXY_VARIABLES {
            assert!(
                !eligible("http://127.0.0.1:8000/v1", &[variable]),
                "{variable}"
            );
        }
        // Set but empty counts as unset, as reqwest reads it.
        let url = Url::parse("http://127.0.0.1:8000/v1").ok();
        assert!(url.is_some_and(|url| in_task_eligible(&url, &|name| {
            (name == "HTTP_PROXY").then_some(false)
        })));
    }
}
