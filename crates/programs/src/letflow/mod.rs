//! LetFlow (Vanini et al., "Let It Flow: Resilient Asymmetric Load Balancing with Flowlet
//! Switching", NSDI 2017): a flowlet table per switch; a packet whose flowlet has been idle for
//! the flowlet gap picks a uniformly random port among the equal-cost next hops, and the rest
//! of its flowlet follows it.
//!
//! The files of this program sit together in this folder: the Rust twin (here), the eBPF
//! program (`letflow.bpf.c`), the P4 program (`letflow.p4`) and its notes (`README.md`); its
//! conformance vectors are `tests/vectors/letflow-*.json`.
//!
//! The flowlet table is direct-mapped: `table_entries` slots (a power of two), slot =
//! low bits of the switch's seeded 5-tuple hash (the one ECMP uses), each slot holding the full
//! 32-bit hash as a tag, the time the flowlet last sent and its port. Per packet routed to an
//! equal-cost group:
//! - the slot holds this flow (same tag) and its last packet is less than the gap ago: the
//!   flowlet continues on its port (if the port is still in the group: after a failure the
//!   control plane's new group may have dropped it, and the packet starts a new flowlet);
//! - the slot is empty, or its flowlet has been idle for the gap or longer (`now - last >=
//!   gap`, the boundary itself starts a new flowlet): a new flowlet takes the slot, on a port
//!   drawn uniformly from the group (`draw * n >> 32`, no division);
//! - the slot holds another flow whose flowlet is still active (a hash collision, and what a
//!   full table looks like): the packet is routed by the ECMP hash and leaves the slot alone
//!   (counted as `letflow.collisions`). The original hardware design shares such a slot between
//!   the colliding flows; the tag keeps one flow's flowlet from being cut by another's packets.
//!
//! Routes with a single next hop and packets addressed to the switch are handled as the
//! multipath switch handles them (no flowlet state).

use crate::params::{Param, ParamKind, Params};
use crate::{BuildInput, SwitchProgram, TablesNeed};
use mpsched_core::control::{ControlError, ControlListing, ProgramControl, RegisterInfo, TableInfo};
use mpsched_core::frame::MAX_PORTS;
use mpsched_core::packet::{Ipv4, PacketMeta, PortId};
use mpsched_core::program::{Ctx, DropReason, Program, Verdict};
use mpsched_core::rng::{RandomSource, SeededRandom};
use mpsched_core::sched::{ConfigError, Ecmp};
use mpsched_core::switch::SwitchConfig;
use mpsched_core::switch::{route_key, FORWARD_ACTION, ROUTES_TABLE};
use mpsched_core::table::Route;
use mpsched_core::table::{Ipv4Lpm, ECMP_GROUP};

/// The registry entry.
pub static LETFLOW: LetFlowProgram = LetFlowProgram;

/// Default flowlet gap: 100 µs, HULA's and MP-HULA's flowlet timeout (LetFlow's paper uses
/// 50-500 µs depending on the fabric).
pub const DEFAULT_GAP_PS: u64 = 100_000_000;

/// Default flowlet table size (slots).
pub const DEFAULT_TABLE_ENTRIES: u64 = 4096;

/// Most slots a table may have: 1 Mi (16 bytes each in the Rust twin: 16 MiB a switch).
pub const MAX_TABLE_ENTRIES: u64 = 1 << 20;

const PARAMS: &[Param] = &[
    Param {
        name: "flowlet_gap",
        kind: ParamKind::Time,
        default: DEFAULT_GAP_PS,
        // Whole microseconds: BMv2's timestamps count microseconds, and every backend must
        // see the same boundary.
        min: 1_000_000,
        max: 1_000_000_000_000,
        power_of_two: false,
        multiple_of: 1_000_000,
        doc: "idle time after which a flow's next packet starts a new flowlet (whole microseconds, 1us to 1s)",
    },
    Param {
        name: "table_entries",
        kind: ParamKind::Count,
        default: DEFAULT_TABLE_ENTRIES,
        min: 1,
        max: MAX_TABLE_ENTRIES,
        power_of_two: true,
        multiple_of: 1,
        doc: "flowlet table slots per switch (a power of two, up to 1 Mi)",
    },
];

/// LetFlow as the registry knows it.
pub struct LetFlowProgram;

