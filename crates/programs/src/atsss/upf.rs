//! The UPF side of ATSSS as a switch program on whole frames (`atsss`): per UE, the
//! scheduler of [`super::registers`] picks a path for each downlink packet, which leaves
//! encapsulated in the tunnel daemon's clear datagram ([`super::frame`]); the UEs'
//! acknowledgements feed the registers back. The eBPF twin is `atsss.bpf.c`; choices and the
//! frame format are in this folder's README.
//!
//! Per frame, in this order (the eBPF program's order too):
//! 1. to the UPF's address, UDP, to port 4789 (a tunnel frame): its IPv4 header must have no
//!    options and not be a fragment, the UDP length must match the IPv4 total length, the
//!    payload must hold the 20-byte header with reserved 0 and a known kind; otherwise
//!    dropped as `malformed` (`atsss.malformed`). The UE and path are found by the outer
//!    source address (else dropped, `atsss.unknown_ue`), and the header's path must be that
//!    path (else `malformed`). Then by kind:
//!    - **2, acknowledgement** (16-byte body): `rtt_us = now_us - echo_us - ack_delay_us`
//!      (wrapping, saturating at 0), `acked = highest_seq`, `lost = highest_seq - received`
//!      (wrapping; the UPF numbers a path's packets from 1, the register's `seq_sent` after
//!      the send, so `highest_seq` packets were sent up to the highest: the tunnel daemon's
//!      `highest_seq + 1 - received` counts from 0, and here would report one loss before any,
//!      which DWRR would answer with a cut), into [`registers::on_ack`]; consumed, counted
//!      `atsss.acks`, or `atsss.acks_ignored` when the registers refuse it (older than one
//!      seen, or beyond what was sent);
//!    - **1, uplink data** (12-byte body, then an IPv4 packet filling the rest exactly): the
//!      inner source must be the UE's own address (else dropped, `atsss.spoofed`); the inner
//!      packet is decapsulated (`atsss.uplink`) and routed as any other;
//!    - **3, keepalive** (12-byte body): counted (`atsss.keepalives`) and consumed;
//! 2. other frames to the UPF's address go to its stack (`local`);
//! 3. to a UE's own address (downlink): if the packet with 60 bytes of encapsulation exceeds
//!    the MTU, dropped (`atsss.too_big`) and nothing moves; else the UE's scheduler picks the
//!    path (a random draw for the weighted kinds only), [`registers::on_send`] numbers it, and
//!    it leaves encapsulated out of the path's egress port (`atsss.encapsulated`,
//!    `atsss.path<j>_pkts`);
//! 4. anything else is routed: TTL (dropped at 1 or 0, `ttl_expired`), longest-prefix match
//!    (`no_route`), TTL - 1 with the checksum updated as RFC 1624 says.

use super::frame::{
    self, AckBody, Encap, Header, ACK_BYTES, BODY_AT, DATA_BYTES, ENCAP_BYTES, HEADER_BYTES, KEEPALIVE_BYTES, KIND_ACK,
    KIND_DATA, KIND_KEEPALIVE, UPF_PORT,
};
use super::registers::{self, scaled_ticks, AckRegs, Config, Kind, UeReg, MAX_PATHS};
use crate::params::{Param, ParamKind, Params};
use crate::{BuildInput, SwitchProgram, TablesNeed};
use mpsched_core::control::{ControlError, ControlListing, ProgramControl, RegisterInfo};
use mpsched_core::frame::MAX_PORTS;
use mpsched_core::packet::{proto, Ipv4, PacketMeta, PortId};
use mpsched_core::program::{Ctx, DropReason, FrameVerdict, Program, Verdict};
use mpsched_core::rng::{RandomSource, SeededRandom};
use mpsched_core::sched::ConfigError;
use mpsched_core::switch::SwitchConfig;
use mpsched_core::table::{Ipv4Lpm, ECMP_GROUP};
use mpsched_core::upf::{SteeringKind, UpfTable};
use mpsched_core::wire::{parse_frame, ETH_HDR_BYTES};
use std::collections::HashMap;

/// The registry entry.
pub static ATSSS: AtsssUpfProgram = AtsssUpfProgram;

