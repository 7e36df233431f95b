//! Explanations: every resolved value points at an interned explanation node.
//! Leaves are terms (a cap, the agent's `mtu`, an underlay minus an overhead, a published
//! value); inner nodes are minimums (links, routes, the fabric) or maximums (shared devices) of
//! other nodes. Nodes are interned structurally, so explanations cost memory per distinct
//! explanation, not per value, and rendering one reproduces its arithmetic.

mod chunked;
mod words;

use chunked::Chunked;
use ipnet::IpNet;
use smallvec::SmallVec;
use topology_core::ids::{NodeId, SiteId};
use topology_core::model::{ObjRef, Topology};
use topology_core::mtu::Mtu;
use topology_core::vocab::Protocol;
pub(crate) use words::path_words;

/// An interned explanation node.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ExplId(pub u32);

/// Where an underlay value came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum UnderlaySource {
    /// The node's `underlay-mtu` annotation.
    Annotation,
    /// The node's `underlay-mtu-max` annotation bound it.
    Max,
    /// The default (`--underlay-mtu`, or the agent's own detected value).
    Default,
    /// Given explicitly (detected by the agent, or a what-if).
    Override,
    /// An invalid annotation, counted as 576.
    Invalid,
}

impl UnderlaySource {
    /// How explanations name it after the value, e.g. ` (default)`.
    pub(crate) fn note(self) -> &'static str {
        match self {
            UnderlaySource::Annotation => " (annotation)",
            UnderlaySource::Max => " (underlay-mtu-max)",
            UnderlaySource::Default => " (default)",
            UnderlaySource::Override => " (given)",
            UnderlaySource::Invalid => " (invalid annotation, counted as 576)",
        }
    }
}

/// A term: one bound that was considered.
///
/// Terms are ordered by kind (in the order declared here), then by what they name: on equal
/// values, the first term in that order binds (see [`Explanations::min`]).
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Leaf {
    /// The agent's configured `mtu` on a node.
    Cfg {
        /// The node.
        node: NodeId,
    },
    /// `min(U(a), U(b)) − O(P)`: the end with the lower underlay is named.
    Auto {
        /// The end whose underlay binds.
        node: NodeId,
        /// Its underlay MTU.
        underlay: u32,
        /// Where that underlay came from.
        source: UnderlaySource,
        /// The link's protocol.
        protocol: Protocol,
        /// Its overhead.
        overhead: u32,
        /// The overhead is the IPv6-outer column.
        ipv6_outer: bool,
    },
    /// The probed path MTU of a pair minus the link's overhead (D13): `P(a,b) − O`.
    Path {
        /// The pair's lower end (node IDs order like names), so both ends name one term.
        a: NodeId,
        /// The pair's higher end.
        b: NodeId,
        /// The node whose `path-mtu` annotation holds the value.
        by: NodeId,
        /// The path MTU (576 when the written value was invalid).
        mtu: u32,
        /// The written value was invalid (fails closed to 576).
        invalid: bool,
        /// The link's protocol.
        protocol: Protocol,
        /// Its overhead.
        overhead: u32,
        /// The overhead is the IPv6-outer column.
        ipv6_outer: bool,
    },
    /// A node's own underlay (minus an overhead when one applies).
    Underlay {
        /// The node.
        node: NodeId,
        /// Its underlay MTU.
        underlay: u32,
        /// Where it came from.
        source: UnderlaySource,
        /// The encapsulation subtracted, if any.
        minus: Option<Minus>,
    },
    /// An object's own `tunnelMTU`.
    Cap {
        /// The object.
        obj: ObjRef,
    },
    /// A direct-mesh component cap: the lowest cap in `site`'s component, bound by `obj`.
    Comp {
        /// The Site whose component it is.
        site: SiteId,
        /// The object whose cap binds the component.
        obj: ObjRef,
    },
    /// What a gateway published for a prefix.
    Published {
        /// The gateway.
        gateway: NodeId,
        /// The (uncut) prefix.
        prefix: IpNet,
    },
}

