//! One reconcile turn, the same whatever the source and the applier, in two steps. [`resolve`]
//! first asks whether the input can change the node's plan at all: against what the last turn
//! that applied [`Kept`] (the plan's footprint, `mtu_solver::locality`), the input's delta (a
//! change of caps that none of the node's values considered cannot) ends the turn there
//! ([`Turn::Unreached`]: no topology, no plan, no write). Otherwise it takes a delta of caps
//! alone into the kept topology, or builds the topology from the input's objects, and plans the
//! node once on it: on the underlay it assumes (stated, or what the last turn detected), detects
//! the own underlay through the applier from that same plan when asked to, and plans again only
//! when the detection contradicts the assumption. The plan
//! says which Sites and peers the node links to ([`Linked`]), which the API source needs for its
//! watches. [`apply`] hands the plan's desired state to the applier and says what is left to
//! publish. Blocking: the loop runs both on a blocking thread.

use super::applier::{Applied, Applier};
use super::failure::{Failure, KernelError, ResolveError};
use super::input::{Input, Objects};
use super::probing::Probed;
use crate::dataplane::{self, FabricOptions};
use crate::settings::{self, Underlay};
use mtu_solver::Solver;
#[cfg(debug_assertions)]
use mtu_solver::locality::Delta;
use mtu_solver::locality::Footprint;
use mtu_solver::report::ResolveOut;
use mtu_solver::report::{self, Renderer};
use std::collections::{BTreeMap, BTreeSet};
use std::net::IpAddr;
use std::sync::Arc;
use topology_core::decode::RawObject;
use topology_core::diag::sort_diagnostics;
use topology_core::model::Topology;

/// What a gateway or any node has to publish after a successful apply, with what the cluster
/// carries now (publication only writes what changed).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Publication {
    /// The underlay MTU this node used for itself.
    pub underlay: u32,
    /// What its Node's `underlay-mtu` annotation says now.
    pub underlay_published: Option<u32>,
    /// Forwarding MTUs (gateways): prefix → MTU.
    pub forwarding: Option<BTreeMap<String, u32>>,
    /// What its GatewayPoolNode carries now.
    pub forwarding_published: BTreeMap<String, u32>,
    /// Its GatewayPoolNode, when one names it.
    pub gateway_pool_node: Option<String>,
    /// The node's `path-mtu` entries to publish, peer → MTU, when the agent owns the
    /// annotation (`--underlay-from-probe`); none removes the annotation.
    pub paths: Option<BTreeMap<String, u32>>,
    /// What its Node's `path-mtu` annotation says now, about existing peers.
    pub paths_published: BTreeMap<String, u32>,
}

/// The result of a successful reconcile.
#[derive(Clone, Debug)]
pub struct Outcome {
    /// The node's plan: the `resolve -o json` document for this node alone (what `--dry-run`
    /// prints and `/status` shows).
    pub document: Arc<ResolveOut>,
    /// Values in the plan.
    pub values: usize,
    /// The node's Site.
    pub site: String,
    /// Its pool (`None`: a worker).
    pub pool: Option<String>,
    /// What the applier did.
    pub applied: Applied,
    /// MTUs the kernel now carries, by item (`device/vxlan0`, `fabric/cni0`); empty for a dry
    /// run.
    pub mtus: Vec<(String, u32)>,
    /// What to publish.
    pub publication: Publication,
    /// The node's own underlay before any probe lowered it (stated or detected).
    pub base_underlay: u32,
    /// The plan's links as probes see them.
    pub targets: Vec<mtu_solver::probe::Target>,
    /// How often the turn planned the node: 1, or 2 when detection found an underlay other
    /// than the one assumed.
    pub plans: usize,
    /// Debug builds only (always false otherwise): the turn used what the last one kept, which
    /// planned otherwise than a full resolve; the full resolve's plan was applied. A bug.
    pub corrected: bool,
    /// The desired state applied: what a repair applies again while the input is the same.
    pub desired: Arc<dataplane_linux::DesiredState>,
}

