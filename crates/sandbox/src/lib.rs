//! The `sandbox` tool, one of agentd's built-in tools: code execution (`execute`, python or
//! bash) and the file tools (`write`, `read`, `edit`, `grep`, `glob`, `apply_patch`,
//! `share_file`) over one workspace per conversation (spec decision 6). Each is an
//! [`engine::hosted::HostedTool`]; the server probes the isolation and creates the
//! [`Workspaces`] once at start-up and hands every request that asks for `{"type": "sandbox"}`
//! the same tools. It depends on `engine` (the port) and `protocol` (the wire types) only.
//!
//! # Layout
//! - [`workspace`]: the per-conversation workspace directories and their confinement.
//! - [`confine`]: file system access that stays below a directory handle (`openat2`).
//! - [`files`]: the file tools, which work on the workspace directly from the host.
//! - [`isolation`]: the [`Isolation`] port that runs one program in isolation, and its
//!   bubblewrap adapter [`Bwrap`]; code never runs unisolated.
//! - [`execute`]: the `execute` tool over an [`Isolation`], taking a slot of [`Slots`].
//! - [`slots`]: the cap on executions running at once.
//! - [`restrict`]: the Landlock helper that runs inside the sandbox.
//! - [`quota`]: the workspace disk quota (a loop-mounted file system per workspace, or a watch).
//! - [`shared`]: workspaces kept in a store several replicas share (restored before a step
//!   on a replica whose copy is missing or older, saved after a step that changed them);
//!   [`snapshot`]: a workspace's files as one capped, compressed archive and back.
//!
//! # Example
//! ```
//! # #[tokio::main]
//! # async fn main() {
//! use std::sync::Arc;
//! use std::time::Duration;
//! use engine::hosted::HostedTool as _;
//! use sandbox::{Bwrap, Execute, Isolation, Limits, Workspaces, files};
//!
//! // Once, at start-up: the workspaces' root and the isolation, or why there is none (then
//! // every execution says why and nothing runs).
//! let root = std::env::temp_dir().join("agentd-sandbox-doc");
//! let workspaces = Arc::new(Workspaces::new(root, Duration::from_secs(3600)));
//! let isolation = Bwrap::probe().await.map(|bwrap| Arc::new(bwrap) as Arc<dyn Isolation>);
//! let execute = Execute::new(isolation, workspaces.clone(), Limits::default());
//! let file_tools = files::file_tools(workspaces, files::FileLimits::default());
//! // What the model is given for `{"type": "sandbox"}`: `execute` and the seven file tools.
//! assert_eq!(execute.spec().name, sandbox::execute::NAME);
//! assert_eq!(file_tools.len(), files::NAMES.len());
//! # }
//! ```

pub mod confine;
pub mod execute;
pub mod files;
pub mod isolation;
pub mod quota;
pub mod restrict;
pub mod shared;
pub mod slots;
pub mod snapshot;
pub mod workspace;

pub use execute::Execute;
pub use isolation::{
    Bwrap, Env, Helper, Isolation, LandlockLayer, Layers, Limits, ProbeOptions, RunOutput,
    RunRequest, RunStatus, SecondLayer,
};
pub use quota::{Quota, QuotaMode};
pub use shared::SharedStore;
pub use slots::Slots;
pub use workspace::{EnterError, Entered, Workspace, Workspaces};
