//! The agent run: validation, transcript resolution, the step loop, event fan-out, and the
//! background job pool with cancel, resume and crash recovery.
//!
//! `engine` knows no HTTP framework, database or HTTP client: everything slow or external reaches
//! it through the ports defined here ([`model::ModelClient`] and [`model::ModelRouter`] for
//! models, [`store::Store`] for storage).
//!
//! Layout: [`engine`] (the front door: start, cancel, resume, retrieve, keys), `run` (the step
//! loop), `jobs` (background workers, leases, recovery, retention), [`events`] (the per-run event
//! log that feeds SSE writers, resumes and the store), [`transcript`] (continuation transcripts
//! and model messages), [`tools`] (the run's tool registry), [`metrics`], [`model`] and [`store`]
//! (the ports), [`error`].
//!
//! ```no_run
//! # async fn demo(engine: agentd_engine::Engine, request: protocol::request::CreateRequest) {
//! let handle = engine.start("proj_1", request).await.expect("valid request");
//! let response = handle.finish().await;
//! # }
//! ```

mod approvals;
pub mod engine;
pub mod error;
pub mod events;
pub mod hosted;
mod jobs;
mod keys;
pub mod mcp;
pub mod metrics;
pub mod model;
mod run;
mod search;
pub mod store;
pub mod tools;
pub mod transcript;

pub use engine::{Engine, EngineConfig, EventStream, ModelPrice, Ports, Preset, Prices, RunHandle};
pub use error::EngineError;
pub use keys::hash_key;
