//! Every value that differs between two inputs, compared on a solver for each, and the changes
//! a what-if reports ([`Change`], [`WhatIf`]).

use super::classify::Difference;
use super::input::Input;
use super::reach::{change_reach, class_key};
use crate::explain::ExplId;
use crate::plan::{NodePlan, RouteKind};
use crate::report::Explanations;
use crate::report::{ExplOut, Renderer};
use crate::snapshot::{Item, Prefix, items};
use crate::solver::Solver;
use rustc_hash::FxHashSet;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::fmt;
use std::sync::Arc;
use topology_core::ids::NodeId;
use topology_core::model::{ObjRef, Topology};
use topology_core::net::{Learned, cut};

/// One changed value. Serializes as an entry of `changes` in `what-if` output.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Change {
    /// Node name.
    pub node: Arc<str>,
    /// Which value.
    pub item: Item,
    /// Before (None: it appears).
    pub before: Option<u32>,
    /// After (None: it disappears).
    pub after: Option<u32>,
    /// The explanation after (when the value exists after).
    pub explanation: Option<Arc<ExplOut>>,
}

/// How a what-if was answered: serialized as `per-value`, `near-nodes` or `all-nodes`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
#[non_exhaustive]
pub enum Strategy {
    /// Cap changes, per value: the nodes near the capped objects, and elsewhere the learned
    /// routes whose next hops' reach changed.
    PerValue,
    /// Underlay changes: the nodes around the changed nodes.
    NearNodes,
    /// Every node (links or paths may change).
    AllNodes,
}

impl Strategy {
    /// The output name: `per-value`, `near-nodes`, `all-nodes`. Costs nothing.
    ///
    /// ```
    /// # let resolver = mtu_solver::doc_cluster::resolver();
    /// use mtu_solver::whatif::Strategy;
    /// let cap = resolver.what_if(&["set SitePeering/ab=1300".parse()?])?;
    /// assert_eq!(cap.strategy.as_str(), "per-value");
    /// let underlay = resolver.what_if(&["underlay wa=1300".parse()?])?;
    /// assert_eq!(underlay.strategy.as_str(), "near-nodes");
    /// assert_eq!(Strategy::AllNodes.to_string(), Strategy::AllNodes.as_str());
    /// # Ok::<(), mtu_solver::Error>(())
    /// ```
    pub fn as_str(self) -> &'static str {
        match self {
            Strategy::PerValue => "per-value",
            Strategy::NearNodes => "near-nodes",
            Strategy::AllNodes => "all-nodes",
        }
    }
}

impl fmt::Display for Strategy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.pad(self.as_str())
    }
}

/// The result of a what-if.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct WhatIf {
    /// Changes, sorted by node then item.
    pub changes: Vec<Change>,
    /// How the answer was computed.
    pub strategy: Strategy,
    /// Plans resolved (both sides) and learned routes re-evaluated: the cost actually paid.
    pub work: usize,
}

impl WhatIf {
    /// Nodes with at least one change. Costs one pass over `changes`.
    ///
    /// ```
    /// # let resolver = mtu_solver::doc_cluster::resolver();
    /// // wa's underlay bounds the link on both of its ends.
    /// let lower = resolver.what_if(&["underlay wa=1300".parse()?])?;
    /// assert_eq!((lower.changes.len(), lower.nodes_affected()), (8, 2));
    /// let same = resolver.what_if(&["set SitePeering/ab=1400".parse()?])?;
    /// assert_eq!(same.nodes_affected(), 0);
    /// # Ok::<(), mtu_solver::Error>(())
    /// ```
    pub fn nodes_affected(&self) -> usize {
        let mut names: Vec<&str> = self.changes.iter().map(|c| &*c.node).collect();
        names.dedup();
        names.len()
    }
}

/// A value as text, `-` when it does not exist.
struct Shown(Option<u32>);

impl fmt::Display for Shown {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0 {
            Some(v) => write!(f, "{v}"),
            None => f.write_str("-"),
        }
    }
}

impl fmt::Display for Change {
    /// `NODE ITEM: BEFORE -> AFTER`, `-` for a value that does not exist, and what binds the
    /// value after: `w1 route 10.1.0.0/16 (gateway): 1400 -> 1300 (bound by ...)`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (node, item) = (&self.node, &self.item);
        let (before, after) = (Shown(self.before), Shown(self.after));
        write!(f, "{node} {item}: {before} -> {after}")?;
        match &self.explanation {
            Some(e) => write!(f, " (bound by {})", e.bound.source),
            None => Ok(()),
        }
    }
}

