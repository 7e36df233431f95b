//! In-memory kernel for tests: applies [`Op`]s to a [`KernelState`] with kernel-like errnos,
//! records an ordered write log, checks the MTU inequalities after every write, and can fail
//! any single operation (the k-th write, or every write of one kind), like Calico felix's
//! fake dataplane.

use std::collections::BTreeMap;
use std::net::IpAddr;
use std::path::{Path, PathBuf};

use ipnet::IpNet;

use crate::Kernel;
use crate::error::{Error, ErrorKind, Result};
use crate::model::{
    CniState, KernelState, Link, LinkKind, Neighbour, Op, PodLink, ReadScope, Route, Rule,
};

const ENOENT: i32 = 2;
const ESRCH: i32 = 3;
const ENODEV: i32 = 19;
const EEXIST: i32 = 17;

/// Kind of a write, for per-kind failure flags.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum OpKind {
    /// [`Op::CreateTunnel`]
    CreateTunnel,
    /// [`Op::CreateBridge`]
    CreateBridge,
    /// [`Op::SetMtu`]
    SetMtu,
    /// [`Op::SetMac`]
    SetMac,
    /// [`Op::SetMaster`]
    SetMaster,
    /// [`Op::DeleteLink`]
    DeleteLink,
    /// [`Op::AddRule`]
    AddRule,
    /// [`Op::DeleteRule`]
    DeleteRule,
    /// [`Op::ReplaceRoute`]
    ReplaceRoute,
    /// [`Op::DeleteRoute`]
    DeleteRoute,
    /// [`Op::ReplaceNeighbour`]
    ReplaceNeighbour,
    /// [`Op::DeleteNeighbour`]
    DeleteNeighbour,
    /// [`Op::SetPodMtu`]
    SetPodMtu,
    /// [`Op::SetCniMtu`]
    SetCniMtu,
}

impl OpKind {
    /// Kind of an op.
    pub fn of(op: &Op) -> OpKind {
        match op {
            Op::CreateTunnel { .. } => OpKind::CreateTunnel,
            Op::CreateBridge { .. } => OpKind::CreateBridge,
            Op::SetMtu { .. } => OpKind::SetMtu,
            Op::SetMac { .. } => OpKind::SetMac,
            Op::SetMaster { .. } => OpKind::SetMaster,
            Op::DeleteLink { .. } => OpKind::DeleteLink,
            Op::AddRule(_) => OpKind::AddRule,
            Op::DeleteRule(_) => OpKind::DeleteRule,
            Op::ReplaceRoute(_) => OpKind::ReplaceRoute,
            Op::DeleteRoute { .. } => OpKind::DeleteRoute,
            Op::ReplaceNeighbour(_) => OpKind::ReplaceNeighbour,
            Op::DeleteNeighbour { .. } => OpKind::DeleteNeighbour,
            Op::SetPodMtu { .. } => OpKind::SetPodMtu,
            Op::SetCniMtu { .. } => OpKind::SetCniMtu,
        }
    }
}

/// One attempted write.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LogEntry {
    /// The write.
    pub op: Op,
    /// `None` when it succeeded, else the injected or simulated errno.
    pub errno: Option<i32>,
}

/// In-memory kernel.
#[derive(Debug, Clone, Default)]
pub struct FakeKernel {
    /// Everything the fake holds: links, all routes of the adapter table (in `routes`) and of
    /// `main`, rules, neighbours, pod links (every pod), and CNI files (see `cni_files`).
    pub state: KernelState,
    /// CNI files: path -> common MTU (`None`: plugins disagree or lack it).
    pub cni_files: BTreeMap<PathBuf, Option<u32>>,
    log: Vec<LogEntry>,
    attempts: usize,
    fail_at: Option<(usize, i32)>,
    fail_kinds: BTreeMap<OpKind, i32>,
    violations: Vec<String>,
    next_index: u32,
}

impl FakeKernel {
    /// An empty kernel.
    pub fn new() -> Self {
        FakeKernel {
            next_index: 100,
            ..FakeKernel::default()
        }
    }

    /// Adds a link (test setup; not logged).
    pub fn add_link(&mut self, name: &str, kind: LinkKind, mtu: u32) {
        self.next_index += 1;
        self.state.links.push(Link {
            name: name.to_string(),
            index: self.next_index,
            kind,
            mtu,
            mac: None,
            master: None,
        });
    }

    /// Makes the write with 0-based attempt number `k` (counted over the fake's lifetime,
    /// see [`FakeKernel::attempts`]) fail with `errno`.
    pub fn fail_attempt(&mut self, k: usize, errno: i32) {
        self.fail_at = Some((k, errno));
    }

