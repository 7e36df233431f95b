//! The rollup of `resolve --summary`: what a whole cluster's values add up to, folded node by
//! node as they are resolved (memory proportional to the distinct MTUs and binding objects, not
//! to the values): how many nodes, Sites, pools and values; each distinct MTU with how many
//! nodes and values carry it; the lowest fabric and route and where they are; the objects that
//! bind the most values; the nodes whose fabric is at or below the IPv6 floor; the diagnostics
//! by severity and code.

use mtu_solver::NodePlan;
use mtu_solver::report::{ExplOut, Renderer};
use rustc_hash::FxHashMap;
use serde::Serialize;
use std::collections::BTreeMap;
use std::sync::Arc;
use topology_core::diag::{Diagnostic, Severity};
use topology_core::model::Topology;

/// IPv6 needs every link to carry 1280 bytes (RFC 8200).
pub const IPV6_FLOOR: u32 = 1280;

/// Places named as examples of a lowest value or of the floor.
const EXAMPLES: usize = 3;

/// What one node adds to the rollup, made on the thread that planned it.
pub struct NodeFacts {
    pub line: NodeLine,
    fabric_bound: Arc<ExplOut>,
    links: Vec<(u32, Arc<ExplOut>)>,
    routes: Vec<(u32, Arc<ExplOut>)>,
    devices: Vec<(u32, Arc<ExplOut>)>,
}

/// A node's line in `--summary=nodes`.
#[derive(Serialize, Clone, Debug)]
#[serde(rename_all = "camelCase")]
pub struct NodeLine {
    pub name: Arc<str>,
    pub site: Arc<str>,
    pub role: &'static str,
    pub pool: Option<Arc<str>>,
    #[serde(rename = "fabricMTU")]
    pub fabric_mtu: u32,
    /// The term that binds the fabric (`auto`, `Site/A spec.tunnelMTU`, ...).
    pub fabric_bound: String,
    /// The lowest route MTU and its destination (the first of the lowest in output order;
    /// null without routes).
    #[serde(rename = "lowestRouteMTU")]
    pub lowest_route_mtu: Option<u32>,
    pub lowest_route_destination: Option<String>,
    pub links: usize,
}

impl NodeFacts {
    /// The facts of `plan` (its explanations by their binding term alone).
    pub fn of(topo: &Topology, r: &mut Renderer<'_, '_>, plan: &NodePlan) -> NodeFacts {
        let node = topo.node(plan.node);
        let lowest =
            plan.routes.iter().fold(
                None,
                |best: Option<&mtu_solver::RoutePlan>, rt| match best {
                    Some(b) if b.mtu.mtu <= rt.mtu.mtu => Some(b),
                    _ => Some(rt),
                },
            );
        let fabric_bound = r.expl(plan.fabric.expl);
        let line = NodeLine {
            name: node.name.clone(),
            site: topo.site(node.site).name.clone(),
            role: if node.is_gateway() {
                "gateway"
            } else {
                "worker"
            },
            pool: node.pool().map(|p| topo.pool(p).name.clone()),
            fabric_mtu: plan.fabric.mtu.get(),
            fabric_bound: fabric_bound.bound.term.clone(),
            lowest_route_mtu: lowest.map(|rt| rt.mtu.mtu.get()),
            lowest_route_destination: lowest.map(|rt| rt.destination.to_string()),
            links: plan.links.len(),
        };
        let mut value = |v: &mtu_solver::plan::Value| (v.mtu.get(), r.expl(v.expl));
        NodeFacts {
            links: plan.links.iter().map(|l| value(&l.mtu)).collect(),
            routes: plan.routes.iter().map(|rt| value(&rt.mtu)).collect(),
            devices: plan.devices.iter().map(|d| value(&d.mtu)).collect(),
            fabric_bound,
            line,
        }
    }
}

/// The values of one MTU.
#[derive(Serialize, Clone, Debug, Default, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct MtuRow {
    pub mtu: u32,
    /// Nodes whose fabric (pod interface MTU) it is.
    pub fabric_nodes: usize,
    pub link_values: usize,
    pub route_values: usize,
    /// Nodes with at least one route of this MTU.
    pub route_nodes: usize,
}

/// An object that binds values: a cap, an annotation, a setting.
#[derive(Serialize, Clone, Debug, Default, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct Binder {
    /// The object and field in short (`Site/A spec.tunnelMTU`, `Node/n underlay-mtu
    /// annotation`).
    pub name: String,
    /// `Kind/name`.
    pub object: String,
    pub field: Option<String>,
    /// Nodes whose fabric it binds.
    pub fabric_nodes: usize,
    pub link_values: usize,
    pub route_values: usize,
    pub device_values: usize,
    /// Nodes with at least one value it binds.
    pub nodes: usize,
}

