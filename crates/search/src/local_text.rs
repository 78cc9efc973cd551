//! What both back ends of the local index share (`local.rs` SQLite, `local_pg.rs`
//! PostgreSQL): the words of a query, the snippet around a match, the domain and date filters
//! in SQL both databases run, and the error mapping.

use chrono::NaiveDate;
use sqlx::QueryBuilder;

use crate::backend::{BackendError, SearchQuery};
use crate::filter::recency_cutoff;
use crate::html;

/// Passage length when the query names no per-page budget (1000 tokens).
const DEFAULT_PASSAGE_CHARS: usize = 4000;

/// Query words used at most.
const MAX_QUERY_TERMS: usize = 32;

pub(crate) fn index_error(err: sqlx::Error) -> BackendError {
    BackendError::Index(err.to_string())
}

pub(crate) fn today() -> NaiveDate {
    chrono::Utc::now().date_naive()
}

/// The snippet length a query asks for.
pub(crate) fn passage_chars(query: &SearchQuery) -> usize {
    query
        .max_tokens_per_page
        .map_or(DEFAULT_PASSAGE_CHARS, |tokens| {
            (tokens as usize).saturating_mul(crate::budget::CHARS_PER_TOKEN)
        })
}

/// The date filters of a query on `d.date` and `d.last_updated` (`YYYY-MM-DD` text), the
/// same SQL on both databases.
pub(crate) fn push_dates<DB: sqlx::Database>(sql: &mut QueryBuilder<DB>, query: &SearchQuery)
where
    for<'a> String: sqlx::Encode<'a, DB> + sqlx::Type<DB>,
{
    let ymd = |date: NaiveDate| date.format("%Y-%m-%d").to_string();
    for (column, range) in [
        ("d.date", query.published),
        ("d.last_updated", query.last_updated),
    ] {
        if let Some(after) = range.after {
            sql.push(format!(" AND ({column} IS NULL OR {column} >= "))
                .push_bind(ymd(after))
                .push(")");
        }
        if let Some(before) = range.before {
            sql.push(format!(" AND ({column} IS NULL OR {column} <= "))
                .push_bind(ymd(before))
                .push(")");
        }
    }
    if let Some(recency) = query.recency {
        sql.push(" AND (COALESCE(d.date, d.last_updated) IS NULL OR COALESCE(d.date, d.last_updated) >= ")
            .push_bind(ymd(recency_cutoff(recency, today())))
            .push(")");
    }
}

/// ` AND (host matches any)` or ` AND NOT (host matches any)`, the same SQL on both
/// databases.
pub(crate) fn push_domains<DB: sqlx::Database>(
    sql: &mut QueryBuilder<DB>,
    domains: &[String],
    deny: bool,
) where
    for<'a> String: sqlx::Encode<'a, DB> + sqlx::Type<DB>,
{
    if domains.is_empty() {
        return;
    }
    sql.push(if deny { " AND NOT (" } else { " AND (" });
    for (i, domain) in domains.iter().enumerate() {
        if i > 0 {
            sql.push(" OR ");
        }
        let escaped = domain
            .replace('\\', "\\\\")
            .replace('%', "\\%")
            .replace('_', "\\_");
        sql.push("d.host = ")
            .push_bind(domain.clone())
            .push(" OR d.host LIKE ")
            .push_bind(format!("%.{escaped}"))
            .push(" ESCAPE '\\'");
    }
    sql.push(")");
}

/// The words of a query, lower case (letters and digits; everything else separates).
pub(crate) fn query_terms(text: &str) -> Vec<String> {
    let mut terms: Vec<String> = Vec::new();
    for word in text.split(|c: char| !c.is_alphanumeric()) {
        let word = word.to_lowercase();
        if !word.is_empty() && !terms.contains(&word) {
            terms.push(word);
        }
        if terms.len() == MAX_QUERY_TERMS {
            break;
        }
    }
    terms
}

/// The text from the start of the sentence holding the first query word, at most
/// `max_chars` characters (the whole text when no word is found verbatim).
pub(crate) fn passage(body: &str, terms: &[String], max_chars: usize) -> String {
    let lower = body.to_ascii_lowercase();
    let first = terms
        .iter()
        .filter_map(|term| lower.find(&term.to_ascii_lowercase()))
        .min()
        .unwrap_or(0);
    let mut window = first.saturating_sub(300);
    while !body.is_char_boundary(window) {
        window -= 1;
    }
    let before = &body[window..first];
    let start = match before.rfind(['.', '!', '?', '\n']) {
        Some(at) => window + at + 1,
        None if window == 0 => 0,
        None => before
            .find(char::is_whitespace)
            .map_or(first, |at| window + at),
    };
    let text = html::tidy_lines(&body[start..]).replace('\n', " ");
    let text = text.trim();
    let text = if start > 0 {
        format!("…{text}")
    } else {
        text.to_owned()
    };
    crate::budget::truncate(&text, max_chars)
}
