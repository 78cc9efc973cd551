//! The guarded `reqwest` client: a resolver that drops refused addresses and a redirect
//! policy that re-checks every hop.

use std::error::Error as StdError;
use std::net::{IpAddr, SocketAddr};
use std::time::Duration;

use reqwest::dns::{Addrs, Name, Resolve, Resolving};
use reqwest::redirect;

use crate::{Blocked, Policy};

/// Redirect hops followed before the guard gives up.
pub(crate) const MAX_REDIRECTS: usize = 5;

/// How long a TCP (and TLS) connect may take.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

type BoxError = Box<dyn StdError + Send + Sync>;

impl Policy {
    /// A `reqwest::ClientBuilder` already set up with: a DNS resolver that resolves with
    /// `tokio::net::lookup_host` and drops refused addresses (all refused: an error
    /// carrying a [`Blocked`]), a redirect policy that re-checks every hop with
    /// [`Policy::check_url`] (at most 5 hops), no proxy (so `HTTP(S)_PROXY` cannot make
    /// reqwest resolve a proxy instead of the target), a 10 s connect timeout and
    /// `https_only(false)`. Callers add their own timeouts and headers and `build()`.
    ///
    /// Two things stay with the caller:
    /// - reqwest does not ask the resolver about IP-literal hosts, so pass the first URL
    ///   through [`Policy::check_url`] before sending (redirect hops are checked here);
    /// - do not call `.resolve()`, `.resolve_to_addrs()`, `.dns_resolver()`, `.proxy()`
    ///   or `.redirect()` on the returned builder: each would bypass the guard.
    pub fn client_builder(&self) -> reqwest::ClientBuilder {
        reqwest::Client::builder()
            .dns_resolver(GuardedResolver {
                policy: self.clone(),
            })
            .redirect(redirect_policy(self.clone()))
            .no_proxy()
            .connect_timeout(CONNECT_TIMEOUT)
            .https_only(false)
    }

    /// Resolves `host` (through the system, or the test-only hosts override) and keeps
    /// only the addresses this policy lets through.
    pub(crate) async fn resolve_host(&self, host: &str) -> Result<Vec<SocketAddr>, BoxError> {
        self.check_host_name(host)?;
        // reqwest connects to IP literals without asking the resolver; should one arrive
        // anyway, judge it directly instead of handing it to the system resolver.
        if let Ok(ip) = host.parse::<IpAddr>() {
            self.check_ip(ip)?;
            return Ok(vec![SocketAddr::new(ip, 0)]);
        }
        if let Some(addrs) = self.overridden_addrs(host) {
            let resolved = addrs.into_iter().map(|ip| SocketAddr::new(ip, 0));
            return self.keep_allowed(host, resolved);
        }
        let resolved = tokio::net::lookup_host((host, 0)).await?;
        self.keep_allowed(host, resolved)
    }

    /// The resolved addresses this policy lets through; an error when there are none.
    fn keep_allowed(
        &self,
        host: &str,
        resolved: impl IntoIterator<Item = SocketAddr>,
    ) -> Result<Vec<SocketAddr>, BoxError> {
        let mut kept = Vec::new();
        let mut first_refusal = None;
        for addr in resolved {
            match self.check_ip(addr.ip()) {
                Ok(()) => kept.push(addr),
                Err(blocked) => {
                    tracing::debug!(host, %blocked, "netguard dropped a resolved address");
                    first_refusal.get_or_insert(blocked);
                }
            }
        }
        match (kept.is_empty(), first_refusal) {
            (false, _) => Ok(kept),
            (true, Some(blocked)) => Err(Box::new(Blocked(format!(
                "{host} resolves only to refused addresses ({blocked})"
            )))),
            (true, None) => Err(format!("no addresses found for {host}").into()),
        }
    }
}

/// The resolver installed by [`Policy::client_builder`].
struct GuardedResolver {
    policy: Policy,
}

impl Resolve for GuardedResolver {
    fn resolve(&self, name: Name) -> Resolving {
        let policy = self.policy.clone();
        let host = name.as_str().to_owned();
        Box::pin(async move {
            let addrs = policy.resolve_host(&host).await?;
            Ok(Box::new(addrs.into_iter()) as Addrs)
        })
    }
}

