//! The back-end port of `web_search`: one query in, hits out.

use chrono::NaiveDate;
use protocol::request::{RecencyFilter, SearchType, UserLocation};

/// One search as a back end receives it: the model's query text plus the request's
/// `web_search` options. Back ends pass upstream what their API supports; the tool checks
/// domains and dates again on the hits, so a back end may ignore what it cannot express.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct SearchQuery {
    pub text: String,
    /// How many hits to ask for (1..=50); back ends with a lower cap ask for their cap.
    pub max_results: u32,
    /// Domains the hits must come from (bare, lower case: `example.com`; subdomains count).
    pub allow_domains: Vec<String>,
    /// Domains the hits must not come from (the `-` prefixed entries, without the `-`).
    pub deny_domains: Vec<String>,
    pub recency: Option<RecencyFilter>,
    /// Publication date range (`search_after_date_filter` / `search_before_date_filter`).
    pub published: DateRange,
    /// Last-updated date range (`last_updated_after_filter` / `last_updated_before_filter`).
    pub last_updated: DateRange,
    pub user_location: Option<UserLocation>,
    pub search_type: Option<SearchType>,
    /// The per-page token budget, for back ends that extract page text themselves.
    pub max_tokens_per_page: Option<u32>,
}

/// Hits asked for when a query says 0 (as `SearchQuery::default()` does).
pub const DEFAULT_MAX_RESULTS: u32 = 10;

/// The most hits one query may ask for (`max_results` is 1..=50).
pub const MAX_RESULTS: u32 = 50;

impl SearchQuery {
    /// `max_results` within 1..=50 (0 means [`DEFAULT_MAX_RESULTS`]).
    pub fn limit(&self) -> u32 {
        match self.max_results {
            0 => DEFAULT_MAX_RESULTS,
            n => n.min(MAX_RESULTS),
        }
    }

    /// The text with a `site:` operator when the allow list names exactly one domain,
    /// for services that take query syntax but no domain parameter.
    pub fn text_with_site(&self) -> String {
        match self.allow_domains.as_slice() {
            [domain] => format!("{} site:{domain}", self.text),
            _ => self.text.clone(),
        }
    }

    /// The allow and deny lists in Perplexity's notation (`example.com`, `-spam.com`).
    pub fn domain_filter(&self) -> Vec<String> {
        self.allow_domains
            .iter()
            .cloned()
            .chain(self.deny_domains.iter().map(|domain| format!("-{domain}")))
            .collect()
    }

    /// The ISO 3166-1 alpha-2 country of `user_location`, upper case, when it is one.
    pub fn country(&self) -> Option<String> {
        let country = self.user_location.as_ref()?.country.as_deref()?.trim();
        (country.len() == 2 && country.chars().all(|c| c.is_ascii_alphabetic()))
            .then(|| country.to_ascii_uppercase())
    }
}

/// An inclusive date range; either end may be open.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct DateRange {
    pub after: Option<NaiveDate>,
    pub before: Option<NaiveDate>,
}

impl DateRange {
    pub fn is_open(&self) -> bool {
        self.after.is_none() && self.before.is_none()
    }

    /// Whether `date` lies inside the range (both ends inclusive).
    pub fn contains(&self, date: NaiveDate) -> bool {
        self.after.is_none_or(|after| date >= after)
            && self.before.is_none_or(|before| date <= before)
    }
}

/// One hit as a back end found it.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Hit {
    pub url: String,
    pub title: String,
    /// Text from the page; the tool trims it to the token budgets.
    pub snippet: String,
    /// Publication date, `YYYY-MM-DD`.
    pub date: Option<String>,
    /// Last-updated date, `YYYY-MM-DD`.
    pub last_updated: Option<String>,
}

