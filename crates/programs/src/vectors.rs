//! Conformance vectors of every registered program: the Rust column.
//!
//! A set names its program (`"program"`, absent: `multipath`) and its parameters in base units
//! (`"params"`). `multipath` sets are replayed by `mpsched_core::vectors::run_rust` (its
//! [`FrameSwitch`](mpsched_core::frame::FrameSwitch): splits, confluence feedback, markers);
//! any other program by [`run_program`], a frame-level runner over the registry's Rust twin:
//! - each frame is parsed with [`parse_frame`]; a frame that is not IPv4 goes to the node's
//!   stack (`counter.not_ipv4`), a malformed one is counted (`counter.malformed`) and dropped,
//!   as `FrameSwitch` does and as the eBPF and P4 programs do;
//! - the program's [`Program::ingress`] runs at the step's `time_ns`; a consumed packet
//!   addressed to the node goes to its stack;
//! - an egress step runs [`Program::on_dequeue`] with the step's queue, the depth the frame
//!   found (`enq_qdepth_pkts`) and its sojourn (`sojourn_ns`); for a program that marks there
//!   ([`SwitchProgram::marks_at_egress`]) the ECN of the frame it transmits is observed;
//! - the registers are the program's counters, each as `counter.<name>`
//!   (`counter.letflow.new_flowlets`, `counter.no_route`), beside `counter.not_ipv4`,
//!   `counter.malformed` and per-port `port<p>.rx_pkts` / `.tx_pkts`;
//! - the set's `rs_raw_draws`, when given, replace the program's random draws
//!   ([`SwitchProgram::build_with_rng`]), as the eBPF and P4 test-draws maps replace theirs.
//!
//! [`standard_sets`] is every set kept under `tests/vectors/`: the multipath switch's
//! (`mpsched_core::vectors::standard_sets`) and each program's.

use crate::letflow::{DEFAULT_GAP_PS, LETFLOW};
use crate::params::Params;
use crate::{switch_program, switch_program_names, BuildInput, SwitchProgram};
use mpsched_core::frame::MAX_PORTS;
use mpsched_core::packet::{Ipv4, PacketMeta, PortId};
use mpsched_core::program::{Ctx, DropReason, EgressVerdict, FrameVerdict, Program, QueueMeta, Verdict};
use mpsched_core::rng::RawDraws;
use mpsched_core::switch::SwitchConfig;
use mpsched_core::table::{Route, ECMP_GROUP};
use mpsched_core::vectors::{
    drop_reason_name, from_hex, record_step, set_expectations, to_hex, ConnObserved, Delivery, EmitObserved, Hook,
    Observed, ProbeObserved, RateFeedbackObserved, Step, StepResult, VectorSet, MULTIPATH, OWN_MAC_NODE, PEER_MAC_NODE,
};
use mpsched_core::wire::{
    emit_tcp_frame, emit_udp_frame, mac_for, parse_frame, parse_frame_with_headers, ParseError, TcpFields,
};
use std::collections::BTreeMap;

/// A replay's initial registers and each step's result.
pub type Replay = (BTreeMap<String, u64>, Vec<StepResult>);

/// The registered program a set runs, with its parameters checked against its declaration.
pub fn program_of(set: &VectorSet) -> Result<(&'static dyn SwitchProgram, Params), String> {
    let program = switch_program(&set.program).ok_or_else(|| {
        format!(
            "{}: no program `{}` (registered: {})",
            set.name,
            set.program,
            switch_program_names()
        )
    })?;
    let mut params = Params::defaults(program.params());
    for (k, v) in &set.params {
        params
            .set(program.params(), k, *v)
            .map_err(|e| format!("{}: params.{k}: {e}", set.name))?;
    }
    Ok((program, params))
}

/// Replay a set through its program's Rust twin, whichever program it names.
pub fn run_rust(set: &VectorSet) -> Result<Replay, String> {
    if set.program == MULTIPATH {
        mpsched_core::vectors::run_rust(set)
    } else {
        run_program(set)
    }
}

/// Fill a set's expectations (and initial registers) from its program's Rust twin.
pub fn fill_expectations(set: &mut VectorSet) -> Result<(), String> {
    let (initial, results) = run_rust(set)?;
    set_expectations(set, initial, results);
    Ok(())
}

