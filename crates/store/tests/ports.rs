//! Black-box tests of both stores through the engine's storage ports (the tests listed in
//! `matrix!` at the end run on SQLite and on PostgreSQL).

mod common;

use agentd_store::SqliteStore;
use common::{TempDir, TestDb, TestResult, events};
use engine::admin_store::ProjectStore;
use engine::listing_store::{ListedResponse, ResponseFilter, ResponseListStore};
use engine::store::{
    ContinuationSource, EventRecord, EventStore, FileRecord, KeyRecord, KeyStore, ResponseRecord,
    ResponseStore, StoreError, TranscriptPrefix,
};
use protocol::input::InputItem;
use protocol::response::ResponseStatus;
use serde_json::json;

fn transcript() -> Result<Vec<InputItem>, serde_json::Error> {
    serde_json::from_value(json!([
        {"role": "user", "content": "What is the answer?"},
        {"type": "function_call", "call_id": "call_1", "name": "lookup", "arguments": "{\"q\":\"answer\"}"},
        {"type": "function_call_output", "call_id": "call_1", "output": "42"},
        {"type": "message", "role": "assistant", "id": "msg_1", "status": "completed",
         "content": [{"type": "output_text", "text": "It is 42.", "annotations": []}]}
    ]))
}

/// [`transcript`] and 250 questions after it, each beginning with `prefix`: long enough to be
/// kept by the transcript memo (2 KiB) and, on SQLite, packed (16 KiB).
fn long_transcript(prefix: &str) -> Result<Vec<InputItem>, serde_json::Error> {
    let mut items = transcript()?;
    for n in 0..250 {
        items.push(serde_json::from_value(json!({
            "role": "user",
            "content": format!("{prefix}question {n}: what follows from the answer before?"),
        }))?);
    }
    Ok(items)
}

fn record(id: &str, project_id: &str, visible: bool) -> Result<ResponseRecord, serde_json::Error> {
    Ok(ResponseRecord {
        id: id.to_owned(),
        project_id: project_id.to_owned(),
        created_at: 1_700_000_000,
        visible,
        response: common::response(id, "completed")?,
        transcript: transcript()?,
        conversation_id: None,
        items: Vec::new(),
        append_to: None,
        turns: Vec::new(),
        response_json: None,
        transcript_prefix: None,
    })
}

fn key(id: &str, project_id: &str, hash: &str) -> KeyRecord {
    KeyRecord {
        id: id.to_owned(),
        project_id: project_id.to_owned(),
        key_hash: hash.to_owned(),
        created_at: 1_700_000_000,
    }
}

async fn response_round_trips_with_transcript(db: &TestDb) -> TestResult {
    let store = db.open().await?;
    let stored = record("resp_1", "proj_a", true)?;
    assert_eq!(stored.transcript.len(), 4);
    store.put_response(&stored).await?;
    let loaded = store.get_response("proj_a", "resp_1").await?;
    assert_eq!(loaded, Some(stored));
    Ok(())
}

async fn put_response_replaces_and_updates_status_column(db: &TestDb) -> TestResult {
    let store = db.open().await?;
    let mut stored = record("resp_1", "proj_a", true)?;
    stored.response.status = ResponseStatus::InProgress;
    stored.transcript.truncate(1);
    store.put_response(&stored).await?;

    stored.response.status = ResponseStatus::RequiresAction;
    stored.transcript = transcript()?;
    store.put_response(&stored).await?;

    assert_eq!(store.get_response("proj_a", "resp_1").await?, Some(stored));
    let status = db
        .text("SELECT status FROM responses WHERE id = 'resp_1'")
        .await?;
    assert_eq!(status, "requires_action");
    Ok(())
}

/// A response's creation time and project are those of its first write: a later write of the
/// same run (its end) changes what the run changes, never the columns its listings are indexed
/// by (`ports/responses.rs`).
async fn later_writes_keep_the_creation_time_and_project(db: &TestDb) -> TestResult {
    let store = db.open().await?;
    let mut stored = record("resp_1", "proj_a", true)?;
    stored.response.status = ResponseStatus::InProgress;
    store.put_response(&stored).await?;

    let mut ended = record("resp_1", "proj_a", true)?;
    ended.created_at = stored.created_at + 60;
    store.end_run(&ended, &events(0..2)).await?;

    let loaded = store
        .get_response("proj_a", "resp_1")
        .await?
        .ok_or("missing")?;
    assert_eq!(loaded.created_at, stored.created_at);
    assert_eq!(loaded.response.status, ResponseStatus::Completed);
    assert_eq!(loaded.transcript, ended.transcript);
    let project = db
        .text("SELECT project_id FROM responses WHERE id = 'resp_1'")
        .await?;
    assert_eq!(project, "proj_a");
    Ok(())
}

async fn another_projects_response_is_none(db: &TestDb) -> TestResult {
    let store = db.open().await?;
    store
        .put_response(&record("resp_1", "proj_a", true)?)
        .await?;
    assert_eq!(store.get_response("proj_b", "resp_1").await?, None);
    assert_eq!(store.get_response("proj_a", "resp_missing").await?, None);
    Ok(())
}

async fn put_response_cannot_take_over_another_projects_id(db: &TestDb) -> TestResult {
    let store = db.open().await?;
    let original = record("resp_1", "proj_a", true)?;
    store.put_response(&original).await?;

    let intruder = record("resp_1", "proj_b", false)?;
    let result = store.put_response(&intruder).await;
    assert!(matches!(result, Err(StoreError::Conflict(_))), "{result:?}");
    assert_eq!(
        store.get_response("proj_a", "resp_1").await?,
        Some(original)
    );
    assert_eq!(store.get_response("proj_b", "resp_1").await?, None);
    Ok(())
}

async fn hidden_response_is_returned_with_visible_false(db: &TestDb) -> TestResult {
    let store = db.open().await?;
    store
        .put_response(&record("resp_1", "proj_a", false)?)
        .await?;
    let loaded = store
        .get_response("proj_a", "resp_1")
        .await?
        .ok_or("hidden response not returned")?;
    assert!(!loaded.visible);
    Ok(())
}

async fn events_in_two_batches_read_back_in_order(db: &TestDb) -> TestResult {
    let store = db.open().await?;
    store.append_events("resp_1", &events(0..3)).await?;
    store.append_events("resp_1", &events(3..6)).await?;
    store.append_events("resp_2", &events(0..2)).await?;

    assert_eq!(store.events_after("resp_1", None).await?, events(0..6));
    assert_eq!(store.events_after("resp_1", Some(2)).await?, events(3..6));
    assert_eq!(store.events_after("resp_1", Some(0)).await?, events(1..6));
    assert_eq!(store.events_after("resp_1", Some(5)).await?, vec![]);
    assert_eq!(store.events_after("resp_1", Some(u64::MAX)).await?, vec![]);
    assert_eq!(store.events_after("resp_2", None).await?, events(0..2));
    assert_eq!(store.events_after("resp_missing", None).await?, vec![]);
    Ok(())
}

async fn duplicate_append_is_ignored(db: &TestDb) -> TestResult {
    let store = db.open().await?;
    store.append_events("resp_1", &events(0..4)).await?;
    // The same batch again, and an overlapping one whose duplicates carry other data.
    store.append_events("resp_1", &events(0..4)).await?;
    let mut overlapping = events(2..6);
    for event in &mut overlapping {
        if event.sequence_number < 4 {
            event.data = "replaced".into();
        }
    }
    store.append_events("resp_1", &overlapping).await?;
    assert_eq!(store.events_after("resp_1", None).await?, events(0..6));
    Ok(())
}

async fn large_batch_spans_several_statements(db: &TestDb) -> TestResult {
    let store = db.open().await?;
    store.append_events("resp_1", &events(0..1_000)).await?;
    store.append_events("resp_1", &[]).await?;
    assert_eq!(store.events_after("resp_1", None).await?, events(0..1_000));
    assert_eq!(
        store.events_after("resp_1", Some(989)).await?,
        events(990..1_000)
    );
    Ok(())
}

async fn out_of_range_sequence_number_is_an_error(db: &TestDb) -> TestResult {
    let store = db.open().await?;
    let batch = [EventRecord {
        sequence_number: u64::MAX,
        data: "{}".into(),
    }];
    let result = store.append_events("resp_1", &batch).await;
    assert!(matches!(result, Err(StoreError::Backend(_))), "{result:?}");
    Ok(())
}

async fn ensure_project_is_idempotent(db: &TestDb) -> TestResult {
    let store = db.open().await?;
    let first = store.ensure_project("default").await?;
    assert!(first.starts_with("proj_"), "{first}");
    assert_eq!(first.len(), "proj_".len() + 32);
    assert_eq!(store.ensure_project("default").await?, first);
    let other = store.ensure_project("other").await?;
    assert_ne!(other, first);
    Ok(())
}

async fn keys_found_by_hash_and_unique(db: &TestDb) -> TestResult {
    let store = db.open().await?;
    assert!(!store.has_keys().await?);

    let project = store.ensure_project("default").await?;
    let stored = key("key_1", &project, &"ab".repeat(32));
    store.insert_key(&stored).await?;
    assert!(store.has_keys().await?);
    assert_eq!(store.find_key(&"ab".repeat(32)).await?, Some(stored));
    assert_eq!(store.find_key(&"cd".repeat(32)).await?, None);

    let result = store
        .insert_key(&key("key_2", &project, &"ab".repeat(32)))
        .await;
    match result {
        Err(StoreError::Conflict(message)) => {
            assert!(!message.contains("abab"), "hash leaked: {message}");
        }
        other => return Err(format!("expected a conflict, got {other:?}").into()),
    }
    Ok(())
}

