//! [`Http`]: how the HTTP back ends talk to their services. Every request takes a token from
//! the back end's [`Budget`], goes to a URL the network guard checked, through the guarded
//! client (host names and redirects checked again), comes back from a checked address, and
//! is read up to a size cap within one deadline. A 429 puts the back end on a cool-down
//! (`Retry-After` honoured). Errors never carry the URL: its query may hold a key.

use std::sync::Arc;
use std::time::Duration;

use netguard::Policy;
use reqwest::header::{HeaderMap, HeaderValue};
use url::Url;

use crate::backend::BackendError;
use crate::budget::{Budget, DEFAULT_COOL_DOWN};

/// How long one request may take, connect to last byte.
pub const REQUEST_TIMEOUT: Duration = Duration::from_secs(20);

/// The largest answer read (SEC companyfacts of a large filer run to tens of MiB).
pub const MAX_RESPONSE_BYTES: usize = 64 * 1024 * 1024;

/// One answer, any status.
#[derive(Debug)]
pub struct Answer {
    pub status: u16,
    pub body: Vec<u8>,
}

impl Answer {
    /// The body as JSON.
    pub fn json(&self) -> Result<serde_json::Value, BackendError> {
        serde_json::from_slice(&self.body).map_err(|err| BackendError::Decode(err.to_string()))
    }

    /// The start of the body, one line, for error messages.
    pub fn excerpt(&self) -> String {
        let text = String::from_utf8_lossy(&self.body);
        let line = text.split_whitespace().collect::<Vec<_>>().join(" ");
        crate::table::truncate(&line, 200)
    }
}

/// The HTTP side of one back end.
#[derive(Clone)]
pub struct Http {
    client: reqwest::Client,
    policy: Policy,
    budget: Arc<Budget>,
    timeout: Duration,
    max_bytes: usize,
}

impl Http {
    /// A client from `policy` (which must allow the operator's own service addresses),
    /// sending `headers` on every request.
    pub fn new(
        policy: &Policy,
        budget: Arc<Budget>,
        headers: HeaderMap,
    ) -> Result<Http, BackendError> {
        // reqwest is built without a TLS crypto provider of its own; the first install wins.
        let _ = rustls::crypto::ring::default_provider().install_default();
        let client = policy
            .client_builder()
            .timeout(REQUEST_TIMEOUT)
            .default_headers(headers)
            .build()
            .map_err(|err| BackendError::Config(netguard::describe(&err)))?;
        Ok(Http {
            client,
            policy: policy.clone(),
            budget,
            timeout: REQUEST_TIMEOUT,
            max_bytes: MAX_RESPONSE_BYTES,
        })
    }

    pub fn budget(&self) -> &Budget {
        &self.budget
    }

    /// The URL `{base}{path}` with `query` (empty values left out), checked by the guard.
    pub fn url(
        &self,
        base: &str,
        path: &str,
        query: &[(&str, String)],
    ) -> Result<Url, BackendError> {
        let base = base.trim().trim_end_matches('/');
        if base.is_empty() {
            return Err(BackendError::Config("the base URL is empty".to_owned()));
        }
        let mut url = self
            .policy
            .check_url(&format!("{base}{path}"))
            .map_err(|blocked| BackendError::Blocked(blocked.0))?;
        {
            let mut pairs = url.query_pairs_mut();
            for (name, value) in query.iter().filter(|(_, v)| !v.is_empty()) {
                pairs.append_pair(name, value);
            }
        }
        if url.query() == Some("") {
            url.set_query(None);
        }
        Ok(url)
    }

    /// GETs `url`. A 429 is [`BackendError::RateLimited`] (and a cool-down); every other
    /// status is the caller's to read.
    pub async fn get(&self, url: Url) -> Result<Answer, BackendError> {
        self.budget.acquire().await?;
        let url = self
            .policy
            .check_url(url.as_str())
            .map_err(|blocked| BackendError::Blocked(blocked.0))?;
        let exchange = async {
            let mut response = self.client.get(url).send().await.map_err(transport)?;
            if let Some(addr) = response.remote_addr() {
                self.policy
                    .check_ip(addr.ip())
                    .map_err(|blocked| BackendError::Blocked(blocked.0))?;
            }
            let status = response.status().as_u16();
            let retry_after = retry_after(response.headers().get(reqwest::header::RETRY_AFTER));
            if status == 429 {
                let pause = retry_after.unwrap_or(DEFAULT_COOL_DOWN);
                self.budget.cool_down(pause);
                let body = read_capped(&mut response, 4096).await.unwrap_or_default();
                let answer = Answer { status, body };
                return Err(BackendError::RateLimited {
                    retry_after: Some(pause),
                    message: answer.excerpt(),
                });
            }
            let body = read_capped(&mut response, self.max_bytes).await?;
            Ok(Answer { status, body })
        };
        match tokio::time::timeout(self.timeout, exchange).await {
            Ok(result) => result,
            Err(_) => Err(BackendError::Timeout(self.timeout.as_secs())),
        }
    }

    /// Puts the back end on a cool-down (a service that says "slow down" in a 200).
    pub fn cool_down(&self, duration: Duration) {
        self.budget.cool_down(duration);
    }
}

/// `Retry-After` in seconds (the HTTP-date form is rare from APIs and ignored).
fn retry_after(value: Option<&HeaderValue>) -> Option<Duration> {
    let seconds: u64 = value?.to_str().ok()?.trim().parse().ok()?;
    Some(Duration::from_secs(seconds.min(24 * 3600)))
}

async fn read_capped(
    response: &mut reqwest::Response,
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

fn transport(err: reqwest::Error) -> BackendError {
    match netguard::blocked_reason(&err) {
        Some(blocked) => BackendError::Blocked(blocked.0),
        None => BackendError::Transport(netguard::describe(&err)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::budget::BudgetSettings;

    #[test]
    fn urls_are_checked_and_empty_parameters_left_out() {
        let budget = Arc::new(Budget::new(BudgetSettings::MCP));
        let open = Policy::with_allowed(&["127.0.0.1/32".to_owned()]).unwrap();
        let http = Http::new(&open, budget.clone(), HeaderMap::new()).unwrap();
        let url = http
            .url(
                "http://127.0.0.1:9/stable/",
                "/quote",
                &[("symbol", "AAPL".to_owned()), ("from", String::new())],
            )
            .unwrap();
        assert_eq!(url.as_str(), "http://127.0.0.1:9/stable/quote?symbol=AAPL");
        let strict = Http::new(&Policy::strict(), budget, HeaderMap::new()).unwrap();
        assert!(matches!(
            strict.url("http://10.0.0.1", "/x", &[]),
            Err(BackendError::Blocked(_))
        ));
        assert_eq!(
            retry_after(Some(&HeaderValue::from_static("7"))),
            Some(Duration::from_secs(7))
        );
    }
}
