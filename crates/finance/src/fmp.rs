//! Financial Modeling Prep's "stable" API (`FMP_API_KEY`): GET `{base}/{endpoint}?…&apikey=`,
//! JSON arrays of objects. Errors come as an object carrying `"Error Message"`, with 401/403
//! for a bad key or a plan without the endpoint, 429 (or "Limit Reach") past the plan's limit,
//! and sometimes with status 200: the message decides.

use std::sync::Arc;

use chrono::{DateTime, Days, NaiveDate};
use netguard::Policy;
use reqwest::header::HeaderMap;
use serde_json::{Map, Value, json};

use crate::backend::{Backend, BackendError, Block, DataRequest, Listing, public_link};
use crate::budget::{Budget, BudgetSettings, DEFAULT_COOL_DOWN};
use crate::category::{Category, Interval, Period};
use crate::http::Http;
use crate::passages::{self, transcript_block};
use crate::prices::{Bar, aggregate, bars_table};
use crate::records::{in_range, mover_lists, text};
use crate::table::Table;

/// The public API base.
pub const DEFAULT_BASE_URL: &str = "https://financialmodelingprep.com/stable";

/// `source` of its results.
pub const SOURCE: &str = "fmp";

/// Fields that describe a statement row rather than measure anything.
const STATEMENT_META: &[&str] = &[
    "symbol",
    "reportedCurrency",
    "cik",
    "filingDate",
    "acceptedDate",
    "fiscalYear",
    "period",
    "calendarYear",
    "link",
    "finalLink",
];

/// The Financial Modeling Prep back end.
pub struct Fmp {
    http: Http,
    base: String,
    key: String,
}

impl Fmp {
    /// `base` defaults to [`DEFAULT_BASE_URL`]; `policy` must allow its addresses.
    pub fn new(
        policy: &Policy,
        api_key: &str,
        base: Option<&str>,
        budget: BudgetSettings,
    ) -> Result<Fmp, BackendError> {
        if api_key.trim().is_empty() {
            return Err(BackendError::Config("the FMP API key is empty".to_owned()));
        }
        Ok(Fmp {
            http: Http::new(policy, Arc::new(Budget::new(budget)), HeaderMap::new())?,
            base: base.unwrap_or(DEFAULT_BASE_URL).to_owned(),
            key: api_key.trim().to_owned(),
        })
    }

    pub fn budget(&self) -> &Budget {
        self.http.budget()
    }

    /// One endpoint's answer as a list of objects (empty: `NotFound`).
    async fn list(
        &self,
        path: &str,
        params: &[(&str, String)],
    ) -> Result<Vec<Map<String, Value>>, BackendError> {
        let mut query: Vec<(&str, String)> = params.to_vec();
        query.push(("apikey", self.key.clone()));
        let url = self.http.url(&self.base, path, &query)?;
        let answer = self.http.get(url).await?;
        let body = answer.json();
        let message = body
            .as_ref()
            .ok()
            .and_then(|v| v.get("Error Message").or_else(|| v.get("error")))
            .and_then(Value::as_str)
            .map(str::to_owned);
        if let Some(message) = message {
            return Err(self.classify(Some(answer.status), message));
        }
        if !(200..300).contains(&answer.status) {
            return Err(self.classify(Some(answer.status), answer.excerpt()));
        }
        let items = match body? {
            Value::Array(items) => items,
            Value::Object(object) if !object.is_empty() => vec![Value::Object(object)],
            _ => Vec::new(),
        };
        let records: Vec<Map<String, Value>> = items
            .into_iter()
            .filter_map(|v| match v {
                Value::Object(o) => Some(o),
                _ => None,
            })
            .collect();
        if records.is_empty() {
            return Err(BackendError::NotFound(format!(
                "FMP has no {path} data for this request"
            )));
        }
        Ok(records)
    }

    fn classify(&self, status: Option<u16>, message: String) -> BackendError {
        let lower = message.to_lowercase();
        if lower.contains("limit reach") || status == Some(429) {
            self.http.cool_down(DEFAULT_COOL_DOWN);
            BackendError::RateLimited {
                retry_after: Some(DEFAULT_COOL_DOWN),
                message,
            }
        } else if matches!(status, Some(401..=403))
            || lower.contains("api key")
            || lower.contains("premium")
            || lower.contains("subscription")
            || lower.contains("restricted")
        {
            BackendError::Refused(message)
        } else if status == Some(404) {
            BackendError::NotFound(message)
        } else {
            BackendError::Upstream {
                status: status.filter(|s| *s != 200),
                message,
            }
        }
    }

