//! [`Method::Icmp`](crate::Method::Icmp): echo requests on raw sockets, answered by echo
//! replies.
//!
//! A raw ICMP socket receives a copy of every ICMP packet the host receives, so each probe
//! recognises its own reply by the source address, the prober's identifier, the probe's
//! sequence number and the length; anything else (other probers' replies, errors, late replies
//! to earlier probes) is skipped.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::os::fd::{AsRawFd, OwnedFd};
use std::time::Instant;

use nix::errno::Errno;
use nix::poll::PollFlags;
use nix::sys::socket::{MsgFlags, SockProtocol, SockType, SockaddrStorage, recvfrom, sendto};

use crate::Answer;
use crate::error::{Error, io};
use crate::packet::{IPV4_HEADER, L4_HEADER, checksum, fill};
use crate::sock;

const ECHO_REQUEST_V4: u8 = 8;
const ECHO_REPLY_V4: u8 = 0;
const ECHO_REQUEST_V6: u8 = 128;
const ECHO_REPLY_V6: u8 = 129;
const PROTO_ICMP: u8 = 1;

/// Opens the raw echo socket of a family, sending with DF (IPv4) or without fragmenting (IPv6)
/// and sized against the device MTU, whatever path MTU the kernel has cached.
pub(crate) fn open(v6: bool) -> Result<OwnedFd, Error> {
    let fd = if v6 {
        sock::open(true, SockType::Raw, SockProtocol::IcmpV6, "raw ICMPv6")?
    } else {
        sock::open(false, SockType::Raw, SockProtocol::Icmp, "raw ICMP")?
    };
    sock::send_sizes_as_given(&fd, v6)?;
    Ok(fd)
}

/// An echo request: type, code 0, checksum, `ident`, `seq`, then `payload_len` pattern bytes.
/// The IPv4 checksum is computed here; for ICMPv6 the kernel computes it (it covers a pseudo
/// header with the source address, which the kernel chooses) and the field is left zero.
pub(crate) fn echo_request(v6: bool, ident: u16, seq: u16, payload_len: usize) -> Vec<u8> {
    let mut msg = vec![0u8; L4_HEADER as usize + payload_len];
    msg[0] = if v6 { ECHO_REQUEST_V6 } else { ECHO_REQUEST_V4 };
    msg[4..6].copy_from_slice(&ident.to_be_bytes());
    msg[6..8].copy_from_slice(&seq.to_be_bytes());
    fill(&mut msg[8..], seq as u8);
    if !v6 {
        let c = checksum(&msg);
        msg[2..4].copy_from_slice(&c.to_be_bytes());
    }
    msg
}

/// Whether the ICMP message `icmp` is the echo reply of type `reply` to the request
/// (`ident`, `seq`) of `icmp_len` bytes.
fn is_reply(icmp: &[u8], reply: u8, ident: u16, seq: u16, icmp_len: usize) -> bool {
    icmp.len() == icmp_len
        && icmp.len() >= L4_HEADER as usize
        && icmp[0] == reply
        && icmp[1] == 0
        && icmp[4..6] == ident.to_be_bytes()
        && icmp[6..8] == seq.to_be_bytes()
}

/// Whether `packet`, a whole IPv4 packet as a raw socket reads it, is `dst`'s echo reply to
/// the request (`ident`, `seq`) whose ICMP message was `icmp_len` bytes long.
pub(crate) fn is_reply_v4(
    packet: &[u8],
    dst: Ipv4Addr,
    ident: u16,
    seq: u16,
    icmp_len: usize,
) -> bool {
    if packet.len() < IPV4_HEADER as usize || packet[0] >> 4 != 4 || packet[9] != PROTO_ICMP {
        return false;
    }
    let ihl = usize::from(packet[0] & 0x0f) * 4;
    let total = usize::from(u16::from_be_bytes([packet[2], packet[3]]));
    if ihl < IPV4_HEADER as usize || total < ihl || total > packet.len() {
        return false;
    }
    let src = Ipv4Addr::new(packet[12], packet[13], packet[14], packet[15]);
    src == dst && is_reply(&packet[ihl..total], ECHO_REPLY_V4, ident, seq, icmp_len)
}

