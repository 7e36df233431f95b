//! The production [`Solver`] against the naive reference (invariant 7 of `spec/mtu.md` §10), and
//! property tests for invariants 1 (safety), 2 (symmetry), 5 (determinism) and 8
//! (explanations), each over 1,000 random topologies from the test kit.

use ipnet::IpNet;
use mtu_solver::explain::Kind;
use mtu_solver::report::{self, Renderer};
use mtu_solver::{DeviceRef, NodePlan, RouteKind, Settings, Solver};
use proptest::prelude::*;
use std::collections::BTreeMap;
use test_utils::reference::{
    self, DeviceKey, RefNode, RefRouteKind, RefSettings, Reference, topology_of,
};
use test_utils::testkit::{TopoSpec, arb_spec, join_documents, proptest_config};
use topology_core::decode::decode;
use topology_core::diag::{Diagnostic, sort_diagnostics};
use topology_core::ids::NodeId;
use topology_core::model::Topology;
use topology_core::net::{LinkKind, LinkSettings, RouteType};
use topology_core::vocab::Protocol;

macro_rules! regressions {
    ($name:literal) => {
        concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../proptest-regressions/",
            $name,
            ".txt"
        )
    };
}

/// Settings beyond the topology, generated alongside it.
#[derive(Clone, Debug)]
struct Knobs {
    default_underlay: u32,
    cfg_mtu: u32,
    /// (Site index, node index, value): per-node `mtu` overrides (names that do not exist are
    /// simply unused).
    cfg_overrides: Vec<(usize, usize, u32)>,
    ipv6_outer: bool,
}

fn arb_knobs() -> impl Strategy<Value = Knobs> {
    (
        prop::sample::select(vec![1500u32, 1500, 1500, 1280, 9000]),
        prop::sample::select(vec![0u32, 0, 0, 0, 1400, 1450, 8000]),
        prop::collection::vec(
            (
                0usize..5,
                0usize..4,
                prop::sample::select(vec![0u32, 1300, 1420, 9000]),
            ),
            0..=2,
        ),
        prop::bool::weighted(0.2),
    )
        .prop_map(
            |(default_underlay, cfg_mtu, cfg_overrides, ipv6_outer)| Knobs {
                default_underlay,
                cfg_mtu,
                cfg_overrides,
                ipv6_outer,
            },
        )
}

impl Knobs {
    fn overrides(&self) -> BTreeMap<String, u32> {
        self.cfg_overrides
            .iter()
            .map(|(s, j, v)| (format!("n{s}-{j}"), *v))
            .collect()
    }
    fn settings(&self) -> Settings {
        Settings {
            default_underlay: self.default_underlay,
            cfg_mtu: self.cfg_mtu,
            cfg_overrides: self.overrides(),
            link: LinkSettings {
                ipv6_outer: self.ipv6_outer,
                ..LinkSettings::default()
            },
            ..Settings::default()
        }
    }
    fn ref_settings(&self) -> RefSettings {
        RefSettings {
            default_underlay: self.default_underlay,
            cfg_all: self.cfg_mtu,
            cfg: self.overrides(),
            ipv6_outer: self.ipv6_outer,
            ..RefSettings::default()
        }
    }
    fn cfg(&self, name: &str) -> u32 {
        self.overrides().get(name).copied().unwrap_or(self.cfg_mtu)
    }
}

fn name(t: &Topology, n: NodeId) -> String {
    t.node(n).name.to_string()
}

fn ref_kind(k: RouteKind) -> RefRouteKind {
    match k {
        RouteKind::Direct => RefRouteKind::Direct,
        RouteKind::Gateway => RefRouteKind::Gateway,
        RouteKind::Transit => RefRouteKind::Transit,
    }
}

type LinkRow = (String, LinkKind, Protocol, u32);
type RouteRow = (IpNet, RouteType, RefRouteKind, u32, Vec<String>, u32);