impl Binder {
    /// Every value it binds.
    pub fn values(&self) -> usize {
        self.fabric_nodes + self.link_values + self.route_values + self.device_values
    }
}

/// A lowest value and where it is.
#[derive(Serialize, Clone, Debug, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct Lowest {
    pub mtu: u32,
    /// Values of that MTU (for the fabric: nodes).
    pub values: usize,
    /// Nodes that have one.
    pub nodes: usize,
    /// The first few, in node order: `node` or `node → destination`.
    pub examples: Vec<String>,
}

/// Nodes whose fabric is at or below [`IPV6_FLOOR`].
#[derive(Serialize, Clone, Debug, Default, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct Floor {
    pub mtu: u32,
    pub nodes: usize,
    pub examples: Vec<Arc<str>>,
}

/// How many there are of each.
#[derive(Serialize, Clone, Debug, Default, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct Counts {
    pub nodes: usize,
    pub workers: usize,
    pub gateways: usize,
    /// Sites of the selected nodes.
    pub sites: usize,
    /// Pools of the selected gateways.
    pub pools: usize,
    pub links: usize,
    pub routes: usize,
    pub devices: usize,
}

/// Diagnostics of one code.
#[derive(Serialize, Clone, Debug, PartialEq, Eq)]
pub struct CodeCount {
    pub severity: &'static str,
    pub code: &'static str,
    pub count: usize,
}

/// Diagnostics by severity and code.
#[derive(Serialize, Clone, Debug, Default, PartialEq, Eq)]
pub struct DiagCounts {
    pub error: usize,
    pub warning: usize,
    pub note: usize,
    /// By severity (errors first), then code.
    pub codes: Vec<CodeCount>,
}

impl DiagCounts {
    /// Counts `diags`.
    pub fn of(diags: &[Diagnostic]) -> DiagCounts {
        let mut by_code: BTreeMap<(Severity, &'static str), usize> = BTreeMap::new();
        let mut c = DiagCounts::default();
        for d in diags {
            match d.severity {
                Severity::Error => c.error += 1,
                Severity::Warning => c.warning += 1,
                // Notes, and any severity a later version adds.
                _ => c.note += 1,
            }
            *by_code.entry((d.severity, d.code.as_str())).or_default() += 1;
        }
        c.codes = by_code
            .into_iter()
            .map(|((s, code), count)| CodeCount {
                severity: s.as_str(),
                code,
                count,
            })
            .collect();
        c
    }
}

/// The rollup being folded.
#[derive(Default)]
pub struct Rollup {
    pub counts: Counts,
    sites: rustc_hash::FxHashSet<Arc<str>>,
    pools: rustc_hash::FxHashSet<Arc<str>>,
    mtus: BTreeMap<u32, MtuRow>,
    lowest_fabric: Option<Lowest>,
    lowest_route: Option<Lowest>,
    binders: Vec<Binder>,
    /// Binders by the explanation that names them (explanations are shared per binding term).
    by_expl: FxHashMap<*const ExplOut, Option<usize>>,
    by_object: FxHashMap<(String, Option<String>), usize>,
    floor: Floor,
}

impl Rollup {
    /// Adds one node.
    pub fn add(&mut self, f: &NodeFacts) {
        self.count(f);
        let name = &f.line.name;
        let fabric = f.line.fabric_mtu;
        self.mtus
            .entry(fabric)
            .or_insert_with(|| row(fabric))
            .fabric_nodes += 1;
        lower(&mut self.lowest_fabric, fabric, 1, || name.to_string());
        if fabric <= IPV6_FLOOR {
            self.floor.nodes += 1;
            if self.floor.examples.len() < EXAMPLES {
                self.floor.examples.push(name.clone());
            }
        }
        self.route_mtus(f);
        self.bindings(f);
    }

    fn count(&mut self, f: &NodeFacts) {
        let c = &mut self.counts;
        c.nodes += 1;
        match f.line.role {
            "gateway" => c.gateways += 1,
            _ => c.workers += 1,
        }
        c.links += f.links.len();
        c.routes += f.routes.len();
        c.devices += f.devices.len();
        self.sites.insert(f.line.site.clone());
        if let Some(p) = &f.line.pool {
            self.pools.insert(p.clone());
        }
        for (mtu, _) in &f.links {
            self.mtus
                .entry(*mtu)
                .or_insert_with(|| row(*mtu))
                .link_values += 1;
        }
    }

    /// Route values by MTU, the nodes that carry each, and the lowest route.
    fn route_mtus(&mut self, f: &NodeFacts) {
        let mut here: Vec<u32> = f.routes.iter().map(|(m, _)| *m).collect();
        for m in &here {
            self.mtus.entry(*m).or_insert_with(|| row(*m)).route_values += 1;
        }
        here.sort_unstable();
        here.dedup();
        for m in &here {
            if let Some(r) = self.mtus.get_mut(m) {
                r.route_nodes += 1;
            }
        }
        let Some(&low) = here.first() else { return };
        let n = f.routes.iter().filter(|(m, _)| *m == low).count();
        let example = || {
            let to = f.line.lowest_route_destination.as_deref().unwrap_or("?");
            format!("{} → {to}", f.line.name)
        };
        lower(&mut self.lowest_route, low, n, example);
    }

