//! The command line of `agentd ask`, and the parsers of its structured values (`--mcp
//! [LABEL=]URL`, `--function NAME=COMMAND`). A value clap refuses is a usage error (exit 2).

use clap::{Args, ValueEnum};

/// The endpoint asked when neither `--url` nor `AGENTD_URL` says otherwise.
pub const DEFAULT_URL: &str = "http://127.0.0.1:8080";

/// `agentd ask [OPTIONS] QUESTION`.
#[derive(Debug, Clone, Args)]
pub struct AskArgs {
    /// The question (one user turn).
    #[arg(value_name = "QUESTION")]
    pub question: String,
    /// Base URL of any Agent API endpoint (`/v1/responses` is appended; a URL ending in `/v1`
    /// gets `/responses`).
    #[arg(long, env = "AGENTD_URL", default_value = DEFAULT_URL)]
    pub url: String,
    /// API key, sent as `Authorization: Bearer KEY` (none in open mode).
    #[arg(long, env = "AGENTD_API_KEY", hide_env_values = true)]
    pub key: Option<String>,
    /// Model id, `provider/model` (the server's default when omitted, if it has one).
    #[arg(long, env = "AGENTD_MODEL")]
    pub model: Option<String>,
    /// A tool without parameters, by type: web_search, fetch_url, image_search, people_search,
    /// finance_search, sandbox… (repeatable).
    #[arg(long = "tool", value_name = "TYPE", value_parser = parse_tool_type)]
    pub tools: Vec<String>,
    /// A remote MCP server (Streamable HTTP); the label defaults to the URL's host (repeatable).
    #[arg(long = "mcp", value_name = "[LABEL=]URL", value_parser = parse_mcp)]
    pub mcp: Vec<McpServer>,
    /// Which calls of the `--mcp` servers need your approval at the prompt.
    #[arg(long, value_enum, default_value_t = ApprovalPolicy::Always)]
    pub require_approval: ApprovalPolicy,
    /// A saved connector of the project, by id (repeatable).
    #[arg(long = "connector", value_name = "ID")]
    pub connectors: Vec<String>,
    /// Adds the sandbox tool (code execution on the server).
    #[arg(long)]
    pub sandbox: bool,
    /// A custom function tool answered on this machine: COMMAND runs under `sh -c` with the
    /// call's JSON arguments on stdin; its stdout goes back to the run (repeatable).
    #[arg(long = "function", value_name = "NAME=COMMAND", value_parser = parse_function)]
    pub functions: Vec<FunctionSpec>,
    /// Continue from an earlier response (its `previous_response_id`).
    #[arg(long = "continue", value_name = "RESPONSE_ID")]
    pub continue_from: Option<String>,
    /// Print the final response object as JSON on stdout (instead of the answer text).
    #[arg(long)]
    pub json: bool,
    /// Print token usage and cost at the end.
    #[arg(long)]
    pub usage: bool,
}

/// `--require-approval` for `--mcp` servers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ApprovalPolicy {
    /// Every call waits for a decision at the prompt (answer "always" to stop asking for a tool).
    Always,
    /// Calls run without asking.
    Never,
}

/// One `--mcp` server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct McpServer {
    pub label: String,
    pub url: String,
}

/// One `--function NAME=COMMAND`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FunctionSpec {
    pub name: String,
    pub command: String,
}

/// A server label or function name: `^[A-Za-z0-9_-]{1,64}$`.
fn is_name(value: &str) -> bool {
    (1..=64).contains(&value.len())
        && value
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
}

fn parse_tool_type(value: &str) -> Result<String, String> {
    if value.is_empty() || !value.chars().all(|c| c.is_ascii_lowercase() || c == '_') {
        return Err(format!(
            "{value:?} is not a tool type (lowercase letters and `_`, e.g. web_search)"
        ));
    }
    Ok(value.to_owned())
}

