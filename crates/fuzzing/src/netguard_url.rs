//! The network guard's parsers (`netguard/src/policy.rs`): a request-supplied URL checked by
//! the strict policy and by one that allows loopback, an IP address built from the input
//! checked directly, and the input as an allow list (`AGENTD_ALLOW_PRIVATE_NETWORKS`).
//!
//! Promises: an accepted URL is http(s), has a host, no credentials and no port 0; an accepted
//! IP literal (any spelling the URL parser normalises: decimal, octal, hex, IPv6 and its
//! IPv4-carrying forms) is none of the ranges the standard library itself knows as loopback,
//! private, link-local, unspecified, broadcast, multicast or documentation; allowing loopback
//! never refuses more; a normalised allow list parses back to itself.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use netguard::Policy;
use url::{Host, Url};

pub fn run(data: &[u8]) {
    let text = String::from_utf8_lossy(data);
    let strict = Policy::strict();
    let loopback = Policy::with_allowed(&["127.0.0.0/8".to_owned(), "::1/128".to_owned()]).ok();
    for candidate in [text.as_ref(), text.trim()] {
        let accepted = strict.check_url(candidate);
        if let Ok(url) = &accepted {
            check_accepted(url);
        }
        if let Some(loopback) = &loopback
            && accepted.is_ok()
        {
            assert!(
                loopback.check_url(candidate).is_ok(),
                "allowing loopback refused {candidate:?}"
            );
        }
    }
    for ip in ips(data) {
        if strict.check_ip(ip).is_ok() {
            assert!(!special(ip), "{ip} passed the strict guard");
        }
    }
    if let Ok(list) = Policy::parse_allow_list(&text) {
        let joined = list.join(",");
        assert_eq!(
            Policy::parse_allow_list(&joined).ok().as_ref(),
            Some(&list),
            "a normalised allow list does not parse back to itself"
        );
        assert!(Policy::with_allowed(&list).is_ok());
    }
}

fn check_accepted(url: &Url) {
    assert!(matches!(url.scheme(), "http" | "https"), "scheme {url}");
    assert!(
        url.username().is_empty() && url.password().is_none(),
        "credentials {url}"
    );
    assert_ne!(url.port(), Some(0), "port 0 {url}");
    assert!(url.host().is_some(), "a URL without a host passed: {url}");
    match url.host() {
        None => {}
        Some(Host::Ipv4(v4)) => assert!(!special(IpAddr::V4(v4)), "{url} passed the strict guard"),
        Some(Host::Ipv6(v6)) => assert!(!special(IpAddr::V6(v6)), "{url} passed the strict guard"),
        Some(Host::Domain(name)) => {
            let name = name.trim_end_matches('.').to_ascii_lowercase();
            assert!(
                !name.is_empty() && name != "localhost" && !name.ends_with(".localhost"),
                "{url} passed the strict guard"
            );
        }
    }
}

/// The addresses the input's bytes spell (as an IPv4 and an IPv6 address).
fn ips(data: &[u8]) -> Vec<IpAddr> {
    let mut ips = Vec::new();
    if let Some(v4) = data.get(..4).and_then(|b| <[u8; 4]>::try_from(b).ok()) {
        ips.push(IpAddr::V4(Ipv4Addr::from(v4)));
    }
    if let Some(v6) = data.get(..16).and_then(|b| <[u8; 16]>::try_from(b).ok()) {
        ips.push(IpAddr::V6(Ipv6Addr::from(v6)));
    }
    ips
}

/// What the standard library alone knows must never be reached from a request.
fn special(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => special_v4(v4),
        IpAddr::V6(v6) => {
            if let Some(v4) = v6.to_ipv4_mapped() {
                return special_v4(v4);
            }
            v6.is_loopback()
                || v6.is_unspecified()
                || v6.is_multicast()
                || v6.is_unique_local()
                || v6.is_unicast_link_local()
        }
    }
}

fn special_v4(v4: Ipv4Addr) -> bool {
    v4.is_loopback()
        || v4.is_private()
        || v4.is_link_local()
        || v4.is_unspecified()
        || v4.is_broadcast()
        || v4.is_multicast()
        || v4.is_documentation()
        || v4.octets()[0] == 0
}
