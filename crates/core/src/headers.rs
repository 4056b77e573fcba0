//! A bounded stack of custom headers a packet carries beside its base metadata: an MP-HULA
//! connection header, a source route, INT fields, at once.
//!
//! [`crate::packet::PacketMeta`] stays small and `Copy`; the stack travels beside it as a P4
//! parser's extracted headers sit beside the standard metadata (in the simulator, in a side
//! store the packet refers to by index). A program reaches it through
//! [`crate::program::Ctx::headers`] and [`crate::program::Ctx::headers_mut`].
//!
//! # Wire format
//!
//! Each header is a *shim* between the Ethernet header and IPv4, under the local experimental
//! EtherType [`ETHERTYPE_SHIM`] (0x88B5, IEEE 802 "local experimental 1"):
//!
//! ```text
//!  0                   1                   2                   3
//!  0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! |         next EtherType        |     kind      |  length (words)|
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! |                     body (length - 1 words)                   |
//! ```
//!
//! The Ethernet EtherType is 0x88B5 when the frame carries a stack; each shim's `next` is
//! 0x88B5 when another shim follows and 0x0800 (IPv4) after the last. `length` counts the
//! whole shim in 4-byte words, its first word included, so it is at least 1 and a parser always
//! advances. The outermost header (the top of the stack) comes first. A P4 parser walks the
//! chain with one state per shim, at most [`MAX_HEADERS`] deep (the bound unrolls the loop); an
//! eBPF program walks it with a loop bounded by [`MAX_HEADERS`], checking each shim's length
//! against `data_end` before reading its body, as the verifier demands. Bodies are big-endian.
//!
//! | kind | header | body |
//! |---|---|---|
//! | 1 | [`RoutingHeader`] | connection id u64, path u16, hops u8, reserved u8 (12 bytes) |
//! | 2 | [`IntHeader`] | switch id u32, queue id u8, reserved 3 bytes, sojourn ns u32, depth bytes u32 (16 bytes) |
//! | 3 | [`ProbeHeader`] | ToR id u16, hops u8, reserved u8, utilisation u32 (8 bytes) |
//! | 4 | [`FeedbackHeader`] | queue u8, reserved u8, queue length u16, measured kbit/s u32, target kbit/s u32 (12 bytes) |
//!
//! # Adding a kind
//!
//! A later paper's header is a new [`Header`] variant with its body struct, a
//! [`HeaderKind`] number (the next free one; 0 and 255 are reserved), and one arm in each of
//! [`Header::kind`], [`Header::body_bytes`], [`Header::write_body`] and [`Header::parse`]; the
//! wire parser, the emitter, the simulator's pcap writer and its byte counting then handle it
//! (a round-trip test per kind beside the others in this file keeps the arms honest).

/// The EtherType announcing a shim ("local experimental EtherType 1", IEEE 802).
pub const ETHERTYPE_SHIM: u16 = 0x88B5;

/// At most this many headers in a stack (and shims in a frame): the bound a P4 parser unrolls
/// and an eBPF loop counts to.
pub const MAX_HEADERS: usize = 4;

/// Bytes of a shim's first word (next EtherType, kind, length).
pub const SHIM_HDR_BYTES: usize = 4;

/// The kind byte of a shim.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum HeaderKind {
    /// [`RoutingHeader`].
    Routing = 1,
    /// [`IntHeader`].
    Int = 2,
    /// [`ProbeHeader`].
    Probe = 3,
    /// [`FeedbackHeader`].
    Feedback = 4,
}

impl HeaderKind {
    /// The kind a shim's kind byte names, if any.
    pub const fn from_byte(b: u8) -> Option<HeaderKind> {
        match b {
            1 => Some(HeaderKind::Routing),
            2 => Some(HeaderKind::Int),
            3 => Some(HeaderKind::Probe),
            4 => Some(HeaderKind::Feedback),
            _ => None,
        }
    }
}

/// A connection / routing header: MP-HULA's connection header (which connection, which of its
/// subflows or paths) and a source-routed probe's path and hop count.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub struct RoutingHeader {
    /// Connection id (MP-HULA hashes the 5-tuple or carries the MPTCP token here).
    pub conn_id: u64,
    /// Subflow or path number.
    pub path: u16,
    /// Hops taken (a probe increments it at each switch).
    pub hops: u8,
}

/// An INT-style header: what one switch reports of the queue a packet crossed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub struct IntHeader {
    /// The reporting switch.
    pub switch_id: u32,
    /// The queue at its egress port.
    pub queue_id: u8,
    /// Time the packet spent in that queue, ns (BMv2's `deq_timedelta`).
    pub sojourn_ns: u32,
    /// The queue's depth in bytes as the packet left it.
    pub depth_bytes: u32,
}

