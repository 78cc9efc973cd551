//! Wire shapes of output items, stream events and the response object: every literal below is
//! written from the SDK schema (`perplexity/generated/api.py`, the `…Output` classes) or, for
//! agentd's own items, from spec decision 4. Each literal must deserialize, serialize back to
//! exactly the same JSON (no field renamed, dropped or added) and deserialize again to an equal
//! value.

#![expect(clippy::expect_used, reason = "tests")]

use std::collections::BTreeSet;

use agentd_protocol::events::{EventData, StreamEvent};
use agentd_protocol::output::{OutputContent, OutputItem};
use agentd_protocol::response::{Response, ResponseFileList, Usage};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

/// Parses `json` as `T`, checks it serializes back to the same JSON and parses again equal.
fn round_trip<T>(json: &str) -> T
where
    T: DeserializeOwned + Serialize + PartialEq + std::fmt::Debug,
{
    let expected: Value = serde_json::from_str(json).expect("fixture is JSON");
    let parsed: T = serde_json::from_str(json)
        .unwrap_or_else(|err| unreachable!("fixture does not parse: {err}\n{json}"));
    let written = serde_json::to_value(&parsed).expect("serializes");
    assert_eq!(
        written, expected,
        "serialized form differs from the fixture"
    );
    let again: T = serde_json::from_value(written).expect("parses back");
    assert_eq!(again, parsed);
    parsed
}

/// The `type` of an output item (exhaustive: a new variant must be added to the fixtures).
fn item_type(item: &OutputItem) -> &'static str {
    match item {
        OutputItem::Message(_) => "message",
        OutputItem::SearchResults(_) => "search_results",
        OutputItem::ImageSearchResults(_) => "image_search_results",
        OutputItem::FetchUrlResults(_) => "fetch_url_results",
        OutputItem::FunctionCall(_) => "function_call",
        OutputItem::McpListTools(_) => "mcp_list_tools",
        OutputItem::McpCall(_) => "mcp_call",
        OutputItem::McpApprovalRequest(_) => "mcp_approval_request",
        OutputItem::ToolSearchOutput(_) => "tool_search_output",
        OutputItem::SkillLoaded(_) => "skill_loaded",
        OutputItem::SandboxResults(_) => "sandbox_results",
        OutputItem::SandboxWriteFile(_) => "sandbox_write_file",
        OutputItem::SandboxReadFile(_) => "sandbox_read_file",
        OutputItem::SandboxEditFile(_) => "sandbox_edit_file",
        OutputItem::SandboxGrep(_) => "sandbox_grep",
        OutputItem::SandboxGlob(_) => "sandbox_glob",
        OutputItem::SandboxApplyPatch(_) => "sandbox_apply_patch",
        OutputItem::ShareFile(_) => "share_file",
        OutputItem::PeopleSearchResults(_) => "people_search_results",
        OutputItem::FinanceResults(_) => "finance_results",
        OutputItem::AdvisorResult(_) => "advisor_result",
        OutputItem::Unknown(_) => "unknown",
    }
}

