//! What a change of the input can reach, decided without resolving it and without keeping the
//! objects: an input's [`Fingerprint`] (per object, digests of the whole object, of its shape
//! without its cap and findings, and for Nodes without their underlays) and a node plan's
//! [`Footprint`] (the objects whose caps enter any of its values, component caps expanded:
//! what invariant 4 of `mtu.md` §10, locality, is stated against).
//!
//! Two fingerprints compare as [`Fingerprint::difference`]: equal, caps only, underlays only, or
//! structure. What-if chooses how much to re-resolve by it; the node agent asks
//! [`Fingerprint::reaches`] whether a changed input can change a plan it resolved before. Only
//! a change of caps that the plan's values did not consider qualifies: by locality, a change of
//! the cap of an object changes only values whose explanation lists that object (before, or
//! after: a cap set where there was none is listed only after, so it never qualifies).
//!
//! A holder that keeps its input per object keeps each object's [`Part`] while the object is
//! unchanged and puts the fingerprint together with [`Fingerprint::of_parts`]: only changed
//! objects are digested again.
//!
//! Digests are 128 bits (two SipHash digests with distinct prefixes): inputs that differ and
//! digest equal are not a case this module guards against. Objects are keyed by kind and a
//! digest of the name; two names that share one count as duplicates, whose every change is
//! structural, so a collision costs a re-resolve, never a missed change.

use crate::raw::{cap_slot, raw_cap};
use rustc_hash::{FxHashMap, FxHashSet};
use std::hash::{DefaultHasher, Hash, Hasher};
use topology_core::decode::{Meta, RawNode, RawObject};
use topology_core::diag::Diagnostic;
use topology_core::model::Topology;
use topology_core::vocab::Kind;

mod footprint;
mod tracker;

pub use footprint::Footprint;
pub use tracker::Tracker;

/// An object's key: its kind and a digest of its name.
type Key = (Kind, u64);

/// How two inputs differ, for choosing how much to re-resolve. Objects are named by
/// [`ObjectKey`]: a holder of the input finds them with [`Fingerprint::named`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Difference {
    /// Only caps (or the findings of objects whose shape is unchanged) of these objects; empty:
    /// the inputs are equal.
    Caps(Vec<ObjectKey>),
    /// Only the underlays or probed path MTUs of these Nodes.
    Underlays(Vec<ObjectKey>),
    /// Anything else: links or paths may change.
    Structure,
}

/// An object's kind and name digest, as a [`Difference`] names it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct ObjectKey {
    kind: Kind,
    name: u64,
}

impl ObjectKey {
    /// The key of the object of this kind and name.
    /// Costs a digest of the name.
    ///
    /// ```
    /// use mtu_solver::Kind;
    /// use mtu_solver::locality::{Difference, ObjectKey};
    /// # use mtu_solver::locality::Fingerprint;
    /// # use mtu_solver::{doc_cluster::TWO_SITES, load};
    /// # let fp = |yaml: &str| {
    /// #     let d = load::from_sources([("cluster.yaml", yaml)]);
    /// #     Fingerprint::of(&d.objects, &d.diagnostics)
    /// # };
    /// let lowered = fp(&TWO_SITES.replace("tunnelMTU: 1400", "tunnelMTU: 1300"));
    /// let ab = ObjectKey::of(Kind::SitePeering, "ab");
    /// assert_eq!(fp(TWO_SITES).difference(&lowered), Difference::Caps(vec![ab]));
    /// assert_ne!(ab, ObjectKey::of(Kind::Site, "ab")); // the kind is part of the key
    /// ```
    pub fn of(kind: Kind, name: &str) -> ObjectKey {
        ObjectKey {
            kind,
            name: digest64(&name),
        }
    }

    /// Its kind.
    /// Costs nothing.
    ///
    /// ```
    /// use mtu_solver::{Kind, locality::ObjectKey};
    /// assert_eq!(ObjectKey::of(Kind::Node, "wa").kind(), Kind::Node);
    /// ```
    pub fn kind(&self) -> Kind {
        self.kind
    }
}

