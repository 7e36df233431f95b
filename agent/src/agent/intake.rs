//! What the API source keeps of its input across turns, so that a turn decodes and digests
//! only the objects that changed: each cached object decoded alone (a [`Piece`]) with its
//! digests (a [`Part`]), and a [`Tracker`] fed the parts of the objects that changed, which
//! says how the input differs from the one of the last turn that applied a plan.
//!
//! A cache whose [`Version`] is the one of the last turn is not read at all. In a cache that
//! changed, what is kept of an object is reused while the cache holds that same object: the
//! reflector replaces an object's `Arc` whenever the object changes and never changes one in
//! place, so the same `Arc` is the same content. The Node objects, made from Node metadata,
//! SiteNodeSlices and pool statuses, are decoded again when what they read of those changed (a
//! pool's cap, say, does not make them again). Nameless objects are decoded again whenever
//! their cache changed.

use super::adopt::Adopted;
use super::caches::{Snapshot, node_source_view};
use super::input::{Input, Objects, Piece, Pieces};
use crate::k8s::live::SOURCE;
use crate::k8s::store::{Cached, Held, Version};
use mtu_solver::locality::{Fingerprint, Nodes, Part, Tracker};
use rustc_hash::FxHashMap;
use std::hash::{DefaultHasher, Hash, Hasher};
use std::sync::Arc;
use topology_core::decode::Decoded;
use topology_core::vocab::Kind;

/// Values kept per cached object, by the object's address (the object is held with its value,
/// so that the address is not reused while the value is kept).
#[derive(Debug)]
struct ByObject<V> {
    map: FxHashMap<usize, (Arc<Cached>, V, u64)>,
    /// The pass in progress: an entry not seen in it is dropped at its end.
    pass: u64,
}

impl<V> Default for ByObject<V> {
    fn default() -> Self {
        ByObject {
            map: FxHashMap::default(),
            pass: 0,
        }
    }
}

impl<V> ByObject<V> {
    fn begin(&mut self) {
        self.pass = self.pass.wrapping_add(1);
    }

    /// The value kept for `o`, made by `make` when the cache held another object at the last
    /// pass; whether it was made now.
    fn get(&mut self, o: &Arc<Cached>, make: impl FnOnce() -> V) -> (&V, bool) {
        let pass = self.pass;
        let mut made = false;
        let e = self.map.entry(Arc::as_ptr(o) as usize).or_insert_with(|| {
            made = true;
            (o.clone(), make(), pass)
        });
        e.2 = pass;
        (&e.1, made)
    }

    /// Drops what the pass did not see, and returns it.
    fn end(&mut self) -> Vec<V> {
        let pass = self.pass;
        let gone: Vec<usize> = self
            .map
            .iter()
            .filter(|(_, e)| e.2 != pass)
            .map(|(k, _)| *k)
            .collect();
        gone.iter()
            .filter_map(|k| self.map.remove(k))
            .map(|(_, v, _)| v)
            .collect()
    }

    fn clear(&mut self) {
        self.map.clear();
    }

    fn values(&self) -> impl Iterator<Item = &V> {
        self.map.values().map(|(_, v, _)| v)
    }

    #[cfg(test)]
    fn len(&self) -> usize {
        self.map.len()
    }
}

/// What is kept of some objects: decoded, and their digests (Nodes held together: the reconcile
/// resolves again on any Node change, so their digests need not be kept one by one).
#[derive(Debug)]
struct Kept {
    part: Part,
    piece: Arc<Piece>,
}

impl Kept {
    /// Objects given as JSON, decoded.
    fn decode(values: impl IntoIterator<Item = serde_json::Value>) -> Kept {
        let mut d = Decoded::default();
        for v in values {
            d.add_json(SOURCE, v);
        }
        Kept {
            part: Part::with(&d.objects, &d.diagnostics, Nodes::Together),
            piece: Arc::new(Piece::of(d)),
        }
    }
}

