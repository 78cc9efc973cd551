//! Stream events (SSE `data:` frames). Every event carries `type` and a strictly increasing
//! `sequence_number`.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::event_line;
pub use crate::event_line::{
    output_text_delta_head, output_text_delta_line, response_event_line, write_output_text_delta,
    write_output_text_delta_from,
};
use crate::output::{ImageResult, OutputContent, OutputItem, SearchResult, UrlContent};
use crate::response::{ErrorInfo, Response, Usage};

/// One stream event.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct StreamEvent {
    #[serde(flatten)]
    pub data: EventData,
    pub sequence_number: u64,
}

impl StreamEvent {
    /// The event as one line of compact JSON, byte for byte what `serde_json::to_string` writes.
    /// The events a run emits per token (`response.output_text.delta`,
    /// `response.function_call_arguments.delta`) and those of every message item (its
    /// `output_item.*`, `content_part.*` and `output_text.done`) are written directly
    /// ([`crate::event_line`]), without serde's `flatten` machinery; every other event goes
    /// through serde.
    pub fn to_json_line(&self) -> Result<String, serde_json::Error> {
        let mut out = String::new();
        self.write_json_line(&mut out)?;
        Ok(out)
    }

    /// [`StreamEvent::to_json_line`] appended to `out` (a buffer the caller reuses).
    pub fn write_json_line(&self, out: &mut String) -> Result<(), serde_json::Error> {
        let seq = self.sequence_number;
        match &self.data {
            EventData::OutputTextDelta {
                item_id,
                output_index,
                content_index,
                delta,
                logprobs,
            } => event_line::write_output_text_delta(
                out,
                item_id,
                *output_index,
                *content_index,
                delta,
                logprobs,
                seq,
            ),
            EventData::FunctionCallArgumentsDelta {
                item_id,
                output_index,
                delta,
            } => event_line::write_function_call_arguments_delta(
                out,
                item_id,
                *output_index,
                delta,
                seq,
            ),
            EventData::OutputItemAdded { output_index, item } => {
                event_line::write_output_item(out, false, *output_index, item, seq)
            }
            EventData::OutputItemDone { output_index, item } => {
                event_line::write_output_item(out, true, *output_index, item, seq)
            }
            EventData::ContentPartAdded {
                item_id,
                output_index,
                content_index,
                part,
            } => event_line::write_content_part(
                out,
                false,
                item_id,
                *output_index,
                *content_index,
                part,
                seq,
            ),
            EventData::ContentPartDone {
                item_id,
                output_index,
                content_index,
                part,
            } => event_line::write_content_part(
                out,
                true,
                item_id,
                *output_index,
                *content_index,
                part,
                seq,
            ),
            EventData::OutputTextDone {
                item_id,
                output_index,
                content_index,
                text,
                logprobs,
            } => event_line::write_output_text_done(
                out,
                item_id,
                *output_index,
                *content_index,
                text,
                logprobs,
                seq,
            ),
            _ => {
                out.push_str(&serde_json::to_string(self)?);
                Ok(())
            }
        }
    }
}