/// Output item fixtures: for each type, every field set, then only the required ones.
const OUTPUT_ITEMS: &[&str] = &[
    r#"{"type":"message","id":"msg_1","status":"completed","role":"assistant","content":[{"type":"output_text","text":"Attention is all you need [1].","annotations":[{"type":"url_citation","url":"https://arxiv.org/abs/1706.03762","title":"Attention Is All You Need","start_index":0,"end_index":15}],"logprobs":[]}]}"#,
    r#"{"type":"message","id":"msg_2","status":"in_progress","role":"assistant","content":[]}"#,
    r#"{"type":"search_results","queries":["transformer architecture attention"],"results":[{"id":1,"url":"https://arxiv.org/abs/1706.03762","title":"Attention Is All You Need","snippet":"The dominant sequence transduction models…","date":"2017-06-12","last_updated":"2023-08-02","source":"web"}]}"#,
    r#"{"type":"search_results","results":[{"id":1,"url":"https://example.com","title":"Example","snippet":"…"}]}"#,
    r#"{"type":"image_search_results","queries":["red panda"],"results":[{"image_url":"https://img.example.com/p.jpg","origin_url":"https://example.com/pandas","title":"Red panda","width":1024,"height":768}],"error":"partial results"}"#,
    r#"{"type":"image_search_results","results":[{"image_url":"https://img.example.com/p.jpg","origin_url":"https://example.com/pandas","width":1,"height":1}]}"#,
    r#"{"type":"fetch_url_results","contents":[{"url":"https://arxiv.org/abs/1706.03762","title":"Attention Is All You Need","snippet":"Abstract: The dominant…"}]}"#,
    r#"{"type":"fetch_url_results","contents":[]}"#,
    r#"{"type":"function_call","id":"fc_1","call_id":"call_1","name":"get_order_status","arguments":"{\"order_id\":\"ORD-10042\"}","status":"completed","thought_signature":"CkYBVKhc7uZ0"}"#,
    r#"{"type":"function_call","id":"fc_2","call_id":"call_2","name":"f","arguments":"{}","status":"in_progress"}"#,
    r#"{"type":"mcp_list_tools","id":"mcpl_1","server_label":"deepwiki","tools":[{"name":"read_wiki_structure","description":"Get a list of documentation topics.","input_schema":{"type":"object","properties":{"repoName":{"type":"string"}},"required":["repoName"]},"annotations":{"read_only":true}}],"error":"partial listing","connector_id":"conn_1"}"#,
    r#"{"type":"mcp_list_tools","id":"mcpl_2","server_label":"deepwiki","tools":[{"name":"t","input_schema":{"type":"object"}}]}"#,
    r#"{"type":"mcp_call","id":"mcp_1","server_label":"deepwiki","name":"read_wiki_structure","arguments":"{\"repoName\":\"a/b\"}","output":"…","error":null,"approval_request_id":"mcpr_1","connector_id":"conn_1"}"#,
    r#"{"type":"mcp_call","id":"mcp_2","server_label":"deepwiki","name":"t","arguments":"{}","error":"server unreachable"}"#,
    r#"{"type":"mcp_approval_request","id":"mcpr_1","server_label":"deepwiki","name":"ask_question","arguments":"{}","connector_id":"conn_1","thought_signature":"sig"}"#,
    r#"{"type":"mcp_approval_request","id":"mcpr_2","server_label":"deepwiki","name":"ask_question","arguments":"{}"}"#,
    r#"{"type":"tool_search_output","id":"ts_1","call_id":"call_9","status":"completed","execution":"server","arguments":"{\"query\":\"issues\"}","tools":[{"type":"namespace","name":"github","description":"GitHub","tools":[{"type":"function","name":"list_issues","description":"List issues","parameters":{"type":"object","properties":{}}}]}]}"#,
    r#"{"type":"tool_search_output","id":"ts_2","call_id":null,"status":"completed","execution":"server","tools":[{"type":"namespace","name":"github","description":"","tools":[{"type":"function","name":"list_issues"}]}]}"#,
    r#"{"type":"skill_loaded","name":"office/pdf"}"#,
    r#"{"type":"sandbox_results","call_id":"call_3","code":"print(1)","language":"python","results":[{"status":"completed","exit_code":0,"stdout":"1\n","stderr":"","duration_ms":120}],"status":"completed","container_id":"cntr_1"}"#,
    r#"{"type":"sandbox_results","call_id":"call_4","code":"sleep 999","language":"bash","results":[{"status":"timed_out","exit_code":-9,"stdout":"","stderr":"","duration_ms":60000}],"status":"timed_out"}"#,
    r#"{"type":"sandbox_write_file","call_id":"call_5","file_path":"/workspace/a.txt","size_bytes":12,"error":"disk full"}"#,
    r#"{"type":"sandbox_write_file","call_id":"call_5","file_path":"/workspace/a.txt"}"#,
    r#"{"type":"sandbox_read_file","call_id":"call_6","file_path":"/workspace/a.txt","content":"hello","start_line":1,"total_lines":1,"error":"truncated"}"#,
    r#"{"type":"sandbox_read_file","call_id":"call_6","file_path":"/workspace/a.txt"}"#,
    r#"{"type":"sandbox_edit_file","call_id":"call_7","file_path":"/workspace/a.txt","message":"1 replacement","error":"no match"}"#,
    r#"{"type":"sandbox_edit_file","call_id":"call_7"}"#,
    r#"{"type":"sandbox_grep","call_id":"call_8","files":["a.txt"],"count":1,"truncated":false,"error":"bad pattern"}"#,
    r#"{"type":"sandbox_grep","call_id":"call_8"}"#,
    r#"{"type":"sandbox_glob","call_id":"call_9","files":["a.txt","b.txt"],"count":2,"truncated":true,"error":"bad glob"}"#,
    r#"{"type":"sandbox_glob","call_id":"call_9"}"#,
    r#"{"type":"sandbox_apply_patch","call_id":"call_10","added":["n.txt"],"modified":["a.txt"],"deleted":["o.txt"],"error":"hunk failed"}"#,
    r#"{"type":"sandbox_apply_patch","call_id":"call_10"}"#,
    r#"{"type":"share_file","call_id":"call_11","file_id":"file_1","filename":"chart.png","size_bytes":12345,"url":"/v1/responses/resp_1/files/file_1/content","error":"too large"}"#,
    r#"{"type":"share_file","call_id":"call_11"}"#,
    r#"{"type":"people_search_results","queries":["CTO Acme"],"results":[{"id":1,"url":"https://example.com/in/jane","title":"Jane Doe - CTO - Acme","snippet":"…","date":"2024-01-01","last_updated":"2025-01-01","source":"web"}]}"#,
    r#"{"type":"people_search_results","results":[]}"#,
    r#"{"type":"finance_results","queries":["AAPL quote"],"results":[{"id":1,"symbol":"AAPL","name":"Apple Inc.","category":"quote","title":"Apple Inc. (AAPL) quote","data":{"price":227.5,"currency":"USD"},"source":"fmp","as_of":"2025-06-02T20:00:00Z"}]}"#,
    r#"{"type":"finance_results","queries":[],"results":[{"id":1,"category":"market_movers","title":"Top gainers","data":{},"source":"fmp"}]}"#,
    r#"{"type":"advisor_result","call_id":"call_12","status":"completed","advice":"Check the units first.","arguments":"{\"question\":\"…\"}","question":"…","error_code":"overloaded","error_message":"try later"}"#,
    r#"{"type":"advisor_result","call_id":"call_12","status":"failed"}"#,
    r#"{"type":"unknown","item_name":"browser_results","payload":{"pages":1}}"#,
];