/// Whether an object has a cap slot, and what is in it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Cap {
    /// Its kind has no cap.
    NoSlot,
    /// None is set.
    Absent,
    /// One is set (valid or not).
    Set,
}

/// The digests of the objects of one kind and name.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Entry {
    /// The whole objects as decoded, findings included.
    whole: u128,
    /// Without their caps and findings.
    shape: u128,
    /// Nodes: without their underlays and findings; other kinds: `shape`.
    bare: u128,
    /// Their findings.
    findings: u128,
    /// The cap of the first.
    cap: Cap,
    /// How many objects share the key (more than one: duplicates).
    count: u32,
}

/// Digested things whose order does not matter, as a multiset: the findings that belong to no
/// object (their order moves no value), and Nodes held together ([`Nodes::Together`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct Multiset {
    /// The wrapping sum of their digests.
    sum: u128,
    count: usize,
}

impl Multiset {
    fn of<T: Hash>(items: impl IntoIterator<Item = T>) -> Multiset {
        items.into_iter().fold(Multiset::default(), |f, d| {
            f.plus(Multiset {
                sum: digest(&d),
                count: 1,
            })
        })
    }

    fn plus(self, o: Multiset) -> Multiset {
        Multiset {
            sum: self.sum.wrapping_add(o.sum),
            count: self.count.wrapping_add(o.count),
        }
    }

    /// The multiset without `o`, which it holds.
    fn minus(self, o: Multiset) -> Multiset {
        Multiset {
            sum: self.sum.wrapping_sub(o.sum),
            count: self.count.wrapping_sub(o.count),
        }
    }
}

/// How a fingerprint holds Node objects (most of a cluster's objects).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Nodes {
    /// One entry per Node (about 100 bytes each): a change of a Node's underlays alone is told
    /// apart as such ([`Difference::Underlays`]), which what-if uses to re-resolve only the
    /// nodes around it.
    #[default]
    Each,
    /// Every Node in one multiset digest: any change of a Node is a change of structure. For a
    /// holder that resolves again on any Node change anyway (the node agent: an underlay
    /// reaches its plan like a structural change).
    Together,
}

/// The digests of a part of an input (some of its objects and findings), which a holder of the
/// input may keep for the objects that do not change: [`Fingerprint::of_parts`] puts parts
/// together as [`Fingerprint::of`] fingerprints the whole.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Part {
    objects: Vec<(Key, Entry)>,
    findings: Multiset,
    nodes: Multiset,
}

impl Part {
    /// The digests of decoded objects and the decoder's findings that belong to no object.
    /// Costs one pass over `objects` and `diagnostics`, digesting each (an object with a cap or
    /// findings is copied once, to digest it without them).
    ///
    /// ```
    /// use mtu_solver::locality::{Fingerprint, Part};
    /// # let d = mtu_solver::load::from_sources([("c.yaml", mtu_solver::doc_cluster::TWO_SITES)]);
    /// // One part per object, as a cache keeps them, and one for the findings of no object.
    /// let mut parts: Vec<Part> = d.objects.iter().map(|o| Part::of([o], &[])).collect();
    /// parts.push(Part::of([], &d.diagnostics));
    /// assert_eq!(Fingerprint::of_parts(&parts), Fingerprint::of(&d.objects, &d.diagnostics));
    /// ```
    pub fn of<'a>(
        objects: impl IntoIterator<Item = &'a RawObject>,
        diagnostics: &[Diagnostic],
    ) -> Part {
        Part::with(objects, diagnostics, Nodes::Each)
    }

    /// The same, holding Node objects as `nodes` says.
    /// Costs the same as [`Part::of`].
    ///
    /// ```
    /// use mtu_solver::locality::{Fingerprint, Nodes, Part};
    /// # let d = mtu_solver::load::from_sources([("c.yaml", mtu_solver::doc_cluster::TWO_SITES)]);
    /// let part = |o| Part::with([o], &[], Nodes::Together);
    /// let mut parts: Vec<Part> = d.objects.iter().map(part).collect();
    /// parts.push(Part::with([], &d.diagnostics, Nodes::Together));
    /// let together = Fingerprint::with(&d.objects, &d.diagnostics, Nodes::Together);
    /// assert_eq!(Fingerprint::of_parts(&parts), together);
    /// assert_ne!(together, Fingerprint::of(&d.objects, &d.diagnostics)); // Nodes held each
    /// ```
    pub fn with<'a>(
        objects: impl IntoIterator<Item = &'a RawObject>,
        diagnostics: &[Diagnostic],
        nodes: Nodes,
    ) -> Part {
        let (mut each, mut together) = (Vec::new(), Vec::new());
        for o in objects {
            if nodes == Nodes::Together && o.kind() == Kind::Node {
                together.push(o);
            } else {
                each.push(((o.kind(), digest64(&o.name())), entry(o)));
            }
        }
        // A part is often one object, and the agent keeps one per cached object.
        each.shrink_to_fit();
        Part {
            objects: each,
            findings: Multiset::of(diagnostics),
            nodes: Multiset::of(together),
        }
    }
}

