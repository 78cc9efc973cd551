//! Regression tests of the hardening review (issue 13): the cap on concurrent executions,
//! the workspace disk quota, a sandbox whose processes are stopped from inside, and the
//! second isolation layer. Real runs need `bwrap` (`.ci/run` installs it).
#![expect(
    clippy::unwrap_used,
    clippy::panic,
    reason = "test helpers outside #[test] fns fail the test on setup errors and wrong shapes"
)]

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use engine::hosted::{CallContext, EventSink, FileSink, HostedTool, SharedFile, ToolOutcome};
use protocol::events::EventData;
use protocol::output::{OutputItem, SandboxResults};
use sandbox::{Execute, Isolation, Limits, RunOutput, RunRequest, RunStatus, Slots, Workspaces};

#[derive(Default)]
struct Events(Mutex<Vec<EventData>>);

impl EventSink for Events {
    fn emit(&self, event: EventData) {
        self.0.lock().unwrap().push(event);
    }
}

struct NoFiles;

#[async_trait::async_trait]
impl FileSink for NoFiles {
    async fn share(&self, _: &str, _: &str, _: Vec<u8>) -> Result<SharedFile, String> {
        Err("no files in this test".into())
    }
}

/// Calls `execute` in a conversation; the outcome and its `sandbox_results` item.
async fn call(execute: &Execute, conversation: &str, code: &str) -> (ToolOutcome, SandboxResults) {
    let events = Events::default();
    let arguments = serde_json::json!({"language": "bash", "code": code}).to_string();
    let outcome = execute
        .call(
            &arguments,
            CallContext {
                events: &events,
                next_source: 1,
                call_id: "call_1",
                conversation,
                project_id: "proj_test",
                files: &NoFiles,
            },
        )
        .await;
    let item = match outcome.items.as_slice() {
        [OutputItem::SandboxResults(item)] => item.clone(),
        other => panic!("expected one sandbox_results item, got {other:?}"),
    };
    (outcome, item)
}

