//! Underlay detection: the device, gateway and MTU through which this node reaches an address.

use std::collections::BTreeSet;
use std::net::IpAddr;

use super::Underlay;
use crate::model::{Family, KernelState, Route};

/// Underlay detection (`agent.md`): the `main` route towards `peer` (longest prefix), skipping
/// routes over `own` devices and routes carrying the adapter's protocol: MTU = that route's MTU
/// metric, else its device's MTU. When only the default route matches: the MTU of the default
/// route's device, of the peer's family. Without a peer: the IPv4 default route's device, else
/// the IPv6 one (a node with only IPv6 addresses has no IPv4 default route).
pub fn detect_underlay(
    state: &KernelState,
    peer: Option<IpAddr>,
    own: &BTreeSet<String>,
    route_protocol: u8,
) -> Option<Underlay> {
    let usable = |r: &&Route| {
        r.protocol != route_protocol
            && !r.hops.is_empty()
            && r.hops.iter().all(|h| !own.contains(&h.device))
    };
    let best = peer.and_then(|p| {
        state
            .main_routes
            .iter()
            .filter(usable)
            .filter(|r| r.destination.contains(&p))
            .max_by_key(|r| r.destination.prefix_len())
    });
    let specific = best.filter(|r| r.destination.prefix_len() > 0);
    let families: &[Family] = match peer {
        Some(p) if p.is_ipv6() => &[Family::V6],
        Some(_) => &[Family::V4],
        None => &[Family::V4, Family::V6],
    };
    let default_of =
        |fam: Family| {
            state.main_routes.iter().filter(usable).find(|r| {
                r.destination.prefix_len() == 0 && Family::of(r.destination.addr()) == fam
            })
        };
    let route = match specific {
        Some(r) => r,
        None => families.iter().find_map(|f| default_of(*f))?,
    };
    let hop = route.hops.first()?;
    let link = state.link(&hop.device)?;
    Some(Underlay {
        device: hop.device.clone(),
        gateway: hop.gateway,
        // A specific route's MTU metric counts; the fallback is the default route's device.
        mtu: match specific {
            Some(r) => r.mtu.unwrap_or(link.mtu),
            None => link.mtu,
        },
    })
}
