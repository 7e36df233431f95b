//! The topology's prefix table: every learned prefix (Sites' pod blocks and node CIDRs, pools'
//! routed CIDRs) with its origins, in output order. A function of the topology alone, built on
//! first use and kept with it, so every view and solver over one topology shares it.

use crate::ids::*;
use ipnet::IpNet;
use rustc_hash::FxHashMap;
use smallvec::SmallVec;

use super::Topology;

/// Route types, as `resolve` reports them (`NodePod`, `NodeAddress`, `NodeCidr`, `PodCidr`, ...);
/// serialized by that name ([`RouteType::as_str`]).
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize, serde::Deserialize,
)]
pub enum RouteType {
    /// A Site's pod block.
    PodCidr,
    /// A Site's node CIDR.
    NodeCidr,
    /// A pool's routed CIDR.
    RoutedCidr,
    /// A linked peer's own pod CIDR.
    NodePod,
    /// A host route to an InternalIP of a delivery peer reached across public addresses (the
    /// underlay cannot route a NAT'd worker's private address).
    NodeAddress,
}

impl RouteType {
    /// The output name.
    pub fn as_str(self) -> &'static str {
        match self {
            RouteType::PodCidr => "PodCidr",
            RouteType::NodeCidr => "NodeCidr",
            RouteType::RoutedCidr => "RoutedCidr",
            RouteType::NodePod => "NodePod",
            RouteType::NodeAddress => "NodeAddress",
        }
    }
}

impl std::fmt::Display for RouteType {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.pad(self.as_str())
    }
}

/// Where a learned prefix leads.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Dest {
    /// A Site's prefixes.
    Site(SiteId),
    /// A pool's routed CIDRs.
    Pool(PoolId),
}

/// One origin of a learned prefix.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Origin {
    /// Route type.
    pub ty: RouteType,
    /// Destination.
    pub dest: Dest,
}

impl Origin {
    /// The receive-filter class: `NodeCidr` routes are also dropped by network-peered Sites.
    pub(crate) fn class(self) -> (Dest, bool) {
        (self.dest, self.ty == RouteType::NodeCidr)
    }
}

/// The learned prefixes and their origins, in output order. A function of the topology alone,
/// built on first use and kept with it ([`Topology`]), so fresh solvers share it.
#[derive(Debug)]
pub(crate) struct PrefixTable {
    /// Prefixes in output order, each with its origins, sorted.
    pub(crate) entries: Vec<(IpNet, SmallVec<[Origin; 1]>)>,
    /// Entry by prefix, truncated: prefixes equal in `prefix_order` are those whose
    /// truncations are equal (the entries' prefixes are canonical: decoding truncates them).
    index: FxHashMap<IpNet, u32>,
}

impl PrefixTable {
    /// The origins of `prefix` (empty when no Site or pool advertises it).
    pub(crate) fn origins(&self, prefix: &IpNet) -> &[Origin] {
        self.position(prefix)
            .and_then(|i| self.entries.get(usize::try_from(i).ok()?))
            .map_or(&[], |(_, o)| o.as_slice())
    }

    /// The entry of `prefix` (equal in `prefix_order`), if it is advertised.
    pub(crate) fn position(&self, prefix: &IpNet) -> Option<u32> {
        self.index.get(&prefix.trunc()).copied()
    }

    /// The table of `topo`.
    fn build(topo: &Topology) -> PrefixTable {
        // Every Site's pod blocks, then every Site's node CIDRs: each list is usually
        // allocated in Site order, so the sort below meets a few long ascending runs.
        let mut all: Vec<(IpNet, Origin)> = Vec::new();
        let sites =
            || (topo.sites.iter().enumerate()).map(|(i, s)| (Dest::Site(SiteId::from_idx(i)), s));
        for (dest, s) in sites() {
            let ty = RouteType::PodCidr;
            all.extend(s.pod_blocks.iter().map(|b| (*b, Origin { ty, dest })));
        }
        for (dest, s) in sites() {
            let ty = RouteType::NodeCidr;
            all.extend(s.node_cidrs.iter().map(|c| (*c, Origin { ty, dest })));
        }
        for (i, p) in topo.pools.iter().enumerate() {
            let (ty, dest) = (RouteType::RoutedCidr, Dest::Pool(PoolId::from_idx(i)));
            all.extend(p.routed_cidrs.iter().map(|c| (*c, Origin { ty, dest })));
        }
        let mut entries: Vec<(IpNet, SmallVec<[Origin; 1]>)> = Vec::with_capacity(all.len());
        let mut last: Option<(IpNet, Origin)> = None;
        for i in table_order(&all) {
            let Some((p, o)) = all.get(i).copied() else {
                continue;
            };
            if last == Some((p, o)) {
                continue;
            }
            last = Some((p, o));
            match entries.last_mut() {
                Some((lp, os)) if *lp == p => os.push(o),
                _ => entries.push((p, smallvec::smallvec![o])),
            }
        }
        let mut index = FxHashMap::default();
        index.reserve(entries.len());
        for (i, (p, _)) in entries.iter().enumerate() {
            if let Ok(i) = u32::try_from(i) {
                index.entry(p.trunc()).or_insert(i);
            }
        }
        PrefixTable { entries, index }
    }
}

