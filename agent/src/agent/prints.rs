//! The API source's fingerprint of its input (`mtu_solver::locality`), kept across turns so
//! that a turn for a change that cannot reach the plan decodes only what changed.
//!
//! Each cached object's digests (a [`Part`]) are kept with the object they were made of and
//! reused while the cache holds that same object: the reflector replaces an object's `Arc`
//! whenever the object changes and never changes one in place, so the same `Arc` is the same
//! content. The Node objects, made from Node metadata, SiteNodeSlices and pool statuses, are
//! fingerprinted again whenever one of those changed. Nameless objects are decoded every turn.

use super::adopt::Adopted;
use super::caches::Snapshot;
use crate::k8s::live::SOURCE;
use crate::k8s::store::Held;
use kube::core::DynamicObject;
use mtu_solver::locality::{Fingerprint, Part};
use rustc_hash::FxHashMap;
use std::sync::Arc;
use topology_core::decode::Decoded;

/// The kept digests.
#[derive(Debug, Default)]
pub struct Prints {
    /// Per cached object, by its address: the object (held so that the address is not reused)
    /// and its digests.
    objects: FxHashMap<usize, (Arc<DynamicObject>, Part)>,
    /// The objects the Node objects were made of (`None`: not comparable, see
    /// [`Snapshot::node_sources`]) and the Node objects' digests.
    nodes: Option<(Option<Vec<Arc<DynamicObject>>>, Part)>,
}

impl Prints {
    /// The fingerprint of `snapshot` (as decoded for `adopted`); keeps the digests of its
    /// objects, and only those, for the next call.
    pub fn fingerprint(&mut self, snapshot: &Snapshot, adopted: &Adopted) -> Fingerprint {
        let mut objects = FxHashMap::default();
        let mut nameless = Vec::new();
        for h in snapshot.kinds() {
            objects.reserve(h.objects().len());
            for o in h.objects() {
                let at = Arc::as_ptr(o) as usize;
                let kept = self.objects.remove(&at);
                let part = kept.map_or_else(|| part_of(h, o), |(_, p)| p);
                objects.insert(at, (o.clone(), part));
            }
            if !h.nameless().is_empty() {
                nameless.push(decoded_part(h.nameless().iter().cloned()));
            }
        }
        self.objects = objects;
        self.update_nodes(snapshot, adopted);
        Fingerprint::of_parts(
            self.objects
                .values()
                .map(|(_, p)| p)
                .chain(&nameless)
                .chain(self.nodes.iter().map(|(_, p)| p)),
        )
    }

    /// Makes the Node objects' digests again when what they are made of changed.
    fn update_nodes(&mut self, snapshot: &Snapshot, adopted: &Adopted) {
        let sources = snapshot.node_sources();
        let same = match (&self.nodes, &sources) {
            (Some((Some(before), _)), Some(now)) => {
                before.len() == now.len() && before.iter().zip(now).all(|(a, b)| Arc::ptr_eq(a, b))
            }
            _ => false,
        };
        if !same {
            let part = decoded_part(snapshot.node_objects(adopted));
            self.nodes = Some((sources, part));
        }
    }
}

/// The digests of one cached object, decoded alone.
fn part_of(h: &Held, o: &DynamicObject) -> Part {
    decoded_part(std::iter::once(h.value(o)))
}

