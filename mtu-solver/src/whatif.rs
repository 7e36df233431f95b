//! What-if (`mtu.md` §9): apply mutations to a base input and report every value that changes,
//! with its explanation after. Cap changes keep every object, link and path, so they are
//! answered per value: the nodes near the capped object are re-resolved, and elsewhere only the
//! learned routes whose next hops' `reach` changed (the cost follows what changed, not the
//! cluster). Other mutations re-resolve the nodes they can affect, or every node when the
//! forwarding itself changes.

use crate::explain::{ExplId, Explanations, Kind as Kind2, Leaf};
use crate::overhead::overhead;
use crate::plan::{NodePlan, RouteKind};
use crate::report::{ExplOut, Renderer};
use crate::snapshot::{Item, Prefix, items};
use crate::solver::{Settings, Solver};
use rustc_hash::FxHashMap;
use rustc_hash::FxHashSet;
use smallvec::SmallVec;
use std::collections::BTreeMap;
use std::sync::Arc;
use topology_core::decode::{Member, RawCap, RawObject, RawRelation};
use topology_core::diag::Diagnostic;
use topology_core::ids::{NodeId, SiteId};
use topology_core::model::{NoSuchName, ObjRef, Topology};
use topology_core::mtu::{MAX_CAP, MIN_MTU, Mtu};
use topology_core::net::{Dest, Learned, cut};
use topology_core::vocab::{Kind, POOL_LABEL_KEY};

/// The input of a resolve: decoded objects, decoder findings and settings.
#[derive(Clone, Debug, Default)]
pub struct Input {
    /// Decoded objects.
    pub objects: Vec<RawObject>,
    /// Findings that belong to no object.
    pub diagnostics: Vec<Diagnostic>,
    /// Settings.
    pub settings: Settings,
}

impl Input {
    /// Builds the validated topology of this input.
    pub fn topology(&self) -> Topology {
        Topology::build(self.objects.iter(), self.diagnostics.iter().cloned())
    }
}

/// One mutation of `mtu.md` §9.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Mutation {
    /// Set `tunnelMTU`.
    SetCap {
        /// Kind.
        kind: Kind,
        /// Name.
        name: String,
        /// Value (validated like a manifest: outside 576..9000 fails closed to 576).
        mtu: i64,
    },
    /// Remove `tunnelMTU`.
    ClearCap {
        /// Kind.
        kind: Kind,
        /// Name.
        name: String,
    },
    /// Enable or disable a SitePeering, assignment or pool peering.
    SetEnabled {
        /// Kind.
        kind: Kind,
        /// Name.
        name: String,
        /// Enabled.
        enabled: bool,
    },
    /// Add or remove a member Site or pool.
    Member {
        /// Kind of the relationship.
        kind: Kind,
        /// Its name.
        name: String,
        /// `Site` or `GatewayPool`.
        member_kind: Kind,
        /// The member's name.
        member: String,
        /// Add (true) or remove (false).
        add: bool,
    },
    /// Demote a gateway to a worker.
    Demote {
        /// Node.
        node: String,
    },
    /// Promote a node into a pool.
    Promote {
        /// Node.
        node: String,
        /// Pool.
        pool: String,
    },
    /// Change a node's underlay MTU.
    Underlay {
        /// Node.
        node: String,
        /// MTU.
        mtu: u32,
    },
    /// Change the agent `mtu` of every node.
    AgentMtu(u32),
}

/// Why a mutation cannot apply.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum MutationError {
    /// The object or node does not exist.
    #[error(transparent)]
    NoSuchObject(#[from] NoSuchName),
    /// The mutation does not fit the object.
    #[error("{0}")]
    NotApplicable(String),
    /// A `tunnelMTU` outside 576..9000 (0 clears the cap): asking what an invalid cap does is
    /// not a what-if (it would fail closed to 576, `mtu.md` §7).
    #[error("{mtu} is outside 576..9000 (0 clears the cap)")]
    CapOutOfRange {
        /// The value asked for.
        mtu: i64,
    },
    /// Only a gateway can be demoted.
    #[error("node {0} is not a gateway")]
    NotAGateway(String),
}

/// [`MutationError::NoSuchObject`] for `name`, offering the closest of `candidates`.
fn no_such<'a>(
    what: impl Into<String>,
    name: &str,
    candidates: impl IntoIterator<Item = &'a str>,
) -> MutationError {
    MutationError::NoSuchObject(NoSuchName::new(what, name, candidates))
}

fn names_of(objects: &[RawObject], kind: Kind) -> impl Iterator<Item = &str> {
    objects
        .iter()
        .filter(move |o| o.kind() == kind)
        .map(|o| o.name())
}

