//! [`Policy`]: the allow list, and the checks of one address and of one URL.

use std::collections::HashMap;
use std::net::{IpAddr, Ipv4Addr};
use std::sync::Arc;

use ipnet::IpNet;
use url::{Host, Url};

use crate::ranges::{embedded_ipv4, refusal_v4, refusal_v6};
use crate::{Blocked, NetguardError};

/// Which destinations are refused: every private or special-purpose range (see the crate
/// docs), minus the CIDRs the operator allowed.
///
/// Cheap to clone (the allow list is shared); the guarded client keeps one clone in its
/// resolver and one in its redirect policy.
#[derive(Debug, Clone, Default)]
pub struct Policy {
    /// Operator-allowed ranges (`AGENTD_ALLOW_PRIVATE_NETWORKS`), normalised to their
    /// network address. Empty in the strict default.
    allowed: Arc<[IpNet]>,
    /// A closed hosts table that replaces DNS for the guarded resolver, so tests can make
    /// a name resolve to loopback without a DNS server. `None` (the system resolver) in
    /// every constructor; only [`Policy::with_hosts_override`] sets it.
    hosts_override: Option<Arc<HashMap<String, Vec<IpAddr>>>>,
}

impl Policy {
    /// The default: refuse every private/special range.
    pub fn strict() -> Policy {
        Policy::default()
    }

