//! The netlink transport: one blocking `NETLINK_ROUTE` socket, its sequence numbers, dumps,
//! single requests, and batches of writes sent together.
//!
//! A batch is many write messages encoded back to back and handed to the kernel in one
//! `sendmsg`. The kernel processes the messages of a socket in the order they were sent, each
//! one whether or not an earlier one failed, and answers every failed message with an error
//! carrying that message's sequence number. So only the last message of a batch asks for an
//! acknowledgement (`NLM_F_ACK`): its answer arrives after every error of the batch and closes
//! it. Success costs no reply at all; a failure names its message.

use netlink_packet_core::{
    NLM_F_ACK, NLM_F_DUMP, NLM_F_MULTIPART, NLM_F_REQUEST, NetlinkBuffer, NetlinkMessage,
    NetlinkPayload,
};
use netlink_packet_route::RouteNetlinkMessage;
use netlink_sys::{Socket as RawSocket, SocketAddr, protocols::NETLINK_ROUTE};

use crate::error::{Error, Result};

/// Receive buffer per `recv`: the kernel fills dump datagrams up to 32 KiB.
const RECV_BYTES: usize = 64 * 1024;

/// Requested socket receive buffer (`SO_RCVBUF`, capped by `net.core.rmem_max`): room for the
/// error answers of a whole batch even when every message of it fails.
const SOCKET_RCVBUF: usize = 1 << 20;

/// `ENOBUFS`: answers were dropped because the receive buffer was full.
const ENOBUFS: i32 = 105;

/// `MSG_TRUNC` for `recv`: return the datagram's real length even when it did not fit.
const MSG_TRUNC: i32 = 0x20;

/// Netlink messages are aligned to 4 bytes inside a datagram.
fn aligned(len: usize) -> usize {
    (len + 3) & !3
}

/// Writes encoded back to back for one `sendmsg`, each with a caller's tag (e.g. the index of
/// the operation it performs) to name it when it fails.
#[derive(Debug, Default)]
pub(crate) struct Batch {
    bytes: Vec<u8>,
    /// Tags in sending order; message `i` carries sequence number `first_seq + i`.
    tags: Vec<usize>,
    first_seq: u32,
    /// Offset of the last message in `bytes` (it gets `NLM_F_ACK` when sent).
    last: usize,
}

impl Batch {
    /// Number of messages queued.
    pub(crate) fn len(&self) -> usize {
        self.tags.len()
    }

    /// Nothing queued.
    pub(crate) fn is_empty(&self) -> bool {
        self.tags.is_empty()
    }

    fn clear(&mut self) {
        self.bytes.clear();
        self.tags.clear();
        self.last = 0;
    }

    /// The tag of the message with sequence number `seq`, if it belongs to this batch.
    fn tag_of(&self, seq: u32) -> Option<usize> {
        let i = usize::try_from(seq.wrapping_sub(self.first_seq)).ok()?;
        self.tags.get(i).copied()
    }

    fn last_seq(&self) -> u32 {
        let n = u32::try_from(self.tags.len()).unwrap_or(u32::MAX);
        self.first_seq.wrapping_add(n.saturating_sub(1))
    }
}

/// One message of a received datagram.
pub(crate) struct Frame<'a> {
    pub(crate) seq: u32,
    pub(crate) kind: FrameKind<'a>,
}

pub(crate) enum FrameKind<'a> {
    /// A message of the reply: its type, its payload, and its bytes with the header.
    Message {
        message_type: u16,
        multipart: bool,
        payload: &'a [u8],
        bytes: &'a [u8],
    },
    /// The kernel refused the message with this sequence number (positive errno).
    Refused(i32),
    /// The acknowledgement of the message with this sequence number, or the end of a dump.
    Done,
}

const NLMSG_HDRLEN: usize = 16;
const NLMSG_NOOP: u16 = 1;
const NLMSG_ERROR: u16 = 2;
const NLMSG_DONE: u16 = 3;
const NLMSG_OVERRUN: u16 = 4;