async fn key_of_unknown_project_is_refused(db: &TestDb) -> TestResult {
    let store = db.open().await?;
    let result = store.insert_key(&key("key_1", "proj_nope", "00")).await;
    assert!(matches!(result, Err(StoreError::Backend(_))), "{result:?}");
    assert!(!store.has_keys().await?);
    Ok(())
}

/// SQLite only: the data directory layout and its journal mode.
#[tokio::test]
async fn file_store_persists_across_reopen() -> TestResult {
    let dir = TempDir::new();
    let data_dir = dir.0.join("nested").join("data");
    let project;
    {
        let store = SqliteStore::open(&data_dir).await?;
        let mode: String = sqlx::query_scalar("PRAGMA journal_mode")
            .fetch_one(store.pool())
            .await?;
        assert_eq!(mode, "wal");
        project = store.ensure_project("default").await?;
        store.insert_key(&key("key_1", &project, "ff")).await?;
        store
            .put_response(&record("resp_1", &project, true)?)
            .await?;
        store.append_events("resp_1", &events(0..3)).await?;
        store.close().await;
    }
    assert!(data_dir.join(agentd_store::DATABASE_FILE).is_file());

    let store = SqliteStore::open(&data_dir).await?;
    assert_eq!(store.ensure_project("default").await?, project);
    assert!(store.has_keys().await?);
    assert_eq!(
        store.find_key("ff").await?.map(|k| k.project_id),
        Some(project.clone())
    );
    assert_eq!(
        store.get_response(&project, "resp_1").await?,
        Some(record("resp_1", &project, true)?)
    );
    assert_eq!(store.events_after("resp_1", None).await?, events(0..3));
    store.close().await;
    Ok(())
}

/// SQLite only: a `sqlite://` file URL.
#[tokio::test]
async fn connect_accepts_a_file_url() -> TestResult {
    let dir = TempDir::new();
    std::fs::create_dir_all(&dir.0)?;
    let url = format!("sqlite://{}?mode=rwc", dir.0.join("x.db").display());
    let store = SqliteStore::connect(&url).await?;
    store.append_events("resp_1", &events(0..2)).await?;
    assert_eq!(store.events_after("resp_1", None).await?, events(0..2));
    store.close().await;
    Ok(())
}

async fn corrupt_response_json_is_a_corrupt_error(db: &TestDb) -> TestResult {
    let store = db.open().await?;
    db.execute(
        "INSERT INTO responses
             (id, project_id, created_at, visible, status, response_json, transcript_json, updated_at)
         VALUES ('resp_bad', 'proj_a', 0, 1, 'completed', '{\"id\": \"resp_bad\", not json', '[]', 0)",
    )
    .await?;
    match store.get_response("proj_a", "resp_bad").await {
        Err(StoreError::Corrupt(message)) => {
            assert!(message.contains("resp_bad"), "{message}");
            assert!(
                !message.contains("not json"),
                "stored data echoed: {message}"
            );
        }
        other => return Err(format!("expected corrupt, got {other:?}").into()),
    }
    match store.continuation_source("proj_a", "resp_bad").await {
        Err(StoreError::Corrupt(message)) => assert!(message.contains("resp_bad"), "{message}"),
        other => return Err(format!("expected corrupt, got {other:?}").into()),
    }
    Ok(())
}

/// A continuation reads a response's status, `mcp` tools, conversation and transcript alone:
/// what the whole record gives, whatever the response object holds besides.
async fn a_continuation_reads_what_the_whole_record_gives(db: &TestDb) -> TestResult {
    let store = db.open().await?;
    let mut first = record("resp_first", "proj_a", true)?;
    first.response.status = ResponseStatus::RequiresAction;
    // Long enough to be packed where the store packs responses.
    first.response.instructions = Some("Answer briefly. ".repeat(200));
    first.response.tools = serde_json::from_value(json!([
        {"type": "function", "name": "lookup", "parameters": {"type": "object"}},
        {"type": "mcp", "server_label": "wiki", "server_url": "https://mcp.example.com/mcp",
         "allowed_tools": ["read"], "require_approval": "never"},
        {"type": "web_search"},
        {"type": "mcp", "server_label": "docs", "server_url": "https://docs.example.com/mcp"}
    ]))?;
    store.put_response(&first).await?;
    let mut second = record("resp_second", "proj_a", false)?;
    second.conversation_id = Some("resp_first".to_owned());
    store.put_response(&second).await?;

    for id in ["resp_first", "resp_second"] {
        let whole = store.get_response("proj_a", id).await?.ok_or("missing")?;
        let source = store
            .continuation_source("proj_a", id)
            .await?
            .ok_or("missing")?;
        // With its transcript's JSON as stored.
        let json = InputItem::list_to_json(&whole.transcript)?;
        let mut expected = ContinuationSource::from(whole);
        expected.transcript_json = Some(json.into());
        assert_eq!(source, expected, "{id}");
        assert_eq!(source.conversation, "resp_first");
    }
    let source = store
        .continuation_source("proj_a", "resp_first")
        .await?
        .ok_or("missing")?;
    assert_eq!(source.status, ResponseStatus::RequiresAction);
    let servers: Vec<(&str, &str, Option<&[String]>)> = source
        .mcp_tools
        .iter()
        .map(|mcp| {
            (
                mcp.server_label.as_str(),
                mcp.server_url.as_str(),
                mcp.allowed_tools.as_deref(),
            )
        })
        .collect();
    assert_eq!(
        servers,
        [
            (
                "wiki",
                "https://mcp.example.com/mcp",
                Some(&["read".to_owned()][..])
            ),
            ("docs", "https://docs.example.com/mcp", None)
        ]
    );
    assert_eq!(source.transcript, transcript()?);
    assert_eq!(
        store.continuation_source("proj_b", "resp_first").await?,
        None
    );
    assert_eq!(
        store.continuation_source("proj_a", "resp_none").await?,
        None
    );
    Ok(())
}

/// A continuation of a run that just ended reads the transcript its row holds now: the store
/// keeps such a transcript parsed for it (`transcript_memo.rs`), and hands it over only while
/// the row holds the very text it was written as — not once another replica wrote the row
/// again, nor once the row is gone.
async fn a_continuation_reads_the_transcript_the_row_holds_now(db: &TestDb) -> TestResult {
    let long = |word: &str| long_transcript(&format!("{word} "));
    let store = db.open().await?;
    let mut ended = record("resp_chain", "proj_a", true)?;
    // A run that continued another: its own continuation is likely to follow.
    ended.response.previous_response_id = Some("resp_before".to_owned());
    ended.transcript = long("first")?;
    store.end_run(&ended, &[]).await?;
    for read in 0..2 {
        let source = store
            .continuation_source("proj_a", "resp_chain")
            .await?
            .ok_or("missing")?;
        assert_eq!(source.transcript, ended.transcript, "read {read}");
    }

    // Written again by another replica, with another transcript.
    store.end_run(&ended, &[]).await?;
    let other = db.open().await?;
    let mut rewritten = ended.clone();
    rewritten.transcript = long("second")?;
    other.end_run(&rewritten, &[]).await?;
    other.close().await;
    let source = store
        .continuation_source("proj_a", "resp_chain")
        .await?
        .ok_or("missing")?;
    assert_eq!(source.transcript, rewritten.transcript);

    // Another project's request finds nothing; the row deleted, neither does its own.
    store.end_run(&ended, &[]).await?;
    assert_eq!(
        store.continuation_source("proj_b", "resp_chain").await?,
        None
    );
    db.execute("DELETE FROM responses WHERE id = 'resp_chain'")
        .await?;
    assert_eq!(
        store.continuation_source("proj_a", "resp_chain").await?,
        None
    );
    Ok(())
}

/// A run's end that has no more use for its record's transcript hands it to the store when
/// the store keeps it for the continuation (no copy of a long history), and the continuation
/// reads it as written; a transcript the store does not keep stays with the record.
async fn a_run_s_end_hands_over_the_transcript_the_store_keeps(db: &TestDb) -> TestResult {
    let long = long_transcript("")?;
    let store = db.open().await?;
    let mut ended = record("resp_chain", "proj_a", true)?;
    ended.response.previous_response_id = Some("resp_before".to_owned());
    ended.transcript = long.clone();
    store.end_run_taking_transcript(&mut ended, &[]).await?;
    assert!(ended.transcript.is_empty(), "kept by the store, not copied");
    let source = store
        .continuation_source("proj_a", "resp_chain")
        .await?
        .ok_or("missing")?;
    assert_eq!(source.transcript, long);

    // Not likely to be continued (no previous response, no call handed back): not kept.
    let mut alone = record("resp_alone", "proj_a", true)?;
    alone.transcript = long.clone();
    store.end_run_taking_transcript(&mut alone, &[]).await?;
    assert_eq!(alone.transcript, long);
    // Too short to keep.
    let mut short = record("resp_short", "proj_a", true)?;
    short.response.previous_response_id = Some("resp_chain".to_owned());
    short.transcript = transcript()?;
    store.end_run_taking_transcript(&mut short, &[]).await?;
    assert_eq!(short.transcript, transcript()?);
    let source = store
        .continuation_source("proj_a", "resp_alone")
        .await?
        .ok_or("missing")?;
    assert_eq!(source.transcript, long);
    Ok(())
}

