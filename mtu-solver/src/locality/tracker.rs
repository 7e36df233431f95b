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
    pub fn fingerprint(&self) -> &Fingerprint {
        &self.current
    }

    /// Starts again from every part of the input (in order): the fingerprint
    /// [`Fingerprint::of_parts`] makes, and anything changed since the mark.
    pub fn reset<'a>(&mut self, parts: impl IntoIterator<Item = &'a Part>) {
        self.current = Fingerprint::of_parts(parts);
        self.since = Since::Unknown;
    }

    /// Replaces the whole input's fingerprint by `after` (a holder that re-reads all of its
    /// input at once): the keys that differ are noted as changed since the mark.
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
    pub fn mark(&mut self) {
        let c = &self.current;
        self.since = Since::Keys(FxHashMap::default(), (c.findings, c.nodes));
    }

    /// How the input differs from the one at the mark (a change of structure when nothing is
    /// marked), from the objects that changed since.
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