/// A HULA probe's body: which ToR sent it and the utilisation of the best path back to it.
/// See `crates/programs/src/hula/README.md`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub struct ProbeHeader {
    /// The originating ToR's id.
    pub tor: u16,
    /// Switches it has crossed.
    pub hops: u8,
    /// Utilisation of the best path from the last switch to the ToR, as a fraction of link
    /// capacity in Q16 (65 536 = 100 %).
    pub util: u32,
}

/// A switch's congestion feedback to a source (PMQECN's feedback packet, `crates/programs/src/
/// pmqecn/README.md`): which class's queue is congested, how long it is, and the class's
/// measured and target arrival rates.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub struct FeedbackHeader {
    /// The class (virtual queue).
    pub queue: u8,
    /// Packets of the class waiting at the port.
    pub qlen_pkts: u16,
    /// The class's measured arrival rate, kbit/s (`lambda`).
    pub measured_kbps: u32,
    /// The rate it should arrive at, kbit/s (`lambda*`).
    pub target_kbps: u32,
}

/// One custom header.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Header {
    /// See [`RoutingHeader`].
    Routing(RoutingHeader),
    /// See [`IntHeader`].
    Int(IntHeader),
    /// See [`ProbeHeader`].
    Probe(ProbeHeader),
    /// See [`FeedbackHeader`].
    Feedback(FeedbackHeader),
}

/// Why a shim body could not be read.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ShimError {
    /// The kind byte names no known header.
    UnknownKind(u8),
    /// The body is shorter than its kind needs.
    ShortBody,
}

impl Header {
    /// Its kind.
    pub const fn kind(&self) -> HeaderKind {
        match self {
            Header::Routing(_) => HeaderKind::Routing,
            Header::Int(_) => HeaderKind::Int,
            Header::Probe(_) => HeaderKind::Probe,
            Header::Feedback(_) => HeaderKind::Feedback,
        }
    }

    /// Bytes of its body on the wire (a multiple of 4).
    pub const fn body_bytes(kind: HeaderKind) -> usize {
        match kind {
            HeaderKind::Routing => 12,
            HeaderKind::Int => 16,
            HeaderKind::Probe => 8,
            HeaderKind::Feedback => 12,
        }
    }

    /// Bytes of its shim on the wire, first word included.
    pub const fn wire_bytes(&self) -> usize {
        SHIM_HDR_BYTES + Self::body_bytes(self.kind())
    }

    /// Append its body to `out`.
    pub fn write_body(&self, out: &mut Vec<u8>) {
        match self {
            Header::Routing(r) => {
                out.extend_from_slice(&r.conn_id.to_be_bytes());
                out.extend_from_slice(&r.path.to_be_bytes());
                out.extend_from_slice(&[r.hops, 0]);
            }
            Header::Int(i) => {
                out.extend_from_slice(&i.switch_id.to_be_bytes());
                out.extend_from_slice(&[i.queue_id, 0, 0, 0]);
                out.extend_from_slice(&i.sojourn_ns.to_be_bytes());
                out.extend_from_slice(&i.depth_bytes.to_be_bytes());
            }
            Header::Probe(p) => {
                out.extend_from_slice(&p.tor.to_be_bytes());
                out.extend_from_slice(&[p.hops, 0]);
                out.extend_from_slice(&p.util.to_be_bytes());
            }
            Header::Feedback(f) => {
                out.extend_from_slice(&[f.queue, 0]);
                out.extend_from_slice(&f.qlen_pkts.to_be_bytes());
                out.extend_from_slice(&f.measured_kbps.to_be_bytes());
                out.extend_from_slice(&f.target_kbps.to_be_bytes());
            }
        }
    }