    /// Every value counted against the object that binds it.
    fn bindings(&mut self, f: &NodeFacts) {
        let mut touched: Vec<usize> = Vec::new();
        if let Some(b) = self.binder(&f.fabric_bound) {
            self.binders[b].fabric_nodes += 1;
            touched.push(b);
        }
        for (list, slot) in [
            (&f.links, Slot::Link),
            (&f.routes, Slot::Route),
            (&f.devices, Slot::Device),
        ] {
            for (_, e) in list {
                let Some(b) = self.binder(e) else { continue };
                let binder = &mut self.binders[b];
                match slot {
                    Slot::Link => binder.link_values += 1,
                    Slot::Route => binder.route_values += 1,
                    Slot::Device => binder.device_values += 1,
                }
                touched.push(b);
            }
        }
        touched.sort_unstable();
        touched.dedup();
        for b in touched {
            self.binders[b].nodes += 1;
        }
    }

    /// The binder an explanation names (None: its binding term reads no object, e.g. `auto`).
    fn binder(&mut self, e: &Arc<ExplOut>) -> Option<usize> {
        let key = Arc::as_ptr(e);
        if let Some(b) = self.by_expl.get(&key) {
            return *b;
        }
        let b = e.bound.object.as_ref().map(|object| {
            let object = object.to_string();
            let field = e.bound.field.as_deref();
            let key = (object.clone(), field.map(str::to_string));
            match self.by_object.get(&key) {
                Some(b) => *b,
                None => {
                    self.binders.push(Binder {
                        name: binder_name(&object, field),
                        object: object.clone(),
                        field: key.1.clone(),
                        ..Binder::default()
                    });
                    self.by_object.insert(key, self.binders.len() - 1);
                    self.binders.len() - 1
                }
            }
        });
        // The explanation stays alive in the renderer's cache, so its address names it.
        self.by_expl.insert(key, b);
        b
    }

    /// The finished rollup: MTUs ascending, binders by the values they bind (most first).
    pub fn finish(mut self, diags: &[Diagnostic]) -> Finished {
        self.counts.sites = self.sites.len();
        self.counts.pools = self.pools.len();
        let mut binders = self.binders;
        binders.sort_by(|a, b| b.values().cmp(&a.values()).then(a.name.cmp(&b.name)));
        self.floor.mtu = IPV6_FLOOR;
        Finished {
            counts: self.counts,
            mtus: self.mtus.into_values().collect(),
            lowest_fabric: self.lowest_fabric,
            lowest_route: self.lowest_route,
            binders,
            ipv6_floor: self.floor,
            diagnostic_counts: DiagCounts::of(diags),
        }
    }
}

/// `Kind/name field`, an annotation by its name alone (`Node/n underlay-mtu annotation`).
fn binder_name(object: &str, field: Option<&str>) -> String {
    match field {
        Some(f) => match f.strip_prefix("metadata.annotations.") {
            Some(a) => format!(
                "{object} {} annotation",
                a.rsplit_once('/').map_or(a, |(_, name)| name)
            ),
            None => format!("{object} {f}"),
        },
        None => object.to_string(),
    }
}

#[derive(Clone, Copy)]
enum Slot {
    Link,
    Route,
    Device,
}

fn row(mtu: u32) -> MtuRow {
    MtuRow {
        mtu,
        ..MtuRow::default()
    }
}

/// Keeps the lowest of `mtu`: a lower value starts over, an equal one adds `values` on one more
/// node (and an example while there are few).
fn lower(low: &mut Option<Lowest>, mtu: u32, values: usize, example: impl FnOnce() -> String) {
    match low {
        Some(l) if l.mtu < mtu => {}
        Some(l) if l.mtu == mtu => {
            l.values += values;
            l.nodes += 1;
            if l.examples.len() < EXAMPLES {
                l.examples.push(example());
            }
        }
        _ => {
            *low = Some(Lowest {
                mtu,
                values,
                nodes: 1,
                examples: vec![example()],
            })
        }
    }
}

/// The rollup of every selected node.
#[derive(Serialize, Clone, Debug, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct Finished {
    pub counts: Counts,
    /// Every distinct MTU, ascending.
    pub mtus: Vec<MtuRow>,
    pub lowest_fabric: Option<Lowest>,
    pub lowest_route: Option<Lowest>,
    /// Objects that bind values, the most values first.
    pub binders: Vec<Binder>,
    #[serde(rename = "ipv6Floor")]
    pub ipv6_floor: Floor,
    pub diagnostic_counts: DiagCounts,
}
