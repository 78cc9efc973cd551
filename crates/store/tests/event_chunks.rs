//! The event log stored in chunks (schema version 11): one row per flushed batch, read back
//! event by event from any cursor; retried and overlapping flushes read once; the per-event
//! rows of older versions (table `events`) read, purged and deleted with the chunks; on SQLite
//! (version 12; 13: against a dictionary) chunks packed when that makes them smaller, and read
//! back byte for byte. Every test runs on SQLite and on PostgreSQL.

mod common;

use common::{Backend, TestDb, TestResult, TestStore, events};
use engine::admin_store::{ProjectRecord, ProjectStore};
use engine::store::{EventRecord, ResponseRecord, StoreError};
use serde_json::json;

/// Rows of `table` holding events of `response_id`.
async fn rows(
    db: &TestDb,
    table: &str,
    response_id: &str,
) -> Result<u64, Box<dyn std::error::Error>> {
    let count = db
        .text(&format!(
            "SELECT CAST(count(*) AS TEXT) FROM {table} WHERE response_id = '{response_id}'"
        ))
        .await?;
    Ok(count.parse()?)
}

fn event(sequence_number: u64, data: &str) -> EventRecord {
    EventRecord {
        sequence_number,
        data: data.into(),
    }
}

/// Per-event rows as a version before 11 wrote them.
async fn old_rows(db: &TestDb, response_id: &str, numbers: std::ops::Range<u64>) -> TestResult {
    for n in numbers {
        db.execute(&format!(
            "INSERT INTO events (response_id, sequence_number, data) VALUES ('{response_id}', {n}, 'old {n}')"
        ))
        .await?;
    }
    Ok(())
}

fn record(
    id: &str,
    project_id: &str,
    created_at: i64,
) -> Result<ResponseRecord, serde_json::Error> {
    let response = serde_json::from_value(json!({
        "id": id, "object": "response", "created_at": created_at, "completed_at": null,
        "status": "completed", "model": "openai/gpt-test", "output": [], "usage": null,
        "error": null, "incomplete_details": null, "instructions": null,
        "max_output_tokens": null, "max_tool_calls": null, "max_steps": null,
        "temperature": 1.0, "top_p": 1.0, "tool_choice": "auto", "tools": [],
        "parallel_tool_calls": true, "truncation": "disabled", "background": false,
        "store": true, "service_tier": "default", "text": {"format": {"type": "text"}},
        "metadata": {}, "previous_response_id": null, "prompt_cache_key": null,
        "reasoning": null, "frequency_penalty": 0.0, "presence_penalty": 0.0, "top_logprobs": 0
    }))?;
    Ok(ResponseRecord {
        id: id.to_owned(),
        project_id: project_id.to_owned(),
        created_at,
        visible: true,
        response,
        transcript: Vec::new(),
        conversation_id: None,
        items: Vec::new(),
        append_to: None,
        turns: Vec::new(),
        response_json: None,
        transcript_prefix: None,
    })
}

/// Three flushes are three rows; every cursor, inside a chunk or on its boundary, gives the
/// events after it.
async fn each_flush_is_one_row_read_from_any_cursor(db: &TestDb) -> TestResult {
    let store = db.open().await?;
    store.append_events("resp_1", &events(0..3)).await?;
    store.append_events("resp_1", &events(3..7)).await?;
    store.append_events("resp_1", &events(7..8)).await?;
    assert_eq!(rows(db, "event_chunks", "resp_1").await?, 3);
    assert_eq!(store.events_after("resp_1", None).await?, events(0..8));
    for after in 0..8 {
        assert_eq!(
            store.events_after("resp_1", Some(after)).await?,
            events(after + 1..8),
            "after {after}"
        );
    }
    assert_eq!(store.events_after("resp_1", Some(8)).await?, vec![]);
    // A run's answer flushed at its end (`end_run`) is one row too.
    store
        .end_run(&record("resp_2", "proj_a", 1)?, &events(0..72))
        .await?;
    assert_eq!(rows(db, "event_chunks", "resp_2").await?, 1);
    assert_eq!(
        store.events_after("resp_2", Some(40)).await?,
        events(41..72)
    );
    Ok(())
}

