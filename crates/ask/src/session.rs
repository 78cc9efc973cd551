//! One `agentd ask` session: the first turn, then as many continuations as the run needs
//! (`previous_response_id` plus `mcp_approval_response` or `function_call_output` items, with
//! the same tools), each streamed to the terminal; ends with the last response.

use std::collections::BTreeSet;
use std::time::Duration;

use serde_json::{Value, json};

use crate::approval::{self, Decision};
use crate::args::{AskArgs, McpServer, unique_labels};
use crate::client::{Answer, Client, Events, next_event};
use crate::error::AskError;
use crate::function;
use crate::render::{self, Shown, items};
use crate::request::{self, Turn};
use crate::terminal::Terminal;

/// Continuations one session may make (approvals and function calls).
const MAX_TURNS: usize = 50;
/// Silence longer than this between two events ends the session (tools may take minutes; the
/// server sends keep-alives meanwhile).
const IDLE_TIMEOUT: Duration = Duration::from_secs(15 * 60);
/// How often the spinner moves.
const SPIN_EVERY: Duration = Duration::from_millis(100);

/// What a session remembers between turns.
struct Session<'a> {
    args: &'a AskArgs,
    client: Client,
    servers: Vec<McpServer>,
    /// `(server label or connector id, tool name)` approved "always" at a prompt.
    always: BTreeSet<(String, String)>,
}

/// Runs the session; the last response is its outcome.
pub(crate) async fn run(args: &AskArgs, terminal: &mut Terminal) -> Result<Value, AskError> {
    let mut session = Session {
        args,
        client: Client::new(request::responses_url(&args.url), args.key.clone())?,
        servers: unique_labels(&args.mcp),
        always: BTreeSet::new(),
    };
    let mut input = json!(args.question);
    let mut previous = args.continue_from.clone();
    for _ in 0..=MAX_TURNS {
        let body = request::body(
            args,
            &session.servers,
            &Turn {
                input,
                previous_response_id: previous.as_deref(),
                always_allowed: &session.always,
            },
        );
        let response = turn(&session.client, &body, terminal).await?;
        let Some(next) = session.continuation(&response, terminal).await? else {
            return Ok(response);
        };
        let Some(id) = response["id"].as_str() else {
            return Err(AskError::NotAResponse(
                "a response to continue has no id".to_owned(),
            ));
        };
        previous = Some(id.to_owned());
        input = Value::Array(next);
    }
    Err(AskError::TooManyTurns(MAX_TURNS))
}

/// The key "always" decisions are remembered by.
fn tool_key(request: &Value) -> (String, String) {
    let owner = request["connector_id"]
        .as_str()
        .or_else(|| request["server_label"].as_str())
        .unwrap_or_default();
    let name = request["name"].as_str().unwrap_or_default();
    (owner.to_owned(), name.to_owned())
}

