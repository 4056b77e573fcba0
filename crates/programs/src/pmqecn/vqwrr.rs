//! Weighted round robin on strict-priority queues by virtual queues (PMQECN's Fig. 4, the
//! scheduler of its Table 1), registered as `vq-wrr`: what PMQECN's congestion point schedules
//! with, usable alone on any switch whose ports have strict-priority queues.
//!
//! A packet's virtual queue `v` is its DSCP class (`dscp >> 3`). Per output port and virtual
//! queue the program counts the packets it has placed at each priority level (`level_use`).
//! At enqueue a packet takes the highest level (from `levels - 1` down) where its virtual
//! queue has placed fewer than `weight[v]` packets, or level 0 when every level is full; at
//! dequeue the level it left (its queue) gets the slot back. Strict priority serves the top
//! level, which holds at most `weight[v]` packets of each virtual queue, so the virtual queues
//! take turns in proportion to their weights. A virtual queue holding `vq_capacity` packets at
//! a port drops the next (`vq.drops`): the program, not the port, bounds what a class queues.
//!
//! The accounting is exact only if the port's own queues never drop: each must hold every
//! virtual queue's capacity (`queue_pkts >= 8 x vq_capacity`), so a scenario sizes them so
//! (a packet the port dropped would hold its slot forever). `vq.accounting_errors` counts a
//! departure the counters did not expect and must stay 0.
//!
//! Forwarding is the `multipath` program's (routes, ECMP, splits), built from the same tables.

use crate::params::{Param, ParamKind, Params};
use crate::{BuildInput, SwitchProgram, TablesNeed};
use mpsched_core::control::{ControlError, ControlListing, ProgramControl, RegisterInfo};
use mpsched_core::packet::Ipv4;
use mpsched_core::packet::{PacketMeta, PortId};
use mpsched_core::program::{Ctx, DropReason, EgressVerdict, Program, QueueMeta, Verdict};
use mpsched_core::sched::ConfigError;

/// Virtual queues per port (one per DSCP class).
pub const VIRTUAL_QUEUES: usize = 8;
/// Most priority levels (a port's strict-priority queues).
pub const MAX_LEVELS: usize = 8;

/// The registry entry.
pub static VQ_WRR: VqWrrProgram = VqWrrProgram;

/// `vq-wrr`'s parameters (`pmqecn` declares them too).
pub const PARAMS: [Param; 3] = [
    Param {
        name: "weight",
        kind: ParamKind::Count,
        default: 3,
        min: 1,
        max: 1 << 16,
        power_of_two: false,
        multiple_of: 1,
        doc: "packets each virtual queue may place per priority level (every class's weight until a control plane writes `vq_weight`)",
    },
    Param {
        name: "vq_capacity",
        kind: ParamKind::Count,
        default: 64,
        min: 1,
        max: 1 << 20,
        power_of_two: false,
        multiple_of: 1,
        doc: "packets one virtual queue may hold at a port; the next is dropped",
    },
    Param {
        name: "levels",
        kind: ParamKind::Count,
        default: 8,
        min: 1,
        max: MAX_LEVELS as u64,
        power_of_two: false,
        multiple_of: 1,
        doc: "strict-priority queues used, highest index first (the ports need at least this many)",
    },
];

/// What the accounting needs of a port (for `vq-wrr` and `pmqecn`): room in every queue for
/// every class's capacity, so that the port never drops a packet the program counted (such a
/// slot would stay taken for good), and strict priority where it has several queues.
pub fn check_port_queues(
    params: &Params,
    queues: u8,
    queue_pkts: u32,
    strict_priority: bool,
) -> Result<(), (&'static str, String)> {
    let need = params.get("vq_capacity").saturating_mul(VIRTUAL_QUEUES as u64);
    if u64::from(queue_pkts) < need {
        return Err((
            "vq_capacity",
            format!(
                "its queues hold {queue_pkts} packets; each must hold {VIRTUAL_QUEUES} x vq_capacity = {need}, or a \
                 packet the port drops would hold its class's slot for good (raise queue_pkts or lower vq_capacity)"
            ),
        ));
    }
    if queues > 1 && !strict_priority {
        return Err((
            "levels",
            format!("its {queues} queues are not served by strict priority, which the levels need"),
        ));
    }
    Ok(())
}

/// Virtual-queue WRR as the registry knows it.
pub struct VqWrrProgram;

