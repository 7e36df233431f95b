//! Test kit (tests and benches only): proptest strategies for random topologies and a seeded
//! scale generator.
//!
//! [`arb_spec`] generates a structured [`TopoSpec`] (small: 1–5 Sites, 0–4 pools, 1–4 nodes per
//! Site) that tests can mutate before rendering it with [`TopoSpec::to_yaml`];
//! [`arb_manifests`] is the rendered multi-document YAML stream. Names sort in index order
//! (`s0`..`s4`, `p0`..`p3`, `n<site>-<j>`), so arena IDs follow the spec's indexes.
//!
//! Addressing: Site `i` has nodeCidrs `10.<i>.0.0/16` and `fd00:<i>::/64` and pod block
//! `10.<100+i>.0.0/16`; its node `j` has podCIDR `10.<100+i>.<j>.0/24` and, by its address
//! family ([`Family`]), InternalIP `10.<i>.0.<j+1>` and/or `fd00:<i>::<j+1>` and (when it has
//! one) ExternalIP `198.51.100.<10i+j+1>` and/or `2001:db8::<10i+j+1>`. Pool `k` selects
//! `pool: p<k>` and may route `172.<16+k>.0.0/16`.
//!
//! Beyond the basic shape, the strategy sometimes produces what the spec singles out: Sites that
//! share the pod block [`SHARED_BLOCK`] (identical prefixes merge), `localCidrs` that cut a
//! learned prefix partly or entirely, members listed twice, disabled relationships, `tunnelMTU`
//! values of 0 or out of range (fail closed), explicit protocols (`None` included),
//! `underlay-mtu-max` annotations (one invalid), External-pool nodes without an ExternalIP,
//! GatewayPoolNodes with published values, and the shapes of decision D12: Nodes whose
//! `gateway-pool` label names a missing pool (`"true"`, as live gateways carry it) with and
//! without a fallback through the pool's selector or `status.nodes`, pools whose membership is
//! their `status.nodes`, workers behind NAT in Sites that reach External pools across public
//! addresses (`NodeAddress` routes, some with a second InternalIP), Sites that do not manage
//! their CNI with gateways inside them, and `0.0.0.0/0` routed CIDRs (`W-DEFAULT-ROUTE`).
// Test-only code: plain indexing and arithmetic on small generated values.
#![allow(
    clippy::indexing_slicing,
    clippy::arithmetic_side_effects,
    clippy::unwrap_used,
    clippy::expect_used
)]

pub mod scale;

use proptest::prelude::*;
use proptest::test_runner::{Config as ProptestConfig, FileFailurePersistence};
use std::fmt::Write as _;
use topology_core::vocab::POOL_LABEL_KEY;

/// A proptest configuration with `cases` cases whose failures persist in `file` (callers pass
/// `concat!(env!("CARGO_MANIFEST_DIR"), "/../proptest-regressions/<name>.txt")`, so regressions
/// land in the repository's `proptest-regressions/` directory).
pub fn proptest_config(cases: u32, file: &'static str) -> ProptestConfig {
    ProptestConfig {
        cases,
        failure_persistence: Some(Box::new(FileFailurePersistence::Direct(file))),
        max_shrink_iters: 1024,
        ..ProptestConfig::default()
    }
}

/// A Site of a generated topology.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SiteSpec {
    /// `spec.tunnelMTU`.
    pub cap: Option<u32>,
    /// `spec.manageCniPlugin`.
    pub manage_cni: bool,
    /// Also holds the shared pod block `10.200.0.0/16` (identical prefixes of several Sites
    /// merge into one route).
    pub shared_block: bool,
    /// `spec.localCidrs`.
    pub local_cidrs: Vec<String>,
    /// `spec.tunnelProtocol`.
    pub protocol: Option<&'static str>,
}

/// A GatewayPool.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PoolSpec {
    /// `Internal` (else `External`).
    pub internal: bool,
    /// Routes `172.<16+k>.0.0/16`.
    pub routed: bool,
    /// `spec.tunnelMTU`.
    pub cap: Option<u32>,
    /// `spec.tunnelProtocol`.
    pub protocol: Option<&'static str>,
    /// Also lists `0.0.0.0/0` first in `routedCidrs` (dropped with `W-DEFAULT-ROUTE`).
    pub default_route: bool,
    /// Its membership is `status.nodes`: the nodes carrying its selector label, each with its
    /// Site and addresses (a non-empty status overrides the selector).
    pub status_nodes: bool,
}

