//! The multipath switch program: one P4-style program whose tables decide, per flow, whether
//! this node is a splitting point, a passing point or a confluence point.
//!
//! Roles are configuration, not code paths (as in Motohashi et al.): a node is a splitting point
//! for the flows its split table matches, a confluence point for those its confluence table
//! matches, and a passing point (plain IPv4 forwarding) for everything else.
//!
//! Ingress control flow, per packet:
//! 1. addressed to this node: a feedback packet is counted for its splitting group if it arrived
//!    on a port feedback of that group can arrive on (see [`SplitGroupConfig::feedback_ports`]);
//!    consumed either way;
//! 2. TTL check and decrement, then the classifier ([`crate::classify`]): the first rule the
//!    packet matches rewrites its DSCP to the class selector of the queue it picks;
//! 3. confluence table on (src, dst): count CE arrivals, maybe emit a feedback packet;
//! 4. split table on (src, dst): the group's scheduler picks the path (or drops);
//! 5. otherwise IPv4 longest-prefix match.
//!
//! Egress: ports with a marker mark ECT packets CE on `deq_qdepth`.

use crate::classify::{check_rules, classify, ClassRule};
use crate::control::{ControlError, ControlListing, ProgramControl, TableInfo};
use crate::feedback::{Confluence, DEFAULT_FEEDBACK_EVERY, DEFAULT_FEEDBACK_PORT};
use crate::marker::EcnMarker;
use crate::packet::{Ipv4, PacketMeta, PortId};
use crate::program::{Ctx, DropReason, EgressVerdict, Program, QueueMeta, Verdict};
use crate::rng::RandomSource;
use crate::sched::{ConfigError, Decision, Scheduler, SchedulerConfig};
use crate::table::{Ipv4Lpm, Route, ECMP_GROUP};
use crate::MAX_PATHS;
use rustc_hash::FxHashMap;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// A splitting group: which packets are split, over which egress ports, by which scheduler.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SplitGroupConfig {
    /// Group id, carried in feedback packets.
    pub group: u8,
    /// Source address to match.
    pub src_ip: Ipv4,
    /// Destination address to match.
    pub dst_ip: Ipv4,
    /// Egress port of each path.
    pub ports: Vec<PortId>,
    /// The scheduler.
    pub scheduler: SchedulerConfig,
    /// The ports feedback packets of this group arrive on: where the routes from the confluence
    /// point's return ports reach this node. Feedback arriving on any other port is forged (or
    /// misrouted) and is not counted: a host off the return routes cannot steer the weights.
    #[serde(default)]
    pub feedback_ports: Vec<PortId>,
}

/// A confluence entry: where the paths of a group arrive and how feedback goes back.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ConfluenceConfig {
    /// Group id.
    pub group: u8,
    /// Source address to match.
    pub src_ip: Ipv4,
    /// Destination address to match.
    pub dst_ip: Ipv4,
    /// Ingress port of each path.
    pub path_ingress_ports: Vec<PortId>,
    /// Port a feedback packet leaves by when sent back over each path.
    pub return_ports: Vec<PortId>,
    /// The splitting point's address.
    pub splitter_ip: Ipv4,
    /// One feedback per this many CE arrivals on a path.
    pub feedback_every: u32,
}

/// Everything the control plane installs in a multipath switch.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SwitchConfig {
    /// This node's own address (feedback is sent to and from it).
    pub own_ip: Ipv4,
    /// UDP port of feedback packets.
    pub feedback_port: u16,
    /// IPv4 routes.
    pub routes: Vec<Route>,
    /// Split table.
    pub splits: Vec<SplitGroupConfig>,
    /// Confluence table.
    pub confluences: Vec<ConfluenceConfig>,
    /// Egress ECN markers: (port, threshold in packets).
    pub ecn_markers: Vec<(PortId, u32)>,
    /// ECMP groups that routes name ([`crate::table::ECMP_GROUP`]): each a set of ports, one
    /// chosen per flow by the 5-tuple hash.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub ecmp_groups: Vec<Vec<PortId>>,
    /// This switch's ECMP hash seed (the control plane gives each switch its own).
    #[serde(default)]
    pub hash_seed: u32,
    /// What a probe-driven program (HULA, MP-HULA) knows of its node: ToR id, port
    /// directions and rates, the ToR of each destination. None for every other program.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub probe: Option<crate::probe::ProbeConfig>,
    /// Output queues of each port, in port order (empty: one each). A program that picks a
    /// packet's queue by priority level uses no more than its port has.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub port_queues: Vec<u8>,
    /// The classifier's rules, first match first ([`crate::classify`]); empty: packets keep
    /// their DSCP.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub classify: Vec<ClassRule>,
    /// An ATSSS UPF's UE table and epoch ([`crate::upf`]); empty on every other node.
    #[serde(default, skip_serializing_if = "crate::upf::UpfTable::is_empty")]
    pub upf: crate::upf::UpfTable,
}

