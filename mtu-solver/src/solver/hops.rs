//! A learned route hop by hop ([`Solver::route_hops`]): every hop of every selected forwarding
//! path (`mtu.md` §4), from the node to its next hops, between transit gateways, and into the
//! destination, each with its link, its configured caps, the published value of the gateway it
//! leaves (workers' routes) and the terms it adds to the route; the hops whose terms hold the
//! route's binding term are marked.
//!
//! A route's MTU is the minimum over its hops of the terms each adds: the first hop's link MTU,
//! every later hop's configured caps (`reach`), and on a worker the published value of every
//! gateway on the way (`pubPath`). Walking the same selections as `reach` and `pubPath`, the
//! hops meet the same interned terms, so the binding term is found on a hop as it is.

use super::Solver;
use super::published::{stale_finding, would_publish};
use crate::explain::{ExplId, Leaf};
use crate::plan::{Published, RouteKind, RoutePlan, Value};
use ipnet::IpNet;
use smallvec::SmallVec;
use topology_core::diag::Diagnostic;
use topology_core::ids::{NodeId, PoolId, SiteId};
use topology_core::net::{Dest, LinkKind, Origin};
use topology_core::vocab::Protocol;

/// Where a hop goes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum HopTo {
    /// A gateway: the route's next hop, or a transit gateway's.
    Node(NodeId),
    /// Into a destination Site, by the gateway's delivery links (no one link: any worker of
    /// the Site).
    Site(SiteId),
    /// Out of the overlay: a routed CIDR of the gateway's own pool.
    Routed(PoolId),
}

/// What the gateway a hop leaves has published for the route's prefix.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct PublishedTerm {
    /// The published term (its annotation is the term's origin).
    pub term: ExplId,
    /// What this input would have that gateway publish for the prefix (None: nothing).
    pub would: Option<Value>,
}

/// One hop of a route.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Hop {
    /// Where it starts: the node itself or a gateway.
    pub from: NodeId,
    /// Where it goes.
    pub to: HopTo,
    /// The link's kind (None out of the overlay).
    pub kind: Option<LinkKind>,
    /// The link's protocol (into a Site: the protocol a delivery link would take; None out of
    /// the overlay).
    pub protocol: Option<Protocol>,
    /// The link's MTU from `from`'s end (None into a Site or out of the overlay).
    pub link: Option<ExplId>,
    /// The configured caps of the hop (None: no cap applies).
    pub caps: Option<ExplId>,
    /// What `from` has published for the prefix, on a worker's route.
    pub published: Option<PublishedTerm>,
    /// The minimum of the terms this hop adds to the route (the first hop its link, the others
    /// their caps, and the published value of the gateway they leave); None when it adds none.
    pub limit: Option<ExplId>,
    /// The route's binding term is among the terms this hop adds.
    pub binds: bool,
}

/// A route's hops and the findings about what they read.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RouteHops {
    /// Hops, layer by layer from the node (first hops first), each once.
    pub hops: Vec<Hop>,
    /// `W-PUBLISHED-STALE` of the gateways whose published values the route reads.
    pub diagnostics: Vec<Diagnostic>,
}

/// The link of a hop between two gateways, whatever the prefix ([`Solver::route_hops`]).
#[derive(Clone, Copy, Debug)]
pub(super) struct HopLink {
    kind: LinkKind,
    protocol: Option<Protocol>,
    /// The link's MTU from the gateway the hop leaves.
    mtu: Option<ExplId>,
    caps: Option<ExplId>,
}

/// A gateway reached by the walk, with the origins of the route that reached it.
type Reached = (NodeId, SmallVec<[Origin; 1]>);

/// What a gateway's plan publishes, and the stale finding of its annotation.
pub(super) type WouldPublish = std::sync::Arc<(Vec<Published>, Option<Diagnostic>)>;

/// One gateway's step of a walk ([`Solver::route_hops`]): the hops leaving it and the
/// gateways they reach, and the stale finding of the value it published for the prefix. It
/// is the same for every route that reaches the gateway for that prefix by the same origins,
/// whichever node the route belongs to, so a solver makes it once.
#[derive(Debug, Default)]
pub(super) struct Step {
    /// The origins of the route that reached the gateway: the step is theirs.
    origins: SmallVec<[Origin; 1]>,
    hops: SmallVec<[Hop; 2]>,
    next: SmallVec<[Reached; 2]>,
    /// What the gateway would publish, when the route reads what it published: its stale
    /// finding goes with the route.
    would: Option<WouldPublish>,
}

