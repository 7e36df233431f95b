//! MTU resolution along forwarding paths (`spec/mtu.md`).
