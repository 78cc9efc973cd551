//! The `execute` tool: runs Python or bash code in the conversation's workspace through an
//! [`Isolation`] back end, one fresh process per call (files persist in the workspace;
//! variables do not).
//!
//! The call reports a `sandbox_results` item (`status` says whether the runner finished,
//! `exit_code` is the program's own), a `response.sandbox.results` event, and one `sandbox`
//! invocation for `usage.tool_calls_details`. Without a working isolation back end every call
//! fails with the reason the probe gave: code never runs unisolated.

use std::sync::Arc;

use engine::hosted::{CallContext, HostedTool, ToolOutcome};
use engine::model::ToolSpec;
use protocol::events::EventData;
use protocol::output::{OutputItem, SandboxLanguage, SandboxResult, SandboxResults, SandboxStatus};
use serde_json::{Value, json};

use crate::isolation::{Env, Isolation, Limits, RunOutput, RunRequest, RunStatus};
use crate::slots::Slots;
use crate::workspace::{EnterError, Workspaces};

/// The tool's name as the model sees it.
pub const NAME: &str = "execute";

/// The `usage.tool_calls_details` key executions are counted under.
pub const USAGE_KEY: &str = "sandbox";

/// How much of each stream the model reads (the item carries up to the run's full
/// `max_output_bytes`): the start and the end, where errors usually are.
const MODEL_STREAM_HEAD: usize = 8 << 10;
const MODEL_STREAM_TAIL: usize = 4 << 10;

/// The `execute` tool of one request.
pub struct Execute {
    /// The back end, or why there is none (the probe's message).
    isolation: Result<Arc<dyn Isolation>, String>,
    /// The conversations' workspaces, shared with the file tools.
    workspaces: Arc<Workspaces>,
    limits: Limits,
    /// The cap on executions running at once, shared by every request (this tool is built
    /// once per process).
    slots: Slots,
    /// Variables lent to this request's programs (none by default).
    env: Env,
}

impl Execute {
    /// The tool with the machine-sized default cap on concurrent executions
    /// ([`crate::slots::default_max`]); see [`Execute::with_slots`].
    pub fn new(
        isolation: Result<Arc<dyn Isolation>, String>,
        workspaces: Arc<Workspaces>,
        limits: Limits,
    ) -> Execute {
        let slots = Slots::new(
            crate::slots::default_max(limits.memory_mb),
            std::time::Duration::from_secs(60),
        );
        Execute {
            isolation,
            workspaces,
            limits,
            slots,
            env: Env::default(),
        }
    }

    /// The same tool with another cap on concurrent executions.
    pub fn with_slots(self, slots: Slots) -> Execute {
        Execute { slots, ..self }
    }

    /// The same tool (same back end, workspaces and cap) for one request whose programs see
    /// these variables (a saved connector's `sandbox_env`).
    pub fn with_env(&self, env: Env) -> Execute {
        Execute {
            isolation: self.isolation.clone(),
            workspaces: self.workspaces.clone(),
            limits: self.limits.clone(),
            slots: self.slots.clone(),
            env,
        }
    }
}

/// The model's arguments.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Arguments {
    language: SandboxLanguage,
    code: String,
}

#[async_trait::async_trait]
impl HostedTool for Execute {
    fn spec(&self) -> ToolSpec {
        let limits = &self.limits;
        let network = if limits.network {
            "The network is available."
        } else {
            "There is no network access (no pip install, no downloads)."
        };
        ToolSpec {
            name: NAME.to_owned(),
            description: Some(format!(
                "Run Python 3 or bash code in an isolated Linux sandbox and get its stdout, \
                 stderr and exit code. The working directory is /workspace, which persists \
                 across calls in this conversation and is shared with the file tools (read, \
                 write, edit, grep, glob, apply_patch, share_file); each call is a new process, \
                 so variables do not carry over: keep state in files. {network} Limits per call: \
                 {} s, {} MiB of memory, {} KiB of output per stream (write larger results to \
                 files).{quota}",
                limits.timeout.as_secs(),
                limits.memory_mb,
                limits.max_output_bytes / 1024,
                quota = match self.workspaces.quota() {
                    Some(quota) => format!(" The workspace holds at most {} MiB.", quota.mib()),
                    None => String::new(),
                },
            )),
            parameters: json!({
                "type": "object",
                "properties": {
                    "language": {
                        "type": "string",
                        "enum": ["python", "bash"],
                        "description": "python runs the code with python3; bash with bash -c.",
                    },
                    "code": {
                        "type": "string",
                        "description": "The program to run.",
                    }
                },
                "required": ["language", "code"],
            })
            .into(),
            strict: false,
        }
    }