/// The digests of an input's objects and findings; holds no object.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Fingerprint {
    objects: FxHashMap<Key, Entry>,
    findings: Multiset,
    /// The Nodes held together.
    nodes: Multiset,
}

impl Fingerprint {
    /// The fingerprint of decoded objects and the decoder's findings that belong to no object.
    /// Costs one pass over `objects` and `diagnostics`, digesting each.
    ///
    /// ```
    /// use mtu_solver::locality::Fingerprint;
    /// use mtu_solver::{doc_cluster::TWO_SITES, load};
    /// let read = || load::from_sources([("cluster.yaml", TWO_SITES)]);
    /// let (d, again) = (read(), read());
    /// let fp = Fingerprint::of(&d.objects, &d.diagnostics);
    /// assert_eq!(fp, Fingerprint::of(&again.objects, &again.diagnostics)); // holds no object
    /// assert_eq!(fp.len(), 5); // Sites a and b, SitePeering ab, Nodes wa and wb
    /// ```
    pub fn of<'a>(
        objects: impl IntoIterator<Item = &'a RawObject>,
        diagnostics: &[Diagnostic],
    ) -> Fingerprint {
        Fingerprint::of_parts([&Part::of(objects, diagnostics)])
    }

    /// The same, holding Node objects as `nodes` says.
    /// Costs the same as [`Fingerprint::of`].
    ///
    /// ```
    /// use mtu_solver::locality::{Difference, Fingerprint, Nodes, ObjectKey};
    /// use mtu_solver::{Kind, doc_cluster::TWO_SITES, load};
    /// // TWO_SITES, wa's underlay MTU annotated `mtu`.
    /// let fp = |mtu: u32, nodes| {
    ///     let key = "mtu.unbounded-cloud.io/underlay-mtu";
    ///     let annotated = format!("{{name: wa, annotations: {{{key}: '{mtu}'}},");
    ///     let yaml = TWO_SITES.replace("{name: wa,", &annotated);
    ///     let d = load::from_sources([("cluster.yaml", yaml)]);
    ///     Fingerprint::with(&d.objects, &d.diagnostics, nodes)
    /// };
    /// let wa = ObjectKey::of(Kind::Node, "wa");
    /// let each = fp(1450, Nodes::Each).difference(&fp(1400, Nodes::Each));
    /// assert_eq!(each, Difference::Underlays(vec![wa]));
    /// let together = fp(1450, Nodes::Together).difference(&fp(1400, Nodes::Together));
    /// assert_eq!(together, Difference::Structure);
    /// ```
    pub fn with<'a>(
        objects: impl IntoIterator<Item = &'a RawObject>,
        diagnostics: &[Diagnostic],
        nodes: Nodes,
    ) -> Fingerprint {
        Fingerprint::of_parts([&Part::with(objects, diagnostics, nodes)])
    }

    /// The fingerprint of an input made of these parts, in this order: equal to
    /// [`Fingerprint::of`] the objects of every part, in order, and all their findings.
    /// Costs one pass over the parts' digests: no object is digested again.
    ///
    /// ```
    /// use mtu_solver::locality::{Fingerprint, Part};
    /// # let d = mtu_solver::load::from_sources([("c.yaml", mtu_solver::doc_cluster::TWO_SITES)]);
    /// let (first, rest) = d.objects.split_at(2); // any split
    /// let parts = [Part::of(first, &d.diagnostics), Part::of(rest, &[])];
    /// assert_eq!(Fingerprint::of_parts(&parts), Fingerprint::of(&d.objects, &d.diagnostics));
    /// ```
    pub fn of_parts<'a>(parts: impl IntoIterator<Item = &'a Part>) -> Fingerprint {
        let parts: Vec<&Part> = parts.into_iter().collect();
        let mut fp = Fingerprint::default();
        fp.objects
            .reserve(parts.iter().map(|p| p.objects.len()).sum::<usize>());
        for part in parts {
            fp.findings = fp.findings.plus(part.findings);
            fp.nodes = fp.nodes.plus(part.nodes);
            for (key, e) in &part.objects {
                fp.objects
                    .entry(*key)
                    .and_modify(|prev| {
                        // Duplicates: the digests of all of them, in order.
                        prev.whole = digest(&(prev.whole, e.whole));
                        prev.shape = digest(&(prev.shape, e.shape));
                        prev.bare = digest(&(prev.bare, e.bare));
                        prev.findings = digest(&(prev.findings, e.findings));
                        prev.count = prev.count.saturating_add(1);
                    })
                    .or_insert(*e);
            }
        }
        fp
    }

    /// Objects fingerprinted (duplicates once, Nodes held together each).
    /// Costs nothing.
    ///
    /// ```
    /// use mtu_solver::locality::{Fingerprint, Nodes};
    /// # let d = mtu_solver::load::from_sources([("c.yaml", mtu_solver::doc_cluster::TWO_SITES)]);
    /// assert_eq!(Fingerprint::of(&d.objects, &d.diagnostics).len(), 5);
    /// assert_eq!(Fingerprint::with(&d.objects, &d.diagnostics, Nodes::Together).len(), 5);
    /// ```
    pub fn len(&self) -> usize {
        self.objects.len().saturating_add(self.nodes.count)
    }

    /// Whether no object was fingerprinted.
    /// Costs nothing.
    ///
    /// ```
    /// use mtu_solver::locality::Fingerprint;
    /// # let d = mtu_solver::load::from_sources([("c.yaml", mtu_solver::doc_cluster::TWO_SITES)]);
    /// assert!(Fingerprint::of([], &d.diagnostics).is_empty());
    /// assert!(!Fingerprint::of(&d.objects, &d.diagnostics).is_empty());
    /// ```
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The object of `objects` that `key` names (the first of duplicates).
    /// Costs a pass over `objects`, digesting each name, until one matches.
    ///
    /// ```
    /// use mtu_solver::locality::{Difference, Fingerprint};
    /// use mtu_solver::{doc_cluster::TWO_SITES, load};
    /// let before = load::from_sources([("cluster.yaml", TWO_SITES)]);
    /// let after = load::from_sources([("cluster.yaml", TWO_SITES.replace("1400", "1300"))]);
    /// let fp = |d: &mtu_solver::Decoded| Fingerprint::of(&d.objects, &d.diagnostics);
    /// let Difference::Caps(keys) = fp(&before).difference(&fp(&after)) else { panic!("caps") };
    /// let changed = Fingerprint::named(&after.objects, &keys[0]).expect("in the input");
    /// assert_eq!(changed.name(), "ab");
    /// ```
    pub fn named<'a>(objects: &'a [RawObject], key: &ObjectKey) -> Option<&'a RawObject> {
        objects
            .iter()
            .find(|o| o.kind() == key.kind && digest64(&o.name()) == key.name)
    }

    /// How `after` differs from this input (settings aside: they are compared by the caller).
    /// Costs a look-up per object of this input, and a copy of the keys that changed.
    ///
    /// ```
    /// use mtu_solver::locality::Difference;
    /// # use mtu_solver::locality::Fingerprint;
    /// # use mtu_solver::{doc_cluster::TWO_SITES, load};
    /// # let fp = |yaml: &str| {
    /// #     let d = load::from_sources([("cluster.yaml", yaml)]);
    /// #     Fingerprint::of(&d.objects, &d.diagnostics)
    /// # };
    /// let before = fp(TWO_SITES);
    /// assert_eq!(before.difference(&fp(TWO_SITES)), Difference::Caps(vec![])); // equal
    /// let moved = fp(&TWO_SITES.replace("10.8.1.0/24", "10.8.2.0/24")); // wb's pod CIDR
    /// assert_eq!(before.difference(&moved), Difference::Structure);
    /// ```
    pub fn difference(&self, after: &Fingerprint) -> Difference {
        self.delta(after).difference()
    }

    /// How `after` differs from this input, object by object: what [`Fingerprint::difference`]
    /// and [`Fingerprint::reaches`] read.
    /// Costs a look-up per object of this input.
    ///
    /// ```
    /// # use mtu_solver::locality::Fingerprint;
    /// # use mtu_solver::{doc_cluster::TWO_SITES, load};
    /// # let fp = |yaml: &str| {
    /// #     let d = load::from_sources([("cluster.yaml", yaml)]);
    /// #     Fingerprint::of(&d.objects, &d.diagnostics)
    /// # };
    /// let before = fp(TWO_SITES);
    /// assert!(before.delta(&fp(TWO_SITES)).is_empty());
    /// let lowered = before.delta(&fp(&TWO_SITES.replace("tunnelMTU: 1400", "tunnelMTU: 1300")));
    /// assert!(!lowered.is_empty() && lowered.caps_alone());
    /// ```
    pub fn delta(&self, after: &Fingerprint) -> Delta {
        if self.findings != after.findings
            || self.nodes != after.nodes
            || self.objects.len() != after.objects.len()
        {
            return Delta::structure();
        }
        let mut d = Delta::default();
        for (k, b) in &self.objects {
            if d.add(*k, Some(b), after.objects.get(k)).is_err() {
                return Delta::structure();
            }
        }
        d
    }

    /// Whether the input `after` can resolve a node differently from this one, which resolved
    /// it to a plan of footprint `footprint`, under the same settings. It cannot when every
    /// object that differs differs only in its cap, with the same findings, had a cap before,
    /// and is not in the footprint.
    /// Costs a look-up per object of this input, and one in `footprint` per changed cap.
    ///
    /// ```
    /// # use mtu_solver::{Resolver, Settings, doc_cluster::TWO_SITES, load};
    /// # use mtu_solver::locality::{Fingerprint, Footprint};
    /// # let read = |ab: u32, c: Option<u32>| {
    /// #     let cap = c.map(|c| format!(", tunnelMTU: {c}")).unwrap_or_default();
    /// #     let spec = format!("spec: {{nodeCidrs: [10.2.0.0/16]{cap}}}");
    /// #     let site_c = format!("kind: Site\nmetadata: {{name: c}}\n{spec}\n");
    /// #     let api = "apiVersion: net.unbounded-cloud.io/v1alpha1";
    /// #     let yaml = format!("{}---\n{api}\n{site_c}", TWO_SITES.replace("1400", &ab.to_string()));
    /// #     load::from_sources([("cluster.yaml", yaml)])
    /// # };
    /// # let fp = |d: &mtu_solver::Decoded| Fingerprint::of(&d.objects, &d.diagnostics);
    /// // `read(ab, c)`: TWO_SITES, SitePeering ab capped `ab`, and a Site c capped `c`, unpeered.
    /// let resolver = Resolver::new(read(1400, Some(1300)), Settings::default());
    /// let footprint = resolver.with_solver(|solver| {
    ///     let plan = solver.plan(solver.topo().find_node("wa").expect("wa"));
    ///     Footprint::of(solver, &plan)
    /// });
    /// let before = fp(&read(1400, Some(1300)));
    /// assert!(!before.reaches(&fp(&read(1400, Some(1250))), &footprint)); // c's cap
    /// assert!(before.reaches(&fp(&read(1300, Some(1300))), &footprint)); // ab's cap
    /// ```
    pub fn reaches(&self, after: &Fingerprint, footprint: &Footprint) -> bool {
        self.delta(after).reaches(footprint)
    }
}

