//! Stream events (SSE `data:` frames). Every event carries `type` and a strictly increasing
//! `sequence_number`.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::json_string;
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
    /// `response.function_call_arguments.delta`) are written directly into one buffer of about
    /// the right size, without serde's `flatten` machinery (a map serializer, a tagged-struct
    /// adapter and a growing `String`); every other event goes through serde.
    pub fn to_json_line(&self) -> Result<String, serde_json::Error> {
        match &self.data {
            EventData::OutputTextDelta {
                item_id,
                output_index,
                content_index,
                delta,
                logprobs,
            } => {
                let mut out = Line::new("response.output_text.delta", item_id.len() + delta.len());
                out.string("item_id", item_id)?;
                out.number("output_index", *output_index as u64);
                out.number("content_index", *content_index as u64);
                out.string("delta", delta)?;
                if logprobs.is_empty() {
                    out.raw("logprobs", "[]");
                } else {
                    out.raw("logprobs", &serde_json::to_string(logprobs)?);
                }
                Ok(out.end(self.sequence_number))
            }
            EventData::FunctionCallArgumentsDelta {
                item_id,
                output_index,
                delta,
            } => {
                let mut out = Line::new(
                    "response.function_call_arguments.delta",
                    item_id.len() + delta.len(),
                );
                out.string("item_id", item_id)?;
                out.number("output_index", *output_index as u64);
                out.string("delta", delta)?;
                Ok(out.end(self.sequence_number))
            }
            _ => serde_json::to_string(self),
        }
    }
}

/// A response event (`response.completed`, …: `type`, `response`, `sequence_number`) built
/// around a response object already serialized (compact JSON, as `serde_json::to_string` writes
/// it), so the final response is serialized once for the store row, this event and the HTTP
/// body. Byte for byte what serializing the [`StreamEvent`] writes.
pub fn response_event_line(kind: &str, response_json: &str, sequence_number: u64) -> String {
    let mut line = String::with_capacity(response_json.len() + kind.len() + 56);
    line.push_str("{\"type\":\"");
    line.push_str(kind);
    line.push_str("\",\"response\":");
    line.push_str(response_json);
    line.push_str(",\"sequence_number\":");
    line.push_str(itoa::Buffer::new().format(sequence_number));
    line.push('}');
    line
}

/// One event line being written: `{"type":"…"` then `,"key":value` pairs, then the sequence
/// number and `}`; strings written as serde_json writes them, straight into the `String`.
struct Line {
    buf: String,
}

impl Line {
    /// `text` is the length of the line's strings: keys, numbers and a few escapes fit in the
    /// rest.
    fn new(kind: &str, text: usize) -> Line {
        let mut buf = String::with_capacity(kind.len() + text + 128);
        buf.push_str("{\"type\":\"");
        buf.push_str(kind);
        buf.push('"');
        Line { buf }
    }

    fn key(&mut self, key: &str) {
        self.buf.push_str(",\"");
        self.buf.push_str(key);
        self.buf.push_str("\":");
    }

    fn raw(&mut self, key: &str, json: &str) {
        self.key(key);
        self.buf.push_str(json);
    }

    fn string(&mut self, key: &str, value: &str) -> Result<(), serde_json::Error> {
        self.key(key);
        json_string::push_quoted(&mut self.buf, value)
    }

    fn number(&mut self, key: &str, value: u64) {
        self.key(key);
        self.buf.push_str(itoa::Buffer::new().format(value));
    }

    fn end(mut self, sequence_number: u64) -> String {
        self.number("sequence_number", sequence_number);
        self.buf.push('}');
        self.buf
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
