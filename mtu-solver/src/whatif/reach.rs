//! What a cap change can reach: the nodes near the capped object, the destinations whose routes
//! elsewhere can change, and the classes of remote nodes that share learned routes.

use crate::solver::Solver;
use rustc_hash::FxHashSet;
use topology_core::ids::{NodeId, SiteId};
use topology_core::model::{ObjRef, Topology};
use topology_core::net::Dest;

/// The first node (by ID) of every class of nodes outside `near`: the workers of a Site
/// (`(false, site, 0)`), the gateways of a pool in a Site (`(true, pool, site)`).
pub(super) fn class_representatives(
    t: &Topology,
    near: &FxHashSet<NodeId>,
) -> Vec<((bool, u32, u32), NodeId)> {
    let mut seen: FxHashSet<(bool, u32, u32)> = FxHashSet::default();
    let mut out = Vec::new();
    for (i, node) in t.nodes.iter().enumerate() {
        let id = NodeId::from_idx(i);
        if near.contains(&id) {
            continue;
        }
        let key = class_key(node);
        if seen.insert(key) {
            out.push((key, id));
        }
    }
    out
}

pub(super) fn class_key(node: &topology_core::model::NodeInfo) -> (bool, u32, u32) {
    match node.pool() {
        None => (false, node.site.0, 0),
        Some(p) => (true, p.0, node.site.0),
    }
}

/// Nodes whose links, fabric, devices or published values can involve a cap of `o`.
fn near(s: &Solver<'_>, o: ObjRef) -> FxHashSet<NodeId> {
    let t = s.topo();
    let mut core: FxHashSet<NodeId> = FxHashSet::default();
    let mut with_peers = true;
    let add_site = |core: &mut FxHashSet<NodeId>, site: SiteId| {
        core.extend(t.workers_of(site).iter().copied());
        core.extend(t.gateways_in(site).iter().copied());
    };
    // Gateways of pools serving a Site publish for it even without workers there.
    let add_serving = |core: &mut FxHashSet<NodeId>, site: SiteId| {
        for a in t.assignments_of(site) {
            for p in &t.assignment(*a).pools {
                core.extend(t.pool(*p).gateways.iter().copied());
            }
        }
    };
    match o {
        ObjRef::Site(site) => {
            for x in &t.component(t.comp(site)).sites {
                add_site(&mut core, *x);
                add_serving(&mut core, *x);
            }
        }
        ObjRef::SitePeering(p) => {
            let r = t.site_peering(p);
            for x in &r.sites {
                for y in &t.component(t.comp(*x)).sites {
                    add_site(&mut core, *y);
                    add_serving(&mut core, *y);
                }
            }
        }
        ObjRef::Assignment(a) => {
            let r = t.assignment(a);
            for x in &r.sites {
                core.extend(t.workers_of(*x).iter().copied());
            }
            for p in &r.pools {
                core.extend(t.pool(*p).gateways.iter().copied());
            }
            with_peers = false;
        }
        ObjRef::Pool(p) => core.extend(t.pool(p).gateways.iter().copied()),
        ObjRef::PoolPeering(r) => {
            for p in &t.pool_peering(r).pools {
                core.extend(t.pool(*p).gateways.iter().copied());
            }
            with_peers = false;
        }
    }
    if with_peers {
        let mut all = core.clone();
        for n in &core {
            all.extend(s.net.link_peers(*n).into_iter().map(|(p, _)| p));
        }
        all
    } else {
        core
    }
}

/// What cap changes of `objs` can reach: the nodes near them, and the advertised prefixes whose
/// routes elsewhere can change (towards the destinations the caps can be on the path to).
pub(super) fn change_reach(
    s: &Solver<'_>,
    objs: &[ObjRef],
) -> (FxHashSet<NodeId>, Vec<ipnet::IpNet>) {
    let t = s.topo();
    let mut near_set: FxHashSet<NodeId> = FxHashSet::default();
    let mut filter: Option<FxHashSet<Dest>> = Some(FxHashSet::default());
    for o in objs {
        near_set.extend(near(s, *o));
        match (dest_filter(t, *o), &mut filter) {
            (Some(d), Some(f)) => f.extend(d),
            _ => filter = None,
        }
    }
    let prefixes = s
        .net
        .advertised_prefixes()
        .filter(|(_, origins)| match &filter {
            None => true,
            Some(f) => origins.iter().any(|o| f.contains(&o.dest)),
        })
        .map(|(p, _)| *p)
        .collect();
    (near_set, prefixes)
}

/// Destinations whose paths can involve the cap of `o` (None: any).
fn dest_filter(t: &Topology, o: ObjRef) -> Option<FxHashSet<Dest>> {
    match o {
        ObjRef::Assignment(a) => Some(
            t.assignment(a)
                .sites
                .iter()
                .map(|s| Dest::Site(*s))
                .collect(),
        ),
        _ => None,
    }
}
