//! `agentd store copy` for the finance store: every row of a SQLite `finance.sqlite` into
//! another store (the `agentd_finance` schema of the PostgreSQL database replicas share).
//!
//! Tables are copied parents first, each in a stable order (tickers in the order they were
//! imported, so the PostgreSQL `seq` keeps it), in batches; rows already at the destination
//! are kept (`ON CONFLICT DO NOTHING`), so an interrupted copy can be run again.

use futures::TryStreamExt as _;
use sqlx::{QueryBuilder, Row as _};

use crate::backend::BackendError;
use crate::store::{Counts, Db, LocalStore};

/// Rows written per statement (11 columns at most: well under both back ends' bind limits).
const BATCH: usize = 500;

#[derive(Clone, Copy)]
enum Kind {
    Text,
    Int,
    Real,
}

enum Value {
    Text(Option<String>),
    Int(Option<i64>),
    Real(Option<f64>),
}

use Kind::{Int, Real, Text};

/// A table, the order it is read in, and its columns.
type Table = (&'static str, &'static str, &'static [(&'static str, Kind)]);

const TABLES: &[Table] = &[
    (
        "tickers",
        "rowid",
        &[
            ("ticker", Text),
            ("cik", Int),
            ("name", Text),
            ("exchange", Text),
        ],
    ),
    (
        "companies",
        "cik",
        &[
            ("cik", Int),
            ("name", Text),
            ("entity_type", Text),
            ("sic", Text),
            ("sic_description", Text),
            ("tickers", Text),
            ("exchanges", Text),
            ("fiscal_year_end", Text),
            ("state_of_incorporation", Text),
            ("category", Text),
            ("website", Text),
        ],
    ),
    (
        "facts",
        "cik, concept, unit, start, \"end\"",
        &[
            ("cik", Int),
            ("concept", Text),
            ("unit", Text),
            ("start", Text),
            ("\"end\"", Text),
            ("value", Real),
            ("fy", Int),
            ("fp", Text),
            ("form", Text),
            ("filed", Text),
            ("accn", Text),
        ],
    ),
    (
        "filings",
        "rowid",
        &[
            ("accession", Text),
            ("cik", Int),
            ("form", Text),
            ("filing_date", Text),
            ("report_date", Text),
            ("primary_document", Text),
            ("description", Text),
            ("items", Text),
        ],
    ),
    (
        "prices",
        "symbol, date",
        &[
            ("symbol", Text),
            ("date", Text),
            ("open", Real),
            ("high", Real),
            ("low", Real),
            ("close", Real),
            ("volume", Real),
        ],
    ),
];

fn store_error(err: sqlx::Error) -> BackendError {
    BackendError::Store(err.to_string())
}

impl LocalStore {
    /// Copies every ticker, company, fact, filing and price of this store (a SQLite file)
    /// into `to`, keeping rows `to` already holds. Returns how many rows of each were read.
    pub async fn copy_into(&self, to: &LocalStore) -> Result<Counts, BackendError> {
        let Db::Sqlite(source) = &self.db else {
            return Err(BackendError::Store(
                "a finance store copy reads from a SQLite file".to_owned(),
            ));
        };
        let mut read = [0_u64; 5];
        for ((table, order, columns), count) in TABLES.iter().zip(read.iter_mut()) {
            let names: Vec<&str> = columns.iter().map(|(name, _)| *name).collect();
            let select = format!("SELECT {} FROM {table} ORDER BY {order}", names.join(", "));
            // The table and column names are the constants above, never input.
            let mut rows = sqlx::query(sqlx::AssertSqlSafe(select.as_str())).fetch(source);
            let mut batch: Vec<Vec<Value>> = Vec::with_capacity(BATCH);
            while let Some(row) = rows.try_next().await.map_err(store_error)? {
                let mut values = Vec::with_capacity(columns.len());
                for (index, (_, kind)) in columns.iter().enumerate() {
                    values.push(match kind {
                        Text => Value::Text(row.try_get(index).map_err(store_error)?),
                        Int => Value::Int(row.try_get(index).map_err(store_error)?),
                        Real => Value::Real(row.try_get(index).map_err(store_error)?),
                    });
                }
                batch.push(values);
                *count += 1;
                if batch.len() == BATCH {
                    write(to, table, &names, std::mem::take(&mut batch)).await?;
                }
            }
            if !batch.is_empty() {
                write(to, table, &names, batch).await?;
            }
        }
        let [tickers, companies, facts, filings, prices] = read;
        Ok(Counts {
            tickers,
            companies,
            facts,
            filings,
            prices,
        })
    }
}

/// Inserts `rows` into `table` of `to`, keeping rows already there.
async fn write(
    to: &LocalStore,
    table: &str,
    names: &[&str],
    rows: Vec<Vec<Value>>,
) -> Result<(), BackendError> {
    let head = format!("INSERT INTO {table} ({}) ", names.join(", "));
    macro_rules! insert {
        ($pool:expr) => {{
            let mut builder = QueryBuilder::new(head);
            builder.push_values(rows, |mut row, values| {
                for value in values {
                    match value {
                        Value::Text(text) => row.push_bind(text),
                        Value::Int(int) => row.push_bind(int),
                        Value::Real(real) => row.push_bind(real),
                    };
                }
            });
            builder.push(" ON CONFLICT DO NOTHING");
            builder.build().execute($pool).await.map_err(store_error)?;
        }};
    }
    match &to.db {
        Db::Sqlite(pool) => insert!(pool),
        Db::Postgres(pool) => insert!(pool),
    }
    Ok(())
}
