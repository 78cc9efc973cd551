//! The run's tool registry: what the model is offered and how its calls are checked.
//!
//! Only custom function tools exist so far (client-executed: a call pauses the run and is handed
//! back). Built-in, MCP and connector tools arrive with their adapters and are refused until then.

//! The run's tool registry: what the model is offered and how its calls are routed.
//!
//! Three kinds of tools reach the model, all as function definitions (design.md §3):
//! - custom `function` tools, which the caller executes (a call pauses the run);
//! - the tools of remote MCP servers, named `{server_label}__{tool}`, known once discovery has
//!   listed them; a deferred server's tools become visible only after a `tool_search` found them;
//! - `tool_search` itself, present while any server is deferred.
//!
//! Built-in and connector tools arrive with their adapters and are refused until then.

use std::collections::{BTreeMap, HashMap};

use protocol::request::{
    ApprovalFilter, ApprovalMode, FunctionTool, McpTool, RequireApproval, Tool,
};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

use std::sync::Arc;

use crate::error::EngineError;
use crate::hosted::{HostedError, HostedTool, HostedTools};
use crate::mcp::{McpServer, McpToolInfo, McpTransport};
use crate::model::ToolSpec;
use crate::search;

/// The name of the catalog search tool offered when a server is deferred.
pub const TOOL_SEARCH: &str = "tool_search";

/// Longest tool name the upstream APIs accept.
const MAX_TOOL_NAME: usize = 64;

/// At most this many tools per search result.
const SEARCH_LIMIT: usize = 8;

/// A function tool as the run uses it.
pub struct FunctionDef {
    pub spec: ToolSpec,
    /// Compiled schema when `strict: true`.
    validator: Option<jsonschema::Validator>,
}

/// One `mcp` tool of the request: where the server is and how its tools may be used.
pub struct ServerDef {
    pub label: String,
    pub url: String,
    pub description: Option<String>,
    authorization: Option<String>,
    headers: BTreeMap<String, String>,
    allowed_tools: Option<Vec<String>>,
    approval: Option<RequireApproval>,
    pub deferred: bool,
    /// A saved connector's own settings (`None` for an `mcp` tool).
    pub connector: Option<ConnectorDef>,
}

/// What a saved connector adds to a server: its id, transport, time bound, the approval
/// policy it was saved with (a request can only add to it) and what it lends the sandbox.
#[derive(Clone)]
pub struct ConnectorDef {
    pub id: String,
    pub transport: McpTransport,
    pub timeout: Option<std::time::Duration>,
    /// The saved `require_approval`: a call needs approval when it or the request's says so.
    pub approval: Option<RequireApproval>,
    /// Sandbox variable -> value (secret).
    pub sandbox_env: BTreeMap<String, secrecy::SecretString>,
    /// An OAuth connector's grant, opened (its tokens come from here, not `authorization`).
    pub oauth: Option<std::sync::Arc<crate::oauth::OAuthCredentials>>,
}

/// A saved connector resolved for one request (`connector_tools.rs`).
pub struct ConnectorServer {
    pub label: String,
    pub url: String,
    pub description: Option<String>,
    pub authorization: Option<String>,
    pub headers: BTreeMap<String, String>,
    pub allowed_tools: Option<Vec<String>>,
    pub approval: Option<RequireApproval>,
    pub deferred: bool,
    pub connector: ConnectorDef,
}

impl ServerDef {
    fn from_tool(tool: &McpTool) -> ServerDef {
        ServerDef {
            label: tool.server_label.clone(),
            url: tool.server_url.clone(),
            description: tool.server_description.clone(),
            authorization: tool.authorization.clone(),
            headers: tool.headers.clone().unwrap_or_default(),
            allowed_tools: tool.allowed_tools.clone(),
            approval: tool.require_approval.clone(),
            deferred: tool.defer_loading.unwrap_or(false),
            connector: None,
        }
    }

    fn from_connector(server: ConnectorServer) -> ServerDef {
        ServerDef {
            label: server.label,
            url: server.url,
            description: server.description,
            authorization: server.authorization,
            headers: server.headers,
            allowed_tools: server.allowed_tools,
            approval: server.approval,
            deferred: server.deferred,
            connector: Some(server.connector),
        }
    }

    /// The saved connector's id, for the items this server produces.
    pub fn connector_id(&self) -> Option<String> {
        self.connector.as_ref().map(|c| c.id.clone())
    }

