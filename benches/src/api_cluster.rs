//! A generated cluster as the node agent's API source holds it: a reflector store per kind,
//! the metadata of the Nodes of the Sites the agent selects, every worker listed in a SiteNodeSlice of its Site and every gateway in
//! its pool's status (what the API source makes the peers' Node objects from), and the agent's
//! own Node adopted. Events are applied to the stores as a watch applies them.

use kube::core::DynamicObject;
use kube::runtime::watcher::Event;
use serde_json::{Value, json};
use std::collections::{BTreeMap, BTreeSet};
use test_utils::testkit::scale::GATEWAY_SELECTOR_KEY;
use topology_core::vocab::{API_GROUP, API_VERSION, Kind, SITE_LABEL_KEY};
use unbounded_mtu::agent::adopt::{Adopted, Assignment};
use unbounded_mtu::agent::caches::{NodeSelection, Snapshot};
use unbounded_mtu::agent::needs::Needs;
use unbounded_mtu::agent::reconcile::Linked;
use unbounded_mtu::k8s::ResourceKind;
use unbounded_mtu::k8s::store::Store;

/// The stores of one cluster and the adopted own Node.
pub struct ApiCluster {
    stores: Vec<Store>,
    nodes: Store,
    /// The own Node's adoption.
    pub adopted: Adopted,
}

/// The kinds the API source decodes (Node metadata aside).
const KINDS: [Kind; 7] = [
    Kind::Site,
    Kind::SiteNodeSlice,
    Kind::SitePeering,
    Kind::SiteGatewayPoolAssignment,
    Kind::GatewayPool,
    Kind::GatewayPoolNode,
    Kind::GatewayPoolPeering,
];

impl ApiCluster {
    /// The cluster of these objects (as the files give them) for the agent of Node `own`,
    /// holding the metadata of the Nodes labelled with one of `sites` (the agent's selection by
    /// Site label for the Sites its plan links into); `None` when `own` is not one of its Nodes
    /// or an object does not read as a `DynamicObject`.
    pub fn of(objects: &[Value], own: &str, sites: &BTreeSet<String>) -> Option<ApiCluster> {
        let (mut by_kind, nodes) = split(objects);
        let mut meta = Vec::new();
        let mut adopted = None;
        for (i, o) in nodes.iter().enumerate() {
            let name = text(o, "/metadata/name");
            let site = label(o, SITE_LABEL_KEY).unwrap_or_default();
            if name == own {
                adopted = Some(adopt(o, &name, &site, label(o, GATEWAY_SELECTOR_KEY)));
            }
            if sites.contains(&site) {
                meta.push(json!({"apiVersion": "v1", "kind": "Node", "metadata": {
                "name": name, "resourceVersion": i.to_string(),
                "labels": o.pointer("/metadata/labels").cloned().unwrap_or(json!({})),
                "annotations": o.pointer("/metadata/annotations").cloned().unwrap_or(json!({}))}}));
            }
        }
        let stores = KINDS
            .into_iter()
            .map(|k| listed(k, by_kind.remove(&k).unwrap_or_default()))
            .collect::<Option<Vec<Store>>>()?;
        Some(ApiCluster {
            stores,
            nodes: listed(Kind::Node, meta)?,
            adopted: adopted?,
        })
    }

    /// What the stores hold now, as a turn reads them.
    pub fn snapshot(&self) -> Snapshot {
        Snapshot::new(
            self.stores.iter().map(Store::held).collect(),
            Some(self.nodes.held()),
        )
    }

    /// What the API source checks on every turn besides its input, with the API source's own
    /// [`Needs`], for a plan linking `linked`: whether an assignment lists the own Site (the
    /// heavy watches), and the Node metadata selection for the linked Sites' slice members and
    /// peers.
    pub fn watch_checks(&self, needs: &mut Needs, linked: &Linked) -> (bool, NodeSelection) {
        let store = |k: Kind| self.stores.iter().find(|s| s.kind().kind == k);
        let heavy =
            store(Kind::SiteGatewayPoolAssignment).is_some_and(|a| needs.heavy(&self.adopted, a));
        let own = self.adopted.node_name.clone();
        let selection = needs.nodes(linked, &own, store(Kind::SiteNodeSlice), Some(&self.nodes));
        (heavy, selection)
    }

    /// Applies a watch's MODIFIED event of the object of this kind and name as `change`
    /// leaves it (its resource version advanced); false when no such object is held.
    pub fn modify(&self, kind: Kind, name: &str, change: impl FnOnce(&mut Value)) -> bool {
        let Some(store) = self.stores.iter().find(|s| s.kind().kind == kind) else {
            return false;
        };
        let held = store.held();
        let Some(mut v) = held
            .objects()
            .iter()
            .find(|o| o.name() == name)
            .map(|o| held.value(o))
        else {
            return false;
        };
        change(&mut v);
        let rv = v
            .pointer("/metadata/resourceVersion")
            .and_then(Value::as_str)
            .unwrap_or("0")
            .to_string();
        v["metadata"]["resourceVersion"] = json!(format!("{rv}.1"));
        match serde_json::from_value::<DynamicObject>(v) {
            Ok(o) => store.apply(&Event::Apply(o)),
            Err(_) => false,
        }
    }
}

