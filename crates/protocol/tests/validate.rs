//! Request limits (spec §2–§4): one test per limit, each asserting the `param` path of the
//! violation, plus the values at the edge of each limit that must still pass.

#![expect(clippy::expect_used, reason = "tests")]

use agentd_protocol::RequestError;
use agentd_protocol::input::{ContentPart, Input, InputItem, InputMessage, MessageContent, Role};
use agentd_protocol::request::CreateRequest;
use agentd_protocol::validate::RESERVED_FUNCTION_NAMES;
use serde_json::{Value, json};

/// `{"model": "openai/gpt-5.4", "input": "hi"}` with the fields of `extra` set over it
/// (`null` removes a field).
fn request(extra: Value) -> CreateRequest {
    let mut body = json!({"model": "openai/gpt-5.4", "input": "hi"});
    if let (Some(body), Value::Object(extra)) = (body.as_object_mut(), extra) {
        body.extend(extra);
    }
    let bytes = serde_json::to_vec(&body).expect("serializes");
    CreateRequest::parse(&bytes).unwrap_or_else(|err| unreachable!("does not parse: {err}"))
}

fn violation(extra: Value) -> RequestError {
    match request(extra).validate() {
        Ok(()) => unreachable!("the request passed validation"),
        Err(err) => err,
    }
}

fn assert_refused(extra: Value, param: &str) {
    let err = violation(extra);
    assert_eq!(err.param.as_deref(), Some(param), "{}", err.message);
    assert!(!err.message.is_empty());
}

fn assert_accepted(extra: Value) {
    if let Err(err) = request(extra).validate() {
        unreachable!("refused at {:?}: {}", err.param, err.message);
    }
}

macro_rules! refused {
    ($($name:ident: $extra:expr => $param:expr;)*) => {
        $(
            #[test]
            fn $name() {
                assert_refused($extra, $param);
            }
        )*
    };
}

fn function(name: &str) -> Value {
    json!({"type": "function", "name": name})
}

fn mcp(label: &str) -> Value {
    json!({"type": "mcp", "server_label": label, "server_url": "https://mcp.example.com/mcp"})
}

fn web_filters(filters: Value) -> Value {
    json!({"tools": [{"type": "web_search", "filters": filters}]})
}

fn image(url: &str) -> Value {
    json!({"input": [{"role": "user", "content": [
        {"type": "input_text", "text": "what is this?"},
        {"type": "input_image", "image_url": url}]}]})
}

fn metadata(keys: usize) -> Value {
    let map: serde_json::Map<String, Value> =
        (0..keys).map(|i| (format!("k{i}"), json!("v"))).collect();
    json!({ "metadata": map })
}

fn inline_skill(name: &str, description: &str, instructions: &str) -> Value {
    json!({"type": "inline", "name": name, "description": description, "instructions": instructions})
}

