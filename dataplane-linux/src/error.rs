//! Errors of the adapter: they keep the kernel's errno and classify it by number, never by text.

use std::fmt;

use crate::model::Op;

/// Classification of a failed kernel operation, by errno.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ErrorKind {
    /// The object is not there (`ENOENT`, `ENODEV`, `ESRCH`, `ENXIO`, `ENETUNREACH`).
    Absent,
    /// The object already exists (`EEXIST`, `ENOTEMPTY`).
    Exists,
    /// Not allowed (`EPERM`, `EACCES`).
    Permission,
    /// Worth retrying (`EAGAIN`, `EBUSY`, `EINTR`, `ENOBUFS`, `ENOMEM`, `ETIMEDOUT`).
    Transient,
    /// The kernel lacks the feature (`EOPNOTSUPP`, `EAFNOSUPPORT`, `EPROTONOSUPPORT`).
    Unsupported,
    /// Anything else (`EINVAL`, `ERANGE`, ...).
    Other,
}

impl ErrorKind {
    /// Classifies a positive errno.
    pub fn from_errno(errno: i32) -> ErrorKind {
        use nix::errno::Errno as E;
        match E::from_raw(errno) {
            E::ENOENT | E::ENODEV | E::ESRCH | E::ENXIO | E::ENETUNREACH => ErrorKind::Absent,
            E::EEXIST | E::ENOTEMPTY => ErrorKind::Exists,
            E::EPERM | E::EACCES => ErrorKind::Permission,
            E::EAGAIN | E::EBUSY | E::EINTR | E::ENOBUFS | E::ENOMEM | E::ETIMEDOUT => {
                ErrorKind::Transient
            }
            E::EOPNOTSUPP | E::EAFNOSUPPORT | E::EPROTONOSUPPORT => ErrorKind::Unsupported,
            _ => ErrorKind::Other,
        }
    }
}

impl fmt::Display for ErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let s = match self {
            ErrorKind::Absent => "absent",
            ErrorKind::Exists => "exists",
            ErrorKind::Permission => "permission",
            ErrorKind::Transient => "transient",
            ErrorKind::Unsupported => "unsupported by this kernel",
            ErrorKind::Other => "other",
        };
        f.write_str(s)
    }
}

/// An error of the adapter.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A kernel (netlink or system call) operation failed with an errno.
    #[error("{op}: errno {errno} ({kind})")]
    Kernel {
        /// What was being done (an operation description).
        op: String,
        /// The positive errno.
        errno: i32,
        /// Its classification.
        kind: ErrorKind,
    },
    /// A file operation (CNI configuration) failed.
    #[error("{op}: {source}")]
    Io {
        /// What was being done.
        op: String,
        /// The I/O error (keeps its raw OS error).
        #[source]
        source: std::io::Error,
    },
    /// The desired state is inconsistent (e.g. a route MTU above its device's MTU).
    #[error("invalid desired state: {0}")]
    Invalid(String),
    /// The desired state holds a route of prefix length 0. The adapter's table is consulted by
    /// a policy rule before `main`, so a default route there would capture all of the host's
    /// traffic (its own underlay included); nothing is applied.
    #[error(
        "refusing default route {destination}: the agent's table is consulted before main, so it \
         would capture all of the host's traffic"
    )]
    DefaultRoute {
        /// The offending destination.
        destination: ipnet::IpNet,
    },
    /// The CNI configuration could not be understood.
    #[error("CNI configuration {path}: {reason}")]
    Cni {
        /// The file.
        path: String,
        /// What is wrong.
        reason: String,
    },
    /// Read-back after the writes found the kernel differing from the plan.
    #[error("verification failed: {0}")]
    Verification(String),
    /// Read-back after [`crate::Dataplane::remove_owned`] found owned state still in the kernel:
    /// `left` is the removal a next call would still have to write (see
    /// [`crate::plan::removal`]), e.g. a route re-added by another writer meanwhile.
    #[error("owned dataplane state remains after removal: {}", join_ops(.left))]
    NotRemoved {
        /// The writes still needed, in removal order.
        left: Vec<Op>,
    },
    /// The netlink connection or its runtime failed (no errno available).
    #[error("netlink: {0}")]
    Netlink(String),
}

impl Error {
    /// Builds a kernel error from a positive errno.
    pub fn kernel(op: impl Into<String>, errno: i32) -> Error {
        Error::Kernel {
            op: op.into(),
            errno,
            kind: ErrorKind::from_errno(errno),
        }
    }

    /// The errno, when the error came from the kernel (or from a file operation).
    pub fn errno(&self) -> Option<i32> {
        match self {
            Error::Kernel { errno, .. } => Some(*errno),
            Error::Io { source, .. } => source.raw_os_error(),
            _ => None,
        }
    }

    /// The errno classification, when there is an errno.
    pub fn kind(&self) -> Option<ErrorKind> {
        self.errno().map(ErrorKind::from_errno)
    }
}

/// `a; b; c` for an error message.
fn join_ops(ops: &[Op]) -> String {
    ops.iter().map(Op::to_string).collect::<Vec<_>>().join("; ")
}

/// Result alias.
pub type Result<T> = std::result::Result<T, Error>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classification_by_number() {
        assert_eq!(ErrorKind::from_errno(libc_enoent()), ErrorKind::Absent);
        assert_eq!(ErrorKind::from_errno(17), ErrorKind::Exists);
        assert_eq!(ErrorKind::from_errno(1), ErrorKind::Permission);
        assert_eq!(ErrorKind::from_errno(16), ErrorKind::Transient);
        assert_eq!(ErrorKind::from_errno(95), ErrorKind::Unsupported);
        assert_eq!(ErrorKind::from_errno(22), ErrorKind::Other);
        let e = Error::kernel("set mtu", 19);
        assert_eq!(e.kind(), Some(ErrorKind::Absent));
        assert_eq!(e.errno(), Some(19));
    }

    fn libc_enoent() -> i32 {
        2
    }
}
