//! A fingerprint kept up to date part by part, and how it changed since a mark: what a holder
//! of an input that changes a few objects at a time (the node agent's caches) asks on every
//! event, in time proportional to the objects that changed, not to the input.

use super::{Delta, Entry, Fingerprint, Key, Multiset, Part};
use rustc_hash::FxHashMap;

/// An input's [`Fingerprint`], kept by replacing the [`Part`]s of the objects that change, and
/// the [`Delta`] between it and the input at the last [`Tracker::mark`].
///
/// Parts are expected not to share a key (an object of one kind and name is kept in one part,
/// as a cache keeps it); a replacement that would make two parts share one is refused, and
/// the holder then starts again from all its parts with [`Tracker::reset`].
#[derive(Clone, Debug, Default)]
pub struct Tracker {
    current: Fingerprint,
    since: Since,
}

/// What changed since the mark.
#[derive(Clone, Debug, Default)]
enum Since {
    /// Nothing is marked, or the fingerprint was made again whole: anything may have changed.
    #[default]
    Unknown,
    /// The keys changed since the mark, each with its digests at the mark, and the findings
    /// and the Nodes held together at the mark.
    Keys(FxHashMap<Key, Option<Entry>>, (Multiset, Multiset)),
}

/// A replacement that would make two parts share a key.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
#[error("two parts of the input share an object key; reset the tracker from every part")]
pub struct SharedKey;

impl Tracker {
    /// The fingerprint of the input as it stands.
    /// Costs nothing.
    ///
    /// ```
    /// use mtu_solver::locality::{Fingerprint, Part, Tracker};
    /// # let d = mtu_solver::load::from_sources([("c.yaml", mtu_solver::doc_cluster::TWO_SITES)]);
    /// let mut tracker = Tracker::default();
    /// assert!(tracker.fingerprint().is_empty());
    /// let parts: Vec<Part> = d.objects.iter().map(|o| Part::of([o], &[])).collect();
    /// tracker.reset(&parts);
    /// assert_eq!(tracker.fingerprint(), &Fingerprint::of(&d.objects, &[]));
    /// ```
    pub fn fingerprint(&self) -> &Fingerprint {
        &self.current
    }

