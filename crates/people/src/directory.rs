//! The embedded directory: people the operator imported (`agentd people import`), per
//! project, in a SQLite file of its own (`<data_dir>/people.sqlite`, mode 0600), searched
//! with FTS5 and ranked with `bm25()` (name weighs 10, title and company 5, skills 3, the
//! rest 1); or, when PostgreSQL is the store, in that database (`directory_pg.rs`, the
//! same weights through `ts_rank`), so replicas share it.
//!
//! Tables: `people` (one row per project and record id; the allow-listed fields only,
//! cleaned on the way in) and the FTS5 table `people_fts` over its text, kept in step by
//! triggers. Importing a record id again replaces it.

use std::path::Path;
use std::str::FromStr;
use std::time::Duration;

use sqlx::sqlite::{SqliteConnectOptions, SqliteJournalMode, SqlitePool, SqlitePoolOptions};
use sqlx::{Connection as _, Row as _, SqliteConnection};

use crate::backend::{Directory, DirectoryError};
use crate::directory_pg::PgDirectory;
use crate::query::{Hint, Search, words};
use crate::record::Person;

/// How long a writer waits for another (the CLI importing while the server searches).
const BUSY_TIMEOUT: Duration = Duration::from_secs(10);

/// People read and written per transaction by `copy_into`.
const COPY_PAGE: i64 = 500;

pub use crate::directory_row::SOURCE;
use crate::directory_row::{Row, read_row, store_error};

const SCHEMA: &[&str] = &[
    "CREATE TABLE IF NOT EXISTS people (
        rowid INTEGER PRIMARY KEY,
        project TEXT NOT NULL,
        person_id TEXT NOT NULL,
        name TEXT NOT NULL,
        title TEXT NOT NULL DEFAULT '',
        company TEXT NOT NULL DEFAULT '',
        department TEXT NOT NULL DEFAULT '',
        location TEXT NOT NULL DEFAULT '',
        education TEXT NOT NULL DEFAULT '',
        skills TEXT NOT NULL DEFAULT '',
        summary TEXT NOT NULL DEFAULT '',
        extra TEXT NOT NULL DEFAULT '',
        profile_url TEXT,
        updated_at TEXT,
        imported_at INTEGER NOT NULL,
        UNIQUE (project, person_id)
    )",
    "CREATE VIRTUAL TABLE IF NOT EXISTS people_fts USING fts5(
        name, title, company, department, location, education, skills, summary, extra,
        content = 'people', content_rowid = 'rowid',
        tokenize = 'unicode61 remove_diacritics 2'
    )",
    "CREATE TRIGGER IF NOT EXISTS people_ai AFTER INSERT ON people BEGIN
        INSERT INTO people_fts(rowid, name, title, company, department, location, education, skills, summary, extra)
        VALUES (new.rowid, new.name, new.title, new.company, new.department, new.location, new.education, new.skills, new.summary, new.extra);
    END",
    "CREATE TRIGGER IF NOT EXISTS people_ad AFTER DELETE ON people BEGIN
        INSERT INTO people_fts(people_fts, rowid, name, title, company, department, location, education, skills, summary, extra)
        VALUES ('delete', old.rowid, old.name, old.title, old.company, old.department, old.location, old.education, old.skills, old.summary, old.extra);
    END",
    "CREATE TRIGGER IF NOT EXISTS people_au AFTER UPDATE ON people BEGIN
        INSERT INTO people_fts(people_fts, rowid, name, title, company, department, location, education, skills, summary, extra)
        VALUES ('delete', old.rowid, old.name, old.title, old.company, old.department, old.location, old.education, old.skills, old.summary, old.extra);
        INSERT INTO people_fts(rowid, name, title, company, department, location, education, skills, summary, extra)
        VALUES (new.rowid, new.name, new.title, new.company, new.department, new.location, new.education, new.skills, new.summary, new.extra);
    END",
];

/// The embedded people directory: one SQLite file, or tables in the PostgreSQL database
/// replicas share. Cheap to clone (a pool).
#[derive(Clone, Debug)]
pub struct LocalDirectory {
    db: Db,
}

#[derive(Clone, Debug)]
enum Db {
    Sqlite(SqlitePool),
    Postgres(PgDirectory),
}

