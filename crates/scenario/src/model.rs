//! The validated scenario: typed, with indices instead of names, every value in base units.

use crate::schema::*;
use crate::units::{parse_rate_bps, parse_size_bytes, parse_time_ps};
use mpsched_core::packet::{parse_ipv4, Ecn, Ipv4};
use mpsched_core::sched::{DwrrParams, SchedulerConfig};
use mpsched_core::tunnel::{TunnelSchedulerConfig, DEFAULT_FLOW_TABLE_ENTRIES};
use mpsched_core::MAX_PATHS;
use mpsched_transport::cc::CcKind;
use mpsched_transport::tcp::TcpConfig;
use std::collections::{BTreeMap, HashSet};
use std::fmt;

/// A scenario that failed to load: the file, the field and what was expected.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScenarioError {
    /// The file (or `<builtin:NAME>`).
    pub file: String,
    /// The field, as `link[2].rate`; empty for whole-file errors.
    pub field: String,
    /// What was expected, and what was found.
    pub message: String,
}

impl fmt::Display for ScenarioError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.field.is_empty() {
            write!(f, "{}: {}", self.file, self.message)
        } else {
            write!(f, "{}: field `{}`: {}", self.file, self.field, self.message)
        }
    }
}

impl std::error::Error for ScenarioError {}

pub use mpsched_topo::{Link, Node, NodeKind, QueueDiscipline, MAX_QUEUES};

/// Transport of a flow.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Protocol {
    /// UDP constant bit rate, as iperf `-u -b`.
    Udp,
    /// A TCP connection.
    Tcp,
}

/// What a TCP flow's application does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TcpApp {
    /// Send as fast as TCP allows from start to stop (iperf3 `-t`).
    Bulk,
    /// Send this many bytes and record the completion time (iperf3 `-n`).
    Transfer {
        /// Bytes to transfer.
        size_bytes: u64,
    },
    /// The source sends a request, the destination answers; repeat.
    RequestResponse {
        /// Request size.
        request_bytes: u64,
        /// Response size.
        response_bytes: u64,
        /// Exchanges; 0 means until the flow stops.
        count: u64,
    },
}

/// A TCP flow's transport and application.
#[derive(Clone, Debug, PartialEq)]
pub struct TcpFlow {
    /// Connection settings.
    pub config: TcpConfig,
    /// Application.
    pub app: TcpApp,
}

/// Transport of a tunnel's subtunnels.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SubtunnelTransport {
    /// A TCP connection per subtunnel and direction; payload packets framed by an 8-byte
    /// length header.
    Tcp,
    /// Each payload packet in a UDP datagram.
    Udp,
}

impl SubtunnelTransport {
    /// `tcp` or `udp`.
    pub fn name(self) -> &'static str {
        match self {
            SubtunnelTransport::Tcp => "tcp",
            SubtunnelTransport::Udp => "udp",
        }
    }
}

/// A multipath tunnel between two switches. Traffic between the hosts behind `entry` and those
/// behind `exit` is encapsulated at whichever end it reaches first and sent over a subtunnel.
#[derive(Clone, Debug, PartialEq)]
pub struct Tunnel {
    /// Name.
    pub name: String,
    /// The switch where the subtunnel paths start.
    pub entry: usize,
    /// The switch where they end.
    pub exit: usize,
    /// Path indices, entry to exit (the opposite direction uses them reversed).
    pub subtunnels: Vec<usize>,
    /// Scheduler at both ends.
    pub scheduler: TunnelSchedulerConfig,
    /// Subtunnel transport.
    pub transport: SubtunnelTransport,
    /// Send buffer of each TCP subtunnel, in bytes.
    pub send_buffer_bytes: u64,
    /// TCP settings of the subtunnels.
    pub tcp: TcpConfig,
}

/// ns-3's default TCP send buffer (`TcpSocket::SndBufSize`), the AFMT prototype's.
pub const DEFAULT_TUNNEL_SEND_BUFFER_BYTES: u64 = 131_072;

/// A named path: node indices from splitting point to confluence point.
#[derive(Clone, Debug, PartialEq)]
pub struct Path {
    /// Name.
    pub name: String,
    /// Node indices, first the splitting point, last the confluence point.
    pub nodes: Vec<usize>,
}

/// A splitting group.
#[derive(Clone, Debug, PartialEq)]
pub struct Split {
    /// Name (default `split<N>`).
    pub name: String,
    /// Source host.
    pub src: usize,
    /// Destination host.
    pub dst: usize,
    /// Path indices into [`Scenario::paths`].
    pub paths: Vec<usize>,
    /// The scheduler, as the control plane installs it.
    pub scheduler: SchedulerConfig,
    /// Egress ECN marking threshold on the paths' links, if any.
    pub ecn_threshold_pkts: Option<u32>,
    /// One feedback per this many CE arrivals at the confluence point.
    pub feedback_every: u32,
}

/// A flow: UDP constant bit rate, or a TCP connection.
#[derive(Clone, Debug, PartialEq)]
pub struct Flow {
    /// Name.
    pub name: String,
    /// Source host.
    pub src: usize,
    /// Destination host.
    pub dst: usize,
    /// UDP or TCP.
    pub protocol: Protocol,
    /// TCP settings and application (TCP flows).
    pub tcp: Option<TcpFlow>,
    /// Offered rate, counted on UDP payload (as iperf's `-b`); 0 for TCP.
    pub rate_bps: u64,
    /// UDP payload per packet.
    pub payload_bytes: u32,
    /// Start time.
    pub start_ps: u64,
    /// Stop time.
    pub stop_ps: u64,
    /// ECN codepoint the source sets.
    pub ecn: Ecn,
    /// DSCP of its packets.
    pub dscp: u8,
    /// Path the flow's route is pinned to.
    pub path: Option<usize>,
    /// UDP source port.
    pub src_port: u16,
    /// UDP destination port.
    pub dst_port: u16,
}

/// One configuration of the experiment.
#[derive(Clone, Debug, PartialEq)]
pub struct Variant {
    /// Name (`RS`, `WRR`, `SP1`, ...).
    pub name: String,
    raw: RawVariant,
}

/// A validated scenario.
#[derive(Clone, Debug, PartialEq)]
pub struct Scenario {
    /// Short name.
    pub name: String,
    /// Human title.
    pub title: String,
    /// Paper, figure or table it reproduces.
    pub reproduces: String,
    /// Where it was loaded from.
    pub origin: String,
    /// Simulated duration.
    pub duration_ps: u64,
    /// Base seed.
    pub seed: u64,
    /// Repetitions (each with seed `seed + i`).
    pub repetitions: u32,
    /// Time series sampling interval.
    pub sample_interval_ps: u64,
    /// Each flow starts up to this much late (seeded), as hand-started iperf clients do.
    pub start_jitter_ps: u64,
    /// Each packet leaves up to this much after its nominal time (seeded, not accumulating).
    pub send_jitter_ps: u64,
    /// Nodes.
    pub nodes: Vec<Node>,
    /// Links.
    pub links: Vec<Link>,
    /// Paths.
    pub paths: Vec<Path>,
    /// Splitting groups.
    pub splits: Vec<Split>,
    /// Flows.
    pub flows: Vec<Flow>,
    /// Multipath tunnels.
    pub tunnels: Vec<Tunnel>,
    /// Variants; empty means the scenario runs as written.
    pub variants: Vec<Variant>,
    raw_splits: Vec<RawSplitKeep>,
    raw_tunnels: Vec<RawTunnel>,
}