/// What a turn that applied keeps of its input and plan for the next turn, which resolves
/// under the same settings (the same probed lowering and assumed underlay): the plan can change
/// only if the input's delta reaches its footprint ([`mtu_solver::locality::Delta::reaches`]),
/// and a delta of caps alone is taken into the kept topology in place.
#[derive(Debug)]
pub struct Kept {
    /// The topology the plan was resolved on.
    topology: Topology,
    footprint: Footprint,
    probed: Probed,
    base_underlay: u32,
    /// The Sites and peers of the plan: what the source must still watch while it stands.
    linked: Linked,
    /// The applied desired state, to check under `debug_assertions` that a turn that ends
    /// unreached would have planned the same.
    #[cfg(debug_assertions)]
    desired: dataplane_linux::DesiredState,
}

impl Kept {
    /// The Sites and peers of the plan applied.
    pub fn linked(&self) -> &Linked {
        &self.linked
    }
}

/// What a turn's resolve found.
pub enum Turn {
    /// The input cannot change the plan the last turn applied: nothing to do; what that turn
    /// kept stands.
    Unreached(Box<Kept>),
    /// A plan to apply.
    Resolved(Box<Resolved>),
}

/// The Sites a plan links the node into (its own included) and its link peers.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Linked {
    /// Site names.
    pub sites: BTreeSet<String>,
    /// Peer node names.
    pub peers: BTreeSet<String>,
}

/// A turn's plan, resolved and not yet applied.
pub struct Resolved {
    planned: Planned,
    /// The plan of a full resolve, applied because the kept state planned otherwise (debug
    /// builds check every turn that used kept state: a bug, reported in [`Outcome::corrected`]).
    corrected: bool,
    base_underlay: u32,
    underlay: u32,
    gateway_pool_node: Option<String>,
    plans: usize,
    kept: Kept,
}

impl Resolved {
    /// The Sites and peers the plan links the node to.
    pub fn linked(&self) -> &Linked {
        &self.planned.linked
    }

    /// The node's own underlay before any probe lowered it (stated or detected): what the next
    /// turn assumes.
    pub fn base_underlay(&self) -> u32 {
        self.base_underlay
    }

    /// How often the turn planned the node.
    pub fn plans(&self) -> usize {
        self.plans
    }
}

/// Resolves `input` for the settings' node, unless `last` (what the last applied turn kept,
/// given only when the turn is for a change of the input) shows by the input's delta that it
/// cannot change the plan: then no object is asked for. A delta of caps alone is taken into
/// the kept topology in place; any other change builds the topology from the input's objects.
/// The node is planned once on that topology, on the underlay `assumed` (what the last turn
/// detected; ignored when the underlay is stated), the own underlay detected from that plan
/// when the settings ask for detection, and the node planned again only when the detected
/// underlay is not the assumed one. `probed` is what the node's probes found below the plan
/// (`--underlay-from-probe`): the node's own underlay, or the path MTUs of the narrow pairs,
/// which replace the node's own `path-mtu` entries; it lowers, never raises. The input's objects are dropped once the topology is built (and a kept topology that
/// cannot be used before that): those the source does not keep never share the peak with the
/// plan.
pub fn resolve(
    s: &settings::Agent,
    input: Input,
    applier: &dyn Applier,
    probed: &Probed,
    assumed: Option<u32>,
    last: Option<Kept>,
) -> Result<Turn, Failure> {
    let last = last.filter(|k| k.probed == *probed && assumed == Some(k.base_underlay));
    let Some(mut kept) = last else {
        let r = fresh(s, input, applier, probed, assumed)?;
        return Ok(Turn::Resolved(Box::new(r)));
    };
    if !input.delta().reaches(&kept.footprint) {
        #[cfg(debug_assertions)]
        if let Some(r) = differs_from_full(s, input, applier, probed, assumed, &kept.desired)? {
            tracing::error!(
                "locality: an input judged unable to change the plan changed it; applying the \
                 new plan"
            );
            return Ok(Turn::Resolved(Box::new(r)));
        }
        return Ok(Turn::Unreached(Box::new(kept)));
    }
    if !input.delta().caps_alone() {
        drop(kept);
        let r = fresh(s, input, applier, probed, assumed)?;
        return Ok(Turn::Resolved(Box::new(r)));
    }
    let delta = input.delta().clone();
    let objects = input.objects();
    delta.take_caps(&mut kept.topology, objects.iter());
    let gpn = gateway_pool_node(&objects, &s.node);
    let r = resolve_on(s, kept.topology, gpn, applier, probed, assumed)?;
    #[cfg(debug_assertions)]
    if let Some(full) = differs_from_full(
        s,
        Input::new(Delta::structure(), move || objects),
        applier,
        probed,
        assumed,
        &r.kept.desired,
    )? {
        tracing::error!(
            "caps taken into the kept topology planned otherwise than a full build; applying \
             the full build's plan"
        );
        return Ok(Turn::Resolved(Box::new(full)));
    }
    Ok(Turn::Resolved(Box::new(r)))
}

