//! Any reply from the network, as the probes read it: a raw IPv4 packet or ICMPv6 message read
//! as an echo reply (truncated, oversized, lying header and total lengths), and a UDP socket's
//! error-queue entry read as a port unreachable. No panic, and nothing counts as an answer that
//! is not one: an accepted echo reply carries the request's identifier and sequence number in
//! the bytes its own headers delimit, from the probed address.
#![no_main]

use arbitrary::Arbitrary;
use libfuzzer_sys::fuzz_target;
use probe_linux::fuzzing::{ErrorEntry, icmp_reply_v4, icmp_reply_v6, udp_answers};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};

#[derive(Arbitrary, Debug)]
struct Reply {
    packet: Vec<u8>,
    dst4: [u8; 4],
    dst6: [u8; 16],
    from6: [u8; 16],
    ident: u16,
    seq: u16,
    icmp_len: u16,
    original: Option<([u8; 16], u16)>,
    error: (u32, u8, u8, u8),
    offender: Option<[u8; 16]>,
    bytes: u32,
    port: u16,
    tag: Vec<u8>,
    v6: bool,
}

fn addr(b: [u8; 16], v6: bool) -> IpAddr {
    if v6 {
        IpAddr::V6(Ipv6Addr::from(b))
    } else {
        IpAddr::V4(Ipv4Addr::new(b[0], b[1], b[2], b[3]))
    }
}

/// The ICMP message of an accepted reply carries the request's identity.
fn carries(icmp: &[u8], reply: u8, r: &Reply) -> bool {
    icmp.len() == usize::from(r.icmp_len)
        && icmp.first() == Some(&reply)
        && icmp.get(4..6) == Some(&r.ident.to_be_bytes()[..])
        && icmp.get(6..8) == Some(&r.seq.to_be_bytes()[..])
}

fuzz_target!(|r: Reply| {
    let dst4 = Ipv4Addr::from(r.dst4);
    let p = &r.packet;
    if icmp_reply_v4(p, dst4, r.ident, r.seq, usize::from(r.icmp_len)) {
        let ihl = usize::from(p[0] & 0x0f) * 4;
        let total = usize::from(u16::from_be_bytes([p[2], p[3]]));
        assert_eq!(p[0] >> 4, 4);
        assert_eq!(p[12..16], r.dst4, "from the probed address");
        assert!(ihl >= 20 && ihl <= total && total <= p.len());
        assert!(carries(&p[ihl..total], 0, &r));
    }
    let (from6, dst6) = (Ipv6Addr::from(r.from6), Ipv6Addr::from(r.dst6));
    if icmp_reply_v6(p, from6, dst6, r.ident, r.seq, usize::from(r.icmp_len)) {
        assert_eq!(from6, dst6);
        assert!(carries(p, 129, &r));
    }
    let dst = addr(r.dst6, r.v6);
    let entry = ErrorEntry {
        original: r
            .original
            .map(|(a, port)| SocketAddr::new(addr(a, r.v6), port)),
        error: r.error,
        offender: r.offender.map(|a| addr(a, r.v6)),
        buf: r.packet.clone(),
        bytes: r.bytes as usize,
    };
    if udp_answers(&entry, dst, r.port, &r.tag) {
        assert_eq!(entry.offender, Some(dst), "sent by the probed address");
        assert_eq!(entry.original, Some(SocketAddr::new(dst, r.port)));
    }
});
