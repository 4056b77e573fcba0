//! The HULA / MP-HULA switch: probes in and out, flowlets, and at MP-HULA's ToRs the MPTCP
//! association and the connection header. README.md is the specification.

use super::assoc::{AssocEvent, Association};
use super::besthop::BestHops;
use super::conn::ConnTable;
use super::estimator::TxUtil;
use super::{util_scale, HulaConfig, MAX_PORTS, MAX_SUBFLOWS};
use mpsched_core::headers::{Header, HeaderStack, ProbeHeader, RoutingHeader};
use mpsched_core::packet::{proto, HeaderExt, Ipv4, PacketMeta, PortId};
use mpsched_core::probe::{PortDir, ProbeConfig, HULA_PROBE_PORT, PROBE_FRAME_BYTES};
use mpsched_core::program::{Ctx, DropReason, EgressVerdict, Emit, Program, QueueMeta, Verdict};
use mpsched_core::sched::{ConfigError, Ecmp};
use mpsched_core::switch::SwitchConfig;
use mpsched_core::table::{Ipv4Lpm, Route, ECMP_GROUP};

/// The timer token of probe origination.
const PROBE_TIMER: u64 = 1;

/// One flowlet slot (as LetFlow's, times in µs).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct FlowletSlot {
    /// The flow's seeded 5-tuple hash.
    pub tag: u32,
    /// Its port.
    pub port: PortId,
    /// Whether a flowlet ever took the slot.
    pub valid: bool,
    /// When the flowlet last sent, µs.
    pub last_us: u64,
}

/// Counters, named as README.md names them.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct HulaCounters {
    /// Probes originated (one per up port per period).
    pub probes_sent: u64,
    /// Probes received and processed.
    pub probes_in: u64,
    /// Copies of received probes sent on.
    pub probe_copies: u64,
    /// Probes dropped (from a host or a same-level port, an unknown or own ToR).
    pub probes_refused: u64,
    /// Best-hop slots forgotten because no probe refreshed them.
    pub aged: u64,
    /// Packets that started a flowlet.
    pub new_flowlets: u64,
    /// Packets that continued one.
    pub continued: u64,
    /// Packets whose slot held another flow's active flowlet.
    pub collisions: u64,
    /// Packets routed by hash: no destination ToR, or no live next hop.
    pub fallback: u64,
    /// Packets whose flowlet's port no probe had come in by for the ageing time (it ended).
    pub dead_port: u64,
    /// Connections associated.
    pub assoc: u64,
    /// Subflows joined to a connection.
    pub joins: u64,
    /// MP_JOINs naming an unknown token.
    pub join_misses: u64,
    /// Connection headers pushed.
    pub pushed: u64,
    /// Connection headers popped.
    pub popped: u64,
    /// Candidates passed over because a sibling subflow held them.
    pub sibling_skips: u64,
    /// Sub-flowlets sent round robin because every candidate was held.
    pub round_robin: u64,
    /// Packets whose connection slot another active connection held.
    pub conn_collisions: u64,
    /// Packets of subflows numbered above the connection table's four.
    pub subflow_overflow: u64,
    /// Packets without a route.
    pub no_route: u64,
    /// Packets whose TTL ran out.
    pub ttl_expired: u64,
    /// Packets addressed to the switch.
    pub local: u64,
}

/// The HULA / MP-HULA switch program of one node.
pub struct Hula {
    cfg: HulaConfig,
    own_ip: Ipv4,
    lpm: Ipv4Lpm,
    groups: Vec<Vec<PortId>>,
    hash_seed: u32,
    tor_id: Option<u16>,
    dirs: Vec<PortDir>,
    scale: Vec<u64>,
    dest: Ipv4Lpm,
    tx: Vec<TxUtil>,
    port_probe_us: Vec<u64>,
    best: BestHops,
    flowlets: Vec<FlowletSlot>,
    assoc: Option<Association>,
    conns: Option<ConnTable>,
    counters: HulaCounters,
}

