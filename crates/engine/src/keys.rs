//! API key hashing: only the SHA-256 of a key is stored.

/// Lower-case hex SHA-256 of a key.
pub fn hash_key(key: &str) -> String {
    use std::fmt::Write as _;
    let digest = sha256(key.as_bytes());
    let mut out = String::with_capacity(64);
    for byte in digest {
        let _ = write!(out, "{byte:02x}");
    }
    out
}

fn sha256(data: &[u8]) -> [u8; 32] {
    use sha2::Digest as _;
    sha2::Sha256::digest(data).into()
}
