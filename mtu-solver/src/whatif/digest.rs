//! The digest of a what-if: its changes grouped by kind of value, then by value before and
//! after and the term that binds the value after, each group with how many values and nodes it
//! holds. Built in one pass over the changes; it holds one entry per group, never the changes.

use super::diff::Change;
use crate::snapshot::Item;
use rustc_hash::FxHashMap;
use serde::{Deserialize, Serialize};
use std::sync::Arc;
use topology_core::vocab::ObjectRef;

/// A kind of value, in the order a digest lists them: the node's fabric first, then what it
/// has per peer or destination.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ItemKind {
    /// The fabric MTU.
    Fabric,
    /// A link.
    Link,
    /// A route.
    Route,
    /// A device.
    Device,
    /// A published value.
    Published,
}

impl ItemKind {
    /// Every kind, in digest order.
    pub const ALL: [ItemKind; 5] = [
        ItemKind::Fabric,
        ItemKind::Link,
        ItemKind::Route,
        ItemKind::Device,
        ItemKind::Published,
    ];

    /// The kind of an item. Costs nothing.
    ///
    /// ```
    /// # let resolver = mtu_solver::doc_cluster::resolver();
    /// use mtu_solver::whatif::ItemKind::{self, Device, Fabric, Link, Route};
    /// let what_if = resolver.what_if(&["set SitePeering/ab=1300".parse()?])?;
    /// let on_wa: Vec<ItemKind> = what_if.changes.iter()
    ///     .filter(|c| &*c.node == "wa")
    ///     .map(|c| ItemKind::of(&c.item))
    ///     .collect();
    /// assert_eq!(on_wa, [Link, Route, Device, Fabric]);
    /// # Ok::<(), mtu_solver::Error>(())
    /// ```
    pub fn of(item: &Item) -> ItemKind {
        match item {
            Item::Fabric => ItemKind::Fabric,
            Item::Link { .. } => ItemKind::Link,
            Item::Route { .. } => ItemKind::Route,
            Item::Device { .. } => ItemKind::Device,
            Item::Published { .. } => ItemKind::Published,
        }
    }

    /// As `item.type` names it in output: `fabric`, `link`, `route`, `device`, `published`.
    /// Costs nothing.
    ///
    /// ```
    /// use mtu_solver::whatif::ItemKind;
    /// let names: Vec<&str> = ItemKind::ALL.iter().map(|k| k.as_str()).collect();
    /// assert_eq!(names, ["fabric", "link", "route", "device", "published"]);
    /// ```
    pub fn as_str(self) -> &'static str {
        match self {
            ItemKind::Fabric => "fabric",
            ItemKind::Link => "link",
            ItemKind::Route => "route",
            ItemKind::Device => "device",
            ItemKind::Published => "published",
        }
    }

    fn index(self) -> usize {
        self as usize
    }
}

/// Changes of one kind with the same value before, value after and binding term.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Group {
    /// The value before (None: the values appear).
    pub before: Option<u32>,
    /// The value after (None: the values disappear).
    pub after: Option<u32>,
    /// The term that binds the value after (`Site/A spec.tunnelMTU`, `link to g1`, `auto`);
    /// None when the values disappear.
    pub bound_by: Option<String>,
    /// The object that term reads (serialized as `Site/A`), None for agent settings, defaults
    /// and links.
    pub object: Option<ObjectRef>,
    /// Nodes with at least one of these changes.
    pub nodes_affected: usize,
    /// How many changes.
    pub values_changed: usize,
}

/// The changes of one kind of value.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct KindDigest {
    /// The kind.
    #[serde(rename = "type")]
    pub kind: ItemKind,
    /// Nodes with at least one change of this kind.
    pub nodes_affected: usize,
    /// Changes of this kind.
    pub values_changed: usize,
    /// Its groups, the most values first (then by value before, value after and term).
    pub groups: Vec<Group>,
}