refused! {
    input_string_must_not_be_empty: json!({"input": ""}) => "input";
    input_array_must_not_be_empty: json!({"input": []}) => "input";
    model_or_models_or_preset_or_effort_is_required: json!({"model": null}) => "model";
    model_must_not_be_empty: json!({"model": ""}) => "model";
    models_has_at_most_five_entries:
        json!({"models": ["a/1", "a/2", "a/3", "a/4", "a/5", "a/6"]}) => "models";
    models_has_at_least_one_entry: json!({"model": null, "models": []}) => "models";
    models_entries_are_not_empty: json!({"models": ["a/1", ""]}) => "models[1]";
    max_output_tokens_is_at_least_one: json!({"max_output_tokens": 0}) => "max_output_tokens";
    max_steps_is_at_least_one: json!({"max_steps": 0}) => "max_steps";
    max_steps_is_at_most_100: json!({"max_steps": 101}) => "max_steps";
    response_format_json_schema_is_required:
        json!({"response_format": {"type": "json_schema"}}) => "response_format.json_schema";
    response_format_name_uses_the_name_charset:
        json!({"response_format": {"type": "json_schema",
            "json_schema": {"name": "my schema", "schema": {"type": "object"}}}})
        => "response_format.json_schema.name";
    response_format_name_is_at_most_64_chars:
        json!({"response_format": {"type": "json_schema",
            "json_schema": {"name": "n".repeat(65), "schema": {"type": "object"}}}})
        => "response_format.json_schema.name";
    response_format_name_is_not_empty:
        json!({"response_format": {"type": "json_schema",
            "json_schema": {"name": "", "schema": {"type": "object"}}}})
        => "response_format.json_schema.name";
    response_format_schema_is_an_object:
        json!({"response_format": {"type": "json_schema", "json_schema": {"schema": true}}})
        => "response_format.json_schema.schema";
    function_name_uses_the_name_charset:
        json!({"tools": [function("get.order")]}) => "tools[0].name";
    function_name_is_at_most_64_chars:
        json!({"tools": [function(&"f".repeat(65))]}) => "tools[0].name";
    function_name_is_not_empty: json!({"tools": [function("")]}) => "tools[0].name";
    function_name_is_not_reserved:
        json!({"tools": [{"type": "web_search"}, function("web_search")]}) => "tools[1].name";
    function_name_is_unique:
        json!({"tools": [function("f"), function("g"), function("f")]}) => "tools[2].name";
    function_parameters_is_an_object:
        json!({"tools": [{"type": "function", "name": "f", "parameters": "{}"}]})
        => "tools[0].parameters";
    web_search_max_results_is_at_least_one:
        json!({"tools": [{"type": "web_search", "max_results": 0}]}) => "tools[0].max_results";
    web_search_max_results_is_at_most_50:
        json!({"tools": [{"type": "web_search", "max_results": 51}]}) => "tools[0].max_results";
    search_domain_filter_has_at_most_20_entries:
        web_filters(json!({"search_domain_filter": vec!["example.com"; 21]}))
        => "tools[0].filters.search_domain_filter";
    search_domain_filter_entries_are_at_most_253_chars:
        web_filters(json!({"search_domain_filter": ["example.com", "d".repeat(254)]}))
        => "tools[0].filters.search_domain_filter[1]";
    search_domain_filter_entries_are_not_empty:
        web_filters(json!({"search_domain_filter": ["-"]}))
        => "tools[0].filters.search_domain_filter[0]";
    recency_filter_excludes_date_filters:
        web_filters(json!({"search_recency_filter": "week", "last_updated_after_filter": "01/01/2025"}))
        => "tools[0].filters.search_recency_filter";
    search_after_date_filter_is_mm_dd_yyyy:
        web_filters(json!({"search_after_date_filter": "2025-03-01"}))
        => "tools[0].filters.search_after_date_filter";
    search_before_date_filter_is_a_real_date:
        web_filters(json!({"search_before_date_filter": "02/30/2025"}))
        => "tools[0].filters.search_before_date_filter";
    last_updated_after_filter_is_mm_dd_yyyy:
        web_filters(json!({"last_updated_after_filter": "3/1/2025"}))
        => "tools[0].filters.last_updated_after_filter";
    last_updated_before_filter_month_is_1_to_12:
        web_filters(json!({"last_updated_before_filter": "13/01/2025"}))
        => "tools[0].filters.last_updated_before_filter";
    image_search_format_filter_values_are_known:
        json!({"tools": [{"type": "image_search", "filters": {"format_filter": ["png", "tiff"]}}]})
        => "tools[0].filters.format_filter[1]";
    image_search_max_results_is_at_least_one:
        json!({"tools": [{"type": "image_search", "max_results": 0}]}) => "tools[0].max_results";
    fetch_url_max_urls_is_at_least_one:
        json!({"tools": [{"type": "fetch_url", "max_urls": 0}]}) => "tools[0].max_urls";
    fetch_url_max_urls_is_at_most_10:
        json!({"tools": [{"type": "fetch_url", "max_urls": 11}]}) => "tools[0].max_urls";
    fetch_url_total_budget_tokens_is_at_most_120000:
        json!({"tools": [{"type": "fetch_url", "total_budget_tokens": 120_001}]})
        => "tools[0].total_budget_tokens";
    at_most_16_mcp_and_connector_tools:
        json!({"tools": (0..16).map(|i| mcp(&format!("s{i}")))
            .chain([json!({"type": "connector", "id": "conn_1", "server_label": "c"})])
            .collect::<Vec<_>>()})
        => "tools";
    server_label_uses_the_name_charset: json!({"tools": [mcp("deep wiki")]}) => "tools[0].server_label";
    server_label_is_at_most_64_chars: json!({"tools": [mcp(&"s".repeat(65))]}) => "tools[0].server_label";
    server_label_is_unique_across_mcp_and_connector_tools:
        json!({"tools": [mcp("gh"), {"type": "connector", "id": "conn_1", "server_label": "gh"}]})
        => "tools[1].server_label";
    mcp_server_url_is_http:
        json!({"tools": [{"type": "mcp", "server_label": "a", "server_url": "ftp://x"}]})
        => "tools[0].server_url";
    connector_id_is_not_empty:
        json!({"tools": [{"type": "connector", "id": "", "server_label": "a"}]}) => "tools[0].id";
    tool_choice_names_an_existing_function:
        json!({"tools": [function("f")], "tool_choice": {"name": "g"}}) => "tool_choice.name";
    tool_choice_function_names_an_existing_function:
        json!({"tools": [function("f")], "tool_choice": {"type": "function", "name": "g"}})
        => "tool_choice.name";
    tool_choice_function_needs_a_name:
        json!({"tools": [function("f")], "tool_choice": {"type": "function"}}) => "tool_choice.name";
    tool_choice_built_in_must_be_in_tools:
        json!({"tools": [function("f")], "tool_choice": {"type": "web_search"}}) => "tool_choice.type";
    tool_choice_unknown_type_is_refused:
        json!({"tools": [function("f")], "tool_choice": {"type": "browser"}}) => "tool_choice.type";
    tool_choice_name_goes_with_type_function_only:
        json!({"tools": [{"type": "web_search"}], "tool_choice": {"type": "web_search", "name": "x"}})
        => "tool_choice.name";
    tool_choice_object_is_not_empty: json!({"tool_choice": {}}) => "tool_choice";
    temperature_is_at_most_2: json!({"temperature": 2.01}) => "temperature";
    temperature_is_not_negative: json!({"temperature": -0.1}) => "temperature";
    top_p_is_at_most_1: json!({"top_p": 1.5}) => "top_p";
    top_p_is_not_negative: json!({"top_p": -1}) => "top_p";
    metadata_has_at_most_16_keys: metadata(17) => "metadata";
    metadata_keys_are_at_most_64_chars:
        json!({"metadata": {"k".repeat(65): "v"}}) => "metadata";
    metadata_values_are_at_most_512_chars:
        json!({"metadata": {"note": "v".repeat(513)}}) => "metadata.note";
    image_url_is_at_most_2048_chars:
        image(&format!("https://example.com/{}", "a".repeat(2029))) => "input[0].content[1].image_url";
    image_url_is_http_or_data: image("ftp://example.com/a.png") => "input[0].content[1].image_url";
    image_data_url_is_base64: image("data:image/png,abcd") => "input[0].content[1].image_url";
    image_data_url_type_is_png_jpeg_webp_or_gif:
        image("data:image/svg+xml;base64,PHN2Zz4=") => "input[0].content[1].image_url";
    image_data_url_data_is_valid_base64:
        image("data:image/png;base64,not base64!") => "input[0].content[1].image_url";
    image_data_url_data_is_not_empty: image("data:image/png;base64,") => "input[0].content[1].image_url";
    function_output_images_are_checked_too:
        json!({"input": [
            {"type": "function_call", "call_id": "c", "name": "f", "arguments": "{}"},
            {"type": "function_call_output", "call_id": "c",
             "output": [{"type": "input_image", "image_url": "data:image/tiff;base64,AAAA"}]}],
            "tools": [function("f")]})
        => "input[1].output[0].image_url";
    input_file_needs_data_or_url:
        json!({"input": [{"role": "user", "content": [{"type": "input_file", "filename": "a.pdf"}]}]})
        => "input[0].content[0]";
    profile_type_is_custom:
        json!({"profile": {"type": "preset", "id": "p_1"}}) => "profile.type";
    inline_skill_name_is_lowercase_words_joined_by_hyphens:
        json!({"skills": [inline_skill("Release_Notes", "d", "i")]}) => "skills[0].name";
    inline_skill_name_has_no_double_hyphen:
        json!({"skills": [inline_skill("release--notes", "d", "i")]}) => "skills[0].name";
    inline_skill_name_is_unique:
        json!({"skills": [inline_skill("notes", "d", "i"), inline_skill("notes", "d", "i")]})
        => "skills[1].name";
    inline_skill_description_is_at_most_1024_bytes:
        json!({"skills": [inline_skill("notes", &"é".repeat(513), "i")]}) => "skills[0].description";
    inline_skill_instructions_are_at_most_65536_bytes:
        json!({"skills": [inline_skill("notes", "d", &"i".repeat(65_537))]})
        => "skills[0].instructions";
    inline_skill_instructions_total_at_most_262144_bytes:
        json!({"skills": (0..5)
            .map(|i| inline_skill(&format!("s{i}"), "d", &"i".repeat(60_000)))
            .collect::<Vec<_>>()})
        => "skills[4].instructions";
    custom_skill_id_is_not_empty:
        json!({"skills": [{"type": "custom", "id": ""}]}) => "skills[0].id";
}

