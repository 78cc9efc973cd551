//! A PostgreSQL database per test, for the server tests that run agentd on PostgreSQL (replicas,
//! people and finance imports).
//!
//! PostgreSQL is found at `AGENTD_TEST_POSTGRES_URL` (default
//! `postgres://postgres@127.0.0.1:5432/postgres`); each test creates its own database and drops
//! it. An unreachable server fails the test with a message saying so.

#![allow(dead_code, reason = "each test binary uses its part")]

use sqlx::Connection as _;

pub fn admin_url() -> String {
    std::env::var("AGENTD_TEST_POSTGRES_URL")
        .ok()
        .filter(|v| !v.is_empty())
        .unwrap_or_else(|| "postgres://postgres@127.0.0.1:5432/postgres".to_owned())
}

pub async fn admin(sql: &str) {
    let url = admin_url();
    let mut conn = sqlx::PgConnection::connect(&url).await.unwrap_or_else(|e| {
        unreachable!(
            "PostgreSQL is not reachable at {url} ({e}): these tests need it (start it, e.g. \
             `pg_ctlcluster 15 main start`, or set AGENTD_TEST_POSTGRES_URL)"
        )
    });
    sqlx::raw_sql(sqlx::AssertSqlSafe(sql.to_owned()))
        .execute(&mut conn)
        .await
        .unwrap();
    conn.close().await.unwrap();
}

/// A database of one test, dropped (connections and all) with this value.
pub struct PgDatabase {
    name: String,
    pub url: String,
}

impl PgDatabase {
    /// A new empty database named `<prefix>_<random>`.
    pub async fn create(prefix: &str) -> PgDatabase {
        let name = format!("{prefix}_{}", uuid::Uuid::new_v4().simple());
        admin(&format!("CREATE DATABASE {name}")).await;
        let mut url = url::Url::parse(&admin_url()).unwrap();
        url.set_path(&format!("/{name}"));
        PgDatabase {
            name,
            url: url.to_string(),
        }
    }

    /// The database's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The one integer `sql` answers.
    pub async fn scalar(&self, sql: &str) -> i64 {
        let mut conn = sqlx::PgConnection::connect(&self.url).await.unwrap();
        let value: i64 = sqlx::query_scalar(sqlx::AssertSqlSafe(sql.to_owned()))
            .fetch_one(&mut conn)
            .await
            .unwrap();
        conn.close().await.unwrap();
        value
    }

    /// The number of rows of `table`.
    pub async fn count(&self, table: &str) -> i64 {
        self.scalar(&format!("SELECT COUNT(*) FROM {table}")).await
    }
}

impl Drop for PgDatabase {
    fn drop(&mut self) {
        let name = self.name.clone();
        let _ = std::thread::spawn(move || {
            tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .unwrap()
                .block_on(admin(&format!(
                    "DROP DATABASE IF EXISTS {name} WITH (FORCE)"
                )));
        })
        .join();
    }
}
