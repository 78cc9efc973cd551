//! What OpenAI's clients expect of a run: argument events, MCP progress events, message
//! phases, logprobs, `max_tool_calls`, `text.format`, and the request options that reach the
//! model (language, step reminders, verbosity, tiers).

use engine::model::{ModelEvent, ModelMessage, OutputFormat, TokenLogprob, TopLogprob};
use serde_json::{Value, json};

use crate::common::{FakeServer, Harness, Step, Turn, items};

fn function(name: &str, strict: bool) -> Value {
    json!({"type": "function", "name": name, "strict": strict,
        "parameters": {"type": "object", "properties": {"q": {"type": "string"}}, "required": ["q"], "additionalProperties": false}})
}

/// Events of one output item, by output index, in order.
fn events_at(events: &[Value], index: u64) -> Vec<String> {
    events
        .iter()
        .filter(|e| e["output_index"] == index)
        .map(|e| e["type"].as_str().unwrap().to_owned())
        .collect()
}

/// `before`, then a `lookup` call (`call_1`) whose arguments the model writes in two pieces,
/// then the end of a turn that calls tools.
fn then_a_call_in_two_pieces(mut before: Vec<Step>, first: &str, second: &str) -> Vec<Step> {
    let piece = |id: Option<&str>, name: Option<&str>, arguments: &str| {
        Step::Event(ModelEvent::ToolCallDelta {
            index: 0,
            id: id.map(str::to_owned),
            name: name.map(str::to_owned),
            arguments: arguments.to_owned(),
            thought_signature: None,
        })
    };
    before.push(piece(Some("call_1"), Some("lookup"), first));
    before.push(piece(None, None, second));
    before.push(Step::Event(ModelEvent::Finish(
        engine::model::FinishReason::ToolCalls,
    )));
    before
}

#[tokio::test]
async fn function_call_arguments_stream_as_argument_events() {
    let h = Harness::new();
    h.model("m").push(Turn::Stream(then_a_call_in_two_pieces(
        vec![Step::Event(ModelEvent::TextDelta(
            "Let me look.".to_owned(),
        ))],
        "{\"q\":",
        "\"rust\"}",
    )));
    let events = h
        .stream(json!({"model": "fake/m", "input": "x", "stream": true,
            "tools": [function("lookup", false)]}))
        .await;
    // The call's item streams its arguments piece by piece while the model writes them.
    assert_eq!(
        events_at(&events, 1),
        [
            "response.output_item.added",
            "response.function_call_arguments.delta",
            "response.function_call_arguments.delta",
            "response.function_call_arguments.done",
            "response.output_item.done"
        ]
    );
    let deltas: Vec<&str> = events
        .iter()
        .filter(|e| e["type"] == "response.function_call_arguments.delta")
        .map(|e| e["delta"].as_str().unwrap())
        .collect();
    assert_eq!(deltas, ["{\"q\":", "\"rust\"}"]);
    let done = events
        .iter()
        .find(|e| e["type"] == "response.function_call_arguments.done")
        .unwrap();
    assert_eq!(done["arguments"], "{\"q\":\"rust\"}");
    assert_eq!(done["item_id"], events_at_item(&events, 1)["id"]);
    let response = &events.last().unwrap()["response"];
    assert_eq!(response["output"][1]["status"], "completed");
    assert_eq!(response["output"][1]["call_id"], "call_1");
    // Text written before calls is commentary.
    assert_eq!(response["output"][0]["phase"], "commentary");
}

fn events_at_item(events: &[Value], index: u64) -> Value {
    events
        .iter()
        .find(|e| e["type"] == "response.output_item.done" && e["output_index"] == index)
        .map(|e| e["item"].clone())
        .unwrap()
}

#[tokio::test]
async fn a_strict_function_call_is_checked_whole_then_emitted_with_its_argument_events() {
    let h = Harness::new();
    h.model("m")
        .push(Turn::calls(&[("call_1", "lookup", "{\"q\":\"rust\"}")]));
    let events = h
        .stream(json!({"model": "fake/m", "input": "x", "stream": true,
            "tools": [function("lookup", true)]}))
        .await;
    assert_eq!(
        events_at(&events, 0),
        [
            "response.output_item.added",
            "response.function_call_arguments.delta",
            "response.function_call_arguments.done",
            "response.output_item.done"
        ]
    );
    // An answer without calls is the final answer.
    h.model("m").push(Turn::text("done"));
    let (response, _) = h.run(json!({"model": "fake/m", "input": "x"})).await;
    assert_eq!(response["output"][0]["phase"], "final_answer");
}