#[test]
fn output_items_round_trip_exactly() {
    for json in OUTPUT_ITEMS {
        let item: OutputItem = round_trip(json);
        let tag: Value = serde_json::from_str(json).expect("fixture is JSON");
        assert_eq!(tag["type"], item_type(&item), "{json}");
    }
}

#[test]
fn every_output_item_type_has_fixtures() {
    let covered: BTreeSet<&str> = OUTPUT_ITEMS
        .iter()
        .map(|json| item_type(&serde_json::from_str(json).expect("parses")))
        .collect();
    // The SDK's `OutputItemOutput` union, then agentd's and the preview items.
    let expected: BTreeSet<&str> = [
        "message",
        "search_results",
        "image_search_results",
        "fetch_url_results",
        "function_call",
        "mcp_list_tools",
        "mcp_call",
        "mcp_approval_request",
        "tool_search_output",
        "skill_loaded",
        "sandbox_results",
        "sandbox_write_file",
        "sandbox_read_file",
        "sandbox_edit_file",
        "sandbox_grep",
        "sandbox_glob",
        "sandbox_apply_patch",
        "share_file",
        "unknown",
        "people_search_results",
        "finance_results",
        "advisor_result",
    ]
    .into_iter()
    .collect();
    assert_eq!(covered, expected);
}

#[test]
fn output_items_refuse_missing_required_fields() {
    let cases = [
        r#"{"type":"search_results","results":[{"id":1,"url":"u","title":"t"}]}"#,
        r#"{"type":"image_search_results","results":[{"image_url":"u","origin_url":"o","width":1}]}"#,
        r#"{"type":"fetch_url_results","contents":[{"url":"u","title":"t"}]}"#,
        r#"{"type":"tool_search_output","id":"ts","status":"completed","tools":[]}"#,
        r#"{"type":"tool_search_output","id":"ts","status":"completed","execution":"server","tools":[{"type":"other","name":"n","description":"d","tools":[]}]}"#,
        r#"{"type":"sandbox_results","call_id":"c","code":"x","language":"ruby","results":[],"status":"completed"}"#,
        r#"{"type":"sandbox_read_file","call_id":"c"}"#,
        r#"{"type":"finance_results","queries":[],"results":[{"id":1,"title":"t","data":{},"source":"s"}]}"#,
        r#"{"type":"finance_results","queries":[],"results":[{"id":1,"category":"c","title":"t","data":[],"source":"s"}]}"#,
        r#"{"type":"skill_loaded"}"#,
    ];
    for json in cases {
        assert!(
            serde_json::from_str::<OutputItem>(json).is_err(),
            "accepted: {json}"
        );
    }
}