    /// Read a header of kind byte `kind` from `body` (a shim's bytes after its first word;
    /// longer than needed is accepted, as a later version may append fields).
    pub fn parse(kind: u8, body: &[u8]) -> Result<Header, ShimError> {
        let k = HeaderKind::from_byte(kind).ok_or(ShimError::UnknownKind(kind))?;
        if body.len() < Self::body_bytes(k) {
            return Err(ShimError::ShortBody);
        }
        let be32 = |at: usize| u32::from_be_bytes([body[at], body[at + 1], body[at + 2], body[at + 3]]);
        Ok(match k {
            HeaderKind::Routing => Header::Routing(RoutingHeader {
                conn_id: (u64::from(be32(0)) << 32) | u64::from(be32(4)),
                path: u16::from_be_bytes([body[8], body[9]]),
                hops: body[10],
            }),
            HeaderKind::Int => Header::Int(IntHeader {
                switch_id: be32(0),
                queue_id: body[4],
                sojourn_ns: be32(8),
                depth_bytes: be32(12),
            }),
            HeaderKind::Probe => Header::Probe(ProbeHeader {
                tor: u16::from_be_bytes([body[0], body[1]]),
                hops: body[2],
                util: be32(4),
            }),
            HeaderKind::Feedback => Header::Feedback(FeedbackHeader {
                queue: body[0],
                qlen_pkts: u16::from_be_bytes([body[2], body[3]]),
                measured_kbps: be32(4),
                target_kbps: be32(8),
            }),
        })
    }
}

/// The stack is full: a push beyond [`MAX_HEADERS`] headers.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct StackFull;

impl std::fmt::Display for StackFull {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "header stack full ({MAX_HEADERS} headers)")
    }
}

impl std::error::Error for StackFull {}

/// Up to [`MAX_HEADERS`] headers, the top (outermost on the wire) last pushed. Fixed size, no
/// heap: a copy is a copy of its bytes. Two stacks are equal when they hold the same headers.
#[derive(Clone, Copy, Debug)]
pub struct HeaderStack {
    /// Bottom (innermost, next to IPv4) first.
    items: [Header; MAX_HEADERS],
    len: u8,
}

impl PartialEq for HeaderStack {
    fn eq(&self, other: &Self) -> bool {
        self.items[..self.len()] == other.items[..other.len()]
    }
}

impl Eq for HeaderStack {}

impl std::hash::Hash for HeaderStack {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.items[..self.len()].hash(state);
    }
}

impl Default for HeaderStack {
    fn default() -> Self {
        Self::new()
    }
}

impl HeaderStack {
    /// An empty stack.
    pub const fn new() -> Self {
        HeaderStack {
            items: [Header::Routing(RoutingHeader {
                conn_id: 0,
                path: 0,
                hops: 0,
            }); MAX_HEADERS],
            len: 0,
        }
    }

    /// Headers held.
    #[inline]
    pub fn len(&self) -> usize {
        usize::from(self.len)
    }

    /// Whether it holds none.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Remove every header.
    #[inline]
    pub fn clear(&mut self) {
        self.len = 0;
    }

    /// Push `h` on top (it becomes the outermost shim).
    pub fn push(&mut self, h: Header) -> Result<(), StackFull> {
        let n = self.len();
        if n == MAX_HEADERS {
            return Err(StackFull);
        }
        self.items[n] = h;
        self.len += 1;
        Ok(())
    }

    /// Remove and return the top header.
    pub fn pop(&mut self) -> Option<Header> {
        let n = self.len();
        if n == 0 {
            return None;
        }
        self.len -= 1;
        Some(self.items[n - 1])
    }

    /// The top header.
    pub fn top(&self) -> Option<&Header> {
        self.len().checked_sub(1).map(|i| &self.items[i])
    }

