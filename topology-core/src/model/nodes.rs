//! The nodes of the topology: every name a Node object, a SiteNodeSlice or a pool's status
//! gives, each with its addresses, its pool and its Site, found in that order from its sources;
//! a node that belongs to no Site is left out with a finding.

use super::build::{Builder, warn};
use super::{NodeInfo, NodeLabels, Role, Topology};
use crate::decode::{
    Addrs, Cidrs, RawGatewayPoolNode, RawNode, RawPool, RawSlice, RawSliceNode, RawStatusNode,
    site_label,
};
use crate::diag::{Code, SourceLoc};
use crate::ids::{PoolId, SiteId};
use crate::mtu::Mtu;
use crate::vocab::POOL_LABEL_KEY;
use rustc_hash::{FxHashMap, FxHashSet};
use smallvec::SmallVec;
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

/// A node's labels, as its Node object carries them.
type Labels = [(Arc<str>, Arc<str>)];

/// Where a node's facts come from besides its Node object: the SiteNodeSlice entry and the
/// pool status entries naming it, the pools that can take it, the GatewayPoolNode it publishes.
struct NodeSources<'a> {
    pools: &'a [&'a RawPool],
    /// The first SiteNodeSlice entry of each name (slices in name order).
    slices: BTreeMap<&'a str, (&'a RawSlice, &'a RawSliceNode)>,
    /// The names any pool's non-empty `status.nodes` lists.
    status_names: BTreeSet<&'a str>,
    membership: PoolMembership<'a>,
    /// The first GatewayPoolNode of each node name.
    published: BTreeMap<&'a str, &'a RawGatewayPoolNode>,
}

impl<'a> NodeSources<'a> {
    fn new(
        pools: &'a [&'a RawPool],
        slices_raw: &[&'a RawSlice],
        gpn_raw: &[&'a RawGatewayPoolNode],
    ) -> NodeSources<'a> {
        let mut slices: BTreeMap<&str, (&RawSlice, &RawSliceNode)> = BTreeMap::new();
        for s in slices_raw {
            for e in &s.nodes {
                slices.entry(&e.name).or_insert((s, e));
            }
        }
        let status_names = pools
            .iter()
            .flat_map(|p| p.status_nodes.iter().map(|e| e.name.as_str()))
            .collect();
        let mut published: BTreeMap<&str, &RawGatewayPoolNode> = BTreeMap::new();
        for g in gpn_raw {
            published.entry(&g.node_name).or_insert(g);
        }
        NodeSources {
            pools,
            slices,
            status_names,
            membership: PoolMembership::new(pools),
            published,
        }
    }

    /// The entry naming node `name` in pool `p`'s `status.nodes`.
    fn status_entry(&self, p: PoolId, name: &str) -> Option<&'a RawStatusNode> {
        self.pools
            .get(p.idx())
            .and_then(|r| r.status_nodes.iter().find(|e| e.name == name))
    }

    /// Whether pool `p` lists its members in `status.nodes` (then its selector is not used).
    fn lists_status(&self, p: PoolId) -> bool {
        self.pools
            .get(p.idx())
            .is_some_and(|r| !r.status_nodes.is_empty())
    }
}

/// A node's addresses and where it was defined, from its first source that gives them.
struct Addresses {
    internal_ips: Addrs,
    external_ips: Addrs,
    pod_cidrs: Cidrs,
    loc: Option<SourceLoc>,
}

impl Addresses {
    /// From the Node object, else from the SiteNodeSlice entry.
    fn of(obj: Option<&RawNode>, slice: Option<(&RawSlice, &RawSliceNode)>) -> Addresses {
        match (obj, slice) {
            (Some(o), _) => Addresses {
                internal_ips: o.internal_ips.clone(),
                external_ips: o.external_ips.clone(),
                pod_cidrs: o.pod_cidrs.clone(),
                loc: o.meta.loc.clone(),
            },
            (None, Some((_, e))) => Addresses {
                internal_ips: e.internal_ips.clone(),
                external_ips: Addrs::default(),
                pod_cidrs: e.pod_cidrs.clone(),
                loc: e.loc.clone(),
            },
            (None, None) => Addresses {
                internal_ips: Addrs::default(),
                external_ips: Addrs::default(),
                pod_cidrs: Cidrs::default(),
                loc: None,
            },
        }
    }