/// The address families of a node's InternalIPs and ExternalIPs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Family {
    /// IPv4 addresses only.
    V4,
    /// IPv6 addresses only: its underlay address is IPv6 whatever the tunnel family.
    V6,
    /// Both, IPv4 first.
    Dual,
    /// IPv4 InternalIPs, IPv6 ExternalIPs (a NAT whose public side is IPv6).
    V6External,
}

impl Family {
    fn internal_v4(self) -> bool {
        self != Family::V6
    }
    fn internal_v6(self) -> bool {
        matches!(self, Family::V6 | Family::Dual)
    }
    fn external_v4(self) -> bool {
        matches!(self, Family::V4 | Family::Dual)
    }
    fn external_v6(self) -> bool {
        self != Family::V4
    }
}

/// A Node's `net.unbounded-cloud.io/gateway-pool` label.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PoolLabel {
    /// Names pool `p<k>` (which may not exist when `k` is out of range).
    Pool(usize),
    /// `"true"`: names no pool, so membership falls through to status and selectors.
    True,
    /// `""`: a worker, whatever selectors or status say.
    Empty,
}

/// A SitePeering.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PeeringSpec {
    /// Member Site indexes (may repeat).
    pub sites: Vec<usize>,
    /// `meshNodes`.
    pub mesh: bool,
    /// `tunnelMTU`.
    pub cap: Option<u32>,
    /// `enabled`.
    pub enabled: bool,
    /// `tunnelProtocol`.
    pub protocol: Option<&'static str>,
}

/// A SiteGatewayPoolAssignment.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AssignmentSpec {
    /// Member Site indexes.
    pub sites: Vec<usize>,
    /// Member pool indexes.
    pub pools: Vec<usize>,
    /// `tunnelMTU`.
    pub cap: Option<u32>,
    /// `enabled`.
    pub enabled: bool,
    /// `tunnelProtocol`.
    pub protocol: Option<&'static str>,
}

/// A GatewayPoolPeering.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PoolPeeringSpec {
    /// Member pool indexes.
    pub pools: Vec<usize>,
    /// `tunnelMTU`.
    pub cap: Option<u32>,
    /// `enabled`.
    pub enabled: bool,
    /// `tunnelProtocol`.
    pub protocol: Option<&'static str>,
}

/// A v1 Node.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NodeSpec {
    /// Its Site index (addresses are taken from it).
    pub site: usize,
    /// Index within the Site.
    pub index: usize,
    /// Labelled `pool: p<k>` (pool `k`'s selector label).
    pub pool: Option<usize>,
    /// Its `gateway-pool` label, if any.
    pub pool_label: Option<PoolLabel>,
    /// Has a second InternalIP, `10.<i>.1.<j+1>` (two `NodeAddress` routes when NAT'd; only for
    /// IPv4-only nodes).
    pub second_ip: bool,
    /// The families of its addresses.
    pub family: Family,
    /// Has an ExternalIP.
    pub external_ip: bool,
    /// `mtu.unbounded-cloud.io/underlay-mtu`.
    pub underlay: Option<u32>,
    /// `mtu.unbounded-cloud.io/underlay-mtu-max`.
    pub underlay_max: Option<u32>,
    /// A GatewayPoolNode with these published values (prefix, MTU), when `Some`.
    pub published: Option<Vec<(String, u32)>>,
    /// `mtu.unbounded-cloud.io/path-mtu` entries: the peer by (Site, index), which may name no
    /// node, and the value as written (some out of range: `E-PATH-MTU`, counted as 576).
    pub path_mtu: Vec<((usize, usize), u32)>,
}

