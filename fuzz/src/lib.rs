//! Structured inputs shared by the fuzz targets: a small topology of Sites, pools, peerings,
//! assignments, pool peerings and nodes (rendered through the test kit's YAML writer), and
//! what-if mutations naming its objects.

use arbitrary::Arbitrary;
use mtu_solver::whatif::{Input, Mutation};
use test_utils::testkit::{
    AssignmentSpec, Family, NodeSpec, PeeringSpec, PoolLabel, PoolPeeringSpec, PoolSpec,
    SHARED_BLOCK, SiteSpec, TopoSpec,
};
use topology_core::decode::decode;
use topology_core::vocab::Kind;

const MAX_SITES: usize = 6;
const MAX_POOLS: usize = 5;
const MAX_RELATIONS: usize = 6;
const MAX_MEMBERS: usize = 5;
const MAX_NODES: usize = 18;

/// A `tunnelMTU` / underlay value: mostly plausible, sometimes out of range.
#[derive(Arbitrary, Debug, Clone, Copy)]
pub enum FCap {
    /// One of a table of interesting values.
    Table(u8),
    /// Any 16-bit value.
    Raw(u16),
    /// Any 32-bit value.
    Wide(u32),
}

const CAPS: [u32; 16] = [
    0, 1, 100, 575, 576, 1200, 1280, 1300, 1350, 1400, 1420, 1450, 1500, 8999, 9000, 9001,
];

impl FCap {
    /// The value.
    pub fn value(self) -> u32 {
        match self {
            FCap::Table(i) => CAPS[usize::from(i) % CAPS.len()],
            FCap::Raw(v) => u32::from(v),
            FCap::Wide(v) => v,
        }
    }
}

const PROTOCOLS: [&str; 8] = [
    "WireGuard",
    "GENEVE",
    "VXLAN",
    "IPIP",
    "None",
    "Auto",
    "wireguard",
    "bogus",
];

fn protocol(p: Option<u8>) -> Option<&'static str> {
    p.map(|i| PROTOCOLS[usize::from(i) % PROTOCOLS.len()])
}

/// A Site.
#[derive(Arbitrary, Debug, Clone)]
pub struct FSite {
    cap: Option<FCap>,
    manage_cni: bool,
    shared_block: bool,
    local_cidrs: Vec<u8>,
    protocol: Option<u8>,
}

/// A pool.
#[derive(Arbitrary, Debug, Clone)]
pub struct FPool {
    internal: bool,
    routed: bool,
    cap: Option<FCap>,
    protocol: Option<u8>,
    default_route: bool,
    status_nodes: bool,
}

/// A SitePeering, assignment or pool peering.
#[derive(Arbitrary, Debug, Clone)]
pub struct FRelation {
    sites: Vec<u8>,
    pools: Vec<u8>,
    mesh: bool,
    cap: Option<FCap>,
    disabled: bool,
    protocol: Option<u8>,
}

/// A node.
#[derive(Arbitrary, Debug, Clone)]
pub struct FNode {
    site: u8,
    pool: Option<u8>,
    /// The `gateway-pool` label: 0 `"true"`, 1 `""`, else pool `n - 2` (possibly missing).
    pool_label: Option<u8>,
    second_ip: bool,
    /// Address families: 0 IPv4, 1 IPv6, 2 IPv4 inside and IPv6 outside, else dual stack.
    family: u8,
    external_ip: bool,
    underlay: Option<FCap>,
    underlay_max: Option<FCap>,
    published: Option<Vec<(u8, FCap)>>,
    /// `path-mtu` entries: a peer by (Site, index), which may name no node, and its value.
    path_mtu: Vec<(u8, u8, FCap)>,
}

/// A whole topology.
#[derive(Arbitrary, Debug, Clone)]
pub struct FTopo {
    sites: Vec<FSite>,
    pools: Vec<FPool>,
    peerings: Vec<FRelation>,
    assignments: Vec<FRelation>,
    pool_peerings: Vec<FRelation>,
    nodes: Vec<FNode>,
}

fn local_cidr(i: u8, sites: usize, pools: usize) -> String {
    let j = usize::from(i >> 3) % sites.max(1);
    match i % 8 {
        0 => TopoSpec::pod_block(j),
        1 => format!("10.{}.0.0/17", 100 + j),
        2 => format!("10.{}.128.0/24", 100 + j),
        3 => TopoSpec::routed_cidr(usize::from(i >> 3) % pools.max(1)),
        4 => SHARED_BLOCK.to_string(),
        5 => "0.0.0.0/0".to_string(),
        6 => "10.0.0.0/8".to_string(),
        _ => TopoSpec::node_cidr(j),
    }
}

fn published_prefix(i: u8, sites: usize, pools: usize) -> String {
    let j = usize::from(i >> 2);
    match i % 4 {
        0 => TopoSpec::pod_block(j % sites.max(1)),
        1 => TopoSpec::routed_cidr(j % pools.max(1)),
        2 => SHARED_BLOCK.to_string(),
        _ => TopoSpec::node_cidr(j % sites.max(1)),
    }
}

