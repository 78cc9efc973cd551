//! The local index in PostgreSQL, for replicas sharing one database (the store's): the same
//! documents and images as the SQLite file of `local.rs`, searched with `tsvector` columns and
//! ranked with `ts_rank` under the same weights (a title match weighs ten times a body match;
//! an image's alt text twice its title).
//!
//! Tables `search_documents` and `search_images` (prefixed: they share the database with the
//! store's tables), each with a generated `tsvector` column (`english` configuration: stemmed,
//! as SQLite's porter tokenizer stems) under a GIN index. They are created at open, under a
//! transaction-level advisory lock so replicas starting together do not race.

use sqlx::QueryBuilder;
use sqlx::Row;
use sqlx::postgres::{PgPool, Postgres};

use crate::backend::{BackendError, Hit, SearchQuery};
use crate::html::PageImage;
use crate::image::{ImageHit, ImageQuery};
use crate::local_text::{index_error, passage, passage_chars, push_dates, push_domains};

/// Connections of the index's pool (searches are short; adds are rare).
const CONNECTIONS: u32 = 4;

/// Serializes schema creation across replicas (any constant the store does not use).
const SCHEMA_LOCK: i64 = 0x6167_656e_7464_4958;

const SCHEMA: &[&str] = &[
    "CREATE TABLE IF NOT EXISTS search_documents (
        id           BIGSERIAL PRIMARY KEY,
        url          TEXT   NOT NULL UNIQUE,
        host         TEXT   NOT NULL DEFAULT '',
        title        TEXT   NOT NULL,
        body         TEXT   NOT NULL,
        date         TEXT,
        last_updated TEXT,
        added_at     BIGINT NOT NULL,
        fts tsvector GENERATED ALWAYS AS (
            setweight(to_tsvector('english', title), 'A') ||
            setweight(to_tsvector('english', body), 'B')
        ) STORED
    )",
    "CREATE INDEX IF NOT EXISTS search_documents_fts ON search_documents USING GIN (fts)",
    "CREATE TABLE IF NOT EXISTS search_images (
        id           BIGSERIAL PRIMARY KEY,
        document_url TEXT   NOT NULL,
        image_url    TEXT   NOT NULL,
        alt          TEXT   NOT NULL,
        title        TEXT   NOT NULL DEFAULT '',
        width        BIGINT,
        height       BIGINT,
        fts tsvector GENERATED ALWAYS AS (
            setweight(to_tsvector('english', alt), 'A') ||
            setweight(to_tsvector('english', title), 'B')
        ) STORED,
        UNIQUE (document_url, image_url)
    )",
    "CREATE INDEX IF NOT EXISTS search_images_fts ON search_images USING GIN (fts)",
];

/// `ts_rank` weights `{D, C, B, A}`: the title (A) ten times the body (B), as SQLite's
/// `bm25(documents_fts, 10.0, 1.0)`.
const DOCUMENT_WEIGHTS: &str = "'{0, 0, 0.1, 1.0}'";
/// The alt text (A) twice the title (B), as `bm25(images_fts, 1.0, 0.5)`.
const IMAGE_WEIGHTS: &str = "'{0, 0, 0.5, 1.0}'";

/// One document to store, prepared by `local.rs`.
pub(crate) struct Document<'a> {
    pub(crate) url: &'a str,
    pub(crate) host: String,
    pub(crate) title: &'a str,
    pub(crate) body: &'a str,
    pub(crate) date: Option<String>,
    pub(crate) last_updated: Option<String>,
    pub(crate) added_at: i64,
    pub(crate) images: Vec<(url::Url, &'a PageImage)>,
}

#[derive(Clone, Debug)]
pub(crate) struct PgIndex {
    pool: PgPool,
}

impl PgIndex {
    pub(crate) async fn open(url: &str) -> Result<PgIndex, BackendError> {
        let schema = pgschema::Schema {
            search_path: None,
            lock: SCHEMA_LOCK,
            statements: SCHEMA,
            connections: CONNECTIONS,
        };
        let pool = pgschema::open(url, &schema)
            .await
            .map_err(|err| match err {
                pgschema::OpenError::InvalidUrl => BackendError::Index(err.to_string()),
                pgschema::OpenError::Database(err) => index_error(err),
            })?;
        Ok(PgIndex { pool })
    }

    pub(crate) async fn close(&self) {
        self.pool.close().await;
    }

    pub(crate) async fn count(&self) -> Result<u64, BackendError> {
        self.count_of("SELECT COUNT(*) FROM search_documents").await
    }

    pub(crate) async fn image_count(&self) -> Result<u64, BackendError> {
        self.count_of("SELECT COUNT(*) FROM search_images").await
    }

    async fn count_of(&self, sql: &'static str) -> Result<u64, BackendError> {
        let count: i64 = sqlx::query_scalar(sql)
            .fetch_one(&self.pool)
            .await
            .map_err(index_error)?;
        Ok(u64::try_from(count).unwrap_or_default())
    }

