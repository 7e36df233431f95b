//! Golden tests of the resolver (`spec/mtu.md`, `spec/forwarding.md`): one small fixture per
//! rule in `tests/golden/NAME.yaml`, and beside it `NAME.expect`, a list of expectations derived
//! BY HAND from the spec (each with its arithmetic as a comment), never copied from the
//! program's output. There is deliberately no "update" mode.
//!
//! Expectation syntax (one per line; `#` starts a comment; blank lines are ignored):
//!
//! ```text
//! args --underlay-mtu 1500 --mtu 1400 --cfg g1=1390 --tunnel-ip-family IPv6
//!      --public-encap WireGuard --private-encap GENEVE      # settings (optional, once)
//! link NODE PEER MTU [BOUND]          # link MTU seen from NODE; BOUND = the bound term's name
//! link-source NODE PEER SOURCE        # the bound term's source text (the rest of the line)
//! kind NODE PEER mesh|uplink|delivery|pool-mesh|transit
//! protocol NODE PEER PROTOCOL
//! links NODE PEER,PEER,...|-          # the exact set of NODE's link peers
//! no-link NODE PEER
//! route NODE DEST KIND MTU [BOUND]    # KIND = direct|gateway|transit
//! via NODE DEST KIND G1,G2 distance N
//! type NODE DEST KIND PodCidr|NodeCidr|RoutedCidr|NodePod|NodeAddress
//! routes NODE DEST,DEST,...|-         # the exact set of NODE's installed destinations
//! no-route NODE DEST [KIND]
//! fabric NODE MTU [BOUND]
//! mss NODE IPV4 IPV6
//! device NODE NAME[@PEER] MTU [BOUND] # NAME `-` for an unnamed per-peer device
//! devices NODE NAME[@PEER],...|-      # the exact set of NODE's devices
//! published NODE DEST MTU
//! no-published NODE DEST
//! diag CODE OBJECT                    # a diagnostic of the topology or of a node plan
//! no-diag CODE OBJECT
//! ```
//!
//! `BOUND` is the name `report::Renderer::term` gives the binding term (`auto`, `cfg`,
//! `underlay`, `Site/A spec.tunnelMTU`, `published by g1`, `link to x`); it is the rest of the
//! line and may be omitted (ties are the resolver's choice). `--cfg NODE=N` sets the agent `mtu`
//! of one node (`Settings::cfg_overrides`).
//!
//! `check` collects every mismatch of a fixture, then panics with all of them.

// The I/O ban of clippy.toml is for the library; this harness reads its fixture files.
#![allow(clippy::disallowed_methods)]

use mtu_solver::report::Renderer;
use mtu_solver::{DeviceRef, NodePlan, Settings, Solver};
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use topology_core::decode::decode;
use topology_core::model::Topology;
use topology_core::net::LinkKind;
use topology_core::vocab::{Protocol, parse_setting};

fn golden_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/golden")
}

fn protocol_setting(s: &str) -> Protocol {
    match parse_setting(s) {
        Some(Some(p)) => p,
        _ => panic!("bad protocol setting {s:?}"),
    }
}

fn settings_from(args: &[&str]) -> Settings {
    let mut s = Settings::default();
    let mut it = args.iter();
    while let Some(a) = it.next() {
        let mut v = || *it.next().unwrap_or_else(|| panic!("{a} needs a value"));
        match *a {
            "--underlay-mtu" => s.default_underlay = v().parse().expect("--underlay-mtu N"),
            "--mtu" => s.cfg_mtu = v().parse().expect("--mtu N"),
            "--cfg" => {
                let (n, m) = v().split_once('=').expect("--cfg NODE=N");
                s.cfg_overrides
                    .insert(n.to_string(), m.parse().expect("--cfg NODE=N"));
            }
            "--tunnel-ip-family" => {
                s.link.ipv6_outer = match v() {
                    "IPv4" => false,
                    "IPv6" => true,
                    x => panic!("bad family {x}"),
                }
            }
            "--public-encap" => s.link.public_encap = protocol_setting(v()),
            "--private-encap" => s.link.private_encap = protocol_setting(v()),
            x => panic!("unknown argument {x}"),
        }
    }
    s
}

fn kind_name(k: LinkKind) -> &'static str {
    match k {
        LinkKind::Mesh => "mesh",
        LinkKind::Uplink => "uplink",
        LinkKind::Delivery => "delivery",
        LinkKind::PoolMesh => "pool-mesh",
        LinkKind::Transit => "transit",
    }
}

