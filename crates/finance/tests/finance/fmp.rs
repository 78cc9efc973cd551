//! Financial Modeling Prep against a local server answering its documented JSON.

use std::time::Duration;

use finance::{Backend, BackendError, BudgetSettings, Category, DataRequest, Fmp, Symbol};
use serde_json::json;

use crate::common::{Fake, Reply, loopback};

const KEY: &str = "fmp-test-key-123";

fn request(category: Category, ticker: &str) -> DataRequest {
    DataRequest::new(category, Some(Symbol::ticker(ticker)))
}

fn fmp(fake: &Fake) -> Fmp {
    Fmp::new(
        &loopback(),
        KEY,
        Some(&format!("{}/stable", fake.base)),
        BudgetSettings::FMP,
    )
    .unwrap()
}

fn transcript_text() -> String {
    let mut lines: Vec<String> = (0..60)
        .map(|i| format!("Operator: remark {i}, thanking everyone on the line for their patience today, reminding them of the safe harbour statement, and moving on to the next question in the queue."))
        .collect();
    lines[41] = "Kevan Parekh: Services gross margin was 75.3 percent, up on mix.".to_owned();
    lines.join("\n")
}

async fn documented() -> Fake {
    Fake::start(|r| {
        let symbol = r.param("symbol").to_owned();
        match r.path.as_str() {
            "/stable/quote" => Reply::json(json!([{
                "symbol": symbol, "name": "Apple Inc.", "price": 232.14, "changePercentage": 1.25,
                "change": 2.87, "volume": 41_000_000, "dayLow": 229.1, "dayHigh": 233.0,
                "yearHigh": 260.1, "yearLow": 164.08, "marketCap": 3_480_000_000_000u64,
                "priceAvg50": 225.4, "priceAvg200": 210.2, "exchange": "NASDAQ", "open": 230.0,
                "previousClose": 229.27, "timestamp": 1_735_678_800
            }])),
            "/stable/income-statement" => Reply::json(json!([
                {"date": "2024-09-28", "symbol": symbol, "reportedCurrency": "USD", "cik": "0000320193",
                 "filingDate": "2024-11-01", "fiscalYear": "2024", "period": "FY",
                 "revenue": 391_035_000_000u64, "netIncome": 93_736_000_000u64, "eps": 6.11, "epsDiluted": 6.08},
                {"date": "2023-09-30", "symbol": symbol, "reportedCurrency": "USD", "cik": "0000320193",
                 "filingDate": "2023-11-03", "fiscalYear": "2023", "period": "FY",
                 "revenue": 383_285_000_000u64, "netIncome": 96_995_000_000u64, "eps": 6.16, "epsDiluted": 6.13}
            ])),
            "/stable/earning-call-transcript-dates" => Reply::json(json!([
                {"quarter": 3, "fiscalYear": 2024, "date": "2024-08-01"},
                {"quarter": 4, "fiscalYear": 2024, "date": "2024-10-31"}
            ])),
            "/stable/earning-call-transcript" => Reply::json(json!([{
                "symbol": symbol, "period": format!("Q{}", r.param("quarter")), "year": 2024,
                "date": "2024-10-31", "content": transcript_text()
            }])),
            "/stable/insider-trading/search" => Reply::json(json!([
                {"symbol": symbol, "filingDate": "2025-01-03", "transactionDate": "2025-01-02",
                 "reportingName": "Doe Jane", "typeOfOwner": "officer: CFO", "transactionType": "S-Sale",
                 "securitiesTransacted": 1000, "price": 240.1, "securitiesOwned": 50000, "formType": "4",
                 "url": "http://169.254.169.254/latest/meta-data/iam"},
                {"symbol": symbol, "filingDate": "2024-12-02", "transactionDate": "2024-11-29",
                 "reportingName": "Roe Rick", "typeOfOwner": "director", "transactionType": "P-Purchase",
                 "securitiesTransacted": 10, "price": 230.0, "securitiesOwned": 900, "formType": "4",
                 "url": "https://www.sec.gov/Archives/edgar/data/320193/000032019324000001/form4.xml"}
            ])),
            "/stable/biggest-gainers" => Reply::json(json!([
                {"symbol": "ZZZ", "name": "Zed Co", "price": 5.5, "change": 1.5, "changesPercentage": 37.5, "exchange": "NASDAQ"}
            ])),
            "/stable/profile" => Reply::json(json!([])),
            _ => Reply::status(404, json!({"Error Message": "not found"})),
        }
    })
    .await
}

