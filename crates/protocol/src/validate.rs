//! Request limits (spec §2, §3, §4): what a request that parsed must also respect before a run
//! starts. [`CreateRequest::validate`] returns the first violation in field order, with `param`
//! naming the field path (`tools[2].filters.search_domain_filter[0]`).
//!
//! The character-class checks (`^[a-zA-Z0-9_-]{1,64}$` and friends) are written by hand.

use std::collections::HashSet;

use crate::input::{ContentPart, FunctionOutput, Input, InputItem, MessageContent};
use crate::limits::check_depth;
use crate::request::{
    ConnectorTool, CreateRequest, FetchUrlTool, FunctionTool, ImageSearchTool, McpTool,
    ResponseFormat, Skill, Tool, ToolChoice, ToolChoiceObject, WebSearchFilters, WebSearchTool,
};
use crate::strict::RequestError;

/// Most entries in `models`.
pub const MAX_MODELS: usize = 5;
/// Most `metadata` keys; the longest key and value, in characters.
pub const MAX_METADATA_KEYS: usize = 16;
pub const MAX_METADATA_KEY_CHARS: usize = 64;
pub const MAX_METADATA_VALUE_CHARS: usize = 512;
/// Most `mcp` plus `connector` tools in one request.
pub const MAX_MCP_SERVERS: usize = 16;
/// `fetch_url.max_urls` upper bound.
pub const MAX_FETCH_URLS: u32 = 10;
/// `fetch_url.total_budget_tokens` upper bound.
pub const MAX_FETCH_BUDGET_TOKENS: u32 = 120_000;
/// `max_output_tokens` below this are raised to it.
pub const MIN_OUTPUT_TOKENS: u32 = 16;
/// `max_steps` upper bound (spec §11: 1..100).
pub const MAX_STEPS: u32 = 100;
/// `web_search.max_results` upper bound.
pub const MAX_WEB_RESULTS: u32 = 50;
/// Most `search_domain_filter` entries, and the longest entry in characters.
pub const MAX_DOMAIN_FILTERS: usize = 20;
pub const MAX_DOMAIN_CHARS: usize = 253;
/// Longest `input_image.image_url` that is not a data URL, in characters.
pub const MAX_IMAGE_URL_CHARS: usize = 2048;
/// Largest decoded base64 image.
pub const MAX_IMAGE_BYTES: usize = 50 * 1024 * 1024;
/// Inline skill limits, in bytes.
pub const MAX_SKILL_DESCRIPTION_BYTES: usize = 1024;
pub const MAX_SKILL_INSTRUCTIONS_BYTES: usize = 65_536;
pub const MAX_SKILL_INSTRUCTIONS_TOTAL_BYTES: usize = 262_144;

/// Function tool names the built-in tools (and agentd's sandbox tools) use.
pub const RESERVED_FUNCTION_NAMES: &[&str] = &[
    "web_search",
    "search_web",
    "people_search",
    "search_people",
    "fetch_url",
    "finance_search",
    "sandbox",
    "image_search",
    "load_skill",
    "share_file",
    "read",
    "write",
    "edit",
    "grep",
    "glob",
    "apply_patch",
    "execute",
    "tool_search",
];

/// Tool types the service runs itself (what a preset or skills may bring along).
const BUILT_IN_TOOLS: &[&str] = &[
    "web_search",
    "image_search",
    "fetch_url",
    "people_search",
    "finance_search",
    "sandbox",
];

const IMAGE_FORMATS: &[&str] = &["bmp", "gif", "jpeg", "png", "webp", "svg"];

const IMAGE_MIME_TYPES: &[&str] = &[
    "image/png",
    "image/jpeg",
    "image/jpg",
    "image/webp",
    "image/gif",
];

const NAME_RULE: &str = "1 to 64 characters of letters, digits, `_` or `-`";

pub type Check = Result<(), RequestError>;

fn fail(param: impl Into<String>, message: impl Into<String>) -> Check {
    Err(RequestError::new(param, message))
}