impl SwitchConfig {
    /// A passing-point configuration: routes only.
    pub fn forwarding(own_ip: Ipv4, routes: Vec<Route>) -> Self {
        SwitchConfig {
            own_ip,
            feedback_port: DEFAULT_FEEDBACK_PORT,
            routes,
            splits: Vec::new(),
            confluences: Vec::new(),
            ecn_markers: Vec::new(),
            ecmp_groups: Vec::new(),
            hash_seed: 0,
            probe: None,
            port_queues: Vec::new(),
            classify: Vec::new(),
            upf: crate::upf::UpfTable::default(),
        }
    }
}

/// The classifier's rules of `config`, checked.
fn classify_rules(config: &SwitchConfig) -> Result<Vec<ClassRule>, ConfigError> {
    check_rules(&config.classify).map_err(ConfigError)?;
    Ok(config.classify.clone())
}

/// Ports a splitting group can trust feedback from are numbered below this (a 64-bit mask).
pub const MAX_FEEDBACK_PORTS: usize = 64;

/// Default for [`ConfluenceConfig::feedback_every`].
pub const FEEDBACK_EVERY: u32 = DEFAULT_FEEDBACK_EVERY;

struct SplitGroup {
    group: u8,
    ports: [PortId; MAX_PATHS],
    n_paths: usize,
    sched: Scheduler,
    pkts: [u64; MAX_PATHS],
    /// Bit `p` set: feedback arriving on port `p` is trusted.
    feedback_port_mask: u64,
}

/// What a node does for one (src, dst) pair: indices into its confluence and split tables.
#[derive(Clone, Copy, Debug, Default)]
struct Roles {
    confluence: Option<u32>,
    split: Option<u32>,
}

/// Drop and consume counters.
#[derive(Clone, Debug, Default)]
struct SwitchCounters {
    no_route: u64,
    ttl_expired: u64,
    avoidance: u64,
    feedback_rx: u64,
    feedback_unknown_group: u64,
    feedback_untrusted_port: u64,
    local: u64,
}

/// The multipath switch program.
pub struct MultipathSwitch {
    own_ip: Ipv4,
    lpm: Ipv4Lpm,
    splits: Vec<SplitGroup>,
    confluences: Vec<Confluence>,
    /// The flow table: (src, dst) -> this node's roles for that pair, one hash lookup per
    /// packet however many groups the node holds (first entry wins, as a P4 table's first match).
    roles: FxHashMap<(Ipv4, Ipv4), Roles>,
    /// Splitting group id -> index into `splits`, for feedback.
    split_of_group: FxHashMap<u8, usize>,
    /// Indexed by port.
    markers: Vec<Option<EcnMarker>>,
    ecmp_groups: Vec<Vec<PortId>>,
    hash_seed: u32,
    /// The classifier's rules (empty: one branch per packet).
    classify: Vec<ClassRule>,
    counters: SwitchCounters,
}

impl MultipathSwitch {
    /// Build the program from its configuration. `rng_for_group` supplies each group's random
    /// source (used by RS).
    pub fn new(
        config: &SwitchConfig,
        mut rng_for_group: impl FnMut(u8) -> Box<dyn RandomSource>,
    ) -> Result<Self, ConfigError> {
        let mut lpm = Ipv4Lpm::new();
        for r in &config.routes {
            lpm.insert(*r);
        }
        let mut splits = Vec::new();
        for s in &config.splits {
            let sched = Scheduler::new(&s.scheduler, s.ports.len(), rng_for_group(s.group))?;
            let mut ports = [0; MAX_PATHS];
            ports[..s.ports.len()].copy_from_slice(&s.ports);
            let mut feedback_port_mask = 0u64;
            for &p in &s.feedback_ports {
                if usize::from(p) >= MAX_FEEDBACK_PORTS {
                    return Err(ConfigError(format!(
                        "split group {}: feedback port {p} is beyond the {MAX_FEEDBACK_PORTS} a port mask holds",
                        s.group
                    )));
                }
                feedback_port_mask |= 1 << p;
            }
            splits.push(SplitGroup {
                group: s.group,
                ports,
                n_paths: s.ports.len(),
                sched,
                pkts: [0; MAX_PATHS],
                feedback_port_mask,
            });
        }
        let confluences = config
            .confluences
            .iter()
            .map(|c| {
                if c.path_ingress_ports.len() != c.return_ports.len() || c.path_ingress_ports.len() > MAX_PATHS {
                    return Err(ConfigError(format!(
                        "confluence group {}: one ingress and one return port per path",
                        c.group
                    )));
                }
                Ok(Confluence::new(
                    c.group,
                    &c.path_ingress_ports,
                    &c.return_ports,
                    c.feedback_every,
                    config.own_ip,
                    c.splitter_ip,
                    config.feedback_port,
                ))
            })
            .collect::<Result<Vec<_>, _>>()?;
        let mut markers = Vec::new();
        for &(port, threshold) in &config.ecn_markers {
            let p = usize::from(port);
            if markers.len() <= p {
                markers.resize(p + 1, None);
            }
            markers[p] = Some(EcnMarker::new(threshold));
        }
        let mut roles: FxHashMap<(Ipv4, Ipv4), Roles> = FxHashMap::default();
        for (i, c) in config.confluences.iter().enumerate() {
            let r = roles.entry((c.src_ip, c.dst_ip)).or_default();
            r.confluence = r.confluence.or(Some(i as u32));
        }
        let mut split_of_group = FxHashMap::default();
        for (i, sg) in config.splits.iter().enumerate() {
            let r = roles.entry((sg.src_ip, sg.dst_ip)).or_default();
            r.split = r.split.or(Some(i as u32));
            split_of_group.entry(sg.group).or_insert(i);
        }
        Ok(MultipathSwitch {
            own_ip: config.own_ip,
            lpm,
            splits,
            confluences,
            roles,
            split_of_group,
            markers,
            ecmp_groups: ecmp_groups_of(config)?,
            hash_seed: config.hash_seed,
            classify: classify_rules(config)?,
            counters: SwitchCounters::default(),
        })
    }

