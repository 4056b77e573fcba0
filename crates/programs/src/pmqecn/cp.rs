//! PMQECN's congestion point (paper Algorithm 1), registered as `pmqecn`: the virtual-queue WRR
//! of [`super::vqwrr`], per-class arrival counters for the control plane, and above a class's
//! threshold `K` a feedback packet to the packet's source carrying the class's measured and
//! target rates (`crates/programs/src/pmqecn/README.md`, "Congestion point").
//!
//! The feedback is a UDP datagram from the switch's address to the data packet's source
//! address and port, from port [`FEEDBACK_PORT`], ECN = CE, with a [`FeedbackHeader`] (header
//! kind 4). It leaves in the top priority level so that it never waits behind the congestion it
//! reports, and the program does not count it in any virtual queue. At most one per class and
//! port per `feedback_gap`. The data packet itself goes on unmarked.
//!
//! Registers (indices: class `v`, or `port x 8 + v`): `vq_threshold` (`K`, packets),
//! `vq_rate_kbps` and `vq_target_kbps` (`lambda`, `lambda*`, what feedback carries: written by
//! the control plane; 0 until it does), `vq_arrival_bytes` and `vq_arrival_pkts` (what each
//! class offered each port, the control plane's arrival rates), beside `vq-wrr`'s `vq_weight`
//! and `vq_len`. The control plane is [`super::control::PmqecnControl`], every
//! `control_period`.

use super::vqwrr::{VqWrr, VqWrrConfig, PARAMS as VQ_PARAMS, VIRTUAL_QUEUES};
use crate::params::{Param, ParamKind, Params};
use crate::{BuildInput, SwitchProgram, TablesNeed};
use crate::{ControlInput, ControlLoop};
use mpsched_core::control::{ControlError, ControlListing, ProgramControl, RegisterInfo};
use mpsched_core::headers::{FeedbackHeader, Header, HeaderStack};
use mpsched_core::packet::{Ecn, Ipv4, PacketMeta, PortId};
use mpsched_core::program::{Ctx, EgressVerdict, Emit, Program, QueueMeta, Verdict};
use mpsched_core::sched::ConfigError;

/// UDP source port of feedback packets.
pub const FEEDBACK_PORT: u16 = 50011;
/// DSCP of feedback packets: CS7, class 7.
pub const FEEDBACK_DSCP: u8 = 56;
/// Wire bytes of a feedback packet before its header (a minimum Ethernet frame).
pub const FEEDBACK_WIRE_BYTES: u32 = 64;

/// The registry entry.
pub static PMQECN: PmqecnProgram = PmqecnProgram;

const PARAMS: [Param; 10] = [
    VQ_PARAMS[0],
    VQ_PARAMS[1],
    VQ_PARAMS[2],
    Param {
        name: "threshold",
        kind: ParamKind::Count,
        default: 11,
        min: 1,
        max: 1 << 20,
        power_of_two: false,
        multiple_of: 1,
        doc:
            "packets of a class waiting above which it is sent feedback, until the control plane writes `vq_threshold`",
    },
    Param {
        name: "feedback_gap",
        kind: ParamKind::Time,
        default: 100_000_000,
        min: 0,
        max: 1_000_000_000_000,
        power_of_two: false,
        multiple_of: 1_000_000,
        doc: "at most one feedback per class and port per this (whole microseconds, as BMv2's clock counts; 0: one per packet above the threshold, as the paper)",
    },
    Param {
        name: "control_period",
        kind: ParamKind::Time,
        default: 100_000_000_000,
        min: 0,
        max: 60_000_000_000_000,
        power_of_two: false,
        multiple_of: 1_000_000,
        doc: "how often the control plane measures the classes and solves the model (whole microseconds; 0: no control plane, the registers keep what was written)",
    },
    Param {
        name: "class_a",
        kind: ParamKind::Count,
        default: 2,
        min: 0,
        max: 7,
        power_of_two: false,
        multiple_of: 1,
        doc: "the DSCP class (dscp >> 3) of category A, delay and bandwidth sensitive",
    },
    Param {
        name: "class_b",
        kind: ParamKind::Count,
        default: 1,
        min: 0,
        max: 7,
        power_of_two: false,
        multiple_of: 1,
        doc: "the DSCP class of category B, delay and jitter sensitive (every other class is C: delay and loss)",
    },
    Param {
        name: "weight_scale",
        kind: ParamKind::Count,
        default: 9,
        min: 1,
        max: 1 << 16,
        power_of_two: false,
        multiple_of: 1,
        doc: "packets per level the weights share: a class's weight is max(1, round(omega x weight_scale))",
    },
    Param {
        name: "objective",
        kind: ParamKind::Choice(&OBJECTIVES),
        default: 0,
        min: 0,
        max: OBJECTIVES.len() as u64 - 1,
        power_of_two: false,
        multiple_of: 1,
        doc: "how the model sums its terms: `paper` (its units), `literal` (its text's C_rest = nC - sum L_s, C in Mbit/s) or `normalised` (dimensionless; starves delay-sensitive classes)",
    },
];

