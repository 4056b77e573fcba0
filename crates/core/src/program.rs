//! The program model: what a data-plane program sees and what it may answer.

use crate::control::ProgramControl;
use crate::headers::HeaderStack;
use crate::mptcp::MptcpOption;
use crate::packet::{PacketMeta, PortId};

/// Why a program dropped a packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum DropReason {
    /// No table entry matched the destination.
    NoRoute,
    /// TTL reached zero.
    TtlExpired,
    /// DWRR congestion avoidance: one of the packets dropped on purpose.
    CongestionAvoidance,
    /// The packet could not be parsed.
    Malformed,
    /// The program's own account of the packet's class at its port was full (a virtual
    /// queue's capacity).
    QueueFull,
    /// Larger than the egress can carry once the program has grown it (a tunnel endpoint's
    /// encapsulation beyond the MTU).
    TooBig,
}

/// The ingress verdict on a packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// Send it out of this port.
    Forward(PortId),
    /// Drop it (and count why).
    Drop(DropReason),
    /// The packet was for this node and has been absorbed (a feedback packet, for instance).
    Consume,
}

/// What a program that handles whole frames ([`Program::handles_frames`]) did with one.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FrameVerdict {
    /// Send the frame as the program left it in the buffer out of this port; the runtime
    /// writes its Ethernet addresses (the port's own and its peer's), as it does for
    /// [`Verdict::Forward`].
    Forward(PortId),
    /// Drop it; the reason as conformance vectors name it (`malformed`, `no_route`,
    /// `unknown_ue`, ...).
    Drop(&'static str),
    /// Absorbed by the program (an acknowledgement it learnt from).
    Consume,
    /// For the node's own stack.
    ToStack,
}

/// A packet a program generates (a clone, a feedback packet, a probe), to send out of `port`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Emit {
    /// Egress port of the generated packet.
    pub port: PortId,
    /// Its headers.
    pub meta: PacketMeta,
    /// Its egress queue at `port` (None: the queue of its DSCP class, `dscp >> 3`), as
    /// [`Ctx::set_queue`] chooses for the packet in hand; clamped to the port's queues.
    pub queue: Option<u8>,
    /// Its custom headers (empty: none). `meta.wire_len_bytes` counts the frame without them;
    /// the runtime adds [`HeaderStack::wire_bytes`].
    pub headers: HeaderStack,
}

impl Emit {
    /// A packet out of `port` with `meta`, in its DSCP class's queue, with no custom headers.
    pub const fn new(port: PortId, meta: PacketMeta) -> Emit {
        Emit {
            port,
            meta,
            queue: None,
            headers: HeaderStack::new(),
        }
    }
}

/// A timer a program asks for: [`Program::on_timer`] is called with `token` at `at_ps`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Timer {
    /// When, in picoseconds of the runtime's clock.
    pub at_ps: u64,
    /// The program's own tag, handed back.
    pub token: u64,
}

/// Packets and bytes waiting in one queue of a port.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct QueueDepth {
    /// Packets waiting.
    pub pkts: u32,
    /// Their wire bytes.
    pub bytes: u64,
}

/// At most this many queues per port are shown to a program ([`Ctx::port_queues`]).
pub const MAX_PORT_QUEUES: usize = 8;

/// What a program may do beside deciding on the packet in hand: read the time, generate any
/// number of packets, ask for timers, choose the egress queue of the packet in hand (BMv2's
/// `standard_metadata.priority`), and read and change the packet's custom headers. The runtime
/// owns one, resets it before each call and carries out what the program asked for after it
/// returns.
#[derive(Clone, Debug, Default)]
pub struct Ctx {
    now_ps: u64,
    emitted: Vec<Emit>,
    timers: Vec<Timer>,
    queue: Option<u8>,
    mptcp: Option<MptcpOption>,
    headers: HeaderStack,
    port_queues: [QueueDepth; MAX_PORT_QUEUES],
    n_port_queues: u8,
}

impl Ctx {
    /// An empty context.
    pub fn new() -> Self {
        Self::default()
    }

    /// Clear it for a call at `now_ps`.
    #[inline]
    pub fn reset(&mut self, now_ps: u64) {
        self.now_ps = now_ps;
        self.emitted.clear();
        self.timers.clear();
        self.queue = None;
        self.mptcp = None;
        self.headers.clear();
        self.n_port_queues = 0;
    }

    /// The runtime hands over the custom headers of the packet about to be processed (after
    /// [`Ctx::reset`]; only to programs whose [`Program::uses_headers`] says so, or when the
    /// packet carries some) and reads them back after the call.
    #[inline]
    pub fn set_headers(&mut self, headers: HeaderStack) {
        self.headers = headers;
    }

    /// The custom headers of the packet in hand (empty when it carries none, or when the
    /// runtime did not hand them over: see [`Program::uses_headers`]).
    #[inline]
    pub fn headers(&self) -> &HeaderStack {
        &self.headers
    }

