//! The embedded local index: documents the operator added (`agentd index add URL|PATH…`)
//! in a SQLite file, searched with FTS5 and ranked with `bm25()` (title matches weigh
//! more than body matches).
//!
//! Tables: `documents` (one row per URL: host, title, text, dates) and the FTS5 table
//! `documents_fts` over its title and text, kept in step by triggers; `images` (the
//! `<img>` elements with alt text of HTML pages: image URL, alt, title, size) and
//! `images_fts` over alt and title, for `image_search`. Every table is created with
//! `IF NOT EXISTS`, so an index file from before images existed gains them when opened
//! (its pages have images once added again). Adding a URL again replaces its document
//! and its images. Domain and date filters are applied in SQL, so a narrow filter
//! still finds matches ranked below many others.

use std::path::{Path, PathBuf};
use std::str::FromStr;
use std::time::Duration;

use netguard::Policy;
use sqlx::sqlite::{SqliteConnectOptions, SqliteJournalMode, SqlitePool, SqlitePoolOptions};
use sqlx::{Connection as _, QueryBuilder, Row, Sqlite, SqliteConnection};

use crate::backend::{Backend, BackendError, Hit, SearchQuery};
use crate::filter::{normalize_date, url_host};
use crate::image::{ImageBackend, ImageHit, ImageQuery};
use crate::local_text::{
    index_error, passage, passage_chars, push_dates, push_domains, query_terms, today,
};
use crate::{html, http};

/// The largest document (file or fetched page) the index takes.
pub const MAX_DOCUMENT_BYTES: usize = 10 * 1024 * 1024;

/// File extensions taken when a directory is added (a file named directly is taken
/// whatever its extension, if it is UTF-8 text).
const TEXT_EXTENSIONS: &[&str] = &["txt", "text", "md", "markdown", "mdx", "rst", "adoc"];
const HTML_EXTENSIONS: &[&str] = &["html", "htm", "xhtml"];

/// How long a writer waits for another (the CLI adding while the server searches).
const BUSY_TIMEOUT: Duration = Duration::from_secs(10);

const SCHEMA: &[&str] = &[
    "CREATE TABLE IF NOT EXISTS documents (
        id INTEGER PRIMARY KEY,
        url TEXT NOT NULL UNIQUE,
        host TEXT NOT NULL DEFAULT '',
        title TEXT NOT NULL,
        body TEXT NOT NULL,
        date TEXT,
        last_updated TEXT,
        added_at INTEGER NOT NULL
    )",
    "CREATE VIRTUAL TABLE IF NOT EXISTS documents_fts USING fts5(
        title, body,
        content = 'documents', content_rowid = 'id',
        tokenize = 'porter unicode61 remove_diacritics 2'
    )",
    "CREATE TRIGGER IF NOT EXISTS documents_ai AFTER INSERT ON documents BEGIN
        INSERT INTO documents_fts(rowid, title, body) VALUES (new.id, new.title, new.body);
    END",
    "CREATE TRIGGER IF NOT EXISTS documents_ad AFTER DELETE ON documents BEGIN
        INSERT INTO documents_fts(documents_fts, rowid, title, body)
            VALUES ('delete', old.id, old.title, old.body);
    END",
    "CREATE TRIGGER IF NOT EXISTS documents_au AFTER UPDATE ON documents BEGIN
        INSERT INTO documents_fts(documents_fts, rowid, title, body)
            VALUES ('delete', old.id, old.title, old.body);
        INSERT INTO documents_fts(rowid, title, body) VALUES (new.id, new.title, new.body);
    END",
    "CREATE TABLE IF NOT EXISTS images (
        id INTEGER PRIMARY KEY,
        document_url TEXT NOT NULL,
        image_url TEXT NOT NULL,
        alt TEXT NOT NULL,
        title TEXT NOT NULL DEFAULT '',
        width INTEGER,
        height INTEGER,
        UNIQUE (document_url, image_url)
    )",
    "CREATE VIRTUAL TABLE IF NOT EXISTS images_fts USING fts5(
        alt, title,
        content = 'images', content_rowid = 'id',
        tokenize = 'porter unicode61 remove_diacritics 2'
    )",
    "CREATE TRIGGER IF NOT EXISTS images_ai AFTER INSERT ON images BEGIN
        INSERT INTO images_fts(rowid, alt, title) VALUES (new.id, new.alt, new.title);
    END",
    "CREATE TRIGGER IF NOT EXISTS images_ad AFTER DELETE ON images BEGIN
        INSERT INTO images_fts(images_fts, rowid, alt, title) VALUES ('delete', old.id, old.alt, old.title);
    END",
];