    /// Makes every write of `kind` fail with `errno` until [`FakeKernel::clear_failures`].
    pub fn fail_kind(&mut self, kind: OpKind, errno: i32) {
        self.fail_kinds.insert(kind, errno);
    }

    /// Removes every injected failure.
    pub fn clear_failures(&mut self) {
        self.fail_at = None;
        self.fail_kinds.clear();
    }

    /// Number of write attempts so far.
    pub fn attempts(&self) -> usize {
        self.attempts
    }

    /// Ordered log of attempted writes.
    pub fn log(&self) -> &[LogEntry] {
        &self.log
    }

    /// Clears the log (attempt numbering continues).
    pub fn clear_log(&mut self) {
        self.log.clear();
    }

    /// Inequality violations seen after any write so far (empty when the order is safe).
    pub fn violations(&self) -> &[String] {
        &self.violations
    }

    fn link_mut(&mut self, name: &str) -> Result<&mut Link> {
        self.state
            .links
            .iter_mut()
            .find(|l| l.name == name)
            .ok_or_else(|| Error::kernel(format!("link {name}"), ENODEV))
    }

    fn has_link(&self, name: &str) -> bool {
        self.state.link(name).is_some()
    }

    /// Applies one write to the state, failing as the kernel would.
    fn simulate(&mut self, op: &Op) -> Result<()> {
        let what = op.to_string();
        match op {
            Op::CreateTunnel {
                name,
                kind,
                mtu,
                mac,
                ..
            } => self.create_link(name, LinkKind::Tunnel(*kind), *mtu, Some(*mac), what),
            Op::CreateBridge { name, mtu } => {
                self.create_link(name, LinkKind::Bridge, *mtu, None, what)
            }
            Op::SetMtu { link, mtu } => {
                self.link_mut(link)?.mtu = *mtu;
                Ok(())
            }
            Op::SetMac { link, mac } => self.set_mac(link, *mac),
            Op::SetMaster { link, master } => self.set_master(link, master, what),
            Op::DeleteLink { link } => self.delete_link(link, what),
            Op::AddRule(r) => self.add_rule(*r, what),
            Op::DeleteRule(r) => self.delete_rule(r, what),
            Op::ReplaceRoute(r) => self.replace_route(r, what),
            Op::DeleteRoute {
                table,
                destination,
                protocol,
            } => self.delete_route(*table, destination, *protocol, what),
            Op::ReplaceNeighbour(n) => self.replace_neighbour(n, what),
            Op::DeleteNeighbour { device, address } => {
                self.delete_neighbour(device, *address, what)
            }
            Op::SetPodMtu { netns, ifname, mtu } => self.set_pod_mtu(netns, ifname, *mtu, what),
            Op::SetCniMtu { path, mtu } => self.set_cni_mtu(path, *mtu, what),
        }
    }

    /// A new device; one of that name already there is `EEXIST`.
    fn create_link(
        &mut self,
        name: &str,
        kind: LinkKind,
        mtu: u32,
        mac: Option<[u8; 6]>,
        what: String,
    ) -> Result<()> {
        if self.has_link(name) {
            return Err(Error::kernel(what, EEXIST));
        }
        self.add_link(name, kind, mtu);
        if mac.is_some() {
            self.link_mut(name)?.mac = mac;
        }
        Ok(())
    }

    fn set_mac(&mut self, link: &str, mac: [u8; 6]) -> Result<()> {
        self.link_mut(link)?.mac = Some(mac);
        // Like the kernel (NETDEV_CHANGEADDR): the device's neighbours, permanent ones
        // included, are flushed.
        self.state.neighbours.retain(|n| n.device != link);
        Ok(())
    }

    fn set_master(&mut self, link: &str, master: &str, what: String) -> Result<()> {
        if !self.has_link(master) {
            return Err(Error::kernel(what, ENODEV));
        }
        self.link_mut(link)?.master = Some(master.to_string());
        Ok(())
    }

    /// Deletes a device with its routes and neighbours, as the kernel does.
    fn delete_link(&mut self, link: &str, what: String) -> Result<()> {
        if !self.has_link(link) {
            return Err(Error::kernel(what, ENODEV));
        }
        self.state.links.retain(|l| l.name != link);
        self.state
            .routes
            .retain(|r| r.hops.iter().all(|h| h.device != link));
        self.state.neighbours.retain(|n| n.device != link);
        Ok(())
    }

    fn add_rule(&mut self, r: Rule, what: String) -> Result<()> {
        if self.state.rules.contains(&r) {
            return Err(Error::kernel(what, EEXIST));
        }
        self.state.rules.push(r);
        Ok(())
    }

