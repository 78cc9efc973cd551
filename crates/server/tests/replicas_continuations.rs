//! Continuations that land on another replica than the run they continue (no sticky
//! sessions): an MCP approval (foreground and background), a custom function call's output,
//! and a conversation's sandbox workspace, whose files a step on one replica wrote and a step
//! on another reads back. Real `agentd` processes on one PostgreSQL database, real MCP fixture
//! servers and real sandboxes; only the model is scripted. Also: the workspace of a single
//! server on SQLite survives a restart, as before replicas existed.

#![expect(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test helpers fail loudly"
)]

mod pg_support;
mod replica_support;

use replica_support::{Database, MODEL, Replica, launch_with, ready, spawn};
use serde_json::{Value, json};
use testkit::mcp::{McpFixture, Transport};
use testkit::{FakeProvider, Reply};

fn items<'a>(response: &'a Value, kind: &str) -> Vec<&'a Value> {
    response["output"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|item| item["type"] == kind)
        .collect()
}

/// An MCP tool whose calls all wait for an approval.
fn gated(fixture: &McpFixture) -> Value {
    json!({"type": "mcp", "server_label": "files", "server_url": fixture.url,
           "require_approval": "always"})
}

fn execute(code: &str) -> Reply {
    Reply::tool_calls(vec![(
        "call_1",
        "execute",
        &json!({"language": "bash", "code": code}).to_string(),
    )])
}

