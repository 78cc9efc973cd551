//! Stored items: `item_reference`, a response's input items, deleting a response, and OpenAI
//! conversations (their items before a run's input, the run's items appended after it).

use engine::model::ModelMessage;
use protocol::conversations::{AddItems, CreateConversation, Page, UpdateConversation};
use serde_json::{Value, json};

use crate::common::{Harness, PROJECT, Turn};

fn page() -> Page {
    Page::from_query(None, None, Some("asc")).unwrap()
}

fn texts(messages: &[ModelMessage]) -> Vec<String> {
    messages
        .iter()
        .filter_map(|m| match m {
            ModelMessage::User { content } => content.iter().find_map(|p| match p {
                engine::model::ContentPart::Text { text } => Some(format!("user:{text}")),
                _ => None,
            }),
            ModelMessage::Assistant {
                content: Some(text),
                ..
            } => Some(format!("assistant:{text}")),
            _ => None,
        })
        .collect()
}

#[tokio::test]
async fn item_references_resolve_to_the_projects_stored_items_in_order() {
    let h = Harness::new();
    let model = h.model("m");
    model.push(Turn::text("Paris."));
    let (first, _) = h
        .run(json!({"model": "fake/m", "input": "Capital of France?"}))
        .await;
    let answer_id = first["output"][0]["id"].as_str().unwrap().to_owned();
    // The request's own input item got an id and can be listed.
    let inputs = h
        .engine
        .input_items(PROJECT, first["id"].as_str().unwrap(), &page())
        .await
        .unwrap();
    assert_eq!(inputs.data.len(), 1);
    let question_id = inputs.data[0]["id"].as_str().unwrap().to_owned();
    assert!(question_id.starts_with("msg_"), "{question_id}");

    // A new chain that refers to both earlier items instead of sending them again.
    model.push(Turn::text("About 2 million."));
    let (second, _) = h
        .run(json!({"model": "fake/m", "input": [
            {"type": "item_reference", "id": question_id},
            {"id": answer_id},
            {"role": "user", "content": "Population?"}]}))
        .await;
    assert_eq!(second["status"], "completed", "{second}");
    let sent = model.requests().pop().unwrap();
    assert_eq!(
        texts(&sent.messages),
        [
            "user:Capital of France?",
            "assistant:Paris.",
            "user:Population?"
        ]
    );
}

#[tokio::test]
async fn an_unknown_or_foreign_reference_is_a_400_naming_the_item() {
    let h = Harness::new();
    h.model("m").push(Turn::text("ok"));
    let (first, _) = h.run(json!({"model": "fake/m", "input": "hi"})).await;
    let id = first["output"][0]["id"].as_str().unwrap().to_owned();
    let request = |id: &str| {
        crate::common::request(json!({"model": "fake/m", "input": [
            {"role": "user", "content": "x"}, {"type": "item_reference", "id": id}]}))
    };
    let err = h
        .engine
        .start(PROJECT, request("msg_nope"))
        .await
        .err()
        .unwrap();
    assert_eq!(err.param(), Some("input[1].id"));
    // Another project does not see this project's items.
    let err = h
        .engine
        .start("proj_other", request(&id))
        .await
        .err()
        .unwrap();
    assert_eq!(err.param(), Some("input[1].id"));
}

#[tokio::test]
async fn a_deleted_response_is_gone_with_its_items() {
    let h = Harness::new();
    h.model("m").push(Turn::text("ok"));
    let (first, _) = h.run(json!({"model": "fake/m", "input": "hi"})).await;
    let id = first["id"].as_str().unwrap();
    let deleted = h.engine.delete_response(PROJECT, id).await.unwrap();
    assert_eq!(deleted.object, "response.deleted");
    assert!(deleted.deleted);
    assert!(h.engine.get_response(PROJECT, id).await.is_err());
    assert!(h.engine.input_items(PROJECT, id, &page()).await.is_err());
    assert!(h.engine.delete_response(PROJECT, id).await.is_err());
    // Another project's response is not found.
    h.model("m").push(Turn::text("ok"));
    let (other, _) = h.run(json!({"model": "fake/m", "input": "hi"})).await;
    assert!(
        h.engine
            .delete_response("proj_other", other["id"].as_str().unwrap())
            .await
            .is_err()
    );
}

