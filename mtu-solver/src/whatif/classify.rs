//! Which questions are answered how: cap changes one solver can answer, and how two inputs
//! differ (caps, underlays or structure) when they are compared.

use super::apply::{cap_slot, raw_cap};
use super::input::Input;
use super::mutation::Mutation;
use topology_core::decode::RawObject;
use topology_core::model::{ObjRef, Topology};
use topology_core::mtu::{MAX_CAP, MIN_MTU, Mtu};
use topology_core::vocab::Kind;

/// The caps `mutations` set, when they only set or clear valid caps of assignments, pools or
/// pool peerings that exist in the topology with a valid cap or none (None otherwise).
pub(super) fn cap_replacements(
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
                } else if (MIN_MTU..=MAX_CAP).contains(mtu) {
                    Mtu::cap(*mtu)
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

/// An object whose cap change one solver can answer
/// ([`Solver::set_caps`](crate::solver::Solver::set_caps)): an assignment, pool or pool peering
/// of the topology whose cap, if any, is valid.
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
pub(super) fn shared_caps(
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
        out.push((o, cap.map(|c| Mtu::cap_or_min(c.mtu))));
    }
    Some(out)
}

/// How two inputs differ, for choosing how much to re-resolve.
pub(super) enum Difference {
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

pub(super) fn classify(base: &Input, after: &Input) -> Difference {
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
