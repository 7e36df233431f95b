//! The addresses of this host's interfaces: whether a probe runs on the node it is asked for.

use crate::error::Error;
use std::net::IpAddr;

/// Every IP address assigned to an interface of the current network namespace (`getifaddrs`),
/// loopback included.
pub fn local_addresses() -> Result<Vec<IpAddr>, Error> {
    let addrs = nix::ifaddrs::getifaddrs().map_err(|e| Error::LocalAddresses {
        source: std::io::Error::from(e),
    })?;
    let mut out: Vec<IpAddr> = addrs
        .filter_map(|a| a.address)
        .filter_map(|s| {
            s.as_sockaddr_in()
                .map(|v4| IpAddr::V4(v4.ip()))
                .or_else(|| s.as_sockaddr_in6().map(|v6| IpAddr::V6(v6.ip())))
        })
        .collect();
    out.sort();
    out.dedup();
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_loopback_address_is_local() {
        let addrs = local_addresses().expect("getifaddrs");
        assert!(addrs.contains(&IpAddr::from([127, 0, 0, 1])), "{addrs:?}");
    }
}
