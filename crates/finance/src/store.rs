//! [`LocalStore`]: the embedded offline default, one SQLite file (`<data_dir>/finance.sqlite`,
//! mode 0600) or, when PostgreSQL is the store, tables in that database (`store_pg.rs`), that
//! `agentd finance import` fills from the SEC's own bulk files and a prices CSV. With it, fundamentals, reported EPS, ratios, profiles, peers (same SIC code), filing
//! lists and imported prices work with no network.
//!
//! Tables: `tickers` (company_tickers.json), `companies` and `filings` (submissions),
//! `facts` (companyfacts, only the concepts the statements use, one value per period) and
//! `prices` (daily bars). The statements are the same on both back ends (`$n` parameters,
//! standard upserts) but for the name search, where they differ.

use std::path::Path;
use std::str::FromStr;
use std::time::Duration;

use chrono::NaiveDate;
use serde_json::json;
use sqlx::sqlite::{SqliteConnectOptions, SqliteJournalMode, SqlitePool, SqlitePoolOptions};
use sqlx::{Connection as _, Row, SqliteConnection};

use crate::store_pg::{self, PgPool};

use crate::backend::{Backend, BackendError, Block, DataRequest, Listing};
use crate::category::Category;
use crate::facts::{CompanyFacts, Fact, date};
use crate::names;
use crate::prices::{Bar, aggregate, bars_table};
use crate::sec::{facts_block, filings_block};
use crate::submissions::{self, Company, Filing, Submissions};
use crate::table::Table;

/// `source` of its results.
pub const SOURCE: &str = "local";

/// How long a writer waits for another (an import while the server reads).
const BUSY_TIMEOUT: Duration = Duration::from_secs(30);

const SCHEMA: &[&str] = &[
    "CREATE TABLE IF NOT EXISTS tickers (
        ticker TEXT PRIMARY KEY,
        cik INTEGER NOT NULL,
        name TEXT NOT NULL,
        exchange TEXT
    )",
    "CREATE INDEX IF NOT EXISTS tickers_cik ON tickers(cik)",
    "CREATE TABLE IF NOT EXISTS companies (
        cik INTEGER PRIMARY KEY,
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
    "CREATE INDEX IF NOT EXISTS companies_sic ON companies(sic)",
    "CREATE TABLE IF NOT EXISTS facts (
        cik INTEGER NOT NULL,
        concept TEXT NOT NULL,
        unit TEXT NOT NULL,
        start TEXT NOT NULL DEFAULT '',
        end TEXT NOT NULL,
        value REAL NOT NULL,
        fy INTEGER,
        fp TEXT,
        form TEXT,
        filed TEXT NOT NULL,
        accn TEXT,
        PRIMARY KEY (cik, concept, unit, start, end)
    ) WITHOUT ROWID",
    "CREATE TABLE IF NOT EXISTS filings (
        accession TEXT PRIMARY KEY,
        cik INTEGER NOT NULL,
        form TEXT NOT NULL,
        filing_date TEXT NOT NULL,
        report_date TEXT,
        primary_document TEXT,
        description TEXT,
        items TEXT
    )",
    "CREATE INDEX IF NOT EXISTS filings_cik_date ON filings(cik, filing_date)",
    "CREATE TABLE IF NOT EXISTS prices (
        symbol TEXT NOT NULL,
        date TEXT NOT NULL,
        open REAL,
        high REAL,
        low REAL,
        close REAL NOT NULL,
        volume REAL,
        PRIMARY KEY (symbol, date)
    ) WITHOUT ROWID",
    "CREATE INDEX IF NOT EXISTS prices_date ON prices(date)",
];

/// A ticker as imported: (ticker, cik, name, exchange).
pub type TickerRow = (String, u64, String, Option<String>);

/// What the store holds.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Counts {
    pub tickers: u64,
    pub companies: u64,
    pub facts: u64,
    pub filings: u64,
    pub prices: u64,
}

/// The embedded finance store: one SQLite file, or tables in the PostgreSQL database replicas
/// share. Cheap to clone (a pool).
#[derive(Clone, Debug)]
pub struct LocalStore {
    pub(crate) db: Db,
}

#[derive(Clone, Debug)]
pub(crate) enum Db {
    Sqlite(SqlitePool),
    Postgres(PgPool),
}

/// Runs `$body` with `$pool` bound to the pool of the back end holding the store: the body
/// is compiled once per back end.
macro_rules! with_pool {
    ($db:expr, |$pool:ident| $body:expr) => {
        match $db {
            Db::Sqlite($pool) => $body,
            Db::Postgres($pool) => $body,
        }
    };
}

