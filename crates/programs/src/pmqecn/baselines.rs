//! The congestion points PMQECN is compared with (paper §Experiment, Table 3), each a program
//! over `multipath`'s forwarding whose switch ports are one first-in-first-out queue, as the
//! schemes were defined (README "Baselines"):
//!
//! - `dcqcn`: DCQCN's CP (Zhu et al., SIGCOMM 2015): at egress, an ECN-capable packet is marked
//!   CE with probability 0 below `kmin` packets in the queue it found, rising linearly to
//!   `pmax` at `kmax`, 1 above. The paper's single threshold is `kmin = kmax = 11` with `pmax`
//!   100 %: every ECN-capable packet that found 11 or more is marked. Between the two a 32-bit
//!   draw decides, in integers only, as `dcqcn.p4` decides ([`red_decision`], [`red_draw_marks`]).
//! - `tcn`: TCN's marking (Bai et al., CoNEXT 2016): at dequeue, CE when the packet's sojourn
//!   exceeds `sojourn`.
//! - `p4qcn`: P4QCN's CP (Geng, Yan & Zhang, 2019): QCN's feedback computed in the switch and
//!   reflected to the source. Once per `feedback_gap` per port a packet is sampled: `Fb =
//!   -(Q_off + w Q_delta)` with `Q_off = Q - q_eq`, `Q_delta = Q - Q_old` (packets, `Q` the
//!   queue it found); if `Fb < 0`, `|Fb|` is quantised to 6 bits against `Fb_max = q_eq (2w +
//!   1)` and a feedback packet goes to the source (the same form as PMQECN's, header kind 4)
//!   carrying the cut `1 - Gd |Fb|`, `Gd = 1/128`, as the ratio `target / measured` =
//!   `(128 - Fb6) / 128`: the reaction point multiplies its rate by it (P4QCN's RP is QCN's,
//!   which Algorithm 3 follows with `lambda* / lambda` in place of the cut).
//!
//! Every program tail-drops a packet that finds `fifo_pkts` packets in its queue (BMv2's
//! default queue depth is 64) and puts every packet in the port's queue 0. DCQCN's and TCN's
//! marks reach the sender through the receiver's CNPs (the simulator's notification point);
//! P4QCN's feedback goes straight back from the switch.

use super::cp::{feedback_emit, feedback_meta, FEEDBACK_DSCP};
use crate::params::{Param, ParamKind, Params};
use crate::{BuildInput, SwitchProgram, TablesNeed};
use mpsched_core::control::{ControlError, ControlListing, ProgramControl};
use mpsched_core::headers::FeedbackHeader;
use mpsched_core::packet::{Ecn, Ipv4, PacketMeta, PortId};
use mpsched_core::program::{Ctx, EgressVerdict, Program, QueueMeta, Verdict};
use mpsched_core::rng::{RandomSource, SeededRandom};
use mpsched_core::sched::ConfigError;

/// QCN's feedback is quantised to this many levels (6 bits).
pub const QCN_FB_LEVELS: u32 = 63;
/// QCN's `Gd` is `1 / QCN_GD_DIV`: the deepest cut is 63/128, about a half.
pub const QCN_GD_DIV: u32 = 128;
/// DCQCN's probabilities are in millionths.
pub const PPM: u64 = 1_000_000;

/// What DCQCN does with an ECN-capable packet that found a queue of some depth.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RedDecision {
    /// Probability 0: not marked, nothing drawn.
    Never,
    /// Probability 1: marked, nothing drawn.
    Always,
    /// Probability `floor(num / den)` millionths, strictly between 0 and 1: one draw decides
    /// ([`red_draw_marks`]).
    Draw {
        /// `pmax_ppm x (q - kmin)` (`pmax_ppm` when `kmin = kmax`).
        num: u64,
        /// `kmax - kmin` (1 when they are equal).
        den: u64,
    },
}