    /// Fills what is still empty from the node's entry in its pool's `status.nodes`.
    fn fill_from(&mut self, st: &RawStatusNode) {
        if self.internal_ips.is_empty() {
            self.internal_ips = Addrs::from_slice(&st.internal_ips);
        }
        if self.external_ips.is_empty() {
            self.external_ips = Addrs::from_slice(&st.external_ips);
        }
        if self.pod_cidrs.is_empty() {
            self.pod_cidrs = Cidrs::from_slice(&st.pod_cidrs);
        }
        if self.loc.is_none() {
            self.loc = st.loc.clone();
        }
    }
}

/// How a finding names node `name`: formatted only when one is reported.
fn node_object(name: &str) -> String {
    format!("Node/{name}")
}

impl Builder {
    /// Every node of the topology, in name order.
    pub(super) fn nodes(
        &mut self,
        t: &mut Topology,
        pools_raw: &[&RawPool],
        nodes_raw: &[&RawNode],
        slices_raw: &[&RawSlice],
        gpn_raw: &[&RawGatewayPoolNode],
    ) {
        let src = NodeSources::new(pools_raw, slices_raw, gpn_raw);
        let names = node_names(
            nodes_raw,
            src.slices
                .keys()
                .copied()
                .chain(src.status_names.iter().copied()),
        );
        let ignored = self
            .duplicate_nodes
            .iter()
            .filter(|d| {
                names
                    .binary_search_by(|(n, _)| (*n).cmp(d.as_str()))
                    .is_err()
            })
            .count();
        t.named_nodes = names.len().saturating_add(ignored);
        // One allocation of the final size: growing by doubling would leave every earlier,
        // smaller copy behind as freed but resident memory.
        t.nodes.reserve_exact(names.len());
        for (name, obj) in names {
            if let Some(n) = self.node(t, &src, name, obj) {
                t.nodes.push(n);
            }
        }
    }

    /// Node `name`: its addresses, then its pool (whose status may add addresses), then its
    /// Site; None, with a finding, when it belongs to no Site.
    fn node(
        &mut self,
        t: &Topology,
        src: &NodeSources<'_>,
        name: &str,
        obj: Option<&RawNode>,
    ) -> Option<NodeInfo> {
        let slice = src.slices.get(name).copied();
        let mut addrs = Addresses::of(obj, slice);
        let labels: &Labels = obj.map(|o| &o.labels[..]).unwrap_or(&[]);
        let (pool, from_status) = self.pool_of(t, src, name, labels, &mut addrs);
        let status = pool.and_then(|p| src.status_entry(p, name));
        if let Some(st) = status {
            addrs.fill_from(st);
        }
        let site = self.site_of(t, name, obj, slice, &addrs).or_else(|| {
            // A node its pool's status placed may be given its Site there.
            status
                .filter(|_| from_status)
                .and_then(|st| st.site_name.as_deref())
                .and_then(|sn| t.site_id(sn))
        });
        let Some(site) = site else {
            self.diags.push(warn(
                Code::NoSite,
                &node_object(name),
                "",
                "the node belongs to no Site (no site label naming an existing Site, no InternalIP in any Site's nodeCidrs); it is left out".to_string(),
                addrs.loc,
            ));
            return None;
        };
        let published_by = src.published.get(name).copied();
        let published = published_by
            .map(|g| {
                g.published
                    .iter()
                    .map(|(p, m)| (*p, Mtu::new(*m).unwrap_or(Mtu::MIN)))
                    .collect()
            })
            .unwrap_or_default();
        Some(NodeInfo {
            name: Arc::from(name),
            site,
            role: pool.map(Role::Gateway).unwrap_or(Role::Worker),
            internal_ips: addrs.internal_ips,
            external_ips: addrs.external_ips,
            pod_cidrs: addrs.pod_cidrs,
            labels: self.label_set(labels),
            underlay: obj.and_then(|o| o.underlay.clone()),
            underlay_max: obj.and_then(|o| o.underlay_max.clone()),
            wg_port: status.and_then(|s| s.wg_port),
            published,
            published_by: published_by.map(|g| Arc::from(g.meta.name.as_str())),
            published_loc: published_by.and_then(|g| g.published_loc.clone()),
            loc: addrs.loc,
        })
    }

