//! `unbounded-mtu graph`: Sites, pools and their relationships as Graphviz DOT (or SVG through
//! `dot`), for people.
//!
//! - Sites are boxes, pools ellipses; each says how many workers or gateways it has, its cap and
//!   the lowest link inside it (the mesh within a Site, the mesh of a pool's gateways). A pool
//!   also shows the values its gateways publish for what they deliver (resolved) and the values
//!   they have published (GatewayPoolNode annotations).
//! - Every relationship is an edge between its members (a peering of more than two members is a
//!   small hub node), labelled with its name, its cap and the lowest link MTU it carries, and the
//!   term that binds that link (an object's cap, an underlay minus an overhead). An object whose
//!   own cap binds a link or route shown is red: the bottleneck, visible at a glance. A dotted
//!   edge joins a pool to each Site its gateways run in.
//! - Below the picture, the lowest route MTU from the workers of each Site to each other Site
//!   with workers, end to end (what pods can send), and what binds it.
//!
//! Labels are node labels or edge labels (`label`, which Graphviz lays out beside its edge), never
//! external labels (`xlabel`), which Graphviz places after routing and may draw over edges.

use crate::cli::{GraphArgs, GraphFormat};
use crate::common::{self, usage};
use anyhow::{Context, Result};
use ipnet::IpNet;
use mtu_solver::explain::{ExplId, Kind as EKind, Leaf};
use mtu_solver::{RouteKind, Solver};
use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::io::Write as _;
use topology_core::ids::{NodeId, PoolId, SiteId};
use topology_core::model::{ObjRef, Topology};
use topology_core::net::{Dest, LinkKind};

/// Pairs listed in the route table before it shows only each Site's lowest route.
const ROUTE_ROWS: usize = 24;

/// The lowest value of a set, with the term that binds it.
#[derive(Clone, Copy, Debug)]
struct Low {
    mtu: u32,
    bound: ExplId,
}

/// Keeps the lower of `slot` and `(mtu, bound)`; the first one seen on ties (nodes are visited
/// in name order, so the choice does not depend on input order).
fn lower(slot: &mut Option<Low>, mtu: u32, bound: ExplId) {
    if slot.is_none_or(|l| mtu < l.mtu) {
        *slot = Some(Low { mtu, bound });
    }
}

fn lower_in<K: Ord>(map: &mut BTreeMap<K, Low>, key: K, mtu: u32, bound: ExplId) {
    let mut slot = map.get(&key).copied();
    lower(&mut slot, mtu, bound);
    if let Some(l) = slot {
        map.insert(key, l);
    }
}

/// What a gateway delivers: a Site's prefixes or a pool's routed CIDRs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Target {
    Site(SiteId),
    Routed(IpNet),
}

/// Everything the picture shows, gathered from every node's plan.
#[derive(Default)]
struct Facts {
    /// Uplink and delivery links between the workers of a Site and the gateways of a pool.
    site_pool: BTreeMap<(SiteId, PoolId), Low>,
    /// Transit links between the gateways of two pools (lower ID first).
    pool_pool: BTreeMap<(PoolId, PoolId), Low>,
    /// Mesh links between the workers of two Sites (lower ID first).
    site_site: BTreeMap<(SiteId, SiteId), Low>,
    /// Mesh links between the workers of one Site.
    in_site: BTreeMap<SiteId, Low>,
    /// Links between the gateways of one pool.
    in_pool: BTreeMap<PoolId, Low>,
    /// Routes of the workers of a Site towards another Site's prefixes and nodes.
    routes: BTreeMap<(SiteId, SiteId), Low>,
    /// Resolved published values of a pool's gateways per target: lowest and highest.
    publishes: BTreeMap<PoolId, BTreeMap<Target, (u32, u32)>>,
    /// Objects whose cap binds some value shown.
    binding: BTreeSet<ObjRef>,
}

fn ordered<T: Ord>(a: T, b: T) -> (T, T) {
    if a <= b { (a, b) } else { (b, a) }
}