    fn delete_rule(&mut self, r: &Rule, what: String) -> Result<()> {
        let before = self.state.rules.len();
        self.state.rules.retain(|x| x != r);
        if before == self.state.rules.len() {
            return Err(Error::kernel(what, ENOENT));
        }
        Ok(())
    }

    fn replace_route(&mut self, r: &Route, what: String) -> Result<()> {
        for h in &r.hops {
            if !self.has_link(&h.device) {
                return Err(Error::kernel(what, ENODEV));
            }
        }
        self.state
            .routes
            .retain(|o| !(o.table == r.table && o.destination == r.destination));
        self.state.routes.push(r.clone());
        Ok(())
    }

    fn delete_route(
        &mut self,
        table: u32,
        destination: &IpNet,
        protocol: u8,
        what: String,
    ) -> Result<()> {
        // Like the kernel: a delete naming a protocol (non-zero) matches only routes of
        // that protocol.
        let before = self.state.routes.len();
        self.state.routes.retain(|o| {
            !(o.table == table
                && o.destination == *destination
                && (protocol == 0 || o.protocol == protocol))
        });
        if before == self.state.routes.len() {
            return Err(Error::kernel(what, ESRCH));
        }
        Ok(())
    }

    fn replace_neighbour(&mut self, n: &Neighbour, what: String) -> Result<()> {
        if !self.has_link(&n.device) {
            return Err(Error::kernel(what, ENODEV));
        }
        self.state
            .neighbours
            .retain(|o| !(o.device == n.device && o.address == n.address));
        self.state.neighbours.push(n.clone());
        Ok(())
    }

    fn delete_neighbour(&mut self, device: &str, address: IpAddr, what: String) -> Result<()> {
        let before = self.state.neighbours.len();
        self.state
            .neighbours
            .retain(|o| !(o.device == device && o.address == address));
        if before == self.state.neighbours.len() {
            return Err(Error::kernel(what, ENOENT));
        }
        Ok(())
    }

    /// A pod interface's MTU; a pod or interface the fake does not hold is `ENODEV`.
    fn set_pod_mtu(&mut self, netns: &Path, ifname: &str, mtu: u32, what: String) -> Result<()> {
        let pl = self
            .state
            .pod_links
            .iter_mut()
            .find(|p| p.netns == netns && p.ifname == ifname && p.mtu.is_some())
            .ok_or_else(|| Error::kernel(what, ENODEV))?;
        pl.mtu = Some(mtu);
        Ok(())
    }

    /// A CNI file's MTU; a file the fake does not hold is `ENOENT`.
    fn set_cni_mtu(&mut self, path: &Path, mtu: u32, what: String) -> Result<()> {
        let f = self
            .cni_files
            .get_mut(path)
            .ok_or_else(|| Error::kernel(what, ENOENT))?;
        *f = Some(mtu);
        Ok(())
    }

    /// The inequalities of `agent.md`: every route MTU ≤ its devices' MTUs; every pod-side
    /// element (bridge, its ports, pod interfaces, CNI files) ≤ every tunnel/WireGuard link.
    pub fn check_inequalities(&self) -> Vec<String> {
        let mut out = Vec::new();
        for r in &self.state.routes {
            if let Some(m) = r.mtu {
                for h in &r.hops {
                    if let Some(l) = self.state.link(&h.device) {
                        if m > l.mtu {
                            out.push(format!(
                                "route {} MTU {m} > device {} MTU {}",
                                r.destination, l.name, l.mtu
                            ));
                        }
                    }
                }
            }
        }
        let floor = self
            .state
            .links
            .iter()
            .filter(|l| matches!(l.kind, LinkKind::Tunnel(_) | LinkKind::Wireguard))
            .map(|l| (l.mtu, l.name.clone()))
            .min();
        if let Some((floor, dev)) = floor {
            let bridges: Vec<&Link> = self
                .state
                .links
                .iter()
                .filter(|l| l.kind == LinkKind::Bridge)
                .collect();
            let mut pod_side: Vec<(String, u32)> = Vec::new();
            for b in &bridges {
                pod_side.push((b.name.clone(), b.mtu));
            }
            for l in &self.state.links {
                if l.master.is_some() {
                    pod_side.push((l.name.clone(), l.mtu));
                }
            }
            for p in &self.state.pod_links {
                if let Some(m) = p.mtu {
                    pod_side.push((format!("{}:{}", p.netns.display(), p.ifname), m));
                }
            }
            for (path, m) in &self.cni_files {
                if let Some(m) = m {
                    pod_side.push((format!("cni {}", path.display()), *m));
                }
            }
            for (name, m) in pod_side {
                if m > floor {
                    out.push(format!("pod-side {name} MTU {m} > link {dev} MTU {floor}"));
                }
            }
        }
        out
    }
}

