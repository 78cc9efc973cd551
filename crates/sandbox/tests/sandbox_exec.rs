//! The `execute` tool and the bubblewrap isolation, with real runs: output and exit codes,
//! state between calls, and the walls (network, host files, environment, uid, processes,
//! memory, time, output). Needs `bwrap` (`apt-get install bubblewrap`; `.ci/run` installs
//! it); these tests fail rather than skip without it.
#![expect(
    clippy::unwrap_used,
    clippy::panic,
    reason = "test helpers outside #[test] fns fail the test on setup errors and wrong shapes"
)]

use std::io::Read;
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use engine::hosted::{CallContext, EventSink, FileSink, HostedTool, SharedFile, ToolOutcome};
use protocol::events::EventData;
use protocol::output::{OutputItem, SandboxLanguage, SandboxResults, SandboxStatus};
use sandbox::{Bwrap, Execute, Isolation, Limits, RunOutput, RunRequest, RunStatus, Workspaces};

/// The probed sandbox, shared by the tests of this file.
async fn bwrap() -> Arc<Bwrap> {
    static PROBED: tokio::sync::OnceCell<Arc<Bwrap>> = tokio::sync::OnceCell::const_new();
    PROBED
        .get_or_init(|| async {
            match Bwrap::probe().await {
                Ok(bwrap) => Arc::new(bwrap),
                Err(reason) => panic!("the sandbox does not work here: {reason}"),
            }
        })
        .await
        .clone()
}

/// A workspace root. tempdir makes it 0700: as root, agentd stages the workspace through a
/// mount point, so uid 65534 reaches it anyway.
fn workspaces_root() -> tempfile::TempDir {
    tempfile::tempdir().unwrap()
}

/// A scratch workspace directory for direct runs.
fn scratch() -> (tempfile::TempDir, PathBuf) {
    let root = workspaces_root();
    let dir = root.path().join("ws");
    std::fs::create_dir(&dir).unwrap();
    (root, dir)
}

fn limits() -> Limits {
    Limits {
        timeout: Duration::from_secs(20),
        memory_mb: 256,
        max_processes: 64,
        max_file_bytes: 16 << 20,
        max_output_bytes: 64 << 10,
        network: false,
        workspace_quota: None,
    }
}

async fn run_in(dir: &Path, argv: &[&str], limits: Limits) -> RunOutput {
    bwrap()
        .await
        .run(RunRequest {
            workspace_root: dir.to_path_buf(),
            argv: argv.iter().map(|arg| (*arg).to_owned()).collect(),
            limits,
            env: Default::default(),
        })
        .await
}

async fn python(dir: &Path, code: &str) -> RunOutput {
    run_in(dir, &["python3", "-c", code], limits()).await
}

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

struct Tool {
    execute: Execute,
    events: Events,
    _root: tempfile::TempDir,
}

impl Tool {
    async fn new() -> Tool {
        let root = workspaces_root();
        let workspaces = Arc::new(Workspaces::new(
            root.path().to_path_buf(),
            Duration::from_secs(3600),
        ));
        let isolation: Arc<dyn Isolation> = bwrap().await;
        Tool {
            execute: Execute::new(Ok(isolation), workspaces, limits()),
            events: Events::default(),
            _root: root,
        }
    }

