//! The built-in tools agentd runs itself, behind the engine's [`engine::hosted`] port, assembled
//! from the operator's configuration: `fetch_url` (the `fetch` crate), `web_search` (the
//! `search` crate), `image_search` (the `search` crate too), `people_search` (the `people`
//! crate), the code sandbox with its file tools (the `sandbox` crate) and `finance_search` (the
//! `finance` crate). Every URL they contact goes through the network guard (`netguard`).
//!
//! [`Builtins`] is the [`HostedTools`] the server hands the engine: it holds what is shared
//! for the life of the process (the guarded HTTP client of `fetch_url`, the search back end,
//! the people directories, the sandbox's workspaces, the finance sources with their cache and
//! budgets) and builds each
//! request's tools from their configuration, which is cheap.

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
    images: Images,
    people: Arc<people::People>,
    sandbox: Sandbox,
    finance: Arc<finance::Finance>,
    /// The engine, once built: finance sources reach saved connectors through it.
    engine: crate::finance_connectors::EngineSlot,
}

/// What `image_search` needs: its back end, and the request policy with a guarded client
/// for the URLs back ends return.
#[derive(Clone)]
pub struct Images {
    pub backend: Arc<dyn search::ImageBackend>,
    pub shared: Arc<search::ImageShared>,
}

/// What the `sandbox` tool brings: `execute` and the seven file tools, over shared
/// workspaces.
pub struct Sandbox {
    pub execute: Arc<sandbox::Execute>,
    pub files: Vec<Arc<dyn HostedTool>>,
    pub workspaces: Arc<sandbox::Workspaces>,
    /// What the start-up probe found, for the log and whoever reports the server's state.
    pub report: SandboxReport,
}

/// The sandbox's state after the start-up probe.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SandboxReport {
    /// The isolation layers every execution gets, or why code does not run at all.
    pub layers: Result<sandbox::Layers, String>,
    /// The workspace quota and how it is enforced.
    pub quota: Option<sandbox::Quota>,
    /// Executions that may run at once.
    pub max_concurrent_executions: usize,
}

impl SandboxReport {
    /// One line for the start-up log.
    pub fn describe(&self) -> String {
        let layers = match &self.layers {
            Ok(layers) => layers.describe(),
            Err(reason) => format!("unavailable ({reason})"),
        };
        let quota = match &self.quota {
            Some(quota) => format!(
                "{} MiB per workspace, {}",
                quota.mib(),
                quota.mode.describe()
            ),
            None => "none".to_owned(),
        };
        format!(
            "isolation: {layers}; disk quota: {quota}; at most {} executions at once",
            self.max_concurrent_executions
        )
    }
}

impl Sandbox {
    /// The sandbox over `isolation` (the probe's result: without working isolation every
    /// execution reports why and nothing runs), with the machine-sized cap on concurrent
    /// executions.
    pub fn new(
        isolation: Result<Arc<dyn sandbox::Isolation>, String>,
        workspaces: Arc<sandbox::Workspaces>,
        limits: sandbox::Limits,
        file_limits: sandbox::files::FileLimits,
    ) -> Sandbox {
        let slots = sandbox::Slots::new(
            sandbox::slots::default_max(limits.memory_mb),
            std::time::Duration::from_secs(60),
        );
        Sandbox::with_slots(isolation, workspaces, limits, file_limits, slots)
    }

    fn with_slots(
        isolation: Result<Arc<dyn sandbox::Isolation>, String>,
        workspaces: Arc<sandbox::Workspaces>,
        limits: sandbox::Limits,
        file_limits: sandbox::files::FileLimits,
        slots: sandbox::Slots,
    ) -> Sandbox {
        let report = SandboxReport {
            layers: Err("not probed".to_owned()),
            quota: workspaces.quota(),
            max_concurrent_executions: slots.max(),
        };
        Sandbox {
            execute: Arc::new(
                sandbox::Execute::new(isolation, workspaces.clone(), limits).with_slots(slots),
            ),
            files: sandbox::files::file_tools(workspaces.clone(), file_limits),
            workspaces,
            report,
        }
    }

