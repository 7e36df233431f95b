//! Entry points for the fuzz targets (`fuzz/`, feature `fuzzing`): the readers of the replies a
//! probe gets from the network, without a socket.

use crate::udp::{Queued, answers, quoted};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};

/// Whether `packet`, a whole IPv4 packet as the raw ICMP socket reads it, is `dst`'s echo reply
/// to the request (`ident`, `seq`) whose ICMP message was `icmp_len` bytes long.
pub fn icmp_reply_v4(packet: &[u8], dst: Ipv4Addr, ident: u16, seq: u16, icmp_len: usize) -> bool {
    crate::icmp::is_reply_v4(packet, dst, ident, seq, icmp_len)
}

/// Whether `icmp`, an ICMPv6 message from `from` as the raw socket reads it, is `dst`'s echo
/// reply to the request (`ident`, `seq`) of `icmp_len` bytes.
pub fn icmp_reply_v6(
    icmp: &[u8],
    from: Ipv6Addr,
    dst: Ipv6Addr,
    ident: u16,
    seq: u16,
    icmp_len: usize,
) -> bool {
    crate::icmp::is_reply_v6(icmp, from, dst, ident, seq, icmp_len)
}

/// An entry of a UDP socket's error queue as `recvmsg` gives it.
#[derive(Clone, Debug, Default)]
pub struct ErrorEntry {
    /// The address of the datagram the error is about.
    pub original: Option<SocketAddr>,
    /// The extended error: `ee_errno`, `ee_origin`, `ee_type`, `ee_code`.
    pub error: (u32, u8, u8, u8),
    /// The sender of the ICMP error.
    pub offender: Option<IpAddr>,
    /// The receive buffer.
    pub buf: Vec<u8>,
    /// How many bytes `recvmsg` said it received.
    pub bytes: usize,
}

/// Whether `e`, read as the UDP prober reads its error queue, answers the probe to `dst` on
/// `port` tagged `tag`.
pub fn udp_answers(e: &ErrorEntry, dst: IpAddr, port: u16, tag: &[u8]) -> bool {
    let (errno, origin, icmp_type, code) = e.error;
    let q = Queued {
        errno,
        origin,
        icmp_type,
        code,
        offender: e.offender,
        original: e.original,
        quoted: quoted(&e.buf, e.bytes),
    };
    answers(&q, dst, port, tag)
}
