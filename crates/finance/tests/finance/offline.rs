//! The embedded offline default: generated SEC bulk files (plain and zipped) and a prices
//! CSV imported into the store, then `finance_search` answered from it with no network. Each
//! test runs on both back ends of the store (a SQLite file; PostgreSQL, where the import and
//! the searching service are separate pools, as a CLI and a replica are).

use std::path::{Path, PathBuf};
use std::sync::Arc;

use finance::FinanceSearch;
use serde_json::{Value, json};

use crate::common::{self, ACME, BETA, GAMMA, call, results};
use crate::db::{Backend, TestDb, matrix};

matrix!(
    the_import_reads_files_zips_and_prices_into_a_private_store,
    fundamentals_filings_and_prices_work_offline,
    peers_history_and_older_filings_come_from_the_import,
);

/// Writes the bulk files into `dir` the way the SEC ships them: the tickers file, ACME's
/// companyfacts as a file, the others' in `companyfacts.zip`, every submissions file and an
/// older-filings page in `submissions.zip`, a file of something else, and the prices CSV.
pub fn write_bulk(dir: &Path) -> (Vec<PathBuf>, PathBuf) {
    let json_bytes = |value: Value| serde_json::to_vec(&value).unwrap();
    let tickers = dir.join("company_tickers.json");
    std::fs::write(
        &tickers,
        json_bytes(common::company_tickers(&[&ACME, &BETA, &GAMMA])),
    )
    .unwrap();
    let facts_dir = dir.join("facts");
    std::fs::create_dir_all(&facts_dir).unwrap();
    std::fs::write(
        facts_dir.join("CIK0001234567.json"),
        json_bytes(common::companyfacts(&ACME)),
    )
    .unwrap();
    std::fs::write(facts_dir.join("notes.json"), br#"{"hello": "world"}"#).unwrap();
    let companyfacts = dir.join("companyfacts.zip");
    std::fs::write(
        &companyfacts,
        common::zip(&[
            (
                "CIK0007654321.json".to_owned(),
                json_bytes(common::companyfacts(&BETA)),
            ),
            (
                "CIK0005550001.json".to_owned(),
                json_bytes(common::companyfacts(&GAMMA)),
            ),
        ]),
    )
    .unwrap();
    let submissions = dir.join("submissions.zip");
    let older = [(
        "CIK0001234567-submissions-001.json",
        "2010-01-01",
        "2016-12-31",
    )];
    std::fs::write(
        &submissions,
        common::zip(&[
            (
                "CIK0001234567.json".to_owned(),
                json_bytes(common::submissions(&ACME, &common::filings(&ACME), &older)),
            ),
            (
                "CIK0001234567-submissions-001.json".to_owned(),
                json_bytes(common::submissions_page(&ACME)),
            ),
            (
                "CIK0007654321.json".to_owned(),
                json_bytes(common::submissions(&BETA, &common::filings(&BETA), &[])),
            ),
            (
                "CIK0005550001.json".to_owned(),
                json_bytes(common::submissions(&GAMMA, &common::filings(&GAMMA), &[])),
            ),
        ]),
    )
    .unwrap();
    let prices = dir.join("prices.csv");
    std::fs::write(&prices, common::prices_csv(&[&ACME, &BETA, &GAMMA], 25)).unwrap();
    (vec![tickers, facts_dir, companyfacts, submissions], prices)
}

async fn the_import_reads_files_zips_and_prices_into_a_private_store(db: &TestDb) {
    let dir = db.path().to_owned();
    let (paths, prices) = write_bulk(&dir);
    let path = db.settings().store_path;
    let store = db.open().await;
    let report = finance::import(&store, &paths, Some(&prices))
        .await
        .unwrap();
    assert_eq!(report.tickers, 3);
    assert_eq!(report.companyfacts, 3);
    assert_eq!(report.submissions, 3);
    assert_eq!(report.filing_pages, 1);
    assert_eq!(report.prices, 75);
    assert_eq!(report.skipped.len(), 1, "{:?}", report.skipped);
    assert!(report.skipped[0].0.ends_with("notes.json"));
    let counts = store.counts().await.unwrap();
    // 34 facts per company: the statement concepts only (two others left out), one value per
    // period (a restated year counted once).
    assert_eq!(counts.facts, 3 * 34);
    assert_eq!(
        (
            counts.tickers,
            counts.companies,
            counts.filings,
            counts.prices
        ),
        (3, 3, 16, 75)
    );
    // On PostgreSQL the rows are in the shared database, and no file is written.
    assert_eq!(
        db.postgres_rows("facts").await,
        (db.backend == Backend::Postgres).then_some(3 * 34)
    );
    assert_eq!(path.exists(), db.backend == Backend::Sqlite);
    #[cfg(unix)]
    if db.backend == Backend::Sqlite {
        use std::os::unix::fs::PermissionsExt as _;
        let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
    }
    // Importing again replaces rather than adds.
    finance::import(&store, &paths, Some(&prices))
        .await
        .unwrap();
    assert_eq!(store.counts().await.unwrap(), counts);

    let bad = dir.join("bad.csv");
    std::fs::write(
        &bad,
        "symbol,date,close\nACME,2025-01-02,30\nACME,02/01/2025,31\n",
    )
    .unwrap();
    let err = finance::import(&store, &[], Some(&bad)).await.unwrap_err();
    assert!(err.to_string().contains("line 3"), "{err}");
    let headless = dir.join("headless.csv");
    std::fs::write(&headless, "ACME,2025-01-02,30\n").unwrap();
    let err = finance::import(&store, &[], Some(&headless))
        .await
        .unwrap_err();
    assert!(err.to_string().contains("symbol"), "{err}");
    store.close().await;
}

/// Imports the bulk files through one store (the CLI), then builds the service on a store of
/// its own (a server, or another replica of a PostgreSQL store).
async fn offline_tool(db: &TestDb) -> FinanceSearch {
    let (paths, prices) = write_bulk(db.path());
    let store = db.open().await;
    finance::import(&store, &paths, Some(&prices))
        .await
        .unwrap();
    store.close().await;
    let service = finance::build(
        &db.settings(),
        &netguard::Policy::strict(),
        Arc::new(engine::mcp::Unavailable),
    )
    .await
    .unwrap();
    assert_eq!(service.sources(), ["local"]);
    FinanceSearch::new(Arc::new(service))
}

fn result<'a>(item: &'a Value, category: &str) -> &'a Value {
    item["results"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["category"] == category)
        .expect("a result of that category")
}

