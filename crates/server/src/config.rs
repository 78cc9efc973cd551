//! Configuration in two phases (style.md): [`RawConfig`] is what a TOML file holds
//! (`deny_unknown_fields`), [`Config`] is the validated result of
//! defaults < file < environment < command line, computed by [`Config::resolve`] alone.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::PathBuf;

use providers::config::{ENV_SHORTCUTS, ModelListSettings, ProviderConfig, WireApi, env_shortcuts};
use serde::Deserialize;

/// Default listen address.
pub const DEFAULT_LISTEN: &str = "127.0.0.1:8080";
/// Default data directory.
pub const DEFAULT_DATA_DIR: &str = "./agentd-data";
/// The most retries a provider may be given (each waits up to 30 s).
const MAX_RETRIES: u32 = 10;

#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("cannot read config file {path}: {source}")]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("invalid config file {path}: {message}")]
    Parse { path: PathBuf, message: String },
    #[error("invalid {name}: {message}")]
    Invalid { name: String, message: String },
}

/// The config file as written.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawConfig {
    pub listen: Option<String>,
    pub data_dir: Option<PathBuf>,
    pub database_url: Option<String>,
    /// PostgreSQL connections per process (`AGENTD_DATABASE_POOL_SIZE`).
    pub database_pool_size: Option<u32>,
    #[serde(default)]
    pub providers: BTreeMap<String, RawProvider>,
    #[serde(default)]
    pub engine: RawEngine,
    #[serde(default)]
    pub log: RawLog,
    #[serde(default)]
    pub http: RawHttp,
    #[serde(default)]
    pub limits: RawLimits,
    #[serde(default)]
    pub runs: RawRuns,
    #[serde(default)]
    pub network: RawNetwork,
    #[serde(default)]
    pub mcp: RawMcp,
    #[serde(default)]
    pub tools: RawTools,
    #[serde(default)]
    pub prices: RawPrices,
    /// `[presets.NAME]`: what `preset` / `effort` select.
    #[serde(default)]
    pub presets: BTreeMap<String, RawPreset>,
    #[serde(default)]
    pub secrets: RawSecrets,
}

/// `[secrets]`: where the key that seals stored credentials comes from (the key itself only
/// ever from the environment or a file).
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawSecrets {
    pub key_file: Option<PathBuf>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawPreset {
    pub model: Option<String>,
    pub models: Option<Vec<String>>,
    pub max_steps: Option<u32>,
    pub instructions: Option<String>,
    pub max_output_tokens: Option<u32>,
    /// Tool entries exactly as a request's `tools` holds them.
    #[serde(default)]
    pub tools: Vec<toml::Value>,
}

/// `[prices]`: fills `usage.cost`. Dollars per million tokens per model, per invocation per
/// tool.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawPrices {
    #[serde(default)]
    pub models: BTreeMap<String, RawModelPrice>,
    #[serde(default)]
    pub tools: BTreeMap<String, f64>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawModelPrice {
    pub input_per_million: f64,
    pub output_per_million: f64,
    pub cache_read_per_million: Option<f64>,
    pub cache_write_per_million: Option<f64>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawTools {
    #[serde(default)]
    pub web_search: RawWebSearch,
    #[serde(default)]
    pub fetch_url: RawFetchUrl,
    #[serde(default)]
    pub sandbox: RawSandbox,
    #[serde(default)]
    pub finance_search: RawFinanceSearch,
    #[serde(default)]
    pub people_search: RawPeopleSearch,
}

/// `[tools.finance_search]`. API keys never sit in the file: `FMP_API_KEY`,
/// `ALPHAVANTAGE_API_KEY`; MCP tokens come from the variable each server names.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawFinanceSearch {
    /// The sources in the order they are asked (`mcp:<label>` or `mcp`, `fmp`,
    /// `alpha_vantage`, `sec_edgar`, `local`); sources left out are not used.
    pub backends: Option<Vec<String>>,
    pub fmp_base_url: Option<String>,
    pub alphavantage_base_url: Option<String>,
    /// The contact the SEC requires, e.g. "Example Corp admin@example.com"
    /// (`AGENTD_SEC_USER_AGENT` wins). SEC EDGAR is off without one.
    pub sec_user_agent: Option<String>,
    /// The SEC's web host (default `https://www.sec.gov`).
    pub sec_base_url: Option<String>,
    /// The SEC's data host (default `https://data.sec.gov`).
    pub sec_data_base_url: Option<String>,
    /// Answers kept in memory (default 1000).
    pub cache_entries: Option<usize>,
    /// How long quotes, movers and intraday bars are reused, in seconds (default 30).
    pub quote_cache_seconds: Option<u64>,
    /// `[tools.finance_search.budgets.<source>]`: requests per minute and per day.
    #[serde(default)]
    pub budgets: BTreeMap<String, RawBudget>,
    /// `[[tools.finance_search.mcp]]`: MCP servers mapped by tool name.
    #[serde(default)]
    pub mcp: Vec<RawFinanceMcp>,
}

/// A source's request budget.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawBudget {
    pub requests_per_minute: Option<u32>,
    pub requests_per_day: Option<u32>,
}

/// An MCP server answering finance categories with its own tools.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawFinanceMcp {
    /// Names the source (`mcp:<label>`).
    pub label: String,
    /// The server's URL; or, instead, `connector`.
    #[serde(default)]
    pub url: String,
    /// A saved connector's id (`/v1/admin/connectors`) instead of `url`: its endpoint and
    /// credentials are the connector's.
    pub connector: Option<String>,
    /// With `connector`: the project (by name) whose connector serves every project. Unset:
    /// each request uses the connector of its own project, if that project saved one.
    pub project: Option<String>,
    /// The variable holding the server's bearer token (the token never sits in the file).
    pub authorization_env: Option<String>,
    /// The tool argument that carries the ticker (default `symbol`).
    pub symbol_argument: Option<String>,
    /// Category → the server's tool name (`quote = "GLOBAL_QUOTE"`).
    #[serde(default)]
    pub tools: BTreeMap<String, String>,
}

/// `[tools.people_search]`. Keys, tokens and passwords never sit in the file: `PDL_API_KEY`,
/// `APOLLO_API_KEY`, `GITHUB_TOKEN`, and the variables `token_env` / `bind_password_env` name.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawPeopleSearch {
    /// GitHub user search (default: on when `GITHUB_TOKEN` is set).
    pub github: Option<bool>,
    /// The ORCID public API (default false).
    pub orcid: Option<bool>,
    pub pdl_base_url: Option<String>,
    pub apollo_base_url: Option<String>,
    pub github_base_url: Option<String>,
    pub orcid_base_url: Option<String>,
    /// Columns of `agentd people import` kept and shown besides the pinned ones (default none).
    pub extra_columns: Option<Vec<String>>,
    pub scim: Option<RawScim>,
    pub ldap: Option<RawLdap>,
}

/// `[tools.people_search.scim]`: a SCIM 2.0 service.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawScim {
    /// E.g. `https://idp.example.com/scim/v2` (users are read from `{base_url}/Users`).
    pub base_url: String,
    /// The variable holding the bearer token (default `AGENTD_SCIM_TOKEN`).
    pub token_env: Option<String>,
}

/// `[tools.people_search.ldap]`: an LDAP directory.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawLdap {
    /// `ldap://host:389` or `ldaps://host:636`.
    pub url: String,
    pub base_dn: String,
    /// Bind DN (anonymous when unset).
    pub bind_dn: Option<String>,
    /// The variable holding the bind password (default `AGENTD_LDAP_PASSWORD`).
    pub bind_password_env: Option<String>,
    /// Which entries are people (default `(objectClass=person)`).
    pub object_filter: Option<String>,
    /// Upgrade `ldap://` with StartTLS (default false).
    pub starttls: Option<bool>,
    /// Limit on connecting, binding and searching, in ms (default 10000).
    pub timeout_ms: Option<u64>,
}

/// `[tools.sandbox]`.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawSandbox {
    /// The isolation back end: `bwrap` (the only one so far).
    pub backend: Option<String>,
    /// Wall time of one execution, in seconds (default 60).
    pub timeout_s: Option<u64>,
    /// Memory of one execution, in MiB (default 1024).
    pub memory_mb: Option<u64>,
    /// Kept of each of stdout and stderr, in bytes (default 1 MiB).
    pub max_output_bytes: Option<usize>,
    /// Whether code may reach the network (default false).
    pub network: Option<bool>,
    /// Processes one execution may run at once (default 64).
    pub max_processes: Option<u32>,
    /// Largest file one execution may write, in MiB (default 100).
    pub max_file_mb: Option<u64>,
    /// A workspace unused this long is removed, in minutes (default 60).
    pub idle_expiry_minutes: Option<u64>,
    /// What one workspace (a conversation's files) may hold on disk, in MiB (default 1024).
    pub workspace_quota_mb: Option<u64>,
    /// How the quota is enforced: "auto" (default: a file system per workspace where
    /// possible, else measured), "filesystem" (required) or "watch".
    pub quota_enforcement: Option<String>,
    /// Executions running at once on this server (default: one per CPU, as memory allows).
    pub max_concurrent_executions: Option<usize>,
    /// How long an execution waits for a free slot, in seconds (default 60).
    pub queue_timeout_s: Option<u64>,
    /// "require" (default): no code runs without the seccomp filter inside bubblewrap;
    /// "optional": run without it where it cannot be applied.
    pub second_layer: Option<String>,
    /// Landlock inside the sandbox: "auto" (default: where the kernel has it), "require"
    /// (no code runs without it) or "off".
    pub landlock: Option<String>,
    /// Several replicas: the largest packed (compressed) workspace kept in the database for
    /// the other replicas, in MiB (default 64).
    pub snapshot_max_mb: Option<u64>,
}

