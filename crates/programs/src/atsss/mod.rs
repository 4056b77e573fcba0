//! ATSSS: the schedulers of a 5G UPF that splits each user equipment's (UE's) downlink over a
//! preferred path (WiFi) and a secondary one (cellular), after Brisch, Kassler et al.,
//! "Accelerating Transport Layer Multipath Packet Scheduling for 5G-ATSSS" (slides; no public
//! code), and the steering modes of 3GPP TS 23.501 §5.32.8 a UPF offers as baselines.
//!
//! The arithmetic is [`registers`]: one row of registers per UE, integers only, what the eBPF
//! and P4 programs do step for step. Here each is also a tunnel scheduler
//! ([`TunnelScheduler`]): a `[[tunnel]]` per UE, ending at the UE, whose entry (the UPF)
//! holds that UE's row and learns of its paths from the tunnel's acknowledgements
//! ([`TunnelScheduler::on_ack`]), as the simulator and `mpsched tunnel` run them. Choices and
//! their reasons are in this folder's README.
//!
//! The UPF itself, on whole frames, is [`upf`] (the switch program `atsss`: a UE table from
//! the control plane, encapsulation in the tunnel daemon's clear datagram, [`frame`], and the
//! UEs' acknowledgements), with its eBPF twin `atsss.bpf.c` and its conformance vectors
//! ([`vector_sets`]).

pub mod frame;
pub mod registers;
pub mod upf;
pub mod vector_sets;

use crate::params::{Param, ParamKind, Params};
use crate::tunnel::TunnelSchedulerProgram;
use mpsched_core::rng::{RandomSource, SeededRandom};
use mpsched_core::tunnel::{AckSample, FlowKey, SubtunnelView, TunnelScheduler};
use mpsched_core::upf::SteeringKind;
use registers::{scaled_ticks, AckRegs, Config, Kind, UeReg, MAX_PATHS};

/// The outage floor by default: a path silent this long with packets in flight is down.
pub const DEFAULT_OUTAGE_FLOOR_PS: u64 = 20_000_000_000;
/// CMon's initial window by default, packets (Linux's initial congestion window).
pub const DEFAULT_INITIAL_CWND: u64 = 10;

/// One UE's scheduler at the UPF: its row of registers and its random draws.
#[derive(Debug)]
pub struct AtsssScheduler {
    cfg: Config,
    ue: UeReg,
    rng: SeededRandom,
    acks: u64,
    stale_acks: u64,
}

impl AtsssScheduler {
    /// A UE's scheduler with its registers at their start: `weight` the preferred path's
    /// initial weight (WRR and DWRR out of 255, RTTMon out of 62).
    pub fn new(cfg: Config, kind: Kind, weight: u8, seed: u64) -> AtsssScheduler {
        AtsssScheduler {
            ue: registers::new_ue(&cfg, kind, MAX_PATHS as u8, weight),
            cfg,
            rng: SeededRandom::new(seed),
            acks: 0,
            stale_acks: 0,
        }
    }

    /// The UE's registers.
    pub fn registers(&self) -> &UeReg {
        &self.ue
    }
}

impl TunnelScheduler for AtsssScheduler {
    fn select(&mut self, _flow: &FlowKey, _size: u32, now_ns: u64, subtunnels: &[SubtunnelView]) -> usize {
        // The registers are the tunnel's paths by number (`SubtunnelView::path`, as
        // acknowledgements name them), whichever the daemon offers now: a choice that is not
        // offered (the daemon saw it down) goes to the first that is, and is counted there.
        let views = &subtunnels[..subtunnels.len().min(MAX_PATHS)];
        let Some(highest) = views.iter().map(|v| usize::from(v.path)).max() else {
            return 0;
        };
        self.ue.n_paths = (highest + 1).min(MAX_PATHS) as u8;
        let now = scaled_ticks(now_ns);
        let draw = self.rng.next_u32();
        let chosen = registers::select(&mut self.ue, &self.cfg, now, draw);
        let k = views.iter().position(|v| usize::from(v.path) == chosen).unwrap_or(0);
        registers::on_send(&mut self.ue, usize::from(views[k].path) % MAX_PATHS, now);
        k
    }

    fn on_ack(&mut self, subtunnel: usize, ack: &AckSample, now_ns: u64) {
        if subtunnel >= MAX_PATHS {
            return;
        }
        self.acks += 1;
        // The register's numbers count the scheduler's packets; the tunnel's path counts
        // keepalives too, so what is acknowledged is taken as "all but what is in flight".
        let p = &self.ue.paths[subtunnel];
        let in_flight = u32::try_from(ack.in_flight_pkts).unwrap_or(u32::MAX);
        let regs = AckRegs {
            acked: p.seq_sent.wrapping_sub(in_flight.min(registers::in_flight(p))),
            lost: ack.lost_pkts as u32,
            rtt: scaled_ticks(ack.rtt_ns),
        };
        if regs.acked == p.seq_acked && regs.rtt == p.cur_rtt && regs.lost == p.lost {
            self.stale_acks += 1;
        }
        registers::on_ack(&mut self.ue, &self.cfg, subtunnel, &regs, scaled_ticks(now_ns));
    }

