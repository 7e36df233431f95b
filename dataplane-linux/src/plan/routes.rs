//! The routes of the adapter's table: the kernel route of each route of the plan, the endpoint
//! host routes its tunnels need (written in phase 1), and the plan routes' MTU changes and
//! deletions (phases 3 and 6).

use std::collections::{BTreeMap, BTreeSet};
use std::net::IpAddr;

use ipnet::IpNet;

use super::underlay::detect_underlay;
use super::{Phase, Plan};
use crate::error::{Error, Result};
use crate::model::{ENCAP_TTL, Encap, Hop, KernelState, Op, Route};
use crate::types::{DesiredState, HopProtocol, NextHop, RouteSpec, Settings};

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
fn desired_endpoint_routes(
    desired: &DesiredState,
    settings: &Settings,
    state: &KernelState,
    plan: &mut Plan,
) -> BTreeMap<IpNet, Route> {
    let own = super::own_devices(desired, settings);
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

/// The routes a reconcile wants in the adapter's table, beside those the kernel holds.
pub(super) struct Routes<'a> {
    /// What the kernel holds, by destination.
    held: BTreeMap<IpNet, &'a Route>,
    /// The endpoint host routes, by destination.
    endpoints: BTreeMap<IpNet, Route>,
    /// The plan's routes as the kernel will hold them, by destination.
    wanted: BTreeMap<IpNet, Route>,
}

/// Phase 1's endpoint routes: the kernel route of every route of the plan (refusing a
/// destination listed twice, noting next hops left out), then a write for each endpoint host
/// route the kernel does not hold as wanted. A plan route to an endpoint's own address wins over
/// the endpoint route.
pub(super) fn endpoint_routes<'a>(
    desired: &DesiredState,
    settings: &Settings,
    state: &'a KernelState,
    plan: &mut Plan,
) -> Result<Routes<'a>> {
    let held: BTreeMap<IpNet, &Route> = state.routes.iter().map(|r| (r.destination, r)).collect();
    let endpoints = desired_endpoint_routes(desired, settings, state, plan);
    let wanted = plan_route_set(desired, settings, plan)?;
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
    Ok(Routes {
        held,
        endpoints,
        wanted,
    })
}

/// The kernel route of every route of the plan, by destination. A destination listed twice is
/// refused; next hops left out, and routes left without any, are noted.
fn plan_route_set(
    desired: &DesiredState,
    settings: &Settings,
    plan: &mut Plan,
) -> Result<BTreeMap<IpNet, Route>> {
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
    Ok(wanted)
}

/// The plan routes: an MTU that goes down in phase 3, one that goes up and a new route in
/// phase 6; a route changing next hops while its MTU goes down is lowered on the held next hops
/// first and moved later. A route of the adapter's protocol no longer wanted is deleted in
/// phase 3, except an endpoint-like one (a host prefix without encapsulation, not through a
/// device about to go): those are returned, for phase 9.
pub(super) fn plan_routes(
    settings: &Settings,
    state: &KernelState,
    routes: &Routes<'_>,
    doomed: &BTreeSet<&String>,
    plan: &mut Plan,
) -> Vec<Op> {
    let mut routes_up: Vec<Op> = Vec::new();
    for (dst, r) in &routes.wanted {
        match routes.held.get(dst) {
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
            || routes.wanted.contains_key(&o.destination)
            || routes.endpoints.contains_key(&o.destination)
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
    removals
}
