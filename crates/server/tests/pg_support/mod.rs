//! A PostgreSQL database per test, for the server tests that run agentd on PostgreSQL (replicas,
//! people and finance imports): `pgschema::testdb` (the server is `AGENTD_TEST_POSTGRES_URL`,
//! default `postgres://postgres@127.0.0.1:5432/postgres`), with the queries these tests ask of
//! it. An unreachable server fails the test with a message saying so.

#![allow(dead_code, reason = "each test binary uses its part")]

use pgschema::testdb::TestDatabase;
use sqlx::Connection as _;

/// A database of one test, dropped (connections and all) with this value.
pub struct PgDatabase {
    database: TestDatabase,
    pub url: String,
}

impl PgDatabase {
    /// A new empty database named `<prefix>_<unique>`.
    pub async fn create(prefix: &str) -> PgDatabase {
        let database = TestDatabase::create(prefix).await.unwrap();
        PgDatabase {
            url: database.url().to_owned(),
            database,
        }
    }

    /// The database's name.
    pub fn name(&self) -> &str {
        self.database.name()
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
