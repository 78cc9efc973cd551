//! An MCP server as a back end: the operator maps categories to the server's tool names
//! (`quote = "GLOBAL_QUOTE"`), and a category is answered by calling that tool with the symbol
//! (under the argument name the operator gives, `symbol` by default) and whichever of
//! `period`, `limit`, `from`, `to`, `interval`, `year` and `quarter` the tool's input schema
//! declares. The tool's answer, JSON or text, becomes a table.
//!
//! The session goes through the engine's [`McpConnector`] port (the server's network-guarded
//! MCP client), is opened on first use, kept, and opened again after a failure. A server is
//! configured by URL in the operator's file, or is a saved connector (`/v1/admin/connectors`)
//! named by id: resolved on every call (in the caller's project, or the one the operator
//! named), with a session per project, opened again when the connector's endpoint or
//! credentials changed. A project without the connector does not get this source: the next
//! one that has the category answers.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use engine::mcp::{McpConnector, McpError, McpServer, McpSession, McpTransport};
use serde_json::{Map, Value, json};
use tokio::sync::Mutex;

use crate::backend::{Backend, BackendError, Block, DataRequest};
use crate::budget::{Budget, BudgetSettings};
use crate::category::Category;
use crate::connectors::{NoSavedConnectors, ProjectRef, SavedConnector, SavedConnectors};
use crate::passages::transcript_block;
use crate::table::Table;

/// One MCP server mapped by tool name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct McpSource {
    /// Names the source (`mcp:<label>`).
    pub label: String,
    /// Where and how to reach it (the token and headers are secrets). Unused when
    /// `connector` is set.
    pub server: McpServer,
    /// A saved connector to reach instead of `server`.
    pub connector: Option<SavedConnector>,
    /// Category → the server's tool.
    pub tools: BTreeMap<Category, String>,
    /// The argument that carries the ticker (default `symbol`).
    pub symbol_argument: String,
}

/// Sessions kept at most (one per project for a saved connector used per project).
const SESSIONS: usize = 64;

struct Open {
    /// The endpoint it was opened for (a changed one opens a new session).
    server: McpServer,
    session: Box<dyn McpSession>,
    /// Each tool's declared argument names.
    arguments: HashMap<String, Vec<String>>,
}

/// An MCP server back end.
pub struct McpBackend {
    connector: Arc<dyn McpConnector>,
    config: McpSource,
    source: String,
    budget: Budget,
    saved: Arc<dyn SavedConnectors>,
    /// Sessions by project (`""` for a server configured by URL).
    open: Mutex<HashMap<String, Open>>,
}

impl McpBackend {
    pub fn new(
        connector: Arc<dyn McpConnector>,
        config: McpSource,
        budget: BudgetSettings,
    ) -> McpBackend {
        McpBackend {
            source: format!("mcp:{}", config.label),
            connector,
            config,
            budget: Budget::new(budget),
            saved: Arc::new(NoSavedConnectors),
            open: Mutex::new(HashMap::new()),
        }
    }

    /// Resolves a saved connector through `saved` (needed when the source names one).
    pub fn with_saved_connectors(mut self, saved: Arc<dyn SavedConnectors>) -> McpBackend {
        self.saved = saved;
        self
    }

    /// The session key, endpoint and transport for a call from the request's project.
    async fn endpoint(
        &self,
        request: &DataRequest,
    ) -> Result<(String, McpServer, McpTransport), BackendError> {
        let Some(saved) = &self.config.connector else {
            return Ok((
                String::new(),
                self.config.server.clone(),
                McpTransport::Auto,
            ));
        };
        let (key, project) = match &saved.project {
            Some(name) => (format!("name:{name}"), ProjectRef::Name(name)),
            None => (
                format!("id:{}", request.project),
                ProjectRef::Id(&request.project),
            ),
        };
        match self.saved.endpoint(project, &saved.id).await {
            Ok(Some((mut server, transport))) => {
                server.label = self.config.label.clone();
                Ok((key, server, transport))
            }
            Ok(None) => Err(BackendError::NotFound(format!(
                "the connector \"{}\" is not saved (or is disabled) in {}",
                saved.id,
                match project {
                    ProjectRef::Id(_) => "this project".to_owned(),
                    ProjectRef::Name(name) => format!("project \"{name}\""),
                }
            ))),
            Err(message) => Err(BackendError::Config(message)),
        }
    }