/// `[tools.web_search]`. API keys never sit in the file: `BRAVE_API_KEY`, `TAVILY_API_KEY`,
/// `PERPLEXITY_API_KEY`.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawWebSearch {
    /// A SearxNG instance (`AGENTD_SEARXNG_URL` wins).
    pub searxng_url: Option<String>,
    pub brave_base_url: Option<String>,
    pub tavily_base_url: Option<String>,
    /// Perplexity's Search API base (`PERPLEXITY_BASE_URL` wins); requests go to `{base}/search`.
    pub perplexity_base_url: Option<String>,
}

/// `[tools.fetch_url]`.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawFetchUrl {
    /// Per page, in ms (default 15000).
    pub timeout_ms: Option<u64>,
    /// Largest body read per page (default 5 MiB).
    pub max_page_bytes: Option<usize>,
    /// Token budget of one call when the request sets no `total_budget_tokens` (default 10000).
    pub default_budget_tokens: Option<u32>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawNetwork {
    /// CIDRs request-supplied URLs may reach although they are private (default: none).
    pub allow_private: Option<Vec<String>>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawMcp {
    /// Limit on each request to an MCP server (initialize, list, call), in ms (default 30000).
    pub request_timeout_ms: Option<u64>,
    /// Limit on connecting and initializing a session at discovery, in ms (default 10000).
    pub connect_timeout_ms: Option<u64>,
    /// Largest answer accepted from an MCP server, in bytes (default 4 MiB).
    pub max_response_bytes: Option<usize>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawHttp {
    /// Interval of SSE keep-alive comments on a quiet stream, in milliseconds (default 15000).
    pub sse_keep_alive_ms: Option<u64>,
    /// A connection with no request in progress (idle between requests, or still sending a
    /// request head) is closed after this long, in milliseconds (default 30000).
    pub idle_timeout_ms: Option<u64>,
    /// A request body must arrive whole within this long, in milliseconds (default 60000).
    pub body_timeout_ms: Option<u64>,
    /// Connections served at once (default: half the open-file limit, at most 16384).
    pub max_connections: Option<usize>,
    /// Host names (besides loopback ones) an open-mode server answers to
    /// (`AGENTD_ALLOWED_HOSTS` wins).
    pub allowed_hosts: Option<Vec<String>>,
    /// How long a WebSocket-mode connection may stay open, in seconds (default 3600): then the
    /// server sends `websocket_connection_limit_reached` and closes it.
    pub websocket_lifetime_secs: Option<u64>,
    /// A WebSocket-mode connection with no response in progress and no message from the client
    /// for this long is closed, in seconds (default 300).
    pub websocket_idle_timeout_secs: Option<u64>,
}

/// `[limits]`: what one request may hold.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawLimits {
    /// Entries in a request's `tools` (default 128).
    pub max_tools: Option<usize>,
    /// Size of all of a request's `tools` as JSON, in bytes (default 1048576).
    pub max_tools_bytes: Option<usize>,
    /// Size of one function tool's `parameters` schema as JSON, in bytes (default 65536).
    pub max_tool_schema_bytes: Option<usize>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawProvider {
    pub api: Option<String>,
    pub base_url: Option<String>,
    /// The variable holding the key (the key itself never sits in the file).
    pub api_key_env: Option<String>,
    #[serde(default)]
    pub models: Vec<String>,
    /// Whether `GET /v1/models` also lists what the upstream's own model list holds (default
    /// true).
    pub list_models: Option<bool>,
    /// How many times a turn is sent again after a retryable upstream error (default 2).
    pub max_retries: Option<u32>,
    /// Bound on connecting to the upstream, in milliseconds (default 10 000).
    pub connect_timeout_ms: Option<u64>,
    /// Longest silence of the upstream before or within an answer, in milliseconds (default
    /// 300 000: reasoning models may think for minutes before the first token).
    pub idle_timeout_ms: Option<u64>,
    /// Idle keep-alive connections to the upstream kept for later turns (default 1024); more
    /// are closed as they become idle, so a spike's connections do not stay open.
    pub max_idle_connections: Option<usize>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawEngine {
    pub default_max_steps: Option<u32>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawRuns {
    /// Background runs executed at once (default 16).
    pub workers: Option<usize>,
    /// Background runs a project may have waiting (default 1000).
    pub max_queued_per_project: Option<u64>,
    /// Job lease in seconds (default 30).
    pub lease_secs: Option<u64>,
    /// How long event logs are kept for resume, in hours (default 24).
    pub event_retention_hours: Option<u64>,
    /// How long files shared by responses are kept, in hours (default 168).
    pub file_retention_hours: Option<u64>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawLog {
    /// `text` (default) or `json`.
    pub format: Option<String>,
}

impl RawConfig {
    pub fn from_toml(text: &str, path: &std::path::Path) -> Result<RawConfig, ConfigError> {
        toml::from_str(text).map_err(|err| ConfigError::Parse {
            path: path.to_owned(),
            message: err.to_string(),
        })
    }

    pub fn read(path: &std::path::Path) -> Result<RawConfig, ConfigError> {
        let text = std::fs::read_to_string(path).map_err(|source| ConfigError::Read {
            path: path.to_owned(),
            source,
        })?;
        RawConfig::from_toml(&text, path)
    }
}

/// Command-line values (highest precedence).
#[derive(Debug, Default, Clone)]
pub struct Flags {
    pub listen: Option<String>,
    pub data_dir: Option<PathBuf>,
    pub database_url: Option<String>,
}

/// Where the store lives.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StoreLocation {
    /// The embedded SQLite database in this directory.
    DataDir(PathBuf),
    /// An explicit SQLite database URL.
    Url(String),
    /// A PostgreSQL database (several replicas may share it).
    Postgres(String),
}

/// How log lines are written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LogFormat {
    Text,
    Json,
}

/// The validated configuration.
#[derive(Debug, Clone)]
pub struct Config {
    pub listen: SocketAddr,
    pub data_dir: PathBuf,
    pub store: StoreLocation,
    /// The PostgreSQL pool (unused on SQLite).
    pub database_pool: store::PoolSettings,
    pub providers: Vec<ProviderConfig>,
    /// How `GET /v1/models` asks the upstreams for their models: the cache lifetimes and the
    /// providers with `list_models = false`.
    pub model_lists: ModelListSettings,
    /// The HTTP options of providers whose section changes a default (`max_retries`).
    pub provider_options: std::collections::HashMap<String, providers::ClientOptions>,
    /// The engine's settings (`[engine]` and `[runs]`).
    pub engine: engine::EngineConfig,
    pub log_format: LogFormat,
    /// Interval of SSE keep-alive comments.
    pub sse_keep_alive: std::time::Duration,
    /// How long a WebSocket-mode connection may stay open (`http.websocket_lifetime_secs`).
    pub websocket_lifetime: std::time::Duration,
    /// How long a WebSocket-mode connection may stay idle
    /// (`http.websocket_idle_timeout_secs`).
    pub websocket_idle_timeout: std::time::Duration,
    /// Connection handling (`[http]`): timeouts and the connection cap.
    pub connections: ConnectionSettings,
    /// How long a request body may take to arrive (`http.body_timeout_ms`).
    pub body_timeout: std::time::Duration,
    /// Host names an open-mode server answers to besides loopback ones, lowercase
    /// (`AGENTD_ALLOWED_HOSTS` or `http.allowed_hosts`).
    pub allowed_hosts: Vec<String>,
    /// What one request may hold (`[limits]`).
    pub request_limits: protocol::limits::RequestLimits,
    /// Private CIDRs request-supplied URLs may reach (`AGENTD_ALLOW_PRIVATE_NETWORKS` or
    /// `[network] allow_private`), validated.
    pub allow_private: Vec<String>,
    pub mcp: McpSettings,
    /// The `web_search` back end (keys from the environment only).
    pub web_search: search::BackendSettings,
    pub fetch_url: FetchUrlSettings,
    pub sandbox: SandboxSettings,
    /// The `finance_search` sources (keys from the environment only).
    pub finance_search: finance::Settings,
    /// The `people_search` back ends (keys and secrets from the environment only).
    pub people_search: people::PeopleSettings,
    /// The key that seals stored credentials.
    pub secrets: SecretsSettings,
}

/// Where the secret key comes from: `AGENTD_SECRET_KEY` (base64), else `AGENTD_SECRET_KEY_FILE`
/// or `[secrets] key_file`; `AGENTD_SECRET_KEYS_OLD` lists keys that only open. None given: a
/// loopback server keeps a generated key in `<data_dir>/secret.key`.
#[derive(Debug, Clone, Default)]
pub struct SecretsSettings {
    pub key: Option<secrecy::SecretString>,
    pub key_file: Option<PathBuf>,
    pub old_keys: Option<secrecy::SecretString>,
}

/// How connections are served (`[http]`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ConnectionSettings {
    /// A connection with no request in progress is closed after this long.
    pub idle_timeout: std::time::Duration,
    /// Connections served at once; `None`: derived from the open-file limit at start.
    pub max_connections: Option<usize>,
}

impl Default for ConnectionSettings {
    fn default() -> Self {
        ConnectionSettings {
            idle_timeout: std::time::Duration::from_millis(DEFAULT_IDLE_TIMEOUT_MS),
            max_connections: None,
        }
    }
}

/// Default of `http.idle_timeout_ms`.
pub const DEFAULT_IDLE_TIMEOUT_MS: u64 = 30_000;
/// Default of `http.body_timeout_ms`.
pub const DEFAULT_BODY_TIMEOUT_MS: u64 = 60_000;
/// Default of `http.websocket_idle_timeout_secs`.
pub const DEFAULT_WEBSOCKET_IDLE_TIMEOUT_SECS: u64 = 300;

/// The sandbox (`[tools.sandbox]`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SandboxSettings {
    pub timeout: std::time::Duration,
    pub memory_mb: u64,
    pub max_output_bytes: usize,
    pub network: bool,
    pub max_processes: u32,
    pub max_file_bytes: u64,
    pub idle_expiry: std::time::Duration,
    /// Where workspaces live: `<data_dir>/sandbox`.
    pub root: PathBuf,
    pub workspace_quota_bytes: u64,
    pub quota_enforcement: QuotaEnforcement,
    /// `None`: sized for the machine when the sandbox starts.
    pub max_concurrent_executions: Option<usize>,
    pub queue_timeout: std::time::Duration,
    pub second_layer: sandbox::SecondLayer,
    pub landlock: LandlockSetting,
    /// The largest packed workspace kept in a shared (PostgreSQL) store, in bytes.
    pub snapshot_max_bytes: u64,
}

/// `tools.sandbox.landlock`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LandlockSetting {
    Auto,
    Require,
    Off,
}