/// Whether `icmp`, an ICMPv6 message as a raw socket reads it (without the IPv6 header), sent
/// by `from`, is `dst`'s echo reply to the request (`ident`, `seq`) of `icmp_len` bytes.
pub(crate) fn is_reply_v6(
    icmp: &[u8],
    from: Ipv6Addr,
    dst: Ipv6Addr,
    ident: u16,
    seq: u16,
    icmp_len: usize,
) -> bool {
    from == dst && is_reply(icmp, ECHO_REPLY_V6, ident, seq, icmp_len)
}

/// Sends one echo request of `payload_len` payload bytes to `dst` on `fd` (the raw socket of
/// `dst`'s family) and waits until `deadline` for its reply. `buf` must hold a whole reply.
pub(crate) fn probe(
    fd: &OwnedFd,
    dst: IpAddr,
    ident: u16,
    seq: u16,
    payload_len: usize,
    deadline: Instant,
    buf: &mut [u8],
) -> Result<Answer, Error> {
    // Whatever is queued predates this probe.
    sock::drain(fd, buf)?;
    let msg = echo_request(dst.is_ipv6(), ident, seq, payload_len);
    match sendto(
        fd.as_raw_fd(),
        &msg,
        &sock::sockaddr(dst, 0),
        MsgFlags::empty(),
    ) {
        Ok(_) => {}
        Err(Errno::EMSGSIZE) => return Ok(Answer::TooBig),
        Err(e) => return Err(Error::Send { dst, source: io(e) }),
    }
    loop {
        loop {
            let (n, from) = match recvfrom::<SockaddrStorage>(fd.as_raw_fd(), buf) {
                Ok(got) => got,
                Err(Errno::EINTR) => continue,
                Err(Errno::EAGAIN) => break,
                Err(e) => return Err(Error::Receive { source: io(e) }),
            };
            let data = &buf[..n.min(buf.len())];
            let ours = match dst {
                IpAddr::V4(d) => is_reply_v4(data, d, ident, seq, msg.len()),
                IpAddr::V6(d) => from
                    .as_ref()
                    .and_then(sock::socket_addr)
                    .is_some_and(|f| match f.ip() {
                        IpAddr::V6(f) => is_reply_v6(data, f, d, ident, seq, msg.len()),
                        IpAddr::V4(_) => false,
                    }),
            };
            if ours {
                return Ok(Answer::Answered);
            }
        }
        if sock::wait(fd, PollFlags::POLLIN, deadline)?.is_none() {
            return Ok(Answer::Lost);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const B: Ipv4Addr = Ipv4Addr::new(10, 0, 3, 2);

    /// The IPv4 packet a host sends back for `request` (an echo request message): a 20-byte
    /// header from `src`, the same identifier, sequence and payload, type 0.
    fn reply_v4(src: Ipv4Addr, request: &[u8]) -> Vec<u8> {
        let total = 20 + request.len();
        let mut p = vec![0x45, 0, 0, 0, 0, 0, 0x40, 0, 64, PROTO_ICMP, 0, 0];
        p[2..4].copy_from_slice(&(total as u16).to_be_bytes());
        p.extend_from_slice(&src.octets());
        p.extend_from_slice(&[10, 0, 1, 1]);
        let mut icmp = request.to_vec();
        icmp[0] = ECHO_REPLY_V4;
        p.extend_from_slice(&icmp);
        p
    }

    #[test]
    fn an_ipv4_echo_request_carries_ident_seq_and_a_valid_checksum() {
        let m = echo_request(false, 0xbeef, 7, 1372);
        assert_eq!(
            m.len(),
            1380,
            "ICMP header plus payload: a 1400-byte packet less 20"
        );
        assert_eq!(&m[..2], &[8, 0]);
        assert_eq!(&m[4..8], &[0xbe, 0xef, 0, 7]);
        assert_eq!(
            checksum(&m),
            0,
            "the checksum makes the message sum to zero"
        );
        assert_eq!(
            &m[8..11],
            &[7, 8, 9],
            "the payload pattern starts at the sequence"
        );
    }

    #[test]
    fn an_ipv6_echo_request_leaves_the_checksum_to_the_kernel() {
        let m = echo_request(true, 1, 2, 0);
        assert_eq!(m, vec![128, 0, 0, 0, 0, 1, 0, 2]);
    }

    #[test]
    fn the_reply_from_the_destination_with_our_ident_and_seq_matches() {
        let req = echo_request(false, 0x1234, 5, 100);
        let rep = reply_v4(B, &req);
        assert!(is_reply_v4(&rep, B, 0x1234, 5, req.len()));
    }

    #[test]
    fn replies_of_other_probes_probers_or_hosts_do_not_match() {
        let req = echo_request(false, 0x1234, 5, 100);
        let rep = reply_v4(B, &req);
        assert!(
            !is_reply_v4(&rep, B, 0x1234, 6, req.len()),
            "a late reply to seq 5"
        );
        assert!(
            !is_reply_v4(&rep, B, 0x4321, 5, req.len()),
            "another prober"
        );
        let other = Ipv4Addr::new(10, 0, 5, 2);
        assert!(
            !is_reply_v4(&rep, other, 0x1234, 5, req.len()),
            "another host"
        );
        assert!(
            !is_reply_v4(&rep, B, 0x1234, 5, req.len() + 1),
            "another size"
        );
        let mut request_seen = reply_v4(B, &req);
        request_seen[20] = ECHO_REQUEST_V4;
        assert!(
            !is_reply_v4(&request_seen, B, 0x1234, 5, req.len()),
            "not a reply"
        );
    }

    #[test]
    fn ipv4_options_are_skipped_and_malformed_packets_rejected() {
        let req = echo_request(false, 9, 9, 8);
        let plain = reply_v4(B, &req);
        // The same reply with a 4-byte option (IHL 6).
        let mut opt = plain[..20].to_vec();
        opt[0] = 0x46;
        opt[2..4].copy_from_slice(&((plain.len() + 4) as u16).to_be_bytes());
        opt.extend_from_slice(&[1, 1, 1, 0]);
        opt.extend_from_slice(&plain[20..]);
        assert!(is_reply_v4(&opt, B, 9, 9, req.len()));
        assert!(
            !is_reply_v4(&plain[..10], B, 9, 9, req.len()),
            "truncated header"
        );
        assert!(
            !is_reply_v4(&plain[..30], B, 9, 9, req.len()),
            "truncated message"
        );
        let mut bad_ihl = plain.clone();
        bad_ihl[0] = 0x44;
        assert!(!is_reply_v4(&bad_ihl, B, 9, 9, req.len()));
        let mut udp = plain.clone();
        udp[9] = 17;
        assert!(!is_reply_v4(&udp, B, 9, 9, req.len()));
    }

    #[test]
    fn ipv6_replies_match_on_source_ident_seq_and_length() {
        let dst: Ipv6Addr = "fd00:3::2".parse().unwrap();
        let req = echo_request(true, 77, 3, 16);
        let mut rep = req.clone();
        rep[0] = ECHO_REPLY_V6;
        assert!(is_reply_v6(&rep, dst, dst, 77, 3, req.len()));
        assert!(!is_reply_v6(
            &rep,
            "fd00:5::2".parse().unwrap(),
            dst,
            77,
            3,
            req.len()
        ));
        assert!(!is_reply_v6(&rep, dst, dst, 77, 2, req.len()));
        assert!(!is_reply_v6(&rep, dst, dst, 78, 3, req.len()));
        assert!(
            !is_reply_v6(&req, dst, dst, 77, 3, req.len()),
            "the request itself"
        );
        assert!(
            !is_reply_v6(&rep[..7], dst, dst, 77, 3, 7),
            "shorter than a header"
        );
    }
}
