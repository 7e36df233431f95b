//! Socket plumbing shared by both methods: opening sockets, setting options, addresses, waiting
//! for readiness until a deadline, and the local MTU.

use std::net::{IpAddr, SocketAddr, SocketAddrV4, SocketAddrV6};
use std::os::fd::{AsFd, AsRawFd, OwnedFd};
use std::time::{Duration, Instant};

use nix::errno::Errno;
use nix::poll::{PollFd, PollFlags, PollTimeout, poll};
use nix::sys::socket::{
    AddressFamily, SetSockOpt, SockFlag, SockProtocol, SockType, SockaddrIn, SockaddrIn6,
    SockaddrStorage, connect, getsockopt, sockopt,
};

use crate::error::{Error, io};
use crate::sockopt::Ipv6Mtu;
use crate::sockopt::{IP_PMTUDISC_PROBE, IPV6_PMTUDISC_PROBE, IpMtuDiscover, Ipv6MtuDiscover};

/// The longest wait a probe honours; longer timeouts are cut to it (and `Instant` arithmetic
/// cannot overflow).
const MAX_WAIT: Duration = Duration::from_secs(24 * 60 * 60);

/// Opens a non-blocking, close-on-exec socket. `kind` names it in errors.
pub(crate) fn open(
    v6: bool,
    ty: SockType,
    protocol: SockProtocol,
    kind: &'static str,
) -> Result<OwnedFd, Error> {
    let family = if v6 {
        AddressFamily::Inet6
    } else {
        AddressFamily::Inet
    };
    nix::sys::socket::socket(
        family,
        ty,
        SockFlag::SOCK_CLOEXEC | SockFlag::SOCK_NONBLOCK,
        protocol,
    )
    .map_err(|e| Error::Socket {
        kind,
        source: io(e),
    })
}

