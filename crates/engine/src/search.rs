//! BM25 ranking for `tool_search`: which deferred MCP tools match the model's query.
//!
//! A tool's document is its name (counted twice: names are the strongest signal), its
//! description, and the names and descriptions of its parameters. Text is split into lowercase
//! words at non-alphanumeric characters and camelCase boundaries, with a plain plural `s`
//! removed, so `listFiles`, `list_files` and "lists files" meet.

use std::collections::HashMap;

use serde_json::Value;

use crate::mcp::McpToolInfo;

/// BM25 parameters (the usual defaults).
const K1: f64 = 1.2;
const B: f64 = 0.75;

/// Words too common to say anything about a tool.
const STOP_WORDS: &[&str] = &[
    "a", "an", "and", "are", "as", "at", "be", "by", "for", "from", "in", "into", "is", "it", "of",
    "on", "or", "that", "the", "this", "to", "with", "tool", "use", "me", "my", "i", "can", "want",
    "need", "some", "do",
];

/// Splits text into search terms.
pub fn tokenize(text: &str) -> Vec<String> {
    let mut words = Vec::new();
    let mut current = String::new();
    let mut previous_lower = false;
    for c in text.chars() {
        if c.is_alphanumeric() {
            if c.is_uppercase() && previous_lower && !current.is_empty() {
                words.push(std::mem::take(&mut current));
            }
            previous_lower = c.is_lowercase() || c.is_ascii_digit();
            current.extend(c.to_lowercase());
        } else {
            previous_lower = false;
            if !current.is_empty() {
                words.push(std::mem::take(&mut current));
            }
        }
    }
    if !current.is_empty() {
        words.push(current);
    }
    words
        .into_iter()
        .filter(|w| !STOP_WORDS.contains(&w.as_str()))
        .map(|w| stem(&w))
        .collect()
}

fn stem(word: &str) -> String {
    let keeps_s = ["ss", "us", "is"].iter().any(|end| word.ends_with(end));
    if word.len() > 3 && word.ends_with('s') && !keeps_s {
        word[..word.len() - 1].to_owned()
    } else {
        word.to_owned()
    }
}

/// The search terms of one tool.
pub fn tool_tokens(tool: &McpToolInfo) -> Vec<String> {
    let mut text = format!("{} {} ", tool.name, tool.name);
    if let Some(description) = &tool.description {
        text.push_str(description);
    }
    if let Some(properties) = tool
        .input_schema
        .get("properties")
        .and_then(Value::as_object)
    {
        for (name, schema) in properties {
            text.push(' ');
            text.push_str(name);
            if let Some(description) = schema.get("description").and_then(Value::as_str) {
                text.push(' ');
                text.push_str(description);
            }
        }
    }
    tokenize(&text)
}

/// Scores every document against the query; returns `(document index, score)` for documents
/// with a positive score, best first (ties keep document order).
pub fn rank(docs: &[Vec<String>], query: &[String]) -> Vec<(usize, f64)> {
    if docs.is_empty() || query.is_empty() {
        return Vec::new();
    }
    let n = docs.len() as f64;
    let average = docs.iter().map(Vec::len).sum::<usize>() as f64 / n;
    let mut containing: HashMap<&str, usize> = HashMap::new();
    for doc in docs {
        let mut seen: Vec<&str> = doc.iter().map(String::as_str).collect();
        seen.sort_unstable();
        seen.dedup();
        for term in seen {
            *containing.entry(term).or_default() += 1;
        }
    }
    let mut terms: Vec<&str> = query.iter().map(String::as_str).collect();
    terms.sort_unstable();
    terms.dedup();
    let mut scores: Vec<(usize, f64)> = docs
        .iter()
        .enumerate()
        .map(|(index, doc)| {
            let len = doc.len() as f64;
            let score = terms
                .iter()
                .map(|term| {
                    let df = containing.get(term).copied().unwrap_or(0) as f64;
                    if df == 0.0 {
                        return 0.0;
                    }
                    let tf = doc.iter().filter(|t| t.as_str() == *term).count() as f64;
                    let idf = ((n - df + 0.5) / (df + 0.5) + 1.0).ln();
                    idf * tf * (K1 + 1.0) / (tf + K1 * (1.0 - B + B * len / average.max(1.0)))
                })
                .sum::<f64>();
            (index, score)
        })
        .filter(|(_, score)| *score > 0.0)
        .collect();
    scores.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
    scores
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn tool(name: &str, description: &str, params: Value) -> McpToolInfo {
        McpToolInfo {
            name: name.to_owned(),
            description: Some(description.to_owned()),
            input_schema: json!({"type": "object", "properties": params}).into(),
            read_only: None,
        }
    }

    #[test]
    fn words_split_at_case_and_punctuation() {
        assert_eq!(
            tokenize("listFiles in_the-Folder"),
            ["list", "file", "folder"]
        );
        assert_eq!(tokenize("HTTPServer status"), ["httpserver", "status"]);
    }

    #[test]
    fn the_best_matching_tool_comes_first_and_strangers_score_nothing() {
        let tools = [
            tool(
                "weather_forecast",
                "Get the weather forecast for a city",
                json!({"city": {"description": "City name"}}),
            ),
            tool(
                "stock_quote",
                "Latest price of a stock ticker",
                json!({"symbol": {"description": "Ticker symbol"}}),
            ),
            tool(
                "github_create_issue",
                "Open an issue in a GitHub repository",
                json!({"title": {}}),
            ),
        ];
        let docs: Vec<Vec<String>> = tools.iter().map(tool_tokens).collect();
        let ranked = rank(&docs, &tokenize("What's the weather in Paris?"));
        assert_eq!(ranked.first().map(|r| r.0), Some(0));
        let ranked = rank(&docs, &tokenize("ticker price"));
        assert_eq!(ranked.iter().map(|r| r.0).collect::<Vec<_>>(), [1]);
        assert!(rank(&docs, &tokenize("quantum chromodynamics")).is_empty());
        assert!(rank(&docs, &[]).is_empty());
    }

    #[test]
    fn parameter_descriptions_count() {
        let tools = [
            tool(
                "send",
                "Send a message",
                json!({"channel": {"description": "Slack channel"}}),
            ),
            tool(
                "post",
                "Post a message",
                json!({"to": {"description": "Email address"}}),
            ),
        ];
        let docs: Vec<Vec<String>> = tools.iter().map(tool_tokens).collect();
        assert_eq!(
            rank(&docs, &tokenize("slack")).first().map(|r| r.0),
            Some(0)
        );
        assert_eq!(
            rank(&docs, &tokenize("email")).first().map(|r| r.0),
            Some(1)
        );
    }
}