    async fn quote(&self, symbol: &str) -> Result<Block, BackendError> {
        let records = self
            .list("/quote", &[("symbol", symbol.to_owned())])
            .await?;
        let quote = &records[0];
        let as_of = quote
            .get("timestamp")
            .and_then(Value::as_i64)
            .and_then(|t| DateTime::from_timestamp(t, 0))
            .map(|t| t.to_rfc3339());
        Ok(Block {
            title: "Quote".to_owned(),
            name: text(quote, "name"),
            table: Table::key_values(
                quote,
                &[
                    "symbol",
                    "name",
                    "price",
                    "change",
                    "changePercentage",
                    "volume",
                    "open",
                    "dayLow",
                    "dayHigh",
                    "previousClose",
                    "yearLow",
                    "yearHigh",
                    "marketCap",
                    "priceAvg50",
                    "priceAvg200",
                    "exchange",
                ],
                &["timestamp"],
            ),
            as_of,
            ..Block::default()
        })
    }

    async fn price_history(&self, request: &DataRequest) -> Result<Block, BackendError> {
        let symbol = request.ticker()?.to_owned();
        let to = request.to.unwrap_or_else(today);
        let span_days = match request.interval {
            Interval::Week1 => 7,
            Interval::Month1 => 31,
            Interval::Day1 => 1,
            _ => 0,
        };
        let from = request.from.unwrap_or_else(|| {
            // Enough calendar days for `limit` bars (weekends and holidays included).
            let days = (request.limit as u64 * span_days.max(1) * 3 / 2).max(7);
            to.checked_sub_days(Days::new(days)).unwrap_or(to)
        });
        let params = [
            ("symbol", symbol),
            ("from", from.to_string()),
            ("to", to.to_string()),
        ];
        let path = if request.interval.is_intraday() {
            format!("/historical-chart/{}", request.interval.name())
        } else {
            "/historical-price-eod/full".to_owned()
        };
        let records = self.list(&path, &params).await?;
        let bars: Vec<Bar> = records.iter().filter_map(Bar::from_record).collect();
        let bars = aggregate(bars, request.interval);
        let table = bars_table(&bars, request.limit);
        Ok(Block {
            title: format!("Price history ({} bars)", request.interval.name()),
            as_of: bars.first().map(|b| b.date.clone()),
            table,
            ..Block::default()
        })
    }

    async fn statement(
        &self,
        request: &DataRequest,
        path: &str,
        title: &str,
    ) -> Result<Block, BackendError> {
        let symbol = request.ticker()?.to_owned();
        let (path, params) = match request.period() {
            Period::Ttm => (format!("{path}-ttm"), vec![("symbol", symbol)]),
            period => (
                path.to_owned(),
                vec![
                    ("symbol", symbol),
                    ("period", period.name().to_owned()),
                    ("limit", request.limit.to_string()),
                ],
            ),
        };
        let mut records = self.list(&path, &params).await?;
        records.retain(|r| in_range(r, "date", request));
        records.truncate(request.limit);
        let first = records.first().ok_or_else(|| {
            BackendError::NotFound("no statement in the requested range".to_owned())
        })?;
        let currency = text(first, "reportedCurrency");
        let preferred: &[&str] = match title {
            "Income statement" => &[
                "revenue",
                "costOfRevenue",
                "grossProfit",
                "researchAndDevelopmentExpenses",
                "sellingGeneralAndAdministrativeExpenses",
                "operatingExpenses",
                "operatingIncome",
                "ebitda",
                "interestExpense",
                "incomeBeforeTax",
                "incomeTaxExpense",
                "netIncome",
                "eps",
                "epsDiluted",
                "weightedAverageShsOut",
                "weightedAverageShsOutDil",
            ],
            "Balance sheet" => &[
                "cashAndCashEquivalents",
                "shortTermInvestments",
                "netReceivables",
                "inventory",
                "totalCurrentAssets",
                "totalAssets",
                "accountPayables",
                "totalCurrentLiabilities",
                "longTermDebt",
                "totalDebt",
                "totalLiabilities",
                "totalStockholdersEquity",
                "netDebt",
            ],
            "Cash flow statement" => &[
                "operatingCashFlow",
                "capitalExpenditure",
                "freeCashFlow",
                "netCashProvidedByInvestingActivities",
                "netCashProvidedByFinancingActivities",
                "commonDividendsPaid",
                "commonStockRepurchased",
                "depreciationAndAmortization",
                "stockBasedCompensation",
            ],
            _ => &[
                "grossProfitMargin",
                "operatingProfitMargin",
                "netProfitMargin",
                "returnOnEquity",
                "returnOnAssets",
                "currentRatio",
                "debtToEquityRatio",
                "priceToEarningsRatio",
                "priceToBookRatio",
                "priceToSalesRatio",
                "enterpriseValueMultiple",
                "dividendYield",
            ],
        };
        let period_key = if records.iter().all(|r| r.contains_key("date")) {
            "date"
        } else {
            "symbol"
        };
        Ok(Block {
            title: format!(
                "{title} ({}{})",
                request.period().name(),
                currency.map(|c| format!(", {c}")).unwrap_or_default()
            ),
            as_of: text(first, "date"),
            table: Table::transposed(&records, period_key, preferred, STATEMENT_META),
            ..Block::default()
        })
    }

