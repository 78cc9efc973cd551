//! Alpha Vantage (`ALPHAVANTAGE_API_KEY`): one endpoint, `{base}/query?function=NAME&…&apikey=`.
//! Numbers come as strings (`"None"` for none). Errors and throttling arrive as HTTP 200 with
//! an object keyed `Error Message` (a bad call or symbol), `Information` (rate limits, premium
//! functions) or `Note` (the per-minute limit): each is read here, never taken for data.

use std::sync::Arc;
use std::time::Duration;

use chrono::{Datelike as _, NaiveDate};
use netguard::Policy;
use reqwest::header::HeaderMap;
use serde_json::{Map, Value, json};

use crate::backend::{Backend, BackendError, Block, DataRequest};
use crate::budget::{Budget, BudgetSettings, DEFAULT_COOL_DOWN};
use crate::category::{Category, Interval, Period};
use crate::http::Http;
use crate::passages::transcript_block;
use crate::prices::{Bar, aggregate, bars_table};
use crate::records::{in_range, mover_lists, text};
use crate::table::Table;

/// The public API base.
pub const DEFAULT_BASE_URL: &str = "https://www.alphavantage.co";

/// `source` of its results.
pub const SOURCE: &str = "alpha_vantage";

/// How long the back end rests after "the daily limit is reached".
const DAILY_COOL_DOWN: Duration = Duration::from_secs(3600);

/// The Alpha Vantage back end.
pub struct AlphaVantage {
    http: Http,
    base: String,
    key: String,
}

impl AlphaVantage {
    pub fn new(
        policy: &Policy,
        api_key: &str,
        base: Option<&str>,
        budget: BudgetSettings,
    ) -> Result<AlphaVantage, BackendError> {
        if api_key.trim().is_empty() {
            return Err(BackendError::Config(
                "the Alpha Vantage API key is empty".to_owned(),
            ));
        }
        Ok(AlphaVantage {
            http: Http::new(policy, Arc::new(Budget::new(budget)), HeaderMap::new())?,
            base: base.unwrap_or(DEFAULT_BASE_URL).to_owned(),
            key: api_key.trim().to_owned(),
        })
    }

    pub fn budget(&self) -> &Budget {
        self.http.budget()
    }

    /// One function's answer object.
    async fn call(
        &self,
        function: &str,
        params: &[(&str, String)],
    ) -> Result<Map<String, Value>, BackendError> {
        let mut query = vec![("function", function.to_owned())];
        query.extend(params.iter().cloned());
        query.push(("apikey", self.key.clone()));
        let url = self.http.url(&self.base, "/query", &query)?;
        let answer = self.http.get(url).await?;
        if !(200..300).contains(&answer.status) {
            return Err(BackendError::Upstream {
                status: Some(answer.status),
                message: answer.excerpt(),
            });
        }
        let object = match answer.json()? {
            Value::Object(object) => object,
            _ => return Err(BackendError::Decode("expected a JSON object".to_owned())),
        };
        if let Some(message) = object.get("Error Message").and_then(Value::as_str) {
            return Err(BackendError::Upstream {
                status: None,
                message: message.to_owned(),
            });
        }
        for key in ["Note", "Information"] {
            if let Some(message) = object.get(key).and_then(Value::as_str) {
                return Err(self.classify(message));
            }
        }
        if object.is_empty() {
            return Err(BackendError::NotFound(format!(
                "Alpha Vantage has no {function} data for this request"
            )));
        }
        Ok(object)
    }

    /// A `Note` or `Information` answer: throttling, a premium function, or something else.
    fn classify(&self, message: &str) -> BackendError {
        let lower = message.to_lowercase();
        if lower.contains("premium") {
            return BackendError::Refused(message.to_owned());
        }
        if lower.contains("rate limit")
            || lower.contains("call frequency")
            || lower.contains("requests per")
            || lower.contains("api call volume")
        {
            let pause = if lower.contains("per day") || lower.contains("daily") {
                DAILY_COOL_DOWN
            } else {
                DEFAULT_COOL_DOWN
            };
            self.http.cool_down(pause);
            return BackendError::RateLimited {
                retry_after: Some(pause),
                message: message.to_owned(),
            };
        }
        if lower.contains("api key") || lower.contains("apikey") {
            return BackendError::Refused(message.to_owned());
        }
        BackendError::Upstream {
            status: None,
            message: message.to_owned(),
        }
    }

