//! Relations between two Sites, a Site and a pool, and two pools, memoized symmetrically, and the
//! membership indexes they read (which pools serve a Site, where pools' gateways are located).

use super::*;
use smallvec::SmallVec;

impl<'t> Net<'t> {
    /// Facts about two Sites (`s ≠ t`), memoized symmetrically.
    pub fn site_pair(&self, s: SiteId, t: SiteId) -> SitePair {
        let key = sorted_pair(s, t);
        if let Some(p) = self.site_pairs.borrow().get(&key) {
            return p.clone();
        }
        let topo = self.topo;
        let mut pair = SitePair::default();
        for pid in intersect(topo.peerings_of(key.0), topo.peerings_of(key.1)) {
            let r = topo.site_peering(pid);
            pair.network = true;
            if r.mesh {
                pair.mesh = true;
                if pair.mesh_protocol.is_none()
                    && let Some(p) = r.protocol
                {
                    pair.mesh_protocol = Some((p, ObjRef::SitePeering(pid)));
                }
            }
            if let Some(c) = &r.cap {
                pair.caps.push((c.mtu, ObjRef::SitePeering(pid)));
            }
        }
        self.site_pairs.borrow_mut().insert(key, pair.clone());
        pair
    }

    /// `meshPeered(s, t)`.
    pub fn mesh_peered(&self, s: SiteId, t: SiteId) -> bool {
        s == t || self.site_pair(s, t).mesh
    }

    /// `networkPeered(s, t)`.
    pub fn network_peered(&self, s: SiteId, t: SiteId) -> bool {
        s == t || self.site_pair(s, t).network
    }

    /// Assignments listing Site `s` and pool `p`: caps and protocol. Not memoized: a Site lists
    /// few assignments, each looked up in the pool's sorted list, which costs less than a memo
    /// entry (a one-node resolve asks once per Site it delivers to).
    pub fn sgpa(&self, s: SiteId, p: PoolId) -> PairCaps {
        let topo = self.topo;
        let of_pool = topo.assignments_of_pool(p);
        let mut out = PairCaps::default();
        for a in topo.assignments_of(s) {
            if of_pool.binary_search(a).is_err() {
                continue;
            }
            let r = topo.assignment(*a);
            if let Some(c) = &r.cap {
                out.caps.push((c.mtu, ObjRef::Assignment(*a)));
            }
            if out.protocol.is_none()
                && let Some(pr) = r.protocol
            {
                out.protocol = Some((pr, ObjRef::Assignment(*a)));
            }
        }
        out
    }

    /// Pool peerings listing pools `p` and `q`: caps and protocol, memoized symmetrically.
    pub fn gpp(&self, p: PoolId, q: PoolId) -> PairCaps {
        let key = sorted_pair(p, q);
        if let Some(x) = self.gpp.borrow().get(&key) {
            return x.clone();
        }
        let topo = self.topo;
        let mut out = PairCaps::default();
        for r_id in intersect(topo.pool_peerings_of(key.0), topo.pool_peerings_of(key.1)) {
            let r = topo.pool_peering(r_id);
            if let Some(c) = &r.cap {
                out.caps.push((c.mtu, ObjRef::PoolPeering(r_id)));
            }
            if out.protocol.is_none()
                && let Some(pr) = r.protocol
            {
                out.protocol = Some((pr, ObjRef::PoolPeering(r_id)));
            }
        }
        self.gpp.borrow_mut().insert(key, out.clone());
        out
    }

    /// `assigned(s)`: pools assigned to Site `s`, sorted.
    pub fn assigned(&self, s: SiteId) -> SmallVec<[PoolId; 4]> {
        let mut out: SmallVec<[PoolId; 4]> = SmallVec::new();
        for a in self.topo.assignments_of(s) {
            out.extend(self.topo.assignment(*a).pools.iter().copied());
        }
        out.sort_unstable();
        out.dedup();
        out
    }

    /// `assignedSites(p)`: Sites served by pool `p`, sorted (gateway-only index, built lazily).
    pub fn served_sites(&self, p: PoolId) -> &[SiteId] {
        let served = self.served.get_or_init(|| {
            let topo = self.topo;
            let mut v: Vec<SmallVec<[SiteId; 4]>> = vec![SmallVec::new(); topo.pools.len()];
            for (pi, slot) in v.iter_mut().enumerate() {
                for a in topo.assignments_of_pool(PoolId::from_idx(pi)) {
                    slot.extend(topo.assignment(*a).sites.iter().copied());
                }
                slot.sort_unstable();
                slot.dedup();
            }
            v
        });
        served.get(p.idx()).map(|s| s.as_slice()).unwrap_or(&[])
    }

