//! The schema migrations of both back ends, embedded in the binary and run at open.
//!
//! The files live in `crates/store/migrations/sqlite/` and `crates/store/migrations/postgres/`
//! as `<version>_<description>.sql` (the sqlx-cli layout, so `sqlx migrate` can also apply
//! them). The two folders keep the same version numbers for the same change; the PostgreSQL
//! files differ only where the dialects do (`BYTEA` for `BLOB`, an explicit row order where
//! SQLite has its rowid). They are listed here by hand because `sqlx::migrate!` needs sqlx's
//! proc-macro feature, which would build a second SQLite for the host; a unit test checks that
//! these lists and the folders agree.
//!
//! On PostgreSQL, sqlx's migrator holds a session advisory lock (`pg_advisory_lock`, keyed by
//! the database name) while it applies migrations, so replicas starting together migrate
//! once: the others wait for the lock, then find every version applied.

use engine::store::StoreError;
use sqlx::SqlSafeStr;
use sqlx::migrate::{Migration, MigrationType, Migrator};

/// `(version, description, sql)`, in version order.
pub(crate) type MigrationList = &'static [(i64, &'static str, &'static str)];

/// The SQLite schema.
pub(crate) const SQLITE: MigrationList = &[
    (
        1,
        "init",
        include_str!("../migrations/sqlite/0001_init.sql"),
    ),
    (
        2,
        "jobs",
        include_str!("../migrations/sqlite/0002_jobs.sql"),
    ),
    (
        3,
        "files",
        include_str!("../migrations/sqlite/0003_files.sql"),
    ),
    (
        4,
        "items",
        include_str!("../migrations/sqlite/0004_items.sql"),
    ),
    (
        5,
        "connectors",
        include_str!("../migrations/sqlite/0005_connectors.sql"),
    ),
    (
        6,
        "replicas",
        include_str!("../migrations/sqlite/0006_replicas.sql"),
    ),
    (
        8,
        "workspace_snapshots",
        include_str!("../migrations/sqlite/0008_workspace_snapshots.sql"),
    ),
    (
        9,
        "oauth_tokens",
        include_str!("../migrations/sqlite/0009_oauth_tokens.sql"),
    ),
    (
        10,
        "model_turns",
        include_str!("../migrations/sqlite/0010_model_turns.sql"),
    ),
    (
        11,
        "event_chunks",
        include_str!("../migrations/sqlite/0011_event_chunks.sql"),
    ),
    (
        12,
        "packed_event_chunks",
        include_str!("../migrations/sqlite/0012_packed_event_chunks.sql"),
    ),
    (
        13,
        "dictionary_packed_event_chunks",
        include_str!("../migrations/sqlite/0013_dictionary_packed_event_chunks.sql"),
    ),
    (
        14,
        "packed_response_json",
        include_str!("../migrations/sqlite/0014_packed_response_json.sql"),
    ),
    (
        15,
        "live_responses_status",
        include_str!("../migrations/sqlite/0015_live_responses_status.sql"),
    ),
    (
        16,
        "purge_by_event_log_keys",
        include_str!("../migrations/sqlite/0016_purge_by_event_log_keys.sql"),
    ),
    (
        17,
        "packed_transcript_json",
        include_str!("../migrations/sqlite/0017_packed_transcript_json.sql"),
    ),
    (
        18,
        "linked_transcripts",
        include_str!("../migrations/sqlite/0018_linked_transcripts.sql"),
    ),
    (
        20,
        "conversation_item_changes",
        include_str!("../migrations/sqlite/0020_conversation_item_changes.sql"),
    ),
    (
        21,
        "response_text",
        include_str!("../migrations/sqlite/0021_response_text.sql"),
    ),
];