    async fn quote(&self, symbol: String) -> Result<Block, BackendError> {
        let object = self.call("GLOBAL_QUOTE", &[("symbol", symbol)]).await?;
        let quote = object
            .get("Global Quote")
            .and_then(Value::as_object)
            .map(strip_numbers)
            .filter(|q| !q.is_empty())
            .ok_or_else(|| BackendError::NotFound("no quote for this symbol".to_owned()))?;
        Ok(Block {
            title: "Quote".to_owned(),
            as_of: text(&quote, "latest trading day"),
            table: Table::key_values(
                &quote,
                &[
                    "symbol",
                    "price",
                    "change",
                    "change percent",
                    "volume",
                    "open",
                    "high",
                    "low",
                    "previous close",
                ],
                &["latest trading day"],
            ),
            ..Block::default()
        })
    }

    async fn price_history(&self, request: &DataRequest) -> Result<Block, BackendError> {
        let symbol = request.ticker()?.to_owned();
        let mut params = vec![("symbol", symbol)];
        let function = match request.interval {
            Interval::Day1 => {
                // `compact` is the last 100 days; older ranges need the full series.
                let old = request
                    .from
                    .is_some_and(|from| (today() - from).num_days() > 140);
                params.push((
                    "outputsize",
                    if old || request.limit > 100 {
                        "full"
                    } else {
                        "compact"
                    }
                    .to_owned(),
                ));
                "TIME_SERIES_DAILY"
            }
            Interval::Week1 => "TIME_SERIES_WEEKLY",
            Interval::Month1 => "TIME_SERIES_MONTHLY",
            Interval::Hour4 => {
                return Err(BackendError::NotFound(
                    "Alpha Vantage has no 4-hour bars".to_owned(),
                ));
            }
            intraday => {
                let interval = match intraday {
                    Interval::Hour1 => "60min",
                    other => other.name(),
                };
                params.push(("interval", interval.to_owned()));
                "TIME_SERIES_INTRADAY"
            }
        };
        let object = self.call(function, &params).await?;
        let series = object
            .iter()
            .find(|(key, value)| key.contains("Time Series") && value.is_object())
            .and_then(|(_, value)| value.as_object())
            .ok_or_else(|| BackendError::NotFound("no price series in the answer".to_owned()))?;
        let bars: Vec<Bar> = series
            .iter()
            .filter_map(|(date, bar)| {
                let bar = strip_numbers(bar.as_object()?);
                let mut record = bar.clone();
                record.insert("date".to_owned(), json!(date));
                Bar::from_record(&record)
            })
            .filter(|bar| {
                let day = crate::facts::date(&bar.date);
                day.is_none_or(|d| {
                    request.from.is_none_or(|from| d >= from) && request.to.is_none_or(|to| d <= to)
                })
            })
            .collect();
        let bars = aggregate(bars, Interval::Day1);
        Ok(Block {
            title: format!("Price history ({} bars)", request.interval.name()),
            as_of: bars.first().map(|b| b.date.clone()),
            table: bars_table(&bars, request.limit),
            ..Block::default()
        })
    }

    async fn statement(
        &self,
        request: &DataRequest,
        function: &str,
        title: &str,
    ) -> Result<Block, BackendError> {
        let object = self
            .call(function, &[("symbol", request.ticker()?.to_owned())])
            .await?;
        let (key, period) = match request.period() {
            Period::Quarter => ("quarterlyReports", "quarter"),
            _ => ("annualReports", "annual"),
        };
        let mut records = reports(&object, key);
        records.retain(|r| in_range(r, "fiscalDateEnding", request));
        records.truncate(request.limit);
        let first = records.first().ok_or_else(|| {
            BackendError::NotFound("no reports in the requested range".to_owned())
        })?;
        let currency = text(first, "reportedCurrency");
        let mut notes = Vec::new();
        if request.period() == Period::Ttm {
            notes.push(
                "Alpha Vantage has no trailing-twelve-month statements: annual reports are shown."
                    .to_owned(),
            );
        }
        Ok(Block {
            title: format!(
                "{title} ({period}{})",
                currency.map(|c| format!(", {c}")).unwrap_or_default()
            ),
            as_of: text(first, "fiscalDateEnding"),
            table: Table::transposed(
                &records,
                "fiscalDateEnding",
                &[
                    "totalRevenue",
                    "costOfRevenue",
                    "grossProfit",
                    "operatingIncome",
                    "ebitda",
                    "netIncome",
                    "totalAssets",
                    "totalLiabilities",
                    "totalShareholderEquity",
                    "operatingCashflow",
                    "capitalExpenditures",
                ],
                &["reportedCurrency"],
            ),
            notes,
            ..Block::default()
        })
    }