    /// The shared copy of label set `labels`, made on first sight.
    fn label_set(&mut self, labels: &Labels) -> NodeLabels {
        if let Some(shared) = self.label_sets.get(labels) {
            return shared.clone();
        }
        let shared: NodeLabels = Arc::from(labels);
        self.label_sets.insert(shared.clone());
        shared
    }

    /// The pool of node `name`, and whether a pool's `status.nodes` placed it there. The pool
    /// label decides when it names an existing pool (empty: a worker). A value that names no
    /// pool is ignored: membership falls through to status, then selectors, the first pool by
    /// name when several take the node (reported). Such a value is reported as a missing pool
    /// unless some pool's `nodeSelector` asks for exactly that label and value: upstream's
    /// gateways carry `gateway-pool: "true"` as their pools' selector label, which is no
    /// misspelt pool name.
    fn pool_of(
        &mut self,
        t: &Topology,
        src: &NodeSources<'_>,
        name: &str,
        labels: &Labels,
        addrs: &mut Addresses,
    ) -> (Option<PoolId>, bool) {
        let pool_label = labels
            .iter()
            .find(|(k, _)| &**k == POOL_LABEL_KEY)
            .map(|(_, v)| &**v);
        match pool_label {
            Some("") => return (None, false),
            Some(v) => match t.pool_id(v) {
                Some(p) => return (Some(p), false),
                None if src.membership.selector_asks_pool_label(v) => {}
                None => self.diags.push(warn(
                    Code::MissingPool,
                    &node_object(name),
                    &format!("metadata.labels.{POOL_LABEL_KEY}"),
                    format!(
                        "GatewayPool {v} does not exist; the label is ignored and pool membership falls through to the pools' status.nodes, then their nodeSelector"
                    ),
                    addrs.loc.clone(),
                )),
            },
            None => {}
        }
        let matched = src
            .membership
            .pools_taking(name, labels, !addrs.external_ips.is_empty());
        if matched.len() > 1 {
            self.several_pools(t, src, name, &matched, addrs);
        }
        let pool = matched.first().copied();
        (pool, pool.is_some_and(|p| src.lists_status(p)))
    }

    /// Reports node `name` taken by several pools (`matched`, in name order): it joins the
    /// first. A node defined nowhere else is located at its entry in a pool's status.
    fn several_pools(
        &mut self,
        t: &Topology,
        src: &NodeSources<'_>,
        name: &str,
        matched: &[PoolId],
        addrs: &mut Addresses,
    ) {
        let names: Vec<String> = matched
            .iter()
            .map(|p| t.pool(*p).name.to_string())
            .collect();
        let by_status = matched.iter().any(|p| src.lists_status(*p));
        if addrs.loc.is_none() {
            addrs.loc = matched
                .iter()
                .find_map(|p| src.status_entry(*p, name).and_then(|e| e.loc.clone()));
        }
        self.diags.push(warn(
            Code::MultiPool,
            &node_object(name),
            if by_status {
                "status.nodes"
            } else {
                "metadata.labels"
            },
            format!(
                "the node matches pools {}; it joins {} (first by name)",
                names.join(", "),
                names.first().map(String::as_str).unwrap_or("")
            ),
            addrs.loc.clone(),
        ));
    }

    /// The Site of node `name`: with a Node object, its site label when that names an
    /// existing Site, else the Site whose nodeCidrs hold one of its InternalIPs (the first by
    /// name when several do, reported); without one, its SiteNodeSlice's `siteName`.
    fn site_of(
        &mut self,
        t: &Topology,
        name: &str,
        obj: Option<&RawNode>,
        slice: Option<(&RawSlice, &RawSliceNode)>,
        addrs: &Addresses,
    ) -> Option<SiteId> {
        match (obj, slice) {
            (Some(o), _) => {
                if let Some(label) = site_label(o) {
                    match t.site_id(label) {
                        Some(s) => return Some(s),
                        None => self.diags.push(warn(
                            Code::MissingSite,
                            &node_object(name),
                            &format!("metadata.labels.{}", crate::vocab::SITE_LABEL_KEY),
                            format!(
                                "Site {label} does not exist; membership falls back to nodeCidrs"
                            ),
                            addrs.loc.clone(),
                        )),
                    }
                }
                self.site_by_address(t, name, addrs)
            }
            (None, Some((s, _))) => {
                let sn = s.site_name.as_deref()?;
                let id = t.site_id(sn);
                if id.is_none() {
                    self.diags.push(warn(
                        Code::MissingSite,
                        &format!("SiteNodeSlice/{}", s.meta.name),
                        "siteName",
                        format!("Site {sn} does not exist"),
                        s.meta.loc.clone(),
                    ));
                }
                id
            }
            (None, None) => None,
        }
    }