/// Inserts (or replaces, by id) one row; the same statement on both back ends.
macro_rules! upsert_row {
    ($tx:expr, $project:expr, $row:expr, $now:expr) => {{
        let row = $row;
        sqlx::query(
            "INSERT INTO people (project, person_id, name, title, company, department,
                location, education, skills, summary, extra, profile_url, updated_at, imported_at)
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14)
             ON CONFLICT (project, person_id) DO UPDATE SET
                name = excluded.name, title = excluded.title, company = excluded.company,
                department = excluded.department, location = excluded.location,
                education = excluded.education, skills = excluded.skills,
                summary = excluded.summary, extra = excluded.extra,
                profile_url = excluded.profile_url,
                updated_at = excluded.updated_at, imported_at = excluded.imported_at",
        )
        .bind($project)
        .bind(row.id)
        .bind(row.name)
        .bind(row.title)
        .bind(row.company)
        .bind(row.department)
        .bind(row.location)
        .bind(row.education)
        .bind(row.skills)
        .bind(row.summary)
        .bind(row.extra)
        .bind(row.profile_url)
        .bind(row.updated_at)
        .bind($now)
        .execute(&mut *$tx)
        .await
        .map_err(store_error)
    }};
}

impl LocalDirectory {
    /// Opens (creating it, mode 0600, and its directory if needed) the file at `path`.
    pub async fn open(path: &Path) -> Result<LocalDirectory, DirectoryError> {
        if let Some(dir) = path.parent().filter(|dir| !dir.as_os_str().is_empty()) {
            tokio::fs::create_dir_all(dir).await.map_err(|err| {
                DirectoryError::Store(format!("cannot create {}: {err}", dir.display()))
            })?;
        }
        create_private(path).await?;
        let options = SqliteConnectOptions::new()
            .filename(path)
            .create_if_missing(true)
            .journal_mode(SqliteJournalMode::Wal)
            .busy_timeout(BUSY_TIMEOUT);
        // Schema and WAL are set up on a connection of their own before the pool opens
        // others (a pool racing a brand-new file into WAL answered "database is locked").
        let mut setup = SqliteConnection::connect_with(&options)
            .await
            .map_err(store_error)?;
        create_schema(&mut setup).await?;
        setup.close().await.map_err(store_error)?;
        let pool = SqlitePoolOptions::new()
            .max_connections(4)
            .idle_timeout(None)
            .max_lifetime(None)
            .connect_lazy_with(options);
        Ok(LocalDirectory {
            db: Db::Sqlite(pool),
        })
    }

    /// Opens (creating its schema and table if needed) the directory in a PostgreSQL
    /// database (`postgres://…`, TLS as its `sslmode` says): every replica sharing the
    /// database searches the same people.
    pub async fn open_postgres(url: &str) -> Result<LocalDirectory, DirectoryError> {
        Ok(LocalDirectory {
            db: Db::Postgres(PgDirectory::open(url).await?),
        })
    }

    /// A directory in memory for as long as the value (tests).
    pub async fn in_memory() -> Result<LocalDirectory, DirectoryError> {
        let options = SqliteConnectOptions::from_str("sqlite::memory:").map_err(store_error)?;
        let pool = SqlitePoolOptions::new()
            .max_connections(1)
            .min_connections(1)
            .idle_timeout(None)
            .max_lifetime(None)
            .connect_with(options)
            .await
            .map_err(store_error)?;
        let mut connection = pool.acquire().await.map_err(store_error)?;
        create_schema(&mut connection).await?;
        drop(connection);
        Ok(LocalDirectory {
            db: Db::Sqlite(pool),
        })
    }

    pub async fn close(&self) {
        match &self.db {
            Db::Sqlite(pool) => pool.close().await,
            Db::Postgres(directory) => directory.pool().close().await,
        }
    }

    /// How many people `project` holds.
    pub async fn count(&self, project: &str) -> Result<u64, DirectoryError> {
        let sql = "SELECT COUNT(*) FROM people WHERE project = $1";
        let count: i64 = match &self.db {
            Db::Sqlite(pool) => sqlx::query_scalar(sql).bind(project).fetch_one(pool).await,
            Db::Postgres(directory) => {
                sqlx::query_scalar(sql)
                    .bind(project)
                    .fetch_one(directory.pool())
                    .await
            }
        }
        .map_err(store_error)?;
        Ok(u64::try_from(count).unwrap_or_default())
    }

    /// Removes every person of `project` (the project is being deleted); how many there were.
    pub async fn delete_project(&self, project: &str) -> Result<u64, DirectoryError> {
        let sql = "DELETE FROM people WHERE project = $1";
        match &self.db {
            Db::Sqlite(pool) => sqlx::query(sql)
                .bind(project)
                .execute(pool)
                .await
                .map(|done| done.rows_affected()),
            Db::Postgres(directory) => sqlx::query(sql)
                .bind(project)
                .execute(directory.pool())
                .await
                .map(|done| done.rows_affected()),
        }
        .map_err(store_error)
    }