    /// A policy that also lets through the given CIDRs (`"127.0.0.0/8"`, `"::1/128"`).
    /// A bare IP means `/32` or `/128`; surrounding whitespace and empty entries are
    /// ignored. The error names the first bad entry.
    pub fn with_allowed(cidrs: &[String]) -> Result<Policy, NetguardError> {
        let allowed = cidrs
            .iter()
            .map(|entry| entry.trim())
            .filter(|entry| !entry.is_empty())
            .map(parse_cidr)
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Policy {
            allowed: allowed.into(),
            hosts_override: None,
        })
    }

    /// **For tests only.** Replaces DNS for this policy's guarded resolver with a closed
    /// hosts table: a name in `hosts` (any case, trailing dot ignored) resolves to its
    /// addresses, which then pass through the same filter as real DNS answers (refused
    /// ones dropped; all refused: [`Blocked`]); any other name resolves to nothing, so
    /// the system resolver is never asked (a test sends no DNS query off the machine).
    ///
    /// No production path calls this: [`Policy::strict`] and [`Policy::with_allowed`]
    /// always resolve through the system. It exists so that a test can make
    /// `evil.example` resolve to `127.0.0.1`, or to a mix of allowed and refused
    /// addresses, and watch the guard drop what it must.
    #[doc(hidden)]
    pub fn with_hosts_override(self, hosts: HashMap<String, Vec<IpAddr>>) -> Policy {
        let hosts = hosts
            .into_iter()
            .map(|(name, addrs)| (hosts_key(&name), addrs))
            .collect();
        Policy {
            hosts_override: Some(Arc::new(hosts)),
            ..self
        }
    }

    /// The addresses the hosts override gives for `host`, or `None` when there is no
    /// override (resolve through the system).
    pub(crate) fn overridden_addrs(&self, host: &str) -> Option<Vec<IpAddr>> {
        let hosts = self.hosts_override.as_ref()?;
        Some(hosts.get(&hosts_key(host)).cloned().unwrap_or_default())
    }

    /// Splits a comma-separated CIDR list as in `AGENTD_ALLOW_PRIVATE_NETWORKS`
    /// (`"127.0.0.0/8, ::1"`), validates every entry and returns them normalised
    /// (`"127.0.0.0/8"`, `"::1/128"`; host bits cleared). Whitespace and empty entries are
    /// ignored, so an empty string is an empty list.
    pub fn parse_allow_list(list: &str) -> Result<Vec<String>, NetguardError> {
        list.split(',')
            .map(str::trim)
            .filter(|entry| !entry.is_empty())
            .map(|entry| parse_cidr(entry).map(|net| net.to_string()))
            .collect()
    }

    /// Ok when the address is public or inside an allowed CIDR.
    ///
    /// An IPv6 address that carries an IPv4 address (IPv4-mapped, IPv4-compatible,
    /// NAT64 `64:ff9b::/96`, 6to4 `2002::/16`) is judged by that IPv4 address, against
    /// the allow list too: allowing `127.0.0.0/8` also allows `::ffff:127.0.0.1`.
    pub fn check_ip(&self, ip: IpAddr) -> Result<(), Blocked> {
        if self.is_allowed(ip) {
            return Ok(());
        }
        let refused = match ip {
            IpAddr::V4(v4) => refusal_v4(v4).map(|rule| format!("{v4} is {rule}")),
            IpAddr::V6(v6) => match embedded_ipv4(v6) {
                Some((v4, _)) if self.is_allowed(IpAddr::V4(v4)) => None,
                Some((v4, form)) => {
                    refusal_v4(v4).map(|rule| format!("{v6} is {form} {v4}, {rule}"))
                }
                None => refusal_v6(v6).map(|rule| format!("{v6} is {rule}")),
            },
        };
        match refused {
            Some(reason) => Err(Blocked(reason)),
            None => Ok(()),
        }
    }

    /// Checks a request-supplied URL before anything is sent: scheme `http`/`https`
    /// only, a host, no userinfo (`user:pass@`), port not 0. IP-literal hosts, in every
    /// form the `url` crate normalises (decimal, hex and octal IPv4, IPv6 and its
    /// IPv4-carrying forms), go through [`Policy::check_ip`]; `localhost`, `*.localhost`
    /// and `localhost.` are refused unless `127.0.0.1` is allowed. Other host names
    /// are not resolved here: the guarded client's resolver checks what they resolve to.
    pub fn check_url(&self, url: &str) -> Result<Url, Blocked> {
        // `url::ParseError` describes the problem without echoing the input, so no
        // credentials from a malformed URL can reach the message.
        let parsed = Url::parse(url).map_err(|err| Blocked(format!("invalid URL: {err}")))?;
        match parsed.scheme() {
            "http" | "https" => {}
            other => {
                return Err(Blocked(format!(
                    "the URL scheme \"{other}\" is not allowed (only http and https)"
                )));
            }
        }
        if !parsed.username().is_empty() || parsed.password().is_some() {
            return Err(Blocked(
                "URLs with credentials (user:password@host) are not allowed".to_owned(),
            ));
        }
        if parsed.port() == Some(0) {
            return Err(Blocked("port 0 is not allowed".to_owned()));
        }
        match parsed.host() {
            None => return Err(Blocked("the URL has no host".to_owned())),
            Some(Host::Ipv4(v4)) => self.check_ip(IpAddr::V4(v4))?,
            Some(Host::Ipv6(v6)) => self.check_ip(IpAddr::V6(v6))?,
            Some(Host::Domain(name)) => self.check_host_name(name)?,
        }
        Ok(parsed)
    }

    /// A host name that needs no DNS to be known as loopback. Everything else is left to
    /// the resolver, which sees the addresses the connection will actually use.
    pub(crate) fn check_host_name(&self, name: &str) -> Result<(), Blocked> {
        if name.trim_end_matches('.').is_empty() {
            return Err(Blocked("the URL has an empty host".to_owned()));
        }
        if is_localhost_name(name) && !self.is_allowed(IpAddr::V4(Ipv4Addr::LOCALHOST)) {
            return Err(Blocked(format!(
                "{name} is a loopback host name (localhost)"
            )));
        }
        Ok(())
    }

    fn is_allowed(&self, ip: IpAddr) -> bool {
        self.allowed.iter().any(|net| net.contains(&ip))
    }
}

/// `localhost`, `*.localhost` (RFC 6761 reserves the whole zone for loopback) and
/// `localhost.localdomain`, with or without the trailing root dot, in any case.
fn is_localhost_name(name: &str) -> bool {
    let name = name.trim_end_matches('.').to_ascii_lowercase();
    name == "localhost" || name.ends_with(".localhost") || name == "localhost.localdomain"
}

/// How a name is looked up in the hosts override: lower case, no trailing root dot.
fn hosts_key(name: &str) -> String {
    name.trim_end_matches('.').to_ascii_lowercase()
}