/// A batch written twice (a group-commit batch run again alone) is stored once; a flush
/// retried after a failure that had committed (same first number, reaching further) and an
/// overlapping one starting elsewhere add rows, and each number is still read once, with the
/// data stored first.
async fn retried_and_overlapping_flushes_are_read_once(db: &TestDb) -> TestResult {
    let store = db.open().await?;
    store.append_events("resp_1", &events(0..2)).await?;
    store.append_events("resp_1", &events(2..5)).await?;
    store.append_events("resp_1", &events(2..5)).await?;
    assert_eq!(rows(db, "event_chunks", "resp_1").await?, 2);
    let mut retried = events(2..8);
    for event in retried.iter_mut().filter(|e| e.sequence_number < 5) {
        event.data = "replaced".into();
    }
    store.append_events("resp_1", &retried).await?;
    store.append_events("resp_1", &events(6..10)).await?;
    assert_eq!(rows(db, "event_chunks", "resp_1").await?, 4);
    assert_eq!(store.events_after("resp_1", None).await?, events(0..10));
    for after in 0..10 {
        assert_eq!(
            store.events_after("resp_1", Some(after)).await?,
            events(after + 1..10),
            "after {after}"
        );
    }
    Ok(())
}

/// A batch is cut where its numbers jump and around an event whose line holds a newline
/// (stored and read back as it is).
async fn gaps_and_newlines_split_a_batch(db: &TestDb) -> TestResult {
    let store = db.open().await?;
    let batch = vec![
        event(0, "a"),
        event(1, "b"),
        event(3, "c"),
        event(4, "d"),
        event(5, "{\n  \"pretty\": true\n}"),
        event(6, "e"),
        event(7, "f"),
        event(8, "two\nlines"),
        event(9, ""),
        event(10, ""),
    ];
    store.append_events("resp_1", &batch).await?;
    // [0, 1], [3, 4], [5], [6, 7], [8], [9, 10]
    assert_eq!(rows(db, "event_chunks", "resp_1").await?, 6);
    assert_eq!(store.events_after("resp_1", None).await?, batch);
    assert_eq!(store.events_after("resp_1", Some(1)).await?, batch[2..]);
    assert_eq!(store.events_after("resp_1", Some(2)).await?, batch[2..]);
    assert_eq!(store.events_after("resp_1", Some(4)).await?, batch[4..]);
    assert_eq!(store.events_after("resp_1", Some(6)).await?, batch[6..]);
    assert_eq!(store.events_after("resp_1", Some(9)).await?, batch[9..]);
    Ok(())
}

/// A batch of more than 256 KiB of lines becomes several chunks; one of more chunks than an
/// INSERT statement takes is written in several statements.
async fn large_batches_become_several_chunks(db: &TestDb) -> TestResult {
    let store = db.open().await?;
    let pad = "p".repeat(1_000);
    let big: Vec<EventRecord> = (0..600)
        .map(|n| event(n, &format!("{{\"n\":{n},\"pad\":\"{pad}\"}}")))
        .collect();
    store.append_events("resp_big", &big).await?;
    assert_eq!(rows(db, "event_chunks", "resp_big").await?, 3);
    assert_eq!(store.events_after("resp_big", None).await?, big);
    assert_eq!(store.events_after("resp_big", Some(299)).await?, big[300..]);

    let sparse: Vec<EventRecord> = (0..450).map(|n| event(2 * n, "x")).collect();
    store.append_events("resp_sparse", &sparse).await?;
    assert_eq!(rows(db, "event_chunks", "resp_sparse").await?, 450);
    assert_eq!(store.events_after("resp_sparse", None).await?, sparse);
    assert_eq!(
        store.events_after("resp_sparse", Some(599)).await?,
        sparse[300..]
    );
    Ok(())
}

