//! The JSON (and YAML) form of the picture, for tools: the same facts as the DOT form, as data.
//!
//! `nodes` are the Sites and pools (`id` is `Kind/name`), `edges` the relationships between them
//! (every member listed; a SiteGatewayPoolAssignment joins its Sites and pools) and the Sites a
//! pool's gateways run in, each with its cap, the lowest link MTU it carries, what binds it and
//! whether its own cap binds something shown (`bottleneck`); `routes` the lowest route MTU from
//! the workers of each Site to each other Site with workers.

use super::facts::{Facts, Low, Target, bound_text, cap_object, gather, lower, ordered};
use super::select::Selection;
use mtu_solver::Solver;
use mtu_solver::report::{API_VERSION, DiagOut};
use serde::Serialize;
use std::collections::BTreeMap;
use topology_core::ids::{AssignmentId, PeeringId, PoolId, PoolPeeringId, SiteId};
use topology_core::model::{ObjRef, Relation, Topology};

/// The `Graph` document.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct GraphDoc {
    api_version: &'static str,
    kind: &'static str,
    nodes: Vec<NodeOut>,
    edges: Vec<EdgeOut>,
    routes: Vec<RouteOut>,
    diagnostics: Vec<DiagOut>,
}

/// A cap as written: its effective value, and the written one when it failed closed.
#[derive(Serialize)]
struct CapOut {
    mtu: u32,
    #[serde(skip_serializing_if = "Option::is_none")]
    invalid: Option<String>,
}

/// A lowest value and what binds it: the term in words and, when it is a cap, its object.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct LowOut {
    mtu: u32,
    bound_by: String,
    binding_object: Option<String>,
}

/// What a pool's gateways publish for one Site or routed CIDR (lowest and highest).
#[derive(Serialize)]
struct PublishOut {
    #[serde(rename = "for")]
    target: String,
    min: u32,
    max: u32,
}

/// A Site or a pool.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct NodeOut {
    id: String,
    kind: &'static str,
    name: String,
    /// `External` or `Internal` (pools).
    #[serde(rename = "type", skip_serializing_if = "Option::is_none")]
    pool_type: Option<&'static str>,
    /// Workers of a Site, gateways of a pool.
    members: Vec<String>,
    cap: Option<CapOut>,
    /// A Site's direct-mesh component cap, when it comes from another object or Site.
    #[serde(skip_serializing_if = "Option::is_none")]
    component_cap: Option<LowOut>,
    /// The lowest link inside: the mesh of a Site's workers, of a pool's gateways.
    lowest_link: Option<LowOut>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    publishes: Vec<PublishOut>,
    bottleneck: bool,
}

/// A relationship, or the Site a pool's gateways run in.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct EdgeOut {
    /// `SitePeering`, `SiteGatewayPoolAssignment`, `GatewayPoolPeering` or `GatewaysIn`.
    kind: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    name: Option<String>,
    /// The `id`s of the nodes it joins.
    members: Vec<String>,
    /// `meshNodes` of a SitePeering.
    #[serde(skip_serializing_if = "Option::is_none")]
    mesh_nodes: Option<bool>,
    /// The gateways of a `GatewaysIn` edge.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    gateways: Vec<String>,
    cap: Option<CapOut>,
    lowest_link: Option<LowOut>,
    bottleneck: bool,
}

/// The lowest route MTU from the workers of one Site to another.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct RouteOut {
    from: String,
    to: String,
    mtu: u32,
    bound_by: String,
    binding_object: Option<String>,
}

