//! Routes read straight from the bytes of a route dump (`RTM_NEWROUTE` payloads): only what
//! [`Route`] holds (table, destination, protocol, MTU metric and its lock, next hops with
//! gateway, `onlink` and IP lightweight-tunnel encapsulation). A route dump is the adapter's
//! largest read (every route of its table, twice per reconcile); reading these few attributes
//! in place costs a fraction of decoding every attribute into `netlink-packet-route`'s types.

use std::collections::HashMap;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use ipnet::IpNet;

use crate::model::{Encap, Hop, Route};

const AF_INET: u8 = 2;
const AF_INET6: u8 = 10;
const RTN_UNICAST: u8 = 1;
/// `RTNH_F_ONLINK`, in `rtm_flags` and in each `rtnh_flags`.
const RTNH_F_ONLINK: u32 = 4;

const RTM_HEADER_LEN: usize = 12;
const RTNH_LEN: usize = 8;

const RTA_DST: u16 = 1;
const RTA_OIF: u16 = 4;
const RTA_GATEWAY: u16 = 5;
const RTA_METRICS: u16 = 8;
const RTA_MULTIPATH: u16 = 9;
const RTA_TABLE: u16 = 15;
const RTA_ENCAP_TYPE: u16 = 21;
const RTA_ENCAP: u16 = 22;

const RTAX_LOCK: u16 = 1;
const RTAX_MTU: u16 = 2;
/// The MTU's bit in the `RTAX_LOCK` mask.
const RTAX_MTU_LOCK: u32 = 1 << RTAX_MTU;

const LWTUNNEL_ENCAP_IP: u16 = 2;
const LWTUNNEL_ENCAP_IP6: u16 = 4;
/// `LWTUNNEL_IP_*` and `LWTUNNEL_IP6_*` share these numbers.
const LWTUNNEL_IP_ID: u16 = 1;
const LWTUNNEL_IP_DST: u16 = 2;
const LWTUNNEL_IP_TTL: u16 = 4;
const LWTUNNEL_IP_FLAGS: u16 = 6;
/// `TUNNEL_CSUM` in the big-endian `LWTUNNEL_IP{,6}_FLAGS`.
pub(crate) const TUNNEL_CSUM: u16 = 0x01;
/// `TUNNEL_DONT_FRAGMENT` in the big-endian `LWTUNNEL_IP{,6}_FLAGS`.
pub(crate) const TUNNEL_DONT_FRAGMENT: u16 = 0x0100;

/// Attribute types carry the nested and byte-order flags in their top bits.
const NLA_TYPE_MASK: u16 = 0x3fff;

fn aligned(len: usize) -> usize {
    (len + 3) & !3
}

/// The attributes (type, value) of a netlink attribute stream, stopping at a malformed one.
pub(crate) fn attributes(mut rest: &[u8]) -> impl Iterator<Item = (u16, &[u8])> {
    std::iter::from_fn(move || {
        let header = rest.first_chunk::<4>()?;
        let len = usize::from(u16::from_ne_bytes([header[0], header[1]]));
        let kind = u16::from_ne_bytes([header[2], header[3]]) & NLA_TYPE_MASK;
        let value = rest.get(4..len)?;
        rest = rest.get(aligned(len)..).unwrap_or_default();
        Some((kind, value))
    })
}

fn u16_ne(v: &[u8]) -> Option<u16> {
    v.first_chunk::<2>().map(|b| u16::from_ne_bytes(*b))
}

fn u32_ne(v: &[u8]) -> Option<u32> {
    v.first_chunk::<4>().map(|b| u32::from_ne_bytes(*b))
}

fn address(v: &[u8]) -> Option<IpAddr> {
    match v.len() {
        4 => v.first_chunk::<4>().map(|b| IpAddr::V4(Ipv4Addr::from(*b))),
        16 => v
            .first_chunk::<16>()
            .map(|b| IpAddr::V6(Ipv6Addr::from(*b))),
        _ => None,
    }
}

