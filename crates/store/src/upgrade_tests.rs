//! Stores written by an older schema version, opened (and so migrated) by this one: what they
//! stored still reads back. Both back ends.

use std::error::Error;

use engine::store::{EventRecord, EventStore};
use sqlx::sqlite::SqliteConnectOptions;

use crate::migrate::{self, MigrationList};
use crate::{PgStore, PoolSettings, SqliteStore};

type TestResult = Result<(), Box<dyn Error>>;

/// The migrations of `list` before `version`.
fn before(list: MigrationList, version: i64) -> MigrationList {
    let end = list
        .iter()
        .position(|m| m.0 >= version)
        .unwrap_or(list.len());
    &list[..end]
}

/// The event logs of two runs as version 10 stored them: one row per event.
const VERSION_10_LOGS: &str = "\
INSERT INTO events (response_id, sequence_number, data) VALUES
    ('resp_a', 0, '{\"n\":0}'),
    ('resp_a', 1, '{\"n\":1}'),
    ('resp_a', 2, '{\"n\":2}'),
    ('resp_b', 0, '{\"n\":0}')";

fn event(n: u64) -> EventRecord {
    EventRecord {
        sequence_number: n,
        data: format!("{{\"n\":{n}}}").into(),
    }
}

/// Every event of [`VERSION_10_LOGS`] reads back from any cursor, and a run's next events
/// (a crash recovery's terminal event, say) append after them.
async fn logs_read_back(store: &dyn EventStore) -> TestResult {
    assert_eq!(
        store.events_after("resp_a", None).await?,
        vec![event(0), event(1), event(2)]
    );
    assert_eq!(
        store.events_after("resp_a", Some(0)).await?,
        vec![event(1), event(2)]
    );
    assert_eq!(store.events_after("resp_b", None).await?, vec![event(0)]);
    store
        .append_events("resp_a", &[event(2), event(3), event(4)])
        .await?;
    assert_eq!(
        store.events_after("resp_a", Some(1)).await?,
        vec![event(2), event(3), event(4)]
    );
    Ok(())
}

