//! Seeded scale generator (the standard cluster of the performance budgets).
