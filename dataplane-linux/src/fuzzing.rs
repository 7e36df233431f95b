//! Entry points for the fuzz targets (`fuzz/`, feature `fuzzing`): the readers of what the
//! kernel sends, without a socket.

use crate::netlink::{RTM_NEWROUTE, parse_links};
use crate::route_dump::parse_route;
use crate::socket::{FrameKind, frames};
use netlink_packet_core::{NetlinkMessage, NetlinkPayload};
use netlink_packet_route::RouteNetlinkMessage;
use std::collections::HashMap;

/// Reads `datagram` as the reply to a dump: its messages in order (up to the first malformed
/// length), each decoded as the adapter decodes them, the links among them read as links and
/// every route message by the route reader (devices named after those links). How many links
/// and routes were read.
pub fn read_dump(datagram: &[u8]) -> (usize, usize) {
    let mut messages = Vec::new();
    let mut route_payloads = Vec::new();
    for frame in frames(datagram) {
        if let FrameKind::Message {
            message_type,
            payload,
            bytes,
            ..
        } = frame.kind
        {
            if message_type == RTM_NEWROUTE {
                route_payloads.push(payload);
            }
            if let Ok(NetlinkMessage {
                payload: NetlinkPayload::InnerMessage(m),
                ..
            }) = NetlinkMessage::<RouteNetlinkMessage>::deserialize(bytes)
            {
                messages.push(m);
            }
        }
    }
    let links = parse_links(messages);
    let names: HashMap<u32, String> = links.iter().map(|l| (l.index, l.name.clone())).collect();
    let routes = route_payloads
        .into_iter()
        .filter_map(|p| parse_route(p, &names))
        .count();
    (links.len(), routes)
}
