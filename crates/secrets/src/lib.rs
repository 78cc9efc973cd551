//! Secrets at rest: values agentd must store and later use (the MCP credentials of queued
//! background runs, connector credentials) are sealed with XChaCha20-Poly1305 under a 32-byte
//! key the operator owns, never stored in clear text.
//!
//! - [`KeyRing`]: the key that seals plus old keys that only open (key rotation), and the
//!   keyed fingerprint of a value (so an admin can tell which token is in place without seeing
//!   any of it). It implements the engine's [`engine::secrets::Sealer`] port.
//! - [`SecretKey`]: 32 bytes, held in memory in a type that does not print and is zeroed on drop;
//!   read from base64 (`AGENTD_SECRET_KEY`) or a key file that only its owner may read
//!   ([`SecretKey::read_file`]), or generated into one ([`SecretKey::generate_file`]).
//!
//! A sealed value is `v1:<key id>:<base64url(nonce ‖ ciphertext ‖ tag)>`: the key id (the first
//! 8 hex digits of the key's SHA-256) picks the key that opens it, the 24-byte nonce is random,
//! and the associated data binds the ciphertext to where it belongs (`context`, e.g.
//! `job|proj_1|resp_2|mcp`): a ciphertext copied to another row or field does not open.
//!
//! ```
//! use agentd_secrets::{KeyRing, SecretKey};
//! use engine::secrets::Sealer;
//!
//! let ring = KeyRing::new(SecretKey::generate(), Vec::new());
//! let sealed = ring.seal("job|proj_1|resp_1|mcp", b"ghp_token").unwrap();
//! assert!(!sealed.contains("ghp_token"));
//! assert_eq!(ring.open("job|proj_1|resp_1|mcp", &sealed).unwrap(), b"ghp_token");
//! assert!(ring.open("job|proj_2|resp_1|mcp", &sealed).is_err());
//! ```

use std::fmt;
use std::io::Write as _;
use std::os::unix::fs::{OpenOptionsExt as _, PermissionsExt as _};
use std::path::Path;

use base64::Engine as _;
use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};
use chacha20poly1305::aead::{Aead, KeyInit, Payload};
use chacha20poly1305::{Key, XChaCha20Poly1305, XNonce};
use engine::secrets::{SealError, Sealer};
use hmac::{Hmac, Mac};
use secrecy::{ExposeSecret, SecretBox};
use sha2::{Digest, Sha256};

/// The format tag of sealed values.
const VERSION: &str = "v1";
/// Nonce length of XChaCha20-Poly1305.
const NONCE_BYTES: usize = 24;

/// Fills `buf` from the operating system's random source. Without one no key or nonce can be
/// made safely: that is the one failure agentd does not survive, so it stops (by `abort`, not
/// a panic) rather than seal under a predictable nonce.
fn random(buf: &mut [u8]) {
    if getrandom::fill(buf).is_err() {
        std::process::abort();
    }
}

/// Why a key could not be had.
#[derive(Debug, thiserror::Error)]
pub enum KeyError {
    #[error("{0}")]
    Invalid(String),
    #[error("{0}")]
    Io(String),
}

/// A 32-byte secret key. Its `Debug` shows only its id.
pub struct SecretKey {
    bytes: SecretBox<[u8; 32]>,
    id: String,
}

impl fmt::Debug for SecretKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SecretKey").field("id", &self.id).finish()
    }
}

impl SecretKey {
    fn from_bytes(bytes: [u8; 32]) -> SecretKey {
        let digest = Sha256::digest(bytes);
        let id = digest[..4].iter().map(|b| format!("{b:02x}")).collect();
        SecretKey {
            bytes: SecretBox::new(Box::new(bytes)),
            id,
        }
    }

    /// A new random key.
    pub fn generate() -> SecretKey {
        let mut bytes = [0u8; 32];
        random(&mut bytes);
        SecretKey::from_bytes(bytes)
    }

    /// A key from its base64 text (32 bytes; standard or URL-safe alphabet, padding optional).
    pub fn from_base64(text: &str) -> Result<SecretKey, KeyError> {
        let text = text.trim();
        let decoded = STANDARD
            .decode(text)
            .or_else(|_| URL_SAFE_NO_PAD.decode(text.trim_end_matches('=')))
            .map_err(|_| KeyError::Invalid("the secret key is not base64".to_owned()))?;
        let bytes: [u8; 32] = decoded.as_slice().try_into().map_err(|_| {
            KeyError::Invalid(format!(
                "the secret key must be 32 bytes (base64 of 32 random bytes), got {} bytes",
                decoded.len()
            ))
        })?;
        Ok(SecretKey::from_bytes(bytes))
    }