fn prod_rows(t: &Topology, p: &NodePlan) -> (Vec<LinkRow>, Vec<RouteRow>) {
    let links = p
        .links
        .iter()
        .map(|l| (name(t, l.peer), l.kind, l.protocol, l.mtu.mtu.get()))
        .collect();
    let routes = p
        .routes
        .iter()
        .map(|r| {
            (
                r.destination,
                r.ty,
                ref_kind(r.kind),
                r.distance,
                r.via.iter().map(|v| name(t, *v)).collect(),
                r.mtu.mtu.get(),
            )
        })
        .collect();
    (links, routes)
}

fn ref_rows(t: &Topology, r: &RefNode) -> (Vec<LinkRow>, Vec<RouteRow>) {
    let mut links: Vec<LinkRow> = r
        .links
        .iter()
        .map(|l| (name(t, l.peer), l.kind, l.protocol, l.mtu))
        .collect();
    links.sort_by(|a, b| a.0.cmp(&b.0));
    let routes = r
        .routes
        .iter()
        .map(|x| {
            (
                x.destination,
                x.ty,
                x.kind,
                x.distance,
                x.via.iter().map(|v| name(t, *v)).collect(),
                x.mtu,
            )
        })
        .collect();
    (links, routes)
}

fn prod_devices(p: &NodePlan) -> BTreeMap<DeviceKey, u32> {
    let mut out = BTreeMap::new();
    for d in &p.devices {
        let k = match &d.device {
            DeviceRef::Shared(_) => DeviceKey::Shared(d.protocol),
            DeviceRef::PerPeer { peer, .. } => DeviceKey::PerPeer(*peer),
            DeviceRef::Underlay => continue,
        };
        out.insert(k, d.mtu.mtu.get());
    }
    out
}

/// Resolves every node with the production solver and with the reference.
fn both(yaml: &str, knobs: &Knobs) -> (Topology, Reference) {
    let t = topology_of(yaml);
    let r = reference::compute(&t, &knobs.ref_settings());
    (t, r)
}

fn plans(t: &Topology, knobs: &Knobs) -> Vec<NodePlan> {
    Solver::new(t, knobs.settings()).plan_all()
}

fn oracle(yaml: &str, knobs: &Knobs) -> Result<(), String> {
    let (t, r) = both(yaml, knobs);
    let ps = plans(&t, knobs);
    for (p, rn) in ps.iter().zip(&r.nodes) {
        let n = name(&t, p.node);
        let (pl, pr) = prod_rows(&t, p);
        let (rl, rr) = ref_rows(&t, rn);
        if pl != rl {
            return Err(format!(
                "node {n}: links\nproduction: {pl:?}\nreference:  {rl:?}"
            ));
        }
        if pr != rr {
            return Err(format!(
                "node {n}: routes\nproduction: {pr:#?}\nreference:  {rr:#?}"
            ));
        }
        let (pd, rd) = (prod_devices(p), rn.devices.clone());
        if pd != rd {
            return Err(format!(
                "node {n}: devices\nproduction: {pd:?}\nreference:  {rd:?}"
            ));
        }
        if p.fabric.mtu.get() != rn.fabric {
            return Err(format!(
                "node {n}: fabric production {} reference {}",
                p.fabric.mtu.get(),
                rn.fabric
            ));
        }
        let pp: Option<Vec<(IpNet, u32)>> = p
            .published
            .as_ref()
            .map(|v| v.iter().map(|x| (x.destination, x.mtu.mtu.get())).collect());
        if pp != rn.published {
            return Err(format!(
                "node {n}: published\nproduction: {pp:?}\nreference:  {:?}",
                rn.published
            ));
        }
    }
    Ok(())
}