impl fmt::Display for WhatIf {
    /// One line per change, then how many values changed on how many nodes.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for c in &self.changes {
            writeln!(f, "{c}")?;
        }
        let (values, nodes) = (self.changes.len(), self.nodes_affected());
        let plural = |n: usize| if n == 1 { "" } else { "s" };
        write!(
            f,
            "{values} value{} changed on {nodes} node{}",
            plural(values),
            plural(nodes)
        )
    }
}

/// Every value that differs between two inputs that differ by `difference` (`classify`), on a
/// solver for each (`tb` is `base`'s topology): per value for cap changes, the nodes around a
/// node for underlay changes, every node when links or paths may change.
pub(super) fn two_inputs(
    tb: &Topology,
    base: &Input,
    after: &Input,
    difference: Difference,
    level: Explanations,
) -> WhatIf {
    let ta = after.build_topology();
    let mut sb = Solver::new(tb, base.settings.clone());
    let mut sa = Solver::new(&ta, after.settings.clone());
    match difference {
        Difference::Caps(objs) => {
            let objs: Vec<ObjRef> = objs.iter().filter_map(|(k, n)| tb.obj_ref(*k, n)).collect();
            let (changes, work) = per_value(&mut sb, &mut sa, &objs, level);
            WhatIf {
                changes,
                strategy: Strategy::PerValue,
                work,
            }
        }
        Difference::Underlays(names) => {
            let mut near: FxHashSet<NodeId> = FxHashSet::default();
            for name in &names {
                if let Some(n) = tb.node_id(name) {
                    near.insert(n);
                    for (p, _) in sb.net.link_peers(n) {
                        near.insert(p);
                    }
                }
            }
            let mut nodes: Vec<NodeId> = near.into_iter().collect();
            nodes.sort();
            let work = nodes.len().saturating_mul(2);
            let changes = diff_nodes(&mut sb, &mut sa, &nodes, &nodes, level);
            WhatIf {
                changes,
                strategy: Strategy::NearNodes,
                work,
            }
        }
        Difference::Structure => {
            let all_b: Vec<NodeId> = (0..tb.nodes.len()).map(NodeId::from_idx).collect();
            let all_a: Vec<NodeId> = (0..ta.nodes.len()).map(NodeId::from_idx).collect();
            let work = all_b.len().saturating_add(all_a.len());
            let changes = diff_nodes(&mut sb, &mut sa, &all_b, &all_a, level);
            WhatIf {
                changes,
                strategy: Strategy::AllNodes,
                work,
            }
        }
    }
}

fn diff_items(
    node: &Arc<str>,
    before: &[(Item, u32, ExplId)],
    after: &[(Item, u32, ExplId)],
    r: &mut Renderer<'_, '_>,
    out: &mut Vec<Change>,
) {
    // `items` sorts both sides: merge them.
    let (mut i, mut j) = (0, 0);
    loop {
        let (x, y) = (before.get(i), after.get(j));
        let order = match (x, y) {
            (None, None) => break,
            (Some(_), None) => std::cmp::Ordering::Less,
            (None, Some(_)) => std::cmp::Ordering::Greater,
            (Some(x), Some(y)) => x.0.cmp(&y.0),
        };
        let (item, bv, av) = match (order, x, y) {
            (std::cmp::Ordering::Less, Some(x), _) => {
                i = i.saturating_add(1);
                (&x.0, Some(x.1), None)
            }
            (std::cmp::Ordering::Greater, _, Some(y)) => {
                j = j.saturating_add(1);
                (&y.0, None, Some((y.1, y.2)))
            }
            (std::cmp::Ordering::Equal, Some(x), Some(y)) => {
                i = i.saturating_add(1);
                j = j.saturating_add(1);
                (&x.0, Some(x.1), Some((y.1, y.2)))
            }
            _ => break,
        };
        if bv == av.map(|x| x.0) {
            continue;
        }
        out.push(Change {
            node: node.clone(),
            item: item.clone(),
            before: bv,
            after: av.map(|x| x.0),
            explanation: av.and_then(|x| r.explained(x.1)),
        });
    }
}

fn diff_nodes(
    sb: &mut Solver<'_>,
    sa: &mut Solver<'_>,
    nodes_b: &[NodeId],
    nodes_a: &[NodeId],
    level: Explanations,
) -> Vec<Change> {
    let tb = sb.topo();
    let ta = sa.topo();
    let mut before: BTreeMap<Arc<str>, Vec<(Item, u32, ExplId)>> = BTreeMap::new();
    for n in nodes_b {
        let p = sb.plan(*n);
        before.insert(tb.node(*n).name.clone(), items(tb, &p));
    }
    let mut after_plans: BTreeMap<Arc<str>, NodePlan> = BTreeMap::new();
    for n in nodes_a {
        after_plans.insert(ta.node(*n).name.clone(), sa.plan(*n));
    }
    let mut r = Renderer::new(sa, level);
    let mut out = Vec::new();
    let mut names: Vec<&Arc<str>> = before.keys().chain(after_plans.keys()).collect();
    names.sort();
    names.dedup();
    let empty: Vec<(Item, u32, ExplId)> = Vec::new();
    for name in names {
        let b = before.get(name).unwrap_or(&empty);
        let a = after_plans
            .get(name)
            .map(|p| items(ta, p))
            .unwrap_or_default();
        diff_items(name, b, &a, &mut r, &mut out);
    }
    out
}

