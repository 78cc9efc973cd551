//! [`ResponseStore`]: response records with their continuation transcript.
//!
//! On SQLite a response's JSON (schema version 14) and its transcript (version 17) are stored
//! packed, a BLOB (`event_pack.rs` format 3, `transcript_pack.rs` format 4), when that makes
//! them smaller; a TEXT value is the JSON as it is (rows written before). PostgreSQL keeps the
//! JSON as TEXT and stores a packed transcript in a column of its own (version 19,
//! `transcript_column!`). Every reader takes either (`json_columns.rs`). Since version 18 (19
//! on PostgreSQL) a transcript may be stored linked to the one of the response its
//! conversation went on from, once that one is stored for good (`packed_transcripts.rs`), and
//! is read whole through its bases (`linked_transcripts.rs`).

use std::sync::Arc;

use engine::store::{
    ContinuationSource, EventRecord, JobRecord, ResponseRecord, ResponseStore, StoreError,
};
use protocol::output::OutputItem;
use protocol::request::Tool;
use protocol::response::ResponseStatus;
use serde::Deserialize;
use serde_json::value::RawValue;
use sqlx::Row as _;
use sqlx::error::ErrorKind;

use super::json_columns::{json_column, json_text, stored_json};
use super::{DbRow, Store, dialect};
use crate::packed_transcripts::{PackedTranscripts, Seed};
use crate::script::Script;
use crate::stored_json::{StoredJson, StoredJsonRef};
use crate::transcript_memo::Items;
use crate::{error, event_pack, now_secs, text_pack, transcript_pack};

