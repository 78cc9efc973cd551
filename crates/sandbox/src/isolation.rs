//! Running one program in isolation: the [`Isolation`] port and its bubblewrap adapter
//! [`Bwrap`]. Another back end (gVisor, a remote runner) implements the same trait.
//!
//! # What [`Bwrap`] enforces, and how
//! A run is a chain of `exec`s started from `/bin/sh` with an empty environment:
//!
//! 1. `sh` writes its own pid into the run's cgroup(s) (see [`cgroup`]), so everything the
//!    run starts is counted there: memory (`memory.max` / `memory.limit_in_bytes`) and the
//!    number of processes (`pids.max`). It then moves the status pipe to fd 3 and points
//!    stdin at `/dev/null`.
//! 2. When agentd runs as root, `unshare --mount` and `mount --bind` put the workspace at
//!    [`STAGING`] in a private mount namespace, so the unprivileged `bwrap` below can reach
//!    it even when a parent directory of the workspaces is closed to others (a `0700` data
//!    directory); nothing of it is visible outside the run.
//! 3. `prlimit` sets rlimits: CPU seconds, file size, open files; and, only when no cgroup
//!    controller is available, address space (RLIMIT_AS) and processes (RLIMIT_NPROC).
//! 4. `setpriv` (only when agentd runs as root) drops to uid/gid 65534 on the host, with no
//!    supplementary groups and `no_new_privs`, so the sandbox is nobody outside its user
//!    namespace too: without it, uid 65534 inside would be root outside and could read
//!    root-only files of the bound directories.
//! 5. `bwrap` creates fresh user, pid, mount, network, IPC, UTS and cgroup namespaces
//!    (`--unshare-all`; `--share-net` only when the network is on), maps uid/gid 65534,
//!    forbids nested user namespaces, drops all capabilities, clears the environment,
//!    starts a new session and dies with agentd. The file system is a tmpfs root with
//!    `/usr` read-only, a short list of `/etc` files read-only (not `/etc` as a whole: no
//!    `shadow`, no agentd configuration), `/bin`, `/lib`, … as on the host, a minimal `/dev`,
//!    a fresh `/proc` of the run's pid namespace, a size-capped tmpfs `/tmp`, and the
//!    workspace read-write at `/workspace`, the working directory and `HOME`; the root
//!    itself is read-only. Nothing else of the host is visible.
//!
//! 6. Inside bubblewrap, the second layer: a seccomp filter (`isolation/seccomp.rs`), which
//!    bwrap loads (`--seccomp 4`; the launcher opens the compiled filter, a private temporary
//!    file, as fd 4) right before it executes the program. [`Bwrap::probe_with`] checks that
//!    it is in force and, with [`SecondLayer::Require`], refuses to work without it.
//! 7. With a Landlock helper ([`LandlockLayer`]), bwrap runs the helper (agentd's binary,
//!    opened by the launcher as fd 5 and bound read-only at `/run/agentd/sandbox-exec`)
//!    instead of the program; it restricts itself with Landlock and executes the program
//!    (see [`crate::restrict`]).
//!
//! The wall-time limit is enforced here: on expiry the `bwrap` process is killed, its pid
//! namespace's init dies with it (`--die-with-parent`) and the kernel kills every process
//! in the namespace. stdout and stderr are read concurrently, each kept up to
//! `max_output_bytes` and counted beyond (so the program never blocks on a full pipe); a
//! run that floods more than [`FLOOD_FACTOR`] times that is stopped. A run whose workspace
//! quota is watched (see [`crate::quota`]) is measured while it runs and killed past it.
//!
//! `bwrap --json-status-fd` tells a program's own exit (`exit-code`) from a set-up failure
//! of the sandbox (no `exit-code`; bwrap's message is on stderr), and names the sandbox's
//! init process (`child-pid`): a run whose processes are all stopped, or whose init is, is
//! killed at once rather than at its time limit (see `stopped.rs`).

pub(crate) mod cgroup;
mod seccomp;
mod stopped;

use std::ffi::OsString;
use std::io;
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::io::{AsyncRead, AsyncReadExt};
use tokio::process::Command;
use tokio::sync::Notify;

use self::cgroup::{Cgroups, RunCgroup};
use crate::quota::{self, Quota, QuotaMode};

/// The unprivileged uid and gid code runs as (`nobody`/`nogroup`).
pub const SANDBOX_UID: u32 = 65534;

/// Where the workspace appears in the sandbox.
pub const WORKSPACE_MOUNT: &str = "/workspace";

/// A run whose output on one stream exceeds this many times `max_output_bytes` (and at
/// least [`FLOOD_MIN_BYTES`]) is stopped: it is printing without bound.
pub const FLOOD_FACTOR: u64 = 16;
/// See [`FLOOD_FACTOR`].
pub const FLOOD_MIN_BYTES: u64 = 64 << 20;

/// The mount point (as root, in the run's private mount namespace) through which the
/// unprivileged `bwrap` reaches the workspace.
pub const STAGING: &str = "/run/agentd-sandbox";

/// Binds its first argument onto its second, then execs the rest (runs as root inside
/// `unshare --mount`).
const MOUNT_SCRIPT: &str = r#"mount --bind "$1" "$2" || { echo "sandbox: cannot bind the workspace" >&2; exit 125; }
shift 2
exec "$@""#;

/// The longest single argument Linux passes to a program (`MAX_ARG_STRLEN`, 32 pages).
const MAX_ARG_BYTES: usize = 32 * 4096 - 1;

/// Open files per process.
const MAX_OPEN_FILES: u32 = 1024;

/// How long the output pipes may stay open after the run's processes were killed.
const DRAIN_GRACE: Duration = Duration::from_secs(2);

/// `PATH` inside the sandbox.
const SANDBOX_PATH: &str = "/usr/local/bin:/usr/bin:/bin";

/// The `/etc` entries programs need (libraries, users, name resolution, certificates, time
/// zone, Python's site configuration, fonts); each is bound read-only when it exists.
const ETC_ENTRIES: &[&str] = &[
    "alternatives",
    "ca-certificates",
    "ca-certificates.conf",
    "debian_version",
    "fonts",
    "gai.conf",
    "group",
    "host.conf",
    "hosts",
    "ld.so.cache",
    "ld.so.conf",
    "ld.so.conf.d",
    "localtime",
    "mime.types",
    "nsswitch.conf",
    "os-release",
    "passwd",
    "protocols",
    "pki",
    "python3",
    "python3.11",
    "python3.12",
    "python3.13",
    "resolv.conf",
    "services",
    "ssl",
    "timezone",
];

/// The top-level directories of a classic layout that merged-`/usr` systems make links.
const ROOT_LINKS: &[&str] = &["bin", "sbin", "lib", "lib32", "lib64", "libx32"];

