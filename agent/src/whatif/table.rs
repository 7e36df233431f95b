//! The `what-if` table: totals first, then the digest (per kind of value, each change by value
//! before and after and the term binding the value after, with how many nodes and values), then,
//! when details are wanted, every changed value node by node.

use crate::common::counted;
use crate::output::{TableStyle, bound, table};
use mtu_solver::whatif::{Change, Digest, KindDigest};

/// How much of a what-if the table shows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Shown {
    /// The totals alone (`--summary`).
    Totals,
    /// The totals and the digest.
    Digest,
    /// The totals, the digest and every changed value.
    Details,
}

impl Shown {
    /// The digest, with every changed value below it when `details` are wanted.
    pub fn digest_or_details(details: bool) -> Shown {
        if details {
            Shown::Details
        } else {
            Shown::Digest
        }
    }
}

/// A value, `-` when it does not exist.
fn value(v: Option<u32>) -> String {
    v.map(|x| x.to_string()).unwrap_or_else(|| "-".into())
}

/// One kind's totals: `fabric 1303 → 1336 on 283 nodes` when every value of the kind makes the
/// same change and each node has one; `3 route values 1400 → 1300 on 2 nodes` when they make
/// the same change; otherwise `286459 route values on 4506 nodes`.
fn kind_totals(k: &KindDigest) -> String {
    let name = k.kind.as_str();
    let nodes = counted(k.nodes_affected, "node", "nodes");
    let values = counted(
        k.values_changed,
        &format!("{name} value"),
        &format!("{name} values"),
    );
    match k.single_change() {
        Some((b, a)) if k.values_changed == k.nodes_affected => {
            format!("{name} {} → {} on {nodes}", value(b), value(a))
        }
        Some((b, a)) => format!("{values} {} → {} on {nodes}", value(b), value(a)),
        None => format!("{values} on {nodes}"),
    }
}

/// The totals: how many values changed on how many nodes, then one line per kind of value.
fn totals(d: &Digest, s: &mut String) {
    s.push_str(&format!(
        "{} changed on {}\n",
        counted(d.values_changed, "value", "values"),
        counted(d.nodes_affected, "node", "nodes")
    ));
    for k in &d.kinds {
        s.push_str(&format!("  {}\n", kind_totals(k)));
    }
}

/// The digest: one row per group, kinds in order.
fn groups(d: &Digest, style: TableStyle) -> String {
    let rows: Vec<Vec<String>> = d
        .kinds
        .iter()
        .flat_map(|k| {
            k.groups.iter().map(|g| {
                vec![
                    k.kind.as_str().to_string(),
                    value(g.before),
                    value(g.after),
                    g.bound_by.clone().unwrap_or_else(|| "-".into()),
                    g.nodes_affected.to_string(),
                    g.values_changed.to_string(),
                ]
            })
        })
        .collect();
    let headers = ["KIND", "BEFORE", "AFTER", "BOUND BY", "NODES", "VALUES"];
    table(&headers, &rows, style)
}

/// Every changed value, a table per node (changes come sorted by node).
fn details(changes: &[Change], style: TableStyle, s: &mut String) {
    let mut rest = changes;
    while let Some(first) = rest.first() {
        let n = rest
            .iter()
            .position(|c| c.node != first.node)
            .unwrap_or(rest.len());
        let (node, tail) = rest.split_at(n);
        rest = tail;
        let rows: Vec<Vec<String>> = node
            .iter()
            .map(|c| {
                vec![
                    c.item.to_string(),
                    value(c.before),
                    value(c.after),
                    c.explanation
                        .as_ref()
                        .map(|e| bound(&e.bound.term, &e.bound.source, style))
                        .unwrap_or_default(),
                ]
            })
            .collect();
        s.push_str(&format!("NODE {}\n", first.node));
        let headers = ["ITEM", "BEFORE", "AFTER", "BOUND BY"];
        for l in table(&headers, &rows, style).lines() {
            s.push_str(&format!("  {l}\n"));
        }
    }
}

/// The table of a what-if, up to the diagnostics block: sections separated by blank lines, the
/// last one followed by one.
pub fn render(digest: &Digest, changes: &[Change], shown: Shown, style: TableStyle) -> String {
    let mut s = String::new();
    totals(digest, &mut s);
    s.push('\n');
    if shown == Shown::Totals || digest.kinds.is_empty() {
        return s;
    }
    s.push_str(&groups(digest, style));
    s.push('\n');
    if shown == Shown::Details {
        details(changes, style, &mut s);
        s.push('\n');
    }
    s
}