impl Session<'_> {
    /// The input items that continue `response`, or `None` when the session is over.
    async fn continuation(
        &mut self,
        response: &Value,
        terminal: &mut Terminal,
    ) -> Result<Option<Vec<Value>>, AskError> {
        let status = response["status"].as_str().unwrap_or_default();
        if status == "requires_action" {
            let answered: BTreeSet<&str> = items(response, "mcp_call")
                .filter_map(|call| call["approval_request_id"].as_str())
                .collect();
            let pending: Vec<&Value> = items(response, "mcp_approval_request")
                .filter(|request| {
                    request["id"]
                        .as_str()
                        .is_some_and(|id| !answered.contains(id))
                })
                .collect();
            if pending.is_empty() {
                return Ok(None);
            }
            let mut answers = Vec::new();
            for request in pending {
                answers.push(self.decide(request, terminal).await?);
            }
            return Ok(Some(answers));
        }
        if status != "completed" {
            return Ok(None);
        }
        let calls: Vec<&Value> = items(response, "function_call").collect();
        if calls.is_empty() {
            return Ok(None);
        }
        if self.args.functions.is_empty() {
            terminal.step("the run ended with function calls for the caller to answer")?;
            return Ok(None);
        }
        let mut outputs = Vec::new();
        for call in calls {
            let name = call["name"].as_str().unwrap_or_default();
            let Some(spec) = self.args.functions.iter().find(|f| f.name == name) else {
                return Err(AskError::UnknownFunction(render::sanitize(name, false)));
            };
            let arguments = call["arguments"].as_str().unwrap_or("{}");
            let outcome = function::run(spec, arguments).await?;
            match &outcome.problem {
                Some(problem) => terminal.step(&format!("function {name}: {problem}"))?,
                None => terminal.step(&format!(
                    "function {name} answered ({} bytes)",
                    outcome.output.len()
                ))?,
            }
            outputs.push(json!({"type": "function_call_output",
                "call_id": call["call_id"], "output": outcome.output}));
        }
        Ok(Some(outputs))
    }

    /// The `mcp_approval_response` for one request: remembered, asked, or denied for want of a
    /// terminal.
    async fn decide(
        &mut self,
        request: &Value,
        terminal: &mut Terminal,
    ) -> Result<Value, AskError> {
        let id = request["id"].as_str().unwrap_or_default();
        let key = tool_key(request);
        let what = format!(
            "{}.{}",
            render::sanitize(request["server_label"].as_str().unwrap_or_default(), false),
            render::sanitize(&key.1, false)
        );
        let decision = if self.always.contains(&key) {
            terminal.step(&format!("approved {what} (always, this session)"))?;
            Decision::Once
        } else if !approval::can_ask() {
            terminal.error(&format!(
                "denied {what}: stdin is not a terminal, so no one could be asked"
            ))?;
            Decision::Deny(Some(approval::NO_TERMINAL_REASON.to_owned()))
        } else {
            let decision = approval::ask(terminal, request).await?;
            let line = match &decision {
                Decision::Once => format!("approved {what}"),
                Decision::Always => format!("approved {what} for the rest of this session"),
                Decision::Deny(Some(reason)) => format!("denied {what}: {reason}"),
                Decision::Deny(None) => format!("denied {what}"),
            };
            terminal.step(&line)?;
            decision
        };
        if decision == Decision::Always {
            self.always.insert(key);
        }
        Ok(decision.item(id))
    }
}

/// Sends one turn and shows it; returns its final response.
async fn turn(client: &Client, body: &Value, terminal: &mut Terminal) -> Result<Value, AskError> {
    match client.send(body).await? {
        Answer::Json(Some(response)) if response["output"].is_array() => {
            for item in response["output"].as_array().into_iter().flatten() {
                let done = json!({"type": "response.output_item.done", "item": item});
                show(terminal, &done)?;
            }
            terminal.text(&render::answer_text(&response))?;
            Ok(response)
        }
        Answer::Json(_) => Err(AskError::NotAResponse(
            "a JSON answer without an output array".to_owned(),
        )),
        Answer::Stream(mut events) => follow(&mut events, terminal).await,
    }
}

fn show(terminal: &mut Terminal, event: &Value) -> Result<(), AskError> {
    for shown in render::event(event) {
        match shown {
            Shown::Text(text) => terminal.text(&text)?,
            Shown::Step(line) => terminal.step(&line)?,
            Shown::Error(line) => terminal.error(&line)?,
        }
    }
    Ok(())
}

/// Reads a stream to its terminal event, the spinner moving meanwhile on a terminal.
async fn follow(events: &mut Events, terminal: &mut Terminal) -> Result<Value, AskError> {
    let mut ticker = tokio::time::interval(SPIN_EVERY);
    let mut deadline = tokio::time::Instant::now() + IDLE_TIMEOUT;
    let mut label = "waiting for the model";
    loop {
        let next = tokio::select! {
            next = next_event(events) => next,
            _ = ticker.tick(), if terminal.animates() => {
                terminal.tick(label)?;
                continue;
            }
            () = tokio::time::sleep_until(deadline) => {
                return Err(AskError::Stream(format!("no event for {} s", IDLE_TIMEOUT.as_secs())));
            }
        };
        let Some(event) = next else {
            return Err(AskError::Unfinished);
        };
        let event = event?;
        deadline = tokio::time::Instant::now() + IDLE_TIMEOUT;
        show(terminal, &event)?;
        if let Some(response) = render::terminal(&event) {
            return Ok(response);
        }
        if event["type"] != "response.created" && event["type"] != "response.in_progress" {
            label = "working";
        }
    }
}