/// How an input differs from an earlier one, object by object, as far as a plan of the
/// earlier one is concerned: the objects whose caps alone changed, those of Nodes whose
/// underlays alone changed, or a change of anything else. Made by [`Fingerprint::delta`] from
/// two whole fingerprints, or by a [`Tracker`] from the objects that changed since its mark.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Delta {
    caps: Vec<CapChange>,
    underlays: Vec<ObjectKey>,
    structure: bool,
}

/// An object whose cap alone changed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct CapChange {
    key: ObjectKey,
    /// It had a cap before.
    had_cap: bool,
    /// Its findings did not change.
    same_findings: bool,
}

impl Delta {
    /// A change of structure: links or paths may change.
    /// Costs nothing.
    ///
    /// ```
    /// use mtu_solver::locality::{Delta, Difference, Footprint};
    /// let any = Delta::structure();
    /// assert_eq!(any.difference(), Difference::Structure);
    /// assert!(any.reaches(&Footprint::default()) && !any.caps_alone());
    /// ```
    pub fn structure() -> Delta {
        Delta {
            structure: true,
            ..Delta::default()
        }
    }

    /// Whether nothing differs.
    /// Costs nothing.
    ///
    /// ```
    /// use mtu_solver::locality::{Delta, Fingerprint};
    /// # let d = mtu_solver::load::from_sources([("c.yaml", mtu_solver::doc_cluster::TWO_SITES)]);
    /// let fp = Fingerprint::of(&d.objects, &d.diagnostics);
    /// assert!(fp.delta(&fp.clone()).is_empty());
    /// assert!(Delta::default().is_empty() && !Delta::structure().is_empty());
    /// ```
    pub fn is_empty(&self) -> bool {
        !self.structure && self.caps.is_empty() && self.underlays.is_empty()
    }