/// Invariant 1: safety, checked against the caps the reference finds on every selected path.
fn safety(yaml: &str, knobs: &Knobs) -> Result<(), String> {
    let (t, r) = both(yaml, knobs);
    let ps = plans(&t, knobs);
    for (p, rn) in ps.iter().zip(&r.nodes) {
        let n = name(&t, p.node);
        let cfg = knobs.cfg(&n);
        let cfg = if cfg > 0 { cfg } else { u32::MAX };
        for l in &p.links {
            let Some(rl) = rn.links.iter().find(|x| x.peer == l.peer) else {
                return Err(format!(
                    "node {n}: link to {} unknown to the reference",
                    name(&t, l.peer)
                ));
            };
            let m = l.mtu.mtu.get();
            if m > cfg || m > rl.auto || rl.caps.iter().any(|c| m > *c) {
                return Err(format!(
                    "node {n}: link to {} mtu {m} above cfg {cfg}, auto {} or caps {:?}",
                    name(&t, l.peer),
                    rl.auto,
                    rl.caps
                ));
            }
            // The fabric is bounded by the link without its probed path MTU (`mtu.md` §5, D13):
            // a path MTU bounds the routes over the link, which the kernel enforces per route.
            if p.fabric.mtu.get() > rl.unpathed {
                return Err(format!(
                    "node {n}: fabric {} above link MTU {} (without its path MTU)",
                    p.fabric.mtu.get(),
                    rl.unpathed
                ));
            }
            if p.fabric.mtu.get() > m && t.path_mtu(p.node, l.peer).is_none() {
                return Err(format!(
                    "node {n}: fabric {} above link MTU {m}",
                    p.fabric.mtu.get()
                ));
            }
        }
        for route in &p.routes {
            let m = route.mtu.mtu.get();
            if m > cfg {
                return Err(format!(
                    "node {n}: route {} mtu {m} above cfg {cfg}",
                    route.destination
                ));
            }
            for v in &route.via {
                let Some(rl) = rn.links.iter().find(|x| x.peer == *v) else {
                    return Err(format!(
                        "node {n}: route {} via unlinked {}",
                        route.destination,
                        name(&t, *v)
                    ));
                };
                if m > rl.auto {
                    return Err(format!(
                        "node {n}: route {} mtu {m} above the auto MTU {} of its first link",
                        route.destination, rl.auto
                    ));
                }
            }
            if let Some(rr) = rn
                .routes
                .iter()
                .find(|x| x.destination == route.destination && x.kind == ref_kind(route.kind))
            {
                if let Some(c) = rr.path_caps.iter().find(|c| m > **c) {
                    return Err(format!(
                        "node {n}: route {} mtu {m} above cap {c} on its paths {:?}",
                        route.destination, rr.paths
                    ));
                }
                if let Some(c) = rr.path_published.iter().find(|c| m > **c) {
                    return Err(format!(
                        "node {n}: route {} mtu {m} above published {c} on its paths {:?}",
                        route.destination, rr.paths
                    ));
                }
            }
            for nh in route.next_hops.iter() {
                if nh.device == DeviceRef::Underlay {
                    continue;
                }
                let Some(d) = p.devices.iter().find(|d| d.device == nh.device) else {
                    return Err(format!(
                        "node {n}: route {} over a missing device {:?}",
                        route.destination, nh.device
                    ));
                };
                if m > d.mtu.mtu.get() {
                    return Err(format!(
                        "node {n}: route {} mtu {m} above its device {:?} mtu {}",
                        route.destination,
                        d.device,
                        d.mtu.mtu.get()
                    ));
                }
            }
        }
    }
    Ok(())
}

