//! Applying the node's plan through dataplane-linux, then publishing what only this node can
//! know (`agent.md`, "Reconcile"): its underlay MTU on its own Node and, on a gateway, its
//! forwarding MTUs on its own GatewayPoolNode — only after the dataplane work succeeded, and only
//! when the value changed.

use crate::agent::AgentArgs;
use crate::dataplane::{self, FabricOptions};
use crate::k8s::kinds::ResourceKind;
use anyhow::{Context, Result, anyhow};
use kube::Client;
use kube::api::{Api, DynamicObject, Patch, PatchParams};
use serde_json::json;
use std::collections::BTreeMap;
use topology_core::decode::{Decoded, FORWARDING_ANNOTATION, Kind, RawObject, UNDERLAY_ANNOTATION};
use topology_core::model::Topology;

/// What one apply produced, for publication.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Applied {
    /// The underlay MTU this node used for itself.
    pub underlay: Option<u32>,
    /// The annotation value the Node carries now.
    pub underlay_published: Option<u32>,
    /// Forwarding MTUs to publish (gateways): prefix → MTU.
    pub forwarding: Option<BTreeMap<String, u32>>,
    /// What the GatewayPoolNode carries now.
    pub forwarding_published: BTreeMap<String, u32>,
    /// The GatewayPoolNode object of this gateway, when there is one.
    pub gateway_pool_node: Option<String>,
    /// Kernel writes made.
    pub writes: usize,
}

fn fabric(args: &AgentArgs) -> Result<FabricOptions> {
    let mut pods = Vec::new();
    for p in &args.pods {
        let (ns, ifname) = p
            .rsplit_once(':')
            .ok_or_else(|| anyhow!("--pod {p}: expected NETNS_PATH:IFNAME"))?;
        pods.push((ns.into(), ifname.to_string()));
    }
    Ok(FabricOptions {
        bridge: args.bridge.clone(),
        cni_config: args.cni_config.clone(),
        pods,
    })
}

fn dp_settings(args: &AgentArgs) -> dataplane_linux::Settings {
    dataplane_linux::Settings {
        table: args.route_table,
        rule_priority: args.rule_priority,
        route_protocol: args.route_protocol,
        vxlan_vni: args.vxlan_vni,
        vxlan_port: args.vxlan_port,
        ..Default::default()
    }
}

/// The dataplane step of a reconcile, behind a trait so tests can fail it on purpose.
pub trait Applier: Send + Sync {
    /// Resolves the node's plan from `decoded` and makes the dataplane match it (blocking).
    fn apply(&self, args: &AgentArgs, decoded: &Decoded) -> Result<Applied>;
}

/// The real dataplane: rtnetlink through dataplane-linux.
pub struct Netlink;

impl Applier for Netlink {
    fn apply(&self, args: &AgentArgs, decoded: &Decoded) -> Result<Applied> {
        apply(args, decoded)
    }
}

/// Resolves the node's plan and applies it (blocking: run it on a blocking thread).
pub fn apply(args: &AgentArgs, decoded: &Decoded) -> Result<Applied> {
    let fabric = fabric(args)?;
    let dp = dp_settings(args);
    let netns = args.netns.as_ref().map(std::path::PathBuf::from);
    let mut settings = args.settings();
    let topo = Topology::build(decoded.objects.iter(), decoded.diagnostics.iter().cloned());
    let node = topo
        .node_id(&args.node_name)
        .ok_or_else(|| anyhow!("node {} is not in the topology (no Site?)", args.node_name))?;
    let info = topo.node(node);
    let mut underlay = None;
    if args.detect_underlay {
        let mut solver = mtu_solver::Solver::new(&topo, settings.clone());
        let plan = solver.plan(node);
        let addr = dataplane::identity_addr(&topo, &plan)
            .ok_or_else(|| anyhow!("node {} has no address", args.node_name))?;
        let desired = dataplane::desired_state(&topo, &plan, addr, &fabric);
        let peers: Vec<_> = plan.links.iter().filter_map(|l| l.peer_addr).collect();
        underlay = dataplane::detect_underlay(&desired, &dp, netns.as_deref(), &peers)
            .map_err(|e| anyhow!("dataplane: underlay detection: {e}"))?;
        if let Some(u) = underlay {
            // `underlay-mtu-max` still caps it (the solver applies the annotation).
            settings
                .underlay_overrides
                .insert(args.node_name.clone(), u);
            settings.default_underlay = u;
        }
    }
    let mut solver = mtu_solver::Solver::new(&topo, settings);
    let plan = solver.plan(node);
    let addr = dataplane::identity_addr(&topo, &plan)
        .ok_or_else(|| anyhow!("node {} has no address", args.node_name))?;
    let desired = dataplane::desired_state(&topo, &plan, addr, &fabric);
    let report =
        dataplane::apply(&desired, &dp, netns.as_deref()).map_err(|e| anyhow!("dataplane: {e}"))?;
    let forwarding = plan.published.as_ref().map(|ps| {
        ps.iter()
            .map(|p| (p.destination.to_string(), p.mtu.mtu.0))
            .collect::<BTreeMap<_, _>>()
    });
    let gateway_pool_node = decoded.objects.iter().find_map(|o| match o {
        RawObject::GatewayPoolNode(g) if g.node_name == args.node_name => Some(g.meta.name.clone()),
        _ => None,
    });
    Ok(Applied {
        underlay,
        underlay_published: info
            .underlay
            .as_ref()
            .filter(|u| u.invalid.is_none())
            .map(|u| u.mtu),
        forwarding,
        forwarding_published: info
            .published
            .iter()
            .map(|(p, m)| (p.to_string(), m.0))
            .collect(),
        gateway_pool_node,
        writes: report.writes.len(),
    })
}

/// Publishes what changed, after a successful apply.
pub async fn publish(client: &Client, node: &str, a: &Applied) -> Result<()> {
    if let Some(u) = a.underlay
        && a.underlay_published != Some(u)
    {
        let nodes: Api<k8s_openapi::api::core::v1::Node> = Api::all(client.clone());
        let patch = json!({"metadata": {"annotations": {UNDERLAY_ANNOTATION: u.to_string()}}});
        nodes
            .patch(node, &PatchParams::default(), &Patch::Merge(&patch))
            .await
            .with_context(|| format!("cannot publish the underlay MTU on Node {node}"))?;
    }
    if let Some(fwd) = &a.forwarding
        && *fwd != a.forwarding_published
    {
        let Some(name) = &a.gateway_pool_node else {
            tracing::warn!(
                node,
                "no GatewayPoolNode names this gateway; forwarding MTUs are not published"
            );
            return Ok(());
        };
        let ar = ResourceKind::of(Kind::GatewayPoolNode).api_resource();
        let api: Api<DynamicObject> = Api::all_with(client.clone(), &ar);
        let value = serde_json::to_string(fwd).context("cannot encode forwarding MTUs")?;
        let patch = json!({"metadata": {"annotations": {FORWARDING_ANNOTATION: value}}});
        api.patch(name, &PatchParams::default(), &Patch::Merge(&patch))
            .await
            .with_context(|| format!("cannot publish forwarding MTUs on GatewayPoolNode {name}"))?;
    }
    Ok(())
}
