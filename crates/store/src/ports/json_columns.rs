//! The JSON columns of `responses` as stored: TEXT, or packed in a BLOB on SQLite
//! (`event_pack.rs`, `transcript_pack.rs`; SQLite reports each value's own storage class), or
//! a transcript read as BYTEA on PostgreSQL, packed or the TEXT converted
//! (`transcript_column!`); read by every port that reads a response.

use engine::store::StoreError;
use sqlx::{Row as _, TypeInfo, ValueRef};

use super::DbRow;
use crate::error;
use crate::stored_json::StoredJsonRef;

/// The JSON `column` (`response_json` or `transcript_json`) of a row of `responses` as stored:
/// TEXT, or bytes (a BLOB: SQLite reports each value's own storage class; a BYTEA), packed or
/// the JSON's UTF-8 as its first byte tells ([`StoredJsonRef::from_bytes`]); `what` names the
/// response for an error.
pub(super) fn stored_json<'r>(
    row: &'r DbRow,
    column: &str,
    what: &str,
) -> Result<StoredJsonRef<'r>, StoreError> {
    let bad = |e| error::bad_column(what, column, e);
    let raw = row.try_get_raw(column).map_err(bad)?;
    if matches!(raw.type_info().name(), "BLOB" | "BYTEA") {
        StoredJsonRef::from_bytes(row.try_get(column).map_err(bad)?)
            .map_err(|e| StoreError::Corrupt(format!("{what}: its {column}: {e}")))
    } else {
        Ok(StoredJsonRef::Text(row.try_get(column).map_err(bad)?))
    }
}

/// The JSON `column` of a row of `responses` as JSON text, unpacked if it is packed.
pub(super) fn json_column<'r>(
    row: &'r DbRow,
    column: &str,
    what: &str,
) -> Result<std::borrow::Cow<'r, str>, StoreError> {
    json_text(stored_json(row, column, what)?, column, what)
}

/// `stored`, the value of `column`, as JSON text: unpacked if it is packed.
pub(super) fn json_text<'r>(
    stored: StoredJsonRef<'r>,
    column: &str,
    what: &str,
) -> Result<std::borrow::Cow<'r, str>, StoreError> {
    stored
        .text()
        .map_err(|e| StoreError::Corrupt(format!("{what}: its {column}: {e}")))
}
