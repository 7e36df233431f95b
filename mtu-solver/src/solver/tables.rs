//! Tables indexed by dense IDs (nodes, components, prefixes, pools) whose memory is allocated
//! in chunks on first write ([`Sparse`]), and memo rows per gateway class built on them
//! ([`ClassRows`]).
//!
//! A fresh solver resolving one node of a 65,000-node cluster touches a few hundred nodes: a
//! table of every node, even zeroed, is written per solver (the allocator clears memory it
//! reuses) and evicts what the resolve reads. A node's resolve asks `reach` once per learned
//! route and next hop, thousands of times, and a resolve of every node asks it for every class of
//! gateways: a hash map keyed by (pool, Site, prefix) spreads those entries over memory, one
//! cache miss each. Routes come in prefix order, so in a row indexed by the prefix's place in
//! the prefix table ([`SolePrefix`](topology_core::net::SolePrefix)) the entries of consecutive
//! routes are neighbours.

use crate::explain::ExplId;
use smallvec::SmallVec;
use topology_core::ids::{PoolId, SiteId};

/// A memoized optional term as one word: 1 for none, its ID + 2 for a term (0 is "not yet
/// computed", the default of a fresh table). An ID too large to pack is left unmemoized.
pub(super) fn pack_term(t: Option<ExplId>) -> u32 {
    match t {
        None => 1,
        Some(e) => e.0.checked_add(2).unwrap_or(0),
    }
}

/// The term [`pack_term`] packed (`None`: not computed yet).
pub(super) fn unpack_term(x: u32) -> Option<Option<ExplId>> {
    match x {
        0 => None,
        1 => Some(None),
        x => Some(Some(ExplId(x.saturating_sub(2)))),
    }
}

/// A table of `T` by dense index, every entry `T::default()` until written; chunks of `CHUNK`
/// entries are allocated on their first write.
pub(super) struct Sparse<T, const CHUNK: usize> {
    chunks: Vec<Option<Box<[T; CHUNK]>>>,
}

impl<T, const CHUNK: usize> Default for Sparse<T, CHUNK> {
    fn default() -> Self {
        Sparse { chunks: Vec::new() }
    }
}

impl<T: Copy + Default, const CHUNK: usize> Sparse<T, CHUNK> {
    /// The chunk of index `i` and its place in it.
    fn split(i: usize) -> Option<(usize, usize)> {
        Some((i.checked_div(CHUNK)?, i.checked_rem(CHUNK)?))
    }

    /// The entry at `i`.
    pub(super) fn get(&self, i: usize) -> T {
        Self::split(i)
            .and_then(|(c, at)| self.chunks.get(c)?.as_ref()?.get(at).copied())
            .unwrap_or_default()
    }

    /// The entry at `i`, to write (its chunk allocated if it was not).
    pub(super) fn slot(&mut self, i: usize) -> Option<&mut T> {
        let (c, at) = Self::split(i)?;
        if self.chunks.len() <= c {
            self.chunks.resize_with(c.saturating_add(1), || None);
        }
        self.chunks
            .get_mut(c)?
            .get_or_insert_with(|| Box::new([T::default(); CHUNK]))
            .get_mut(at)
    }

    /// Sets the entry at `i` back to the default (allocates nothing).
    pub(super) fn reset(&mut self, i: usize) {
        if let Some((c, at)) = Self::split(i)
            && let Some(Some(chunk)) = self.chunks.get_mut(c)
            && let Some(x) = chunk.get_mut(at)
        {
            *x = T::default();
        }
    }
}

/// Optional terms per gateway class and dense index, computed on first ask. Empty until the
/// first write: a fresh solver allocates nothing for classes it never walks.
pub(super) struct ClassRows<const CHUNK: usize> {
    /// Per pool (by index): the row of each of its Sites met so far.
    slots: Vec<SmallVec<[(SiteId, u32); 1]>>,
    /// Per row: packed terms ([`pack_term`]).
    rows: Vec<Sparse<u32, CHUNK>>,
}

impl<const CHUNK: usize> Default for ClassRows<CHUNK> {
    fn default() -> Self {
        ClassRows {
            slots: Vec::new(),
            rows: Vec::new(),
        }
    }
}

