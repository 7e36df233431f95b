//! The Kubernetes adapter: a kube-rs client, raw LIST/WATCH requests that never fail because of one
//! malformed object, reflector-style stores, backoff, and the read-only live source of the offline
//! commands.

pub mod api;
pub mod backoff;
pub mod client;
pub mod kinds;
pub mod live;
pub mod metrics;
pub mod store;

pub use api::{ApiStatus, api_status};
pub use backoff::Backoff;
pub use kinds::ResourceKind;
