//! Private network namespaces for the tests and benchmarks that use the real kernel: created
//! with `ip netns add`, deleted on drop, and the probe that says whether such a test can run
//! here (root, namespaces, the kernel features it needs), printing the reason when it cannot.

use std::path::PathBuf;
use std::process::{Command, Output};
use std::sync::atomic::{AtomicUsize, Ordering};

static COUNTER: AtomicUsize = AtomicUsize::new(0);

/// A name no other namespace of this process or another test process has.
fn unique_name(tag: &str) -> String {
    let n = COUNTER.fetch_add(1, Ordering::SeqCst);
    format!("umtu{}-{n}-{tag}", std::process::id())
}

/// A network namespace created with `ip netns add`, deleted on drop.
pub struct Ns {
    /// The namespace's name (`ip netns exec NAME`, `ip -n NAME`).
    pub name: String,
}

impl Ns {
    /// A fresh namespace with its loopback up; panics when it cannot be made (a test that can
    /// run here, [`can_run`], can make one).
    pub fn new(tag: &str) -> Ns {
        Ns::try_new(tag).unwrap_or_else(|e| panic!("{e}"))
    }

    /// A fresh namespace with its loopback up, or why it could not be made.
    pub fn try_new(tag: &str) -> Result<Ns, String> {
        let name = unique_name(tag);
        let out = Command::new("ip")
            .args(["netns", "add", &name])
            .output()
            .map_err(|e| format!("ip: {e}"))?;
        if !out.status.success() {
            return Err(format!(
                "ip netns add {name} failed: {}",
                String::from_utf8_lossy(&out.stderr).trim()
            ));
        }
        let ns = Ns { name };
        ns.check("ip link set lo up")?;
        Ok(ns)
    }

    /// The namespace's file, to enter it (`setns`).
    pub fn path(&self) -> PathBuf {
        PathBuf::from(format!("/run/netns/{}", self.name))
    }

    /// Runs `sh -c cmd` inside the namespace and returns what it printed; panics on failure.
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

    /// Runs `sh -c cmd` inside the namespace: what it printed, or on failure its error output.
    pub fn check(&self, cmd: &str) -> Result<String, String> {
        let out = self.try_sh(cmd);
        if out.status.success() {
            Ok(String::from_utf8_lossy(&out.stdout).into_owned())
        } else {
            Err(format!(
                "[{}] {cmd}: {}",
                self.name,
                String::from_utf8_lossy(&out.stderr).trim()
            ))
        }
    }

    /// Runs `sh -c cmd` inside the namespace, whatever its status.
    pub fn try_sh(&self, cmd: &str) -> Output {
        Command::new("ip")
            .args(["netns", "exec", &self.name, "sh", "-c", cmd])
            .output()
            .expect("run ip netns exec")
    }

    /// `ip -n NAME ARGS...` (no shell); what it printed, or panics.
    pub fn ip(&self, args: &[&str]) -> String {
        let out = Command::new("ip")
            .arg("-n")
            .arg(&self.name)
            .args(args)
            .output()
            .expect("run ip");
        assert!(
            out.status.success(),
            "[{}] ip {args:?}: {}",
            self.name,
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    }
}

impl Drop for Ns {
    fn drop(&mut self) {
        let _ = Command::new("ip")
            .args(["netns", "del", &self.name])
            .output();
    }
}

/// What a real-kernel test needs besides root and network namespaces.
#[derive(Clone, Copy, Debug)]
pub enum Need {
    /// A flow-based VXLAN device (`ip link add … type vxlan external`).
    FlowVxlan,
    /// A device of this `ip link` type (`geneve`, `ipip`, `ip6tnl`, `wireguard`): the kernel
    /// has its driver.
    LinkType(&'static str),
    /// A program on the `PATH` (it answers `-V`).
    Tool(&'static str),
}

/// Whether real-kernel tests must run rather than skip: in CI (`CI` set to anything but
/// `false`) and in the VM lab (`UMTU_VM_LAB`), which provide root, namespaces, every tunnel
/// driver and every tool the tests use. A test that cannot run there fails with its reason.
pub fn must_run() -> bool {
    let set = |name: &str| std::env::var(name).is_ok_and(|v| !v.is_empty() && v != "false");
    set("CI") || set("UMTU_VM_LAB")
}

/// A real-kernel test that cannot run here for `reason`: prints `SKIP test: reason` where
/// skipping is allowed, and panics with the reason where it must run ([`must_run`]).
pub fn skip(test: &str, reason: &str) {
    assert!(
        !must_run(),
        "{test} cannot run: {reason} (CI and the VM lab must provide it)"
    );
    println!("SKIP {test}: {reason}");
}

/// Whether a real-kernel test can run here: root, network namespaces and every one of `needs`.
/// When it cannot, prints `SKIP test: reason` and returns false, except where it must run
/// ([`must_run`]): there it panics with the reason, so a missing requirement never passes as a
/// skip.
pub fn can_run(test: &str, needs: &[Need]) -> bool {
    match missing(needs) {
        None => true,
        Some(reason) => {
            skip(test, &reason);
            false
        }
    }
}

/// The first thing missing for a real-kernel test, as a reason.
fn missing(needs: &[Need]) -> Option<String> {
    let uid = Command::new("id").arg("-u").output();
    if !matches!(&uid, Ok(o) if String::from_utf8_lossy(&o.stdout).trim() == "0") {
        return Some("not running as root".into());
    }
    for need in needs {
        if let Need::Tool(tool) = need
            && Command::new(tool).arg("-V").output().is_err()
        {
            return Some(format!("`{tool}` is not installed"));
        }
    }
    let probe = unique_name("probe");
    let made = Command::new("ip")
        .args(["netns", "add", &probe])
        .output()
        .is_ok_and(|o| o.status.success());
    if !made {
        return Some("cannot create a network namespace (ip netns add failed)".into());
    }
    let reason = needs.iter().find_map(|need| match need {
        Need::FlowVxlan => (!flow_vxlan(&probe))
            .then(|| "this kernel cannot create a flow-based VXLAN device".to_string()),
        Need::LinkType(kind) => (!link_type(&probe, kind))
            .then(|| format!("this kernel cannot create a {kind} device (no driver)")),
        Need::Tool(_) => None,
    });
    let _ = Command::new("ip").args(["netns", "del", &probe]).output();
    reason
}

/// Whether a device of `ip link` type `kind` can be made in namespace `ns`: as it is
/// (`wireguard`), or flow-based (`geneve`, `ipip`, `ip6tnl`, `vxlan`, which need an endpoint
/// otherwise).
fn link_type(ns: &str, kind: &str) -> bool {
    let add = |extra: &[&str]| {
        Command::new("ip")
            .args(["-n", ns, "link", "add", "umtuprobelt", "type", kind])
            .args(extra)
            .output()
            .is_ok_and(|o| o.status.success())
    };
    let made = add(&[]) || add(&["external"]) || add(&["external", "dstport", "4789"]);
    // The next kind probed takes the same name.
    let _ = Command::new("ip")
        .args(["-n", ns, "link", "del", "umtuprobelt"])
        .output();
    made
}

/// Whether a flow-based VXLAN device can be made in namespace `ns`.
fn flow_vxlan(ns: &str) -> bool {
    Command::new("ip")
        .args([
            "-n",
            ns,
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
        .is_ok_and(|o| o.status.success())
}