/// The outage floor by default, ps.
pub const DEFAULT_OUTAGE_FLOOR_PS: u64 = super::DEFAULT_OUTAGE_FLOOR_PS;
/// The MTU by default: the largest IPv4 packet a port sends, bytes.
pub const DEFAULT_MTU: u64 = 1500;

const PARAMS: &[Param] = &[
    Param {
        name: "outage_floor",
        kind: ParamKind::Time,
        default: DEFAULT_OUTAGE_FLOOR_PS,
        min: 1_000_000_000,
        max: 10_000_000_000_000,
        power_of_two: false,
        // Whole microseconds: BMv2's clock counts them.
        multiple_of: 1_000_000,
        doc: "a path silent this long with packets in flight is down, at least (four target RTTs when longer); whole microseconds",
    },
    Param {
        name: "initial_cwnd",
        kind: ParamKind::Count,
        default: super::DEFAULT_INITIAL_CWND,
        min: registers::CMON_MIN_CWND as u64,
        max: registers::CMON_MAX_CWND as u64,
        power_of_two: false,
        multiple_of: 1,
        doc: "CMon's window estimate of each path at the start, packets",
    },
    Param {
        name: "mtu",
        kind: ParamKind::Bytes,
        default: DEFAULT_MTU,
        min: 128,
        max: 9000,
        power_of_two: false,
        multiple_of: 1,
        doc: "the largest outer IPv4 packet the UPF sends; a downlink packet larger once encapsulated (60 bytes more) is dropped",
    },
];

/// The UPF as the registry knows it.
pub struct AtsssUpfProgram;

impl SwitchProgram for AtsssUpfProgram {
    fn name(&self) -> &'static str {
        "atsss"
    }

    fn summary(&self) -> &'static str {
        "ATSSS UPF (Brisch, Kassler et al.): per-UE WRR / DWRR / RTTMon / CMon / 3GPP steering over the UE's paths, encapsulated for the tunnel daemon"
    }

    fn params(&self) -> &'static [Param] {
        PARAMS
    }

    fn tables_need(&self) -> TablesNeed {
        TablesNeed::ShortestPath
    }

    fn max_ports(&self) -> Option<usize> {
        Some(MAX_PORTS)
    }

    fn build(&self, input: &BuildInput<'_>) -> Result<Box<dyn Program>, ConfigError> {
        self.build_with_rng(input, Box::new(SeededRandom::new(input.seed)))
    }

    fn build_with_rng(
        &self,
        input: &BuildInput<'_>,
        rng: Box<dyn RandomSource>,
    ) -> Result<Box<dyn Program>, ConfigError> {
        crate::refuse_classifier(self.name(), input)?;
        let upf = Upf::new(input.tables, &UpfParams::from_params(input.params), rng)
            .map_err(|e| ConfigError(format!("node `{}`: {e}", input.node)))?;
        Ok(Box::new(upf))
    }

    fn ebpf_object(&self) -> Option<&'static str> {
        Some("atsss")
    }

    fn p4_program(&self) -> Option<&'static str> {
        Some("atsss")
    }
}

/// The UPF's parameters in base units.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct UpfParams {
    /// The outage floor, ps.
    pub outage_floor_ps: u64,
    /// CMon's initial window, packets.
    pub initial_cwnd: u16,
    /// The largest outer IPv4 packet, bytes.
    pub mtu: u32,
}

impl UpfParams {
    /// From checked parameters.
    pub fn from_params(p: &Params) -> UpfParams {
        UpfParams {
            outage_floor_ps: p.get("outage_floor"),
            initial_cwnd: p.get("initial_cwnd") as u16,
            mtu: p.get("mtu") as u32,
        }
    }

    /// The registers' shared settings.
    pub fn config(&self) -> Config {
        Config {
            outage_floor_ticks: scaled_ticks(self.outage_floor_ps / 1000),
            initial_cwnd: self.initial_cwnd,
        }
    }
}

impl Default for UpfParams {
    fn default() -> Self {
        UpfParams::from_params(&Params::defaults(PARAMS))
    }
}

/// The registers' kind of a UE table's kind (numbered alike: a test holds them so).
pub fn kind_of(k: SteeringKind) -> Kind {
    Kind::from_u8(k as u8).unwrap_or(Kind::Wrr)
}

