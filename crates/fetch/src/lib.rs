//! `fetch_url`, one of agentd's built-in tools: reads the web pages the model names and
//! gives it their clean text. It implements the engine's [`engine::hosted::HostedTool`]
//! port; the server builds one [`FetchShared`] at start-up and a [`FetchUrl`] per request.
//! It depends on `engine` (the port), `protocol` (the wire types) and `netguard` only.
//!
//! One call takes up to `max_urls` absolute http(s) URLs (the request's `max_urls`, 1..10;
//! [`DEFAULT_MAX_URLS`] when absent) and fetches them concurrently, each through the network
//! guard ([`netguard::Policy::fetch`]: every URL, redirect hop and resolved address checked,
//! the body capped at [`FetchSettings::max_page_bytes`], the whole exchange bounded by
//! [`FetchSettings::timeout`]). Each body becomes text:
//! - HTML: the article as Markdown (dom_smoothie finds it, htmd converts it); when no
//!   article is found, the whole page as plain text (html2text). The character set comes
//!   from a byte-order mark, the `Content-Type` charset, `<meta charset>`, else UTF-8 or
//!   windows-1252 (encoding_rs).
//! - PDF: its text layer (pdf-extract, which panics on some files: it runs on the
//!   blocking pool behind `catch_unwind`, and a panic is an error for that URL only).
//! - JSON pretty-printed; `text/*` and XML as they are. Other types are refused in-band.
//!
//! The call's token budget (the request's `total_budget_tokens`, else
//! [`FetchSettings::default_budget_tokens`]; tokens ≈ characters / 4) is shared by the
//! pages read: evenly, a short page leaving what it does not use to the longer ones. A cut
//! page ends with a `[truncated: …]` marker, as does a body cut at the byte cap.
//!
//! The model reads each URL's text under a `Source [n]: title` / `URL:` header (or an
//! `error: …` line for a URL that was refused, failed, timed out or had no readable text),
//! so an answer can cite the pages as `[n]`. The caller sees one `fetch_url_results` item
//! with the pages read, and the `response.reasoning.started`, `…fetch_url_queries`,
//! `…fetch_url_results`, `…stopped` events, in that order. Failures never fail the run.
//!
//! # Layout
//! - `lib.rs` (here): [`FetchSettings`], [`FetchShared`] (the settings and one guarded client, shared
//!   by every request), [`FetchUrl`] (the tool for one request) and its call.
//! - `extract`: content kind, character sets, HTML/PDF/JSON to text, titles.
//! - `budget`: sharing the token budget and cutting text.
//!
//! # Example
//! ```
//! # fn main() -> Result<(), fetch::FetchSetupError> {
//! use std::sync::Arc;
//! use engine::hosted::HostedTool as _;
//! use fetch::{FetchSettings, FetchShared, FetchUrl};
//!
//! // Once, at start-up.
//! let shared = Arc::new(FetchShared::new(FetchSettings::default())?);
//! // Per request, for its `{"type": "fetch_url", ...}` entry.
//! let config = protocol::request::FetchUrlTool { max_urls: Some(3), total_budget_tokens: None };
//! let tool = FetchUrl::new(&config, Arc::clone(&shared));
//! assert_eq!(tool.spec().name, fetch::NAME);
//! # Ok(())
//! # }
//! ```

mod budget;
mod extract;

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Arc;
use std::time::Duration;

use engine::hosted::{CallContext, HostedTool, Source, ToolOutcome};
use engine::model::ToolSpec;
use protocol::events::EventData;
use protocol::output::{FetchUrlResults, OutputItem, UrlContent};
use protocol::request::FetchUrlTool;
use protocol::validate::{MAX_FETCH_BUDGET_TOKENS, MAX_FETCH_URLS};
use serde_json::{Value, json};

use self::budget::CHARS_PER_TOKEN;
use self::extract::Page;

/// The tool's fixed name.
pub const NAME: &str = "fetch_url";

/// URLs per call when the request does not set `max_urls` (the most the API allows).
pub const DEFAULT_MAX_URLS: u32 = MAX_FETCH_URLS;