impl SwitchProgram for LetFlowProgram {
    fn name(&self) -> &'static str {
        "letflow"
    }

    fn summary(&self) -> &'static str {
        "LetFlow (NSDI 2017): flowlets over equal-cost next hops, a random next hop per new flowlet"
    }

    fn params(&self) -> &'static [Param] {
        PARAMS
    }

    fn tables_need(&self) -> TablesNeed {
        TablesNeed::EqualCostGroups
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
        let cfg = LetFlowConfig::from_params(input.params);
        let lf =
            LetFlow::new(input.tables, cfg, rng).map_err(|e| ConfigError(format!("node `{}`: {e}", input.node)))?;
        Ok(Box::new(lf))
    }

    fn ebpf_object(&self) -> Option<&'static str> {
        Some("letflow")
    }

    fn p4_program(&self) -> Option<&'static str> {
        Some("letflow")
    }
}

/// LetFlow's parameters in base units.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LetFlowConfig {
    /// Flowlet gap, ps (a whole number of microseconds).
    pub gap_ps: u64,
    /// Slots, a power of two.
    pub table_entries: u32,
}

impl LetFlowConfig {
    /// From checked parameters.
    pub fn from_params(p: &Params) -> LetFlowConfig {
        LetFlowConfig {
            gap_ps: p.get("flowlet_gap"),
            table_entries: p.get("table_entries") as u32,
        }
    }
}

impl Default for LetFlowConfig {
    fn default() -> Self {
        LetFlowConfig {
            gap_ps: DEFAULT_GAP_PS,
            table_entries: DEFAULT_TABLE_ENTRIES as u32,
        }
    }
}

/// One flowlet table slot.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Slot {
    /// The flow's full hash (meaningful when `valid`).
    pub tag: u32,
    /// Its port.
    pub port: PortId,
    /// Whether a flowlet ever took the slot.
    pub valid: bool,
    /// When the flowlet last sent a packet, ps.
    pub last_ps: u64,
}

const _: () = assert!(
    std::mem::size_of::<Slot>() == 16,
    "a slot is 16 bytes (MAX_TABLE_ENTRIES' memory bound)"
);

/// Counters, named `letflow.*` in results and vectors.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LetFlowCounters {
    /// Packets that started a flowlet (and drew a port).
    pub new_flowlets: u64,
    /// Packets that continued one.
    pub continued: u64,
    /// Packets routed by hash because another flow's active flowlet held their slot.
    pub collisions: u64,
    /// Packets with no route.
    pub no_route: u64,
    /// Packets whose TTL ran out.
    pub ttl_expired: u64,
    /// Packets addressed to the switch.
    pub local: u64,
}

/// The LetFlow switch program.
pub struct LetFlow {
    own_ip: Ipv4,
    lpm: Ipv4Lpm,
    groups: Vec<Vec<PortId>>,
    hash_seed: u32,
    gap_ps: u64,
    slots: Vec<Slot>,
    rng: Box<dyn RandomSource>,
    counters: LetFlowCounters,
}

impl LetFlow {
    /// Build from the control plane's tables (routes, equal-cost groups, hash seed), the
    /// parameters and the random source new flowlets draw from.
    pub fn new(tables: &SwitchConfig, cfg: LetFlowConfig, rng: Box<dyn RandomSource>) -> Result<Self, ConfigError> {
        if !cfg.table_entries.is_power_of_two() || u64::from(cfg.table_entries) > MAX_TABLE_ENTRIES {
            return Err(ConfigError(format!(
                "letflow: table_entries must be a power of two up to {MAX_TABLE_ENTRIES}, got {}",
                cfg.table_entries
            )));
        }
        if !tables.splits.is_empty() || !tables.confluences.is_empty() {
            return Err(ConfigError(
                "letflow: the node is a splitting or confluence point of a [[split]], which only the `multipath` program runs".into(),
            ));
        }
        let mut lf = LetFlow {
            own_ip: tables.own_ip,
            lpm: Ipv4Lpm::new(),
            groups: Vec::new(),
            hash_seed: tables.hash_seed,
            gap_ps: cfg.gap_ps,
            slots: vec![Slot::default(); cfg.table_entries as usize],
            rng,
            counters: LetFlowCounters::default(),
        };
        lf.set_tables(tables)?;
        Ok(lf)
    }