/// A conversation read again for each run reads only the items appended since (the store
/// keeps what it read, `conversation_memo.rs`), yet every read gives what the rows hold now:
/// an item appended, deleted, rewritten in place, or put back in a gap by hand (SQL, another
/// writer) is seen at the next read.
async fn a_conversation_read_again_sees_every_change_to_its_items(db: &TestDb) -> TestResult {
    use engine::store::{ItemJson, ItemKind, StoredItem};
    let store = db.open().await?;
    let message = |id: &str, text: &str| -> Result<StoredItem, serde_json::Error> {
        Ok(StoredItem {
            id: id.to_owned(),
            kind: ItemKind::Input,
            item: ItemJson::of(&json!({"type": "message", "id": id, "role": "user",
                "content": format!("{text} {}", "and a long question. ".repeat(40))}))?,
        })
    };
    let mut items = Vec::new();
    for n in 0..4 {
        items.push(message(&format!("msg_{n}"), &format!("question {n}"))?);
    }
    store
        .create_conversation(&common::conversation("conv_again"), &items)
        .await?;
    // What a read must give: the rows' items as `conversation_items` lists them now.
    let listed = || async {
        let listed: Vec<InputItem> = store
            .conversation_items("proj_a", "conv_again")
            .await?
            .iter()
            .map(|item| serde_json::from_str(item.item.get()))
            .collect::<Result<_, _>>()?;
        Ok::<_, Box<dyn std::error::Error>>(listed)
    };
    let read = || async {
        let (items, json) = store
            .conversation_input_json("proj_a", "conv_again")
            .await?;
        let json = json.ok_or("the items' JSON")?;
        assert_eq!(serde_json::from_str::<Vec<InputItem>>(&json)?, items);
        Ok::<_, Box<dyn std::error::Error>>(items)
    };
    let first = read().await?;
    assert_eq!(first.len(), 4);
    assert_eq!(first, listed().await?);

    // Appended (one item, then two in one statement; a read between): read on from the last
    // item, and no change counted (the memo's items still stand).
    let changes =
        || db.text("SELECT CAST(item_changes AS TEXT) FROM conversations WHERE id = 'conv_again'");
    for appended in [4..5, 5..7] {
        let new = appended
            .clone()
            .map(|n| message(&format!("msg_{n}"), &format!("question {n}")))
            .collect::<Result<Vec<_>, _>>()?;
        assert!(
            store
                .append_conversation_items("proj_a", "conv_again", &new)
                .await?
        );
        let now = read().await?;
        assert_eq!(now.len(), appended.end);
        assert_eq!(now, listed().await?);
        assert_eq!(changes().await?, "0");
    }

    // Deleted.
    assert!(
        store
            .delete_conversation_item("proj_a", "conv_again", "msg_1")
            .await?
    );
    let now = read().await?;
    assert_eq!(now.len(), 6);
    assert_eq!(now, listed().await?);
    assert_eq!(changes().await?, "1");

    // Rewritten in place, by hand.
    db.execute(
        "UPDATE conversation_items SET item_json = \
         '{\"type\": \"message\", \"role\": \"user\", \"content\": \"Rewritten.\"}' \
         WHERE item_id = 'msg_2'",
    )
    .await?;
    let now = read().await?;
    assert_eq!(now, listed().await?);
    assert_eq!(
        now[1],
        serde_json::from_value::<InputItem>(
            json!({"type": "message", "role": "user", "content": "Rewritten."})
        )?
    );

    // Put back by hand in the gap msg_1 left (position 1), nothing removed: one more item
    // before the last one read.
    db.execute(
        "INSERT INTO conversation_items (conversation_id, position, item_id, item_json) \
         VALUES ('conv_again', 1, 'msg_back', \
         '{\"type\": \"message\", \"role\": \"user\", \"content\": \"Back.\"}')",
    )
    .await?;
    let now = read().await?;
    assert_eq!(now.len(), 7);
    assert_eq!(now, listed().await?);
    assert_eq!(
        now[1],
        serde_json::from_value::<InputItem>(
            json!({"type": "message", "role": "user", "content": "Back."})
        )?
    );
    assert_eq!(changes().await?, "3");

    // Another project's read finds nothing and leaves the conversation's as it was.
    let (none, json) = store
        .conversation_input_json("proj_b", "conv_again")
        .await?;
    assert!(none.is_empty());
    assert_eq!(json.as_deref(), Some("[]"));
    assert_eq!(read().await?, listed().await?);
    Ok(())
}

/// A conversation read for a run continuing it: its input items and its output items'
/// replays, in order, each as `conversation_items` gives it read as an input item; an item of
/// no input's shape left out; another project's conversation empty. Read again, what the rows
/// hold now, though the store keeps the items it read parsed (`conversation_memo.rs`): an
/// item rewritten behind its back as rewritten, a row that is not JSON a corrupt store, as it
/// is for `conversation_items`.
async fn a_conversation_reads_as_input_what_its_items_give(db: &TestDb) -> TestResult {
    use engine::store::{ItemJson, ItemKind, StoredItem};
    let store = db.open().await?;
    let stored = |id: &str, value: serde_json::Value| -> Result<StoredItem, serde_json::Error> {
        Ok(StoredItem {
            id: id.to_owned(),
            kind: ItemKind::Input,
            item: ItemJson::of(&value)?,
        })
    };
    let items = vec![
        stored(
            "msg_0",
            json!({"type": "message", "id": "msg_0", "role": "user",
                "content": format!("hi, {}", "and a long question. ".repeat(120))}),
        )?,
        stored(
            "fc_1",
            json!({"type": "function_call", "id": "fc_1", "call_id": "call_1",
            "name": "lookup", "arguments": "{}", "status": "completed"}),
        )?,
        stored(
            "fco_1",
            json!({"type": "function_call_output", "call_id": "call_1",
            "output": "42"}),
        )?,
        stored(
            "ws_1",
            json!({"type": "search_results", "id": "ws_1", "results": []}),
        )?,
        stored(
            "msg_2",
            json!({"type": "message", "id": "msg_2", "role": "assistant",
            "status": "completed",
            "content": [{"type": "output_text", "text": "It is 42.", "annotations": []}]}),
        )?,
    ];
    store
        .create_conversation(&common::conversation("conv_in"), &items)
        .await?;
    let expected: Vec<InputItem> = store
        .conversation_items("proj_a", "conv_in")
        .await?
        .iter()
        .filter_map(|item| serde_json::from_str(item.item.get()).ok())
        .collect();
    assert_eq!(expected.len(), 4, "{expected:?}");
    for read in 0..2 {
        assert_eq!(
            store.conversation_input("proj_a", "conv_in").await?,
            expected,
            "read {read}"
        );
    }
    assert!(
        store
            .conversation_input("proj_b", "conv_in")
            .await?
            .is_empty()
    );

    db.execute(
        "UPDATE conversation_items SET item_json = \
         '{\"type\": \"message\", \"id\": \"msg_2\", \"role\": \"assistant\", \"content\": \"Rewritten.\"}' \
         WHERE item_id = 'msg_2'",
    )
    .await?;
    let (read, json) = store.conversation_input_json("proj_a", "conv_in").await?;
    // With the JSON of the items as read (the rewritten text as it is, spaces and all; the
    // built-in tool's result, no input item, left out), which reads back as them.
    let json = json.ok_or("the items' JSON")?;
    assert!(
        json.ends_with(
            r#",{"type": "message", "id": "msg_2", "role": "assistant", "content": "Rewritten."}]"#
        ),
        "{json}"
    );
    assert!(!json.contains("search_results"), "{json}");
    assert_eq!(serde_json::from_str::<Vec<InputItem>>(&json)?, read);
    assert_eq!(read[..3], expected[..3]);
    assert_eq!(
        read[3],
        serde_json::from_value::<InputItem>(
            json!({"type": "message", "id": "msg_2", "role": "assistant", "content": "Rewritten."})
        )?
    );

    db.execute(
        "UPDATE conversation_items SET item_json = '{\"type\": not json' WHERE item_id = 'fc_1'",
    )
    .await?;
    for outcome in [
        store
            .conversation_input("proj_a", "conv_in")
            .await
            .map(|_| ()),
        store
            .conversation_items("proj_a", "conv_in")
            .await
            .map(|_| ()),
    ] {
        match outcome {
            Err(StoreError::Corrupt(message)) => {
                assert!(message.contains("fc_1"), "{message}");
                assert!(
                    !message.contains("not json"),
                    "stored data echoed: {message}"
                );
            }
            other => return Err(format!("expected corrupt, got {other:?}").into()),
        }
    }
    Ok(())
}

/// Every visible response of a project through the listing.
async fn list_all(
    store: &common::TestStore,
    project: &str,
) -> Result<Vec<ListedResponse>, StoreError> {
    let filter = ResponseFilter {
        limit: 10,
        ..ResponseFilter::default()
    };
    match store {
        common::TestStore::Sqlite(s) => s.list_responses(project, &filter).await,
        common::TestStore::Postgres(s) => s.list_responses(project, &filter).await,
    }
}

/// The length in bytes of `column` of response `id` as stored (on SQLite, packed or not).
async fn stored_length(
    db: &TestDb,
    column: &str,
    id: &str,
) -> Result<usize, Box<dyn std::error::Error>> {
    let sql = format!("SELECT CAST(length({column}) AS TEXT) FROM responses WHERE id = '{id}'");
    Ok(db.text(&sql).await?.parse()?)
}

/// SQL for a row's transcript as stored (the bytes it takes, packed or not): in
/// `transcript_json` on SQLite, and on PostgreSQL (schema version 19) in `transcript_packed`
/// when it is packed, `transcript_json` then ''.
fn stored_transcript(db: &TestDb) -> &'static str {
    match db.backend {
        common::Backend::Sqlite => "transcript_json",
        common::Backend::Postgres => {
            "CASE WHEN transcript_json = '' THEN transcript_packed \
             ELSE convert_to(transcript_json, 'UTF8') END"
        }
    }
}