/// Where a [`Step`] is kept: the gateway, the prefix, and whether the route is a worker's
/// (which reads published values).
pub(super) type StepKey = (NodeId, IpNet, bool);

impl Solver<'_> {
    /// The hops of `route`, a route of node `n`'s plan (none for a direct route). Plans the
    /// gateways whose published values the route reads, to say what they would publish. Each
    /// first hop (per next hop) and each gateway's step (per prefix) is made once per solver
    /// and shared by the routes that take it.
    /// Costs a walk of the route's forwarding paths, reusing the first hops and steps this
    /// solver already made.
    ///
    /// ```
    /// # use mtu_solver::{Resolver, Settings, doc_cluster::HUB_AND_SPOKE, load};
    /// # let hub = load::from_sources([("hub.yaml", HUB_AND_SPOKE)]);
    /// # let hub = Resolver::new(hub, Settings::default());
    /// use mtu_solver::{RouteKind, solver::hops::HopTo};
    /// hub.with_solver(|solver| {
    ///     let topo = solver.topo();
    ///     let [a1, h1, h2] = ["a1", "h1", "h2"].map(|n| topo.find_node(n).expect("a node"));
    ///     let plan = solver.plan(a1);
    ///     let to_b = plan.routes.iter().find(|r| r.kind == RouteKind::Gateway).expect("learned");
    ///     let hops = solver.route_hops(a1, to_b).hops;
    ///     let first: Vec<HopTo> = hops.iter().filter(|h| h.from == a1).map(|h| h.to).collect();
    ///     assert_eq!(first, [HopTo::Node(h1), HopTo::Node(h2)]);
    ///     assert!(hops.iter().any(|h| h.binds));
    /// });
    /// ```
    pub fn route_hops(&mut self, n: NodeId, route: &RoutePlan) -> RouteHops {
        if route.kind == RouteKind::Direct {
            return RouteHops::default();
        }
        let prefix = route.advertised;
        let worker = route.kind == RouteKind::Gateway;
        let Some(l) = self.net.learned_for(n, &prefix) else {
            return RouteHops::default();
        };
        let after = self.hops_after(&l.via, &l.origins, prefix, worker);
        let mut hops = Vec::with_capacity(after.hops.len().saturating_add(l.via.len()));
        for g in &l.via {
            hops.push(self.first_hop(n, *g));
        }
        hops.extend_from_slice(&after.hops);
        let bound = self.expl.get(route.mtu.expl).bound;
        for h in &mut hops {
            h.binds = self.binds(h, bound);
        }
        RouteHops {
            hops,
            diagnostics: after.diagnostics,
        }
    }

    /// Whether `hop` holds the route's binding term `bound` among the terms it adds.
    pub(crate) fn binds(&self, hop: &Hop, bound: ExplId) -> bool {
        hop.limit.is_some_and(|x| self.expl.has_leaf(x, bound))
    }

    /// The hops of a route after its first hops: the walk from its next hops `via`, reached by
    /// `origins`, layer by layer, each gateway once, none marked binding. The same for every
    /// route that leaves by these next hops for `prefix` (a worker's routes, `worker`, also
    /// read published values), whichever node it belongs to. Each gateway's step is made once
    /// per solver.
    pub(crate) fn hops_after(
        &mut self,
        via: &[NodeId],
        origins: &[Origin],
        prefix: IpNet,
        worker: bool,
    ) -> RouteHops {
        // Room for the hops of a route through a few pools, so the list is not grown hop by hop.
        let mut out = RouteHops {
            hops: Vec::with_capacity(16),
            diagnostics: Vec::new(),
        };
        let mut layer: Vec<Reached> = via
            .iter()
            .map(|g| (*g, SmallVec::from_slice(origins)))
            .collect();
        let mut next: Vec<Reached> = Vec::with_capacity(layer.len());
        let mut seen: SmallVec<[NodeId; 8]> = SmallVec::new();
        let max_depth = self.topo().pools.len();
        let mut depth = 0usize;
        while !layer.is_empty() && depth <= max_depth {
            for (g, origins) in layer.drain(..) {
                if seen.contains(&g) {
                    continue;
                }
                seen.push(g);
                let step = self.step((g, prefix, worker), origins);
                if let Some(d) = step.would.as_ref().and_then(|w| w.1.as_ref())
                    && !out.diagnostics.contains(d)
                {
                    out.diagnostics.push(d.clone());
                }
                out.hops.extend_from_slice(&step.hops);
                for (h, o) in &step.next {
                    next.push((*h, SmallVec::from_slice(o)));
                }
            }
            std::mem::swap(&mut layer, &mut next);
            depth = depth.saturating_add(1);
        }
        out
    }

    /// The hop from node `n` to its next hop `g`: its link MTU enters the route. Made once per
    /// solver.
    pub(crate) fn first_hop(&mut self, n: NodeId, g: NodeId) -> Hop {
        if let Some(h) = self.first_hops.get(&(n, g)) {
            return *h;
        }
        let link = self.net.link(n, g);
        let caps = link.as_ref().and_then(|l| self.link_caps(n, g, l.kind));
        let mtu = self.link_value(n, g);
        let hop = Hop {
            from: n,
            to: HopTo::Node(g),
            kind: link.as_ref().map(|l| l.kind),
            protocol: link.as_ref().map(|l| l.protocol),
            link: mtu,
            caps,
            published: None,
            limit: mtu,
            binds: false,
        };
        self.first_hops.insert((n, g), hop);
        hop
    }

    /// Gateway `g`'s step for the prefix, reached by `origins`: made once per solver (for the
    /// origins a prefix is first reached by; a route that reaches the gateway by others, which
    /// only a prefix of several Sites can, has its step made anew).
    fn step(&mut self, key: StepKey, origins: SmallVec<[Origin; 1]>) -> std::sync::Arc<Step> {
        if let Some(s) = self.steps.get(&key)
            && s.origins == origins
        {
            return s.clone();
        }
        let (g, prefix, worker) = key;
        let mut step = Step {
            origins,
            ..Step::default()
        };
        let published = if worker {
            self.published_term(g, prefix, &mut step.would)
        } else {
            None
        };
        self.hops_from(g, prefix, published, &mut step);
        let step = std::sync::Arc::new(step);
        self.steps.entry(key).or_insert_with(|| step.clone());
        step
    }

    /// The hops leaving gateway `g`: into what it delivers, else to its own next hops (added to
    /// the step's `next`). Their caps and `g`'s published value enter the route.
    fn hops_from(
        &mut self,
        g: NodeId,
        prefix: IpNet,
        published: Option<PublishedTerm>,
        step: &mut Step,
    ) {
        let topo = self.topo();
        let gn = topo.node(g);
        let Some(pool) = gn.pool() else {
            return;
        };
        let originated: SmallVec<[Origin; 1]> = step
            .origins
            .iter()
            .filter(|o| self.net.originates(g, o.dest))
            .copied()
            .collect();
        let mut push = |s: &mut Self, to, kind, protocol, link, caps: Option<ExplId>| {
            let terms: SmallVec<[ExplId; 2]> =
                caps.into_iter().chain(published.map(|p| p.term)).collect();
            let limit = s.expl.min(&terms);
            step.hops.push(Hop {
                from: g,
                to,
                kind,
                protocol,
                link,
                caps,
                published,
                limit,
                binds: false,
            });
        };
        if !originated.is_empty() {
            for o in originated {
                let mut kids: SmallVec<[ExplId; 8]> = SmallVec::new();
                self.delivery_terms(gn.site, pool, &[o], &mut kids);
                let caps = self.expl.min(&kids);
                match o.dest {
                    Dest::Site(d) => {
                        let (protocol, _) = self.hypothetical_delivery(g, d);
                        let kind = Some(LinkKind::Delivery);
                        push(self, HopTo::Site(d), kind, Some(protocol), None, caps);
                    }
                    Dest::Pool(p) => push(self, HopTo::Routed(p), None, None, None, caps),
                }
            }
            return;
        }
        let Some(lg) = self.net.learned_for(g, &prefix) else {
            return;
        };
        for h in &lg.via {
            let l = self.hop_link(g, *h);
            push(
                self,
                HopTo::Node(*h),
                Some(l.kind),
                l.protocol,
                l.mtu,
                l.caps,
            );
            step.next.push((*h, SmallVec::from_slice(&lg.origins)));
        }
    }

    /// The link of a hop from gateway `g` to gateway `h` (its kind, protocol, MTU and caps):
    /// the same whatever the prefix, so made once per solver.
    fn hop_link(&mut self, g: NodeId, h: NodeId) -> HopLink {
        if let Some(l) = self.hop_links.get(&(g, h)) {
            return *l;
        }
        let link = self.net.link(g, h);
        let kind = link.as_ref().map_or(LinkKind::Transit, |l| l.kind);
        let l = HopLink {
            kind,
            protocol: link.as_ref().map(|l| l.protocol),
            mtu: self.link_value(g, h),
            caps: self.link_caps(g, h, kind),
        };
        self.hop_links.insert((g, h), l);
        l
    }

    /// What gateway `g` has published for `prefix` (None: nothing), with what this input would
    /// have it publish (its plan, made once per solver), which is also put in `would` (with
    /// the gateway's `W-PUBLISHED-STALE` when its annotation differs).
    fn published_term(
        &mut self,
        g: NodeId,
        prefix: IpNet,
        would: &mut Option<WouldPublish>,
    ) -> Option<PublishedTerm> {
        let m = self.topo().node(g).published_for(&prefix)?;
        let term = self.expl.leaf(Leaf::Published { gateway: g, prefix }, m);
        let planned = match self.would_publish.get(&g) {
            Some(w) => w.clone(),
            None => {
                let plan = self.plan(g);
                let ps = plan.published.unwrap_or_default();
                let stale = stale_finding(self.topo(), g, &ps);
                let w: WouldPublish = std::sync::Arc::new((ps, stale));
                self.would_publish.insert(g, w.clone());
                w
            }
        };
        let mtu = would_publish(&planned.0, &prefix).map(|p| p.mtu);
        *would = Some(planned);
        Some(PublishedTerm { term, would: mtu })
    }
}