/// An encapsulation overhead subtracted from an underlay.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Minus {
    /// The protocol.
    pub protocol: Protocol,
    /// Its overhead in bytes.
    pub overhead: u32,
    /// The overhead is the IPv6-outer column.
    pub ipv6_outer: bool,
}

/// How a node combines.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Kind {
    /// A term.
    Leaf(Leaf),
    /// The minimum of its children.
    Min(SmallVec<[ExplId; 4]>),
    /// The maximum of its children.
    Max(SmallVec<[ExplId; 4]>),
    /// A link's MTU as one term of a device (a maximum): its own explanation is `inner`.
    Link {
        /// The node the device is on.
        node: NodeId,
        /// The link's other end.
        peer: NodeId,
        /// The link MTU's explanation.
        inner: ExplId,
    },
}

/// An explanation node with its value and the leaf that binds it.
#[derive(Clone, Debug)]
pub struct Node {
    /// The value.
    pub value: Mtu,
    /// The leaf that bound it.
    pub bound: ExplId,
    /// Structure.
    pub kind: Kind,
}

/// The arena of interned explanations.
#[derive(Default)]
pub struct Explanations {
    nodes: Chunked<Node>,
    /// Interning index: the IDs of interned nodes, hashed by (kind, value); the kinds themselves
    /// live once, in `nodes` (4 bytes per entry keeps the table small and cache-friendly).
    index: hashbrown::HashTable<(u64, ExplId)>,
    /// Minimums of two nodes (the common case: a node's links and a class's rest of a route),
    /// interned by their children alone.
    pairs: rustc_hash::FxHashMap<(ExplId, ExplId), ExplId>,
}

impl std::fmt::Debug for Explanations {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Explanations")
            .field("nodes", &self.nodes.iter().collect::<Vec<_>>())
            .finish_non_exhaustive()
    }
}

fn hash_of(kind: &Kind, value: Mtu) -> u64 {
    use std::hash::{Hash, Hasher};
    let mut h = rustc_hash::FxHasher::default();
    kind.hash(&mut h);
    value.hash(&mut h);
    h.finish()
}

impl Explanations {
    /// Number of distinct explanation nodes. Costs nothing: the count is kept.
    ///
    /// ```
    /// # use mtu_solver::explain::{Explanations, Leaf};
    /// # use mtu_solver::topology_core::{ids::NodeId, mtu::Mtu};
    /// let mut arena = Explanations::default();
    /// let cfg = Leaf::Cfg { node: NodeId(0) };
    /// arena.leaf(cfg.clone(), Mtu::MIN);
    /// arena.leaf(cfg, Mtu::MIN); // the same term again: interned, not added
    /// assert_eq!(arena.len(), 1);
    /// ```
    pub fn len(&self) -> usize {
        self.nodes.len()
    }

    /// Whether empty. Costs nothing: the count is kept.
    ///
    /// ```
    /// # use mtu_solver::explain::{Explanations, Leaf};
    /// # use mtu_solver::topology_core::{ids::NodeId, mtu::Mtu};
    /// let mut arena = Explanations::default();
    /// assert!(arena.is_empty());
    /// arena.leaf(Leaf::Cfg { node: NodeId(0) }, Mtu::MIN);
    /// assert!(!arena.is_empty());
    /// ```
    pub fn is_empty(&self) -> bool {
        self.nodes.is_empty()
    }

    /// A node (IDs come from this arena; another arena's ID may panic). Costs an index.
    ///
    /// ```
    /// # let resolver = mtu_solver::doc_cluster::resolver();
    /// let link = resolver.with_solver(|solver| {
    ///     let wa = solver.topo().find_node("wa").expect("wa");
    ///     let mtu = solver.plan(wa).links[0].mtu;
    ///     let node = solver.explanations().get(mtu.expl);
    ///     (node.value, solver.explanations().term_name(node.bound, solver.topo()))
    /// });
    /// assert_eq!((link.0.get(), &*link.1), (1400, "SitePeering/ab spec.tunnelMTU"));
    /// ```
    #[allow(clippy::indexing_slicing)]
    pub fn get(&self, id: ExplId) -> &Node {
        &self.nodes[id.0 as usize]
    }

