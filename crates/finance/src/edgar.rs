//! SEC EDGAR (`AGENTD_SEC_USER_AGENT`): keyless, but every request must name a contact in its
//! `User-Agent` (the SEC answers 403 otherwise), at most 10 requests a second.
//!
//! - `{www}/files/company_tickers.json`: ticker → CIK and company names (kept a day).
//! - `{data}/submissions/CIK##########.json`: profile and filings (older filings in pages the
//!   file names, fetched only when the date range reaches back to them, and only from the
//!   SEC's own data host).
//! - `{data}/api/xbrl/companyfacts/CIK##########.json`: statements, ratios, reported EPS.
//!
//! Documents are kept per company (a bounded number, an hour for submissions, a day for
//! facts) so several categories of one company cost one download.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use hashlink::LruCache;
use netguard::Policy;
use reqwest::header::{HeaderMap, HeaderValue, USER_AGENT};
use serde::Deserialize;
use tokio::sync::OnceCell;
use tokio::time::Instant;
use url::Url;

use crate::backend::{Backend, BackendError, Block, DataRequest, Listing};
use crate::budget::{Budget, BudgetSettings};
use crate::category::Category;
use crate::facts::{self, CompanyFacts};
use crate::http::Http;
use crate::names;
use crate::sec::{facts_block, filings_block};
use crate::submissions::{self, Filing, Submissions};

/// The SEC's web host (tickers file, archives).
pub const DEFAULT_WWW_URL: &str = "https://www.sec.gov";
/// The SEC's data API host.
pub const DEFAULT_DATA_URL: &str = "https://data.sec.gov";

/// `source` of its results.
pub const SOURCE: &str = "sec_edgar";

/// Older-filing pages read for one request at most.
const MAX_OLDER_PAGES: usize = 3;

/// Companies whose documents are kept.
const KEPT_COMPANIES: usize = 64;

/// One document: when its download was started, and the download (shared by everyone who
/// asks meanwhile).
type Slot<T> = (Instant, Arc<OnceCell<Arc<T>>>);

/// A keyed store of documents fetched once per lifetime, concurrent callers sharing one
/// download.
struct Documents<T> {
    cells: Mutex<LruCache<u64, Slot<T>>>,
    lifetime: Duration,
}

impl<T> Documents<T> {
    fn new(lifetime: Duration) -> Documents<T> {
        Documents {
            cells: Mutex::new(LruCache::new(KEPT_COMPANIES)),
            lifetime,
        }
    }

    async fn get<F, Fut>(&self, key: u64, load: F) -> Result<Arc<T>, BackendError>
    where
        F: FnOnce() -> Fut,
        Fut: Future<Output = Result<T, BackendError>>,
    {
        let cell = {
            let mut cells = self.cells.lock().unwrap_or_else(|p| p.into_inner());
            let now = Instant::now();
            match cells.get(&key) {
                Some((born, cell)) if now.duration_since(*born) < self.lifetime => cell.clone(),
                _ => {
                    let cell = Arc::new(OnceCell::new());
                    cells.insert(key, (now, cell.clone()));
                    cell
                }
            }
        };
        cell.get_or_try_init(|| async { load().await.map(Arc::new) })
            .await
            .cloned()
    }
}

/// The tickers file, indexed.
struct Tickers {
    by_ticker: HashMap<String, Listing>,
    all: Vec<Listing>,
}

#[derive(Deserialize)]
struct RawTicker {
    cik_str: serde_json::Value,
    ticker: String,
    title: String,
}

/// The SEC EDGAR back end.
pub struct Edgar {
    http: Http,
    www: String,
    data: String,
    tickers: Documents<Tickers>,
    submissions: Documents<Submissions>,
    facts: Documents<CompanyFacts>,
}

impl Edgar {
    /// `user_agent` names the operator and a contact (`"Example Corp admin@example.com"`).
    pub fn new(
        policy: &Policy,
        user_agent: &str,
        www: Option<&str>,
        data: Option<&str>,
        budget: BudgetSettings,
    ) -> Result<Edgar, BackendError> {
        let user_agent = user_agent.trim();
        if user_agent.is_empty() {
            return Err(BackendError::Config(
                "the SEC needs a User-Agent with a contact (AGENTD_SEC_USER_AGENT)".to_owned(),
            ));
        }
        let mut headers = HeaderMap::new();
        headers.insert(
            USER_AGENT,
            HeaderValue::from_str(user_agent).map_err(|_| {
                BackendError::Config("AGENTD_SEC_USER_AGENT is not a valid header value".to_owned())
            })?,
        );
        // The SEC's fair-access rule is 10 requests a second: never more.
        let budget = BudgetSettings {
            per_minute: budget.per_minute.min(BudgetSettings::SEC_EDGAR.per_minute),
            ..budget
        };
        Ok(Edgar {
            http: Http::new(policy, Arc::new(Budget::new(budget)), headers)?,
            www: www
                .unwrap_or(DEFAULT_WWW_URL)
                .trim_end_matches('/')
                .to_owned(),
            data: data
                .unwrap_or(DEFAULT_DATA_URL)
                .trim_end_matches('/')
                .to_owned(),
            tickers: Documents::new(Duration::from_secs(24 * 3600)),
            submissions: Documents::new(Duration::from_secs(3600)),
            facts: Documents::new(Duration::from_secs(24 * 3600)),
        })
    }