/// What a variant needs to re-validate a split.
#[derive(Clone, Debug, PartialEq)]
struct RawSplitKeep {
    scheduler: String,
    weights: Option<Vec<u16>>,
    shares: Option<Vec<u32>>,
    path: Option<String>,
    dwrr: RawDwrr,
}

/// BMv2's default queue capacity.
pub const DEFAULT_QUEUE_PKTS: u32 = 64;
/// iperf's default UDP payload on a 1500-byte MTU.
pub const DEFAULT_PAYLOAD_BYTES: u32 = 1470;
/// The scheduler names a scenario may use.
pub const SCHEDULERS: &[(&str, &str)] = &[
    (
        "rs",
        "random splitting over per-path [lower, upper] ranges of a draw in [1, 100]",
    ),
    (
        "wrr",
        "weighted round robin, largest remaining weight first, ties to path 1",
    ),
    (
        "dwrr",
        "WRR whose weights follow ECN feedback from the confluence point",
    ),
    ("ecmp", "per-flow hashing of the 5-tuple"),
    ("single", "everything on one path (SP1, SP2)"),
];

struct Ctx<'a> {
    file: &'a str,
}

impl Ctx<'_> {
    fn err(&self, field: impl Into<String>, message: impl Into<String>) -> ScenarioError {
        ScenarioError {
            file: self.file.to_string(),
            field: field.into(),
            message: message.into(),
        }
    }

    fn time(&self, field: &str, v: &str) -> Result<u64, ScenarioError> {
        parse_time_ps(v).map_err(|e| {
            self.err(
                field,
                format!("expected a time like `20s` or `6560ns`, got `{v}` ({e})"),
            )
        })
    }

    fn rate(&self, field: &str, v: &str) -> Result<u64, ScenarioError> {
        let r =
            parse_rate_bps(v).map_err(|e| self.err(field, format!("expected a rate like `4Mbps`, got `{v}` ({e})")))?;
        if r == 0 {
            return Err(self.err(field, "expected a rate above zero"));
        }
        Ok(r)
    }

    fn size(&self, field: &str, v: &str) -> Result<u64, ScenarioError> {
        parse_size_bytes(v).map_err(|e| self.err(field, format!("expected a size like `1470B`, got `{v}` ({e})")))
    }
}

impl Scenario {
    /// Parse and validate scenario text. `origin` names the file in errors.
    pub fn from_toml(text: &str, origin: &str) -> Result<Scenario, ScenarioError> {
        let raw: RawScenario = toml::from_str(text).map_err(|e| {
            let (field, msg) = describe_toml_error(&e, text);
            ScenarioError {
                file: origin.to_string(),
                field,
                message: msg,
            }
        })?;
        let sc = validate(raw, origin)?;
        for v in &sc.variants {
            sc.with_variant(&v.name)?;
        }
        Ok(sc)
    }

    /// Read, parse and validate a scenario file.
    pub fn load(path: &std::path::Path) -> Result<Scenario, ScenarioError> {
        let origin = path.display().to_string();
        let text = std::fs::read_to_string(path).map_err(|e| ScenarioError {
            file: origin.clone(),
            field: String::new(),
            message: format!("cannot read: {e}"),
        })?;
        Self::from_toml(&text, &origin)
    }

    /// The scenario with variant `name` applied (its split and rates), validated.
    pub fn with_variant(&self, name: &str) -> Result<Scenario, ScenarioError> {
        let ctx = Ctx { file: &self.origin };
        let (vi, v) = self
            .variants
            .iter()
            .enumerate()
            .find(|(_, v)| v.name == name)
            .ok_or_else(|| ctx.err("variant", format!("no variant named `{name}`")))?;
        let f = |k: &str| format!("variant[{vi}].{k}");
        let raw = &v.raw;
        let mut out = self.clone();
        out.variants.clear();
        if !self.splits.is_empty() || raw.scheduler.is_some() {
            let si = match &raw.split {
                Some(s) => self
                    .splits
                    .iter()
                    .position(|x| &x.name == s)
                    .ok_or_else(|| ctx.err(f("split"), format!("no split named `{s}`")))?,
                None => 0,
            };
            if si >= self.splits.len() {
                return Err(ctx.err(f("split"), "the scenario has no [[split]] to override"));
            }
            let base = &self.raw_splits[si];
            let keep = RawSplitKeep {
                scheduler: raw.scheduler.clone().unwrap_or_else(|| base.scheduler.clone()),
                weights: raw.weights.clone().or_else(|| base.weights.clone()),
                shares: raw.shares.clone().or_else(|| base.shares.clone()),
                path: raw.path.clone().or_else(|| base.path.clone()),
                dwrr: raw.dwrr.clone().unwrap_or_else(|| base.dwrr.clone()),
            };
            let split_paths: Vec<String> = self.splits[si]
                .paths
                .iter()
                .map(|&p| self.paths[p].name.clone())
                .collect();
            let sched = scheduler_config(&ctx, &format!("variant[{vi}]"), &keep, &split_paths)?;
            let s = &mut out.splits[si];
            s.scheduler = sched;
            if keep.scheduler == "dwrr" && s.ecn_threshold_pkts.is_none() {
                s.ecn_threshold_pkts = Some(mpsched_core::marker::DEFAULT_ECN_THRESHOLD_PKTS);
            }
            out.raw_splits[si] = keep;
        }
        for (flow, rate) in &raw.rates {
            let fi = out
                .flows
                .iter()
                .position(|x| &x.name == flow)
                .ok_or_else(|| ctx.err(format!("variant[{vi}].rates.{flow}"), format!("no flow named `{flow}`")))?;
            if out.flows[fi].protocol != Protocol::Udp {
                return Err(ctx.err(format!("variant[{vi}].rates.{flow}"), "rates apply to UDP flows"));
            }
            out.flows[fi].rate_bps = ctx.rate(&format!("variant[{vi}].rates.{flow}"), rate)?;
        }
        for (link, rate) in &raw.link_rates {
            let li = out
                .links
                .iter()
                .position(|x| x.name.as_deref() == Some(link))
                .ok_or_else(|| {
                    ctx.err(
                        format!("variant[{vi}].link_rates.{link}"),
                        format!("no link named `{link}`"),
                    )
                })?;
            out.links[li].rate_bps = ctx.rate(&format!("variant[{vi}].link_rates.{link}"), rate)?;
        }
        if let Some(cc) = &raw.cc {
            let kind = CcKind::parse(cc)
                .ok_or_else(|| ctx.err(f("cc"), format!("expected `reno`, `cubic` or `dctcp`, got `{cc}`")))?;
            for fl in out.flows.iter_mut() {
                if let Some(t) = &mut fl.tcp {
                    t.config.cc = kind;
                    if kind == CcKind::Dctcp && !t.config.ecn {
                        return Err(ctx.err(f("cc"), format!("DCTCP needs ECN, and flow `{}` has it off", fl.name)));
                    }
                }
            }
        }
        if raw.tunnel_scheduler.is_some() || raw.tunnel_transport.is_some() {
            if self.tunnels.is_empty() {
                return Err(ctx.err(f("tunnel_scheduler"), "the scenario has no [[tunnel]]"));
            }
            for (ti, rt) in self.raw_tunnels.iter().enumerate() {
                let mut rt = rt.clone();
                if let Some(x) = &raw.tunnel_scheduler {
                    rt.scheduler = x.clone();
                }
                if let Some(x) = &raw.tunnel_transport {
                    rt.transport = x.clone();
                }
                out.tunnels[ti] = build_tunnel(&ctx, ti, &rt, &self.nodes, &self.paths).map_err(|mut e| {
                    e.field = format!("variant[{vi}] -> {}", e.field);
                    e
                })?;
            }
        }
        Ok(out)
    }

