//! The response object written as JSON by hand: byte for byte what `serde_json::to_string`
//! writes for a [`Response`], for the copy a run stores and sends when it ends (the row, the
//! terminal event and a plain request's body share it).
//!
//! serde's derive writes every key through its string escaper, an internally tagged enum (an
//! output item, a content part) through a map adapter, and grows its buffer from 128 bytes.
//! Here the keys and punctuation are literals, numbers go through `itoa`, strings without
//! escapes are copied between quotes ([`json_string`]), the usage and an assistant message —
//! what a run fills in — are written field by field, as are the echo's defaults (no tools,
//! `tool_choice` as a mode, `truncation`, a plain `text` format, `1.0`/`0.0` floats, absent
//! error and reasoning), and everything else (tools, a JSON schema format, reasoning; other
//! output items; other floats) is written by serde into the same buffer. `tests` compares the
//! bytes with serde's for each field's forms.

use serde::Serialize;

use crate::json_string;
use crate::output::{OutputContent, OutputItem, OutputMessage, OutputStatus};
use crate::request::{TextConfig, TextFormat, Tool, ToolChoice, ToolChoiceMode, Truncation};
use crate::response::{Response, Usage};

impl Response {
    /// The response as compact JSON, as `serde_json::to_string(self)` writes it.
    pub fn to_json(&self) -> Result<String, serde_json::Error> {
        let mut out = Writer(String::with_capacity(self.size_hint()));
        out.response(self)?;
        out.into_string()
    }

    /// About the JSON's length: the fixed part, the output's text and room for the echo.
    fn size_hint(&self) -> usize {
        let text: usize = self
            .output
            .iter()
            .map(|item| match item {
                OutputItem::Message(message) => message
                    .content
                    .iter()
                    .map(|OutputContent::OutputText(part)| part.text.len() + 160)
                    .sum(),
                _ => 512,
            })
            .sum();
        2048 + text + 256 * self.tools.len()
    }
}

/// The JSON buffer and its pieces (also the items' writer, `item_json.rs`).
/// (A `String`: its own pieces are UTF-8 already, and what serde writes is checked as UTF-8
/// once per value, [`json_string::push_serde`]; a byte buffer for the whole response had to
/// be checked again, whole, at the end.)
pub(crate) struct Writer(pub(crate) String);

impl Writer {
    /// The text written.
    pub(crate) fn into_string(self) -> Result<String, serde_json::Error> {
        Ok(self.0)
    }

    /// Writes with `write` at the end of `out` (an event line being written), in place.
    pub(crate) fn append_to(
        out: &mut String,
        write: impl FnOnce(&mut Writer) -> Result<(), serde_json::Error>,
    ) -> Result<(), serde_json::Error> {
        let mut writer = Writer(std::mem::take(out));
        let written = write(&mut writer);
        *out = writer.0;
        written
    }

    pub(crate) fn piece(&mut self, text: &str) {
        self.0.push_str(text);
    }

    pub(crate) fn string(&mut self, value: &str) -> Result<(), serde_json::Error> {
        json_string::push_quoted(&mut self.0, value)
    }

    fn optional_string(&mut self, value: Option<&str>) -> Result<(), serde_json::Error> {
        match value {
            Some(value) => self.string(value),
            None => {
                self.piece("null");
                Ok(())
            }
        }
    }

    fn number(&mut self, value: u64) {
        self.piece(itoa::Buffer::new().format(value));
    }

    fn signed(&mut self, value: i64) {
        self.piece(itoa::Buffer::new().format(value));
    }

    fn optional_number(&mut self, value: Option<u32>) {
        match value {
            Some(value) => self.number(u64::from(value)),
            None => self.piece("null"),
        }
    }

    /// A float: the defaults (`1.0`, `0.0`; not `-0.0`) as literals, any other by serde.
    fn float(&mut self, value: f64) -> Result<(), serde_json::Error> {
        if value.to_bits() == 1.0_f64.to_bits() {
            self.piece("1.0");
        } else if value.to_bits() == 0.0_f64.to_bits() {
            self.piece("0.0");
        } else {
            self.json(&value)?;
        }
        Ok(())
    }

