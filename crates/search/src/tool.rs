//! [`WebSearch`]: the `web_search` hosted tool over one [`Backend`].

use std::collections::HashSet;
use std::fmt::Write as _;
use std::sync::Arc;

use chrono::NaiveDate;
use engine::hosted::{CallContext, HostedError, HostedTool, Source, ToolOutcome};
use engine::model::ToolSpec;
use protocol::RequestError;
use protocol::events::EventData;
use protocol::output::{OutputItem, SearchResult, SearchResults};
use protocol::request::WebSearchTool;
use serde_json::{Value, json};

use crate::backend::{Backend, BackendError, DateRange, Hit, SearchQuery};
use crate::budget::{Budget, truncate};
use crate::check::passes;
use crate::filter::{normalize_date, parse_us_date, split_domain_filter};

/// The tool's fixed name.
pub const TOOL_NAME: &str = "web_search";

/// Its key in `usage.tool_calls_details`.
pub const BILLING_KEY: &str = "search_web";

/// Queries one call may run.
pub const MAX_QUERIES: usize = 3;

/// Characters of one query sent to a back end.
const MAX_QUERY_CHARS: usize = 400;

/// `search_results[].source` of web hits.
const SOURCE_WEB: &str = "web";

const DESCRIPTION: &str = "Search the web for current information. Pass 1 to 3 search \
queries in `queries`; use several when the question has several parts. Returns numbered \
results ([1], [2], …), each with title, URL, date and an excerpt. Cite every result you use \
as [n], right after the statement it supports.";

/// `web_search` configured for one request: its filters, `max_results` and token budgets.
pub struct WebSearch {
    backend: Arc<dyn Backend>,
    /// Every query of a call is this with its own text.
    template: SearchQuery,
    budget: Budget,
}

impl WebSearch {
    /// The tool for `tools[index]` of a request. The request was validated already; a
    /// date filter that still does not parse as `MM/DD/YYYY` is an `Invalid` error
    /// naming `tools[index].filters.<field>`.
    pub fn new(
        backend: Arc<dyn Backend>,
        index: usize,
        tool: &WebSearchTool,
    ) -> Result<WebSearch, HostedError> {
        let filters = tool.filters.clone().unwrap_or_default();
        let date = |name: &str, value: &Option<String>| -> Result<_, HostedError> {
            match value {
                None => Ok(None),
                Some(text) => parse_us_date(text).map(Some).ok_or_else(|| {
                    HostedError::Invalid(RequestError::new(
                        format!("tools[{index}].filters.{name}"),
                        format!("{name} must be a date in MM/DD/YYYY format, got \"{text}\""),
                    ))
                }),
            }
        };
        let (allow_domains, deny_domains) =
            split_domain_filter(filters.search_domain_filter.as_deref().unwrap_or_default());
        let budget = Budget::for_tool(tool);
        let template = SearchQuery {
            text: String::new(),
            max_results: tool
                .max_results
                .unwrap_or(crate::backend::DEFAULT_MAX_RESULTS),
            allow_domains,
            deny_domains,
            recency: filters.search_recency_filter,
            published: DateRange {
                after: date(
                    "search_after_date_filter",
                    &filters.search_after_date_filter,
                )?,
                before: date(
                    "search_before_date_filter",
                    &filters.search_before_date_filter,
                )?,
            },
            last_updated: DateRange {
                after: date(
                    "last_updated_after_filter",
                    &filters.last_updated_after_filter,
                )?,
                before: date(
                    "last_updated_before_filter",
                    &filters.last_updated_before_filter,
                )?,
            },
            user_location: tool.user_location.clone(),
            search_type: tool.search_type,
            max_tokens_per_page: Some(budget.max_tokens_per_page),
        };
        Ok(WebSearch {
            backend,
            template,
            budget,
        })
    }

    /// The budgets in force.
    pub fn budget(&self) -> Budget {
        self.budget
    }

    /// The query every search of a call starts from (text empty).
    pub fn query_template(&self) -> &SearchQuery {
        &self.template
    }

    /// Filters, merges, numbers and trims the hits of one call (pure but for `today`).
    fn collect(&self, per_query: Vec<Vec<Hit>>, today: NaiveDate) -> Vec<Hit> {
        let lists: Vec<Vec<Hit>> = per_query
            .into_iter()
            .map(|hits| {
                hits.into_iter()
                    .map(tidy)
                    .filter(|hit| passes(hit, &self.template, today))
                    .collect()
            })
            .collect();
        // Round robin across queries, so each query is represented, without repeats.
        let limit = self.template.limit() as usize;
        let mut seen = HashSet::new();
        let mut merged = Vec::new();
        let longest = lists.iter().map(Vec::len).max().unwrap_or_default();
        'rounds: for round in 0..longest {
            for list in &lists {
                if merged.len() == limit {
                    break 'rounds;
                }
                if let Some(hit) = list.get(round)
                    && seen.insert(dedupe_key(&hit.url))
                {
                    merged.push(hit.clone());
                }
            }
        }
        self.budget.apply(merged)
    }
}

