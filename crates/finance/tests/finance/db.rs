//! The back-end matrix of the embedded store: a test written as `async fn name(db: &TestDb)`
//! and listed in [`matrix!`] runs once on a SQLite file and once on a PostgreSQL database of
//! its own, dropped afterwards.
//!
//! PostgreSQL is found at `AGENTD_TEST_POSTGRES_URL` (default
//! `postgres://postgres@127.0.0.1:5432/postgres`); when it is unreachable the PostgreSQL half
//! fails with a message saying so. It is never skipped.

use std::path::{Path, PathBuf};

use finance::{LocalStore, Settings};
use pgschema::testdb::TestDatabase;
use sqlx::Connection as _;

/// Runs each listed test on both back ends: `sqlite::name` and `postgres::name`.
macro_rules! matrix {
    ($($name:ident),+ $(,)?) => {
        mod sqlite {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $name() {
                    let db = $crate::db::TestDb::new($crate::db::Backend::Sqlite, stringify!($name)).await;
                    super::$name(&db).await
                }
            )+
        }
        mod postgres {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $name() {
                    let db = $crate::db::TestDb::new($crate::db::Backend::Postgres, stringify!($name)).await;
                    super::$name(&db).await
                }
            )+
        }
    };
}
pub(crate) use matrix;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Backend {
    Sqlite,
    Postgres,
}

/// A directory of one test and, on PostgreSQL, a database dropped with this value.
pub struct TestDb {
    pub backend: Backend,
    pub dir: PathBuf,
    postgres: Option<TestDatabase>,
}

impl TestDb {
    pub async fn new(backend: Backend, test: &str) -> TestDb {
        let dir = crate::common::temp_dir(test);
        let postgres = match backend {
            Backend::Sqlite => None,
            Backend::Postgres => Some(TestDatabase::create("agentd_finance").await.unwrap()),
        };
        TestDb {
            backend,
            dir,
            postgres,
        }
    }

    /// The settings a server of this database would have: the store in the file, or in the
    /// shared database.
    pub fn settings(&self) -> Settings {
        Settings {
            store_path: self.dir.join("finance.sqlite"),
            store_url: self.postgres.as_ref().map(|db| db.url().to_owned()),
            ..Settings::default()
        }
    }

    /// Opens the store anew (a new pool, as another process or replica would).
    pub async fn open(&self) -> LocalStore {
        finance::open_store(&self.settings()).await.unwrap()
    }

    /// How many rows a table of the PostgreSQL schema holds (`None` on SQLite).
    pub async fn postgres_rows(&self, table: &str) -> Option<i64> {
        let url = self.postgres.as_ref()?.url();
        let mut conn = sqlx::PgConnection::connect(url).await.unwrap();
        let sql = format!("SELECT COUNT(*) FROM {}.{table}", finance::POSTGRES_SCHEMA);
        let count: i64 = sqlx::query_scalar(sqlx::AssertSqlSafe(sql))
            .fetch_one(&mut conn)
            .await
            .unwrap();
        conn.close().await.unwrap();
        Some(count)
    }

    pub fn path(&self) -> &Path {
        &self.dir
    }
}

impl Drop for TestDb {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}