/// How the workspace quota is enforced (`tools.sandbox.quota_enforcement`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum QuotaEnforcement {
    /// A file system per workspace where agentd can mount one, else measured.
    Auto,
    /// A file system per workspace, or no sandbox at all.
    Filesystem,
    /// Measured while code runs.
    Watch,
}

/// Limits of the `fetch_url` tool (`[tools.fetch_url]`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FetchUrlSettings {
    pub timeout: std::time::Duration,
    pub max_page_bytes: usize,
    pub default_budget_tokens: u32,
}

/// Limits of the MCP client (`[mcp]`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct McpSettings {
    pub request_timeout: std::time::Duration,
    pub connect_timeout: std::time::Duration,
    pub max_response_bytes: usize,
}

impl Config {
    /// Merges defaults < file < environment < flags and validates the result.
    pub fn resolve(
        file: RawConfig,
        env: &dyn Fn(&str) -> Option<String>,
        flags: &Flags,
    ) -> Result<Config, ConfigError> {
        let env_var = |name: &str| env(name).filter(|v| !v.trim().is_empty());
        let listen = flags
            .listen
            .clone()
            .or_else(|| env_var("AGENTD_LISTEN"))
            .or(file.listen)
            .unwrap_or_else(|| DEFAULT_LISTEN.to_owned());
        let listen: SocketAddr = listen.parse().map_err(|err| ConfigError::Invalid {
            name: "listen address".to_owned(),
            message: format!("{listen:?}: {err}"),
        })?;
        let data_dir = flags
            .data_dir
            .clone()
            .or_else(|| env_var("AGENTD_DATA_DIR").map(PathBuf::from))
            .or(file.data_dir)
            .unwrap_or_else(|| PathBuf::from(DEFAULT_DATA_DIR));
        let database_url = flags
            .database_url
            .clone()
            .or_else(|| env_var("AGENTD_DATABASE_URL"))
            .or(file.database_url);
        let store = match database_url {
            None => StoreLocation::DataDir(data_dir.clone()),
            Some(url) if url.starts_with("sqlite:") => StoreLocation::Url(url),
            Some(url) if store::is_postgres_url(&url) => StoreLocation::Postgres(url),
            Some(_) => {
                return Err(ConfigError::Invalid {
                    name: "database URL".to_owned(),
                    message: "expected sqlite://… or postgres://…".to_owned(),
                });
            }
        };
        let pool_size = match env_var("AGENTD_DATABASE_POOL_SIZE") {
            Some(text) => Some(
                text.trim()
                    .parse::<u32>()
                    .map_err(|_| ConfigError::Invalid {
                        name: "AGENTD_DATABASE_POOL_SIZE".to_owned(),
                        message: format!("{text:?} is not a whole number"),
                    })?,
            ),
            None => file.database_pool_size,
        };
        let pool_size = pool_size.unwrap_or(store::DEFAULT_POOL_SIZE);
        if !(1..=1000).contains(&pool_size) {
            return Err(ConfigError::Invalid {
                name: "database_pool_size".to_owned(),
                message: "must be within 1..=1000".to_owned(),
            });
        }
        let database_pool = store::PoolSettings {
            max_connections: pool_size,
        };
        let defaults = engine::EngineConfig::default();
        let default_max_steps = file
            .engine
            .default_max_steps
            .unwrap_or(defaults.default_max_steps);
        if !(1..=100).contains(&default_max_steps) {
            return Err(ConfigError::Invalid {
                name: "engine.default_max_steps".to_owned(),
                message: "must be within 1..=100".to_owned(),
            });
        }
        let log_format = match file.log.format.as_deref() {
            None | Some("text") => LogFormat::Text,
            Some("json") => LogFormat::Json,
            Some(other) => {
                return Err(ConfigError::Invalid {
                    name: "log.format".to_owned(),
                    message: format!("{other:?}: expected \"text\" or \"json\""),
                });
            }
        };
        let runs = &file.runs;
        let workers = runs.workers.unwrap_or(defaults.workers);
        if !(1..=1024).contains(&workers) {
            return Err(ConfigError::Invalid {
                name: "runs.workers".to_owned(),
                message: "must be within 1..=1024".to_owned(),
            });
        }
        let lease_secs = runs.lease_secs.unwrap_or(defaults.lease.as_secs());
        if !(3..=3600).contains(&lease_secs) {
            return Err(ConfigError::Invalid {
                name: "runs.lease_secs".to_owned(),
                message: "must be within 3..=3600".to_owned(),
            });
        }
        let retention_hours = runs
            .event_retention_hours
            .unwrap_or(defaults.event_retention.as_secs() / 3600);
        if !(1..=24 * 365).contains(&retention_hours) {
            return Err(ConfigError::Invalid {
                name: "runs.event_retention_hours".to_owned(),
                message: "must be within 1..=8760".to_owned(),
            });
        }
        let file_retention_hours = runs
            .file_retention_hours
            .unwrap_or(defaults.file_retention.as_secs() / 3600);
        if !(1..=24 * 365 * 10).contains(&file_retention_hours) {
            return Err(ConfigError::Invalid {
                name: "runs.file_retention_hours".to_owned(),
                message: "must be within 1..=87600".to_owned(),
            });
        }
        let prices = prices(file.prices)?;
        let presets = presets(file.presets)?;
        let engine = engine::EngineConfig {
            prices: std::sync::Arc::new(prices),
            presets: std::sync::Arc::new(presets),
            file_retention: std::time::Duration::from_secs(file_retention_hours * 3600),
            default_max_steps,
            workers,
            max_queued_per_project: runs
                .max_queued_per_project
                .unwrap_or(defaults.max_queued_per_project),
            lease: std::time::Duration::from_secs(lease_secs),
            event_retention: std::time::Duration::from_secs(retention_hours * 3600),
            // Several replicas may serve a PostgreSQL store.
            shared_store: matches!(store, StoreLocation::Postgres(_)),
        };
        let keep_alive_ms = file.http.sse_keep_alive_ms.unwrap_or(15_000);
        if !(100..=600_000).contains(&keep_alive_ms) {
            return Err(ConfigError::Invalid {
                name: "http.sse_keep_alive_ms".to_owned(),
                message: "must be within 100..=600000".to_owned(),
            });
        }
        let websocket_lifetime_secs = file.http.websocket_lifetime_secs.unwrap_or(3600);
        if !(1..=86_400).contains(&websocket_lifetime_secs) {
            return Err(ConfigError::Invalid {
                name: "http.websocket_lifetime_secs".to_owned(),
                message: "must be within 1..=86400".to_owned(),
            });
        }
        let websocket_idle_timeout_secs = file
            .http
            .websocket_idle_timeout_secs
            .unwrap_or(DEFAULT_WEBSOCKET_IDLE_TIMEOUT_SECS);
        if !(1..=86_400).contains(&websocket_idle_timeout_secs) {
            return Err(ConfigError::Invalid {
                name: "http.websocket_idle_timeout_secs".to_owned(),
                message: "must be within 1..=86400".to_owned(),
            });
        }
        let model_lists = ModelListSettings {
            disabled: file
                .providers
                .iter()
                .filter(|(_, raw)| raw.list_models == Some(false))
                .map(|(name, _)| name.clone())
                .collect(),
            ..ModelListSettings::default()
        };
        let mut provider_options = std::collections::HashMap::new();
        for (name, raw) in &file.providers {
            if let Some(options) = client_options(name, raw)? {
                provider_options.insert(name.clone(), options);
            }
        }
        let providers = merge_providers(file.providers, env)?;
        let allow_private = match env_var("AGENTD_ALLOW_PRIVATE_NETWORKS") {
            Some(list) => {
                netguard::Policy::parse_allow_list(&list).map_err(|err| ConfigError::Invalid {
                    name: "AGENTD_ALLOW_PRIVATE_NETWORKS".to_owned(),
                    message: err.to_string(),
                })?
            }
            None => {
                let list = file.network.allow_private.unwrap_or_default().join(",");
                netguard::Policy::parse_allow_list(&list).map_err(|err| ConfigError::Invalid {
                    name: "network.allow_private".to_owned(),
                    message: err.to_string(),
                })?
            }
        };
        let mcp = McpSettings {
            request_timeout: millis(
                "mcp.request_timeout_ms",
                file.mcp.request_timeout_ms,
                30_000,
            )?,
            connect_timeout: millis(
                "mcp.connect_timeout_ms",
                file.mcp.connect_timeout_ms,
                10_000,
            )?,
            max_response_bytes: match file.mcp.max_response_bytes.unwrap_or(4 << 20) {
                n @ 1024..=268_435_456 => n,
                _ => {
                    return Err(ConfigError::Invalid {
                        name: "mcp.max_response_bytes".to_owned(),
                        message: "must be within 1024..=268435456".to_owned(),
                    });
                }
            },
        };
        let web = file.tools.web_search;
        let web_search = search::BackendSettings {
            searxng_url: env_var("AGENTD_SEARXNG_URL").or(web.searxng_url),
            brave_api_key: env_var("BRAVE_API_KEY"),
            tavily_api_key: env_var("TAVILY_API_KEY"),
            perplexity_api_key: env_var("PERPLEXITY_API_KEY"),
            brave_base_url: web.brave_base_url,
            tavily_base_url: web.tavily_base_url,
            perplexity_base_url: env_var("PERPLEXITY_BASE_URL").or(web.perplexity_base_url),
            local_index_path: data_dir.join(crate::datadir::INDEX_FILE),
            // On PostgreSQL the index lives in the shared database: no replica holds its own.
            local_index_url: match &store {
                StoreLocation::Postgres(url) => Some(url.clone()),
                _ => None,
            },
        };
        let fetch = file.tools.fetch_url;
        let fetch_url = FetchUrlSettings {
            timeout: millis("tools.fetch_url.timeout_ms", fetch.timeout_ms, 15_000)?,
            max_page_bytes: match fetch.max_page_bytes.unwrap_or(5 << 20) {
                n @ 1024..=268_435_456 => n,
                _ => {
                    return Err(ConfigError::Invalid {
                        name: "tools.fetch_url.max_page_bytes".to_owned(),
                        message: "must be within 1024..=268435456".to_owned(),
                    });
                }
            },
            default_budget_tokens: match fetch.default_budget_tokens.unwrap_or(10_000) {
                n @ 1..=120_000 => n,
                _ => {
                    return Err(ConfigError::Invalid {
                        name: "tools.fetch_url.default_budget_tokens".to_owned(),
                        message: "must be within 1..=120000".to_owned(),
                    });
                }
            },
        };
        let sandbox = sandbox_settings(file.tools.sandbox, &data_dir)?;
        let mut finance_search = finance_settings(file.tools.finance_search, env, &data_dir)?;
        // On PostgreSQL the people directory and the finance store live in the shared
        // database too: no replica holds data of its own.
        let shared_database = match &store {
            StoreLocation::Postgres(url) => Some(url.clone()),
            _ => None,
        };
        finance_search.store_url = shared_database.clone();
        let secrets = SecretsSettings {
            key: env_var("AGENTD_SECRET_KEY").map(secrecy::SecretString::from),
            key_file: env_var("AGENTD_SECRET_KEY_FILE")
                .map(PathBuf::from)
                .or(file.secrets.key_file),
            old_keys: env_var("AGENTD_SECRET_KEYS_OLD").map(secrecy::SecretString::from),
        };
        let connections = ConnectionSettings {
            idle_timeout: millis(
                "http.idle_timeout_ms",
                file.http.idle_timeout_ms,
                DEFAULT_IDLE_TIMEOUT_MS,
            )?,
            max_connections: match file.http.max_connections {
                None => None,
                Some(n @ 1..=1_000_000) => Some(n),
                Some(_) => {
                    return Err(ConfigError::Invalid {
                        name: "http.max_connections".to_owned(),
                        message: "must be within 1..=1000000".to_owned(),
                    });
                }
            },
        };
        let body_timeout = millis(
            "http.body_timeout_ms",
            file.http.body_timeout_ms,
            DEFAULT_BODY_TIMEOUT_MS,
        )?;
        let allowed_hosts = match env_var("AGENTD_ALLOWED_HOSTS") {
            Some(list) => host_list("AGENTD_ALLOWED_HOSTS", list.split(','))?,
            None => host_list(
                "http.allowed_hosts",
                file.http.allowed_hosts.iter().flatten().map(String::as_str),
            )?,
        };
        let request_limits = request_limits(&file.limits)?;
        let mut people_search = people_settings(file.tools.people_search, env, &data_dir)?;
        people_search.directory_url = shared_database;
        Ok(Config {
            listen,
            data_dir,
            store,
            database_pool,
            providers,
            model_lists,
            provider_options,
            engine,
            log_format,
            sse_keep_alive: std::time::Duration::from_millis(keep_alive_ms),
            websocket_lifetime: std::time::Duration::from_secs(websocket_lifetime_secs),
            websocket_idle_timeout: std::time::Duration::from_secs(websocket_idle_timeout_secs),
            connections,
            body_timeout,
            allowed_hosts,
            request_limits,
            allow_private,
            mcp,
            web_search,
            fetch_url,
            sandbox,
            finance_search,
            secrets,
            people_search,
        })
    }
}