/// A full response object, as agentd sends it (SDK fields plus the OpenAI echo fields).
const RESPONSE: &str = r#"{"id":"resp_1","object":"response","created_at":1756800000,"completed_at":1756800004,"status":"completed","model":"openai/gpt-5.4","output":[{"type":"search_results","queries":["q"],"results":[{"id":1,"url":"https://example.com","title":"Example","snippet":"…","source":"web"}]},{"type":"message","id":"msg_1","status":"completed","role":"assistant","content":[{"type":"output_text","text":"Hi [1].","annotations":[],"logprobs":[]}]}],"usage":{"input_tokens":150,"output_tokens":200,"total_tokens":350,"input_tokens_details":{"cached_tokens":50,"cache_creation_input_tokens":0,"cache_read_input_tokens":50,"cache_write_tokens":0},"output_tokens_details":{"reasoning_tokens":12},"tool_calls_details":{"search_web":{"invocation":2,"cost_usd":0.01,"token_usage":[{"model":"openai/gpt-5.4","input_tokens":1,"output_tokens":2,"input_tokens_details":{"cached_tokens":0,"cache_creation_input_tokens":0,"cache_read_input_tokens":0},"output_tokens_details":{"reasoning_tokens":0}}]},"sandbox":{"invocation":1,"cost_usd":0.0}},"cost":{"currency":"USD","input_cost":0.00826,"output_cost":0.0063,"cache_creation_cost":0.0,"cache_read_cost":0.0,"tool_calls_cost":0.0025,"total_cost":0.01706,"tool_calls_cost_details":{}}},"error":null,"incomplete_details":null,"instructions":"Be brief.","max_output_tokens":512,"max_tool_calls":null,"max_steps":10,"temperature":0.2,"top_p":1.0,"tool_choice":"auto","tools":[{"type":"web_search"}],"parallel_tool_calls":true,"truncation":"disabled","background":false,"store":true,"service_tier":"auto","text":{"format":{"type":"text"}},"metadata":{"k":"v"},"previous_response_id":null,"prompt_cache_key":"pck","reasoning":{"effort":"low"},"effort":"low","preset":"fast","user":"u1","safety_identifier":"s1","frequency_penalty":0.0,"presence_penalty":0.0,"top_logprobs":0}"#;

/// A failed response object with the optional fields left out.
const FAILED_RESPONSE: &str = r#"{"id":"resp_2","object":"response","created_at":1756800000,"completed_at":1756800001,"status":"failed","model":"openai/gpt-5.4","output":[],"usage":null,"error":{"message":"Model overloaded","type":"server_error","code":"overloaded"},"incomplete_details":null,"instructions":null,"max_output_tokens":null,"max_tool_calls":null,"max_steps":null,"temperature":1.0,"top_p":1.0,"tool_choice":{"type":"function","name":"f"},"tools":[],"parallel_tool_calls":true,"truncation":"disabled","background":true,"store":false,"service_tier":"default","text":{},"metadata":{},"previous_response_id":"resp_0","prompt_cache_key":null,"reasoning":null,"safety_identifier":null,"frequency_penalty":0.0,"presence_penalty":0.0,"top_logprobs":0}"#;

#[test]
fn response_object_round_trips_exactly() {
    let response: Response = round_trip(RESPONSE);
    assert_eq!(response.output.len(), 2);
    let failed: Response = round_trip(FAILED_RESPONSE);
    assert_eq!(
        failed.error.and_then(|e| e.code).as_deref(),
        Some("overloaded")
    );
}

#[test]
fn usage_in_the_sdk_shape_parses() {
    // `ResponsesUsageOutput`: only the token counts are required.
    let usage: Usage =
        serde_json::from_str(r#"{"input_tokens":10,"output_tokens":0,"total_tokens":10}"#)
            .expect("parses");
    assert_eq!(usage.total_tokens, 10);
    let usage: Usage = serde_json::from_str(
        r#"{"input_tokens":1,"output_tokens":1,"total_tokens":2,
            "input_tokens_details":{"cache_read_input_tokens":1},
            "tool_calls_details":{"fetch_url":{"cost_usd":0.0005}}}"#,
    )
    .expect("parses");
    assert_eq!(usage.input_tokens_details.cache_read_input_tokens, 1);
    assert_eq!(usage.tool_calls_details["fetch_url"].invocation, 0);
}

#[test]
fn file_list_round_trips_exactly() {
    let list: ResponseFileList = round_trip(
        r#"{"object":"list","data":[{"id":"file_1","object":"file","filename":"chart.png","bytes":12345,"created_at":1756800004}]}"#,
    );
    assert_eq!(list.data[0].filename, "chart.png");
}