struct Ctx<'a, 's, 't> {
    topo: &'t Topology,
    plans: &'a [NodePlan],
    r: Renderer<'s, 't>,
    solver: &'s Solver<'t>,
}

impl<'a, 's, 't> Ctx<'a, 's, 't> {
    fn plan(&self, name: &str) -> Result<&'a NodePlan, String> {
        let id = self
            .topo
            .node_id(name)
            .ok_or_else(|| format!("no node {name} in the topology"))?;
        self.plans
            .iter()
            .find(|p| p.node == id)
            .ok_or_else(|| format!("no plan for {name}"))
    }
    fn name(&self, id: topology_core::ids::NodeId) -> String {
        self.topo.node(id).name.to_string()
    }
    fn bound(&mut self, e: mtu_solver::explain::ExplId) -> String {
        let b = self.solver.explanations().get(e).bound;
        self.r.term(b).term
    }
    fn device_label(&self, d: &DeviceRef) -> String {
        match d {
            DeviceRef::Shared(n) => n.to_string(),
            DeviceRef::PerPeer { name, peer } => {
                format!("{}@{}", name.as_deref().unwrap_or("-"), self.name(*peer))
            }
            DeviceRef::Underlay => "underlay".to_string(),
        }
    }
}

fn set_of(s: &str) -> BTreeSet<String> {
    if s == "-" {
        BTreeSet::new()
    } else {
        s.split(',').map(|x| x.to_string()).collect()
    }
}

fn cmp_value(
    what: &str,
    got: u32,
    got_bound: String,
    want: &str,
    want_bound: &str,
) -> Result<(), String> {
    let want: u32 = want.parse().map_err(|_| format!("bad MTU {want:?}"))?;
    if got != want {
        return Err(format!(
            "{what}: got {got} (bound by {got_bound}), expected {want}"
        ));
    }
    if !want_bound.is_empty() && got_bound != want_bound {
        return Err(format!(
            "{what}: got {got} bound by {got_bound:?}, expected bound by {want_bound:?}"
        ));
    }
    Ok(())
}