/// A SQLite store in a new temporary directory, migrated to just before `version`, with `sql`
/// run on it as that version would have written it; its directory.
async fn sqlite_store_before(
    version: i64,
    sql: String,
) -> Result<std::path::PathBuf, Box<dyn Error>> {
    let dir =
        std::env::temp_dir().join(format!("agentd-upgrade-{}", uuid::Uuid::new_v4().simple()));
    std::fs::create_dir_all(&dir)?;
    let options = SqliteConnectOptions::new()
        .filename(dir.join(crate::DATABASE_FILE))
        .create_if_missing(true);
    let old = sqlx::SqlitePool::connect_with(options).await?;
    migrate::migrator(before(migrate::SQLITE, version))
        .run(&old)
        .await?;
    sqlx::raw_sql(sqlx::AssertSqlSafe(sql))
        .execute(&old)
        .await?;
    old.close().await;
    Ok(dir)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_event_logs_of_version_10_read_back_after_the_upgrade() -> TestResult {
    let dir = sqlite_store_before(11, VERSION_10_LOGS.to_owned()).await?;

    let store = SqliteStore::open(&dir).await?;
    let version: i64 = sqlx::query_scalar("SELECT max(version) FROM _sqlx_migrations")
        .fetch_one(store.pool())
        .await?;
    assert_eq!(version, 21);
    let result = logs_read_back(&store).await;
    store.close().await;
    std::fs::remove_dir_all(&dir).ok();
    result
}

/// The 60 events of `resp_c` read back from each cursor: none, inside and at the end of the old
/// chunk (0, 19), and inside the new one (20, 58).
async fn reads_back_after_every_cursor(
    store: &SqliteStore,
    expected: &[EventRecord],
) -> TestResult {
    for after in [None, Some(0), Some(19), Some(20), Some(58)] {
        let from = after.map_or(0, |n| n as usize + 1);
        assert_eq!(
            store.events_after("resp_c", after).await?,
            expected[from..],
            "after {after:?}"
        );
    }
    Ok(())
}

/// A chunk as version 11 stored it: the lines as TEXT, long enough that version 12 packs them.
fn version_11_chunk() -> (Vec<EventRecord>, String) {
    let events: Vec<EventRecord> = (0..20)
        .map(|n| EventRecord {
            sequence_number: n,
            data: format!(r#"{{"type":"response.output_text.delta","delta":"é {n}\\n"}}"#).into(),
        })
        .collect();
    let lines: Vec<&str> = events.iter().map(|e| &*e.data).collect();
    let insert = format!(
        "INSERT INTO event_chunks (response_id, first_sequence, last_sequence, data) \
         VALUES ('resp_c', 0, 19, '{}')",
        lines.join("\n")
    );
    (events, insert)
}

/// A store of version 11 (text chunks) opened by this version (which packs the chunks it
/// writes): the old chunk reads back byte for byte, with the packed ones appended after it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_text_chunks_of_version_11_read_with_packed_ones() -> TestResult {
    let (mut expected, insert) = version_11_chunk();
    let dir = sqlite_store_before(12, insert).await?;

    let store = SqliteStore::open(&dir).await?;
    let more: Vec<EventRecord> = (20..60)
        .map(|n| EventRecord {
            sequence_number: n,
            data: format!(r#"{{"type":"response.output_text.delta","delta":"ü {n}"}}"#).into(),
        })
        .collect();
    store.append_events("resp_c", &more).await?;
    expected.extend(more);
    let kinds: Vec<String> =
        sqlx::query_scalar("SELECT typeof(data) FROM event_chunks ORDER BY first_sequence")
            .fetch_all(store.pool())
            .await?;
    assert_eq!(kinds, ["text", "blob"]);
    reads_back_after_every_cursor(&store, &expected).await?;
    store.close().await;
    std::fs::remove_dir_all(&dir).ok();
    Ok(())
}

/// A store of version 12 (chunks packed without a dictionary) opened by version 13 (which packs
/// against the dictionary): the old chunk reads back byte for byte, with the new ones after it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_chunks_packed_by_version_12_read_with_the_new_ones() -> TestResult {
    let (mut expected, _) = version_11_chunk();
    let lines: Vec<&str> = expected.iter().map(|e| &*e.data).collect();
    let lines = lines.join("\n");
    // As version 12 packed it: format byte 1, the length, an LZ4 block without a dictionary.
    let mut packed = vec![1];
    packed.extend_from_slice(&u32::try_from(lines.len())?.to_le_bytes());
    packed.extend(lz4_flex::block::compress(lines.as_bytes()));
    let hex: String = packed.iter().map(|b| format!("{b:02X}")).collect();
    let insert = format!(
        "INSERT INTO event_chunks (response_id, first_sequence, last_sequence, data) \
         VALUES ('resp_c', 0, 19, X'{hex}')"
    );
    let dir = sqlite_store_before(13, insert).await?;

    let store = SqliteStore::open(&dir).await?;
    let more: Vec<EventRecord> = (20..60)
        .map(|n| EventRecord {
            sequence_number: n,
            data: format!(r#"{{"type":"response.output_text.delta","delta":"ü {n}"}}"#).into(),
        })
        .collect();
    store.append_events("resp_c", &more).await?;
    expected.extend(more);
    let formats: Vec<String> = sqlx::query_scalar(
        "SELECT hex(substr(data, 1, 1)) FROM event_chunks ORDER BY first_sequence",
    )
    .fetch_all(store.pool())
    .await?;
    assert_eq!(
        formats,
        ["01", "02"],
        "the old chunk kept, the new one against the dictionary"
    );
    reads_back_after_every_cursor(&store, &expected).await?;
    store.close().await;
    std::fs::remove_dir_all(&dir).ok();
    Ok(())
}

/// A store of version 14 (every response in `responses_status`) opened by version 15: the
/// index keeps the live responses only, start-up recovery still finds them through it, and
/// responses written afterwards, finished or not, are found the same way.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_status_index_of_version_15_holds_live_responses_only() -> TestResult {
    use engine::store::MaintenanceStore;
    let row = |id: &str, status: &str| {
        format!(
            "INSERT INTO responses (id, project_id, created_at, visible, status, response_json, \
             transcript_json, updated_at) VALUES ('{id}', 'proj', 1, 1, '{status}', '{{}}', '[]', 1);"
        )
    };
    let dir = sqlite_store_before(
        15,
        [
            row("resp_a", "completed"),
            row("resp_b", "in_progress"),
            row("resp_c", "queued"),
            row("resp_d", "failed"),
        ]
        .concat(),
    )
    .await?;
    let store = SqliteStore::open(&dir).await?;
    let result = async {
        let live = "SELECT count(*) FROM responses INDEXED BY responses_status \
                    WHERE status IN ('queued', 'in_progress')";
        let count: i64 = sqlx::query_scalar(live).fetch_one(store.pool()).await?;
        assert_eq!(count, 2);
        // A finished status is not in the index: SQLite cannot answer from it.
        let finished = sqlx::query_scalar::<_, i64>(
            "SELECT count(*) FROM responses INDEXED BY responses_status WHERE status = 'completed'",
        )
        .fetch_one(store.pool())
        .await;
        assert!(finished.is_err(), "{finished:?}");
        // Start-up recovery's condition (ports/maintenance.rs) is the index's.
        let plan: Vec<(i64, i64, i64, String)> = sqlx::query_as(
            "EXPLAIN QUERY PLAN SELECT r.project_id, r.id FROM responses r \
             WHERE r.status IN ('queued', 'in_progress') ORDER BY r.created_at, r.id",
        )
        .fetch_all(store.pool())
        .await?;
        assert!(
            plan.iter()
                .any(|(_, _, _, step)| step.contains("responses_status")),
            "{plan:?}"
        );
        sqlx::raw_sql(sqlx::AssertSqlSafe(
            [row("resp_e", "in_progress"), row("resp_f", "completed")].concat(),
        ))
        .execute(store.pool())
        .await?;
        sqlx::raw_sql("UPDATE responses SET status = 'completed' WHERE id = 'resp_c'")
            .execute(store.pool())
            .await?;
        let mut orphaned = store.orphaned_responses().await?;
        orphaned.sort();
        assert_eq!(
            orphaned,
            [
                ("proj".to_owned(), "resp_b".to_owned()),
                ("proj".to_owned(), "resp_e".to_owned())
            ]
        );
        let count: i64 = sqlx::query_scalar(live).fetch_one(store.pool()).await?;
        assert_eq!(count, 2);
        Ok(())
    }
    .await;
    store.close().await;
    std::fs::remove_dir_all(&dir).ok();
    result
}

/// A store of version 15 (with `responses_created_id`) opened by version 16: the index is gone,
/// the purge's two walks read the event logs' keys and take each response by its own (no scan
/// of a table, no sort), and the purge takes the old runs' logs (chunks, and rows of version
/// 10) and keeps the young run's and those of a run with no response row.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_version_16_purges_by_the_event_logs_keys() -> TestResult {
    use engine::store::MaintenanceStore;
    let response = |id: &str, created_at: i64| {
        format!(
            "INSERT INTO responses (id, project_id, created_at, visible, status, response_json, \
             transcript_json, updated_at) VALUES ('{id}', 'proj', {created_at}, 1, 'completed', \
             '{{}}', '[]', {created_at});"
        )
    };
    let chunk = |id: &str| {
        format!(
            "INSERT INTO event_chunks (response_id, first_sequence, last_sequence, data) \
             VALUES ('{id}', 0, 1, '{{\"n\":0}}\n{{\"n\":1}}');"
        )
    };
    let rows = |id: &str| {
        format!(
            "INSERT INTO events (response_id, sequence_number, data) \
             VALUES ('{id}', 0, '{{}}'), ('{id}', 1, '{{}}'), ('{id}', 2, '{{}}');"
        )
    };
    let dir = sqlite_store_before(
        16,
        [
            response("resp_old", 1),
            chunk("resp_old"),
            response("resp_legacy", 1),
            rows("resp_legacy"),
            response("resp_young", 5_000),
            chunk("resp_young"),
            rows("resp_young"),
            chunk("resp_unknown"),
        ]
        .concat(),
    )
    .await?;
    let store = SqliteStore::open(&dir).await?;
    let result = async {
        let index: i64 = sqlx::query_scalar(
            "SELECT count(*) FROM sqlite_master WHERE name = 'responses_created_id'",
        )
        .fetch_one(store.pool())
        .await?;
        assert_eq!(index, 0);
        for (walk, key) in [
            (
                crate::sqlite::PURGE_CHUNKS_PAGE,
                "sqlite_autoindex_event_chunks_1",
            ),
            (
                crate::sqlite::PURGE_EVENTS_PAGE,
                "sqlite_autoindex_events_1",
            ),
        ] {
            let plan: Vec<(i64, i64, i64, String)> =
                sqlx::query_as(sqlx::AssertSqlSafe(format!("EXPLAIN QUERY PLAN {walk}")))
                    .bind(1_000_i64)
                    .bind("")
                    .bind(32_i64)
                    .fetch_all(store.pool())
                    .await?;
            let steps: Vec<&str> = plan.iter().map(|step| step.3.as_str()).collect();
            assert!(
                steps.iter().any(|s| s.contains(key))
                    && steps
                        .iter()
                        .any(|s| s.contains("sqlite_autoindex_responses_1 (id=?)"))
                    && !steps
                        .iter()
                        .any(|s| s.starts_with("SCAN") || s.contains("TEMP B-TREE")),
                "{steps:?}"
            );
        }
        assert_eq!(store.purge_events(1_000).await?, 5);
        let left: Vec<(String, i64)> = sqlx::query_as(
            "SELECT response_id, count(*) FROM (SELECT response_id FROM event_chunks \
             UNION ALL SELECT response_id FROM events) GROUP BY response_id ORDER BY response_id",
        )
        .fetch_all(store.pool())
        .await?;
        assert_eq!(
            left,
            [("resp_unknown".to_owned(), 1), ("resp_young".to_owned(), 4)]
        );
        Ok(())
    }
    .await;
    store.close().await;
    std::fs::remove_dir_all(&dir).ok();
    result
}