/// The messages of one datagram, in order; stops at the first malformed length.
pub(crate) fn frames(mut rest: &[u8]) -> impl Iterator<Item = Frame<'_>> {
    std::iter::from_fn(move || {
        loop {
            let buf = NetlinkBuffer::new_checked(rest).ok()?;
            let len = usize::try_from(buf.length()).ok()?;
            let bytes = rest.get(..len)?;
            let seq = buf.sequence_number();
            let flags = buf.flags();
            let message_type = buf.message_type();
            rest = rest.get(aligned(len)..).unwrap_or_default();
            let payload = bytes.get(NLMSG_HDRLEN..).unwrap_or_default();
            let kind = match message_type {
                NLMSG_NOOP | NLMSG_OVERRUN => continue,
                NLMSG_DONE => FrameKind::Done,
                NLMSG_ERROR => match payload.first_chunk::<4>().map(|c| i32::from_ne_bytes(*c)) {
                    Some(0) => FrameKind::Done,
                    Some(code) => FrameKind::Refused(code.saturating_abs()),
                    None => continue,
                },
                _ => FrameKind::Message {
                    message_type,
                    multipart: flags & NLM_F_MULTIPART != 0,
                    payload,
                    bytes,
                },
            };
            return Some(Frame { seq, kind });
        }
    })
}

/// One netlink socket in the namespace of the thread that opened it.
#[derive(Debug)]
pub(crate) struct Socket {
    raw: RawSocket,
    seq: u32,
    recv: Vec<u8>,
}

fn io_err(op: &str, e: std::io::Error) -> Error {
    match e.raw_os_error() {
        Some(errno) => Error::kernel(op, errno),
        None => Error::Netlink(format!("{op}: {e}")),
    }
}

impl Socket {
    /// Opens a `NETLINK_ROUTE` socket connected to the kernel.
    pub(crate) fn open() -> Result<Self> {
        let mut raw = RawSocket::new(NETLINK_ROUTE).map_err(|e| io_err("netlink socket", e))?;
        raw.bind_auto().map_err(|e| io_err("netlink bind", e))?;
        raw.connect(&SocketAddr::new(0, 0))
            .map_err(|e| io_err("netlink connect", e))?;
        // Error answers carry only the failed message's header, not its whole payload.
        raw.set_cap_ack(true)
            .map_err(|e| io_err("netlink NETLINK_CAP_ACK", e))?;
        raw.set_rx_buf_sz(SOCKET_RCVBUF)
            .map_err(|e| io_err("netlink SO_RCVBUF", e))?;
        Ok(Socket {
            raw,
            seq: 0,
            recv: Vec::with_capacity(RECV_BYTES),
        })
    }

    fn next_seq(&mut self) -> u32 {
        self.seq = self.seq.wrapping_add(1);
        self.seq
    }

    /// Appends `msg` with `flags` and sequence number `seq` to `out`.
    fn encode(out: &mut Vec<u8>, msg: RouteNetlinkMessage, flags: u16, seq: u32) {
        let mut m = NetlinkMessage::from(msg);
        m.header.flags = flags;
        m.header.sequence_number = seq;
        m.finalize();
        let start = out.len();
        let len = usize::try_from(m.header.length).unwrap_or(0);
        out.resize(start + aligned(len), 0);
        if let Some(buf) = out.get_mut(start..start + len) {
            m.serialize(buf);
        }
    }

    /// Sends one request and collects its reply: the messages of a dump (`NLM_F_DUMP`), the
    /// answer to a get, or nothing for an acknowledged write (`NLM_F_ACK`). A refusal is the
    /// kernel's errno with `what`. Reply messages that cannot be decoded are skipped (like
    /// `netlink-proto` does).
    pub(crate) fn request(
        &mut self,
        msg: RouteNetlinkMessage,
        flags: u16,
        what: &str,
    ) -> Result<Vec<RouteNetlinkMessage>> {
        let mut out = Vec::new();
        self.exchange(msg, flags, what, |_, _, bytes| {
            if let Ok(NetlinkMessage {
                payload: NetlinkPayload::InnerMessage(m),
                ..
            }) = NetlinkMessage::<RouteNetlinkMessage>::deserialize(bytes)
            {
                out.push(m);
            }
        })?;
        Ok(out)
    }

    /// Sends a dump request and hands each reply message's type and payload to `on`, undecoded.
    pub(crate) fn dump_raw(
        &mut self,
        msg: RouteNetlinkMessage,
        what: &str,
        mut on: impl FnMut(u16, &[u8]),
    ) -> Result<()> {
        self.exchange(msg, NLM_F_REQUEST | NLM_F_DUMP, what, |t, payload, _| {
            on(t, payload)
        })
    }