    /// The custom headers of the packet in hand, to push, pop or change. The runtime writes them
    /// back after the call and grows or shrinks the packet's `wire_len_bytes` by the bytes
    /// pushed or popped (so `wire_len_bytes` during the call still counts the headers as they
    /// were when it began).
    #[inline]
    pub fn headers_mut(&mut self) -> &mut HeaderStack {
        &mut self.headers
    }

    /// The runtime shows the depths of every queue of the port (before an
    /// [`Program::on_enqueue`] or [`Program::on_dequeue`] call of a program whose
    /// [`Program::reads_port_queues`] says so); at most [`MAX_PORT_QUEUES`] are kept.
    pub fn set_port_queues(&mut self, depths: impl IntoIterator<Item = QueueDepth>) {
        let mut n = 0;
        for d in depths.into_iter().take(MAX_PORT_QUEUES) {
            self.port_queues[n] = d;
            n += 1;
        }
        self.n_port_queues = n as u8;
    }

    /// Packets and bytes waiting in each queue of the port the packet in hand is queued at,
    /// queue 0 first (as it stood when the stage was called): empty outside enqueue and
    /// dequeue stages, and for programs whose [`Program::reads_port_queues`] says no.
    #[inline]
    pub fn port_queues(&self) -> &[QueueDepth] {
        &self.port_queues[..usize::from(self.n_port_queues)]
    }

    /// The runtime hands over the MPTCP option of the packet about to be processed (after
    /// [`Ctx::reset`]): headers too large for [`PacketMeta`]'s extension travel here, as a P4
    /// parser's extracted headers sit beside the standard metadata.
    #[inline]
    pub fn set_mptcp_option(&mut self, option: Option<MptcpOption>) {
        self.mptcp = option;
    }

    /// The MPTCP option of the packet being processed, when it has one and the runtime parsed
    /// it (its kind is in [`PacketMeta::mptcp_kind`]).
    #[inline]
    pub fn mptcp_option(&self) -> Option<&MptcpOption> {
        self.mptcp.as_ref()
    }

    /// The time of the call.
    #[inline]
    pub fn now_ps(&self) -> u64 {
        self.now_ps
    }

    /// Send a generated packet out of `port`.
    #[inline]
    pub fn emit(&mut self, port: PortId, meta: PacketMeta) {
        self.emitted.push(Emit::new(port, meta));
    }

    /// Send a generated packet with the egress queue and custom headers it names.
    #[inline]
    pub fn emit_packet(&mut self, e: Emit) {
        self.emitted.push(e);
    }

    /// Call [`Program::on_timer`] with `token` at `at_ps` (not before now).
    pub fn set_timer(&mut self, at_ps: u64, token: u64) {
        self.timers.push(Timer {
            at_ps: at_ps.max(self.now_ps),
            token,
        });
    }

    /// Put the packet in hand in egress queue `queue` of its port (0 unless chosen; the runtime
    /// clamps it to the queues the port has).
    #[inline]
    pub fn set_queue(&mut self, queue: u8) {
        self.queue = Some(queue);
    }

    /// The egress queue chosen for the packet in hand, if any.
    #[inline]
    pub fn queue(&self) -> Option<u8> {
        self.queue
    }

    /// The packets generated by the call, in order.
    #[inline]
    pub fn emitted(&self) -> &[Emit] {
        &self.emitted
    }

    /// The timers asked for by the call.
    #[inline]
    pub fn timers(&self) -> &[Timer] {
        &self.timers
    }
}

/// Queue metadata shown to an egress program, as BMv2's `standard_metadata` does. At
/// [`Program::on_enqueue`] the dequeue fields are 0 and `enq_timestamp_ps` is now.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct QueueMeta {
    /// Packets waiting in the packet's queue when it was enqueued (not counting itself).
    pub enq_qdepth_pkts: u32,
    /// Packets still waiting in the packet's queue when it was dequeued.
    pub deq_qdepth_pkts: u32,
    /// Which of the port's queues (0 on a single-queue port).
    pub queue: u8,
    /// When the packet joined the queue, ps (BMv2's `enq_timestamp`).
    pub enq_timestamp_ps: u64,
    /// How long it waited: dequeue time minus enqueue time, ps (BMv2's `deq_timedelta`; 0 for
    /// a packet that found the port idle).
    pub deq_timedelta_ps: u64,
    /// Wire bytes waiting in its queue when it was enqueued (not counting itself).
    pub enq_qdepth_bytes: u64,
    /// Wire bytes still waiting in its queue when it was dequeued.
    pub deq_qdepth_bytes: u64,
}

/// The egress verdict on a packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EgressVerdict {
    /// Transmit it (possibly with rewritten headers).
    Transmit,
    /// Drop it.
    Drop,
}