/// SQL: whether a row's transcript is stored packed.
fn transcript_packed(db: &TestDb) -> &'static str {
    match db.backend {
        common::Backend::Sqlite => "typeof(transcript_json) = 'blob'",
        common::Backend::Postgres => "(transcript_json = '' AND transcript_packed IS NOT NULL)",
    }
}

/// The bytes response `id`'s transcript takes as stored.
async fn transcript_length(db: &TestDb, id: &str) -> Result<usize, Box<dyn std::error::Error>> {
    let sql = format!(
        "SELECT CAST(octet_length({}) AS TEXT) FROM responses WHERE id = '{id}'",
        stored_transcript(db)
    );
    Ok(db.text(&sql).await?.parse()?)
}

/// The bytes the transcripts of the responses `WHERE` selects take as stored.
async fn transcripts_length(
    db: &TestDb,
    condition: &str,
) -> Result<usize, Box<dyn std::error::Error>> {
    let sql = format!(
        "SELECT CAST(sum(octet_length({})) AS TEXT) FROM responses WHERE {condition}",
        stored_transcript(db)
    );
    Ok(db.text(&sql).await?.parse()?)
}

/// Response `id`'s transcript replaced by `bytes` (hex) stored packed.
async fn store_packed_transcript(db: &TestDb, id: &str, hex: &str) -> TestResult {
    db.execute(&match db.backend {
        common::Backend::Sqlite => {
            format!("UPDATE responses SET transcript_json = x'{hex}' WHERE id = '{id}'")
        }
        common::Backend::Postgres => format!(
            "UPDATE responses SET transcript_json = '', transcript_packed = '\\x{hex}' \
             WHERE id = '{id}'"
        ),
    })
    .await
}

/// The `rows` responses' `column` is stored packed on SQLite (a BLOB) and as TEXT on
/// PostgreSQL.
async fn assert_stored_packed(db: &TestDb, column: &str, rows: usize) -> TestResult {
    let (kind, expected) = match db.backend {
        common::Backend::Sqlite => (format!("typeof({column})"), "blob"),
        common::Backend::Postgres => (format!("pg_typeof({column})::text"), "text"),
    };
    let kinds = db
        .text(&format!(
            "SELECT COALESCE(string_agg({kind}, ','), '') FROM \
             (SELECT {column} FROM responses ORDER BY id) AS r"
        ))
        .await?;
    assert_eq!(kinds, vec![expected; rows].join(","), "{column}");
    Ok(())
}

/// Response `id`'s `column` rewritten as the TEXT `json`, as an older version (or PostgreSQL)
/// stores it.
async fn store_as_text(db: &TestDb, column: &str, id: &str, json: &str) -> TestResult {
    db.execute(&format!(
        "UPDATE responses SET {column} = '{}' WHERE id = '{id}'",
        json.replace('\'', "''")
    ))
    .await
}

/// On SQLite a response's JSON is stored packed (schema version 14: a BLOB well under the
/// JSON's size); a TEXT one, as version 13 and PostgreSQL store it, reads the same; both read
/// back through the lookup and the listing. A packed one that does not unpack is a corrupt
/// error naming the response.
async fn response_json_reads_back_packed_or_as_text(db: &TestDb) -> TestResult {
    let store = db.open().await?;
    let packed = record("resp_1", "proj_a", true)?;
    let mut text = record("resp_2", "proj_a", true)?;
    text.created_at += 1;
    store.put_response(&packed).await?;
    store.put_response(&text).await?;
    let json = serde_json::to_string(&text.response)?;
    if db.backend == common::Backend::Sqlite {
        let length = stored_length(db, "response_json", "resp_1").await?;
        assert!(length * 2 < json.len(), "{length} of {} bytes", json.len());
    }
    assert_stored_packed(db, "response_json", 2).await?;
    store.close().await;
    // resp_2 as an older version wrote it: the JSON as TEXT.
    store_as_text(db, "response_json", "resp_2", &json).await?;
    let store = db.open().await?;
    assert_eq!(
        store.get_response("proj_a", "resp_1").await?,
        Some(packed.clone())
    );
    assert_eq!(
        store.get_response("proj_a", "resp_2").await?,
        Some(text.clone())
    );
    let listed = list_all(&store, "proj_a").await?;
    let listed: Vec<_> = listed.into_iter().map(|l| l.response).collect();
    assert_eq!(listed, [text.response, packed.response]);
    store.close().await;
    if db.backend == common::Backend::Sqlite {
        // The format byte of a packed response and a length, then a block that is not LZ4.
        db.execute(
            "UPDATE responses SET response_json = x'0340000000ffffffffffffffff' \
             WHERE id = 'resp_1'",
        )
        .await?;
        let store = db.open().await?;
        for read in [
            store.get_response("proj_a", "resp_1").await.map(|_| ()),
            list_all(&store, "proj_a").await.map(|_| ()),
        ] {
            let Err(StoreError::Corrupt(message)) = read else {
                return Err(format!("a damaged response read as {read:?}").into());
            };
            assert!(message.contains("resp_1"), "{message}");
        }
        assert!(store.get_response("proj_a", "resp_2").await?.is_some());
    }
    Ok(())
}

/// A response's long instructions (SQLite schema version 21: stored once as they are at the
/// head of its JSON, its run's last chunk packed against them) read back whole: the response,
/// its events from the start and after a cursor, and again after a later write of its row. On
/// SQLite a chunk whose response no longer holds the text is a corrupt error naming the
/// response, never other lines.
async fn a_long_prompt_reads_back_from_its_response_and_its_events(db: &TestDb) -> TestResult {
    let store = db.open().await?;
    let mut ended = record("resp_1", "proj_a", true)?;
    ended.response.instructions = Some(common::prompt(5_000));
    let mut started = ended.clone();
    started.response.status = ResponseStatus::InProgress;
    store.put_response(&started).await?;
    let events = common::run_events(&ended.response, 64)?;
    store.end_run(&ended, &events).await?;
    assert_eq!(
        store.get_response("proj_a", "resp_1").await?,
        Some(ended.clone())
    );
    assert_eq!(store.events_after("resp_1", None).await?, events);
    assert_eq!(store.events_after("resp_1", Some(40)).await?, events[41..]);
    store.put_response(&ended).await?;
    assert_eq!(store.events_after("resp_1", None).await?, events);
    let listed = list_all(&store, "proj_a").await?;
    assert_eq!(listed.len(), 1);
    assert_eq!(listed[0].response, ended.response);
    store.close().await;
    if db.backend != common::Backend::Sqlite {
        return Ok(());
    }
    let formats = db
        .text(
            "SELECT hex(substr(response_json, 1, 1)) || ',' || \
             (SELECT group_concat(hex(substr(data, 1, 1))) FROM event_chunks) FROM responses",
        )
        .await?;
    assert_eq!(formats, "06,07");
    // The prompt stored once: the three copies of the chunk are matches.
    let prompt = ended
        .response
        .instructions
        .as_deref()
        .unwrap_or_default()
        .len();
    let chunk: i64 = db
        .text("SELECT CAST(length(data) AS TEXT) FROM event_chunks")
        .await?
        .parse()?;
    assert!(chunk * 4 < prompt as i64, "a chunk of {chunk} bytes");
    let response = stored_length(db, "response_json", "resp_1").await?;
    assert!(response < prompt + 600, "a response of {response} bytes");
    // The row rewritten as TEXT by hand: its chunk no longer reads, and says why.
    store_as_text(
        db,
        "response_json",
        "resp_1",
        &serde_json::to_string(&ended.response)?,
    )
    .await?;
    let store = db.open().await?;
    assert_eq!(
        store.get_response("proj_a", "resp_1").await?,
        Some(ended.clone())
    );
    let read = store.events_after("resp_1", None).await;
    let Err(StoreError::Corrupt(message)) = read else {
        return Err(format!("a chunk without its text read as {read:?}").into());
    };
    assert!(
        message.contains("resp_1") && message.contains("text its response does not hold"),
        "{message}"
    );
    store.close().await;
    Ok(())
}

/// A long transcript is stored packed (SQLite schema version 17: a BLOB a fraction of its
/// JSON; PostgreSQL version 19: in `transcript_packed`); a TEXT one, as the versions before
/// store it (and, on PostgreSQL, over a packed one, as a replica of an older version writes it
/// during a rolling upgrade), reads the same, by the lookup and by a continuation. A packed one
/// that does not unpack is a corrupt error naming the response and the column.
async fn a_long_transcript_reads_back_packed_or_as_text(db: &TestDb) -> TestResult {
    let long = || -> Result<Vec<InputItem>, serde_json::Error> {
        let mut items = Vec::new();
        // Past the length from which transcripts are packed (16 KiB).
        for n in 0..60 {
            items.extend(transcript()?);
            items.push(serde_json::from_value(json!({
                "role": "user", "content": format!("question {n}: and then? é\u{1F600}\"\\"),
            }))?);
        }
        Ok(items)
    };
    let store = db.open().await?;
    let mut packed = record("resp_1", "proj_a", true)?;
    packed.transcript = long()?;
    let mut text = record("resp_2", "proj_a", true)?;
    text.transcript = long()?;
    store.put_response(&packed).await?;
    store.put_response(&text).await?;
    let json = InputItem::list_to_json(&text.transcript)?;
    let length = transcript_length(db, "resp_1").await?;
    assert!(length * 4 < json.len(), "{length} of {} bytes", json.len());
    let packed_rows = db
        .text(&format!(
            "SELECT CAST(count(*) AS TEXT) FROM responses WHERE {}",
            transcript_packed(db)
        ))
        .await?;
    assert_eq!(packed_rows, "2");
    store.close().await;
    // resp_2 as an older version wrote it: the JSON as TEXT.
    store_as_text(db, "transcript_json", "resp_2", &json).await?;
    let store = db.open().await?;
    for expected in [&packed, &text] {
        assert_eq!(
            store.get_response("proj_a", &expected.id).await?.as_ref(),
            Some(expected)
        );
        let source = store
            .continuation_source("proj_a", &expected.id)
            .await?
            .ok_or("missing")?;
        assert_eq!(source.transcript, expected.transcript, "{}", expected.id);
    }
    store.close().await;
    // The format byte of a packed chunk and a length, then a block that is not LZ4.
    store_packed_transcript(db, "resp_1", "0140000000ffffffffffffffff").await?;
    let store = db.open().await?;
    for message in corrupt_reads(&store, "resp_1").await? {
        assert!(message.contains("resp_1"), "{message}");
        assert!(message.contains("transcript_json"), "{message}");
    }
    assert!(store.get_response("proj_a", "resp_2").await?.is_some());
    Ok(())
}

