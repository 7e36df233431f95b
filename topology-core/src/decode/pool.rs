//! Reading a GatewayPool and a GatewayPoolNode.

use super::fields::{Cx, short};
use super::raw::{Meta, RawGatewayPoolNode, RawPool, RawStatusNode};
use crate::diag::Code;
use crate::tree::{Node, Value};
use crate::vocab::{FORWARDING_ANNOTATION, PoolType};
use ipnet::IpNet;

impl Cx {
    /// A `GatewayPool`.
    pub(super) fn pool(&mut self, root: &Node) -> RawPool {
        let internal = self.pool_type(root) == PoolType::Internal;
        let node_selector = self
            .string_map(root, "spec.nodeSelector")
            .into_iter()
            .map(|(k, v, _)| (k.to_string(), v.into_owned()))
            .collect();
        let status_nodes = self.entries(root, "status.nodes", Cx::status_node);
        RawPool {
            internal,
            node_selector,
            routed_cidrs: self.routed_cidrs(root),
            protocol: self.protocol(root, "spec.tunnelProtocol"),
            cap: self.cap(root, "spec.tunnelMTU"),
            status_nodes,
            meta: Meta::placeholder(),
        }
    }

    /// `spec.type`; an unknown type is reported and read as External.
    fn pool_type(&mut self, root: &Node) -> PoolType {
        let Some(written) = self.str_at(root, "spec.type") else {
            return PoolType::External;
        };
        if let Some(ty) = PoolType::parse(written) {
            return ty;
        }
        let line = self.at(root, "spec.type").map(|n| n.line).unwrap_or(0);
        self.report(
            Code::FieldType,
            "spec.type",
            line,
            format!(
                "unknown pool type {} (External or Internal); read as External",
                short(written)
            ),
        );
        PoolType::External
    }

    /// One `status.nodes[]` entry; one without a name is reported and ignored.
    fn status_node(&mut self, e: &Node) -> Option<RawStatusNode> {
        let Some(name) = self.str_at(e, "name") else {
            self.report(
                Code::FieldType,
                "name",
                e.line,
                "a status node needs a name; the entry is ignored",
            );
            return None;
        };
        let wg_port = match self.at(e, "gatewayWireguardPort") {
            Some(Node {
                value: Value::Int(p),
                ..
            }) => u16::try_from(*p).ok(),
            Some(n) => {
                self.wrong_type("gatewayWireguardPort", n, "a port number");
                None
            }
            None => None,
        };
        let name = name.to_string();
        Some(RawStatusNode {
            site_name: self.str_at(e, "siteName").map(str::to_string),
            internal_ips: self.ip_list(e, "internalIPs"),
            external_ips: self.ip_list(e, "externalIPs"),
            pod_cidrs: self.cidr_list(e, "podCIDRs"),
            wg_port,
            loc: self.loc(e.line),
            name,
        })
    }

    /// `spec.routedCidrs` of a GatewayPool without default routes: a prefix of length 0 would
    /// capture every destination of every node that learns it (`W-DEFAULT-ROUTE`), so the
    /// overlay never carries one.
    fn routed_cidrs(&mut self, root: &Node) -> Vec<IpNet> {
        let path = "spec.routedCidrs";
        let items = self.str_list(root, path);
        let mut out = Vec::with_capacity(items.len());
        for (s, i, line) in items {
            let field = format_args!("{path}[{i}]");
            let Some(net) = self.cidr(s, field, line) else {
                continue;
            };
            if net.prefix_len() == 0 {
                self.report(
                    Code::DefaultRoute,
                    field,
                    line,
                    format!(
                        "{net} is a default route; it is neither advertised nor routed (the overlay never carries a default route: it would capture the host's own traffic)"
                    ),
                );
                continue;
            }
            out.push(net);
        }
        out
    }

    /// A `GatewayPoolNode` named `name`.
    pub(super) fn gateway_pool_node(&mut self, root: &Node, name: &str) -> RawGatewayPoolNode {
        let node_name = self
            .str_at(root, "spec.nodeName")
            .unwrap_or(name)
            .to_string();
        let (published, line) = self.published_mtus(root);
        RawGatewayPoolNode {
            node_name,
            published,
            published_loc: line.and_then(|l| self.loc(l)),
            meta: Meta::placeholder(),
        }
    }

    /// The forwarding MTUs a gateway published (its `FORWARDING_ANNOTATION`, a JSON object of
    /// prefix to MTU), sorted by prefix, one per prefix, and the line of the annotation.
    fn published_mtus(&mut self, root: &Node) -> (Vec<(IpNet, u32)>, Option<u32>) {
        let annotations = self.string_map(root, "metadata.annotations");
        let mut published = Vec::new();
        let mut at = None;
        for (k, v, line) in &annotations {
            if *k != FORWARDING_ANNOTATION {
                continue;
            }
            at = Some(*line);
            let field = format_args!("metadata.annotations.{k}");
            match serde_json::from_str::<serde_json::Map<String, serde_json::Value>>(v.as_ref()) {
                Ok(map) => {
                    for (prefix, mtu) in map {
                        let Some(net) = self.cidr(&prefix, field, *line) else {
                            continue;
                        };
                        match mtu.as_u64().and_then(|m| u32::try_from(m).ok()) {
                            Some(m) => published.push((net, m)),
                            None => self.report(
                                Code::FieldType,
                                field,
                                *line,
                                format!("published MTU for {prefix} is not a non-negative integer"),
                            ),
                        }
                    }
                }
                Err(e) => self.report(
                    Code::FieldType,
                    field,
                    *line,
                    format!("expected a JSON object of prefix to MTU: {e}"),
                ),
            }
        }
        published.sort();
        published.dedup_by_key(|p| p.0);
        (published, at)
    }
}
