//! [`FinanceSearch`]: the `finance_search` hosted tool over the shared [`Finance`] service.
//!
//! One call: read the arguments, resolve the symbols, pair every symbol with every category
//! (market movers need none), fetch the pairs (six at a time), and answer with one
//! `finance_results` item (a result per pair that got data), a compact text per result for
//! the model, the pairs nobody could serve said in words, and a citable source for each
//! result with a public page (SEC filings).

use std::fmt::Write as _;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use engine::hosted::{CallContext, HostedTool, Source, ToolOutcome};
use engine::model::ToolSpec;
use futures::StreamExt as _;
use protocol::events::EventData;
use protocol::output::{FinanceResult, FinanceResults, OutputItem};
use serde_json::{Value, json};

use crate::args::{self, Ask, MAX_CATEGORIES, MAX_LIMIT, MAX_ROWS_PER_CATEGORY, MAX_SYMBOLS};
use crate::backend::{DataRequest, Symbol, public_link};
use crate::category::{Category, Interval};
use crate::service::{Answer, Finance};

/// The tool's fixed name.
pub const TOOL_NAME: &str = "finance_search";

/// Its key in `usage.tool_calls_details` (one per call that returned data).
pub const BILLING_KEY: &str = "finance_search";

/// (symbol, category) pairs one call fetches at most.
pub const MAX_PAIRS: usize = 20;

/// Pairs fetched at once.
const CONCURRENCY: usize = 6;

/// Characters of one result's table the model reads.
const MAX_BLOCK_CHARS: usize = 6000;

/// Characters of the whole answer the model reads.
const MAX_TEXT_CHARS: usize = 32_000;

const DESCRIPTION: &str = "Structured market and company data for public equities and ETFs: \
quotes, price history, company profiles and peers, income statements, balance sheets, cash \
flows, ratios, earnings, earnings call transcripts, revenue segments, analyst estimates, market \
movers, insider trading, ETF holdings, dividends and splits, SEC filings. Use it for numbers; \
use web search for news and narrative. Returns one table per symbol and category with its \
source and as-of date. Data a configured source does not have is reported as not available: \
never fill it in yourself. Cite results that carry a link as [n].";

/// `finance_search` for one request.
pub struct FinanceSearch {
    finance: Arc<Finance>,
    /// The next result id. Results are numbered from the run's next source number and on
    /// across this tool's calls, so finance ids do not repeat within a response although only
    /// results with a link become citable sources (and move the run's numbering on).
    next_id: AtomicU64,
}

impl FinanceSearch {
    pub fn new(finance: Arc<Finance>) -> FinanceSearch {
        FinanceSearch {
            finance,
            next_id: AtomicU64::new(1),
        }
    }
}

/// How many rows or periods a category shows when the model names no limit, and its cap.
fn limit_for(category: Category, asked: Option<usize>) -> usize {
    let (default, max) = match category {
        Category::PriceHistory => (30, MAX_LIMIT),
        Category::IncomeStatement
        | Category::BalanceSheet
        | Category::CashFlow
        | Category::Ratios
        | Category::Segments
        | Category::AnalystEstimates => (4, MAX_ROWS_PER_CATEGORY),
        Category::Earnings => (8, MAX_ROWS_PER_CATEGORY),
        _ => (10, MAX_ROWS_PER_CATEGORY),
    };
    asked.unwrap_or(default).clamp(1, max)
}

/// The (symbol, category) requests of a call, and notes on what was left out.
fn plan(ask: &Ask, symbols: &[Symbol]) -> (Vec<DataRequest>, Vec<String>) {
    let mut categories = ask.categories.clone();
    if categories.is_empty() {
        categories = if ask.symbols.is_empty() {
            vec![Category::MarketMovers]
        } else {
            vec![Category::Quote, Category::Profile]
        };
    }
    let mut requests = Vec::new();
    let mut notes = Vec::new();
    let request = |category: Category, symbol: Option<Symbol>| {
        let mut r = DataRequest::new(category, symbol);
        r.period = ask.period;
        r.limit = limit_for(category, ask.limit);
        r.from = ask.from;
        r.to = ask.to;
        r.interval = ask.interval.unwrap_or_default();
        r.fiscal_year = ask.fiscal_year;
        r.fiscal_quarter = ask.fiscal_quarter;
        r.query = ask.query.clone();
        r
    };
    for category in &categories {
        if !category.needs_symbol() {
            requests.push(request(*category, None));
        } else if ask.symbols.is_empty() {
            notes.push(format!(
                "{} needs a symbol: pass one in \"symbols\".",
                category.name()
            ));
        }
    }
    for symbol in symbols {
        for category in categories.iter().filter(|c| c.needs_symbol()) {
            requests.push(request(*category, Some(symbol.clone())));
        }
    }
    if requests.len() > MAX_PAIRS {
        notes.push(format!(
            "Only the first {MAX_PAIRS} of {} symbol and category pairs were fetched: ask for the rest in another call.",
            requests.len()
        ));
        requests.truncate(MAX_PAIRS);
    }
    (requests, notes)
}

