//! [`Table`]: what every back end answers, whatever its JSON looked like. The model reads
//! it as a compact pipe table (big numbers shortened); the `finance_results` item carries
//! it as `data: {"columns": [...], "rows": [[...], ...]}` with the numbers as they came.

use std::fmt::Write as _;

use serde_json::{Map, Value, json};

/// The longest text kept in one cell (descriptions, transcript passages are cut apart).
pub const MAX_CELL_CHARS: usize = 1200;

/// The most rows a table keeps.
pub const MAX_ROWS: usize = 100;

/// Columns kept from a record list with many fields.
const MAX_RECORD_COLUMNS: usize = 14;

/// A table: named columns, rows of JSON scalars (numbers stay numbers).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Table {
    pub columns: Vec<String>,
    pub rows: Vec<Vec<Value>>,
}

impl Table {
    pub fn new(columns: &[&str]) -> Table {
        Table {
            columns: columns.iter().map(|c| (*c).to_owned()).collect(),
            rows: Vec::new(),
        }
    }

    /// Adds a row (padded or cut to the columns; long text cut; at most [`MAX_ROWS`]).
    pub fn push(&mut self, row: Vec<Value>) {
        if self.rows.len() >= MAX_ROWS {
            return;
        }
        let mut row: Vec<Value> = row.into_iter().map(clip).collect();
        row.resize(self.columns.len(), Value::Null);
        self.rows.push(row);
    }

    pub fn is_empty(&self) -> bool {
        self.rows.is_empty()
    }

    /// `field | value` rows from a flat object, in `preferred` order first, then the
    /// other scalar fields (sorted), skipping `skip` and empty values.
    pub fn key_values(object: &Map<String, Value>, preferred: &[&str], skip: &[&str]) -> Table {
        let mut table = Table::new(&["field", "value"]);
        for key in ordered_keys(object, preferred, skip) {
            if let Some(value) = object.get(&key).filter(|v| is_scalar(v)) {
                table.push(vec![Value::String(key), value.clone()]);
            }
        }
        table
    }

    /// One row per record, columns from the records' scalar fields (`preferred` first, then
    /// the others in first-seen order, at most 14), skipping `skip`.
    pub fn records(records: &[Map<String, Value>], preferred: &[&str], skip: &[&str]) -> Table {
        let mut columns: Vec<String> = Vec::new();
        for key in preferred {
            if records.iter().any(|r| r.get(*key).is_some_and(is_scalar)) {
                columns.push((*key).to_owned());
            }
        }
        for record in records {
            for (key, value) in record {
                if columns.len() >= MAX_RECORD_COLUMNS {
                    break;
                }
                if is_scalar(value) && !skip.contains(&key.as_str()) && !columns.contains(key) {
                    columns.push(key.clone());
                }
            }
        }
        let mut table = Table {
            columns,
            rows: Vec::new(),
        };
        for record in records {
            let row = table
                .columns
                .iter()
                .map(|c| record.get(c).cloned().unwrap_or(Value::Null))
                .collect();
            table.push(row);
        }
        table
    }

    /// Statements as analysts read them: one row per line item, one column per period
    /// (`period_key` names the records' period field, e.g. `date`). Lines in `preferred`
    /// order first, then the other numeric fields, skipping `skip`.
    pub fn transposed(
        records: &[Map<String, Value>],
        period_key: &str,
        preferred: &[&str],
        skip: &[&str],
    ) -> Table {
        let mut columns = vec!["item".to_owned()];
        columns.extend(records.iter().map(|r| {
            r.get(period_key)
                .map(cell_text)
                .unwrap_or_else(|| "?".to_owned())
        }));
        let mut lines: Vec<String> = Vec::new();
        for key in preferred {
            if records.iter().any(|r| r.get(*key).is_some_and(is_number)) {
                lines.push((*key).to_owned());
            }
        }
        for record in records {
            for (key, value) in record {
                if key != period_key
                    && is_number(value)
                    && !skip.contains(&key.as_str())
                    && !lines.contains(key)
                {
                    lines.push(key.clone());
                }
            }
        }
        let mut table = Table {
            columns,
            rows: Vec::new(),
        };
        for line in lines {
            let mut row = vec![Value::String(line.clone())];
            row.extend(
                records
                    .iter()
                    .map(|r| r.get(&line).cloned().unwrap_or(Value::Null)),
            );
            table.push(row);
        }
        table
    }