impl NodeSpec {
    /// The node's name.
    pub fn name(&self) -> String {
        format!("n{}-{}", self.site, self.index)
    }
    /// Its InternalIPs.
    pub fn internal_ips(&self) -> Vec<String> {
        let mut v = Vec::new();
        if self.family.internal_v4() {
            v.push(format!("10.{}.0.{}", self.site, self.index + 1));
            if self.second_ip && self.family == Family::V4 {
                v.push(format!("10.{}.1.{}", self.site, self.index + 1));
            }
        }
        if self.family.internal_v6() {
            v.push(format!("fd00:{}::{}", self.site, self.index + 1));
        }
        v
    }
    /// Its ExternalIPs (rendered only when it has them).
    pub fn external_ips(&self) -> Vec<String> {
        let host = 10 * self.site + self.index + 1;
        let mut v = Vec::new();
        if self.family.external_v4() {
            v.push(format!("198.51.100.{host}"));
        }
        if self.family.external_v6() {
            v.push(format!("2001:db8::{host}"));
        }
        v
    }
}

/// A generated topology, before rendering.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TopoSpec {
    /// Sites `s<i>`.
    pub sites: Vec<SiteSpec>,
    /// Pools `p<k>`.
    pub pools: Vec<PoolSpec>,
    /// SitePeerings `sp<i>`.
    pub peerings: Vec<PeeringSpec>,
    /// Assignments `sa<i>`.
    pub assignments: Vec<AssignmentSpec>,
    /// GatewayPoolPeerings `pp<i>`.
    pub pool_peerings: Vec<PoolPeeringSpec>,
    /// Nodes, by Site then index.
    pub nodes: Vec<NodeSpec>,
}

fn opt_fields(out: &mut String, cap: Option<u32>, protocol: Option<&str>) {
    if let Some(c) = cap {
        let _ = writeln!(out, "  tunnelMTU: {c}");
    }
    if let Some(p) = protocol {
        let _ = writeln!(out, "  tunnelProtocol: {p}");
    }
}

fn list(out: &mut String, key: &str, items: impl IntoIterator<Item = String>) {
    list_at(out, "  ", key, items);
}

fn list_at(out: &mut String, indent: &str, key: &str, items: impl IntoIterator<Item = String>) {
    let _ = writeln!(out, "{indent}{key}:");
    for i in items {
        let _ = writeln!(out, "{indent}  - {i}");
    }
}

impl TopoSpec {
    /// Site `i`'s name.
    pub fn site_name(i: usize) -> String {
        format!("s{i}")
    }
    /// Pool `k`'s name.
    pub fn pool_name(k: usize) -> String {
        format!("p{k}")
    }
    /// Site `i`'s node CIDR.
    pub fn node_cidr(i: usize) -> String {
        format!("10.{i}.0.0/16")
    }
    /// Site `i`'s IPv6 node CIDR.
    pub fn node_cidr_v6(i: usize) -> String {
        format!("fd00:{i}::/64")
    }
    /// Site `i`'s pod block.
    pub fn pod_block(i: usize) -> String {
        format!("10.{}.0.0/16", 100 + i)
    }
    /// Pool `k`'s routed CIDR.
    pub fn routed_cidr(k: usize) -> String {
        format!("172.{}.0.0/16", 16 + k)
    }