/// The frame-level runner over a registered program (any but `multipath`, whose frame switch
/// also has markers and feedback: `mpsched_core::vectors::run_rust`).
pub fn run_program(set: &VectorSet) -> Result<Replay, String> {
    let (program, params) = program_of(set)?;
    if set.n_ports > MAX_PORTS {
        return Err(format!(
            "{}: {} ports; a node has at most {MAX_PORTS}",
            set.name, set.n_ports
        ));
    }
    let input = BuildInput {
        node: &set.name,
        tables: &set.config,
        params: &params,
        seed: 0,
    };
    let built = if set.rs_raw_draws.is_empty() {
        program.build(&input)
    } else {
        program.build_with_rng(&input, Box::new(RawDraws::new(set.rs_raw_draws.clone())))
    };
    let mut node = FrameNode {
        program: built.map_err(|e| format!("{}: {e}", set.name))?,
        own_ip: set.config.own_ip,
        feedback_port: set.config.feedback_port,
        not_ipv4: 0,
        malformed: 0,
        rx_pkts: vec![0; set.n_ports],
        tx_pkts: vec![0; set.n_ports],
        timers: Vec::new(),
        egress_ecn: program.marks_at_egress(),
    };
    node.start();
    let initial = node.snapshot();
    let mut prev = initial.clone();
    let mut out = Vec::new();
    for (i, st) in set.steps.iter().enumerate() {
        let at = format!("{} step {i} ({})", set.name, st.note);
        let frame = from_hex(&st.frame).map_err(|e| format!("{at}: {e}"))?;
        for w in &st.writes {
            node.program
                .write_register(&w.register, w.index, w.value)
                .map_err(|e| format!("{at}: writing {}[{}]: {e}", w.register, w.index))?;
        }
        let observed = match st.hook {
            Hook::Ingress => node.ingress(&frame, st.port, st.time_ns, st.enq_qdepth_pkts),
            Hook::Egress => node.egress(&frame, st),
            Hook::Timer => node.timer(st.time_ns),
        };
        record_step(&mut out, &mut prev, observed, node.snapshot());
    }
    Ok((initial, out))
}

/// One node running a program on whole frames.
struct FrameNode {
    program: Box<dyn Program>,
    own_ip: Ipv4,
    feedback_port: u16,
    not_ipv4: u64,
    malformed: u64,
    rx_pkts: Vec<u64>,
    tx_pkts: Vec<u64>,
    /// Tokens of the timers the program has asked for: a `timer` step fires them all.
    timers: Vec<u64>,
    /// Whether an egress step observes the transmitted frame's ECN.
    egress_ecn: bool,
}

fn empty_observed(action: &str) -> Observed {
    Observed {
        action: action.into(),
        port: None,
        drop_reason: None,
        path: None,
        ttl: None,
        ecn: None,
        dscp: None,
        emit: None,
        probes: Vec::new(),
        conn: None,
        rate_feedback: None,
        frame: None,
    }
}

impl FrameNode {
    /// The program's `start`, at time 0: the timers it arms are what `timer` steps fire.
    fn start(&mut self) {
        let mut ctx = Ctx::new();
        ctx.reset(0);
        self.program.start(&mut ctx);
        self.effects(&ctx, &mut empty_observed(""));
    }

    /// Fire every timer the program asked for, at `time_ns`.
    fn timer(&mut self, time_ns: u64) -> Observed {
        let mut obs = empty_observed("timer");
        for token in std::mem::take(&mut self.timers) {
            let mut ctx = Ctx::new();
            ctx.reset(time_ns.saturating_mul(1000));
            self.program.on_timer(token, &mut ctx);
            self.effects(&ctx, &mut obs);
        }
        obs
    }

