//! `unbounded-mtu explain`: why each value of a node is what it is, for a person.

use crate::common::{self, usage};
use crate::output::{Format, TableStyle, diagnostics_table, write_data};
use crate::settings;
use anyhow::Result;
use ipnet::IpNet;
use mtu_solver::explain::ExplId;
use mtu_solver::report::hops::HopOut;
use mtu_solver::report::{Renderer, TermOut};
use mtu_solver::resolver::{Destination, routes_carrying};
use mtu_solver::solver::hops::{Hop, HopTo, RouteHops};
use mtu_solver::{NodePlan, RouteKind, Solver};
use serde::Serialize;
use std::fmt::Write as _;
use std::net::IpAddr;
use topology_core::ids::NodeId;
use topology_core::model::Topology;

/// One explained value.
#[derive(Serialize)]
struct Explained {
    item: String,
    value: u32,
    bound: TermOut,
    terms: Vec<TermOut>,
    #[serde(skip_serializing_if = "Option::is_none")]
    paths: Option<Paths>,
    /// Learned routes: every hop of every forwarding path, the binding ones marked.
    #[serde(skip_serializing_if = "Option::is_none")]
    hops: Option<Vec<HopOut>>,
    /// How many hops are left out of `hops`: off the shown paths and not binding.
    #[serde(rename = "hopsNotShown", skip_serializing_if = "Option::is_none")]
    hops_not_shown: Option<usize>,
}

#[derive(Serialize, Clone)]
struct Paths {
    /// How many forwarding paths there are (the largest u64 when `saturated`).
    total: u64,
    /// The count reached the largest u64: there are at least `total` paths.
    saturated: bool,
    shown: Vec<String>,
}

#[derive(Serialize)]
struct Doc {
    #[serde(rename = "apiVersion")]
    api_version: &'static str,
    kind: &'static str,
    node: String,
    site: String,
    role: String,
    values: Vec<Explained>,
    diagnostics: Vec<mtu_solver::report::DiagOut>,
}

fn describe(topo: &Topology, n: NodeId) -> String {
    let node = topo.node(n);
    let site = &topo.site(node.site).name;
    match node.pool() {
        Some(p) => format!("{} (pool {}, Site {})", node.name, topo.pool(p).name, site),
        None => format!("{}@{}", node.name, site),
    }
}

fn path_text(solver: &Solver<'_>, from: NodeId, hops: &[NodeId], prefix: &IpNet) -> String {
    let topo = solver.topo();
    let mut s = describe(topo, from);
    for h in hops {
        s.push_str(" -> ");
        s.push_str(&describe(topo, *h));
    }
    let origins = solver.net().origins_of(prefix);
    let last = hops.last().copied();
    let end = origins
        .iter()
        .find(|o| last.is_some_and(|g| solver.net().originates(g, o.dest)))
        .map(|o| match o.dest {
            topology_core::net::Dest::Site(d) => format!(" -> Site {}", topo.site(d).name),
            topology_core::net::Dest::Pool(p) => {
                format!(
                    " -> leaves the overlay (routed by pool {})",
                    topo.pool(p).name
                )
            }
        })
        .unwrap_or_default();
    s.push_str(&end);
    s
}

fn explained(r: &Renderer<'_, '_>, solver: &Solver<'_>, item: String, e: ExplId) -> Explained {
    let node = solver.explanations().get(e);
    // Each cap or published term also says where it was written.
    Explained {
        item,
        value: node.value.get(),
        bound: r.located_term(node.bound),
        terms: solver
            .explanations()
            .leaves(e)
            .into_iter()
            .map(|t| r.located_term(t))
            .collect(),
        paths: None,
        hops: None,
        hops_not_shown: None,
    }
}

/// Whether `hop` is on one of `paths` (gateways after `n`, the last one delivering).
fn on_paths(n: NodeId, paths: &[Vec<NodeId>], hop: &Hop) -> bool {
    paths.iter().any(|p| {
        let mut from = n;
        for g in p {
            if hop.from == from && hop.to == HopTo::Node(*g) {
                return true;
            }
            from = *g;
        }
        hop.from == from && !matches!(hop.to, HopTo::Node(_))
    })
}

fn wanted_route(dest: &IpNet, want: &Option<Want>) -> bool {
    match want {
        None => true,
        Some(Want::To(d)) => d.carried_by(dest),
        Some(Want::Peer(_)) => false,
    }
}

