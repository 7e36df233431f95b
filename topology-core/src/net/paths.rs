//! Forwarding paths: every path a learned route's traffic takes from a node, hop by hop, counted
//! and walked on demand.

use super::*;
use ipnet::IpNet;
use smallvec::SmallVec;
use std::sync::Arc;

impl<'t> Net<'t> {
    /// Forwarding paths of node `n` for a learned prefix: hop sequences (node IDs, first hop
    /// first), the first `limit` of them in forwarding order, and how many there are in all
    /// (saturating at `u64::MAX`; [`Net::forwarding_paths`] says whether it saturated).
    pub fn paths(&self, n: NodeId, prefix: &IpNet, limit: usize) -> (Vec<Vec<NodeId>>, u64) {
        let first = self.first_paths(n, prefix, limit);
        (first.paths, first.total)
    }

    /// The first `limit` forwarding paths of node `n` for a learned prefix, in forwarding
    /// order, how many there are in all and whether that count saturated: what
    /// [`Net::forwarding_paths`] counts and walks, put together from each next hop's own
    /// paths. A gateway's first [`KEPT_PATHS`] paths to a prefix and their count are made once
    /// per `Net` and shared by every route through it; a longer list is walked anew.
    pub fn first_paths(&self, n: NodeId, prefix: &IpNet, limit: usize) -> FirstPaths {
        match self.learned_for(n, prefix) {
            Some(l) => self.first_paths_via(&l.via, prefix, limit),
            None => FirstPaths::default(),
        }
    }

    /// [`Net::first_paths`] of a route whose next hops are `via`: the same for every node
    /// whose route to the prefix leaves by them.
    pub fn first_paths_via(&self, via: &[NodeId], prefix: &IpNet, limit: usize) -> FirstPaths {
        let mut out = FirstPaths::default();
        for g in via {
            let from_g = self.paths_from(*g, prefix, limit);
            out.add_count(&from_g);
            let room = limit.saturating_sub(out.paths.len());
            out.paths.extend(from_g.paths.iter().take(room).cloned());
        }
        out
    }

    /// The first paths from gateway `g` as a route's next hop (at least `limit` of them, when
    /// there are), and how many there are: kept per gateway and prefix when `limit` is at most
    /// [`KEPT_PATHS`]. Paths from a next hop do not depend on the node before it: a branch is
    /// cut by its number of hops from the next hop.
    fn paths_from(&self, g: NodeId, prefix: &IpNet, limit: usize) -> Arc<FirstPaths> {
        if limit > KEPT_PATHS {
            return Arc::new(self.walked_paths_from(g, prefix, limit));
        }
        if let Some(k) = self.kept_paths(g, prefix, 0) {
            return k.paths;
        }
        let paths = Arc::new(self.walked_paths_from(g, prefix, KEPT_PATHS));
        // A walk that cut a branch: the gateways before `g` walk theirs too.
        let kept = KeptPaths {
            paths: paths.clone(),
            height: self.topo.pools.len().saturating_add(2),
        };
        self.gateway_paths.borrow_mut().insert((g, *prefix), kept);
        paths
    }

    /// The first `limit` paths from `g` and their count, walked ([`Net::forwarding_paths`]).
    fn walked_paths_from(&self, g: NodeId, prefix: &IpNet, limit: usize) -> FirstPaths {
        let fp = self.forwarding_paths_from(&[g], prefix);
        FirstPaths {
            paths: fp.iter().take(limit.max(KEPT_PATHS)).collect(),
            total: fp.total,
            saturated: fp.saturated,
        }
    }