/// Insert, or replace the record with the same id if it belongs to the same project. A record
/// of another project is refused by the statement itself: its `response_json` would become
/// NULL (a NOT NULL violation), so that a write is refused by a failing statement, never by a
/// row count read afterwards (`script.rs`).
///
/// The update sets only what a run changes. `project_id` is the same whenever the update
/// happens at all, and `created_at` is the response's creation time, the same in every write
/// of a run (`Engine::start` and the run's end both take it from the response); leaving them
/// out of the `SET` list spares SQLite the two indexes holding them (it rewrites an index entry
/// whenever one of its columns is assigned, to the same value or not): two WAL pages fewer per
/// run ending (docs/benchmarks.md, "Issue 18, fifth pass").
///
/// Where the back end stores a packed transcript in a column of its own (PostgreSQL), that
/// column is written too (`transcript_column!`).
const UPSERT: &str = concat!(
    "\
INSERT INTO responses
    (id, project_id, created_at, visible, status, response_json, transcript_json, updated_at,
     conversation_id, turns_json, transcript_base",
    transcript_column!(column),
    ")
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11",
    transcript_column!(value),
    ")
ON CONFLICT (id) DO UPDATE SET
    response_json = CASE WHEN responses.project_id = excluded.project_id
        THEN excluded.response_json END,
    conversation_id = excluded.conversation_id,
    turns_json = excluded.turns_json,
    visible = excluded.visible,
    status = excluded.status,
    transcript_json = excluded.transcript_json,
    transcript_base = excluded.transcript_base,
    updated_at = excluded.updated_at",
    transcript_column!(set)
);

/// Whether the back end stores a packed transcript in a column of its own (PostgreSQL's
/// `transcript_packed`): the upsert then has one more column (`transcript_column!`).
const PACKED_APART: bool = !transcript_column!(column).is_empty();

/// Refuses a write whose transcript is linked to response `$1` of project `$2` when that
/// response is not stored (deleted since the transcript was packed): an insert of a row
/// without its NOT NULL columns, which runs only then. On PostgreSQL the response found is
/// locked until the write commits (`transcript_column!(lock)`): a deletion on another
/// connection waits for it, and then finds the new transcript linked to it (`unlink`).
const BASE_STORED: &str = concat!(
    "\
INSERT INTO responses (id)
SELECT $1
WHERE NOT EXISTS (SELECT 1 FROM responses WHERE id = $1 AND project_id = $2",
    transcript_column!(lock),
    ")"
);

const SELECT: &str = concat!(
    "\
SELECT id, project_id, created_at, visible, response_json, ",
    transcript_column!(stored ""),
    " AS transcript_json, conversation_id, turns_json, transcript_base
FROM responses
WHERE project_id = $1 AND id = $2"
);

/// What a continuation reads of a response ([`decode_continuation`]).
const SELECT_CONTINUATION: &str = concat!(
    "SELECT response_json, ",
    transcript_column!(stored ""),
    " AS transcript_json, conversation_id, transcript_base
FROM responses
WHERE project_id = $1 AND id = $2"
);

/// A response record encoded for [`UPSERT`] (before the write, which may run twice).
struct Encoded {
    id: Arc<str>,
    project_id: Arc<str>,
    created_at: i64,
    visible: bool,
    status: &'static str,
    /// The response's JSON as stored: packed, or as it is (shared with the engine when it
    /// serialized the response already).
    response_json: StoredJson,
    /// The transcript's JSON, as stored, and the response it is linked to.
    transcript: Arc<str>,
    transcript_json: StoredJson,
    transcript_base: Option<Arc<str>>,
    conversation_id: Option<Arc<str>>,
    /// The model turns (`None` when there are none).
    turns_json: Option<Arc<str>>,
}

impl Encoded {
    /// `record` encoded, its `transcript` the JSON of its transcript (`transcript_json`);
    /// packed when long enough, after the one packed last for its conversation when it goes on
    /// from it (`packs`), or after `seed`. Its JSON is packed with `text` at its head when it
    /// has one ([`response_text`]).
    fn encode(
        record: &ResponseRecord,
        packs: &PackedTranscripts,
        transcript: Arc<str>,
        seed: Option<Seed>,
        text: Option<&str>,
    ) -> Result<Encoded, StoreError> {
        let encode = |e: serde_json::Error| {
            StoreError::Backend(format!("cannot encode response {}: {e}", record.id))
        };
        let packed = packs.pack(
            transcript_conversation(record),
            &record.project_id,
            &record.id,
            &transcript,
            seed,
        );
        let (transcript_json, transcript_base) = match packed {
            Some(packed) => (StoredJson::Packed(packed.value), packed.base),
            None => (StoredJson::Text(Arc::clone(&transcript)), None),
        };
        Ok(Encoded {
            id: Arc::from(record.id.as_str()),
            project_id: Arc::from(record.project_id.as_str()),
            created_at: record.created_at,
            visible: record.visible,
            status: record.response.status.as_str(),
            response_json: stored_response_json(
                record,
                match &record.response_json {
                    Some(json) => Arc::clone(json),
                    None => Arc::from(serde_json::to_string(&record.response).map_err(encode)?),
                },
                text,
            )?,
            transcript,
            transcript_json,
            transcript_base,
            conversation_id: record.conversation_id.as_deref().map(Arc::from),
            turns_json: if record.turns.is_empty() {
                None
            } else {
                Some(Arc::from(
                    serde_json::to_string(&record.turns).map_err(encode)?,
                ))
            },
        })
    }

    /// Inserts or replaces the record (refused when the id belongs to another project, or when
    /// its transcript is linked to a response no longer stored).
    fn upsert(&self, script: &mut Script) {
        if let Some(base) = &self.transcript_base {
            script
                .statement(BASE_STORED)
                .bind(base)
                .bind(&self.project_id)
                .conflict_on(ErrorKind::NotNullViolation, base_gone(&self.id, base));
        }
        let statement = script.statement(UPSERT);
        statement
            .bind(&self.id)
            .bind(&self.project_id)
            .bind(self.created_at)
            .bind(i64::from(self.visible))
            .bind(self.status);
        match &self.response_json {
            StoredJson::Text(json) => statement.bind(json),
            StoredJson::Packed(packed) => statement.bind(packed),
        };
        // A packed transcript in `transcript_json`, or in a column of its own (PostgreSQL),
        // `transcript_json` then ''.
        let apart = match &self.transcript_json {
            StoredJson::Text(json) => {
                statement.bind(json);
                None
            }
            StoredJson::Packed(packed) if PACKED_APART => {
                statement.bind("");
                Some(Arc::clone(packed))
            }
            StoredJson::Packed(packed) => {
                statement.bind(packed);
                None
            }
        };
        statement
            .bind(now_secs())
            .bind(self.conversation_id.clone())
            .bind(self.turns_json.clone())
            .bind(self.transcript_base.clone());
        if PACKED_APART {
            statement.bind(apart);
        }
        statement
            // Never let one project overwrite another's response.
            .conflict_on(
                ErrorKind::NotNullViolation,
                format!("response {} belongs to another project", self.id),
            );
    }
}

/// `record`'s JSON, `json`, as stored: with `text` at its head when it has one (always in that
/// form then: its run's chunks may be packed against it, `text_pack.rs`), else packed where
/// the back end packs and that makes it smaller.
fn stored_response_json(
    record: &ResponseRecord,
    json: Arc<str>,
    text: Option<&str>,
) -> Result<StoredJson, StoreError> {
    let Some(text) = text else {
        return Ok(StoredJson::new(json, dialect::PACK_RESPONSES, |json| {
            event_pack::pack_response(json)
        }));
    };
    text_pack::pack_response(&json, text)
        .map(StoredJson::Packed)
        .ok_or_else(|| {
            StoreError::Backend(format!(
                "cannot pack response {}: {} bytes",
                record.id,
                json.len()
            ))
        })
}

/// The refusal of a write of response `id` whose transcript is linked to `base`, deleted since.
fn base_gone(id: &str, base: &str) -> String {
    format!("the transcript of response {id} is linked to response {base}, deleted since")
}

/// The conversation whose transcripts the record's goes on from: the OpenAI conversation it is
/// appended to, or its `previous_response_id` chain.
fn transcript_conversation(record: &ResponseRecord) -> &str {
    record
        .append_to
        .as_deref()
        .unwrap_or_else(|| record.conversation())
}

/// Everything `end_run` writes but the row, encoded.
struct Ending {
    events: super::events::EventRows,
    items: Vec<super::items::IndexRow>,
    /// The conversation to append the items to, with the items encoded for it.
    append: Option<(Arc<str>, super::items::AppendRows)>,
}

impl Ending {
    /// The run's last events, its record `row`, its items, the conversation's new items and
    /// the removal of its job, in one script.
    fn script(&self, row: &Encoded) -> Script {
        let mut script = Script::new();
        super::events::insert(&mut script, &row.id, &self.events);
        row.upsert(&mut script);
        super::items::index(&mut script, &row.project_id, &row.id, &self.items);
        if let Some((conversation, items)) = &self.append {
            // A conversation deleted while the run went on takes no more items.
            super::items::append_to(&mut script, &row.project_id, conversation, items);
        }
        super::jobs::delete_in(&mut script, &row.id);
        script
    }
}

impl Store {
    /// `end_run`'s write; returns the row as written.
    async fn end_run_row(
        &self,
        record: &ResponseRecord,
        events: &[EventRecord],
    ) -> Result<Encoded, StoreError> {
        // The row and the chunks written with it take the same text: the chunks packed
        // against it read with that row.
        let text = response_text(record);
        let append = record.append_to.as_ref().map(|conversation| {
            (
                Arc::from(conversation.as_str()),
                super::items::encode_append(&record.items),
            )
        });
        let ending = Ending {
            events: super::events::encode(&record.id, events, text.as_deref())?,
            items: super::items::encode_index(&record.items),
            append,
        };
        let row = self
            .write_row(record, text.as_deref(), |row| ending.script(row))
            .await?;
        if record.response.status.is_terminal()
            && matches!(row.transcript_json, StoredJson::Packed(_))
        {
            // Stored for good: the conversation's next transcript may be linked to it.
            self.packed_transcripts.stored(
                transcript_conversation(record),
                &row.id,
                &row.transcript,
            );
        }
        Ok(row)
    }

    /// Keeps the transcript just written as `row` parsed (`items`) for its continuation, when
    /// one is `continued` (`likely_continued`).
    fn keep_transcript(&self, row: &Encoded, continued: bool, items: Items<'_>) {
        if continued {
            self.transcripts
                .remember(&row.id, &row.transcript_json, row.transcript.len(), items);
        }
    }

    /// Writes the script `build` makes of `record`'s row, its JSON packed with `text` when it
    /// has one; returns the row as written. A write refused because the transcript's base was
    /// deleted after it was packed is encoded again, no longer linked to it, and written once
    /// more.
    async fn write_row(
        &self,
        record: &ResponseRecord,
        text: Option<&str>,
        build: impl Fn(&Encoded) -> Script,
    ) -> Result<Encoded, StoreError> {
        let transcript = transcript_json(record)?;
        let seed = self.seed_for(record, &transcript).await;
        let row = Encoded::encode(
            record,
            &self.packed_transcripts,
            Arc::clone(&transcript),
            seed,
            text,
        )?;
        match self.write(&record.id, build(&row)).await {
            Err(StoreError::Conflict(message))
                if row
                    .transcript_base
                    .as_deref()
                    .is_some_and(|base| message == base_gone(&row.id, base)) =>
            {
                if let Some(base) = &row.transcript_base {
                    self.packed_transcripts.forget(base);
                }
                let row =
                    Encoded::encode(record, &self.packed_transcripts, transcript, None, text)?;
                self.write(&record.id, build(&row)).await.map(|()| row)
            }
            written => written.map(|()| row),
        }
    }

    /// The transcript of the response `record` continues, read back from the store, when its
    /// own transcript (`transcript`, JSON) is long enough to be packed and the memo holds
    /// nothing to pack it after (`packed_transcripts.rs`: after a restart, once the memo let
    /// the conversation go, or past what it keeps of one): so that it is still stored linked
    /// to it, and packed only where it goes on from it. A read that fails leaves it packed
    /// whole, as without the memo.
    async fn seed_for(&self, record: &ResponseRecord, transcript: &str) -> Option<Seed> {
        let previous = record.response.previous_response_id.as_deref()?;
        if transcript.len() < transcript_pack::MIN_PACKED
            || !self.packed_transcripts.needs_seed(
                transcript_conversation(record),
                &record.id,
                previous,
            )
        {
            return None;
        }
        match self.transcript_seed(&record.project_id, previous).await {
            Ok(seed) => seed,
            Err(err) => {
                tracing::debug!(response_id = %record.id, error = %err, "previous transcript not read back");
                None
            }
        }
    }
}

/// `record`'s text (`text_pack.rs`): the JSON of its long instructions, where the back end
/// packs a response's JSON. It depends on the instructions alone: every write of a response
/// takes the same.
fn response_text(record: &ResponseRecord) -> Option<Arc<str>> {
    if !dialect::PACK_RESPONSES {
        return None;
    }
    text_pack::response_text(record.response.instructions.as_deref())
}

/// The JSON of `record`'s transcript: after the JSON of its first items when the engine has it
/// (`transcript_prefix`: a continuation's transcript as stored, or the request's input items
/// as written for the item rows), only the items after them serialized.
fn transcript_json(record: &ResponseRecord) -> Result<Arc<str>, StoreError> {
    let json = match &record.transcript_prefix {
        Some(prefix) => protocol::input::InputItem::list_to_json_after(
            &prefix.json,
            prefix.items,
            &record.transcript,
        ),
        None => protocol::input::InputItem::list_to_json(&record.transcript),
    };
    json.map(Arc::from)
        .map_err(|e| StoreError::Backend(format!("cannot encode response {}: {e}", record.id)))
}

#[async_trait::async_trait]
impl ResponseStore for Store {
    async fn put_response(&self, record: &ResponseRecord) -> Result<(), StoreError> {
        self.write_row(record, response_text(record).as_deref(), |row| {
            let mut script = Script::new();
            row.upsert(&mut script);
            script
        })
        .await
        .map(drop)
    }

    async fn start_run(&self, record: &ResponseRecord, job: &JobRecord) -> Result<(), StoreError> {
        self.write_row(record, response_text(record).as_deref(), |row| {
            let mut script = Script::new();
            row.upsert(&mut script);
            super::jobs::insert_in(&mut script, job);
            script
        })
        .await
        .map(drop)
    }

    async fn end_run(
        &self,
        record: &ResponseRecord,
        events: &[EventRecord],
    ) -> Result<(), StoreError> {
        let row = self.end_run_row(record, events).await?;
        self.keep_transcript(
            &row,
            likely_continued(record),
            Items::Borrowed(&record.transcript),
        );
        Ok(())
    }

    async fn end_run_taking_transcript(
        &self,
        record: &mut ResponseRecord,
        events: &[EventRecord],
    ) -> Result<(), StoreError> {
        let row = self.end_run_row(record, events).await?;
        let continued = likely_continued(record);
        self.keep_transcript(&row, continued, Items::Taken(&mut record.transcript));
        Ok(())
    }

    async fn get_response(
        &self,
        project_id: &str,
        id: &str,
    ) -> Result<Option<ResponseRecord>, StoreError> {
        let row = sqlx::query(SELECT)
            .bind(project_id)
            .bind(id)
            .fetch_optional(&self.reader)
            .await
            .map_err(error::backend)?;
        let Some(row) = row else {
            return Ok(None);
        };
        let whole = self.whole_transcript(project_id, id, &row).await?;
        decode(&row, id, whole.as_deref()).map(Some)
    }

    async fn continuation_source(
        &self,
        project_id: &str,
        id: &str,
    ) -> Result<Option<ContinuationSource>, StoreError> {
        let row = sqlx::query(SELECT_CONTINUATION)
            .bind(project_id)
            .bind(id)
            .fetch_optional(&self.reader)
            .await
            .map_err(error::backend)?;
        let Some(row) = row else {
            return Ok(None);
        };
        let what = format!("response {id}");
        let stored = stored_json(&row, "transcript_json", &what)?;
        // The transcript, and its JSON when at hand: the row's text, the text the memo of
        // packed transcripts holds for it, or the text just unpacked.
        let (transcript, json) = match self.transcripts.take(id, stored) {
            Some(items) => {
                let json = match stored {
                    StoredJsonRef::Text(text) => Some(Arc::from(text)),
                    StoredJsonRef::Packed(_) => {
                        let conversation: Option<String> = row
                            .try_get("conversation_id")
                            .map_err(|e| error::bad_column(&what, "conversation_id", e))?;
                        self.packed_transcripts
                            .stored_text(conversation.as_deref().unwrap_or(id), id)
                    }
                };
                (items, json)
            }
            None => {
                let whole = self.whole_transcript(project_id, id, &row).await?;
                let stored = whole.as_deref().map_or(stored, StoredJsonRef::Packed);
                let json = json_text(stored, "transcript_json", &what)?;
                let items = serde_json::from_str(&json)
                    .map_err(|e| error::bad_json(&what, "transcript_json", &e))?;
                (items, Some(Arc::from(json)))
            }
        };
        decode_continuation(&row, id, transcript, json).map(Some)
    }
}

/// Whether a continuation of the run that ends with `record` is likely to come soon: it can
/// be continued, and the client chains its requests (this run continued one) or the run waits
/// on the client (its output ends with a function call or an approval request). Only then is
/// its transcript kept parsed (`transcript_memo.rs`): keeping it costs a copy of its items
/// (none when the run's end hands them over: `end_run_taking_transcript`).
fn likely_continued(record: &ResponseRecord) -> bool {
    let response = &record.response;
    response.status.is_continuable()
        && (response.previous_response_id.is_some()
            || matches!(
                response.output.last(),
                Some(OutputItem::FunctionCall(_) | OutputItem::McpApprovalRequest(_))
            ))
}

/// Of a response object, what a continuation reads: its status and its tools, each left
/// unread but an `mcp` one (the rest of the object is skipped, not built: a continuation of a
/// short answer read 30 k instructions of response for these two fields).
#[derive(Deserialize)]
struct ResponseHead<'a> {
    status: ResponseStatus,
    #[serde(default, borrow)]
    tools: Vec<&'a RawValue>,
}

/// A tool's `type`.
#[derive(Deserialize)]
struct ToolType<'a> {
    #[serde(rename = "type", borrow)]
    kind: std::borrow::Cow<'a, str>,
}