    /// The same change as a [`Difference`].
    /// Costs a copy of the keys that changed.
    ///
    /// ```
    /// use mtu_solver::Kind;
    /// use mtu_solver::locality::{Difference, ObjectKey};
    /// # use mtu_solver::locality::Fingerprint;
    /// # use mtu_solver::{doc_cluster::TWO_SITES, load};
    /// # let fp = |yaml: &str| {
    /// #     let d = load::from_sources([("cluster.yaml", yaml)]);
    /// #     Fingerprint::of(&d.objects, &d.diagnostics)
    /// # };
    /// let delta = fp(TWO_SITES).delta(&fp(&TWO_SITES.replace("1400", "1300")));
    /// let ab = ObjectKey::of(Kind::SitePeering, "ab");
    /// assert_eq!(delta.difference(), Difference::Caps(vec![ab]));
    /// ```
    pub fn difference(&self) -> Difference {
        if self.structure {
            return Difference::Structure;
        }
        match (self.caps.is_empty(), self.underlays.is_empty()) {
            (_, true) => Difference::Caps(self.caps.iter().map(|c| c.key).collect()),
            (true, false) => Difference::Underlays(self.underlays.clone()),
            (false, false) => Difference::Structure,
        }
    }

    /// Whether the change can resolve a node differently from the plan of footprint
    /// `footprint` that the earlier input resolved it to, under the same settings: it cannot
    /// when every object that differs differs only in its cap, had a cap before, kept its
    /// findings, and is not in the footprint.
    /// Costs a copy of the keys that changed and a look-up in `footprint` per changed cap.
    ///
    /// ```
    /// # use mtu_solver::{Resolver, Settings, doc_cluster::TWO_SITES, load};
    /// # use mtu_solver::locality::{Fingerprint, Footprint};
    /// # let read = |ab: u32, c: Option<u32>| {
    /// #     let cap = c.map(|c| format!(", tunnelMTU: {c}")).unwrap_or_default();
    /// #     let spec = format!("spec: {{nodeCidrs: [10.2.0.0/16]{cap}}}");
    /// #     let site_c = format!("kind: Site\nmetadata: {{name: c}}\n{spec}\n");
    /// #     let api = "apiVersion: net.unbounded-cloud.io/v1alpha1";
    /// #     let yaml = format!("{}---\n{api}\n{site_c}", TWO_SITES.replace("1400", &ab.to_string()));
    /// #     load::from_sources([("cluster.yaml", yaml)])
    /// # };
    /// # let fp = |d: &mtu_solver::Decoded| Fingerprint::of(&d.objects, &d.diagnostics);
    /// // `read(ab, c)`: TWO_SITES, SitePeering ab capped `ab`, and a Site c capped `c`, unpeered.
    /// let resolver = Resolver::new(read(1400, None), Settings::default());
    /// let footprint = resolver.with_solver(|solver| {
    ///     let plan = solver.plan(solver.topo().find_node("wa").expect("wa"));
    ///     Footprint::of(solver, &plan)
    /// });
    /// let before = fp(&read(1400, None));
    /// assert!(before.delta(&fp(&read(1300, None))).reaches(&footprint)); // ab's cap bounds wa
    /// // A cap set where there was none reaches, though Site c is not in the footprint.
    /// assert!(!footprint.contains(mtu_solver::Kind::Site, "c"));
    /// assert!(before.delta(&fp(&read(1400, Some(1300)))).reaches(&footprint));
    /// ```
    pub fn reaches(&self, footprint: &Footprint) -> bool {
        let Difference::Caps(_) = self.difference() else {
            return true;
        };
        self.caps
            .iter()
            .any(|c| !(c.had_cap && c.same_findings) || footprint.objects.contains(&c.key))
    }