impl CreateRequest {
    /// Checks the limits of spec §2–§4 and returns the first violation in field order.
    pub fn validate(&self) -> Result<(), RequestError> {
        check_input(&self.input)?;
        self.check_model()?;
        if let Some(models) = &self.models {
            check_models(models)?;
        }
        check_not_empty("preset", self.preset.as_deref())?;
        check_not_empty("effort", self.effort.as_deref())?;
        if self.max_output_tokens == Some(0) {
            return fail("max_output_tokens", "max_output_tokens must be at least 1");
        }
        if let Some(steps) = self.max_steps
            && !(1..=MAX_STEPS).contains(&steps)
        {
            return fail(
                "max_steps",
                format!("max_steps must be between 1 and {MAX_STEPS}, got {steps}"),
            );
        }
        if let Some(format) = &self.response_format {
            check_response_format(format)?;
        }
        if let Some(crate::request::TextFormat::JsonSchema(format)) =
            self.text.as_ref().and_then(|text| text.format.as_ref())
        {
            check_depth("text.format.schema", &format.schema)?;
        }
        if let Some(tools) = &self.tools {
            check_tools(tools)?;
        }
        if let Some(ToolChoice::Object(choice)) = &self.tool_choice {
            self.check_tool_choice(choice)?;
        }
        check_range("temperature", self.temperature, 2.0)?;
        check_range("top_p", self.top_p, 1.0)?;
        if let Some(metadata) = &self.metadata {
            check_metadata(metadata)?;
        }
        if let Some(profile) = &self.profile
            && profile.kind != "custom"
        {
            return fail(
                "profile.type",
                format!("profile type must be \"custom\", got \"{}\"", profile.kind),
            );
        }
        if let Some(skills) = &self.skills {
            check_skills(skills)?;
        }
        self.check_options()
    }

    /// `max_output_tokens` as applied: values below 16 are raised to 16.
    pub fn effective_max_output_tokens(&self) -> Option<u32> {
        self.max_output_tokens.map(|n| n.max(MIN_OUTPUT_TOKENS))
    }

    fn check_model(&self) -> Check {
        if let Some(model) = &self.model {
            return check_not_empty("model", Some(model));
        }
        if self.models.is_none() && self.preset.is_none() && self.effort.is_none() {
            return fail(
                "model",
                "one of model, models, preset or effort is required",
            );
        }
        Ok(())
    }

    fn check_tool_choice(&self, choice: &ToolChoiceObject) -> Check {
        let tools = self.tools.as_deref().unwrap_or_default();
        match (choice.kind.as_deref(), choice.name.as_deref()) {
            (Some("required"), None) => Ok(()),
            (None | Some("function"), Some(name)) => {
                let known = tools
                    .iter()
                    .any(|tool| matches!(tool, Tool::Function(f) if f.name == name));
                if known {
                    Ok(())
                } else {
                    fail(
                        "tool_choice.name",
                        format!("tool_choice names function \"{name}\", which is not in tools"),
                    )
                }
            }
            (Some("function"), None) => fail(
                "tool_choice.name",
                "tool_choice of type function needs the function's name",
            ),
            (Some(_), Some(_)) => fail(
                "tool_choice.name",
                "tool_choice takes a name only with type function",
            ),
            (Some(kind), None) => {
                let listed = tools.iter().any(|tool| tool.type_name() == kind);
                // A preset brings its own built-in tools and skills bring the sandbox; which
                // ones is known only once the preset is resolved.
                let bundled = BUILT_IN_TOOLS.contains(&kind)
                    && (self.preset.is_some()
                        || self.effort.is_some()
                        || (kind == "sandbox"
                            && self.skills.as_ref().is_some_and(|s| !s.is_empty())));
                if listed || bundled {
                    Ok(())
                } else {
                    fail(
                        "tool_choice.type",
                        format!(
                            "tool_choice forces \"{kind}\", but no tool of that type is in tools"
                        ),
                    )
                }
            }
            (None, None) => fail(
                "tool_choice",
                "a tool_choice object must be {\"type\":\"function\",\"name\":…}, {\"name\":…}, \
                 {\"type\":<a tool type in tools>} or {\"type\":\"required\"}",
            ),
        }
    }
}

fn check_not_empty(param: &str, value: Option<&str>) -> Check {
    match value {
        Some(value) if value.trim().is_empty() => fail(param, format!("{param} must not be empty")),
        _ => Ok(()),
    }
}

fn check_range(param: &str, value: Option<f64>, max: f64) -> Check {
    match value {
        Some(v) if !v.is_finite() || !(0.0..=max).contains(&v) => fail(
            param,
            format!("{param} must be between 0 and {max}, got {v}"),
        ),
        _ => Ok(()),
    }
}