/// The shell script that starts a run: joins the cgroups given as arguments, moves the
/// status pipe (stdin) to fd 3, opens the seccomp filter file (when one is given) as fd 4,
/// and execs the rest of its arguments.
const LAUNCHER: &str = r#"filter=$1; helper=$2; n=$3; shift 3
while [ "$n" -gt 0 ]; do
  echo $$ > "$1" || { echo "sandbox: cannot join the cgroup $1" >&2; exit 125; }
  shift; n=$((n - 1))
done
exec 3>&0 </dev/null
if [ -n "$filter" ]; then
  exec 4<"$filter" || { echo "sandbox: cannot open the seccomp filter" >&2; exit 125; }
fi
if [ -n "$helper" ]; then
  exec 5<"$helper" || { echo "sandbox: cannot open the Landlock helper" >&2; exit 125; }
fi
exec "$@""#;

/// The fd the seccomp filter reaches bwrap on (see [`LAUNCHER`]).
const SECCOMP_FD: &str = "4";

/// The fd of the Landlock helper's program (see [`LAUNCHER`]), and where it is bound in the
/// sandbox (opened by agentd's user before it drops to uid 65534, so the binary need not be
/// reachable by that uid on the host).
const HELPER_FD: &str = "5";
const HELPER_MOUNT: &str = "/run/agentd/sandbox-exec";

/// Runs one program in isolation.
#[async_trait::async_trait]
pub trait Isolation: Send + Sync {
    /// Runs `request.argv` with the workspace at `/workspace`. Never fails: a sandbox that
    /// cannot start is a [`RunStatus::Failed`] output whose stderr says why.
    async fn run(&self, request: RunRequest) -> RunOutput;
}

/// One program to run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunRequest {
    /// The host directory mounted read-write at `/workspace`.
    pub workspace_root: PathBuf,
    /// The program and its arguments, e.g. `["python3", "-c", code]`.
    pub argv: Vec<String>,
    pub limits: Limits,
    /// Variables lent to the program (a saved connector's credentials): passed through the
    /// environment of the processes that start it, never on a command line.
    pub env: Env,
}

/// Environment variables whose values are secrets: `Debug` shows the names only.
#[derive(Clone, Default)]
pub struct Env(pub std::collections::BTreeMap<String, secrecy::SecretString>);

impl Env {
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

impl std::fmt::Debug for Env {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.0.keys()).finish()
    }
}

impl PartialEq for Env {
    fn eq(&self, other: &Env) -> bool {
        use secrecy::ExposeSecret as _;
        self.0.len() == other.0.len()
            && self
                .0
                .iter()
                .zip(&other.0)
                .all(|((a, x), (b, y))| a == b && x.expose_secret() == y.expose_secret())
    }
}

impl Eq for Env {}

/// The resource limits of one run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Limits {
    /// Wall time; the run is killed after it ([`RunStatus::TimedOut`]).
    pub timeout: Duration,
    /// Memory of all the run's processes together (cgroup), or per process (RLIMIT_AS).
    pub memory_mb: u64,
    /// Processes and threads of the run (cgroup `pids.max`, or RLIMIT_NPROC).
    pub max_processes: u32,
    /// The largest file a process may write (RLIMIT_FSIZE).
    pub max_file_bytes: u64,
    /// What is kept of stdout, and of stderr, each.
    pub max_output_bytes: usize,
    /// Whether the run shares the host's network (off: only a private loopback). On, the
    /// code reaches whatever the host reaches, including services on the host's loopback
    /// (agentd itself, databases) and cloud metadata addresses: the network guard does not
    /// apply inside the sandbox.
    pub network: bool,
    /// The workspace's disk quota (see [`crate::quota`]): in `Watch` mode the run is
    /// measured and killed past it; either way no file may outgrow it (RLIMIT_FSIZE) and a
    /// run that leaves the workspace full says so.
    pub workspace_quota: Option<Quota>,
}

impl Default for Limits {
    fn default() -> Limits {
        Limits {
            timeout: Duration::from_secs(60),
            memory_mb: 1024,
            max_processes: 256,
            max_file_bytes: 256 << 20,
            max_output_bytes: 1 << 20,
            network: false,
            workspace_quota: None,
        }
    }
}

/// How a run ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RunStatus {
    /// The program ran and exited (with any exit code).
    Completed,
    /// The sandbox could not run it, or stopped it (out of memory, output flood).
    Failed,
    /// The wall-time limit killed it.
    TimedOut,
}

/// What one run produced.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunOutput {
    pub status: RunStatus,
    /// The program's exit code; `128 + signal` when a signal ended it; -1 when it never ran.
    pub exit_code: i32,
    pub stdout: String,
    pub stderr: String,
    pub stdout_truncated: bool,
    pub stderr_truncated: bool,
    pub duration_ms: u64,
}

impl RunOutput {
    /// A run that never started.
    pub fn failed(message: impl Into<String>, duration: Duration) -> RunOutput {
        RunOutput {
            status: RunStatus::Failed,
            exit_code: -1,
            stdout: String::new(),
            stderr: message.into(),
            stdout_truncated: false,
            stderr_truncated: false,
            duration_ms: millis(duration),
        }
    }
}

/// Whether code may run when the second isolation layer (the seccomp filter inside
/// bubblewrap) cannot be applied.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum SecondLayer {
    /// The sandbox is unavailable without it: code never runs with one wall only.
    #[default]
    Require,
    /// Run without it (logged) when the kernel or architecture does not allow it.
    Optional,
}

/// What [`Bwrap::probe_with`] sets up.
#[derive(Debug, Clone, Default)]
pub struct ProbeOptions {
    /// Whether the seccomp filter is required.
    pub second_layer: SecondLayer,
    /// The Landlock layer (see [`crate::restrict`]).
    pub landlock: LandlockLayer,
}

/// Whether runs restrict themselves with Landlock (through the helper program).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum LandlockLayer {
    /// No Landlock.
    #[default]
    Off,
    /// Landlock where the kernel and the helper allow (the log says when not).
    Auto(Helper),
    /// No code runs without Landlock.
    Require(Helper),
}

/// The program that applies Landlock inside the sandbox and executes the command: agentd's
/// own binary with [`crate::restrict::SUBCOMMAND`], or a program that calls
/// [`crate::restrict::run`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Helper {
    /// The program on the host.
    pub program: PathBuf,
    /// Its first arguments (`["sandbox-exec"]` for agentd).
    pub args: Vec<String>,
}