/// The local search index: one SQLite file, or tables in the PostgreSQL database replicas share
/// (`local_pg.rs`). Cheap to clone (a pool).
#[derive(Clone, Debug)]
pub struct LocalIndex {
    db: Db,
}

#[derive(Clone, Debug)]
enum Db {
    Sqlite(SqlitePool),
    Postgres(crate::local_pg::PgIndex),
}

/// One document as stored.
struct NewDocument<'a> {
    url: &'a str,
    title: &'a str,
    body: &'a str,
    date: Option<String>,
    last_updated: Option<String>,
    images: Vec<html::PageImage>,
}

impl LocalIndex {
    /// Opens (creating it and its directory if needed) the index file at `path`, e.g.
    /// `<data_dir>/index.sqlite`.
    pub async fn open(path: &Path) -> Result<LocalIndex, BackendError> {
        if let Some(dir) = path.parent().filter(|dir| !dir.as_os_str().is_empty()) {
            tokio::fs::create_dir_all(dir).await.map_err(|err| {
                BackendError::Index(format!("cannot create {}: {err}", dir.display()))
            })?;
        }
        let options = SqliteConnectOptions::new()
            .filename(path)
            .create_if_missing(true)
            .journal_mode(SqliteJournalMode::Wal)
            .busy_timeout(BUSY_TIMEOUT);
        // The schema (and, for a new file, the switch to WAL) is set up on one connection of
        // its own before the pool opens any other: a pool opening connections while one of
        // them turned a brand-new file to WAL and created the tables raced them into
        // "database is locked" at start-up.
        let mut setup = SqliteConnection::connect_with(&options)
            .await
            .map_err(index_error)?;
        create_schema(&mut setup).await?;
        setup.close().await.map_err(index_error)?;
        let pool = SqlitePoolOptions::new()
            .max_connections(4)
            .idle_timeout(None)
            .max_lifetime(None)
            .connect_lazy_with(options);
        Ok(LocalIndex {
            db: Db::Sqlite(pool),
        })
    }

    /// Opens (creating its tables if needed) the index in a PostgreSQL database (`postgres://…`,
    /// TLS as its `sslmode` says): every replica sharing the database searches the same index.
    pub async fn open_postgres(url: &str) -> Result<LocalIndex, BackendError> {
        Ok(LocalIndex {
            db: Db::Postgres(crate::local_pg::PgIndex::open(url).await?),
        })
    }

    /// An index that lives in memory for as long as the value (tests, demos).
    pub async fn in_memory() -> Result<LocalIndex, BackendError> {
        let options = SqliteConnectOptions::from_str("sqlite::memory:").map_err(index_error)?;
        // One connection, never closed: each in-memory connection is a database of its own.
        let pool = SqlitePoolOptions::new()
            .max_connections(1)
            .min_connections(1)
            .idle_timeout(None)
            .max_lifetime(None)
            .connect_with(options)
            .await
            .map_err(index_error)?;
        let mut connection = pool.acquire().await.map_err(index_error)?;
        create_schema(&mut connection).await?;
        drop(connection);
        Ok(LocalIndex {
            db: Db::Sqlite(pool),
        })
    }

    /// Closes the pool, waiting for queries in flight.
    pub async fn close(&self) {
        match &self.db {
            Db::Sqlite(pool) => pool.close().await,
            Db::Postgres(index) => index.close().await,
        }
    }

    /// How many documents the index holds.
    pub async fn count(&self) -> Result<u64, BackendError> {
        let pool = match &self.db {
            Db::Sqlite(pool) => pool,
            Db::Postgres(index) => return index.count().await,
        };
        let count: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM documents")
            .fetch_one(pool)
            .await
            .map_err(index_error)?;
        Ok(u64::try_from(count).unwrap_or_default())
    }

    /// Adds (or replaces) one document. `date` is its publication date in any common
    /// form (`2025-03-01`, `03/01/2025`, RFC 3339…); its last-updated date is today.
    pub async fn add_document(
        &self,
        url: &str,
        title: &str,
        text: &str,
        date: Option<&str>,
    ) -> Result<(), BackendError> {
        let date = match date {
            Some(text) => Some(
                normalize_date(text)
                    .ok_or_else(|| BackendError::Document(format!("\"{text}\" is not a date")))?,
            ),
            None => None,
        };
        self.insert(NewDocument {
            url,
            title,
            body: text,
            date,
            last_updated: Some(today().format("%Y-%m-%d").to_string()),
            images: Vec::new(),
        })
        .await
    }

