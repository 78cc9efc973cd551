//! Statements, ratios and reported earnings from SEC company facts (the same code for SEC
//! EDGAR live and the embedded store).
//!
//! Each statement line takes the first concept of its list that has a value for a period
//! (filers moved from `Revenues` to `RevenueFromContractWithCustomer…` over the years). A
//! period is a span of about a year (annual) or a quarter. Filers report many quarters only
//! year to date (cash flows always, Q4 never on its own): a missing quarter is derived from
//! two year-to-date totals of the same fiscal year when both are there, and a note says so.
//! Balance-sheet values are instants; the annual ones are those at fiscal year ends.

use std::collections::{BTreeSet, HashMap};

use chrono::{Days, NaiveDate};
use serde_json::{Value, json};

use crate::category::Period;
use crate::facts::Fact;
use crate::table::Table;

/// What a line's values are.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Measure {
    /// US dollars (additive over periods).
    Money,
    /// Dollars per share.
    PerShare,
    /// A number of shares.
    Shares,
}

impl Measure {
    fn unit(self) -> &'static str {
        match self {
            Measure::Money => "USD",
            Measure::PerShare => "USD/shares",
            Measure::Shares => "shares",
        }
    }
}

/// One statement line: a label and the concepts that may hold it, best first.
#[derive(Debug, Clone, Copy)]
pub struct Line {
    pub label: &'static str,
    pub concepts: &'static [&'static str],
    pub measure: Measure,
}

