//! The web console's server side: `/console` and its files (embedded, with a strict
//! Content-Security-Policy and their content types), and the two routes it reads besides the
//! existing API: the response listing (`GET /v1/admin/responses`: filters, pages, project
//! scoping for admin and member keys) and the pending approvals (`GET /v1/admin/approvals`,
//! until a continuation answers). The browser tests are in tests/console/.

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
