//! [`Method::Udp`](crate::Method::Udp): datagrams to unused high ports, answered by the
//! destination's own ICMP "port unreachable", read from the socket's error queue.
//!
//! With `IP_RECVERR` / `IPV6_RECVERR` the kernel queues every ICMP error about a datagram of
//! the socket, with the ICMP type and code, the address that sent the error (the offender) and
//! the original destination address and port. A probe is answered by a port unreachable whose
//! offender is the destination itself for this probe's own port; errors from routers (such as
//! "fragmentation needed") and errors about other ports are not answers.

use std::io::IoSliceMut;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::os::fd::{AsRawFd, OwnedFd};
use std::time::Instant;

use nix::errno::Errno;
use nix::libc;
use nix::poll::PollFlags;
use nix::sys::socket::{
    ControlMessageOwned, MsgFlags, SockProtocol, SockType, SockaddrStorage, recvmsg, sendto,
    sockopt,
};

use crate::Answer;
use crate::error::{Error, io};
use crate::packet::fill;
use crate::sock;

/// The first destination port, as traceroute and tracepath use.
pub(crate) const FIRST_PORT: u16 = 33_434;
/// How many ports the probes cycle through.
pub(crate) const PORTS: u16 = 100;
/// How many leading payload bytes tag a datagram with the prober's identifier and sequence.
const TAG_LEN: usize = 4;
/// How often a send is retried after it reported an earlier datagram's ICMP error.
const SEND_ATTEMPTS: usize = 3;

/// The destination port of the probe with sequence `seq`.
pub(crate) fn port(seq: u16) -> u16 {
    FIRST_PORT + seq % PORTS
}

/// Opens the UDP socket of a family: DF (IPv4) or no fragmentation (IPv6), sized against the
/// device MTU whatever path MTU is cached, ICMP errors queued for reading.
pub(crate) fn open(v6: bool) -> Result<OwnedFd, Error> {
    let fd = if v6 {
        sock::open(true, SockType::Datagram, SockProtocol::Udp, "UDPv6")?
    } else {
        sock::open(false, SockType::Datagram, SockProtocol::Udp, "UDP")?
    };
    sock::send_sizes_as_given(&fd, v6)?;
    if v6 {
        sock::set(&fd, sockopt::Ipv6RecvErr, &true, "IPV6_RECVERR")?;
    } else {
        sock::set(&fd, sockopt::Ipv4RecvErr, &true, "IP_RECVERR")?;
    }
    Ok(fd)
}

/// The tag of a probe: the prober's identifier and the probe's sequence, big-endian.
fn tag(ident: u16, seq: u16) -> [u8; TAG_LEN] {
    let [a, b] = ident.to_be_bytes();
    let [c, d] = seq.to_be_bytes();
    [a, b, c, d]
}

/// The UDP payload of a probe: as much of its tag as fits, then a pattern.
pub(crate) fn datagram(ident: u16, seq: u16, payload_len: usize) -> Vec<u8> {
    let mut p = vec![0u8; payload_len];
    let t = tag(ident, seq);
    let n = payload_len.min(TAG_LEN);
    p[..n].copy_from_slice(&t[..n]);
    fill(&mut p[n..], seq as u8);
    p
}

/// One entry of the error queue.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub(crate) struct Queued {
    /// `ee_errno`: `ECONNREFUSED` for a port unreachable, `EMSGSIZE` for a datagram too big.
    pub errno: u32,
    /// `ee_origin`: local, ICMP or ICMPv6.
    pub origin: u8,
    /// ICMP type (for ICMP origins).
    pub icmp_type: u8,
    /// ICMP code (for ICMP origins).
    pub code: u8,
    /// The sender of the ICMP error.
    pub offender: Option<IpAddr>,
    /// The destination address and port of the datagram the error is about.
    pub original: Option<SocketAddr>,
    /// The leading bytes of that datagram's payload the error quotes (at most the tag).
    pub quoted: Vec<u8>,
}

impl Queued {
    /// Whether this is the kernel's own refusal to send a datagram too big for the device.
    fn is_local_too_big(&self) -> bool {
        self.origin == libc::SO_EE_ORIGIN_LOCAL && self.errno == libc::EMSGSIZE as u32
    }
}

/// Whether the queued error `q` answers the probe to `dst` on `port` tagged `tag`: a port
/// unreachable (ICMP type 3 code 3, ICMPv6 type 1 code 4) sent by `dst` itself about a
/// datagram to (`dst`, `port`), quoting that probe's tag as far as it quotes the payload.
pub(crate) fn answers(q: &Queued, dst: IpAddr, port: u16, tag: &[u8]) -> bool {
    let port_unreachable = match dst {
        IpAddr::V4(_) => q.origin == libc::SO_EE_ORIGIN_ICMP && q.icmp_type == 3 && q.code == 3,
        IpAddr::V6(_) => q.origin == libc::SO_EE_ORIGIN_ICMP6 && q.icmp_type == 1 && q.code == 4,
    };
    let n = q.quoted.len().min(tag.len());
    port_unreachable
        && q.offender == Some(dst)
        && q.original == Some(SocketAddr::new(dst, port))
        && q.quoted[..n] == tag[..n]
}

