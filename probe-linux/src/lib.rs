//! Packetization-layer path-MTU probes on Linux (RFC 4821 / RFC 8899 style): send one packet
//! of an exact size that routers may not fragment, and see whether the destination answers it.
//!
//! An MTU black hole is a hop with a smaller MTU whose ICMP "fragmentation needed" / "packet
//! too big" never reaches the sender: ordinary path-MTU discovery then learns nothing and large
//! packets vanish. A probe does not rely on those errors: it asks the destination itself for an
//! answer ([`Method::Icmp`]: an echo reply; [`Method::Udp`]: its "port unreachable"), so a
//! probe that is answered fits the whole path, and one that is not was lost (or too big for
//! some hop). Searching for the largest answered size is the caller's business; a [`Prober`]
//! sends one probe at a time and says what happened.
//!
//! Probes are sent with `IP_PMTUDISC_PROBE` / `IPV6_PMTUDISC_PROBE`: DF set on IPv4, never
//! fragmented on IPv6, checked against the outgoing device's MTU only, whatever path MTU the
//! kernel has cached or learned for the destination. A probe larger than the device allows is
//! refused locally: [`Answer::TooBig`].
//!
//! ```no_run
//! use std::time::Duration;
//! use probe_linux::{Answer, Method, Prober};
//!
//! # fn main() -> Result<(), probe_linux::Error> {
//! let mut prober = Prober::open(Method::Udp, None)?;
//! let dst = "192.0.2.10".parse().unwrap();
//! let local = prober.local_mtu(dst)?;
//! match prober.probe(dst, local, Duration::from_secs(1))? {
//!     Answer::Answered => println!("{local} bytes reach {dst}"),
//!     Answer::Lost => println!("{local} bytes do not come back from {dst}"),
//!     Answer::TooBig => println!("the local device refuses {local} bytes"),
//! }
//! # Ok(())
//! # }
//! ```

#![warn(missing_docs)]

mod error;
#[cfg(feature = "fuzzing")]
#[doc(hidden)]
pub mod fuzzing;
mod icmp;
mod local;
mod netns;
mod packet;
mod sock;
mod sockopt;
mod udp;

use std::cell::Cell;
use std::fmt;
use std::marker::PhantomData;
use std::net::IpAddr;
use std::os::fd::OwnedFd;
use std::path::Path;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU16, Ordering};
use std::time::Duration;

use nix::sys::socket::{SockProtocol, SockType};

pub use error::Error;
pub use local::local_addresses;

/// How probes are sent.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Method {
    /// ICMP echo requests on a raw socket (needs `CAP_NET_RAW`); the answer is the echo reply.
    Icmp,
    /// UDP datagrams to an unused high port (33434 onwards, as tracepath), no privileges; the
    /// answer is the destination's own ICMP "port unreachable", read from the socket's error
    /// queue (`IP_RECVERR` / `IPV6_RECVERR`).
    Udp,
}

/// What one probe found.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Answer {
    /// The destination answered a packet of this size.
    Answered,
    /// Nothing came back within the timeout.
    Lost,
    /// The local kernel refused to send it without fragmenting (larger than the local device
    /// allows: `EMSGSIZE`).
    TooBig,
}

/// A socket of one family, or why that family is unavailable here (`EAFNOSUPPORT`: a kernel
/// without IPv6); the error is returned when the family is used.
enum Slot {
    Open(OwnedFd),
    Unavailable {
        kind: &'static str,
        errno: nix::errno::Errno,
    },
}

impl Slot {
    /// Keeps `opened`, or remembers an unsupported family; other errors are returned.
    fn new(opened: Result<OwnedFd, Error>) -> Result<Slot, Error> {
        match opened {
            Ok(fd) => Ok(Slot::Open(fd)),
            Err(Error::Socket { kind, source })
                if source.raw_os_error() == Some(nix::errno::Errno::EAFNOSUPPORT as i32) =>
            {
                Ok(Slot::Unavailable {
                    kind,
                    errno: nix::errno::Errno::EAFNOSUPPORT,
                })
            }
            Err(e) => Err(e),
        }
    }