/// The isolation layers a probed sandbox applies to every run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Layers {
    /// bubblewrap: namespaces, a read-only file system view, no capabilities.
    pub namespaces: bool,
    /// The seccomp filter inside bubblewrap (`isolation/seccomp.rs`).
    pub seccomp: bool,
    /// The Landlock ABI the programs run under (see [`crate::restrict`]), `None` without.
    pub landlock: Option<String>,
}

impl Layers {
    /// `bubblewrap namespaces + seccomp filter`, for the start-up log and the server.
    pub fn describe(&self) -> String {
        let mut parts = Vec::new();
        if self.namespaces {
            parts.push("bubblewrap namespaces".to_owned());
        }
        if self.seccomp {
            parts.push("seccomp filter".to_owned());
        }
        if let Some(abi) = &self.landlock {
            parts.push(format!("Landlock (ABI {abi})"));
        }
        parts.join(" + ")
    }
}

/// The bubblewrap back end. Build it with [`Bwrap::probe`].
#[derive(Debug, Clone)]
pub struct Bwrap {
    bwrap: PathBuf,
    prlimit: PathBuf,
    /// `Some` when agentd runs as root: the host uid is dropped to 65534 with it.
    setpriv: Option<PathBuf>,
    /// As root: `unshare` and the staging mount point that make the workspace reachable
    /// for uid 65534 (`None`: the workspace's parents must be searchable by others).
    staging: Option<Staging>,
    /// Where runs' cgroups go; `None` falls back to rlimits.
    cgroups: Option<Cgroups>,
    /// The file-system arguments that mirror the host's layout (`/bin`, `/lib`, `/etc/…`).
    layout: Vec<OsString>,
    /// The compiled seccomp filter every run loads (`None`: the second layer is off, which
    /// only [`SecondLayer::Optional`] allows).
    seccomp: Option<Arc<[u8]>>,
    /// The Landlock helper every run starts through, and the ABI the probe found in force.
    landlock: Option<(Helper, String)>,
}

impl Bwrap {
    /// Finds the programs, sets up cgroups (or notes the rlimit fallback in the log) and
    /// runs `python3 -c 'print(2+2)'` under the full isolation. `Err` says why the sandbox
    /// cannot work on this host (bwrap missing, user namespaces blocked by AppArmor or a
    /// container's seccomp profile, …); code must then not run at all.
    pub async fn probe() -> Result<Bwrap, String> {
        Bwrap::probe_with(ProbeOptions::default()).await
    }

    /// [`Bwrap::probe`] with options. With [`SecondLayer::Require`] (the default), a
    /// seccomp filter that cannot be built or loaded makes the probe fail: code never runs.
    pub async fn probe_with(options: ProbeOptions) -> Result<Bwrap, String> {
        let bwrap = find_program("bwrap").ok_or_else(|| {
            "the sandbox needs bubblewrap, and `bwrap` is not installed (apt-get install bubblewrap)"
                .to_owned()
        })?;
        let prlimit = find_program("prlimit").ok_or_else(|| {
            "the sandbox needs `prlimit` (util-linux), which is not installed".to_owned()
        })?;
        let setpriv = if effective_uid() == Some(0) {
            Some(find_program("setpriv").ok_or_else(|| {
                "the sandbox needs `setpriv` (util-linux) to drop root, and it is not installed"
                    .to_owned()
            })?)
        } else {
            None
        };
        let cgroups = match tokio::task::spawn_blocking(Cgroups::detect).await {
            Ok(Ok(cgroups)) => {
                tracing::info!(limits = %cgroups.describe(), "sandbox memory and process limits through cgroups");
                if !cgroups.limits_memory() {
                    tracing::warn!(
                        "sandbox: no cgroup memory controller; memory is limited per process with RLIMIT_AS"
                    );
                }
                if !cgroups.limits_pids() {
                    tracing::warn!(
                        "sandbox: no cgroup pids controller; processes are limited with RLIMIT_NPROC (counted per uid)"
                    );
                }
                Some(cgroups)
            }
            Ok(Err(reason)) => {
                tracing::warn!(%reason, "sandbox: no usable cgroup; memory and process limits fall back to RLIMIT_AS and RLIMIT_NPROC, which are weaker");
                None
            }
            Err(err) => {
                tracing::warn!(error = %err, "sandbox: cgroup detection failed; falling back to rlimits");
                None
            }
        };
        let staging = if setpriv.is_some() {
            match tokio::task::spawn_blocking(Staging::prepare).await {
                Ok(Ok(staging)) => Some(staging),
                Ok(Err(reason)) => {
                    tracing::warn!(%reason, "sandbox: no staging mount point; the workspaces' parent directories must be searchable by uid 65534");
                    None
                }
                Err(err) => return Err(format!("sandbox probe: {err}")),
            }
        } else {
            None
        };
        let layout = tokio::task::spawn_blocking(host_layout)
            .await
            .map_err(|err| format!("sandbox probe: {err}"))?;
        let seccomp = match seccomp::program() {
            Ok(program) => Some(Arc::from(program)),
            Err(reason) => match options.second_layer {
                SecondLayer::Require => {
                    return Err(format!(
                        "the sandbox's second layer (a seccomp filter) is required \
                         (tools.sandbox.second_layer = \"require\") and cannot be built: {reason}"
                    ));
                }
                SecondLayer::Optional => {
                    tracing::warn!(%reason, "sandbox: running without the seccomp filter");
                    None
                }
            },
        };
        let mut sandbox = Bwrap {
            bwrap,
            prlimit,
            setpriv,
            staging,
            cgroups,
            layout,
            seccomp,
            landlock: None,
        };
        match sandbox.self_test().await {
            Ok(_) => {}
            Err(reason)
                if sandbox.seccomp.is_some() && options.second_layer == SecondLayer::Optional =>
            {
                tracing::warn!(%reason, "sandbox: the seccomp filter does not load here; running without it");
                sandbox.seccomp = None;
                sandbox.self_test().await?;
            }
            Err(reason) => return Err(reason),
        }
        let (helper, required) = match options.landlock {
            LandlockLayer::Off => (None, false),
            LandlockLayer::Auto(helper) => (Some(helper), false),
            LandlockLayer::Require(helper) => (Some(helper), true),
        };
        if let Some(helper) = helper {
            sandbox.landlock = Some((helper, String::new()));
            match sandbox.self_test().await {
                Ok(Some(abi)) => {
                    if let Some((_, found)) = &mut sandbox.landlock {
                        *found = abi;
                    }
                }
                Ok(None) | Err(_) if !required => {
                    tracing::warn!(
                        "sandbox: Landlock cannot be applied here (kernel or helper); running without it"
                    );
                    sandbox.landlock = None;
                }
                Ok(None) => {
                    return Err("Landlock is required (tools.sandbox.landlock = \"require\") and is not in force in a test run".to_owned());
                }
                Err(reason) => {
                    return Err(format!(
                        "Landlock is required (tools.sandbox.landlock = \"require\") and a test run through its helper failed: {reason}"
                    ));
                }
            }
        }
        tracing::info!(layers = %sandbox.layers().describe(), "sandbox isolation layers");
        Ok(sandbox)
    }

