//! What the run's machine and its driver say to each other: the [`Input`]s the driver feeds,
//! the [`Effect`]s the machine asks for, and what a finished run hands over ([`Ending`],
//! [`Finished`]).

use std::sync::Arc;

use protocol::events::{
    EventData, output_text_delta_head, response_event_line, write_output_text_delta,
    write_output_text_delta_from,
};
use protocol::response::Response;

use crate::error::RunFailure;
use crate::events::{Appender, EventLog};
use crate::hosted::{HostedTool, ToolOutcome};
use crate::mcp::{McpCallResult, McpError, McpServer, McpToolInfo};
use crate::model::{ModelClient, ModelError, ModelEvent, ModelRequest};
use crate::store::{EventRecord, ResponseRecord};

/// What the driver tells the machine.
pub(crate) enum Input {
    /// The run begins.
    Start,
    /// Discovery ended: one result per [`DiscoverJob`], in the order asked (`None`: the list
    /// was not asked for and the transcript's is reused).
    Discovered(Vec<Result<Option<Vec<McpToolInfo>>, McpError>>),
    /// The servers that announced a changed tool list, listed again (by server index).
    Relisted(Vec<(usize, Result<Vec<McpToolInfo>, McpError>)>),
    /// One event of the model turn being streamed.
    Model(ModelEvent),
    /// The model turn's stream ended.
    ModelDone,
    /// The model failed: before the stream started or in the middle of it.
    ModelFailed(ModelError),
    /// The MCP calls of the last [`Effect::CallMcp`] ended, in the order asked.
    McpDone(Vec<Result<McpCallResult, String>>),
    /// The built-in call of the last [`Effect::CallHosted`] ended.
    HostedDone(ToolOutcome),
    /// The run was cancelled while the driver waited.
    Cancelled,
}

/// What the machine asks the driver to do, in order. Kept small (the large payloads boxed):
/// every effect is moved three times (into the machine's buffer, out to the driver's, matched),
/// and a streamed turn makes one per token.
pub(crate) enum Effect {
    /// Append a wire event to the run's log (followers see it at once).
    Emit(Box<EventData>),
    /// Append a `response.output_text.delta` (the event of every token), written from its parts.
    TextDelta(TextDelta),
    /// Append a response event (`type` `kind`: `response.created`, …) written around the
    /// response's JSON, already serialized.
    EmitResponse {
        kind: &'static str,
        response_json: Arc<str>,
    },
    /// Write the log's new events to the store.
    Flush,
    /// Connect to these MCP servers at once and list their tools; answer
    /// [`Input::Discovered`].
    Discover(Vec<DiscoverJob>),
    /// List again the tools of every server whose session announced a change; answer
    /// [`Input::Relisted`] (empty when none did).
    Refresh,
    /// Stream one model turn; answer each event with [`Input::Model`], then
    /// [`Input::ModelDone`] or [`Input::ModelFailed`].
    Ask {
        client: Arc<dyn ModelClient>,
        request: Box<ModelRequest>,
    },
    /// Run these MCP calls at once (bounded); answer [`Input::McpDone`].
    CallMcp(Vec<McpJob>),
    /// Run one built-in tool call; answer [`Input::HostedDone`].
    CallHosted(HostedJob),
    /// The run is over: store the record with the rest of the log and the terminal event in one
    /// transaction, then publish the terminal event and close the log.
    Finish(Box<Ending>),
}

/// A token of a message's text, as [`Effect::TextDelta`] carries it: what is the same for all
/// the message's deltas is shared by them (a reference count, where an
/// [`EventData::OutputTextDelta`] needs a copy of the id per token), and the line is written
/// straight from these parts ([`protocol::events::write_output_text_delta_from`]), with the
/// bytes serde writes for the event.
pub(crate) struct TextDelta {
    pub(crate) head: Arc<MessageHead>,
    pub(crate) delta: String,
    pub(crate) logprobs: Vec<serde_json::Value>,
}

/// What every delta of one message (its content part 0) shares.
#[derive(Debug)]
pub(crate) struct MessageHead {
    pub(crate) id: String,
    pub(crate) output_index: usize,
    /// The head of the message's delta lines, up to the delta's value
    /// ([`protocol::events::output_text_delta_head`]), written once for all of them; `None`
    /// if it could not be written (then each line is written whole, and fails as it would).
    line: Option<String>,
}

impl MessageHead {
    pub(crate) fn new(id: String, output_index: usize) -> MessageHead {
        let line = output_text_delta_head(&id, output_index, 0).ok();
        MessageHead {
            id,
            output_index,
            line,
        }
    }
}

