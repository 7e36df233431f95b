//! Network namespaces: running work inside another namespace, and the pod interfaces reached
//! that way.

use std::fs::File;
use std::path::Path;

use crate::Kernel;
use crate::error::{Error, Result};
use crate::model::Op;

use super::NetlinkKernel;

/// Runs `f` on a new thread that first enters the network namespace at `netns` (a path such as
/// `/run/netns/NAME` or `/proc/PID/ns/net`). The calling thread's namespace is untouched.
pub fn in_netns<T, F>(netns: &Path, f: F) -> Result<T>
where
    T: Send + 'static,
    F: FnOnce() -> T + Send + 'static,
{
    let file = File::open(netns).map_err(|e| Error::Io {
        op: format!("open netns {}", netns.display()),
        source: e,
    })?;
    let what = format!("setns {}", netns.display());
    let handle = std::thread::spawn(move || -> Result<T> {
        nix::sched::setns(&file, nix::sched::CloneFlags::CLONE_NEWNET)
            .map_err(|e| Error::kernel(what, e as i32))?;
        Ok(f())
    });
    handle
        .join()
        .map_err(|_| Error::Netlink("namespace thread panicked".into()))?
}

/// Reads the MTU of `ifname` inside the namespace at `netns` (`None` when either is absent).
pub fn pod_link_mtu(netns: &Path, ifname: &str) -> Result<Option<u32>> {
    if !netns.exists() {
        return Ok(None);
    }
    let name = ifname.to_string();
    in_netns(netns, move || -> Result<Option<u32>> {
        let mut k = NetlinkKernel::new()?;
        Ok(k.links()?
            .into_iter()
            .find(|l| l.name == name)
            .map(|l| l.mtu))
    })?
}

/// Sets the MTU of `ifname` inside the namespace at `netns`.
pub fn set_pod_link_mtu(netns: &Path, ifname: &str, mtu: u32) -> Result<()> {
    let name = ifname.to_string();
    in_netns(netns, move || -> Result<()> {
        let mut k = NetlinkKernel::new()?;
        k.apply(&Op::SetMtu { link: name, mtu })
    })?
}
