//! Strict deserialization with field paths.
//!
//! Unknown fields anywhere in a request are refused with the path of the field (`tools[0].strictt`).
//! serde loses the path inside internally tagged enums (their content is buffered), so tagged
//! unions here deserialize through [`from_value`], which runs a nested `serde_path_to_error` pass
//! and carries the inner path out inside the error message; [`RequestError::from_path_error`]
//! joins the pieces again. (`tagged.rs` reads the tools, input items and content parts whose
//! first key names their variant in one pass instead, and through here otherwise.)

use serde::de::{DeserializeOwned, Error as _};
use serde_json::Value;

/// Marks an error message that carries an inner path: `\u{1}path\u{1}message`.
const MARK: char = '\u{1}';

/// A request that could not be parsed or failed validation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RequestError {
    pub message: String,
    /// The offending field as a path (`tools[0].strictt`), when one is known.
    pub param: Option<String>,
    /// The error `type` when it is more specific than `invalid_request` (spec §6:
    /// `invalid_date_format`, `invalid_search_domain_filter`).
    pub kind: Option<&'static str>,
}

impl RequestError {
    pub fn new(param: impl Into<String>, message: impl Into<String>) -> RequestError {
        RequestError {
            message: message.into(),
            param: Some(param.into()),
            kind: None,
        }
    }

    /// The same error with a more specific `type`.
    pub fn with_kind(mut self, kind: &'static str) -> RequestError {
        self.kind = Some(kind);
        self
    }

    /// Turns a top-level path-tracking error into a request error naming the field.
    pub fn from_path_error(err: serde_path_to_error::Error<serde_json::Error>) -> RequestError {
        let outer = err.path().to_string();
        let inner = err.into_inner();
        if inner.is_syntax() || inner.is_eof() || inner.is_io() {
            return RequestError {
                message: format!("invalid request body: {inner}"),
                param: None,
                kind: None,
            };
        }
        let (path, message) = split(&outer, &strip_position(&inner.to_string()));
        let (path, message) = match unknown_field(&message) {
            Some(field) if !path.ends_with(&field) => (join(&path, &field), message),
            _ => (path, message),
        };
        let message = match unknown_field(&message) {
            Some(_) => match removed_parameter(&path) {
                Some(why) => format!("invalid request body: unknown field \"{path}\": {why}"),
                None => format!("invalid request body: unknown field \"{path}\""),
            },
            None if path.is_empty() => format!("invalid request body: {message}"),
            None => format!("invalid request body: {path}: {message}"),
        };
        RequestError {
            message,
            param: (!path.is_empty()).then_some(path),
            kind: None,
        }
    }
}

impl std::fmt::Display for RequestError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for RequestError {}

/// Reads `T` from a JSON body and refuses anything after it; an error names the field's path
/// ([`RequestError::from_path_error`]).
///
/// The body is read first without tracking the path: `serde_path_to_error` wraps every value,
/// key and element it reads, which cost a long request (a chat history and five tools, 8.7 KB)
/// a third of its parse (docs/benchmarks.md, "Issue 18, thirty-fourth pass"). Only a body that
/// is refused is read again, with the path tracked, for its error: the wrapper changes nothing
/// of what is accepted, so the second reading fails where the first did.
pub fn parse_json<T: DeserializeOwned>(body: &[u8]) -> Result<T, RequestError> {
    let mut deserializer = serde_json::Deserializer::from_slice(body);
    if let Ok(value) = <T as serde::Deserialize>::deserialize(&mut deserializer)
        && deserializer.end().is_ok()
    {
        return Ok(value);
    }
    let mut deserializer = serde_json::Deserializer::from_slice(body);
    let value: T = serde_path_to_error::deserialize(&mut deserializer)
        .map_err(RequestError::from_path_error)?;
    deserializer.end().map_err(|err| RequestError {
        message: format!("invalid request body: {err}"),
        param: None,
        kind: None,
    })?;
    Ok(value)
}

/// Deserializes `T` from a buffered value, keeping the path of any error inside it.
pub(crate) fn from_value<T: DeserializeOwned, E: serde::de::Error>(value: Value) -> Result<T, E> {
    serde_path_to_error::deserialize(value).map_err(|err| {
        let path = err.path().to_string();
        let message = err.into_inner().to_string();
        E::custom(nest(&path, &message))
    })
}