    /// Where to connect, with this request's credentials.
    pub fn endpoint(&self) -> McpServer {
        McpServer {
            label: self.label.clone(),
            url: self.url.clone(),
            authorization: self.authorization.clone(),
            headers: self.headers.clone(),
        }
    }

    /// The request's `allowed_tools` (absent or empty: all tools).
    pub fn allowed_tools(&self) -> Option<&[String]> {
        self.allowed_tools.as_deref()
    }

    /// Whether `allowed_tools` lets the model see this tool (absent or empty: all).
    pub fn allows(&self, tool: &str) -> bool {
        match &self.allowed_tools {
            Some(names) if !names.is_empty() => names.iter().any(|n| n == tool),
            _ => true,
        }
    }

    /// Whether a call of this tool must wait for the caller's approval.
    pub fn needs_approval(&self, tool: &McpToolInfo) -> bool {
        needs_approval(self.approval.as_ref(), &tool.name, tool.read_only)
            || self
                .connector
                .as_ref()
                .is_some_and(|c| needs_approval(c.approval.as_ref(), &tool.name, tool.read_only))
    }

    /// The URL's host, for messages (the URL itself may carry a token in its query).
    pub fn host(&self) -> String {
        host_of(&self.url)
    }
}

/// The host part of a URL, for messages.
pub fn host_of(url: &str) -> String {
    let rest = url.split_once("://").map_or(url, |(_, rest)| rest);
    let authority = rest.split(['/', '?', '#']).next().unwrap_or_default();
    authority
        .rsplit_once('@')
        .map_or(authority, |(_, host)| host)
        .to_owned()
}

/// A discovered MCP tool the model may see.
pub struct McpToolEntry {
    pub server: usize,
    pub info: McpToolInfo,
    pub model_name: String,
}

/// Where a model's call goes.
pub enum Target<'a> {
    Function,
    Hosted(Arc<dyn HostedTool>),
    Mcp {
        server: &'a ServerDef,
        tool: &'a McpToolInfo,
    },
    ToolSearch,
}

/// The tools of one run.
#[derive(Default)]
pub struct Registry {
    functions: Vec<FunctionDef>,
    /// Built-in tools the service runs, with their specs (names are fixed and reserved).
    hosted: Vec<(ToolSpec, Arc<dyn HostedTool>)>,
    servers: Vec<ServerDef>,
    mcp_tools: Vec<McpToolEntry>,
    /// Deferred tools a search loaded, in load order (offered after all others).
    loaded: Vec<(usize, String)>,
    /// Secret values lent to the sandbox: scrubbed from every built-in tool's outcome.
    lent: Vec<secrecy::SecretString>,
    by_name: HashMap<String, usize>,
}

impl Registry {
    /// Builds the registry from the request's tools (MCP tools are added by discovery).
    pub fn from_request(tools: &[Tool], hosted: &dyn HostedTools) -> Result<Registry, EngineError> {
        Registry::with_connectors(tools, hosted, BTreeMap::new())
    }

