//! Plain configuration data, as the server passes it in: which providers exist
//! ([`ProviderConfig`], [`WireApi`]), the operator contract's environment shortcuts
//! ([`env_shortcuts`], a pure function over a lookup so tests pass a map), the upstream HTTP
//! client's timeouts and retries ([`ClientOptions`]) and how upstream model lists are cached
//! ([`ModelListSettings`]).
//!
//! Nothing here builds a client: [`Registry`](crate::Registry) does, from these values.

use std::collections::BTreeSet;
use std::fmt;
use std::str::FromStr;
use std::time::Duration;

use crate::ProvidersError;

/// The upstream wire API a provider speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum WireApi {
    /// OpenAI Chat Completions (`{base}/chat/completions`).
    ChatCompletions,
    /// OpenAI Responses (`{base}/responses`). Not implemented yet.
    Responses,
    /// Anthropic Messages (`{base}/v1/messages`). Not implemented yet.
    AnthropicMessages,
    /// Google Gemini generateContent. Not implemented yet.
    Gemini,
}

impl WireApi {
    /// The name used in the config file (`api = "…"`).
    pub fn as_str(self) -> &'static str {
        match self {
            WireApi::ChatCompletions => "chat_completions",
            WireApi::Responses => "responses",
            WireApi::AnthropicMessages => "anthropic_messages",
            WireApi::Gemini => "gemini",
        }
    }
}

impl fmt::Display for WireApi {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for WireApi {
    type Err = ProvidersError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "chat_completions" => Ok(WireApi::ChatCompletions),
            "responses" => Ok(WireApi::Responses),
            "anthropic_messages" => Ok(WireApi::AnthropicMessages),
            "gemini" => Ok(WireApi::Gemini),
            other => Err(ProvidersError::UnknownWireApi(other.to_owned())),
        }
    }
}

/// One configured provider (plain data; `Debug` never shows the key).
#[derive(Clone, PartialEq, Eq)]
pub struct ProviderConfig {
    /// The `provider` part of model ids: letters, digits, `-`, `_`, `.`.
    pub name: String,
    pub api: WireApi,
    /// As the provider's official SDK means it; the adapter appends the wire path.
    pub base_url: String,
    /// `None` (or empty) for servers that need no key, such as a local vLLM or Ollama.
    pub api_key: Option<String>,
    /// Upstream model names advertised on `GET /v1/models` as `name/model`, before what the
    /// upstream's own list adds; may be empty (any model name is still accepted and sent
    /// upstream). Whether the upstream is asked for its list is a [`ModelListSettings`] matter
    /// (`disabled`), set on the [`Registry`](crate::Registry).
    pub models: Vec<String>,
}

impl fmt::Debug for ProviderConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ProviderConfig")
            .field("name", &self.name)
            .field("api", &self.api)
            .field("base_url", &self.base_url)
            .field("api_key", &self.api_key.as_ref().map(|_| "[redacted]"))
            .field("models", &self.models)
            .finish()
    }
}

/// One row of the operator contract's environment table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EnvShortcut {
    pub provider: &'static str,
    /// The variable holding the API key (`OPENAI_API_KEY`).
    pub key_var: &'static str,
    /// The optional variable overriding the base URL (`OPENAI_BASE_URL`).
    pub base_url_var: &'static str,
    pub default_base_url: &'static str,
    pub api: WireApi,
}

/// The providers that environment variables alone can register, in the contract's order.
pub const ENV_SHORTCUTS: [EnvShortcut; 5] = [
    EnvShortcut {
        provider: "openai",
        key_var: "OPENAI_API_KEY",
        base_url_var: "OPENAI_BASE_URL",
        default_base_url: "https://api.openai.com/v1",
        api: WireApi::ChatCompletions,
    },
    EnvShortcut {
        provider: "anthropic",
        key_var: "ANTHROPIC_API_KEY",
        base_url_var: "ANTHROPIC_BASE_URL",
        default_base_url: "https://api.anthropic.com",
        api: WireApi::AnthropicMessages,
    },
    EnvShortcut {
        provider: "google",
        key_var: "GEMINI_API_KEY",
        base_url_var: "GEMINI_BASE_URL",
        default_base_url: "https://generativelanguage.googleapis.com",
        api: WireApi::Gemini,
    },
    EnvShortcut {
        provider: "xai",
        key_var: "XAI_API_KEY",
        base_url_var: "XAI_BASE_URL",
        default_base_url: "https://api.x.ai/v1",
        api: WireApi::ChatCompletions,
    },
    EnvShortcut {
        provider: "perplexity",
        key_var: "PERPLEXITY_API_KEY",
        base_url_var: "PERPLEXITY_BASE_URL",
        default_base_url: "https://api.perplexity.ai",
        api: WireApi::ChatCompletions,
    },
];