/// An error at `field` (relative to the value being deserialized).
pub(crate) fn error_at<E: serde::de::Error>(field: &str, message: impl std::fmt::Display) -> E {
    E::custom(nest(field, &message.to_string()))
}

/// A string or a list, as [`text_or_list`] reads it.
pub(crate) enum TextOrList<T> {
    Text(String),
    List(Vec<T>),
}

/// Reads a string or a list of `T` in one pass: a list's entries are deserialized where they
/// are, so a path-tracking deserializer names the entry of an error itself (`input[3]…`), and
/// nothing is buffered as a `Value` first (a long `input` was read twice over before: into a
/// `Value`, then out of it). Anything else is refused as "invalid type: {kind}, expected
/// {expected}", the words [`kind`] uses.
pub(crate) fn text_or_list<'de, D, T>(
    deserializer: D,
    expected: &'static str,
) -> Result<TextOrList<T>, D::Error>
where
    D: serde::Deserializer<'de>,
    T: serde::Deserialize<'de>,
{
    deserializer.deserialize_any(TextOrListVisitor {
        expected,
        entries: std::marker::PhantomData,
    })
}

struct TextOrListVisitor<T> {
    expected: &'static str,
    entries: std::marker::PhantomData<T>,
}

impl<T> TextOrListVisitor<T> {
    fn refuse<E: serde::de::Error>(&self, kind: &str) -> Result<TextOrList<T>, E> {
        Err(E::custom(format!(
            "invalid type: {kind}, expected {}",
            self.expected
        )))
    }
}

impl<'de, T: serde::Deserialize<'de>> serde::de::Visitor<'de> for TextOrListVisitor<T> {
    type Value = TextOrList<T>;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.expected)
    }

    fn visit_str<E: serde::de::Error>(self, text: &str) -> Result<Self::Value, E> {
        Ok(TextOrList::Text(text.to_owned()))
    }

    fn visit_string<E: serde::de::Error>(self, text: String) -> Result<Self::Value, E> {
        Ok(TextOrList::Text(text))
    }

    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        let mut entries = Vec::new();
        while let Some(entry) = seq.next_element()? {
            entries.push(entry);
        }
        Ok(TextOrList::List(entries))
    }

    fn visit_unit<E: serde::de::Error>(self) -> Result<Self::Value, E> {
        self.refuse("null")
    }

    fn visit_none<E: serde::de::Error>(self) -> Result<Self::Value, E> {
        self.refuse("null")
    }

    fn visit_bool<E: serde::de::Error>(self, _: bool) -> Result<Self::Value, E> {
        self.refuse("a boolean")
    }

    fn visit_i64<E: serde::de::Error>(self, _: i64) -> Result<Self::Value, E> {
        self.refuse("a number")
    }

    fn visit_u64<E: serde::de::Error>(self, _: u64) -> Result<Self::Value, E> {
        self.refuse("a number")
    }

    fn visit_f64<E: serde::de::Error>(self, _: f64) -> Result<Self::Value, E> {
        self.refuse("a number")
    }

    fn visit_map<A: serde::de::MapAccess<'de>>(self, _: A) -> Result<Self::Value, A::Error> {
        self.refuse("an object")
    }
}

/// Reads the `type` tag of a tagged union, removing it from the map.
pub(crate) fn take_tag<E: serde::de::Error>(
    map: &mut serde_json::Map<String, Value>,
    default: Option<&str>,
) -> Result<String, E> {
    match map.remove("type") {
        Some(Value::String(tag)) => Ok(tag),
        None | Some(Value::Null) => match default {
            Some(tag) => Ok(tag.to_owned()),
            None => Err(error_at("type", "missing field `type`")),
        },
        Some(_) => Err(error_at("type", "`type` must be a string")),
    }
}

/// The error for a tag value no variant has.
pub(crate) fn unknown_tag<E: serde::de::Error>(what: &str, tag: &str, known: &[&str]) -> E {
    error_at(
        "type",
        format!(
            "unknown {what} type \"{tag}\", expected one of: {}",
            known.join(", ")
        ),
    )
}