fn members(v: &[u8], n: usize) -> Vec<usize> {
    v.iter()
        .take(MAX_MEMBERS)
        .map(|i| usize::from(*i) % n.max(1))
        .collect()
}

impl FTopo {
    /// The test kit's topology spec (sizes bounded, indexes wrapped into range).
    pub fn spec(&self) -> TopoSpec {
        let ns = self.sites.len().clamp(1, MAX_SITES);
        let np = self.pools.len().min(MAX_POOLS);
        let default_site = FSite {
            cap: None,
            manage_cni: true,
            shared_block: false,
            local_cidrs: Vec::new(),
            protocol: None,
        };
        let sites = (0..ns)
            .map(|i| {
                let s = self.sites.get(i).unwrap_or(&default_site);
                SiteSpec {
                    cap: s.cap.map(FCap::value),
                    manage_cni: s.manage_cni,
                    shared_block: s.shared_block,
                    local_cidrs: s
                        .local_cidrs
                        .iter()
                        .take(3)
                        .map(|c| local_cidr(*c, ns, np))
                        .collect(),
                    protocol: protocol(s.protocol),
                }
            })
            .collect();
        let pools = self
            .pools
            .iter()
            .take(np)
            .map(|p| PoolSpec {
                internal: p.internal,
                routed: p.routed,
                cap: p.cap.map(FCap::value),
                protocol: protocol(p.protocol),
                default_route: p.default_route,
                status_nodes: p.status_nodes,
            })
            .collect();
        let peerings = self
            .peerings
            .iter()
            .take(MAX_RELATIONS)
            .map(|r| PeeringSpec {
                sites: members(&r.sites, ns),
                mesh: r.mesh,
                cap: r.cap.map(FCap::value),
                enabled: !r.disabled,
                protocol: protocol(r.protocol),
            })
            .collect();
        let assignments = if np == 0 {
            Vec::new()
        } else {
            self.assignments
                .iter()
                .take(MAX_RELATIONS)
                .map(|r| AssignmentSpec {
                    sites: members(&r.sites, ns),
                    pools: members(&r.pools, np),
                    cap: r.cap.map(FCap::value),
                    enabled: !r.disabled,
                    protocol: protocol(r.protocol),
                })
                .collect()
        };
        let pool_peerings = if np == 0 {
            Vec::new()
        } else {
            self.pool_peerings
                .iter()
                .take(MAX_RELATIONS)
                .map(|r| PoolPeeringSpec {
                    pools: members(&r.pools, np),
                    cap: r.cap.map(FCap::value),
                    enabled: !r.disabled,
                    protocol: protocol(r.protocol),
                })
                .collect()
        };
        let mut per_site = vec![0usize; ns];
        let mut nodes: Vec<NodeSpec> = Vec::new();
        for n in self.nodes.iter().take(MAX_NODES) {
            let site = usize::from(n.site) % ns;
            let index = per_site[site];
            per_site[site] += 1;
            // A pool index past the last pool labels the node for a pool that does not exist.
            let pool = n.pool.map(|p| usize::from(p) % (np + 1));
            nodes.push(NodeSpec {
                site,
                index,
                pool,
                pool_label: n.pool_label.map(|l| match l {
                    0 => PoolLabel::True,
                    1 => PoolLabel::Empty,
                    k => PoolLabel::Pool(usize::from(k - 2) % (np + 1)),
                }),
                second_ip: n.second_ip,
                family: match n.family % 4 {
                    0 => Family::V4,
                    1 => Family::V6,
                    2 => Family::V6External,
                    _ => Family::Dual,
                },
                external_ip: n.external_ip,
                underlay: n.underlay.map(FCap::value),
                underlay_max: n.underlay_max.map(FCap::value),
                published: n.published.as_ref().map(|v| {
                    v.iter()
                        .take(4)
                        .map(|(p, m)| (published_prefix(*p, ns, np), m.value()))
                        .collect()
                }),
                path_mtu: n
                    .path_mtu
                    .iter()
                    .take(3)
                    .map(|(s, i, c)| ((usize::from(*s) % ns, usize::from(*i) % 5), c.value()))
                    .collect(),
            });
        }
        nodes.sort_by_key(|n| (n.site, n.index));
        TopoSpec {
            sites,
            pools,
            peerings,
            assignments,
            pool_peerings,
            nodes,
        }
    }

    /// The topology as a YAML stream.
    pub fn yaml(&self) -> String {
        self.spec().to_yaml()
    }

    /// The topology as a what-if input (default settings).
    pub fn input(&self) -> Input {
        let yaml = self.yaml();
        let d = decode([("fuzz.yaml", yaml.as_bytes())]);
        Input {
            objects: d.objects,
            diagnostics: d.diagnostics,
            settings: Default::default(),
        }
    }
}