/// The names of the `objective` parameter's choices, in the order of its values.
pub const OBJECTIVES: [&str; 3] = ["paper", "literal", "normalised"];

/// PMQECN's congestion point as the registry knows it.
pub struct PmqecnProgram;

impl SwitchProgram for PmqecnProgram {
    fn name(&self) -> &'static str {
        "pmqecn"
    }

    fn summary(&self) -> &'static str {
        "PMQECN (PeerJ CS 2024): virtual-queue WRR, per-class thresholds and rate feedback to the sources"
    }

    fn params(&self) -> &'static [Param] {
        &PARAMS
    }

    fn tables_need(&self) -> TablesNeed {
        TablesNeed::ScenarioRouting
    }

    fn runs_splits(&self) -> bool {
        true
    }

    fn classifies(&self) -> bool {
        true
    }

    fn build(&self, input: &BuildInput<'_>) -> Result<Box<dyn Program>, ConfigError> {
        let forwarding = crate::multipath::MULTIPATH.build(input)?;
        let p = input.params;
        let mut vq = VqWrr::new(VqWrrConfig::from_params(p), forwarding);
        vq.set_port_queues(&input.tables.port_queues);
        Ok(Box::new(Pmqecn::new(
            input.tables.own_ip,
            vq,
            p.get("threshold") as u32,
            p.get("feedback_gap"),
        )))
    }

    fn check_port_queues(
        &self,
        params: &Params,
        queues: u8,
        queue_pkts: u32,
        strict_priority: bool,
    ) -> Result<(), (&'static str, String)> {
        super::vqwrr::check_port_queues(params, queues, queue_pkts, strict_priority)
    }

    fn check_params(&self, params: &Params) -> Result<(), (&'static str, String)> {
        if params.get("class_a") == params.get("class_b") {
            return Err(("class_b", "categories A and B need different classes".into()));
        }
        Ok(())
    }

    fn control_loop(&self, input: &ControlInput<'_>) -> Option<Box<dyn ControlLoop>> {
        let p = input.params;
        let period_ps = p.get("control_period");
        (period_ps > 0).then(|| {
            Box::new(super::control::PmqecnControl::new(super::control::ControlConfig {
                period_ps,
                capacity_pkts: p.get("vq_capacity") as u32,
                class_a: p.get("class_a") as usize,
                class_b: p.get("class_b") as usize,
                weight_scale: p.get("weight_scale") as u32,
                port_rates_bps: input.port_rates_bps.to_vec(),
                seed: input.seed,
                objective: super::control::ObjectiveKind::from_param(p.get("objective")),
            })) as Box<dyn ControlLoop>
        })
    }

    fn ebpf_object(&self) -> Option<&'static str> {
        Some("pmqecn")
    }

    fn p4_program(&self) -> Option<&'static str> {
        Some("pmqecn")
    }
}

/// Counters, named `pmqecn.*` in results.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PmqecnCounters {
    /// Feedback packets sent.
    pub feedback: u64,
    /// Packets above their class's threshold whose feedback the gap held back.
    pub feedback_held: u64,
    /// Feedback that found no route back to the source.
    pub feedback_no_route: u64,
}

/// The congestion point.
pub struct Pmqecn {
    own_ip: Ipv4,
    vq: VqWrr,
    thresholds: [u32; VIRTUAL_QUEUES],
    rate_kbps: [u32; VIRTUAL_QUEUES],
    target_kbps: [u32; VIRTUAL_QUEUES],
    gap_ps: u64,
    /// Per port: bytes and packets offered per class, and when each class was last sent
    /// feedback.
    arrivals: Vec<[u64; VIRTUAL_QUEUES]>,
    arrival_pkts: Vec<[u64; VIRTUAL_QUEUES]>,
    last_feedback_ps: Vec<[Option<u64>; VIRTUAL_QUEUES]>,
    counters: PmqecnCounters,
}

