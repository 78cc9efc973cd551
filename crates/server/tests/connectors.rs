//! Saved connectors end to end: the admin API with roles across two projects, connectors
//! tested and used with `type: "connector"` against real MCP servers (the Python `mcp`
//! fixtures, token-protected, both transports), rotation seen by a continuation, a restart
//! between saving and using, and no secret value in any answer, event or store file.

#![expect(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test helpers fail loudly"
)]

use std::path::{Path, PathBuf};

use agentd_server::config::StoreLocation;
use serde_json::{Value, json};
use testkit::mcp::{McpFixture, Transport};
use testkit::{Reply, TestApp};

const MODEL: &str = "openai/gpt-test";
const TOKEN: &str = "tok-connector-secret-7d41c2";

/// A data directory kept across app restarts (removed when dropped).
struct Dir(PathBuf);

impl Dir {
    fn new(name: &str) -> Dir {
        let dir = std::env::temp_dir().join(format!("agentd-conn-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        Dir(dir)
    }
}

impl Drop for Dir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

async fn app_in(dir: &Path) -> TestApp {
    let dir = dir.to_owned();
    TestApp::spawn_with(move |config| {
        config.allow_private = vec!["127.0.0.0/8".to_owned()];
        config.data_dir = dir.clone();
        config.store = StoreLocation::DataDir(dir);
    })
    .await
}

/// Every answer body the test saw, for the leak check.
#[derive(Default)]
struct Seen(std::sync::Mutex<Vec<String>>);

impl Seen {
    async fn send(
        &self,
        app: &TestApp,
        method: reqwest::Method,
        path: &str,
        key: Option<&str>,
        body: Option<Value>,
    ) -> (u16, Value) {
        let mut request = app.client.request(method, app.url(path));
        if let Some(key) = key {
            request = request.bearer_auth(key);
        }
        if let Some(body) = body {
            request = request.json(&body);
        }
        let response = request.send().await.unwrap();
        let status = response.status().as_u16();
        let text = response.text().await.unwrap();
        self.0.lock().unwrap().push(text.clone());
        (status, serde_json::from_str(&text).unwrap_or(Value::Null))
    }

    async fn get(&self, app: &TestApp, path: &str, key: &str) -> (u16, Value) {
        self.send(app, reqwest::Method::GET, path, Some(key), None)
            .await
    }

    async fn post(&self, app: &TestApp, path: &str, key: &str, body: Value) -> (u16, Value) {
        self.send(app, reqwest::Method::POST, path, Some(key), Some(body))
            .await
    }

    fn all(&self) -> String {
        self.0.lock().unwrap().join("\n")
    }
}

fn items<'a>(response: &'a Value, kind: &str) -> Vec<&'a Value> {
    response["output"]
        .as_array()
        .expect("output array")
        .iter()
        .filter(|item| item["type"] == kind)
        .collect()
}

struct Keys {
    a_admin: String,
    a_member: String,
    b_admin: String,
    b_member: String,
}

/// An owner key made in open mode, projects `alpha` and `beta`, an admin and a member key each.
async fn two_projects(app: &TestApp, seen: &Seen) -> Keys {
    let (status, owner) = seen
        .send(
            app,
            reqwest::Method::POST,
            "/v1/admin/keys",
            None,
            Some(json!({"role": "owner", "name": "root"})),
        )
        .await;
    assert_eq!(status, 201, "{owner}");
    let owner = owner["key"].as_str().unwrap().to_owned();
    let mut keys = Vec::new();
    for project in ["alpha", "beta"] {
        let (status, body) = seen
            .post(app, "/v1/admin/projects", &owner, json!({"name": project}))
            .await;
        assert_eq!(status, 201, "{body}");
        for role in ["admin", "member"] {
            let (status, body) = seen
                .post(
                    app,
                    &format!("/v1/admin/keys?project={project}"),
                    &owner,
                    json!({"role": role, "name": format!("{project}-{role}")}),
                )
                .await;
            assert_eq!(status, 201, "{body}");
            assert_eq!(body["role"], role);
            keys.push(body["key"].as_str().unwrap().to_owned());
        }
    }
    let mut keys = keys.into_iter();
    Keys {
        a_admin: keys.next().unwrap(),
        a_member: keys.next().unwrap(),
        b_admin: keys.next().unwrap(),
        b_member: keys.next().unwrap(),
    }
}