/// Adds or replaces filings of `$cik` inside the transaction `$tx`.
macro_rules! insert_filings {
    ($tx:expr, $cik:expr, $filings:expr) => {{
        for filing in $filings {
            sqlx::query(
                "INSERT INTO filings (accession, cik, form, filing_date, report_date,
                     primary_document, description, items)
                 VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
                 ON CONFLICT (accession) DO UPDATE SET cik = excluded.cik, form = excluded.form,
                     filing_date = excluded.filing_date, report_date = excluded.report_date,
                     primary_document = excluded.primary_document,
                     description = excluded.description, items = excluded.items",
            )
            .bind(&filing.accession)
            .bind($cik)
            .bind(&filing.form)
            .bind(filing.filing_date.to_string())
            .bind(filing.report_date.map(|d| d.to_string()))
            .bind(&filing.primary_document)
            .bind(&filing.description)
            .bind(&filing.items)
            .execute(&mut *$tx)
            .await
            .map_err(store_error)?;
        }
    }};
}

fn store_error(err: sqlx::Error) -> BackendError {
    BackendError::Store(err.to_string())
}

impl LocalStore {
    /// Opens (creating it, its directory and its tables if needed) the store at `path`,
    /// readable by its owner only.
    pub async fn open(path: &Path) -> Result<LocalStore, BackendError> {
        if let Some(dir) = path.parent().filter(|dir| !dir.as_os_str().is_empty()) {
            tokio::fs::create_dir_all(dir).await.map_err(|err| {
                BackendError::Store(format!("cannot create {}: {err}", dir.display()))
            })?;
        }
        restrict(path).await?;
        let options = SqliteConnectOptions::new()
            .filename(path)
            .create_if_missing(true)
            .journal_mode(SqliteJournalMode::Wal)
            .busy_timeout(BUSY_TIMEOUT);
        // The schema (and, for a new file, the switch to WAL) is set up on one connection of
        // its own before the pool opens any other (concurrent first connections race into
        // "database is locked"), as for the local search index.
        let mut setup = SqliteConnection::connect_with(&options)
            .await
            .map_err(store_error)?;
        create_schema(&mut setup).await?;
        setup.close().await.map_err(store_error)?;
        let pool = SqlitePoolOptions::new()
            .max_connections(4)
            .idle_timeout(None)
            .max_lifetime(None)
            .connect_lazy_with(options);
        Ok(LocalStore {
            db: Db::Sqlite(pool),
        })
    }

    /// Opens (creating its schema and tables if needed) the store in a PostgreSQL database
    /// (`postgres://…`, TLS as its `sslmode` says): every replica sharing the database reads
    /// the same imports.
    pub async fn open_postgres(url: &str) -> Result<LocalStore, BackendError> {
        Ok(LocalStore {
            db: Db::Postgres(store_pg::open(url).await?),
        })
    }

    /// A store in memory for as long as the value (tests).
    pub async fn in_memory() -> Result<LocalStore, BackendError> {
        let options = SqliteConnectOptions::from_str("sqlite::memory:").map_err(store_error)?;
        let pool = SqlitePoolOptions::new()
            .max_connections(1)
            .min_connections(1)
            .idle_timeout(None)
            .max_lifetime(None)
            .connect_with(options)
            .await
            .map_err(store_error)?;
        let mut connection = pool.acquire().await.map_err(store_error)?;
        create_schema(&mut connection).await?;
        drop(connection);
        Ok(LocalStore {
            db: Db::Sqlite(pool),
        })
    }

    pub async fn close(&self) {
        with_pool!(&self.db, |pool| pool.close().await)
    }