/// The order the routes are listed in: for a destination, every route that carries it, longest
/// match first (the library's rule, as `Resolver::explain` answers); otherwise the plan's order.
fn listed_order(plan: &NodePlan, want: &Option<Want>) -> Vec<usize> {
    match want {
        Some(Want::To(d)) => routes_carrying(plan.routes.iter().map(|r| Some(r.destination)), *d),
        _ => (0..plan.routes.len()).collect(),
    }
}

enum Want {
    To(Destination),
    Peer(NodeId),
}

/// Runs `explain`.
pub fn run(args: &settings::Explain) -> Result<()> {
    let decoded = common::load(&args.offline.input)?;
    let topo = common::topology(&decoded)?;
    let n = common::one_node(&topo, &args.selector)?;
    let want = question(&topo, args)?;
    let mut solver = Solver::new(&topo, args.offline.solver.clone());
    let plan: NodePlan = solver.plan(n);
    if let Some(Want::Peer(p)) = want {
        linked(&topo, n, &plan, p)?;
    }
    let shown = shown_routes(&mut solver, n, &plan, &want, args.paths);
    let r = Renderer::new(&solver, true);
    let mut values = link_values(&r, &solver, &plan, &want);
    let (routes, matched) = route_values(&r, &solver, &plan, &want, &shown);
    values.extend(routes);
    if want.is_none() {
        values.extend(node_values(&r, &solver, &plan));
    }
    if let Some(Want::To(_)) = want
        && matched == 0
    {
        return Err(usage(format!(
            "node {} has no route to {}",
            topo.node(n).name,
            args.destination.as_deref().unwrap_or("")
        )));
    }
    let diags = diagnostics(&topo, &plan, &shown);
    let node = topo.node(n);
    let doc = Doc {
        api_version: mtu_solver::report::API_VERSION,
        kind: "Explanation",
        diagnostics: diags
            .iter()
            .map(mtu_solver::report::DiagOut::from)
            .collect(),
        node: node.name.to_string(),
        site: topo.site(node.site).name.to_string(),
        role: match node.pool() {
            Some(p) => format!("gateway of {}", topo.pool(p).name),
            None => "worker".to_string(),
        },
        values,
    };
    match args.format {
        Format::Table(style) => common::write_text(&text(&doc, &diags, style))?,
        Format::Data(f) => write_data(&doc, f)?,
    }
    common::fail_on(args.fail_on, &diags)
}

/// What is asked: a peer's link (`--peer`), the routes to a destination (`--destination`, a
/// CIDR or an address), or every value (None).
fn question(topo: &Topology, args: &settings::Explain) -> Result<Option<Want>> {
    if let Some(p) = &args.peer {
        let id = topo
            .find_node(p)
            .map_err(|e| usage(format!("--peer {p}: {e}")))?;
        return Ok(Some(Want::Peer(id)));
    }
    let Some(d) = &args.destination else {
        return Ok(None);
    };
    if let Ok(net) = d.parse::<IpNet>() {
        Ok(Some(Want::To(Destination::Prefix(net.trunc()))))
    } else if let Ok(a) = d.parse::<IpAddr>() {
        Ok(Some(Want::To(Destination::Addr(a))))
    } else {
        Err(usage(format!(
            "--destination {d}: neither a CIDR nor an IP address"
        )))
    }
}

/// Exit 2 when node `n` has no link to `peer`, naming the peers it has.
fn linked(topo: &Topology, n: NodeId, plan: &NodePlan, peer: NodeId) -> Result<()> {
    if plan.link(peer).is_some() {
        return Ok(());
    }
    let peers: Vec<&str> = plan
        .links
        .iter()
        .map(|l| &*topo.node(l.peer).name)
        .collect();
    Err(usage(format!(
        "--peer {}: node {} has no link to it (its peers: {})",
        topo.node(peer).name,
        topo.node(n).name,
        if peers.is_empty() {
            "none".to_string()
        } else {
            peers.join(", ")
        }
    )))
}

/// The forwarding paths and hops of a learned route that is shown.
struct ShownRoute {
    paths: Paths,
    hops: RouteHops,
    /// Hops before those off the shown paths were left out.
    all_hops: usize,
}

