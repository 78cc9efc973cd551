//! Hostile connections (issue 13): idle connections, half-sent request heads and slowly sent
//! bodies, more of them than the server has descriptors, do not take it down: `/health` still
//! answers while they are open, and every one of them is closed by the server in bounded time.
//! Run against the real binary under a 1,024 open-file limit.

#![expect(clippy::unwrap_used, reason = "test helpers fail loudly")]

use std::io::{BufRead as _, BufReader};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::net::TcpStream;
use tokio::task::JoinSet;

/// `agentd serve` with soft and hard open-file limits of 1,024.
struct Agentd {
    child: Child,
    addr: String,
    dir: PathBuf,
}

impl Agentd {
    fn spawn(config: &str) -> Agentd {
        let dir = std::env::temp_dir().join(format!("agentd-connections-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let config_path = dir.join("agentd.toml");
        std::fs::write(&config_path, config).unwrap();
        let mut child = Command::new("sh")
            .arg("-c")
            .arg(r#"ulimit -n 1024 && exec "$0" "$@""#)
            .arg(env!("CARGO_BIN_EXE_agentd"))
            .args(["serve", "--listen", "127.0.0.1:0", "--data-dir"])
            .arg(dir.join("data"))
            .arg("--config")
            .arg(&config_path)
            .env("RUST_LOG", "info,sqlx=warn")
            .stdout(Stdio::piped())
            .stderr(std::fs::File::create(dir.join("agentd.log")).unwrap())
            .spawn()
            .unwrap();
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        let Some(addr) = line.trim().strip_prefix("listening on http://") else {
            let log = std::fs::read_to_string(dir.join("agentd.log")).unwrap_or_default();
            unreachable!("agentd did not start: {line:?}\n{log}");
        };
        Agentd {
            addr: addr.to_owned(),
            child,
            dir,
        }
    }

    fn log(&self) -> String {
        std::fs::read_to_string(self.dir.join("agentd.log")).unwrap_or_default()
    }
}

impl Drop for Agentd {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// What a hostile client sends before it stops.
#[derive(Clone, Copy, Debug)]
enum Hostile {
    /// Connects and sends nothing.
    Idle,
    /// Half a request head.
    HalfHead,
    /// A full head announcing 100 kB of body, then a few bytes of it.
    SlowBody,
}

impl Hostile {
    fn bytes(self) -> &'static [u8] {
        match self {
            Hostile::Idle => b"",
            Hostile::HalfHead => b"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ",
            Hostile::SlowBody => {
                b"POST /v1/responses HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: 100000\r\n\r\n{\"model\":"
            }
        }
    }
}

/// GET /health on a new connection, within `within`.
async fn health(addr: &str, within: Duration) -> Result<u16, String> {
    let response = testkit::http_client()
        .get(format!("http://{addr}/health"))
        .timeout(within)
        .send()
        .await
        .map_err(|err| format!("{err:?}"))?;
    Ok(response.status().as_u16())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hostile_connections_are_closed_and_health_still_answers() {
    // This process needs more than 1,100 descriptors of its own.
    agentd_server::fdlimit::raise_open_files_limit().unwrap();
    let agentd = Agentd::spawn("[http]\nidle_timeout_ms = 2000\nbody_timeout_ms = 3000\n");
    assert_eq!(health(&agentd.addr, Duration::from_secs(10)).await, Ok(200));

    let kinds = [Hostile::Idle, Hostile::HalfHead, Hostile::SlowBody];
    let mut sockets = Vec::new();
    for i in 0..1_100 {
        let kind = kinds[i % kinds.len()];
        // A connection the server has not accepted yet waits in the kernel's queue: connecting
        // succeeds either way.
        let mut tcp =
            tokio::time::timeout(Duration::from_secs(10), TcpStream::connect(&agentd.addr))
                .await
                .unwrap_or_else(|_| unreachable!("connection {i} not even queued"))
                .unwrap();
        tcp.write_all(kind.bytes()).await.unwrap();
        sockets.push((kind, tcp));
    }

    // While all of them are open (or being churned), /health answers.
    let status = health(&agentd.addr, Duration::from_secs(30)).await;
    assert_eq!(status, Ok(200), "log:\n{}", agentd.log());

    // Every hostile connection is closed by the server: each read ends (EOF or reset), after
    // at most an answer (the slow bodies' 408).
    let mut reads = JoinSet::new();
    for (kind, mut tcp) in sockets {
        reads.spawn(async move {
            let mut answer = Vec::new();
            let ended = tokio::time::timeout(Duration::from_secs(60), async {
                let mut buf = [0u8; 4096];
                loop {
                    match tcp.read(&mut buf).await {
                        Ok(0) | Err(_) => break,
                        Ok(n) => answer.extend_from_slice(&buf[..n]),
                    }
                }
            })
            .await;
            (
                kind,
                ended.is_ok(),
                String::from_utf8_lossy(&answer).into_owned(),
            )
        });
    }
    let mut still_open = Vec::new();
    while let Some(result) = reads.join_next().await {
        let (kind, closed, answer) = result.unwrap();
        if !closed {
            still_open.push(kind);
        }
        assert!(
            answer.is_empty() || answer.starts_with("HTTP/1.1 408"),
            "{kind:?} got {answer:?}"
        );
    }
    assert!(
        still_open.is_empty(),
        "never closed: {} ({:?}…)",
        still_open.len(),
        still_open.first()
    );
    assert_eq!(health(&agentd.addr, Duration::from_secs(10)).await, Ok(200));
    let log = agentd.log();
    assert!(!log.contains("out of file descriptors"), "{log}");
}
