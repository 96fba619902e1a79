//! Which addresses a connection through the proxy may reach unless the
//! host was allowed by its exact name: not the host's loopback, its own
//! interfaces and the networks they are on (its gateway, its neighbours),
//! private, link-local (cloud metadata at 169.254.169.254),
//! shared (CGNAT, tailnets), multicast or reserved ranges, nor those
//! embedded in IPv6 (mapped, NAT64, 6to4).
//!
//! The documentation and benchmarking ranges count as public unless the
//! host is on them: the fake-IP DNS of some proxies and sandboxed networks
//! answers every name with them (a machine whose own network is
//! 192.0.2.0/24 resolved the package registries to 203.0.113.80).

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// One of the host's interface addresses with the length of its
/// network's prefix.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Network {
    pub address: IpAddr,
    pub prefix: u8,
}

impl Network {
    /// Whether `address` is on this network (the interface's own address
    /// included).
    fn contains(self, address: IpAddr) -> bool {
        match (self.address, address) {
            (IpAddr::V4(own), IpAddr::V4(other)) => same_prefix(
                u128::from(own.to_bits()),
                u128::from(other.to_bits()),
                32,
                self.prefix,
            ),
            (IpAddr::V6(own), IpAddr::V6(other)) => {
                same_prefix(own.to_bits(), other.to_bits(), 128, self.prefix)
            }
            _ => false,
        }
    }
}

/// Whether the first `prefix` bits of `a` and `b`, values of `width` bits,
/// agree.
fn same_prefix(a: u128, b: u128, width: u32, prefix: u8) -> bool {
    let prefix = u32::from(prefix).min(width);
    // Both values fit in `width` bits; a zero prefix would shift by the
    // whole width, which overflows for 128.
    prefix == 0 || (a ^ b) >> (width - prefix) == 0
}

/// True for an address on the public internet that is on none of `own`
/// (the host's interfaces and their networks).
pub fn is_public(address: IpAddr, own: &[Network]) -> bool {
    let mut reached = vec![address];
    if let IpAddr::V6(v6) = address {
        reached.extend(embedded_v4(v6).map(IpAddr::V4));
    }
    if reached
        .iter()
        .any(|address| own.iter().any(|network| network.contains(*address)))
    {
        return false;
    }
    match address {
        IpAddr::V4(address) => is_public_v4(address),
        IpAddr::V6(address) => is_public_v6(address),
    }
}

/// The IPv4 address an IPv6 one leads to: mapped (`::ffff:a.b.c.d`),
/// NAT64 (the last 32 bits) or 6to4 (bits 16..48).
fn embedded_v4(address: Ipv6Addr) -> Option<Ipv4Addr> {
    if let Some(mapped) = address.to_ipv4_mapped() {
        return Some(mapped);
    }
    let embedded = |high: u16, low: u16| Ipv4Addr::from((u32::from(high) << 16) | u32::from(low));
    match address.segments() {
        [0x64, 0xff9b, 0, 0, 0, 0, high, low] | [0x2002, high, low, ..] => {
            Some(embedded(high, low))
        }
        _ => None,
    }
}

fn is_public_v4(address: Ipv4Addr) -> bool {
    let [a, b, c, _] = address.octets();
    let special = a == 0 // "this network"; 0.0.0.0 reaches the host itself
        || a == 10
        || a == 127
        || (a == 100 && (b & 0xc0) == 64) // shared address space (CGNAT)
        || (a == 169 && b == 254) // link-local: cloud metadata services
        || (a == 172 && (b & 0xf0) == 16)
        || (a == 192 && b == 168)
        || (a == 192 && b == 0 && c == 0) // IETF protocol assignments
        || a >= 224; // multicast, reserved, broadcast
    !special
}

fn is_public_v6(address: Ipv6Addr) -> bool {
    // Mapped, NAT64 and 6to4: the IPv4 address inside decides.
    if let Some(inside) = embedded_v4(address) {
        return is_public_v4(inside);
    }
    match address.segments() {
        // ::, ::1, IPv4-compatible ::a.b.c.d, local-use NAT64,
        // discard-only, Teredo (tunnels to an embedded address).
        [0, 0, 0, 0, 0, 0, _, _]
        | [0x64, 0xff9b, 1, ..]
        | [0x100, 0, 0, 0, ..]
        | [0x2001, 0, ..] => false,
        [first, ..] => {
            (first & 0xfe00) != 0xfc00 // unique local
                && (first & 0xffc0) != 0xfe80 // link-local
                && (first & 0xffc0) != 0xfec0 // site-local
                && (first & 0xff00) != 0xff00 // multicast
        }
    }
}