#[tokio::test]
async fn fmp_answers_its_documented_json() {
    let fake = documented().await;
    let fmp = fmp(&fake);

    let quote = fmp.fetch(&request(Category::Quote, "AAPL")).await.unwrap();
    assert_eq!(quote.name.as_deref(), Some("Apple Inc."));
    assert_eq!(quote.table.rows[0], [json!("symbol"), json!("AAPL")]);
    assert!(
        quote
            .table
            .rows
            .contains(&vec![json!("changePercentage"), json!(1.25)])
    );
    assert_eq!(quote.as_of.as_deref(), Some("2024-12-31T21:00:00+00:00"));
    let sent = &fake.requests()[0];
    assert_eq!(sent.param("apikey"), KEY);
    assert_eq!(sent.param("symbol"), "AAPL");

    let mut statement = request(Category::IncomeStatement, "AAPL");
    statement.limit = 2;
    let income = fmp.fetch(&statement).await.unwrap();
    assert_eq!(income.title, "Income statement (annual, USD)");
    assert_eq!(income.table.columns, ["item", "2024-09-28", "2023-09-30"]);
    assert_eq!(
        income.table.rows[0],
        [
            json!("revenue"),
            json!(391_035_000_000u64),
            json!(383_285_000_000u64)
        ]
    );
    assert!(
        income
            .table
            .render(10_000)
            .contains("| revenue | 391.04B | 383.29B |")
    );
    let sent = fake.requests().last().cloned().unwrap();
    assert_eq!((sent.param("period"), sent.param("limit")), ("annual", "2"));

    // The latest call is found first, then cut to the passages about the query.
    let mut transcript = request(Category::Transcript, "AAPL");
    transcript.query = "What did Apple say about services gross margin?".to_owned();
    let call = fmp.fetch(&transcript).await.unwrap();
    assert_eq!(call.title, "Earnings call transcript, Q4 2024");
    let sent = fake.requests().last().cloned().unwrap();
    assert_eq!((sent.param("year"), sent.param("quarter")), ("2024", "4"));
    let text = call.table.render(100_000);
    assert!(
        text.contains("Services gross margin was 75.3 percent"),
        "{text}"
    );
    assert!(
        call.table.rows.len() < 60,
        "cut to matching passages: {}",
        call.table.rows.len()
    );
    assert!(call.notes[0].contains("of 60 passages"), "{:?}", call.notes);

    // A link into a private range is dropped; a public one kept.
    let insiders = fmp
        .fetch(&request(Category::InsiderTrading, "AAPL"))
        .await
        .unwrap();
    let rendered = insiders.table.render(100_000);
    assert!(!rendered.contains("169.254"), "{rendered}");
    assert!(
        rendered.contains("https://www.sec.gov/Archives/edgar/data/320193/"),
        "{rendered}"
    );

    // The movers spell the change with an s.
    let movers = fmp
        .fetch(&DataRequest {
            query: "top gainers today".to_owned(),
            ..DataRequest::new(Category::MarketMovers, None)
        })
        .await
        .unwrap();
    assert_eq!(movers.table.rows[0][0], "gainers");
    assert_eq!(movers.table.rows[0][5], json!(37.5));
    assert!(fake.paths().contains(&"/stable/biggest-gainers".to_owned()));
    assert!(
        !fake.paths().contains(&"/stable/biggest-losers".to_owned()),
        "only the list asked for"
    );

    // An empty list is no data, not an empty table.
    assert!(matches!(
        fmp.fetch(&request(Category::Profile, "NOPE")).await,
        Err(BackendError::NotFound(_))
    ));
}

