//! Long texts (earnings call transcripts) cut to the passages that match the query: the
//! text is split into passages (speaker turns, long ones at sentence ends), each is scored
//! with BM25 against the query's words, and the best are kept, in their original order,
//! up to a character budget. Without a match the opening passages are kept.

use std::collections::{HashMap, HashSet};

use serde_json::json;

use crate::backend::Block;
use crate::table::{MAX_CELL_CHARS, Table};

/// Characters of transcript the model reads at most.
pub const MAX_TRANSCRIPT_CHARS: usize = 8000;

/// Words that say nothing about which passage is wanted.
const STOP_WORDS: &[&str] = &[
    "the",
    "and",
    "for",
    "with",
    "what",
    "did",
    "does",
    "about",
    "from",
    "that",
    "this",
    "their",
    "they",
    "was",
    "were",
    "are",
    "say",
    "said",
    "says",
    "how",
    "why",
    "who",
    "when",
    "call",
    "calls",
    "earnings",
    "transcript",
    "transcripts",
    "quarter",
    "quarterly",
    "latest",
    "last",
    "company",
    "management",
    "discuss",
    "discussed",
    "comments",
    "comment",
    "any",
    "its",
    "into",
    "on",
    "in",
    "of",
    "to",
    "a",
    "an",
    "is",
    "it",
    "be",
    "by",
    "or",
    "as",
    "at",
];

/// The passages kept, with their position in the whole, and how many there were.
#[derive(Debug, Clone, PartialEq)]
pub struct Selected {
    /// (1-based position, text), in the original order.
    pub passages: Vec<(usize, String)>,
    pub total: usize,
    /// Whether any passage matched the query.
    pub matched: bool,
}

/// Splits a text into passages: non-empty lines, long ones cut at sentence ends.
pub fn split(text: &str) -> Vec<String> {
    text.lines()
        .map(str::trim)
        .filter(|line| !line.is_empty())
        .flat_map(|line| chunk(line, MAX_CELL_CHARS))
        .collect()
}

/// Cuts a long passage at sentence ends into pieces of at most `max` characters.
fn chunk(text: &str, max: usize) -> Vec<String> {
    if text.chars().count() <= max {
        return vec![text.to_owned()];
    }
    let mut pieces = Vec::new();
    let mut current = String::new();
    for sentence in text.split_inclusive(['.', '?', '!']) {
        if !current.is_empty() && current.chars().count() + sentence.chars().count() > max {
            pieces.push(current.trim().to_owned());
            current.clear();
        }
        current.push_str(sentence);
        while current.chars().count() > max {
            let head: String = current.chars().take(max).collect();
            let rest: String = current.chars().skip(max).collect();
            pieces.push(head.trim().to_owned());
            current = rest;
        }
    }
    if !current.trim().is_empty() {
        pieces.push(current.trim().to_owned());
    }
    pieces
}

fn words(text: &str) -> Vec<String> {
    text.split(|c: char| !c.is_alphanumeric())
        .filter(|w| w.chars().count() >= 2)
        .map(str::to_lowercase)
        .collect()
}

/// The best passages for `query` within `max_chars`.
pub fn select(passages: &[String], query: &str, max_chars: usize) -> Selected {
    let total = passages.len();
    let whole: usize = passages.iter().map(|p| p.chars().count()).sum();
    if whole <= max_chars {
        return Selected {
            passages: passages
                .iter()
                .cloned()
                .enumerate()
                .map(|(i, p)| (i + 1, p))
                .collect(),
            total,
            matched: true,
        };
    }
    let terms: HashSet<String> = words(query)
        .into_iter()
        .filter(|w| w.len() >= 3 && !STOP_WORDS.contains(&w.as_str()))
        .collect();
    let documents: Vec<Vec<String>> = passages.iter().map(|p| words(p)).collect();
    let scores = bm25(&documents, &terms);
    let mut order: Vec<usize> = (0..total).filter(|i| scores[*i] > 0.0).collect();
    let matched = !order.is_empty();
    if matched {
        order.sort_by(|a, b| scores[*b].total_cmp(&scores[*a]).then(a.cmp(b)));
    } else {
        order = (0..total).collect();
    }
    let mut kept = Vec::new();
    let mut used = 0;
    for index in order {
        let length = passages[index].chars().count();
        if used + length > max_chars && !kept.is_empty() {
            if matched {
                continue;
            }
            break;
        }
        used += length;
        kept.push(index);
    }
    kept.sort_unstable();
    Selected {
        passages: kept
            .into_iter()
            .map(|i| (i + 1, passages[i].clone()))
            .collect(),
        total,
        matched,
    }
}