/// The attributes of one next hop (the route's own, or one `rtnexthop`'s).
#[derive(Default)]
struct HopAttributes<'a> {
    gateway: Option<IpAddr>,
    encap_type: Option<u16>,
    encap: Option<&'a [u8]>,
}

impl<'a> HopAttributes<'a> {
    /// Records `kind` when it is a next-hop attribute; returns whether it was.
    fn take(&mut self, kind: u16, value: &'a [u8]) -> bool {
        match kind {
            RTA_GATEWAY => self.gateway = address(value),
            RTA_ENCAP_TYPE => self.encap_type = u16_ne(value),
            RTA_ENCAP => self.encap = Some(value),
            _ => return false,
        }
        true
    }

    fn hop(&self, device: String, onlink: bool) -> Hop {
        Hop {
            device,
            gateway: self.gateway,
            onlink,
            encap: self.encap.and_then(|e| encap(self.encap_type, e)),
        }
    }
}

/// IP and IPv6 tunnel encapsulation (`encap ip` / `encap ip6`). Inside `RTA_MULTIPATH` the
/// kernel may leave out the per-hop type; the attributes are then read as IP ones.
fn encap(encap_type: Option<u16>, value: &[u8]) -> Option<Encap> {
    if !matches!(
        encap_type,
        None | Some(LWTUNNEL_ENCAP_IP) | Some(LWTUNNEL_ENCAP_IP6)
    ) {
        return None;
    }
    let mut id = 0;
    let mut dst = None;
    let (mut csum, mut df, mut ttl) = (false, false, 0);
    for (kind, v) in attributes(value) {
        match kind {
            LWTUNNEL_IP_ID => {
                if let Some(b) = v.first_chunk::<8>() {
                    id = u64::from_be_bytes(*b);
                }
            }
            LWTUNNEL_IP_DST => dst = address(v),
            // LWTUNNEL_IP6_HOPLIMIT has the same number.
            LWTUNNEL_IP_TTL => ttl = v.first().copied().unwrap_or(0),
            LWTUNNEL_IP_FLAGS => {
                if let Some(b) = v.first_chunk::<2>() {
                    let flags = u16::from_be_bytes(*b);
                    csum = flags & TUNNEL_CSUM != 0;
                    df = flags & TUNNEL_DONT_FRAGMENT != 0;
                }
            }
            _ => {}
        }
    }
    dst.map(|dst| Encap {
        id,
        dst,
        csum,
        df,
        ttl,
    })
}

/// `(mtu, locked)` from an `RTA_METRICS` nest.
fn metrics(value: &[u8]) -> (Option<u32>, bool) {
    let mut mtu = None;
    let mut locked = false;
    for (kind, v) in attributes(value) {
        match kind {
            RTAX_MTU => mtu = u32_ne(v),
            RTAX_LOCK => locked = u32_ne(v).is_some_and(|bits| bits & RTAX_MTU_LOCK != 0),
            _ => {}
        }
    }
    (mtu, locked)
}

/// The hops of an `RTA_MULTIPATH` attribute.
fn multipath(value: &[u8], name: &impl Fn(u32) -> String) -> Vec<Hop> {
    let mut hops = Vec::new();
    let mut rest = value;
    while let Some(header) = rest.first_chunk::<RTNH_LEN>() {
        let len = usize::from(u16::from_ne_bytes([header[0], header[1]]));
        let flags = u32::from(header[2]);
        let ifindex = u32::from_ne_bytes([header[4], header[5], header[6], header[7]]);
        let Some(attrs) = rest.get(RTNH_LEN..len) else {
            break;
        };
        let mut hop = HopAttributes::default();
        for (kind, v) in attributes(attrs) {
            hop.take(kind, v);
        }
        hops.push(hop.hop(name(ifindex), flags & RTNH_F_ONLINK != 0));
        rest = rest.get(aligned(len)..).unwrap_or_default();
    }
    hops
}