    async fn call(
        &self,
        conversation: &str,
        language: &str,
        code: &str,
    ) -> (ToolOutcome, SandboxResults) {
        let arguments = serde_json::json!({"language": language, "code": code}).to_string();
        let outcome = self
            .execute
            .call(
                &arguments,
                CallContext {
                    events: &self.events,
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
}

#[tokio::test]
async fn python_and_bash_report_stdout_stderr_and_exit_codes() {
    let tool = Tool::new().await;
    let (outcome, item) = tool
        .call(
            "resp_codes",
            "python",
            "import sys\nprint('to stdout')\nprint('to stderr', file=sys.stderr)\nsys.exit(3)",
        )
        .await;
    assert_eq!(item.status, SandboxStatus::Completed, "{outcome:?}");
    assert_eq!(item.language, SandboxLanguage::Python);
    assert_eq!(item.call_id, "call_1");
    assert!(
        item.container_id
            .as_deref()
            .is_some_and(|id| id.starts_with("ctr_"))
    );
    let result = &item.results[0];
    assert_eq!(result.exit_code, 3);
    assert_eq!(result.stdout, "to stdout\n");
    assert_eq!(result.stderr, "to stderr\n");
    assert!(outcome.model_text.contains("status: completed"));
    assert!(outcome.model_text.contains("exit_code: 3"));
    assert!(outcome.model_text.contains("to stdout") && outcome.model_text.contains("to stderr"));
    assert_eq!(outcome.invocations, vec![("sandbox".to_owned(), 1)]);

    let (_, item) = tool
        .call(
            "resp_codes",
            "bash",
            "echo out; echo err >&2; pwd; echo $HOME; exit 7",
        )
        .await;
    let result = &item.results[0];
    assert_eq!(
        (item.status, result.exit_code),
        (SandboxStatus::Completed, 7)
    );
    assert_eq!(result.stdout, "out\n/workspace\n/workspace\n");
    assert_eq!(result.stderr, "err\n");

    let (_, item) = tool
        .call("resp_codes", "python", "raise ValueError('boom')")
        .await;
    assert_eq!(item.status, SandboxStatus::Completed);
    assert_eq!(item.results[0].exit_code, 1);
    assert!(item.results[0].stderr.contains("ValueError: boom"));

    let events = tool.events.0.lock().unwrap();
    let streamed: Vec<_> = events
        .iter()
        .filter_map(|event| match event {
            EventData::SandboxResults { results } => Some(results.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(streamed.len(), 3);
    assert_eq!(streamed[0][0]["stdout"], "to stdout\n");
    assert_eq!(streamed[0][0]["exit_code"], 3);
}

#[tokio::test]
async fn files_persist_between_calls_but_variables_do_not() {
    let tool = Tool::new().await;
    let (_, first) = tool
        .call(
            "resp_state",
            "python",
            "x = 41\nopen('state.txt', 'w').write('42')",
        )
        .await;
    assert_eq!(first.results[0].exit_code, 0, "{first:?}");
    let (_, second) = tool
        .call(
            "resp_state",
            "python",
            "print(open('/workspace/state.txt').read())\nprint('x' in globals())",
        )
        .await;
    assert_eq!(second.results[0].stdout, "42\nFalse\n", "{second:?}");
    assert_eq!(first.container_id, second.container_id);
    let (_, third) = tool.call("resp_state", "bash", "cat state.txt; ls").await;
    assert_eq!(third.results[0].stdout, "42state.txt\n");
    // Another conversation has a workspace of its own.
    let (_, other) = tool.call("resp_other", "bash", "ls -A | wc -l").await;
    assert_eq!(other.results[0].stdout.trim(), "0");
    assert_ne!(other.container_id, first.container_id);
}

#[tokio::test]
async fn the_network_is_unreachable() {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let port = listener.local_addr().unwrap().port();
    let (_root, dir) = scratch();
    let code = format!(
        r#"
import socket, urllib.request
for name, probe in [
    ("loopback", lambda: urllib.request.urlopen("http://127.0.0.1:{port}/", timeout=3)),
    ("dns", lambda: socket.getaddrinfo("example.com", 80)),
    ("outside", lambda: socket.create_connection(("1.1.1.1", 53), timeout=3)),
]:
    try:
        probe()
        print(name, "REACHED")
    except Exception as err:
        print(name, "failed", type(err).__name__)
"#
    );
    let output = python(&dir, &code).await;
    assert_eq!(output.status, RunStatus::Completed, "{output:?}");
    assert!(!output.stdout.contains("REACHED"), "{}", output.stdout);
    assert_eq!(
        output.stdout.matches(" failed ").count(),
        3,
        "{}",
        output.stdout
    );
    let seen = listener.accept();
    assert!(
        seen.is_err(),
        "the test's listener saw a connection from the sandbox"
    );
}

#[tokio::test]
async fn host_files_outside_the_workspace_are_out_of_reach() {
    let secret_dir = tempfile::tempdir().unwrap();
    let secret = secret_dir.path().join("secret.txt");
    std::fs::write(&secret, "top secret").unwrap();
    let (_root, dir) = scratch();
    let code = format!(
        r#"
import os
def attempt(name, action):
    try:
        result = action()
        print(name, "OK", repr(result)[:200])
    except Exception as err:
        print(name, "denied", type(err).__name__)
attempt("root", lambda: os.listdir("/root"))
attempt("secret", lambda: open({secret:?}).read())
attempt("workspace_host_path", lambda: os.listdir({host:?}))
attempt("shadow", lambda: open("/etc/shadow").read())
attempt("write_usr", lambda: open("/usr/evil", "w").write("x"))
attempt("write_etc", lambda: open("/etc/evil", "w").write("x"))
attempt("write_bin", lambda: open("/bin/evil", "w").write("x"))
attempt("sys", lambda: os.listdir("/sys"))
attempt("home", lambda: os.listdir("/home"))
env1 = open("/proc/1/environ", "rb").read()
print("pid1_env", env1.decode(errors="replace").replace("\0", " "))
print("processes", sorted(int(p) for p in os.listdir("/proc") if p.isdigit()))
attempt("write_workspace", lambda: open("/workspace/ok.txt", "w").write("fine"))
attempt("write_tmp", lambda: open("/tmp/ok.txt", "w").write("fine"))
"#,
        secret = secret.display().to_string(),
        host = dir.display().to_string(),
    );
    let output = python(&dir, &code).await;
    assert_eq!(output.status, RunStatus::Completed, "{output:?}");
    let lines: Vec<&str> = output.stdout.lines().collect();
    for name in [
        "root",
        "secret",
        "workspace_host_path",
        "shadow",
        "write_usr",
        "write_etc",
        "write_bin",
        "sys",
        "home",
    ] {
        assert!(
            lines
                .iter()
                .any(|line| line.starts_with(&format!("{name} denied"))),
            "{name} was reachable:\n{}",
            output.stdout
        );
    }
    assert!(lines.contains(&"write_workspace OK 4"), "{}", output.stdout);
    assert!(lines.contains(&"write_tmp OK 4"), "{}", output.stdout);
    // Only the run's own processes exist, and bwrap's init has no host environment.
    let pid1 = lines
        .iter()
        .find(|line| line.starts_with("pid1_env"))
        .unwrap();
    assert!(!pid1.contains("HOME=") && !pid1.contains("CARGO"), "{pid1}");
    assert!(
        output.stdout.contains("processes [1, 2]"),
        "{}",
        output.stdout
    );
    assert!(!output.stdout.contains("top secret"));
    assert_eq!(std::fs::read_to_string(dir.join("ok.txt")).unwrap(), "fine");
    assert!(!Path::new("/usr/evil").exists() && !Path::new("/etc/evil").exists());
}

#[tokio::test]
async fn the_environment_is_cleared() {
    // Edition 2024 makes `set_var` unsafe (forbidden here), so the host environment the
    // test already has stands in for a secret: cargo sets CARGO_* for test binaries.
    let host: Vec<(String, String)> = std::env::vars().collect();
    let (_root, dir) = scratch();
    let output = python(
        &dir,
        "import os\nfor k, v in sorted(os.environ.items()): print(f'{k}={v}')",
    )
    .await;
    assert_eq!(output.status, RunStatus::Completed, "{output:?}");
    let names: Vec<&str> = output
        .stdout
        .lines()
        .filter_map(|line| line.split_once('=').map(|(name, _)| name))
        .collect();
    for name in &names {
        assert!(
            [
                "PATH",
                "HOME",
                "TMPDIR",
                "LANG",
                "MPLBACKEND",
                "LC_CTYPE",
                "PWD",
                "SHLVL",
                "_"
            ]
            .contains(name),
            "unexpected variable {name} in the sandbox:\n{}",
            output.stdout
        );
    }
    for (name, value) in &host {
        let leaked = output
            .stdout
            .lines()
            .any(|line| line == format!("{name}={value}"));
        assert!(!leaked || name == "LANG", "{name} leaked into the sandbox");
    }
    assert!(output.stdout.contains("HOME=/workspace\n"));
}

#[tokio::test]
async fn code_runs_as_uid_65534_without_capabilities() {
    let (_root, dir) = scratch();
    let output = python(
        &dir,
        "import os\nprint(os.getuid(), os.geteuid(), os.getgid(), os.getegid())\n\
         print([l for l in open('/proc/self/status') if l.startswith(('CapEff', 'CapPrm', 'NoNewPrivs'))])\n\
         open('mine.txt', 'w').write('x')",
    )
    .await;
    assert_eq!(output.status, RunStatus::Completed, "{output:?}");
    let mut lines = output.stdout.lines();
    assert_eq!(lines.next(), Some("65534 65534 65534 65534"));
    let caps = lines.next().unwrap();
    assert!(caps.contains("CapEff:\\t0000000000000000"), "{caps}");
    assert!(caps.contains("CapPrm:\\t0000000000000000"), "{caps}");
    // Run as root, agentd drops the host uid too: the file belongs to nobody outside.
    use std::os::unix::fs::MetadataExt;
    let owner = std::fs::metadata(dir.join("mine.txt")).unwrap().uid();
    if std::fs::metadata("/proc/self").unwrap().uid() == 0 {
        assert_eq!(owner, 65534);
    }
    // Nested user namespaces are refused.
    let output = run_in(&dir, &["unshare", "--user", "true"], limits()).await;
    assert_ne!(output.exit_code, 0, "{output:?}");
}

/// Processes on the host whose command line contains `marker`.
fn host_processes_with(marker: &str) -> usize {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return 0;
    };
    entries
        .filter_map(Result::ok)
        .filter(|entry| {
            entry
                .file_name()
                .to_string_lossy()
                .chars()
                .all(|c| c.is_ascii_digit())
        })
        .filter(|entry| {
            let mut cmdline = Vec::new();
            std::fs::File::open(entry.path().join("cmdline"))
                .and_then(|mut file| file.read_to_end(&mut cmdline))
                .is_ok()
                && String::from_utf8_lossy(&cmdline).contains(marker)
        })
        .count()
}

#[tokio::test]
async fn a_fork_bomb_is_contained() {
    let (_root, dir) = scratch();
    // The process limit: forking stops near max_processes.
    let output = python(
        &dir,
        "import os, time\nn = 0\ntry:\n    for _ in range(1000):\n        if os.fork() == 0:\n            time.sleep(60)\n            os._exit(0)\n        n += 1\nexcept OSError as err:\n    print('fork failed', err.errno)\nprint(n)",
    )
    .await;
    assert_eq!(output.status, RunStatus::Completed, "{output:?}");
    assert!(output.stdout.contains("fork failed"), "{output:?}");
    let forked: u32 = output.stdout.lines().last().unwrap().parse().unwrap();
    assert!(forked < 64, "forked {forked} processes");

    // A classic bash fork bomb ends with the time limit, and leaves nothing behind.
    let marker = "forkbomb_marker_7f3a";
    let started = Instant::now();
    let output = run_in(
        &dir,
        &[
            "bash",
            "-c",
            &format!(": {marker}; b() {{ b | b & }}; b; sleep 30"),
        ],
        Limits {
            timeout: Duration::from_secs(3),
            ..limits()
        },
    )
    .await;
    assert!(
        matches!(output.status, RunStatus::TimedOut | RunStatus::Completed),
        "{output:?}"
    );
    assert!(
        started.elapsed() < Duration::from_secs(8),
        "{:?}",
        started.elapsed()
    );
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(
        host_processes_with(marker),
        0,
        "fork bomb processes outlived the run"
    );
    // The host and the workspace still work.
    let output = python(&dir, "print('alive')").await;
    assert_eq!(output.stdout, "alive\n", "{output:?}");
}

#[tokio::test]
async fn memory_beyond_the_cap_fails() {
    let (_root, dir) = scratch();
    let output = run_in(
        &dir,
        &[
            "python3",
            "-c",
            "x = 'x' * (512 << 20)\nprint('allocated', len(x))",
        ],
        Limits {
            memory_mb: 128,
            ..limits()
        },
    )
    .await;
    assert!(!output.stdout.contains("allocated"), "{output:?}");
    let failed = output.status == RunStatus::Failed && output.stderr.contains("memory limit");
    let memory_error = output.exit_code != 0 && output.stderr.contains("MemoryError");
    assert!(failed || memory_error, "{output:?}");
    // The limit is the run's, not the workspace's: a modest allocation works after it.
    let output = python(&dir, "x = 'x' * (32 << 20)\nprint(len(x))").await;
    assert_eq!(output.stdout, format!("{}\n", 32 << 20), "{output:?}");
}

#[tokio::test]
async fn an_infinite_loop_times_out() {
    let (_root, dir) = scratch();
    let started = Instant::now();
    let output = run_in(
        &dir,
        &[
            "python3",
            "-c",
            "print('start', flush=True)\nwhile True:\n    pass",
        ],
        Limits {
            timeout: Duration::from_secs(2),
            ..limits()
        },
    )
    .await;
    let elapsed = started.elapsed();
    assert_eq!(output.status, RunStatus::TimedOut, "{output:?}");
    assert!(
        elapsed >= Duration::from_secs(2) && elapsed < Duration::from_millis(4500),
        "{elapsed:?}"
    );
    assert_eq!(output.stdout, "start\n");
    assert!(output.stderr.contains("time limit"), "{output:?}");
    assert!(output.duration_ms >= 2000);
}

#[tokio::test]
async fn timed_out_runs_are_reported_on_the_item() {
    let root = workspaces_root();
    let workspaces = Arc::new(Workspaces::new(
        root.path().to_path_buf(),
        Duration::from_secs(60),
    ));
    let isolation: Arc<dyn Isolation> = bwrap().await;
    let tool = Tool {
        execute: Execute::new(
            Ok(isolation),
            workspaces,
            Limits {
                timeout: Duration::from_secs(1),
                ..limits()
            },
        ),
        events: Events::default(),
        _root: root,
    };
    let (outcome, item) = tool.call("resp_slow", "bash", "sleep 30").await;
    assert_eq!(item.status, SandboxStatus::TimedOut);
    assert_eq!(item.results[0].status, SandboxStatus::TimedOut);
    assert!(outcome.model_text.contains("status: timed_out"));
}

#[tokio::test]
async fn huge_output_is_truncated_and_a_flood_is_stopped() {
    let (_root, dir) = scratch();
    // Bounded but larger than the cap, on both streams at once: kept, cut, counted.
    let output = python(
        &dir,
        "import sys\nfor _ in range(48):\n    sys.stdout.write('o' * 65536)\n    sys.stderr.write('e' * 65536)",
    )
    .await;
    assert_eq!(output.status, RunStatus::Completed, "{output:?}");
    let more = 48 * 65536 - 65536;
    assert!(output.stdout_truncated && output.stderr_truncated);
    assert!(output.stdout.starts_with("ooo"));
    assert!(
        output
            .stdout
            .ends_with(&format!("\n[output truncated: {more} bytes more]")),
        "{}",
        &output.stdout[output.stdout.len() - 80..]
    );
    assert!(
        output
            .stderr
            .contains(&format!("[output truncated: {more} bytes more]"))
    );

    // Gigabytes: the run is stopped early, not left to its time limit.
    let started = Instant::now();
    let output = python(
        &dir,
        "import sys\nwhile True:\n    sys.stdout.write('x' * 1048576)",
    )
    .await;
    let elapsed = started.elapsed();
    assert_eq!(output.status, RunStatus::Failed, "{:?}", output.stderr);
    assert!(output.stdout_truncated);
    assert!(output.stdout.contains("[output truncated: "));
    assert!(output.stdout.len() < (64 << 10) + 100);
    assert!(
        output.stderr.contains("printed more than"),
        "{}",
        output.stderr
    );
    assert!(elapsed < Duration::from_secs(10), "{elapsed:?}");
}

#[tokio::test]
async fn without_isolation_the_tool_fails_and_runs_nothing() {
    let root = workspaces_root();
    let workspaces = Arc::new(Workspaces::new(
        root.path().to_path_buf(),
        Duration::from_secs(60),
    ));
    let tool = Tool {
        execute: Execute::new(
            Err("bubblewrap (bwrap) is not installed".into()),
            workspaces,
            limits(),
        ),
        events: Events::default(),
        _root: root,
    };
    let (outcome, item) = tool
        .call("resp_none", "bash", "touch /tmp/agentd-should-not-exist")
        .await;
    assert_eq!(item.status, SandboxStatus::Failed);
    assert!(
        outcome
            .model_text
            .contains("bubblewrap (bwrap) is not installed")
    );
    assert!(outcome.model_text.contains("not run"));
    assert!(!Path::new("/tmp/agentd-should-not-exist").exists());
}

#[tokio::test]
async fn bad_arguments_are_told_to_the_model() {
    let tool = Tool::new().await;
    let outcome = tool
        .execute
        .call(
            r#"{"language": "ruby", "code": "puts 1"}"#,
            CallContext {
                events: &tool.events,
                next_source: 1,
                call_id: "call_2",
                conversation: "resp_bad",
                project_id: "proj_test",
                files: &NoFiles,
            },
        )
        .await;
    assert!(
        outcome.model_text.starts_with("error: "),
        "{}",
        outcome.model_text
    );
    assert!(outcome.items.is_empty());
}
