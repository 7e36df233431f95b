//! API requests by verb, resource and HTTP status, counted by a layer on the kube client's
//! service stack once per request sent (the client's own retries are turned off, so every request
//! the agent makes is one request on the wire).

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

/// The labels of one API request counter.
#[derive(Clone, Debug, Hash, PartialEq, Eq, PartialOrd, Ord, EncodeLabelSet)]
pub struct ApiRequestLabel {
    /// `get`, `list`, `watch`, `patch`, ...
    pub verb: String,
    /// `nodes`, `sites`, `pods`, ...
    pub resource: String,
    /// The HTTP status (`"200"`, `"503"`), or `"error"` when no response came.
    pub code: String,
}

/// Request counters, shared between the client and the metrics endpoint: the family the
/// `/metrics` registry exports, and the same counts in a map for tests and diagnostics.
#[derive(Clone, Debug, Default)]
pub struct ApiMetrics {
    family: Family<ApiRequestLabel, Counter>,
    counts: Arc<Mutex<BTreeMap<ApiRequestLabel, u64>>>,
}

impl ApiMetrics {
    /// Counts one request that got the HTTP status `code` (`None`: no response came).
    pub fn record(
        &self,
        method: &http::Method,
        path: &str,
        query: Option<&str>,
        code: Option<http::StatusCode>,
    ) {
        let (verb, resource) = classify(method, path, query);
        self.count(verb, resource, code);
    }

    /// Counts one request already classified.
    pub fn count(&self, verb: &str, resource: String, code: Option<http::StatusCode>) {
        let label = ApiRequestLabel {
            verb: verb.to_string(),
            resource,
            code: code.map_or_else(|| "error".to_string(), |c| c.as_u16().to_string()),
        };
        self.family.get_or_create(&label).inc();
        let mut g = match self.counts.lock() {
            Ok(g) => g,
            Err(p) => p.into_inner(),
        };
        *g.entry(label).or_default() += 1;
    }

    /// The counter family (`verb`, `resource`, `code`), for a Prometheus registry.
    pub fn family(&self) -> Family<ApiRequestLabel, Counter> {
        self.family.clone()
    }

    /// `((verb, resource, code), count)`, sorted.
    pub fn snapshot(&self) -> Vec<((String, String, String), u64)> {
        let g = match self.counts.lock() {
            Ok(g) => g,
            Err(p) => p.into_inner(),
        };
        g.iter()
            .map(|(l, n)| ((l.verb.clone(), l.resource.clone(), l.code.clone()), *n))
            .collect()
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
        let ok = Some(http::StatusCode::OK);
        m.record(&Method::GET, "/api/v1/nodes/n1", None, ok);
        m.record(&Method::GET, "/api/v1/nodes/n1", None, ok);
        m.record(&Method::GET, "/api/v1/nodes", Some("limit=500"), None);
        assert_eq!(
            m.snapshot(),
            vec![
                (("get".into(), "nodes".into(), "200".into()), 2),
                (("list".into(), "nodes".into(), "error".into()), 1)
            ]
        );
        let fam = m.family();
        let label = ApiRequestLabel {
            verb: "get".into(),
            resource: "nodes".into(),
            code: "200".into(),
        };
        assert_eq!(fam.get_or_create(&label).get(), 2);
    }
}