/// Rows of the per-event table of older versions are read with the chunks (an upgraded store
/// keeps its logs; a crash recovery appends after them).
async fn rows_of_older_versions_are_read_with_the_chunks(db: &TestDb) -> TestResult {
    old_rows(db, "resp_old", 0..3).await?;
    let store = db.open().await?;
    // The terminal event appended after the last stored one, overlapping by one.
    store.append_events("resp_old", &events(2..5)).await?;
    let mut expected = vec![event(0, "old 0"), event(1, "old 1"), event(2, "old 2")];
    expected.extend(events(3..5));
    assert_eq!(store.events_after("resp_old", None).await?, expected);
    assert_eq!(
        store.events_after("resp_old", Some(0)).await?,
        expected[1..]
    );
    assert_eq!(
        store.events_after("resp_old", Some(2)).await?,
        expected[3..]
    );
    assert_eq!(
        store.events_after("resp_old", Some(3)).await?,
        expected[4..]
    );
    Ok(())
}

/// Deleting a response, a project, and the retention purge take the chunks and the rows of
/// older versions; the purge counts events, not rows.
async fn deletes_and_the_purge_take_chunks_and_older_rows(db: &TestDb) -> TestResult {
    let store = db.open().await?;
    for (id, created_at) in [
        ("resp_deleted", 1_000),
        ("resp_purged", 1_000),
        ("resp_kept", 3_000),
    ] {
        store
            .put_response(&record(id, "proj_a", created_at)?)
            .await?;
        old_rows(db, id, 0..2).await?;
        store.append_events(id, &events(2..7)).await?;
    }
    store
        .put_response(&record("resp_owned", "proj_b", 3_000)?)
        .await?;
    old_rows(db, "resp_owned", 0..2).await?;
    store.append_events("resp_owned", &events(2..7)).await?;

    assert!(store.delete_response("proj_a", "resp_deleted").await?);
    assert_eq!(store.events_after("resp_deleted", None).await?, vec![]);
    assert_eq!(store.purge_events(2_000).await?, 7);
    assert_eq!(store.events_after("resp_purged", None).await?, vec![]);
    for id in ["resp_deleted", "resp_purged"] {
        assert_eq!(rows(db, "event_chunks", id).await?, 0, "{id}");
        assert_eq!(rows(db, "events", id).await?, 0, "{id}");
    }
    assert_eq!(store.events_after("resp_kept", None).await?.len(), 7);
    assert_eq!(store.purge_events(2_000).await?, 0);

    let deleted = match &store {
        TestStore::Sqlite(s) => project_deleted(s).await?,
        TestStore::Postgres(s) => project_deleted(s).await?,
    };
    assert!(deleted);
    assert_eq!(rows(db, "event_chunks", "resp_owned").await?, 0);
    assert_eq!(rows(db, "events", "resp_owned").await?, 0);
    assert_eq!(store.events_after("resp_kept", None).await?.len(), 7);
    Ok(())
}

/// A run's event lines as a non-streaming answer flushes them: `response.created`, deltas
/// (with escapes and characters beyond ASCII), the completed response.
fn run_lines(tokens: u64) -> Vec<EventRecord> {
    let item = r#""item_id":"msg_01a2434b-d4ec-747a-8827-03e8bca9c3a0","output_index":0"#;
    let mut lines = vec![event(
        0,
        r#"{"type":"response.created","response":{"id":"resp_run","status":"in_progress"}}"#,
    )];
    for n in 1..=tokens {
        lines.push(event(
            n,
            &format!(
                r#"{{"type":"response.output_text.delta",{item},"delta":" tök{n}\n\"q\"","sequence_number":{n}}}"#
            ),
        ));
    }
    lines.push(event(
        tokens + 1,
        r#"{"type":"response.completed","response":{"id":"resp_run","status":"completed"}}"#,
    ));
    lines
}

/// The storage class of each chunk of `response_id`, in order.
async fn kinds(db: &TestDb, response_id: &str) -> Result<String, Box<dyn std::error::Error>> {
    let kind = match db.backend {
        Backend::Sqlite => "typeof(data)",
        Backend::Postgres => "'text'",
    };
    db.text(&format!(
        "SELECT COALESCE(string_agg({kind}, ','), '') FROM \
         (SELECT data FROM event_chunks WHERE response_id = '{response_id}' \
          ORDER BY first_sequence, last_sequence) AS c"
    ))
    .await
}

