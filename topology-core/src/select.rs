//! Node selection, the same for every whole-cluster command and for library callers: by Site,
//! by pool, by label selector and by name. Selectors of different kinds must all hold; the
//! values of one kind are alternatives (`sites: [A, B]` selects the nodes of A or B).

pub mod labels;

use crate::ids::{NodeId, PoolId, SiteId};
use crate::model::{NoSuchName, NodeInfo, Topology};
pub use labels::{LabelSelector, LabelSelectorError};

/// Which nodes to act on; the default selects every node.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct NodeSelector {
    /// Nodes in one of these Sites (any, when empty).
    pub sites: Vec<String>,
    /// Gateways of one of these pools (any node, when empty).
    pub pools: Vec<String>,
    /// Nodes whose labels meet one of these selectors (any, when empty).
    pub labels: Vec<LabelSelector>,
    /// Nodes of these names (any, when empty).
    pub nodes: Vec<String>,
}

/// A [`NodeSelector`] whose names were found in one topology.
struct Resolved {
    sites: Vec<SiteId>,
    pools: Vec<PoolId>,
    nodes: Vec<NodeId>,
}

impl NodeSelector {
    /// A selector from names and label selector texts (kubectl's syntax); a text that is no
    /// label selector is an error naming where it goes wrong. Names are checked by
    /// [`NodeSelector::select`], against the topology they name.
    pub fn parse(
        sites: &[String],
        pools: &[String],
        labels: &[String],
        nodes: &[String],
    ) -> Result<NodeSelector, LabelSelectorError> {
        Ok(NodeSelector {
            sites: sites.to_vec(),
            pools: pools.to_vec(),
            labels: labels
                .iter()
                .map(|l| LabelSelector::parse(l))
                .collect::<Result<_, _>>()?,
            nodes: nodes.to_vec(),
        })
    }

    /// Whether the selector selects every node (no selector of any kind).
    pub fn is_empty(&self) -> bool {
        self.sites.is_empty()
            && self.pools.is_empty()
            && self.labels.is_empty()
            && self.nodes.is_empty()
    }

    /// The selected nodes of `topo`, sorted (by name). A Site, pool or node name that `topo`
    /// does not hold is an error naming it and the closest names it does hold.
    pub fn select(&self, topo: &Topology) -> Result<Vec<NodeId>, NoSuchName> {
        let r = self.resolve(topo)?;
        let wanted = |id: NodeId, n: &NodeInfo| {
            (r.sites.is_empty() || r.sites.binary_search(&n.site).is_ok())
                && (r.pools.is_empty()
                    || n.pool().is_some_and(|p| r.pools.binary_search(&p).is_ok()))
                && (self.labels.is_empty() || self.labels.iter().any(|l| l.matches(&n.labels)))
                && (r.nodes.is_empty() || r.nodes.binary_search(&id).is_ok())
        };
        // Named nodes, when any, are the only candidates (a short list in a large cluster).
        let candidates: Vec<NodeId> = match r.nodes.is_empty() {
            true => (0..topo.nodes.len()).map(NodeId::from_idx).collect(),
            false => r.nodes.clone(),
        };
        Ok(candidates
            .into_iter()
            .filter(|id| wanted(*id, topo.node(*id)))
            .collect())
    }