impl KindDigest {
    /// The one change every value of this kind makes (before, after), when they all make the
    /// same. Costs one pass over the groups.
    ///
    /// ```
    /// # let resolver = mtu_solver::doc_cluster::resolver();
    /// use mtu_solver::whatif::{Digest, ItemKind};
    /// let what_if = resolver.what_if(&["set SitePeering/ab=1300".parse()?])?;
    /// let digest = Digest::of(&what_if.changes);
    /// // The devices are bound by two terms (the link to wa, the link to wb), yet change alike.
    /// let devices = digest.kinds.iter().find(|k| k.kind == ItemKind::Device).unwrap();
    /// assert_eq!(devices.groups.len(), 2);
    /// assert_eq!(devices.single_change(), Some((Some(1400), Some(1300))));
    /// # Ok::<(), mtu_solver::Error>(())
    /// ```
    pub fn single_change(&self) -> Option<(Option<u32>, Option<u32>)> {
        let (first, rest) = self.groups.split_first()?;
        rest.iter()
            .all(|g| (g.before, g.after) == (first.before, first.after))
            .then_some((first.before, first.after))
    }
}

/// A what-if in groups: totals, then per kind of value (only kinds with changes, in
/// [`ItemKind`] order) its groups.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Digest {
    /// Nodes with at least one change.
    pub nodes_affected: usize,
    /// Changes.
    pub values_changed: usize,
    /// Per kind of value.
    pub kinds: Vec<KindDigest>,
}

impl Digest {
    /// The digest of `changes`, which come grouped by node (as [`super::WhatIf`] holds them,
    /// sorted by node): a node is counted once per group however many of its values the group
    /// holds. Costs one pass over `changes`.
    ///
    /// ```
    /// # let resolver = mtu_solver::doc_cluster::resolver();
    /// use mtu_solver::whatif::{Digest, ItemKind};
    /// let what_if = resolver.what_if(&["set SitePeering/ab=1300".parse()?])?;
    /// let digest = Digest::of(&what_if.changes);
    /// assert_eq!((digest.nodes_affected, digest.values_changed), (2, 8));
    /// let kinds: Vec<ItemKind> = digest.kinds.iter().map(|k| k.kind).collect();
    /// assert_eq!(kinds, [ItemKind::Fabric, ItemKind::Link, ItemKind::Route, ItemKind::Device]);
    /// let fabric = &digest.kinds[0].groups[0];
    /// assert_eq!(fabric.bound_by.as_deref(), Some("SitePeering/ab spec.tunnelMTU"));
    /// assert_eq!((fabric.nodes_affected, fabric.values_changed), (2, 2));
    /// # Ok::<(), mtu_solver::Error>(())
    /// ```
    pub fn of<'a>(changes: impl IntoIterator<Item = &'a Change>) -> Digest {
        let mut b = DigestBuilder::default();
        for c in changes {
            b.add(c);
        }
        b.finish()
    }
}

/// Counts of a group, a kind or the whole: values, and distinct nodes (a node is counted when
/// its ordinal differs from the last one counted; changes come grouped by node).
#[derive(Clone, Copy, Debug, Default)]
struct Count {
    values: usize,
    nodes: usize,
    /// Ordinal of the last node counted (0: none yet).
    last: usize,
}

impl Count {
    fn add(&mut self, node: usize) {
        self.values = self.values.saturating_add(1);
        if self.last != node {
            self.last = node;
            self.nodes = self.nodes.saturating_add(1);
        }
    }
}

/// A group's key: kind, before, after, index of the binding term (None: no value after).
type Key = (ItemKind, Option<u32>, Option<u32>, Option<usize>);

/// Builds a [`Digest`] one change at a time, holding one entry per group and per distinct
/// binding term. Changes must come grouped by node.
#[derive(Debug, Default)]
pub struct DigestBuilder {
    /// Binding term → index in `term_list`.
    terms: FxHashMap<String, usize>,
    /// Per index: the term and the object it reads.
    term_list: Vec<(String, Option<ObjectRef>)>,
    groups: FxHashMap<Key, Count>,
    kinds: [Count; 5],
    total: Count,
    /// The node of the last change, and its ordinal (from 1).
    node: Option<Arc<str>>,
    ordinal: usize,
}