    /// The value of a node. Costs an index.
    ///
    /// ```
    /// # let resolver = mtu_solver::doc_cluster::resolver();
    /// resolver.with_solver(|solver| {
    ///     let wa = solver.topo().find_node("wa").expect("wa");
    ///     let fabric = solver.plan(wa).fabric;
    ///     assert_eq!(solver.explanations().value(fabric.expl), fabric.mtu);
    ///     assert_eq!(fabric.mtu.get(), 1400);
    /// });
    /// ```
    pub fn value(&self, id: ExplId) -> Mtu {
        self.get(id).value
    }

    fn intern(&mut self, kind: Kind, value: Mtu, bound: Option<ExplId>) -> ExplId {
        let Explanations { nodes, index, .. } = self;
        let hash = hash_of(&kind, value);
        let found = index.find(hash, |(h, id)| {
            *h == hash
                && nodes
                    .get(id.0 as usize)
                    .is_some_and(|n| n.value == value && n.kind == kind)
        });
        if let Some((_, id)) = found {
            return *id;
        }
        let id = ExplId(u32::try_from(nodes.len()).unwrap_or(u32::MAX));
        nodes.push(Node {
            value,
            bound: bound.unwrap_or(id),
            kind,
        });
        index.insert_unique(hash, (hash, id), |(h, _)| *h);
        id
    }

    /// Adds a node known to be new without interning it (link terms of devices: one per link,
    /// never shared).
    fn push(&mut self, kind: Kind, value: Mtu) -> ExplId {
        let id = ExplId(u32::try_from(self.nodes.len()).unwrap_or(u32::MAX));
        self.nodes.push(Node {
            value,
            bound: id,
            kind,
        });
        id
    }

    /// Interns a term with its value: the same term with the same value is the same node. Costs a
    /// hash look-up (and a push when the term is new).
    ///
    /// ```
    /// # use mtu_solver::explain::{Explanations, Leaf};
    /// # use mtu_solver::topology_core::{ids::NodeId, mtu::Mtu};
    /// let mut arena = Explanations::default();
    /// let cfg = |n| Leaf::Cfg { node: NodeId(n) };
    /// let a = arena.leaf(cfg(0), Mtu::MIN);
    /// assert_eq!(arena.leaf(cfg(0), Mtu::MIN), a, "interned");
    /// assert_ne!(arena.leaf(cfg(1), Mtu::MIN), a, "another node's term");
    /// assert_eq!(arena.get(a).bound, a, "a term binds itself");
    /// ```
    pub fn leaf(&mut self, leaf: Leaf, value: Mtu) -> ExplId {
        self.intern(Kind::Leaf(leaf), value, None)
    }

    /// The minimum of `children` (None when there are none). One child is returned as is.
    /// Costs a sort of `children` and a look-up (and a push when the minimum is new).
    ///
    /// ```
    /// # use mtu_solver::explain::{Explanations, Leaf};
    /// # use mtu_solver::topology_core::{ids::NodeId, mtu::Mtu};
    /// # let mtu = |v| Mtu::cap(v).expect("a cap in range");
    /// let mut arena = Explanations::default();
    /// let low = arena.leaf(Leaf::Cfg { node: NodeId(0) }, mtu(1300));
    /// let high = arena.leaf(Leaf::Cfg { node: NodeId(1) }, mtu(1400));
    /// let both = arena.min(&[high, low]).expect("two children");
    /// assert_eq!((arena.value(both).get(), arena.get(both).bound), (1300, low));
    /// assert_eq!(arena.min(&[high, low]), Some(both), "interned");
    /// assert_eq!((arena.min(&[high]), arena.min(&[])), (Some(high), None));
    /// ```
    pub fn min(&mut self, children: &[ExplId]) -> Option<ExplId> {
        self.combine(children, false)
    }