    fn counters(&self) -> Vec<(String, u64)> {
        let mut out = vec![
            ("weight".to_string(), u64::from(self.ue.weight)),
            ("acks".to_string(), self.acks),
        ];
        if registers::kind_of(&self.ue) == Kind::CMon {
            for (i, p) in self.ue.paths.iter().enumerate().take(usize::from(self.ue.n_paths)) {
                out.push((format!("cwnd{i}"), u64::from(p.cwnd)));
            }
        }
        out
    }
}

const OUTAGE_FLOOR: Param = Param {
    name: "outage_floor",
    kind: ParamKind::Time,
    default: DEFAULT_OUTAGE_FLOOR_PS,
    min: 1_000_000_000,
    max: 10_000_000_000_000,
    power_of_two: false,
    multiple_of: 1,
    doc: "a path silent this long with packets in flight is down (at least four target RTTs)",
};

const fn weight_param(name: &'static str, default: u64, max: u64, doc: &'static str) -> Param {
    Param {
        name,
        kind: ParamKind::Count,
        default,
        min: 0,
        max,
        power_of_two: false,
        multiple_of: 1,
        doc,
    }
}

const WRR_PARAMS: &[Param] = &[weight_param(
    "weight",
    128,
    255,
    "the preferred path's share out of 255 (255: all of it)",
)];
const DWRR_PARAMS: &[Param] = &[weight_param(
    "weight",
    128,
    255,
    "the preferred path's initial share out of 255; +1 per loss-free acknowledgement, -1/8 - 1 per loss",
)];
const RTTMON_PARAMS: &[Param] = &[weight_param(
    "weight",
    31,
    62,
    "the preferred path's initial weight out of 62; steps once per target RTT",
)];
const CMON_PARAMS: &[Param] = &[
    OUTAGE_FLOOR,
    Param {
        name: "initial_cwnd",
        kind: ParamKind::Count,
        default: DEFAULT_INITIAL_CWND,
        min: registers::CMON_MIN_CWND as u64,
        max: registers::CMON_MAX_CWND as u64,
        power_of_two: false,
        multiple_of: 1,
        doc: "each path's window estimate at the start, packets",
    },
];
const LIVENESS_PARAMS: &[Param] = &[OUTAGE_FLOOR];
const LOAD_BALANCING_PARAMS: &[Param] = &[weight_param(
    "preferred_percent",
    50,
    100,
    "the share of packets on the preferred path, percent (TS 24.193's weight of the non-3GPP access)",
)];

/// An ATSSS scheduler as the tunnel registry knows it.
pub struct AtsssProgram {
    kind: Kind,
    name: &'static str,
    summary: &'static str,
    params: &'static [Param],
}

impl TunnelSchedulerProgram for AtsssProgram {
    fn name(&self) -> &'static str {
        self.name
    }

    fn summary(&self) -> &'static str {
        self.summary
    }

    fn params(&self) -> &'static [Param] {
        self.params
    }

    fn needs_path_acks(&self) -> bool {
        true
    }

    fn build(&self, params: &Params, seed: u64) -> Box<dyn TunnelScheduler> {
        let ue = self.ue_setup(params);
        let cfg = Config {
            outage_floor_ticks: scaled_ticks(ue.outage_floor_ps / 1000),
            initial_cwnd: ue.initial_cwnd,
        };
        Box::new(AtsssScheduler::new(cfg, self.kind, ue.weight, seed))
    }
}

/// How a tunnel with an ATSSS scheduler sets up its UE's row, in a tunnel scheduler or a UPF's
/// UE table: the kind, the initial weight, and the settings the UPF shares between its UEs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct UeSetup {
    /// The UE's scheduler.
    pub kind: SteeringKind,
    /// The preferred path's initial weight (out of 255, RTTMon's out of 62; 0 for the kinds
    /// without one).
    pub weight: u8,
    /// The outage floor, ps (the default for the kinds without the parameter).
    pub outage_floor_ps: u64,
    /// CMon's initial window, packets (the default for the other kinds).
    pub initial_cwnd: u16,
}