/// `URL` or `LABEL=URL` (a `=` after `://` belongs to the URL).
fn parse_mcp(value: &str) -> Result<McpServer, String> {
    let scheme = value.find("://");
    let (label, url) = match value.find('=') {
        Some(eq) if scheme.is_none_or(|scheme| eq < scheme) => {
            let (label, url) = (&value[..eq], &value[eq + 1..]);
            if !is_name(label) {
                return Err(format!(
                    "the label {label:?} must be 1 to 64 letters, digits, `_` or `-`"
                ));
            }
            (Some(label.to_owned()), url)
        }
        _ => (None, value),
    };
    let Some(rest) = url
        .strip_prefix("https://")
        .or_else(|| url.strip_prefix("http://"))
    else {
        return Err(format!("{url:?} is not an http(s) URL"));
    };
    let host = rest
        .split(['/', '?', '#'])
        .next()
        .unwrap_or_default()
        .rsplit('@')
        .next()
        .unwrap_or_default();
    if host.is_empty() {
        return Err(format!("{url:?} has no host"));
    }
    let label = label.unwrap_or_else(|| label_from_host(host));
    Ok(McpServer {
        label,
        url: url.to_owned(),
    })
}

/// `mcp.example.com:8443` → `mcp_example_com_8443` (cut to 64 characters).
fn label_from_host(host: &str) -> String {
    host.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' {
                c
            } else {
                '_'
            }
        })
        .take(64)
        .collect()
}

fn parse_function(value: &str) -> Result<FunctionSpec, String> {
    let Some((name, command)) = value.split_once('=') else {
        return Err("expected NAME=COMMAND".to_owned());
    };
    if !is_name(name) {
        return Err(format!(
            "the function name {name:?} must be 1 to 64 letters, digits, `_` or `-`"
        ));
    }
    if command.trim().is_empty() {
        return Err(format!("the function {name} has an empty COMMAND"));
    }
    Ok(FunctionSpec {
        name: name.to_owned(),
        command: command.to_owned(),
    })
}

/// Labels must be unique within a request: a repeated one gets `_2`, `_3`…
pub(crate) fn unique_labels(servers: &[McpServer]) -> Vec<McpServer> {
    let mut seen = std::collections::HashSet::new();
    servers
        .iter()
        .map(|server| {
            let mut label = server.label.clone();
            let mut n = 2;
            while !seen.insert(label.clone()) {
                let suffix = format!("_{n}");
                let keep = 64usize.saturating_sub(suffix.len()).min(server.label.len());
                label = format!("{}{suffix}", &server.label[..keep]);
                n += 1;
            }
            McpServer {
                label,
                url: server.url.clone(),
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mcp_values_take_an_optional_label() {
        assert_eq!(
            parse_mcp("files=http://127.0.0.1:9000/mcp?a=b"),
            Ok(McpServer {
                label: "files".into(),
                url: "http://127.0.0.1:9000/mcp?a=b".into()
            })
        );
        assert_eq!(
            parse_mcp("https://user@mcp.example.com:8443/x?y=z").map(|s| s.label),
            Ok("mcp_example_com_8443".into())
        );
        assert!(parse_mcp("ftp://x").is_err());
        assert!(parse_mcp("bad label=http://x").is_err());
        assert!(parse_mcp("http:///nohost").is_err());
    }

    #[test]
    fn functions_need_a_name_and_a_command() {
        assert_eq!(
            parse_function("weather=./w.sh --city=x"),
            Ok(FunctionSpec {
                name: "weather".into(),
                command: "./w.sh --city=x".into()
            })
        );
        assert!(parse_function("weather").is_err());
        assert!(parse_function("weather=  ").is_err());
        assert!(parse_function("we ather=x").is_err());
    }

    #[test]
    fn repeated_labels_are_numbered() {
        let server = |label: &str| McpServer {
            label: label.into(),
            url: "http://h".into(),
        };
        let labels: Vec<String> = unique_labels(&[server("a"), server("a"), server("a_2")])
            .into_iter()
            .map(|s| s.label)
            .collect();
        assert_eq!(labels, ["a", "a_2", "a_2_2"]);
    }
}