    /// Every register and counter by name, as the conformance vectors compare them with the
    /// eBPF program's maps (`bpf/mpsched.h`):
    /// `counter.*`, `split<g>.*` (per scheduler kind), `confluence<g>.*`.
    pub fn snapshot(&self, out: &mut BTreeMap<String, u64>) {
        let c = &self.counters;
        for (k, v) in [
            ("no_route", c.no_route),
            ("ttl_expired", c.ttl_expired),
            ("avoidance", c.avoidance),
            ("feedback_rx", c.feedback_rx),
            ("feedback_unknown_group", c.feedback_unknown_group),
            ("feedback_untrusted_port", c.feedback_untrusted_port),
            ("local", c.local),
        ] {
            out.insert(format!("counter.{k}"), v);
        }
        for s in &self.splits {
            let g = format!("split{}", s.group);
            for (i, n) in s.pkts[..s.n_paths].iter().enumerate() {
                out.insert(format!("{g}.path{i}_pkts"), *n);
            }
            let wrr = match &s.sched {
                Scheduler::Wrr(w) => Some(w),
                Scheduler::Dwrr(d) => Some(d.wrr()),
                _ => None,
            };
            if let Some(w) = wrr {
                for (i, (wt, rem)) in w.weights().iter().zip(w.remaining()).enumerate() {
                    out.insert(format!("{g}.weight{i}"), u64::from(*wt));
                    out.insert(format!("{g}.remaining{i}"), u64::from(*rem));
                }
            }
            if let Some(d) = s.sched.as_dwrr() {
                for (i, a) in d.adjust().iter().enumerate() {
                    out.insert(format!("{g}.adjust{i}"), u64::from(*a));
                }
                let st = d.stats();
                for (k, v) in [
                    ("groups_left", u64::from(d.groups_left())),
                    ("drop_left", u64::from(d.drop_left())),
                    ("cursor", u64::from(d.cursor())),
                    ("feedback_rx", st.feedback_rx),
                    ("windows", st.windows),
                    ("adjustments", st.adjustments),
                    ("avoidance_events", st.avoidance_events),
                    ("avoidance_drops", st.avoidance_drops),
                ] {
                    out.insert(format!("{g}.{k}"), v);
                }
            }
        }
        for c in &self.confluences {
            let g = format!("confluence{}", c.group());
            for (i, p) in c.ce_pending().iter().enumerate() {
                out.insert(format!("{g}.ce_pending{i}"), u64::from(*p));
            }
            out.insert(format!("{g}.ce_arrivals"), c.ce_arrivals);
            out.insert(format!("{g}.feedback_sent"), c.feedback_sent);
        }
    }

    /// A feedback packet for `group` / `path` arrived on `port`: counted by the group's scheduler
    /// only if the port is one the group's feedback arrives on.
    fn on_feedback(&mut self, group: u8, path: u8, port: PortId) {
        let Some(&i) = self.split_of_group.get(&group) else {
            self.counters.feedback_unknown_group += 1;
            return;
        };
        let s = &mut self.splits[i];
        if usize::from(port) >= MAX_FEEDBACK_PORTS || s.feedback_port_mask & (1 << port) == 0 {
            self.counters.feedback_untrusted_port += 1;
        } else if s.sched.on_feedback(path) {
            self.counters.feedback_rx += 1;
        } else {
            self.counters.feedback_unknown_group += 1;
        }
    }

    /// This node's own address.
    pub fn own_ip(&self) -> Ipv4 {
        self.own_ip
    }

    /// The scheduler of splitting group `group`, if this node splits it.
    pub fn scheduler(&self, group: u8) -> Option<&Scheduler> {
        self.splits.iter().find(|s| s.group == group).map(|s| &s.sched)
    }
}

/// The destination a [`ROUTES_TABLE`] key names (`[dst_ip]`), or why the key is not one: every
/// program with a routes table reads its keys so.
pub fn route_key(table: &str, key: &[u64]) -> Result<Ipv4, ControlError> {
    if table != ROUTES_TABLE {
        return Err(ControlError::NoTable(table.to_string()));
    }
    match key {
        [k] => Ipv4::try_from(*k).map_err(|_| ControlError::BadEntry {
            table: table.to_string(),
            reason: format!("key {k} is not an IPv4 address"),
        }),
        _ => Err(ControlError::BadEntry {
            table: table.to_string(),
            reason: format!("one key field (dst_ip), got {}", key.len()),
        }),
    }
}