    /// The layers every run gets.
    pub fn layers(&self) -> Layers {
        Layers {
            namespaces: true,
            seccomp: self.seccomp.is_some(),
            landlock: self.landlock.as_ref().map(|(_, abi)| abi.clone()),
        }
    }

    /// How memory and processes are limited, for the start-up log.
    pub fn describe(&self) -> String {
        let user = if self.setpriv.is_some() {
            "host uid 65534"
        } else {
            "agentd's own uid"
        };
        match &self.cgroups {
            Some(cgroups) => format!("bwrap as {user}, {}", cgroups.describe()),
            None => format!("bwrap as {user}, rlimits only (RLIMIT_AS, RLIMIT_NPROC)"),
        }
    }

    /// Runs the probe program in a scratch workspace; the Landlock ABI the program ran
    /// under, if any.
    async fn self_test(&self) -> Result<Option<String>, String> {
        let dir = std::env::temp_dir().join(format!(
            "agentd-sandbox-probe-{}-{}",
            std::process::id(),
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|elapsed| elapsed.as_nanos())
                .unwrap_or_default()
        ));
        tokio::fs::create_dir(&dir)
            .await
            .map_err(|err| format!("sandbox probe: cannot create {}: {err}", dir.display()))?;
        // Prints 4, then the seccomp mode the program runs under (2: a filter), then the
        // Landlock ABI the helper applied (empty without).
        let program = "import os, re\nprint(2+2)\nstatus = open('/proc/self/status').read()\n\
                       print(re.search(r'Seccomp:\\s*(\\d+)', status).group(1))\n\
                       print(os.environ.get('AGENTD_SANDBOX_LANDLOCK', ''))";
        let output = self
            .run(RunRequest {
                workspace_root: dir.clone(),
                argv: vec!["python3".into(), "-c".into(), program.into()],
                env: Env::default(),
                limits: Limits {
                    timeout: Duration::from_secs(30),
                    memory_mb: 256,
                    ..Limits::default()
                },
            })
            .await;
        let _ = tokio::fs::remove_dir_all(&dir).await;
        let lines: Vec<&str> = output.stdout.lines().collect();
        if output.status == RunStatus::Completed
            && output.exit_code == 0
            && lines.first() == Some(&"4")
        {
            let filtered = lines.get(1) == Some(&"2");
            if self.seccomp.is_some() && !filtered {
                return Err(format!(
                    "the sandbox's seccomp filter is not in force in a test run (seccomp mode {})",
                    lines.get(1).unwrap_or(&"unknown")
                ));
            }
            let landlock = lines
                .get(2)
                .map(|abi| abi.trim())
                .filter(|abi| !abi.is_empty())
                .map(str::to_owned);
            return Ok(landlock);
        }
        let detail = output.stderr.trim();
        let hint = if detail.contains("namespace")
            || detail.contains("uid map")
            || detail.contains("Operation not permitted")
            || detail.contains("Permission denied")
        {
            " (user namespaces look blocked: Ubuntu's AppArmor restricts unprivileged user \
             namespaces (sysctl kernel.apparmor_restrict_unprivileged_userns=0, or an AppArmor \
             profile for bwrap); Docker's default seccomp profile blocks unshare \
             (--security-opt seccomp=… allowing it); kernel.unprivileged_userns_clone or \
             user.max_user_namespaces may be 0)"
        } else if detail.contains("python3") && detail.contains("No such file") {
            " (python3 is not installed under /usr)"
        } else {
            ""
        };
        Err(format!(
            "the sandbox does not work on this host: a test run of python3 ended {:?} with exit code {}{}{}{}",
            output.status,
            output.exit_code,
            if detail.is_empty() { "" } else { ": " },
            detail,
            hint
        ))
    }

    /// The whole command line of a run, from `sh` to the program.
    fn command_line(
        &self,
        request: &RunRequest,
        procs: &[PathBuf],
        seccomp_file: Option<&Path>,
    ) -> Vec<OsString> {
        let limits = &request.limits;
        let memory_bytes = limits.memory_mb.saturating_mul(1 << 20);
        let mut args: Vec<OsString> = vec![
            "-c".into(),
            LAUNCHER.into(),
            "agentd-sandbox".into(),
            seccomp_file
                .map(|path| path.as_os_str().to_owned())
                .unwrap_or_default(),
            self.landlock
                .as_ref()
                .map(|(helper, _)| helper.program.as_os_str().to_owned())
                .unwrap_or_default(),
            procs.len().to_string().into(),
        ];
        args.extend(procs.iter().map(|path| path.as_os_str().to_owned()));

        let mut workspace = request.workspace_root.as_os_str().to_owned();
        if let Some(staging) = &self.staging {
            args.extend(
                [
                    staging.unshare.as_os_str(),
                    "--mount".as_ref(),
                    "--propagation".as_ref(),
                    "private".as_ref(),
                    "--".as_ref(),
                    "/bin/sh".as_ref(),
                    "-c".as_ref(),
                    MOUNT_SCRIPT.as_ref(),
                    "agentd-mount".as_ref(),
                    request.workspace_root.as_os_str(),
                    STAGING.as_ref(),
                ]
                .map(OsString::from),
            );
            workspace = STAGING.into();
        }

        args.push(self.prlimit.as_os_str().to_owned());
        let cpus = std::thread::available_parallelism()
            .map(usize::from)
            .unwrap_or(1);
        let cpu_seconds = limits
            .timeout
            .as_secs()
            .saturating_add(1)
            .saturating_mul(u64::try_from(cpus).unwrap_or(1));
        args.push(format!("--cpu={cpu_seconds}").into());
        let max_file_bytes = match &limits.workspace_quota {
            Some(quota) => limits.max_file_bytes.min(quota.bytes),
            None => limits.max_file_bytes,
        };
        args.push(format!("--fsize={max_file_bytes}").into());
        args.push(format!("--nofile={MAX_OPEN_FILES}").into());
        args.push("--core=0".into());
        let cgroup_memory = self.cgroups.as_ref().is_some_and(Cgroups::limits_memory);
        let cgroup_pids = self.cgroups.as_ref().is_some_and(Cgroups::limits_pids);
        if !cgroup_memory {
            args.push(format!("--as={memory_bytes}").into());
        }
        if !cgroup_pids {
            args.push(format!("--nproc={}", limits.max_processes).into());
        }
        args.push("--".into());

        if let Some(setpriv) = &self.setpriv {
            args.push(setpriv.as_os_str().to_owned());
            args.extend(
                [
                    format!("--reuid={SANDBOX_UID}"),
                    format!("--regid={SANDBOX_UID}"),
                    "--clear-groups".to_owned(),
                    "--no-new-privs".to_owned(),
                    "--".to_owned(),
                ]
                .map(OsString::from),
            );
        }

        args.push(self.bwrap.as_os_str().to_owned());
        let mut flags: Vec<String> = vec!["--unshare-all".into()];
        if limits.network {
            flags.push("--share-net".into());
        }
        flags.extend(
            [
                "--unshare-user",
                "--disable-userns",
                "--uid",
                "65534",
                "--gid",
                "65534",
                "--hostname",
                "sandbox",
                "--die-with-parent",
                "--new-session",
                "--cap-drop",
                "ALL",
                "--json-status-fd",
                "3",
                "--clearenv",
                "--setenv",
                "PATH",
                SANDBOX_PATH,
                "--setenv",
                "HOME",
                WORKSPACE_MOUNT,
                "--setenv",
                "TMPDIR",
                "/tmp",
                "--setenv",
                "LANG",
                "C.UTF-8",
                "--setenv",
                "MPLBACKEND",
                "Agg",
                "--ro-bind",
                "/usr",
                "/usr",
            ]
            .map(str::to_owned),
        );
        if !request.env.is_empty() {
            // The lent variables reach the program through the environment (a command line is
            // readable by every local user): bwrap then keeps its own environment, which the
            // start already cleared down to PATH and them.
            flags.retain(|flag| flag != "--clearenv");
        }
        if seccomp_file.is_some() {
            flags.push("--seccomp".into());
            flags.push(SECCOMP_FD.into());
        }
        args.extend(flags.into_iter().map(OsString::from));
        args.extend(self.layout.iter().cloned());
        args.extend(
            [
                "--dev".to_owned(),
                "/dev".to_owned(),
                "--proc".to_owned(),
                "/proc".to_owned(),
                "--size".to_owned(),
                memory_bytes.to_string(),
                "--tmpfs".to_owned(),
                "/tmp".to_owned(),
            ]
            .map(OsString::from),
        );
        args.push("--bind".into());
        args.push(workspace);
        args.push(WORKSPACE_MOUNT.into());
        if self.landlock.is_some() {
            args.push("--ro-bind-fd".into());
            args.push(HELPER_FD.into());
            args.push(HELPER_MOUNT.into());
        }
        // The root tmpfs that holds the mount points (`/etc`, …) is read-only too; only
        // `/workspace` and `/tmp` take writes.
        args.push("--remount-ro".into());
        args.push("/".into());
        args.push("--chdir".into());
        args.push(WORKSPACE_MOUNT.into());
        args.push("--".into());
        if let Some((helper, _)) = &self.landlock {
            args.push(HELPER_MOUNT.into());
            args.extend(helper.args.iter().map(OsString::from));
            for dir in [WORKSPACE_MOUNT, "/tmp", "/dev"] {
                args.push("--rw".into());
                args.push(dir.into());
            }
            if !limits.network {
                args.push("--no-network".into());
            }
            args.push("--".into());
        }
        args.extend(request.argv.iter().map(OsString::from));
        args
    }

    async fn run_checked(
        &self,
        request: RunRequest,
        started: Instant,
    ) -> Result<RunOutput, String> {
        if request.argv.is_empty() {
            return Err("nothing to run".into());
        }
        if let Some(arg) = request.argv.iter().find(|arg| arg.len() > MAX_ARG_BYTES) {
            return Err(format!(
                "the code is too long to pass on a command line ({} bytes; at most {MAX_ARG_BYTES}): write it to a file and run the file",
                arg.len()
            ));
        }
        if request.argv.iter().any(|arg| arg.contains('\0')) {
            return Err("the code contains a NUL character".into());
        }
        if self.setpriv.is_some() {
            let root = request.workspace_root.clone();
            let staged = self.staging.is_some();
            tokio::task::spawn_blocking(move || prepare_workspace(&root, staged))
                .await
                .map_err(|err| format!("sandbox: {err}"))??;
        }
        let cgroup = match &self.cgroups {
            Some(cgroups) => {
                let limits = &request.limits;
                let cgroups = cgroups.clone();
                let memory = limits.memory_mb.saturating_mul(1 << 20);
                let processes = limits.max_processes;
                let run =
                    tokio::task::spawn_blocking(move || cgroups.create_run(memory, processes))
                        .await
                        .map_err(|err| format!("sandbox: {err}"))?
                        .map_err(|err| format!("sandbox: cannot create the run's cgroup: {err}"))?;
                Some(run)
            }
            None => None,
        };
        let procs = cgroup
            .as_ref()
            .map(RunCgroup::procs_files)
            .unwrap_or_default();
        let result = self
            .launch(&request, &procs, cgroup.as_ref(), started)
            .await;
        if let Some(cgroup) = cgroup {
            cgroup.kill_all();
            cgroup.remove().await;
        }
        result
    }

    async fn launch(
        &self,
        request: &RunRequest,
        procs: &[PathBuf],
        cgroup: Option<&RunCgroup>,
        started: Instant,
    ) -> Result<RunOutput, String> {
        let limits = &request.limits;
        // The filter goes to bwrap through a private file the launcher opens (removed when
        // the run ends; bwrap has read it by then).
        let seccomp_file = match &self.seccomp {
            Some(program) => {
                let program = Arc::clone(program);
                let file =
                    tokio::task::spawn_blocking(move || -> io::Result<tempfile::NamedTempFile> {
                        let mut file = tempfile::Builder::new()
                            .prefix("agentd-seccomp-")
                            .tempfile()?;
                        io::Write::write_all(&mut file, &program)?;
                        Ok(file)
                    })
                    .await
                    .map_err(|err| format!("sandbox: {err}"))?
                    .map_err(|err| format!("sandbox: cannot write the seccomp filter: {err}"))?;
                Some(file)
            }
            None => None,
        };
        let (status_tx, mut status_rx) = tokio::net::unix::pipe::pipe()
            .map_err(|err| format!("sandbox: cannot create a pipe: {err}"))?;
        let status_fd = status_tx
            .into_blocking_fd()
            .map_err(|err| format!("sandbox: cannot create a pipe: {err}"))?;
        let mut command = Command::new("/bin/sh");
        command
            .args(self.command_line(
                request,
                procs,
                seccomp_file.as_ref().map(tempfile::NamedTempFile::path),
            ))
            .env_clear()
            .env("PATH", "/usr/sbin:/usr/bin:/sbin:/bin")
            .envs(
                request.env.0.iter().map(|(name, value)| {
                    (name.as_str(), secrecy::ExposeSecret::expose_secret(value))
                }),
            )
            .current_dir("/")
            .stdin(Stdio::from(status_fd))
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        let mut child = command
            .spawn()
            .map_err(|err| format!("sandbox: cannot start /bin/sh: {err}"))?;
        // The command holds our copy of the status pipe's write end: drop it so the pipe
        // ends when the sandbox does.
        drop(command);

        let flood = Arc::new(Notify::new());
        let flood_limit = u64::try_from(limits.max_output_bytes)
            .unwrap_or(u64::MAX)
            .saturating_mul(FLOOD_FACTOR)
            .max(FLOOD_MIN_BYTES);
        let stdout = child.stdout.take().map(|pipe| {
            tokio::spawn(read_capped(
                pipe,
                limits.max_output_bytes,
                flood_limit,
                flood.clone(),
            ))
        });
        let stderr = child.stderr.take().map(|pipe| {
            tokio::spawn(read_capped(
                pipe,
                limits.max_output_bytes,
                flood_limit,
                flood.clone(),
            ))
        });
        // bwrap's first status record names the sandbox's init (its host pid), which the
        // stop watch follows.
        let (init_tx, init_rx) = tokio::sync::oneshot::channel::<u32>();
        let status_reader = tokio::spawn(async move {
            let mut text = Vec::new();
            let mut buf = [0u8; 4096];
            let mut init_tx = Some(init_tx);
            loop {
                match status_rx.read(&mut buf).await {
                    Ok(0) | Err(_) => break,
                    Ok(n) if text.len() < 64 << 10 => text.extend_from_slice(&buf[..n]),
                    Ok(_) => {}
                }
                if init_tx.is_some()
                    && let Some(pid) = status_number(&text, "child-pid")
                    && let Some(tx) = init_tx.take()
                {
                    let _ = tx.send(pid);
                }
            }
            text
        });
        let quota_watch = async {
            match limits.workspace_quota {
                Some(quota) if quota.mode == QuotaMode::Watch => {
                    watch_quota(request.workspace_root.clone(), quota.bytes).await;
                }
                _ => std::future::pending().await,
            }
        };
        let stop_watch = async {
            match init_rx.await {
                Ok(init) => stopped::watch(init).await,
                Err(_) => std::future::pending().await,
            }
        };

        enum End {
            Exited(std::process::ExitStatus),
            WaitFailed(io::Error),
            TimedOut,
            Flood,
            Stopped(stopped::Stopped),
            QuotaExceeded,
        }
        let end = tokio::select! {
            status = child.wait() => match status {
                Ok(status) => End::Exited(status),
                Err(err) => End::WaitFailed(err),
            },
            () = tokio::time::sleep(limits.timeout) => End::TimedOut,
            () = flood.notified() => End::Flood,
            stopped = stop_watch => End::Stopped(stopped),
            () = quota_watch => End::QuotaExceeded,
        };
        if !matches!(end, End::Exited(_)) {
            // Killing bwrap takes its pid namespace, and so every process of the run, down.
            let _ = child.start_kill();
            if let Some(cgroup) = cgroup {
                cgroup.kill_all();
            }
            let _ = tokio::time::timeout(DRAIN_GRACE, child.wait()).await;
        }
        let duration = started.elapsed();

        let stdout = collect(stdout).await;
        let stderr = collect(stderr).await;
        let status_text = match tokio::time::timeout(DRAIN_GRACE, status_reader).await {
            Ok(Ok(text)) => text,
            _ => Vec::new(),
        };
        let program_exit = exit_code_from_status(&status_text);
        let oom = cgroup.is_some_and(RunCgroup::oom_killed);

        let (stdout_text, stdout_truncated) = stdout.into_text();
        let (mut stderr_text, stderr_truncated) = stderr.into_text();
        let mut note = |text: &str| {
            if !stderr_text.is_empty() && !stderr_text.ends_with('\n') {
                stderr_text.push('\n');
            }
            stderr_text.push_str(text);
        };
        let (status, exit_code) = match end {
            End::TimedOut => {
                note(&format!(
                    "[killed: the run exceeded its time limit of {} s]",
                    limits.timeout.as_secs_f64()
                ));
                (RunStatus::TimedOut, program_exit.unwrap_or(137))
            }
            End::Flood => {
                note(&format!(
                    "[killed: the run printed more than {flood_limit} bytes on one stream]"
                ));
                (RunStatus::Failed, program_exit.unwrap_or(137))
            }
            End::QuotaExceeded => {
                let bytes = limits.workspace_quota.map_or(0, |quota| quota.bytes);
                note(&format!("[killed: {}]", quota::full_message(bytes)));
                (RunStatus::Failed, program_exit.unwrap_or(137))
            }
            End::Stopped(stopped) => {
                note(stopped.note());
                (RunStatus::Failed, program_exit.unwrap_or(137))
            }
            End::WaitFailed(err) => {
                note(&format!("[sandbox: lost the run: {err}]"));
                (RunStatus::Failed, -1)
            }
            // The kernel killed a process for memory. When the program still exited 0, only
            // a child of it died: the run completed, with the note.
            End::Exited(_) if oom => {
                note(&format!(
                    "[killed: the run exceeded its memory limit of {} MiB]",
                    limits.memory_mb
                ));
                match program_exit {
                    Some(0) => (RunStatus::Completed, 0),
                    code => (RunStatus::Failed, code.unwrap_or(137)),
                }
            }
            End::Exited(process) => match program_exit {
                Some(code) => (RunStatus::Completed, code),
                // No `exit-code` from bwrap: the sandbox itself failed (its message is
                // already on stderr).
                None => (RunStatus::Failed, process_code(process)),
            },
        };
        if let Some(quota) = limits.workspace_quota
            && quota.mode == QuotaMode::Filesystem
        {
            let dir = request.workspace_root.clone();
            let full = tokio::task::spawn_blocking(move || quota::nearly_full(&dir))
                .await
                .unwrap_or(false);
            if full {
                if !stderr_text.is_empty() && !stderr_text.ends_with('\n') {
                    stderr_text.push('\n');
                }
                stderr_text.push_str(&format!("[{}]", quota::full_message(quota.bytes)));
            }
        }
        Ok(RunOutput {
            status,
            exit_code,
            stdout: stdout_text,
            stderr: stderr_text,
            stdout_truncated,
            stderr_truncated,
            duration_ms: millis(duration),
        })
    }
}