impl DigestBuilder {
    /// Counts one change. Costs a hash look-up (and a copy of its binding term the first time
    /// that term is seen).
    ///
    /// ```
    /// # let resolver = mtu_solver::doc_cluster::resolver();
    /// use mtu_solver::whatif::DigestBuilder;
    /// let what_if = resolver.what_if(&["set SitePeering/ab=1300".parse()?])?;
    /// let mut builder = DigestBuilder::default();
    /// for change in what_if.changes.iter().filter(|c| &*c.node == "wa") {
    ///     builder.add(change);
    /// }
    /// let digest = builder.finish();
    /// assert_eq!((digest.nodes_affected, digest.values_changed), (1, 4));
    /// # Ok::<(), mtu_solver::Error>(())
    /// ```
    pub fn add(&mut self, c: &Change) {
        if self.node.as_ref() != Some(&c.node) {
            self.node = Some(c.node.clone());
            self.ordinal = self.ordinal.saturating_add(1);
        }
        let kind = ItemKind::of(&c.item);
        let term = match (&c.explanation, c.after) {
            (Some(e), Some(_)) => Some(self.term(&e.bound.term, e.bound.object.as_ref())),
            _ => None,
        };
        let n = self.ordinal;
        self.total.add(n);
        if let Some(k) = self.kinds.get_mut(kind.index()) {
            k.add(n);
        }
        self.groups
            .entry((kind, c.before, c.after, term))
            .or_default()
            .add(n);
    }

    /// The index of a binding term, interned on first sight.
    fn term(&mut self, term: &str, object: Option<&ObjectRef>) -> usize {
        if let Some(i) = self.terms.get(term) {
            return *i;
        }
        let i = self.term_list.len();
        self.term_list.push((term.to_string(), object.cloned()));
        self.terms.insert(term.to_string(), i);
        i
    }