/// Whether a UE of `kind` takes a random draw per packet: the weighted kinds.
#[inline]
pub fn uses_draw(kind: Kind) -> bool {
    matches!(kind, Kind::Wrr | Kind::Dwrr | Kind::RttMon | Kind::LoadBalancing)
}

/// One path of a UE as the control plane gave it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PathCfg {
    /// The UE's address on the path.
    pub addr: Ipv4,
    /// The UE path's UDP port.
    pub port: u16,
    /// The UPF's port towards it.
    pub egress_port: PortId,
}

/// One UE's row: the scheduler's registers, the tunnel's counters, the control plane's
/// addresses (`struct atsss_slot` in `atsss.h`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct UeSlot {
    /// The scheduler's registers.
    pub regs: UeReg,
    /// The UE's own address.
    pub ip: Ipv4,
    /// Its paths (the first `regs.n_paths`).
    pub paths: [PathCfg; MAX_PATHS],
    /// The next downlink packet's number, one counter across the UE's paths, from 0.
    pub packet_number: u64,
    /// The next downlink packet's tunnel sequence number, from 0.
    pub tunnel_seq: u32,
}

/// Counters, named `atsss.*` (and the routing's `no_route`, `ttl_expired`, `local`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct UpfCounters {
    /// Downlink packets encapsulated and sent.
    pub encapsulated: u64,
    /// Of those, per path.
    pub path_pkts: [u64; MAX_PATHS],
    /// Acknowledgements the registers took.
    pub acks: u64,
    /// Acknowledgements the registers refused (stale, or beyond what was sent).
    pub acks_ignored: u64,
    /// Uplink packets decapsulated.
    pub uplink: u64,
    /// Keepalives from UEs, consumed.
    pub keepalives: u64,
    /// Tunnel frames the UPF could not read.
    pub malformed: u64,
    /// Tunnel frames from an address no UE has.
    pub unknown_ue: u64,
    /// Uplink packets whose inner source is not their UE's address.
    pub spoofed: u64,
    /// Downlink packets too large once encapsulated.
    pub too_big: u64,
    /// Routed packets without a route.
    pub no_route: u64,
    /// Routed packets whose TTL ran out.
    pub ttl_expired: u64,
    /// Frames to the UPF's address that are not tunnel frames (its stack's).
    pub local: u64,
}

/// The UPF program.
pub struct Upf {
    own_ip: Ipv4,
    epoch: u64,
    mtu: u32,
    cfg: Config,
    lpm: Ipv4Lpm,
    ues: Vec<UeSlot>,
    by_ip: HashMap<Ipv4, u32>,
    /// Path address -> UE index << 2 | path.
    by_path: HashMap<Ipv4, u32>,
    rng: Box<dyn RandomSource>,
    counters: UpfCounters,
}

/// The routing table of `tables`, refusing what the UPF does not route by (equal-cost groups,
/// a splitting or confluence role).
fn routes_of(tables: &SwitchConfig) -> Result<Ipv4Lpm, String> {
    if !tables.splits.is_empty() || !tables.confluences.is_empty() {
        return Err("atsss: the node is a splitting or confluence point of a [[split]], which only the `multipath` program runs".into());
    }
    let mut lpm = Ipv4Lpm::new();
    for r in &tables.routes {
        if r.port & ECMP_GROUP != 0 || usize::from(r.port) >= MAX_PORTS {
            return Err(format!(
                "atsss: a route to port {:#x}; the UPF routes by one shortest path to ports below {MAX_PORTS}",
                r.port
            ));
        }
        lpm.insert(*r);
    }
    Ok(lpm)
}

/// The registers and rows of a UE table at their start.
pub fn slots_of(t: &UpfTable, cfg: &Config) -> Vec<UeSlot> {
    t.ues
        .iter()
        .map(|ue| {
            let mut paths = [PathCfg::default(); MAX_PATHS];
            for (p, q) in paths.iter_mut().zip(&ue.paths) {
                *p = PathCfg {
                    addr: q.addr,
                    port: q.port,
                    egress_port: q.egress_port,
                };
            }
            UeSlot {
                regs: registers::new_ue(cfg, kind_of(ue.kind), ue.paths.len() as u8, ue.weight),
                ip: ue.ip,
                paths,
                packet_number: 0,
                tunnel_seq: 0,
            }
        })
        .collect()
}