    /// The best table a JSON answer of unknown shape gives (MCP tools): a list of objects
    /// becomes records, an object holding one such list becomes that list, a flat object
    /// becomes fields; anything else is one `text` cell.
    pub fn from_json(value: &Value, limit: usize) -> Table {
        match value {
            Value::Array(items) if items.iter().all(Value::is_object) && !items.is_empty() => {
                let records: Vec<Map<String, Value>> = items
                    .iter()
                    .take(limit)
                    .filter_map(|v| v.as_object().cloned())
                    .collect();
                Table::records(&records, &[], &[])
            }
            Value::Object(object) => {
                let lists: Vec<&Value> = object
                    .values()
                    .filter(|v| {
                        v.as_array()
                            .is_some_and(|a| !a.is_empty() && a.iter().all(Value::is_object))
                    })
                    .collect();
                let objects: Vec<&Value> = object.values().filter(|v| v.is_object()).collect();
                match lists.as_slice() {
                    [only] => Table::from_json(only, limit),
                    _ if object.values().any(is_scalar) => Table::key_values(object, &[], &[]),
                    // A wrapper around one object (`{"Global Quote": {…}}`).
                    [] if objects.len() == 1 => Table::from_json(objects[0], limit),
                    _ => text_table(&value.to_string()),
                }
            }
            Value::String(text) => text_table(text),
            other => text_table(&other.to_string()),
        }
    }

    /// The table as `item["data"]`.
    pub fn to_data(&self) -> Map<String, Value> {
        let mut data = Map::new();
        data.insert("columns".to_owned(), json!(self.columns));
        data.insert("rows".to_owned(), json!(self.rows));
        data
    }

    /// The compact text the model reads, at most `max_chars` (whole rows; a note says how
    /// many were left out).
    pub fn render(&self, max_chars: usize) -> String {
        let mut text = String::new();
        let _ = writeln!(text, "| {} |", self.columns.join(" | "));
        for (index, row) in self.rows.iter().enumerate() {
            let cells: Vec<String> = row.iter().map(cell_text).collect();
            let line = format!("| {} |\n", cells.join(" | "));
            if text.len() + line.len() > max_chars && index > 0 {
                let _ = writeln!(text, "… {} more rows not shown", self.rows.len() - index);
                break;
            }
            text.push_str(&line);
        }
        text
    }
}

fn text_table(text: &str) -> Table {
    let mut table = Table::new(&["text"]);
    table.push(vec![Value::String(text.to_owned())]);
    table
}

fn ordered_keys(object: &Map<String, Value>, preferred: &[&str], skip: &[&str]) -> Vec<String> {
    let mut keys: Vec<String> = preferred
        .iter()
        .filter(|k| object.contains_key(**k))
        .map(|k| (*k).to_owned())
        .collect();
    for key in object.keys() {
        if !skip.contains(&key.as_str()) && !keys.contains(key) {
            keys.push(key.clone());
        }
    }
    keys
}

fn is_scalar(value: &Value) -> bool {
    match value {
        Value::String(s) => !s.trim().is_empty() && s != "None",
        Value::Number(_) | Value::Bool(_) => true,
        Value::Null | Value::Array(_) | Value::Object(_) => false,
    }
}

fn is_number(value: &Value) -> bool {
    match value {
        Value::Number(_) => true,
        Value::String(s) => s.trim().parse::<f64>().is_ok(),
        _ => false,
    }
}

/// Long strings cut to [`MAX_CELL_CHARS`], whitespace folded.
fn clip(value: Value) -> Value {
    match value {
        Value::String(text) => {
            let folded = text.split_whitespace().collect::<Vec<_>>().join(" ");
            Value::String(truncate(&folded, MAX_CELL_CHARS))
        }
        other => other,
    }
}

/// At most `max` characters, with `…` when cut.
pub fn truncate(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        return text.to_owned();
    }
    let mut cut: String = text.chars().take(max.saturating_sub(1)).collect();
    cut.push('…');
    cut
}