/// The turn's plan on a topology built from the input's objects (dropped once it is built).
fn fresh(
    s: &settings::Agent,
    input: Input,
    applier: &dyn Applier,
    probed: &Probed,
    assumed: Option<u32>,
) -> Result<Resolved, Failure> {
    let objects = input.objects();
    let gpn = gateway_pool_node(&objects, &s.node);
    let topo = Topology::build(objects.iter(), objects.diagnostics().cloned());
    drop(objects);
    resolve_on(s, topo, gpn, applier, probed, assumed)
}

/// Under `debug_assertions`: the turn resolved again from the input's objects alone; its plan,
/// marked corrected, when it differs from `desired`.
#[cfg(debug_assertions)]
fn differs_from_full(
    s: &settings::Agent,
    input: Input,
    applier: &dyn Applier,
    probed: &Probed,
    assumed: Option<u32>,
    desired: &dataplane_linux::DesiredState,
) -> Result<Option<Resolved>, Failure> {
    let mut r = fresh(s, input, applier, probed, assumed)?;
    r.corrected = true;
    Ok((r.planned.desired != *desired).then_some(r))
}

/// The turn's plan on `topo`: planned on the assumed underlay, detected, and planned again
/// when detection says otherwise.
fn resolve_on(
    s: &settings::Agent,
    mut topo: Topology,
    gateway_pool_node: Option<String>,
    applier: &dyn Applier,
    probed: &Probed,
    assumed: Option<u32>,
) -> Result<Resolved, Failure> {
    let paths = own_paths(&mut topo, &s.node, probed);
    let assumed = match s.underlay {
        Underlay::Fixed(u) => u,
        Underlay::Detect => assumed.unwrap_or(s.solver.default_underlay),
    };
    let mut planned = plan(
        &topo,
        &s.node,
        on_underlay(s, assumed, probed.underlay),
        &s.fabric,
    )?;
    let mut plans = 1;
    let base_underlay = match s.underlay {
        Underlay::Fixed(u) => u,
        Underlay::Detect => applier
            .detect_underlay(&planned.desired, &planned.peers)
            .map_err(|e| Failure::Detect(KernelError::Dataplane(e)))?
            .unwrap_or(s.solver.default_underlay),
    };
    if base_underlay != assumed {
        planned = plan(
            &topo,
            &s.node,
            on_underlay(s, base_underlay, probed.underlay),
            &s.fabric,
        )?;
        plans += 1;
    }
    planned.publication.paths = paths.publish;
    planned.publication.paths_published = paths.published;
    let kept = Kept {
        footprint: std::mem::take(&mut planned.footprint),
        probed: probed.clone(),
        base_underlay,
        linked: planned.linked.clone(),
        #[cfg(debug_assertions)]
        desired: planned.desired.clone(),
        topology: topo,
    };
    Ok(Resolved {
        planned,
        corrected: false,
        base_underlay,
        underlay: lowered(base_underlay, probed.underlay),
        gateway_pool_node,
        plans,
        kept,
    })
}