    async fn transcript(&self, request: &DataRequest) -> Result<Block, BackendError> {
        let symbol = request.ticker()?.to_owned();
        // A named quarter, else the last two calendar quarters (the latest may not be out).
        let quarters: Vec<String> = match (request.fiscal_year, request.fiscal_quarter) {
            (Some(year), Some(quarter)) => vec![format!("{year}Q{quarter}")],
            _ => {
                let now = today();
                let quarter = (now.month0() / 3) as i32;
                let mut year = now.year();
                let mut q = quarter;
                let mut list = Vec::new();
                for _ in 0..2 {
                    if q == 0 {
                        year -= 1;
                        q = 4;
                    }
                    list.push(format!("{year}Q{q}"));
                    q -= 1;
                }
                list
            }
        };
        let mut last = BackendError::NotFound("no transcript".to_owned());
        for quarter in quarters {
            let object = match self
                .call(
                    "EARNINGS_CALL_TRANSCRIPT",
                    &[("symbol", symbol.clone()), ("quarter", quarter.clone())],
                )
                .await
            {
                Ok(object) => object,
                Err(err @ BackendError::NotFound(_)) => {
                    last = err;
                    continue;
                }
                Err(err) => return Err(err),
            };
            let turns: Vec<String> = object
                .get("transcript")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .filter_map(Value::as_object)
                .map(|turn| {
                    let speaker = text(turn, "speaker").unwrap_or_default();
                    let role = text(turn, "title")
                        .map(|t| format!(" ({t})"))
                        .unwrap_or_default();
                    format!(
                        "{speaker}{role}: {}",
                        text(turn, "content").unwrap_or_default()
                    )
                })
                .collect();
            if turns.is_empty() {
                last = BackendError::NotFound(format!("no transcript for {quarter}"));
                continue;
            }
            let passages: Vec<String> = turns
                .iter()
                .flat_map(|t| crate::passages::split(t))
                .collect();
            return Ok(transcript_block(
                &passages,
                &request.query,
                &format!("Earnings call transcript, {quarter}"),
                None,
            ));
        }
        Err(last)
    }

    async fn movers(&self, request: &DataRequest) -> Result<Block, BackendError> {
        let object = self.call("TOP_GAINERS_LOSERS", &[]).await?;
        let mut table = Table::new(&["list", "symbol", "price", "change", "change %", "volume"]);
        for (label, key) in [
            ("gainers", "top_gainers"),
            ("losers", "top_losers"),
            ("most active", "most_actively_traded"),
        ] {
            if !mover_lists(&request.query).contains(&label) {
                continue;
            }
            for row in reports(&object, key).iter().take(request.limit) {
                table.push(vec![
                    json!(label),
                    row.get("ticker").cloned().unwrap_or(Value::Null),
                    row.get("price").cloned().unwrap_or(Value::Null),
                    row.get("change_amount").cloned().unwrap_or(Value::Null),
                    row.get("change_percentage").cloned().unwrap_or(Value::Null),
                    row.get("volume").cloned().unwrap_or(Value::Null),
                ]);
            }
        }
        if table.is_empty() {
            return Err(BackendError::NotFound("no movers in the answer".to_owned()));
        }
        Ok(Block {
            title: "Market movers (US)".to_owned(),
            as_of: text(&object, "last_updated"),
            table,
            ..Block::default()
        })
    }

    async fn list_block(
        &self,
        request: &DataRequest,
        function: &str,
        key: &str,
        title: &str,
        preferred: &[&str],
        date_key: &str,
    ) -> Result<Block, BackendError> {
        let object = self
            .call(function, &[("symbol", request.ticker()?.to_owned())])
            .await?;
        let mut records = reports(&object, key);
        records.retain(|r| in_range(r, date_key, request));
        records.truncate(request.limit);
        if records.is_empty() {
            return Err(BackendError::NotFound(
                "nothing in the requested range".to_owned(),
            ));
        }
        Ok(Block {
            title: title.to_owned(),
            as_of: records.first().and_then(|r| text(r, date_key)),
            table: Table::records(&records, preferred, &["ticker", "symbol"]),
            ..Block::default()
        })
    }
}