fn check_line(
    c: &mut Ctx<'_, '_, '_>,
    diags: &[(String, String)],
    line: &str,
) -> Result<(), String> {
    let w: Vec<&str> = line.split_whitespace().collect();
    let arg = |i: usize| -> Result<&str, String> {
        w.get(i)
            .copied()
            .ok_or_else(|| "too few fields".to_string())
    };
    let rest = |i: usize| -> String { w.get(i..).map(|x| x.join(" ")).unwrap_or_default() };
    match arg(0)? {
        "args" => Ok(()),
        "link" | "kind" | "protocol" | "no-link" => {
            let p = c.plan(arg(1)?)?;
            let peer = arg(2)?;
            let l = p.links.iter().find(|l| c.name(l.peer) == peer);
            match (arg(0)?, l) {
                ("no-link", None) => Ok(()),
                ("no-link", Some(l)) => Err(format!(
                    "unexpected {} link (MTU {})",
                    kind_name(l.kind),
                    l.mtu.mtu.get()
                )),
                (_, None) => Err("no such link".to_string()),
                ("link", Some(l)) => {
                    let b = c.bound(l.mtu.expl);
                    cmp_value("link", l.mtu.mtu.get(), b, arg(3)?, &rest(4))
                }
                ("kind", Some(l)) if kind_name(l.kind) == arg(3)? => Ok(()),
                ("kind", Some(l)) => Err(format!("kind is {}", kind_name(l.kind))),
                (_, Some(l)) if l.protocol.as_str() == arg(3)? => Ok(()),
                (_, Some(l)) => Err(format!("protocol is {}", l.protocol.as_str())),
            }
        }
        "link-source" => {
            let p = c.plan(arg(1)?)?;
            let peer = arg(2)?;
            let l = p
                .links
                .iter()
                .find(|l| c.name(l.peer) == peer)
                .ok_or_else(|| "no such link".to_string())?;
            let b = c.solver.explanations().get(l.mtu.expl).bound;
            let got = c.r.term(b).source;
            if got == rest(3) {
                Ok(())
            } else {
                Err(format!("the bound term's source is {got:?}"))
            }
        }
        "links" => {
            let p = c.plan(arg(1)?)?;
            let got: BTreeSet<String> = p.links.iter().map(|l| c.name(l.peer)).collect();
            let want = set_of(arg(2)?);
            if got == want {
                Ok(())
            } else {
                Err(format!("links are {got:?}"))
            }
        }
        "route" | "via" | "type" | "no-route" => {
            let p = c.plan(arg(1)?)?;
            let dest = arg(2)?;
            let kind = w.get(3).copied();
            let r = p.routes.iter().find(|r| {
                r.destination.to_string() == dest && kind.is_none_or(|k| r.kind.as_str() == k)
            });
            match (arg(0)?, r) {
                ("no-route", None) => Ok(()),
                ("no-route", Some(r)) => Err(format!(
                    "unexpected {} route (MTU {})",
                    r.kind.as_str(),
                    r.mtu.mtu.get()
                )),
                (_, None) => {
                    let have: Vec<String> = p
                        .routes
                        .iter()
                        .map(|r| format!("{} {}", r.destination, r.kind.as_str()))
                        .collect();
                    Err(format!("no such route; routes are {have:?}"))
                }
                ("route", Some(r)) => {
                    let b = c.bound(r.mtu.expl);
                    cmp_value("route", r.mtu.mtu.get(), b, arg(4)?, &rest(5))
                }
                ("type", Some(r)) if r.ty.as_str() == arg(4)? => Ok(()),
                ("type", Some(r)) => Err(format!("type is {}", r.ty.as_str())),
                (_, Some(r)) => {
                    let via: Vec<String> = r.via.iter().map(|v| c.name(*v)).collect();
                    let got = format!("{} distance {}", via.join(","), r.distance);
                    let want = rest(4);
                    if got == want {
                        Ok(())
                    } else {
                        Err(format!("via is {got}"))
                    }
                }
            }
        }
        "routes" => {
            let p = c.plan(arg(1)?)?;
            let got: BTreeSet<String> =
                p.routes.iter().map(|r| r.destination.to_string()).collect();
            let want = set_of(arg(2)?);
            if got == want {
                Ok(())
            } else {
                Err(format!("routes are {got:?}"))
            }
        }
        "fabric" => {
            let p = c.plan(arg(1)?)?;
            let b = c.bound(p.fabric.expl);
            cmp_value("fabric", p.fabric.mtu.get(), b, arg(2)?, &rest(3))
        }
        "mss" => {
            let p = c.plan(arg(1)?)?;
            let got = format!("{} {}", p.mss_ipv4, p.mss_ipv6);
            if got == rest(2) {
                Ok(())
            } else {
                Err(format!("mss is {got}"))
            }
        }
        "device" | "no-device" => {
            let p = c.plan(arg(1)?)?;
            let d = p
                .devices
                .iter()
                .find(|d| c.device_label(&d.device) == arg(2).unwrap_or(""));
            match (arg(0)?, d) {
                ("no-device", None) => Ok(()),
                ("no-device", Some(d)) => {
                    Err(format!("unexpected device (MTU {})", d.mtu.mtu.get()))
                }
                (_, None) => {
                    let have: Vec<String> = p
                        .devices
                        .iter()
                        .map(|d| c.device_label(&d.device))
                        .collect();
                    Err(format!("no such device; devices are {have:?}"))
                }
                (_, Some(d)) => {
                    let b = c.bound(d.mtu.expl);
                    cmp_value("device", d.mtu.mtu.get(), b, arg(3)?, &rest(4))
                }
            }
        }
        "devices" => {
            let p = c.plan(arg(1)?)?;
            let got: BTreeSet<String> = p
                .devices
                .iter()
                .map(|d| c.device_label(&d.device))
                .collect();
            let want = set_of(arg(2)?);
            if got == want {
                Ok(())
            } else {
                Err(format!("devices are {got:?}"))
            }
        }
        "published" | "no-published" => {
            let p = c.plan(arg(1)?)?;
            let dest = arg(2)?;
            let v = p
                .published
                .as_ref()
                .and_then(|ps| ps.iter().find(|x| x.destination.to_string() == dest));
            match (arg(0)?, v) {
                ("no-published", None) => Ok(()),
                ("no-published", Some(v)) => {
                    Err(format!("unexpected published value {}", v.mtu.mtu.get()))
                }
                (_, None) => {
                    let have: Vec<String> = p
                        .published
                        .iter()
                        .flatten()
                        .map(|x| format!("{} {}", x.destination, x.mtu.mtu.get()))
                        .collect();
                    Err(format!("nothing published; published are {have:?}"))
                }
                (_, Some(v)) => {
                    let b = c.bound(v.mtu.expl);
                    cmp_value("published", v.mtu.mtu.get(), b, arg(3)?, &rest(4))
                }
            }
        }
        "diag" | "no-diag" => {
            let key = (arg(1)?.to_string(), arg(2)?.to_string());
            let found = diags.contains(&key);
            match (arg(0)?, found) {
                ("diag", true) | ("no-diag", false) => Ok(()),
                ("diag", false) => Err(format!("missing; diagnostics are {diags:?}")),
                _ => Err("unexpected diagnostic".to_string()),
            }
        }
        x => Err(format!("unknown directive {x:?}")),
    }
}