    /// The documents of the stream, one string each (without separators), in a fixed order.
    pub fn documents(&self) -> Vec<String> {
        let mut docs = Vec::new();
        for (i, s) in self.sites.iter().enumerate() {
            let mut d = String::new();
            let _ = writeln!(d, "apiVersion: net.unbounded-cloud.io/v1alpha1\nkind: Site");
            let _ = writeln!(d, "metadata:\n  name: {}\nspec:", Self::site_name(i));
            list(
                &mut d,
                "nodeCidrs",
                [Self::node_cidr(i), Self::node_cidr_v6(i)],
            );
            let _ = writeln!(
                d,
                "  podCidrAssignments:\n    - cidrBlocks:\n        - {}",
                Self::pod_block(i)
            );
            if s.shared_block {
                let _ = writeln!(d, "        - {SHARED_BLOCK}");
            }
            let _ = writeln!(d, "  manageCniPlugin: {}", s.manage_cni);
            if !s.local_cidrs.is_empty() {
                list(&mut d, "localCidrs", s.local_cidrs.iter().cloned());
            }
            opt_fields(&mut d, s.cap, s.protocol);
            docs.push(d);
        }
        for (k, p) in self.pools.iter().enumerate() {
            let mut d = String::new();
            let _ = writeln!(
                d,
                "apiVersion: net.unbounded-cloud.io/v1alpha1\nkind: GatewayPool"
            );
            let _ = writeln!(d, "metadata:\n  name: {}\nspec:", Self::pool_name(k));
            let _ = writeln!(
                d,
                "  type: {}",
                if p.internal { "Internal" } else { "External" }
            );
            let _ = writeln!(d, "  nodeSelector:\n    pool: p{k}");
            let mut routed = Vec::new();
            if p.default_route {
                routed.push("0.0.0.0/0".to_string());
            }
            if p.routed {
                routed.push(Self::routed_cidr(k));
            }
            if !routed.is_empty() {
                list(&mut d, "routedCidrs", routed);
            }
            opt_fields(&mut d, p.cap, p.protocol);
            let members: Vec<&NodeSpec> = self.nodes.iter().filter(|n| n.pool == Some(k)).collect();
            if p.status_nodes && !members.is_empty() {
                let _ = writeln!(d, "status:\n  nodes:");
                for n in members {
                    let _ = writeln!(
                        d,
                        "    - name: {}\n      siteName: {}",
                        n.name(),
                        Self::site_name(n.site)
                    );
                    list_at(&mut d, "      ", "internalIPs", n.internal_ips());
                    if n.external_ip {
                        list_at(&mut d, "      ", "externalIPs", n.external_ips());
                    }
                }
            }
            docs.push(d);
        }
        for (i, r) in self.peerings.iter().enumerate() {
            let mut d = String::new();
            let _ = writeln!(
                d,
                "apiVersion: net.unbounded-cloud.io/v1alpha1\nkind: SitePeering"
            );
            let _ = writeln!(d, "metadata:\n  name: sp{i}\nspec:");
            let _ = writeln!(d, "  enabled: {}\n  meshNodes: {}", r.enabled, r.mesh);
            list(&mut d, "sites", r.sites.iter().map(|s| Self::site_name(*s)));
            opt_fields(&mut d, r.cap, r.protocol);
            docs.push(d);
        }
        for (i, r) in self.assignments.iter().enumerate() {
            let mut d = String::new();
            let _ = writeln!(
                d,
                "apiVersion: net.unbounded-cloud.io/v1alpha1\nkind: SiteGatewayPoolAssignment"
            );
            let _ = writeln!(d, "metadata:\n  name: sa{i}\nspec:");
            let _ = writeln!(d, "  enabled: {}", r.enabled);
            list(&mut d, "sites", r.sites.iter().map(|s| Self::site_name(*s)));
            list(
                &mut d,
                "gatewayPools",
                r.pools.iter().map(|p| Self::pool_name(*p)),
            );
            opt_fields(&mut d, r.cap, r.protocol);
            docs.push(d);
        }
        for (i, r) in self.pool_peerings.iter().enumerate() {
            let mut d = String::new();
            let _ = writeln!(
                d,
                "apiVersion: net.unbounded-cloud.io/v1alpha1\nkind: GatewayPoolPeering"
            );
            let _ = writeln!(d, "metadata:\n  name: pp{i}\nspec:");
            let _ = writeln!(d, "  enabled: {}", r.enabled);
            list(
                &mut d,
                "gatewayPools",
                r.pools.iter().map(|p| Self::pool_name(*p)),
            );
            opt_fields(&mut d, r.cap, r.protocol);
            docs.push(d);
        }
        for n in &self.nodes {
            let mut d = String::new();
            let _ = writeln!(
                d,
                "apiVersion: v1\nkind: Node\nmetadata:\n  name: {}",
                n.name()
            );
            if n.pool.is_some() || n.pool_label.is_some() {
                let _ = writeln!(d, "  labels:");
            }
            if let Some(k) = n.pool {
                let _ = writeln!(d, "    pool: p{k}");
            }
            match n.pool_label {
                Some(PoolLabel::Pool(k)) => {
                    let _ = writeln!(d, "    {POOL_LABEL_KEY}: p{k}");
                }
                Some(PoolLabel::True) => {
                    let _ = writeln!(d, "    {POOL_LABEL_KEY}: \"true\"");
                }
                Some(PoolLabel::Empty) => {
                    let _ = writeln!(d, "    {POOL_LABEL_KEY}: \"\"");
                }
                None => {}
            }
            if n.underlay.is_some() || n.underlay_max.is_some() || !n.path_mtu.is_empty() {
                let _ = writeln!(d, "  annotations:");
            }
            if !n.path_mtu.is_empty() {
                let entries: Vec<String> = n
                    .path_mtu
                    .iter()
                    .map(|((s, i), m)| format!("n{s}-{i}={m}"))
                    .collect();
                let _ = writeln!(
                    d,
                    "    mtu.unbounded-cloud.io/path-mtu: \"{}\"",
                    entries.join(", ")
                );
            }
            if let Some(u) = n.underlay {
                let _ = writeln!(d, "    mtu.unbounded-cloud.io/underlay-mtu: \"{u}\"");
            }
            if let Some(u) = n.underlay_max {
                let _ = writeln!(d, "    mtu.unbounded-cloud.io/underlay-mtu-max: \"{u}\"");
            }
            let _ = writeln!(
                d,
                "spec:\n  podCIDRs:\n    - 10.{}.{}.0/24",
                100 + n.site,
                n.index
            );
            let _ = writeln!(d, "status:\n  addresses:");
            for ip in n.internal_ips() {
                let _ = writeln!(d, "    - type: InternalIP\n      address: {ip}");
            }
            if n.external_ip {
                for ip in n.external_ips() {
                    let _ = writeln!(d, "    - type: ExternalIP\n      address: {ip}");
                }
            }
            docs.push(d);
            if let Some(pubs) = &n.published {
                let mut d = String::new();
                let _ = writeln!(
                    d,
                    "apiVersion: net.unbounded-cloud.io/v1alpha1\nkind: GatewayPoolNode"
                );
                let json: Vec<String> = pubs
                    .iter()
                    .map(|(p, m)| format!("\\\"{p}\\\": {m}"))
                    .collect();
                let _ = writeln!(
                    d,
                    "metadata:\n  name: {}\n  annotations:\n    mtu.unbounded-cloud.io/forwarding-mtus: \"{{{}}}\"",
                    n.name(),
                    json.join(", ")
                );
                let _ = writeln!(d, "spec:\n  nodeName: {}", n.name());
                docs.push(d);
            }
        }
        docs
    }