    /// The key in a file (its base64 text). A file others may read is refused: whoever can
    /// read it can open every sealed value.
    pub fn read_file(path: &Path) -> Result<SecretKey, KeyError> {
        let meta = std::fs::metadata(path)
            .map_err(|err| KeyError::Io(format!("cannot read {}: {err}", path.display())))?;
        let mode = meta.permissions().mode();
        if mode & 0o077 != 0 {
            return Err(KeyError::Invalid(format!(
                "{} can be read by others (mode {:o}): make it readable by its owner only (chmod 600)",
                path.display(),
                mode & 0o777
            )));
        }
        let text = std::fs::read_to_string(path)
            .map_err(|err| KeyError::Io(format!("cannot read {}: {err}", path.display())))?;
        SecretKey::from_base64(&text)
            .map_err(|err| KeyError::Invalid(format!("{}: {err}", path.display())))
    }

    /// Generates a key into a new file, readable by its owner only (mode 0600).
    pub fn generate_file(path: &Path) -> Result<SecretKey, KeyError> {
        let key = SecretKey::generate();
        let mut file = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(path)
            .map_err(|err| KeyError::Io(format!("cannot create {}: {err}", path.display())))?;
        let text = STANDARD.encode(key.bytes.expose_secret());
        file.write_all(format!("{text}\n").as_bytes())
            .and_then(|()| file.sync_all())
            .map_err(|err| KeyError::Io(format!("cannot write {}: {err}", path.display())))?;
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600))
            .map_err(|err| KeyError::Io(format!("cannot restrict {}: {err}", path.display())))?;
        Ok(key)
    }

    /// The first 8 hex digits of the key's SHA-256: names the key, reveals nothing of it.
    pub fn id(&self) -> &str {
        &self.id
    }

    fn cipher(&self) -> XChaCha20Poly1305 {
        XChaCha20Poly1305::new(&Key::from(*self.bytes.expose_secret()))
    }
}

/// The key that seals and the old keys that still open.
#[derive(Debug)]
pub struct KeyRing {
    current: SecretKey,
    old: Vec<SecretKey>,
}

impl KeyRing {
    pub fn new(current: SecretKey, old: Vec<SecretKey>) -> KeyRing {
        KeyRing { current, old }
    }

    /// Old keys from a comma-separated list of base64 keys (`AGENTD_SECRET_KEYS_OLD`).
    pub fn parse_old(list: &str) -> Result<Vec<SecretKey>, KeyError> {
        list.split(',')
            .map(str::trim)
            .filter(|key| !key.is_empty())
            .map(SecretKey::from_base64)
            .collect()
    }

    /// The id of the key that seals.
    pub fn current_id(&self) -> &str {
        self.current.id()
    }

    /// Whether a sealed value was sealed by an old key (it should be sealed again).
    pub fn is_stale(&self, sealed: &str) -> bool {
        sealed
            .split(':')
            .nth(1)
            .is_some_and(|id| id != self.current.id())
    }

    /// A keyed fingerprint of a value (`hmac:<8 hex>`), the same for the same value under the
    /// same key: it tells values apart without revealing any of them.
    pub fn fingerprint(&self, value: &[u8]) -> String {
        let hkdf = hkdf::Hkdf::<Sha256>::new(
            Some(b"agentd fingerprint"),
            self.current.bytes.expose_secret(),
        );
        let mut key = [0u8; 32];
        // 32 bytes is far below HKDF-SHA256's limit: `expand` cannot fail here.
        if hkdf.expand(b"v1", &mut key).is_err() {
            return "hmac:unavailable".to_owned();
        }
        let Ok(mut mac) = <Hmac<Sha256> as KeyInit>::new_from_slice(&key) else {
            return "hmac:unavailable".to_owned();
        };
        mac.update(value);
        let tag = mac.finalize().into_bytes();
        let hex: String = tag[..4].iter().map(|b| format!("{b:02x}")).collect();
        format!("hmac:{hex}")
    }

    fn key(&self, id: &str) -> Option<&SecretKey> {
        std::iter::once(&self.current)
            .chain(&self.old)
            .find(|key| key.id() == id)
    }
}

impl Sealer for KeyRing {
    fn seal(&self, context: &str, plaintext: &[u8]) -> Result<String, SealError> {
        let mut nonce = [0u8; NONCE_BYTES];
        random(&mut nonce);
        let nonce = XNonce::from(nonce);
        let sealed = self
            .current
            .cipher()
            .encrypt(
                &nonce,
                Payload {
                    msg: plaintext,
                    aad: context.as_bytes(),
                },
            )
            .map_err(|_| SealError::Broken("sealing failed".to_owned()))?;
        let mut blob = Vec::with_capacity(NONCE_BYTES + sealed.len());
        blob.extend_from_slice(&nonce);
        blob.extend_from_slice(&sealed);
        Ok(format!(
            "{VERSION}:{}:{}",
            self.current.id(),
            URL_SAFE_NO_PAD.encode(blob)
        ))
    }

