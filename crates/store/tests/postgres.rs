//! What only the PostgreSQL store does: migrations shared by replicas starting together, TLS
//! as the URL asks, `agentd store copy` from SQLite, and the locks that keep replicas'
//! linked transcripts whole.

mod common;

use agentd_store::{PgStore, PoolSettings, SqliteStore};
use common::{Backend, TempDir, TestDb, TestResult, events};
use engine::store::{
    ConversationRecord, EventRecord, EventStore, FileRecord, FileStore, ItemKind, ItemStore,
    JobRecord, JobState, JobStore, KeyRecord, KeyStore, ResponseStore, StoredItem,
};
use serde_json::json;
use sqlx::Row;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

/// Five stores connecting at once to an empty database (five replicas starting together):
/// every one starts, and each migration was applied exactly once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn replicas_starting_together_migrate_once() -> TestResult {
    let db = TestDb::new(Backend::Postgres).await?;
    let url = db.url()?;
    let mut starting = Vec::new();
    for _ in 0..5 {
        let url = url.clone();
        starting.push(tokio::spawn(async move {
            PgStore::connect(&url, PoolSettings::default()).await
        }));
    }
    let mut stores = Vec::new();
    for task in starting {
        stores.push(task.await??);
    }
    let applied = sqlx::query("SELECT version, success FROM _sqlx_migrations ORDER BY version")
        .fetch_all(stores[0].pool())
        .await?;
    let versions: Vec<(i64, bool)> = applied
        .iter()
        .map(|row| Ok((row.try_get("version")?, row.try_get("success")?)))
        .collect::<Result<_, sqlx::Error>>()?;
    // Every migration of the PostgreSQL folder, applied once.
    let mut expected: Vec<(i64, bool)> = std::fs::read_dir(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("migrations/postgres"),
    )?
    .map(|entry| {
        let name = entry?.file_name().to_string_lossy().into_owned();
        let version = name.split('_').next().unwrap_or_default().parse::<i64>()?;
        Ok((version, true))
    })
    .collect::<Result<_, Box<dyn std::error::Error>>>()?;
    expected.sort();
    assert_eq!(versions, expected);
    for store in &stores {
        store.ensure_project("default").await?;
        store.close().await;
    }
    Ok(())
}

/// `sslmode=require` in the URL gives an encrypted connection (the development server has TLS
/// on), `sslmode=disable` a plain one, and `verify-full` checks the server's certificate (the
/// server's self-signed one is refused).
#[tokio::test]
async fn tls_follows_the_url() -> TestResult {
    let db = TestDb::new(Backend::Postgres).await?;
    let url = db.url()?;
    let ssl_of = |store: PgStore| async move {
        let on: bool =
            sqlx::query_scalar("SELECT ssl FROM pg_stat_ssl WHERE pid = pg_backend_pid()")
                .fetch_one(store.pool())
                .await?;
        store.close().await;
        Ok::<_, sqlx::Error>(on)
    };
    let settings = PoolSettings::default();
    let encrypted = PgStore::connect(&format!("{url}?sslmode=require"), settings).await?;
    assert!(ssl_of(encrypted).await?, "sslmode=require without TLS");
    let plain = PgStore::connect(&format!("{url}?sslmode=disable"), settings).await?;
    assert!(!ssl_of(plain).await?, "sslmode=disable with TLS");
    let verified = PgStore::connect(&format!("{url}?sslmode=verify-full"), settings).await;
    assert!(
        verified.is_err(),
        "a self-signed server certificate passed verify-full"
    );
    Ok(())
}

/// A URL that does not parse is refused without quoting it (it may carry a password).
#[tokio::test]
async fn a_bad_url_is_not_echoed() -> TestResult {
    let result = PgStore::connect(
        "postgres://user:s3cret@127.0.0.1:5432/db?sslmode=sometimes",
        PoolSettings::default(),
    )
    .await;
    let message = format!("{:?}", result.err().ok_or("a bad sslmode was accepted")?);
    assert!(!message.contains("s3cret"), "{message}");
    Ok(())
}