    /// `text`: its format's tag without serde's map adapter for the plain formats, a JSON
    /// schema format by serde.
    fn text(&mut self, text: &TextConfig) -> Result<(), serde_json::Error> {
        self.piece("{");
        if let Some(format) = &text.format {
            self.piece("\"format\":");
            match format {
                TextFormat::Text(_) => self.piece("{\"type\":\"text\"}"),
                TextFormat::JsonObject(_) => self.piece("{\"type\":\"json_object\"}"),
                format => self.json(format)?,
            }
        }
        if let Some(verbosity) = &text.verbosity {
            if text.format.is_some() {
                self.piece(",");
            }
            self.piece("\"verbosity\":");
            self.json(verbosity)?;
        }
        self.piece("}");
        Ok(())
    }

    fn boolean(&mut self, value: bool) {
        self.piece(if value { "true" } else { "false" });
    }

    /// A list: `[]` when empty, else by serde.
    fn list<T: Serialize>(&mut self, items: &[T]) -> Result<(), serde_json::Error> {
        if items.is_empty() {
            self.piece("[]");
            Ok(())
        } else {
            self.json(items)
        }
    }

    /// The tools' echo: a function tool field by field (its schema's kept JSON copied,
    /// `written.rs`), any other tool by serde.
    fn tools(&mut self, tools: &[Tool]) -> Result<(), serde_json::Error> {
        self.piece("[");
        for (i, tool) in tools.iter().enumerate() {
            if i > 0 {
                self.piece(",");
            }
            self.tool(tool)?;
        }
        self.piece("]");
        Ok(())
    }

    /// One tool, as serde's derive writes it: `type` first, then the fields in their order,
    /// the absent ones left out.
    pub(crate) fn tool(&mut self, tool: &Tool) -> Result<(), serde_json::Error> {
        let Tool::Function(function) = tool else {
            return self.json(tool);
        };
        self.piece("{\"type\":\"function\",\"name\":");
        self.string(&function.name)?;
        self.present_string(",\"description\":", function.description.as_deref())?;
        if let Some(parameters) = &function.parameters {
            self.piece(",\"parameters\":");
            match parameters.json() {
                Some(json) => self.piece(json),
                None => self.json(parameters)?,
            }
        }
        if let Some(strict) = function.strict {
            self.piece(",\"strict\":");
            self.boolean(strict);
        }
        self.piece("}");
        Ok(())
    }

    /// An optional string field (`key` is its `,"name":` piece), left out when `None` (as
    /// serde's derive skips it).
    pub(crate) fn present_string(
        &mut self,
        key: &str,
        value: Option<&str>,
    ) -> Result<(), serde_json::Error> {
        if let Some(value) = value {
            self.piece(key);
            self.string(value)?;
        }
        Ok(())
    }

    /// An optional field of any other type, written by serde, left out when `None`.
    pub(crate) fn present_json<T: Serialize>(
        &mut self,
        key: &str,
        value: Option<&T>,
    ) -> Result<(), serde_json::Error> {
        if let Some(value) = value {
            self.piece(key);
            self.json(value)?;
        }
        Ok(())
    }

    /// Anything else, written by serde.
    pub(crate) fn json<T: Serialize + ?Sized>(
        &mut self,
        value: &T,
    ) -> Result<(), serde_json::Error> {
        json_string::push_serde(&mut self.0, value)
    }