/// The route in an `RTM_NEWROUTE` payload, devices named after `names` (`if<index>` for one
/// not there); `None` for routes that are not unicast, of another family, or malformed.
pub(crate) fn parse_route(payload: &[u8], names: &HashMap<u32, String>) -> Option<Route> {
    let header = payload.first_chunk::<RTM_HEADER_LEN>()?;
    let [
        family,
        dst_len,
        _src_len,
        _tos,
        table,
        protocol,
        _scope,
        kind,
        ..,
    ] = *header;
    let flags = u32::from_ne_bytes([header[8], header[9], header[10], header[11]]);
    if kind != RTN_UNICAST {
        return None;
    }
    let name = |i: u32| names.get(&i).cloned().unwrap_or_else(|| format!("if{i}"));
    let mut table = u32::from(table);
    let mut destination = None;
    let mut oif = None;
    let mut metric = (None, false);
    let mut hops = Vec::new();
    let mut own = HopAttributes::default();
    for (attr, v) in attributes(payload.get(RTM_HEADER_LEN..)?) {
        if own.take(attr, v) {
            continue;
        }
        match attr {
            RTA_TABLE => table = u32_ne(v).unwrap_or(table),
            RTA_DST => destination = address(v),
            RTA_OIF => oif = u32_ne(v),
            RTA_METRICS => metric = metrics(v),
            RTA_MULTIPATH => hops = multipath(v, &name),
            _ => {}
        }
    }
    let destination = match (destination, family) {
        (Some(a), _) => a,
        (None, AF_INET) => IpAddr::V4(Ipv4Addr::UNSPECIFIED),
        (None, AF_INET6) => IpAddr::V6(Ipv6Addr::UNSPECIFIED),
        _ => return None,
    };
    let destination = IpNet::new(destination, dst_len).ok()?;
    if hops.is_empty() {
        if let Some(oif) = oif {
            hops.push(own.hop(name(oif), flags & RTNH_F_ONLINK != 0));
        }
    }
    hops.sort();
    let (mtu, locked) = metric;
    Some(Route {
        table,
        destination,
        protocol,
        mtu,
        mtu_locked: locked && mtu.is_some(),
        hops,
    })
}

#[cfg(test)]
mod tests {
    use netlink_packet_core::Emitable;
    use netlink_packet_route::AddressFamily;
    use netlink_packet_route::route::{
        RouteAddress, RouteAttribute, RouteIp6Tunnel, RouteIp6TunnelFlags, RouteLwEnCapType,
        RouteLwTunnelEncap, RouteMessage, RouteMetric, RouteNextHop, RouteNextHopFlags, RouteType,
    };

    use super::*;

    fn payload(m: &RouteMessage) -> Vec<u8> {
        let mut buf = vec![0; m.buffer_len()];
        m.emit(&mut buf);
        buf
    }

    /// `netlink-packet-route` encodes, this module reads back: an IPv6 multipath route with
    /// per-hop `encap ip6 ... csum`, a locked MTU and a table above 255.
    #[test]
    fn reads_what_netlink_packet_route_writes() {
        let hop = |ifindex: u32, gw: &str, dst: &str| {
            let mut nh = RouteNextHop::default();
            nh.interface_index = ifindex;
            nh.flags = RouteNextHopFlags::Onlink;
            nh.attributes
                .push(RouteAttribute::Gateway(RouteAddress::Inet6(
                    gw.parse().unwrap(),
                )));
            nh.attributes
                .push(RouteAttribute::EncapType(RouteLwEnCapType::Ip6));
            nh.attributes.push(RouteAttribute::Encap(vec![
                RouteLwTunnelEncap::Ip6(RouteIp6Tunnel::Id(7)),
                RouteLwTunnelEncap::Ip6(RouteIp6Tunnel::Destination(dst.parse().unwrap())),
                RouteLwTunnelEncap::Ip6(RouteIp6Tunnel::Flags(RouteIp6TunnelFlags::Checksum)),
            ]));
            nh
        };
        let mut m = RouteMessage::default();
        m.header.address_family = AddressFamily::Inet6;
        m.header.destination_prefix_length = 64;
        m.header.protocol = 250.into();
        m.header.kind = RouteType::Unicast;
        m.attributes.push(RouteAttribute::Table(1000));
        m.attributes
            .push(RouteAttribute::Destination(RouteAddress::Inet6(
                "fd00:2::".parse().unwrap(),
            )));
        m.attributes.push(RouteAttribute::Metrics(vec![
            RouteMetric::Lock(RTAX_MTU_LOCK),
            RouteMetric::Mtu(1380),
        ]));
        m.attributes.push(RouteAttribute::MultiPath(vec![
            hop(3, "fd00:2::1", "2001:db8::2"),
            hop(3, "fd00:2::2", "2001:db8::3"),
        ]));
        let names = HashMap::from([(3, "vxlan0".to_string())]);
        let r = parse_route(&payload(&m), &names).unwrap();
        assert_eq!(r.table, 1000);
        assert_eq!(r.destination.to_string(), "fd00:2::/64");
        assert_eq!(r.protocol, 250);
        assert_eq!((r.mtu, r.mtu_locked), (Some(1380), true));
        assert_eq!(r.hops.len(), 2);
        let h = &r.hops[0];
        assert_eq!(h.device, "vxlan0");
        assert_eq!(h.gateway, Some("fd00:2::1".parse().unwrap()));
        assert!(h.onlink);
        assert_eq!(
            h.encap,
            Some(Encap {
                id: 7,
                dst: "2001:db8::2".parse().unwrap(),
                csum: true,
                df: false,
                ttl: 0,
            })
        );
    }

