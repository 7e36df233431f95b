//! Pure planning: desired state + settings + what the kernel holds -> ordered writes.
//! Deterministic, no I/O. Write order per element is that of `agent.md` ("Dataplane").

use std::collections::{BTreeMap, BTreeSet};
use std::net::IpAddr;

use ipnet::IpNet;

use crate::error::{Error, Result};
use crate::model::{
    CniState, ENCAP_TTL, Encap, Family, Hop, KernelState, LinkKind, Neighbour, Op, ReadScope,
    Route, Rule,
};
use crate::types::{
    DesiredState, HopProtocol, NextHop, RouteSpec, Settings, TunnelKind, tunnel_mac,
};

/// The phases of `agent.md`'s write order. Phase 7 (read back) is done by the reconciler.
///
/// Each write of a phase keeps the inequalities on its own once every earlier phase is done:
/// none needs another write of its phase to have succeeded first (one that names a device
/// created in its phase fails by itself when the creation failed). So the writes of one phase
/// may be in flight together, and a failed one may be followed by the rest of its phase; a
/// later phase must not start before every write of the earlier ones succeeded.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Phase {
    /// 1. Create what is missing and needed first: devices, the rule, endpoint routes, neighbours.
    Create = 1,
    /// 2. Pod-side elements whose MTU goes down.
    PodDown = 2,
    /// 3. Routes whose MTU goes down, and routes to delete.
    RoutesDown = 3,
    /// 4. Devices whose MTU goes up.
    DevicesUp = 4,
    /// 5. Devices whose MTU goes down.
    DevicesDown = 5,
    /// 6. Routes whose MTU goes up, and new routes.
    RoutesUp = 6,
    /// 8. Pod-side elements whose MTU goes up.
    PodUp = 8,
    /// 9. Remove neighbours, endpoint routes and devices no longer needed.
    Remove = 9,
}

/// One write with its phase.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Step {
    /// Phase.
    pub phase: Phase,
    /// The write.
    pub op: Op,
}

/// An ordered list of writes plus notes about what was skipped.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Plan {
    /// Writes in execution order (phases ascending).
    pub steps: Vec<Step>,
    /// Things left alone, with the reason (e.g. a pod interface that is not there).
    pub notes: Vec<String>,
}

impl Plan {
    /// Nothing to write.
    pub fn is_empty(&self) -> bool {
        self.steps.is_empty()
    }

    fn push(&mut self, phase: Phase, op: Op) {
        self.steps.push(Step { phase, op });
    }
}

/// Underlay as seen from this node towards one address.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Underlay {
    /// Device the underlay route leaves through.
    pub device: String,
    /// Its gateway, if not directly connected.
    pub gateway: Option<IpAddr>,
    /// MTU: the route's MTU metric, else the device's MTU.
    pub mtu: u32,
}

/// What the reconciler must read for a desired state.
pub fn read_scope(desired: &DesiredState, settings: &Settings) -> ReadScope {
    let mut devices: BTreeSet<String> = settings.managed_devices.iter().cloned().collect();
    devices.extend(desired.devices.iter().map(|d| d.name.clone()));
    let (pods, cni) = match &desired.fabric {
        Some(f) => (
            f.pods
                .iter()
                .map(|p| (p.netns.clone(), p.ifname.clone()))
                .collect(),
            f.cni_config.clone(),
        ),
        None => (Vec::new(), None),
    };
    ReadScope {
        table: settings.table,
        neighbour_devices: devices.into_iter().collect(),
        pods,
        cni,
    }
}

/// Devices the adapter owns or configures (skipped by underlay detection).
pub fn own_devices(desired: &DesiredState, settings: &Settings) -> BTreeSet<String> {
    let mut own: BTreeSet<String> = settings.managed_devices.iter().cloned().collect();
    own.extend(desired.devices.iter().map(|d| d.name.clone()));
    own.extend(desired.wireguard_mtus.iter().map(|w| w.name.clone()));
    if let Some(f) = &desired.fabric {
        own.insert(f.bridge.clone());
    }
    own
}

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

fn host_net(addr: IpAddr) -> IpNet {
    IpNet::from(addr)
}

