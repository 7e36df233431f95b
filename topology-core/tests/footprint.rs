//! What a decoded cluster holds per node: the agent keeps a whole cluster's objects and its
//! topology at once (`docs/performance.md`, "Agent memory"), so the per-node shapes are checked
//! here rather than found again by a profiler.

use std::sync::Arc;
use topology_core::decode::{RawObject, decode};
use topology_core::model::Topology;

const CLUSTER: &str = "\
apiVersion: net.unbounded-cloud.io/v1alpha1
kind: Site
metadata: {name: a}
spec: {nodeCidrs: [10.0.0.0/24]}
---
apiVersion: v1
kind: Node
metadata:
  name: n1
  labels: {net.unbounded-cloud.io/site: a, role: edge}
spec: {podCIDRs: [10.1.0.0/24]}
status: {addresses: [{type: InternalIP, address: 10.0.0.1}]}
---
apiVersion: v1
kind: Node
metadata:
  name: n2
  labels: {net.unbounded-cloud.io/site: a, role: core}
spec: {podCIDRs: [10.1.1.0/24, fd00:1::/64]}
status: {addresses: [{type: InternalIP, address: 10.0.0.2}, {type: InternalIP, address: fd00::2}]}
";

/// Each kind is boxed: a decoded object is a pointer and a tag, whatever its kind.
#[test]
fn a_raw_object_is_two_words() {
    assert!(std::mem::size_of::<RawObject>() <= 16);
}

/// The label keys and values written on many nodes are held once.
#[test]
fn nodes_share_their_label_strings() {
    let d = decode([("c.yaml", CLUSTER.as_bytes())]);
    let nodes: Vec<_> = d
        .objects
        .iter()
        .filter_map(|o| match o {
            RawObject::Node(n) => Some(n),
            _ => None,
        })
        .collect();
    let [n1, n2] = nodes[..] else {
        panic!("two nodes expected, found {}", nodes.len())
    };
    let label = |n: &topology_core::decode::RawNode, key: &str| {
        n.labels
            .iter()
            .find(|(k, _)| &**k == key)
            .cloned()
            .unwrap_or_else(|| panic!("{} has no label {key}", n.meta.name))
    };
    let (k1, v1) = label(n1, "net.unbounded-cloud.io/site");
    let (k2, v2) = label(n2, "net.unbounded-cloud.io/site");
    assert!(Arc::ptr_eq(&k1, &k2), "the Site label key is held once");
    assert!(Arc::ptr_eq(&v1, &v2), "the Site name is held once");
    let (_, edge) = label(n1, "role");
    let (_, core) = label(n2, "role");
    assert_eq!((&*edge, &*core), ("edge", "core"));
}

/// Addresses and pod CIDRs keep every entry, one or two, and the topology finds the nodes by
/// name without a map of its own.
#[test]
fn addresses_and_lookups_survive_the_compact_shapes() {
    let d = decode([("c.yaml", CLUSTER.as_bytes())]);
    let t = Topology::build(d.objects.iter(), d.diagnostics);
    let n2 = t.node_id("n2").expect("n2 is a node");
    assert_eq!(t.node(n2).internal_ips.len(), 2);
    assert_eq!(t.node(n2).pod_cidrs.len(), 2);
    assert_eq!(t.node_id("n1").map(|n| &*t.node(n).name), Some("n1"));
    assert_eq!(t.node_id("n0"), None);
    assert_eq!(t.node_id("n3"), None);
}

/// The topology keeps each node's labels (for label selectors) as the decode's shared strings,
/// not copies.
#[test]
fn topology_labels_are_the_decoded_strings() {
    let d = decode([("c.yaml", CLUSTER.as_bytes())]);
    let raw_key = d
        .objects
        .iter()
        .find_map(|o| match o {
            RawObject::Node(n) => n.labels.first().map(|(k, _)| k.clone()),
            _ => None,
        })
        .expect("a labelled node");
    let t = Topology::build(d.objects.iter(), d.diagnostics.clone());
    let n1 = t.node(t.node_id("n1").expect("n1 is a node"));
    assert_eq!(n1.label("role"), Some("edge"));
    assert_eq!(n1.label("zone"), None);
    let (key, _) = n1.labels.first().expect("n1 has labels");
    assert!(Arc::ptr_eq(key, &raw_key), "one copy of the key");
}

/// Nodes with the same labels share one label set: a node's labels cost a pointer.
#[test]
fn equal_label_sets_are_held_once() {
    let twins = CLUSTER.replace("role: core", "role: edge");
    let d = decode([("c.yaml", twins.as_bytes())]);
    let t = Topology::build(d.objects.iter(), d.diagnostics);
    let labels = |name: &str| t.node(t.node_id(name).expect("a node")).labels.clone();
    assert!(Arc::ptr_eq(&labels("n1"), &labels("n2")));
    let d = decode([("c.yaml", CLUSTER.as_bytes())]);
    let t = Topology::build(d.objects.iter(), d.diagnostics);
    let labels = |name: &str| t.node(t.node_id(name).expect("a node")).labels.clone();
    assert!(!Arc::ptr_eq(&labels("n1"), &labels("n2")));
}
