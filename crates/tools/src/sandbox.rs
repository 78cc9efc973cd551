//! The `sandbox` tool: code execution (`execute`, python or bash) and the file tools (`write`,
//! `read`, `edit`, `grep`, `glob`, `apply_patch`, `share_file`) over one workspace per
//! conversation (spec decision 6).
//!
//! - [`workspace`]: the per-conversation workspace directories and their confinement.
//! - [`files`]: the file tools, which work on the workspace directly from the host.
//! - [`isolation`]: the [`Isolation`] port that runs one program in isolation, and its
//!   bubblewrap adapter [`Bwrap`]; code never runs unisolated.
//! - [`execute`]: the `execute` tool over an [`Isolation`].

pub mod execute;
pub mod files;
pub mod isolation;
pub mod workspace;

pub use execute::Execute;
pub use isolation::{Bwrap, Isolation, Limits, RunOutput, RunRequest, RunStatus};
pub use workspace::{Workspace, Workspaces};
