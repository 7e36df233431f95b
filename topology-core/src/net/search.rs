//! Distances over the pool graph: for each destination class, how many pools are on the best hop
//! list each pool advertises (forwarding rules 1–4).
//!
//! A destination's distances are those of a breadth-first search from its origin pools over the
//! pools that accept its hop lists. Such a search from all origins at once equals, pool by pool,
//! the minimum of the searches from each origin alone, provided each of those avoids the same
//! pools: the pools that are not origins and none of whose gateways accepts the destination
//! (every other origin is at distance 1 in its own search, so a path through it is never
//! shorter). Searches are therefore made per origin pool and shared by every destination class it
//! originates: a destination costs a look-up of its origins and of the pools it blocks (none,
//! usually: a pool located in a Site mostly serves it), not a search of the whole graph. With
//! hundreds of pools and thousands of destination classes, one search per origin instead of one
//! per class is what keeps a node's forwarding linear in its routes.
//!
//! Where a class blocks no pool (the usual case), its origins' searches are the open ones, and
//! an open search's distance between two pools with gateways is the same from either end: it is
//! read from whichever end was searched, and a new search is made from the asking pool, not the
//! origin. A node asks from its few uplink pools about every origin, so a fresh solver makes a
//! few searches instead of one per origin pool.

use super::{Dest, Net, Origin};
use crate::ids::{PoolId, SiteId};
use smallvec::SmallVec;
use std::cell::OnceCell;
use std::sync::{Arc, OnceLock};

/// A distance that means "advertises nothing".
pub(super) const UNREACHED: u32 = u32::MAX;

/// Pools blocked for a destination class: not origins, and no gateway accepts its hop lists.
type Blocked = SmallVec<[PoolId; 2]>;

/// The distances of one destination class: its origin pools and each origin's search, avoiding
/// the pools the class blocks. When it blocks none (the usual case), the searches are the open
/// ones, and each distance is read from either end ([`Net::open_dist`]) until every origin's
/// own search has been made.
#[derive(Debug)]
pub(crate) struct Bfs {
    /// Pools that originate the destination (those with gateways).
    pub origins: SmallVec<[PoolId; 4]>,
    /// Per origin in the same order: pools on the best hop list each pool advertises when that
    /// origin alone originates it (`UNREACHED`: nothing). Set at once when the class blocks
    /// pools; otherwise once every origin's open search has been made.
    searches: OnceLock<SmallVec<[Arc<[u32]>; 2]>>,
    /// No gateway of a pool other than the origins is located where this class's hop lists are
    /// dropped: every gateway selects its next hops by distance alone ([`Net::directing_origins`]).
    pub clean: bool,
}

/// Per destination class (a Site or a pool, its node CIDRs or not), its distances once asked.
/// Dense, so asking is an index rather than a hash probe, and the answer is borrowed rather than
/// reference-counted: a node's resolve asks once or more per route.
pub(super) type Classes = Box<[OnceCell<Bfs>]>;

/// The searches made so far and the buffers they reuse.
#[derive(Default)]
pub(super) struct Searches {
    /// Per origin pool: its search when no pool is blocked.
    open: Vec<Option<Arc<[u32]>>>,
    /// Searches that avoid blocked pools, by origin and blocked pools.
    blocked: rustc_hash::FxHashMap<(PoolId, Blocked), Arc<[u32]>>,
    /// Per origin pool: the shortest paths towards it traced in other pools' open searches
    /// (`toward.rs`).
    pub(super) traces: Vec<SmallVec<[Trace; 2]>>,
    scratch: Scratch,
}

impl Searches {
    /// The open search from pool `p`, if it was made.
    pub(super) fn open_search(&self, p: PoolId) -> Option<&Arc<[u32]>> {
        self.open.get(p.idx()).and_then(|s| s.as_ref())
    }
}

/// The shortest paths from a root pool to an origin pool, in the root's open search: what
/// `toward.rs` reads a pool's next hops from when the origin pool's own search was not made.
#[derive(Debug)]
pub(super) struct Trace {
    /// The root's open search.
    pub(super) from_root: Arc<[u32]>,
    /// The pools on the shortest paths from the root to the origin pool (bit set).
    pub(super) marks: Arc<[u64]>,
}

/// The pool graph and the buffers a search reuses.
#[derive(Default)]
struct Scratch {
    /// Built by the first search.
    graph: Option<PoolGraph>,
    /// Distances of the current search.
    dist: Vec<u32>,
    /// Per pool peering: the search that expanded it last (0: none yet).
    hub_seen: Vec<u32>,
    /// The current search's stamp.
    stamp: u32,
    frontier: Vec<u32>,
    next: Vec<u32>,
}

