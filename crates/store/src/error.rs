//! Mapping of backend failures to [`StoreError`].
//!
//! Messages name the failing record by id only: never key hashes, stored payloads or URLs
//! that may carry credentials.

use engine::store::StoreError;

/// Any sqlx failure as a backend error. sqlx messages carry the SQLite message and code, never
/// bound values.
pub(crate) fn backend(e: sqlx::Error) -> StoreError {
    StoreError::Backend(e.to_string())
}

/// A column of a stored row that cannot be read as the expected type.
pub(crate) fn bad_column(what: &str, column: &str, e: sqlx::Error) -> StoreError {
    match e {
        // Closed pool, I/O failure...: not the row's fault.
        sqlx::Error::ColumnDecode { .. } | sqlx::Error::ColumnNotFound(_) => {
            StoreError::Corrupt(format!("{what}: column {column}: {e}"))
        }
        other => backend(other),
    }
}

/// A stored JSON document that does not decode. Only the category and position of the
/// failure are reported: serde messages can quote the stored data.
pub(crate) fn bad_json(what: &str, column: &str, e: &serde_json::Error) -> StoreError {
    StoreError::Corrupt(format!(
        "{what}: {column} does not decode ({:?} error at line {} column {})",
        e.classify(),
        e.line(),
        e.column()
    ))
}
