//! A document's diagnostics: the input's findings, sorted and rendered once per topology and
//! shared by every document that lists them, merged with the document's own. An input of
//! many findings (an export of a whole cluster notes every object of a kind it skips) does
//! not make each explanation copy and sort them again.

use super::DiagOut;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::cmp::Ordering;
use std::sync::Arc;
use topology_core::diag::{Diagnostic, output_order, sort_diagnostics};
use topology_core::model::Topology;

/// A topology's diagnostics in output order, and rendered: made once, shared by the
/// [`DiagList`]s of every document of that topology.
#[derive(Debug, Default)]
pub(crate) struct InputDiagnostics {
    sorted: Vec<Diagnostic>,
    rendered: Arc<[DiagOut]>,
}

impl InputDiagnostics {
    /// The diagnostics of `topo`, sorted and rendered. Costs a copy and a sort of them.
    pub(crate) fn of(topo: &Topology) -> Self {
        let mut sorted = topo.diagnostics.clone();
        sort_diagnostics(&mut sorted);
        let rendered = sorted.iter().map(DiagOut::from).collect();
        InputDiagnostics { sorted, rendered }
    }

    /// These diagnostics and `more`, in output order, each once: `more` is placed and
    /// rendered, the input's are shared. Costs a binary search per diagnostic of `more`.
    pub(crate) fn with<'d>(&self, more: impl IntoIterator<Item = &'d Diagnostic>) -> DiagList {
        let mut own: Vec<(usize, &Diagnostic)> = Vec::new();
        for d in more {
            let first = self
                .sorted
                .partition_point(|x| output_order(x, d) == Ordering::Less);
            let after = self
                .sorted
                .partition_point(|x| output_order(x, d) != Ordering::Greater);
            let in_input = self
                .sorted
                .get(first..after)
                .is_some_and(|run| run.contains(d));
            if !in_input && !own.iter().any(|(_, o)| *o == d) {
                own.push((after, d));
            }
        }
        // Stable: diagnostics in the same place and of equal order keep the order given, as
        // a stable sort of the input followed by `more` would.
        own.sort_by(|a, b| a.0.cmp(&b.0).then_with(|| output_order(a.1, b.1)));
        DiagList {
            input: self.rendered.clone(),
            own: own
                .into_iter()
                .map(|(at, d)| (at, DiagOut::from(d)))
                .collect(),
        }
    }
}

/// The diagnostics of a document, in output order: the input's (shared by every document of
/// one [`crate::Resolver`]) and the document's own, merged. Serialized as one list; read back,
/// it holds the list it was written as.
#[derive(Clone, Default)]
pub struct DiagList {
    /// The input's diagnostics, in output order.
    input: Arc<[DiagOut]>,
    /// The document's own, each with the index in `input` it goes before (`input.len()`:
    /// after them all), in output order.
    own: Vec<(usize, DiagOut)>,
}

impl DiagList {
    /// The diagnostics in output order.
    ///
    /// ```
    /// use mtu_solver::report::DiagList;
    /// let none = DiagList::default();
    /// assert_eq!(none.iter().count(), 0);
    /// ```
    pub fn iter(&self) -> DiagIter<'_> {
        DiagIter {
            input: &self.input,
            next_input: 0,
            own: &self.own,
        }
    }

    /// How many there are.
    ///
    /// ```
    /// assert_eq!(mtu_solver::report::DiagList::default().len(), 0);
    /// ```
    pub fn len(&self) -> usize {
        self.input.len().saturating_add(self.own.len())
    }

    /// Whether there are none.
    ///
    /// ```
    /// assert!(mtu_solver::report::DiagList::default().is_empty());
    /// ```
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The diagnostics in output order, copied into a list of their own. Costs a copy of each.
    ///
    /// ```
    /// assert!(mtu_solver::report::DiagList::default().to_vec().is_empty());
    /// ```
    pub fn to_vec(&self) -> Vec<DiagOut> {
        self.iter().cloned().collect()
    }
}

impl From<Vec<DiagOut>> for DiagList {
    /// A list of `diags`, in the order given.
    fn from(diags: Vec<DiagOut>) -> Self {
        DiagList {
            input: Arc::default(),
            own: diags.into_iter().map(|d| (0, d)).collect(),
        }
    }
}