    /// The Site whose nodeCidrs hold an InternalIP of node `name`: the first by name when
    /// several do (reported).
    fn site_by_address(&mut self, t: &Topology, name: &str, addrs: &Addresses) -> Option<SiteId> {
        let matched: Vec<SiteId> = (0..t.sites.len())
            .map(SiteId::from_idx)
            .filter(|s| {
                t.site(*s)
                    .node_cidrs
                    .iter()
                    .any(|c| addrs.internal_ips.iter().any(|ip| c.contains(ip)))
            })
            .collect();
        if matched.len() > 1 {
            let names: Vec<String> = matched
                .iter()
                .map(|s| t.site(*s).name.to_string())
                .collect();
            self.diags.push(warn(
                Code::MultiSite,
                &node_object(name),
                "status.addresses",
                format!(
                    "the node's InternalIPs lie in the nodeCidrs of Sites {}; it joins {} (first by name)",
                    names.join(", "),
                    names.first().map(String::as_str).unwrap_or("")
                ),
                addrs.loc.clone(),
            ));
        }
        matched.first().copied()
    }
}

/// Every node name, sorted, each once, with its Node object: the names of `nodes_raw` (sorted,
/// each once) merged in one pass with `others` (names without an object until merged: slice
/// and pool status entries, each source sorted).
fn node_names<'a>(
    nodes_raw: &[&'a RawNode],
    others: impl Iterator<Item = &'a str>,
) -> Vec<(&'a str, Option<&'a RawNode>)> {
    let mut others: Vec<&str> = others.collect();
    // The sources come sorted one after the other: the stable sort merges their runs.
    others.sort();
    others.dedup();
    let mut out = Vec::with_capacity(nodes_raw.len().saturating_add(others.len()));
    let mut objects = nodes_raw.iter().copied().peekable();
    for name in others {
        while let Some(o) = objects.next_if(|o| o.meta.name.as_str() < name) {
            out.push((o.meta.name.as_str(), Some(o)));
        }
        let obj = objects.next_if(|o| o.meta.name == name);
        out.push((name, obj));
    }
    out.extend(objects.map(|o| (o.meta.name.as_str(), Some(o))));
    out
}

/// Which pools can take a node that its label does not place: a pool with a non-empty
/// `status.nodes` takes the nodes it lists, any other pool the nodes its `nodeSelector` matches
/// (all of its labels; an External pool only nodes with an ExternalIP). Indexed by node name and
/// by one label of each selector, so a node looks at the pools that can take it, not at every
/// pool: building stays linear in nodes plus pools.
struct PoolMembership<'a> {
    pools: &'a [&'a RawPool],
    by_status: FxHashMap<&'a str, SmallVec<[PoolId; 2]>>,
    by_selector_label: FxHashMap<(&'a str, &'a str), SmallVec<[PoolId; 2]>>,
    /// The values of the pool label that some pool's `nodeSelector` asks for.
    pool_label_selected: FxHashSet<&'a str>,
}

