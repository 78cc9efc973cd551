#![expect(clippy::expect_used, reason = "tests")]

use agentd_protocol::request::{BuiltinSkill, BuiltinSkillName, CreateRequest, Skill};

fn param(body: &str) -> (Option<String>, String) {
    let err = CreateRequest::parse(body.as_bytes()).expect_err("must fail");
    (err.param, err.message)
}

#[test]
fn unknown_fields_name_their_path() {
    let cases = [
        (r#"{"input":"x","bogus":1}"#, "bogus"),
        (
            r#"{"input":"x","tools":[{"type":"function","name":"f","strictt":true}]}"#,
            "tools[0].strictt",
        ),
        (
            r#"{"input":"x","tools":[{"type":"web_search"},{"type":"web_search","filters":{"foo":1}}]}"#,
            "tools[1].filters.foo",
        ),
        (
            r#"{"input":[{"role":"user","content":[{"type":"input_text","text":"a","x":1}]}]}"#,
            "input[0].content[0].x",
        ),
        (
            r#"{"input":[{"type":"function_call_output","call_id":"c","output":"o","extra":1}]}"#,
            "input[0].extra",
        ),
        (
            r#"{"input":"x","tools":[{"type":"mcp","server_label":"a","server_url":"u","require_approval":{"always":{"tool_namez":[]}}}]}"#,
            "tools[0].require_approval.always.tool_namez",
        ),
    ];
    for (body, want) in cases {
        let (got, message) = param(body);
        assert_eq!(got.as_deref(), Some(want), "{body} -> {message}");
        assert!(message.contains(want), "{message}");
    }
}

#[test]
fn wrong_types_and_unknown_tags_name_their_path() {
    let (p, m) = param(r#"{"input":"x","max_steps":"ten"}"#);
    assert_eq!(p.as_deref(), Some("max_steps"), "{m}");
    let (p, m) = param(r#"{"input":"x","tools":[{"type":"nope"}]}"#);
    assert_eq!(p.as_deref(), Some("tools[0].type"), "{m}");
    assert!(m.contains("unknown tool type \"nope\""), "{m}");
    let (p, _) = param(r#"{"tools":[]}"#);
    assert_eq!(p, None);
    let (p, m) = param(r#"{"input":"x""#);
    assert_eq!(p, None, "{m}");
}

#[test]
fn message_type_is_optional_and_replays_parse() {
    let req = CreateRequest::parse(
        br#"{"model":"openai/gpt","input":[
        {"role":"user","content":"What is the status of order ORD-10042?"},
        {"type":"message","id":"msg_1","status":"completed","role":"assistant","content":[{"type":"output_text","text":"hi","annotations":[],"logprobs":[]}]},
        {"type":"function_call","id":"fc_1","call_id":"call_1","name":"get_order_status","arguments":"{}","status":"completed"},
        {"type":"function_call_output","call_id":"call_1","output":"{\"status\":\"in_transit\"}"}]}"#,
    )
    .expect("parses");
    let json = serde_json::to_value(&req).expect("serializes");
    assert_eq!(json["input"][0]["type"], "message");
    assert_eq!(json["input"][3]["type"], "function_call_output");
}

#[test]
fn removed_sonar_parameters_are_refused_as_unsupported() {
    let removed = [
        ("disable_search", "true"),
        ("enable_search_classifier", "true"),
        ("search_mode", "\"academic\""),
        ("return_images", "true"),
        ("image_domain_filter", "[\"example.com\"]"),
        ("image_format_filter", "[\"png\"]"),
        ("return_related_questions", "true"),
        ("presence_penalty", "0"),
        ("frequency_penalty", "0"),
        ("stop", "[\"\\n\"]"),
        ("top_k", "5"),
        ("n", "1"),
        ("logprobs", "true"),
        ("web_search_options", "{\"search_context_size\":\"high\"}"),
        ("search_language_filter", "[\"en\"]"),
        ("return_videos", "true"),
        ("num_images", "2"),
        ("messages", "[]"),
        ("max_tokens", "100"),
        ("search_domain_filter", "[\"example.com\"]"),
        ("search_recency_filter", "\"week\""),
    ];
    for (name, value) in removed {
        let body = format!(r#"{{"model":"perplexity/sonar","input":"x","{name}":{value}}}"#);
        let (got, message) = param(&body);
        assert_eq!(got.as_deref(), Some(name), "{message}");
        assert!(
            message.contains(&format!("unknown field \"{name}\"")),
            "{message}"
        );
        assert!(
            message.contains("not supported on the Agent API"),
            "{message}"
        );
    }
    let (got, message) = param(
        r#"{"input":"x","tools":[{"type":"web_search","filters":{"search_language_filter":["en"]}}]}"#,
    );
    assert_eq!(
        got.as_deref(),
        Some("tools[0].filters.search_language_filter")
    );
    assert!(
        message.contains("not supported on the Agent API"),
        "{message}"
    );
    // Other unknown fields keep the plain message.
    let (_, message) = param(r#"{"input":"x","tools":[{"type":"function","name":"f","stop":1}]}"#);
    assert_eq!(
        message,
        "invalid request body: unknown field \"tools[0].stop\""
    );
}

#[test]
fn sonar_content_parts_are_refused_as_unsupported() {
    for kind in ["file_url", "pdf_url", "video_url", "image_url"] {
        let body = format!(
            r#"{{"input":[{{"role":"user","content":[{{"type":"{kind}","{kind}":{{"url":"https://x"}}}}]}}]}}"#
        );
        let (got, message) = param(&body);
        assert_eq!(
            got.as_deref(),
            Some("input[0].content[0].type"),
            "{message}"
        );
        assert!(
            message.contains("not supported on the Agent API"),
            "{message}"
        );
    }
}

#[test]
fn openai_extras_are_accepted() {
    let req = CreateRequest::parse(
        br#"{"model":"openai/gpt-5.4","input":"x","text":{"format":{"type":"text"}},
        "metadata":{"k":"v"},"parallel_tool_calls":false,"truncation":"auto",
        "stream_options":{"include_usage":false},"include":["reasoning.encrypted_content"],
        "user":"u","safety_identifier":"s"}"#,
    )
    .expect("parses");
    assert_eq!(req.parallel_tool_calls, Some(false));
}

#[test]
fn skills_are_typed() {
    let req = CreateRequest::parse(
        br#"{"input":"x","skills":[
        {"type":"builtin","name":"office/pdf"},
        {"type":"inline","name":"release-notes","description":"d","instructions":"i"},
        {"type":"custom","id":"skill_1","version":"2"},
        {"type":"custom","id":"skill_2"}]}"#,
    )
    .expect("parses");
    let skills = req.skills.as_deref().unwrap_or_default();
    assert!(matches!(
        skills[0],
        Skill::Builtin(BuiltinSkill {
            name: BuiltinSkillName::OfficePdf
        })
    ));
    assert!(matches!(&skills[1], Skill::Inline(s) if s.name == "release-notes"));
    assert!(matches!(&skills[3], Skill::Custom(s) if s.version.is_none()));
    let cases = [
        (
            r#"{"input":"x","skills":[{"type":"builtin","name":"office/doc"}]}"#,
            "skills[0].name",
        ),
        (
            r#"{"input":"x","skills":[{"type":"plugin","name":"p"}]}"#,
            "skills[0].type",
        ),
        (r#"{"input":"x","skills":[{"name":"p"}]}"#, "skills[0].type"),
        (
            r#"{"input":"x","skills":[{"type":"custom","id":"s","revision":"1"}]}"#,
            "skills[0].revision",
        ),
        (
            r#"{"input":"x","skills":[{"type":"inline","name":"n","description":"d"}]}"#,
            "skills[0]",
        ),
    ];
    for (body, want) in cases {
        let (got, message) = param(body);
        assert_eq!(got.as_deref(), Some(want), "{body} -> {message}");
    }
}

/// Every field of the SDK's `ResponsesRequestInput` (and of each `ToolInput`), plus the
/// accepted OpenAI extras, parses and serializes back under the same names.
#[test]
fn request_fields_round_trip_under_their_sdk_names() {
    let json = r#"{
      "input":[{"type":"message","role":"user","content":[{"type":"input_text","text":"hi"},
        {"type":"input_image","image_url":"https://example.com/a.png","detail":"high"},
        {"type":"input_file","file_url":"https://example.com/a.pdf","filename":"a.pdf"}]},
       {"type":"function_call","call_id":"call_1","name":"f","arguments":"{}","thought_signature":"sig"},
       {"type":"function_call_output","call_id":"call_1","output":[{"type":"input_text","text":"ok"}],"name":"f","status":"completed"},
       {"type":"reasoning","summary":[{"type":"summary_text","text":"s"}],"content":[{"type":"reasoning_text","text":"r"}],"encrypted_content":"e","id":"rs_1","status":"completed"},
       {"type":"mcp_approval_request","id":"mcpr_1","server_label":"gh","name":"t","arguments":"{}"},
       {"type":"mcp_approval_response","approval_request_id":"mcpr_1","approve":true,"reason":"ok"}],
      "model":"openai/gpt-5.4","models":["openai/gpt-5.4","anthropic/claude-sonnet-4-6"],
      "preset":"pro-search","effort":"medium","instructions":"Be brief.","language_preference":"en",
      "max_output_tokens":1024,"max_steps":10,"max_tool_calls":5,"step_budget_reminder":true,
      "reasoning":{"effort":"xhigh"},
      "response_format":{"type":"json_schema","json_schema":{"name":"answer","schema":{"type":"object"},"description":"d","strict":true}},
      "tools":[
        {"type":"web_search","search_context_size":"high","max_tokens":4000,"max_tokens_per_page":1000,"max_results":10,"search_type":"fast",
         "user_location":{"city":"Paris","country":"FR","region":"IDF","latitude":48.85,"longitude":2.35},
         "filters":{"search_domain_filter":["arxiv.org","-reddit.com"],"search_after_date_filter":"01/01/2025",
           "search_before_date_filter":"12/31/2025","last_updated_after_filter":"01/01/2025","last_updated_before_filter":"12/31/2025"}},
        {"type":"image_search","max_results":5,"filters":{"domain_filter":["example.com"],"format_filter":["png"],"safe_search":true}},
        {"type":"fetch_url","max_urls":3,"total_budget_tokens":50000},
        {"type":"people_search"},{"type":"finance_search"},{"type":"sandbox"},
        {"type":"function","name":"f","description":"d","parameters":{"type":"object"},"strict":true},
        {"type":"mcp","server_label":"gh","server_url":"https://mcp.example.com","authorization":"tok","headers":{"X-A":"b"},
         "allowed_tools":["t"],"require_approval":{"always":{"read_only":false,"tool_names":["t"]},"never":{"read_only":true}},"defer_loading":true},
        {"type":"connector","id":"conn_1","server_label":"slack","server_description":"Slack","allowed_tools":["post"],"require_approval":"never"}],
      "tool_choice":{"type":"function","name":"f"},"parallel_tool_calls":true,"temperature":0.5,"top_p":0.9,
      "stream":true,"stream_options":{"include_usage":true},"background":true,"store":false,
      "previous_response_id":"resp_0","prompt_cache_key":"k","metadata":{"k":"v"},"truncation":"auto",
      "service_tier":"priority","profile":{"type":"custom","id":"prof_1","version":"1"},
      "skills":[{"type":"builtin","name":"office"},{"type":"inline","name":"n","description":"d","instructions":"i"},{"type":"custom","id":"s","version":"1"}],
      "text":{"format":{"type":"text"}},"include":["x"],"user":"u","safety_identifier":"s"}"#;
    let mut req = CreateRequest::parse(json.as_bytes()).expect("parses");
    let expected: serde_json::Value = serde_json::from_str(json).expect("JSON");
    assert_eq!(serde_json::to_value(&req).expect("serializes"), expected);
    // The fields this server refuses (see `options_are_applied_or_refused_by_name`) aside, the
    // request is valid.
    req.truncation = None;
    req.profile = None;
    req.skills = None;
    req.include = None;
    req.text = None;
    req.validate().expect("valid");
}

/// Every optional field is applied or refused with a 400 naming it (spec decision 9).
#[test]
fn options_are_applied_or_refused_by_name() {
    let check = |extra: &str| {
        let body = format!(r#"{{"model":"openai/gpt-5.4","input":"x",{extra}}}"#);
        CreateRequest::parse(body.as_bytes())
            .expect("parses")
            .validate()
            .err()
            .map(|err| (err.param.unwrap_or_default(), err.message))
    };
    let refused = [
        (r#""truncation":"auto""#, "truncation"),
        (r#""profile":{"type":"custom","id":"p"}"#, "profile"),
        (r#""skills":[{"type":"builtin","name":"office"}]"#, "skills"),
        (
            r#""include":["reasoning.encrypted_content","file_search_call.results"]"#,
            "include[1]",
        ),
        (r#""top_logprobs":21"#, "top_logprobs"),
        (r#""max_tool_calls":0"#, "max_tool_calls"),
        (
            r#""context_management":[{"type":"compaction","compact_threshold":1000}]"#,
            "context_management",
        ),
        (r#""prompt":{"id":"pmpt_1","version":"2"}"#, "prompt"),
        (r#""language_preference":"German""#, "language_preference"),
        (
            r#""text":{"format":{"type":"json_object"}},"response_format":{"type":"json_schema","json_schema":{"schema":{"type":"object"}}}"#,
            "text.format",
        ),
        (
            r#""text":{"format":{"type":"json_schema","name":"a","schema":{"type":"object"}}},"response_format":{"type":"json_schema","json_schema":{"name":"a","schema":{"type":"array"}}}"#,
            "text.format",
        ),
    ];
    for (extra, param) in refused {
        let (got, message) = check(extra).unwrap_or_else(|| panic!("accepted: {extra}"));
        assert_eq!(got, param, "{extra}: {message}");
    }
    let accepted = [
        r#""truncation":"disabled""#,
        r#""include":["message.output_text.logprobs","reasoning.encrypted_content"],"top_logprobs":20"#,
        r#""language_preference":"de","step_budget_reminder":true,"max_tool_calls":1"#,
        r#""text":{"format":{"type":"json_schema","name":"a","schema":{"type":"object"},"strict":true},"verbosity":"low"},"response_format":{"type":"json_schema","json_schema":{"name":"a","schema":{"type":"object"}}}"#,
        r#""text":{"format":{"type":"json_object"}}"#,
        r#""service_tier":"flex","user":"u","safety_identifier":"s""#,
        r#""prompt_cache_key":"k","prompt_cache_retention":"24h""#,
    ];
    for extra in accepted {
        assert_eq!(check(extra), None, "{extra}");
    }
}

#[test]
fn text_format_is_typed_and_strict() {
    for (body, param) in [
        (
            r#"{"input":"x","text":{"format":{"type":"xml"}}}"#,
            "text.format.type",
        ),
        (
            r#"{"input":"x","text":{"format":{"type":"json_schema","schema":{}}}}"#,
            "text.format",
        ),
        (
            r#"{"input":"x","text":{"format":{"type":"text","extra":1}}}"#,
            "text.format.extra",
        ),
        (
            r#"{"input":"x","text":{"verbosity":"loud"}}"#,
            "text.verbosity",
        ),
        (r#"{"input":"x","text":{"other":1}}"#, "text.other"),
    ] {
        let err = CreateRequest::parse(body.as_bytes()).expect_err(body);
        assert_eq!(err.param.as_deref(), Some(param), "{body}: {}", err.message);
    }
}

#[test]
fn strings_or_lists_name_the_entry_and_the_kind_they_got() {
    let cases = [
        (
            r#"{"input":5}"#,
            "input",
            "a number, expected a string or an array of input items",
        ),
        (
            r#"{"input":true}"#,
            "input",
            "a boolean, expected a string or an array of input items",
        ),
        (
            r#"{"input":{"a":1}}"#,
            "input",
            "an object, expected a string or an array of input items",
        ),
        (
            r#"{"input":["x"]}"#,
            "input[0]",
            "a string, expected an input item object",
        ),
        (
            r#"{"input":[{"role":"user","content":"a"},{"role":"user","content":7.5}]}"#,
            "input[1].content",
            "a number, expected a string or an array of content parts",
        ),
        (
            r#"{"input":[{"role":"user","content":["a"]}]}"#,
            "input[0].content[0]",
            "a string, expected a content part object",
        ),
        (
            r#"{"input":[{"role":"user","content":"a"},{"type":"function_call_output","call_id":"c","output":null}]}"#,
            "input[1].output",
            "null, expected a string or an array of parts",
        ),
    ];
    for (body, want_param, want_message) in cases {
        let (got, message) = param(body);
        assert_eq!(got.as_deref(), Some(want_param), "{body} -> {message}");
        assert_eq!(
            message,
            format!("invalid request body: {want_param}: invalid type: {want_message}"),
            "{body}"
        );
    }
    // A part a function output may not hold is named after the whole list was read.
    let (got, message) = param(
        r#"{"input":[{"role":"user","content":"a"},{"type":"function_call_output","call_id":"c","output":[{"type":"input_text","text":"t"},{"type":"output_text","text":"x","annotations":[]}]}]}"#,
    );
    assert_eq!(got.as_deref(), Some("input[1].output[1].type"), "{message}");
    assert!(
        message.contains("must be input_text or input_image"),
        "{message}"
    );
    // And long lists read in place keep every entry, in order.
    let items: Vec<String> = (0..300)
        .map(|i| format!(r#"{{"role":"user","content":[{{"type":"input_text","text":"m{i}"}}]}}"#))
        .collect();
    let body = format!(r#"{{"input":[{}]}}"#, items.join(","));
    let request = CreateRequest::parse(body.as_bytes()).expect("parses");
    let items = request.input.into_items();
    assert_eq!(items.len(), 300);
    let text = |item: &agentd_protocol::input::InputItem| match item {
        agentd_protocol::input::InputItem::Message(message) => message.content.text(),
        _ => String::new(),
    };
    assert_eq!(text(&items[0]), "m0");
    assert_eq!(text(&items[299]), "m299");
}

/// A tagged object (a tool, an input item, a content part) whose first key tells its variant is
/// read in one pass, others are buffered first: the two must accept and refuse alike. Each case
/// is written with `type` first and with `type` last (for a message beginning with `role`, the
/// other order puts `content` first); the results must be equal, errors to the word.
#[test]
fn tagged_objects_read_alike_whatever_their_key_order() {
    // (where the object sits, type, the object's other fields)
    let cases: &[(&str, &str, &str)] = &[
        (
            "tools",
            "function",
            r#""name":"f","parameters":{"type":"object"}"#,
        ),
        ("tools", "function", r#""name":"f","strictt":true"#),
        ("tools", "function", r#""name":5"#),
        ("tools", "function", r#""description":"d""#),
        (
            "tools",
            "function",
            r#""name":"f","parameters":null,"strict":"yes""#,
        ),
        (
            "tools",
            "web_search",
            r#""filters":{"search_domain_filter":5}"#,
        ),
        (
            "tools",
            "web_search",
            r#""filters":{"search_language_filter":["en"]}"#,
        ),
        ("tools", "people_search", r#""x":1"#),
        ("tools", "nope", r#""x":1"#),
        ("tools", "image_url", r#""x":1"#),
        (
            "tools",
            "mcp",
            r#""server_label":"a","server_url":"u","require_approval":{"always":{"tool_namez":[]}}"#,
        ),
        (
            "input",
            "function_call_output",
            r#""call_id":"c","output":5"#,
        ),
        (
            "input",
            "function_call_output",
            r#""call_id":"c","output":[{"type":"input_text","text":"o","x":1}]"#,
        ),
        (
            "input",
            "function_call",
            r#""call_id":"c","name":"f","arguments":"{}""#,
        ),
        ("input", "item_reference", r#""id":"msg_1""#),
        ("input", "message", r#""role":"userr","content":"x""#),
        (
            "input",
            "message",
            r#""role":"user","content":[{"type":"input_text","text":5}]"#,
        ),
        (
            "input",
            "message",
            r#""role":"user","content":[{"text":"a","type":"input_text","x":1}]"#,
        ),
        (
            "input",
            "message",
            r#""role":"user","content":[{"type":"input_image","image_url":"u","detail":"huge"}]"#,
        ),
        (
            "input",
            "message",
            r#""role":"user","content":[{"type":"image_url","image_url":"u"}]"#,
        ),
        (
            "input",
            "message",
            r#""role":"assistant","content":[{"type":"output_text","text":"hi","annotations":[]}],"status":"completed","id":"m""#,
        ),
        (
            "input",
            "message",
            r#""role":"user","content":"x","extra":1"#,
        ),
        ("input", "reasoning", r#""summary":[],"role":"user""#),
        ("input", "compaction", r#""encrypted_content":5"#),
    ];
    let body = |place: &str, object: &str| match place {
        "tools" => format!(r#"{{"input":"x","tools":[{{"type":"web_search"}},{object}]}}"#),
        _ => format!(r#"{{"input":[{{"role":"user","content":"a"}},{object}]}}"#),
    };
    let outcome = |body: &str| match CreateRequest::parse(body.as_bytes()) {
        Ok(request) => Ok(serde_json::to_value(&request).expect("serializes")),
        Err(err) => Err((err.param, err.message)),
    };
    let mut refused = 0;
    for (place, tag, rest) in cases {
        let first = body(place, &format!(r#"{{"type":"{tag}",{rest}}}"#));
        let last = if rest.starts_with(r#""role""#) {
            // Put `content` (not a deciding key) first, `type` last.
            let (role, others) = rest.split_once(',').expect("a role and more");
            body(place, &format!(r#"{{{others},{role},"type":"{tag}"}}"#))
        } else {
            body(place, &format!(r#"{{{rest},"type":"{tag}"}}"#))
        };
        let (a, b) = (outcome(&first), outcome(&last));
        assert_eq!(a, b, "\n{first}\n{last}");
        if let Err((param, message)) = &a {
            refused += 1;
            // The second entry: each body puts one valid entry before the case.
            let param = param.as_deref().unwrap_or_default();
            assert!(
                param.starts_with(&format!("{place}[1]")),
                "{param}: {message}"
            );
        }
    }
    assert!(refused >= 15, "the cases are mostly faults: {refused}");
}

/// A later `type` naming the variant already known is skipped; another one is refused at
/// `type`, as is a message (by its first key, `role`) that says it is something else.
#[test]
fn a_second_type_must_agree_with_the_first() {
    let same = r#"{"input":"x","tools":[{"type":"function","name":"f","type":"function"}]}"#;
    assert!(CreateRequest::parse(same.as_bytes()).is_ok());
    let role_then_message = r#"{"input":[{"role":"user","content":"x","type":"message"}]}"#;
    assert!(CreateRequest::parse(role_then_message.as_bytes()).is_ok());
    let role_then_null = r#"{"input":[{"role":"user","content":"x","type":null}]}"#;
    assert!(CreateRequest::parse(role_then_null.as_bytes()).is_ok());
    let (p, m) =
        param(r#"{"input":"x","tools":[{"type":"function","name":"f","type":"sandbox"}]}"#);
    assert_eq!(p.as_deref(), Some("tools[0].type"), "{m}");
    assert!(
        m.contains(r#"given twice: "function" and "sandbox""#),
        "{m}"
    );
    let (p, m) = param(r#"{"input":[{"role":"user","type":"function_call","call_id":"c"}]}"#);
    assert_eq!(p.as_deref(), Some("input[0].type"), "{m}");
    assert!(m.contains(r#"makes it a "message""#), "{m}");
}

/// A body is read once without the path tracked; what follows the request is refused all the
/// same, and a refused body's error still names its field (read again with the path).
#[test]
fn trailing_data_is_refused_and_errors_keep_their_path_after_an_untracked_reading() {
    for body in [
        r#"{"input":"x"} {"input":"y"}"#,
        r#"{"input":"x"}]"#,
        r#"{"input":"x"}x"#,
    ] {
        let (p, m) = param(body);
        assert_eq!(p, None, "{body} -> {m}");
        assert!(m.contains("trailing characters"), "{body} -> {m}");
    }
    assert!(CreateRequest::parse(b"{\"input\":\"x\"} \n\t").is_ok());
    // A tool whose `type` is not its first key is buffered and read by a nested tracked pass;
    // the outer path is joined to it.
    let (p, m) = param(r#"{"input":"x","tools":[{"name":"f","type":"function","strictt":1}]}"#);
    assert_eq!(p.as_deref(), Some("tools[0].strictt"), "{m}");
}