/// A data-plane program: a state machine with no I/O and no clock of its own. What it exposes
/// to a control plane (registers, tables) is its [`ProgramControl`] side: `impl ProgramControl
/// for MyProgram {}` exposes nothing.
///
/// The runtime (simulator or test harness) calls [`Program::ingress`] for each arriving packet,
/// [`Program::on_enqueue`] as a packet joins an output queue, [`Program::on_dequeue`] as it
/// leaves one, and [`Program::on_timer`] when a timer the program set is due. Time comes in the
/// context; the program never reads a clock, so the same code runs in unit tests, the simulator
/// and conformance vectors.
pub trait Program: ProgramControl + Send {
    /// Called once before the first packet: arm timers (a probe's period, say).
    fn start(&mut self, _ctx: &mut Ctx) {}

    /// Process an arriving packet. `pkt.ingress_port` is set by the caller.
    fn ingress(&mut self, pkt: &mut PacketMeta, ctx: &mut Ctx) -> Verdict;

    /// Whether the program reads MPTCP options ([`Ctx::mptcp_option`]): a runtime hands them
    /// over only to programs that say so, as a P4 parser extracts only the headers it declares
    /// (fetching every segment's option at every hop was a tenth of an MPTCP run's time).
    fn parses_mptcp(&self) -> bool {
        false
    }

    /// Whether the program works on whole frames ([`Program::ingress_frame`]) instead of
    /// their metadata: a tunnel endpoint that reads its peers' messages from the payload and
    /// writes encapsulation bytes. A runtime that has the frame calls `ingress_frame` for such
    /// a program (after its own frame checks: a frame that is not Ethernet / IPv4 goes to the
    /// node's stack, a malformed one is dropped), and [`Program::ingress`] otherwise.
    fn handles_frames(&self) -> bool {
        false
    }

    /// Process an arriving frame, of a program whose [`Program::handles_frames`] says so:
    /// `meta` is what `wire::parse_frame` read of it (with `ingress_port` set), `frame` the
    /// bytes from the Ethernet header, which the program may rewrite, grow or shrink. `None`
    /// from a program that does not handle frames (the default).
    fn ingress_frame(&mut self, _meta: &PacketMeta, _frame: &mut Vec<u8>, _ctx: &mut Ctx) -> Option<FrameVerdict> {
        None
    }

    /// Whether the program reads or writes custom headers ([`Ctx::headers`]): a runtime hands a
    /// packet's header stack over only to programs that say so (and to every program when the
    /// packet carries one, so a switch may pop what another pushed), asked once per node.
    fn uses_headers(&self) -> bool {
        false
    }

    /// Whether the program reads the depths of every queue of a port ([`Ctx::port_queues`]) at
    /// its enqueue and dequeue stages: a runtime fills them only for programs that say so.
    fn reads_port_queues(&self) -> bool {
        false
    }

    /// Whether [`Program::on_enqueue`] does anything: a runtime skips the call for programs
    /// without an enqueue stage (most P4 programs have none).
    fn uses_enqueue(&self) -> bool {
        false
    }

    /// A packet joins the queue of `port` (an AQM may drop or mark it here). Called only when
    /// [`Program::uses_enqueue`] says so.
    fn on_enqueue(&mut self, _pkt: &mut PacketMeta, _port: PortId, _queue: QueueMeta, _ctx: &mut Ctx) -> EgressVerdict {
        EgressVerdict::Transmit
    }

    /// Whether [`Program::on_dequeue`] does anything for packets leaving `port`: a runtime asks
    /// once per port when the program is installed and skips the call where it says no. The
    /// default says yes, so a program that overrides `on_dequeue` alone is always called.
    fn uses_dequeue(&self, _port: PortId) -> bool {
        true
    }

    /// A packet leaves the queue of `port`; it may rewrite headers (ECN marking). Called only
    /// for ports where [`Program::uses_dequeue`] says so.
    fn on_dequeue(&mut self, _pkt: &mut PacketMeta, _port: PortId, _queue: QueueMeta, _ctx: &mut Ctx) -> EgressVerdict {
        EgressVerdict::Transmit
    }

    /// A timer set through [`Ctx::set_timer`] is due.
    fn on_timer(&mut self, _token: u64, _ctx: &mut Ctx) {}

    /// Named counters (packets marked, feedback sent, ...), for results.
    fn counters(&self) -> Vec<(String, u64)> {
        Vec::new()
    }

    /// Named register values worth sampling over time (current weights, ...).
    fn registers(&self) -> Vec<(String, u64)> {
        Vec::new()
    }

    /// Every register a conformance vector compares beyond the counters (table contents,
    /// named as the program's README names them for every backend): empty for programs whose
    /// vectors compare counters only. Not sampled during runs (see [`Program::registers`]).
    fn vector_registers(&self) -> Vec<(String, u64)> {
        Vec::new()
    }

    /// The control plane replaces the routing tables (routes and ECMP groups of `config`),
    /// after a link failed; everything else the program holds stays. Programs that route
    /// nothing ignore it.
    fn update_routes(&mut self, _config: &crate::switch::SwitchConfig) -> Result<(), crate::sched::ConfigError> {
        Ok(())
    }
}
