//! The per-value engine on one solver: cap changes answered on a solver switched to the changed
//! caps, values before recovered from the explanations after.

use super::diff::{Change, Strategy, WhatIf};
use super::reach::{change_reach, class_key, class_representatives};
use crate::explain::{ExplId, Explanations, Kind as Kind2, Leaf};
use crate::overhead::overhead;
use crate::plan::RouteKind;
use crate::report::Explanations as Level;
use crate::report::Renderer;
use crate::snapshot::{Item, Prefix, items};
use crate::solver::Solver;
use ipnet::IpNet;
use rustc_hash::{FxHashMap, FxHashSet};
use smallvec::SmallVec;
use topology_core::ids::NodeId;
use topology_core::model::{NodeInfo, ObjRef};
use topology_core::mtu::Mtu;
use topology_core::net::{Learned, cut};

/// How a change's explanation after is rendered.
#[derive(Clone, Copy)]
enum After {
    /// The whole explanation node.
    Node(ExplId),
    /// Only its binding term (the default output, when the class's rest binds strictly).
    Bound(ExplId),
}

/// A change before its explanation is rendered.
struct Pending {
    node: NodeId,
    item: Item,
    before: Option<u32>,
    after: Option<u32>,
    expl: Option<After>,
}

/// Values of explanation nodes with the replaced caps put back. A cap change keeps every
/// object, link and path, so a value considers the same terms before and after except the
/// changed caps' own: its value before is the same minimum (a maximum for devices) over its
/// terms with the caps before. Memoized by node: values share most of their explanation.
struct BeforeValues {
    caps: FxHashMap<ObjRef, Option<Mtu>>,
    memo: FxHashMap<ExplId, Option<Mtu>>,
}

impl BeforeValues {
    fn value(&mut self, x: &Explanations, id: ExplId) -> Option<Mtu> {
        if let Some(v) = self.memo.get(&id) {
            return *v;
        }
        let node = x.get(id);
        let v = match &node.kind {
            Kind2::Leaf(Leaf::Cap { obj }) => match self.caps.get(obj) {
                Some(before) => *before,
                None => Some(node.value),
            },
            Kind2::Leaf(_) => Some(node.value),
            Kind2::Min(kids) => kids.iter().filter_map(|k| self.value(x, *k)).min(),
            Kind2::Max(kids) => kids.iter().filter_map(|k| self.value(x, *k)).max(),
            Kind2::Link { inner, .. } => self.value(x, *inner),
        };
        self.memo.insert(id, v);
        v
    }
}

/// A changed learned route of a class (remote nodes): what its members need.
struct RemoteRoute {
    learned: Learned,
    gateway: bool,
    /// Rest before and after (values), rest after (explanation).
    rest_before: Option<u32>,
    rest_after: Option<u32>,
    rest_after_expl: Option<ExplId>,
    /// Per next hop (the class representative's links; every member's links to a next hop
    /// share the protocol, the peer's address and the caps).
    hops: SmallVec<[RemoteHop; 4]>,
    /// Installed pieces (`localCidrs` cut out).
    pieces: Vec<ipnet::IpNet>,
}

impl RemoteRoute {
    /// The values a member has for this route: one per installed piece, and the published
    /// value on a gateway.
    fn items(&self) -> usize {
        self.pieces.len().saturating_add(usize::from(self.gateway))
    }
}

/// A next hop of a remote route.
struct RemoteHop {
    peer: NodeId,
    protocol: topology_core::vocab::Protocol,
    /// The link crosses public addresses (which addresses its ends use).
    public: bool,
    /// The value of the link's configured caps.
    caps: Option<u32>,
}

fn min_opt(a: Option<u32>, b: Option<u32>) -> Option<u32> {
    match (a, b) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    }
}

