//! Removing the gateway taint from a node that adopted the worker role: retried only on write
//! conflicts (409), never on an admission denial.

use crate::k8s::api_status;
use k8s_openapi::api::core::v1::Node;
use kube::Client;
use kube::api::{Api, Patch, PatchParams};
use serde_json::json;
use std::time::Duration;

/// The gateway taint's key (effect `NoSchedule`).
pub const GATEWAY_TAINT_KEY: &str = "net.unbounded-cloud.io/gateway-node";

/// Attempts, first delay and delay cap of the conflict retries.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RetryPolicy {
    /// Attempts in all.
    pub tries: u32,
    /// The delay after the first conflict.
    pub first: Duration,
    /// The delay cap.
    pub max: Duration,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        RetryPolicy {
            tries: 5,
            first: Duration::from_millis(100),
            max: Duration::from_secs(2),
        }
    }
}

impl RetryPolicy {
    /// The delay after failed attempt `attempt` (1-based) when `err` may be retried, `None` when
    /// the error is returned at once (not a conflict, or no attempt left).
    pub fn retry_after(&self, attempt: u32, err: &kube::Error) -> Option<Duration> {
        if attempt >= self.tries || !is_conflict(err) {
            return None;
        }
        let shift = attempt.saturating_sub(1).min(16);
        Some(self.first.saturating_mul(1u32 << shift).min(self.max))
    }
}

/// Whether an error is a write conflict (409).
pub fn is_conflict(e: &kube::Error) -> bool {
    api_status(e).is_some_and(|s| s.code == 409)
}

/// What happened to the taint.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TaintOutcome {
    /// The Node does not carry it.
    Absent,
    /// Removed, after this many attempts.
    Removed {
        /// Attempts made.
        attempts: u32,
    },
}

/// Whether a Node carries the gateway taint.
pub fn has_gateway_taint(node: &Node) -> bool {
    node.spec
        .as_ref()
        .and_then(|s| s.taints.as_ref())
        .is_some_and(|ts| {
            ts.iter()
                .any(|t| t.key == GATEWAY_TAINT_KEY && t.effect == "NoSchedule")
        })
}

/// Removes the gateway taint from `node_name`: GET, then a merge PATCH of the remaining taints
/// guarded by the resource version read (a race is a 409). Retries only conflicts, per `policy`;
/// any other error (an admission denial: 403, 422, ...) is returned at once with its API status.
pub async fn remove_gateway_taint(
    client: &Client,
    node_name: &str,
    policy: RetryPolicy,
) -> Result<TaintOutcome, kube::Error> {
    let nodes: Api<Node> = Api::all(client.clone());
    let mut attempt = 0u32;
    loop {
        attempt = attempt.saturating_add(1);
        let node = nodes.get(node_name).await?;
        if !has_gateway_taint(&node) {
            return Ok(if attempt == 1 {
                TaintOutcome::Absent
            } else {
                TaintOutcome::Removed {
                    attempts: attempt - 1,
                }
            });
        }
        let remaining: Vec<_> = node
            .spec
            .as_ref()
            .and_then(|s| s.taints.clone())
            .unwrap_or_default()
            .into_iter()
            .filter(|t| !(t.key == GATEWAY_TAINT_KEY && t.effect == "NoSchedule"))
            .collect();
        let patch = json!({
            "metadata": {"resourceVersion": node.metadata.resource_version},
            "spec": {"taints": remaining},
        });
        match nodes
            .patch(node_name, &PatchParams::default(), &Patch::Merge(&patch))
            .await
        {
            Ok(_) => return Ok(TaintOutcome::Removed { attempts: attempt }),
            Err(e) => match policy.retry_after(attempt, &e) {
                Some(d) => {
                    tracing::info!(attempt, delay = ?d, "gateway taint removal conflicted; retrying");
                    tokio::time::sleep(d).await;
                }
                None => return Err(e),
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use kube::core::Status;

    fn api(code: u16, reason: &str) -> kube::Error {
        kube::Error::Api(Status::failure("x", reason).with_code(code).boxed())
    }

    #[test]
    fn retries_only_conflicts_within_limits() {
        let p = RetryPolicy::default();
        let delays: Vec<_> = (1..=5)
            .map(|a| p.retry_after(a, &api(409, "Conflict")))
            .collect();
        assert_eq!(
            delays,
            vec![
                Some(Duration::from_millis(100)),
                Some(Duration::from_millis(200)),
                Some(Duration::from_millis(400)),
                Some(Duration::from_millis(800)),
                None
            ]
        );
        let long = RetryPolicy { tries: 10, ..p };
        assert_eq!(
            long.retry_after(6, &api(409, "Conflict")),
            Some(Duration::from_secs(2))
        );
        assert_eq!(p.retry_after(1, &api(403, "Forbidden")), None);
        assert_eq!(p.retry_after(1, &api(422, "Invalid")), None);
        assert_eq!(p.retry_after(1, &api(500, "InternalError")), None);
    }
}