/// On SQLite a run's chunk is packed (a BLOB a fraction of the lines' size); one short event
/// stays TEXT; a single long event is packed too. Every cursor reads the same lines back, byte
/// for byte, from a store opened again. PostgreSQL stores TEXT.
async fn packed_chunks_read_back_byte_for_byte(db: &TestDb) -> TestResult {
    let store = db.open().await?;
    let lines = run_lines(70);
    let joined: usize = lines.iter().map(|e| e.data.len() + 1).sum();
    store.append_events("resp_run", &lines[..1]).await?;
    store.append_events("resp_run", &lines[1..]).await?;
    let long = event(
        72,
        &format!(r#"{{"type":"x","text":"{}"}}"#, "ab ".repeat(400)),
    );
    store
        .append_events("resp_run", std::slice::from_ref(&long))
        .await?;
    store.close().await;

    match db.backend {
        Backend::Sqlite => {
            assert_eq!(kinds(db, "resp_run").await?, "text,blob,blob");
            let packed: usize = db
                .text(
                    "SELECT CAST(length(data) AS TEXT) FROM event_chunks \
                     WHERE response_id = 'resp_run' AND first_sequence = 1",
                )
                .await?
                .parse()?;
            assert!(packed * 4 < joined, "{packed} of {joined} bytes");
        }
        Backend::Postgres => assert_eq!(kinds(db, "resp_run").await?, "text,text,text"),
    }
    let store = db.open().await?;
    let mut expected = lines;
    expected.push(long);
    assert_eq!(store.events_after("resp_run", None).await?, expected);
    for after in 0..expected.len() as u64 {
        assert_eq!(
            store.events_after("resp_run", Some(after)).await?,
            expected[after as usize + 1..],
            "after {after}"
        );
    }
    Ok(())
}

/// A packed chunk that does not unpack (a damaged file) makes the read fail with an error
/// naming the response and the chunk, not a panic; the other runs still read.
async fn a_corrupt_packed_chunk_is_an_error_naming_the_response(db: &TestDb) -> TestResult {
    let store = db.open().await?;
    store.append_events("resp_bad", &run_lines(30)).await?;
    store.append_events("resp_good", &run_lines(30)).await?;
    store.close().await;
    let damaged = match db.backend {
        // The format byte and a length, then a block that is not LZ4.
        Backend::Sqlite => "x'0140000000ffffffffffffffff'",
        // PostgreSQL stores no packed chunk: a chunk short of lines stands for the damage.
        Backend::Postgres => "'{}'",
    };
    db.execute(&format!(
        "UPDATE event_chunks SET data = {damaged} WHERE response_id = 'resp_bad'"
    ))
    .await?;
    let store = db.open().await?;
    let read = store.events_after("resp_bad", None).await;
    let Err(StoreError::Corrupt(message)) = read else {
        return Err(format!("a damaged chunk read as {read:?}").into());
    };
    assert!(message.contains("resp_bad"), "{message}");
    assert!(message.contains("0 to 31"), "{message}");
    assert_eq!(store.events_after("resp_good", None).await?, run_lines(30));
    Ok(())
}

async fn project_deleted(store: &impl ProjectStore) -> Result<bool, Box<dyn std::error::Error>> {
    store
        .create_project(&ProjectRecord {
            id: "proj_b".into(),
            name: "b".into(),
            created_at: 1,
        })
        .await?;
    Ok(store.delete_project("proj_b").await?)
}

matrix!(
    each_flush_is_one_row_read_from_any_cursor,
    retried_and_overlapping_flushes_are_read_once,
    gaps_and_newlines_split_a_batch,
    large_batches_become_several_chunks,
    rows_of_older_versions_are_read_with_the_chunks,
    deletes_and_the_purge_take_chunks_and_older_rows,
    packed_chunks_read_back_byte_for_byte,
    a_corrupt_packed_chunk_is_an_error_naming_the_response,
);
