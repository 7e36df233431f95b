//! The API source's caches (`agent.md`, "Watch only what is needed"): a reflector per kind, the
//! heavy kinds only while needed, Node metadata restricted by the Site label to the Sites the
//! node has links into (widened to every Node while a linked peer carries no Site label), and
//! the Node objects the topology sees, made from that metadata and the SiteNodeSlice and pool
//! status entries.

use super::adopt::Adopted;
use super::reconcile::Linked;
use super::status::Status;
use super::taint::GATEWAY_TAINT_KEY;
use crate::k8s::live::SOURCE;
use crate::k8s::store::{Cached, Change, Held, ReflectOptions, Store, Version, reflect};
use crate::k8s::{Backoff, ResourceKind};
use kube::Client;
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use tokio::sync::mpsc;
use tokio::task::JoinHandle;
use topology_core::decode::Decoded;
use topology_core::vocab::{Kind, POOL_LABEL_KEY, SITE_LABEL_KEY};

/// The three heavy kinds, watched only while needed.
pub const HEAVY: [Kind; 3] = [
    Kind::GatewayPool,
    Kind::GatewayPoolNode,
    Kind::GatewayPoolPeering,
];

/// Whether a kind is one of the heavy ones.
pub fn is_heavy(k: Kind) -> bool {
    HEAVY.contains(&k)
}

/// One cache and the reflector that keeps it (none while the kind is not watched).
#[derive(Debug)]
struct Cache {
    store: Arc<Store>,
    task: Option<JoinHandle<()>>,
}

/// The caches, kept by reflector tasks (aborted on drop). The light kinds are always watched;
/// the heavy kinds (GatewayPools, GatewayPoolNodes, GatewayPoolPeerings) only while needed; Nodes
/// metadata-only, restricted by the Site label to the Sites the node has links into.
pub struct Caches {
    client: Client,
    changes: mpsc::UnboundedSender<Change>,
    caches: Vec<Cache>,
    heavy: bool,
    /// The Node metadata cache and its label selector.
    nodes: Option<(Option<String>, Cache)>,
}

impl Caches {
    /// Starts a reflector per light kind, and per heavy kind when `heavy`; changes are
    /// announced on `changes`.
    pub fn start(
        client: &Client,
        changes: &mpsc::UnboundedSender<Change>,
        status: &Status,
        heavy: bool,
    ) -> Caches {
        let mut c = Caches {
            client: client.clone(),
            changes: changes.clone(),
            caches: ResourceKind::ALL
                .into_iter()
                .filter(|k| k.kind != Kind::Node)
                .map(|k| Cache {
                    store: Arc::new(Store::new(k)),
                    task: None,
                })
                .collect(),
            heavy: false,
            nodes: None,
        };
        for i in 0..c.caches.len() {
            if !c
                .caches
                .get(i)
                .is_some_and(|x| is_heavy(x.store.kind().kind))
            {
                c.spawn(i, status);
            }
        }
        c.set_heavy(heavy, status);
        c
    }

    fn spawn(&mut self, i: usize, status: &Status) {
        let (client, changes) = (self.client.clone(), self.changes.clone());
        if let Some(c) = self.caches.get_mut(i) {
            let kind = c.store.kind();
            status.set_watch(kind.plural(), true);
            c.store = Arc::new(Store::new(kind));
            c.task = Some(tokio::spawn(reflect(
                client,
                c.store.clone(),
                ReflectOptions::default(),
                changes,
                Backoff::watch(),
            )));
        }
    }

    /// Whether the heavy kinds are watched.
    pub fn heavy(&self) -> bool {
        self.heavy
    }

    /// Starts or stops the heavy kinds' reflectors (stopping closes their watches and empties
    /// their caches).
    pub fn set_heavy(&mut self, on: bool, status: &Status) {
        if on == self.heavy {
            return;
        }
        self.heavy = on;
        for i in 0..self.caches.len() {
            let Some(kind) = self.caches.get(i).map(|c| c.store.kind()) else {
                continue;
            };
            if !is_heavy(kind.kind) {
                continue;
            }
            if on {
                self.spawn(i, status);
            } else if let Some(c) = self.caches.get_mut(i) {
                if let Some(t) = c.task.take() {
                    t.abort();
                }
                c.store = Arc::new(Store::new(kind));
                status.set_watch(kind.plural(), false);
            }
        }
    }

