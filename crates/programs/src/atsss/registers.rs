//! The ATSSS schedulers' registers and their per-packet arithmetic, written once as the
//! smartNIC, eBPF and P4 programs do it: integers only, no division, no loops over state that
//! is not bounded by [`MAX_PATHS`], one row of registers per user equipment (UE).
//!
//! A UPF schedules each UE's downlink packets over the UE's paths: path 0 is the **preferred**
//! path (WiFi: cheap, its capacity unpredictable), path 1 the **secondary** (cellular), further
//! paths (CMon, priority, smallest delay) in decreasing preference. Everything a scheduler
//! knows of a path it learns from the tunnel's acknowledgements: [`on_ack`] writes the path's
//! registers, [`select`] reads them and picks the path of the next packet, [`on_send`] counts
//! it. Time is the slides' shortened timestamp ([`scaled_ticks`]), about 116.5 µs a tick.
//!
//! Every function here is what `atsss.bpf.c` and `atsss.p4` do, step for step; the conformance
//! vectors hold them to it.

/// Most paths per UE.
pub const MAX_PATHS: usize = 4;
/// The preferred path's index.
pub const PREFERRED: usize = 0;
/// The highest RTTMon weight (the slides' 6-bit register stops at 62).
pub const RTTMON_MAX_WEIGHT: u8 = 62;
/// The highest WRR / DWRR weight (an 8-bit register).
pub const WRR_MAX_WEIGHT: u8 = 255;
/// CMon's smallest window, packets.
pub const CMON_MIN_CWND: u16 = 2;
/// CMon's largest window, packets.
pub const CMON_MAX_CWND: u16 = 4096;

/// Most doublings of the probe interval while the preferred path is down: probes at least
/// every 16 outage floors (320 ms by default), so a path back from an outage is seen within it.
pub const MAX_PROBE_BACKOFF: u8 = 4;

/// `PathReg::flags`: the path has an RTT sample.
pub const PATH_HAS_RTT: u16 = 1;
/// `PathReg::flags`: CMon's window is in slow start (one more per acknowledgement) until its
/// first cut.
pub const PATH_SLOW_START: u16 = 2;

/// The registers of one path of one UE (40 bytes, `struct atsss_path` in `atsss.h`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[repr(C)]
pub struct PathReg {
    /// Latest RTT sample, ticks.
    pub cur_rtt: u32,
    /// Smallest RTT sample, ticks (meaningful with [`PATH_HAS_RTT`]).
    pub min_rtt: u32,
    /// Number of the last packet sent on the path (wrapping).
    pub seq_sent: u32,
    /// Number of the last packet the UE acknowledged on the path (wrapping).
    pub seq_acked: u32,
    /// When the path was last heard from: its last acknowledgement, or the send of a packet
    /// when nothing was in flight (so that silence is measured from the first unanswered
    /// packet), ticks.
    pub last_heard: u32,
    /// Packets the UE reported lost on the path, cumulative (highest + 1 - received).
    pub lost: u32,
    /// When CMon last cut the window, ticks.
    pub last_cut: u32,
    /// CMon's window estimate, packets.
    pub cwnd: u16,
    /// Acknowledgements since CMon's window last grew.
    pub acks_in_round: u16,
    /// [`PATH_HAS_RTT`], [`PATH_SLOW_START`].
    pub flags: u16,
    /// Padding (zero).
    pub pad: [u16; 3],
}

/// The registers of one UE (176 bytes, `struct atsss_ue` in `atsss.h`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[repr(C)]
pub struct UeReg {
    /// The preferred path's weight: WRR and DWRR out of 255, RTTMon out of 62.
    pub weight: u8,
    /// Paths the UE has (1 to [`MAX_PATHS`]).
    pub n_paths: u8,
    /// Its scheduler ([`Kind`] as a number): the steering mode is the UE's.
    pub kind: u8,
    /// Probes sent to the preferred path since it went down unanswered, at most
    /// [`MAX_PROBE_BACKOFF`]: each doubles the interval to the next.
    pub probe_backoff: u8,
    /// RTTMon: when the weight last moved (the slides' `lastScheduling`); CMon and the
    /// steering modes: when the preferred path was last probed; ticks.
    pub last_change: u32,
    /// Padding (zero).
    pub pad2: [u32; 2],
    /// Per path.
    pub paths: [PathReg; MAX_PATHS],
}