    /// The multi-document YAML stream.
    pub fn to_yaml(&self) -> String {
        join_documents(&self.documents())
    }
}

/// Joins documents into one YAML stream.
pub fn join_documents(docs: &[String]) -> String {
    let mut out = String::new();
    for d in docs {
        out.push_str("---\n");
        out.push_str(d);
    }
    out
}

/// The pod block several Sites may share.
pub const SHARED_BLOCK: &str = "10.200.0.0/16";

/// A `tunnelMTU`: mostly interesting valid values, sometimes any valid value, rarely `0`
/// (unset, with a note) or an invalid one (fails closed to 576).
fn arb_cap() -> impl Strategy<Value = u32> {
    prop_oneof![
        30 => prop::sample::select(vec![576u32, 1200, 1280, 1300, 1350, 1380, 1400, 1420, 1450, 1480, 1500, 9000]),
        10 => 576u32..=9000,
        1 => prop::sample::select(vec![0u32, 100, 9001, 65535]),
    ]
}

fn arb_opt_cap(p: f64) -> impl Strategy<Value = Option<u32>> {
    prop::option::weighted(p, arb_cap())
}

fn arb_protocol() -> impl Strategy<Value = Option<&'static str>> {
    prop::option::weighted(
        0.15,
        prop::sample::select(vec!["WireGuard", "GENEVE", "VXLAN", "IPIP", "None", "Auto"]),
    )
}

