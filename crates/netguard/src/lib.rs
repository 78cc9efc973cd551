//! The network guard: the SSRF-safe HTTP client that every request-supplied URL goes
//! through (MCP server URLs, `fetch_url` targets, and every redirect hop of either).
//!
//! A caller of the Agent API names URLs that agentd then contacts from inside the
//! operator's network. Without a guard, `http://169.254.169.254/latest/meta-data` would
//! read the cloud instance's credentials and `http://127.0.0.1:5432/` would probe local
//! services. The guard refuses loopback, private, link-local (cloud metadata included),
//! CGNAT, multicast, broadcast, reserved, documentation and benchmarking ranges of both
//! IPv4 and IPv6, and the IPv6 forms that carry such an IPv4 address (IPv4-mapped,
//! IPv4-compatible, NAT64 `64:ff9b::/96`, 6to4 `2002::/16`). The operator widens it only
//! with explicit CIDRs (`AGENTD_ALLOW_PRIVATE_NETWORKS`), parsed by
//! [`Policy::parse_allow_list`] and applied by [`Policy::with_allowed`].
//!
//! # Two checks, because reqwest has two paths
//! - **IP literals** (`http://127.0.0.1/`, `http://2130706433/`, `http://0x7f.1/`,
//!   `http://[::ffff:127.0.0.1]/`) never reach a DNS resolver: reqwest connects to them
//!   directly. [`Policy::check_url`] parses the URL with the `url` crate, which normalises
//!   every decimal, hex, octal and shortened IPv4 spelling to one address, and checks
//!   that address. It also refuses non-HTTP schemes, credentials in the URL, port 0 and
//!   `localhost` names.
//! - **Host names** are checked where they are resolved: the client from
//!   [`Policy::client_builder`] resolves through a resolver that drops refused addresses.
//!   The connection then uses exactly the addresses that were checked, so a name that
//!   resolves to a public address at check time and to `127.0.0.1` a moment later (DNS
//!   rebinding) cannot slip through between a check and the connect.
//!
//! Redirects take both paths: the redirect policy runs [`Policy::check_url`] on every hop
//! (at most 5), and host names in a hop go through the resolver again.
//!
//! # The guarded fetch
//! [`Policy::fetch`] (a GET) and [`Policy::send_capped`] (a request the caller built,
//! e.g. a POST to a search API) put it all together, and are what the built-in tools use:
//! `check_url` on the first URL, the guarded client for names and hops, then a third
//! check of the address the response actually came from (`remote_addr`, refused: the
//! body is never read), a body read only up to [`FetchLimits::max_bytes`], and one
//! deadline ([`FetchLimits::total_timeout`]) over the whole exchange. Failures are a
//! [`FetchError`]: `Blocked`, `Timeout` or `Http`, none of which carries the URL.
//!
//! # Testing with names that resolve to loopback
//! `Policy::with_hosts_override` (hidden from these docs, for tests only) replaces DNS
//! with a closed hosts table, so a test can make `evil.example` resolve to `127.0.0.1`
//! without a DNS server and without any query leaving the machine. The answers go
//! through the same filter as real DNS answers. No production constructor sets it.
//!
//! # Layout
//! - `ranges`: the table of refused ranges and the IPv4-in-IPv6 forms (pure functions).
//! - `policy`: [`Policy`], its allow list, [`Policy::check_ip`] and [`Policy::check_url`].
//! - `client`: the resolver, the redirect policy and [`Policy::client_builder`].
//! - `fetch`: [`Policy::fetch`], [`Policy::send_capped`], [`FetchLimits`], [`Fetched`],
//!   [`FetchError`].
//! - here: the errors, [`blocked_reason`] and [`describe`] for reporting reqwest errors.
//!
//! # Example
//! The guarded fetch, as the built-in tools use it:
//! ```no_run
//! # async fn run(user_url: &str) -> Result<(), Box<dyn std::error::Error>> {
//! use std::time::Duration;
//! use netguard::{FetchError, FetchLimits, Policy};
//!
//! // Once, at start-up: the operator's allow list and one shared client.
//! let allow = Policy::parse_allow_list("")?;
//! let policy = Policy::with_allowed(&allow)?;
//! let client = policy.client_builder().build()?;
//!
//! let limits = FetchLimits { max_bytes: 2 << 20, total_timeout: Duration::from_secs(30) };
//! match policy.fetch(&client, user_url, &limits).await {
//!     Ok(page) => { /* page.status, page.content_type, page.body, page.truncated */ }
//!     Err(FetchError::Blocked(reason)) => { /* refused: tell the model `reason` */ }
//!     Err(other) => { /* timed out or failed: `other` says how, without the URL */ }
//! }
//! # Ok(())
//! # }
//! ```
//!
//! Or with the client alone, when the caller needs the streaming `reqwest::Response`
//! (an MCP transport, say):
//! ```no_run
//! # async fn run(server_url: &str) -> Result<(), String> {
//! let policy = netguard::Policy::with_allowed(&netguard::Policy::parse_allow_list(
//!     "127.0.0.0/8,::1/128",
//! ).map_err(|e| e.to_string())?)
//! .map_err(|e| e.to_string())?;
//! // The first URL: IP literals are only caught here.
//! let url = policy.check_url(server_url).map_err(|b| b.to_string())?;
//! let client = policy
//!     .client_builder()
//!     .timeout(std::time::Duration::from_secs(30))
//!     .build()
//!     .map_err(|e| netguard::describe(&e))?;
//! match client.get(url).send().await {
//!     Ok(response) => { /* ... */ }
//!     Err(err) if netguard::blocked_reason(&err).is_some() => { /* refused by the guard */ }
//!     Err(err) => return Err(netguard::describe(&err)),
//! }
//! # Ok(())
//! # }
//! ```

