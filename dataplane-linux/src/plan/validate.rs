//! Refusals before anything is planned: settings that would make the adapter's table or rule
//! somebody else's, and desired states that break the MTU inequalities on their own.

use std::collections::BTreeMap;

use crate::error::{Error, Result};
use crate::model::{KernelState, LinkKind};
use crate::types::{DesiredState, HopProtocol, Settings};

/// Checks the settings: a table of its own (not unspec/default/main/local) and a rule that
/// sorts before `main` (priority below 32766).
pub fn validate_settings(settings: &Settings) -> Result<()> {
    if matches!(settings.table, 0 | 253..=255) {
        return Err(Error::Invalid(format!(
            "table {} is reserved (unspec/default/main/local)",
            settings.table
        )));
    }
    if settings.rule_priority == 0 || settings.rule_priority >= 32766 {
        return Err(Error::Invalid(format!(
            "rule priority {} must be in 1..32766 (before main)",
            settings.rule_priority
        )));
    }
    if settings.route_protocol <= 4 {
        return Err(Error::Invalid(format!(
            "route protocol {} is reserved by the kernel (0-4)",
            settings.route_protocol
        )));
    }
    Ok(())
}

/// Checks the desired state against itself and against the devices the kernel holds: no default
/// route, no device listed twice or held with another kind, every route MTU within its devices'
/// and the fabric MTU within every device. Returns the final MTU of every device a route or the
/// pod side relies on.
pub(super) fn validate_desired(
    desired: &DesiredState,
    state: &KernelState,
) -> Result<BTreeMap<String, u32>> {
    // Never a default route in a table consulted before `main` (it would capture the host).
    if let Some(r) = desired
        .routes
        .iter()
        .find(|r| r.destination.prefix_len() == 0)
    {
        return Err(Error::DefaultRoute {
            destination: r.destination,
        });
    }
    // Final MTU of every device a route or pod element relies on.
    let mut dev_mtu: BTreeMap<String, u32> = BTreeMap::new();
    for d in &desired.devices {
        if dev_mtu.insert(d.name.clone(), d.mtu).is_some() {
            return Err(Error::Invalid(format!("device {} listed twice", d.name)));
        }
        if let Some(l) = state.link(&d.name) {
            if l.kind != LinkKind::Tunnel(d.kind) {
                return Err(Error::Invalid(format!(
                    "device {} exists with kind {:?}, wanted {:?}",
                    d.name, l.kind, d.kind
                )));
            }
        }
    }
    for w in &desired.wireguard_mtus {
        dev_mtu.insert(w.name.clone(), w.mtu);
    }
    for r in &desired.routes {
        if r.next_hops.is_empty() {
            return Err(Error::Invalid(format!(
                "route {} has no next hop",
                r.destination
            )));
        }
        for h in &r.next_hops {
            let limit = match h.protocol {
                HopProtocol::Tunnel(kind) => {
                    let d = desired
                        .devices
                        .iter()
                        .find(|d| d.name == h.device)
                        .ok_or_else(|| {
                            Error::Invalid(format!(
                                "route {} uses device {} not in the devices",
                                r.destination, h.device
                            ))
                        })?;
                    if d.kind != kind {
                        return Err(Error::Invalid(format!(
                            "route {} next hop says {:?} but device {} is {:?}",
                            r.destination, kind, d.name, d.kind
                        )));
                    }
                    if !kind.reaches(h.peer_underlay) {
                        return Err(Error::Invalid(format!(
                            "route {} sends to {} over {} ({kind:?}), which cannot carry that \
                             address family: IPIP over IPv6 needs an Ip6Ip (ip6tnl) device",
                            r.destination, h.peer_underlay, d.name
                        )));
                    }
                    Some(d.mtu)
                }
                HopProtocol::WireGuard => dev_mtu
                    .get(&h.device)
                    .copied()
                    .or_else(|| state.link(&h.device).map(|l| l.mtu)),
            };
            if let Some(limit) = limit {
                if r.mtu > limit {
                    return Err(Error::Invalid(format!(
                        "route {} MTU {} above device {} MTU {}",
                        r.destination, r.mtu, h.device, limit
                    )));
                }
            }
        }
    }
    if let Some(f) = &desired.fabric {
        if let Some((name, m)) = dev_mtu.iter().find(|(_, m)| **m < f.mtu) {
            return Err(Error::Invalid(format!(
                "fabric MTU {} above device {name} MTU {m}",
                f.mtu
            )));
        }
    }
    Ok(dev_mtu)
}