    /// Timers asked for and packets generated by a call: counted, and probes observed.
    fn effects(&mut self, ctx: &Ctx, obs: &mut Observed) {
        self.timers.extend(ctx.timers().iter().map(|t| t.token));
        obs.emit = ctx
            .emitted()
            .iter()
            .find(|e| e.meta.feedback().is_some())
            .map(|e| EmitObserved {
                port: e.port,
                dst_ip: e.meta.dst_ip,
                group: e.meta.feedback().map_or(0, |f| f.group),
                path: e.meta.feedback().map_or(0, |f| f.path),
            });
        obs.rate_feedback = ctx.emitted().iter().find_map(|e| {
            let f = e.headers.feedback()?;
            Some(RateFeedbackObserved {
                port: e.port,
                dst_ip: e.meta.dst_ip,
                dst_port: e.meta.dst_port,
                queue: f.queue,
                qlen_pkts: f.qlen_pkts,
                measured_kbps: f.measured_kbps,
                target_kbps: f.target_kbps,
            })
        });
        for e in ctx.emitted() {
            self.count_tx(e.port);
            if let Some(p) = e.headers.probe() {
                obs.probes.push(ProbeObserved {
                    port: e.port,
                    tor: p.tor,
                    hops: p.hops,
                    util: p.util,
                });
            }
        }
        obs.probes.sort_by_key(|p| p.port);
    }

    /// Step `st`'s frame leaving by its port (the program's egress stage), from the step's
    /// queue at its time, having found `enq_qdepth_pkts` packets and waited `sojourn_ns`; its
    /// length is the frame's, whatever it carries.
    fn egress(&mut self, frame: &[u8], st: &Step) -> Observed {
        let parsed = parse_frame(frame, self.feedback_port);
        let ipv4 = parsed.is_ok();
        let mut meta = parsed.unwrap_or_else(|_| PacketMeta::udp(0, 0, 0, 0, 0));
        meta.wire_len_bytes = frame.len() as u32;
        let mut ctx = Ctx::new();
        ctx.reset(st.time_ns.saturating_mul(1000));
        let sojourn_ps = st.sojourn_ns.saturating_mul(1000);
        let q = QueueMeta {
            enq_timestamp_ps: ctx.now_ps().saturating_sub(sojourn_ps),
            queue: st.queue,
            enq_qdepth_pkts: st.enq_qdepth_pkts,
            deq_timedelta_ps: sojourn_ps,
            ..QueueMeta::default()
        };
        let mut obs = match self.program.on_dequeue(&mut meta, st.port, q, &mut ctx) {
            EgressVerdict::Transmit => empty_observed("transmit"),
            EgressVerdict::Drop => empty_observed("drop"),
        };
        if self.egress_ecn && ipv4 {
            obs.ecn = Some(meta.ecn);
        }
        self.effects(&ctx, &mut obs);
        obs
    }

    /// A frame arriving on `port` at `time_ns`; a program with an enqueue stage (`p4qcn`'s
    /// sample, the baselines' tail drop) then meets it as joining its port's queue with
    /// `enq_qdepth_pkts` packets ahead of it.
    fn ingress(&mut self, frame: &[u8], port: PortId, time_ns: u64, enq_qdepth_pkts: u32) -> Observed {
        let mut obs = empty_observed("");
        if let Some(c) = self.rx_pkts.get_mut(usize::from(port)) {
            *c += 1;
        }
        let (mut meta, option, headers) = match parse_frame_with_headers(frame, self.feedback_port) {
            Ok(m) => m,
            Err(ParseError::NotIpv4) => {
                self.not_ipv4 += 1;
                obs.action = "to_stack".into();
                return obs;
            }
            Err(_) => {
                self.malformed += 1;
                obs.action = "drop".into();
                obs.drop_reason = Some("malformed".into());
                return obs;
            }
        };
        meta.ingress_port = port;
        let arrived_dscp = meta.dscp;
        let mut ctx = Ctx::new();
        ctx.reset(time_ns.saturating_mul(1000));
        if self.program.handles_frames() {
            return self.frame_ingress(&meta, frame, &mut ctx, obs);
        }
        if self.program.uses_headers() || !headers.is_empty() {
            ctx.set_headers(headers);
        }
        if self.program.parses_mptcp() {
            ctx.set_mptcp_option(option);
        }
        let mut verdict = self.program.ingress(&mut meta, &mut ctx);
        if let (Verdict::Forward(p), true) = (verdict, self.program.uses_enqueue()) {
            let q = QueueMeta {
                enq_timestamp_ps: ctx.now_ps(),
                enq_qdepth_pkts,
                ..QueueMeta::default()
            };
            if self.program.on_enqueue(&mut meta, p, q, &mut ctx) == EgressVerdict::Drop {
                verdict = Verdict::Drop(DropReason::QueueFull);
            }
        }
        self.effects(&ctx, &mut obs);
        match verdict {
            Verdict::Forward(p) => {
                self.count_tx(p);
                obs.action = "redirect".into();
                obs.port = Some(p);
                obs.ttl = Some(meta.ttl);
                obs.ecn = Some(meta.ecn);
                obs.dscp = (meta.dscp != arrived_dscp).then_some(meta.dscp);
                obs.conn = ctx.headers().routing().map(|r| ConnObserved {
                    conn_id: r.conn_id,
                    subflow: r.path,
                });
            }
            Verdict::Drop(r) => {
                obs.action = "drop".into();
                obs.drop_reason = Some(drop_reason_name(r).into());
            }
            Verdict::Consume if meta.dst_ip == self.own_ip => obs.action = "to_stack".into(),
            Verdict::Consume => obs.action = "consume".into(),
        }
        obs
    }