    fn open(&self, context: &str, sealed: &str) -> Result<Vec<u8>, SealError> {
        let mut parts = sealed.splitn(3, ':');
        let (Some(VERSION), Some(id), Some(body)) = (parts.next(), parts.next(), parts.next())
        else {
            return Err(SealError::Broken("not a sealed value".to_owned()));
        };
        let key = self.key(id).ok_or_else(|| {
            SealError::Unavailable(format!(
                "the value was sealed with key {id}, which this server does not have (set it in AGENTD_SECRET_KEYS_OLD)"
            ))
        })?;
        let blob = URL_SAFE_NO_PAD
            .decode(body)
            .map_err(|_| SealError::Broken("the sealed value is not base64".to_owned()))?;
        if blob.len() < NONCE_BYTES {
            return Err(SealError::Broken("the sealed value is cut".to_owned()));
        }
        let (nonce, ciphertext) = blob.split_at(NONCE_BYTES);
        let nonce = XNonce::try_from(nonce)
            .map_err(|_| SealError::Broken("the sealed value is cut".to_owned()))?;
        key.cipher()
            .decrypt(
                &nonce,
                Payload {
                    msg: ciphertext,
                    aad: context.as_bytes(),
                },
            )
            .map_err(|_| {
                SealError::Broken(
                    "the sealed value does not open here (altered, or sealed for another place)"
                        .to_owned(),
                )
            })
    }

    fn fingerprint(&self, value: &[u8]) -> Option<String> {
        Some(KeyRing::fingerprint(self, value))
    }

    fn is_current(&self, sealed: &str) -> bool {
        !self.is_stale(sealed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sealed_values_open_only_in_their_context_and_with_their_key() {
        let ring = KeyRing::new(SecretKey::generate(), Vec::new());
        let sealed = ring.seal("a|b", b"secret-value").unwrap();
        assert!(sealed.starts_with(&format!("v1:{}:", ring.current_id())));
        assert!(!sealed.contains("secret-value"));
        // Two seals of one value differ (random nonces).
        assert_ne!(sealed, ring.seal("a|b", b"secret-value").unwrap());
        assert_eq!(ring.open("a|b", &sealed).unwrap(), b"secret-value");
        assert!(matches!(
            ring.open("a|c", &sealed),
            Err(SealError::Broken(_))
        ));
        let mut altered = sealed.clone();
        altered.pop();
        altered.push(if sealed.ends_with('A') { 'B' } else { 'A' });
        assert!(ring.open("a|b", &altered).is_err());
        let other = KeyRing::new(SecretKey::generate(), Vec::new());
        assert!(matches!(
            other.open("a|b", &sealed),
            Err(SealError::Unavailable(_))
        ));
    }

    #[test]
    fn old_keys_open_and_mark_values_stale() {
        let old = SecretKey::generate();
        let text = STANDARD.encode(old.bytes.expose_secret());
        let before = KeyRing::new(SecretKey::from_base64(&text).unwrap(), Vec::new());
        let sealed = before.seal("x", b"v").unwrap();
        let after = KeyRing::new(
            SecretKey::generate(),
            KeyRing::parse_old(&format!(" {text} ,")).unwrap(),
        );
        assert_eq!(after.open("x", &sealed).unwrap(), b"v");
        assert!(after.is_stale(&sealed));
        assert!(!after.is_stale(&after.seal("x", b"v").unwrap()));
    }

    #[test]
    fn keys_are_32_bytes_of_base64_and_never_printed() {
        assert!(SecretKey::from_base64("c2hvcnQ=").is_err());
        assert!(SecretKey::from_base64("not base64!").is_err());
        let key = SecretKey::generate();
        let text = STANDARD.encode(key.bytes.expose_secret());
        assert_eq!(SecretKey::from_base64(&text).unwrap().id(), key.id());
        assert_eq!(
            SecretKey::from_base64(&URL_SAFE_NO_PAD.encode(key.bytes.expose_secret()))
                .unwrap()
                .id(),
            key.id()
        );
        assert!(!format!("{key:?}").contains(&text));
    }

    #[test]
    fn key_files_are_owner_only() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("secret.key");
        let made = SecretKey::generate_file(&path).unwrap();
        assert_eq!(
            std::fs::metadata(&path).unwrap().permissions().mode() & 0o777,
            0o600
        );
        assert_eq!(SecretKey::read_file(&path).unwrap().id(), made.id());
        // Never overwritten.
        assert!(SecretKey::generate_file(&path).is_err());
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
        let err = SecretKey::read_file(&path).unwrap_err().to_string();
        assert!(err.contains("chmod 600"), "{err}");
    }

    #[test]
    fn fingerprints_tell_values_apart_without_revealing_them() {
        let ring = KeyRing::new(SecretKey::generate(), Vec::new());
        let a = ring.fingerprint(b"ghp_aaaaaaaa");
        assert_eq!(a, ring.fingerprint(b"ghp_aaaaaaaa"));
        assert_ne!(a, ring.fingerprint(b"ghp_bbbbbbbb"));
        assert!(a.starts_with("hmac:") && a.len() == 13);
        let other = KeyRing::new(SecretKey::generate(), Vec::new());
        assert_ne!(a, other.fingerprint(b"ghp_aaaaaaaa"));
    }
}