/// One line of text for titles and snippets; dates as `YYYY-MM-DD` or none.
fn tidy(hit: Hit) -> Hit {
    let line = |text: &str| text.split_whitespace().collect::<Vec<_>>().join(" ");
    let url = hit.url.trim().to_owned();
    let title = line(&hit.title);
    Hit {
        title: if title.is_empty() { url.clone() } else { title },
        snippet: line(&hit.snippet),
        date: hit.date.as_deref().and_then(normalize_date),
        last_updated: hit.last_updated.as_deref().and_then(normalize_date),
        url,
    }
}

/// URLs that differ only by fragment or a trailing slash are one result.
fn dedupe_key(url: &str) -> String {
    let mut key = match url::Url::parse(url.trim()) {
        Ok(mut parsed) => {
            parsed.set_fragment(None);
            parsed.to_string()
        }
        Err(_) => url.trim().to_owned(),
    };
    while key.ends_with('/') {
        key.pop();
    }
    key
}

/// The model's arguments: `{"queries": ["…", …]}` (1 to 3 non-empty strings). A single
/// string, or `query` instead of `queries`, is taken too. Errors are texts for the model.
fn parse_queries(arguments: &str) -> Result<Vec<String>, String> {
    const USAGE: &str = "Call web_search with {\"queries\": [\"your search\"]} (1 to 3 queries).";
    let value: Value = serde_json::from_str(arguments)
        .map_err(|err| format!("web_search: the arguments are not valid JSON ({err}). {USAGE}"))?;
    let raw = value
        .get("queries")
        .or_else(|| value.get("query"))
        .ok_or_else(|| format!("web_search: \"queries\" is missing. {USAGE}"))?;
    let items: Vec<&Value> = match raw {
        Value::Array(items) => items.iter().collect(),
        single @ Value::String(_) => vec![single],
        _ => {
            return Err(format!(
                "web_search: \"queries\" must be an array of strings. {USAGE}"
            ));
        }
    };
    let mut queries: Vec<String> = Vec::new();
    for item in items {
        let Value::String(text) = item else {
            return Err(format!("web_search: every query must be a string. {USAGE}"));
        };
        let text = text.split_whitespace().collect::<Vec<_>>().join(" ");
        let text: String = text.chars().take(MAX_QUERY_CHARS).collect();
        if !text.is_empty() && !queries.contains(&text) {
            queries.push(text);
        }
    }
    match queries.len() {
        0 => Err(format!("web_search: no non-empty query was given. {USAGE}")),
        n if n > MAX_QUERIES => Err(format!(
            "web_search takes at most {MAX_QUERIES} queries per call, got {n}. Split them over \
             several calls or keep the most useful ones."
        )),
        _ => Ok(queries),
    }
}

fn quoted(queries: &[String]) -> String {
    queries
        .iter()
        .map(|query| format!("\"{query}\""))
        .collect::<Vec<_>>()
        .join(", ")
}

/// What the model reads: the numbered results, failures, and how to cite.
fn model_text(
    backend: &str,
    queries: &[String],
    results: &[SearchResult],
    failures: &[(String, BackendError)],
) -> String {
    let mut text = String::new();
    if failures.len() == queries.len() {
        let _ = write!(
            text,
            "web_search failed: the {backend} search back end could not answer"
        );
        let mut messages: Vec<String> = failures.iter().map(|(_, err)| err.to_string()).collect();
        messages.dedup();
        let _ = write!(text, " ({}).", messages.join("; "));
        text.push_str(" No results are available for this call; answer from what you know and say that the search failed, or try again later.");
        return text;
    }
    if results.is_empty() {
        let _ = write!(
            text,
            "No results found for {}. Try other words or a broader query.",
            quoted(queries)
        );
    } else {
        let _ = writeln!(text, "Search results for {}:", quoted(queries));
        for result in results {
            let _ = write!(text, "\n[{}] {} — {}", result.id, result.title, result.url);
            match (&result.date, &result.last_updated) {
                (Some(date), _) => {
                    let _ = write!(text, " ({date})");
                }
                (None, Some(updated)) => {
                    let _ = write!(text, " (updated {updated})");
                }
                (None, None) => {}
            }
            text.push('\n');
            if !result.snippet.is_empty() {
                text.push_str(&result.snippet);
                text.push('\n');
            }
        }
        let first = results.first().map_or(1, |result| result.id);
        let _ = write!(
            text,
            "\nCite each result you use as [n] with its number above (for example [{first}]), \
             right after the statement it supports."
        );
    }
    for (query, err) in failures {
        let _ = write!(
            text,
            "\nNote: the search for \"{query}\" failed ({}).",
            truncate(&err.to_string(), 300)
        );
    }
    text
}