const fn money(label: &'static str, concepts: &'static [&'static str]) -> Line {
    Line {
        label,
        concepts,
        measure: Measure::Money,
    }
}

pub const REVENUE: &str = "Revenue";
pub const GROSS_PROFIT: &str = "Gross profit";
pub const OPERATING_INCOME: &str = "Operating income";
pub const NET_INCOME: &str = "Net income";
pub const EPS_BASIC: &str = "EPS (basic)";
pub const EPS_DILUTED: &str = "EPS (diluted)";
pub const TOTAL_ASSETS: &str = "Total assets";
pub const CURRENT_ASSETS: &str = "Current assets";
pub const CURRENT_LIABILITIES: &str = "Current liabilities";
pub const TOTAL_LIABILITIES: &str = "Total liabilities";
pub const EQUITY: &str = "Stockholders' equity";
const OPERATING_CASH_FLOW: &str = "Operating cash flow";
const CAPEX: &str = "Capital expenditure";

pub const INCOME_STATEMENT: &[Line] = &[
    money(
        REVENUE,
        &[
            "RevenueFromContractWithCustomerExcludingAssessedTax",
            "Revenues",
            "SalesRevenueNet",
            "RevenueFromContractWithCustomerIncludingAssessedTax",
        ],
    ),
    money(
        "Cost of revenue",
        &[
            "CostOfGoodsAndServicesSold",
            "CostOfRevenue",
            "CostOfGoodsSold",
        ],
    ),
    money(GROSS_PROFIT, &["GrossProfit"]),
    money(
        "Research and development",
        &["ResearchAndDevelopmentExpense"],
    ),
    money(
        "Selling, general and administrative",
        &["SellingGeneralAndAdministrativeExpense"],
    ),
    money(
        "Operating expenses",
        &["OperatingExpenses", "CostsAndExpenses"],
    ),
    money(OPERATING_INCOME, &["OperatingIncomeLoss"]),
    money("Interest expense", &["InterestExpense"]),
    money(
        "Income before taxes",
        &[
            "IncomeLossFromContinuingOperationsBeforeIncomeTaxesExtraordinaryItemsNoncontrollingInterest",
            "IncomeLossFromContinuingOperationsBeforeIncomeTaxesMinorityInterestAndIncomeLossFromEquityMethodInvestments",
        ],
    ),
    money("Income tax", &["IncomeTaxExpenseBenefit"]),
    money(NET_INCOME, &["NetIncomeLoss", "ProfitLoss"]),
    Line {
        label: EPS_BASIC,
        concepts: &["EarningsPerShareBasic", "EarningsPerShareBasicAndDiluted"],
        measure: Measure::PerShare,
    },
    Line {
        label: EPS_DILUTED,
        concepts: &["EarningsPerShareDiluted", "EarningsPerShareBasicAndDiluted"],
        measure: Measure::PerShare,
    },
    Line {
        label: "Diluted shares (weighted)",
        concepts: &["WeightedAverageNumberOfDilutedSharesOutstanding"],
        measure: Measure::Shares,
    },
];

pub const BALANCE_SHEET: &[Line] = &[
    money(
        "Cash and equivalents",
        &[
            "CashAndCashEquivalentsAtCarryingValue",
            "CashCashEquivalentsRestrictedCashAndRestrictedCashEquivalents",
        ],
    ),
    money(
        "Short-term investments",
        &["MarketableSecuritiesCurrent", "ShortTermInvestments"],
    ),
    money("Receivables", &["AccountsReceivableNetCurrent"]),
    money("Inventory", &["InventoryNet"]),
    money(CURRENT_ASSETS, &["AssetsCurrent"]),
    money(TOTAL_ASSETS, &["Assets"]),
    money("Accounts payable", &["AccountsPayableCurrent"]),
    money(CURRENT_LIABILITIES, &["LiabilitiesCurrent"]),
    money(
        "Long-term debt",
        &["LongTermDebtNoncurrent", "LongTermDebt"],
    ),
    money(TOTAL_LIABILITIES, &["Liabilities"]),
    money(
        EQUITY,
        &[
            "StockholdersEquity",
            "StockholdersEquityIncludingPortionAttributableToNoncontrollingInterest",
        ],
    ),
    Line {
        label: "Shares outstanding",
        concepts: &["CommonStockSharesOutstanding"],
        measure: Measure::Shares,
    },
];

pub const CASH_FLOW: &[Line] = &[
    money(
        OPERATING_CASH_FLOW,
        &["NetCashProvidedByUsedInOperatingActivities"],
    ),
    money(CAPEX, &["PaymentsToAcquirePropertyPlantAndEquipment"]),
    money(
        "Investing cash flow",
        &["NetCashProvidedByUsedInInvestingActivities"],
    ),
    money(
        "Financing cash flow",
        &["NetCashProvidedByUsedInFinancingActivities"],
    ),
    money(
        "Dividends paid",
        &["PaymentsOfDividends", "PaymentsOfDividendsCommonStock"],
    ),
    money("Share repurchases", &["PaymentsForRepurchaseOfCommonStock"]),
    money(
        "Depreciation and amortization",
        &[
            "DepreciationDepletionAndAmortization",
            "DepreciationAndAmortization",
        ],
    ),
    money("Stock-based compensation", &["ShareBasedCompensation"]),
];

/// Concepts read besides the statement lines.
const EXTRA_CONCEPTS: &[&str] = &["EntityCommonStockSharesOutstanding"];

/// Every concept the statements read, sorted (what an import or a download keeps).
pub fn concepts() -> Vec<&'static str> {
    let mut all: Vec<&'static str> = INCOME_STATEMENT
        .iter()
        .chain(BALANCE_SHEET)
        .chain(CASH_FLOW)
        .flat_map(|line| line.concepts.iter().copied())
        .chain(EXTRA_CONCEPTS.iter().copied())
        .collect();
    all.sort_unstable();
    all.dedup();
    all
}

/// Which statement.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Statement {
    Income,
    Balance,
    CashFlow,
}

impl Statement {
    fn lines(self) -> &'static [Line] {
        match self {
            Statement::Income => INCOME_STATEMENT,
            Statement::Balance => BALANCE_SHEET,
            Statement::CashFlow => CASH_FLOW,
        }
    }
}

/// Which periods and how many.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Selection {
    pub period: Period,
    pub limit: usize,
    pub from: Option<NaiveDate>,
    pub to: Option<NaiveDate>,
    /// Periods ending in this calendar year.
    pub year: Option<i32>,
}

/// A table built from facts, with where it came from.
#[derive(Debug, Clone, PartialEq)]
pub struct FactTable {
    pub table: Table,
    /// The end of the most recent period shown.
    pub as_of: NaiveDate,
    /// The filing that reported the most recent period.
    pub accn: Option<String>,
    pub notes: Vec<String>,
}

/// A period: a span (durations) or a day (instants, `start` absent).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
struct Span {
    start: Option<NaiveDate>,
    end: NaiveDate,
}

