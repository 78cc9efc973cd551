//! What the user sees of a run (pure): each stream event becomes answer text, a progress line or
//! nothing; the final response gives the citations and the usage lines. Events are read loosely
//! (`serde_json::Value`) and unknown ones are ignored, so any Agent API server works.

use serde_json::{Value, json};

use crate::client::clip;

/// The most of a tool call's arguments a progress line shows.
const MAX_ARGUMENTS: usize = 160;
/// The most of a thought, query list or error a progress line shows.
const MAX_TEXT: usize = 300;

/// One thing to show for one event.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Shown {
    /// A piece of the answer, as written.
    Text(String),
    /// A progress line (stderr).
    Step(String),
    /// An error line (stderr).
    Error(String),
}

/// Text from the server, made safe for a terminal: control characters (escape sequences
/// included) are dropped, except newlines and tabs when `multiline`.
pub(crate) fn sanitize(text: &str, multiline: bool) -> String {
    text.chars()
        .filter_map(|c| {
            if (c == '\n' || c == '\t') && multiline {
                Some(c)
            } else if c == '\n' || c == '\t' {
                Some(' ')
            } else if c.is_control() {
                None
            } else {
                Some(c)
            }
        })
        .collect()
}

fn text<'a>(value: &'a Value, key: &str) -> &'a str {
    value[key].as_str().unwrap_or_default()
}

/// A short one-line view of server text.
fn short(value: &str, max: usize) -> String {
    clip(&sanitize(value, false), max)
}

fn strings(value: &Value) -> Vec<String> {
    value
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .map(|s| short(s, MAX_TEXT))
        .collect()
}

fn count(value: &Value) -> usize {
    value.as_array().map_or(0, Vec::len)
}

/// What to show for one stream event.
pub(crate) fn event(event: &Value) -> Vec<Shown> {
    let thought = || {
        let thought = text(event, "thought");
        (!thought.is_empty())
            .then(|| Shown::Step(format!("thinking: {}", short(thought, MAX_TEXT))))
    };
    let step = |line: String| vec![Shown::Step(line)];
    match text(event, "type") {
        "response.output_text.delta" => vec![Shown::Text(text(event, "delta").to_owned())],
        "response.reasoning.started" | "response.reasoning.stopped" => {
            thought().into_iter().collect()
        }
        "response.reasoning.search_queries" => {
            let mut shown: Vec<Shown> = thought().into_iter().collect();
            shown.push(Shown::Step(format!(
                "searching the web: {}",
                strings(&event["queries"]).join(" | ")
            )));
            shown
        }
        "response.reasoning.search_results" => {
            step(format!("found {} results", count(&event["results"])))
        }
        "response.reasoning.image_search_queries" => step(format!(
            "searching images: {}",
            strings(&event["queries"]).join(" | ")
        )),
        "response.reasoning.fetch_url_queries" => {
            step(format!("fetching: {}", strings(&event["urls"]).join(" ")))
        }
        "response.reasoning.fetch_url_results" => {
            step(format!("read {} pages", count(&event["contents"])))
        }
        "response.skill.loaded" => {
            step(format!("skill loaded: {}", short(text(event, "name"), 80)))
        }
        "response.output_item.added" => item_started(&event["item"]).map(step).unwrap_or_default(),
        "response.output_item.done" => item_done(&event["item"]).map(step).unwrap_or_default(),
        "response.failed" | "error" => {
            let error = if event["error"].is_object() {
                &event["error"]
            } else {
                event
            };
            vec![Shown::Error(error_line(error))]
        }
        _ => Vec::new(),
    }
}

/// `message (code)` of an error object.
pub(crate) fn error_line(error: &Value) -> String {
    let message = short(text(error, "message"), MAX_TEXT);
    let code = match &error["code"] {
        Value::String(code) => short(code, 60),
        Value::Number(code) => code.to_string(),
        _ => String::new(),
    };
    if code.is_empty() {
        message
    } else {
        format!("{message} ({code})")
    }
}

fn call_line(item: &Value) -> String {
    format!(
        "{}.{} {}",
        short(text(item, "server_label"), 64),
        short(text(item, "name"), 64),
        short(text(item, "arguments"), MAX_ARGUMENTS)
    )
}

