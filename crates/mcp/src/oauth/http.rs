//! The OAuth requests (metadata, registration, token) over the MCP client's guarded
//! `reqwest::Client`: every URL passes the network guard and the https rule, every exchange
//! is bounded in time and size ([`netguard::Policy::send_capped`]), and failures are
//! [`OAuthError`]s that name the step and the host only.

use std::time::Duration;

use bytes::Bytes;
use netguard::{FetchError, FetchLimits};
use reqwest::header::{ACCEPT, HeaderValue};
use serde::de::DeserializeOwned;
use url::{Host, Url};

use super::error::OAuthError;
use crate::errors::Redactor;

/// The most bytes read of one OAuth answer: metadata and token answers are a few KiB.
pub(crate) const MAX_OAUTH_BYTES: usize = 256 * 1024;

/// The most characters of an `error_description` kept in an error message.
const MAX_DESCRIPTION_CHARS: usize = 200;

/// The guarded client with the bounds of OAuth requests.
#[derive(Clone)]
pub(crate) struct OAuthHttp {
    pub(crate) client: reqwest::Client,
    pub(crate) policy: netguard::Policy,
    pub(crate) timeout: Duration,
    pub(crate) max_bytes: usize,
}

/// An answer: its status and (capped) body.
#[derive(Debug)]
pub(crate) struct Answer {
    pub(crate) status: u16,
    pub(crate) body: Bytes,
}

impl OAuthHttp {
    /// `url` if the guard lets it through and it is `https` (or plain `http` to a loopback
    /// host, which the guard only lets through when the operator allowed loopback).
    pub(crate) fn check_secure(&self, url: &str, what: &str) -> Result<Url, OAuthError> {
        let parsed = self
            .policy
            .check_url(url)
            .map_err(|b| OAuthError::Blocked(format!("{what}: {}", b.0)))?;
        secure(&parsed, what)?;
        Ok(parsed)
    }

    /// GET `url` (already checked) as JSON.
    pub(crate) async fn get(&self, url: &Url, what: &str) -> Result<Answer, OAuthError> {
        let request = self
            .client
            .get(url.clone())
            .header(ACCEPT, HeaderValue::from_static("application/json"))
            .header(
                "mcp-protocol-version",
                HeaderValue::from_static("2025-11-25"),
            );
        self.send(request, url, what, true).await
    }

    /// Sends a request the caller built (a POST with secrets in it). A redirected answer is
    /// refused: an endpoint that takes credentials must answer itself.
    pub(crate) async fn post(
        &self,
        request: reqwest::RequestBuilder,
        url: &Url,
        what: &str,
    ) -> Result<Answer, OAuthError> {
        self.send(request, url, what, false).await
    }

    /// `request` must be addressed to `url`.
    async fn send(
        &self,
        request: reqwest::RequestBuilder,
        url: &Url,
        what: &str,
        follow: bool,
    ) -> Result<Answer, OAuthError> {
        let limits = FetchLimits {
            max_bytes: self.max_bytes,
            total_timeout: self.timeout,
        };
        let fetched = self
            .policy
            .send_capped(request.header(ACCEPT, "application/json"), &limits)
            .await
            .map_err(|e| match e {
                FetchError::Blocked(b) => OAuthError::Blocked(format!("{what}: {}", b.0)),
                FetchError::Timeout(d) => OAuthError::Timeout {
                    what: what.to_owned(),
                    ms: u64::try_from(d.as_millis()).unwrap_or(u64::MAX),
                },
                FetchError::Http(reason) => OAuthError::Unreachable {
                    what: what.to_owned(),
                    reason,
                },
            })?;
        if fetched.truncated {
            return Err(OAuthError::TooLarge {
                what: what.to_owned(),
                max: self.max_bytes,
            });
        }
        if &fetched.final_url != url {
            if !follow {
                return Err(OAuthError::Invalid(format!(
                    "{what} answered with a redirect, which agentd does not follow for \
                     requests that carry credentials"
                )));
            }
            secure(&fetched.final_url, what)?;
        }
        Ok(Answer {
            status: fetched.status,
            body: fetched.body,
        })
    }
}

