//! Choosing the back end from the operator's settings (`operator-contract.md`, "Built-in
//! tool back ends"). The caller reads the environment and config; this takes values.

use std::fmt;
use std::path::PathBuf;
use std::sync::Arc;

use netguard::Policy;

use crate::backend::{Backend, BackendError};
use crate::brave::Brave;
use crate::image::ImageBackend;
use crate::local::LocalIndex;
use crate::perplexity::Perplexity;
use crate::searxng::SearxNg;
use crate::tavily::Tavily;

/// The operator's web search settings. Empty strings count as unset (an exported but
/// empty variable).
#[derive(Clone, Default)]
pub struct BackendSettings {
    /// `AGENTD_SEARXNG_URL`: a SearxNG instance with the JSON format enabled.
    pub searxng_url: Option<String>,
    /// `BRAVE_API_KEY`.
    pub brave_api_key: Option<String>,
    /// `TAVILY_API_KEY`.
    pub tavily_api_key: Option<String>,
    /// `PERPLEXITY_API_KEY`, for Perplexity's Search API.
    pub perplexity_api_key: Option<String>,
    /// Base URL overrides (proxies, tests); the public endpoints when unset.
    pub brave_base_url: Option<String>,
    pub tavily_base_url: Option<String>,
    /// E.g. `PERPLEXITY_BASE_URL`; requests go to `{base}/search`.
    pub perplexity_base_url: Option<String>,
    /// The local index file (`<data_dir>/index.sqlite`), used when nothing above is set.
    pub local_index_path: PathBuf,
    /// A PostgreSQL database (`postgres://…`) holding the local index instead of the file: the
    /// store's, when replicas share it.
    pub local_index_url: Option<String>,
}

/// Keys stay out of logs.
impl fmt::Debug for BackendSettings {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let key = |value: &Option<String>| set(value).map(|_| "<redacted>");
        f.debug_struct("BackendSettings")
            .field("searxng_url", &set(&self.searxng_url))
            .field("brave_api_key", &key(&self.brave_api_key))
            .field("tavily_api_key", &key(&self.tavily_api_key))
            .field("perplexity_api_key", &key(&self.perplexity_api_key))
            .field("brave_base_url", &set(&self.brave_base_url))
            .field("tavily_base_url", &set(&self.tavily_base_url))
            .field("perplexity_base_url", &set(&self.perplexity_base_url))
            .field("local_index_path", &self.local_index_path)
            .field(
                "local_index_url",
                &self.local_index_url.as_ref().map(|_| "<postgres>"),
            )
            .finish()
    }
}

/// Which back end answers `web_search`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BackendKind {
    Searxng,
    Brave,
    Tavily,
    Perplexity,
    LocalIndex,
}

fn set(value: &Option<String>) -> Option<&str> {
    value.as_deref().map(str::trim).filter(|v| !v.is_empty())
}

impl BackendSettings {
    /// The first configured of, in this order: SearxNG (`AGENTD_SEARXNG_URL`), Brave
    /// (`BRAVE_API_KEY`), Tavily (`TAVILY_API_KEY`), Perplexity (`PERPLEXITY_API_KEY`);
    /// the local index when none is. A self-hosted SearxNG comes first because an
    /// operator who runs one means it; `PERPLEXITY_API_KEY` comes last because it is
    /// often set only for Perplexity's models.
    pub fn kind(&self) -> BackendKind {
        if set(&self.searxng_url).is_some() {
            BackendKind::Searxng
        } else if set(&self.brave_api_key).is_some() {
            BackendKind::Brave
        } else if set(&self.tavily_api_key).is_some() {
            BackendKind::Tavily
        } else if set(&self.perplexity_api_key).is_some() {
            BackendKind::Perplexity
        } else {
            BackendKind::LocalIndex
        }
    }
}

/// The local index the settings name: in PostgreSQL when `local_index_url` is set, else the
/// file at `local_index_path`.
pub async fn open_local_index(settings: &BackendSettings) -> Result<LocalIndex, BackendError> {
    match &settings.local_index_url {
        Some(url) => LocalIndex::open_postgres(url).await,
        None => LocalIndex::open(&settings.local_index_path).await,
    }
}

/// Builds the back end [`BackendSettings::kind`] picks. HTTP back ends use clients from
/// `policy` (allow the operator's SearxNG range in it when it is on a private address);
/// the local index is opened (and created) at `local_index_path`.
pub async fn backend_from_settings(
    settings: &BackendSettings,
    policy: &Policy,
) -> Result<Arc<dyn Backend>, BackendError> {
    let or_empty = |value: &Option<String>| set(value).unwrap_or_default().to_owned();
    Ok(match settings.kind() {
        BackendKind::Searxng => Arc::new(SearxNg::new(&or_empty(&settings.searxng_url), policy)?),
        BackendKind::Brave => Arc::new(Brave::new(
            &or_empty(&settings.brave_api_key),
            set(&settings.brave_base_url),
            policy,
        )?),
        BackendKind::Tavily => Arc::new(Tavily::new(
            &or_empty(&settings.tavily_api_key),
            set(&settings.tavily_base_url),
            policy,
        )?),
        BackendKind::Perplexity => Arc::new(Perplexity::new(
            &or_empty(&settings.perplexity_api_key),
            set(&settings.perplexity_base_url),
            policy,
        )?),
        BackendKind::LocalIndex => Arc::new(open_local_index(settings).await?),
    })
}

/// The back end of `image_search`: SearxNG's image category when `AGENTD_SEARXNG_URL` is
/// set, else Brave's image search when `BRAVE_API_KEY` is, else the local index's images
/// (Tavily and Perplexity have no image search).
pub async fn image_backend_from_settings(
    settings: &BackendSettings,
    policy: &Policy,
) -> Result<Arc<dyn ImageBackend>, BackendError> {
    let or_empty = |value: &Option<String>| set(value).unwrap_or_default().to_owned();
    Ok(match settings.kind() {
        BackendKind::Searxng => Arc::new(SearxNg::new(&or_empty(&settings.searxng_url), policy)?),
        BackendKind::Brave => Arc::new(Brave::new(
            &or_empty(&settings.brave_api_key),
            set(&settings.brave_base_url),
            policy,
        )?),
        BackendKind::Tavily | BackendKind::Perplexity | BackendKind::LocalIndex => {
            Arc::new(open_local_index(settings).await?)
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn precedence_is_searxng_brave_tavily_perplexity_local() {
        let some = |s: &str| Some(s.to_owned());
        let mut settings = BackendSettings {
            searxng_url: some("http://searx"),
            brave_api_key: some("b"),
            tavily_api_key: some("t"),
            perplexity_api_key: some("p"),
            ..BackendSettings::default()
        };
        assert_eq!(settings.kind(), BackendKind::Searxng);
        settings.searxng_url = some("  ");
        assert_eq!(settings.kind(), BackendKind::Brave);
        settings.brave_api_key = None;
        assert_eq!(settings.kind(), BackendKind::Tavily);
        settings.tavily_api_key = some("");
        assert_eq!(settings.kind(), BackendKind::Perplexity);
        settings.perplexity_api_key = None;
        assert_eq!(settings.kind(), BackendKind::LocalIndex);
    }

    #[test]
    fn debug_hides_keys() {
        let settings = BackendSettings {
            brave_api_key: Some("secret-key".to_owned()),
            ..BackendSettings::default()
        };
        let shown = format!("{settings:?}");
        assert!(!shown.contains("secret-key"), "{shown}");
        assert!(shown.contains("<redacted>"), "{shown}");
    }
}