/// The ECMP groups of `config`, checked: none empty, none beyond the index a route can name,
/// and every group a route names present.
fn ecmp_groups_of(config: &SwitchConfig) -> Result<Vec<Vec<PortId>>, ConfigError> {
    let groups = &config.ecmp_groups;
    if groups.len() > usize::from(!ECMP_GROUP) + 1 {
        return Err(ConfigError(format!("{} ECMP groups; at most 32768", groups.len())));
    }
    if let Some(i) = groups.iter().position(Vec::is_empty) {
        return Err(ConfigError(format!("ECMP group {i} has no ports")));
    }
    for r in config.routes.iter().filter(|r| r.port & ECMP_GROUP != 0) {
        let g = usize::from(r.port & !ECMP_GROUP);
        if g >= groups.len() {
            return Err(ConfigError(format!(
                "a route to {}/{} names ECMP group {g}, and there are {}",
                crate::packet::ipv4_to_string(r.prefix),
                r.len,
                groups.len()
            )));
        }
    }
    Ok(groups.clone())
}

/// Whether `name`, in the naming of [`MultipathSwitch::snapshot`] and the eBPF maps, is a
/// counter (grows with traffic: results report it) rather than a register (state: weights,
/// cursors, pending marks, a marker's backlog).
pub fn is_counter(name: &str) -> bool {
    let field = name.rsplit_once('.').map_or(name, |(_, f)| f);
    name.starts_with("counter.")
        || field.ends_with("_pkts")
        || matches!(
            field,
            "feedback_rx"
                | "windows"
                | "adjustments"
                | "avoidance_events"
                | "avoidance_drops"
                | "ce_arrivals"
                | "feedback_sent"
                | "marked"
                | "not_ect_over_threshold"
                | "overflow"
        )
}

/// The control plane's name of the switch's routing table: key the destination (a /32),
/// action [`FORWARD_ACTION`] with the egress port.
pub const ROUTES_TABLE: &str = "routes";
/// The action of [`ROUTES_TABLE`]: forward to the port in its one parameter.
pub const FORWARD_ACTION: &str = "forward";

impl MultipathSwitch {
    /// The WRR scheduler of the splitting group named by register `base` (`split<g>.weight`),
    /// if that group schedules by WRR (DWRR's weights are its own to adjust: read-only).
    fn wrr_of_register(&mut self, base: &str) -> Option<&mut crate::sched::Wrr> {
        let g: u8 = base.strip_prefix("split")?.strip_suffix(".weight")?.parse().ok()?;
        match &mut self.splits.iter_mut().find(|s| s.group == g)?.sched {
            Scheduler::Wrr(w) => Some(w),
            _ => None,
        }
    }
}

impl ProgramControl for MultipathSwitch {
    /// The registers of [`MultipathSwitch::snapshot`] (`split<g>.weight` with one entry per
    /// path, ...; WRR weights writable) and the routes table.
    fn control_listing(&self) -> ControlListing {
        let mut snap = BTreeMap::new();
        self.snapshot(&mut snap);
        let wrr: Vec<String> = self
            .splits
            .iter()
            .filter(|s| matches!(s.sched, Scheduler::Wrr(_)))
            .map(|s| format!("split{}.weight", s.group))
            .collect();
        let registers = crate::control::snapshot_listing(&snap, |name| wrr.iter().any(|w| w == name));
        ControlListing {
            registers,
            tables: vec![TableInfo {
                name: ROUTES_TABLE.to_string(),
                key_fields: vec!["dst_ip".to_string()],
                actions: vec![(FORWARD_ACTION.to_string(), vec!["port".to_string()])],
            }],
        }
    }

    fn read_register(&self, name: &str, index: usize) -> Result<u64, ControlError> {
        let mut snap = BTreeMap::new();
        self.snapshot(&mut snap);
        crate::control::snapshot_register(&snap, name, index)
    }

    fn write_register(&mut self, name: &str, index: usize, value: u64) -> Result<(), ControlError> {
        self.read_register(name, index)?;
        let Some(w) = self.wrr_of_register(name) else {
            return Err(ControlError::ReadOnly(name.to_string()));
        };
        let Ok(value) = u16::try_from(value) else {
            return Err(ControlError::BadEntry {
                table: name.to_string(),
                reason: format!("weight {value} does not fit 16 bits"),
            });
        };
        let mut weights = w.weights().to_vec();
        weights[index] = value;
        w.set_weights(&weights);
        Ok(())
    }

    /// [`ROUTES_TABLE`]: key `[dst_ip]`, action [`FORWARD_ACTION`] with `[port]`: a host route.
    fn table_write(&mut self, table: &str, key: &[u64], action: &str, params: &[u64]) -> Result<(), ControlError> {
        let dst = route_key(table, key)?;
        if action != FORWARD_ACTION {
            return Err(ControlError::NoAction {
                table: table.to_string(),
                action: action.to_string(),
            });
        }
        let port = match params {
            [p] => PortId::try_from(*p).ok().filter(|p| p & ECMP_GROUP == 0),
            _ => None,
        }
        .ok_or_else(|| ControlError::BadEntry {
            table: table.to_string(),
            reason: format!("`{FORWARD_ACTION}` takes one port below {ECMP_GROUP}, got {params:?}"),
        })?;
        self.lpm.insert(Route {
            prefix: dst,
            len: 32,
            port,
        });
        Ok(())
    }

