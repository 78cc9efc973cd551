//! MCP approval requests answered at a prompt: approve once, approve always (for this tool, for
//! the rest of the session), or deny with an optional reason. Without a terminal on stdin no one
//! can be asked, so every request is denied, with a line on stderr saying so.

use std::io::{BufRead as _, IsTerminal as _, Read as _};

use serde_json::Value;

use crate::client::clip;
use crate::error::AskError;
use crate::render::sanitize;
use crate::terminal::Terminal;

/// The reason sent with a denial when stdin is not a terminal.
pub(crate) const NO_TERMINAL_REASON: &str =
    "not approved: agentd ask had no terminal to ask the user at";
/// The reason sent when the user ends input at the prompt.
const NO_ANSWER_REASON: &str = "not approved: the user gave no answer";
/// The longest answer line read.
const MAX_LINE: u64 = 4096;
/// Unrecognised answers before the prompt gives up (and denies).
const MAX_TRIES: usize = 5;

/// The user's decision on one approval request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Decision {
    Once,
    /// Approve this and every later call of the same tool in this session.
    Always,
    Deny(Option<String>),
}

impl Decision {
    /// The `mcp_approval_response` input item answering `request_id`.
    pub(crate) fn item(&self, request_id: &str) -> Value {
        let mut item = serde_json::json!({"type": "mcp_approval_response",
            "approval_request_id": request_id, "approve": !matches!(self, Decision::Deny(_))});
        if let Decision::Deny(Some(reason)) = self {
            item["reason"] = Value::String(reason.clone());
        }
        item
    }
}

/// What an answer line chooses (`None`: ask again).
fn parse_choice(line: &str) -> Option<Decision> {
    match line.trim().to_ascii_lowercase().as_str() {
        "y" | "yes" | "o" | "once" => Some(Decision::Once),
        "a" | "always" => Some(Decision::Always),
        "n" | "no" | "d" | "deny" => Some(Decision::Deny(None)),
        _ => None,
    }
}

/// One line of stdin (`None` at end of input), read off the async threads.
async fn read_line() -> Result<Option<String>, AskError> {
    let line = tokio::task::spawn_blocking(|| {
        let mut line = String::new();
        let read = std::io::stdin()
            .lock()
            .take(MAX_LINE)
            .read_line(&mut line)?;
        Ok::<_, std::io::Error>((read > 0).then_some(line))
    })
    .await
    .map_err(|err| AskError::Io(std::io::Error::other(err)))??;
    Ok(line)
}

/// Whether the user can be asked at all.
pub(crate) fn can_ask() -> bool {
    std::io::stdin().is_terminal()
}

/// Asks about one `mcp_approval_request` item.
pub(crate) async fn ask(terminal: &mut Terminal, request: &Value) -> Result<Decision, AskError> {
    let field = |key: &str| sanitize(request[key].as_str().unwrap_or_default(), false);
    let arguments = request["arguments"].as_str().unwrap_or_default();
    let arguments = serde_json::from_str::<Value>(arguments)
        .ok()
        .and_then(|parsed| serde_json::to_string_pretty(&parsed).ok())
        .unwrap_or_else(|| arguments.to_owned());
    let title = format!(
        "? {} wants to call {} with:\n{}",
        field("server_label"),
        field("name"),
        clip(&sanitize(&arguments, true), 4000)
    );
    let mut question = "approve? [y] once  [a] always for this tool  [n] deny: ";
    let mut title = title.as_str();
    for _ in 0..MAX_TRIES {
        terminal.prompt(title, question)?;
        let Some(line) = read_line().await? else {
            return Ok(Decision::Deny(Some(NO_ANSWER_REASON.to_owned())));
        };
        match parse_choice(&line) {
            Some(Decision::Deny(_)) => {
                terminal.prompt("", "reason (optional, Enter to skip): ")?;
                let reason = read_line().await?.unwrap_or_default();
                let reason = sanitize(reason.trim(), false);
                return Ok(Decision::Deny((!reason.is_empty()).then_some(reason)));
            }
            Some(decision) => return Ok(decision),
            None => {
                title = "";
                question = "please answer y, a or n: ";
            }
        }
    }
    Ok(Decision::Deny(Some(NO_ANSWER_REASON.to_owned())))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn answers_and_items() {
        assert_eq!(parse_choice(" Y\n"), Some(Decision::Once));
        assert_eq!(parse_choice("always"), Some(Decision::Always));
        assert_eq!(parse_choice("n"), Some(Decision::Deny(None)));
        assert_eq!(parse_choice("maybe"), None);
        assert_eq!(
            Decision::Deny(Some("no".into())).item("mcpr_1"),
            json!({"type": "mcp_approval_response", "approval_request_id": "mcpr_1", "approve": false, "reason": "no"})
        );
        assert_eq!(Decision::Always.item("mcpr_1")["approve"], true);
    }
}