async fn fundamentals_filings_and_prices_work_offline(db: &TestDb) {
    let tool = offline_tool(db).await;
    let outcome = call(
        &tool,
        json!({"query": "Acme fundamentals and latest 10-K", "symbols": ["acme robotics"],
               "categories": ["income_statement", "ratios", "filings", "quote", "transcript"]}),
        3,
    )
    .await;
    let item = results(&outcome);
    assert_eq!(
        item["queries"],
        json!(["Acme fundamentals and latest 10-K"])
    );

    // A company name resolved to its ticker; ids numbered from the run's next source.
    let income = result(&item, "income_statement");
    assert_eq!(income["id"], 3);
    assert_eq!(income["symbol"], "ACME");
    assert_eq!(income["name"], "Acme Robotics Inc.");
    assert_eq!(income["source"], "local");
    assert_eq!(income["as_of"], "2024-12-31");
    assert_eq!(
        income["data"]["columns"],
        json!(["item", "2024-12-31", "2023-12-31"])
    );
    assert_eq!(
        income["data"]["rows"][0],
        json!(["Revenue", 1_200_000_000, 1_000_000_000])
    );

    // The P/E uses the last imported close (30 + 24) and the latest diluted EPS (1.5).
    let ratios = result(&item, "ratios");
    let pe = ratios["data"]["rows"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r[0].as_str().unwrap().starts_with("P/E"))
        .unwrap();
    assert_eq!(pe[1], json!(36.0));

    let filings = result(&item, "filings");
    let rows = filings["data"]["rows"].as_array().unwrap();
    // The 10-Ks the query names, the one of the older-filings page included.
    assert_eq!(rows.len(), 3, "{rows:?}");
    assert_eq!(rows[2][1], "2015-03-02");
    assert_eq!(
        rows[0][4],
        "https://www.sec.gov/Archives/edgar/data/1234567/000123456725000010/acme-20241231.htm"
    );

    let quote = result(&item, "quote");
    assert!(
        quote["data"]["notes"][0]
            .as_str()
            .unwrap()
            .contains("not a live quote"),
        "{quote}"
    );

    // Citable: the results with an SEC page.
    let cited: Vec<(u64, &str)> = outcome
        .sources
        .iter()
        .map(|s| (s.number, s.url.as_str()))
        .collect();
    assert!(
        cited.contains(&(
            3,
            "https://www.sec.gov/Archives/edgar/data/1234567/000123456725000010/"
        )),
        "{cited:?}"
    );
    assert!(
        cited
            .iter()
            .any(|(n, url)| *n == filings["id"].as_u64().unwrap() && url.contains("browse-edgar")),
        "{cited:?}"
    );
    assert_eq!(outcome.invocations, [("finance_search".to_owned(), 1)]);

    // What the model reads: compact tables, and the transcript said to be unavailable.
    let text = &outcome.model_text;
    assert!(text.contains("[3] ACME: Income statement"), "{text}");
    assert!(text.contains("| Revenue | 1.2B | 1B |"), "{text}");
    assert!(text.contains("Not available: ACME transcript: earnings call transcript is not available from the configured sources (local)"), "{text}");
    assert!(text.contains("do not estimate"), "{text}");

    // A second call numbers on after the first.
    let next = call(
        &tool,
        json!({"query": "top gainers", "categories": ["market_movers"]}),
        4,
    )
    .await;
    let item = results(&next);
    let movers = &item["results"][0];
    // Ids go on from the last call's (3 to 6), not from the run's source number (4).
    assert_eq!(movers["id"], 7, "{movers}");
    let rows = movers["data"]["rows"].as_array().unwrap();
    let order: Vec<&str> = rows.iter().map(|r| r[1].as_str().unwrap()).collect();
    assert_eq!(
        order,
        ["BWID", "ACME", "GMFD"],
        "gainers only, largest first"
    );
}

