//! SEC EDGAR against a local server answering the SEC's documented JSON.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use finance::{Backend, BackendError, BudgetSettings, Category, DataRequest, Edgar, Symbol};
use serde_json::json;

use crate::common::{self, ACME, Fake, Reply, loopback};

const AGENT: &str = "agentd-tests admin@example.com";

fn request(category: Category) -> DataRequest {
    DataRequest::new(category, Some(Symbol::ticker("ACME")))
}

fn edgar(fake: &Fake) -> Edgar {
    Edgar::new(
        &loopback(),
        AGENT,
        Some(&fake.base),
        Some(&fake.base),
        BudgetSettings::SEC_EDGAR,
    )
    .unwrap()
}

/// The SEC's three documents for ACME; the submissions file names `older` pages.
async fn sec(older: Vec<(String, String, String)>) -> Fake {
    Fake::start(move |r| {
        let older: Vec<(&str, &str, &str)> = older
            .iter()
            .map(|(a, b, c)| (a.as_str(), b.as_str(), c.as_str()))
            .collect();
        match r.path.as_str() {
            "/files/company_tickers.json" => {
                Reply::json(common::company_tickers(&[&ACME, &common::BETA]))
            }
            "/submissions/CIK0001234567.json" => {
                Reply::json(common::submissions(&ACME, &common::filings(&ACME), &older))
            }
            "/submissions/CIK0001234567-submissions-001.json" => {
                Reply::json(common::submissions_page(&ACME))
            }
            "/api/xbrl/companyfacts/CIK0001234567.json" => Reply::json(common::companyfacts(&ACME)),
            _ => Reply::text(404, "<html>Not Found</html>"),
        }
    })
    .await
}

#[tokio::test]
async fn edgar_answers_profiles_statements_and_filings_with_links() {
    let fake = sec(Vec::new()).await;
    let edgar = edgar(&fake);

    let profile = edgar.fetch(&request(Category::Profile)).await.unwrap();
    assert_eq!(profile.name.as_deref(), Some("Acme Robotics Inc."));
    assert!(
        profile
            .table
            .rows
            .contains(&vec![json!("industry"), json!(common::ACME.industry)])
    );
    assert_eq!(
        profile.url.as_deref(),
        Some("https://www.sec.gov/cgi-bin/browse-edgar?action=getcompany&CIK=0001234567")
    );

    let income = edgar
        .fetch(&request(Category::IncomeStatement))
        .await
        .unwrap();
    assert_eq!(income.table.columns, ["item", "2024-12-31", "2023-12-31"]);
    assert_eq!(
        income.table.rows[0],
        [json!("Revenue"), json!(1_200_000_000), json!(1_000_000_000)]
    );
    // Cited by the 10-K that reported the latest year, on the public archive.
    assert_eq!(
        income.url.as_deref(),
        Some("https://www.sec.gov/Archives/edgar/data/1234567/000123456725000010/")
    );
    let balance = edgar.fetch(&request(Category::BalanceSheet)).await.unwrap();
    assert!(
        balance
            .table
            .rows
            .iter()
            .any(|r| r[0] == "Total assets" && r[1] == json!(2_400_000_000u64))
    );
    let mut quarterly = request(Category::IncomeStatement);
    quarterly.period = Some(finance::Period::Quarter);
    let quarters = edgar.fetch(&quarterly).await.unwrap();
    let net = quarters
        .table
        .rows
        .iter()
        .find(|r| r[0] == "Net income")
        .unwrap();
    // Q4 = the year (150M) less nine months (110M): derived, and said so.
    assert_eq!(net[1], json!(40_000_000));
    assert!(quarters.notes.iter().any(|n| n.contains("derived")));

    let mut filings = request(Category::Filings);
    filings.query = "latest 10-K".to_owned();
    let list = edgar.fetch(&filings).await.unwrap();
    assert_eq!(list.table.rows.len(), 2, "10-Ks only: {:?}", list.table);
    assert_eq!(
        list.table.rows[0][4],
        "https://www.sec.gov/Archives/edgar/data/1234567/000123456725000010/acme-20241231.htm"
    );
    let insiders = edgar
        .fetch(&request(Category::InsiderTrading))
        .await
        .unwrap();
    assert_eq!(insiders.table.rows.len(), 1);
    assert_eq!(insiders.table.rows[0][0], "4");

    // Every request named the contact; each document was fetched once for all categories.
    let requests = fake.requests();
    assert!(
        requests
            .iter()
            .all(|r| r.headers.get("user-agent").unwrap() == AGENT)
    );
    let count = |path: &str| requests.iter().filter(|r| r.path == path).count();
    assert_eq!(count("/files/company_tickers.json"), 1);
    assert_eq!(count("/api/xbrl/companyfacts/CIK0001234567.json"), 1);
    assert_eq!(count("/submissions/CIK0001234567.json"), 1);

    // Names resolve through the tickers file.
    let found = edgar.search_name("beta widgets").await.unwrap();
    assert_eq!(found[0].ticker, "BWID");
    assert_eq!(
        edgar.lookup_ticker("acme").await.unwrap().cik,
        Some(1_234_567)
    );
    assert!(matches!(
        edgar
            .fetch(&DataRequest::new(
                Category::Profile,
                Some(Symbol::ticker("NOPE"))
            ))
            .await,
        Err(BackendError::NotFound(_))
    ));
}

