//! The statements of a DOT picture in drawing order, with parallel relationship edges merged.
//!
//! Two relationships joining the same two nodes (two assignments of one Site to one pool, two
//! SitePeerings of the same two Sites) would be drawn as two edges on top of each other. They
//! become one edge, at the place of the first, naming every relationship and its cap, and
//! carrying the lowest link MTU among them with the term (and object) that binds it.

use super::facts::{Low, lower};
use super::layout::Size;
use std::collections::HashMap;

/// One relationship drawn as an edge.
pub(super) struct Part {
    /// Its title (`assignment a-1`, `SitePeering ab`).
    pub(super) title: String,
    /// Its label's lines, its cap first.
    pub(super) lines: Vec<String>,
    /// The lowest link it carries.
    pub(super) low: Option<Low>,
    /// Its own cap binds something shown.
    pub(super) red: bool,
    /// Attributes before the label (`style=bold, `).
    pub(super) lead: &'static str,
    /// Attributes after the label (`, style=dashed`).
    pub(super) style: &'static str,
}

/// An edge between two nodes: one relationship, or several merged.
pub(super) struct Edge {
    /// DOT id of the first end, as first drawn.
    pub(super) a: String,
    /// DOT id of the other end.
    pub(super) b: String,
    /// The relationships it draws, in drawing order.
    pub(super) parts: Vec<Part>,
}

impl Edge {
    /// The lowest link over its relationships (the first one's on ties).
    pub(super) fn low(&self) -> Option<Low> {
        let mut low = None;
        for l in self.parts.iter().filter_map(|p| p.low) {
            lower(&mut low, l.mtu, l.bound);
        }
        low
    }
}

enum Item {
    Line(String),
    Edge(usize),
}

/// The statements drawn so far, and how many nodes and edges they hold.
#[derive(Default)]
pub(super) struct Body {
    items: Vec<Item>,
    edges: Vec<Edge>,
    by_ends: HashMap<(String, String), usize>,
    nodes: usize,
    lines_of_edges: usize,
}

impl Body {
    /// A node statement.
    pub(super) fn node(&mut self, line: String) {
        self.nodes += 1;
        self.items.push(Item::Line(line));
    }

    /// An edge statement that is never merged (a hub's spoke, where a pool's gateways run).
    pub(super) fn link(&mut self, line: String) {
        self.lines_of_edges += 1;
        self.items.push(Item::Line(line));
    }

    /// A relationship's edge between `a` and `b` (DOT ids), merged into an earlier edge between
    /// the same two nodes, in either direction.
    pub(super) fn relation(&mut self, a: String, b: String, part: Part) {
        let key = if a <= b {
            (a.clone(), b.clone())
        } else {
            (b.clone(), a.clone())
        };
        match self.by_ends.get(&key) {
            Some(&i) => {
                if let Some(e) = self.edges.get_mut(i) {
                    e.parts.push(part);
                }
            }
            None => {
                self.by_ends.insert(key, self.edges.len());
                self.items.push(Item::Edge(self.edges.len()));
                self.edges.push(Edge {
                    a,
                    b,
                    parts: vec![part],
                });
            }
        }
    }

    /// Nodes and edges drawn.
    pub(super) fn size(&self) -> Size {
        Size {
            nodes: self.nodes,
            edges: self.lines_of_edges + self.edges.len(),
        }
    }

    /// The statements in drawing order, each merged edge written by `edge`.
    pub(super) fn write(&self, out: &mut String, edge: impl Fn(&Edge) -> String) {
        for item in &self.items {
            match item {
                Item::Line(l) => out.push_str(l),
                Item::Edge(i) => {
                    if let Some(e) = self.edges.get(*i) {
                        out.push_str(&edge(e));
                    }
                }
            }
            out.push('\n');
        }
    }
}
