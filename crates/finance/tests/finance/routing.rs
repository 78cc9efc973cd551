//! Routing over several sources: the first that has a category answers, a failing one hands
//! over to the next, a category nobody has is said to be unavailable, answers are cached for
//! their lifetime, and the tool reports it all to the model.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use finance::{
    Answer, Backend, BackendError, Block, Category, DataRequest, Finance, FinanceSearch, Lifetimes,
    Listing, Symbol, Table,
};
use serde_json::json;

use crate::common::{call, results};

/// A source with a fixed set of categories that answers or fails as told.
struct Scripted {
    source: &'static str,
    categories: Vec<Category>,
    fail: Option<BackendError>,
    url: Option<&'static str>,
    fetches: AtomicUsize,
}

impl Scripted {
    fn new(source: &'static str, categories: &[Category]) -> Scripted {
        Scripted {
            source,
            categories: categories.to_vec(),
            fail: None,
            url: None,
            fetches: AtomicUsize::new(0),
        }
    }
    fn failing(mut self, err: BackendError) -> Scripted {
        self.fail = Some(err);
        self
    }
    fn linking(mut self, url: &'static str) -> Scripted {
        self.url = Some(url);
        self
    }
    fn fetches(&self) -> usize {
        self.fetches.load(Ordering::SeqCst)
    }
}

#[async_trait::async_trait]
impl Backend for Scripted {
    fn source(&self) -> &str {
        self.source
    }
    fn supports(&self, category: Category) -> bool {
        self.categories.contains(&category)
    }
    async fn fetch(&self, request: &DataRequest) -> Result<Block, BackendError> {
        self.fetches.fetch_add(1, Ordering::SeqCst);
        if let Some(err) = &self.fail {
            return Err(err.clone());
        }
        let mut table = Table::new(&["field", "value"]);
        table.push(vec![json!("from"), json!(self.source)]);
        Ok(Block {
            title: format!("{} from {}", request.category.label(), self.source),
            table,
            as_of: Some("2025-01-31".to_owned()),
            url: self.url.map(str::to_owned),
            ..Block::default()
        })
    }
    async fn search_name(&self, name: &str) -> Result<Vec<Listing>, BackendError> {
        Ok(if name.eq_ignore_ascii_case("acme robotics") {
            vec![Listing {
                ticker: "ACME".to_owned(),
                name: "Acme Robotics Inc.".to_owned(),
                cik: Some(1),
            }]
        } else {
            Vec::new()
        })
    }
}

fn quote(ticker: &str) -> DataRequest {
    DataRequest::new(Category::Quote, Some(Symbol::ticker(ticker)))
}

#[tokio::test(start_paused = true)]
async fn the_first_source_with_the_category_answers_and_answers_are_cached() {
    let first = Arc::new(Scripted::new(
        "first",
        &[Category::Quote, Category::Profile],
    ));
    let second = Arc::new(Scripted::new(
        "second",
        &[Category::Quote, Category::Filings],
    ));
    let finance = Finance::new(
        vec![first.clone(), second.clone()],
        100,
        Lifetimes::default(),
    );

    let Answer::Data { source, .. } = finance.answer(&quote("AAPL")).await else {
        panic!("no data");
    };
    assert_eq!(source, "first");
    let filings = DataRequest::new(Category::Filings, Some(Symbol::ticker("AAPL")));
    assert!(
        matches!(finance.answer(&filings).await, Answer::Data { source, .. } if source == "second")
    );
    let Answer::Unavailable { reason } = finance
        .answer(&DataRequest::new(
            Category::Segments,
            Some(Symbol::ticker("AAPL")),
        ))
        .await
    else {
        panic!("segments have no source");
    };
    assert_eq!(
        reason,
        "revenue segments is not available from the configured sources (first, second)"
    );

    // Cached: the quote for 30 s, the filing list for a day.
    finance.answer(&quote("AAPL")).await;
    finance.answer(&filings).await;
    assert_eq!((first.fetches(), second.fetches()), (1, 1));
    tokio::time::advance(Duration::from_secs(31)).await;
    finance.answer(&quote("AAPL")).await;
    finance.answer(&filings).await;
    assert_eq!((first.fetches(), second.fetches()), (2, 1));
    assert_eq!(finance.cached(), 2);
}