impl Kernel for FakeKernel {
    fn read(&mut self, scope: &ReadScope) -> Result<KernelState> {
        let s = &self.state;
        Ok(KernelState {
            links: s.links.clone(),
            routes: s
                .routes
                .iter()
                .filter(|r| r.table == scope.table)
                .cloned()
                .collect(),
            main_routes: s.main_routes.clone(),
            rules: s
                .rules
                .iter()
                .filter(|r| r.table == scope.table)
                .copied()
                .collect(),
            neighbours: s
                .neighbours
                .iter()
                .filter(|n| scope.neighbour_devices.contains(&n.device))
                .cloned()
                .collect(),
            pod_links: scope
                .pods
                .iter()
                .map(|(ns, ifname)| PodLink {
                    netns: ns.clone(),
                    ifname: ifname.clone(),
                    mtu: s
                        .pod_links
                        .iter()
                        .find(|p| &p.netns == ns && &p.ifname == ifname)
                        .and_then(|p| p.mtu),
                })
                .collect(),
            cni: scope.cni.as_ref().map(|p| {
                let st = match self.cni_files.get(p) {
                    None => CniState::Missing,
                    Some(m) => CniState::Mtu(*m),
                };
                (p.clone(), st)
            }),
        })
    }

    fn apply(&mut self, op: &Op) -> Result<()> {
        let k = self.attempts;
        self.attempts += 1;
        let injected = match self.fail_at {
            Some((at, errno)) if at == k => Some(errno),
            _ => self.fail_kinds.get(&OpKind::of(op)).copied(),
        };
        if let Some(errno) = injected {
            self.log.push(LogEntry {
                op: op.clone(),
                errno: Some(errno),
            });
            return Err(Error::kernel(format!("{op} (injected)"), errno));
        }
        let res = self.simulate(op);
        self.log.push(LogEntry {
            op: op.clone(),
            errno: res.as_ref().err().and_then(Error::errno),
        });
        if res.is_ok() {
            for v in self.check_inequalities() {
                self.violations
                    .push(format!("after write #{k} ({op}): {v}"));
            }
        }
        res
    }

    /// Like the netlink kernel with every write of the phase in flight at once, the most a
    /// pipelining kernel ever has: a failed write does not stop the writes after it in the
    /// phase; the first failure is returned. The inequalities are checked after each write.
    fn apply_phase(&mut self, ops: &[Op]) -> Result<()> {
        let mut first = None;
        for op in ops {
            if let Err(e) = self.apply(op) {
                first.get_or_insert(e);
            }
        }
        first.map_or(Ok(()), Err)
    }

    /// Like [`FakeKernel::apply_phase`]: every deletion of the step is attempted; those that
    /// find their object gone are returned, the first other failure is the error.
    fn remove_phase(&mut self, ops: &[Op]) -> Result<Vec<(usize, Error)>> {
        let mut absent = Vec::new();
        let mut first = None;
        for (i, op) in ops.iter().enumerate() {
            match self.apply(op) {
                Ok(()) => {}
                Err(e) if e.kind() == Some(ErrorKind::Absent) => absent.push((i, e)),
                Err(e) => {
                    first.get_or_insert(e);
                }
            }
        }
        first.map_or(Ok(absent), Err)
    }
}

/// Wraps any kernel (e.g. the real one) and fails the write with 0-based attempt number `k`.
#[derive(Debug)]
pub struct Faulty<K> {
    /// The wrapped kernel.
    pub inner: K,
    attempts: usize,
    fail_at: Option<(usize, i32)>,
}

impl<K: Kernel> Faulty<K> {
    /// Wraps `inner` without failures.
    pub fn new(inner: K) -> Self {
        Faulty {
            inner,
            attempts: 0,
            fail_at: None,
        }
    }

    /// Fails the write with attempt number `k` (counted from now) with `errno`.
    pub fn fail_in(&mut self, k: usize, errno: i32) {
        self.fail_at = Some((self.attempts + k, errno));
    }

    /// Removes the injected failure.
    pub fn clear(&mut self) {
        self.fail_at = None;
    }
}

impl<K: Kernel> Kernel for Faulty<K> {
    fn read(&mut self, scope: &ReadScope) -> Result<KernelState> {
        self.inner.read(scope)
    }

    fn apply(&mut self, op: &Op) -> Result<()> {
        let k = self.attempts;
        self.attempts += 1;
        if let Some((at, errno)) = self.fail_at {
            if at == k {
                return Err(Error::kernel(format!("{op} (injected)"), errno));
            }
        }
        self.inner.apply(op)
    }
}
