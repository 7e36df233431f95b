//! Learned routes: the prefixes a worker or gateway learns from its uplink and transit pools,
//! at which distance and through which next hops, memoized per class of nodes.

use super::*;
use crate::model::Topology;
use ipnet::IpNet;
use smallvec::SmallVec;
use std::sync::Arc;

impl<'t> Net<'t> {
    /// Pools that originate a destination.
    pub fn origin_pools(&self, dest: Dest) -> SmallVec<[PoolId; 4]> {
        let topo = self.topo;
        match dest {
            Dest::Pool(o) => smallvec::smallvec![o],
            Dest::Site(d) => {
                let mut out: SmallVec<[PoolId; 4]> = SmallVec::new();
                for a in topo.assignments_of(d) {
                    out.extend(topo.assignment(*a).pools.iter().copied());
                }
                out.sort_unstable();
                out.dedup();
                out
            }
        }
    }

    fn uplink_gateways(&self, s: SiteId) -> Vec<GatewayClass> {
        gateway_classes(self.topo, &self.assigned(s))
    }

    /// The transit peers of pool `q`'s gateways (memoized per pool: every learned-route lookup
    /// of a gateway asks for them).
    pub(super) fn transit_peers(&self, q: PoolId) -> &[GatewayClass] {
        let all = self.transit.get_or_init(|| {
            (0..self.topo.pools.len())
                .map(|_| OnceCell::new())
                .collect()
        });
        all.get(q.idx()).map_or(&[], |slot| {
            slot.get_or_init(|| gateway_classes(self.topo, &self.peered_pools(q)).into())
        })
    }

    fn worker_route(
        &self,
        s: SiteId,
        prefix: IpNet,
        origins: &[Origin],
        gws: &[GatewayClass],
    ) -> Option<Learned> {
        let mut best: Option<Learned> = None;
        for o in origins {
            if let Dest::Site(d) = o.dest {
                if d == s {
                    continue;
                }
                if o.ty == RouteType::NodeCidr && self.shares_peering(s, d) {
                    continue;
                }
            }
            if gws.is_empty() {
                continue;
            }
            let Some(bfs) = self.bfs(o.dest, o.ty == RouteType::NodeCidr) else {
                continue;
            };
            for c in gws {
                if let Some(d) = self.advertised(bfs, c.pool, c.site, *o) {
                    consider(&mut best, prefix, *o, d, &c.gateways);
                }
            }
        }
        best.map(finish)
    }

    fn gateway_route(
        &self,
        q: PoolId,
        x: SiteId,
        prefix: IpNet,
        origins: &[Origin],
        peers: &[GatewayClass],
    ) -> Option<Learned> {
        // Whether `q` is among `origin_pools(o.dest)` of some origin, without building the list.
        let topo = self.topo;
        let own = origins.iter().any(|o| match o.dest {
            Dest::Pool(x) => x == q,
            Dest::Site(d) => topo
                .assignments_of(d)
                .iter()
                .any(|a| topo.assignment(*a).pools.contains(&q)),
        });
        if own {
            // Rule 6: a serving gateway delivers; an owning pool hands it to its underlay.
            return None;
        }
        let mut best: Option<Learned> = None;
        for o in origins {
            if !self.allowed(x, o.class()) {
                continue;
            }
            if peers.is_empty() {
                continue;
            }
            let Some(bfs) = self.bfs(o.dest, o.ty == RouteType::NodeCidr) else {
                continue;
            };
            for c in peers {
                if let Some(d) = self.advertised(bfs, c.pool, c.site, *o) {
                    consider(&mut best, prefix, *o, d, &c.gateways);
                }
            }
        }
        best.map(finish)
    }

    /// Learned routes of the workers of Site `s` (shared by all of them), uncut.
    pub fn worker_learned(&self, s: SiteId) -> LearnedRoutes {
        if let Some(r) = self.site_routes.borrow().get(&s) {
            return r.clone();
        }
        let gws = self.uplink_gateways(s);
        let mut out: Vec<Learned> = Vec::new();
        if !gws.is_empty() {
            let entries = &self.topo.prefix_table().entries;
            out.reserve_exact(entries.len());
            for (prefix, origins) in entries {
                if let Some(l) = self.worker_route(s, *prefix, origins, &gws) {
                    out.push(l);
                }
            }
        }
        let rc = Arc::new(out);
        self.site_routes.borrow_mut().insert(s, rc.clone());
        rc
    }

