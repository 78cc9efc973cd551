//! Secret values a request's connectors lent to the sandbox (`sandbox_env`) are replaced by
//! [`MARKER`] in whatever the built-in tools hand back: progress events, output items
//! (`sandbox_results`), the text the model reads, shared files' names and text contents. So
//! a program that prints its `GH_TOKEN` shows the marker in the response, the event log, the
//! transcript and the store.

use protocol::events::EventData;
use secrecy::{ExposeSecret as _, SecretString};

use crate::hosted::{EventSink, FileSink, SharedFile, ToolOutcome};

/// What a lent value is replaced with.
pub(crate) const MARKER: &str = "[redacted: connector credential]";

/// The lent values, longest first (a value containing another is replaced whole).
#[derive(Clone, Default)]
pub(crate) struct Scrubber {
    values: Vec<SecretString>,
}

impl Scrubber {
    pub(crate) fn new(values: &[SecretString]) -> Scrubber {
        let mut values: Vec<SecretString> = values
            .iter()
            .filter(|v| !v.expose_secret().is_empty())
            .cloned()
            .collect();
        values.sort_by_key(|v| std::cmp::Reverse(v.expose_secret().len()));
        Scrubber { values }
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.values.is_empty()
    }

    pub(crate) fn text(&self, text: &str) -> String {
        let mut text = text.to_owned();
        for value in &self.values {
            if text.contains(value.expose_secret()) {
                text = text.replace(value.expose_secret(), MARKER);
            }
        }
        text
    }

    /// A serializable value, scrubbed through its JSON form (unchanged if that fails).
    fn value<T: serde::Serialize + serde::de::DeserializeOwned>(&self, value: T) -> T {
        let Ok(json) = serde_json::to_string(&value) else {
            return value;
        };
        let scrubbed = self.text(&json);
        if scrubbed == json {
            return value;
        }
        serde_json::from_str(&scrubbed).unwrap_or(value)
    }

    pub(crate) fn outcome(&self, mut outcome: ToolOutcome) -> ToolOutcome {
        if self.is_empty() {
            return outcome;
        }
        outcome.model_text = self.text(&outcome.model_text);
        outcome.items = outcome.items.into_iter().map(|i| self.value(i)).collect();
        outcome
    }
}

/// An event sink that scrubs before passing on.
pub(crate) struct ScrubEvents<'a> {
    pub(crate) inner: &'a dyn EventSink,
    pub(crate) scrubber: &'a Scrubber,
}

impl EventSink for ScrubEvents<'_> {
    fn emit(&self, event: EventData) {
        self.inner.emit(self.scrubber.value(event));
    }
}

/// A file sink that scrubs names and text contents before storing.
pub(crate) struct ScrubFiles<'a> {
    pub(crate) inner: &'a dyn FileSink,
    pub(crate) scrubber: &'a Scrubber,
}

#[async_trait::async_trait]
impl FileSink for ScrubFiles<'_> {
    async fn share(
        &self,
        filename: &str,
        content_type: &str,
        bytes: Vec<u8>,
    ) -> Result<SharedFile, String> {
        let bytes = match String::from_utf8(bytes) {
            Ok(text) => self.scrubber.text(&text).into_bytes(),
            Err(err) => err.into_bytes(),
        };
        self.inner
            .share(&self.scrubber.text(filename), content_type, bytes)
            .await
    }
}