/// The https rule: `https`, or `http` to a loopback address or a `localhost` name (which
/// the guard has already judged).
pub(crate) fn secure(url: &Url, what: &str) -> Result<(), OAuthError> {
    if url.scheme() == "https" || is_loopback(url) {
        return Ok(());
    }
    Err(OAuthError::Blocked(format!(
        "{what} must use https (plain http is accepted for loopback only): {}",
        short(url)
    )))
}

/// Whether the URL's host is a loopback address or a `localhost` name.
pub(crate) fn is_loopback(url: &Url) -> bool {
    match url.host() {
        Some(Host::Ipv4(v4)) => v4.is_loopback(),
        Some(Host::Ipv6(v6)) => {
            v6.is_loopback() || v6.to_ipv4_mapped().is_some_and(|v4| v4.is_loopback())
        }
        Some(Host::Domain(name)) => {
            let name = name.trim_end_matches('.').to_ascii_lowercase();
            name == "localhost" || name.ends_with(".localhost")
        }
        None => false,
    }
}

/// A URL as errors and logs show it: scheme, host, port and path, never the query (which
/// may carry a token) or a fragment.
pub(crate) fn short(url: &Url) -> String {
    let host = url.host_str().unwrap_or_default();
    match url.port() {
        Some(port) => format!("{}://{host}:{port}{}", url.scheme(), url.path()),
        None => format!("{}://{host}{}", url.scheme(), url.path()),
    }
}

/// `host[:port]` of a URL, for naming a step ("the token endpoint of auth.example.com").
pub(crate) fn host(url: &Url) -> String {
    let host = url.host_str().unwrap_or_default();
    match url.port() {
        Some(port) => format!("{host}:{port}"),
        None => host.to_owned(),
    }
}

/// A JSON document of `what`. The error names where parsing failed, never the text around
/// it (a token answer holds secrets).
pub(crate) fn parse_json<T: DeserializeOwned>(body: &[u8], what: &str) -> Result<T, OAuthError> {
    serde_json::from_slice(body).map_err(|e| {
        let kind = match e.classify() {
            serde_json::error::Category::Io => "unreadable",
            serde_json::error::Category::Syntax | serde_json::error::Category::Eof => {
                "not valid JSON"
            }
            serde_json::error::Category::Data => "missing a field or has one of the wrong type",
        };
        OAuthError::Invalid(format!(
            "the answer of {what} is {kind} (line {}, column {})",
            e.line(),
            e.column()
        ))
    })
}

/// An RFC 6749 §5.2 error answer, as far as it can be read: the error code (kept only when
/// it looks like one) and the description, cleaned of `secrets` and cut short.
pub(crate) fn endpoint_error(answer: &Answer, what: &str, redactor: &Redactor) -> OAuthError {
    #[derive(serde::Deserialize)]
    struct ErrorBody {
        error: Option<String>,
        error_description: Option<String>,
    }
    let body: Option<ErrorBody> = serde_json::from_slice(&answer.body).ok();
    let (error, description) = match body {
        Some(b) => (b.error, b.error_description),
        None => (None, None),
    };
    let error = error.filter(|code| {
        !code.is_empty()
            && code.len() <= 64
            && code
                .chars()
                .all(|c| c.is_ascii_graphic() && c != '"' && c != '\\')
    });
    let description = description.map(|d| {
        let clean = redactor.clean(&d);
        if clean.chars().count() > MAX_DESCRIPTION_CHARS {
            clean
                .chars()
                .take(MAX_DESCRIPTION_CHARS)
                .collect::<String>()
                + "…"
        } else {
            clean
        }
    });
    OAuthError::Endpoint {
        what: what.to_owned(),
        status: answer.status,
        error,
        description,
    }
}

