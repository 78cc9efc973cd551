//! Property tests of the range checks, against a table written here from the RFCs (not
//! from `ranges.rs`), so a slip in either shows up as a disagreement:
//! - every address inside a refused range is refused, and so are the IPv6 forms that
//!   carry a refused IPv4 address (IPv4-mapped, -compatible, -translated, NAT64, 6to4);
//! - addresses outside every refused range are allowed, in all those forms too;
//! - an allowed CIDR lets through exactly its own members;
//! - `check_url` of any IPv4 address, in any decimal/hex/octal/shortened spelling,
//!   agrees with `check_ip` of that address.

#![expect(
    clippy::unwrap_used,
    reason = "the tables below are constants; a typo in one is a broken test"
)]

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use ipnet::{Ipv4Net, Ipv6Net};
use netguard::Policy;
use proptest::prelude::*;
use url::{Host, Url};

/// Refused IPv4 ranges.
const V4_REFUSED: &[&str] = &[
    "0.0.0.0/8",       // "this network"
    "10.0.0.0/8",      // private
    "100.64.0.0/10",   // carrier-grade NAT
    "127.0.0.0/8",     // loopback
    "169.254.0.0/16",  // link-local, cloud metadata
    "172.16.0.0/12",   // private
    "192.0.0.0/24",    // IETF protocol assignments
    "192.0.2.0/24",    // documentation
    "192.88.99.0/24",  // 6to4 relay anycast
    "192.168.0.0/16",  // private
    "198.18.0.0/15",   // benchmarking
    "198.51.100.0/24", // documentation
    "203.0.113.0/24",  // documentation
    "224.0.0.0/4",     // multicast
    "240.0.0.0/4",     // reserved, broadcast
];

/// Refused IPv6 ranges that do not carry an IPv4 address.
const V6_REFUSED: &[&str] = &[
    "::/128",         // unspecified
    "::1/128",        // loopback
    "100::/64",       // discard-only
    "64:ff9b:1::/48", // local-use NAT64
    "200::/7",        // outside 2000::/3 ...
    "400::/6",
    "800::/5",
    "1000::/4",
    "4000::/2",
    "8000::/1",      // ... which includes:
    "fc00::/7",      // unique local
    "fe80::/10",     // link-local
    "fec0::/10",     // site-local
    "ff00::/8",      // multicast
    "2001::/32",     // Teredo
    "2001:2::/48",   // benchmarking
    "2001:10::/28",  // ORCHID
    "2001:20::/28",  // ORCHIDv2
    "2001:db8::/32", // documentation
    "3fff::/20",     // documentation
];

fn v4_refused() -> Vec<Ipv4Net> {
    V4_REFUSED.iter().map(|s| s.parse().unwrap()).collect()
}

fn v6_refused() -> Vec<Ipv6Net> {
    V6_REFUSED.iter().map(|s| s.parse().unwrap()).collect()
}

fn is_refused_v4(ip: Ipv4Addr) -> bool {
    v4_refused().iter().any(|net| net.contains(&ip))
}

/// The address at `offset` (wrapped) inside `net`.
fn v4_member(net: Ipv4Net, offset: u32) -> Ipv4Addr {
    let host_bits = 32 - u32::from(net.prefix_len());
    let mask = if host_bits == 32 {
        u32::MAX
    } else {
        (1_u32 << host_bits) - 1
    };
    Ipv4Addr::from(u32::from(net.network()) | (offset & mask))
}

fn v6_member(net: Ipv6Net, offset: u128) -> Ipv6Addr {
    let host_bits = 128 - u32::from(net.prefix_len());
    let mask = if host_bits == 128 {
        u128::MAX
    } else {
        (1_u128 << host_bits) - 1
    };
    Ipv6Addr::from(u128::from(net.network()) | (offset & mask))
}

/// The IPv6 forms that carry `v4`; `suffix` fills the free bits of 6to4.
fn carrying_forms(v4: Ipv4Addr, suffix: u128) -> Vec<Ipv6Addr> {
    let v4 = u128::from(u32::from(v4));
    vec![
        Ipv6Addr::from(0xffff_u128 << 32 | v4),      // ::ffff:a.b.c.d
        Ipv6Addr::from(v4),                          // ::a.b.c.d
        Ipv6Addr::from(0xffff_u128 << 48 | v4),      // ::ffff:0:a.b.c.d
        Ipv6Addr::from(0x0064_ff9b_u128 << 96 | v4), // 64:ff9b::a.b.c.d
        Ipv6Addr::from(0x2002_u128 << 112 | v4 << 80 | (suffix & ((1 << 80) - 1))), // 2002:aabb:ccdd::/48
    ]
}