    /// Starts again from every part of the input (in order): the fingerprint
    /// [`Fingerprint::of_parts`] makes, and anything changed since the mark.
    /// Costs one pass over the parts' digests.
    ///
    /// ```
    /// use mtu_solver::locality::{Difference, Part, Tracker};
    /// # let d = mtu_solver::load::from_sources([("c.yaml", mtu_solver::doc_cluster::TWO_SITES)]);
    /// let parts: Vec<Part> = d.objects.iter().map(|o| Part::of([o], &[])).collect();
    /// let mut tracker = Tracker::default();
    /// tracker.mark();
    /// tracker.reset(&parts);
    /// assert_eq!(tracker.fingerprint().len(), 5);
    /// assert_eq!(tracker.delta().difference(), Difference::Structure); // anything may have changed
    /// ```
    pub fn reset<'a>(&mut self, parts: impl IntoIterator<Item = &'a Part>) {
        self.current = Fingerprint::of_parts(parts);
        self.since = Since::Unknown;
    }

    /// Replaces the whole input's fingerprint by `after` (a holder that re-reads all of its
    /// input at once): the keys that differ are noted as changed since the mark.
    /// Costs a look-up per object of both fingerprints when an input is marked, nothing more
    /// otherwise.
    ///
    /// ```
    /// use mtu_solver::locality::{Difference, Fingerprint, ObjectKey, Tracker};
    /// use mtu_solver::{Kind, doc_cluster::TWO_SITES, load};
    /// let fp = |yaml: &str| {
    ///     let d = load::from_sources([("cluster.yaml", yaml)]);
    ///     Fingerprint::of(&d.objects, &d.diagnostics)
    /// };
    /// let mut tracker = Tracker::default();
    /// tracker.set(fp(TWO_SITES));
    /// tracker.mark();
    /// tracker.set(fp(&TWO_SITES.replace("tunnelMTU: 1400", "tunnelMTU: 1300")));
    /// let ab = ObjectKey::of(Kind::SitePeering, "ab");
    /// assert_eq!(tracker.delta().difference(), Difference::Caps(vec![ab]));
    /// ```
    pub fn set(&mut self, after: Fingerprint) {
        if let Since::Keys(changed, _) = &mut self.since {
            let before = &self.current.objects;
            for (k, b) in before {
                if after.objects.get(k) != Some(b) {
                    changed.entry(*k).or_insert(Some(*b));
                }
            }
            for k in after.objects.keys() {
                if !before.contains_key(k) {
                    changed.entry(*k).or_insert(None);
                }
            }
        }
        self.current = after;
    }

    /// Replaces the part `old` (`None`: the object is new) by `new` (`None`: it is gone).
    /// Refused, with nothing changed, when `old` is not wholly the input's own digests of its
    /// keys (another part shares one) or `new` brings a key another part holds.
    /// Costs a pass over the digests of `old` and `new`, and a look-up per key of theirs.
    ///
    /// ```
    /// use mtu_solver::locality::{Difference, ObjectKey, Part, Tracker};
    /// use mtu_solver::{Kind, doc_cluster::TWO_SITES, load};
    /// let before = load::from_sources([("cluster.yaml", TWO_SITES)]);
    /// let after = load::from_sources([("cluster.yaml", TWO_SITES.replace("1400", "1300"))]);
    /// let parts: Vec<Part> = before.objects.iter().map(|o| Part::of([o], &[])).collect();
    /// let mut tracker = Tracker::default();
    /// tracker.reset(&parts);
    /// tracker.mark();
    /// let i = before.objects.iter().position(|o| o.kind() == Kind::SitePeering).expect("ab");
    /// tracker.replace(Some(&parts[i]), Some(&Part::of([&after.objects[i]], &[])))?;
    /// let ab = ObjectKey::of(Kind::SitePeering, "ab");
    /// assert_eq!(tracker.delta().difference(), Difference::Caps(vec![ab]));
    /// assert!(tracker.replace(None, Some(&parts[0])).is_err()); // another part holds its key
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn replace(&mut self, old: Option<&Part>, new: Option<&Part>) -> Result<(), SharedKey> {
        let alone = |p: Option<&Part>| p.map(|p| Fingerprint::of_parts([p])).unwrap_or_default();
        let (old, new) = (alone(old), alone(new));
        let objects = &self.current.objects;
        if old.objects.iter().any(|(k, e)| objects.get(k) != Some(e))
            || new
                .objects
                .keys()
                .any(|k| !old.objects.contains_key(k) && objects.contains_key(k))
        {
            return Err(SharedKey);
        }
        if let Since::Keys(changed, _) = &mut self.since {
            for k in old.objects.keys().chain(new.objects.keys()) {
                changed.entry(*k).or_insert_with(|| objects.get(k).copied());
            }
        }
        for k in old.objects.keys() {
            self.current.objects.remove(k);
        }
        self.current.objects.extend(new.objects);
        self.current.findings = self.current.findings.minus(old.findings).plus(new.findings);
        self.current.nodes = self.current.nodes.minus(old.nodes).plus(new.nodes);
        Ok(())
    }

    /// Marks the input as it stands: the input a plan was resolved from.
    /// Costs nothing but dropping the changes noted since the previous mark.
    ///
    /// ```
    /// use mtu_solver::locality::{Part, Tracker};
    /// # let d = mtu_solver::load::from_sources([("c.yaml", mtu_solver::doc_cluster::TWO_SITES)]);
    /// let mut tracker = Tracker::default();
    /// tracker.reset([&Part::of(&d.objects, &d.diagnostics)]);
    /// assert!(!tracker.delta().is_empty()); // nothing marked: anything may have changed
    /// tracker.mark();
    /// assert!(tracker.delta().is_empty());
    /// ```
    pub fn mark(&mut self) {
        let c = &self.current;
        self.since = Since::Keys(FxHashMap::default(), (c.findings, c.nodes));
    }

    /// How the input differs from the one at the mark (a change of structure when nothing is
    /// marked), from the objects that changed since.
    /// Costs a look-up per object changed since the mark, whatever the size of the input.
    ///
    /// ```
    /// use mtu_solver::locality::{Difference, Fingerprint, ObjectKey, Tracker};
    /// use mtu_solver::{Kind, doc_cluster::TWO_SITES, load};
    /// // TWO_SITES, wa's underlay MTU annotated `mtu`.
    /// # let fp = |mtu: u32| {
    /// #     let key = "mtu.unbounded-cloud.io/underlay-mtu";
    /// #     let annotated = format!("{{name: wa, annotations: {{{key}: '{mtu}'}},");
    /// #     let yaml = TWO_SITES.replace("{name: wa,", &annotated);
    /// #     let d = load::from_sources([("cluster.yaml", yaml)]);
    /// #     Fingerprint::of(&d.objects, &d.diagnostics)
    /// # };
    /// let mut tracker = Tracker::default();
    /// tracker.set(fp(1450));
    /// tracker.mark();
    /// tracker.set(fp(1400));
    /// let wa = ObjectKey::of(Kind::Node, "wa");
    /// assert_eq!(tracker.delta().difference(), Difference::Underlays(vec![wa]));
    /// assert!(!tracker.delta().caps_alone());
    /// ```
    pub fn delta(&self) -> Delta {
        let Since::Keys(changed, at_mark) = &self.since else {
            return Delta::structure();
        };
        if *at_mark != (self.current.findings, self.current.nodes) {
            return Delta::structure();
        }
        let mut d = Delta::default();
        for (k, before) in changed {
            if d.add(*k, before.as_ref(), self.current.objects.get(k))
                .is_err()
            {
                return Delta::structure();
            }
        }
        d
    }
}