/// The digests of objects given as JSON, decoded.
fn decoded_part(values: impl IntoIterator<Item = serde_json::Value>) -> Part {
    let mut d = Decoded::default();
    for v in values {
        d.add_json(SOURCE, v);
    }
    Part::of(&d.objects, &d.diagnostics)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::agent::adopt::Assignment;
    use crate::k8s::ResourceKind;
    use crate::k8s::store::Store;
    use kube::runtime::watcher::Event;
    use serde_json::{Value, json};
    use topology_core::vocab::{Kind, SITE_LABEL_KEY};

    fn obj(v: Value) -> DynamicObject {
        serde_json::from_value(v).unwrap_or_else(|e| panic!("{e}"))
    }

    fn listed(kind: Kind, objects: Vec<Value>) -> Store {
        let s = Store::new(ResourceKind::of(kind));
        s.apply(&Event::Init);
        for o in objects {
            s.apply(&Event::InitApply(obj(o)));
        }
        s.apply(&Event::InitDone);
        s
    }

    fn peering(cap: u32) -> Value {
        json!({"metadata": {"name": "ab"}, "spec": {"sites": ["a", "b"], "tunnelMTU": cap}})
    }

    fn meta(name: &str, underlay: &str) -> Value {
        json!({"metadata": {"name": name, "labels": {SITE_LABEL_KEY: "a"},
            "annotations": {"mtu.unbounded-cloud.io/underlay-mtu": underlay}}})
    }

    fn adopted() -> Adopted {
        Adopted {
            assignment: Assignment {
                node_uid: "u1".into(),
                site: "a".into(),
                pool: None,
            },
            node_name: "n1".into(),
            resource_version: "1".into(),
            site_label: None,
            pool_label: None,
            node: json!({"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1"}}),
            sites: Vec::new(),
        }
    }

    struct Cluster {
        stores: Vec<Store>,
        nodes: Store,
    }

    impl Cluster {
        fn snapshot(&self) -> Snapshot {
            Snapshot::new(
                self.stores.iter().map(Store::held).collect(),
                Some(self.nodes.held()),
            )
        }

        fn store(&self, k: Kind) -> &Store {
            self.stores
                .iter()
                .find(|s| s.kind().kind == k)
                .unwrap_or_else(|| panic!("{k:?}"))
        }
    }

    /// The kept digests always fingerprint the snapshot as decoding it whole does, and hold
    /// exactly the snapshot's objects.
    fn check(prints: &mut Prints, c: &Cluster) -> Fingerprint {
        let snap = c.snapshot();
        let a = adopted();
        let kept = prints.fingerprint(&snap, &a);
        let d = snap.decode(&a);
        assert_eq!(kept, Fingerprint::of(&d.objects, &d.diagnostics));
        let held: usize = snap.kinds().iter().map(|h| h.objects().len()).sum();
        assert_eq!(prints.objects.len(), held);
        kept
    }

    #[test]
    fn kept_digests_follow_every_change_of_the_caches() {
        let c = Cluster {
            stores: vec![
                listed(
                    Kind::Site,
                    vec![
                        json!({"metadata": {"name": "a"}, "spec": {"nodeCidrs": ["10.0.0.0/16"]}}),
                        json!({"metadata": {"name": "b"}, "spec": {"nodeCidrs": ["10.1.0.0/16"]}}),
                        // Nameless: decoded again every turn.
                        json!({"metadata": {}, "spec": {}}),
                    ],
                ),
                listed(Kind::SitePeering, vec![peering(1400)]),
                listed(
                    Kind::SiteNodeSlice,
                    vec![json!({"metadata": {"name": "s"}, "siteName": "a",
                        "nodes": [{"name": "w2", "internalIPs": ["10.0.0.2"]}]})],
                ),
            ],
            nodes: listed(Kind::Node, vec![meta("n1", "1450"), meta("w2", "1400")]),
        };
        let mut prints = Prints::default();
        let first = check(&mut prints, &c);
        assert_eq!(check(&mut prints, &c), first, "nothing changed");

        c.store(Kind::SitePeering)
            .apply(&Event::Apply(obj(peering(1300))));
        let capped = check(&mut prints, &c);
        assert_ne!(capped, first);

        // A peer's underlay annotation: the Node objects are made again.
        c.nodes.apply(&Event::Apply(obj(meta("w2", "1300"))));
        let lowered = check(&mut prints, &c);
        assert_ne!(lowered, capped);

        // The slice leaves w2 out: its Node goes.
        c.store(Kind::SiteNodeSlice).apply(&Event::Apply(obj(
            json!({"metadata": {"name": "s"}, "siteName": "a", "nodes": []}),
        )));
        let fewer = check(&mut prints, &c);
        assert_ne!(fewer, lowered);

        c.store(Kind::Site)
            .apply(&Event::Delete(obj(json!({"metadata": {"name": "b"}}))));
        assert_ne!(check(&mut prints, &c), fewer);

        // A relist replaces every object with an equal one: the same fingerprint.
        let before = check(&mut prints, &c);
        let peerings = c.store(Kind::SitePeering);
        peerings.apply(&Event::Init);
        peerings.apply(&Event::InitApply(obj(peering(1300))));
        peerings.apply(&Event::InitDone);
        assert_eq!(check(&mut prints, &c), before);
    }
}