/// Checks a mutation against the base input before anything is applied: the objects and nodes
/// it names exist (and the members it adds), caps are within 576..9000 (0 clears), only
/// gateways are demoted. [`what_if`] and [`what_if_on`] check every mutation first.
pub fn check(base: &Input, topo: &Topology, m: &Mutation) -> Result<(), MutationError> {
    let object = |kind: Kind, name: &str| {
        if base
            .objects
            .iter()
            .any(|o| o.kind() == kind && o.name() == name)
        {
            Ok(())
        } else {
            Err(no_such(
                kind.to_string(),
                name,
                names_of(&base.objects, kind),
            ))
        }
    };
    let node = |name: &str| topo.find_node(name).map_err(MutationError::from);
    match m {
        Mutation::SetCap { kind, name, mtu } => {
            if *mtu != 0 && !(i64::from(MIN_MTU)..=i64::from(MAX_CAP)).contains(mtu) {
                return Err(MutationError::CapOutOfRange { mtu: *mtu });
            }
            object(*kind, name)
        }
        Mutation::ClearCap { kind, name } | Mutation::SetEnabled { kind, name, .. } => {
            object(*kind, name)
        }
        Mutation::Member {
            kind,
            name,
            member_kind,
            member,
            ..
        } => {
            object(*kind, name)?;
            object(*member_kind, member)
        }
        Mutation::Demote { node: n } => {
            if topo.node(node(n)?).is_gateway() {
                Ok(())
            } else {
                Err(MutationError::NotAGateway(n.clone()))
            }
        }
        Mutation::Promote { node: n, pool } => {
            node(n)?;
            object(Kind::GatewayPool, pool)
        }
        Mutation::Underlay { node: n, .. } => node(n).map(|_| ()),
        Mutation::AgentMtu(_) => Ok(()),
    }
}

fn find<'a>(objects: &'a mut [RawObject], kind: Kind, name: &str) -> Vec<&'a mut RawObject> {
    objects
        .iter_mut()
        .filter(|o| o.kind() == kind && o.name() == name)
        .collect()
}

fn cap_slot(o: &mut RawObject) -> Option<&mut Option<RawCap>> {
    match o {
        RawObject::Site(s) => Some(&mut s.cap),
        RawObject::Pool(p) => Some(&mut p.cap),
        RawObject::SitePeering(r) | RawObject::Assignment(r) | RawObject::PoolPeering(r) => {
            Some(&mut r.cap)
        }
        _ => None,
    }
}

/// The `tunnelMTU` of an object that has one (read-only [`cap_slot`]).
fn raw_cap(o: &RawObject) -> Option<&Option<RawCap>> {
    match o {
        RawObject::Site(s) => Some(&s.cap),
        RawObject::Pool(p) => Some(&p.cap),
        RawObject::SitePeering(r) | RawObject::Assignment(r) | RawObject::PoolPeering(r) => {
            Some(&r.cap)
        }
        _ => None,
    }
}

fn relation(o: &mut RawObject) -> Option<&mut RawRelation> {
    match o {
        RawObject::SitePeering(r) | RawObject::Assignment(r) | RawObject::PoolPeering(r) => Some(r),
        _ => None,
    }
}