/// DCQCN's decision for a packet that found `q` packets: [`Baseline::red_ppm`] as a fraction,
/// without a division, so that P4 (which has none at run time) computes the same.
pub fn red_decision(q: u32, kmin: u32, kmax: u32, pmax_pct: u32) -> RedDecision {
    if q < kmin {
        return RedDecision::Never;
    }
    if q > kmax {
        return RedDecision::Always;
    }
    let pmax_ppm = u64::from(pmax_pct) * 10_000;
    let (num, den) = match kmax == kmin {
        true => (pmax_ppm, 1),
        false => (pmax_ppm * u64::from(q - kmin), u64::from(kmax - kmin)),
    };
    if num < den {
        RedDecision::Never
    } else if num >= PPM * den {
        RedDecision::Always
    } else {
        RedDecision::Draw { num, den }
    }
}

/// Whether a 32-bit `draw` marks at probability `floor(num / den)` millionths: the draw
/// becomes `u = (draw x 10^6) >> 32`, uniform on 0..10^6 (the multiply-shift of
/// `RandomSource::draw_inclusive`), and marks iff `u < floor(num / den)`, which for whole
/// numbers is `(u + 1) x den <= num`: the form `dcqcn.p4` computes in 64 bits.
pub fn red_draw_marks(draw: u32, num: u64, den: u64) -> bool {
    let u = (u64::from(draw) * PPM) >> 32;
    (u + 1) * den <= num
}

const FIFO: Param = Param {
    name: "fifo_pkts",
    kind: ParamKind::Count,
    default: 64,
    min: 1,
    max: 1 << 20,
    power_of_two: false,
    multiple_of: 1,
    doc: "packets the port's one queue holds before it drops (BMv2's default queue depth is 64)",
};

const DCQCN_PARAMS: [Param; 4] = [
    FIFO,
    Param {
        name: "kmin",
        kind: ParamKind::Count,
        default: 11,
        min: 0,
        max: 1 << 20,
        power_of_two: false,
        multiple_of: 1,
        doc: "packets in the queue below which nothing is marked",
    },
    Param {
        name: "kmax",
        kind: ParamKind::Count,
        default: 11,
        min: 0,
        max: 1 << 20,
        power_of_two: false,
        multiple_of: 1,
        doc: "packets in the queue at which the probability reaches pmax_pct (above it, every ECN-capable packet is marked)",
    },
    Param {
        name: "pmax_pct",
        kind: ParamKind::Count,
        default: 100,
        min: 1,
        max: 100,
        power_of_two: false,
        multiple_of: 1,
        doc: "marking probability reached at kmax, percent (DCQCN's paper: 1)",
    },
];

const TCN_PARAMS: [Param; 2] = [
    FIFO,
    Param {
        name: "sojourn",
        kind: ParamKind::Time,
        default: 1_000_000_000,
        min: 1_000_000,
        max: 10_000_000_000_000,
        power_of_two: false,
        multiple_of: 1,
        doc: "a packet that waited longer than this is marked at dequeue (TCN: lambda x base RTT)",
    },
];

const P4QCN_PARAMS: [Param; 4] = [
    FIFO,
    Param {
        name: "q_eq",
        kind: ParamKind::Count,
        default: 11,
        min: 1,
        max: 1 << 20,
        power_of_two: false,
        multiple_of: 1,
        doc: "QCN's equilibrium queue, packets (the PMQECN paper's K for P4QCN: 11)",
    },
    Param {
        name: "w",
        kind: ParamKind::Count,
        default: 2,
        min: 0,
        max: 64,
        power_of_two: false,
        multiple_of: 1,
        doc: "QCN's weight of the queue's growth against its offset",
    },
    Param {
        name: "feedback_gap",
        kind: ParamKind::Time,
        default: 100_000_000,
        min: 0,
        max: 1_000_000_000_000,
        power_of_two: false,
        multiple_of: 1_000_000,
        doc: "a port samples one packet per this (whole microseconds, as BMv2's clock counts; 0: every packet)",
    },
];

/// How a baseline decides to signal congestion.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Rule {
    /// DCQCN: RED-like marking on the queue a packet found.
    Red {
        /// Below this many packets, no mark.
        kmin: u32,
        /// From this many, every ECN-capable packet.
        kmax: u32,
        /// Probability at `kmax`, percent.
        pmax_pct: u32,
    },
    /// TCN: mark a packet that waited longer than this, ps.
    Sojourn(u64),
    /// P4QCN: QCN's feedback, reflected.
    Qcn {
        /// Equilibrium queue, packets.
        q_eq: u32,
        /// Weight of the growth.
        w: u32,
        /// One sample per port per this, ps.
        gap_ps: u64,
    },
}