/// The objects an API server holds for a cluster given as files: every object of the kinds
/// the API source decodes, each worker in its Site's SiteNodeSlice and each gateway in its
/// pool's status (the controller's work), and every Node as given.
pub fn served(objects: &[Value]) -> Vec<Value> {
    let (by_kind, nodes) = split(objects);
    by_kind.into_values().flatten().chain(nodes).collect()
}

/// The objects of the decoded kinds, with the SiteNodeSlices and pool statuses made from the
/// Nodes (resource versions by position), and the Nodes.
fn split(objects: &[Value]) -> (BTreeMap<Kind, Vec<Value>>, Vec<Value>) {
    let mut by_kind: BTreeMap<Kind, Vec<Value>> = BTreeMap::new();
    let (mut nodes, mut slices, mut statuses) = (Vec::new(), BTreeMap::new(), BTreeMap::new());
    for (i, o) in objects.iter().enumerate() {
        let kind = o.get("kind").and_then(Value::as_str).unwrap_or_default();
        if kind != "Node" {
            if let Some(k) = KINDS.into_iter().find(|k| k.as_str() == kind) {
                let mut o = o.clone();
                o["metadata"]["resourceVersion"] = json!(i.to_string());
                by_kind.entry(k).or_default().push(o);
            }
            continue;
        }
        let name = text(o, "/metadata/name");
        let site = label(o, SITE_LABEL_KEY).unwrap_or_default();
        match label(o, GATEWAY_SELECTOR_KEY) {
            Some(p) => statuses
                .entry(p)
                .or_insert_with(Vec::new)
                .push(pool_entry(o, &name, &site)),
            None => slices
                .entry(site)
                .or_insert_with(Vec::new)
                .push(slice_entry(o, &name)),
        }
        nodes.push(o.clone());
    }
    let net = format!("{API_GROUP}/{API_VERSION}");
    for (site, nodes) in slices {
        by_kind.entry(Kind::SiteNodeSlice).or_default().push(json!({
            "apiVersion": net, "kind": "SiteNodeSlice",
            "metadata": {"name": format!("{site}-0"), "resourceVersion": "1"},
            "siteName": site, "nodes": nodes}));
    }
    for p in by_kind.entry(Kind::GatewayPool).or_default() {
        let name = text(p, "/metadata/name");
        if let Some(nodes) = statuses.remove(&name) {
            p["status"] = json!({"nodes": nodes});
        }
    }
    (by_kind, nodes)
}

fn label(o: &Value, key: &str) -> Option<String> {
    o.pointer("/metadata/labels")
        .and_then(|l| l.get(key))
        .and_then(Value::as_str)
        .map(str::to_string)
}

fn listed(kind: Kind, objects: Vec<Value>) -> Option<Store> {
    let s = Store::new(ResourceKind::of(kind));
    s.apply(&Event::Init);
    for o in objects {
        s.apply(&Event::InitApply(serde_json::from_value(o).ok()?));
    }
    s.apply(&Event::InitDone);
    Some(s)
}

fn adopt(node: &Value, name: &str, site: &str, pool: Option<String>) -> Adopted {
    Adopted {
        assignment: Assignment {
            node_uid: format!("uid-{name}"),
            site: site.to_string(),
            pool: pool.clone(),
        },
        node_name: name.to_string(),
        resource_version: "1".into(),
        site_label: Some(site.to_string()),
        pool_label: pool,
        node: node.clone(),
        sites: Vec::new(),
    }
}

/// A Node's addresses of one type.
fn addresses(node: &Value, ty: &str) -> Vec<Value> {
    node.pointer("/status/addresses")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter(|a| a.get("type").and_then(Value::as_str) == Some(ty))
        .filter_map(|a| a.get("address").cloned())
        .collect()
}

/// A worker's SiteNodeSlice entry, with the fields upstream's `NodeInfo` has.
fn slice_entry(node: &Value, name: &str) -> Value {
    json!({"name": name, "internalIPs": addresses(node, "InternalIP"),
        "podCIDRs": node.pointer("/spec/podCIDRs").cloned().unwrap_or(json!([]))})
}

/// A gateway's pool status entry, with the fields upstream's `GatewayNodeInfo` has.
fn pool_entry(node: &Value, name: &str, site: &str) -> Value {
    json!({"name": name, "siteName": site,
        "internalIPs": addresses(node, "InternalIP"), "externalIPs": addresses(node, "ExternalIP"),
        "podCIDRs": node.pointer("/spec/podCIDRs").cloned().unwrap_or(json!([]))})
}

fn text(v: &Value, pointer: &str) -> String {
    v.pointer(pointer)
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string()
}
