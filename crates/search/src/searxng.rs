//! SearxNG's JSON API: `GET {base}/search?q=…&format=json` (the instance must have the
//! `json` format enabled in its `settings.yml`). Images: the same with
//! `categories=images` (results carry `img_src`, the page `url`, `title` and often
//! `resolution`), `safesearch=2` when the request asks for safe search.
//!
//! Passed upstream: the query, `time_range` for recency (`hour` asks for `day`), and a
//! `site:` operator when the allow list names exactly one domain (SearxNG hands query
//! syntax to its engines). SearxNG has no result count, date range or location
//! parameters: the tool cuts and checks the hits itself.

use netguard::Policy;
use protocol::request::RecencyFilter;
use serde::Deserialize;
use url::Url;

use crate::backend::{Backend, BackendError, Hit, SearchQuery};
use crate::http;
use crate::image::{ImageBackend, ImageHit, ImageQuery, parse_resolution};

/// A SearxNG instance.
pub struct SearxNg {
    client: reqwest::Client,
    endpoint: Url,
}

impl SearxNg {
    /// A back end for the instance at `base_url` (`https://searx.example.org`, or one on a
    /// private address that `policy` allows).
    pub fn new(base_url: &str, policy: &Policy) -> Result<SearxNg, BackendError> {
        Ok(SearxNg {
            client: http::client(policy)?,
            endpoint: http::endpoint(policy, base_url, "/search")?,
        })
    }

    fn url(&self, query: &SearchQuery) -> Url {
        let mut url = self.endpoint.clone();
        {
            let mut pairs = url.query_pairs_mut();
            pairs.append_pair("q", &query.text_with_site());
            pairs.append_pair("format", "json");
            pairs.append_pair("pageno", "1");
            if let Some(recency) = query.recency {
                pairs.append_pair("time_range", time_range(recency));
            }
        }
        url
    }
}

fn time_range(recency: RecencyFilter) -> &'static str {
    match recency {
        RecencyFilter::Hour | RecencyFilter::Day => "day",
        RecencyFilter::Week => "week",
        RecencyFilter::Month => "month",
        RecencyFilter::Year => "year",
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
    #[serde(default, rename = "publishedDate")]
    published_date: Option<String>,
}

#[derive(Deserialize)]
struct ImageAnswer {
    #[serde(default)]
    results: Vec<ImageResult>,
}

#[derive(Deserialize)]
struct ImageResult {
    #[serde(default)]
    img_src: Option<String>,
    #[serde(default)]
    url: Option<String>,
    #[serde(default)]
    title: Option<String>,
    #[serde(default)]
    resolution: Option<String>,
    #[serde(default)]
    img_format: Option<String>,
}

#[async_trait::async_trait]
impl ImageBackend for SearxNg {
    fn name(&self) -> &'static str {
        "searxng"
    }

    async fn search_images(&self, query: &ImageQuery) -> Result<Vec<ImageHit>, BackendError> {
        let mut url = self.endpoint.clone();
        url.query_pairs_mut()
            .append_pair("q", &query.text_with_site())
            .append_pair("format", "json")
            .append_pair("categories", "images")
            .append_pair("pageno", "1")
            .append_pair("safesearch", if query.safe_search { "2" } else { "0" });
        let request = self
            .client
            .get(url)
            .header(reqwest::header::ACCEPT, "application/json");
        let answer: ImageAnswer = http::send_json(request).await?;
        Ok(answer
            .results
            .into_iter()
            .filter_map(|result| {
                let size = result.resolution.as_deref().and_then(parse_resolution);
                Some(ImageHit {
                    image_url: result.img_src.filter(|u| !u.is_empty())?,
                    origin_url: result.url.filter(|u| !u.is_empty())?,
                    title: result.title.map(|t| crate::html::clean_inline(&t)),
                    width: size.map(|(w, _)| w),
                    height: size.map(|(_, h)| h),
                    format: result.img_format.map(|f| f.to_ascii_lowercase()),
                })
            })
            .take(query.limit() as usize)
            .collect())
    }
}

#[async_trait::async_trait]
impl Backend for SearxNg {
    fn name(&self) -> &'static str {
        "searxng"
    }

    async fn search(&self, query: &SearchQuery) -> Result<Vec<Hit>, BackendError> {
        let request = self
            .client
            .get(self.url(query))
            .header(reqwest::header::ACCEPT, "application/json");
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