/// Which scheduler a UE's packets go through.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum Kind {
    /// Static weighted round robin: a draw against the 8-bit weight.
    Wrr = 0,
    /// WRR whose weight moves with the preferred path's acknowledgements.
    Dwrr = 1,
    /// RTT monitoring: the weight steps once per target RTT.
    RttMon = 2,
    /// Congestion monitoring: per path window, RTT target, probing and outage detection.
    CMon = 3,
    /// 3GPP Active-Standby: the active path while it is up, else the standby.
    ActiveStandby = 4,
    /// 3GPP Smallest Delay: the up path with the smallest RTT.
    SmallestDelay = 5,
    /// 3GPP Load-Balancing with a fixed share (the WRR draw).
    LoadBalancing = 6,
    /// 3GPP Priority-based: the highest-priority path until it is congested or down.
    Priority = 7,
}

impl Kind {
    /// Every kind, in register order.
    pub const ALL: [Kind; 8] = [
        Kind::Wrr,
        Kind::Dwrr,
        Kind::RttMon,
        Kind::CMon,
        Kind::ActiveStandby,
        Kind::SmallestDelay,
        Kind::LoadBalancing,
        Kind::Priority,
    ];

    /// The kind numbered `v` (as `atsss.h` numbers them).
    pub fn from_u8(v: u8) -> Option<Kind> {
        Kind::ALL.get(usize::from(v)).copied()
    }
}

/// Settings shared by a UPF's UEs (`struct atsss_config` in `atsss.h`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Config {
    /// A path silent this long with packets in flight is down, at least, ticks.
    pub outage_floor_ticks: u32,
    /// CMon's window at the start, packets.
    pub initial_cwnd: u16,
}

/// The slides' shortened timestamp of a clock in nanoseconds: `>> 15`, then three steps of
/// `x - (x >> k)` (k = 2, 2, 1), then the low 32 bits. One tick is about 2^15 / 0.28125 ns =
/// 116.5 µs; the 32-bit value wraps after about 5.8 days.
#[inline]
pub fn scaled_ticks(ts_ns: u64) -> u32 {
    let mut s = ts_ns >> 15;
    s -= s >> 2;
    s -= s >> 2;
    s -= s >> 1;
    s as u32
}

/// RTTMon's target RTT, ticks: `(min * 1500) >> 10` in 32-bit arithmetic, plus 2 when that
/// equals `min` (a minimum of 0, 1 or 2 ticks).
#[inline]
pub fn target_rtt(min_rtt: u32) -> u32 {
    let t = min_rtt.wrapping_mul(1500) >> 10;
    if t == min_rtt {
        t.wrapping_add(2)
    } else {
        t
    }
}

/// The path's target RTT, ticks: from its minimum, or from 0 before its first sample.
#[inline]
fn path_target(p: &PathReg) -> u32 {
    target_rtt(if p.flags & PATH_HAS_RTT != 0 { p.min_rtt } else { 0 })
}

/// Packets sent on `p` and not acknowledged.
#[inline]
pub fn in_flight(p: &PathReg) -> u32 {
    p.seq_sent.wrapping_sub(p.seq_acked)
}

/// How long a path may be silent with packets in flight before it counts as down, ticks:
/// four target RTTs, at least the floor.
#[inline]
pub fn dead_after(p: &PathReg, cfg: &Config) -> u32 {
    (path_target(p) << 2).max(cfg.outage_floor_ticks)
}

/// Whether `p` is up at `now`: nothing in flight, or heard from within [`dead_after`].
#[inline]
pub fn path_up(p: &PathReg, now: u32, cfg: &Config) -> bool {
    in_flight(p) == 0 || now.wrapping_sub(p.last_heard) <= dead_after(p, cfg)
}

