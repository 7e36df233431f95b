//! The Kubernetes adapter: a kube-rs client whose requests are counted, caches kept by
//! kube-runtime's watcher and reflector, backoff, and the read-only live source of the offline
//! commands (LISTs that never fail because of one malformed object).

pub mod api;
pub mod backoff;
pub mod client;
pub mod error;
pub mod kinds;
pub mod live;
pub mod metrics;
pub mod store;

pub use api::{ApiStatus, api_status};
pub use backoff::Backoff;
pub use kinds::ResourceKind;
