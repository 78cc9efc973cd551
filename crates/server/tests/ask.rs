//! `agentd ask` against a real agentd (in-process, on a real socket) with the scripted fake
//! model: the real binary runs under a pseudo-terminal (what a user at a terminal sees: progress
//! lines, colour, the approval prompt answered by typing) or with pipes (plain lines, `--json`,
//! exit statuses). MCP servers are the Python fixtures; only the model is scripted.

#![expect(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    reason = "test helpers fail loudly"
)]

use std::io::{Read as _, Write as _};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::response::{Html, IntoResponse};
use axum::routing::get;
use serde_json::{Value, json};
use testkit::mcp::{McpFixture, Transport};
use testkit::{Gate, Reply, TestApp};

const MODEL: &str = "openai/gpt-test";
const WAIT: Duration = Duration::from_secs(30);

/// `agentd ask` with the environment's defaults cleared.
fn ask_command(args: &[&str]) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_agentd"));
    command
        .arg("ask")
        .args(args)
        .env_remove("AGENTD_URL")
        .env_remove("AGENTD_API_KEY")
        .env_remove("AGENTD_MODEL")
        .env_remove("NO_COLOR")
        .env("TERM", "xterm-256color");
    command
}

/// `agentd ask` whose stdin, stdout and stderr are one pseudo-terminal.
struct Pty {
    child: Child,
    /// Everything the terminal showed so far.
    screen: Arc<Mutex<Vec<u8>>>,
    /// The master side, for typing.
    keyboard: std::fs::File,
}

impl Pty {
    fn spawn(args: &[&str]) -> Pty {
        use rustix::pty::{OpenptFlags, grantpt, openpt, ptsname, unlockpt};
        let master = openpt(OpenptFlags::RDWR | OpenptFlags::NOCTTY).expect("openpt");
        grantpt(&master).expect("grantpt");
        unlockpt(&master).expect("unlockpt");
        let name = ptsname(&master, Vec::new()).expect("ptsname");
        let child = {
            let slave = std::fs::OpenOptions::new()
                .read(true)
                .write(true)
                .open(name.to_str().expect("pts path"))
                .expect("open the pty slave");
            let mut command = ask_command(args);
            command
                .stdin(Stdio::from(slave.try_clone().unwrap()))
                .stdout(Stdio::from(slave.try_clone().unwrap()))
                .stderr(Stdio::from(slave));
            command.spawn().expect("spawn agentd ask")
            // The command, and with it our copies of the slave, are dropped here.
        };
        let mut reader = std::fs::File::from(master);
        let keyboard = reader.try_clone().unwrap();
        let screen = Arc::new(Mutex::new(Vec::new()));
        let sink = screen.clone();
        std::thread::spawn(move || {
            let mut buffer = [0u8; 4096];
            // Ends with EIO once the child and every copy of the slave are gone.
            while let Ok(n @ 1..) = reader.read(&mut buffer) {
                sink.lock().unwrap().extend_from_slice(&buffer[..n]);
            }
        });
        Pty {
            child,
            screen,
            keyboard,
        }
    }

    fn screen(&self) -> String {
        String::from_utf8_lossy(&self.screen.lock().unwrap()).into_owned()
    }

