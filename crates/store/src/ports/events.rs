//! [`EventStore`]: the stream event log of a run, written in batches, one row (a chunk) per
//! batch.
//!
//! A chunk (table `event_chunks`, schema version 11) holds the contiguous sequence numbers
//! `first_sequence..=last_sequence` of one run, its `data` the events' lines joined by `'\n'`.
//! The lines are serde_json's compact output, which never holds a raw newline; an event whose
//! line does anyway is stored as a chunk of its own, as it is, and never split on read.
//! Writes are idempotent: the key is `(response_id, first_sequence, last_sequence)` with
//! `ON CONFLICT DO NOTHING`, so a batch written twice (a group-commit batch run again alone) is
//! stored once, and a flush retried after a failure that had in fact committed (the same
//! first number, reaching further) adds a second, longer chunk; readers take each sequence
//! number once, from the chunk that starts first (the one stored first when they overlap).
//! Rows of the per-event table `events` (written before version 11, or by an older replica
//! during a rolling upgrade) are read as one-event chunks.
//!
//! On SQLite (schema version 12; 13: against a dictionary) a chunk's lines are stored packed, a BLOB (`event_pack.rs`),
//! when that makes them smaller; a TEXT `data` is the lines as they are. Readers take either.
//! PostgreSQL stores TEXT, which its TOAST compresses already.

use std::sync::Arc;

use engine::metrics::ActiveRuns;
use engine::store::{EventRecord, EventStore, StoreError};
use sqlx::{Row, TypeInfo, ValueRef};

use super::json_columns::stored_json;
use super::{DbRow, Store, dialect};
use crate::script::Script;
use crate::stored_json::StoredJsonRef;
use crate::{error, event_pack, text_pack};

/// Bytes of event lines per chunk: a batch whose lines add up to more is split into several
/// chunks (an event longer than this is a chunk of its own). It bounds what a resume reads
/// and decodes beyond its cursor, far below SQLite's and PostgreSQL's 1 GB value limits; a
/// flush of a 64-token answer is about 20 KiB.
const CHUNK_BYTES: usize = 256 * 1024;

/// The chunks after `$2` (those holding a sequence number beyond it), and the per-event rows
/// of older versions after it as one-event chunks, in the order readers take them.
const SELECT_AFTER: &str = "\
SELECT first_sequence, last_sequence, data
FROM event_chunks
WHERE response_id = $1 AND last_sequence > $2
UNION ALL
SELECT sequence_number, sequence_number, data
FROM events
WHERE response_id = $1 AND sequence_number > $2
ORDER BY first_sequence, last_sequence";

/// One stored row: the events `first..=last` of a run.
pub(crate) struct Chunk {
    first: i64,
    last: i64,
    /// What is stored. Shared: the write may run twice, and both runs bind the same bytes.
    data: Data,
}

/// The stored form of a chunk's lines.
enum Data {
    /// The events' lines joined by `'\n'`; for a chunk of one event, the event log's own
    /// bytes, not copied.
    Lines(Arc<str>),
    /// The lines packed (`event_pack.rs`).
    Packed(Arc<[u8]>),
}

/// Events encoded for [`insert`]: the chunks of a batch.
pub(crate) type EventRows = Vec<Chunk>;

/// Encodes events for [`insert`] (before the write, which may run twice): each run of
/// consecutive sequence numbers becomes one chunk, split where [`CHUNK_BYTES`] requires and
/// around any event whose line holds a `'\n'`. With `text`, the response's (`text_pack.rs`;
/// only for chunks written with a row of the response that holds it), the chunks that hold it
/// are packed against it.
pub(crate) fn encode(
    response_id: &str,
    events: &[EventRecord],
    text: Option<&str>,
) -> Result<EventRows, StoreError> {
    let mut chunks = Vec::new();
    let mut start = 0;
    // Bytes of the chunk being gathered, `events[start..end]`, separators included; whether it
    // takes no more events (none gathered yet, or its one line holds a newline).
    let mut bytes = 0;
    let mut sealed = true;
    for (end, event) in events.iter().enumerate() {
        let newline = has_newline(&event.data);
        let joins = !sealed
            && !newline
            && bytes + 1 + event.data.len() <= CHUNK_BYTES
            && end.checked_sub(1).is_some_and(|previous| {
                events[previous].sequence_number.checked_add(1) == Some(event.sequence_number)
            });
        if joins {
            bytes += 1 + event.data.len();
        } else {
            if end > start {
                chunks.push(chunk(response_id, &events[start..end], bytes, text)?);
            }
            start = end;
            bytes = event.data.len();
        }
        sealed = newline;
    }
    if events.len() > start {
        chunks.push(chunk(response_id, &events[start..], bytes, text)?);
    }
    Ok(chunks)
}

