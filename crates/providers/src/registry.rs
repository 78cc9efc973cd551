//! The [`Registry`] that maps `provider/model` ids to their clients: it builds one adapter per
//! configured provider (from the plain data of [`crate::config`]) and routes each model id to it.
//!
//! `GET /v1/models` lists each provider's configured models, then what its upstream lists
//! ([`crate::models`]), cached per provider ([`ModelListSettings`]).

use std::collections::{HashMap, HashSet};
use std::fmt;
use std::sync::Arc;
use std::time::{Duration, Instant};

use engine::model::{ModelClient, ModelInfo, ModelRouter, ResolveError, ResolvedModel};

use crate::ProvidersError;
use crate::anthropic::AnthropicClient;
use crate::chat_completions::ChatCompletionsClient;
use crate::config::{ClientOptions, ModelListSettings, ProviderConfig, WireApi, env_shortcut};
use crate::gemini::GeminiClient;
use crate::http;
use crate::models::UpstreamModels;
use crate::responses::ResponsesClient;

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
                WireApi::AnthropicMessages => Arc::new(AnthropicClient::new(&config, options)?),
                WireApi::Gemini => Arc::new(GeminiClient::new(&config, options)?),
                WireApi::Responses => Arc::new(ResponsesClient::new(&config, options)?),
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
