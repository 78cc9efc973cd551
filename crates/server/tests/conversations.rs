//! The OpenAI Conversations API over HTTP (`/v1/conversations…`), `conversation` on create,
//! `DELETE /v1/{responses|agent}/{id}`, `GET …/{id}/input_items` and `item_reference` input:
//! shapes, pagination, project scoping, and what the model is sent.

#![expect(clippy::unwrap_used, reason = "test helpers fail loudly")]

use serde_json::{Value, json};
use testkit::{Reply, TestApp};

const MODEL: &str = "openai/gpt-test";

/// Sends a request with an optional bearer key; returns the status and the JSON body.
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
    let text = response.text().await.unwrap();
    (status, serde_json::from_str(&text).unwrap_or(Value::Null))
}

async fn delete(app: &TestApp, path: &str) -> (u16, Value) {
    send(app, reqwest::Method::DELETE, path, None, None).await
}

/// The texts of the messages of the last upstream request, `role:text`.
fn sent_messages(app: &TestApp) -> Vec<String> {
    let request = app.fake.requests().pop().unwrap();
    request["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| {
            let content = match &m["content"] {
                Value::String(text) => text.clone(),
                Value::Array(parts) => parts
                    .iter()
                    .filter_map(|p| p["text"].as_str())
                    .collect::<Vec<_>>()
                    .join(""),
                _ => String::new(),
            };
            format!("{}:{content}", m["role"].as_str().unwrap())
        })
        .collect()
}

#[tokio::test]
async fn conversations_are_created_read_updated_and_deleted() {
    let app = TestApp::spawn().await;
    let (status, conversation) = app
        .post(
            "/v1/conversations",
            json!({"items": [{"type": "message", "role": "user", "content": "Hello!"}],
                   "metadata": {"topic": "demo"}}),
        )
        .await;
    assert_eq!(status, 200, "{conversation}");
    let id = conversation["id"].as_str().unwrap();
    assert!(id.starts_with("conv_"), "{id}");
    assert_eq!(conversation["object"], "conversation");
    assert_eq!(conversation["metadata"], json!({"topic": "demo"}));
    assert!(conversation["created_at"].as_i64().unwrap() > 0);

    let (status, got) = app.get(&format!("/v1/conversations/{id}")).await;
    assert_eq!(status, 200);
    assert_eq!(got, conversation);

    let (status, updated) = app
        .post(
            &format!("/v1/conversations/{id}"),
            json!({"metadata": {"topic": "changed"}}),
        )
        .await;
    assert_eq!(status, 200, "{updated}");
    assert_eq!(updated["metadata"], json!({"topic": "changed"}));
    let (_, got) = app.get(&format!("/v1/conversations/{id}")).await;
    assert_eq!(got["metadata"], json!({"topic": "changed"}));

    // An empty body is an empty conversation; an unknown field is refused by name.
    let empty = app
        .client
        .post(app.url("/v1/conversations"))
        .send()
        .await
        .unwrap();
    assert_eq!(empty.status().as_u16(), 200);
    let (status, error) = app.post("/v1/conversations", json!({"itemz": []})).await;
    assert_eq!(status, 400);
    assert_eq!(error["error"]["param"], "itemz");

    let (status, deleted) = delete(&app, &format!("/v1/conversations/{id}")).await;
    assert_eq!(status, 200, "{deleted}");
    assert_eq!(
        deleted,
        json!({"id": id, "object": "conversation.deleted", "deleted": true})
    );
    let (status, error) = app.get(&format!("/v1/conversations/{id}")).await;
    assert_eq!(status, 404);
    assert_eq!(error["error"]["type"], "not_found");
    let (status, _) = delete(&app, &format!("/v1/conversations/{id}")).await;
    assert_eq!(status, 404);
}