mod client;
mod fetch;
mod policy;
mod ranges;

use std::error::Error as StdError;

pub use fetch::{FetchError, FetchLimits, Fetched};
pub use policy::Policy;

/// A refused destination; the message says which rule refused it (e.g.
/// "127.0.0.1 is a loopback address"), never any credentials from the URL.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct Blocked(pub String);

/// Errors of the guard's configuration.
#[derive(Debug, thiserror::Error)]
pub enum NetguardError {
    /// An allow-list entry that is not a CIDR or an IP address.
    #[error("invalid CIDR \"{entry}\" in the private network allow list: {reason}")]
    InvalidCidr {
        /// The entry as written (trimmed).
        entry: String,
        /// What is wrong with it.
        reason: String,
    },
}

/// If a reqwest error was caused by the guard (resolver or redirect refusal), the
/// [`Blocked`] reason. reqwest reports a resolver refusal only as a connect error, so
/// this walks `source()` down to the guard's own error.
pub fn blocked_reason(err: &reqwest::Error) -> Option<Blocked> {
    let mut current: Option<&(dyn StdError + 'static)> = Some(err);
    while let Some(error) = current {
        if let Some(blocked) = error.downcast_ref::<Blocked>() {
            return Some(blocked.clone());
        }
        current = error.source();
    }
    None
}

/// A one-line description of a reqwest error for users, walking `source()` (e.g.
/// "connection refused", "dns error: failed to lookup address information: ...", or the
/// [`Blocked`] reason). Never includes header values, and never the URL (whose query
/// may carry a token).
pub fn describe(err: &reqwest::Error) -> String {
    if let Some(blocked) = blocked_reason(err) {
        return blocked.0;
    }
    // reqwest's own message names the URL, so its kind is said here and the rest comes
    // from the causes underneath it.
    let head = if let Some(status) = err.status() {
        Some(format!("HTTP status {status}"))
    } else if err.is_builder() {
        Some("invalid request".to_owned())
    } else if err.is_redirect() {
        Some("redirect failed".to_owned())
    } else if err.is_decode() {
        Some("could not decode the response body".to_owned())
    } else if err.is_body() {
        Some("error reading the body".to_owned())
    } else {
        None
    };
    let mut causes: Vec<String> = Vec::new();
    let mut current = err.source();
    while let Some(error) = current {
        if let Some(io) = error.downcast_ref::<std::io::Error>() {
            causes.push(io_phrase(io));
            break;
        }
        let message = error.to_string();
        if !is_wrapper_message(&message) && causes.last() != Some(&message) {
            causes.push(message);
        }
        current = error.source();
    }
    // "tcp connect error: connection refused" says nothing "connection refused" does not.
    if causes.len() > 1 && causes[0] == "tcp connect error" {
        causes.remove(0);
    }
    match (head, causes.is_empty()) {
        (Some(head), true) => head,
        (Some(head), false) => format!("{head}: {}", causes.join(": ")),
        (None, false) => causes.join(": "),
        (None, true) if err.is_timeout() => "timed out".to_owned(),
        (None, true) if err.is_connect() => "could not connect".to_owned(),
        (None, true) => "request failed".to_owned(),
    }
}

/// hyper-util's "client error (Connect)" and the like only name the layer.
fn is_wrapper_message(message: &str) -> bool {
    message.starts_with("client error (") || message.is_empty()
}

fn io_phrase(err: &std::io::Error) -> String {
    use std::io::ErrorKind;
    let phrase = match err.kind() {
        ErrorKind::ConnectionRefused => "connection refused",
        ErrorKind::ConnectionReset => "connection reset",
        ErrorKind::ConnectionAborted => "connection aborted",
        ErrorKind::NotConnected => "not connected",
        ErrorKind::AddrNotAvailable => "address not available",
        ErrorKind::HostUnreachable => "host unreachable",
        ErrorKind::NetworkUnreachable => "network unreachable",
        ErrorKind::TimedOut => "timed out",
        ErrorKind::UnexpectedEof => "connection closed before the response was complete",
        ErrorKind::BrokenPipe => "connection closed by the server",
        _ => return err.to_string(),
    };
    phrase.to_owned()
}