/// The host's own interfaces with their networks (a name resolving to
/// one of them would reach the host's services bound to every interface;
/// to one of their networks, its gateway or neighbours).
pub fn own_networks() -> Vec<Network> {
    let mut networks = Vec::new();
    let mut list: *mut libc::ifaddrs = std::ptr::null_mut();
    // SAFETY: getifaddrs allocates the list and stores its head in `list`.
    if unsafe { libc::getifaddrs(&raw mut list) } != 0 {
        return networks;
    }
    let mut entry = list;
    while !entry.is_null() {
        // SAFETY: `entry` is a node of the list getifaddrs returned, freed
        // only below; `ifa_addr` and `ifa_netmask` are null or point to a
        // sockaddr whose family says its size.
        unsafe {
            if let Some(address) = socket_address((*entry).ifa_addr) {
                let prefix = socket_address((*entry).ifa_netmask).map_or(
                    if address.is_ipv4() { 32 } else { 128 },
                    |mask| match mask {
                        IpAddr::V4(mask) => mask.to_bits().count_ones(),
                        IpAddr::V6(mask) => mask.to_bits().count_ones(),
                    },
                );
                networks.push(Network {
                    address,
                    prefix: u8::try_from(prefix).unwrap_or(128),
                });
            }
            entry = (*entry).ifa_next;
        }
    }
    // SAFETY: the list getifaddrs returned, freed once.
    unsafe { libc::freeifaddrs(list) };
    networks
}

/// The IP address in `address`, if it is an IPv4 or IPv6 one.
///
/// # Safety
///
/// `address` is null or points to a sockaddr whose family says its size.
unsafe fn socket_address(address: *const libc::sockaddr) -> Option<IpAddr> {
    if address.is_null() {
        return None;
    }
    // SAFETY: the caller's promise: a valid sockaddr of its family's size.
    unsafe {
        match i32::from((*address).sa_family) {
            libc::AF_INET => {
                let inet = std::ptr::read_unaligned(address.cast::<libc::sockaddr_in>());
                Some(IpAddr::V4(Ipv4Addr::from(u32::from_be(
                    inet.sin_addr.s_addr,
                ))))
            }
            libc::AF_INET6 => {
                let inet = std::ptr::read_unaligned(address.cast::<libc::sockaddr_in6>());
                Some(IpAddr::V6(Ipv6Addr::from(inet.sin6_addr.s6_addr)))
            }
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn public(text: &str) -> bool {
        is_public(text.parse().expect("an address"), &[])
    }

    #[test]
    fn the_hosts_own_and_private_ranges_are_not_public() {
        for address in [
            "127.0.0.1",
            "127.255.0.9",
            "0.0.0.0",
            "10.1.2.3",
            "172.16.0.1",
            "172.31.255.255",
            "192.168.1.1",
            "169.254.169.254",
            "100.64.0.1",
            "224.0.0.1",
            "255.255.255.255",
            "::",
            "::1",
            "::127.0.0.1",
            "::ffff:127.0.0.1",
            "::ffff:169.254.169.254",
            "64:ff9b::a00:1",
            "2002:7f00:1::",
            "2002:a9fe:a9fe::1",
            "fc00::1",
            "fd12:3456::1",
            "fe80::1",
            "fec0::1",
            "ff02::1",
            "2001:0:4136:e378::1",
        ] {
            assert!(!public(address), "{address}");
        }
    }

    #[test]
    fn public_addresses_are() {
        for address in [
            "1.1.1.1",
            "8.8.8.8",
            "151.101.1.1",
            "172.32.0.1",
            "100.128.0.1",
            "::ffff:8.8.8.8",
            "64:ff9b::808:808",
            "2002:808:808::1",
            "2606:4700::1111",
            "2a00:1450:4001::1",
            // Documentation and benchmarking: fake-IP DNS answers.
            "203.0.113.80",
            "198.18.0.1",
            "192.0.2.1",
            "2001:db8::1",
        ] {
            assert!(public(address), "{address}");
        }
    }

    fn network(text: &str, prefix: u8) -> Network {
        Network {
            address: text.parse().expect("an address"),
            prefix,
        }
    }

    #[test]
    fn the_hosts_own_interfaces_are_not_public() {
        let own = own_networks();
        assert!(
            own.contains(&network("127.0.0.1", 8)),
            "the loopback with its /8: {own:?}"
        );
        for listed in &own {
            assert!(!is_public(listed.address, &own), "{listed:?}");
        }
    }

    #[test]
    fn the_networks_the_host_is_on_are_not_public() {
        // A host on a documentation or public network: its gateway and
        // neighbours are not reached through a wildcard, the rest of the
        // range is.
        let own = [
            network("192.0.2.2", 24),
            network("8.8.4.4", 32),
            network("2606:4700::2", 64),
        ];
        for address in [
            "192.0.2.1",
            "192.0.2.255",
            "::ffff:192.0.2.1",
            "64:ff9b::c000:201",
            "2002:c000:201::1",
            "8.8.4.4",
            "2606:4700::1",
        ] {
            assert!(
                !is_public(address.parse().expect("address"), &own),
                "{address}"
            );
        }
        for address in ["192.0.3.1", "203.0.113.80", "8.8.4.5", "2606:4700:0:1::1"] {
            assert!(
                is_public(address.parse().expect("address"), &own),
                "{address}"
            );
        }
        // A network of prefix 0 holds every address of its family only.
        let everything = [network("0.0.0.0", 0)];
        assert!(!is_public("1.1.1.1".parse().expect("address"), &everything));
        assert!(is_public(
            "2606:4700::1".parse().expect("address"),
            &everything
        ));
    }
}