#[test]
fn every_reserved_function_name_is_refused() {
    for name in RESERVED_FUNCTION_NAMES {
        assert_refused(json!({"tools": [function(name)]}), "tools[0].name");
    }
    for name in ["execute", "tool_search", "search_web", "apply_patch"] {
        assert!(RESERVED_FUNCTION_NAMES.contains(&name), "{name}");
    }
}

#[test]
fn base64_images_are_at_most_50_mb() {
    let mut req = request(image("data:image/png;base64,iVBORw0KGgo="));
    let big = format!(
        "data:image/png;base64,{}",
        "A".repeat(50 * 1024 * 1024 / 3 * 4 + 8)
    );
    req.input = Input::Items(vec![InputItem::Message(InputMessage {
        role: Role::User,
        content: MessageContent::Parts(vec![ContentPart::InputImage {
            image_url: big,
            detail: None,
        }]),
        id: None,
        status: None,
        phase: None,
    })]);
    let err = req.validate().expect_err("too large");
    assert_eq!(err.param.as_deref(), Some("input[0].content[0].image_url"));
    assert!(err.message.contains("50 MB"), "{}", err.message);
}

#[test]
fn the_first_violation_in_field_order_is_reported() {
    let err = violation(json!({"input": "", "max_steps": 0, "temperature": 9}));
    assert_eq!(err.param.as_deref(), Some("input"));
    let err =
        violation(json!({"temperature": 9, "tools": [function("web_search")], "max_steps": 0}));
    assert_eq!(err.param.as_deref(), Some("max_steps"));
    let err = violation(json!({"temperature": 9, "tools": [function("f"), function("read")]}));
    assert_eq!(err.param.as_deref(), Some("tools[1].name"));
}