impl Pmqecn {
    /// Over `vq`, sending feedback from `own_ip` above `threshold` packets, at most one per
    /// class and port per `gap_ps`.
    pub fn new(own_ip: Ipv4, mut vq: VqWrr, threshold: u32, gap_ps: u64) -> Pmqecn {
        vq.set_own_ip(own_ip);
        Pmqecn {
            own_ip,
            vq,
            thresholds: [threshold; VIRTUAL_QUEUES],
            rate_kbps: [0; VIRTUAL_QUEUES],
            target_kbps: [0; VIRTUAL_QUEUES],
            gap_ps,
            arrivals: Vec::new(),
            arrival_pkts: Vec::new(),
            last_feedback_ps: Vec::new(),
            counters: PmqecnCounters::default(),
        }
    }

    /// The counters.
    pub fn counters_now(&self) -> PmqecnCounters {
        self.counters
    }

    fn grow(&mut self, port: PortId) {
        let n = usize::from(port) + 1;
        if self.arrivals.len() < n {
            self.arrivals.resize(n, [0; VIRTUAL_QUEUES]);
            self.arrival_pkts.resize(n, [0; VIRTUAL_QUEUES]);
            self.last_feedback_ps.resize(n, [None; VIRTUAL_QUEUES]);
        }
    }

    /// Send class `v`'s feedback about port `port` to the source of `data`.
    fn send_feedback(&mut self, data: &PacketMeta, port: PortId, v: usize, ctx: &mut Ctx) {
        let mut meta = feedback_meta(self.own_ip, data);
        let Verdict::Forward(back) = self.vq.route(&mut meta, ctx) else {
            self.counters.feedback_no_route += 1;
            return;
        };
        let header = FeedbackHeader {
            queue: v as u8,
            qlen_pkts: self.vq.vq_len(port, v).min(u32::from(u16::MAX)) as u16,
            measured_kbps: self.rate_kbps[v],
            target_kbps: self.target_kbps[v],
        };
        ctx.emit_packet(feedback_emit(back, meta, self.vq.top_level(back), header));
        self.counters.feedback += 1;
    }
}

/// A feedback packet's headers, from `own_ip` to the source of `data` (its address and port):
/// UDP from [`FEEDBACK_PORT`], CE, DSCP [`FEEDBACK_DSCP`] (class 7, network control:
/// downstream its own class, never counted with the data it reports on). Route it, then
/// [`feedback_emit`].
pub fn feedback_meta(own_ip: Ipv4, data: &PacketMeta) -> PacketMeta {
    let mut meta = PacketMeta::udp(own_ip, data.src_ip, FEEDBACK_PORT, data.src_port, FEEDBACK_WIRE_BYTES);
    meta.ecn = Ecn::Ce;
    meta.dscp = FEEDBACK_DSCP;
    meta
}

/// The feedback packet `meta` out of `port` in queue `queue`, carrying `header` (kind 4).
pub fn feedback_emit(port: PortId, meta: PacketMeta, queue: u8, header: FeedbackHeader) -> Emit {
    let mut headers = HeaderStack::new();
    headers.push(Header::Feedback(header)).expect("an empty stack has room");
    Emit {
        port,
        meta,
        queue: Some(queue),
        headers,
    }
}

impl Program for Pmqecn {
    fn start(&mut self, ctx: &mut Ctx) {
        self.vq.start(ctx);
    }

    fn ingress(&mut self, pkt: &mut PacketMeta, ctx: &mut Ctx) -> Verdict {
        let verdict = self.vq.route_and_place(pkt, ctx);
        let Some(port) = verdict.port else {
            return verdict.verdict;
        };
        let v = VqWrr::virtual_queue_of(pkt);
        self.grow(port);
        self.arrivals[usize::from(port)][v] += u64::from(pkt.wire_len_bytes);
        self.arrival_pkts[usize::from(port)][v] += 1;
        if self.vq.vq_len(port, v) > self.thresholds[v] {
            let now = ctx.now_ps();
            let last = &mut self.last_feedback_ps[usize::from(port)][v];
            if last.is_some_and(|t| now < t + self.gap_ps) {
                self.counters.feedback_held += 1;
            } else {
                *last = Some(now);
                let data = *pkt;
                self.send_feedback(&data, port, v, ctx);
            }
        }
        verdict.verdict
    }

    fn on_dequeue(&mut self, pkt: &mut PacketMeta, port: PortId, queue: QueueMeta, ctx: &mut Ctx) -> EgressVerdict {
        // The switch's own feedback is not counted: `vq` knows the switch's address.
        self.vq.on_dequeue(pkt, port, queue, ctx)
    }

    fn registers(&self) -> Vec<(String, u64)> {
        self.vq.registers()
    }