/// The line for a tool step that starts (only steps that take a while get one).
fn item_started(item: &Value) -> Option<String> {
    match text(item, "type") {
        "mcp_list_tools" => Some(format!(
            "mcp {}: listing tools",
            short(text(item, "server_label"), 64)
        )),
        "mcp_call" => Some(format!(
            "mcp call {}.{}",
            short(text(item, "server_label"), 64),
            short(text(item, "name"), 64)
        )),
        _ => None,
    }
}

/// The line for a finished output item (tool results; messages show as text).
fn item_done(item: &Value) -> Option<String> {
    let error = || {
        let error = &item["error"];
        match error {
            Value::Null => None,
            Value::String(message) => Some(short(message, MAX_TEXT)),
            other => Some(error_line(other)),
        }
    };
    let path = || short(text(item, "file_path"), 200);
    let line = match text(item, "type") {
        "mcp_list_tools" => match error() {
            Some(error) => format!(
                "mcp {}: listing tools failed: {error}",
                short(text(item, "server_label"), 64)
            ),
            None => format!(
                "mcp {}: {} tools",
                short(text(item, "server_label"), 64),
                count(&item["tools"])
            ),
        },
        "mcp_call" => match error() {
            Some(error) => format!("mcp call {} failed: {error}", call_line(item)),
            None => format!("mcp call {} done", call_line(item)),
        },
        "mcp_approval_request" => format!("approval needed: {}", call_line(item)),
        "function_call" => format!(
            "function {} {}",
            short(text(item, "name"), 64),
            short(text(item, "arguments"), MAX_ARGUMENTS)
        ),
        "tool_search_output" => format!("tool search: {} servers matched", count(&item["tools"])),
        "sandbox_results" => {
            let code = text(item, "code").lines().next().unwrap_or_default();
            let exit = item["results"]
                .as_array()
                .and_then(|results| results.last())
                .and_then(|last| last["exit_code"].as_i64())
                .map(|code| format!(" → exit {code}"))
                .unwrap_or_default();
            format!(
                "sandbox {}: {} [{}]{exit}",
                short(text(item, "language"), 20),
                short(code, MAX_ARGUMENTS),
                short(text(item, "status"), 20)
            )
        }
        "sandbox_write_file" => format!("sandbox write {}", path()),
        "sandbox_read_file" => format!("sandbox read {}", path()),
        "sandbox_edit_file" => format!("sandbox edit {}", path()),
        "sandbox_grep" => format!(
            "sandbox grep: {} matches",
            item["count"].as_u64().unwrap_or(0)
        ),
        "sandbox_glob" => format!(
            "sandbox glob: {} files",
            item["count"].as_u64().unwrap_or(0)
        ),
        "sandbox_apply_patch" => format!(
            "sandbox patch: {} added, {} modified, {} deleted",
            count(&item["added"]),
            count(&item["modified"]),
            count(&item["deleted"])
        ),
        "share_file" => format!("shared file {}", short(text(item, "filename"), 200)),
        "people_search_results" => format!(
            "people search: {} ({} found)",
            strings(&item["queries"]).join(" | "),
            count(&item["results"])
        ),
        "finance_results" => format!(
            "finance search: {} ({} results)",
            strings(&item["queries"]).join(" | "),
            count(&item["results"])
        ),
        _ => return None,
    };
    Some(match error() {
        Some(error) if !line.contains("failed") && text(item, "type").starts_with("sandbox") => {
            format!("{line}: {error}")
        }
        _ => line,
    })
}

/// The response a terminal event carries (built from the error when a server sends none),
/// `None` for any other event.
pub(crate) fn terminal(event: &Value) -> Option<Value> {
    let status = match text(event, "type") {
        "response.completed" => "completed",
        "response.failed" => "failed",
        "response.incomplete" => "incomplete",
        "response.cancelled" => "cancelled",
        "error" => "failed",
        _ => return None,
    };
    let mut response = if event["response"].is_object() {
        event["response"].clone()
    } else {
        json!({"object": "response", "status": status, "output": []})
    };
    if response["error"].is_null() && event["error"].is_object() {
        response["error"] = event["error"].clone();
    }
    if text(event, "type") == "error" && response["error"].is_null() {
        response["error"] = json!({"message": event["message"], "code": event["code"]});
    }
    Some(response)
}

