//! The OAuth connections an admin started and whose callback has not come yet, by `state`:
//! in this process's memory, bounded in time (the caller's expiry) and number
//! ([`MAX_PENDING`], the oldest dropped first). A leaf module: [`crate::core::Core`] holds one.

use std::collections::HashMap;
use std::sync::Mutex;

use crate::oauth::OAuthPending;

/// Started authorizations kept at once (per process).
pub const MAX_PENDING: usize = 256;

/// One started authorization.
pub(crate) struct Flow {
    pub(crate) project_id: String,
    pub(crate) connector_id: String,
    pub(crate) key_id: Option<String>,
    pub(crate) expires_at: i64,
    pub(crate) pending: Box<dyn OAuthPending>,
}

/// The authorizations waiting for their callback, by `state`.
#[derive(Default)]
pub(crate) struct PendingFlows(Mutex<HashMap<String, Flow>>);

impl PendingFlows {
    pub(crate) fn insert(&self, state: String, flow: Flow, now: i64) {
        let mut flows = self.0.lock().unwrap_or_else(|e| e.into_inner());
        flows.retain(|_, f| f.expires_at > now);
        while flows.len() >= MAX_PENDING {
            let oldest = flows
                .iter()
                .min_by_key(|(_, f)| f.expires_at)
                .map(|(k, _)| k.clone());
            match oldest {
                Some(key) => flows.remove(&key),
                None => break,
            };
        }
        flows.insert(state, flow);
    }

    pub(crate) fn take(&self, state: &str) -> Option<Flow> {
        self.0
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(state)
    }
}
