//! Shared helpers for the criterion benchmarks and the `perf-budget` report.