/// The shortcut row of a built-in provider name, if it is one of the five.
pub fn env_shortcut(provider: &str) -> Option<&'static EnvShortcut> {
    ENV_SHORTCUTS.iter().find(|row| row.provider == provider)
}

/// The providers the environment registers, per the operator contract.
///
/// A provider is registered when its key variable is set, or when only its base URL variable is
/// set: a local OpenAI-compatible server (`OPENAI_BASE_URL=http://127.0.0.1:11434/v1`) needs no
/// key. Values are trimmed; an empty value counts as unset. `models` is left empty.
pub fn env_shortcuts(env: &dyn Fn(&str) -> Option<String>) -> Vec<ProviderConfig> {
    let get = |name: &str| {
        env(name)
            .map(|value| value.trim().to_owned())
            .filter(|value| !value.is_empty())
    };
    ENV_SHORTCUTS
        .iter()
        .filter_map(|row| {
            let api_key = get(row.key_var);
            let base_url = get(row.base_url_var);
            if api_key.is_none() && base_url.is_none() {
                return None;
            }
            Some(ProviderConfig {
                name: row.provider.to_owned(),
                api: row.api,
                base_url: base_url.unwrap_or_else(|| row.default_base_url.to_owned()),
                api_key,
                models: Vec::new(),
            })
        })
        .collect()
}

/// Timeouts and retries of the upstream HTTP client (one set per provider).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ClientOptions {
    /// Bound on establishing the TCP (and TLS) connection.
    pub connect_timeout: Duration,
    /// Bound on any silence of the upstream: waiting for the response head, and then the time
    /// between two chunks of the body. Reasoning models can think for minutes before the first
    /// token, hence the generous default.
    pub idle_timeout: Duration,
    /// How many times a turn is sent again after a retryable failure before any answer was
    /// accepted: HTTP 408, 409, 429, 500, 502, 503, 504 and 529, or a failed connection. A
    /// stream that breaks after it started is never sent again (its deltas went out already).
    pub max_retries: u32,
    /// The first back-off when the upstream does not say how long to wait; it doubles on each
    /// retry (with jitter), up to [`MAX_BACKOFF`].
    pub retry_base_delay: Duration,
    /// The longest `retry-after` we wait for; an upstream asking for longer gets its error
    /// returned at once (the models chain may move on to its next model).
    pub max_retry_after: Duration,
    /// Idle keep-alive connections kept per upstream host for later turns; a connection that
    /// becomes idle beyond this is closed at once. Each idle HTTP/1.1 connection holds about
    /// 26 KiB (hyper's 8 KiB read and write buffers and its request channel), and unbounded (the
    /// HTTP client's default) a spike of N concurrent streams left N of them open until the
    /// pool's idle timeout (90 s, checked every 90 s): 10,000 streams kept ~260 MiB for up
    /// to three minutes (docs/benchmarks.md, "Issue 18, third pass: memory after a spike").
    pub max_idle_connections: usize,
    /// How long a keep-alive connection may stay idle in the pool before it is closed (as
    /// reqwest's default: 90 s). Servers close idle connections themselves after a while
    /// (uvicorn, which vLLM runs on, after 5 s; Go's servers, Ollama's, never by default): a
    /// connection the server closed is noticed at checkout, and this bounds how long the
    /// descriptors of a past spike stay open.
    pub pool_idle_timeout: Duration,
}

impl Default for ClientOptions {
    fn default() -> Self {
        ClientOptions {
            connect_timeout: Duration::from_secs(10),
            idle_timeout: Duration::from_secs(300),
            max_retries: 2,
            retry_base_delay: Duration::from_millis(500),
            max_retry_after: Duration::from_secs(30),
            max_idle_connections: DEFAULT_MAX_IDLE_CONNECTIONS,
            pool_idle_timeout: Duration::from_secs(90),
        }
    }
}

/// Default of [`ClientOptions::max_idle_connections`]: more than a busy server's concurrent turns
/// to one upstream (so steady load reuses its connections rather than reconnecting), about
/// 26 MiB when all are idle.
pub const DEFAULT_MAX_IDLE_CONNECTIONS: usize = 1024;

/// The longest computed back-off between two attempts.
pub const MAX_BACKOFF: Duration = Duration::from_secs(8);

/// How long an upstream's model list is served from the cache by default.
pub const DEFAULT_MODEL_LIST_TTL: Duration = Duration::from_secs(10 * 60);
/// How long the configured models are served after a failed listing by default, before the
/// upstream is asked again.
pub const DEFAULT_MODEL_LIST_RETRY: Duration = Duration::from_secs(30);
/// The default bound on one list request (connection, head and body).
pub const DEFAULT_MODEL_LIST_TIMEOUT: Duration = Duration::from_secs(5);