#[async_trait::async_trait]
impl Isolation for Bwrap {
    async fn run(&self, request: RunRequest) -> RunOutput {
        let started = Instant::now();
        match self.run_checked(request, started).await {
            Ok(output) => output,
            Err(message) => RunOutput::failed(message, started.elapsed()),
        }
    }
}

/// The staging mount point of runs as root.
#[derive(Debug, Clone)]
struct Staging {
    unshare: PathBuf,
}

impl Staging {
    /// Finds `unshare` and `mount`, and makes [`STAGING`] an empty root-owned directory
    /// that others may search (and not write).
    fn prepare() -> Result<Staging, String> {
        use std::os::unix::fs::{MetadataExt, PermissionsExt};
        let unshare = find_program("unshare")
            .ok_or_else(|| "`unshare` (util-linux) is not installed".to_owned())?;
        find_program("mount").ok_or_else(|| "`mount` is not installed".to_owned())?;
        let dir = Path::new(STAGING);
        match std::fs::create_dir(dir) {
            Ok(()) => {}
            Err(err) if err.kind() == io::ErrorKind::AlreadyExists => {}
            Err(err) => return Err(format!("cannot create {STAGING}: {err}")),
        }
        let meta = std::fs::symlink_metadata(dir)
            .map_err(|err| format!("cannot inspect {STAGING}: {err}"))?;
        if !meta.is_dir() || meta.uid() != 0 {
            return Err(format!("{STAGING} is not a directory owned by root"));
        }
        std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o755))
            .map_err(|err| format!("cannot set the permissions of {STAGING}: {err}"))?;
        Ok(Staging { unshare })
    }
}