impl<'a> PoolMembership<'a> {
    fn new(pools: &'a [&'a RawPool]) -> PoolMembership<'a> {
        let mut by_status: FxHashMap<&str, SmallVec<[PoolId; 2]>> = FxHashMap::default();
        let mut by_selector_label: FxHashMap<(&str, &str), SmallVec<[PoolId; 2]>> =
            FxHashMap::default();
        let mut pool_label_selected = FxHashSet::default();
        for (pi, p) in pools.iter().enumerate() {
            let id = PoolId::from_idx(pi);
            pool_label_selected.extend(
                p.node_selector
                    .iter()
                    .filter(|(k, _)| k == POOL_LABEL_KEY)
                    .map(|(_, v)| v.as_str()),
            );
            if !p.status_nodes.is_empty() {
                for e in &p.status_nodes {
                    let ids = by_status.entry(e.name.as_str()).or_default();
                    if ids.last() != Some(&id) {
                        ids.push(id);
                    }
                }
            } else if let Some((k, v)) = p.node_selector.first() {
                by_selector_label
                    .entry((k.as_str(), v.as_str()))
                    .or_default()
                    .push(id);
            }
        }
        PoolMembership {
            pools,
            by_status,
            by_selector_label,
            pool_label_selected,
        }
    }

    /// Whether some pool's `nodeSelector` asks for the pool label with value `v`: then a node
    /// carrying it is selected by that label, which names no pool on purpose.
    fn selector_asks_pool_label(&self, v: &str) -> bool {
        self.pool_label_selected.contains(v)
    }

    /// The pools that take node `name` (with `labels`), in pool order (first by name).
    fn pools_taking(
        &self,
        name: &str,
        labels: &[(Arc<str>, Arc<str>)],
        has_external: bool,
    ) -> Vec<PoolId> {
        let mut out: Vec<PoolId> = self
            .by_status
            .get(name)
            .map(|v| v.to_vec())
            .unwrap_or_default();
        for (k, v) in labels {
            let Some(candidates) = self.by_selector_label.get(&(&**k, &**v)) else {
                continue;
            };
            for id in candidates {
                let Some(p) = self.pools.get(id.idx()) else {
                    continue;
                };
                let selected = p
                    .node_selector
                    .iter()
                    .all(|(sk, sv)| labels.iter().any(|(k, v)| **k == **sk && **v == **sv));
                if selected && (p.internal || has_external) {
                    out.push(*id);
                }
            }
        }
        out.sort_unstable();
        out.dedup();
        out
    }
}

/// Why an input that names nodes resolved none of them: how many it named, how many Sites it
/// holds, and how many nodes were left out for each reason. A result with no node would look
/// like a healthy empty cluster; the commands refuse it with this reason instead.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct NoneResolved {
    /// Node names the input gave.
    pub named: usize,
    /// Sites in the input.
    pub sites: usize,
    /// Nodes in no Site (`W-NO-SITE`).
    pub no_site: usize,
    /// Node names given by two different objects, every copy ignored (`E-DUPLICATE`).
    pub duplicate: usize,
    /// The first node left out, and where it was defined (`Node/w1 at cluster.yaml:12`).
    pub first: Option<String>,
}

impl std::fmt::Display for NoneResolved {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let nodes = if self.named == 1 { "Node" } else { "Nodes" };
        let n = self.named;
        if self.sites == 0 {
            return write!(
                f,
                "{n} {nodes} and no Site: a node takes part only in a Site (its {} label, or an InternalIP in the Site's nodeCidrs); see W-NO-SITE",
                crate::vocab::SITE_LABEL_KEY
            );
        }
        let first = self
            .first
            .as_ref()
            .map(|x| format!(" (the first: {x})"))
            .unwrap_or_default();
        if self.no_site == n {
            return write!(f, "{n} {nodes}, none in a Site{first}: see W-NO-SITE");
        }
        let mut why = Vec::new();
        if self.no_site > 0 {
            why.push(format!("{} in no Site (W-NO-SITE)", self.no_site));
        }
        if self.duplicate > 0 {
            why.push(format!(
                "{} named by two different objects (E-DUPLICATE)",
                self.duplicate
            ));
        }
        write!(f, "{n} {nodes}, none resolved{first}: {}", why.join(", "))
    }
}

impl Topology {
    /// Why no node resolved although the input named some; `None` when some node resolved or
    /// none was named.
    pub fn none_resolved(&self) -> Option<NoneResolved> {
        if !self.nodes.is_empty() || self.named_nodes == 0 {
            return None;
        }
        let left_out = |code: Code| {
            self.diagnostics
                .iter()
                .filter(move |d| d.code == code && d.object.starts_with("Node/"))
        };
        let first = left_out(Code::NoSite)
            .chain(left_out(Code::Duplicate))
            .min_by(|a, b| a.source.cmp(&b.source))
            .map(|d| match &d.source {
                Some(at) => format!("{} at {at}", d.object),
                None => d.object.clone(),
            });
        Some(NoneResolved {
            named: self.named_nodes,
            sites: self.sites.len(),
            no_site: left_out(Code::NoSite).count(),
            duplicate: left_out(Code::Duplicate).count(),
            first,
        })
    }
}