/// The `Accept` header sent with every fetch: the kinds this tool can read.
const ACCEPT: &str = "text/html,application/xhtml+xml,application/pdf;q=0.9,\
                      application/json;q=0.9,text/plain;q=0.8,*/*;q=0.5";

/// How the tool fetches, for the whole process (from the operator's configuration).
#[derive(Debug, Clone)]
pub struct FetchSettings {
    /// Which destinations may be fetched (the operator's private-network allow list).
    pub policy: netguard::Policy,
    /// The deadline for one page: connect, redirects, head and body.
    pub timeout: Duration,
    /// The most bytes read of one page; the rest is never downloaded.
    pub max_page_bytes: usize,
    /// A call's token budget when the request sets no `total_budget_tokens` (at most
    /// 120000 is used).
    pub default_budget_tokens: u32,
}

impl Default for FetchSettings {
    /// The strict policy, 15 s and 5 MiB per page, 10000 tokens per call.
    fn default() -> Self {
        FetchSettings {
            policy: netguard::Policy::strict(),
            timeout: Duration::from_secs(15),
            max_page_bytes: 5 << 20,
            default_budget_tokens: 10_000,
        }
    }
}

/// Why the tool could not be set up.
#[derive(Debug, thiserror::Error)]
pub enum FetchSetupError {
    /// reqwest could not build the guarded client (e.g. no TLS back end).
    #[error("could not build the HTTP client for fetch_url: {0}")]
    HttpClient(String),
}

/// What every request's [`FetchUrl`] shares: the settings and one guarded HTTP client
/// (built once so connections are pooled across calls and requests).
#[derive(Debug)]
pub struct FetchShared {
    settings: FetchSettings,
    /// Built from `settings.policy.client_builder()`: its resolver and redirect policy
    /// are half of the guard, [`netguard::Policy::fetch`] the other half.
    client: reqwest::Client,
}

impl FetchShared {
    /// Builds the guarded client for `settings`.
    pub fn new(settings: FetchSettings) -> Result<FetchShared, FetchSetupError> {
        // reqwest is built with `rustls-no-provider`: pick ring once per process. A second
        // call (or another crate having chosen first) returns Err, which is fine.
        let _ = rustls::crypto::ring::default_provider().install_default();
        let mut headers = reqwest::header::HeaderMap::new();
        headers.insert(
            reqwest::header::ACCEPT,
            reqwest::header::HeaderValue::from_static(ACCEPT),
        );
        let client = settings
            .policy
            .client_builder()
            .user_agent(concat!(
                "agentd/",
                env!("CARGO_PKG_VERSION"),
                " (fetch_url)"
            ))
            .default_headers(headers)
            .build()
            .map_err(|err| FetchSetupError::HttpClient(netguard::describe(&err)))?;
        Ok(FetchShared { settings, client })
    }

    /// The settings this was built with.
    pub fn settings(&self) -> &FetchSettings {
        &self.settings
    }
}

/// The `fetch_url` tool configured for one request. Cheap to build: an `Arc` clone and
/// two numbers.
#[derive(Debug, Clone)]
pub struct FetchUrl {
    shared: Arc<FetchShared>,
    /// The most URLs one call may pass (1..10).
    max_urls: usize,
    /// One call's token budget (1..120000).
    budget_tokens: u32,
}

impl FetchUrl {
    /// The tool for a request's `fetch_url` entry. Out-of-range values (which request
    /// validation already refuses) are clamped into range.
    pub fn new(config: &FetchUrlTool, shared: Arc<FetchShared>) -> FetchUrl {
        let max_urls = config
            .max_urls
            .unwrap_or(DEFAULT_MAX_URLS)
            .clamp(1, MAX_FETCH_URLS);
        let budget_tokens = config
            .total_budget_tokens
            .unwrap_or(shared.settings.default_budget_tokens)
            .clamp(1, MAX_FETCH_BUDGET_TOKENS);
        FetchUrl {
            shared,
            max_urls: usize::try_from(max_urls).unwrap_or(1),
            budget_tokens,
        }
    }