/// The corrupt-store errors of both reads of response `id` of `proj_a`, the lookup and a
/// continuation; an error when either reads it or fails otherwise.
async fn corrupt_reads(
    store: &common::TestStore,
    id: &str,
) -> Result<Vec<String>, Box<dyn std::error::Error>> {
    let mut messages = Vec::new();
    for read in [
        store.get_response("proj_a", id).await.map(|_| ()),
        store.continuation_source("proj_a", id).await.map(|_| ()),
    ] {
        let Err(StoreError::Corrupt(message)) = read else {
            return Err(format!("a damaged transcript of {id} read as {read:?}").into());
        };
        messages.push(message);
    }
    Ok(messages)
}

/// A conversation's responses written turn by turn, each transcript the one before and one more
/// turn (each packed after the one before: `packed_transcripts.rs`), and a branch off an
/// earlier turn: every response reads back its own transcript, by the lookup and by a
/// continuation, and the transcripts take well under half their text.
async fn a_conversations_transcripts_read_back_turn_by_turn_and_branched(
    db: &TestDb,
) -> TestResult {
    let turn = |n: usize, tag: &str| -> Result<Vec<InputItem>, serde_json::Error> {
        serde_json::from_value(json!([
            {"role": "user", "content": format!("{tag} question {n}: and what follows from it?")},
            {"type": "message", "role": "assistant", "id": format!("msg_{tag}{n}"),
             "status": "completed", "content": [{"type": "output_text",
             "text": format!("{tag} answer {n}: it follows, é\u{1F600}\"\\."), "annotations": []}]}
        ]))
    };
    let store = db.open().await?;
    let mut transcript = Vec::new();
    let mut written = Vec::new();
    for n in 0..150 {
        transcript.extend(turn(n, "a")?);
        let mut ended = record(&format!("resp_{n:03}"), "proj_a", true)?;
        ended.created_at += i64::try_from(n)?;
        ended.conversation_id = (n > 0).then(|| "resp_000".to_owned());
        ended.response.previous_response_id = (n > 0).then(|| format!("resp_{:03}", n - 1));
        ended.transcript = transcript.clone();
        store.end_run(&ended, &[]).await?;
        written.push(ended);
    }
    // A branch off turn 99, written after the conversation went on past it.
    let mut branch = record("resp_branch", "proj_a", true)?;
    branch.conversation_id = Some("resp_000".to_owned());
    branch.response.previous_response_id = Some("resp_099".to_owned());
    branch.transcript = written[99].transcript.clone();
    branch.transcript.extend(turn(100, "b")?);
    store.end_run(&branch, &[]).await?;
    written.push(branch);
    // And the conversation goes on from its last turn.
    let mut last = record("resp_150", "proj_a", true)?;
    last.conversation_id = Some("resp_000".to_owned());
    transcript.extend(turn(150, "a")?);
    last.transcript = transcript;
    store.end_run(&last, &[]).await?;
    written.push(last);
    // An OpenAI conversation's runs: each writes the previous run's answer again as the
    // conversation's items replay it, in another form of the same message.
    let mut replayed = Vec::new();
    for n in 0..100 {
        let mut ended = record(&format!("resp_c{n:03}"), "proj_a", true)?;
        ended.created_at += 1000 + i64::try_from(n)?;
        ended.append_to = Some("conv_1".to_owned());
        let [question, answer] =
            <[InputItem; 2]>::try_from(turn(n, "c")?).map_err(|_| "a turn is two items")?;
        let InputItem::Message(mut own) = answer.clone() else {
            return Err("an answer is a message".into());
        };
        own.id = None;
        own.status = None;
        own.content = protocol::input::MessageContent::Text(format!("c answer {n}"));
        replayed.push(question);
        ended.transcript = replayed.clone();
        ended.transcript.push(InputItem::Message(own));
        replayed.push(answer);
        store.end_run(&ended, &[]).await?;
        written.push(ended);
    }

    for expected in &written {
        let read = store
            .get_response("proj_a", &expected.id)
            .await?
            .ok_or("missing")?;
        assert_eq!(read.transcript, expected.transcript, "{}", expected.id);
        let source = store
            .continuation_source("proj_a", &expected.id)
            .await?
            .ok_or("missing")?;
        assert_eq!(source.transcript, expected.transcript, "{}", expected.id);
    }
    let text: usize = written
        .iter()
        .map(|r| InputItem::list_to_json(&r.transcript).map(|j| j.len()))
        .sum::<Result<usize, _>>()?;
    let stored = transcripts_length(db, "true").await?;
    assert!(stored * 2 < text, "{stored} of {text} bytes");
    Ok(())
}

/// A long conversation (SQLite schema version 18, PostgreSQL 19): each response's transcript
/// stored linked to the one before it, only its own pieces, at most 32 links in a row, so that
/// the store grows with the conversation, not with its square. Deleting responses others are
/// linked to (one turn in the middle, the base of two branches, the first, the last) leaves
/// every other response reading back the same, and the conversation goes on; a transcript
/// whose base was deleted behind the store's back after it was packed (by hand, or by another
/// replica) is written whole.
async fn a_long_conversation_is_stored_linked_and_outlives_deletions(db: &TestDb) -> TestResult {
    let turn = |n: usize, tag: &str| -> Result<Vec<InputItem>, serde_json::Error> {
        let words: String = (0..120)
            .map(|w| format!(" {tag}{}", (n * 120 + w) * 7919 % 1009))
            .collect();
        serde_json::from_value(json!([
            {"role": "user", "content": format!("{tag} question {n}:{words}?")},
            {"type": "message", "role": "assistant", "id": format!("msg_{tag}{n}"),
             "status": "completed", "content": [{"type": "output_text",
             "text": format!("{tag} answer {n}:{words}."), "annotations": []}]}
        ]))
    };
    let store = db.open().await?;
    let mut written: Vec<ResponseRecord> = Vec::new();
    let end = async |store: &common::TestStore,
                     id: &str,
                     previous: Option<&str>,
                     transcript: Vec<InputItem>| {
        let mut ended = record(id, "proj_a", true)?;
        ended.conversation_id = Some("resp_000".to_owned());
        ended.response.previous_response_id = previous.map(str::to_owned);
        ended.transcript = transcript;
        store.end_run(&ended, &[]).await?;
        Ok::<_, Box<dyn std::error::Error>>(ended)
    };
    let mut transcript = Vec::new();
    for n in 0..100 {
        transcript.extend(turn(n, "a")?);
        let previous = n.checked_sub(1).map(|p| format!("resp_{p:03}"));
        written.push(
            end(
                &store,
                &format!("resp_{n:03}"),
                previous.as_deref(),
                transcript.clone(),
            )
            .await?,
        );
    }
    // Two branches off turn 60.
    for tag in ["b", "c"] {
        let mut branch = written[60].transcript.clone();
        branch.extend(turn(61, tag)?);
        written.push(end(&store, &format!("resp_{tag}61"), Some("resp_060"), branch).await?);
    }
    let linked: usize = db
        .text("SELECT CAST(count(*) AS TEXT) FROM responses WHERE transcript_base IS NOT NULL")
        .await?
        .parse()?;
    let whole: usize = db
        .text(&format!(
            "SELECT CAST(count(*) AS TEXT) FROM responses \
             WHERE {} AND transcript_base IS NULL",
            transcript_packed(db)
        ))
        .await?
        .parse()?;
    // Packed from turn 8 on (16 KiB); one whole every 33 after that.
    assert!(linked >= 85 && whole <= 4, "{linked} linked, {whole} whole");
    // The last 50 turns: their transcripts' text grows with the square of the turns, what is
    // stored with the turns.
    let text: usize = written[50..100]
        .iter()
        .map(|r| InputItem::list_to_json(&r.transcript).map(|j| j.len()))
        .sum::<Result<usize, _>>()?;
    let stored = transcripts_length(db, "id BETWEEN 'resp_050' AND 'resp_099'").await?;
    assert!(stored * 25 < text, "{stored} of {text} bytes");
    let check = async |store: &common::TestStore, written: &[ResponseRecord]| -> TestResult {
        for expected in written {
            let read = store
                .get_response("proj_a", &expected.id)
                .await?
                .ok_or_else(|| format!("{} missing", expected.id))?;
            assert_eq!(read.transcript, expected.transcript, "{}", expected.id);
            let source = store
                .continuation_source("proj_a", &expected.id)
                .await?
                .ok_or("missing")?;
            assert_eq!(source.transcript, expected.transcript, "{}", expected.id);
        }
        Ok(())
    };
    check(&store, &written).await?;
    for gone in [
        "resp_060", "resp_061", "resp_030", "resp_000", "resp_099", "resp_062",
    ] {
        assert!(store.delete_response("proj_a", gone).await?, "{gone}");
        written.retain(|r| r.id != gone);
        check(&store, &written).await?;
    }
    // Read again from a store that remembers nothing.
    store.close().await;
    let store = db.open().await?;
    check(&store, &written).await?;
    // The conversation goes on from turn 98, and once more.
    transcript = written
        .iter()
        .find(|r| r.id == "resp_098")
        .ok_or("98")?
        .transcript
        .clone();
    for (n, previous) in [(99, "resp_098"), (100, "resp_099b")] {
        transcript.extend(turn(n, "a")?);
        let id = format!("resp_{n:03}b");
        written.push(end(&store, &id, Some(previous), transcript.clone()).await?);
    }
    check(&store, &written).await?;
    // resp_099b, the first transcript written after the reopening (nothing in the memo), is
    // linked to resp_098 all the same: read back from the store.
    let base = db
        .text("SELECT transcript_base FROM responses WHERE id = 'resp_099b'")
        .await?;
    assert_eq!(base, "resp_098");
    // resp_100b is linked to resp_099b; deleted behind the store's back (as a deletion that
    // commits between a transcript's packing and its write, or one another replica makes),
    // the next transcript, packed to be linked to it, is written whole.
    let base = db
        .text("SELECT transcript_base FROM responses WHERE id = 'resp_100b'")
        .await?;
    assert_eq!(base, "resp_099b");
    db.execute("DELETE FROM responses WHERE id = 'resp_100b'")
        .await?;
    written.retain(|r| r.id != "resp_100b");
    transcript.extend(turn(101, "a")?);
    written.push(end(&store, "resp_101b", Some("resp_100b"), transcript.clone()).await?);
    let stored = db
        .text(&format!(
            "SELECT CASE WHEN {} THEN 'packed' ELSE 'text' END || ' ' \
             || COALESCE(transcript_base, 'none') FROM responses WHERE id = 'resp_101b'",
            transcript_packed(db)
        ))
        .await?;
    assert_eq!(stored, "packed none");
    check(&store, &written).await?;
    // The project's deletion takes every response, linked or not, at once.
    match &store {
        common::TestStore::Sqlite(s) => s.delete_project("proj_a").await?,
        common::TestStore::Postgres(s) => s.delete_project("proj_a").await?,
    };
    assert_eq!(
        db.text("SELECT CAST(count(*) AS TEXT) FROM responses")
            .await?,
        "0"
    );
    store.close().await;
    Ok(())
}