    /// The IDs of the names, sorted, each once; the first missing name is the error.
    fn resolve(&self, topo: &Topology) -> Result<Resolved, NoSuchName> {
        let mut sites = self
            .sites
            .iter()
            .map(|s| {
                topo.site_id(s)
                    .ok_or_else(|| NoSuchName::new("Site", s, topo.sites.iter().map(|x| &*x.name)))
            })
            .collect::<Result<Vec<_>, _>>()?;
        let mut pools = self
            .pools
            .iter()
            .map(|p| {
                topo.pool_id(p).ok_or_else(|| {
                    NoSuchName::new("GatewayPool", p, topo.pools.iter().map(|x| &*x.name))
                })
            })
            .collect::<Result<Vec<_>, _>>()?;
        let mut nodes = self
            .nodes
            .iter()
            .map(|n| topo.find_node(n))
            .collect::<Result<Vec<_>, _>>()?;
        sites.sort();
        sites.dedup();
        pools.sort();
        pools.dedup();
        nodes.sort();
        nodes.dedup();
        Ok(Resolved {
            sites,
            pools,
            nodes,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::decode::decode;

    /// Sites a and b; pool p takes the nodes labelled `gw: "yes"` (g1 in a, g2 in b); workers
    /// a1 (zone z1), a2 (zone z2) and b1 (no zone).
    const CLUSTER: &str = "\
apiVersion: net.unbounded-cloud.io/v1alpha1
kind: Site
metadata: {name: a}
spec: {nodeCidrs: [10.1.0.0/16]}
---
apiVersion: net.unbounded-cloud.io/v1alpha1
kind: Site
metadata: {name: b}
spec: {nodeCidrs: [10.2.0.0/16]}
---
apiVersion: net.unbounded-cloud.io/v1alpha1
kind: GatewayPool
metadata: {name: p}
spec: {type: External, nodeSelector: {gw: \"yes\"}}
---
apiVersion: v1
kind: Node
metadata: {name: a1, labels: {zone: z1}}
status: {addresses: [{type: InternalIP, address: 10.1.0.1}]}
---
apiVersion: v1
kind: Node
metadata: {name: a2, labels: {zone: z2}}
status: {addresses: [{type: InternalIP, address: 10.1.0.2}]}
---
apiVersion: v1
kind: Node
metadata: {name: b1}
status: {addresses: [{type: InternalIP, address: 10.2.0.1}]}
---
apiVersion: v1
kind: Node
metadata: {name: g1, labels: {gw: \"yes\", zone: z1}}
status: {addresses: [{type: InternalIP, address: 10.1.0.9}, {type: ExternalIP, address: 192.0.2.1}]}
---
apiVersion: v1
kind: Node
metadata: {name: g2, labels: {gw: \"yes\"}}
status: {addresses: [{type: InternalIP, address: 10.2.0.9}, {type: ExternalIP, address: 192.0.2.2}]}
";

    fn topo() -> Topology {
        let d = decode([("c.yaml", CLUSTER.as_bytes())]);
        Topology::build(d.objects.iter(), d.diagnostics)
    }

    fn strings(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    /// Sites, pools, label selectors, names: the nodes selected.
    type Case = (
        &'static [&'static str],
        &'static [&'static str],
        &'static [&'static str],
        &'static [&'static str],
        &'static [&'static str],
    );
    const CASES: &[Case] = &[
        (&[], &[], &[], &[], &["a1", "a2", "b1", "g1", "g2"]),
        (&["a"], &[], &[], &[], &["a1", "a2", "g1"]),
        (&["b", "a"], &[], &[], &[], &["a1", "a2", "b1", "g1", "g2"]),
        (&[], &["p"], &[], &[], &["g1", "g2"]),
        (&["b"], &["p"], &[], &[], &["g2"]),
        (&[], &[], &["zone=z1"], &[], &["a1", "g1"]),
        (&[], &[], &["zone=z1", "zone=z2"], &[], &["a1", "a2", "g1"]),
        (&[], &[], &["zone=z1,gw"], &[], &["g1"]),
        (&[], &[], &["!zone"], &[], &["b1", "g2"]),
        (&[], &[], &["zone notin (z1)"], &[], &["a2", "b1", "g2"]),
        (&["a"], &[], &["zone in (z1,z2)"], &[], &["a1", "a2", "g1"]),
        (&[], &[], &[], &["g2", "a1", "g2"], &["a1", "g2"]),
        (&["a"], &[], &[], &["a1", "b1"], &["a1"]),
        (&[], &["p"], &["zone=z2"], &[], &[]),
    ];

    #[test]
    fn kinds_and_values_select_together() {
        let t = topo();
        for (sites, pools, labels, nodes, want) in CASES {
            let sel = NodeSelector::parse(
                &strings(sites),
                &strings(pools),
                &strings(labels),
                &strings(nodes),
            )
            .expect("valid selectors");
            let got: Vec<&str> = sel
                .select(&t)
                .expect("existing names")
                .into_iter()
                .map(|n| &*t.node(n).name)
                .collect();
            assert_eq!(&got, want, "{sel:?}");
        }
    }

    #[test]
    fn unknown_names_are_errors_naming_the_closest() {
        let t = topo();
        for (sites, pools, nodes, words) in [
            (
                &["c"][..],
                &[][..],
                &[][..],
                "Site c does not exist; did you mean a, b?",
            ),
            (
                &[],
                &["q"],
                &[],
                "GatewayPool q does not exist; did you mean p?",
            ),
            (
                &[],
                &[],
                &["a3"],
                "node a3 does not exist (or belongs to no Site); did you mean a1, a2?",
            ),
        ] {
            let sel = NodeSelector::parse(&strings(sites), &strings(pools), &[], &strings(nodes))
                .expect("no label selector");
            let e = sel.select(&t).expect_err("an unknown name");
            assert_eq!(e.to_string(), words);
        }
    }

    #[test]
    fn a_bad_label_selector_is_refused_before_any_topology() {
        let e = NodeSelector::parse(&[], &[], &strings(&["zone in z1"]), &[]).expect_err("bad");
        assert!(
            matches!(e, LabelSelectorError::Syntax { column: 9, .. }),
            "{e}"
        );
        assert!(NodeSelector::default().is_empty());
    }
}