/// Whether `hop` would carry `spec`'s own packets: the route's destination is exactly the host
/// prefix of the hop's tunnel endpoint, so the encapsulated packets (outer destination: that
/// endpoint) would match the route again, in the adapter's table consulted before `main`.
pub fn encapsulates_into_itself(spec: &RouteSpec, hop: &NextHop) -> bool {
    let d = spec.destination;
    d.prefix_len() == d.max_prefix_len() && d.addr() == hop.peer_underlay
}

/// The next hops of `spec` the adapter installs: all but those that encapsulate into the route
/// itself ([`encapsulates_into_itself`]).
pub fn installed_hops(spec: &RouteSpec) -> impl Iterator<Item = &NextHop> {
    spec.next_hops
        .iter()
        .filter(move |h| !encapsulates_into_itself(spec, h))
}

/// The kernel route the adapter writes for one route of the plan; `None` when no next hop is
/// left to install ([`installed_hops`]).
pub fn kernel_route(spec: &RouteSpec, settings: &Settings) -> Option<Route> {
    let mut hops: Vec<Hop> = installed_hops(spec)
        .map(|nh| match nh.protocol {
            HopProtocol::Tunnel(kind) if kind.carries_ethernet() => Hop {
                device: nh.device.clone(),
                gateway: Some(nh.pod_gateway),
                onlink: true,
                encap: Some(Encap {
                    id: u64::from(settings.vxlan_vni),
                    dst: nh.peer_underlay,
                    // VXLAN and GENEVE are UDP: over IPv6 the receiver needs a checksum.
                    csum: nh.peer_underlay.is_ipv6(),
                    // Fragmentable: see `Encap::df`.
                    df: false,
                    ttl: ENCAP_TTL,
                }),
            },
            HopProtocol::Tunnel(_) => Hop {
                device: nh.device.clone(),
                gateway: None,
                onlink: false,
                encap: Some(Encap {
                    id: 0,
                    dst: nh.peer_underlay,
                    csum: false,
                    df: nh.peer_underlay.is_ipv4(),
                    ttl: ENCAP_TTL,
                }),
            },
            HopProtocol::WireGuard => Hop {
                device: nh.device.clone(),
                gateway: None,
                onlink: false,
                encap: None,
            },
        })
        .collect();
    if hops.is_empty() {
        return None;
    }
    hops.sort();
    hops.dedup();
    let destination = spec.destination.trunc();
    Some(Route {
        table: settings.table,
        destination,
        protocol: settings.route_protocol,
        mtu: Some(spec.mtu),
        mtu_locked: matches!(destination, IpNet::V6(_)),
        hops,
    })
}

/// Desired endpoint host routes: one per tunnel endpoint, through the underlay's own next hop.
fn endpoint_routes(
    desired: &DesiredState,
    settings: &Settings,
    state: &KernelState,
    plan: &mut Plan,
) -> BTreeMap<IpNet, Route> {
    let own = own_devices(desired, settings);
    let peers: BTreeSet<IpAddr> = desired
        .routes
        .iter()
        .flat_map(installed_hops)
        .filter(|h| matches!(h.protocol, HopProtocol::Tunnel(_)))
        .map(|h| h.peer_underlay)
        .collect();
    let mut out = BTreeMap::new();
    for peer in peers {
        match detect_underlay(state, Some(peer), &own, settings.route_protocol) {
            Some(u) => {
                let destination = host_net(peer);
                out.insert(
                    destination,
                    Route {
                        table: settings.table,
                        destination,
                        protocol: settings.route_protocol,
                        mtu: None,
                        mtu_locked: false,
                        hops: vec![Hop {
                            device: u.device,
                            gateway: u.gateway,
                            onlink: false,
                            encap: None,
                        }],
                    },
                );
            }
            None => plan.notes.push(format!(
                "no underlay route towards {peer}: no endpoint route"
            )),
        }
    }
    out
}

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

