//! Building the validated topology: objects grouped by kind and name (identical copies merged,
//! conflicting ones dropped with a finding), relations and their members resolved, the indexes
//! filled, and overlaps and protocol conflicts reported. The nodes' part is `nodes.rs`, the
//! components' caps `caps.rs`.

use super::*;
use crate::decode::RawObject;
use crate::diag::{Code, Diagnostic, SourceLoc, sort_diagnostics};
use crate::vocab::Kind;
use ipnet::IpNet;
use rustc_hash::{FxHashMap, FxHashSet};
use smallvec::SmallVec;
use std::sync::Arc;

/// What a build collects while it runs: its findings and the values it shares between nodes.
#[derive(Default)]
pub(super) struct Builder {
    /// Findings so far.
    pub(super) diags: Vec<Diagnostic>,
    /// The names of Node objects given twice with different content (ignored), sorted.
    pub(super) duplicate_nodes: Vec<String>,
    /// The distinct label sets of the nodes, each held once: the workers of one Site carry the
    /// same labels, so a node's labels cost a pointer.
    pub(super) label_sets: FxHashSet<NodeLabels>,
}

pub(super) fn warn(
    code: Code,
    object: &str,
    field: &str,
    msg: String,
    loc: Option<SourceLoc>,
) -> Diagnostic {
    Diagnostic::new(code, object, field, msg, loc)
}

/// The objects that count, by kind, each kind sorted by name and each name once.
#[derive(Default)]
struct Grouped<'a> {
    sites: Vec<&'a RawSite>,
    pools: Vec<&'a RawPool>,
    nodes: Vec<&'a RawNode>,
    slices: Vec<&'a RawSlice>,
    gpn: Vec<&'a RawGatewayPoolNode>,
    peerings: Vec<&'a RawRelation>,
    assignments: Vec<&'a RawRelation>,
    pool_peerings: Vec<&'a RawRelation>,
}

impl<'a> Grouped<'a> {
    /// Adds the only object of its kind and name (objects come in (kind, name) order).
    fn push(&mut self, o: &'a RawObject) {
        match o {
            RawObject::Site(x) => self.sites.push(x),
            RawObject::Pool(x) => self.pools.push(x),
            RawObject::Node(x) => self.nodes.push(x),
            RawObject::Slice(x) => self.slices.push(x),
            RawObject::GatewayPoolNode(x) => self.gpn.push(x),
            RawObject::SitePeering(x) => self.peerings.push(x),
            RawObject::Assignment(x) => self.assignments.push(x),
            RawObject::PoolPeering(x) => self.pool_peerings.push(x),
        }
    }
}