/// `[tools.people_search]` with the keys and secrets from the environment.
fn people_settings(
    raw: RawPeopleSearch,
    env: &dyn Fn(&str) -> Option<String>,
    data_dir: &std::path::Path,
) -> Result<people::PeopleSettings, ConfigError> {
    let env_var = |name: &str| {
        env(name)
            .map(|v| v.trim().to_owned())
            .filter(|v| !v.is_empty())
    };
    let invalid = |name: &str, message: String| ConfigError::Invalid {
        name: format!("tools.people_search.{name}"),
        message,
    };
    let scim = match raw.scim {
        None => None,
        Some(scim) => {
            if scim.base_url.trim().is_empty() {
                return Err(invalid("scim.base_url", "must be set".to_owned()));
            }
            let variable = scim
                .token_env
                .unwrap_or_else(|| "AGENTD_SCIM_TOKEN".to_owned());
            let token = env_var(&variable).ok_or_else(|| {
                invalid(
                    "scim.token_env",
                    format!("the bearer token variable {variable} is not set"),
                )
            })?;
            Some(people::ScimSettings {
                base_url: scim.base_url,
                token,
            })
        }
    };
    let ldap = match raw.ldap {
        None => None,
        Some(ldap) => {
            let bind_password = match &ldap.bind_dn {
                Some(_) => {
                    let variable = ldap
                        .bind_password_env
                        .clone()
                        .unwrap_or_else(|| "AGENTD_LDAP_PASSWORD".to_owned());
                    Some(env_var(&variable).ok_or_else(|| {
                        invalid(
                            "ldap.bind_password_env",
                            format!("the bind password variable {variable} is not set"),
                        )
                    })?)
                }
                None => None,
            };
            let settings = people::LdapSettings {
                url: ldap.url,
                base_dn: ldap.base_dn,
                bind_dn: ldap.bind_dn,
                bind_password,
                object_filter: ldap.object_filter,
                starttls: ldap.starttls.unwrap_or(false),
                timeout: Some(millis(
                    "tools.people_search.ldap.timeout_ms",
                    ldap.timeout_ms,
                    10_000,
                )?),
            };
            // The URL and base DN are checked now, not at the first search.
            people::Ldap::new(settings.clone()).map_err(|err| invalid("ldap", err.to_string()))?;
            Some(settings)
        }
    };
    Ok(people::PeopleSettings {
        pdl_api_key: env_var("PDL_API_KEY"),
        apollo_api_key: env_var("APOLLO_API_KEY"),
        github_token: env_var("GITHUB_TOKEN"),
        github: raw.github,
        orcid: raw.orcid.unwrap_or(false),
        pdl_base_url: raw.pdl_base_url,
        apollo_base_url: raw.apollo_base_url,
        github_base_url: raw.github_base_url,
        orcid_base_url: raw.orcid_base_url,
        scim,
        ldap,
        directory_path: data_dir.join("people.sqlite"),
        directory_url: None,
        extra_columns: raw.extra_columns.unwrap_or_default(),
    })
}

