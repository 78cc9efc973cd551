//! `agentd finance import`: the SEC's own bulk files, as files or zips, and a prices CSV into
//! the [`LocalStore`].
//!
//! Files are recognised by their content, so names do not matter (except for older-filing
//! pages, whose CIK is only in the name, `CIK##########-submissions-NNN.json`):
//! - `company_tickers.json` (`{"0": {"cik_str", "ticker", "title"}, …}`) and
//!   `company_tickers_exchange.json` (`{"fields": [...], "data": [[cik, name, ticker,
//!   exchange], …]}`);
//! - companyfacts (`{cik, entityName, facts}`), one per filer, or `companyfacts.zip`;
//! - submissions (`{cik, name, …, filings}`) and their pages, or `submissions.zip`;
//! - directories of any of these.
//!
//! Prices: a CSV with a header naming `symbol,date,open,high,low,close,volume` (any order;
//! `open`, `high`, `low`, `volume` may be empty).
//!
//! Zips are read entry by entry on a blocking thread; each entry is parsed and stored in its
//! own transaction, so a 1.4 GB archive never sits in memory.

use std::path::{Path, PathBuf};

use serde::Deserialize;
use serde::de::IgnoredAny;
use serde_json::Value;
use tokio::sync::mpsc;

use crate::backend::BackendError;
use crate::facts;
use crate::prices::Bar;
use crate::store::{LocalStore, TickerRow};
use crate::{statements, submissions};

/// The largest file or zip entry read (the largest companyfacts files are tens of MiB).
const MAX_DOCUMENT_BYTES: u64 = 256 * 1024 * 1024;

/// Prices stored per transaction.
const PRICE_BATCH: usize = 5000;

/// What an import added, and what it could not read.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ImportReport {
    pub tickers: u64,
    pub companyfacts: u64,
    pub submissions: u64,
    pub filing_pages: u64,
    pub prices: u64,
    /// (file or zip entry, why it was skipped).
    pub skipped: Vec<(String, String)>,
}

/// Why an import stopped.
#[derive(Debug, thiserror::Error)]
pub enum ImportError {
    #[error("{path}: {message}")]
    Read { path: String, message: String },
    #[error(transparent)]
    Store(#[from] BackendError),
}

fn read_error(path: &Path, message: impl ToString) -> ImportError {
    ImportError::Read {
        path: path.display().to_string(),
        message: message.to_string(),
    }
}

/// Imports SEC files and directories (`paths`) and a prices CSV into `store`.
pub async fn import(
    store: &LocalStore,
    paths: &[PathBuf],
    prices: Option<&Path>,
) -> Result<ImportReport, ImportError> {
    let mut report = ImportReport::default();
    for path in paths {
        for file in files(path).await? {
            if has_extension(&file, "zip") {
                import_zip(store, &file, &mut report).await?;
            } else {
                let bytes = read_file(&file).await?;
                let name = file.display().to_string();
                import_document(store, &name, &bytes, &mut report).await?;
            }
        }
    }
    if let Some(csv) = prices {
        report.prices += import_prices(store, csv).await?;
    }
    Ok(report)
}

/// The files under a path: itself, or (recursively) the `.json` and `.zip` files of a
/// directory, hidden entries skipped, in name order.
async fn files(path: &Path) -> Result<Vec<PathBuf>, ImportError> {
    let metadata = tokio::fs::metadata(path)
        .await
        .map_err(|err| read_error(path, err))?;
    if !metadata.is_dir() {
        return Ok(vec![path.to_owned()]);
    }
    let mut found = Vec::new();
    let mut pending = vec![path.to_owned()];
    while let Some(dir) = pending.pop() {
        let mut entries = tokio::fs::read_dir(&dir)
            .await
            .map_err(|err| read_error(&dir, err))?;
        while let Some(entry) = entries
            .next_entry()
            .await
            .map_err(|err| read_error(&dir, err))?
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
            } else if has_extension(&path, "json") || has_extension(&path, "zip") {
                found.push(path);
            }
        }
    }
    found.sort();
    Ok(found)
}

fn has_extension(path: &Path, extension: &str) -> bool {
    path.extension()
        .is_some_and(|e| e.to_string_lossy().eq_ignore_ascii_case(extension))
}

async fn read_file(path: &Path) -> Result<Vec<u8>, ImportError> {
    let metadata = tokio::fs::metadata(path)
        .await
        .map_err(|err| read_error(path, err))?;
    if metadata.len() > MAX_DOCUMENT_BYTES {
        return Err(read_error(
            path,
            format!("larger than {MAX_DOCUMENT_BYTES} bytes"),
        ));
    }
    tokio::fs::read(path)
        .await
        .map_err(|err| read_error(path, err))
}

/// Reads a zip's JSON entries on a blocking thread and stores each as it arrives.
async fn import_zip(
    store: &LocalStore,
    path: &Path,
    report: &mut ImportReport,
) -> Result<(), ImportError> {
    let (sender, mut receiver) = mpsc::channel::<Result<(String, Vec<u8>), ImportError>>(4);
    let zip_path = path.to_owned();
    let reader = tokio::task::spawn_blocking(move || read_zip(&zip_path, &sender));
    while let Some(entry) = receiver.recv().await {
        let (name, bytes) = entry?;
        import_document(store, &name, &bytes, report).await?;
    }
    reader.await.map_err(|err| read_error(path, err))?
}