    /// A frame through a program that handles whole frames ([`Program::handles_frames`]): a
    /// frame that is not plain Ethernet / IPv4 (custom-header shims) is the node's stack's, as
    /// on the eBPF side; a forwarded frame is observed whole, its Ethernet addresses the
    /// port's, as the eBPF program writes them.
    fn frame_ingress(&mut self, meta: &PacketMeta, frame: &[u8], ctx: &mut Ctx, mut obs: Observed) -> Observed {
        if frame[12..14] != [0x08, 0x00] {
            self.not_ipv4 += 1;
            obs.action = "to_stack".into();
            return obs;
        }
        let mut buf = frame.to_vec();
        let verdict = self
            .program
            .ingress_frame(meta, &mut buf, ctx)
            .unwrap_or(FrameVerdict::Drop("not_a_frame_program"));
        self.effects(ctx, &mut obs);
        match verdict {
            FrameVerdict::Forward(p) => {
                self.count_tx(p);
                if buf.len() >= 14 {
                    buf[0..6].copy_from_slice(&mac_for(PEER_MAC_NODE, p));
                    buf[6..12].copy_from_slice(&mac_for(OWN_MAC_NODE, p));
                }
                obs.action = "redirect".into();
                obs.port = Some(p);
                if let Ok(m) = parse_frame(&buf, self.feedback_port) {
                    obs.ttl = Some(m.ttl);
                    obs.ecn = Some(m.ecn);
                }
                obs.frame = Some(to_hex(&buf));
            }
            FrameVerdict::Drop(r) => {
                obs.action = "drop".into();
                obs.drop_reason = Some(r.into());
            }
            FrameVerdict::Consume => obs.action = "consume".into(),
            FrameVerdict::ToStack => obs.action = "to_stack".into(),
        }
        obs
    }

    fn count_tx(&mut self, port: PortId) {
        if let Some(c) = self.tx_pkts.get_mut(usize::from(port)) {
            *c += 1;
        }
    }

    fn snapshot(&self) -> BTreeMap<String, u64> {
        // A program built on the multipath switch (`vq-wrr`) reports its forwarding counters
        // already under `counter.` (`counter.no_route`): kept as they are.
        let mut out: BTreeMap<String, u64> = self
            .program
            .counters()
            .into_iter()
            .map(|(k, v)| match k.starts_with("counter.") {
                true => (k, v),
                false => (format!("counter.{k}"), v),
            })
            .collect();
        out.extend(self.program.vector_registers());
        out.insert("counter.not_ipv4".into(), self.not_ipv4);
        out.insert("counter.malformed".into(), self.malformed);
        for (p, (rx, tx)) in self.rx_pkts.iter().zip(&self.tx_pkts).enumerate() {
            out.insert(format!("port{p}.rx_pkts"), *rx);
            out.insert(format!("port{p}.tx_pkts"), *tx);
        }
        out
    }
}

