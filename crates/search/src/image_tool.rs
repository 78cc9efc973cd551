//! [`ImageSearch`]: the `image_search` hosted tool over one [`ImageBackend`].
//!
//! Every URL a back end returns (the image and its page) goes through the network guard's
//! URL check before anyone sees it; an image whose size or format the service did not give
//! is read (its first 64 KiB, through the guarded client) to measure it. An image that is
//! refused or cannot be read is left out.

use std::collections::HashSet;
use std::fmt::Write as _;
use std::sync::Arc;
use std::time::Duration;

use engine::hosted::{CallContext, HostedError, HostedTool, Source, ToolOutcome};
use engine::model::ToolSpec;
use netguard::{FetchLimits, Policy};
use protocol::RequestError;
use protocol::events::EventData;
use protocol::output::{ImageResult, ImageSearchResults, OutputItem};
use protocol::request::ImageSearchTool;
use serde_json::{Value, json};

use crate::backend::BackendError;
use crate::filter::{domain_allowed, split_domain_filter};
use crate::image::{ImageBackend, ImageHit, ImageQuery};

/// The tool's fixed name (and its key in `usage.tool_calls_details`).
pub const IMAGE_TOOL_NAME: &str = "image_search";

/// Queries one call may run.
const MAX_QUERIES: usize = 3;

/// What is read of an image to measure it.
const PROBE_BYTES: usize = 64 * 1024;
const PROBE_TIMEOUT: Duration = Duration::from_secs(8);

/// The formats `filters.format_filter` may name (the SDK's list).
const FORMATS: &[&str] = &["bmp", "gif", "jpeg", "png", "webp", "svg"];

const DESCRIPTION: &str = "Search for images. Pass 1 to 3 short queries in `queries`. Returns \
numbered images ([1], [2], …), each with its title, image URL, size and the page it is on. \
Cite an image's page as [n] when you use it.";

/// What every request's `image_search` shares: the request policy and a guarded client.
pub struct ImageShared {
    policy: Policy,
    client: reqwest::Client,
}

impl ImageShared {
    /// `policy` is the request policy: it judges every URL a back end returns.
    pub fn new(policy: Policy) -> Result<ImageShared, BackendError> {
        let client = crate::http::client(&policy)?;
        Ok(ImageShared { policy, client })
    }
}

/// `image_search` configured for one request.
pub struct ImageSearch {
    backend: Arc<dyn ImageBackend>,
    shared: Arc<ImageShared>,
    template: ImageQuery,
    formats: Vec<String>,
}

impl ImageSearch {
    /// The tool for `tools[index]`; an unknown `format_filter` entry is `Invalid`.
    pub fn new(
        backend: Arc<dyn ImageBackend>,
        shared: Arc<ImageShared>,
        index: usize,
        tool: &ImageSearchTool,
    ) -> Result<ImageSearch, HostedError> {
        let filters = tool.filters.clone().unwrap_or_default();
        let mut formats = Vec::new();
        for format in filters.format_filter.unwrap_or_default() {
            let normal = normalize_format(&format);
            if !FORMATS.contains(&normal.as_str()) {
                return Err(HostedError::Invalid(RequestError::new(
                    format!("tools[{index}].filters.format_filter"),
                    format!(
                        "unknown image format \"{format}\": expected one of {}",
                        FORMATS.join(", ")
                    ),
                )));
            }
            if !formats.contains(&normal) {
                formats.push(normal);
            }
        }
        let (allow_domains, deny_domains) =
            split_domain_filter(filters.domain_filter.as_deref().unwrap_or_default());
        let template = ImageQuery {
            text: String::new(),
            max_results: tool.max_results.unwrap_or(0),
            allow_domains,
            deny_domains,
            safe_search: filters.safe_search.unwrap_or(true),
        };
        Ok(ImageSearch {
            backend,
            shared,
            template,
            formats,
        })
    }

    /// The hit with its size and format known, or `None` when it is refused or unreadable.
    async fn checked(&self, mut hit: ImageHit) -> Option<ImageHit> {
        let policy = &self.shared.policy;
        if policy.check_url(&hit.image_url).is_err() || policy.check_url(&hit.origin_url).is_err() {
            return None;
        }
        if !domain_allowed(
            &hit.origin_url,
            &self.template.allow_domains,
            &self.template.deny_domains,
        ) {
            return None;
        }
        hit.format = hit
            .format
            .as_deref()
            .map(normalize_format)
            .or_else(|| format_from_url(&hit.image_url));
        let needs_probe = hit.width.is_none()
            || hit.height.is_none()
            || (!self.formats.is_empty() && hit.format.is_none());
        if needs_probe {
            let limits = FetchLimits {
                max_bytes: PROBE_BYTES,
                total_timeout: PROBE_TIMEOUT,
            };
            let fetched = policy
                .fetch(&self.shared.client, &hit.image_url, &limits)
                .await
                .ok()
                .filter(|fetched| (200..300).contains(&fetched.status))?;
            if let Ok(size) = imagesize::blob_size(&fetched.body) {
                hit.width = u32::try_from(size.width).ok();
                hit.height = u32::try_from(size.height).ok();
            }
            if let Ok(kind) = imagesize::image_type(&fetched.body) {
                hit.format = Some(normalize_format(&format!("{kind:?}")));
            }
        }
        if !self.formats.is_empty()
            && !hit
                .format
                .as_ref()
                .is_some_and(|format| self.formats.contains(format))
        {
            return None;
        }
        (hit.width.is_some() && hit.height.is_some()).then_some(hit)
    }
}

