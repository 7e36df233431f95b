//! The rtnetlink executor: reads what the kernel holds, builds the message of each write, and
//! sends the writes of one phase in batches.
//!
//! [`NetlinkKernel`] owns one blocking netlink socket, bound to the network namespace of the
//! thread that created it. Its methods block: from async code, call them through
//! `spawn_blocking` or from a dedicated thread. Pod-side interfaces are reached through a
//! short-lived thread that `setns`es into the pod's namespace ([`in_netns`]).

use std::collections::HashMap;

use netlink_packet_core::{NLM_F_ACK, NLM_F_DUMP, NLM_F_REQUEST};
use netlink_packet_route::RouteNetlinkMessage;
use netlink_packet_route::link::{LinkAttribute, LinkMessage};

use crate::Kernel;
use crate::error::{Error, Result};
use crate::model::{KernelState, Link, Op, ReadScope};
use crate::socket::{Batch, Socket};

mod batching;
mod cni_file;
mod messages;
mod netns;
mod probe;
mod read;

use batching::{BATCH_WRITES, Removal};
use messages::{Write, perform_elsewhere};
pub use netns::{in_netns, pod_link_mtu, set_pod_link_mtu};
pub use probe::Probe;
#[cfg(feature = "fuzzing")]
pub(crate) use read::RTM_NEWROUTE;
pub(crate) use read::parse_links;

const ENODEV: i32 = 19;

/// rtnetlink implementation of [`Kernel`].
#[derive(Debug)]
pub struct NetlinkKernel {
    socket: Socket,
    index: HashMap<String, u32>,
}

impl NetlinkKernel {
    /// Opens a netlink socket in the calling thread's network namespace.
    pub fn new() -> Result<Self> {
        Ok(NetlinkKernel {
            socket: Socket::open()?,
            index: HashMap::new(),
        })
    }

    fn request(
        &mut self,
        msg: RouteNetlinkMessage,
        flags: u16,
        what: &str,
    ) -> Result<Vec<RouteNetlinkMessage>> {
        self.socket.request(msg, flags, what)
    }

    fn write(&mut self, msg: RouteNetlinkMessage, extra: u16, what: &str) -> Result<()> {
        self.request(msg, NLM_F_REQUEST | NLM_F_ACK | extra, what)
            .map(drop)
    }

    fn dump(&mut self, msg: RouteNetlinkMessage, what: &str) -> Result<Vec<RouteNetlinkMessage>> {
        self.request(msg, NLM_F_REQUEST | NLM_F_DUMP, what)
    }

    /// All links of the namespace.
    pub fn links(&mut self) -> Result<Vec<Link>> {
        let msgs = self.dump(
            RouteNetlinkMessage::GetLink(LinkMessage::default()),
            "dump links",
        )?;
        let links = parse_links(msgs);
        self.index = links.iter().map(|l| (l.name.clone(), l.index)).collect();
        Ok(links)
    }

    fn ifindex(&mut self, name: &str) -> Result<u32> {
        if let Some(i) = self.index.get(name) {
            return Ok(*i);
        }
        let mut m = LinkMessage::default();
        m.attributes.push(LinkAttribute::IfName(name.to_string()));
        let what = format!("get link {name}");
        let msgs = self.request(RouteNetlinkMessage::GetLink(m), NLM_F_REQUEST, &what)?;
        let idx = parse_links(msgs)
            .into_iter()
            .find(|l| l.name == name)
            .map(|l| l.index)
            .ok_or_else(|| Error::kernel(what, ENODEV))?;
        self.index.insert(name.to_string(), idx);
        Ok(idx)
    }
}

impl Kernel for NetlinkKernel {
    fn read(&mut self, scope: &ReadScope) -> Result<KernelState> {
        self.read_state(scope)
    }

    fn apply(&mut self, op: &Op) -> Result<()> {
        match self.prepare(op)? {
            Write::Message(msg, flags) => self.request(msg, flags, &op.to_string()).map(drop),
            Write::Elsewhere(w) => perform_elsewhere(w),
        }
    }

    /// Sends the phase's netlink writes in batches of up to 128, in order. A write
    /// naming a device whose index is not known yet (one created or deleted earlier in the
    /// phase) and a write outside the socket (a pod's namespace, a CNI file) first wait for
    /// every earlier write of the phase. Stops after the batch holding the first failure.
    fn apply_phase(&mut self, ops: &[Op]) -> Result<()> {
        let describe = |i: usize| ops.get(i).map_or_else(String::new, Op::to_string);
        let mut batch = Batch::default();
        for (i, op) in ops.iter().enumerate() {
            if !self.devices_known(op) {
                self.socket.send_batch(&mut batch, describe)?;
            }
            let write = match self.prepare(op) {
                Ok(w) => w,
                Err(e) => {
                    self.socket.send_batch(&mut batch, describe)?;
                    return Err(e);
                }
            };
            match write {
                Write::Message(msg, flags) => {
                    self.socket.queue(&mut batch, msg, flags, i);
                    if batch.len() >= BATCH_WRITES {
                        self.socket.send_batch(&mut batch, describe)?;
                    }
                }
                Write::Elsewhere(w) => {
                    self.socket.send_batch(&mut batch, describe)?;
                    perform_elsewhere(w)?;
                }
            }
        }
        self.socket.send_batch(&mut batch, describe)
    }

    /// Sends the step's deletions in batches of up to 128, in order, as
    /// [`Kernel::apply_phase`] does; a deletion refused as absent is collected, any other
    /// refusal stops the step after its batch.
    fn remove_phase(&mut self, ops: &[Op]) -> Result<Vec<(usize, Error)>> {
        let mut removal = Removal {
            ops,
            batch: Batch::default(),
            absent: Vec::new(),
        };
        for (i, op) in ops.iter().enumerate() {
            if !self.devices_known(op) {
                removal.flush(self)?;
            }
            let write = match self.prepare(op) {
                Ok(w) => w,
                Err(e) => {
                    removal.flush(self)?;
                    removal.judge(i, e)?;
                    continue;
                }
            };
            match write {
                Write::Message(msg, flags) => {
                    self.socket.queue(&mut removal.batch, msg, flags, i);
                    if removal.batch.len() >= BATCH_WRITES {
                        removal.flush(self)?;
                    }
                }
                Write::Elsewhere(w) => {
                    removal.flush(self)?;
                    if let Err(e) = perform_elsewhere(w) {
                        removal.judge(i, e)?;
                    }
                }
            }
        }
        removal.flush(self)?;
        Ok(removal.absent)
    }
}
