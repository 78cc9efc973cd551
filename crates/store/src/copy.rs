//! `agentd store copy`: every row of a SQLite store into a PostgreSQL store, to move an
//! existing deployment onto several replicas.
//!
//! Both stores are migrated first (the destination to the PostgreSQL schema of the same
//! version). Tables are copied in dependency order, in pages walked by SQLite's `rowid`, so
//! rows keep their relative order (the order of items written in the same second included).
//! Every insert is `ON CONFLICT DO NOTHING`: a copy interrupted half-way can simply be run
//! again. Run it while no agentd serves the SQLite store. Event chunks, responses' JSON and
//! their transcripts packed on SQLite (`event_pack.rs`) are copied unpacked: PostgreSQL stores
//! the first two as TEXT, and reads a TEXT transcript as well as a packed one (it packs and
//! links those of the conversations that go on, schema 19).

use engine::store::StoreError;
use sqlx::postgres::Postgres;
use sqlx::sqlite::SqliteRow;
use sqlx::{QueryBuilder, Row, TypeInfo, ValueRef};

use crate::{PgStore, SqliteStore};
use crate::{error, event_pack, text_pack, transcript_link};

/// Rows read and written per statement.
const PAGE: i64 = 200;

/// The kind of a copied column.
#[derive(Clone, Copy)]
enum Column {
    Text(&'static str),
    NullText(&'static str),
    Int(&'static str),
    NullInt(&'static str),
    Blob(&'static str),
    /// An event chunk's lines, a response's JSON or its transcript: TEXT, or packed in a BLOB on SQLite
    /// (`event_pack.rs`); copied as the text (PostgreSQL stores it as TEXT).
    Packed(&'static str),
    /// `responses.transcript_base`: copied as NULL, the transcript being copied whole.
    Unlinked(&'static str),
}

impl Column {
    fn name(self) -> &'static str {
        match self {
            Column::Text(n)
            | Column::NullText(n)
            | Column::Int(n)
            | Column::NullInt(n)
            | Column::Blob(n)
            | Column::Packed(n)
            | Column::Unlinked(n) => n,
        }
    }
}

/// A value read from SQLite, to bind on PostgreSQL.
enum Value {
    Text(String),
    NullText(Option<String>),
    Int(i64),
    NullInt(Option<i64>),
    Blob(Vec<u8>),
    /// The transcript of response `id` of `project`, stored linked to another response's:
    /// read whole before it is bound.
    Linked {
        project: String,
        id: String,
    },
    /// An event chunk of response `response_id` packed against its text (`text_pack.rs`):
    /// unpacked with the text read from the response before it is bound.
    AgainstText {
        response_id: String,
        packed: Vec<u8>,
        /// The chunk, for an error.
        what: String,
    },
}

use Column::{Blob, Int, NullInt, NullText, Packed, Text, Unlinked};

/// The tables of the schema (SQLite version 21), parents before children, with every column. A
/// transcript linked to another (`transcript_link.rs`) is copied whole, as TEXT, without a
/// base (the foreign key of PostgreSQL's `transcript_base` would otherwise have to follow the
/// copy's order).
const TABLES: &[(&str, &[Column])] = &[
    ("projects", &[Text("id"), Text("name"), Int("created_at")]),
    (
        "api_keys",
        &[
            Text("id"),
            Text("project_id"),
            Text("key_hash"),
            Int("created_at"),
            Text("role"),
            NullText("name"),
            NullText("prefix"),
            NullInt("last_used_at"),
        ],
    ),
    (
        "responses",
        &[
            Text("id"),
            Text("project_id"),
            Int("created_at"),
            Int("visible"),
            Text("status"),
            Packed("response_json"),
            Packed("transcript_json"),
            Int("updated_at"),
            NullText("conversation_id"),
            NullText("turns_json"),
            Unlinked("transcript_base"),
        ],
    ),
    (
        "events",
        &[Text("response_id"), Int("sequence_number"), Text("data")],
    ),
    (
        "event_chunks",
        &[
            Text("response_id"),
            Int("first_sequence"),
            Int("last_sequence"),
            Packed("data"),
        ],
    ),
    (
        "jobs",
        &[
            Text("response_id"),
            Text("project_id"),
            Text("payload"),
            Text("state"),
            NullText("lease_owner"),
            Int("lease_until_ms"),
            Int("created_at_ms"),
            Int("cancel_requested"),
        ],
    ),
    (
        "files",
        &[
            Text("response_id"),
            Text("id"),
            Text("project_id"),
            Text("filename"),
            Text("content_type"),
            Int("bytes"),
            Int("created_at"),
            Blob("data"),
        ],
    ),
    (
        "workspace_snapshots",
        &[
            Text("project_id"),
            Text("workspace_id"),
            Int("generation"),
            Int("bytes"),
            Blob("data"),
            NullText("note"),
            Int("updated_at"),
            Int("used_at"),
        ],
    ),
    (
        "response_items",
        &[
            Text("response_id"),
            Text("kind"),
            Int("position"),
            Text("project_id"),
            Text("item_id"),
            Text("item_json"),
            Int("created_at"),
        ],
    ),
    (
        "conversations",
        &[
            Text("id"),
            Text("project_id"),
            Int("created_at"),
            Text("metadata_json"),
            Int("item_changes"),
        ],
    ),
    (
        "conversation_items",
        &[
            Text("conversation_id"),
            Int("position"),
            Text("item_id"),
            Text("item_json"),
        ],
    ),
    (
        "connectors",
        &[
            Text("project_id"),
            Text("id"),
            Text("server_label"),
            Text("server_url"),
            Text("transport"),
            NullText("description"),
            Text("auth_kind"),
            NullText("authorization_sealed"),
            Text("headers_json"),
            NullText("allowed_tools_json"),
            NullText("require_approval_json"),
            Int("defer_loading"),
            NullInt("timeout_ms"),
            Int("enabled"),
            Text("sandbox_env_json"),
            Int("secret_version"),
            Text("status"),
            NullInt("last_checked_at"),
            NullText("last_error"),
            Int("created_at"),
            Int("updated_at"),
        ],
    ),
    (
        "connector_events",
        &[
            Text("id"),
            Text("project_id"),
            Text("connector_id"),
            Text("kind"),
            NullText("key_id"),
            Text("detail_json"),
            Int("created_at"),
        ],
    ),
    (
        "oauth_grants",
        &[
            Text("project_id"),
            Text("connector_id"),
            Text("issuer"),
            Text("token_endpoint"),
            Text("resource"),
            Text("client_id"),
            Text("auth_method"),
            Text("kind"),
            Text("redirect_uri"),
            NullText("scope"),
            NullText("client_secret_sealed"),
            NullText("refresh_token_sealed"),
            Int("created_at"),
            Int("updated_at"),
            NullText("access_token_sealed"),
            NullInt("access_expires_at"),
        ],
    ),
];

/// Rows copied per table (rows already at the destination are counted as copied but skipped).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CopyReport {
    /// `(table, rows read from the source, rows inserted at the destination)`.
    pub tables: Vec<(String, u64, u64)>,
}

/// Copies every row of `from` into `to`.
pub async fn copy(from: &SqliteStore, to: &PgStore) -> Result<CopyReport, StoreError> {
    let mut report = CopyReport::default();
    for &(table, columns) in TABLES {
        let (read, inserted) = copy_table(from, to, table, columns).await?;
        report.tables.push((table.to_owned(), read, inserted));
    }
    Ok(report)
}

async fn copy_table(
    from: &SqliteStore,
    to: &PgStore,
    table: &str,
    columns: &[Column],
) -> Result<(u64, u64), StoreError> {
    let names: Vec<&str> = columns.iter().map(|c| c.name()).collect();
    let select = format!(
        "SELECT rowid AS copy_rowid, {} FROM {table} WHERE rowid > $1 ORDER BY rowid LIMIT $2",
        names.join(", ")
    );
    let mut after = i64::MIN;
    let (mut read, mut inserted) = (0u64, 0u64);
    loop {
        let rows = sqlx::query(sqlx::AssertSqlSafe(select.as_str()))
            .bind(after)
            .bind(PAGE)
            .fetch_all(from.pool())
            .await
            .map_err(error::backend)?;
        let Some(last) = rows.last() else {
            return Ok((read, inserted));
        };
        after = last
            .try_get("copy_rowid")
            .map_err(|e| error::bad_column(table, "rowid", e))?;
        let mut values = rows
            .iter()
            .map(|row| decode(row, table, columns))
            .collect::<Result<Vec<_>, _>>()?;
        for value in values.iter_mut().flatten() {
            if let Value::Linked { project, id } = value {
                *value = Value::Text(from.linked_transcript_json(project, id).await?);
            } else if let Value::AgainstText {
                response_id,
                packed,
                what,
            } = value
            {
                let text = from.response_text(response_id).await?;
                let lines = text_pack::unpack_events(packed, &text)
                    .map_err(|e| StoreError::Corrupt(format!("{what} {e}")))?;
                *value = Value::Text(lines);
            }
        }
        let mut insert =
            QueryBuilder::<Postgres>::new(format!("INSERT INTO {table} ({}) ", names.join(", ")));
        insert.push_values(values, |mut row, values| {
            for value in values {
                match value {
                    Value::Text(v) => row.push_bind(v),
                    Value::NullText(v) => row.push_bind(v),
                    Value::Int(v) => row.push_bind(v),
                    Value::NullInt(v) => row.push_bind(v),
                    Value::Blob(v) => row.push_bind(v),
                    // Read whole above.
                    Value::Linked { .. } | Value::AgainstText { .. } => {
                        row.push_bind(None::<String>)
                    }
                };
            }
        });
        insert.push(" ON CONFLICT DO NOTHING");
        let done = insert
            .build()
            .execute(to.pool())
            .await
            .map_err(error::backend)?;
        read = read.saturating_add(rows.len() as u64);
        inserted = inserted.saturating_add(done.rows_affected());
    }
}

fn decode(row: &SqliteRow, table: &str, columns: &[Column]) -> Result<Vec<Value>, StoreError> {
    columns
        .iter()
        .map(|&column| {
            let bad = |e| error::bad_column(table, column.name(), e);
            Ok(match column {
                Text(n) => Value::Text(row.try_get(n).map_err(bad)?),
                NullText(n) => Value::NullText(row.try_get(n).map_err(bad)?),
                Int(n) => Value::Int(row.try_get(n).map_err(bad)?),
                NullInt(n) => Value::NullInt(row.try_get(n).map_err(bad)?),
                Blob(n) => Value::Blob(row.try_get(n).map_err(bad)?),
                Unlinked(_) => Value::NullText(None),
                Packed(n) => {
                    let value = row.try_get_raw(n).map_err(bad)?;
                    if value.type_info().name() == "BLOB" {
                        let packed: &[u8] = row.try_get(n).map_err(bad)?;
                        if text_pack::needs_text(packed) {
                            return Ok(Value::AgainstText {
                                response_id: row.try_get("response_id").map_err(bad)?,
                                packed: packed.to_vec(),
                                what: format!("{table}: {}", row_of(table, n, row)),
                            });
                        }
                        if transcript_link::is_linked(packed) {
                            return Ok(Value::Linked {
                                project: row.try_get("project_id").map_err(bad)?,
                                id: row.try_get("id").map_err(bad)?,
                            });
                        }
                        Value::Text(event_pack::unpack(packed).map_err(|e| {
                            StoreError::Corrupt(format!("{table}: {} {e}", row_of(table, n, row)))
                        })?)
                    } else {
                        Value::Text(row.try_get(n).map_err(bad)?)
                    }
                }
            })
        })
        .collect()
}

/// Which value a packed value that does not unpack is, for an error: a response's `column`,
/// or a chunk of `event_chunks`.
fn row_of(table: &str, column: &str, row: &SqliteRow) -> String {
    if table == "responses" {
        let id: String = row.try_get("id").unwrap_or_default();
        return format!("the {column} of {id}:");
    }
    let number = |column| row.try_get::<i64, _>(column).unwrap_or(-1);
    let response: String = row.try_get("response_id").unwrap_or_default();
    format!(
        "the chunk of {response}, sequence numbers {} to {}:",
        number("first_sequence"),
        number("last_sequence")
    )
}

#[cfg(test)]
mod tests {
    use super::TABLES;

    /// Every table of the SQLite schema is copied (a table added by a migration must be added
    /// here too).
    #[test]
    fn every_table_of_the_schema_is_copied() {
        let mut created: Vec<String> = crate::migrate::SQLITE
            .iter()
            .flat_map(|(_, _, sql)| sql.lines())
            .filter_map(|line| line.strip_prefix("CREATE TABLE "))
            .filter_map(|rest| rest.split_whitespace().next())
            .map(str::to_owned)
            .collect();
        created.sort();
        let mut copied: Vec<String> = TABLES.iter().map(|(t, _)| (*t).to_owned()).collect();
        copied.sort();
        assert_eq!(created, copied);
    }

    /// Every column of every table is copied (a column added by `ALTER TABLE` must be listed
    /// too: a key's `role` left behind would make every copied key an admin).
    #[tokio::test(flavor = "current_thread")]
    async fn every_column_of_the_schema_is_copied() -> Result<(), Box<dyn std::error::Error>> {
        let store = crate::SqliteStore::connect("sqlite::memory:").await?;
        for (table, columns) in TABLES {
            let mut schema: Vec<String> =
                sqlx::query_scalar("SELECT name FROM pragma_table_info($1)")
                    .bind(*table)
                    .fetch_all(store.pool())
                    .await?;
            schema.sort();
            let mut copied: Vec<String> = columns.iter().map(|c| c.name().to_owned()).collect();
            copied.sort();
            assert_eq!(schema, copied, "columns of {table}");
        }
        Ok(())
    }
}
