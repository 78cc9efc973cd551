//! agentd's HTTP server: routes, handlers, authentication, the SSE writer, error mapping,
//! configuration and wiring. The only crate that knows axum, HTTP status codes, env and files.
//!
//! Layout: [`routes`] (the table), [`handlers`] (thin), [`auth`] (the `Project` extractor),
//! [`json`] (the strict body extractor), [`sse`] (the SSE writer), [`error`] (the code table),
//! [`config`] (defaults < file < env < flags), [`builtins`] (the built-in tools from the
//! `fetch`, `search` and `sandbox` crates, assembled), [`metrics`] (the registry `GET /metrics`
//! encodes), [`openapi`] (`/openapi.json`, built from the route table and the protocol types'
//! JSON Schemas), [`state`].
//!
//! ```no_run
//! # async fn demo(config: agentd_server::config::Config) -> Result<(), agentd_server::ServerError> {
//! let state = agentd_server::build_state(&config).await?;
//! let listener = tokio::net::TcpListener::bind(config.listen).await?;
//! agentd_server::run(listener, agentd_server::app(state), std::future::pending()).await?;
//! # Ok(()) }
//! ```

pub mod auth;
pub mod builtins;
pub mod config;
pub mod error;
pub mod handlers;
pub mod json;
pub mod metrics;
pub mod openapi;
pub mod routes;
pub mod secret_keys;
pub mod sse;
pub mod state;

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::extract::Request;
use axum::middleware::{self, Next};
use axum::response::Response;
use axum::serve::ListenerExt as _;
use engine::Engine;
use providers::registry::Registry;
use store::SqliteStore;
use tokio::net::TcpListener;

use crate::config::{Config, StoreLocation};
use crate::error::ErrorLog;
use crate::state::{AppState, AuthCache};

/// How long running foreground requests may take to finish after a shutdown signal.
pub const SHUTDOWN_GRACE: Duration = Duration::from_secs(30);

#[derive(Debug, thiserror::Error)]
pub enum ServerError {
    #[error(transparent)]
    Config(#[from] config::ConfigError),
    #[error("cannot open the store: {0}")]
    Store(#[from] engine::store::StoreError),
    #[error(transparent)]
    Engine(#[from] engine::EngineError),
    #[error("cannot set up model providers: {0}")]
    Providers(#[from] providers::ProvidersError),
    #[error("cannot set up the MCP client: {0}")]
    Mcp(String),
    #[error("cannot set up the built-in tools: {0}")]
    Tools(String),
    #[error(
        "refusing to listen on {0} without API keys (open mode is for loopback only): create a key with `agentd keys create`"
    )]
    OpenModeNotLoopback(std::net::SocketAddr),
    #[error("cannot load the secret key: {0}")]
    SecretKey(#[from] secrets::KeyError),
    #[error(transparent)]
    Io(#[from] std::io::Error),
}

/// The sealer of stored credentials (the key ring of [`secret_keys::key_ring`]).
fn sealer(config: &Config) -> Result<Option<Arc<dyn engine::secrets::Sealer>>, ServerError> {
    let ring = secret_keys::key_ring(&config.secrets, config.listen, &config.data_dir)?;
    Ok(ring.map(|ring| Arc::new(ring) as Arc<dyn engine::secrets::Sealer>))
}

/// Opens the configured store.
pub async fn open_store(config: &Config) -> Result<Arc<SqliteStore>, ServerError> {
    let store = match &config.store {
        StoreLocation::DataDir(dir) => SqliteStore::open(dir).await?,
        StoreLocation::Url(url) => SqliteStore::connect(url).await?,
    };
    Ok(Arc::new(store))
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
    let mut mcp_config = mcp::McpConfig::new(request_policy(config)?);
    mcp_config.request_timeout = config.mcp.request_timeout;
    mcp_config.connect_timeout = config.mcp.connect_timeout;
    mcp_config.max_response_bytes = config.mcp.max_response_bytes;
    let mcp = mcp::McpClient::new(mcp_config).map_err(|err| ServerError::Mcp(err.to_string()))?;
    let hosted = builtins::Builtins::from_config(config).await?;
    tracing::info!(web_search = hosted.search_backend(), "built-in tools ready");
    let workspaces = hosted.workspaces();
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
            store,
            mcp: Arc::new(mcp),
            hosted: Arc::new(hosted),
            clock: Arc::new(engine::SystemClock),
            sealer: sealer(config)?,
        },
        config.engine.clone(),
    );
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
        engine,
    })
}

/// The request policy: private ranges only where the operator allowed them.
pub(crate) fn request_policy(config: &Config) -> Result<netguard::Policy, ServerError> {
    netguard::Policy::with_allowed(&config.allow_private)
        .map_err(|err| ServerError::Tools(err.to_string()))
}

/// The application: routes plus middleware. Drivable without a socket.
pub fn app(state: AppState) -> Router {
    routes::routes()
        .layer(middleware::from_fn(log_errors))
        .with_state(state)
}

/// Logs each error answer once, here (errors are not logged where they are built).
async fn log_errors(request: Request, next: Next) -> Response {
    let method = request.method().clone();
    // The path only: query strings may carry values we do not want in logs.
    let path = request.uri().path().to_owned();
    let response = next.run(request).await;
    if let Some(ErrorLog(detail)) = response.extensions().get::<ErrorLog>() {
        let status = response.status().as_u16();
        if response.status().is_server_error() {
            tracing::error!(%method, %path, status, error = %detail, "request failed");
        } else {
            tracing::info!(%method, %path, status, error = %detail, "request refused");
        }
    }
    response
}

/// Serves until `shutdown` resolves, then lets running requests finish for at most
/// [`SHUTDOWN_GRACE`].
pub async fn run(
    listener: TcpListener,
    app: Router,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> Result<(), ServerError> {
    let signalled = Arc::new(tokio::sync::Notify::new());
    let notify = signalled.clone();
    // Without TCP_NODELAY, small SSE frames wait for the client's delayed ACK (about 40 ms each
    // time): streamed deltas would arrive in bursts.
    let listener = listener.tap_io(|tcp| {
        let _ = tcp.set_nodelay(true);
    });
    let server = axum::serve(listener, app).with_graceful_shutdown(async move {
        shutdown.await;
        notify.notify_one();
    });
    tokio::select! {
        result = server => Ok(result?),
        () = async {
            signalled.notified().await;
            tokio::time::sleep(SHUTDOWN_GRACE).await;
        } => {
            tracing::warn!("shutdown grace period over; stopping with requests still running");
            Ok(())
        }
    }
}