impl Net<'_> {
    /// The distances of one destination class (memoized): its origins, the pools it blocks,
    /// and the search of each origin avoiding them. `None` only for a Site or pool the topology
    /// does not have.
    pub(crate) fn bfs(&self, dest: Dest, node_cidr: bool) -> Option<&Bfs> {
        let topo = self.topo;
        let classes = self.classes.get_or_init(|| {
            let n = topo.sites.len().saturating_add(topo.pools.len());
            (0..n.saturating_mul(2)).map(|_| OnceCell::new()).collect()
        });
        let at = match dest {
            Dest::Site(s) => s.idx(),
            Dest::Pool(p) => topo.sites.len().saturating_add(p.idx()),
        };
        let slot = classes.get(at.saturating_mul(2).saturating_add(usize::from(node_cidr)))?;
        Some(slot.get_or_init(|| self.new_bfs(dest, node_cidr)))
    }

    fn new_bfs(&self, dest: Dest, node_cidr: bool) -> Bfs {
        let key = (dest, node_cidr);
        let topo = self.topo;
        let origins: SmallVec<[PoolId; 4]> = self
            .origin_pools(dest)
            .into_iter()
            .filter(|p| !topo.pool(*p).gateways.is_empty())
            .collect();
        let dropping = self.dropping_pools(key, &origins);
        let blocked = self.blocked_pools(key, &dropping);
        let searches = OnceLock::new();
        if !blocked.is_empty() {
            let _ = searches.set(
                origins
                    .iter()
                    .map(|o| self.search_from(*o, &blocked))
                    .collect(),
            );
        }
        Bfs {
            origins,
            searches,
            clean: dropping.is_empty(),
        }
    }

    /// Pools on the best hop list pool `p` advertises for a destination class (`None`: it
    /// advertises nothing): the minimum over its origins.
    pub(super) fn class_dist(&self, bfs: &Bfs, p: PoolId) -> Option<u32> {
        let d = match self.class_searches(bfs) {
            Some(ss) => ss.iter().filter_map(|s| s.get(p.idx()).copied()).min(),
            None => bfs.origins.iter().map(|a| self.open_dist(*a, p)).min(),
        };
        d.filter(|d| *d != UNREACHED)
    }

    /// Pools on the best hop list pool `p` advertises when the class's `i`-th origin alone
    /// originates it (`UNREACHED`: nothing).
    pub(super) fn origin_dist(&self, bfs: &Bfs, i: usize, p: PoolId) -> u32 {
        match self.class_searches(bfs) {
            Some(ss) => ss.get(i).and_then(|s| s.get(p.idx()).copied()),
            None => bfs.origins.get(i).map(|a| self.open_dist(*a, p)),
        }
        .unwrap_or(UNREACHED)
    }

    /// Every origin's search for the class, when all have been made: then a distance is a
    /// look-up in them, without asking the memo (one solver resolving many nodes).
    fn class_searches<'b>(&self, bfs: &'b Bfs) -> Option<&'b SmallVec<[Arc<[u32]>; 2]>> {
        if let Some(ss) = bfs.searches.get() {
            return Some(ss);
        }
        let memo = self.searches.borrow();
        if !bfs.origins.iter().all(|a| memo.open_search(*a).is_some()) {
            return None;
        }
        let ss: Option<SmallVec<[Arc<[u32]>; 2]>> = bfs
            .origins
            .iter()
            .map(|a| memo.open_search(*a).cloned())
            .collect();
        let _ = bfs.searches.set(ss?);
        bfs.searches.get()
    }

    /// The open search's distance between origin pool `a` and pool `p` (`UNREACHED`: none).
    /// The pools a search enters and their peerings make an undirected graph, so the distance
    /// is the same from either end when both have gateways (a pool without any is entered by
    /// no search but its own): it is read from whichever search was made, and otherwise from a
    /// new search from `p`, the asking pool. A node asks from its few uplink pools about every
    /// origin, so a fresh solver makes a few searches instead of one per origin pool.
    pub(super) fn open_dist(&self, a: PoolId, p: PoolId) -> u32 {
        if a == p {
            return 1;
        }
        if self.topo.pool(p).gateways.is_empty() {
            return UNREACHED;
        }
        let at = |s: &[u32], i: PoolId| s.get(i.idx()).copied().unwrap_or(UNREACHED);
        {
            let memo = self.searches.borrow();
            if let Some(s) = memo.open_search(a) {
                return at(s, p);
            }
            if let Some(s) = memo.open_search(p) {
                return at(s, a);
            }
        }
        at(&self.search_from(p, &[]), a)
    }

    /// Distance via a gateway of pool `p` located in Site `x` for an origin: what that gateway
    /// advertises (`None`: nothing).
    pub(super) fn advertised(&self, bfs: &Bfs, p: PoolId, x: SiteId, o: Origin) -> Option<u32> {
        if bfs.origins.contains(&p) {
            return Some(1);
        }
        if !self.allowed(x, o.class()) {
            return None;
        }
        self.class_dist(bfs, p)
    }

    /// The pools other than the origins with a gateway located where a destination class's hop
    /// lists are dropped (the destination Site itself, and for node CIDRs the Sites
    /// network-peered with it), sorted. Costs the pools located in those Sites, not every pool.
    fn dropping_pools(&self, class: (Dest, bool), origins: &[PoolId]) -> SmallVec<[PoolId; 2]> {
        let Dest::Site(d) = class.0 else {
            return SmallVec::new();
        };
        let topo = self.topo;
        let mut out: SmallVec<[PoolId; 2]> = SmallVec::new();
        let mut add_located_in = |s: SiteId| {
            out.extend(
                self.gateway_pools_in(s)
                    .iter()
                    .copied()
                    .filter(|p| !origins.contains(p)),
            );
        };
        add_located_in(d);
        if class.1 {
            for r in topo.peerings_of(d) {
                for s in self.peering_gateway_sites(*r) {
                    add_located_in(*s);
                }
            }
        }
        out.sort_unstable();
        out.dedup();
        out
    }

    /// The pools a destination class blocks, sorted: of the `dropping` pools, those whose
    /// gateways are all located where its hop lists are dropped.
    fn blocked_pools(&self, class: (Dest, bool), dropping: &[PoolId]) -> Blocked {
        let sites = self.pool_gateway_sites();
        dropping
            .iter()
            .copied()
            .filter(|p| {
                sites
                    .get(p.idx())
                    .is_some_and(|xs| xs.iter().all(|x| !self.allowed(*x, class)))
            })
            .collect()
    }

    /// The search from origin `o` avoiding `blocked` (memoized).
    pub(super) fn search_from(&self, o: PoolId, blocked: &[PoolId]) -> Arc<[u32]> {
        {
            let memo = self.searches.borrow();
            let found = if blocked.is_empty() {
                memo.open.get(o.idx()).and_then(|s| s.clone())
            } else {
                memo.blocked
                    .get(&(o, Blocked::from_slice(blocked)))
                    .cloned()
            };
            if let Some(s) = found {
                return s;
            }
        }
        let dist = self.search(o, blocked);
        let mut memo = self.searches.borrow_mut();
        if blocked.is_empty() {
            let np = self.topo.pools.len();
            if memo.open.len() < np {
                memo.open.resize(np, None);
            }
            if let Some(slot) = memo.open.get_mut(o.idx()) {
                *slot = Some(dist.clone());
            }
        } else {
            memo.blocked
                .insert((o, Blocked::from_slice(blocked)), dist.clone());
        }
        dist
    }

    /// Breadth-first search over the pool graph from origin `o` (distance 1): a pool is entered
    /// when it has gateways and is not blocked; hub vertices are the pool peerings, each
    /// expanded once.
    fn search(&self, o: PoolId, blocked: &[PoolId]) -> Arc<[u32]> {
        let topo = self.topo;
        let mut memo = self.searches.borrow_mut();
        let Scratch {
            graph,
            dist,
            hub_seen,
            stamp,
            frontier,
            next,
        } = &mut memo.scratch;
        let graph = graph.get_or_insert_with(|| PoolGraph::new(topo));
        let stamp = fresh_stamp(stamp, hub_seen, graph.hub_count());
        dist.clear();
        dist.resize(topo.pools.len(), UNREACHED);
        frontier.clear();
        if let Some(d) = dist.get_mut(o.idx()) {
            *d = 1;
            frontier.push(o.0);
        }
        let mut level = 1u32;
        while !frontier.is_empty() {
            next.clear();
            let next_level = level.saturating_add(1);
            for p in frontier.iter() {
                for h in graph.hubs_of(*p) {
                    let Some(seen) = hub_seen.get_mut(*h as usize) else {
                        continue;
                    };
                    if *seen == stamp {
                        continue;
                    }
                    *seen = stamp;
                    for q in graph.members_of(*h) {
                        if let Some(d) = dist.get_mut(*q as usize)
                            && *d == UNREACHED
                            && (blocked.is_empty() || blocked.binary_search(&PoolId(*q)).is_err())
                        {
                            *d = next_level;
                            next.push(*q);
                        }
                    }
                }
            }
            std::mem::swap(frontier, next);
            level = next_level;
        }
        Arc::from(dist.as_slice())
    }

    /// The pools on the shortest paths from the root of open search `from_root` to pool `a`
    /// (both ends included; none when `a` is not reached), as a bit set over the pools: traced
    /// back from `a`, level by level, through the neighbours one pool nearer to the root. The
    /// members of a pool peering are within one pool of each other, so a peering expanded from
    /// its farthest marked member has no member two levels nearer: each is expanded once.
    pub(super) fn shortest_path_marks(&self, from_root: &[u32], a: PoolId) -> Arc<[u64]> {
        let topo = self.topo;
        let mut marks = vec![0u64; topo.pools.len().div_ceil(64)];
        let Some(mut level) = from_root.get(a.idx()).copied().filter(|k| *k != UNREACHED) else {
            return marks.into();
        };
        let mut memo = self.searches.borrow_mut();
        let Scratch {
            graph,
            hub_seen,
            stamp,
            frontier,
            next,
            ..
        } = &mut memo.scratch;
        let graph = graph.get_or_insert_with(|| PoolGraph::new(topo));
        let stamp = fresh_stamp(stamp, hub_seen, graph.hub_count());
        mark(&mut marks, a.0);
        frontier.clear();
        frontier.push(a.0);
        while level > 1 && !frontier.is_empty() {
            next.clear();
            let want = level.saturating_sub(1);
            for x in frontier.iter() {
                for h in graph.hubs_of(*x) {
                    let Some(seen) = hub_seen.get_mut(*h as usize) else {
                        continue;
                    };
                    if *seen == stamp {
                        continue;
                    }
                    *seen = stamp;
                    for q in graph.members_of(*h) {
                        if from_root.get(*q as usize) == Some(&want) && !is_marked(&marks, *q) {
                            mark(&mut marks, *q);
                            next.push(*q);
                        }
                    }
                }
            }
            std::mem::swap(frontier, next);
            level = want;
        }
        marks.into()
    }
}

