//! The DOT form of the picture: Sites as boxes, pools as ellipses, relationships as labelled
//! edges (a hub node for more than two members; parallel ones merged), the bottleneck in red,
//! and the legend and the end-to-end route table below. Large pictures are laid out by `fdp`,
//! with each pool also a cluster of the Sites its gateways run in.

use super::body::{Body, Edge, Part};
use super::facts::{
    Facts, Low, Target, bound_text, cap_object, cap_text, count, gather, lower, ordered,
};
use super::layout::{Engine, Size, engine_for};
use super::select::Selection;
use ipnet::IpNet;
use mtu_solver::Solver;
use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use topology_core::ids::{PoolId, SiteId};
use topology_core::model::{ObjRef, Topology};

/// Pairs listed in the route table before it shows only each Site's lowest route.
const ROUTE_ROWS: usize = 24;
/// Targets a pool's label lists one by one before it gives their range and number (the full
/// list is in the document, `-o json`).
const PUBLISH_ROWS: usize = 8;

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

/// A picture in DOT, with its size and the layout that draws it.
pub struct Drawing {
    /// The DOT text.
    pub text: String,
    /// Nodes and edges drawn.
    pub size: Size,
    /// The layout named in the text.
    pub engine: Engine,
}

/// Builds the DOT picture of the Sites and pools `sel` selects: `dot` lays out small pictures,
/// `fdp` large ones, where each pool is also a cluster with the Sites its gateways run in.
pub fn dot(solver: &mut Solver<'_>, sel: &Selection) -> Drawing {
    let f = gather(solver);
    let solver: &Solver<'_> = solver;
    let mut body = Body::default();
    sites(&mut body, solver, &f, sel);
    pools(&mut body, solver, &f, sel);
    let hosts = gateway_sites(&mut body, solver, sel);
    assignments(&mut body, solver, &f, sel);
    site_peerings(&mut body, solver, &f, sel);
    pool_peerings(&mut body, solver, &f, sel);
    let size = body.size();
    let engine = engine_for(size);

    let mut s = String::new();
    let _ = writeln!(s, "graph unbounded {{");
    let _ = writeln!(
        s,
        "  graph [rankdir=TB, fontname=\"Helvetica\", nodesep=0.4, ranksep=0.9, pad=0.2, labelloc=b, labeljust=l{}];",
        match engine {
            Engine::Dot => "",
            Engine::Fdp => ", layout=fdp, overlap=prism, outputorder=edgesfirst",
        }
    );
    let _ = writeln!(
        s,
        "  node [fontname=\"Helvetica\", fontsize=12]; edge [fontname=\"Helvetica\", fontsize=10];"
    );
    body.write(&mut s, |e| edge_line(solver, e));
    if engine == Engine::Fdp {
        pool_clusters(&mut s, solver.topo(), &hosts);
    }
    let _ = writeln!(s, "  label={};", caption(solver, &f, sel));
    s.push_str("}\n");
    Drawing {
        text: s,
        size,
        engine,
    }
}

/// Sites.
fn sites(body: &mut Body, solver: &Solver<'_>, f: &Facts, sel: &Selection) {
    let topo = solver.topo();
    for (i, site) in topo.sites.iter().enumerate() {
        let sid = SiteId::from_idx(i);
        if !sel.has_site(sid) {
            continue;
        }
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
        body.node(format!(
            "  {} [shape=box, style=rounded, label={}{}];",
            id(&format!("site:{}", site.name)),
            label(&format!("Site {}", site.name), &lines, red.then_some(RED)),
            if red {
                format!(", color=\"{RED}\", penwidth=2")
            } else {
                String::new()
            }
        ));
    }
}

