use agentd_protocol::request::CreateRequest;

fn param(body: &str) -> (Option<String>, String) {
    let err = CreateRequest::parse(body.as_bytes()).expect_err("must fail");
    (err.param, err.message)
}

#[test]
fn unknown_fields_name_their_path() {
    let cases = [
        (r#"{"input":"x","bogus":1}"#, "bogus"),
        (r#"{"input":"x","tools":[{"type":"function","name":"f","strictt":true}]}"#, "tools[0].strictt"),
        (r#"{"input":"x","tools":[{"type":"web_search"},{"type":"web_search","filters":{"foo":1}}]}"#, "tools[1].filters.foo"),
        (r#"{"input":[{"role":"user","content":[{"type":"input_text","text":"a","x":1}]}]}"#, "input[0].content[0].x"),
        (r#"{"input":[{"type":"function_call_output","call_id":"c","output":"o","extra":1}]}"#, "input[0].extra"),
        (r#"{"input":"x","tools":[{"type":"mcp","server_label":"a","server_url":"u","require_approval":{"always":{"tool_namez":[]}}}]}"#, "tools[0].require_approval.always.tool_namez"),
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