/// Whether `p` is congested: an RTT sample above its target.
#[inline]
fn congested(p: &PathReg) -> bool {
    p.flags & PATH_HAS_RTT != 0 && p.cur_rtt > path_target(p)
}

/// A draw mapped to [0, 254]: the top 16 bits times 255, shifted down 16.
#[inline]
pub fn draw_255(draw: u32) -> u32 {
    ((draw >> 16) * 255) >> 16
}

/// A draw's top 6 bits, [0, 63]: RTTMon sends to the preferred path when this is at most its
/// weight, so weight w (0 to 62) is a share of (w + 1) / 64. The slides stop the 6-bit weight
/// at 62, not 63: neither path is ever left without packets, so both keep being measured (a
/// weight of 0 still sends 1/64 to the preferred path, whose RTT samples bring it back).
#[inline]
pub fn draw_64(draw: u32) -> u32 {
    draw >> 26
}

/// RTTMon's weight step, the slides' code: once `now` is past `last_change + target`, the
/// weight steps down when the
/// preferred path's RTT is above target and up otherwise, within 0..=62. Returns whether the
/// interval elapsed (and `last_change` became `now`).
#[inline]
pub fn rttmon_step(ue: &mut UeReg, now: u32) -> bool {
    let p = &ue.paths[PREFERRED];
    let min = if p.flags & PATH_HAS_RTT != 0 { p.min_rtt } else { 0 };
    let target = target_rtt(min);
    // The slides compare `now > last + target` unsigned; the difference is the same for every
    // clock that has not wrapped since `last` and keeps stepping after the 32-bit tick clock
    // wraps (every 5.8 days), where the sum would stall the step for a whole wrap.
    if now.wrapping_sub(ue.last_change) <= target {
        return false;
    }
    if p.cur_rtt > target && ue.weight > 0 {
        ue.weight -= 1;
    }
    if p.cur_rtt <= target && ue.weight < RTTMON_MAX_WEIGHT {
        ue.weight += 1;
    }
    ue.last_change = now;
    true
}

/// The UE's scheduler; an unknown number is static WRR (what a register left at zero is).
#[inline]
pub fn kind_of(ue: &UeReg) -> Kind {
    Kind::from_u8(ue.kind).unwrap_or(Kind::Wrr)
}

/// The path of a UE's next packet at `now`, with `draw` the packet's random draw (only the
/// weighted kinds use it). May write the UE's registers (RTTMon's step, the probe clock).
pub fn select(ue: &mut UeReg, cfg: &Config, now: u32, draw: u32) -> usize {
    let secondary = usize::from(ue.n_paths > 1);
    match kind_of(ue) {
        Kind::Wrr | Kind::Dwrr | Kind::LoadBalancing => {
            if draw_255(draw) < u32::from(ue.weight) {
                PREFERRED
            } else {
                secondary
            }
        }
        Kind::RttMon => {
            rttmon_step(ue, now);
            if draw_64(draw) <= u32::from(ue.weight) {
                PREFERRED
            } else {
                secondary
            }
        }
        Kind::CMon => {
            let choice = cmon_select(ue, cfg, now);
            probe_or(ue, cfg, now, choice)
        }
        Kind::ActiveStandby => {
            let choice = if path_up(&ue.paths[PREFERRED], now, cfg) {
                PREFERRED
            } else {
                secondary
            };
            probe_or(ue, cfg, now, choice)
        }
        Kind::SmallestDelay => {
            let choice = smallest_delay(ue, cfg, now);
            probe_or(ue, cfg, now, choice)
        }
        Kind::Priority => {
            let choice = first_path(ue, |p| path_up(p, now, cfg) && !congested(p));
            probe_or(ue, cfg, now, choice)
        }
    }
}

