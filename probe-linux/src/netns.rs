//! Running a closure inside another network namespace.
//!
//! A socket belongs to the namespace of the thread that created it, for its whole life. So the
//! sockets of a prober in another namespace are created on a short-lived thread that enters the
//! namespace first (`setns` changes only the calling thread), and then used from any thread;
//! the caller's own namespace is never changed.

use std::fs::File;
use std::path::Path;

use crate::error::{Error, io};

/// Runs `f` on a new thread inside the network namespace at `netns` (a bind mount such as
/// `/run/netns/NAME` or `/proc/PID/ns/net`) and returns its result.
pub(crate) fn in_netns<T, F>(netns: &Path, f: F) -> Result<T, Error>
where
    T: Send + 'static,
    F: FnOnce() -> Result<T, Error> + Send + 'static,
{
    let file = File::open(netns).map_err(|source| Error::OpenNetns {
        path: netns.to_path_buf(),
        source,
    })?;
    let path = netns.to_path_buf();
    let handle = std::thread::Builder::new()
        .name("probe-netns".into())
        .spawn(move || -> Result<T, Error> {
            nix::sched::setns(&file, nix::sched::CloneFlags::CLONE_NEWNET).map_err(|e| {
                Error::EnterNetns {
                    path,
                    source: io(e),
                }
            })?;
            f()
        })
        .map_err(|e| Error::NetnsThread {
            path: netns.to_path_buf(),
            reason: format!("cannot spawn: {e}"),
        })?;
    handle.join().map_err(|_| Error::NetnsThread {
        path: netns.to_path_buf(),
        reason: "it panicked".into(),
    })?
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_missing_namespace_file_is_an_open_error() {
        let err = in_netns(Path::new("/nonexistent/netns/x"), || Ok(())).unwrap_err();
        assert!(matches!(err, Error::OpenNetns { .. }), "{err:?}");
        assert!(err.to_string().contains("/nonexistent/netns/x"), "{err}");
    }

    #[test]
    fn a_file_that_is_no_namespace_cannot_be_entered() {
        // setns on a regular file fails with EINVAL, whoever runs the test.
        let err = in_netns(Path::new("/proc/self/status"), || Ok(())).unwrap_err();
        assert!(matches!(err, Error::EnterNetns { .. }), "{err:?}");
    }
}