    /// The minimum of `first` and `others` (always exists).
    pub(crate) fn min_with(&mut self, first: ExplId, others: &[ExplId]) -> ExplId {
        let mut all: SmallVec<[ExplId; 8]> =
            SmallVec::with_capacity(others.len().saturating_add(1));
        all.push(first);
        all.extend_from_slice(others);
        self.min(&all).unwrap_or(first)
    }

    /// `min(a, b)` made as a new node, without looking it up: for pairs the caller deduplicates
    /// itself (a node's route explanations). Same value, bound and terms as [`Self::min`].
    /// Costs a push (none when `a == b`).
    ///
    /// ```
    /// # use mtu_solver::explain::{Explanations, Leaf};
    /// # use mtu_solver::topology_core::{ids::NodeId, mtu::Mtu};
    /// # let mtu = |v| Mtu::cap(v).expect("a cap in range");
    /// let mut arena = Explanations::default();
    /// let low = arena.leaf(Leaf::Cfg { node: NodeId(0) }, mtu(1300));
    /// let high = arena.leaf(Leaf::Cfg { node: NodeId(1) }, mtu(1400));
    /// let pair = arena.min_pair(high, low);
    /// let looked_up = arena.min(&[high, low]).expect("two children");
    /// assert_ne!(pair, looked_up, "made anew");
    /// assert_eq!(arena.get(pair).bound, arena.get(looked_up).bound);
    /// assert_eq!((arena.value(pair).get(), arena.min_pair(low, low)), (1300, low));
    /// ```
    pub fn min_pair(&mut self, a: ExplId, b: ExplId) -> ExplId {
        if a == b {
            return a;
        }
        let (na, nb) = (self.get(a), self.get(b));
        let ca = (na.value, na.bound);
        let cb = (nb.value, nb.bound);
        let (value, bound) = if self.binds_before(cb, ca) { cb } else { ca };
        let mut kids: SmallVec<[ExplId; 4]> = smallvec::smallvec![a, b];
        kids.sort_unstable();
        self.push_node(Node {
            value,
            bound,
            kind: Kind::Min(kids),
        })
    }

    fn push_node(&mut self, node: Node) -> ExplId {
        let id = ExplId(u32::try_from(self.nodes.len()).unwrap_or(u32::MAX));
        self.nodes.push(node);
        id
    }

    /// The link from `node` to `peer` whose MTU is explained by `inner`, as a device term:
    /// appended without a lookup (one per link of a plan; the solver reuses them on re-plans).
    /// Costs a push.
    ///
    /// ```
    /// # use mtu_solver::explain::{Explanations, Leaf};
    /// # use mtu_solver::topology_core::{ids::NodeId, mtu::Mtu};
    /// let mut arena = Explanations::default();
    /// let inner = arena.leaf(Leaf::Cfg { node: NodeId(0) }, Mtu::MIN);
    /// let link = arena.link(NodeId(0), NodeId(1), inner);
    /// assert_eq!(arena.value(link), arena.value(inner));
    /// assert_ne!(arena.link(NodeId(0), NodeId(1), inner), link, "one node per call");
    /// ```
    pub fn link(&mut self, node: NodeId, peer: NodeId, inner: ExplId) -> ExplId {
        let value = self.value(inner);
        self.push(Kind::Link { node, peer, inner }, value)
    }

    /// The maximum of `children` (None when there are none), bound by the highest child (the first
    /// on ties). Costs a sort of `children` and a look-up (and a push when the maximum is new).
    ///
    /// ```
    /// # use mtu_solver::explain::{Explanations, Leaf};
    /// # use mtu_solver::topology_core::{ids::NodeId, mtu::Mtu};
    /// # let mtu = |v| Mtu::cap(v).expect("a cap in range");
    /// let mut arena = Explanations::default();
    /// let low = arena.leaf(Leaf::Cfg { node: NodeId(0) }, mtu(1300));
    /// let high = arena.leaf(Leaf::Cfg { node: NodeId(1) }, mtu(1400));
    /// let to_b = arena.link(NodeId(0), NodeId(1), low);
    /// let to_c = arena.link(NodeId(0), NodeId(2), high);
    /// let device = arena.max(&[to_b, to_c]).expect("two links");
    /// assert_eq!((arena.value(device).get(), arena.get(device).bound), (1400, to_c));
    /// ```
    pub fn max(&mut self, children: &[ExplId]) -> Option<ExplId> {
        self.combine(children, true)
    }

