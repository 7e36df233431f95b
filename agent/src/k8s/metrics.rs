//! API requests by verb and resource, counted by a layer on the kube client's service stack.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

/// Request counters, shared between the client and the metrics endpoint.
#[derive(Clone, Debug, Default)]
pub struct ApiMetrics {
    counts: Arc<Mutex<BTreeMap<(String, String), u64>>>,
}

impl ApiMetrics {
    /// Counts one request.
    pub fn record(&self, method: &http::Method, path: &str, query: Option<&str>) {
        let (verb, resource) = classify(method, path, query);
        let mut g = match self.counts.lock() {
            Ok(g) => g,
            Err(p) => p.into_inner(),
        };
        *g.entry((verb.to_string(), resource)).or_default() += 1;
    }

    /// `((verb, resource), count)`, sorted.
    pub fn snapshot(&self) -> Vec<((String, String), u64)> {
        let g = match self.counts.lock() {
            Ok(g) => g,
            Err(p) => p.into_inner(),
        };
        g.iter().map(|(k, v)| (k.clone(), *v)).collect()
    }
}

/// The verb (`get`, `list`, `watch`, `patch`, ...) and resource (`nodes`, `sites`, `pods`, ...)
/// of a request path such as `/api/v1/nodes/n1` or `/apis/g/v/namespaces/ns/pods/p`.
pub fn classify(method: &http::Method, path: &str, query: Option<&str>) -> (&'static str, String) {
    let segs: Vec<&str> = path.split('/').filter(|s| !s.is_empty()).collect();
    // Skip `api/v1` or `apis/<group>/<version>`, then `namespaces/<ns>` when a resource follows.
    let mut rest: &[&str] = match segs.first() {
        Some(&"api") => segs.get(2..).unwrap_or_default(),
        Some(&"apis") => segs.get(3..).unwrap_or_default(),
        _ => &segs,
    };
    if rest.first() == Some(&"namespaces") && rest.len() > 2 {
        rest = rest.get(2..).unwrap_or_default();
    }
    let resource = rest
        .first()
        .map(|s| s.to_string())
        .unwrap_or_else(|| "-".to_string());
    let named = rest.len() > 1;
    let watch = query.is_some_and(|q| q.split('&').any(|kv| kv == "watch=true" || kv == "watch=1"));
    let verb = match *method {
        http::Method::GET if watch => "watch",
        http::Method::GET if named => "get",
        http::Method::GET => "list",
        http::Method::PATCH => "patch",
        http::Method::PUT => "update",
        http::Method::POST => "create",
        http::Method::DELETE => "delete",
        _ => "other",
    };
    (verb, resource)
}

#[cfg(test)]
mod tests {
    use super::*;
    use http::Method;

    #[test]
    fn verbs_and_resources() {
        assert_eq!(
            classify(&Method::GET, "/api/v1/nodes/n1", None),
            ("get", "nodes".into())
        );
        assert_eq!(
            classify(
                &Method::GET,
                "/api/v1/nodes",
                Some("watch=true&fieldSelector=x")
            ),
            ("watch", "nodes".into())
        );
        assert_eq!(
            classify(
                &Method::GET,
                "/apis/net.unbounded-cloud.io/v1alpha1/sites",
                Some("limit=500")
            ),
            ("list", "sites".into())
        );
        assert_eq!(
            classify(&Method::PATCH, "/api/v1/namespaces/ns/pods/p", None),
            ("patch", "pods".into())
        );
        assert_eq!(
            classify(&Method::GET, "/api/v1/namespaces", None),
            ("list", "namespaces".into())
        );
        let m = ApiMetrics::default();
        m.record(&Method::GET, "/api/v1/nodes/n1", None);
        m.record(&Method::GET, "/api/v1/nodes/n1", None);
        assert_eq!(m.snapshot(), vec![(("get".into(), "nodes".into()), 2)]);
    }
}