/// One IPv4 address spelled the way a URL parser must normalise it: 1 to 4 parts
/// (the last one holding the remaining bytes), each in decimal, hex or octal.
fn spell(ip: Ipv4Addr, parts: usize, radixes: &[u8], upper: bool, trailing_dot: bool) -> String {
    let [a, b, c, d] = ip.octets().map(u32::from);
    let values: Vec<u32> = match parts {
        1 => vec![u32::from(ip)],
        2 => vec![a, b << 16 | c << 8 | d],
        3 => vec![a, b, c << 8 | d],
        _ => vec![a, b, c, d],
    };
    let mut spelled: Vec<String> = values
        .iter()
        .zip(radixes.iter().cycle())
        .map(|(value, radix)| match radix % 3 {
            0 => value.to_string(),
            1 if upper => format!("0X{value:X}"),
            1 => format!("0x{value:x}"),
            _ => format!("0{value:o}"),
        })
        .collect();
    if trailing_dot {
        spelled.push(String::new());
    }
    spelled.join(".")
}

fn policy_allowing(cidr: &str) -> Policy {
    Policy::with_allowed(&[cidr.to_owned()]).unwrap()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn every_address_in_a_refused_ipv4_range_is_refused_in_every_form(
        which in 0..V4_REFUSED.len(),
        offset in any::<u32>(),
        suffix in any::<u128>(),
    ) {
        let policy = Policy::strict();
        let net = v4_refused()[which];
        let ip = v4_member(net, offset);
        prop_assert!(policy.check_ip(IpAddr::V4(ip)).is_err(), "{ip} in {net}");
        for form in carrying_forms(ip, suffix) {
            prop_assert!(policy.check_ip(IpAddr::V6(form)).is_err(), "{form} carries {ip}");
        }
    }

    #[test]
    fn every_address_in_a_refused_ipv6_range_is_refused(
        which in 0..V6_REFUSED.len(),
        offset in any::<u128>(),
    ) {
        let net = v6_refused()[which];
        let ip = v6_member(net, offset);
        prop_assert!(Policy::strict().check_ip(IpAddr::V6(ip)).is_err(), "{ip} in {net}");
    }

    #[test]
    fn the_rest_of_the_reserved_ipv6_block_is_refused_unless_it_carries_a_public_ipv4(
        offset in any::<u128>(),
    ) {
        // ::/8 holds the IPv4-carrying forms (judged by their IPv4 address, below) and
        // otherwise nothing public.
        let ip = v6_member("::/8".parse().unwrap(), offset);
        let carries = ip.segments()[..5] == [0; 5] && matches!(ip.segments()[5], 0 | 0xffff)
            || ip.segments()[..6] == [0, 0, 0, 0, 0xffff, 0]
            || ip.segments()[..6] == [0x64, 0xff9b, 0, 0, 0, 0];
        prop_assume!(!carries);
        prop_assert!(Policy::strict().check_ip(IpAddr::V6(ip)).is_err(), "{ip}");
    }

    #[test]
    fn public_ipv4_addresses_are_allowed_in_every_form(
        raw in any::<u32>(),
        suffix in any::<u128>(),
    ) {
        let ip = Ipv4Addr::from(raw);
        prop_assume!(!is_refused_v4(ip));
        let policy = Policy::strict();
        prop_assert_eq!(policy.check_ip(IpAddr::V4(ip)), Ok(()), "{}", ip);
        for form in carrying_forms(ip, suffix) {
            prop_assert_eq!(policy.check_ip(IpAddr::V6(form)), Ok(()), "{} carries {}", form, ip);
        }
    }

    #[test]
    fn public_ipv6_addresses_are_allowed(offset in any::<u128>()) {
        // Global unicast (2000::/3) outside the refused ranges; 6to4 (2002::/16) is
        // judged by its IPv4 address, above.
        let ip = v6_member("2000::/3".parse().unwrap(), offset);
        prop_assume!(!v6_refused().iter().any(|net| net.contains(&ip)));
        prop_assume!(ip.segments()[0] != 0x2002);
        prop_assert_eq!(Policy::strict().check_ip(IpAddr::V6(ip)), Ok(()), "{}", ip);
    }

    #[test]
    fn an_allowed_ipv4_cidr_lets_through_exactly_its_members(
        which in 0..V4_REFUSED.len(),
        net_offset in any::<u32>(),
        extra_len in 0_u8..=24,
        probe in any::<u32>(),
        member in any::<u32>(),
    ) {
        // A CIDR inside a refused range, and probes across that whole range, so both
        // members and non-members come up.
        let outer = v4_refused()[which];
        let len = (outer.prefix_len() + extra_len).min(32);
        let allowed = Ipv4Net::new(v4_member(outer, net_offset), len).unwrap().trunc();
        let policy = policy_allowing(&allowed.to_string());

        let inside = v4_member(allowed, member);
        prop_assert_eq!(policy.check_ip(IpAddr::V4(inside)), Ok(()), "{} in {}", inside, allowed);
        // The allow list follows an IPv4 address into its mapped form.
        let mapped = IpAddr::V6(inside.to_ipv6_mapped());
        prop_assert_eq!(policy.check_ip(mapped), Ok(()), "{} in {}", mapped, allowed);

        let probe = v4_member(outer, probe);
        let result = policy.check_ip(IpAddr::V4(probe));
        prop_assert_eq!(result.is_ok(), allowed.contains(&probe), "{} vs {}", probe, allowed);
        let mapped = IpAddr::V6(probe.to_ipv6_mapped());
        prop_assert_eq!(policy.check_ip(mapped).is_ok(), allowed.contains(&probe), "{}", mapped);
    }

    #[test]
    fn an_allowed_ipv6_cidr_lets_through_exactly_its_members(
        net_offset in any::<u128>(),
        extra_len in 0_u8..=120,
        probe in any::<u128>(),
        member in any::<u128>(),
    ) {
        let outer: Ipv6Net = "fc00::/7".parse().unwrap();
        let len = outer.prefix_len() + extra_len;
        let allowed = Ipv6Net::new(v6_member(outer, net_offset), len).unwrap().trunc();
        let policy = policy_allowing(&allowed.to_string());
        let inside = v6_member(allowed, member);
        prop_assert_eq!(policy.check_ip(IpAddr::V6(inside)), Ok(()), "{} in {}", inside, allowed);
        let probe = v6_member(outer, probe);
        let result = policy.check_ip(IpAddr::V6(probe));
        prop_assert_eq!(result.is_ok(), allowed.contains(&probe), "{} vs {}", probe, allowed);
    }

    #[test]
    fn check_url_agrees_with_check_ip_for_every_ipv4_spelling(
        raw in any::<u32>(),
        parts in 1_usize..=4,
        radixes in proptest::collection::vec(0_u8..3, 4),
        upper in any::<bool>(),
        trailing_dot in any::<bool>(),
        port in proptest::option::of(1_u16..=u16::MAX),
    ) {
        let ip = Ipv4Addr::from(raw);
        let policy = Policy::strict();
        let host = spell(ip, parts, &radixes, upper, trailing_dot);
        let url = match port {
            Some(port) => format!("http://{host}:{port}/x"),
            None => format!("http://{host}/x"),
        };
        let checked = policy.check_url(&url);
        if let Ok(parsed) = &checked {
            prop_assert_eq!(parsed.host(), Some(Host::Ipv4(ip)), "{}", url);
        }
        prop_assert_eq!(checked.map(|_| ()), policy.check_ip(IpAddr::V4(ip)), "{}", url);
        // The url crate is the normaliser the guard relies on: the same address.
        prop_assert_eq!(
            Url::parse(&url).ok().and_then(|u| u.host().map(|h| h.to_owned())),
            Some(Host::Ipv4(ip))
        );
    }

    #[test]
    fn check_url_agrees_with_check_ip_for_ipv4_in_ipv6_literals(
        raw in any::<u32>(),
        form in 0_usize..5,
        suffix in any::<u128>(),
    ) {
        let ip = Ipv4Addr::from(raw);
        let policy = Policy::strict();
        let v6 = carrying_forms(ip, suffix)[form];
        let dotted = format!("http://[{v6}]/");
        let [a, b, c, d] = ip.octets();
        let spelled = match form {
            0 => format!("http://[::ffff:{a}.{b}.{c}.{d}]/"),
            3 => format!("http://[64:ff9b::{a}.{b}.{c}.{d}]/"),
            _ => dotted.clone(),
        };
        let expected = policy.check_ip(IpAddr::V4(ip)).is_ok();
        prop_assert_eq!(policy.check_url(&dotted).is_ok(), expected, "{}", dotted);
        prop_assert_eq!(policy.check_url(&spelled).is_ok(), expected, "{}", spelled);
    }
}

#[test]
fn spellings_cover_the_usual_tricks() {
    let ip = Ipv4Addr::new(127, 0, 0, 1);
    assert_eq!(spell(ip, 1, &[0], false, false), "2130706433");
    assert_eq!(spell(ip, 1, &[1], false, false), "0x7f000001");
    assert_eq!(spell(ip, 1, &[2], false, false), "017700000001");
    assert_eq!(spell(ip, 2, &[0], false, false), "127.1");
    assert_eq!(spell(ip, 3, &[0], false, false), "127.0.1");
    assert_eq!(spell(ip, 4, &[2, 0, 0, 0], false, false), "0177.0.0.1");
    assert_eq!(spell(ip, 4, &[1], true, true), "0X7F.0X0.0X0.0X1.");
}
