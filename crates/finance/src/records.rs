//! Reading the services' JSON records: a field as text, a record's date against the
//! request's range, and which market-mover lists a query asks for.

use serde_json::{Map, Value};

use crate::backend::DataRequest;

/// A field as trimmed text (numbers written out); `None` when absent or empty.
pub fn text(record: &Map<String, Value>, key: &str) -> Option<String> {
    match record.get(key)? {
        Value::String(s) if !s.trim().is_empty() => Some(s.trim().to_owned()),
        Value::Number(n) => Some(n.to_string()),
        _ => None,
    }
}

/// Whether a record's date (first 10 characters of `key`) is within the request's range.
pub fn in_range(record: &Map<String, Value>, key: &str, request: &DataRequest) -> bool {
    let Some(date) = record
        .get(key)
        .and_then(Value::as_str)
        .and_then(crate::facts::date)
    else {
        return true;
    };
    request.from.is_none_or(|from| date >= from) && request.to.is_none_or(|to| date <= to)
}

/// Which mover lists the query asks for (all three when it names none).
pub fn mover_lists(query: &str) -> Vec<&'static str> {
    let lower = query.to_lowercase();
    let mut lists = Vec::new();
    if lower.contains("gainer") || lower.contains("up the most") || lower.contains("winners") {
        lists.push("gainers");
    }
    if lower.contains("loser") || lower.contains("down the most") || lower.contains("decliner") {
        lists.push("losers");
    }
    if lower.contains("active") || lower.contains("volume") {
        lists.push("most active");
    }
    if lists.is_empty() {
        lists = vec!["gainers", "losers", "most active"];
    }
    lists
}