/// Applies a resolved plan through `applier`; what the turn keeps for the next one with it.
pub fn apply(resolved: Resolved, applier: &dyn Applier) -> Result<(Outcome, Kept), Failure> {
    let Resolved {
        planned,
        corrected,
        base_underlay,
        underlay,
        gateway_pool_node,
        plans,
        kept,
    } = resolved;
    let applied = applier
        .apply(&planned.desired)
        .map_err(|e| Failure::Dataplane(KernelError::Dataplane(e)))?;
    let mtus = if applied.in_kernel {
        applied_mtus(&planned.desired)
    } else {
        Vec::new()
    };
    let outcome = Outcome {
        document: planned.document,
        values: planned.values,
        site: planned.site,
        pool: planned.pool,
        applied,
        mtus,
        publication: Publication {
            underlay,
            gateway_pool_node,
            ..planned.publication
        },
        base_underlay,
        targets: planned.targets,
        plans,
        corrected,
        desired: Arc::new(planned.desired),
    };
    Ok((outcome, kept))
}

/// A resolved plan and what derives from it.
struct Planned {
    document: Arc<ResolveOut>,
    values: usize,
    site: String,
    pool: Option<String>,
    desired: dataplane_linux::DesiredState,
    peers: Vec<IpAddr>,
    linked: Linked,
    publication: Publication,
    targets: Vec<mtu_solver::probe::Target>,
    footprint: Footprint,
}

/// The node's own `path-mtu` entries: what its annotation says, and what the agent publishes
/// when it owns the annotation.
struct OwnPaths {
    published: BTreeMap<String, u32>,
    publish: Option<BTreeMap<String, u32>>,
}

/// Reads the node's published `path-mtu` entries from `topo` and, when the agent owns the
/// annotation (`probed.owns_paths`), puts the probed entries in their place, so the plan
/// bounds the narrow links before the cluster shows the new annotation; the published ones
/// are kept beside them (at their lowest) while `probed.keep_published` says so.
fn own_paths(topo: &mut Topology, node: &str, probed: &Probed) -> OwnPaths {
    let Some(id) = topo.node_id(node) else {
        return OwnPaths {
            published: BTreeMap::new(),
            publish: None,
        };
    };
    let published: BTreeMap<String, u32> = topo
        .path_mtus_of(id)
        .iter()
        .map(|(p, e)| (topo.node(*p).name.to_string(), e.mtu))
        .collect();
    if !probed.owns_paths {
        return OwnPaths {
            published,
            publish: None,
        };
    }
    let mut publish: BTreeMap<String, u32> = probed
        .paths
        .iter()
        .map(|(p, m)| (p.to_string(), *m))
        .collect();
    if probed.keep_published {
        for (p, m) in &published {
            let e = publish.entry(p.clone()).or_insert(*m);
            *e = (*e).min(*m);
        }
    }
    let entries: Vec<_> = publish
        .iter()
        .filter_map(|(p, m)| topo.node_id(p).map(|peer| (peer, *m)))
        .collect();
    topo.set_path_mtus(id, entries);
    OwnPaths {
        published,
        publish: Some(publish),
    }
}

/// The own underlay after the probes' lowering, if any.
fn lowered(base: u32, probed: Option<u32>) -> u32 {
    probed.map_or(base, |p| p.min(base))
}