/// Whether [`registers::on_ack`] takes an acknowledgement of `acked` on a path in state `p`:
/// not older than one already seen, not beyond what was sent (its two first tests).
#[inline]
pub fn ack_applies(p: &registers::PathReg, acked: u32) -> bool {
    (acked.wrapping_sub(p.seq_acked) as i32) >= 0 && (acked.wrapping_sub(p.seq_sent) as i32) <= 0
}

/// What an acknowledgement body received at `now_us` tells the registers: packets are
/// numbered from 1 (the register's `seq_sent` after the send), so `highest_seq - received` of
/// those up to the highest never arrived.
pub fn ack_regs(now_us: u32, a: &AckBody) -> AckRegs {
    AckRegs {
        acked: a.highest_seq,
        lost: a.highest_seq.wrapping_sub(a.received),
        rtt: scaled_ticks(u64::from(frame::rtt_us(now_us, a)) * 1000),
    }
}

/// TTL - 1 of the IPv4 header at `ip`, its checksum updated as RFC 1624 says (as
/// `decrement_ttl` in `bpf/mps_common.h`).
fn decrement_ttl(ip: &mut [u8]) {
    let check = u16::from_be_bytes([ip[10], ip[11]]);
    let mut c = u32::from(!check) + 0xfeff;
    c = (c & 0xffff) + (c >> 16);
    c = (c & 0xffff) + (c >> 16);
    ip[10..12].copy_from_slice(&(!(c as u16)).to_be_bytes());
    ip[8] -= 1;
}

fn be16(b: &[u8], at: usize) -> u16 {
    u16::from_be_bytes([b[at], b[at + 1]])
}

/// Counters by the names the vectors and results give them, in one order for every backend.
pub const COUNTER_NAMES: [&str; 16] = [
    "atsss.encapsulated",
    "atsss.path0_pkts",
    "atsss.path1_pkts",
    "atsss.path2_pkts",
    "atsss.path3_pkts",
    "atsss.acks",
    "atsss.acks_ignored",
    "atsss.uplink",
    "atsss.keepalives",
    "atsss.malformed",
    "atsss.unknown_ue",
    "atsss.spoofed",
    "atsss.too_big",
    "no_route",
    "ttl_expired",
    "local",
];

/// A UE's registers by the names the control channel and the vectors give them
/// (`atsss.ue<i>.<name>`): the UE's own, then each path's as `path<j>.<name>`.
pub const UE_FIELDS: [&str; 5] = ["weight", "last_change", "probe_backoff", "packet_number", "tunnel_seq"];
/// A path's registers (`atsss.ue<i>.path<j>.<name>`).
pub const PATH_FIELDS: [&str; 10] = [
    "cur_rtt",
    "min_rtt",
    "seq_sent",
    "seq_acked",
    "last_heard",
    "lost",
    "last_cut",
    "cwnd",
    "acks_in_round",
    "flags",
];

/// Register `field` of a UE's row.
pub fn ue_field(s: &UeSlot, field: &str) -> Option<u64> {
    Some(match field {
        "weight" => u64::from(s.regs.weight),
        "last_change" => u64::from(s.regs.last_change),
        "probe_backoff" => u64::from(s.regs.probe_backoff),
        "packet_number" => s.packet_number,
        "tunnel_seq" => u64::from(s.tunnel_seq),
        "kind" => u64::from(s.regs.kind),
        "n_paths" => u64::from(s.regs.n_paths),
        _ => return None,
    })
}

/// Register `field` of a path's registers.
pub fn path_field(p: &registers::PathReg, field: &str) -> Option<u64> {
    Some(u64::from(match field {
        "cur_rtt" => p.cur_rtt,
        "min_rtt" => p.min_rtt,
        "seq_sent" => p.seq_sent,
        "seq_acked" => p.seq_acked,
        "last_heard" => p.last_heard,
        "lost" => p.lost,
        "last_cut" => p.last_cut,
        "cwnd" => u32::from(p.cwnd),
        "acks_in_round" => u32::from(p.acks_in_round),
        "flags" => u32::from(p.flags),
        _ => return None,
    }))
}

/// A register name `atsss.ue<i>.<rest>` split into (i, rest).
pub fn split_ue_name(name: &str) -> Option<(usize, &str)> {
    let rest = name.strip_prefix("atsss.ue")?;
    let (i, field) = rest.split_once('.')?;
    Some((i.parse().ok()?, field))
}

