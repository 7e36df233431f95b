//! The startup-only watch of the agent's own Node: from the adoption GET's resource version,
//! field-selected by name, until the acknowledgment is written. A changed UID, Site or pool label
//! ends the process (exit 3); the Node's deletion too (exit 4).

use super::adopt::{Baseline, PoolBasis, label, membership, pool_from_label};
use crate::k8s::api::{api_status, typed};
use crate::k8s::error::describe;
use crate::k8s::store::watch_timeout;
use crate::k8s::{Backoff, ResourceKind};
use futures::StreamExt;
use k8s_openapi::api::core::v1::Node;
use kube::Client;
use kube::api::{Api, WatchParams};
use kube::core::WatchEvent;
use serde_json::Value;
use tokio::sync::watch;
use topology_core::vocab::{Kind, POOL_LABEL_KEY, SITE_LABEL_KEY};

/// What an observation of the own Node means for the process.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// Nothing that matters changed.
    Unchanged,
    /// The UID, Site or pool changed: restart (exit 3).
    Changed(String),
    /// The Node was deleted (exit 4).
    Deleted,
}

impl Verdict {
    /// The exit code the verdict ends the process with, if it ends it.
    pub fn exit_code(&self) -> Option<u8> {
        match self {
            Verdict::Unchanged => None,
            Verdict::Changed(_) => Some(3),
            Verdict::Deleted => Some(4),
        }
    }
}

/// Compares an observed Node with the baseline (the adoption GET's view). A site label that is
/// present must state the adopted Site; a site label present at adoption must still be there;
/// without a site label, the node's InternalIPs must still place it in the adopted Site (by the
/// Sites listed at adoption). The pool label must be the one read at adoption, or (adopted only)
/// state the adopted pool; while the assignment is broken every change of it ends the process.
pub fn judge_node(base: &Baseline, node: &Value) -> Verdict {
    let uid = node
        .pointer("/metadata/uid")
        .and_then(Value::as_str)
        .unwrap_or_default();
    if uid != base.node_uid {
        return Verdict::Changed(format!(
            "the Node's UID changed from {} to {uid}",
            base.node_uid
        ));
    }
    let site = label(node, SITE_LABEL_KEY);
    let site_changed = match site {
        Some(s) => s != base.site,
        None if base.site_label.is_some() => true,
        None => membership(node, &base.sites, &[]).0.as_deref() != Some(base.site.as_str()),
    };
    if site_changed {
        return Verdict::Changed(format!(
            "the Node's Site label changed from {:?} to {:?} (adopted Site {})",
            base.site_label, site, base.site
        ));
    }
    let pool = label(node, POOL_LABEL_KEY);
    // The label read at adoption may name a missing pool (`"true"` on live gateways) while the
    // pool came from a status or selector: compare labels, not the label with the pool.
    let pool_changed = pool != base.pool_label.as_deref()
        && match (&base.pool, pool) {
            (PoolBasis::Adopted(adopted), Some(p)) => pool_from_label(p) != *adopted,
            (PoolBasis::Adopted(_), None) | (PoolBasis::Broken, _) => true,
        };
    if pool_changed {
        return Verdict::Changed(format!(
            "the Node's gateway-pool label changed from {:?} to {:?}",
            base.pool_label, pool
        ));
    }
    Verdict::Unchanged
}

/// The verdict of one watch event (`None` for events that say nothing about the Node).
pub fn judge_event(base: &Baseline, ev: &WatchEvent<Value>) -> Option<Verdict> {
    match ev {
        WatchEvent::Added(n) | WatchEvent::Modified(n) => Some(judge_node(base, n)),
        WatchEvent::Deleted(_) => Some(Verdict::Deleted),
        WatchEvent::Bookmark(_) | WatchEvent::Error(_) => None,
    }
}

/// How the startup watch ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum WatchEnd {
    /// The acknowledgment was written; the watch is closed.
    Cancelled,
    /// The process must end (exit 3 or 4).
    Verdict(Verdict),
}

/// The field selector of the own-Node watch.
pub fn field_selector(node_name: &str) -> String {
    format!("metadata.name={node_name}")
}

/// An event of the typed own-Node watch as the raw JSON the judges read.
fn raw_event(ev: WatchEvent<Node>) -> WatchEvent<Value> {
    let raw = |n: Node| {
        typed(
            ResourceKind::of(Kind::Node),
            serde_json::to_value(n).unwrap_or_default(),
        )
    };
    match ev {
        WatchEvent::Added(n) => WatchEvent::Added(raw(n)),
        WatchEvent::Modified(n) => WatchEvent::Modified(raw(n)),
        WatchEvent::Deleted(n) => WatchEvent::Deleted(raw(n)),
        WatchEvent::Bookmark(b) => WatchEvent::Bookmark(b),
        WatchEvent::Error(s) => WatchEvent::Error(s),
    }
}

