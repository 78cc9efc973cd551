//! Alpha Vantage against a local server answering its documented JSON, including its errors
//! and throttling notes, which arrive as HTTP 200.

use finance::{
    AlphaVantage, Backend, BackendError, BudgetSettings, Category, DataRequest, Interval, Symbol,
};
use serde_json::json;

use crate::common::{Fake, Reply, loopback};

const KEY: &str = "av-test-key-456";

fn request(category: Category, ticker: &str) -> DataRequest {
    DataRequest::new(category, Some(Symbol::ticker(ticker)))
}

fn alpha(fake: &Fake) -> AlphaVantage {
    let budget = BudgetSettings {
        per_minute: 600,
        per_day: None,
    };
    AlphaVantage::new(&loopback(), KEY, Some(&fake.base), budget).unwrap()
}

#[tokio::test]
async fn alpha_vantage_answers_its_documented_json() {
    let fake = Fake::start(|r| {
        assert_eq!(r.path, "/query");
        assert_eq!(r.param("apikey"), KEY);
        match r.param("function") {
            "GLOBAL_QUOTE" => Reply::json(json!({"Global Quote": {
                "01. symbol": "IBM", "02. open": "229.1000", "03. high": "231.0000", "04. low": "228.5000",
                "05. price": "230.5000", "06. volume": "3012345", "07. latest trading day": "2025-01-31",
                "08. previous close": "229.0000", "09. change": "1.5000", "10. change percent": "0.6550%"
            }})),
            "TIME_SERIES_DAILY" => Reply::json(json!({
                "Meta Data": {"1. Information": "Daily Prices", "2. Symbol": "IBM"},
                "Time Series (Daily)": {
                    "2025-01-31": {"1. open": "229.1", "2. high": "231.0", "3. low": "228.5", "4. close": "230.5", "5. volume": "3012345"},
                    "2025-01-30": {"1. open": "228.0", "2. high": "229.5", "3. low": "227.0", "4. close": "229.0", "5. volume": "2500000"},
                    "2025-01-29": {"1. open": "227.0", "2. high": "228.5", "3. low": "226.0", "4. close": "228.0", "5. volume": "2400000"}
                }
            })),
            "INCOME_STATEMENT" => Reply::json(json!({
                "symbol": "IBM",
                "annualReports": [
                    {"fiscalDateEnding": "2024-12-31", "reportedCurrency": "USD", "totalRevenue": "62753000000", "netIncome": "6023000000", "researchAndDevelopment": "None"},
                    {"fiscalDateEnding": "2023-12-31", "reportedCurrency": "USD", "totalRevenue": "61860000000", "netIncome": "7502000000", "researchAndDevelopment": "None"}
                ],
                "quarterlyReports": []
            })),
            "TOP_GAINERS_LOSERS" => Reply::json(json!({
                "metadata": "Top gainers, losers, and most actively traded US tickers",
                "last_updated": "2025-01-31 16:15:59 US/Eastern",
                "top_gainers": [{"ticker": "ABCD", "price": "1.23", "change_amount": "0.5", "change_percentage": "68.49%", "volume": "123456"}],
                "top_losers": [{"ticker": "WXYZ", "price": "0.5", "change_amount": "-0.5", "change_percentage": "-50.0%", "volume": "654321"}],
                "most_actively_traded": []
            })),
            // An unknown symbol: an "Error Message", with status 200.
            "OVERVIEW" if r.param("symbol") == "NOPE" => Reply::json(json!({"Error Message": "Invalid API call. Please retry or visit the documentation (https://www.alphavantage.co/documentation/) for OVERVIEW."})),
            "OVERVIEW" => Reply::json(json!({})),
            "EARNINGS_CALL_TRANSCRIPT" => Reply::json(json!({"Information": "Thank you for using Alpha Vantage! This is a premium endpoint. You may subscribe to any of the premium plans at https://www.alphavantage.co/premium/ to instantly unlock all premium endpoints"})),
            other => Reply::json(json!({"Error Message": format!("unexpected {other}")})),
        }
    })
    .await;
    let alpha = alpha(&fake);

    let quote = alpha.fetch(&request(Category::Quote, "IBM")).await.unwrap();
    assert_eq!(quote.table.rows[0], [json!("symbol"), json!("IBM")]);
    assert_eq!(quote.table.rows[1], [json!("price"), json!("230.5000")]);
    assert_eq!(quote.as_of.as_deref(), Some("2025-01-31"));
    assert!(quote.table.render(1000).contains("| price | 230.5 |"));

    let mut daily = request(Category::PriceHistory, "IBM");
    daily.limit = 2;
    let bars = alpha.fetch(&daily).await.unwrap();
    assert_eq!(bars.table.rows.len(), 2);
    assert_eq!(bars.table.rows[0][0], "2025-01-31");
    assert_eq!(bars.table.rows[0][4], json!(230.5));
    assert_eq!(
        fake.requests().last().unwrap().param("outputsize"),
        "compact"
    );
    let mut four_hours = request(Category::PriceHistory, "IBM");
    four_hours.interval = Interval::Hour4;
    assert!(matches!(
        alpha.fetch(&four_hours).await,
        Err(BackendError::NotFound(_))
    ));

    let income = alpha
        .fetch(&request(Category::IncomeStatement, "IBM"))
        .await
        .unwrap();
    assert_eq!(income.title, "Income statement (annual, USD)");
    assert_eq!(income.table.rows[0][0], "totalRevenue");
    assert!(
        income
            .table
            .rows
            .iter()
            .all(|r| r[0] != "researchAndDevelopment"),
        "\"None\" is no value"
    );

    let movers = alpha
        .fetch(&DataRequest {
            query: "biggest losers".to_owned(),
            ..DataRequest::new(Category::MarketMovers, None)
        })
        .await
        .unwrap();
    assert_eq!(movers.table.rows.len(), 1);
    assert_eq!(movers.table.rows[0][1], "WXYZ");

    let unknown = alpha
        .fetch(&request(Category::Profile, "NOPE"))
        .await
        .unwrap_err();
    assert!(
        matches!(&unknown, BackendError::Upstream { message, .. } if message.contains("Invalid API call")),
        "{unknown:?}"
    );
    assert!(matches!(
        alpha.fetch(&request(Category::Profile, "IBM")).await,
        Err(BackendError::NotFound(_))
    ));
    let premium = alpha
        .fetch(&request(Category::Transcript, "IBM"))
        .await
        .unwrap_err();
    assert!(matches!(premium, BackendError::Refused(_)), "{premium:?}");
    assert!(!alpha.supports(Category::Filings) && !alpha.supports(Category::Segments));
}

#[tokio::test]
async fn throttling_notes_in_a_200_pause_the_back_end() {
    let fake = Fake::start(|r| match r.param("function") {
        "GLOBAL_QUOTE" => Reply::json(json!({"Note": "Thank you for using Alpha Vantage! Our standard API call frequency is 5 calls per minute and 500 calls per day."})),
        _ => Reply::json(json!({"Information": "We have detected your API key as av-... and our standard API rate limit is 25 requests per day."})),
    })
    .await;
    let alpha = alpha(&fake);
    let limited = alpha
        .fetch(&request(Category::Quote, "IBM"))
        .await
        .unwrap_err();
    assert!(
        matches!(limited, BackendError::RateLimited { .. }),
        "{limited:?}"
    );
    assert!(matches!(
        alpha.fetch(&request(Category::Earnings, "IBM")).await,
        Err(BackendError::RateLimited { .. })
    ));
    assert_eq!(fake.hits(), 1, "the note was honoured: no second request");
}
