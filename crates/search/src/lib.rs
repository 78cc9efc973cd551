//! `web_search` and `image_search`, two of agentd's built-in tools: the hosted tools
//! ([`WebSearch`], [`ImageSearch`], [`engine::hosted::HostedTool`]s) and the search
//! services behind them, including an embedded local index (SQLite FTS5) that
//! `agentd index add` fills. The server picks the back end
//! once at start-up and builds a [`WebSearch`] per request. It depends on `engine` (the
//! port), `protocol` (the wire types) and `netguard` only.
//!
//! One call takes 1 to 3 queries from the model, runs them concurrently on the
//! configured [`Backend`], checks every hit against the request's filters (whatever the
//! service did with them), merges the lists (round robin, one entry per URL, at most
//! `max_results`), trims snippets to the token budgets, and numbers the results from the
//! run's next source number. It emits `response.reasoning.started`, `…search_queries`,
//! `…search_results` and `…stopped`, returns one `search_results` item, a numbered text
//! for the model, one citable source per result and `("search_web", queries answered)`.
//! A failing service is an error text for the model, never a failed run.
//!
//! `image_search` takes 1 to 3 queries on its [`ImageBackend`] (SearxNG's image category,
//! Brave's image search, else the local index's images: the `<img>` elements with alt text
//! of pages added with `agentd index add`), checks the image and page URL of every hit with
//! the network guard, reads the first 64 KiB of an image (through the guarded client) when
//! its size or format is not known, applies `domain_filter` and `format_filter`, and
//! returns one `image_search_results` item as the SDK types it (`image_url`, `origin_url`,
//! `title`, `width`, `height`), the `response.reasoning.image_search_*` events, the pages as
//! citable sources and `("image_search", queries answered)`.
//!
//! # Back ends
//! Chosen by [`backend_from_settings`] from the operator's settings, first configured
//! wins: SearxNG ([`SearxNg`]), Brave ([`Brave`]), Tavily ([`Tavily`]), Perplexity's
//! Search API ([`Perplexity`]), else the embedded [`LocalIndex`] (SQLite FTS5). Every
//! HTTP request goes through a client from the network guard, with a 20 s timeout and a
//! 4 MiB answer cap.
//!
//! | option | SearxNG | Brave | Tavily | Perplexity | local index | final check |
//! | --- | --- | --- | --- | --- | --- | --- |
//! | `max_results` | cut | `count` ≤ 20 | `max_results` ≤ 20 | `max_results` ≤ 20 | `LIMIT` | merged list cut |
//! | domain allow list | `site:` if one | `site:` if one | `include_domains` | `search_domain_filter` | SQL | host or subdomain |
//! | domain deny list (`-`) | – | – | `exclude_domains` | `search_domain_filter` | SQL | host or subdomain |
//! | recency | `time_range` | `freshness` | `time_range` | `search_recency_filter` | SQL | date ≥ now − period |
//! | publication dates | – | `freshness` range | `start_date`/`end_date` | date filters | SQL | when the hit is dated |
//! | last-updated dates | – | – | – | date filters | SQL | when the hit has one |
//! | `user_location` | – | `country` | – | `country` | – | – |
//!
//! # Layout
//! - `backend`: [`Backend`], [`SearchQuery`], [`Hit`], [`BackendError`].
//! - `filter`: domain lists, date parsing (pure).
//! - `check`: the final check of every hit (pure).
//! - `budget`: `search_context_size` / `max_tokens` / `max_tokens_per_page` (pure).
//! - `http`: the guarded client, capped bodies, error mapping.
//! - `searxng`, `brave`, `tavily`, `perplexity`, `local`: the back ends.
//! - `html`: page text, titles and dates for the local index.
//! - `select`: [`BackendSettings`], [`backend_from_settings`] and
//!   [`image_backend_from_settings`].
//! - `tool`: [`WebSearch`].
//! - `image`: the [`ImageBackend`] port, [`ImageQuery`], [`ImageHit`] (SearxNG, Brave and
//!   the local index implement it in their own modules); `image_tool`: [`ImageSearch`].
//!
//! # Example
//! ```
//! # #[tokio::main]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! use engine::hosted::HostedTool as _;
//! use search::{BackendSettings, WebSearch, backend_from_settings};
//!
//! // Once, at start-up: no search service is configured, so the embedded local index.
//! let dir = std::env::temp_dir().join(format!("agentd-search-doc-{}", std::process::id()));
//! let settings = BackendSettings {
//!     local_index_path: dir.join("index.sqlite"),
//!     local_index_url: None,
//!     ..BackendSettings::default()
//! };
//! let backend = backend_from_settings(&settings, &netguard::Policy::strict()).await?;
//! assert_eq!(backend.name(), "local index");
//! // Per request, for its `{"type": "web_search", ...}` entry at `tools[0]`.
//! let config = protocol::request::WebSearchTool::default();
//! let web_search = WebSearch::new(backend, 0, &config)?;
//! assert_eq!(web_search.spec().name, search::TOOL_NAME);
//! # drop(web_search);
//! # std::fs::remove_dir_all(dir)?;
//! # Ok(())
//! # }
//! ```

mod backend;
mod brave;
mod budget;
mod check;
mod filter;
mod html;
mod http;
mod image;
mod image_tool;
mod local;
mod local_pg;
mod local_text;
mod perplexity;
mod searxng;
mod select;
mod tavily;
mod tool;

pub use backend::{
    Backend, BackendError, DEFAULT_MAX_RESULTS, DateRange, Hit, MAX_RESULTS, SearchQuery,
};
pub use brave::Brave;
pub use budget::{Budget, CHARS_PER_TOKEN, MIN_SNIPPET_CHARS};
pub use filter::{domain_allowed, host_matches, normalize_date, parse_date, split_domain_filter};
pub use image::{DEFAULT_MAX_IMAGES, ImageBackend, ImageHit, ImageQuery};
pub use image_tool::{IMAGE_TOOL_NAME, ImageSearch, ImageShared};
pub use local::{LocalIndex, MAX_DOCUMENT_BYTES};
pub use perplexity::Perplexity;
pub use searxng::SearxNg;
pub use select::{
    BackendKind, BackendSettings, backend_from_settings, image_backend_from_settings,
    open_local_index,
};
pub use tavily::Tavily;
pub use tool::{BILLING_KEY, MAX_QUERIES, TOOL_NAME, WebSearch};

/// The public endpoints' bases, for operators' documentation and overrides.
pub mod defaults {
    pub use crate::brave::DEFAULT_BASE_URL as BRAVE_BASE_URL;
    pub use crate::perplexity::DEFAULT_BASE_URL as PERPLEXITY_BASE_URL;
    pub use crate::tavily::DEFAULT_BASE_URL as TAVILY_BASE_URL;
}