    /// Watches the metadata of the Nodes `selection` names; returns whether the selection
    /// changed (the new cache then has to complete its LIST).
    pub fn select_nodes(&mut self, selection: &NodeSelection, status: &Status) -> bool {
        let selector = selection.label_selector();
        if self.nodes.as_ref().is_some_and(|(s, _)| *s == selector) {
            return false;
        }
        if let Some((_, old)) = self.nodes.take()
            && let Some(t) = old.task
        {
            t.abort();
        }
        let kind = ResourceKind::of(Kind::Node);
        let store = Arc::new(Store::new(kind));
        let opts = ReflectOptions {
            label_selector: selector.clone(),
            metadata_only: true,
        };
        let task = tokio::spawn(reflect(
            self.client.clone(),
            store.clone(),
            opts,
            self.changes.clone(),
            Backoff::watch(),
        ));
        match selection {
            NodeSelection::Sites(_) => {
                status.set_watch(NODES_ALL, false);
                status.set_watch(NODES_BY_SITE, true);
                tracing::info!(selector = ?selector, "watching Node metadata by Site label");
            }
            NodeSelection::All { unlabelled } => {
                status.set_watch(NODES_BY_SITE, false);
                status.set_watch(NODES_ALL, true);
                tracing::info!(
                    peers = ?unlabelled,
                    "peers without a Site label: watching the metadata of every Node"
                );
            }
        }
        self.nodes = Some((
            selector,
            Cache {
                store,
                task: Some(task),
            },
        ));
        true
    }

    /// The cache of the Node metadata watched now (`None`: no Node metadata watch yet).
    pub fn node_metadata(&self) -> Option<&Arc<Store>> {
        self.nodes.as_ref().map(|(_, c)| &c.store)
    }

    /// Whether every watched cache completed its initial LIST.
    pub fn synced(&self) -> bool {
        self.caches
            .iter()
            .chain(self.nodes.iter().map(|(_, c)| c))
            .filter(|c| c.task.is_some())
            .all(|c| c.store.synced())
    }

    /// The store of a kind.
    pub fn store(&self, k: Kind) -> Option<&Arc<Store>> {
        self.caches
            .iter()
            .find(|c| c.store.kind().kind == k)
            .map(|c| &c.store)
    }

    /// What every watched cache holds now: one turn's input, consistent across the kinds it
    /// is read from (later events change the caches, not the snapshot).
    pub fn held(&self) -> Snapshot {
        Snapshot {
            kinds: self
                .caches
                .iter()
                .filter(|c| c.task.is_some())
                .map(|c| c.store.held())
                .collect(),
            nodes: self.nodes.as_ref().map(|(_, c)| c.store.held()),
        }
    }
}

/// What the watched caches held at one moment (the objects shared with the caches).
#[derive(Clone, Debug)]
pub struct Snapshot {
    kinds: Vec<Held>,
    nodes: Option<Held>,
}

impl Snapshot {
    /// A snapshot of these kinds' objects and this Node metadata.
    pub fn new(kinds: Vec<Held>, nodes: Option<Held>) -> Snapshot {
        Snapshot { kinds, nodes }
    }

    /// The watched kinds' objects, per kind (Node metadata aside).
    pub fn kinds(&self) -> &[Held] {
        &self.kinds
    }

    /// The Node metadata held, when it is watched.
    pub fn node_metadata(&self) -> Option<&Held> {
        self.nodes.as_ref()
    }

    /// Decodes it: every object, then the Node objects the topology sees (the own Node's labels
    /// pinned to the adopted assignment, which stays fixed for the life of the process).
    pub fn decode(&self, adopted: &Adopted) -> Decoded {
        let mut d = Decoded::default();
        for v in self.kinds.iter().flat_map(Held::each) {
            d.add_json(SOURCE, v);
        }
        for n in self.node_objects(adopted) {
            d.add_json(SOURCE, n);
        }
        d
    }

