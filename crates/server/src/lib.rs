//! agentd's HTTP server: routes, handlers, authentication, the SSE writer, error mapping,
//! configuration and wiring. The only crate that knows axum, HTTP status codes, env and files.
//!
//! Layout: [`start`] (start-up: the store, providers, MCP client and built-in tools wired into
//! the engine), [`serve`] (the application with its middleware, and the accept loop),
//! [`connections`] (the connection cap, idle and write timeouts), [`fdlimit`] (the open-file
//! limit and the default connection cap), [`datadir`] (the data directory's permissions),
//! [`route_table`] (method, path, endpoint), [`routes`] (endpoint -> handler), [`handlers`]
//! (thin), [`compact`] (`POST …/compact`), [`conversations`] (the OpenAI Conversations API's handlers), [`auth`] (the `Project` extractor), [`web_guard`] (open mode's guard against web
//! pages: `Origin` and `Host`), [`fresh_read`] (open mode's store read, shared by the requests
//! arriving together), [`json`] (the strict body extractor), [`params`] (path and
//! query extractors), [`sse`] (the SSE writer; [`sse_batch`] gathers the events
//! of a burst into one write), [`error`] (the code table), [`envelope`] (every
//! error answer on the JSON envelope), [`config`] (defaults < file < env < flags),
//! [`logging`] (the log filter: `RUST_LOG` with the MCP library silenced),
//! [`builtins`] (the built-in tools from the `fetch`, `search` and `sandbox` crates,
//! assembled), [`metrics`] (the registry `GET /metrics` encodes), [`openapi`]
//! (`/openapi.json`, built from the route table and the protocol types' JSON Schemas),
//! [`websocket`] (WebSocket mode on `GET /v1/responses`), [`secret_keys`] (the key ring that seals stored credentials), [`unread_body`] (request
//! bodies an early answer left unread, drained so the connection survives), [`state`], [`console`] (`GET /console`: the web console's files from
//! [`console_assets`], with a strict Content-Security-Policy).
//!
//! ```no_run
//! # async fn demo(config: agentd_server::config::Config) -> Result<(), agentd_server::ServerError> {
//! let state = agentd_server::build_state(&config).await?;
//! let listener = tokio::net::TcpListener::bind(config.listen).await?;
//! agentd_server::run(listener, agentd_server::app(state), config.connections, std::future::pending()).await?;
//! # Ok(()) }
//! ```

pub mod admin;
pub mod auth;
pub mod builtins;
pub mod cli_engine;
pub mod compact;
pub mod config;
pub mod connections;
pub mod console;
pub mod console_assets;
pub mod conversations;
pub mod datadir;
pub mod envelope;
pub mod error;
pub mod error_log;
pub mod fdlimit;
pub mod finance_connectors;
pub mod fresh_read;
pub mod handlers;
pub mod json;
pub mod logging;
pub mod metrics;
pub mod openapi;
pub mod params;
pub mod request_layer;
pub mod route_table;
pub mod routes;
pub mod secret_keys;
pub mod serve;
pub mod sse;
pub mod sse_batch;
pub mod start;
pub mod state;
pub mod unread_body;
pub mod web_guard;
pub mod websocket;

pub use serve::{SHUTDOWN_GRACE, app, run};
pub use start::{ServerError, build_state, open_store};
