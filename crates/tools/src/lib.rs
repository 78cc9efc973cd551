//! The built-in tools agentd runs itself, behind the engine's [`engine::hosted`] port:
//! `fetch_url` ([`fetch`]), `web_search` ([`search`]) and the code sandbox with its file tools
//! ([`sandbox`]). Every URL they contact goes through the network guard (`netguard`).
//!
//! [`Builtins`] is the [`HostedTools`] the server hands the engine: it holds what is shared
//! for the life of the process (the guarded HTTP client of `fetch_url`, the search back end)
//! and builds each request's tools from their configuration, which is cheap.

use std::sync::Arc;

use engine::hosted::{HostedError, HostedTool, HostedTools};
use protocol::request::Tool;

pub mod sandbox;

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