#[test]
fn messages_are_clear() {
    let err = violation(json!({"model": null}));
    assert!(
        err.message.contains("model, models, preset or effort"),
        "{}",
        err.message
    );
    let err = violation(web_filters(
        json!({"search_after_date_filter": "2025-03-01"}),
    ));
    assert!(err.message.contains("MM/DD/YYYY"), "{}", err.message);
    let err = violation(json!({"tools": [function("read")]}));
    assert!(err.message.contains("reserved"), "{}", err.message);
}

#[test]
fn values_at_the_edge_of_each_limit_pass() {
    let cases = [
        json!({"model": null, "models": ["a/1", "a/2", "a/3", "a/4", "a/5"]}),
        json!({"model": null, "preset": "fast"}),
        json!({"model": null, "effort": "high"}),
        json!({"max_output_tokens": 1, "max_steps": 1}),
        json!({"max_steps": 100}),
        json!({"temperature": 0, "top_p": 0}),
        json!({"temperature": 2, "top_p": 1}),
        metadata(16),
        json!({"metadata": {"k".repeat(64): "v".repeat(512)}}),
        json!({"tools": [{"type": "fetch_url", "max_urls": 1, "total_budget_tokens": 120_000}]}),
        json!({"tools": [{"type": "fetch_url", "max_urls": 10}]}),
        json!({"tools": [{"type": "web_search", "max_results": 1}]}),
        json!({"tools": [{"type": "web_search", "max_results": 50}]}),
        web_filters(json!({"search_domain_filter":
            (0..20).map(|i| format!("-{}{i:02}", "d".repeat(250))).collect::<Vec<_>>()})),
        web_filters(json!({"search_recency_filter": "month"})),
        web_filters(json!({
            "search_after_date_filter": "02/29/2024", "search_before_date_filter": "12/31/2025",
            "last_updated_after_filter": "01/01/2000", "last_updated_before_filter": "06/30/2025"})),
        json!({"tools": [{"type": "image_search", "max_results": 5,
            "filters": {"format_filter": ["bmp", "gif", "jpeg", "png", "webp", "svg"]}}]}),
        json!({"tools": (0..15).map(|i| mcp(&format!("s-{i}")))
            .chain([json!({"type": "connector", "id": "conn_1", "server_label": "A_b-9"})])
            .collect::<Vec<_>>()}),
        json!({"tools": [function(&"f".repeat(64)), function("get_order-status"),
            {"type": "function", "name": "g", "parameters": {"type": "object"}}]}),
        json!({"tools": [function("f")], "tool_choice": {"name": "f"}}),
        json!({"tools": [function("f")], "tool_choice": {"type": "function", "name": "f"}}),
        json!({"tools": [{"type": "web_search"}], "tool_choice": {"type": "web_search"}}),
        json!({"tools": [mcp("gh")], "tool_choice": {"type": "mcp"}}),
        json!({"tools": [function("f")], "tool_choice": {"type": "required"}}),
        json!({"tool_choice": {"type": "required"}}),
        json!({"tool_choice": "required"}),
        // A preset brings web_search. (Skills and profiles are refused as unsupported: see
        // parse.rs `options_are_applied_or_refused_by_name`.)
        json!({"model": null, "preset": "pro-search", "tool_choice": {"type": "web_search"}}),
        json!({"response_format": {"type": "json_schema",
            "json_schema": {"name": "n".repeat(64), "schema": {"type": "object"}}}}),
        json!({"response_format": {"type": "json_schema", "json_schema": {"schema": {}}}}),
        image(&format!("https://example.com/{}", "a".repeat(2028))),
        image(&format!("data:image/png;base64,{}", "A".repeat(4000))),
        image("DATA:image/JPEG;base64,/9j/4AAQSkZJRg=="),
        image("data:image/webp;base64,UklGRg"),
        image("data:image/gif;base64,R0lGODlh"),
        json!({"input": [{"role": "user", "content": [
            {"type": "input_file", "file_url": "https://example.com/a.pdf"},
            {"type": "input_file", "file_data": "JVBERi0=", "filename": "a.pdf"}]}]}),
    ];
    for case in cases {
        assert_accepted(case);
    }
}