/// `[tools.finance_search]` and its variables, checked: known source names, budgets,
/// categories and MCP labels.
fn finance_settings(
    raw: RawFinanceSearch,
    env: &dyn Fn(&str) -> Option<String>,
    data_dir: &std::path::Path,
) -> Result<finance::Settings, ConfigError> {
    let env_var = |name: &str| {
        env(name)
            .map(|v| v.trim().to_owned())
            .filter(|v| !v.is_empty())
    };
    let invalid = |name: &str, message: String| ConfigError::Invalid {
        name: format!("tools.finance_search.{name}"),
        message,
    };
    let defaults = finance::Settings::default();
    let mut mcp = Vec::new();
    for (i, server) in raw.mcp.into_iter().enumerate() {
        let at = |field: &str| format!("mcp[{i}].{field}");
        let label = server.label.trim().to_owned();
        if label.is_empty()
            || !label
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
        {
            return Err(invalid(
                &at("label"),
                "letters, digits, '_' or '-', not empty".to_owned(),
            ));
        }
        if mcp.iter().any(|m: &finance::McpSource| m.label == label) {
            return Err(invalid(&at("label"), format!("\"{label}\" is used twice")));
        }
        let url = server.url.trim().to_owned();
        let saved = match server.connector.as_deref().map(str::trim) {
            None => None,
            Some(id) => {
                if !url.is_empty() || server.authorization_env.is_some() {
                    return Err(invalid(
                        &at("connector"),
                        "a saved connector brings its own URL and credentials: set connector or url (and authorization_env), not both".to_owned(),
                    ));
                }
                if id.is_empty() {
                    return Err(invalid(&at("connector"), "must not be empty".to_owned()));
                }
                Some(finance::SavedConnector {
                    id: id.to_owned(),
                    project: server
                        .project
                        .as_deref()
                        .map(str::trim)
                        .filter(|p| !p.is_empty())
                        .map(str::to_owned),
                })
            }
        };
        if saved.is_none() && server.project.is_some() {
            return Err(invalid(
                &at("project"),
                "only a saved connector (connector = \"…\") belongs to a project".to_owned(),
            ));
        }
        if saved.is_none()
            && url::Url::parse(&url)
                .map(|u| !matches!(u.scheme(), "http" | "https"))
                .unwrap_or(true)
        {
            return Err(invalid(
                &at("url"),
                format!(
                    "{url:?} is not an http(s) URL (or name a saved connector with connector = \"…\")"
                ),
            ));
        }
        let authorization =
            match &server.authorization_env {
                None => None,
                Some(name) => Some(env_var(name).ok_or_else(|| {
                    invalid(&at("authorization_env"), format!("{name} is not set"))
                })?),
            };
        let mut tools = BTreeMap::new();
        for (category, tool) in server.tools {
            let parsed = finance::Category::ALL
                .into_iter()
                .find(|c| c.name() == category)
                .ok_or_else(|| {
                    invalid(
                        &at(&format!("tools.{category}")),
                        format!(
                            "not a category (expected one of {})",
                            finance::Category::ALL
                                .map(finance::Category::name)
                                .join(", ")
                        ),
                    )
                })?;
            tools.insert(parsed, tool);
        }
        mcp.push(finance::McpSource {
            label: label.clone(),
            server: engine::mcp::McpServer {
                label,
                url,
                authorization,
                headers: BTreeMap::new(),
            },
            connector: saved,
            tools,
            symbol_argument: server
                .symbol_argument
                .unwrap_or_else(|| "symbol".to_owned()),
        });
    }
    if let Some(order) = &raw.backends {
        for name in order {
            let known = finance::SOURCE_NAMES.contains(&name.as_str())
                || name
                    .strip_prefix("mcp:")
                    .is_some_and(|label| mcp.iter().any(|m| m.label == label));
            if !known {
                return Err(invalid(
                    "backends",
                    format!(
                        "unknown source {name:?} (expected {} or mcp:<label> of a [[tools.finance_search.mcp]])",
                        finance::SOURCE_NAMES.join(", ")
                    ),
                ));
            }
        }
    }
    let mut budgets = [
        ("fmp", defaults.fmp_budget),
        ("alpha_vantage", defaults.alphavantage_budget),
        ("sec_edgar", defaults.sec_budget),
        ("mcp", defaults.mcp_budget),
    ];
    for (source, raw_budget) in raw.budgets {
        let slot = budgets
            .iter_mut()
            .find(|(name, _)| *name == source)
            .ok_or_else(|| {
                invalid(
                    &format!("budgets.{source}"),
                    "budgets are for fmp, alpha_vantage, sec_edgar and mcp".to_owned(),
                )
            })?;
        if let Some(per_minute) = raw_budget.requests_per_minute {
            if per_minute == 0 {
                return Err(invalid(
                    &format!("budgets.{source}.requests_per_minute"),
                    "must be 1 or more".to_owned(),
                ));
            }
            slot.1.per_minute = per_minute;
        }
        if let Some(per_day) = raw_budget.requests_per_day {
            // 0 lifts the daily cap (a paid plan).
            slot.1.per_day = (per_day > 0).then_some(per_day);
        }
    }
    let quote_seconds = raw.quote_cache_seconds.unwrap_or(30);
    if quote_seconds > 3600 {
        return Err(invalid(
            "quote_cache_seconds",
            "must be within 0..=3600".to_owned(),
        ));
    }
    let cache_entries = raw.cache_entries.unwrap_or(finance::DEFAULT_CACHE_ENTRIES);
    if cache_entries > 1_000_000 {
        return Err(invalid(
            "cache_entries",
            "must be within 0..=1000000".to_owned(),
        ));
    }
    Ok(finance::Settings {
        order: raw.backends,
        fmp_api_key: env_var("FMP_API_KEY"),
        fmp_base_url: raw.fmp_base_url,
        fmp_budget: budgets[0].1,
        alphavantage_api_key: env_var("ALPHAVANTAGE_API_KEY"),
        alphavantage_base_url: raw.alphavantage_base_url,
        alphavantage_budget: budgets[1].1,
        sec_user_agent: env_var("AGENTD_SEC_USER_AGENT").or(raw.sec_user_agent),
        sec_www_url: raw.sec_base_url,
        sec_data_url: raw.sec_data_base_url,
        sec_budget: budgets[2].1,
        mcp,
        mcp_budget: budgets[3].1,
        store_path: data_dir.join("finance.sqlite"),
        store_url: None,
        cache_entries,
        lifetimes: finance::Lifetimes {
            live: std::time::Duration::from_secs(quote_seconds),
            ..finance::Lifetimes::default()
        },
    })
}

fn sandbox_settings(
    raw: RawSandbox,
    data_dir: &std::path::Path,
) -> Result<SandboxSettings, ConfigError> {
    let invalid = |name: &str, message: &str| ConfigError::Invalid {
        name: format!("tools.sandbox.{name}"),
        message: message.to_owned(),
    };
    match raw.backend.as_deref() {
        None | Some("bwrap") => {}
        Some(other) => {
            return Err(invalid(
                "backend",
                &format!("{other:?}: the only back end is \"bwrap\""),
            ));
        }
    }
    let within = |name: &str, value: u64, range: std::ops::RangeInclusive<u64>| {
        if range.contains(&value) {
            Ok(value)
        } else {
            Err(invalid(
                name,
                &format!("must be within {}..={}", range.start(), range.end()),
            ))
        }
    };
    Ok(SandboxSettings {
        timeout: std::time::Duration::from_secs(within(
            "timeout_s",
            raw.timeout_s.unwrap_or(60),
            1..=3600,
        )?),
        memory_mb: within("memory_mb", raw.memory_mb.unwrap_or(1024), 16..=65_536)?,
        max_output_bytes: within(
            "max_output_bytes",
            raw.max_output_bytes.unwrap_or(1 << 20) as u64,
            1024..=67_108_864,
        )? as usize,
        network: raw.network.unwrap_or(false),
        max_processes: within(
            "max_processes",
            u64::from(raw.max_processes.unwrap_or(64)),
            1..=4096,
        )? as u32,
        max_file_bytes: within("max_file_mb", raw.max_file_mb.unwrap_or(100), 1..=65_536)? << 20,
        idle_expiry: std::time::Duration::from_secs(
            within(
                "idle_expiry_minutes",
                raw.idle_expiry_minutes.unwrap_or(60),
                1..=43_200,
            )? * 60,
        ),
        root: data_dir.join("sandbox"),
        workspace_quota_bytes: within(
            "workspace_quota_mb",
            raw.workspace_quota_mb.unwrap_or(1024),
            16..=1_048_576,
        )? << 20,
        quota_enforcement: match raw.quota_enforcement.as_deref() {
            None | Some("auto") => QuotaEnforcement::Auto,
            Some("filesystem") => QuotaEnforcement::Filesystem,
            Some("watch") => QuotaEnforcement::Watch,
            Some(other) => {
                return Err(invalid(
                    "quota_enforcement",
                    &format!("{other:?}: use \"auto\", \"filesystem\" or \"watch\""),
                ));
            }
        },
        max_concurrent_executions: raw
            .max_concurrent_executions
            .map(|n| within("max_concurrent_executions", n as u64, 1..=1024).map(|n| n as usize))
            .transpose()?,
        queue_timeout: std::time::Duration::from_secs(within(
            "queue_timeout_s",
            raw.queue_timeout_s.unwrap_or(60),
            1..=3600,
        )?),
        landlock: match raw.landlock.as_deref() {
            None | Some("auto") => LandlockSetting::Auto,
            Some("require") => LandlockSetting::Require,
            Some("off") => LandlockSetting::Off,
            Some(other) => {
                return Err(invalid(
                    "landlock",
                    &format!("{other:?}: use \"auto\", \"require\" or \"off\""),
                ));
            }
        },
        snapshot_max_bytes: within(
            "snapshot_max_mb",
            raw.snapshot_max_mb.unwrap_or(64),
            1..=1024,
        )? << 20,
        second_layer: match raw.second_layer.as_deref() {
            None | Some("require") => sandbox::SecondLayer::Require,
            Some("optional") => sandbox::SecondLayer::Optional,
            Some(other) => {
                return Err(invalid(
                    "second_layer",
                    &format!("{other:?}: use \"require\" or \"optional\""),
                ));
            }
        },
    })
}

/// Host names as the open-mode guard compares them: trimmed, lowercase, without brackets
/// around an IPv6 address; a port or a scheme is refused (the guard compares names only).
fn host_list<'a>(
    name: &str,
    entries: impl Iterator<Item = &'a str>,
) -> Result<Vec<String>, ConfigError> {
    let mut hosts = Vec::new();
    for entry in entries.map(str::trim).filter(|e| !e.is_empty()) {
        let host = entry.to_ascii_lowercase();
        let bare = host
            .strip_prefix('[')
            .and_then(|h| h.strip_suffix(']'))
            .unwrap_or(&host);
        let is_ipv6 = bare.parse::<std::net::Ipv6Addr>().is_ok();
        let is_name = !bare.is_empty()
            && bare
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '.' | '_'));
        if !is_ipv6 && !is_name {
            return Err(ConfigError::Invalid {
                name: name.to_owned(),
                message: format!(
                    "{entry:?} is not a host name or IP address (write names without scheme or port)"
                ),
            });
        }
        hosts.push(bare.to_owned());
    }
    Ok(hosts)
}

/// `[limits]`, each within its range.
fn request_limits(raw: &RawLimits) -> Result<protocol::limits::RequestLimits, ConfigError> {
    let defaults = protocol::limits::RequestLimits::default();
    let within = |name: &str, value: Option<usize>, default: usize, max: usize| match value
        .unwrap_or(default)
    {
        n @ 1.. if n <= max => Ok(n),
        _ => Err(ConfigError::Invalid {
            name: format!("limits.{name}"),
            message: format!("must be within 1..={max}"),
        }),
    };
    Ok(protocol::limits::RequestLimits {
        max_tools: within("max_tools", raw.max_tools, defaults.max_tools, 100_000)?,
        max_tools_bytes: within(
            "max_tools_bytes",
            raw.max_tools_bytes,
            defaults.max_tools_bytes,
            32 << 20,
        )?,
        max_tool_schema_bytes: within(
            "max_tool_schema_bytes",
            raw.max_tool_schema_bytes,
            defaults.max_tool_schema_bytes,
            32 << 20,
        )?,
    })
}

