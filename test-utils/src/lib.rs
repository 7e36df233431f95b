//! Test utilities of the workspace: the naive reference oracle ([`crate::reference`]), the
//! test kit ([`testkit`]: proptest strategies for random topologies and the seeded
//! [`testkit::scale`] generator), the network namespaces of the real-kernel tests
//! ([`netns`]) and a stateful fake Kubernetes API server ([`apiserver`]).
//!
//! Test oracles live outside the product crates: this crate is `publish = false` and only ever a
//! dev-dependency of the product crates (`topology-core`, `mtu-solver`, `dataplane-linux`,
//! `probe-linux`, `agent`), or a dependency of non-product packages (`benches`, `fuzz`). It is never a normal
//! dependency of a product crate (`tidy/tests/no_io.rs` checks this). The oracle uses
//! only the public API of `topology-core`, so that it stays independent of the code it checks.

pub mod apiserver;
pub mod netns;
pub mod reference;
pub mod testkit;