    /// Whether pool `p` serves Site `s`.
    pub fn serves(&self, p: PoolId, s: SiteId) -> bool {
        self.served_sites(p).binary_search(&s).is_ok()
    }

    /// `peeredPools(p)`, sorted, without `p`.
    pub fn peered_pools(&self, p: PoolId) -> SmallVec<[PoolId; 4]> {
        let mut out: SmallVec<[PoolId; 4]> = SmallVec::new();
        for r in self.topo.pool_peerings_of(p) {
            out.extend(
                self.topo
                    .pool_peering(*r)
                    .pools
                    .iter()
                    .copied()
                    .filter(|q| *q != p),
            );
        }
        out.sort_unstable();
        out.dedup();
        out
    }

    /// The distinct Sites where each pool's gateways are located, sorted (gateway-only index,
    /// built lazily).
    pub(super) fn pool_gateway_sites(&self) -> &[SmallVec<[SiteId; 2]>] {
        self.gateway_sites.get_or_init(|| {
            let topo = self.topo;
            topo.pools
                .iter()
                .map(|p| {
                    let mut v: SmallVec<[SiteId; 2]> =
                        p.gateways.iter().map(|g| topo.node(*g).site).collect();
                    v.sort_unstable();
                    v.dedup();
                    v
                })
                .collect()
        })
    }

    /// The distinct Sites where pool `p`'s gateways are located, sorted.
    pub fn gateway_sites_of(&self, p: PoolId) -> &[SiteId] {
        self.pool_gateway_sites()
            .get(p.idx())
            .map_or(&[], |v| v.as_slice())
    }

    /// The distinct pools with a gateway located in Site `s`, sorted: read from the pools'
    /// gateway Sites, so a destination's searches do not read the nodes of its gateways (tens
    /// of thousands of nodes at hyperscale, each on its own cache lines).
    pub(crate) fn gateway_pools_in(&self, s: SiteId) -> &[PoolId] {
        let all = self.site_gateway_pools.get_or_init(|| {
            let mut out: Vec<SmallVec<[PoolId; 2]>> = vec![SmallVec::new(); self.topo.sites.len()];
            for (pi, sites) in self.pool_gateway_sites().iter().enumerate() {
                for x in sites {
                    if let Some(v) = out.get_mut(x.idx()) {
                        v.push(PoolId::from_idx(pi));
                    }
                }
            }
            out
        });
        all.get(s.idx()).map_or(&[], |v| v.as_slice())
    }

    /// The member Sites of SitePeering `r` where gateways are located, sorted (gateway-only
    /// index, built lazily: the searches ask which pools a destination's network peers block).
    pub(super) fn peering_gateway_sites(&self, r: PeeringId) -> &[SiteId] {
        let all = self.peering_gw_sites.get_or_init(|| {
            let topo = self.topo;
            topo.site_peerings
                .iter()
                .map(|p| {
                    p.sites
                        .iter()
                        .copied()
                        .filter(|s| !topo.gateways_in(*s).is_empty())
                        .collect()
                })
                .collect()
        });
        all.get(r.idx()).map(|v| v.as_slice()).unwrap_or(&[])
    }

    /// Whether a gateway located in Site `x` accepts hop lists of this origin class.
    pub(super) fn allowed(&self, x: SiteId, class: (Dest, bool)) -> bool {
        match class.0 {
            Dest::Pool(_) => true,
            Dest::Site(d) => x != d && !(class.1 && self.shares_peering(x, d)),
        }
    }

    /// `networkPeered(s, t)` for `s ≠ t` straight from the membership index, without the pair
    /// memo: the searches ask it for every (gateway Site, destination Site) pair they meet, and
    /// a merge of two short sorted membership lists costs less than a memo entry.
    pub(super) fn shares_peering(&self, s: SiteId, t: SiteId) -> bool {
        let (a, b) = (self.topo.peerings_of(s), self.topo.peerings_of(t));
        let (mut i, mut j) = (0usize, 0usize);
        while let (Some(x), Some(y)) = (a.get(i), b.get(j)) {
            match x.cmp(y) {
                std::cmp::Ordering::Less => i = i.saturating_add(1),
                std::cmp::Ordering::Greater => j = j.saturating_add(1),
                std::cmp::Ordering::Equal => return true,
            }
        }
        false
    }
}