/// A row of [`SELECT_CONTINUATION`] as the continuation of response `id` takes it, with its
/// `transcript` read (and its JSON, when at hand): what [`ContinuationSource::from`] takes of
/// the whole record.
fn decode_continuation(
    row: &DbRow,
    id: &str,
    transcript: Vec<protocol::input::InputItem>,
    transcript_json: Option<Arc<str>>,
) -> Result<ContinuationSource, StoreError> {
    let what = format!("response {id}");
    let response_json = json_column(row, "response_json", &what)?;
    let bad_response = |e: serde_json::Error| error::bad_json(&what, "response_json", &e);
    let head: ResponseHead<'_> = serde_json::from_str(&response_json).map_err(bad_response)?;
    let mut mcp_tools = Vec::new();
    for tool in head.tools {
        let kind: ToolType<'_> = serde_json::from_str(tool.get()).map_err(bad_response)?;
        if kind.kind == "mcp"
            && let Tool::Mcp(mcp) = serde_json::from_str(tool.get()).map_err(bad_response)?
        {
            mcp_tools.push(mcp);
        }
    }
    let conversation_id: Option<String> = row
        .try_get("conversation_id")
        .map_err(|e| error::bad_column(&what, "conversation_id", e))?;
    Ok(ContinuationSource {
        status: head.status,
        mcp_tools,
        conversation: conversation_id.unwrap_or_else(|| id.to_owned()),
        transcript,
        transcript_json,
    })
}

