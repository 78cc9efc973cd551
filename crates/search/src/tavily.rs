//! Tavily: `POST {base}/search` with a JSON body and `Authorization: Bearer <key>`.
//!
//! Passed upstream: `query`, `max_results` (Tavily's cap is 20), `include_domains` /
//! `exclude_domains`, `time_range` for recency (`hour` asks for `day`) and
//! `start_date`/`end_date` (`YYYY-MM-DD`) for the publication dates. Tavily's `country`
//! takes a country name rather than an ISO code, so `user_location` is not passed; nor
//! is the last-updated range, which Tavily lacks. Dates come back only for news
//! results (`published_date`).

use netguard::Policy;
use protocol::request::RecencyFilter;
use reqwest::header::{AUTHORIZATION, HeaderValue};
use serde::{Deserialize, Serialize};
use url::Url;

use crate::backend::{Backend, BackendError, Hit, SearchQuery};
use crate::http;

/// The public endpoint's base.
pub const DEFAULT_BASE_URL: &str = "https://api.tavily.com";

/// Tavily's largest `max_results`.
const MAX_COUNT: u32 = 20;

/// Tavily with one API key.
pub struct Tavily {
    client: reqwest::Client,
    endpoint: Url,
    authorization: HeaderValue,
}

impl Tavily {
    /// A back end with `api_key`, at `base_url` or [`DEFAULT_BASE_URL`].
    pub fn new(
        api_key: &str,
        base_url: Option<&str>,
        policy: &Policy,
    ) -> Result<Tavily, BackendError> {
        Ok(Tavily {
            authorization: http::secret_header("Tavily", api_key, "Bearer ")?,
            client: http::client(policy)?,
            endpoint: http::endpoint(policy, base_url.unwrap_or(DEFAULT_BASE_URL), "/search")?,
        })
    }
}

#[derive(Serialize)]
struct Request<'a> {
    query: &'a str,
    max_results: u32,
    search_depth: &'static str,
    topic: &'static str,
    include_answer: bool,
    include_raw_content: bool,
    #[serde(skip_serializing_if = "<[String]>::is_empty")]
    include_domains: &'a [String],
    #[serde(skip_serializing_if = "<[String]>::is_empty")]
    exclude_domains: &'a [String],
    #[serde(skip_serializing_if = "Option::is_none")]
    time_range: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    start_date: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    end_date: Option<String>,
}

fn request(query: &SearchQuery) -> Request<'_> {
    let ymd = |date: chrono::NaiveDate| date.format("%Y-%m-%d").to_string();
    Request {
        query: &query.text,
        max_results: query.limit().min(MAX_COUNT),
        search_depth: "basic",
        topic: "general",
        include_answer: false,
        include_raw_content: false,
        include_domains: &query.allow_domains,
        exclude_domains: &query.deny_domains,
        time_range: query.recency.map(|recency| match recency {
            RecencyFilter::Hour | RecencyFilter::Day => "day",
            RecencyFilter::Week => "week",
            RecencyFilter::Month => "month",
            RecencyFilter::Year => "year",
        }),
        start_date: query.published.after.map(ymd),
        end_date: query.published.before.map(ymd),
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
    content: Option<String>,
    #[serde(default)]
    published_date: Option<String>,
}

#[async_trait::async_trait]
impl Backend for Tavily {
    fn name(&self) -> &'static str {
        "tavily"
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
                    result.content,
                    result.published_date.as_deref(),
                    None,
                )
            })
            .take(query.limit() as usize)
            .collect())
    }
}