impl SwitchProgram for VqWrrProgram {
    fn name(&self) -> &'static str {
        "vq-wrr"
    }

    fn summary(&self) -> &'static str {
        "virtual-queue WRR on strict-priority queues (PMQECN, PeerJ CS 2024, Fig. 4)"
    }

    fn params(&self) -> &'static [Param] {
        &PARAMS
    }

    fn tables_need(&self) -> TablesNeed {
        TablesNeed::ScenarioRouting
    }

    fn check_port_queues(
        &self,
        params: &Params,
        queues: u8,
        queue_pkts: u32,
        strict_priority: bool,
    ) -> Result<(), (&'static str, String)> {
        check_port_queues(params, queues, queue_pkts, strict_priority)
    }

    fn runs_splits(&self) -> bool {
        true
    }

    fn classifies(&self) -> bool {
        true
    }

    fn build(&self, input: &BuildInput<'_>) -> Result<Box<dyn Program>, ConfigError> {
        let forwarding = crate::multipath::MULTIPATH.build(input)?;
        let mut vq = VqWrr::new(VqWrrConfig::from_params(input.params), forwarding);
        vq.set_own_ip(input.tables.own_ip);
        vq.set_port_queues(&input.tables.port_queues);
        Ok(Box::new(vq))
    }

    fn ebpf_object(&self) -> Option<&'static str> {
        Some("vqwrr")
    }

    fn p4_program(&self) -> Option<&'static str> {
        Some("vqwrr")
    }
}

/// The parameters in the program's units.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct VqWrrConfig {
    /// Packets per level per virtual queue, every class's weight at start.
    pub weight: u32,
    /// Packets a virtual queue may hold at a port.
    pub vq_capacity: u32,
    /// Priority levels used (1 to [`MAX_LEVELS`]).
    pub levels: u8,
}

impl VqWrrConfig {
    /// From checked parameters.
    pub fn from_params(p: &Params) -> VqWrrConfig {
        VqWrrConfig {
            weight: p.get("weight") as u32,
            vq_capacity: p.get("vq_capacity") as u32,
            levels: p.get("levels") as u8,
        }
    }
}

/// Counters, named `vq.*` in results.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct VqWrrCounters {
    /// Packets placed at the top level.
    pub top_level: u64,
    /// Packets placed below the top level (their virtual queue had used its weight above).
    pub downgraded: u64,
    /// Packets dropped because their virtual queue was full at the port.
    pub drops: u64,
    /// Departures the counters did not expect (a port dropped what the program counted).
    pub accounting_errors: u64,
}

/// One port's counters.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct PortState {
    /// Packets of each virtual queue waiting at the port.
    vq_len: [u32; VIRTUAL_QUEUES],
    /// Packets of each virtual queue waiting at each level.
    level_use: [[u32; MAX_LEVELS]; VIRTUAL_QUEUES],
}

/// What ingress did with a packet: its verdict, and the port it was routed to (also when its
/// virtual queue there was full and it is dropped).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Placed {
    /// Forward (at the level set in the context) or drop.
    pub verdict: Verdict,
    /// The port routing chose, if any.
    pub port: Option<PortId>,
}

/// The program: forwarding by `multipath`, queue levels by virtual-queue WRR.
pub struct VqWrr {
    forwarding: Box<dyn Program>,
    cfg: VqWrrConfig,
    weights: [u32; VIRTUAL_QUEUES],
    /// Levels of each port (empty: `cfg.levels` everywhere, as in unit tests).
    port_levels: Vec<u8>,
    /// The switch's address: packets it sends itself (feedback) are never placed or counted.
    own_ip: Option<Ipv4>,
    ports: Vec<PortState>,
    counters: VqWrrCounters,
}

/// A packet's virtual queue.
fn virtual_queue(pkt: &PacketMeta) -> usize {
    usize::from(pkt.dscp >> 3).min(VIRTUAL_QUEUES - 1)
}

impl VqWrr {
    /// Over `forwarding`, with every class's weight `cfg.weight`.
    pub fn new(cfg: VqWrrConfig, forwarding: Box<dyn Program>) -> VqWrr {
        VqWrr {
            forwarding,
            cfg,
            weights: [cfg.weight; VIRTUAL_QUEUES],
            port_levels: Vec::new(),
            own_ip: None,
            ports: Vec::new(),
            counters: VqWrrCounters::default(),
        }
    }

    /// The switch's own address: the packets it sends (a confluence point's or PMQECN's
    /// feedback) leave uncounted, as they were never placed.
    pub fn set_own_ip(&mut self, ip: Ipv4) {
        self.own_ip = Some(ip);
    }