#[cfg(test)]
mod tests {
    use super::HopTo;
    use crate::plan::RouteKind;
    use crate::{Settings, Solver};
    use proptest::prelude::*;
    use test_utils::reference::topology_of;
    use test_utils::testkit::{arb_spec, proptest_config};
    use topology_core::diag::Code;
    use topology_core::ids::NodeId;
    use topology_core::model::Topology;

    fn node(topo: &Topology, name: &str) -> NodeId {
        topo.find_node(name)
            .unwrap_or_else(|e| panic!("{name}: {e}"))
    }

    /// Every learned route of every node: the minimum of the terms its hops add is its value,
    /// and some hop holds its binding term.
    fn hops_reproduce_routes(topo: &Topology) -> Result<(), String> {
        let mut solver = Solver::new(topo, Settings::default());
        for i in 0..topo.nodes.len() {
            let n = NodeId::from_idx(i);
            let plan = solver.plan(n);
            for rt in plan.routes.iter().filter(|r| r.kind != RouteKind::Direct) {
                let hops = solver.route_hops(n, rt).hops;
                let low = hops
                    .iter()
                    .filter_map(|h| h.limit)
                    .map(|x| solver.expl.value(x))
                    .min();
                let name = &topo.node(n).name;
                if low != Some(rt.mtu.mtu) {
                    return Err(format!(
                        "{name} {}: hops give {low:?}, route {}",
                        rt.destination, rt.mtu.mtu
                    ));
                }
                if !hops.iter().any(|h| h.binds) {
                    return Err(format!("{name} {}: no hop binds", rt.destination));
                }
            }
        }
        Ok(())
    }