fn check_input(input: &Input) -> Check {
    let items = match input {
        Input::Text(text) if text.is_empty() => return fail("input", "input must not be empty"),
        Input::Text(_) => return Ok(()),
        Input::Items(items) => items,
    };
    if items.is_empty() {
        return fail("input", "input must contain at least one item");
    }
    for (i, item) in items.iter().enumerate() {
        match item {
            InputItem::Message(message) => {
                if let MessageContent::Parts(parts) = &message.content {
                    for (j, part) in parts.iter().enumerate() {
                        check_part(&format!("input[{i}].content[{j}]"), part)?;
                    }
                }
            }
            InputItem::FunctionCallOutput(output) => {
                if let FunctionOutput::Parts(parts) = &output.output {
                    for (j, part) in parts.iter().enumerate() {
                        check_part(&format!("input[{i}].output[{j}]"), part)?;
                    }
                }
            }
            _ => {}
        }
    }
    Ok(())
}

fn check_part(at: &str, part: &ContentPart) -> Check {
    match part {
        ContentPart::InputImage { image_url, .. } => {
            check_image_url(&format!("{at}.image_url"), image_url)
        }
        ContentPart::InputFile(file) if file.file_data.is_none() && file.file_url.is_none() => {
            fail(at, "an input_file part needs file_data or file_url")
        }
        _ => Ok(()),
    }
}

fn check_image_url(param: &str, url: &str) -> Check {
    if let Some(data_url) = strip_prefix_ignore_case(url, "data:") {
        return check_image_data_url(param, data_url);
    }
    if url.chars().count() > MAX_IMAGE_URL_CHARS {
        return fail(
            param,
            format!(
                "image_url is longer than {MAX_IMAGE_URL_CHARS} characters; send large images \
                 as a base64 data URL"
            ),
        );
    }
    if strip_prefix_ignore_case(url, "https://").is_none()
        && strip_prefix_ignore_case(url, "http://").is_none()
    {
        return fail(
            param,
            "image_url must be an http(s) URL or a base64 data URL (data:image/png;base64,…)",
        );
    }
    Ok(())
}

/// `data:` already removed: `image/png;base64,<data>`.
fn check_image_data_url(param: &str, rest: &str) -> Check {
    let Some((meta, data)) = rest.split_once(',') else {
        return fail(param, "a data URL needs a comma before its data");
    };
    let mut meta = meta.split(';');
    let mime = meta.next().unwrap_or_default().trim().to_ascii_lowercase();
    if !meta.any(|p| p.trim().eq_ignore_ascii_case("base64")) {
        return fail(
            param,
            "image data URLs must be base64-encoded (data:image/png;base64,…)",
        );
    }
    if !IMAGE_MIME_TYPES.contains(&mime.as_str()) {
        return fail(
            param,
            format!("image type \"{mime}\" is not supported; use PNG, JPEG, WEBP or GIF"),
        );
    }
    let payload = data.trim_end_matches('=');
    let padding = data.len() - payload.len();
    let alphabet = |b: u8| b.is_ascii_alphanumeric() || matches!(b, b'+' | b'/' | b'-' | b'_');
    if payload.is_empty() || padding > 2 || !payload.bytes().all(alphabet) || payload.len() % 4 == 1
    {
        return fail(param, "the image data is not valid base64");
    }
    let decoded = payload.len() / 4 * 3 + (payload.len() % 4).saturating_sub(1);
    if decoded > MAX_IMAGE_BYTES {
        return fail(param, "a base64 image must be at most 50 MB");
    }
    Ok(())
}

fn strip_prefix_ignore_case<'a>(text: &'a str, prefix: &str) -> Option<&'a str> {
    let head = text.get(..prefix.len())?;
    head.eq_ignore_ascii_case(prefix)
        .then(|| &text[prefix.len()..])
}

fn check_models(models: &[String]) -> Check {
    if models.is_empty() || models.len() > MAX_MODELS {
        return fail(
            "models",
            format!(
                "models must have 1 to {MAX_MODELS} entries, got {}",
                models.len()
            ),
        );
    }
    for (i, model) in models.iter().enumerate() {
        check_not_empty(&format!("models[{i}]"), Some(model))?;
    }
    Ok(())
}

fn check_response_format(format: &ResponseFormat) -> Check {
    let Some(schema) = &format.json_schema else {
        return fail(
            "response_format.json_schema",
            "response_format of type json_schema needs json_schema",
        );
    };
    if let Some(name) = &schema.name
        && !is_name(name)
    {
        return fail(
            "response_format.json_schema.name",
            format!("the schema name must be {NAME_RULE}"),
        );
    }
    if !schema.schema.is_object() {
        return fail(
            "response_format.json_schema.schema",
            "schema must be a JSON Schema object",
        );
    }
    check_depth("response_format.json_schema.schema", &schema.schema)
}