/// Which kind of object a mutation names.
#[derive(Arbitrary, Debug, Clone, Copy)]
pub enum FKind {
    /// A Site.
    Site,
    /// A pool.
    Pool,
    /// A SitePeering.
    Peering,
    /// An assignment.
    Assignment,
    /// A pool peering.
    PoolPeering,
}

/// A what-if mutation; indexes are wrapped into the topology's objects (and may name absent ones).
#[derive(Arbitrary, Debug, Clone)]
pub enum FMutation {
    /// Set a cap.
    SetCap(FKind, u8, FCap),
    /// Set a cap to a value outside 576..9000 (refused by the check).
    SetCapWide(FKind, u8, u32),
    /// Clear a cap.
    ClearCap(FKind, u8),
    /// Enable or disable a relationship.
    SetEnabled(FKind, u8, bool),
    /// Add or remove a member.
    Member(FKind, u8, bool, u8, bool),
    /// Demote a node.
    Demote(u8),
    /// Promote a node.
    Promote(u8, u8),
    /// Change an underlay.
    Underlay(u8, FCap),
    /// Change the agent MTU.
    AgentMtu(FCap),
    /// Set (or with 0, clear) a node's path MTU towards a peer.
    Path(u8, u8, FCap),
}

fn kind_name(k: FKind, i: u8) -> (Kind, String) {
    let i = usize::from(i) % 8;
    match k {
        FKind::Site => (Kind::Site, TopoSpec::site_name(i)),
        FKind::Pool => (Kind::GatewayPool, TopoSpec::pool_name(i)),
        FKind::Peering => (Kind::SitePeering, format!("sp{i}")),
        FKind::Assignment => (Kind::SiteGatewayPoolAssignment, format!("sa{i}")),
        FKind::PoolPeering => (Kind::GatewayPoolPeering, format!("pp{i}")),
    }
}

impl FMutation {
    /// The mutation, naming objects of `spec`.
    pub fn mutation(&self, spec: &TopoSpec) -> Mutation {
        let node = |i: u8| {
            spec.nodes
                .get(usize::from(i) % spec.nodes.len().max(1))
                .map(NodeSpec::name)
                .unwrap_or_else(|| "n0-0".to_string())
        };
        match self {
            FMutation::SetCap(k, i, c) => {
                let (kind, name) = kind_name(*k, *i);
                Mutation::SetCap {
                    kind,
                    name,
                    mtu: c.value(),
                }
            }
            FMutation::SetCapWide(k, i, v) => {
                let (kind, name) = kind_name(*k, *i);
                Mutation::SetCap {
                    kind,
                    name,
                    mtu: *v,
                }
            }
            FMutation::ClearCap(k, i) => {
                let (kind, name) = kind_name(*k, *i);
                Mutation::ClearCap { kind, name }
            }
            FMutation::SetEnabled(k, i, e) => {
                let (kind, name) = kind_name(*k, *i);
                Mutation::SetEnabled {
                    kind,
                    name,
                    enabled: *e,
                }
            }
            FMutation::Member(k, i, pool_member, m, add) => {
                let (kind, name) = kind_name(*k, *i);
                let (member_kind, member) = if *pool_member {
                    (Kind::GatewayPool, TopoSpec::pool_name(usize::from(*m) % 6))
                } else {
                    (Kind::Site, TopoSpec::site_name(usize::from(*m) % 7))
                };
                Mutation::Member {
                    kind,
                    name,
                    member_kind,
                    member,
                    add: *add,
                }
            }
            FMutation::Demote(n) => Mutation::Demote { node: node(*n) },
            FMutation::Promote(n, p) => Mutation::Promote {
                node: node(*n),
                pool: TopoSpec::pool_name(usize::from(*p) % 6),
            },
            FMutation::Underlay(n, c) => Mutation::Underlay {
                node: node(*n),
                mtu: c.value(),
            },
            FMutation::AgentMtu(c) => Mutation::AgentMtu(c.value()),
            FMutation::Path(n, p, c) => Mutation::PathMtu {
                node: node(*n),
                peer: node(*p),
                mtu: Some(c.value()).filter(|v| *v > 0),
            },
        }
    }
}

/// The what-if target's input: a topology and up to four mutations.
#[derive(Arbitrary, Debug, Clone)]
pub struct WhatIfCase {
    /// The base topology.
    pub topo: FTopo,
    /// The mutations.
    pub mutations: Vec<FMutation>,
}

impl WhatIfCase {
    /// The mutations, naming objects of the topology.
    pub fn mutations(&self) -> Vec<Mutation> {
        let spec = self.topo.spec();
        self.mutations
            .iter()
            .take(4)
            .map(|m| m.mutation(&spec))
            .collect()
    }
}

/// A mutation as one line of a regression file (`# what-if: ...`): the library's textual form
/// of a mutation, which `mtu-solver/tests/fuzz_regressions.rs` reads back.
pub fn mutation_line(m: &Mutation) -> String {
    format!("# what-if: {m}")
}
