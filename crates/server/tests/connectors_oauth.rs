//! OAuth connectors end to end against a real OAuth-protected MCP server (the Python `mcp`
//! SDK's own authorization server in `tests/mcp/fixtures.py`, kind `oauth`): an admin saves a
//! connector with `authorization_type: "oauth"`, starts the connection, a browser follows the
//! authorization URL to agentd's callback (no key: the single-use state), the grant is stored
//! sealed; after a restart a member key's `type: "connector"` request lists and calls its tools,
//! the dead access token is refreshed (on the server's 401, and before its expiry), the rotated
//! refresh token is kept across another restart, and no token value appears in any answer, the
//! store's files or the logs.

#![expect(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test helpers fail loudly"
)]

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use agentd_server::config::StoreLocation;
use serde_json::{Value, json};
use testkit::mcp::{McpFixture, Transport};
use testkit::{Reply, TestApp};

const MODEL: &str = "openai/gpt-test";

/// Everything the process logs at debug level (agentd's crates) from the first call on.
fn logs() -> Arc<Mutex<Vec<u8>>> {
    static LOGS: OnceLock<Arc<Mutex<Vec<u8>>>> = OnceLock::new();
    LOGS.get_or_init(|| {
        let buffer = Arc::new(Mutex::new(Vec::new()));
        let writer = Buffer(buffer.clone());
        let _ = tracing_subscriber::fmt()
            .with_env_filter(tracing_subscriber::EnvFilter::new(
                "info,agentd_engine=debug,agentd_mcp=debug,agentd_server=debug,agentd_store=debug",
            ))
            .with_writer(move || writer.clone())
            .try_init();
        buffer
    })
    .clone()
}

#[derive(Clone)]
struct Buffer(Arc<Mutex<Vec<u8>>>);

