//! An MCP server as a back end: the operator maps categories to the server's tool names
//! (`quote = "GLOBAL_QUOTE"`), and a category is answered by calling that tool with the symbol
//! (under the argument name the operator gives, `symbol` by default) and whichever of
//! `period`, `limit`, `from`, `to`, `interval`, `year` and `quarter` the tool's input schema
//! declares. The tool's answer, JSON or text, becomes a table.
//!
//! The session goes through the engine's [`McpConnector`] port (the server's network-guarded
//! MCP client), is opened on first use, kept, and opened again after a failure. Servers are
//! configured by URL in the operator's file; saved connectors (`/v1/admin/connectors`) cannot
//! be named here yet.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use engine::mcp::{McpConnector, McpError, McpServer, McpSession};
use serde_json::{Map, Value, json};
use tokio::sync::Mutex;

use crate::backend::{Backend, BackendError, Block, DataRequest};
use crate::budget::{Budget, BudgetSettings};
use crate::category::Category;
use crate::passages::transcript_block;
use crate::table::Table;

/// One MCP server mapped by tool name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct McpSource {
    /// Names the source (`mcp:<label>`).
    pub label: String,
    /// Where and how to reach it (the token and headers are secrets).
    pub server: McpServer,
    /// Category → the server's tool.
    pub tools: BTreeMap<Category, String>,
    /// The argument that carries the ticker (default `symbol`).
    pub symbol_argument: String,
}

struct Open {
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
    open: Mutex<Option<Open>>,
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
            open: Mutex::new(None),
        }
    }

    async fn call(&self, tool: &str, request: &DataRequest) -> Result<String, BackendError> {
        self.budget.acquire().await?;
        let mut open = self.open.lock().await;
        if open.is_none() {
            let session = self
                .connector
                .connect(&self.config.server)
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
            *open = Some(Open { session, arguments });
        }
        let Some(current) = open.as_ref() else {
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
                if let Some(broken) = open.take() {
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
