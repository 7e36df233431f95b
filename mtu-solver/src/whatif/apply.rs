//! Applying a mutation to the decoded objects and settings of an input.

use super::input::Input;
use super::mutation::{Mutation, MutationError, no_such};
use crate::raw::cap_slot;
use std::sync::Arc;
use topology_core::decode::{Member, RawCap, RawObject, RawPathEntry, RawPathMtus, RawRelation};
use topology_core::mtu::{MAX_CAP, MIN_MTU};
use topology_core::vocab::{Kind, POOL_LABEL_KEY};

/// Every object of `kind` named `name` (duplicates included); an error when there is none.
fn find<'a>(
    objects: &'a mut [RawObject],
    kind: Kind,
    name: &str,
) -> Result<Vec<&'a mut RawObject>, MutationError> {
    let found: Vec<_> = objects
        .iter_mut()
        .filter(|o| o.kind() == kind && o.name() == name)
        .collect();
    if found.is_empty() {
        return Err(no_such(kind.to_string(), name, []));
    }
    Ok(found)
}

/// Sets the `tunnelMTU` of every object of `kind` named `name` (None removes it).
fn set_cap(
    input: &mut Input,
    kind: Kind,
    name: &str,
    cap: Option<RawCap>,
) -> Result<(), MutationError> {
    for o in find(&mut input.objects, kind, name)? {
        let slot = cap_slot(o).ok_or_else(|| MutationError::NoCap {
            kind,
            name: name.to_string(),
        })?;
        *slot = cap.clone();
    }
    Ok(())
}

fn relation(o: &mut RawObject) -> Option<&mut RawRelation> {
    match o {
        RawObject::SitePeering(r) | RawObject::Assignment(r) | RawObject::PoolPeering(r) => Some(r),
        _ => None,
    }
}

/// `base` with `mutations` applied in order, to a copy (`base` is left as it was); the first
/// mutation that does not apply is the error. What a what-if resolves as its values after, and
/// what [`Resolver::apply`](crate::Resolver::apply) resolves. Costs a copy of `base`, then
/// one pass over its objects per mutation.
///
/// ```
/// use mtu_solver::whatif::{Input, apply_all};
/// use mtu_solver::{Mutation, doc_cluster::TWO_SITES, load};
/// let d = load::from_sources([("cluster.yaml", TWO_SITES)]);
/// let base = Input { objects: d.objects, diagnostics: d.diagnostics, settings: Default::default() };
/// let after = apply_all(&base, &["agent-mtu 1300".parse()?, "underlay wa=9000".parse()?])?;
/// assert_eq!((base.settings.cfg_mtu, after.settings.cfg_mtu), (0, 1300));
/// assert_eq!(after.settings.underlay_overrides["wa"], 9000);
/// // No SitePeering is named `ba`: the error, and `base` is as it was.
/// assert!(apply_all(&base, &["set SitePeering/ba=1300".parse()?]).is_err());
/// # Ok::<(), mtu_solver::Error>(())
/// ```
pub fn apply_all(base: &Input, mutations: &[Mutation]) -> Result<Input, MutationError> {
    let mut after = base.clone();
    for m in mutations {
        apply(&mut after, m)?;
    }
    Ok(after)
}

/// Applies one mutation to an input, without [`check`](super::check)ing it first (a cap outside
/// 576..9000 is written as a manifest's invalid cap reads). Costs one pass over the input's
/// objects (a settings write for `underlay` and `agent-mtu`).
///
/// ```
/// # let d = mtu_solver::load::from_sources([("cluster.yaml", mtu_solver::doc_cluster::TWO_SITES)]);
/// # let base = mtu_solver::whatif::Input { objects: d.objects, diagnostics: d.diagnostics, settings: Default::default() };
/// use mtu_solver::whatif::{MutationError, apply, compare};
/// use mtu_solver::{Explanations, Mutation};
/// let mut after = base.clone();
/// apply(&mut after, &"set SitePeering/ab=1300".parse()?)?;
/// let changed = compare(&base, &after, Explanations::None);
/// assert_eq!(changed.nodes_affected(), 2);
/// assert!(changed.changes.iter().all(|c| c.after == Some(1300)));
/// // A Node has no tunnelMTU.
/// let node_cap: Mutation = "set Node/wa=1300".parse()?;
/// assert!(matches!(apply(&mut after, &node_cap), Err(MutationError::NoCap { .. })));
/// # Ok::<(), mtu_solver::Error>(())
/// ```
pub fn apply(input: &mut Input, m: &Mutation) -> Result<(), MutationError> {
    match m {
        Mutation::SetCap { kind, name, mtu } => set_cap(input, *kind, name, raw_cap_of(*mtu))?,
        Mutation::ClearCap { kind, name } => set_cap(input, *kind, name, None)?,
        Mutation::SetEnabled {
            kind,
            name,
            enabled,
        } => set_enabled(input, *kind, name, *enabled)?,
        Mutation::Member {
            kind,
            name,
            member_kind,
            member,
            add,
        } => set_member(input, *kind, name, *member_kind, member, *add)?,
        Mutation::Demote { node } => demote(input, node)?,
        Mutation::Promote { node, pool } => promote(input, node, pool)?,
        Mutation::Underlay { node, mtu } => {
            input.settings.underlay_overrides.insert(node.clone(), *mtu);
        }
        Mutation::AgentMtu(v) => input.settings.cfg_mtu = *v,
        Mutation::PathMtu { node, peer, mtu } => set_path_mtu(input, node, peer, *mtu)?,
    }
    Ok(())
}