#[tokio::test]
async fn a_failing_source_hands_over_and_all_failing_is_said() {
    let limited = Arc::new(
        Scripted::new("fmp", &[Category::Quote, Category::Ratios]).failing(
            BackendError::RateLimited {
                retry_after: Some(Duration::from_secs(60)),
                message: "Limit Reach".to_owned(),
            },
        ),
    );
    let spare = Arc::new(Scripted::new("alpha_vantage", &[Category::Quote]));
    let broken = Arc::new(
        Scripted::new("local", &[Category::Ratios])
            .failing(BackendError::NotFound("no facts imported".to_owned())),
    );
    let finance = Finance::new(
        vec![limited.clone(), spare.clone(), broken],
        100,
        Lifetimes::default(),
    );
    assert!(
        matches!(finance.answer(&quote("AAPL")).await, Answer::Data { source, .. } if source == "alpha_vantage")
    );
    let Answer::Unavailable { reason } = finance
        .answer(&DataRequest::new(
            Category::Ratios,
            Some(Symbol::ticker("AAPL")),
        ))
        .await
    else {
        panic!("every source failed");
    };
    assert!(
        reason.contains("fmp: rate limited for 60s: Limit Reach"),
        "{reason}"
    );
    assert!(
        reason.contains("local: no data: no facts imported"),
        "{reason}"
    );
}

#[tokio::test]
async fn the_tool_cites_sources_with_links_and_resolves_names() {
    let sec = Arc::new(
        Scripted::new("sec_edgar", &[Category::Filings, Category::Profile])
            .linking("https://www.sec.gov/cgi-bin/browse-edgar?action=getcompany&CIK=0000000001"),
    );
    let hostile =
        Arc::new(Scripted::new("fmp", &[Category::Quote]).linking("http://10.0.0.7/internal"));
    let finance = Arc::new(Finance::new(vec![hostile, sec], 100, Lifetimes::default()));
    let tool = FinanceSearch::new(finance);
    let outcome = call(
        &tool,
        json!({"query": "acme", "symbols": ["Acme Robotics", "zzzz corp"], "categories": ["quote", "filings", "etf_holdings"]}),
        1,
    )
    .await;
    let item = results(&outcome);
    let categories: Vec<&str> = item["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["category"].as_str().unwrap())
        .collect();
    assert_eq!(categories, ["quote", "filings"]);
    assert_eq!(item["results"][0]["symbol"], "ACME");
    // Only the public link is citable; the private one is neither cited nor shown.
    assert_eq!(outcome.sources.len(), 1);
    assert_eq!(outcome.sources[0].number, 2);
    assert!(outcome.sources[0].url.starts_with("https://www.sec.gov/"));
    assert!(
        !outcome.model_text.contains("10.0.0.7"),
        "{}",
        outcome.model_text
    );
    assert!(item["results"][0]["data"].get("url").is_none());
    let text = &outcome.model_text;
    assert!(text.contains("Not available: ACME etf_holdings: ETF holdings is not available from the configured sources (fmp, sec_edgar)"), "{text}");
    assert!(
        text.contains("Could not resolve: \"zzzz corp\" matched no ticker"),
        "{text}"
    );
    assert!(
        text.contains("Cite a result that has a source page as [n]"),
        "{text}"
    );

    // Nothing to fetch: no item data, no billing, and the model is told why.
    let nothing = call(
        &tool,
        json!({"query": "x", "symbols": ["AAPL"], "categories": ["segments"]}),
        9,
    )
    .await;
    assert!(results(&nothing)["results"].as_array().unwrap().is_empty());
    assert!(nothing.invocations.is_empty());
    assert!(nothing.model_text.contains("No data was found."));
    let invalid = call(&tool, json!({"query": "x", "categories": ["weather"]}), 9).await;
    assert!(invalid.items.is_empty());
    assert!(invalid.model_text.contains("unknown category"));
}