impl Hula {
    /// Build from the control plane's tables (routes, equal-cost groups, hash seed and
    /// [`SwitchConfig::probe`]) and the parameters.
    pub fn new(tables: &SwitchConfig, cfg: HulaConfig) -> Result<Hula, String> {
        let probe = tables
            .probe
            .as_ref()
            .ok_or("the control plane gave no probe tables (ToR id, port directions)")?;
        if probe.ports.len() > MAX_PORTS {
            return Err(format!("{} ports; at most {MAX_PORTS}", probe.ports.len()));
        }
        let scale = probe
            .ports
            .iter()
            .enumerate()
            .map(|(p, port)| util_scale(port.rate_bps, cfg.tau_us).map_err(|e| format!("port {p}: {e}")))
            .collect::<Result<Vec<_>, _>>()?;
        let tor_mp = cfg.mp && probe.tor_id.is_some();
        let mut h = Hula {
            cfg,
            own_ip: tables.own_ip,
            lpm: Ipv4Lpm::new(),
            groups: Vec::new(),
            hash_seed: tables.hash_seed,
            tor_id: probe.tor_id,
            dirs: probe.ports.iter().map(|p| p.dir).collect(),
            scale,
            dest: dest_lpm(probe),
            tx: vec![TxUtil::default(); probe.ports.len()],
            port_probe_us: vec![0; probe.ports.len()],
            best: BestHops::new(usize::from(probe.n_tors), cfg.best_k),
            flowlets: vec![FlowletSlot::default(); cfg.table_entries as usize],
            assoc: tor_mp.then(|| Association::new(cfg.assoc_entries as usize)),
            conns: cfg.mp.then(|| ConnTable::new(cfg.conn_entries as usize)),
            counters: HulaCounters::default(),
        };
        h.set_routes(tables)?;
        Ok(h)
    }

    fn set_routes(&mut self, tables: &SwitchConfig) -> Result<(), String> {
        let mut lpm = Ipv4Lpm::new();
        for r in &tables.routes {
            let g = usize::from(r.port & !ECMP_GROUP);
            if r.port & ECMP_GROUP != 0 && g >= tables.ecmp_groups.len() {
                return Err(format!(
                    "a route names equal-cost group {g} of {}",
                    tables.ecmp_groups.len()
                ));
            }
            lpm.insert(*r);
        }
        if let Some(g) = tables
            .ecmp_groups
            .iter()
            .find(|g| g.is_empty() || g.len() > mpsched_core::frame::MAX_PORTS)
        {
            return Err(format!("an equal-cost group of {} ports (1 to {MAX_PORTS})", g.len()));
        }
        self.lpm = lpm;
        self.groups = tables.ecmp_groups.clone();
        Ok(())
    }

    /// The counters.
    pub fn counters_now(&self) -> HulaCounters {
        self.counters
    }

    /// The best-hop table.
    pub fn best_hops(&self) -> &BestHops {
        &self.best
    }

    /// Port `p`'s transmit utilisation at `now_us` (Q16).
    pub fn tx_util(&self, p: PortId, now_us: u64) -> u32 {
        let i = usize::from(p);
        self.tx.get(i).map_or(0, |t| {
            t.util_q16(now_us, self.scale[i], self.cfg.tau_us, self.cfg.log2_tau)
        })
    }

    /// Whether a probe came in by `p` less than the ageing time ago (ports towards hosts, and
    /// those no probe crosses, are always alive).
    fn port_alive(&self, p: PortId, now_us: u64) -> bool {
        match self.dir(p) {
            PortDir::Up | PortDir::Down => {
                now_us.saturating_sub(self.port_probe_us[usize::from(p)]) < self.cfg.ageing_us
            }
            PortDir::Host | PortDir::None => true,
        }
    }

    fn dir(&self, p: PortId) -> PortDir {
        self.dirs.get(usize::from(p)).copied().unwrap_or(PortDir::None)
    }

    fn probe_meta(&self) -> PacketMeta {
        let shim = Header::Probe(ProbeHeader::default()).wire_bytes() as u32;
        PacketMeta::udp(
            self.own_ip,
            u32::MAX,
            HULA_PROBE_PORT,
            HULA_PROBE_PORT,
            PROBE_FRAME_BYTES - shim,
        )
    }

