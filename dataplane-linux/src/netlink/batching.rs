//! What shapes a phase's batches: their size, the writes that must wait for the batch before
//! them, and a removal step's refusals.

use crate::error::{Error, ErrorKind, Result};
use crate::model::Op;
use crate::socket::Batch;

use super::NetlinkKernel;

/// Writes sent to the kernel in one `sendmsg` at most: enough to make the per-message system
/// call cost vanish, few enough that the error answers of a batch in which every write fails
/// fit the socket's receive buffer.
pub(super) const BATCH_WRITES: usize = 128;

impl NetlinkKernel {
    /// Whether every device `op` names has a known index, so that its message can be built
    /// without asking the kernel.
    pub(super) fn devices_known(&self, op: &Op) -> bool {
        let known = |name: &str| self.index.contains_key(name);
        match op {
            Op::SetMtu { link, .. } | Op::SetMac { link, .. } | Op::DeleteLink { link } => {
                known(link)
            }
            Op::SetMaster { link, master } => known(link) && known(master),
            Op::ReplaceRoute(r) => r.hops.iter().all(|h| known(&h.device)),
            Op::ReplaceNeighbour(n) => known(&n.device),
            Op::DeleteNeighbour { device, .. } => known(device),
            Op::CreateTunnel { .. }
            | Op::CreateBridge { .. }
            | Op::AddRule(_)
            | Op::DeleteRule(_)
            | Op::DeleteRoute { .. }
            | Op::SetPodMtu { .. }
            | Op::SetCniMtu { .. } => true,
        }
    }
}

/// A removal step in flight: its deletions, the batch being filled, and those found absent.
pub(super) struct Removal<'a> {
    pub(super) ops: &'a [Op],
    pub(super) batch: Batch,
    pub(super) absent: Vec<(usize, Error)>,
}

impl Removal<'_> {
    /// Sends the batch; its refusals are judged in order.
    pub(super) fn flush(&mut self, kernel: &mut NetlinkKernel) -> Result<()> {
        let ops = self.ops;
        let describe = |i: usize| ops.get(i).map_or_else(String::new, Op::to_string);
        let refused = kernel
            .socket
            .send_batch_refusals(&mut self.batch, describe)?;
        for (i, errno) in refused {
            self.judge(i, Error::kernel(describe(i), errno))?;
        }
        Ok(())
    }

    /// A failed deletion: absence is collected, anything else is the step's error.
    pub(super) fn judge(&mut self, i: usize, e: Error) -> Result<()> {
        if e.kind() == Some(ErrorKind::Absent) {
            self.absent.push((i, e));
            Ok(())
        } else {
            Err(e)
        }
    }
}
