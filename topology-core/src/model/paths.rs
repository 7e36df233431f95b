//! Probed path MTUs (D13): what each node's `path-mtu` annotation says about its peers,
//! resolved to node IDs once every node is known, and the path MTU of a pair, the lowest entry
//! either node publishes about the other, so both ends of a link see the same value.

use super::build::{Builder, warn};
use super::{NodeId, Topology};
use crate::decode::RawNode;
use crate::diag::{Code, SourceLoc};
use crate::mtu::{MAX_UNDERLAY, MIN_MTU};
use crate::vocab::PATH_MTU_ANNOTATION;

/// One node's entry about one peer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PathMtu {
    /// The path MTU (576 when the written value was invalid: fail closed).
    pub mtu: u32,
    /// The written value was invalid (`E-PATH-MTU`).
    pub invalid: bool,
}

/// One node's entries about its peers, sorted by peer.
pub type PathMtus = Box<[(NodeId, PathMtu)]>;

/// The path MTU of a pair and who published it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PairPath {
    /// The lowest entry either node publishes about the other.
    pub mtu: u32,
    /// The node whose annotation holds it (the lower ID when both publish the same value).
    pub by: NodeId,
    /// The written value was invalid and counts as 576.
    pub invalid: bool,
}

impl Topology {
    /// What node `n`'s `path-mtu` annotation says about existing peers, sorted by peer (empty
    /// for most nodes).
    pub fn path_mtus_of(&self, n: NodeId) -> &[(NodeId, PathMtu)] {
        self.path_mtus
            .binary_search_by_key(&n, |(x, _)| *x)
            .ok()
            .and_then(|i| self.path_mtus.get(i))
            .map_or(&[], |(_, list)| list)
    }

    /// The path MTU `P(a,b)` of a pair (`model.md`): the lowest entry either node publishes
    /// about the other; `None` when neither does (most pairs).
    pub fn path_mtu(&self, a: NodeId, b: NodeId) -> Option<PairPath> {
        if self.path_mtus.is_empty() {
            return None;
        }
        let about = |x: NodeId, y: NodeId| {
            let list = self.path_mtus_of(x);
            list.binary_search_by_key(&y, |(p, _)| *p)
                .ok()
                .and_then(|i| list.get(i))
                .map(|(_, e)| PairPath {
                    mtu: e.mtu,
                    by: x,
                    invalid: e.invalid,
                })
        };
        match (about(a, b), about(b, a)) {
            (Some(x), Some(y)) => Some(if (y.mtu, y.by) < (x.mtu, x.by) { y } else { x }),
            (x, y) => x.or(y),
        }
    }
    /// Replaces what node `n` publishes about its peers with `entries`, peer and MTU: a node
    /// that owns its annotation (an agent with probing owns its own Node's) knows its entries
    /// before the cluster shows them. An entry about `n` itself is dropped, a peer listed twice
    /// counts at its lowest, and a value is held to the annotation's range (`MIN_MTU..=MAX_UNDERLAY`), as
    /// decoding holds it; no entries removes `n`'s.
    pub fn set_path_mtus(&mut self, n: NodeId, entries: impl IntoIterator<Item = (NodeId, u32)>) {
        let mut list: Vec<(NodeId, PathMtu)> = Vec::new();
        for (peer, mtu) in entries {
            if peer == n || peer.idx() >= self.nodes.len() {
                continue;
            }
            let mtu = mtu.clamp(MIN_MTU, MAX_UNDERLAY);
            match list.iter_mut().find(|(p, _)| *p == peer) {
                Some((_, e)) => e.mtu = e.mtu.min(mtu),
                None => list.push((
                    peer,
                    PathMtu {
                        mtu,
                        invalid: false,
                    },
                )),
            }
        }
        list.sort_by_key(|(p, _)| *p);
        let at = self.path_mtus.binary_search_by_key(&n, |(x, _)| *x);
        match (at, list.is_empty()) {
            (Ok(i), true) => {
                self.path_mtus.remove(i);
            }
            (Ok(i), false) => {
                if let Some(slot) = self.path_mtus.get_mut(i) {
                    slot.1 = list.into_boxed_slice();
                }
            }
            (Err(_), true) => {}
            (Err(i), false) => self.path_mtus.insert(i, (n, list.into_boxed_slice())),
        }
    }
}

