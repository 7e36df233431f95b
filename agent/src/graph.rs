//! `unbounded-mtu graph`: Sites, pools and their relationships as Graphviz DOT (or SVG through
//! `dot`), labelled with caps and the resolved MTU of each relationship (the lowest link MTU it
//! governs). A relationship whose own cap binds that lowest link is drawn red and bold: the
//! bottleneck, visible at a glance.

use crate::cli::{GraphArgs, GraphFormat};
use crate::common::{self, usage};
use anyhow::{Context, Result};
use mtu_solver::Solver;
use mtu_solver::explain::{Kind as EKind, Leaf};
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::io::Write as _;
use topology_core::ids::NodeId;
use topology_core::model::{ObjRef, Topology};
use topology_core::net::LinkKind;

#[derive(Default, Clone, Copy)]
struct Governed {
    lowest: Option<u32>,
    binds: bool,
}

fn esc(s: &str) -> String {
    s.replace('\\', "\\\\").replace('"', "\\\"")
}

fn cap_text(topo: &Topology, o: ObjRef) -> String {
    match topo.cap_of(o) {
        Some(c) if c.invalid.is_some() => format!("cap {} (invalid)", c.mtu),
        Some(c) => format!("cap {}", c.mtu),
        None => "no cap".to_string(),
    }
}

