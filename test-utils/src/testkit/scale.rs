//! Seeded scale generator (the standard cluster of the performance budgets).
//!
//! [`ScaleSpec::standard`] is the cluster the budgets are written for: 5,000 nodes in 200 Sites
//! of 25; mesh SitePeerings join the Sites in fours (50 direct-mesh components); 50 External
//! pools of 2 gateways each, in 50 different Sites (one per component); every Site has one
//! SiteGatewayPoolAssignment naming it and 2 pools (its component's pool and one more chosen by
//! the seed); the pool peerings are a ring of the 50 pools plus 10 chords; 20% of the Sites, mesh
//! peerings, assignments, pools and pool peerings carry a `tunnelMTU` in 1300..=1450; 10% of the
//! nodes carry a 9000 underlay annotation. [`ScaleSpec::double`] doubles it.
//!
//! The output is a multi-document YAML stream (what `kubectl get -o yaml` of each object would
//! write, in compact flow style) and depends only on the spec: the same spec always gives the
//! same bytes. No `rand`: a splitmix64 generator drives every choice.
//!
//! Addressing (unique up to 32,768 Sites of up to 240 nodes, 1,024 Sites for pod blocks):
//! Site `i` has node CIDR `10.(i/256).(i%256).0/24` (node `k` is `.k+10`) and pod block
//! `10.128.0.0/9 + i*/19` (node `k` has the `k`-th /24 of it); gateway ExternalIPs count up from
//! `198.18.0.1`.

// Test-kit code with bounded inputs: plain arithmetic reads better than checked arithmetic here.
#![allow(clippy::arithmetic_side_effects)]

use std::fmt::Write as _;
use topology_core::decode::{Decoded, RawObject, decode};
use topology_core::vocab::{API_GROUP, API_VERSION};

/// The label a pool's `nodeSelector` asks for (value: the pool's name).
pub const GATEWAY_SELECTOR_KEY: &str = "scale.unbounded-cloud.io/gateway-for";

/// The shape of a generated cluster.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct ScaleSpec {
    /// Number of Sites.
    pub sites: usize,
    /// Nodes in every Site (gateways included).
    pub nodes_per_site: usize,
    /// Sites per mesh SitePeering (consecutive Sites; the last group may be smaller; a group of
    /// one gets no peering). 0 or 1: no mesh peerings.
    pub mesh_group: usize,
    /// Number of External GatewayPools, each in its own Site (at most `sites`).
    pub pools: usize,
    /// Gateways of each pool (at most `nodes_per_site`).
    pub gateways_per_pool: usize,
    /// Extra pool peerings across the ring (between pools not adjacent on it).
    pub chords: usize,
    /// Percentage of Sites, mesh peerings, assignments, pools and pool peerings with a cap.
    pub capped_percent: u32,
    /// Percentage of nodes with a 9000 underlay annotation.
    pub jumbo_percent: u32,
    /// Seed of every random choice.
    pub seed: u64,
}

impl ScaleSpec {
    /// The standard cluster: 5,000 nodes, 200 Sites, 50 pools, 50 components.
    pub fn standard() -> Self {
        ScaleSpec {
            sites: 200,
            nodes_per_site: 25,
            mesh_group: 4,
            pools: 50,
            gateways_per_pool: 2,
            chords: 10,
            capped_percent: 20,
            jumbo_percent: 10,
            seed: 0x5EED_0001,
        }
    }

    /// The doubled cluster: 10,000 nodes, 400 Sites, 100 pools, 100 components, 20 chords.
    pub fn double() -> Self {
        ScaleSpec {
            sites: 400,
            pools: 100,
            chords: 20,
            ..ScaleSpec::standard()
        }
    }

    /// A small cluster of the same shape for tests: 192 nodes, 48 Sites, 12 pools, 3 chords, and
    /// 40 % of the objects capped, so equal caps (ties) are common.
    pub fn small() -> Self {
        ScaleSpec {
            sites: 48,
            nodes_per_site: 4,
            pools: 12,
            chords: 3,
            capped_percent: 40,
            ..ScaleSpec::standard()
        }
    }

