//! The model's arguments to `finance_search`, read leniently (a string where a list is
//! expected, `null` for absent, category names with spaces) and checked; what cannot be
//! read is a message for the model.

use chrono::NaiveDate;
use serde_json::Value;

use crate::category::{Category, Interval, Period};

/// Symbols one call may name.
pub const MAX_SYMBOLS: usize = 10;
/// Categories one call may ask for.
pub const MAX_CATEGORIES: usize = 6;
/// The largest `limit` (price bars; other categories stop at [`MAX_ROWS_PER_CATEGORY`]).
pub const MAX_LIMIT: usize = 100;
/// The largest `limit` of categories other than price history.
pub const MAX_ROWS_PER_CATEGORY: usize = 20;

/// One call's request, as the model made it.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Ask {
    pub query: String,
    pub symbols: Vec<String>,
    pub categories: Vec<Category>,
    pub period: Option<Period>,
    pub limit: Option<usize>,
    pub from: Option<NaiveDate>,
    pub to: Option<NaiveDate>,
    pub interval: Option<Interval>,
    pub fiscal_year: Option<i32>,
    pub fiscal_quarter: Option<u8>,
}

const USAGE: &str = "Call finance_search with {\"query\": \"what you need\", \"symbols\": [\"AAPL\"], \"categories\": [\"income_statement\"]}.";

/// Reads the arguments. Errors are texts for the model.
pub fn parse(arguments: &str) -> Result<Ask, String> {
    let value: Value = serde_json::from_str(arguments).map_err(|err| {
        format!("finance_search: the arguments are not valid JSON ({err}). {USAGE}")
    })?;
    let object = value
        .as_object()
        .ok_or_else(|| format!("finance_search: the arguments must be an object. {USAGE}"))?;
    let field = |names: &[&str]| {
        names
            .iter()
            .find_map(|name| object.get(*name).filter(|v| !v.is_null()))
    };
    let mut ask = Ask {
        query: match field(&["query", "question"]) {
            Some(Value::String(text)) => text.split_whitespace().collect::<Vec<_>>().join(" "),
            Some(_) => {
                return Err(format!(
                    "finance_search: \"query\" must be a string. {USAGE}"
                ));
            }
            None => String::new(),
        },
        ..Ask::default()
    };
    ask.query = ask.query.chars().take(500).collect();
    for symbol in strings(
        field(&["symbols", "symbol", "tickers", "ticker"]),
        "symbols",
    )? {
        let symbol: String = symbol.chars().take(100).collect();
        if !ask.symbols.iter().any(|s| s.eq_ignore_ascii_case(&symbol)) {
            ask.symbols.push(symbol);
        }
    }
    if ask.symbols.len() > MAX_SYMBOLS {
        return Err(format!(
            "finance_search takes at most {MAX_SYMBOLS} symbols per call, got {}: split them over several calls.",
            ask.symbols.len()
        ));
    }
    for name in strings(field(&["categories", "category"]), "categories")? {
        let category = Category::parse(&name).ok_or_else(|| {
            format!(
                "finance_search: unknown category \"{name}\". Use one of: {}.",
                Category::ALL.map(Category::name).join(", ")
            )
        })?;
        if !ask.categories.contains(&category) {
            ask.categories.push(category);
        }
    }
    if ask.categories.len() > MAX_CATEGORIES {
        return Err(format!(
            "finance_search takes at most {MAX_CATEGORIES} categories per call, got {}: split them over several calls.",
            ask.categories.len()
        ));
    }
    if let Some(value) = field(&["period"]) {
        let text = value.as_str().unwrap_or_default();
        ask.period = Some(Period::parse(text).ok_or_else(|| {
            format!("finance_search: \"period\" must be annual, quarter or ttm, got {value}.")
        })?);
    }
    if let Some(value) = field(&["interval"]) {
        let text = value.as_str().unwrap_or_default();
        ask.interval = Some(Interval::parse(text).ok_or_else(|| {
            format!(
                "finance_search: \"interval\" must be one of {}, got {value}.",
                Interval::ALL.map(Interval::name).join(", ")
            )
        })?);
    }
    if let Some(value) = field(&["limit"]) {
        let n = integer(value).filter(|n| (1..=MAX_LIMIT as i64).contains(n)).ok_or_else(|| {
            format!("finance_search: \"limit\" must be a whole number from 1 to {MAX_LIMIT}, got {value}.")
        })?;
        ask.limit = usize::try_from(n).ok();
    }
    ask.from = date(field(&["from", "start_date"]), "from")?;
    ask.to = date(field(&["to", "end_date"]), "to")?;
    if let (Some(from), Some(to)) = (ask.from, ask.to)
        && from > to
    {
        return Err(format!(
            "finance_search: \"from\" ({from}) is after \"to\" ({to})."
        ));
    }
    if let Some(value) = field(&["fiscal_year", "year"]) {
        let year = integer(value)
            .filter(|y| (1900..=2200).contains(y))
            .ok_or_else(|| {
                format!("finance_search: \"fiscal_year\" must be a year such as 2024, got {value}.")
            })?;
        ask.fiscal_year = i32::try_from(year).ok();
    }
    if let Some(value) = field(&["fiscal_quarter", "quarter"]) {
        let quarter = integer(value)
            .filter(|q| (1..=4).contains(q))
            .ok_or_else(|| {
                format!("finance_search: \"fiscal_quarter\" must be 1, 2, 3 or 4, got {value}.")
            })?;
        ask.fiscal_quarter = u8::try_from(quarter).ok();
    }
    if ask.query.is_empty() && ask.symbols.is_empty() && ask.categories.is_empty() {
        return Err(format!("finance_search: nothing was asked. {USAGE}"));
    }
    Ok(ask)
}