/// The model text of every request the fake received, in order.
fn model_saw(fake: &FakeProvider) -> String {
    fake.requests()
        .iter()
        .map(Value::to_string)
        .collect::<Vec<_>>()
        .join("\n")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_mcp_approval_paused_on_one_replica_is_continued_on_another() {
    let db = Database::create("approval").await;
    let fake = FakeProvider::start().await;
    let fixture = McpFixture::start("annotated", Transport::StreamableHttp).await;
    let a = spawn(&db, "a", &fake, 2);
    let b = spawn(&db, "b", &fake, 2);

    fake.push(Reply::tool_calls(vec![(
        "call_1",
        "files__delete_file",
        r#"{"path":"old.txt"}"#,
    )]));
    let paused = a
        .post(json!({"model": MODEL, "input": "delete old.txt", "tools": [gated(&fixture)]}))
        .await;
    assert_eq!(paused["status"], "requires_action", "{paused}");
    let request = items(&paused, "mcp_approval_request")[0].clone();
    assert!(fixture.calls().is_empty(), "not called before the approval");
    // B needs nothing A kept in memory: A is gone.
    a.kill_9();

    fake.push(Reply::text("Deleted."));
    let done = b
        .post(json!({"model": MODEL, "previous_response_id": paused["id"],
                     "tools": [gated(&fixture)],
                     "input": [{"type": "mcp_approval_response",
                                "approval_request_id": request["id"], "approve": true}]}))
        .await;
    assert_eq!(done["status"], "completed", "{done}");
    let call = items(&done, "mcp_call")[0];
    assert_eq!(call["approval_request_id"], request["id"]);
    assert!(
        call["output"].as_str().unwrap().contains("old.txt"),
        "{call}"
    );
    assert_eq!(
        done["output"].as_array().unwrap().last().unwrap()["content"][0]["text"],
        "Deleted."
    );
    // B ran the approved call exactly once, and the model read its result after A's turn.
    assert_eq!(
        fixture.calls(),
        vec![("delete_file".to_owned(), json!({"path": "old.txt"}))]
    );
    let last = fake.requests().last().cloned().unwrap().to_string();
    assert!(
        last.contains("delete old.txt") && last.contains("old.txt"),
        "{last}"
    );

    // Continuing the finished run again runs nothing twice.
    fake.push(Reply::text("Anything else?"));
    let again = b
        .post(json!({"model": MODEL, "previous_response_id": done["id"],
                     "tools": [gated(&fixture)], "input": "thanks"}))
        .await;
    assert_eq!(again["status"], "completed", "{again}");
    assert_eq!(fixture.calls().len(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_background_run_paused_for_approval_is_continued_on_another_replica() {
    let db = Database::create("approval-bg").await;
    let fake = FakeProvider::start().await;
    let fixture = McpFixture::start("annotated", Transport::StreamableHttp).await;
    let a = spawn(&db, "a", &fake, 2);
    let b = spawn(&db, "b", &fake, 2);

    fake.push(Reply::tool_calls(vec![(
        "call_1",
        "files__send_email",
        r#"{"to":"a@example.com","subject":"hi","body":"hello"}"#,
    )]));
    let queued = a
        .post(
            json!({"model": MODEL, "input": "mail them", "tools": [gated(&fixture)],
                     "background": true}),
        )
        .await;
    let id = queued["id"].as_str().unwrap().to_owned();
    // Polled on B until it waits for the decision.
    let paused = b.wait_terminal(&id).await;
    assert_eq!(paused["status"], "requires_action", "{paused}");
    let request = items(&paused, "mcp_approval_request")[0].clone();
    assert_eq!(request["name"], "send_email");

    fake.push(Reply::text("Sent."));
    let continued = b
        .post(
            json!({"model": MODEL, "previous_response_id": id, "background": true,
                     "tools": [gated(&fixture)],
                     "input": [{"type": "mcp_approval_response",
                                "approval_request_id": request["id"], "approve": true}]}),
        )
        .await;
    let continued_id = continued["id"].as_str().unwrap().to_owned();
    // Whichever replica's worker ran it, A reads the same end.
    let done = a.wait_terminal(&continued_id).await;
    assert_eq!(done["status"], "completed", "{done}");
    assert_eq!(
        items(&done, "mcp_call")[0]["approval_request_id"],
        request["id"]
    );
    assert_eq!(fixture.calls().len(), 1, "the approved call ran once");
    assert_eq!(fixture.calls()[0].0, "send_email");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_function_call_paused_on_one_replica_is_continued_on_another() {
    let db = Database::create("continue").await;
    let fake = FakeProvider::start().await;
    let a = spawn(&db, "a", &fake, 2);
    let b = spawn(&db, "b", &fake, 2);
    let tools = json!([{"type": "function", "name": "lookup", "parameters": {"type": "object"}}]);
    fake.push(Reply::tool_calls(vec![(
        "call_1",
        "lookup",
        r#"{"q":"x"}"#,
    )]));
    let paused = a
        .post(json!({"model": MODEL, "input": "look it up", "tools": tools}))
        .await;
    assert_eq!(paused["output"][0]["type"], "function_call", "{paused}");
    fake.push(Reply::text("found 42"));
    let continued = b
        .post(json!({"model": MODEL, "tools": tools, "previous_response_id": paused["id"],
                     "input": [{"type": "function_call_output", "call_id": "call_1", "output": "42"}]}))
        .await;
    assert_eq!(continued["status"], "completed", "{continued}");
    assert_eq!(continued["output"][0]["content"][0]["text"], "found 42");
    // B sent the model A's transcript with the call's output.
    let last = fake.requests().last().cloned().unwrap().to_string();
    assert!(last.contains("look it up") && last.contains("42"), "{last}");
}

/// One sandbox step: the model calls `tool`, then answers `done`.
async fn sandbox_step(
    replica: &Replica,
    fake: &FakeProvider,
    step: Reply,
    previous: Option<&Value>,
) -> Value {
    fake.push(step);
    fake.push(Reply::text("done"));
    let mut body = json!({"model": MODEL, "input": "go on", "tools": [{"type": "sandbox"}]});
    if let Some(previous) = previous {
        body["previous_response_id"] = previous["id"].clone();
    }
    let response = replica.post(body).await;
    assert_eq!(response["status"], "completed", "{response}");
    response
}

fn stdout(response: &Value) -> String {
    let run = items(response, "sandbox_results")[0];
    assert_eq!(run["status"], "completed", "{run}");
    run["results"][0]["stdout"].as_str().unwrap().to_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sandbox_workspace_written_on_one_replica_is_read_on_another() {
    let db = Database::create("sandbox").await;
    let fake = FakeProvider::start().await;
    let a = spawn(&db, "a", &fake, 2);
    let b = spawn(&db, "b", &fake, 2);

    let first = sandbox_step(
        &a,
        &fake,
        execute("mkdir -p notes && printf 'written on A\\n' > notes/today.txt && ln -s notes/today.txt latest"),
        None,
    )
    .await;
    let container = items(&first, "sandbox_results")[0]["container_id"].clone();
    assert_eq!(
        db.scalar("SELECT generation FROM workspace_snapshots")
            .await,
        1,
        "A saved the workspace"
    );

    // On B, which never saw the conversation: the files (and the link) are there.
    let second = sandbox_step(
        &b,
        &fake,
        execute("cat latest; echo 'and B' >> notes/today.txt"),
        Some(&first),
    )
    .await;
    assert_eq!(stdout(&second), "written on A\n");
    assert_eq!(
        items(&second, "sandbox_results")[0]["container_id"],
        container
    );
    assert!(
        model_saw(&fake).contains("written on A"),
        "the model read the file B restored"
    );

    // Back on A, whose own copy is now older: it takes B's.
    let third = sandbox_step(&a, &fake, execute("cat notes/today.txt"), Some(&second)).await;
    assert_eq!(stdout(&third), "written on A\nand B\n");

    // The file tools see the same workspace: B's `read` after A's `write`.
    let written = sandbox_step(
        &a,
        &fake,
        Reply::tool_calls(vec![(
            "call_1",
            "write",
            &json!({"path": "notes/tomorrow.txt", "content": "from the write tool"}).to_string(),
        )]),
        Some(&third),
    )
    .await;
    let saves = db
        .scalar("SELECT generation FROM workspace_snapshots")
        .await;
    let read = sandbox_step(
        &b,
        &fake,
        Reply::tool_calls(vec![(
            "call_1",
            "read",
            r#"{"path": "notes/tomorrow.txt"}"#,
        )]),
        Some(&written),
    )
    .await;
    let item = items(&read, "sandbox_read_file")[0];
    assert!(
        item["content"]
            .as_str()
            .unwrap()
            .contains("from the write tool"),
        "{item}"
    );
    // A step that changes nothing saves nothing.
    assert_eq!(
        db.scalar("SELECT generation FROM workspace_snapshots")
            .await,
        saves
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_workspace_over_the_snapshot_limit_is_reported_on_both_replicas() {
    let db = Database::create("sandbox-limit").await;
    let fake = FakeProvider::start().await;
    let small = "[tools.sandbox]\nsnapshot_max_mb = 1\n";
    let a = ready(launch_with(&db.dir, Some(&db.url), "a", &fake, 2, small));
    let b = ready(launch_with(&db.dir, Some(&db.url), "b", &fake, 2, small));

    let first = sandbox_step(
        &a,
        &fake,
        execute("head -c 3000000 /dev/urandom > noise.bin; echo ok"),
        None,
    )
    .await;
    assert_eq!(stdout(&first), "ok\n");
    let told = fake.requests()[1].to_string();
    assert!(
        told.contains("tools.sandbox.snapshot_max_mb") && told.contains("another agentd replica"),
        "the model is told the files stay on this replica: {told}"
    );

    // B cannot restore them and says why, once.
    fake.push(execute("ls"));
    fake.push(Reply::text("done"));
    let second = b
        .post(
            json!({"model": MODEL, "input": "go on", "tools": [{"type": "sandbox"}],
                     "previous_response_id": first["id"]}),
        )
        .await;
    let run = items(&second, "sandbox_results")[0];
    assert_eq!(run["status"], "failed", "{run}");
    let stderr = run["results"][0]["stderr"].as_str().unwrap();
    assert!(stderr.contains("tools.sandbox.snapshot_max_mb"), "{stderr}");
    // A still has them.
    let third = sandbox_step(&a, &fake, execute("wc -c < noise.bin"), Some(&second)).await;
    assert_eq!(stdout(&third), "3000000\n");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_single_sqlite_server_keeps_its_workspace_across_a_restart() {
    let dir =
        std::env::temp_dir().join(format!("agentd-restart-{}", uuid::Uuid::new_v4().simple()));
    let fake = FakeProvider::start().await;
    let server = ready(launch_with(&dir, None, "solo", &fake, 1, ""));
    let first = sandbox_step(
        &server,
        &fake,
        execute("printf 'kept\\n' > state.txt"),
        None,
    )
    .await;
    server.kill_9();

    let server = ready(launch_with(&dir, None, "solo", &fake, 1, ""));
    let second = sandbox_step(&server, &fake, execute("cat state.txt"), Some(&first)).await;
    assert_eq!(stdout(&second), "kept\n");
    drop(server);
    replica_support::unmount_under(&dir);
    let _ = std::fs::remove_dir_all(&dir);
}