/// Every register of every UE in `ues` by name (`atsss.ue<i>.weight`, `atsss.ue<i>.path<j>.cwnd`,
/// ...; each path a UE has): what the vectors compare.
pub fn ue_registers(ues: &[UeSlot]) -> Vec<(String, u64)> {
    let mut out = Vec::new();
    for (i, s) in ues.iter().enumerate() {
        for f in UE_FIELDS {
            out.push((format!("atsss.ue{i}.{f}"), ue_field(s, f).unwrap_or(0)));
        }
        for (j, p) in s.regs.paths.iter().enumerate().take(usize::from(s.regs.n_paths)) {
            for f in PATH_FIELDS {
                out.push((format!("atsss.ue{i}.path{j}.{f}"), path_field(p, f).unwrap_or(0)));
            }
        }
    }
    out
}

impl Upf {
    /// Build from the control plane's tables (routes, the UE table) and the parameters; the
    /// weighted kinds draw from `rng`.
    pub fn new(tables: &SwitchConfig, p: &UpfParams, rng: Box<dyn RandomSource>) -> Result<Upf, String> {
        let t = &tables.upf;
        t.check(tables.own_ip, MAX_PORTS)?;
        let lpm = routes_of(tables)?;
        let cfg = p.config();
        let ues = slots_of(t, &cfg);
        let mut by_ip = HashMap::with_capacity(ues.len());
        let mut by_path = HashMap::with_capacity(ues.len() * 2);
        for (i, ue) in t.ues.iter().enumerate() {
            by_ip.insert(ue.ip, i as u32);
            for (j, q) in ue.paths.iter().enumerate() {
                by_path.insert(q.addr, (i as u32) << 2 | j as u32);
            }
        }
        Ok(Upf {
            own_ip: tables.own_ip,
            epoch: t.epoch,
            mtu: p.mtu,
            cfg,
            lpm,
            ues,
            by_ip,
            by_path,
            rng,
            counters: UpfCounters::default(),
        })
    }

    /// The counters.
    pub fn counters_now(&self) -> UpfCounters {
        self.counters
    }

    /// The UEs' rows.
    pub fn ues(&self) -> &[UeSlot] {
        &self.ues
    }

    /// The downlink decision for UE `u`'s next packet of `inner_len` bytes (its IPv4 total
    /// length) and TOS byte at `now_ns`: the outer headers it leaves with and the egress port,
    /// or why it is dropped. Moves the registers and counters.
    pub fn downlink(
        &mut self,
        u: usize,
        inner_len: usize,
        tos: u8,
        now_ns: u64,
    ) -> Result<(Encap, PortId), DropReason> {
        if inner_len + ENCAP_BYTES > self.mtu as usize {
            self.counters.too_big += 1;
            return Err(DropReason::TooBig);
        }
        let slot = &mut self.ues[u];
        let draw = if uses_draw(registers::kind_of(&slot.regs)) {
            self.rng.next_u32()
        } else {
            0
        };
        let now = scaled_ticks(now_ns);
        let path = registers::select(&mut slot.regs, &self.cfg, now, draw);
        let path_seq = registers::on_send(&mut slot.regs, path, now);
        let packet_number = slot.packet_number;
        let tunnel_seq = slot.tunnel_seq;
        slot.packet_number = slot.packet_number.wrapping_add(1);
        slot.tunnel_seq = slot.tunnel_seq.wrapping_add(1);
        let p = slot.paths[path];
        self.counters.encapsulated += 1;
        self.counters.path_pkts[path] += 1;
        Ok((
            Encap {
                src: self.own_ip,
                dst: p.addr,
                dst_port: p.port,
                tos,
                header: Header {
                    kind: KIND_DATA,
                    path: path as u8,
                    epoch: self.epoch,
                    packet_number,
                },
                path_seq,
                tunnel_seq,
                sent_us: frame::ns_to_us(now_ns) as u32,
            },
            p.egress_port,
        ))
    }

    /// An acknowledgement of UE `u`'s path `path` received at `now_ns`.
    pub fn acknowledge(&mut self, u: usize, path: usize, a: &AckBody, now_ns: u64) {
        let regs = ack_regs(frame::ns_to_us(now_ns) as u32, a);
        let slot = &mut self.ues[u];
        if ack_applies(&slot.regs.paths[path], regs.acked) {
            self.counters.acks += 1;
        } else {
            self.counters.acks_ignored += 1;
        }
        registers::on_ack(&mut slot.regs, &self.cfg, path, &regs, scaled_ticks(now_ns));
    }