    /// The digest of the changes counted. Costs a sort of each kind's groups.
    ///
    /// ```
    /// # let resolver = mtu_solver::doc_cluster::resolver();
    /// use mtu_solver::whatif::{Digest, DigestBuilder};
    /// assert_eq!(DigestBuilder::default().finish(), Digest::default());
    /// let what_if = resolver.what_if(&["underlay wb=1300".parse()?])?;
    /// let mut builder = DigestBuilder::default();
    /// what_if.changes.iter().for_each(|c| builder.add(c));
    /// assert_eq!(builder.finish(), Digest::of(&what_if.changes));
    /// # Ok::<(), mtu_solver::Error>(())
    /// ```
    pub fn finish(self) -> Digest {
        let mut per_kind: [Vec<Group>; 5] = Default::default();
        for ((kind, before, after, term), count) in self.groups {
            let (bound_by, object) = term
                .and_then(|i| self.term_list.get(i))
                .map(|(t, o)| (Some(t.clone()), o.clone()))
                .unwrap_or_default();
            if let Some(groups) = per_kind.get_mut(kind.index()) {
                groups.push(Group {
                    before,
                    after,
                    bound_by,
                    object,
                    nodes_affected: count.nodes,
                    values_changed: count.values,
                });
            }
        }
        let kinds = ItemKind::ALL
            .into_iter()
            .zip(per_kind)
            .zip(self.kinds)
            .filter(|(_, count)| count.values > 0)
            .map(|((kind, mut groups), count)| {
                groups.sort_by(|a, b| {
                    b.values_changed
                        .cmp(&a.values_changed)
                        .then_with(|| a.before.cmp(&b.before))
                        .then_with(|| a.after.cmp(&b.after))
                        .then_with(|| a.bound_by.cmp(&b.bound_by))
                });
                KindDigest {
                    kind,
                    nodes_affected: count.nodes,
                    values_changed: count.values,
                    groups,
                }
            })
            .collect();
        Digest {
            nodes_affected: self.total.nodes,
            values_changed: self.total.values,
            kinds,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::RouteKind;
    use crate::report::{ExplOut, TermOut};
    use crate::snapshot::Prefix;

    fn expl(term: &str, object: Option<&str>, value: u32) -> Arc<ExplOut> {
        Arc::new(ExplOut {
            bound: Arc::new(TermOut {
                term: term.to_string(),
                value,
                source: format!("{term} {value}"),
                object: object.map(|o| o.parse().unwrap()),
                field: object.map(|_| "spec.tunnelMTU".to_string()),
                location: None,
            }),
            terms: None,
        })
    }

    fn route(destination: &str) -> Item {
        Item::Route {
            destination: Prefix(destination.parse().unwrap()),
            kind: RouteKind::Gateway,
        }
    }

    fn change(node: &str, item: Item, before: Option<u32>, after: Option<u32>, by: &str) -> Change {
        let object = by.strip_suffix(" spec.tunnelMTU");
        Change {
            node: node.into(),
            item,
            before,
            after,
            explanation: after.map(|v| expl(by, object, v)),
        }
    }

    /// Two nodes: w1 with a fabric and two routes that change alike, w2 with a fabric bound
    /// by another term and a route that disappears.
    fn changes() -> Vec<Change> {
        let cap = "Site/A spec.tunnelMTU";
        vec![
            change("w1", route("10.1.0.0/16"), Some(1400), Some(1300), cap),
            change("w1", route("10.2.0.0/16"), Some(1400), Some(1300), cap),
            change("w1", Item::Fabric, Some(1400), Some(1300), cap),
            change("w2", route("10.1.0.0/16"), Some(1400), Some(1300), cap),
            change("w2", route("10.3.0.0/16"), Some(1380), None, ""),
            change("w2", Item::Fabric, Some(1400), Some(1442), "auto"),
        ]
    }

    fn group(
        before: Option<u32>,
        after: Option<u32>,
        by: Option<&str>,
        object: Option<&str>,
        nodes: usize,
        values: usize,
    ) -> Group {
        Group {
            before,
            after,
            bound_by: by.map(str::to_string),
            object: object.map(|o| o.parse().unwrap()),
            nodes_affected: nodes,
            values_changed: values,
        }
    }

    #[test]
    fn changes_group_by_kind_values_and_binding_term() {
        let d = Digest::of(&changes());
        let cap = Some("Site/A spec.tunnelMTU");
        let site = Some("Site/A");
        let want = Digest {
            nodes_affected: 2,
            values_changed: 6,
            kinds: vec![
                KindDigest {
                    kind: ItemKind::Fabric,
                    nodes_affected: 2,
                    values_changed: 2,
                    groups: vec![
                        group(Some(1400), Some(1300), cap, site, 1, 1),
                        group(Some(1400), Some(1442), Some("auto"), None, 1, 1),
                    ],
                },
                KindDigest {
                    kind: ItemKind::Route,
                    nodes_affected: 2,
                    values_changed: 4,
                    groups: vec![
                        // Three values on two nodes: w1's two routes count it once.
                        group(Some(1400), Some(1300), cap, site, 2, 3),
                        group(Some(1380), None, None, None, 1, 1),
                    ],
                },
            ],
        };
        assert_eq!(d, want);
    }

    #[test]
    fn a_kind_has_a_single_change_only_when_every_group_makes_it() {
        let d = Digest::of(&changes());
        let fabric = d.kinds.first().unwrap();
        assert_eq!(fabric.single_change(), None);
        let one = Digest::of(changes().iter().take(3));
        let kinds: Vec<_> = one
            .kinds
            .iter()
            .map(|k| (k.kind, k.single_change()))
            .collect();
        assert_eq!(
            kinds,
            [
                (ItemKind::Fabric, Some((Some(1400), Some(1300)))),
                (ItemKind::Route, Some((Some(1400), Some(1300)))),
            ]
        );
    }

    #[test]
    fn no_changes_make_an_empty_digest() {
        assert_eq!(Digest::of(&[]), Digest::default());
    }

    #[test]
    fn the_digest_serializes_with_the_names_of_the_summary() {
        let v = serde_json::to_value(Digest::of(changes().iter().skip(4))).unwrap();
        let want = serde_json::json!({
            "nodesAffected": 1,
            "valuesChanged": 2,
            "kinds": [
                {"type": "fabric", "nodesAffected": 1, "valuesChanged": 1, "groups": [
                    {"before": 1400, "after": 1442, "boundBy": "auto", "object": null,
                     "nodesAffected": 1, "valuesChanged": 1}]},
                {"type": "route", "nodesAffected": 1, "valuesChanged": 1, "groups": [
                    {"before": 1380, "after": null, "boundBy": null, "object": null,
                     "nodesAffected": 1, "valuesChanged": 1}]},
            ]
        });
        assert_eq!(v, want);
    }
}
