//! Start-up rules: open mode (no API key in the store) is allowed only on loopback.

#![expect(clippy::expect_used, reason = "test helpers fail loudly")]

use agentd_server::ServerError;
use agentd_server::config::{Config, Flags, RawConfig};

fn config(listen: &str, data_dir: &std::path::Path) -> Config {
    let no_env = |_: &str| None;
    let flags = Flags {
        listen: Some(listen.to_owned()),
        data_dir: Some(data_dir.to_owned()),
        database_url: None,
    };
    Config::resolve(RawConfig::default(), &no_env, &flags).expect("config resolves")
}

#[tokio::test]
async fn open_mode_is_refused_off_loopback_until_a_key_exists() {
    let dir = std::env::temp_dir().join(format!("agentd-startup-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);

    // Nothing is bound here: only the start-up decision is checked.
    let refused = agentd_server::build_state(&config("0.0.0.0:0", &dir)).await;
    match refused {
        Err(err @ ServerError::OpenModeNotLoopback(_)) => {
            assert!(err.to_string().contains("agentd keys create"), "{err}");
        }
        Err(other) => panic!("unexpected error: {other}"),
        Ok(_) => panic!("open mode must be refused on a non-loopback address"),
    }
    assert!(
        agentd_server::build_state(&config("127.0.0.1:0", &dir))
            .await
            .is_ok()
    );
    assert!(
        agentd_server::build_state(&config("[::1]:0", &dir))
            .await
            .is_ok()
    );

    let state = agentd_server::build_state(&config("127.0.0.1:0", &dir))
        .await
        .expect("loopback");
    state.engine.create_key("ops").await.expect("key created");
    assert!(
        agentd_server::build_state(&config("0.0.0.0:0", &dir))
            .await
            .is_ok(),
        "with a key in the store any address is allowed"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

fn mode(path: &std::path::Path) -> u32 {
    use std::os::unix::fs::PermissionsExt as _;
    std::fs::metadata(path).expect("stat").permissions().mode() & 0o777
}

/// The data directory and every database file in it (WAL and shared memory included), by
/// name and mode.
fn data_files(dir: &std::path::Path) -> Vec<(String, u32)> {
    let mut files: Vec<(String, u32)> = std::fs::read_dir(dir)
        .expect("data dir readable")
        .map(|entry| entry.expect("entry").path())
        .filter(|path| {
            let name = path.file_name().unwrap_or_default().to_string_lossy();
            name.starts_with("agentd.db") || name.starts_with("index.sqlite")
        })
        .map(|path| {
            let name = path
                .file_name()
                .unwrap_or_default()
                .to_string_lossy()
                .into_owned();
            (name, mode(&path))
        })
        .collect();
    files.sort();
    files
}

/// Regression (issue 13): `agentd.db*` and `index.sqlite*` were created world-readable.
#[tokio::test]
async fn the_data_directory_and_its_database_files_are_private() {
    use std::os::unix::fs::PermissionsExt as _;
    let root = std::env::temp_dir().join(format!("agentd-private-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&root);
    let dir = root.join("data");
    {
        let state = agentd_server::build_state(&config("127.0.0.1:0", &dir))
            .await
            .expect("starts");
        state.engine.create_key("ops").await.expect("a write");
        let files = data_files(&dir);
        let names: Vec<&str> = files.iter().map(|(name, _)| name.as_str()).collect();
        assert!(
            names.contains(&"agentd.db") && names.contains(&"agentd.db-wal"),
            "{names:?}"
        );
        assert!(names.contains(&"index.sqlite"), "{names:?}");
        assert_eq!(mode(&dir), 0o700);
        for (name, mode) in files {
            assert_eq!(mode, 0o600, "{name} is {mode:o}");
        }
    }

    // Looser modes (an older version, a hand-made copy) are tightened at the next start.
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    for (name, _) in data_files(&dir) {
        std::fs::set_permissions(dir.join(name), std::fs::Permissions::from_mode(0o644))
            .expect("chmod");
    }
    agentd_server::build_state(&config("127.0.0.1:0", &dir))
        .await
        .expect("starts again");
    assert_eq!(mode(&dir), 0o700);
    for (name, mode) in data_files(&dir) {
        assert_eq!(mode, 0o600, "{name} is {mode:o} after a restart");
    }
    let _ = std::fs::remove_dir_all(&root);
}

/// Busy threads that keep the CPUs loaded until dropped.
struct CpuLoad {
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
    threads: Vec<std::thread::JoinHandle<()>>,
}

impl CpuLoad {
    fn start(threads: usize) -> CpuLoad {
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let threads = (0..threads)
            .map(|_| {
                let stop = stop.clone();
                std::thread::spawn(move || {
                    let mut x = 0u64;
                    while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                        x = std::hint::black_box(
                            x.wrapping_mul(6364136223846793005).wrapping_add(1),
                        );
                    }
                })
            })
            .collect();
        CpuLoad { stop, threads }
    }
}

impl Drop for CpuLoad {
    fn drop(&mut self) {
        self.stop.store(true, std::sync::atomic::Ordering::Relaxed);
        for thread in self.threads.drain(..) {
            let _ = thread.join();
        }
    }
}

/// Regression (issue 13): on a fresh data directory with a provider configured, agentd
/// sometimes failed to start with "database is locked" (the local search index). Many real
/// servers start at once, each on a fresh directory, while the CPUs are busy; all of them must
/// come up.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn many_servers_start_at_once_on_fresh_data_dirs_under_load() {
    use tokio::io::AsyncBufReadExt as _;

    const ROUNDS: usize = 3;
    const AT_ONCE: usize = 16;
    let root = std::env::temp_dir().join(format!("agentd-starts-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&root);
    let _load = CpuLoad::start(4);
    let mut failures = Vec::new();
    for round in 0..ROUNDS {
        let mut children = Vec::new();
        for i in 0..AT_ONCE {
            let dir = root.join(format!("{round}-{i}"));
            std::fs::create_dir_all(&dir).expect("test dir");
            let log = std::fs::File::create(dir.join("agentd.log")).expect("log file");
            let child = tokio::process::Command::new(env!("CARGO_BIN_EXE_agentd"))
                .args(["serve", "--listen", "127.0.0.1:0", "--data-dir"])
                .arg(dir.join("data"))
                .env("OPENAI_API_KEY", "x")
                .env("OPENAI_BASE_URL", "http://127.0.0.1:9/v1")
                .env("RUST_LOG", "warn")
                .stdout(std::process::Stdio::piped())
                .stderr(log)
                .kill_on_drop(true)
                .spawn()
                .expect("agentd spawns");
            children.push((dir, child));
        }
        for (dir, child) in &mut children {
            let stdout = child.stdout.take().expect("stdout");
            let mut lines = tokio::io::BufReader::new(stdout).lines();
            let first =
                tokio::time::timeout(std::time::Duration::from_secs(120), lines.next_line()).await;
            let started = matches!(&first, Ok(Ok(Some(line))) if line.starts_with("listening on "));
            if !started {
                let log = std::fs::read_to_string(dir.join("agentd.log")).unwrap_or_default();
                failures.push(format!("{}: {first:?}\n{log}", dir.display()));
            }
        }
    }
    let _ = std::fs::remove_dir_all(&root);
    assert!(
        failures.is_empty(),
        "{} of {} starts failed:\n{}",
        failures.len(),
        ROUNDS * AT_ONCE,
        failures.join("\n")
    );
}

/// Open mode is checked afresh for every request: a key created through another replica
/// sharing the database file (or `agentd keys create`) ends it for the very next request,
/// whichever connection answers the check (the file store's inline reader, its pool).
#[tokio::test]
async fn a_key_created_by_another_replica_ends_open_mode_at_the_next_request() {
    use agentd_server::config::StoreLocation;
    use serde_json::json;
    use testkit::{Reply, TestApp};

    let app = TestApp::spawn_with(|config| {
        config.store = StoreLocation::DataDir(config.data_dir.clone());
    })
    .await;
    let ask = json!({"model": "openai/gpt-test", "input": "hi"});
    for _ in 0..3 {
        app.fake.push(Reply::text("open mode"));
        let (status, body) = app.post("/v1/agent", ask.clone()).await;
        assert_eq!(status, 200, "{body}");
    }
    let other = agentd_server::build_state(&config("127.0.0.1:0", &app.data_dir))
        .await
        .expect("a second replica on the same data directory");
    let key = other.engine.create_key("ops").await.expect("key created");
    let (status, body) = app.post("/v1/agent", ask.clone()).await;
    assert_eq!(status, 401, "{body}");
    app.fake.push(Reply::text("with the key"));
    let answer = app
        .client
        .post(app.url("/v1/agent"))
        .bearer_auth(&key)
        .json(&ask)
        .send()
        .await
        .expect("sent");
    assert_eq!(answer.status().as_u16(), 200);
}
