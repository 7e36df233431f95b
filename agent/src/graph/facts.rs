//! What the picture shows, gathered once from every node's plan: the lowest link between the
//! members of each relationship and inside each Site and pool, the lowest route between Sites,
//! what pools publish, and which objects' caps bind something shown. The DOT and JSON forms are
//! both drawn from these facts.

use ipnet::IpNet;
use mtu_solver::explain::{ExplId, Kind as EKind, Leaf};
use mtu_solver::{RouteKind, Solver};
use std::collections::{BTreeMap, BTreeSet};
use topology_core::ids::{NodeId, PoolId, SiteId};
use topology_core::model::{ObjRef, Topology};
use topology_core::net::{Dest, LinkKind};

/// The lowest value of a set, with the term that binds it.
#[derive(Clone, Copy, Debug)]
pub(super) struct Low {
    pub(super) mtu: u32,
    pub(super) bound: ExplId,
}

/// Keeps the lower of `slot` and `(mtu, bound)`; the first one seen on ties (nodes are visited
/// in name order, so the choice does not depend on input order).
pub(super) fn lower(slot: &mut Option<Low>, mtu: u32, bound: ExplId) {
    if slot.is_none_or(|l| mtu < l.mtu) {
        *slot = Some(Low { mtu, bound });
    }
}

pub(super) fn lower_in<K: Ord>(map: &mut BTreeMap<K, Low>, key: K, mtu: u32, bound: ExplId) {
    let mut slot = map.get(&key).copied();
    lower(&mut slot, mtu, bound);
    if let Some(l) = slot {
        map.insert(key, l);
    }
}

/// What a gateway delivers: a Site's prefixes or a pool's routed CIDRs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(super) enum Target {
    Site(SiteId),
    Routed(IpNet),
}

/// Everything the picture shows, gathered from every node's plan.
#[derive(Default)]
pub(super) struct Facts {
    /// Uplink and delivery links between the workers of a Site and the gateways of a pool.
    pub(super) site_pool: BTreeMap<(SiteId, PoolId), Low>,
    /// Transit links between the gateways of two pools (lower ID first).
    pub(super) pool_pool: BTreeMap<(PoolId, PoolId), Low>,
    /// Mesh links between the workers of two Sites (lower ID first).
    pub(super) site_site: BTreeMap<(SiteId, SiteId), Low>,
    /// Mesh links between the workers of one Site.
    pub(super) in_site: BTreeMap<SiteId, Low>,
    /// Links between the gateways of one pool.
    pub(super) in_pool: BTreeMap<PoolId, Low>,
    /// Routes of the workers of a Site towards another Site's prefixes and nodes.
    pub(super) routes: BTreeMap<(SiteId, SiteId), Low>,
    /// Resolved published values of a pool's gateways per target: lowest and highest.
    pub(super) publishes: BTreeMap<PoolId, BTreeMap<Target, (u32, u32)>>,
    /// Objects whose cap binds some value shown.
    pub(super) binding: BTreeSet<ObjRef>,
}

pub(super) fn ordered<T: Ord>(a: T, b: T) -> (T, T) {
    if a <= b { (a, b) } else { (b, a) }
}