/// Watches the own Node from `base` (an adopted or a broken assignment) until `cancel` turns
/// true or a verdict ends the process. Closed streams and errors reconnect after `backoff`, from
/// the last resource version seen; `410 Gone` revalidates with a GET (404 there = deleted) and
/// resumes from its resource version.
pub async fn watch_own_node(
    client: Client,
    base: Baseline,
    mut cancel: watch::Receiver<bool>,
    mut backoff: Backoff,
) -> WatchEnd {
    let nodes: Api<Node> = Api::all(client);
    let selector = field_selector(&base.node_name);
    let mut rv = base.resource_version.clone();
    loop {
        if *cancel.borrow() {
            return WatchEnd::Cancelled;
        }
        let params = WatchParams::default()
            .fields(&selector)
            .timeout(watch_timeout());
        let mut gone = false;
        let session = async {
            match nodes.watch(&params, &rv).await {
                Ok(events) => {
                    let mut events = std::pin::pin!(events);
                    while let Some(ev) = events.next().await {
                        match ev.map(raw_event) {
                            Ok(WatchEvent::Error(s)) => {
                                tracing::info!(code = s.code, reason = %s.reason, "own-Node watch error");
                                gone = s.code == 410;
                                return None;
                            }
                            Ok(ev) => {
                                backoff.reset();
                                match &ev {
                                    WatchEvent::Added(o)
                                    | WatchEvent::Modified(o)
                                    | WatchEvent::Deleted(o) => {
                                        if let Some(v) = rv_of(o) {
                                            rv = v.to_string();
                                        }
                                    }
                                    WatchEvent::Bookmark(b) => {
                                        rv = b.metadata.resource_version.clone()
                                    }
                                    WatchEvent::Error(_) => {}
                                }
                                if let Some(v) = judge_event(&base, &ev)
                                    && v != Verdict::Unchanged
                                {
                                    return Some(v);
                                }
                            }
                            Err(e) => {
                                tracing::info!(error = %describe(&e), "own-Node watch stream failed");
                                gone = api_status(&e).is_some_and(|s| s.code == 410);
                                return None;
                            }
                        }
                    }
                    None
                }
                Err(e) => {
                    tracing::warn!(error = %describe(&e), "own-Node WATCH failed");
                    gone = api_status(&e).is_some_and(|s| s.code == 410);
                    None
                }
            }
        };
        tokio::select! {
            v = session => if let Some(v) = v { return WatchEnd::Verdict(v) },
            _ = cancel.wait_for(|c| *c) => return WatchEnd::Cancelled,
        }
        let delay = backoff.next_delay();
        tokio::select! {
            _ = tokio::time::sleep(delay) => {}
            _ = cancel.wait_for(|c| *c) => return WatchEnd::Cancelled,
        }
        if gone {
            // The resource version expired: revalidate with a GET and resume from there.
            let got = tokio::select! {
                g = nodes.get(&base.node_name) => g,
                _ = cancel.wait_for(|c| *c) => return WatchEnd::Cancelled,
            };
            match got {
                Ok(n) => {
                    rv = n.metadata.resource_version.clone().unwrap_or_default();
                    let n = typed(
                        ResourceKind::of(Kind::Node),
                        serde_json::to_value(n).unwrap_or_default(),
                    );
                    let v = judge_node(&base, &n);
                    if v != Verdict::Unchanged {
                        return WatchEnd::Verdict(v);
                    }
                }
                Err(e) if api_status(&e).is_some_and(|s| s.code == 404) => {
                    return WatchEnd::Verdict(Verdict::Deleted);
                }
                Err(e) => tracing::warn!(error = %describe(&e), "own-Node revalidation failed"),
            }
        }
    }
}