/// The payload of a stream event, tagged by `type`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(tag = "type")]
pub enum EventData {
    #[serde(rename = "response.created")]
    ResponseCreated { response: Box<Response> },
    #[serde(rename = "response.in_progress")]
    ResponseInProgress { response: Box<Response> },
    #[serde(rename = "response.output_item.added")]
    OutputItemAdded {
        output_index: usize,
        item: OutputItem,
    },
    #[serde(rename = "response.output_item.done")]
    OutputItemDone {
        output_index: usize,
        item: OutputItem,
    },
    #[serde(rename = "response.output_text.delta")]
    OutputTextDelta {
        item_id: String,
        output_index: usize,
        content_index: usize,
        delta: String,
        /// Always `[]` (OpenAI SDK compatibility).
        #[serde(default)]
        logprobs: Vec<Value>,
    },
    /// A content part of a message starts (OpenAI's stream helpers build the part from it).
    #[serde(rename = "response.content_part.added")]
    ContentPartAdded {
        item_id: String,
        output_index: usize,
        content_index: usize,
        part: OutputContent,
    },
    /// A content part of a message is complete.
    #[serde(rename = "response.content_part.done")]
    ContentPartDone {
        item_id: String,
        output_index: usize,
        content_index: usize,
        part: OutputContent,
    },
    #[serde(rename = "response.output_text.done")]
    OutputTextDone {
        item_id: String,
        output_index: usize,
        content_index: usize,
        text: String,
        #[serde(default)]
        logprobs: Vec<Value>,
    },
    /// A piece of a function call's arguments, while the model writes them.
    #[serde(rename = "response.function_call_arguments.delta")]
    FunctionCallArgumentsDelta {
        item_id: String,
        output_index: usize,
        delta: String,
    },
    #[serde(rename = "response.function_call_arguments.done")]
    FunctionCallArgumentsDone {
        item_id: String,
        output_index: usize,
        arguments: String,
    },
    #[serde(rename = "response.mcp_call_arguments.delta")]
    McpCallArgumentsDelta {
        item_id: String,
        output_index: usize,
        delta: String,
    },
    #[serde(rename = "response.mcp_call_arguments.done")]
    McpCallArgumentsDone {
        item_id: String,
        output_index: usize,
        arguments: String,
    },
    #[serde(rename = "response.mcp_call.in_progress")]
    McpCallInProgress {
        item_id: String,
        output_index: usize,
    },
    #[serde(rename = "response.mcp_call.completed")]
    McpCallCompleted {
        item_id: String,
        output_index: usize,
    },
    #[serde(rename = "response.mcp_call.failed")]
    McpCallFailed {
        item_id: String,
        output_index: usize,
    },
    #[serde(rename = "response.mcp_list_tools.in_progress")]
    McpListToolsInProgress {
        item_id: String,
        output_index: usize,
    },
    #[serde(rename = "response.mcp_list_tools.completed")]
    McpListToolsCompleted {
        item_id: String,
        output_index: usize,
    },
    #[serde(rename = "response.mcp_list_tools.failed")]
    McpListToolsFailed {
        item_id: String,
        output_index: usize,
    },
    #[serde(rename = "response.reasoning.started")]
    ReasoningStarted {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        thought: Option<String>,
    },
    #[serde(rename = "response.reasoning.search_queries")]
    SearchQueries {
        queries: Vec<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        thought: Option<String>,
    },
    #[serde(rename = "response.reasoning.search_results")]
    SearchResults {
        results: Vec<SearchResult>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        thought: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        usage: Option<Usage>,
    },
    #[serde(rename = "response.reasoning.image_search_queries")]
    ImageSearchQueries {
        call_id: String,
        queries: Vec<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        thought: Option<String>,
    },
    #[serde(rename = "response.reasoning.image_search_results")]
    ImageSearchResults {
        call_id: String,
        results: Vec<ImageResult>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        thought: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        usage: Option<Usage>,
    },
    #[serde(rename = "response.reasoning.fetch_url_queries")]
    FetchUrlQueries {
        urls: Vec<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        thought: Option<String>,
    },
    #[serde(rename = "response.reasoning.fetch_url_results")]
    FetchUrlResults {
        contents: Vec<UrlContent>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        thought: Option<String>,
    },
    #[serde(rename = "response.reasoning.stopped")]
    ReasoningStopped {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        thought: Option<String>,
    },
    #[serde(rename = "response.skill.loaded")]
    SkillLoaded { name: String },
    #[serde(rename = "response.sandbox.results")]
    SandboxResults { results: Vec<Value> },
    #[serde(rename = "response.completed")]
    ResponseCompleted { response: Box<Response> },
    /// `error` at the top of the frame (Perplexity SDK) and the snapshot (OpenAI SDK).
    #[serde(rename = "response.failed")]
    ResponseFailed {
        error: ErrorInfo,
        response: Box<Response>,
    },
    #[serde(rename = "response.incomplete")]
    ResponseIncomplete { response: Box<Response> },
    #[serde(rename = "response.cancelled")]
    ResponseCancelled { response: Box<Response> },
    /// A transport-level failure.
    #[serde(rename = "error")]
    Error {
        message: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        code: Option<String>,
    },
}

impl EventData {
    /// Whether this event ends a stream.
    pub fn is_terminal(&self) -> bool {
        matches!(
            self,
            EventData::ResponseCompleted { .. }
                | EventData::ResponseFailed { .. }
                | EventData::ResponseIncomplete { .. }
                | EventData::ResponseCancelled { .. }
                | EventData::Error { .. }
        )
    }
}