    fn response(&mut self, r: &Response) -> Result<(), serde_json::Error> {
        self.piece("{\"id\":");
        self.string(&r.id)?;
        self.piece(",\"object\":");
        self.string(&r.object)?;
        self.piece(",\"created_at\":");
        self.signed(r.created_at);
        self.piece(",\"completed_at\":");
        match r.completed_at {
            Some(at) => self.signed(at),
            None => self.piece("null"),
        }
        self.piece(",\"status\":\"");
        self.piece(r.status.as_str());
        self.piece("\",\"model\":");
        self.string(&r.model)?;
        self.piece(",\"output\":[");
        for (index, item) in r.output.iter().enumerate() {
            if index > 0 {
                self.piece(",");
            }
            match item {
                OutputItem::Message(message) => self.message(message)?,
                other => self.json(other)?,
            }
        }
        self.piece("],\"usage\":");
        match &r.usage {
            Some(usage) => self.usage(usage)?,
            None => self.piece("null"),
        }
        self.piece(",\"error\":");
        match &r.error {
            Some(error) => self.json(error)?,
            None => self.piece("null"),
        }
        self.piece(",\"incomplete_details\":");
        match &r.incomplete_details {
            Some(details) => self.json(details)?,
            None => self.piece("null"),
        }
        self.piece(",\"instructions\":");
        self.optional_string(r.instructions.as_deref())?;
        self.piece(",\"max_output_tokens\":");
        self.optional_number(r.max_output_tokens);
        self.piece(",\"max_tool_calls\":");
        self.optional_number(r.max_tool_calls);
        self.piece(",\"max_steps\":");
        self.optional_number(r.max_steps);
        self.piece(",\"temperature\":");
        self.float(r.temperature)?;
        self.piece(",\"top_p\":");
        self.float(r.top_p)?;
        self.piece(",\"tool_choice\":");
        match &r.tool_choice {
            ToolChoice::Mode(mode) => self.piece(match mode {
                ToolChoiceMode::None => "\"none\"",
                ToolChoiceMode::Auto => "\"auto\"",
                ToolChoiceMode::Required => "\"required\"",
            }),
            choice => self.json(choice)?,
        }
        self.piece(",\"tools\":");
        self.tools(&r.tools)?;
        self.piece(",\"parallel_tool_calls\":");
        self.boolean(r.parallel_tool_calls);
        self.piece(",\"truncation\":");
        self.piece(match r.truncation {
            Truncation::Auto => "\"auto\"",
            Truncation::Disabled => "\"disabled\"",
        });
        self.piece(",\"background\":");
        self.boolean(r.background);
        self.piece(",\"store\":");
        self.boolean(r.store);
        self.piece(",\"service_tier\":");
        self.string(&r.service_tier)?;
        self.piece(",\"text\":");
        self.text(&r.text)?;
        self.piece(",\"metadata\":");
        if r.metadata.is_empty() {
            self.piece("{}");
        } else {
            self.json(&r.metadata)?;
        }
        self.piece(",\"previous_response_id\":");
        self.optional_string(r.previous_response_id.as_deref())?;
        self.present_json(",\"conversation\":", r.conversation.as_ref())?;
        self.piece(",\"prompt_cache_key\":");
        self.optional_string(r.prompt_cache_key.as_deref())?;
        self.present_json(
            ",\"prompt_cache_retention\":",
            r.prompt_cache_retention.as_ref(),
        )?;
        self.piece(",\"reasoning\":");
        match &r.reasoning {
            Some(reasoning) => self.json(reasoning)?,
            None => self.piece("null"),
        }
        self.present_string(",\"effort\":", r.effort.as_deref())?;
        self.present_string(",\"preset\":", r.preset.as_deref())?;
        self.present_string(",\"user\":", r.user.as_deref())?;
        self.piece(",\"safety_identifier\":");
        self.optional_string(r.safety_identifier.as_deref())?;
        self.piece(",\"frequency_penalty\":");
        self.float(r.frequency_penalty)?;
        self.piece(",\"presence_penalty\":");
        self.float(r.presence_penalty)?;
        self.piece(",\"top_logprobs\":");
        self.number(u64::from(r.top_logprobs));
        self.piece("}");
        Ok(())
    }

    /// An assistant message (`OutputItem::Message`: its tag first, then its fields).
    pub(crate) fn message(&mut self, message: &OutputMessage) -> Result<(), serde_json::Error> {
        self.piece("{\"type\":\"message\",\"id\":");
        self.string(&message.id)?;
        self.piece(",\"status\":\"");
        self.piece(match message.status {
            OutputStatus::InProgress => "in_progress",
            OutputStatus::Completed => "completed",
            OutputStatus::Incomplete => "incomplete",
            OutputStatus::Failed => "failed",
        });
        self.piece("\",\"role\":");
        self.string(&message.role)?;
        self.piece(",\"content\":[");
        for (index, part) in message.content.iter().enumerate() {
            if index > 0 {
                self.piece(",");
            }
            self.part(part)?;
        }
        self.piece("]");
        self.present_json(",\"phase\":", message.phase.as_ref())?;
        self.piece("}");
        Ok(())
    }