    /// The scenario with its timeline scaled so that it lasts `duration_ps` (flow starts and
    /// stops scale with it).
    pub fn scaled_to(&self, duration_ps: u64) -> Scenario {
        let mut out = self.clone();
        let scale = |t: u64| ((t as u128 * duration_ps as u128) / self.duration_ps.max(1) as u128) as u64;
        for f in &mut out.flows {
            f.start_ps = scale(f.start_ps);
            f.stop_ps = scale(f.stop_ps);
        }
        out.duration_ps = duration_ps;
        out
    }

    /// Index of the node called `name`.
    pub fn node_index(&self, name: &str) -> Option<usize> {
        self.nodes.iter().position(|n| n.name == name)
    }

    /// The variant names, or an empty list.
    pub fn variant_names(&self) -> Vec<String> {
        self.variants.iter().map(|v| v.name.clone()).collect()
    }
}

/// Name the field a TOML error points at (`link[2].rate`) from the table headers above it, and
/// give the line and column.
fn describe_toml_error(e: &toml::de::Error, text: &str) -> (String, String) {
    let msg = e.message().trim().to_string();
    let Some(span) = e.span() else {
        return (String::new(), msg);
    };
    let before = &text[..span.start.min(text.len())];
    let line_no = before.matches('\n').count() + 1;
    let col = before.len() - before.rfind('\n').map_or(0, |i| i + 1) + 1;
    let mut table = String::new();
    let mut counts: BTreeMap<String, usize> = BTreeMap::new();
    for line in before.lines() {
        let t = line.trim();
        if let Some(name) = t.strip_prefix("[[").and_then(|r| r.split("]]").next()) {
            let name = name.trim().to_string();
            let c = counts.entry(name.clone()).or_insert(0);
            table = format!("{name}[{c}]");
            *c += 1;
        } else if let Some(name) = t.strip_prefix('[').and_then(|r| r.split(']').next()) {
            let name = name.trim();
            // A sub-table of an array entry (`[split.dwrr]`) belongs to the latest entry.
            table = match name.split_once('.') {
                Some((head, tail)) if counts.contains_key(head) => {
                    format!("{head}[{}].{tail}", counts[head] - 1)
                }
                _ => name.to_string(),
            };
        }
    }
    let this_line = text[before.rfind('\n').map_or(0, |i| i + 1)..]
        .lines()
        .next()
        .unwrap_or("");
    let key = this_line
        .split_once('=')
        .map(|(k, _)| k.trim().to_string())
        .filter(|k| !k.is_empty() && !k.starts_with('['));
    let field = match key {
        Some(k) if !table.is_empty() => format!("{table}.{k}"),
        Some(k) => k,
        None => table,
    };
    (field, format!("{msg} (line {line_no}, column {col})"))
}

fn scheduler_config(
    ctx: &Ctx<'_>,
    at: &str,
    s: &RawSplitKeep,
    path_names: &[String],
) -> Result<SchedulerConfig, ScenarioError> {
    let n = path_names.len();
    let need_len = |field: &str, len: usize| {
        if len == n {
            Ok(())
        } else {
            Err(ctx.err(
                format!("{at}.{field}"),
                format!("expected {n} entries, one per path, got {len}"),
            ))
        }
    };
    Ok(match s.scheduler.as_str() {
        "rs" => {
            let shares = s
                .shares
                .clone()
                .ok_or_else(|| ctx.err(format!("{at}.shares"), "scheduler `rs` needs `shares`, e.g. [67, 33]"))?;
            need_len("shares", shares.len())?;
            if shares.iter().all(|&x| x == 0) {
                return Err(ctx.err(format!("{at}.shares"), "expected at least one non-zero share"));
            }
            SchedulerConfig::Rs { shares_pct: shares }
        }
        "wrr" | "dwrr" => {
            let weights = s.weights.clone().ok_or_else(|| {
                ctx.err(
                    format!("{at}.weights"),
                    format!("scheduler `{}` needs `weights`, e.g. [2, 1]", s.scheduler),
                )
            })?;
            need_len("weights", weights.len())?;
            if weights.iter().all(|&x| x == 0) {
                return Err(ctx.err(format!("{at}.weights"), "expected at least one non-zero weight"));
            }
            if s.scheduler == "wrr" {
                SchedulerConfig::Wrr { weights }
            } else {
                let d = DwrrParams::default();
                let r = &s.dwrr;
                let params = DwrrParams {
                    groups: r.groups.unwrap_or(d.groups),
                    avoidance_drop_pkts: r.avoidance_drop_pkts.unwrap_or(d.avoidance_drop_pkts),
                    weight_scale: r.weight_scale.unwrap_or(d.weight_scale),
                    min_weight: r.min_weight.unwrap_or(d.min_weight),
                    max_step: r.max_step.unwrap_or(d.max_step),
                };
                if params.groups == 0 {
                    return Err(ctx.err(format!("{at}.dwrr.groups"), "expected at least 1"));
                }
                if params.weight_scale == 0 {
                    return Err(ctx.err(format!("{at}.dwrr.weight_scale"), "expected at least 1"));
                }
                if weights
                    .iter()
                    .any(|&w| u32::from(w) * u32::from(params.weight_scale) > u32::from(u16::MAX))
                {
                    return Err(ctx.err(
                        format!("{at}.dwrr.weight_scale"),
                        "weights times weight_scale must fit in 16 bits",
                    ));
                }
                SchedulerConfig::Dwrr { weights, params }
            }
        }
        "ecmp" => SchedulerConfig::Ecmp,
        "single" => {
            let p = s.path.clone().ok_or_else(|| {
                ctx.err(
                    format!("{at}.path"),
                    "scheduler `single` needs `path`, one of the split's paths",
                )
            })?;
            let i = path_names.iter().position(|x| *x == p).ok_or_else(|| {
                ctx.err(
                    format!("{at}.path"),
                    format!(
                        "expected one of the split's paths ({}), got `{p}`",
                        path_names.join(", ")
                    ),
                )
            })?;
            SchedulerConfig::Single { path: i as u8 }
        }
        other => {
            let names: Vec<&str> = SCHEDULERS.iter().map(|(n, _)| *n).collect();
            return Err(ctx.err(
                format!("{at}.scheduler"),
                format!("expected one of {}, got `{other}`", names.join(", ")),
            ));
        }
    })
}