/// Builds the DOT text.
pub fn dot(solver: &mut Solver<'_>) -> String {
    let topo = solver.topo();
    let mut governed: BTreeMap<ObjRef, Governed> = BTreeMap::new();
    let mut note = |o: ObjRef, mtu: u32, binds: bool| {
        let g = governed.entry(o).or_default();
        match g.lowest {
            Some(l) if l < mtu => {}
            Some(l) if l == mtu => g.binds |= binds,
            _ => {
                g.lowest = Some(mtu);
                g.binds = binds;
            }
        }
    };
    for i in 0..topo.nodes.len() {
        let n = NodeId::from_idx(i);
        let plan = solver.plan(n);
        for l in &plan.links {
            let (a, b) = (topo.node(n), topo.node(l.peer));
            let bound = solver.expl.get(l.mtu.expl).bound;
            let bound_obj = match &solver.expl.get(bound).kind {
                EKind::Leaf(Leaf::Cap { obj }) | EKind::Leaf(Leaf::Comp { obj, .. }) => Some(*obj),
                _ => None,
            };
            let mut rels: Vec<ObjRef> = Vec::new();
            if a.site != b.site {
                for p in intersect(topo.peerings_of(a.site), topo.peerings_of(b.site)) {
                    rels.push(ObjRef::SitePeering(p));
                }
            }
            match l.kind {
                LinkKind::Uplink | LinkKind::Delivery => {
                    let (w, g) = if l.kind == LinkKind::Uplink {
                        (a, b)
                    } else {
                        (b, a)
                    };
                    if let Some(p) = g.pool() {
                        for x in intersect(topo.assignments_of(w.site), topo.assignments_of_pool(p))
                        {
                            rels.push(ObjRef::Assignment(x));
                        }
                    }
                }
                LinkKind::Transit => {
                    if let (Some(p), Some(q)) = (a.pool(), b.pool()) {
                        for x in intersect(topo.pool_peerings_of(p), topo.pool_peerings_of(q)) {
                            rels.push(ObjRef::PoolPeering(x));
                        }
                    }
                }
                LinkKind::PoolMesh => {
                    if let Some(p) = a.pool() {
                        rels.push(ObjRef::Pool(p));
                    }
                }
                LinkKind::Mesh => {}
            }
            if a.site == b.site {
                rels.push(ObjRef::Site(a.site));
            }
            for o in rels {
                note(o, l.mtu.mtu.0, bound_obj == Some(o));
            }
        }
    }
    let mut s = String::new();
    let _ = writeln!(s, "digraph unbounded {{");
    let _ = writeln!(
        s,
        "  graph [rankdir=LR, fontname=\"Helvetica\", label=\"Sites (boxes), pools (ellipses), relationships labelled with caps and the lowest link MTU they govern; red = the relationship's own cap is the bottleneck\", labelloc=t];"
    );
    let _ = writeln!(
        s,
        "  node [fontname=\"Helvetica\"]; edge [fontname=\"Helvetica\", fontsize=10];"
    );
    let label = |o: ObjRef, g: Option<&Governed>| {
        let mtu = g
            .and_then(|g| g.lowest)
            .map(|m| format!("\\nlowest link {m}"))
            .unwrap_or_default();
        format!("{}{}", esc(&cap_text(topo, o)), mtu)
    };
    let style = |g: Option<&Governed>| {
        if g.is_some_and(|g| g.binds) {
            ", color=red, fontcolor=red, penwidth=2.5"
        } else {
            ""
        }
    };
    for (i, site) in topo.sites.iter().enumerate() {
        let id = topology_core::ids::SiteId::from_idx(i);
        let o = ObjRef::Site(id);
        let g = governed.get(&o);
        let comp = topo.component(topo.comp(id));
        let comp_text = match comp.cap {
            Some((m, b)) if comp.sites.len() > 1 || b != o => {
                format!("\\ncomponent cap {m} ({})", esc(&topo.label(b)))
            }
            _ => String::new(),
        };
        let _ = writeln!(
            s,
            "  \"site:{}\" [shape=box, label=\"Site {}\\n{} workers, {}{}\"{}];",
            esc(&site.name),
            esc(&site.name),
            topo.workers_of(id).len(),
            label(o, g),
            comp_text,
            style(g)
        );
    }
    for (i, pool) in topo.pools.iter().enumerate() {
        let id = topology_core::ids::PoolId::from_idx(i);
        let o = ObjRef::Pool(id);
        let g = governed.get(&o);
        let _ = writeln!(
            s,
            "  \"pool:{}\" [shape=ellipse, label=\"{} pool {}\\n{} gateways, {}\"{}];",
            esc(&pool.name),
            if pool.internal {
                "Internal"
            } else {
                "External"
            },
            esc(&pool.name),
            pool.gateways.len(),
            label(o, g),
            style(g)
        );
    }
    for (i, r) in topo.site_peerings.iter().enumerate() {
        if !r.relates {
            continue;
        }
        let o = ObjRef::SitePeering(topology_core::ids::PeeringId::from_idx(i));
        let g = governed.get(&o);
        let hub = format!("peering:{}", r.name);
        let _ = writeln!(
            s,
            "  \"{}\" [shape=point, width=0.08, xlabel=\"SitePeering {}{}\\n{}\"{}];",
            esc(&hub),
            esc(&r.name),
            if r.mesh { "" } else { " (network-only)" },
            label(o, g),
            style(g)
        );
        for site in &r.sites {
            let _ = writeln!(
                s,
                "  \"{}\" -> \"site:{}\" [dir=none{}{}];",
                esc(&hub),
                esc(&topo.site(*site).name),
                if r.mesh { "" } else { ", style=dashed" },
                style(g)
            );
        }
    }
    for (i, r) in topo.assignments.iter().enumerate() {
        if !r.relates {
            continue;
        }
        let o = ObjRef::Assignment(topology_core::ids::AssignmentId::from_idx(i));
        let g = governed.get(&o);
        for site in &r.sites {
            for pool in &r.pools {
                let _ = writeln!(
                    s,
                    "  \"site:{}\" -> \"pool:{}\" [label=\"{}\\n{}\"{}];",
                    esc(&topo.site(*site).name),
                    esc(&topo.pool(*pool).name),
                    esc(&r.name),
                    label(o, g),
                    style(g)
                );
            }
        }
    }
    for (i, r) in topo.pool_peerings.iter().enumerate() {
        if !r.relates {
            continue;
        }
        let o = ObjRef::PoolPeering(topology_core::ids::PoolPeeringId::from_idx(i));
        let g = governed.get(&o);
        let hub = format!("poolpeering:{}", r.name);
        let _ = writeln!(
            s,
            "  \"{}\" [shape=diamond, width=0.15, height=0.15, label=\"\", xlabel=\"GatewayPoolPeering {}\\n{}\"{}];",
            esc(&hub),
            esc(&r.name),
            label(o, g),
            style(g)
        );
        for pool in &r.pools {
            let _ = writeln!(
                s,
                "  \"{}\" -> \"pool:{}\" [dir=none, style=bold{}];",
                esc(&hub),
                esc(&topo.pool(*pool).name),
                style(g)
            );
        }
    }
    s.push_str("}\n");
    s
}

fn intersect<T: Ord + Copy>(a: &[T], b: &[T]) -> Vec<T> {
    a.iter().filter(|x| b.contains(x)).copied().collect()
}

/// Runs `graph`.
pub fn run(args: &GraphArgs) -> Result<()> {
    let decoded = common::load(&args.common)?;
    let topo = common::topology(&decoded);
    let mut solver = Solver::new(&topo, common::settings(&args.common));
    let text = dot(&mut solver);
    match args.format {
        GraphFormat::Dot => {
            print!("{text}");
        }
        GraphFormat::Svg => {
            let svg = render_svg(&text)?;
            std::io::stdout().write_all(&svg)?;
        }
    }
    Ok(())
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
    if let Some(mut stdin) = child.stdin.take() {
        stdin
            .write_all(dot_text.as_bytes())
            .context("cannot write to Graphviz dot")?;
    }
    let out = child.wait_with_output().context("Graphviz dot failed")?;
    if !out.status.success() {
        return Err(usage(format!(
            "Graphviz dot failed: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        )));
    }
    Ok(out.stdout)
}