/// A transcript too long for the memo of packed transcripts (over an eighth of its 8 MiB) is
/// still stored linked to the one it goes on from, read back from the store, turn after turn.
async fn a_transcript_too_long_for_the_memo_is_still_linked(db: &TestDb) -> TestResult {
    let store = db.open().await?;
    let item = |n: u64| -> Result<InputItem, serde_json::Error> {
        // ~40 KB of words that do not repeat much: packed, still ~20 KB.
        let words: String = (0..6000u64)
            .map(|w| format!(" w{}", (n * 6000 + w).wrapping_mul(2_654_435_761) % 100_003))
            .collect();
        serde_json::from_value(json!({"role": "user", "content": format!("{n}:{words}")}))
    };
    let mut transcript: Vec<InputItem> = (0..30).map(item).collect::<Result<_, _>>()?;
    let mut written = Vec::new();
    for n in 0..4u64 {
        transcript.push(item(100 + n)?);
        let mut ended = record(&format!("resp_{n}"), "proj_a", true)?;
        ended.conversation_id = Some("resp_0".to_owned());
        ended.response.previous_response_id = n.checked_sub(1).map(|p| format!("resp_{p}"));
        ended.transcript = transcript.clone();
        store.end_run(&ended, &[]).await?;
        written.push(ended);
    }
    assert!(InputItem::list_to_json(&transcript)?.len() > 1 << 20);
    for n in 1..4 {
        let id = format!("resp_{n}");
        let base = db
            .text(&format!(
                "SELECT transcript_base FROM responses WHERE id = '{id}'"
            ))
            .await?;
        assert_eq!(base, format!("resp_{}", n - 1));
        let length = transcript_length(db, &id).await?;
        assert!(length < 60_000, "{id}: {length} bytes");
    }
    for expected in &written {
        let read = store
            .get_response("proj_a", &expected.id)
            .await?
            .ok_or("missing")?;
        assert_eq!(read.transcript, expected.transcript, "{}", expected.id);
    }
    store.close().await;
    Ok(())
}

/// A linked transcript whose base is not stored, or whose links go round in a loop, is a
/// corrupt error naming the response and the column, never a hang or a panic. (On PostgreSQL a
/// foreign key keeps a base from going.)
async fn a_broken_link_is_a_corrupt_error(db: &TestDb) -> TestResult {
    let store = db.open().await?;
    let mut transcript = Vec::new();
    for n in 0..40 {
        transcript.push(serde_json::from_value::<InputItem>(json!({
            "role": "user", "content": format!("question {n}: {}", "and then what? ".repeat(40)),
        }))?);
        let mut ended = record(&format!("resp_{n:02}"), "proj_a", true)?;
        ended.conversation_id = Some("resp_00".to_owned());
        ended.transcript = transcript.clone();
        store.end_run(&ended, &[]).await?;
    }
    store.close().await;
    let base = db
        .text("SELECT transcript_base FROM responses WHERE id = 'resp_39'")
        .await?;
    assert_eq!(base, "resp_38");
    if db.backend == common::Backend::Postgres {
        // PostgreSQL's foreign key refuses a link to a response not stored (schema version
        // 19); the store below is one without it.
        let dangling = db
            .execute("UPDATE responses SET transcript_base = 'resp_gone' WHERE id = 'resp_39'")
            .await;
        assert!(
            dangling
                .as_ref()
                .is_err_and(|e| e.to_string().contains("foreign key")),
            "{dangling:?}"
        );
        db.execute("ALTER TABLE responses DROP CONSTRAINT responses_transcript_base_fkey")
            .await?;
    }
    for (sql, says) in [
        (
            "UPDATE responses SET transcript_base = 'resp_gone' WHERE id = 'resp_39'",
            "not stored",
        ),
        (
            "UPDATE responses SET transcript_base = 'resp_39' WHERE id = 'resp_38'; \
             UPDATE responses SET transcript_base = 'resp_38' WHERE id = 'resp_39'",
            "deep",
        ),
        (
            "UPDATE responses SET transcript_base = NULL WHERE id = 'resp_39'",
            "no base",
        ),
    ] {
        db.execute(sql).await?;
        let store = db.open().await?;
        let messages = corrupt_reads(&store, "resp_39")
            .await
            .map_err(|e| format!("{says}: {e}"))?;
        for message in messages {
            assert!(message.contains("resp_39"), "{message}");
            assert!(
                message.contains("transcript_json") && message.contains(says),
                "{message}"
            );
        }
        store.close().await;
    }
    Ok(())
}