    pub async fn counts(&self) -> Result<Counts, BackendError> {
        let count = |sql: &'static str| async move {
            let n: i64 = with_pool!(&self.db, |pool| sqlx::query_scalar(sql)
                .fetch_one(pool)
                .await
                .map_err(store_error)?);
            Ok::<u64, BackendError>(u64::try_from(n).unwrap_or_default())
        };
        Ok(Counts {
            tickers: count("SELECT COUNT(*) FROM tickers").await?,
            companies: count("SELECT COUNT(*) FROM companies").await?,
            facts: count("SELECT COUNT(*) FROM facts").await?,
            filings: count("SELECT COUNT(*) FROM filings").await?,
            prices: count("SELECT COUNT(*) FROM prices").await?,
        })
    }

    // --- writes (the import) -------------------------------------------------------------

    /// Adds or replaces tickers: (ticker, cik, name, exchange).
    pub async fn put_tickers(&self, listings: &[TickerRow]) -> Result<(), BackendError> {
        with_pool!(&self.db, |pool| {
            let mut tx = pool.begin().await.map_err(store_error)?;
            for (ticker, cik, name, exchange) in listings {
                sqlx::query(
                    "INSERT INTO tickers (ticker, cik, name, exchange) VALUES ($1, $2, $3, $4)
                     ON CONFLICT(ticker) DO UPDATE SET cik = excluded.cik, name = excluded.name,
                         exchange = COALESCE(excluded.exchange, tickers.exchange)",
                )
                .bind(ticker.to_ascii_uppercase())
                .bind(i64::try_from(*cik).unwrap_or_default())
                .bind(name)
                .bind(exchange)
                .execute(&mut *tx)
                .await
                .map_err(store_error)?;
            }
            tx.commit().await.map_err(store_error)
        })
    }

    /// Replaces a company's facts (a companyfacts file is complete for its filer).
    pub async fn put_facts(&self, facts: &CompanyFacts) -> Result<(), BackendError> {
        let cik = i64::try_from(facts.cik).unwrap_or_default();
        with_pool!(&self.db, |pool| {
            let mut tx = pool.begin().await.map_err(store_error)?;
            sqlx::query(
                "INSERT INTO companies (cik, name) VALUES ($1, $2) ON CONFLICT(cik) DO NOTHING",
            )
            .bind(cik)
            .bind(&facts.name)
            .execute(&mut *tx)
            .await
            .map_err(store_error)?;
            sqlx::query("DELETE FROM facts WHERE cik = $1")
                .bind(cik)
                .execute(&mut *tx)
                .await
                .map_err(store_error)?;
            for fact in &facts.facts {
                sqlx::query(
                    "INSERT INTO facts (cik, concept, unit, start, \"end\", value, fy, fp, form, filed, accn)
                     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)
                     ON CONFLICT (cik, concept, unit, start, \"end\") DO UPDATE SET
                         value = excluded.value, fy = excluded.fy, fp = excluded.fp,
                         form = excluded.form, filed = excluded.filed, accn = excluded.accn",
                )
                .bind(cik)
                .bind(&fact.concept)
                .bind(&fact.unit)
                .bind(fact.start.map(|d| d.to_string()).unwrap_or_default())
                .bind(fact.end.to_string())
                .bind(fact.value)
                .bind(fact.fy)
                .bind(&fact.fp)
                .bind(&fact.form)
                .bind(fact.filed.to_string())
                .bind(&fact.accn)
                .execute(&mut *tx)
                .await
                .map_err(store_error)?;
            }
            tx.commit().await.map_err(store_error)
        })
    }

    /// Adds a company's profile and filings (and its tickers, when the store lacks them).
    pub async fn put_submissions(&self, submissions: &Submissions) -> Result<(), BackendError> {
        let company = &submissions.company;
        let cik = i64::try_from(company.cik).unwrap_or_default();
        with_pool!(&self.db, |pool| {
            let mut tx = pool.begin().await.map_err(store_error)?;
            sqlx::query(
                "INSERT INTO companies (cik, name, entity_type, sic, sic_description, tickers,
                 exchanges, fiscal_year_end, state_of_incorporation, category, website)
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)
             ON CONFLICT (cik) DO UPDATE SET name = excluded.name,
                 entity_type = excluded.entity_type, sic = excluded.sic,
                 sic_description = excluded.sic_description, tickers = excluded.tickers,
                 exchanges = excluded.exchanges, fiscal_year_end = excluded.fiscal_year_end,
                 state_of_incorporation = excluded.state_of_incorporation,
                 category = excluded.category, website = excluded.website",
            )
            .bind(cik)
            .bind(&company.name)
            .bind(&company.entity_type)
            .bind(&company.sic)
            .bind(&company.sic_description)
            .bind(company.tickers.join(","))
            .bind(company.exchanges.join(","))
            .bind(&company.fiscal_year_end)
            .bind(&company.state_of_incorporation)
            .bind(&company.category)
            .bind(&company.website)
            .execute(&mut *tx)
            .await
            .map_err(store_error)?;
            for (i, ticker) in company.tickers.iter().enumerate() {
                sqlx::query(
                    "INSERT INTO tickers (ticker, cik, name, exchange) VALUES ($1, $2, $3, $4)
                 ON CONFLICT(ticker) DO NOTHING",
                )
                .bind(ticker.to_ascii_uppercase())
                .bind(cik)
                .bind(&company.name)
                .bind(company.exchanges.get(i))
                .execute(&mut *tx)
                .await
                .map_err(store_error)?;
            }
            insert_filings!(tx, cik, &submissions.filings);
            tx.commit().await.map_err(store_error)
        })
    }

    /// Adds a page of older filings.
    pub async fn put_filings(&self, cik: u64, filings: &[Filing]) -> Result<(), BackendError> {
        let cik = i64::try_from(cik).unwrap_or_default();
        with_pool!(&self.db, |pool| {
            let mut tx = pool.begin().await.map_err(store_error)?;
            insert_filings!(tx, cik, filings);
            tx.commit().await.map_err(store_error)
        })
    }

    /// Adds or replaces daily bars: (symbol, bar).
    pub async fn put_prices(&self, bars: &[(String, Bar)]) -> Result<(), BackendError> {
        with_pool!(&self.db, |pool| {
            let mut tx = pool.begin().await.map_err(store_error)?;
            for (symbol, bar) in bars {
                sqlx::query(
                    "INSERT INTO prices (symbol, date, open, high, low, close, volume)
                 VALUES ($1, $2, $3, $4, $5, $6, $7)
                 ON CONFLICT (symbol, date) DO UPDATE SET open = excluded.open,
                     high = excluded.high, low = excluded.low, close = excluded.close,
                     volume = excluded.volume",
                )
                .bind(symbol.to_ascii_uppercase())
                .bind(&bar.date)
                .bind(bar.open)
                .bind(bar.high)
                .bind(bar.low)
                .bind(bar.close)
                .bind(bar.volume)
                .execute(&mut *tx)
                .await
                .map_err(store_error)?;
            }
            tx.commit().await.map_err(store_error)
        })
    }

    // --- reads ---------------------------------------------------------------------------

    async fn listing(&self, ticker: &str) -> Result<Option<Listing>, BackendError> {
        let ticker = ticker.trim().to_ascii_uppercase();
        let sql = "SELECT ticker, cik, name FROM tickers WHERE ticker = $1 OR ticker = $2";
        with_pool!(&self.db, |pool| {
            let row = sqlx::query(sql)
                .bind(&ticker)
                .bind(ticker.replace(['.', '/'], "-"))
                .fetch_optional(pool)
                .await
                .map_err(store_error)?;
            row.map(|row| {
                Ok(Listing {
                    ticker: row.try_get("ticker").map_err(store_error)?,
                    cik: row
                        .try_get::<i64, _>("cik")
                        .ok()
                        .and_then(|c| u64::try_from(c).ok()),
                    name: row.try_get("name").map_err(store_error)?,
                })
            })
            .transpose()
        })
    }

    async fn company(&self, cik: u64) -> Result<Option<Company>, BackendError> {
        with_pool!(&self.db, |pool| {
            let row = sqlx::query("SELECT * FROM companies WHERE cik = $1")
                .bind(i64::try_from(cik).unwrap_or_default())
                .fetch_optional(pool)
                .await
                .map_err(store_error)?;
            let Some(row) = row else {
                return Ok(None);
            };
            let list = |text: Option<String>| -> Vec<String> {
                text.unwrap_or_default()
                    .split(',')
                    .map(str::trim)
                    .filter(|s| !s.is_empty())
                    .map(str::to_owned)
                    .collect()
            };
            let get = |name: &str| row.try_get::<Option<String>, _>(name).ok().flatten();
            Ok(Some(Company {
                cik,
                name: get("name").unwrap_or_default(),
                entity_type: get("entity_type"),
                sic: get("sic"),
                sic_description: get("sic_description"),
                tickers: list(get("tickers")),
                exchanges: list(get("exchanges")),
                fiscal_year_end: get("fiscal_year_end"),
                state_of_incorporation: get("state_of_incorporation"),
                category: get("category"),
                website: get("website"),
            }))
        })
    }

    async fn facts(&self, cik: u64) -> Result<Option<CompanyFacts>, BackendError> {
        let Some(company) = self.company(cik).await? else {
            return Ok(None);
        };
        let facts: Vec<Fact> = with_pool!(&self.db, |pool| {
            let rows = sqlx::query(
            "SELECT concept, unit, start, \"end\", value, fy, fp, form, filed, accn FROM facts WHERE cik = $1",
        )
        .bind(i64::try_from(cik).unwrap_or_default())
        .fetch_all(pool)
        .await
        .map_err(store_error)?;
            rows.iter()
                .filter_map(|row| {
                    let text = |name: &str| row.try_get::<Option<String>, _>(name).ok().flatten();
                    Some(Fact {
                        concept: text("concept")?,
                        unit: text("unit")?,
                        start: text("start").as_deref().and_then(date),
                        end: date(&text("end")?)?,
                        value: row.try_get("value").ok()?,
                        fy: row.try_get::<Option<i32>, _>("fy").ok().flatten(),
                        fp: text("fp"),
                        form: text("form"),
                        filed: date(&text("filed")?)?,
                        accn: text("accn"),
                    })
                })
                .collect()
        });
        if facts.is_empty() {
            return Ok(None);
        }
        Ok(Some(CompanyFacts {
            cik,
            name: company.name,
            facts,
        }))
    }

    async fn filings(&self, cik: u64) -> Result<Vec<Filing>, BackendError> {
        with_pool!(&self.db, |pool| {
            let rows = sqlx::query(
            "SELECT accession, form, filing_date, report_date, primary_document, description, items
             FROM filings WHERE cik = $1 ORDER BY filing_date DESC",
        )
        .bind(i64::try_from(cik).unwrap_or_default())
        .fetch_all(pool)
        .await
        .map_err(store_error)?;
            Ok(rows
                .iter()
                .filter_map(|row| {
                    let text = |name: &str| row.try_get::<Option<String>, _>(name).ok().flatten();
                    Some(Filing {
                        accession: text("accession")?,
                        form: text("form")?,
                        filing_date: date(&text("filing_date")?)?,
                        report_date: text("report_date").as_deref().and_then(date),
                        primary_document: text("primary_document"),
                        description: text("description"),
                        items: text("items"),
                    })
                })
                .collect())
        })
    }

    /// Daily bars, most recent first.
    async fn bars(
        &self,
        symbol: &str,
        from: Option<NaiveDate>,
        to: Option<NaiveDate>,
        limit: usize,
    ) -> Result<Vec<Bar>, BackendError> {
        with_pool!(&self.db, |pool| {
            let rows = sqlx::query(
                "SELECT date, open, high, low, close, volume FROM prices
             WHERE symbol = $1 AND date >= $2 AND date <= $3 ORDER BY date DESC LIMIT $4",
            )
            .bind(symbol.to_ascii_uppercase())
            .bind(from.map(|d| d.to_string()).unwrap_or_default())
            .bind(to.map_or_else(|| "9999-12-31".to_owned(), |d| d.to_string()))
            .bind(i64::try_from(limit).unwrap_or(i64::MAX))
            .fetch_all(pool)
            .await
            .map_err(store_error)?;
            Ok(rows
                .iter()
                .filter_map(|row| {
                    Some(Bar {
                        date: row.try_get("date").ok()?,
                        open: row.try_get("open").ok()?,
                        high: row.try_get("high").ok()?,
                        low: row.try_get("low").ok()?,
                        close: row.try_get("close").ok()?,
                        volume: row.try_get("volume").ok()?,
                    })
                })
                .collect())
        })
    }

    /// The listing and CIK of the request's symbol.
    async fn company_of(&self, request: &DataRequest) -> Result<(String, u64), BackendError> {
        let ticker = request.ticker()?.to_owned();
        if let Some(cik) = request.symbol.as_ref().and_then(|s| s.cik) {
            return Ok((ticker, cik));
        }
        let listing = self.listing(&ticker).await?.ok_or_else(|| {
            BackendError::NotFound(format!("{ticker} is not in the imported tickers"))
        })?;
        let cik = listing
            .cik
            .ok_or_else(|| BackendError::NotFound(format!("{ticker} has no CIK")))?;
        Ok((ticker, cik))
    }

    async fn quote(&self, request: &DataRequest) -> Result<Block, BackendError> {
        let symbol = request.ticker()?;
        let bars = self.bars(symbol, None, None, 2).await?;
        let last = bars.first().ok_or_else(|| no_prices(symbol))?;
        let mut table = Table::new(&["field", "value"]);
        table.push(vec![json!("symbol"), json!(symbol)]);
        table.push(vec![json!("last close"), json!(last.close)]);
        table.push(vec![json!("date"), json!(last.date)]);
        if let Some(previous) = bars.get(1) {
            let change = last.close - previous.close;
            table.push(vec![json!("change"), json!(round(change, 4))]);
            if previous.close != 0.0 {
                table.push(vec![
                    json!("change %"),
                    json!(round(change / previous.close * 100.0, 4)),
                ]);
            }
        }
        for (field, value) in [
            ("open", last.open),
            ("high", last.high),
            ("low", last.low),
            ("volume", last.volume),
        ] {
            if let Some(value) = value {
                table.push(vec![json!(field), json!(value)]);
            }
        }
        Ok(Block {
            title: "Last close (imported prices)".to_owned(),
            table,
            as_of: Some(last.date.clone()),
            notes: vec![format!(
                "From the imported daily prices: the close of {}, not a live quote.",
                last.date
            )],
            ..Block::default()
        })
    }

    async fn price_history(&self, request: &DataRequest) -> Result<Block, BackendError> {
        let symbol = request.ticker()?;
        if request.interval.is_intraday() {
            return Err(BackendError::NotFound(
                "the imported prices are daily bars, not intraday".to_owned(),
            ));
        }
        let per_bar = match request.interval {
            crate::category::Interval::Week1 => 5,
            crate::category::Interval::Month1 => 23,
            _ => 1,
        };
        let bars = self
            .bars(
                symbol,
                request.from,
                request.to,
                request.limit * per_bar + per_bar,
            )
            .await?;
        if bars.is_empty() {
            return Err(no_prices(symbol));
        }
        let bars = aggregate(bars, request.interval);
        Ok(Block {
            title: format!("Price history ({} bars, imported)", request.interval.name()),
            as_of: bars.first().map(|b| b.date.clone()),
            table: bars_table(&bars, request.limit),
            ..Block::default()
        })
    }

    async fn profile(&self, request: &DataRequest) -> Result<Block, BackendError> {
        let (ticker, cik) = self.company_of(request).await?;
        match self.company(cik).await? {
            Some(company) if company.sic.is_some() || !company.tickers.is_empty() => Ok(Block {
                title: "Company profile (SEC submissions)".to_owned(),
                name: Some(company.name.clone()),
                table: submissions::profile_table(&company),
                url: Some(submissions::company_url(cik)),
                ..Block::default()
            }),
            _ => {
                let listing = self.listing(&ticker).await?;
                let name = listing.map(|l| l.name).unwrap_or_default();
                let mut table = Table::new(&["field", "value"]);
                table.push(vec![json!("name"), json!(name)]);
                table.push(vec![json!("ticker"), json!(ticker)]);
                table.push(vec![json!("cik"), json!(format!("{cik:010}"))]);
                Ok(Block {
                    title: "Company listing (SEC tickers)".to_owned(),
                    name: Some(name),
                    table,
                    url: Some(submissions::company_url(cik)),
                    notes: vec!["Only the SEC's ticker list was imported for this company: import its submissions file for the full profile.".to_owned()],
                    ..Block::default()
                })
            }
        }
    }

    async fn peers(&self, request: &DataRequest) -> Result<Block, BackendError> {
        let (_, cik) = self.company_of(request).await?;
        let company = self
            .company(cik)
            .await?
            .filter(|c| c.sic.is_some())
            .ok_or_else(|| {
                BackendError::NotFound("no industry code imported for this company".to_owned())
            })?;
        let mut table = Table::new(&["symbol", "name", "cik"]);
        with_pool!(&self.db, |pool| {
            let rows = sqlx::query(
            // (PostgreSQL sorts by an output column only when it stands alone: hence the
            // subquery.)
            "SELECT name, cik, ticker FROM (
                 SELECT c.name, c.cik, (SELECT t.ticker FROM tickers t WHERE t.cik = c.cik ORDER BY t.ticker LIMIT 1) AS ticker
                 FROM companies c WHERE c.sic = $1 AND c.cik != $2) peers
             ORDER BY ticker IS NULL, name LIMIT $3",
        )
        .bind(&company.sic)
        .bind(i64::try_from(cik).unwrap_or_default())
        .bind(i64::try_from(request.limit).unwrap_or(10))
        .fetch_all(pool)
        .await
        .map_err(store_error)?;
            for row in &rows {
                table.push(vec![
                    json!(row.try_get::<Option<String>, _>("ticker").ok().flatten()),
                    json!(row.try_get::<String, _>("name").unwrap_or_default()),
                    json!(format!(
                        "{:010}",
                        row.try_get::<i64, _>("cik").unwrap_or_default()
                    )),
                ]);
            }
        });
        if table.is_empty() {
            return Err(BackendError::NotFound(
                "no other imported company shares its industry code".to_owned(),
            ));
        }
        Ok(Block {
            title: format!(
                "Peers: imported companies with SIC {} ({})",
                company.sic.unwrap_or_default(),
                company.sic_description.unwrap_or_default()
            ),
            name: Some(company.name),
            table,
            ..Block::default()
        })
    }

    async fn movers(&self, request: &DataRequest) -> Result<Block, BackendError> {
        let last: Option<String> = with_pool!(&self.db, |pool| sqlx::query_scalar(
            "SELECT MAX(date) FROM prices"
        )
        .fetch_one(pool)
        .await
        .map_err(store_error)?);
        let last =
            last.ok_or_else(|| BackendError::NotFound("no prices were imported".to_owned()))?;
        // Two weeks before the last day (dates are ISO text, compared as text).
        let since = date(&last)
            .and_then(|d| d.checked_sub_days(chrono::Days::new(14)))
            .map(|d| d.to_string())
            .unwrap_or_default();
        let mut moves: Vec<(String, f64, f64, f64)> = with_pool!(&self.db, |pool| {
            let rows = sqlx::query(
                "WITH ranked AS (
                 SELECT symbol, date, close, volume,
                        ROW_NUMBER() OVER (PARTITION BY symbol ORDER BY date DESC) AS n
                 FROM prices WHERE date <= $1 AND date >= $2)
             SELECT a.symbol, a.close, a.volume, b.close AS previous
             FROM ranked a JOIN ranked b ON a.symbol = b.symbol AND b.n = 2
             WHERE a.n = 1 AND a.date = $1",
            )
            .bind(&last)
            .bind(&since)
            .fetch_all(pool)
            .await
            .map_err(store_error)?;
            rows.iter()
                .filter_map(|row| {
                    let close: f64 = row.try_get("close").ok()?;
                    let previous: f64 = row.try_get("previous").ok()?;
                    let volume: f64 = row
                        .try_get::<Option<f64>, _>("volume")
                        .ok()?
                        .unwrap_or_default();
                    (previous != 0.0).then(|| {
                        (
                            row.try_get("symbol").unwrap_or_default(),
                            close,
                            round((close - previous) / previous * 100.0, 4),
                            volume,
                        )
                    })
                })
                .collect()
        });
        if moves.is_empty() {
            return Err(BackendError::NotFound(
                "the imported prices have no two recent days to compare".to_owned(),
            ));
        }
        let mut table = Table::new(&["list", "symbol", "close", "change %", "volume"]);
        for list in crate::records::mover_lists(&request.query) {
            match list {
                "gainers" => moves.sort_by(|a, b| b.2.total_cmp(&a.2)),
                "losers" => moves.sort_by(|a, b| a.2.total_cmp(&b.2)),
                _ => moves.sort_by(|a, b| b.3.total_cmp(&a.3)),
            }
            for (symbol, close, change, volume) in moves.iter().take(request.limit) {
                table.push(vec![
                    json!(list),
                    json!(symbol),
                    json!(close),
                    json!(change),
                    json!(volume),
                ]);
            }
        }
        Ok(Block {
            title: "Market movers among the imported symbols".to_owned(),
            as_of: Some(last.clone()),
            table,
            notes: vec![format!(
                "Computed from the imported daily prices of {last}: only symbols in the import are ranked."
            )],
            ..Block::default()
        })
    }

    /// The last close of a symbol, for ratios.
    async fn last_close(&self, symbol: &str) -> Option<(NaiveDate, f64)> {
        let bar = self
            .bars(symbol, None, None, 1)
            .await
            .ok()?
            .into_iter()
            .next()?;
        Some((date(&bar.date)?, bar.close))
    }
}

