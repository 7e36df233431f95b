//! The API source's fingerprint of its input (`mtu_solver::locality`), kept across turns so
//! that a turn for a change that cannot reach the plan decodes only what changed.
//!
//! Each cached object's digests (a [`Part`]) are kept with the object they were made of and
//! reused while the cache holds that same object: the reflector replaces an object's `Arc`
//! whenever the object changes and never changes one in place, so the same `Arc` is the same
//! content. The Node objects, made from Node metadata, SiteNodeSlices and pool statuses, are
//! fingerprinted again when what they read of those changed (a pool's cap, say, does not make
//! them again). Nameless objects are decoded every turn.

use super::adopt::Adopted;
use super::caches::{Snapshot, node_source_view};
use crate::k8s::live::SOURCE;
use crate::k8s::store::Held;
use kube::core::DynamicObject;
use mtu_solver::locality::{Fingerprint, Part};
use rustc_hash::FxHashMap;
use std::hash::{DefaultHasher, Hash, Hasher};
use std::sync::Arc;
use topology_core::decode::Decoded;
use topology_core::vocab::Kind;

/// Values kept per cached object, by the object's address (the object is held with its value,
/// so that the address is not reused while the value is kept).
#[derive(Debug)]
struct ByObject<V> {
    map: FxHashMap<usize, (Arc<DynamicObject>, V, u64)>,
    /// The turn in progress: an entry not seen in it is dropped at its end.
    turn: u64,
}

impl<V> Default for ByObject<V> {
    fn default() -> Self {
        ByObject {
            map: FxHashMap::default(),
            turn: 0,
        }
    }
}

impl<V> ByObject<V> {
    fn begin(&mut self) {
        self.turn = self.turn.wrapping_add(1);
    }

    /// The value kept for `o`, made by `make` when the cache held another object last turn.
    fn get(&mut self, o: &Arc<DynamicObject>, make: impl FnOnce() -> V) -> &V {
        let turn = self.turn;
        let e = self
            .map
            .entry(Arc::as_ptr(o) as usize)
            .or_insert_with(|| (o.clone(), make(), turn));
        e.2 = turn;
        &e.1
    }

    /// Drops what the turn did not see.
    fn end(&mut self) {
        let turn = self.turn;
        self.map.retain(|_, e| e.2 == turn);
    }

    fn clear(&mut self) {
        self.map.clear();
    }

    #[cfg(test)]
    fn len(&self) -> usize {
        self.map.len()
    }
}

/// The kept digests.
#[derive(Debug, Default)]
pub struct Prints {
    /// Per cached object: its digests.
    objects: ByObject<Part>,
    /// Per source of the Node objects: the digest of what the Node objects read of it.
    sources: ByObject<u128>,
    /// The sorted digests of the sources the Node objects were made of (`None`: not
    /// comparable, see [`Snapshot::node_sources`]) and the Node objects' digests.
    nodes: Option<(Option<Vec<u128>>, Part)>,
}

impl Prints {
    /// The fingerprint of `snapshot` (as decoded for `adopted`); keeps the digests of its
    /// objects, and only those, for the next call.
    pub fn fingerprint(&mut self, snapshot: &Snapshot, adopted: &Adopted) -> Fingerprint {
        let mut nameless = Vec::new();
        self.objects.begin();
        for h in snapshot.kinds() {
            for o in h.objects() {
                self.objects.get(o, || part_of(h, o));
            }
            if !h.nameless().is_empty() {
                nameless.push(decoded_part(h.nameless().iter().cloned()));
            }
        }
        self.objects.end();
        self.update_nodes(snapshot, adopted);
        Fingerprint::of_parts(
            self.objects
                .map
                .values()
                .map(|(_, p, _)| p)
                .chain(&nameless)
                .chain(self.nodes.iter().map(|(_, p)| p)),
        )
    }

    /// Makes the Node objects' digests again when what they read of their sources changed
    /// (a source's view digested again only when the cache holds another object).
    fn update_nodes(&mut self, snapshot: &Snapshot, adopted: &Adopted) {
        let Some(sources) = snapshot.node_sources() else {
            self.sources.clear();
            self.nodes = Some((None, decoded_part(snapshot.node_objects(adopted))));
            return;
        };
        self.sources.begin();
        let mut key = Vec::with_capacity(sources.len());
        for (kind, o) in sources {
            key.push(*self.sources.get(o, || view_digest(kind, o)));
        }
        self.sources.end();
        key.sort_unstable();
        if self
            .nodes
            .as_ref()
            .is_some_and(|(k, _)| k.as_ref() == Some(&key))
        {
            return;
        }
        self.nodes = Some((Some(key), decoded_part(snapshot.node_objects(adopted))));
    }
}

/// A digest of what the Node objects read of a source, its kind included (two SipHash digests
/// with distinct prefixes, as `locality` digests objects).
fn view_digest(kind: Kind, o: &DynamicObject) -> u128 {
    let bytes = serde_json::to_vec(&node_source_view(kind, o)).unwrap_or_default();
    let half = |prefix: u8| {
        let mut h = DefaultHasher::new();
        prefix.hash(&mut h);
        kind.hash(&mut h);
        bytes.hash(&mut h);
        h.finish()
    };
    (u128::from(half(0)) << 64) | u128::from(half(1))
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
        let sources = snap.node_sources().map_or(0, |s| s.len());
        assert_eq!(prints.sources.len(), sources);
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