    async fn call(&self, arguments: &str, context: CallContext<'_>) -> ToolOutcome {
        let arguments = match parse_arguments(arguments) {
            Ok(arguments) => arguments,
            Err(message) => {
                return ToolOutcome {
                    model_text: format!("error: {message}"),
                    ..ToolOutcome::default()
                };
            }
        };
        let output = self.run(&arguments, &context).await;
        let (output, container_id, note) = match output {
            Ok((output, container_id, note)) => (output, Some(container_id), note),
            Err(message) => (
                RunOutput::failed(message, std::time::Duration::ZERO),
                None,
                None,
            ),
        };
        let status = match output.status {
            RunStatus::Completed => SandboxStatus::Completed,
            RunStatus::Failed => SandboxStatus::Failed,
            RunStatus::TimedOut => SandboxStatus::TimedOut,
        };
        let result = SandboxResult {
            status,
            exit_code: i64::from(output.exit_code),
            stdout: output.stdout.clone(),
            stderr: output.stderr.clone(),
            duration_ms: output.duration_ms,
        };
        context.events.emit(EventData::SandboxResults {
            results: vec![serde_json::to_value(&result).unwrap_or(Value::Null)],
        });
        let mut model_text = model_text(&output);
        if let Some(note) = note {
            model_text.push_str(&note);
            model_text.push('\n');
        }
        ToolOutcome {
            model_text,
            items: vec![OutputItem::SandboxResults(SandboxResults {
                call_id: context.call_id.to_owned(),
                code: arguments.code,
                language: arguments.language,
                results: vec![result],
                status,
                container_id,
            })],
            invocations: vec![(USAGE_KEY.to_owned(), 1)],
            ..ToolOutcome::default()
        }
    }
}

impl Execute {
    /// Runs the code in the conversation's workspace; `Err` when it could not be run at all.
    /// Also returns the workspace's container id, and a note for the model when its files
    /// could not be kept for other replicas.
    async fn run(
        &self,
        arguments: &Arguments,
        context: &CallContext<'_>,
    ) -> Result<(RunOutput, String, Option<String>), String> {
        let isolation = match &self.isolation {
            Ok(isolation) => Arc::clone(isolation),
            Err(reason) => {
                return Err(format!(
                    "the sandbox is not available on this server, so the code was not run: {reason}"
                ));
            }
        };
        // The workspace, locked (a call waiting for its conversation's previous execution
        // holds no slot: the lock comes first) and up to date with the other replicas'.
        let entered = self
            .workspaces
            .enter(context.project_id, context.conversation)
            .await
            .map_err(|err| match err {
                EnterError::Io(err) => {
                    format!("the sandbox workspace could not be prepared: {err}")
                }
                EnterError::Shared(message) => message,
            })?;
        let workspace = Arc::clone(&entered.workspace);
        let argv = match arguments.language {
            SandboxLanguage::Python => vec!["python3".to_owned(), "-c".to_owned()],
            SandboxLanguage::Bash => vec!["bash".to_owned(), "-c".to_owned()],
        };
        let request = RunRequest {
            workspace_root: workspace.root.clone(),
            argv: argv.into_iter().chain([arguments.code.clone()]).collect(),
            limits: Limits {
                workspace_quota: self.workspaces.quota(),
                ..self.limits.clone()
            },
            env: self.env.clone(),
        };
        // The run is a task of its own holding the workspace lock and its slot: when this
        // call is dropped (the response cancelled), the run still ends within its limits, its
        // cgroup is removed, what it wrote is saved for other replicas, and no file tool
        // touches the workspace while its processes live.
        let slot = self.slots.acquire().await?;
        let run = tokio::spawn(async move {
            let output = isolation.run(request).await;
            drop(slot);
            let note = entered.leave().await;
            (output, note)
        });
        let (output, note) = run
            .await
            .map_err(|err| format!("the sandbox run was lost: {err}"))?;
        Ok((output, workspace.id.clone(), note))
    }
}