/// The PostgreSQL schema.
pub(crate) const POSTGRES: MigrationList = &[
    (
        1,
        "init",
        include_str!("../migrations/postgres/0001_init.sql"),
    ),
    (
        2,
        "jobs",
        include_str!("../migrations/postgres/0002_jobs.sql"),
    ),
    (
        3,
        "files",
        include_str!("../migrations/postgres/0003_files.sql"),
    ),
    (
        4,
        "items",
        include_str!("../migrations/postgres/0004_items.sql"),
    ),
    (
        5,
        "connectors",
        include_str!("../migrations/postgres/0005_connectors.sql"),
    ),
    (
        6,
        "replicas",
        include_str!("../migrations/postgres/0006_replicas.sql"),
    ),
    (
        8,
        "workspace_snapshots",
        include_str!("../migrations/postgres/0008_workspace_snapshots.sql"),
    ),
    (
        9,
        "oauth_tokens",
        include_str!("../migrations/postgres/0009_oauth_tokens.sql"),
    ),
    (
        10,
        "model_turns",
        include_str!("../migrations/postgres/0010_model_turns.sql"),
    ),
    (
        11,
        "event_chunks",
        include_str!("../migrations/postgres/0011_event_chunks.sql"),
    ),
    (
        16,
        "purge_by_event_log_keys",
        include_str!("../migrations/postgres/0016_purge_by_event_log_keys.sql"),
    ),
    (
        18,
        "linked_transcripts",
        include_str!("../migrations/postgres/0018_linked_transcripts.sql"),
    ),
    (
        19,
        "packed_transcripts",
        include_str!("../migrations/postgres/0019_packed_transcripts.sql"),
    ),
    (
        20,
        "conversation_item_changes",
        include_str!("../migrations/postgres/0020_conversation_item_changes.sql"),
    ),
];

/// A migrator over one of the lists above. Locking stays on (the default): on PostgreSQL that
/// is the advisory lock described in the module documentation.
pub(crate) fn migrator(list: MigrationList) -> Migrator {
    let migrations = list
        .iter()
        .map(|&(version, description, sql)| {
            Migration::new(
                version,
                description.into(),
                MigrationType::Simple,
                sql.into_sql_str(),
                false,
            )
        })
        .collect();
    Migrator::with_migrations(migrations)
}

/// A migration failure as a store error.
pub(crate) fn failed(e: sqlx::migrate::MigrateError) -> StoreError {
    StoreError::Backend(format!("migration failed: {e}"))
}

#[cfg(test)]
mod tests {
    use super::{MigrationList, POSTGRES, SQLITE};

    type Listing = Vec<(i64, String, String)>;

    fn on_disk(folder: &str) -> Result<Listing, Box<dyn std::error::Error>> {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("migrations")
            .join(folder);
        let mut found = Vec::new();
        for entry in std::fs::read_dir(dir)? {
            let path = entry?.path();
            let name = path
                .file_stem()
                .and_then(|s| s.to_str())
                .ok_or("file name is not UTF-8")?;
            let (version, description) = name.split_once('_').ok_or("name has no '_'")?;
            found.push((
                version.parse::<i64>()?,
                description.to_owned(),
                std::fs::read_to_string(&path)?,
            ));
        }
        found.sort();
        Ok(found)
    }

    fn embedded(list: MigrationList) -> Listing {
        list.iter()
            .map(|&(v, d, sql)| (v, d.to_owned(), sql.to_owned()))
            .collect()
    }

    /// Every file in `migrations/sqlite/` is embedded, with the version and description of its
    /// name.
    #[test]
    fn embedded_sqlite_list_matches_its_folder() -> Result<(), Box<dyn std::error::Error>> {
        assert_eq!(embedded(SQLITE), on_disk("sqlite")?);
        Ok(())
    }

    /// The same for `migrations/postgres/`.
    #[test]
    fn embedded_postgres_list_matches_its_folder() -> Result<(), Box<dyn std::error::Error>> {
        assert_eq!(embedded(POSTGRES), on_disk("postgres")?);
        Ok(())
    }
}