/// `agentd store copy`: every kind of row written to a SQLite store reads back the same from
/// PostgreSQL, and a second copy changes nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn copy_moves_every_row_from_sqlite() -> TestResult {
    let dir = TempDir::new();
    let from = SqliteStore::open(&dir.0).await?;
    let project = from.ensure_project("default").await?;
    from.insert_key(&KeyRecord {
        id: "key_1".to_owned(),
        project_id: project.clone(),
        key_hash: "ab".repeat(32),
        created_at: 1,
    })
    .await?;
    let response: protocol::response::Response = serde_json::from_value(json!({
        "id": "resp_1", "object": "response", "created_at": 1_700_000_000,
        "completed_at": null, "status": "completed", "model": "openai/gpt-test", "output": [],
        "usage": null, "error": null, "incomplete_details": null, "instructions": null,
        "max_output_tokens": null, "max_tool_calls": null, "max_steps": null,
        "temperature": 1.0, "top_p": 1.0, "tool_choice": "auto", "tools": [],
        "parallel_tool_calls": true, "truncation": "disabled", "background": false,
        "store": true, "service_tier": "default", "text": {"format": {"type": "text"}},
        "metadata": {}, "previous_response_id": null, "prompt_cache_key": null,
        "reasoning": null, "frequency_penalty": 0.0, "presence_penalty": 0.0, "top_logprobs": 0
    }))?;
    let item = StoredItem {
        id: "msg_1".to_owned(),
        kind: ItemKind::Output,
        item: engine::store::ItemJson::of(
            &json!({"type": "message", "id": "msg_1", "role": "assistant", "content": []}),
        )?,
    };
    let conversation = ConversationRecord {
        id: "conv_1".to_owned(),
        project_id: project.clone(),
        created_at: 5,
        metadata: [("k".to_owned(), "v".to_owned())].into(),
    };
    from.create_conversation(&conversation, std::slice::from_ref(&item))
        .await?;
    let record = engine::store::ResponseRecord {
        id: "resp_1".to_owned(),
        project_id: project.clone(),
        created_at: 1_700_000_000,
        visible: true,
        response,
        // Long enough that SQLite packs it (schema version 17: 16 KiB).
        transcript: serde_json::from_value(serde_json::Value::Array(
            (0..300)
                .map(|n| json!({"role": "user", "content": format!("question {n}: and then?")}))
                .collect(),
        ))?,
        conversation_id: Some("resp_1".to_owned()),
        items: vec![item.clone()],
        append_to: None,
        // The model turns travel with the response row.
        turns: vec![protocol::listing::ModelTurn {
            step: 1,
            model: "openai/gpt-test".to_owned(),
            started_at_ms: 1_700_000_000_000,
            duration_ms: 250,
            time_to_first_token_ms: Some(80),
            status: protocol::listing::ModelTurnStatus::Completed,
            usage: Some(protocol::listing::ModelTurnUsage {
                input_tokens: 12,
                output_tokens: 3,
                ..Default::default()
            }),
            error: None,
        }],
        response_json: None,
        transcript_prefix: None,
    };
    // 30 events: one chunk, packed on SQLite (schema version 12), copied as its lines.
    from.end_run(&record, &events(0..30)).await?;
    let stored: String = sqlx::query_scalar("SELECT typeof(data) FROM event_chunks")
        .fetch_one(from.pool())
        .await?;
    assert_eq!(stored, "blob");
    // The response's JSON too (schema version 14), copied as its text.
    let stored: String = sqlx::query_scalar("SELECT typeof(response_json) FROM responses")
        .fetch_one(from.pool())
        .await?;
    assert_eq!(stored, "blob");
    // And its transcript (schema version 17), copied as its text.
    let stored: String = sqlx::query_scalar("SELECT typeof(transcript_json) FROM responses")
        .fetch_one(from.pool())
        .await?;
    assert_eq!(stored, "blob");
    // Its continuation's transcript is linked to it (schema version 18), copied whole.
    let mut next = record.clone();
    next.id = "resp_1b".to_owned();
    next.response.id = "resp_1b".to_owned();
    next.response.previous_response_id = Some("resp_1".to_owned());
    next.items.clear();
    next.turns.clear();
    next.transcript.push(serde_json::from_value(
        json!({"role": "user", "content": "and the next question?"}),
    )?);
    from.end_run(&next, &[]).await?;
    let base: Option<String> =
        sqlx::query_scalar("SELECT transcript_base FROM responses WHERE id = 'resp_1b'")
            .fetch_one(from.pool())
            .await?;
    assert_eq!(base.as_deref(), Some("resp_1"));
    // A response with long instructions (schema version 21): its JSON holds them at its head,
    // its run's chunk is packed against them; both copied as their text.
    let mut prompted = record.clone();
    prompted.id = "resp_3".to_owned();
    prompted.response.id = "resp_3".to_owned();
    prompted.conversation_id = Some("resp_3".to_owned());
    prompted.items.clear();
    prompted.turns.clear();
    prompted.response.instructions = Some(common::prompt(4_000));
    let prompted_events = common::run_events(&prompted.response, 20)?;
    from.end_run(&prompted, &prompted_events).await?;
    let formats: String = sqlx::query_scalar(
        "SELECT hex(substr(r.response_json, 1, 1)) || hex(substr(c.data, 1, 1)) \
         FROM responses r JOIN event_chunks c ON c.response_id = r.id WHERE r.id = 'resp_3'",
    )
    .fetch_one(from.pool())
    .await?;
    assert_eq!(formats, "0607");
    from.insert_job(&JobRecord {
        response_id: "resp_2".to_owned(),
        project_id: project.clone(),
        payload: "{}".to_owned(),
        state: JobState::Queued,
        lease_owner: None,
        lease_until_ms: 0,
        created_at_ms: 7,
    })
    .await?;
    let file = FileRecord {
        id: "file_1".to_owned(),
        response_id: "resp_1".to_owned(),
        project_id: project.clone(),
        filename: "a.bin".to_owned(),
        content_type: "application/octet-stream".to_owned(),
        bytes: 3,
        created_at: 9,
    };
    from.put_file(&file, &[0, 255, 7]).await?;
    // A log written before schema version 11, one row per event.
    sqlx::raw_sql(
        "INSERT INTO events (response_id, sequence_number, data) \
         VALUES ('resp_old', 0, 'old 0'), ('resp_old', 1, 'old 1')",
    )
    .execute(from.pool())
    .await?;

    let db = TestDb::new(Backend::Postgres).await?;
    let to = PgStore::connect(&db.url()?, PoolSettings::default()).await?;
    let report = agentd_store::copy(&from, &to).await?;
    let inserted: u64 = report.tables.iter().map(|(_, _, n)| n).sum();
    // project, key, 3 responses, 2 old event rows, 2 event chunks (30 and 23 events), job,
    // file, item, conversation, conversation item.
    assert_eq!(inserted, 14, "{report:?}");
    assert!(
        report.tables.contains(&("event_chunks".to_owned(), 2, 2)),
        "{report:?}"
    );

    assert_eq!(to.ensure_project("default").await?, project);
    assert!(to.find_key(&"ab".repeat(32)).await?.is_some());
    assert_eq!(to.get_response(&project, "resp_1").await?, {
        let mut expected = record.clone();
        expected.items.clear();
        Some(expected)
    });
    assert_eq!(to.get_response(&project, "resp_1b").await?, Some(next));
    let base: Option<String> =
        sqlx::query_scalar("SELECT transcript_base FROM responses WHERE id = 'resp_1b'")
            .fetch_one(to.pool())
            .await?;
    assert_eq!(base, None);
    assert_eq!(to.events_after("resp_1", None).await?, events(0..30));
    assert_eq!(to.events_after("resp_1", Some(0)).await?, events(1..30));
    assert_eq!(to.get_response(&project, "resp_3").await?, Some(prompted));
    assert_eq!(to.events_after("resp_3", None).await?, prompted_events);
    let copied: String =
        sqlx::query_scalar("SELECT data FROM event_chunks WHERE response_id = 'resp_1'")
            .fetch_one(to.pool())
            .await?;
    assert!(copied.starts_with(r#"{"type":"#), "{copied}");
    let copied: String =
        sqlx::query_scalar("SELECT response_json FROM responses WHERE id = 'resp_1'")
            .fetch_one(to.pool())
            .await?;
    assert!(copied.starts_with(r#"{"id":"resp_1""#), "{copied}");
    let copied: String =
        sqlx::query_scalar("SELECT transcript_json FROM responses WHERE id = 'resp_1'")
            .fetch_one(to.pool())
            .await?;
    assert!(copied.starts_with(r#"[{"type":"message""#), "{copied}");
    assert_eq!(
        to.events_after("resp_old", None).await?,
        vec![
            EventRecord {
                sequence_number: 0,
                data: "old 0".into()
            },
            EventRecord {
                sequence_number: 1,
                data: "old 1".into()
            },
        ]
    );
    assert_eq!(to.count_queued(&project).await?, 1);
    assert_eq!(
        to.get_file(&project, "resp_1", "file_1").await?,
        Some((file, vec![0, 255, 7]))
    );
    assert_eq!(
        to.find_items(&project, &["msg_1".to_owned()]).await?,
        vec![item.clone()]
    );
    assert_eq!(
        to.get_conversation(&project, "conv_1").await?,
        Some(conversation)
    );
    assert_eq!(to.conversation_items(&project, "conv_1").await?.len(), 1);

    let again = agentd_store::copy(&from, &to).await?;
    assert_eq!(again.tables.iter().map(|(_, _, n)| n).sum::<u64>(), 0);
    to.close().await;
    from.close().await;
    Ok(())
}

/// A run's end appends its items to a conversation while another transaction (the items API,
/// another replica, another write lane) is appending to it and has not committed yet: the run
/// waits for it and takes the positions after its items, instead of reading the same next
/// position and failing on it once the other commits.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_runs_append_waits_for_another_append_to_the_conversation() -> TestResult {
    let db = TestDb::new(Backend::Postgres).await?;
    let store = PgStore::connect(&db.url()?, PoolSettings::default()).await?;
    let item = |id: &str| common::message_item(id, ItemKind::Input);
    store
        .create_conversation(
            &ConversationRecord {
                id: "conv_1".to_owned(),
                project_id: "proj_a".to_owned(),
                created_at: 1,
                metadata: Default::default(),
            },
            &[item("msg_0")?],
        )
        .await?;

    // Another session appends `msg_other` at position 1, as `append` does, and holds its
    // transaction open.
    let mut other = store.pool().begin().await?;
    sqlx::query("SELECT 1 FROM conversations WHERE id = 'conv_1' FOR UPDATE")
        .execute(&mut *other)
        .await?;
    sqlx::query(
        "INSERT INTO conversation_items (conversation_id, position, item_id, item_json) \
         VALUES ('conv_1', 1, 'msg_other', '{\"type\":\"message\",\"id\":\"msg_other\",\"role\":\"user\",\"content\":\"x\"}')",
    )
    .execute(&mut *other)
    .await?;

    let mut ending = engine::store::ResponseRecord {
        id: "resp_1".to_owned(),
        project_id: "proj_a".to_owned(),
        created_at: 1_700_000_000,
        visible: true,
        response: common::response("resp_1", "completed")?,
        transcript: Vec::new(),
        conversation_id: None,
        items: vec![item("msg_1")?, item("msg_2")?],
        append_to: Some("conv_1".to_owned()),
        turns: Vec::new(),
        response_json: None,
        transcript_prefix: None,
    };
    ending.items[1].kind = ItemKind::Output;
    let run = tokio::spawn({
        let store = store.clone();
        async move { store.end_run(&ending, &events(0..1)).await }
    });
    // Once the run's write waits for a lock, let the other commit.
    until_a_session_waits_for_a_lock(&store).await?;
    other.commit().await?;
    run.await??;

    let ids = common::conversation_ids(&store, "proj_a", "conv_1").await?;
    assert_eq!(ids, ["msg_0", "msg_other", "msg_1", "msg_2"]);
    store.close().await;
    Ok(())
}

/// Forwards TCP connections from a local port to `target`, counting the round trips clients
/// start: the frontend messages after which a PostgreSQL client waits for the server (`Sync`,
/// `Query`), read off the stream as it passes (`sslmode=disable`: no TLS to read through).
async fn counting_proxy(
    target: String,
) -> Result<(u16, Arc<AtomicUsize>), Box<dyn std::error::Error>> {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let port = listener.local_addr()?.port();
    let count = Arc::new(AtomicUsize::new(0));
    let counted = Arc::clone(&count);
    tokio::spawn(async move {
        while let Ok((client, _)) = listener.accept().await {
            let Ok(server) = tokio::net::TcpStream::connect(&target).await else {
                return;
            };
            let counted = Arc::clone(&counted);
            tokio::spawn(async move {
                let (mut client_read, mut client_write) = client.into_split();
                let (mut server_read, mut server_write) = server.into_split();
                tokio::spawn(async move {
                    let _ = tokio::io::copy(&mut server_read, &mut client_write).await;
                });
                let _ = forward_counting(&mut client_read, &mut server_write, &counted).await;
            });
        }
    });
    Ok((port, count))
}

/// Copies the client's messages to the server, counting `Sync` (`S`) and `Query` (`Q`).
async fn forward_counting(
    from: &mut tokio::net::tcp::OwnedReadHalf,
    to: &mut tokio::net::tcp::OwnedWriteHalf,
    count: &AtomicUsize,
) -> std::io::Result<()> {
    use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
    // The startup message: its length (which counts itself), no type byte.
    let length = from.read_u32().await?;
    let mut startup = vec![0; (length as usize).saturating_sub(4)];
    from.read_exact(&mut startup).await?;
    to.write_u32(length).await?;
    to.write_all(&startup).await?;
    loop {
        let kind = from.read_u8().await?;
        let length = from.read_u32().await?;
        let mut body = vec![0; (length as usize).saturating_sub(4)];
        from.read_exact(&mut body).await?;
        if kind == b'S' || kind == b'Q' {
            count.fetch_add(1, Ordering::SeqCst);
        }
        to.write_u8(kind).await?;
        to.write_u32(length).await?;
        to.write_all(&body).await?;
    }
}

/// A run's start (its response row and its job row, one write) and its end each cost one
/// round trip to the server: each write's statements go as one statement, without `BEGIN`
/// and `COMMIT` around a write alone, on the connection its lane keeps while writes follow
/// each other (no check of a pooled connection before and after each use, a round trip each).
/// Statement by statement in a transaction on pooled connections, with the job row a write
/// of its own, they were 3 + 3 + 7, 19 with the checks. Counted on the wire, between the store
/// and the server.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_runs_writes_are_one_round_trip_each() -> TestResult {
    let db = TestDb::new(Backend::Postgres).await?;
    let url = db.url()?;
    let (head, rest) = url.split_once('@').ok_or("no @ in the URL")?;
    let (server, path) = rest.split_once('/').ok_or("no database in the URL")?;
    let (port, round_trips) = counting_proxy(server.to_owned()).await?;
    let separator = if path.contains('?') { '&' } else { '?' };
    let proxied = format!("{head}@127.0.0.1:{port}/{path}{separator}sslmode=disable");
    // Four connections: two write lanes, each keeping its own while writes follow each other.
    let store = PgStore::connect(&proxied, PoolSettings { max_connections: 4 }).await?;
    let item = |id: &str| common::message_item(id, ItemKind::Output);
    let run = |id: &str| -> Result<
        (JobRecord, engine::store::ResponseRecord),
        Box<dyn std::error::Error>,
    > {
        let job = JobRecord {
            response_id: id.to_owned(),
            project_id: "proj_a".to_owned(),
            payload: "{}".to_owned(),
            state: JobState::Running,
            lease_owner: Some("replica_1".to_owned()),
            lease_until_ms: 1,
            created_at_ms: 1,
        };
        let record = engine::store::ResponseRecord {
            id: id.to_owned(),
            project_id: "proj_a".to_owned(),
            created_at: 1_700_000_000,
            visible: true,
            response: common::response(id, "completed")?,
            transcript: Vec::new(),
            conversation_id: None,
            items: vec![item(&format!("msg_{id}"))?],
            append_to: None,
            turns: Vec::new(),
            response_json: None,
            transcript_prefix: None,
        };
        Ok((job, record))
    };
    let mut counts = Vec::new();
    for n in 0..12 {
        let id = format!("resp_{n}");
        let id = id.as_str();
        let (job, record) = run(id)?;
        let before = round_trips.load(Ordering::SeqCst);
        store.start_run(&record, &job).await?;
        store.end_run(&record, &events(0..3)).await?;
        counts.push(round_trips.load(Ordering::SeqCst) - before);
    }
    // Read afterwards: a read's connection is checked when given back to the pool, in a task
    // of sqlx's own, which could count in a run's window above.
    for n in 0..12 {
        assert_eq!(
            store.events_after(&format!("resp_{n}"), None).await?,
            events(0..3)
        );
    }
    assert_eq!(store.count_queued("proj_a").await?, 0);
    // The first runs prepare the statements on each lane's connection; then each write is
    // one round trip.
    assert_eq!(counts[10..], [2, 2], "round trips per run: {counts:?}");
    store.close().await;
    Ok(())
}

/// Turns of a conversation long enough for their transcripts to be packed and linked (past
/// 16 KiB from the eighth or so on): `resp_00` … `resp_{turns - 1}` ended in order, each
/// continuing the one before; their records.
async fn linked_conversation(
    store: &PgStore,
    turns: usize,
) -> Result<Vec<engine::store::ResponseRecord>, Box<dyn std::error::Error>> {
    let mut transcript = Vec::new();
    let mut written = Vec::new();
    for n in 0..turns {
        transcript.push(serde_json::from_value::<protocol::input::InputItem>(
            json!({
                "role": "user",
                "content": format!("question {n}: {}", "and what follows from it? ".repeat(100)),
            }),
        )?);
        let id = format!("resp_{n:02}");
        let mut record = engine::store::ResponseRecord {
            id: id.clone(),
            project_id: "proj_a".to_owned(),
            created_at: 1_700_000_000,
            visible: true,
            response: common::response(&id, "completed")?,
            transcript: transcript.clone(),
            conversation_id: Some("resp_00".to_owned()),
            items: Vec::new(),
            append_to: None,
            turns: Vec::new(),
            response_json: None,
            transcript_prefix: None,
        };
        record.response.previous_response_id = n.checked_sub(1).map(|p| format!("resp_{p:02}"));
        store.end_run(&record, &[]).await?;
        written.push(record);
    }
    Ok(written)
}

/// Waits (bounded) until a session of the test's database waits for a lock.
async fn until_a_session_waits_for_a_lock(store: &PgStore) -> TestResult {
    for _ in 0..1000 {
        let waiting: i64 = sqlx::query_scalar(
            "SELECT count(*) FROM pg_stat_activity \
             WHERE datname = current_database() AND wait_event_type = 'Lock'",
        )
        .fetch_one(store.pool())
        .await?;
        if waiting > 0 {
            return Ok(());
        }
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
    Err("no session ever waited for a lock".into())
}

/// A transcript packed to be linked to a response that another replica is deleting waits for
/// that deletion (the write's key-share lock on its base) and, once it commits, is written
/// whole: never linked to a response no longer stored.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_transcript_linked_to_a_response_being_deleted_is_written_whole() -> TestResult {
    let db = TestDb::new(Backend::Postgres).await?;
    let store = PgStore::connect(&db.url()?, PoolSettings::default()).await?;
    let written = linked_conversation(&store, 12).await?;
    let base: Option<String> =
        sqlx::query_scalar("SELECT transcript_base FROM responses WHERE id = 'resp_11'")
            .fetch_one(store.pool())
            .await?;
    assert_eq!(base.as_deref(), Some("resp_10"));

    // Another replica deletes resp_11 (nothing is linked to it yet) and has not committed.
    let mut other = store.pool().begin().await?;
    sqlx::query("SELECT 1 FROM responses WHERE id = 'resp_11' FOR UPDATE")
        .execute(&mut *other)
        .await?;
    sqlx::query("DELETE FROM responses WHERE id = 'resp_11'")
        .execute(&mut *other)
        .await?;

    // This replica's memo links the next turn to resp_11.
    let mut next = written[11].clone();
    next.id = "resp_12".to_owned();
    next.response = common::response("resp_12", "completed")?;
    next.response.previous_response_id = Some("resp_11".to_owned());
    next.transcript.push(serde_json::from_value(
        json!({"role": "user", "content": "question 12: and then?"}),
    )?);
    let run = tokio::spawn({
        let store = store.clone();
        let next = next.clone();
        async move { store.end_run(&next, &[]).await }
    });
    until_a_session_waits_for_a_lock(&store).await?;
    other.commit().await?;
    run.await??;

    let stored: (Option<String>, bool) = sqlx::query_as(
        "SELECT transcript_base, transcript_packed IS NOT NULL FROM responses WHERE id = 'resp_12'",
    )
    .fetch_one(store.pool())
    .await?;
    assert_eq!(stored, (None, true));
    let read = store
        .get_response("proj_a", "resp_12")
        .await?
        .ok_or("resp_12 missing")?;
    assert_eq!(read.transcript, next.transcript);
    store.close().await;
    Ok(())
}

/// A deletion waits for a write linking a transcript to the response it deletes (its lock on
/// the response before it reads the transcripts linked to it), then rewrites that transcript
/// too: every other response still reads back whole.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_deletion_waits_for_a_transcript_being_linked_to_its_response() -> TestResult {
    let db = TestDb::new(Backend::Postgres).await?;
    let store = PgStore::connect(&db.url()?, PoolSettings::default()).await?;
    let written = linked_conversation(&store, 12).await?;

    // Another replica writes resp_copy linked to resp_10 (as resp_11 is), holding its lock on
    // resp_10, and has not committed.
    let mut other = store.pool().begin().await?;
    sqlx::query("SELECT 1 FROM responses WHERE id = 'resp_10' FOR KEY SHARE")
        .execute(&mut *other)
        .await?;
    let copied = sqlx::query(
        "INSERT INTO responses (id, project_id, created_at, visible, status, response_json, \
         transcript_json, updated_at, conversation_id, turns_json, transcript_base, \
         transcript_packed) \
         SELECT 'resp_copy', project_id, created_at, visible, status, response_json, \
         transcript_json, updated_at, conversation_id, turns_json, transcript_base, \
         transcript_packed FROM responses WHERE id = 'resp_11' AND transcript_base = 'resp_10'",
    )
    .execute(&mut *other)
    .await?;
    assert_eq!(copied.rows_affected(), 1);

    let deleting = tokio::spawn({
        let store = store.clone();
        async move { store.delete_response("proj_a", "resp_10").await }
    });
    until_a_session_waits_for_a_lock(&store).await?;
    other.commit().await?;
    assert!(deleting.await??);

    for (id, expected) in [
        ("resp_11", &written[11]),
        ("resp_copy", &written[11]),
        ("resp_09", &written[9]),
    ] {
        let read = store
            .get_response("proj_a", id)
            .await?
            .ok_or_else(|| format!("{id} missing"))?;
        assert_eq!(read.transcript, expected.transcript, "{id}");
    }
    store.close().await;
    Ok(())
}