/// Every set kept under `tests/vectors/`, without expectations: the multipath switch's, then
/// each other program's.
pub fn standard_sets() -> Vec<VectorSet> {
    let mut sets = mpsched_core::vectors::standard_sets();
    sets.extend(letflow_sets());
    sets.extend(crate::hula::vector_sets::sets());
    sets.extend(crate::pmqecn::vector_sets::sets());
    sets.extend(crate::pmqecn::baseline_vectors::sets());
    sets.extend(crate::atsss::vector_sets::sets());
    sets
}

/// The rate feedback (PMQECN's, P4QCN's) `frame` is, leaving by `port`: UDP from the node's
/// address and [`FEEDBACK_PORT`](crate::pmqecn::cp::FEEDBACK_PORT) with an `"MPRF"` payload
/// (`mpsched_core::rate_wire`), as the eBPF and BMv2 runners read what leaves a switch.
pub fn rate_feedback_of(set: &VectorSet, frame: &[u8], port: PortId) -> Option<RateFeedbackObserved> {
    let m = parse_frame(frame, set.config.feedback_port).ok()?;
    if m.src_ip != set.config.own_ip || m.src_port != crate::pmqecn::cp::FEEDBACK_PORT || m.proto != 17 {
        return None;
    }
    let ihl = usize::from(frame.get(14)? & 0x0f) * 4;
    let Ok(mpsched_core::rate_wire::RateMessage::Feedback(f)) =
        mpsched_core::rate_wire::RateMessage::parse(frame.get(14 + ihl + 8..)?)
    else {
        return None;
    };
    Some(RateFeedbackObserved {
        port,
        dst_ip: m.dst_ip,
        dst_port: m.dst_port,
        queue: f.queue,
        qlen_pkts: f.qlen_pkts,
        measured_kbps: f.measured_kbps,
        target_kbps: f.target_kbps,
    })
}

// ---- LetFlow's sets ----------------------------------------------------------------------

const LF_SWITCH: Ipv4 = 0x0aff_0001;
const LF_SRC: Ipv4 = 0x0a00_0001;
const LF_DST: Ipv4 = 0x0a00_0003;
const LF_NO_ROUTE: Ipv4 = 0x0b00_0001;
const LF_SEED: u32 = 0x5eed_0001;
const US: u64 = 1000;

/// A LetFlow switch: hosts behind port 0, `LF_DST` behind the equal-cost group {1, 2, 3, 4}.
fn letflow_switch() -> SwitchConfig {
    let mut cfg = SwitchConfig::forwarding(
        LF_SWITCH,
        vec![
            Route {
                prefix: LF_SRC,
                len: 32,
                port: 0,
            },
            Route {
                prefix: LF_DST,
                len: 32,
                port: ECMP_GROUP,
            },
        ],
    );
    cfg.ecmp_groups = vec![vec![1, 2, 3, 4]];
    cfg.hash_seed = LF_SEED;
    cfg
}

/// A UDP frame of flow `sport` -> 5201 from `src` to `dst`, arriving on port `port`.
fn lf_udp(src: Ipv4, dst: Ipv4, sport: u16, port: PortId) -> Vec<u8> {
    let m = PacketMeta::udp(src, dst, sport, 5201, 0);
    let mut out = Vec::new();
    emit_udp_frame(
        &m,
        mac_for(PEER_MAC_NODE, port),
        mac_for(OWN_MAC_NODE, port),
        1,
        &[0u8; 64],
        &mut out,
    );
    out
}

fn at(note: impl Into<String>, time_ns: u64, frame: &[u8]) -> Step {
    Step {
        note: note.into(),
        hook: Hook::Ingress,
        port: 0,
        time_ns,
        frame: to_hex(frame),
        delivery: Delivery::TestRun,
        queue: 0,
        enq_qdepth_pkts: 0,
        sojourn_ns: 0,
        writes: Vec::new(),
        expect: None,
    }
}