/// Deserializes a JSON object map (the `Map` helper keeps errors pathless otherwise).
pub(crate) fn object<'de, D: serde::Deserializer<'de>>(
    deserializer: D,
    what: &str,
) -> Result<serde_json::Map<String, Value>, D::Error> {
    match Value::deserialize(deserializer)? {
        Value::Object(map) => Ok(map),
        other => Err(D::Error::custom(format!(
            "invalid type: {}, expected {what}",
            kind(&other)
        ))),
    }
}

use serde::Deserialize as _;

pub(crate) fn kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

fn nest(path: &str, message: &str) -> String {
    let (path, message) = split(path, message);
    format!("{MARK}{path}{MARK}{message}")
}

/// Splits an outer path and a message that may carry an inner path into (full path, message).
fn split(outer: &str, message: &str) -> (String, String) {
    let outer = if outer == "." { "" } else { outer };
    if let Some(rest) = message.strip_prefix(MARK)
        && let Some((inner, msg)) = rest.split_once(MARK)
    {
        return (join(outer, inner), msg.to_owned());
    }
    (outer.to_owned(), message.to_owned())
}

fn join(outer: &str, inner: &str) -> String {
    let inner = if inner == "." { "" } else { inner };
    match (outer.is_empty(), inner.is_empty()) {
        (_, true) => outer.to_owned(),
        (true, false) => inner.to_owned(),
        (false, false) if inner.starts_with('[') => format!("{outer}{inner}"),
        (false, false) => format!("{outer}.{inner}"),
    }
}

/// Chat Completions (Sonar) parameters the Agent API refuses (spec §3): why, and what to use.
const SONAR_PARAMETERS: &[(&str, &str)] = &[
    (
        "disable_search",
        "a request searches only when it lists a search tool",
    ),
    ("enable_search_classifier", ""),
    (
        "search_mode",
        "choose tools instead (finance_search replaces search_mode \"sec\")",
    ),
    ("return_images", "use the image_search tool"),
    (
        "image_domain_filter",
        "use the image_search tool's filters.domain_filter",
    ),
    (
        "image_format_filter",
        "use the image_search tool's filters.format_filter",
    ),
    ("return_related_questions", ""),
    ("presence_penalty", ""),
    ("frequency_penalty", ""),
    ("stop", ""),
    ("top_k", ""),
    ("n", ""),
    ("logprobs", ""),
    (
        "web_search_options",
        "configure the web_search tool instead",
    ),
    ("search_language_filter", ""),
    ("return_videos", ""),
    ("num_images", ""),
    ("messages", "use input"),
    ("max_tokens", "use max_output_tokens"),
    (
        "search_domain_filter",
        "set it in the web_search tool's filters",
    ),
    (
        "search_recency_filter",
        "set it in the web_search tool's filters",
    ),
    (
        "search_after_date_filter",
        "set it in the web_search tool's filters",
    ),
    (
        "search_before_date_filter",
        "set it in the web_search tool's filters",
    ),
    (
        "last_updated_after_filter",
        "set it in the web_search tool's filters",
    ),
    (
        "last_updated_before_filter",
        "set it in the web_search tool's filters",
    ),
];

/// The explanation for an unknown field that is a removed Sonar parameter: top-level names,
/// and `search_language_filter` wherever it appears (older docs put it in `filters`).
fn removed_parameter(path: &str) -> Option<String> {
    let name = if path.contains(['.', '[']) {
        path.strip_suffix("search_language_filter")
            .filter(|rest| rest.ends_with('.'))
            .map(|_| "search_language_filter")?
    } else {
        path
    };
    let (name, hint) = SONAR_PARAMETERS.iter().find(|(n, _)| *n == name)?;
    let mut why = format!("{name} is a Sonar parameter that is not supported on the Agent API");
    if !hint.is_empty() {
        why.push_str("; ");
        why.push_str(hint);
    }
    Some(why)
}

/// `unknown field `x`, expected …` → `x`.
fn unknown_field(message: &str) -> Option<String> {
    let rest = message.strip_prefix("unknown field `")?;
    rest.split_once('`').map(|(name, _)| name.to_owned())
}

/// serde_json appends " at line L column C"; the path says more.
fn strip_position(message: &str) -> String {
    match message.rfind(" at line ") {
        Some(at) if message[at..].contains(" column ") => message[..at].to_owned(),
        _ => message.to_owned(),
    }
}