#[tokio::test]
async fn mcp_items_carry_the_progress_events_openai_sdks_type() {
    let h = Harness::new();
    h.mcp.add(
        "https://mcp.example/mcp",
        FakeServer::with_tools(&["search"]),
    );
    h.model("m")
        .push(Turn::calls(&[("call_1", "docs__search", "{\"q\":\"a\"}")]));
    h.model("m").push(Turn::text("ok"));
    let events = h
        .stream(
            json!({"model": "fake/m", "input": "x", "stream": true, "tools": [
            {"type": "mcp", "server_label": "docs", "server_url": "https://mcp.example/mcp"}]}),
        )
        .await;
    assert_eq!(
        events_at(&events, 0),
        [
            "response.output_item.added",
            "response.mcp_list_tools.in_progress",
            "response.mcp_list_tools.completed",
            "response.output_item.done"
        ]
    );
    assert_eq!(
        events_at(&events, 1),
        [
            "response.output_item.added",
            "response.mcp_call.in_progress",
            "response.mcp_call_arguments.delta",
            "response.mcp_call_arguments.done",
            "response.mcp_call.completed",
            "response.output_item.done"
        ]
    );
}

#[tokio::test]
async fn logprobs_reach_the_deltas_and_the_output_text_when_asked_for() {
    let h = Harness::new();
    let token = |t: &str, p: f64| TokenLogprob {
        token: t.to_owned(),
        logprob: p,
        bytes: t.as_bytes().to_vec(),
        top_logprobs: vec![TopLogprob {
            token: t.to_owned(),
            logprob: p,
            bytes: t.as_bytes().to_vec(),
        }],
    };
    let turn = || {
        Turn::Stream(vec![
            Step::Event(ModelEvent::Logprobs(vec![token("Hi", -0.1)])),
            Step::Event(ModelEvent::TextDelta("Hi".to_owned())),
            Step::Event(ModelEvent::Logprobs(vec![token("!", -0.5)])),
            Step::Event(ModelEvent::TextDelta("!".to_owned())),
            Step::Event(ModelEvent::Finish(engine::model::FinishReason::Stop)),
        ])
    };
    h.model("m").push(turn());
    let events = h
        .stream(json!({"model": "fake/m", "input": "x", "stream": true,
            "include": ["message.output_text.logprobs"], "top_logprobs": 1}))
        .await;
    let request = h.model("m").requests().pop().unwrap();
    assert_eq!(request.logprobs, Some(1));
    let deltas: Vec<&Value> = events
        .iter()
        .filter(|e| e["type"] == "response.output_text.delta")
        .collect();
    assert_eq!(deltas[0]["logprobs"][0]["token"], "Hi");
    assert_eq!(deltas[1]["logprobs"][0]["logprob"], -0.5);
    let response = &events.last().unwrap()["response"];
    assert_eq!(
        response["output"][0]["content"][0]["logprobs"]
            .as_array()
            .unwrap()
            .len(),
        2
    );
    assert_eq!(response["top_logprobs"], 1);
    // Not asked for: none, and the upstream is not asked either.
    h.model("m").push(turn());
    let (plain, _) = h.run(json!({"model": "fake/m", "input": "x"})).await;
    assert_eq!(plain["output"][0]["content"][0]["logprobs"], json!([]));
    assert_eq!(h.model("m").requests().pop().unwrap().logprobs, None);
}

