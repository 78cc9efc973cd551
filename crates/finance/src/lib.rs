//! `finance_search`, one of agentd's built-in tools: structured market and company data for
//! public equities and ETFs, as the hosted tool [`FinanceSearch`] (an
//! [`engine::hosted::HostedTool`]) over the sources the operator configured, with an
//! embedded offline default filled from the SEC's own bulk files. It depends on `engine`
//! (the ports), `protocol` (the wire types) and `netguard` only.
//!
//! The model asks for a query, symbols (tickers or company names, resolved) and categories
//! (quote, price history, profile, peers, income statement, balance sheet, cash flow,
//! ratios, earnings, transcript, segments, analyst estimates, market movers, insider
//! trading, ETF holdings, corporate actions, filings), with optional period, limit, date
//! range, interval and fiscal year and quarter. Each (symbol, category) becomes one result
//! of a `finance_results` item and a compact table in the model's text (transcripts cut to
//! the passages matching the query); results with a public page (SEC filings) are citable.
//!
//! # Sources
//! Per category the first source that has it answers; when it fails, the next one that has
//! it is asked; a category nobody can serve is said to be not available, in words, never
//! guessed. Answers are cached in memory (bounded), each source has a request budget (rate
//! and daily cap, a cool-down after "too many requests"), and every HTTP request goes
//! through the network guard.
//!
//! | category | FMP | SEC EDGAR | Alpha Vantage | MCP | local store |
//! | --- | --- | --- | --- | --- | --- |
//! | quote | `/quote` | – | `GLOBAL_QUOTE` | mapped tool | last imported close |
//! | price_history | `/historical-price-eod/full`, `/historical-chart/{i}` | – | `TIME_SERIES_*` | ″ | imported bars |
//! | profile | `/profile` | submissions | `OVERVIEW` | ″ | submissions |
//! | peers | `/stock-peers` | – | – | ″ | same SIC code |
//! | statements | `/income-statement`… | companyfacts | `INCOME_STATEMENT`… | ″ | companyfacts |
//! | ratios | `/ratios` | from facts | `OVERVIEW` | ″ | from facts and prices |
//! | earnings | `/earnings` | reported EPS | `EARNINGS` | ″ | reported EPS |
//! | transcript | `/earning-call-transcript` | – | `EARNINGS_CALL_TRANSCRIPT` | ″ | – |
//! | segments | `/revenue-*-segmentation` | – | – | ″ | – |
//! | analyst_estimates | `/analyst-estimates` | – | `EARNINGS_ESTIMATES` | ″ | – |
//! | market_movers | `/biggest-gainers`… | – | `TOP_GAINERS_LOSERS` | ″ | among imported prices |
//! | insider_trading | `/insider-trading/search` | Forms 3/4/5 | `INSIDER_TRANSACTIONS` | ″ | Forms 3/4/5 |
//! | etf_holdings | `/etf/holdings` | – | `ETF_PROFILE` | ″ | – |
//! | corporate_actions | `/splits`, `/dividends` | – | `DIVIDENDS`, `SPLITS` | ″ | – |
//! | filings | `/sec-filings-search/symbol` | submissions | – | ″ | submissions |
//!
//! # Layout
//! - `category`: [`Category`], [`Period`], [`Interval`]. `args`: the model's arguments.
//! - `backend`: the [`Backend`] port, [`DataRequest`], [`Block`], [`BackendError`].
//! - `table`: [`Table`], rendering for the model. `prices`: bars, weeks and months.
//!   `passages`: transcripts cut to what matches. `names`: company names and tickers.
//!   `records`: reading the services' JSON records.
//! - `http`: the guarded exchange. `budget`: request budgets. `cache`: the answer cache.
//! - `fmp`, `alphavantage`, `edgar`, `mcp`: the sources; `connectors`: the port to saved
//!   connectors an MCP source may name. `facts`, `submissions`,
//!   `statements`, `sec`: the SEC's data, shared by `edgar` and the local store.
//! - `store`: [`LocalStore`] (`store_pg`: its tables in PostgreSQL; `store_copy`: its rows into another store, for `agentd store copy`). `import`: [`import()`] of bulk files and prices.
//! - `service`: [`Finance`] (routing, cache, resolution). `settings`: [`Settings`], [`build`].
//! - `tool`: [`FinanceSearch`].
//!
//! # Example
//! ```
//! # #[tokio::main]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! use std::sync::Arc;
//! use engine::hosted::HostedTool as _;
//!
//! // Once, at start-up: nothing configured but the embedded store.
//! let dir = std::env::temp_dir().join(format!("agentd-finance-doc-{}", std::process::id()));
//! let settings = finance::Settings {
//!     store_path: dir.join("finance.sqlite"),
//!     ..finance::Settings::default()
//! };
//! let service = finance::build(
//!     &settings,
//!     &netguard::Policy::strict(),
//!     Arc::new(engine::mcp::Unavailable),
//! )
//! .await?;
//! assert_eq!(service.sources(), ["local"]);
//! // Per request with a `{"type": "finance_search"}` tool.
//! let tool = finance::FinanceSearch::new(Arc::new(service));
//! assert_eq!(tool.spec().name, finance::TOOL_NAME);
//! # std::fs::remove_dir_all(dir)?;
//! # Ok(())
//! # }
//! ```

mod alphavantage;
mod args;
mod backend;
mod budget;
mod cache;
mod category;
mod connectors;
mod edgar;
mod facts;
mod fmp;
mod http;
mod import;
mod mcp;
mod names;
mod passages;
mod prices;
mod records;
mod sec;
mod service;
mod settings;
mod statements;
mod store;
mod store_copy;
mod store_pg;
mod submissions;
mod table;
mod tool;

pub use alphavantage::AlphaVantage;
pub use backend::{Backend, BackendError, Block, DataRequest, Listing, Symbol, public_link};
pub use budget::{Budget, BudgetSettings};
pub use cache::Lifetimes;
pub use category::{Category, Interval, Period};
pub use connectors::{NoSavedConnectors, ProjectRef, SavedConnector, SavedConnectors};
pub use edgar::Edgar;
pub use fmp::Fmp;
pub use import::{ImportError, ImportReport, import};
pub use mcp::{McpBackend, McpSource};
pub use service::{Answer, Finance};
pub use settings::{DEFAULT_CACHE_ENTRIES, SOURCE_NAMES, Settings, build, build_with, open_store};
pub use store::{Counts, LocalStore};
pub use store_pg::SCHEMA_NAME as POSTGRES_SCHEMA;
pub use table::Table;
pub use tool::{BILLING_KEY, FinanceSearch, MAX_PAIRS, TOOL_NAME};

/// The public endpoints' bases and the sources' names.
pub mod defaults {
    pub use crate::alphavantage::{
        DEFAULT_BASE_URL as ALPHAVANTAGE_BASE_URL, SOURCE as ALPHAVANTAGE,
    };
    pub use crate::edgar::{
        DEFAULT_DATA_URL as SEC_DATA_URL, DEFAULT_WWW_URL as SEC_WWW_URL, SOURCE as SEC_EDGAR,
    };
    pub use crate::fmp::{DEFAULT_BASE_URL as FMP_BASE_URL, SOURCE as FMP};
    pub use crate::store::SOURCE as LOCAL;
}