impl Builder {
    /// Resolves every node's `path-mtu` entries to peers; an entry naming no node of the
    /// topology, or the node itself, is `W-PATH-MTU-PEER` and ignored.
    pub(super) fn path_mtus(&mut self, t: &mut Topology, nodes: &[&RawNode]) {
        for raw in nodes {
            let Some(paths) = &raw.path_mtu else {
                continue;
            };
            let Some(id) = t.node_id(&raw.meta.name) else {
                continue;
            };
            let mut resolved: Vec<(NodeId, PathMtu)> = Vec::with_capacity(paths.entries.len());
            for e in &paths.entries {
                match t.node_id(&e.peer).filter(|p| *p != id) {
                    Some(peer) => resolved.push((
                        peer,
                        PathMtu {
                            mtu: e.mtu,
                            invalid: e.invalid.is_some(),
                        },
                    )),
                    None => {
                        let loc = raw.meta.loc.as_ref().map(|l| SourceLoc {
                            source: l.source.clone(),
                            line: paths.line,
                            column: 0,
                        });
                        let why = if *e.peer == *raw.meta.name {
                            "names the node itself".to_string()
                        } else {
                            "names no node of this input".to_string()
                        };
                        self.diags.push(warn(
                            Code::PathMtuPeer,
                            &format!("Node/{}", raw.meta.name),
                            &format!("metadata.annotations.{PATH_MTU_ANNOTATION}"),
                            format!("the entry for {} {why}; it is ignored", e.peer),
                            loc,
                        ));
                    }
                }
            }
            resolved.sort_by_key(|(p, _)| *p);
            if !resolved.is_empty() {
                t.path_mtus.push((id, resolved.into_boxed_slice()));
            }
        }
        t.path_mtus.sort_by_key(|(n, _)| *n);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::decode::decode;

    fn three() -> Topology {
        let mut y = String::from(
            "apiVersion: net.unbounded-cloud.io/v1alpha1\nkind: Site\nmetadata: {name: s}\n",
        );
        for (n, note) in [("a", "b=1450"), ("b", ""), ("c", "")] {
            y += &format!(
                "---\napiVersion: v1\nkind: Node\nmetadata:\n  name: {n}\n  labels: {{net.unbounded-cloud.io/site: s}}\n  annotations: {{mtu.unbounded-cloud.io/path-mtu: \"{note}\"}}\n"
            );
        }
        let d = decode([("t.yaml", y.as_bytes())]);
        Topology::build(d.objects.iter(), d.diagnostics)
    }

    /// Setting a node's entries replaces what its annotation said, keeps the lowest of a
    /// repeated peer, drops the node itself, holds values to the annotation's range, and no
    /// entries remove the node's.
    #[test]
    fn set_entries_replace_the_annotation() {
        let mut t = three();
        let id = |t: &Topology, n: &str| t.node_id(n).unwrap();
        let (a, b, c) = (id(&t, "a"), id(&t, "b"), id(&t, "c"));
        assert_eq!(t.path_mtu(a, b).map(|p| p.mtu), Some(1450));
        t.set_path_mtus(a, [(c, 1400), (c, 1300), (a, 1200), (b, 100)]);
        assert_eq!(
            t.path_mtus_of(a),
            [
                (
                    b,
                    PathMtu {
                        mtu: MIN_MTU,
                        invalid: false
                    }
                ),
                (
                    c,
                    PathMtu {
                        mtu: 1300,
                        invalid: false
                    }
                )
            ]
        );
        assert_eq!(t.path_mtu(c, a).map(|p| (p.mtu, p.by)), Some((1300, a)));
        t.set_path_mtus(b, [(a, 1500)]);
        assert_eq!(t.path_mtu(a, b).map(|p| (p.mtu, p.by)), Some((MIN_MTU, a)));
        t.set_path_mtus(a, []);
        assert!(t.path_mtus_of(a).is_empty());
        assert_eq!(t.path_mtu(a, b).map(|p| (p.mtu, p.by)), Some((1500, b)));
        assert_eq!(t.path_mtu(a, c), None);
    }
}