#[tokio::test]
async fn a_conversation_holds_the_history_of_the_runs_made_in_it() {
    let h = Harness::new();
    let model = h.model("m");
    let created = h
        .engine
        .create_conversation(
            PROJECT,
            CreateConversation {
                items: Some(
                    serde_json::from_value(json!([
                        {"role": "system", "content": "You are terse."}
                    ]))
                    .unwrap(),
                ),
                metadata: Some([("topic".to_owned(), "geo".to_owned())].into()),
            },
        )
        .await
        .unwrap();
    assert!(created.id.starts_with("conv_"));
    model.push(Turn::text("Paris."));
    let (first, _) = h
        .run(json!({"model": "fake/m", "conversation": created.id, "input": "Capital of France?"}))
        .await;
    assert_eq!(
        first["conversation"]["id"],
        Value::String(created.id.clone())
    );
    model.push(Turn::text("Berlin."));
    let (second, _) = h
        .run(
            json!({"model": "fake/m", "conversation": {"id": created.id}, "input": "And Germany?"}),
        )
        .await;
    assert_eq!(second["status"], "completed");
    // Its record's transcript begins with the conversation's items as the store read them:
    // their JSON, which the store writes as it is.
    let record = h.store.lock().responses[second["id"].as_str().unwrap()].clone();
    let prefix = record
        .transcript_prefix
        .expect("the conversation's items' JSON");
    assert_eq!(prefix.items, 3);
    let read: Vec<protocol::input::InputItem> = serde_json::from_str(&prefix.json).unwrap();
    assert_eq!(read[..], record.transcript[..3]);
    // The second run saw the conversation so far.
    let sent = model.requests().pop().unwrap();
    assert_eq!(
        texts(&sent.messages),
        [
            "user:Capital of France?",
            "assistant:Paris.",
            "user:And Germany?"
        ]
    );
    let items = h
        .engine
        .conversation_items(PROJECT, &created.id, &page())
        .await
        .unwrap();
    let kinds: Vec<(&str, &str)> = items
        .data
        .iter()
        .map(|i| {
            (
                i["type"].as_str().unwrap_or("message"),
                i["role"].as_str().unwrap_or(""),
            )
        })
        .collect();
    assert_eq!(
        kinds,
        [
            ("message", "system"),
            ("message", "user"),
            ("message", "assistant"),
            ("message", "user"),
            ("message", "assistant")
        ]
    );
    // Items can be added, read and removed; metadata replaced; the whole deleted.
    let added = h
        .engine
        .add_conversation_items(
            PROJECT,
            &created.id,
            AddItems {
                items: serde_json::from_value(json!([{"role": "user", "content": "note"}]))
                    .unwrap(),
            },
        )
        .await
        .unwrap();
    let note = added.first_id.clone().unwrap();
    assert_eq!(
        h.engine
            .conversation_item(PROJECT, &created.id, &note)
            .await
            .unwrap()["content"],
        json!([{"type": "input_text", "text": "note"}]),
        "answered in the SDKs' item shape"
    );
    h.engine
        .delete_conversation_item(PROJECT, &created.id, &note)
        .await
        .unwrap();
    assert!(
        h.engine
            .conversation_item(PROJECT, &created.id, &note)
            .await
            .is_err()
    );
    let updated = h
        .engine
        .update_conversation(
            PROJECT,
            &created.id,
            UpdateConversation {
                metadata: [("topic".to_owned(), "capitals".to_owned())].into(),
            },
        )
        .await
        .unwrap();
    assert_eq!(updated.metadata["topic"], "capitals");
    // Another project sees none of it.
    assert!(
        h.engine
            .get_conversation("proj_other", &created.id)
            .await
            .is_err()
    );
    h.engine
        .delete_conversation(PROJECT, &created.id)
        .await
        .unwrap();
    assert!(
        h.engine
            .get_conversation(PROJECT, &created.id)
            .await
            .is_err()
    );
    // A run naming a conversation that is gone is refused, naming the field.
    let err = h
        .engine
        .start(
            PROJECT,
            crate::common::request(
                json!({"model": "fake/m", "conversation": created.id, "input": "x"}),
            ),
        )
        .await
        .err()
        .unwrap();
    assert_eq!(err.param(), Some("conversation"));
}

#[tokio::test]
async fn a_conversation_and_previous_response_id_together_are_refused() {
    let h = Harness::new();
    let err = h
        .engine
        .start(
            PROJECT,
            crate::common::request(json!({"model": "fake/m", "conversation": "conv_1",
                "previous_response_id": "resp_1", "input": "x"})),
        )
        .await
        .err()
        .unwrap();
    assert_eq!(err.param(), Some("conversation"));
}
