//! Shared helpers for the criterion benchmarks and the `perf-budget` report: a counting global
//! allocator, the fixtures (the seeded standard and double clusters, 1,000-member peerings, a
//! cluster as the agent's API source holds it, the API load one agent puts on a fake API server),
//! the what-if case of the budgets, index-entry counting, and the dataplane comparison.

pub mod alloc;
pub mod api_cluster;
pub mod api_load;
pub mod dataplane;
pub mod memory;

use mtu_solver::whatif::{Base, Input, Mutation};
use mtu_solver::{NodePlan, Settings, Solver};
use std::time::{Duration, Instant};
use test_utils::testkit::scale::ScaleSpec;
use topology_core::decode::{Decoded, decode};
use topology_core::ids::{NodeId, PoolId, SiteId};
use topology_core::model::Topology;
use topology_core::vocab::Kind;

/// A generated cluster: its YAML text, decoded input and built topology.
pub struct Fixture {
    /// Name used in benchmark ids (`standard-5000`).
    pub name: String,
    /// The YAML stream.
    pub text: String,
    /// The what-if / incremental input (decoded objects, default settings) and the validated
    /// topology built from it.
    pub base: Base,
}

impl Fixture {
    /// Generates, decodes and builds the cluster of `spec`, named `label-<nodes>`.
    pub fn new(label: &str, spec: &ScaleSpec) -> Fixture {
        Fixture::from_text(format!("{label}-{}", spec.node_count()), spec.generate())
    }

    /// The standard cluster (5,000 nodes).
    pub fn standard() -> Fixture {
        Fixture::new("standard", &ScaleSpec::standard())
    }

    /// The double cluster (10,000 nodes).
    pub fn double() -> Fixture {
        Fixture::new("double", &ScaleSpec::double())
    }

    /// The hyperscale cluster (65,000 nodes).
    pub fn hyperscale() -> Fixture {
        Fixture::new("hyperscale", &ScaleSpec::hyperscale())
    }

    /// Decodes and builds `text`.
    pub fn from_text(name: String, text: String) -> Fixture {
        let d = decode_text(&text);
        let input = Input {
            objects: d.objects,
            diagnostics: d.diagnostics,
            settings: Settings::default(),
        };
        Fixture {
            name,
            text,
            base: Base::new(input),
        }
    }

    /// The what-if / incremental input.
    pub fn input(&self) -> &Input {
        self.base.input()
    }

    /// The validated topology.
    pub fn topo(&self) -> &Topology {
        self.base.topology()
    }

    /// A new build of the cluster's topology: none of its indexes built on first use yet, as
    /// after the build of a reconcile or a CLI run (node IDs equal those of [`Self::topo`]).
    pub fn fresh_topology(&self) -> Topology {
        self.base.input().build_topology()
    }

    /// Every node of `k` Sites spread evenly over the cluster, in node order: resolving all
    /// nodes of a cluster resolves every node of each Site, so per-Site work (the learned routes
    /// its workers share) is shared by as many nodes as in a full resolve. On the standard
    /// cluster (200 Sites) `k = 200` is every node.
    pub fn every_node_of_spread_sites(&self, k: usize) -> Vec<NodeId> {
        let topo = self.topo();
        let n = topo.sites.len();
        let mut out: Vec<NodeId> = (0..k.min(n))
            .map(|i| SiteId::from_idx(i * n / k.min(n).max(1)))
            .flat_map(|s| {
                topo.workers_of(s)
                    .iter()
                    .chain(topo.gateways_in(s))
                    .copied()
            })
            .collect();
        out.sort_unstable();
        out.dedup();
        out
    }

    /// A node spread evenly over the cluster (`i` of `n`).
    pub fn spread_node(&self, i: usize, n: usize) -> NodeId {
        let len = self.topo().nodes.len().max(1);
        NodeId::from_idx(i.saturating_mul(len) / n.max(1) % len)
    }

    /// A worker in the middle of the cluster (a typical node: mesh links and gateway routes).
    pub fn typical_worker(&self) -> NodeId {
        let len = self.topo().nodes.len();
        (len / 2..len)
            .chain(0..len / 2)
            .map(NodeId::from_idx)
            .find(|n| !self.topo().node(*n).is_gateway())
            .unwrap_or(NodeId::from_idx(0))
    }
}

/// Decodes one YAML source.
pub fn decode_text(text: &str) -> Decoded {
    decode([("scale.yaml", text.as_bytes())])
}

/// Builds the topology of decoded objects.
pub fn build(d: &Decoded) -> Topology {
    Topology::build(d.objects.iter(), d.diagnostics.iter().cloned())
}

/// Resolves one node with a fresh solver. Measured on a [`Fixture::fresh_topology`], it costs
/// what a reconcile or a CLI run pays after the build: the topology's indexes built on first
/// use (the prefix table) included.
pub fn resolve_one(topo: &Topology, n: NodeId) -> NodePlan {
    Solver::new(topo, Settings::default()).plan(n)
}

/// Resolves every node with one solver; returns the plans and the resolved value count.
pub fn resolve_all(topo: &Topology) -> (Vec<NodePlan>, usize) {
    let mut s = Solver::new(topo, Settings::default());
    let plans = s.plan_all();
    let values = plans.iter().map(NodePlan::value_count).sum();
    (plans, values)
}