    fn send_probe(&self, ctx: &mut Ctx, port: PortId, probe: ProbeHeader) {
        let mut headers = HeaderStack::new();
        // An empty stack has room for one.
        let _ = headers.push(Header::Probe(probe));
        ctx.emit_packet(Emit {
            headers,
            ..Emit::new(port, self.probe_meta())
        });
    }

    /// The ToR's periodic probes, one per up port.
    fn originate(&mut self, ctx: &mut Ctx) {
        let Some(tor) = self.tor_id else { return };
        for p in 0..self.dirs.len() as PortId {
            if self.dir(p) == PortDir::Up {
                self.send_probe(ctx, p, ProbeHeader { tor, hops: 0, util: 0 });
                self.counters.probes_sent += 1;
            }
        }
    }

    fn on_probe(&mut self, pkt: &PacketMeta, probe: ProbeHeader, ctx: &mut Ctx) -> Verdict {
        let p = pkt.ingress_port;
        let d = self.dir(p);
        let tor = usize::from(probe.tor);
        if matches!(d, PortDir::Host | PortDir::None) || tor >= self.best.n_tors() || Some(probe.tor) == self.tor_id {
            self.counters.probes_refused += 1;
            return Verdict::Drop(DropReason::Malformed);
        }
        let now_us = ctx.now_ps() / 1_000_000;
        self.port_probe_us[usize::from(p)] = now_us;
        let max_util = probe.util.max(self.tx_util(p, now_us));
        self.counters.aged += self.best.update(tor, p, max_util, now_us, self.cfg.ageing_us);
        let out = ProbeHeader {
            tor: probe.tor,
            hops: probe.hops.saturating_add(1),
            util: self.best.of(tor)[0].util,
        };
        self.counters.probes_in += 1;
        for q in 0..self.dirs.len() as PortId {
            let send = match (d, self.dir(q)) {
                (PortDir::Down, PortDir::Up) => true,
                (PortDir::Down | PortDir::Up, PortDir::Down) => q != p,
                _ => false,
            };
            if send {
                self.send_probe(ctx, q, out);
                self.counters.probe_copies += 1;
            }
        }
        Verdict::Consume
    }
}

/// Destination prefixes to ToR ids, in an LPM whose "port" is the ToR id.
fn dest_lpm(probe: &ProbeConfig) -> Ipv4Lpm {
    let mut lpm = Ipv4Lpm::new();
    for d in &probe.dest_tors {
        lpm.insert(Route {
            prefix: d.prefix,
            len: d.len,
            port: d.tor,
        });
    }
    lpm
}

/// The switch's seeded hash of the packet's 5-tuple with the smaller endpoint first, so both
/// directions of a connection share it.
pub fn canonical_hash(pkt: &PacketMeta, seed: u32) -> u32 {
    let a = (u64::from(pkt.src_ip) << 16) | u64::from(pkt.src_port);
    let b = (u64::from(pkt.dst_ip) << 16) | u64::from(pkt.dst_port);
    let mut m = *pkt;
    if a > b {
        (m.src_ip, m.dst_ip, m.src_port, m.dst_port) = (pkt.dst_ip, pkt.src_ip, pkt.dst_port, pkt.src_port);
    }
    Ecmp::seeded_hash(&m, seed)
}

impl Hula {
    /// MP-HULA at a ToR: follow MPTCP handshakes; push the connection header on packets from
    /// hosts whose connection has more than one subflow.
    /// Returns the packet's connection and subflow when the association table holds its flow
    /// (the ToR's own sub-flowlet choice uses it, header or not).
    fn associate_and_push(&mut self, pkt: &PacketMeta, ctx: &mut Ctx) -> Option<(u64, usize)> {
        let from_host = self.dir(pkt.ingress_port) == PortDir::Host;
        let assoc = self.assoc.as_mut()?;
        if pkt.proto != proto::TCP {
            return None;
        }
        let key = canonical_hash(pkt, self.hash_seed);
        if let (HeaderExt::Tcp { flags, .. }, Some(o)) = (pkt.ext, ctx.mptcp_option()) {
            match assoc.observe(key, flags, o) {
                AssocEvent::Associated => self.counters.assoc += 1,
                AssocEvent::Joined => self.counters.joins += 1,
                AssocEvent::JoinMissed => self.counters.join_misses += 1,
                AssocEvent::None => {}
            }
        }
        let a = *assoc.lookup(key)?;
        let conn = Some((a.conn_id, usize::from(a.subflow)));
        if !from_host || ctx.headers().routing().is_some() {
            return conn;
        }
        if a.subflow > 1 || a.count > 1 {
            let h = Header::Routing(RoutingHeader {
                conn_id: a.conn_id,
                path: u16::from(a.subflow),
                hops: 0,
            });
            if ctx.headers_mut().push(h).is_ok() {
                self.counters.pushed += 1;
            }
        }
        conn
    }