    /// Adds a file, or every text, Markdown and HTML file under a directory (hidden
    /// entries skipped). HTML becomes text; the title is the page's `<title>` or the
    /// first Markdown heading or the file name; the URL is the file's `file://` URL.
    /// Returns the URLs added, in order.
    pub async fn add_path(&self, path: &Path) -> Result<Vec<String>, BackendError> {
        let metadata = tokio::fs::metadata(path)
            .await
            .map_err(|err| BackendError::Document(format!("{}: {err}", path.display())))?;
        let files = if metadata.is_dir() {
            list_files(path).await?
        } else {
            vec![path.to_path_buf()]
        };
        let mut added = Vec::with_capacity(files.len());
        for file in files {
            added.push(self.add_file(&file).await?);
        }
        Ok(added)
    }

    async fn add_file(&self, path: &Path) -> Result<String, BackendError> {
        let shown = path.display();
        let metadata = tokio::fs::metadata(path)
            .await
            .map_err(|err| BackendError::Document(format!("{shown}: {err}")))?;
        if metadata.len() > MAX_DOCUMENT_BYTES as u64 {
            return Err(BackendError::Document(format!(
                "{shown} is larger than {MAX_DOCUMENT_BYTES} bytes"
            )));
        }
        let bytes = tokio::fs::read(path)
            .await
            .map_err(|err| BackendError::Document(format!("{shown}: {err}")))?;
        let text = String::from_utf8(bytes)
            .map_err(|_| BackendError::Document(format!("{shown} is not UTF-8 text")))?;
        let absolute = tokio::fs::canonicalize(path)
            .await
            .map_err(|err| BackendError::Document(format!("{shown}: {err}")))?;
        let url = url::Url::from_file_path(&absolute)
            .map_err(|()| BackendError::Document(format!("{shown} has no file URL")))?
            .to_string();
        let last_updated = metadata.modified().ok().map(|time| {
            chrono::DateTime::<chrono::Utc>::from(time)
                .format("%Y-%m-%d")
                .to_string()
        });
        let stem = absolute
            .file_stem()
            .map(|stem| stem.to_string_lossy().into_owned())
            .unwrap_or_default();
        let document = if has_extension(path, HTML_EXTENSIONS) {
            Page::from_html(&text)
        } else {
            Page::from_text(&text)
        };
        self.insert(NewDocument {
            url: &url,
            title: document.title.as_deref().unwrap_or(&stem),
            body: &document.body,
            date: document.date,
            last_updated,
            images: document.images,
        })
        .await?;
        Ok(url)
    }

    /// A client for [`LocalIndex::add_url`]: from `policy.client_builder()`, with the
    /// back-end timeout (20 s), and a TLS provider installed.
    pub fn guarded_client(policy: &Policy) -> Result<reqwest::Client, BackendError> {
        http::client(policy)
    }

    /// Fetches a page through the network guard and adds it. `client` must come from
    /// `policy.client_builder()` (e.g. [`LocalIndex::guarded_client`]): it checks host
    /// names and redirects; `policy` checks the first URL here. HTML becomes text;
    /// `text/*` is taken as it is; at most [`MAX_DOCUMENT_BYTES`]. Returns the URL.
    pub async fn add_url(
        &self,
        policy: &Policy,
        client: &reqwest::Client,
        url: &str,
    ) -> Result<String, BackendError> {
        let target = policy
            .check_url(url)
            .map_err(|blocked| BackendError::Blocked(blocked.0))?;
        let response = client
            .get(target.clone())
            .header(
                reqwest::header::ACCEPT,
                "text/html, text/markdown;q=0.9, text/plain;q=0.9, */*;q=0.1",
            )
            .send()
            .await
            .map_err(http::transport)?;
        let status = response.status();
        if !status.is_success() {
            return Err(BackendError::Status {
                status: status.as_u16(),
                message: String::new(),
            });
        }
        let header = |name: reqwest::header::HeaderName| {
            response
                .headers()
                .get(name)
                .and_then(|value| value.to_str().ok())
                .map(str::to_owned)
        };
        let content_type = header(reqwest::header::CONTENT_TYPE)
            .unwrap_or_default()
            .to_ascii_lowercase();
        let last_modified = header(reqwest::header::LAST_MODIFIED)
            .as_deref()
            .and_then(normalize_date);
        let bytes = http::read_capped(response, MAX_DOCUMENT_BYTES).await?;
        let text = String::from_utf8_lossy(&bytes);
        let looks_html = text.trim_start().starts_with('<');
        let document = if content_type.contains("html") || (content_type.is_empty() && looks_html) {
            Page::from_html(&text)
        } else if content_type.is_empty() || content_type.starts_with("text/") {
            Page::from_text(&text)
        } else {
            let kind = content_type.split(';').next().unwrap_or_default();
            return Err(BackendError::Document(format!(
                "{url} is {kind}, not text or HTML"
            )));
        };
        let url = target.to_string();
        self.insert(NewDocument {
            url: &url,
            title: document.title.as_deref().unwrap_or(&url),
            body: &document.body,
            date: document.date,
            last_updated: last_modified.or_else(|| Some(today().format("%Y-%m-%d").to_string())),
            images: document.images,
        })
        .await?;
        Ok(url)
    }