/// A store of version 16 (transcripts as TEXT) opened by version 17 (which packs them): a
/// continuation of a response stored before reads its transcript; the same response written
/// again is stored packed, and reads the same.
/// A transcript past the length from which transcripts are packed (16 KiB), of `turns`
/// questions.
fn long_transcript(turns: usize) -> Result<Vec<protocol::input::InputItem>, serde_json::Error> {
    serde_json::from_value(serde_json::Value::Array(
        (0..turns)
            .map(|n| {
                serde_json::json!({"role": "user",
                    "content": format!("question {n}: what follows from the answer before?")})
            })
            .collect(),
    ))
}

/// The JSON of a completed response `id`.
fn response_json(id: &str) -> serde_json::Value {
    serde_json::json!({
        "id": id, "object": "response", "created_at": 1, "completed_at": 2,
        "status": "completed", "model": "fake/model", "output": [], "usage": null,
        "error": null, "incomplete_details": null, "instructions": null,
        "max_output_tokens": null, "max_tool_calls": null, "max_steps": null,
        "temperature": 1.0, "top_p": 1.0, "tool_choice": "auto", "tools": [],
        "parallel_tool_calls": true, "truncation": "disabled", "background": false,
        "store": true, "service_tier": "default", "text": {"format": {"type": "text"}},
        "metadata": {}, "previous_response_id": null, "prompt_cache_key": null,
        "reasoning": null, "safety_identifier": null, "frequency_penalty": 0.0,
        "presence_penalty": 0.0, "top_logprobs": 0
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_text_transcripts_of_version_16_read_with_packed_ones() -> TestResult {
    use engine::store::ResponseStore;
    use protocol::input::InputItem;
    let transcript = long_transcript(300)?;
    let json = InputItem::list_to_json(&transcript)?;
    let response = response_json("resp_a");
    let dir = sqlite_store_before(
        17,
        format!(
            "INSERT INTO responses (id, project_id, created_at, visible, status, response_json, \
             transcript_json, updated_at) VALUES ('resp_a', 'proj', 1, 1, 'completed', \
             '{response}', '{json}', 1);"
        ),
    )
    .await?;
    let store = SqliteStore::open(&dir).await?;
    let result = async {
        let kind = || async {
            sqlx::query_scalar::<_, String>("SELECT typeof(transcript_json) FROM responses")
                .fetch_one(store.pool())
                .await
        };
        let read = || async {
            store
                .continuation_source("proj", "resp_a")
                .await?
                .ok_or("resp_a not found")
                .map_err(Box::<dyn Error>::from)
        };
        assert_eq!(kind().await?, "text");
        assert_eq!(read().await?.transcript, transcript);
        let record = store
            .get_response("proj", "resp_a")
            .await?
            .ok_or("resp_a not found")?;
        assert_eq!(record.transcript, transcript);
        store.put_response(&record).await?;
        assert_eq!(kind().await?, "blob");
        assert_eq!(read().await?.transcript, transcript);
        Ok::<_, Box<dyn Error>>(())
    }
    .await;
    store.close().await;
    std::fs::remove_dir_all(&dir).ok();
    result
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_event_logs_of_version_10_read_back_after_the_upgrade() -> TestResult {
    let db = pgschema::testdb::TestDatabase::create("agentd_test").await?;
    let old = sqlx::PgPool::connect(db.url()).await?;
    migrate::migrator(before(migrate::POSTGRES, 11))
        .run(&old)
        .await?;
    sqlx::raw_sql(VERSION_10_LOGS).execute(&old).await?;
    old.close().await;

    let store = PgStore::connect(db.url(), PoolSettings::default()).await?;
    let version: i64 = sqlx::query_scalar("SELECT max(version) FROM _sqlx_migrations")
        .fetch_one(store.pool())
        .await?;
    assert_eq!(version, 20);
    let indexes: i64 = sqlx::query_scalar(
        "SELECT count(*) FROM pg_indexes WHERE indexname = 'responses_created_id'",
    )
    .fetch_one(store.pool())
    .await?;
    assert_eq!(
        indexes, 0,
        "version 16 drops the index the purge no longer reads"
    );
    let result = logs_read_back(&store).await;
    store.close().await;
    result
}

/// A PostgreSQL store of version 18 keeps its transcripts as TEXT: after the upgrade to 19 they
/// read back as they are, a continuation of one is stored packed (in `transcript_packed`), the
/// next one linked to that; every one reads back. An agentd of version 18 refuses the
/// migrated store.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_text_transcripts_of_version_18_read_with_packed_and_linked_ones() -> TestResult {
    use engine::store::{ResponseRecord, ResponseStore};
    use protocol::input::InputItem;
    let db = pgschema::testdb::TestDatabase::create("agentd_test").await?;
    let old = sqlx::PgPool::connect(db.url()).await?;
    migrate::migrator(before(migrate::POSTGRES, 19))
        .run(&old)
        .await?;
    let transcript = long_transcript(300)?;
    sqlx::query(
        "INSERT INTO responses (id, project_id, created_at, visible, status, response_json, \
         transcript_json, updated_at) VALUES ('resp_a', 'proj', 1, 1, 'completed', $1, $2, 1)",
    )
    .bind(response_json("resp_a").to_string())
    .bind(InputItem::list_to_json(&transcript)?)
    .execute(&old)
    .await?;
    old.close().await;

    let store = PgStore::connect(db.url(), PoolSettings::default()).await?;
    let result = async {
        let stored = async |id: &str| {
            sqlx::query_as::<_, (bool, Option<String>)>(
                "SELECT transcript_packed IS NOT NULL, transcript_base FROM responses \
                 WHERE id = $1",
            )
            .bind(id)
            .fetch_one(store.pool())
            .await
        };
        assert_eq!(stored("resp_a").await?, (false, None));
        let a = store
            .get_response("proj", "resp_a")
            .await?
            .ok_or("resp_a not found")?;
        assert_eq!(a.transcript, transcript);
        let mut written: Vec<ResponseRecord> = vec![a.clone()];
        for (id, previous) in [("resp_b", "resp_a"), ("resp_c", "resp_b")] {
            let source = store
                .continuation_source("proj", previous)
                .await?
                .ok_or("not found")?;
            let mut next = a.clone();
            next.id = id.to_owned();
            next.response = serde_json::from_value(response_json(id))?;
            next.response.previous_response_id = Some(previous.to_owned());
            next.conversation_id = Some("resp_a".to_owned());
            next.transcript = source.transcript;
            next.transcript.extend(long_transcript(1)?);
            store.end_run(&next, &[]).await?;
            written.push(next);
        }
        assert_eq!(stored("resp_b").await?, (true, None));
        assert_eq!(stored("resp_c").await?, (true, Some("resp_b".to_owned())));
        for expected in &written {
            let read = store
                .get_response("proj", &expected.id)
                .await?
                .ok_or("not found")?;
            assert_eq!(read.transcript, expected.transcript, "{}", expected.id);
        }
        let refused = migrate::migrator(before(migrate::POSTGRES, 19))
            .run(store.pool())
            .await;
        assert!(
            matches!(
                refused,
                Err(sqlx::migrate::MigrateError::VersionMissing(19))
            ),
            "{refused:?}"
        );
        Ok::<_, Box<dyn Error>>(())
    }
    .await;
    store.close().await;
    result
}
