//! Publishing what only this node can know (`agent.md`, "Reconcile"): its underlay MTU on its
//! own Node and, on a gateway, its forwarding MTUs on its own GatewayPoolNode. Called only after
//! the dataplane work succeeded, and writes only what changed.

use super::failure::PublishError;
use super::reconcile::Publication;
use crate::k8s::kinds::ResourceKind;
use kube::Client;
use kube::api::{Api, DynamicObject, Patch, PatchParams};
use serde_json::json;
use topology_core::vocab::{FORWARDING_ANNOTATION, Kind, UNDERLAY_ANNOTATION};

/// Publishes what changed.
pub async fn publish(client: &Client, node: &str, p: &Publication) -> Result<(), PublishError> {
    if p.underlay_published != Some(p.underlay) {
        let nodes: Api<k8s_openapi::api::core::v1::Node> = Api::all(client.clone());
        let patch =
            json!({"metadata": {"annotations": {UNDERLAY_ANNOTATION: p.underlay.to_string()}}});
        nodes
            .patch(node, &PatchParams::default(), &Patch::Merge(&patch))
            .await
            .map_err(|source| PublishError::Underlay {
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