    /// The connection table slot of a packet of connection `conn` (its id and subflow), claimed
    /// for it; None (and counted) for a subflow beyond the table's four or a slot another
    /// active connection holds: such a packet is routed as HULA.
    fn conn_slot(&mut self, conn: Option<(u64, usize)>, now_us: u64) -> Option<(usize, usize)> {
        let (conn_id, s) = conn?;
        let conns = self.conns.as_mut()?;
        if s == 0 || s > MAX_SUBFLOWS {
            self.counters.subflow_overflow += 1;
            return None;
        }
        let Some(i) = conns.claim(conn_id, now_us, self.cfg.flowlet_gap_us) else {
            self.counters.conn_collisions += 1;
            return None;
        };
        Some((i, s))
    }

    /// The hop of a new flowlet to ToR `tor`: the best live hop, or for a packet of a known
    /// connection the sub-flowlet choice. None: no live hop.
    fn choose_hop(&mut self, tor: usize, conn: Option<(usize, usize)>, now_us: u64) -> Option<PortId> {
        let (gap, age) = (self.cfg.flowlet_gap_us, self.cfg.ageing_us);
        let (Some((i, s)), Some(conns)) = (conn, self.conns.as_mut()) else {
            return self
                .best
                .of(tor)
                .first()
                .filter(|h| h.live(now_us, age))
                .map(|h| h.port);
        };
        let c = conns.choose(i, s, self.best.of(tor), now_us, age, gap);
        self.counters.sibling_skips += c.skipped;
        self.counters.round_robin += u64::from(c.round_robin);
        c.port
    }

    /// The HULA choice for a packet routed to equal-cost group `g`.
    fn route_group(&mut self, pkt: &PacketMeta, g: usize, assoc: Option<(u64, usize)>, ctx: &Ctx) -> PortId {
        let hash = Ecmp::seeded_hash(pkt, self.hash_seed);
        let group = &self.groups[g];
        let by_hash = group[hash as usize % group.len()];
        let Some(tor) = self
            .dest
            .lookup(pkt.dst_ip)
            .map(usize::from)
            .filter(|&t| t < self.best.n_tors())
        else {
            self.counters.fallback += 1;
            return by_hash;
        };
        let now_us = ctx.now_ps() / 1_000_000;
        let conn = if self.cfg.mp {
            let known = ctx
                .headers()
                .routing()
                .map(|r| (r.conn_id, usize::from(r.path)))
                .or(assoc);
            self.conn_slot(known, now_us)
        } else {
            None
        };
        let slot_i = hash as usize & (self.flowlets.len() - 1);
        let slot = self.flowlets[slot_i];
        let mut active = slot.valid && now_us.saturating_sub(slot.last_us) < self.cfg.flowlet_gap_us;
        if active && !self.port_alive(slot.port, now_us) {
            // No probe came in by the flowlet's port for the ageing time: its link is down, the
            // flowlet ends here and not when its sender gives up.
            self.counters.dead_port += 1;
            active = false;
        }
        let port = if active && slot.tag == hash {
            self.counters.continued += 1;
            self.flowlets[slot_i].last_us = now_us;
            slot.port
        } else {
            let chosen = self.choose_hop(tor, conn, now_us);
            if chosen.is_none() {
                self.counters.fallback += 1;
            }
            let port = chosen.unwrap_or(by_hash);
            if active {
                self.counters.collisions += 1;
            } else {
                self.counters.new_flowlets += 1;
                self.flowlets[slot_i] = FlowletSlot {
                    tag: hash,
                    port,
                    valid: true,
                    last_us: now_us,
                };
            }
            port
        };
        if let (Some((i, sub)), Some(conns)) = (conn, self.conns.as_mut()) {
            conns.record(i, sub, port, now_us);
        }
        port
    }
}