/// One stream's output: the first bytes, and how many more were discarded.
#[derive(Debug, Default)]
struct Captured {
    kept: Vec<u8>,
    dropped: u64,
}

impl Captured {
    /// The kept bytes as text (a character cut at the end is dropped, invalid UTF-8
    /// replaced), with the truncation marker when bytes were discarded.
    fn into_text(self) -> (String, bool) {
        let Captured {
            mut kept,
            mut dropped,
        } = self;
        if dropped > 0 {
            // Cut back to a character boundary when the cap split a character.
            if let Err(err) = std::str::from_utf8(&kept)
                && err.error_len().is_none()
            {
                let cut = kept.len() - err.valid_up_to();
                kept.truncate(err.valid_up_to());
                dropped += u64::try_from(cut).unwrap_or(0);
            }
        }
        let mut text = String::from_utf8_lossy(&kept).into_owned();
        let truncated = dropped > 0;
        if truncated {
            text.push_str(&format!("\n[output truncated: {dropped} bytes more]"));
        }
        (text, truncated)
    }
}

/// Reads a pipe to its end, keeping the first `cap` bytes; signals `flood` once the total
/// passes `flood_limit` (and keeps draining).
async fn read_capped<R: AsyncRead + Unpin>(
    mut pipe: R,
    cap: usize,
    flood_limit: u64,
    flood: Arc<Notify>,
) -> Captured {
    let mut captured = Captured::default();
    let mut buf = vec![0u8; 64 << 10];
    let mut total: u64 = 0;
    let mut flooded = false;
    loop {
        let n = match pipe.read(&mut buf).await {
            Ok(0) | Err(_) => break,
            Ok(n) => n,
        };
        let room = cap.saturating_sub(captured.kept.len());
        let keep = n.min(room);
        captured.kept.extend_from_slice(&buf[..keep]);
        captured.dropped += u64::try_from(n - keep).unwrap_or(0);
        total = total.saturating_add(u64::try_from(n).unwrap_or(0));
        if !flooded && total > flood_limit {
            flooded = true;
            flood.notify_one();
        }
    }
    captured
}

