//! The one error type of the crate.

use std::io;
use std::net::IpAddr;
use std::path::PathBuf;

/// Why opening a [`Prober`](crate::Prober), reading the local MTU or sending a probe failed.
///
/// A probe that is merely unanswered or too big to send is not an error but an
/// [`Answer`](crate::Answer).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The network namespace file could not be opened.
    #[error("open network namespace {path}: {source}")]
    OpenNetns {
        /// The namespace file given to [`Prober::open`](crate::Prober::open).
        path: PathBuf,
        /// Why the file could not be opened.
        source: io::Error,
    },
    /// The namespace could not be entered (`setns`).
    #[error("enter network namespace {path}: {source}")]
    EnterNetns {
        /// The namespace file given to [`Prober::open`](crate::Prober::open).
        path: PathBuf,
        /// The error `setns` returned.
        source: io::Error,
    },
    /// The short-lived thread that opens the sockets inside a namespace could not be started or
    /// did not finish.
    #[error("the thread opening sockets in network namespace {path} failed: {reason}")]
    NetnsThread {
        /// The namespace file given to [`Prober::open`](crate::Prober::open).
        path: PathBuf,
        /// What went wrong with the thread.
        reason: String,
    },
    /// The addresses of the host's interfaces could not be read (`getifaddrs`).
    #[error("read the host's addresses: {source}")]
    LocalAddresses {
        /// The error `getifaddrs` returned.
        source: io::Error,
    },
    /// A socket could not be opened. Raw sockets (for [`Method::Icmp`](crate::Method::Icmp))
    /// fail with `EPERM` without `CAP_NET_RAW`.
    #[error("open {kind} socket: {source}{}", permission_hint(source))]
    Socket {
        /// Which socket: `"raw ICMP"`, `"raw ICMPv6"`, `"UDP"` or `"UDPv6"`.
        kind: &'static str,
        /// The error `socket` returned (`EAFNOSUPPORT` where IPv6 is disabled).
        source: io::Error,
    },
    /// A socket option could not be set or read.
    #[error("socket option {option}: {source}")]
    SocketOption {
        /// The option, as the C constant is named.
        option: &'static str,
        /// The error `setsockopt` or `getsockopt` returned.
        source: io::Error,
    },
    /// The probe size is below the headers of the destination's family or above 65,535 bytes.
    #[error("probe size {size} towards {dst} out of range {min}..=65535 bytes")]
    Size {
        /// The requested size of the whole IP packet.
        size: u32,
        /// The destination of the probe.
        dst: IpAddr,
        /// The smallest possible probe for the family: IP header plus ICMP or UDP header.
        min: u32,
    },
    /// The kernel refused the probe for another reason than its size (for example no route:
    /// `ENETUNREACH`, or a blackhole or prohibit route: `EINVAL`, `EACCES`).
    #[error("send probe to {dst}: {source}")]
    Send {
        /// The destination of the probe.
        dst: IpAddr,
        /// The error `sendto` returned.
        source: io::Error,
    },
    /// Reading answers from a socket, or waiting for them, failed.
    #[error("receive answers: {source}")]
    Receive {
        /// The error `recvmsg`, `recvfrom` or `poll` returned.
        source: io::Error,
    },
    /// The kernel could not say what MTU it uses towards a destination (for example no route).
    #[error("local MTU towards {dst}: {source}")]
    LocalMtu {
        /// The destination asked about.
        dst: IpAddr,
        /// The error `connect` or `getsockopt(IP_MTU / IPV6_MTU)` returned.
        source: io::Error,
    },
}

impl Error {
    /// Whether this is a socket that needs a privilege the process lacks (`EPERM` or `EACCES`
    /// when opening it): [`Method::Icmp`](crate::Method::Icmp) without `CAP_NET_RAW`.
    pub fn is_permission_denied(&self) -> bool {
        match self {
            Error::Socket { source, .. } => is_permission(source),
            _ => false,
        }
    }
}

fn is_permission(e: &io::Error) -> bool {
    e.kind() == io::ErrorKind::PermissionDenied
}

/// The hint appended to a socket error that is a missing privilege.
fn permission_hint(e: &io::Error) -> &'static str {
    if is_permission(e) {
        " (a raw socket needs CAP_NET_RAW; use Method::Udp, which needs no privilege)"
    } else {
        ""
    }
}

/// An `io::Error` from a nix errno.
pub(crate) fn io(errno: nix::errno::Errno) -> io::Error {
    io::Error::from(errno)
}

#[cfg(test)]
mod tests {
    use super::*;
    use nix::errno::Errno;

    #[test]
    fn eperm_on_a_socket_carries_the_hint() {
        let e = Error::Socket {
            kind: "raw ICMP",
            source: io(Errno::EPERM),
        };
        assert!(e.is_permission_denied());
        let text = e.to_string();
        assert!(text.starts_with("open raw ICMP socket: "), "{text}");
        assert!(text.contains("needs CAP_NET_RAW"), "{text}");
        assert!(text.contains("Method::Udp"), "{text}");
    }

    #[test]
    fn other_socket_errors_have_no_hint() {
        let e = Error::Socket {
            kind: "UDPv6",
            source: io(Errno::EAFNOSUPPORT),
        };
        assert!(!e.is_permission_denied());
        assert!(!e.to_string().contains("CAP_NET_RAW"), "{e}");
        let send = Error::Send {
            dst: "192.0.2.1".parse().unwrap(),
            source: io(Errno::EPERM),
        };
        assert!(
            !send.is_permission_denied(),
            "only opening a socket is a privilege question"
        );
    }

    #[test]
    fn errors_keep_their_errno_as_source() {
        let e = Error::Receive {
            source: io(Errno::EBADF),
        };
        let source = std::error::Error::source(&e).expect("a source");
        let io = source.downcast_ref::<io::Error>().expect("an io::Error");
        assert_eq!(io.raw_os_error(), Some(Errno::EBADF as i32));
    }
}
