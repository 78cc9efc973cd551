//! MCP approvals in a continuation: which decisions the transcript holds, which are missing,
//! and which approved calls run now (spec §8.3).
//!
//! A call is matched to its approval by `approval_request_id`. An `mcp_call` that carries it is
//! history: the tool never runs again for it. An approval decided in this request's input and
//! not yet answered by an `mcp_call` runs once, before the model's next turn.

use std::collections::{HashMap, HashSet};

use protocol::RequestError;
use protocol::input::InputItem;
use protocol::output::McpApprovalRequest;

/// The approved calls to run now, in the order of their requests.
///
/// `new_from` is the index of the first item of this request's `input` (for error paths and
/// to tell this request's decisions from replayed ones). Errors are `invalid_request`: a
/// decision for an unknown request, two decisions for one request, or a request without one.
pub fn approved_to_run(
    items: &[InputItem],
    new_from: usize,
) -> Result<Vec<McpApprovalRequest>, RequestError> {
    let param_at = |index: usize, field: &str| {
        if index >= new_from {
            format!("input[{}].{field}", index - new_from)
        } else {
            "previous_response_id".to_owned()
        }
    };
    let requests: HashMap<&str, &McpApprovalRequest> = items
        .iter()
        .filter_map(|item| match item {
            InputItem::McpApprovalRequest(request) => Some((request.id.as_str(), request)),
            _ => None,
        })
        .collect();
    let ran: HashSet<&str> = items
        .iter()
        .filter_map(|item| match item {
            InputItem::McpCall(call) => call.approval_request_id.as_deref(),
            _ => None,
        })
        .collect();
    let mut decided: HashSet<&str> = HashSet::new();
    let mut approved: HashSet<&str> = HashSet::new();
    for (index, item) in items.iter().enumerate() {
        let InputItem::McpApprovalResponse(response) = item else {
            continue;
        };
        let id = response.approval_request_id.as_str();
        if !requests.contains_key(id) {
            return Err(RequestError::new(
                param_at(index, "approval_request_id"),
                format!("no mcp_approval_request with id \"{id}\" is pending in this conversation"),
            ));
        }
        if !decided.insert(id) {
            return Err(RequestError::new(
                param_at(index, "approval_request_id"),
                format!("mcp_approval_request \"{id}\" has more than one mcp_approval_response"),
            ));
        }
        if response.approve && index >= new_from && !ran.contains(id) {
            approved.insert(id);
        }
    }
    let mut pending: Vec<&McpApprovalRequest> = requests
        .values()
        .filter(|r| !decided.contains(r.id.as_str()) && !ran.contains(r.id.as_str()))
        .copied()
        .collect();
    pending.sort_by(|a, b| a.id.cmp(&b.id));
    if let Some(request) = pending.first() {
        return Err(RequestError::new(
            "input",
            format!(
                "mcp_approval_request \"{}\" ({} on server \"{}\") has no decision: send an mcp_approval_response with approval_request_id \"{}\" and approve true or false",
                request.id, request.name, request.server_label, request.id
            ),
        ));
    }
    Ok(items
        .iter()
        .filter_map(|item| match item {
            InputItem::McpApprovalRequest(request) if approved.contains(request.id.as_str()) => {
                Some(request.clone())
            }
            _ => None,
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use protocol::input::Input;

    fn items(json: &str) -> Vec<InputItem> {
        let input: Input = serde_json::from_str(json).expect("input parses");
        input.into_items()
    }

    const REQUEST: &str = r#"{"type":"mcp_approval_request","id":"mcpr_1","server_label":"s","name":"delete_file","arguments":"{}"}"#;

    #[test]
    fn an_approval_in_this_input_runs_once() {
        let history = items(&format!("[{REQUEST}]"));
        let mut all = history.clone();
        all.extend(items(
            r#"[{"type":"mcp_approval_response","approval_request_id":"mcpr_1","approve":true}]"#,
        ));
        let run = approved_to_run(&all, history.len()).expect("valid");
        assert_eq!(run.len(), 1);
        // Replayed with its mcp_call, it is history and never runs again.
        all.extend(items(
            r#"[{"type":"mcp_call","id":"mcp_1","server_label":"s","name":"delete_file","arguments":"{}","output":"ok","approval_request_id":"mcpr_1"}]"#,
        ));
        assert!(approved_to_run(&all, 0).expect("valid").is_empty());
    }

    #[test]
    fn a_denial_runs_nothing() {
        let all = items(&format!(
            r#"[{REQUEST},{{"type":"mcp_approval_response","approval_request_id":"mcpr_1","approve":false,"reason":"no"}}]"#
        ));
        assert!(approved_to_run(&all, 0).expect("valid").is_empty());
    }

    #[test]
    fn missing_unknown_and_duplicate_decisions_are_refused() {
        let missing = items(&format!(
            r#"[{REQUEST},{{"role":"user","content":"go on"}}]"#
        ));
        let err = approved_to_run(&missing, 1).expect_err("missing decision");
        assert!(err.message.contains("mcpr_1"), "{}", err.message);

        let unknown = items(&format!(
            r#"[{REQUEST},{{"type":"mcp_approval_response","approval_request_id":"mcpr_1","approve":true}},{{"type":"mcp_approval_response","approval_request_id":"mcpr_x","approve":true}}]"#
        ));
        let err = approved_to_run(&unknown, 1).expect_err("unknown decision");
        assert_eq!(err.param.as_deref(), Some("input[1].approval_request_id"));

        let twice = items(&format!(
            r#"[{REQUEST},{{"type":"mcp_approval_response","approval_request_id":"mcpr_1","approve":true}},{{"type":"mcp_approval_response","approval_request_id":"mcpr_1","approve":false}}]"#
        ));
        assert!(approved_to_run(&twice, 1).is_err());
    }
}