fn tcp_config(ctx: &Ctx<'_>, at: &str, base: TcpConfig, raw: &RawTcp) -> Result<TcpConfig, ScenarioError> {
    let mut c = base;
    if let Some(cc) = &raw.cc {
        c.cc = CcKind::parse(cc).ok_or_else(|| {
            ctx.err(
                format!("{at}.cc"),
                format!("expected `reno`, `cubic` or `dctcp`, got `{cc}`"),
            )
        })?;
    }
    if let Some(m) = &raw.mss {
        let v = ctx.size(&format!("{at}.mss"), m)?;
        if !(64..=65_000).contains(&v) {
            return Err(ctx.err(format!("{at}.mss"), format!("expected 64B to 65000B, got {v}B")));
        }
        c.mss_bytes = v as u32;
    }
    if let Some(w) = raw.initial_window {
        if w == 0 {
            return Err(ctx.err(format!("{at}.initial_window"), "expected at least 1 segment"));
        }
        c.initial_window_segments = w;
    }
    if let Some(t) = &raw.min_rto {
        c.min_rto_ns = ctx.time(&format!("{at}.min_rto"), t)? / 1000;
    }
    if let Some(t) = &raw.delayed_ack {
        c.delayed_ack_ns = ctx.time(&format!("{at}.delayed_ack"), t)? / 1000;
    }
    if let Some(n) = raw.delayed_ack_segments {
        if n == 0 {
            return Err(ctx.err(format!("{at}.delayed_ack_segments"), "expected at least 1"));
        }
        c.delayed_ack_segments = n;
    }
    if let Some(b) = raw.nodelay {
        c.nodelay = b;
    }
    if let Some(w) = &raw.receive_window {
        let v = ctx.size(&format!("{at}.receive_window"), w)?;
        if v < u64::from(c.mss_bytes) {
            return Err(ctx.err(format!("{at}.receive_window"), "expected at least one segment"));
        }
        c.receive_window_bytes = v;
    }
    if let Some(e) = raw.ecn {
        c.ecn = e;
    }
    if c.cc == CcKind::Dctcp && !c.ecn {
        return Err(ctx.err(format!("{at}.ecn"), "DCTCP needs ECN: set `ecn = true`"));
    }
    Ok(c)
}

/// The subtunnels' TCP defaults from the AFMT paper: delayed-ACK timeout 40 ms, no Nagle.
pub fn tunnel_tcp_defaults() -> TcpConfig {
    TcpConfig {
        nodelay: true,
        delayed_ack_ns: 40_000_000,
        ..TcpConfig::default()
    }
}

fn build_tunnel(
    ctx: &Ctx<'_>,
    i: usize,
    t: &RawTunnel,
    nodes: &[Node],
    paths: &[Path],
) -> Result<Tunnel, ScenarioError> {
    let at = format!("tunnel[{i}]");
    let node = |k: &str, name: &str| {
        let n = nodes
            .iter()
            .position(|n| n.name == name)
            .ok_or_else(|| ctx.err(format!("{at}.{k}"), format!("no node named `{name}`")))?;
        if nodes[n].kind != NodeKind::Switch {
            return Err(ctx.err(format!("{at}.{k}"), format!("expected a switch, `{name}` is a host")));
        }
        Ok(n)
    };
    let entry = node("entry", &t.entry)?;
    let exit = node("exit", &t.exit)?;
    if entry == exit {
        return Err(ctx.err(format!("{at}.exit"), "entry and exit are the same switch"));
    }
    if t.subtunnels.is_empty() || t.subtunnels.len() > MAX_PATHS {
        return Err(ctx.err(
            format!("{at}.subtunnels"),
            format!("expected 1 to {MAX_PATHS} paths, got {}", t.subtunnels.len()),
        ));
    }
    let mut subtunnels = Vec::new();
    for (j, name) in t.subtunnels.iter().enumerate() {
        let p = paths
            .iter()
            .position(|p| &p.name == name)
            .ok_or_else(|| ctx.err(format!("{at}.subtunnels[{j}]"), format!("no path named `{name}`")))?;
        let pn = &paths[p].nodes;
        if pn[0] != entry || *pn.last().unwrap() != exit {
            return Err(ctx.err(
                format!("{at}.subtunnels[{j}]"),
                format!("path `{name}` must run from `{}` to `{}`", t.entry, t.exit),
            ));
        }
        if subtunnels.iter().any(|&q: &usize| paths[q].nodes[1] == pn[1]) {
            return Err(ctx.err(
                format!("{at}.subtunnels[{j}]"),
                "each subtunnel must leave the entry by a different link",
            ));
        }
        subtunnels.push(p);
    }
    let transport = match t.transport.as_str() {
        "tcp" => SubtunnelTransport::Tcp,
        "udp" => SubtunnelTransport::Udp,
        x => return Err(ctx.err(format!("{at}.transport"), format!("expected `tcp` or `udp`, got `{x}`"))),
    };
    let entries = t.flow_table_entries.unwrap_or(DEFAULT_FLOW_TABLE_ENTRIES);
    let scheduler = match t.scheduler.as_str() {
        "rr" => TunnelSchedulerConfig::Rr,
        "afmt" => {
            if transport != SubtunnelTransport::Tcp {
                return Err(ctx.err(
                    format!("{at}.transport"),
                    "AFMT reads each subtunnel's cwnd and SRTT, so it needs `transport = \"tcp\"`",
                ));
            }
            if entries == 0 {
                return Err(ctx.err(format!("{at}.flow_table_entries"), "expected at least 1"));
            }
            TunnelSchedulerConfig::Afmt {
                flow_table_entries: entries,
            }
        }
        x => return Err(ctx.err(format!("{at}.scheduler"), format!("expected `afmt` or `rr`, got `{x}`"))),
    };
    let send_buffer_bytes = match &t.send_buffer {
        Some(b) => ctx.size(&format!("{at}.send_buffer"), b)?,
        None => DEFAULT_TUNNEL_SEND_BUFFER_BYTES,
    };
    if send_buffer_bytes < 2048 {
        return Err(ctx.err(format!("{at}.send_buffer"), "expected at least 2KiB"));
    }
    let tcp = tcp_config(
        ctx,
        &format!("{at}.tcp"),
        tunnel_tcp_defaults(),
        &t.tcp.clone().unwrap_or_default(),
    )?;
    Ok(Tunnel {
        name: t.name.clone(),
        entry,
        exit,
        subtunnels,
        scheduler,
        transport,
        send_buffer_bytes,
        tcp,
    })
}

/// A link's output queues: how many and their discipline.
fn link_queues(ctx: &Ctx<'_>, i: usize, l: &RawLink) -> Result<(u8, QueueDiscipline), ScenarioError> {
    let queues = l.queues.unwrap_or(1);
    if !(1..=MAX_QUEUES).contains(&queues) {
        return Err(ctx.err(
            format!("link[{i}].queues"),
            format!("expected 1 to {MAX_QUEUES}, got {queues}"),
        ));
    }
    let weights = || -> Result<Vec<u32>, ScenarioError> {
        let w = l.queue_weights.clone().unwrap_or_else(|| vec![1; usize::from(queues)]);
        if w.len() != usize::from(queues) || w.contains(&0) {
            return Err(ctx.err(
                format!("link[{i}].queue_weights"),
                format!("expected {queues} weights of at least 1"),
            ));
        }
        Ok(w)
    };
    let default = if queues > 1 { "strict-priority" } else { "fifo" };
    let discipline = match l.discipline.as_deref().unwrap_or(default) {
        "fifo" if queues == 1 => QueueDiscipline::Fifo,
        "fifo" => {
            return Err(ctx.err(
                format!("link[{i}].discipline"),
                "`fifo` has one queue; with several choose `strict-priority`, `wrr` or `drr`",
            ))
        }
        "strict-priority" => QueueDiscipline::StrictPriority,
        "wrr" => QueueDiscipline::Wrr(weights()?),
        "drr" => QueueDiscipline::Drr(weights()?),
        d => {
            return Err(ctx.err(
                format!("link[{i}].discipline"),
                format!("expected `fifo`, `strict-priority`, `wrr` or `drr`, got `{d}`"),
            ))
        }
    };
    if l.queue_weights.is_some() && !matches!(discipline, QueueDiscipline::Wrr(_) | QueueDiscipline::Drr(_)) {
        return Err(ctx.err(format!("link[{i}].queue_weights"), "weights need `wrr` or `drr`"));
    }
    Ok((queues, discipline))
}