#[async_trait::async_trait]
impl Backend for LocalStore {
    fn source(&self) -> &str {
        SOURCE
    }

    fn supports(&self, category: Category) -> bool {
        matches!(
            category,
            Category::Quote
                | Category::PriceHistory
                | Category::Profile
                | Category::Peers
                | Category::IncomeStatement
                | Category::BalanceSheet
                | Category::CashFlow
                | Category::Ratios
                | Category::Earnings
                | Category::MarketMovers
                | Category::InsiderTrading
                | Category::Filings
        )
    }

    async fn fetch(&self, request: &DataRequest) -> Result<Block, BackendError> {
        match request.category {
            Category::Quote => self.quote(request).await,
            Category::PriceHistory => self.price_history(request).await,
            Category::Profile => self.profile(request).await,
            Category::Peers => self.peers(request).await,
            Category::MarketMovers => self.movers(request).await,
            Category::Filings | Category::InsiderTrading => {
                let (ticker, cik) = self.company_of(request).await?;
                let filings = self.filings(cik).await?;
                if filings.is_empty() {
                    return Err(BackendError::NotFound(format!(
                        "no filings of {ticker} were imported"
                    )));
                }
                let name = self.company(cik).await?.map(|c| c.name).unwrap_or_default();
                filings_block(
                    cik,
                    &name,
                    &filings,
                    request,
                    request.category == Category::InsiderTrading,
                )
            }
            _ => {
                let (ticker, cik) = self.company_of(request).await?;
                let facts = self.facts(cik).await?.ok_or_else(|| {
                    BackendError::NotFound(format!("no company facts of {ticker} were imported"))
                })?;
                let price = if request.category == Category::Ratios {
                    self.last_close(&ticker).await
                } else {
                    None
                };
                facts_block(&facts, request, price)
            }
        }
    }