    fn malformed(&mut self) -> FrameVerdict {
        self.counters.malformed += 1;
        FrameVerdict::Drop("malformed")
    }

    /// A frame (checked by `wire::parse_frame`, which read `meta`) at `now_ns`.
    pub fn frame(&mut self, meta: &PacketMeta, frame: &mut Vec<u8>, now_ns: u64) -> FrameVerdict {
        if meta.dst_ip == self.own_ip {
            if meta.proto == proto::UDP && meta.dst_port == UPF_PORT {
                return self.tunnel_frame(meta.src_ip, frame, now_ns);
            }
            self.counters.local += 1;
            return FrameVerdict::ToStack;
        }
        if let Some(&u) = self.by_ip.get(&meta.dst_ip) {
            let ip = &frame[ETH_HDR_BYTES..];
            let inner_len = usize::from(be16(ip, 2));
            return match self.downlink(u as usize, inner_len, ip[1], now_ns) {
                Ok((e, port)) => {
                    let mut out = Vec::with_capacity(ETH_HDR_BYTES + ENCAP_BYTES + inner_len);
                    frame::encapsulate(&e, &frame[ETH_HDR_BYTES..ETH_HDR_BYTES + inner_len], &mut out);
                    *frame = out;
                    FrameVerdict::Forward(port)
                }
                Err(_) => FrameVerdict::Drop("too_big"),
            };
        }
        self.route_frame(meta, frame)
    }

    /// A frame routed by the table: TTL, longest-prefix match, TTL - 1.
    fn route_frame(&mut self, meta: &PacketMeta, frame: &mut [u8]) -> FrameVerdict {
        if meta.ttl <= 1 {
            self.counters.ttl_expired += 1;
            return FrameVerdict::Drop("ttl_expired");
        }
        match self.lpm.lookup(meta.dst_ip) {
            Some(port) => {
                decrement_ttl(&mut frame[ETH_HDR_BYTES..]);
                FrameVerdict::Forward(port)
            }
            None => {
                self.counters.no_route += 1;
                FrameVerdict::Drop("no_route")
            }
        }
    }

    /// A frame to the UPF's tunnel port from `src`.
    fn tunnel_frame(&mut self, src: Ipv4, frame: &mut Vec<u8>, now_ns: u64) -> FrameVerdict {
        let ip = &frame[ETH_HDR_BYTES..];
        let tot = usize::from(be16(ip, 2));
        // No options, not a fragment (DF may be set), the UDP length the IPv4 one less 20.
        if ip[0] & 0x0f != 5 || be16(ip, 6) & 0x3fff != 0 || usize::from(be16(ip, 24)) + 20 != tot {
            return self.malformed();
        }
        let payload = &frame[BODY_AT - HEADER_BYTES..ETH_HDR_BYTES + tot];
        let Some(h) = Header::parse(payload).filter(|h| (KIND_DATA..=KIND_KEEPALIVE).contains(&h.kind)) else {
            return self.malformed();
        };
        let Some(&up) = self.by_path.get(&src) else {
            self.counters.unknown_ue += 1;
            return FrameVerdict::Drop("unknown_ue");
        };
        let (u, path) = ((up >> 2) as usize, (up & 3) as usize);
        if usize::from(h.path) != path {
            return self.malformed();
        }
        let body = &payload[HEADER_BYTES..];
        match h.kind {
            KIND_ACK => {
                let Some(a) = AckBody::parse(body).filter(|_| body.len() >= ACK_BYTES) else {
                    return self.malformed();
                };
                self.acknowledge(u, path, &a, now_ns);
                FrameVerdict::Consume
            }
            KIND_KEEPALIVE => {
                if body.len() < KEEPALIVE_BYTES {
                    return self.malformed();
                }
                self.counters.keepalives += 1;
                FrameVerdict::Consume
            }
            _ => self.uplink(u, frame, tot),
        }
    }

