//! Changes someone else makes to what the adapter owns, as the kernel announces them: a
//! `NETLINK_ROUTE` socket subscribed to the link, route, rule and neighbour notifications of
//! its namespace, which keeps only those about the adapter's table, its policy rule, its devices
//! (and the ports of its bridge) and the neighbours on them. The adapter's own writes are
//! announced too: a repair that follows them finds nothing to write.

use crate::error::{Error, Result};
use crate::netlink::NetlinkKernel;
use crate::route_dump::attributes;
use crate::socket::{FrameKind, frames};
use crate::types::Settings;
use netlink_sys::{Socket as RawSocket, SocketAddr, protocols::NETLINK_ROUTE};
use std::collections::{BTreeSet, HashMap};
use std::os::fd::AsFd;
use std::time::Duration;

/// `RTMGRP_LINK | RTMGRP_NEIGH | RTMGRP_IPV4_ROUTE | RTMGRP_IPV4_RULE | RTMGRP_IPV6_ROUTE` and
/// `RTNLGRP_IPV6_RULE` (group 19) as a bind mask.
const GROUPS: u32 = 0x1 | 0x4 | 0x40 | 0x80 | 0x400 | (1 << 18);

const RTM_NEWLINK: u16 = 16;
const RTM_DELLINK: u16 = 17;
const RTM_NEWROUTE: u16 = 24;
const RTM_DELROUTE: u16 = 25;
const RTM_NEWNEIGH: u16 = 28;
const RTM_DELNEIGH: u16 = 29;
const RTM_NEWRULE: u16 = 32;
const RTM_DELRULE: u16 = 33;

const IFLA_IFNAME: u16 = 3;
const IFLA_MASTER: u16 = 10;
const RTA_TABLE: u16 = 15;
const FRA_PRIORITY: u16 = 6;
const FRA_TABLE: u16 = 15;

/// `sizeof(struct ifinfomsg)`; `sizeof(struct rtmsg)`, also that of `struct fib_rule_hdr`.
/// (`struct ndmsg` is read by its `ndm_ifindex` alone, at byte 4.)
const IFINFOMSG: usize = 16;
const RTMSG: usize = 12;

/// Notifications about the adapter's state in the namespace the monitor was opened in.
#[derive(Debug)]
pub struct Monitor {
    socket: RawSocket,
    filter: Filter,
    buf: Vec<u8>,
}

/// Which notifications are about the adapter's state.
#[derive(Debug)]
struct Filter {
    table: u32,
    rule_priority: u32,
    /// The names of the devices the adapter owns or sets (its tunnel devices, the pod bridge).
    names: BTreeSet<String>,
    /// Their interface indexes, as last announced.
    indexes: HashMap<u32, String>,
}

impl Monitor {
    /// Subscribes in the calling thread's namespace; `devices` are the names of the devices the
    /// adapter sets besides its own tunnel devices (the pod bridge).
    pub fn open(settings: &Settings, devices: &[String]) -> Result<Monitor> {
        let io = |op: &str, e: std::io::Error| Error::Io {
            op: op.to_string(),
            source: e,
        };
        let mut socket = RawSocket::new(NETLINK_ROUTE).map_err(|e| io("netlink socket", e))?;
        socket
            .bind(&SocketAddr::new(0, GROUPS))
            .map_err(|e| io("netlink bind to notification groups", e))?;
        socket
            .set_rx_buf_sz(1usize << 20)
            .map_err(|e| io("netlink SO_RCVBUF", e))?;
        let links = NetlinkKernel::new()?.links()?;
        Ok(Monitor {
            socket,
            filter: Filter::new(
                settings,
                devices,
                links.into_iter().map(|l| (l.index, l.name)),
            ),
            buf: Vec::with_capacity(64 * 1024),
        })
    }

    /// [`Monitor::open`] in the namespace at `netns` (the caller's when `None`); the socket
    /// stays in that namespace whichever thread reads it.
    pub fn open_in(
        netns: Option<&std::path::Path>,
        settings: &Settings,
        devices: &[String],
    ) -> Result<Monitor> {
        match netns {
            Some(ns) => {
                let (settings, devices) = (settings.clone(), devices.to_vec());
                crate::netlink::in_netns(ns, move || Monitor::open(&settings, &devices))?
            }
            None => Monitor::open(settings, devices),
        }
    }