#[test]
fn max_output_tokens_below_16_are_raised_to_16() {
    let cases = [
        (None, None),
        (Some(1), Some(16)),
        (Some(15), Some(16)),
        (Some(16), Some(16)),
        (Some(4096), Some(4096)),
    ];
    for (given, effective) in cases {
        let req = request(json!({"max_output_tokens": given}));
        assert_eq!(req.effective_max_output_tokens(), effective, "{given:?}");
    }
}

#[test]
fn bad_dates_and_domains_have_their_own_error_types() {
    let date = violation(web_filters(
        json!({"search_after_date_filter": "2025-03-01"}),
    ));
    assert_eq!(date.kind, Some("invalid_date_format"));
    let domain = violation(web_filters(json!({"search_domain_filter": ["-"]})));
    assert_eq!(domain.kind, Some("invalid_search_domain_filter"));
    let recency = violation(web_filters(
        json!({"search_recency_filter": "week", "last_updated_after_filter": "01/01/2025"}),
    ));
    assert_eq!(recency.kind, None, "a conflict is a plain invalid_request");
}

/// A JSON value nested `depth` levels deep (at least 3): an object schema whose property is
/// wrapped in arrays around `{"type": "string"}`.
fn nested_schema(depth: usize) -> Value {
    let mut schema = json!({"type": "string"});
    for _ in 0..depth - 3 {
        schema = json!([schema]);
    }
    json!({"type": "object", "properties": {"a": schema}})
}