#[tokio::test]
async fn conversation_items_are_listed_a_page_at_a_time_added_read_and_deleted() {
    let app = TestApp::spawn().await;
    let (_, conversation) = app.post("/v1/conversations", json!({})).await;
    let id = conversation["id"].as_str().unwrap();
    let items: Vec<Value> = (0..5)
        .map(|i| json!({"role": "user", "content": format!("item {i}")}))
        .collect();
    let (status, added) = app
        .post(
            &format!("/v1/conversations/{id}/items"),
            json!({"items": items}),
        )
        .await;
    assert_eq!(status, 200, "{added}");
    assert_eq!(added["object"], "list");
    assert_eq!(added["data"].as_array().unwrap().len(), 5);
    assert_eq!(added["has_more"], false);
    let first = &added["data"][0];
    // The SDKs' message item shape: typed, with an id, a status and content parts.
    assert_eq!(first["type"], "message");
    assert_eq!(first["status"], "completed");
    assert_eq!(
        first["content"],
        json!([{"type": "input_text", "text": "item 0"}])
    );
    let ids: Vec<String> = added["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|item| item["id"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(added["first_id"], ids[0].as_str());
    assert_eq!(added["last_id"], ids[4].as_str());

    // Newest first by default; `after` and `limit` walk the pages.
    let (status, page) = app
        .get(&format!("/v1/conversations/{id}/items?limit=2"))
        .await;
    assert_eq!(status, 200, "{page}");
    assert_eq!(page["first_id"], ids[4].as_str());
    assert_eq!(page["last_id"], ids[3].as_str());
    assert_eq!(page["has_more"], true);
    let (_, page) = app
        .get(&format!(
            "/v1/conversations/{id}/items?limit=2&order=asc&after={}",
            ids[2]
        ))
        .await;
    let texts: Vec<&str> = page["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|item| item["content"][0]["text"].as_str().unwrap())
        .collect();
    assert_eq!(texts, ["item 3", "item 4"]);
    assert_eq!(page["has_more"], false);
    for (query, param) in [
        ("limit=0", "limit"),
        ("order=sideways", "order"),
        ("after=msg_nope", "after"),
    ] {
        let (status, error) = app
            .get(&format!("/v1/conversations/{id}/items?{query}"))
            .await;
        assert_eq!(status, 400, "{query}");
        assert_eq!(error["error"]["param"], param, "{query}");
    }

    let (status, item) = app
        .get(&format!("/v1/conversations/{id}/items/{}", ids[1]))
        .await;
    assert_eq!(status, 200);
    assert_eq!(item["content"][0]["text"], "item 1");
    let (status, answer) = delete(&app, &format!("/v1/conversations/{id}/items/{}", ids[1])).await;
    assert_eq!(status, 200, "{answer}");
    assert_eq!(answer["object"], "conversation");
    assert_eq!(answer["id"], id);
    let (status, _) = app
        .get(&format!("/v1/conversations/{id}/items/{}", ids[1]))
        .await;
    assert_eq!(status, 404);
    let (_, all) = app
        .get(&format!("/v1/conversations/{id}/items?order=asc"))
        .await;
    assert_eq!(all["data"].as_array().unwrap().len(), 4);

    let too_many: Vec<Value> = (0..21)
        .map(|_| json!({"role": "user", "content": "x"}))
        .collect();
    let (status, error) = app
        .post(
            &format!("/v1/conversations/{id}/items"),
            json!({"items": too_many}),
        )
        .await;
    assert_eq!(status, 400);
    assert_eq!(error["error"]["param"], "items");
}

#[tokio::test]
async fn a_response_with_conversation_reads_its_items_and_appends_its_own() {
    let app = TestApp::spawn().await;
    let (_, conversation) = app
        .post(
            "/v1/conversations",
            json!({"items": [{"role": "user", "content": "My name is Ada."}]}),
        )
        .await;
    let id = conversation["id"].as_str().unwrap();

    app.fake.push(Reply::text("Nice to meet you, Ada."));
    let (status, first) = app
        .post(
            "/v1/responses",
            json!({"model": MODEL, "input": "Hi!", "conversation": id}),
        )
        .await;
    assert_eq!(status, 200, "{first}");
    assert_eq!(first["conversation"], json!({"id": id}));
    assert_eq!(
        sent_messages(&app),
        ["user:My name is Ada.", "user:Hi!"],
        "the conversation's items come before the input"
    );

    // The object form; the first turn's input and output are in the conversation now.
    app.fake.push(Reply::text("Ada."));
    let (status, second) = app
        .post(
            "/v1/agent",
            json!({"model": MODEL, "input": "What is my name?", "conversation": {"id": id}}),
        )
        .await;
    assert_eq!(status, 200, "{second}");
    assert_eq!(
        sent_messages(&app),
        [
            "user:My name is Ada.",
            "user:Hi!",
            "assistant:Nice to meet you, Ada.",
            "user:What is my name?"
        ]
    );
    let (_, items) = app
        .get(&format!("/v1/conversations/{id}/items?order=asc"))
        .await;
    let roles: Vec<&str> = items["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|item| item["role"].as_str().unwrap())
        .collect();
    assert_eq!(
        roles,
        ["user", "user", "assistant", "user", "assistant"],
        "{items}"
    );
    assert_eq!(
        items["data"][4]["content"][0]["text"], "Ada.",
        "the assistant's answer is an output_text part"
    );
    assert_eq!(items["data"][4]["content"][0]["type"], "output_text");

    let (status, error) = app
        .post(
            "/v1/responses",
            json!({"model": MODEL, "input": "x", "conversation": id,
                   "previous_response_id": first["id"]}),
        )
        .await;
    assert_eq!(status, 400);
    assert_eq!(error["error"]["param"], "conversation");
    let (status, error) = app
        .post(
            "/v1/responses",
            json!({"model": MODEL, "input": "x", "conversation": "conv_unknown"}),
        )
        .await;
    assert_eq!(status, 400);
    assert_eq!(error["error"]["param"], "conversation");
}

/// A conversation long enough for the store to keep its items parsed between runs
/// (`conversation_memo.rs`): each run sends every item so far, in order; an item deleted
/// through the API is gone from the next run's history, and one added is there.
#[tokio::test]
async fn a_long_conversations_runs_send_what_it_holds_at_each_run() {
    let app = TestApp::spawn().await;
    let (_, conversation) = app.post("/v1/conversations", json!({})).await;
    let id = conversation["id"].as_str().unwrap();
    let mut history: Vec<String> = Vec::new();
    for turn in 0..4 {
        // Long enough that from the third turn the store packs the transcript, in pieces
        // each turn adds to (16 KiB: store/src/transcript_pack.rs).
        let question = format!("question {turn}: {}", "why? ".repeat(600));
        let answer = format!("answer {turn}: {}", "because. ".repeat(400));
        app.fake.push(Reply::text(&answer));
        let (status, response) = app
            .post(
                "/v1/responses",
                json!({"model": MODEL, "input": question, "conversation": id}),
            )
            .await;
        assert_eq!(status, 200, "{response}");
        history.push(format!("user:{question}"));
        assert_eq!(sent_messages(&app), history, "turn {turn}");
        history.push(format!("assistant:{answer}"));
    }

    // The second turn's question deleted, a note added.
    let (_, items) = app
        .get(&format!("/v1/conversations/{id}/items?order=asc"))
        .await;
    let second = items["data"][2]["id"].as_str().unwrap().to_owned();
    let (status, _) = delete(&app, &format!("/v1/conversations/{id}/items/{second}")).await;
    assert_eq!(status, 200);
    history.remove(2);
    let (status, _) = app
        .post(
            &format!("/v1/conversations/{id}/items"),
            json!({"items": [{"role": "user", "content": "A note."}]}),
        )
        .await;
    assert_eq!(status, 200);
    history.push("user:A note.".to_owned());
    app.fake.push(Reply::text("Noted."));
    let (status, response) = app
        .post(
            "/v1/responses",
            json!({"model": MODEL, "input": "And now?", "conversation": id}),
        )
        .await;
    assert_eq!(status, 200, "{response}");
    history.push("user:And now?".to_owned());
    assert_eq!(sent_messages(&app), history);
}

#[tokio::test]
async fn responses_are_deleted_and_their_input_items_paged() {
    let app = TestApp::spawn().await;
    for base in ["/v1/responses", "/v1/agent"] {
        app.fake.push(Reply::text("ok"));
        let (_, created) = app
            .post(
                base,
                json!({"model": MODEL, "instructions": "Be brief.", "input": [
                    {"role": "user", "content": "one"},
                    {"role": "user", "content": [{"type": "input_text", "text": "two"}]},
                    {"role": "user", "content": "three"}]}),
            )
            .await;
        let id = created["id"].as_str().unwrap();

        let (status, page) = app
            .get(&format!("{base}/{id}/input_items?order=asc&limit=2"))
            .await;
        assert_eq!(status, 200, "{page}");
        assert_eq!(page["object"], "list");
        assert_eq!(page["has_more"], true);
        let texts = |page: &Value| -> Vec<String> {
            page["data"]
                .as_array()
                .unwrap()
                .iter()
                .map(|item| item["content"][0]["text"].as_str().unwrap().to_owned())
                .collect()
        };
        assert_eq!(texts(&page), ["one", "two"]);
        let last = page["last_id"].as_str().unwrap();
        assert!(last.starts_with("msg_"), "{last}");
        let (_, rest) = app
            .get(&format!("{base}/{id}/input_items?order=asc&after={last}"))
            .await;
        assert_eq!(texts(&rest), ["three"]);
        assert_eq!(rest["has_more"], false);
        let (_, newest) = app.get(&format!("{base}/{id}/input_items")).await;
        assert_eq!(texts(&newest), ["three", "two", "one"], "desc by default");

        let (status, deleted) = delete(&app, &format!("{base}/{id}")).await;
        assert_eq!(status, 200, "{deleted}");
        assert_eq!(
            deleted,
            json!({"id": id, "object": "response.deleted", "deleted": true})
        );
        for path in [format!("{base}/{id}"), format!("{base}/{id}/input_items")] {
            let (status, _) = app.get(&path).await;
            assert_eq!(status, 404, "{path}");
        }
        let (status, _) = delete(&app, &format!("{base}/{id}")).await;
        assert_eq!(status, 404);
        let (status, error) = app
            .post(
                base,
                json!({"model": MODEL, "input": "more", "previous_response_id": id}),
            )
            .await;
        assert_eq!(status, 400, "a deleted response cannot be continued");
        assert_eq!(error["error"]["param"], "previous_response_id");
    }
}

#[tokio::test]
async fn item_references_resolve_over_http_and_unknown_ones_name_the_item() {
    let app = TestApp::spawn().await;
    app.fake.push(Reply::text("Paris."));
    let (_, first) = app
        .post(
            "/v1/responses",
            json!({"model": MODEL, "input": "Capital of France?"}),
        )
        .await;
    let answer_id = first["output"][0]["id"].as_str().unwrap();
    let (_, inputs) = app
        .get(&format!(
            "/v1/responses/{}/input_items",
            first["id"].as_str().unwrap()
        ))
        .await;
    let question_id = inputs["data"][0]["id"].as_str().unwrap();

    app.fake.push(Reply::text("About two million."));
    let (status, second) = app
        .post(
            "/v1/responses",
            json!({"model": MODEL, "input": [
                {"type": "item_reference", "id": question_id},
                {"type": "item_reference", "id": answer_id},
                {"role": "user", "content": "Population?"}]}),
        )
        .await;
    assert_eq!(status, 200, "{second}");
    assert_eq!(
        sent_messages(&app),
        [
            "user:Capital of France?",
            "assistant:Paris.",
            "user:Population?"
        ]
    );

    let (status, error) = app
        .post(
            "/v1/responses",
            json!({"model": MODEL, "input": [
                {"role": "user", "content": "x"},
                {"type": "item_reference", "id": "msg_unknown"}]}),
        )
        .await;
    assert_eq!(status, 400, "{error}");
    assert_eq!(error["error"]["param"], "input[1].id");
}

#[tokio::test]
async fn another_projects_conversations_responses_and_items_are_not_found() {
    let app = TestApp::spawn().await;
    let key_a = app.state.engine.create_key("alpha").await.unwrap();
    let key_b = app.state.engine.create_key("beta").await.unwrap();
    use reqwest::Method;
    let (status, conversation) = send(
        &app,
        Method::POST,
        "/v1/conversations",
        Some(&key_a),
        Some(json!({"items": [{"role": "user", "content": "secret"}]})),
    )
    .await;
    assert_eq!(status, 200);
    let conv = conversation["id"].as_str().unwrap();
    let (_, items) = send(
        &app,
        Method::GET,
        &format!("/v1/conversations/{conv}/items"),
        Some(&key_a),
        None,
    )
    .await;
    let item = items["data"][0]["id"].as_str().unwrap();
    app.fake.push(Reply::text("for alpha"));
    let (_, response) = send(
        &app,
        Method::POST,
        "/v1/responses",
        Some(&key_a),
        Some(json!({"model": MODEL, "input": "hi"})),
    )
    .await;
    let resp = response["id"].as_str().unwrap();
    let output_item = response["output"][0]["id"].as_str().unwrap();

    for (method, path, body) in [
        (Method::GET, format!("/v1/conversations/{conv}"), None),
        (
            Method::POST,
            format!("/v1/conversations/{conv}"),
            Some(json!({"metadata": {}})),
        ),
        (Method::GET, format!("/v1/conversations/{conv}/items"), None),
        (
            Method::POST,
            format!("/v1/conversations/{conv}/items"),
            Some(json!({"items": [{"role": "user", "content": "x"}]})),
        ),
        (
            Method::GET,
            format!("/v1/conversations/{conv}/items/{item}"),
            None,
        ),
        (
            Method::DELETE,
            format!("/v1/conversations/{conv}/items/{item}"),
            None,
        ),
        (Method::DELETE, format!("/v1/conversations/{conv}"), None),
        (
            Method::GET,
            format!("/v1/responses/{resp}/input_items"),
            None,
        ),
        (Method::DELETE, format!("/v1/responses/{resp}"), None),
        (Method::DELETE, format!("/v1/agent/{resp}"), None),
    ] {
        let (status, _) = send(&app, method.clone(), &path, Some(&key_b), body).await;
        assert_eq!(status, 404, "{method} {path}");
    }
    let (status, error) = send(
        &app,
        Method::POST,
        "/v1/responses",
        Some(&key_b),
        Some(json!({"model": MODEL, "input": [{"type": "item_reference", "id": output_item}]})),
    )
    .await;
    assert_eq!(status, 400, "another project's item cannot be referenced");
    assert_eq!(error["error"]["param"], "input[0].id");
    let (status, error) = send(
        &app,
        Method::POST,
        "/v1/responses",
        Some(&key_b),
        Some(json!({"model": MODEL, "input": "x", "conversation": conv})),
    )
    .await;
    assert_eq!(status, 400);
    assert_eq!(error["error"]["param"], "conversation");
    // Everything is still there for its own project.
    let (status, _) = send(
        &app,
        Method::GET,
        &format!("/v1/conversations/{conv}/items/{item}"),
        Some(&key_a),
        None,
    )
    .await;
    assert_eq!(status, 200);
    let (status, _) = send(
        &app,
        Method::GET,
        &format!("/v1/responses/{resp}"),
        Some(&key_a),
        None,
    )
    .await;
    assert_eq!(status, 200);
}
