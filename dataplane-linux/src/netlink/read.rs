//! Reading what the kernel holds: links, the routes of the adapter's table and of `main`, the
//! rules looking up the table, the permanent neighbours of the adapter's devices, the pods'
//! interfaces and the CNI configuration.

use std::collections::HashMap;
use std::net::IpAddr;

use netlink_packet_route::link::{InfoKind, LinkAttribute, LinkInfo};
use netlink_packet_route::neighbour::{
    NeighbourAddress, NeighbourAttribute, NeighbourMessage, NeighbourState,
};
use netlink_packet_route::route::RouteMessage;
use netlink_packet_route::rule::{RuleAttribute, RuleMessage};
use netlink_packet_route::{AddressFamily, RouteNetlinkMessage};

use crate::error::Result;
use crate::model::{
    Family, KernelState, Link, LinkKind, Neighbour, PodLink, ReadScope, Route, Rule,
};
use crate::route_dump;
use crate::types::TunnelKind;

use super::NetlinkKernel;
use super::cni_file::read_cni;
use super::netns::pod_link_mtu;

const RT_TABLE_MAIN: u32 = 254;
pub(crate) const RTM_NEWROUTE: u16 = 24;

fn link_kind(info: &[LinkInfo]) -> LinkKind {
    for i in info {
        if let LinkInfo::Kind(k) = i {
            return match k {
                InfoKind::Vxlan => LinkKind::Tunnel(TunnelKind::Vxlan),
                InfoKind::Geneve => LinkKind::Tunnel(TunnelKind::Geneve),
                InfoKind::IpIp => LinkKind::Tunnel(TunnelKind::Ipip),
                InfoKind::Ip6Tnl => LinkKind::Tunnel(TunnelKind::Ip6Ip),
                InfoKind::Bridge => LinkKind::Bridge,
                InfoKind::Veth => LinkKind::Veth,
                InfoKind::Wireguard => LinkKind::Wireguard,
                other => LinkKind::Other(format!("{other:?}").to_lowercase()),
            };
        }
    }
    LinkKind::Other(String::new())
}

/// Parses links; masters are resolved to names.
pub(crate) fn parse_links(msgs: Vec<RouteNetlinkMessage>) -> Vec<Link> {
    let mut raw: Vec<(Link, Option<u32>)> = Vec::new();
    for m in msgs {
        if let RouteNetlinkMessage::NewLink(l) = m {
            let mut link = Link {
                name: String::new(),
                index: l.header.index,
                kind: LinkKind::Other(String::new()),
                mtu: 0,
                mac: None,
                master: None,
            };
            let mut master = None;
            for a in &l.attributes {
                match a {
                    LinkAttribute::IfName(n) => link.name = n.clone(),
                    LinkAttribute::Mtu(m) => link.mtu = *m,
                    LinkAttribute::Address(b) => {
                        if let Ok(mac) = <[u8; 6]>::try_from(b.as_slice()) {
                            link.mac = Some(mac);
                        }
                    }
                    LinkAttribute::Controller(i) => master = Some(*i),
                    LinkAttribute::LinkInfo(info) => link.kind = link_kind(info),
                    _ => {}
                }
            }
            raw.push((link, master));
        }
    }
    let names: HashMap<u32, String> = raw.iter().map(|(l, _)| (l.index, l.name.clone())).collect();
    raw.into_iter()
        .map(|(mut l, m)| {
            l.master = m.and_then(|i| names.get(&i).cloned());
            l
        })
        .collect()
}

impl NetlinkKernel {
    /// All unicast routes of `tables` (both families).
    pub fn routes(&mut self, tables: &[u32]) -> Result<Vec<Route>> {
        let links = self.links()?;
        self.routes_over(tables, &links)
    }

    /// All unicast routes of `tables`, their devices named after `links`.
    fn routes_over(&mut self, tables: &[u32], links: &[Link]) -> Result<Vec<Route>> {
        let names: HashMap<u32, String> = links.iter().map(|l| (l.index, l.name.clone())).collect();
        let mut out = Vec::new();
        for fam in [AddressFamily::Inet, AddressFamily::Inet6] {
            let mut m = RouteMessage::default();
            m.header.address_family = fam;
            let request = RouteNetlinkMessage::GetRoute(m);
            self.socket
                .dump_raw(request, "dump routes", |message_type, payload| {
                    if message_type != RTM_NEWROUTE {
                        return;
                    }
                    if let Some(route) = route_dump::parse_route(payload, &names) {
                        if tables.contains(&route.table) {
                            out.push(route);
                        }
                    }
                })?;
        }
        Ok(out)
    }

