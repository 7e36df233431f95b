//! I/O-free topology model.
