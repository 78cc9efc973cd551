//! Logging: the operator's `RUST_LOG` (default `info`) to stderr as text or JSON, with the
//! targets in [`SILENCED`] dropped whatever `RUST_LOG` says (a directive naming them, or a
//! span directive that would enable everything inside a span).
//!
//! The MCP library (`rmcp`) writes what it sends and receives — server URLs with their query
//! strings (`?api_key=…`) in errors, tool arguments and results at trace level — so it is
//! silenced whole; the MCP client (`agentd-mcp`) logs its own lines instead, naming a server by
//! its label and host only, with credentials removed from error text.

use tracing_subscriber::filter::{EnvFilter, FilterExt as _, filter_fn};
use tracing_subscriber::layer::SubscriberExt as _;
use tracing_subscriber::util::SubscriberInitExt as _;
use tracing_subscriber::{Layer as _, fmt};

use crate::config::LogFormat;

/// Targets (with their modules) that are never logged.
pub const SILENCED: &[&str] = &["rmcp"];

/// Whether events and spans of `target` are dropped.
pub fn is_silenced(target: &str) -> bool {
    SILENCED.iter().any(|silenced| {
        target
            .strip_prefix(silenced)
            .is_some_and(|rest| rest.is_empty() || rest.starts_with("::"))
    })
}

/// The filter for `spec` (`RUST_LOG`; `info` when unset or invalid).
pub fn env_filter(spec: Option<&str>) -> EnvFilter {
    spec.and_then(|spec| EnvFilter::try_new(spec).ok())
        .unwrap_or_else(|| EnvFilter::new("info"))
}

/// Installs the process's logger (and the bridge from the `log` crate): `spec` as the filter,
/// [`SILENCED`] dropped. Text is coloured only on a terminal: a log file or the journal gets
/// plain lines.
pub fn init(format: LogFormat, spec: Option<&str>) {
    use std::io::IsTerminal as _;
    let layer = fmt::layer()
        .with_writer(std::io::stderr)
        .with_ansi(std::io::stderr().is_terminal());
    let layer = match format {
        LogFormat::Json => layer.json().boxed(),
        LogFormat::Text => layer.boxed(),
    };
    let filter = env_filter(spec).and(filter_fn(|metadata| !is_silenced(metadata.target())));
    tracing_subscriber::registry()
        .with(layer.with_filter(filter))
        .init();
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_mcp_library_is_silenced_and_nothing_else() {
        for target in [
            "rmcp",
            "rmcp::service",
            "rmcp::transport::streamable_http_client",
        ] {
            assert!(is_silenced(target), "{target}");
        }
        for target in [
            "rmcpx",
            "mcp",
            "agentd_mcp",
            "agentd_mcp::session",
            "reqwest",
        ] {
            assert!(!is_silenced(target), "{target}");
        }
    }
}
