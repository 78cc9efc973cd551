//! Keeping secrets out of what the adapters hand out: the [`Redactor`] scrubs a provider's key
//! from error texts, and [`transport_error`] describes a failed request without its URL (a query
//! string may carry a key). Both the HTTP exchange (`http`) and the stream reader (`sse`) use
//! them.

use std::error::Error as _;

use engine::model::ModelError;

/// The shortest key the [`Redactor`] looks for.
const MIN_REDACTED_KEY: usize = 4;

/// Removes a provider's API key from any text that may reach a log, a client or a stored
/// response.
#[derive(Clone, Default)]
pub(crate) struct Redactor {
    key: Option<String>,
}

impl Redactor {
    /// Keys shorter than [`MIN_REDACTED_KEY`] are not searched for: replacing every "k" in a
    /// message would only garble it, and such a key protects nothing anyway.
    pub(crate) fn new(key: Option<&str>) -> Self {
        Redactor {
            key: key
                .filter(|key| key.chars().count() >= MIN_REDACTED_KEY)
                .map(str::to_owned),
        }
    }

    /// Replaces the key, and any partly masked echo of it (`sk-abcd****wxyz`, as OpenAI writes
    /// in its 401 message), with `[redacted]`.
    pub(crate) fn clean(&self, text: &str) -> String {
        let Some(key) = &self.key else {
            return text.to_owned();
        };
        let text = text.replace(key.as_str(), "[redacted]");
        let prefix: String = key.chars().take(4).collect();
        if key.chars().count() < 8 || !text.contains(prefix.as_str()) {
            return text;
        }
        // Rebuild word by word (whitespace kept) so a masked echo goes as a whole.
        let mut out = String::with_capacity(text.len());
        for word in text.split_inclusive(char::is_whitespace) {
            let bare = word.trim_end_matches(char::is_whitespace);
            if bare.contains(prefix.as_str()) && bare.contains("***") {
                out.push_str("[redacted]");
                out.push_str(&word[bare.len()..]);
            } else {
                out.push_str(word);
            }
        }
        out
    }

    /// The same error with the key scrubbed from its message.
    pub(crate) fn scrub(&self, err: ModelError) -> ModelError {
        match err {
            ModelError::Upstream { status, message } => ModelError::Upstream {
                status,
                message: self.clean(&message),
            },
            ModelError::Transport(message) => ModelError::Transport(self.clean(&message)),
            ModelError::Protocol(message) => ModelError::Protocol(self.clean(&message)),
            ModelError::Timeout => ModelError::Timeout,
        }
    }
}

/// Describes a failed request without its URL (a query string may hold a key) and with the
/// useful cause from deep in the error chain ("Connection refused", "dns error: …").
pub(crate) fn transport_error(err: reqwest::Error) -> ModelError {
    let err = err.without_url();
    if err.is_timeout() {
        return ModelError::Timeout;
    }
    let top = if err.is_connect() {
        "could not connect".to_owned()
    } else if err.is_body() || err.is_decode() {
        "the response body broke off".to_owned()
    } else {
        // "error sending request" and the like (the URL is stripped above).
        err.to_string()
    };
    let mut parts = vec![top];
    causes(err.source(), &mut parts);
    ModelError::Transport(parts.join(": "))
}

/// `top`, then the texts of `err` and its causes, each once (hyper, hyper-util and reqwest
/// wrap the same cause in several layers): "could not connect: Connection refused (os error
/// 111)". For errors that carry no URL (the in-task client's, or reqwest's once stripped).
pub(crate) fn describe(top: &str, err: &(dyn std::error::Error + 'static)) -> String {
    let mut parts = vec![top.to_owned()];
    causes(Some(err), &mut parts);
    parts.join(": ")
}

fn causes(mut source: Option<&(dyn std::error::Error + 'static)>, parts: &mut Vec<String>) {
    while let Some(cause) = source {
        let text = cause.to_string();
        if !text.is_empty() && !parts.iter().any(|part| part.contains(&text)) {
            parts.push(text);
        }
        source = cause.source();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn redactor_removes_the_key_and_masked_echoes() {
        let redactor = Redactor::new(Some("sk-secret-test"));
        assert_eq!(
            redactor.clean("Incorrect API key provided: sk-secret-test."),
            "Incorrect API key provided: [redacted]."
        );
        assert_eq!(
            redactor.clean("Incorrect API key provided: sk-s******test. You can find it"),
            "Incorrect API key provided: [redacted] You can find it"
        );
        assert_eq!(redactor.clean("nothing here"), "nothing here");
    }

    #[test]
    fn redactor_without_key_is_identity() {
        assert_eq!(Redactor::new(None).clean("a sk-***"), "a sk-***");
        assert_eq!(Redactor::new(Some("")).clean("text"), "text");
        assert_eq!(Redactor::new(Some("k")).clean("unknown"), "unknown");
    }
}