    /// Waits up to `timeout` for notifications; whether one of those that came is about the
    /// adapter's state. A receive buffer that overflowed (`ENOBUFS`: notifications were lost)
    /// counts as one, since what was lost is unknown.
    pub fn wait(&mut self, timeout: Duration) -> Result<bool> {
        use nix::poll::{PollFd, PollFlags, PollTimeout, poll};
        let ms = u16::try_from(timeout.as_millis()).unwrap_or(u16::MAX);
        let ready = {
            let mut fds = [PollFd::new(self.socket.as_fd(), PollFlags::POLLIN)];
            match poll(&mut fds, PollTimeout::from(ms)) {
                Ok(n) => n > 0,
                Err(nix::errno::Errno::EINTR) => false,
                Err(e) => return Err(Error::kernel("poll netlink notifications", e as i32)),
            }
        };
        if !ready {
            return Ok(false);
        }
        let mut concerned = false;
        loop {
            self.buf.clear();
            match self.socket.recv(&mut self.buf, MSG_DONTWAIT) {
                Ok(_) => {
                    let datagram = std::mem::take(&mut self.buf);
                    concerned |= self.filter.read(&datagram);
                    self.buf = datagram;
                }
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => return Ok(concerned),
                Err(e) if e.raw_os_error() == Some(ENOBUFS) => concerned = true,
                Err(e) => {
                    return Err(Error::Io {
                        op: "receive netlink notifications".into(),
                        source: e,
                    });
                }
            }
        }
    }
}

impl Filter {
    /// The filter for `settings`, the other `devices` the adapter sets, and the namespace's
    /// links now (index, name).
    fn new(
        settings: &Settings,
        devices: &[String],
        links: impl IntoIterator<Item = (u32, String)>,
    ) -> Filter {
        let names: BTreeSet<String> = settings
            .managed_devices
            .iter()
            .chain(devices)
            .cloned()
            .collect();
        let indexes = links
            .into_iter()
            .filter(|(_, n)| names.contains(n))
            .collect();
        Filter {
            table: settings.table,
            rule_priority: settings.rule_priority,
            names,
            indexes,
        }
    }

    /// Whether a datagram of notifications says something about the adapter's state (and
    /// learns the indexes of its devices as they come and go).
    fn read(&mut self, datagram: &[u8]) -> bool {
        let mut concerned = false;
        for frame in frames(datagram) {
            if let FrameKind::Message {
                message_type,
                payload,
                ..
            } = frame.kind
            {
                concerned |= self.concerns(message_type, payload);
            }
        }
        concerned
    }

    fn concerns(&mut self, message_type: u16, payload: &[u8]) -> bool {
        match message_type {
            RTM_NEWLINK | RTM_DELLINK => self.link(message_type, payload),
            RTM_NEWROUTE | RTM_DELROUTE => {
                let header = payload.get(4).copied().map(u32::from);
                let table = attrs(payload, RTMSG)
                    .find(|(k, _)| *k == RTA_TABLE)
                    .and_then(|(_, v)| u32_ne(v))
                    .or(header);
                table == Some(self.table)
            }
            RTM_NEWRULE | RTM_DELRULE => {
                let header = payload.get(4).copied().map(u32::from);
                let mut table = header;
                let mut priority = None;
                for (k, v) in attrs(payload, RTMSG) {
                    match k {
                        FRA_TABLE => table = u32_ne(v).or(table),
                        FRA_PRIORITY => priority = u32_ne(v),
                        _ => {}
                    }
                }
                table == Some(self.table) || priority == Some(self.rule_priority)
            }
            RTM_NEWNEIGH | RTM_DELNEIGH => payload
                .get(4..8)
                .and_then(u32_ne)
                .is_some_and(|i| self.indexes.contains_key(&i)),
            _ => false,
        }
    }

    /// A link notification: about one of the devices, or a port of the bridge.
    fn link(&mut self, message_type: u16, payload: &[u8]) -> bool {
        let Some(index) = payload.get(4..8).and_then(u32_ne) else {
            return false;
        };
        let (mut name, mut master) = (None, None);
        for (k, v) in attrs(payload, IFINFOMSG) {
            match k {
                IFLA_IFNAME => {
                    name = std::str::from_utf8(v)
                        .ok()
                        .map(|s| s.trim_end_matches('\0').to_string());
                }
                IFLA_MASTER => master = u32_ne(v),
                _ => {}
            }
        }
        let owned = name.as_ref().is_some_and(|n| self.names.contains(n));
        if owned {
            if message_type == RTM_DELLINK {
                self.indexes.remove(&index);
            } else if let Some(n) = name {
                self.indexes.insert(index, n);
            }
        }
        owned
            || self.indexes.contains_key(&index)
            || master.is_some_and(|m| self.indexes.contains_key(&m))
    }
}

/// `ENOBUFS`: the receive buffer overflowed.
const ENOBUFS: i32 = 105;

