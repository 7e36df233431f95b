//! The devices: tunnel devices created in phase 1 (or readdressed there), their MTU raised in
//! phase 4 or lowered in phase 5, the WireGuard devices' MTUs likewise, and the managed devices
//! no longer wanted (deleted in phase 9).

use std::collections::BTreeSet;

use super::{Phase, Plan};
use crate::model::{KernelState, Op};
use crate::types::{DesiredState, Settings, TunnelKind, WireguardMtu, tunnel_mac};

/// What the later phases need to know about the devices.
pub(super) struct Devices<'a> {
    /// Devices readdressed in phase 1: the kernel flushes a device's neighbours, permanent ones
    /// included, when its address changes, so theirs are rewritten and none is left to delete.
    pub(super) readdressed: BTreeSet<&'a str>,
    /// Managed devices the kernel holds and the desired state no longer lists.
    pub(super) doomed: BTreeSet<&'a String>,
}

/// The writes of the tunnel and WireGuard devices, in name order; returns which devices are
/// readdressed and which go.
pub(super) fn devices<'a>(
    desired: &'a DesiredState,
    settings: &'a Settings,
    state: &KernelState,
    plan: &mut Plan,
) -> Devices<'a> {
    let readdressed = tunnel_devices(desired, settings, state, plan);
    wireguard_devices(&desired.wireguard_mtus, state, plan);
    let doomed: BTreeSet<&String> = settings
        .managed_devices
        .iter()
        .filter(|n| !desired.devices.iter().any(|d| &d.name == *n))
        .filter(|n| state.link(n).is_some())
        .collect();
    Devices {
        readdressed,
        doomed,
    }
}

/// Each tunnel device: created when missing, readdressed when it holds another MAC than this
/// node's, its MTU raised or lowered. Returns the readdressed ones.
fn tunnel_devices<'a>(
    desired: &'a DesiredState,
    settings: &Settings,
    state: &KernelState,
    plan: &mut Plan,
) -> BTreeSet<&'a str> {
    let own_mac = tunnel_mac(desired.identity_addr);
    let mut readdressed: BTreeSet<&str> = BTreeSet::new();
    let mut devices: Vec<_> = desired.devices.iter().collect();
    devices.sort_by(|a, b| a.name.cmp(&b.name));
    for d in &devices {
        match state.link(&d.name) {
            None => plan.push(
                Phase::Create,
                Op::CreateTunnel {
                    name: d.name.clone(),
                    kind: d.kind,
                    mtu: d.mtu,
                    mac: own_mac,
                    port: match d.kind {
                        TunnelKind::Vxlan => settings.vxlan_port,
                        TunnelKind::Geneve => settings.geneve_port,
                        TunnelKind::Ipip | TunnelKind::Ip6Ip => 0,
                    },
                },
            ),
            Some(l) => {
                if d.kind.carries_ethernet() && l.mac.is_some_and(|m| m != own_mac) {
                    // Peers derive this node's MAC from its identity address: a device created
                    // under another identity would drop their frames as addressed elsewhere.
                    plan.push(
                        Phase::Create,
                        Op::SetMac {
                            link: d.name.clone(),
                            mac: own_mac,
                        },
                    );
                    readdressed.insert(d.name.as_str());
                }
                match l.mtu.cmp(&d.mtu) {
                    std::cmp::Ordering::Less => plan.push(
                        Phase::DevicesUp,
                        Op::SetMtu {
                            link: d.name.clone(),
                            mtu: d.mtu,
                        },
                    ),
                    std::cmp::Ordering::Greater => plan.push(
                        Phase::DevicesDown,
                        Op::SetMtu {
                            link: d.name.clone(),
                            mtu: d.mtu,
                        },
                    ),
                    std::cmp::Ordering::Equal => {}
                }
            }
        }
    }
    readdressed
}

/// Each WireGuard device's MTU, raised or lowered; one that is not there is noted (the adapter
/// never creates them).
fn wireguard_devices(wireguard_mtus: &[WireguardMtu], state: &KernelState, plan: &mut Plan) {
    let mut wgs: Vec<_> = wireguard_mtus.iter().collect();
    wgs.sort_by(|a, b| a.name.cmp(&b.name));
    for w in wgs {
        match state.link(&w.name) {
            None => plan
                .notes
                .push(format!("WireGuard device {} not present", w.name)),
            Some(l) if l.mtu != w.mtu => plan.push(
                if l.mtu < w.mtu {
                    Phase::DevicesUp
                } else {
                    Phase::DevicesDown
                },
                Op::SetMtu {
                    link: w.name.clone(),
                    mtu: w.mtu,
                },
            ),
            Some(_) => {}
        }
    }
}