    fn combine(&mut self, children: &[ExplId], max: bool) -> Option<ExplId> {
        // Most calls combine one term, or the same term twice: nothing to make.
        match children {
            [] => return None,
            [a] => return Some(*a),
            [a, b] if a == b => return Some(*a),
            _ => {}
        }
        let mut kids: SmallVec<[ExplId; 4]> = SmallVec::from_slice(children);
        kids.sort_unstable();
        kids.dedup();
        if kids.len() <= 1 {
            return kids.first().copied();
        }
        let pair = match kids.as_slice() {
            [a, b] if !max => Some((*a, *b)),
            _ => None,
        };
        if let Some(p) = pair
            && let Some(id) = self.pairs.get(&p)
        {
            return Some(*id);
        }
        // The binding child. A minimum takes the lowest (value, bound term), terms in their own
        // order ([`Leaf`]): whatever the nesting, so `min(a, min(b, c))` and `min(a, b, c)` name
        // the same term (route explanations are built nested, from shared parts), and whatever
        // else the arena holds, so a node's explanations do not depend on which nodes were
        // resolved before it. A maximum (a device) takes the highest value, first link on ties.
        let mut best: Option<(Mtu, ExplId)> = None;
        for k in &kids {
            let node = self.get(*k);
            let cand = if max {
                (node.value, *k)
            } else {
                (node.value, node.bound)
            };
            best = match best {
                None => Some(cand),
                Some(b) => {
                    let better = if max {
                        cand.0 > b.0
                    } else {
                        self.binds_before(cand, b)
                    };
                    Some(if better { cand } else { b })
                }
            };
        }
        let (value, bound) = best?;
        if let Some(p) = pair {
            // Every two-child minimum is made here: the pair index alone interns them.
            let id = ExplId(u32::try_from(self.nodes.len()).unwrap_or(u32::MAX));
            self.nodes.push(Node {
                value,
                bound,
                kind: Kind::Min(kids),
            });
            self.pairs.insert(p, id);
            return Some(id);
        }
        let kind = if max {
            Kind::Max(kids)
        } else {
            Kind::Min(kids)
        };
        Some(self.intern(kind, value, Some(bound)))
    }

    /// Every leaf under `id` (deduplicated), in a stable order: value, then the order of terms.
    /// Costs a walk of the nodes under `id` and a sort of its leaves.
    ///
    /// ```
    /// # let resolver = mtu_solver::doc_cluster::resolver();
    /// let (first_binds, terms) = resolver.with_solver(|solver| {
    ///     let wa = solver.topo().find_node("wa").expect("wa");
    ///     let link = solver.plan(wa).links[0].mtu.expl;
    ///     let arena = solver.explanations();
    ///     let leaves = arena.leaves(link);
    ///     let name = |t: &_| (arena.term_name(*t, solver.topo()), arena.value(*t).get());
    ///     (leaves[0] == arena.get(link).bound, leaves.iter().map(name).collect::<Vec<_>>())
    /// });
    /// // The peering's own cap, the direct-mesh component's cap it binds, and the auto term.
    /// let cap = "SitePeering/ab spec.tunnelMTU".to_string();
    /// assert_eq!(terms, [(cap.clone(), 1400), (cap, 1400), ("auto".to_string(), 1442)]);
    /// assert!(first_binds);
    /// ```
    pub fn leaves(&self, id: ExplId) -> Vec<ExplId> {
        let mut out: Vec<ExplId> = Vec::new();
        let mut stack = vec![id];
        let mut seen = rustc_hash::FxHashSet::default();
        while let Some(x) = stack.pop() {
            if !seen.insert(x) {
                continue;
            }
            match &self.get(x).kind {
                Kind::Leaf(_) | Kind::Link { .. } => out.push(x),
                Kind::Min(k) => stack.extend(k.iter().copied()),
                Kind::Max(k) => out.extend(k.iter().copied()),
            }
        }
        out.sort_by(|a, b| self.term_order(*a, *b));
        out.dedup();
        out
    }

