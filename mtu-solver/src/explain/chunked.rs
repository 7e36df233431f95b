//! Append-only storage in fixed-size chunks, for the explanation arena: growing never moves
//! what is stored. A `Vec` that doubles copies every node at each step; a one-node resolve on
//! a large cluster makes tens of thousands of nodes, and those copies were a tenth of its
//! memory traffic.

/// Nodes per chunk (a power of two).
const CHUNK: usize = 1 << CHUNK_BITS;
const CHUNK_BITS: u32 = 12;

/// Values indexed from 0 in the order pushed, stored in chunks of [`CHUNK`].
pub(super) struct Chunked<T> {
    chunks: Vec<Vec<T>>,
    len: usize,
}

impl<T> Default for Chunked<T> {
    fn default() -> Self {
        Chunked {
            chunks: Vec::new(),
            len: 0,
        }
    }
}

impl<T> Chunked<T> {
    /// Number of values.
    pub(super) fn len(&self) -> usize {
        self.len
    }

    /// Whether nothing was pushed.
    pub(super) fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Appends `v`; returns its index.
    pub(super) fn push(&mut self, v: T) -> usize {
        let i = self.len;
        match self.chunks.last_mut() {
            Some(last) if last.len() < CHUNK => last.push(v),
            _ => {
                let mut chunk = Vec::with_capacity(CHUNK);
                chunk.push(v);
                self.chunks.push(chunk);
            }
        }
        self.len = i.saturating_add(1);
        i
    }

    /// The value at `i`, if pushed.
    pub(super) fn get(&self, i: usize) -> Option<&T> {
        self.chunks
            .get(i >> CHUNK_BITS)
            .and_then(|c| c.get(i & (CHUNK - 1)))
    }

    /// Every value, in order.
    pub(super) fn iter(&self) -> impl Iterator<Item = &T> {
        self.chunks.iter().flatten()
    }
}

impl<T> std::ops::Index<usize> for Chunked<T> {
    type Output = T;

    /// The value at `i`; an index never pushed panics, as a slice's does.
    #[allow(clippy::indexing_slicing)]
    fn index(&self, i: usize) -> &T {
        &self.chunks[i >> CHUNK_BITS][i & (CHUNK - 1)]
    }
}

#[cfg(test)]
mod tests {
    use super::{CHUNK, Chunked};

    #[test]
    fn values_keep_their_index_across_chunks() {
        let mut c = Chunked::default();
        let n = CHUNK * 2 + 3;
        for v in 0..n {
            assert_eq!(c.push(v), v);
        }
        assert_eq!(c.len(), n);
        assert!((0..n).all(|i| c.get(i) == Some(&i)));
        assert_eq!(c.get(n), None);
        assert_eq!(c[CHUNK + 1], CHUNK + 1);
        assert!(c.iter().copied().eq(0..n));
    }
}
