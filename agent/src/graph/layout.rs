//! Which Graphviz layout draws a picture, chosen by its size.
//!
//! `dot` (layered, edge labels placed without covering edges) is the clearest layout but grows
//! much faster than linearly with labelled edges: the 200 Sites of the standard cluster gave no
//! picture after 300 s. `fdp` (force-directed) lays the same picture out in about a second, with
//! labels at edge midpoints, and unlike `sfdp` (as fast here) it draws clusters: the pools. Its
//! own overlap removal took 12 s there, so nodes are pushed apart by `prism` instead (`sfdp`'s).
//! Small pictures keep `dot`; larger ones take `fdp`, named in the DOT text itself
//! (`layout=fdp`) so that any Graphviz command renders it the same.

/// How many nodes and edges a picture draws.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Size {
    /// Sites, pools and relationship hubs.
    pub nodes: usize,
    /// Edges, after parallel ones are merged.
    pub edges: usize,
}

/// A Graphviz layout engine.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Engine {
    /// Layered (`dot`).
    Dot,
    /// Force-directed, with clusters (`fdp`).
    Fdp,
}

impl Engine {
    /// The engine's Graphviz name.
    pub fn name(self) -> &'static str {
        match self {
            Engine::Dot => "dot",
            Engine::Fdp => "fdp",
        }
    }
}

/// The most nodes `dot` lays out. On parts of the standard cluster `dot` took 0.35 s for 115
/// nodes and 234 edges, 2.5 s for 145 and 308, and gave nothing after 300 s for 300 and 710.
pub const DOT_MAX_NODES: usize = 100;
/// The most edges `dot` lays out: every edge carries a label, which `dot` ranks as a node.
pub const DOT_MAX_EDGES: usize = 200;
/// Above this many nodes even `fdp` takes seconds, and the picture is hard to read: say so.
pub const SLOW_NODES: usize = 150;

/// The engine for a picture of `size`: `dot` while it stays fast, `fdp` beyond.
pub fn engine_for(size: Size) -> Engine {
    if size.nodes <= DOT_MAX_NODES && size.edges <= DOT_MAX_EDGES {
        Engine::Dot
    } else {
        Engine::Fdp
    }
}

/// A note for standard error when laying out `size` with `engine` may take long.
pub fn slow_note(size: Size, engine: Engine) -> Option<String> {
    (engine == Engine::Fdp && size.nodes > SLOW_NODES).then(|| {
        format!(
            "graph: laying out {} nodes and {} edges with Graphviz {}, which may take a while; \
             --around NODE draws one node's neighbourhood",
            size.nodes,
            size.edges,
            engine.name()
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn size(nodes: usize, edges: usize) -> Size {
        Size { nodes, edges }
    }

    #[test]
    fn small_pictures_keep_dot_and_large_ones_take_fdp() {
        let cases = [
            (size(0, 0), Engine::Dot),
            (size(7, 9), Engine::Dot),
            (size(DOT_MAX_NODES, DOT_MAX_EDGES), Engine::Dot),
            (size(DOT_MAX_NODES + 1, 10), Engine::Fdp),
            (size(10, DOT_MAX_EDGES + 1), Engine::Fdp),
            (size(72, 171), Engine::Dot),
            (size(300, 710), Engine::Fdp),
        ];
        for (s, want) in cases {
            assert_eq!(engine_for(s), want, "{s:?}");
        }
    }

    #[test]
    fn only_large_fdp_layouts_are_announced() {
        assert_eq!(slow_note(size(30, 50), Engine::Dot), None);
        assert_eq!(slow_note(size(SLOW_NODES, 400), Engine::Fdp), None);
        let note = slow_note(size(300, 710), Engine::Fdp).unwrap_or_default();
        assert!(
            note.contains("300 nodes and 710 edges") && note.contains("fdp"),
            "{note}"
        );
        assert!(note.contains("--around"), "{note}");
    }
}