/// `^[a-zA-Z0-9_-]{1,64}$`.
fn is_name(name: &str) -> bool {
    (1..=64).contains(&name.len())
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

/// What must be unique across the `tools` array.
#[derive(Default)]
struct Seen<'a> {
    functions: HashSet<&'a str>,
    server_labels: HashSet<&'a str>,
    servers: usize,
}

fn check_tools(tools: &[Tool]) -> Check {
    let mut seen = Seen::default();
    for (i, tool) in tools.iter().enumerate() {
        let at = format!("tools[{i}]");
        match tool {
            Tool::Function(function) => check_function(&at, function, &mut seen)?,
            Tool::WebSearch(search) => check_web_search(&at, search)?,
            Tool::ImageSearch(search) => check_image_search(&at, search)?,
            Tool::FetchUrl(fetch) => check_fetch_url(&at, fetch)?,
            Tool::Mcp(mcp) => check_mcp(&at, mcp, &mut seen)?,
            Tool::Connector(connector) => check_connector(&at, connector, &mut seen)?,
            Tool::PeopleSearch(_) | Tool::FinanceSearch(_) | Tool::Sandbox(_) => {}
        }
    }
    Ok(())
}

fn check_function<'a>(at: &str, function: &'a FunctionTool, seen: &mut Seen<'a>) -> Check {
    let name = function.name.as_str();
    if !is_name(name) {
        return fail(
            format!("{at}.name"),
            format!("function name must be {NAME_RULE}"),
        );
    }
    if RESERVED_FUNCTION_NAMES.contains(&name) {
        return fail(
            format!("{at}.name"),
            format!("function name \"{name}\" is reserved for a built-in tool"),
        );
    }
    if !seen.functions.insert(name) {
        return fail(
            format!("{at}.name"),
            format!("function name \"{name}\" is used by more than one tool"),
        );
    }
    if let Some(parameters) = &function.parameters {
        if !parameters.is_object() {
            return fail(
                format!("{at}.parameters"),
                "parameters must be a JSON Schema object",
            );
        }
        check_depth(&format!("{at}.parameters"), parameters)?;
    }
    Ok(())
}

fn check_web_search(at: &str, search: &WebSearchTool) -> Check {
    if let Some(n) = search.max_results
        && !(1..=MAX_WEB_RESULTS).contains(&n)
    {
        return fail(
            format!("{at}.max_results"),
            format!("max_results must be between 1 and {MAX_WEB_RESULTS}, got {n}"),
        );
    }
    match &search.filters {
        Some(filters) => check_web_filters(&format!("{at}.filters"), filters),
        None => Ok(()),
    }
}

fn check_web_filters(at: &str, filters: &WebSearchFilters) -> Check {
    check_domains(at, filters).map_err(|err| err.with_kind("invalid_search_domain_filter"))?;
    check_dates(at, filters)
}

fn check_domains(at: &str, filters: &WebSearchFilters) -> Check {
    if let Some(domains) = &filters.search_domain_filter {
        if domains.len() > MAX_DOMAIN_FILTERS {
            return fail(
                format!("{at}.search_domain_filter"),
                format!(
                    "search_domain_filter takes at most {MAX_DOMAIN_FILTERS} domains, got {}",
                    domains.len()
                ),
            );
        }
        for (j, domain) in domains.iter().enumerate() {
            let bare = domain.strip_prefix('-').unwrap_or(domain);
            if bare.trim().is_empty() || domain.chars().count() > MAX_DOMAIN_CHARS {
                return fail(
                    format!("{at}.search_domain_filter[{j}]"),
                    format!("a domain filter must be 1 to {MAX_DOMAIN_CHARS} characters"),
                );
            }
        }
    }
    Ok(())
}

fn check_dates(at: &str, filters: &WebSearchFilters) -> Check {
    let dates = [
        (
            "search_after_date_filter",
            &filters.search_after_date_filter,
        ),
        (
            "search_before_date_filter",
            &filters.search_before_date_filter,
        ),
        (
            "last_updated_after_filter",
            &filters.last_updated_after_filter,
        ),
        (
            "last_updated_before_filter",
            &filters.last_updated_before_filter,
        ),
    ];
    if filters.search_recency_filter.is_some()
        && let Some((name, _)) = dates.iter().find(|(_, date)| date.is_some())
    {
        return fail(
            format!("{at}.search_recency_filter"),
            format!("search_recency_filter cannot be combined with {name}"),
        );
    }
    for (name, date) in dates {
        if let Some(date) = date
            && !is_us_date(date)
        {
            return fail(
                format!("{at}.{name}"),
                format!(
                    "{name} must be a date in MM/DD/YYYY format (e.g. 03/01/2025), got \"{date}\""
                ),
            )
            .map_err(|err| err.with_kind("invalid_date_format"));
        }
    }
    Ok(())
}