/// What is kept of the objects of one cache.
#[derive(Debug)]
struct OfKind {
    kind: Kind,
    /// The cache's version they were read at.
    version: Version,
    /// Per named object.
    objects: ByObject<Kept>,
    /// The nameless objects, together.
    nameless: Option<Kept>,
    /// Every piece, in the cache's order, as the turns' inputs share them.
    pieces: Pieces,
}

impl OfKind {
    /// The parts of every object kept.
    fn parts(&self) -> impl Iterator<Item = &Part> {
        self.objects
            .values()
            .chain(self.nameless.iter())
            .map(|k| &k.part)
    }
}

/// How the Node objects were last made: the versions of the caches they were made from, the
/// sorted digests of what they read of those caches' objects (`None`: not comparable, see
/// [`Snapshot::node_sources`]), and the objects.
#[derive(Debug)]
struct NodesKept {
    versions: Vec<Version>,
    key: Option<Vec<u128>>,
    kept: Kept,
}

/// The kept decodes and digests.
#[derive(Debug, Default)]
pub struct Intake {
    /// Per cache of the snapshots (Node metadata aside).
    kinds: Vec<OfKind>,
    /// Per source of the Node objects: the digest of what the Node objects read of it.
    sources: ByObject<u128>,
    nodes: Option<NodesKept>,
    tracker: Tracker,
    /// A replacement found two parts sharing a key: the tracker starts again from every part.
    shared: bool,
}

impl Intake {
    /// The input of `snapshot` (as decoded for `adopted`); keeps what it decoded of its objects,
    /// and only those, for the next call. Reads only the caches whose version changed, and
    /// decodes only the objects they replaced.
    pub fn input(&mut self, snapshot: &Snapshot, adopted: &Adopted) -> Input {
        self.shared = false;
        let mut lists = Vec::with_capacity(snapshot.kinds().len().saturating_add(1));
        for h in snapshot.kinds() {
            lists.push(self.read_kind(h));
        }
        self.drop_unwatched(snapshot);
        self.update_nodes(snapshot, adopted);
        if let Some(n) = &self.nodes {
            lists.push(Arc::from([n.kept.piece.clone()]));
        }
        if self.shared {
            let parts = self.kinds.iter().flat_map(OfKind::parts);
            let nodes = self.nodes.iter().map(|n| &n.kept.part);
            self.tracker.reset(parts.chain(nodes));
        }
        Input::new(self.tracker.delta(), move || Objects::new(lists))
    }

    /// The input of the last [`Intake::input`] is the one of the plan applied: the next
    /// input's delta counts from it.
    pub fn mark(&mut self) {
        self.tracker.mark();
    }

    /// The fingerprint of the last input.
    pub fn fingerprint(&self) -> &Fingerprint {
        self.tracker.fingerprint()
    }

    /// The pieces of one cache's objects: those kept while its version is the same; otherwise
    /// its objects read, the replaced ones decoded, and the tracker told.
    fn read_kind(&mut self, h: &Held) -> Pieces {
        let kind = h.kind().kind;
        let i = match self.kinds.iter().position(|k| k.kind == kind) {
            Some(i) if self.kinds.get(i).is_some_and(|k| k.version == h.version()) => {
                return self
                    .kinds
                    .get(i)
                    .map(|k| k.pieces.clone())
                    .unwrap_or_default();
            }
            Some(i) => i,
            None => {
                self.kinds.push(OfKind {
                    kind,
                    version: h.version(),
                    objects: ByObject::default(),
                    nameless: None,
                    pieces: Arc::from([]),
                });
                self.kinds.len().saturating_sub(1)
            }
        };
        let Some(k) = self.kinds.get_mut(i) else {
            return Arc::from([]);
        };
        let (t, shared) = (&mut self.tracker, &mut self.shared);
        let mut pieces = Vec::with_capacity(h.objects().len().saturating_add(1));
        let mut made = Vec::new();
        k.objects.begin();
        for o in h.objects() {
            let (kept, new) = k.objects.get(o, || Kept::decode([h.value(o)]));
            pieces.push(kept.piece.clone());
            if new {
                made.push(Arc::as_ptr(o) as usize);
            }
        }
        for g in k.objects.end() {
            *shared |= t.replace(Some(&g.part), None).is_err();
        }
        let nameless = (!h.nameless().is_empty()).then(|| Kept::decode(h.nameless().to_vec()));
        let old = std::mem::replace(&mut k.nameless, nameless);
        *shared |= t
            .replace(
                old.as_ref().map(|n| &n.part),
                k.nameless.as_ref().map(|n| &n.part),
            )
            .is_err();
        for m in &made {
            if let Some((_, kept, _)) = k.objects.map.get(m) {
                *shared |= t.replace(None, Some(&kept.part)).is_err();
            }
        }
        pieces.extend(k.nameless.iter().map(|n| n.piece.clone()));
        k.pieces = Arc::from(pieces);
        k.version = h.version();
        k.pieces.clone()
    }