    /// Fetches one URL and extracts its text.
    async fn read(&self, url: &str) -> Result<Read, String> {
        let settings = &self.shared.settings;
        let limits = netguard::FetchLimits {
            max_bytes: settings.max_page_bytes,
            total_timeout: settings.timeout,
        };
        let fetched = settings
            .policy
            .fetch(&self.shared.client, url, &limits)
            .await
            .map_err(|err| match err {
                netguard::FetchError::Timeout(after) => {
                    format!("timed out after {} s", after.as_secs_f64())
                }
                other => other.to_string(),
            })?;
        if !(200..300).contains(&fetched.status) {
            let reason = reqwest::StatusCode::from_u16(fetched.status)
                .ok()
                .and_then(|status| status.canonical_reason());
            return Err(match reason {
                Some(reason) => format!("HTTP status {} {reason}", fetched.status),
                None => format!("HTTP status {}", fetched.status),
            });
        }
        let fetched_url = fetched.final_url;
        let final_url = fetched_url.to_string();
        let truncated = fetched.truncated;
        let body = fetched.body;
        let content_type = fetched.content_type;
        let page_url = final_url.clone();
        let extracted = tokio::task::spawn_blocking(move || {
            catch_unwind(AssertUnwindSafe(|| {
                extract::extract(&body, content_type.as_deref(), &page_url, truncated)
            }))
        })
        .await;
        let page = match extracted {
            Ok(Ok(result)) => result?,
            Ok(Err(_panic)) => {
                tracing::warn!("fetch_url: a content parser panicked");
                return Err("the content could not be parsed (the parser failed)".to_owned());
            }
            Err(err) => {
                tracing::warn!(%err, "fetch_url: the extraction task failed");
                return Err("the content could not be parsed".to_owned());
            }
        };
        // The URL as the model wrote it may differ from its parsed form only in spelling
        // (`http://a.test` is `http://a.test/`): only a real redirect is reported.
        let redirected_to =
            (reqwest::Url::parse(url).ok().as_ref() != Some(&fetched_url)).then_some(final_url);
        Ok(Read {
            page,
            redirected_to,
            truncated_bytes: truncated,
        })
    }
}

/// One page that was read.
struct Read {
    page: Page,
    /// The URL after redirects, when there were any.
    redirected_to: Option<String>,
    /// The body was cut at the byte cap.
    truncated_bytes: bool,
}

#[async_trait::async_trait]
impl HostedTool for FetchUrl {
    fn spec(&self) -> ToolSpec {
        let n = self.max_urls;
        ToolSpec {
            name: NAME.to_owned(),
            description: Some(format!(
                "Fetch web pages or documents by URL and read their main content as text \
                 (HTML articles as Markdown; PDF, JSON and plain text too). Pass up to {n} \
                 absolute http(s) URLs in one call; they are fetched in parallel. Use it to \
                 read pages whose URLs you know (from the user or from search results). Each \
                 page read is a numbered source: cite it as [n]. URLs that cannot be read come \
                 back as errors."
            )),
            parameters: json!({
                "type": "object",
                "properties": {
                    "urls": {
                        "type": "array",
                        "items": {"type": "string"},
                        "minItems": 1,
                        "maxItems": n,
                        "description": format!("Up to {n} absolute http(s) URLs to fetch."),
                    }
                },
                "required": ["urls"],
            })
            .into(),
            strict: false,
        }
    }

    async fn call(&self, arguments: &str, context: CallContext<'_>) -> ToolOutcome {
        let urls = match parse_arguments(arguments, self.max_urls) {
            Ok(urls) => urls,
            Err(message) => {
                return ToolOutcome {
                    model_text: format!("error: {message}"),
                    ..ToolOutcome::default()
                };
            }
        };
        context
            .events
            .emit(EventData::ReasoningStarted { thought: None });
        context.events.emit(EventData::FetchUrlQueries {
            urls: urls.clone(),
            thought: None,
        });
        let reads = futures::future::join_all(urls.iter().map(|url| self.read(url))).await;
        let outcome = assemble(&urls, reads, self.budget_tokens, context.next_source);
        let contents = match outcome.items.first() {
            Some(OutputItem::FetchUrlResults(results)) => results.contents.clone(),
            _ => Vec::new(),
        };
        context.events.emit(EventData::FetchUrlResults {
            contents,
            thought: None,
        });
        context
            .events
            .emit(EventData::ReasoningStopped { thought: None });
        outcome
    }
}