/// Per value, on one solver switched to the changed caps: the near nodes are planned once
/// (values before come from their explanations, [`BeforeValues`]), and elsewhere only learned
/// routes towards the destinations the change can reach are evaluated, by value
/// (`min(links, rest)`: a remote node's links do not change). Changes come out in node order.
pub(super) fn per_value_shared(
    s: &mut Solver<'_>,
    caps: &[(ObjRef, Option<Mtu>)],
    level: Level,
) -> WhatIf {
    let t = s.topo();
    let objs: Vec<ObjRef> = caps.iter().map(|(o, _)| *o).collect();
    let (near_set, prefixes) = change_reach(s, &objs);
    let mut before = BeforeValues {
        caps: objs
            .iter()
            .map(|o| (*o, t.cap_of(*o).map(|c| c.mtu)))
            .collect(),
        memo: FxHashMap::default(),
    };
    let mut near_nodes: Vec<NodeId> = near_set.iter().copied().collect();
    near_nodes.sort();
    // Values before come from the explanations after only when every changed cap has a term
    // after (it is set). A cap that is cleared has none: resolve those values on the base caps.
    let from_terms = caps.iter().all(|(_, v)| v.is_some());
    let mut recorded = Recorded::default();
    if !from_terms {
        recorded = record_before(s, &near_nodes, &near_set, &prefixes);
    }
    // `cap_replacements` names no Site or SitePeering, so this cannot be refused.
    let restore = s.set_caps(caps).unwrap_or_default();
    let mut work = near_set.len();
    let mut near = near_changes(s, &near_nodes, &mut recorded.near, &mut before);
    let rest_before = if from_terms {
        RestBefore::FromTerms(&mut before)
    } else {
        RestBefore::Recorded(&recorded.rest)
    };
    let classes = remote_classes(s, &near_set, &prefixes, rest_before);
    // Every node in order (node IDs order like names), into a vector sized once: tens of
    // thousands of changes would otherwise be copied at every doubling.
    let bound = near
        .values()
        .map(Vec::len)
        .chain(t.nodes.iter().map(|n| classes.changes_bound(n)))
        .fold(0, usize::saturating_add);
    let mut pending: Vec<Pending> = Vec::with_capacity(bound);
    for (i, node) in t.nodes.iter().enumerate() {
        let id = NodeId::from_idx(i);
        if let Some(ch) = near.remove(&id) {
            pending.extend(ch);
            continue;
        }
        let Some(routes) = classes.of(node) else {
            continue;
        };
        work = work.saturating_add(routes.len());
        remote_changes(s, id, routes, level, &mut pending);
    }
    // Back on the base caps; explanations stay valid (the arena only grows).
    let _ = s.set_caps(&restore);
    WhatIf {
        changes: render(s, pending, level),
        strategy: Strategy::PerValue,
        work,
    }
}

/// Values on the base caps, recorded before the solver switches to the changed caps (when
/// they cannot come from the explanations after).
#[derive(Default)]
struct Recorded {
    /// Every value of each near node.
    near: FxHashMap<NodeId, FxHashMap<Item, u32>>,
    /// The rest of each class representative's learned route, by prefix.
    rest: FxHashMap<(NodeId, IpNet), Option<u32>>,
}