/// Decodes `NAME.yaml`, builds the topology, resolves every node with the settings of the
/// `args` line, and checks every expectation of `NAME.expect`.
fn check(name: &str) {
    let yaml_path = golden_dir().join(format!("{name}.yaml"));
    let expect_path = golden_dir().join(format!("{name}.expect"));
    let bytes =
        std::fs::read(&yaml_path).unwrap_or_else(|e| panic!("{}: {e}", yaml_path.display()));
    let expect = std::fs::read_to_string(&expect_path)
        .unwrap_or_else(|e| panic!("{}: {e}", expect_path.display()));
    let lines: Vec<(usize, String)> = expect
        .lines()
        .enumerate()
        .map(|(i, l)| (i + 1, l.split('#').next().unwrap_or("").trim().to_string()))
        .filter(|(_, l)| !l.is_empty())
        .collect();
    let args: Vec<&str> = lines
        .iter()
        .filter(|(_, l)| l.starts_with("args ") || l == "args")
        .flat_map(|(_, l)| l.split_whitespace().skip(1))
        .collect();
    let settings = settings_from(&args);

    let file = format!("{name}.yaml");
    let d = decode([(file.as_str(), bytes.as_slice())]);
    let topo = Topology::build(&d.objects, d.diagnostics.clone());
    let mut solver = Solver::new(&topo, settings);
    let plans: Vec<NodePlan> = (0..topo.nodes.len())
        .map(topology_core::ids::NodeId::from_idx)
        .map(|n| solver.plan(n))
        .collect();
    let diags: Vec<(String, String)> = topo
        .diagnostics
        .iter()
        .chain(plans.iter().flat_map(|p| p.diagnostics.iter()))
        .map(|d| (d.code.as_str().to_string(), d.object.clone()))
        .collect();
    let mut ctx = Ctx {
        topo: &topo,
        plans: &plans,
        r: Renderer::new(&solver, mtu_solver::Explanations::Bound),
        solver: &solver,
    };
    let mut failures = Vec::new();
    for (no, line) in &lines {
        if let Err(e) = check_line(&mut ctx, &diags, line) {
            failures.push(format!("  {name}.expect:{no}: `{line}`: {e}"));
        }
    }
    assert!(
        failures.is_empty(),
        "{name}: {} of {} expectations failed:\n{}",
        failures.len(),
        lines.len(),
        failures.join("\n")
    );
}

macro_rules! golden {
    ($($test:ident => $name:literal,)*) => {
        $(
            #[test]
            fn $test() {
                check($name);
            }
        )*
    };
}

golden! {
    merged_prefix => "merged-prefix",
    ipv6_published_below_1280 => "ipv6-published-below-1280",
    published_local_covered => "published-local-covered",
    pool_split_sites => "pool-split-sites",
    nodecidr_filter => "nodecidr-filter",
    published_no_worker_ipv6 => "published-no-worker-ipv6",
    one_way_transit => "one-way-transit",
    served_twice => "served-twice",
    ipv6_below_1280 => "ipv6-below-1280",
    floors => "floors",
    devices => "devices",
    fabric_no_links => "fabric-no-links",
    pair_caps => "pair-caps",
    protocol_explicit => "protocol-explicit",
    protocol_auto => "protocol-auto",
    protocol_prefs => "protocol-prefs",
    routed_cidr => "routed-cidr",
    localcidrs_cut => "localcidrs-cut",
    ecmp => "ecmp",
    transit_published => "transit-published",
    reach_no_worker => "reach-no-worker",
    uplink_caps => "uplink-caps",
    comp_chain => "comp-chain",
    cfg_ipv6_outer => "cfg-ipv6-outer",
    overheads_ipv4 => "overheads-ipv4",
    overheads_ipv6 => "overheads-ipv6",
    mesh_auto => "mesh-auto",
    nat_node_address => "nat-node-address",
    unmanaged_cni => "unmanaged-cni",
    default_route => "default-route",
    gateway_label_missing_pool => "gateway-label-missing-pool",
    ipv6_only_ipv4_family => "ipv6-only-ipv4-family",
    ipv6_only_ipv6_family => "ipv6-only-ipv6-family",
}
