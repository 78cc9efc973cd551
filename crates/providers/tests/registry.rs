//! The registry: environment shortcuts, resolving model ids, listing models.

use std::collections::HashMap;

use agentd_providers::{
    ModelListSettings, ProviderConfig, ProvidersError, Registry, WireApi, env_shortcuts,
};
use engine::model::{
    ContentPart, ModelEvent, ModelInfo, ModelMessage, ModelRequest, ModelRouter, ResolveError,
};
use futures::StreamExt;
use testkit::fake_provider::{FakeProvider, Reply};

type TestResult = Result<(), Box<dyn std::error::Error>>;

fn env(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
    let map: HashMap<String, String> = pairs
        .iter()
        .map(|(name, value)| ((*name).to_owned(), (*value).to_owned()))
        .collect();
    move |name| map.get(name).cloned()
}

fn provider(name: &str, api: WireApi, base_url: &str, models: &[&str]) -> ProviderConfig {
    ProviderConfig {
        name: name.into(),
        api,
        base_url: base_url.into(),
        api_key: None,
        models: models.iter().map(|m| (*m).to_owned()).collect(),
    }
}

fn not_configured(provider: &str, hint: &str) -> ResolveError {
    ResolveError::NotConfigured {
        provider: provider.into(),
        hint: hint.into(),
    }
}

#[test]
fn only_the_variables_that_are_set_register_providers() {
    let providers = env_shortcuts(&env(&[
        ("XAI_API_KEY", "xai-key"),
        ("OPENAI_BASE_URL", "http://127.0.0.1:11434/v1"),
        ("ANTHROPIC_BASE_URL", ""),
        ("UNRELATED", "x"),
    ]));
    let summary: Vec<_> = providers
        .iter()
        .map(|p| (p.name.as_str(), p.base_url.as_str(), p.api_key.as_deref()))
        .collect();
    assert_eq!(
        summary,
        vec![
            ("openai", "http://127.0.0.1:11434/v1", None),
            ("xai", "https://api.x.ai/v1", Some("xai-key")),
        ]
    );
}

#[test]
fn environment_providers_resolve_and_unset_ones_name_their_variable() -> TestResult {
    let registry = Registry::new(env_shortcuts(&env(&[
        ("OPENAI_API_KEY", "sk-test"),
        ("PERPLEXITY_API_KEY", "pplx-test"),
    ])))?;
    assert_eq!(
        registry.resolve("openai/gpt-5.4")?.upstream_model,
        "gpt-5.4"
    );
    assert_eq!(
        registry.resolve("perplexity/sonar-pro")?.upstream_model,
        "sonar-pro"
    );
    let expected = [
        ("xai/grok-4", "xai", "set XAI_API_KEY"),
        (
            "anthropic/claude-sonnet-4-5",
            "anthropic",
            "set ANTHROPIC_API_KEY",
        ),
        ("google/gemini-2.5-pro", "google", "set GEMINI_API_KEY"),
        (
            "acme/model-1",
            "acme",
            "add [providers.acme] to the config file",
        ),
    ];
    for (id, provider, hint) in expected {
        assert_eq!(
            registry.resolve(id).err(),
            Some(not_configured(provider, hint)),
            "{id}"
        );
    }
    let unset = Registry::new(vec![])?;
    assert_eq!(
        unset.resolve("openai/gpt-5.4").err(),
        Some(not_configured("openai", "set OPENAI_API_KEY"))
    );
    Ok(())
}

#[test]
fn only_the_first_slash_splits() -> TestResult {
    let registry = Registry::new(vec![provider(
        "openrouter",
        WireApi::ChatCompletions,
        "https://openrouter.ai/api/v1",
        &[],
    )])?;
    assert_eq!(
        registry
            .resolve("openrouter/anthropic/claude-sonnet-4.5")?
            .upstream_model,
        "anthropic/claude-sonnet-4.5"
    );
    for malformed in ["gpt-5.4", "", "/gpt", "openrouter/"] {
        assert_eq!(
            registry.resolve(malformed).err(),
            Some(ResolveError::Malformed(malformed.into())),
            "{malformed:?}"
        );
    }
    Ok(())
}