    /// Forgets the caches the snapshot no longer has (a heavy watch stopped).
    fn drop_unwatched(&mut self, snapshot: &Snapshot) {
        let watched = |k: &OfKind| snapshot.kinds().iter().any(|h| h.kind().kind == k.kind);
        let (kept, gone): (Vec<OfKind>, Vec<OfKind>) = std::mem::take(&mut self.kinds)
            .into_iter()
            .partition(watched);
        self.kinds = kept;
        for k in &gone {
            for p in k.parts() {
                self.shared |= self.tracker.replace(Some(p), None).is_err();
            }
        }
    }

    /// Makes the Node objects again when what they read of their sources changed: nothing is
    /// read while the versions of their caches are the same; otherwise each source's view is
    /// digested again only when the cache holds another object.
    fn update_nodes(&mut self, snapshot: &Snapshot, adopted: &Adopted) {
        let versions = snapshot.node_versions();
        if self.nodes.as_ref().is_some_and(|n| n.versions == versions) {
            return;
        }
        let key = snapshot.node_sources().map(|sources| {
            self.sources.begin();
            let mut key = Vec::with_capacity(sources.len());
            for (kind, o) in sources {
                key.push(*self.sources.get(o, || view_digest(kind, o)).0);
            }
            self.sources.end();
            key.sort_unstable();
            key
        });
        if key.is_none() {
            self.sources.clear();
        }
        if let Some(n) = self.nodes.as_mut()
            && key.is_some()
            && n.key == key
        {
            n.versions = versions;
            return;
        }
        let kept = Kept::decode(snapshot.node_objects(adopted));
        let old = self.nodes.replace(NodesKept {
            versions,
            key,
            kept,
        });
        let new = self.nodes.as_ref().map(|n| &n.kept.part);
        self.shared |= self
            .tracker
            .replace(old.as_ref().map(|n| &n.kept.part), new)
            .is_err();
    }
}