/// Applies one mutation to an input.
pub fn apply(input: &mut Input, m: &Mutation) -> Result<(), MutationError> {
    let label = |k: Kind, n: &str| format!("{k}/{n}");
    match m {
        Mutation::SetCap { kind, name, mtu } => {
            let cap = if (i64::from(MIN_MTU)..=i64::from(MAX_CAP)).contains(mtu) {
                Some(RawCap {
                    mtu: u32::try_from(*mtu).unwrap_or(MIN_MTU),
                    invalid: None,
                    loc: None,
                })
            } else if *mtu == 0 {
                None
            } else {
                Some(RawCap {
                    mtu: MIN_MTU,
                    invalid: Some(mtu.to_string()),
                    loc: None,
                })
            };
            let found = find(&mut input.objects, *kind, name);
            if found.is_empty() {
                return Err(no_such(kind.to_string(), name, []));
            }
            for o in found {
                let slot = cap_slot(o).ok_or_else(|| {
                    MutationError::NotApplicable(format!("{} has no tunnelMTU", label(*kind, name)))
                })?;
                *slot = cap.clone();
            }
        }
        Mutation::ClearCap { kind, name } => {
            let found = find(&mut input.objects, *kind, name);
            if found.is_empty() {
                return Err(no_such(kind.to_string(), name, []));
            }
            for o in found {
                let slot = cap_slot(o).ok_or_else(|| {
                    MutationError::NotApplicable(format!("{} has no tunnelMTU", label(*kind, name)))
                })?;
                *slot = None;
            }
        }
        Mutation::SetEnabled {
            kind,
            name,
            enabled,
        } => {
            let found = find(&mut input.objects, *kind, name);
            if found.is_empty() {
                return Err(no_such(kind.to_string(), name, []));
            }
            for o in found {
                let r = relation(o).ok_or_else(|| {
                    MutationError::NotApplicable(format!(
                        "only SitePeerings, SiteGatewayPoolAssignments and GatewayPoolPeerings can be enabled or disabled, not {}",
                        label(*kind, name)
                    ))
                })?;
                r.enabled = *enabled;
            }
        }
        Mutation::Member {
            kind,
            name,
            member_kind,
            member,
            add,
        } => {
            let found = find(&mut input.objects, *kind, name);
            if found.is_empty() {
                return Err(no_such(kind.to_string(), name, []));
            }
            for o in found {
                let k = o.kind();
                let r = relation(o).ok_or_else(|| {
                    MutationError::NotApplicable(format!("{} has no members", label(*kind, name)))
                })?;
                let (list, field) = match (member_kind, k) {
                    (Kind::Site, Kind::SitePeering | Kind::SiteGatewayPoolAssignment) => {
                        (&mut r.sites, "spec.sites")
                    }
                    (
                        Kind::GatewayPool,
                        Kind::GatewayPoolPeering | Kind::SiteGatewayPoolAssignment,
                    ) => (&mut r.pools, "spec.gatewayPools"),
                    _ => {
                        return Err(MutationError::NotApplicable(format!(
                            "{} has no {} members",
                            label(*kind, name),
                            member_kind
                        )));
                    }
                };
                if *add {
                    if !list.iter().any(|x| &x.name == member) {
                        let field = format!("{field}[{}]", list.len());
                        list.push(Member {
                            name: member.clone(),
                            field,
                            loc: None,
                        });
                    }
                } else {
                    list.retain(|x| &x.name != member);
                }
            }
        }
        Mutation::Demote { node } => {
            let mut hit = false;
            for o in input.objects.iter_mut() {
                match o {
                    RawObject::Node(n) if n.meta.name == *node => {
                        n.labels.retain(|(k, _)| k != POOL_LABEL_KEY);
                        n.labels.push((POOL_LABEL_KEY.to_string(), String::new()));
                        hit = true;
                    }
                    RawObject::Pool(p) => {
                        let before = p.status_nodes.len();
                        p.status_nodes.retain(|s| s.name != *node);
                        hit |= before != p.status_nodes.len();
                    }
                    _ => {}
                }
            }
            if !hit {
                return Err(no_such("node", node, []));
            }
        }
        Mutation::Promote { node, pool } => {
            if !input
                .objects
                .iter()
                .any(|o| o.kind() == Kind::GatewayPool && o.name() == pool)
            {
                return Err(no_such(Kind::GatewayPool.to_string(), pool, []));
            }
            let mut hit = false;
            for o in input.objects.iter_mut() {
                if let RawObject::Node(n) = o
                    && n.meta.name == *node
                {
                    n.labels.retain(|(k, _)| k != POOL_LABEL_KEY);
                    n.labels.push((POOL_LABEL_KEY.to_string(), pool.clone()));
                    hit = true;
                }
            }
            if !hit {
                return Err(MutationError::NotApplicable(format!(
                    "node {node} has no Node object to label (promotion needs one)"
                )));
            }
        }
        Mutation::Underlay { node, mtu } => {
            input.settings.underlay_overrides.insert(node.clone(), *mtu);
        }
        Mutation::AgentMtu(v) => input.settings.cfg_mtu = *v,
    }
    Ok(())
}

/// One changed value.
#[derive(Clone, Debug)]
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

/// The result of a what-if.
#[derive(Debug)]
pub struct WhatIf {
    /// Changes, sorted by node then item.
    pub changes: Vec<Change>,
    /// How the answer was computed (`per-value`, `near-nodes`, `all-nodes`).
    pub strategy: &'static str,
    /// Plans resolved (both sides) and learned routes re-evaluated: the cost actually paid.
    pub work: usize,
}

impl WhatIf {
    /// Nodes with at least one change.
    pub fn nodes_affected(&self) -> usize {
        let mut names: Vec<&str> = self.changes.iter().map(|c| &*c.node).collect();
        names.dedup();
        names.len()
    }
}