/// Counters, `baseline.*` in results.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct BaselineCounters {
    /// Packets marked CE.
    pub marked: u64,
    /// Packets dropped at the queue's limit.
    pub tail_drops: u64,
    /// QCN samples taken.
    pub samples: u64,
    /// QCN feedback packets sent.
    pub feedback: u64,
    /// QCN feedback that found no route back.
    pub feedback_no_route: u64,
}

/// Per port: QCN's last sampled queue and when it sampled.
#[derive(Clone, Copy, Debug, Default)]
struct QcnPort {
    q_old: u32,
    last_sample_ps: Option<u64>,
}

/// A baseline congestion point over a forwarding program.
pub struct Baseline {
    fwd: Box<dyn Program>,
    rule: Rule,
    fifo_pkts: u32,
    own_ip: Ipv4,
    rng: Box<dyn RandomSource>,
    qcn: Vec<QcnPort>,
    counters: BaselineCounters,
}

impl Baseline {
    /// `rule` over `fwd`, dropping at `fifo_pkts`; feedback from `own_ip`; draws from `seed`.
    pub fn new(fwd: Box<dyn Program>, rule: Rule, fifo_pkts: u32, own_ip: Ipv4, seed: u64) -> Baseline {
        Self::with_rng(fwd, rule, fifo_pkts, own_ip, Box::new(SeededRandom::new(seed)))
    }

    /// As [`Baseline::new`], its draws from `rng` (the vectors' fixed draws).
    pub fn with_rng(
        fwd: Box<dyn Program>,
        rule: Rule,
        fifo_pkts: u32,
        own_ip: Ipv4,
        rng: Box<dyn RandomSource>,
    ) -> Baseline {
        Baseline {
            fwd,
            rule,
            fifo_pkts,
            own_ip,
            rng,
            qcn: Vec::new(),
            counters: BaselineCounters::default(),
        }
    }

    /// The counters.
    pub fn counters_now(&self) -> BaselineCounters {
        self.counters
    }

    /// DCQCN's marking probability for a packet that found `q` packets, in millionths: 0
    /// below `kmin`, rising linearly to `pmax_pct` at `kmax` (`pmax_pct` from `kmin` when the
    /// two are equal), 1 above `kmax`. The program decides by [`red_decision`], its equal.
    pub fn red_ppm(q: u32, kmin: u32, kmax: u32, pmax_pct: u32) -> u64 {
        let pmax = u64::from(pmax_pct) * 10_000;
        if q < kmin {
            0
        } else if q > kmax {
            1_000_000
        } else if kmax == kmin {
            pmax
        } else {
            pmax * u64::from(q - kmin) / u64::from(kmax - kmin)
        }
    }

    /// QCN's quantised feedback `|Fb|` (0: no congestion) for queue `q` after `q_old`.
    pub fn qcn_fb(q: u32, q_old: u32, q_eq: u32, w: u32) -> u32 {
        let fb = -((i64::from(q) - i64::from(q_eq)) + i64::from(w) * (i64::from(q) - i64::from(q_old)));
        if fb >= 0 {
            return 0;
        }
        let fb_max = i64::from(q_eq) * (2 * i64::from(w) + 1);
        let level = (fb.unsigned_abs().min(fb_max as u64) * u64::from(QCN_FB_LEVELS)).div_ceil(fb_max as u64);
        level as u32
    }

    fn mark(&mut self, pkt: &mut PacketMeta) {
        if pkt.ecn.is_ect() {
            pkt.ecn = Ecn::Ce;
            self.counters.marked += 1;
        }
    }

    /// DCQCN at dequeue. Only an ECN-capable packet is decided, so only it takes a draw (as
    /// `dcqcn.p4`: the vectors' fixed draws go to the same packets on both).
    fn red(&mut self, pkt: &mut PacketMeta, q: u32, (kmin, kmax, pmax_pct): (u32, u32, u32)) {
        if !pkt.ecn.is_ect() {
            return;
        }
        let marks = match red_decision(q, kmin, kmax, pmax_pct) {
            RedDecision::Never => false,
            RedDecision::Always => true,
            RedDecision::Draw { num, den } => red_draw_marks(self.rng.next_u32(), num, den),
        };
        if marks {
            self.mark(pkt);
        }
    }