/// A fresh stamp for a search (no pool peering expanded yet), with `hub_seen` sized for
/// `hubs` peerings and cleared when the stamps wrap around.
fn fresh_stamp(stamp: &mut u32, hub_seen: &mut Vec<u32>, hubs: usize) -> u32 {
    *stamp = match stamp.checked_add(1) {
        Some(x) => x,
        None => {
            hub_seen.iter_mut().for_each(|x| *x = 0);
            1
        }
    };
    hub_seen.resize(hubs, 0);
    *stamp
}

/// Whether pool index `q` is in bit set `marks`.
pub(super) fn is_marked(marks: &[u64], q: u32) -> bool {
    marks
        .get((q / 64) as usize)
        .is_some_and(|w| w & (1u64 << (q % 64)) != 0)
}

fn mark(marks: &mut [u64], q: u32) {
    if let Some(w) = marks.get_mut((q / 64) as usize) {
        *w |= 1u64 << (q % 64);
    }
}

/// The pool graph as flat arrays, for the searches: each pool's pool peerings, and each pool
/// peering's member pools that have gateways (the only ones a search enters). Hub vertices keep
/// it linear in the memberships: a peering of N pools is N entries, not N² pairs.
struct PoolGraph {
    /// `hubs[hub_start[p]..hub_start[p + 1]]`: the pool peerings of pool `p`.
    hub_start: Vec<u32>,
    hubs: Vec<u32>,
    /// `members[member_start[h]..member_start[h + 1]]`: the member pools of pool peering `h`
    /// that have gateways.
    member_start: Vec<u32>,
    members: Vec<u32>,
}

