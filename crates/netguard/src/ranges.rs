//! The address table: which IPv4 and IPv6 ranges are refused, and the IPv6 forms that
//! carry an IPv4 address inside them.
//!
//! Pure functions over `std::net` types; the allow list is applied by [`crate::Policy`].

use std::net::{Ipv4Addr, Ipv6Addr};

/// The rule that refuses an IPv4 address (worded to follow "ADDRESS is ..."), or `None`
/// for a public address.
pub(crate) fn refusal_v4(ip: Ipv4Addr) -> Option<&'static str> {
    let rule = match ip.octets() {
        [0, ..] => "an unspecified (0.0.0.0/8, \"this network\") address",
        [127, ..] => "a loopback address",
        [10, ..] => "a private (10.0.0.0/8) address",
        [172, b, ..] if (16..=31).contains(&b) => "a private (172.16.0.0/12) address",
        [192, 168, ..] => "a private (192.168.0.0/16) address",
        [169, 254, 169, 254] => "a link-local address (the cloud metadata endpoint)",
        [169, 254, ..] => "a link-local (169.254.0.0/16) address",
        [100, b, ..] if (64..=127).contains(&b) => "a carrier-grade NAT (100.64.0.0/10) address",
        [192, 0, 0, _] => "an IETF protocol assignment (192.0.0.0/24) address",
        [192, 0, 2, _] | [198, 51, 100, _] | [203, 0, 113, _] => "a documentation address",
        [198, 18 | 19, ..] => "a benchmarking (198.18.0.0/15) address",
        [192, 88, 99, _] => "a 6to4 relay anycast (192.88.99.0/24) address",
        [255, 255, 255, 255] => "the broadcast address",
        [a, ..] if a >= 240 => "a reserved (240.0.0.0/4) address",
        [a, ..] if a >= 224 => "a multicast address",
        _ => return None,
    };
    Some(rule)
}

/// The rule that refuses an IPv6 address by its own prefix, or `None` for a public
/// address. Callers look for an embedded IPv4 address with [`embedded_ipv4`] first: the
/// IPv4-carrying prefixes (`::ffff:0:0/96`, `64:ff9b::/96`, `2002::/16`) are judged by
/// the address they carry, not here.
pub(crate) fn refusal_v6(ip: Ipv6Addr) -> Option<&'static str> {
    let s = ip.segments();
    let rule = if ip.is_unspecified() {
        "the unspecified address"
    } else if ip.is_loopback() {
        "a loopback address"
    } else if s[0] & 0xfe00 == 0xfc00 {
        "a private (unique local, fc00::/7) address"
    } else if s[0] & 0xffc0 == 0xfe80 {
        "a link-local (fe80::/10) address"
    } else if s[0] & 0xffc0 == 0xfec0 {
        "a site-local (fec0::/10) address"
    } else if s[0] & 0xff00 == 0xff00 {
        "a multicast address"
    } else if s[0] == 0x2001 && s[1] == 0x0db8 {
        "a documentation (2001:db8::/32) address"
    } else if s[0] == 0x3fff && s[1] < 0x1000 {
        "a documentation (3fff::/20) address"
    } else if s[0] == 0x2001 && s[1] == 0 {
        "a Teredo tunnel (2001::/32) address"
    } else if s[0] == 0x2001 && s[1] == 0x0002 && s[2] == 0 {
        "a benchmarking (2001:2::/48) address"
    } else if s[0] == 0x2001 && matches!(s[1] & 0xfff0, 0x0010 | 0x0020) {
        "an ORCHID (2001:10::/28, 2001:20::/28) address"
    } else if s[0] == 0x0064 && s[1] == 0xff9b && s[2] == 0x0001 {
        "a local-use NAT64 (64:ff9b:1::/48) address"
    } else if s[0] == 0x0100 && s[1] == 0 && s[2] == 0 && s[3] == 0 {
        "a discard-only (100::/64) address"
    } else if s[0] & 0xff00 == 0 {
        "a reserved (::/8) address"
    } else if s[0] & 0xe000 != 0x2000 {
        "outside the global unicast range (2000::/3)"
    } else {
        return None;
    };
    Some(rule)
}