/// `kind/name`, as errors name an object.
fn label(kind: Kind, name: &str) -> String {
    format!("{kind}/{name}")
}

/// The `tunnelMTU` a `set` writes: the value when it is a valid cap, none for 0, and otherwise
/// the value kept as invalid text with 576 in its place (as the decoder reads such a field).
fn raw_cap_of(mtu: u32) -> Option<RawCap> {
    if (MIN_MTU..=MAX_CAP).contains(&mtu) {
        Some(RawCap {
            mtu,
            invalid: None,
            loc: None,
        })
    } else if mtu == 0 {
        None
    } else {
        Some(RawCap {
            mtu: MIN_MTU,
            invalid: Some(mtu.to_string()),
            loc: None,
        })
    }
}

/// Enables or disables every relation of `kind` named `name`.
fn set_enabled(
    input: &mut Input,
    kind: Kind,
    name: &str,
    enabled: bool,
) -> Result<(), MutationError> {
    for o in find(&mut input.objects, kind, name)? {
        let r = relation(o).ok_or_else(|| {
            MutationError::NotApplicable(format!(
                "only SitePeerings, SiteGatewayPoolAssignments and GatewayPoolPeerings can be enabled or disabled, not {}",
                label(kind, name)
            ))
        })?;
        r.enabled = enabled;
    }
    Ok(())
}

/// Adds `member` to (or removes it from) the Sites or pools of every relation of `kind` named
/// `name`; an added member is appended with its field path, once.
fn set_member(
    input: &mut Input,
    kind: Kind,
    name: &str,
    member_kind: Kind,
    member: &str,
    add: bool,
) -> Result<(), MutationError> {
    for o in find(&mut input.objects, kind, name)? {
        let k = o.kind();
        let r = relation(o).ok_or_else(|| {
            MutationError::NotApplicable(format!("{} has no members", label(kind, name)))
        })?;
        let (list, field) = match (member_kind, k) {
            (Kind::Site, Kind::SitePeering | Kind::SiteGatewayPoolAssignment) => {
                (&mut r.sites, "spec.sites")
            }
            (Kind::GatewayPool, Kind::GatewayPoolPeering | Kind::SiteGatewayPoolAssignment) => {
                (&mut r.pools, "spec.gatewayPools")
            }
            _ => {
                return Err(MutationError::NotApplicable(format!(
                    "{} has no {} members",
                    label(kind, name),
                    member_kind
                )));
            }
        };
        if add {
            if !list.iter().any(|x| x.name == member) {
                let field = format!("{field}[{}]", list.len());
                list.push(Member {
                    name: member.to_string(),
                    field,
                    loc: None,
                });
            }
        } else {
            list.retain(|x| x.name != member);
        }
    }
    Ok(())
}

/// Demotes gateway `node`: its pool label emptied, and its name taken out of every pool's
/// status; an error when neither names it.
fn demote(input: &mut Input, node: &str) -> Result<(), MutationError> {
    let mut hit = false;
    for o in input.objects.iter_mut() {
        match o {
            RawObject::Node(n) if n.meta.name == *node => {
                set_pool_label(&mut n.labels, "");
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
    Ok(())
}

/// Sets a Node's pool label to `value` (the label written last, as an edit appends it).
fn set_pool_label(labels: &mut Box<[(Arc<str>, Arc<str>)]>, value: &str) {
    let mut v = std::mem::take(labels).into_vec();
    v.retain(|(k, _)| &**k != POOL_LABEL_KEY);
    v.push((POOL_LABEL_KEY.into(), value.into()));
    *labels = v.into_boxed_slice();
}

/// Writes (or removes) `node`'s `path-mtu` entry about `peer`; the node must have a Node
/// object to carry the annotation.
fn set_path_mtu(
    input: &mut Input,
    node: &str,
    peer: &str,
    mtu: Option<u32>,
) -> Result<(), MutationError> {
    let Some(n) = input.objects.iter_mut().find_map(|o| match o {
        RawObject::Node(n) if n.meta.name == *node => Some(n),
        _ => None,
    }) else {
        return Err(MutationError::NotApplicable(format!(
            "node {node} has no Node object to carry a path-mtu annotation"
        )));
    };
    let mut paths = n.path_mtu.take().unwrap_or_else(|| {
        Box::new(RawPathMtus {
            entries: Vec::new(),
            line: 0,
        })
    });
    paths.entries.retain(|e| *e.peer != *peer);
    if let Some(m) = mtu {
        paths.entries.push(RawPathEntry {
            peer: peer.into(),
            mtu: m,
            invalid: None,
        });
    }
    n.path_mtu = (!paths.entries.is_empty()).then_some(paths);
    Ok(())
}

/// Promotes `node` into `pool` by its pool label; the pool must exist and the node have a Node
/// object.
fn promote(input: &mut Input, node: &str, pool: &str) -> Result<(), MutationError> {
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
            set_pool_label(&mut n.labels, pool);
            hit = true;
        }
    }
    if !hit {
        return Err(MutationError::NotApplicable(format!(
            "node {node} has no Node object to label (promotion needs one)"
        )));
    }
    Ok(())
}
