//! `POST /v1/{responses|agent}/compact`: the model summarises the conversation into a
//! `compaction` item, and a chain that continues from it sends the model the summary instead of
//! the history it replaced.

#![expect(clippy::unwrap_used, reason = "test helpers fail loudly")]

use serde_json::{Value, json};
use testkit::{Reply, TestApp};

const MODEL: &str = "openai/gpt-test";

/// The messages of the last upstream request, `role:text`.
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

/// A two-turn chain: returns the id of its last response.
async fn chain(app: &TestApp) -> String {
    app.fake.push(Reply::text("Paris is the capital."));
    let (_, first) = app
        .post(
            "/v1/responses",
            json!({"model": MODEL, "input": "Capital of France?"}),
        )
        .await;
    app.fake.push(Reply::text("About two million people."));
    let (_, second) = app
        .post(
            "/v1/responses",
            json!({"model": MODEL, "input": "Population?", "previous_response_id": first["id"]}),
        )
        .await;
    assert_eq!(second["status"], "completed", "{second}");
    second["id"].as_str().unwrap().to_owned()
}

#[tokio::test]
async fn compaction_summarises_and_a_new_chain_sends_the_summary_not_the_history() {
    let app = TestApp::spawn().await;
    let last = chain(&app).await;

    app.fake.push(
        Reply::text("The user asked about Paris; it has about two million people.").usage(50, 12),
    );
    let (status, compacted) = app
        .post(
            "/v1/responses/compact",
            json!({"model": MODEL, "previous_response_id": last}),
        )
        .await;
    assert_eq!(status, 200, "{compacted}");
    assert_eq!(compacted["object"], "response.compaction");
    assert!(compacted["id"].as_str().unwrap().starts_with("resp_"));
    assert!(compacted["created_at"].as_i64().unwrap() > 0);
    assert_eq!(compacted["usage"]["input_tokens"], 50);
    assert_eq!(compacted["usage"]["output_tokens"], 12);
    assert_eq!(compacted["usage"]["total_tokens"], 62);
    // The model was shown the whole conversation and asked for the summary.
    let shown = sent_messages(&app);
    assert_eq!(shown.len(), 5, "{shown:#?}");
    assert_eq!(
        shown[..4],
        [
            "user:Capital of France?",
            "assistant:Paris is the capital.",
            "user:Population?",
            "assistant:About two million people."
        ]
    );
    assert!(shown[4].starts_with("user:") && shown[4].contains("summary"));

    let output = compacted["output"].as_array().unwrap();
    assert_eq!(
        output.len(),
        3,
        "the user messages, then the compaction item"
    );
    assert_eq!(output[0]["role"], "user");
    assert_eq!(output[0]["content"][0]["text"], "Capital of France?");
    assert_eq!(output[1]["content"][0]["text"], "Population?");
    let item = &output[2];
    assert_eq!(item["type"], "compaction");
    assert!(item["id"].as_str().unwrap().starts_with("cmp_"));
    let content = item["encrypted_content"].as_str().unwrap();
    assert!(
        !content.contains("Paris"),
        "the content is opaque: {content}"
    );

    // A new chain from the compacted output: the summary stands for the history.
    let mut input = output.clone();
    input.push(json!({"role": "user", "content": "And its area?"}));
    app.fake.push(Reply::text("About 105 km²."));
    let (status, next) = app
        .post("/v1/agent", json!({"model": MODEL, "input": input}))
        .await;
    assert_eq!(status, 200, "{next}");
    let shown = sent_messages(&app);
    assert_eq!(
        shown,
        [
            "user:Capital of France?",
            "user:Population?",
            "user:Summary of the conversation so far:\n\nThe user asked about Paris; it has about two million people.",
            "user:And its area?"
        ]
    );
    // Continuing that chain keeps the summary, never the replaced answers.
    app.fake.push(Reply::text("Yes."));
    let (status, _) = app
        .post(
            "/v1/agent",
            json!({"model": MODEL, "input": "Sure?", "previous_response_id": next["id"]}),
        )
        .await;
    assert_eq!(status, 200);
    let shown = sent_messages(&app);
    assert!(
        shown
            .iter()
            .any(|m| m.contains("Summary of the conversation"))
    );
    assert!(
        !shown.iter().any(|m| m.contains("Paris is the capital.")),
        "{shown:#?}"
    );
}

#[tokio::test]
async fn compact_takes_input_on_both_prefixes_and_refuses_what_it_cannot_do() {
    let app = TestApp::spawn().await;
    app.fake.push(Reply::text("A greeting."));
    let (status, compacted) = app
        .post(
            "/v1/agent/compact",
            json!({"model": MODEL, "instructions": "Be kind.", "input": [
                {"role": "user", "content": "Hello"},
                {"role": "assistant", "content": "Hi! How can I help?"}]}),
        )
        .await;
    assert_eq!(status, 200, "{compacted}");
    assert_eq!(compacted["output"].as_array().unwrap().len(), 2);
    assert_eq!(
        sent_messages(&app)[0],
        "system:Be kind.",
        "the instructions are in view"
    );

    let (status, error) = app
        .post("/v1/responses/compact", json!({"input": "hi"}))
        .await;
    assert_eq!(status, 400);
    assert_eq!(error["error"]["param"], "model");
    let (status, error) = app
        .post(
            "/v1/responses/compact",
            json!({"model": "nobody/model", "input": "hi"}),
        )
        .await;
    assert_eq!(status, 400);
    assert_eq!(error["error"]["param"], "model");
    let (status, error) = app
        .post("/v1/responses/compact", json!({"model": MODEL}))
        .await;
    assert_eq!(status, 400, "nothing to compact");
    assert_eq!(error["error"]["param"], "input");
    let (status, error) = app
        .post(
            "/v1/responses/compact",
            json!({"model": MODEL, "previous_response_id": "resp_nope"}),
        )
        .await;
    assert_eq!(status, 400);
    assert_eq!(error["error"]["param"], "previous_response_id");
    let (status, error) = app
        .post(
            "/v1/responses/compact",
            json!({"model": MODEL, "input": "hi", "truncation": "auto"}),
        )
        .await;
    assert_eq!(status, 400);
    assert_eq!(error["error"]["param"], "truncation");

    // The model failing is a 502; an empty summary too.
    app.fake.push(Reply::error(400, "bad request upstream"));
    let (status, error) = app
        .post(
            "/v1/responses/compact",
            json!({"model": MODEL, "input": "hi"}),
        )
        .await;
    assert_eq!(status, 502, "{error}");
    app.fake.push(Reply::text("   "));
    let (status, _) = app
        .post(
            "/v1/responses/compact",
            json!({"model": MODEL, "input": "hi"}),
        )
        .await;
    assert_eq!(status, 502);

    // A compaction item that is not this server's is refused by name.
    let (status, error) = app
        .post(
            "/v1/responses",
            json!({"model": MODEL, "input": [
                {"role": "user", "content": "x"},
                {"type": "compaction", "id": "cmp_1", "encrypted_content": "gAAAAABpM0Yj"}]}),
        )
        .await;
    assert_eq!(status, 400);
    assert_eq!(error["error"]["param"], "input[1].encrypted_content");
}
