//! The DOT form of the picture: Sites as boxes, pools as ellipses, relationships as labelled
//! edges (a hub node for more than two members), the bottleneck in red, and the legend and the
//! end-to-end route table below.

use super::facts::{
    Facts, Low, Target, bound_text, cap_object, cap_text, count, gather, lower, ordered,
};
use super::scope::Scope;
use ipnet::IpNet;
use mtu_solver::Solver;
use std::collections::BTreeMap;
use std::fmt::Write as _;
use topology_core::ids::{PoolId, SiteId};
use topology_core::model::ObjRef;

/// Pairs listed in the route table before it shows only each Site's lowest route.
const ROUTE_ROWS: usize = 24;

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

/// Builds the DOT text of what `scope` draws.
pub fn dot(solver: &mut Solver<'_>, scope: &Scope) -> String {
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
        if !scope.site(sid) {
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
        if !scope.pool(pid) {
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
        if !scope.site(sid) {
            continue;
        }
        let mut by_pool: BTreeMap<PoolId, Vec<&str>> = BTreeMap::new();
        for g in topo.gateways_in(sid) {
            let node = topo.node(*g);
            if let Some(p) = node.pool().filter(|p| scope.pool(*p)) {
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
        for site in &scope.sites_of(&r.sites) {
            for pool in &scope.pools_of(&r.pools) {
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
        let drawn = scope.sites_of(&r.sites);
        if drawn.len() < 2 {
            continue;
        }
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
        if let [a, b] = drawn.as_slice() {
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
            for site in &drawn {
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
        let drawn = scope.pools_of(&r.pools);
        if drawn.len() < 2 {
            continue;
        }
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
        if let [a, b] = drawn.as_slice() {
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
            for pool in &drawn {
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

    let _ = writeln!(s, "  label={};", caption(solver, &f, scope));
    s.push_str("}\n");
    s
}

/// The legend and the end-to-end route table, below the picture.
fn caption(solver: &Solver<'_>, f: &Facts, scope: &Scope) -> String {
    let topo = solver.topo();
    let mut rows: Vec<(SiteId, SiteId, Low)> = f
        .routes
        .iter()
        .filter(|((a, b), _)| scope.site(*a) && scope.site(*b))
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