/// `MSG_DONTWAIT` for `recv`.
const MSG_DONTWAIT: i32 = 0x40;

fn attrs(payload: &[u8], header: usize) -> impl Iterator<Item = (u16, &[u8])> {
    attributes(payload.get(header..).unwrap_or_default())
}

fn u32_ne(v: &[u8]) -> Option<u32> {
    v.first_chunk::<4>().map(|b| u32::from_ne_bytes(*b))
}

#[cfg(test)]
mod tests {
    use super::*;
    use netlink_packet_core::NetlinkMessage;
    use netlink_packet_route::RouteNetlinkMessage as M;
    use netlink_packet_route::link::{LinkAttribute, LinkMessage};
    use netlink_packet_route::neighbour::NeighbourMessage;
    use netlink_packet_route::route::{RouteAttribute, RouteMessage};
    use netlink_packet_route::rule::{RuleAttribute, RuleMessage};

    /// A datagram of these messages, as the kernel announces them.
    fn datagram(msgs: Vec<M>) -> Vec<u8> {
        let mut out = Vec::new();
        for msg in msgs {
            let mut m = NetlinkMessage::from(msg);
            m.finalize();
            let mut buf = vec![0; m.buffer_len()];
            m.serialize(&mut buf);
            buf.resize(buf.len().next_multiple_of(4), 0);
            out.extend(buf);
        }
        out
    }

    /// vxlan0 (index 5) and the bridge cni0 (6) owned; eth0 (2) not.
    fn filter() -> Filter {
        Filter::new(
            &Settings::default(),
            &["cni0".to_string()],
            [(2, "eth0".into()), (5, "vxlan0".into()), (6, "cni0".into())],
        )
    }

    fn route(table: u32) -> RouteMessage {
        let mut m = RouteMessage::default();
        m.attributes.push(RouteAttribute::Table(table));
        m
    }

    fn link(index: u32, name: &str, master: Option<u32>) -> LinkMessage {
        let mut m = LinkMessage::default();
        m.header.index = index;
        m.attributes.push(LinkAttribute::IfName(name.into()));
        m.attributes.extend(master.map(LinkAttribute::Controller));
        m
    }

    #[test]
    fn routes_of_the_adapters_table_concern_it_and_others_do_not() {
        let mut f = filter();
        assert!(f.read(&datagram(vec![M::DelRoute(route(100))])));
        assert!(f.read(&datagram(vec![
            M::NewRoute(route(254)),
            M::NewRoute(route(100))
        ])));
        assert!(!f.read(&datagram(vec![
            M::NewRoute(route(254)),
            M::DelRoute(route(1000))
        ])));
    }

    #[test]
    fn the_rule_concerns_it_by_table_or_priority() {
        let mut f = filter();
        let rule = |attrs: Vec<RuleAttribute>| {
            let mut m = RuleMessage::default();
            m.attributes = attrs;
            m
        };
        assert!(f.read(&datagram(vec![M::DelRule(rule(vec![
            RuleAttribute::Table(100)
        ]))])));
        assert!(f.read(&datagram(vec![M::DelRule(rule(vec![
            RuleAttribute::Priority(100)
        ]))])));
        let other = rule(vec![
            RuleAttribute::Table(254),
            RuleAttribute::Priority(32766),
        ]);
        assert!(!f.read(&datagram(vec![M::NewRule(other)])));
    }

    #[test]
    fn devices_their_bridge_ports_and_neighbours_concern_it_as_they_come_and_go() {
        let mut f = filter();
        assert!(f.read(&datagram(vec![M::NewLink(link(5, "vxlan0", None))])));
        assert!(!f.read(&datagram(vec![M::NewLink(link(2, "eth0", None))])));
        // A pod's veth joining the bridge.
        assert!(f.read(&datagram(vec![M::NewLink(link(9, "veth1", Some(6)))])));
        let neighbour = |ifindex: u32| {
            let mut m = NeighbourMessage::default();
            m.header.ifindex = ifindex;
            m
        };
        assert!(f.read(&datagram(vec![M::DelNeighbour(neighbour(5))])));
        assert!(!f.read(&datagram(vec![M::NewNeighbour(neighbour(2))])));
        // vxlan0 deleted and made again under another index: its neighbours follow it.
        assert!(f.read(&datagram(vec![M::DelLink(link(5, "vxlan0", None))])));
        assert!(!f.read(&datagram(vec![M::NewNeighbour(neighbour(5))])));
        assert!(f.read(&datagram(vec![M::NewLink(link(12, "vxlan0", None))])));
        assert!(f.read(&datagram(vec![M::NewNeighbour(neighbour(12))])));
    }
}