/// `[[node]]`: names, kinds and addresses (hosts 10.0.0.N and switches 10.255.0.N by default).
fn nodes_of(ctx: &Ctx<'_>, raw_nodes: &[RawNode]) -> Result<Vec<Node>, ScenarioError> {
    let mut nodes = Vec::new();
    let mut names = HashSet::new();
    let (mut hosts, mut switches) = (0u32, 0u32);
    for (i, n) in raw_nodes.iter().enumerate() {
        if !names.insert(n.name.clone()) {
            return Err(ctx.err(format!("node[{i}].name"), format!("duplicate node name `{}`", n.name)));
        }
        if n.name.is_empty() || n.name.contains(':') || n.name.contains(char::is_whitespace) {
            return Err(ctx.err(format!("node[{i}].name"), "expected a name without spaces or `:`"));
        }
        let kind = match n.kind.as_str() {
            "host" => NodeKind::Host,
            "switch" | "ap" => NodeKind::Switch,
            k => {
                return Err(ctx.err(
                    format!("node[{i}].kind"),
                    format!("expected `host` or `switch`, got `{k}`"),
                ))
            }
        };
        let ip = match &n.ip {
            Some(s) => parse_ipv4(s)
                .ok_or_else(|| ctx.err(format!("node[{i}].ip"), format!("expected an IPv4 address, got `{s}`")))?,
            None => match kind {
                NodeKind::Host => {
                    hosts += 1;
                    0x0a00_0000 + hosts
                }
                NodeKind::Switch => {
                    switches += 1;
                    0x0aff_0000 + switches
                }
            },
        };
        nodes.push(Node {
            name: n.name.clone(),
            kind,
            ip,
        });
    }
    let mut ips = HashSet::new();
    for (i, n) in nodes.iter().enumerate() {
        if !ips.insert(n.ip) {
            return Err(ctx.err(format!("node[{i}].ip"), "duplicate address"));
        }
    }
    Ok(nodes)
}

/// `[[link]]`: ends, rate, delay, queues; every host has a link (several make it multi-homed).
fn links_of(
    ctx: &Ctx<'_>,
    raw_links: &[RawLink],
    nodes: &[Node],
    node_of: &dyn Fn(String, &str) -> Result<usize, ScenarioError>,
    default_queue: u32,
) -> Result<Vec<Link>, ScenarioError> {
    let mut links = Vec::new();
    let mut pairs = HashSet::new();
    for (i, l) in raw_links.iter().enumerate() {
        let a = node_of(format!("link[{i}].a"), &l.a)?;
        let b = node_of(format!("link[{i}].b"), &l.b)?;
        if a == b {
            return Err(ctx.err(format!("link[{i}].b"), "a link needs two different nodes"));
        }
        if !pairs.insert((a.min(b), a.max(b))) {
            return Err(ctx.err(
                format!("link[{i}]"),
                format!("a second link between `{}` and `{}`", l.a, l.b),
            ));
        }
        let rate_bps = ctx.rate(&format!("link[{i}].rate"), &l.rate)?;
        let delay_ps = match &l.delay {
            Some(d) => ctx.time(&format!("link[{i}].delay"), d)?,
            None => 0,
        };
        let queue_pkts = l.queue_pkts.unwrap_or(default_queue);
        if queue_pkts == 0 {
            return Err(ctx.err(format!("link[{i}].queue_pkts"), "expected at least 1"));
        }
        if let Some(n) = &l.name {
            if links.iter().any(|x: &Link| x.name.as_deref() == Some(n)) {
                return Err(ctx.err(format!("link[{i}].name"), format!("duplicate link name `{n}`")));
            }
        }
        if l.ecn_threshold_pkts == Some(0) {
            return Err(ctx.err(format!("link[{i}].ecn_threshold_pkts"), "expected at least 1"));
        }
        let (queues, discipline) = link_queues(ctx, i, l)?;
        let a_ip = interface_ip(ctx, i, "a", l.a_ip.as_deref(), &nodes[a])?;
        let b_ip = interface_ip(ctx, i, "b", l.b_ip.as_deref(), &nodes[b])?;
        links.push(Link {
            a,
            b,
            rate_bps,
            delay_ps,
            queue_pkts,
            name: l.name.clone(),
            ecn_threshold_pkts: l.ecn_threshold_pkts,
            a_ip,
            b_ip,
            queues,
            discipline,
        });
    }
    for (i, n) in nodes.iter().enumerate() {
        if n.kind == NodeKind::Host && !links.iter().any(|l| l.a == i || l.b == i) {
            return Err(ctx.err(format!("node[{i}]"), format!("host `{}` needs a link", n.name)));
        }
    }
    // Every address names one interface: no interface address is another's or a node's.
    let mut seen: HashSet<Ipv4> = nodes.iter().map(|n| n.ip).collect();
    for (i, l) in links.iter().enumerate() {
        for (end, ip, node) in [("a", l.a_ip, l.a), ("b", l.b_ip, l.b)] {
            if let Some(ip) = ip.filter(|&ip| ip != nodes[node].ip) {
                if !seen.insert(ip) {
                    return Err(ctx.err(format!("link[{i}].{end}_ip"), "duplicate address"));
                }
            }
        }
    }
    Ok(links)
}

/// A split matches its traffic on the hosts' own addresses: refuse ends with an address per
/// interface (whose traffic would carry another).
fn splits_use_node_addresses(
    ctx: &Ctx<'_>,
    splits: &[Split],
    nodes: &[Node],
    links: &[Link],
) -> Result<(), ScenarioError> {
    for (i, s) in splits.iter().enumerate() {
        for (end, host) in [("src", s.src), ("dst", s.dst)] {
            let own = |ip: Option<Ipv4>| ip.is_some_and(|ip| ip != nodes[host].ip);
            if links
                .iter()
                .any(|l| (l.a == host && own(l.a_ip)) || (l.b == host && own(l.b_ip)))
            {
                return Err(ctx.err(
                    format!("split[{i}].{end}"),
                    format!(
                        "`{}` has an address per interface; splits match the hosts' own addresses",
                        nodes[host].name
                    ),
                ));
            }
        }
    }
    Ok(())
}

/// `link[i].a_ip` / `b_ip`: the address of a host's interface on the link.
fn interface_ip(
    ctx: &Ctx<'_>,
    i: usize,
    end: &str,
    raw: Option<&str>,
    node: &Node,
) -> Result<Option<Ipv4>, ScenarioError> {
    let Some(s) = raw else { return Ok(None) };
    let field = format!("link[{i}].{end}_ip");
    if node.kind != NodeKind::Host {
        return Err(ctx.err(
            field,
            format!("`{}` is a switch: only hosts take an address per interface", node.name),
        ));
    }
    let ip = parse_ipv4(s).ok_or_else(|| ctx.err(field, format!("expected an IPv4 address, got `{s}`")))?;
    Ok(Some(ip))
}