/// The presets, their tools parsed like a request's.
fn presets(
    raw: BTreeMap<String, RawPreset>,
) -> Result<std::collections::HashMap<String, engine::Preset>, ConfigError> {
    let mut presets = std::collections::HashMap::new();
    for (name, preset) in raw {
        let invalid = |message: String| ConfigError::Invalid {
            name: format!("presets.{name}"),
            message,
        };
        if preset.model.is_some() && preset.models.is_some() {
            return Err(invalid("set model or models, not both".to_owned()));
        }
        if preset.max_steps.is_some_and(|n| !(1..=100).contains(&n)) {
            return Err(invalid("max_steps must be within 1..=100".to_owned()));
        }
        let tools = preset
            .tools
            .into_iter()
            .enumerate()
            .map(|(i, tool)| {
                let json = serde_json::to_value(tool)
                    .map_err(|err| invalid(format!("tools[{i}]: {err}")))?;
                serde_json::from_value::<protocol::request::Tool>(json)
                    .map_err(|err| invalid(format!("tools[{i}]: {err}")))
            })
            .collect::<Result<Vec<_>, _>>()?;
        presets.insert(
            name,
            engine::Preset {
                model: preset.model,
                models: preset.models,
                max_steps: preset.max_steps,
                instructions: preset.instructions,
                max_output_tokens: preset.max_output_tokens,
                tools,
            },
        );
    }
    Ok(presets)
}

/// The price table, every price a finite number ≥ 0.
fn prices(raw: RawPrices) -> Result<engine::Prices, ConfigError> {
    let check = |name: String, value: f64| {
        if value.is_finite() && value >= 0.0 {
            Ok(value)
        } else {
            Err(ConfigError::Invalid {
                name,
                message: "must be a number of dollars, 0 or more".to_owned(),
            })
        }
    };
    let mut prices = engine::Prices::default();
    for (model, price) in raw.models {
        let at = |field: &str| format!("prices.models.\"{model}\".{field}");
        let entry = engine::ModelPrice {
            input_per_million: check(at("input_per_million"), price.input_per_million)?,
            output_per_million: check(at("output_per_million"), price.output_per_million)?,
            cache_read_per_million: price
                .cache_read_per_million
                .map(|p| check(at("cache_read_per_million"), p))
                .transpose()?,
            cache_write_per_million: price
                .cache_write_per_million
                .map(|p| check(at("cache_write_per_million"), p))
                .transpose()?,
        };
        prices.models.insert(model, entry);
    }
    for (tool, price) in raw.tools {
        let price = check(format!("prices.tools.{tool}"), price)?;
        prices.tools.insert(tool, price);
    }
    Ok(prices)
}

/// A duration setting in milliseconds within 100 ms ..= 1 h.
fn millis(
    name: &str,
    value: Option<u64>,
    default: u64,
) -> Result<std::time::Duration, ConfigError> {
    match value.unwrap_or(default) {
        ms @ 100..=3_600_000 => Ok(std::time::Duration::from_millis(ms)),
        _ => Err(ConfigError::Invalid {
            name: name.to_owned(),
            message: "must be within 100..=3600000".to_owned(),
        }),
    }
}

/// A provider's own HTTP options, when its section changes a default.
fn client_options(
    name: &str,
    raw: &RawProvider,
) -> Result<Option<providers::ClientOptions>, ConfigError> {
    if raw.max_retries.is_none()
        && raw.connect_timeout_ms.is_none()
        && raw.idle_timeout_ms.is_none()
        && raw.max_idle_connections.is_none()
    {
        return Ok(None);
    }
    let within = |field: &str, value: u64, range: std::ops::RangeInclusive<u64>| {
        if range.contains(&value) {
            Ok(value)
        } else {
            Err(ConfigError::Invalid {
                name: format!("providers.{name}.{field}"),
                message: format!("must be within {}..={}", range.start(), range.end()),
            })
        }
    };
    let mut options = providers::ClientOptions::default();
    if let Some(max_retries) = raw.max_retries {
        within(
            "max_retries",
            u64::from(max_retries),
            0..=u64::from(MAX_RETRIES),
        )?;
        options.max_retries = max_retries;
    }
    if let Some(ms) = raw.connect_timeout_ms {
        let ms = within("connect_timeout_ms", ms, 100..=120_000)?;
        options.connect_timeout = std::time::Duration::from_millis(ms);
    }
    if let Some(ms) = raw.idle_timeout_ms {
        let ms = within("idle_timeout_ms", ms, 1_000..=3_600_000)?;
        options.idle_timeout = std::time::Duration::from_millis(ms);
    }
    if let Some(max) = raw.max_idle_connections {
        within(
            "max_idle_connections",
            u64::try_from(max).unwrap_or(u64::MAX),
            0..=65_536,
        )?;
        options.max_idle_connections = max;
    }
    Ok(Some(options))
}

