//! A connection's slot as its requests see it, so that what takes the connection over after an
//! upgrade (WebSocket mode, `crate::websocket`) keeps it counted: the slot stays taken until
//! both the HTTP side and the upgraded side have ended, the upgraded side says when it is busy
//! (a response in progress) and when it was last active, and it is told when its slot is wanted
//! for a new connection.

use std::sync::Arc;
use std::time::Duration;

use super::conn::RequestGuard;
use super::{Admitted, Limits};

/// Put in the extensions of every request of a served connection (`task::serve`).
#[derive(Clone)]
pub(crate) struct ConnectionSlot {
    admitted: Arc<Admitted>,
    limits: Limits,
}

impl ConnectionSlot {
    pub(super) fn new(admitted: Arc<Admitted>, limits: Limits) -> ConnectionSlot {
        ConnectionSlot { admitted, limits }
    }

    /// Busy until the guard is dropped: not idle, never closed to make room for another
    /// connection.
    pub fn busy(&self) -> RequestGuard {
        self.admitted.conn.request_started()
    }

    /// Something happened on the connection: its idle time counts from now.
    pub fn touch(&self) {
        drop(self.busy());
    }

    /// Resolves once the connection was chosen to close (its slot is wanted).
    pub async fn evicted(&self) {
        self.admitted.conn.evicted().await;
    }

    /// How long a write may wait for the client to read (`http.idle_timeout_ms`).
    pub fn write_timeout(&self) -> Duration {
        self.limits.idle_timeout
    }
}