/// Text deltas taken where the turn is (a message already open, no logprobs waiting) and those
/// the machine's step takes (the first, an empty one, one with logprobs) make one message: each
/// non-empty delta is an event with its own logprobs, in order, and the message's text, its
/// logprobs and the stored response hold all of them.
#[tokio::test]
async fn deltas_taken_in_place_and_by_the_step_make_one_message() {
    let h = Harness::new();
    let token = |t: &str| TokenLogprob {
        token: t.to_owned(),
        logprob: -0.5,
        bytes: t.as_bytes().to_vec(),
        top_logprobs: Vec::new(),
    };
    let text = |t: &str| Step::Event(ModelEvent::TextDelta(t.to_owned()));
    h.model("m").push(Turn::Stream(vec![
        text("A"),
        text(""),
        text("b\"é"),
        Step::Event(ModelEvent::Logprobs(vec![token("c")])),
        text("c"),
        text(""),
        text("日本"),
        Step::Event(ModelEvent::Usage(engine::model::TokenUsage {
            input_tokens: 3,
            output_tokens: 5,
            ..Default::default()
        })),
        text("🎉"),
        Step::Event(ModelEvent::Finish(engine::model::FinishReason::Stop)),
    ]));
    let events = h
        .stream(json!({"model": "fake/m", "input": "x", "stream": true,
            "include": ["message.output_text.logprobs"], "top_logprobs": 0}))
        .await;
    let deltas: Vec<(&str, usize)> = events
        .iter()
        .filter(|e| e["type"] == "response.output_text.delta")
        .map(|e| {
            (
                e["delta"].as_str().unwrap(),
                e["logprobs"].as_array().unwrap().len(),
            )
        })
        .collect();
    assert_eq!(
        deltas,
        [("A", 0), ("b\"é", 0), ("c", 1), ("日本", 0), ("🎉", 0)]
    );
    let whole = "Ab\"éc日本🎉";
    let done = events
        .iter()
        .find(|e| e["type"] == "response.output_text.done")
        .unwrap();
    assert_eq!(done["text"], whole);
    assert_eq!(done["logprobs"][0]["token"], "c");
    let response = &events.last().unwrap()["response"];
    assert_eq!(response["output"][0]["content"][0]["text"], whole);
    assert_eq!(response["usage"]["output_tokens"], 5);
    let sequence: Vec<u64> = events
        .iter()
        .map(|e| e["sequence_number"].as_u64().unwrap())
        .collect();
    assert_eq!(sequence, (0..events.len() as u64).collect::<Vec<_>>());
}

#[tokio::test]
async fn max_tool_calls_caps_calls_of_every_kind_over_the_run() {
    let h = Harness::new();
    let server = h.mcp.add(
        "https://mcp.example/mcp",
        FakeServer::with_tools(&["search"]),
    );
    let model = h.model("m");
    model.push(Turn::calls(&[
        ("call_1", "docs__search", "{\"q\":\"a\"}"),
        ("call_2", "docs__search", "{\"q\":\"b\"}"),
    ]));
    model.push(Turn::text("done"));
    let (response, _) = h
        .run(
            json!({"model": "fake/m", "input": "x", "max_tool_calls": 1, "tools": [
            {"type": "mcp", "server_label": "docs", "server_url": "https://mcp.example/mcp"}]}),
        )
        .await;
    assert_eq!(response["status"], "completed", "{response}");
    // One call ran; the other went back to the model as refused, and the next turn was asked
    // without tools.
    assert_eq!(server.calls().len(), 1);
    assert_eq!(items(&response, "mcp_call").len(), 1);
    let second = model.requests().pop().unwrap();
    assert!(second.tools.is_empty());
    assert!(second.messages.iter().any(|m| matches!(m,
        ModelMessage::Tool { call_id, content, .. } if call_id == "call_2" && content.contains("max_tool_calls"))));
}