    /// Sample the queue at `port` for QCN; reflect feedback to `pkt`'s source when congested.
    fn qcn_sample(&mut self, pkt: &PacketMeta, port: PortId, q: u32, (q_eq, w, gap): (u32, u32, u64), ctx: &mut Ctx) {
        let i = usize::from(port);
        if self.qcn.len() <= i {
            self.qcn.resize(i + 1, QcnPort::default());
        }
        let now = ctx.now_ps();
        let state = &mut self.qcn[i];
        if state.last_sample_ps.is_some_and(|t| now < t + gap) {
            return;
        }
        state.last_sample_ps = Some(now);
        let fb = Self::qcn_fb(q, state.q_old, q_eq, w);
        state.q_old = q;
        self.counters.samples += 1;
        if fb > 0 && pkt.src_ip != self.own_ip {
            self.reflect(pkt, q, fb, ctx);
        }
    }

    fn reflect(&mut self, data: &PacketMeta, q: u32, fb: u32, ctx: &mut Ctx) {
        let mut meta = feedback_meta(self.own_ip, data);
        let Verdict::Forward(back) = self.fwd.ingress(&mut meta, ctx) else {
            self.counters.feedback_no_route += 1;
            return;
        };
        let header = FeedbackHeader {
            queue: data.dscp >> 3,
            qlen_pkts: q.min(u32::from(u16::MAX)) as u16,
            measured_kbps: QCN_GD_DIV,
            target_kbps: QCN_GD_DIV - fb,
        };
        ctx.emit_packet(feedback_emit(back, meta, 0, header));
        self.counters.feedback += 1;
    }
}

impl Program for Baseline {
    fn start(&mut self, ctx: &mut Ctx) {
        self.fwd.start(ctx);
    }

    fn ingress(&mut self, pkt: &mut PacketMeta, ctx: &mut Ctx) -> Verdict {
        let v = self.fwd.ingress(pkt, ctx);
        if matches!(v, Verdict::Forward(_)) {
            ctx.set_queue(0);
        }
        v
    }

    fn uses_enqueue(&self) -> bool {
        true
    }

    fn on_enqueue(&mut self, pkt: &mut PacketMeta, port: PortId, queue: QueueMeta, ctx: &mut Ctx) -> EgressVerdict {
        let q = queue.enq_qdepth_pkts;
        if q >= self.fifo_pkts {
            self.counters.tail_drops += 1;
            return EgressVerdict::Drop;
        }
        // Network control (feedback, CS7) is never sampled: its source is a switch.
        if let (Rule::Qcn { q_eq, w, gap_ps }, false) = (self.rule, pkt.dscp == FEEDBACK_DSCP) {
            let data = *pkt;
            self.qcn_sample(&data, port, q, (q_eq, w, gap_ps), ctx);
        }
        self.fwd.on_enqueue(pkt, port, queue, ctx)
    }

    fn on_dequeue(&mut self, pkt: &mut PacketMeta, port: PortId, queue: QueueMeta, ctx: &mut Ctx) -> EgressVerdict {
        match self.rule {
            Rule::Red { kmin, kmax, pmax_pct } => self.red(pkt, queue.enq_qdepth_pkts, (kmin, kmax, pmax_pct)),
            Rule::Sojourn(t) if queue.deq_timedelta_ps > t => self.mark(pkt),
            _ => {}
        }
        self.fwd.on_dequeue(pkt, port, queue, ctx)
    }

    fn on_timer(&mut self, token: u64, ctx: &mut Ctx) {
        self.fwd.on_timer(token, ctx);
    }

    fn uses_headers(&self) -> bool {
        self.fwd.uses_headers()
    }

    fn update_routes(&mut self, config: &mpsched_core::switch::SwitchConfig) -> Result<(), ConfigError> {
        self.fwd.update_routes(config)
    }

    fn counters(&self) -> Vec<(String, u64)> {
        let c = self.counters;
        let mut out = self.fwd.counters();
        out.extend([
            ("baseline.marked".to_string(), c.marked),
            ("baseline.tail_drops".to_string(), c.tail_drops),
        ]);
        if matches!(self.rule, Rule::Qcn { .. }) {
            out.extend([
                ("qcn.samples".to_string(), c.samples),
                ("qcn.feedback".to_string(), c.feedback),
                ("qcn.feedback_no_route".to_string(), c.feedback_no_route),
            ]);
        }
        out
    }

