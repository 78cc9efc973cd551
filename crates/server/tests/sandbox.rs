//! The sandbox through agentd: real executions under bubblewrap, state kept across a
//! continuation, files shared with the caller and downloaded byte for byte, and path escapes
//! refused. Only the model is scripted.

#![expect(clippy::unwrap_used, reason = "test helpers fail loudly")]

use serde_json::{Value, json};
use testkit::{Reply, TestApp};

const MODEL: &str = "openai/gpt-test";

fn items<'a>(response: &'a Value, kind: &str) -> Vec<&'a Value> {
    response["output"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|item| item["type"] == kind)
        .collect()
}

fn call(name: &str, arguments: Value) -> Reply {
    Reply::tool_calls(vec![("call_1", name, &arguments.to_string())])
}

#[tokio::test]
async fn code_runs_state_persists_across_a_continuation_and_files_download() {
    let app = TestApp::spawn().await;
    let sandbox = json!([{"type": "sandbox"}]);
    app.fake.push(call(
        "execute",
        json!({"language": "python", "code": "open('data.csv','w').write('a,b\\n1,2\\n')\nprint(6*7)"}),
    ));
    app.fake.push(Reply::text("The answer is 42."));
    let (status, first) = app
        .post(
            "/v1/responses",
            json!({"model": MODEL, "input": "compute", "tools": sandbox}),
        )
        .await;
    assert_eq!(status, 200, "{first}");
    assert_eq!(first["status"], "completed", "{first}");
    let run = items(&first, "sandbox_results")[0];
    assert_eq!(run["status"], "completed", "{run}");
    assert_eq!(run["language"], "python");
    assert_eq!(run["call_id"], "call_1");
    assert_eq!(run["results"][0]["exit_code"], 0);
    assert_eq!(run["results"][0]["stdout"], "42\n");
    let container = run["container_id"].as_str().unwrap().to_owned();
    assert_eq!(
        first["usage"]["tool_calls_details"]["sandbox"]["invocation"],
        1
    );
    // The model was offered the sandbox tools and read the output.
    let offered = app.fake.requests()[0]["tools"].to_string();
    for name in [
        "execute",
        "read",
        "write",
        "edit",
        "grep",
        "glob",
        "apply_patch",
        "share_file",
    ] {
        assert!(
            offered.contains(&format!("\"{name}\"")),
            "{name} not offered"
        );
    }

    // A continuation finds the same workspace: the file is still there.
    app.fake.push(call(
        "execute",
        json!({"language": "bash", "code": "cat data.csv; exit 3"}),
    ));
    app.fake
        .push(call("share_file", json!({"path": "data.csv"})));
    app.fake.push(Reply::text("Here is the file."));
    let (status, second) = app
        .post(
            "/v1/responses",
            json!({"model": MODEL, "input": "show it", "tools": sandbox,
                   "previous_response_id": first["id"]}),
        )
        .await;
    assert_eq!(status, 200, "{second}");
    let run = items(&second, "sandbox_results")[0];
    assert_eq!(run["container_id"], container.as_str());
    assert_eq!(run["results"][0]["stdout"], "a,b\n1,2\n");
    assert_eq!(run["results"][0]["exit_code"], 3);
    assert_eq!(
        run["status"], "completed",
        "a non-zero exit is still a completed run"
    );

    let shared = items(&second, "share_file")[0];
    assert_eq!(shared["filename"], "data.csv");
    assert_eq!(shared["size_bytes"], 8);
    let id = second["id"].as_str().unwrap();
    let file_id = shared["file_id"].as_str().unwrap();
    assert_eq!(
        shared["url"],
        format!("/v1/responses/{id}/files/{file_id}/content")
    );
    let (status, list) = app.get(&format!("/v1/agent/{id}/files")).await;
    assert_eq!(status, 200);
    assert_eq!(list["object"], "list");
    assert_eq!(list["data"][0]["id"], file_id);
    assert_eq!(list["data"][0]["bytes"], 8);
    let download = app
        .client
        .get(app.url(shared["url"].as_str().unwrap()))
        .send()
        .await
        .unwrap();
    assert_eq!(download.status().as_u16(), 200);
    let header = |name: &str| {
        download
            .headers()
            .get(name)
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default()
            .to_owned()
    };
    assert!(
        header("content-type").starts_with("text/csv"),
        "{}",
        header("content-type")
    );
    assert!(
        header("content-disposition").starts_with("attachment; filename=\"data.csv\""),
        "{}",
        header("content-disposition")
    );
    assert_eq!(download.bytes().await.unwrap().as_ref(), b"a,b\n1,2\n");
    let (status, _) = app
        .get(&format!("/v1/responses/{id}/files/file_nope/content"))
        .await;
    assert_eq!(status, 404);
    let (status, _) = app.get("/v1/responses/resp_nope/files").await;
    assert_eq!(status, 404);
}