    /// Gateway `g`'s first [`KEPT_PATHS`] paths to `prefix` and their count, made from its next
    /// hops' (kept in turn), `depth` gateways after the one asked about: what the walk from `g`
    /// finds when none of its branches is longer than the walk's cut (one gateway more than
    /// there are pools, which only selections that loop reach). None when one is, or when
    /// `depth` passes the cut: the walk decides.
    fn kept_paths(&self, g: NodeId, prefix: &IpNet, depth: usize) -> Option<KeptPaths> {
        if let Some(k) = self.gateway_paths.borrow().get(&(g, *prefix)) {
            return Some(k.clone());
        }
        let longest = self.topo.pools.len().saturating_add(1);
        if depth >= longest {
            return None;
        }
        let kept = match self.path_step(g, prefix) {
            None => KeptPaths {
                paths: Arc::new(FirstPaths {
                    paths: vec![vec![g]],
                    total: 1,
                    saturated: false,
                }),
                height: 1,
            },
            Some(via) => {
                let mut out = FirstPaths::default();
                let mut height = 1usize;
                for h in &via {
                    let next = self.kept_paths(*h, prefix, depth.saturating_add(1))?;
                    height = height.max(next.height.saturating_add(1));
                    out.add_after(g, &next.paths);
                }
                if height > longest {
                    return None;
                }
                KeptPaths {
                    paths: Arc::new(out),
                    height,
                }
            }
        };
        self.gateway_paths
            .borrow_mut()
            .insert((g, *prefix), kept.clone());
        Some(kept)
    }

    /// The forwarding paths of node `n` for a learned prefix, counted without being enumerated.
    ///
    /// Every ECMP branch follows each gateway's own selection until a gateway whose pool
    /// originates the prefix delivers it (rule 6). The number of branches multiplies at every
    /// hop (a chain of pools with `k` gateways each has `k^length` of them), so they are counted
    /// by dynamic programming over (gateway, hop) states: each state's count is the sum of its
    /// next hops' counts, computed once. A branch longer than the number of pools (possible only
    /// if selections loop) ends where it is cut, so the state graph is finite and acyclic. Cost:
    /// one state per gateway and hop count reached, each expanded once; paths themselves are
    /// produced lazily by [`ForwardingPaths::iter`].
    pub fn forwarding_paths(&self, n: NodeId, prefix: &IpNet) -> ForwardingPaths {
        match self.learned_for(n, prefix) {
            Some(l) => self.forwarding_paths_from(&l.via, prefix),
            None => ForwardingPaths::default(),
        }
    }

    /// The forwarding paths from `roots`, a route's next hops in order
    /// ([`Net::forwarding_paths`]).
    fn forwarding_paths_from(&self, roots: &[NodeId], prefix: &IpNet) -> ForwardingPaths {
        let mut fp = ForwardingPaths::default();
        let max_depth = self.topo.pools.len();
        let mut index: FxHashMap<(NodeId, usize), usize> = FxHashMap::default();
        // States layer by layer (layer `d`: the gateways reached after `d` earlier hops); every
        // edge goes from one layer to the next, so counting the layers backwards is a
        // topological order.
        let mut layers: Vec<Vec<usize>> = Vec::new();
        let mut current: Vec<usize> = Vec::new();
        for g in roots {
            let r = fp.state(&mut index, &mut current, *g, 0);
            fp.roots.push(r);
        }
        let mut depth = 0usize;
        while !current.is_empty() {
            let mut next: Vec<usize> = Vec::new();
            let child_depth = depth.saturating_add(1);
            for &i in &current {
                let Some(g) = fp.states.get(i).map(|s| s.node) else {
                    continue;
                };
                let children: SmallVec<[usize; 4]> = match self.path_step(g, prefix) {
                    Some(via) if depth <= max_depth => {
                        let mut c = SmallVec::with_capacity(via.len());
                        for h in &via {
                            c.push(fp.state(&mut index, &mut next, *h, child_depth));
                        }
                        c
                    }
                    // Delivers, or cut: the branch ends here.
                    _ => {
                        if let Some(s) = fp.states.get_mut(i) {
                            s.terminal = true;
                        }
                        continue;
                    }
                };
                if let Some(s) = fp.states.get_mut(i) {
                    s.children = children;
                }
            }
            layers.push(std::mem::replace(&mut current, next));
            depth = child_depth;
        }
        for layer in layers.iter().rev() {
            for &i in layer {
                let (count, saturated) = fp.count_of(i);
                if let Some(s) = fp.states.get_mut(i) {
                    s.count = count;
                    fp.saturated |= saturated;
                }
            }
        }
        for &r in &fp.roots {
            let c = fp.states.get(r).map_or(0, |s| s.count);
            match fp.total.checked_add(c) {
                Some(t) => fp.total = t,
                None => {
                    fp.total = u64::MAX;
                    fp.saturated = true;
                }
            }
        }
        fp
    }