#[async_trait::async_trait]
impl Backend for AlphaVantage {
    fn source(&self) -> &str {
        SOURCE
    }

    fn supports(&self, category: Category) -> bool {
        !matches!(
            category,
            Category::Peers | Category::Segments | Category::Filings
        )
    }

    async fn fetch(&self, request: &DataRequest) -> Result<Block, BackendError> {
        match request.category {
            Category::Quote => self.quote(request.ticker()?.to_owned()).await,
            Category::PriceHistory => self.price_history(request).await,
            Category::Profile | Category::Ratios => {
                let object = self
                    .call("OVERVIEW", &[("symbol", request.ticker()?.to_owned())])
                    .await?;
                let ratios = request.category == Category::Ratios;
                let table = if ratios {
                    const RATIOS: &[&str] = &[
                        "PERatio",
                        "TrailingPE",
                        "ForwardPE",
                        "PEGRatio",
                        "PriceToBookRatio",
                        "PriceToSalesRatioTTM",
                        "EVToEBITDA",
                        "EVToRevenue",
                        "ProfitMargin",
                        "OperatingMarginTTM",
                        "ReturnOnAssetsTTM",
                        "ReturnOnEquityTTM",
                        "DividendYield",
                        "DilutedEPSTTM",
                        "Beta",
                        "BookValue",
                        "QuarterlyEarningsGrowthYOY",
                        "QuarterlyRevenueGrowthYOY",
                    ];
                    let only: Map<String, Value> = object
                        .iter()
                        .filter(|(k, _)| RATIOS.contains(&k.as_str()))
                        .map(|(k, v)| (k.clone(), v.clone()))
                        .collect();
                    Table::key_values(&only, RATIOS, &[])
                } else {
                    Table::key_values(
                        &object,
                        &[
                            "Name",
                            "Symbol",
                            "AssetType",
                            "Exchange",
                            "Currency",
                            "Country",
                            "Sector",
                            "Industry",
                            "MarketCapitalization",
                            "FiscalYearEnd",
                            "LatestQuarter",
                            "CIK",
                            "OfficialSite",
                            "Description",
                        ],
                        &["Address"],
                    )
                };
                Ok(Block {
                    title: if ratios {
                        "Valuation and ratios (trailing)"
                    } else {
                        "Company overview"
                    }
                    .to_owned(),
                    name: text(&object, "Name"),
                    as_of: text(&object, "LatestQuarter"),
                    table,
                    ..Block::default()
                })
            }
            Category::IncomeStatement => {
                self.statement(request, "INCOME_STATEMENT", "Income statement")
                    .await
            }
            Category::BalanceSheet => {
                self.statement(request, "BALANCE_SHEET", "Balance sheet")
                    .await
            }
            Category::CashFlow => {
                self.statement(request, "CASH_FLOW", "Cash flow statement")
                    .await
            }
            Category::Earnings => {
                let (key, title) = match request.period {
                    Some(Period::Annual) => ("annualEarnings", "Earnings per share (annual)"),
                    _ => (
                        "quarterlyEarnings",
                        "Earnings: reported against estimated EPS",
                    ),
                };
                self.list_block(
                    request,
                    "EARNINGS",
                    key,
                    title,
                    &[
                        "fiscalDateEnding",
                        "reportedDate",
                        "reportedEPS",
                        "estimatedEPS",
                        "surprise",
                        "surprisePercentage",
                    ],
                    "fiscalDateEnding",
                )
                .await
            }
            Category::Transcript => self.transcript(request).await,
            Category::AnalystEstimates => {
                self.list_block(
                    request,
                    "EARNINGS_ESTIMATES",
                    "estimates",
                    "Analyst estimates",
                    &[
                        "date",
                        "horizon",
                        "eps_estimate_average",
                        "eps_estimate_high",
                        "eps_estimate_low",
                        "revenue_estimate_average",
                        "eps_estimate_analyst_count",
                    ],
                    "",
                )
                .await
            }
            Category::MarketMovers => self.movers(request).await,
            Category::InsiderTrading => {
                self.list_block(
                    request,
                    "INSIDER_TRANSACTIONS",
                    "data",
                    "Insider transactions",
                    &[
                        "transaction_date",
                        "executive",
                        "executive_title",
                        "acquisition_or_disposal",
                        "shares",
                        "share_price",
                        "security_type",
                    ],
                    "transaction_date",
                )
                .await
            }
            Category::EtfHoldings => {
                let object = self
                    .call("ETF_PROFILE", &[("symbol", request.ticker()?.to_owned())])
                    .await?;
                let mut holdings = reports(&object, "holdings");
                holdings.truncate(request.limit);
                if holdings.is_empty() {
                    return Err(BackendError::NotFound("no holdings listed".to_owned()));
                }
                Ok(Block {
                    title: "ETF holdings".to_owned(),
                    table: Table::records(&holdings, &["symbol", "description", "weight"], &[]),
                    notes: text(&object, "net_assets")
                        .map(|n| vec![format!("Net assets: {n}.")])
                        .unwrap_or_default(),
                    ..Block::default()
                })
            }
            Category::CorporateActions => {
                let params = [("symbol", request.ticker()?.to_owned())];
                let (dividends, splits) = futures::join!(
                    self.call("DIVIDENDS", &params),
                    self.call("SPLITS", &params)
                );
                let mut table = Table::new(&["action", "date", "value"]);
                let mut failure = None;
                match dividends {
                    Ok(object) => {
                        for r in reports(&object, "data")
                            .iter()
                            .filter(|r| in_range(r, "ex_dividend_date", request))
                            .take(request.limit)
                        {
                            table.push(vec![
                                json!("dividend"),
                                r.get("ex_dividend_date").cloned().unwrap_or(Value::Null),
                                r.get("amount").cloned().unwrap_or(Value::Null),
                            ]);
                        }
                    }
                    Err(err) => failure = Some(err),
                }
                match splits {
                    Ok(object) => {
                        for r in reports(&object, "data")
                            .iter()
                            .filter(|r| in_range(r, "effective_date", request))
                            .take(request.limit)
                        {
                            table.push(vec![
                                json!("split"),
                                r.get("effective_date").cloned().unwrap_or(Value::Null),
                                r.get("split_factor").cloned().unwrap_or(Value::Null),
                            ]);
                        }
                    }
                    Err(err) => failure = failure.or(Some(err)),
                }
                if table.is_empty() {
                    return Err(failure.unwrap_or_else(|| {
                        BackendError::NotFound("no dividends or splits".to_owned())
                    }));
                }
                Ok(Block {
                    title: "Dividends and splits".to_owned(),
                    table,
                    ..Block::default()
                })
            }
            Category::Peers | Category::Segments | Category::Filings => {
                Err(BackendError::NotFound(format!(
                    "Alpha Vantage has no {}",
                    request.category.label()
                )))
            }
        }
    }
}

