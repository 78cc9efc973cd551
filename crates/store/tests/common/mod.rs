//! Helpers shared by the store's black-box tests, and the back-end matrix: every test written
//! as `async fn name(db: &TestDb) -> TestResult` and listed in [`matrix!`] runs once on SQLite
//! and once on PostgreSQL, each time on a database of its own that is dropped afterwards.
//!
//! PostgreSQL is found at `AGENTD_TEST_POSTGRES_URL` (default
//! `postgres://postgres@127.0.0.1:5432/postgres`, the development machines' trust setup); when
//! it is unreachable the PostgreSQL half of the matrix fails with a message saying so. It is
//! never skipped.

#![allow(dead_code)]

use std::ops::Deref;
use std::path::PathBuf;

use agentd_store::{PgStore, PoolSettings, SqliteStore};
use engine::store::{
    ConversationRecord, EventRecord, ItemKind, ItemStore, Store, StoreError, StoredItem,
};
use pgschema::testdb::TestDatabase;

pub type TestResult = Result<(), Box<dyn std::error::Error>>;

/// Runs each listed test on both back ends: `sqlite::name` and `postgres::name`.
#[macro_export]
macro_rules! matrix {
    ($($name:ident),+ $(,)?) => {
        mod sqlite {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $name() -> $crate::common::TestResult {
                    let db = $crate::common::TestDb::new($crate::common::Backend::Sqlite).await?;
                    super::$name(&db).await
                }
            )+
        }
        mod postgres {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $name() -> $crate::common::TestResult {
                    let db = $crate::common::TestDb::new($crate::common::Backend::Postgres).await?;
                    super::$name(&db).await
                }
            )+
        }
    };
}