    /// The output queues of each port, in port order (ports not listed have one): a port
    /// with fewer queues than `levels` uses the top of its own (a single-queue port, one).
    pub fn set_port_queues(&mut self, queues: &[u8]) {
        self.port_levels = queues.iter().map(|&q| q.clamp(1, self.cfg.levels)).collect();
    }

    /// Levels a packet may take at `port`.
    fn levels_at(&self, port: PortId) -> u8 {
        match self.port_levels.get(usize::from(port)) {
            Some(&l) => l,
            None if self.port_levels.is_empty() => self.cfg.levels,
            None => 1,
        }
    }

    /// The counters.
    pub fn counters_now(&self) -> VqWrrCounters {
        self.counters
    }

    /// Packets of virtual queue `v` waiting at `port`.
    pub fn vq_len(&self, port: PortId, v: usize) -> u32 {
        self.ports.get(usize::from(port)).map_or(0, |p| p.vq_len[v])
    }

    /// Ingress: route `pkt`, then place it at a level of its port (or drop it when its virtual
    /// queue is full there). The level is chosen at ingress, as a P4 program sets the priority
    /// before the traffic manager queues the packet.
    pub fn route_and_place(&mut self, pkt: &mut PacketMeta, ctx: &mut Ctx) -> Placed {
        let verdict = self.forwarding.ingress(pkt, ctx);
        let Verdict::Forward(port) = verdict else {
            return Placed { verdict, port: None };
        };
        match self.place(port, virtual_queue(pkt)) {
            Some(level) => {
                if level + 1 == self.levels_at(port) {
                    self.counters.top_level += 1;
                } else {
                    self.counters.downgraded += 1;
                }
                ctx.set_queue(level);
                Placed {
                    verdict,
                    port: Some(port),
                }
            }
            None => {
                self.counters.drops += 1;
                Placed {
                    verdict: Verdict::Drop(DropReason::QueueFull),
                    port: Some(port),
                }
            }
        }
    }

    /// Route `pkt` by the forwarding program alone, without a level (a packet the switch
    /// itself sends, such as PMQECN's feedback).
    pub fn route(&mut self, pkt: &mut PacketMeta, ctx: &mut Ctx) -> Verdict {
        self.forwarding.ingress(pkt, ctx)
    }

    /// The virtual queue of `pkt` (its DSCP class).
    pub fn virtual_queue_of(pkt: &PacketMeta) -> usize {
        virtual_queue(pkt)
    }

    /// The highest level a packet may take at `port`.
    pub fn top_level(&self, port: PortId) -> u8 {
        self.levels_at(port) - 1
    }

    fn port(&mut self, port: PortId) -> &mut PortState {
        let i = usize::from(port);
        if i >= self.ports.len() {
            // Ports are few (a switch's, below 2^16); they appear as packets first use them.
            self.ports.resize(i + 1, PortState::default());
        }
        &mut self.ports[i]
    }

    /// The level a packet of `v` takes at `port`, or None when `v` is full there.
    fn place(&mut self, port: PortId, v: usize) -> Option<u8> {
        let (levels, weight, cap) = (self.levels_at(port), self.weights[v], self.cfg.vq_capacity);
        let st = self.port(port);
        if st.vq_len[v] >= cap {
            return None;
        }
        let level = (0..levels)
            .rev()
            .find(|&l| st.level_use[v][usize::from(l)] < weight)
            .unwrap_or(0);
        st.vq_len[v] += 1;
        st.level_use[v][usize::from(level)] += 1;
        Some(level)
    }
}

impl Program for VqWrr {
    fn start(&mut self, ctx: &mut Ctx) {
        self.forwarding.start(ctx);
    }

    fn ingress(&mut self, pkt: &mut PacketMeta, ctx: &mut Ctx) -> Verdict {
        self.route_and_place(pkt, ctx).verdict
    }

    fn on_dequeue(&mut self, pkt: &mut PacketMeta, port: PortId, queue: QueueMeta, ctx: &mut Ctx) -> EgressVerdict {
        if self.own_ip == Some(pkt.src_ip) {
            return self.forwarding.on_dequeue(pkt, port, queue, ctx);
        }
        let v = virtual_queue(pkt);
        let level = usize::from(queue.queue).min(MAX_LEVELS - 1);
        let st = self.port(port);
        if st.vq_len[v] == 0 || st.level_use[v][level] == 0 {
            self.counters.accounting_errors += 1;
        } else {
            st.vq_len[v] -= 1;
            st.level_use[v][level] -= 1;
        }
        self.forwarding.on_dequeue(pkt, port, queue, ctx)
    }