/// Runs a what-if: `mutations` applied in order to `base`.
pub fn what_if(base: &Input, mutations: &[Mutation], full: bool) -> Result<WhatIf, MutationError> {
    let tb = base.topology();
    check_all(base, &tb, mutations)?;
    if let Some(caps) = cap_replacements(&tb, base, mutations) {
        let mut s = Solver::new(&tb, base.settings.clone());
        return Ok(per_value_shared(&mut s, &caps, full));
    }
    let mut after = base.clone();
    for m in mutations {
        apply(&mut after, m)?;
    }
    Ok(diff(base, &after, full))
}

/// [`check`] of every mutation of a question, in order: a node an earlier mutation promoted
/// may be demoted.
pub fn check_all(
    base: &Input,
    topo: &Topology,
    mutations: &[Mutation],
) -> Result<(), MutationError> {
    match first_refused(base, topo, mutations) {
        Some((_, e)) => Err(e),
        None => Ok(()),
    }
}

/// The first mutation [`check_all`] refuses: its index and why.
pub fn first_refused(
    base: &Input,
    topo: &Topology,
    mutations: &[Mutation],
) -> Option<(usize, MutationError)> {
    mutations.iter().enumerate().find_map(|(i, m)| {
        let promoted_before = matches!(m, Mutation::Demote { node } if mutations
            .get(..i)
            .unwrap_or_default()
            .iter()
            .any(|e| matches!(e, Mutation::Promote { node: p, .. } if p == node)));
        if promoted_before {
            return None;
        }
        check(base, topo, m).err().map(|e| (i, e))
    })
}

/// A what-if against a resolved base: `solver` is a solver over `base`'s topology (a fresh one
/// gives the same answer; one that already resolved nodes answers faster, its memos being warm).
/// Cap changes of assignments, pools and pool peerings are answered on that solver itself
/// ([`Solver::set_caps`]): nothing is rebuilt, values the change cannot touch are never
/// looked at, and the solver is back on the base caps afterwards. Other mutations fall back to
/// [`what_if`].
pub fn what_if_on(
    solver: &mut Solver<'_>,
    base: &Input,
    mutations: &[Mutation],
    full: bool,
) -> Result<WhatIf, MutationError> {
    check_all(base, solver.topo(), mutations)?;
    match cap_replacements(solver.topo(), base, mutations) {
        Some(caps) => Ok(per_value_shared(solver, &caps, full)),
        None => what_if(base, mutations, full),
    }
}

/// The caps `mutations` set, when they only set or clear valid caps of assignments, pools or
/// pool peerings that exist in the topology with a valid cap or none (None otherwise).
fn cap_replacements(
    t: &Topology,
    base: &Input,
    mutations: &[Mutation],
) -> Option<Vec<(ObjRef, Option<Mtu>)>> {
    let mut out: Vec<(ObjRef, Option<Mtu>)> = Vec::new();
    for m in mutations {
        let (kind, name, value) = match m {
            Mutation::SetCap { kind, name, mtu } => {
                let v = if *mtu == 0 {
                    None
                } else if (i64::from(MIN_MTU)..=i64::from(MAX_CAP)).contains(mtu) {
                    Some(Mtu(u32::try_from(*mtu).ok()?))
                } else {
                    return None;
                };
                (*kind, name, v)
            }
            Mutation::ClearCap { kind, name } => (*kind, name, None),
            _ => return None,
        };
        // Exactly one object of that kind and name (duplicates are the slow path's business).
        let mut same = base
            .objects
            .iter()
            .filter(|o| o.kind() == kind && o.name() == name.as_str());
        if same.next().is_none() || same.next().is_some() {
            return None;
        }
        let o = one_solver_object(t, kind, name)?;
        out.retain(|(x, _)| *x != o);
        out.push((o, value));
    }
    Some(out)
}

/// An object whose cap change one solver can answer ([`Solver::set_caps`]): an assignment, pool
/// or pool peering of the topology whose cap, if any, is valid.
fn one_solver_object(t: &Topology, kind: Kind, name: &str) -> Option<ObjRef> {
    if !matches!(
        kind,
        Kind::SiteGatewayPoolAssignment | Kind::GatewayPool | Kind::GatewayPoolPeering
    ) {
        return None;
    }
    let o = obj_ref(t, kind, name)?;
    t.cap_of(o).is_none_or(|c| c.invalid.is_none()).then_some(o)
}

