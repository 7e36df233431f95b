//! Publishing what only this node can know (`agent.md`, "Reconcile"): its underlay MTU and,
//! with `--underlay-from-probe`, the path MTUs of its narrow pairs on its own Node and, on a
//! gateway, its forwarding MTUs on its own GatewayPoolNode. Called only after the dataplane
//! work succeeded, and writes only what changed.

use super::failure::PublishError;
use super::reconcile::Publication;
use crate::k8s::kinds::ResourceKind;
use kube::Client;
use kube::api::{Api, DynamicObject, Patch, PatchParams};
use serde_json::Value;
use serde_json::json;
use std::collections::BTreeMap;
use topology_core::vocab::{FORWARDING_ANNOTATION, Kind, PATH_MTU_ANNOTATION, UNDERLAY_ANNOTATION};

/// Publishes what changed.
pub async fn publish(client: &Client, node: &str, p: &Publication) -> Result<(), PublishError> {
    let mut own = serde_json::Map::new();
    if p.underlay_published != Some(p.underlay) {
        own.insert(UNDERLAY_ANNOTATION.into(), p.underlay.to_string().into());
    }
    if let Some(paths) = p.paths.as_ref().filter(|&m| *m != p.paths_published) {
        own.insert(PATH_MTU_ANNOTATION.into(), path_annotation(paths));
    }
    if !own.is_empty() {
        let nodes: Api<k8s_openapi::api::core::v1::Node> = Api::all(client.clone());
        let patch = json!({"metadata": {"annotations": own}});
        nodes
            .patch(node, &PatchParams::default(), &Patch::Merge(&patch))
            .await
            .map_err(|source| PublishError::Node {
                node: node.to_string(),
                source,
            })?;
    }
    if let Some(fwd) = &p.forwarding
        && *fwd != p.forwarding_published
    {
        let Some(name) = &p.gateway_pool_node else {
            tracing::warn!(
                node,
                "no GatewayPoolNode names this gateway; forwarding MTUs are not published"
            );
            return Ok(());
        };
        let ar = ResourceKind::of(Kind::GatewayPoolNode).api_resource();
        let api: Api<DynamicObject> = Api::all_with(client.clone(), &ar);
        // A map of strings to numbers always encodes.
        let value = serde_json::to_string(fwd).unwrap_or_default();
        let patch = json!({"metadata": {"annotations": {FORWARDING_ANNOTATION: value}}});
        api.patch(name, &PatchParams::default(), &Patch::Merge(&patch))
            .await
            .map_err(|source| PublishError::Forwarding {
                name: name.clone(),
                source,
            })?;
    }
    Ok(())
}

/// The `path-mtu` annotation's value for `entries` (`model.md`): `PEER=MTU` entries joined by
/// commas, sorted by peer; no entries removes the annotation (`null` in a merge patch).
pub fn path_annotation(entries: &BTreeMap<String, u32>) -> Value {
    if entries.is_empty() {
        return Value::Null;
    }
    let text: Vec<String> = entries.iter().map(|(p, m)| format!("{p}={m}")).collect();
    Value::String(text.join(","))
}

#[cfg(test)]
mod tests {
    use super::*;
    use topology_core::decode::decode;

    /// What the agent writes reads back as the same entries, and no entries removes it.
    #[test]
    fn the_annotation_reads_back_as_written() {
        let entries: BTreeMap<String, u32> =
            [("b".to_string(), 1400), ("c".to_string(), 1300)].into();
        let value = path_annotation(&entries);
        assert_eq!(value, "b=1400,c=1300");
        let mut y = String::from(
            "apiVersion: net.unbounded-cloud.io/v1alpha1\nkind: Site\nmetadata: {name: s}\n",
        );
        for (n, note) in [
            ("a", value.as_str().unwrap_or_default()),
            ("b", ""),
            ("c", ""),
        ] {
            y += &format!(
                "---\napiVersion: v1\nkind: Node\nmetadata:\n  name: {n}\n  labels: {{net.unbounded-cloud.io/site: s}}\n  annotations: {{{PATH_MTU_ANNOTATION}: \"{note}\"}}\n"
            );
        }
        let d = decode([("t.yaml", y.as_bytes())]);
        let t = topology_core::model::Topology::build(d.objects.iter(), d.diagnostics);
        let a = t.node_id("a").unwrap();
        let read: BTreeMap<String, u32> = t
            .path_mtus_of(a)
            .iter()
            .map(|(p, e)| (t.node(*p).name.to_string(), e.mtu))
            .collect();
        assert_eq!(read, entries);
        assert!(t.diagnostics.is_empty(), "{:?}", t.diagnostics);
        assert_eq!(path_annotation(&BTreeMap::new()), Value::Null);
    }
}