    /// Builds the registry with the request's saved connectors, resolved by their index in
    /// `tools`.
    pub fn with_connectors(
        tools: &[Tool],
        hosted: &dyn HostedTools,
        mut connectors: BTreeMap<usize, ConnectorServer>,
    ) -> Result<Registry, EngineError> {
        let mut registry = Registry::default();
        // What the request's connectors lend the sandbox, when it has the sandbox.
        let has_sandbox = tools.iter().any(|t| matches!(t, Tool::Sandbox(_)));
        let env: crate::hosted::SandboxEnv = if has_sandbox {
            connectors
                .values()
                .flat_map(|c| c.connector.sandbox_env.clone())
                .collect()
        } else {
            BTreeMap::new()
        };
        registry.lent = env.values().cloned().collect();
        for (index, tool) in tools.iter().enumerate() {
            match tool {
                Tool::Function(function) => {
                    let def = function_def(function, index)?;
                    registry
                        .by_name
                        .insert(def.spec.name.clone(), registry.functions.len());
                    registry.functions.push(def);
                }
                Tool::Mcp(mcp) => {
                    if registry.servers.iter().any(|s| s.label == mcp.server_label) {
                        return Err(EngineError::invalid(
                            format!("tools[{index}].server_label"),
                            format!(
                                "server_label \"{}\" is used by more than one mcp or connector tool",
                                mcp.server_label
                            ),
                        ));
                    }
                    registry.servers.push(ServerDef::from_tool(mcp));
                }
                Tool::Connector(connector) => {
                    let server = connectors.remove(&index).ok_or_else(|| {
                        EngineError::invalid(
                            format!("tools[{index}].id"),
                            format!("connector \"{}\" not found", connector.id),
                        )
                    })?;
                    if registry.servers.iter().any(|s| s.label == server.label) {
                        return Err(EngineError::invalid(
                            format!("tools[{index}].server_label"),
                            format!(
                                "server_label \"{}\" is used by more than one mcp or connector tool: give this connector another server_label",
                                server.label
                            ),
                        ));
                    }
                    registry.servers.push(ServerDef::from_connector(server));
                }
                other => match hosted.build_with_env(index, other, &env) {
                    Ok(tools) if tools.is_empty() => {
                        return Err(EngineError::NotImplemented(format!(
                            "tools[{index}]: the {} tool is not available on this server yet",
                            other.type_name()
                        )));
                    }
                    Ok(tools) => {
                        for tool in tools {
                            let spec = tool.spec();
                            if registry.hosted.iter().any(|(s, _)| s.name == spec.name) {
                                return Err(EngineError::invalid(
                                    format!("tools[{index}]"),
                                    format!(
                                        "the {} tool is given more than once",
                                        other.type_name()
                                    ),
                                ));
                            }
                            registry.hosted.push((spec, tool));
                        }
                    }
                    Err(HostedError::Invalid(err)) => return Err(EngineError::InvalidRequest(err)),
                    Err(HostedError::Unavailable(message)) => {
                        return Err(EngineError::NotImplemented(format!(
                            "tools[{index}]: {message}"
                        )));
                    }
                },
            }
        }
        Ok(registry)
    }

    /// The secret values lent to the sandbox (to be scrubbed from what tools return).
    pub fn lent(&self) -> &[secrecy::SecretString] {
        &self.lent
    }

    pub fn servers(&self) -> &[ServerDef] {
        &self.servers
    }

    pub fn server_index(&self, label: &str) -> Option<usize> {
        self.servers.iter().position(|s| s.label == label)
    }

    /// Sets what discovery found on one server, keeping only `allowed_tools`. A tool whose
    /// model name a custom function already uses is left out (the function wins).
    pub fn set_server_tools(&mut self, server: usize, tools: Vec<McpToolInfo>) {
        self.mcp_tools.retain(|t| t.server != server);
        let Some(def) = self.servers.get(server) else {
            return;
        };
        for tool in tools {
            if !def.allows(&tool.name) {
                continue;
            }
            let model_name = mcp_model_name(&def.label, &tool.name);
            if self.by_name.contains_key(&model_name) || model_name == TOOL_SEARCH {
                tracing::warn!(server = %def.label, tool = %tool.name, "an MCP tool's name collides with a function tool; it is not offered");
                continue;
            }
            self.mcp_tools.push(McpToolEntry {
                server,
                info: tool,
                model_name,
            });
        }
    }

    /// The tools discovery found on one server (after `allowed_tools`).
    pub fn server_tools(&self, server: usize) -> impl Iterator<Item = &McpToolInfo> {
        self.mcp_tools
            .iter()
            .filter(move |t| t.server == server)
            .map(|t| &t.info)
    }

    /// Makes a deferred tool callable from the next step on. Returns false when unknown.
    pub fn load(&mut self, label: &str, tool: &str) -> bool {
        let Some(server) = self.server_index(label) else {
            return false;
        };
        let known = self
            .mcp_tools
            .iter()
            .any(|t| t.server == server && t.info.name == tool);
        let key = (server, tool.to_owned());
        if known && !self.loaded.contains(&key) {
            self.loaded.push(key);
        }
        known
    }

    fn is_loaded(&self, entry: &McpToolEntry) -> bool {
        self.loaded
            .iter()
            .any(|(server, name)| *server == entry.server && *name == entry.info.name)
    }

    /// Whether the model may call this MCP tool now.
    fn visible(&self, entry: &McpToolEntry) -> bool {
        !self.servers[entry.server].deferred || self.is_loaded(entry)
    }