#[async_trait::async_trait]
impl HostedTool for WebSearch {
    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: TOOL_NAME.to_owned(),
            description: Some(DESCRIPTION.to_owned()),
            parameters: json!({
                "type": "object",
                "properties": {
                    "queries": {
                        "type": "array",
                        "description": "1 to 3 web search queries, each a few keywords or a short question.",
                        "items": {"type": "string"},
                        "minItems": 1,
                        "maxItems": MAX_QUERIES,
                    }
                },
                "required": ["queries"],
                "additionalProperties": false,
            }).into(),
            strict: false,
        }
    }

    async fn call(&self, arguments: &str, context: CallContext<'_>) -> ToolOutcome {
        let queries = match parse_queries(arguments) {
            Ok(queries) => queries,
            Err(message) => {
                return ToolOutcome {
                    model_text: message,
                    ..ToolOutcome::default()
                };
            }
        };
        context
            .events
            .emit(EventData::ReasoningStarted { thought: None });
        context.events.emit(EventData::SearchQueries {
            queries: queries.clone(),
            thought: None,
        });

        let searches = queries.iter().map(|text| {
            let query = SearchQuery {
                text: text.clone(),
                ..self.template.clone()
            };
            let backend = Arc::clone(&self.backend);
            async move { backend.search(&query).await }
        });
        let answers = futures::future::join_all(searches).await;
        let mut failures = Vec::new();
        let mut per_query = Vec::with_capacity(answers.len());
        for (query, answer) in queries.iter().zip(answers) {
            match answer {
                Ok(hits) => per_query.push(hits),
                Err(err) => {
                    tracing::warn!(backend = self.backend.name(), error = %err, "web search failed");
                    failures.push((query.clone(), err));
                }
            }
        }
        let succeeded = per_query.len() as u64;
        let hits = self.collect(per_query, chrono::Utc::now().date_naive());

        let results: Vec<SearchResult> = hits
            .into_iter()
            .zip(context.next_source..)
            .map(|(hit, id)| SearchResult {
                id,
                url: hit.url,
                title: hit.title,
                snippet: hit.snippet,
                date: hit.date,
                last_updated: hit.last_updated,
                source: Some(SOURCE_WEB.to_owned()),
            })
            .collect();
        context.events.emit(EventData::SearchResults {
            results: results.clone(),
            thought: None,
            usage: None,
        });
        context
            .events
            .emit(EventData::ReasoningStopped { thought: None });

        let model_text = model_text(self.backend.name(), &queries, &results, &failures);
        let sources = results
            .iter()
            .map(|result| Source {
                number: result.id,
                url: result.url.clone(),
                title: result.title.clone(),
            })
            .collect();
        let invocations = if succeeded > 0 {
            vec![(BILLING_KEY.to_owned(), succeeded)]
        } else {
            Vec::new()
        };
        ToolOutcome {
            model_text,
            items: vec![OutputItem::SearchResults(SearchResults {
                results,
                queries: Some(queries),
            })],
            invocations,
            sources,
            last_number: None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use protocol::request::WebSearchFilters;

    struct Nothing;

    #[async_trait::async_trait]
    impl Backend for Nothing {
        fn name(&self) -> &'static str {
            "nothing"
        }
        async fn search(&self, _query: &SearchQuery) -> Result<Vec<Hit>, BackendError> {
            Ok(Vec::new())
        }
    }

    fn hit(url: &str) -> Hit {
        Hit {
            url: url.into(),
            title: format!("  title of\n{url} "),
            snippet: "some   text".into(),
            ..Hit::default()
        }
    }

    #[test]
    fn arguments() {
        assert_eq!(
            parse_queries(r#"{"queries":["a", " b  c ", "a", ""]}"#).unwrap(),
            vec!["a", "b c"]
        );
        assert_eq!(parse_queries(r#"{"query":"x"}"#).unwrap(), vec!["x"]);
        assert_eq!(parse_queries(r#"{"queries":"y"}"#).unwrap(), vec!["y"]);
        for bad in [
            "",
            "not json",
            "{}",
            r#"{"queries":[]}"#,
            r#"{"queries":["  "]}"#,
            r#"{"queries":[1]}"#,
            r#"{"queries":{"a":1}}"#,
            r#"{"queries":["1","2","3","4"]}"#,
        ] {
            let err = parse_queries(bad).unwrap_err();
            assert!(err.contains("web_search"), "{bad}: {err}");
        }
        let long = format!(r#"{{"queries":["{}"]}}"#, "q".repeat(1000));
        assert_eq!(parse_queries(&long).unwrap()[0].len(), MAX_QUERY_CHARS);
    }

    #[test]
    fn new_maps_the_tool_options() {
        let tool = WebSearchTool {
            max_results: Some(3),
            filters: Some(WebSearchFilters {
                search_domain_filter: Some(vec!["Docs.rs".into(), "-spam.com".into()]),
                search_after_date_filter: Some("01/02/2025".into()),
                last_updated_before_filter: Some("12/31/2025".into()),
                ..WebSearchFilters::default()
            }),
            ..WebSearchTool::default()
        };
        let search = WebSearch::new(Arc::new(Nothing), 0, &tool).unwrap();
        let template = search.query_template();
        assert_eq!(template.max_results, 3);
        assert_eq!(template.allow_domains, vec!["docs.rs"]);
        assert_eq!(template.deny_domains, vec!["spam.com"]);
        assert_eq!(
            template.published.after,
            NaiveDate::from_ymd_opt(2025, 1, 2)
        );
        assert_eq!(
            template.last_updated.before,
            NaiveDate::from_ymd_opt(2025, 12, 31)
        );
        assert_eq!(template.max_tokens_per_page, Some(1000));
    }

    #[test]
    fn a_bad_date_names_the_field() {
        let tool = WebSearchTool {
            filters: Some(WebSearchFilters {
                search_before_date_filter: Some("2025-01-01".into()),
                ..WebSearchFilters::default()
            }),
            ..WebSearchTool::default()
        };
        let Err(HostedError::Invalid(err)) = WebSearch::new(Arc::new(Nothing), 2, &tool) else {
            panic!("expected an invalid-request error");
        };
        assert_eq!(
            err.param.as_deref(),
            Some("tools[2].filters.search_before_date_filter")
        );
    }

    #[test]
    fn merging_alternates_dedupes_and_caps() {
        let tool = WebSearchTool {
            max_results: Some(4),
            ..WebSearchTool::default()
        };
        let search = WebSearch::new(Arc::new(Nothing), 0, &tool).unwrap();
        let today = NaiveDate::from_ymd_opt(2025, 1, 1).unwrap();
        let merged = search.collect(
            vec![
                vec![
                    hit("https://a.com/1"),
                    hit("https://a.com/2"),
                    hit("https://a.com/3"),
                ],
                vec![hit("https://a.com/1/#frag"), hit("https://b.com/1")],
            ],
            today,
        );
        let urls: Vec<&str> = merged.iter().map(|h| h.url.as_str()).collect();
        assert_eq!(
            urls,
            vec![
                "https://a.com/1",
                "https://a.com/2",
                "https://b.com/1",
                "https://a.com/3"
            ]
        );
        assert_eq!(merged[0].title, "title of https://a.com/1");
        assert_eq!(merged[0].snippet, "some text");
    }

    #[test]
    fn empty_titles_fall_back_to_the_url() {
        let tidied = tidy(Hit {
            url: " https://x.org/ ".into(),
            date: Some("March 1, 2025".into()),
            last_updated: Some("yesterday".into()),
            ..Hit::default()
        });
        assert_eq!(tidied.title, "https://x.org/");
        assert_eq!(tidied.url, "https://x.org/");
        assert_eq!(tidied.date.as_deref(), Some("2025-03-01"));
        assert_eq!(tidied.last_updated, None);
    }

    #[test]
    fn model_text_lists_and_asks_for_citations() {
        let result = SearchResult {
            id: 3,
            url: "https://a.com".into(),
            title: "A".into(),
            snippet: "alpha".into(),
            date: Some("2025-01-01".into()),
            last_updated: None,
            source: Some("web".into()),
        };
        let text = model_text("x", &["q".into()], &[result], &[]);
        assert!(
            text.contains("[3] A — https://a.com (2025-01-01)\nalpha"),
            "{text}"
        );
        assert!(text.contains("[3]"), "{text}");
        assert!(text.contains("Cite"), "{text}");
        let none = model_text("x", &["q".into()], &[], &[]);
        assert!(none.starts_with("No results found for \"q\""), "{none}");
        let failed = model_text(
            "brave",
            &["q".into()],
            &[],
            &[("q".into(), BackendError::Transport("timed out".into()))],
        );
        assert!(failed.starts_with("web_search failed"), "{failed}");
        assert!(failed.contains("timed out"), "{failed}");
    }
}
