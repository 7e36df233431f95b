//! Which Sites and pools a picture draws: all of them, or a selection.
//!
//! The drawing takes a [`Selection`] and keeps the Sites and pools in it, the relationships
//! between at least two of them, and the routes between its Sites. Two selections are built
//! here: `--around NODE` (one node's neighbourhood) and [`Selection::sites`] (some Sites and
//! what they touch), the latter for the node selectors shared by every command.

use mtu_solver::Solver;
use std::collections::BTreeSet;
use topology_core::ids::{NodeId, PoolId, SiteId};
use topology_core::model::Topology;

/// The Sites and pools a picture draws.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum Selection {
    /// Every Site and pool.
    #[default]
    All,
    /// These Sites and pools only.
    Only {
        /// Sites drawn.
        sites: BTreeSet<SiteId>,
        /// Pools drawn.
        pools: BTreeSet<PoolId>,
    },
}

impl Selection {
    /// Whether Site `s` is drawn.
    pub fn has_site(&self, s: SiteId) -> bool {
        match self {
            Selection::All => true,
            Selection::Only { sites, .. } => sites.contains(&s),
        }
    }

    /// Whether pool `p` is drawn.
    pub fn has_pool(&self, p: PoolId) -> bool {
        match self {
            Selection::All => true,
            Selection::Only { pools, .. } => pools.contains(&p),
        }
    }

    /// Node `n`'s neighbourhood, one hop: its Site (and its pool, for a gateway), and the Site
    /// and pool of every peer its plan has a link to.
    pub fn around(solver: &mut Solver<'_>, n: NodeId) -> Selection {
        let plan = solver.plan(n);
        let topo = solver.topo();
        let mut sites = BTreeSet::new();
        let mut pools = BTreeSet::new();
        for m in std::iter::once(n).chain(plan.links.iter().map(|l| l.peer)) {
            let node = topo.node(m);
            sites.insert(node.site);
            pools.extend(node.pool());
        }
        Selection::Only { sites, pools }
    }

    /// Sites `chosen` and what they touch: the Sites they peer with, the pools assigned to them
    /// and the pools whose gateways run in them.
    pub fn sites(topo: &Topology, chosen: &BTreeSet<SiteId>) -> Selection {
        let mut sites = chosen.clone();
        let mut pools = BTreeSet::new();
        let touches = |members: &[SiteId]| members.iter().any(|s| chosen.contains(s));
        for r in topo.site_peerings.iter().filter(|r| r.relates) {
            if touches(&r.sites) {
                sites.extend(r.sites.iter().copied());
            }
        }
        for r in topo.assignments.iter().filter(|r| r.relates) {
            if touches(&r.sites) {
                pools.extend(r.pools.iter().copied());
            }
        }
        for s in chosen {
            pools.extend(
                topo.gateways_in(*s)
                    .iter()
                    .filter_map(|g| topo.node(*g).pool()),
            );
        }
        Selection::Only { sites, pools }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use test_utils::reference::topology_of;

    /// The names of what `sel` draws: Sites, then pools.
    fn names(topo: &Topology, sel: &Selection) -> (Vec<String>, Vec<String>) {
        let sites = (0..topo.sites.len())
            .map(SiteId::from_idx)
            .filter(|s| sel.has_site(*s))
            .map(|s| topo.site(s).name.to_string())
            .collect();
        let pools = (0..topo.pools.len())
            .map(PoolId::from_idx)
            .filter(|p| sel.has_pool(*p))
            .map(|p| topo.pool(p).name.to_string())
            .collect();
        (sites, pools)
    }

    /// Input, Sites chosen, Sites drawn, pools drawn.
    type Case = (
        &'static str,
        &'static [&'static str],
        &'static [&'static str],
        &'static [&'static str],
    );

    #[test]
    fn sites_bring_their_peers_their_pools_and_the_pools_they_host() {
        let chain = include_str!(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../examples/04-transit-chain/cluster.yaml"
        ));
        let mesh = include_str!(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../examples/02-mesh-peering-cap/cluster.yaml"
        ));
        let cases: [Case; 4] = [
            (chain, &["A"], &["A"], &["PA"]),
            (chain, &["SB"], &["SB"], &["PB"]),
            (chain, &["A", "C"], &["A", "C"], &["PA", "PC"]),
            (mesh, &["A"], &["A", "B"], &[]),
        ];
        for (yaml, chosen, want_sites, want_pools) in cases {
            let topo = topology_of(yaml);
            let ids = (0..topo.sites.len())
                .map(SiteId::from_idx)
                .filter(|s| chosen.contains(&&*topo.site(*s).name))
                .collect();
            let (sites, pools) = names(&topo, &Selection::sites(&topo, &ids));
            assert_eq!(sites, want_sites, "{chosen:?}");
            assert_eq!(pools, want_pools, "{chosen:?}");
        }
    }

    #[test]
    fn all_draws_everything() {
        let topo = topology_of(include_str!(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../examples/04-transit-chain/cluster.yaml"
        )));
        let (sites, pools) = names(&topo, &Selection::All);
        assert_eq!(sites.len(), topo.sites.len());
        assert_eq!(pools.len(), topo.pools.len());
    }
}