    fn set_tables(&mut self, tables: &SwitchConfig) -> Result<(), ConfigError> {
        for (i, g) in tables.ecmp_groups.iter().enumerate() {
            if g.is_empty() || g.len() > MAX_PORTS {
                return Err(ConfigError(format!(
                    "letflow: equal-cost group {i} has {} ports (1 to {MAX_PORTS})",
                    g.len()
                )));
            }
        }
        let mut lpm = Ipv4Lpm::new();
        for r in &tables.routes {
            if r.port & ECMP_GROUP != 0 && usize::from(r.port & !ECMP_GROUP) >= tables.ecmp_groups.len() {
                return Err(ConfigError(format!(
                    "letflow: a route names equal-cost group {}, and there are {}",
                    r.port & !ECMP_GROUP,
                    tables.ecmp_groups.len()
                )));
            }
            lpm.insert(*r);
        }
        self.lpm = lpm;
        self.groups = tables.ecmp_groups.clone();
        Ok(())
    }

    /// The counters.
    pub fn counters_now(&self) -> LetFlowCounters {
        self.counters
    }

    /// The flowlet table.
    pub fn slots(&self) -> &[Slot] {
        &self.slots
    }

    /// The port of a packet routed to equal-cost group `g` at `now_ps`.
    fn flowlet_port(&mut self, pkt: &PacketMeta, g: usize, now_ps: u64) -> PortId {
        let group = &self.groups[g];
        let hash = Ecmp::seeded_hash(pkt, self.hash_seed);
        let mask = self.slots.len() - 1;
        let slot = &mut self.slots[hash as usize & mask];
        let active = slot.valid && now_ps.saturating_sub(slot.last_ps) < self.gap_ps;
        if active && slot.tag == hash && group.contains(&slot.port) {
            slot.last_ps = now_ps;
            self.counters.continued += 1;
            return slot.port;
        }
        if active && slot.tag != hash {
            self.counters.collisions += 1;
            return group[hash as usize % group.len()];
        }
        let draw = u64::from(self.rng.next_u32());
        let port = group[((draw * group.len() as u64) >> 32) as usize];
        *slot = Slot {
            tag: hash,
            port,
            valid: true,
            last_ps: now_ps,
        };
        self.counters.new_flowlets += 1;
        port
    }
}

/// The action of the routes table that sends a destination to an equal-cost group, whose
/// index is its one parameter (beside [`FORWARD_ACTION`] with a port).
pub const ECMP_GROUP_ACTION: &str = "ecmp_group";

/// The table of equal-cost groups: key `[group]`, action [`SET_MEMBERS_ACTION`] with the ports.
pub const GROUPS_TABLE: &str = "ecmp_groups";

/// The action of [`GROUPS_TABLE`]: the group's ports, 1 to 16.
pub const SET_MEMBERS_ACTION: &str = "set_members";

/// The registers a control plane sees, each with its entries and whether it may write them.
const REGISTERS: &[(&str, bool)] = &[
    ("flowlet_tag", false),
    ("flowlet_port", false),
    ("flowlet_valid", false),
    ("flowlet_last_ps", false),
    ("flowlet_gap_ps", true),
];

fn bad(table: &str, reason: String) -> ControlError {
    ControlError::BadEntry {
        table: table.to_string(),
        reason,
    }
}

impl LetFlow {
    fn slot_register(&self, name: &str, index: usize) -> Result<u64, ControlError> {
        let slot = self.slots.get(index).ok_or_else(|| ControlError::NoIndex {
            register: name.to_string(),
            size: self.slots.len(),
            index,
        })?;
        Ok(match name {
            "flowlet_tag" => u64::from(slot.tag),
            "flowlet_port" => u64::from(slot.port),
            "flowlet_valid" => u64::from(slot.valid),
            _ => slot.last_ps,
        })
    }

    fn route_entry(&self, key: &[u64], action: &str, params: &[u64]) -> Result<Route, ControlError> {
        let dst = route_key(ROUTES_TABLE, key)?;
        let port = match (action, params) {
            (FORWARD_ACTION, [p]) => PortId::try_from(*p).ok().filter(|p| p & ECMP_GROUP == 0),
            (ECMP_GROUP_ACTION, [g]) => usize::try_from(*g)
                .ok()
                .filter(|&g| g < self.groups.len())
                .map(|g| ECMP_GROUP | g as PortId),
            (FORWARD_ACTION | ECMP_GROUP_ACTION, _) => None,
            _ => {
                return Err(ControlError::NoAction {
                    table: ROUTES_TABLE.to_string(),
                    action: action.to_string(),
                })
            }
        }
        .ok_or_else(|| {
            bad(
                ROUTES_TABLE,
                format!(
                    "`{action}` takes one port below {ECMP_GROUP} or a group below {}, got {params:?}",
                    self.groups.len()
                ),
            )
        })?;
        Ok(Route {
            prefix: dst,
            len: 32,
            port,
        })
    }

