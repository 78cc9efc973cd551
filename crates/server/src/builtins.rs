//! The built-in tools agentd runs itself, behind the engine's [`engine::hosted`] port, assembled
//! from the operator's configuration: `fetch_url` (the `fetch` crate), `web_search` (the
//! `search` crate), `image_search` (the `search` crate too), `people_search` (the `people` crate) and the code sandbox with its file
//! tools (the `sandbox` crate). Every URL they contact goes through the network guard
//! (`netguard`).
//!
//! [`Builtins`] is the [`HostedTools`] the server hands the engine: it holds what is shared
//! for the life of the process (the guarded HTTP client of `fetch_url`, the search back end,
//! the people directories, the sandbox's workspaces) and builds each request's tools from their configuration, which
//! is cheap.

use std::sync::Arc;

use engine::hosted::{HostedError, HostedTool, HostedTools};
use protocol::request::Tool;

use crate::ServerError;
use crate::config::Config;

/// The built-in tools of this server.
pub struct Builtins {
    fetch: Arc<fetch::FetchShared>,
    search: Arc<dyn search::Backend>,
    images: Images,
    people: Arc<people::People>,
    sandbox: Sandbox,
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
    /// The built-in tools: `fetch_url` under the request policy, `web_search` on the configured
    /// back end, the sandbox over bubblewrap when it works. The operator's SearxNG may sit on a
    /// private address: its own addresses are allowed for the back end only, never for
    /// request-supplied URLs.
    pub async fn from_config(config: &Config) -> Result<Builtins, ServerError> {
        let policy = crate::request_policy(config)?;
        let shared_fetch = fetch::FetchShared::new(fetch::FetchSettings {
            policy: policy.clone(),
            timeout: config.fetch_url.timeout,
            max_page_bytes: config.fetch_url.max_page_bytes,
            default_budget_tokens: config.fetch_url.default_budget_tokens,
        })
        .map_err(|err| ServerError::Tools(err.to_string()))?;
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
            .map_err(|err| ServerError::Tools(err.to_string()))?;
        let backend = search::backend_from_settings(&config.web_search, &backend_policy)
            .await
            .map_err(|err| ServerError::Tools(format!("web_search back end: {err}")))?;
        let images = Images {
            backend: search::image_backend_from_settings(&config.web_search, &backend_policy)
                .await
                .map_err(|err| ServerError::Tools(format!("image_search back end: {err}")))?,
            shared: Arc::new(
                search::ImageShared::new(policy.clone())
                    .map_err(|err| ServerError::Tools(format!("image_search: {err}")))?,
            ),
        };
        tracing::info!(
            image_search = images.backend.name(),
            "image_search back end"
        );
        let people = people_search(config, &policy).await?;
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
        Ok(Builtins::new(
            Arc::new(shared_fetch),
            backend,
            images,
            Arc::new(people),
            tools,
        ))
    }

    pub fn new(
        fetch: Arc<fetch::FetchShared>,
        search: Arc<dyn search::Backend>,
        images: Images,
        people: Arc<people::People>,
        sandbox: Sandbox,
    ) -> Builtins {
        Builtins {
            fetch,
            search,
            images,
            people,
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
            _ => Vec::new(),
        })
    }
}

/// The people_search back ends. The operator's SCIM service may sit on a private address:
/// its own addresses are allowed for that back end only; profile URLs the back ends return
/// are judged by the request policy.
async fn people_search(
    config: &Config,
    request_policy: &netguard::Policy,
) -> Result<people::People, ServerError> {
    let settings = &config.people_search;
    let mut allowed = config.allow_private.clone();
    if let Some(scim) = &settings.scim {
        allowed.extend(
            operator_host_addresses("[tools.people_search.scim] base_url", &scim.base_url).await?,
        );
    }
    let backend_policy = netguard::Policy::with_allowed(&allowed)
        .map_err(|err| ServerError::Tools(err.to_string()))?;
    let people = people::People::from_settings(settings, &backend_policy, request_policy.clone())
        .map_err(|err| ServerError::Tools(format!("people_search: {err}")))?;
    tracing::info!(people_search = ?people.names(), "people_search back ends");
    Ok(people)
}

/// The addresses an operator-configured URL's host resolves to, as host CIDRs.
async fn operator_host_addresses(setting: &str, url: &str) -> Result<Vec<String>, ServerError> {
    let parsed = url::Url::parse(url)
        .map_err(|err| ServerError::Tools(format!("{setting} is not a URL: {err}")))?;
    let port = parsed.port_or_known_default().unwrap_or(80);
    let addresses: Vec<std::net::IpAddr> = match parsed.host() {
        Some(url::Host::Ipv4(ip)) => vec![ip.into()],
        Some(url::Host::Ipv6(ip)) => vec![ip.into()],
        Some(url::Host::Domain(name)) => tokio::net::lookup_host((name, port))
            .await
            .map_err(|err| {
                ServerError::Tools(format!("{setting} host {name} does not resolve: {err}"))
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