/// The `output` items of a response of one type.
pub(crate) fn items<'a>(response: &'a Value, kind: &'a str) -> impl Iterator<Item = &'a Value> {
    response["output"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(move |item| item["type"] == kind)
}

/// The answer text of a response (its messages' `output_text` parts), for a server that did
/// not stream.
pub(crate) fn answer_text(response: &Value) -> String {
    items(response, "message")
        .flat_map(|message| message["content"].as_array().into_iter().flatten())
        .filter(|part| part["type"] == "output_text")
        .map(|part| text(part, "text"))
        .collect()
}

/// One source the answer cites.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct Citation {
    /// The marker the text uses (`1` for `[1]`), else the next free number.
    pub number: u64,
    pub url: String,
    pub title: String,
}

/// The answer's `url_citation` annotations, one per URL, numbered as the text numbers them.
pub(crate) fn citations(response: &Value) -> Vec<Citation> {
    let mut out: Vec<Citation> = Vec::new();
    for message in items(response, "message") {
        for part in message["content"].as_array().into_iter().flatten() {
            let chars: Vec<char> = text(part, "text").chars().collect();
            for annotation in part["annotations"].as_array().into_iter().flatten() {
                if annotation["type"] != "url_citation" {
                    continue;
                }
                let url = short(text(annotation, "url"), 2000);
                if url.is_empty() || out.iter().any(|c| c.url == url) {
                    continue;
                }
                let marked = match (
                    annotation["start_index"].as_u64(),
                    annotation["end_index"].as_u64(),
                ) {
                    (Some(start), Some(end)) => {
                        let (start, end) = (start as usize, end as usize);
                        chars
                            .get(start..end)
                            .map(|span| span.iter().collect::<String>())
                            .and_then(|span| {
                                span.strip_prefix('[')?
                                    .strip_suffix(']')?
                                    .parse::<u64>()
                                    .ok()
                            })
                    }
                    _ => None,
                };
                let number = marked
                    .filter(|n| !out.iter().any(|c| c.number == *n))
                    .unwrap_or_else(|| out.iter().map(|c| c.number).max().unwrap_or(0) + 1);
                out.push(Citation {
                    number,
                    url,
                    title: short(text(annotation, "title"), 200),
                });
            }
        }
    }
    out.sort_by_key(|c| c.number);
    out
}

/// The usage and cost lines of a response (`--usage`).
pub(crate) fn usage_lines(response: &Value) -> Vec<String> {
    let usage = &response["usage"];
    if !usage.is_object() {
        return vec!["usage: the server reported none".to_owned()];
    }
    let number = |value: &Value| value.as_u64().unwrap_or(0);
    let mut lines = vec![format!(
        "usage: {} input + {} output = {} tokens",
        number(&usage["input_tokens"]),
        number(&usage["output_tokens"]),
        number(&usage["total_tokens"])
    )];
    if let Some(tools) = usage["tool_calls_details"].as_object() {
        let calls: Vec<String> = tools
            .iter()
            .map(|(name, detail)| format!("{} ×{}", short(name, 40), number(&detail["invocation"])))
            .collect();
        if !calls.is_empty() {
            lines.push(format!("tool calls: {}", calls.join(", ")));
        }
    }
    let cost = &usage["cost"];
    if let Some(total) = cost["total_cost"].as_f64() {
        let currency = cost["currency"].as_str().unwrap_or("USD");
        lines.push(format!(
            "cost: {total:.6} {} (input {:.6}, output {:.6}, tools {:.6})",
            short(currency, 8),
            cost["input_cost"].as_f64().unwrap_or(0.0),
            cost["output_cost"].as_f64().unwrap_or(0.0),
            cost["tool_calls_cost"].as_f64().unwrap_or(0.0)
        ));
    }
    lines
}

#[cfg(test)]
mod tests {
    use super::*;