    fn on_timer(&mut self, token: u64, ctx: &mut Ctx) {
        self.forwarding.on_timer(token, ctx);
    }

    fn registers(&self) -> Vec<(String, u64)> {
        self.forwarding.registers()
    }

    fn update_routes(&mut self, config: &mpsched_core::switch::SwitchConfig) -> Result<(), ConfigError> {
        self.forwarding.update_routes(config)
    }

    /// The registers the conformance vectors compare, named as the control listing reads
    /// them (`register_of`: `<register><index>`): every class's weight (`vq_weight<v>`), and for
    /// each port the program holds state for (`p` below the ports seen), every virtual queue's
    /// length (`vq_len<8p + v>`) and its packets at every level (`vq_level_use<64p + 8v + l>`).
    fn vector_registers(&self) -> Vec<(String, u64)> {
        let mut out: Vec<(String, u64)> = self
            .weights
            .iter()
            .enumerate()
            .map(|(v, &w)| (format!("vq_weight{v}"), u64::from(w)))
            .collect();
        for (p, st) in self.ports.iter().enumerate() {
            for v in 0..VIRTUAL_QUEUES {
                out.push((format!("vq_len{}", p * VIRTUAL_QUEUES + v), u64::from(st.vq_len[v])));
                for l in 0..MAX_LEVELS {
                    let i = (p * VIRTUAL_QUEUES + v) * MAX_LEVELS + l;
                    out.push((format!("vq_level_use{i}"), u64::from(st.level_use[v][l])));
                }
            }
        }
        out
    }

    fn counters(&self) -> Vec<(String, u64)> {
        let c = self.counters;
        let mut out = self.forwarding.counters();
        out.extend([
            ("vq.top_level".to_string(), c.top_level),
            ("vq.downgraded".to_string(), c.downgraded),
            ("vq.drops".to_string(), c.drops),
            ("vq.accounting_errors".to_string(), c.accounting_errors),
        ]);
        out
    }
}

impl ProgramControl for VqWrr {
    fn control_listing(&self) -> ControlListing {
        let mut l = self.forwarding.control_listing();
        l.registers.push(RegisterInfo {
            name: "vq_weight".to_string(),
            size: VIRTUAL_QUEUES,
            writable: true,
        });
        l.registers.push(RegisterInfo {
            name: "vq_len".to_string(),
            size: self.ports.len() * VIRTUAL_QUEUES,
            writable: false,
        });
        l.registers.push(RegisterInfo {
            name: "vq_level_use".to_string(),
            size: self.ports.len() * VIRTUAL_QUEUES * MAX_LEVELS,
            writable: false,
        });
        l
    }

    fn read_register(&self, name: &str, index: usize) -> Result<u64, ControlError> {
        let no_index = |size| ControlError::NoIndex {
            register: name.to_string(),
            size,
            index,
        };
        match name {
            "vq_weight" => self
                .weights
                .get(index)
                .map(|&w| u64::from(w))
                .ok_or(no_index(VIRTUAL_QUEUES)),
            "vq_len" => self
                .ports
                .get(index / VIRTUAL_QUEUES)
                .map(|p| u64::from(p.vq_len[index % VIRTUAL_QUEUES]))
                .ok_or(no_index(self.ports.len() * VIRTUAL_QUEUES)),
            "vq_level_use" => self
                .ports
                .get(index / (VIRTUAL_QUEUES * MAX_LEVELS))
                .map(|p| {
                    let at = index % (VIRTUAL_QUEUES * MAX_LEVELS);
                    u64::from(p.level_use[at / MAX_LEVELS][at % MAX_LEVELS])
                })
                .ok_or(no_index(self.ports.len() * VIRTUAL_QUEUES * MAX_LEVELS)),
            _ => self.forwarding.read_register(name, index),
        }
    }

    fn write_register(&mut self, name: &str, index: usize, value: u64) -> Result<(), ControlError> {
        if name != "vq_weight" {
            return self.forwarding.write_register(name, index, value);
        }
        let w = self.weights.get_mut(index).ok_or(ControlError::NoIndex {
            register: name.to_string(),
            size: VIRTUAL_QUEUES,
            index,
        })?;
        *w = u32::try_from(value)
            .ok()
            .filter(|&v| v >= 1)
            .ok_or_else(|| ControlError::BadEntry {
                table: name.to_string(),
                reason: format!("a weight is 1 to {} packets, got {value}", u32::MAX),
            })?;
        Ok(())
    }