    async fn lookup_ticker(&self, ticker: &str) -> Option<Listing> {
        self.listing(ticker).await.ok().flatten()
    }

    async fn search_name(&self, name: &str) -> Result<Vec<Listing>, BackendError> {
        let wanted = names::normalize(name);
        let first = wanted.split(' ').next().unwrap_or_default();
        if first.is_empty() {
            return Ok(Vec::new());
        }
        let pattern = format!("%{}%", first.replace(['%', '_', '\\'], "\\$0"));
        // In import order (the SEC lists the largest companies first); PostgreSQL's LIKE is
        // case-sensitive, SQLite's is not.
        let sql = match &self.db {
            Db::Sqlite(_) => {
                "SELECT ticker, cik, name FROM tickers WHERE name LIKE $1 ESCAPE '\\' ORDER BY rowid LIMIT 200"
            }
            Db::Postgres(_) => {
                "SELECT ticker, cik, name FROM tickers WHERE name ILIKE $1 ESCAPE '\\' ORDER BY seq LIMIT 200"
            }
        };
        let mut found: Vec<(u8, usize, Listing)> = with_pool!(&self.db, |pool| {
            let rows = sqlx::query(sql)
                .bind(&pattern)
                .fetch_all(pool)
                .await
                .map_err(store_error)?;
            rows.iter()
                .enumerate()
                .filter_map(|(i, row)| {
                    let listing = Listing {
                        ticker: row.try_get("ticker").ok()?,
                        cik: row
                            .try_get::<i64, _>("cik")
                            .ok()
                            .and_then(|c| u64::try_from(c).ok()),
                        name: row.try_get("name").ok()?,
                    };
                    let score = names::score(&wanted, &listing.name);
                    (score > 0).then_some((score, i, listing))
                })
                .collect()
        });
        found.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
        Ok(found.into_iter().take(5).map(|(_, _, l)| l).collect())
    }
}