/// A transcript's passages for the query as a table, with a note on what was left out.
pub fn transcript_block(all: &[String], query: &str, title: &str, as_of: Option<String>) -> Block {
    let selected = select(all, query, MAX_TRANSCRIPT_CHARS);
    let mut table = Table::new(&["#", "passage"]);
    for (position, passage) in &selected.passages {
        table.push(vec![json!(position), json!(passage)]);
    }
    let mut notes = Vec::new();
    if selected.passages.len() < selected.total {
        notes.push(if selected.matched {
            format!(
                "{} of {} passages shown: those matching the query.",
                selected.passages.len(),
                selected.total
            )
        } else {
            format!(
                "No passage matched the query: the first {} of {} passages are shown.",
                selected.passages.len(),
                selected.total
            )
        });
    }
    Block {
        title: title.to_owned(),
        table,
        as_of,
        notes,
        ..Block::default()
    }
}

/// BM25 (k1 1.2, b 0.75) of each document for the terms.
fn bm25(documents: &[Vec<String>], terms: &HashSet<String>) -> Vec<f64> {
    let count = documents.len() as f64;
    let average = documents.iter().map(Vec::len).sum::<usize>() as f64 / count.max(1.0);
    let mut containing: HashMap<&str, f64> = HashMap::new();
    for document in documents {
        let unique: HashSet<&str> = document.iter().map(String::as_str).collect();
        for term in terms {
            if unique.contains(term.as_str()) {
                *containing.entry(term.as_str()).or_default() += 1.0;
            }
        }
    }
    documents
        .iter()
        .map(|document| {
            let length = document.len() as f64;
            terms
                .iter()
                .map(|term| {
                    let frequency = document.iter().filter(|w| *w == term).count() as f64;
                    if frequency == 0.0 {
                        return 0.0;
                    }
                    let n = containing.get(term.as_str()).copied().unwrap_or_default();
                    let idf = ((count - n + 0.5) / (n + 0.5) + 1.0).ln();
                    idf * frequency * 2.2
                        / (frequency + 1.2 * (0.25 + 0.75 * length / average.max(1.0)))
                })
                .sum()
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn transcript() -> Vec<String> {
        let mut passages: Vec<String> = (0..40)
            .map(|i| format!("Operator: passage {i} about nothing in particular, thanking everyone for joining today."))
            .collect();
        passages[17] =
            "CFO: Gross margin was 46.2 percent, driven by services mix and favourable costs."
                .to_owned();
        passages[31] =
            "Analyst: Could you talk about gross margin guidance for next quarter?".to_owned();
        passages
    }

    #[test]
    fn matching_passages_are_kept_in_order() {
        let selected = select(&transcript(), "What did they say about gross margin?", 300);
        assert!(selected.matched);
        assert_eq!(selected.total, 40);
        let positions: Vec<usize> = selected.passages.iter().map(|(i, _)| *i).collect();
        assert_eq!(positions, [18, 32]);
    }

    #[test]
    fn without_a_match_the_opening_is_kept_and_short_texts_whole() {
        let selected = select(&transcript(), "dividends", 300);
        assert!(!selected.matched);
        assert_eq!(selected.passages[0].0, 1);
        assert!(selected.passages.len() < 40);
        let short = select(&transcript()[..2], "anything", 10_000);
        assert_eq!(short.passages.len(), 2);
    }

    #[test]
    fn long_lines_are_cut_at_sentences() {
        let long = "This is one sentence. ".repeat(200);
        let pieces = split(&format!("Speaker: {long}\n\nNext: short."));
        assert!(pieces.len() > 2);
        assert!(pieces.iter().all(|p| p.chars().count() <= MAX_CELL_CHARS));
        assert_eq!(pieces.last().map(String::as_str), Some("Next: short."));
    }
}