    async fn insert(&self, document: NewDocument<'_>) -> Result<(), BackendError> {
        if document.body.trim().is_empty() && document.title.trim().is_empty() {
            return Err(BackendError::Document(format!(
                "{} has no text",
                document.url
            )));
        }
        let added_at = chrono::Utc::now().timestamp_millis();
        let images = web_images(document.url, &document.images);
        let pool = match &self.db {
            Db::Sqlite(pool) => pool,
            Db::Postgres(index) => {
                return index
                    .insert(crate::local_pg::Document {
                        url: document.url,
                        host: url_host(document.url).unwrap_or_default(),
                        title: document.title.trim(),
                        body: document.body,
                        date: document.date,
                        last_updated: document.last_updated,
                        added_at,
                        images,
                    })
                    .await;
            }
        };
        // IMMEDIATE: the write lock is taken (waiting up to the busy timeout) before the first
        // statement, so concurrent writers queue instead of failing to upgrade a read.
        let mut tx = pool
            .begin_with("BEGIN IMMEDIATE")
            .await
            .map_err(index_error)?;
        sqlx::query(
            "INSERT INTO documents (url, host, title, body, date, last_updated, added_at)
             VALUES (?, ?, ?, ?, ?, ?, ?)
             ON CONFLICT(url) DO UPDATE SET
                host = excluded.host, title = excluded.title, body = excluded.body,
                date = excluded.date, last_updated = excluded.last_updated,
                added_at = excluded.added_at",
        )
        .bind(document.url)
        .bind(url_host(document.url).unwrap_or_default())
        .bind(document.title.trim())
        .bind(document.body)
        .bind(document.date)
        .bind(document.last_updated)
        .bind(added_at)
        .execute(&mut *tx)
        .await
        .map_err(index_error)?;
        sqlx::query("DELETE FROM images WHERE document_url = ?")
            .bind(document.url)
            .execute(&mut *tx)
            .await
            .map_err(index_error)?;
        for (image_url, image) in &images {
            sqlx::query(
                "INSERT OR IGNORE INTO images (document_url, image_url, alt, title, width, height)
                 VALUES (?, ?, ?, ?, ?, ?)",
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
        tx.commit().await.map_err(index_error)?;
        Ok(())
    }

    /// How many images the index holds.
    pub async fn image_count(&self) -> Result<u64, BackendError> {
        let pool = match &self.db {
            Db::Sqlite(pool) => pool,
            Db::Postgres(index) => return index.image_count().await,
        };
        let count: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM images")
            .fetch_one(pool)
            .await
            .map_err(index_error)?;
        Ok(u64::try_from(count).unwrap_or_default())
    }

    /// The images whose alt text or title best match `query`, best first; the result's
    /// title is the alt text, its origin the page.
    pub async fn search_images(&self, query: &ImageQuery) -> Result<Vec<ImageHit>, BackendError> {
        let terms = query_terms(&query.text);
        if terms.is_empty() {
            return Ok(Vec::new());
        }
        let pool = match &self.db {
            Db::Sqlite(pool) => pool,
            Db::Postgres(index) => return index.search_images(query, &terms).await,
        };
        let mut sql = QueryBuilder::<Sqlite>::new(
            "SELECT i.image_url, i.document_url, i.alt, i.width, i.height
             FROM images_fts JOIN images i ON i.id = images_fts.rowid
             JOIN documents d ON d.url = i.document_url
             WHERE images_fts MATCH ",
        );
        sql.push_bind(match_expression(&terms));
        push_domains(&mut sql, &query.allow_domains, false);
        push_domains(&mut sql, &query.deny_domains, true);
        sql.push(" ORDER BY bm25(images_fts, 1.0, 0.5) LIMIT ")
            .push_bind(i64::from(query.limit()));
        let rows = sql.build().fetch_all(pool).await.map_err(index_error)?;
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

    /// The best matches for `query`, best first, with the passage around the first match
    /// as the snippet.
    pub async fn search(&self, query: &SearchQuery) -> Result<Vec<Hit>, BackendError> {
        let terms = query_terms(&query.text);
        if terms.is_empty() {
            return Ok(Vec::new());
        }
        let pool = match &self.db {
            Db::Sqlite(pool) => pool,
            Db::Postgres(index) => return index.search(query, &terms).await,
        };
        let mut sql = QueryBuilder::<Sqlite>::new(
            "SELECT d.url, d.title, d.body, d.date, d.last_updated
             FROM documents_fts JOIN documents d ON d.id = documents_fts.rowid
             WHERE documents_fts MATCH ",
        );
        sql.push_bind(match_expression(&terms));
        push_domains(&mut sql, &query.allow_domains, false);
        push_domains(&mut sql, &query.deny_domains, true);
        push_dates(&mut sql, query);
        sql.push(" ORDER BY bm25(documents_fts, 10.0, 1.0) LIMIT ")
            .push_bind(i64::from(query.limit()));
        let rows = sql.build().fetch_all(pool).await.map_err(index_error)?;
        let passage_chars = passage_chars(query);
        rows.iter()
            .map(|row| {
                let body: String = row.try_get("body").map_err(index_error)?;
                Ok(Hit {
                    url: row.try_get("url").map_err(index_error)?,
                    title: row.try_get("title").map_err(index_error)?,
                    snippet: passage(&body, &terms, passage_chars),
                    date: row.try_get("date").map_err(index_error)?,
                    last_updated: row.try_get("last_updated").map_err(index_error)?,
                })
            })
            .collect()
    }
}

#[async_trait::async_trait]
impl ImageBackend for LocalIndex {
    fn name(&self) -> &'static str {
        "local index"
    }

    async fn search_images(&self, query: &ImageQuery) -> Result<Vec<ImageHit>, BackendError> {
        LocalIndex::search_images(self, query).await
    }
}

#[async_trait::async_trait]
impl Backend for LocalIndex {
    fn name(&self) -> &'static str {
        "local index"
    }

    async fn search(&self, query: &SearchQuery) -> Result<Vec<Hit>, BackendError> {
        LocalIndex::search(self, query).await
    }
}

/// Creates the tables and triggers when missing, in one transaction.
async fn create_schema(connection: &mut SqliteConnection) -> Result<(), BackendError> {
    let mut tx = connection.begin().await.map_err(index_error)?;
    for statement in SCHEMA {
        sqlx::query(*statement)
            .execute(&mut *tx)
            .await
            .map_err(index_error)?;
    }
    tx.commit().await.map_err(index_error)
}

/// The images of a page a browser could load from the web, with their absolute URLs: http(s),
/// relative ones resolved against the page (a file's relative images stay on disk and are
/// skipped).
fn web_images<'a>(
    page_url: &str,
    images: &'a [html::PageImage],
) -> Vec<(url::Url, &'a html::PageImage)> {
    let base = url::Url::parse(page_url).ok();
    images
        .iter()
        .filter_map(|image| {
            base.as_ref()
                .and_then(|base| base.join(&image.src).ok())
                .or_else(|| url::Url::parse(&image.src).ok())
                .filter(|url| matches!(url.scheme(), "http" | "https"))
                .map(|url| (url, image))
        })
        .collect()
}