/// Returns once the files under `dir` take more than `bytes` (measured every
/// [`quota::WATCH_INTERVAL`]).
async fn watch_quota(dir: PathBuf, bytes: u64) {
    loop {
        tokio::time::sleep(quota::WATCH_INTERVAL).await;
        let measured = dir.clone();
        let used = tokio::task::spawn_blocking(move || quota::usage(&measured))
            .await
            .unwrap_or(0);
        if used > bytes {
            return;
        }
    }
}

/// Waits for a reader, giving up (and discarding it) when the pipe stays open too long.
async fn collect(reader: Option<tokio::task::JoinHandle<Captured>>) -> Captured {
    let Some(mut reader) = reader else {
        return Captured::default();
    };
    match tokio::time::timeout(DRAIN_GRACE, &mut reader).await {
        Ok(Ok(captured)) => captured,
        Ok(Err(_)) => Captured::default(),
        Err(_) => {
            reader.abort();
            Captured::default()
        }
    }
}

/// The program's exit code from bwrap's `--json-status-fd` records (`{"exit-code": N}`).
fn exit_code_from_status(text: &[u8]) -> Option<i32> {
    status_number(text, "exit-code")
}

/// A number in bwrap's `--json-status-fd` records (`{"child-pid": N, …}`, `{"exit-code": N}`);
/// a record still being written is not read.
fn status_number<T: TryFrom<i64>>(text: &[u8], key: &str) -> Option<T> {
    serde_json::Deserializer::from_slice(text)
        .into_iter::<serde_json::Value>()
        .map_while(Result::ok)
        .find_map(|record| record.get(key).and_then(serde_json::Value::as_i64))
        .and_then(|value| T::try_from(value).ok())
}

/// An exit status as a shell reports it.
fn process_code(status: std::process::ExitStatus) -> i32 {
    status
        .code()
        .or_else(|| status.signal().map(|signal| 128 + signal))
        .unwrap_or(-1)
}

fn millis(duration: Duration) -> u64 {
    u64::try_from(duration.as_millis()).unwrap_or(u64::MAX)
}

/// A program in the usual system directories (not agentd's own `PATH`, which may point at
/// user-writable places).
fn find_program(name: &str) -> Option<PathBuf> {
    ["/usr/bin", "/bin", "/usr/sbin", "/sbin", "/usr/local/bin"]
        .iter()
        .map(|dir| Path::new(dir).join(name))
        .find(|path| path.is_file())
}

/// This process's effective uid, from `/proc/self/status`.
fn effective_uid() -> Option<u32> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|line| line.starts_with("Uid:"))?;
    line.split_whitespace().nth(2)?.parse().ok()
}

