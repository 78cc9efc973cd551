//! [`PeopleSearch`]: the `people_search` hosted tool over the configured back ends.

use std::collections::HashSet;
use std::fmt::Write as _;
use std::sync::Arc;
use std::time::Instant;

use engine::hosted::{CallContext, HostedError, HostedTool, Source, ToolOutcome};
use engine::model::ToolSpec;
use protocol::RequestError;
use protocol::events::EventData;
use protocol::output::{OutputItem, SearchResult, SearchResults};

use crate::backend::DirectoryError;
use crate::query::{self, Call, Search};
use crate::record::Person;
use crate::select::{HOW_TO_CONFIGURE, People};

/// The tool's fixed name.
pub const TOOL_NAME: &str = "people_search";

/// Its key in `usage.tool_calls_details`.
pub const BILLING_KEY: &str = "search_people";

const DESCRIPTION: &str = "Find people and their professional information (name, job title, \
company, department, location, education, skills) for lead research, recruiting or mapping an \
organization. Use it for questions about who holds a role or who someone is professionally, \
not for general web search. Pass 1 to 5 short queries such as \"head of design at Figma\" or \
\"machine learning researchers Stanford\", and optional hints (name, title, company, school, \
skill, location, limit). Returns numbered people ([1], [2], …); cite each one you mention as \
[n]. Professional information only: never guess or ask for private contact details.";

/// `people_search` for one request.
pub struct PeopleSearch {
    people: Arc<People>,
}

impl PeopleSearch {
    /// The tool for `tools[index]`: refused (400, naming the tool and what to set) when no
    /// back end is configured and no directory was imported. It never invents people.
    pub fn new(people: Arc<People>, index: usize) -> Result<PeopleSearch, HostedError> {
        if !people.is_configured() {
            return Err(HostedError::Invalid(RequestError::new(
                format!("tools[{index}]"),
                format!(
                    "the people_search tool has no back end on this server: {HOW_TO_CONFIGURE}"
                ),
            )));
        }
        Ok(PeopleSearch { people })
    }

    /// Request validation for a project: refused (400, naming the tool and what to set)
    /// when no remote back end is configured and the embedded directory holds nobody of
    /// `project_id` (another project's import does not count).
    pub async fn check(people: &People, project_id: &str, index: usize) -> Result<(), HostedError> {
        if people.serves(project_id).await {
            return Ok(());
        }
        Err(HostedError::Invalid(RequestError::new(
            format!("tools[{index}]"),
            format!(
                "the people_search tool has no back end for this project: no people were imported into it and no remote directory is configured; {HOW_TO_CONFIGURE}"
            ),
        )))
    }
}

/// How a search is shown (`queries` of the item): its text and hints.
fn shown(call: &Call, text: &str) -> String {
    let hints: Vec<String> = call
        .hints
        .iter()
        .map(|(hint, value)| format!("{}: {value}", hint.key()))
        .collect();
    match (text.is_empty(), hints.is_empty()) {
        (false, true) => text.to_owned(),
        (true, _) => hints.join(", "),
        (false, false) => format!("{text} ({})", hints.join(", ")),
    }
}

/// Round robin over the lists, one entry per URL (profile page or URN), at most `limit`.
fn merge(lists: Vec<Vec<Person>>, limit: usize) -> Vec<Person> {
    let mut seen = HashSet::new();
    let mut merged = Vec::new();
    let longest = lists.iter().map(Vec::len).max().unwrap_or_default();
    let mut lists: Vec<std::vec::IntoIter<Person>> =
        lists.into_iter().map(Vec::into_iter).collect();
    for _ in 0..longest {
        for list in &mut lists {
            if merged.len() == limit {
                return merged;
            }
            if let Some(person) = list.next()
                && seen.insert(person.url().trim_end_matches('/').to_lowercase())
            {
                merged.push(person);
            }
        }
    }
    merged
}

