//! Open mode's guard against web pages. A server without keys trusts whoever reaches its
//! loopback address; a browser reaches it too, for any page it shows:
//!
//! - a page of another origin can send a request (a `text/plain` POST needs no preflight), so
//!   a request whose `Origin` is not this server's own is refused;
//! - a page of the attacker's own name can be made to resolve to 127.0.0.1 (DNS rebinding) and
//!   then reads the answers as same-origin, so a request whose `Host` is not a loopback name or
//!   address (`localhost`, `127.0.0.1`, `[::1]`, with any port) is refused.
//!
//! The operator's allowed hosts (`AGENTD_ALLOWED_HOSTS`, `http.allowed_hosts`) are accepted in
//! both headers: a name a reverse proxy forwards as `Host`, pages of a host the operator
//! trusts. Refusals are 403 `forbidden`. With keys in the store nothing here applies: a key is
//! what a page cannot send on its own. Requests without `Host` or `Origin` (not from a
//! browser) pass.

use std::net::IpAddr;

use axum::extract::Request;
use axum::http::header::{HOST, ORIGIN};
use axum::http::uri::Authority;
use axum::response::{IntoResponse, Response};

use crate::error::ApiError;
use crate::state::AppState;

/// The guard where no store read is needed: a server that has seen a key is never in open mode
/// again, so its requests pass at once (marked [`OpenModeChecked`]`(false)`). Whether it
/// decided; [`admit`] decides otherwise.
pub fn settled(state: &AppState, request: &mut Request) -> bool {
    if !state.auth.has_keys() {
        return false;
    }
    request.extensions_mut().insert(OpenModeChecked(false));
    true
}

/// The guard (see the module docs): the request back, to go on, or the answer that refuses it.
pub async fn admit(state: AppState, mut request: Request) -> Result<Request, Response> {
    let open = match state.auth.open_mode(&state.engine).await {
        Ok(open) => open,
        Err(err) => return Err(err.into_response()),
    };
    // The authentication extractors of this request reuse the answer (one store read, not two).
    request.extensions_mut().insert(OpenModeChecked(open));
    if open {
        // HTTP/2 carries the host in the URI (`:authority`) instead of a `Host` header.
        let host = request
            .headers()
            .get(HOST)
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned)
            .or_else(|| request.uri().authority().map(|a| a.as_str().to_owned()));
        let origin = request
            .headers()
            .get(ORIGIN)
            .map(|v| v.to_str().unwrap_or("null").to_owned());
        if let Err(refusal) = check(host.as_deref(), origin.as_deref(), &state.allowed_hosts) {
            return Err(ApiError::Forbidden(refusal).into_response());
        }
    }
    Ok(request)
}

/// Whether the server was in open mode when this request arrived, as the guard found it.
#[derive(Debug, Clone, Copy)]
pub struct OpenModeChecked(pub bool);

/// Whether an open-mode request with this `Host` and `Origin` may go on; the refusal's message
/// otherwise.
pub fn check(host: Option<&str>, origin: Option<&str>, allowed: &[String]) -> Result<(), String> {
    let own = match host {
        None => None,
        Some(host) => {
            let parsed = parse_authority(host).filter(|(name, _)| is_allowed(name, allowed));
            if parsed.is_none() {
                return Err(format!(
                    "this server has no API keys and answers only to loopback names (localhost, \
                     127.0.0.1, [::1]), not to Host {host:?}; an operator can allow a name with \
                     AGENTD_ALLOWED_HOSTS, or create a key with `agentd keys create`"
                ));
            }
            parsed
        }
    };
    let Some(origin) = origin else {
        return Ok(());
    };
    let origin_site = url::Url::parse(origin).ok().and_then(|url| {
        let name = bare(url.host_str()?);
        Some((name, url.port_or_known_default()))
    });
    let accepted = match (&origin_site, &own) {
        (Some((name, _)), _) if allowed.contains(name) => true,
        (Some((name, port)), Some((own_name, own_port))) => {
            name == own_name && (own_port.is_none() || port == own_port)
        }
        _ => false,
    };
    if accepted {
        Ok(())
    } else {
        Err(format!(
            "this server has no API keys and does not take requests from web pages of another \
             origin ({origin}); an operator can allow the page's host with AGENTD_ALLOWED_HOSTS, \
             or create a key with `agentd keys create`"
        ))
    }
}

/// A `Host` value as (lowercase name without brackets, port).
fn parse_authority(host: &str) -> Option<(String, Option<u16>)> {
    let authority: Authority = host.parse().ok()?;
    if authority.as_str().contains('@') {
        return None;
    }
    Some((bare(authority.host()), authority.port_u16()))
}

fn bare(host: &str) -> String {
    let host = host.to_ascii_lowercase();
    host.strip_prefix('[')
        .and_then(|h| h.strip_suffix(']'))
        .map(str::to_owned)
        .unwrap_or(host)
}

/// A loopback name or address, or one the operator allowed.
fn is_allowed(name: &str, allowed: &[String]) -> bool {
    let loopback = name == "localhost"
        || name == "localhost."
        || name
            .parse::<IpAddr>()
            .is_ok_and(|ip| ip.to_canonical().is_loopback());
    loopback || allowed.iter().any(|a| a == name)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn allowed(hosts: &[&str]) -> Vec<String> {
        hosts.iter().map(|h| (*h).to_owned()).collect()
    }

    #[test]
    fn loopback_hosts_pass_and_others_are_refused() {
        for host in [
            "localhost:8080",
            "LOCALHOST",
            "127.0.0.1:8080",
            "127.1.2.3",
            "[::1]:8080",
            "[::ffff:127.0.0.1]:80",
        ] {
            assert_eq!(check(Some(host), None, &[]), Ok(()), "{host}");
        }
        for host in [
            "evil.example:8080",
            "localhost.evil.example",
            "10.0.0.1:8080",
            "0.0.0.0:8080",
            "user@localhost:8080",
            "",
        ] {
            assert!(check(Some(host), None, &[]).is_err(), "{host}");
        }
        assert_eq!(check(None, None, &[]), Ok(()), "no Host: not a browser");
    }

    #[test]
    fn only_the_own_origin_passes() {
        assert_eq!(
            check(Some("localhost:8080"), Some("http://localhost:8080"), &[]),
            Ok(())
        );
        assert_eq!(
            check(Some("[::1]:8080"), Some("http://[::1]:8080"), &[]),
            Ok(())
        );
        for origin in [
            "http://localhost:3000",
            "https://evil.example",
            "http://127.0.0.1:8080",
            "null",
            "not a url",
        ] {
            assert!(
                check(Some("localhost:8080"), Some(origin), &[]).is_err(),
                "{origin}"
            );
        }
    }

    #[test]
    fn allowed_hosts_widen_both_rules() {
        let list = allowed(&["agentd.lan", "::2"]);
        assert_eq!(check(Some("agentd.lan:443"), None, &list), Ok(()));
        assert_eq!(check(Some("AGENTD.LAN"), None, &list), Ok(()));
        assert_eq!(check(Some("[::2]:80"), None, &list), Ok(()));
        assert_eq!(
            check(Some("localhost:8080"), Some("https://agentd.lan"), &list),
            Ok(())
        );
        assert!(check(Some("other.lan"), None, &list).is_err());
        assert!(check(Some("localhost:8080"), Some("https://other.lan"), &list).is_err());
    }
}