/// The `type` of an event (exhaustive: a new variant must be added to the fixtures).
fn event_type(event: &EventData) -> &'static str {
    match event {
        EventData::ResponseCreated { .. } => "response.created",
        EventData::ResponseInProgress { .. } => "response.in_progress",
        EventData::OutputItemAdded { .. } => "response.output_item.added",
        EventData::OutputItemDone { .. } => "response.output_item.done",
        EventData::OutputTextDelta { .. } => "response.output_text.delta",
        EventData::OutputTextDone { .. } => "response.output_text.done",
        EventData::ContentPartAdded { .. } => "response.content_part.added",
        EventData::ContentPartDone { .. } => "response.content_part.done",
        EventData::FunctionCallArgumentsDelta { .. } => "response.function_call_arguments.delta",
        EventData::FunctionCallArgumentsDone { .. } => "response.function_call_arguments.done",
        EventData::McpCallArgumentsDelta { .. } => "response.mcp_call_arguments.delta",
        EventData::McpCallArgumentsDone { .. } => "response.mcp_call_arguments.done",
        EventData::McpCallInProgress { .. } => "response.mcp_call.in_progress",
        EventData::McpCallCompleted { .. } => "response.mcp_call.completed",
        EventData::McpCallFailed { .. } => "response.mcp_call.failed",
        EventData::McpListToolsInProgress { .. } => "response.mcp_list_tools.in_progress",
        EventData::McpListToolsCompleted { .. } => "response.mcp_list_tools.completed",
        EventData::McpListToolsFailed { .. } => "response.mcp_list_tools.failed",
        EventData::ReasoningStarted { .. } => "response.reasoning.started",
        EventData::SearchQueries { .. } => "response.reasoning.search_queries",
        EventData::SearchResults { .. } => "response.reasoning.search_results",
        EventData::ImageSearchQueries { .. } => "response.reasoning.image_search_queries",
        EventData::ImageSearchResults { .. } => "response.reasoning.image_search_results",
        EventData::FetchUrlQueries { .. } => "response.reasoning.fetch_url_queries",
        EventData::FetchUrlResults { .. } => "response.reasoning.fetch_url_results",
        EventData::ReasoningStopped { .. } => "response.reasoning.stopped",
        EventData::SkillLoaded { .. } => "response.skill.loaded",
        EventData::SandboxResults { .. } => "response.sandbox.results",
        EventData::ResponseCompleted { .. } => "response.completed",
        EventData::ResponseFailed { .. } => "response.failed",
        EventData::ResponseIncomplete { .. } => "response.incomplete",
        EventData::ResponseCancelled { .. } => "response.cancelled",
        EventData::Error { .. } => "error",
    }
}

