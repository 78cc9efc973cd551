//! The finance store's tables in PostgreSQL, for replicas sharing one database (the store's):
//! the same tables as the SQLite file, in a schema of their own (`agentd_finance`), created at
//! open under a transaction-level advisory lock so replicas starting together do not race.
//! Every connection of the pool has `search_path` set to the schema, so `store.rs` runs the
//! same statements on both back ends. Dates are ISO text compared byte-wise (`COLLATE "C"`),
//! as SQLite compares them; `tickers.seq` keeps the import order SQLite's `rowid` keeps.

pub(crate) use sqlx::postgres::PgPool;

use crate::backend::BackendError;

/// The PostgreSQL schema the store's tables live in.
pub const SCHEMA_NAME: &str = "agentd_finance";

/// Connections of the store's pool.
const CONNECTIONS: u32 = 4;

/// Serializes schema creation across replicas (a constant no other part of agentd uses).
const SCHEMA_LOCK: i64 = 0x6167_656e_7464_4649;

const SCHEMA: &[&str] = &[
    "CREATE SCHEMA IF NOT EXISTS agentd_finance",
    "CREATE TABLE IF NOT EXISTS agentd_finance.tickers (
        seq BIGSERIAL,
        ticker TEXT PRIMARY KEY,
        cik BIGINT NOT NULL,
        name TEXT NOT NULL,
        exchange TEXT
    )",
    "CREATE INDEX IF NOT EXISTS tickers_cik ON agentd_finance.tickers(cik)",
    "CREATE TABLE IF NOT EXISTS agentd_finance.companies (
        cik BIGINT PRIMARY KEY,
        name TEXT NOT NULL,
        entity_type TEXT,
        sic TEXT,
        sic_description TEXT,
        tickers TEXT NOT NULL DEFAULT '',
        exchanges TEXT NOT NULL DEFAULT '',
        fiscal_year_end TEXT,
        state_of_incorporation TEXT,
        category TEXT,
        website TEXT
    )",
    "CREATE INDEX IF NOT EXISTS companies_sic ON agentd_finance.companies(sic)",
    "CREATE TABLE IF NOT EXISTS agentd_finance.facts (
        cik BIGINT NOT NULL,
        concept TEXT NOT NULL,
        unit TEXT NOT NULL,
        start TEXT COLLATE \"C\" NOT NULL DEFAULT '',
        \"end\" TEXT COLLATE \"C\" NOT NULL,
        value DOUBLE PRECISION NOT NULL,
        fy INTEGER,
        fp TEXT,
        form TEXT,
        filed TEXT COLLATE \"C\" NOT NULL,
        accn TEXT,
        PRIMARY KEY (cik, concept, unit, start, \"end\")
    )",
    "CREATE TABLE IF NOT EXISTS agentd_finance.filings (
        accession TEXT PRIMARY KEY,
        cik BIGINT NOT NULL,
        form TEXT NOT NULL,
        filing_date TEXT COLLATE \"C\" NOT NULL,
        report_date TEXT COLLATE \"C\",
        primary_document TEXT,
        description TEXT,
        items TEXT
    )",
    "CREATE INDEX IF NOT EXISTS filings_cik_date ON agentd_finance.filings(cik, filing_date)",
    "CREATE TABLE IF NOT EXISTS agentd_finance.prices (
        symbol TEXT NOT NULL,
        date TEXT COLLATE \"C\" NOT NULL,
        open DOUBLE PRECISION,
        high DOUBLE PRECISION,
        low DOUBLE PRECISION,
        close DOUBLE PRECISION NOT NULL,
        volume DOUBLE PRECISION,
        PRIMARY KEY (symbol, date)
    )",
    "CREATE INDEX IF NOT EXISTS prices_date ON agentd_finance.prices(date)",
];

/// Connects (the URL is never quoted back: it may hold a password) and creates the schema.
pub(crate) async fn open(url: &str) -> Result<PgPool, BackendError> {
    let schema = pgschema::Schema {
        search_path: Some(SCHEMA_NAME),
        lock: SCHEMA_LOCK,
        statements: SCHEMA,
        connections: CONNECTIONS,
    };
    pgschema::open(url, &schema).await.map_err(|err| match err {
        pgschema::OpenError::InvalidUrl => BackendError::Store(err.to_string()),
        pgschema::OpenError::Database(err) => store_error(err),
    })
}

fn store_error(err: sqlx::Error) -> BackendError {
    BackendError::Store(err.to_string())
}