/// An FTS5 query matching any of the terms, each quoted so no word is read as an
/// operator (`AND`, `NOT`, `NEAR`, column names).
fn match_expression(terms: &[String]) -> String {
    terms
        .iter()
        .map(|term| format!("\"{}\"", term.replace('"', "\"\"")))
        .collect::<Vec<_>>()
        .join(" OR ")
}

/// What the index keeps of one file or page.
struct Page {
    title: Option<String>,
    body: String,
    date: Option<String>,
    images: Vec<html::PageImage>,
}

impl Page {
    fn from_html(source: &str) -> Page {
        let document = dom_query::Document::from(source);
        let date = html::meta_content(
            &document,
            &[
                "article:published_time",
                "datepublished",
                "date",
                "dc.date",
                "dcterms.date",
                "pubdate",
            ],
        )
        .as_deref()
        .and_then(normalize_date);
        Page {
            title: html::title(&document),
            body: html::page_text(source),
            date,
            images: html::images(&document),
        }
    }

    /// Plain text or Markdown: the first `#` heading is the title; a front-matter
    /// `date:` is the publication date.
    fn from_text(source: &str) -> Page {
        let title = source
            .lines()
            .map(str::trim)
            .find(|line| line.starts_with("# "))
            .map(|line| line.trim_start_matches('#').trim().to_owned())
            .filter(|title| !title.is_empty());
        Page {
            title,
            body: source.to_owned(),
            date: front_matter_date(source),
            images: Vec::new(),
        }
    }
}