/// `{"language": "python"|"bash", "code": "..."}`.
fn parse_arguments(arguments: &str) -> Result<Arguments, String> {
    let value: Value = serde_json::from_str(arguments)
        .map_err(|err| format!("the arguments are not valid JSON ({err})"))?;
    let language = match value.get("language") {
        Some(Value::String(language)) => match language.trim().to_ascii_lowercase().as_str() {
            "python" | "python3" | "py" => SandboxLanguage::Python,
            "bash" | "sh" | "shell" => SandboxLanguage::Bash,
            other => {
                return Err(format!(
                    "unknown language \"{other}\": use \"python\" or \"bash\""
                ));
            }
        },
        Some(_) => return Err("\"language\" must be \"python\" or \"bash\"".to_owned()),
        None => return Err("missing \"language\": \"python\" or \"bash\"".to_owned()),
    };
    let code = match value.get("code") {
        Some(Value::String(code)) => code.clone(),
        Some(_) => return Err("\"code\" must be a string".to_owned()),
        None => return Err("missing \"code\": the program to run".to_owned()),
    };
    if code.trim().is_empty() {
        return Err("\"code\" is empty".to_owned());
    }
    Ok(Arguments { language, code })
}

/// What the model reads: the status, the exit code and both streams (their start and end
/// when long).
fn model_text(output: &RunOutput) -> String {
    let status = match output.status {
        RunStatus::Completed => "completed",
        RunStatus::Failed => "failed",
        RunStatus::TimedOut => "timed_out",
    };
    let mut text = format!(
        "status: {status}\nexit_code: {}\nduration_ms: {}\n",
        output.exit_code, output.duration_ms
    );
    for (name, stream) in [("stdout", &output.stdout), ("stderr", &output.stderr)] {
        if stream.is_empty() {
            text.push_str(&format!("{name}: (empty)\n"));
        } else {
            text.push_str(&format!("{name}:\n{}", shorten(stream)));
            if !text.ends_with('\n') {
                text.push('\n');
            }
        }
    }
    text
}

/// The start and the end of a long stream, with a note of what was left out.
fn shorten(stream: &str) -> String {
    if stream.len() <= MODEL_STREAM_HEAD + MODEL_STREAM_TAIL {
        return stream.to_owned();
    }
    let head_end = floor_boundary(stream, MODEL_STREAM_HEAD);
    let tail_start = ceil_boundary(stream, stream.len() - MODEL_STREAM_TAIL);
    format!(
        "{}\n[... {} bytes left out here; the sandbox_results item has more, and large results \
         belong in files ...]\n{}",
        &stream[..head_end],
        tail_start - head_end,
        &stream[tail_start..]
    )
}

fn floor_boundary(text: &str, mut index: usize) -> usize {
    while index > 0 && !text.is_char_boundary(index) {
        index -= 1;
    }
    index
}

fn ceil_boundary(text: &str, mut index: usize) -> usize {
    while index < text.len() && !text.is_char_boundary(index) {
        index += 1;
    }
    index
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arguments_are_checked() {
        assert_eq!(
            parse_arguments(r#"{"language": "python", "code": "print(1)"}"#),
            Ok(Arguments {
                language: SandboxLanguage::Python,
                code: "print(1)".into()
            })
        );
        assert_eq!(
            parse_arguments(r#"{"language": "Bash", "code": "ls"}"#).map(|a| a.language),
            Ok(SandboxLanguage::Bash)
        );
        for bad in [
            "not json",
            r#"{"code": "x"}"#,
            r#"{"language": "ruby", "code": "x"}"#,
            r#"{"language": "python"}"#,
            r#"{"language": "python", "code": "  "}"#,
            r#"{"language": "python", "code": 3}"#,
        ] {
            assert!(parse_arguments(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn long_streams_keep_their_start_and_end() {
        let long = format!("{}é{}END", "a".repeat(20_000), "b".repeat(20_000));
        let short = shorten(&long);
        assert!(short.starts_with("aaaa"));
        assert!(short.ends_with("bbbEND"));
        assert!(short.contains("bytes left out here"));
        assert!(short.len() < 13_000);
        assert_eq!(shorten("ok"), "ok");
    }
}