    fn vector_registers(&self) -> Vec<(String, u64)> {
        let mut out = self.vq.vector_registers();
        for (name, table) in [
            ("vq_threshold", &self.thresholds),
            ("vq_rate_kbps", &self.rate_kbps),
            ("vq_target_kbps", &self.target_kbps),
        ] {
            out.extend(
                table
                    .iter()
                    .enumerate()
                    .map(|(v, &x)| (format!("{name}{v}"), u64::from(x))),
            );
        }
        for (name, table) in [
            ("vq_arrival_bytes", &self.arrivals),
            ("vq_arrival_pkts", &self.arrival_pkts),
        ] {
            for (p, classes) in table.iter().enumerate() {
                out.extend(
                    classes
                        .iter()
                        .enumerate()
                        .map(|(v, &x)| (format!("{name}{}", p * VIRTUAL_QUEUES + v), x)),
                );
            }
        }
        out
    }

    fn update_routes(&mut self, config: &mpsched_core::switch::SwitchConfig) -> Result<(), ConfigError> {
        self.vq.update_routes(config)
    }

    fn on_timer(&mut self, token: u64, ctx: &mut Ctx) {
        self.vq.on_timer(token, ctx);
    }

    fn counters(&self) -> Vec<(String, u64)> {
        let c = self.counters;
        let mut out = self.vq.counters();
        out.extend([
            ("pmqecn.feedback".to_string(), c.feedback),
            ("pmqecn.feedback_held".to_string(), c.feedback_held),
            ("pmqecn.feedback_no_route".to_string(), c.feedback_no_route),
        ]);
        out
    }
}

/// The class registers this program adds, each with its size in classes (`true`: per port
/// and class) and whether the control plane may write it.
const REGISTERS: [(&str, bool, bool); 5] = [
    ("vq_threshold", false, true),
    ("vq_rate_kbps", false, true),
    ("vq_target_kbps", false, true),
    ("vq_arrival_bytes", true, false),
    ("vq_arrival_pkts", true, false),
];

impl ProgramControl for Pmqecn {
    fn control_listing(&self) -> ControlListing {
        let mut l = self.vq.control_listing();
        for (name, per_port, writable) in REGISTERS {
            l.registers.push(RegisterInfo {
                name: name.to_string(),
                size: if per_port {
                    self.arrivals.len() * VIRTUAL_QUEUES
                } else {
                    VIRTUAL_QUEUES
                },
                writable,
            });
        }
        l
    }

    fn read_register(&self, name: &str, index: usize) -> Result<u64, ControlError> {
        let no_index = |size| ControlError::NoIndex {
            register: name.to_string(),
            size,
            index,
        };
        let class = |a: &[u32; VIRTUAL_QUEUES]| a.get(index).map(|&x| u64::from(x)).ok_or(no_index(VIRTUAL_QUEUES));
        match name {
            "vq_threshold" => class(&self.thresholds),
            "vq_rate_kbps" => class(&self.rate_kbps),
            "vq_target_kbps" => class(&self.target_kbps),
            "vq_arrival_bytes" | "vq_arrival_pkts" => {
                let table = if name == "vq_arrival_bytes" {
                    &self.arrivals
                } else {
                    &self.arrival_pkts
                };
                table
                    .get(index / VIRTUAL_QUEUES)
                    .map(|a| a[index % VIRTUAL_QUEUES])
                    .ok_or(no_index(table.len() * VIRTUAL_QUEUES))
            }
            _ => self.vq.read_register(name, index),
        }
    }

    fn write_register(&mut self, name: &str, index: usize, value: u64) -> Result<(), ControlError> {
        let target = match name {
            "vq_threshold" => &mut self.thresholds,
            "vq_rate_kbps" => &mut self.rate_kbps,
            "vq_target_kbps" => &mut self.target_kbps,
            _ => return self.vq.write_register(name, index, value),
        };
        let slot = target.get_mut(index).ok_or(ControlError::NoIndex {
            register: name.to_string(),
            size: VIRTUAL_QUEUES,
            index,
        })?;
        *slot = u32::try_from(value).map_err(|_| ControlError::BadEntry {
            table: name.to_string(),
            reason: format!("at most {}, got {value}", u32::MAX),
        })?;
        Ok(())
    }

    fn table_write(&mut self, table: &str, key: &[u64], action: &str, params: &[u64]) -> Result<(), ControlError> {
        self.vq.table_write(table, key, action, params)
    }

