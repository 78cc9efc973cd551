//! The request bodies of a session (pure): the first turn and each continuation send the same
//! tools (the Agent API does not carry tool definitions over), with the tools the user allowed
//! "always" listed under `require_approval.never` of their `--mcp` server.

use std::collections::BTreeSet;

use serde_json::{Value, json};

use crate::args::{ApprovalPolicy, AskArgs, McpServer};

/// What the body of one request is made of, besides the command line.
pub(crate) struct Turn<'a> {
    /// A string (the question) or continuation items.
    pub input: Value,
    pub previous_response_id: Option<&'a str>,
    /// `(server_label, tool name)` pairs the user approved for the whole session.
    pub always_allowed: &'a BTreeSet<(String, String)>,
}

/// The endpoint that creates responses: `{base}/v1/responses`, or `{base}/responses` when the
/// base already ends in `/v1`.
pub(crate) fn responses_url(base: &str) -> String {
    let base = base.trim_end_matches('/');
    if base.ends_with("/v1") {
        format!("{base}/responses")
    } else {
        format!("{base}/v1/responses")
    }
}

/// The tools of every request of the session.
pub(crate) fn tools(
    args: &AskArgs,
    servers: &[McpServer],
    always: &BTreeSet<(String, String)>,
) -> Vec<Value> {
    let mut tools: Vec<Value> = Vec::new();
    for kind in &args.tools {
        if kind != "sandbox" || !args.sandbox {
            tools.push(json!({"type": kind}));
        }
    }
    if args.sandbox {
        tools.push(json!({"type": "sandbox"}));
    }
    for server in servers {
        let allowed: Vec<&str> = always
            .iter()
            .filter(|(label, _)| *label == server.label)
            .map(|(_, name)| name.as_str())
            .collect();
        let require_approval = match args.require_approval {
            ApprovalPolicy::Never => json!("never"),
            // Tools not listed under `never` still need approval.
            ApprovalPolicy::Always if !allowed.is_empty() => {
                json!({"never": {"tool_names": allowed}})
            }
            ApprovalPolicy::Always => json!("always"),
        };
        tools.push(json!({"type": "mcp", "server_label": server.label,
                          "server_url": server.url, "require_approval": require_approval}));
    }
    for id in &args.connectors {
        tools.push(json!({"type": "connector", "id": id}));
    }
    for function in &args.functions {
        tools.push(json!({
            "type": "function",
            "name": function.name,
            "description": format!("The user's local command `{}`: takes a JSON object of arguments, answers text.", function.name),
            "parameters": {"type": "object"},
        }));
    }
    tools
}

/// One request body (always streamed).
pub(crate) fn body(args: &AskArgs, servers: &[McpServer], turn: &Turn<'_>) -> Value {
    let mut body = json!({"input": turn.input, "stream": true});
    if let Some(model) = &args.model {
        body["model"] = json!(model);
    }
    let tools = tools(args, servers, turn.always_allowed);
    if !tools.is_empty() {
        body["tools"] = Value::Array(tools);
    }
    if let Some(previous) = turn.previous_response_id {
        body["previous_response_id"] = json!(previous);
    }
    body
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Parser)]
    struct Cli {
        #[command(flatten)]
        args: AskArgs,
    }

    fn args(argv: &[&str]) -> AskArgs {
        let mut all = vec!["ask"];
        all.extend_from_slice(argv);
        match Cli::try_parse_from(all) {
            Ok(cli) => cli.args,
            Err(err) => unreachable!("{err}"),
        }
    }

    #[test]
    fn urls_get_the_responses_path() {
        assert_eq!(
            responses_url("http://127.0.0.1:8080/"),
            "http://127.0.0.1:8080/v1/responses"
        );
        assert_eq!(
            responses_url("https://api.example.com/v1"),
            "https://api.example.com/v1/responses"
        );
    }

    #[test]
    fn every_flag_becomes_its_tool() {
        let args = args(&[
            "--model",
            "openai/x",
            "--tool",
            "web_search",
            "--sandbox",
            "--mcp",
            "files=http://127.0.0.1:9/mcp",
            "--connector",
            "connector_github",
            "--function",
            "weather=cat",
            "--continue",
            "resp_1",
            "hi",
        ]);
        let servers = crate::args::unique_labels(&args.mcp);
        let mut always = BTreeSet::new();
        let turn = Turn {
            input: json!("hi"),
            previous_response_id: args.continue_from.as_deref(),
            always_allowed: &always,
        };
        let body = body(&args, &servers, &turn);
        assert_eq!(body["model"], "openai/x");
        assert_eq!(body["stream"], true);
        assert_eq!(body["previous_response_id"], "resp_1");
        let types: Vec<&str> = body["tools"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|t| t["type"].as_str())
            .collect();
        assert_eq!(
            types,
            ["web_search", "sandbox", "mcp", "connector", "function"]
        );
        assert_eq!(body["tools"][2]["require_approval"], "always");
        assert_eq!(body["tools"][3]["id"], "connector_github");
        assert_eq!(body["tools"][4]["name"], "weather");

        // A tool allowed for the session is listed under `never`.
        always.insert(("files".to_owned(), "delete_file".to_owned()));
        let tools = tools(&args, &servers, &always);
        assert_eq!(
            tools[2]["require_approval"],
            json!({"never": {"tool_names": ["delete_file"]}})
        );
    }
}
