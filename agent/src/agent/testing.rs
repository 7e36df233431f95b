//! What the agent's unit tests build their caches and adoptions from.

use super::adopt::{Adopted, Assignment};
use crate::k8s::ResourceKind;
use crate::k8s::store::Store;
use kube::core::DynamicObject;
use kube::runtime::watcher::Event;
use serde_json::{Value, json};
use topology_core::vocab::Kind;

/// An object as a watch delivers it.
pub fn obj(v: Value) -> DynamicObject {
    serde_json::from_value(v).unwrap_or_else(|e| panic!("{e}"))
}

/// A store of `kind` whose LIST returned `objects`.
pub fn listed(kind: Kind, objects: Vec<Value>) -> Store {
    let s = Store::new(ResourceKind::of(kind));
    s.apply(&Event::Init);
    for o in objects {
        s.apply(&Event::InitApply(obj(o)));
    }
    s.apply(&Event::InitDone);
    s
}

/// Worker `n1` (UID `u1`) adopted into Site `site`.
pub fn adopted(site: &str) -> Adopted {
    Adopted {
        assignment: Assignment {
            node_uid: "u1".into(),
            site: site.into(),
            pool: None,
        },
        node_name: "n1".into(),
        resource_version: "1".into(),
        site_label: None,
        pool_label: None,
        node: json!({"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1"}}),
        sites: Vec::new(),
    }
}