    fn table_delete(&mut self, table: &str, key: &[u64]) -> Result<(), ControlError> {
        self.vq.table_delete(table, key)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Forwards 10.0.0.9 out of port 1 and everything else (the sources) out of port 0.
    struct TwoPorts;
    impl ProgramControl for TwoPorts {}
    impl Program for TwoPorts {
        fn ingress(&mut self, pkt: &mut PacketMeta, _ctx: &mut Ctx) -> Verdict {
            Verdict::Forward(if pkt.dst_ip == 0x0a00_0009 { 1 } else { 0 })
        }
    }

    const SWITCH: Ipv4 = 0x0aff_0001;

    fn program(threshold: u32, gap_ps: u64) -> Pmqecn {
        let cfg = VqWrrConfig {
            weight: 3,
            vq_capacity: 64,
            levels: 8,
        };
        Pmqecn::new(SWITCH, VqWrr::new(cfg, Box::new(TwoPorts)), threshold, gap_ps)
    }

    fn data(class: u8) -> PacketMeta {
        let mut m = PacketMeta::udp(0x0a00_0001, 0x0a00_0009, 40_001, 5201, 1512);
        m.dscp = class << 3;
        m
    }

    /// Ingress of one data packet at `now_ps`: the verdict and what was emitted.
    fn arrive(p: &mut Pmqecn, class: u8, now_ps: u64) -> (Verdict, Vec<Emit>) {
        let mut ctx = Ctx::default();
        ctx.reset(now_ps);
        let v = p.ingress(&mut data(class), &mut ctx);
        (v, ctx.emitted().to_vec())
    }

    #[test]
    fn above_the_threshold_the_source_gets_feedback_with_the_class_rates() {
        let mut p = program(2, 0);
        p.write_register("vq_rate_kbps", 1, 6_000).unwrap();
        p.write_register("vq_target_kbps", 1, 4_000).unwrap();
        assert!(arrive(&mut p, 1, 0).1.is_empty());
        assert!(arrive(&mut p, 1, 1).1.is_empty());
        let (v, out) = arrive(&mut p, 1, 2);
        assert_eq!(v, Verdict::Forward(1), "the data packet goes on");
        let [fb] = out.as_slice() else { panic!("{out:?}") };
        assert_eq!((fb.port, fb.queue), (0, Some(7)));
        assert_eq!((fb.meta.src_ip, fb.meta.dst_ip), (SWITCH, 0x0a00_0001));
        assert_eq!(
            (fb.meta.src_port, fb.meta.dst_port, fb.meta.ecn),
            (FEEDBACK_PORT, 40_001, Ecn::Ce)
        );
        assert_eq!(
            fb.headers.feedback(),
            Some(&FeedbackHeader {
                queue: 1,
                qlen_pkts: 3,
                measured_kbps: 6_000,
                target_kbps: 4_000,
            })
        );
        assert_eq!(p.read_register("vq_arrival_bytes", 8 + 1), Ok(3 * 1512));
    }

    #[test]
    fn the_gap_holds_back_feedback_per_class_and_another_class_is_its_own() {
        let mut p = program(0, 1_000);
        assert_eq!(arrive(&mut p, 2, 0).1.len(), 1);
        assert_eq!(arrive(&mut p, 2, 999).1.len(), 0);
        assert_eq!(arrive(&mut p, 3, 999).1.len(), 1, "class 3 has its own gap");
        assert_eq!(arrive(&mut p, 2, 1_000).1.len(), 1);
        assert_eq!(p.counters_now().feedback, 3);
        assert_eq!(p.counters_now().feedback_held, 1);
    }

    #[test]
    fn the_switchs_own_feedback_is_not_counted_in_any_virtual_queue() {
        let mut p = program(0, 0);
        let (_, out) = arrive(&mut p, 4, 0);
        let mut fb = out[0].meta;
        let q = QueueMeta {
            queue: 7,
            ..QueueMeta::default()
        };
        p.on_dequeue(&mut fb, 0, q, &mut Ctx::default());
        let mut d = data(4);
        p.on_dequeue(&mut d, 1, q, &mut Ctx::default());
        let errors = p
            .counters()
            .into_iter()
            .find(|(k, _)| k == "vq.accounting_errors")
            .unwrap()
            .1;
        assert_eq!(errors, 0);
        assert_eq!(p.read_register("vq_len", 8 + 4), Ok(0));
    }

    #[test]
    fn registers_refuse_what_does_not_fit() {
        let mut p = program(5, 0);
        assert_eq!(p.read_register("vq_threshold", 3), Ok(5));
        assert!(p.write_register("vq_threshold", 8, 1).is_err());
        assert!(p.write_register("vq_target_kbps", 0, u64::from(u32::MAX) + 1).is_err());
        assert!(p.write_register("vq_arrival_bytes", 0, 1).is_err());
        assert!(p.read_register("vq_arrival_bytes", 0).is_err(), "no port seen yet");
    }
}