    async fn transcript(&self, request: &DataRequest) -> Result<Block, BackendError> {
        let symbol = request.ticker()?.to_owned();
        let (year, quarter) = match (request.fiscal_year, request.fiscal_quarter) {
            (Some(year), Some(quarter)) => (year, i64::from(quarter)),
            _ => {
                let dates = self
                    .list(
                        "/earning-call-transcript-dates",
                        &[("symbol", symbol.clone())],
                    )
                    .await?;
                let wanted = dates
                    .iter()
                    .filter(|d| {
                        request.fiscal_year.is_none_or(|y| {
                            d.get("fiscalYear").and_then(Value::as_i64) == Some(i64::from(y))
                        })
                    })
                    .max_by_key(|d| text(d, "date").unwrap_or_default())
                    .ok_or_else(|| BackendError::NotFound("no transcript is listed".to_owned()))?;
                let year = wanted
                    .get("fiscalYear")
                    .and_then(Value::as_i64)
                    .unwrap_or_default();
                let quarter = wanted
                    .get("quarter")
                    .and_then(Value::as_i64)
                    .unwrap_or_default();
                (i32::try_from(year).unwrap_or_default(), quarter)
            }
        };
        let records = self
            .list(
                "/earning-call-transcript",
                &[
                    ("symbol", symbol),
                    ("year", year.to_string()),
                    ("quarter", quarter.to_string()),
                ],
            )
            .await?;
        let call = &records[0];
        let content = text(call, "content").unwrap_or_default();
        Ok(transcript_block(
            &passages::split(&content),
            &request.query,
            &format!("Earnings call transcript, Q{quarter} {year}"),
            text(call, "date"),
        ))
    }

    async fn segments(&self, request: &DataRequest) -> Result<Block, BackendError> {
        let symbol = request.ticker()?.to_owned();
        let period = match request.period() {
            Period::Quarter => "quarter",
            _ => "annual",
        };
        let params = [("symbol", symbol), ("period", period.to_owned())];
        let (product, geography) = futures::join!(
            self.list("/revenue-product-segmentation", &params),
            self.list("/revenue-geographic-segmentation", &params)
        );
        let mut dates: Vec<String> = Vec::new();
        let mut rows: Vec<(String, Vec<(String, Value)>)> = Vec::new();
        let mut failures = Vec::new();
        for (kind, answer) in [("product", product), ("geography", geography)] {
            let records = match answer {
                Ok(records) => records,
                Err(err) => {
                    failures.push(err);
                    continue;
                }
            };
            for record in records.iter().take(request.limit) {
                let date = text(record, "date").unwrap_or_default();
                if !dates.contains(&date) {
                    dates.push(date.clone());
                }
                for (segment, value) in record
                    .get("data")
                    .and_then(Value::as_object)
                    .into_iter()
                    .flatten()
                {
                    let label = format!("{kind}: {segment}");
                    match rows.iter_mut().find(|(l, _)| *l == label) {
                        Some((_, values)) => values.push((date.clone(), value.clone())),
                        None => rows.push((label, vec![(date.clone(), value.clone())])),
                    }
                }
            }
        }
        if rows.is_empty() {
            return Err(failures
                .into_iter()
                .next()
                .unwrap_or_else(|| BackendError::NotFound("no segment data".to_owned())));
        }
        dates.sort_by(|a, b| b.cmp(a));
        dates.truncate(request.limit);
        let mut columns = vec!["segment".to_owned()];
        columns.extend(dates.iter().cloned());
        let mut table = Table {
            columns,
            rows: Vec::new(),
        };
        for (label, values) in rows {
            let mut row = vec![Value::String(label)];
            row.extend(dates.iter().map(|d| {
                values
                    .iter()
                    .find(|(date, _)| date == d)
                    .map_or(Value::Null, |(_, v)| v.clone())
            }));
            table.push(row);
        }
        Ok(Block {
            title: format!("Revenue by segment ({period})"),
            as_of: dates.first().cloned(),
            table,
            ..Block::default()
        })
    }