fn gather(solver: &mut Solver<'_>) -> Facts {
    let topo = solver.topo();
    let mut f = Facts::default();
    for i in 0..topo.nodes.len() {
        let n = NodeId::from_idx(i);
        let plan = solver.plan(n);
        let a = topo.node(n);
        for l in &plan.links {
            let b = topo.node(l.peer);
            let (mtu, bound) = (l.mtu.mtu.get(), solver.expl.get(l.mtu.expl).bound);
            match l.kind {
                LinkKind::Mesh if a.site == b.site => lower_in(&mut f.in_site, a.site, mtu, bound),
                LinkKind::Mesh => lower_in(&mut f.site_site, ordered(a.site, b.site), mtu, bound),
                LinkKind::Uplink => {
                    if let Some(p) = b.pool() {
                        lower_in(&mut f.site_pool, (a.site, p), mtu, bound);
                    }
                }
                LinkKind::Delivery => {
                    if let Some(p) = a.pool() {
                        lower_in(&mut f.site_pool, (b.site, p), mtu, bound);
                    }
                }
                LinkKind::Transit => {
                    if let (Some(p), Some(q)) = (a.pool(), b.pool()) {
                        lower_in(&mut f.pool_pool, ordered(p, q), mtu, bound);
                    }
                }
                LinkKind::PoolMesh => {
                    if let Some(p) = a.pool() {
                        lower_in(&mut f.in_pool, p, mtu, bound);
                    }
                }
            }
        }
        if a.pool().is_none() {
            for rt in &plan.routes {
                let bound = solver.expl.get(rt.mtu.expl).bound;
                let dests: Vec<SiteId> = match rt.kind {
                    RouteKind::Direct => rt.via.iter().map(|v| topo.node(*v).site).collect(),
                    RouteKind::Gateway | RouteKind::Transit => solver
                        .net
                        .origins_of(&rt.advertised)
                        .iter()
                        .filter_map(|o| match o.dest {
                            Dest::Site(t) => Some(t),
                            Dest::Pool(_) => None,
                        })
                        .collect(),
                };
                for t in dests {
                    if t != a.site && !topo.workers_of(t).is_empty() {
                        lower_in(&mut f.routes, (a.site, t), rt.mtu.mtu.get(), bound);
                    }
                }
            }
        }
        if let (Some(p), Some(published)) = (a.pool(), &plan.published) {
            for pb in published {
                let mtu = pb.mtu.mtu.get();
                let origins = solver.net.origins_of(&pb.destination);
                for o in origins.iter() {
                    let target = match o.dest {
                        Dest::Site(t) => Target::Site(t),
                        Dest::Pool(_) => Target::Routed(pb.destination),
                    };
                    let e = f
                        .publishes
                        .entry(p)
                        .or_default()
                        .entry(target)
                        .or_insert((mtu, mtu));
                    *e = (e.0.min(mtu), e.1.max(mtu));
                }
            }
        }
    }
    let lows = f
        .site_pool
        .values()
        .chain(f.pool_pool.values())
        .chain(f.site_site.values())
        .chain(f.in_site.values())
        .chain(f.in_pool.values())
        .chain(f.routes.values());
    for l in lows {
        if let Some(o) = cap_object(solver, l.bound) {
            f.binding.insert(o);
        }
    }
    f
}

/// The object whose cap a term is, if it is one.
fn cap_object(solver: &Solver<'_>, term: ExplId) -> Option<ObjRef> {
    match &solver.expl.get(term).kind {
        EKind::Leaf(Leaf::Cap { obj }) | EKind::Leaf(Leaf::Comp { obj, .. }) => Some(*obj),
        _ => None,
    }
}

/// A binding term in a few words: the object or node and field it comes from.
fn bound_text(solver: &Solver<'_>, term: ExplId) -> String {
    let topo = solver.topo();
    let name = |n: &NodeId| topo.node(*n).name.to_string();
    match &solver.expl.get(term).kind {
        EKind::Leaf(Leaf::Cap { obj }) => format!("{} cap", topo.label(*obj)),
        EKind::Leaf(Leaf::Comp { obj, .. }) => format!("{} cap (component)", topo.label(*obj)),
        EKind::Leaf(Leaf::Auto {
            node,
            underlay,
            protocol,
            overhead,
            ..
        }) => format!(
            "underlay of {} {underlay} − {protocol} {overhead}",
            name(node)
        ),
        EKind::Leaf(Leaf::Underlay { node, underlay, .. }) => {
            format!("underlay of {} {underlay}", name(node))
        }
        EKind::Leaf(Leaf::Cfg { node }) => format!("agent mtu on {}", name(node)),
        EKind::Leaf(Leaf::Published { gateway, .. }) => {
            format!("the value {} published", name(gateway))
        }
        _ => solver.expl.term_name(term, topo),
    }
}