/// The bwrap arguments that mirror the host: `/bin`, `/lib`, … as links into `/usr` (or
/// read-only binds on a system without merged `/usr`), and the `/etc` entries in
/// [`ETC_ENTRIES`].
fn host_layout() -> Vec<OsString> {
    let mut args: Vec<OsString> = Vec::new();
    for name in ROOT_LINKS {
        let host = Path::new("/").join(name);
        let Ok(meta) = std::fs::symlink_metadata(&host) else {
            continue;
        };
        if meta.file_type().is_symlink() {
            if let Ok(target) = std::fs::read_link(&host) {
                args.push("--symlink".into());
                args.push(target.into_os_string());
                args.push(host.into_os_string());
            }
        } else if meta.is_dir() {
            args.push("--ro-bind".into());
            args.push(host.clone().into_os_string());
            args.push(host.into_os_string());
        }
    }
    for name in ETC_ENTRIES {
        let host = Path::new("/etc").join(name);
        if std::fs::symlink_metadata(&host).is_ok() {
            args.push("--ro-bind-try".into());
            args.push(host.clone().into_os_string());
            args.push(host.into_os_string());
        }
    }
    args
}

/// Before a run as host uid 65534: checks that uid 65534 can reach the workspace (every
/// parent directory searchable by others) and gives it the workspace's files, which the
/// host-side file tools create as root.
fn prepare_workspace(root: &Path, staged: bool) -> Result<(), String> {
    use std::os::unix::fs::{MetadataExt, PermissionsExt};
    // Staged through a mount point, the workspace's parents do not matter.
    let mut parent = if staged { None } else { root.parent() };
    while let Some(dir) = parent {
        let meta = std::fs::metadata(dir)
            .map_err(|err| format!("sandbox: cannot inspect {}: {err}", dir.display()))?;
        let searchable = meta.permissions().mode() & 0o001 != 0
            || (meta.uid() == SANDBOX_UID && meta.permissions().mode() & 0o100 != 0);
        if !searchable {
            return Err(format!(
                "sandbox: the workspace is out of reach of the sandbox user (uid {SANDBOX_UID}): \
                 {} is not searchable by others (chmod o+x it, or put the workspaces elsewhere)",
                dir.display()
            ));
        }
        parent = dir.parent();
    }
    chown_tree(root)
        .map_err(|err| format!("sandbox: cannot hand the workspace to uid {SANDBOX_UID}: {err}"))
}

/// `lchown`s everything under `dir` (links themselves, never followed) to the sandbox user.
fn chown_tree(dir: &Path) -> io::Result<()> {
    use std::os::unix::fs::MetadataExt;
    let mut pending = vec![dir.to_path_buf()];
    while let Some(path) = pending.pop() {
        let meta = std::fs::symlink_metadata(&path)?;
        if meta.uid() != SANDBOX_UID || meta.gid() != SANDBOX_UID {
            std::os::unix::fs::lchown(&path, Some(SANDBOX_UID), Some(SANDBOX_UID))?;
        }
        if meta.is_dir() {
            for entry in std::fs::read_dir(&path)? {
                pending.push(entry?.path());
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bwrap_status_records_give_the_exit_code() {
        let text = br#"{ "child-pid": 12, "pid-namespace": 4026532181 }
{ "exit-code": 3 }
"#;
        assert_eq!(exit_code_from_status(text), Some(3));
        assert_eq!(exit_code_from_status(br#"{ "child-pid": 12 }"#), None);
        assert_eq!(exit_code_from_status(b""), None);
    }

    #[test]
    fn truncation_keeps_whole_characters_and_says_how_much_was_cut() {
        let captured = Captured {
            kept: "ab\u{e9}".as_bytes()[..3].to_vec(),
            dropped: 10,
        };
        let (text, truncated) = captured.into_text();
        assert!(truncated);
        assert_eq!(text, "ab\n[output truncated: 11 bytes more]");
        let (text, truncated) = Captured {
            kept: b"ok\n".to_vec(),
            dropped: 0,
        }
        .into_text();
        assert!(!truncated);
        assert_eq!(text, "ok\n");
    }

    #[test]
    fn the_command_line_isolates_and_limits() {
        let bwrap = Bwrap {
            bwrap: "/usr/bin/bwrap".into(),
            prlimit: "/usr/bin/prlimit".into(),
            setpriv: Some("/usr/bin/setpriv".into()),
            staging: Some(Staging {
                unshare: "/usr/bin/unshare".into(),
            }),
            cgroups: None,
            layout: vec!["--symlink".into(), "usr/bin".into(), "/bin".into()],
            seccomp: Some(Arc::from(vec![0u8; 8])),
            landlock: Some((
                Helper {
                    program: "/usr/bin/agentd".into(),
                    args: vec!["sandbox-exec".into()],
                },
                "6".into(),
            )),
        };
        let request = RunRequest {
            workspace_root: "/srv/ws/p/c".into(),
            argv: vec!["bash".into(), "-c".into(), "echo hi".into()],
            env: Env::default(),
            limits: Limits {
                memory_mb: 64,
                max_processes: 32,
                ..Limits::default()
            },
        };
        let line: Vec<String> = bwrap
            .command_line(&request, &[], Some(Path::new("/tmp/filter")))
            .into_iter()
            .map(|arg| arg.to_string_lossy().into_owned())
            .collect();
        let has = |arg: &str| line.iter().any(|item| item == arg);
        assert!(has("--unshare-all") && has("--disable-userns") && has("--clearenv"));
        assert!(has("--remount-ro"));
        let seccomp = line.iter().position(|arg| arg == "--seccomp").unwrap();
        assert_eq!(line[seccomp + 1], SECCOMP_FD);
        assert!(has("/tmp/filter"), "the launcher opens the filter file");
        assert!(!has("--share-net"));
        assert!(
            has("--as=67108864") && has("--nproc=32"),
            "rlimit fallback without cgroups"
        );
        assert!(has("--reuid=65534") && has("--no-new-privs"));
        assert!(!line.iter().any(|arg| arg == "/etc"), "never all of /etc");
        // As root, the workspace is staged in a private mount namespace and bound from there.
        let bind = line.iter().position(|arg| arg == "--bind").unwrap();
        assert_eq!(line[bind + 1..bind + 3], [STAGING, WORKSPACE_MOUNT]);
        let unshare = line
            .iter()
            .position(|arg| arg == "/usr/bin/unshare")
            .unwrap();
        assert!(unshare < bind && line[unshare..bind].contains(&"/srv/ws/p/c".to_owned()));
        let tail = &line[line.len() - 14..];
        assert_eq!(
            tail,
            [
                "--",
                HELPER_MOUNT,
                "sandbox-exec",
                "--rw",
                "/workspace",
                "--rw",
                "/tmp",
                "--rw",
                "/dev",
                "--no-network",
                "--",
                "bash",
                "-c",
                "echo hi"
            ]
        );
        assert!(has("--ro-bind-fd") && has("/usr/bin/agentd"));
        let networked = RunRequest {
            limits: Limits {
                network: true,
                ..request.limits.clone()
            },
            ..request
        };
        assert!(
            bwrap
                .command_line(&networked, &[], None)
                .iter()
                .any(|arg| arg == "--share-net")
        );
    }
}