#[tokio::test]
async fn fmp_errors_are_read_from_their_shapes() {
    let fake = Fake::start(|r| match r.path.as_str() {
        "/stable/quote" => Reply::status(
            401,
            json!({"Error Message": "Invalid API KEY. Feel free to create a Free API Key or visit https://site.financialmodelingprep.com/faqs?search=why-is-my-api-key-invalid for more information."}),
        ),
        "/stable/etf/holdings" => Reply::status(
            402,
            json!({"Error Message": "Restricted Endpoint: This endpoint is not available under your current subscription."}),
        ),
        // Past the plan's limit FMP may still answer 200.
        "/stable/profile" => Reply::json(json!({"Error Message": "Limit Reach . Please upgrade your plan or visit our documentation for more details at https://site.financialmodelingprep.com/"})),
        _ => Reply::status(500, json!({"error": "boom"})),
    })
    .await;
    let fmp = fmp(&fake);
    let refused = fmp
        .fetch(&request(Category::Quote, "AAPL"))
        .await
        .unwrap_err();
    assert!(
        matches!(&refused, BackendError::Refused(m) if m.contains("Invalid API KEY")),
        "{refused:?}"
    );
    assert!(!refused.to_string().contains(KEY));
    assert!(matches!(
        fmp.fetch(&request(Category::EtfHoldings, "SPY")).await,
        Err(BackendError::Refused(_))
    ));
    let upstream = fmp
        .fetch(&request(Category::Peers, "AAPL"))
        .await
        .unwrap_err();
    assert!(
        matches!(
            upstream,
            BackendError::Upstream {
                status: Some(500),
                ..
            }
        ),
        "{upstream:?}"
    );

    let limited = fmp
        .fetch(&request(Category::Profile, "AAPL"))
        .await
        .unwrap_err();
    assert!(
        matches!(limited, BackendError::RateLimited { .. }),
        "{limited:?}"
    );
    // The limit is honoured: the next call is refused here, without a request.
    let before = fake.hits();
    assert!(matches!(
        fmp.fetch(&request(Category::Quote, "MSFT")).await,
        Err(BackendError::RateLimited { .. })
    ));
    assert_eq!(fake.hits(), before);
}

#[tokio::test]
async fn a_429_with_retry_after_pauses_the_back_end() {
    let fake = Fake::start(|_| {
        Reply::status(429, json!({"Error Message": "Too Many Requests"}))
            .header("retry-after", "120")
    })
    .await;
    let fmp = fmp(&fake);
    let err = fmp
        .fetch(&request(Category::Quote, "AAPL"))
        .await
        .unwrap_err();
    assert!(
        matches!(err, BackendError::RateLimited { retry_after: Some(d), .. } if d == Duration::from_secs(120)),
        "{err:?}"
    );
    assert!(matches!(
        fmp.fetch(&request(Category::Quote, "AAPL")).await,
        Err(BackendError::RateLimited { .. })
    ));
    assert_eq!(fake.hits(), 1, "no request during the pause");
}

#[tokio::test]
async fn the_daily_budget_stops_requests() {
    let fake = Fake::start(|_| Reply::json(json!([{"symbol": "AAPL", "price": 1.0}]))).await;
    let budget = BudgetSettings {
        per_minute: 600,
        per_day: Some(2),
    };
    let fmp = Fmp::new(
        &loopback(),
        KEY,
        Some(&format!("{}/stable", fake.base)),
        budget,
    )
    .unwrap();
    for _ in 0..2 {
        fmp.fetch(&request(Category::Quote, "AAPL")).await.unwrap();
    }
    assert_eq!(
        fmp.fetch(&request(Category::Quote, "AAPL")).await,
        Err(BackendError::BudgetExhausted(2))
    );
    assert_eq!(fake.hits(), 2);
    assert_eq!(fmp.budget().used_today(), 2);
}
