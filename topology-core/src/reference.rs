//! The naive reference oracle (feature `reference`, tests and benches only).