/// The URLs of a call: `{"urls": [...]}` (a single string is taken as one URL), trimmed,
/// without blanks and repeats, 1..=`max_urls` of them.
fn parse_arguments(arguments: &str, max_urls: usize) -> Result<Vec<String>, String> {
    let value: Value = serde_json::from_str(arguments)
        .map_err(|err| format!("the arguments are not valid JSON ({err})"))?;
    let urls = match value.get("urls") {
        Some(Value::Array(items)) => items
            .iter()
            .map(|item| match item {
                Value::String(url) => Ok(url.trim().to_owned()),
                other => Err(format!("\"urls\" must be a list of strings, found {other}")),
            })
            .collect::<Result<Vec<_>, _>>()?,
        Some(Value::String(url)) => vec![url.trim().to_owned()],
        Some(_) => return Err("\"urls\" must be a list of URL strings".to_owned()),
        None => return Err("missing \"urls\": pass {\"urls\": [\"https://...\"]}".to_owned()),
    };
    let mut unique: Vec<String> = Vec::with_capacity(urls.len());
    for url in urls {
        if !url.is_empty() && !unique.contains(&url) {
            unique.push(url);
        }
    }
    if unique.is_empty() {
        return Err("\"urls\" is empty: pass at least one URL".to_owned());
    }
    if unique.len() > max_urls {
        return Err(format!(
            "too many URLs ({}): pass at most {max_urls} per call",
            unique.len()
        ));
    }
    Ok(unique)
}