/// `metadata.resourceVersion` of a raw object.
fn rv_of(v: &Value) -> Option<&str> {
    v.pointer("/metadata/resourceVersion")
        .and_then(Value::as_str)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::agent::adopt::{Adopted, Assignment, BrokenAssignment};
    use serde_json::json;

    fn adopted(site_label: Option<&str>, pool_label: Option<&str>, pool: Option<&str>) -> Baseline {
        Adopted {
            assignment: Assignment {
                node_uid: "u1".into(),
                site: "a".into(),
                pool: pool.map(Into::into),
            },
            node_name: "n1".into(),
            resource_version: "5".into(),
            site_label: site_label.map(Into::into),
            pool_label: pool_label.map(Into::into),
            node: json!({}),
            sites: vec![
                json!({"apiVersion": "net.unbounded-cloud.io/v1alpha1", "kind": "Site",
                "metadata": {"name": "a"}, "spec": {"nodeCidrs": ["10.0.0.0/16"]}}),
            ],
        }
        .baseline()
    }

    fn node_at(uid: &str, labels: Value, ip: &str) -> Value {
        json!({"metadata": {"name": "n1", "uid": uid, "labels": labels},
               "status": {"addresses": [{"type": "InternalIP", "address": ip}]}})
    }

    fn node(uid: &str, labels: Value) -> Value {
        node_at(uid, labels, "10.0.0.5")
    }

    #[test]
    fn verdicts_and_exit_codes() {
        let a = adopted(Some("a"), Some(""), None);
        let same = node(
            "u1",
            json!({"net.unbounded-cloud.io/site": "a", "net.unbounded-cloud.io/gateway-pool": ""}),
        );
        assert_eq!(judge_node(&a, &same), Verdict::Unchanged);
        assert_eq!(judge_node(&a, &same).exit_code(), None);
        let uid = node(
            "u2",
            json!({"net.unbounded-cloud.io/site": "a", "net.unbounded-cloud.io/gateway-pool": ""}),
        );
        assert_eq!(judge_node(&a, &uid).exit_code(), Some(3));
        let site = node(
            "u1",
            json!({"net.unbounded-cloud.io/site": "b", "net.unbounded-cloud.io/gateway-pool": ""}),
        );
        assert_eq!(judge_node(&a, &site).exit_code(), Some(3));
        let pool = node(
            "u1",
            json!({"net.unbounded-cloud.io/site": "a", "net.unbounded-cloud.io/gateway-pool": "p"}),
        );
        assert_eq!(judge_node(&a, &pool).exit_code(), Some(3));
        let unlabelled = node("u1", json!({"net.unbounded-cloud.io/site": "a"}));
        assert_eq!(judge_node(&a, &unlabelled).exit_code(), Some(3));
        assert_eq!(
            judge_event(&a, &WatchEvent::Deleted(same.clone())).and_then(|v| v.exit_code()),
            Some(4)
        );
        // Adopted from nodeCidrs and a pool LIST: a label stating the same values is no change.
        let b = adopted(None, None, Some("p"));
        assert_eq!(judge_node(&b, &pool), Verdict::Unchanged);
        assert_eq!(judge_node(&b, &node("u1", json!({}))), Verdict::Unchanged);
        assert_eq!(judge_node(&b, &same).exit_code(), Some(3));
        // Adopted from nodeCidrs: an InternalIP outside the Site's nodeCidrs is a Site change.
        let moved = node_at("u1", json!({}), "10.9.0.5");
        assert_eq!(judge_node(&b, &moved).exit_code(), Some(3));
    }

    #[test]
    fn a_label_naming_a_missing_pool_is_compared_as_a_label() {
        // Adopted PH from its status while the label says "true" (a missing pool): the same
        // label, or one now naming PH, is no change; another value or none is.
        let a = adopted(Some("a"), Some("true"), Some("PH"));
        let with = |pool: Option<&str>| {
            let mut labels = json!({"net.unbounded-cloud.io/site": "a"});
            if let Some(p) = pool {
                labels[POOL_LABEL_KEY] = json!(p);
            }
            node("u1", labels)
        };
        assert_eq!(judge_node(&a, &with(Some("true"))), Verdict::Unchanged);
        assert_eq!(judge_node(&a, &with(Some("PH"))), Verdict::Unchanged);
        assert_eq!(judge_node(&a, &with(Some(""))).exit_code(), Some(3));
        assert_eq!(judge_node(&a, &with(Some("other"))).exit_code(), Some(3));
        assert_eq!(judge_node(&a, &with(None)).exit_code(), Some(3));

        // Broken: every change of the label ends the process, to an empty value too.
        let broken = BrokenAssignment {
            node_uid: "u1".into(),
            node_name: "n1".into(),
            resource_version: "5".into(),
            site: "a".into(),
            site_label: Some("a".into()),
            pool_label: "missing".into(),
            sites: Vec::new(),
        }
        .baseline();
        assert_eq!(
            judge_node(&broken, &with(Some("missing"))),
            Verdict::Unchanged
        );
        for v in [Some(""), Some("PH"), None] {
            assert_eq!(judge_node(&broken, &with(v)).exit_code(), Some(3), "{v:?}");
        }
        assert!(
            BrokenAssignment {
                node_uid: "u1".into(),
                node_name: "n1".into(),
                resource_version: "5".into(),
                site: "a".into(),
                site_label: None,
                pool_label: "missing".into(),
                sites: Vec::new(),
            }
            .reason()
            .contains("GatewayPool \"missing\", which does not exist")
        );
    }
}
