//! Which providers exist, and the [`Registry`] that maps `provider/model` ids to their clients.
//!
//! Configuration arrives as plain data ([`ProviderConfig`]): the server reads the config file and
//! the environment and passes the values in. [`env_shortcuts`] is the one place that knows the
//! operator contract's environment table, as a pure function over a lookup so tests pass a map.
//!
//! `GET /v1/models` lists each provider's configured models, then what its upstream lists
//! ([`crate::models`]), cached per provider ([`ModelListSettings`]).

use std::collections::{HashMap, HashSet};
use std::fmt;
use std::str::FromStr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use engine::model::{ModelClient, ModelInfo, ModelRouter, ResolveError, ResolvedModel};

use crate::ProvidersError;
use crate::chat_completions::ChatCompletionsClient;
use crate::http::{self, ClientOptions};
use crate::models::{ModelListSettings, UpstreamModels};

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
    /// (`disabled`), set on the [`Registry`].
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

/// Maps `provider/model` ids to model clients: the engine's [`ModelRouter`].
///
/// Built once at start-up; each provider gets one client (one pooled HTTP client) for the life of
/// the process. Model listing shares one more HTTP client between the providers.
pub struct Registry {
    /// In configuration order, so `GET /v1/models` lists them as the operator wrote them.
    providers: Vec<Provider>,
    /// Provider name to its index in `providers`.
    by_name: HashMap<String, usize>,
    /// Cache lifetimes and the request bound of upstream model lists.
    lists: ModelListSettings,
}

struct Provider {
    name: String,
    models: Vec<String>,
    client: Arc<dyn ModelClient>,
    /// The upstream's model-list endpoint.
    upstream_models: UpstreamModels,
    /// Whether the upstream is asked for its list (`list_models`, default true).
    listed: bool,
    /// The last listing. Held across a fetch, so one fetch at a time per provider: requests
    /// that arrive meanwhile wait for it and use its result.
    cache: tokio::sync::Mutex<Listing>,
}

/// What the last listing of one upstream gave.
enum Listing {
    /// Not asked yet.
    Never,
    /// Listed; served until `until` (`None`: the TTL is too long to count).
    Listed {
        models: Arc<[String]>,
        until: Option<Instant>,
    },
    /// Failed; until `until`, the last good list (`stale`, empty if there never was one) is
    /// served beside the configured models.
    Failed {
        until: Option<Instant>,
        stale: Arc<[String]>,
    },
}

impl fmt::Debug for Registry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list()
            .entries(self.providers.iter().map(|provider| &provider.name))
            .finish()
    }
}

impl Registry {
    /// Builds one client per provider with the default timeouts.
    pub fn new(providers: Vec<ProviderConfig>) -> Result<Registry, ProvidersError> {
        Registry::with_options(providers, &ClientOptions::default())
    }

    /// Builds one client per provider with the given timeouts.
    pub fn with_options(
        providers: Vec<ProviderConfig>,
        options: &ClientOptions,
    ) -> Result<Registry, ProvidersError> {
        Registry::with_provider_options(providers, options, &HashMap::new())
    }

    /// Builds one client per provider with `options`, or the provider's own entry of
    /// `per_provider` (by name) where it has one.
    pub fn with_provider_options(
        providers: Vec<ProviderConfig>,
        options: &ClientOptions,
        per_provider: &HashMap<String, ClientOptions>,
    ) -> Result<Registry, ProvidersError> {
        let default_options = options;
        let mut registry = Registry {
            providers: Vec::with_capacity(providers.len()),
            by_name: HashMap::with_capacity(providers.len()),
            lists: ModelListSettings::default(),
        };
        let list_http = http::build_client(options)?;
        for config in providers {
            if !valid_name(&config.name) {
                return Err(ProvidersError::InvalidProviderName(config.name));
            }
            if registry.by_name.contains_key(&config.name) {
                return Err(ProvidersError::DuplicateProvider(config.name));
            }
            let options = per_provider.get(&config.name).unwrap_or(default_options);
            let client: Arc<dyn ModelClient> = match config.api {
                WireApi::ChatCompletions => Arc::new(ChatCompletionsClient::new(&config, options)?),
                WireApi::AnthropicMessages => {
                    Arc::new(crate::anthropic::AnthropicClient::new(&config, options)?)
                }
                WireApi::Gemini => Arc::new(crate::gemini::GeminiClient::new(&config, options)?),
                WireApi::Responses => {
                    Arc::new(crate::responses::ResponsesClient::new(&config, options)?)
                }
            };
            let upstream_models = UpstreamModels::with_client(&config, list_http.clone())?;
            registry
                .by_name
                .insert(config.name.clone(), registry.providers.len());
            registry.providers.push(Provider {
                name: config.name,
                models: config.models,
                client,
                upstream_models,
                listed: true,
                cache: tokio::sync::Mutex::new(Listing::Never),
            });
        }
        Ok(registry)
    }