    fn group_entry(&mut self, key: &[u64], action: &str, params: &[u64]) -> Result<(), ControlError> {
        if action != SET_MEMBERS_ACTION {
            return Err(ControlError::NoAction {
                table: GROUPS_TABLE.to_string(),
                action: action.to_string(),
            });
        }
        let g = match key {
            [g] if (*g as usize) < self.groups.len() => *g as usize,
            _ => {
                return Err(bad(
                    GROUPS_TABLE,
                    format!("key {key:?}: groups are 0 to {}", self.groups.len()),
                ))
            }
        };
        let ports: Option<Vec<PortId>> = params
            .iter()
            .map(|&p| PortId::try_from(p).ok().filter(|p| p & ECMP_GROUP == 0))
            .collect();
        match ports {
            Some(ports) if (1..=MAX_PORTS).contains(&ports.len()) => {
                // A flowlet whose port left the group ends at its next packet.
                self.groups[g] = ports;
                Ok(())
            }
            _ => Err(bad(GROUPS_TABLE, format!("1 to {MAX_PORTS} ports, got {params:?}"))),
        }
    }
}

impl ProgramControl for LetFlow {
    fn control_listing(&self) -> ControlListing {
        let registers = REGISTERS
            .iter()
            .map(|&(name, writable)| RegisterInfo {
                name: name.to_string(),
                size: if name == "flowlet_gap_ps" { 1 } else { self.slots.len() },
                writable,
            })
            .collect();
        let tables = vec![
            TableInfo {
                name: ROUTES_TABLE.to_string(),
                key_fields: vec!["dst_ip".to_string()],
                actions: vec![
                    (FORWARD_ACTION.to_string(), vec!["port".to_string()]),
                    (ECMP_GROUP_ACTION.to_string(), vec!["group".to_string()]),
                ],
            },
            TableInfo {
                name: GROUPS_TABLE.to_string(),
                key_fields: vec!["group".to_string()],
                actions: vec![(SET_MEMBERS_ACTION.to_string(), vec!["ports".to_string()])],
            },
        ];
        ControlListing { registers, tables }
    }

    fn read_register(&self, name: &str, index: usize) -> Result<u64, ControlError> {
        match name {
            "flowlet_gap_ps" if index == 0 => Ok(self.gap_ps),
            "flowlet_gap_ps" => Err(ControlError::NoIndex {
                register: name.to_string(),
                size: 1,
                index,
            }),
            "flowlet_tag" | "flowlet_port" | "flowlet_valid" | "flowlet_last_ps" => self.slot_register(name, index),
            _ => Err(ControlError::NoRegister(name.to_string())),
        }
    }

    fn write_register(&mut self, name: &str, index: usize, value: u64) -> Result<(), ControlError> {
        self.read_register(name, index)?;
        if name != "flowlet_gap_ps" {
            return Err(ControlError::ReadOnly(name.to_string()));
        }
        if value == 0 {
            return Err(bad(name, "a flowlet gap of 0 would end every flowlet at once".into()));
        }
        self.gap_ps = value;
        Ok(())
    }

    fn table_write(&mut self, table: &str, key: &[u64], action: &str, params: &[u64]) -> Result<(), ControlError> {
        match table {
            ROUTES_TABLE => {
                let route = self.route_entry(key, action, params)?;
                self.lpm.insert(route);
                Ok(())
            }
            GROUPS_TABLE => self.group_entry(key, action, params),
            _ => Err(ControlError::NoTable(table.to_string())),
        }
    }

    fn table_delete(&mut self, table: &str, key: &[u64]) -> Result<(), ControlError> {
        let dst = route_key(table, key)?;
        if self.lpm.remove(dst, 32) {
            return Ok(());
        }
        Err(ControlError::NoEntry {
            table: table.to_string(),
            key: key.to_vec(),
        })
    }
}

