//! The JSON/YAML shape of a route's hops in `explain` ([`crate::solver::hops`]): each hop
//! with its link, caps, published value and the terms it adds to the route, rendered once for
//! the binary's `explain` and the library's [`crate::resolver::Resolver::explain`].

use super::{Renderer, TermList, TermOut};
use crate::explain::{ExplId, Kind};
use crate::solver::Solver;
use crate::solver::hops::{Hop, HopTo, PublishedTerm};
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use smallvec::SmallVec;
use std::sync::Arc;
use topology_core::net::LinkKind;
use topology_core::vocab::Protocol;

/// What a hop crosses: a link of a kind, or the way out of the overlay to a pool's routed CIDR.
/// Serialized as the link kind's name (`uplink`, `transit`, ...) or `routed`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum HopKind {
    /// A link of this kind.
    Link(LinkKind),
    /// Out of the overlay (a routed CIDR of a pool): no one link.
    Routed,
}

impl HopKind {
    /// The output name: the link kind's ([`LinkKind::as_str`]) or `routed`.
    /// Costs a match.
    ///
    /// ```
    /// use mtu_solver::{HopKind, topology_core::net::LinkKind};
    /// assert_eq!(HopKind::Routed.as_str(), "routed");
    /// assert_eq!(HopKind::Link(LinkKind::Uplink).as_str(), LinkKind::Uplink.as_str());
    /// ```
    pub fn as_str(self) -> &'static str {
        match self {
            HopKind::Link(k) => k.as_str(),
            HopKind::Routed => "routed",
        }
    }
}

impl std::fmt::Display for HopKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.pad(self.as_str())
    }
}

impl Serialize for HopKind {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for HopKind {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<HopKind, D::Error> {
        let text = String::deserialize(deserializer)?;
        if text == "routed" {
            return Ok(HopKind::Routed);
        }
        let kind =
            LinkKind::deserialize(serde::de::value::StrDeserializer::<D::Error>::new(&text))?;
        Ok(HopKind::Link(kind))
    }
}

/// Where a hop goes. Written as the gateway's name, `Site/NAME` or `GatewayPool/NAME` (a node's
/// name has no `/`, so each reads back as what it was).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum HopEnd {
    /// A gateway: the route's next hop, or a transit gateway's.
    Node(Arc<str>),
    /// Into a destination Site, by the gateway's delivery links (any worker of the Site).
    Site(Arc<str>),
    /// Out of the overlay: a routed CIDR of this pool.
    Pool(Arc<str>),
}

impl HopEnd {
    /// The name of the gateway, Site or pool.
    ///
    /// ```
    /// use mtu_solver::report::hops::HopEnd;
    /// assert_eq!(HopEnd::Site("c".into()).name(), "c");
    /// ```
    pub fn name(&self) -> &str {
        match self {
            HopEnd::Node(n) | HopEnd::Site(n) | HopEnd::Pool(n) => n,
        }
    }
}

impl std::fmt::Display for HopEnd {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            HopEnd::Node(n) => f.write_str(n),
            HopEnd::Site(n) => write!(f, "Site/{n}"),
            HopEnd::Pool(n) => write!(f, "GatewayPool/{n}"),
        }
    }
}

impl Serialize for HopEnd {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

impl std::str::FromStr for HopEnd {
    type Err = std::convert::Infallible;