/// Waits (bounded) until `check` holds.
async fn eventually(what: &str, check: impl Fn() -> bool) {
    for _ in 0..2000 {
        if check() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("timed out waiting for {what}");
}

/// An isolation that counts the runs inside it and keeps each one until the test lets one go.
struct Gate {
    running: AtomicUsize,
    most: AtomicUsize,
    finished: AtomicUsize,
    release: tokio::sync::Semaphore,
}

impl Default for Gate {
    fn default() -> Gate {
        Gate {
            running: AtomicUsize::new(0),
            most: AtomicUsize::new(0),
            finished: AtomicUsize::new(0),
            release: tokio::sync::Semaphore::new(0),
        }
    }
}

#[async_trait::async_trait]
impl Isolation for Gate {
    async fn run(&self, _: RunRequest) -> RunOutput {
        let now = self.running.fetch_add(1, Ordering::SeqCst) + 1;
        self.most.fetch_max(now, Ordering::SeqCst);
        let permit = self.release.acquire().await.unwrap();
        permit.forget();
        self.running.fetch_sub(1, Ordering::SeqCst);
        self.finished.fetch_add(1, Ordering::SeqCst);
        RunOutput {
            status: RunStatus::Completed,
            exit_code: 0,
            stdout: String::new(),
            stderr: String::new(),
            stdout_truncated: false,
            stderr_truncated: false,
            duration_ms: 0,
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_executions_never_exceed_the_cap() {
    const CAP: usize = 3;
    const EXTRA: usize = 4;
    let root = tempfile::tempdir().unwrap();
    let workspaces = Arc::new(Workspaces::new(
        root.path().to_path_buf(),
        Duration::from_secs(3600),
    ));
    let gate = Arc::new(Gate::default());
    let execute = Arc::new(
        Execute::new(
            Ok(gate.clone() as Arc<dyn Isolation>),
            workspaces,
            Limits::default(),
        )
        .with_slots(Slots::new(CAP, Duration::from_secs(600))),
    );
    // Every call in a conversation of its own: only the cap keeps them apart.
    let calls: Vec<_> = (0..CAP + EXTRA)
        .map(|n| {
            let execute = execute.clone();
            tokio::spawn(async move { call(&execute, &format!("resp_{n}"), "true").await })
        })
        .collect();
    eventually("the cap to fill", || {
        gate.running.load(Ordering::SeqCst) == CAP
    })
    .await;
    // Let the runs go one at a time; each frees a slot for one waiting call.
    for done in 1..=CAP + EXTRA {
        gate.release.add_permits(1);
        eventually("a run to finish", || {
            gate.finished.load(Ordering::SeqCst) == done
        })
        .await;
        assert!(gate.most.load(Ordering::SeqCst) <= CAP);
    }
    for call in calls {
        let (_, item) = call.await.unwrap();
        assert_eq!(item.results[0].exit_code, 0);
    }
    assert_eq!(gate.most.load(Ordering::SeqCst), CAP);
}

#[tokio::test]
async fn a_call_that_finds_no_free_slot_in_time_is_told_the_limit() {
    let root = tempfile::tempdir().unwrap();
    let workspaces = Arc::new(Workspaces::new(
        root.path().to_path_buf(),
        Duration::from_secs(3600),
    ));
    let gate = Arc::new(Gate::default());
    let execute = Arc::new(
        Execute::new(
            Ok(gate.clone() as Arc<dyn Isolation>),
            workspaces,
            Limits::default(),
        )
        .with_slots(Slots::new(1, Duration::from_millis(200))),
    );
    let first = {
        let execute = execute.clone();
        tokio::spawn(async move { call(&execute, "resp_a", "true").await })
    };
    eventually("the first run to start", || {
        gate.running.load(Ordering::SeqCst) == 1
    })
    .await;
    let (outcome, item) = call(&execute, "resp_b", "true").await;
    assert_eq!(item.status, protocol::output::SandboxStatus::Failed);
    assert!(
        outcome
            .model_text
            .contains("tools.sandbox.max_concurrent_executions = 1"),
        "{}",
        outcome.model_text
    );
    assert!(outcome.model_text.contains("not run"));
    gate.release.add_permits(1);
    first.await.unwrap();
    assert_eq!(
        gate.finished.load(Ordering::SeqCst),
        1,
        "the refused call never ran"
    );
}

/// The probed sandbox, shared by the tests of this file.
async fn bwrap() -> Arc<sandbox::Bwrap> {
    static PROBED: tokio::sync::OnceCell<Arc<sandbox::Bwrap>> = tokio::sync::OnceCell::const_new();
    PROBED
        .get_or_init(|| async {
            match sandbox::Bwrap::probe().await {
                Ok(bwrap) => Arc::new(bwrap),
                Err(reason) => panic!("the sandbox does not work here: {reason}"),
            }
        })
        .await
        .clone()
}

fn limits() -> Limits {
    Limits {
        timeout: Duration::from_secs(120),
        memory_mb: 256,
        max_processes: 64,
        max_file_bytes: 16 << 20,
        max_output_bytes: 64 << 10,
        network: false,
        workspace_quota: None,
    }
}

async fn run_bash(code: &str) -> RunOutput {
    run(&["bash", "-c", code]).await
}

async fn run(argv: &[&str]) -> RunOutput {
    let root = tempfile::tempdir().unwrap();
    let dir = root.path().join("ws");
    std::fs::create_dir(&dir).unwrap();
    bwrap()
        .await
        .run(RunRequest {
            workspace_root: dir,
            argv: argv.iter().map(|arg| (*arg).to_owned()).collect(),
            limits: limits(),
            env: Default::default(),
        })
        .await
}

#[tokio::test]
async fn a_run_that_stops_itself_fails_at_once_and_says_why() {
    // `kill -STOP 1` is ignored by the kernel (pid 1 of a namespace has no handler for it);
    // the program then stops itself, which leaves no process that could continue it.
    for code in [
        "kill -STOP 1; kill -STOP $$; echo never",
        "python3 -c 'import os, signal; os.kill(os.getpid(), signal.SIGSTOP)'",
        "sleep 600 & kill -STOP -1; kill -STOP $$",
    ] {
        let output = run_bash(code).await;
        assert_eq!(output.status, RunStatus::Failed, "{code}: {output:?}");
        assert!(
            output.stderr.contains("was stopped"),
            "{code}: {}",
            output.stderr
        );
        assert!(!output.stdout.contains("never"));
    }
}

#[tokio::test]
async fn a_stopped_child_that_is_continued_is_left_alone() {
    let output = run_bash(
        "sleep 600 & child=$!; kill -STOP $child; sleep 1; kill -CONT $child; kill $child; \
         wait; echo done",
    )
    .await;
    assert_eq!(output.status, RunStatus::Completed, "{output:?}");
    assert_eq!(output.stdout, "done\n");
}

#[tokio::test]
async fn the_probe_reports_the_seccomp_layer() {
    let layers = bwrap().await.layers();
    assert!(layers.namespaces && layers.seccomp, "{layers:?}");
    assert_eq!(layers.describe(), "bubblewrap namespaces + seccomp filter");
}

#[tokio::test]
async fn calls_the_seccomp_filter_denies_fail_inside_the_sandbox() {
    // Each of these succeeds for an unprivileged process without the filter (`ptrace`
    // with PTRACE_TRACEME, `io_uring_setup` with a zeroed 120-byte parameter block,
    // `keyctl` joining a new session keyring), so EPERM comes from the filter.
    let code = r#"
import ctypes, subprocess, threading
libc = ctypes.CDLL(None, use_errno=True)
def errno_of(result):
    return 0 if result >= 0 else ctypes.get_errno()
print("ptrace", errno_of(libc.ptrace(0, 0, None, None)))
params = ctypes.create_string_buffer(120)
print("io_uring_setup", errno_of(libc.syscall(425, 1, params)))
print("keyctl", errno_of(libc.syscall({keyctl}, 1, None)))
print("mount", errno_of(libc.mount(b"none", b"/tmp", b"tmpfs", 0, None)))
# Threads and processes still start (clone3 answers ENOSYS; the C library falls back).
t = threading.Thread(target=lambda: None); t.start(); t.join()
print("spawn", subprocess.run(["true"]).returncode)
"#
    .replace(
        "{keyctl}",
        if cfg!(target_arch = "x86_64") {
            "250"
        } else {
            "219"
        },
    );
    let output = run(&["python3", "-c", &code]).await;
    assert_eq!(output.status, RunStatus::Completed, "{output:?}");
    let eperm = 1;
    for call in ["ptrace", "io_uring_setup", "keyctl", "mount"] {
        assert!(
            output.stdout.contains(&format!("{call} {eperm}\n")),
            "{call} was not denied: {}\n{}",
            output.stdout,
            output.stderr
        );
    }
    assert!(output.stdout.contains("spawn 0\n"), "{output:?}");
}

const QUOTA: u64 = 64 << 20;

/// `execute` and the file tools over workspaces with a 64 MiB quota enforced by `mode`.
struct Quoted {
    execute: Execute,
    files: Vec<Arc<dyn HostedTool>>,
    workspaces: Arc<Workspaces>,
    _root: tempfile::TempDir,
}

impl Quoted {
    async fn new(mode: sandbox::QuotaMode) -> Quoted {
        let root = tempfile::tempdir().unwrap();
        let workspaces = Arc::new(
            Workspaces::new(root.path().join("ws"), Duration::from_secs(3600))
                .with_quota(sandbox::Quota { bytes: QUOTA, mode }),
        );
        let isolation: Arc<dyn Isolation> = bwrap().await;
        Quoted {
            // Files up to 1 GiB: the quota, not the file size limit, is what stops a run.
            execute: Execute::new(
                Ok(isolation),
                workspaces.clone(),
                Limits {
                    max_file_bytes: 1 << 30,
                    ..limits()
                },
            ),
            files: sandbox::files::file_tools(workspaces.clone(), Default::default()),
            workspaces,
            _root: root,
        }
    }

    async fn file_tool(&self, name: &str, arguments: serde_json::Value) -> ToolOutcome {
        let tool = self
            .files
            .iter()
            .find(|tool| tool.spec().name == name)
            .unwrap();
        let events = Events::default();
        tool.call(
            &arguments.to_string(),
            CallContext {
                events: &events,
                next_source: 1,
                call_id: "call_1",
                conversation: "resp_quota",
                project_id: "proj_test",
                files: &NoFiles,
            },
        )
        .await
    }

    async fn used(&self) -> u64 {
        let workspace = self
            .workspaces
            .get("proj_test", "resp_quota")
            .await
            .unwrap();
        sandbox::quota::usage(&workspace.root)
    }
}

#[test]
fn workspaces_get_file_systems_of_their_own_here() {
    // CI runs as root with loop devices, as production hosts that want the exact bound do.
    let root = tempfile::tempdir().unwrap();
    assert_eq!(sandbox::quota::probe_filesystem(root.path()), Ok(()));
}

#[tokio::test]
async fn an_execution_writing_2_gb_is_stopped_at_the_quota_by_the_file_system() {
    let quoted = Quoted::new(sandbox::QuotaMode::Filesystem).await;
    let (outcome, item) = call(
        &quoted.execute,
        "resp_quota",
        "dd if=/dev/zero of=big bs=1M count=2048 status=none; echo \"dd: $?\"",
    )
    .await;
    let result = &item.results[0];
    assert!(result.stdout.contains("dd: 1"), "{result:?}");
    assert!(
        result
            .stderr
            .contains("disk quota is 64 MiB (tools.sandbox.workspace_quota_mb)"),
        "{}",
        result.stderr
    );
    assert!(outcome.model_text.contains("disk quota is 64 MiB"));
    let used = quoted.used().await;
    assert!(used <= QUOTA, "the workspace holds {used} bytes");
    assert!(
        used > QUOTA / 2,
        "the run did write up to the quota ({used})"
    );
    // The file tools meet the same wall, with the same message.
    let outcome = quoted
        .file_tool(
            "write",
            serde_json::json!({"path": "more.txt", "content": "x".repeat(4 << 20)}),
        )
        .await;
    assert!(
        outcome.model_text.contains("disk quota is 64 MiB"),
        "{}",
        outcome.model_text
    );
    // Room made, room used.
    call(&quoted.execute, "resp_quota", "rm big").await;
    let outcome = quoted
        .file_tool(
            "write",
            serde_json::json!({"path": "more.txt", "content": "x".repeat(4 << 20)}),
        )
        .await;
    assert!(
        outcome.model_text.starts_with("Created"),
        "{}",
        outcome.model_text
    );
}

#[tokio::test]
async fn without_loop_devices_a_run_past_the_quota_is_measured_and_stopped() {
    let quoted = Quoted::new(sandbox::QuotaMode::Watch).await;
    // 2 GB in files of 32 MB: no single file reaches the quota, the sum does.
    let (_, item) = call(
        &quoted.execute,
        "resp_quota",
        "for i in $(seq 64); do head -c 33554432 /dev/zero > f$i; done; echo finished",
    )
    .await;
    let result = &item.results[0];
    assert_eq!(
        item.status,
        protocol::output::SandboxStatus::Failed,
        "{result:?}"
    );
    assert!(!result.stdout.contains("finished"));
    assert!(
        result
            .stderr
            .contains("[killed: the workspace is full: its disk quota is 64 MiB"),
        "{}",
        result.stderr
    );
    // Stopped within one measuring interval of the quota: far below the 2 GB it tried.
    let used = quoted.used().await;
    assert!(used < 1 << 30, "the workspace holds {used} bytes");
    // One file larger than the quota is cut by the file size limit (RLIMIT_FSIZE is at most
    // the quota), or by the measurement, whichever comes first.
    let (_, item) = call(
        &quoted.execute,
        "resp_quota",
        "rm -f f*; dd if=/dev/zero of=one bs=1M count=2048 status=none; echo \"dd: $?\"",
    )
    .await;
    assert!(
        !item.results[0].stdout.contains("dd: 0"),
        "{:?}",
        item.results[0]
    );
    let used = quoted.used().await;
    assert!(
        used <= QUOTA + (1 << 20),
        "the workspace holds {used} bytes"
    );
    // The file tools measure before they write.
    let outcome = quoted
        .file_tool(
            "write",
            serde_json::json!({"path": "more.txt", "content": "x".repeat(8 << 20)}),
        )
        .await;
    assert!(
        outcome.model_text.contains("disk quota is 64 MiB"),
        "{}",
        outcome.model_text
    );
}

#[tokio::test]
async fn an_expired_workspace_file_system_is_unmounted_and_its_image_removed() {
    let root = tempfile::tempdir().unwrap();
    let workspaces =
        Workspaces::new(root.path().join("ws"), Duration::ZERO).with_quota(sandbox::Quota {
            bytes: QUOTA,
            mode: sandbox::QuotaMode::Filesystem,
        });
    let dir = {
        let workspace = workspaces.get("proj_test", "resp_old").await.unwrap();
        std::fs::write(workspace.root.join("f.txt"), "x").unwrap();
        workspace.root.clone()
    };
    let image = dir.with_extension("img");
    assert!(image.is_file());
    let mounts = || std::fs::read_to_string("/proc/self/mountinfo").unwrap();
    assert!(mounts().contains(dir.to_str().unwrap()));
    tokio::time::sleep(Duration::from_millis(10)).await;
    assert_eq!(workspaces.expire_idle().await, 1);
    assert!(!dir.exists() && !image.exists());
    assert!(!mounts().contains(dir.to_str().unwrap()));
}

/// The sandbox with the Landlock layer required (the crate's helper program stands in for
/// `agentd sandbox-exec`).
async fn landlocked() -> Arc<sandbox::Bwrap> {
    static PROBED: tokio::sync::OnceCell<Arc<sandbox::Bwrap>> = tokio::sync::OnceCell::const_new();
    PROBED
        .get_or_init(|| async {
            let helper = sandbox::Helper {
                program: env!("CARGO_BIN_EXE_agentd-sandbox-exec").into(),
                args: Vec::new(),
            };
            let options = sandbox::ProbeOptions {
                landlock: sandbox::LandlockLayer::Require(helper),
                ..Default::default()
            };
            match sandbox::Bwrap::probe_with(options).await {
                Ok(bwrap) => Arc::new(bwrap),
                Err(reason) => panic!("the sandbox with Landlock does not work here: {reason}"),
            }
        })
        .await
        .clone()
}

async fn run_with(bwrap: &sandbox::Bwrap, code: &str) -> RunOutput {
    let root = tempfile::tempdir().unwrap();
    let dir = root.path().join("ws");
    std::fs::create_dir(&dir).unwrap();
    bwrap
        .run(RunRequest {
            workspace_root: dir,
            argv: vec!["bash".into(), "-c".into(), code.into()],
            limits: limits(),
            env: Default::default(),
        })
        .await
}

#[tokio::test]
async fn the_probe_reports_the_landlock_layer_where_the_kernel_has_it() {
    let layers = landlocked().await.layers();
    assert!(layers.seccomp);
    let abi = layers.landlock.clone().expect("Landlock in force");
    assert!(
        layers
            .describe()
            .ends_with(&format!("+ Landlock (ABI {abi})")),
        "{}",
        layers.describe()
    );
}

#[tokio::test]
async fn landlock_refuses_what_the_mounts_and_the_filter_allow() {
    // Each line succeeds in the sandbox without Landlock: writing the process's own name in
    // /proc, signalling the sandbox's init (the kernel ignores the STOP), connecting to the
    // sandbox's own loopback (refused: nothing listens).
    let code = r#"
echo probe > /proc/self/comm 2>/dev/null; echo "comm $?"
kill -CONT 1 2>/dev/null; echo "signal $?"
python3 -c '
import errno, socket
try:
    socket.create_connection(("127.0.0.1", 9), timeout=5)
except OSError as err:
    print("connect", errno.errorcode.get(err.errno, err.errno))
'
echo ok > /workspace/file && cat /workspace/file && echo tmp > /tmp/x && cat /tmp/x
"#;
    let plain = run_with(&*bwrap().await, code).await;
    assert!(
        plain.stdout.contains("comm 0\n")
            && plain.stdout.contains("signal 0\n")
            && plain.stdout.contains("connect ECONNREFUSED"),
        "{plain:?}"
    );
    let output = run_with(&*landlocked().await, code).await;
    assert_eq!(output.status, RunStatus::Completed, "{output:?}");
    assert!(output.stdout.contains("comm 1\n"), "{output:?}");
    assert!(output.stdout.contains("signal 1\n"), "{output:?}");
    assert!(output.stdout.contains("connect EACCES"), "{output:?}");
    assert!(output.stdout.ends_with("ok\ntmp\n"), "{output:?}");
}