    /// Whether `project` holds anyone (cheap: one index probe).
    pub async fn has_people(&self, project: &str) -> Result<bool, DirectoryError> {
        let sql = "SELECT EXISTS (SELECT 1 FROM people WHERE project = $1)";
        match &self.db {
            Db::Sqlite(pool) => sqlx::query_scalar(sql).bind(project).fetch_one(pool).await,
            Db::Postgres(directory) => {
                sqlx::query_scalar(sql)
                    .bind(project)
                    .fetch_one(directory.pool())
                    .await
            }
        }
        .map_err(store_error)
    }

    /// Adds (or replaces, by id) people of `project` in one transaction; with `replace`,
    /// the project's other people are removed first.
    pub async fn import(
        &self,
        project: &str,
        people: &[Person],
        replace: bool,
    ) -> Result<u64, DirectoryError> {
        let now = chrono::Utc::now().timestamp_millis();
        let delete = "DELETE FROM people WHERE project = $1";
        match &self.db {
            Db::Sqlite(pool) => {
                // IMMEDIATE: take the write lock (waiting up to the busy timeout) before the
                // first statement, so an import next to a running server queues instead of
                // failing.
                let mut tx = pool
                    .begin_with("BEGIN IMMEDIATE")
                    .await
                    .map_err(store_error)?;
                if replace {
                    sqlx::query(delete)
                        .bind(project)
                        .execute(&mut *tx)
                        .await
                        .map_err(store_error)?;
                }
                for person in people {
                    upsert_row!(tx, project, Row::of(person), now)?;
                }
                tx.commit().await.map_err(store_error)?;
            }
            Db::Postgres(directory) => {
                let mut tx = directory.pool().begin().await.map_err(store_error)?;
                if replace {
                    sqlx::query(delete)
                        .bind(project)
                        .execute(&mut *tx)
                        .await
                        .map_err(store_error)?;
                }
                for person in people {
                    upsert_row!(tx, project, Row::of(person), now)?;
                }
                tx.commit().await.map_err(store_error)?;
            }
        }
        Ok(people.len() as u64)
    }

    /// The best matches in the search's project, best first.
    pub async fn search(&self, search: &Search) -> Result<Vec<Person>, DirectoryError> {
        let pool = match &self.db {
            Db::Sqlite(pool) => pool,
            Db::Postgres(directory) => return directory.search(search).await,
        };
        let Some(expression) = match_expression(search) else {
            return Ok(Vec::new());
        };
        let rows = sqlx::query(
            "SELECT p.person_id, p.name, p.title, p.company, p.department, p.location,
                    p.education, p.skills, p.summary, p.extra, p.profile_url, p.updated_at
             FROM people_fts JOIN people p ON p.rowid = people_fts.rowid
             WHERE people_fts MATCH ? AND p.project = ?
             ORDER BY bm25(people_fts, 10.0, 5.0, 5.0, 1.0, 1.0, 1.0, 3.0, 1.0, 1.0)
             LIMIT ?",
        )
        .bind(expression)
        .bind(&search.project)
        .bind(search.limit as i64)
        .fetch_all(pool)
        .await
        .map_err(store_error)?;
        let mut people = Vec::with_capacity(rows.len());
        for row in &rows {
            if let Some(person) = read_row!(row)?.person() {
                people.push(person);
            }
        }
        Ok(people)
    }
}