/// A continuation reads its transcript's JSON as stored, whether the memos hold the transcript
/// (its row's text, or the text the memo of packed transcripts kept) or it is read from the row
/// (a reopened store); and a record written after such a prefix (the engine's
/// `transcript_prefix`) stores the prefix's bytes, then its own items: it reads back as the
/// items.
async fn a_transcript_is_written_after_the_json_it_goes_on_from(db: &TestDb) -> TestResult {
    let item = |n: usize| -> Result<InputItem, serde_json::Error> {
        serde_json::from_value(json!({
            "role": "user", "content": format!("question {n}: and then? caf\u{e9}"),
        }))
    };
    let store = db.open().await?;
    // Continued (chained), so that their transcripts are kept for it; one long (packed), one
    // short (TEXT).
    let mut long = record("resp_1", "proj_a", true)?;
    long.response.previous_response_id = Some("resp_0".to_owned());
    long.transcript = (0..400).map(item).collect::<Result<_, _>>()?;
    let mut short = record("resp_2", "proj_a", true)?;
    short.response.previous_response_id = Some("resp_0".to_owned());
    short.transcript = (0..3).map(item).collect::<Result<_, _>>()?;
    assert!(InputItem::list_to_json(&long.transcript)?.len() > 16 << 10);
    store.end_run(&long, &[]).await?;
    store.end_run(&short, &[]).await?;
    let read = async |store: &common::TestStore| -> TestResult {
        for expected in [&long, &short] {
            let source = store
                .continuation_source("proj_a", &expected.id)
                .await?
                .ok_or("missing")?;
            assert_eq!(source.transcript, expected.transcript);
            let json = InputItem::list_to_json(&expected.transcript)?;
            assert_eq!(source.transcript_json.as_deref(), Some(json.as_str()));
        }
        Ok(())
    };
    read(&store).await?;
    store.close().await;
    let store = db.open().await?;
    read(&store).await?;

    let mut next = record("resp_3", "proj_a", true)?;
    next.transcript = short.transcript.clone();
    next.transcript.push(item(99)?);
    // The prefix's bytes, not the items written again: an escape serde does not write.
    let prefix = InputItem::list_to_json(&short.transcript)?.replace('\u{e9}', "\\u00e9");
    next.transcript_prefix = Some(TranscriptPrefix {
        json: prefix.as_str().into(),
        items: short.transcript.len(),
    });
    store.end_run(&next, &[]).await?;
    let stored = db
        .text("SELECT transcript_json FROM responses WHERE id = 'resp_3'")
        .await?;
    let open = prefix.strip_suffix(']').ok_or("a list")?;
    assert!(stored.starts_with(open), "{stored}");
    assert!(
        stored.ends_with(r#"question 99: and then? café"}]"#),
        "{stored}"
    );
    let read = store.get_response("proj_a", "resp_3").await?;
    assert_eq!(read.ok_or("missing")?.transcript, next.transcript);
    store.close().await;
    Ok(())
}

async fn corrupt_transcript_is_a_corrupt_error(db: &TestDb) -> TestResult {
    let store = db.open().await?;
    store
        .put_response(&record("resp_1", "proj_a", true)?)
        .await?;
    db.execute("UPDATE responses SET transcript_json = '[{\"type\": \"nonsense\"}]'")
        .await?;
    let result = store.get_response("proj_a", "resp_1").await;
    assert!(matches!(result, Err(StoreError::Corrupt(_))), "{result:?}");
    Ok(())
}

async fn ending_a_run_stores_response_events_and_removes_its_job_together(
    db: &TestDb,
) -> TestResult {
    let store = db.open().await?;
    let job = |id: &str| engine::store::JobRecord {
        response_id: id.to_owned(),
        project_id: "proj_a".to_owned(),
        payload: "{}".to_owned(),
        state: engine::store::JobState::Queued,
        lease_owner: None,
        lease_until_ms: 0,
        created_at_ms: 1,
    };
    store.insert_job(&job("resp_f")).await?;
    store.insert_job(&job("resp_other")).await?;
    store.append_events("resp_f", &events(0..3)).await?;
    store
        .end_run(&record("resp_f", "proj_a", true)?, &events(3..6))
        .await?;
    let stored = store
        .get_response("proj_a", "resp_f")
        .await?
        .ok_or("missing")?;
    assert_eq!(stored.response.status, ResponseStatus::Completed);
    let seqs: Vec<u64> = store
        .events_after("resp_f", None)
        .await?
        .iter()
        .map(|e| e.sequence_number)
        .collect();
    assert_eq!(seqs, [0, 1, 2, 3, 4, 5]);
    // The run's job row went with it; another run's stays.
    assert_eq!(store.count_queued("proj_a").await?, 1);

    // Refused for another project's id: the events of that write are rolled back too, and the
    // job row stays.
    store.insert_job(&job("resp_g")).await?;
    store
        .put_response(&record("resp_g", "proj_a", true)?)
        .await?;
    let taken = store
        .end_run(&record("resp_g", "proj_b", true)?, &events(0..2))
        .await;
    assert!(matches!(taken, Err(StoreError::Conflict(_))), "{taken:?}");
    assert_eq!(store.events_after("resp_g", None).await?.len(), 0);
    assert_eq!(store.count_queued("proj_a").await?, 2);
    Ok(())
}

async fn the_conversation_id_round_trips(db: &TestDb) -> TestResult {
    let store = db.open().await?;
    let first = record("resp_first", "proj_a", true)?;
    store.put_response(&first).await?;
    let mut second = record("resp_second", "proj_a", true)?;
    second.conversation_id = Some("resp_first".to_owned());
    store.put_response(&second).await?;
    let read = store
        .get_response("proj_a", "resp_first")
        .await?
        .ok_or("missing")?;
    assert_eq!(read.conversation(), "resp_first");
    let read = store
        .get_response("proj_a", "resp_second")
        .await?
        .ok_or("missing")?;
    assert_eq!(read.conversation_id.as_deref(), Some("resp_first"));
    Ok(())
}

async fn shared_files_round_trip_byte_for_byte_within_their_project(db: &TestDb) -> TestResult {
    let store = db.open().await?;
    let data: Vec<u8> = (0..=255u8).cycle().take(70_000).collect();
    let file = FileRecord {
        id: "file_1".to_owned(),
        response_id: "resp_1".to_owned(),
        project_id: "proj_a".to_owned(),
        filename: "chart.png".to_owned(),
        content_type: "image/png".to_owned(),
        bytes: data.len() as u64,
        created_at: 1_700_000_000,
    };
    store.put_file(&file, &data).await?;
    assert_eq!(
        store.list_files("proj_a", "resp_1").await?,
        vec![file.clone()]
    );
    let (read, bytes) = store
        .get_file("proj_a", "resp_1", "file_1")
        .await?
        .ok_or("missing")?;
    assert_eq!(read, file);
    assert_eq!(bytes, data);
    assert!(store.list_files("proj_b", "resp_1").await?.is_empty());
    assert!(
        store
            .get_file("proj_b", "resp_1", "file_1")
            .await?
            .is_none()
    );
    assert!(
        store
            .get_file("proj_a", "resp_1", "file_2")
            .await?
            .is_none()
    );
    Ok(())
}

async fn items_are_indexed_with_their_run_and_conversations_keep_theirs(db: &TestDb) -> TestResult {
    use engine::store::{ConversationRecord, ItemKind};
    let store = db.open().await?;
    let item = common::message_item;
    let conversation = ConversationRecord {
        id: "conv_1".to_owned(),
        project_id: "proj_a".to_owned(),
        created_at: 1,
        metadata: [("k".to_owned(), "v".to_owned())].into(),
    };
    store
        .create_conversation(&conversation, &[item("msg_0", ItemKind::Input)?])
        .await?;
    let mut ending = record("resp_i", "proj_a", true)?;
    ending.items = vec![
        item("msg_1", ItemKind::Input)?,
        item("msg_2", ItemKind::Output)?,
    ];
    ending.append_to = Some("conv_1".to_owned());
    store.end_run(&ending, &events(0..1)).await?;
    // Indexed by id, per project.
    let found = store
        .find_items("proj_a", &["msg_2".to_owned(), "msg_x".to_owned()])
        .await?;
    assert_eq!(found.len(), 1);
    assert_eq!(found[0].kind, ItemKind::Output);
    assert!(
        store
            .find_items("proj_b", &["msg_2".to_owned()])
            .await?
            .is_empty()
    );
    let inputs = store
        .response_items("proj_a", "resp_i", ItemKind::Input)
        .await?;
    assert_eq!(inputs.len(), 1);
    // Appended to the conversation, in order.
    let ids = common::conversation_ids(&*store, "proj_a", "conv_1").await?;
    assert_eq!(ids, ["msg_0", "msg_1", "msg_2"]);
    assert!(
        store
            .conversation_items("proj_b", "conv_1")
            .await?
            .is_empty()
    );
    assert!(
        store
            .delete_conversation_item("proj_a", "conv_1", "msg_1")
            .await?
    );
    assert!(
        !store
            .delete_conversation_item("proj_b", "conv_1", "msg_2")
            .await?
    );
    assert_eq!(store.conversation_items("proj_a", "conv_1").await?.len(), 2);
    // Deleting the response takes its items and events.
    assert!(!store.delete_response("proj_b", "resp_i").await?);
    assert!(store.delete_response("proj_a", "resp_i").await?);
    assert!(store.get_response("proj_a", "resp_i").await?.is_none());
    assert!(
        store
            .find_items("proj_a", &["msg_2".to_owned()])
            .await?
            .is_empty()
    );
    assert!(store.events_after("resp_i", None).await?.is_empty());
    // Deleting the conversation takes its items.
    assert!(store.delete_conversation("proj_a", "conv_1").await?);
    assert!(store.get_conversation("proj_a", "conv_1").await?.is_none());
    Ok(())
}

async fn runs_append_after_the_last_item_of_their_conversation_only(db: &TestDb) -> TestResult {
    use engine::store::ItemKind;
    let store = db.open().await?;
    let item = |id: &str| common::message_item(id, ItemKind::Input);
    let conversation = common::conversation("conv_2");
    store
        .create_conversation(&conversation, &[item("msg_0")?, item("msg_1")?])
        .await?;
    let ending = |id: &str, project: &str, conversation: &str, items: &[&str]| {
        record(id, project, true).and_then(|mut record| {
            record.items = items.iter().map(|i| item(i)).collect::<Result<_, _>>()?;
            record.append_to = Some(conversation.to_owned());
            Ok(record)
        })
    };
    // Several runs ending at once (possibly in one shared transaction): each run's items come
    // after those already there, none on another's position.
    let (a, b, c) = (
        ending("resp_a", "proj_a", "conv_2", &["msg_a1", "msg_a2"])?,
        ending("resp_b", "proj_a", "conv_2", &["msg_b1", "msg_b2"])?,
        ending("resp_c", "proj_a", "conv_2", &["msg_c1"])?,
    );
    let one = events(0..1);
    let (ra, rb, rc) = tokio::join!(
        store.end_run(&a, &one),
        store.end_run(&b, &one),
        store.end_run(&c, &one),
    );
    ra?;
    rb?;
    rc?;
    let ids = common::conversation_ids(&*store, "proj_a", "conv_2").await?;
    assert_eq!(ids.len(), 7, "{ids:?}");
    assert_eq!(&ids[..2], ["msg_0", "msg_1"]);
    for run in [
        &["msg_a1", "msg_a2"][..],
        &["msg_b1", "msg_b2"],
        &["msg_c1"],
    ] {
        let at = ids
            .iter()
            .position(|i| i == run[0])
            .ok_or("run items missing")?;
        assert_eq!(&ids[at..at + run.len()], run, "{ids:?}");
    }
    // Another project's conversation, or one that is gone, takes nothing; the run is stored.
    store
        .end_run(
            &ending("resp_d", "proj_b", "conv_2", &["msg_d"])?,
            &events(0..1),
        )
        .await?;
    store
        .end_run(
            &ending("resp_e", "proj_a", "conv_gone", &["msg_e"])?,
            &events(0..1),
        )
        .await?;
    assert_eq!(store.conversation_items("proj_a", "conv_2").await?.len(), 7);
    assert!(store.get_response("proj_b", "resp_d").await?.is_some());
    assert!(store.get_response("proj_a", "resp_e").await?.is_some());
    Ok(())
}

/// A run's items are written in groups of a few sizes (32, 16, … 1 rows a statement): every
/// item of a long history is indexed and appended, in order, whatever the count.
async fn many_items_are_indexed_and_appended_in_order(db: &TestDb) -> TestResult {
    use engine::store::ItemKind;
    let store = db.open().await?;
    let item = |id: &str| common::message_item(id, ItemKind::Input);
    let conversation = common::conversation("conv_m");
    store
        .create_conversation(&conversation, &[item("msg_0")?])
        .await?;
    let mut want = vec!["msg_0".to_owned()];
    for (run, count) in [(1, 45), (2, 37), (3, 1), (4, 64)] {
        let ids: Vec<String> = (0..count).map(|i| format!("msg_{run}_{i}")).collect();
        let mut ending = record(&format!("resp_m{run}"), "proj_a", true)?;
        ending.items = ids.iter().map(|id| item(id)).collect::<Result<_, _>>()?;
        ending.append_to = Some("conv_m".to_owned());
        store.end_run(&ending, &events(0..1)).await?;
        let indexed: Vec<String> = store
            .response_items("proj_a", &format!("resp_m{run}"), ItemKind::Input)
            .await?
            .into_iter()
            .map(|i| i.id)
            .collect();
        assert_eq!(indexed, ids, "run {run}");
        want.extend(ids);
    }
    let appended = common::conversation_ids(&*store, "proj_a", "conv_m").await?;
    assert_eq!(appended, want);
    let found = store
        .find_items("proj_a", &["msg_1_44".to_owned(), "msg_4_63".to_owned()])
        .await?;
    assert_eq!(found.len(), 2);
    Ok(())
}

async fn workspace_snapshots_keep_generations_within_their_project(db: &TestDb) -> TestResult {
    let store = db.open().await?;
    let snapshots = store.snapshots();
    assert_eq!(snapshots.use_workspace("proj_a", "resp_1", 10).await?, None);
    assert!(
        snapshots
            .get_workspace_snapshot("proj_a", "resp_1")
            .await?
            .is_none()
    );
    let data: Vec<u8> = (0..=255u8).cycle().take(300_000).collect();
    let first = snapshots
        .put_workspace_snapshot("proj_a", "resp_1", &data, None, 10)
        .await?;
    assert_eq!(first, 1);
    let read = snapshots
        .get_workspace_snapshot("proj_a", "resp_1")
        .await?
        .ok_or("missing")?;
    assert_eq!(read.generation, 1);
    assert_eq!(read.data, data, "byte for byte");
    assert_eq!(read.note, None);
    assert_eq!(read.updated_at, 10);
    // The next save replaces the files and counts on; a note stands for files not kept.
    let second = snapshots
        .put_workspace_snapshot("proj_a", "resp_1", b"", Some("too large"), 20)
        .await?;
    assert_eq!(second, 2);
    let read = snapshots
        .get_workspace_snapshot("proj_a", "resp_1")
        .await?
        .ok_or("missing")?;
    assert_eq!((read.generation, read.data.len()), (2, 0));
    assert_eq!(read.note.as_deref(), Some("too large"));
    // Another project's workspace of the same id is another row.
    assert_eq!(snapshots.use_workspace("proj_b", "resp_1", 20).await?, None);
    assert_eq!(
        snapshots
            .put_workspace_snapshot("proj_b", "resp_1", b"b", None, 20)
            .await?,
        1
    );
    // Use keeps a workspace from expiring.
    assert_eq!(
        snapshots.use_workspace("proj_a", "resp_1", 30).await?,
        Some(2)
    );
    assert_eq!(snapshots.purge_workspace_snapshots(25).await?, 1);
    assert!(
        snapshots
            .get_workspace_snapshot("proj_b", "resp_1")
            .await?
            .is_none()
    );
    assert_eq!(
        snapshots.use_workspace("proj_a", "resp_1", 40).await?,
        Some(2)
    );
    assert_eq!(snapshots.purge_workspace_snapshots(41).await?, 1);
    assert_eq!(snapshots.use_workspace("proj_a", "resp_1", 50).await?, None);
    Ok(())
}

async fn model_turns_are_stored_with_the_run_and_replaced_with_it(db: &TestDb) -> TestResult {
    use protocol::listing::{ModelTurn, ModelTurnStatus, ModelTurnUsage};
    let store = db.open().await?;
    // The record written when the run starts has no turns yet (NULL column).
    let mut stored = record("resp_t", "proj_a", true)?;
    stored.response.status = ResponseStatus::InProgress;
    store.put_response(&stored).await?;
    let loaded = store
        .get_response("proj_a", "resp_t")
        .await?
        .ok_or("missing")?;
    assert!(loaded.turns.is_empty());
    let column = db
        .text("SELECT COALESCE(turns_json, 'null') FROM responses WHERE id = 'resp_t'")
        .await?;
    assert_eq!(column, "null");

    // The run ends with two turns: a failed one (no usage) and the one that answered.
    stored.response.status = ResponseStatus::Completed;
    stored.turns = vec![
        ModelTurn {
            step: 1,
            model: "openai/gpt-test".to_owned(),
            started_at_ms: 1_700_000_000_100,
            duration_ms: 40,
            time_to_first_token_ms: None,
            status: ModelTurnStatus::Failed,
            usage: None,
            error: Some("upstream 500".to_owned()),
        },
        ModelTurn {
            step: 1,
            model: "openai/gpt-other".to_owned(),
            started_at_ms: 1_700_000_000_150,
            duration_ms: 900,
            time_to_first_token_ms: Some(120),
            status: ModelTurnStatus::Completed,
            usage: Some(ModelTurnUsage {
                input_tokens: 120,
                output_tokens: 12,
                cached_tokens: 100,
                cache_write_tokens: 0,
                reasoning_tokens: 5,
            }),
            error: None,
        },
    ];
    store.end_run(&stored, &events(0..1)).await?;
    let loaded = store
        .get_response("proj_a", "resp_t")
        .await?
        .ok_or("missing")?;
    assert_eq!(loaded.turns, stored.turns);
    // Another project never reads them.
    assert!(store.get_response("proj_b", "resp_t").await?.is_none());
    // A record written again (as crash recovery does with what it read) keeps them.
    store.put_response(&loaded).await?;
    let again = store
        .get_response("proj_a", "resp_t")
        .await?
        .ok_or("missing")?;
    assert_eq!(again.turns, stored.turns);
    Ok(())
}

/// Many runs' writes arriving together (which the store commits in shared transactions), one
/// of them refused (an id of another project): that one fails with its own error, and every
/// other run's response and events are stored all the same.
async fn a_refused_write_among_concurrent_ones_fails_alone(db: &TestDb) -> TestResult {
    let store = db.open().await?;
    store
        .put_response(&record("resp_taken", "proj_a", true)?)
        .await?;
    let mut writes = Vec::new();
    for n in 0..40 {
        let store = store.clone();
        let id = if n == 20 {
            "resp_taken".to_owned()
        } else {
            format!("resp_{n}")
        };
        let ending = record(&id, "proj_b", true)?;
        writes.push(tokio::spawn(async move {
            store.end_run(&ending, &events(0..5)).await
        }));
    }
    for (n, write) in writes.into_iter().enumerate() {
        let outcome = write.await?;
        if n == 20 {
            assert!(
                matches!(outcome, Err(StoreError::Conflict(_))),
                "{outcome:?}"
            );
        } else {
            assert!(outcome.is_ok(), "write {n}: {outcome:?}");
            let id = format!("resp_{n}");
            assert!(store.get_response("proj_b", &id).await?.is_some(), "{id}");
            assert_eq!(store.events_after(&id, None).await?, events(0..5), "{id}");
        }
    }
    assert_eq!(store.events_after("resp_taken", None).await?, Vec::new());
    assert!(store.get_response("proj_b", "resp_taken").await?.is_none());
    Ok(())
}

matrix!(
    response_round_trips_with_transcript,
    put_response_replaces_and_updates_status_column,
    later_writes_keep_the_creation_time_and_project,
    another_projects_response_is_none,
    put_response_cannot_take_over_another_projects_id,
    hidden_response_is_returned_with_visible_false,
    events_in_two_batches_read_back_in_order,
    duplicate_append_is_ignored,
    large_batch_spans_several_statements,
    out_of_range_sequence_number_is_an_error,
    ensure_project_is_idempotent,
    keys_found_by_hash_and_unique,
    key_of_unknown_project_is_refused,
    corrupt_response_json_is_a_corrupt_error,
    response_json_reads_back_packed_or_as_text,
    a_long_prompt_reads_back_from_its_response_and_its_events,
    a_long_transcript_reads_back_packed_or_as_text,
    a_conversations_transcripts_read_back_turn_by_turn_and_branched,
    a_long_conversation_is_stored_linked_and_outlives_deletions,
    a_broken_link_is_a_corrupt_error,
    a_transcript_too_long_for_the_memo_is_still_linked,
    a_transcript_is_written_after_the_json_it_goes_on_from,
    corrupt_transcript_is_a_corrupt_error,
    ending_a_run_stores_response_events_and_removes_its_job_together,
    the_conversation_id_round_trips,
    a_continuation_reads_what_the_whole_record_gives,
    a_continuation_reads_the_transcript_the_row_holds_now,
    a_run_s_end_hands_over_the_transcript_the_store_keeps,
    a_conversation_reads_as_input_what_its_items_give,
    a_conversation_read_again_sees_every_change_to_its_items,
    shared_files_round_trip_byte_for_byte_within_their_project,
    items_are_indexed_with_their_run_and_conversations_keep_theirs,
    runs_append_after_the_last_item_of_their_conversation_only,
    many_items_are_indexed_and_appended_in_order,
    workspace_snapshots_keep_generations_within_their_project,
    model_turns_are_stored_with_the_run_and_replaced_with_it,
    a_refused_write_among_concurrent_ones_fails_alone,
);
