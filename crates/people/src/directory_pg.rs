//! The embedded directory in PostgreSQL, for replicas sharing one database (the store's):
//! the same rows as the SQLite file of `directory.rs`, in a schema of its own
//! (`agentd_people`, table `people`), searched through a generated `tsvector` column under a
//! GIN index and ranked with `ts_rank` under the same weights as the SQLite `bm25()`: name 10
//! (A), title and company 5 (B), skills 3 (C), the rest 1 (D).
//!
//! Words are matched as SQLite's `unicode61` tokenizer matches them: whole, lower case, not
//! stemmed (the `simple` configuration). A hint matches in its own column only. The schema
//! is created at open, under a transaction-level advisory lock so replicas starting together
//! do not race; every connection of the pool has `search_path` set to it.

use sqlx::QueryBuilder;
use sqlx::Row as _;
use sqlx::postgres::{PgPool, Postgres};

use crate::backend::DirectoryError;
use crate::directory_row::{read_row, store_error};
use crate::query::{Hint, Search, words};
use crate::record::Person;

/// The PostgreSQL schema the directory's table lives in.
pub const SCHEMA_NAME: &str = "agentd_people";

/// Connections of the directory's pool (searches are short; imports are rare).
const CONNECTIONS: u32 = 4;

/// Serializes schema creation across replicas (a constant no other part of agentd uses).
const SCHEMA_LOCK: i64 = 0x6167_656e_7464_5050;

const SCHEMA: &[&str] = &[
    "CREATE SCHEMA IF NOT EXISTS agentd_people",
    "CREATE TABLE IF NOT EXISTS agentd_people.people (
        id          BIGSERIAL PRIMARY KEY,
        project     TEXT NOT NULL,
        person_id   TEXT NOT NULL,
        name        TEXT NOT NULL,
        title       TEXT NOT NULL DEFAULT '',
        company     TEXT NOT NULL DEFAULT '',
        department  TEXT NOT NULL DEFAULT '',
        location    TEXT NOT NULL DEFAULT '',
        education   TEXT NOT NULL DEFAULT '',
        skills      TEXT NOT NULL DEFAULT '',
        summary     TEXT NOT NULL DEFAULT '',
        extra       TEXT NOT NULL DEFAULT '',
        profile_url TEXT,
        updated_at  TEXT,
        imported_at BIGINT NOT NULL,
        fts tsvector GENERATED ALWAYS AS (
            setweight(to_tsvector('simple', name), 'A') ||
            setweight(to_tsvector('simple', title || ' ' || company), 'B') ||
            setweight(to_tsvector('simple', skills), 'C') ||
            setweight(to_tsvector('simple', department || ' ' || location || ' ' ||
                education || ' ' || summary || ' ' || extra), 'D')
        ) STORED,
        UNIQUE (project, person_id)
    )",
    "CREATE INDEX IF NOT EXISTS people_fts ON agentd_people.people USING GIN (fts)",
];

/// `ts_rank` weights `{D, C, B, A}`: as `bm25(people_fts, 10, 5, 5, 1, 1, 1, 3, 1, 1)`.
const WEIGHTS: &str = "'{0.1, 0.3, 0.5, 1.0}'";

#[derive(Clone, Debug)]
pub(crate) struct PgDirectory {
    pool: PgPool,
}

impl PgDirectory {
    pub(crate) async fn open(url: &str) -> Result<PgDirectory, DirectoryError> {
        let schema = pgschema::Schema {
            search_path: Some(SCHEMA_NAME),
            lock: SCHEMA_LOCK,
            statements: SCHEMA,
            connections: CONNECTIONS,
        };
        let pool = pgschema::open(url, &schema)
            .await
            .map_err(|err| match err {
                pgschema::OpenError::InvalidUrl => DirectoryError::Store(err.to_string()),
                pgschema::OpenError::Database(err) => store_error(err),
            })?;
        Ok(PgDirectory { pool })
    }

    pub(crate) fn pool(&self) -> &PgPool {
        &self.pool
    }

    /// The best matches in the search's project, best first: any word of the text, and
    /// every word of every hint in its column.
    pub(crate) async fn search(&self, search: &Search) -> Result<Vec<Person>, DirectoryError> {
        let text = search.words();
        let hints: Vec<(Hint, String)> = search
            .hints
            .iter()
            .flat_map(|(hint, value)| words(value).into_iter().map(move |word| (hint, word)))
            .collect();
        if text.is_empty() && hints.is_empty() {
            return Ok(Vec::new());
        }
        let mut sql = QueryBuilder::<Postgres>::new(
            "SELECT p.person_id, p.name, p.title, p.company, p.department, p.location,
                    p.education, p.skills, p.summary, p.extra, p.profile_url, p.updated_at
             FROM people p, (SELECT ",
        );
        if text.is_empty() {
            sql.push("NULL::tsquery");
        }
        for (i, word) in text.iter().enumerate() {
            if i > 0 {
                sql.push(" || ");
            }
            // Each word bound as plain text: nothing the model writes is read as an operator.
            sql.push("plainto_tsquery('simple', ")
                .push_bind(word.clone())
                .push(")");
        }
        sql.push(" AS q) m WHERE p.project = ")
            .push_bind(search.project.clone());
        if !text.is_empty() {
            sql.push(" AND p.fts @@ m.q");
        }
        for (hint, word) in hints {
            sql.push(format!(
                " AND to_tsvector('simple', p.{}) @@ ",
                column(hint)
            ))
            .push("plainto_tsquery('simple', ")
            .push_bind(word)
            .push(")");
        }
        if text.is_empty() {
            sql.push(" ORDER BY p.id");
        } else {
            sql.push(format!(
                " ORDER BY ts_rank({WEIGHTS}, p.fts, m.q) DESC, p.id"
            ));
        }
        sql.push(" LIMIT ")
            .push_bind(i64::try_from(search.limit).unwrap_or(i64::MAX));
        let rows = sql
            .build()
            .fetch_all(&self.pool)
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

/// The column a hint filters.
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
