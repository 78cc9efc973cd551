//! [`Settings`]: the operator's choices (`[tools.finance_search]`, `FMP_API_KEY`,
//! `ALPHAVANTAGE_API_KEY`, `AGENTD_SEC_USER_AGENT`), and [`build`], which turns them into
//! the [`Finance`] service once at start-up.

use std::path::PathBuf;
use std::sync::Arc;

use engine::mcp::McpConnector;
use netguard::Policy;

use crate::alphavantage::{self, AlphaVantage};
use crate::backend::{Backend, BackendError};
use crate::budget::BudgetSettings;
use crate::cache::Lifetimes;
use crate::connectors::{NoSavedConnectors, SavedConnectors};
use crate::edgar::{self, Edgar};
use crate::fmp::{self, Fmp};
use crate::mcp::{McpBackend, McpSource};
use crate::service::Finance;
use crate::store::{self, LocalStore};

/// Answers kept in memory by default.
pub const DEFAULT_CACHE_ENTRIES: usize = 1000;

/// Everything the finance back ends are built from. Its `Debug` never prints the API keys nor
/// the database URL (which may hold a password).
#[derive(Clone)]
pub struct Settings {
    /// The sources in the order they are asked (`mcp:<label>` or `mcp` for all MCP
    /// servers, `fmp`, `alpha_vantage`, `sec_edgar`, `local`); `None`: MCP servers, FMP,
    /// Alpha Vantage, SEC EDGAR, then the local store. Sources left out are not used.
    pub order: Option<Vec<String>>,
    pub fmp_api_key: Option<String>,
    pub fmp_base_url: Option<String>,
    pub fmp_budget: BudgetSettings,
    pub alphavantage_api_key: Option<String>,
    pub alphavantage_base_url: Option<String>,
    pub alphavantage_budget: BudgetSettings,
    /// The contact the SEC requires; SEC EDGAR is off without it.
    pub sec_user_agent: Option<String>,
    pub sec_www_url: Option<String>,
    pub sec_data_url: Option<String>,
    pub sec_budget: BudgetSettings,
    pub mcp: Vec<McpSource>,
    pub mcp_budget: BudgetSettings,
    /// The embedded store, e.g. `<data_dir>/finance.sqlite`.
    pub store_path: PathBuf,
    /// A PostgreSQL database (`postgres://…`) holding the embedded store instead of the
    /// file: the store's, when replicas share it.
    pub store_url: Option<String>,
    pub cache_entries: usize,
    pub lifetimes: Lifetimes,
}

impl Default for Settings {
    fn default() -> Settings {
        Settings {
            order: None,
            fmp_api_key: None,
            fmp_base_url: None,
            fmp_budget: BudgetSettings::FMP,
            alphavantage_api_key: None,
            alphavantage_base_url: None,
            alphavantage_budget: BudgetSettings::ALPHA_VANTAGE,
            sec_user_agent: None,
            sec_www_url: None,
            sec_data_url: None,
            sec_budget: BudgetSettings::SEC_EDGAR,
            mcp: Vec::new(),
            mcp_budget: BudgetSettings::MCP,
            store_path: PathBuf::from("finance.sqlite"),
            store_url: None,
            cache_entries: DEFAULT_CACHE_ENTRIES,
            lifetimes: Lifetimes::default(),
        }
    }
}

impl std::fmt::Debug for Settings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let redacted = |value: &Option<String>| value.as_ref().map(|_| "<redacted>");
        f.debug_struct("Settings")
            .field("order", &self.order)
            .field("fmp_api_key", &redacted(&self.fmp_api_key))
            .field("fmp_base_url", &self.fmp_base_url)
            .field("fmp_budget", &self.fmp_budget)
            .field(
                "alphavantage_api_key",
                &redacted(&self.alphavantage_api_key),
            )
            .field("alphavantage_base_url", &self.alphavantage_base_url)
            .field("alphavantage_budget", &self.alphavantage_budget)
            .field("sec_user_agent", &self.sec_user_agent)
            .field("sec_www_url", &self.sec_www_url)
            .field("sec_data_url", &self.sec_data_url)
            .field("sec_budget", &self.sec_budget)
            .field("mcp", &self.mcp)
            .field("mcp_budget", &self.mcp_budget)
            .field("store_path", &self.store_path)
            .field("store_url", &redacted(&self.store_url))
            .field("cache_entries", &self.cache_entries)
            .field("lifetimes", &self.lifetimes)
            .finish()
    }
}

/// The source names [`Settings::order`] accepts besides `mcp:<label>`.
pub const SOURCE_NAMES: &[&str] = &[
    fmp::SOURCE,
    alphavantage::SOURCE,
    edgar::SOURCE,
    store::SOURCE,
    "mcp",
];