    fn registers(&self) -> Vec<(String, u64)> {
        self.fwd.registers()
    }
}

impl ProgramControl for Baseline {
    fn control_listing(&self) -> ControlListing {
        self.fwd.control_listing()
    }

    fn read_register(&self, name: &str, index: usize) -> Result<u64, ControlError> {
        self.fwd.read_register(name, index)
    }

    fn write_register(&mut self, name: &str, index: usize, value: u64) -> Result<(), ControlError> {
        self.fwd.write_register(name, index, value)
    }

    fn table_write(&mut self, table: &str, key: &[u64], action: &str, params: &[u64]) -> Result<(), ControlError> {
        self.fwd.table_write(table, key, action, params)
    }
}

/// One baseline as the registry knows it.
pub struct BaselineProgram {
    name: &'static str,
    summary: &'static str,
    params: &'static [Param],
    rule: fn(&Params) -> Rule,
}

/// DCQCN's congestion point.
pub static DCQCN: BaselineProgram = BaselineProgram {
    name: "dcqcn",
    summary: "DCQCN's congestion point (SIGCOMM 2015): RED-like ECN marking between kmin and kmax on one FIFO queue",
    params: &DCQCN_PARAMS,
    rule: |p| Rule::Red {
        kmin: p.get("kmin") as u32,
        kmax: p.get("kmax") as u32,
        pmax_pct: p.get("pmax_pct") as u32,
    },
};

/// TCN's marking.
pub static TCN: BaselineProgram = BaselineProgram {
    name: "tcn",
    summary: "TCN (CoNEXT 2016): ECN marking at dequeue by sojourn time, one FIFO queue",
    params: &TCN_PARAMS,
    rule: |p| Rule::Sojourn(p.get("sojourn")),
};

/// P4QCN's congestion point.
pub static P4QCN: BaselineProgram = BaselineProgram {
    name: "p4qcn",
    summary: "P4QCN (2019): QCN feedback computed in the switch and reflected to the source, one FIFO queue",
    params: &P4QCN_PARAMS,
    rule: |p| Rule::Qcn {
        q_eq: p.get("q_eq") as u32,
        w: p.get("w") as u32,
        gap_ps: p.get("feedback_gap"),
    },
};