    async fn call(&self, tool: &str, request: &DataRequest) -> Result<String, BackendError> {
        let (key, server, transport) = self.endpoint(request).await?;
        self.budget.acquire().await?;
        let mut sessions = self.open.lock().await;
        if sessions.get(&key).is_some_and(|open| open.server != server) {
            // Rotated or moved: the old session is closed.
            if let Some(stale) = sessions.remove(&key) {
                stale.session.close().await;
            }
        }
        if !sessions.contains_key(&key) {
            if sessions.len() >= SESSIONS {
                let evicted = sessions.keys().next().cloned();
                if let Some(old) = evicted.and_then(|k| sessions.remove(&k)) {
                    old.session.close().await;
                }
            }
            let session = self
                .connector
                .connect_over(&server, transport)
                .await
                .map_err(mcp_error)?;
            let tools = session.list_tools().await.map_err(mcp_error)?;
            let arguments = tools
                .into_iter()
                .map(|tool| {
                    let names = tool
                        .input_schema
                        .get("properties")
                        .and_then(Value::as_object)
                        .map(|p| p.keys().cloned().collect())
                        .unwrap_or_default();
                    (tool.name, names)
                })
                .collect();
            sessions.insert(
                key.clone(),
                Open {
                    server,
                    session,
                    arguments,
                },
            );
        }
        let Some(current) = sessions.get(&key) else {
            return Err(BackendError::Transport(
                "the MCP session is not open".to_owned(),
            ));
        };
        let Some(declared) = current.arguments.get(tool) else {
            return Err(BackendError::Config(format!(
                "the MCP server \"{}\" has no tool \"{tool}\"",
                self.config.label
            )));
        };
        let arguments = self.arguments(declared, request);
        match current.session.call_tool(tool, arguments).await {
            Ok(result) if result.is_error => Err(BackendError::Upstream {
                status: None,
                message: crate::table::truncate(&result.output, 300),
            }),
            Ok(result) => Ok(result.output),
            Err(err) => {
                // A broken session is opened again on the next call.
                if let Some(broken) = sessions.remove(&key) {
                    broken.session.close().await;
                }
                Err(mcp_error(err))
            }
        }
    }

    /// The symbol under the configured name, and the options the tool declares.
    fn arguments(&self, declared: &[String], request: &DataRequest) -> Map<String, Value> {
        let mut arguments = Map::new();
        if let Some(symbol) = &request.symbol {
            arguments.insert(self.config.symbol_argument.clone(), json!(symbol.ticker));
        }
        let mut offer = |name: &str, value: Option<Value>| {
            if let Some(value) = value
                && declared.iter().any(|d| d == name)
                && !arguments.contains_key(name)
            {
                arguments.insert(name.to_owned(), value);
            }
        };
        offer("period", request.period.map(|p| json!(p.name())));
        offer("limit", Some(json!(request.limit)));
        offer("from", request.from.map(|d| json!(d.to_string())));
        offer("to", request.to.map(|d| json!(d.to_string())));
        if request.category == Category::PriceHistory {
            offer("interval", Some(json!(request.interval.name())));
        }
        offer("year", request.fiscal_year.map(|y| json!(y)));
        offer("quarter", request.fiscal_quarter.map(|q| json!(q)));
        arguments
    }
}

fn mcp_error(err: McpError) -> BackendError {
    match err {
        McpError::Blocked(reason) => BackendError::Blocked(reason),
        McpError::Timeout(ms) => BackendError::Timeout(ms / 1000),
        McpError::TooLarge(limit) => BackendError::TooLarge { limit },
        McpError::Http {
            status: 429,
            message,
        } => BackendError::RateLimited {
            retry_after: None,
            message,
        },
        McpError::Http {
            status: status @ (401 | 403),
            message,
        } => BackendError::Refused(format!("HTTP {status}: {message}")),
        other => BackendError::Transport(other.to_string()),
    }
}

#[async_trait::async_trait]
impl Backend for McpBackend {
    fn source(&self) -> &str {
        &self.source
    }

    fn supports(&self, category: Category) -> bool {
        self.config.tools.contains_key(&category)
    }

    fn per_project(&self) -> bool {
        self.config
            .connector
            .as_ref()
            .is_some_and(|saved| saved.project.is_none())
    }

    async fn fetch(&self, request: &DataRequest) -> Result<Block, BackendError> {
        let tool = self.config.tools.get(&request.category).ok_or_else(|| {
            BackendError::NotFound(format!("no tool is mapped for {}", request.category.name()))
        })?;
        let output = self.call(tool, request).await?;
        let title = format!("{} (MCP tool {tool})", request.category.label());
        let parsed: Option<Value> = serde_json::from_str(output.trim()).ok();
        if request.category == Category::Transcript {
            let text = match &parsed {
                Some(Value::Object(o)) => o
                    .get("content")
                    .or_else(|| o.get("transcript"))
                    .map(|v| match v {
                        Value::String(s) => s.clone(),
                        other => other.to_string(),
                    })
                    .unwrap_or_else(|| output.clone()),
                _ => output.clone(),
            };
            return Ok(transcript_block(
                &crate::passages::split(&text),
                &request.query,
                &title,
                None,
            ));
        }
        let table = match &parsed {
            Some(value) => Table::from_json(value, request.limit),
            None => Table::from_json(&Value::String(output.clone()), request.limit),
        };
        if table.is_empty() {
            return Err(BackendError::NotFound(format!(
                "the tool {tool} returned nothing"
            )));
        }
        Ok(Block {
            title,
            table,
            ..Block::default()
        })
    }
}