/// A row of [`SELECT`], response `id`; `whole`: its transcript's whole value when it is linked
/// (`Store::whole_transcript`).
fn decode(row: &DbRow, id: &str, whole: Option<&[u8]>) -> Result<ResponseRecord, StoreError> {
    let what = format!("response {id}");
    let column = |name: &str| -> Result<String, StoreError> {
        row.try_get::<String, _>(name)
            .map_err(|e| error::bad_column(&what, name, e))
    };
    let created_at: i64 = row
        .try_get("created_at")
        .map_err(|e| error::bad_column(&what, "created_at", e))?;
    let visible: i64 = row
        .try_get("visible")
        .map_err(|e| error::bad_column(&what, "visible", e))?;
    let response_json = json_column(row, "response_json", &what)?;
    let transcript_json = match whole {
        Some(whole) => json_text(StoredJsonRef::Packed(whole), "transcript_json", &what)?,
        None => json_column(row, "transcript_json", &what)?,
    };
    let turns = match row
        .try_get::<Option<String>, _>("turns_json")
        .map_err(|e| error::bad_column(&what, "turns_json", e))?
    {
        Some(json) => {
            serde_json::from_str(&json).map_err(|e| error::bad_json(&what, "turns_json", &e))?
        }
        None => Vec::new(),
    };
    Ok(ResponseRecord {
        id: column("id")?,
        project_id: column("project_id")?,
        created_at,
        visible: visible != 0,
        response: serde_json::from_str(&response_json)
            .map_err(|e| error::bad_json(&what, "response_json", &e))?,
        transcript: serde_json::from_str(&transcript_json)
            .map_err(|e| error::bad_json(&what, "transcript_json", &e))?,
        conversation_id: row
            .try_get::<Option<String>, _>("conversation_id")
            .map_err(|e| error::bad_column(&what, "conversation_id", e))?,
        items: Vec::new(),
        append_to: None,
        turns,
        response_json: None,
        transcript_prefix: None,
    })
}