/// Where the rests before of remote routes come from.
enum RestBefore<'a> {
    /// The explanations after, with the caps before put back.
    FromTerms(&'a mut BeforeValues),
    /// Values recorded on the base caps.
    Recorded(&'a FxHashMap<(NodeId, IpNet), Option<u32>>),
}

/// Records the values of the near nodes and the rests of the class representatives' routes
/// towards `prefixes`, on the base caps.
fn record_before(
    s: &mut Solver<'_>,
    near_nodes: &[NodeId],
    near_set: &FxHashSet<NodeId>,
    prefixes: &[IpNet],
) -> Recorded {
    let t = s.topo();
    let mut recorded = Recorded::default();
    for n in near_nodes {
        let p = s.plan(*n);
        let values = items(t, &p).into_iter().map(|(i, v, _)| (i, v)).collect();
        recorded.near.insert(*n, values);
    }
    for (key, first) in class_representatives(t, near_set) {
        for prefix in prefixes {
            if let Some(l) = s.net.learned_for(first, prefix) {
                let rb = s
                    .route_rest(&l, !key.0, None)
                    .map(|e| s.expl.value(e).get());
                recorded.rest.insert((first, *prefix), rb);
            }
        }
    }
    recorded
}

/// The changes of the near nodes: planned after, values before from the explanations (or
/// from `recorded`, which this empties).
fn near_changes(
    s: &mut Solver<'_>,
    near_nodes: &[NodeId],
    recorded: &mut FxHashMap<NodeId, FxHashMap<Item, u32>>,
    before: &mut BeforeValues,
) -> FxHashMap<NodeId, Vec<Pending>> {
    let t = s.topo();
    let mut near_changes: FxHashMap<NodeId, Vec<Pending>> = FxHashMap::default();
    for n in near_nodes {
        let p = s.plan(*n);
        let mut out = Vec::new();
        let values_before = recorded.remove(n);
        for (item, v, e) in items(t, &p) {
            let b = match &values_before {
                Some(vb) => vb.get(&item).copied(),
                None => before.value(&s.expl, e).map(|m| m.get()),
            };
            if b != Some(v) {
                out.push(Pending {
                    node: *n,
                    item,
                    before: b,
                    after: Some(v),
                    expl: Some(After::Node(e)),
                });
            }
        }
        near_changes.insert(*n, out);
    }
    near_changes
}

/// Remote nodes share learned routes by class: workers of a Site, gateways of a pool in a
/// Site. Per class (indexed by its key), the routes towards the reachable destinations whose
/// rest changed.
fn remote_classes(
    s: &mut Solver<'_>,
    near_set: &FxHashSet<NodeId>,
    prefixes: &[IpNet],
    mut rest_before_of: RestBefore<'_>,
) -> RemoteClasses {
    let t = s.topo();
    let mut class_of: FxHashMap<(bool, u32, u32), usize> = FxHashMap::default();
    let mut classes: Vec<Vec<RemoteRoute>> = Vec::new();
    let mut bounds: Vec<usize> = Vec::new();
    for (key, id) in class_representatives(t, near_set) {
        let node = t.node(id);
        class_of.insert(key, classes.len());
        let gateway = key.0;
        let mut routes = Vec::new();
        for prefix in prefixes {
            let Some(l) = s.net.learned_for(id, prefix) else {
                continue;
            };
            let rest_after_expl = s.route_rest(&l, !gateway, None);
            let rest_after = rest_after_expl.map(|e| s.expl.value(e).get());
            let rest_before = match &mut rest_before_of {
                RestBefore::FromTerms(before) => rest_after_expl
                    .and_then(|e| before.value(&s.expl, e))
                    .map(|m| m.get()),
                RestBefore::Recorded(rest) => rest.get(&(id, *prefix)).copied().flatten(),
            };
            if rest_before == rest_after {
                continue;
            }
            let mut hops: SmallVec<[RemoteHop; 4]> = SmallVec::new();
            for g in &l.via {
                let Some(kind) = s.net.link_kind(id, *g) else {
                    continue;
                };
                let (protocol, _, public) = s.net.link_protocol(id, *g, kind);
                let caps = s.link_caps(id, *g, kind).map(|e| s.expl.value(e).get());
                hops.push(RemoteHop {
                    peer: *g,
                    protocol,
                    public,
                    caps,
                });
            }
            let locals = &t.site(node.site).local_cidrs;
            let pieces = if locals.is_empty() {
                vec![l.prefix]
            } else {
                cut(l.prefix, locals)
            };
            routes.push(RemoteRoute {
                learned: l,
                gateway,
                rest_before,
                rest_after,
                rest_after_expl,
                hops,
                pieces,
            });
        }
        bounds.push(
            routes
                .iter()
                .map(RemoteRoute::items)
                .fold(0, usize::saturating_add),
        );
        classes.push(routes);
    }
    RemoteClasses {
        index: class_of,
        routes: classes,
        bounds,
    }
}

/// The changed routes of each class of remote nodes.
struct RemoteClasses {
    /// Class key ([`class_key`]) to index in `routes`.
    index: FxHashMap<(bool, u32, u32), usize>,
    routes: Vec<Vec<RemoteRoute>>,
    /// Per class, the most changes a member can have ([`RemoteRoute::items`] summed).
    bounds: Vec<usize>,
}

impl RemoteClasses {
    /// The changed routes of the class of `node` (None for a near node).
    fn of(&self, node: &NodeInfo) -> Option<&[RemoteRoute]> {
        let i = self.index.get(&class_key(node))?;
        self.routes.get(*i).map(Vec::as_slice)
    }

    /// The most changes a member of `node`'s class can have (0 when no class of remote nodes
    /// has its key).
    fn changes_bound(&self, node: &NodeInfo) -> usize {
        self.index
            .get(&class_key(node))
            .and_then(|i| self.bounds.get(*i))
            .copied()
            .unwrap_or(0)
    }
}

/// The values of a remote member's links to the next hops of its changed routes, their caps
/// left out: the smaller underlay less the overhead of the link's protocol and outer family,
/// the pair's probed path MTU less the same overhead, and the member's configured MTU. The changed routes of a member share their next hops, so
/// each hop is computed once per member.
struct MemberLinks {
    id: NodeId,
    cfg: u32,
    underlay: topology_core::mtu::UnderlayMtu,
    /// (peer, public, protocol) → value.
    seen: SmallVec<[(NodeId, bool, topology_core::vocab::Protocol, u32); 8]>,
}

impl MemberLinks {
    fn new(s: &mut Solver<'_>, id: NodeId) -> Self {
        Self {
            id,
            cfg: s.cfg_of(id),
            underlay: s.underlay(id).0,
            seen: SmallVec::new(),
        }
    }

    fn value(&mut self, s: &mut Solver<'_>, h: &RemoteHop) -> u32 {
        let key = (h.peer, h.public, h.protocol);
        if let Some(x) = self.seen.iter().find(|x| (x.0, x.1, x.2) == key) {
            return x.3;
        }
        let (ug, _) = s.underlay(h.peer);
        // The outer family also depends on this member's own addresses on the link.
        let o = overhead(h.protocol, s.net.link_ipv6_outer(self.id, h.peer, h.public));
        let mut v = self.underlay.min(ug).minus_overhead(o).get();
        // The pair's probed path MTU bounds the link as its own term (D13).
        if let Some(p) = s.topo().path_mtu(self.id, h.peer) {
            let path = topology_core::mtu::UnderlayMtu::or_min(p.mtu).minus_overhead(o);
            v = v.min(path.get());
        }
        if self.cfg > 0 {
            v = v.min(self.cfg);
        }
        self.seen.push((h.peer, h.public, h.protocol, v));
        v
    }
}

/// Appends the changes of remote node `id`, a member of the class whose changed routes are
/// `routes`: per route `min(links, rest)` before and after, its own links computed by value.
fn remote_changes(
    s: &mut Solver<'_>,
    id: NodeId,
    routes: &[RemoteRoute],
    level: Level,
    pending: &mut Vec<Pending>,
) {
    let start = pending.len();
    let mut own = MemberLinks::new(s, id);
    for r in routes {
        let mut links: Option<u32> = None;
        for h in &r.hops {
            let mut v = own.value(s, h);
            if let Some(c) = h.caps {
                v = v.min(c);
            }
            links = Some(links.map_or(v, |x| x.min(v)));
        }
        let (vb, va) = (min_opt(links, r.rest_before), min_opt(links, r.rest_after));
        if vb == va {
            continue;
        }
        let after = if level == Level::None {
            None
        } else {
            match (r.rest_after_expl, r.rest_after, links) {
                (Some(e), Some(ra), Some(lv)) if level != Level::Full && ra < lv => {
                    Some(After::Bound(s.expl.get(e).bound))
                }
                _ => {
                    let le = s.via_links(id, &r.learned.via, None);
                    match (le, r.rest_after_expl) {
                        (Some(a), Some(b)) => s.expl.min(&[a, b]),
                        (a, b) => a.or(b),
                    }
                    .map(After::Node)
                }
            }
        };
        let kind = if r.gateway {
            RouteKind::Transit
        } else {
            RouteKind::Gateway
        };
        let mut change = |item: Item| {
            pending.push(Pending {
                node: id,
                item,
                before: vb,
                after: va,
                expl: after,
            })
        };
        for piece in &r.pieces {
            change(Item::Route {
                destination: Prefix(*piece),
                kind,
            });
        }
        if r.gateway {
            change(Item::Published {
                destination: Prefix(r.learned.prefix),
            });
        }
    }
    if let Some(mine) = pending.get_mut(start..) {
        mine.sort_by(|a, b| a.item.cmp(&b.item));
    }
}

/// The changes with their explanations after rendered.
fn render(s: &Solver<'_>, pending: Vec<Pending>, level: Level) -> Vec<Change> {
    let t = s.topo();
    let mut r = Renderer::new(s, level);
    pending
        .into_iter()
        .map(|p| Change {
            node: t.node(p.node).name.clone(),
            item: p.item,
            before: p.before,
            after: p.after,
            explanation: match p.expl {
                Some(After::Node(id)) => r.explained(id),
                Some(After::Bound(x)) => r.explained_by(x),
                None => None,
            },
        })
        .collect()
}