#[async_trait::async_trait]
impl HostedTool for FinanceSearch {
    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: TOOL_NAME.to_owned(),
            description: Some(DESCRIPTION.to_owned()),
            parameters: json!({
                "type": "object",
                "properties": {
                    "query": {"type": "string", "description": "What you need, in words (picks transcript passages, filing forms, mover lists)."},
                    "symbols": {"type": "array", "items": {"type": "string"}, "maxItems": MAX_SYMBOLS,
                                "description": "Tickers (AAPL, BRK.B) or company names to resolve."},
                    "categories": {"type": "array", "maxItems": MAX_CATEGORIES,
                                   "items": {"type": "string", "enum": Category::ALL.map(Category::name)},
                                   "description": "The data wanted. Default: quote and profile for symbols, market_movers without."},
                    "period": {"type": "string", "enum": ["annual", "quarter", "ttm"], "description": "Statement periods (default annual; earnings default to quarters)."},
                    "limit": {"type": "integer", "minimum": 1, "maximum": MAX_LIMIT,
                              "description": "Periods or rows per category (default 4 statement periods, 8 earnings, 30 price bars, 10 rows otherwise; at most 20 except price_history)."},
                    "from": {"type": "string", "description": "Start date, YYYY-MM-DD."},
                    "to": {"type": "string", "description": "End date, YYYY-MM-DD."},
                    "interval": {"type": "string", "enum": Interval::ALL.map(Interval::name), "description": "Bar length of price_history (default 1day)."},
                    "fiscal_year": {"type": "integer", "description": "A fiscal year (transcripts, statements ending in that year)."},
                    "fiscal_quarter": {"type": "integer", "minimum": 1, "maximum": 4, "description": "A fiscal quarter (transcripts)."}
                },
                "required": ["query"],
                "additionalProperties": false,
            }).into(),
            strict: false,
        }
    }

    async fn call(&self, arguments: &str, context: CallContext<'_>) -> ToolOutcome {
        let ask = match args::parse(arguments) {
            Ok(ask) => ask,
            Err(message) => {
                return ToolOutcome {
                    model_text: message,
                    ..ToolOutcome::default()
                };
            }
        };
        context
            .events
            .emit(EventData::ReasoningStarted { thought: None });

        let resolutions =
            futures::future::join_all(ask.symbols.iter().map(|text| self.finance.resolve(text)))
                .await;
        let mut symbols = Vec::new();
        let mut unresolved = Vec::new();
        for resolution in resolutions {
            match resolution {
                Ok(symbol) if !symbols.contains(&symbol) => symbols.push(symbol),
                Ok(_) => {}
                Err(message) => unresolved.push(message),
            }
        }
        let (mut requests, mut notes) = plan(&ask, &symbols);
        for request in &mut requests {
            request.project = context.project_id.to_owned();
        }
        let finance = &self.finance;
        let answers: Vec<Answer> = futures::stream::iter(requests.iter().cloned())
            .map(|request| async move { finance.answer(&request).await })
            .buffered(CONCURRENCY)
            .collect()
            .await;

        let first_id = context
            .next_source
            .max(self.next_id.load(Ordering::Relaxed));
        let mut next_id = first_id;
        let mut results = Vec::new();
        let mut sources = Vec::new();
        let mut text = String::new();
        let mut missing = Vec::new();
        let shown_query = if ask.query.is_empty() {
            ask.symbols.join(", ")
        } else {
            ask.query.clone()
        };
        let _ = writeln!(text, "finance_search results for \"{shown_query}\":");
        for (request, answer) in requests.iter().zip(answers) {
            let ticker = request.symbol.as_ref().map(|s| s.ticker.clone());
            match answer {
                Answer::Unavailable { reason } => {
                    missing.push(match &ticker {
                        Some(ticker) => format!("{ticker} {}: {reason}", request.category.name()),
                        None => format!("{}: {reason}", request.category.name()),
                    });
                }
                Answer::Data { source, block } => {
                    let id = next_id;
                    next_id += 1;
                    let name = block
                        .name
                        .clone()
                        .or_else(|| request.symbol.as_ref().and_then(|s| s.name.clone()));
                    let title = match &ticker {
                        Some(ticker) => format!("{ticker}: {}", block.title),
                        None => block.title.clone(),
                    };
                    let link = block.url.as_deref().and_then(public_link);
                    let _ = write!(text, "\n[{id}] {title}");
                    if let Some(name) = &name {
                        let _ = write!(text, " — {name}");
                    }
                    let _ = write!(text, " · source: {source}");
                    if let Some(as_of) = &block.as_of {
                        let _ = write!(text, " · as of {as_of}");
                    }
                    text.push('\n');
                    if text.len() < MAX_TEXT_CHARS {
                        text.push_str(
                            &block
                                .table
                                .render(MAX_BLOCK_CHARS.min(MAX_TEXT_CHARS - text.len())),
                        );
                    } else {
                        text.push_str("(table left out: the answer is already long; ask for fewer categories)\n");
                    }
                    for note in &block.notes {
                        let _ = writeln!(text, "Note: {note}");
                    }
                    if let Some(link) = &link {
                        let _ = writeln!(text, "Source page: {link}");
                        sources.push(Source {
                            number: id,
                            url: link.clone(),
                            title: title.clone(),
                        });
                    }
                    let mut data = block.table.to_data();
                    if !block.notes.is_empty() {
                        data.insert("notes".to_owned(), json!(block.notes));
                    }
                    if let Some(link) = link {
                        data.insert("url".to_owned(), Value::String(link));
                    }
                    results.push(FinanceResult {
                        id,
                        symbol: ticker,
                        name,
                        category: request.category.name().to_owned(),
                        title,
                        data,
                        source,
                        as_of: block.as_of,
                    });
                }
            }
        }
        self.next_id.store(next_id, Ordering::Relaxed);
        let last_number = (next_id > first_id).then(|| next_id - 1);
        if results.is_empty() {
            text.push_str("\nNo data was found.\n");
        }
        if !missing.is_empty() {
            text.push('\n');
            for line in &missing {
                let _ = writeln!(text, "Not available: {line}.");
            }
            text.push_str("Say plainly that this data is not available; do not estimate it.\n");
        }
        for message in &unresolved {
            let _ = writeln!(text, "Could not resolve: {message}.");
        }
        notes.dedup();
        for note in &notes {
            let _ = writeln!(text, "Note: {note}");
        }
        if !sources.is_empty() {
            text.push_str(
                "\nCite a result that has a source page as [n], with its number above.\n",
            );
        }
        context
            .events
            .emit(EventData::ReasoningStopped { thought: None });
        let invocations = if results.is_empty() {
            Vec::new()
        } else {
            vec![(BILLING_KEY.to_owned(), 1)]
        };
        let mut queries = vec![shown_query];
        queries.dedup();
        ToolOutcome {
            model_text: text,
            items: vec![OutputItem::FinanceResults(FinanceResults {
                queries,
                results,
            })],
            invocations,
            sources,
            last_number,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plans_pair_symbols_with_categories_and_say_what_was_left_out() {
        let ask = args::parse(r#"{"query": "compare", "symbols": ["AAPL", "MSFT"], "categories": ["ratios", "market_movers"], "period": "quarter"}"#).unwrap();
        let symbols = vec![Symbol::ticker("AAPL"), Symbol::ticker("MSFT")];
        let (requests, notes) = plan(&ask, &symbols);
        let pairs: Vec<(Option<&str>, &str)> = requests
            .iter()
            .map(|r| {
                (
                    r.symbol.as_ref().map(|s| s.ticker.as_str()),
                    r.category.name(),
                )
            })
            .collect();
        assert_eq!(
            pairs,
            [
                (None, "market_movers"),
                (Some("AAPL"), "ratios"),
                (Some("MSFT"), "ratios")
            ]
        );
        assert!(
            requests
                .iter()
                .all(|r| r.period == Some(crate::category::Period::Quarter))
        );
        assert!(notes.is_empty());

        let defaults =
            args::parse(r#"{"query": "how is apple doing", "symbols": ["AAPL"]}"#).unwrap();
        let (requests, _) = plan(&defaults, &symbols[..1]);
        let categories: Vec<Category> = requests.iter().map(|r| r.category).collect();
        assert_eq!(categories, [Category::Quote, Category::Profile]);

        let no_symbol = args::parse(r#"{"query": "x", "categories": ["quote"]}"#).unwrap();
        let (requests, notes) = plan(&no_symbol, &[]);
        assert!(requests.is_empty());
        assert!(notes[0].contains("needs a symbol"), "{notes:?}");

        let many: Vec<Symbol> = (0..10).map(|i| Symbol::ticker(&format!("S{i}"))).collect();
        let wide = args::parse(
            r#"{"query": "x", "symbols": ["a"], "categories": ["quote", "profile", "ratios"]}"#,
        )
        .unwrap();
        let (requests, notes) = plan(&wide, &many);
        assert_eq!(requests.len(), MAX_PAIRS);
        assert!(notes[0].contains("first 20 of 30"), "{notes:?}");
        assert_eq!(limit_for(Category::PriceHistory, Some(90)), 90);
        assert_eq!(limit_for(Category::Filings, Some(90)), 20);
    }
}