    /// Uplink data of UE `u` in `frame` (outer IPv4 total length `tot`): decapsulated and routed.
    fn uplink(&mut self, u: usize, frame: &mut Vec<u8>, tot: usize) -> FrameVerdict {
        if tot < ENCAP_BYTES + 20 {
            return self.malformed();
        }
        let inner = &frame[BODY_AT + DATA_BYTES..ETH_HDR_BYTES + tot];
        let ok = inner.len() >= 20
            && inner[0] >> 4 == 4
            && (inner[0] & 0x0f) >= 5
            && usize::from(inner[0] & 0x0f) * 4 <= inner.len()
            && usize::from(be16(inner, 2)) == inner.len();
        if !ok {
            return self.malformed();
        }
        if u32::from_be_bytes([inner[12], inner[13], inner[14], inner[15]]) != self.ues[u].ip {
            self.counters.spoofed += 1;
            return FrameVerdict::Drop("spoofed");
        }
        self.counters.uplink += 1;
        let mut out = Vec::with_capacity(ETH_HDR_BYTES + inner.len());
        out.extend_from_slice(&frame[..ETH_HDR_BYTES]);
        out.extend_from_slice(inner);
        *frame = out;
        match parse_frame(frame, 0) {
            Ok(m) => self.route_frame(&m, frame),
            Err(_) => self.malformed(),
        }
    }
}

/// What the control channel lists of a UPF of `n_ues` UEs: registers as arrays indexed by UE
/// (`atsss.weight`, ...) and by UE x 4 + path (`atsss.path.cwnd`, ...); each entry is also
/// readable as `atsss.ue<i>.<name>` and `atsss.ue<i>.path<j>.<name>` at index 0. Only the
/// weight is writable. Every backend lists the same.
pub fn listing(n_ues: usize) -> ControlListing {
    let mut registers: Vec<RegisterInfo> = UE_FIELDS
        .iter()
        .chain(&["kind", "n_paths"])
        .map(|f| RegisterInfo {
            name: format!("atsss.{f}"),
            size: n_ues,
            writable: *f == "weight",
        })
        .collect();
    registers.extend(PATH_FIELDS.iter().map(|f| RegisterInfo {
        name: format!("atsss.path.{f}"),
        size: n_ues * MAX_PATHS,
        writable: false,
    }));
    ControlListing {
        registers,
        tables: Vec::new(),
    }
}

/// The UE and its register (`weight`, `path1.cwnd`) that a control-channel name and index
/// address, among `n_ues` UEs.
pub fn locate(name: &str, index: usize, n_ues: usize) -> Result<(usize, String), ControlError> {
    let (u, rest) = if let Some((u, rest)) = split_ue_name(name) {
        if index != 0 {
            return Err(ControlError::NoIndex {
                register: name.to_string(),
                size: 1,
                index,
            });
        }
        (u, rest.to_string())
    } else if let Some(f) = name.strip_prefix("atsss.path.") {
        (index / MAX_PATHS, format!("path{}.{f}", index % MAX_PATHS))
    } else if let Some(f) = name.strip_prefix("atsss.") {
        (index, f.to_string())
    } else {
        return Err(ControlError::NoRegister(name.to_string()));
    };
    if u >= n_ues {
        return Err(ControlError::NoIndex {
            register: name.to_string(),
            size: n_ues,
            index: u,
        });
    }
    Ok((u, rest))
}

/// Register `rest` (`weight`, `path1.cwnd`) of a UE's row, None if there is none by that name.
pub fn slot_register(s: &UeSlot, rest: &str) -> Option<u64> {
    if let Some(v) = ue_field(s, rest) {
        return Some(v);
    }
    let (path, field) = rest.strip_prefix("path")?.split_once('.')?;
    let j: usize = path.parse().ok()?;
    path_field(s.regs.paths.get(j)?, field)
}

/// The weight `value` written to a UE's row, or why not: only the weight is writable, within
/// its kind's register (RTTMon 0 to 62, the others 0 to 255).
pub fn check_write(s: &UeSlot, rest: &str, value: u64, name: &str) -> Result<u8, ControlError> {
    if rest != "weight" {
        return match slot_register(s, rest) {
            Some(_) => Err(ControlError::ReadOnly(name.to_string())),
            None => Err(ControlError::NoRegister(name.to_string())),
        };
    }
    let max = if registers::kind_of(&s.regs) == Kind::RttMon {
        registers::RTTMON_MAX_WEIGHT
    } else {
        registers::WRR_MAX_WEIGHT
    };
    if value > u64::from(max) {
        return Err(ControlError::BadEntry {
            table: name.to_string(),
            reason: format!("a weight of 0 to {max}, got {value}"),
        });
    }
    Ok(value as u8)
}