    /// Sends one request and hands each message of its reply to `on` (type, payload, bytes
    /// with the header) until the reply is complete.
    fn exchange(
        &mut self,
        msg: RouteNetlinkMessage,
        flags: u16,
        what: &str,
        mut on: impl FnMut(u16, &[u8], &[u8]),
    ) -> Result<()> {
        let seq = self.next_seq();
        let mut bytes = Vec::new();
        Self::encode(&mut bytes, msg, flags, seq);
        self.raw.send(&bytes, 0).map_err(|e| io_err(what, e))?;
        let single = flags & (NLM_F_DUMP | NLM_F_ACK) == 0;
        loop {
            for frame in frames(self.receive(what)?) {
                if frame.seq != seq {
                    continue;
                }
                match frame.kind {
                    FrameKind::Message {
                        message_type,
                        multipart,
                        payload,
                        bytes,
                    } => {
                        on(message_type, payload, bytes);
                        if single && !multipart {
                            return Ok(());
                        }
                    }
                    FrameKind::Refused(errno) => return Err(Error::kernel(what, errno)),
                    FrameKind::Done => return Ok(()),
                }
            }
        }
    }

    /// Adds a write to `batch` (sent by [`Socket::send_batch`]).
    pub(crate) fn queue(
        &mut self,
        batch: &mut Batch,
        msg: RouteNetlinkMessage,
        flags: u16,
        tag: usize,
    ) {
        let seq = self.next_seq();
        if batch.is_empty() {
            batch.first_seq = seq;
        }
        batch.last = batch.bytes.len();
        Self::encode(&mut batch.bytes, msg, flags & !NLM_F_ACK, seq);
        batch.tags.push(tag);
    }

    /// Sends `batch` in one `sendmsg` and waits until the kernel processed all of it. Every
    /// message is processed, also after one failed; the error returned is that of the first
    /// failed message, with `describe(tag)` as its operation. `batch` is empty afterwards.
    pub(crate) fn send_batch(
        &mut self,
        batch: &mut Batch,
        describe: impl Fn(usize) -> String,
    ) -> Result<()> {
        let refused = self.send_batch_refusals(batch, &describe)?;
        match refused.first() {
            Some(&(tag, errno)) => Err(Error::kernel(describe(tag), errno)),
            None => Ok(()),
        }
    }

    /// Sends `batch` like [`Socket::send_batch`] and returns the tag and errno of every message
    /// the kernel refused, in sending order (empty: every message succeeded). Only a failure of
    /// the exchange itself is an error. When the receive buffer overflowed after a refusal,
    /// later refusals may be missing from the list (the caller's read-back judges those).
    pub(crate) fn send_batch_refusals(
        &mut self,
        batch: &mut Batch,
        describe: impl Fn(usize) -> String,
    ) -> Result<Vec<(usize, i32)>> {
        if batch.is_empty() {
            return Ok(Vec::new());
        }
        let result = self.exchange_batch(batch, &describe);
        batch.clear();
        result
    }

    fn exchange_batch(
        &mut self,
        batch: &mut Batch,
        describe: &impl Fn(usize) -> String,
    ) -> Result<Vec<(usize, i32)>> {
        if let Some(bytes) = batch.bytes.get_mut(batch.last..) {
            let mut last = NetlinkBuffer::new(bytes);
            let flags = last.flags();
            last.set_flags(flags | NLM_F_ACK);
        }
        let first = batch
            .tags
            .first()
            .copied()
            .map_or_else(String::new, describe);
        let what = || format!("{} writes from {first}", batch.len());
        self.raw
            .send(&batch.bytes, 0)
            .map_err(|e| io_err(&what(), e))?;
        let last_seq = batch.last_seq();
        let mut refused: Vec<(usize, i32)> = Vec::new();
        loop {
            let datagram = match self.receive(&what()) {
                Ok(d) => d,
                // Answers were dropped: the first failure seen is still the first one.
                Err(e) if e.errno() == Some(ENOBUFS) && !refused.is_empty() => break,
                Err(e) => return Err(e),
            };
            let mut closed = false;
            for frame in frames(datagram) {
                if let FrameKind::Refused(errno) = frame.kind {
                    if let Some(tag) = batch.tag_of(frame.seq) {
                        refused.push((tag, errno));
                    }
                }
                closed |= frame.seq == last_seq && !matches!(frame.kind, FrameKind::Message { .. });
            }
            if closed {
                break;
            }
        }
        Ok(refused)
    }

    /// Receives one datagram.
    fn receive(&mut self, what: &str) -> Result<&[u8]> {
        self.recv.clear();
        let n = self
            .raw
            .recv(&mut self.recv, MSG_TRUNC)
            .map_err(|e| io_err(what, e))?;
        if n > self.recv.len() {
            return Err(Error::Netlink(format!(
                "{what}: datagram of {n} bytes truncated to {}",
                self.recv.len()
            )));
        }
        Ok(&self.recv)
    }
}
