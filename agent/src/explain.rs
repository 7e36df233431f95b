//! `unbounded-mtu explain`: why each value of a node is what it is, for a person. The
//! explanation is the library's ([`Resolver::explain`]); this module asks the question the
//! flags make and prints the answer.

use crate::common::{self, usage};
use crate::output::{Format, TableStyle, findings_table, write_data};
use crate::settings;
use anyhow::Result;
use mtu_solver::report::TermOut;
use mtu_solver::report::hops::HopOut;
use mtu_solver::{Destination, Explanation, QueryError, Question, Resolver};
use std::fmt::Write as _;

/// Runs `explain`.
pub fn run(args: &settings::Explain) -> Result<()> {
    let decoded = common::load(&args.offline.input)?;
    let resolver = Resolver::new(decoded, args.offline.solver.clone()).with_paths(args.paths);
    common::some_resolved(resolver.topology())?;
    let topo = resolver.topology();
    let node = &topo.node(common::one_node(topo, &args.selector)?).name;
    let doc = resolver
        .explain(node, question(args)?)
        .map_err(|e| match (&e, &args.peer) {
            (QueryError::NoSuchNode { .. } | QueryError::NoLink { .. }, Some(p)) => {
                usage(format!("--peer {p}: {e}"))
            }
            _ => usage(e.to_string()),
        })?;
    match args.format {
        Format::Table(style) => common::write_text(&text(&doc, style))?,
        Format::Data(f) => write_data(&doc, f)?,
    }
    common::fail_on_severities(args.fail_on, doc.diagnostics.iter().map(|d| d.severity))
}

/// What is asked: a peer's link (`--peer`), the routes to a destination (`--destination`, a
/// CIDR or an address), or every value.
fn question(args: &settings::Explain) -> Result<Question> {
    if let Some(p) = &args.peer {
        return Ok(Question::Peer(p.clone()));
    }
    let Some(d) = &args.destination else {
        return Ok(Question::Everything);
    };
    d.parse::<Destination>().map(Question::To).map_err(|_| {
        usage(format!(
            "--destination {d}: neither a CIDR nor an IP address"
        ))
    })
}

/// A term's source, with where it was written when it was read from a file.
fn located(t: &TermOut) -> String {
    match &t.location {
        Some(loc) => format!("{} at {loc}", t.source),
        None => t.source.clone(),
    }
}

fn text(doc: &Explanation, style: TableStyle) -> String {
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
    s.push_str(&findings_table(&doc.diagnostics, style));
    s
}

/// A route's hops: what each adds to the route, the binding ones marked, and under a hop that
/// leaves a gateway the value it published with what this input would publish.
fn hops_text(s: &mut String, hops: &[std::sync::Arc<HopOut>], not_shown: usize) {
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
