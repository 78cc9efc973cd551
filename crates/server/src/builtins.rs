//! The built-in tools agentd runs itself, behind the engine's [`engine::hosted`] port, assembled
//! from the operator's configuration: `fetch_url` (the `fetch` crate), `web_search` (the
//! `search` crate) and the code sandbox with its file tools (the `sandbox` crate). Every URL
//! they contact goes through the network guard (`netguard`).
//!
//! [`Builtins`] is the [`HostedTools`] the server hands the engine: it holds what is shared
//! for the life of the process (the guarded HTTP client of `fetch_url`, the search back end,
//! the sandbox's workspaces) and builds each request's tools from their configuration, which
//! is cheap.

use std::sync::Arc;

use engine::hosted::{HostedError, HostedTool, HostedTools};
use protocol::request::Tool;

use crate::config::Config;

/// Why the built-in tools could not be set up (the start-up error says which part).
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct BuiltinsError(String);

impl BuiltinsError {
    pub fn new(message: impl Into<String>) -> BuiltinsError {
        BuiltinsError(message.into())
    }
}

/// The built-in tools of this server.
pub struct Builtins {
    fetch: Arc<fetch::FetchShared>,
    search: Arc<dyn search::Backend>,
    sandbox: Sandbox,
}

/// What the `sandbox` tool brings: `execute` and the seven file tools, over shared
/// workspaces.
pub struct Sandbox {
    pub execute: Arc<sandbox::Execute>,
    pub files: Vec<Arc<dyn HostedTool>>,
    pub workspaces: Arc<sandbox::Workspaces>,
}

impl Sandbox {
    /// The sandbox over `isolation` (the probe's result: without working isolation every
    /// execution reports why and nothing runs).
    pub fn new(
        isolation: Result<Arc<dyn sandbox::Isolation>, String>,
        workspaces: Arc<sandbox::Workspaces>,
        limits: sandbox::Limits,
        file_limits: sandbox::files::FileLimits,
    ) -> Sandbox {
        Sandbox {
            execute: Arc::new(sandbox::Execute::new(isolation, workspaces.clone(), limits)),
            files: sandbox::files::file_tools(workspaces.clone(), file_limits),
            workspaces,
        }
    }
}

impl Builtins {
    /// The built-in tools: `fetch_url` under the request policy (`policy`), `web_search` on the
    /// configured back end, the sandbox over bubblewrap when it works. The operator's SearxNG
    /// may sit on a private address: its own addresses are allowed for the back end only, never
    /// for request-supplied URLs.
    pub async fn from_config(
        config: &Config,
        policy: netguard::Policy,
    ) -> Result<Builtins, BuiltinsError> {
        let shared_fetch = fetch::FetchShared::new(fetch::FetchSettings {
            policy,
            timeout: config.fetch_url.timeout,
            max_page_bytes: config.fetch_url.max_page_bytes,
            default_budget_tokens: config.fetch_url.default_budget_tokens,
        })
        .map_err(|err| BuiltinsError::new(err.to_string()))?;
        let mut allowed = config.allow_private.clone();
        if let Some(url) = config
            .web_search
            .searxng_url
            .as_deref()
            .filter(|u| !u.trim().is_empty())
        {
            allowed.extend(operator_host_addresses(url).await?);
        }
        let backend_policy = netguard::Policy::with_allowed(&allowed)
            .map_err(|err| BuiltinsError::new(err.to_string()))?;
        let backend = search::backend_from_settings(&config.web_search, &backend_policy)
            .await
            .map_err(|err| BuiltinsError::new(format!("web_search back end: {err}")))?;
        let settings = &config.sandbox;
        let isolation: Result<Arc<dyn sandbox::Isolation>, String> = match sandbox::Bwrap::probe()
            .await
        {
            Ok(bwrap) => {
                tracing::info!("sandbox isolation (bubblewrap) works");
                Ok(Arc::new(bwrap))
            }
            Err(why) => {
                tracing::warn!(reason = %why, "the sandbox tool is unavailable: code will not run");
                Err(why)
            }
        };
        let workspaces = Arc::new(sandbox::Workspaces::new(
            settings.root.clone(),
            settings.idle_expiry,
        ));
        let limits = sandbox::Limits {
            timeout: settings.timeout,
            memory_mb: settings.memory_mb,
            max_processes: settings.max_processes,
            max_file_bytes: settings.max_file_bytes,
            max_output_bytes: settings.max_output_bytes,
            network: settings.network,
        };
        let tools = Sandbox::new(
            isolation,
            workspaces,
            limits,
            sandbox::files::FileLimits::default(),
        );
        Ok(Builtins::new(Arc::new(shared_fetch), backend, tools))
    }

    pub fn new(
        fetch: Arc<fetch::FetchShared>,
        search: Arc<dyn search::Backend>,
        sandbox: Sandbox,
    ) -> Builtins {
        Builtins {
            fetch,
            search,
            sandbox,
        }
    }

    /// The name of the search back end in use (for the start-up log).
    pub fn search_backend(&self) -> &'static str {
        self.search.name()
    }

    /// The sandbox workspaces (the server expires idle ones periodically).
    pub fn workspaces(&self) -> Arc<sandbox::Workspaces> {
        self.sandbox.workspaces.clone()
    }
}

impl HostedTools for Builtins {
    fn build(&self, index: usize, tool: &Tool) -> Result<Vec<Arc<dyn HostedTool>>, HostedError> {
        Ok(match tool {
            Tool::WebSearch(config) => vec![Arc::new(search::WebSearch::new(
                self.search.clone(),
                index,
                config,
            )?)],
            Tool::FetchUrl(config) => {
                vec![Arc::new(fetch::FetchUrl::new(config, self.fetch.clone()))]
            }
            Tool::Sandbox(_) => {
                let mut tools: Vec<Arc<dyn HostedTool>> = vec![self.sandbox.execute.clone()];
                tools.extend(self.sandbox.files.iter().cloned());
                tools
            }
            _ => Vec::new(),
        })
    }
}

/// The addresses an operator-configured URL's host resolves to, as host CIDRs.
async fn operator_host_addresses(url: &str) -> Result<Vec<String>, BuiltinsError> {
    let parsed = url::Url::parse(url)
        .map_err(|err| BuiltinsError::new(format!("AGENTD_SEARXNG_URL is not a URL: {err}")))?;
    let port = parsed.port_or_known_default().unwrap_or(80);
    let addresses: Vec<std::net::IpAddr> = match parsed.host() {
        Some(url::Host::Ipv4(ip)) => vec![ip.into()],
        Some(url::Host::Ipv6(ip)) => vec![ip.into()],
        Some(url::Host::Domain(name)) => tokio::net::lookup_host((name, port))
            .await
            .map_err(|err| {
                BuiltinsError::new(format!(
                    "AGENTD_SEARXNG_URL host {name} does not resolve: {err}"
                ))
            })?
            .map(|addr| addr.ip())
            .collect(),
        None => Vec::new(),
    };
    Ok(addresses
        .into_iter()
        .map(|ip| match ip {
            std::net::IpAddr::V4(v4) => format!("{v4}/32"),
            std::net::IpAddr::V6(v6) => format!("{v6}/128"),
        })
        .collect())
}
