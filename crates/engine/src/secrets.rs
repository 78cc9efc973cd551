//! The sealing port: how the engine keeps the secrets it must store for a while out of the
//! store in clear text. A queued background run needs its MCP credentials (`authorization`,
//! `headers`) when a worker runs it, possibly in another process: its job payload holds them
//! sealed, never in clear. The `secrets` crate implements [`Sealer`] (XChaCha20-Poly1305 under
//! the operator's key).

/// Why a value could not be sealed or opened.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SealError {
    /// No key can seal or open it (none configured, or the key that sealed it is gone).
    #[error("{0}")]
    Unavailable(String),
    /// The value is not a sealed value, or it was altered or sealed for another place.
    #[error("{0}")]
    Broken(String),
}

/// Seals and opens values bound to a context (`job|<project>|<response>|mcp`): a value sealed
/// for one context never opens in another.
pub trait Sealer: Send + Sync {
    fn seal(&self, context: &str, plaintext: &[u8]) -> Result<String, SealError>;
    fn open(&self, context: &str, sealed: &str) -> Result<Vec<u8>, SealError>;
    /// A keyed fingerprint of a value (it tells values apart without revealing any), when
    /// the sealer can make one.
    fn fingerprint(&self, _value: &[u8]) -> Option<String> {
        None
    }
    /// Whether a sealed value was sealed by the current key (`false`: seal it again).
    fn is_current(&self, _sealed: &str) -> bool {
        true
    }
}