    fn table_write(&mut self, table: &str, key: &[u64], action: &str, params: &[u64]) -> Result<(), ControlError> {
        self.forwarding.table_write(table, key, action, params)
    }

    fn table_delete(&mut self, table: &str, key: &[u64]) -> Result<(), ControlError> {
        self.forwarding.table_delete(table, key)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A program that forwards everything out of port 1.
    struct PortOne;
    impl ProgramControl for PortOne {}
    impl Program for PortOne {
        fn ingress(&mut self, _pkt: &mut PacketMeta, _ctx: &mut Ctx) -> Verdict {
            Verdict::Forward(1)
        }
    }

    fn program(weight: u32, cap: u32) -> VqWrr {
        let cfg = VqWrrConfig {
            weight,
            vq_capacity: cap,
            levels: 8,
        };
        VqWrr::new(cfg, Box::new(PortOne))
    }

    fn pkt(class: u8) -> PacketMeta {
        let mut m = PacketMeta::udp(0x0a00_0001, 0x0a00_0002, 1000, 2000, 1500);
        m.dscp = class << 3;
        m
    }

    fn enqueue(p: &mut VqWrr, class: u8) -> Option<u8> {
        let mut ctx = Ctx::default();
        match p.ingress(&mut pkt(class), &mut ctx) {
            Verdict::Forward(1) => ctx.queue(),
            _ => None,
        }
    }

    fn dequeue(p: &mut VqWrr, class: u8, level: u8) {
        let q = QueueMeta {
            queue: level,
            ..QueueMeta::default()
        };
        p.on_dequeue(&mut pkt(class), 1, q, &mut Ctx::default());
    }

    #[test]
    fn a_virtual_queue_fills_each_level_with_its_weight_then_steps_down() {
        let mut p = program(3, 100);
        let levels: Vec<u8> = (0..10).map(|_| enqueue(&mut p, 0).unwrap()).collect();
        assert_eq!(levels, [7, 7, 7, 6, 6, 6, 5, 5, 5, 4]);
        // Another class starts at the top: its own slots.
        assert_eq!(enqueue(&mut p, 2), Some(7));
        // A departure from the top level frees a slot there.
        dequeue(&mut p, 0, 7);
        assert_eq!(enqueue(&mut p, 0), Some(7));
        assert_eq!(p.vq_len(1, 0), 10);
    }

    #[test]
    fn strict_priority_over_the_levels_serves_the_classes_by_their_weights() {
        // Two backlogged classes with weights 1 and 3: model the port as strict priority over
        // the levels (FIFO within a level) and count what leaves.
        let mut p = program(1, 1000);
        p.write_register("vq_weight", 1, 3).unwrap();
        let mut levels: Vec<Vec<u8>> = vec![Vec::new(); MAX_LEVELS];
        let mut sent = [0u32; 2];
        for _ in 0..4000 {
            // Keep both classes backlogged: top each up to 40 waiting packets.
            for c in 0..2u8 {
                while p.vq_len(1, usize::from(c)) < 40 {
                    let l = enqueue(&mut p, c).unwrap();
                    levels[usize::from(l)].push(c);
                }
            }
            let top = (0..MAX_LEVELS).rev().find(|&l| !levels[l].is_empty()).unwrap();
            let c = levels[top].remove(0);
            dequeue(&mut p, c, top as u8);
            sent[usize::from(c)] += 1;
        }
        let ratio = f64::from(sent[1]) / f64::from(sent[0]);
        assert!((ratio - 3.0).abs() < 0.05, "sent {sent:?}");
        assert_eq!(p.counters_now().accounting_errors, 0);
    }

    #[test]
    fn a_full_virtual_queue_drops_and_a_departure_it_did_not_count_is_an_error() {
        let mut p = program(3, 4);
        for _ in 0..4 {
            assert!(enqueue(&mut p, 5).is_some());
        }
        assert_eq!(enqueue(&mut p, 5), None);
        assert_eq!(p.counters_now().drops, 1);
        dequeue(&mut p, 6, 7);
        assert_eq!(p.counters_now().accounting_errors, 1);
    }

    #[test]
    fn weights_are_written_and_read_by_the_control_plane_and_bad_ones_refused() {
        let mut p = program(3, 4);
        p.write_register("vq_weight", 4, 9).unwrap();
        assert_eq!(p.read_register("vq_weight", 4), Ok(9));
        assert!(p.write_register("vq_weight", 4, 0).is_err());
        assert!(p.write_register("vq_weight", 8, 1).is_err());
        assert!(p.read_register("vq_weight", 8).is_err());
    }
}