    /// The shipped examples with gateways.
    const EXAMPLES: [(&str, &str); 5] = [
        (
            "03-hub-and-spoke",
            include_str!(concat!(
                env!("CARGO_MANIFEST_DIR"),
                "/../examples/03-hub-and-spoke/cluster.yaml"
            )),
        ),
        (
            "04-transit-chain",
            include_str!(concat!(
                env!("CARGO_MANIFEST_DIR"),
                "/../examples/04-transit-chain/cluster.yaml"
            )),
        ),
        (
            "05-network-only-peering",
            include_str!(concat!(
                env!("CARGO_MANIFEST_DIR"),
                "/../examples/05-network-only-peering/cluster.yaml"
            )),
        ),
        (
            "06-routed-local-published",
            include_str!(concat!(
                env!("CARGO_MANIFEST_DIR"),
                "/../examples/06-routed-local-published/cluster.yaml"
            )),
        ),
        (
            "07-nat-and-unmanaged-cni",
            include_str!(concat!(
                env!("CARGO_MANIFEST_DIR"),
                "/../examples/07-nat-and-unmanaged-cni/cluster.yaml"
            )),
        ),
    ];

    fn example(dir: &str) -> Topology {
        let Some((_, text)) = EXAMPLES.iter().find(|(d, _)| *d == dir) else {
            panic!("no example {dir}");
        };
        topology_of(text)
    }