/// `JPG`, `image/jpeg`, `Jpeg` -> `jpeg`.
fn normalize_format(format: &str) -> String {
    let format = format.trim().to_ascii_lowercase();
    let format = format.strip_prefix("image/").unwrap_or(&format);
    match format {
        "jpg" => "jpeg".to_owned(),
        "svg+xml" => "svg".to_owned(),
        other => other.to_owned(),
    }
}

/// The format an image URL's extension names, if it names one.
fn format_from_url(url: &str) -> Option<String> {
    let path = url::Url::parse(url).ok()?.path().to_ascii_lowercase();
    let extension = path.rsplit_once('.')?.1;
    let format = normalize_format(extension);
    FORMATS.contains(&format.as_str()).then_some(format)
}

/// The model's queries (1 to 3 non-empty strings; one string is taken too).
fn parse_queries(arguments: &str) -> Result<Vec<String>, String> {
    const USAGE: &str =
        "Call image_search with {\"queries\": [\"what to look for\"]} (1 to 3 queries).";
    let value: Value = serde_json::from_str(arguments).map_err(|err| {
        format!("image_search: the arguments are not valid JSON ({err}). {USAGE}")
    })?;
    let raw = value
        .get("queries")
        .or_else(|| value.get("query"))
        .ok_or_else(|| format!("image_search: \"queries\" is missing. {USAGE}"))?;
    let items: Vec<&Value> = match raw {
        Value::Array(items) => items.iter().collect(),
        single @ Value::String(_) => vec![single],
        _ => {
            return Err(format!(
                "image_search: \"queries\" must be an array of strings. {USAGE}"
            ));
        }
    };
    let mut queries: Vec<String> = Vec::new();
    for item in items {
        let Value::String(text) = item else {
            return Err(format!(
                "image_search: every query must be a string. {USAGE}"
            ));
        };
        let text: String = text
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(" ")
            .chars()
            .take(400)
            .collect();
        if !text.is_empty() && !queries.contains(&text) {
            queries.push(text);
        }
    }
    match queries.len() {
        0 => Err(format!(
            "image_search: no non-empty query was given. {USAGE}"
        )),
        n if n > MAX_QUERIES => Err(format!(
            "image_search takes at most {MAX_QUERIES} queries per call, got {n}."
        )),
        _ => Ok(queries),
    }
}

fn model_text(
    backend: &str,
    queries: &[String],
    results: &[ImageResult],
    first: u64,
    failures: &[BackendError],
) -> String {
    let quoted = queries
        .iter()
        .map(|q| format!("\"{q}\""))
        .collect::<Vec<_>>()
        .join(", ");
    let mut text = String::new();
    if !queries.is_empty() && failures.len() == queries.len() {
        let mut messages: Vec<String> = failures.iter().map(ToString::to_string).collect();
        messages.dedup();
        let _ = write!(
            text,
            "image_search failed: the {backend} back end could not answer ({}). No images are \
             available for this call.",
            messages.join("; ")
        );
        return text;
    }
    if results.is_empty() {
        let _ = write!(text, "No images found for {quoted}. Try other words.");
    } else {
        let _ = writeln!(text, "Images found for {quoted}:");
        for (result, number) in results.iter().zip(first..) {
            let _ = write!(
                text,
                "\n[{number}] {} — {} ({}×{}), on {}",
                result.title.as_deref().unwrap_or("untitled"),
                result.image_url,
                result.width,
                result.height,
                result.origin_url
            );
        }
        let _ = write!(
            text,
            "\n\nCite the page of an image you use as [n] with its number above."
        );
    }
    for err in failures {
        let _ = write!(text, "\nNote: one search failed ({err}).");
    }
    text
}