    /// As written: `Site/NAME`, `GatewayPool/NAME`, else a gateway's name.
    ///
    /// ```
    /// use mtu_solver::HopEnd;
    /// assert_eq!("Site/c".parse(), Ok(HopEnd::Site("c".into())));
    /// assert_eq!("ga".parse(), Ok(HopEnd::Node("ga".into())));
    /// ```
    fn from_str(text: &str) -> Result<HopEnd, Self::Err> {
        Ok(if let Some(site) = text.strip_prefix("Site/") {
            HopEnd::Site(site.into())
        } else if let Some(pool) = text.strip_prefix("GatewayPool/") {
            HopEnd::Pool(pool.into())
        } else {
            HopEnd::Node(text.into())
        })
    }
}

impl<'de> Deserialize<'de> for HopEnd {
    /// From its text, as [`std::str::FromStr`] reads it.
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<HopEnd, D::Error> {
        let text = String::deserialize(deserializer)?;
        text.parse().map_err(serde::de::Error::custom)
    }
}

/// How many minimums deep [`Renderer::located_terms`] merges its children's lists (deeper, it
/// collects the leaves): a route's terms are a few minimums deep, however long its path.
const MERGED_DEPTH: usize = 32;

/// A value's located terms and their IDs, in term order.
#[derive(Clone, Debug, Default)]
pub(super) struct LocatedLeaves {
    ids: Arc<[ExplId]>,
    terms: TermList,
}

/// One hop of a route.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct HopOut {
    /// The node the hop leaves (the explained node, or a gateway).
    pub from: Arc<str>,
    /// Where it goes: a gateway, a destination Site (by delivery) or out of the overlay by a
    /// pool's routed CIDR; written as the gateway's name, `Site/NAME` or `GatewayPool/NAME`.
    pub to: HopEnd,
    /// The link's kind (`uplink`, `transit`, `delivery`, ...), `routed` out of the overlay.
    pub kind: HopKind,
    /// The link's protocol (into a Site: the one a delivery link takes); null out of the
    /// overlay.
    pub protocol: Option<Protocol>,
    /// The link's MTU from `from`'s end; null into a Site or out of the overlay (no one link).
    pub mtu: Option<u32>,
    /// The term that binds that link MTU.
    pub link_bound: Option<Arc<TermOut>>,
    /// The configured caps of the hop (lowest first; empty when none applies).
    pub caps: TermList,
    /// What the gateway the hop leaves has published for the route's prefix (workers' routes).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub published: Option<PublishedOut>,
    /// The lowest of the terms the hop adds to the route (the first hop: its link MTU; later
    /// hops: their caps and the published value); null when it adds none.
    pub limit: Option<u32>,
    /// The term that binds `limit`.
    pub bound: Option<Arc<TermOut>>,
    /// The route's binding term is among the terms this hop adds.
    pub binds: bool,
}

/// A gateway's published value on a hop.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct PublishedOut {
    /// The published term (`object` the GatewayPoolNode, `field` its annotation, `location`
    /// where it was written).
    pub term: Arc<TermOut>,
    /// What this input would have the gateway publish for the prefix (null: nothing).
    pub would_publish: Option<u32>,
    /// The two differ (`W-PUBLISHED-STALE`).
    pub stale: bool,
}

impl Renderer<'_, '_> {
    /// A term with where it was written (`explain` output), worded and located once per
    /// renderer (and the caches it resumes).
    pub(crate) fn located_term(&self, id: ExplId) -> Arc<TermOut> {
        if let Some(t) = self.located.borrow().get(&id) {
            return t.clone();
        }
        let solver = self.solver;
        let mut t = self.term(id);
        t.location = solver.expl.term_location(id, solver.topo());
        let t = Arc::new(t);
        self.located.borrow_mut().insert(id, t.clone());
        t
    }

    /// Every term of `id` ([`crate::explain::Explanations::leaves`]), located, listed once per
    /// renderer: the routes of one class share theirs.
    pub(crate) fn located_terms(&self, id: ExplId) -> TermList {
        self.located_leaves(id, 0).terms
    }

    /// [`Renderer::located_terms`] with the terms' IDs. A minimum's terms are the union of its
    /// children's: a route's are merged from the lists of the parts it shares with others
    /// (its first hop, the gateways after it), each listed once. Below [`MERGED_DEPTH`]
    /// minimums, the leaves are collected instead.
    fn located_leaves(&self, id: ExplId, depth: usize) -> LocatedLeaves {
        if let Some(t) = self.located_lists.borrow().get(&id) {
            return t.clone();
        }
        let expl = &self.solver.expl;
        let merged = match &expl.get(id).kind {
            Kind::Min(kids) if depth < MERGED_DEPTH => {
                let lists: SmallVec<[LocatedLeaves; 4]> = kids
                    .iter()
                    .map(|k| self.located_leaves(*k, depth.saturating_add(1)))
                    .collect();
                Some(self.merged(&lists))
            }
            _ => None,
        };
        let leaves = merged.unwrap_or_else(|| {
            let ids = expl.leaves(id);
            let terms = ids.iter().map(|t| self.located_term(*t)).collect();
            LocatedLeaves {
                ids: ids.into(),
                terms,
            }
        });
        self.located_lists.borrow_mut().insert(id, leaves.clone());
        leaves
    }