/// `[[path]]`: switches, each linked to the next.
fn paths_of(
    ctx: &Ctx<'_>,
    raw_paths: &[RawPath],
    nodes: &[Node],
    links: &[Link],
    node_of: &dyn Fn(String, &str) -> Result<usize, ScenarioError>,
) -> Result<Vec<Path>, ScenarioError> {
    let linked = |x: usize, y: usize| links.iter().any(|l| (l.a == x && l.b == y) || (l.a == y && l.b == x));
    let mut paths = Vec::new();
    for (i, p) in raw_paths.iter().enumerate() {
        if paths.iter().any(|q: &Path| q.name == p.name) {
            return Err(ctx.err(format!("path[{i}].name"), format!("duplicate path name `{}`", p.name)));
        }
        if p.nodes.len() < 2 {
            return Err(ctx.err(format!("path[{i}].nodes"), "expected at least two nodes"));
        }
        let mut idx = Vec::new();
        for (j, n) in p.nodes.iter().enumerate() {
            let k = node_of(format!("path[{i}].nodes[{j}]"), n)?;
            if nodes[k].kind != NodeKind::Switch {
                return Err(ctx.err(
                    format!("path[{i}].nodes[{j}]"),
                    format!("expected a switch, `{n}` is a host"),
                ));
            }
            if idx.contains(&k) {
                return Err(ctx.err(format!("path[{i}].nodes[{j}]"), format!("`{n}` appears twice")));
            }
            if let Some(&prev) = idx.last() {
                if !linked(prev, k) {
                    return Err(ctx.err(
                        format!("path[{i}].nodes[{j}]"),
                        format!("no link between `{}` and `{n}`", nodes[prev].name),
                    ));
                }
            }
            idx.push(k);
        }
        paths.push(Path {
            name: p.name.clone(),
            nodes: idx,
        });
    }
    Ok(paths)
}

/// `[[split]]`: paths from one splitting point to one confluence point, and a scheduler.
fn splits_of(
    ctx: &Ctx<'_>,
    raw_splits_in: &[RawSplit],
    paths: &[Path],
    node_of: &dyn Fn(String, &str) -> Result<usize, ScenarioError>,
    path_of: &dyn Fn(String, &str) -> Result<usize, ScenarioError>,
) -> Result<(Vec<Split>, Vec<RawSplitKeep>), ScenarioError> {
    let mut splits = Vec::new();
    let mut raw_splits = Vec::new();
    for (i, s) in raw_splits_in.iter().enumerate() {
        let at = format!("split[{i}]");
        let src = node_of(format!("{at}.src"), &s.src)?;
        let dst = node_of(format!("{at}.dst"), &s.dst)?;
        if s.paths.len() < 2 || s.paths.len() > MAX_PATHS {
            return Err(ctx.err(
                format!("{at}.paths"),
                format!("expected 2 to {MAX_PATHS} paths, got {}", s.paths.len()),
            ));
        }
        let mut pidx = Vec::new();
        for (j, p) in s.paths.iter().enumerate() {
            pidx.push(path_of(format!("{at}.paths[{j}]"), p)?);
        }
        let first = paths[pidx[0]].nodes[0];
        let last = *paths[pidx[0]].nodes.last().unwrap();
        for (j, &p) in pidx.iter().enumerate() {
            if paths[p].nodes[0] != first || *paths[p].nodes.last().unwrap() != last {
                return Err(ctx.err(
                    format!("{at}.paths[{j}]"),
                    "all paths of a split must start at the same splitting point and end at the same confluence point",
                ));
            }
            if pidx[..j].contains(&p) {
                return Err(ctx.err(format!("{at}.paths[{j}]"), "path listed twice"));
            }
        }
        let second_hops: HashSet<usize> = pidx.iter().map(|&p| paths[p].nodes[1]).collect();
        if second_hops.len() != pidx.len() {
            return Err(ctx.err(
                format!("{at}.paths"),
                "each path must leave the splitting point by a different link",
            ));
        }
        let keep = RawSplitKeep {
            scheduler: s.scheduler.clone(),
            weights: s.weights.clone(),
            shares: s.shares.clone(),
            path: s.path.clone(),
            dwrr: s.dwrr.clone().unwrap_or_default(),
        };
        let names: Vec<String> = pidx.iter().map(|&p| paths[p].name.clone()).collect();
        let scheduler = scheduler_config(ctx, &at, &keep, &names)?;
        let ecn_threshold_pkts = s.ecn_threshold_pkts.or(if s.scheduler == "dwrr" {
            Some(mpsched_core::marker::DEFAULT_ECN_THRESHOLD_PKTS)
        } else {
            None
        });
        splits.push(Split {
            name: s.name.clone().unwrap_or_else(|| format!("split{i}")),
            src,
            dst,
            paths: pidx,
            scheduler,
            ecn_threshold_pkts,
            feedback_every: s
                .feedback_every
                .unwrap_or(mpsched_core::feedback::DEFAULT_FEEDBACK_EVERY)
                .max(1),
        });
        raw_splits.push(keep);
    }
    if splits.len() > 255 {
        return Err(ctx.err("split", "at most 255 splits"));
    }
    Ok((splits, raw_splits))
}

/// `[[flow]]` entries: at least one, names unique.
fn flows_of(
    ctx: &Ctx<'_>,
    raw: &RawScenario,
    nodes: &[Node],
    duration_ps: u64,
    node_of: &dyn Fn(String, &str) -> Result<usize, ScenarioError>,
    path_of: &dyn Fn(String, &str) -> Result<usize, ScenarioError>,
) -> Result<Vec<Flow>, ScenarioError> {
    let mut flows: Vec<Flow> = Vec::new();
    for (i, f) in raw.flow.iter().enumerate() {
        let at = format!("flow[{i}]");
        if flows.iter().any(|g: &Flow| g.name == f.name) {
            return Err(ctx.err(format!("{at}.name"), format!("duplicate flow name `{}`", f.name)));
        }
        flows.push(flow_of(ctx, i, f, &raw.tcp, nodes, duration_ps, node_of, path_of)?);
    }
    if flows.is_empty() {
        return Err(ctx.err("flow", "expected at least one [[flow]]"));
    }
    Ok(flows)
}