    pub fn budget(&self) -> &Budget {
        self.http.budget()
    }

    async fn get(&self, url: Url) -> Result<Vec<u8>, BackendError> {
        let answer = self.http.get(url).await?;
        match answer.status {
            200..=299 => Ok(answer.body),
            403 => Err(BackendError::Refused(
                "the SEC refused the request (it needs a User-Agent naming a contact, \
                 AGENTD_SEC_USER_AGENT, and at most 10 requests a second)"
                    .to_owned(),
            )),
            404 => Err(BackendError::NotFound(
                "the SEC has no such document".to_owned(),
            )),
            status => Err(BackendError::Upstream {
                status: Some(status),
                message: answer.excerpt(),
            }),
        }
    }

    async fn tickers(&self) -> Result<Arc<Tickers>, BackendError> {
        self.tickers
            .get(0, || async {
                let url = self
                    .http
                    .url(&self.www, "/files/company_tickers.json", &[])?;
                let body = self.get(url).await?;
                let raw: HashMap<String, RawTicker> = serde_json::from_slice(&body)
                    .map_err(|err| BackendError::Decode(format!("company_tickers.json: {err}")))?;
                let mut all: Vec<(u64, Listing)> = raw
                    .into_iter()
                    .filter_map(|(position, t)| {
                        Some((
                            position.parse().unwrap_or(u64::MAX),
                            Listing {
                                ticker: t.ticker.to_ascii_uppercase(),
                                name: t.title,
                                cik: Some(facts::parse_cik(&t.cik_str)?),
                            },
                        ))
                    })
                    .collect();
                // The file lists the largest companies first: keep that order for names.
                all.sort_by_key(|(position, _)| *position);
                let all: Vec<Listing> = all.into_iter().map(|(_, l)| l).collect();
                let by_ticker = all.iter().map(|l| (l.ticker.clone(), l.clone())).collect();
                Ok(Tickers { by_ticker, all })
            })
            .await
    }

    /// The CIK of the request's company.
    async fn cik(&self, request: &DataRequest) -> Result<u64, BackendError> {
        let symbol = request
            .symbol
            .as_ref()
            .ok_or_else(|| BackendError::NotFound("no symbol was given".to_owned()))?;
        if let Some(cik) = symbol.cik {
            return Ok(cik);
        }
        let tickers = self.tickers().await?;
        find_ticker(&tickers, &symbol.ticker)
            .and_then(|l| l.cik)
            .ok_or_else(|| {
                BackendError::NotFound(format!("{} is not a ticker the SEC lists", symbol.ticker))
            })
    }

    async fn submissions(&self, cik: u64) -> Result<Arc<Submissions>, BackendError> {
        self.submissions
            .get(cik, || async {
                let url =
                    self.http
                        .url(&self.data, &format!("/submissions/CIK{cik:010}.json"), &[])?;
                let body = self.get(url).await?;
                submissions::parse(&body).map_err(BackendError::Decode)
            })
            .await
    }

    async fn facts(&self, cik: u64) -> Result<Arc<CompanyFacts>, BackendError> {
        self.facts
            .get(cik, || async {
                let url = self.http.url(
                    &self.data,
                    &format!("/api/xbrl/companyfacts/CIK{cik:010}.json"),
                    &[],
                )?;
                let body = self.get(url).await?;
                facts::parse(&body, &crate::statements::concepts()).map_err(BackendError::Decode)
            })
            .await
    }

