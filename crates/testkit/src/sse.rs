//! SSE transcripts: parse a stream body and check the invariants of design.md §7 on it.

#![expect(clippy::expect_used, clippy::panic, reason = "test utility")]

use serde_json::Value;

/// A parsed SSE stream.
#[derive(Debug, Clone)]
pub struct Transcript {
    /// The raw body.
    pub raw: String,
    /// Each `data:` frame's JSON, in order.
    pub events: Vec<Value>,
    /// Comment lines (keep-alives) seen.
    pub comments: usize,
}

impl Transcript {
    /// Parses `data:`-only frames; panics on `event:` lines or a `[DONE]` marker, which agentd
    /// never sends (spec §7.1).
    pub fn parse(raw: &str) -> Transcript {
        let mut events = Vec::new();
        let mut comments = 0;
        for frame in raw.split("\n\n") {
            let mut data = String::new();
            for line in frame.lines() {
                if line.is_empty() {
                    continue;
                }
                if line.starts_with(':') {
                    comments += 1;
                } else if let Some(rest) = line.strip_prefix("data:") {
                    if !data.is_empty() {
                        data.push('\n');
                    }
                    data.push_str(rest.strip_prefix(' ').unwrap_or(rest));
                } else {
                    panic!("unexpected SSE line {line:?} in {raw}");
                }
            }
            if data.is_empty() {
                continue;
            }
            assert_ne!(data, "[DONE]", "agentd sends no [DONE] marker");
            events.push(serde_json::from_str(&data).expect("frame is one JSON document"));
        }
        Transcript {
            raw: raw.to_owned(),
            events,
            comments,
        }
    }

    /// The `type` of every event.
    pub fn types(&self) -> Vec<String> {
        self.events
            .iter()
            .map(|e| e["type"].as_str().unwrap_or_default().to_owned())
            .collect()
    }

    /// The last event (the terminal one).
    pub fn terminal(&self) -> &Value {
        self.events.last().expect("stream has events")
    }

    /// The concatenated `output_text.delta`s of one item.
    pub fn text_of(&self, item_id: &str) -> String {
        self.events
            .iter()
            .filter(|e| e["type"] == "response.output_text.delta" && e["item_id"] == item_id)
            .map(|e| e["delta"].as_str().unwrap_or_default())
            .collect()
    }

    /// design.md §7: first event `response.created`, strictly increasing `sequence_number`,
    /// one response id, exactly one terminal event (last), deltas add up to the text.
    pub fn assert_invariants(&self) {
        assert!(!self.events.is_empty(), "empty stream");
        assert_eq!(self.events[0]["type"], "response.created", "first event");
        let mut last: Option<u64> = None;
        for event in &self.events {
            let seq = event["sequence_number"]
                .as_u64()
                .expect("every event has a sequence_number");
            if let Some(prev) = last {
                assert!(
                    seq > prev,
                    "sequence numbers must increase: {prev} then {seq}"
                );
            }
            last = Some(seq);
        }
        let ids: std::collections::BTreeSet<&str> = self
            .events
            .iter()
            .filter_map(|e| e["response"]["id"].as_str())
            .collect();
        assert_eq!(ids.len(), 1, "one response id per stream: {ids:?}");
        let terminal = [
            "response.completed",
            "response.failed",
            "response.incomplete",
            "response.cancelled",
        ];
        let terminals = self
            .events
            .iter()
            .filter(|e| terminal.contains(&e["type"].as_str().unwrap_or_default()))
            .count();
        assert_eq!(terminals, 1, "exactly one terminal event");
        assert!(
            terminal.contains(&self.terminal()["type"].as_str().unwrap_or_default()),
            "the terminal event is last"
        );
        for done in self
            .events
            .iter()
            .filter(|e| e["type"] == "response.output_text.done")
        {
            let item_id = done["item_id"].as_str().expect("item_id");
            assert_eq!(
                self.text_of(item_id),
                done["text"].as_str().expect("text"),
                "deltas add up to the text"
            );
        }
    }
}