fn arb_site(ns: usize, np: usize) -> impl Strategy<Value = SiteSpec> {
    let local = prop_oneof![
        (0..ns).prop_map(|k| format!("10.{}.0.0/17", 100 + k)),
        (0..ns).prop_map(|k| format!("10.{}.0.0/24", 100 + k)),
        (0..ns).prop_map(|k| format!("10.{k}.0.0/18")),
        (0..np.max(1)).prop_map(|k| format!("172.{}.128.0/17", 16 + k)),
        (0..np.max(1)).prop_map(|k| format!("172.{}.0.0/16", 16 + k)),
    ];
    (
        arb_opt_cap(0.35),
        prop::bool::weighted(0.8),
        prop::option::weighted(0.15, prop::collection::vec(local, 1..=2)),
        arb_protocol(),
        prop::bool::weighted(0.08),
    )
        .prop_map(
            |(cap, manage_cni, locals, protocol, shared_block)| SiteSpec {
                cap,
                manage_cni,
                shared_block,
                local_cidrs: locals.unwrap_or_default(),
                protocol,
            },
        )
}

fn arb_pool() -> impl Strategy<Value = PoolSpec> {
    (
        prop::bool::weighted(0.3),
        prop::bool::weighted(0.4),
        arb_opt_cap(0.3),
        arb_protocol(),
        prop::bool::weighted(0.1),
        prop::bool::weighted(0.2),
    )
        .prop_map(
            |(internal, routed, cap, protocol, default_route, status_nodes)| PoolSpec {
                internal,
                routed,
                cap,
                protocol,
                default_route,
                status_nodes,
            },
        )
}

/// A `gateway-pool` label: mostly absent; otherwise `"true"` (a missing pool), an existing
/// pool, a pool that does not exist, or empty.
fn arb_pool_label(np: usize) -> impl Strategy<Value = Option<PoolLabel>> {
    prop::option::weighted(
        0.25,
        prop_oneof![
            4 => Just(PoolLabel::True),
            2 => (0..np.max(1)).prop_map(PoolLabel::Pool),
            1 => Just(PoolLabel::Pool(7)),
            1 => Just(PoolLabel::Empty),
        ],
    )
}

/// Every prefix a gateway may publish for: pod blocks, node CIDRs, routed CIDRs.
fn all_prefixes(ns: usize, np: usize) -> Vec<String> {
    let mut v = vec![SHARED_BLOCK.to_string()];
    for i in 0..ns {
        v.push(TopoSpec::pod_block(i));
        v.push(TopoSpec::node_cidr(i));
        v.push(TopoSpec::node_cidr_v6(i));
    }
    for k in 0..np {
        v.push(TopoSpec::routed_cidr(k));
    }
    v
}

fn arb_nodes(ns: usize, np: usize) -> impl Strategy<Value = Vec<NodeSpec>> {
    let prefixes = all_prefixes(ns, np);
    let published = prop::option::weighted(
        0.3,
        prop::collection::btree_map(
            prop::sample::select(prefixes),
            prop_oneof![
                2 => prop::sample::select(vec![1280u32, 1300, 1350, 1400, 1420, 1450, 1500]),
                1 => 576u32..=9000
            ],
            1..=4,
        ),
    );
    let node = (
        prop::option::weighted(0.55, 0..np.max(1)).prop_map(move |p| p.filter(|_| np > 0)),
        prop::bool::weighted(0.9),
        prop::option::weighted(0.5, prop::sample::select(vec![1280u32, 1500, 9000])),
        prop::option::weighted(0.08, prop::sample::select(vec![1400u32, 9000, 100])),
        published,
        arb_pool_label(np),
        prop::bool::weighted(0.1),
        prop_oneof![
            6 => Just(Family::V4),
            2 => Just(Family::V6),
            2 => Just(Family::Dual),
            1 => Just(Family::V6External),
        ],
        arb_path_mtu(ns),
    );
    prop::collection::vec(prop::collection::vec(node, 1..=4), ns).prop_map(|per_site| {
        let mut out = Vec::new();
        for (site, nodes) in per_site.into_iter().enumerate() {
            for (
                index,
                (
                    pool,
                    external_ip,
                    underlay,
                    underlay_max,
                    published,
                    pool_label,
                    second_ip,
                    family,
                    path_mtu,
                ),
            ) in nodes.into_iter().enumerate()
            {
                out.push(NodeSpec {
                    site,
                    index,
                    pool,
                    pool_label,
                    second_ip,
                    family,
                    external_ip,
                    underlay,
                    underlay_max,
                    published: pool.and(published).map(|m| m.into_iter().collect()),
                    path_mtu,
                });
            }
        }
        out
    })
}