    fn has_deferred(&self) -> bool {
        self.servers.iter().any(|s| s.deferred)
    }

    /// The definitions offered to the model: functions in request order, eager MCP tools,
    /// `tool_search`, then searched tools in the order they were loaded (appended last so
    /// provider prompt caches stay warm).
    pub fn specs(&self) -> Vec<ToolSpec> {
        let mut specs: Vec<ToolSpec> = self.functions.iter().map(|f| f.spec.clone()).collect();
        specs.extend(self.hosted.iter().map(|(spec, _)| spec.clone()));
        specs.extend(
            self.mcp_tools
                .iter()
                .filter(|t| !self.servers[t.server].deferred)
                .map(mcp_spec),
        );
        if self.has_deferred() {
            specs.push(self.tool_search_spec());
        }
        for (server, name) in &self.loaded {
            if let Some(entry) = self
                .mcp_tools
                .iter()
                .find(|t| t.server == *server && t.info.name == *name)
            {
                specs.push(mcp_spec(entry));
            }
        }
        specs
    }

    pub fn is_empty(&self) -> bool {
        self.functions.is_empty()
            && self.hosted.is_empty()
            && self.mcp_tools.is_empty()
            && !self.has_deferred()
    }

    /// Where a call of the model goes; `None` for a name the model may not call now.
    pub fn resolve(&self, name: &str) -> Option<Target<'_>> {
        if self.by_name.contains_key(name) {
            return Some(Target::Function);
        }
        if let Some((_, tool)) = self.hosted.iter().find(|(spec, _)| spec.name == name) {
            return Some(Target::Hosted(tool.clone()));
        }
        if name == TOOL_SEARCH && self.has_deferred() {
            return Some(Target::ToolSearch);
        }
        self.mcp_tools
            .iter()
            .find(|t| t.model_name == name && self.visible(t))
            .map(|t| Target::Mcp {
                server: &self.servers[t.server],
                tool: &t.info,
            })
    }

    /// The `tool_search` definition: the deferred servers' labels and descriptions only.
    fn tool_search_spec(&self) -> ToolSpec {
        let deferred: Vec<&ServerDef> = self.servers.iter().filter(|s| s.deferred).collect();
        let mut description = String::from(
            "Search the tool catalog of these MCP servers and load the matching tools, which become callable from your next step. Search again with other words if nothing useful is found.\nServers:",
        );
        for server in &deferred {
            let count = self
                .mcp_tools
                .iter()
                .filter(|t| self.servers[t.server].label == server.label)
                .count();
            description.push_str(&format!(
                "\n- {}: {} ({count} tools)",
                server.label,
                server.description.as_deref().unwrap_or("an MCP server"),
            ));
        }
        let labels: Vec<&str> = deferred.iter().map(|s| s.label.as_str()).collect();
        ToolSpec {
            name: TOOL_SEARCH.to_owned(),
            description: Some(description),
            parameters: json!({
                "type": "object",
                "properties": {
                    "query": {"type": "string", "description": "What the tool should do, in a few words."},
                    "server_label": {"type": "string", "enum": labels, "description": "Search only this server."}
                },
                "required": ["query"]
            }).into(),
            strict: false,
        }
    }

    /// Ranks the deferred tools for a query (optionally on one server) and loads the best
    /// matches. Returns `(server, tool)` pairs, best first; empty when nothing matches.
    pub fn search(&mut self, query: &str, label: Option<&str>) -> Vec<(usize, McpToolInfo)> {
        let candidates: Vec<&McpToolEntry> = self
            .mcp_tools
            .iter()
            .filter(|t| {
                let server = &self.servers[t.server];
                server.deferred && label.is_none_or(|l| l == server.label)
            })
            .collect();
        let docs: Vec<Vec<String>> = candidates
            .iter()
            .map(|t| search::tool_tokens(&t.info))
            .collect();
        let ranked = search::rank(&docs, &search::tokenize(query));
        let found: Vec<(usize, McpToolInfo)> = ranked
            .into_iter()
            .take(SEARCH_LIMIT)
            .map(|(i, _)| (candidates[i].server, candidates[i].info.clone()))
            .collect();
        for (server, tool) in &found {
            let label = self.servers[*server].label.clone();
            self.load(&label, &tool.name);
        }
        found
    }

    /// Whether `name` is a custom function whose calls need no check of their arguments
    /// (no `strict` schema): its arguments can be streamed to the caller as they arrive.
    pub fn is_unchecked_function(&self, name: &str) -> bool {
        self.by_name
            .get(name)
            .is_some_and(|i| self.functions[*i].validator.is_none())
    }

    /// Checks one function call of the model. `Err` is the error text the model gets back.
    pub fn check_call(&self, name: &str, arguments: &str) -> Result<(), String> {
        let Some(def) = self.by_name.get(name).map(|i| &self.functions[*i]) else {
            return Err(format!("error: there is no tool named \"{name}\""));
        };
        let Some(validator) = &def.validator else {
            return Ok(());
        };
        let value: Value = serde_json::from_str(arguments)
            .map_err(|err| format!("error: the arguments are not valid JSON: {err}"))?;
        let problems: Vec<String> = validator
            .iter_errors(&value)
            .take(5)
            .map(|err| {
                let path = err.instance_path().to_string();
                if path.is_empty() {
                    err.to_string()
                } else {
                    format!("{path}: {err}")
                }
            })
            .collect();
        if problems.is_empty() {
            Ok(())
        } else {
            Err(format!(
                "error: the arguments do not match the parameters schema of \"{name}\": {}. Call the tool again with corrected arguments.",
                problems.join("; ")
            ))
        }
    }
}