#[test]
fn every_wire_api_resolves_to_its_adapter() -> TestResult {
    let registry = Registry::new(env_shortcuts(&env(&[
        ("ANTHROPIC_API_KEY", "a"),
        ("GEMINI_API_KEY", "g"),
    ])))?;
    let anthropic = registry.resolve("anthropic/claude-sonnet-4-5")?;
    assert_eq!(anthropic.upstream_model, "claude-sonnet-4-5");
    let google = registry.resolve("google/gemini-2.5-pro")?;
    assert_eq!(google.upstream_model, "gemini-2.5-pro");
    let responses = Registry::new(vec![provider(
        "oai",
        WireApi::Responses,
        "https://api.openai.com/v1",
        &[],
    )])?;
    assert_eq!(responses.resolve("oai/gpt-5.4")?.upstream_model, "gpt-5.4");
    Ok(())
}

/// The configured models only: these upstreams are real services, never asked in tests
/// (`list_models = false`); upstream lists are tested in models.rs.
#[tokio::test]
async fn list_models_prefixes_the_provider() -> TestResult {
    let not_asked = ModelListSettings {
        disabled: ["local", "openai", "claude", "gem", "oai"]
            .map(str::to_owned)
            .into(),
        ..ModelListSettings::default()
    };
    let registry = Registry::new(vec![
        provider(
            "local",
            WireApi::ChatCompletions,
            "http://127.0.0.1:11434/v1",
            &["llama3.2", "qwen3"],
        ),
        provider(
            "openai",
            WireApi::ChatCompletions,
            "https://api.openai.com/v1",
            &[],
        ),
        provider(
            "claude",
            WireApi::AnthropicMessages,
            "https://api.anthropic.com",
            &["claude-x"],
        ),
        provider(
            "gem",
            WireApi::Gemini,
            "https://generativelanguage.googleapis.com",
            &["gemini-y"],
        ),
        provider(
            "oai",
            WireApi::Responses,
            "https://api.openai.com/v1",
            &["gpt-z"],
        ),
    ])?
    .with_model_lists(not_asked);
    let info = |id: &str, owner: &str| ModelInfo {
        id: id.into(),
        owned_by: owner.into(),
    };
    assert_eq!(
        registry.list_models().await,
        vec![
            info("local/llama3.2", "local"),
            info("local/qwen3", "local"),
            info("claude/claude-x", "claude"),
            info("gem/gemini-y", "gem"),
            info("oai/gpt-z", "oai"),
        ]
    );
    Ok(())
}

#[test]
fn bad_configurations_are_refused() {
    let duplicate = Registry::new(vec![
        provider(
            "local",
            WireApi::ChatCompletions,
            "http://127.0.0.1:1/v1",
            &[],
        ),
        provider(
            "local",
            WireApi::ChatCompletions,
            "http://127.0.0.1:2/v1",
            &[],
        ),
    ]);
    assert!(matches!(duplicate, Err(ProvidersError::DuplicateProvider(name)) if name == "local"));
    let bad_url = Registry::new(vec![provider("x", WireApi::Gemini, "not a url", &[])]);
    assert!(matches!(
        bad_url,
        Err(ProvidersError::InvalidBaseUrl { .. })
    ));
}

#[tokio::test]
async fn a_resolved_model_streams_from_its_provider() -> TestResult {
    let fake = FakeProvider::start().await;
    fake.push(Reply::text("Hi there"));
    let registry = Registry::new(vec![provider(
        "fake",
        WireApi::ChatCompletions,
        &fake.base_url(),
        &["gpt-test"],
    )])?;
    let model = registry.resolve("fake/gpt-test")?;
    let request = ModelRequest {
        model: model.upstream_model.clone(),
        messages: vec![ModelMessage::User {
            content: vec![ContentPart::Text { text: "Hi".into() }],
        }],
        ..ModelRequest::default()
    };
    let events: Vec<_> = model.client.stream(request).await?.collect().await;
    assert!(events.contains(&Ok(ModelEvent::TextDelta("Hi".into()))));
    assert_eq!(fake.requests()[0]["model"], "gpt-test");
    Ok(())
}
