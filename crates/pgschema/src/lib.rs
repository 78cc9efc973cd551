//! The one way a crate that keeps tables of its own in the store's PostgreSQL database (the
//! local search index, the people directory, the finance store) opens its pool: connect, then
//! create its tables under a transaction-level advisory lock, so replicas starting together
//! do not race. The URL is never quoted back in an error: it may hold a password.

#[cfg(feature = "test-support")]
pub mod testdb;

use std::str::FromStr;

use sqlx::postgres::{PgConnectOptions, PgPool, PgPoolOptions};

/// A crate's own tables on PostgreSQL.
pub struct Schema {
    /// The `search_path` of every connection (the crate's schema), or `None` for `public`.
    pub search_path: Option<&'static str>,
    /// The advisory lock the creation runs under (one per crate).
    pub lock: i64,
    /// `CREATE … IF NOT EXISTS` statements, run in order in one transaction.
    pub statements: &'static [&'static str],
    /// The pool's size.
    pub connections: u32,
}

/// Why [`open`] failed.
#[derive(Debug, thiserror::Error)]
pub enum OpenError {
    /// The URL does not parse (not quoted: it may hold a password).
    #[error("invalid postgres url")]
    InvalidUrl,
    /// Connecting or creating the tables failed.
    #[error(transparent)]
    Database(#[from] sqlx::Error),
}

/// Connects to `url` and creates `schema`'s tables.
pub async fn open(url: &str, schema: &Schema) -> Result<PgPool, OpenError> {
    let mut options = PgConnectOptions::from_str(url).map_err(|_| OpenError::InvalidUrl)?;
    if let Some(path) = schema.search_path {
        options = options.options([("search_path", path)]);
    }
    let pool = PgPoolOptions::new()
        .max_connections(schema.connections)
        .connect_with(options)
        .await?;
    let mut tx = pool.begin().await?;
    sqlx::query("SELECT pg_advisory_xact_lock($1)")
        .bind(schema.lock)
        .execute(&mut *tx)
        .await?;
    for statement in schema.statements {
        sqlx::query(*statement).execute(&mut *tx).await?;
    }
    tx.commit().await?;
    Ok(pool)
}