/// File providers, then the environment shortcuts over them (env wins for key and base URL).
fn merge_providers(
    file: BTreeMap<String, RawProvider>,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<Vec<ProviderConfig>, ConfigError> {
    let env_var = |name: &str| {
        env(name)
            .map(|v| v.trim().to_owned())
            .filter(|v| !v.is_empty())
    };
    let mut merged: Vec<ProviderConfig> = Vec::new();
    for (name, raw) in file {
        let invalid = |message: String| ConfigError::Invalid {
            name: format!("providers.{name}"),
            message,
        };
        if name.is_empty()
            || !name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
        {
            return Err(invalid(
                "a provider name is letters, digits, '-', '_' or '.'".to_owned(),
            ));
        }
        let shortcut = ENV_SHORTCUTS.iter().find(|row| row.provider == name);
        let api = match (&raw.api, shortcut) {
            (Some(api), _) => api
                .parse::<WireApi>()
                .map_err(|_| invalid(format!("unknown api {api:?}: expected chat_completions, responses, anthropic_messages or gemini")))?,
            (None, Some(row)) => row.api,
            (None, None) => WireApi::ChatCompletions,
        };
        let base_url = shortcut
            .and_then(|row| env_var(row.base_url_var))
            .or(raw.base_url)
            .or_else(|| shortcut.map(|row| row.default_base_url.to_owned()))
            .ok_or_else(|| invalid("base_url is required".to_owned()))?;
        let api_key = shortcut
            .and_then(|row| env_var(row.key_var))
            .or_else(|| raw.api_key_env.as_deref().and_then(env_var));
        merged.push(ProviderConfig {
            name,
            api,
            base_url,
            api_key,
            models: raw.models,
        });
    }
    for from_env in env_shortcuts(env) {
        if !merged.iter().any(|p| p.name == from_env.name) {
            merged.push(from_env);
        }
    }
    Ok(merged)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn env_of(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
        let map: HashMap<String, String> = pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect();
        move |name| map.get(name).cloned()
    }

    fn file(text: &str) -> RawConfig {
        RawConfig::from_toml(text, std::path::Path::new("test.toml")).expect("valid toml")
    }

    #[test]
    fn precedence_is_defaults_file_env_flags() {
        let none = env_of(&[]);
        let c = Config::resolve(RawConfig::default(), &none, &Flags::default()).expect("ok");
        assert_eq!(c.listen.to_string(), DEFAULT_LISTEN);
        assert_eq!(
            c.store,
            StoreLocation::DataDir(PathBuf::from(DEFAULT_DATA_DIR))
        );

        let f = || file("listen = \"127.0.0.1:1000\"\ndata_dir = \"/from/file\"");
        let c = Config::resolve(f(), &none, &Flags::default()).expect("ok");
        assert_eq!(c.listen.port(), 1000);
        assert_eq!(c.data_dir, PathBuf::from("/from/file"));

        let env = env_of(&[
            ("AGENTD_LISTEN", "127.0.0.1:2000"),
            ("AGENTD_DATA_DIR", "/from/env"),
        ]);
        let c = Config::resolve(f(), &env, &Flags::default()).expect("ok");
        assert_eq!(c.listen.port(), 2000);
        assert_eq!(c.data_dir, PathBuf::from("/from/env"));

        let flags = Flags {
            listen: Some("127.0.0.1:3000".to_owned()),
            data_dir: Some(PathBuf::from("/from/flag")),
            database_url: Some("sqlite::memory:".to_owned()),
        };
        let c = Config::resolve(f(), &env, &flags).expect("ok");
        assert_eq!(c.listen.port(), 3000);
        assert_eq!(c.store, StoreLocation::Url("sqlite::memory:".to_owned()));
    }

    #[test]
    fn a_postgres_url_selects_postgres_with_its_pool_size() {
        let url = "postgres://agentd@db.internal:5432/agentd?sslmode=require";
        let file = RawConfig::from_toml(
            "database_pool_size = 7",
            std::path::Path::new("agentd.toml"),
        )
        .expect("parses");
        let pairs = [("AGENTD_DATABASE_URL", url)];
        let c = Config::resolve(file, &env_of(&pairs), &Flags::default()).expect("ok");
        assert_eq!(c.store, StoreLocation::Postgres(url.to_owned()));
        assert_eq!(c.database_pool.max_connections, 7);
        // The people directory and the finance store follow the store into PostgreSQL.
        assert_eq!(c.people_search.directory_url.as_deref(), Some(url));
        assert_eq!(c.finance_search.store_url.as_deref(), Some(url));
        assert!(!format!("{:?}", c.people_search).contains("db.internal"));

        let pairs = [
            ("AGENTD_DATABASE_URL", url),
            ("AGENTD_DATABASE_POOL_SIZE", "25"),
        ];
        let env = env_of(&pairs);
        let c = Config::resolve(RawConfig::default(), &env, &Flags::default()).expect("ok");
        assert_eq!(c.database_pool.max_connections, 25);

        let pairs = [("AGENTD_DATABASE_POOL_SIZE", "0")];
        let env = env_of(&pairs);
        let err = Config::resolve(RawConfig::default(), &env, &Flags::default())
            .expect_err("an empty pool is refused");
        assert!(err.to_string().contains("database_pool_size"), "{err}");
        let c = Config::resolve(RawConfig::default(), &env_of(&[]), &Flags::default()).expect("ok");
        assert_eq!(c.database_pool.max_connections, store::DEFAULT_POOL_SIZE);
        assert_eq!(c.people_search.directory_url, None);
        assert_eq!(c.finance_search.store_url, None);
    }

    #[test]
    fn private_networks_come_from_env_over_file_and_are_validated() {
        let file = || {
            RawConfig::from_toml(
                "[network]\nallow_private = [\"10.0.0.0/8\"]\n[mcp]\nrequest_timeout_ms = 2000",
                std::path::Path::new("a.toml"),
            )
            .expect("parses")
        };
        let c = Config::resolve(file(), &env_of(&[]), &Flags::default()).expect("ok");
        assert_eq!(c.allow_private, ["10.0.0.0/8"]);
        assert_eq!(
            c.mcp.request_timeout,
            std::time::Duration::from_millis(2000)
        );
        assert_eq!(
            c.mcp.connect_timeout,
            std::time::Duration::from_millis(10_000)
        );
        let env = env_of(&[("AGENTD_ALLOW_PRIVATE_NETWORKS", "127.0.0.0/8, ::1/128")]);
        let c = Config::resolve(file(), &env, &Flags::default()).expect("ok");
        assert_eq!(c.allow_private, ["127.0.0.0/8", "::1/128"]);
        let bad = env_of(&[("AGENTD_ALLOW_PRIVATE_NETWORKS", "127.0.0.0/8,not-a-cidr")]);
        let err = Config::resolve(file(), &bad, &Flags::default()).expect_err("bad CIDR");
        let message = err.to_string();
        assert!(
            message.contains("AGENTD_ALLOW_PRIVATE_NETWORKS") && message.contains("not-a-cidr"),
            "{message}"
        );
        let slow = RawConfig::from_toml(
            "[mcp]\nrequest_timeout_ms = 5",
            std::path::Path::new("a.toml"),
        )
        .expect("parses");
        assert!(Config::resolve(slow, &env_of(&[]), &Flags::default()).is_err());
    }

    #[test]
    fn the_price_table_is_read_and_checked() {
        let raw = RawConfig::from_toml(
            "[prices.models.\"openai/gpt-x\"]\ninput_per_million = 2.0\noutput_per_million = 8\n[prices.tools]\nsearch_web = 0.005",
            std::path::Path::new("a.toml"),
        )
        .expect("parses");
        let c = Config::resolve(raw, &env_of(&[]), &Flags::default()).expect("ok");
        let price = c.engine.prices.models["openai/gpt-x"];
        assert_eq!(price.output_per_million, 8.0);
        assert_eq!(c.engine.prices.tools["search_web"], 0.005);
        let bad = RawConfig::from_toml(
            "[prices.tools]\nsearch_web = -1",
            std::path::Path::new("a.toml"),
        )
        .expect("parses");
        let err = Config::resolve(bad, &env_of(&[]), &Flags::default()).expect_err("negative");
        assert!(err.to_string().contains("prices.tools.search_web"), "{err}");
    }

    #[test]
    fn presets_are_read_with_their_tools() {
        let raw = RawConfig::from_toml(
            "[presets.low]\nmodel = \"openai/gpt-x\"\nmax_steps = 3\ntools = [{ type = \"web_search\", search_context_size = \"high\" }]",
            std::path::Path::new("a.toml"),
        )
        .expect("parses");
        let c = Config::resolve(raw, &env_of(&[]), &Flags::default()).expect("ok");
        let low = &c.engine.presets["low"];
        assert_eq!(low.model.as_deref(), Some("openai/gpt-x"));
        assert_eq!(low.tools.len(), 1);
        assert_eq!(low.tools[0].type_name(), "web_search");
        let bad = RawConfig::from_toml(
            "[presets.low]\ntools = [{ type = \"web_serch\" }]",
            std::path::Path::new("a.toml"),
        )
        .expect("parses");
        let err = Config::resolve(bad, &env_of(&[]), &Flags::default()).expect_err("bad tool");
        assert!(err.to_string().contains("presets.low"), "{err}");
    }

    #[test]
    fn sandbox_hardening_settings_have_defaults_and_are_checked() {
        let none = env_of(&[]);
        let c = Config::resolve(RawConfig::default(), &none, &Flags::default()).expect("ok");
        assert_eq!(c.sandbox.workspace_quota_bytes, 1 << 30);
        assert_eq!(c.sandbox.quota_enforcement, QuotaEnforcement::Auto);
        assert_eq!(c.sandbox.max_concurrent_executions, None);
        assert_eq!(c.sandbox.queue_timeout, std::time::Duration::from_secs(60));
        assert_eq!(c.sandbox.second_layer, sandbox::SecondLayer::Require);
        assert_eq!(c.sandbox.landlock, LandlockSetting::Auto);
        assert_eq!(c.sandbox.snapshot_max_bytes, 64 << 20);
        let c = Config::resolve(
            file(
                "[tools.sandbox]\nworkspace_quota_mb = 64\nquota_enforcement = \"watch\"\n\
                 max_concurrent_executions = 3\nqueue_timeout_s = 5\nsecond_layer = \"optional\"\n\
                 landlock = \"require\"\nsnapshot_max_mb = 8",
            ),
            &none,
            &Flags::default(),
        )
        .expect("ok");
        assert_eq!(c.sandbox.workspace_quota_bytes, 64 << 20);
        assert_eq!(c.sandbox.quota_enforcement, QuotaEnforcement::Watch);
        assert_eq!(c.sandbox.max_concurrent_executions, Some(3));
        assert_eq!(c.sandbox.queue_timeout, std::time::Duration::from_secs(5));
        assert_eq!(c.sandbox.second_layer, sandbox::SecondLayer::Optional);
        assert_eq!(c.sandbox.landlock, LandlockSetting::Require);
        assert_eq!(c.sandbox.snapshot_max_bytes, 8 << 20);
        for (text, name) in [
            ("workspace_quota_mb = 1", "tools.sandbox.workspace_quota_mb"),
            (
                "quota_enforcement = \"disk\"",
                "tools.sandbox.quota_enforcement",
            ),
            (
                "max_concurrent_executions = 0",
                "tools.sandbox.max_concurrent_executions",
            ),
            ("second_layer = \"off\"", "tools.sandbox.second_layer"),
            ("landlock = \"yes\"", "tools.sandbox.landlock"),
            ("snapshot_max_mb = 0", "tools.sandbox.snapshot_max_mb"),
        ] {
            let err = Config::resolve(
                file(&format!("[tools.sandbox]\n{text}")),
                &none,
                &Flags::default(),
            )
            .expect_err(text);
            assert!(err.to_string().contains(name), "{text}: {err}");
        }
    }

    #[test]
    fn finance_sources_come_from_the_file_and_the_environment() {
        let text = r#"
[tools.finance_search]
backends = ["mcp:av", "sec_edgar", "local"]
sec_user_agent = "From File file@example.com"
quote_cache_seconds = 5
[tools.finance_search.budgets.sec_edgar]
requests_per_minute = 120
[tools.finance_search.budgets.fmp]
requests_per_day = 0
[[tools.finance_search.mcp]]
label = "av"
url = "https://mcp.alphavantage.co/mcp"
authorization_env = "AV_MCP_TOKEN"
tools = { quote = "GLOBAL_QUOTE", income_statement = "INCOME_STATEMENT" }
"#;
        let env = env_of(&[
            ("FMP_API_KEY", "fmp-key"),
            ("AGENTD_SEC_USER_AGENT", "From Env env@example.com"),
            ("AV_MCP_TOKEN", "tok"),
        ]);
        let c = Config::resolve(file(text), &env, &Flags::default()).expect("ok");
        let f = &c.finance_search;
        assert_eq!(f.fmp_api_key.as_deref(), Some("fmp-key"));
        assert_eq!(f.fmp_budget.per_day, None, "0 lifts the daily cap");
        assert_eq!(
            f.sec_user_agent.as_deref(),
            Some("From Env env@example.com")
        );
        assert_eq!(f.sec_budget.per_minute, 120);
        assert_eq!(f.lifetimes.live, std::time::Duration::from_secs(5));
        assert_eq!(
            f.store_path,
            PathBuf::from(DEFAULT_DATA_DIR).join("finance.sqlite")
        );
        assert_eq!(f.mcp[0].server.authorization.as_deref(), Some("tok"));
        assert_eq!(f.mcp[0].tools[&finance::Category::Quote], "GLOBAL_QUOTE");
        assert_eq!(f.order.as_deref().map(<[String]>::len), Some(3));

        let refuse = |text: &str, env: &[(&str, &str)], name: &str| {
            let err = Config::resolve(file(text), &env_of(env), &Flags::default())
                .expect_err("invalid")
                .to_string();
            assert!(err.contains(name), "{err}");
        };
        refuse(
            "[tools.finance_search]\nbackends = [\"yahoo\"]",
            &[],
            "tools.finance_search.backends",
        );
        // A saved connector instead of a URL; never both, and a project only with one.
        let saved = "[[tools.finance_search.mcp]]\nlabel = \"m\"\nconnector = \"connector_m\"\nproject = \"research\"\ntools = { quote = \"q\" }";
        let c = Config::resolve(file(saved), &env_of(&[]), &Flags::default()).expect("ok");
        assert_eq!(
            c.finance_search.mcp[0].connector,
            Some(finance::SavedConnector {
                id: "connector_m".to_owned(),
                project: Some("research".to_owned()),
            })
        );
        refuse(
            "[[tools.finance_search.mcp]]\nlabel = \"x\"\nurl = \"https://x\"\nconnector = \"c\"",
            &[],
            "tools.finance_search.mcp[0].connector",
        );
        refuse(
            "[[tools.finance_search.mcp]]\nlabel = \"x\"\nurl = \"https://x\"\nproject = \"p\"",
            &[],
            "tools.finance_search.mcp[0].project",
        );
        refuse(
            "[[tools.finance_search.mcp]]\nlabel = \"x\"",
            &[],
            "tools.finance_search.mcp[0].url",
        );
        refuse(
            "[[tools.finance_search.mcp]]\nlabel = \"x\"\nurl = \"https://x\"\ntools = { weather = \"W\" }",
            &[],
            "tools.finance_search.mcp[0].tools.weather",
        );
        refuse(
            "[[tools.finance_search.mcp]]\nlabel = \"x\"\nurl = \"https://x\"\nauthorization_env = \"NOPE\"",
            &[],
            "NOPE is not set",
        );
        refuse(
            "[tools.finance_search.budgets.local]\nrequests_per_day = 3",
            &[],
            "tools.finance_search.budgets.local",
        );
    }

    #[test]
    fn http_settings_limits_and_allowed_hosts_are_read_and_checked() {
        let c = Config::resolve(RawConfig::default(), &env_of(&[]), &Flags::default()).expect("ok");
        assert_eq!(c.connections, ConnectionSettings::default());
        assert_eq!(
            c.connections.idle_timeout,
            std::time::Duration::from_secs(30)
        );
        assert_eq!(c.body_timeout, std::time::Duration::from_secs(60));
        assert!(c.allowed_hosts.is_empty());
        assert_eq!(c.request_limits, protocol::limits::RequestLimits::default());

        let f = || {
            file(
                "[http]\nidle_timeout_ms = 5000\nbody_timeout_ms = 7000\nmax_connections = 300\nallowed_hosts = [\"Agentd.LAN\", \"[::2]\"]\n[limits]\nmax_tools = 500\nmax_tools_bytes = 4096\nmax_tool_schema_bytes = 1024\n",
            )
        };
        let c = Config::resolve(f(), &env_of(&[]), &Flags::default()).expect("ok");
        assert_eq!(
            c.connections.idle_timeout,
            std::time::Duration::from_secs(5)
        );
        assert_eq!(c.connections.max_connections, Some(300));
        assert_eq!(c.body_timeout, std::time::Duration::from_secs(7));
        assert_eq!(c.allowed_hosts, ["agentd.lan", "::2"]);
        assert_eq!(c.request_limits.max_tools, 500);
        assert_eq!(c.request_limits.max_tool_schema_bytes, 1024);
        assert_eq!(c.request_limits.max_tools_bytes, 4096);

        let env = env_of(&[("AGENTD_ALLOWED_HOSTS", " a.example , B.example ")]);
        let c = Config::resolve(f(), &env, &Flags::default()).expect("ok");
        assert_eq!(c.allowed_hosts, ["a.example", "b.example"], "env wins");

        let err = |text: &str, env: &[(&str, &str)]| {
            Config::resolve(file(text), &env_of(env), &Flags::default())
                .err()
                .map(|e| e.to_string())
                .unwrap_or_default()
        };
        assert!(err("[http]\nidle_timeout_ms = 1", &[]).contains("http.idle_timeout_ms"));
        assert!(err("[http]\nmax_connections = 0", &[]).contains("http.max_connections"));
        assert!(err("[limits]\nmax_tools = 0", &[]).contains("limits.max_tools"));
        assert!(
            err("", &[("AGENTD_ALLOWED_HOSTS", "http://x.example")])
                .contains("AGENTD_ALLOWED_HOSTS")
        );
        assert!(err("[http]\nallowed_hosts = [\"x:80\"]", &[]).contains("http.allowed_hosts"));
    }

    #[test]
    fn people_search_settings_take_secrets_from_the_environment() {
        let raw = || {
            file(
                "[tools.people_search]\norcid = true\nextra_columns = [\"team\"]\n[tools.people_search.scim]\nbase_url = \"https://idp.example/scim/v2\"\ntoken_env = \"SCIM_T\"\n[tools.people_search.ldap]\nurl = \"ldap://127.0.0.1:389\"\nbase_dn = \"dc=example,dc=org\"\nbind_dn = \"cn=reader,dc=example,dc=org\"\n",
            )
        };
        let env = env_of(&[
            ("SCIM_T", "tok"),
            ("AGENTD_LDAP_PASSWORD", "pw"),
            ("PDL_API_KEY", "pdl"),
        ]);
        let c = Config::resolve(raw(), &env, &Flags::default()).expect("ok");
        let people = &c.people_search;
        assert!(people.orcid);
        assert_eq!(people.extra_columns, ["team"]);
        assert_eq!(people.pdl_api_key.as_deref(), Some("pdl"));
        assert_eq!(people.scim.as_ref().map(|s| s.token.as_str()), Some("tok"));
        let ldap = people.ldap.as_ref().expect("ldap");
        assert_eq!(ldap.bind_password.as_deref(), Some("pw"));
        assert_eq!(
            people.directory_path,
            PathBuf::from(DEFAULT_DATA_DIR).join("people.sqlite")
        );
        let shown = format!("{c:?}");
        for secret in ["\"tok\"", "\"pw\"", "\"pdl\""] {
            assert!(!shown.contains(secret), "{secret} in {shown}");
        }
        let err = Config::resolve(
            raw(),
            &env_of(&[("AGENTD_LDAP_PASSWORD", "pw")]),
            &Flags::default(),
        )
        .expect_err("no SCIM token");
        assert!(err.to_string().contains("SCIM_T"), "{err}");
        let bad = file("[tools.people_search.ldap]\nurl = \"http://x\"\nbase_dn = \"dc=x\"\n");
        let err = Config::resolve(bad, &env_of(&[]), &Flags::default()).expect_err("bad url");
        assert!(
            err.to_string().contains("tools.people_search.ldap"),
            "{err}"
        );
    }

    #[test]
    fn unknown_config_keys_are_refused() {
        let err = RawConfig::from_toml("lisen = \"x\"", std::path::Path::new("a.toml"))
            .expect_err("typo");
        assert!(err.to_string().contains("lisen"), "{err}");
    }

    #[test]
    fn providers_merge_file_and_env() {
        let env = env_of(&[
            ("OPENAI_API_KEY", "sk-1"),
            ("LOCAL_API_KEY", "lk"),
            ("XAI_API_KEY", "xk"),
        ]);
        let f = file(
            "[providers.local]\napi = \"chat_completions\"\nbase_url = \"http://127.0.0.1:11434/v1\"\napi_key_env = \"LOCAL_API_KEY\"\nmodels = [\"llama3\"]\n\n[providers.openai]\nbase_url = \"http://proxy/v1\"\n",
        );
        let c = Config::resolve(f, &env, &Flags::default()).expect("ok");
        let by = |n: &str| {
            c.providers
                .iter()
                .find(|p| p.name == n)
                .expect("provider present")
        };
        assert_eq!(by("local").api_key.as_deref(), Some("lk"));
        assert_eq!(by("local").models, vec!["llama3".to_owned()]);
        assert_eq!(by("openai").base_url, "http://proxy/v1");
        assert_eq!(by("openai").api_key.as_deref(), Some("sk-1"));
        assert_eq!(by("xai").base_url, "https://api.x.ai/v1");
        assert!(c.providers.iter().all(|p| p.name != "anthropic"));
    }

    #[test]
    fn max_retries_is_per_provider_and_bounded() {
        let resolve = |text: &str| Config::resolve(file(text), &env_of(&[]), &Flags::default());
        let c = resolve(
            "[providers.local]\nbase_url = \"http://127.0.0.1:11434/v1\"\nmax_retries = 0\n",
        )
        .expect("ok");
        assert_eq!(c.provider_options["local"].max_retries, 0);
        assert!(!c.provider_options.contains_key("openai"));
        let c = resolve("[providers.openai]\nidle_timeout_ms = 60000\nconnect_timeout_ms = 2000\n")
            .expect("ok");
        let openai = c.provider_options["openai"];
        assert_eq!(openai.idle_timeout, std::time::Duration::from_secs(60));
        assert_eq!(openai.connect_timeout, std::time::Duration::from_secs(2));
        assert_eq!(openai.max_retries, 2);
        let err = resolve("[providers.openai]\nidle_timeout_ms = 5\n")
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(err.contains("providers.openai.idle_timeout_ms"), "{err}");
        let err = resolve(
            "[providers.local]\nbase_url = \"http://127.0.0.1:11434/v1\"\nmax_retries = 11\n",
        )
        .err()
        .map(|e| e.to_string())
        .unwrap_or_default();
        assert!(err.contains("providers.local.max_retries"), "{err}");
        let c = resolve("[providers.openai]\nmax_idle_connections = 8\n").expect("ok");
        assert_eq!(c.provider_options["openai"].max_idle_connections, 8);
        assert_eq!(openai.max_idle_connections, 1024);
        let err = resolve("[providers.openai]\nmax_idle_connections = 100000\n")
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(
            err.contains("providers.openai.max_idle_connections"),
            "{err}"
        );
    }

    #[test]
    fn list_models_is_on_unless_turned_off() {
        let f = file(
            "[providers.local]\nbase_url = \"http://127.0.0.1:11434/v1\"\nlist_models = false\n\n[providers.other]\nbase_url = \"http://127.0.0.1:8000/v1\"\nlist_models = true\n\n[providers.openai]\nlist_models = false\n",
        );
        let c = Config::resolve(f, &env_of(&[]), &Flags::default()).expect("ok");
        let disabled: Vec<&str> = c.model_lists.disabled.iter().map(String::as_str).collect();
        assert_eq!(disabled, ["local", "openai"]);
        assert_eq!(c.model_lists.ttl, std::time::Duration::from_secs(600));
        let c = Config::resolve(RawConfig::default(), &env_of(&[]), &Flags::default()).expect("ok");
        assert!(c.model_lists.disabled.is_empty());
        let err = RawConfig::from_toml(
            "[providers.local]\nbase_url = \"http://x/v1\"\nlist_model = false\n",
            std::path::Path::new("agentd.toml"),
        )
        .expect_err("unknown key");
        assert!(err.to_string().contains("list_model"), "{err}");
    }
}
