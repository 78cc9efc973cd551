//! `--function NAME=COMMAND`: the run's `function_call` answered by a local command. COMMAND
//! runs under `sh -c` with the call's JSON arguments on stdin; its stdout (at most
//! [`MAX_OUTPUT`] bytes) is the `function_call_output`. Its stderr stays on the user's terminal.
//! A command that fails or times out still answers the run, with what went wrong, so the model
//! can explain it.

use std::process::Stdio;
use std::time::Duration;

use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};

use crate::args::FunctionSpec;
use crate::error::AskError;

/// The most of a command's stdout sent back.
pub(crate) const MAX_OUTPUT: usize = 1024 * 1024;
/// How long a command may run.
pub(crate) const TIMEOUT: Duration = Duration::from_secs(300);

/// What a command answered.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct Outcome {
    /// The output sent back to the run.
    pub output: String,
    /// A note for the progress line when it did not simply succeed.
    pub problem: Option<String>,
}

/// Runs `spec` for one call.
pub(crate) async fn run(spec: &FunctionSpec, arguments: &str) -> Result<Outcome, AskError> {
    let failed = |message: String| AskError::Function {
        name: spec.name.clone(),
        message,
    };
    let mut child = tokio::process::Command::new("sh")
        .arg("-c")
        .arg(&spec.command)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .kill_on_drop(true)
        .spawn()
        .map_err(|err| failed(format!("cannot start `sh -c`: {err}")))?;
    let mut stdin = child.stdin.take();
    let stdout = child
        .stdout
        .take()
        .ok_or_else(|| failed("no stdout pipe".to_owned()))?;
    let arguments = arguments.as_bytes().to_vec();
    let work = async {
        // A command that does not read its stdin closes the pipe early: that is fine.
        if let Some(mut pipe) = stdin.take() {
            let _ = pipe.write_all(&arguments).await;
            let _ = pipe.shutdown().await;
        }
        let mut output = Vec::new();
        let mut limited = stdout.take(MAX_OUTPUT as u64 + 1);
        limited.read_to_end(&mut output).await?;
        // Past the cap, a command still writing gets a closed pipe rather than a full one.
        drop(limited);
        let status = child.wait().await?;
        Ok::<_, std::io::Error>((output, status))
    };
    let (mut output, status) = match tokio::time::timeout(TIMEOUT, work).await {
        Ok(result) => result.map_err(|err| failed(err.to_string()))?,
        Err(_) => {
            return Ok(Outcome {
                output: format!(
                    "error: the command did not finish within {} s",
                    TIMEOUT.as_secs()
                ),
                problem: Some(format!("timed out after {} s", TIMEOUT.as_secs())),
            });
        }
    };
    let mut problem = None;
    if output.len() > MAX_OUTPUT {
        output.truncate(MAX_OUTPUT);
        problem = Some(format!("output cut at {MAX_OUTPUT} bytes"));
    }
    let mut output = String::from_utf8_lossy(&output).into_owned();
    if !status.success() {
        let code = status
            .code()
            .map_or_else(|| "a signal".to_owned(), |code| code.to_string());
        problem = Some(format!("exited with {code}"));
        output.push_str(&format!("\n[the command exited with {code}]"));
    }
    Ok(Outcome { output, problem })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(command: &str) -> FunctionSpec {
        FunctionSpec {
            name: "f".into(),
            command: command.into(),
        }
    }

    #[tokio::test]
    async fn arguments_go_in_and_stdout_comes_back() {
        let outcome = run(&spec("printf 'got '; cat"), r#"{"city":"Paris"}"#).await;
        assert_eq!(
            outcome.ok(),
            Some(Outcome {
                output: r#"got {"city":"Paris"}"#.into(),
                problem: None
            })
        );
    }

    #[tokio::test]
    async fn a_failing_command_still_answers() {
        let outcome = run(&spec("echo partial; exit 3"), "{}").await.ok();
        let outcome = outcome.unwrap_or(Outcome {
            output: String::new(),
            problem: None,
        });
        assert_eq!(outcome.output, "partial\n\n[the command exited with 3]");
        assert_eq!(outcome.problem.as_deref(), Some("exited with 3"));
    }
}
