//! Reading the relationship kinds: SitePeering, SiteGatewayPoolAssignment and GatewayPoolPeering.

use super::fields::Cx;
use super::raw::{Member, Meta, RawRelation};
use crate::tree::Node;

impl Cx {
    /// A `SitePeering`: Sites, and whether their nodes mesh directly (`spec.meshNodes`).
    pub(super) fn site_peering(&mut self, root: &Node) -> RawRelation {
        let sites = self.members(root, "spec.sites");
        self.relation(root, sites, Vec::new(), true)
    }

    /// A `SiteGatewayPoolAssignment`: Sites and gateway pools.
    pub(super) fn assignment(&mut self, root: &Node) -> RawRelation {
        let sites = self.members(root, "spec.sites");
        let pools = self.members(root, "spec.gatewayPools");
        self.relation(root, sites, pools, false)
    }

    /// A `GatewayPoolPeering`: gateway pools.
    pub(super) fn pool_peering(&mut self, root: &Node) -> RawRelation {
        let pools = self.members(root, "spec.gatewayPools");
        self.relation(root, Vec::new(), pools, false)
    }

    /// The fields every relationship has, around its members; `spec.meshNodes` is read only
    /// when `reads_mesh_nodes` (elsewhere it is true).
    fn relation(
        &mut self,
        root: &Node,
        sites: Vec<Member>,
        pools: Vec<Member>,
        reads_mesh_nodes: bool,
    ) -> RawRelation {
        RawRelation {
            enabled: self.bool_at(root, "spec.enabled", true),
            sites,
            pools,
            mesh_nodes: !reads_mesh_nodes || self.bool_at(root, "spec.meshNodes", true),
            protocol: self.protocol(root, "spec.tunnelProtocol"),
            cap: self.cap(root, "spec.tunnelMTU"),
            meta: Meta::placeholder(),
        }
    }

    /// The names listed at `path`, with where each was written.
    fn members(&mut self, root: &Node, path: &str) -> Vec<Member> {
        self.str_list(root, path)
            .into_iter()
            .map(|(name, i, line)| Member {
                name: name.to_string(),
                field: format!("{path}[{i}]"),
                loc: self.loc(line),
            })
            .collect()
    }
}
