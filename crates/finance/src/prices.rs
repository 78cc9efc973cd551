//! Price bars: read from the services' records, folded into weeks or months, shown as a
//! table (most recent first).

use std::collections::BTreeMap;

use chrono::Datelike as _;
use serde_json::{Map, Value, json};

use crate::category::Interval;
use crate::table::Table;

/// One bar. `date` is `YYYY-MM-DD` or, intraday, `YYYY-MM-DD HH:MM:SS`.
#[derive(Debug, Clone, PartialEq)]
pub struct Bar {
    pub date: String,
    pub open: Option<f64>,
    pub high: Option<f64>,
    pub low: Option<f64>,
    pub close: f64,
    pub volume: Option<f64>,
}

/// A number written as a number or as a string (Alpha Vantage).
pub fn number(value: Option<&Value>) -> Option<f64> {
    match value? {
        Value::Number(n) => n.as_f64(),
        Value::String(s) => s.trim().parse().ok(),
        _ => None,
    }
}

impl Bar {
    /// A bar from `{date, open, high, low, close, volume}`.
    pub fn from_record(record: &Map<String, Value>) -> Option<Bar> {
        Some(Bar {
            date: record.get("date")?.as_str()?.to_owned(),
            open: number(record.get("open")),
            high: number(record.get("high")),
            low: number(record.get("low")),
            close: number(record.get("close"))?,
            volume: number(record.get("volume")),
        })
    }
}

/// Daily bars folded into weeks (ISO) or months; others unchanged. Most recent first; a
/// folded bar carries the date of its last day.
pub fn aggregate(mut bars: Vec<Bar>, interval: Interval) -> Vec<Bar> {
    bars.sort_by(|a, b| b.date.cmp(&a.date));
    if !matches!(interval, Interval::Week1 | Interval::Month1) {
        return bars;
    }
    let mut groups: BTreeMap<(i32, u32), Vec<Bar>> = BTreeMap::new();
    for bar in bars {
        let Some(day) = crate::facts::date(&bar.date) else {
            continue;
        };
        let key = match interval {
            Interval::Week1 => (day.iso_week().year(), day.iso_week().week()),
            _ => (day.year(), day.month()),
        };
        groups.entry(key).or_default().push(bar);
    }
    let mut folded: Vec<Bar> = groups
        .into_values()
        .filter_map(|group| {
            // Within a group the bars are most recent first.
            let last = group.first()?;
            let first = group.last()?;
            let max = |f: fn(&Bar) -> Option<f64>| group.iter().filter_map(f).reduce(f64::max);
            let min = |f: fn(&Bar) -> Option<f64>| group.iter().filter_map(f).reduce(f64::min);
            Some(Bar {
                date: last.date.clone(),
                open: first.open,
                high: max(|b| b.high),
                low: min(|b| b.low),
                close: last.close,
                volume: group.iter().map(|b| b.volume).sum(),
            })
        })
        .collect();
    folded.sort_by(|a, b| b.date.cmp(&a.date));
    folded
}

/// The first `limit` bars as a table.
pub fn bars_table(bars: &[Bar], limit: usize) -> Table {
    let mut table = Table::new(&["date", "open", "high", "low", "close", "volume"]);
    let opt = |v: Option<f64>| v.map_or(Value::Null, |v| json!(v));
    for bar in bars.iter().take(limit) {
        table.push(vec![
            json!(bar.date),
            opt(bar.open),
            opt(bar.high),
            opt(bar.low),
            json!(bar.close),
            opt(bar.volume),
        ]);
    }
    table
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bar(date: &str, open: f64, close: f64, volume: f64) -> Bar {
        Bar {
            date: date.to_owned(),
            open: Some(open),
            high: Some(open.max(close) + 1.0),
            low: Some(open.min(close) - 1.0),
            close,
            volume: Some(volume),
        }
    }

    #[test]
    fn daily_bars_fold_into_weeks_and_months() {
        let bars = vec![
            bar("2025-01-06", 10.0, 11.0, 100.0),
            bar("2025-01-07", 11.0, 12.0, 100.0),
            bar("2025-01-13", 12.0, 9.0, 50.0),
            bar("2025-02-03", 9.0, 8.0, 10.0),
        ];
        let weeks = aggregate(bars.clone(), Interval::Week1);
        assert_eq!(weeks.len(), 3);
        assert_eq!(weeks[2].date, "2025-01-07");
        assert_eq!(weeks[2].open, Some(10.0));
        assert_eq!(weeks[2].close, 12.0);
        assert_eq!(weeks[2].volume, Some(200.0));
        assert_eq!(weeks[2].high, Some(13.0));
        let months = aggregate(bars, Interval::Month1);
        assert_eq!(months.len(), 2);
        assert_eq!(months[1].close, 9.0);
        assert_eq!(bars_table(&months, 1).rows.len(), 1);
    }
}
