//! `agentd ask`: a terminal client for any Agent API endpoint. It speaks only HTTP and SSE
//! (no engine inside), so it works against agentd and against any server speaking the API.
//!
//! One session streams a run: the answer on stdout as it is written, progress lines on stderr
//! (searches, fetches, MCP calls, sandbox commands, function calls), MCP approvals asked at a
//! prompt, custom function calls answered by local commands, then the cited sources, and usage
//! on request. The exit status is 0 for a completed run, 1 for anything else (clap's usage
//! errors are 2).
//!
//! Layout: `args` (the command line), `request` (request bodies, pure), `client` (HTTP + SSE),
//! `render` (events to lines, citations, usage; pure), `terminal` (stdout/stderr, colour,
//! spinner), `approval` (the prompt), `function` (`--function` commands), `session` (the turns).
//!
//! ```no_run
//! # async fn demo(args: agentd_ask::AskArgs) {
//! let status: u8 = agentd_ask::run(args).await;
//! std::process::exit(i32::from(status));
//! # }
//! ```

mod approval;
mod args;
mod client;
mod error;
mod function;
mod render;
mod request;
mod session;
mod terminal;

pub use args::{ApprovalPolicy, AskArgs, DEFAULT_URL, FunctionSpec, McpServer};
pub use error::AskError;

use serde_json::Value;
use terminal::Terminal;

/// Exit status of a completed run.
pub const EXIT_COMPLETED: u8 = 0;
/// Exit status of a run that failed, was cancelled or is incomplete, or of a session that broke.
pub const EXIT_FAILED: u8 = 1;

/// Runs `agentd ask`; returns the exit status.
pub async fn run(args: AskArgs) -> u8 {
    let mut terminal = Terminal::new(args.json);
    let status = match session::run(&args, &mut terminal).await {
        Ok(response) => finish(&args, &mut terminal, &response),
        Err(err) => Err(err),
    };
    match status {
        Ok(status) => status,
        Err(err) => {
            let _ = terminal.end_answer();
            let _ = terminal.error(&err.to_string());
            EXIT_FAILED
        }
    }
}

/// Sources, the JSON object, usage and the final status line.
fn finish(args: &AskArgs, terminal: &mut Terminal, response: &Value) -> Result<u8, AskError> {
    terminal.end_answer()?;
    if args.json {
        terminal.json(response)?;
    } else {
        terminal.sources(&render::citations(response))?;
    }
    if args.usage {
        for line in render::usage_lines(response) {
            terminal.step(&line)?;
        }
    }
    if let Some(id) = response["id"].as_str() {
        terminal.step(&format!(
            "response {} (follow up with --continue)",
            render::sanitize(id, false)
        ))?;
    }
    let status = response["status"].as_str().unwrap_or("unknown");
    if status == "completed" {
        return Ok(EXIT_COMPLETED);
    }
    let reason = response["incomplete_details"]["reason"]
        .as_str()
        .map(|reason| format!(": {}", render::sanitize(reason, false)))
        .unwrap_or_default();
    terminal.error(&format!(
        "the run ended {}{reason}",
        render::sanitize(status, false)
    ))?;
    Ok(EXIT_FAILED)
}