pub(super) fn gather(solver: &mut Solver<'_>) -> Facts {
    let topo = solver.topo();
    let mut f = Facts::default();
    for i in 0..topo.nodes.len() {
        let n = NodeId::from_idx(i);
        let plan = solver.plan(n);
        let a = topo.node(n);
        for l in &plan.links {
            let b = topo.node(l.peer);
            let (mtu, bound) = (l.mtu.mtu.get(), solver.explanations().get(l.mtu.expl).bound);
            match l.kind {
                LinkKind::Mesh if a.site == b.site => lower_in(&mut f.in_site, a.site, mtu, bound),
                LinkKind::Mesh => lower_in(&mut f.site_site, ordered(a.site, b.site), mtu, bound),
                LinkKind::Uplink => {
                    if let Some(p) = b.pool() {
                        lower_in(&mut f.site_pool, (a.site, p), mtu, bound);
                    }
                }
                LinkKind::Delivery => {
                    if let Some(p) = a.pool() {
                        lower_in(&mut f.site_pool, (b.site, p), mtu, bound);
                    }
                }
                LinkKind::Transit => {
                    if let (Some(p), Some(q)) = (a.pool(), b.pool()) {
                        lower_in(&mut f.pool_pool, ordered(p, q), mtu, bound);
                    }
                }
                LinkKind::PoolMesh => {
                    if let Some(p) = a.pool() {
                        lower_in(&mut f.in_pool, p, mtu, bound);
                    }
                }
            }
        }
        if a.pool().is_none() {
            for rt in &plan.routes {
                let bound = solver.explanations().get(rt.mtu.expl).bound;
                let dests: Vec<SiteId> = match rt.kind {
                    RouteKind::Direct => rt.via.iter().map(|v| topo.node(*v).site).collect(),
                    RouteKind::Gateway | RouteKind::Transit => solver
                        .net()
                        .origins_of(&rt.advertised)
                        .iter()
                        .filter_map(|o| match o.dest {
                            Dest::Site(t) => Some(t),
                            Dest::Pool(_) => None,
                        })
                        .collect(),
                };
                for t in dests {
                    if t != a.site && !topo.workers_of(t).is_empty() {
                        lower_in(&mut f.routes, (a.site, t), rt.mtu.mtu.get(), bound);
                    }
                }
            }
        }
        if let (Some(p), Some(published)) = (a.pool(), &plan.published) {
            for pb in published {
                let mtu = pb.mtu.mtu.get();
                let origins = solver.net().origins_of(&pb.destination);
                for o in origins.iter() {
                    let target = match o.dest {
                        Dest::Site(t) => Target::Site(t),
                        Dest::Pool(_) => Target::Routed(pb.destination),
                    };
                    let e = f
                        .publishes
                        .entry(p)
                        .or_default()
                        .entry(target)
                        .or_insert((mtu, mtu));
                    *e = (e.0.min(mtu), e.1.max(mtu));
                }
            }
        }
    }
    let lows = f
        .site_pool
        .values()
        .chain(f.pool_pool.values())
        .chain(f.site_site.values())
        .chain(f.in_site.values())
        .chain(f.in_pool.values())
        .chain(f.routes.values());
    for l in lows {
        if let Some(o) = cap_object(solver, l.bound) {
            f.binding.insert(o);
        }
    }
    f
}

/// The object whose cap a term is, if it is one.
pub(super) fn cap_object(solver: &Solver<'_>, term: ExplId) -> Option<ObjRef> {
    match &solver.explanations().get(term).kind {
        EKind::Leaf(Leaf::Cap { obj }) | EKind::Leaf(Leaf::Comp { obj, .. }) => Some(*obj),
        _ => None,
    }
}

/// A binding term in a few words: the object or node and field it comes from.
pub(super) fn bound_text(solver: &Solver<'_>, term: ExplId) -> String {
    let topo = solver.topo();
    let name = |n: &NodeId| topo.node(*n).name.to_string();
    match &solver.explanations().get(term).kind {
        EKind::Leaf(Leaf::Cap { obj }) => format!("{} cap", topo.label(*obj)),
        EKind::Leaf(Leaf::Comp { obj, .. }) => format!("{} cap (component)", topo.label(*obj)),
        EKind::Leaf(Leaf::Auto {
            node,
            underlay,
            protocol,
            overhead,
            ..
        }) => format!(
            "underlay of {} {underlay} − {protocol} {overhead}",
            name(node)
        ),
        EKind::Leaf(Leaf::Path {
            a,
            b,
            mtu,
            protocol,
            overhead,
            ..
        }) => format!("path {}↔{} {mtu} − {protocol} {overhead}", name(a), name(b)),
        EKind::Leaf(Leaf::Underlay { node, underlay, .. }) => {
            format!("underlay of {} {underlay}", name(node))
        }
        EKind::Leaf(Leaf::Cfg { node }) => format!("agent mtu on {}", name(node)),
        EKind::Leaf(Leaf::Published { gateway, .. }) => {
            format!("the value {} published", name(gateway))
        }
        _ => solver.explanations().term_name(term, topo),
    }
}

/// `1 worker`, `2 workers`, `no workers`.
pub(super) fn count(n: usize, one: &str, many: &str) -> String {
    match n {
        0 => format!("no {many}"),
        1 => format!("1 {one}"),
        _ => format!("{n} {many}"),
    }
}

pub(super) fn cap_text(topo: &Topology, o: ObjRef) -> String {
    match topo.cap_of(o) {
        Some(c) if c.invalid.is_some() => format!("cap {} (invalid)", c.mtu),
        Some(c) => format!("cap {}", c.mtu),
        None => "no cap".to_string(),
    }
}