    fn get(&self) -> Result<&OwnedFd, Error> {
        match self {
            Slot::Open(fd) => Ok(fd),
            Slot::Unavailable { kind, errno } => Err(Error::Socket {
                kind,
                source: error::io(*errno),
            }),
        }
    }
}

/// The sockets of a prober, all created in its namespace.
struct Sockets {
    /// The probe sockets (raw ICMP or UDP) of IPv4 and IPv6.
    probe_v4: Slot,
    probe_v6: Slot,
    /// Plain UDP sockets connected towards a destination to read the kernel's MTU to it.
    mtu_v4: Slot,
    mtu_v6: Slot,
}

impl Sockets {
    fn open(method: Method) -> Result<Sockets, Error> {
        let probe = |v6| match method {
            Method::Icmp => icmp::open(v6),
            Method::Udp => udp::open(v6),
        };
        let mtu = |v6| {
            let kind = if v6 { "UDPv6" } else { "UDP" };
            sock::open(v6, SockType::Datagram, SockProtocol::Udp, kind)
        };
        Ok(Sockets {
            probe_v4: Slot::new(probe(false))?,
            probe_v6: Slot::new(probe(true))?,
            mtu_v4: Slot::new(mtu(false))?,
            mtu_v6: Slot::new(mtu(true))?,
        })
    }
}

/// A distinct echo identifier per prober of this process (a random start, then counting), so
/// concurrent probers on their raw sockets, which all see every reply, never take each other's.
fn next_ident() -> u16 {
    static BASE: OnceLock<u16> = OnceLock::new();
    static COUNT: AtomicU16 = AtomicU16::new(0);
    let base = *BASE.get_or_init(|| fastrand::u16(..));
    base.wrapping_add(COUNT.fetch_add(1, Ordering::Relaxed))
}

/// Largest IP packet read back: a whole echo reply to the largest probe fits.
const BUF_LEN: usize = 65_536;

/// Sends probes of one [`Method`] from one network namespace, one at a time.
///
/// It owns its sockets (IPv4 and IPv6) for its whole life. It is `Send` but not `Sync`: open
/// one per worker thread; several probers may probe concurrently, each matches only its own
/// answers.
pub struct Prober {
    method: Method,
    sockets: Sockets,
    /// The echo identifier (ICMP) or datagram tag (UDP) of this prober.
    ident: u16,
    /// The sequence number of the last probe sent.
    seq: u16,
    buf: Vec<u8>,
    /// Not `Sync`: `local_mtu` reconnects a shared socket, so one thread at a time uses it.
    _not_sync: PhantomData<Cell<()>>,
}

impl fmt::Debug for Prober {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Prober")
            .field("method", &self.method)
            .field("ident", &self.ident)
            .field("seq", &self.seq)
            .finish_non_exhaustive()
    }
}

impl Prober {
    /// Opens the sockets of `method`, inside the network namespace at `netns` when given (e.g.
    /// `/run/netns/NAME` or `/proc/PID/ns/net`), otherwise the current one.
    ///
    /// Sockets stay bound to the namespace they were created in, so for `netns` they are
    /// created on a short-lived thread that enters it first; the calling thread's namespace is
    /// not changed. Entering a namespace needs `CAP_SYS_ADMIN`; [`Method::Icmp`] needs
    /// `CAP_NET_RAW` ([`Error::Socket`], [`Error::is_permission_denied`]). On a kernel without
    /// IPv6 opening succeeds and IPv6 destinations fail with [`Error::Socket`].
    pub fn open(method: Method, netns: Option<&Path>) -> Result<Prober, Error> {
        let sockets = match netns {
            Some(path) => netns::in_netns(path, move || Sockets::open(method))?,
            None => Sockets::open(method)?,
        };
        Ok(Prober {
            method,
            sockets,
            ident: next_ident(),
            seq: 0,
            buf: vec![0; BUF_LEN],
            _not_sync: PhantomData,
        })
    }

    /// The method this prober sends with.
    pub fn method(&self) -> Method {
        self.method
    }