    /// Whether only caps changed, each object keeping its findings: the topology of the
    /// earlier input can take such a change in place ([`Delta::take_caps`]).
    /// Costs one pass over the changed caps.
    ///
    /// ```
    /// # use mtu_solver::locality::Fingerprint;
    /// # use mtu_solver::{doc_cluster::TWO_SITES, load};
    /// # let fp = |yaml: &str| {
    /// #     let d = load::from_sources([("cluster.yaml", yaml)]);
    /// #     Fingerprint::of(&d.objects, &d.diagnostics)
    /// # };
    /// let before = fp(TWO_SITES);
    /// assert!(before.delta(&fp(&TWO_SITES.replace("1400", "1300"))).caps_alone());
    /// let moved = fp(&TWO_SITES.replace("10.8.1.0/24", "10.8.2.0/24")); // wb's pod CIDR
    /// assert!(!before.delta(&moved).caps_alone());
    /// ```
    pub fn caps_alone(&self) -> bool {
        !self.structure && self.underlays.is_empty() && self.caps.iter().all(|c| c.same_findings)
    }

    /// Takes a change of caps alone ([`Delta::caps_alone`]) into `topo`, the topology of the
    /// earlier input, reading the caps from `objects`, the later input's: `topo` then resolves
    /// as one built from `objects` does. False, with nothing changed, for any other change.
    /// Costs one pass over `objects`, digesting each name, and a pass over the Sites and
    /// SitePeerings of `topo` to set its component caps again.
    ///
    /// ```
    /// use mtu_solver::locality::Fingerprint;
    /// use mtu_solver::topology_core::model::Topology;
    /// use mtu_solver::{Settings, Solver, doc_cluster::TWO_SITES, load};
    /// let before = load::from_sources([("cluster.yaml", TWO_SITES)]);
    /// let after = load::from_sources([("cluster.yaml", TWO_SITES.replace("1400", "1300"))]);
    /// let fp = |d: &mtu_solver::Decoded| Fingerprint::of(&d.objects, &d.diagnostics);
    /// let mut topo = Topology::build(&before.objects, before.diagnostics.clone());
    /// assert!(fp(&before).delta(&fp(&after)).take_caps(&mut topo, &after.objects));
    /// let wa = topo.find_node("wa").expect("wa");
    /// assert_eq!(Solver::new(&topo, Settings::default()).plan(wa).links[0].mtu.mtu.get(), 1300);
    /// ```
    pub fn take_caps<'a>(
        &self,
        topo: &mut Topology,
        objects: impl IntoIterator<Item = &'a RawObject>,
    ) -> bool {
        if !self.caps_alone() {
            return false;
        }
        let keys: FxHashSet<ObjectKey> = self.caps.iter().map(|c| c.key).collect();
        let caps: Vec<_> = objects
            .into_iter()
            .filter(|o| keys.contains(&ObjectKey::of(o.kind(), o.name())))
            .filter_map(|o| Some((topo.obj_ref(o.kind(), o.name())?, raw_cap(o)?.as_ref())))
            .collect();
        topo.set_caps(caps);
        true
    }

    /// Adds the object of key `k`, its digests `before` and `after` (`None`: absent); `Err`
    /// when the change is structural (the delta is then left as it was).
    fn add(&mut self, k: Key, before: Option<&Entry>, after: Option<&Entry>) -> Result<(), ()> {
        let (b, a) = match (before, after) {
            (None, None) => return Ok(()),
            (Some(b), Some(a)) => (b, a),
            _ => return Err(()),
        };
        if b.whole == a.whole && b.count == a.count {
            return Ok(());
        }
        if b.count != 1 || a.count != 1 {
            return Err(());
        }
        let key = ObjectKey {
            kind: k.0,
            name: k.1,
        };
        if b.shape == a.shape && b.cap != Cap::NoSlot {
            self.caps.push(CapChange {
                key,
                had_cap: b.cap == Cap::Set,
                same_findings: b.findings == a.findings,
            });
        } else if b.bare == a.bare && k.0 == Kind::Node {
            self.underlays.push(key);
        } else if !(b.findings != a.findings && b.shape == a.shape) {
            return Err(());
        }
        Ok(())
    }
}