    /// Adds or replaces a document and its images, in one transaction.
    pub(crate) async fn insert(&self, document: Document<'_>) -> Result<(), BackendError> {
        let mut tx = self.pool.begin().await.map_err(index_error)?;
        sqlx::query(
            "INSERT INTO search_documents (url, host, title, body, date, last_updated, added_at)
             VALUES ($1, $2, $3, $4, $5, $6, $7)
             ON CONFLICT (url) DO UPDATE SET
                host = excluded.host, title = excluded.title, body = excluded.body,
                date = excluded.date, last_updated = excluded.last_updated,
                added_at = excluded.added_at",
        )
        .bind(document.url)
        .bind(&document.host)
        .bind(document.title)
        .bind(document.body)
        .bind(&document.date)
        .bind(&document.last_updated)
        .bind(document.added_at)
        .execute(&mut *tx)
        .await
        .map_err(index_error)?;
        sqlx::query("DELETE FROM search_images WHERE document_url = $1")
            .bind(document.url)
            .execute(&mut *tx)
            .await
            .map_err(index_error)?;
        for (image_url, image) in &document.images {
            sqlx::query(
                "INSERT INTO search_images (document_url, image_url, alt, title, width, height)
                 VALUES ($1, $2, $3, $4, $5, $6)
                 ON CONFLICT (document_url, image_url) DO NOTHING",
            )
            .bind(document.url)
            .bind(image_url.as_str())
            .bind(&image.alt)
            .bind(image.title.as_deref().unwrap_or_default())
            .bind(image.width.map(i64::from))
            .bind(image.height.map(i64::from))
            .execute(&mut *tx)
            .await
            .map_err(index_error)?;
        }
        tx.commit().await.map_err(index_error)
    }

    pub(crate) async fn search(
        &self,
        query: &SearchQuery,
        terms: &[String],
    ) -> Result<Vec<Hit>, BackendError> {
        let mut sql = QueryBuilder::<Postgres>::new(
            "SELECT d.url, d.title, d.body, d.date, d.last_updated
             FROM search_documents d, (SELECT ",
        );
        push_any_term(&mut sql, terms);
        sql.push(" AS q) m WHERE d.fts @@ m.q");
        push_domains(&mut sql, &query.allow_domains, false);
        push_domains(&mut sql, &query.deny_domains, true);
        push_dates(&mut sql, query);
        sql.push(format!(
            " ORDER BY ts_rank({DOCUMENT_WEIGHTS}, d.fts, m.q) DESC, d.id LIMIT "
        ))
        .push_bind(i64::from(query.limit()));
        let rows = sql
            .build()
            .fetch_all(&self.pool)
            .await
            .map_err(index_error)?;
        let passage_chars = passage_chars(query);
        rows.iter()
            .map(|row| {
                let body: String = row.try_get("body").map_err(index_error)?;
                Ok(Hit {
                    url: row.try_get("url").map_err(index_error)?,
                    title: row.try_get("title").map_err(index_error)?,
                    snippet: passage(&body, terms, passage_chars),
                    date: row.try_get("date").map_err(index_error)?,
                    last_updated: row.try_get("last_updated").map_err(index_error)?,
                })
            })
            .collect()
    }

    pub(crate) async fn search_images(
        &self,
        query: &ImageQuery,
        terms: &[String],
    ) -> Result<Vec<ImageHit>, BackendError> {
        let mut sql = QueryBuilder::<Postgres>::new(
            "SELECT i.image_url, i.document_url, i.alt, i.width, i.height
             FROM search_images i JOIN search_documents d ON d.url = i.document_url, (SELECT ",
        );
        push_any_term(&mut sql, terms);
        sql.push(" AS q) m WHERE i.fts @@ m.q");
        push_domains(&mut sql, &query.allow_domains, false);
        push_domains(&mut sql, &query.deny_domains, true);
        sql.push(format!(
            " ORDER BY ts_rank({IMAGE_WEIGHTS}, i.fts, m.q) DESC, i.id LIMIT "
        ))
        .push_bind(i64::from(query.limit()));
        let rows = sql
            .build()
            .fetch_all(&self.pool)
            .await
            .map_err(index_error)?;
        rows.iter()
            .map(|row| {
                let pixels = |column: &str| -> Result<Option<u32>, BackendError> {
                    let value: Option<i64> = row.try_get(column).map_err(index_error)?;
                    Ok(value.and_then(|v| u32::try_from(v).ok()))
                };
                Ok(ImageHit {
                    image_url: row.try_get("image_url").map_err(index_error)?,
                    origin_url: row.try_get("document_url").map_err(index_error)?,
                    title: Some(row.try_get("alt").map_err(index_error)?),
                    width: pixels("width")?,
                    height: pixels("height")?,
                    format: None,
                })
            })
            .collect()
    }
}

/// A `tsquery` matching any of the terms (each bound as plain text, so no word is read as an
/// operator), as SQLite's `"a" OR "b"`.
fn push_any_term(sql: &mut QueryBuilder<Postgres>, terms: &[String]) {
    for (i, term) in terms.iter().enumerate() {
        if i > 0 {
            sql.push(" || ");
        }
        sql.push("plainto_tsquery('english', ")
            .push_bind(term.clone())
            .push(")");
    }
}