/// A digest of what the Node objects read of a source, its kind included (two SipHash digests
/// with distinct prefixes, as `locality` digests objects).
fn view_digest(kind: Kind, o: &Cached) -> u128 {
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::agent::testing::{listed, obj};
    use crate::k8s::store::Store;
    use kube::runtime::watcher::Event;
    use mtu_solver::locality::{Difference, ObjectKey};
    use serde_json::{Value, json};
    use topology_core::vocab::{Kind, SITE_LABEL_KEY};

    fn peering(cap: u32) -> Value {
        json!({"metadata": {"name": "ab"}, "spec": {"sites": ["a", "b"], "tunnelMTU": cap}})
    }

    fn meta(name: &str, underlay: &str) -> Value {
        json!({"metadata": {"name": name, "labels": {SITE_LABEL_KEY: "a"},
            "annotations": {"mtu.unbounded-cloud.io/underlay-mtu": underlay}}})
    }

    fn adopted() -> Adopted {
        crate::agent::testing::adopted("a")
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

    /// What is kept always fingerprints and decodes the snapshot as decoding it whole does,
    /// and holds exactly the snapshot's objects. Returns the input's fingerprint and how it
    /// differs from the last call's, which it marks.
    fn check(intake: &mut Intake, c: &Cluster) -> (Fingerprint, Difference) {
        let snap = c.snapshot();
        let a = adopted();
        let input = intake.input(&snap, &a);
        let difference = input.delta().difference();
        let d = snap.decode(&a);
        let whole = Fingerprint::with(&d.objects, &d.diagnostics, Nodes::Together);
        assert_eq!(intake.fingerprint(), &whole);
        let objects = input.objects();
        let diagnostics: Vec<_> = objects.diagnostics().cloned().collect();
        assert_eq!(
            Fingerprint::with(objects.iter(), &diagnostics, Nodes::Together),
            whole
        );
        assert_eq!(objects.iter().count(), d.objects.len());
        let held: usize = snap.kinds().iter().map(|h| h.objects().len()).sum();
        let kept: usize = intake.kinds.iter().map(|k| k.objects.len()).sum();
        assert_eq!(kept, held);
        let sources = snap.node_sources().map_or(0, |s| s.len());
        assert_eq!(intake.sources.len(), sources);
        intake.mark();
        (whole, difference)
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
        let mut intake = Intake::default();
        let (first, d) = check(&mut intake, &c);
        assert_eq!(d, Difference::Structure, "nothing marked yet");
        assert_eq!(
            check(&mut intake, &c),
            (first.clone(), Difference::Caps(vec![]))
        );

        c.store(Kind::SitePeering)
            .apply(&Event::Apply(obj(peering(1300))));
        let (capped, d) = check(&mut intake, &c);
        assert_ne!(capped, first);
        let ab = ObjectKey::of(Kind::SitePeering, "ab");
        assert_eq!(d, Difference::Caps(vec![ab]));

        // A peer's underlay annotation: the Node objects are made again.
        c.nodes.apply(&Event::Apply(obj(meta("w2", "1300"))));
        let (lowered, d) = check(&mut intake, &c);
        assert_ne!(lowered, capped);
        assert_eq!(d, Difference::Structure, "the Nodes are held together");

        // The slice leaves w2 out: its Node goes.
        c.store(Kind::SiteNodeSlice).apply(&Event::Apply(obj(
            json!({"metadata": {"name": "s"}, "siteName": "a", "nodes": []}),
        )));
        let (fewer, d) = check(&mut intake, &c);
        assert_ne!(fewer, lowered);
        assert_eq!(d, Difference::Structure);

        c.store(Kind::Site)
            .apply(&Event::Delete(obj(json!({"metadata": {"name": "b"}}))));
        let (gone, d) = check(&mut intake, &c);
        assert_ne!(gone, fewer);
        assert_eq!(d, Difference::Structure);

        // A relist replaces every object with an equal one: the same fingerprint.
        let peerings = c.store(Kind::SitePeering);
        peerings.apply(&Event::Init);
        peerings.apply(&Event::InitApply(obj(peering(1300))));
        peerings.apply(&Event::InitDone);
        assert_eq!(check(&mut intake, &c), (gone, Difference::Caps(vec![])));

        // Changes between two marks add up: two caps, the second changed twice.
        c.store(Kind::SitePeering)
            .apply(&Event::Apply(obj(peering(1200))));
        let _ = intake.input(&c.snapshot(), &adopted());
        c.store(Kind::Site).apply(&Event::Apply(obj(
            json!({"metadata": {"name": "a"}, "spec": {"nodeCidrs": ["10.0.0.0/16"], "tunnelMTU": 1300}}),
        )));
        let (_, d) = check(&mut intake, &c);
        let Difference::Caps(mut keys) = d else {
            panic!("{d:?}")
        };
        keys.sort_by_key(|k| k.kind());
        assert_eq!(keys, vec![ObjectKey::of(Kind::Site, "a"), ab]);
    }
}
