//! Reading a core `v1` Node: its labels, underlay annotations, addresses and pod CIDRs.

use super::fields::{Cx, short};
use super::intern::Interner;
use super::raw::{Addrs, Cidrs, Meta, RawNode, RawPathEntry, RawPathMtus, RawUnderlay};
use crate::diag::Code;
use crate::mtu::{MAX_UNDERLAY, MIN_MTU};
use crate::tree::Node;
use crate::vocab::{PATH_MTU_ANNOTATION, UNDERLAY_ANNOTATION, UNDERLAY_MAX_ANNOTATION};
use std::fmt;
use std::net::IpAddr;
use std::sync::Arc;

impl Cx {
    /// A `Node`.
    pub(super) fn node(&mut self, root: &Node, strings: &mut Interner) -> RawNode {
        let labels: Box<[(Arc<str>, Arc<str>)]> = self
            .string_map(root, "metadata.labels")
            .into_iter()
            .map(|(k, v, _)| (strings.intern(k), strings.intern(&v)))
            .collect();
        let (underlay, underlay_max, path_mtu) = self.mtu_annotations(root, strings);
        let (internal_ips, external_ips) = self.node_addresses(root);
        let pod_cidrs = self.node_pod_cidrs(root);
        RawNode {
            labels,
            underlay,
            underlay_max,
            path_mtu,
            internal_ips,
            external_ips,
            pod_cidrs,
            meta: Meta::placeholder(),
        }
    }

    /// The MTU annotations: the detected underlay, the operator's bound, and the probed path
    /// MTUs to particular peers.
    fn mtu_annotations(
        &mut self,
        root: &Node,
        strings: &mut Interner,
    ) -> (
        Option<RawUnderlay>,
        Option<RawUnderlay>,
        Option<Box<RawPathMtus>>,
    ) {
        let annotations = self.string_map(root, "metadata.annotations");
        let mut underlay = None;
        let mut underlay_max = None;
        let mut path_mtu = None;
        for (k, v, line) in &annotations {
            let field = format_args!("metadata.annotations.{k}");
            if *k == UNDERLAY_ANNOTATION {
                underlay = Some(self.underlay(v, field, *line));
            } else if *k == UNDERLAY_MAX_ANNOTATION {
                underlay_max = Some(self.underlay(v, field, *line));
            } else if *k == PATH_MTU_ANNOTATION {
                path_mtu = Some(Box::new(self.path_mtus(v, *line, strings)));
            }
        }
        (underlay, underlay_max, path_mtu)
    }

    /// A `path-mtu` annotation: comma-separated `PEER=MTU` entries, whitespace allowed around
    /// each part, empty entries skipped. An entry whose value does not parse or is outside
    /// `MIN_MTU..=MAX_UNDERLAY` is `E-PATH-MTU` and counts as `MIN_MTU` for the peer it names
    /// (fail closed); one that names no peer is dropped with the same finding. A peer listed
    /// twice counts at its lowest.
    fn path_mtus(&mut self, value: &str, line: u32, strings: &mut Interner) -> RawPathMtus {
        let field = format_args!("metadata.annotations.{PATH_MTU_ANNOTATION}");
        let mut entries: Vec<RawPathEntry> = Vec::new();
        // Entry by peer: a long annotation costs a lookup per entry, not a scan.
        let mut at: rustc_hash::FxHashMap<Arc<str>, usize> = rustc_hash::FxHashMap::default();
        for entry in value.split(',').map(str::trim).filter(|e| !e.is_empty()) {
            let Some((peer, mtu)) = entry
                .split_once('=')
                .map(|(p, m)| (p.trim(), m.trim()))
                .filter(|(p, _)| !p.is_empty())
            else {
                self.report(
                    Code::PathMtu,
                    field,
                    line,
                    format!("{} is not PEER=MTU; the entry is dropped", short(entry)),
                );
                continue;
            };
            let parsed = match mtu.parse::<i64>() {
                Ok(v) if (i64::from(MIN_MTU)..=i64::from(MAX_UNDERLAY)).contains(&v) => {
                    u32::try_from(v).ok()
                }
                _ => None,
            };
            let found = match parsed {
                Some(m) => RawPathEntry {
                    peer: strings.intern(peer),
                    mtu: m,
                    invalid: None,
                },
                None => {
                    self.report(
                        Code::PathMtu,
                        field,
                        line,
                        format!(
                            "{}: {} is not an integer in {MIN_MTU}..{MAX_UNDERLAY}; the path to {} counts as {MIN_MTU} (fail closed)",
                            short(entry),
                            short(mtu),
                            short(peer)
                        ),
                    );
                    RawPathEntry {
                        peer: strings.intern(peer),
                        mtu: MIN_MTU,
                        invalid: Some(mtu.to_string()),
                    }
                }
            };
            match at.get(&found.peer).and_then(|i| entries.get_mut(*i)) {
                Some(e) if found.mtu < e.mtu => *e = found,
                Some(_) => {}
                None => {
                    at.insert(found.peer.clone(), entries.len());
                    entries.push(found);
                }
            }
        }
        RawPathMtus { entries, line }
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