#[tokio::test]
async fn older_filings_come_only_from_the_secs_own_host() {
    // An internal service on another loopback address, which the guard refuses.
    let internal_hits = Arc::new(AtomicUsize::new(0));
    let counter = internal_hits.clone();
    let internal = Fake::start_on("127.0.0.2:0", move |_| {
        counter.fetch_add(1, Ordering::SeqCst);
        Reply::json(common::submissions_page(&ACME))
    })
    .await;
    let fake = sec(vec![
        (
            "CIK0001234567-submissions-001.json".to_owned(),
            "2010-01-01".to_owned(),
            "2016-12-31".to_owned(),
        ),
        (
            format!("{}/secret.json", internal.base),
            "2000-01-01".to_owned(),
            "2009-12-31".to_owned(),
        ),
        (
            "//127.0.0.2/other.json".to_owned(),
            "1990-01-01".to_owned(),
            "1999-12-31".to_owned(),
        ),
    ])
    .await;
    let edgar = edgar(&fake);
    let mut old = request(Category::Filings);
    old.from = chrono::NaiveDate::from_ymd_opt(1995, 1, 1);
    old.limit = 20;
    let list = edgar.fetch(&old).await.unwrap();
    // The SEC's own page was read; the two pointing elsewhere were not.
    assert!(
        list.table.rows.iter().any(|r| r[1] == "2015-03-02"),
        "{:?}",
        list.table
    );
    assert_eq!(internal_hits.load(Ordering::SeqCst), 0);
    assert!(
        list.notes
            .iter()
            .filter(|n| n.contains("outside the SEC's data host"))
            .count()
            == 2,
        "{:?}",
        list.notes
    );
    assert!(
        edgar
            .older_page_url("http://169.254.169.254/latest/meta-data")
            .is_err()
    );
}

#[tokio::test]
async fn edgar_refusals_and_rate_limits() {
    let fake = Fake::start(|r| match r.path.as_str() {
        "/files/company_tickers.json" => Reply::json(common::company_tickers(&[&ACME])),
        // The SEC's answer to an undeclared tool.
        "/submissions/CIK0001234567.json" => Reply::text(
            403,
            "<html>Your Request Originates from an Undeclared Automated Tool</html>",
        ),
        _ => Reply::text(429, "Request Rate Threshold Exceeded").header("retry-after", "30"),
    })
    .await;
    let edgar = edgar(&fake);
    let refused = edgar.fetch(&request(Category::Profile)).await.unwrap_err();
    assert!(
        matches!(&refused, BackendError::Refused(m) if m.contains("AGENTD_SEC_USER_AGENT")),
        "{refused:?}"
    );
    let limited = edgar
        .fetch(&request(Category::IncomeStatement))
        .await
        .unwrap_err();
    assert!(
        matches!(limited, BackendError::RateLimited { .. }),
        "{limited:?}"
    );
    let before = fake.hits();
    assert!(matches!(
        edgar.fetch(&request(Category::CashFlow)).await,
        Err(BackendError::RateLimited { .. })
    ));
    assert_eq!(
        fake.hits(),
        before,
        "no request while the SEC asked for a pause"
    );
    assert!(!edgar.supports(Category::Quote) && edgar.supports(Category::Filings));
    assert!(Edgar::new(&loopback(), "  ", None, None, BudgetSettings::SEC_EDGAR).is_err());
}