/// Paths and hops for the learned routes that will be shown: the paths counted, not
/// enumerated (a chain of pools multiplies the branches), the first `max_paths` walked; the
/// hops on those paths, and the binding ones wherever they are.
fn shown_routes(
    solver: &mut Solver<'_>,
    n: NodeId,
    plan: &NodePlan,
    want: &Option<Want>,
    max_paths: usize,
) -> Vec<Option<ShownRoute>> {
    let mut out = Vec::with_capacity(plan.routes.len());
    for rt in &plan.routes {
        if rt.kind == RouteKind::Direct || !wanted_route(&rt.destination, want) {
            out.push(None);
            continue;
        }
        let fp = solver.net().forwarding_paths(n, &rt.advertised);
        let walked: Vec<Vec<NodeId>> = fp.iter().take(max_paths).collect();
        let shown = walked
            .iter()
            .map(|p| path_text(solver, n, p, &rt.advertised))
            .collect();
        let mut hops = solver.route_hops(n, rt);
        let all_hops = hops.hops.len();
        hops.hops.retain(|h| h.binds || on_paths(n, &walked, h));
        out.push(Some(ShownRoute {
            paths: Paths {
                total: fp.total(),
                saturated: fp.saturated(),
                shown,
            },
            hops,
            all_hops,
        }));
    }
    out
}

/// The links asked about: every link, or the one to `--peer`.
fn link_values(
    r: &Renderer<'_, '_>,
    solver: &Solver<'_>,
    plan: &NodePlan,
    want: &Option<Want>,
) -> Vec<Explained> {
    let topo = solver.topo();
    plan.links
        .iter()
        .filter(|l| match want {
            None => true,
            Some(Want::Peer(p)) => *p == l.peer,
            Some(_) => false,
        })
        .map(|l| {
            let item = format!(
                "link to {} ({}, {})",
                topo.node(l.peer).name,
                l.kind.as_str(),
                l.protocol
            );
            explained(r, solver, item, l.mtu.expl)
        })
        .collect()
}

/// The routes asked about (with their paths and hops), and how many there are: every route,
/// those to `--destination`, or the direct routes over the link to `--peer`.
fn route_values(
    r: &Renderer<'_, '_>,
    solver: &Solver<'_>,
    plan: &NodePlan,
    want: &Option<Want>,
    shown: &[Option<ShownRoute>],
) -> (Vec<Explained>, usize) {
    let topo = solver.topo();
    let mut values = Vec::new();
    for i in listed_order(plan, want) {
        let (Some(rt), Some(detail)) = (plan.routes.get(i), shown.get(i)) else {
            continue;
        };
        let via_peer = matches!(want, Some(Want::Peer(p)) if rt.kind == RouteKind::Direct && rt.via.contains(p));
        if !(wanted_route(&rt.destination, want) || via_peer) {
            continue;
        }
        let via: Vec<String> = rt
            .via
            .iter()
            .map(|v| topo.node(*v).name.to_string())
            .collect();
        let item = format!(
            "route {} ({}, {}, distance {}, via {})",
            rt.destination,
            rt.ty.as_str(),
            rt.kind.as_str(),
            rt.distance,
            via.join(", ")
        );
        let mut e = explained(r, solver, item, rt.mtu.expl);
        if let Some(d) = detail {
            e.paths = Some(d.paths.clone());
            e.hops = Some(r.hops(&d.hops.hops));
            e.hops_not_shown = Some(d.all_hops.saturating_sub(d.hops.hops.len()));
        }
        values.push(e);
    }
    let matched = values.len();
    (values, matched)
}

/// The node's own values: its devices (the underlay left out), its fabric, and what a gateway
/// publishes.
fn node_values(r: &Renderer<'_, '_>, solver: &Solver<'_>, plan: &NodePlan) -> Vec<Explained> {
    let topo = solver.topo();
    let mut values = Vec::new();
    for d in &plan.devices {
        let name = match &d.device {
            mtu_solver::DeviceRef::Shared(n) => n.to_string(),
            mtu_solver::DeviceRef::PerPeer { name, peer } => name
                .clone()
                .unwrap_or_else(|| format!("(WireGuard device for {})", topo.node(*peer).name)),
            mtu_solver::DeviceRef::Underlay => continue,
        };
        let item = format!("device {name} (largest link it carries)");
        values.push(explained(r, solver, item, d.mtu.expl));
    }
    let fabric = "fabric (pods, bridge, CNI)".to_string();
    values.push(explained(r, solver, fabric, plan.fabric.expl));
    for p in plan.published.iter().flatten() {
        let item = format!("published for {}", p.destination);
        values.push(explained(r, solver, item, p.mtu.expl));
    }
    values
}