/// Event fixtures; `@RESPONSE@` and `@FAILED@` stand for the response objects above.
const EVENTS: &[&str] = &[
    r#"{"type":"response.created","sequence_number":0,"response":@RESPONSE@}"#,
    r#"{"type":"response.in_progress","sequence_number":1,"response":@RESPONSE@}"#,
    r#"{"type":"response.reasoning.started","sequence_number":2,"thought":"Looking this up."}"#,
    r#"{"type":"response.reasoning.started","sequence_number":2}"#,
    r#"{"type":"response.reasoning.search_queries","sequence_number":3,"queries":["transformer architecture"],"thought":"Searching the web."}"#,
    r#"{"type":"response.reasoning.search_queries","sequence_number":3,"queries":[]}"#,
    r#"{"type":"response.reasoning.search_results","sequence_number":4,"results":[{"id":1,"url":"https://example.com","title":"Example","snippet":"…","date":"2025-01-01","last_updated":"2025-01-02","source":"web"}],"thought":"Found it.","usage":{"input_tokens":10,"output_tokens":0,"total_tokens":10,"input_tokens_details":{"cached_tokens":0,"cache_creation_input_tokens":0,"cache_read_input_tokens":0,"cache_write_tokens":0},"output_tokens_details":{"reasoning_tokens":0},"tool_calls_details":{}}}"#,
    r#"{"type":"response.reasoning.search_results","sequence_number":4,"results":[{"id":1,"url":"https://example.com","title":"Example","snippet":"…"}]}"#,
    r#"{"type":"response.reasoning.image_search_queries","sequence_number":5,"call_id":"call_1","queries":["red panda"],"thought":"Looking for images."}"#,
    r#"{"type":"response.reasoning.image_search_queries","sequence_number":5,"call_id":"call_1","queries":["red panda"]}"#,
    r#"{"type":"response.reasoning.image_search_results","sequence_number":6,"call_id":"call_1","results":[{"image_url":"https://img.example.com/p.jpg","origin_url":"https://example.com","title":"Red panda","width":640,"height":480}],"thought":"Got images.","usage":{"input_tokens":0,"output_tokens":0,"total_tokens":0,"input_tokens_details":{"cached_tokens":0,"cache_creation_input_tokens":0,"cache_read_input_tokens":0,"cache_write_tokens":0},"output_tokens_details":{"reasoning_tokens":0},"tool_calls_details":{}}}"#,
    r#"{"type":"response.reasoning.image_search_results","sequence_number":6,"call_id":"call_1","results":[]}"#,
    r#"{"type":"response.reasoning.fetch_url_queries","sequence_number":7,"urls":["https://example.com"],"thought":"Reading the page."}"#,
    r#"{"type":"response.reasoning.fetch_url_queries","sequence_number":7,"urls":[]}"#,
    r#"{"type":"response.reasoning.fetch_url_results","sequence_number":8,"contents":[{"url":"https://example.com","title":"Example","snippet":"Example Domain"}],"thought":"Read it."}"#,
    r#"{"type":"response.reasoning.fetch_url_results","sequence_number":8,"contents":[]}"#,
    r#"{"type":"response.reasoning.stopped","sequence_number":9,"thought":"Done."}"#,
    r#"{"type":"response.reasoning.stopped","sequence_number":9}"#,
    r#"{"type":"response.output_item.added","sequence_number":10,"output_index":0,"item":{"type":"search_results","queries":["q"],"results":[]}}"#,
    r#"{"type":"response.output_item.done","sequence_number":11,"output_index":0,"item":{"type":"sandbox_results","call_id":"c","code":"print(1)","language":"python","results":[],"status":"in_progress"}}"#,
    r#"{"type":"response.output_text.delta","sequence_number":12,"item_id":"msg_1","output_index":1,"content_index":0,"delta":"The Transformer ","logprobs":[]}"#,
    r#"{"type":"response.output_text.done","sequence_number":13,"item_id":"msg_1","output_index":1,"content_index":0,"text":"The Transformer relies on attention.","logprobs":[]}"#,
    r#"{"type":"response.content_part.added","sequence_number":13,"item_id":"msg_1","output_index":1,"content_index":0,"part":{"type":"output_text","text":"","annotations":[],"logprobs":[]}}"#,
    r#"{"type":"response.content_part.done","sequence_number":13,"item_id":"msg_1","output_index":1,"content_index":0,"part":{"type":"output_text","text":"Done.","annotations":[],"logprobs":[]}}"#,
    r#"{"type":"response.function_call_arguments.delta","sequence_number":14,"item_id":"fc_1","output_index":2,"delta":"{\"a\":"}"#,
    r#"{"type":"response.function_call_arguments.done","sequence_number":14,"item_id":"fc_1","output_index":2,"arguments":"{\"a\":1}"}"#,
    r#"{"type":"response.mcp_call_arguments.delta","sequence_number":14,"item_id":"mcp_1","output_index":3,"delta":"{}"}"#,
    r#"{"type":"response.mcp_call_arguments.done","sequence_number":14,"item_id":"mcp_1","output_index":3,"arguments":"{}"}"#,
    r#"{"type":"response.mcp_call.in_progress","sequence_number":14,"item_id":"mcp_1","output_index":3}"#,
    r#"{"type":"response.mcp_call.completed","sequence_number":14,"item_id":"mcp_1","output_index":3}"#,
    r#"{"type":"response.mcp_call.failed","sequence_number":14,"item_id":"mcp_1","output_index":3}"#,
    r#"{"type":"response.mcp_list_tools.in_progress","sequence_number":14,"item_id":"mcpl_1","output_index":0}"#,
    r#"{"type":"response.mcp_list_tools.completed","sequence_number":14,"item_id":"mcpl_1","output_index":0}"#,
    r#"{"type":"response.mcp_list_tools.failed","sequence_number":14,"item_id":"mcpl_1","output_index":0}"#,
    r#"{"type":"response.skill.loaded","sequence_number":14,"name":"office/pdf"}"#,
    r#"{"type":"response.sandbox.results","sequence_number":15,"results":[{"stdout":"1\n"}]}"#,
    r#"{"type":"response.completed","sequence_number":16,"response":@RESPONSE@}"#,
    r#"{"type":"response.failed","sequence_number":16,"error":{"message":"Model overloaded","type":"server_error","code":"overloaded"},"response":@FAILED@}"#,
    r#"{"type":"response.failed","sequence_number":16,"error":{"message":"boom"},"response":@FAILED@}"#,
    r#"{"type":"response.incomplete","sequence_number":16,"response":@RESPONSE@}"#,
    r#"{"type":"response.cancelled","sequence_number":16,"response":@RESPONSE@}"#,
    r#"{"type":"error","sequence_number":17,"message":"stream interrupted","code":"internal_error"}"#,
    r#"{"type":"error","sequence_number":17,"message":"stream interrupted"}"#,
];

fn event_fixture(template: &str) -> String {
    template
        .replace("@RESPONSE@", RESPONSE)
        .replace("@FAILED@", FAILED_RESPONSE)
}

#[test]
fn events_round_trip_exactly() {
    for template in EVENTS {
        let json = event_fixture(template);
        let event: StreamEvent = round_trip(&json);
        let raw: Value = serde_json::from_str(&json).expect("fixture is JSON");
        assert_eq!(raw["type"], event_type(&event.data), "{template}");
        assert_eq!(raw["sequence_number"], event.sequence_number);
    }
}

