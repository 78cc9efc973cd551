//! The `compaction` item's content: agentd's summary of a conversation, base64 in the item's
//! `encrypted_content` (not encrypted: it is the caller's own conversation; opaque so that
//! clients pass it back as they got it), and the message the model is sent in its place.

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;

use crate::model::{ContentPart, ModelMessage};

/// The version prefix of agentd's compaction content.
const PREFIX: &str = "agentd.summary.v1.";

/// The `encrypted_content` of a summary.
pub(crate) fn encode(summary: &str) -> String {
    format!("{PREFIX}{}", STANDARD.encode(summary.as_bytes()))
}

/// The summary inside a compaction item's content; `None` when it is not agentd's.
pub(crate) fn decode(content: &str) -> Option<String> {
    let bytes = STANDARD.decode(content.strip_prefix(PREFIX)?).ok()?;
    String::from_utf8(bytes).ok()
}

/// What the model is sent where a compaction item stands: the summary as a user message (every
/// upstream takes one anywhere in a conversation; a system message it may not).
pub(crate) fn summary_message(summary: &str) -> ModelMessage {
    ModelMessage::User {
        content: vec![ContentPart::Text {
            text: format!("Summary of the conversation so far:\n\n{summary}"),
        }],
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn summaries_round_trip_and_foreign_content_is_refused() {
        let content = encode("Ada asked about Paris. ✓");
        assert_eq!(
            decode(&content).as_deref(),
            Some("Ada asked about Paris. ✓")
        );
        assert_eq!(decode("gAAAAABpM0Yj-...="), None);
        assert_eq!(decode("agentd.summary.v1.%%%"), None);
    }
}
