//! Perplexity's Search API: `POST {base}/search` with a JSON body and
//! `Authorization: Bearer <key>`.
//!
//! Everything `web_search` has maps upstream: `query`, `max_results` (20 at most for web
//! search), `search_domain_filter` (the `-` notation), `search_recency_filter`, the four
//! date filters (`MM/DD/YYYY`), `country`, `search_type` and `max_tokens_per_page`.
//! Results carry `date` and `last_updated`.

use netguard::Policy;
use protocol::request::{RecencyFilter, SearchType};
use reqwest::header::{AUTHORIZATION, HeaderValue};
use serde::{Deserialize, Serialize};
use url::Url;

use crate::backend::{Backend, BackendError, Hit, SearchQuery};
use crate::http;

/// The public endpoint's base (the same base as Perplexity's chat completions).
pub const DEFAULT_BASE_URL: &str = "https://api.perplexity.ai";

/// The Search API's largest `max_results` for web search.
const MAX_COUNT: u32 = 20;

/// Perplexity's Search API with one API key.
pub struct Perplexity {
    client: reqwest::Client,
    endpoint: Url,
    authorization: HeaderValue,
}

impl Perplexity {
    /// A back end with `api_key`, at `base_url` or [`DEFAULT_BASE_URL`].
    pub fn new(
        api_key: &str,
        base_url: Option<&str>,
        policy: &Policy,
    ) -> Result<Perplexity, BackendError> {
        Ok(Perplexity {
            authorization: http::secret_header("Perplexity", api_key, "Bearer ")?,
            client: http::client(policy)?,
            endpoint: http::endpoint(policy, base_url.unwrap_or(DEFAULT_BASE_URL), "/search")?,
        })
    }
}

#[derive(Serialize)]
struct Request<'a> {
    query: &'a str,
    max_results: u32,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    search_domain_filter: Vec<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    search_recency_filter: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    search_after_date_filter: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    search_before_date_filter: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    last_updated_after_filter: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    last_updated_before_filter: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    country: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    search_type: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    max_tokens_per_page: Option<u32>,
}

fn request(query: &SearchQuery) -> Request<'_> {
    let us = |date: chrono::NaiveDate| date.format("%m/%d/%Y").to_string();
    Request {
        query: &query.text,
        max_results: query.limit().min(MAX_COUNT),
        search_domain_filter: query.domain_filter(),
        search_recency_filter: query.recency.map(|recency| match recency {
            RecencyFilter::Hour => "hour",
            RecencyFilter::Day => "day",
            RecencyFilter::Week => "week",
            RecencyFilter::Month => "month",
            RecencyFilter::Year => "year",
        }),
        search_after_date_filter: query.published.after.map(us),
        search_before_date_filter: query.published.before.map(us),
        last_updated_after_filter: query.last_updated.after.map(us),
        last_updated_before_filter: query.last_updated.before.map(us),
        country: query.country(),
        search_type: query.search_type.map(|kind| match kind {
            SearchType::Web => "web",
            SearchType::Fast => "fast",
        }),
        max_tokens_per_page: query.max_tokens_per_page,
    }
}

#[derive(Deserialize)]
struct Answer {
    #[serde(default)]
    results: Vec<Result_>,
}

#[derive(Deserialize)]
struct Result_ {
    #[serde(default)]
    url: Option<String>,
    #[serde(default)]
    title: Option<String>,
    #[serde(default)]
    snippet: Option<String>,
    #[serde(default)]
    date: Option<String>,
    #[serde(default)]
    last_updated: Option<String>,
}

#[async_trait::async_trait]
impl Backend for Perplexity {
    fn name(&self) -> &'static str {
        "perplexity"
    }

    async fn search(&self, query: &SearchQuery) -> Result<Vec<Hit>, BackendError> {
        let request = self
            .client
            .post(self.endpoint.clone())
            .header(AUTHORIZATION, self.authorization.clone())
            .json(&request(query));
        let answer: Answer = http::send_json(request).await?;
        Ok(answer
            .results
            .into_iter()
            .filter_map(|result| {
                Hit::from_raw(
                    result.url,
                    result.title,
                    result.snippet,
                    result.date.as_deref(),
                    result.last_updated.as_deref(),
                )
            })
            .take(query.limit() as usize)
            .collect())
    }
}