impl LocalDirectory {
    /// Copies every person of every project of this directory (a SQLite file) into `to`
    /// (`agentd store copy`), keeping each row's project, id and import time; people already
    /// at `to` are replaced by id, so an interrupted copy can be run again. The destination's
    /// own search index (FTS5 triggers, or the generated `tsvector` on PostgreSQL) follows
    /// the inserted rows. Returns how many people were copied.
    pub async fn copy_into(&self, to: &LocalDirectory) -> Result<u64, DirectoryError> {
        let Db::Sqlite(source) = &self.db else {
            return Err(DirectoryError::Store(
                "a directory copy reads from a SQLite file".to_owned(),
            ));
        };
        let mut after = 0_i64;
        let mut copied = 0_u64;
        loop {
            let rows = sqlx::query(
                "SELECT rowid, project, person_id, name, title, company, department, location,
                        education, skills, summary, extra, profile_url, updated_at, imported_at
                 FROM people WHERE rowid > ? ORDER BY rowid LIMIT ?",
            )
            .bind(after)
            .bind(COPY_PAGE)
            .fetch_all(source)
            .await
            .map_err(store_error)?;
            let Some(last) = rows.last() else {
                return Ok(copied);
            };
            after = last.try_get("rowid").map_err(store_error)?;
            let mut page = Vec::with_capacity(rows.len());
            for row in &rows {
                let project: String = row.try_get("project").map_err(store_error)?;
                let imported_at: i64 = row.try_get("imported_at").map_err(store_error)?;
                page.push((project, read_row!(row)?, imported_at));
            }
            copied += page.len() as u64;
            match &to.db {
                Db::Sqlite(pool) => {
                    let mut tx = pool
                        .begin_with("BEGIN IMMEDIATE")
                        .await
                        .map_err(store_error)?;
                    for (project, row, imported_at) in page {
                        upsert_row!(tx, project, row, imported_at)?;
                    }
                    tx.commit().await.map_err(store_error)?;
                }
                Db::Postgres(directory) => {
                    let mut tx = directory.pool().begin().await.map_err(store_error)?;
                    for (project, row, imported_at) in page {
                        upsert_row!(tx, project, row, imported_at)?;
                    }
                    tx.commit().await.map_err(store_error)?;
                }
            }
        }
    }
}

#[async_trait::async_trait]
impl Directory for LocalDirectory {
    fn name(&self) -> &'static str {
        SOURCE
    }

    async fn search(&self, search: &Search) -> Result<Vec<Person>, DirectoryError> {
        LocalDirectory::search(self, search).await
    }
}

/// The FTS5 column a hint filters.
fn column(hint: Hint) -> &'static str {
    match hint {
        Hint::Name => "name",
        Hint::Title => "title",
        Hint::Company => "company",
        Hint::School => "education",
        Hint::Skill => "skills",
        Hint::Location => "location",
    }
}

fn quoted(word: &str) -> String {
    format!("\"{}\"", word.replace('"', "\"\""))
}

/// Any word of the text, and every word of every hint in its column:
/// `("head" OR "design") AND title : "designer"`. Every word is quoted, so nothing the
/// model writes is read as FTS5 syntax. `None` when there is nothing to match.
fn match_expression(search: &Search) -> Option<String> {
    let mut clauses = Vec::new();
    let text = search.words();
    if !text.is_empty() {
        let any: Vec<String> = text.iter().map(|word| quoted(word)).collect();
        clauses.push(format!("({})", any.join(" OR ")));
    }
    for (hint, value) in search.hints.iter() {
        for word in words(value) {
            clauses.push(format!("{} : {}", column(hint), quoted(&word)));
        }
    }
    (!clauses.is_empty()).then(|| clauses.join(" AND "))
}

async fn create_schema(connection: &mut SqliteConnection) -> Result<(), DirectoryError> {
    let mut tx = connection.begin().await.map_err(store_error)?;
    for statement in SCHEMA {
        sqlx::query(*statement)
            .execute(&mut *tx)
            .await
            .map_err(store_error)?;
    }
    tx.commit().await.map_err(store_error)
}

/// Creates the file readable by its owner only (SQLite gives its `-wal` and `-shm` files
/// the same mode); an existing file is narrowed to 0600 too.
async fn create_private(path: &Path) -> Result<(), DirectoryError> {
    let io = |err: std::io::Error| DirectoryError::Store(format!("{}: {err}", path.display()));
    let mut options = tokio::fs::OpenOptions::new();
    options.create(true).append(true);
    #[cfg(unix)]
    options.mode(0o600);
    options.open(path).await.map_err(io)?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt as _;
        tokio::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600))
            .await
            .map_err(io)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::query::Hints;

    #[test]
    fn expressions_quote_every_word() {
        let search = Search {
            text: "head of \"design\" NEAR(x)".into(),
            hints: Hints {
                title: Some("Design Lead".into()),
                school: Some("ETH".into()),
                ..Hints::default()
            },
            limit: 5,
            project: "p".into(),
        };
        assert_eq!(
            match_expression(&search).unwrap(),
            "(\"head\" OR \"of\" OR \"design\" OR \"near\" OR \"x\") AND title : \"design\" \
             AND title : \"lead\" AND education : \"eth\""
        );
        assert_eq!(match_expression(&Search::default()), None);
    }
}
