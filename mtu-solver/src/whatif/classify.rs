//! Which questions are answered how: cap changes one solver can answer, and how two inputs
//! differ (caps, underlays or structure) when they are compared.

use super::input::Input;
use super::mutation::Mutation;
use crate::locality::{self, Fingerprint, ObjectKey};
use crate::raw::raw_cap;
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
    let o = t.obj_ref(kind, name)?;
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

/// How `after` differs from `base`: their objects compared by [`Fingerprint::difference`] (the
/// one rule, which the node agent applies without keeping the objects), then their settings,
/// where a changed underlay override is an underlay change.
pub(super) fn classify(base: &Input, after: &Input) -> Difference {
    let fb = Fingerprint::of(&base.objects, &base.diagnostics);
    let fa = Fingerprint::of(&after.objects, &after.diagnostics);
    let (mut caps, mut underlays) = match fb.difference(&fa) {
        locality::Difference::Structure => return Difference::Structure,
        locality::Difference::Caps(keys) => (names(&after.objects, &keys), Vec::new()),
        locality::Difference::Underlays(keys) => (
            Vec::new(),
            names(&after.objects, &keys)
                .into_iter()
                .map(|(_, n)| n)
                .collect(),
        ),
    };
    let mut s = base.settings.clone();
    s.underlay_overrides = after.settings.underlay_overrides.clone();
    if s != after.settings {
        return Difference::Structure;
    }
    let mut overridden: std::collections::BTreeSet<&String> =
        base.settings.underlay_overrides.keys().collect();
    overridden.extend(after.settings.underlay_overrides.keys());
    for n in overridden {
        if base.settings.underlay_overrides.get(n) != after.settings.underlay_overrides.get(n) {
            underlays.push(n.clone());
        }
    }
    caps.sort();
    match (caps.is_empty(), underlays.is_empty()) {
        (_, true) => Difference::Caps(caps),
        (true, false) => Difference::Underlays(underlays),
        (false, false) => Difference::Structure,
    }
}

/// The kinds and names of the objects `keys` name, found in one pass over `objects`.
fn names(objects: &[RawObject], keys: &[ObjectKey]) -> Vec<(Kind, String)> {
    let wanted: rustc_hash::FxHashSet<ObjectKey> = keys.iter().copied().collect();
    let mut out: Vec<(Kind, String)> = Vec::with_capacity(keys.len());
    let mut found: rustc_hash::FxHashSet<ObjectKey> = rustc_hash::FxHashSet::default();
    for o in objects {
        let k = ObjectKey::of(o.kind(), o.name());
        if wanted.contains(&k) && found.insert(k) {
            out.push((o.kind(), o.name().to_string()));
        }
    }
    out
}