/// Resolves every node and serializes the `resolve` JSON document into a buffer; returns the
/// time of each phase and the JSON size.
pub fn resolve_and_serialize(topo: &Topology) -> (Duration, Duration, usize, usize) {
    let t = Instant::now();
    let mut s = Solver::new(topo, Settings::default());
    let plans = s.plan_all();
    let resolve = t.elapsed();
    let values = plans.iter().map(NodePlan::value_count).sum();
    let t = Instant::now();
    let bytes = serialize(&s, topo, &plans);
    let ser = t.elapsed();
    (resolve, ser, values, bytes)
}

/// Serializes plans as the `resolve` JSON document (`report::resolve_out`) into a `Vec`.
pub fn serialize(s: &Solver<'_>, topo: &Topology, plans: &[NodePlan]) -> usize {
    let mut r = mtu_solver::report::Renderer::new(s, mtu_solver::Explanations::Bound);
    let out = mtu_solver::report::resolve_out(topo, &mut r, plans, &topo.diagnostics);
    let mut buf: Vec<u8> = Vec::with_capacity(1 << 20);
    // Serializing plain data into a Vec cannot fail.
    let _ = serde_json::to_writer(&mut buf, &out);
    buf.len()
}

/// The budgets' what-if: the first (by name) assignment of a Site that has no cap, set to 1280.
pub fn site_assignment_cap(topo: &Topology) -> Option<Mutation> {
    topo.assignments
        .iter()
        .find(|a| a.cap.is_none() && a.relates && a.sites.len() == 1)
        .map(|a| Mutation::SetCap {
            kind: Kind::SiteGatewayPoolAssignment,
            name: a.name.to_string(),
            mtu: 1280,
        })
}

/// Index entries of the membership structures (`forwarding.md`, "Complexity requirement").
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct IndexEntries {
    /// Member → relations entries: `peerings_of_site`, `assignments_of_site`,
    /// `assignments_of_pool`, `pool_peerings_of_pool`.
    pub memberships: usize,
    /// Relation → members entries (one hub per peering object, its member list).
    pub hubs: usize,
    /// Direct-mesh component structures: member Sites and cap objects.
    pub components: usize,
}

impl IndexEntries {
    /// Memberships plus hub entries (the figure of the budget).
    pub fn total(&self) -> usize {
        self.memberships + self.hubs
    }
}

/// Counts the index entries of a topology.
pub fn index_entries(t: &Topology) -> IndexEntries {
    let sites = (0..t.sites.len()).map(SiteId::from_idx);
    let pools = (0..t.pools.len()).map(PoolId::from_idx);
    let memberships = sites
        .map(|s| t.peerings_of(s).len() + t.assignments_of(s).len())
        .sum::<usize>()
        + pools
            .map(|p| t.assignments_of_pool(p).len() + t.pool_peerings_of(p).len())
            .sum::<usize>();
    let hubs = t
        .site_peerings
        .iter()
        .chain(&t.assignments)
        .chain(&t.pool_peerings)
        .map(|r| r.sites.len() + r.pools.len())
        .sum();
    let components = t
        .components
        .iter()
        .map(|c| c.sites.len() + c.cap_objects.len())
        .sum();
    IndexEntries {
        memberships,
        hubs,
        components,
    }
}

/// CPU time this thread has run so far (`CLOCK_THREAD_CPUTIME_ID`, nanosecond resolution; zero
/// where it is unavailable). On a shared machine it is the figure that does not depend on what
/// else runs.
pub fn thread_cpu() -> Duration {
    use nix::time::{ClockId, clock_gettime};
    clock_gettime(ClockId::CLOCK_THREAD_CPUTIME_ID)
        .map(Duration::from)
        .unwrap_or_default()
}

/// Wall-clock and CPU time of one sample.
#[derive(Clone, Copy, Debug, Default)]
pub struct Sample {
    /// Wall-clock time.
    pub wall: Duration,
    /// CPU time of the calling thread.
    pub cpu: Duration,
}

/// Runs `f` and measures it.
pub fn timed<R>(f: impl FnOnce() -> R) -> (R, Sample) {
    let (w, c) = (Instant::now(), thread_cpu());
    let r = f();
    let cpu = thread_cpu().saturating_sub(c);
    (
        r,
        Sample {
            wall: w.elapsed(),
            cpu,
        },
    )
}

/// Medians of wall-clock and CPU times, taken separately.
pub fn medians(v: &[Sample]) -> Sample {
    let mut w: Vec<Duration> = v.iter().map(|s| s.wall).collect();
    let mut c: Vec<Duration> = v.iter().map(|s| s.cpu).collect();
    Sample {
        wall: median(&mut w),
        cpu: median(&mut c),
    }
}

/// The median of some durations (the upper middle for an even count).
pub fn median(v: &mut [Duration]) -> Duration {
    v.sort();
    v.get(v.len() / 2).copied().unwrap_or_default()
}

/// Prints the allocations one run of `f` makes, as `alloc <id>: N allocs, B` (the criterion
/// benchmarks print it next to their times).
pub fn report_allocs<R>(id: &str, f: impl FnOnce() -> R) {
    let (r, a) = alloc::counted(f);
    drop(r);
    println!("alloc {id}: {} per iteration", a.human());
}

/// `text` with `notes` ConfigMaps appended: objects of a kind this tool skips, each an
/// `N-UNKNOWN-KIND` note in every document (a `kubectl get all` export of a busy cluster).
pub fn with_notes(text: &str, notes: usize) -> String {
    let mut out = String::with_capacity(text.len().saturating_add(notes.saturating_mul(64)));
    out.push_str(text);
    for i in 0..notes {
        out.push_str(&format!(
            "\n---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm-{i}\n"
        ));
    }
    out
}
