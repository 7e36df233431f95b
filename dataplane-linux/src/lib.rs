//! Linux dataplane adapter: applies a node plan over netlink in the safe write order of
//! `agent.md`. Filled by the dataplane issue; nothing here pretends to work yet.
