//! Test databases (feature `test-support`): a PostgreSQL database made for one test, or one
//! benchmark run, on the server of an administration URL, and dropped (connections and all)
//! when the value is dropped or [`TestDatabase::drop_database`] is called. The PostgreSQL tests
//! of the store, search, people, finance and server crates and `agentd-bench` use it.
//!
//! The tests' server is `AGENTD_TEST_POSTGRES_URL` (default [`DEFAULT_ADMIN_URL`], the
//! development machines' trust setup). Errors name the server by host and port, never quoting
//! the URL (it may hold a password).

use std::sync::atomic::{AtomicU64, Ordering};

use sqlx::Connection as _;

/// The tests' PostgreSQL server when `AGENTD_TEST_POSTGRES_URL` is unset.
pub const DEFAULT_ADMIN_URL: &str = "postgres://postgres@127.0.0.1:5432/postgres";

/// Why a test database could not be made or dropped.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct TestDbError(String);

/// The tests' PostgreSQL server: `AGENTD_TEST_POSTGRES_URL`, else [`DEFAULT_ADMIN_URL`].
pub fn admin_url() -> String {
    std::env::var("AGENTD_TEST_POSTGRES_URL")
        .ok()
        .filter(|v| !v.is_empty())
        .unwrap_or_else(|| DEFAULT_ADMIN_URL.to_owned())
}

/// The server of `url` as `host:port`, for messages.
fn server_of(url: &str) -> String {
    match url::Url::parse(url) {
        Ok(url) => format!(
            "{}:{}",
            url.host_str().unwrap_or("?"),
            url.port().unwrap_or(5432)
        ),
        Err(_) => "(an unparsable URL)".to_owned(),
    }
}

/// Runs `sql` (no parameters) on the database of `admin_url`.
pub async fn admin(admin_url: &str, sql: &str) -> Result<(), TestDbError> {
    let mut conn = sqlx::PgConnection::connect(admin_url).await.map_err(|e| {
        TestDbError(format!(
            "PostgreSQL is not reachable at {} ({e}): these tests need it (start it, e.g. \
                 `pg_ctlcluster 15 main start`, or set AGENTD_TEST_POSTGRES_URL)",
            server_of(admin_url)
        ))
    })?;
    let run = sqlx::raw_sql(sqlx::AssertSqlSafe(sql.to_owned()))
        .execute(&mut conn)
        .await
        .map_err(|e| TestDbError(format!("{sql}: {e}")));
    let _ = conn.close().await;
    run.map(|_| ())
}

/// A database of its own, dropped with this value.
#[derive(Debug)]
pub struct TestDatabase {
    admin_url: String,
    name: String,
    url: String,
    dropped: bool,
}

impl TestDatabase {
    /// A new empty database `<prefix>_<unique>` on the tests' server ([`admin_url`]).
    /// `prefix`: lowercase letters, digits and `_`.
    pub async fn create(prefix: &str) -> Result<TestDatabase, TestDbError> {
        TestDatabase::create_on(&admin_url(), prefix).await
    }

    /// A new empty database `<prefix>_<unique>` on the server of `admin_url`.
    pub async fn create_on(admin_url: &str, prefix: &str) -> Result<TestDatabase, TestDbError> {
        static NEXT: AtomicU64 = AtomicU64::new(0);
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.subsec_nanos())
            .unwrap_or_default();
        let name = format!(
            "{prefix}_{}_{}_{nanos}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        );
        let mut url = url::Url::parse(admin_url)
            .map_err(|e| TestDbError(format!("the PostgreSQL URL does not parse: {e}")))?;
        url.set_path(&format!("/{name}"));
        admin(admin_url, &format!("CREATE DATABASE {name}")).await?;
        Ok(TestDatabase {
            admin_url: admin_url.to_owned(),
            name,
            url: url.to_string(),
            dropped: false,
        })
    }

    /// The database's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The URL of the database (the administration URL's, with this database's name).
    pub fn url(&self) -> &str {
        &self.url
    }

    /// Drops the database now.
    pub async fn drop_database(mut self) -> Result<(), TestDbError> {
        self.dropped = true;
        admin(&self.admin_url, &self.drop_statement()).await
    }

    fn drop_statement(&self) -> String {
        format!("DROP DATABASE IF EXISTS {} WITH (FORCE)", self.name)
    }
}

impl Drop for TestDatabase {
    fn drop(&mut self) {
        if self.dropped {
            return;
        }
        let admin_url = self.admin_url.clone();
        let sql = self.drop_statement();
        // Dropped inside a test's runtime, maybe: drop the database from a thread of its own.
        let dropped = std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .map_err(|e| TestDbError(e.to_string()))?;
            runtime.block_on(admin(&admin_url, &sql))
        })
        .join();
        if let Ok(Err(err)) = dropped {
            eprintln!("cannot drop the test database {}: {err}", self.name);
        }
    }
}