fn validate(desired: &DesiredState, state: &KernelState) -> Result<BTreeMap<String, u32>> {
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

fn pod_phase(old: u32, new: u32) -> Option<Phase> {
    match new.cmp(&old) {
        std::cmp::Ordering::Less => Some(Phase::PodDown),
        std::cmp::Ordering::Greater => Some(Phase::PodUp),
        std::cmp::Ordering::Equal => None,
    }
}

/// Computes the ordered writes that make `state` match `desired`.
pub fn plan(desired: &DesiredState, settings: &Settings, state: &KernelState) -> Result<Plan> {
    validate_settings(settings)?;
    validate(desired, state)?;
    let mut plan = Plan::default();
    let own_mac = tunnel_mac(desired.identity_addr);

    // Devices.
    // Devices readdressed below: the kernel flushes a device's neighbours, permanent ones
    // included, when its address changes, so theirs are rewritten and none is left to delete.
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
    let mut wgs: Vec<_> = desired.wireguard_mtus.iter().collect();
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
    let doomed: BTreeSet<&String> = settings
        .managed_devices
        .iter()
        .filter(|n| !desired.devices.iter().any(|d| &d.name == *n))
        .filter(|n| state.link(n).is_some())
        .collect();

    // Rule(s).
    let mut want_rules = BTreeSet::new();
    want_rules.insert(Rule {
        family: Family::V4,
        priority: settings.rule_priority,
        table: settings.table,
    });
    if desired
        .routes
        .iter()
        .any(|r| matches!(r.destination, IpNet::V6(_)))
    {
        want_rules.insert(Rule {
            family: Family::V6,
            priority: settings.rule_priority,
            table: settings.table,
        });
    }
    for r in &want_rules {
        if !state.rules.contains(r) {
            plan.push(Phase::Create, Op::AddRule(*r));
        }
    }

    // Endpoint routes and plan routes.
    let held: BTreeMap<IpNet, &Route> = state.routes.iter().map(|r| (r.destination, r)).collect();
    let endpoints = endpoint_routes(desired, settings, state, &mut plan);
    let mut wanted: BTreeMap<IpNet, Route> = BTreeMap::new();
    let mut listed: BTreeSet<IpNet> = BTreeSet::new();
    for spec in &desired.routes {
        if !listed.insert(spec.destination.trunc()) {
            return Err(Error::Invalid(format!(
                "route {} listed twice",
                spec.destination
            )));
        }
        for h in spec
            .next_hops
            .iter()
            .filter(|h| encapsulates_into_itself(spec, h))
        {
            plan.notes.push(format!(
                "route {}: next hop {} (endpoint {}) left out: the route's destination is that \
                 hop's own tunnel endpoint, so the tunnel would carry its own packets",
                spec.destination, h.device, h.peer_underlay
            ));
        }
        match kernel_route(spec, settings) {
            Some(r) => {
                wanted.insert(r.destination, r);
            }
            None => plan.notes.push(format!(
                "route {} not installed: every next hop is its own tunnel endpoint (the \
                 underlay reaches it)",
                spec.destination
            )),
        }
    }
    for (dst, r) in &endpoints {
        if wanted.contains_key(dst) {
            plan.notes.push(format!(
                "endpoint {dst} is also a plan destination: the plan route wins"
            ));
            continue;
        }
        match held.get(dst) {
            Some(o) if o.same_forwarding(r) && o.protocol == r.protocol => {}
            _ => plan.push(Phase::Create, Op::ReplaceRoute(r.clone())),
        }
    }

    // Neighbours.
    let mut want_neigh: BTreeMap<(&str, IpAddr), [u8; 6]> = BTreeMap::new();
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

    // Pod side.
    let mut pod_up: Vec<Op> = Vec::new();
    if let Some(f) = &desired.fabric {
        // A new bridge starts no higher than the devices currently are.
        let current_floor = state
            .links
            .iter()
            .filter(|l| matches!(l.kind, LinkKind::Tunnel(_) | LinkKind::Wireguard))
            .filter(|l| {
                desired.devices.iter().any(|d| d.name == l.name)
                    || desired.wireguard_mtus.iter().any(|w| w.name == l.name)
            })
            .map(|l| l.mtu)
            .min();
        match state.link(&f.bridge) {
            None => {
                let start = current_floor.map_or(f.mtu, |m| m.min(f.mtu));
                plan.push(
                    Phase::Create,
                    Op::CreateBridge {
                        name: f.bridge.clone(),
                        mtu: start,
                    },
                );
                if start != f.mtu {
                    pod_up.push(Op::SetMtu {
                        link: f.bridge.clone(),
                        mtu: f.mtu,
                    });
                }
            }
            Some(l) => match pod_phase(l.mtu, f.mtu) {
                Some(Phase::PodDown) => plan.push(
                    Phase::PodDown,
                    Op::SetMtu {
                        link: f.bridge.clone(),
                        mtu: f.mtu,
                    },
                ),
                Some(_) => pod_up.push(Op::SetMtu {
                    link: f.bridge.clone(),
                    mtu: f.mtu,
                }),
                None => {}
            },
        }
        for p in &f.pods {
            if let Some(v) = &p.host_veth {
                match state.link(v) {
                    None => plan.notes.push(format!("bridge port {v} not present")),
                    Some(l) => {
                        match pod_phase(l.mtu, f.mtu) {
                            Some(Phase::PodDown) => plan.push(
                                Phase::PodDown,
                                Op::SetMtu {
                                    link: v.clone(),
                                    mtu: f.mtu,
                                },
                            ),
                            Some(_) => pod_up.push(Op::SetMtu {
                                link: v.clone(),
                                mtu: f.mtu,
                            }),
                            None => {}
                        }
                        if l.master.as_deref() != Some(f.bridge.as_str()) {
                            plan.push(
                                Phase::PodDown,
                                Op::SetMaster {
                                    link: v.clone(),
                                    master: f.bridge.clone(),
                                },
                            );
                        }
                    }
                }
            }
            let held = state
                .pod_links
                .iter()
                .find(|pl| pl.netns == p.netns && pl.ifname == p.ifname)
                .and_then(|pl| pl.mtu);
            match held {
                None => plan.notes.push(format!(
                    "pod interface {} in {} not present",
                    p.ifname,
                    p.netns.display()
                )),
                Some(m) => {
                    let op = Op::SetPodMtu {
                        netns: p.netns.clone(),
                        ifname: p.ifname.clone(),
                        mtu: f.mtu,
                    };
                    match pod_phase(m, f.mtu) {
                        Some(Phase::PodDown) => plan.push(Phase::PodDown, op),
                        Some(_) => pod_up.push(op),
                        None => {}
                    }
                }
            }
        }
        // Every other port of the bridge (the agent names pods by namespace and interface only,
        // so their host-side veths are found here, by master): the fabric MTU too.
        let mut ports: Vec<_> = state
            .links
            .iter()
            .filter(|l| l.master.as_deref() == Some(f.bridge.as_str()))
            .filter(|l| {
                !f.pods
                    .iter()
                    .any(|p| p.host_veth.as_deref() == Some(l.name.as_str()))
            })
            .collect();
        ports.sort_by(|a, b| a.name.cmp(&b.name));
        for l in ports {
            let op = Op::SetMtu {
                link: l.name.clone(),
                mtu: f.mtu,
            };
            match pod_phase(l.mtu, f.mtu) {
                Some(Phase::PodDown) => plan.push(Phase::PodDown, op),
                Some(_) => pod_up.push(op),
                None => {}
            }
        }
        if let Some(path) = &f.cni_config {
            let held = state
                .cni
                .as_ref()
                .filter(|(p, _)| p == path)
                .map(|(_, s)| s.clone());
            let op = Op::SetCniMtu {
                path: path.clone(),
                mtu: f.mtu,
            };
            match held {
                None | Some(CniState::Missing) => plan
                    .notes
                    .push(format!("CNI configuration {} not present", path.display())),
                Some(CniState::Mtu(None)) => plan.push(Phase::PodDown, op),
                Some(CniState::Mtu(Some(m))) => match pod_phase(m, f.mtu) {
                    Some(Phase::PodDown) => plan.push(Phase::PodDown, op),
                    Some(_) => pod_up.push(op),
                    None => {}
                },
            }
        }
    }

    // Plan routes: down and deletions (3), up and new (6).
    let mut routes_up: Vec<Op> = Vec::new();
    for (dst, r) in &wanted {
        match held.get(dst) {
            None => routes_up.push(Op::ReplaceRoute(r.clone())),
            Some(o) if o.same_forwarding(r) && o.protocol == r.protocol => {}
            Some(o) => {
                let old = o.mtu.unwrap_or(u32::MAX);
                let new = r.mtu.unwrap_or(u32::MAX);
                if new < old {
                    if o.hops == r.hops || o.hops.is_empty() {
                        plan.push(Phase::RoutesDown, Op::ReplaceRoute(r.clone()));
                    } else {
                        // Lower first on the held next hops, move to the new ones later.
                        let mut lowered = r.clone();
                        lowered.hops = o.hops.clone();
                        plan.push(Phase::RoutesDown, Op::ReplaceRoute(lowered));
                        routes_up.push(Op::ReplaceRoute(r.clone()));
                    }
                } else {
                    routes_up.push(Op::ReplaceRoute(r.clone()));
                }
            }
        }
    }
    let mut removals: Vec<Op> = Vec::new();
    for o in &state.routes {
        if o.protocol != settings.route_protocol
            || wanted.contains_key(&o.destination)
            || endpoints.contains_key(&o.destination)
        {
            continue;
        }
        let op = Op::DeleteRoute {
            table: o.table,
            destination: o.destination,
            protocol: o.protocol,
        };
        let endpoint_like = o.hops.iter().all(|h| h.encap.is_none())
            && o.destination.prefix_len() == o.destination.max_prefix_len()
            && !o.hops.iter().any(|h| doomed.contains(&h.device));
        if endpoint_like {
            removals.push(op);
        } else {
            plan.push(Phase::RoutesDown, op);
        }
    }
    for op in routes_up {
        plan.push(Phase::RoutesUp, op);
    }
    for op in pod_up {
        plan.push(Phase::PodUp, op);
    }

    // Removals (9): neighbours, endpoint routes, rules, devices.
    let mut stale_neigh: Vec<&Neighbour> = state
        .neighbours
        .iter()
        .filter(|n| !want_neigh.contains_key(&(n.device.as_str(), n.address)))
        .filter(|n| !doomed.contains(&n.device))
        .filter(|n| !readdressed.contains(n.device.as_str()))
        .filter(|n| {
            settings.managed_devices.contains(&n.device)
                || desired.devices.iter().any(|d| d.name == n.device)
        })
        .collect();
    stale_neigh.sort();
    for n in stale_neigh {
        plan.push(
            Phase::Remove,
            Op::DeleteNeighbour {
                device: n.device.clone(),
                address: n.address,
            },
        );
    }
    for op in removals {
        plan.push(Phase::Remove, op);
    }
    let mut stale_rules: Vec<&Rule> = state
        .rules
        .iter()
        .filter(|r| r.table == settings.table && !want_rules.contains(r))
        .collect();
    stale_rules.sort();
    for r in stale_rules {
        plan.push(Phase::Remove, Op::DeleteRule(*r));
    }
    for n in doomed {
        plan.push(Phase::Remove, Op::DeleteLink { link: n.clone() });
    }

    plan.steps.sort_by_key(|s| s.phase);
    Ok(plan)
}

/// Phase 7: after the writes, every planned route holds its planned MTU and next hops, and
/// every device is at least each route through it. Returns the first discrepancy.
pub fn verify(desired: &DesiredState, settings: &Settings, state: &KernelState) -> Result<()> {
    let held_routes: BTreeMap<IpNet, &Route> =
        state.routes.iter().map(|r| (r.destination, r)).collect();
    for spec in &desired.routes {
        let Some(want) = kernel_route(spec, settings) else {
            continue;
        };
        let held = held_routes
            .get(&want.destination)
            .ok_or_else(|| Error::Verification(format!("route {} missing", want.destination)))?;
        if !held.same_forwarding(&want) {
            return Err(Error::Verification(format!(
                "route {}: kernel holds {:?} mtu {:?} (lock {}), planned {:?} mtu {:?}",
                want.destination, held.hops, held.mtu, held.mtu_locked, want.hops, want.mtu
            )));
        }
    }
    for r in &state.routes {
        if let Some(m) = r.mtu {
            for h in &r.hops {
                if let Some(l) = state.link(&h.device) {
                    if l.mtu < m {
                        return Err(Error::Verification(format!(
                            "route {} MTU {m} above device {} MTU {}",
                            r.destination, l.name, l.mtu
                        )));
                    }
                }
            }
        }
    }
    Ok(())
}

/// Whether `route` looks like an endpoint host route (a host prefix through the underlay, no
/// encapsulation) rather than a route of the plan.
fn is_endpoint_route(route: &Route) -> bool {
    route.destination.prefix_len() == route.destination.max_prefix_len()
        && route.hops.iter().all(|h| h.encap.is_none())
}

/// The ordered removal of everything the adapter owns, without a desired state (the node agent
/// leaving the cluster). Every step is in [`Phase::Remove`]; the order is the order of `steps`:
///
/// 1. every policy rule looking up [`Settings::table`] (IPv4 and IPv6; the reconciler already
///    sweeps any such rule as its own), so that traffic stops consulting the table before it
///    empties;
/// 2. every route of that table carrying [`Settings::route_protocol`]: the plan's routes
///    first, then the endpoint host routes (the order of a reconcile's phase 9; with the rule
///    gone nothing looks them up anyway). Routes of other protocols are left alone, with a note;
/// 3. the shared tunnel devices: each name of [`Settings::managed_devices`] that the kernel holds
///    as a tunnel device. A link of another kind under such a name was not created by the
///    adapter and is left alone, with a note.
///
/// Neighbours are not deleted one by one: they exist only on the shared devices, and the kernel
/// flushes a device's neighbours (permanent ones included) when the device is deleted.
/// WireGuard devices (never created by the adapter, only their MTU set) and the pod side
/// (bridge, ports, pod veths, CNI configuration) are not touched: pods keep working at their
/// MTU, which only ever constrains.
///
/// `state` is read with [`ReadScope::owned`]. An empty plan means nothing owned remains, which is
/// how [`crate::Dataplane::remove_owned`] verifies its read-back.
pub fn removal(settings: &Settings, state: &KernelState) -> Result<Plan> {
    // Invalid settings (e.g. table `main`) would make "the adapter's table" somebody else's:
    // refuse, like a reconcile, rather than delete there.
    validate_settings(settings)?;
    let mut plan = Plan::default();

    let mut rules: Vec<&Rule> = state
        .rules
        .iter()
        .filter(|r| r.table == settings.table)
        .collect();
    rules.sort();
    for r in rules {
        plan.push(Phase::Remove, Op::DeleteRule(*r));
    }

    let (own, foreign): (Vec<&Route>, Vec<&Route>) = state
        .routes
        .iter()
        .filter(|r| r.table == settings.table)
        .partition(|r| r.protocol == settings.route_protocol);
    let (mut endpoints, mut routes): (Vec<&Route>, Vec<&Route>) =
        own.into_iter().partition(|r| is_endpoint_route(r));
    routes.sort_by_key(|r| r.destination);
    endpoints.sort_by_key(|r| r.destination);
    for r in routes.into_iter().chain(endpoints) {
        plan.push(
            Phase::Remove,
            Op::DeleteRoute {
                table: r.table,
                destination: r.destination,
                protocol: r.protocol,
            },
        );
    }
    for r in foreign {
        plan.notes.push(format!(
            "route {} in table {} has protocol {}, not {}: left alone",
            r.destination, r.table, r.protocol, settings.route_protocol
        ));
    }

    let mut devices: Vec<&String> = settings.managed_devices.iter().collect();
    devices.sort();
    devices.dedup();
    for name in devices {
        match state.link(name) {
            None => {}
            Some(l) if matches!(l.kind, LinkKind::Tunnel(_)) => {
                plan.push(Phase::Remove, Op::DeleteLink { link: name.clone() });
            }
            Some(l) => plan.notes.push(format!(
                "link {name} is {:?}, not a tunnel device: not the adapter's, left alone",
                l.kind
            )),
        }
    }
    Ok(plan)
}