async fn create_schema(connection: &mut SqliteConnection) -> Result<(), BackendError> {
    let mut tx = connection.begin().await.map_err(store_error)?;
    for statement in SCHEMA {
        sqlx::query(*statement)
            .execute(&mut *tx)
            .await
            .map_err(store_error)?;
    }
    tx.commit().await.map_err(store_error)
}

/// Creates the file readable and writable by its owner only, or narrows an existing one.
/// (SQLite gives the `-wal` and `-shm` files the database file's mode.)
async fn restrict(path: &Path) -> Result<(), BackendError> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::{OpenOptionsExt as _, PermissionsExt as _};
        let owned = path.to_owned();
        tokio::task::spawn_blocking(move || {
            std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .mode(0o600)
                .open(&owned)?;
            std::fs::set_permissions(&owned, std::fs::Permissions::from_mode(0o600))
        })
        .await
        .map_err(|err| BackendError::Store(err.to_string()))?
        .map_err(|err| BackendError::Store(format!("cannot create {}: {err}", path.display())))?;
    }
    #[cfg(not(unix))]
    let _ = path;
    Ok(())
}

fn no_prices(symbol: &str) -> BackendError {
    BackendError::NotFound(format!("no prices of {symbol} were imported"))
}

fn round(value: f64, digits: i32) -> f64 {
    let scale = 10f64.powi(digits);
    (value * scale).round() / scale
}
