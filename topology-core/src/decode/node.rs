//! Reading a core `v1` Node: its labels, underlay annotations, addresses and pod CIDRs.

use super::fields::{Cx, short};
use super::intern::Interner;
use super::raw::{Addrs, Cidrs, Meta, RawNode, RawUnderlay};
use crate::diag::Code;
use crate::mtu::{MAX_UNDERLAY, MIN_MTU};
use crate::tree::Node;
use crate::vocab::{UNDERLAY_ANNOTATION, UNDERLAY_MAX_ANNOTATION};
use std::fmt;
use std::net::IpAddr;
use std::sync::Arc;

impl Cx {
    /// A `Node`.
    pub(super) fn node(&mut self, root: &Node, strings: &mut Interner) -> RawNode {
        let labels: Vec<(Arc<str>, Arc<str>)> = self
            .string_map(root, "metadata.labels")
            .into_iter()
            .map(|(k, v, _)| (strings.intern(k), strings.intern(&v)))
            .collect();
        let (underlay, underlay_max) = self.underlay_annotations(root);
        let (internal_ips, external_ips) = self.node_addresses(root);
        let pod_cidrs = self.node_pod_cidrs(root);
        RawNode {
            labels,
            underlay,
            underlay_max,
            internal_ips,
            external_ips,
            pod_cidrs,
            meta: Meta::placeholder(),
        }
    }

    /// The underlay MTU annotations: the detected one and the operator's bound.
    fn underlay_annotations(&mut self, root: &Node) -> (Option<RawUnderlay>, Option<RawUnderlay>) {
        let annotations = self.string_map(root, "metadata.annotations");
        let mut underlay = None;
        let mut underlay_max = None;
        for (k, v, line) in &annotations {
            let field = format_args!("metadata.annotations.{k}");
            if *k == UNDERLAY_ANNOTATION {
                underlay = Some(self.underlay(v, field, *line));
            } else if *k == UNDERLAY_MAX_ANNOTATION {
                underlay_max = Some(self.underlay(v, field, *line));
            }
        }
        (underlay, underlay_max)
    }

    /// One underlay annotation's value; one outside `MIN_MTU..=MAX_UNDERLAY` fails closed.
    fn underlay(&mut self, value: &str, field: impl fmt::Display, line: u32) -> RawUnderlay {
        match value.trim().parse::<i64>() {
            Ok(v) if (i64::from(MIN_MTU)..=i64::from(MAX_UNDERLAY)).contains(&v) => RawUnderlay {
                mtu: u32::try_from(v).unwrap_or(MIN_MTU),
                invalid: None,
            },
            _ => {
                self.report(
                    Code::UnderlayRange,
                    field,
                    line,
                    format!(
                        "{} is not an integer in {MIN_MTU}..{MAX_UNDERLAY}; it counts as {MIN_MTU} (fail closed)", short(value)
                    ),
                );
                RawUnderlay {
                    mtu: MIN_MTU,
                    invalid: Some(value.to_string()),
                }
            }
        }
    }

    /// `status.addresses` of type `InternalIP` and of type `ExternalIP`; other types are not read.
    fn node_addresses(&mut self, root: &Node) -> (Addrs, Addrs) {
        let mut internal_ips = Addrs::new();
        let mut external_ips = Addrs::new();
        let addrs = self.seq_at(root, "status.addresses");
        for (i, a) in addrs.iter().enumerate() {
            let ty = self.str_at(a, "type");
            let Some(addr) = self.str_at(a, "address") else {
                continue;
            };
            let list = match ty {
                Some("InternalIP") => &mut internal_ips,
                Some("ExternalIP") => &mut external_ips,
                _ => continue,
            };
            match addr.trim().parse::<IpAddr>() {
                Ok(ip) => list.push(ip),
                Err(_) => self.report(
                    Code::Cidr,
                    format_args!("status.addresses[{i}].address"),
                    a.line,
                    format!("{} is not an IP address", short(addr)),
                ),
            }
        }
        (internal_ips, external_ips)
    }

    /// `spec.podCIDRs`, else the single `spec.podCIDR`.
    fn node_pod_cidrs(&mut self, root: &Node) -> Cidrs {
        let mut pod_cidrs: Cidrs = self.cidr_list(root, "spec.podCIDRs").into_iter().collect();
        if pod_cidrs.is_empty()
            && let Some(s) = self.str_at(root, "spec.podCIDR")
        {
            let line = self.at(root, "spec.podCIDR").map(|n| n.line).unwrap_or(0);
            if let Some(net) = self.cidr(s, "spec.podCIDR", line) {
                pod_cidrs.push(net);
            }
        }
        pod_cidrs
    }
}