    /// The URL of an older-filings page the submissions file names: only on the SEC's data
    /// host, under `/submissions/`. A name that is an absolute URL elsewhere (a broken or
    /// hostile answer pointing at an internal address) is refused before anything is sent.
    pub fn older_page_url(&self, name: &str) -> Result<Url, BackendError> {
        let base = Url::parse(&format!("{}/submissions/", self.data))
            .map_err(|err| BackendError::Config(format!("the SEC data URL: {err}")))?;
        let url = base
            .join(name.trim())
            .map_err(|err| BackendError::Decode(format!("an older-filings page name: {err}")))?;
        if url.origin() != base.origin() || !url.path().starts_with(base.path()) {
            return Err(BackendError::Blocked(format!(
                "an older-filings page outside the SEC's data host ({})",
                url.host_str().unwrap_or("no host")
            )));
        }
        Ok(url)
    }

    /// Filings of the company in the request's range, older pages included when needed (a
    /// page that cannot be read is left out, and a note says why).
    async fn filings(
        &self,
        cik: u64,
        request: &DataRequest,
    ) -> Result<(Arc<Submissions>, Vec<Filing>, Vec<String>), BackendError> {
        let submissions = self.submissions(cik).await?;
        let mut filings = submissions.filings.clone();
        let mut notes = Vec::new();
        let oldest = filings.last().map(|f| f.filing_date);
        if let Some(from) = request.from
            && oldest.is_none_or(|oldest| from < oldest)
        {
            let pages = submissions
                .older
                .iter()
                .filter(|page| page.to.is_none_or(|to| to >= from))
                .filter(|page| {
                    request
                        .to
                        .is_none_or(|to| page.from.is_none_or(|f| f <= to))
                })
                .take(MAX_OLDER_PAGES);
            for page in pages {
                let read = async {
                    let body = self.get(self.older_page_url(&page.name)?).await?;
                    submissions::parse_page(&body).map_err(BackendError::Decode)
                };
                match read.await {
                    Ok(older) => filings.extend(older),
                    Err(err) => {
                        tracing::warn!(error = %err, "an older-filings page was not read");
                        notes.push(format!("Older filings could not be read: {err}."));
                    }
                }
            }
            filings.sort_by_key(|f| std::cmp::Reverse(f.filing_date));
        }
        Ok((submissions, filings, notes))
    }
}

fn find_ticker<'a>(tickers: &'a Tickers, ticker: &str) -> Option<&'a Listing> {
    let ticker = ticker.trim().to_ascii_uppercase();
    // The SEC writes share classes with a hyphen (BRK-B).
    tickers
        .by_ticker
        .get(&ticker)
        .or_else(|| tickers.by_ticker.get(&ticker.replace(['.', '/'], "-")))
}

#[async_trait::async_trait]
impl Backend for Edgar {
    fn source(&self) -> &str {
        SOURCE
    }

    fn supports(&self, category: Category) -> bool {
        matches!(
            category,
            Category::Profile
                | Category::IncomeStatement
                | Category::BalanceSheet
                | Category::CashFlow
                | Category::Ratios
                | Category::Earnings
                | Category::Filings
                | Category::InsiderTrading
        )
    }

    async fn fetch(&self, request: &DataRequest) -> Result<Block, BackendError> {
        let cik = self.cik(request).await?;
        match request.category {
            Category::Profile => {
                let submissions = self.submissions(cik).await?;
                Ok(Block {
                    title: "Company profile (SEC)".to_owned(),
                    name: Some(submissions.company.name.clone()),
                    table: submissions::profile_table(&submissions.company),
                    as_of: submissions
                        .filings
                        .first()
                        .map(|f| f.filing_date.to_string()),
                    url: Some(submissions::company_url(cik)),
                    notes: Vec::new(),
                })
            }
            Category::Filings | Category::InsiderTrading => {
                let (submissions, filings, notes) = self.filings(cik, request).await?;
                let mut block = filings_block(
                    cik,
                    &submissions.company.name,
                    &filings,
                    request,
                    request.category == Category::InsiderTrading,
                )?;
                block.notes.extend(notes);
                Ok(block)
            }
            _ => {
                let facts = self.facts(cik).await?;
                facts_block(&facts, request, None)
            }
        }
    }

    async fn lookup_ticker(&self, ticker: &str) -> Option<Listing> {
        let tickers = self.tickers().await.ok()?;
        find_ticker(&tickers, ticker).cloned()
    }

    async fn search_name(&self, name: &str) -> Result<Vec<Listing>, BackendError> {
        let tickers = self.tickers().await?;
        let wanted = names::normalize(name);
        let mut found: Vec<(u8, usize, &Listing)> = tickers
            .all
            .iter()
            .enumerate()
            .map(|(i, l)| (names::score(&wanted, &l.name), i, l))
            .filter(|(score, _, _)| *score > 0)
            .collect();
        found.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
        Ok(found
            .into_iter()
            .take(5)
            .map(|(_, _, l)| l.clone())
            .collect())
    }
}