impl AtsssProgram {
    /// The UE row a tunnel of this scheduler with `params` (checked against [`Self::params`])
    /// starts from.
    pub fn ue_setup(&self, params: &Params) -> UeSetup {
        let get = |name: &str| self.params.iter().any(|p| p.name == name).then(|| params.get(name));
        let weight = match self.kind {
            Kind::LoadBalancing => (get("preferred_percent").unwrap_or(50) * 255).div_ceil(100),
            Kind::ActiveStandby | Kind::SmallestDelay | Kind::Priority | Kind::CMon => 0,
            _ => get("weight").unwrap_or(0),
        };
        UeSetup {
            kind: SteeringKind::ALL[self.kind as usize],
            weight: weight as u8,
            outage_floor_ps: get("outage_floor").unwrap_or(DEFAULT_OUTAGE_FLOOR_PS),
            initial_cwnd: get("initial_cwnd").unwrap_or(DEFAULT_INITIAL_CWND) as u16,
        }
    }
}

/// The ATSSS scheduler registered as `name`, if it is one.
pub fn atsss_program(name: &str) -> Option<&'static AtsssProgram> {
    [
        &WRR,
        &DWRR,
        &RTTMON,
        &CMON,
        &ACTIVE_STANDBY,
        &SMALLEST_DELAY,
        &LOAD_BALANCING,
        &PRIORITY,
    ]
    .into_iter()
    .find(|p| p.name == name)
}

/// Static WRR.
pub static WRR: AtsssProgram = AtsssProgram {
    kind: Kind::Wrr,
    name: "wrr",
    summary: "ATSSS static WRR: a random draw against the UE's 8-bit preferred-path weight",
    params: WRR_PARAMS,
};
/// Dynamic WRR.
pub static DWRR: AtsssProgram = AtsssProgram {
    kind: Kind::Dwrr,
    name: "dwrr",
    summary: "ATSSS dynamic WRR: the weight rises on the preferred path's loss-free acks, falls on loss",
    params: DWRR_PARAMS,
};
/// RTT monitoring.
pub static RTTMON: AtsssProgram = AtsssProgram {
    kind: Kind::RttMon,
    name: "rttmon",
    summary: "ATSSS RTTMon: the preferred weight (0-62) steps once per target RTT (1.46 x min) by the RTT",
    params: RTTMON_PARAMS,
};
/// Congestion monitoring.
pub static CMON: AtsssProgram = AtsssProgram {
    kind: Kind::CMon,
    name: "cmon",
    summary: "ATSSS CMon: per-path window and RTT target, probing, outage detection; most preferred usable path",
    params: CMON_PARAMS,
};
/// 3GPP Active-Standby.
pub static ACTIVE_STANDBY: AtsssProgram = AtsssProgram {
    kind: Kind::ActiveStandby,
    name: "active-standby",
    summary: "3GPP Active-Standby: the preferred path while it is up, else the standby",
    params: LIVENESS_PARAMS,
};
/// 3GPP Smallest Delay.
pub static SMALLEST_DELAY: AtsssProgram = AtsssProgram {
    kind: Kind::SmallestDelay,
    name: "smallest-delay",
    summary: "3GPP Smallest Delay: the up path with the smallest RTT",
    params: LIVENESS_PARAMS,
};
/// 3GPP Load-Balancing with a fixed share.
pub static LOAD_BALANCING: AtsssProgram = AtsssProgram {
    kind: Kind::LoadBalancing,
    name: "load-balancing",
    summary: "3GPP Load-Balancing: a fixed percentage on the preferred path",
    params: LOAD_BALANCING_PARAMS,
};
/// 3GPP Priority-based.
pub static PRIORITY: AtsssProgram = AtsssProgram {
    kind: Kind::Priority,
    name: "priority",
    summary: "3GPP Priority-based: the preferred path until congested (RTT above target) or down",
    params: LIVENESS_PARAMS,
};

#[cfg(test)]
mod tests {
    use super::*;

    fn view(path: u8) -> SubtunnelView {
        SubtunnelView {
            path,
            ..SubtunnelView::default()
        }
    }

    /// The daemon offers only the paths that are up: with the active path 0 down, active-
    /// standby's choice of path 0 goes to the standby, and is counted on the standby's
    /// registers, where its acknowledgements (by path number) land.
    #[test]
    fn registers_follow_the_path_numbers_whichever_paths_are_offered() {
        let cfg = Config {
            outage_floor_ticks: 1_000_000,
            initial_cwnd: 10,
        };
        let mut s = AtsssScheduler::new(cfg, Kind::ActiveStandby, 0, 1);
        let key = FlowKey {
            src_ip: 1,
            dst_ip: 2,
            src_port: 3,
            dst_port: 4,
            proto: 17,
        };
        let both = [view(0), view(1)];
        assert_eq!(s.select(&key, 100, 0, &both), 0, "the active path while it is offered");
        let standby_only = [view(1)];
        assert_eq!(s.select(&key, 100, 1_000, &standby_only), 0, "the one offered");
        assert_eq!(s.select(&key, 100, 2_000, &standby_only), 0);
        assert_eq!(
            (s.registers().paths[0].seq_sent, s.registers().paths[1].seq_sent),
            (1, 2)
        );
        assert!(s.select(&key, 100, 3_000, &[]) == 0, "nothing offered: no panic");
    }
}
