//! Which addresses a connection through the proxy may reach unless the
//! host was allowed by its exact name: not the host's loopback, its own
//! interfaces, private, link-local (cloud metadata at 169.254.169.254),
//! shared (CGNAT, tailnets), multicast or reserved ranges, nor those
//! embedded in IPv6 (mapped, NAT64, 6to4).
//!
//! The documentation and benchmarking ranges count as public: no host or
//! network of the machine is found there, and the fake-IP DNS of some
//! proxies and sandboxed networks answers every name with them (this
//! machine's resolves the package registries to 203.0.113.80).

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// True for an address on the public internet that is not one of
/// `own` (the host's interfaces).
pub fn is_public(address: IpAddr, own: &[IpAddr]) -> bool {
    if own.contains(&address) {
        return false;
    }
    match address {
        IpAddr::V4(address) => is_public_v4(address),
        IpAddr::V6(address) => is_public_v6(address),
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
    if let Some(mapped) = address.to_ipv4_mapped() {
        return is_public_v4(mapped);
    }
    let segments = address.segments();
    let embedded = |high: u16, low: u16| Ipv4Addr::from((u32::from(high) << 16) | u32::from(low));
    match segments {
        // NAT64 (the last 32 bits) and 6to4 (bits 16..48): the IPv4
        // address inside decides.
        [0x64, 0xff9b, 0, 0, 0, 0, high, low] | [0x2002, high, low, ..] => {
            is_public_v4(embedded(high, low))
        }
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

/// The addresses of the host's own interfaces (a name resolving to one of
/// them would reach the host's services bound to every interface).
pub fn own_addresses() -> Vec<IpAddr> {
    let mut addresses = Vec::new();
    let mut list: *mut libc::ifaddrs = std::ptr::null_mut();
    // SAFETY: getifaddrs allocates the list and stores its head in `list`.
    if unsafe { libc::getifaddrs(&raw mut list) } != 0 {
        return addresses;
    }
    let mut entry = list;
    while !entry.is_null() {
        // SAFETY: `entry` is a node of the list getifaddrs returned, freed
        // only below; `ifa_addr` is null or points to a sockaddr whose
        // family says its size.
        unsafe {
            let address = (*entry).ifa_addr;
            if !address.is_null() {
                match i32::from((*address).sa_family) {
                    libc::AF_INET => {
                        let inet = std::ptr::read_unaligned(address.cast::<libc::sockaddr_in>());
                        addresses.push(IpAddr::V4(Ipv4Addr::from(u32::from_be(
                            inet.sin_addr.s_addr,
                        ))));
                    }
                    libc::AF_INET6 => {
                        let inet = std::ptr::read_unaligned(address.cast::<libc::sockaddr_in6>());
                        addresses.push(IpAddr::V6(Ipv6Addr::from(inet.sin6_addr.s6_addr)));
                    }
                    _ => {}
                }
            }
            entry = (*entry).ifa_next;
        }
    }
    // SAFETY: the list getifaddrs returned, freed once.
    unsafe { libc::freeifaddrs(list) };
    addresses
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

    #[test]
    fn the_hosts_own_interfaces_are_not_public() {
        let own = own_addresses();
        assert!(own.contains(&IpAddr::V4(Ipv4Addr::LOCALHOST)), "{own:?}");
        let public_address: IpAddr = "8.8.4.4".parse().expect("address");
        assert!(!is_public(public_address, &[public_address]));
    }
}