/// A node's `path-mtu` entries: none for most nodes; otherwise one to three peers by (Site,
/// index), mostly nodes that exist, with values mostly below the underlays generated and
/// sometimes out of range.
fn arb_path_mtu(ns: usize) -> impl Strategy<Value = Vec<((usize, usize), u32)>> {
    let entry = (
        (0..ns.max(1), 0usize..5),
        prop_oneof![
            4 => prop::sample::select(vec![1200u32, 1280, 1300, 1400, 1450]),
            1 => prop::sample::select(vec![576u32, 9000, 100, 70000]),
        ],
    );
    prop_oneof![
        8 => Just(Vec::new()),
        2 => prop::collection::vec(entry, 1..=3),
    ]
}

/// Member indexes of a relationship: mostly distinct (at least `min` when there are enough),
/// occasionally with a member listed twice.
fn members(n: usize, min: usize) -> impl Strategy<Value = Vec<usize>> {
    let hi = n.clamp(1, 3);
    let lo = min.min(hi);
    (
        prop::sample::subsequence((0..n.max(1)).collect::<Vec<_>>(), lo..=hi),
        prop::bool::weighted(0.1),
    )
        .prop_map(move |(mut v, dup)| {
            if dup && let Some(x) = v.first().copied() {
                v.push(x);
            }
            v
        })
        .prop_shuffle()
}

/// A structured random topology (see the module documentation for its shape).
pub fn arb_spec() -> impl Strategy<Value = TopoSpec> {
    (
        1usize..=5,
        prop::sample::select(vec![0usize, 1, 2, 2, 3, 3, 3, 4, 4]),
    )
        .prop_flat_map(|(ns, np)| {
            let sites = prop::collection::vec(arb_site(ns, np), ns);
            let pools = prop::collection::vec(arb_pool(), np);
            let peering = (
                members(ns, 2),
                prop::bool::weighted(0.65),
                arb_opt_cap(0.35),
                prop::bool::weighted(0.9),
                arb_protocol(),
            )
                .prop_map(|(sites, mesh, cap, enabled, protocol)| PeeringSpec {
                    sites,
                    mesh,
                    cap,
                    enabled,
                    protocol,
                });
            let peerings = prop::collection::vec(peering, if ns > 1 { 0..=3 } else { 0..=0 });
            let assignment = (
                members(ns, 1).prop_map(|mut v| {
                    v.truncate(2);
                    v
                }),
                members(np, 1).prop_map(|mut v| {
                    v.truncate(2);
                    v
                }),
                arb_opt_cap(0.3),
                prop::bool::weighted(0.9),
                arb_protocol(),
            )
                .prop_map(|(sites, pools, cap, enabled, protocol)| AssignmentSpec {
                    sites,
                    pools,
                    cap,
                    enabled,
                    protocol,
                });
            let assignments = prop::collection::vec(assignment, if np > 0 { 0..=5 } else { 0..=0 });
            let pool_peering = (
                members(np, 2),
                arb_opt_cap(0.3),
                prop::bool::weighted(0.9),
                arb_protocol(),
            )
                .prop_map(|(pools, cap, enabled, protocol)| PoolPeeringSpec {
                    pools,
                    cap,
                    enabled,
                    protocol,
                });
            let pool_peerings =
                prop::collection::vec(pool_peering, if np > 1 { 1..=4 } else { 0..=0 });
            (
                sites,
                pools,
                peerings,
                assignments,
                pool_peerings,
                arb_nodes(ns, np),
            )
                .prop_map(
                    |(sites, pools, peerings, assignments, pool_peerings, nodes)| TopoSpec {
                        sites,
                        pools,
                        peerings,
                        assignments,
                        pool_peerings,
                        nodes,
                    },
                )
        })
}

/// A random topology as a multi-document YAML stream.
pub fn arb_manifests() -> impl Strategy<Value = String> {
    arb_spec().prop_map(|s| s.to_yaml())
}
