//! The end of a run: the final response (status, usage priced, error), its terminal event and
//! the record to store. The driver stores them with the rest of the event log in one
//! transaction ([`crate::store::ResponseStore::end_run`]) before the terminal event is published.

use std::sync::Arc;

use protocol::events::EventData;
use protocol::response::{IncompleteDetails, Response, ResponseStatus};

use crate::items;
use crate::pricing::price_usage;
use crate::store::ResponseRecord;

use super::effects::{Effect, Ending, Terminal};
use super::state::{Machine, Outcome, Phase};

impl Machine {
    /// Sets the final state and asks the driver to store and publish it.
    pub(super) fn finish(&mut self, outcome: Outcome) {
        self.phase = Phase::Ended;
        self.usage.total_tokens = self.usage.input_tokens + self.usage.output_tokens;
        price_usage(&mut self.usage, &self.response.model, &self.plan.prices);
        self.response.usage = Some(self.usage.clone());
        self.response.completed_at = Some(self.clock.now_secs());
        match outcome {
            Outcome::Completed => self.response.status = ResponseStatus::Completed,
            Outcome::RequiresAction => self.response.status = ResponseStatus::RequiresAction,
            Outcome::Cancelled => self.response.status = ResponseStatus::Cancelled,
            Outcome::Incomplete(reason) => {
                self.response.status = ResponseStatus::Incomplete;
                self.response.incomplete_details = Some(IncompleteDetails {
                    reason: reason.to_owned(),
                });
            }
            Outcome::Failed(failure) => {
                tracing::warn!(response_id = %self.response.id, code = failure.code.in_band(), error = %failure.message, "run failed");
                self.response.status = ResponseStatus::Failed;
                self.response.error = Some(failure.info());
            }
        }
        // Serialized once: the stored row, the terminal event and a plain request's HTTP body
        // share these bytes (written by hand, as serde writes them).
        let response_json: Option<Arc<str>> = self.response.to_json().ok().map(Arc::from);
        let include_usage = self
            .plan
            .request
            .stream_options
            .as_ref()
            .and_then(|o| o.include_usage)
            .unwrap_or(true);
        let terminal = match (&response_json, shared_kind(self.response.status)) {
            (Some(json), Some(kind)) if include_usage => Terminal::Shared {
                kind,
                response_json: Arc::clone(json),
            },
            _ => {
                let mut snapshot = self.response.clone();
                if !include_usage {
                    snapshot.usage = None;
                }
                Terminal::Event(Box::new(terminal_event(snapshot)))
            }
        };
        // The items of this request and of the run, for `item_reference`, `input_items` and
        // the run's OpenAI conversation (a `store: false` response keeps none to refer to).
        let input = self
            .transcript
            .get(self.plan.new_from..self.input_end)
            .unwrap_or_default();
        let append_to = self
            .plan
            .request
            .conversation
            .as_ref()
            .map(|c| c.id().to_owned());
        let items = if self.response.store || append_to.is_some() {
            items::to_store(input, &self.response.output)
        } else {
            Vec::new()
        };
        // The run only appended to the transcript it started from; a transcript that starts
        // with this request's input starts with the JSON of its items just written.
        let transcript_prefix = self.plan.transcript_prefix.clone().or_else(|| {
            (self.plan.new_from == 0)
                .then(|| items::input_prefix(&items, input.len()))
                .flatten()
        });
        let record = ResponseRecord {
            id: self.response.id.clone(),
            project_id: self.plan.project_id.clone(),
            created_at: self.response.created_at,
            visible: self.response.store,
            response: self.response.clone(),
            transcript: std::mem::take(&mut self.transcript),
            conversation_id: self.plan.conversation.clone(),
            items,
            append_to,
            turns: std::mem::take(&mut self.turns),
            response_json,
            transcript_prefix,
        };
        self.effect(Effect::Finish(Box::new(Ending {
            record,
            terminal,
            start_error: self.start_error.clone(),
        })));
    }
}

/// The `type` of the terminal event of a response with this status, when that event is the
/// response alone (`response.failed` also carries the error at its top level).
fn shared_kind(status: ResponseStatus) -> Option<&'static str> {
    match status {
        ResponseStatus::Incomplete => Some("response.incomplete"),
        ResponseStatus::Cancelled => Some("response.cancelled"),
        ResponseStatus::Failed => None,
        _ => Some("response.completed"),
    }
}

/// The terminal event of a response that has ended (its `status` says how).
pub(crate) fn terminal_event(response: Response) -> EventData {
    let response = Box::new(response);
    match response.status {
        ResponseStatus::Incomplete => EventData::ResponseIncomplete { response },
        ResponseStatus::Cancelled => EventData::ResponseCancelled { response },
        ResponseStatus::Failed => EventData::ResponseFailed {
            error: response.error.clone().unwrap_or_else(|| {
                crate::code::Code::Internal.error_info("the run failed for an unknown reason")
            }),
            response,
        },
        _ => EventData::ResponseCompleted { response },
    }
}