/// The caps after of changed objects, when one solver can answer (see [`cap_replacements`]).
fn shared_caps(
    tb: &Topology,
    after: &Input,
    objs: &[(Kind, String)],
) -> Option<Vec<(ObjRef, Option<Mtu>)>> {
    let mut out = Vec::with_capacity(objs.len());
    for (kind, name) in objs {
        let o = one_solver_object(tb, *kind, name)?;
        let raw = after
            .objects
            .iter()
            .find(|x| x.kind() == *kind && x.name() == name.as_str())?;
        let cap = raw_cap(raw)?.clone();
        if cap.as_ref().is_some_and(|c| c.invalid.is_some()) {
            return None;
        }
        out.push((o, cap.map(|c| Mtu(c.mtu))));
    }
    Some(out)
}

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

/// The first node (by ID) of every class of nodes outside `near`: the workers of a Site
/// (`(false, site, 0)`), the gateways of a pool in a Site (`(true, pool, site)`).
fn class_representatives(
    t: &Topology,
    near: &FxHashSet<NodeId>,
) -> Vec<((bool, u32, u32), NodeId)> {
    let mut seen: FxHashSet<(bool, u32, u32)> = FxHashSet::default();
    let mut out = Vec::new();
    for (i, node) in t.nodes.iter().enumerate() {
        let id = NodeId::from_idx(i);
        if near.contains(&id) {
            continue;
        }
        let key = class_key(node);
        if seen.insert(key) {
            out.push((key, id));
        }
    }
    out
}