fn mcp_spec(entry: &McpToolEntry) -> ToolSpec {
    ToolSpec {
        name: entry.model_name.clone(),
        description: entry.info.description.clone(),
        parameters: entry.info.input_schema.clone(),
        strict: false,
    }
}

/// The name the model sees for an MCP tool: `{label}__{tool}`, or, when that is too long or
/// holds characters upstream APIs refuse, a shortened form with a stable hash suffix. A pure
/// function of the pair, so replayed history maps to the same name.
pub fn mcp_model_name(label: &str, tool: &str) -> String {
    let plain = format!("{label}__{tool}");
    let valid = |c: char| c.is_ascii_alphanumeric() || c == '_' || c == '-';
    if plain.len() <= MAX_TOOL_NAME && plain.chars().all(valid) {
        return plain;
    }
    let digest = Sha256::digest(format!("{label}\0{tool}").as_bytes());
    let suffix: String = digest.iter().take(4).map(|b| format!("{b:02x}")).collect();
    let sanitized: String = plain
        .chars()
        .map(|c| if valid(c) { c } else { '_' })
        .take(MAX_TOOL_NAME - suffix.len() - 1)
        .collect();
    format!("{sanitized}_{suffix}")
}

/// Whether `require_approval` gates a call of `tool` (design.md §3 decision order).
pub fn needs_approval(
    policy: Option<&RequireApproval>,
    tool: &str,
    read_only: Option<bool>,
) -> bool {
    match policy {
        None | Some(RequireApproval::Mode(ApprovalMode::Never)) => false,
        Some(RequireApproval::Mode(ApprovalMode::Always)) => true,
        Some(RequireApproval::Filters(filters)) => {
            let matches = |filter: &ApprovalFilter| {
                let name_ok = match &filter.tool_names {
                    Some(names) if !names.is_empty() => names.iter().any(|n| n == tool),
                    _ => true,
                };
                let read_only_ok = filter
                    .read_only
                    .is_none_or(|wanted| read_only.unwrap_or(false) == wanted);
                name_ok && read_only_ok
            };
            if filters.always.as_ref().is_some_and(matches) {
                true
            } else if filters.never.as_ref().is_some_and(matches) {
                false
            } else {
                filters.never.is_some()
            }
        }
    }
}

fn function_def(tool: &FunctionTool, index: usize) -> Result<FunctionDef, EngineError> {
    let parameters = tool
        .parameters
        .clone()
        .unwrap_or_else(|| serde_json::json!({"type": "object", "properties": {}}).into());
    let strict = tool.strict.unwrap_or(false);
    let validator = if strict {
        Some(jsonschema::validator_for(&parameters).map_err(|err| {
            EngineError::invalid(
                format!("tools[{index}].parameters"),
                format!("the parameters schema is not a valid JSON Schema: {err}"),
            )
        })?)
    } else {
        None
    };
    Ok(FunctionDef {
        spec: ToolSpec {
            name: tool.name.clone(),
            description: tool.description.clone(),
            parameters,
            strict,
        },
        validator,
    })
}