fn per_value(
    sb: &mut Solver<'_>,
    sa: &mut Solver<'_>,
    objs: &[ObjRef],
    level: Explanations,
) -> (Vec<Change>, usize) {
    let t = sb.topo();
    // Elsewhere only learned routes (and gateways' published values for them) can change.
    let (near_set, prefixes) = change_reach(sb, objs);
    let mut near_nodes: Vec<NodeId> = near_set.iter().copied().collect();
    near_nodes.sort();
    let mut work = near_nodes.len().saturating_mul(2);
    let mut changes = diff_nodes(sb, sa, &near_nodes, &near_nodes, level);
    let mut remote: Vec<(Change, Option<ExplId>)> = Vec::new();
    // Nodes that share learned routes: workers of a Site, gateways of a pool in a Site.
    let mut groups: BTreeMap<(bool, u32, u32), Vec<NodeId>> = BTreeMap::new();
    for (i, node) in t.nodes.iter().enumerate() {
        let id = NodeId::from_idx(i);
        if near_set.contains(&id) {
            continue;
        }
        groups.entry(class_key(node)).or_default().push(id);
    }
    for ((gateway, _, _), members) in groups {
        let Some(first) = members.first().copied() else {
            continue;
        };
        for prefix in &prefixes {
            let Some(l) = sb.net.learned_for(first, prefix) else {
                continue;
            };
            let changed = l.via.iter().any(|g| {
                let rb = sb.reach(*g, l.prefix, &l.origins).map(|e| sb.expl.value(e));
                let ra = sa.reach(*g, l.prefix, &l.origins).map(|e| sa.expl.value(e));
                rb != ra
            });
            if !changed {
                continue;
            }
            for n in &members {
                work = work.saturating_add(1);
                route_changes(sb, sa, *n, &l, !gateway, &mut remote);
            }
        }
    }
    let mut r = Renderer::new(sa, level);
    for (mut c, e) in remote {
        c.explanation = e.and_then(|e| r.explained(e));
        changes.push(c);
    }
    changes.sort_by(|a, b| a.node.cmp(&b.node).then_with(|| a.item.cmp(&b.item)));
    (changes, work)
}

fn route_changes(
    sb: &mut Solver<'_>,
    sa: &mut Solver<'_>,
    n: NodeId,
    l: &Learned,
    worker: bool,
    out: &mut Vec<(Change, Option<ExplId>)>,
) {
    let t = sb.topo();
    let node = t.node(n);
    let ea = sa.learned_value(n, l, worker);
    let va = ea.map(|e| sa.expl.value(e).get());
    // A node outside the near set keeps its links: only `reach` and `pubPath` differ, so the
    // value before reuses the link values just computed (no second link resolution).
    let mut vb: Option<u32> = None;
    for g in &l.via {
        let mut terms = [None, None, None];
        terms[0] = sa.link_value(n, *g).map(|e| sa.expl.value(e).get());
        terms[1] = sb
            .reach(*g, l.prefix, &l.origins)
            .map(|e| sb.expl.value(e).get());
        if worker {
            terms[2] = sb
                .pub_path(*g, l.prefix, &l.origins)
                .map(|e| sb.expl.value(e).get());
        }
        for t in terms.into_iter().flatten() {
            vb = Some(vb.map_or(t, |v| v.min(t)));
        }
    }
    if vb == va {
        return;
    }
    let locals = &t.site(node.site).local_cidrs;
    let pieces = if locals.is_empty() {
        vec![l.prefix]
    } else {
        cut(l.prefix, locals)
    };
    let kind = if worker {
        RouteKind::Gateway
    } else {
        RouteKind::Transit
    };
    let change = |item: Item| Change {
        node: node.name.clone(),
        item,
        before: vb,
        after: va,
        explanation: None,
    };
    for piece in pieces {
        out.push((
            change(Item::Route {
                destination: Prefix(piece),
                kind,
            }),
            ea,
        ));
    }
    if !worker {
        out.push((
            change(Item::Published {
                destination: Prefix(l.prefix),
            }),
            ea,
        ));
    }
}