impl ProgramControl for Upf {
    /// [`listing`].
    fn control_listing(&self) -> ControlListing {
        listing(self.ues.len())
    }

    fn read_register(&self, name: &str, index: usize) -> Result<u64, ControlError> {
        let (u, rest) = locate(name, index, self.ues.len())?;
        slot_register(&self.ues[u], &rest).ok_or_else(|| ControlError::NoRegister(name.to_string()))
    }

    fn write_register(&mut self, name: &str, index: usize, value: u64) -> Result<(), ControlError> {
        let (u, rest) = locate(name, index, self.ues.len())?;
        self.ues[u].regs.weight = check_write(&self.ues[u], &rest, value, name)?;
        Ok(())
    }
}

impl Program for Upf {
    fn handles_frames(&self) -> bool {
        true
    }

    fn ingress_frame(&mut self, meta: &PacketMeta, frame: &mut Vec<u8>, ctx: &mut Ctx) -> Option<FrameVerdict> {
        Some(self.frame(meta, frame, ctx.now_ps() / 1000))
    }

    /// The metadata view, for a runtime without frames: a downlink packet moves the
    /// registers as on a frame and leaves with the outer addresses, ports, TTL 64 and 60 bytes
    /// more; tunnel frames carry what metadata cannot show, so they are the node's (`local`);
    /// the rest is routed.
    fn ingress(&mut self, pkt: &mut PacketMeta, ctx: &mut Ctx) -> Verdict {
        let now_ns = ctx.now_ps() / 1000;
        if pkt.dst_ip == self.own_ip {
            self.counters.local += 1;
            return Verdict::Consume;
        }
        if let Some(&u) = self.by_ip.get(&pkt.dst_ip) {
            let inner_len = (pkt.wire_len_bytes as usize).saturating_sub(ETH_HDR_BYTES);
            let tos = pkt.dscp << 2 | pkt.ecn.bits();
            return match self.downlink(u as usize, inner_len, tos, now_ns) {
                Ok((e, port)) => {
                    pkt.src_ip = e.src;
                    pkt.dst_ip = e.dst;
                    pkt.proto = proto::UDP;
                    pkt.src_port = UPF_PORT;
                    pkt.dst_port = e.dst_port;
                    pkt.ttl = frame::OUTER_TTL;
                    pkt.wire_len_bytes += ENCAP_BYTES as u32;
                    pkt.ext = mpsched_core::packet::HeaderExt::None;
                    Verdict::Forward(port)
                }
                Err(r) => Verdict::Drop(r),
            };
        }
        if pkt.ttl <= 1 {
            self.counters.ttl_expired += 1;
            return Verdict::Drop(DropReason::TtlExpired);
        }
        match self.lpm.lookup(pkt.dst_ip) {
            Some(port) => {
                pkt.ttl -= 1;
                Verdict::Forward(port)
            }
            None => {
                self.counters.no_route += 1;
                Verdict::Drop(DropReason::NoRoute)
            }
        }
    }

    fn counters(&self) -> Vec<(String, u64)> {
        let c = &self.counters;
        let values = [
            c.encapsulated,
            c.path_pkts[0],
            c.path_pkts[1],
            c.path_pkts[2],
            c.path_pkts[3],
            c.acks,
            c.acks_ignored,
            c.uplink,
            c.keepalives,
            c.malformed,
            c.unknown_ue,
            c.spoofed,
            c.too_big,
            c.no_route,
            c.ttl_expired,
            c.local,
        ];
        COUNTER_NAMES
            .iter()
            .zip(values)
            .map(|(k, v)| (k.to_string(), v))
            .collect()
    }

    fn vector_registers(&self) -> Vec<(String, u64)> {
        ue_registers(&self.ues)
    }

    fn update_routes(&mut self, config: &SwitchConfig) -> Result<(), ConfigError> {
        self.lpm = routes_of(config).map_err(ConfigError)?;
        Ok(())
    }
}

#[cfg(test)]
mod tests;