/// The request's tools as echoed on the response: secrets (`authorization`, `headers`) removed.
pub fn redact(tools: &[Tool]) -> Vec<Tool> {
    tools
        .iter()
        .map(|tool| match tool {
            Tool::Mcp(mcp) => {
                let mut mcp = mcp.clone();
                mcp.authorization = None;
                mcp.headers = None;
                Tool::Mcp(mcp)
            }
            other => other.clone(),
        })
        .collect()
}

/// The tools as a response echoes them: secrets removed, and each function's `strict` as it is
/// applied (arguments are checked against the schema only with `strict: true`).
pub fn echo(tools: &[Tool]) -> Vec<Tool> {
    redact(tools)
        .into_iter()
        .map(|tool| match tool {
            Tool::Function(mut function) => {
                function.strict = Some(function.strict.unwrap_or(false));
                Tool::Function(function)
            }
            other => other,
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn registry(json: &str) -> Registry {
        let tools: Vec<Tool> = serde_json::from_str(json).expect("tools parse");
        Registry::from_request(&tools, &crate::hosted::NoHostedTools).expect("registry")
    }

    #[test]
    fn strict_tools_check_arguments_against_the_schema() {
        let r = registry(
            r#"[{"type":"function","name":"f","strict":true,"parameters":{"type":"object","properties":{"n":{"type":"integer"}},"required":["n"],"additionalProperties":false}},
                {"type":"function","name":"loose","parameters":{"type":"object","properties":{"n":{"type":"integer"}}}}]"#,
        );
        assert!(r.check_call("f", r#"{"n":1}"#).is_ok());
        let err = r
            .check_call("f", r#"{"n":"one"}"#)
            .expect_err("type mismatch");
        assert!(err.contains("/n"), "{err}");
        assert!(r.check_call("f", "{").is_err());
        assert!(r.check_call("loose", r#"{"n":"one"}"#).is_ok());
        assert!(r.check_call("missing", "{}").is_err());
    }

    fn policy(json: &str) -> RequireApproval {
        serde_json::from_str(json).expect("policy parses")
    }

    #[test]
    fn approval_policies_follow_the_decision_order() {
        // (policy, tool, read_only, needs approval)
        let cases: &[(Option<&str>, &str, Option<bool>, bool)] = &[
            (None, "delete", Some(false), false),
            (Some(r#""never""#), "delete", Some(false), false),
            (Some(r#""always""#), "read", Some(true), true),
            // `always` lists what needs approval; the rest runs.
            (
                Some(r#"{"always":{"tool_names":["delete"]}}"#),
                "delete",
                None,
                true,
            ),
            (
                Some(r#"{"always":{"tool_names":["delete"]}}"#),
                "read",
                None,
                false,
            ),
            // `never` lists the exceptions; the rest needs approval.
            (
                Some(r#"{"never":{"tool_names":["read"]}}"#),
                "read",
                None,
                false,
            ),
            (
                Some(r#"{"never":{"tool_names":["read"]}}"#),
                "delete",
                None,
                true,
            ),
            // read_only filters use the server's annotation (absent counts as not read-only).
            (
                Some(r#"{"never":{"read_only":true}}"#),
                "read",
                Some(true),
                false,
            ),
            (
                Some(r#"{"never":{"read_only":true}}"#),
                "write",
                Some(false),
                true,
            ),
            (
                Some(r#"{"never":{"read_only":true}}"#),
                "unknown",
                None,
                true,
            ),
            (
                Some(r#"{"always":{"read_only":false}}"#),
                "write",
                Some(false),
                true,
            ),
            (
                Some(r#"{"always":{"read_only":false}}"#),
                "read",
                Some(true),
                false,
            ),
            // Both set: both must match.
            (
                Some(r#"{"never":{"read_only":true,"tool_names":["read"]}}"#),
                "read",
                Some(true),
                false,
            ),
            (
                Some(r#"{"never":{"read_only":true,"tool_names":["read"]}}"#),
                "read",
                Some(false),
                true,
            ),
            (
                Some(r#"{"never":{"read_only":true,"tool_names":["read"]}}"#),
                "list",
                Some(true),
                true,
            ),
            // Empty filters and empty lists match every tool.
            (Some(r#"{"always":{}}"#), "read", Some(true), true),
            (Some(r#"{"never":{}}"#), "delete", Some(false), false),
            (
                Some(r#"{"never":{"tool_names":[]}}"#),
                "delete",
                Some(false),
                false,
            ),
            (
                Some(r#"{"always":{"tool_names":[]}}"#),
                "read",
                Some(true),
                true,
            ),
            // `always` wins over `never`.
            (
                Some(r#"{"always":{"tool_names":["x"]},"never":{}}"#),
                "x",
                None,
                true,
            ),
            (
                Some(r#"{"always":{"tool_names":["x"]},"never":{}}"#),
                "y",
                None,
                false,
            ),
            (Some("{}"), "x", None, false),
        ];
        for (json, tool, read_only, expected) in cases {
            let policy = json.map(policy);
            assert_eq!(
                needs_approval(policy.as_ref(), tool, *read_only),
                *expected,
                "policy {json:?}, tool {tool}, read_only {read_only:?}"
            );
        }
    }

    #[test]
    fn model_names_are_prefixed_and_shortened_stably() {
        assert_eq!(
            mcp_model_name("github", "create_issue"),
            "github__create_issue"
        );
        let long = mcp_model_name(
            "a_rather_long_server_label",
            "and_a_very_long_tool_name_that_goes_on_and_on",
        );
        assert_eq!(long.len(), 64);
        assert_eq!(
            long,
            mcp_model_name(
                "a_rather_long_server_label",
                "and_a_very_long_tool_name_that_goes_on_and_on"
            )
        );
        assert_ne!(
            long,
            mcp_model_name(
                "a_rather_long_server_label",
                "and_a_very_long_tool_name_that_goes_on_and_ox"
            )
        );
        let dotted = mcp_model_name("s", "files.read");
        assert!(dotted.starts_with("s__files_read_"), "{dotted}");
        assert!(
            dotted
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
        );
    }

    fn info(name: &str, description: &str) -> McpToolInfo {
        McpToolInfo {
            name: name.to_owned(),
            description: Some(description.to_owned()),
            input_schema: json!({"type": "object"}).into(),
            read_only: None,
        }
    }

    #[test]
    fn deferred_tools_appear_only_after_a_search_and_are_appended_last() {
        let mut r = registry(
            r#"[{"type":"function","name":"f"},
                {"type":"mcp","server_label":"eager","server_url":"https://e","allowed_tools":["keep"]},
                {"type":"mcp","server_label":"lazy","server_url":"https://l","defer_loading":true,"server_description":"Weather and stocks"}]"#,
        );
        r.set_server_tools(0, vec![info("keep", "kept"), info("drop", "not allowed")]);
        r.set_server_tools(
            1,
            vec![
                info("weather", "Weather forecast for a city"),
                info("quote", "Stock quote"),
            ],
        );
        let names = |r: &Registry| r.specs().into_iter().map(|s| s.name).collect::<Vec<_>>();
        assert_eq!(names(&r), ["f", "eager__keep", "tool_search"]);
        let search = r.specs().pop().expect("tool_search");
        let description = search.description.expect("description");
        assert!(
            description.contains("lazy: Weather and stocks (2 tools)"),
            "{description}"
        );
        assert!(
            !description.contains("forecast"),
            "no deferred schema before a search: {description}"
        );
        assert!(r.resolve("lazy__weather").is_none());
        assert!(r.resolve("eager__drop").is_none());
        let found = r.search("forecast", None);
        assert_eq!(found.len(), 1);
        assert_eq!(
            names(&r),
            ["f", "eager__keep", "tool_search", "lazy__weather"]
        );
        assert!(matches!(
            r.resolve("lazy__weather"),
            Some(Target::Mcp { .. })
        ));
        assert!(r.search("forecast", Some("eager")).is_empty());
        assert!(r.search("zebra", None).is_empty());
    }

    #[test]
    fn secrets_are_removed_from_echoed_tools() {
        let tools: Vec<Tool> = serde_json::from_str(
            r#"[{"type":"mcp","server_label":"a","server_url":"https://x","authorization":"tok","headers":{"X-Key":"v"}}]"#,
        )
        .expect("parse");
        let echoed = serde_json::to_string(&redact(&tools)).expect("serialize");
        assert!(
            !echoed.contains("tok") && !echoed.contains("X-Key"),
            "{echoed}"
        );
    }
}