    /// The sandbox as the operator configured it: probes bubblewrap with the required
    /// layers, chooses how the workspace quota is enforced, and logs what it found. When
    /// the isolation (or a required layer, or a required quota file system) is missing,
    /// every execution says why and no code runs.
    pub async fn from_settings(settings: &crate::config::SandboxSettings) -> Sandbox {
        use crate::config::LandlockSetting;
        use crate::config::QuotaEnforcement;
        // The Landlock helper is agentd's own binary (`agentd sandbox-exec`, see main.rs).
        let helper = std::env::current_exe().map(|program| sandbox::Helper {
            program,
            args: vec![sandbox::restrict::SUBCOMMAND.to_owned()],
        });
        let landlock = match (settings.landlock, helper) {
            (LandlockSetting::Off, _) => sandbox::LandlockLayer::Off,
            (LandlockSetting::Auto, Ok(helper)) => sandbox::LandlockLayer::Auto(helper),
            (LandlockSetting::Require, Ok(helper)) => sandbox::LandlockLayer::Require(helper),
            (LandlockSetting::Auto, Err(err)) => {
                tracing::warn!(error = %err, "sandbox: agentd's own binary is not found; no Landlock layer");
                sandbox::LandlockLayer::Off
            }
            (LandlockSetting::Require, Err(err)) => {
                sandbox::LandlockLayer::Require(sandbox::Helper {
                    program: format!("(agentd's binary cannot be found: {err})").into(),
                    args: Vec::new(),
                })
            }
        };
        let probed = sandbox::Bwrap::probe_with(sandbox::ProbeOptions {
            second_layer: settings.second_layer,
            landlock,
        })
        .await;
        let mut layers = probed
            .as_ref()
            .map(sandbox::Bwrap::layers)
            .map_err(Clone::clone);
        let mut isolation: Result<Arc<dyn sandbox::Isolation>, String> =
            probed.map(|bwrap| Arc::new(bwrap) as Arc<dyn sandbox::Isolation>);
        let root = settings.root.clone();
        let filesystem = match settings.quota_enforcement {
            QuotaEnforcement::Watch => {
                Err("tools.sandbox.quota_enforcement = \"watch\"".to_owned())
            }
            QuotaEnforcement::Auto | QuotaEnforcement::Filesystem => {
                tokio::task::spawn_blocking(move || sandbox::quota::probe_filesystem(&root))
                    .await
                    .unwrap_or_else(|err| Err(err.to_string()))
            }
        };
        let mode = match filesystem {
            Ok(()) => sandbox::QuotaMode::Filesystem,
            Err(reason) => {
                if settings.quota_enforcement == QuotaEnforcement::Filesystem {
                    let why = format!(
                        "the workspace quota must be enforced by a file system per workspace \
                         (tools.sandbox.quota_enforcement = \"filesystem\"), and this host \
                         cannot mount one: {reason}"
                    );
                    isolation = Err(why.clone());
                    layers = Err(why);
                } else if settings.quota_enforcement == QuotaEnforcement::Auto {
                    tracing::warn!(%reason, "sandbox: no file system per workspace; the disk quota is measured while code runs");
                }
                sandbox::QuotaMode::Watch
            }
        };
        let quota = sandbox::Quota {
            bytes: settings.workspace_quota_bytes,
            mode,
        };
        let workspaces = Arc::new(
            sandbox::Workspaces::new(settings.root.clone(), settings.idle_expiry).with_quota(quota),
        );
        let limits = sandbox::Limits {
            timeout: settings.timeout,
            memory_mb: settings.memory_mb,
            max_processes: settings.max_processes,
            max_file_bytes: settings.max_file_bytes,
            max_output_bytes: settings.max_output_bytes,
            network: settings.network,
            workspace_quota: Some(quota),
        };
        let slots = sandbox::Slots::new(
            settings
                .max_concurrent_executions
                .unwrap_or_else(|| sandbox::slots::default_max(settings.memory_mb)),
            settings.queue_timeout,
        );
        let mut tools = Sandbox::with_slots(
            isolation,
            workspaces,
            limits,
            sandbox::files::FileLimits::default(),
            slots,
        );
        tools.report.layers = layers;
        match &tools.report.layers {
            Ok(_) => tracing::info!(sandbox = %tools.report.describe(), "sandbox ready"),
            Err(_) => {
                tracing::warn!(sandbox = %tools.report.describe(), "the sandbox tool is unavailable: code will not run")
            }
        }
        tools
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
            policy: policy.clone(),
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
            allowed.extend(operator_host_addresses("AGENTD_SEARXNG_URL", url).await?);
        }
        let backend_policy = netguard::Policy::with_allowed(&allowed)
            .map_err(|err| BuiltinsError::new(err.to_string()))?;
        let backend = search::backend_from_settings(&config.web_search, &backend_policy)
            .await
            .map_err(|err| BuiltinsError::new(format!("web_search back end: {err}")))?;
        let images = Images {
            backend: search::image_backend_from_settings(&config.web_search, &backend_policy)
                .await
                .map_err(|err| BuiltinsError::new(format!("image_search back end: {err}")))?,
            shared: Arc::new(
                search::ImageShared::new(policy.clone())
                    .map_err(|err| BuiltinsError::new(format!("image_search: {err}")))?,
            ),
        };
        tracing::info!(
            image_search = images.backend.name(),
            "image_search back end"
        );
        let people = people_search(config, &policy).await?;
        let tools = Sandbox::from_settings(&config.sandbox).await;
        let engine = crate::finance_connectors::EngineSlot::default();
        let finance = finance_from_config(config, engine.clone()).await?;
        Ok(Builtins {
            fetch: Arc::new(shared_fetch),
            search: backend,
            images,
            people: Arc::new(people),
            sandbox: tools,
            finance: Arc::new(finance),
            engine,
        })
    }

    /// Where the server puts its engine once built (saved connectors of finance sources are
    /// found through it; until then none is).
    pub fn engine_slot(&self) -> crate::finance_connectors::EngineSlot {
        self.engine.clone()
    }

    /// The name of the search back end in use (for the start-up log).
    pub fn search_backend(&self) -> &'static str {
        self.search.name()
    }

    /// What the sandbox's start-up probe found (isolation layers, quota, concurrency).
    pub fn sandbox_report(&self) -> &SandboxReport {
        &self.sandbox.report
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
            Tool::ImageSearch(config) => vec![Arc::new(search::ImageSearch::new(
                self.images.backend.clone(),
                self.images.shared.clone(),
                index,
                config,
            )?)],
            Tool::PeopleSearch(_) => vec![Arc::new(people::PeopleSearch::new(
                self.people.clone(),
                index,
            )?)],
            Tool::FetchUrl(config) => {
                vec![Arc::new(fetch::FetchUrl::new(config, self.fetch.clone()))]
            }
            Tool::Sandbox(_) => {
                let mut tools: Vec<Arc<dyn HostedTool>> = vec![self.sandbox.execute.clone()];
                tools.extend(self.sandbox.files.iter().cloned());
                tools
            }
            Tool::FinanceSearch(_) => {
                vec![Arc::new(finance::FinanceSearch::new(self.finance.clone()))]
            }
            _ => Vec::new(),
        })
    }

    fn build_with_env(
        &self,
        index: usize,
        tool: &Tool,
        env: &engine::hosted::SandboxEnv,
    ) -> Result<Vec<Arc<dyn HostedTool>>, HostedError> {
        if env.is_empty() || !matches!(tool, Tool::Sandbox(_)) {
            return self.build(index, tool);
        }
        // This request's executions see the connectors' lent variables.
        let execute = self.sandbox.execute.with_env(sandbox::Env(env.clone()));
        let mut tools: Vec<Arc<dyn HostedTool>> = vec![Arc::new(execute)];
        tools.extend(self.sandbox.files.iter().cloned());
        Ok(tools)
    }

    /// `people_search` is refused for a project its back ends cannot serve (no remote
    /// directory, and no people imported into that project).
    fn check<'a>(
        &'a self,
        project_id: &'a str,
        index: usize,
        tool: &'a Tool,
    ) -> futures::future::BoxFuture<'a, Result<(), HostedError>> {
        Box::pin(async move {
            match tool {
                Tool::PeopleSearch(_) => {
                    people::PeopleSearch::check(&self.people, project_id, index).await
                }
                _ => Ok(()),
            }
        })
    }

    /// A deleted project's people leave the embedded directory.
    fn forget_project<'a>(
        &'a self,
        project_id: &'a str,
    ) -> futures::future::BoxFuture<'a, Result<(), String>> {
        Box::pin(forget_people(&self.people, project_id))
    }
}