    fn table_delete(&mut self, table: &str, key: &[u64]) -> Result<(), ControlError> {
        let dst = route_key(table, key)?;
        if self.lpm.remove(dst, 32) {
            Ok(())
        } else {
            Err(ControlError::NoEntry {
                table: table.to_string(),
                key: key.to_vec(),
            })
        }
    }
}

impl Program for MultipathSwitch {
    fn update_routes(&mut self, config: &SwitchConfig) -> Result<(), ConfigError> {
        let mut lpm = Ipv4Lpm::new();
        for r in &config.routes {
            lpm.insert(*r);
        }
        self.ecmp_groups = ecmp_groups_of(config)?;
        self.lpm = lpm;
        Ok(())
    }

    fn ingress(&mut self, pkt: &mut PacketMeta, ctx: &mut Ctx) -> Verdict {
        if pkt.dst_ip == self.own_ip {
            if let Some(fb) = pkt.feedback() {
                self.on_feedback(fb.group, fb.path, pkt.ingress_port);
            } else {
                self.counters.local += 1;
            }
            return Verdict::Consume;
        }
        if pkt.ttl <= 1 {
            self.counters.ttl_expired += 1;
            return Verdict::Drop(DropReason::TtlExpired);
        }
        pkt.ttl -= 1;
        if !self.classify.is_empty() {
            classify(&self.classify, self.own_ip, pkt);
        }

        // A plain forwarding node has no flow table: one branch, no hash.
        let roles = if self.roles.is_empty() {
            Roles::default()
        } else {
            self.roles.get(&(pkt.src_ip, pkt.dst_ip)).copied().unwrap_or_default()
        };
        if let Some(c) = roles.confluence {
            if let Some(e) = self.confluences[c as usize].on_arrival(pkt) {
                ctx.emit(e.port, e.meta);
            }
        }
        if let Some(si) = roles.split {
            let s = &mut self.splits[si as usize];
            return match s.sched.select(pkt) {
                Decision::Path(p) => {
                    s.pkts[usize::from(p)] += 1;
                    Verdict::Forward(s.ports[usize::from(p)])
                }
                Decision::Drop => {
                    self.counters.avoidance += 1;
                    Verdict::Drop(DropReason::CongestionAvoidance)
                }
            };
        }
        match self.lpm.lookup(pkt.dst_ip) {
            Some(port) if port & ECMP_GROUP != 0 => {
                // Groups are checked at configuration: every index routes name exists, no
                // group is empty.
                let group = &self.ecmp_groups[usize::from(port & !ECMP_GROUP)];
                let h = crate::sched::Ecmp::seeded_hash(pkt, self.hash_seed);
                Verdict::Forward(group[h as usize % group.len()])
            }
            Some(port) => Verdict::Forward(port),
            None => {
                self.counters.no_route += 1;
                Verdict::Drop(DropReason::NoRoute)
            }
        }
    }

    fn uses_dequeue(&self, port: PortId) -> bool {
        matches!(self.markers.get(usize::from(port)), Some(Some(_)))
    }

    #[inline]
    fn on_dequeue(&mut self, pkt: &mut PacketMeta, port: PortId, queue: QueueMeta, _ctx: &mut Ctx) -> EgressVerdict {
        if let Some(Some(m)) = self.markers.get_mut(usize::from(port)) {
            m.on_dequeue(pkt, queue);
        }
        EgressVerdict::Transmit
    }

    /// The counters of [`MultipathSwitch::snapshot`] (not its registers), under the same
    /// names the kernel backend reads from the eBPF maps, and the ECN markers' as
    /// `marker<p>.*`: one set of names in every backend's results.
    fn counters(&self) -> Vec<(String, u64)> {
        let mut all = BTreeMap::new();
        self.snapshot(&mut all);
        for (p, m) in self.markers.iter().enumerate() {
            if let Some(m) = m {
                all.insert(format!("marker{p}.marked"), m.marked);
                all.insert(format!("marker{p}.not_ect_over_threshold"), m.not_ect_over_threshold);
            }
        }
        all.into_iter().filter(|(k, _)| is_counter(k)).collect()
    }

