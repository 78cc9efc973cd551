//! The back-end port: [`Backend`], what it is asked ([`DataRequest`]) and what it answers
//! ([`Block`] or [`BackendError`]).

use std::time::Duration;

use chrono::NaiveDate;

use crate::category::{Category, Interval, Period};
use crate::table::Table;

/// A security the request is about, as resolved.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Symbol {
    /// Upper case (`AAPL`, `BRK.B`).
    pub ticker: String,
    pub name: Option<String>,
    /// The SEC's Central Index Key, when known.
    pub cik: Option<u64>,
}

impl Symbol {
    pub fn ticker(ticker: &str) -> Symbol {
        Symbol {
            ticker: ticker.trim().to_ascii_uppercase(),
            name: None,
            cik: None,
        }
    }
}

/// A listing a name search found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Listing {
    pub ticker: String,
    pub name: String,
    pub cik: Option<u64>,
}

/// One (symbol, category) to fetch, with the call's options.
#[derive(Debug, Clone, PartialEq)]
pub struct DataRequest {
    pub category: Category,
    /// `None` only for categories that need none (market movers).
    pub symbol: Option<Symbol>,
    /// As asked; [`DataRequest::period`] gives the default (annual).
    pub period: Option<Period>,
    /// Rows or periods wanted.
    pub limit: usize,
    pub from: Option<NaiveDate>,
    pub to: Option<NaiveDate>,
    pub interval: Interval,
    pub fiscal_year: Option<i32>,
    pub fiscal_quarter: Option<u8>,
    /// The model's query: picks transcript passages, filing forms and mover lists.
    pub query: String,
    /// The caller's project (a saved connector used per project is looked up in it).
    pub project: String,
}

impl DataRequest {
    /// A request with defaults for everything but the category and symbol.
    pub fn new(category: Category, symbol: Option<Symbol>) -> DataRequest {
        DataRequest {
            category,
            symbol,
            period: None,
            limit: 4,
            from: None,
            to: None,
            interval: Interval::Day1,
            fiscal_year: None,
            fiscal_quarter: None,
            query: String::new(),
            project: String::new(),
        }
    }

    /// The period asked for, annual when none was.
    pub fn period(&self) -> Period {
        self.period.unwrap_or_default()
    }

    /// The ticker, or `NotFound` for a category that needs one.
    pub fn ticker(&self) -> Result<&str, BackendError> {
        self.symbol
            .as_ref()
            .map(|s| s.ticker.as_str())
            .ok_or_else(|| BackendError::NotFound("no symbol was given".to_owned()))
    }

    /// What identifies the answer in a cache, for one source.
    pub fn cache_key(&self, source: &str) -> String {
        let date = |d: &Option<NaiveDate>| d.map(|d| d.to_string()).unwrap_or_default();
        // Only categories whose answer depends on the words read them.
        let words = match self.category {
            Category::Transcript | Category::Filings | Category::MarketMovers => {
                self.query.to_lowercase()
            }
            _ => String::new(),
        };
        format!(
            "{source}|{}|{}|{}|{}|{}|{}|{}|{}|{}|{words}",
            self.category.name(),
            self.symbol.as_ref().map_or("", |s| s.ticker.as_str()),
            self.period.map_or("", Period::name),
            self.limit,
            date(&self.from),
            date(&self.to),
            self.interval.name(),
            self.fiscal_year.map(|y| y.to_string()).unwrap_or_default(),
            self.fiscal_quarter
                .map(|q| q.to_string())
                .unwrap_or_default(),
        )
    }
}

/// One answer: a titled table with its date and, when there is one, a public page it came
/// from (which the answer may cite).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Block {
    /// E.g. "Income statement (annual, USD)".
    pub title: String,
    /// The company's name, when the source says it.
    pub name: Option<String>,
    pub table: Table,
    /// When the data was current (`YYYY-MM-DD` or RFC 3339).
    pub as_of: Option<String>,
    /// A public page with this data (an SEC filing), for citations.
    pub url: Option<String>,
    /// Caveats the model must read (stale prices, a cut transcript, derived values).
    pub notes: Vec<String>,
}

/// Why a back end gave no data. Messages never carry a key or a URL with a key.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BackendError {
    /// The source has no such data (unknown symbol, empty answer, a variant it lacks).
    #[error("no data: {0}")]
    NotFound(String),
    /// The source asked us to slow down (HTTP 429, Alpha Vantage's notes), or our own
    /// per-minute budget has no room; the back end is not asked again before `retry_after`.
    #[error("rate limited{}: {message}", retry_after.map(|d| format!(" for {}s", d.as_secs().max(1))).unwrap_or_default())]
    RateLimited {
        retry_after: Option<Duration>,
        message: String,
    },
    /// The daily request budget the operator set is used up.
    #[error("the daily request budget ({0} requests) is used up")]
    BudgetExhausted(u32),
    /// The key is missing, wrong, or the plan does not include this data.
    #[error("access refused: {0}")]
    Refused(String),
    /// An error answer.
    #[error("the service answered with an error{}: {message}", status.map(|s| format!(" (HTTP {s})")).unwrap_or_default())]
    Upstream {
        status: Option<u16>,
        message: String,
    },
    /// The network guard refused the destination.
    #[error("refused by the network guard: {0}")]
    Blocked(String),
    #[error("the request failed: {0}")]
    Transport(String),
    #[error("no answer within {0} s")]
    Timeout(u64),
    #[error("the answer is larger than {limit} bytes")]
    TooLarge { limit: usize },
    #[error("the answer could not be read: {0}")]
    Decode(String),
    /// The back end is misconfigured (empty key, bad base URL).
    #[error("misconfigured: {0}")]
    Config(String),
    /// The embedded store failed.
    #[error("the local finance store failed: {0}")]
    Store(String),
}

/// A source of financial data (Financial Modeling Prep, SEC EDGAR, Alpha Vantage, an MCP
/// server, the embedded store).
#[async_trait::async_trait]
pub trait Backend: Send + Sync {
    /// The `source` of its results: `fmp`, `sec_edgar`, `alpha_vantage`, `mcp:<label>`,
    /// `local`.
    fn source(&self) -> &str;
    /// Whether it has this category at all (a variant it lacks, e.g. intraday bars, is a
    /// `NotFound` from [`Backend::fetch`]).
    fn supports(&self, category: Category) -> bool;
    /// Whether its answers depend on the caller's project (a saved connector used per
    /// project): they are then cached per project.
    fn per_project(&self) -> bool {
        false
    }
    /// Fetches one (symbol, category).
    async fn fetch(&self, request: &DataRequest) -> Result<Block, BackendError>;
    /// The listing of an exact ticker, from data the back end holds anyway (no request
    /// just for this). `None` when unknown or not cheap.
    async fn lookup_ticker(&self, _ticker: &str) -> Option<Listing> {
        None
    }
    /// Listings whose company name matches `name`, best first.
    async fn search_name(&self, _name: &str) -> Result<Vec<Listing>, BackendError> {
        Ok(Vec::new())
    }
}

/// A link a back end returned, if it may be shown and cited: `http(s)`, no credentials, not
/// an IP literal in a private range (`http://169.254.169.254/…`). Links are only ever shown,
/// never fetched; this keeps a hostile or broken service from planting internal addresses
/// in answers.
pub fn public_link(url: &str) -> Option<String> {
    netguard::Policy::strict()
        .check_url(url.trim())
        .ok()
        .map(|url| url.to_string())
}