    /// A part of an assistant message's content (`OutputContent`: its tag first).
    pub(crate) fn part(&mut self, part: &OutputContent) -> Result<(), serde_json::Error> {
        let OutputContent::OutputText(part) = part;
        self.piece("{\"type\":\"output_text\",\"text\":");
        self.string(&part.text)?;
        self.piece(",\"annotations\":");
        self.list(&part.annotations)?;
        self.piece(",\"logprobs\":");
        self.list(&part.logprobs)?;
        self.piece("}");
        Ok(())
    }

    fn usage(&mut self, usage: &Usage) -> Result<(), serde_json::Error> {
        self.piece("{\"input_tokens\":");
        self.number(usage.input_tokens);
        self.piece(",\"output_tokens\":");
        self.number(usage.output_tokens);
        self.piece(",\"total_tokens\":");
        self.number(usage.total_tokens);
        let input = &usage.input_tokens_details;
        self.piece(",\"input_tokens_details\":{\"cached_tokens\":");
        self.number(input.cached_tokens);
        self.piece(",\"cache_creation_input_tokens\":");
        self.number(input.cache_creation_input_tokens);
        self.piece(",\"cache_read_input_tokens\":");
        self.number(input.cache_read_input_tokens);
        self.piece(",\"cache_write_tokens\":");
        self.number(input.cache_write_tokens);
        self.piece("},\"output_tokens_details\":{\"reasoning_tokens\":");
        self.number(usage.output_tokens_details.reasoning_tokens);
        self.piece("},\"tool_calls_details\":");
        if usage.tool_calls_details.is_empty() {
            self.piece("{}");
        } else {
            self.json(&usage.tool_calls_details)?;
        }
        self.present_json(",\"cost\":", usage.cost.as_ref())?;
        self.piece("}");
        Ok(())
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use serde_json::{Value, json};

    use crate::request::CreateRequest;
    use crate::response::Response;

    /// A response with every field at its plainest (`None`, empty, zero).
    fn plain() -> Value {
        json!({
            "id": "resp_1", "object": "response", "created_at": 1_700_000_000,
            "completed_at": null, "status": "in_progress", "model": "openai/gpt-5.4",
            "output": [], "usage": null, "error": null, "incomplete_details": null,
            "instructions": null, "max_output_tokens": null, "max_tool_calls": null,
            "max_steps": null, "temperature": 1.0, "top_p": 1.0, "tool_choice": "auto",
            "tools": [], "parallel_tool_calls": true, "truncation": "disabled",
            "background": false, "store": true, "service_tier": "default", "text": {},
            "metadata": {}, "previous_response_id": null, "prompt_cache_key": null,
            "reasoning": null, "safety_identifier": null, "frequency_penalty": 0.0,
            "presence_penalty": 0.0, "top_logprobs": 0
        })
    }

    fn response(changes: Value) -> Response {
        let mut value = plain();
        if let (Some(map), Value::Object(changes)) = (value.as_object_mut(), changes) {
            map.extend(changes);
        }
        serde_json::from_value(value).expect("a response")
    }

    fn check(response: &Response) {
        let expected = serde_json::to_string(response).expect("serde writes it");
        let written = response.to_json().expect("written");
        assert_eq!(written, expected);
    }

    /// Texts of every form a writer must escape as serde does (also the items' tests).
    pub(crate) const TEXTS: [&str; 6] = [
        "",
        "Paris.",
        "quote \" backslash \\ newline \n tab \t nul \u{0} bell \u{7}",
        "é 日本 🎉 \u{7f} \u{2028}",
        "</script>&<>'",
        "a long answer that goes on for more than one word of eight bytes, twice over",
    ];

    /// Each field's forms, one change at a time from the plainest response, are written as
    /// serde writes them.
    #[test]
    fn every_field_is_written_as_serde_writes_it() {
        check(&response(json!({})));
        let changes = [
            json!({"completed_at": 1_700_000_123, "status": "completed"}),
            json!({"created_at": -5, "completed_at": 0}),
            json!({"status": "failed", "error": {"message": "upstream \"down\"", "type": "server_error", "code": "upstream_error"}}),
            json!({"status": "failed", "error": {"message": "x"}}),
            json!({"status": "incomplete", "incomplete_details": {"reason": "max_output_tokens"}}),
            json!({"status": "queued"}),
            json!({"status": "cancelled"}),
            json!({"status": "requires_action"}),
            json!({"status": "cancelling"}),
            json!({"instructions": "Be \"brief\".\n", "max_output_tokens": 1024, "max_tool_calls": 0, "max_steps": 4_294_967_295_u32}),
            json!({"temperature": 0.7, "top_p": 0.95, "frequency_penalty": -2.0, "presence_penalty": 1e-7}),
            json!({"temperature": 1e21, "top_p": 0.1, "frequency_penalty": 2.0, "presence_penalty": -0.0}),
            json!({"tool_choice": "required", "parallel_tool_calls": false, "truncation": "auto"}),
            json!({"tool_choice": "none", "background": true, "store": false}),
            json!({"service_tier": "flex \u{1}", "metadata": {"a": "1", "b\"": "é\n"}}),
            json!({"previous_response_id": "resp_0", "conversation": {"id": "conv_1"}}),
            json!({"prompt_cache_key": "k", "prompt_cache_retention": "24h"}),
            json!({"prompt_cache_retention": "in-memory"}),
            json!({"reasoning": {"effort": "high", "summary": "auto"}, "effort": "high"}),
            json!({"reasoning": {}}),
            json!({"preset": "pro-search", "user": "u\"1", "safety_identifier": "s"}),
            json!({"top_logprobs": 20, "text": {"verbosity": "low"}}),
            json!({"text": {"format": {"type": "text"}}}),
            json!({"text": {"format": {"type": "json_object"}, "verbosity": "high"}}),
            json!({"text": {"format": {"type": "text"}, "verbosity": "medium"}}),
            json!({"text": {"format": {"type": "json_schema", "name": "a", "schema": {"type": "object"}}}}),
            json!({"temperature": 0.0, "top_p": 0.0, "frequency_penalty": 1.0, "presence_penalty": 1.0}),
            json!({"temperature": -0.0, "top_p": 1.0000000000000002, "frequency_penalty": 0.5}),
            json!({"id": "resp_\u{1f}", "object": "response", "model": "m\\n"}),
            json!({"usage": {"input_tokens": 12, "output_tokens": 64, "total_tokens": 76}}),
            json!({"usage": {"input_tokens": 1, "output_tokens": 2, "total_tokens": 3,
                "input_tokens_details": {"cached_tokens": 4, "cache_creation_input_tokens": 5,
                    "cache_read_input_tokens": 6, "cache_write_tokens": 7},
                "output_tokens_details": {"reasoning_tokens": 8},
                "tool_calls_details": {"search_web": {"invocation": 2, "cost_usd": 0.005},
                                       "fetch_url": {"invocation": 1}},
                "cost": {"currency": "USD", "input_cost": 0.1, "output_cost": 0.25, "total_cost": 0.35}}}),
        ];
        for change in changes {
            check(&response(change));
        }
    }

    /// Assistant messages (every text form, several parts, annotations, logprobs, each status
    /// and phase) and other output items among them are written as serde writes them.
    #[test]
    fn output_items_are_written_as_serde_writes_them() {
        for text in TEXTS {
            for status in ["in_progress", "completed", "incomplete", "failed"] {
                check(&response(json!({"output": [{
                    "type": "message", "id": "msg_1", "status": status, "role": "assistant",
                    "content": [{"type": "output_text", "text": text, "annotations": [], "logprobs": []}]
                }]})));
            }
        }
        check(&response(json!({"output": [
            {"type": "message", "id": "msg_1", "status": "completed", "role": "assistant",
             "phase": "commentary", "content": []},
            {"type": "function_call", "id": "fc_1", "call_id": "c1", "name": "f",
             "arguments": "{\"a\":1}", "status": "completed"},
            {"type": "message", "id": "msg_2", "status": "completed", "role": "assistant",
             "phase": "final_answer", "content": [
                {"type": "output_text", "text": "See [1].", "annotations": [
                    {"type": "url_citation", "url": "https://example.com/a?b=\"c\"", "title": "A",
                     "start_index": 4, "end_index": 7},
                    {"type": "url_citation", "url": "https://example.com", "start_index": 0, "end_index": 1}],
                 "logprobs": [{"token": "See", "logprob": -0.25, "bytes": [83, 101, 101], "top_logprobs": []}]},
                {"type": "output_text", "text": "Second part.", "annotations": [], "logprobs": []}
             ]},
            {"type": "search_results", "queries": ["q"], "results": []}
        ]})));
    }

    /// The initial response of a request that echoes tools, a JSON schema format and
    /// reasoning is written as serde writes it.
    #[test]
    fn a_requests_echo_is_written_as_serde_writes_it() {
        let request = CreateRequest::parse(
            br#"{"model":"openai/gpt-5.4","input":"hi","tools":[
                {"type":"function","name":"get_weather","description":"Weather \"now\"",
                 "parameters":{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]},"strict":true},
                {"type":"web_search"}],
              "text":{"format":{"type":"json_schema","name":"answer","schema":{"type":"object"},"strict":true}},
              "reasoning":{"effort":"low"},"tool_choice":{"type":"function","name":"get_weather"}}"#,
        )
        .expect("a request");
        let mut response = response(json!({}));
        response.tools = request.tools.unwrap_or_default();
        if let Some(text) = request.text {
            response.text = text;
        }
        response.reasoning = request.reasoning;
        if let Some(choice) = request.tool_choice {
            response.tool_choice = choice;
        }
        assert!(response.tools.len() == 2);
        check(&response);
    }

    /// Function tools of every form (each field present or absent, every text form, a
    /// schema), among other tools, are echoed as serde writes them, and the limits count
    /// each tool's size as serde writes it.
    #[test]
    fn every_form_of_tool_is_written_as_serde_writes_it() {
        let mut tools = vec![
            json!({"type": "function", "name": "f"}),
            json!({"type": "function", "name": "f", "strict": false}),
            json!({"type": "function", "name": "f", "parameters": {}, "strict": true}),
            json!({"type": "function", "name": "f", "parameters": {"type": "object",
                "properties": {"q\"": {"type": "string", "description": "é\n"}},
                "required": ["q\""], "additionalProperties": false}}),
            json!({"type": "web_search"}),
            json!({"type": "mcp", "server_label": "docs", "server_url": "https://example.com/mcp",
                "require_approval": "never", "allowed_tools": ["a", "b"]}),
            json!({"type": "sandbox"}),
        ];
        for text in TEXTS {
            tools.push(
                json!({"type": "function", "name": text, "description": text,
                "parameters": {"type": "object", "description": text}}),
            );
            tools.push(json!({"type": "function", "name": "g", "description": text}));
        }
        let body = json!({"model": "openai/gpt-5.4", "input": "hi", "tools": tools});
        let request = CreateRequest::parse(body.to_string().as_bytes()).expect("a request");
        let tools = request.tools.unwrap_or_default();
        assert_eq!(tools.len(), 7 + 2 * TEXTS.len());
        let mut total = 0;
        for tool in &tools {
            let serde = serde_json::to_string(tool).expect("serde writes it");
            assert_eq!(
                crate::limits::tools_json_size(std::slice::from_ref(tool)),
                serde.len(),
                "{serde}"
            );
            total += serde.len();
            let mut response = response(json!({}));
            response.tools = vec![tool.clone()];
            check(&response);
        }
        assert_eq!(crate::limits::tools_json_size(&tools), total);
        let mut response = response(json!({}));
        response.tools = tools;
        check(&response);
    }
}
