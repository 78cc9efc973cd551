//! The sandbox's file tools: `write`, `read`, `edit`, `grep`, `glob`, `apply_patch` and
//! `share_file`. They work on the conversation's workspace directly from the host (no
//! container start), holding the workspace lock for the whole call, and every path the model
//! gives goes through `Workspace::resolve` (see [`crate::workspace`] on confinement).
//!
//! Each call returns its documented output item (`sandbox_write_file`, `sandbox_read_file`,
//! `sandbox_edit_file`, `sandbox_grep`, `sandbox_glob`, `sandbox_apply_patch`, `share_file`)
//! with the model's `call_id`, and `error` set when it failed; the model reads a short summary
//! (for `read`, the numbered lines). Paths are reported as the sandbox sees them
//! (`/workspace/…`). File tools are not billed: only executions count as sandbox invocations.
//!
//! # Layout
//! - here: [`file_tools`].
//! - `common`: what the tools share: [`FileLimits`], running in the workspace, arguments,
//!   path resolution, items.
//! - `text`: `write`, `read`, `edit`.
//! - `search`: `grep`, `glob`.
//! - `apply`: `apply_patch`; `patch`: its format (the "*** Begin Patch" envelope) and how
//!   chunks are found and applied.
//! - `share`: `share_file` and the content types.
//! - `fsio`: opening without following links, capped reads, atomic writes, walks.
//! - `glob`: glob patterns (globset).
//!
//! # Example
//! ```no_run
//! use std::sync::Arc;
//! use std::time::Duration;
//! use sandbox::files::{FileLimits, file_tools};
//! use sandbox::workspace::Workspaces;
//!
//! let workspaces = Arc::new(Workspaces::new("/var/lib/agentd/workspaces".into(), Duration::from_secs(3600)));
//! let tools = file_tools(workspaces, FileLimits::default());
//! assert_eq!(tools.len(), 7);
//! ```

mod apply;
mod common;
mod fsio;
#[cfg(feature = "fuzzing")]
#[doc(hidden)]
pub mod fuzzing;
mod glob;
mod patch;
mod search;
mod share;
mod text;

use std::sync::Arc;

use engine::hosted::HostedTool;

use self::common::Shared;
use crate::workspace::Workspaces;

pub use self::common::FileLimits;
pub use self::share::content_type;

/// The tools' fixed names, in the order [`file_tools`] returns them.
pub const NAMES: [&str; 7] = [
    "write",
    "read",
    "edit",
    "grep",
    "glob",
    "apply_patch",
    "share_file",
];

/// All seven file tools over the given workspaces.
pub fn file_tools(workspaces: Arc<Workspaces>, limits: FileLimits) -> Vec<Arc<dyn HostedTool>> {
    let shared = Shared { workspaces, limits };
    vec![
        Arc::new(text::Write(shared.clone())),
        Arc::new(text::Read(shared.clone())),
        Arc::new(text::Edit(shared.clone())),
        Arc::new(search::Grep(shared.clone())),
        Arc::new(search::Glob(shared.clone())),
        Arc::new(apply::ApplyPatch(shared.clone())),
        Arc::new(share::Share(shared)),
    ]
}