/// Invariant 2: both ends of a link compute the same MTU when their `cfg` is equal (and links
/// are symmetric, with the same protocol).
fn symmetry(yaml: &str, knobs: &Knobs) -> Result<(), String> {
    let t = topology_of(yaml);
    let ps = plans(&t, knobs);
    for p in &ps {
        for l in &p.links {
            let q = &ps[l.peer.idx()];
            let Some(back) = q.link(p.node) else {
                return Err(format!(
                    "link {}→{} has no reverse",
                    name(&t, p.node),
                    name(&t, l.peer)
                ));
            };
            let reverse = match l.kind {
                LinkKind::Uplink => LinkKind::Delivery,
                LinkKind::Delivery => LinkKind::Uplink,
                k => k,
            };
            if back.kind != reverse || back.protocol != l.protocol {
                return Err(format!(
                    "link {}–{}: {:?}/{} one way, {:?}/{} back",
                    name(&t, p.node),
                    name(&t, l.peer),
                    l.kind,
                    l.protocol,
                    back.kind,
                    back.protocol
                ));
            }
            if knobs.cfg(&name(&t, p.node)) == knobs.cfg(&name(&t, l.peer))
                && back.mtu.mtu != l.mtu.mtu
            {
                return Err(format!(
                    "link {}–{}: {} one way, {} back",
                    name(&t, p.node),
                    name(&t, l.peer),
                    l.mtu.mtu,
                    back.mtu.mtu
                ));
            }
        }
    }
    Ok(())
}

/// The `resolve` JSON (full explanations) of every node, diagnostics' `source` removed.
/// `full`: render every term of every explanation (`--explain full`), not only the bound one.
fn resolve_json(
    sources: &[(String, String)],
    knobs: &Knobs,
    full: bool,
    strip_locations: bool,
) -> String {
    let d = decode(sources.iter().map(|(n, b)| (n.as_str(), b.as_bytes())));
    let t = Topology::build(d.objects.iter(), d.diagnostics.iter().cloned());
    let mut solver = Solver::new(&t, knobs.settings());
    let ps = solver.plan_all();
    let mut diags: Vec<Diagnostic> = t.diagnostics.clone();
    for p in &ps {
        diags.extend(p.diagnostics.iter().cloned());
    }
    sort_diagnostics(&mut diags);
    let level = if full {
        mtu_solver::Explanations::Full
    } else {
        mtu_solver::Explanations::Bound
    };
    let mut r = Renderer::new(&solver, level);
    let mut doc = report::resolve_out(&t, &mut r, &ps, &diags);
    for d in &mut doc.diagnostics {
        d.source = None;
    }
    if !strip_locations {
        return serde_json::to_string(&doc).expect("serializable");
    }
    let mut v = serde_json::to_value(&doc).expect("serializable");
    if let Some(nodes) = v.get_mut("nodes") {
        strip(nodes);
    }
    serde_json::to_string(&v).expect("serializable")
}

/// Removes a trailing ` at <source>:<line>` from every explanation `source` text.
fn strip(v: &mut serde_json::Value) {
    match v {
        serde_json::Value::Object(o) => {
            for (k, x) in o.iter_mut() {
                if k == "source"
                    && let serde_json::Value::String(s) = x
                    && let Some(i) = s.rfind(" at ")
                    && s[i..]
                        .rsplit(':')
                        .next()
                        .is_some_and(|l| l.chars().all(|c| c.is_ascii_digit()))
                {
                    s.truncate(i);
                } else {
                    strip(x);
                }
            }
        }
        serde_json::Value::Array(a) => a.iter_mut().for_each(strip),
        _ => {}
    }
}

fn compare_json(base: &str, other: &str) -> Option<String> {
    if base == other {
        return None;
    }
    let pretty = |s: &str| {
        serde_json::from_str::<serde_json::Value>(s)
            .and_then(|v| serde_json::to_string_pretty(&v))
            .unwrap_or_else(|_| s.to_string())
    };
    let (base, other) = (&pretty(base), &pretty(other));
    let i = first_line(base, other);
    let (a, b) = (
        base.lines().nth(i).unwrap_or(""),
        other.lines().nth(i).unwrap_or(""),
    );
    let start = i.saturating_sub(30);
    let ctx: Vec<&str> = base.lines().skip(start).take(i + 1 - start).collect();
    Some(format!(
        "line {}: {a:?} vs {b:?}\n--- context (base) ---\n{}",
        i + 1,
        ctx.join("\n")
    ))
}