    async fn movers(&self, request: &DataRequest) -> Result<Block, BackendError> {
        let lists = mover_lists(&request.query);
        let mut table = Table::new(&["list", "symbol", "name", "price", "change", "change %"]);
        let mut last_error = None;
        for (label, path) in [
            ("gainers", "/biggest-gainers"),
            ("losers", "/biggest-losers"),
            ("most active", "/most-actives"),
        ] {
            if !lists.contains(&label) {
                continue;
            }
            match self.list(path, &[]).await {
                Ok(records) => {
                    for record in records.iter().take(request.limit) {
                        table.push(vec![
                            json!(label),
                            record.get("symbol").cloned().unwrap_or(Value::Null),
                            record.get("name").cloned().unwrap_or(Value::Null),
                            record.get("price").cloned().unwrap_or(Value::Null),
                            record.get("change").cloned().unwrap_or(Value::Null),
                            // The movers endpoints spell it with an s, the quote without.
                            record
                                .get("changesPercentage")
                                .or_else(|| record.get("changePercentage"))
                                .cloned()
                                .unwrap_or(Value::Null),
                        ]);
                    }
                }
                Err(err) => last_error = Some(err),
            }
        }
        if table.is_empty() {
            return Err(
                last_error.unwrap_or_else(|| BackendError::NotFound("no movers".to_owned()))
            );
        }
        Ok(Block {
            title: "Market movers (US)".to_owned(),
            as_of: Some(today().to_string()),
            table,
            ..Block::default()
        })
    }

    async fn records_block(
        &self,
        request: &DataRequest,
        path: &str,
        params: Vec<(&str, String)>,
        title: &str,
        preferred: &[&str],
        date_key: &str,
    ) -> Result<Block, BackendError> {
        let mut records = self.list(path, &params).await?;
        records.retain(|r| in_range(r, date_key, request));
        for record in &mut records {
            clean_links(record);
        }
        records.truncate(request.limit);
        if records.is_empty() {
            return Err(BackendError::NotFound(
                "nothing in the requested range".to_owned(),
            ));
        }
        Ok(Block {
            title: title.to_owned(),
            as_of: records.first().and_then(|r| text(r, date_key)),
            table: Table::records(
                &records,
                preferred,
                &["symbol", "cik", "companyCik", "reportingCik"],
            ),
            ..Block::default()
        })
    }