/// Removes a deleted project's people from the embedded directory.
async fn forget_people(people: &people::People, project_id: &str) -> Result<(), String> {
    let removed = people
        .forget_project(project_id)
        .await
        .map_err(|err| format!("people directory: {err}"))?;
    if removed > 0 {
        tracing::info!(
            project = project_id,
            removed,
            "removed a deleted project's people"
        );
    }
    Ok(())
}

/// The people_search back ends. The operator's SCIM service may sit on a private address:
/// its own addresses are allowed for that back end only; profile URLs the back ends return
/// are judged by the request policy.
async fn people_search(
    config: &Config,
    request_policy: &netguard::Policy,
) -> Result<people::People, BuiltinsError> {
    let settings = &config.people_search;
    let mut allowed = config.allow_private.clone();
    if let Some(scim) = &settings.scim {
        allowed.extend(
            operator_host_addresses("[tools.people_search.scim] base_url", &scim.base_url).await?,
        );
    }
    let backend_policy = netguard::Policy::with_allowed(&allowed)
        .map_err(|err| BuiltinsError::new(err.to_string()))?;
    let people = people::People::from_settings(settings, &backend_policy, request_policy.clone())
        .map_err(|err| BuiltinsError::new(format!("people_search: {err}")))?;
    tracing::info!(people_search = ?people.names(), "people_search back ends");
    Ok(people)
}