/// A cell as the model reads it: numbers shortened (`391.04B`), strings as they are,
/// empty for null.
pub fn cell_text(value: &Value) -> String {
    match value {
        Value::Null => String::new(),
        Value::Number(n) => n.as_f64().map(compact_number).unwrap_or_default(),
        Value::String(s) => match s.trim().parse::<f64>() {
            // Numbers that came as strings (Alpha Vantage) read like numbers; dates and
            // codes that merely look numeric ("0000320193") are left as written.
            Ok(n) if s.contains('.') || s.len() > 6 && !s.starts_with('0') => compact_number(n),
            _ => s.replace('|', "/"),
        },
        Value::Bool(b) => b.to_string(),
        other => other.to_string(),
    }
}

/// 391035000000 → `391.04B`; 0.2431 → `0.2431`; 189.5 → `189.5`.
pub fn compact_number(n: f64) -> String {
    let abs = n.abs();
    let (scaled, suffix) = if abs >= 1e12 {
        (n / 1e12, "T")
    } else if abs >= 1e9 {
        (n / 1e9, "B")
    } else if abs >= 1e6 {
        (n / 1e6, "M")
    } else {
        (n, "")
    };
    let text = if suffix.is_empty() {
        if abs >= 1000.0 || n.fract() == 0.0 {
            format!("{n:.0}")
        } else if abs >= 1.0 {
            format!("{n:.2}")
        } else {
            format!("{n:.4}")
        }
    } else {
        format!("{scaled:.2}")
    };
    let text = if text.contains('.') {
        text.trim_end_matches('0').trim_end_matches('.').to_owned()
    } else {
        text
    };
    format!("{text}{suffix}")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn object(value: Value) -> Map<String, Value> {
        value.as_object().cloned().unwrap_or_default()
    }

    #[test]
    fn numbers_are_compact_for_the_model() {
        assert_eq!(compact_number(391_035_000_000.0), "391.04B");
        assert_eq!(compact_number(-2_500_000.0), "-2.5M");
        assert_eq!(compact_number(189.5), "189.5");
        assert_eq!(compact_number(0.243_14), "0.2431");
        assert_eq!(compact_number(12.0), "12");
        assert_eq!(compact_number(4_300.0), "4300");
        assert_eq!(cell_text(&json!("0000320193")), "0000320193");
        assert_eq!(cell_text(&json!("2024-09-28")), "2024-09-28");
        assert_eq!(cell_text(&json!("391035000000")), "391.04B");
    }

    #[test]
    fn statements_are_transposed_with_preferred_lines_first() {
        let records = vec![
            object(
                json!({"date": "2024-09-28", "revenue": 391.0e9, "netIncome": 93.7e9, "symbol": "AAPL"}),
            ),
            object(
                json!({"date": "2023-09-30", "revenue": 383.3e9, "netIncome": 97.0e9, "symbol": "AAPL"}),
            ),
        ];
        let table = Table::transposed(&records, "date", &["revenue"], &[]);
        assert_eq!(table.columns, ["item", "2024-09-28", "2023-09-30"]);
        assert_eq!(table.rows[0][0], "revenue");
        assert_eq!(table.rows[1][0], "netIncome");
        assert_eq!(table.rows.len(), 2, "the symbol is not a line: {table:?}");
        let text = table.render(10_000);
        assert!(text.contains("| revenue | 391B | 383.3B |"), "{text}");
    }

    #[test]
    fn rendering_stops_at_the_budget_with_a_note() {
        let mut table = Table::new(&["date", "close"]);
        for day in 1..=50 {
            table.push(vec![
                json!(format!("2025-01-{day:02}")),
                json!(100.0 + f64::from(day)),
            ]);
        }
        let text = table.render(200);
        assert!(text.len() < 260, "{text}");
        assert!(text.contains("more rows not shown"), "{text}");
    }

    #[test]
    fn unknown_json_becomes_the_best_table() {
        let list = json!({"meta": "x", "data": [{"a": 1, "b": "two"}, {"a": 3}]});
        let table = Table::from_json(&list, 10);
        assert_eq!(table.columns, ["a", "b"]);
        assert_eq!(table.rows.len(), 2);
        let flat = Table::from_json(&json!({"price": 1.5, "symbol": "X"}), 10);
        assert_eq!(flat.columns, ["field", "value"]);
        let wrapped = Table::from_json(&json!({"Global Quote": {"price": "1.5"}}), 10);
        assert_eq!(wrapped.rows, [vec![json!("price"), json!("1.5")]]);
        let text = Table::from_json(&json!("plain words"), 10);
        assert_eq!(text.rows[0][0], "plain words");
    }
}