impl Hit {
    /// A hit from a service's raw fields: none without a URL; dates normalised to
    /// `YYYY-MM-DD` (an unreadable date is dropped).
    pub(crate) fn from_raw(
        url: Option<String>,
        title: Option<String>,
        snippet: Option<String>,
        date: Option<&str>,
        last_updated: Option<&str>,
    ) -> Option<Hit> {
        Some(Hit {
            url: url.filter(|url| !url.is_empty())?,
            title: title.unwrap_or_default(),
            snippet: snippet.unwrap_or_default(),
            date: date.and_then(crate::filter::normalize_date),
            last_updated: last_updated.and_then(crate::filter::normalize_date),
        })
    }
}

/// Why a back end (or the local index) could not answer. Messages never carry API keys.
#[derive(Debug, thiserror::Error)]
pub enum BackendError {
    /// The operator's settings cannot work (a bad base URL, an empty key).
    #[error("invalid web search configuration: {0}")]
    Config(String),
    /// The network guard refused the destination.
    #[error("refused by the network guard: {0}")]
    Blocked(String),
    /// The request did not get an answer (connect error, timeout, reset).
    #[error("request failed: {0}")]
    Transport(String),
    /// The service answered with an error status.
    #[error("the search service answered HTTP {status}{}", detail(.message))]
    Status { status: u16, message: String },
    /// The answer was not the JSON the service documents.
    #[error("unexpected answer from the search service: {0}")]
    Decode(String),
    /// The answer was larger than the cap.
    #[error("the answer is larger than {limit} bytes")]
    TooLarge { limit: usize },
    /// The local index (SQLite) failed.
    #[error("local search index: {0}")]
    Index(String),
    /// A file or URL to add to the local index could not be read or is not text.
    #[error("{0}")]
    Document(String),
}

fn detail(message: &str) -> String {
    if message.is_empty() {
        String::new()
    } else {
        format!(": {message}")
    }
}

/// A search service `web_search` can query.
#[async_trait::async_trait]
pub trait Backend: Send + Sync {
    /// A short name for logs and error texts (`searxng`, `brave`, `tavily`, `perplexity`,
    /// `local index`).
    fn name(&self) -> &'static str;

    /// Runs one query.
    async fn search(&self, query: &SearchQuery) -> Result<Vec<Hit>, BackendError>;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn domain_filter_uses_the_dash_notation() {
        let query = SearchQuery {
            allow_domains: vec!["a.com".into()],
            deny_domains: vec!["b.org".into()],
            ..SearchQuery::default()
        };
        assert_eq!(query.domain_filter(), vec!["a.com", "-b.org"]);
    }

    #[test]
    fn one_allowed_domain_becomes_a_site_operator() {
        let mut query = SearchQuery {
            text: "rust".into(),
            allow_domains: vec!["docs.rs".into()],
            ..SearchQuery::default()
        };
        assert_eq!(query.text_with_site(), "rust site:docs.rs");
        query.allow_domains.push("crates.io".into());
        assert_eq!(query.text_with_site(), "rust");
    }

    #[test]
    fn limits() {
        let with = |max_results| SearchQuery {
            max_results,
            ..SearchQuery::default()
        };
        assert_eq!(with(0).limit(), DEFAULT_MAX_RESULTS);
        assert_eq!(with(7).limit(), 7);
        assert_eq!(with(500).limit(), MAX_RESULTS);
    }

    #[test]
    fn country_is_two_letters_upper_case() {
        let with = |country: &str| SearchQuery {
            user_location: Some(UserLocation {
                country: Some(country.into()),
                ..UserLocation::default()
            }),
            ..SearchQuery::default()
        };
        assert_eq!(with("de").country().as_deref(), Some("DE"));
        assert_eq!(with("Germany").country(), None);
        assert_eq!(SearchQuery::default().country(), None);
    }

    #[test]
    fn date_ranges_are_inclusive() {
        let day = |d| NaiveDate::from_ymd_opt(2025, 3, d).unwrap();
        let range = DateRange {
            after: Some(day(2)),
            before: Some(day(4)),
        };
        assert!(!range.contains(day(1)));
        assert!(range.contains(day(2)));
        assert!(range.contains(day(4)));
        assert!(!range.contains(day(5)));
        assert!(DateRange::default().contains(day(1)));
    }
}