    async fn corporate_actions(&self, request: &DataRequest) -> Result<Block, BackendError> {
        let symbol = request.ticker()?.to_owned();
        let params = [("symbol", symbol)];
        let (splits, dividends) = futures::join!(
            self.list("/splits", &params),
            self.list("/dividends", &params)
        );
        let mut table = Table::new(&["action", "date", "value", "details"]);
        let mut failure = None;
        match dividends {
            Ok(records) => {
                for r in records
                    .iter()
                    .filter(|r| in_range(r, "date", request))
                    .take(request.limit)
                {
                    table.push(vec![
                        json!("dividend"),
                        r.get("date").cloned().unwrap_or(Value::Null),
                        r.get("dividend")
                            .or_else(|| r.get("adjDividend"))
                            .cloned()
                            .unwrap_or(Value::Null),
                        json!(format!(
                            "payment {}, record {}",
                            text(r, "paymentDate").unwrap_or_default(),
                            text(r, "recordDate").unwrap_or_default()
                        )),
                    ]);
                }
            }
            Err(err) => failure = Some(err),
        }
        match splits {
            Ok(records) => {
                for r in records
                    .iter()
                    .filter(|r| in_range(r, "date", request))
                    .take(request.limit)
                {
                    let ratio = format!(
                        "{}:{}",
                        r.get("numerator").map(Value::to_string).unwrap_or_default(),
                        r.get("denominator")
                            .map(Value::to_string)
                            .unwrap_or_default()
                    );
                    table.push(vec![
                        json!("split"),
                        r.get("date").cloned().unwrap_or(Value::Null),
                        json!(ratio),
                        Value::Null,
                    ]);
                }
            }
            Err(err) => failure = failure.or(Some(err)),
        }
        if table.is_empty() {
            return Err(failure
                .unwrap_or_else(|| BackendError::NotFound("no corporate actions".to_owned())));
        }
        Ok(Block {
            title: "Dividends and splits".to_owned(),
            table,
            ..Block::default()
        })
    }
}

#[async_trait::async_trait]
impl Backend for Fmp {
    fn source(&self) -> &str {
        SOURCE
    }

    fn supports(&self, _category: Category) -> bool {
        true
    }

