//! The engine's settings: limits, the workers' pool and leases, retention, the operator's
//! price table and presets. Plain data, validated by the server's config loading.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

/// Engine settings (validated by the server's config loading).
#[derive(Debug, Clone)]
pub struct EngineConfig {
    /// `max_steps` when the request gives none.
    pub default_max_steps: u32,
    /// Background runs executed at once (the worker pool's size).
    pub workers: usize,
    /// Background runs a project may have waiting for a worker; more is 429.
    pub max_queued_per_project: u64,
    /// How long a worker's claim on a job holds without renewal (renewed every third of it).
    pub lease: Duration,
    /// How long event logs are kept for resume.
    pub event_retention: Duration,
    /// How long files shared by responses are kept.
    pub file_retention: Duration,
    /// The operator's price table: fills `usage.cost` (empty: no cost reported).
    pub prices: Arc<Prices>,
    /// Named presets by canonical name (`fast`, `low`, `medium`, `high`, `xhigh`, or the
    /// operator's own).
    pub presets: Arc<HashMap<String, Preset>>,
    /// Other processes (replicas) may serve the same store at the same time (PostgreSQL):
    /// foreground runs then hold a leased job row too, cancels and resumes reach runs other
    /// replicas execute, and start-up ends only runs whose owner stopped renewing its lease
    /// (see `replicas.rs`). `false` (SQLite): this process owns every run in the store.
    pub shared_store: bool,
}

/// A named preset (`preset` / `effort`): defaults a request's own fields override.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Preset {
    pub model: Option<String>,
    pub models: Option<Vec<String>>,
    pub max_steps: Option<u32>,
    pub instructions: Option<String>,
    pub max_output_tokens: Option<u32>,
    /// Tools the preset brings; a request tool of the same type replaces the preset's.
    pub tools: Vec<protocol::request::Tool>,
}

/// The operator's prices, in US dollars.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Prices {
    /// By model id (`provider/model`).
    pub models: HashMap<String, ModelPrice>,
    /// By `usage.tool_calls_details` key (`search_web`, `fetch_url`, `sandbox`, …), per
    /// invocation.
    pub tools: HashMap<String, f64>,
}

/// What one model's tokens cost, per million.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ModelPrice {
    pub input_per_million: f64,
    pub output_per_million: f64,
    /// Cached input tokens; the input price when unset.
    pub cache_read_per_million: Option<f64>,
    /// Input tokens written to the prompt cache; the input price when unset.
    pub cache_write_per_million: Option<f64>,
}

impl Default for EngineConfig {
    fn default() -> Self {
        EngineConfig {
            default_max_steps: 10,
            workers: 16,
            max_queued_per_project: 1000,
            lease: Duration::from_secs(30),
            event_retention: Duration::from_secs(24 * 3600),
            file_retention: Duration::from_secs(7 * 24 * 3600),
            prices: Arc::new(Prices::default()),
            presets: Arc::new(HashMap::new()),
            shared_store: false,
        }
    }
}
