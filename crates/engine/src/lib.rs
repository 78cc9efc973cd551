//! The agent run: validation, transcript resolution, the run's state machine and its driver,
//! event fan-out, and the background job pool with cancel, resume and crash recovery.
//!
//! `engine` knows no HTTP framework, database or HTTP client: everything slow or external reaches
//! it through the ports defined here ([`model`] for models, [`mcp`] for MCP servers, [`hosted`]
//! for built-in tools, [`store`] for storage, [`clock`] for time, [`secrets`] for sealing).
//!
//! Layout (ARCHITECTURE.md has the map and the walk of a request):
//! - the front door: [`engine`] (start, cancel, resume, workers' lifecycle), `queries` (stored
//!   responses, events, files), `keys`, `listing` (the response listing and pending approvals,
//!   through the [`listing_store`] port);
//! - before a run: `plan` (transcript, models, tools, schema), `presets`, `response` (the echoed
//!   response object), `request` (the model request of a step);
//! - the run: `run` (the state machine and its driver, one concern per file), `runner` (executes
//!   a planned run), [`events`] (the per-run event log), [`transcript`], [`tools`] (the tool
//!   registry), `approvals`, `search` (BM25 for `tool_search`), `citations`, `pricing`;
//! - background runs: `jobs` (workers, leases), `recovery` (runs a stop left unfinished),
//!   `retention`;
//! - [`workspace_snapshots`]: the port that keeps sandbox workspaces in a shared store;
//! - shared: `core` (ports, settings, live runs), `live`, [`config`], [`code`] (the error code
//!   table), [`error`], `ids`, [`clock`], [`metrics`].
//!
//! ```no_run
//! # async fn demo(engine: agentd_engine::Engine, request: protocol::request::CreateRequest) {
//! let handle = engine.start("proj_1", request).await.expect("valid request");
//! let response = handle.finish().await;
//! # }
//! ```

pub mod admin;
pub mod admin_store;
mod approvals;
pub mod budget_map;
mod citations;
pub mod clock;
pub mod code;
mod compact;
mod compaction;
pub mod config;
mod connector_endpoint;
mod connector_tools;
mod conversations;
mod core;
pub mod engine;
pub mod error;
pub mod events;
pub mod hosted;
mod ids;
mod items;
mod job_secrets;
mod jobs;
mod keys;
mod listing;
pub mod listing_store;
mod live;
pub mod mcp;
pub mod metrics;
pub mod model;
pub mod oauth;
mod oauth_pending;
mod plan;
mod presets;
mod pricing;
mod queries;
mod recovery;
mod replicas;
mod request;
mod response;
mod retention;
mod run;
mod runner;
mod search;
pub mod secrets;
pub mod store;
mod tool_checks;
pub mod tools;
pub mod transcript;
pub mod workspace_snapshots;

pub use crate::admin::{Authenticated, Caller};
pub use crate::core::Ports;
pub use clock::{Clock, SystemClock, TokioClock};
pub use code::Code;
pub use config::{EngineConfig, ModelPrice, Preset, Prices};
pub use engine::{Engine, EventStream, RunHandle};
pub use error::{EngineError, RunFailure};
pub use keys::hash_key;
pub use listing::{MAX_PAGE, ResponseQuery};
pub use run::Finished;