/// One `[[flow]]`: ends, protocol, rate or TCP application, times, ECN, DSCP, pinned path.
#[allow(clippy::too_many_arguments)]
fn flow_of(
    ctx: &Ctx<'_>,
    i: usize,
    f: &RawFlow,
    raw_tcp: &Option<RawTcp>,
    nodes: &[Node],
    duration_ps: u64,
    node_of: &dyn Fn(String, &str) -> Result<usize, ScenarioError>,
    path_of: &dyn Fn(String, &str) -> Result<usize, ScenarioError>,
) -> Result<Flow, ScenarioError> {
    let at = format!("flow[{i}]");
    let src = node_of(format!("{at}.src"), &f.src)?;
    let dst = node_of(format!("{at}.dst"), &f.dst)?;
    for (k, n) in [("src", src), ("dst", dst)] {
        if nodes[n].kind != NodeKind::Host {
            return Err(ctx.err(
                format!("{at}.{k}"),
                format!("expected a host, `{}` is a switch", nodes[n].name),
            ));
        }
    }
    if src == dst {
        return Err(ctx.err(format!("{at}.dst"), "source and destination are the same host"));
    }
    let (protocol, rate_bps, tcp) = flow_transport(ctx, &at, f, raw_tcp)?;
    let payload = match &f.payload {
        Some(p) => ctx.size(&format!("{at}.payload"), p)?,
        None => u64::from(DEFAULT_PAYLOAD_BYTES),
    };
    if !(16..=65_507).contains(&payload) {
        return Err(ctx.err(
            format!("{at}.payload"),
            format!("expected 16B to 65507B (iperf needs 16 bytes for its header), got {payload}B"),
        ));
    }
    let start_ps = match &f.start {
        Some(s) => ctx.time(&format!("{at}.start"), s)?,
        None => 0,
    };
    let stop_ps = match &f.stop {
        Some(s) => ctx.time(&format!("{at}.stop"), s)?,
        None => duration_ps,
    };
    if stop_ps <= start_ps {
        return Err(ctx.err(format!("{at}.stop"), "expected a stop time after the start time"));
    }
    if stop_ps > duration_ps {
        return Err(ctx.err(
            format!("{at}.stop"),
            "expected a stop time within the scenario's duration",
        ));
    }
    let ecn = match f.ecn.as_deref().unwrap_or("not-ect") {
        "not-ect" | "none" => Ecn::NotEct,
        "ect0" | "ect(0)" => Ecn::Ect0,
        "ect1" | "ect(1)" => Ecn::Ect1,
        e => {
            return Err(ctx.err(
                format!("{at}.ecn"),
                format!("expected `not-ect`, `ect0` or `ect1`, got `{e}`"),
            ))
        }
    };
    let path = match &f.path {
        Some(p) => Some(path_of(format!("{at}.path"), p)?),
        None => None,
    };
    let dscp = f.dscp.unwrap_or(0);
    if dscp > 63 {
        return Err(ctx.err(format!("{at}.dscp"), format!("expected 0 to 63, got {dscp}")));
    }
    Ok(Flow {
        name: f.name.clone(),
        src,
        dst,
        protocol,
        tcp,
        rate_bps,
        payload_bytes: payload as u32,
        start_ps,
        stop_ps,
        ecn,
        dscp,
        path,
        src_port: f.src_port.unwrap_or(40_000 + i as u16),
        dst_port: f.dst_port.unwrap_or(5201),
    })
}

/// A flow's protocol, and its offered rate (UDP) or TCP configuration and application.
fn flow_transport(
    ctx: &Ctx<'_>,
    at: &str,
    f: &RawFlow,
    raw_tcp: &Option<RawTcp>,
) -> Result<(Protocol, u64, Option<TcpFlow>), ScenarioError> {
    let tcp_defaults = tcp_config(ctx, "tcp", TcpConfig::default(), &raw_tcp.clone().unwrap_or_default())?;
    let protocol = match f.protocol.as_deref().unwrap_or("udp") {
        "udp" => Protocol::Udp,
        "tcp" => Protocol::Tcp,
        p => return Err(ctx.err(format!("{at}.protocol"), format!("expected `udp` or `tcp`, got `{p}`"))),
    };
    let (rate_bps, tcp) = match protocol {
        Protocol::Udp => {
            for (k, v) in [
                ("size", f.size.is_some()),
                ("request", f.request.is_some()),
                ("response", f.response.is_some()),
                ("requests", f.requests.is_some()),
                ("tcp", f.tcp.is_some()),
            ] {
                if v {
                    return Err(ctx.err(format!("{at}.{k}"), "applies to TCP flows only (`protocol = \"tcp\"`)"));
                }
            }
            let r = f
                .rate
                .as_deref()
                .ok_or_else(|| ctx.err(format!("{at}.rate"), "a UDP flow needs `rate`, e.g. \"4Mbps\""))?;
            (ctx.rate(&format!("{at}.rate"), r)?, None)
        }
        Protocol::Tcp => {
            if f.rate.is_some() {
                return Err(ctx.err(
                    format!("{at}.rate"),
                    "a TCP flow's rate is what its congestion control finds; remove `rate`",
                ));
            }
            if f.ecn.is_some() {
                return Err(ctx.err(format!("{at}.ecn"), "for TCP, negotiate ECN with `tcp.ecn = true`"));
            }
            let config = tcp_config(
                ctx,
                &format!("{at}.tcp"),
                tcp_defaults.clone(),
                &f.tcp.clone().unwrap_or_default(),
            )?;
            let app = match (&f.size, &f.request, &f.response) {
                (None, None, None) => {
                    if f.requests.is_some() {
                        return Err(ctx.err(format!("{at}.requests"), "needs `request` and `response`"));
                    }
                    TcpApp::Bulk
                }
                (Some(sz), None, None) => {
                    let size_bytes = ctx.size(&format!("{at}.size"), sz)?;
                    if size_bytes == 0 {
                        return Err(ctx.err(format!("{at}.size"), "expected at least 1B"));
                    }
                    TcpApp::Transfer { size_bytes }
                }
                (None, Some(q), Some(r)) => {
                    let request_bytes = ctx.size(&format!("{at}.request"), q)?;
                    let response_bytes = ctx.size(&format!("{at}.response"), r)?;
                    if request_bytes == 0 || response_bytes == 0 {
                        return Err(ctx.err(format!("{at}.request"), "requests and responses need at least 1B"));
                    }
                    TcpApp::RequestResponse {
                        request_bytes,
                        response_bytes,
                        count: f.requests.unwrap_or(0),
                    }
                }
                _ => {
                    return Err(ctx.err(
                        at.to_string(),
                        "a TCP flow is bulk (no `size`), a transfer (`size`) or request / response (`request` and `response`)",
                    ))
                }
            };
            (0, Some(TcpFlow { config, app }))
        }
    };
    Ok((protocol, rate_bps, tcp))
}

/// `[[tunnel]]`: ends that are no other tunnel's and no split's.
fn tunnels_of(
    ctx: &Ctx<'_>,
    raw_tunnels: &[RawTunnel],
    nodes: &[Node],
    paths: &[Path],
    splits: &[Split],
) -> Result<Vec<Tunnel>, ScenarioError> {
    let mut tunnels = Vec::new();
    for (i, t) in raw_tunnels.iter().enumerate() {
        if tunnels.iter().any(|x: &Tunnel| x.name == t.name) {
            return Err(ctx.err(
                format!("tunnel[{i}].name"),
                format!("duplicate tunnel name `{}`", t.name),
            ));
        }
        let tun = build_tunnel(ctx, i, t, nodes, paths)?;
        if tunnels
            .iter()
            .any(|x: &Tunnel| [x.entry, x.exit].contains(&tun.entry) || [x.entry, x.exit].contains(&tun.exit))
        {
            return Err(ctx.err(format!("tunnel[{i}]"), "a switch can be the end of one tunnel only"));
        }
        if splits.iter().any(|sp| {
            let p = &paths[sp.paths[0]].nodes;
            [tun.entry, tun.exit].contains(&p[0]) || [tun.entry, tun.exit].contains(p.last().unwrap())
        }) {
            return Err(ctx.err(
                format!("tunnel[{i}]"),
                "a tunnel end cannot also be a split's splitting or confluence point",
            ));
        }
        tunnels.push(tun);
    }
    Ok(tunnels)
}

/// `[[variant]]`: names unique; each is applied when asked for.
fn variants_of(ctx: &Ctx<'_>, raw_variants: &[RawVariant]) -> Result<Vec<Variant>, ScenarioError> {
    let mut variants = Vec::new();
    let mut seen = BTreeMap::new();
    for (i, v) in raw_variants.iter().enumerate() {
        if seen.insert(v.name.clone(), i).is_some() {
            return Err(ctx.err(
                format!("variant[{i}].name"),
                format!("duplicate variant name `{}`", v.name),
            ));
        }
        variants.push(Variant {
            name: v.name.clone(),
            raw: v.clone(),
        });
    }
    Ok(variants)
}