    /// The transit chain binds `wa`'s route to C at the ga → gb hop, by pa-pb's cap alone.
    #[test]
    fn transit_chain_binds_at_the_pool_peering_hop() {
        let topo = example("04-transit-chain");
        let wa = node(&topo, "wa");
        let mut solver = Solver::new(&topo, Settings::default());
        let plan = solver.plan(wa);
        let Some(rt) = plan
            .routes
            .iter()
            .find(|r| r.destination.to_string() == "10.103.0.0/16")
        else {
            panic!("no route to C's pods");
        };
        let hops = solver.route_hops(wa, rt);
        let ends: Vec<(String, String, bool)> = hops
            .hops
            .iter()
            .map(|h| {
                let to = match h.to {
                    HopTo::Node(x) => topo.node(x).name.to_string(),
                    HopTo::Site(s) => format!("Site/{}", topo.site(s).name),
                    HopTo::Routed(p) => format!("GatewayPool/{}", topo.pool(p).name),
                };
                (topo.node(h.from).name.to_string(), to, h.binds)
            })
            .collect();
        let want = [
            ("wa", "ga", false),
            ("ga", "gb", true),
            ("gb", "gc", false),
            ("gc", "Site/C", false),
        ];
        let want: Vec<(String, String, bool)> = want
            .iter()
            .map(|(a, b, c)| (a.to_string(), b.to_string(), *c))
            .collect();
        assert_eq!(ends, want);
        let Some(binding) = hops.hops.iter().find(|h| h.binds) else {
            panic!("no binding hop");
        };
        let limit = binding.limit.unwrap_or_else(|| panic!("no limit"));
        let bound = solver.expl.get(limit).bound;
        assert_eq!(
            solver.expl.term_name(bound, &topo),
            "GatewayPoolPeering/pa-pb spec.tunnelMTU"
        );
        assert!(hops.diagnostics.is_empty());
    }

    /// A published value binds `wa`'s route; the annotation (1350) is not what `gb` would
    /// publish by this input (1400), which the hop says and the gateway's plan reports.
    #[test]
    fn published_hop_says_what_the_gateway_would_publish() {
        let topo = example("06-routed-local-published");
        let wa = node(&topo, "wa");
        let gb = node(&topo, "gb");
        let mut solver = Solver::new(&topo, Settings::default());
        let plan = solver.plan(wa);
        let Some(rt) = plan
            .routes
            .iter()
            .find(|r| r.advertised.to_string() == "10.103.0.0/16")
        else {
            panic!("no route to C's pods");
        };
        let hops = solver.route_hops(wa, rt);
        let binding: Vec<_> = hops.hops.iter().filter(|h| h.binds).collect();
        assert_eq!(binding.len(), 1, "{:?}", hops.hops);
        let Some(p) = binding.first().and_then(|h| h.published) else {
            panic!("the binding hop reads no published value");
        };
        assert_eq!(binding.first().map(|h| h.from), Some(gb));
        assert_eq!(solver.expl.value(p.term).get(), 1350);
        assert_eq!(p.would.map(|w| w.mtu.get()), Some(1400));
        let codes: Vec<Code> = hops.diagnostics.iter().map(|d| d.code).collect();
        assert_eq!(codes, [Code::PublishedStale]);
        let gb_plan = solver.plan(gb);
        assert!(
            gb_plan
                .diagnostics
                .iter()
                .any(|d| d.code == Code::PublishedStale && d.object == "GatewayPoolNode/gb")
        );
    }

    /// `has_leaf` answers what `leaves` lists, for every pair of terms a resolve of the
    /// examples interned.
    #[test]
    fn has_leaf_agrees_with_leaves() {
        use crate::explain::ExplId;
        for (dir, _) in EXAMPLES {
            let topo = example(dir);
            let mut solver = Solver::new(&topo, Settings::default());
            drop(solver.plan_all());
            let ids: Vec<ExplId> = (0..solver.expl.len())
                .filter_map(|i| u32::try_from(i).ok().map(ExplId))
                .collect();
            assert!(ids.len() > 10, "{dir}: {} terms", ids.len());
            for x in &ids {
                let leaves = solver.expl.leaves(*x);
                for l in &ids {
                    let want = x == l || leaves.contains(l);
                    assert_eq!(solver.expl.has_leaf(*x, *l), want, "{dir}: {x:?} {l:?}");
                }
            }
        }
    }

    #[test]
    fn hops_reproduce_every_route_of_the_examples() {
        for (dir, _) in EXAMPLES {
            let topo = example(dir);
            if let Err(e) = hops_reproduce_routes(&topo) {
                panic!("{dir}: {e}");
            }
        }
    }

    proptest! {
        #![proptest_config(proptest_config(
            150,
            concat!(env!("CARGO_MANIFEST_DIR"), "/../proptest-regressions/route_hops.txt")
        ))]

        /// On random topologies, the hops of every learned route give its value and name its
        /// binding term.
        #[test]
        fn hops_reproduce_random_routes(spec in arb_spec()) {
            let topo = topology_of(&spec.to_yaml());
            prop_assert_eq!(hops_reproduce_routes(&topo), Ok(()));
        }
    }
}