impl<const CHUNK: usize> ClassRows<CHUNK> {
    fn row(&self, pool: PoolId, site: SiteId) -> Option<usize> {
        let slots = self.slots.get(pool.idx())?;
        slots
            .iter()
            .find(|(s, _)| *s == site)
            .map(|(_, r)| *r as usize)
    }

    /// The term of class (`pool`, `site`) at `i`, once computed.
    pub(super) fn get(&self, pool: PoolId, site: SiteId, i: usize) -> Option<Option<ExplId>> {
        unpack_term(self.rows.get(self.row(pool, site)?)?.get(i))
    }

    /// Records the term of class (`pool`, `site`) at `i`.
    pub(super) fn insert(&mut self, pool: PoolId, site: SiteId, i: usize, t: Option<ExplId>) {
        let r = match self.row(pool, site) {
            Some(r) => r,
            None => {
                if self.slots.len() <= pool.idx() {
                    self.slots
                        .resize(pool.idx().saturating_add(1), SmallVec::new());
                }
                let Some(slots) = self.slots.get_mut(pool.idx()) else {
                    return;
                };
                let r = self.rows.len();
                slots.push((site, u32::try_from(r).unwrap_or(u32::MAX)));
                self.rows.push(Sparse::default());
                r
            }
        };
        if let Some(x) = self.rows.get_mut(r).and_then(|row| row.slot(i)) {
            *x = pack_term(t);
        }
    }

    /// Forgets the entries at `indices` of every class.
    pub(super) fn forget(&mut self, indices: impl Iterator<Item = usize> + Clone) {
        for row in &mut self.rows {
            for i in indices.clone() {
                row.reset(i);
            }
        }
    }

    /// Forgets every entry.
    pub(super) fn clear(&mut self) {
        self.slots.iter_mut().for_each(SmallVec::clear);
        self.rows.clear();
    }

    /// Whether no entry was recorded.
    #[cfg(test)]
    pub(super) fn is_empty(&self) -> bool {
        self.rows.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_keep_terms_per_class_and_index() {
        let (p0, p1) = (PoolId(0), PoolId(1));
        let (s0, s1) = (SiteId(0), SiteId(1));
        let mut rows = ClassRows::<256>::default();
        assert_eq!(rows.get(p0, s0, 5), None);
        rows.insert(p0, s0, 5, Some(ExplId(7)));
        rows.insert(p0, s1, 5, None);
        rows.insert(p1, s0, 599, Some(ExplId(0)));
        assert_eq!(rows.get(p0, s0, 5), Some(Some(ExplId(7))));
        assert_eq!(rows.get(p0, s1, 5), Some(None));
        assert_eq!(rows.get(p0, s0, 6), None);
        assert_eq!(rows.get(p0, s0, 599), None);
        assert_eq!(rows.get(p1, s0, 599), Some(Some(ExplId(0))));
        assert_eq!(rows.get(p1, s0, 600), None);
        assert_eq!(rows.get(p1, s1, 599), None);
        assert_eq!(rows.get(PoolId(2), s0, 1), None);
        rows.forget([5usize].into_iter());
        assert_eq!(rows.get(p0, s0, 5), None);
        assert_eq!(rows.get(p0, s1, 5), None);
        assert_eq!(rows.get(p1, s0, 599), Some(Some(ExplId(0))));
        rows.clear();
        assert!(rows.is_empty());
        assert_eq!(rows.get(p1, s0, 599), None);
    }

    #[test]
    fn sparse_tables_read_defaults_until_written() {
        let mut t = Sparse::<u64, 4>::default();
        assert_eq!(t.get(9), 0);
        t.reset(9);
        assert_eq!(t.chunks.len(), 0);
        if let Some(x) = t.slot(9) {
            *x = 5;
        }
        assert_eq!(t.get(9), 5);
        assert_eq!(t.get(8), 0);
        assert_eq!(t.get(100), 0);
        // Only the written chunk is allocated.
        assert_eq!(t.chunks.iter().filter(|c| c.is_some()).count(), 1);
        t.reset(9);
        assert_eq!(t.get(9), 0);
    }

    #[test]
    fn packed_terms_round_trip() {
        for t in [None, Some(ExplId(0)), Some(ExplId(12345))] {
            assert_eq!(unpack_term(pack_term(t)), Some(t));
        }
        assert_eq!(unpack_term(pack_term(Some(ExplId(u32::MAX)))), None);
        assert_eq!(unpack_term(0), None);
    }
}