    /// The hyperscale cluster: 13 times the standard one, same shape: 65,000 nodes, 2,600 Sites,
    /// 650 pools, 130 chords.
    pub fn hyperscale() -> Self {
        ScaleSpec {
            sites: 2600,
            pools: 650,
            chords: 130,
            ..ScaleSpec::standard()
        }
    }

    /// The total number of nodes.
    pub fn node_count(&self) -> usize {
        self.sites * self.nodes_per_site
    }

    /// The number of direct-mesh components the cluster has.
    pub fn component_count(&self) -> usize {
        if self.mesh_group <= 1 {
            self.sites
        } else {
            self.sites.div_ceil(self.mesh_group)
        }
    }

    /// The cluster as a multi-document YAML stream.
    pub fn generate(&self) -> String {
        generate(self)
    }

    /// The cluster decoded (source name `scale.yaml`).
    pub fn decode(&self) -> Decoded {
        let text = self.generate();
        decode([("scale.yaml", text.as_bytes())])
    }

    /// The cluster's raw objects.
    pub fn objects(&self) -> Vec<RawObject> {
        self.decode().objects
    }
}

/// A small deterministic PRNG (splitmix64).
#[derive(Clone, Debug)]
pub struct SplitMix64(u64);

impl SplitMix64 {
    /// A generator from a seed.
    pub fn new(seed: u64) -> Self {
        SplitMix64(seed)
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// A value in `0..n` (0 when `n` is 0).
    pub fn below(&mut self, n: usize) -> usize {
        if n == 0 {
            return 0;
        }
        (self.next_u64() % (n as u64)) as usize
    }

    /// A value in `lo..=hi`.
    pub fn between(&mut self, lo: u32, hi: u32) -> u32 {
        if hi <= lo {
            return lo;
        }
        lo + (self.next_u64() % u64::from(hi - lo + 1)) as u32
    }

    /// Exactly `round(n * percent / 100)` distinct indexes of `0..n`, as a membership mask.
    pub fn pick_percent(&mut self, n: usize, percent: u32) -> Vec<bool> {
        let want = ((n as u64 * u64::from(percent.min(100)) + 50) / 100) as usize;
        let mut order: Vec<usize> = (0..n).collect();
        // Partial Fisher-Yates: the first `want` entries are a uniform sample.
        for i in 0..want.min(n) {
            let j = i + self.below(n - i);
            order.swap(i, j);
        }
        let mut mask = vec![false; n];
        for &i in order.iter().take(want) {
            if let Some(m) = mask.get_mut(i) {
                *m = true;
            }
        }
        mask
    }
}

fn width(n: usize) -> usize {
    n.saturating_sub(1).max(1).to_string().len().max(2)
}

struct Names {
    site_w: usize,
    node_w: usize,
    pool_w: usize,
}

impl Names {
    fn new(spec: &ScaleSpec) -> Self {
        Names {
            site_w: width(spec.sites).max(3),
            node_w: width(spec.nodes_per_site),
            pool_w: width(spec.pools),
        }
    }
    fn site(&self, i: usize) -> String {
        format!("site-{i:0w$}", w = self.site_w)
    }
    fn node(&self, i: usize, k: usize) -> String {
        format!("node-{i:0w$}-{k:0v$}", w = self.site_w, v = self.node_w)
    }
    fn pool(&self, j: usize) -> String {
        format!("pool-{j:0w$}", w = self.pool_w)
    }
}

fn node_cidr(i: usize) -> String {
    format!("10.{}.{}.0/24", (i / 256) % 128, i % 256)
}

fn node_ip(i: usize, k: usize) -> String {
    format!("10.{}.{}.{}", (i / 256) % 128, i % 256, (k + 10) % 256)
}

/// The `k`-th /24 of Site `i`'s pod block (`k = None`: the block itself, a /19). The first 1,024
/// Sites take 10.128.0.0/9; further Sites take 11.0.0.0/8, 12.0.0.0/8, ... (2,048 blocks each),
/// so no two Sites' blocks overlap however many there are.
fn pod_cidr(i: usize, k: Option<usize>) -> String {
    let i = i as u32;
    let base: u32 = if i < 1024 {
        0x0A80_0000 + (i << 13)
    } else {
        let j = i - 1024;
        ((11 + j / 2048) << 24) + ((j % 2048) << 13)
    };
    match k {
        None => format!("{}/19", std::net::Ipv4Addr::from(base)),
        Some(k) => format!(
            "{}/24",
            std::net::Ipv4Addr::from(base + ((k as u32 % 32) << 8))
        ),
    }
}

fn external_ip(serial: usize) -> String {
    std::net::Ipv4Addr::from(0xC612_0000u32 + (serial as u32 % 0x1_FFFF) + 1).to_string()
}

fn cap_suffix(caps: &[Option<u32>], i: usize) -> String {
    match caps.get(i).copied().flatten() {
        Some(c) => format!(", tunnelMTU: {c}"),
        None => String::new(),
    }
}

/// Caps for `n` objects: `percent`% of them get a value in 1300..=1450.
fn caps(rng: &mut SplitMix64, n: usize, percent: u32) -> Vec<Option<u32>> {
    let mask = rng.pick_percent(n, percent);
    mask.into_iter()
        .map(|m| m.then(|| rng.between(1300, 1450)))
        .collect()
}

/// The Site of pool `j` (pools spread evenly, so each lands in its own Site and, with the
/// standard shape, in its own mesh group).
fn pool_site(sites: usize, pools: usize, j: usize) -> usize {
    (j * sites).checked_div(pools).unwrap_or(0)
}

/// Generates the cluster described by `spec` as a multi-document YAML stream.
pub fn generate(spec: &ScaleSpec) -> String {
    let names = Names::new(spec);
    let mut rng = SplitMix64::new(spec.seed);
    let pools = spec.pools.min(spec.sites);
    let gpp = spec.gateways_per_pool.min(spec.nodes_per_site);
    let mut out = String::with_capacity(spec.node_count() * 420 + spec.sites * 600);

    // Which Sites hold which pool's gateways.
    let mut pool_of_site: Vec<Option<usize>> = vec![None; spec.sites];
    for j in 0..pools {
        if let Some(slot) = pool_of_site.get_mut(pool_site(spec.sites, pools, j)) {
            *slot = Some(j);
        }
    }

    // Sites.
    let site_caps = caps(&mut rng, spec.sites, spec.capped_percent);
    for i in 0..spec.sites {
        let _ = write!(
            out,
            "---\napiVersion: {API_GROUP}/{API_VERSION}\nkind: Site\nmetadata: {{name: {}}}\nspec: {{nodeCidrs: [{}], podCidrAssignments: [{{cidrBlocks: [{}]}}]{}}}\n",
            names.site(i),
            node_cidr(i),
            pod_cidr(i, None),
            cap_suffix(&site_caps, i)
        );
    }

    // Nodes.
    let jumbo = rng.pick_percent(spec.node_count(), spec.jumbo_percent);
    for i in 0..spec.sites {
        for k in 0..spec.nodes_per_site {
            let serial = i * spec.nodes_per_site + k;
            let gateway_pool = pool_of_site.get(i).copied().flatten().filter(|_| k < gpp);
            let _ = write!(
                out,
                "---\napiVersion: v1\nkind: Node\nmetadata:\n  name: {}\n  labels: {{net.unbounded-cloud.io/site: {}",
                names.node(i, k),
                names.site(i)
            );
            if let Some(j) = gateway_pool {
                let _ = write!(out, ", {GATEWAY_SELECTOR_KEY}: {}", names.pool(j));
            }
            out.push_str("}\n");
            if jumbo.get(serial).copied().unwrap_or(false) {
                out.push_str("  annotations: {mtu.unbounded-cloud.io/underlay-mtu: \"9000\"}\n");
            }
            let _ = write!(
                out,
                "spec: {{podCIDRs: [{}]}}\nstatus: {{addresses: [{{type: InternalIP, address: {}}}",
                pod_cidr(i, Some(k)),
                node_ip(i, k)
            );
            if let Some(j) = gateway_pool {
                let _ = write!(
                    out,
                    ", {{type: ExternalIP, address: {}}}",
                    external_ip(j * gpp + k)
                );
            }
            out.push_str("]}\n");
        }
    }

    // Mesh SitePeerings: consecutive groups of `mesh_group` Sites.
    let groups: Vec<(usize, usize)> = if spec.mesh_group <= 1 {
        Vec::new()
    } else {
        (0..spec.sites)
            .step_by(spec.mesh_group)
            .map(|start| (start, (start + spec.mesh_group).min(spec.sites)))
            .filter(|(a, b)| b - a >= 2)
            .collect()
    };
    let mesh_caps = caps(&mut rng, groups.len(), spec.capped_percent);
    for (g, (a, b)) in groups.iter().enumerate() {
        let members: Vec<String> = (*a..*b).map(|i| names.site(i)).collect();
        let _ = write!(
            out,
            "---\napiVersion: {API_GROUP}/{API_VERSION}\nkind: SitePeering\nmetadata: {{name: mesh-{g:0w$}}}\nspec: {{sites: [{}], meshNodes: true{}}}\n",
            members.join(", "),
            cap_suffix(&mesh_caps, g),
            w = names.site_w
        );
    }

    // GatewayPools: External, selected by label, with ExternalIPs on their gateways.
    let pool_caps = caps(&mut rng, pools, spec.capped_percent);
    for j in 0..pools {
        let _ = write!(
            out,
            "---\napiVersion: {API_GROUP}/{API_VERSION}\nkind: GatewayPool\nmetadata: {{name: {}}}\nspec: {{type: External, nodeSelector: {{{GATEWAY_SELECTOR_KEY}: {}}}{}}}\n",
            names.pool(j),
            names.pool(j),
            cap_suffix(&pool_caps, j)
        );
    }

    // One assignment per Site: its home pool (the pool of its part of the cluster) and another.
    let asg_caps = caps(&mut rng, spec.sites, spec.capped_percent);
    for i in 0..spec.sites {
        let mut chosen: Vec<usize> = Vec::new();
        if pools > 0 {
            let home = (i * pools / spec.sites.max(1)).min(pools - 1);
            chosen.push(home);
            if pools > 1 {
                let other = (home + 1 + rng.below(pools - 1)) % pools;
                chosen.push(other);
            }
        }
        let listed: Vec<String> = chosen.iter().map(|j| names.pool(*j)).collect();
        let _ = write!(
            out,
            "---\napiVersion: {API_GROUP}/{API_VERSION}\nkind: SiteGatewayPoolAssignment\nmetadata: {{name: assign-{}}}\nspec: {{sites: [{}], gatewayPools: [{}]{}}}\n",
            names.site(i),
            names.site(i),
            listed.join(", "),
            cap_suffix(&asg_caps, i)
        );
    }

    // Pool peerings: a ring, then chords between pools not adjacent on it.
    let mut pairs: Vec<(usize, usize)> = Vec::new();
    if pools == 2 {
        pairs.push((0, 1));
    } else if pools > 2 {
        for j in 0..pools {
            pairs.push((j, (j + 1) % pools));
        }
    }
    let ring = pairs.len();
    let mut attempts = 0usize;
    while pairs.len() < ring + spec.chords && pools > 3 && attempts < 1000 * (spec.chords + 1) {
        attempts += 1;
        let a = rng.below(pools);
        let b = rng.below(pools);
        let (a, b) = (a.min(b), a.max(b));
        let adjacent = b - a <= 1 || (a == 0 && b == pools - 1);
        if adjacent || pairs.iter().any(|p| (p.0.min(p.1), p.0.max(p.1)) == (a, b)) {
            continue;
        }
        pairs.push((a, b));
    }
    let pp_caps = caps(&mut rng, pairs.len(), spec.capped_percent);
    for (n, (a, b)) in pairs.iter().enumerate() {
        let name = if n < ring {
            format!("ring-{n:0w$}", w = names.pool_w)
        } else {
            format!("chord-{:0w$}", n - ring, w = names.pool_w)
        };
        let _ = write!(
            out,
            "---\napiVersion: {API_GROUP}/{API_VERSION}\nkind: GatewayPoolPeering\nmetadata: {{name: {name}}}\nspec: {{gatewayPools: [{}, {}]{}}}\n",
            names.pool(*a),
            names.pool(*b),
            cap_suffix(&pp_caps, n)
        );
    }
    out
}

/// Site `i` without caps: its node CIDR and its pod block.
fn write_site(out: &mut String, names: &Names, i: usize) {
    let _ = write!(
        out,
        "---\napiVersion: {API_GROUP}/{API_VERSION}\nkind: Site\nmetadata: {{name: {}}}\nspec: {{nodeCidrs: [{}], podCidrAssignments: [{{cidrBlocks: [{}]}}]}}\n",
        names.site(i),
        node_cidr(i),
        pod_cidr(i, None)
    );
}

/// The first node of Site `i` as a worker: no pool label, an InternalIP only.
fn write_worker(out: &mut String, names: &Names, i: usize) {
    let _ = write!(
        out,
        "---\napiVersion: v1\nkind: Node\nmetadata:\n  name: {}\n  labels: {{net.unbounded-cloud.io/site: {}}}\nspec: {{podCIDRs: [{}]}}\nstatus: {{addresses: [{{type: InternalIP, address: {}}}]}}\n",
        names.node(i, 0),
        names.site(i),
        pod_cidr(i, Some(0)),
        node_ip(i, 0)
    );
}

/// External pool `j`, selecting the gateways labelled with its name.
fn write_external_pool(out: &mut String, names: &Names, j: usize) {
    let _ = write!(
        out,
        "---\napiVersion: {API_GROUP}/{API_VERSION}\nkind: GatewayPool\nmetadata: {{name: {}}}\nspec: {{type: External, nodeSelector: {{{GATEWAY_SELECTOR_KEY}: {}}}}}\n",
        names.pool(j),
        names.pool(j)
    );
}

/// One mesh SitePeering of `n` Sites, one node per Site.
pub fn mesh_peering(n: usize) -> String {
    let names = Names {
        site_w: width(n).max(3),
        node_w: 2,
        pool_w: 2,
    };
    let mut out = String::with_capacity(n * 600);
    for i in 0..n {
        write_site(&mut out, &names, i);
        write_worker(&mut out, &names, i);
    }
    let members: Vec<String> = (0..n).map(|i| names.site(i)).collect();
    let _ = write!(
        out,
        "---\napiVersion: {API_GROUP}/{API_VERSION}\nkind: SitePeering\nmetadata: {{name: mesh}}\nspec: {{sites: [{}], meshNodes: true}}\n",
        members.join(", ")
    );
    out
}

/// One GatewayPoolPeering of `n` External pools with one gateway each, all in one Site.
pub fn pool_peering(n: usize) -> String {
    let names = Names {
        site_w: 3,
        node_w: width(n),
        pool_w: width(n),
    };
    let mut out = String::with_capacity(n * 700 + 400);
    let _ = write!(
        out,
        "---\napiVersion: {API_GROUP}/{API_VERSION}\nkind: Site\nmetadata: {{name: {}}}\nspec: {{nodeCidrs: [10.0.0.0/16], podCidrAssignments: [{{cidrBlocks: [10.128.0.0/12]}}]}}\n",
        names.site(0)
    );
    for j in 0..n {
        write_external_pool(&mut out, &names, j);
        let pod = std::net::Ipv4Addr::from(0x0A80_0000u32 + ((j as u32 % 4096) << 8));
        let ip = std::net::Ipv4Addr::from(0x0A00_0000u32 + (j as u32 % 65_000) + 1);
        let _ = write!(
            out,
            "---\napiVersion: v1\nkind: Node\nmetadata:\n  name: {}\n  labels: {{net.unbounded-cloud.io/site: {}, {GATEWAY_SELECTOR_KEY}: {}}}\nspec: {{podCIDRs: [{pod}/24]}}\nstatus: {{addresses: [{{type: InternalIP, address: {ip}}}, {{type: ExternalIP, address: {}}}]}}\n",
            names.node(0, j),
            names.site(0),
            names.pool(j),
            external_ip(j)
        );
    }
    let members: Vec<String> = (0..n).map(|j| names.pool(j)).collect();
    let _ = write!(
        out,
        "---\napiVersion: {API_GROUP}/{API_VERSION}\nkind: GatewayPoolPeering\nmetadata: {{name: peering}}\nspec: {{gatewayPools: [{}]}}\n",
        members.join(", ")
    );
    out
}

/// A transit chain: Site `site-000` (one worker) is assigned to the first of `pools` External
/// pools, the last Site (one worker) to the last pool, and consecutive pools are joined by
/// two-member GatewayPoolPeerings. Pool `j` has `gateways_per_pool` gateways, all in their own
/// worker-less Site `j + 1`. Every gateway of a pool selects every gateway of the next pool as an
/// equal-cost next hop, so the first worker's route to the last Site has
/// `gateways_per_pool ^ pools` forwarding paths: the shape that makes enumerating them hopeless
/// and counting them a dynamic program.
pub fn transit_chain(pools: usize, gateways_per_pool: usize) -> String {
    let sites = pools + 2;
    let names = Names {
        site_w: width(sites).max(3),
        node_w: width(gateways_per_pool.max(1)),
        pool_w: width(pools),
    };
    let mut out = String::with_capacity(sites * 600 + pools * gateways_per_pool * 500);
    for i in 0..sites {
        write_site(&mut out, &names, i);
    }
    // The two workers at the ends of the chain.
    for i in [0, sites - 1] {
        write_worker(&mut out, &names, i);
    }
    for j in 0..pools {
        write_external_pool(&mut out, &names, j);
        let site = j + 1;
        for k in 0..gateways_per_pool {
            let _ = write!(
                out,
                "---\napiVersion: v1\nkind: Node\nmetadata:\n  name: {}\n  labels: {{net.unbounded-cloud.io/site: {}, {GATEWAY_SELECTOR_KEY}: {}}}\nspec: {{podCIDRs: [{}]}}\nstatus: {{addresses: [{{type: InternalIP, address: {}}}, {{type: ExternalIP, address: {}}}]}}\n",
                names.node(site, k),
                names.site(site),
                names.pool(j),
                pod_cidr(site, Some(k)),
                node_ip(site, k),
                external_ip(j * gateways_per_pool + k)
            );
        }
        if j + 1 < pools {
            let _ = write!(
                out,
                "---\napiVersion: {API_GROUP}/{API_VERSION}\nkind: GatewayPoolPeering\nmetadata: {{name: link-{j:0w$}}}\nspec: {{gatewayPools: [{}, {}]}}\n",
                names.pool(j),
                names.pool(j + 1),
                w = names.pool_w
            );
        }
    }
    if pools > 0 {
        for (site, pool) in [(0, 0), (sites - 1, pools - 1)] {
            let _ = write!(
                out,
                "---\napiVersion: {API_GROUP}/{API_VERSION}\nkind: SiteGatewayPoolAssignment\nmetadata: {{name: assign-{}}}\nspec: {{sites: [{}], gatewayPools: [{}]}}\n",
                names.site(site),
                names.site(site),
                names.pool(pool)
            );
        }
    }
    out
}