#[tokio::test]
async fn text_format_reaches_the_model_and_the_answer_is_checked() {
    let h = Harness::new();
    let model = h.model("m");
    model.push(Turn::text("{\"city\":\"Paris\"}"));
    let schema =
        json!({"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]});
    let (response, _) = h
        .run(json!({"model": "fake/m", "input": "x", "text": {"format":
            {"type": "json_schema", "name": "place", "schema": schema, "strict": true}, "verbosity": "low"}}))
        .await;
    assert_eq!(response["status"], "completed", "{response}");
    let request = model.requests().pop().unwrap();
    match request.output_format {
        Some(OutputFormat::JsonSchema(format)) => {
            assert_eq!(format.name, "place");
            assert_eq!(format.schema, schema);
            assert_eq!(format.strict, Some(true));
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(request.verbosity.as_deref(), Some("low"));
    assert_eq!(response["text"]["format"]["name"], "place");

    // json_object: any JSON object passes, anything else fails the run.
    model.push(Turn::text("not json"));
    let (failed, _) = h
        .run(json!({"model": "fake/m", "input": "x", "text": {"format": {"type": "json_object"}}}))
        .await;
    assert_eq!(failed["status"], "failed");
    assert_eq!(failed["error"]["code"], "upstream_structured_output_failed");
    assert_eq!(
        model.requests().pop().unwrap().output_format,
        Some(OutputFormat::JsonObject)
    );

    // `response_format` shows in the echo as its `text.format` equivalent.
    model.push(Turn::text("{\"city\":\"Rome\"}"));
    let (echoed, _) = h
        .run(
            json!({"model": "fake/m", "input": "x", "response_format": {"type": "json_schema",
            "json_schema": {"name": "place", "schema": schema}}}),
        )
        .await;
    assert_eq!(echoed["text"]["format"]["type"], "json_schema");
    assert_eq!(echoed["text"]["format"]["name"], "place");
}

#[tokio::test]
async fn language_and_step_reminders_reach_the_system_text() {
    let h = Harness::new();
    let model = h.model("m");
    model.push(Turn::text("Hallo"));
    let (response, _) = h
        .run(
            json!({"model": "fake/m", "input": "x", "instructions": "Be brief.",
            "language_preference": "de", "step_budget_reminder": true, "max_steps": 3,
            "service_tier": "flex", "user": "u-1", "safety_identifier": "s-1"}),
        )
        .await;
    assert_eq!(response["status"], "completed");
    let request = model.requests().pop().unwrap();
    let Some(ModelMessage::System { content }) = request.messages.first() else {
        panic!("{:?}", request.messages)
    };
    assert!(content.starts_with("Be brief."), "{content}");
    assert!(content.contains("\"de\""), "{content}");
    assert!(content.contains("step 1 of 3"), "{content}");
    assert_eq!(request.service_tier.as_deref(), Some("flex"));
    assert_eq!(request.user.as_deref(), Some("u-1"));
    assert_eq!(request.safety_identifier.as_deref(), Some("s-1"));
    // The echo shows the values in effect.
    assert_eq!(response["service_tier"], "flex");
    assert_eq!(response["temperature"], 1.0);
    assert_eq!(response["top_p"], 1.0);
    assert_eq!(response["safety_identifier"], "s-1");
}

#[tokio::test]
async fn echoed_function_tools_carry_the_strict_flag_in_effect() {
    let h = Harness::new();
    h.model("m").push(Turn::text("ok"));
    let (response, _) = h
        .run(json!({"model": "fake/m", "input": "x", "tools": [
            {"type": "function", "name": "f", "parameters": {"type": "object"}}]}))
        .await;
    assert_eq!(response["tools"][0]["strict"], false);
    assert_eq!(response["service_tier"], "default");
    assert_eq!(response["safety_identifier"], Value::Null);
}

/// Every line a run writes, streamed and stored, is byte for byte what serde writes for the
/// event: the per-token text deltas (written from their parts, the message's id shared) and the
/// message's item, content-part and text events (written without serde's `flatten`) among them,
/// with text that needs escapes, non-ASCII text, logprobs and a streamed function call.
#[tokio::test]
async fn every_event_line_is_what_serde_writes() {
    let h = Harness::new();
    let token = |t: &str| TokenLogprob {
        token: t.to_owned(),
        logprob: -0.25,
        bytes: t.as_bytes().to_vec(),
        top_logprobs: Vec::new(),
    };
    h.model("m").push(Turn::Stream(then_a_call_in_two_pieces(
        vec![
            Step::Event(ModelEvent::Logprobs(vec![token("Say")])),
            Step::Event(ModelEvent::TextDelta("Say \"hi\"\\\n".to_owned())),
            Step::Event(ModelEvent::TextDelta("\u{1} é 日本 🎉".to_owned())),
            Step::Event(ModelEvent::TextDelta("</script>".to_owned())),
        ],
        "{\"q\":",
        "\"é\"}",
    )));
    let handle = h
        .engine
        .start(
            crate::common::PROJECT,
            crate::common::request(json!({"model": "fake/m", "input": "x", "stream": true,
                "include": ["message.output_text.logprobs"], "top_logprobs": 0,
                "tools": [function("lookup", false)]})),
        )
        .await
        .unwrap();
    let id = handle.id.clone();
    let lines: Vec<std::sync::Arc<str>> = futures::StreamExt::collect(handle.events()).await;
    let types: Vec<String> = lines
        .iter()
        .map(|line| {
            let event: protocol::events::StreamEvent = serde_json::from_str(line).unwrap();
            assert_eq!(**line, serde_json::to_string(&event).unwrap());
            serde_json::from_str::<Value>(line).unwrap()["type"]
                .as_str()
                .unwrap()
                .to_owned()
        })
        .collect();
    for kind in [
        "response.output_item.added",
        "response.content_part.added",
        "response.output_text.delta",
        "response.output_text.done",
        "response.content_part.done",
        "response.output_item.done",
        "response.function_call_arguments.delta",
    ] {
        assert!(types.iter().any(|t| t == kind), "{kind} missing: {types:?}");
    }
    let stored: Vec<std::sync::Arc<str>> = h.store.lock().events[&id]
        .iter()
        .map(|record| record.data.clone())
        .collect();
    assert_eq!(stored, lines);
}