/// The embedded store the settings name: in PostgreSQL when `store_url` is set, else the
/// file at `store_path` (`agentd finance import` writes there).
pub async fn open_store(settings: &Settings) -> Result<LocalStore, BackendError> {
    match settings
        .store_url
        .as_deref()
        .map(str::trim)
        .filter(|url| !url.is_empty())
    {
        Some(url) => LocalStore::open_postgres(url).await,
        None => LocalStore::open(&settings.store_path).await,
    }
}

/// Builds the service: each configured back end (HTTP ones with clients from `policy`, which
/// must allow the operator's own service addresses; MCP ones through `connector`) and the
/// local store, opened (created if needed) at [`Settings::store_path`].
pub async fn build(
    settings: &Settings,
    policy: &Policy,
    connector: Arc<dyn McpConnector>,
) -> Result<Finance, BackendError> {
    build_with(settings, policy, connector, Arc::new(NoSavedConnectors)).await
}

/// [`build`], with `saved` finding the saved connectors MCP sources name
/// (`connector = "…"`).
pub async fn build_with(
    settings: &Settings,
    policy: &Policy,
    connector: Arc<dyn McpConnector>,
    saved: Arc<dyn SavedConnectors>,
) -> Result<Finance, BackendError> {
    let present = |value: &Option<String>| {
        value
            .as_deref()
            .map(str::trim)
            .filter(|v| !v.is_empty())
            .map(str::to_owned)
    };
    let mut available: Vec<Arc<dyn Backend>> = Vec::new();
    for source in &settings.mcp {
        available.push(Arc::new(
            McpBackend::new(connector.clone(), source.clone(), settings.mcp_budget)
                .with_saved_connectors(saved.clone()),
        ));
    }
    if let Some(key) = present(&settings.fmp_api_key) {
        available.push(Arc::new(Fmp::new(
            policy,
            &key,
            settings.fmp_base_url.as_deref(),
            settings.fmp_budget,
        )?));
    }
    if let Some(key) = present(&settings.alphavantage_api_key) {
        available.push(Arc::new(AlphaVantage::new(
            policy,
            &key,
            settings.alphavantage_base_url.as_deref(),
            settings.alphavantage_budget,
        )?));
    }
    if let Some(agent) = present(&settings.sec_user_agent) {
        available.push(Arc::new(Edgar::new(
            policy,
            &agent,
            settings.sec_www_url.as_deref(),
            settings.sec_data_url.as_deref(),
            settings.sec_budget,
        )?));
    }
    let wants_local = settings
        .order
        .as_ref()
        .is_none_or(|order| order.iter().any(|s| s == store::SOURCE));
    if wants_local {
        available.push(Arc::new(open_store(settings).await?));
    }
    let backends = match &settings.order {
        None => available,
        Some(order) => {
            let mut ordered: Vec<Arc<dyn Backend>> = Vec::new();
            for name in order {
                let name = name.trim();
                let chosen: Vec<&Arc<dyn Backend>> = available
                    .iter()
                    .filter(|b| {
                        b.source() == name || (name == "mcp" && b.source().starts_with("mcp:"))
                    })
                    .collect();
                if chosen.is_empty() {
                    if !SOURCE_NAMES.contains(&name) && !name.starts_with("mcp:") {
                        return Err(BackendError::Config(format!(
                            "unknown finance source \"{name}\" (expected one of {} or mcp:<label>)",
                            SOURCE_NAMES.join(", ")
                        )));
                    }
                    tracing::warn!(
                        source = name,
                        "finance source listed but not configured: skipped"
                    );
                }
                for backend in chosen {
                    if !ordered.iter().any(|b| b.source() == backend.source()) {
                        ordered.push(backend.clone());
                    }
                }
            }
            ordered
        }
    };
    Ok(Finance::new(
        backends,
        settings.cache_entries,
        settings.lifetimes,
    ))
}

#[cfg(test)]
mod debug_tests {
    use super::Settings;

    #[test]
    fn debug_never_prints_the_api_keys_nor_the_database_url() {
        let settings = Settings {
            fmp_api_key: Some("fmp-secret-123".into()),
            alphavantage_api_key: Some("av-secret-456".into()),
            store_url: Some("postgres://agentd:pw-789@db/agentd".into()),
            ..Settings::default()
        };
        let printed = format!("{settings:?}");
        for secret in ["fmp-secret-123", "av-secret-456", "pw-789"] {
            assert!(!printed.contains(secret), "{secret} printed in {printed}");
        }
        assert!(printed.contains("<redacted>"));
    }
}