impl Program for LetFlow {
    fn ingress(&mut self, pkt: &mut PacketMeta, ctx: &mut Ctx) -> Verdict {
        if pkt.dst_ip == self.own_ip {
            self.counters.local += 1;
            return Verdict::Consume;
        }
        if pkt.ttl <= 1 {
            self.counters.ttl_expired += 1;
            return Verdict::Drop(DropReason::TtlExpired);
        }
        pkt.ttl -= 1;
        match self.lpm.lookup(pkt.dst_ip) {
            Some(port) if port & ECMP_GROUP != 0 => {
                Verdict::Forward(self.flowlet_port(pkt, usize::from(port & !ECMP_GROUP), ctx.now_ps()))
            }
            Some(port) => Verdict::Forward(port),
            None => {
                self.counters.no_route += 1;
                Verdict::Drop(DropReason::NoRoute)
            }
        }
    }

    fn counters(&self) -> Vec<(String, u64)> {
        let c = self.counters;
        [
            ("letflow.new_flowlets", c.new_flowlets),
            ("letflow.continued", c.continued),
            ("letflow.collisions", c.collisions),
            ("no_route", c.no_route),
            ("ttl_expired", c.ttl_expired),
            ("local", c.local),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v))
        .collect()
    }

    fn update_routes(&mut self, config: &SwitchConfig) -> Result<(), ConfigError> {
        self.set_tables(config)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use mpsched_core::rng::RawDraws;
    use mpsched_core::table::Route;

    const DST: Ipv4 = 0x0a00_0002;
    const US: u64 = 1_000_000;

    /// Tables whose route to DST is the equal-cost group `ports`, hash seed 7.
    fn tables(ports: Vec<PortId>) -> SwitchConfig {
        let mut t = SwitchConfig::forwarding(
            0x0aff_0001,
            vec![Route {
                prefix: DST,
                len: 32,
                port: ECMP_GROUP,
            }],
        );
        t.ecmp_groups = vec![ports];
        t.hash_seed = 7;
        t
    }

    /// A switch whose route to DST is the group {1, 2, 3, 4}.
    fn switch(entries: u32, draws: Vec<u32>) -> LetFlow {
        let t = tables(vec![1, 2, 3, 4]);
        let cfg = LetFlowConfig {
            gap_ps: 100 * US,
            table_entries: entries,
        };
        LetFlow::new(&t, cfg, Box::new(RawDraws::new(draws))).unwrap()
    }

    fn send(lf: &mut LetFlow, sport: u16, at_ps: u64) -> PortId {
        let mut ctx = Ctx::new();
        ctx.reset(at_ps);
        let mut m = PacketMeta::udp(0x0a00_0001, DST, sport, 5201, 1512);
        match lf.ingress(&mut m, &mut ctx) {
            Verdict::Forward(p) => p,
            v => panic!("{v:?}"),
        }
    }

    #[test]
    fn a_flowlet_keeps_its_port_until_the_gap_and_draws_anew_at_the_boundary() {
        // Draws pick index (draw * 4) >> 32: 0, then 3.
        let mut lf = switch(16, vec![0, u32::MAX]);
        assert_eq!(send(&mut lf, 1000, 0), 1);
        assert_eq!(send(&mut lf, 1000, 99 * US), 1, "99 us after: same flowlet");
        assert_eq!(send(&mut lf, 1000, 198 * US), 1, "the gap counts from the last packet");
        assert_eq!(send(&mut lf, 1000, 298 * US), 4, "exactly the gap: a new flowlet");
        let c = lf.counters_now();
        assert_eq!((c.new_flowlets, c.continued, c.collisions), (2, 2, 0));
    }

    #[test]
    fn a_collision_with_an_active_flowlet_falls_back_to_the_hash_and_keeps_the_slot() {
        // One slot: every flow collides.
        let mut lf = switch(1, vec![0]);
        assert_eq!(send(&mut lf, 1000, 0), 1);
        let other = send(&mut lf, 2000, 10 * US);
        assert_eq!(lf.counters_now().collisions, 1);
        let m = PacketMeta::udp(0x0a00_0001, DST, 2000, 5201, 1512);
        let by_hash = [1, 2, 3, 4][Ecmp::seeded_hash(&m, 7) as usize % 4];
        assert_eq!(other, by_hash);
        assert_eq!(send(&mut lf, 1000, 20 * US), 1, "the first flow's flowlet is intact");
        // Once the first flow is idle for the gap, the other takes the slot.
        send(&mut lf, 2000, 200 * US);
        assert_eq!(lf.slots()[0].tag, Ecmp::seeded_hash(&m, 7));
    }

    #[test]
    fn new_flowlets_spread_uniformly() {
        let mut lf = LetFlow::new(
            &tables(vec![1, 2, 3, 4]),
            LetFlowConfig::default(),
            Box::new(SeededRandom::new(3)),
        )
        .unwrap();
        let mut used = [0u32; 5];
        // One flow, a new flowlet every 200 us.
        for k in 0..8000u64 {
            used[usize::from(send(&mut lf, 1000, k * 200 * US))] += 1;
        }
        for &n in &used[1..] {
            assert!((1800..2200).contains(&n), "{used:?}");
        }
    }

    #[test]
    fn a_port_gone_from_the_group_ends_the_flowlet() {
        let mut lf = switch(16, vec![0, 0]);
        assert_eq!(send(&mut lf, 1000, 0), 1);
        lf.update_routes(&tables(vec![2, 3])).unwrap();
        assert_eq!(send(&mut lf, 1000, 10 * US), 2);
    }

    #[test]
    fn a_control_plane_reads_the_flowlet_table_moves_a_route_and_shrinks_a_group() {
        let mut lf = switch(16, vec![0]);
        assert_eq!(send(&mut lf, 1000, 0), 1);
        let listing = lf.control_listing();
        assert!(listing
            .registers
            .iter()
            .any(|r| r.name == "flowlet_port" && r.size == 16 && !r.writable));
        let slot = (0..16)
            .find(|&i| lf.read_register("flowlet_valid", i).unwrap() == 1)
            .unwrap();
        assert_eq!(lf.read_register("flowlet_port", slot).unwrap(), 1);
        assert!(matches!(
            lf.read_register("flowlet_port", 16),
            Err(ControlError::NoIndex { .. })
        ));
        assert!(matches!(
            lf.write_register("flowlet_port", 0, 2),
            Err(ControlError::ReadOnly(_))
        ));
        // A shorter gap from the control plane ends the flowlet sooner.
        lf.write_register("flowlet_gap_ps", 0, 5 * US).unwrap();
        // The group loses port 1: the flowlet moves to a remaining port at its next packet.
        lf.table_write(GROUPS_TABLE, &[0], SET_MEMBERS_ACTION, &[3, 4]).unwrap();
        assert_eq!(send(&mut lf, 1000, US), 3);
        // A host route written by the control plane overrides the group.
        lf.table_write(ROUTES_TABLE, &[u64::from(DST)], FORWARD_ACTION, &[7])
            .unwrap();
        assert_eq!(send(&mut lf, 1000, 2 * US), 7);
        lf.table_write(ROUTES_TABLE, &[u64::from(DST)], ECMP_GROUP_ACTION, &[0])
            .unwrap();
        assert_ne!(send(&mut lf, 1000, 3 * US), 7);
        assert!(matches!(
            lf.table_write(ROUTES_TABLE, &[u64::from(DST)], ECMP_GROUP_ACTION, &[1]),
            Err(ControlError::BadEntry { .. })
        ));
        assert!(matches!(
            lf.table_write("acl", &[1], "drop", &[]),
            Err(ControlError::NoTable(_))
        ));
        lf.table_delete(ROUTES_TABLE, &[u64::from(DST)]).unwrap();
        assert!(lf.table_delete(ROUTES_TABLE, &[u64::from(DST)]).is_err());
    }

    #[test]
    fn bad_tables_are_refused() {
        let mut t = SwitchConfig::forwarding(
            1,
            vec![Route {
                prefix: DST,
                len: 32,
                port: ECMP_GROUP | 3,
            }],
        );
        t.ecmp_groups = vec![vec![1]];
        let e = LetFlow::new(&t, LetFlowConfig::default(), Box::new(SeededRandom::new(1)))
            .err()
            .unwrap();
        assert!(e.0.contains("group 3"), "{e}");
        let cfg = LetFlowConfig {
            table_entries: 3,
            ..LetFlowConfig::default()
        };
        assert!(LetFlow::new(
            &SwitchConfig::forwarding(1, vec![]),
            cfg,
            Box::new(SeededRandom::new(1))
        )
        .is_err());
    }
}