/// Reads one entry of `fd`'s error queue, or `None` when it is empty.
fn read_error(fd: &OwnedFd, buf: &mut [u8]) -> Result<Option<Queued>, Error> {
    let mut cmsg = nix::cmsg_space!(libc::sock_extended_err, libc::sockaddr_in6);
    let mut q = Queued::default();
    let bytes = {
        let mut iov = [IoSliceMut::new(buf)];
        let msg = loop {
            match recvmsg::<SockaddrStorage>(
                fd.as_raw_fd(),
                &mut iov,
                Some(&mut cmsg),
                MsgFlags::MSG_ERRQUEUE | MsgFlags::MSG_DONTWAIT,
            ) {
                Ok(msg) => break msg,
                Err(Errno::EINTR) => continue,
                Err(Errno::EAGAIN) => return Ok(None),
                Err(e) => return Err(Error::Receive { source: io(e) }),
            }
        };
        q.original = msg.address.as_ref().and_then(sock::socket_addr);
        // A truncated control buffer leaves the entry unexplained: not an answer.
        if let Ok(cmsgs) = msg.cmsgs() {
            for c in cmsgs {
                match c {
                    ControlMessageOwned::Ipv4RecvErr(e, offender) => {
                        (q.errno, q.origin, q.icmp_type, q.code) =
                            (e.ee_errno, e.ee_origin, e.ee_type, e.ee_code);
                        q.offender = offender
                            .map(|s| IpAddr::V4(Ipv4Addr::from(u32::from_be(s.sin_addr.s_addr))));
                    }
                    ControlMessageOwned::Ipv6RecvErr(e, offender) => {
                        (q.errno, q.origin, q.icmp_type, q.code) =
                            (e.ee_errno, e.ee_origin, e.ee_type, e.ee_code);
                        q.offender =
                            offender.map(|s| IpAddr::V6(Ipv6Addr::from(s.sin6_addr.s6_addr)));
                    }
                    _ => {}
                }
            }
        }
        msg.bytes
    };
    q.quoted = quoted(buf, bytes);
    Ok(Some(q))
}

/// The leading bytes of the datagram an error quotes, of the `bytes` received into `buf`: at
/// most the tag.
pub(crate) fn quoted(buf: &[u8], bytes: usize) -> Vec<u8> {
    buf.get(..bytes.min(TAG_LEN).min(buf.len()))
        .unwrap_or_default()
        .to_vec()
}

/// Empties the error queue and the receive queue; returns whether the kernel's own "too big"
/// refusal was among the errors.
fn drain(fd: &OwnedFd, buf: &mut [u8]) -> Result<bool, Error> {
    let mut too_big = false;
    while let Some(q) = read_error(fd, buf)? {
        too_big |= q.is_local_too_big();
    }
    sock::drain(fd, buf)?;
    Ok(too_big)
}