fn letflow_set(name: &str, description: &str, table_entries: u64, draws: Vec<u32>, steps: Vec<Step>) -> VectorSet {
    VectorSet {
        name: name.into(),
        description: description.into(),
        program: LETFLOW.name().into(),
        params: BTreeMap::from([
            ("flowlet_gap".to_string(), DEFAULT_GAP_PS),
            ("table_entries".to_string(), table_entries),
        ]),
        config: letflow_switch(),
        n_ports: 5,
        markers: Vec::new(),
        rs_raw_draws: draws,
        initial_registers: BTreeMap::new(),
        steps,
    }
}

/// The flowlet table slot of UDP flow `sport` -> 5201 (LF_SRC -> LF_DST) in a table of
/// `entries` slots.
fn slot_of(sport: u16, entries: u64) -> u64 {
    let m = PacketMeta::udp(LF_SRC, LF_DST, sport, 5201, 0);
    u64::from(mpsched_core::sched::Ecmp::seeded_hash(&m, LF_SEED)) & (entries - 1)
}

/// LetFlow's sets: the gap's boundary, a collision, a full table, and frames that never reach
/// the table. Times are whole microseconds (BMv2's clock).
pub fn letflow_sets() -> Vec<VectorSet> {
    vec![expiry_set(), collision_set(), table_full_set()]
}

/// The fixed draws: (draw * 4) >> 32 picks member 0, 3, 2, 1: ports 1, 4, 3, 2.
fn draws() -> Vec<u32> {
    vec![0, u32::MAX, 1 << 31, 1 << 30]
}

/// The flowlet gap of the sets, ns.
const GAP_NS: u64 = DEFAULT_GAP_PS / 1000;

/// A flowlet continues just under the gap and starts anew exactly at it; then frames that never
/// reach the table.
fn expiry_set() -> VectorSet {
    let gap = GAP_NS;
    let a = lf_udp(LF_SRC, LF_DST, 40_000, 0);
    let b = lf_udp(LF_SRC, LF_DST, 40_001, 0);
    let mut steps = vec![
        at("flow A: a new flowlet (draw 0: port 1)", 0, &a),
        at(
            "flow A 99 us later: just under the gap, the flowlet continues",
            99 * US,
            &a,
        ),
        at(
            "flow B: a new flowlet in its own slot (draw 2^32-1: port 4)",
            150 * US,
            &b,
        ),
        at(
            "flow A 99 us after its last packet: the gap counts from the last packet",
            198 * US,
            &a,
        ),
        at(
            "flow A exactly the gap after its last packet: a new flowlet (draw 2^31: port 3)",
            198 * US + gap,
            &a,
        ),
        at("flow A 1 us later: continues on its new port", 199 * US + gap, &a),
        at(
            "flow B long idle: a new flowlet (draw 2^30: port 2)",
            150 * US + 10 * gap,
            &b,
        ),
    ];
    let mut tcp = Vec::new();
    let mut m = PacketMeta::udp(LF_SRC, LF_DST, 40_000, 5201, 0);
    m.proto = mpsched_core::packet::proto::TCP;
    emit_tcp_frame(
        &m,
        mac_for(PEER_MAC_NODE, 0),
        mac_for(OWN_MAC_NODE, 0),
        1,
        &TcpFields::default(),
        0,
        &mut tcp,
    );
    steps.push(at(
        "TCP with flow A's ports: another flow, a new flowlet (draws wrap: port 1)",
        200 * US + 10 * gap,
        &tcp,
    ));
    let t = 300 * US + 10 * gap;
    let mut arp = a.clone();
    arp[12..14].copy_from_slice(&[0x08, 0x06]);
    steps.push(at("ARP: to the node's stack", t, &arp));
    let mut ttl1 = a.clone();
    ttl1[22] = 1;
    fix_checksum(&mut ttl1);
    steps.push(at("TTL 1: dropped, the table untouched", t, &ttl1));
    steps.push(at("no route: dropped", t, &lf_udp(LF_SRC, LF_NO_ROUTE, 40_000, 0)));
    steps.push(at(
        "to the switch itself: its stack",
        t,
        &lf_udp(LF_SRC, LF_SWITCH, 40_000, 0),
    ));
    steps.push(Step {
        port: 1,
        ..at(
            "from port 1 to a single-port route: forwarded without a flowlet",
            t,
            &lf_udp(LF_DST, LF_SRC, 5201, 1),
        )
    });
    let mut bad = a.clone();
    bad[14] = 0x44;
    steps.push(at("IHL 4: malformed, dropped", t, &bad));
    letflow_set(
        "letflow-expiry",
        "LetFlow (gap 100 us): a flowlet continues just under the gap and starts anew exactly at it, on the fixed draws; then frames that never reach the table (ARP, TTL, no route, local, single-port route, malformed)",
        4096,
        draws(),
        steps,
    )
}