impl Write for Buffer {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(bytes);
        Ok(bytes.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// A data directory kept across app restarts (removed when dropped).
struct Dir(PathBuf);

impl Dir {
    fn new(name: &str) -> Dir {
        let dir = std::env::temp_dir().join(format!("agentd-oauth-{name}-{}", std::process::id()));
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
struct Seen(Mutex<Vec<String>>);

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

    fn push(&self, text: String) {
        self.0.lock().unwrap().push(text);
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

/// An owner key made in open mode, then an admin and a member key of project `alpha`.
async fn keys(app: &TestApp, seen: &Seen) -> (String, String) {
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
    let (status, body) = seen
        .post(app, "/v1/admin/projects", &owner, json!({"name": "alpha"}))
        .await;
    assert_eq!(status, 201, "{body}");
    let mut made = Vec::new();
    for role in ["admin", "member"] {
        let (status, body) = seen
            .post(
                app,
                "/v1/admin/keys?project=alpha",
                &owner,
                json!({"role": role}),
            )
            .await;
        assert_eq!(status, 201, "{body}");
        made.push(body["key"].as_str().unwrap().to_owned());
    }
    (made[0].clone(), made[1].clone())
}

/// How many times the fixture's token endpoint served a grant type.
fn token_requests(fixture: &McpFixture, grant_type: &str) -> usize {
    fixture
        .log()
        .iter()
        .filter(|e| e["event"] == "token" && e["grant_type"] == grant_type)
        .count()
}

/// Every access and refresh token the fixture issued.
fn issued_tokens(fixture: &McpFixture) -> Vec<String> {
    fixture
        .log()
        .iter()
        .filter(|e| e["event"] == "issued")
        .flat_map(|e| {
            [
                e["access_token"].as_str().unwrap().to_owned(),
                e["refresh_token"].as_str().unwrap().to_owned(),
            ]
        })
        .collect()
}

/// Starts the OAuth connection as `key` and follows it like a browser: the authorization
/// server approves at once and redirects to agentd's callback (requested without any key).
/// Returns the callback URL (to try it again).
async fn connect(app: &TestApp, seen: &Seen, key: &str, id: &str, fixture: &McpFixture) -> String {
    let (status, started) = seen
        .post(
            app,
            &format!("/v1/admin/connectors/{id}/oauth/start"),
            key,
            json!({}),
        )
        .await;
    assert_eq!(status, 200, "{started}");
    assert_eq!(started["object"], "connector.oauth_authorization");
    assert_eq!(started["connector_id"], id);
    let url = started["authorization_url"].as_str().unwrap();
    let origin = fixture
        .url
        .trim_end_matches("/mcp")
        .trim_end_matches("/sse");
    assert!(url.starts_with(origin), "{url}");
    let state = started["state"].as_str().unwrap();
    assert!(url.contains(&format!("state={state}")), "{url}");
    assert!(started["expires_at"].as_i64().unwrap() > 0);

    let browser = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap();
    let approved = browser.get(url).send().await.unwrap();
    assert_eq!(approved.status().as_u16(), 302);
    let callback = approved.headers()["location"].to_str().unwrap().to_owned();
    assert!(
        callback.starts_with(&app.url("/v1/admin/oauth/callback")),
        "{callback}"
    );
    let page = browser.get(&callback).send().await.unwrap();
    let status = page.status().as_u16();
    let text = page.text().await.unwrap();
    seen.push(text.clone());
    assert_eq!(status, 200, "{text}");
    assert!(text.contains("is connected"), "{text}");
    callback
}

#[tokio::test]
async fn an_admin_connects_an_oauth_server_and_runs_use_and_refresh_its_grant() {
    let logs = logs();
    let dir = Dir::new("flow");
    let seen = Seen::default();
    // Access tokens die after 2 s but are announced for an hour: only the server's 401 tells.
    let fixture = McpFixture::start_with_args(
        "oauth",
        Transport::StreamableHttp,
        &["--token-lifetime", "2", "--announced-lifetime", "3600"],
    )
    .await;
    let (admin, member) = {
        let app = app_in(&dir.0).await;
        let (admin, member) = keys(&app, &seen).await;
        let (status, created) = seen
            .post(
                &app,
                "/v1/admin/connectors",
                &admin,
                json!({"id": "connector_secure", "server_label": "secure",
                       "server_url": fixture.url, "authorization_type": "oauth"}),
            )
            .await;
        assert_eq!(status, 201, "{created}");
        assert_eq!(
            created["authorization"],
            json!({"set": false, "type": "oauth", "connected": false})
        );

        // Not connected yet: a request naming it is refused, saying what to do.
        let (status, refused) = seen
            .post(
                &app,
                "/v1/responses",
                &member,
                json!({"model": MODEL, "input": "x",
                       "tools": [{"type": "connector", "id": "connector_secure"}]}),
            )
            .await;
        assert_eq!(status, 400, "{refused}");
        assert_eq!(refused["error"]["param"], "tools[0].id");
        let message = refused["error"]["message"].as_str().unwrap();
        assert!(message.contains("OAuth connection"), "{message}");
        let (_, test) = seen
            .post(
                &app,
                "/v1/admin/connectors/connector_secure/test",
                &admin,
                json!({}),
            )
            .await;
        assert_eq!(test["ok"], false, "{test}");
        assert!(test["error"].as_str().unwrap().contains("not connected"));

        // Only an admin starts it; a bearer connector cannot be started.
        let (status, _) = seen
            .post(
                &app,
                "/v1/admin/connectors/connector_secure/oauth/start",
                &member,
                json!({}),
            )
            .await;
        assert_eq!(status, 403);

        let callback = connect(&app, &seen, &admin, "connector_secure", &fixture).await;
        assert_eq!(token_requests(&fixture, "authorization_code"), 1);
        // The state is single use.
        let again = reqwest::get(&callback).await.unwrap();
        assert_eq!(again.status().as_u16(), 400);
        seen.push(again.text().await.unwrap());

        let (status, got) = seen
            .get(&app, "/v1/admin/connectors/connector_secure", &admin)
            .await;
        assert_eq!(status, 200, "{got}");
        assert_eq!(got["authorization"]["type"], "oauth");
        assert_eq!(got["authorization"]["connected"], true);
        assert!(got["authorization"]["expires_at"].as_i64().unwrap() > 0);
        let (_, events) = seen
            .get(&app, "/v1/admin/connectors/connector_secure/events", &admin)
            .await;
        let kinds: Vec<&str> = events["data"]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| e["kind"].as_str().unwrap())
            .collect();
        assert!(kinds.contains(&"authorized"), "{events}");
        (admin, member)
    };

    // A new process: the grant was stored, not held in memory. The access token has died
    // meanwhile; the server's 401 makes the run refresh once and go on.
    let app = app_in(&dir.0).await;
    tokio::time::sleep(Duration::from_millis(2500)).await;
    let refreshes = token_requests(&fixture, "refresh_token");
    let (status, test) = seen
        .post(
            &app,
            "/v1/admin/connectors/connector_secure/test",
            &admin,
            json!({}),
        )
        .await;
    assert_eq!(status, 200, "{test}");
    assert_eq!(test["ok"], true, "{test}");
    assert!(
        test["tools"]
            .as_array()
            .unwrap()
            .iter()
            .any(|t| t["name"] == "echo"),
        "{test}"
    );
    assert_eq!(token_requests(&fixture, "refresh_token"), refreshes + 1);

    tokio::time::sleep(Duration::from_millis(2500)).await;
    app.fake.push(Reply::tool_calls(vec![(
        "call_1",
        "secure__echo",
        r#"{"text":"through oauth"}"#,
    )]));
    app.fake.push(Reply::text("done"));
    let request = json!({"model": MODEL, "input": "echo", "tools": [
        {"type": "connector", "id": "connector_secure", "defer_loading": false}
    ]});
    let (status, response) = seen
        .post(&app, "/v1/responses", &member, request.clone())
        .await;
    assert_eq!(status, 200, "{response}");
    assert_eq!(response["status"], "completed", "{response}");
    let list = items(&response, "mcp_list_tools")[0];
    assert_eq!(list["connector_id"], "connector_secure");
    let call = items(&response, "mcp_call")[0];
    assert_eq!(call["connector_id"], "connector_secure");
    assert!(
        call["output"].as_str().unwrap().contains("through oauth"),
        "{call}"
    );
    assert_eq!(token_requests(&fixture, "refresh_token"), refreshes + 2);
    let (_, got) = seen
        .get(&app, "/v1/admin/connectors/connector_secure", &admin)
        .await;
    assert_eq!(got["authorization"]["connected"], true);
    drop(app);

    // Each refresh rotated the refresh token (the fixture forgets the old one): another
    // restart still works, so the rotated one was stored.
    let app = app_in(&dir.0).await;
    tokio::time::sleep(Duration::from_millis(2500)).await;
    app.fake.push(Reply::tool_calls(vec![(
        "call_1",
        "secure__add",
        r#"{"a":2,"b":3}"#,
    )]));
    app.fake.push(Reply::text("done"));
    let request = json!({"model": MODEL, "input": "add", "tools": [
        {"type": "connector", "id": "connector_secure", "defer_loading": false}
    ]});
    let (status, response) = seen.post(&app, "/v1/responses", &member, request).await;
    assert_eq!(status, 200, "{response}");
    assert_eq!(response["status"], "completed", "{response}");
    let call = items(&response, "mcp_call")[0];
    assert!(call["output"].as_str().unwrap().contains('5'), "{call}");
    drop(app);

    // No token in any answer, any file of the data directory, or the logs.
    let tokens = issued_tokens(&fixture);
    assert!(tokens.len() >= 8, "{tokens:?}");
    let answers = seen.all();
    let logged = String::from_utf8_lossy(&logs.lock().unwrap()).into_owned();
    assert!(logged.contains("connector"), "the log capture works");
    for token in &tokens {
        assert!(!answers.contains(token.as_str()), "an answer holds a token");
        assert!(!logged.contains(token.as_str()), "the log holds a token");
    }
    for entry in std::fs::read_dir(&dir.0).unwrap() {
        let path = entry.unwrap().path();
        if path.is_file() {
            let bytes = std::fs::read(&path).unwrap();
            for token in &tokens {
                assert!(
                    !bytes.windows(token.len()).any(|w| w == token.as_bytes()),
                    "{} holds a token",
                    path.display()
                );
            }
        }
    }
}

#[tokio::test]
async fn a_token_is_refreshed_before_it_expires_and_errors_name_the_field() {
    let dir = Dir::new("expiry");
    let seen = Seen::default();
    // An honest server: tokens live 2 s and say so.
    let fixture =
        McpFixture::start_with_args("oauth", Transport::Sse, &["--token-lifetime", "2"]).await;
    let app = app_in(&dir.0).await;
    let (admin, _) = keys(&app, &seen).await;

    // A bearer connector has no OAuth connection to start; an OAuth one takes no token.
    let (status, _) = seen
        .post(
            &app,
            "/v1/admin/connectors",
            &admin,
            json!({"id": "connector_plain", "server_label": "plain", "server_url": fixture.url,
                   "authorization": "some-token-1"}),
        )
        .await;
    assert_eq!(status, 201);
    let (status, refused) = seen
        .post(
            &app,
            "/v1/admin/connectors/connector_plain/oauth/start",
            &admin,
            json!({}),
        )
        .await;
    assert_eq!(status, 400, "{refused}");
    assert_eq!(refused["error"]["param"], "authorization_type");
    let (status, refused) = seen
        .post(
            &app,
            "/v1/admin/connectors",
            &admin,
            json!({"server_label": "x", "server_url": fixture.url,
                   "authorization_type": "oauth", "authorization": "some-token-2"}),
        )
        .await;
    assert_eq!(status, 400, "{refused}");
    assert_eq!(refused["error"]["param"], "authorization");

    let (status, created) = seen
        .post(
            &app,
            "/v1/admin/connectors",
            &admin,
            json!({"id": "connector_legacy", "server_label": "legacy", "server_url": fixture.url,
                   "transport": "sse", "authorization_type": "oauth"}),
        )
        .await;
    assert_eq!(status, 201, "{created}");
    // A callback URL that is not agentd's is refused before anything is sent.
    let (status, refused) = seen
        .post(
            &app,
            "/v1/admin/connectors/connector_legacy/oauth/start",
            &admin,
            json!({"redirect_uri": "http://127.0.0.1:1/elsewhere"}),
        )
        .await;
    assert_eq!(status, 400, "{refused}");
    assert_eq!(refused["error"]["param"], "redirect_uri");
    connect(&app, &seen, &admin, "connector_legacy", &fixture).await;
    // A forged state is refused.
    let forged = reqwest::get(app.url("/v1/admin/oauth/callback?code=x&state=forged"))
        .await
        .unwrap();
    assert_eq!(forged.status().as_u16(), 400);

    // The stored token is past its expiry: the run refreshes first, without a 401.
    tokio::time::sleep(Duration::from_millis(2500)).await;
    let refreshes = token_requests(&fixture, "refresh_token");
    let requests = fixture.requests().len();
    app.fake.push(Reply::tool_calls(vec![(
        "call_1",
        "legacy__echo",
        r#"{"text":"over sse"}"#,
    )]));
    app.fake.push(Reply::text("done"));
    let (status, response) = seen
        .post(
            &app,
            "/v1/responses",
            &admin,
            json!({"model": MODEL, "input": "echo", "tools": [
                {"type": "connector", "id": "connector_legacy", "defer_loading": false}
            ]}),
        )
        .await;
    assert_eq!(status, 200, "{response}");
    assert_eq!(response["status"], "completed", "{response}");
    let call = items(&response, "mcp_call")[0];
    assert!(call["output"].as_str().unwrap().contains("over sse"));
    assert_eq!(token_requests(&fixture, "refresh_token"), refreshes + 1);
    // Every MCP request of the run carried the refreshed token: the first one already did
    // (no 401 first).
    let newest = fixture
        .log()
        .iter()
        .rev()
        .find(|e| e["event"] == "issued")
        .unwrap()["access_token"]
        .as_str()
        .unwrap()
        .to_owned();
    let sent: Vec<Value> = fixture.requests()[requests..]
        .iter()
        .filter(|r| r["path"] != "/token")
        .cloned()
        .collect();
    assert!(!sent.is_empty());
    for request in &sent {
        assert_eq!(
            request["authorization"],
            json!(format!("Bearer {newest}")),
            "{request}"
        );
    }

    // Pointed at another server, the connector's tokens do not follow: connect it again.
    let (status, _) = seen
        .send(
            &app,
            reqwest::Method::PATCH,
            "/v1/admin/connectors/connector_legacy",
            Some(&admin),
            Some(json!({"server_url": format!("{}-other", fixture.url)})),
        )
        .await;
    assert_eq!(status, 200);
    let before = fixture.requests().len();
    let (status, refused) = seen
        .post(
            &app,
            "/v1/responses",
            &admin,
            json!({"model": MODEL, "input": "x",
                   "tools": [{"type": "connector", "id": "connector_legacy"}]}),
        )
        .await;
    assert_eq!(status, 400, "{refused}");
    assert_eq!(refused["error"]["param"], "tools[0].id");
    assert_eq!(fixture.requests().len(), before);
}

#[tokio::test]
async fn a_refused_refresh_token_fails_the_run_and_marks_the_connector() {
    let dir = Dir::new("lost");
    let seen = Seen::default();
    // Tokens live 2 s and the server refuses every refresh token (as after a revocation).
    let fixture = McpFixture::start_with_args(
        "oauth",
        Transport::StreamableHttp,
        &["--token-lifetime", "2", "--refuse-refresh"],
    )
    .await;
    let app = app_in(&dir.0).await;
    let (admin, member) = keys(&app, &seen).await;
    let (status, created) = seen
        .post(
            &app,
            "/v1/admin/connectors",
            &admin,
            json!({"id": "connector_revoked", "server_label": "revoked",
                   "server_url": fixture.url, "authorization_type": "oauth"}),
        )
        .await;
    assert_eq!(status, 201, "{created}");
    connect(&app, &seen, &admin, "connector_revoked", &fixture).await;

    tokio::time::sleep(Duration::from_millis(2500)).await;
    let (status, failed) = seen
        .post(
            &app,
            "/v1/responses",
            &member,
            json!({"model": MODEL, "input": "x", "tools": [
                {"type": "connector", "id": "connector_revoked", "defer_loading": false}
            ]}),
        )
        .await;
    assert_eq!(status, 424, "{failed}");
    assert_eq!(failed["error"]["type"], "external_connector_error");
    let message = failed["error"]["message"].as_str().unwrap();
    assert!(message.contains("authorized again"), "{message}");
    assert!(
        fixture
            .log()
            .iter()
            .any(|e| e["event"] == "refresh_refused")
    );
    let (_, got) = seen
        .get(&app, "/v1/admin/connectors/connector_revoked", &admin)
        .await;
    assert_eq!(got["status"], "error", "{got}");
    let last_error = got["last_error"].as_str().unwrap();
    assert!(last_error.contains("authorized again"), "{last_error}");
    for token in issued_tokens(&fixture) {
        assert!(!seen.all().contains(token.as_str()));
    }
}