/// The finance sources: the operator's own service hosts (base URL overrides, MCP servers)
/// may sit on private addresses, allowed for these sources only; MCP servers are reached
/// through the server's guarded MCP client.
async fn finance_from_config(
    config: &Config,
    engine: crate::finance_connectors::EngineSlot,
) -> Result<finance::Finance, BuiltinsError> {
    let settings = &config.finance_search;
    let mut allowed = config.allow_private.clone();
    let overrides = [
        ("tools.finance_search.fmp_base_url", &settings.fmp_base_url),
        (
            "tools.finance_search.alphavantage_base_url",
            &settings.alphavantage_base_url,
        ),
        ("tools.finance_search.sec_base_url", &settings.sec_www_url),
        (
            "tools.finance_search.sec_data_base_url",
            &settings.sec_data_url,
        ),
    ];
    let mut hosts: Vec<(&str, &str)> = overrides
        .iter()
        .filter_map(|(name, url)| Some((*name, url.as_deref().filter(|u| !u.trim().is_empty())?)))
        .collect();
    hosts.extend(
        settings
            .mcp
            .iter()
            // A saved connector's host is judged as the operator's allow list says.
            .filter(|source| source.connector.is_none())
            .map(|source| ("tools.finance_search.mcp.url", source.server.url.as_str())),
    );
    for (name, url) in hosts {
        // A host that does not resolve now is only refused if it is private when used.
        match operator_host_addresses(name, url).await {
            Ok(addresses) => allowed.extend(addresses),
            Err(err) => {
                tracing::warn!(error = %err, "finance_search source host not resolved at start-up")
            }
        }
    }
    let policy = netguard::Policy::with_allowed(&allowed)
        .map_err(|err| BuiltinsError::new(err.to_string()))?;
    let mut mcp_config = mcp::McpConfig::new(policy.clone());
    mcp_config.request_timeout = config.mcp.request_timeout;
    mcp_config.connect_timeout = config.mcp.connect_timeout;
    mcp_config.max_response_bytes = config.mcp.max_response_bytes;
    let connector =
        mcp::McpClient::new(mcp_config).map_err(|err| BuiltinsError::new(err.to_string()))?;
    let saved = Arc::new(crate::finance_connectors::EngineConnectors(engine));
    let finance = finance::build_with(settings, &policy, Arc::new(connector), saved)
        .await
        .map_err(|err| BuiltinsError::new(format!("finance_search: {err}")))?;
    tracing::info!(sources = ?finance.sources(), "finance_search sources");
    Ok(finance)
}

/// The addresses an operator-configured URL's host resolves to, as host CIDRs; `name` says
/// which setting it came from.
async fn operator_host_addresses(name: &str, url: &str) -> Result<Vec<String>, BuiltinsError> {
    let parsed = url::Url::parse(url)
        .map_err(|err| BuiltinsError::new(format!("{name} is not a URL: {err}")))?;
    let port = parsed.port_or_known_default().unwrap_or(80);
    let addresses: Vec<std::net::IpAddr> = match parsed.host() {
        Some(url::Host::Ipv4(ip)) => vec![ip.into()],
        Some(url::Host::Ipv6(ip)) => vec![ip.into()],
        Some(url::Host::Domain(host)) => tokio::net::lookup_host((host, port))
            .await
            .map_err(|err| {
                BuiltinsError::new(format!("{name} host {host} does not resolve: {err}"))
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