/// A real calendar date written `MM/DD/YYYY`.
fn is_us_date(text: &str) -> bool {
    let b = text.as_bytes();
    if b.len() != 10 || b[2] != b'/' || b[5] != b'/' {
        return false;
    }
    let number = |range: std::ops::Range<usize>| -> Option<u32> {
        b[range].iter().try_fold(0u32, |n, &d| {
            d.is_ascii_digit().then(|| n * 10 + u32::from(d - b'0'))
        })
    };
    let (Some(month), Some(day), Some(year)) = (number(0..2), number(3..5), number(6..10)) else {
        return false;
    };
    let leap = (year % 4 == 0 && year % 100 != 0) || year % 400 == 0;
    let days = match month {
        1 | 3 | 5 | 7 | 8 | 10 | 12 => 31,
        4 | 6 | 9 | 11 => 30,
        2 if leap => 29,
        2 => 28,
        _ => return false,
    };
    (1..=days).contains(&day)
}

fn check_image_search(at: &str, search: &ImageSearchTool) -> Check {
    if search.max_results == Some(0) {
        return fail(
            format!("{at}.max_results"),
            "max_results must be at least 1",
        );
    }
    let formats = search
        .filters
        .as_ref()
        .and_then(|filters| filters.format_filter.as_deref())
        .unwrap_or_default();
    for (j, format) in formats.iter().enumerate() {
        if !IMAGE_FORMATS.contains(&format.as_str()) {
            return fail(
                format!("{at}.filters.format_filter[{j}]"),
                format!(
                    "unknown image format \"{format}\", expected one of: {}",
                    IMAGE_FORMATS.join(", ")
                ),
            );
        }
    }
    Ok(())
}

fn check_fetch_url(at: &str, fetch: &FetchUrlTool) -> Check {
    if let Some(n) = fetch.max_urls
        && !(1..=MAX_FETCH_URLS).contains(&n)
    {
        return fail(
            format!("{at}.max_urls"),
            format!("max_urls must be between 1 and {MAX_FETCH_URLS}, got {n}"),
        );
    }
    if let Some(n) = fetch.total_budget_tokens
        && !(1..=MAX_FETCH_BUDGET_TOKENS).contains(&n)
    {
        return fail(
            format!("{at}.total_budget_tokens"),
            format!("total_budget_tokens must be between 1 and {MAX_FETCH_BUDGET_TOKENS}, got {n}"),
        );
    }
    Ok(())
}

fn check_mcp<'a>(at: &str, mcp: &'a McpTool, seen: &mut Seen<'a>) -> Check {
    check_server(at, &mcp.server_label, seen)?;
    let url = mcp.server_url.as_str();
    if strip_prefix_ignore_case(url, "https://").is_none()
        && strip_prefix_ignore_case(url, "http://").is_none()
    {
        return fail(
            format!("{at}.server_url"),
            "server_url must be an http(s) URL",
        );
    }
    if let Some(token) = &mcp.authorization
        && !is_header_value(token)
    {
        return fail(
            format!("{at}.authorization"),
            "authorization must be printable ASCII: no CR, LF or other control characters",
        );
    }
    for (name, value) in mcp.headers.iter().flatten() {
        if !is_header_name(name) {
            return fail(
                format!("{at}.headers"),
                format!("\"{name}\" is not a valid HTTP header name"),
            );
        }
        if !is_header_value(value) {
            return fail(
                format!("{at}.headers.{name}"),
                format!(
                    "the value of header \"{name}\" must be printable ASCII: no CR, LF or other \
                     control characters"
                ),
            );
        }
    }
    Ok(())
}

/// An HTTP field name (RFC 9110 `token`).
fn is_header_name(name: &str) -> bool {
    !name.is_empty()
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b))
}

/// What an HTTP field value may hold as sent: visible ASCII, spaces and tabs (a CR or LF would
/// end the header or start another).
fn is_header_value(value: &str) -> bool {
    value
        .bytes()
        .all(|b| b == b'\t' || (b' '..=b'~').contains(&b))
}

