//! The permanent neighbours of the Ethernet-carrying tunnels (VXLAN, GENEVE): each pod gateway
//! on its device, at the MAC its peer's identity address derives; written in phase 1.

use std::collections::{BTreeMap, BTreeSet};
use std::net::IpAddr;

use super::routes::installed_hops;
use super::{Phase, Plan};
use crate::error::{Error, Result};
use crate::model::{KernelState, Neighbour, Op};
use crate::types::{DesiredState, HopProtocol, tunnel_mac};

/// The wanted neighbours, by device and address.
pub(super) type Wanted<'a> = BTreeMap<(&'a str, IpAddr), [u8; 6]>;

/// Writes each wanted neighbour the kernel does not hold (every one on a device readdressed in
/// phase 1, whose neighbours the kernel flushes); returns the wanted neighbours. A pod gateway
/// reached through two peers of different MACs on one device is refused.
pub(super) fn neighbours<'a>(
    desired: &'a DesiredState,
    state: &KernelState,
    readdressed: &BTreeSet<&str>,
    plan: &mut Plan,
) -> Result<Wanted<'a>> {
    let want_neigh = wanted(desired)?;
    for ((device, address), mac) in &want_neigh {
        let held = !readdressed.contains(device)
            && state
                .neighbours
                .iter()
                .any(|n| n.device == *device && n.address == *address && n.mac == *mac);
        if !held {
            plan.push(
                Phase::Create,
                Op::ReplaceNeighbour(Neighbour {
                    device: device.to_string(),
                    address: *address,
                    mac: *mac,
                }),
            );
        }
    }
    Ok(want_neigh)
}

/// One neighbour per pod gateway of an installed Ethernet-carrying next hop.
fn wanted(desired: &DesiredState) -> Result<Wanted<'_>> {
    let mut want_neigh: Wanted<'_> = BTreeMap::new();
    for spec in &desired.routes {
        for h in installed_hops(spec) {
            if let HopProtocol::Tunnel(kind) = h.protocol {
                if kind.carries_ethernet() {
                    // The peer's MAC from its identity, not from the address this link uses.
                    let mac = tunnel_mac(h.peer_identity);
                    if let Some(prev) = want_neigh.insert((h.device.as_str(), h.pod_gateway), mac) {
                        if prev != mac {
                            return Err(Error::Invalid(format!(
                                "pod gateway {} on {} reached through two different peers",
                                h.pod_gateway, h.device
                            )));
                        }
                    }
                }
            }
        }
    }
    Ok(want_neigh)
}