impl<'a> IntoIterator for &'a DiagList {
    type Item = &'a DiagOut;
    type IntoIter = DiagIter<'a>;

    fn into_iter(self) -> DiagIter<'a> {
        self.iter()
    }
}

impl PartialEq for DiagList {
    fn eq(&self, other: &Self) -> bool {
        self.len() == other.len() && self.iter().eq(other.iter())
    }
}

impl Eq for DiagList {}

impl std::fmt::Debug for DiagList {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.iter()).finish()
    }
}

impl Serialize for DiagList {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_seq(self.iter())
    }
}

impl<'de> Deserialize<'de> for DiagList {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        Vec::<DiagOut>::deserialize(d).map(DiagList::from)
    }
}

/// The diagnostics of a [`DiagList`], in output order.
#[derive(Clone, Debug)]
pub struct DiagIter<'a> {
    input: &'a [DiagOut],
    next_input: usize,
    own: &'a [(usize, DiagOut)],
}

impl<'a> Iterator for DiagIter<'a> {
    type Item = &'a DiagOut;

    fn next(&mut self) -> Option<&'a DiagOut> {
        if let Some(((at, d), rest)) = self.own.split_first()
            && *at <= self.next_input
        {
            self.own = rest;
            return Some(d);
        }
        let d = self.input.get(self.next_input)?;
        self.next_input = self.next_input.saturating_add(1);
        Some(d)
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        let left = self
            .input
            .len()
            .saturating_sub(self.next_input)
            .saturating_add(self.own.len());
        (left, Some(left))
    }
}

impl ExactSizeIterator for DiagIter<'_> {}

#[cfg(test)]
mod tests {
    use super::InputDiagnostics;
    use crate::report::DiagOut;
    use proptest::prelude::*;
    use test_utils::testkit::proptest_config;
    use topology_core::diag::{Code, Diagnostic, output_order, sort_diagnostics};
    use topology_core::model::Topology;

    /// A diagnostic from a small alphabet, so that equal orders and exact copies are common.
    fn arb_diag() -> impl Strategy<Value = Diagnostic> {
        let codes = [Code::UnknownKind, Code::UnknownField, Code::PublishedStale];
        (0..codes.len(), 0..3u8, 0..2u8, 0..2u8).prop_map(move |(c, o, f, m)| {
            let code = codes.get(c).copied().unwrap_or(Code::UnknownKind);
            Diagnostic::new(
                code,
                format!("Site/{}", char::from(b'a' + o)),
                format!("spec.f{f}"),
                format!("message {m}"),
                None,
            )
        })
    }

    /// What a document listed before its input's diagnostics were shared: the input sorted,
    /// then each of `more` not already there, stably sorted into place.
    fn merged_by_sorting(input: &[Diagnostic], more: &[Diagnostic]) -> Vec<DiagOut> {
        let mut all = input.to_vec();
        sort_diagnostics(&mut all);
        for d in more {
            if !all.contains(d) {
                all.push(d.clone());
            }
        }
        all.sort_by(output_order);
        all.iter().map(DiagOut::from).collect()
    }

    proptest! {
        #![proptest_config(proptest_config(
            300,
            concat!(env!("CARGO_MANIFEST_DIR"), "/../proptest-regressions/diag_list.txt")
        ))]

        /// The merged list holds what sorting everything together gives, in that order, and
        /// reads back from its JSON as the same list.
        #[test]
        fn merging_is_sorting(
            input in proptest::collection::vec(arb_diag(), 0..12),
            more in proptest::collection::vec(arb_diag(), 0..6),
        ) {
            let mut topo = Topology::default();
            topo.diagnostics = input.clone();
            let list = InputDiagnostics::of(&topo).with(&more);
            let want = merged_by_sorting(&input, &more);
            prop_assert_eq!(list.to_vec(), want.clone());
            prop_assert_eq!(list.len(), want.len());
            prop_assert_eq!(list.iter().len(), want.len());
            let json = serde_json::to_string(&list).map_err(|e| TestCaseError::fail(e.to_string()))?;
            prop_assert_eq!(&json, &serde_json::to_string(&want).map_err(|e| TestCaseError::fail(e.to_string()))?);
            let back: super::DiagList = serde_json::from_str(&json).map_err(|e| TestCaseError::fail(e.to_string()))?;
            prop_assert_eq!(back, list);
        }
    }
}