/// Pools, with what their gateways publish.
fn pools(body: &mut Body, solver: &Solver<'_>, f: &Facts, sel: &Selection) {
    let topo = solver.topo();
    for (i, pool) in topo.pools.iter().enumerate() {
        let pid = PoolId::from_idx(i);
        if !sel.has_pool(pid) {
            continue;
        }
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
        if let Some(published) = f.publishes.get(&pid) {
            lines.extend(publish_lines(topo, published));
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
        let kind = if pool.internal {
            "Internal"
        } else {
            "External"
        };
        body.node(format!(
            "  {} [shape=ellipse, label={}{}];",
            id(&format!("pool:{}", pool.name)),
            label(
                &format!("{kind} pool {}", pool.name),
                &lines,
                red.then_some(RED)
            ),
            if red {
                format!(", color=\"{RED}\", penwidth=2")
            } else {
                String::new()
            }
        ));
    }
}

/// What a pool's gateways publish, a line per Site or routed CIDR; beyond [`PUBLISH_ROWS`]
/// targets, one line with the range and how many targets.
fn publish_lines(topo: &Topology, published: &BTreeMap<Target, (u32, u32)>) -> Vec<String> {
    let range = |lo: u32, hi: u32| {
        if lo == hi {
            lo.to_string()
        } else {
            format!("{lo}–{hi}")
        }
    };
    if published.len() > PUBLISH_ROWS {
        let lo = published.values().map(|v| v.0).min().unwrap_or_default();
        let hi = published.values().map(|v| v.1).max().unwrap_or_default();
        let sites = published
            .keys()
            .filter(|t| matches!(t, Target::Site(_)))
            .count();
        let routed = published.len() - sites;
        let mut what = vec![];
        if sites > 0 {
            what.push(count(sites, "Site", "Sites"));
        }
        if routed > 0 {
            what.push(count(routed, "routed CIDR", "routed CIDRs"));
        }
        return vec![format!(
            "publishes {} for {}",
            range(lo, hi),
            what.join(" and ")
        )];
    }
    published
        .iter()
        .map(|(target, (lo, hi))| {
            let what = match target {
                Target::Site(t) => format!("Site {}", topo.site(*t).name),
                Target::Routed(c) => c.to_string(),
            };
            format!("publishes {} for {what}", range(*lo, *hi))
        })
        .collect()
}

/// A dotted edge from each pool to each Site its gateways run in; returns those Sites by pool.
fn gateway_sites(
    body: &mut Body,
    solver: &Solver<'_>,
    sel: &Selection,
) -> BTreeMap<PoolId, Vec<SiteId>> {
    let topo = solver.topo();
    let mut hosts: BTreeMap<PoolId, Vec<SiteId>> = BTreeMap::new();
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
            if !(sel.has_site(sid) && sel.has_pool(p)) {
                continue;
            }
            hosts.entry(p).or_default().push(sid);
            let text = match names.as_slice() {
                [one] => format!("gateway {one}"),
                few if few.len() <= 3 => format!("gateways {}", few.join(", ")),
                many => format!("{} gateways", many.len()),
            };
            body.link(format!(
                "  {} -- {} [style=dotted, color=\"{GREY}\", fontcolor=\"{GREY}\", label={}];",
                id(&format!("pool:{}", topo.pool(p).name)),
                id(&format!("site:{}", site.name)),
                edge_label("", &[text], None)
            ));
        }
    }
    hosts
}

/// Each pool as a cluster with the Sites its gateways run in (a Site with the gateways of
/// several pools joins the first: clusters do not overlap).
fn pool_clusters(s: &mut String, topo: &Topology, hosts: &BTreeMap<PoolId, Vec<SiteId>>) {
    let mut placed: BTreeSet<SiteId> = BTreeSet::new();
    for (p, sites) in hosts {
        let name = &topo.pool(*p).name;
        let _ = write!(
            s,
            "  subgraph {} {{ style=\"rounded,dotted\"; color=\"{GREY}\"; {};",
            id(&format!("cluster_pool:{name}")),
            id(&format!("pool:{name}"))
        );
        for site in sites {
            if placed.insert(*site) {
                let _ = write!(s, " {};", id(&format!("site:{}", topo.site(*site).name)));
            }
        }
        s.push_str(" }\n");
    }
}

/// SiteGatewayPoolAssignments: one edge per Site and pool.
fn assignments(body: &mut Body, solver: &Solver<'_>, f: &Facts, sel: &Selection) {
    let topo = solver.topo();
    for (i, r) in topo.assignments.iter().enumerate() {
        if !r.relates {
            continue;
        }
        let o = ObjRef::Assignment(topology_core::ids::AssignmentId::from_idx(i));
        for site in r.sites.iter().filter(|s| sel.has_site(**s)) {
            for pool in r.pools.iter().filter(|p| sel.has_pool(**p)) {
                let low = f.site_pool.get(&(*site, *pool)).copied();
                body.relation(
                    id(&format!("site:{}", topo.site(*site).name)),
                    id(&format!("pool:{}", topo.pool(*pool).name)),
                    Part {
                        title: format!("assignment {}", r.name),
                        lines: relation_lines(solver, o, low),
                        low,
                        red: f.binding.contains(&o),
                        lead: "",
                        style: "",
                    },
                );
            }
        }
    }
}

