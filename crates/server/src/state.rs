//! Shared application state.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use std::time::{Duration, Instant};

use engine::{Authenticated, Caller, Engine};

use crate::error::ApiError;
use crate::fresh_read::FreshRead;

/// How long a key lookup is trusted before the store is asked again.
pub const KEY_CACHE_TTL: Duration = Duration::from_secs(10);

/// What every handler can reach.
#[derive(Clone)]
pub struct AppState {
    pub engine: Engine,
    pub auth: Arc<AuthCache>,
    /// Interval of SSE keep-alive comments.
    pub sse_keep_alive: std::time::Duration,
    /// How long a WebSocket-mode connection may stay open.
    pub websocket_lifetime: std::time::Duration,
    /// How long a WebSocket-mode connection may stay idle (no message, no response in
    /// progress).
    pub websocket_idle_timeout: std::time::Duration,
    /// What a request body may be: how long it may take to arrive, and the operator's limits
    /// on what it holds (the strict extractor checks both).
    pub requests: RequestSettings,
    /// Host names besides loopback ones an open-mode server answers to (the web-page guard).
    pub allowed_hosts: Arc<Vec<String>>,
}

/// The strict extractor's settings.
#[derive(Debug, Clone, Copy)]
pub struct RequestSettings {
    /// How long a request body may take to arrive.
    pub body_timeout: std::time::Duration,
    /// The operator's limits on tools and schemas.
    pub limits: protocol::limits::RequestLimits,
}

/// Key lookups, cached for [`KEY_CACHE_TTL`]: a key revoked through the admin API is dropped
/// from the cache at once, one revoked elsewhere (the CLI, another replica) stops working
/// within the TTL. "No key exists" (open mode) is re-checked on every request, so a key
/// created with `agentd keys create` while the server runs closes open mode at once; requests
/// arriving together share that read ([`FreshRead`]: each is answered by a read that began
/// after it arrived).
pub struct AuthCache {
    /// Key hash -> (the key, when it was looked up).
    known: Mutex<HashMap<String, (Authenticated, Instant)>>,
    /// Set once any key was seen: the server is then never in open mode again.
    has_keys: AtomicBool,
    /// The open-mode read, shared by the requests waiting for it at the same moment.
    open_check: FreshRead<bool>,
    /// The project of open-mode requests.
    default_project: String,
}

impl AuthCache {
    pub fn new(default_project: String, has_keys: bool) -> AuthCache {
        AuthCache {
            known: Mutex::new(HashMap::new()),
            has_keys: AtomicBool::new(has_keys),
            open_check: FreshRead::new(),
            default_project,
        }
    }

    /// The project a request with this bearer key (if any) acts for.
    pub async fn project_for(
        &self,
        engine: &Engine,
        key: Option<&str>,
    ) -> Result<String, ApiError> {
        Ok(self.caller_for(engine, key, None).await?.project_id)
    }

    /// Who a request with this bearer key (if any) is: its key, project and role. Open mode
    /// acts as the operator (every right) in the `default` project.
    /// `open` is the open-mode answer already found for this request (by the web guard), if
    /// any.
    pub async fn caller_for(
        &self,
        engine: &Engine,
        key: Option<&str>,
        open: Option<bool>,
    ) -> Result<Caller, ApiError> {
        let hash = key.map(engine::hash_key);
        if let Some(hash) = &hash {
            let cached = self
                .known
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .get(hash)
                .filter(|(_, at)| at.elapsed() < KEY_CACHE_TTL)
                .map(|(key, _)| key.clone());
            if let Some(key) = cached {
                return Ok(key.caller());
            }
        }
        let open = match open {
            Some(open) => open,
            None => self.open_mode(engine).await?,
        };
        if open {
            return Ok(Caller::cli(self.default_project.clone()));
        }
        let (Some(key), Some(hash)) = (key, hash) else {
            return Err(ApiError::Unauthorized);
        };
        match engine.authenticate_key(key).await? {
            Some(found) => {
                let caller = found.caller();
                self.known
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .insert(hash, (found, Instant::now()));
                Ok(caller)
            }
            None => Err(ApiError::Unauthorized),
        }
    }

    /// Forgets a revoked key at once.
    pub fn forget_key(&self, key_id: &str) {
        self.known
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .retain(|_, (key, _)| key.key_id != key_id);
    }

    /// Whether a key has been seen: the server is then never in open mode again (no store
    /// read needed to know it).
    pub fn has_keys(&self) -> bool {
        self.has_keys.load(Ordering::Relaxed)
    }

    /// Whether the server is in open mode (no key in the store) now.
    pub async fn open_mode(&self, engine: &Engine) -> Result<bool, ApiError> {
        if self.has_keys.load(Ordering::Relaxed) {
            return Ok(false);
        }
        if self.open_check.get(|| engine.has_keys()).await? {
            self.has_keys.store(true, Ordering::Relaxed);
            return Ok(false);
        }
        Ok(true)
    }
}