/// The digests of one object.
fn entry(o: &RawObject) -> Entry {
    let whole = digest(o);
    let findings = digest(&o.meta().diags);
    let cap = match raw_cap(o) {
        None => Cap::NoSlot,
        Some(None) => Cap::Absent,
        Some(Some(_)) => Cap::Set,
    };
    // Copies only where a field is to be left out.
    let shape = if cap == Cap::Set || !o.meta().diags.is_empty() {
        let mut c = o.clone();
        c.meta_mut().diags.clear();
        if let Some(slot) = cap_slot(&mut c) {
            *slot = None;
        }
        digest(&c)
    } else {
        whole
    };
    let bare = match o {
        RawObject::Node(n)
            if n.underlay.is_some() || n.underlay_max.is_some() || n.path_mtu.is_some() =>
        {
            node_bare(n)
        }
        _ => shape,
    };
    Entry {
        whole,
        shape,
        bare,
        findings,
        cap,
        count: 1,
    }
}

/// A Node's digest without its underlays, probed path MTUs and findings, field by field (Nodes are most of a
/// cluster: no copy). The pattern names every field, so a field added to [`RawNode`] must be
/// placed here before this compiles.
fn node_bare(n: &RawNode) -> u128 {
    let RawNode {
        meta: Meta {
            name,
            loc,
            diags: _,
        },
        labels,
        underlay: _,
        underlay_max: _,
        path_mtu: _,
        internal_ips,
        external_ips,
        pod_cidrs,
    } = n;
    digest(&(
        Kind::Node,
        name,
        loc,
        labels,
        internal_ips,
        external_ips,
        pod_cidrs,
    ))
}

fn digest(v: &impl Hash) -> u128 {
    let half = |prefix: u8| {
        let mut h = DefaultHasher::new();
        prefix.hash(&mut h);
        v.hash(&mut h);
        h.finish()
    };
    (u128::from(half(0)) << 64) | u128::from(half(1))
}

fn digest64(v: &impl Hash) -> u64 {
    let mut h = DefaultHasher::new();
    2u8.hash(&mut h);
    v.hash(&mut h);
    h.finish()
}