/// The call's outcome from each URL's read: pages trimmed to their share of the budget,
/// numbered as sources from `next_source`, and the text the model reads.
fn assemble(
    urls: &[String],
    reads: Vec<Result<Read, String>>,
    budget_tokens: u32,
    next_source: u64,
) -> ToolOutcome {
    let total_chars = usize::try_from(budget_tokens)
        .unwrap_or(usize::MAX)
        .saturating_mul(CHARS_PER_TOKEN);
    let lengths: Vec<usize> = reads
        .iter()
        .filter_map(|read| read.as_ref().ok())
        .map(|read| read.page.text.chars().count())
        .collect();
    let mut shares = budget::allot(&lengths, total_chars).into_iter();

    let mut blocks = Vec::with_capacity(urls.len());
    let mut contents = Vec::new();
    let mut sources = Vec::new();
    let mut number = next_source;
    for (url, read) in urls.iter().zip(reads) {
        let read = match read {
            Ok(read) => read,
            Err(reason) => {
                blocks.push(format!("URL: {url}\nerror: {reason}"));
                continue;
            }
        };
        let share = shares.next().unwrap_or(0);
        let mut snippet = match budget::trim(&read.page.text, share) {
            Some(cut) => format!(
                "{cut}\n\n[truncated: the page is longer than its share of this call's \
                 budget (about {} tokens)]",
                share / CHARS_PER_TOKEN
            ),
            None if read.truncated_bytes => format!(
                "{}\n\n[truncated: only the start of the page was downloaded]",
                read.page.text
            ),
            None => read.page.text,
        };
        snippet.truncate(snippet.trim_end().len());
        let title = read.page.title.unwrap_or_else(|| url.clone());
        let mut header = format!("Source [{number}]: {title}\nURL: {url}");
        if let Some(final_url) = &read.redirected_to {
            header.push_str(&format!("\n(redirected to {final_url})"));
        }
        blocks.push(format!("{header}\n\n{snippet}"));
        sources.push(Source {
            number,
            url: url.clone(),
            title: title.clone(),
        });
        contents.push(UrlContent {
            url: url.clone(),
            title,
            snippet,
        });
        number += 1;
    }
    ToolOutcome {
        model_text: blocks.join("\n\n---\n\n"),
        items: vec![OutputItem::FetchUrlResults(FetchUrlResults { contents })],
        invocations: vec![(NAME.to_owned(), urls.len() as u64)],
        sources,
        last_number: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arguments_are_checked_before_anything_is_fetched() {
        assert_eq!(
            parse_arguments(
                r#"{"urls": [" https://a.test/ ", "https://b.test/", "https://a.test/", ""]}"#,
                2
            ),
            Ok(vec![
                "https://a.test/".to_owned(),
                "https://b.test/".to_owned()
            ])
        );
        assert_eq!(
            parse_arguments(r#"{"urls": "https://a.test/"}"#, 1),
            Ok(vec!["https://a.test/".to_owned()])
        );
        let err = |args: &str| parse_arguments(args, 2).unwrap_err();
        assert!(err("not json").starts_with("the arguments are not valid JSON"));
        assert!(err("{}").starts_with("missing \"urls\""));
        assert!(err(r#"{"urls": []}"#).contains("empty"));
        assert!(err(r#"{"urls": [1]}"#).contains("list of strings"));
        assert!(err(r#"{"urls": {"a": 1}}"#).contains("list of URL strings"));
        assert_eq!(
            err(r#"{"urls": ["https://a.test/", "https://b.test/", "https://c.test/"]}"#),
            "too many URLs (3): pass at most 2 per call"
        );
    }

    fn page(text: &str, title: Option<&str>, redirected_to: Option<&str>) -> Result<Read, String> {
        Ok(Read {
            page: Page {
                title: title.map(str::to_owned),
                text: text.to_owned(),
            },
            redirected_to: redirected_to.map(str::to_owned),
            truncated_bytes: false,
        })
    }

    #[test]
    fn pages_are_numbered_trimmed_and_errors_kept_in_band() {
        let urls = vec![
            "https://a.test/".to_owned(),
            "https://b.test/".to_owned(),
            "https://c.test/".to_owned(),
        ];
        let long = "word ".repeat(400); // 2000 characters
        let reads = vec![
            page("Short page.", Some("A"), None),
            Err("HTTP status 404 Not Found".to_owned()),
            page(&long, None, Some("https://a.test/")),
        ];
        // 100 tokens = 400 characters: "Short page." keeps its 11, the rest goes to c.
        let outcome = assemble(&urls, reads, 100, 7);
        assert_eq!(
            outcome.sources,
            vec![
                Source {
                    number: 7,
                    url: urls[0].clone(),
                    title: "A".to_owned()
                },
                Source {
                    number: 8,
                    url: urls[2].clone(),
                    title: urls[2].clone()
                },
            ]
        );
        assert_eq!(outcome.invocations, vec![("fetch_url".to_owned(), 3)]);
        let Some(OutputItem::FetchUrlResults(results)) = outcome.items.first() else {
            panic!("no fetch_url_results item: {:?}", outcome.items);
        };
        assert_eq!(results.contents.len(), 2);
        assert_eq!(results.contents[0].snippet, "Short page.");
        let cut = &results.contents[1].snippet;
        assert!(cut.ends_with("budget (about 97 tokens)]"), "{cut}");
        assert!(cut.len() < 389 + 120, "{}", cut.len());
        let text = &outcome.model_text;
        assert!(
            text.starts_with("Source [7]: A\nURL: https://a.test/\n\nShort page.\n\n---\n\n"),
            "{text}"
        );
        assert!(
            text.contains("URL: https://b.test/\nerror: HTTP status 404 Not Found\n\n---\n\n"),
            "{text}"
        );
        assert!(text.contains("Source [8]: https://c.test/\nURL: https://c.test/\n(redirected to https://a.test/)\n\nword word"), "{text}");
    }

    #[test]
    fn settings_and_request_values_are_clamped() {
        let shared = Arc::new(FetchShared::new(FetchSettings::default()).unwrap());
        let tool = FetchUrl::new(&FetchUrlTool::default(), Arc::clone(&shared));
        assert_eq!((tool.max_urls, tool.budget_tokens), (10, 10_000));
        let tool = FetchUrl::new(
            &FetchUrlTool {
                max_urls: Some(50),
                total_budget_tokens: Some(1_000_000),
            },
            shared,
        );
        assert_eq!((tool.max_urls, tool.budget_tokens), (10, 120_000));
        let spec = tool.spec();
        assert_eq!(spec.name, "fetch_url");
        assert_eq!(spec.parameters["properties"]["urls"]["maxItems"], 10);
        assert_eq!(spec.parameters["required"], json!(["urls"]));
    }
}