    /// Waits (bounded) until the screen shows `needle` `times` times; returns the screen.
    async fn wait_for_n(&self, needle: &str, times: usize) -> String {
        let deadline = tokio::time::Instant::now() + WAIT;
        loop {
            let screen = self.screen();
            if screen.matches(needle).count() >= times {
                return screen;
            }
            if tokio::time::Instant::now() > deadline {
                panic!("the terminal never showed {needle:?} ({times}×); it shows:\n{screen:?}");
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    async fn wait_for(&self, needle: &str) -> String {
        self.wait_for_n(needle, 1).await
    }

    fn type_line(&mut self, line: &str) {
        self.keyboard
            .write_all(format!("{line}\r").as_bytes())
            .unwrap();
    }

    /// Waits (bounded) for the exit status; returns it with the whole screen.
    async fn exit(mut self) -> (i32, String) {
        let deadline = tokio::time::Instant::now() + WAIT;
        loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                // The reader thread may still be draining the last bytes.
                tokio::time::sleep(Duration::from_millis(100)).await;
                return (status.code().unwrap_or(-1), self.screen());
            }
            if tokio::time::Instant::now() > deadline {
                let _ = self.child.kill();
                panic!(
                    "agentd ask did not exit; the terminal shows:\n{:?}",
                    self.screen()
                );
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
}

/// What a run with pipes printed.
struct Piped {
    code: i32,
    stdout: String,
    stderr: String,
}

/// `agentd ask` with stdin from /dev/null and stdout and stderr captured.
async fn ask_piped(args: &[&str]) -> Piped {
    let mut command = tokio::process::Command::from(ask_command(args));
    command
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    let output = tokio::time::timeout(WAIT, command.output())
        .await
        .expect("agentd ask exits in time")
        .expect("agentd ask runs");
    Piped {
        code: output.status.code().unwrap_or(-1),
        stdout: String::from_utf8(output.stdout).unwrap(),
        stderr: String::from_utf8(output.stderr).unwrap(),
    }
}

/// Serves `router` on 127.0.0.1:0; returns its base URL.
async fn serve(router: axum::Router) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        let _ = axum::serve(listener, router).await;
    });
    format!("http://{addr}")
}

/// A SearxNG JSON API answering one result, and a page to fetch; returns their base URL.
async fn web() -> String {
    serve(
        axum::Router::new()
            .route(
                "/search",
                get(|| async {
                    axum::Json(json!({"results": [
                        {"url": "https://www.rust-lang.org/", "title": "Rust Programming Language",
                         "content": "A language empowering everyone to build reliable and efficient software."}
                    ]}))
                    .into_response()
                }),
            )
            .route(
                "/article",
                get(|| async {
                    Html("<html><head><title>Octopus</title></head><body><article><p>An octopus has three hearts.</p></article></body></html>")
                }),
            ),
    )
    .await
}

/// agentd allowed to reach loopback servers (the fixtures, the pages).
async fn app(searxng: Option<String>) -> TestApp {
    TestApp::spawn_with(|config| {
        config.allow_private = vec!["127.0.0.0/8".to_owned()];
        config.web_search.searxng_url = searxng;
    })
    .await
}

/// The tool results (role `tool`) the model received in its `n`-th request.
fn tool_results(app: &TestApp, n: usize) -> Vec<String> {
    app.fake.requests()[n]["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "tool")
        .map(|m| m["content"].as_str().unwrap_or_default().to_owned())
        .collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn a_terminal_shows_searches_fetches_the_answer_sources_and_usage() {
    let web = web().await;
    let app = app(Some(web.clone())).await;
    let page = format!("{web}/article");
    app.fake.push(
        Reply::tool_calls(vec![
            ("call_1", "web_search", r#"{"queries":["rust language"]}"#),
            ("call_2", "fetch_url", &json!({"urls": [page]}).to_string()),
        ])
        .usage(100, 10),
    );
    // The answer waits until the test has seen the spinner.
    let gate = Gate::new();
    app.fake.push(
        Reply::text_chunks(["Rust builds ", "reliable software [1]."])
            .usage(20, 2)
            .wait_for(&gate),
    );
    let pty = Pty::spawn(&[
        "--url",
        &app.base_url,
        "--model",
        MODEL,
        "--tool",
        "web_search",
        "--tool",
        "fetch_url",
        "--usage",
        "What is Rust?",
    ]);
    pty.wait_for("searching the web: rust language").await;
    pty.wait_for(&format!("fetching: {page}")).await;
    pty.wait_for("read 1 pages").await;
    // While the model thinks, a spinner turns on the terminal's last line.
    pty.wait_for("\u{1b}[2K⠙").await;
    gate.open();
    pty.wait_for("Rust builds reliable software [1].").await;
    let (code, screen) = pty.exit().await;
    assert_eq!(code, 0, "{screen:?}");
    assert!(screen.contains("found 1 results"), "{screen:?}");
    assert!(
        screen.contains("[1] Rust Programming Language https://www.rust-lang.org/"),
        "{screen:?}"
    );
    assert!(
        screen.contains("usage: 120 input + 12 output = 132 tokens"),
        "{screen:?}"
    );
    assert!(
        screen.contains("tool calls: fetch_url ×1, search_web ×1"),
        "{screen:?}"
    );
    // A terminal gets colour.
    assert!(screen.contains("\u{1b}["), "{screen:?}");
    // Progress comes before the answer, the sources after it.
    let answer = screen.find("Rust builds").unwrap();
    assert!(screen.find("searching the web").unwrap() < answer);
    assert!(screen.find("Sources:").unwrap() > answer);
}

/// A run whose model calls `files.delete_file` on the annotated fixture.
fn delete_call(path: &str, id: &str) -> Reply {
    Reply::tool_calls(vec![(
        id,
        "files__delete_file",
        &json!({"path": path}).to_string(),
    )])
}

#[tokio::test(flavor = "multi_thread")]
async fn approvals_are_asked_once_and_always_remembers_the_tool() {
    let app = app(None).await;
    let fixture = McpFixture::start("annotated", Transport::StreamableHttp).await;
    app.fake.push(delete_call("a.txt", "call_1"));
    app.fake.push(delete_call("b.txt", "call_2"));
    app.fake.push(delete_call("c.txt", "call_3"));
    app.fake.push(Reply::text("Deleted all three."));
    let mcp = format!("files={}", fixture.url);
    let mut pty = Pty::spawn(&[
        "--url",
        &app.base_url,
        "--model",
        MODEL,
        "--mcp",
        &mcp,
        "delete the old files",
    ]);
    pty.wait_for("mcp files: 4 tools").await;
    pty.wait_for("files wants to call delete_file with:").await;
    assert!(pty.screen().contains(r#""path": "a.txt""#));
    assert!(fixture.calls().is_empty(), "nothing runs before approval");
    pty.type_line("y");
    pty.wait_for("mcp call files.delete_file {\"path\":\"a.txt\"} done")
        .await;
    // The next call of the same tool is asked again; "always" covers the rest of the session.
    pty.wait_for_n("files wants to call delete_file with:", 2)
        .await;
    pty.type_line("a");
    pty.wait_for("Deleted all three.").await;
    let (code, screen) = pty.exit().await;
    assert_eq!(code, 0, "{screen:?}");
    assert_eq!(
        screen.matches("wants to call delete_file").count(),
        2,
        "{screen:?}"
    );
    assert!(
        screen.contains("mcp call files.delete_file {\"path\":\"c.txt\"} done"),
        "{screen:?}"
    );
    // "Always" travels as the server's own policy: the third call was not even asked about.
    assert_eq!(
        screen.matches("approval needed: files.delete_file").count(),
        2,
        "{screen:?}"
    );
    assert!(
        app.fake.requests()[3]["messages"]
            .to_string()
            .contains("c.txt"),
        "the model saw the third call's result"
    );
    let deleted: Vec<Value> = fixture.calls().into_iter().map(|(_, args)| args).collect();
    assert_eq!(
        deleted,
        [
            json!({"path": "a.txt"}),
            json!({"path": "b.txt"}),
            json!({"path": "c.txt"})
        ]
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_denial_with_a_reason_reaches_the_model_and_nothing_runs() {
    let app = app(None).await;
    let fixture = McpFixture::start("annotated", Transport::StreamableHttp).await;
    app.fake.push(delete_call("old.txt", "call_1"));
    app.fake.push(Reply::text("I left old.txt alone."));
    let mcp = format!("files={}", fixture.url);
    let mut pty = Pty::spawn(&[
        "--url",
        &app.base_url,
        "--model",
        MODEL,
        "--mcp",
        &mcp,
        "delete old.txt",
    ]);
    pty.wait_for("approve? [y] once  [a] always for this tool  [n] deny")
        .await;
    pty.type_line("maybe");
    pty.wait_for("please answer y, a or n").await;
    pty.type_line("n");
    pty.wait_for("reason (optional").await;
    pty.type_line("that file is still needed");
    pty.wait_for("I left old.txt alone.").await;
    let (code, screen) = pty.exit().await;
    assert_eq!(code, 0, "{screen:?}");
    assert!(
        screen.contains("denied files.delete_file: that file is still needed"),
        "{screen:?}"
    );
    assert!(fixture.calls().is_empty());
    let told = &tool_results(&app, 1)[0];
    assert!(told.contains("that file is still needed"), "{told}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_pipe_gets_plain_lines_and_approvals_are_denied_without_a_terminal() {
    let app = app(None).await;
    let fixture = McpFixture::start("annotated", Transport::StreamableHttp).await;
    app.fake.push(delete_call("old.txt", "call_1"));
    app.fake.push(Reply::text("Nobody approved it."));
    let mcp = format!("files={}", fixture.url);
    let run = ask_piped(&[
        "--url",
        &app.base_url,
        "--model",
        MODEL,
        "--mcp",
        &mcp,
        "delete old.txt",
    ])
    .await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(run.stdout, "Nobody approved it.\n");
    assert!(
        run.stderr.contains("· mcp files: 4 tools\n"),
        "{}",
        run.stderr
    );
    assert!(
        run.stderr
            .contains("denied files.delete_file: stdin is not a terminal"),
        "{}",
        run.stderr
    );
    assert!(!run.stdout.contains('\u{1b}') && !run.stderr.contains('\u{1b}'));
    assert!(!run.stderr.contains('\r'), "no spinner: {:?}", run.stderr);
    assert!(fixture.calls().is_empty());
    assert!(tool_results(&app, 1)[0].contains("no terminal"));
}

#[tokio::test(flavor = "multi_thread")]
async fn a_function_script_answers_the_call_and_the_model_reads_its_output() {
    let app = app(None).await;
    app.fake.push(Reply::tool_calls(vec![(
        "call_1",
        "get_weather",
        r#"{"city":"Paris"}"#,
    )]));
    app.fake.push(Reply::text("It is sunny in Paris."));
    let pty = Pty::spawn(&[
        "--url",
        &app.base_url,
        "--model",
        MODEL,
        "--function",
        "get_weather=printf 'sunny, asked with '; cat",
        "Weather in Paris?",
    ]);
    pty.wait_for("function get_weather {\"city\":\"Paris\"}")
        .await;
    pty.wait_for("It is sunny in Paris.").await;
    let (code, screen) = pty.exit().await;
    assert_eq!(code, 0, "{screen:?}");
    let offered = app.fake.requests()[0]["tools"].to_string();
    assert!(offered.contains("get_weather"), "{offered}");
    assert_eq!(
        tool_results(&app, 1),
        [r#"sunny, asked with {"city":"Paris"}"#]
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn json_prints_the_response_object_and_continue_follows_up() {
    let app = app(None).await;
    app.fake.push(Reply::text("Paris."));
    let first = ask_piped(&[
        "--url",
        &app.base_url,
        "--model",
        MODEL,
        "--json",
        "Capital of France?",
    ])
    .await;
    assert_eq!(first.code, 0, "{}", first.stderr);
    let response: Value = serde_json::from_str(&first.stdout).expect("stdout is one JSON object");
    assert_eq!(response["object"], "response");
    assert_eq!(response["status"], "completed");
    assert_eq!(response["output"][0]["content"][0]["text"], "Paris.");
    let id = response["id"].as_str().unwrap();
    assert!(first.stderr.contains(id), "{}", first.stderr);

    app.fake.push(Reply::text("About 2 million."));
    let second = ask_piped(&[
        "--url",
        &app.base_url,
        "--model",
        MODEL,
        "--continue",
        id,
        "And its population?",
    ])
    .await;
    assert_eq!(second.code, 0, "{}", second.stderr);
    assert_eq!(second.stdout, "About 2 million.\n");
    let history = app.fake.requests()[1]["messages"].to_string();
    assert!(
        history.contains("Capital of France?") && history.contains("Paris."),
        "{history}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn exit_statuses_say_completed_failed_or_usage_error() {
    let app = app(None).await;
    // 1: the run failed (the model's upstream refused), with the error on stderr.
    app.fake.push(Reply::error(400, "the model refused"));
    let failed = ask_piped(&["--url", &app.base_url, "--model", MODEL, "hi"]).await;
    assert_eq!(failed.code, 1, "{}", failed.stderr);
    assert!(
        failed.stderr.contains("the run ended failed"),
        "{}",
        failed.stderr
    );
    assert!(failed.stdout.is_empty());
    // 1: the server refused the request (HTTP error), named.
    let refused = ask_piped(&["--url", &app.base_url, "--model", "nope/x", "hi"]).await;
    assert_eq!(refused.code, 1, "{}", refused.stderr);
    assert!(refused.stderr.contains("HTTP 400"), "{}", refused.stderr);
    // 1: nothing listens there.
    let port = testkit::mcp::free_port();
    let unreachable = ask_piped(&["--url", &format!("http://127.0.0.1:{port}"), "hi"]).await;
    assert_eq!(unreachable.code, 1);
    assert!(
        unreachable.stderr.contains("cannot reach"),
        "{}",
        unreachable.stderr
    );
    // 2: usage errors.
    let missing = ask_piped(&["--url", &app.base_url]).await;
    assert_eq!(missing.code, 2, "{}", missing.stderr);
    let bad = ask_piped(&["--function", "no-command", "hi"]).await;
    assert_eq!(bad.code, 2, "{}", bad.stderr);
    assert!(bad.stderr.contains("NAME=COMMAND"), "{}", bad.stderr);
}

/// The requests a server received: the `Authorization` header and the JSON body.
type Seen = Arc<Mutex<Vec<(Option<String>, Value)>>>;

/// Another server speaking the Agent API its own way: a byte order mark, `event:` lines, an
/// event type agentd never sends, `[DONE]` at the end. It records each request.
async fn other_server(seen: Seen) -> String {
    let handler = move |headers: axum::http::HeaderMap, body: axum::Json<Value>| {
        let seen = seen.clone();
        async move {
            let key = headers
                .get("authorization")
                .and_then(|v| v.to_str().ok())
                .map(str::to_owned);
            seen.lock().unwrap().push((key, body.0));
            let events = [
                json!({"type": "response.created", "sequence_number": 0,
                       "response": {"id": "resp_other", "object": "response", "status": "in_progress", "output": []}}),
                json!({"type": "response.vendor.thing", "sequence_number": 1, "x": 1}),
                json!({"type": "response.output_text.delta", "sequence_number": 2, "delta": "Elbrus is 5,642 m [1]."}),
                json!({"type": "response.completed", "sequence_number": 3,
                       "response": {"id": "resp_other", "object": "response", "status": "completed",
                                    "output": [{"type": "message", "content": [{"type": "output_text",
                                        "text": "Elbrus is 5,642 m [1].",
                                        "annotations": [{"type": "url_citation", "url": "https://example.org/elbrus",
                                                         "title": "Elbrus", "start_index": 18, "end_index": 21}]}]}]}}),
            ];
            let mut body = String::from("\u{feff}");
            for event in events {
                body.push_str(&format!(
                    "event: {}\ndata: {event}\n\n",
                    event["type"].as_str().unwrap()
                ));
            }
            body.push_str("data: [DONE]\n\n");
            ([("content-type", "text/event-stream")], body)
        }
    };
    serve(axum::Router::new().route("/api/v1/responses", axum::routing::post(handler))).await
}

#[tokio::test(flavor = "multi_thread")]
async fn any_agent_api_server_works_with_the_url_and_key_from_the_environment() {
    let seen: Seen = Arc::new(Mutex::new(Vec::new()));
    let base = other_server(seen.clone()).await;
    let mut command = tokio::process::Command::from(ask_command(&[
        "--tool",
        "web_search",
        "How high is Elbrus?",
    ]));
    command
        .env("AGENTD_URL", format!("{base}/api/v1"))
        .env("AGENTD_API_KEY", "sk-from-the-environment")
        .env("AGENTD_MODEL", "other/model")
        .stdin(Stdio::null())
        .kill_on_drop(true);
    let output = tokio::time::timeout(WAIT, command.output())
        .await
        .unwrap()
        .unwrap();
    let (stdout, stderr) = (
        String::from_utf8(output.stdout).unwrap(),
        String::from_utf8(output.stderr).unwrap(),
    );
    assert_eq!(output.status.code(), Some(0), "{stderr}");
    assert_eq!(
        stdout,
        "Elbrus is 5,642 m [1].\n\nSources:\n[1] Elbrus https://example.org/elbrus\n"
    );
    assert!(!stderr.contains("sk-from-the-environment"), "{stderr}");
    let seen = seen.lock().unwrap();
    assert_eq!(seen.len(), 1);
    assert_eq!(seen[0].0.as_deref(), Some("Bearer sk-from-the-environment"));
    assert_eq!(
        seen[0].1,
        json!({"model": "other/model", "input": "How high is Elbrus?", "stream": true,
               "tools": [{"type": "web_search"}]})
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn sandbox_commands_show_as_progress_lines() {
    let app = app(None).await;
    app.fake.push(Reply::tool_calls(vec![(
        "call_1",
        "execute",
        r#"{"language":"bash","code":"echo counted > n.txt; exit 3"}"#,
    )]));
    app.fake.push(Reply::tool_calls(vec![(
        "call_2",
        "read",
        r#"{"path":"n.txt"}"#,
    )]));
    app.fake.push(Reply::text("The script failed with 3."));
    let run = ask_piped(&[
        "--url",
        &app.base_url,
        "--model",
        MODEL,
        "--sandbox",
        "run it",
    ])
    .await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(
        run.stderr
            .contains("· sandbox bash: echo counted > n.txt; exit 3 [completed] → exit 3\n"),
        "{}",
        run.stderr
    );
    assert!(
        run.stderr.contains("· sandbox read /workspace/n.txt\n"),
        "{}",
        run.stderr
    );
    assert_eq!(run.stdout, "The script failed with 3.\n");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_server_that_does_not_stream_still_gets_its_answer_shown() {
    let base = serve(axum::Router::new().route(
        "/v1/responses",
        axum::routing::post(|| async {
            axum::Json(
                json!({"id": "resp_plain", "object": "response", "status": "incomplete",
                "incomplete_details": {"reason": "max_output_tokens"},
                "output": [
                    {"type": "search_results", "queries": ["elbrus"], "results": []},
                    {"type": "message", "content": [{"type": "output_text", "text": "Elbrus is"}]}
                ]}),
            )
        }),
    ))
    .await;
    let run = ask_piped(&["--url", &base, "How high is Elbrus?"]).await;
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert_eq!(run.stdout, "Elbrus is\n");
    assert!(
        run.stderr
            .contains("the run ended incomplete: max_output_tokens"),
        "{}",
        run.stderr
    );
}