/// The direct writer of event lines writes exactly what serde writes, for every event.
#[test]
fn event_lines_are_what_serde_writes() {
    let mut events: Vec<StreamEvent> = EVENTS
        .iter()
        .map(|t| serde_json::from_str(&event_fixture(t)).expect("fixture parses"))
        .collect();
    // Text that needs escaping, non-ASCII, large numbers, logprobs.
    for delta in [
        "",
        "plain",
        "quote \" back\\slash",
        "\u{0}\u{1f}\n\t",
        "é 日本 🎉",
        "</script>",
    ] {
        events.push(StreamEvent {
            data: EventData::OutputTextDelta {
                item_id: format!("msg_{delta}"),
                output_index: usize::MAX,
                content_index: 7,
                delta: delta.to_owned(),
                logprobs: Vec::new(),
            },
            sequence_number: u64::MAX,
        });
        events.push(StreamEvent {
            data: EventData::FunctionCallArgumentsDelta {
                item_id: "fc_1".to_owned(),
                output_index: 0,
                delta: delta.to_owned(),
            },
            sequence_number: 0,
        });
    }
    events.push(StreamEvent {
        data: EventData::OutputTextDelta {
            item_id: "msg_1".to_owned(),
            output_index: 0,
            content_index: 0,
            delta: "a".to_owned(),
            logprobs: vec![serde_json::json!({"token": "a", "logprob": -0.5, "bytes": [97], "top_logprobs": []})],
        },
        sequence_number: 10,
    });
    for event in &events {
        let expected = serde_json::to_string(event).expect("serializes");
        assert_eq!(event.to_json_line().expect("writes"), expected);
    }
}

/// Texts that need escapes, non-ASCII, and the empty string.
const TEXTS: &[&str] = &[
    "",
    "plain",
    "quote \" back\\slash",
    "\u{0}\u{1f}\n\t",
    "é 日本 🎉",
    "</script>",
];

/// The events written directly without serde's `flatten` (every message's item, content part
/// and text events, and the per-token deltas) are what serde writes, for every output item
/// type, texts needing escapes, logprobs, and small and large numbers.
#[test]
fn directly_written_event_lines_are_what_serde_writes() {
    let logprob =
        serde_json::json!({"token": "a", "logprob": -0.5, "bytes": [97], "top_logprobs": []});
    let numbers: [(usize, u64); 4] = [(0, 0), (9, 10), (10, 99), (usize::MAX, u64::MAX)];
    let mut events: Vec<EventData> = Vec::new();
    for json in OUTPUT_ITEMS {
        let item: OutputItem = serde_json::from_str(json).expect("fixture parses");
        for &(index, _) in &numbers {
            events.push(EventData::OutputItemAdded {
                output_index: index,
                item: item.clone(),
            });
            events.push(EventData::OutputItemDone {
                output_index: index,
                item: item.clone(),
            });
        }
    }
    for text in TEXTS {
        let part = || {
            serde_json::from_value::<OutputContent>(serde_json::json!({
                "type": "output_text",
                "text": text,
                "annotations": [{"type": "url_citation", "url": text, "title": text, "start_index": 0, "end_index": 3}],
                "logprobs": [logprob.clone()],
            }))
            .expect("part parses")
        };
        for &(index, _) in &numbers {
            let item_id = format!("msg_{text}");
            events.push(EventData::ContentPartAdded {
                item_id: item_id.clone(),
                output_index: index,
                content_index: index,
                part: part(),
            });
            events.push(EventData::ContentPartDone {
                item_id: item_id.clone(),
                output_index: 1,
                content_index: index,
                part: part(),
            });
            for logprobs in [Vec::new(), vec![logprob.clone(), logprob.clone()]] {
                events.push(EventData::OutputTextDone {
                    item_id: item_id.clone(),
                    output_index: index,
                    content_index: 0,
                    text: (*text).to_owned(),
                    logprobs: logprobs.clone(),
                });
                events.push(EventData::OutputTextDelta {
                    item_id: item_id.clone(),
                    output_index: index,
                    content_index: index,
                    delta: (*text).to_owned(),
                    logprobs,
                });
            }
            events.push(EventData::FunctionCallArgumentsDelta {
                item_id,
                output_index: index,
                delta: (*text).to_owned(),
            });
        }
    }
    for data in events {
        for &(_, sequence_number) in &numbers {
            let event = StreamEvent {
                data: data.clone(),
                sequence_number,
            };
            let expected = serde_json::to_string(&event).expect("serializes");
            assert_eq!(event.to_json_line().expect("writes"), expected);
            // Appended to a reused buffer, after what it holds.
            let mut reused = String::from("previous line");
            event.write_json_line(&mut reused).expect("writes");
            assert_eq!(reused, format!("previous line{expected}"));
            if let EventData::OutputTextDelta {
                item_id,
                output_index,
                content_index,
                delta,
                logprobs,
            } = &event.data
            {
                let line = agentd_protocol::events::output_text_delta_line(
                    item_id,
                    *output_index,
                    *content_index,
                    delta,
                    logprobs,
                    sequence_number,
                )
                .expect("writes");
                assert_eq!(line, expected);
                let mut reused = String::from("x");
                agentd_protocol::events::write_output_text_delta(
                    &mut reused,
                    item_id,
                    *output_index,
                    *content_index,
                    delta,
                    logprobs,
                    sequence_number,
                )
                .expect("writes");
                assert_eq!(reused, format!("x{expected}"));
                // From the head a message's deltas share.
                let head = agentd_protocol::events::output_text_delta_head(
                    item_id,
                    *output_index,
                    *content_index,
                )
                .expect("writes");
                let mut reused = String::from("y");
                agentd_protocol::events::write_output_text_delta_from(
                    &mut reused,
                    &head,
                    delta,
                    logprobs,
                    sequence_number,
                )
                .expect("writes");
                assert_eq!(reused, format!("y{expected}"));
            }
        }
    }
}