/// Whether a line holds a newline (memchr's vectorised search: every byte of every event is
/// looked at once per write).
fn has_newline(line: &str) -> bool {
    memchr::memchr(b'\n', line.as_bytes()).is_some()
}

/// One chunk of consecutive events (`bytes`: their lines joined).
fn chunk(
    response_id: &str,
    events: &[EventRecord],
    bytes: usize,
    text: Option<&str>,
) -> Result<Chunk, StoreError> {
    let number = |event: Option<&EventRecord>| {
        let n = event.map_or(0, |e| e.sequence_number);
        i64::try_from(n).map_err(|_| {
            StoreError::Backend(format!(
                "events of {response_id}: sequence number {n} out of range"
            ))
        })
    };
    let first = number(events.first())?;
    let last = number(events.last())?;
    let data = match events {
        [one] => pack(&one.data, text).unwrap_or_else(|| Data::Lines(Arc::clone(&one.data))),
        _ => {
            let mut joined = String::with_capacity(bytes);
            for (n, event) in events.iter().enumerate() {
                if n > 0 {
                    joined.push('\n');
                }
                joined.push_str(&event.data);
            }
            pack(&joined, text).unwrap_or_else(|| Data::Lines(Arc::from(joined)))
        }
    };
    Ok(Chunk { first, last, data })
}

/// The lines packed, where the back end stores them so and packing makes them smaller:
/// against the response's `text` when they hold it.
fn pack(lines: &str, text: Option<&str>) -> Option<Data> {
    if !dialect::PACK_EVENTS {
        return None;
    }
    text.and_then(|text| text_pack::pack_events(lines, text))
        .or_else(|| event_pack::pack(lines))
        .map(Data::Packed)
}

/// Appends encoded events to a write (idempotent, see the module documentation).
pub(crate) fn insert(script: &mut Script, response_id: &Arc<str>, chunks: &[Chunk]) {
    // At most `ROWS_PER_STATEMENT` chunks (4 parameters each) a statement, in a few forms.
    for group in crate::script::row_groups(chunks.len()) {
        let group = &chunks[group];
        let mut sql = String::from(
            "INSERT INTO event_chunks (response_id, first_sequence, last_sequence, data) VALUES ",
        );
        crate::script::push_values(&mut sql, 0, group.len(), 4);
        // A batch flushed twice (retry after a crash, resume) must not fail the run.
        sql.push_str(" ON CONFLICT (response_id, first_sequence, last_sequence) DO NOTHING");
        let statement = script.statement(sql);
        for chunk in group {
            statement
                .bind(response_id)
                .bind(chunk.first)
                .bind(chunk.last);
            match &chunk.data {
                Data::Lines(lines) => statement.bind(lines),
                Data::Packed(packed) => statement.bind(packed),
            };
        }
    }
}

#[async_trait::async_trait]
impl EventStore for Store {
    async fn append_events(
        &self,
        response_id: &str,
        events: &[EventRecord],
    ) -> Result<(), StoreError> {
        if events.is_empty() {
            return Ok(());
        }
        let mut script = Script::new();
        insert(
            &mut script,
            &Arc::from(response_id),
            &encode(response_id, events, None)?,
        );
        self.write(response_id, script).await
    }

    fn follow_active_runs(&self, runs: ActiveRuns) {
        self.group.follow_active_runs(runs);
    }