fn class_key(node: &topology_core::model::NodeInfo) -> (bool, u32, u32) {
    match node.pool() {
        None => (false, node.site.0, 0),
        Some(p) => (true, p.0, node.site.0),
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
fn per_value_shared(s: &mut Solver<'_>, caps: &[(ObjRef, Option<Mtu>)], full: bool) -> WhatIf {
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
    let mut near_before: FxHashMap<NodeId, FxHashMap<Item, u32>> = FxHashMap::default();
    let mut rest_before_of: FxHashMap<(NodeId, ipnet::IpNet), Option<u32>> = FxHashMap::default();
    if !from_terms {
        for n in &near_nodes {
            let p = s.plan(*n);
            let values = items(t, &p).into_iter().map(|(i, v, _)| (i, v)).collect();
            near_before.insert(*n, values);
        }
        for (key, first) in class_representatives(t, &near_set) {
            for prefix in &prefixes {
                if let Some(l) = s.net.learned_for(first, prefix) {
                    let rb = s.route_rest(&l, !key.0).map(|e| s.expl.value(e).0);
                    rest_before_of.insert((first, *prefix), rb);
                }
            }
        }
    }
    // `cap_replacements` names no Site or SitePeering, so this cannot be refused.
    let restore = s.set_caps(caps).unwrap_or_default();
    let mut work = near_set.len();
    // Near nodes: plan after, values before from the explanations.
    let mut near_changes: FxHashMap<NodeId, Vec<Pending>> = FxHashMap::default();
    for n in &near_nodes {
        let p = s.plan(*n);
        let mut out = Vec::new();
        let values_before = near_before.remove(n);
        for (item, v, e) in items(t, &p) {
            let b = match &values_before {
                Some(vb) => vb.get(&item).copied(),
                None => before.value(&s.expl, e).map(|m| m.0),
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
    // Remote nodes share learned routes by class: workers of a Site, gateways of a pool in a
    // Site. Per class, the routes towards the reachable destinations whose rest changed.
    let mut class_of: FxHashMap<(bool, u32, u32), usize> = FxHashMap::default();
    let mut classes: Vec<Vec<RemoteRoute>> = Vec::new();
    for (key, id) in class_representatives(t, &near_set) {
        let node = t.node(id);
        class_of.insert(key, classes.len());
        let gateway = key.0;
        let mut routes = Vec::new();
        for prefix in &prefixes {
            let Some(l) = s.net.learned_for(id, prefix) else {
                continue;
            };
            let rest_after_expl = s.route_rest(&l, !gateway);
            let rest_after = rest_after_expl.map(|e| s.expl.value(e).0);
            let rest_before = if from_terms {
                rest_after_expl
                    .and_then(|e| before.value(&s.expl, e))
                    .map(|m| m.0)
            } else {
                rest_before_of.get(&(id, *prefix)).copied().flatten()
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
                let caps = s.link_caps(id, *g, kind).map(|e| s.expl.value(e).0);
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
        classes.push(routes);
    }
    // Every node in order (node IDs order like names).
    let mut pending: Vec<Pending> = Vec::new();
    for (i, node) in t.nodes.iter().enumerate() {
        let id = NodeId::from_idx(i);
        if let Some(ch) = near_changes.remove(&id) {
            pending.extend(ch);
            continue;
        }
        let Some(routes) = class_of.get(&class_key(node)).and_then(|c| classes.get(*c)) else {
            continue;
        };
        let start = pending.len();
        let cfg = s.cfg_of(id);
        let (un, _) = s.underlay(id);
        for r in routes {
            work = work.saturating_add(1);
            let mut links: Option<u32> = None;
            for h in &r.hops {
                let (ug, _) = s.underlay(h.peer);
                // The outer family also depends on this member's own addresses on the link.
                let o = overhead(h.protocol, s.net.link_ipv6_outer(id, h.peer, h.public));
                let mut v = un.min(ug).minus_overhead(o).0;
                if cfg > 0 {
                    v = v.min(cfg);
                }
                if let Some(c) = h.caps {
                    v = v.min(c);
                }
                links = Some(links.map_or(v, |x| x.min(v)));
            }
            let (vb, va) = (min_opt(links, r.rest_before), min_opt(links, r.rest_after));
            if vb == va {
                continue;
            }
            let after = match (r.rest_after_expl, r.rest_after, links) {
                (Some(e), Some(ra), Some(lv)) if !full && ra < lv => {
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
            };
            let kind = if r.gateway {
                RouteKind::Transit
            } else {
                RouteKind::Gateway
            };
            for piece in &r.pieces {
                let item = Item::Route {
                    destination: Prefix(*piece),
                    kind,
                };
                pending.push(Pending {
                    node: id,
                    item,
                    before: vb,
                    after: va,
                    expl: after,
                });
            }
            if r.gateway {
                let item = Item::Published {
                    destination: Prefix(r.learned.prefix),
                };
                pending.push(Pending {
                    node: id,
                    item,
                    before: vb,
                    after: va,
                    expl: after,
                });
            }
        }
        if let Some(mine) = pending.get_mut(start..) {
            mine.sort_by(|a, b| a.item.cmp(&b.item));
        }
    }
    // Back on the base caps; explanations stay valid (the arena only grows).
    let _ = s.set_caps(&restore);
    let mut r = Renderer::new(s, full);
    let changes = pending
        .into_iter()
        .map(|p| Change {
            node: t.node(p.node).name.clone(),
            item: p.item,
            before: p.before,
            after: p.after,
            explanation: match p.expl {
                Some(After::Node(id)) => Some(r.expl(id)),
                Some(After::Bound(x)) => Some(r.bound_only(x)),
                None => None,
            },
        })
        .collect();
    WhatIf {
        changes,
        strategy: "per-value",
        work,
    }
}

/// Compares two complete inputs (`--after PATH`): the same as [`diff`].
pub fn compare(base: &Input, after: &Input, full: bool) -> WhatIf {
    diff(base, after, full)
}

/// How two inputs differ, for choosing how much to re-resolve.
enum Difference {
    /// Only caps of these objects (by kind and name).
    Caps(Vec<(Kind, String)>),
    /// Only the underlays of these nodes.
    Underlays(Vec<String>),
    /// Anything else: links or paths may change.
    Structure,
}

fn without_cap(o: &RawObject) -> RawObject {
    let mut c = o.clone();
    c.meta_mut().diags.clear();
    if let Some(slot) = cap_slot(&mut c) {
        *slot = None;
    }
    c
}

fn without_underlay(o: &RawObject) -> RawObject {
    let mut c = o.clone();
    c.meta_mut().diags.clear();
    if let RawObject::Node(n) = &mut c {
        n.underlay = None;
        n.underlay_max = None;
    }
    c
}

type ObjectIndex<'a> =
    rustc_hash::FxHashMap<(Kind, &'a str), smallvec::SmallVec<[&'a RawObject; 1]>>;

/// Objects by kind and name, borrowed: classifying must not copy the cluster.
fn index_objects(i: &Input) -> ObjectIndex<'_> {
    let mut m = ObjectIndex::default();
    for o in &i.objects {
        m.entry((o.kind(), o.name())).or_default().push(o);
    }
    m
}

fn classify(base: &Input, after: &Input) -> Difference {
    if base.diagnostics != after.diagnostics {
        return Difference::Structure;
    }
    let (b, a) = (index_objects(base), index_objects(after));
    if b.len() != a.len() {
        return Difference::Structure;
    }
    let mut caps = Vec::new();
    let mut underlays: Vec<String> = Vec::new();
    for (k, ob) in &b {
        let Some(oa) = a.get(k) else {
            return Difference::Structure;
        };
        if ob == oa {
            continue;
        }
        let (Some(x), Some(y), 1, 1) = (ob.first(), oa.first(), ob.len(), oa.len()) else {
            return Difference::Structure;
        };
        if without_cap(x) == without_cap(y) && raw_cap(x).is_some() {
            caps.push((k.0, k.1.to_string()));
        } else if without_underlay(x) == without_underlay(y) && k.0 == Kind::Node {
            underlays.push(k.1.to_string());
        } else if x.meta().diags != y.meta().diags && without_cap(x) == without_cap(y) {
            continue;
        } else {
            return Difference::Structure;
        }
    }
    let mut s = base.settings.clone();
    s.underlay_overrides = after.settings.underlay_overrides.clone();
    if s != after.settings {
        return Difference::Structure;
    }
    let mut names: std::collections::BTreeSet<&String> =
        base.settings.underlay_overrides.keys().collect();
    names.extend(after.settings.underlay_overrides.keys());
    for n in names {
        if base.settings.underlay_overrides.get(n) != after.settings.underlay_overrides.get(n) {
            underlays.push(n.clone());
        }
    }
    match (caps.is_empty(), underlays.is_empty()) {
        (_, true) => Difference::Caps(caps),
        (true, false) => Difference::Underlays(underlays),
        (false, false) => Difference::Structure,
    }
}

/// Every value that differs between two inputs, computed at a cost that follows what changed:
/// per value for cap changes, the nodes around a node for underlay changes, every node when
/// links or paths may change.
pub fn diff(base: &Input, after: &Input, full: bool) -> WhatIf {
    let tb = base.topology();
    let difference = classify(base, after);
    if let Difference::Caps(objs) = &difference
        && let Some(caps) = shared_caps(&tb, after, objs)
    {
        let mut s = Solver::new(&tb, base.settings.clone());
        return per_value_shared(&mut s, &caps, full);
    }
    let ta = after.topology();
    let mut sb = Solver::new(&tb, base.settings.clone());
    let mut sa = Solver::new(&ta, after.settings.clone());
    match difference {
        Difference::Caps(objs) => {
            let objs: Vec<ObjRef> = objs
                .iter()
                .filter_map(|(k, n)| obj_ref(&tb, *k, n))
                .collect();
            let (changes, work) = per_value(&mut sb, &mut sa, &objs, full);
            WhatIf {
                changes,
                strategy: "per-value",
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
            let changes = diff_nodes(&mut sb, &mut sa, &nodes, &nodes, full);
            WhatIf {
                changes,
                strategy: "near-nodes",
                work,
            }
        }
        Difference::Structure => {
            let all_b: Vec<NodeId> = (0..tb.nodes.len()).map(NodeId::from_idx).collect();
            let all_a: Vec<NodeId> = (0..ta.nodes.len()).map(NodeId::from_idx).collect();
            let work = all_b.len().saturating_add(all_a.len());
            let changes = diff_nodes(&mut sb, &mut sa, &all_b, &all_a, full);
            WhatIf {
                changes,
                strategy: "all-nodes",
                work,
            }
        }
    }
}

/// The reference of a kind and name in a topology.
pub fn obj_ref(t: &Topology, kind: Kind, name: &str) -> Option<ObjRef> {
    match kind {
        Kind::Site => t.site_id(name).map(ObjRef::Site),
        Kind::GatewayPool => t.pool_id(name).map(ObjRef::Pool),
        Kind::SitePeering => t
            .site_peerings
            .iter()
            .position(|r| &*r.name == name)
            .map(|i| ObjRef::SitePeering(topology_core::ids::PeeringId::from_idx(i))),
        Kind::SiteGatewayPoolAssignment => t
            .assignments
            .iter()
            .position(|r| &*r.name == name)
            .map(|i| ObjRef::Assignment(topology_core::ids::AssignmentId::from_idx(i))),
        Kind::GatewayPoolPeering => t
            .pool_peerings
            .iter()
            .position(|r| &*r.name == name)
            .map(|i| ObjRef::PoolPeering(topology_core::ids::PoolPeeringId::from_idx(i))),
        _ => None,
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
            explanation: av.map(|x| r.expl(x.1)),
        });
    }
}

fn diff_nodes(
    sb: &mut Solver<'_>,
    sa: &mut Solver<'_>,
    nodes_b: &[NodeId],
    nodes_a: &[NodeId],
    full: bool,
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
    let mut r = Renderer::new(sa, full);
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

/// Nodes whose links, fabric, devices or published values can involve a cap of `o`.
fn near(s: &Solver<'_>, o: ObjRef) -> FxHashSet<NodeId> {
    let t = s.topo();
    let mut core: FxHashSet<NodeId> = FxHashSet::default();
    let mut with_peers = true;
    let add_site = |core: &mut FxHashSet<NodeId>, site: SiteId| {
        core.extend(t.workers_of(site).iter().copied());
        core.extend(t.gateways_in(site).iter().copied());
    };
    // Gateways of pools serving a Site publish for it even without workers there.
    let add_serving = |core: &mut FxHashSet<NodeId>, site: SiteId| {
        for a in t.assignments_of(site) {
            for p in &t.assignment(*a).pools {
                core.extend(t.pool(*p).gateways.iter().copied());
            }
        }
    };
    match o {
        ObjRef::Site(site) => {
            for x in &t.component(t.comp(site)).sites {
                add_site(&mut core, *x);
                add_serving(&mut core, *x);
            }
        }
        ObjRef::SitePeering(p) => {
            let r = t.site_peering(p);
            for x in &r.sites {
                for y in &t.component(t.comp(*x)).sites {
                    add_site(&mut core, *y);
                    add_serving(&mut core, *y);
                }
            }
        }
        ObjRef::Assignment(a) => {
            let r = t.assignment(a);
            for x in &r.sites {
                core.extend(t.workers_of(*x).iter().copied());
            }
            for p in &r.pools {
                core.extend(t.pool(*p).gateways.iter().copied());
            }
            with_peers = false;
        }
        ObjRef::Pool(p) => core.extend(t.pool(p).gateways.iter().copied()),
        ObjRef::PoolPeering(r) => {
            for p in &t.pool_peering(r).pools {
                core.extend(t.pool(*p).gateways.iter().copied());
            }
            with_peers = false;
        }
    }
    if with_peers {
        let mut all = core.clone();
        for n in &core {
            all.extend(s.net.link_peers(*n).into_iter().map(|(p, _)| p));
        }
        all
    } else {
        core
    }
}

/// What cap changes of `objs` can reach: the nodes near them, and the advertised prefixes whose
/// routes elsewhere can change (towards the destinations the caps can be on the path to).
fn change_reach(s: &Solver<'_>, objs: &[ObjRef]) -> (FxHashSet<NodeId>, Vec<ipnet::IpNet>) {
    let t = s.topo();
    let mut near_set: FxHashSet<NodeId> = FxHashSet::default();
    let mut filter: Option<FxHashSet<Dest>> = Some(FxHashSet::default());
    for o in objs {
        near_set.extend(near(s, *o));
        match (dest_filter(t, *o), &mut filter) {
            (Some(d), Some(f)) => f.extend(d),
            _ => filter = None,
        }
    }
    let prefixes = s
        .net
        .advertised_prefixes()
        .filter(|(_, origins)| match &filter {
            None => true,
            Some(f) => origins.iter().any(|o| f.contains(&o.dest)),
        })
        .map(|(p, _)| *p)
        .collect();
    (near_set, prefixes)
}

/// Destinations whose paths can involve the cap of `o` (None: any).
fn dest_filter(t: &Topology, o: ObjRef) -> Option<FxHashSet<Dest>> {
    match o {
        ObjRef::Assignment(a) => Some(
            t.assignment(a)
                .sites
                .iter()
                .map(|s| Dest::Site(*s))
                .collect(),
        ),
        _ => None,
    }
}

fn per_value(
    sb: &mut Solver<'_>,
    sa: &mut Solver<'_>,
    objs: &[ObjRef],
    full: bool,
) -> (Vec<Change>, usize) {
    let t = sb.topo();
    // Elsewhere only learned routes (and gateways' published values for them) can change.
    let (near_set, prefixes) = change_reach(sb, objs);
    let mut near_nodes: Vec<NodeId> = near_set.iter().copied().collect();
    near_nodes.sort();
    let mut work = near_nodes.len().saturating_mul(2);
    let mut changes = diff_nodes(sb, sa, &near_nodes, &near_nodes, full);
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
    let mut r = Renderer::new(sa, full);
    for (mut c, e) in remote {
        c.explanation = e.map(|e| r.expl(e));
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
    let va = ea.map(|e| sa.expl.value(e).0);
    // A node outside the near set keeps its links: only `reach` and `pubPath` differ, so the
    // value before reuses the link values just computed (no second link resolution).
    let mut vb: Option<u32> = None;
    for g in &l.via {
        let mut terms = [None, None, None];
        terms[0] = sa.link_value(n, *g).map(|e| sa.expl.value(e).0);
        terms[1] = sb
            .reach(*g, l.prefix, &l.origins)
            .map(|e| sb.expl.value(e).0);
        if worker {
            terms[2] = sb
                .pub_path(*g, l.prefix, &l.origins)
                .map(|e| sb.expl.value(e).0);
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
