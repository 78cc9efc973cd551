//! PKCE (RFC 7636) with S256, and the random `state` of an authorization request.

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use secrecy::SecretString;
use sha2::{Digest, Sha256};

use super::error::OAuthError;

/// Random bytes behind a verifier or a state: 32 bytes give 43 base64url characters (RFC
/// 7636 §4.1 asks for 43 to 128 characters and 256 bits of entropy).
const RANDOM_BYTES: usize = 32;

/// `RANDOM_BYTES` random bytes from the operating system, base64url without padding.
pub(crate) fn random_token() -> Result<String, OAuthError> {
    let mut bytes = [0u8; RANDOM_BYTES];
    getrandom::fill(&mut bytes)
        .map_err(|_| OAuthError::Invalid("the operating system gave no random bytes".to_owned()))?;
    Ok(URL_SAFE_NO_PAD.encode(bytes))
}

/// A code verifier and its S256 challenge.
#[derive(Debug)]
pub(crate) struct Pkce {
    pub(crate) verifier: SecretString,
    pub(crate) challenge: String,
}

impl Pkce {
    pub(crate) fn new() -> Result<Self, OAuthError> {
        let verifier = random_token()?;
        let challenge = s256(&verifier);
        Ok(Self {
            verifier: SecretString::from(verifier),
            challenge,
        })
    }
}

/// RFC 7636 §4.2: `BASE64URL(SHA256(ASCII(code_verifier)))`.
pub(crate) fn s256(verifier: &str) -> String {
    URL_SAFE_NO_PAD.encode(Sha256::digest(verifier.as_bytes()))
}

#[cfg(test)]
mod tests {
    use secrecy::ExposeSecret;

    use super::*;

    #[test]
    fn s256_matches_rfc_7636_appendix_b() {
        assert_eq!(
            s256("dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk"),
            "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM"
        );
    }

    #[test]
    fn verifiers_are_long_random_and_do_not_print() {
        let a = Pkce::new().unwrap();
        let b = Pkce::new().unwrap();
        let (va, vb) = (a.verifier.expose_secret(), b.verifier.expose_secret());
        assert_eq!(va.len(), 43);
        assert!(
            va.chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
        );
        assert_ne!(va, vb);
        assert_eq!(a.challenge, s256(va));
        let debug = format!("{a:?}");
        assert!(!debug.contains(va), "{debug}");
        assert_ne!(random_token().unwrap(), random_token().unwrap());
    }
}