/// An [`OAuthHttp`] for unit tests, with these CIDRs allowed.
#[cfg(test)]
pub(crate) fn test_http(allowed: &[&str]) -> OAuthHttp {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let allowed: Vec<String> = allowed.iter().map(|s| (*s).to_owned()).collect();
    let policy = netguard::Policy::with_allowed(&allowed).unwrap();
    let client = policy.client_builder().build().unwrap();
    OAuthHttp {
        client,
        policy,
        timeout: Duration::from_secs(5),
        max_bytes: MAX_OAUTH_BYTES,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn http(allowed: &[&str]) -> OAuthHttp {
        test_http(allowed)
    }

    #[test]
    fn https_everywhere_http_on_allowed_loopback_only() {
        let strict = http(&[]);
        assert!(
            strict
                .check_secure("https://auth.example.com/x", "it")
                .is_ok()
        );
        let err = strict
            .check_secure("http://auth.example.com/x?token=abc", "the token endpoint")
            .unwrap_err();
        let text = err.to_string();
        assert!(text.contains("must use https"), "{text}");
        assert!(!text.contains("abc"), "{text}");
        // Loopback is refused by the guard itself under the strict policy.
        assert!(matches!(
            strict.check_secure("http://127.0.0.1:8080/x", "it"),
            Err(OAuthError::Blocked(_))
        ));
        let loopback = http(&["127.0.0.0/8", "::1/128"]);
        for url in [
            "http://127.0.0.1:8080/x",
            "http://localhost:9/x",
            "http://[::1]:9/x",
        ] {
            assert!(loopback.check_secure(url, "it").is_ok(), "{url}");
        }
        // A private network the operator allowed still needs https.
        let private = http(&["10.0.0.0/8"]);
        assert!(private.check_secure("http://10.1.2.3/x", "it").is_err());
        assert!(private.check_secure("https://10.1.2.3/x", "it").is_ok());
    }

    #[test]
    fn json_errors_do_not_quote_the_document() {
        #[derive(Debug, serde::Deserialize)]
        struct Doc {
            #[expect(dead_code, reason = "only parsed")]
            expires_in: u64,
        }
        let err = parse_json::<Doc>(br#"{"expires_in": "secret-value-123"}"#, "x").unwrap_err();
        assert!(!err.to_string().contains("secret-value-123"), "{err}");
        let err = parse_json::<Doc>(b"secret-value-123", "x").unwrap_err();
        assert!(!err.to_string().contains("secret-value-123"), "{err}");
    }

    #[test]
    fn endpoint_errors_keep_the_code_and_a_clean_description() {
        let redactor = Redactor::new(["refresh-secret-1"]);
        let answer = Answer {
            status: 400,
            body: Bytes::from_static(
                br#"{"error":"invalid_grant","error_description":"token refresh-secret-1 expired"}"#,
            ),
        };
        let err = endpoint_error(&answer, "the token endpoint of a", &redactor);
        assert_eq!(
            err.to_string(),
            "the token endpoint of a answered HTTP 400: invalid_grant (token <redacted> expired)"
        );
        let answer = Answer {
            status: 500,
            body: Bytes::from_static(b"<html>oops</html>"),
        };
        assert_eq!(
            endpoint_error(&answer, "it", &redactor).to_string(),
            "it answered HTTP 500"
        );
        let answer = Answer {
            status: 400,
            body: Bytes::from_static(br#"{"error":"bad \" code with spaces"}"#),
        };
        assert_eq!(
            endpoint_error(&answer, "it", &redactor).to_string(),
            "it answered HTTP 400"
        );
    }

    #[test]
    fn short_urls_drop_the_query() {
        let url = Url::parse("https://a.example:8443/p/q?access_token=zzz#frag").unwrap();
        assert_eq!(short(&url), "https://a.example:8443/p/q");
        assert_eq!(host(&url), "a.example:8443");
    }
}