/// `"01. symbol"` → `"symbol"`; `"None"` and numbers kept as written.
fn strip_numbers(object: &Map<String, Value>) -> Map<String, Value> {
    object
        .iter()
        .map(|(key, value)| {
            let key = match key.split_once(". ") {
                Some((digits, rest)) if digits.chars().all(|c| c.is_ascii_digit()) => rest,
                _ => key.as_str(),
            };
            (key.to_owned(), value.clone())
        })
        .collect()
}

/// The objects of an array field.
fn reports(object: &Map<String, Value>, key: &str) -> Vec<Map<String, Value>> {
    object
        .get(key)
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_object)
        .map(|r| {
            r.iter()
                .filter(|(_, v)| v.as_str() != Some("None"))
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect()
        })
        .collect()
}

fn today() -> NaiveDate {
    chrono::Utc::now().date_naive()
}

/// Numbers as Alpha Vantage writes them, for tests of the table code.
#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbered_keys_lose_their_numbers() {
        let object = json!({"01. symbol": "IBM", "05. price": "230.5", "plain": 1});
        let stripped = strip_numbers(object.as_object().unwrap());
        assert_eq!(stripped["symbol"], "IBM");
        assert_eq!(stripped["price"], "230.5");
        assert_eq!(stripped["plain"], 1);
        assert_eq!(crate::prices::number(stripped.get("price")), Some(230.5));
    }
}