    async fn events_after(
        &self,
        response_id: &str,
        after: Option<u64>,
    ) -> Result<Vec<EventRecord>, StoreError> {
        // Stored numbers are non-negative, so -1 selects everything.
        let after = match after {
            None => -1,
            Some(n) => match i64::try_from(n) {
                Ok(n) => n,
                // Nothing can be stored beyond i64::MAX.
                Err(_) => return Ok(Vec::new()),
            },
        };
        let rows = sqlx::query(SELECT_AFTER)
            .bind(response_id)
            .bind(after)
            .fetch_all(&self.reader)
            .await
            .map_err(error::backend)?;
        let what = format!("events of {response_id}");
        // The response's text, read once the first chunk packed against it comes.
        let mut text: Option<Vec<u8>> = None;
        let mut events = Vec::new();
        // The last sequence number taken (or the cursor): each is taken once, in order.
        let mut taken = after;
        for row in &rows {
            let number = |column: &str| -> Result<i64, StoreError> {
                row.try_get(column)
                    .map_err(|e| error::bad_column(&what, column, e))
            };
            let (first, last) = (number("first_sequence")?, number("last_sequence")?);
            if first < 0 || last < first {
                return Err(StoreError::Corrupt(format!(
                    "{what}: chunk of sequence numbers {first} to {last}"
                )));
            }
            if last <= taken {
                continue;
            }
            let unpacked;
            let data: &str = match read(row, &what)? {
                Stored::Lines(lines) => lines,
                Stored::Packed(packed) => {
                    unpacked = if text_pack::needs_text(packed) {
                        if text.is_none() {
                            text = Some(self.response_text(response_id).await?);
                        }
                        let text = text.as_deref().unwrap_or_default();
                        text_pack::unpack_events(packed, text)
                    } else {
                        event_pack::unpack(packed)
                    }
                    .map_err(|e| {
                        StoreError::Corrupt(format!(
                            "{what}: the chunk of sequence numbers {first} to {last}: {e}"
                        ))
                    })?;
                    &unpacked
                }
            };
            if first == last {
                push(&mut events, first, data);
            } else {
                let mut lines = data.split('\n');
                for sequence in first..=last {
                    let line = lines.next().ok_or_else(|| short(&what, first, last))?;
                    if sequence > taken {
                        push(&mut events, sequence, line);
                    }
                }
                if lines.next().is_some() {
                    return Err(short(&what, first, last));
                }
            }
            taken = last;
        }
        Ok(events)
    }
}

impl Store {
    /// The text of response `response_id` (`text_pack.rs`), which the chunks of its run packed
    /// against it need; `Err` when the response is not stored or holds none.
    pub(crate) async fn response_text(&self, response_id: &str) -> Result<Vec<u8>, StoreError> {
        let what = format!("response {response_id}");
        let row = sqlx::query("SELECT response_json FROM responses WHERE id = $1")
            .bind(response_id)
            .fetch_optional(&self.reader)
            .await
            .map_err(error::backend)?
            .ok_or_else(|| {
                StoreError::Corrupt(format!(
                    "events of {response_id}: packed against the text of a response not stored"
                ))
            })?;
        let text = match stored_json(&row, "response_json", &what)? {
            StoredJsonRef::Packed(packed) => text_pack::text_of_response(packed),
            StoredJsonRef::Text(_) => None,
        };
        match text {
            Some(Ok(text)) => Ok(text.to_vec()),
            Some(Err(e)) => Err(StoreError::Corrupt(format!(
                "{what}: its response_json: {e}"
            ))),
            None => Err(StoreError::Corrupt(format!(
                "events of {response_id}: packed against a text its response does not hold"
            ))),
        }
    }
}

/// A chunk's `data` as read.
enum Stored<'r> {
    Lines(&'r str),
    Packed(&'r [u8]),
}

/// A row's `data`: TEXT is lines, a BLOB packed lines (SQLite reports each value's own
/// storage class).
fn read<'r>(row: &'r DbRow, what: &str) -> Result<Stored<'r>, StoreError> {
    let bad = |e| error::bad_column(what, "data", e);
    let packed = row.try_get_raw("data").map_err(bad)?.type_info().name() == "BLOB";
    Ok(if packed {
        Stored::Packed(row.try_get("data").map_err(bad)?)
    } else {
        Stored::Lines(row.try_get("data").map_err(bad)?)
    })
}

fn push(events: &mut Vec<EventRecord>, sequence: i64, line: &str) {
    events.push(EventRecord {
        // Checked non-negative with its chunk.
        sequence_number: sequence.unsigned_abs(),
        data: Arc::from(line),
    });
}

/// A chunk whose lines do not match its sequence numbers.
fn short(what: &str, first: i64, last: i64) -> StoreError {
    StoreError::Corrupt(format!(
        "{what}: the chunk of sequence numbers {first} to {last} holds another number of lines"
    ))
}