fn check_connector<'a>(at: &str, connector: &'a ConnectorTool, seen: &mut Seen<'a>) -> Check {
    match &connector.server_label {
        Some(label) => check_server(at, label, seen)?,
        // The saved connector's label: its uniqueness is checked once the connector is read.
        None => count_server(seen)?,
    }
    check_not_empty(&format!("{at}.id"), Some(&connector.id))
}

/// The count, label syntax and label uniqueness shared by `mcp` and `connector` tools.
fn check_server<'a>(at: &str, label: &'a str, seen: &mut Seen<'a>) -> Check {
    count_server(seen)?;
    if !is_name(label) {
        return fail(
            format!("{at}.server_label"),
            format!("server_label must be {NAME_RULE}"),
        );
    }
    if !seen.server_labels.insert(label) {
        return fail(
            format!("{at}.server_label"),
            format!("server_label \"{label}\" is used by more than one mcp or connector tool"),
        );
    }
    Ok(())
}

/// One more `mcp` or `connector` tool, within the limit.
fn count_server(seen: &mut Seen<'_>) -> Check {
    seen.servers += 1;
    if seen.servers > MAX_MCP_SERVERS {
        return fail(
            "tools",
            format!("a request may have at most {MAX_MCP_SERVERS} mcp and connector tools"),
        );
    }
    Ok(())
}

/// Checks `metadata` against the limits of spec §2 (keys, key and value lengths).
pub fn check_metadata(metadata: &std::collections::BTreeMap<String, String>) -> Check {
    if metadata.len() > MAX_METADATA_KEYS {
        return fail(
            "metadata",
            format!(
                "metadata may have at most {MAX_METADATA_KEYS} keys, got {}",
                metadata.len()
            ),
        );
    }
    for (key, value) in metadata {
        if key.chars().count() > MAX_METADATA_KEY_CHARS {
            return fail(
                "metadata",
                format!(
                    "metadata key \"{key}\" is longer than {MAX_METADATA_KEY_CHARS} characters"
                ),
            );
        }
        if value.chars().count() > MAX_METADATA_VALUE_CHARS {
            return fail(
                format!("metadata.{key}"),
                format!("metadata values may be at most {MAX_METADATA_VALUE_CHARS} characters"),
            );
        }
    }
    Ok(())
}

fn check_skills(skills: &[Skill]) -> Check {
    let mut names = HashSet::new();
    let mut total = 0usize;
    for (i, skill) in skills.iter().enumerate() {
        let at = format!("skills[{i}]");
        match skill {
            Skill::Builtin(_) => {}
            Skill::Custom(custom) => check_not_empty(&format!("{at}.id"), Some(&custom.id))?,
            Skill::Inline(inline) => {
                if !is_skill_name(&inline.name) {
                    return fail(
                        format!("{at}.name"),
                        "an inline skill name is lowercase ASCII words joined by single hyphens \
                         (e.g. \"release-notes\")",
                    );
                }
                if !names.insert(inline.name.as_str()) {
                    return fail(
                        format!("{at}.name"),
                        format!(
                            "skill name \"{}\" is used by more than one skill",
                            inline.name
                        ),
                    );
                }
                let description = inline.description.len();
                if inline.description.trim().is_empty() || description > MAX_SKILL_DESCRIPTION_BYTES
                {
                    return fail(
                        format!("{at}.description"),
                        format!(
                            "an inline skill description must be 1 to \
                             {MAX_SKILL_DESCRIPTION_BYTES} bytes, got {description}"
                        ),
                    );
                }
                let instructions = inline.instructions.len();
                if instructions > MAX_SKILL_INSTRUCTIONS_BYTES {
                    return fail(
                        format!("{at}.instructions"),
                        format!(
                            "inline skill instructions may be at most \
                             {MAX_SKILL_INSTRUCTIONS_BYTES} bytes, got {instructions}"
                        ),
                    );
                }
                total += instructions;
                if total > MAX_SKILL_INSTRUCTIONS_TOTAL_BYTES {
                    return fail(
                        format!("{at}.instructions"),
                        format!(
                            "inline skill instructions may total at most \
                             {MAX_SKILL_INSTRUCTIONS_TOTAL_BYTES} bytes per request"
                        ),
                    );
                }
            }
        }
    }
    Ok(())
}

/// `^[a-z0-9]+(-[a-z0-9]+)*$`.
fn is_skill_name(name: &str) -> bool {
    !name.is_empty()
        && name.split('-').all(|word| {
            !word.is_empty()
                && word
                    .bytes()
                    .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit())
        })
}