/// The input's and the plan's diagnostics, and what the shown routes read of gateways'
/// published values, each once, sorted.
fn diagnostics(
    topo: &Topology,
    plan: &NodePlan,
    shown: &[Option<ShownRoute>],
) -> Vec<topology_core::diag::Diagnostic> {
    let mut diags = topo.diagnostics.clone();
    diags.extend(plan.diagnostics.iter().cloned());
    for d in shown.iter().flatten().flat_map(|s| &s.hops.diagnostics) {
        if !diags.contains(d) {
            diags.push(d.clone());
        }
    }
    topology_core::diag::sort_diagnostics(&mut diags);
    diags
}

/// A term's source, with where it was written when it was read from a file.
fn located(t: &TermOut) -> String {
    match &t.location {
        Some(loc) => format!("{} at {loc}", t.source),
        None => t.source.clone(),
    }
}

fn text(doc: &Doc, diags: &[topology_core::diag::Diagnostic], style: TableStyle) -> String {
    let mut s = String::new();
    let _ = writeln!(s, "{} in Site {}, {}\n", doc.node, doc.site, doc.role);
    for v in &doc.values {
        let _ = writeln!(s, "{}: {}", v.item, v.value);
        let _ = writeln!(
            s,
            "  bound by {} = {}: {}",
            v.bound.term,
            v.bound.value,
            located(&v.bound)
        );
        if v.terms.len() > 1 {
            let _ = writeln!(s, "  terms considered (lowest first):");
            for t in &v.terms {
                let mark = if t == &v.bound { "  <- binds" } else { "" };
                let _ = writeln!(s, "    {:>5}  {}{}", t.value, located(t), mark);
            }
        }
        if let Some(p) = &v.paths {
            let _ = writeln!(
                s,
                "  forwarding paths ({} shown of {}{}):",
                p.shown.len(),
                if p.saturated { "at least " } else { "" },
                p.total
            );
            for line in &p.shown {
                let _ = writeln!(s, "    {line}");
            }
        }
        if let Some(h) = &v.hops {
            hops_text(&mut s, h, v.hops_not_shown.unwrap_or(0));
        }
        s.push('\n');
    }
    s.push_str(&diagnostics_table(diags, style));
    s
}

/// A route's hops: what each adds to the route, the binding ones marked, and under a hop that
/// leaves a gateway the value it published with what this input would publish.
fn hops_text(s: &mut String, hops: &[HopOut], not_shown: usize) {
    let more = if not_shown > 0 {
        format!("; {not_shown} more off the shown paths")
    } else {
        String::new()
    };
    let _ = writeln!(
        s,
        "  hops (what each adds to the route; the binding one marked{more}):"
    );
    for h in hops {
        let how = match h.protocol {
            Some(p) => format!("{}, {p}", h.kind),
            None => h.kind.to_string(),
        };
        let link = h.mtu.map(|m| format!(" link {m};")).unwrap_or_default();
        let caps = if h.caps.is_empty() {
            "none".to_string()
        } else {
            h.caps
                .iter()
                .map(|c| format!("{} {}", c.term, c.value))
                .collect::<Vec<_>>()
                .join(", ")
        };
        let adds = match (&h.bound, h.limit) {
            (Some(b), Some(l)) => format!("adds {l} ({})", b.term),
            _ => "adds nothing".to_string(),
        };
        let mark = if h.binds { "  <- binds" } else { "" };
        let _ = writeln!(
            s,
            "    {} -> {} ({how}):{link} caps {caps}; {adds}{mark}",
            h.from, h.to
        );
        if let Some(p) = &h.published {
            let would = match p.would_publish {
                Some(w) => format!("this input would publish {w}"),
                None => "this input would publish nothing".to_string(),
            };
            let origin = match (&p.term.object, &p.term.field) {
                (Some(o), Some(f)) => format!(" ({o} {f})"),
                _ => String::new(),
            };
            let at = p
                .term
                .location
                .as_ref()
                .map(|l| format!(" at {l}"))
                .unwrap_or_default();
            let stale = if p.stale { ": W-PUBLISHED-STALE" } else { "" };
            let _ = writeln!(
                s,
                "      published by {} {}{origin}{at}; {would}{stale}",
                h.from, p.term.value
            );
        }
    }
}