/// Two flows on one slot of a 64-slot table.
fn collision_set() -> VectorSet {
    let gap = GAP_NS;
    let entries = 64;
    let first = 40_000u16;
    let second = (first + 1..)
        .find(|&s| slot_of(s, entries) == slot_of(first, entries))
        .unwrap();
    let c1 = lf_udp(LF_SRC, LF_DST, first, 0);
    let c2 = lf_udp(LF_SRC, LF_DST, second, 0);
    letflow_set(
        "letflow-collision",
        "LetFlow: two flows on one slot; while the first's flowlet is active the second is routed by the ECMP hash and leaves the slot; once it is idle for the gap the second takes the slot",
        entries,
        draws(),
        vec![
            at(format!("flow {first}: a new flowlet (port 1)"), 0, &c1),
            at(format!("flow {second}, same slot: collision, routed by the hash"), 10 * US, &c2),
            at(format!("flow {first}: its flowlet is intact"), 20 * US, &c1),
            at(format!("flow {second} again: still a collision"), 30 * US, &c2),
            at(
                format!("flow {second} once flow {first} is idle for the gap: a new flowlet takes the slot (port 4)"),
                20 * US + gap,
                &c2,
            ),
            at(
                format!("flow {first} now collides with flow {second}'s flowlet"),
                21 * US + gap,
                &c1,
            ),
        ],
    )
}

/// A 4-slot table with a flowlet active in every slot; a fifth flow finds its slot taken.
fn table_full_set() -> VectorSet {
    let gap = GAP_NS;
    let entries = 4;
    let mut seen = [false; 4];
    let mut fillers = Vec::new();
    for s in 40_000u16.. {
        let k = slot_of(s, entries) as usize;
        if !seen[k] {
            seen[k] = true;
            fillers.push(s);
        }
        if fillers.len() == 4 {
            break;
        }
    }
    let extra = (40_000u16..).find(|s| !fillers.contains(s)).unwrap();
    let mut steps: Vec<Step> = fillers
        .iter()
        .enumerate()
        .map(|(i, &s)| {
            at(
                format!("flow {s}: a new flowlet in slot {}", slot_of(s, entries)),
                i as u64 * US,
                &lf_udp(LF_SRC, LF_DST, s, 0),
            )
        })
        .collect();
    steps.push(at(
        format!("flow {extra}: every slot active, routed by the hash"),
        10 * US,
        &lf_udp(LF_SRC, LF_DST, extra, 0),
    ));
    steps.push(at(
        format!("flow {}: continues", fillers[0]),
        20 * US,
        &lf_udp(LF_SRC, LF_DST, fillers[0], 0),
    ));
    steps.push(at(
        format!("flow {extra} after every flowlet has been idle for the gap: a new flowlet"),
        20 * US + gap,
        &lf_udp(LF_SRC, LF_DST, extra, 0),
    ));
    letflow_set(
        "letflow-table-full",
        "LetFlow with a 4-slot table: every slot holds an active flowlet, so a new flow falls back to the ECMP hash until a slot goes idle",
        entries,
        draws(),
        steps,
    )
}

/// Recompute the IPv4 header checksum of a frame a vector edited.
pub(crate) fn fix_checksum(frame: &mut [u8]) {
    let ihl = usize::from(frame[14] & 0x0f) * 4;
    frame[24..26].copy_from_slice(&[0, 0]);
    let c = mpsched_core::wire::internet_checksum(&frame[14..14 + ihl], 0);
    frame[24..26].copy_from_slice(&c.to_be_bytes());
}

#[cfg(test)]
mod tests {
    use super::*;
    use mpsched_core::packet::Ecn;
    use mpsched_core::vectors::compare;

