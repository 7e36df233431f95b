//! Test kit (feature `testkit`, tests and benches only): proptest strategies for random
//! topologies and a seeded scale generator.

pub mod scale;
