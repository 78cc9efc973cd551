//! What the file tools share: their limits ([`FileLimits`]), running in the call's workspace
//! under its lock ([`Shared`]), argument parsing, path resolution and the items' text.

use std::path::PathBuf;
use std::sync::Arc;

use engine::hosted::{CallContext, ToolOutcome};
use engine::model::ToolSpec;
use protocol::output::OutputItem;
use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::confine::Root;
use crate::quota::Quota;
use crate::workspace::{EnterError, Workspaces, describe_io, resolve_in, sandbox_path_of};

/// Sizes and caps of the file tools (the operator's `[sandbox]` configuration).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FileLimits {
    /// The largest file `write`, `edit` and `apply_patch` produce, and `read`, `edit`,
    /// `grep` and `apply_patch` read (bytes).
    pub max_file_bytes: u64,
    /// The largest file `share_file` delivers (bytes).
    pub max_share_bytes: u64,
    /// The most matching lines `grep` and paths `glob` report.
    pub max_results: usize,
    /// The most lines one `read` returns.
    pub max_read_lines: usize,
    /// The most bytes of text one `read` or `grep` gives the model.
    pub max_output_bytes: usize,
    /// The most directory entries one `grep` or `glob` visits.
    pub max_walk_entries: usize,
    /// The workspace's disk quota, which `write`, `edit` and `apply_patch` respect (taken
    /// from the [`Workspaces`] when a tool runs).
    pub workspace_quota: Option<Quota>,
}

impl Default for FileLimits {
    /// 10 MiB files, 25 MiB shared files, 200 results, 2000 lines and 100 kB of text per
    /// read, 100000 entries per walk.
    fn default() -> Self {
        FileLimits {
            max_file_bytes: 10 << 20,
            max_share_bytes: 25 << 20,
            max_results: 200,
            max_read_lines: 2000,
            max_output_bytes: 100_000,
            max_walk_entries: 100_000,
            workspace_quota: None,
        }
    }
}

/// The most characters of one line `read` and `grep` show.
pub(super) const MAX_LINE_CHARS: usize = 2000;

/// What every file tool holds.
#[derive(Clone)]
pub(super) struct Shared {
    pub(super) workspaces: Arc<Workspaces>,
    pub(super) limits: FileLimits,
}

impl Shared {
    /// Runs `work` on the blocking pool in the call's workspace, given the handle of its
    /// root, holding its lock (the guard moves into the task, so the lock lasts as long as
    /// the work even if the call is dropped). With a shared store, the workspace is brought
    /// up to date before and saved after when the work changed it.
    pub(super) async fn run<T: Send + 'static>(
        &self,
        context: &CallContext<'_>,
        work: impl FnOnce(&Root, &FileLimits) -> Result<T, String> + Send + 'static,
    ) -> Result<T, String> {
        let entered = self
            .workspaces
            .enter(context.project_id, context.conversation)
            .await
            .map_err(|err| match err {
                EnterError::Io(err) => {
                    format!("the workspace is not available: {}", describe_io(&err))
                }
                EnterError::Shared(message) => message,
            })?;
        let limits = FileLimits {
            workspace_quota: self.workspaces.quota(),
            ..self.limits
        };
        let inner = Arc::clone(&entered.workspace);
        let task = tokio::spawn(async move {
            let result = tokio::task::spawn_blocking(move || {
                inner.open_root().and_then(|root| work(&root, &limits))
            })
            .await
            .map_err(|_| "the tool stopped unexpectedly".to_owned());
            // A note (files not kept for other replicas) is in the log; the next replica
            // that needs them says so.
            let _ = entered.leave().await;
            result
        });
        task.await
            .map_err(|_| "the tool stopped unexpectedly".to_owned())??
    }
}

/// The arguments, or an `invalid arguments` message.
pub(super) fn parse<T: DeserializeOwned>(arguments: &str) -> Result<T, String> {
    serde_json::from_str(arguments).map_err(|err| format!("invalid arguments: {err}"))
}

/// The `path` argument as given, for the item of a call that failed early.
pub(super) fn given_path(arguments: &str, key: &str) -> String {
    serde_json::from_str::<Value>(arguments)
        .ok()
        .and_then(|value| value.get(key)?.as_str().map(str::to_owned))
        .unwrap_or_default()
}

pub(super) fn outcome(model_text: String, item: OutputItem) -> ToolOutcome {
    ToolOutcome {
        model_text,
        items: vec![item],
        ..ToolOutcome::default()
    }
}

pub(super) fn spec(name: &str, description: &str, parameters: Value) -> ToolSpec {
    ToolSpec {
        name: name.to_owned(),
        description: Some(description.to_owned()),
        parameters: parameters.into(),
        strict: false,
    }
}

/// `error: <path>: <message>` with the path as the model named it.
pub(super) fn failed(path: &str, message: &str) -> String {
    if path.is_empty() {
        format!("error: {message}")
    } else {
        format!("error: {path}: {message}")
    }
}

/// Resolves a path: the path relative to the root and the path the sandbox sees.
pub(super) fn resolve(root: &Root, path: &str) -> Result<(PathBuf, String), String> {
    let relative = resolve_in(root, path)?;
    let shown = sandbox_path_of(&relative);
    Ok((relative, shown))
}

/// [`resolve`] for tools that touch several paths: the error names the path.
pub(super) fn resolve_named(root: &Root, path: &str) -> Result<(PathBuf, String), String> {
    resolve(root, path).map_err(|message| format!("{path}: {message}"))
}

/// Cuts `line` to `max` characters, marking the cut.
pub(super) fn cut_line(line: &str, max: usize) -> String {
    match line.char_indices().nth(max) {
        Some((at, _)) => format!("{}… [line cut]", &line[..at]),
        None => line.to_owned(),
    }
}
