//! The run's state machine: the states, what it takes ([`Input`]) and what it asks the driver to
//! do ([`Effect`]), and the step loop of design.md §2.
//!
//! A run starts by checking a continuation's approval decisions, discovering its MCP servers and
//! running approved calls (`prepare`). Each step then lists again the servers that announced a
//! changed tool list, asks the model with the transcript and the tools visible now, and routes the
//! turn's calls: custom function calls end the run `completed` for the caller to execute, calls
//! that need approval end it `requires_action`, MCP and built-in calls run and the loop goes on.
//! The last step is asked with tools disabled so the run ends with an answer.

use std::collections::VecDeque;

use protocol::events::EventData;
use protocol::listing::ModelTurnStatus;
use protocol::response::ResponseStatus;

use crate::code::Code;
use crate::error::RunFailure;
use crate::model::{ModelError, ModelEvent, ModelRequest};
use crate::request;

use super::effects::{Effect, HostedJob, Input};
use super::mcp::Prepared;
use super::state::{Machine, Outcome, Phase, StepCalls, TurnState};
use super::turn::{TurnEnd, provider_failure};

impl Machine {
    /// Applies one input; queues what to do next, in order, at the end of `queue`. (The
    /// machine keeps its buffer of effects: none is allocated per input.)
    pub(crate) fn on(&mut self, input: Input, queue: &mut VecDeque<Effect>) {
        self.apply(input);
        queue.extend(self.effects.drain(..));
    }

    /// Applies one event of the model turn being streamed, appending the effects to `out`.
    /// The event of almost every token (text of the message already open) is taken where the
    /// turn is ([`Machine::text_delta_in_place`]), without moving the phase out and back.
    pub(crate) fn on_model_into(&mut self, event: ModelEvent, out: &mut Vec<Effect>) {
        if let Err(event) = self.text_delta_in_place(event) {
            self.apply(Input::Model(event));
        }
        out.append(&mut self.effects);
    }

    fn apply(&mut self, input: Input) {
        let phase = std::mem::replace(&mut self.phase, Phase::Ended);
        match (phase, input) {
            (Phase::Ended, _) => {}
            (Phase::Created, Input::Start) => self.start(),
            (phase, Input::Cancelled) => {
                if let Phase::Asking { attempt, turn, .. } = phase {
                    self.record_turn(attempt, &turn, ModelTurnStatus::Cancelled, None);
                    // A turn being streamed keeps what it wrote, marked incomplete.
                    self.abandon_turn(*turn);
                }
                self.finish(Outcome::Cancelled);
            }
            (Phase::Discovering(approved), Input::Discovered(results)) => {
                match self.discovered(results) {
                    Ok(()) => {
                        let calls = self.open_approved(approved);
                        self.continue_calls(calls);
                    }
                    Err(failure) => self.fail_start(failure),
                }
            }
            (Phase::Refreshing, Input::Relisted(lists)) => {
                self.relisted(lists);
                self.ask();
            }
            (
                Phase::Asking {
                    attempt,
                    request,
                    mut turn,
                },
                input,
            ) => match input {
                Input::Model(event) => {
                    self.model_event(&mut turn, event);
                    self.phase = Phase::Asking {
                        attempt,
                        request,
                        turn,
                    };
                }
                Input::ModelDone => self.turn_done(attempt, *turn),
                Input::ModelFailed(err) => {
                    self.turn_failed(attempt, request.map(|r| *r), *turn, err);
                }
                _ => self.unexpected(),
            },
            (Phase::Calling(mut calls), Input::McpDone(results)) => {
                self.mcp_done(&mut calls, results);
                self.continue_calls(*calls);
            }
            (Phase::Calling(mut calls), Input::HostedDone(outcome)) => {
                if let Some(call) = calls.hosted_running.take() {
                    self.hosted_done(call, outcome);
                }
                self.continue_calls(*calls);
            }
            _ => self.unexpected(),
        }
    }

    /// An input the driver should not have sent now: the run fails rather than guess.
    fn unexpected(&mut self) {
        self.finish(Outcome::Failed(RunFailure::new(
            Code::Internal,
            "the run received an input it was not waiting for",
        )));
    }

    fn start(&mut self) {
        let shared = self
            .initial_json
            .take()
            .filter(|_| self.response.status == ResponseStatus::InProgress);
        if let Some(json) = shared {
            self.effect(Effect::EmitResponse {
                kind: "response.created",
                response_json: json.clone(),
            });
            self.effect(Effect::EmitResponse {
                kind: "response.in_progress",
                response_json: json,
            });
        } else {
            self.emit(EventData::ResponseCreated {
                response: Box::new(self.response.clone()),
            });
            self.response.status = ResponseStatus::InProgress;
            self.emit(EventData::ResponseInProgress {
                response: Box::new(self.response.clone()),
            });
        }
        match self.prepare() {
            Err(failure) => self.fail_start(failure),
            Ok(Prepared {
                approved,
                discover: Some(jobs),
            }) => {
                self.phase = Phase::Discovering(approved);
                self.effect(Effect::Discover(jobs));
            }
            Ok(Prepared {
                approved,
                discover: None,
            }) => {
                let calls = self.open_approved(approved);
                self.continue_calls(calls);
            }
        }
    }

    /// Ends the run before the model was asked: a plain request answers the failure as an HTTP
    /// error, a stream or background run as status `failed`.
    fn fail_start(&mut self, failure: RunFailure) {
        self.start_error = Some(failure.clone());
        self.finish(Outcome::Failed(failure));
    }