#[async_trait::async_trait]
impl HostedTool for ImageSearch {
    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: IMAGE_TOOL_NAME.to_owned(),
            description: Some(DESCRIPTION.to_owned()),
            parameters: json!({
                "type": "object",
                "properties": {
                    "queries": {
                        "type": "array",
                        "description": "1 to 3 image searches, each a few words.",
                        "items": {"type": "string"},
                        "minItems": 1,
                        "maxItems": MAX_QUERIES,
                    }
                },
                "required": ["queries"],
                "additionalProperties": false,
            })
            .into(),
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
        context.events.emit(EventData::ImageSearchQueries {
            call_id: context.call_id.to_owned(),
            queries: queries.clone(),
            thought: None,
        });
        let searches = queries.iter().map(|text| {
            let query = ImageQuery {
                text: text.clone(),
                ..self.template.clone()
            };
            let backend = Arc::clone(&self.backend);
            async move { backend.search_images(&query).await }
        });
        let answers = futures::future::join_all(searches).await;
        let mut failures = Vec::new();
        let mut lists = Vec::new();
        for answer in answers {
            match answer {
                Ok(hits) => lists.push(hits),
                Err(err) => {
                    tracing::warn!(backend = self.backend.name(), error = %err, "image search failed");
                    failures.push(err);
                }
            }
        }
        let succeeded = lists.len() as u64;
        // Round robin across queries, one entry per image URL.
        let mut seen = HashSet::new();
        let mut candidates = Vec::new();
        let longest = lists.iter().map(Vec::len).max().unwrap_or_default();
        for round in 0..longest {
            for list in &lists {
                if let Some(hit) = list.get(round)
                    && seen.insert(hit.image_url.clone())
                {
                    candidates.push(hit.clone());
                }
            }
        }
        let limit = self.template.limit() as usize;
        let checked =
            futures::future::join_all(candidates.into_iter().map(|hit| self.checked(hit))).await;
        let results: Vec<ImageResult> = checked
            .into_iter()
            .flatten()
            .take(limit)
            .map(|hit| ImageResult {
                image_url: hit.image_url,
                origin_url: hit.origin_url,
                title: hit.title.filter(|t| !t.is_empty()),
                width: hit.width.unwrap_or_default(),
                height: hit.height.unwrap_or_default(),
            })
            .collect();
        context.events.emit(EventData::ImageSearchResults {
            call_id: context.call_id.to_owned(),
            results: results.clone(),
            thought: None,
            usage: None,
        });
        let all_failed = !queries.is_empty() && failures.len() == queries.len();
        let model_text = model_text(
            self.backend.name(),
            &queries,
            &results,
            context.next_source,
            &failures,
        );
        let sources = results
            .iter()
            .zip(context.next_source..)
            .map(|(result, number)| Source {
                number,
                url: result.origin_url.clone(),
                title: result
                    .title
                    .clone()
                    .unwrap_or_else(|| result.origin_url.clone()),
            })
            .collect();
        ToolOutcome {
            model_text,
            items: vec![OutputItem::ImageSearchResults(ImageSearchResults {
                results,
                queries: Some(queries),
                error: all_failed.then(|| {
                    failures
                        .first()
                        .map(ToString::to_string)
                        .unwrap_or_default()
                }),
            })],
            invocations: if succeeded > 0 {
                vec![(IMAGE_TOOL_NAME.to_owned(), succeeded)]
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
    use protocol::request::ImageSearchFilters;

    #[test]
    fn formats_and_queries() {
        assert_eq!(normalize_format("JPG"), "jpeg");
        assert_eq!(normalize_format("image/svg+xml"), "svg");
        assert_eq!(
            format_from_url("https://x.org/a/b.PNG?x=1").as_deref(),
            Some("png")
        );
        assert_eq!(format_from_url("https://x.org/a/b"), None);
        assert_eq!(
            parse_queries(r#"{"queries":["a"," a ","b"]}"#).unwrap(),
            ["a", "b"]
        );
        assert!(parse_queries(r#"{"queries":["a","b","c","d"]}"#).is_err());
        assert!(parse_queries("{}").is_err());
    }

    struct Nothing;

    #[async_trait::async_trait]
    impl ImageBackend for Nothing {
        fn name(&self) -> &'static str {
            "nothing"
        }
        async fn search_images(&self, _: &ImageQuery) -> Result<Vec<ImageHit>, BackendError> {
            Ok(Vec::new())
        }
    }

    #[test]
    fn an_unknown_format_names_the_field() {
        let shared = Arc::new(ImageShared::new(Policy::strict()).unwrap());
        let tool = ImageSearchTool {
            max_results: None,
            filters: Some(ImageSearchFilters {
                format_filter: Some(vec!["png".into(), "tiff".into()]),
                ..ImageSearchFilters::default()
            }),
        };
        let Err(HostedError::Invalid(err)) = ImageSearch::new(Arc::new(Nothing), shared, 1, &tool)
        else {
            panic!("expected a refusal");
        };
        assert_eq!(err.param.as_deref(), Some("tools[1].filters.format_filter"));
    }
}