fn front_matter_date(source: &str) -> Option<String> {
    let rest = source.strip_prefix("---")?;
    let end = rest.find("\n---")?;
    rest[..end].lines().find_map(|line| {
        let value = line.trim().strip_prefix("date:")?;
        normalize_date(value.trim().trim_matches(['"', '\'']))
    })
}

fn has_extension(path: &Path, extensions: &[&str]) -> bool {
    path.extension()
        .and_then(|ext| ext.to_str())
        .is_some_and(|ext| {
            extensions
                .iter()
                .any(|known| ext.eq_ignore_ascii_case(known))
        })
}

/// Text, Markdown and HTML files under `dir`, sorted, hidden entries skipped.
async fn list_files(dir: &Path) -> Result<Vec<PathBuf>, BackendError> {
    let mut pending = vec![dir.to_path_buf()];
    let mut files = Vec::new();
    let read_error = |path: &Path, err: std::io::Error| {
        BackendError::Document(format!("{}: {err}", path.display()))
    };
    while let Some(current) = pending.pop() {
        let mut entries = tokio::fs::read_dir(&current)
            .await
            .map_err(|err| read_error(&current, err))?;
        while let Some(entry) = entries
            .next_entry()
            .await
            .map_err(|err| read_error(&current, err))?
        {
            let path = entry.path();
            if entry.file_name().to_string_lossy().starts_with('.') {
                continue;
            }
            let kind = entry
                .file_type()
                .await
                .map_err(|err| read_error(&path, err))?;
            if kind.is_dir() {
                pending.push(path);
            } else if kind.is_file()
                && (has_extension(&path, TEXT_EXTENSIONS) || has_extension(&path, HTML_EXTENSIONS))
            {
                files.push(path);
            }
        }
    }
    files.sort();
    Ok(files)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn query_words_become_quoted_alternatives() {
        let terms = query_terms("Rust's \"async\" AND tokio-runtime NEAR async");
        assert_eq!(
            terms,
            vec!["rust", "s", "async", "and", "tokio", "runtime", "near"]
        );
        assert_eq!(
            match_expression(&terms[..2]),
            "\"rust\" OR \"s\"".to_owned()
        );
        assert!(query_terms(" -- ").is_empty());
    }

    #[test]
    fn passages_start_at_the_matching_sentence() {
        let body = format!(
            "{} The borrow checker rejects this. Lifetimes explain why.",
            "Filler words here. ".repeat(40)
        );
        let text = passage(&body, &["lifetimes".to_owned()], 200);
        assert_eq!(text, "…Lifetimes explain why.");
        let start = passage("Short text about lifetimes.", &["lifetimes".to_owned()], 10);
        assert_eq!(start, "Short tex…");
        let missing = passage("Nothing matches.", &["zzz".to_owned()], 100);
        assert_eq!(missing, "Nothing matches.");
    }

    #[test]
    fn markdown_titles_and_front_matter_dates() {
        let page = Page::from_text("---\ndate: \"2024-02-03\"\n---\n\n# The Title\n\nBody.");
        assert_eq!(page.title.as_deref(), Some("The Title"));
        assert_eq!(page.date.as_deref(), Some("2024-02-03"));
        let plain = Page::from_text("no heading");
        assert_eq!(plain.title, None);
        assert_eq!(plain.date, None);
    }
}
