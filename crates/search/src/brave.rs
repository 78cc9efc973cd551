//! The Brave Search API: `GET {base}/res/v1/web/search` with the key in
//! `X-Subscription-Token`.
//!
//! Passed upstream: `q` (with a `site:` operator when the allow list names exactly one
//! domain), `count` (Brave's cap is 20), `country` from `user_location`, and `freshness`:
//! `pd`/`pw`/`pm`/`py` for recency (`hour` asks for `pd`) or a `YYYY-MM-DDtoYYYY-MM-DD`
//! range for the publication dates. Brave has no last-updated filter; the tool checks.
//!
//! Images: `GET {base}/res/v1/images/search` (`q`, `count` ≤ 100, `safesearch`
//! `strict`/`off`); results carry the page `url`, `title` and `properties.url` (the image)
//! with `properties.width`/`height` when known.

use chrono::NaiveDate;
use netguard::Policy;
use protocol::request::RecencyFilter;
use reqwest::header::{HeaderMap, HeaderValue};
use serde::Deserialize;
use url::Url;

use crate::backend::{Backend, BackendError, Hit, SearchQuery};
use crate::filter::normalize_date;
use crate::html::clean_inline;
use crate::http;
use crate::image::{ImageBackend, ImageHit, ImageQuery};

/// The public endpoint's base.
pub const DEFAULT_BASE_URL: &str = "https://api.search.brave.com";

/// Brave's largest `count`.
const MAX_COUNT: u32 = 20;

/// The Brave Search API with one subscription token.
pub struct Brave {
    client: reqwest::Client,
    endpoint: Url,
    images_endpoint: Url,
    headers: HeaderMap,
}

impl Brave {
    /// A back end with `api_key`, at `base_url` or [`DEFAULT_BASE_URL`].
    pub fn new(
        api_key: &str,
        base_url: Option<&str>,
        policy: &Policy,
    ) -> Result<Brave, BackendError> {
        let mut headers = HeaderMap::new();
        headers.insert(
            "x-subscription-token",
            http::secret_header("Brave", api_key, "")?,
        );
        headers.insert(
            reqwest::header::ACCEPT,
            HeaderValue::from_static("application/json"),
        );
        let base = base_url.unwrap_or(DEFAULT_BASE_URL);
        Ok(Brave {
            client: http::client(policy)?,
            endpoint: http::endpoint(policy, base, "/res/v1/web/search")?,
            images_endpoint: http::endpoint(policy, base, "/res/v1/images/search")?,
            headers,
        })
    }

    fn url(&self, query: &SearchQuery, today: NaiveDate) -> Url {
        let mut url = self.endpoint.clone();
        {
            let mut pairs = url.query_pairs_mut();
            pairs.append_pair("q", &query.text_with_site());
            pairs.append_pair("count", &query.limit().min(MAX_COUNT).to_string());
            if let Some(country) = query.country() {
                pairs.append_pair("country", &country);
            }
            if let Some(freshness) = freshness(query, today) {
                pairs.append_pair("freshness", &freshness);
            }
        }
        url
    }
}

/// Brave's `freshness` for the query, if it has a recency or publication-date filter.
fn freshness(query: &SearchQuery, today: NaiveDate) -> Option<String> {
    if let Some(recency) = query.recency {
        let code = match recency {
            RecencyFilter::Hour | RecencyFilter::Day => "pd",
            RecencyFilter::Week => "pw",
            RecencyFilter::Month => "pm",
            RecencyFilter::Year => "py",
        };
        return Some(code.to_owned());
    }
    if query.published.is_open() {
        return None;
    }
    let from = query
        .published
        .after
        .unwrap_or(NaiveDate::from_ymd_opt(1970, 1, 1).unwrap_or(NaiveDate::MIN));
    let to = query.published.before.unwrap_or(today);
    Some(format!(
        "{}to{}",
        from.format("%Y-%m-%d"),
        to.format("%Y-%m-%d")
    ))
}

#[derive(Deserialize)]
struct Answer {
    #[serde(default)]
    web: Option<Web>,
}

#[derive(Deserialize)]
struct Web {
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
    description: Option<String>,
    #[serde(default)]
    extra_snippets: Vec<String>,
    /// The page's date, ISO 8601.
    #[serde(default)]
    page_age: Option<String>,
    /// A display date (`January 5, 2025`, or `2 days ago`).
    #[serde(default)]
    age: Option<String>,
}