impl Span {
    fn days(self) -> i64 {
        self.start.map_or(0, |start| (self.end - start).num_days())
    }
    fn is_annual(self) -> bool {
        (340..=380).contains(&self.days())
    }
    fn is_quarter(self) -> bool {
        (80..=100).contains(&self.days())
    }
}

#[derive(Debug, Clone, PartialEq)]
struct Point {
    value: f64,
    accn: Option<String>,
    derived: bool,
}

type Series = HashMap<Span, Point>;

/// The facts indexed by concept.
struct Index<'a> {
    by_concept: HashMap<&'a str, Vec<&'a Fact>>,
}

impl<'a> Index<'a> {
    fn new(facts: &'a [Fact]) -> Index<'a> {
        let mut by_concept: HashMap<&str, Vec<&Fact>> = HashMap::new();
        for fact in facts {
            by_concept.entry(&fact.concept).or_default().push(fact);
        }
        Index { by_concept }
    }

    /// A line's values by period: per period, the first concept that has one.
    fn series(&self, line: &Line) -> Series {
        let mut series = Series::new();
        for concept in line.concepts {
            for fact in self.by_concept.get(concept).into_iter().flatten() {
                if fact.unit != line.measure.unit() {
                    continue;
                }
                let span = Span {
                    start: fact.start,
                    end: fact.end,
                };
                series.entry(span).or_insert_with(|| Point {
                    value: fact.value,
                    accn: fact.accn.clone(),
                    derived: false,
                });
            }
        }
        if line.measure == Measure::Money {
            derive_quarters(&mut series);
        }
        series
    }

    /// Ends of annual periods of any concept: the filer's fiscal year ends.
    fn fiscal_year_ends(&self) -> BTreeSet<NaiveDate> {
        self.by_concept
            .values()
            .flatten()
            .filter(|f| {
                Span {
                    start: f.start,
                    end: f.end,
                }
                .is_annual()
            })
            .map(|f| f.end)
            .collect()
    }
}

/// Quarters filers report only inside year-to-date totals: for two totals from the same
/// fiscal-year start whose ends are a quarter apart, the difference is that quarter.
fn derive_quarters(series: &mut Series) {
    let mut by_start: HashMap<NaiveDate, Vec<(NaiveDate, f64)>> = HashMap::new();
    for (span, point) in series.iter() {
        if let Some(start) = span.start
            && span.days() >= 80
        {
            by_start
                .entry(start)
                .or_default()
                .push((span.end, point.value));
        }
    }
    for cumulative in by_start.values_mut() {
        cumulative.sort_by_key(|(end, _)| *end);
        for pair in cumulative.windows(2) {
            let [(first_end, first), (second_end, second)] = pair else {
                continue;
            };
            let Some(start) = first_end.checked_add_days(Days::new(1)) else {
                continue;
            };
            let quarter = Span {
                start: Some(start),
                end: *second_end,
            };
            if quarter.is_quarter() && !series.contains_key(&quarter) {
                series.insert(
                    quarter,
                    Point {
                        value: second - first,
                        accn: None,
                        derived: true,
                    },
                );
            }
        }
    }
}

/// The periods to show, most recent first.
fn duration_periods(all: &[&Series], selection: &Selection) -> Vec<Span> {
    let wanted = |span: &Span| match selection.period {
        Period::Annual => span.is_annual(),
        Period::Quarter | Period::Ttm => span.is_quarter(),
    };
    // One span per end (52/53-week years may give two): the one most lines have.
    let mut best: HashMap<NaiveDate, (Span, usize)> = HashMap::new();
    for series in all {
        for span in series.keys().filter(|s| wanted(s)) {
            let count = all.iter().filter(|s| s.contains_key(span)).count();
            let entry = best.entry(span.end).or_insert((*span, count));
            if count > entry.1 {
                *entry = (*span, count);
            }
        }
    }
    let mut spans: Vec<Span> = best.into_values().map(|(span, _)| span).collect();
    spans.sort_by_key(|s| std::cmp::Reverse(s.end));
    filter_periods(spans, selection)
}

fn filter_periods(spans: Vec<Span>, selection: &Selection) -> Vec<Span> {
    spans
        .into_iter()
        .filter(|s| selection.from.is_none_or(|from| s.end >= from))
        .filter(|s| selection.to.is_none_or(|to| s.end <= to))
        .filter(|s| {
            selection
                .year
                .is_none_or(|y| s.end.format("%Y").to_string() == y.to_string())
        })
        .take(selection.limit.max(1))
        .collect()
}

/// The balance-sheet days to show, most recent first.
fn instant_periods(index: &Index<'_>, all: &[&Series], selection: &Selection) -> Vec<Span> {
    let year_ends = index.fiscal_year_ends();
    let mut counts: HashMap<NaiveDate, usize> = HashMap::new();
    for series in all {
        for span in series.keys().filter(|s| s.start.is_none()) {
            *counts.entry(span.end).or_default() += 1;
        }
    }
    let mut ends: Vec<NaiveDate> = counts
        .into_iter()
        // A day with one lone value is a cover-page date, not a balance sheet.
        .filter(|(_, count)| *count >= 2)
        .map(|(end, _)| end)
        .filter(|end| selection.period != Period::Annual || year_ends.contains(end))
        .collect();
    ends.sort_by(|a, b| b.cmp(a));
    let spans = ends
        .into_iter()
        .map(|end| Span { start: None, end })
        .collect();
    filter_periods(spans, selection)
}

/// The last four quarters when they follow one another: the trailing twelve months.
fn ttm_quarters(quarters: &[Span]) -> Option<[Span; 4]> {
    let last: [Span; 4] = quarters.get(..4)?.try_into().ok()?;
    for pair in last.windows(2) {
        let gap = (pair[0].start? - pair[1].end).num_days();
        if !(0..=7).contains(&gap) {
            return None;
        }
    }
    Some(last)
}

fn number(value: f64) -> Value {
    if value.fract() == 0.0 && value.abs() < 9e15 {
        json!(value as i64)
    } else {
        json!(value)
    }
}

fn header(span: &Span) -> String {
    span.end.to_string()
}

/// An income statement, balance sheet or cash flow statement.
pub fn statement(facts: &[Fact], which: Statement, selection: &Selection) -> Option<FactTable> {
    let index = Index::new(facts);
    let lines = which.lines();
    let series: Vec<Series> = lines.iter().map(|line| index.series(line)).collect();
    let all: Vec<&Series> = series.iter().collect();
    let mut notes = Vec::new();
    if which == Statement::Balance {
        let periods = instant_periods(&index, &all, selection);
        return build(lines, &series, &periods, None, notes);
    }
    if selection.period == Period::Ttm {
        let mut quarterly = *selection;
        quarterly.limit = 8;
        quarterly.period = Period::Quarter;
        let quarters = duration_periods(&all, &quarterly);
        let Some(four) = ttm_quarters(&quarters) else {
            notes.push("No four consecutive quarters are reported: showing the last fiscal year instead of the trailing twelve months.".to_owned());
            let annual = Selection {
                period: Period::Annual,
                limit: 1,
                ..*selection
            };
            let periods = duration_periods(&all, &annual);
            return build(lines, &series, &periods, None, notes);
        };
        let mut ttm_series: Vec<Series> = Vec::with_capacity(series.len());
        let span = Span {
            start: four[3].start,
            end: four[0].end,
        };
        for (line, values) in lines.iter().zip(&series) {
            let mut one = Series::new();
            if line.measure != Measure::Shares {
                let points: Vec<&Point> = four.iter().filter_map(|q| values.get(q)).collect();
                if points.len() == 4 {
                    one.insert(
                        span,
                        Point {
                            value: points.iter().map(|p| p.value).sum(),
                            accn: points.first().and_then(|p| p.accn.clone()),
                            derived: true,
                        },
                    );
                }
            }
            ttm_series.push(one);
        }
        notes.push(format!(
            "Trailing twelve months: the sum of the four quarters ending {}.",
            four[0].end
        ));
        return build(lines, &ttm_series, &[span], Some("TTM to"), notes);
    }
    let periods = duration_periods(&all, selection);
    build(lines, &series, &periods, None, notes)
}

fn build(
    lines: &[Line],
    series: &[Series],
    periods: &[Span],
    prefix: Option<&str>,
    mut notes: Vec<String>,
) -> Option<FactTable> {
    let first = periods.first()?;
    let mut columns = vec!["item".to_owned()];
    columns.extend(periods.iter().map(|p| match prefix {
        Some(prefix) => format!("{prefix} {}", header(p)),
        None => header(p),
    }));
    let mut table = Table {
        columns,
        rows: Vec::new(),
    };
    let mut derived = false;
    let mut accn = None;
    for (line, values) in lines.iter().zip(series) {
        let points: Vec<Option<&Point>> = periods.iter().map(|p| values.get(p)).collect();
        if points.iter().all(Option::is_none) {
            continue;
        }
        derived |= points.iter().flatten().any(|p| p.derived);
        if accn.is_none() {
            accn = points
                .first()
                .copied()
                .flatten()
                .and_then(|p| p.accn.clone());
        }
        let mut row = vec![Value::String(line.label.to_owned())];
        row.extend(
            points
                .iter()
                .map(|p| p.map_or(Value::Null, |p| number(p.value))),
        );
        table.push(row);
    }
    if table.is_empty() {
        return None;
    }
    // Free cash flow, when the statement has both parts.
    let position = |label: &str| table.rows.iter().position(|r| r[0] == label);
    if let (Some(ocf), Some(capex)) = (position(OPERATING_CASH_FLOW), position(CAPEX)) {
        let mut row = vec![Value::String("Free cash flow".to_owned())];
        for column in 1..table.columns.len() {
            let value = match (
                table.rows[ocf][column].as_f64(),
                table.rows[capex][column].as_f64(),
            ) {
                (Some(ocf), Some(capex)) => number(ocf - capex),
                _ => Value::Null,
            };
            row.push(value);
        }
        table.push(row);
    }
    if derived && prefix.is_none() {
        notes.push("Some quarterly values are derived from year-to-date totals (the filer did not report that quarter on its own).".to_owned());
    }
    Some(FactTable {
        table,
        as_of: first.end,
        accn,
        notes,
    })
}

/// Margins, returns and leverage per period; with a price, the P/E of the latest period.
pub fn ratios(
    facts: &[Fact],
    selection: &Selection,
    price: Option<(NaiveDate, f64)>,
) -> Option<FactTable> {
    let index = Index::new(facts);
    let get = |lines: &[Line], label: &str| {
        lines
            .iter()
            .find(|l| l.label == label)
            .map(|line| index.series(line))
            .unwrap_or_default()
    };
    let revenue = get(INCOME_STATEMENT, REVENUE);
    let gross = get(INCOME_STATEMENT, GROSS_PROFIT);
    let operating = get(INCOME_STATEMENT, OPERATING_INCOME);
    let net = get(INCOME_STATEMENT, NET_INCOME);
    let eps = get(INCOME_STATEMENT, EPS_DILUTED);
    let assets = get(BALANCE_SHEET, TOTAL_ASSETS);
    let current_assets = get(BALANCE_SHEET, CURRENT_ASSETS);
    let current_liabilities = get(BALANCE_SHEET, CURRENT_LIABILITIES);
    let liabilities = get(BALANCE_SHEET, TOTAL_LIABILITIES);
    let equity = get(BALANCE_SHEET, EQUITY);
    let selection = Selection {
        period: if selection.period == Period::Quarter {
            Period::Quarter
        } else {
            Period::Annual
        },
        ..*selection
    };
    let periods = duration_periods(&[&revenue, &net], &selection);
    let first = periods.first()?;
    let at = |series: &Series, span: &Span| series.get(span).map(|p| p.value);
    let at_end = |series: &Series, span: &Span| {
        series
            .get(&Span {
                start: None,
                end: span.end,
            })
            .map(|p| p.value)
    };
    let ratio = |a: Option<f64>, b: Option<f64>| match (a, b) {
        (Some(a), Some(b)) if b != 0.0 => json!((a / b * 10_000.0).round() / 10_000.0),
        _ => Value::Null,
    };
    let mut columns = vec!["ratio".to_owned()];
    columns.extend(periods.iter().map(header));
    let mut table = Table {
        columns,
        rows: Vec::new(),
    };
    type Rule<'a> = (&'a str, Box<dyn Fn(&Span) -> Value + 'a>);
    let rules: Vec<Rule<'_>> = vec![
        (
            "Gross margin",
            Box::new(|s| ratio(at(&gross, s), at(&revenue, s))),
        ),
        (
            "Operating margin",
            Box::new(|s| ratio(at(&operating, s), at(&revenue, s))),
        ),
        (
            "Net margin",
            Box::new(|s| ratio(at(&net, s), at(&revenue, s))),
        ),
        (
            "Return on equity",
            Box::new(|s| ratio(at(&net, s), at_end(&equity, s))),
        ),
        (
            "Return on assets",
            Box::new(|s| ratio(at(&net, s), at_end(&assets, s))),
        ),
        (
            "Current ratio",
            Box::new(|s| ratio(at_end(&current_assets, s), at_end(&current_liabilities, s))),
        ),
        (
            "Liabilities to equity",
            Box::new(|s| ratio(at_end(&liabilities, s), at_end(&equity, s))),
        ),
        (
            "EPS (diluted)",
            Box::new(|s| at(&eps, s).map_or(Value::Null, number)),
        ),
    ];
    for (label, rule) in &rules {
        let values: Vec<Value> = periods.iter().map(rule).collect();
        if values.iter().all(Value::is_null) {
            continue;
        }
        let mut row = vec![Value::String((*label).to_owned())];
        row.extend(values);
        table.push(row);
    }
    let mut notes = Vec::new();
    if let Some((date, close)) = price
        && selection.period == Period::Annual
        && let Some(latest_eps) = at(&eps, first)
        && latest_eps > 0.0
    {
        let mut row = vec![Value::String(format!("P/E (close {close} on {date})"))];
        row.push(json!((close / latest_eps * 100.0).round() / 100.0));
        table.push(row);
        notes.push(format!(
            "P/E uses the close of {date} and the diluted EPS of the fiscal year ending {}.",
            first.end
        ));
    }
    if table.is_empty() {
        return None;
    }
    if selection.period == Period::Quarter {
        notes.push("Quarterly returns are for the quarter, not annualised.".to_owned());
    }
    let accn = net
        .get(first)
        .or_else(|| revenue.get(first))
        .and_then(|p| p.accn.clone());
    Some(FactTable {
        table,
        as_of: first.end,
        accn,
        notes,
    })
}