impl TextDelta {
    /// Appends the event to the log, writing it in `scratch` (see [`Appender::push_in`]).
    pub(crate) fn push_to(&self, log: &mut Appender<'_>, scratch: &mut String) {
        log.push_line(scratch, |out, sequence_number| match &self.head.line {
            Some(head) => write_output_text_delta_from(
                out,
                head,
                &self.delta,
                &self.logprobs,
                sequence_number,
            ),
            None => write_output_text_delta(
                out,
                &self.head.id,
                self.head.output_index,
                0,
                &self.delta,
                &self.logprobs,
                sequence_number,
            ),
        });
    }
}

/// One server to connect to when the run starts.
pub(crate) struct DiscoverJob {
    /// The server's index in the registry (sessions are kept by it).
    pub(crate) server: usize,
    pub(crate) endpoint: McpServer,
    /// The transport a saved connector pins (`Auto` otherwise).
    pub(crate) transport: crate::mcp::McpTransport,
    /// A saved connector's bound of connecting and listing.
    pub(crate) timeout: Option<std::time::Duration>,
    /// Whether to list its tools (`false`: the transcript's list is reused).
    pub(crate) list: bool,
    /// An OAuth connector's grant: connect with its tokens.
    pub(crate) oauth: Option<std::sync::Arc<crate::oauth::OAuthCredentials>>,
}

/// One MCP call to run on the session of a server.
pub(crate) struct McpJob {
    pub(crate) server: usize,
    pub(crate) tool: String,
    /// The model's arguments as the object a call takes, or why they are not one.
    pub(crate) arguments: Result<serde_json::Map<String, serde_json::Value>, String>,
    /// A saved connector's bound of the call (its `timeout_s`).
    pub(crate) bound: Option<CallBound>,
}

/// A saved connector's bound of each of its calls.
pub(crate) struct CallBound {
    /// The connector's id, for the error.
    pub(crate) connector: String,
    pub(crate) timeout: std::time::Duration,
}

/// One built-in tool call.
pub(crate) struct HostedJob {
    pub(crate) tool: Arc<dyn HostedTool>,
    pub(crate) call_id: String,
    pub(crate) arguments: String,
    /// The number the call's first citable source gets.
    pub(crate) next_source: u64,
}

/// How a run ended, for whoever waits for a foreground run.
#[derive(Debug, Clone)]
pub struct Finished {
    pub response: Response,
    /// Set when the run failed before the model was asked: a plain request answers it as an
    /// HTTP error (spec §8.3).
    pub start_error: Option<RunFailure>,
    /// `response` serialized (compact JSON), shared with the stored row and the terminal
    /// event: a plain request's HTTP body.
    pub response_json: Option<Arc<str>>,
}

/// What the driver stores and publishes at the end.
pub(crate) struct Ending {
    pub(crate) record: ResponseRecord,
    /// The terminal event (`response.completed`, `.incomplete`, `.cancelled` or `.failed`).
    pub(crate) terminal: Terminal,
    /// [`Finished::start_error`].
    pub(crate) start_error: Option<RunFailure>,
}

/// The terminal event of a run, to be numbered and stored with the final response.
pub(crate) enum Terminal {
    /// An event serialized on its own.
    Event(Box<EventData>),
    /// `response.completed`, `.incomplete` or `.cancelled` (`kind`) around the response's JSON,
    /// shared with the stored row and the HTTP body.
    Shared {
        kind: &'static str,
        response_json: Arc<str>,
    },
}

impl Terminal {
    /// The event with the next sequence number of `log`, not yet published.
    pub(crate) fn prepare(self, log: &EventLog) -> EventRecord {
        match self {
            Terminal::Event(data) => log.prepare(*data),
            Terminal::Shared {
                kind,
                response_json,
            } => response_record(log.next_sequence_number(), kind, &response_json),
        }
    }
}

/// A response event of type `kind` around the response's JSON, with `sequence_number` (the
/// log's next: only the run appends to its log), not yet published.
pub(crate) fn response_record(
    sequence_number: u64,
    kind: &str,
    response_json: &str,
) -> EventRecord {
    EventRecord {
        sequence_number,
        data: response_event_line(kind, response_json, sequence_number).into(),
    }
}

#[cfg(test)]
mod tests {
    /// An effect stays a few words: one is moved three times per token of a streamed turn
    /// (it was 448 bytes with a model request and a wire event inline).
    #[test]
    fn an_effect_is_small() {
        assert!(std::mem::size_of::<super::Effect>() <= 96);
    }
}