    /// The Don't Fragment flag and the TTL of an IPv4 encapsulation read back.
    #[test]
    fn reads_the_dont_fragment_flag() {
        use netlink_packet_route::route::{RouteIpTunnel, RouteIpTunnelFlags};
        let mut m = RouteMessage::default();
        m.header.address_family = AddressFamily::Inet;
        m.header.destination_prefix_length = 24;
        m.header.table = 100;
        m.header.kind = RouteType::Unicast;
        m.attributes
            .push(RouteAttribute::Destination(RouteAddress::Inet(
                "10.2.0.0".parse().unwrap(),
            )));
        m.attributes.push(RouteAttribute::Oif(3));
        m.attributes
            .push(RouteAttribute::EncapType(RouteLwEnCapType::Ip));
        m.attributes.push(RouteAttribute::Encap(vec![
            RouteLwTunnelEncap::Ip(RouteIpTunnel::Id(1)),
            RouteLwTunnelEncap::Ip(RouteIpTunnel::Destination("192.168.0.2".parse().unwrap())),
            RouteLwTunnelEncap::Ip(RouteIpTunnel::Ttl(64)),
            RouteLwTunnelEncap::Ip(RouteIpTunnel::Flags(RouteIpTunnelFlags::from_bits_retain(
                TUNNEL_DONT_FRAGMENT,
            ))),
        ]));
        let names = HashMap::from([(3, "vxlan0".to_string())]);
        let r = parse_route(&payload(&m), &names).unwrap();
        let e = r.hops[0].encap.expect("an encapsulation");
        assert!(e.df && !e.csum, "{e:?}");
        assert_eq!(e.ttl, 64);
    }

    /// A single-hop IPv4 route names an unknown device by index; other route types are skipped.
    #[test]
    fn single_hop_and_other_types() {
        let mut m = RouteMessage::default();
        m.header.address_family = AddressFamily::Inet;
        m.header.destination_prefix_length = 24;
        m.header.table = 100;
        m.header.kind = RouteType::Unicast;
        m.attributes
            .push(RouteAttribute::Destination(RouteAddress::Inet(
                "10.2.0.0".parse().unwrap(),
            )));
        m.attributes.push(RouteAttribute::Oif(9));
        m.attributes
            .push(RouteAttribute::Metrics(vec![RouteMetric::Mtu(1400)]));
        let r = parse_route(&payload(&m), &HashMap::new()).unwrap();
        assert_eq!(r.table, 100);
        assert_eq!((r.mtu, r.mtu_locked), (Some(1400), false));
        assert_eq!(r.hops[0].device, "if9");
        assert_eq!((r.hops[0].gateway, r.hops[0].encap), (None, None));
        m.header.kind = RouteType::Local;
        assert!(parse_route(&payload(&m), &HashMap::new()).is_none());
    }
}