/// SitePeerings: an edge between two members, a hub for more.
fn site_peerings(body: &mut Body, solver: &Solver<'_>, f: &Facts, sel: &Selection) {
    let topo = solver.topo();
    for (i, r) in topo.site_peerings.iter().enumerate() {
        let members: Vec<SiteId> = r
            .sites
            .iter()
            .copied()
            .filter(|s| sel.has_site(*s))
            .collect();
        if !r.relates || members.len() < 2 {
            continue;
        }
        let o = ObjRef::SitePeering(topology_core::ids::PeeringId::from_idx(i));
        let mut low: Option<Low> = None;
        for (k, a) in members.iter().enumerate() {
            for b in members.iter().skip(k + 1) {
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
        let dashed = if r.mesh { "" } else { ", style=dashed" };
        let site_id = |s: &SiteId| id(&format!("site:{}", topo.site(*s).name));
        if let [a, b] = members.as_slice() {
            let part = Part {
                title,
                lines,
                low: if r.mesh { low } else { None },
                red,
                lead: "",
                style: dashed,
            };
            body.relation(site_id(a), site_id(b), part);
        } else {
            let hub = id(&format!("peering:{}", r.name));
            body.node(format!(
                "  {hub} [shape=box, style=\"rounded,dashed\", fontsize=10, label={}{}];",
                label(&title, &lines, red.then_some(RED)),
                edge_style(red)
            ));
            let style = format!("{dashed}{}", edge_style(red));
            for site in &members {
                body.link(format!(
                    "  {hub} -- {} [{}];",
                    site_id(site),
                    style.trim_start_matches(", ")
                ));
            }
        }
    }
}

/// GatewayPoolPeerings: an edge between two members, a hub for more.
fn pool_peerings(body: &mut Body, solver: &Solver<'_>, f: &Facts, sel: &Selection) {
    let topo = solver.topo();
    for (i, r) in topo.pool_peerings.iter().enumerate() {
        let members: Vec<PoolId> = r
            .pools
            .iter()
            .copied()
            .filter(|p| sel.has_pool(*p))
            .collect();
        if !r.relates || members.len() < 2 {
            continue;
        }
        let o = ObjRef::PoolPeering(topology_core::ids::PoolPeeringId::from_idx(i));
        let mut low: Option<Low> = None;
        for (k, a) in members.iter().enumerate() {
            for b in members.iter().skip(k + 1) {
                if let Some(l) = f.pool_pool.get(&ordered(*a, *b)) {
                    lower(&mut low, l.mtu, l.bound);
                }
            }
        }
        let red = f.binding.contains(&o);
        let title = format!("GatewayPoolPeering {}", r.name);
        let lines = relation_lines(solver, o, low);
        let pool_id = |p: &PoolId| id(&format!("pool:{}", topo.pool(*p).name));
        if let [a, b] = members.as_slice() {
            let part = Part {
                title,
                lines,
                low,
                red,
                lead: "style=bold, ",
                style: "",
            };
            body.relation(pool_id(a), pool_id(b), part);
        } else {
            let hub = id(&format!("poolpeering:{}", r.name));
            body.node(format!(
                "  {hub} [shape=box, style=\"rounded,bold\", fontsize=10, label={}{}];",
                label(&title, &lines, red.then_some(RED)),
                edge_style(red)
            ));
            for pool in &members {
                body.link(format!(
                    "  {hub} -- {} [style=bold{}];",
                    pool_id(pool),
                    edge_style(red)
                ));
            }
        }
    }
}

/// The statement of an edge: one relationship as it is, several merged into one label that
/// names each with its cap, then the lowest link among them and what binds it.
fn edge_line(solver: &Solver<'_>, e: &Edge) -> String {
    let (title, lines, red, lead, style) = match e.parts.as_slice() {
        [one] => (
            one.title.clone(),
            one.lines.clone(),
            one.red,
            one.lead,
            one.style,
        ),
        parts => {
            let mut lines: Vec<String> = parts
                .iter()
                .map(|p| match p.lines.first() {
                    Some(cap) => format!("{}: {cap}", p.title),
                    None => p.title.clone(),
                })
                .collect();
            match e.low() {
                Some(l) => {
                    lines.push(format!("lowest link {}", l.mtu));
                    lines.push(format!("bound by {}", bound_text(solver, l.bound)));
                }
                None => lines.push("no links".to_string()),
            }
            let first = parts.first();
            (
                format!("{} relationships", parts.len()),
                lines,
                parts.iter().any(|p| p.red),
                first.map_or("", |p| p.lead),
                first.map_or("", |p| p.style),
            )
        }
    };
    format!(
        "  {} -- {} [{lead}label={}{style}{}];",
        e.a,
        e.b,
        edge_label(&title, &lines, red.then_some(RED)),
        edge_style(red)
    )
}

/// The legend and the end-to-end route table, below the picture.
fn caption(solver: &Solver<'_>, f: &Facts, sel: &Selection) -> String {
    let topo = solver.topo();
    let mut rows: Vec<(SiteId, SiteId, Low)> = f
        .routes
        .iter()
        .filter(|((a, b), _)| sel.has_site(*a) && sel.has_site(*b))
        .map(|((a, b), l)| (*a, *b, *l))
        .collect();
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
