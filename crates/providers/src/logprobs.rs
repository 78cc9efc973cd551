//! OpenAI's logprob shape (Chat Completions `choices[].logprobs.content`, the Responses API's
//! `output_text.delta.logprobs`): `{token, logprob, bytes, top_logprobs}` per token.

use engine::model::{TokenLogprob, TopLogprob};
use serde::Deserialize;

/// `choices[].logprobs`: the logprobs of the content tokens of this chunk (or message).
#[derive(Debug, Clone, Default, Deserialize)]
pub(crate) struct Logprobs {
    #[serde(default)]
    pub(crate) content: Option<Vec<WireLogprob>>,
}

#[derive(Debug, Clone, Deserialize)]
pub(crate) struct WireLogprob {
    pub(crate) token: String,
    pub(crate) logprob: f64,
    #[serde(default)]
    pub(crate) bytes: Option<Vec<u8>>,
    #[serde(default)]
    pub(crate) top_logprobs: Vec<WireTopLogprob>,
}

#[derive(Debug, Clone, Deserialize)]
pub(crate) struct WireTopLogprob {
    pub(crate) token: String,
    pub(crate) logprob: f64,
    #[serde(default)]
    pub(crate) bytes: Option<Vec<u8>>,
}

impl Logprobs {
    /// The engine's form, `None` when there are none.
    pub(crate) fn into_tokens(self) -> Option<Vec<TokenLogprob>> {
        let tokens: Vec<TokenLogprob> = self
            .content?
            .into_iter()
            .map(|token| TokenLogprob {
                token: token.token,
                logprob: token.logprob,
                bytes: token.bytes.unwrap_or_default(),
                top_logprobs: token
                    .top_logprobs
                    .into_iter()
                    .map(|top| TopLogprob {
                        token: top.token,
                        logprob: top.logprob,
                        bytes: top.bytes.unwrap_or_default(),
                    })
                    .collect(),
            })
            .collect();
        (!tokens.is_empty()).then_some(tokens)
    }
}
