//! Which Sites and pools a picture draws: all of them, or a selection.
//!
//! The drawing takes a [`Selection`] and keeps the Sites and pools in it, the relationships
//! between at least two of them, and the routes between its Sites; the values shown stay those
//! of the whole cluster. Two selections are built here: `--around NODE` (one node's
//! neighbourhood) and [`Selection::nodes`] (what the node selectors shared by every command
//! select: the selected nodes' Sites and the pools around them).

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

    /// What the node selectors (`--site`, `--pool`, `-l`, `--node`) draw: the Sites of the
    /// `selected` nodes; the pools of selected gateways, those assigned to a drawn Site and
    /// those with gateways in one.
    pub fn nodes(topo: &Topology, selected: &[NodeId]) -> Selection {
        let mut sites = BTreeSet::new();
        let mut pools = BTreeSet::new();
        for n in selected {
            let node = topo.node(*n);
            sites.insert(node.site);
            pools.extend(node.pool());
        }
        for s in &sites {
            pools.extend(
                topo.gateways_in(*s)
                    .iter()
                    .filter_map(|g| topo.node(*g).pool()),
            );
            for a in topo.assignments_of(*s) {
                pools.extend(topo.assignment(*a).pools.iter().copied());
            }
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

    /// Input, Sites whose nodes are selected, Sites drawn, pools drawn.
    type Case = (
        &'static str,
        &'static [&'static str],
        &'static [&'static str],
        &'static [&'static str],
    );

    #[test]
    fn selected_nodes_bring_their_sites_the_pools_assigned_and_the_pools_hosted() {
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
            (mesh, &["A"], &["A"], &[]),
        ];
        for (yaml, chosen, want_sites, want_pools) in cases {
            let topo = topology_of(yaml);
            let nodes: Vec<NodeId> = (0..topo.nodes.len())
                .map(NodeId::from_idx)
                .filter(|n| chosen.contains(&&*topo.site(topo.node(*n).site).name))
                .collect();
            let (sites, pools) = names(&topo, &Selection::nodes(&topo, &nodes));
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