    /// Learned (transit) routes of a gateway of pool `q` located in Site `x`, uncut.
    pub fn gateway_learned(&self, q: PoolId, x: SiteId) -> LearnedRoutes {
        if let Some(r) = self.gw_routes.borrow().get(&(q, x)) {
            return r.clone();
        }
        let peers = self.transit_peers(q);
        let mut out: Vec<Learned> = Vec::new();
        if !peers.is_empty() {
            let entries = &self.topo.prefix_table().entries;
            out.reserve_exact(entries.len());
            for (prefix, origins) in entries {
                if let Some(l) = self.gateway_route(q, x, *prefix, origins, peers) {
                    out.push(l);
                }
            }
        }
        let rc = Arc::new(out);
        self.gw_routes.borrow_mut().insert((q, x), rc.clone());
        rc
    }

    /// Learned routes of any node, uncut.
    pub fn learned(&self, n: NodeId) -> LearnedRoutes {
        let node = self.topo.node(n);
        match node.role {
            Role::Worker => self.worker_learned(node.site),
            Role::Gateway(p) => self.gateway_learned(p, node.site),
        }
    }

    /// The learned route of node `n` for `prefix` (uncut), if any. Uses the node's full route
    /// list when it was already computed, else computes (and memoizes) this prefix alone.
    pub fn learned_for(&self, n: NodeId, prefix: &IpNet) -> Option<Learned> {
        let node = self.topo.node(n);
        let key = match node.role {
            Role::Worker => NodeKey::Worker(node.site),
            Role::Gateway(p) => NodeKey::Gateway(p, node.site),
        };
        self.learned_for_key(key, prefix)
    }

    /// [`Net::learned_for`] of the gateways of pool `q` located in Site `x`.
    pub fn gateway_learned_for(&self, q: PoolId, x: SiteId, prefix: &IpNet) -> Option<Learned> {
        self.learned_for_key(NodeKey::Gateway(q, x), prefix)
    }

    fn learned_for_key(&self, key: NodeKey, prefix: &IpNet) -> Option<Learned> {
        let full = match key {
            NodeKey::Worker(s) => self.site_routes.borrow().get(&s).cloned(),
            NodeKey::Gateway(p, x) => self.gw_routes.borrow().get(&(p, x)).cloned(),
        };
        if let Some(routes) = full {
            return routes
                .binary_search_by(|l| prefix_order(&l.prefix, prefix))
                .ok()
                .and_then(|i| routes.get(i))
                .cloned();
        }
        if let Some(r) = self.one_route.borrow().get(&(key, *prefix)) {
            return r.clone();
        }
        let origins = self.origins_of(prefix);
        let r = if origins.is_empty() {
            None
        } else {
            match key {
                NodeKey::Worker(s) => {
                    let gws = self.uplink_gateways(s);
                    self.worker_route(s, *prefix, &origins, &gws)
                }
                NodeKey::Gateway(q, x) => {
                    let peers = self.transit_peers(q);
                    self.gateway_route(q, x, *prefix, &origins, peers)
                }
            }
        };
        self.one_route
            .borrow_mut()
            .insert((key, *prefix), r.clone());
        r
    }

    /// Whether gateway `g`'s pool originates (serves or owns) the destination.
    pub fn originates(&self, g: NodeId, dest: Dest) -> bool {
        self.topo
            .node(g)
            .pool()
            .is_some_and(|p| self.pool_originates(p, dest))
    }

    /// Whether pool `p` originates (serves or owns) the destination.
    pub fn pool_originates(&self, p: PoolId, dest: Dest) -> bool {
        match dest {
            Dest::Pool(o) => o == p,
            Dest::Site(d) => self.serves(p, d),
        }
    }
}

/// The gateways of `pools`, by class, in the order of the pools (then of their Sites' first
/// gateways).
fn gateway_classes(topo: &Topology, pools: &[PoolId]) -> Vec<GatewayClass> {
    let mut out: Vec<GatewayClass> = Vec::new();
    for p in pools {
        let first = out.len();
        for g in &topo.pool(*p).gateways {
            let site = topo.node(*g).site;
            match out
                .get_mut(first..)
                .and_then(|cs| cs.iter_mut().find(|c| c.site == site))
            {
                Some(c) => c.gateways.push(*g),
                None => out.push(GatewayClass {
                    pool: *p,
                    site,
                    gateways: smallvec::smallvec![*g],
                }),
            }
        }
    }
    out
}

fn consider(best: &mut Option<Learned>, prefix: IpNet, o: Origin, d: u32, gs: &[NodeId]) {
    match best {
        Some(b) if b.distance < d => {}
        Some(b) if b.distance == d => {
            b.via.extend_from_slice(gs);
            if !b.origins.contains(&o) {
                b.origins.push(o);
            }
        }
        _ => {
            *best = Some(Learned {
                prefix,
                origin: o,
                origins: smallvec::smallvec![o],
                distance: d,
                via: SmallVec::from_slice(gs),
            })
        }
    }
}

fn finish(mut l: Learned) -> Learned {
    l.via.sort_unstable();
    l.via.dedup();
    l.origins.sort_unstable();
    if let Some(o) = l.origins.first() {
        l.origin = *o;
    }
    l
}