fn read_zip(
    path: &Path,
    sender: &mpsc::Sender<Result<(String, Vec<u8>), ImportError>>,
) -> Result<(), ImportError> {
    use std::io::Read as _;
    let file = std::fs::File::open(path).map_err(|err| read_error(path, err))?;
    let mut archive =
        zip::ZipArchive::new(std::io::BufReader::new(file)).map_err(|err| read_error(path, err))?;
    for index in 0..archive.len() {
        let mut entry = archive
            .by_index(index)
            .map_err(|err| read_error(path, err))?;
        let name = format!("{}:{}", path.display(), entry.name());
        if entry.is_dir() || !entry.name().to_ascii_lowercase().ends_with(".json") {
            continue;
        }
        if entry.size() > MAX_DOCUMENT_BYTES {
            return Err(read_error(
                path,
                format!("{name} is larger than {MAX_DOCUMENT_BYTES} bytes"),
            ));
        }
        let mut bytes = Vec::with_capacity(usize::try_from(entry.size()).unwrap_or_default());
        (&mut entry)
            .take(MAX_DOCUMENT_BYTES)
            .read_to_end(&mut bytes)
            .map_err(|err| read_error(path, format!("{name}: {err}")))?;
        if sender.blocking_send(Ok((name, bytes))).is_err() {
            // The importer stopped (it failed on an earlier entry).
            return Ok(());
        }
    }
    Ok(())
}

/// The top-level keys that tell the SEC's files apart (values skipped, nothing allocated).
#[derive(Deserialize)]
struct Sniff {
    facts: Option<IgnoredAny>,
    filings: Option<IgnoredAny>,
    #[serde(rename = "accessionNumber")]
    accession_number: Option<IgnoredAny>,
    fields: Option<IgnoredAny>,
    #[serde(rename = "0")]
    first: Option<IgnoredAny>,
}

/// Stores one JSON document of a recognised kind; others are reported as skipped.
async fn import_document(
    store: &LocalStore,
    name: &str,
    bytes: &[u8],
    report: &mut ImportReport,
) -> Result<(), ImportError> {
    let sniff: Sniff = match serde_json::from_slice(bytes) {
        Ok(sniff) => sniff,
        Err(err) => {
            report
                .skipped
                .push((name.to_owned(), format!("not a JSON object: {err}")));
            return Ok(());
        }
    };
    let result = if sniff.facts.is_some() {
        match facts::parse(bytes, &statements::concepts()) {
            Ok(parsed) => {
                store.put_facts(&parsed).await?;
                report.companyfacts += 1;
                Ok(())
            }
            Err(message) => Err(message),
        }
    } else if sniff.filings.is_some() {
        match submissions::parse(bytes) {
            Ok(parsed) => {
                store.put_submissions(&parsed).await?;
                report.submissions += 1;
                Ok(())
            }
            Err(message) => Err(message),
        }
    } else if sniff.accession_number.is_some() {
        match (page_cik(name), submissions::parse_page(bytes)) {
            (Some(cik), Ok(filings)) => {
                store.put_filings(cik, &filings).await?;
                report.filing_pages += 1;
                Ok(())
            }
            (None, _) => Err("a page of older filings whose name carries no CIK".to_owned()),
            (_, Err(message)) => Err(message),
        }
    } else if sniff.fields.is_some() || sniff.first.is_some() {
        match tickers(bytes) {
            Ok(listings) => {
                report.tickers += listings.len() as u64;
                store.put_tickers(&listings).await?;
                Ok(())
            }
            Err(message) => Err(message),
        }
    } else {
        Err("not an SEC tickers, companyfacts or submissions file".to_owned())
    };
    if let Err(message) = result {
        report.skipped.push((name.to_owned(), message));
    }
    Ok(())
}

/// The CIK in `CIK##########-submissions-NNN.json`.
fn page_cik(name: &str) -> Option<u64> {
    let file = name.rsplit(['/', '\\', ':']).next()?;
    let digits: String = file
        .strip_prefix("CIK")?
        .chars()
        .take_while(char::is_ascii_digit)
        .collect();
    digits.parse().ok()
}