/// How the registry lists upstream models (independent of the turns' [`ClientOptions`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ModelListSettings {
    /// How long a fetched list is served without asking the upstream again.
    pub ttl: Duration,
    /// After a failed listing, how long the configured models alone are served before the
    /// upstream is asked again (so that a down upstream is not asked on every request).
    pub retry_after: Duration,
    /// Bound on each list request.
    pub request_timeout: Duration,
    /// Providers whose upstream is never asked (config `list_models = false`): only their
    /// configured models are listed.
    pub disabled: BTreeSet<String>,
}

impl Default for ModelListSettings {
    fn default() -> Self {
        ModelListSettings {
            ttl: DEFAULT_MODEL_LIST_TTL,
            retry_after: DEFAULT_MODEL_LIST_RETRY,
            request_timeout: DEFAULT_MODEL_LIST_TIMEOUT,
            disabled: BTreeSet::new(),
        }
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use super::*;

    fn env(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
        let map: HashMap<String, String> = pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect();
        move |name| map.get(name).cloned()
    }

    #[test]
    fn wire_api_names_round_trip() {
        for api in [
            WireApi::ChatCompletions,
            WireApi::Responses,
            WireApi::AnthropicMessages,
            WireApi::Gemini,
        ] {
            assert_eq!(api.as_str().parse::<WireApi>().ok(), Some(api));
        }
        assert!(matches!(
            "openai".parse::<WireApi>(),
            Err(ProvidersError::UnknownWireApi(_))
        ));
    }

    #[test]
    fn debug_hides_the_key() {
        let config = ProviderConfig {
            name: "openai".into(),
            api: WireApi::ChatCompletions,
            base_url: "https://api.openai.com/v1".into(),
            api_key: Some("sk-secret-test".into()),
            models: vec![],
        };
        let text = format!("{config:?}");
        assert!(!text.contains("sk-secret-test"), "{text}");
        assert!(text.contains("[redacted]"), "{text}");
    }

    #[test]
    fn shortcuts_cover_the_contract_table() {
        let all = env(&[
            ("OPENAI_API_KEY", "k1"),
            ("ANTHROPIC_API_KEY", "k2"),
            ("GEMINI_API_KEY", "k3"),
            ("XAI_API_KEY", "k4"),
            ("PERPLEXITY_API_KEY", "k5"),
        ]);
        let got: Vec<_> = env_shortcuts(&all)
            .into_iter()
            .map(|p| (p.name, p.api, p.base_url, p.api_key))
            .collect();
        let row = |name: &str, api, base: &str, key: &str| {
            (name.to_owned(), api, base.to_owned(), Some(key.to_owned()))
        };
        assert_eq!(
            got,
            vec![
                row(
                    "openai",
                    WireApi::ChatCompletions,
                    "https://api.openai.com/v1",
                    "k1"
                ),
                row(
                    "anthropic",
                    WireApi::AnthropicMessages,
                    "https://api.anthropic.com",
                    "k2"
                ),
                row(
                    "google",
                    WireApi::Gemini,
                    "https://generativelanguage.googleapis.com",
                    "k3"
                ),
                row("xai", WireApi::ChatCompletions, "https://api.x.ai/v1", "k4"),
                row(
                    "perplexity",
                    WireApi::ChatCompletions,
                    "https://api.perplexity.ai",
                    "k5"
                ),
            ]
        );
    }

    #[test]
    fn a_base_url_alone_registers_a_keyless_provider() {
        let providers = env_shortcuts(&env(&[("OPENAI_BASE_URL", "http://127.0.0.1:11434/v1")]));
        assert_eq!(
            providers,
            vec![ProviderConfig {
                name: "openai".into(),
                api: WireApi::ChatCompletions,
                base_url: "http://127.0.0.1:11434/v1".into(),
                api_key: None,
                models: vec![],
            }]
        );
    }

    #[test]
    fn empty_values_count_as_unset() {
        assert!(env_shortcuts(&env(&[])).is_empty());
        assert!(env_shortcuts(&env(&[("OPENAI_API_KEY", ""), ("XAI_BASE_URL", "  ")])).is_empty());
        let providers = env_shortcuts(&env(&[("XAI_API_KEY", " k \n"), ("XAI_BASE_URL", "")]));
        assert_eq!(providers.len(), 1);
        assert_eq!(providers[0].base_url, "https://api.x.ai/v1");
        assert_eq!(providers[0].api_key.as_deref(), Some("k"));
    }
}