impl Builder {
    pub(super) fn build<'a>(
        mut self,
        objects: impl IntoIterator<Item = &'a RawObject>,
        decode_diags: impl IntoIterator<Item = Diagnostic>,
    ) -> Topology {
        self.diags.extend(decode_diags);
        let g = self.group(objects);
        let mut t = Topology::default();
        for s in &g.sites {
            let name: Arc<str> = Arc::from(s.meta.name.as_str());
            t.site_by_name
                .insert(name.clone(), SiteId::from_idx(t.sites.len()));
            t.sites.push(Site {
                name,
                node_cidrs: s.node_cidrs.clone(),
                pod_blocks: s.pod_blocks.clone(),
                local_cidrs: s.local_cidrs.clone(),
                manage_cni: s.manage_cni,
                protocol: s.protocol,
                cap: s.cap.as_ref().map(Cap::from),
                loc: s.meta.loc.clone(),
            });
        }
        for p in &g.pools {
            let name: Arc<str> = Arc::from(p.meta.name.as_str());
            t.pool_by_name
                .insert(name.clone(), PoolId::from_idx(t.pools.len()));
            t.pools.push(Pool {
                name,
                internal: p.internal,
                routed_cidrs: p.routed_cidrs.clone(),
                protocol: p.protocol,
                cap: p.cap.as_ref().map(Cap::from),
                gateways: Vec::new(),
                loc: p.meta.loc.clone(),
            });
        }
        t.site_peerings = self.relations(&t, "SitePeering", &g.peerings, true, false);
        t.assignments = self.relations(&t, "SiteGatewayPoolAssignment", &g.assignments, true, true);
        t.pool_peerings = self.relations(&t, "GatewayPoolPeering", &g.pool_peerings, false, true);
        self.nodes(&mut t, &g.pools, &g.nodes, &g.slices, &g.gpn);
        self.path_mtus(&mut t, &g.nodes);
        self.indexes(&mut t);
        self.overlaps(&t);
        self.protocol_conflicts(&t);
        let mut diags = self.diags;
        sort_diagnostics(&mut diags);
        t.diagnostics = diags;
        t
    }

    /// Step 1 of the build: groups the objects by kind and name. A name given twice within a
    /// kind is reported and ignored entirely; an object with `enabled: false` is absent
    /// everywhere, silently.
    fn group<'a>(&mut self, objects: impl IntoIterator<Item = &'a RawObject>) -> Grouped<'a> {
        let mut kinds = Kind::ALL;
        kinds.sort();
        // Each kind's objects in input order, the kinds in their order.
        let mut by_kind: [Vec<(&str, &RawObject)>; Kind::ALL.len()] = Default::default();
        for o in objects {
            if let RawObject::SitePeering(r) | RawObject::Assignment(r) | RawObject::PoolPeering(r) =
                o
                && !r.enabled
            {
                continue;
            }
            let kind = o.kind();
            if let Some(v) = kinds
                .iter()
                .position(|k| *k == kind)
                .and_then(|i| by_kind.get_mut(i))
            {
                v.push((o.name(), o));
            }
        }
        let mut g = Grouped::default();
        for (kind, mut objects) in kinds.into_iter().zip(by_kind) {
            // Generated files and API lists come sorted by name within each kind, each name once:
            // one pass over the names confirms it, and the objects are taken as they are.
            if objects.is_sorted_by(|a, b| a.0 < b.0) {
                for (_, o) in objects {
                    self.take(&mut g, o);
                }
                continue;
            }
            // Otherwise a stable sort brings the copies of a name together, in input order.
            objects.sort_by(|a, b| a.0.cmp(b.0));
            for copies in objects.chunk_by(|a, b| a.0 == b.0) {
                match copies {
                    [(_, o)] => self.take(&mut g, o),
                    [(name, first), rest @ ..]
                        if rest.iter().all(|(_, o)| o.same_content(first)) =>
                    {
                        self.identical(kind, name, copies);
                        // The copy written first (by source, then line) stands for them all,
                        // whatever the order of the sources.
                        let earliest = copies
                            .iter()
                            .map(|(_, o)| *o)
                            .min_by(|a, b| a.meta().loc.cmp(&b.meta().loc))
                            .unwrap_or(first);
                        self.take(&mut g, earliest);
                    }
                    [(name, _), ..] => {
                        if kind == Kind::Node {
                            self.duplicate_nodes.push((*name).to_string());
                        }
                        self.duplicate(kind, name, copies);
                        for (_, o) in copies {
                            self.diags.extend(o.meta().diags.iter().cloned());
                        }
                    }
                    [] => {}
                }
            }
        }
        g
    }

    /// Takes object `o` into the topology, with the findings about its own fields.
    fn take<'a>(&mut self, g: &mut Grouped<'a>, o: &'a RawObject) {
        self.diags.extend(o.meta().diags.iter().cloned());
        g.push(o);
    }

    /// Notes the `copies` of `kind/name` that say the same (more than one): they count once,
    /// as the copy written first.
    fn identical(&mut self, kind: Kind, name: &str, copies: &[(&str, &RawObject)]) {
        let (first, listed) = copies_at(copies);
        self.diags.push(Diagnostic::new(
            Code::DuplicateIdentical,
            format!("{kind}/{name}"),
            "metadata.name",
            format!(
                "{} identical copies of {kind} {name:?}{listed}; they count as one",
                copies.len()
            ),
            first,
        ));
    }

    /// Reports the `copies` of `kind/name` (more than one, not all the same): every copy is
    /// ignored.
    fn duplicate(&mut self, kind: Kind, name: &str, copies: &[(&str, &RawObject)]) {
        let (first, listed) = copies_at(copies);
        self.diags.push(Diagnostic::new(
            Code::Duplicate,
            format!("{kind}/{name}"),
            "metadata.name",
            format!(
                "{} objects of kind {kind} are named {name:?}{listed}; every copy is ignored",
                copies.len()
            ),
            first,
        ));
    }

    fn relations(
        &mut self,
        t: &Topology,
        kind: &str,
        raw: &[&RawRelation],
        has_sites: bool,
        has_pools: bool,
    ) -> Vec<Relation> {
        let mut out = Vec::new();
        for r in raw {
            if !r.enabled {
                continue;
            }
            let object = format!("{kind}/{}", r.meta.name);
            let sites = self.members(&object, "Site", &r.sites, Code::MissingSite, |n| {
                t.site_id(n)
            });
            let pools = self.members(&object, "GatewayPool", &r.pools, Code::MissingPool, |n| {
                t.pool_id(n)
            });
            let relates = match (has_sites, has_pools) {
                (true, false) => sites.len() >= 2,
                (false, true) => pools.len() >= 2,
                _ => !sites.is_empty() && !pools.is_empty(),
            };
            if !relates {
                self.too_few_members(&object, r, has_sites, has_pools, sites.is_empty());
            }
            out.push(Relation {
                name: Arc::from(r.meta.name.as_str()),
                sites,
                pools,
                mesh: r.mesh_nodes,
                protocol: r.protocol,
                cap: r.cap.as_ref().map(Cap::from),
                relates,
                loc: r.meta.loc.clone(),
            });
        }
        out
    }

    /// The members a relation lists (`what`: "Site" or "GatewayPool") that exist, each once,
    /// sorted; one listed twice, or naming nothing (`missing`), is warned about. A set of the
    /// names seen, not a list: a relationship of N members is read in O(N).
    fn members<Id: Ord>(
        &mut self,
        object: &str,
        what: &str,
        listed: &[Member],
        missing: Code,
        find: impl Fn(&str) -> Option<Id>,
    ) -> Vec<Id> {
        let mut ids = Vec::with_capacity(listed.len());
        let mut seen: FxHashSet<&str> = FxHashSet::default();
        for m in listed {
            if !seen.insert(m.name.as_str()) {
                self.diags.push(warn(
                    Code::DuplicateMember,
                    object,
                    &m.field,
                    format!("{what} {} is listed more than once; it counts once", m.name),
                    m.loc.clone(),
                ));
                continue;
            }
            match find(&m.name) {
                Some(id) => ids.push(id),
                None => self.diags.push(warn(
                    missing,
                    object,
                    &m.field,
                    format!("{what} {} does not exist; this member is ignored", m.name),
                    m.loc.clone(),
                )),
            }
        }
        ids.sort();
        ids
    }

    /// Notes that relation `r` relates nothing: fewer than two existing Sites or pools, or no
    /// existing Site or pool where it needs both.
    fn too_few_members(
        &mut self,
        object: &str,
        r: &RawRelation,
        has_sites: bool,
        has_pools: bool,
        no_sites: bool,
    ) {
        let (what, field) = match (has_sites, has_pools) {
            (true, false) => ("fewer than two existing Sites", "spec.sites"),
            (false, true) => ("fewer than two existing pools", "spec.gatewayPools"),
            _ if no_sites => ("no existing Site or no existing pool", "spec.sites"),
            _ => ("no existing Site or no existing pool", "spec.gatewayPools"),
        };
        self.diags.push(warn(
            Code::TooFewMembers,
            object,
            field,
            format!("it is left with {what}, so it relates nothing"),
            r.meta.loc.clone(),
        ));
    }

    fn indexes(&mut self, t: &mut Topology) {
        let ns = t.sites.len();
        let np = t.pools.len();
        t.site_workers = vec![Vec::new(); ns];
        t.site_gateways = vec![Vec::new(); ns];
        for (i, n) in t.nodes.iter().enumerate() {
            let id = NodeId::from_idx(i);
            match n.role {
                Role::Worker => {
                    if let Some(v) = t.site_workers.get_mut(n.site.idx()) {
                        v.push(id);
                    }
                }
                Role::Gateway(p) => {
                    if let Some(v) = t.site_gateways.get_mut(n.site.idx()) {
                        v.push(id);
                    }
                    if let Some(pool) = t.pools.get_mut(p.idx()) {
                        pool.gateways.push(id);
                    }
                }
            }
        }
        t.peerings_of_site = vec![SmallVec::new(); ns];
        for (i, r) in t.site_peerings.iter().enumerate() {
            if !r.relates {
                continue;
            }
            for s in &r.sites {
                if let Some(v) = t.peerings_of_site.get_mut(s.idx()) {
                    v.push(PeeringId::from_idx(i));
                }
            }
        }
        t.assignments_of_site = vec![SmallVec::new(); ns];
        t.assignments_of_pool = vec![SmallVec::new(); np];
        for (i, r) in t.assignments.iter().enumerate() {
            if !r.relates {
                continue;
            }
            for s in &r.sites {
                if let Some(v) = t.assignments_of_site.get_mut(s.idx()) {
                    v.push(AssignmentId::from_idx(i));
                }
            }
            for p in &r.pools {
                if let Some(v) = t.assignments_of_pool.get_mut(p.idx()) {
                    v.push(AssignmentId::from_idx(i));
                }
            }
        }
        t.pool_peerings_of_pool = vec![SmallVec::new(); np];
        for (i, r) in t.pool_peerings.iter().enumerate() {
            if !r.relates {
                continue;
            }
            for p in &r.pools {
                if let Some(v) = t.pool_peerings_of_pool.get_mut(p.idx()) {
                    v.push(PoolPeeringId::from_idx(i));
                }
            }
        }
        // Direct-mesh components: union-find over counting mesh SitePeerings.
        let mut uf = petgraph::unionfind::UnionFind::<usize>::new(ns);
        for r in &t.site_peerings {
            if !(r.relates && r.mesh) {
                continue;
            }
            if let Some(first) = r.sites.first() {
                for s in r.sites.iter().skip(1) {
                    uf.union(first.idx(), s.idx());
                }
            }
        }
        let mut root_to_comp: FxHashMap<usize, CompId> = FxHashMap::default();
        t.comp_of = Vec::with_capacity(ns);
        for s in 0..ns {
            let root = uf.find(s);
            let next = CompId::from_idx(root_to_comp.len());
            let c = *root_to_comp.entry(root).or_insert(next);
            if c == next {
                t.components.push(Component {
                    sites: Vec::new(),
                    cap_objects: Vec::new(),
                    cap: None,
                });
            }
            t.comp_of.push(c);
            if let Some(comp) = t.components.get_mut(c.idx()) {
                comp.sites.push(SiteId::from_idx(s));
            }
        }
        caps::component_caps(t);
    }

    fn overlaps(&mut self, t: &Topology) {
        for (field, pick) in [
            ("spec.nodeCidrs", 0usize),
            ("spec.podCidrAssignments", 1usize),
        ] {
            let mut all: Vec<(IpNet, SiteId)> = Vec::new();
            for (i, s) in t.sites.iter().enumerate() {
                let list = if pick == 0 {
                    &s.node_cidrs
                } else {
                    &s.pod_blocks
                };
                for c in list {
                    all.push((*c, SiteId::from_idx(i)));
                }
            }
            // Prefixes are nested or disjoint: sort by family, address, length and sweep.
            all.sort_by(|a, b| {
                (a.0.network(), a.0.prefix_len(), a.1).cmp(&(b.0.network(), b.0.prefix_len(), b.1))
            });
            let mut open: Vec<(IpNet, SiteId)> = Vec::new();
            let mut pairs: std::collections::BTreeSet<(SiteId, SiteId, IpNet, IpNet)> =
                std::collections::BTreeSet::new();
            for (net, site) in all {
                while let Some((top, _)) = open.last() {
                    if top.contains(&net.network()) && top.prefix_len() <= net.prefix_len() {
                        break;
                    }
                    open.pop();
                }
                for (outer, osite) in &open {
                    if *osite != site {
                        let (a, b, na, nb) = if *osite < site {
                            (*osite, site, *outer, net)
                        } else {
                            (site, *osite, net, *outer)
                        };
                        pairs.insert((a, b, na, nb));
                    }
                }
                open.push((net, site));
            }
            let mut reported: std::collections::BTreeSet<(SiteId, SiteId)> = Default::default();
            for (a, b, na, nb) in pairs {
                if !reported.insert((a, b)) {
                    continue;
                }
                let sb = t.site(b);
                self.diags.push(warn(
                    Code::CidrOverlap,
                    &format!("Site/{}", sb.name),
                    field,
                    format!(
                        "{nb} overlaps {na} of Site/{}; both still count (identical prefixes merge into one route)",
                        t.site(a).name
                    ),
                    sb.loc.clone(),
                ));
            }
        }
    }

    fn protocol_conflicts(&mut self, t: &Topology) {
        // Mesh SitePeerings sharing two Sites, assignments sharing a (Site, pool), pool peerings
        // sharing two pools, that name different explicit protocols.
        let conflict = |a: &Relation, b: &Relation, mesh: bool, sites: bool, pools: bool| -> bool {
            if a.protocol.is_none() || b.protocol.is_none() || a.protocol == b.protocol {
                return false;
            }
            if mesh && !(a.mesh && b.mesh) {
                return false;
            }
            let shared_sites = a.sites.iter().filter(|s| b.sites.contains(s)).count();
            let shared_pools = a.pools.iter().filter(|p| b.pools.contains(p)).count();
            match (sites, pools) {
                (true, false) => shared_sites >= 2,
                (false, true) => shared_pools >= 2,
                _ => shared_sites >= 1 && shared_pools >= 1,
            }
        };
        for (kind, list, sites, pools) in [
            ("SitePeering", &t.site_peerings, true, false),
            ("SiteGatewayPoolAssignment", &t.assignments, true, true),
            ("GatewayPoolPeering", &t.pool_peerings, false, true),
        ] {
            let explicit: Vec<&Relation> = list
                .iter()
                .filter(|r| r.relates && r.protocol.is_some())
                .collect();
            for (i, a) in explicit.iter().enumerate() {
                for b in explicit.iter().skip(i.saturating_add(1)) {
                    if conflict(a, b, kind == "SitePeering", sites, pools) {
                        self.diags.push(warn(
                            Code::ProtocolConflict,
                            &format!("{kind}/{}", b.name),
                            "spec.tunnelProtocol",
                            format!(
                                "{} disagrees with {kind}/{} ({}) on the protocol of links they both govern; {kind}/{} wins (first by name)",
                                b.protocol.map(|p| p.as_str()).unwrap_or("Auto"),
                                a.name,
                                a.protocol.map(|p| p.as_str()).unwrap_or("Auto"),
                                a.name
                            ),
                            b.loc.clone(),
                        ));
                    }
                }
            }
        }
    }
}

/// Where the copies of one name were written: the first (by source, then line), and all of them
/// in that order as ` (a.yaml:3, b.yaml:1)` (empty when none was read from a file).
fn copies_at(copies: &[(&str, &RawObject)]) -> (Option<SourceLoc>, String) {
    let mut at: Vec<&SourceLoc> = copies
        .iter()
        .filter_map(|(_, o)| o.meta().loc.as_ref())
        .collect();
    at.sort();
    let listed = if at.is_empty() {
        String::new()
    } else {
        let all: Vec<String> = at.iter().map(|l| l.to_string()).collect();
        format!(" ({})", all.join(", "))
    };
    (at.first().map(|l| (*l).clone()), listed)
}