/// Sends one datagram of `payload_len` bytes to `dst` on this probe's port and waits until
/// `deadline` for `dst`'s port unreachable. `fd` is the UDP socket of `dst`'s family.
pub(crate) fn probe(
    fd: &OwnedFd,
    dst: IpAddr,
    ident: u16,
    seq: u16,
    payload_len: usize,
    deadline: Instant,
    buf: &mut [u8],
) -> Result<Answer, Error> {
    // Errors about earlier probes are stale; reading them also clears the pending socket error
    // the kernel would otherwise report on the next send.
    drain(fd, buf)?;
    let port = port(seq);
    let msg = datagram(ident, seq, payload_len);
    let to = sock::sockaddr(dst, port);
    let mut attempt = 0;
    loop {
        attempt += 1;
        let err = match sendto(fd.as_raw_fd(), &msg, &to, MsgFlags::empty()) {
            Ok(_) => break,
            Err(e) => e,
        };
        // A send fails with a pending asynchronous error (an ICMP error about an earlier
        // datagram that arrived after the drain) before it looks at the size; a datagram too
        // big for the device leaves a local EMSGSIZE entry on the queue.
        let local_too_big = drain(fd, buf)?;
        if err == Errno::EMSGSIZE && (local_too_big || attempt >= SEND_ATTEMPTS) {
            return Ok(Answer::TooBig);
        }
        let asynchronous = matches!(
            err,
            Errno::EMSGSIZE
                | Errno::ECONNREFUSED
                | Errno::EHOSTUNREACH
                | Errno::ENETUNREACH
                | Errno::EHOSTDOWN
                | Errno::ENONET
                | Errno::EPROTO
                | Errno::EACCES
        );
        if !asynchronous || attempt >= SEND_ATTEMPTS {
            return Err(Error::Send {
                dst,
                source: io(err),
            });
        }
    }
    let tag = &msg[..msg.len().min(TAG_LEN)];
    loop {
        while let Some(q) = read_error(fd, buf)? {
            if answers(&q, dst, port, tag) {
                return Ok(Answer::Answered);
            }
        }
        // Nothing is expected on the receive queue; emptying it keeps poll from spinning.
        sock::drain(fd, buf)?;
        if sock::wait(fd, PollFlags::POLLIN, deadline)?.is_none() {
            return Ok(Answer::Lost);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn b() -> IpAddr {
        "10.0.3.2".parse().unwrap()
    }

    /// The entry the kernel queues for `dst`'s port unreachable about a datagram to `port`.
    fn unreachable(dst: IpAddr, port: u16, quoted: &[u8]) -> Queued {
        let (origin, icmp_type, code) = match dst {
            IpAddr::V4(_) => (libc::SO_EE_ORIGIN_ICMP, 3, 3),
            IpAddr::V6(_) => (libc::SO_EE_ORIGIN_ICMP6, 1, 4),
        };
        Queued {
            errno: libc::ECONNREFUSED as u32,
            origin,
            icmp_type,
            code,
            offender: Some(dst),
            original: Some(SocketAddr::new(dst, port)),
            quoted: quoted.to_vec(),
        }
    }

    #[test]
    fn ports_cycle_through_a_small_range_from_33434() {
        assert_eq!(port(0), 33_434);
        assert_eq!(port(1), 33_435);
        assert_eq!(port(99), 33_533);
        assert_eq!(port(100), 33_434);
        assert_eq!(port(u16::MAX), 33_434 + u16::MAX % 100);
    }

    #[test]
    fn datagrams_start_with_the_tag_as_far_as_it_fits() {
        let d = datagram(0xabcd, 0x0102, 1372);
        assert_eq!(
            d.len(),
            1372,
            "a 1400-byte IPv4 packet less IP and UDP headers"
        );
        assert_eq!(&d[..4], &[0xab, 0xcd, 0x01, 0x02]);
        assert_eq!(datagram(0xabcd, 1, 2), vec![0xab, 0xcd]);
        assert!(datagram(1, 1, 0).is_empty());
    }

    #[test]
    fn the_destinations_port_unreachable_for_this_port_answers() {
        let t = tag(7, 3);
        assert!(answers(&unreachable(b(), port(3), &t), b(), port(3), &t));
        let v6: IpAddr = "fd00:3::2".parse().unwrap();
        assert!(answers(&unreachable(v6, port(3), &t), v6, port(3), &t));
        // A destination that quotes no payload (only the UDP header, as RFC 792 requires).
        assert!(answers(&unreachable(b(), port(3), &[]), b(), port(3), &t));
    }

    #[test]
    fn other_errors_ports_offenders_and_tags_do_not_answer() {
        let t = tag(7, 3);
        let p = port(3);
        assert!(
            !answers(&unreachable(b(), port(2), &t), b(), p, &t),
            "an earlier probe's port"
        );
        let mut router = unreachable(b(), p, &t);
        router.offender = Some("10.0.2.1".parse().unwrap());
        assert!(
            !answers(&router, b(), p, &t),
            "sent by a router, not the destination"
        );
        let mut frag_needed = unreachable(b(), p, &t);
        frag_needed.code = 4;
        frag_needed.errno = libc::EMSGSIZE as u32;
        assert!(!answers(&frag_needed, b(), p, &t), "fragmentation needed");
        let mut host_unreachable = unreachable(b(), p, &t);
        host_unreachable.code = 1;
        assert!(!answers(&host_unreachable, b(), p, &t));
        let mut local = unreachable(b(), p, &t);
        local.origin = libc::SO_EE_ORIGIN_LOCAL;
        local.errno = libc::EMSGSIZE as u32;
        assert!(local.is_local_too_big());
        assert!(!answers(&local, b(), p, &t), "the kernel's own refusal");
        assert!(
            !answers(&unreachable(b(), p, &tag(7, 103)), b(), p, &t),
            "a wrapped port"
        );
        assert!(
            !answers(&unreachable(b(), p, &tag(8, 3)), b(), p, &t),
            "another prober"
        );
        let mut elsewhere = unreachable(b(), p, &t);
        elsewhere.original = Some(SocketAddr::new("10.0.5.2".parse().unwrap(), p));
        assert!(
            !answers(&elsewhere, b(), p, &t),
            "about a datagram to another host"
        );
        let v6: IpAddr = "fd00:3::2".parse().unwrap();
        let mut v4_codes = unreachable(v6, p, &t);
        (v4_codes.origin, v4_codes.icmp_type, v4_codes.code) = (libc::SO_EE_ORIGIN_ICMP, 3, 3);
        assert!(
            !answers(&v4_codes, v6, p, &t),
            "IPv4 codes on an IPv6 probe"
        );
    }
}
