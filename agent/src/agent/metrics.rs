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

/// Label: the step that failed.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct StepLabel {
    /// `input`, `resolve`, `detect`, `dataplane`, `publish` or `api`.
    pub step: String,
}

/// Label: the build.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct BuildLabel {
    /// The crate version.
    pub version: String,
    /// The commit it was built from.
    pub commit: String,
}

pub use crate::k8s::metrics::ApiRequestLabel;

/// Label: an applied MTU.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct ItemLabel {
    /// `device/<name>` or `fabric/<bridge>`.
    pub item: String,
}

/// Label: a link's peer.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct PeerLabel {
    /// The peer node's name.
    pub peer: String,
}

/// Every metric the agent exports.
pub struct Metrics {
    /// Reconciles by result.
    pub reconciles: Family<ResultLabel, Counter>,
    /// Reconcile duration.
    pub reconcile_seconds: Histogram,
    /// Errors by step (every step present from the start, at 0).
    pub errors: Family<StepLabel, Counter>,
    /// API requests by verb, resource and HTTP status (the client's counters).
    pub api_requests: Family<ApiRequestLabel, Counter>,
    /// Active watches.
    pub active_watches: Gauge,
    /// MTUs the kernel carries, in every mode that writes it.
    pub applied_mtu: Family<ItemLabel, Gauge>,
    /// 1 once a reconcile has succeeded.
    pub ready: Gauge,
    /// The largest packet each link's underlay path answered in the last probe run.
    pub link_probed: Family<PeerLabel, Gauge>,
    /// Links of the last probe run whose path carries less than the plan sends.
    pub link_black_holes: Gauge,
    /// Repairs of kernel state someone else changed (they wrote something).
    pub repairs: Counter,
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
        let errors = Family::<StepLabel, Counter>::default();
        for step in super::failure::Step::ALL {
            drop(errors.get_or_create(&StepLabel {
                step: step.as_str().into(),
            }));
        }
        let api_requests = api.family();
        let active_watches = Gauge::default();
        let applied_mtu = Family::<ItemLabel, Gauge>::default();
        let build_info = Family::<BuildLabel, Gauge>::default();
        build_info
            .get_or_create(&BuildLabel {
                version: env!("CARGO_PKG_VERSION").into(),
                commit: env!("UNBOUNDED_MTU_COMMIT").into(),
            })
            .set(1);
        let ready = Gauge::default();
        let link_probed = Family::<PeerLabel, Gauge>::default();
        let link_black_holes = Gauge::default();
        let repairs = Counter::default();
        registry.register("reconciles", "Reconciles by result", reconciles.clone());
        registry.register(
            "reconcile_duration_seconds",
            "Reconcile duration",
            reconcile_seconds.clone(),
        );
        registry.register("errors", "Failures by agent step", errors.clone());
        registry.register(
            "api_requests",
            "Kubernetes API requests by verb, resource and HTTP status",
            api_requests.clone(),
        );
        registry.register("active_watches", "Active watches", active_watches.clone());
        registry.register(
            "applied_mtu_bytes",
            "MTUs the kernel carries, by device and fabric",
            applied_mtu.clone(),
        );
        registry.register("build_info", "The build: version and commit", build_info);
        registry.register("ready", "1 once a reconcile has succeeded", ready.clone());
        registry.register(
            "link_probed_bytes",
            "The largest packet each link's underlay path answered in the last probe run",
            link_probed.clone(),
        );
        registry.register(
            "link_black_holes",
            "Links whose path carried less than the plan sends in the last probe run",
            link_black_holes.clone(),
        );
        registry.register(
            "kernel_repairs",
            "Repairs of owned kernel state that someone else changed",
            repairs.clone(),
        );
        Metrics {
            reconciles,
            reconcile_seconds,
            errors,
            api_requests,
            active_watches,
            applied_mtu,
            ready,
            link_probed,
            link_black_holes,
            repairs,
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