/// Sets socket option `opt` (named `name` in errors) to `value`.
pub(crate) fn set<O>(fd: &OwnedFd, opt: O, value: &O::Val, name: &'static str) -> Result<(), Error>
where
    O: SetSockOpt,
{
    nix::sys::socket::setsockopt(fd, opt, value).map_err(|e| Error::SocketOption {
        option: name,
        source: io(e),
    })
}

/// Makes `fd` send every size as given: DF set (IPv4) or no fragmentation (IPv6), checked
/// against the device MTU whatever path MTU the kernel has cached (`PMTUDISC_PROBE`).
pub(crate) fn send_sizes_as_given(fd: &OwnedFd, v6: bool) -> Result<(), Error> {
    if v6 {
        set(
            fd,
            Ipv6MtuDiscover,
            &IPV6_PMTUDISC_PROBE,
            "IPV6_MTU_DISCOVER",
        )?;
        set(
            fd,
            nix::sys::socket::sockopt::Ipv6DontFrag,
            &true,
            "IPV6_DONTFRAG",
        )
    } else {
        set(fd, IpMtuDiscover, &IP_PMTUDISC_PROBE, "IP_MTU_DISCOVER")
    }
}

/// The socket address of `ip` and `port`.
pub(crate) fn sockaddr(ip: IpAddr, port: u16) -> SockaddrStorage {
    SockaddrStorage::from(SocketAddr::new(ip, port))
}

/// The IP socket address in `s`, if it holds one.
pub(crate) fn socket_addr(s: &SockaddrStorage) -> Option<SocketAddr> {
    if let Some(a) = s.as_sockaddr_in() {
        return Some(SocketAddr::V4(SocketAddrV4::from(*a)));
    }
    s.as_sockaddr_in6()
        .map(|a| SocketAddr::V6(SocketAddrV6::from(*a)))
}

/// The instant `timeout` from now (at most [`MAX_WAIT`]).
pub(crate) fn deadline(timeout: Duration) -> Instant {
    let now = Instant::now();
    now.checked_add(timeout.min(MAX_WAIT)).unwrap_or(now)
}

/// Waits until `fd` reports one of `events` (errors are always reported) or `deadline`
/// passes. Returns the events, or `None` at the deadline.
pub(crate) fn wait(
    fd: &OwnedFd,
    events: PollFlags,
    deadline: Instant,
) -> Result<Option<PollFlags>, Error> {
    loop {
        let now = Instant::now();
        if now >= deadline {
            return Ok(None);
        }
        let left = deadline - now;
        // Rounded up: rounding down would wake up early and spin on a zero timeout.
        let ms = left.as_nanos().div_ceil(1_000_000);
        let ms = i32::try_from(ms).unwrap_or(i32::MAX);
        let timeout = PollTimeout::try_from(ms).unwrap_or(PollTimeout::MAX);
        let mut fds = [PollFd::new(fd.as_fd(), events)];
        match poll(&mut fds, timeout) {
            Ok(0) | Err(Errno::EINTR) => continue,
            Ok(_) => return Ok(Some(fds[0].revents().unwrap_or(PollFlags::empty()))),
            Err(e) => return Err(Error::Receive { source: io(e) }),
        }
    }
}

/// Discards every datagram queued for reading on the non-blocking `fd`.
pub(crate) fn drain(fd: &OwnedFd, buf: &mut [u8]) -> Result<(), Error> {
    loop {
        match nix::sys::socket::recv(
            fd.as_raw_fd(),
            buf,
            nix::sys::socket::MsgFlags::MSG_DONTWAIT,
        ) {
            Ok(_) | Err(Errno::EINTR) => continue,
            Err(Errno::EAGAIN) => return Ok(()),
            Err(e) => return Err(Error::Receive { source: io(e) }),
        }
    }
}

/// The MTU the kernel uses towards `dst`: `fd`, a UDP socket of `dst`'s family, is connected
/// to it (which sends nothing) and asked for `IP_MTU` / `IPV6_MTU`: the route's MTU metric, the
/// device's MTU, or a path MTU learned from ICMP, whichever the route cache holds.
pub(crate) fn local_mtu(fd: &OwnedFd, dst: IpAddr) -> Result<u32, Error> {
    let fail = |e: Errno| Error::LocalMtu { dst, source: io(e) };
    // The port is irrelevant to the route; the discard port keeps it recognisable.
    let mtu = match dst {
        IpAddr::V4(ip) => {
            connect(fd.as_raw_fd(), &SockaddrIn::from(SocketAddrV4::new(ip, 9))).map_err(fail)?;
            getsockopt(fd, sockopt::IpMtu).map_err(fail)?
        }
        IpAddr::V6(ip) => {
            connect(
                fd.as_raw_fd(),
                &SockaddrIn6::from(SocketAddrV6::new(ip, 9, 0, 0)),
            )
            .map_err(fail)?;
            getsockopt(fd, Ipv6Mtu).map_err(fail)?
        }
    };
    u32::try_from(mtu).map_err(|_| fail(Errno::ERANGE))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn socket_addresses_round_trip() {
        for a in ["192.0.2.1:33434", "[2001:db8::1]:33500"] {
            let a: SocketAddr = a.parse().unwrap();
            assert_eq!(socket_addr(&sockaddr(a.ip(), a.port())), Some(a));
        }
    }

    #[test]
    fn deadlines_of_huge_timeouts_do_not_overflow() {
        let d = deadline(Duration::MAX);
        assert!(d > Instant::now() + Duration::from_secs(3600));
    }

    #[test]
    fn a_udp_socket_waits_until_the_deadline_when_nothing_comes() {
        let fd = open(false, SockType::Datagram, SockProtocol::Udp, "UDP").expect("UDP socket");
        let start = Instant::now();
        let got = wait(&fd, PollFlags::POLLIN, deadline(Duration::from_millis(50))).unwrap();
        let took = start.elapsed();
        assert_eq!(got, None);
        assert!(took >= Duration::from_millis(50), "{took:?}");
        assert!(took < Duration::from_millis(500), "{took:?}");
    }

    #[test]
    fn the_loopback_mtu_is_read_from_a_connected_socket() {
        let fd = open(false, SockType::Datagram, SockProtocol::Udp, "UDP").expect("UDP socket");
        match local_mtu(&fd, "127.0.0.1".parse().unwrap()) {
            // Loopback's MTU is 65536 by default; some environments lower it.
            Ok(mtu) => assert!(mtu >= 1280, "{mtu}"),
            // A sandbox whose loopback device is down has no route to it.
            Err(Error::LocalMtu { source, .. })
                if source.raw_os_error() == Some(Errno::ENETUNREACH as i32) =>
            {
                println!("SKIP: no route to 127.0.0.1 here (loopback down)");
            }
            Err(e) => panic!("{e}"),
        }
    }
}