    /// Sets how upstream model lists are cached and bounded, and which providers are never
    /// asked (names that are not providers are ignored).
    #[must_use]
    pub fn with_model_lists(mut self, settings: ModelListSettings) -> Registry {
        for provider in &mut self.providers {
            provider.listed = !settings.disabled.contains(&provider.name);
        }
        self.lists = settings;
        self
    }

    /// Sets only how long an upstream's model list is served from the cache.
    #[must_use]
    pub fn with_model_list_ttl(mut self, ttl: Duration) -> Registry {
        self.lists.ttl = ttl;
        self
    }

    /// The upstream's models of `provider`: from the cache while it is fresh, else asked (one
    /// fetch at a time per provider). When the upstream fails, the last good list (empty if
    /// none) until the upstream is asked again after `retry_after`, not on every request.
    async fn upstream_models(&self, provider: &Provider) -> Arc<[String]> {
        if !provider.listed {
            return Arc::from(Vec::new());
        }
        let mut cache = provider.cache.lock().await;
        let fresh = |until: &Option<Instant>| until.is_none_or(|until| Instant::now() < until);
        match &*cache {
            Listing::Listed { models, until } if fresh(until) => return Arc::clone(models),
            Listing::Failed { until, stale } if fresh(until) => return Arc::clone(stale),
            _ => {}
        }
        match provider
            .upstream_models
            .fetch(self.lists.request_timeout)
            .await
        {
            Ok(models) => {
                let models: Arc<[String]> = Arc::from(models);
                *cache = Listing::Listed {
                    models: Arc::clone(&models),
                    until: Instant::now().checked_add(self.lists.ttl),
                };
                models
            }
            Err(err) => {
                tracing::warn!(
                    provider = %provider.name,
                    url = %provider.upstream_models.url_for_logs(),
                    error = %err,
                    retry_in_s = self.lists.retry_after.as_secs(),
                    "could not list the upstream's models; GET /v1/models lists the configured ones"
                );
                // A list that was good a moment ago beats none: keep serving it.
                let stale = match &*cache {
                    Listing::Listed { models, .. } | Listing::Failed { stale: models, .. } => {
                        Arc::clone(models)
                    }
                    Listing::Never => Arc::from(Vec::new()),
                };
                *cache = Listing::Failed {
                    until: Instant::now().checked_add(self.lists.retry_after),
                    stale: Arc::clone(&stale),
                };
                stale
            }
        }
    }

    /// The configured provider names, in order (for the start-up log).
    pub fn provider_names(&self) -> impl Iterator<Item = &str> {
        self.providers.iter().map(|provider| provider.name.as_str())
    }
}

#[async_trait::async_trait]
impl ModelRouter for Registry {
    fn resolve(&self, model_id: &str) -> Result<ResolvedModel, ResolveError> {
        let Some((provider, upstream_model)) = model_id
            .split_once('/')
            .filter(|(provider, model)| !provider.is_empty() && !model.is_empty())
        else {
            return Err(ResolveError::Malformed(model_id.to_owned()));
        };
        let Some(&index) = self.by_name.get(provider) else {
            let hint = match env_shortcut(provider) {
                Some(row) => format!("set {}", row.key_var),
                None => format!("add [providers.{provider}] to the config file"),
            };
            return Err(ResolveError::NotConfigured {
                provider: provider.to_owned(),
                hint,
            });
        };
        Ok(ResolvedModel {
            client: Arc::clone(&self.providers[index].client),
            upstream_model: upstream_model.to_owned(),
        })
    }

    /// Each provider in configuration order: its configured models, then the ones its upstream
    /// lists that are not among them. The upstreams are asked concurrently.
    async fn list_models(&self) -> Vec<ModelInfo> {
        let upstream = futures::future::join_all(
            self.providers
                .iter()
                .map(|provider| self.upstream_models(provider)),
        )
        .await;
        let mut list = Vec::new();
        for (provider, upstream) in self.providers.iter().zip(upstream) {
            let mut seen = HashSet::new();
            for model in provider.models.iter().chain(upstream.iter()) {
                if seen.insert(model.as_str()) {
                    list.push(ModelInfo {
                        id: format!("{}/{model}", provider.name),
                        owned_by: provider.name.clone(),
                    });
                }
            }
        }
        list
    }
}

fn valid_name(name: &str) -> bool {
    !name.is_empty()
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
}

#[cfg(test)]
mod tests {
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

    #[test]
    fn names_are_checked() {
        for bad in ["", "a/b", "a b", "ü"] {
            let result = Registry::new(vec![ProviderConfig {
                name: bad.into(),
                api: WireApi::Gemini,
                base_url: String::new(),
                api_key: None,
                models: vec![],
            }]);
            assert!(
                matches!(result, Err(ProvidersError::InvalidProviderName(_))),
                "{bad:?}"
            );
        }
    }
}