/// Regression (issue 13): a background request whose tool schema nested 124 levels deep was
/// accepted and then failed as "the server stopped while this run was in progress", because
/// its stored job payload was too deep to read back. It is now a 400 naming the field.
#[test]
fn schemas_nested_deeper_than_the_limit_are_refused_at_request_time() {
    use agentd_protocol::limits::{MAX_SCHEMA_DEPTH, json_depth};
    let deep = json!([{"type": "function", "name": "f", "parameters": nested_schema(124)}]);
    let err = violation(json!({"tools": deep, "background": true}));
    assert_eq!(err.param.as_deref(), Some("tools[0].parameters"));
    assert!(
        err.message.contains(&MAX_SCHEMA_DEPTH.to_string()),
        "{}",
        err.message
    );

    let edge = nested_schema(MAX_SCHEMA_DEPTH);
    assert_eq!(json_depth(&edge), MAX_SCHEMA_DEPTH);
    assert_accepted(json!({"tools": [{"type": "function", "name": "f", "parameters": edge}]}));
    let over = nested_schema(MAX_SCHEMA_DEPTH + 1);
    assert_refused(
        json!({"tools": [function("g"), {"type": "function", "name": "f", "parameters": over}]}),
        "tools[1].parameters",
    );
    assert_refused(
        json!({"response_format": {"type": "json_schema", "json_schema": {"schema": nested_schema(100)}}}),
        "response_format.json_schema.schema",
    );
    assert_refused(
        json!({"text": {"format": {"type": "json_schema", "name": "a", "schema": nested_schema(100)}}}),
        "text.format.schema",
    );
}

/// Regression (issue 13): a CR or LF in an MCP header value was reported as 424 "the MCP
/// server sent an unusable answer" after discovery started; it is a 400 naming the header.
#[test]
fn mcp_header_values_with_control_characters_are_refused() {
    let with = |field: &str, value: Value| {
        let mut tool = mcp("docs");
        tool[field] = value;
        json!({"tools": [function("f"), tool]})
    };
    assert_refused(
        with("headers", json!({"X-Api-Key": "abc\r\nX-Injected: 1"})),
        "tools[1].headers.X-Api-Key",
    );
    assert_refused(
        with("headers", json!({"X-Trace": "line\nbreak"})),
        "tools[1].headers.X-Trace",
    );
    assert_refused(
        with("headers", json!({"X-Null": "a\u{0}b"})),
        "tools[1].headers.X-Null",
    );
    assert_refused(
        with("headers", json!({"X-Utf8": "café"})),
        "tools[1].headers.X-Utf8",
    );
    assert_refused(
        with("headers", json!({"Bad Name": "v"})),
        "tools[1].headers",
    );
    assert_refused(
        with("authorization", json!("token\r\nX-Injected: 1")),
        "tools[1].authorization",
    );
    let err = violation(with("headers", json!({"X-Api-Key": "secret\r\n"})));
    assert!(
        !err.message.contains("secret"),
        "the value is never echoed: {}",
        err.message
    );
    assert_accepted(with(
        "headers",
        json!({"X-Api-Key": "abc def\tghi~!", "x-b": ""}),
    ));
    assert_accepted(with("authorization", json!("tok.en-_~+/=")));
}