    /// The headers, top (outermost) first: wire order.
    pub fn iter(&self) -> impl Iterator<Item = &Header> + '_ {
        self.items[..self.len()].iter().rev()
    }

    /// The headers, top first, to change in place.
    pub fn iter_mut(&mut self) -> impl Iterator<Item = &mut Header> + '_ {
        let n = self.len();
        self.items[..n].iter_mut().rev()
    }

    /// The topmost header of `kind`.
    pub fn find(&self, kind: HeaderKind) -> Option<&Header> {
        self.iter().find(|h| h.kind() == kind)
    }

    /// The topmost header of `kind`, to change.
    pub fn find_mut(&mut self, kind: HeaderKind) -> Option<&mut Header> {
        self.iter_mut().find(|h| h.kind() == kind)
    }

    /// The topmost routing header.
    pub fn routing(&self) -> Option<&RoutingHeader> {
        self.iter().find_map(|h| match h {
            Header::Routing(r) => Some(r),
            _ => None,
        })
    }

    /// The topmost routing header, to change.
    pub fn routing_mut(&mut self) -> Option<&mut RoutingHeader> {
        self.iter_mut().find_map(|h| match h {
            Header::Routing(r) => Some(r),
            _ => None,
        })
    }

    /// The topmost INT header.
    pub fn int(&self) -> Option<&IntHeader> {
        self.iter().find_map(|h| match h {
            Header::Int(i) => Some(i),
            _ => None,
        })
    }

    /// The topmost INT header, to change.
    pub fn int_mut(&mut self) -> Option<&mut IntHeader> {
        self.iter_mut().find_map(|h| match h {
            Header::Int(i) => Some(i),
            _ => None,
        })
    }

    /// The topmost probe header.
    pub fn probe(&self) -> Option<&ProbeHeader> {
        self.iter().find_map(|h| match h {
            Header::Probe(p) => Some(p),
            _ => None,
        })
    }

    /// The topmost feedback header.
    pub fn feedback(&self) -> Option<&FeedbackHeader> {
        self.iter().find_map(|h| match h {
            Header::Feedback(f) => Some(f),
            _ => None,
        })
    }

    /// Bytes the stack's shims take on the wire.
    pub fn wire_bytes(&self) -> u32 {
        self.iter().map(|h| h.wire_bytes() as u32).sum()
    }

    /// Append the shims, top first, to `out`; the last one's `next` is `inner_ethertype`.
    pub fn write_shims(&self, inner_ethertype: u16, out: &mut Vec<u8>) {
        let n = self.len();
        for (i, h) in self.iter().enumerate() {
            let next = if i + 1 == n { inner_ethertype } else { ETHERTYPE_SHIM };
            out.extend_from_slice(&next.to_be_bytes());
            out.push(h.kind() as u8);
            out.push((h.wire_bytes() / 4) as u8);
            h.write_body(out);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn routing(conn_id: u64) -> Header {
        Header::Routing(RoutingHeader {
            conn_id,
            path: 2,
            hops: 1,
        })
    }

    #[test]
    fn push_beyond_the_bound_is_refused_and_pop_is_last_in_first_out() {
        let mut s = HeaderStack::new();
        assert_eq!(s.pop(), None);
        for i in 0..MAX_HEADERS as u64 {
            s.push(routing(i)).unwrap();
        }
        assert_eq!(s.push(routing(99)), Err(StackFull));
        assert_eq!(s.len(), MAX_HEADERS);
        assert_eq!(s.top(), Some(&routing(3)));
        assert_eq!(s.iter().next(), Some(&routing(3)), "top first, wire order");
        for i in (0..MAX_HEADERS as u64).rev() {
            assert_eq!(s.pop(), Some(routing(i)));
        }
        assert!(s.is_empty());
        assert_eq!(s, HeaderStack::new(), "equal by what they hold, not by what was popped");
        assert_eq!(s.pop(), None);
    }

    #[test]
    fn find_mut_changes_the_topmost_header_of_a_kind() {
        let mut s = HeaderStack::new();
        s.push(Header::Int(IntHeader::default())).unwrap();
        s.push(routing(7)).unwrap();
        s.int_mut().unwrap().sojourn_ns = 42;
        s.routing_mut().unwrap().hops += 1;
        assert_eq!(s.int().unwrap().sojourn_ns, 42);
        assert_eq!(s.routing().unwrap().hops, 2);
        assert_eq!(s.find(HeaderKind::Int).map(Header::kind), Some(HeaderKind::Int));
        assert_eq!(s.wire_bytes(), 16 + 20);
    }

    #[test]
    fn every_kind_round_trips_through_its_body() {
        let hs = [
            routing(0x0102_0304_0506_0708),
            Header::Int(IntHeader {
                switch_id: 0xdead_beef,
                queue_id: 7,
                sojourn_ns: 123_456,
                depth_bytes: 98_765,
            }),
            Header::Probe(ProbeHeader {
                tor: 0x0102,
                hops: 3,
                util: 0x8000_0001,
            }),
            Header::Feedback(FeedbackHeader {
                queue: 5,
                qlen_pkts: 0x0203,
                measured_kbps: 10_000,
                target_kbps: 0x8000_0002,
            }),
        ];
        for h in hs {
            let mut body = Vec::new();
            h.write_body(&mut body);
            assert_eq!(body.len(), Header::body_bytes(h.kind()));
            assert_eq!(body.len() % 4, 0);
            assert_eq!(Header::parse(h.kind() as u8, &body), Ok(h));
            assert_eq!(
                Header::parse(h.kind() as u8, &body[..body.len() - 1]),
                Err(ShimError::ShortBody)
            );
        }
        assert_eq!(Header::parse(0, &[0; 16]), Err(ShimError::UnknownKind(0)));
    }

    #[test]
    fn a_stack_is_small_and_plain() {
        assert!(
            std::mem::size_of::<HeaderStack>() <= 104,
            "{}",
            std::mem::size_of::<HeaderStack>()
        );
    }
}