fn model_text(
    searches: &[String],
    results: &[SearchResult],
    failures: &[(&'static str, DirectoryError)],
    attempts: usize,
) -> String {
    let quoted = searches
        .iter()
        .map(|s| format!("\"{s}\""))
        .collect::<Vec<_>>()
        .join(", ");
    let mut text = String::new();
    if attempts > 0 && failures.len() == attempts {
        let mut messages: Vec<String> = failures
            .iter()
            .map(|(source, err)| format!("{source}: {err}"))
            .collect();
        messages.dedup();
        let _ = write!(
            text,
            "people_search failed ({}). No people are available for this call; say that the \
             search failed rather than guessing.",
            messages.join("; ")
        );
        return text;
    }
    if results.is_empty() {
        let _ = write!(
            text,
            "No people found for {quoted}. Try other words, fewer hints or a broader query; do \
             not guess who it might be."
        );
    } else {
        let _ = writeln!(text, "People found for {quoted}:");
        for result in results {
            let _ = write!(text, "\n[{}] {} — {}", result.id, result.title, result.url);
            if let Some(updated) = &result.last_updated {
                let _ = write!(text, " (updated {updated})");
            }
            text.push('\n');
            text.push_str(&result.snippet);
            text.push('\n');
        }
        let first = results.first().map_or(1, |r| r.id);
        let _ = write!(
            text,
            "\nCite each person you mention as [n] with the number above (for example \
             [{first}]). These records hold professional information only: do not guess \
             contact details."
        );
    }
    let mut noted = HashSet::new();
    for (source, err) in failures {
        if noted.insert(*source) {
            let _ = write!(text, "\nNote: the {source} source failed ({err}).");
        }
    }
    text
}

/// A short, text-free description of a failure for the logs (a service's error message
/// may quote the query).
fn kind(err: &DirectoryError) -> String {
    match err {
        DirectoryError::Config(_) => "config".to_owned(),
        DirectoryError::Blocked(_) => "blocked".to_owned(),
        DirectoryError::Transport(_) => "transport".to_owned(),
        DirectoryError::RateLimited { .. } => "rate_limited".to_owned(),
        DirectoryError::Status { status, .. } => format!("http_{status}"),
        DirectoryError::Decode(_) => "decode".to_owned(),
        DirectoryError::Store(_) => "store".to_owned(),
        DirectoryError::Ldap(_) => "ldap".to_owned(),
    }
}

#[async_trait::async_trait]
impl HostedTool for PeopleSearch {
    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: TOOL_NAME.to_owned(),
            description: Some(DESCRIPTION.to_owned()),
            parameters: query::parameters().into(),
            strict: false,
        }
    }

    async fn call(&self, arguments: &str, context: CallContext<'_>) -> ToolOutcome {
        let call = match query::parse(arguments) {
            Ok(call) => call,
            Err(message) => {
                return ToolOutcome {
                    model_text: message,
                    ..ToolOutcome::default()
                };
            }
        };
        let started = Instant::now();
        let texts: Vec<String> = if call.queries.is_empty() {
            vec![String::new()]
        } else {
            call.queries.clone()
        };
        let searches: Vec<String> = texts.iter().map(|text| shown(&call, text)).collect();
        context
            .events
            .emit(EventData::ReasoningStarted { thought: None });
        context.events.emit(EventData::SearchQueries {
            queries: searches.clone(),
            thought: None,
        });

        let mut failures: Vec<(&'static str, DirectoryError)> = Vec::new();
        let mut directories = Vec::new();
        for directory in self.people.directories().await {
            match directory {
                Ok(directory) => directories.push(directory),
                Err(failure) => failures.push(failure),
            }
        }
        let attempts_failed_early = failures.len();
        let mut jobs = Vec::new();
        for (query_index, text) in texts.iter().enumerate() {
            for directory in &directories {
                let search = Search {
                    text: text.clone(),
                    hints: call.hints.clone(),
                    limit: call.limit,
                    project: context.project_id.to_owned(),
                };
                let directory = Arc::clone(directory);
                jobs.push(async move {
                    let answer = directory.search(&search).await;
                    (query_index, directory.name(), answer)
                });
            }
        }
        let attempts = jobs.len() + attempts_failed_early;
        let answers = futures::future::join_all(jobs).await;
        // One list per (query, source), queries first, so every query is represented.
        let mut lists = Vec::new();
        let mut answered = vec![false; texts.len()];
        for (query_index, source, answer) in answers {
            match answer {
                Ok(people) => {
                    answered[query_index] = true;
                    lists.push(people);
                }
                Err(err) => {
                    tracing::warn!(source, error = %kind(&err), "a people_search source failed");
                    failures.push((source, err));
                }
            }
        }
        let people = merge(lists, call.limit);
        let policy = self.people.url_policy();
        let results: Vec<SearchResult> = people
            .into_iter()
            .map(|person| match person.profile() {
                // Every URL a back end returns is judged by the network guard before the
                // model, the caller or a later fetch sees it.
                Some(url) if policy.check_url(url).is_err() => person.without_profile_url(),
                _ => person,
            })
            .zip(context.next_source..)
            .map(|(person, id)| SearchResult {
                id,
                url: person.url(),
                title: person.headline(),
                snippet: person.snippet(),
                date: None,
                last_updated: person.updated().map(str::to_owned),
                source: None,
            })
            .collect();
        let query_chars: usize = texts.iter().map(|t| t.chars().count()).sum();
        tracing::info!(
            sources = directories.len(),
            queries = texts.len(),
            query_chars,
            hints = call.hints.iter().count(),
            results = results.len(),
            failures = failures.len(),
            elapsed_ms = started.elapsed().as_millis() as u64,
            "people search"
        );
        context.events.emit(EventData::SearchResults {
            results: results.clone(),
            thought: None,
            usage: None,
        });
        context
            .events
            .emit(EventData::ReasoningStopped { thought: None });

        let model_text = model_text(&searches, &results, &failures, attempts);
        let sources = results
            .iter()
            .map(|result| Source {
                number: result.id,
                url: result.url.clone(),
                title: result.title.clone(),
            })
            .collect();
        let billed = answered.iter().filter(|a| **a).count() as u64;
        ToolOutcome {
            model_text,
            items: vec![OutputItem::PeopleSearchResults(SearchResults {
                results,
                queries: Some(searches),
            })],
            invocations: if billed > 0 {
                vec![(BILLING_KEY.to_owned(), billed)]
            } else {
                Vec::new()
            },
            sources,
            last_number: None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn person(source: &'static str, name: &str, url: Option<&str>) -> Person {
        Person::new(source, name, name).unwrap().profile_url(url)
    }

    #[test]
    fn merging_alternates_and_dedupes_by_url() {
        let merged = merge(
            vec![
                vec![
                    person("a", "Ada", Some("https://x.org/ada")),
                    person("a", "Bob", None),
                ],
                vec![
                    person("b", "Ada L", Some("https://x.org/ada/")),
                    person("b", "Cy", None),
                ],
            ],
            3,
        );
        let names: Vec<&str> = merged.iter().map(Person::name).collect();
        assert_eq!(names, ["Ada", "Bob", "Cy"]);
    }

    #[test]
    fn searches_show_their_hints() {
        let call = query::parse(r#"{"queries":["designers"],"company":"Figma"}"#).unwrap();
        assert_eq!(shown(&call, "designers"), "designers (company: Figma)");
        assert_eq!(shown(&call, ""), "company: Figma");
    }

    #[test]
    fn refused_without_a_back_end() {
        let people = Arc::new(People::with_directories(
            Vec::new(),
            None,
            netguard::Policy::strict(),
        ));
        let Err(HostedError::Invalid(err)) = PeopleSearch::new(people, 2) else {
            panic!("expected a refusal");
        };
        assert_eq!(err.param.as_deref(), Some("tools[2]"));
        assert!(err.message.contains("people_search"), "{}", err.message);
        assert!(err.message.contains("PDL_API_KEY"), "{}", err.message);
    }
}