    /// The MTU the local kernel would use towards `dst` (`IP_MTU` / `IPV6_MTU` of a connected
    /// UDP socket: the route's MTU metric, the device MTU, or a learned path MTU). Nothing is
    /// sent. Fails with [`Error::LocalMtu`] when there is no route to `dst`.
    pub fn local_mtu(&self, dst: IpAddr) -> Result<u32, Error> {
        let fd = match dst {
            IpAddr::V4(_) => self.sockets.mtu_v4.get()?,
            IpAddr::V6(_) => self.sockets.mtu_v6.get()?,
        };
        sock::local_mtu(fd, dst)
    }

    /// Sends one probe: a whole IP packet of exactly `size` bytes (IP header included: 20 for
    /// IPv4, 40 for IPv6, then 8 of ICMP or UDP header and the payload) with DF set (IPv4) / no
    /// fragmentation (IPv6), ignoring the kernel's cached path MTU (`IP_PMTUDISC_PROBE`
    /// semantics), then waits up to `timeout` for the answer that matches this probe (ICMP:
    /// its identifier and sequence and the source address; UDP: the port unreachable for this
    /// probe's datagram from `dst`).
    ///
    /// `size` must be at least the headers (28 for IPv4, 48 for IPv6) and at most 65,535:
    /// [`Error::Size`] otherwise. Errors from routers are never answers: a probe they drop is
    /// [`Answer::Lost`] after `timeout`. A local refusal for another reason than the size (no
    /// route, a blackhole route) is [`Error::Send`].
    pub fn probe(&mut self, dst: IpAddr, size: u32, timeout: Duration) -> Result<Answer, Error> {
        let payload_len = packet::payload_len(dst, size)?;
        let deadline = sock::deadline(timeout);
        let fd = match dst {
            IpAddr::V4(_) => self.sockets.probe_v4.get()?,
            IpAddr::V6(_) => self.sockets.probe_v6.get()?,
        };
        self.seq = self.seq.wrapping_add(1);
        match self.method {
            Method::Icmp => icmp::probe(
                fd,
                dst,
                self.ident,
                self.seq,
                payload_len,
                deadline,
                &mut self.buf,
            ),
            Method::Udp => udp::probe(
                fd,
                dst,
                self.ident,
                self.seq,
                payload_len,
                deadline,
                &mut self.buf,
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn assert_send<T: Send>() {}

    #[test]
    fn a_prober_can_move_to_a_worker_thread() {
        assert_send::<Prober>();
        assert_send::<Error>();
    }

    #[test]
    fn identifiers_of_probers_differ() {
        let a = next_ident();
        let b = next_ident();
        assert_ne!(a, b);
    }

    #[test]
    fn a_udp_prober_opens_without_privileges_and_checks_sizes() {
        let mut p = match Prober::open(Method::Udp, None) {
            Ok(p) => p,
            Err(e) => panic!("UDP sockets need no privilege: {e}"),
        };
        assert_eq!(p.method(), Method::Udp);
        let dst: IpAddr = "192.0.2.1".parse().unwrap();
        for size in [0, 27, 65_536] {
            let r = p.probe(dst, size, Duration::ZERO);
            assert!(matches!(r, Err(Error::Size { .. })), "{size}: {r:?}");
        }
        assert_eq!(p.seq, 0, "a refused size sends nothing");
    }

    #[test]
    fn an_icmp_prober_opens_with_cap_net_raw_or_says_it_needs_it() {
        match Prober::open(Method::Icmp, None) {
            Ok(p) => assert_eq!(p.method(), Method::Icmp),
            Err(e) => {
                assert!(e.is_permission_denied(), "{e}");
                assert!(e.to_string().contains("needs CAP_NET_RAW"), "{e}");
            }
        }
    }

    #[test]
    fn an_unsupported_family_is_reported_when_used() {
        let s = Slot::new(Err(Error::Socket {
            kind: "UDPv6",
            source: error::io(nix::errno::Errno::EAFNOSUPPORT),
        }))
        .expect("deferred");
        let e = s.get().unwrap_err();
        assert!(e.to_string().starts_with("open UDPv6 socket: "), "{e}");
        let eperm = Slot::new(Err(Error::Socket {
            kind: "raw ICMP",
            source: error::io(nix::errno::Errno::EPERM),
        }));
        assert!(matches!(eperm, Err(e) if e.is_permission_denied()));
    }
}