    fn registers(&self) -> Vec<(String, u64)> {
        let mut out = Vec::new();
        for s in &self.splits {
            if let Some(d) = s.sched.as_dwrr() {
                for (i, w) in d.weights().iter().enumerate() {
                    out.push((format!("group{}_weight{}", s.group, i + 1), u64::from(*w)));
                }
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::packet::Ecn;
    use crate::rng::SeededRandom;
    use crate::sched::DwrrParams;

    const SPLITTER: Ipv4 = 0x0aff_0001;
    const CONFLUENCE: Ipv4 = 0x0aff_0004;
    const STA1: Ipv4 = 0x0a00_0001;
    const STA3: Ipv4 = 0x0a00_0003;

    fn splitter(sched: SchedulerConfig) -> MultipathSwitch {
        let mut cfg = SwitchConfig::forwarding(
            SPLITTER,
            vec![Route {
                prefix: 0,
                len: 0,
                port: 0,
            }],
        );
        cfg.splits.push(SplitGroupConfig {
            group: 0,
            src_ip: STA1,
            dst_ip: STA3,
            ports: vec![1, 2],
            scheduler: sched,
            feedback_ports: vec![1, 2],
        });
        cfg.ecn_markers = vec![(1, 60), (2, 60)];
        MultipathSwitch::new(&cfg, |_| Box::new(SeededRandom::new(1))).unwrap()
    }

    #[test]
    fn control_ops_read_and_write_wrr_weights_and_host_routes() {
        let mut sw = splitter(SchedulerConfig::Wrr { weights: vec![2, 1] });
        let listing = sw.control_listing();
        let w = listing.registers.iter().find(|r| r.name == "split0.weight").unwrap();
        assert_eq!((w.size, w.writable), (2, true));
        assert_eq!(sw.read_register("split0.weight", 0), Ok(2));
        assert_eq!(sw.read_register("counter.no_route", 0), Ok(0));
        assert!(matches!(
            sw.read_register("split0.weight", 2),
            Err(ControlError::NoIndex { size: 2, .. })
        ));
        assert!(matches!(sw.read_register("nope", 0), Err(ControlError::NoRegister(_))));
        sw.write_register("split0.weight", 1, 5).unwrap();
        assert_eq!(sw.read_register("split0.weight", 1), Ok(5));
        assert!(matches!(
            sw.write_register("counter.no_route", 0, 1),
            Err(ControlError::ReadOnly(_))
        ));
        // A host route beats the default route, and goes again.
        let mut p = PacketMeta::udp(STA3, 0x0a00_0009, 1, 2, 100);
        assert_eq!(sw.ingress(&mut p, &mut Ctx::new()), Verdict::Forward(0));
        sw.table_write(ROUTES_TABLE, &[0x0a00_0009], FORWARD_ACTION, &[2])
            .unwrap();
        assert_eq!(sw.ingress(&mut p, &mut Ctx::new()), Verdict::Forward(2));
        sw.table_delete(ROUTES_TABLE, &[0x0a00_0009]).unwrap();
        assert_eq!(sw.ingress(&mut p, &mut Ctx::new()), Verdict::Forward(0));
        assert!(matches!(
            sw.table_delete(ROUTES_TABLE, &[0x0a00_0009]),
            Err(ControlError::NoEntry { .. })
        ));
        assert!(matches!(
            sw.table_write("acl", &[1], FORWARD_ACTION, &[1]),
            Err(ControlError::NoTable(_))
        ));
        assert!(matches!(
            sw.table_write(ROUTES_TABLE, &[1], "drop", &[]),
            Err(ControlError::NoAction { .. })
        ));
        assert!(matches!(
            sw.table_write(ROUTES_TABLE, &[1 << 40], FORWARD_ACTION, &[1]),
            Err(ControlError::BadEntry { .. })
        ));
    }

    #[test]
    fn split_flow_follows_wrr_and_other_traffic_is_routed() {
        let mut sw = splitter(SchedulerConfig::Wrr { weights: vec![2, 1] });
        let mut got = Vec::new();
        for _ in 0..3 {
            let mut p = PacketMeta::udp(STA1, STA3, 1, 2, 1512);
            got.push(sw.ingress(&mut p, &mut Ctx::new()));
        }
        assert_eq!(got, [Verdict::Forward(1), Verdict::Forward(1), Verdict::Forward(2)]);
        let mut other = PacketMeta::udp(0x0a00_0002, STA3, 1, 2, 1512);
        assert_eq!(sw.ingress(&mut other, &mut Ctx::new()), Verdict::Forward(0));
        assert_eq!(other.ttl, 63);
    }

    #[test]
    fn many_groups_each_match_their_own_pair_and_the_first_entry_wins() {
        let mut cfg = SwitchConfig::forwarding(
            SPLITTER,
            vec![Route {
                prefix: 0,
                len: 0,
                port: 0,
            }],
        );
        // 200 groups, one per source; the group id is not the index; a second entry for the
        // first pair (to ports 7, 8) never matches.
        for i in 0..200u32 {
            cfg.splits.push(SplitGroupConfig {
                group: (199 - i) as u8,
                src_ip: STA1 + 0x100 * i,
                dst_ip: STA3,
                ports: vec![1 + (i % 4) as PortId, 5],
                scheduler: SchedulerConfig::Dwrr {
                    weights: vec![1, 1],
                    params: DwrrParams::default(),
                },
                feedback_ports: vec![5],
            });
        }
        cfg.splits.push(SplitGroupConfig {
            group: 250,
            src_ip: STA1,
            dst_ip: STA3,
            ports: vec![7, 8],
            scheduler: SchedulerConfig::Wrr { weights: vec![1, 1] },
            feedback_ports: vec![7, 8],
        });
        let mut sw = MultipathSwitch::new(&cfg, |_| Box::new(SeededRandom::new(1))).unwrap();
        for i in [0u32, 1, 2, 3, 150, 199] {
            let mut p = PacketMeta::udp(STA1 + 0x100 * i, STA3, 1, 2, 1512);
            assert_eq!(
                sw.ingress(&mut p, &mut Ctx::new()),
                Verdict::Forward(1 + (i % 4) as PortId),
                "source {i}"
            );
        }
        let mut reverse = PacketMeta::udp(STA3, STA1, 1, 2, 1512);
        assert_eq!(
            sw.ingress(&mut reverse, &mut Ctx::new()),
            Verdict::Forward(0),
            "no split: routed"
        );
        // Feedback for group 199 (the first entry, a DWRR group) and for an unknown group.
        for (group, counted) in [(199u8, 1), (251, 1)] {
            let mut fb = PacketMeta::udp(CONFLUENCE, SPLITTER, 50_000, 50_000, 60);
            fb.ext = crate::packet::HeaderExt::Feedback(crate::packet::FeedbackInfo { group, path: 0 });
            fb.ingress_port = 5;
            assert_eq!(sw.ingress(&mut fb, &mut Ctx::new()), Verdict::Consume);
            let c: BTreeMap<_, _> = sw.counters().into_iter().collect();
            let key = if group == 199 {
                "counter.feedback_rx"
            } else {
                "counter.feedback_unknown_group"
            };
            assert_eq!(c[key], counted, "group {group}");
        }
    }

    /// Hardening item 17: results name a switch's counters as the vectors and the eBPF maps
    /// do, so both backends' `counters` read alike; registers stay out.
    #[test]
    fn result_counters_are_the_snapshots_counters_by_the_same_names() {
        let sw = splitter(SchedulerConfig::Dwrr {
            weights: vec![2, 1],
            params: Default::default(),
        });
        let mut snap = BTreeMap::new();
        sw.snapshot(&mut snap);
        let counters: BTreeMap<_, _> = sw.counters().into_iter().collect();
        for (k, v) in &snap {
            assert_eq!(counters.get(k), is_counter(k).then_some(v), "{k}");
        }
        for k in [
            "counter.feedback_rx",
            "split0.adjustments",
            "split0.windows",
            "split0.path0_pkts",
        ] {
            assert!(counters.contains_key(k), "{k} in {counters:?}");
        }
        assert!(!counters.keys().any(|k| k.contains("weight") || k.contains("cursor")));
    }

    #[test]
    fn feedback_to_the_splitter_is_consumed_and_counted() {
        let mut sw = splitter(SchedulerConfig::Dwrr {
            weights: vec![2, 1],
            params: DwrrParams::default(),
        });
        let feedback_on = |sw: &mut MultipathSwitch, port: PortId| {
            let mut fb = PacketMeta::udp(CONFLUENCE, SPLITTER, 50_000, 50_000, 60);
            fb.ext = crate::packet::HeaderExt::Feedback(crate::packet::FeedbackInfo { group: 0, path: 1 });
            fb.ingress_port = port;
            assert_eq!(sw.ingress(&mut fb, &mut Ctx::new()), Verdict::Consume);
        };
        feedback_on(&mut sw, 2);
        assert_eq!(sw.scheduler(0).unwrap().as_dwrr().unwrap().adjust(), &[0, 1]);
        // Hardening item 11: the same packet from the sender's side (port 0), or from a port
        // beyond any mask, is forged: consumed, counted as such, and the weights do not hear it.
        feedback_on(&mut sw, 0);
        feedback_on(&mut sw, 300);
        assert_eq!(sw.scheduler(0).unwrap().as_dwrr().unwrap().adjust(), &[0, 1]);
        let c: BTreeMap<_, _> = sw.counters().into_iter().collect();
        assert_eq!((c["counter.feedback_rx"], c["counter.feedback_untrusted_port"]), (1, 2));
    }

    #[test]
    fn a_feedback_port_beyond_the_mask_is_a_configuration_error() {
        let mut cfg = SwitchConfig::forwarding(SPLITTER, Vec::new());
        cfg.splits.push(SplitGroupConfig {
            group: 3,
            src_ip: STA1,
            dst_ip: STA3,
            ports: vec![1, 2],
            scheduler: SchedulerConfig::Wrr { weights: vec![1, 1] },
            feedback_ports: vec![MAX_FEEDBACK_PORTS as PortId],
        });
        let err = MultipathSwitch::new(&cfg, |_| Box::new(SeededRandom::new(1)))
            .err()
            .unwrap();
        assert!(err.0.contains("feedback port 64"), "{}", err.0);
    }

    #[test]
    fn ttl_expiry_drops() {
        let mut sw = splitter(SchedulerConfig::Wrr { weights: vec![1, 1] });
        let mut p = PacketMeta::udp(STA1, STA3, 1, 2, 1512);
        p.ttl = 1;
        assert_eq!(
            sw.ingress(&mut p, &mut Ctx::new()),
            Verdict::Drop(DropReason::TtlExpired)
        );
    }

    #[test]
    fn egress_marks_only_on_ports_with_a_marker() {
        let mut sw = splitter(SchedulerConfig::Wrr { weights: vec![1, 1] });
        let q = QueueMeta {
            enq_qdepth_pkts: 63,
            deq_qdepth_pkts: 62,
            queue: 0,
            ..QueueMeta::default()
        };
        let mut p = PacketMeta::udp(STA1, STA3, 1, 2, 1512);
        p.ecn = Ecn::Ect0;
        sw.on_dequeue(&mut p, 0, q, &mut Ctx::new());
        assert_eq!(p.ecn, Ecn::Ect0);
        sw.on_dequeue(&mut p, 1, q, &mut Ctx::new());
        assert_eq!(p.ecn, Ecn::Ce);
    }

    #[test]
    fn confluence_emits_feedback_every_16th_ce_arrival() {
        let mut cfg = SwitchConfig::forwarding(
            CONFLUENCE,
            vec![Route {
                prefix: STA3,
                len: 32,
                port: 0,
            }],
        );
        cfg.confluences.push(ConfluenceConfig {
            group: 0,
            src_ip: STA1,
            dst_ip: STA3,
            path_ingress_ports: vec![1, 2],
            return_ports: vec![1, 2],
            splitter_ip: SPLITTER,
            feedback_every: FEEDBACK_EVERY,
        });
        let mut sw = MultipathSwitch::new(&cfg, |_| Box::new(SeededRandom::new(1))).unwrap();
        let mut emitted = 0;
        for _ in 0..32 {
            let mut p = PacketMeta::udp(STA1, STA3, 1, 2, 1512);
            p.ecn = Ecn::Ce;
            p.ingress_port = 2;
            let mut ctx = Ctx::new();
            assert_eq!(sw.ingress(&mut p, &mut ctx), Verdict::Forward(0));
            for e in ctx.emitted() {
                assert_eq!(e.port, 1);
                emitted += 1;
            }
        }
        assert_eq!(emitted, 2);
    }

    fn ecmp_router(seed: u32, ports: Vec<PortId>) -> MultipathSwitch {
        let mut cfg = SwitchConfig::forwarding(
            SPLITTER,
            vec![Route {
                prefix: STA3,
                len: 32,
                port: ECMP_GROUP,
            }],
        );
        cfg.ecmp_groups = vec![ports];
        cfg.hash_seed = seed;
        MultipathSwitch::new(&cfg, |_| Box::new(SeededRandom::new(1))).unwrap()
    }

    fn port_of_flow(sw: &mut MultipathSwitch, src_port: u16) -> PortId {
        let mut p = PacketMeta::udp(STA1, STA3, src_port, 5201, 1000);
        match sw.ingress(&mut p, &mut Ctx::new()) {
            Verdict::Forward(port) => port,
            v => panic!("{v:?}"),
        }
    }

    /// ECMP routing: a flow keeps its port, and 4 000 flows spread evenly over four.
    #[test]
    fn ecmp_routes_spread_flows_evenly_and_keep_each_flow_on_one_port() {
        let mut sw = ecmp_router(7, vec![1, 2, 3, 4]);
        let mut per_port = [0u32; 5];
        for sp in 0..4000u16 {
            let port = port_of_flow(&mut sw, 10_000 + sp);
            assert_eq!(port_of_flow(&mut sw, 10_000 + sp), port, "flow {sp} moved");
            per_port[usize::from(port)] += 1;
        }
        for &n in &per_port[1..] {
            assert!((850..=1150).contains(&n), "uneven: {per_port:?}");
        }
    }

    /// Two tiers of switches with two uplinks each: with one seed every flow takes the same
    /// uplink index at both (hash polarisation: half the 2 x 2 paths unused); with a seed per
    /// switch the four combinations are about equally used.
    #[test]
    fn a_seed_per_switch_avoids_hash_polarisation() {
        let combos = |seed_a: u32, seed_b: u32| {
            let (mut a, mut b) = (ecmp_router(seed_a, vec![0, 1]), ecmp_router(seed_b, vec![0, 1]));
            let mut n = [0u32; 4];
            for sp in 0..4000u16 {
                let (x, y) = (port_of_flow(&mut a, sp), port_of_flow(&mut b, sp));
                n[usize::from(x * 2 + y)] += 1;
            }
            n
        };
        let same = combos(5, 5);
        assert_eq!(same[1] + same[2], 0, "one seed: correlated, {same:?}");
        let own = combos(5, 6);
        assert!(own.iter().all(|&c| (850..=1150).contains(&c)), "{own:?}");
    }

    #[test]
    fn a_route_to_a_missing_ecmp_group_is_a_configuration_error() {
        let mut cfg = SwitchConfig::forwarding(
            SPLITTER,
            vec![Route {
                prefix: STA3,
                len: 32,
                port: ECMP_GROUP | 2,
            }],
        );
        cfg.ecmp_groups = vec![vec![1]];
        let err = MultipathSwitch::new(&cfg, |_| Box::new(SeededRandom::new(1)))
            .err()
            .unwrap();
        assert!(err.0.contains("ECMP group 2"), "{}", err.0);
        cfg.ecmp_groups = vec![vec![1], vec![], vec![2]];
        let err = MultipathSwitch::new(&cfg, |_| Box::new(SeededRandom::new(1)))
            .err()
            .unwrap();
        assert!(err.0.contains("group 1 has no ports"), "{}", err.0);
    }
}