/// (ticker, cik, name, exchange).
/// `company_tickers.json` or `company_tickers_exchange.json`.
fn tickers(bytes: &[u8]) -> Result<Vec<TickerRow>, String> {
    let value: Value = serde_json::from_slice(bytes).map_err(|err| err.to_string())?;
    if let (Some(fields), Some(data)) = (
        value.get("fields").and_then(Value::as_array),
        value.get("data").and_then(Value::as_array),
    ) {
        let at = |name: &str| fields.iter().position(|f| f.as_str() == Some(name));
        let (Some(cik), Some(name), Some(ticker)) = (at("cik"), at("name"), at("ticker")) else {
            return Err("a tickers table without cik, name and ticker fields".to_owned());
        };
        let exchange = at("exchange");
        return Ok(data
            .iter()
            .filter_map(Value::as_array)
            .filter_map(|row| {
                Some((
                    row.get(ticker)?.as_str()?.to_owned(),
                    facts::parse_cik(row.get(cik)?)?,
                    row.get(name)?.as_str()?.to_owned(),
                    exchange
                        .and_then(|e| row.get(e))
                        .and_then(Value::as_str)
                        .map(str::to_owned),
                ))
            })
            .collect());
    }
    let object = value
        .as_object()
        .ok_or("a tickers file must be an object")?;
    Ok(object
        .values()
        .filter_map(|entry| {
            Some((
                entry.get("ticker")?.as_str()?.to_owned(),
                facts::parse_cik(entry.get("cik_str")?)?,
                entry.get("title")?.as_str()?.to_owned(),
                None,
            ))
        })
        .collect())
}

#[derive(Deserialize)]
struct PriceRow {
    symbol: String,
    date: String,
    #[serde(default)]
    open: Option<f64>,
    #[serde(default)]
    high: Option<f64>,
    #[serde(default)]
    low: Option<f64>,
    close: f64,
    #[serde(default)]
    volume: Option<f64>,
}

/// Reads the prices CSV on a blocking thread, storing it in batches. A malformed row stops
/// the import with its line number.
async fn import_prices(store: &LocalStore, path: &Path) -> Result<u64, ImportError> {
    let (sender, mut receiver) = mpsc::channel::<Result<Vec<(String, Bar)>, ImportError>>(2);
    let csv_path = path.to_owned();
    let reader = tokio::task::spawn_blocking(move || {
        let result = read_prices(&csv_path, &sender);
        if let Err(err) = result {
            let _ = sender.blocking_send(Err(err));
        }
    });
    let mut count = 0;
    while let Some(batch) = receiver.recv().await {
        let batch = batch?;
        count += batch.len() as u64;
        store.put_prices(&batch).await?;
    }
    reader.await.map_err(|err| read_error(path, err))?;
    Ok(count)
}

fn read_prices(
    path: &Path,
    sender: &mpsc::Sender<Result<Vec<(String, Bar)>, ImportError>>,
) -> Result<(), ImportError> {
    let mut reader = csv::ReaderBuilder::new()
        .trim(csv::Trim::All)
        .from_path(path)
        .map_err(|err| read_error(path, err))?;
    let headers = reader
        .headers()
        .map_err(|err| read_error(path, err))?
        .clone();
    for required in ["symbol", "date", "close"] {
        if !headers.iter().any(|h| h.eq_ignore_ascii_case(required)) {
            return Err(read_error(
                path,
                format!(
                    "the header has no \"{required}\" column (expected symbol,date,open,high,low,close,volume)"
                ),
            ));
        }
    }
    let lower: csv::StringRecord = headers.iter().map(str::to_ascii_lowercase).collect();
    reader.set_headers(lower);
    let mut batch = Vec::with_capacity(PRICE_BATCH);
    for (index, row) in reader.deserialize::<PriceRow>().enumerate() {
        let line = index + 2;
        let row = row.map_err(|err| read_error(path, format!("line {line}: {err}")))?;
        let date = facts::date(&row.date).ok_or_else(|| {
            read_error(
                path,
                format!("line {line}: \"{}\" is not a YYYY-MM-DD date", row.date),
            )
        })?;
        let symbol = row.symbol.trim().to_ascii_uppercase();
        if symbol.is_empty() {
            return Err(read_error(
                path,
                format!("line {line}: the symbol is empty"),
            ));
        }
        batch.push((
            symbol,
            Bar {
                date: date.to_string(),
                open: row.open,
                high: row.high,
                low: row.low,
                close: row.close,
                volume: row.volume,
            },
        ));
        if batch.len() == PRICE_BATCH
            && sender
                .blocking_send(Ok(std::mem::take(&mut batch)))
                .is_err()
        {
            return Ok(());
        }
    }
    if !batch.is_empty() {
        let _ = sender.blocking_send(Ok(batch));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn page_names_carry_the_cik_and_ticker_files_both_shapes() {
        assert_eq!(
            page_cik("/bulk/submissions.zip:CIK0000320193-submissions-001.json"),
            Some(320193)
        );
        assert_eq!(page_cik("CIK0000320193.json"), Some(320193));
        assert_eq!(page_cik("other.json"), None);
        let plain = br#"{"0": {"cik_str": 320193, "ticker": "AAPL", "title": "Apple Inc."}}"#;
        assert_eq!(
            tickers(plain).unwrap(),
            [("AAPL".to_owned(), 320193, "Apple Inc.".to_owned(), None)]
        );
        let exchange = br#"{"fields": ["cik", "name", "ticker", "exchange"], "data": [[789019, "MICROSOFT CORP", "MSFT", "Nasdaq"]]}"#;
        assert_eq!(
            tickers(exchange).unwrap(),
            [(
                "MSFT".to_owned(),
                789019,
                "MICROSOFT CORP".to_owned(),
                Some("Nasdaq".to_owned())
            )]
        );
    }
}