    /// Where a path through gateway `g` to `prefix` goes: None when `g` delivers it (its pool
    /// originates one of the prefix's origins), else `g`'s own next hops (none: a dead end).
    /// Memoized per gateway and prefix.
    fn path_step(&self, g: NodeId, prefix: &IpNet) -> PathStep {
        if let Some(s) = self.path_steps.borrow().get(&(g, *prefix)) {
            return s.as_deref().map(SmallVec::from_slice);
        }
        let delivers = self
            .origins_of(prefix)
            .iter()
            .any(|o| self.originates(g, o.dest));
        let step = if delivers {
            None
        } else {
            Some(
                self.learned_for(g, prefix)
                    .map(|x| x.via)
                    .unwrap_or_default(),
            )
        };
        self.path_steps
            .borrow_mut()
            .insert((g, *prefix), step.as_deref().map(SmallVec::from_slice));
        step
    }
}

/// How many first paths per gateway and prefix a [`Net`] keeps ([`Net::first_paths`]): as many
/// as `explain` lists by default (keeping more makes each gateway's first walk longer than
/// the routes through it save).
pub const KEPT_PATHS: usize = 4;

/// The first forwarding paths of a learned route, and how many there are
/// ([`Net::first_paths`]).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FirstPaths {
    /// The first paths (node IDs, first hop first), in forwarding order.
    pub paths: Vec<Vec<NodeId>>,
    /// How many paths there are in all (`u64::MAX` when `saturated`).
    pub total: u64,
    /// There are more paths than a `u64` counts: `total` is a lower bound.
    pub saturated: bool,
}

impl FirstPaths {
    /// Adds the count of another set of paths (saturating).
    fn add_count(&mut self, other: &FirstPaths) {
        match self.total.checked_add(other.total) {
            Some(t) => self.total = t,
            None => {
                self.total = u64::MAX;
                self.saturated = true;
            }
        }
        self.saturated |= other.saturated;
    }

    /// Adds the paths of a next hop of `g` (`g` before each, up to [`KEPT_PATHS`]) and their
    /// count.
    fn add_after(&mut self, g: NodeId, next: &FirstPaths) {
        self.add_count(next);
        for p in &next.paths {
            if self.paths.len() >= KEPT_PATHS {
                break;
            }
            let mut path = Vec::with_capacity(p.len().saturating_add(1));
            path.push(g);
            path.extend_from_slice(p);
            self.paths.push(path);
        }
    }
}

/// A gateway's kept first paths to a prefix ([`Net::first_paths`]), and how many gateways its
/// longest branch has (beyond the walk's cut for paths that were walked).
#[derive(Clone, Debug)]
pub(super) struct KeptPaths {
    paths: Arc<FirstPaths>,
    height: usize,
}

/// A gateway's step on a forwarding path ([`Net::path_step`]).
pub(super) type PathStep = Option<SmallVec<[NodeId; 4]>>;

/// The forwarding paths of one learned route: how many there are, and each of them on demand
/// ([`Net::forwarding_paths`]).
#[derive(Clone, Debug, Default)]
pub struct ForwardingPaths {
    states: Vec<PathState>,
    /// The states of the route's own next hops, in order.
    roots: Vec<usize>,
    total: u64,
    saturated: bool,
}

/// A gateway reached after a given number of hops.
#[derive(Clone, Debug)]
struct PathState {
    node: NodeId,
    /// The branch ends here (the gateway delivers, or the branch is cut).
    terminal: bool,
    /// Next-hop states, in selection order (empty for a terminal state or a dead end).
    children: SmallVec<[usize; 4]>,
    /// Paths from here to a delivering gateway (1 for a terminal state, saturating).
    count: u64,
}

impl ForwardingPaths {
    /// How many forwarding paths there are in all (`u64::MAX` when [`Self::saturated`]).
    pub fn total(&self) -> u64 {
        self.total
    }