/// Follows at most [`MAX_REDIRECTS`] hops, each one passing [`Policy::check_url`]; host
/// names in a hop are then checked again by the resolver when reqwest connects.
fn redirect_policy(policy: Policy) -> redirect::Policy {
    redirect::Policy::custom(move |attempt| {
        // `previous()` holds the first URL and every hop followed so far.
        if attempt.previous().len() > MAX_REDIRECTS {
            return attempt.error(Blocked(format!(
                "too many redirects (more than {MAX_REDIRECTS})"
            )));
        }
        match policy.check_url(attempt.url().as_str()) {
            Ok(_) => attempt.follow(),
            Err(blocked) => attempt.error(Blocked(format!("redirect refused: {blocked}"))),
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn resolve(policy: &Policy, host: &str) -> Result<Vec<SocketAddr>, BoxError> {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let name: Name = host.parse().unwrap();
        runtime.block_on(async {
            let addrs = GuardedResolver {
                policy: policy.clone(),
            }
            .resolve(name)
            .await?;
            Ok(addrs.collect())
        })
    }

    fn blocked(err: &BoxError) -> Option<&Blocked> {
        err.downcast_ref::<Blocked>()
    }

    #[test]
    fn resolver_refuses_localhost_under_the_strict_policy() {
        let err = resolve(&Policy::strict(), "localhost").unwrap_err();
        assert!(blocked(&err).is_some(), "{err}");
    }

    #[test]
    fn resolver_judges_ip_literals_itself() {
        let err = resolve(&Policy::strict(), "127.0.0.1").unwrap_err();
        assert_eq!(
            blocked(&err).map(|b| b.0.as_str()),
            Some("127.0.0.1 is a loopback address")
        );
        let addrs = resolve(&Policy::strict(), "93.184.216.34").unwrap();
        assert_eq!(addrs, vec!["93.184.216.34:0".parse().unwrap()]);
    }

    #[test]
    fn resolved_addresses_are_filtered() {
        let addrs = |list: &[&str]| -> Vec<SocketAddr> {
            list.iter().map(|a| a.parse().unwrap()).collect()
        };
        let strict = Policy::strict();
        let kept = strict
            .keep_allowed(
                "mixed.test",
                addrs(&[
                    "127.0.0.1:0",
                    "93.184.216.34:0",
                    "[::1]:0",
                    "[2606:4700::1]:0",
                ]),
            )
            .unwrap();
        assert_eq!(kept, addrs(&["93.184.216.34:0", "[2606:4700::1]:0"]));

        let err = strict
            .keep_allowed(
                "rebind.test",
                addrs(&["169.254.169.254:0", "[::ffff:10.0.0.1]:0"]),
            )
            .unwrap_err();
        assert_eq!(
            blocked(&err).map(|b| b.0.as_str()),
            Some(
                "rebind.test resolves only to refused addresses \
                 (169.254.169.254 is a link-local address (the cloud metadata endpoint))"
            )
        );

        let err = strict.keep_allowed("empty.test", Vec::new()).unwrap_err();
        assert!(blocked(&err).is_none(), "{err}");

        let allow_v6 = Policy::with_allowed(&["::1".to_owned()]).unwrap();
        let kept = allow_v6
            .keep_allowed("localhost", addrs(&["127.0.0.1:0", "[::1]:0"]))
            .unwrap();
        assert_eq!(kept, addrs(&["[::1]:0"]));
    }

    #[test]
    fn the_hosts_override_replaces_dns_and_is_filtered_like_it() {
        let ip = |s: &str| s.parse::<IpAddr>().unwrap();
        let hosts = std::collections::HashMap::from([
            (
                "Mixed.Example.".to_owned(),
                vec![ip("127.0.0.1"), ip("93.184.216.34"), ip("::1")],
            ),
            ("evil.example".to_owned(), vec![ip("127.0.0.1"), ip("::1")]),
        ]);
        let policy = Policy::strict().with_hosts_override(hosts);
        // Names match in any case, with or without the root dot.
        for name in ["mixed.example", "MIXED.example."] {
            let addrs = resolve(&policy, name).unwrap();
            assert_eq!(addrs, vec!["93.184.216.34:0".parse().unwrap()], "{name}");
        }
        let err = resolve(&policy, "evil.example").unwrap_err();
        assert_eq!(
            blocked(&err).map(|b| b.0.as_str()),
            Some(
                "evil.example resolves only to refused addresses (127.0.0.1 is a loopback address)"
            )
        );
        // A name outside the table resolves to nothing: the system resolver is not asked.
        let err = resolve(&policy, "example.com").unwrap_err();
        assert!(blocked(&err).is_none(), "{err}");
        assert_eq!(err.to_string(), "no addresses found for example.com");
        // The localhost rule still comes first.
        let err = resolve(&policy, "localhost").unwrap_err();
        assert!(blocked(&err).is_some(), "{err}");
    }

    #[test]
    fn no_constructor_sets_the_hosts_override() {
        let strict = Policy::strict();
        let allowed = Policy::with_allowed(&["10.0.0.0/8".to_owned()]).unwrap();
        assert_eq!(strict.overridden_addrs("example.com"), None);
        assert_eq!(allowed.overridden_addrs("example.com"), None);
    }

    #[test]
    fn resolver_keeps_only_allowed_addresses() {
        let policy = Policy::with_allowed(&["127.0.0.0/8".to_owned()]).unwrap();
        let addrs = resolve(&policy, "localhost").unwrap();
        assert!(!addrs.is_empty());
        assert!(
            addrs.iter().all(|a| a.ip().is_loopback() && a.is_ipv4()),
            "{addrs:?}"
        );
    }
}