    fn rules(&mut self, table: u32) -> Result<Vec<Rule>> {
        let mut out = Vec::new();
        for (fam, f) in [
            (AddressFamily::Inet, Family::V4),
            (AddressFamily::Inet6, Family::V6),
        ] {
            let mut m = RuleMessage::default();
            m.header.family = fam;
            let msgs = self.dump(RouteNetlinkMessage::GetRule(m), "dump rules")?;
            for msg in msgs {
                if let RouteNetlinkMessage::NewRule(r) = msg {
                    let t = r
                        .attributes
                        .iter()
                        .find_map(|a| match a {
                            RuleAttribute::Table(t) => Some(*t),
                            _ => None,
                        })
                        .unwrap_or(u32::from(r.header.table));
                    let p = r
                        .attributes
                        .iter()
                        .find_map(|a| match a {
                            RuleAttribute::Priority(p) => Some(*p),
                            _ => None,
                        })
                        .unwrap_or(0);
                    if t == table {
                        out.push(Rule {
                            family: f,
                            priority: p,
                            table: t,
                        });
                    }
                }
            }
        }
        Ok(out)
    }

    fn neighbours(&mut self, devices: &[String], links: &[Link]) -> Result<Vec<Neighbour>> {
        let names: HashMap<u32, &str> = links
            .iter()
            .filter(|l| devices.contains(&l.name))
            .map(|l| (l.index, l.name.as_str()))
            .collect();
        if names.is_empty() {
            return Ok(Vec::new());
        }
        let mut out = Vec::new();
        for fam in [AddressFamily::Inet, AddressFamily::Inet6] {
            let mut m = NeighbourMessage::default();
            m.header.family = fam;
            let msgs = self.dump(RouteNetlinkMessage::GetNeighbour(m), "dump neighbours")?;
            for msg in msgs {
                if let RouteNetlinkMessage::NewNeighbour(n) = msg {
                    let Some(dev) = names.get(&n.header.ifindex) else {
                        continue;
                    };
                    if n.header.state != NeighbourState::Permanent {
                        continue;
                    }
                    let mut address = None;
                    let mut mac = None;
                    for a in &n.attributes {
                        match a {
                            NeighbourAttribute::Destination(NeighbourAddress::Inet(v)) => {
                                address = Some(IpAddr::V4(*v))
                            }
                            NeighbourAttribute::Destination(NeighbourAddress::Inet6(v)) => {
                                address = Some(IpAddr::V6(*v))
                            }
                            NeighbourAttribute::LinkLayerAddress(b) => {
                                mac = <[u8; 6]>::try_from(b.as_slice()).ok()
                            }
                            _ => {}
                        }
                    }
                    if let (Some(address), Some(mac)) = (address, mac) {
                        out.push(Neighbour {
                            device: dev.to_string(),
                            address,
                            mac,
                        });
                    }
                }
            }
        }
        out.sort();
        Ok(out)
    }

    /// Everything the adapter owns within `scope` ([`crate::Kernel::read`]).
    pub(super) fn read_state(&mut self, scope: &ReadScope) -> Result<KernelState> {
        let links = self.links()?;
        let all = self.routes_over(&[scope.table, RT_TABLE_MAIN], &links)?;
        let (routes, main_routes): (Vec<Route>, Vec<Route>) =
            all.into_iter().partition(|r| r.table == scope.table);
        let routes = if scope.table == RT_TABLE_MAIN {
            main_routes.clone()
        } else {
            routes
        };
        let rules = self.rules(scope.table)?;
        let neighbours = self.neighbours(&scope.neighbour_devices, &links)?;
        let mut pod_links = Vec::with_capacity(scope.pods.len());
        for (ns, ifname) in &scope.pods {
            pod_links.push(PodLink {
                netns: ns.clone(),
                ifname: ifname.clone(),
                mtu: pod_link_mtu(ns, ifname)?,
            });
        }
        let cni = match &scope.cni {
            Some(p) => Some((p.clone(), read_cni(p)?)),
            None => None,
        };
        Ok(KernelState {
            links,
            routes,
            main_routes,
            rules,
            neighbours,
            pod_links,
            cni,
        })
    }
}