/// An IPv4 address carried inside an IPv6 one, with the name of the form (worded to
/// follow "ADDRESS is ..."). A connection to such an address can reach the IPv4 host
/// (dual-stack sockets, NAT64 gateways, 6to4 relays), so the IPv4 address decides.
pub(crate) fn embedded_ipv4(ip: Ipv6Addr) -> Option<(Ipv4Addr, &'static str)> {
    let s = ip.segments();
    let o = ip.octets();
    let tail = Ipv4Addr::new(o[12], o[13], o[14], o[15]);
    if let Some(v4) = ip.to_ipv4_mapped() {
        return Some((v4, "an IPv4-mapped (::ffff:0:0/96) form of"));
    }
    if s[..4] == [0, 0, 0, 0] && s[4] == 0xffff && s[5] == 0 {
        return Some((tail, "an IPv4-translated (::ffff:0:0:0/96) form of"));
    }
    // `::` and `::1` are IPv6's own unspecified and loopback addresses, not IPv4 forms.
    if s[..6] == [0; 6] && !ip.is_unspecified() && !ip.is_loopback() {
        return Some((tail, "an IPv4-compatible (::/96) form of"));
    }
    if s[0] == 0x0064 && s[1] == 0xff9b && s[2..6] == [0; 4] {
        return Some((tail, "a NAT64 (64:ff9b::/96) form of"));
    }
    if s[0] == 0x2002 {
        let v4 = Ipv4Addr::new(o[2], o[3], o[4], o[5]);
        return Some((v4, "a 6to4 (2002::/16) form of"));
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v4(s: &str) -> Ipv4Addr {
        s.parse().unwrap()
    }

    fn v6(s: &str) -> Ipv6Addr {
        s.parse().unwrap()
    }

    #[test]
    fn ipv4_table_edges() {
        let refused = [
            "0.0.0.0",
            "0.255.255.255",
            "127.0.0.1",
            "127.255.255.254",
            "10.0.0.0",
            "10.255.255.255",
            "172.16.0.1",
            "172.31.255.255",
            "192.168.0.1",
            "169.254.0.1",
            "169.254.169.254",
            "100.64.0.0",
            "100.127.255.255",
            "192.0.0.8",
            "192.0.2.1",
            "198.51.100.7",
            "203.0.113.9",
            "198.18.0.1",
            "198.19.255.255",
            "192.88.99.1",
            "224.0.0.1",
            "239.255.255.250",
            "240.0.0.1",
            "255.255.255.255",
        ];
        for ip in refused {
            assert!(refusal_v4(v4(ip)).is_some(), "{ip} should be refused");
        }
        let public = [
            "1.1.1.1",
            "8.8.8.8",
            "93.184.216.34",
            "172.15.255.255",
            "172.32.0.0",
            "100.63.255.255",
            "100.128.0.0",
            "192.0.1.1",
            "192.0.3.1",
            "198.17.255.255",
            "198.20.0.0",
            "223.255.255.255",
            "11.0.0.0",
            "126.255.255.255",
            "128.0.0.0",
            "169.253.255.255",
            "169.255.0.0",
            "192.167.255.255",
            "192.169.0.0",
        ];
        for ip in public {
            assert_eq!(refusal_v4(v4(ip)), None, "{ip} should be public");
        }
    }

    #[test]
    fn ipv6_table_edges() {
        let refused = [
            "::",
            "::1",
            "fc00::1",
            "fdff:ffff::1",
            "fe80::1",
            "febf::1",
            "fec0::1",
            "feff::1",
            "ff02::1",
            "2001:db8::1",
            "3fff::1",
            "3fff:fff::1",
            "2001::1",
            "2001:2::1",
            "2001:10::1",
            "2001:20::1",
            "64:ff9b:1::1",
            "100::1",
            "::1:2:3:4:5",
            "4000::1",
            "e000::1",
        ];
        for ip in refused {
            assert!(refusal_v6(v6(ip)).is_some(), "{ip} should be refused");
        }
        let public = [
            "2606:4700:4700::1111",
            "2001:4860:4860::8888",
            "2a00:1450:4001::1",
            "2001:db9::1",
            "3fff:1000::1",
            "2001:3::1",
        ];
        for ip in public {
            assert_eq!(refusal_v6(v6(ip)), None, "{ip} should be public");
        }
    }

    #[test]
    fn embedded_forms_are_found() {
        let cases = [
            ("::ffff:127.0.0.1", "127.0.0.1"),
            ("::ffff:7f00:1", "127.0.0.1"),
            ("::ffff:0:a00:1", "10.0.0.1"),
            ("::127.0.0.1", "127.0.0.1"),
            ("::a9fe:a9fe", "169.254.169.254"),
            ("64:ff9b::7f00:1", "127.0.0.1"),
            ("64:ff9b::10.0.0.1", "10.0.0.1"),
            ("2002:7f00:1::", "127.0.0.1"),
            ("2002:a9fe:a9fe:1234::1", "169.254.169.254"),
        ];
        for (ip6, ip4) in cases {
            let found = embedded_ipv4(v6(ip6)).map(|(ip, _)| ip);
            assert_eq!(found, Some(v4(ip4)), "{ip6}");
        }
        for ip in ["::", "::1", "2606:4700::1", "64:ff9b:1::7f00:1", "fe80::1"] {
            assert_eq!(embedded_ipv4(v6(ip)), None, "{ip}");
        }
    }
}