/// `1 worker`, `2 workers`, `no workers`.
fn count(n: usize, one: &str, many: &str) -> String {
    match n {
        0 => format!("no {many}"),
        1 => format!("1 {one}"),
        _ => format!("{n} {many}"),
    }
}

/// Text for an HTML-like Graphviz label.
fn html(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// A quoted DOT identifier.
fn id(s: &str) -> String {
    format!("\"{}\"", s.replace('\\', "\\\\").replace('"', "\\\""))
}

fn cap_text(topo: &Topology, o: ObjRef) -> String {
    match topo.cap_of(o) {
        Some(c) if c.invalid.is_some() => format!("cap {} (invalid)", c.mtu),
        Some(c) => format!("cap {}", c.mtu),
        None => "no cap".to_string(),
    }
}

const RED: &str = "#c0392b";
const GREY: &str = "#7f8c8d";

/// The body of an HTML-like label: a bold title (if any), then smaller lines.
fn label_body(title: &str, lines: &[String], colour: Option<&str>) -> String {
    let mut s = String::new();
    if let Some(c) = colour {
        let _ = write!(s, "<FONT COLOR=\"{c}\">");
    }
    if !title.is_empty() {
        let _ = write!(s, "<B>{}</B>", html(title));
    }
    for (k, l) in lines.iter().enumerate() {
        if k > 0 || !title.is_empty() {
            s.push_str("<BR/>");
        }
        let _ = write!(s, "<FONT POINT-SIZE=\"10\">{}</FONT>", html(l));
    }
    if colour.is_some() {
        s.push_str("</FONT>");
    }
    s
}

/// A node label.
fn label(title: &str, lines: &[String], colour: Option<&str>) -> String {
    format!("<{}>", label_body(title, lines, colour))
}

/// An edge label, with a margin: Graphviz puts an edge label's box against its edge.
fn edge_label(title: &str, lines: &[String], colour: Option<&str>) -> String {
    format!(
        "<<TABLE BORDER=\"0\" CELLSPACING=\"0\" CELLPADDING=\"4\"><TR><TD>{}</TD></TR></TABLE>>",
        label_body(title, lines, colour)
    )
}

/// The label of a relationship edge (or hub): name and cap, lowest link and its binding term.
fn relation_lines(solver: &Solver<'_>, o: ObjRef, low: Option<Low>) -> Vec<String> {
    let topo = solver.topo();
    let mut lines = vec![cap_text(topo, o)];
    match low {
        Some(l) => {
            lines.push(format!("lowest link {}", l.mtu));
            lines.push(format!("bound by {}", bound_text(solver, l.bound)));
        }
        None => lines.push("no links".to_string()),
    }
    lines
}

/// Edge attributes of a relationship: red and bold when its own cap binds.
fn edge_style(bottleneck: bool) -> String {
    if bottleneck {
        format!(", color=\"{RED}\", fontcolor=\"{RED}\", penwidth=2.5")
    } else {
        String::new()
    }
}

/// Builds the DOT text.
pub fn dot(solver: &mut Solver<'_>) -> String {
    let f = gather(solver);
    let solver: &Solver<'_> = solver;
    let topo = solver.topo();
    let mut s = String::new();
    let _ = writeln!(s, "graph unbounded {{");
    let _ = writeln!(
        s,
        "  graph [rankdir=TB, fontname=\"Helvetica\", nodesep=0.4, ranksep=0.9, pad=0.2, labelloc=b, labeljust=l];"
    );
    let _ = writeln!(
        s,
        "  node [fontname=\"Helvetica\", fontsize=12]; edge [fontname=\"Helvetica\", fontsize=10];"
    );

    // Sites.
    for (i, site) in topo.sites.iter().enumerate() {
        let sid = SiteId::from_idx(i);
        let o = ObjRef::Site(sid);
        let workers = topo.workers_of(sid).len();
        let mut lines = vec![format!(
            "{}, {}",
            count(workers, "worker", "workers"),
            cap_text(topo, o)
        )];
        let comp = topo.component(topo.comp(sid));
        if let Some((m, b)) = comp.cap
            && (comp.sites.len() > 1 || b != o)
        {
            lines.push(format!("component cap {} ({})", m.get(), topo.label(b)));
        }
        if let Some(l) = f.in_site.get(&sid) {
            lines.push(format!(
                "mesh within {}, bound by {}",
                l.mtu,
                bound_text(solver, l.bound)
            ));
        }
        let red = f.binding.contains(&o);
        let _ = writeln!(
            s,
            "  {} [shape=box, style=rounded, label={}{}];",
            id(&format!("site:{}", site.name)),
            label(&format!("Site {}", site.name), &lines, red.then_some(RED)),
            if red {
                format!(", color=\"{RED}\", penwidth=2")
            } else {
                String::new()
            }
        );
    }

    // Pools, with what their gateways publish.
    for (i, pool) in topo.pools.iter().enumerate() {
        let pid = PoolId::from_idx(i);
        let o = ObjRef::Pool(pid);
        let mut lines = vec![format!(
            "{}, {}",
            count(pool.gateways.len(), "gateway", "gateways"),
            cap_text(topo, o)
        )];
        if let Some(l) = f.in_pool.get(&pid) {
            lines.push(format!(
                "pool mesh {}, bound by {}",
                l.mtu,
                bound_text(solver, l.bound)
            ));
        }
        for (target, (lo, hi)) in f.publishes.get(&pid).into_iter().flatten() {
            let what = match target {
                Target::Site(t) => format!("Site {}", topo.site(*t).name),
                Target::Routed(c) => c.to_string(),
            };
            let value = if lo == hi {
                lo.to_string()
            } else {
                format!("{lo}–{hi}")
            };
            lines.push(format!("publishes {value} for {what}"));
        }
        // Values read from GatewayPoolNode annotations, grouped by prefix and value.
        let mut read: BTreeMap<(IpNet, u32), Vec<&str>> = BTreeMap::new();
        for g in &pool.gateways {
            let node = topo.node(*g);
            for (prefix, mtu) in &node.published {
                read.entry((*prefix, mtu.get()))
                    .or_default()
                    .push(&node.name);
            }
        }
        for ((prefix, mtu), gws) in &read {
            let who = gws.join(", ");
            let has = if gws.len() == 1 { "has" } else { "have" };
            lines.push(format!("{who} {has} published {mtu} for {prefix}"));
        }
        let red = f.binding.contains(&o);
        let _ = writeln!(
            s,
            "  {} [shape=ellipse, label={}{}];",
            id(&format!("pool:{}", pool.name)),
            label(
                &format!(
                    "{} pool {}",
                    if pool.internal {
                        "Internal"
                    } else {
                        "External"
                    },
                    pool.name
                ),
                &lines,
                red.then_some(RED)
            ),
            if red {
                format!(", color=\"{RED}\", penwidth=2")
            } else {
                String::new()
            }
        );
    }

    // Where each pool's gateways run.
    for (i, site) in topo.sites.iter().enumerate() {
        let sid = SiteId::from_idx(i);
        let mut by_pool: BTreeMap<PoolId, Vec<&str>> = BTreeMap::new();
        for g in topo.gateways_in(sid) {
            let node = topo.node(*g);
            if let Some(p) = node.pool() {
                by_pool.entry(p).or_default().push(&node.name);
            }
        }
        for (p, names) in by_pool {
            let text = match names.as_slice() {
                [one] => format!("gateway {one}"),
                few if few.len() <= 3 => format!("gateways {}", few.join(", ")),
                many => format!("{} gateways", many.len()),
            };
            let _ = writeln!(
                s,
                "  {} -- {} [style=dotted, color=\"{GREY}\", fontcolor=\"{GREY}\", label={}];",
                id(&format!("pool:{}", topo.pool(p).name)),
                id(&format!("site:{}", site.name)),
                edge_label("", &[text], None)
            );
        }
    }

    // SiteGatewayPoolAssignments: one edge per Site and pool.
    for (i, r) in topo.assignments.iter().enumerate() {
        if !r.relates {
            continue;
        }
        let o = ObjRef::Assignment(topology_core::ids::AssignmentId::from_idx(i));
        for site in &r.sites {
            for pool in &r.pools {
                let low = f.site_pool.get(&(*site, *pool)).copied();
                let red = f.binding.contains(&o);
                let _ = writeln!(
                    s,
                    "  {} -- {} [label={}{}];",
                    id(&format!("site:{}", topo.site(*site).name)),
                    id(&format!("pool:{}", topo.pool(*pool).name)),
                    edge_label(
                        &format!("assignment {}", r.name),
                        &relation_lines(solver, o, low),
                        red.then_some(RED)
                    ),
                    edge_style(red)
                );
            }
        }
    }

    // SitePeerings: an edge between two members, a hub for more.
    for (i, r) in topo.site_peerings.iter().enumerate() {
        if !r.relates {
            continue;
        }
        let o = ObjRef::SitePeering(topology_core::ids::PeeringId::from_idx(i));
        let mut low: Option<Low> = None;
        for (k, a) in r.sites.iter().enumerate() {
            for b in r.sites.iter().skip(k + 1) {
                if let Some(l) = f.site_site.get(&ordered(*a, *b)) {
                    lower(&mut low, l.mtu, l.bound);
                }
            }
        }
        let red = f.binding.contains(&o);
        let title = format!(
            "SitePeering {}{}",
            r.name,
            if r.mesh { "" } else { " (network-only)" }
        );
        let lines = if r.mesh {
            relation_lines(solver, o, low)
        } else {
            // No mesh links: its cap applies to gateway links between its Sites.
            vec![cap_text(topo, o), "no mesh links".to_string()]
        };
        let style = format!(
            "{}{}",
            if r.mesh { "" } else { ", style=dashed" },
            edge_style(red)
        );
        if let [a, b] = r.sites.as_slice() {
            let _ = writeln!(
                s,
                "  {} -- {} [label={}{style}];",
                id(&format!("site:{}", topo.site(*a).name)),
                id(&format!("site:{}", topo.site(*b).name)),
                edge_label(&title, &lines, red.then_some(RED)),
            );
        } else {
            let hub = format!("peering:{}", r.name);
            let _ = writeln!(
                s,
                "  {} [shape=box, style=\"rounded,dashed\", fontsize=10, label={}{}];",
                id(&hub),
                label(&title, &lines, red.then_some(RED)),
                edge_style(red)
            );
            for site in &r.sites {
                let _ = writeln!(
                    s,
                    "  {} -- {} [{}];",
                    id(&hub),
                    id(&format!("site:{}", topo.site(*site).name)),
                    style.trim_start_matches(", ")
                );
            }
        }
    }

    // GatewayPoolPeerings: an edge between two members, a hub for more.
    for (i, r) in topo.pool_peerings.iter().enumerate() {
        if !r.relates {
            continue;
        }
        let o = ObjRef::PoolPeering(topology_core::ids::PoolPeeringId::from_idx(i));
        let mut low: Option<Low> = None;
        for (k, a) in r.pools.iter().enumerate() {
            for b in r.pools.iter().skip(k + 1) {
                if let Some(l) = f.pool_pool.get(&ordered(*a, *b)) {
                    lower(&mut low, l.mtu, l.bound);
                }
            }
        }
        let red = f.binding.contains(&o);
        let title = format!("GatewayPoolPeering {}", r.name);
        let lines = relation_lines(solver, o, low);
        if let [a, b] = r.pools.as_slice() {
            let _ = writeln!(
                s,
                "  {} -- {} [style=bold, label={}{}];",
                id(&format!("pool:{}", topo.pool(*a).name)),
                id(&format!("pool:{}", topo.pool(*b).name)),
                edge_label(&title, &lines, red.then_some(RED)),
                edge_style(red)
            );
        } else {
            let hub = format!("poolpeering:{}", r.name);
            let _ = writeln!(
                s,
                "  {} [shape=box, style=\"rounded,bold\", fontsize=10, label={}{}];",
                id(&hub),
                label(&title, &lines, red.then_some(RED)),
                edge_style(red)
            );
            for pool in &r.pools {
                let _ = writeln!(
                    s,
                    "  {} -- {} [style=bold{}];",
                    id(&hub),
                    id(&format!("pool:{}", topo.pool(*pool).name)),
                    edge_style(red)
                );
            }
        }
    }

    let _ = writeln!(s, "  label={};", caption(solver, &f));
    s.push_str("}\n");
    s
}

/// The legend and the end-to-end route table, below the picture.
fn caption(solver: &Solver<'_>, f: &Facts) -> String {
    let topo = solver.topo();
    let mut rows: Vec<(SiteId, SiteId, Low)> =
        f.routes.iter().map(|((a, b), l)| (*a, *b, *l)).collect();
    let all = rows.len() <= ROUTE_ROWS;
    if !all {
        // Only each Site's lowest route (the first destination on ties).
        let mut lowest: BTreeMap<SiteId, (SiteId, Low)> = BTreeMap::new();
        for (a, b, l) in rows {
            match lowest.get(&a) {
                Some((_, x)) if x.mtu <= l.mtu => {}
                _ => {
                    lowest.insert(a, (b, l));
                }
            }
        }
        rows = lowest.into_iter().map(|(a, (b, l))| (a, b, l)).collect();
    }
    let mut s = String::from("<<TABLE BORDER=\"0\" CELLSPACING=\"0\" CELLPADDING=\"2\">");
    let _ = write!(
        s,
        "<TR><TD ALIGN=\"LEFT\"><FONT POINT-SIZE=\"10\" COLOR=\"{GREY}\">{}<BR ALIGN=\"LEFT\"/>{}<BR ALIGN=\"LEFT\"/></FONT></TD></TR>",
        html(
            "Sites are boxes, pools ellipses. An edge is a relationship: its cap, the lowest link MTU it carries and what binds that link."
        ),
        html(
            "Red: an object whose own cap binds a link or route shown. Dotted: the Site a pool's gateways run in."
        )
    );
    if rows.is_empty() {
        let _ = write!(
            s,
            "<TR><TD ALIGN=\"LEFT\">{}</TD></TR>",
            html("No routes between Sites with workers.")
        );
    } else {
        let title = if all {
            "Lowest route MTU between Sites (from the workers of one Site to another)"
        } else {
            "Lowest route MTU of each Site's workers (to the Site it is lowest towards)"
        };
        let _ = write!(
            s,
            "<TR><TD ALIGN=\"LEFT\"><B>{}</B><BR ALIGN=\"LEFT\"/>",
            html(title)
        );
        for (a, b, l) in rows {
            let red = cap_object(solver, l.bound).is_some();
            let (open, close) = if red {
                (format!("<FONT COLOR=\"{RED}\">"), "</FONT>")
            } else {
                (String::new(), "")
            };
            let _ = write!(
                s,
                "{}: {open}<B>{}</B>, {}{close}<BR ALIGN=\"LEFT\"/>",
                html(&format!("{} → {}", topo.site(a).name, topo.site(b).name)),
                l.mtu,
                html(&format!("bound by {}", bound_text(solver, l.bound)))
            );
        }
        s.push_str("</TD></TR>");
    }
    s.push_str("</TABLE>>");
    s
}

/// Runs `graph`.
pub fn run(args: &GraphArgs) -> Result<()> {
    let decoded = common::load(&args.common)?;
    let topo = common::topology(&decoded)?;
    let mut solver = Solver::new(&topo, crate::settings::offline(&args.common));
    let text = dot(&mut solver);
    let bytes = match args.format {
        GraphFormat::Dot => text.into_bytes(),
        GraphFormat::Svg => render_svg(&text)?,
    };
    // Errors (a reader that went away among them) go to the caller, which ends quietly on a
    // closed pipe; `print!` would panic instead.
    let mut out = std::io::stdout().lock();
    out.write_all(&bytes)?;
    out.flush()?;
    // The input's diagnostics follow the picture on standard error: standard output stays a
    // valid DOT or SVG document.
    if !topo.diagnostics.is_empty() {
        let mut err = std::io::stderr().lock();
        err.write_all(common::diagnostics_table(&topo.diagnostics).as_bytes())?;
    }
    common::fail_on(args.fail.fail_on, &topo.diagnostics)
}

/// Renders DOT to SVG with Graphviz; exit 2 when Graphviz is missing.
pub fn render_svg(dot_text: &str) -> Result<Vec<u8>> {
    let mut child = match std::process::Command::new("dot")
        .arg("-Tsvg")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
    {
        Ok(c) => c,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Err(usage(
                "Graphviz is not installed (no `dot` on PATH): install the graphviz package, or use --format dot",
            ));
        }
        Err(e) => return Err(e).context("cannot start Graphviz dot"),
    };
    // A write error here (dot exited early) is reported after dot's own status and message, and
    // never as an I/O error: a broken pipe to dot is a failure, not a reader of ours going away.
    let written = match child.stdin.take() {
        Some(mut stdin) => stdin.write_all(dot_text.as_bytes()),
        None => Ok(()),
    };
    let out = child.wait_with_output().context("Graphviz dot failed")?;
    if !out.status.success() {
        return Err(usage(format!(
            "Graphviz dot failed: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        )));
    }
    if let Err(e) = written {
        return Err(usage(format!("cannot write to Graphviz dot: {e}")));
    }
    Ok(out.stdout)
}