    /// Whether there are more paths than a `u64` counts: [`Self::total`] is then a lower bound.
    pub fn saturated(&self) -> bool {
        self.saturated
    }

    /// How many (gateway, hop) states were counted: the work [`Net::forwarding_paths`] did,
    /// proportional to the gateways on the paths, not to the paths.
    pub fn state_count(&self) -> usize {
        self.states.len()
    }

    /// The paths in forwarding order (first next hop first, then each gateway's own selection
    /// in order), produced one at a time: taking the first few costs their length times the
    /// fan-out, whatever the total.
    pub fn iter(&self) -> PathIter<'_> {
        PathIter {
            fp: self,
            root: 0,
            stack: Vec::new(),
        }
    }

    /// The state for `(g, depth)`, created (and queued on `layer`) on first use.
    fn state(
        &mut self,
        index: &mut FxHashMap<(NodeId, usize), usize>,
        layer: &mut Vec<usize>,
        g: NodeId,
        depth: usize,
    ) -> usize {
        *index.entry((g, depth)).or_insert_with(|| {
            let i = self.states.len();
            self.states.push(PathState {
                node: g,
                terminal: false,
                children: SmallVec::new(),
                count: 0,
            });
            layer.push(i);
            i
        })
    }

    /// The count of state `i` from its children's (already computed) counts, and whether the
    /// sum saturated.
    fn count_of(&self, i: usize) -> (u64, bool) {
        let Some(s) = self.states.get(i) else {
            return (0, false);
        };
        if s.terminal {
            return (1, false);
        }
        let mut sum: u64 = 0;
        let mut saturated = false;
        for c in &s.children {
            let n = self.states.get(*c).map_or(0, |x| x.count);
            match sum.checked_add(n) {
                Some(x) => sum = x,
                None => {
                    sum = u64::MAX;
                    saturated = true;
                }
            }
        }
        (sum, saturated)
    }

    fn terminal(&self, i: usize) -> bool {
        self.states.get(i).is_some_and(|s| s.terminal)
    }

    fn leads_somewhere(&self, i: usize) -> bool {
        self.states.get(i).is_some_and(|s| s.count > 0)
    }
}

/// Forwarding paths one at a time, depth first; branches that reach no delivering gateway are
/// skipped without being walked ([`ForwardingPaths::iter`]).
#[derive(Clone, Debug)]
pub struct PathIter<'a> {
    fp: &'a ForwardingPaths,
    /// The next root to start from.
    root: usize,
    /// The current branch: each state with the position of its next child to try.
    stack: Vec<(usize, usize)>,
}

impl PathIter<'_> {
    fn current(&self) -> Vec<NodeId> {
        self.stack
            .iter()
            .filter_map(|(i, _)| self.fp.states.get(*i).map(|s| s.node))
            .collect()
    }
}

impl Iterator for PathIter<'_> {
    type Item = Vec<NodeId>;

    fn next(&mut self) -> Option<Vec<NodeId>> {
        // The path returned last ended at a terminal state: leave it.
        if self.stack.last().is_some_and(|(i, _)| self.fp.terminal(*i)) {
            self.stack.pop();
        }
        loop {
            let Some((top, pos)) = self.stack.last_mut() else {
                let r = *self.fp.roots.get(self.root)?;
                self.root = self.root.saturating_add(1);
                if self.fp.leads_somewhere(r) {
                    self.stack.push((r, 0));
                    if self.fp.terminal(r) {
                        return Some(self.current());
                    }
                }
                continue;
            };
            let children = self
                .fp
                .states
                .get(*top)
                .map(|s| s.children.as_slice())
                .unwrap_or_default();
            let next = children
                .iter()
                .enumerate()
                .skip(*pos)
                .find(|(_, c)| self.fp.leads_somewhere(**c));
            match next {
                Some((k, c)) => {
                    *pos = k.saturating_add(1);
                    let c = *c;
                    self.stack.push((c, 0));
                    if self.fp.terminal(c) {
                        return Some(self.current());
                    }
                }
                None => {
                    self.stack.pop();
                }
            }
        }
    }
}