pub async fn memory_store() -> Result<SqliteStore, StoreError> {
    SqliteStore::connect("sqlite::memory:").await
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Backend {
    Sqlite,
    Postgres,
}

/// A database of one test: a SQLite data directory, or a PostgreSQL database created for the
/// test and dropped (connections and all) when this value is dropped.
pub struct TestDb {
    pub backend: Backend,
    dir: TempDir,
    postgres: Option<TestDatabase>,
}

impl TestDb {
    pub async fn new(backend: Backend) -> Result<TestDb, Box<dyn std::error::Error>> {
        let dir = TempDir::new();
        let postgres = match backend {
            Backend::Sqlite => None,
            Backend::Postgres => Some(TestDatabase::create("agentd_test").await?),
        };
        Ok(TestDb {
            backend,
            dir,
            postgres,
        })
    }

    /// The URL `agentd` would be given for this database.
    pub fn url(&self) -> Result<String, Box<dyn std::error::Error>> {
        match &self.postgres {
            Some(database) => Ok(database.url().to_owned()),
            None => Ok(format!(
                "sqlite://{}?mode=rwc",
                self.dir.0.join(agentd_store::DATABASE_FILE).display()
            )),
        }
    }

    /// Opens (again) the store on this database: each call is a new pool, as another process
    /// would have.
    pub async fn open(&self) -> Result<TestStore, Box<dyn std::error::Error>> {
        Ok(match &self.postgres {
            Some(database) => TestStore::Postgres(
                PgStore::connect(database.url(), PoolSettings::default()).await?,
            ),
            None => TestStore::Sqlite(SqliteStore::open(&self.dir.0).await?),
        })
    }

    /// Runs raw SQL on the database (to corrupt or inspect what the store wrote).
    pub async fn execute(&self, sql: &str) -> TestResult {
        match self.open().await? {
            TestStore::Sqlite(s) => {
                sqlx::raw_sql(sqlx::AssertSqlSafe(sql.to_owned()))
                    .execute(s.pool())
                    .await?;
                s.close().await;
            }
            TestStore::Postgres(s) => {
                sqlx::raw_sql(sqlx::AssertSqlSafe(sql.to_owned()))
                    .execute(s.pool())
                    .await?;
                s.close().await;
            }
        }
        Ok(())
    }

    /// The first column of the first row of a query, as text.
    pub async fn text(&self, sql: &str) -> Result<String, Box<dyn std::error::Error>> {
        let sql = sqlx::AssertSqlSafe(sql.to_owned());
        Ok(match self.open().await? {
            TestStore::Sqlite(s) => sqlx::query_scalar(sql).fetch_one(s.pool()).await?,
            TestStore::Postgres(s) => sqlx::query_scalar(sql).fetch_one(s.pool()).await?,
        })
    }
}

/// A store opened on a [`TestDb`]: either back end, used through the engine's ports.
#[derive(Clone)]
pub enum TestStore {
    Sqlite(SqliteStore),
    Postgres(PgStore),
}

impl TestStore {
    pub async fn close(&self) {
        match self {
            TestStore::Sqlite(s) => s.close().await,
            TestStore::Postgres(s) => s.close().await,
        }
    }

    /// The store's [`engine::workspace_snapshots::WorkspaceSnapshotStore`] (not part of
    /// [`Store`]: only servers sharing a store with other replicas use it).
    pub fn snapshots(&self) -> &dyn engine::workspace_snapshots::WorkspaceSnapshotStore {
        match self {
            TestStore::Sqlite(s) => s,
            TestStore::Postgres(s) => s,
        }
    }
}

impl Deref for TestStore {
    type Target = dyn Store;
    fn deref(&self) -> &(dyn Store + 'static) {
        match self {
            TestStore::Sqlite(s) => s,
            TestStore::Postgres(s) => s,
        }
    }
}

/// A fresh directory under the system temp dir, removed on drop.
pub struct TempDir(pub PathBuf);

impl TempDir {
    pub fn new() -> Self {
        TempDir(std::env::temp_dir().join(format!("agentd-store-test-{}", uuid::Uuid::new_v4())))
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// A stored message item `id` of `kind` (its text is its id).
pub fn message_item(id: &str, kind: ItemKind) -> Result<StoredItem, serde_json::Error> {
    Ok(StoredItem {
        id: id.to_owned(),
        kind,
        item: engine::store::ItemJson::of(
            &serde_json::json!({"type": "message", "id": id, "role": "user", "content": id}),
        )?,
    })
}

/// Conversation `id` of project `proj_a`, created at 1, without metadata.
pub fn conversation(id: &str) -> ConversationRecord {
    ConversationRecord {
        id: id.to_owned(),
        project_id: "proj_a".to_owned(),
        created_at: 1,
        metadata: Default::default(),
    }
}

/// The ids of a conversation's items, in their order.
pub async fn conversation_ids(
    store: &dyn ItemStore,
    project_id: &str,
    conversation_id: &str,
) -> Result<Vec<String>, StoreError> {
    let items = store
        .conversation_items(project_id, conversation_id)
        .await?;
    Ok(items.into_iter().map(|item| item.id).collect())
}

/// Events with these sequence numbers.
pub fn events(range: std::ops::Range<u64>) -> Vec<EventRecord> {
    range
        .map(|n| EventRecord {
            sequence_number: n,
            data: format!(r#"{{"type":"response.output_text.delta","sequence_number":{n}}}"#)
                .into(),
        })
        .collect()
}

/// A system prompt of about `n` bytes: words drawn at random (it packs about as well as real
/// prose), with what JSON escapes (quotes, newlines, a tab, a backslash, characters beyond
/// ASCII).
pub fn prompt(n: usize) -> String {
    let words = [
        "the",
        "assistant",
        "answers",
        "\"carefully\"",
        "in",
        "user's",
        "language",
        "précis",
        "kurz",
        "簡潔",
        "cite",
        "sources",
        "as",
        "[n]",
        "never",
        "guess",
        "a",
        "C:\\path",
        "when",
        "unsure,",
        "ask;",
        "tools",
        "search",
        "finance",
        "people",
        "prefer",
        "primary",
        "documents",
        "and",
        "quote\tthem",
        "exactly.\n",
        "of",
        "before",
        "answering",
        "check",
    ];
    let mut state = 0x9e37_79b9_7f4a_7c15u64;
    let mut prompt = String::from("Rules:");
    while prompt.len() < n {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        prompt.push(' ');
        prompt.push_str(words[(state % words.len() as u64) as usize]);
        if state.is_multiple_of(5) {
            prompt.push_str(&format!(" {}", state % 10_000));
        }
    }
    prompt
}

/// The events of a run that answered `deltas` words, as the engine writes them: the response
/// object in `response.created`, `response.in_progress` and `response.completed`.
pub fn run_events(
    response: &protocol::response::Response,
    deltas: u64,
) -> Result<Vec<EventRecord>, serde_json::Error> {
    let json = serde_json::to_string(response)?;
    let mut lines = vec![
        format!(r#"{{"type":"response.created","sequence_number":0,"response":{json}}}"#),
        format!(r#"{{"type":"response.in_progress","sequence_number":1,"response":{json}}}"#),
    ];
    for n in 2..deltas + 2 {
        lines.push(format!(
            r#"{{"type":"response.output_text.delta","item_id":"msg_1","output_index":0,"content_index":0,"delta":" w{n}","sequence_number":{n}}}"#
        ));
    }
    lines.push(format!(
        r#"{{"type":"response.completed","sequence_number":{},"response":{json}}}"#,
        deltas + 2
    ));
    Ok((0u64..)
        .zip(lines)
        .map(|(n, line)| EventRecord {
            sequence_number: n,
            data: line.into(),
        })
        .collect())
}

/// A completed response with one message, as the run path stores them.
pub fn response(id: &str, status: &str) -> Result<protocol::response::Response, serde_json::Error> {
    serde_json::from_value(serde_json::json!({
        "id": id,
        "object": "response",
        "created_at": 1_700_000_000,
        "completed_at": 1_700_000_002,
        "status": status,
        "model": "openai/gpt-test",
        "output": [{
            "type": "message",
            "id": "msg_1",
            "status": "completed",
            "role": "assistant",
            "content": [{"type": "output_text", "text": "It is 42.", "annotations": [], "logprobs": []}]
        }],
        "usage": null,
        "error": null,
        "incomplete_details": null,
        "instructions": null,
        "max_output_tokens": null,
        "max_tool_calls": null,
        "max_steps": null,
        "temperature": 1.0,
        "top_p": 1.0,
        "tool_choice": "auto",
        "tools": [],
        "parallel_tool_calls": true,
        "truncation": "disabled",
        "background": false,
        "store": true,
        "service_tier": "default",
        "text": {"format": {"type": "text"}},
        "metadata": {"k": "v"},
        "previous_response_id": null,
        "prompt_cache_key": null,
        "reasoning": null,
        "frequency_penalty": 0.0,
        "presence_penalty": 0.0,
        "top_logprobs": 0
    }))
}