#[derive(Deserialize)]
struct ImageAnswer {
    #[serde(default)]
    results: Vec<ImageResult>,
}

#[derive(Deserialize)]
struct ImageResult {
    #[serde(default)]
    url: Option<String>,
    #[serde(default)]
    title: Option<String>,
    #[serde(default)]
    properties: Option<ImageProperties>,
}

#[derive(Deserialize)]
struct ImageProperties {
    #[serde(default)]
    url: Option<String>,
    #[serde(default)]
    width: Option<u32>,
    #[serde(default)]
    height: Option<u32>,
}

/// Brave's largest image `count`.
const MAX_IMAGE_COUNT: u32 = 100;

#[async_trait::async_trait]
impl ImageBackend for Brave {
    fn name(&self) -> &'static str {
        "brave"
    }

    async fn search_images(&self, query: &ImageQuery) -> Result<Vec<ImageHit>, BackendError> {
        let mut url = self.images_endpoint.clone();
        url.query_pairs_mut()
            .append_pair("q", &query.text_with_site())
            .append_pair("count", &query.limit().min(MAX_IMAGE_COUNT).to_string())
            .append_pair(
                "safesearch",
                if query.safe_search { "strict" } else { "off" },
            );
        let request = self.client.get(url).headers(self.headers.clone());
        let answer: ImageAnswer = http::send_json(request).await?;
        Ok(answer
            .results
            .into_iter()
            .filter_map(|result| {
                let properties = result.properties?;
                Some(ImageHit {
                    image_url: properties.url.filter(|u| !u.is_empty())?,
                    origin_url: result.url.filter(|u| !u.is_empty())?,
                    title: result.title.map(|t| clean_inline(&t)),
                    width: properties.width.filter(|w| *w > 0),
                    height: properties.height.filter(|h| *h > 0),
                    format: None,
                })
            })
            .take(query.limit() as usize)
            .collect())
    }
}

#[async_trait::async_trait]
impl Backend for Brave {
    fn name(&self) -> &'static str {
        "brave"
    }

    async fn search(&self, query: &SearchQuery) -> Result<Vec<Hit>, BackendError> {
        let today = chrono::Utc::now().date_naive();
        let request = self
            .client
            .get(self.url(query, today))
            .headers(self.headers.clone());
        let answer: Answer = http::send_json(request).await?;
        let results = answer.web.map(|web| web.results).unwrap_or_default();
        Ok(results
            .into_iter()
            .filter_map(|result| {
                let mut snippet = clean_inline(result.description.as_deref().unwrap_or_default());
                for extra in &result.extra_snippets {
                    snippet.push(' ');
                    snippet.push_str(&clean_inline(extra));
                }
                Some(Hit {
                    url: result.url.filter(|url| !url.is_empty())?,
                    title: clean_inline(result.title.as_deref().unwrap_or_default()),
                    snippet: snippet.trim().to_owned(),
                    date: result
                        .page_age
                        .as_deref()
                        .and_then(normalize_date)
                        .or_else(|| result.age.as_deref().and_then(normalize_date)),
                    last_updated: None,
                })
            })
            .take(query.limit() as usize)
            .collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backend::DateRange;

    #[test]
    fn freshness_from_recency_or_dates() {
        let today = NaiveDate::from_ymd_opt(2025, 6, 15).unwrap();
        let query = |recency, after, before| SearchQuery {
            recency,
            published: DateRange { after, before },
            ..SearchQuery::default()
        };
        assert_eq!(freshness(&query(None, None, None), today), None);
        assert_eq!(
            freshness(&query(Some(RecencyFilter::Hour), None, None), today).as_deref(),
            Some("pd")
        );
        assert_eq!(
            freshness(&query(Some(RecencyFilter::Year), None, None), today).as_deref(),
            Some("py")
        );
        let jan = NaiveDate::from_ymd_opt(2025, 1, 2);
        assert_eq!(
            freshness(&query(None, jan, None), today).as_deref(),
            Some("2025-01-02to2025-06-15")
        );
        assert_eq!(
            freshness(&query(None, None, jan), today).as_deref(),
            Some("1970-01-01to2025-01-02")
        );
    }
}
