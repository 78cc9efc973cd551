//! The built-in tools agentd runs itself, behind the engine's [`engine::hosted`] port:
//! `fetch_url` ([`fetch`]) and `web_search` ([`search`]). Every URL they contact goes through
//! the network guard (`netguard`).
//!
//! [`Builtins`] is the [`HostedTools`] the server hands the engine: it holds what is shared
//! for the life of the process (the guarded HTTP client of `fetch_url`, the search back end)
//! and builds each request's tools from their configuration, which is cheap.

use std::sync::Arc;

use engine::hosted::{HostedError, HostedTool, HostedTools};
use protocol::request::Tool;

pub mod fetch;
pub mod sandbox;
pub mod search;

/// The built-in tools of this server.
pub struct Builtins {
    fetch: Arc<fetch::FetchShared>,
    search: Arc<dyn search::Backend>,
}

impl Builtins {
    pub fn new(fetch: Arc<fetch::FetchShared>, search: Arc<dyn search::Backend>) -> Builtins {
        Builtins { fetch, search }
    }

    /// The name of the search back end in use (for the start-up log).
    pub fn search_backend(&self) -> &'static str {
        self.search.name()
    }
}

impl HostedTools for Builtins {
    fn build(&self, index: usize, tool: &Tool) -> Result<Option<Arc<dyn HostedTool>>, HostedError> {
        Ok(match tool {
            Tool::WebSearch(config) => Some(Arc::new(search::WebSearch::new(
                self.search.clone(),
                index,
                config,
            )?)),
            Tool::FetchUrl(config) => {
                Some(Arc::new(fetch::FetchUrl::new(config, self.fetch.clone())))
            }
            _ => None,
        })
    }
}