    /// The Node objects the topology sees ([`node_objects`] of what is held): the entry lists
    /// of the SiteNodeSlices, then those of the pool statuses, read one object at a time.
    pub fn node_objects(&self, adopted: &Adopted) -> Vec<Value> {
        let lists = |k: Kind, at: &'static str| {
            self.kinds
                .iter()
                .filter(move |h| h.kind().kind == k)
                .flat_map(move |h| {
                    h.each()
                        .filter_map(move |mut o| o.pointer_mut(at).map(Value::take))
                })
        };
        let meta = self.nodes.as_ref().map(Held::objects).unwrap_or_default();
        node_objects(
            adopted,
            meta,
            lists(Kind::SiteNodeSlice, "/nodes").chain(lists(Kind::GatewayPool, "/status/nodes")),
        )
    }

    /// The versions of the caches the Node objects are made of (SiteNodeSlices, GatewayPools,
    /// Node metadata): the same versions, the same Node objects.
    pub fn node_versions(&self) -> Vec<Version> {
        self.kinds
            .iter()
            .filter(|h| matches!(h.kind().kind, Kind::SiteNodeSlice | Kind::GatewayPool))
            .chain(self.nodes.iter())
            .map(Held::version)
            .collect()
    }

    /// The objects the Node objects are made of (Node metadata, SiteNodeSlices, GatewayPools)
    /// with their kinds; `None` when a nameless object is among them (it has no identity to
    /// keep anything by).
    pub fn node_sources(&self) -> Option<Vec<(Kind, &Arc<Cached>)>> {
        let held: Vec<&Held> = self
            .kinds
            .iter()
            .filter(|h| matches!(h.kind().kind, Kind::SiteNodeSlice | Kind::GatewayPool))
            .chain(self.nodes.iter())
            .collect();
        if held.iter().any(|h| !h.nameless().is_empty()) {
            return None;
        }
        Some(
            held.iter()
                .flat_map(|h| h.objects().iter().map(|o| (h.kind().kind, o)))
                .collect(),
        )
    }
}

impl Drop for Caches {
    fn drop(&mut self) {
        for c in self
            .caches
            .iter_mut()
            .chain(self.nodes.iter_mut().map(|(_, c)| c))
        {
            if let Some(t) = c.task.take() {
                t.abort();
            }
        }
    }
}

/// Whether the heavy kinds are needed: the node is a gateway, or an enabled
/// SiteGatewayPoolAssignment lists its Site.
pub fn needs_heavy(adopted: &Adopted, assignments: &Held) -> bool {
    if adopted.assignment.pool.is_some() {
        return true;
    }
    assignments.each().any(|a| {
        let enabled = a.pointer("/spec/enabled").and_then(Value::as_bool) != Some(false);
        let site = adopted.assignment.site.as_str();
        let lists_site = a
            .pointer("/spec/sites")
            .and_then(Value::as_array)
            .is_some_and(|ss| ss.iter().any(|s| s.as_str() == Some(site)));
        enabled && lists_site
    })
}

/// The Node objects the topology sees in agent mode: the own Node (from adoption, its Site and
/// pool pinned, its annotations refreshed from the metadata cache), and for every node of the
/// metadata cache `meta` that an entry of `lists` names (the `nodes` of SiteNodeSlices for
/// workers, of pool statuses for gateways; the first entry of a name counts), a Node made of
/// its metadata and the addresses and pod CIDRs of its entry. Only the entries of those nodes
/// are kept while the lists are read.
pub fn node_objects(
    adopted: &Adopted,
    meta: &[Arc<Cached>],
    lists: impl IntoIterator<Item = Value>,
) -> Vec<Value> {
    let meta: BTreeMap<&str, &Cached> = meta.iter().map(|m| (m.name(), m.as_ref())).collect();
    let mut entries: BTreeMap<String, Value> = BTreeMap::new();
    for list in lists {
        let Value::Array(list) = list else { continue };
        for e in list {
            let Some(n) = e.get("name").and_then(Value::as_str) else {
                continue;
            };
            if n != adopted.node_name && meta.contains_key(n) && !entries.contains_key(n) {
                entries.insert(n.to_string(), e);
            }
        }
    }
    let mut own = pin(adopted, adopted.node.clone());
    if let Some(mut m) = meta.get(adopted.node_name.as_str()).map(|m| m.value())
        && let Some(a) = m.pointer_mut("/metadata/annotations").map(Value::take)
        && let Some(o) = own.get_mut("metadata").and_then(Value::as_object_mut)
    {
        o.insert("annotations".to_string(), a);
    }
    let mut out = vec![own];
    for (name, e) in &entries {
        if let Some(m) = meta.get(name.as_str()) {
            out.push(peer_node(&m.value(), e));
        }
    }
    out
}