impl Topology {
    /// The prefix table, built on first use.
    pub(crate) fn prefix_table(&self) -> &PrefixTable {
        self.prefixes.get_or_init(|| PrefixTable::build(self))
    }

    /// Whether the prefix table has been built (for the complexity tests).
    pub(crate) fn prefix_table_built(&self) -> bool {
        self.prefixes.get().is_some()
    }
}

/// The indexes of `all` in the prefix table's order: by [`prefix_order`], then origin, then as
/// listed. Sorted on plain keys, each family apart: an IPv4 prefix's network address and length
/// in one `u64`, so tens of thousands of prefixes sort by comparing integers. Equal prefixes
/// (only overlapping input makes them) are ordered by origin afterwards.
fn table_order(all: &[(IpNet, Origin)]) -> Vec<usize> {
    let mut v4: Vec<(u64, usize)> = Vec::with_capacity(all.len());
    let mut v6: Vec<((u128, u8), usize)> = Vec::new();
    for (i, (p, _)) in all.iter().enumerate() {
        match p {
            IpNet::V4(x) => v4.push((
                u64::from(u32::from(x.network())) << 8 | u64::from(x.prefix_len()),
                i,
            )),
            IpNet::V6(x) => v6.push(((u128::from(x.network()), x.prefix_len()), i)),
        }
    }
    // Stable sorts, which merge the ascending runs they find: equal keys stay as listed.
    v4.sort_by_key(|(k, _)| *k);
    v6.sort_by_key(|(k, _)| *k);
    let mut order: Vec<usize> = Vec::with_capacity(all.len());
    let origin = |i: &usize| all.get(*i).map(|(_, o)| *o);
    for run in v4.chunk_by(|a, b| a.0 == b.0) {
        push_by_origin(&mut order, run.iter().map(|(_, i)| *i), origin);
    }
    for run in v6.chunk_by(|a, b| a.0 == b.0) {
        push_by_origin(&mut order, run.iter().map(|(_, i)| *i), origin);
    }
    order
}

/// Appends the indexes of one prefix, listed in order, by origin (stable: as listed within one).
fn push_by_origin(
    order: &mut Vec<usize>,
    run: impl ExactSizeIterator<Item = usize>,
    origin: impl Fn(&usize) -> Option<Origin>,
) {
    let start = order.len();
    let many = run.len() > 1;
    order.extend(run);
    if many && let Some(tail) = order.get_mut(start..) {
        tail.sort_by_key(|i| origin(i));
    }
}

/// Output order of prefixes: IPv4 before IPv6, then network address, then prefix length.
/// Inlined into the sorts and searches that compare with it, in other crates too.
#[inline]
pub fn prefix_order(a: &IpNet, b: &IpNet) -> std::cmp::Ordering {
    // Same order as (family, network address, prefix length), without building `IpAddr`s.
    match (a, b) {
        (IpNet::V4(x), IpNet::V4(y)) => {
            (u32::from(x.network()), x.prefix_len()).cmp(&(u32::from(y.network()), y.prefix_len()))
        }
        (IpNet::V6(x), IpNet::V6(y)) => {
            (x.network(), x.prefix_len()).cmp(&(y.network(), y.prefix_len()))
        }
        (IpNet::V4(_), IpNet::V6(_)) => std::cmp::Ordering::Less,
        (IpNet::V6(_), IpNet::V4(_)) => std::cmp::Ordering::Greater,
    }
}
