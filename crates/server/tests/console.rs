//! The web console's server side: `/console` and its files (embedded, with a strict
//! Content-Security-Policy and their content types), and the routes it reads besides the
//! existing API: the response listing (`GET /v1/admin/responses`: filters, pages, project
//! scoping for admin and member keys), the pending approvals (`GET /v1/admin/approvals`,
//! until a continuation answers) and a response's model turns
//! (`GET /v1/admin/responses/{id}/turns`: times and tokens of each call to the model, for
//! plain, paused, continued, streamed, background, failed and cancelled runs, and the
//! `models` chain). The browser tests are in
//! tests/console/.

#![expect(clippy::unwrap_used, reason = "test helpers fail loudly")]

use std::collections::BTreeSet;

use agentd_server::console_assets::ASSETS;
use serde_json::{Value, json};
use testkit::mcp::{McpFixture, Transport};
use testkit::{Reply, TestApp};

const MODEL: &str = "openai/gpt-test";
const OTHER_MODEL: &str = "openai/gpt-other";

async fn send(
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
    (status, response.json().await.unwrap_or(Value::Null))
}

async fn get(app: &TestApp, path: &str, key: &str) -> (u16, Value) {
    send(app, reqwest::Method::GET, path, Some(key), None).await
}

async fn post(app: &TestApp, path: &str, key: &str, body: Value) -> (u16, Value) {
    send(app, reqwest::Method::POST, path, Some(key), Some(body)).await
}

struct Keys {
    owner: String,
    a_admin: String,
    a_member: String,
    b_admin: String,
    b_member: String,
}

/// An owner key made in open mode, projects `alpha` and `beta`, an admin and a member key each.
async fn two_projects(app: &TestApp) -> Keys {
    let (status, owner) = send(
        app,
        reqwest::Method::POST,
        "/v1/admin/keys",
        None,
        Some(json!({"role": "owner"})),
    )
    .await;
    assert_eq!(status, 201, "{owner}");
    let owner = owner["key"].as_str().unwrap().to_owned();
    let mut keys = Vec::new();
    for project in ["alpha", "beta"] {
        let (status, body) =
            post(app, "/v1/admin/projects", &owner, json!({"name": project})).await;
        assert_eq!(status, 201, "{body}");
        for role in ["admin", "member"] {
            let (status, body) = post(
                app,
                &format!("/v1/admin/keys?project={project}"),
                &owner,
                json!({"role": role}),
            )
            .await;
            assert_eq!(status, 201, "{body}");
            keys.push(body["key"].as_str().unwrap().to_owned());
        }
    }
    let mut keys = keys.into_iter();
    Keys {
        owner,
        a_admin: keys.next().unwrap(),
        a_member: keys.next().unwrap(),
        b_admin: keys.next().unwrap(),
        b_member: keys.next().unwrap(),
    }
}

trait WaitWithKey {
    async fn wait_terminal_with_key(&self, id: &str, key: &str) -> String;
}

impl WaitWithKey for TestApp {
    /// Waits (bounded) until a background response has ended; its status.
    async fn wait_terminal_with_key(&self, id: &str, key: &str) -> String {
        let running = |state: &str| ["queued", "in_progress"].contains(&state);
        let mut state = String::new();
        for _ in 0..200 {
            let (status, body) = get(self, &format!("/v1/responses/{id}"), key).await;
            assert_eq!(status, 200, "{body}");
            state = body["status"].as_str().unwrap().to_owned();
            if !running(&state) {
                break;
            }
            tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        }
        assert!(!running(&state), "{id} did not end within 10 s");
        state
    }
}