/// Reported EPS, revenue and net income per quarter (or year).
pub fn earnings(facts: &[Fact], selection: &Selection) -> Option<FactTable> {
    let index = Index::new(facts);
    let wanted = [EPS_DILUTED, EPS_BASIC, REVENUE, NET_INCOME];
    let lines: Vec<Line> = wanted
        .iter()
        .filter_map(|label| INCOME_STATEMENT.iter().find(|l| l.label == *label).copied())
        .collect();
    let series: Vec<Series> = lines.iter().map(|line| index.series(line)).collect();
    let all: Vec<&Series> = series.iter().collect();
    let periods = duration_periods(&all, selection);
    let mut built = build(&lines, &series, &periods, None, Vec::new())?;
    built.notes.push(
        "Reported figures from 10-Q and 10-K filings; SEC data carries no analyst estimates, so there is no beat or miss here."
            .to_owned(),
    );
    Some(built)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn day(text: &str) -> NaiveDate {
        crate::facts::date(text).unwrap()
    }

    fn fact(concept: &str, unit: &str, start: Option<&str>, end: &str, value: f64) -> Fact {
        Fact {
            concept: concept.to_owned(),
            unit: unit.to_owned(),
            start: start.map(day),
            end: day(end),
            value,
            fy: None,
            fp: None,
            form: Some("10-K".to_owned()),
            filed: day("2025-01-31"),
            accn: Some(format!("accn-{end}")),
        }
    }

    fn selection(period: Period, limit: usize) -> Selection {
        Selection {
            period,
            limit,
            from: None,
            to: None,
            year: None,
        }
    }

    fn facts() -> Vec<Fact> {
        let mut facts = vec![
            // Revenue moved concepts between the two years.
            fact("Revenues", "USD", Some("2023-01-01"), "2023-12-31", 100.0),
            fact(
                "RevenueFromContractWithCustomerExcludingAssessedTax",
                "USD",
                Some("2024-01-01"),
                "2024-12-31",
                120.0,
            ),
            fact(
                "NetIncomeLoss",
                "USD",
                Some("2023-01-01"),
                "2023-12-31",
                10.0,
            ),
            fact(
                "NetIncomeLoss",
                "USD",
                Some("2024-01-01"),
                "2024-12-31",
                18.0,
            ),
            fact(
                "EarningsPerShareDiluted",
                "USD/shares",
                Some("2024-01-01"),
                "2024-12-31",
                1.8,
            ),
            fact("Assets", "USD", None, "2024-12-31", 200.0),
            fact("StockholdersEquity", "USD", None, "2024-12-31", 90.0),
            fact("Assets", "USD", None, "2024-06-30", 190.0),
            fact("StockholdersEquity", "USD", None, "2024-06-30", 85.0),
        ];
        // 2024 quarters: Q1, then year to date for H1 and 9M; Q4 only inside the year.
        facts.push(fact(
            "NetIncomeLoss",
            "USD",
            Some("2024-01-01"),
            "2024-03-31",
            4.0,
        ));
        facts.push(fact(
            "NetIncomeLoss",
            "USD",
            Some("2024-01-01"),
            "2024-06-30",
            9.0,
        ));
        facts.push(fact(
            "NetIncomeLoss",
            "USD",
            Some("2024-01-01"),
            "2024-09-30",
            13.0,
        ));
        facts
    }

    #[test]
    fn annual_income_takes_the_first_concept_per_period() {
        let table = statement(&facts(), Statement::Income, &selection(Period::Annual, 4)).unwrap();
        assert_eq!(table.table.columns, ["item", "2024-12-31", "2023-12-31"]);
        let revenue = &table.table.rows[0];
        assert_eq!(revenue[0], "Revenue");
        assert_eq!(revenue[1], 120);
        assert_eq!(revenue[2], 100);
        assert_eq!(table.as_of, day("2024-12-31"));
        assert_eq!(table.accn.as_deref(), Some("accn-2024-12-31"));
    }

    #[test]
    fn missing_quarters_are_derived_from_year_to_date_totals() {
        let table = statement(&facts(), Statement::Income, &selection(Period::Quarter, 4)).unwrap();
        assert_eq!(
            table.table.columns,
            [
                "item",
                "2024-12-31",
                "2024-09-30",
                "2024-06-30",
                "2024-03-31"
            ]
        );
        let net = table
            .table
            .rows
            .iter()
            .find(|r| r[0] == NET_INCOME)
            .unwrap();
        // Q4 = year − 9M, Q3 = 9M − H1, Q2 = H1 − Q1, Q1 as reported.
        assert_eq!(net[1..], [json!(5), json!(4), json!(5), json!(4)]);
        assert!(
            table.notes.iter().any(|n| n.contains("derived")),
            "{:?}",
            table.notes
        );
        let ttm = statement(&facts(), Statement::Income, &selection(Period::Ttm, 4)).unwrap();
        assert_eq!(ttm.table.columns, ["item", "TTM to 2024-12-31"]);
        assert_eq!(ttm.table.rows[0][1], 18);
    }

    #[test]
    fn balance_sheets_are_at_fiscal_year_ends_unless_quarterly() {
        let annual =
            statement(&facts(), Statement::Balance, &selection(Period::Annual, 4)).unwrap();
        assert_eq!(annual.table.columns, ["item", "2024-12-31"]);
        let quarterly =
            statement(&facts(), Statement::Balance, &selection(Period::Quarter, 4)).unwrap();
        assert_eq!(
            quarterly.table.columns,
            ["item", "2024-12-31", "2024-06-30"]
        );
        assert!(statement(&facts(), Statement::CashFlow, &selection(Period::Annual, 4)).is_none());
    }

    #[test]
    fn ratios_combine_lines_and_a_price() {
        let price = Some((day("2025-02-03"), 36.0));
        let table = ratios(&facts(), &selection(Period::Annual, 2), price).unwrap();
        let row = |label: &str| {
            table
                .table
                .rows
                .iter()
                .find(|r| r[0] == label)
                .unwrap()
                .clone()
        };
        assert_eq!(row("Net margin")[1], json!(0.15));
        assert_eq!(row("Return on equity")[1], json!(0.2));
        let pe = table
            .table
            .rows
            .iter()
            .find(|r| r[0].as_str().unwrap_or_default().starts_with("P/E"))
            .unwrap();
        assert_eq!(pe[1], json!(20.0));
    }
}