async fn peers_history_and_older_filings_come_from_the_import(db: &TestDb) {
    let tool = offline_tool(db).await;
    let outcome = call(
        &tool,
        json!({"query": "peers, weekly prices, filings since 2014", "symbols": ["ACME"],
               "categories": ["peers", "price_history", "filings", "insider_trading", "segments"],
               "interval": "1week", "from": "2014-01-01", "limit": 3}),
        1,
    )
    .await;
    let item = results(&outcome);
    let peers = result(&item, "peers");
    assert_eq!(
        peers["data"]["rows"],
        json!([["BWID", "Beta Widgets Corp", "0007654321"]])
    );
    let weekly = result(&item, "price_history");
    let bars = weekly["data"]["rows"].as_array().unwrap();
    assert_eq!(bars.len(), 3);
    // A week carries its last day: the import ends on Tuesday 4 February 2025.
    assert_eq!(bars[0][0], "2025-02-04");
    let filings = result(&item, "filings");
    let dates: Vec<&str> = filings["data"]["rows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r[1].as_str().unwrap())
        .collect();
    assert_eq!(
        dates,
        ["2025-02-14", "2025-01-28", "2025-01-20"],
        "limit 3, most recent first"
    );
    let insiders = result(&item, "insider_trading");
    assert_eq!(insiders["data"]["rows"][0][0], "4");
    assert!(
        outcome
            .model_text
            .contains("segments: revenue segments is not available"),
        "{}",
        outcome.model_text
    );
}