fn ids(list: &Value) -> Vec<String> {
    list["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["id"].as_str().unwrap().to_owned())
        .collect()
}

#[tokio::test]
async fn the_console_and_its_files_are_served_with_a_strict_policy() {
    let app = TestApp::spawn().await;
    let response = app.client.get(app.url("/console")).send().await.unwrap();
    assert_eq!(response.status(), 200);
    let header = |name: &str| {
        response
            .headers()
            .get(name)
            .map(|v| v.to_str().unwrap().to_owned())
            .unwrap_or_default()
    };
    assert_eq!(header("content-type"), "text/html; charset=utf-8");
    let csp = header("content-security-policy");
    for directive in [
        "default-src 'self'",
        "script-src 'self'",
        "style-src 'self'",
        "frame-ancestors 'none'",
        "object-src 'none'",
    ] {
        assert!(csp.contains(directive), "{directive} missing from {csp}");
    }
    assert!(!csp.contains("unsafe"), "{csp}");
    assert_eq!(header("x-frame-options"), "DENY");
    assert_eq!(header("x-content-type-options"), "nosniff");
    let page = response.text().await.unwrap();
    assert!(page.contains(r#"<script type="module" src="/console/app.js"></script>"#));
    // No inline script or style for the policy to forbid.
    assert_eq!(page.matches("<script").count(), 1, "{page}");
    assert!(!page.contains("style="), "{page}");
    assert!(!page.contains("<style"), "{page}");

    let served: BTreeSet<&str> = ASSETS.iter().map(|a| a.path).collect();
    for asset in ASSETS {
        let response = app.client.get(app.url(asset.path)).send().await.unwrap();
        assert_eq!(response.status(), 200, "{}", asset.path);
        let content_type = response.headers()["content-type"]
            .to_str()
            .unwrap()
            .to_owned();
        let policy = response.headers()["content-security-policy"]
            .to_str()
            .unwrap()
            .to_owned();
        assert_eq!(policy, csp, "{}", asset.path);
        let expected = match asset.path.rsplit_once('.').map(|(_, ext)| ext) {
            Some("js") => "text/javascript; charset=utf-8",
            Some("css") => "text/css; charset=utf-8",
            _ => "text/html; charset=utf-8",
        };
        assert_eq!(content_type, expected, "{}", asset.path);
        let body = response.text().await.unwrap();
        assert_eq!(body, asset.body);
        // Every module a file imports is served too; data never goes through innerHTML.
        for import in body.split("from './").skip(1) {
            let file = import.split('\'').next().unwrap();
            assert!(
                served.contains(format!("/console/{file}").as_str()),
                "{} imports {file}, which is not served",
                asset.path
            );
        }
        assert!(!body.contains("innerHTML"), "{}", asset.path);
    }
    let (status, body) = app.get("/console/nothing.js").await;
    assert_eq!(
        (status, &body["error"]["message"]),
        (404, &json!("no such route"))
    );
}

#[tokio::test]
async fn the_response_listing_filters_pages_and_keeps_to_the_project() {
    let app = TestApp::spawn_with(|config| {
        config.providers[0].models.push("gpt-other".to_owned());
    })
    .await;
    let keys = two_projects(&app).await;
    let run = |key: String, model: &'static str, extra: Value| {
        let app = &app;
        async move {
            let mut body = json!({"model": model, "input": "hi"});
            for (name, value) in extra.as_object().unwrap() {
                body[name] = value.clone();
            }
            let (status, response) = post(app, "/v1/responses", &key, body).await;
            (status, response)
        }
    };
    let mut alpha = Vec::new();
    for (model, reply) in [
        (MODEL, Reply::text("one")),
        (OTHER_MODEL, Reply::text("two")),
        (MODEL, Reply::text("three")),
    ] {
        app.fake.push(reply);
        let (status, response) = run(keys.a_member.clone(), model, json!({})).await;
        assert_eq!(status, 200, "{response}");
        alpha.push(response["id"].as_str().unwrap().to_owned());
    }
    app.fake.push(Reply::error(400, "upstream refuses"));
    let (_, failed) = run(keys.a_admin.clone(), MODEL, json!({"background": true})).await;
    let failed = failed["id"].as_str().unwrap().to_owned();
    let ended = app.wait_terminal_with_key(&failed, &keys.a_admin).await;
    assert_eq!(ended, "failed");
    let failed = Some(failed);
    app.fake.push(Reply::text("hidden"));
    let (status, hidden) = run(keys.a_admin.clone(), MODEL, json!({"store": false})).await;
    assert_eq!(status, 200, "{hidden}");
    app.fake.push(Reply::text("beta"));
    let (status, beta) = run(keys.b_member.clone(), MODEL, json!({})).await;
    assert_eq!(status, 200, "{beta}");
    let beta = beta["id"].as_str().unwrap().to_owned();

    // A member key sees its project's runs, newest first; never `store: false` ones nor
    // another project's.
    let (status, list) = get(&app, "/v1/admin/responses", &keys.a_member).await;
    assert_eq!(status, 200, "{list}");
    assert_eq!(list["object"], "list");
    let listed = ids(&list);
    let mut expected: Vec<String> = alpha.clone();
    expected.extend(failed.clone());
    let as_set = |v: &[String]| v.iter().cloned().collect::<BTreeSet<_>>();
    assert_eq!(as_set(&listed), as_set(&expected), "{list:#}");
    assert!(!listed.contains(&beta));
    assert!(!listed.contains(&hidden["id"].as_str().unwrap().to_owned()));
    let created: Vec<i64> = list["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["created_at"].as_i64().unwrap())
        .collect();
    assert!(created.windows(2).all(|w| w[0] >= w[1]), "{created:?}");
    assert_eq!(list["has_more"], false);

    let (_, list) = get(&app, "/v1/admin/responses", &keys.b_admin).await;
    assert_eq!(ids(&list), vec![beta.clone()]);
    // Another project is 404 for a member or admin key, readable for the owner's.
    let (status, _) = get(&app, "/v1/admin/responses?project=alpha", &keys.b_admin).await;
    assert_eq!(status, 404);
    let (status, list) = get(&app, "/v1/admin/responses?project=beta", &keys.owner).await;
    assert_eq!(status, 200);
    assert_eq!(ids(&list), vec![beta.clone()]);

    // Filters: status, model (with or without the provider), time.
    if let Some(failed) = &failed {
        let (_, list) = get(&app, "/v1/admin/responses?status=failed", &keys.a_member).await;
        assert_eq!(ids(&list), vec![failed.clone()], "{list:#}");
    }
    let (_, list) = get(&app, "/v1/admin/responses?status=completed", &keys.a_member).await;
    assert_eq!(as_set(&ids(&list)), as_set(&alpha));
    let (_, list) = get(&app, "/v1/admin/responses?model=gpt-other", &keys.a_member).await;
    assert_eq!(ids(&list), vec![alpha[1].clone()]);
    let (_, list) = get(
        &app,
        "/v1/admin/responses?model=openai/gpt-test&status=completed",
        &keys.a_member,
    )
    .await;
    assert_eq!(
        as_set(&ids(&list)),
        as_set(&[alpha[0].clone(), alpha[2].clone()])
    );
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs();
    let (_, list) = get(
        &app,
        &format!("/v1/admin/responses?created_after={}", now + 3600),
        &keys.a_member,
    )
    .await;
    assert_eq!(ids(&list), Vec::<String>::new());
    let (_, list) = get(
        &app,
        &format!(
            "/v1/admin/responses?created_before={}&status=completed",
            now + 3600
        ),
        &keys.a_member,
    )
    .await;
    assert_eq!(ids(&list).len(), 3);
    let (_, list) = get(
        &app,
        &format!("/v1/admin/responses?created_before={}", now - 3600),
        &keys.a_member,
    )
    .await;
    assert_eq!(ids(&list), Vec::<String>::new());

    // Pages: one at a time, every response once.
    let mut paged = Vec::new();
    let mut after = String::new();
    loop {
        let (status, page) = get(
            &app,
            &format!("/v1/admin/responses?status=completed&limit=1{after}"),
            &keys.a_member,
        )
        .await;
        assert_eq!(status, 200, "{page}");
        paged.extend(ids(&page));
        if page["has_more"] != true {
            break;
        }
        after = format!("&after={}", page["last_id"].as_str().unwrap());
        assert!(paged.len() <= 3, "{paged:?}");
    }
    assert_eq!(paged.len(), 3);
    assert_eq!(as_set(&paged), as_set(&alpha));
    // The same with a model filter (scanned, not counted in SQL).
    let (_, page) = get(
        &app,
        "/v1/admin/responses?model=gpt-test&limit=1",
        &keys.a_member,
    )
    .await;
    assert_eq!(ids(&page).len(), 1);
    assert_eq!(page["has_more"], true);

    // Refusals name the parameter.
    for (query, param) in [
        ("status=done", "status"),
        ("status=", "status"),
        ("limit=0", "limit"),
        ("limit=101", "limit"),
        ("after=resp_nope", "after"),
        ("created_after=10&created_before=5", "created_after"),
        ("colour=blue", "query"),
    ] {
        let (status, body) =
            get(&app, &format!("/v1/admin/responses?{query}"), &keys.a_admin).await;
        assert_eq!(status, 400, "{query}: {body}");
        assert_eq!(body["error"]["param"], param, "{query}: {body}");
    }
    // Beta's response is no cursor for alpha.
    let (status, _) = get(
        &app,
        &format!("/v1/admin/responses?after={beta}"),
        &keys.a_admin,
    )
    .await;
    assert_eq!(status, 400);
    let (status, _) = send(
        &app,
        reqwest::Method::GET,
        "/v1/admin/responses",
        None,
        None,
    )
    .await;
    assert_eq!(status, 401);
}

#[tokio::test]
async fn pending_approvals_are_listed_until_a_continuation_answers() {
    let app = TestApp::spawn_with(|config| {
        config.allow_private = vec!["127.0.0.0/8".to_owned()];
    })
    .await;
    let keys = two_projects(&app).await;
    let fixture = McpFixture::start("basic", Transport::StreamableHttp).await;
    let tools = json!([{"type": "mcp", "server_label": "srv", "server_url": fixture.url,
                        "require_approval": "always"}]);
    app.fake.push(Reply::tool_calls(vec![(
        "call_1",
        "srv__echo",
        r#"{"text":"approve me"}"#,
    )]));
    let (status, first) = post(
        &app,
        "/v1/responses",
        &keys.a_member,
        json!({"model": MODEL, "input": "echo", "tools": tools}),
    )
    .await;
    assert_eq!(status, 200, "{first}");
    let request = first["output"]
        .as_array()
        .unwrap()
        .iter()
        .find(|item| item["type"] == "mcp_approval_request")
        .cloned()
        .unwrap_or_default();
    assert!(request.is_object(), "{first:#}");

    let (status, pending) = get(&app, "/v1/admin/approvals", &keys.a_member).await;
    assert_eq!(status, 200, "{pending}");
    assert_eq!(
        pending["data"],
        json!([{
            "id": request["id"],
            "response_id": first["id"],
            "model": MODEL,
            "created_at": first["created_at"],
            "server_label": "srv",
            "name": "echo",
            "arguments": r#"{"text":"approve me"}"#,
        }])
    );
    // Another project's keys see nothing of it.
    let (_, other) = get(&app, "/v1/admin/approvals", &keys.b_admin).await;
    assert_eq!(other["data"], json!([]));
    let (status, _) = get(&app, "/v1/admin/approvals?project=alpha", &keys.b_member).await;
    assert_eq!(status, 404);

    // The approval answered by a continuation: no longer pending.
    app.fake.push(Reply::text("echoed"));
    let (status, second) = post(
        &app,
        "/v1/responses",
        &keys.a_admin,
        json!({"model": MODEL, "previous_response_id": first["id"], "tools": tools,
               "input": [{"type": "mcp_approval_response", "approval_request_id": request["id"],
                          "approve": true}]}),
    )
    .await;
    assert_eq!(status, 200, "{second}");
    assert!(
        second["output"]
            .as_array()
            .unwrap()
            .iter()
            .any(|item| item["type"] == "mcp_call"),
        "{second:#}"
    );
    let (_, pending) = get(&app, "/v1/admin/approvals", &keys.a_member).await;
    assert_eq!(pending["data"], json!([]), "{pending:#}");
}

/// The turns of a response from the admin route, as an array.
async fn turns(app: &TestApp, id: &str, key: &str) -> Vec<Value> {
    let (status, body) = get(app, &format!("/v1/admin/responses/{id}/turns"), key).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["object"], "list");
    assert_eq!(body["response_id"], id);
    body["data"].as_array().unwrap().clone()
}

fn tokens(turn: &Value) -> Value {
    let usage = &turn["usage"];
    json!([
        usage["input_tokens"],
        usage["output_tokens"],
        usage["reasoning_tokens"],
        usage["cached_tokens"]
    ])
}

fn ms(turn: &Value, field: &str) -> i64 {
    turn[field].as_i64().unwrap()
}

#[tokio::test]
async fn each_model_turn_is_recorded_with_its_times_and_tokens() {
    let app = TestApp::spawn_with(|config| {
        config.allow_private = vec!["127.0.0.0/8".to_owned()];
    })
    .await;
    let keys = two_projects(&app).await;
    let fixture = McpFixture::start("basic", Transport::StreamableHttp).await;
    let tools = json!([{"type": "mcp", "server_label": "srv", "server_url": fixture.url,
                        "require_approval": "never"}]);
    // Turn 1 calls a tool, turn 2 answers after its result; each reports its own usage, and
    // the answer streams slowly enough to take a measurable time.
    app.fake.push(
        Reply::tool_calls(vec![("call_1", "srv__echo", r#"{"text":"hi"}"#)])
            .usage(100, 7)
            .cached_tokens(40)
            .reasoning_tokens(3),
    );
    app.fake.push(
        Reply::text_chunks(["The echo ", "said ", "hi."])
            .delay_between_chunks(std::time::Duration::from_millis(60))
            .usage(150, 9)
            .cached_tokens(100),
    );
    let before_ms = chrono_ms();
    let (status, run) = post(
        &app,
        "/v1/responses",
        &keys.a_member,
        json!({"model": MODEL, "input": "echo hi", "tools": tools}),
    )
    .await;
    let after_ms = chrono_ms();
    assert_eq!(status, 200, "{run}");
    assert_eq!(run["status"], "completed", "{run:#}");
    // The public response object is unchanged: no turns on it.
    assert!(run.get("turns").is_none(), "{run:#}");
    let id = run["id"].as_str().unwrap();

    let list = turns(&app, id, &keys.a_member).await;
    assert_eq!(list.len(), 2, "{list:#?}");
    let (first, second) = (&list[0], &list[1]);
    assert_eq!(
        (first["step"].as_u64(), second["step"].as_u64()),
        (Some(1), Some(2))
    );
    for turn in &list {
        assert_eq!(turn["model"], MODEL);
        assert_eq!(turn["status"], "completed");
        assert!(turn.get("error").is_none(), "{turn}");
        let (start, duration) = (ms(turn, "started_at_ms"), ms(turn, "duration_ms"));
        assert!(
            start >= before_ms && start + duration <= after_ms,
            "{turn} not within the request"
        );
        let first_token = ms(turn, "time_to_first_token_ms");
        assert!((0..=duration).contains(&first_token), "{turn}");
    }
    assert_eq!(tokens(first), json!([100, 7, 3, 40]));
    assert_eq!(tokens(second), json!([150, 9, 0, 100]));
    // The second turn starts after the first ended (and the tool ran in between), and its
    // three chunks 60 ms apart took at least 120 ms, most of it after the first token.
    assert!(
        ms(second, "started_at_ms") >= ms(first, "started_at_ms") + ms(first, "duration_ms"),
        "{list:#?}"
    );
    assert!(ms(second, "duration_ms") >= 120, "{second}");
    assert!(
        ms(second, "duration_ms") - ms(second, "time_to_first_token_ms") >= 100,
        "{second}"
    );
    // The run's totals are the sum of its turns.
    assert_eq!(run["usage"]["input_tokens"], 250);
    assert_eq!(run["usage"]["output_tokens"], 16);

    // Another project's keys see nothing of it; an unknown id is 404.
    let (status, _) = get(
        &app,
        &format!("/v1/admin/responses/{id}/turns"),
        &keys.b_admin,
    )
    .await;
    assert_eq!(status, 404);
    let (status, _) = get(
        &app,
        "/v1/admin/responses/resp_unknown/turns",
        &keys.a_admin,
    )
    .await;
    assert_eq!(status, 404);
}

fn chrono_ms() -> i64 {
    i64::try_from(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_millis(),
    )
    .unwrap()
}

#[tokio::test]
async fn a_paused_run_and_its_streamed_continuation_each_show_their_own_turns() {
    let app = TestApp::spawn_with(|config| {
        config.allow_private = vec!["127.0.0.0/8".to_owned()];
    })
    .await;
    let keys = two_projects(&app).await;
    let fixture = McpFixture::start("basic", Transport::StreamableHttp).await;
    let tools = json!([{"type": "mcp", "server_label": "srv", "server_url": fixture.url,
                        "require_approval": "always"}]);
    app.fake.push(
        Reply::tool_calls(vec![("call_1", "srv__echo", r#"{"text":"approve me"}"#)]).usage(50, 5),
    );
    let (status, first) = post(
        &app,
        "/v1/responses",
        &keys.a_admin,
        json!({"model": MODEL, "input": "echo", "tools": tools}),
    )
    .await;
    assert_eq!(status, 200, "{first}");
    assert_eq!(first["status"], "requires_action", "{first:#}");
    let request = first["output"]
        .as_array()
        .unwrap()
        .iter()
        .find(|item| item["type"] == "mcp_approval_request")
        .cloned()
        .unwrap();
    let first_id = first["id"].as_str().unwrap();

    // The continuation, streamed: its own turn, its own tokens.
    app.fake.push(Reply::text("echoed").usage(70, 4));
    let stream = app
        .client
        .post(app.url("/v1/responses"))
        .bearer_auth(&keys.a_admin)
        .json(
            &json!({"model": MODEL, "previous_response_id": first_id, "tools": tools,
                      "stream": true,
                      "input": [{"type": "mcp_approval_response",
                                 "approval_request_id": request["id"], "approve": true}]}),
        )
        .send()
        .await
        .unwrap();
    assert_eq!(stream.status(), 200);
    let text = stream.text().await.unwrap();
    assert!(text.contains("response.completed"), "{text}");
    let second_id = text
        .split("\"id\":\"")
        .nth(1)
        .and_then(|rest| rest.split('"').next())
        .unwrap()
        .to_owned();
    assert!(second_id.starts_with("resp_"), "{second_id}");

    let paused = turns(&app, first_id, &keys.a_member).await;
    assert_eq!(paused.len(), 1, "{paused:#?}");
    assert_eq!(tokens(&paused[0]), json!([50, 5, 0, 0]));
    let continued = turns(&app, &second_id, &keys.a_member).await;
    assert_eq!(continued.len(), 1, "{continued:#?}");
    assert_eq!(continued[0]["step"], 1);
    assert_eq!(tokens(&continued[0]), json!([70, 4, 0, 0]));
    assert!(
        ms(&continued[0], "started_at_ms")
            >= ms(&paused[0], "started_at_ms") + ms(&paused[0], "duration_ms")
    );
}

#[tokio::test]
async fn a_failed_turn_of_a_background_run_is_recorded_with_its_error() {
    let app = TestApp::spawn().await;
    let keys = two_projects(&app).await;
    app.fake.push(
        Reply::text_chunks(["partial ", "answer"])
            .delay_between_chunks(std::time::Duration::from_millis(50))
            .then_cut(),
    );
    let (status, queued) = post(
        &app,
        "/v1/responses",
        &keys.a_member,
        json!({"model": MODEL, "input": "hello", "background": true}),
    )
    .await;
    assert_eq!(status, 200, "{queued}");
    let id = queued["id"].as_str().unwrap();
    assert_eq!(
        app.wait_terminal_with_key(id, &keys.a_member).await,
        "failed"
    );
    let list = turns(&app, id, &keys.a_member).await;
    assert_eq!(list.len(), 1, "{list:#?}");
    let turn = &list[0];
    assert_eq!(turn["status"], "failed", "{turn}");
    assert!(!turn["error"].as_str().unwrap().is_empty(), "{turn}");
    assert!(turn.get("usage").is_none(), "{turn}");
    // It failed after its first text, 50 ms before the second piece at least.
    let first_token = ms(turn, "time_to_first_token_ms");
    assert!(ms(turn, "duration_ms") >= first_token + 40, "{turn}");
}

#[tokio::test]
async fn a_model_of_the_chain_taking_a_failed_turn_over_is_a_turn_of_its_own() {
    let app = TestApp::spawn().await;
    app.fake.push(Reply::error(400, "the first model refused"));
    app.fake
        .push(Reply::text("the second model answered").usage(20, 3));
    let (status, run) = app
        .post(
            "/v1/responses",
            json!({"models": [MODEL, OTHER_MODEL], "input": "hello"}),
        )
        .await;
    assert_eq!(status, 200, "{run}");
    assert_eq!(run["status"], "completed", "{run:#}");
    let id = run["id"].as_str().unwrap();
    let (status, body) = app.get(&format!("/v1/admin/responses/{id}/turns")).await;
    assert_eq!(status, 200, "{body}");
    let list = body["data"].as_array().unwrap();
    assert_eq!(list.len(), 2, "{body:#}");
    let (failed, answered) = (&list[0], &list[1]);
    assert_eq!(
        (&failed["step"], &failed["model"], &failed["status"]),
        (&json!(1), &json!(MODEL), &json!("failed"))
    );
    assert!(
        failed["error"]
            .as_str()
            .unwrap()
            .contains("the first model refused"),
        "{failed}"
    );
    assert!(failed.get("usage").is_none(), "{failed}");
    assert!(failed.get("time_to_first_token_ms").is_none(), "{failed}");
    assert_eq!(
        (&answered["step"], &answered["model"], &answered["status"]),
        (&json!(1), &json!(OTHER_MODEL), &json!("completed"))
    );
    assert_eq!(tokens(answered), json!([20, 3, 0, 0]));
    assert!(
        ms(answered, "started_at_ms") >= ms(failed, "started_at_ms") + ms(failed, "duration_ms"),
        "{body:#}"
    );
}

#[tokio::test]
async fn a_turn_cut_short_by_a_cancel_is_recorded_cancelled() {
    let app = TestApp::spawn().await;
    app.fake
        .push(Reply::text_chunks(["thinking ", "aloud"]).then_hang());
    let (status, queued) = app
        .post(
            "/v1/responses",
            json!({"model": MODEL, "input": "hello", "background": true}),
        )
        .await;
    assert_eq!(status, 200, "{queued}");
    let id = queued["id"].as_str().unwrap();
    // Wait (bounded) until the model is streaming, then cancel.
    for _ in 0..200 {
        if !app.fake.requests().is_empty() {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(25)).await;
    }
    assert_eq!(app.fake.requests().len(), 1, "the model was never asked");
    let (status, body) = app
        .post(&format!("/v1/responses/{id}/cancel"), json!({}))
        .await;
    assert_eq!(status, 200, "{body}");
    let ended = app.wait_terminal(id).await;
    assert_eq!(ended["status"], "cancelled", "{ended:#}");
    let (_, body) = app.get(&format!("/v1/admin/responses/{id}/turns")).await;
    let list = body["data"].as_array().unwrap();
    assert_eq!(list.len(), 1, "{body:#}");
    assert_eq!(list[0]["status"], "cancelled", "{body:#}");
    assert!(list[0].get("error").is_none(), "{body:#}");
}