fn validate(raw: RawScenario, origin: &str) -> Result<Scenario, ScenarioError> {
    let ctx = Ctx { file: origin };
    let m = &raw.scenario;
    if m.name.trim().is_empty() {
        return Err(ctx.err("scenario.name", "expected a non-empty name"));
    }
    let duration_ps = ctx.time("scenario.duration", &m.duration)?;
    if duration_ps == 0 {
        return Err(ctx.err("scenario.duration", "expected a duration above zero"));
    }
    let default_queue = m.queue_pkts.unwrap_or(DEFAULT_QUEUE_PKTS);
    let sample_interval_ps = match &m.sample_interval {
        Some(s) => ctx.time("scenario.sample_interval", s)?,
        None => 1_000_000_000_000,
    };
    if sample_interval_ps == 0 {
        return Err(ctx.err("scenario.sample_interval", "expected an interval above zero"));
    }
    let start_jitter_ps = match &m.start_jitter {
        Some(s) => ctx.time("scenario.start_jitter", s)?,
        None => 0,
    };
    let send_jitter_ps = match &m.send_jitter {
        Some(s) => ctx.time("scenario.send_jitter", s)?,
        None => 0,
    };
    let repetitions = m.repetitions.unwrap_or(1);
    if repetitions == 0 {
        return Err(ctx.err("scenario.repetitions", "expected at least 1"));
    }

    let nodes = nodes_of(&ctx, &raw.node)?;
    let node_of = |field: String, name: &str| {
        nodes
            .iter()
            .position(|n| n.name == name)
            .ok_or_else(|| ctx.err(field, format!("no node named `{name}`")))
    };

    let links = links_of(&ctx, &raw.link, &nodes, &node_of, default_queue)?;
    let paths = paths_of(&ctx, &raw.path, &nodes, &links, &node_of)?;
    let path_of = |field: String, name: &str| {
        paths
            .iter()
            .position(|p| p.name == name)
            .ok_or_else(|| ctx.err(field, format!("no path named `{name}`")))
    };

    let (splits, raw_splits) = splits_of(&ctx, &raw.split, &paths, &node_of, &path_of)?;
    splits_use_node_addresses(&ctx, &splits, &nodes, &links)?;
    let flows = flows_of(&ctx, &raw, &nodes, duration_ps, &node_of, &path_of)?;
    let tunnels = tunnels_of(&ctx, &raw.tunnel, &nodes, &paths, &splits)?;
    let variants = variants_of(&ctx, &raw.variant)?;

    Ok(Scenario {
        name: m.name.clone(),
        title: m.title.clone(),
        reproduces: m.reproduces.clone(),
        origin: origin.to_string(),
        duration_ps,
        seed: m.seed.unwrap_or(1),
        repetitions,
        sample_interval_ps,
        start_jitter_ps,
        send_jitter_ps,
        nodes,
        links,
        paths,
        splits,
        flows,
        tunnels,
        variants,
        raw_splits,
        raw_tunnels: raw.tunnel,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::builtin::BUILTIN;

    #[test]
    fn every_builtin_scenario_validates_with_every_variant() {
        for (name, path, text) in BUILTIN {
            let sc = Scenario::from_toml(text, path).unwrap_or_else(|e| panic!("{name}: {e}"));
            assert!(!sc.reproduces.is_empty(), "{name} must say what it reproduces");
            for v in sc.variant_names() {
                sc.with_variant(&v).unwrap();
            }
        }
    }

    fn s1() -> String {
        BUILTIN[0].2.to_string()
    }

    fn err(text: &str) -> ScenarioError {
        Scenario::from_toml(text, "x.toml").unwrap_err()
    }

    #[test]
    fn a_bad_rate_names_file_field_and_expectation() {
        let e = err(&s1().replacen("rate = \"4Mbps\"", "rate = \"4 Mbs\"", 1));
        assert_eq!(e.file, "x.toml");
        assert_eq!(e.field, "link[2].rate");
        assert!(e.message.contains("expected a rate"), "{e}");
    }

    #[test]
    fn an_unknown_key_is_an_error_with_its_table() {
        let e = err(&s1().replacen("payload = \"1470B\"", "payload = \"1470B\"\npayloda = 3", 1));
        assert_eq!(e.field, "flow[0].payloda", "{e}");
        assert!(e.message.contains("unknown field"), "{e}");
    }

    #[test]
    fn unknown_names_and_schedulers_are_errors() {
        assert_eq!(err(&s1().replacen("b = \"ap2\"", "b = \"ap9\"", 1)).field, "link[2].b");
        let e = err(&s1().replacen("scheduler = \"wrr\"", "scheduler = \"wfq\"", 1));
        assert_eq!(e.field, "split[0].scheduler");
        assert!(e.message.contains("rs, wrr, dwrr"));
        let e = err(&s1().replacen("weights = [1, 1]", "weights = [1, 1, 1]", 1));
        assert_eq!(e.field, "split[0].weights");
    }

    #[test]
    fn variants_override_scheduler_and_rates() {
        let sc = Scenario::from_toml(BUILTIN[2].2, "s3a").unwrap();
        let v = sc.with_variant("WRR-10M").unwrap();
        assert_eq!(v.flows[0].rate_bps, 10_000_000);
        assert_eq!(v.splits[0].scheduler, SchedulerConfig::Wrr { weights: vec![2, 1] });
        let sp = Scenario::from_toml(&s1(), "s1").unwrap().with_variant("SP2").unwrap();
        assert_eq!(sp.splits[0].scheduler, SchedulerConfig::Single { path: 1 });
    }

    #[test]
    fn scaling_the_duration_scales_the_timeline() {
        let sc = Scenario::from_toml(BUILTIN[3].2, "s3b").unwrap();
        let short = sc.scaled_to(10_000_000_000_000);
        assert_eq!(short.flows[1].start_ps, 2_000_000_000_000);
        assert_eq!(short.flows[1].stop_ps, 9_000_000_000_000);
    }

    fn afmt_text() -> String {
        crate::builtin::find("afmt/three-subtunnels").unwrap().1.to_string()
    }

    #[test]
    fn tunnels_and_tcp_flows_validate_with_clear_errors() {
        let sc = Scenario::from_toml(&afmt_text(), "a").unwrap();
        assert_eq!(sc.tunnels.len(), 1);
        assert_eq!(sc.tunnels[0].send_buffer_bytes, 131_072);
        assert!(sc.tunnels[0].tcp.nodelay);
        let rr = sc.with_variant("RR").unwrap();
        assert_eq!(rr.tunnels[0].transport, SubtunnelTransport::Udp);
        assert_eq!(sc.flows[0].tcp.as_ref().unwrap().config.mss_bytes, 1420);
        let e = err(&afmt_text().replacen("transport = \"tcp\"", "transport = \"udp\"", 1));
        assert_eq!(e.field, "tunnel[0].transport");
        assert!(e.message.contains("AFMT"), "{e}");
        let e = err(&afmt_text().replacen("protocol = \"tcp\"", "protocol = \"tcp\"\nrate = \"1Mbps\"", 1));
        assert_eq!(e.field, "flow[0].rate");
        let e = err(&afmt_text().replacen("cc = \"reno\"", "cc = \"vegas\"", 1));
        assert_eq!(e.field, "tcp.cc");
        let e = err(&afmt_text().replacen("subtunnels = [\"up16\"", "subtunnels = [\"nope\"", 1));
        assert_eq!(e.field, "tunnel[0].subtunnels[0]");
    }
}