/// Invariant 8: minimums are bound by a term equal to the value, every term is at least the
/// value; a shared device's maximum is named by a link whose MTU equals it, every link it
/// carries is at most it.
fn explanations(yaml: &str, knobs: &Knobs) -> Result<(), String> {
    let t = topology_of(yaml);
    let mut solver = Solver::new(&t, knobs.settings());
    let ps = solver.plan_all();
    let ex = solver.explanations();
    let check_min = |what: String, v: &mtu_solver::Value| -> Result<(), String> {
        let node = ex.get(v.expl);
        if node.value != v.mtu {
            return Err(format!(
                "{what}: explanation value {} ≠ {}",
                node.value, v.mtu
            ));
        }
        if !matches!(ex.get(node.bound).kind, Kind::Leaf(_)) {
            return Err(format!("{what}: bound term is not a term"));
        }
        if ex.value(node.bound) != v.mtu {
            return Err(format!(
                "{what}: bound term {} ≠ value {}",
                ex.value(node.bound),
                v.mtu
            ));
        }
        for l in ex.leaves(v.expl) {
            if ex.value(l) < v.mtu {
                return Err(format!(
                    "{what}: term {} = {} below the value {}",
                    ex.term_name(l, &t),
                    ex.value(l),
                    v.mtu
                ));
            }
        }
        Ok(())
    };
    for p in &ps {
        let n = name(&t, p.node);
        check_min(format!("{n} fabric"), &p.fabric)?;
        for l in &p.links {
            check_min(format!("{n} link to {}", name(&t, l.peer)), &l.mtu)?;
        }
        for r in &p.routes {
            check_min(format!("{n} route {} {:?}", r.destination, r.kind), &r.mtu)?;
        }
        for d in &p.devices {
            let what = format!("{n} device {:?}", d.device);
            let node = ex.get(d.mtu.expl);
            if node.value != d.mtu.mtu {
                return Err(format!(
                    "{what}: explanation value {} ≠ {}",
                    node.value, d.mtu.mtu
                ));
            }
            // The bound term names a link ("link to <peer>") whose MTU equals the device's.
            let term = ex.term_name(node.bound, &t);
            let Some(peer) = term.strip_prefix("link to ").and_then(|n| t.node_id(n)) else {
                return Err(format!("{what}: bound term {term:?} does not name a link"));
            };
            let named = p.link(peer).map(|l| l.mtu.mtu);
            if named != Some(d.mtu.mtu) || ex.value(node.bound) != d.mtu.mtu {
                return Err(format!(
                    "{what}: named link to {} has MTU {named:?}, device {}",
                    name(&t, peer),
                    d.mtu.mtu
                ));
            }
            for l in ex.leaves(d.mtu.expl) {
                if ex.value(l) > d.mtu.mtu {
                    return Err(format!("{what}: term {} above the device", ex.value(l)));
                }
            }
            for l in p.links.iter().filter(|l| l.device == d.device) {
                if l.mtu.mtu > d.mtu.mtu {
                    return Err(format!(
                        "{what}: carries the link to {} with MTU {} above the device {}",
                        name(&t, l.peer),
                        l.mtu.mtu,
                        d.mtu.mtu
                    ));
                }
            }
        }
    }
    Ok(())
}

/// Splits `docs` into `cuts.len() + 1` sources at the given cut points.
fn sources(docs: &[String], cuts: &[usize]) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let mut start = 0;
    let mut cs: Vec<usize> = cuts.iter().map(|c| c % (docs.len() + 1)).collect();
    cs.sort();
    for (i, c) in cs.into_iter().chain([docs.len()]).enumerate() {
        let c = c.max(start);
        out.push((format!("part{i}.yaml"), join_documents(&docs[start..c])));
        start = c;
    }
    out
}

fn first_line(a: &str, b: &str) -> usize {
    a.lines()
        .zip(b.lines())
        .position(|(x, y)| x != y)
        .unwrap_or(0)
}