    fn filled(name: &str) -> VectorSet {
        let mut s = letflow_sets().into_iter().find(|s| s.name == name).unwrap();
        fill_expectations(&mut s).unwrap();
        s
    }

    fn ports(s: &VectorSet) -> Vec<Option<PortId>> {
        s.steps
            .iter()
            .map(|st| st.expect.as_ref().unwrap().observed.port)
            .collect()
    }

    fn last(s: &VectorSet) -> BTreeMap<String, u64> {
        run_rust(s).unwrap().1.last().unwrap().registers.clone()
    }

    #[test]
    fn expiry_continues_under_the_gap_and_draws_anew_at_it() {
        let s = filled("letflow-expiry");
        assert_eq!(
            ports(&s)[..8],
            [Some(1), Some(1), Some(4), Some(1), Some(3), Some(3), Some(2), Some(1)]
        );
        let r = last(&s);
        assert_eq!(r["counter.letflow.new_flowlets"], 5);
        assert_eq!(r["counter.letflow.continued"], 3);
        assert_eq!(r["counter.letflow.collisions"], 0);
        assert_eq!(r["counter.not_ipv4"], 1);
        assert_eq!(r["counter.ttl_expired"], 1);
        assert_eq!(r["counter.no_route"], 1);
        assert_eq!(r["counter.local"], 1);
        assert_eq!(r["counter.malformed"], 1);
        let actions: Vec<_> = s.steps[8..]
            .iter()
            .map(|st| st.expect.as_ref().unwrap().observed.action.as_str())
            .collect();
        assert_eq!(actions, ["to_stack", "drop", "drop", "to_stack", "redirect", "drop"]);
        assert!(compare(&s, &s.initial_registers, &run_rust(&s).unwrap().1).is_empty());
    }

    #[test]
    fn a_colliding_flow_takes_the_hash_port_and_leaves_the_slot() {
        let s = filled("letflow-collision");
        let r = last(&s);
        assert_eq!(r["counter.letflow.collisions"], 3);
        assert_eq!(r["counter.letflow.new_flowlets"], 2);
        assert_eq!(r["counter.letflow.continued"], 1);
        let p = ports(&s);
        assert_eq!((p[0], p[2], p[4]), (Some(1), Some(1), Some(4)));
        // The colliding packets leave by group[hash % 4].
        let sport = s.steps[1].note.split_whitespace().nth(1).unwrap().trim_end_matches(',');
        let m = PacketMeta::udp(LF_SRC, LF_DST, sport.parse().unwrap(), 5201, 0);
        let by_hash = [1, 2, 3, 4][mpsched_core::sched::Ecmp::seeded_hash(&m, LF_SEED) as usize % 4];
        assert_eq!((p[1], p[3]), (Some(by_hash), Some(by_hash)));
    }

    #[test]
    fn a_full_table_sends_new_flows_by_the_hash() {
        let s = filled("letflow-table-full");
        let r = last(&s);
        assert_eq!(r["counter.letflow.new_flowlets"], 5);
        assert_eq!(r["counter.letflow.collisions"], 1);
        assert_eq!(r["counter.letflow.continued"], 1);
    }

    #[test]
    fn a_set_of_an_unknown_program_or_parameter_is_refused() {
        let mut s = letflow_sets().remove(0);
        s.params.insert("table_entries".into(), 3);
        assert!(run_rust(&s).unwrap_err().contains("params.table_entries"));
        s.program = "nope".into();
        assert!(run_rust(&s).unwrap_err().contains("no program `nope`"));
    }

    #[test]
    fn multipath_sets_go_to_the_core_runner() {
        let mut s = mpsched_core::vectors::standard_sets().remove(0);
        fill_expectations(&mut s).unwrap();
        let (init, res) = run_rust(&s).unwrap();
        assert!(compare(&s, &init, &res).is_empty());
        assert!(res.iter().any(|r| r.observed.path.is_some()));
    }

    #[test]
    fn letflow_frames_are_ecn_and_ttl_checked() {
        let s = filled("letflow-expiry");
        let o = &s.steps[0].expect.as_ref().unwrap().observed;
        assert_eq!((o.ttl, o.ecn), (Some(63), Some(Ecn::NotEct)));
    }
}
