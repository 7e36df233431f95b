//! A node plan's [`Footprint`]: the objects whose caps enter its values, which
//! [`super::Fingerprint::reaches`] and [`super::Delta::reaches`] hold a change against.

use super::ObjectKey;
use crate::plan::NodePlan;
use crate::solver::Solver;
use rustc_hash::FxHashSet;
use topology_core::model::{ObjRef, Topology};
use topology_core::vocab::Kind;

/// The objects whose caps enter any value of one node's plan (its links, routes, devices,
/// fabric and published values; component caps expanded to every object whose cap enters the
/// component), by kind and name digest.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Footprint {
    pub(super) objects: FxHashSet<ObjectKey>,
}

impl Footprint {
    /// The footprint of `plan`, resolved by `solver`.
    /// Costs a walk of the plan's values and, once per distinct explanation, of the objects it
    /// lists.
    ///
    /// ```
    /// use mtu_solver::{Kind, locality::Footprint};
    /// let resolver = mtu_solver::doc_cluster::resolver();
    /// let footprint = resolver.with_solver(|solver| {
    ///     let wa = solver.topo().find_node("wa").expect("wa");
    ///     let plan = solver.plan(wa);
    ///     Footprint::of(solver, &plan)
    /// });
    /// assert!(footprint.contains(Kind::SitePeering, "ab")); // its cap bounds wa's link
    /// ```
    pub fn of(solver: &Solver<'_>, plan: &NodePlan) -> Footprint {
        let topo = solver.topo();
        let values = plan
            .links
            .iter()
            .map(|l| l.mtu)
            .chain(plan.routes.iter().map(|r| r.mtu))
            .chain(plan.devices.iter().map(|d| d.mtu))
            .chain(std::iter::once(plan.fabric))
            .chain(plan.published.iter().flatten().map(|p| p.mtu));
        let mut seen = FxHashSet::default();
        let mut objects = FxHashSet::default();
        for v in values {
            if !seen.insert(v.expl) {
                continue;
            }
            for o in solver.expl.objects(v.expl, topo) {
                objects.insert(key_of(topo, o));
            }
        }
        Footprint { objects }
    }

    /// Whether the object of this kind and name is in the footprint.
    /// Costs a digest of the name and a look-up.
    ///
    /// ```
    /// use mtu_solver::{Kind, locality::Footprint};
    /// # let footprint = mtu_solver::doc_cluster::resolver().with_solver(|solver| {
    /// #     let plan = solver.plan(solver.topo().find_node("wa").expect("wa"));
    /// #     Footprint::of(solver, &plan)
    /// # });
    /// // wa's plan: SitePeering ab's cap bounds its link; Site a and Node wb set no cap.
    /// assert!(footprint.contains(Kind::SitePeering, "ab"));
    /// assert!(!footprint.contains(Kind::Site, "a") && !footprint.contains(Kind::Node, "wb"));
    /// ```
    pub fn contains(&self, kind: Kind, name: &str) -> bool {
        self.objects.contains(&ObjectKey::of(kind, name))
    }

    /// Objects in the footprint.
    /// Costs nothing.
    ///
    /// ```
    /// use mtu_solver::locality::Footprint;
    /// # let footprint = mtu_solver::doc_cluster::resolver().with_solver(|solver| {
    /// #     let plan = solver.plan(solver.topo().find_node("wa").expect("wa"));
    /// #     Footprint::of(solver, &plan)
    /// # });
    /// assert_eq!(footprint.len(), 1); // SitePeering ab: the only cap of the cluster
    /// ```
    pub fn len(&self) -> usize {
        self.objects.len()
    }

    /// Whether no cap enters the plan.
    /// Costs nothing.
    ///
    /// ```
    /// use mtu_solver::{Resolver, Settings, doc_cluster::TWO_SITES, load, locality::Footprint};
    /// let uncapped = TWO_SITES.replace("  tunnelMTU: 1400\n", ""); // no cap anywhere
    /// let decoded = load::from_sources([("cluster.yaml", uncapped)]);
    /// let resolver = Resolver::new(decoded, Settings::default());
    /// let footprint = resolver.with_solver(|solver| {
    ///     let plan = solver.plan(solver.topo().find_node("wa").expect("wa"));
    ///     Footprint::of(solver, &plan)
    /// });
    /// assert!(footprint.is_empty());
    /// ```
    pub fn is_empty(&self) -> bool {
        self.objects.is_empty()
    }
}

fn key_of(t: &Topology, o: ObjRef) -> ObjectKey {
    let (kind, name): (Kind, &str) = match o {
        ObjRef::Site(s) => (Kind::Site, &t.site(s).name),
        ObjRef::Pool(p) => (Kind::GatewayPool, &t.pool(p).name),
        ObjRef::SitePeering(r) => (Kind::SitePeering, &t.site_peering(r).name),
        ObjRef::Assignment(r) => (Kind::SiteGatewayPoolAssignment, &t.assignment(r).name),
        ObjRef::PoolPeering(r) => (Kind::GatewayPoolPeering, &t.pool_peering(r).name),
    };
    ObjectKey::of(kind, name)
}