/// The measuring kinds (CMon and the steering modes) learn of a path only from its
/// acknowledgements, so a preferred path they left would never be seen to recover: while the
/// choice is another path, one packet per the preferred path's target RTT (the outage floor
/// while it is down) goes to it instead, as a probe (3GPP's performance measurement function
/// measures each access periodically for the same reason).
/// While the path is down, each unanswered probe doubles the interval to the next (a probe
/// into a dead path is a packet lost), up to 2^[`MAX_PROBE_BACKOFF`] floors.
#[inline]
fn probe_or(ue: &mut UeReg, cfg: &Config, now: u32, choice: usize) -> usize {
    if choice != PREFERRED && probe_due(ue, cfg, now) {
        ue.last_change = now;
        if !path_up(&ue.paths[PREFERRED], now, cfg) && ue.probe_backoff < MAX_PROBE_BACKOFF {
            ue.probe_backoff += 1;
        }
        return PREFERRED;
    }
    choice
}

/// The first path (in preference order) `usable` says yes to, else the last path.
#[inline]
fn first_path(ue: &UeReg, usable: impl Fn(&PathReg) -> bool) -> usize {
    let n = usize::from(ue.n_paths).clamp(1, MAX_PATHS);
    for (i, p) in ue.paths.iter().enumerate().take(n) {
        if usable(p) {
            return i;
        }
    }
    n - 1
}

/// 3GPP Smallest Delay: the up path with the smallest latest RTT; a path without a sample
/// counts as 0 (it is tried first, to measure it); ties to the more preferred path; the
/// preferred path when none is up.
fn smallest_delay(ue: &UeReg, cfg: &Config, now: u32) -> usize {
    let n = usize::from(ue.n_paths).clamp(1, MAX_PATHS);
    let mut best = PREFERRED;
    let mut best_rtt = u32::MAX;
    for (i, p) in ue.paths.iter().enumerate().take(n) {
        let rtt = if p.flags & PATH_HAS_RTT != 0 { p.cur_rtt } else { 0 };
        if path_up(p, now, cfg) && rtt < best_rtt {
            best = i;
            best_rtt = rtt;
        }
    }
    best
}

/// Whether CMon may send on `p` now: up, window open, RTT at or below target.
#[inline]
fn cmon_usable(p: &PathReg, cfg: &Config, now: u32) -> bool {
    path_up(p, now, cfg) && in_flight(p) < u32::from(p.cwnd) && !congested(p)
}

/// CMon: the most preferred usable path; with none usable, the up path whose window is least
/// overrun, else the last path ([`probe_or`] then probes the preferred path).
fn cmon_select(ue: &UeReg, cfg: &Config, now: u32) -> usize {
    let n = usize::from(ue.n_paths).clamp(1, MAX_PATHS);
    let mut choice = None;
    let mut excess_best = u32::MAX;
    let mut fallback = n - 1;
    for (i, p) in ue.paths.iter().enumerate().take(n) {
        if cmon_usable(p, cfg, now) {
            choice = Some(i);
            break;
        }
        let excess = in_flight(p).saturating_sub(u32::from(p.cwnd));
        if path_up(p, now, cfg) && excess < excess_best {
            excess_best = excess;
            fallback = i;
        }
    }
    choice.unwrap_or(fallback)
}

/// Whether the preferred path is due a probe: its interval (its target RTT, or the outage
/// floor while it is down) has passed since the last probe.
#[inline]
fn probe_due(ue: &UeReg, cfg: &Config, now: u32) -> bool {
    let p = &ue.paths[PREFERRED];
    let interval = if path_up(p, now, cfg) {
        path_target(p)
    } else {
        cfg.outage_floor_ticks << ue.probe_backoff.min(MAX_PROBE_BACKOFF)
    };
    now.wrapping_sub(ue.last_change) > interval
}

/// A packet went out on `path` at `now`: its number, and the silence clock when it is the
/// only one in flight.
#[inline]
pub fn on_send(ue: &mut UeReg, path: usize, now: u32) -> u32 {
    let p = &mut ue.paths[path];
    if in_flight(p) == 0 {
        p.last_heard = now;
    }
    p.seq_sent = p.seq_sent.wrapping_add(1);
    p.seq_sent
}

