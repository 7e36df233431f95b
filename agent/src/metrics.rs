//! Prometheus metrics of the agent (`/metrics`).

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::Registry;

use crate::k8s::metrics::ApiMetrics;

/// Label: a result or an error kind.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct ResultLabel {
    /// `ok` or `error`.
    pub result: String,
}

/// Label: an error kind.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct KindLabel {
    /// `input`, `dataplane`, `publication`, ...
    pub kind: String,
}

pub use crate::k8s::metrics::ApiRequestLabel;

/// Label: an applied MTU.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct ItemLabel {
    /// `fabric`, `device`, `route`.
    pub item: String,
    /// Device name or destination.
    pub name: String,
}

/// Every metric the agent exports.
pub struct Metrics {
    /// Reconciles by result.
    pub reconciles: Family<ResultLabel, Counter>,
    /// Reconcile duration.
    pub reconcile_seconds: Histogram,
    /// Errors by kind.
    pub errors: Family<KindLabel, Counter>,
    /// API requests by verb, resource and HTTP status (the client's counters).
    pub api_requests: Family<ApiRequestLabel, Counter>,
    /// Active watches.
    pub active_watches: Gauge,
    /// MTUs applied.
    pub mtu_applied: Family<ItemLabel, Gauge>,
    /// 1 once a reconcile has succeeded.
    pub ready: Gauge,
    registry: Registry,
}

impl Default for Metrics {
    fn default() -> Self {
        Metrics::new(&ApiMetrics::default())
    }
}

impl Metrics {
    /// The agent's metrics, with the API request counters of `api` (which the client's layer
    /// increments) exported as `api_requests`.
    pub fn new(api: &ApiMetrics) -> Self {
        let mut registry = Registry::with_prefix("unbounded_mtu");
        let reconciles = Family::<ResultLabel, Counter>::default();
        let reconcile_seconds = Histogram::new(exponential_buckets(0.001, 2.0, 16));
        let errors = Family::<KindLabel, Counter>::default();
        let api_requests = api.family();
        let active_watches = Gauge::default();
        let mtu_applied = Family::<ItemLabel, Gauge>::default();
        let ready = Gauge::default();
        registry.register("reconciles", "Reconciles by result", reconciles.clone());
        registry.register(
            "reconcile_duration_seconds",
            "Reconcile duration",
            reconcile_seconds.clone(),
        );
        registry.register("errors", "Errors by kind", errors.clone());
        registry.register(
            "api_requests",
            "Kubernetes API requests by verb, resource and HTTP status",
            api_requests.clone(),
        );
        registry.register("active_watches", "Active watches", active_watches.clone());
        registry.register(
            "mtu_applied_bytes",
            "MTUs applied to the dataplane",
            mtu_applied.clone(),
        );
        registry.register("ready", "1 once a reconcile has succeeded", ready.clone());
        Metrics {
            reconciles,
            reconcile_seconds,
            errors,
            api_requests,
            active_watches,
            mtu_applied,
            ready,
            registry,
        }
    }

    /// Prometheus text exposition.
    pub fn encode(&self) -> String {
        let mut s = String::new();
        if prometheus_client::encoding::text::encode(&mut s, &self.registry).is_err() {
            s.clear();
        }
        s
    }
}
