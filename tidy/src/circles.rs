//! Module circles: two modules of one crate root that refer to each other, directly or through
//! siblings. A reference between a module and its own ancestor or descendant is a parent's
//! door, not a circle (a folder's shared types at its root, its children re-exported); every
//! other reference is lifted to the two siblings under the modules' nearest common ancestor,
//! and a strongly connected set of those siblings is a circle.

use std::collections::{BTreeMap, BTreeSet};

use petgraph::graph::{DiGraph, NodeIndex};

use crate::{SourceFile, references};

/// Sibling modules that reach each other through their references.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Circle {
    /// The crate and root (`agent (lib)`).
    pub root: String,
    /// The sibling modules in the circle, by absolute path.
    pub modules: Vec<String>,
    /// For each arrow inside the circle, a file that makes it.
    pub arrows: Vec<String>,
}

/// The module circles of the crates whose files are given.
pub fn module_circles(files: &[SourceFile]) -> Vec<Circle> {
    let mut roots: BTreeMap<(String, String), Vec<&SourceFile>> = BTreeMap::new();
    for f in files {
        roots
            .entry((f.krate.clone(), f.root.clone()))
            .or_default()
            .push(f);
    }
    roots
        .into_iter()
        .flat_map(|((krate, root), files)| circles_of(&format!("{krate} ({root})"), &files))
        .collect()
}

/// An arrow between siblings, with a file that makes it.
type Arrows = BTreeMap<(Vec<String>, Vec<String>), String>;

fn circles_of(name: &str, files: &[&SourceFile]) -> Vec<Circle> {
    let arrows = sibling_arrows(files);
    let mut graph: DiGraph<Vec<String>, ()> = DiGraph::new();
    let mut index: BTreeMap<Vec<String>, NodeIndex> = BTreeMap::new();
    let mut node = |g: &mut DiGraph<Vec<String>, ()>, m: &Vec<String>| {
        *index
            .entry(m.clone())
            .or_insert_with(|| g.add_node(m.clone()))
    };
    for (from, to) in arrows.keys() {
        let a = node(&mut graph, from);
        let b = node(&mut graph, to);
        graph.add_edge(a, b, ());
    }
    petgraph::algo::tarjan_scc(&graph)
        .into_iter()
        .filter(|scc| scc.len() > 1)
        .map(|scc| {
            let members: BTreeSet<&Vec<String>> = scc.iter().map(|i| &graph[*i]).collect();
            let evidence = arrows
                .iter()
                .filter(|((a, b), _)| members.contains(a) && members.contains(b))
                .map(|((a, b), file)| format!("{} -> {} ({file})", a.join("::"), b.join("::")))
                .collect();
            Circle {
                root: name.to_string(),
                modules: members.iter().map(|m| m.join("::")).collect(),
                arrows: evidence,
            }
        })
        .collect()
}

/// Every reference lifted to the siblings under the nearest common ancestor of its two ends.
fn sibling_arrows(files: &[&SourceFile]) -> Arrows {
    let modules: BTreeSet<&[String]> = files.iter().map(|f| f.module.as_slice()).collect();
    let mut arrows = Arrows::new();
    for f in files {
        for path in references(f) {
            let Some(target) = (0..=path.len())
                .rev()
                .map(|n| &path[..n])
                .find(|p| modules.contains(p))
            else {
                continue;
            };
            let from = f.module.as_slice();
            let common = from.iter().zip(target).take_while(|(a, b)| a == b).count();
            if common == from.len() || common == target.len() {
                continue;
            }
            arrows
                .entry((from[..=common].to_vec(), target[..=common].to_vec()))
                .or_insert_with(|| f.path.display().to_string());
        }
    }
    arrows
}