#[tokio::test]
async fn roles_projects_and_connectors_used_by_every_key_of_the_project() {
    let dir = Dir::new("roles");
    let app = app_in(&dir.0).await;
    let seen = Seen::default();
    let fixture = McpFixture::start_with_token("auth", Transport::StreamableHttp, TOKEN).await;
    let keys = two_projects(&app, &seen).await;

    // A member key may not manage; an admin key saves a connector (the token never answered).
    let body = json!({
        "id": "connector_docs", "server_label": "docs", "server_url": fixture.url,
        "authorization": TOKEN, "description": "Docs server"
    });
    let (status, refused) = seen
        .post(&app, "/v1/admin/connectors", &keys.a_member, body.clone())
        .await;
    assert_eq!(status, 403, "{refused}");
    assert_eq!(refused["error"]["type"], "permission_denied");
    let (status, created) = seen
        .post(&app, "/v1/admin/connectors", &keys.a_admin, body.clone())
        .await;
    assert_eq!(status, 201, "{created}");
    assert_eq!(created["object"], "connector");
    assert_eq!(created["defer_loading"], true);
    assert_eq!(created["transport"], "auto");
    assert_eq!(created["authorization"]["set"], true);
    assert!(
        created["authorization"]["fingerprint"]
            .as_str()
            .unwrap()
            .starts_with("hmac:")
    );
    let (status, _) = seen
        .post(&app, "/v1/admin/connectors", &keys.a_admin, body)
        .await;
    assert_eq!(status, 409);

    // Another project's admin sees nothing of it; every key of the project lists it.
    let (status, _) = seen
        .get(&app, "/v1/admin/connectors/connector_docs", &keys.b_admin)
        .await;
    assert_eq!(status, 404);
    let (status, listed) = seen.get(&app, "/v1/connectors", &keys.a_member).await;
    assert_eq!(status, 200);
    assert_eq!(listed["data"][0]["id"], "connector_docs");
    assert_eq!(listed["data"][0]["description"], "Docs server");
    let (_, listed_b) = seen.get(&app, "/v1/connectors", &keys.b_member).await;
    assert_eq!(listed_b["data"], json!([]));

    // The test reports the server, its tools and keeps the status.
    let (status, test) = seen
        .post(
            &app,
            "/v1/admin/connectors/connector_docs/test",
            &keys.a_admin,
            json!({}),
        )
        .await;
    assert_eq!(status, 200, "{test}");
    assert_eq!(test["ok"], true, "{test}");
    assert!(!test["server_info"]["name"].as_str().unwrap().is_empty());
    assert!(
        !test["server_info"]["protocol_version"]
            .as_str()
            .unwrap()
            .is_empty()
    );
    let add = test["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "add")
        .expect("add listed");
    assert_eq!(add["read_only"], true);
    let (_, got) = seen
        .get(&app, "/v1/admin/connectors/connector_docs", &keys.a_admin)
        .await;
    assert_eq!(got["status"], "ok");
    assert!(got["last_checked_at"].as_i64().is_some());

    // A draft with a wrong token: a clear error, nothing stored.
    let (status, draft) = seen
        .post(
            &app,
            "/v1/admin/connectors/test",
            &keys.a_admin,
            json!({"server_label": "x", "server_url": fixture.url, "authorization": "wrong-token-1"}),
        )
        .await;
    assert_eq!(status, 200);
    assert_eq!(draft["ok"], false);
    assert!(draft["error"].as_str().unwrap().contains("401"), "{draft}");

    // A member key uses it; items carry connector_id.
    app.fake.push(Reply::tool_calls(vec![(
        "call_1",
        "docs__echo",
        r#"{"text":"via connector"}"#,
    )]));
    app.fake.push(Reply::text("done"));
    let (status, response) = seen
        .post(
            &app,
            "/v1/responses",
            &keys.a_member,
            json!({"model": MODEL, "input": "echo", "tools": [
                {"type": "connector", "id": "connector_docs", "defer_loading": false}
            ]}),
        )
        .await;
    assert_eq!(status, 200, "{response}");
    assert_eq!(response["status"], "completed", "{response}");
    // The echoed tool names the label the items carry.
    assert_eq!(response["tools"][0]["server_label"], "docs");
    let list = items(&response, "mcp_list_tools")[0];
    assert_eq!(list["connector_id"], "connector_docs");
    assert_eq!(list["server_label"], "docs");
    let call = items(&response, "mcp_call")[0];
    assert_eq!(call["connector_id"], "connector_docs");
    assert!(call["output"].as_str().unwrap().contains("via connector"));

    // Another project's key cannot name it; nor a request widening allowed_tools.
    let (status, refused) = seen
        .post(
            &app,
            "/v1/responses",
            &keys.b_member,
            json!({"model": MODEL, "input": "x", "tools": [{"type": "connector", "id": "connector_docs"}]}),
        )
        .await;
    assert_eq!(status, 400, "{refused}");
    assert_eq!(refused["error"]["param"], "tools[0].id");
    let (status, _) = seen
        .send(
            &app,
            reqwest::Method::PATCH,
            "/v1/admin/connectors/connector_docs",
            Some(&keys.a_admin),
            Some(json!({"allowed_tools": ["echo"]})),
        )
        .await;
    assert_eq!(status, 200);
    let (status, refused) = seen
        .post(
            &app,
            "/v1/responses",
            &keys.a_member,
            json!({"model": MODEL, "input": "x", "tools": [
                {"type": "connector", "id": "connector_docs", "allowed_tools": ["echo", "add"]}
            ]}),
        )
        .await;
    assert_eq!(status, 400, "{refused}");
    assert_eq!(refused["error"]["param"], "tools[0].allowed_tools");

    // Disabled, then deleted: 400 naming tools[0].id.
    let (status, _) = seen
        .send(
            &app,
            reqwest::Method::PATCH,
            "/v1/admin/connectors/connector_docs",
            Some(&keys.a_admin),
            Some(json!({"enabled": false})),
        )
        .await;
    assert_eq!(status, 200);
    let request = json!({"model": MODEL, "input": "x", "tools": [{"type": "connector", "id": "connector_docs"}]});
    let (status, refused) = seen
        .post(&app, "/v1/responses", &keys.a_admin, request.clone())
        .await;
    assert_eq!(
        (status, refused["error"]["param"].clone()),
        (400, json!("tools[0].id"))
    );
    let (status, _) = seen
        .send(
            &app,
            reqwest::Method::DELETE,
            "/v1/admin/connectors/connector_docs",
            Some(&keys.a_admin),
            None,
        )
        .await;
    assert_eq!(status, 200);
    let (status, refused) = seen
        .post(&app, "/v1/responses", &keys.a_admin, request)
        .await;
    assert_eq!(
        (status, refused["error"]["param"].clone()),
        (400, json!("tools[0].id"))
    );
    let (_, events) = seen
        .get(
            &app,
            "/v1/admin/connectors/connector_docs/events",
            &keys.a_admin,
        )
        .await;
    let kinds: Vec<&str> = events["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["kind"].as_str().unwrap())
        .collect();
    assert_eq!(
        kinds,
        ["created", "tested", "updated", "updated", "deleted"]
    );

    // Keys: listed without the key, revoked at once.
    let (_, listed) = seen.get(&app, "/v1/admin/keys", &keys.a_admin).await;
    let member = listed["data"]
        .as_array()
        .unwrap()
        .iter()
        .find(|k| k["role"] == "member")
        .unwrap()
        .clone();
    assert!(member.get("key").is_none());
    assert!(member["last_used_at"].as_i64().is_some());
    assert!(
        keys.a_member
            .starts_with(member["prefix"].as_str().unwrap())
    );
    let (status, _) = seen
        .send(
            &app,
            reqwest::Method::DELETE,
            &format!("/v1/admin/keys/{}", member["id"].as_str().unwrap()),
            Some(&keys.a_admin),
            None,
        )
        .await;
    assert_eq!(status, 200);
    let (status, _) = seen.get(&app, "/v1/connectors", &keys.a_member).await;
    assert_eq!(status, 401);

    // No answer ever held the token.
    assert!(!seen.all().contains(TOKEN));
}

#[tokio::test]
async fn a_rotation_reaches_the_continuation_and_a_restart_keeps_the_connector() {
    let dir = Dir::new("rotate");
    let seen = Seen::default();
    let fixture = McpFixture::start_with_token("auth", Transport::Sse, TOKEN).await;
    let key;
    {
        let app = app_in(&dir.0).await;
        let keys = two_projects(&app, &seen).await;
        key = keys.a_admin;
        let (status, created) = seen
            .post(
                &app,
                "/v1/admin/connectors",
                &key,
                json!({"id": "connector_legacy", "server_label": "legacy", "server_url": fixture.url,
                       "transport": "sse", "headers": {"Authorization": "Bearer wrong-old-token"},
                       "require_approval": "always"}),
            )
            .await;
        assert_eq!(status, 201, "{created}");
        assert_eq!(created["headers"]["Authorization"]["set"], true);
    }
    // A new process over the same data directory: nothing was held only in memory.
    let app = app_in(&dir.0).await;
    let (status, _) = seen
        .post(
            &app,
            "/v1/admin/connectors/connector_legacy/rotate",
            &key,
            json!({"authorization": TOKEN}),
        )
        .await;
    assert_eq!(status, 200);
    app.fake.push(Reply::tool_calls(vec![(
        "call_1",
        "legacy__add",
        r#"{"a":2,"b":3}"#,
    )]));
    let tools = json!([{"type": "connector", "id": "connector_legacy", "defer_loading": false}]);
    let (status, first) = seen
        .post(
            &app,
            "/v1/responses",
            &key,
            json!({"model": MODEL, "input": "add", "tools": tools}),
        )
        .await;
    assert_eq!(status, 200, "{first}");
    assert_eq!(first["status"], "requires_action", "{first}");
    let approval = items(&first, "mcp_approval_request")[0].clone();
    assert_eq!(approval["connector_id"], "connector_legacy");

    // Rotated to a token the server refuses: the continuation uses it (and fails to connect).
    let (status, _) = seen
        .post(
            &app,
            "/v1/admin/connectors/connector_legacy/rotate",
            &key,
            json!({"authorization": "wrong-new-token"}),
        )
        .await;
    assert_eq!(status, 200);
    let (status, failed) = seen
        .post(
            &app,
            "/v1/responses",
            &key,
            json!({"model": MODEL, "previous_response_id": first["id"], "tools": tools, "input": [
                {"type": "mcp_approval_response", "approval_request_id": approval["id"], "approve": true}
            ]}),
        )
        .await;
    assert_eq!(status, 424, "{failed}");
    assert_eq!(failed["error"]["type"], "external_connector_error");

    // Rotated back: the approved call runs, with connector_id on the mcp_call.
    let (status, _) = seen
        .post(
            &app,
            "/v1/admin/connectors/connector_legacy/rotate",
            &key,
            json!({"authorization": TOKEN}),
        )
        .await;
    assert_eq!(status, 200);
    app.fake.push(Reply::text("5"));
    let (status, done) = seen
        .post(
            &app,
            "/v1/responses",
            &key,
            json!({"model": MODEL, "previous_response_id": first["id"], "tools": tools, "input": [
                {"type": "mcp_approval_response", "approval_request_id": approval["id"], "approve": true}
            ]}),
        )
        .await;
    assert_eq!(status, 200, "{done}");
    let call = items(&done, "mcp_call")[0];
    assert_eq!(call["connector_id"], "connector_legacy");
    assert_eq!(call["approval_request_id"], approval["id"]);
    assert!(call["output"].as_str().unwrap().contains('5'), "{call}");

    // Stored events and the database files (WAL included) hold no credential in clear.
    let (_, events) = seen
        .send(
            &app,
            reqwest::Method::GET,
            &format!("/v1/responses/{}?stream=true", done["id"].as_str().unwrap()),
            Some(&key),
            None,
        )
        .await;
    let _ = events;
    drop(app);
    let answers = seen.all();
    for secret in [TOKEN, "wrong-old-token", "wrong-new-token"] {
        assert!(!answers.contains(secret), "an answer holds {secret}");
        for entry in std::fs::read_dir(&dir.0).unwrap() {
            let path = entry.unwrap().path();
            if path.is_file() {
                let bytes = std::fs::read(&path).unwrap();
                assert!(
                    !bytes.windows(secret.len()).any(|w| w == secret.as_bytes()),
                    "{} holds {secret}",
                    path.display()
                );
            }
        }
    }
}

#[tokio::test]
async fn sandbox_env_reaches_execute_only_with_the_connector_and_is_scrubbed() {
    let dir = Dir::new("sandbox-env");
    let app = app_in(&dir.0).await;
    let seen = Seen::default();
    let fixture = McpFixture::start_with_token("auth", Transport::StreamableHttp, TOKEN).await;
    let keys = two_projects(&app, &seen).await;
    let key = keys.a_member;
    let (status, created) = seen
        .post(
            &app,
            "/v1/admin/connectors",
            &keys.a_admin,
            json!({"id": "connector_gh", "server_label": "gh", "server_url": fixture.url,
                   "authorization": TOKEN, "sandbox_env": {"GH_TOKEN": "authorization"}}),
        )
        .await;
    assert_eq!(status, 201, "{created}");
    assert_eq!(created["sandbox_env"]["GH_TOKEN"], "authorization");
    let code = "echo \"token=$GH_TOKEN\"; printf %s \"$GH_TOKEN\" | wc -c; printf %s \"$GH_TOKEN\" > shared.txt";
    let run = |tools: Value| json!({"model": MODEL, "input": "print it", "tools": tools});
    // With the connector and the sandbox: the program sees the variable; its value is scrubbed.
    app.fake.push(Reply::tool_calls(vec![(
        "call_1",
        "execute",
        &json!({"language": "bash", "code": code}).to_string(),
    )]));
    app.fake.push(Reply::text("done"));
    let (status, response) = seen
        .post(
            &app,
            "/v1/responses",
            &key,
            run(json!([{"type": "sandbox"}, {"type": "connector", "id": "connector_gh"}])),
        )
        .await;
    assert_eq!(status, 200, "{response}");
    let result = &items(&response, "sandbox_results")[0]["results"][0];
    let stdout = result["stdout"].as_str().unwrap();
    assert!(
        stdout.contains("token=[redacted: connector credential]"),
        "{stdout}"
    );
    assert!(stdout.contains(&TOKEN.len().to_string()), "{stdout}");
    let model_saw = app.fake.requests()[1].to_string();
    assert!(
        model_saw.contains("[redacted: connector credential]"),
        "{model_saw}"
    );
    assert!(!model_saw.contains(TOKEN));
    let (_, events) = seen
        .send(
            &app,
            reqwest::Method::GET,
            &format!(
                "/v1/responses/{}?stream=true",
                response["id"].as_str().unwrap()
            ),
            Some(&key),
            None,
        )
        .await;
    let _ = events;

    // The sandbox alone: no variable.
    app.fake.push(Reply::tool_calls(vec![(
        "call_1",
        "execute",
        &json!({"language": "bash", "code": code}).to_string(),
    )]));
    app.fake.push(Reply::text("done"));
    let (status, response) = seen
        .post(
            &app,
            "/v1/responses",
            &key,
            run(json!([{"type": "sandbox"}])),
        )
        .await;
    assert_eq!(status, 200, "{response}");
    let stdout = items(&response, "sandbox_results")[0]["results"][0]["stdout"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(stdout.starts_with("token=\n0"), "{stdout}");

    drop(app);
    assert!(!seen.all().contains(TOKEN));
    for entry in std::fs::read_dir(&dir.0).unwrap() {
        let path = entry.unwrap().path();
        if path.is_file() {
            let bytes = std::fs::read(&path).unwrap();
            assert!(
                !bytes.windows(TOKEN.len()).any(|w| w == TOKEN.as_bytes()),
                "{} holds the token",
                path.display()
            );
        }
    }
}

#[tokio::test]
async fn a_connectors_timeout_bounds_each_call_and_the_run_goes_on() {
    let dir = Dir::new("call-timeout");
    let app = app_in(&dir.0).await;
    let seen = Seen::default();
    let fixture = McpFixture::start("basic", Transport::StreamableHttp).await;
    let (status, owner) = seen
        .send(
            &app,
            reqwest::Method::POST,
            "/v1/admin/keys",
            None,
            Some(json!({"role": "owner", "name": "root"})),
        )
        .await;
    assert_eq!(status, 201, "{owner}");
    let key = owner["key"].as_str().unwrap().to_owned();
    let (status, created) = seen
        .post(
            &app,
            "/v1/admin/connectors",
            &key,
            json!({"id": "connector_slow", "server_label": "slow", "server_url": fixture.url, "timeout_s": 1}),
        )
        .await;
    assert_eq!(status, 201, "{created}");

    // The call takes 30 s; the connector allows 1 s: that call fails, the run goes on.
    app.fake.push(Reply::tool_calls(vec![(
        "call_1",
        "slow__slow",
        r#"{"seconds":30}"#,
    )]));
    app.fake.push(Reply::text("the tool was too slow"));
    let started = std::time::Instant::now();
    let (status, response) = seen
        .post(
            &app,
            "/v1/responses",
            &key,
            json!({"model": MODEL, "input": "slow", "tools": [
                {"type": "connector", "id": "connector_slow", "defer_loading": false}
            ]}),
        )
        .await;
    assert_eq!(status, 200, "{response}");
    assert!(
        started.elapsed() < std::time::Duration::from_secs(15),
        "the call was not cut at the connector's timeout: {:?}",
        started.elapsed()
    );
    assert_eq!(response["status"], "completed", "{response}");
    let calls = items(&response, "mcp_call");
    assert_eq!(calls.len(), 1, "{response}");
    assert_eq!(calls[0]["connector_id"], "connector_slow");
    let error = calls[0]["error"].as_str().unwrap();
    assert!(
        error.contains("connector_slow") && error.contains("timeout_s (1 s)"),
        "{error}"
    );
    assert!(
        response["output"]
            .to_string()
            .contains("the tool was too slow"),
        "{response}"
    );
    // The model was told why.
    let last = app.fake.requests().pop().unwrap();
    assert!(last.to_string().contains("timeout_s (1 s)"), "{last}");
}
