//! The hosted-tool port: built-in tools the service runs itself (`web_search`, `fetch_url`, …).
//!
//! The server's `Builtins` implements [`HostedTools`] over the `fetch`, `search` and `sandbox`
//! crates: it turns one `tools[]` entry of a request into a [`HostedTool`] configured for that
//! request (filters, budgets). The engine offers its
//! [`HostedTool::spec`] to the model under its fixed name, calls it with the model's arguments,
//! puts the returned items in the output, gives the model the returned text, and counts the
//! invocations in `usage.tool_calls_details`. A failing call is never an error of the run: the
//! tool says what went wrong in `model_text` (and may still return items).

use std::sync::Arc;

use protocol::RequestError;
use protocol::events::EventData;
use protocol::output::OutputItem;
use protocol::request::Tool;

use crate::model::ToolSpec;

/// Where a tool sends progress events (`response.reasoning.*`) while it runs.
pub trait EventSink: Send + Sync {
    fn emit(&self, event: EventData);
}

/// What one call of a hosted tool needs besides its arguments.
pub struct CallContext<'a> {
    pub events: &'a dyn EventSink,
    /// The number the first citable source of this call gets (`[n]` in the answer and
    /// `search_results.results[].id`); numbers run on across the calls of a run.
    pub next_source: u64,
    /// The model's id of this call (items such as `sandbox_results` carry it as `call_id`).
    pub call_id: &'a str,
    /// The conversation the call belongs to: the id of the first response of its
    /// `previous_response_id` chain. State kept between calls (the sandbox workspace) is
    /// keyed by it, so a continuation finds it again.
    pub conversation: &'a str,
    /// The project of the request (files and workspaces never cross projects).
    pub project_id: &'a str,
    /// Where a tool puts files it hands to the caller (`share_file`).
    pub files: &'a dyn FileSink,
}

/// A file a tool shared, as stored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SharedFile {
    /// `file_…`, unique within the response.
    pub id: String,
    /// Where the caller downloads it, relative: `/v1/responses/{response_id}/files/{id}/content`.
    pub url: String,
    pub bytes: u64,
}

/// Stores files tools share with the caller, attached to the response being run.
#[async_trait::async_trait]
pub trait FileSink: Send + Sync {
    /// Stores one file. `Err` is a message for the model (e.g. the file is too large).
    async fn share(
        &self,
        filename: &str,
        content_type: &str,
        bytes: Vec<u8>,
    ) -> Result<SharedFile, String>;
}

/// A source the model may cite as `[number]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Source {
    pub number: u64,
    pub url: String,
    pub title: String,
}

/// What one call produced.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ToolOutcome {
    /// The call's result as the model reads it (errors included, as text).
    pub model_text: String,
    /// Output items to add to the response, in order (`search_results`, `fetch_url_results`).
    pub items: Vec<OutputItem>,
    /// `usage.tool_calls_details` keys and how many billable invocations this call made
    /// (`("search_web", 2)` for a call with two queries).
    pub invocations: Vec<(String, u64)>,
    /// Sources the answer may cite, numbered from [`CallContext::next_source`].
    pub sources: Vec<Source>,
    /// The highest `[n]` this call showed the model, citable or not (a finance table without a
    /// public page is numbered too): the run's numbering moves past it, so no two results of a
    /// run share a number. `None` when the call numbered nothing beyond its `sources`.
    pub last_number: Option<u64>,
}

/// One built-in tool configured for one request.
#[async_trait::async_trait]
pub trait HostedTool: Send + Sync {
    /// The definition offered to the model; its name is the built-in's fixed name.
    fn spec(&self) -> ToolSpec;
    /// Runs one call. `arguments` is the model's JSON text, unchecked.
    async fn call(&self, arguments: &str, context: CallContext<'_>) -> ToolOutcome;
}

/// Why a hosted tool could not be set up for a request.
#[derive(Debug, thiserror::Error)]
pub enum HostedError {
    /// The tool's configuration in the request is invalid (400, naming the field).
    #[error("{0}")]
    Invalid(RequestError),
    /// The server cannot offer this tool (e.g. no working back end); the message says why.
    #[error("{0}")]
    Unavailable(String),
}

/// Builds the hosted tools a request asks for (implemented by the server's `Builtins`).
pub trait HostedTools: Send + Sync {
    /// The tools `tools[index]` gives the model (one entry may bring several: `sandbox`
    /// brings `execute`, `read`, `write`, …), or an empty list when it is not a kind this
    /// implementation provides (the engine then answers that the tool is not available yet).
    fn build(&self, index: usize, tool: &Tool) -> Result<Vec<Arc<dyn HostedTool>>, HostedError>;

    /// Like [`HostedTools::build`], for a request whose saved connectors lend `env` to the
    /// sandbox (variable -> secret value): a `sandbox` entry's programs see those variables.
    /// Implementations without a sandbox build as `build` does.
    fn build_with_env(
        &self,
        index: usize,
        tool: &Tool,
        env: &SandboxEnv,
    ) -> Result<Vec<Arc<dyn HostedTool>>, HostedError> {
        let _ = env;
        self.build(index, tool)
    }

    /// Checks, when a request is validated, that `tools[index]` can serve `project_id`: a
    /// tool whose back end holds data per project (the people directory) refuses a project
    /// that has none (`HostedError::Invalid`, a 400 naming what to set). Default: it can.
    fn check<'a>(
        &'a self,
        project_id: &'a str,
        index: usize,
        tool: &'a Tool,
    ) -> futures::future::BoxFuture<'a, Result<(), HostedError>> {
        let _ = (project_id, index, tool);
        Box::pin(async { Ok(()) })
    }

    /// Removes what the tools' back ends hold for a project being deleted (the people
    /// directory's imported people); the message says what failed. Default: nothing held.
    fn forget_project<'a>(
        &'a self,
        project_id: &'a str,
    ) -> futures::future::BoxFuture<'a, Result<(), String>> {
        let _ = project_id;
        Box::pin(async { Ok(()) })
    }
}

/// Variables lent to the sandbox by a request's connectors: name -> secret value.
pub type SandboxEnv = std::collections::BTreeMap<String, secrecy::SecretString>;

/// Provides no hosted tools (processes that run no agent loop, and tests).
pub struct NoHostedTools;

impl HostedTools for NoHostedTools {
    fn build(&self, _index: usize, _tool: &Tool) -> Result<Vec<Arc<dyn HostedTool>>, HostedError> {
        Ok(Vec::new())
    }
}

/// A [`FileSink`] that refuses every file (contexts where nothing can be shared, and tests).
pub struct NoFiles;

#[async_trait::async_trait]
impl FileSink for NoFiles {
    async fn share(
        &self,
        _filename: &str,
        _content_type: &str,
        _bytes: Vec<u8>,
    ) -> Result<SharedFile, String> {
        Err("files cannot be shared here".to_owned())
    }
}