    async fn fetch(&self, request: &DataRequest) -> Result<Block, BackendError> {
        let symbol = || request.ticker().map(str::to_owned);
        let limit = request.limit.to_string();
        match request.category {
            Category::Quote => self.quote(&symbol()?).await,
            Category::PriceHistory => self.price_history(request).await,
            Category::Profile => {
                let records = self.list("/profile", &[("symbol", symbol()?)]).await?;
                let profile = &records[0];
                Ok(Block {
                    title: "Company profile".to_owned(),
                    name: text(profile, "companyName"),
                    table: Table::key_values(
                        profile,
                        &[
                            "companyName",
                            "symbol",
                            "exchange",
                            "sector",
                            "industry",
                            "country",
                            "currency",
                            "marketCap",
                            "price",
                            "beta",
                            "ceo",
                            "fullTimeEmployees",
                            "ipoDate",
                            "website",
                            "isEtf",
                            "isActivelyTrading",
                            "cik",
                            "description",
                        ],
                        &[
                            "image",
                            "defaultImage",
                            "address",
                            "phone",
                            "zip",
                            "state",
                            "city",
                        ],
                    ),
                    as_of: Some(today().to_string()),
                    ..Block::default()
                })
            }
            Category::Peers => {
                self.records_block(
                    request,
                    "/stock-peers",
                    vec![("symbol", symbol()?)],
                    "Peers",
                    &["symbol", "companyName", "price", "mktCap"],
                    "",
                )
                .await
            }
            Category::IncomeStatement => {
                self.statement(request, "/income-statement", "Income statement")
                    .await
            }
            Category::BalanceSheet => {
                self.statement(request, "/balance-sheet-statement", "Balance sheet")
                    .await
            }
            Category::CashFlow => {
                self.statement(request, "/cash-flow-statement", "Cash flow statement")
                    .await
            }
            Category::Ratios => self.statement(request, "/ratios", "Ratios").await,
            Category::Earnings => {
                self.records_block(
                    request,
                    "/earnings",
                    vec![
                        ("symbol", symbol()?),
                        ("limit", (request.limit + 4).to_string()),
                    ],
                    "Earnings: actual against estimates",
                    &[
                        "date",
                        "epsActual",
                        "epsEstimated",
                        "revenueActual",
                        "revenueEstimated",
                    ],
                    "date",
                )
                .await
            }
            Category::Transcript => self.transcript(request).await,
            Category::Segments => self.segments(request).await,
            Category::AnalystEstimates => {
                let period = match request.period() {
                    Period::Quarter => "quarter",
                    _ => "annual",
                };
                let records = self
                    .list(
                        "/analyst-estimates",
                        &[
                            ("symbol", symbol()?),
                            ("period", period.to_owned()),
                            ("page", "0".to_owned()),
                            ("limit", limit),
                        ],
                    )
                    .await?;
                Ok(Block {
                    title: format!("Analyst estimates ({period})"),
                    table: Table::transposed(
                        &records,
                        "date",
                        &[
                            "revenueLow",
                            "revenueAvg",
                            "revenueHigh",
                            "epsLow",
                            "epsAvg",
                            "epsHigh",
                            "ebitdaAvg",
                            "netIncomeAvg",
                            "numAnalystsRevenue",
                            "numAnalystsEps",
                        ],
                        &["symbol"],
                    ),
                    as_of: Some(today().to_string()),
                    ..Block::default()
                })
            }
            Category::MarketMovers => self.movers(request).await,
            Category::InsiderTrading => {
                self.records_block(
                    request,
                    "/insider-trading/search",
                    vec![
                        ("symbol", symbol()?),
                        ("page", "0".to_owned()),
                        ("limit", limit),
                    ],
                    "Insider trades",
                    &[
                        "transactionDate",
                        "reportingName",
                        "typeOfOwner",
                        "transactionType",
                        "acquisitionOrDisposition",
                        "securitiesTransacted",
                        "price",
                        "securitiesOwned",
                        "formType",
                        "filingDate",
                        "url",
                    ],
                    "transactionDate",
                )
                .await
            }
            Category::EtfHoldings => {
                let mut records = self.list("/etf/holdings", &[("symbol", symbol()?)]).await?;
                let weight = |r: &Map<String, Value>| {
                    r.get("weightPercentage")
                        .and_then(Value::as_f64)
                        .unwrap_or_default()
                };
                records.sort_by(|a, b| weight(b).total_cmp(&weight(a)));
                records.truncate(request.limit);
                Ok(Block {
                    title: "ETF holdings (largest first)".to_owned(),
                    as_of: records.first().and_then(|r| text(r, "updatedAt")),
                    table: Table::records(
                        &records,
                        &[
                            "asset",
                            "name",
                            "weightPercentage",
                            "sharesNumber",
                            "marketValue",
                        ],
                        &["symbol", "isin", "securityCusip", "updatedAt"],
                    ),
                    ..Block::default()
                })
            }
            Category::CorporateActions => self.corporate_actions(request).await,
            Category::Filings => {
                let to = request.to.unwrap_or_else(today);
                let from = request
                    .from
                    .unwrap_or_else(|| to.checked_sub_days(Days::new(365)).unwrap_or(to));
                let forms = crate::submissions::forms_in(&request.query);
                let mut block = self
                    .records_block(
                        request,
                        "/sec-filings-search/symbol",
                        vec![
                            ("symbol", symbol()?),
                            ("from", from.to_string()),
                            ("to", to.to_string()),
                            ("page", "0".to_owned()),
                            ("limit", "100".to_owned()),
                        ],
                        "SEC filings",
                        &[
                            "filingDate",
                            "formType",
                            "acceptedDate",
                            "finalLink",
                            "link",
                        ],
                        "filingDate",
                    )
                    .await?;
                if !forms.is_empty() {
                    let column = block.table.columns.iter().position(|c| c == "formType");
                    if let Some(column) = column {
                        block.table.rows.retain(|row| {
                            let form = row[column].as_str().unwrap_or_default();
                            forms.iter().any(|f| form.starts_with(f))
                        });
                    }
                }
                Ok(block)
            }
        }
    }

    async fn search_name(&self, name: &str) -> Result<Vec<Listing>, BackendError> {
        let records = match self
            .list(
                "/search-name",
                &[("query", name.to_owned()), ("limit", "5".to_owned())],
            )
            .await
        {
            Err(BackendError::NotFound(_)) => return Ok(Vec::new()),
            other => other?,
        };
        Ok(records
            .iter()
            .filter_map(|r| {
                Some(Listing {
                    ticker: text(r, "symbol")?,
                    name: text(r, "name").unwrap_or_default(),
                    cik: None,
                })
            })
            .collect())
    }
}

/// Links in a record shown only when they are public (`url`, `link`, `finalLink`).
fn clean_links(record: &mut Map<String, Value>) {
    for key in ["url", "link", "finalLink"] {
        if let Some(Value::String(link)) = record.get(key) {
            match public_link(link) {
                Some(link) => {
                    record.insert(key.to_owned(), Value::String(link));
                }
                None => {
                    record.remove(key);
                }
            }
        }
    }
}

fn today() -> NaiveDate {
    chrono::Utc::now().date_naive()
}
