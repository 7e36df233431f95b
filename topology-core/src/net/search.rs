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

use super::{Dest, Net, Origin};
use crate::ids::{NodeId, PoolId, SiteId};
use smallvec::SmallVec;
use std::sync::Arc;

/// A distance that means "advertises nothing".
const UNREACHED: u32 = u32::MAX;

/// Pools blocked for a destination class: not origins, and no gateway accepts its hop lists.
type Blocked = SmallVec<[PoolId; 2]>;

/// The distances of one destination class: its origin pools and each origin's search.
#[derive(Debug)]
pub(crate) struct Bfs {
    /// Pools that originate the destination (those with gateways).
    pub origins: SmallVec<[PoolId; 4]>,
    /// Per origin, in the same order: pools on the best hop list each pool advertises when that
    /// origin alone originates it (`UNREACHED`: nothing).
    searches: SmallVec<[Arc<[u32]>; 2]>,
    /// No gateway of a pool other than the origins is located where this class's hop lists are
    /// dropped: every gateway selects its next hops by distance alone ([`Net::directing_origin`]).
    clean: bool,
}

impl Bfs {
    /// Pools on the best hop list pool `p` advertises (`None`: it advertises nothing).
    pub fn dist(&self, p: PoolId) -> Option<u32> {
        self.searches
            .iter()
            .filter_map(|s| s.get(p.idx()).copied())
            .min()
            .filter(|d| *d != UNREACHED)
    }
}

/// The searches made so far and the buffers they reuse.
#[derive(Default)]
pub(super) struct Searches {
    /// Per destination class.
    classes: rustc_hash::FxHashMap<(Dest, bool), Arc<Bfs>>,
    /// Per origin pool: its search when no pool is blocked.
    open: Vec<Option<Arc<[u32]>>>,
    /// Searches that avoid blocked pools, by origin and blocked pools.
    blocked: rustc_hash::FxHashMap<(PoolId, Blocked), Arc<[u32]>>,
    scratch: Scratch,
}

impl Searches {
    /// Whether any search has been made (for the complexity tests).
    pub fn is_empty(&self) -> bool {
        self.classes.is_empty()
    }
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
    /// and the search of each origin avoiding them.
    pub(crate) fn bfs(&self, dest: Dest, node_cidr: bool) -> Arc<Bfs> {
        let key = (dest, node_cidr);
        if let Some(b) = self.searches.borrow().classes.get(&key) {
            return b.clone();
        }
        let topo = self.topo;
        let origins: SmallVec<[PoolId; 4]> = self
            .origin_pools(dest)
            .into_iter()
            .filter(|p| !topo.pool(*p).gateways.is_empty())
            .collect();
        let dropping = self.dropping_pools(key, &origins);
        let blocked = self.blocked_pools(key, &dropping);
        let searches = origins
            .iter()
            .map(|o| self.search_from(*o, &blocked))
            .collect();
        let rc = Arc::new(Bfs {
            origins,
            searches,
            clean: dropping.is_empty(),
        });
        self.searches.borrow_mut().classes.insert(key, rc.clone());
        rc
    }

    /// The one origin pool towards which a gateway of pool `p` forwards origin `o`, when there is
    /// one: the class is clean (every gateway that is not an origin's accepts its hop lists, so
    /// each selects its next hops by distance alone), `p` does not originate it, and one origin
    /// pool's search is strictly nearer to `p` than every other's. Then every gateway on the
    /// paths from `p` is strictly nearer to that origin too (a next hop one pool nearer to it
    /// cannot be as near to another), so the paths are those towards that origin pool alone,
    /// whatever the destination: [`Net::via_toward`] gives them hop by hop.
    pub fn directing_origin(&self, p: PoolId, o: Origin) -> Option<PoolId> {
        let bfs = self.bfs(o.dest, o.ty == super::RouteType::NodeCidr);
        if !bfs.clean || bfs.origins.contains(&p) {
            return None;
        }
        let mut best: Option<(u32, PoolId)> = None;
        let mut tied = false;
        for (a, s) in bfs.origins.iter().zip(&bfs.searches) {
            let k = s.get(p.idx()).copied().unwrap_or(UNREACHED);
            match best {
                Some((b, _)) if k > b => {}
                Some((b, _)) if k == b => tied = true,
                _ => {
                    best = Some((k, *a));
                    tied = false;
                }
            }
        }
        best.filter(|(k, _)| !tied && *k != UNREACHED)
            .map(|(_, a)| a)
    }

    /// The next hops of a gateway of pool `p` towards origin pool `a` (see
    /// [`Net::directing_origin`]): the gateways of the pools peered with `p` one pool nearer to
    /// `a`, sorted (empty when `p` is `a` or does not reach it).
    pub fn via_toward(&self, p: PoolId, a: PoolId) -> SmallVec<[NodeId; 4]> {
        let search = self.search_from(a, &[]);
        let Some(k) = search
            .get(p.idx())
            .copied()
            .filter(|k| *k != UNREACHED && *k > 1)
        else {
            return SmallVec::new();
        };
        let want = k.saturating_sub(1);
        let mut out: SmallVec<[NodeId; 4]> = self
            .transit_peers(p)
            .iter()
            .filter(|(_, q, _)| search.get(q.idx()) == Some(&want))
            .map(|(g, _, _)| *g)
            .collect();
        out.sort_unstable();
        out.dedup();
        out
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
        bfs.dist(p)
    }

    /// The pools other than the origins with a gateway located where a destination class's hop
    /// lists are dropped (the destination Site itself, and for node CIDRs the Sites
    /// network-peered with it), sorted. Costs the gateways of those Sites, not the pools.
    fn dropping_pools(&self, class: (Dest, bool), origins: &[PoolId]) -> SmallVec<[PoolId; 2]> {
        let Dest::Site(d) = class.0 else {
            return SmallVec::new();
        };
        let topo = self.topo;
        let mut out: SmallVec<[PoolId; 2]> = SmallVec::new();
        let mut add_located_in = |s: SiteId| {
            out.extend(
                topo.gateways_in(s)
                    .iter()
                    .filter_map(|g| topo.node(*g).pool())
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
    fn search_from(&self, o: PoolId, blocked: &[PoolId]) -> Arc<[u32]> {
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
        // A fresh stamp marks no pool peering as expanded yet (the array is cleared when the
        // stamps wrap around).
        *stamp = match stamp.checked_add(1) {
            Some(x) => x,
            None => {
                hub_seen.iter_mut().for_each(|x| *x = 0);
                1
            }
        };
        let stamp = *stamp;
        hub_seen.resize(graph.hub_count(), 0);
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