impl SwitchProgram for BaselineProgram {
    fn name(&self) -> &'static str {
        self.name
    }

    fn summary(&self) -> &'static str {
        self.summary
    }

    fn params(&self) -> &'static [Param] {
        self.params
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

    fn check_params(&self, params: &Params) -> Result<(), (&'static str, String)> {
        if self.name == "dcqcn" && params.get("kmin") > params.get("kmax") {
            return Err(("kmax", "must be at least kmin".into()));
        }
        Ok(())
    }

    fn build(&self, input: &BuildInput<'_>) -> Result<Box<dyn Program>, ConfigError> {
        self.build_with_rng(input, Box::new(SeededRandom::new(input.seed)))
    }

    fn build_with_rng(
        &self,
        input: &BuildInput<'_>,
        rng: Box<dyn RandomSource>,
    ) -> Result<Box<dyn Program>, ConfigError> {
        let fwd = crate::multipath::MULTIPATH.build(input)?;
        let p = input.params;
        Ok(Box::new(Baseline::with_rng(
            fwd,
            (self.rule)(p),
            p.get("fifo_pkts") as u32,
            input.tables.own_ip,
            rng,
        )))
    }

    fn marks_at_egress(&self) -> bool {
        matches!(self.name, "dcqcn" | "tcn")
    }

    /// The three share `baseline.bpf.c` (its mode set from the program's name).
    fn ebpf_object(&self) -> Option<&'static str> {
        Some("baseline")
    }

    /// `dcqcn.p4`, `tcn.p4` and `p4qcn.p4` beside this file (over `p4/include/baseline.p4`).
    fn p4_program(&self) -> Option<&'static str> {
        Some(self.name)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dcqcn_marks_nothing_below_kmin_a_line_up_to_pmax_at_kmax_and_everything_above() {
        // The paper's single K = 11 (kmin = kmax, pmax 100 %).
        assert_eq!(Baseline::red_ppm(10, 11, 11, 100), 0);
        assert_eq!(Baseline::red_ppm(11, 11, 11, 100), 1_000_000);
        assert_eq!(Baseline::red_ppm(11, 11, 11, 30), 300_000);
        // DCQCN's paper: Kmin 5, Kmax 200 (KB), Pmax 1 %; here in packets.
        assert_eq!(Baseline::red_ppm(4, 5, 200, 1), 0);
        assert_eq!(Baseline::red_ppm(5, 5, 200, 1), 0);
        assert_eq!(Baseline::red_ppm(102, 5, 200, 1), 4_974);
        assert_eq!(Baseline::red_ppm(200, 5, 200, 1), 10_000);
        assert_eq!(Baseline::red_ppm(201, 5, 200, 1), 1_000_000);
    }

    /// The division-free decision P4 computes marks exactly when the draw's millionth is
    /// below `red_ppm`, and draws only where the probability is strictly between 0 and 1.
    #[test]
    fn red_decision_and_draw_equal_the_probability_line_in_millionths() {
        let draws = [
            0,
            1,
            4_294,
            4_295,
            1 << 31,
            1_073_741_824,
            3_000_000_000,
            u32::MAX - 1,
            u32::MAX,
        ];
        let edges = [62_500u64, 250_000, 312_500, 500_000, 4_974, 10_000, 999_999];
        let edge_draws = edges
            .iter()
            .flat_map(|&u| [(u << 32).div_ceil(PPM) as u32, ((u << 32).div_ceil(PPM) - 1) as u32]);
        let draws: Vec<u32> = draws.into_iter().chain(edge_draws).collect();
        // (0, 20 000, 1): the line rises by less than a millionth per packet, so the first
        // packets over kmin have p = 0 and must take no draw.
        let lines = [
            (4, 12, 50),
            (11, 11, 100),
            (11, 11, 30),
            (5, 200, 1),
            (0, 3, 100),
            (0, 0, 7),
            (0, 20_000, 1),
        ];
        for (kmin, kmax, pmax) in lines {
            for q in 0..=kmax + 2 {
                let p = Baseline::red_ppm(q, kmin, kmax, pmax);
                let d = red_decision(q, kmin, kmax, pmax);
                match d {
                    RedDecision::Never => assert_eq!(p, 0, "q {q} {kmin}/{kmax}/{pmax}"),
                    RedDecision::Always => assert!(p >= PPM, "q {q} {kmin}/{kmax}/{pmax}"),
                    RedDecision::Draw { num, den } => {
                        assert!((1..PPM).contains(&p), "q {q} {kmin}/{kmax}/{pmax}");
                        for &draw in &draws {
                            let u = (u64::from(draw) * PPM) >> 32;
                            assert_eq!(red_draw_marks(draw, num, den), u < p, "q {q} draw {draw}");
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn a_draw_marks_below_the_probability_and_not_at_it() {
        // 250 000 ppm: the last draw of millionth 249 999 marks, the first of 250 000 does not.
        let first = (250_000u64 << 32).div_ceil(PPM) as u32;
        assert!(red_draw_marks(first - 1, 2_000_000, 8));
        assert!(!red_draw_marks(first, 2_000_000, 8));
        assert!(red_draw_marks(0, 1, 1), "1 ppm: only millionth 0");
        assert!(!red_draw_marks(4_295, 1, 1), "millionth 1");
    }

    #[test]
    fn qcn_feedback_grows_with_the_queue_and_its_growth_and_is_six_bits() {
        // At or below equilibrium and not growing: nothing.
        assert_eq!(Baseline::qcn_fb(11, 11, 11, 2), 0);
        assert_eq!(Baseline::qcn_fb(5, 5, 11, 2), 0);
        // Above and growing: Fb = -(9 + 2 x 4) = -17 of Fb_max 55 -> ceil(17 x 63 / 55) = 20.
        assert_eq!(Baseline::qcn_fb(20, 16, 11, 2), 20);
        // Draining fast enough outweighs the offset.
        assert_eq!(Baseline::qcn_fb(20, 30, 11, 2), 0);
        // Far above: the deepest level, a cut of 63/128.
        assert_eq!(Baseline::qcn_fb(500, 0, 11, 2), QCN_FB_LEVELS);
    }
}
