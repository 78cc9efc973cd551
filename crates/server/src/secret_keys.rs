//! The key ring that seals stored credentials, from the operator's settings: `AGENTD_SECRET_KEY`,
//! else a key file (refused when others may read it); old keys open only. Without either, a
//! server on a loopback address keeps a generated key in `<data_dir>/secret.key` (0600) and says
//! so; a server on any other address runs without one, and whatever needs sealing is refused
//! with a message saying what to set.

use std::net::SocketAddr;
use std::path::Path;

use secrecy::ExposeSecret as _;
use secrets::{KeyRing, SecretKey};

use crate::config::SecretsSettings;

/// The generated key's file in the data directory.
pub const KEY_FILE: &str = "secret.key";

/// The key ring the settings name, a generated one on loopback, or `None`.
pub fn key_ring(
    settings: &SecretsSettings,
    listen: SocketAddr,
    data_dir: &Path,
) -> Result<Option<KeyRing>, secrets::KeyError> {
    let old = match &settings.old_keys {
        Some(list) => KeyRing::parse_old(list.expose_secret())?,
        None => Vec::new(),
    };
    let current = if let Some(key) = &settings.key {
        SecretKey::from_base64(key.expose_secret())?
    } else if let Some(path) = &settings.key_file {
        SecretKey::read_file(path)?
    } else if listen.ip().is_loopback() {
        let path = data_dir.join(KEY_FILE);
        if path.exists() {
            SecretKey::read_file(&path)?
        } else {
            std::fs::create_dir_all(data_dir).map_err(|err| {
                secrets::KeyError::Io(format!("cannot create {}: {err}", data_dir.display()))
            })?;
            let key = SecretKey::generate_file(&path)?;
            tracing::info!(path = %path.display(), key_id = key.id(), "generated a secret key for stored credentials: keep it with the data directory's backups, or set AGENTD_SECRET_KEY");
            key
        }
    } else {
        tracing::warn!(
            "no secret key (AGENTD_SECRET_KEY or AGENTD_SECRET_KEY_FILE): background runs with MCP credentials are refused"
        );
        return Ok(None);
    };
    tracing::info!(
        key_id = current.id(),
        old_keys = old.len(),
        "secret key loaded"
    );
    Ok(Some(KeyRing::new(current, old)))
}