    fn steps(value: Value) -> Vec<Shown> {
        event(&value)
    }

    #[test]
    fn tool_events_become_progress_lines() {
        assert_eq!(
            steps(
                json!({"type": "response.reasoning.search_queries", "queries": ["rust", "tokio"]})
            ),
            [Shown::Step("searching the web: rust | tokio".into())]
        );
        assert_eq!(
            steps(
                json!({"type": "response.reasoning.fetch_url_queries", "urls": ["https://a.example/"]})
            ),
            [Shown::Step("fetching: https://a.example/".into())]
        );
        assert_eq!(
            steps(
                json!({"type": "response.output_item.done", "item": {"type": "mcp_call",
                "server_label": "files", "name": "delete_file", "arguments": "{\"path\":\"x\"}", "error": null}})
            ),
            [Shown::Step(
                "mcp call files.delete_file {\"path\":\"x\"} done".into()
            )]
        );
        assert_eq!(
            steps(
                json!({"type": "response.output_item.done", "item": {"type": "sandbox_results",
                "language": "python", "code": "print(1)\nprint(2)", "status": "completed",
                "results": [{"exit_code": 0}]}})
            ),
            [Shown::Step(
                "sandbox python: print(1) [completed] → exit 0".into()
            )]
        );
        assert_eq!(
            steps(json!({"type": "response.output_text.delta", "delta": "Hi"})),
            [Shown::Text("Hi".into())]
        );
        assert!(steps(json!({"type": "response.something_new"})).is_empty());
    }

    #[test]
    fn server_text_cannot_send_escape_codes() {
        assert_eq!(
            steps(
                json!({"type": "response.reasoning.search_queries", "queries": ["a\u{1b}[31mb\nc"]})
            ),
            [Shown::Step("searching the web: a[31mb c".into())]
        );
        assert_eq!(sanitize("x\u{1b}]0;t\u{7}y\nz\u{9b}", true), "x]0;ty\nz");
    }

    #[test]
    fn failures_carry_their_message_and_a_response() {
        let failed = json!({"type": "response.failed", "error": {"message": "boom", "code": "server_error"}});
        assert_eq!(
            steps(failed.clone()),
            [Shown::Error("boom (server_error)".into())]
        );
        let response = terminal(&failed).unwrap_or_default();
        assert_eq!(response["status"], "failed");
        assert_eq!(response["error"]["message"], "boom");
        assert!(terminal(&json!({"type": "response.in_progress"})).is_none());
    }

    #[test]
    fn citations_follow_the_markers_and_usage_is_summed_up() {
        let response = json!({"output": [{"type": "message", "content": [{"type": "output_text",
            "text": "A [2] and B [1] and A again [2].",
            "annotations": [
                {"type": "url_citation", "url": "https://b.example/", "title": "B", "start_index": 2, "end_index": 5},
                {"type": "url_citation", "url": "https://a.example/", "title": "A", "start_index": 12, "end_index": 15},
                {"type": "url_citation", "url": "https://b.example/", "title": "B", "start_index": 28, "end_index": 31}
            ]}]}],
            "usage": {"input_tokens": 120, "output_tokens": 6, "total_tokens": 126,
                      "tool_calls_details": {"search_web": {"invocation": 1, "cost_usd": 0.005}},
                      "cost": {"currency": "USD", "input_cost": 0.001, "output_cost": 0.0002, "tool_calls_cost": 0.005, "total_cost": 0.0062}}});
        let cited = citations(&response);
        assert_eq!(
            cited,
            [
                Citation {
                    number: 1,
                    url: "https://a.example/".into(),
                    title: "A".into()
                },
                Citation {
                    number: 2,
                    url: "https://b.example/".into(),
                    title: "B".into()
                },
            ]
        );
        assert_eq!(
            usage_lines(&response),
            [
                "usage: 120 input + 6 output = 126 tokens",
                "tool calls: search_web ×1",
                "cost: 0.006200 USD (input 0.001000, output 0.000200, tools 0.005000)",
            ]
        );
        assert_eq!(answer_text(&response), "A [2] and B [1] and A again [2].");
    }
}