/// The solver's settings for a node whose own underlay is `base` before the probes' lowering.
/// Peers without an annotation: the agent's own value bounds what it can see (`model.md`), as
/// stated or detected; a probe's lowering is about the paths towards one peer, not the other
/// nodes' underlays.
fn on_underlay(s: &settings::Agent, base: u32, probed: Option<u32>) -> mtu_solver::Settings {
    let mut solver = s.solver.clone();
    solver
        .underlay_overrides
        .insert(s.node.clone(), lowered(base, probed));
    solver.default_underlay = base;
    solver
}

/// The node's plan under `settings`.
fn plan(
    topo: &Topology,
    node_name: &str,
    settings: mtu_solver::Settings,
    fabric: &FabricOptions,
) -> Result<Planned, ResolveError> {
    let id = topo
        .node_id(node_name)
        .ok_or_else(|| ResolveError::NoNode(node_name.to_string()))?;
    let mut solver = Solver::new(topo, settings);
    let node_plan = solver.plan(id);
    let addr = dataplane::identity_addr(topo, &node_plan)
        .ok_or_else(|| ResolveError::NoAddress(node_name.to_string()))?;
    let desired = dataplane::desired_state(topo, &node_plan, addr, fabric);
    let mut diags = topo.diagnostics.clone();
    diags.extend(node_plan.diagnostics.iter().cloned());
    sort_diagnostics(&mut diags);
    let info = topo.node(id);
    let publication = Publication {
        underlay: 0,
        underlay_published: info
            .underlay
            .as_ref()
            .filter(|u| u.invalid.is_none())
            .map(|u| u.mtu),
        forwarding: node_plan.published.as_ref().map(|ps| {
            ps.iter()
                .map(|p| (p.destination.to_string(), p.mtu.mtu.get()))
                .collect()
        }),
        forwarding_published: info
            .published
            .iter()
            .map(|(p, m)| (p.to_string(), m.get()))
            .collect(),
        gateway_pool_node: None,
        paths: None,
        paths_published: BTreeMap::new(),
    };
    let peers = node_plan.links.iter().filter_map(|l| l.peer_addr).collect();
    let linked = linked(topo, &node_plan);
    let footprint = Footprint::of(&solver, &node_plan);
    let targets = mtu_solver::probe::targets(&mut solver, &node_plan);
    let values = node_plan.value_count();
    let site = topo.site(node_plan.site).name.to_string();
    let pool = node_plan.pool.map(|p| topo.pool(p).name.to_string());
    let plans = [node_plan];
    let mut r = Renderer::new(&solver, mtu_solver::Explanations::Bound);
    let doc = report::resolve_out(topo, &mut r, &plans, &diags);
    Ok(Planned {
        document: Arc::new(doc),
        values,
        site,
        pool,
        desired,
        peers,
        linked,
        publication,
        targets,
        footprint,
    })
}

/// The Sites `plan`'s node has links into (its own included) and its link peers.
pub fn linked(topo: &Topology, plan: &mtu_solver::NodePlan) -> Linked {
    let mut out = Linked::default();
    out.sites.insert(topo.site_name_of(plan.node).to_string());
    for l in &plan.links {
        out.sites.insert(topo.site_name_of(l.peer).to_string());
        out.peers.insert(topo.node(l.peer).name.to_string());
    }
    out
}

/// The GatewayPoolNode of `node`, when one names it.
fn gateway_pool_node(objects: &Objects, node: &str) -> Option<String> {
    objects.iter().find_map(|o| match o {
        RawObject::GatewayPoolNode(g) if g.node_name == node => Some(g.meta.name.clone()),
        _ => None,
    })
}

/// The device and fabric MTUs of a desired state, by item.
fn applied_mtus(desired: &dataplane_linux::DesiredState) -> Vec<(String, u32)> {
    let mut out: Vec<(String, u32)> = desired
        .devices
        .iter()
        .map(|d| (format!("device/{}", d.name), d.mtu))
        .collect();
    if let Some(f) = &desired.fabric {
        out.push((format!("fabric/{}", f.bridge), f.mtu));
    }
    out
}