/// What an acknowledgement says of one path.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AckRegs {
    /// The highest packet number acknowledged (the register's own numbering).
    pub acked: u32,
    /// Packets lost on the path so far, cumulative.
    pub lost: u32,
    /// The RTT sample, ticks.
    pub rtt: u32,
}

/// An acknowledgement of `path` arrived at `now`: the RTT registers, in-flight, loss, and
/// the scheduler's reaction (DWRR's weight, CMon's window).
pub fn on_ack(ue: &mut UeReg, _cfg: &Config, path: usize, ack: &AckRegs, now: u32) {
    let kind = kind_of(ue);
    let p = &mut ue.paths[path];
    // An acknowledgement older than one already seen (reordered on the way back) is ignored.
    if (ack.acked.wrapping_sub(p.seq_acked) as i32) < 0 {
        return;
    }
    if (ack.acked.wrapping_sub(p.seq_sent) as i32) > 0 {
        return; // acknowledges what was never sent: not this run's state
    }
    p.seq_acked = ack.acked;
    p.last_heard = now;
    p.cur_rtt = ack.rtt;
    if p.flags & PATH_HAS_RTT == 0 || ack.rtt < p.min_rtt {
        p.min_rtt = ack.rtt;
    }
    p.flags |= PATH_HAS_RTT;
    let new_loss = ack.lost != p.lost;
    p.lost = ack.lost;
    if path == PREFERRED {
        ue.probe_backoff = 0;
    }
    match kind {
        Kind::Dwrr if path == PREFERRED => {
            ue.weight = if new_loss {
                ue.weight - ue.weight.min((ue.weight >> 3) + 1)
            } else {
                ue.weight.saturating_add(1)
            };
        }
        Kind::CMon => cmon_on_ack(p, now),
        _ => {}
    }
}

/// CMon's window, as TCP's grows and shrinks but by the RTT target instead of loss: for an
/// acknowledgement at or below target, one packet more (slow start, until the first cut) or
/// one more per window of them, while at least half the window is in flight (a window the
/// traffic does not use is not known to be safe, RFC 7661); for one above it, a quarter less,
/// at most once per target RTT.
fn cmon_on_ack(p: &mut PathReg, now: u32) {
    let target = path_target(p);
    if p.cur_rtt <= target {
        if in_flight(p) << 1 < u32::from(p.cwnd) {
            return;
        }
        if p.flags & PATH_SLOW_START != 0 {
            p.cwnd = (p.cwnd + 1).min(CMON_MAX_CWND);
            return;
        }
        p.acks_in_round = p.acks_in_round.saturating_add(1);
        if p.acks_in_round >= p.cwnd {
            p.acks_in_round = 0;
            p.cwnd = (p.cwnd + 1).min(CMON_MAX_CWND);
        }
    } else if now.wrapping_sub(p.last_cut) > target {
        p.flags &= !PATH_SLOW_START;
        p.last_cut = now;
        p.acks_in_round = 0;
        p.cwnd = (p.cwnd - (p.cwnd >> 2)).max(CMON_MIN_CWND);
    }
}

/// A UE's registers at the start: its scheduler, `n_paths` paths, the initial weight, CMon's
/// initial window.
pub fn new_ue(cfg: &Config, kind: Kind, n_paths: u8, weight: u8) -> UeReg {
    let mut ue = UeReg {
        weight,
        n_paths,
        kind: kind as u8,
        ..UeReg::default()
    };
    for p in &mut ue.paths {
        p.cwnd = cfg.initial_cwnd.clamp(CMON_MIN_CWND, CMON_MAX_CWND);
        p.flags = PATH_SLOW_START;
    }
    ue
}

/// Ticks of a duration in nanoseconds, rounded down (for parameters: `scaled_ticks` of the
/// duration, the same scaling as the clock).
pub fn ticks_of_ns(ns: u64) -> u32 {
    scaled_ticks(ns)
}

#[cfg(test)]
mod tests;
