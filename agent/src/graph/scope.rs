//! What the picture draws when nodes are selected (`--site`, `--pool`, `-l`, `--node`): the
//! Sites of the selected nodes; the pools of selected gateways, those assigned to a drawn Site
//! and those with gateways in one; and each relationship between at least two drawn members
//! (an assignment: a drawn Site and a drawn pool), joining only those. The values shown stay
//! those of the whole cluster.

use topology_core::ids::{NodeId, PoolId, SiteId};
use topology_core::model::Topology;

/// The Sites and pools drawn.
#[derive(Clone, Debug)]
pub struct Scope {
    /// Whether each Site is drawn, by ID (None: every Site).
    sites: Option<Vec<bool>>,
    /// Whether each pool is drawn, by ID (None: every pool).
    pools: Option<Vec<bool>>,
}

impl Scope {
    /// Everything.
    pub fn all() -> Scope {
        Scope {
            sites: None,
            pools: None,
        }
    }

    /// The Sites of `selected` and the pools around them.
    pub fn of(topo: &Topology, selected: &[NodeId]) -> Scope {
        let mut sites = vec![false; topo.sites.len()];
        let mut pools = vec![false; topo.pools.len()];
        let mark = |v: &mut Vec<bool>, i: usize| {
            if let Some(slot) = v.get_mut(i) {
                *slot = true;
            }
        };
        for n in selected {
            let node = topo.node(*n);
            mark(&mut sites, node.site.idx());
            if let Some(p) = node.pool() {
                mark(&mut pools, p.idx());
            }
        }
        for (i, drawn) in sites.iter().enumerate() {
            if !drawn {
                continue;
            }
            let sid = SiteId::from_idx(i);
            for g in topo.gateways_in(sid) {
                if let Some(p) = topo.node(*g).pool() {
                    mark(&mut pools, p.idx());
                }
            }
            for a in topo.assignments_of(sid) {
                for p in &topo.assignment(*a).pools {
                    mark(&mut pools, p.idx());
                }
            }
        }
        Scope {
            sites: Some(sites),
            pools: Some(pools),
        }
    }

    /// Whether Site `s` is drawn.
    pub fn site(&self, s: SiteId) -> bool {
        drawn(&self.sites, s.idx())
    }

    /// Whether pool `p` is drawn.
    pub fn pool(&self, p: PoolId) -> bool {
        drawn(&self.pools, p.idx())
    }

    /// The drawn ones of `sites`.
    pub fn sites_of(&self, sites: &[SiteId]) -> Vec<SiteId> {
        sites.iter().copied().filter(|s| self.site(*s)).collect()
    }

    /// The drawn ones of `pools`.
    pub fn pools_of(&self, pools: &[PoolId]) -> Vec<PoolId> {
        pools.iter().copied().filter(|p| self.pool(*p)).collect()
    }
}

/// Whether entry `i` of `marks` is drawn (every entry without marks).
fn drawn(marks: &Option<Vec<bool>>, i: usize) -> bool {
    marks
        .as_ref()
        .is_none_or(|m| m.get(i).copied().unwrap_or(false))
}