/// A response event built around the response's own JSON is the event serde writes.
#[test]
fn response_event_lines_are_what_serde_writes() {
    let response: Response = serde_json::from_str(RESPONSE).expect("fixture parses");
    let json = serde_json::to_string(&response).expect("serializes");
    for (kind, data) in [
        (
            "response.completed",
            EventData::ResponseCompleted {
                response: Box::new(response.clone()),
            },
        ),
        (
            "response.incomplete",
            EventData::ResponseIncomplete {
                response: Box::new(response.clone()),
            },
        ),
        (
            "response.cancelled",
            EventData::ResponseCancelled {
                response: Box::new(response.clone()),
            },
        ),
    ] {
        for sequence_number in [0, 9, 10, 123_456, u64::MAX] {
            let event = StreamEvent {
                data: data.clone(),
                sequence_number,
            };
            assert_eq!(
                agentd_protocol::events::response_event_line(kind, &json, sequence_number),
                serde_json::to_string(&event).expect("serializes"),
            );
        }
    }
}

#[test]
fn every_event_type_has_fixtures() {
    let covered: BTreeSet<&str> = EVENTS
        .iter()
        .map(|t| {
            let event: StreamEvent =
                serde_json::from_str(&event_fixture(t)).expect("fixture parses");
            event_type(&event.data)
        })
        .collect();
    // The SDK's `EventTypeOutput`, then the events of spec §7.2 the SDK does not type.
    let expected: BTreeSet<&str> = [
        "response.created",
        "response.in_progress",
        "response.completed",
        "response.failed",
        "response.output_item.added",
        "response.output_item.done",
        "response.output_text.delta",
        "response.output_text.done",
        "response.reasoning.started",
        "response.reasoning.search_queries",
        "response.reasoning.search_results",
        "response.reasoning.image_search_queries",
        "response.reasoning.image_search_results",
        "response.reasoning.fetch_url_queries",
        "response.reasoning.fetch_url_results",
        "response.reasoning.stopped",
        "response.skill.loaded",
        "response.incomplete",
        "response.cancelled",
        "response.sandbox.results",
        "response.content_part.added",
        "response.content_part.done",
        "error",
        // OpenAI's argument and MCP progress events.
        "response.function_call_arguments.delta",
        "response.function_call_arguments.done",
        "response.mcp_call_arguments.delta",
        "response.mcp_call_arguments.done",
        "response.mcp_call.in_progress",
        "response.mcp_call.completed",
        "response.mcp_call.failed",
        "response.mcp_list_tools.in_progress",
        "response.mcp_list_tools.completed",
        "response.mcp_list_tools.failed",
    ]
    .into_iter()
    .collect();
    assert_eq!(covered, expected);
}

#[test]
fn terminal_events_are_the_four_ends_and_error() {
    let terminal: BTreeSet<&str> = EVENTS
        .iter()
        .filter_map(|t| {
            let event: StreamEvent =
                serde_json::from_str(&event_fixture(t)).expect("fixture parses");
            event.data.is_terminal().then(|| event_type(&event.data))
        })
        .collect();
    let expected: BTreeSet<&str> = [
        "response.completed",
        "response.failed",
        "response.incomplete",
        "response.cancelled",
        "error",
    ]
    .into_iter()
    .collect();
    assert_eq!(terminal, expected);
}