/// A list of strings, or one string (comma-separated values split).
fn strings(value: Option<&Value>, name: &str) -> Result<Vec<String>, String> {
    let items: Vec<&Value> = match value {
        None => return Ok(Vec::new()),
        Some(Value::Array(items)) => items.iter().collect(),
        Some(one @ Value::String(_)) => vec![one],
        Some(_) => {
            return Err(format!(
                "finance_search: \"{name}\" must be a list of strings. {USAGE}"
            ));
        }
    };
    let mut out = Vec::new();
    for item in items {
        let Value::String(text) = item else {
            return Err(format!(
                "finance_search: every entry of \"{name}\" must be a string. {USAGE}"
            ));
        };
        out.extend(
            text.split(',')
                .map(str::trim)
                .filter(|s| !s.is_empty())
                .map(str::to_owned),
        );
    }
    Ok(out)
}

fn integer(value: &Value) -> Option<i64> {
    match value {
        Value::Number(n) => n
            .as_i64()
            .or_else(|| n.as_f64().filter(|f| f.fract() == 0.0).map(|f| f as i64)),
        Value::String(s) => s.trim().parse().ok(),
        _ => None,
    }
}

fn date(value: Option<&Value>, name: &str) -> Result<Option<NaiveDate>, String> {
    let Some(value) = value else {
        return Ok(None);
    };
    let text = value.as_str().unwrap_or_default().trim();
    NaiveDate::parse_from_str(text, "%Y-%m-%d")
        .or_else(|_| NaiveDate::parse_from_str(text, "%m/%d/%Y"))
        .map(Some)
        .map_err(|_| {
            format!("finance_search: \"{name}\" must be a date as YYYY-MM-DD, got {value}.")
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lenient_arguments_are_read() {
        let ask = parse(
            r#"{"query": "  Apple   margins ", "symbols": "AAPL, msft", "categories": ["income statement", "ratios", "ratios"],
                "period": "quarterly", "limit": "8", "from": "2023-01-01", "to": null, "fiscal_quarter": 2}"#,
        )
        .unwrap();
        assert_eq!(ask.query, "Apple margins");
        assert_eq!(ask.symbols, ["AAPL", "msft"]);
        assert_eq!(
            ask.categories,
            [Category::IncomeStatement, Category::Ratios]
        );
        assert_eq!(ask.period, Some(Period::Quarter));
        assert_eq!(ask.limit, Some(8));
        assert_eq!(ask.from, NaiveDate::from_ymd_opt(2023, 1, 1));
        assert_eq!(ask.to, None);
        assert_eq!(ask.fiscal_quarter, Some(2));
    }

    #[test]
    fn bad_arguments_are_explained() {
        let err = |text: &str| parse(text).unwrap_err();
        assert!(err("not json").contains("not valid JSON"));
        assert!(
            err(r#"{"query": "x", "categories": ["weather"]}"#)
                .contains("unknown category \"weather\"")
        );
        assert!(err(r#"{"query": "x", "limit": 0}"#).contains("limit"));
        assert!(
            err(r#"{"query": "x", "from": "2024-02-01", "to": "2024-01-01"}"#).contains("after")
        );
        assert!(err(r#"{"query": "x", "from": "yesterday"}"#).contains("YYYY-MM-DD"));
        assert!(err("{}").contains("nothing was asked"));
        let many: Vec<String> = (0..11).map(|i| format!("S{i}")).collect();
        assert!(err(&serde_json::json!({"symbols": many}).to_string()).contains("at most 10"));
    }
}