/// What [`node_objects`] reads of one of its sources, with the source's name: a Node's name,
/// labels and annotations; a SiteNodeSlice's `nodes`; a GatewayPool's `status.nodes`. Two
/// sources with equal views make the same Node objects.
pub fn node_source_view(kind: Kind, o: &Cached) -> Value {
    let mut v = o.value();
    let mut take = |at: &str| v.pointer_mut(at).map(Value::take);
    match kind {
        Kind::Node => serde_json::json!({
            "name": o.name(),
            "labels": take("/metadata/labels"),
            "annotations": take("/metadata/annotations"),
        }),
        Kind::SiteNodeSlice => serde_json::json!({"name": o.name(), "nodes": take("/nodes")}),
        Kind::GatewayPool => serde_json::json!({"name": o.name(), "nodes": take("/status/nodes")}),
        _ => Value::Null,
    }
}

/// A Node from a node's metadata (as JSON) and a SiteNodeSlice or pool status entry.
pub fn peer_node(meta: &Value, entry: &Value) -> Value {
    let ips = |field: &str, ty: &str| -> Vec<Value> {
        entry
            .get(field)
            .and_then(Value::as_array)
            .map(|a| {
                a.iter()
                    .map(|ip| serde_json::json!({"type": ty, "address": ip}))
                    .collect()
            })
            .unwrap_or_default()
    };
    let mut addresses = ips("internalIPs", "InternalIP");
    addresses.extend(ips("externalIPs", "ExternalIP"));
    let mut metadata = serde_json::Map::new();
    for k in ["name", "labels", "annotations"] {
        if let Some(v) = meta
            .pointer(&format!("/metadata/{k}"))
            .filter(|v| !v.is_null())
        {
            metadata.insert(k.to_string(), v.clone());
        }
    }
    serde_json::json!({
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": metadata,
        "status": {"addresses": addresses},
        "spec": {"podCIDRs": entry.get("podCIDRs").cloned().unwrap_or(Value::Array(Vec::new()))},
    })
}

/// The `/status` name of the Node metadata watch restricted by Site label.
pub const NODES_BY_SITE: &str = "nodes (metadata, by Site label)";
/// The `/status` name of the Node metadata watch widened to every Node.
pub const NODES_ALL: &str = "nodes (metadata, all: a linked peer has no Site label)";

/// Which Nodes' metadata the agent watches.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum NodeSelection {
    /// Those labelled with one of these Sites.
    Sites(BTreeSet<String>),
    /// Every Node: these linked peers carry no Site label (their Site comes from `nodeCidrs`),
    /// so the selection by label would lose their underlay annotations.
    All {
        /// The peers without a Site label, or not seen yet.
        unlabelled: Vec<String>,
    },
}

impl NodeSelection {
    /// The label selector of the watch (`None`: every Node).
    pub fn label_selector(&self) -> Option<String> {
        match self {
            NodeSelection::Sites(sites) => {
                let names: Vec<&str> = sites.iter().map(String::as_str).collect();
                Some(format!("{SITE_LABEL_KEY} in ({})", names.join(",")))
            }
            NodeSelection::All { .. } => None,
        }
    }

    /// The selection for `linked`, given the metadata watched now (none yet: by Site label):
    /// every Node while a linked peer is missing from it or carries no Site label; by Site label
    /// otherwise. A peer that the narrow watch does not return is missing; the wide watch then
    /// shows whether it has a label, so the selection narrows again only once every peer has
    /// one.
    pub fn for_peers(linked: &Linked, meta: Option<&Store>) -> NodeSelection {
        let Some(meta) = meta else {
            return NodeSelection::Sites(linked.sites.clone());
        };
        let unlabelled: Vec<String> = linked
            .peers
            .iter()
            .filter(|p| {
                meta.get(p).is_none_or(|m| {
                    m.value()
                        .pointer("/metadata/labels")
                        .and_then(|l| l.get(SITE_LABEL_KEY))
                        .and_then(Value::as_str)
                        .is_none_or(|s| !linked.sites.contains(s))
                })
            })
            .cloned()
            .collect();
        if unlabelled.is_empty() {
            NodeSelection::Sites(linked.sites.clone())
        } else {
            NodeSelection::All { unlabelled }
        }
    }
}

