//! One reconcile, the same whatever the source and the applier: the node's plan from the
//! objects, its own underlay (stated, or detected through the applier), the plan again on that
//! underlay, the desired state applied, and what is left to publish. Blocking: the loop runs it
//! on a blocking thread.

use super::applier::{Applied, Applier};
use super::failure::{Failure, KernelError, ResolveError};
use crate::dataplane::{self, FabricOptions};
use crate::settings::{self, Underlay};
use mtu_solver::Solver;
use mtu_solver::report::ResolveOut;
use mtu_solver::report::{self, Renderer};
use std::collections::BTreeMap;
use std::net::IpAddr;
use std::sync::Arc;
use topology_core::decode::{Decoded, RawObject};
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
}

/// Resolves `decoded` for the settings' node and applies it through `applier`. `probed` is
/// the lowest underlay the node's probes found below the plan (`--underlay-from-probe`): it
/// lowers the node's own underlay, never raises it. The decoded objects are dropped once the
/// topology is built, so they never share the peak with the plan.
pub fn reconcile(
    s: &settings::Agent,
    decoded: Decoded,
    applier: &dyn Applier,
    probed: Option<u32>,
) -> Result<Outcome, Failure> {
    let gateway_pool_node = gateway_pool_node(&decoded, &s.node);
    let Decoded {
        objects,
        diagnostics,
        ..
    } = decoded;
    let topo = Topology::build(objects.iter(), diagnostics);
    drop(objects);
    let base_underlay = own_underlay(s, &topo, applier)?;
    let underlay = probed.map_or(base_underlay, |p| p.min(base_underlay));
    let mut solver_settings = s.solver.clone();
    solver_settings
        .underlay_overrides
        .insert(s.node.clone(), underlay);
    // Peers without an annotation: the agent's own value bounds what it can see (`model.md`),
    // as stated or detected; a probe's lowering is about the paths towards one peer, not the
    // other nodes' underlays.
    solver_settings.default_underlay = base_underlay;
    let planned = plan(&topo, &s.node, solver_settings, &s.fabric)?;
    let applied = applier
        .apply(&planned.desired)
        .map_err(|e| Failure::Dataplane(KernelError::Dataplane(e)))?;
    let mtus = if applied.in_kernel {
        applied_mtus(&planned.desired)
    } else {
        Vec::new()
    };
    Ok(Outcome {
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
    })
}

/// A resolved plan and what derives from it.
struct Planned {
    document: Arc<ResolveOut>,
    values: usize,
    site: String,
    pool: Option<String>,
    desired: dataplane_linux::DesiredState,
    peers: Vec<IpAddr>,
    publication: Publication,
    targets: Vec<mtu_solver::probe::Target>,
}

/// The own underlay: as stated, or detected towards the link peers of a first plan (the lowest
/// counts; the stated value when no route says).
fn own_underlay(
    s: &settings::Agent,
    topo: &Topology,
    applier: &dyn Applier,
) -> Result<u32, Failure> {
    match s.underlay {
        Underlay::Fixed(u) => Ok(u),
        Underlay::Detect => {
            let first = plan(topo, &s.node, s.solver.clone(), &s.fabric)?;
            let detected = applier
                .detect_underlay(&first.desired, &first.peers)
                .map_err(|e| Failure::Detect(KernelError::Dataplane(e)))?;
            Ok(detected.unwrap_or(s.solver.default_underlay))
        }
    }
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
    };
    let peers = node_plan.links.iter().filter_map(|l| l.peer_addr).collect();
    let targets = mtu_solver::probe::targets(&mut solver, &node_plan);
    let values = node_plan.value_count();
    let site = topo.site(node_plan.site).name.to_string();
    let pool = node_plan.pool.map(|p| topo.pool(p).name.to_string());
    let plans = [node_plan];
    let mut r = Renderer::new(&solver, false);
    let doc = report::resolve_out(topo, &mut r, &plans, &diags);
    Ok(Planned {
        document: Arc::new(doc),
        values,
        site,
        pool,
        desired,
        peers,
        publication,
        targets,
    })
}

/// The GatewayPoolNode of `node`, when one names it.
fn gateway_pool_node(decoded: &Decoded, node: &str) -> Option<String> {
    decoded.objects.iter().find_map(|o| match o {
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