    /// The union of term lists, each in term order, in term order.
    fn merged(&self, lists: &[LocatedLeaves]) -> LocatedLeaves {
        let expl = &self.solver.expl;
        let len = lists.iter().map(|l| l.ids.len()).sum();
        let mut ids: Vec<ExplId> = Vec::with_capacity(len);
        let mut terms: Vec<Arc<TermOut>> = Vec::with_capacity(len);
        let mut at: SmallVec<[usize; 4]> = lists.iter().map(|_| 0).collect();
        loop {
            let mut best: Option<(usize, ExplId)> = None;
            for (i, l) in lists.iter().enumerate() {
                let Some(id) = at.get(i).and_then(|a| l.ids.get(*a)) else {
                    continue;
                };
                if best.is_none_or(|(_, b)| expl.term_order(*id, b).is_lt()) {
                    best = Some((i, *id));
                }
            }
            let Some((i, id)) = best else {
                break;
            };
            if ids.last() != Some(&id)
                && let Some(t) = lists
                    .get(i)
                    .and_then(|l| at.get(i).and_then(|a| l.terms.get(*a)))
            {
                ids.push(id);
                terms.push(t.clone());
            }
            if let Some(a) = at.get_mut(i) {
                *a = a.saturating_add(1);
            }
        }
        LocatedLeaves {
            ids: ids.into(),
            terms: TermList(terms.into()),
        }
    }

    /// A route's hops, each rendered once per renderer (and the caches it resumes): routes
    /// through the same gateways share them.
    /// Costs a rendering of each hop this renderer has not rendered yet; a look-up for the others.
    ///
    /// ```
    /// use mtu_solver::{Explanations, HopEnd, Resolver, RouteKind, Settings, load};
    /// use mtu_solver::report::Renderer;
    /// let hub = load::from_sources([("hub.yaml", mtu_solver::doc_cluster::HUB_AND_SPOKE)]);
    /// let (to, shared) = Resolver::new(hub, Settings::default()).with_solver(|solver| {
    ///     let a1 = solver.topo().find_node("a1").expect("a1");
    ///     let plan = solver.plan(a1);
    ///     let route = plan.routes.iter().find(|r| r.kind == RouteKind::Gateway).expect("learned");
    ///     let hops = solver.route_hops(a1, route).hops;
    ///     let renderer = Renderer::new(solver, Explanations::Full);
    ///     let out = renderer.hops(&hops);
    ///     let to: Vec<HopEnd> = out.iter().map(|h| h.to.clone()).collect();
    ///     (to, std::sync::Arc::ptr_eq(&out[0], &renderer.hops(&hops)[0]))
    /// });
    /// assert_eq!(to[..2], [HopEnd::Node("h1".into()), HopEnd::Node("h2".into())]); // first hops
    /// assert!(shared); // rendered once per renderer
    /// ```
    pub fn hops(&self, hops: &[Hop]) -> Vec<Arc<HopOut>> {
        hops.iter()
            .map(|h| {
                if let Some(o) = self.rendered_hops.borrow().get(h) {
                    return o.clone();
                }
                let o = Arc::new(self.hop(h));
                self.rendered_hops.borrow_mut().insert(*h, o.clone());
                o
            })
            .collect()
    }

    fn hop(&self, h: &Hop) -> HopOut {
        let solver: &Solver<'_> = self.solver;
        let topo = solver.topo();
        let to = match h.to {
            HopTo::Node(n) => HopEnd::Node(topo.node(n).name.clone()),
            HopTo::Site(s) => HopEnd::Site(topo.site(s).name.clone()),
            HopTo::Routed(p) => HopEnd::Pool(topo.pool(p).name.clone()),
        };
        let bound = |id: ExplId| self.located_term(solver.expl.get(id).bound);
        HopOut {
            from: topo.node(h.from).name.clone(),
            to,
            kind: h.kind.map_or(HopKind::Routed, HopKind::Link),
            protocol: h.protocol,
            mtu: h.link.map(|l| solver.expl.value(l).get()),
            link_bound: h.link.map(bound),
            caps: h.caps.map(|c| self.located_terms(c)).unwrap_or_default(),
            published: h.published.map(|p| self.published(p)),
            limit: h.limit.map(|l| solver.expl.value(l).get()),
            bound: h.limit.map(bound),
            binds: h.binds,
        }
    }

    fn published(&self, p: PublishedTerm) -> PublishedOut {
        let value = self.solver.expl.value(p.term);
        let would = p.would.map(|w| w.mtu);
        PublishedOut {
            term: self.located_term(p.term),
            would_publish: would.map(|w| w.get()),
            stale: would != Some(value),
        }
    }
}