#[tokio::test]
async fn paths_outside_the_workspace_are_refused_and_code_cannot_reach_the_host() {
    let app = TestApp::spawn().await;
    app.fake
        .push(call("read", json!({"path": "../../../../etc/passwd"})));
    app.fake.push(call(
        "execute",
        json!({"language": "bash", "code": "id -u; cat /root/.bashrc >/dev/null 2>&1 && echo leaked; ls /workspace >/dev/null && echo inside"}),
    ));
    app.fake.push(Reply::text("done"));
    let (status, response) = app
        .post(
            "/v1/responses",
            json!({"model": MODEL, "input": "x", "tools": [{"type": "sandbox"}]}),
        )
        .await;
    assert_eq!(status, 200, "{response}");
    let read = items(&response, "sandbox_read_file")[0];
    assert!(read["error"].as_str().is_some(), "{read}");
    assert!(read.get("content").is_none_or(Value::is_null), "{read}");
    let run = items(&response, "sandbox_results")[0];
    let stdout = run["results"][0]["stdout"].as_str().unwrap();
    assert!(stdout.starts_with("65534\n"), "{stdout}");
    assert!(!stdout.contains("leaked"), "{stdout}");
    assert!(stdout.contains("inside"), "{stdout}");
}

#[tokio::test]
async fn another_projects_files_are_not_found() {
    let app = TestApp::spawn().await;
    let key_a = app.state.engine.create_key("alpha").await.unwrap();
    let key_b = app.state.engine.create_key("beta").await.unwrap();
    app.fake.push(call(
        "write",
        json!({"path": "note.txt", "content": "for alpha only"}),
    ));
    app.fake
        .push(call("share_file", json!({"path": "note.txt"})));
    app.fake.push(Reply::text("shared"));
    let created: Value = app
        .client
        .post(app.url("/v1/responses"))
        .bearer_auth(&key_a)
        .json(&json!({"model": MODEL, "input": "x", "tools": [{"type": "sandbox"}]}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let url = items(&created, "share_file")[0]["url"]
        .as_str()
        .unwrap()
        .to_owned();
    let list = format!("/v1/responses/{}/files", created["id"].as_str().unwrap());
    let get = |key: &str, path: &str| app.client.get(app.url(path)).bearer_auth(key).send();
    let mine = get(&key_a, &url).await.unwrap();
    assert_eq!(mine.status().as_u16(), 200);
    assert_eq!(mine.text().await.unwrap(), "for alpha only");
    assert_eq!(get(&key_b, &url).await.unwrap().status().as_u16(), 404);
    assert_eq!(get(&key_b, &list).await.unwrap().status().as_u16(), 404);
}

/// Issue 13: `[tools.sandbox] workspace_quota_mb` reaches the sandbox; a run that tries to
/// write 2 GB is stopped at the quota and the model reads the limit.
#[tokio::test]
async fn the_workspace_quota_stops_a_run_that_writes_2_gb() {
    let app = TestApp::spawn_with(|config| {
        config.sandbox.workspace_quota_bytes = 32 << 20;
        config.sandbox.max_file_bytes = 1 << 30;
    })
    .await;
    app.fake.push(call(
        "execute",
        json!({"language": "bash", "code": "for i in 1 2; do dd if=/dev/zero of=big$i bs=1M count=1024 status=none; done; du -sm . | cut -f1"}),
    ));
    app.fake.push(Reply::text("done"));
    let (status, response) = app
        .post(
            "/v1/responses",
            json!({"model": MODEL, "input": "fill the disk", "tools": [{"type": "sandbox"}]}),
        )
        .await;
    assert_eq!(status, 200, "{response}");
    let run = items(&response, "sandbox_results")[0];
    let stderr = run["results"][0]["stderr"].as_str().unwrap();
    assert!(
        stderr.contains("disk quota is 32 MiB (tools.sandbox.workspace_quota_mb)"),
        "{run}"
    );
    let model_saw = app.fake.requests()[1].to_string();
    assert!(
        model_saw.contains("disk quota is 32 MiB"),
        "the model reads the limit"
    );
    // The run ends by itself at the quota where workspaces get their own file system (and
    // prints what it holds), or is killed by the measurement before `du` runs.
    if let Some(used) = run["results"][0]["stdout"]
        .as_str()
        .and_then(|out| out.trim().parse::<u64>().ok())
    {
        assert!(used <= 64, "the workspace holds {used} MiB");
    }
}

/// The real `agentd` binary is its own Landlock helper (`agentd sandbox-exec`): its start-up
/// probe runs a program through it and reports every layer in force.
#[test]
fn the_agentd_binary_reports_its_isolation_layers_at_start_up() {
    use std::io::BufRead;
    let data = std::env::temp_dir().join(format!("agentd-layers-{}", std::process::id()));
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_agentd"))
        .args(["serve", "--listen", "127.0.0.1:0", "--data-dir"])
        .arg(&data)
        .env("RUST_LOG", "info")
        .env_remove("AGENTD_CONFIG")
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let stderr = child.stderr.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in std::io::BufReader::new(stderr)
            .lines()
            .map_while(Result::ok)
        {
            if line.contains("sandbox ready") || line.contains("sandbox tool is unavailable") {
                let _ = tx.send(line);
                return;
            }
        }
    });
    let ready = rx.recv_timeout(std::time::Duration::from_secs(120));
    child.kill().unwrap();
    child.wait().unwrap();
    let _ = std::fs::remove_dir_all(&data);
    let ready = ready.unwrap();
    assert!(
        ready.contains("bubblewrap namespaces + seccomp filter + Landlock (ABI"),
        "{ready}"
    );
    assert!(
        ready.contains("disk quota: 1024 MiB per workspace"),
        "{ready}"
    );
}
