//! Our side of an rmcp client session: what we tell the server in `initialize`, and the one
//! notification we act on (`notifications/tools/list_changed`).

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use rmcp::ClientHandler;
use rmcp::model::{ClientCapabilities, ClientConfig, Implementation, ProtocolVersion};
use rmcp::service::{MaybeSendFuture, NotificationContext, RoleClient};

/// The protocol version we ask for. rmcp 3.11 defaults to 2026-07-28, which most deployed
/// servers and the MCP conformance suite (0.1.16) do not know yet; 2025-11-25 is the newest
/// they accept. A server may answer with an older version it supports (2025-06-18,
/// 2025-03-26, 2024-11-05), which rmcp accepts.
pub(crate) const PROTOCOL_VERSION: ProtocolVersion = ProtocolVersion::V_2025_11_25;

/// Sets `changed` when the server announces that its tool list changed.
#[derive(Debug, Clone)]
pub(crate) struct Handler {
    changed: Arc<AtomicBool>,
}

impl Handler {
    pub(crate) fn new(changed: Arc<AtomicBool>) -> Self {
        Self { changed }
    }
}

impl ClientHandler for Handler {
    fn on_tool_list_changed(
        &self,
        _context: NotificationContext<RoleClient>,
    ) -> impl Future<Output = ()> + MaybeSendFuture + '_ {
        self.changed.store(true, Ordering::SeqCst);
        std::future::ready(())
    }

    fn get_info(&self) -> ClientConfig {
        // No roots, sampling or elicitation: agentd only lists and calls tools.
        ClientConfig::new(
            ClientCapabilities::default(),
            Implementation::new("agentd", env!("CARGO_PKG_VERSION")),
        )
        .with_protocol_version(PROTOCOL_VERSION)
    }
}