fn arb_permuted() -> impl Strategy<Value = (TopoSpec, Vec<String>, Vec<usize>)> {
    arb_spec().prop_flat_map(|spec| {
        let docs = spec.documents();
        (
            Just(spec),
            Just(docs).prop_shuffle(),
            prop::collection::vec(0usize..64, 0..=2),
        )
    })
}

proptest! {
    #![proptest_config(proptest_config(1000, regressions!("mtu-solver-oracle")))]

    /// Invariant 7: link, route, device, fabric and published MTUs equal the reference.
    #[test]
    fn solver_equals_reference(spec in arb_spec(), knobs in arb_knobs()) {
        let yaml = spec.to_yaml();
        if let Err(e) = oracle(&yaml, &knobs) {
            prop_assert!(false, "{e}\nknobs: {knobs:?}\n--- input ---\n{yaml}");
        }
    }
}

proptest! {
    #![proptest_config(proptest_config(1000, regressions!("mtu-solver-safety")))]

    /// Invariant 1: safety.
    #[test]
    fn safety_holds(spec in arb_spec(), knobs in arb_knobs()) {
        let yaml = spec.to_yaml();
        if let Err(e) = safety(&yaml, &knobs) {
            prop_assert!(false, "{e}\nknobs: {knobs:?}\n--- input ---\n{yaml}");
        }
    }
}

proptest! {
    #![proptest_config(proptest_config(1000, regressions!("mtu-solver-symmetry")))]

    /// Invariant 2: symmetry of links.
    #[test]
    fn links_are_symmetric(spec in arb_spec(), knobs in arb_knobs()) {
        let yaml = spec.to_yaml();
        if let Err(e) = symmetry(&yaml, &knobs) {
            prop_assert!(false, "{e}\nknobs: {knobs:?}\n--- input ---\n{yaml}");
        }
    }
}

proptest! {
    #![proptest_config(proptest_config(1000, regressions!("mtu-solver-determinism")))]

    /// Invariant 5: any permutation of the documents, split over any number of sources, gives
    /// byte-identical `resolve` JSON (diagnostics' `source` aside), with bound-only or full
    /// explanations.
    #[test]
    fn output_is_order_independent(
        (spec, shuffled, cuts) in arb_permuted(),
        knobs in arb_knobs(),
        full in any::<bool>(),
    ) {
        let base = resolve_json(&[("input.yaml".to_string(), spec.to_yaml())], &knobs, full, false);
        let other = resolve_json(&sources(&shuffled, &cuts), &knobs, full, false);
        if let Some(diff) = compare_json(&base, &other) {
            prop_assert!(false, "output differs after permutation: {diff}\n--- input ---\n{}\n--- permuted ---\n{}",
                spec.to_yaml(), join_documents(&shuffled));
        }
    }
}

proptest! {
    #![proptest_config(proptest_config(1000, regressions!("mtu-solver-determinism-values")))]

    /// Invariant 5 with the ` at <file>:<line>` suffix of explanation term sources removed:
    /// every value, term, and the rest of every text are order-independent.
    #[test]
    fn output_is_order_independent_apart_from_locations(
        (spec, shuffled, cuts) in arb_permuted(),
        knobs in arb_knobs(),
        full in any::<bool>(),
    ) {
        let base = resolve_json(&[("input.yaml".to_string(), spec.to_yaml())], &knobs, full, true);
        let other = resolve_json(&sources(&shuffled, &cuts), &knobs, full, true);
        if let Some(diff) = compare_json(&base, &other) {
            prop_assert!(false, "output differs after permutation: {diff}\n--- input ---\n{}\n--- permuted ---\n{}",
                spec.to_yaml(), join_documents(&shuffled));
        }
    }
}