impl Program for Hula {
    fn start(&mut self, ctx: &mut Ctx) {
        if self.tor_id.is_some() && self.dirs.contains(&PortDir::Up) {
            ctx.set_timer(ctx.now_ps() + self.cfg.probe_period_us * 1_000_000, PROBE_TIMER);
        }
    }

    fn on_timer(&mut self, token: u64, ctx: &mut Ctx) {
        if token == PROBE_TIMER {
            self.originate(ctx);
            ctx.set_timer(ctx.now_ps() + self.cfg.probe_period_us * 1_000_000, PROBE_TIMER);
        }
    }

    fn ingress(&mut self, pkt: &mut PacketMeta, ctx: &mut Ctx) -> Verdict {
        if let Some(probe) = ctx.headers().probe().copied() {
            return self.on_probe(pkt, probe, ctx);
        }
        if pkt.dst_ip == self.own_ip {
            self.counters.local += 1;
            return Verdict::Consume;
        }
        if pkt.ttl <= 1 {
            self.counters.ttl_expired += 1;
            return Verdict::Drop(DropReason::TtlExpired);
        }
        pkt.ttl -= 1;
        let assoc = self.associate_and_push(pkt, ctx);
        let out = match self.lpm.lookup(pkt.dst_ip) {
            Some(port) if port & ECMP_GROUP != 0 => self.route_group(pkt, usize::from(port & !ECMP_GROUP), assoc, ctx),
            Some(port) => port,
            None => {
                self.counters.no_route += 1;
                return Verdict::Drop(DropReason::NoRoute);
            }
        };
        if self.dir(out) == PortDir::Host && ctx.headers().routing().is_some() {
            let hs = ctx.headers_mut();
            if matches!(hs.top(), Some(Header::Routing(_))) {
                hs.pop();
                self.counters.popped += 1;
            }
        }
        Verdict::Forward(out)
    }

    fn parses_mptcp(&self) -> bool {
        self.assoc.is_some()
    }

    fn uses_headers(&self) -> bool {
        self.cfg.mp
    }

    fn uses_dequeue(&self, _port: PortId) -> bool {
        true
    }

    fn on_dequeue(&mut self, pkt: &mut PacketMeta, port: PortId, _queue: QueueMeta, ctx: &mut Ctx) -> EgressVerdict {
        if let Some(t) = self.tx.get_mut(usize::from(port)) {
            let now_us = ctx.now_ps() / 1_000_000;
            t.on_tx(
                u64::from(pkt.wire_len_bytes),
                now_us,
                self.cfg.tau_us,
                self.cfg.log2_tau,
            );
        }
        EgressVerdict::Transmit
    }

    fn counters(&self) -> Vec<(String, u64)> {
        super::registers::counters(&self.counters)
    }

    fn vector_registers(&self) -> Vec<(String, u64)> {
        super::registers::tables(self)
    }

    fn update_routes(&mut self, config: &SwitchConfig) -> Result<(), ConfigError> {
        self.set_routes(config).map_err(ConfigError)
    }
}

impl mpsched_core::control::ProgramControl for Hula {}

impl Hula {
    pub(super) fn parts(&self) -> Parts<'_> {
        Parts {
            tx: &self.tx,
            port_probe_us: &self.port_probe_us,
            best: &self.best,
            flowlets: &self.flowlets,
            assoc: self.assoc.as_ref(),
            conns: self.conns.as_ref(),
        }
    }
}

/// A switch's tables, for the register snapshot.
pub(super) struct Parts<'a> {
    pub tx: &'a [TxUtil],
    pub port_probe_us: &'a [u64],
    pub best: &'a BestHops,
    pub flowlets: &'a [FlowletSlot],
    pub assoc: Option<&'a Association>,
    pub conns: Option<&'a ConnTable>,
}