#[test]
fn operator_limits_name_the_field_and_the_limit() {
    use agentd_protocol::limits::RequestLimits;
    let limits = RequestLimits {
        max_tools: 3,
        max_tools_bytes: 1000,
        max_tool_schema_bytes: 100,
    };
    let tools =
        |n: usize| json!({"tools": (0..n).map(|i| function(&format!("f{i}"))).collect::<Vec<_>>()});
    request(tools(3))
        .check_limits(&limits)
        .expect("at the limit");
    let err = request(tools(4))
        .check_limits(&limits)
        .expect_err("one over");
    assert_eq!(err.param.as_deref(), Some("tools"));
    assert!(
        err.message.contains("at most 3 tools, got 4"),
        "{}",
        err.message
    );

    let schema = |bytes: usize| {
        // `{"type":"object","description":"…"}` is 34 bytes around the description.
        json!({"type": "object", "description": "d".repeat(bytes - 34)})
    };
    let at = json!({"tools": [function("a"), {"type": "function", "name": "f", "parameters": schema(100)}]});
    request(at).check_limits(&limits).expect("at the limit");
    let over = json!({"tools": [function("a"), {"type": "function", "name": "f", "parameters": schema(101)}]});
    let err = request(over)
        .check_limits(&limits)
        .expect_err("one byte over");
    assert_eq!(err.param.as_deref(), Some("tools[1].parameters"));
    assert!(err.message.contains("at most 100 bytes"), "{}", err.message);
    assert_eq!(RequestLimits::default().max_tools, 128);

    // All tools together, descriptions included.
    let described = |bytes: usize| json!({"tools": [function("a"), {"type": "function", "name": "f", "description": "d".repeat(bytes)}]});
    request(described(900))
        .check_limits(&limits)
        .expect("under the total");
    let err = request(described(1000))
        .check_limits(&limits)
        .expect_err("over the total");
    assert_eq!(err.param.as_deref(), Some("tools"));
    assert!(
        err.message.contains("total at most 1000 bytes"),
        "{}",
        err.message
    );
}

/// How the server reads a body (`parse_within`): too many tools are refused for them first,
/// whether the body is small (parsed first, counted when the parse fails) or large (counted
/// first), and before any other fault of the body; within the limit, the parse's own error.
#[test]
fn too_many_tools_are_refused_first_whatever_the_size_of_the_body() {
    use agentd_protocol::limits::{PARSE_BEFORE_COUNTING, RequestLimits};
    let limits = RequestLimits {
        max_tools: 3,
        ..RequestLimits::default()
    };
    let body = |tools: usize, padding: usize, extra: &str| {
        let tools: Vec<Value> = (0..tools).map(|i| function(&format!("f{i}"))).collect();
        let mut body =
            json!({"model": "openai/gpt-5.4", "input": "x".repeat(padding), "tools": tools});
        if !extra.is_empty() {
            body[extra] = json!(1);
        }
        serde_json::to_vec(&body).expect("encodes")
    };
    let parse = |body: &[u8]| CreateRequest::parse_within(body, &limits);
    for padding in [0, PARSE_BEFORE_COUNTING] {
        let large = padding > 0;
        assert_eq!(body(4, padding, "").len() > PARSE_BEFORE_COUNTING, large);
        parse(&body(3, padding, "")).expect("at the limit");
        for extra in ["", "bogus"] {
            let err = parse(&body(4, padding, extra)).expect_err("one over");
            assert_eq!(
                err.param.as_deref(),
                Some("tools"),
                "{large} {extra}: {err:?}"
            );
            assert!(
                err.message.contains("at most 3 tools, got 4"),
                "{}",
                err.message
            );
        }
        let err = parse(&body(3, padding, "bogus")).expect_err("unknown field");
        assert_eq!(err.param.as_deref(), Some("bogus"), "{large}: {err:?}");
    }
    // Not JSON at all: the parse's error.
    let err = parse(b"{\"tools\": [").expect_err("truncated");
    assert_eq!(err.param, None);
    assert!(
        err.message.starts_with("invalid request body"),
        "{}",
        err.message
    );
}