/// The document of the Sites and pools `sel` selects in `solver`'s cluster, with
/// `diagnostics`: a relationship is kept with its selected members when two of them are
/// selected (a Site and a pool for an assignment), a route when both its Sites are.
pub(super) fn graph_doc(
    solver: &mut Solver<'_>,
    diagnostics: Vec<DiagOut>,
    sel: &Selection,
) -> GraphDoc {
    let f = gather(solver);
    let solver: &Solver<'_> = solver;
    let topo = solver.topo();
    let mut nodes: Vec<NodeOut> = (0..topo.sites.len())
        .map(SiteId::from_idx)
        .filter(|s| sel.has_site(*s))
        .map(|s| site_node(solver, &f, s))
        .collect();
    nodes.extend(
        (0..topo.pools.len())
            .map(PoolId::from_idx)
            .filter(|p| sel.has_pool(*p))
            .map(|p| pool_node(solver, &f, p)),
    );
    let mut edges = relationship_edges(solver, &f, sel);
    edges.extend(gateway_edges(topo, sel));
    let routes = f
        .routes
        .iter()
        .filter(|((a, b), _)| sel.has_site(*a) && sel.has_site(*b))
        .map(|((a, b), l)| {
            let low = low_out(solver, *l);
            RouteOut {
                from: topo.label(ObjRef::Site(*a)),
                to: topo.label(ObjRef::Site(*b)),
                mtu: low.mtu,
                bound_by: low.bound_by,
                binding_object: low.binding_object,
            }
        })
        .collect();
    GraphDoc {
        api_version: API_VERSION,
        kind: "Graph",
        nodes,
        edges,
        routes,
        diagnostics,
    }
}

fn low_out(solver: &Solver<'_>, l: Low) -> LowOut {
    LowOut {
        mtu: l.mtu,
        bound_by: bound_text(solver, l.bound),
        binding_object: cap_object(solver, l.bound).map(|o| solver.topo().label(o)),
    }
}

fn cap_out(topo: &Topology, o: ObjRef) -> Option<CapOut> {
    topo.cap_of(o).map(|c| CapOut {
        mtu: c.mtu.get(),
        invalid: c.invalid.clone(),
    })
}

fn site_node(solver: &Solver<'_>, f: &Facts, sid: SiteId) -> NodeOut {
    let topo = solver.topo();
    let o = ObjRef::Site(sid);
    let comp = topo.component(topo.comp(sid));
    let component_cap = comp
        .cap
        .filter(|(_, b)| comp.sites.len() > 1 || *b != o)
        .map(|(m, b)| LowOut {
            mtu: m.get(),
            bound_by: format!("{} cap (component)", topo.label(b)),
            binding_object: Some(topo.label(b)),
        });
    NodeOut {
        id: topo.label(o),
        kind: "Site",
        name: topo.site(sid).name.to_string(),
        pool_type: None,
        members: topo
            .workers_of(sid)
            .iter()
            .map(|n| topo.node(*n).name.to_string())
            .collect(),
        cap: cap_out(topo, o),
        component_cap,
        lowest_link: f.in_site.get(&sid).map(|l| low_out(solver, *l)),
        publishes: Vec::new(),
        bottleneck: f.binding.contains(&o),
    }
}

fn pool_node(solver: &Solver<'_>, f: &Facts, pid: PoolId) -> NodeOut {
    let topo = solver.topo();
    let o = ObjRef::Pool(pid);
    let pool = topo.pool(pid);
    let publishes = f
        .publishes
        .get(&pid)
        .into_iter()
        .flatten()
        .map(|(target, (lo, hi))| PublishOut {
            target: match target {
                Target::Site(t) => topo.label(ObjRef::Site(*t)),
                Target::Routed(c) => c.to_string(),
            },
            min: *lo,
            max: *hi,
        })
        .collect();
    NodeOut {
        id: topo.label(o),
        kind: "GatewayPool",
        name: pool.name.to_string(),
        pool_type: Some(if pool.internal {
            "Internal"
        } else {
            "External"
        }),
        members: pool
            .gateways
            .iter()
            .map(|g| topo.node(*g).name.to_string())
            .collect(),
        cap: cap_out(topo, o),
        component_cap: None,
        lowest_link: f.in_pool.get(&pid).map(|l| low_out(solver, *l)),
        publishes,
        bottleneck: f.binding.contains(&o),
    }
}