proptest! {
    #![proptest_config(proptest_config(1000, regressions!("mtu-solver-explanations")))]

    /// Invariant 8: explanations reproduce their values.
    #[test]
    fn explanations_reproduce_values(spec in arb_spec(), knobs in arb_knobs()) {
        let yaml = spec.to_yaml();
        if let Err(e) = explanations(&yaml, &knobs) {
            prop_assert!(false, "{e}\nknobs: {knobs:?}\n--- input ---\n{yaml}");
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Minimal reproductions of the production discrepancies the properties found (see the report
// of the change that added this file). They fail until the production code is fixed.

const FULLY_CUT: &str = "---
apiVersion: net.unbounded-cloud.io/v1alpha1
kind: Site
metadata: {name: s0}
spec:
  nodeCidrs: [10.0.0.0/16]
  podCidrAssignments:
    - cidrBlocks: [10.100.0.0/16]
  localCidrs: [172.16.0.0/16]
---
apiVersion: net.unbounded-cloud.io/v1alpha1
kind: GatewayPool
metadata: {name: p0}
spec:
  type: External
  nodeSelector: {pool: p0}
  routedCidrs: [172.16.0.0/16]
---
apiVersion: net.unbounded-cloud.io/v1alpha1
kind: GatewayPool
metadata: {name: p1}
spec:
  type: External
  nodeSelector: {pool: p1}
---
apiVersion: net.unbounded-cloud.io/v1alpha1
kind: GatewayPoolPeering
metadata: {name: pp0}
spec:
  gatewayPools: [p0, p1]
---
apiVersion: v1
kind: Node
metadata:
  name: n0-0
  labels: {pool: p0}
spec:
  podCIDRs: [10.100.0.0/24]
status:
  addresses:
    - {type: InternalIP, address: 10.0.0.1}
    - {type: ExternalIP, address: 198.51.100.1}
---
apiVersion: v1
kind: Node
metadata:
  name: n0-1
  labels: {pool: p1}
spec:
  podCIDRs: [10.100.1.0/24]
status:
  addresses:
    - {type: InternalIP, address: 10.0.0.2}
    - {type: ExternalIP, address: 198.51.100.2}
";

/// `mtu.md` §6 and `forwarding.md` rule 7: a gateway publishes one value per prefix it
/// advertises, uncut; a learned prefix that its Site's `localCidrs` cover entirely installs no
/// route but is still advertised, so it is still published (here the transit route MTU
/// 1500 − GENEVE 58 = 1442).
#[test]
fn fully_cut_learned_prefix_is_still_published() {
    let t = topology_of(FULLY_CUT);
    let ps = Solver::new(&t, Settings::default()).plan_all();
    let g = t.node_id("n0-1").unwrap();
    let published: Vec<(String, u32)> = ps[g.idx()]
        .published
        .iter()
        .flatten()
        .map(|p| (p.destination.to_string(), p.mtu.mtu.get()))
        .collect();
    let r = reference::compute(&t, &RefSettings::default());
    assert_eq!(
        r.nodes[g.idx()].published,
        Some(vec![("172.16.0.0/16".parse().unwrap(), 1442)])
    );
    assert_eq!(published, vec![("172.16.0.0/16".to_string(), 1442)]);
}

const MERGED: &str = "---
apiVersion: net.unbounded-cloud.io/v1alpha1
kind: Site
metadata: {name: s0}
spec:
  nodeCidrs: [10.0.0.0/16]
  podCidrAssignments:
    - cidrBlocks: [10.100.0.0/16, 10.200.0.0/16]
  tunnelMTU: 576
---
apiVersion: net.unbounded-cloud.io/v1alpha1
kind: Site
metadata: {name: s1}
spec:
  nodeCidrs: [10.1.0.0/16]
  podCidrAssignments:
    - cidrBlocks: [10.101.0.0/16]
---
apiVersion: net.unbounded-cloud.io/v1alpha1
kind: Site
metadata: {name: s2}
spec:
  nodeCidrs: [10.2.0.0/16]
  podCidrAssignments:
    - cidrBlocks: [10.102.0.0/16, 10.200.0.0/16]
---
apiVersion: net.unbounded-cloud.io/v1alpha1
kind: GatewayPool
metadata: {name: p0}
spec:
  type: Internal
  nodeSelector: {pool: p0}
---
apiVersion: net.unbounded-cloud.io/v1alpha1
kind: SiteGatewayPoolAssignment
metadata: {name: sa0}
spec:
  sites: [s0, s2]
  gatewayPools: [p0]
---
apiVersion: v1
kind: Node
metadata: {name: n0-0}
spec:
  podCIDRs: [10.100.0.0/24]
status:
  addresses:
    - {type: InternalIP, address: 10.0.0.1}
---
apiVersion: v1
kind: Node
metadata:
  name: n1-0
  labels: {pool: p0}
spec:
  podCIDRs: [10.101.0.0/24]
status:
  addresses:
    - {type: InternalIP, address: 10.1.0.1}
---
apiVersion: v1
kind: Node
metadata: {name: n2-0}
spec:
  podCIDRs: [10.102.0.0/24]
status:
  addresses:
    - {type: InternalIP, address: 10.2.0.1}
";

fn route_mtu(p: &NodePlan, dest: &str) -> u32 {
    p.routes
        .iter()
        .find(|r| r.destination.to_string() == dest)
        .map(|r| r.mtu.mtu.get())
        .unwrap()
}

/// Sites s0 and s2 share the pod block 10.200.0.0/16 (identical prefixes merge into one
/// route). Worker n2-0 accepts only the hop list [s0, p0] for it, so its route ends with a
/// delivery into s0, whose component cap is 576. Production memoizes `reach` by (pool, gateway
/// Site, prefix) without the origins, so planning n0-0 first (whose list is [s2, p0]) leaves
/// n2-0 with 1442: the value of a node depends on which nodes were resolved before it.
#[test]
fn route_mtu_does_not_depend_on_planning_order() {
    let t = topology_of(MERGED);
    let n2 = t.node_id("n2-0").unwrap();
    let alone = Solver::new(&t, Settings::default()).plan(n2);
    let all = Solver::new(&t, Settings::default()).plan_all();
    let r = reference::compute(&t, &RefSettings::default());
    let want = r.nodes[n2.idx()]
        .routes
        .iter()
        .find(|x| x.destination.to_string() == "10.200.0.0/16")
        .map(|x| x.mtu);
    assert_eq!(want, Some(576));
    assert_eq!(
        route_mtu(&alone, "10.200.0.0/16"),
        576,
        "n2-0 resolved alone"
    );
    assert_eq!(
        route_mtu(&all[n2.idx()], "10.200.0.0/16"),
        576,
        "n2-0 resolved after n0-0"
    );
}

/// Invariant 5: moving a document changes the ` at <file>:<line>` that explanation term
/// sources carry, so the `resolve` JSON is not byte-identical (only diagnostics' `source` may
/// differ).
#[test]
fn explanation_sources_do_not_depend_on_document_order() {
    let site = "apiVersion: net.unbounded-cloud.io/v1alpha1\nkind: Site\nmetadata: {name: s0}\nspec:\n  nodeCidrs: [10.0.0.0/16]\n  podCidrAssignments:\n    - cidrBlocks: [10.100.0.0/16]\n  tunnelMTU: 1300\n".to_string();
    let node = "apiVersion: v1\nkind: Node\nmetadata: {name: n0-0}\nspec:\n  podCIDRs: [10.100.0.0/24]\nstatus:\n  addresses:\n    - {type: InternalIP, address: 10.0.0.1}\n".to_string();
    let knobs = Knobs {
        default_underlay: 1500,
        cfg_mtu: 0,
        cfg_overrides: Vec::new(),
        ipv6_outer: false,
    };
    let a = resolve_json(
        &[(
            "input.yaml".into(),
            join_documents(&[site.clone(), node.clone()]),
        )],
        &knobs,
        false,
        false,
    );
    let b = resolve_json(
        &[("input.yaml".into(), join_documents(&[node, site]))],
        &knobs,
        false,
        false,
    );
    assert!(
        compare_json(&a, &b).is_none(),
        "{}",
        compare_json(&a, &b).unwrap()
    );
}