    /// Begins the next step, or ends the run `incomplete` when the step budget is spent.
    pub(super) fn begin_step(&mut self) {
        let max_steps = self.plan.max_steps.max(1);
        if self.step >= max_steps {
            self.finish(Outcome::Incomplete("max_steps"));
            return;
        }
        self.step += 1;
        if self.plan.registry.servers().is_empty() {
            self.ask();
        } else {
            self.phase = Phase::Refreshing;
            self.effect(Effect::Refresh);
        }
    }

    /// Asks the model for this step's turn (tools off on the last step), or ends the run
    /// `incomplete` when the output token budget is spent.
    fn ask(&mut self) {
        let remaining = match self.response.max_output_tokens {
            Some(cap) => {
                let left = u64::from(cap).saturating_sub(self.usage.output_tokens);
                if left == 0 {
                    self.finish(Outcome::Incomplete("max_output_tokens"));
                    return;
                }
                Some(u32::try_from(left).unwrap_or(u32::MAX))
            }
            None => None,
        };
        let max_steps = self.plan.max_steps.max(1);
        let last = self.step >= max_steps;
        let tools_on = !last && self.tool_calls_left();
        let step = request::Step {
            number: self.step,
            of: max_steps,
        };
        let checked = self.plan.first_step.take().and_then(|first| {
            first.take_if_same(
                &self.plan.registry,
                &self.transcript,
                tools_on,
                remaining,
                step,
            )
        });
        let request = checked.unwrap_or_else(|| {
            request::build(
                &self.plan.request,
                &self.plan.registry,
                &self.transcript,
                tools_on,
                remaining,
                step,
            )
        });
        self.ask_model(self.active_model, request);
    }

    /// Streams the turn on one model of the chain.
    pub(super) fn ask_model(&mut self, attempt: usize, request: ModelRequest) {
        let Some((_, model)) = self.plan.models.get(attempt) else {
            self.unexpected();
            return;
        };
        let client = model.client.clone();
        let upstream_model = model.upstream_model.clone();
        let (mut upstream, kept) = if attempt + 1 < self.plan.models.len() {
            (request.clone(), Some(Box::new(request)))
        } else {
            (request, None)
        };
        upstream.model = upstream_model;
        self.phase = Phase::Asking {
            attempt,
            request: kept,
            turn: Box::new(TurnState {
                started_ms: self.clock.now_ms(),
                ..TurnState::default()
            }),
        };
        self.effect(Effect::Ask {
            client,
            request: Box::new(upstream),
        });
    }

    /// The turn's stream ended: a final answer ends the run (checked against
    /// `response_format`), calls go on to run.
    fn turn_done(&mut self, attempt: usize, turn: TurnState) {
        self.record_turn(attempt, &turn, ModelTurnStatus::Completed, None);
        match self.end_turn(attempt, turn) {
            TurnEnd::OutOfTokens => self.finish(Outcome::Incomplete("max_output_tokens")),
            TurnEnd::Answer(text) => match self.check_structured_output(text.as_deref()) {
                Ok(()) => self.finish(Outcome::Completed),
                Err(failure) => self.finish(Outcome::Failed(failure)),
            },
            TurnEnd::Calls(calls) => {
                let step = self.route_calls(calls);
                self.continue_calls(step);
            }
        }
    }

    /// The model failed. Before any output, the next model of the chain takes the turn over;
    /// otherwise (or at the end of the chain) the run fails.
    fn turn_failed(
        &mut self,
        attempt: usize,
        request: Option<ModelRequest>,
        turn: TurnState,
        err: ModelError,
    ) {
        self.record_turn(
            attempt,
            &turn,
            ModelTurnStatus::Failed,
            Some(err.to_string()),
        );
        if !turn.produced_output()
            && let Some(request) = request
        {
            if let Some((id, _)) = self.plan.models.get(attempt) {
                tracing::warn!(response_id = %self.response.id, model = %id, error = %err, "model failed before answering; trying the next model of the chain");
            }
            self.ask_model(attempt + 1, request);
            return;
        }
        self.abandon_turn(turn);
        self.finish(Outcome::Failed(provider_failure(err)));
    }

    /// Sends what is left of a step's calls to the driver, one batch at a time (the MCP calls
    /// at once, then the built-in calls one after another); once all ended, ends the step.
    pub(super) fn continue_calls(&mut self, mut calls: StepCalls) {
        if !calls.mcp.is_empty() {
            let jobs = self.mcp_jobs(&calls.mcp);
            calls.mcp_running = calls.mcp.drain(..).map(|(index, _)| index).collect();
            self.phase = Phase::Calling(Box::new(calls));
            self.effect(Effect::CallMcp(jobs));
            return;
        }
        if let Some((call, tool)) = calls.hosted.pop_front() {
            self.effect(Effect::CallHosted(HostedJob {
                tool,
                call_id: call.id.clone(),
                arguments: call.arguments.clone(),
                next_source: self.next_source,
            }));
            calls.hosted_running = Some(call);
            self.phase = Phase::Calling(Box::new(calls));
            return;
        }
        if calls.before_first_step {
            self.begin_step();
            return;
        }
        self.effect(Effect::Flush);
        if calls.approvals > 0 {
            // The caller decides; a continuation runs the approved calls.
            self.finish(Outcome::RequiresAction);
        } else if calls.handed_back > 0 {
            // The caller runs the functions and continues the conversation.
            self.finish(Outcome::Completed);
        } else {
            self.begin_step();
        }
    }
}
