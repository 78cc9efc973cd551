//! Start-up: the configured store, model providers, MCP client and built-in tools wired into
//! the engine and the application state, after the start-up rules (open mode only on loopback)
//! and crash recovery.

use std::sync::Arc;

use engine::Engine;
use engine::admin_store::AdminStore;
use engine::store::Store;
use engine::workspace_snapshots::WorkspaceSnapshotStore;
use providers::registry::Registry;
use store::{PgStore, SqliteStore};

use crate::builtins::{Builtins, BuiltinsError};
use crate::config::{Config, StoreLocation};
use crate::datadir;
use crate::state::{AppState, AuthCache, RequestSettings};

#[derive(Debug, thiserror::Error)]
pub enum ServerError {
    #[error(transparent)]
    Config(#[from] crate::config::ConfigError),
    #[error("cannot open the store: {0}")]
    Store(#[from] engine::store::StoreError),
    #[error(transparent)]
    Engine(#[from] engine::EngineError),
    #[error("cannot set up model providers: {0}")]
    Providers(#[from] providers::ProvidersError),
    #[error("cannot set up the MCP client: {0}")]
    Mcp(String),
    #[error("cannot set up the built-in tools: {0}")]
    Tools(#[from] BuiltinsError),
    #[error(
        "refusing to listen on {0} without API keys (open mode is for loopback only): create a key with `agentd keys create`"
    )]
    OpenModeNotLoopback(std::net::SocketAddr),
    #[error("cannot set up the data directory {path}: {source}")]
    DataDir {
        path: std::path::PathBuf,
        source: std::io::Error,
    },
    #[error("cannot load the secret key: {0}")]
    SecretKey(#[from] secrets::KeyError),
    #[error(transparent)]
    Io(#[from] std::io::Error),
}

/// The sealer of stored credentials (the key ring of [`crate::secret_keys::key_ring`]).
fn sealer(config: &Config) -> Result<Option<Arc<dyn engine::secrets::Sealer>>, ServerError> {
    let ring = crate::secret_keys::key_ring(&config.secrets, config.listen, &config.data_dir)?;
    Ok(ring.map(|ring| Arc::new(ring) as Arc<dyn engine::secrets::Sealer>))
}

/// What the server needs of its store: the engine's storage ports and the administration
/// ports (projects, key roles, connectors), which both back ends implement.
pub trait ServerStore: Store + AdminStore + WorkspaceSnapshotStore {}
impl<T: Store + AdminStore + WorkspaceSnapshotStore> ServerStore for T {}

/// Opens the configured store (migrated), after setting up the data directory (its modes and
/// those of its database files, see [`crate::datadir`]).
pub async fn open_store(config: &Config) -> Result<Arc<dyn ServerStore>, ServerError> {
    let files: &[&str] = match &config.store {
        StoreLocation::DataDir(_) => &[datadir::DATABASE_FILE, datadir::INDEX_FILE],
        StoreLocation::Url(_) => &[datadir::INDEX_FILE],
        // The search index lives in the database too.
        StoreLocation::Postgres(_) => &[],
    };
    datadir::prepare(&config.data_dir, files).map_err(|err| ServerError::DataDir {
        path: config.data_dir.clone(),
        source: err,
    })?;
    Ok(match &config.store {
        StoreLocation::DataDir(dir) => Arc::new(SqliteStore::open(dir).await?),
        StoreLocation::Url(url) => Arc::new(SqliteStore::connect(url).await?),
        StoreLocation::Postgres(url) => {
            Arc::new(PgStore::connect(url, config.database_pool).await?)
        }
    })
}

/// Builds the engine and the application state from a configuration.
pub async fn build_state(config: &Config) -> Result<AppState, ServerError> {
    let store = open_store(config).await?;
    let registry = Registry::with_provider_options(
        config.providers.clone(),
        &providers::ClientOptions::default(),
        &config.provider_options,
    )?
    .with_model_lists(config.model_lists.clone());
    let policy = request_policy(config)?;
    let mut mcp_config = mcp::McpConfig::new(policy.clone());
    mcp_config.request_timeout = config.mcp.request_timeout;
    mcp_config.connect_timeout = config.mcp.connect_timeout;
    mcp_config.max_response_bytes = config.mcp.max_response_bytes;
    let mcp = mcp::McpClient::new(mcp_config).map_err(|err| ServerError::Mcp(err.to_string()))?;
    let hosted = Builtins::from_config(config, policy).await?;
    tracing::info!(web_search = hosted.search_backend(), "built-in tools ready");
    let workspaces = hosted.workspaces();
    if config.engine.shared_store {
        // Several replicas: a conversation's next step may run on another one, which restores
        // the workspace's files from the database (sandbox::shared).
        workspaces.keep_in(sandbox::SharedStore {
            store: store.clone(),
            max_packed_bytes: config.sandbox.snapshot_max_bytes,
        });
    }
    let engine_slot = hosted.engine_slot();
    tokio::spawn(async move {
        let mut tick = tokio::time::interval(std::time::Duration::from_secs(60));
        loop {
            tick.tick().await;
            let removed = workspaces.expire_idle().await;
            if removed > 0 {
                tracing::info!(removed, "idle sandbox workspaces removed");
            }
        }
    });
    let engine = Engine::new(
        engine::Ports {
            models: Arc::new(registry),
            store: store.clone(),
            mcp: Arc::new(mcp),
            hosted: Arc::new(hosted),
            clock: Arc::new(engine::SystemClock),
            sealer: sealer(config)?,
            admin: Some(store.clone()),
        },
        config.engine.clone(),
    );
    let _ = engine_slot.set(engine.clone());
    let has_keys = engine.has_keys().await?;
    if !has_keys && !config.listen.ip().is_loopback() {
        return Err(ServerError::OpenModeNotLoopback(config.listen));
    }
    let default_project = engine.default_project().await?;
    // Runs a previous process left unfinished end now, before anything new starts.
    engine.recover().await?;
    engine.spawn_workers();
    Ok(AppState {
        auth: Arc::new(AuthCache::new(default_project, has_keys)),
        sse_keep_alive: config.sse_keep_alive,
        websocket_lifetime: config.websocket_lifetime,
        websocket_idle_timeout: config.websocket_idle_timeout,
        requests: RequestSettings {
            body_timeout: config.body_timeout,
            limits: config.request_limits,
        },
        allowed_hosts: Arc::new(config.allowed_hosts.clone()),
        engine,
    })
}

/// The request policy: private ranges only where the operator allowed them.
fn request_policy(config: &Config) -> Result<netguard::Policy, ServerError> {
    netguard::Policy::with_allowed(&config.allow_private)
        .map_err(|err| ServerError::Tools(BuiltinsError::new(err.to_string())))
}
