//! The schema migrations, embedded in the binary and run at open.
//!
//! The files live in `crates/store/migrations/` as `<version>_<description>.sql` (the sqlx-cli
//! layout, so `sqlx migrate` can also apply them). They are listed here by hand because
//! `sqlx::migrate!` needs sqlx's proc-macro feature, which would build a second SQLite for the
//! host; a unit test checks that this list and the folder agree.

use engine::store::StoreError;
use sqlx::SqlSafeStr;
use sqlx::migrate::{Migration, MigrationType, Migrator};
use sqlx::sqlite::SqlitePool;

/// `(version, description, sql)`, in version order.
pub(crate) const MIGRATIONS: &[(i64, &str, &str)] = &[
    (1, "init", include_str!("../migrations/0001_init.sql")),
    (2, "jobs", include_str!("../migrations/0002_jobs.sql")),
    (3, "files", include_str!("../migrations/0003_files.sql")),
    (4, "items", include_str!("../migrations/0004_items.sql")),
    (
        5,
        "connectors",
        include_str!("../migrations/0005_connectors.sql"),
    ),
];

/// Apply the migrations not yet applied to this database.
pub(crate) async fn run(pool: &SqlitePool) -> Result<(), StoreError> {
    let migrations = MIGRATIONS
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
        .run(pool)
        .await
        .map_err(|e| StoreError::Backend(format!("migration failed: {e}")))
}

#[cfg(test)]
mod tests {
    use super::MIGRATIONS;

    /// Every file in `migrations/` is embedded, with the version and description of its name.
    #[test]
    fn embedded_list_matches_the_migrations_folder() -> Result<(), Box<dyn std::error::Error>> {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("migrations");
        let mut on_disk = Vec::new();
        for entry in std::fs::read_dir(dir)? {
            let path = entry?.path();
            let name = path
                .file_stem()
                .and_then(|s| s.to_str())
                .ok_or("file name is not UTF-8")?;
            let (version, description) = name.split_once('_').ok_or("name has no '_'")?;
            on_disk.push((
                version.parse::<i64>()?,
                description.to_owned(),
                std::fs::read_to_string(&path)?,
            ));
        }
        on_disk.sort();
        let embedded: Vec<_> = MIGRATIONS
            .iter()
            .map(|&(v, d, sql)| (v, d.to_owned(), sql.to_owned()))
            .collect();
        assert_eq!(embedded, on_disk);
        Ok(())
    }
}