    /// Whether `leaf` is `id` or among its [`Explanations::leaves`], without collecting them:
    /// under its minimums (a maximum's children are leaves as they are). Each minimum is
    /// looked into once.
    pub(crate) fn has_leaf(&self, id: ExplId, leaf: ExplId) -> bool {
        if id == leaf {
            return true;
        }
        let mut stack: SmallVec<[ExplId; 8]> = SmallVec::new();
        stack.push(id);
        let mut seen: SmallVec<[ExplId; 8]> = SmallVec::new();
        while let Some(x) = stack.pop() {
            match &self.get(x).kind {
                Kind::Leaf(_) | Kind::Link { .. } => {}
                Kind::Max(k) => {
                    if k.contains(&leaf) {
                        return true;
                    }
                }
                Kind::Min(k) => {
                    for c in k.iter() {
                        match self.get(*c).kind {
                            Kind::Leaf(_) | Kind::Link { .. } => {
                                if *c == leaf {
                                    return true;
                                }
                            }
                            Kind::Min(_) | Kind::Max(_) => {
                                if !seen.contains(c) {
                                    seen.push(*c);
                                    stack.push(*c);
                                }
                            }
                        }
                    }
                }
            }
        }
        false
    }

    /// Whether term `a` binds before term `b`, each with its value: the lower value, then the
    /// term first in the order of terms.
    fn binds_before(&self, a: (Mtu, ExplId), b: (Mtu, ExplId)) -> bool {
        match a.0.cmp(&b.0) {
            std::cmp::Ordering::Equal => self.term_order(a.1, b.1).is_lt(),
            o => o.is_lt(),
        }
    }

    /// Two terms (leaves or a device's links) by value, then by what they are: an order that
    /// does not depend on when they were interned.
    pub(crate) fn term_order(&self, a: ExplId, b: ExplId) -> std::cmp::Ordering {
        if a == b {
            return std::cmp::Ordering::Equal;
        }
        let (na, nb) = (self.get(a), self.get(b));
        na.value
            .cmp(&nb.value)
            .then_with(|| na.kind.cmp(&nb.kind))
            .then(a.cmp(&b))
    }

    /// The objects named by any term under `id` (component caps expanded to every object whose
    /// cap enters the component): what locality (invariant 4) is checked against.
    /// Costs a walk of the nodes under `id` and a sort of the objects.
    ///
    /// ```
    /// # let resolver = mtu_solver::doc_cluster::resolver();
    /// use mtu_solver::Kind;
    /// resolver.with_solver(|solver| {
    ///     let topo = solver.topo();
    ///     let fabric = solver.plan(topo.find_node("wa").expect("wa")).fabric.expl;
    ///     let ab = topo.obj_ref(Kind::SitePeering, "ab").expect("ab");
    ///     assert_eq!(solver.explanations().objects(fabric, topo), [ab]);
    /// });
    /// ```
    pub fn objects(&self, id: ExplId, topo: &Topology) -> Vec<ObjRef> {
        let mut out = Vec::new();
        let mut stack = vec![id];
        let mut seen = rustc_hash::FxHashSet::default();
        while let Some(x) = stack.pop() {
            if !seen.insert(x) {
                continue;
            }
            match &self.get(x).kind {
                Kind::Leaf(Leaf::Cap { obj }) => out.push(*obj),
                Kind::Leaf(Leaf::Comp { site, .. }) => {
                    out.extend(topo.component(topo.comp(*site)).cap_objects.iter().copied())
                }
                Kind::Leaf(_) => {}
                Kind::Min(k) | Kind::Max(k) => stack.extend(k.iter().copied()),
                Kind::Link { inner, .. } => stack.push(*inner),
            }
        }
        out.sort();
        out.dedup();
        out
    }
}
