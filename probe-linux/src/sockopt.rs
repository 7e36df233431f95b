//! Socket options nix does not define, declared with nix's own `sockopt_impl!` so they are read
//! and written through `nix::sys::socket::{getsockopt, setsockopt}` like the ones it does.

// The macro names `libc` and its helper macros unqualified, so they must be in scope here.
use nix::{getsockopt_impl, libc, setsockopt_impl, sockopt_impl};

/// `IP_PMTUDISC_PROBE`: set DF, size against the device MTU and ignore the path MTU cache.
pub(crate) const IP_PMTUDISC_PROBE: libc::c_int = libc::IP_PMTUDISC_PROBE;
/// `IPV6_PMTUDISC_PROBE`: never fragment, size against the device MTU, ignore the cache.
pub(crate) const IPV6_PMTUDISC_PROBE: libc::c_int = libc::IPV6_PMTUDISC_PROBE;

sockopt_impl!(
    /// Path MTU discovery mode of an IPv4 socket (`IP_MTU_DISCOVER`).
    IpMtuDiscover,
    Both,
    libc::IPPROTO_IP,
    libc::IP_MTU_DISCOVER,
    libc::c_int
);

sockopt_impl!(
    /// Path MTU discovery mode of an IPv6 socket (`IPV6_MTU_DISCOVER`).
    Ipv6MtuDiscover,
    Both,
    libc::IPPROTO_IPV6,
    libc::IPV6_MTU_DISCOVER,
    libc::c_int
);

sockopt_impl!(
    /// The path MTU of a connected IPv6 socket (`IPV6_MTU`).
    Ipv6Mtu,
    GetOnly,
    libc::IPPROTO_IPV6,
    libc::IPV6_MTU,
    libc::c_int
);
