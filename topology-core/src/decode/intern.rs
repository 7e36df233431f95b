//! Strings shared between the objects of one decode: a cluster writes the same label keys and
//! values (the Site label, the pool label) on tens of thousands of Nodes, held once each.

use rustc_hash::FxHashSet;
use std::sync::Arc;

/// The distinct strings met so far, each held once.
#[derive(Clone, Default)]
pub(crate) struct Interner {
    strings: FxHashSet<Arc<str>>,
}

/// A count, not the strings: they are the objects' own labels, shown with the objects.
impl std::fmt::Debug for Interner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Interner")
            .field("strings", &self.strings.len())
            .finish()
    }
}

impl Interner {
    /// The shared copy of `s`, made on first sight.
    pub(crate) fn intern(&mut self, s: &str) -> Arc<str> {
        if let Some(shared) = self.strings.get(s) {
            return shared.clone();
        }
        let shared: Arc<str> = Arc::from(s);
        self.strings.insert(shared.clone());
        shared
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn equal_strings_share_one_allocation() {
        let mut i = Interner::default();
        let a = i.intern("net.unbounded-cloud.io/site");
        let b = i.intern("net.unbounded-cloud.io/site");
        let c = i.intern("site-a");
        assert!(Arc::ptr_eq(&a, &b));
        assert!(!Arc::ptr_eq(&a, &c));
        assert_eq!(&*c, "site-a");
    }
}