/// The nodes the SiteNodeSlices of `sites` list (by `siteName`).
pub fn slice_members(slices: &Held, sites: &BTreeSet<String>) -> BTreeSet<String> {
    slices
        .each()
        .filter(|s| {
            s.get("siteName")
                .and_then(Value::as_str)
                .is_some_and(|n| sites.contains(n))
        })
        .filter_map(|mut s| match s.get_mut("nodes").map(Value::take) {
            Some(Value::Array(nodes)) => Some(nodes),
            _ => None,
        })
        .flatten()
        .filter_map(|e| e.get("name").and_then(Value::as_str).map(str::to_string))
        .collect()
}

/// The own Node with its site and pool labels set to the adopted assignment.
pub fn pin(adopted: &Adopted, mut node: Value) -> Value {
    if let Some(meta) = node.get_mut("metadata").and_then(Value::as_object_mut) {
        let labels = meta
            .entry("labels")
            .or_insert_with(|| Value::Object(Default::default()));
        if !labels.is_object() {
            *labels = Value::Object(Default::default());
        }
        if let Some(l) = labels.as_object_mut() {
            l.insert(
                SITE_LABEL_KEY.to_string(),
                Value::String(adopted.assignment.site.clone()),
            );
            l.insert(
                POOL_LABEL_KEY.to_string(),
                Value::String(adopted.assignment.pool.clone().unwrap_or_default()),
            );
        }
    }
    node
}

/// Whether the adopted Node carried the gateway taint.
pub fn carries_gateway_taint(node: &Value) -> bool {
    node.pointer("/spec/taints")
        .and_then(Value::as_array)
        .is_some_and(|ts| {
            ts.iter().any(|t| {
                t.get("key").and_then(Value::as_str) == Some(GATEWAY_TAINT_KEY)
                    && t.get("effect").and_then(Value::as_str) == Some("NoSchedule")
            })
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn node_objects_merge_metadata_with_slice_and_pool_status_entries() {
        let adopted = crate::agent::testing::adopted("a");
        let meta = |name: &str, ann: &str| {
            json!({"apiVersion": "meta.k8s.io/v1", "kind": "PartialObjectMetadata", "metadata": {
                "name": name, "labels": {SITE_LABEL_KEY: "a"},
                "annotations": {"mtu.unbounded-cloud.io/underlay-mtu": ann}}})
        };
        let m: Vec<Arc<Cached>> = [
            ("n1", "1450"),
            ("w2", "1400"),
            ("g1", "1300"),
            ("lonely", "1200"),
        ]
        .into_iter()
        .map(|(n, a)| {
            Arc::new(Cached::of(
                ResourceKind::of(Kind::Node),
                &crate::agent::testing::obj(meta(n, a)),
            ))
        })
        .collect();
        let lists = [
            json!([{"name": "w2", "internalIPs": ["10.0.0.2"], "podCIDRs": ["10.9.2.0/24"]}]),
            json!([{"name": "g1", "internalIPs": ["10.0.0.3"], "externalIPs": ["1.1.1.1"]}]),
        ];
        let out = node_objects(&adopted, &m, lists);
        let names: Vec<&str> = out
            .iter()
            .filter_map(|n| n.pointer("/metadata/name").and_then(Value::as_str))
            .collect();
        assert_eq!(
            names,
            ["n1", "g1", "w2"],
            "the node listed nowhere is left out"
        );
        assert_eq!(
            out[0]["metadata"]["annotations"]["mtu.unbounded-cloud.io/underlay-mtu"],
            "1450"
        );
        assert_eq!(out[0]["metadata"]["labels"][SITE_LABEL_KEY], "a", "pinned");
        assert_eq!(
            out[0]["metadata"]["labels"][POOL_LABEL_KEY], "",
            "pinned worker"
        );
        assert_eq!(
            out[1]["status"]["addresses"],
            json!([{"type": "InternalIP", "address": "10.0.0.3"}, {"type": "ExternalIP", "address": "1.1.1.1"}])
        );
        assert_eq!(out[2]["spec"]["podCIDRs"], json!(["10.9.2.0/24"]));
        assert_eq!(out[2]["kind"], "Node");
    }
}
