//! Helpers for the real-kernel tests: private network namespaces with a Drop guard.
#![allow(dead_code)]

use std::path::PathBuf;
use std::process::{Command, Output};
use std::sync::atomic::{AtomicUsize, Ordering};

use dataplane_linux::netlink::in_netns;
use dataplane_linux::{Dataplane, NetlinkKernel, Settings};

static COUNTER: AtomicUsize = AtomicUsize::new(0);

/// A network namespace created with `ip netns add`, deleted on drop.
pub struct Ns {
    pub name: String,
}

impl Ns {
    pub fn new(tag: &str) -> Ns {
        let n = COUNTER.fetch_add(1, Ordering::SeqCst);
        let name = format!("umtu{}-{n}-{tag}", std::process::id());
        let out = Command::new("ip")
            .args(["netns", "add", &name])
            .output()
            .expect("run ip");
        assert!(out.status.success(), "ip netns add {name}: {out:?}");
        let ns = Ns { name };
        ns.sh("ip link set lo up");
        ns
    }

    pub fn path(&self) -> PathBuf {
        PathBuf::from(format!("/run/netns/{}", self.name))
    }

    /// Runs `sh -c cmd` inside the namespace; panics on failure.
    pub fn sh(&self, cmd: &str) -> String {
        let out = self.try_sh(cmd);
        assert!(
            out.status.success(),
            "[{}] {cmd}: {}{}",
            self.name,
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    pub fn try_sh(&self, cmd: &str) -> Output {
        Command::new("ip")
            .args(["netns", "exec", &self.name, "sh", "-c", cmd])
            .output()
            .expect("run ip netns exec")
    }

    /// Runs `f` with a [`Dataplane`] over a netlink connection inside this namespace.
    pub fn dp<T, F>(&self, settings: Settings, f: F) -> T
    where
        T: Send + 'static,
        F: FnOnce(&mut Dataplane<NetlinkKernel>) -> T + Send + 'static,
    {
        in_netns(&self.path(), move || {
            let k = NetlinkKernel::new().expect("netlink connection");
            let mut dp = Dataplane::new(k, settings);
            f(&mut dp)
        })
        .expect("enter namespace")
    }
}

impl Drop for Ns {
    fn drop(&mut self) {
        let _ = Command::new("ip")
            .args(["netns", "del", &self.name])
            .output();
    }
}

/// Whether real-kernel tests can run here; prints the reason when not.
pub fn can_run(test: &str) -> bool {
    let uid = Command::new("id").arg("-u").output();
    match uid {
        Ok(o) if String::from_utf8_lossy(&o.stdout).trim() == "0" => {}
        _ => {
            println!("SKIP {test}: not running as root");
            return false;
        }
    }
    let probe = format!(
        "umtu{}-{}-probe",
        std::process::id(),
        COUNTER.fetch_add(1, Ordering::SeqCst)
    );
    let ok = Command::new("ip")
        .args(["netns", "add", &probe])
        .output()
        .map(|o| o.status.success())
        .unwrap_or(false);
    if !ok {
        println!("SKIP {test}: cannot create a network namespace (ip netns add failed)");
        return false;
    }
    let vxlan = Command::new("ip")
        .args([
            "-n",
            &probe,
            "link",
            "add",
            "umtuprobe",
            "type",
            "vxlan",
            "external",
            "dstport",
            "4789",
        ])
        .output()
        .map(|o| o.status.success())
        .unwrap_or(false);
    let _ = Command::new("ip").args(["netns", "del", &probe]).output();
    if !vxlan {
        println!("SKIP {test}: this kernel cannot create a flow-based VXLAN device");
        return false;
    }
    true
}

/// Skips the calling test with a reason when real-kernel tests cannot run.
#[macro_export]
macro_rules! require_root {
    ($name:expr) => {
        if !common::can_run($name) {
            return;
        }
    };
}