/// Every relationship that relates something, with the lowest link between its members.
fn relationship_edges(solver: &Solver<'_>, f: &Facts, sel: &Selection) -> Vec<EdgeOut> {
    let topo = solver.topo();
    let sites_of = |r: &Relation| -> Vec<SiteId> {
        r.sites
            .iter()
            .copied()
            .filter(|s| sel.has_site(*s))
            .collect()
    };
    let pools_of = |r: &Relation| -> Vec<PoolId> {
        r.pools
            .iter()
            .copied()
            .filter(|p| sel.has_pool(*p))
            .collect()
    };
    let site_ids = |sites: &[SiteId]| -> Vec<String> {
        sites.iter().map(|s| topo.label(ObjRef::Site(*s))).collect()
    };
    let pool_ids = |pools: &[PoolId]| -> Vec<String> {
        pools.iter().map(|p| topo.label(ObjRef::Pool(*p))).collect()
    };
    let mut out = Vec::new();
    let mut edge = |kind: &'static str, r: &Relation, o: ObjRef, members, low: Option<Low>| {
        out.push(EdgeOut {
            kind,
            name: Some(r.name.to_string()),
            members,
            mesh_nodes: (kind == "SitePeering").then_some(r.mesh),
            gateways: Vec::new(),
            cap: cap_out(topo, o),
            lowest_link: low.map(|l| low_out(solver, l)),
            bottleneck: f.binding.contains(&o),
        });
    };
    for (i, r) in topo
        .site_peerings
        .iter()
        .enumerate()
        .filter(|(_, r)| r.relates)
    {
        let sites = sites_of(r);
        if sites.len() < 2 {
            continue;
        }
        let low = lowest_between(&sites, |a, b| f.site_site.get(&ordered(a, b)));
        let o = ObjRef::SitePeering(PeeringId::from_idx(i));
        edge("SitePeering", r, o, site_ids(&sites), low);
    }
    for (i, r) in topo
        .assignments
        .iter()
        .enumerate()
        .filter(|(_, r)| r.relates)
    {
        let (sites, pools) = (sites_of(r), pools_of(r));
        if sites.is_empty() || pools.is_empty() {
            continue;
        }
        let mut low = None;
        for s in &sites {
            for p in &pools {
                if let Some(l) = f.site_pool.get(&(*s, *p)) {
                    lower(&mut low, l.mtu, l.bound);
                }
            }
        }
        let o = ObjRef::Assignment(AssignmentId::from_idx(i));
        let mut members = site_ids(&sites);
        members.extend(pool_ids(&pools));
        edge("SiteGatewayPoolAssignment", r, o, members, low);
    }
    for (i, r) in topo
        .pool_peerings
        .iter()
        .enumerate()
        .filter(|(_, r)| r.relates)
    {
        let pools = pools_of(r);
        if pools.len() < 2 {
            continue;
        }
        let low = lowest_between(&pools, |a, b| f.pool_pool.get(&ordered(a, b)));
        let o = ObjRef::PoolPeering(PoolPeeringId::from_idx(i));
        edge("GatewayPoolPeering", r, o, pool_ids(&pools), low);
    }
    out
}

/// The lowest of `between` over every pair of `members`.
fn lowest_between<'f, T: Copy>(
    members: &[T],
    between: impl Fn(T, T) -> Option<&'f Low>,
) -> Option<Low> {
    let mut low = None;
    for (k, a) in members.iter().enumerate() {
        for b in members.iter().skip(k + 1) {
            if let Some(l) = between(*a, *b) {
                lower(&mut low, l.mtu, l.bound);
            }
        }
    }
    low
}

/// A `GatewaysIn` edge from each pool to each Site its gateways run in.
fn gateway_edges(topo: &Topology, sel: &Selection) -> Vec<EdgeOut> {
    let mut by_pair: BTreeMap<(PoolId, SiteId), Vec<String>> = BTreeMap::new();
    for (i, _) in topo.sites.iter().enumerate() {
        let sid = SiteId::from_idx(i);
        for g in topo.gateways_in(sid) {
            let node = topo.node(*g);
            if let Some(p) = node
                .pool()
                .filter(|p| sel.has_pool(*p) && sel.has_site(sid))
            {
                by_pair
                    .entry((p, sid))
                    .or_default()
                    .push(node.name.to_string());
            }
        }
    }
    by_pair
        .into_iter()
        .map(|((p, s), gateways)| EdgeOut {
            kind: "GatewaysIn",
            name: None,
            members: vec![topo.label(ObjRef::Pool(p)), topo.label(ObjRef::Site(s))],
            mesh_nodes: None,
            gateways,
            cap: None,
            lowest_link: None,
            bottleneck: false,
        })
        .collect()
}