impl PoolGraph {
    fn new(topo: &crate::model::Topology) -> PoolGraph {
        let index = |n: usize| u32::try_from(n).unwrap_or(u32::MAX);
        let mut g = PoolGraph {
            hub_start: vec![0],
            hubs: Vec::new(),
            member_start: vec![0],
            members: Vec::new(),
        };
        for p in 0..topo.pools.len() {
            g.hubs.extend(
                topo.pool_peerings_of(PoolId::from_idx(p))
                    .iter()
                    .map(|h| h.0),
            );
            g.hub_start.push(index(g.hubs.len()));
        }
        for r in &topo.pool_peerings {
            g.members.extend(
                r.pools
                    .iter()
                    .filter(|q| !topo.pool(**q).gateways.is_empty())
                    .map(|q| q.0),
            );
            g.member_start.push(index(g.members.len()));
        }
        g
    }

    fn hub_count(&self) -> usize {
        self.member_start.len().saturating_sub(1)
    }

    fn span<'a>(start: &[u32], items: &'a [u32], i: u32) -> &'a [u32] {
        let i = i as usize;
        match (start.get(i), start.get(i.saturating_add(1))) {
            (Some(a), Some(b)) => items.get(*a as usize..*b as usize).unwrap_or(&[]),
            _ => &[],
        }
    }

    fn hubs_of(&self, p: u32) -> &[u32] {
        Self::span(&self.hub_start, &self.hubs, p)
    }

    fn members_of(&self, h: u32) -> &[u32] {
        Self::span(&self.member_start, &self.members, h)
    }
}
