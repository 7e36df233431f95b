//! Reading a Site and a SiteNodeSlice.

use super::fields::Cx;
use super::raw::{Addrs, Meta, RawSite, RawSlice, RawSliceNode};
use crate::diag::Code;
use crate::tree::{Node, Value};
use ipnet::IpNet;

impl Cx {
    /// A `Site`.
    pub(super) fn site(&mut self, root: &Node) -> RawSite {
        let node_cidrs = self.cidr_list(root, "spec.nodeCidrs");
        let pod_blocks = self.pod_blocks(root);
        RawSite {
            node_cidrs,
            pod_blocks,
            manage_cni: self.bool_at(root, "spec.manageCniPlugin", true),
            local_cidrs: self.cidr_list(root, "spec.localCidrs"),
            protocol: self.protocol(root, "spec.tunnelProtocol"),
            cap: self.cap(root, "spec.tunnelMTU"),
            meta: Meta::placeholder(),
        }
    }

    /// Every `spec.podCidrAssignments[].cidrBlocks[]` of a Site, in order.
    fn pod_blocks(&mut self, root: &Node) -> Vec<IpNet> {
        let mut pod_blocks = Vec::new();
        let assignments = self.seq_at(root, "spec.podCidrAssignments");
        for (i, a) in assignments.iter().enumerate() {
            let path = format_args!("spec.podCidrAssignments[{i}]");
            match a.value {
                Value::Map(_) => {
                    let blocks = self.seq_at(a, "cidrBlocks");
                    for (j, b) in blocks.iter().enumerate() {
                        let field = format_args!("{path}.cidrBlocks[{j}]");
                        match &b.value {
                            Value::Str(s) => {
                                if let Some(net) = self.cidr(s, field, b.line) {
                                    pod_blocks.push(net);
                                }
                            }
                            _ => self.wrong_type(field, b, "a string"),
                        }
                    }
                }
                _ => self.wrong_type(path, a, "an object"),
            }
        }
        pod_blocks
    }

    /// A `SiteNodeSlice`.
    pub(super) fn slice(&mut self, root: &Node) -> RawSlice {
        let site_name = self.str_at(root, "siteName").map(str::to_string);
        let nodes = self.entries(root, "nodes", Cx::slice_node);
        RawSlice {
            site_name,
            nodes,
            meta: Meta::placeholder(),
        }
    }

    /// One `nodes[]` entry of a SiteNodeSlice; one without a name is reported and ignored.
    fn slice_node(&mut self, e: &Node) -> Option<RawSliceNode> {
        let Some(name) = self.str_at(e, "name") else {
            self.report(
                Code::FieldType,
                "name",
                e.line,
                "a slice entry needs a name; the entry is ignored",
            );
            return None;
        };
        let name = name.to_string();
        Some(RawSliceNode {
            internal_ips: Addrs::from_vec(self.ip_list(e, "internalIPs")),
            pod_cidrs: self.cidr_list(e, "podCIDRs").into_iter().collect(),
            loc: self.loc(e.line),
            name,
        })
    }
}