/// One allow-list entry: `ADDR/PREFIX` or a bare address. Host bits are cleared.
fn parse_cidr(entry: &str) -> Result<IpNet, NetguardError> {
    let invalid = |reason: String| NetguardError::InvalidCidr {
        entry: entry.to_owned(),
        reason,
    };
    let (addr, prefix) = match entry.split_once('/') {
        Some((addr, prefix)) => (addr.trim(), Some(prefix.trim())),
        None => (entry, None),
    };
    let ip: IpAddr = addr
        .parse()
        .map_err(|_| invalid(format!("\"{addr}\" is not an IPv4 or IPv6 address")))?;
    let max = if ip.is_ipv4() { 32 } else { 128 };
    let prefix = match prefix {
        None => max,
        Some(text) => text
            .parse::<u8>()
            .ok()
            .filter(|len| *len <= max)
            .ok_or_else(|| {
                invalid(format!(
                    "the prefix length must be a number from 0 to {max}, not \"{text}\""
                ))
            })?,
    };
    IpNet::new(ip, prefix)
        .map(|net| net.trunc())
        .map_err(|err| invalid(err.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn allowed(list: &[&str]) -> Policy {
        let owned: Vec<String> = list.iter().map(|s| (*s).to_owned()).collect();
        Policy::with_allowed(&owned).unwrap()
    }

    /// At least 40 ways to name an internal destination; every one must be refused by
    /// the strict policy without any DNS.
    const HOSTILE: &[&str] = &[
        "http://127.0.0.1",
        "http://127.0.0.1:8080/admin",
        "https://127.0.0.1/",
        "http://2130706433/",
        "http://0x7f000001/",
        "http://0x7f.0x0.0x0.0x1/",
        "http://0177.0.0.1/",
        "http://0177.0000.0000.0001/",
        "http://127.1/",
        "http://127.0.1/",
        "http://[::1]/",
        "http://[0:0:0:0:0:0:0:1]/",
        "http://[::ffff:127.0.0.1]/",
        "http://[::ffff:7f00:1]/",
        "http://[::127.0.0.1]/",
        "http://[::ffff:0:7f00:1]/",
        "http://[64:ff9b::7f00:1]/",
        "http://[64:ff9b::169.254.169.254]/",
        "http://[2002:7f00:1::]/",
        "http://[2002:a9fe:a9fe::1]/",
        "http://169.254.169.254/latest/meta-data",
        "http://169.254.169.254/computeMetadata/v1/",
        "http://2852039166/",
        "http://[::ffff:a9fe:a9fe]/",
        "http://[fd00::1]/",
        "http://[fc00::1]/",
        "http://[fe80::1]/",
        "http://[fec0::1]/",
        "http://[ff02::1]/",
        "http://[2001:db8::1]/",
        "http://localhost/",
        "http://LOCALHOST./",
        "http://localhost:9000/x",
        "http://foo.localhost/",
        "http://a.b.localhost./",
        "http://localhost.localdomain/",
        "http://0/",
        "http://0.0.0.0/",
        "http://[::]/",
        "http://10.0.0.1/",
        "http://10.1/",
        "http://172.16.0.1/",
        "http://172.31.255.255/",
        "http://192.168.1.1/",
        "http://100.64.0.1/",
        "http://192.0.0.1/",
        "http://192.0.2.1/",
        "http://198.51.100.1/",
        "http://203.0.113.1/",
        "http://198.18.0.1/",
        "http://224.0.0.1/",
        "http://240.0.0.1/",
        "http://255.255.255.255/",
        "http://%31%32%37.0.0.1/",
        "ftp://example.com/",
        "file:///etc/passwd",
        "gopher://example.com:70/_GET%20/",
        "dict://example.com:11211/stat",
        "ws://example.com/",
        "javascript:alert(1)",
        "data:text/plain,hi",
        "http://user:pw@example.com/",
        "http://user@example.com/",
        "http://:pw@example.com/",
        "http://example.com:0/",
        "http:///",
        "not a url",
        "",
    ];

    #[test]
    fn strict_policy_refuses_every_hostile_url() {
        assert!(HOSTILE.len() >= 40);
        let policy = Policy::strict();
        for url in HOSTILE {
            let result = policy.check_url(url);
            assert!(result.is_err(), "{url} was accepted: {result:?}");
        }
    }

    #[test]
    fn public_urls_are_accepted_without_dns() {
        let policy = Policy::strict();
        for url in [
            "http://93.184.216.34/",
            "https://example.com/",
            "https://example.com:8443/path?q=1#frag",
            "http://[2606:4700:4700::1111]/",
            "http://[::ffff:93.184.216.34]/",
            "http://[64:ff9b::5db8:d822]/",
            "https://mcp.example.org/sse",
            "https://notlocalhost.com/",
            "https://localhost.example.com/",
            "http://1.1.1.1:80/",
        ] {
            let parsed = policy.check_url(url);
            assert!(parsed.is_ok(), "{url} was refused: {parsed:?}");
        }
    }

    #[test]
    fn messages_name_the_rule() {
        let policy = Policy::strict();
        let reason = |url: &str| policy.check_url(url).unwrap_err().0;
        assert_eq!(
            reason("http://127.0.0.1/"),
            "127.0.0.1 is a loopback address"
        );
        assert_eq!(
            reason("http://2130706433/"),
            "127.0.0.1 is a loopback address"
        );
        assert_eq!(
            reason("http://169.254.169.254/latest/meta-data"),
            "169.254.169.254 is a link-local address (the cloud metadata endpoint)"
        );
        assert_eq!(
            reason("http://[::ffff:127.0.0.1]/"),
            "::ffff:127.0.0.1 is an IPv4-mapped (::ffff:0:0/96) form of 127.0.0.1, a loopback address"
        );
        assert!(reason("http://[2002:7f00:1::]/").contains("6to4"));
        assert!(reason("http://[64:ff9b::7f00:1]/").contains("NAT64"));
        assert_eq!(
            reason("http://localhost./"),
            "localhost. is a loopback host name (localhost)"
        );
        assert!(reason("ftp://example.com/").contains("\"ftp\""));
        assert_eq!(reason("http://example.com:0/"), "port 0 is not allowed");
    }

    #[test]
    fn messages_never_carry_credentials() {
        let policy = Policy::strict();
        for url in [
            "http://admin:hunter2@example.com/",
            "http://admin:hunter2@127.0.0.1/",
            "ftp://admin:hunter2@example.com/",
            "http://admin:hunter2@[::1/",
            "http://admin:hunter2@exa mple.com/",
        ] {
            let reason = policy.check_url(url).unwrap_err().0;
            assert!(!reason.contains("hunter2"), "{url}: {reason}");
            assert!(!reason.contains("admin"), "{url}: {reason}");
        }
    }

    #[test]
    fn check_ip_covers_both_families() {
        let policy = Policy::strict();
        for ip in [
            "127.0.0.1",
            "::1",
            "10.2.3.4",
            "fd12::1",
            "::ffff:10.0.0.1",
            "::ffff:169.254.169.254",
        ] {
            assert!(policy.check_ip(ip.parse().unwrap()).is_err(), "{ip}");
        }
        for ip in ["8.8.8.8", "2001:4860:4860::8888", "::ffff:8.8.8.8"] {
            assert_eq!(policy.check_ip(ip.parse().unwrap()), Ok(()), "{ip}");
        }
    }

    #[test]
    fn allowed_cidrs_open_exactly_their_range() {
        let policy = allowed(&["127.0.0.0/8", "::1/128"]);
        for url in [
            "http://127.0.0.1/",
            "http://127.1/",
            "http://2130706433/",
            "http://[::1]/",
            "http://localhost/",
            "http://foo.localhost./",
            // Embedded IPv4 forms follow the IPv4 allow list.
            "http://[::ffff:127.0.0.1]/",
            "http://[64:ff9b::7f00:1]/",
            "http://[2002:7f00:1::]/",
        ] {
            assert!(policy.check_url(url).is_ok(), "{url} should be allowed");
        }
        for url in [
            "http://10.0.0.1/",
            "http://169.254.169.254/",
            "http://[::2]/",
            "http://[fd00::1]/",
            "http://[::ffff:10.0.0.1]/",
            "http://user:pw@127.0.0.1/",
            "ftp://127.0.0.1/",
        ] {
            assert!(policy.check_url(url).is_err(), "{url} should be refused");
        }
    }

    #[test]
    fn localhost_names_need_127_0_0_1_allowed() {
        let only_two = allowed(&["127.0.0.2"]);
        assert!(only_two.check_url("http://127.0.0.2/").is_ok());
        assert!(only_two.check_url("http://127.0.0.1/").is_err());
        assert!(only_two.check_url("http://localhost/").is_err());
        let only_v6 = allowed(&["::1"]);
        assert!(only_v6.check_url("http://[::1]/").is_ok());
        assert!(only_v6.check_url("http://localhost/").is_err());
        assert!(only_v6.check_url("http://[::ffff:127.0.0.1]/").is_err());
    }

    #[test]
    fn an_allowed_ipv6_range_does_not_open_mapped_ipv4() {
        let policy = allowed(&["fd00::/8"]);
        assert!(policy.check_url("http://[fd00::1]/").is_ok());
        assert!(policy.check_url("http://[fc00::1]/").is_err());
        assert!(policy.check_url("http://[::ffff:10.0.0.1]/").is_err());
    }

    #[test]
    fn allow_list_parsing_normalises() {
        assert_eq!(
            Policy::parse_allow_list("127.0.0.0/8,::1/128").unwrap(),
            vec!["127.0.0.0/8", "::1/128"]
        );
        assert_eq!(
            Policy::parse_allow_list(" 10.1.2.3 , ,::1,, 192.168.7.9/16 ,fd00::5/8").unwrap(),
            vec!["10.1.2.3/32", "::1/128", "192.168.0.0/16", "fd00::/8"]
        );
        assert_eq!(Policy::parse_allow_list("").unwrap(), Vec::<String>::new());
        assert_eq!(
            Policy::parse_allow_list(" , ").unwrap(),
            Vec::<String>::new()
        );
        let round_trip = Policy::parse_allow_list("0.0.0.0/0, ::/0").unwrap();
        assert_eq!(round_trip, vec!["0.0.0.0/0", "::/0"]);
        let policy = Policy::with_allowed(&round_trip).unwrap();
        assert!(policy.check_url("http://127.0.0.1/").is_ok());
        assert!(policy.check_url("http://[::1]/").is_ok());
    }

    #[test]
    fn allow_list_errors_name_the_entry() {
        for (list, entry, hint) in [
            (
                "127.0.0.0/8,not-an-ip",
                "not-an-ip",
                "not an IPv4 or IPv6 address",
            ),
            ("10.0.0.0/33", "10.0.0.0/33", "0 to 32"),
            ("::1/129", "::1/129", "0 to 128"),
            ("10.0.0.0/", "10.0.0.0/", "0 to 32"),
            ("10.0.0.0/x", "10.0.0.0/x", "0 to 32"),
            ("10.0.0.0/-1", "10.0.0.0/-1", "0 to 32"),
            ("localhost", "localhost", "not an IPv4 or IPv6 address"),
            ("10.0.0/8", "10.0.0/8", "not an IPv4 or IPv6 address"),
            ("[::1]", "[::1]", "not an IPv4 or IPv6 address"),
        ] {
            let err = Policy::parse_allow_list(list).unwrap_err();
            let NetguardError::InvalidCidr { entry: got, reason } = &err;
            assert_eq!(got, entry, "{list}");
            assert!(reason.contains(hint), "{list}: {reason}");
            assert!(
                err.to_string().starts_with(&format!(
                    "invalid CIDR \"{entry}\" in the private network allow list: "
                )),
                "{err}"
            );
        }
        let err = Policy::with_allowed(&["10.0.0.0/8".to_owned(), " bad ".to_owned()]).unwrap_err();
        assert!(err.to_string().contains("\"bad\""), "{err}");
    }

    #[test]
    fn with_allowed_ignores_blank_entries() {
        let policy = Policy::with_allowed(&[String::new(), "  ".to_owned()]).unwrap();
        assert!(policy.check_url("http://127.0.0.1/").is_err());
    }
}
