//! The validated scenario: typed, with indices instead of names, every value in base units.
//!
//! One module per section of the file validates it ([`topology`]: nodes and links, [`splits`]:
//! paths and splitting groups, [`flows`]: flows and TCP settings, [`tunnels`], [`variants`];
//! [`bounds`]: the limits on sizes); this one holds the types, the shared context that turns
//! units and names into values with errors naming file and field, and `validate`, which runs
//! the sections in order.

use crate::schema::*;
use crate::units::{parse_rate_bps, parse_size_bytes, parse_time_ps};
use mpsched_core::packet::{parse_ipv4, Ecn, Ipv4};
use mpsched_core::sched::{DwrrParams, SchedulerConfig};
use mpsched_core::MAX_PATHS;
use mpsched_transport::cc::CcKind;
use mpsched_transport::tcp::TcpConfig;
use std::collections::{BTreeMap, HashMap, HashSet};
use std::fmt;

mod bounds;
mod classify;
mod cut;
mod failures;
mod flows;
mod programs;
mod rate_control;
mod rate_traces;
mod splits;
mod sweep;
mod topology;
mod tunnels;
mod variants;
mod warnings;
mod workloads;

pub use bounds::{
    control_plane_bytes, ControlPlane, MAX_CONTROL_PLANE_BYTES, MAX_FLOW_TABLE_ENTRIES, MAX_LINKS, MAX_NODES,
    MAX_REPETITIONS, MAX_ROUTE_STEPS, MAX_SAMPLES, MAX_SAMPLE_CELLS, MAX_TIME_PS,
};
use classify::*;
pub use classify::{ClassMatch, ClassifyIntent};
use failures::*;
pub use failures::{LinkFailure, MAX_FAILURES};
pub use flows::MAX_UDP_OVERLOAD;
use flows::*;
use programs::*;
use rate_control::*;
pub use rate_control::{PacedTransport, RateControl, DEFAULT_CNP_INTERVAL_PS, DEFAULT_RETRANSMIT_TIMEOUT_PS};
use rate_traces::*;
pub use rate_traces::{parse_trace, RateTrace, BUILTIN_TRACES, MAX_TRACE_POINTS};
use splits::*;
use sweep::*;
pub use sweep::{Sweep, SweepPoint, MAX_SWEEP_POINTS};
use topology::*;
pub use tunnels::tunnel_tcp_defaults;
use tunnels::*;
use variants::*;
pub use workloads::MAX_FLOWS;
use workloads::*;

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

pub use mpsched_topo::{Link, Node, NodeKind, QueueDiscipline, Routing, MAX_QUEUES};

/// Transport of a flow.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Protocol {
    /// UDP constant bit rate, as iperf `-u -b`.
    Udp,
    /// A TCP connection.
    Tcp,
    /// An MPTCP connection (RFC 8684) of several TCP subflows ([`TcpFlow::mptcp`]).
    Mptcp,
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
    /// MPTCP settings, for an MPTCP flow (its subflows each use `config`).
    pub mptcp: Option<MptcpSettings>,
}

/// Most subflows an MPTCP connection may have (Linux's limit, `ip mptcp limits set subflows 8`,
/// and the largest count Raiciu et al. ran).
pub const MAX_SUBFLOWS: u8 = 8;

/// An MPTCP flow's settings (`protocol = "mptcp"`, `[flow.mptcp]`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MptcpSettings {
    /// Subflows, 1 to [`MAX_SUBFLOWS`]: each its own 5-tuple (the next source port, and the
    /// next interface of a host that has several).
    pub subflows: u8,
    /// Which subflow carries each segment.
    pub scheduler: MptcpScheduler,
    /// Protocol version: 1 (RFC 8684, SHA-256, Linux's) or 0 (RFC 6824, SHA-1, MP-HULA's).
    pub version: mpsched_core::mptcp::MptcpVersion,
}

/// The packet schedulers an MPTCP flow may name.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MptcpScheduler {
    /// The subflow with the lowest smoothed RTT that has room in its window (Linux's default).
    LowestRtt,
    /// Each subflow in turn.
    RoundRobin,
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
    /// The node where the subtunnel paths start: a switch, or a host that encapsulates its own
    /// traffic.
    pub entry: usize,
    /// The node where they end: a switch, or a host that decapsulates what it receives.
    pub exit: usize,
    /// Path indices, entry to exit (the opposite direction uses them reversed).
    pub subtunnels: Vec<usize>,
    /// Scheduler at both ends, by its registry name (`mpsched_programs::tunnel`).
    pub scheduler: &'static str,
    /// The scheduler's parameters.
    pub scheduler_params: mpsched_programs::Params,
    /// Subtunnel transport.
    pub transport: SubtunnelTransport,
    /// Send buffer of each TCP subtunnel, in bytes.
    pub send_buffer_bytes: u64,
    /// TCP settings of the subtunnels.
    pub tcp: TcpConfig,
    /// Packets the exit's reordering buffer holds (0: none, packets leave as they arrive; UDP
    /// subtunnels only).
    pub reorder_capacity: u32,
    /// Longest a packet waits in the reordering buffer.
    pub reorder_timeout_ps: u64,
}

/// Most packets a tunnel exit's reordering buffer may hold (24 bytes each in the simulator,
/// allocated when the first packet waits).
pub const MAX_REORDER_CAPACITY: u32 = 65_536;
/// The reordering timeout by default: 100 ms.
pub const DEFAULT_REORDER_TIMEOUT_PS: u64 = 100_000_000_000;

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
    /// UDP: a rate controller paces it (`rate_bps` is then its most).
    pub rate_control: Option<RateControl>,
    /// UDP paced by a rate controller: its transport (a size, recovery, the host's queue);
    /// Some exactly when `rate_control` is.
    pub paced: Option<PacedTransport>,
}

impl Flow {
    /// A rate-controlled UDP flow's size, when it is a transfer.
    pub fn paced_size_bytes(&self) -> Option<u64> {
        self.paced.and_then(|p| p.size_bytes)
    }
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
    /// Per node: the switch program it runs, by its registry name (None for hosts).
    pub programs: Vec<Option<&'static str>>,
    /// The parameters of every program a switch runs or `[programs]` configures.
    pub program_params: BTreeMap<&'static str, mpsched_programs::Params>,
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
    /// How switches route what no split or pin decides.
    pub routing: Routing,
    /// What `mpsched sweep` varies, if the file says.
    pub sweep: Option<Sweep>,
    /// Links that fail during the run, in file order.
    pub failures: Vec<LinkFailure>,
    /// Links whose rate follows a trace, in file order.
    pub rate_traces: Vec<RateTrace>,
    /// Classifier rules at switches (`[[classify]]`), in file order.
    pub classify: Vec<ClassifyIntent>,
    raw_splits: Vec<RawSplitKeep>,
    raw_tunnels: Vec<RawTunnel>,
    /// `[tcp]`'s settings: what a variant's `protocol = "tcp"` gives the flows it makes TCP.
    tcp_defaults: TcpConfig,
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
        let t = parse_time_ps(v).map_err(|e| {
            self.err(
                field,
                format!("expected a time like `20s` or `6560ns`, got `{v}` ({e})"),
            )
        })?;
        if t > MAX_TIME_PS {
            return Err(self.err(
                field,
                format!("`{v}` is above {}", crate::units::format_time_ps(MAX_TIME_PS)),
            ));
        }
        Ok(t)
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
        Self::from_toml_with(text, origin, &[])
    }

    /// [`Scenario::from_toml`] with `overrides` set in the text first (see
    /// [`crate::overrides`]): a sweep point, or `--set` on the command line. Every door that
    /// reads scenario text (files, built-ins, `--set`, sweeps, Python) comes through here, so
    /// the bounds on the text ([`crate::prescan`]) are checked here, before a tree is built.
    pub fn from_toml_with(
        text: &str,
        origin: &str,
        overrides: &[crate::overrides::Override],
    ) -> Result<Scenario, ScenarioError> {
        within_text_bounds(text, origin)?;
        let raw = match overrides.is_empty() {
            true => toml::from_str(text).map_err(|e| {
                let (field, message) = describe_toml_error(&e, text);
                ScenarioError {
                    file: origin.to_string(),
                    field,
                    message,
                }
            })?,
            false => overridden(text, origin, overrides)?,
        };
        let sc = validate(raw, origin)?;
        for v in &sc.variants {
            sc.with_variant(&v.name)?;
        }
        Ok(sc)
    }

    /// Scenario text as a TOML table, within the bounds on text ([`crate::prescan`]), for a
    /// caller that edits the table before validating it (`mpsched sweep --set`).
    pub fn parse_table(text: &str, origin: &str) -> Result<toml::Table, ScenarioError> {
        within_text_bounds(text, origin)?;
        table_of(text, origin)
    }

    /// Read, parse and validate a scenario file.
    pub fn load(path: &std::path::Path) -> Result<Scenario, ScenarioError> {
        let origin = path.display().to_string();
        let text =
            crate::files::read_bounded(path, crate::files::MAX_SCENARIO_FILE_BYTES).map_err(|e| ScenarioError {
                file: origin.clone(),
                field: String::new(),
                message: format!("cannot read: {e}"),
            })?;
        Self::from_toml(&text, &origin)
    }

    /// The scenario with every link's propagation delay at zero: what the kernel backend runs
    /// with `--ignore-delay` where it has no netem, so that `mpsched compare` can hold the
    /// simulator to the same network.
    pub fn without_propagation_delay(&self) -> Scenario {
        let mut sc = self.clone();
        for l in &mut sc.links {
            l.delay_ps = 0;
        }
        sc
    }

    /// The scenario with its timeline scaled so that it lasts `duration_ps` (flow starts and
    /// stops, and failures, scale with it; rate traces and workloads' arrivals do not). For
    /// tests and benchmarks that want a paper's whole timeline in less time; `--duration`
    /// cuts a run short instead ([`Scenario::cut_to`]).
    pub fn scaled_to(&self, duration_ps: u64) -> Scenario {
        let mut out = self.clone();
        let scale = |t: u64| ((t as u128 * duration_ps as u128) / self.duration_ps.max(1) as u128) as u64;
        for f in &mut out.flows {
            f.start_ps = scale(f.start_ps);
            f.stop_ps = scale(f.stop_ps);
        }
        for f in &mut out.failures {
            f.at_ps = scale(f.at_ps);
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

/// `text` refused with the line and the bound it passes, if it passes one.
fn within_text_bounds(text: &str, origin: &str) -> Result<(), ScenarioError> {
    use crate::prescan::{MAX_DEPTH, MAX_TABLES, MAX_TOKENS, MAX_VALUES};
    crate::prescan::check(text).map(|_| ()).map_err(|r| ScenarioError {
        file: origin.to_string(),
        field: String::new(),
        message: format!(
            "line {}: {}; a scenario's text holds at most {MAX_TOKENS} tokens, {MAX_VALUES} values and \
             {MAX_TABLES} tables, nested at most {MAX_DEPTH} deep",
            r.line, r.message
        ),
    })
}

/// `text` (its bounds already checked) as a TOML table.
fn table_of(text: &str, origin: &str) -> Result<toml::Table, ScenarioError> {
    text.parse().map_err(|e: toml::de::Error| {
        let (field, message) = describe_toml_error(&e, text);
        ScenarioError {
            file: origin.to_string(),
            field,
            message,
        }
    })
}

/// The raw scenario of `text` (its bounds already checked) with `overrides` set.
fn overridden(
    text: &str,
    origin: &str,
    overrides: &[crate::overrides::Override],
) -> Result<RawScenario, ScenarioError> {
    let err = |field: &str, message: String| ScenarioError {
        file: origin.to_string(),
        field: field.to_string(),
        message,
    };
    let mut doc = table_of(text, origin)?;
    for o in overrides {
        crate::overrides::apply(&mut doc, o).map_err(|m| err(&o.key, m))?;
    }
    let keys: Vec<&str> = overrides.iter().map(|o| o.key.as_str()).collect();
    toml::Value::Table(doc).try_into().map_err(|e: toml::de::Error| {
        // A typed value loses its place in the text: the field is the first key whose
        // setting breaks the scenario.
        let field = first_breaking_override(text, overrides).unwrap_or_default();
        err(
            &field,
            format!("after setting {}: {}", keys.join(", "), e.message().trim()),
        )
    })
}

/// The key of the first of `overrides` after whose setting `text` no longer reads as a
/// scenario (None if each alone reads).
fn first_breaking_override(text: &str, overrides: &[crate::overrides::Override]) -> Option<String> {
    let mut doc: toml::Table = text.parse().ok()?;
    for o in overrides {
        crate::overrides::apply(&mut doc, o).ok()?;
        if toml::Value::Table(doc.clone()).try_into::<RawScenario>().is_err() {
            return Some(o.key.clone());
        }
    }
    None
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
    // An error about a whole table (a missing key, an unknown table) points at its header:
    // count that header too, or the table before it would be blamed.
    let line_start = before.rfind('\n').map_or(0, |i| i + 1);
    let line_end = text[line_start..].find('\n').map_or(text.len(), |i| line_start + i);
    let at_header = text[line_start..line_end].trim_start().starts_with('[');
    let scanned = if at_header { &text[..line_end] } else { before };
    let mut table = String::new();
    let mut counts: BTreeMap<String, usize> = BTreeMap::new();
    for line in scanned.lines() {
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
        // An unknown table is named as written, not as an entry of itself.
        None if at_header && msg.starts_with("unknown field") => table
            .split_once('[')
            .map_or(table.clone(), |(head, _)| head.to_string()),
        None => table,
    };
    (field, format!("{msg} (line {line_no}, column {col})"))
}

/// Longest name a scenario may give anything.
pub const MAX_NAME_LEN: usize = 64;

/// Names reach file paths (`out/NAME`, `NODE-IFACE.pcap`, a variant's folder), namespace names
/// and CSV headers, so every name a scenario gives takes one safe form: ASCII letters, digits,
/// `_`, `-` and `.`, starting with a letter or digit, at most [`MAX_NAME_LEN`] characters. No
/// `/`, no `..` at the start, nothing a CSV or a shell must quote.
fn check_name(ctx: &Ctx<'_>, field: impl Into<String>, name: &str) -> Result<(), ScenarioError> {
    let ok_char = |c: char| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.');
    let first_ok = name.chars().next().is_some_and(|c| c.is_ascii_alphanumeric());
    if name.len() > MAX_NAME_LEN || !first_ok || !name.chars().all(ok_char) {
        return Err(ctx.err(
            field,
            format!(
                "expected a name of letters, digits, `_`, `-` and `.` that starts with a letter or digit, at most {MAX_NAME_LEN} characters; got `{}`",
                name.escape_debug()
            ),
        ));
    }
    Ok(())
}

fn validate(mut raw: RawScenario, origin: &str) -> Result<Scenario, ScenarioError> {
    let ctx = Ctx { file: origin };
    let routing = routing_of(&ctx, &raw)?;
    if let Some(t) = raw.topology.take() {
        let (nodes, links) = generated(&ctx, &t)?;
        raw.node.splice(0..0, nodes);
        raw.link.splice(0..0, links);
    }
    if raw.node.len() > MAX_NODES {
        return Err(ctx.err("node", format!("{} nodes; at most {MAX_NODES}", raw.node.len())));
    }
    if raw.link.len() > MAX_LINKS {
        return Err(ctx.err("link", format!("{} links; at most {MAX_LINKS}", raw.link.len())));
    }
    let m = &raw.scenario;
    check_name(&ctx, "scenario.name", &m.name)?;
    let duration_ps = ctx.time("scenario.duration", &m.duration)?;
    if duration_ps == 0 {
        return Err(ctx.err("scenario.duration", "expected a duration above zero"));
    }
    let default_queue = m.queue_pkts.unwrap_or(DEFAULT_QUEUE_PKTS);
    if default_queue == 0 {
        return Err(ctx.err("scenario.queue_pkts", "expected at least 1"));
    }
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
    if !(1..=MAX_REPETITIONS).contains(&repetitions) {
        return Err(ctx.err(
            "scenario.repetitions",
            format!("expected 1 to {MAX_REPETITIONS}, got {repetitions}"),
        ));
    }

    let nodes = nodes_of(&ctx, &raw.node)?;
    // By name in one probe: links and flows name nodes thousands of times at scale.
    let node_index: HashMap<&str, usize> = nodes.iter().enumerate().map(|(i, n)| (n.name.as_str(), i)).collect();
    let node_of = |field: String, name: &str| {
        node_index
            .get(name)
            .copied()
            .ok_or_else(|| ctx.err(field, format!("no node named `{name}`")))
    };

    let links = links_of(&ctx, &raw.link, &nodes, &node_of, default_queue)?;
    let mut ports = vec![0usize; nodes.len()];
    for l in &links {
        ports[l.a] += 1;
        ports[l.b] += 1;
    }
    if let Some(n) = ports.iter().position(|&p| p > mpsched_topo::routing::MAX_PORTS) {
        return Err(ctx.err(
            "link",
            format!(
                "`{}` has {} links; a node has at most {} ports",
                nodes[n].name,
                ports[n],
                mpsched_topo::routing::MAX_PORTS
            ),
        ));
    }
    let control_plane = ControlPlane::of(&nodes, &links);
    control_plane.check("the network", 1).map_err(|e| ctx.err("node", e))?;
    let drawn = workload_flows(&ctx, &raw, &nodes, &links, duration_ps, &node_of)?;
    raw.flow.extend(drawn);
    let paths = paths_of(&ctx, &raw.path, &nodes, &links, &node_of)?;
    let path_index: HashMap<&str, usize> = paths.iter().enumerate().map(|(i, p)| (p.name.as_str(), i)).collect();
    let path_of = |field: String, name: &str| {
        path_index
            .get(name)
            .copied()
            .ok_or_else(|| ctx.err(field, format!("no path named `{name}`")))
    };

    let (splits, raw_splits) = splits_of(&ctx, &raw.split, &paths, &node_of, &path_of)?;
    splits_use_node_addresses(&ctx, &splits, &nodes, &links)?;
    let programs = node_programs(&ctx, &raw, &nodes)?;
    let program_params = program_params(&ctx, &raw.programs, &programs)?;
    ports_suit_programs(&ctx, &nodes, &links, &programs, &program_params)?;
    port_counts_suit_programs(&ctx, &|i| program_field(&raw, i), &nodes, &links, &programs)?;
    splits_run_where_supported(&ctx, "split", &splits, &paths, &nodes, &programs)?;
    let tcp_defaults = tcp_config(&ctx, "tcp", TcpConfig::default(), &raw.tcp.clone().unwrap_or_default())?;
    let flows = flows_of(&ctx, &raw, &nodes, duration_ps, &node_of, &path_of)?;
    flows_are_routable(&ctx, &flows, &nodes, &links)?;
    udp_rates_are_sendable(&ctx, &flows, &nodes, &links, &|i| format!("flow[{i}].rate"))?;
    let tunnels = tunnels_of(&ctx, &raw.tunnel, &nodes, &links, &paths, &splits)?;
    let failures = failures_of(&ctx, &raw.failure, &links, duration_ps, &node_of)?;
    // A run computes the routes again for each failure, and keeps each one's switch tables.
    if !failures.is_empty() {
        let what = format!("the network with {} failures", failures.len());
        control_plane
            .check(&what, 1 + failures.len())
            .map_err(|e| ctx.err("failure", e))?;
    }
    let rate_traces = rate_traces_of(&ctx, &raw.rate_trace, &links, duration_ps)?;
    let classify = classifiers_of(&ctx, &raw.classify, &nodes, &links, &node_of)?;
    classifiers_run_where_supported(&ctx, "classify", &classify, &nodes, &programs)?;
    let variants = variants_of(&ctx, &raw.variant)?;
    let seed = m.seed.unwrap_or(1);
    let names: Vec<String> = variants.iter().map(|v| v.name.clone()).collect();
    let sweep = sweep_of(&raw.sweep, seed, &names);
    if let Some(s) = &sweep {
        s.check(origin, &names)?;
    }

    let sc = Scenario {
        name: m.name.clone(),
        title: m.title.clone(),
        reproduces: m.reproduces.clone(),
        origin: origin.to_string(),
        duration_ps,
        seed,
        repetitions,
        sample_interval_ps,
        start_jitter_ps,
        send_jitter_ps,
        nodes,
        links,
        programs,
        program_params,
        paths,
        splits,
        flows,
        tunnels,
        variants,
        routing,
        sweep,
        failures,
        rate_traces,
        classify,
        raw_splits,
        raw_tunnels: raw.tunnel,
        tcp_defaults,
    };
    sc.check_bounds()?;
    Ok(sc)
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

    /// Each MPTCP mistake is refused at its field, with what would be accepted.
    #[test]
    fn mptcp_flows_are_checked_at_their_fields() {
        let (_, text) = crate::builtin::find("mptcp/two-paths").unwrap();
        let ok = Scenario::from_toml(text, "x.toml").unwrap();
        let m = ok.flows[0].tcp.as_ref().unwrap().mptcp.unwrap();
        assert_eq!((m.subflows, m.scheduler), (2, MptcpScheduler::LowestRtt));
        assert_eq!(m.version, mpsched_core::mptcp::MptcpVersion::V1);
        for (from, to, field, says) in [
            (
                "mptcp.subflows = 2",
                "mptcp.subflows = 9",
                "flow[0].mptcp.subflows",
                "1 to 8",
            ),
            (
                "mptcp.subflows = 2",
                "mptcp.subflows = 0",
                "flow[0].mptcp.subflows",
                "1 to 8",
            ),
            (
                "mptcp.subflows = 2",
                "mptcp.version = 2",
                "flow[0].mptcp.version",
                "RFC 8684",
            ),
            (
                "mptcp.subflows = 2",
                "mptcp.scheduler = \"blest\"",
                "flow[0].mptcp.scheduler",
                "roundrobin",
            ),
            (
                "protocol = \"mptcp\"",
                "protocol = \"tcp\"",
                "flow[0].mptcp",
                "MPTCP flows only",
            ),
            (
                "tcp.cc = \"cubic\"",
                "tcp.cc = \"olia\"\nrequest = \"1KB\"\nresponse = \"1KB\"",
                "flow[0].request",
                "not modelled",
            ),
            (
                "protocol = \"mptcp\"\ntcp.cc = \"cubic\"\nmptcp.subflows = 2",
                "protocol = \"tcp\"\ntcp.cc = \"lia\"",
                "flow[0].tcp.cc",
                "couples",
            ),
        ] {
            assert!(text.contains(from), "{from}");
            let e = err(&text.replacen(from, to, 1));
            assert_eq!(e.field, field, "{to}: {e}");
            assert!(e.to_string().contains(says), "{to}: {e}");
        }
        // A variant's subflows reach every MPTCP flow; with none, it is refused.
        let v = format!("{text}\n[[variant]]\nname = \"four\"\nsubflows = 4\n");
        let four = Scenario::from_toml(&v, "x.toml").unwrap().with_variant("four").unwrap();
        assert_eq!(four.flows[0].tcp.as_ref().unwrap().mptcp.unwrap().subflows, 4);
        let (_, tcp) = crate::builtin::find("tcp/two-flows").unwrap();
        let v = format!("{tcp}\n[[variant]]\nname = \"four\"\nsubflows = 4\n");
        let e = Scenario::from_toml(&v, "x.toml").unwrap_err();
        assert_eq!(e.field, "variant[2].subflows");
        assert!(e.to_string().contains("no MPTCP flow"), "{e}");
        // A host's own queue: on links with a host end only, at least one packet.
        let hq = text.replacen("a_ip = \"10.1.0.2\"", "a_ip = \"10.1.0.2\"\nhost_queue_pkts = 1000", 1);
        assert_eq!(
            Scenario::from_toml(&hq, "x.toml").unwrap().links[0].host_queue_pkts,
            Some(1000)
        );
        let e = err(&text.replacen("name = \"path1\"", "name = \"path1\"\nhost_queue_pkts = 1000", 1));
        assert_eq!(e.field, "link[2].host_queue_pkts");
        assert!(e.to_string().contains("host end"), "{e}");
        let e = err(&hq.replacen("host_queue_pkts = 1000", "host_queue_pkts = 0", 1));
        assert_eq!(e.field, "link[0].host_queue_pkts");
        // A coupled controller set by a variant leaves single-path flows theirs.
        let (_, shared) = crate::builtin::find("mptcp/shared-bottleneck").unwrap();
        let lia = Scenario::from_toml(shared, "x.toml")
            .unwrap()
            .with_variant("lia")
            .unwrap();
        let ccs: Vec<CcKind> = lia.flows.iter().map(|f| f.tcp.as_ref().unwrap().config.cc).collect();
        assert_eq!(ccs, vec![CcKind::Lia, CcKind::Reno]);
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
        assert!(e.message.contains("`afmt` reads each subtunnel"), "{e}");
        let e = err(&afmt_text().replacen("protocol = \"tcp\"", "protocol = \"tcp\"\nrate = \"1Mbps\"", 1));
        assert_eq!(e.field, "flow[0].rate");
        let e = err(&afmt_text().replacen("cc = \"reno\"", "cc = \"vegas\"", 1));
        assert_eq!(e.field, "tcp.cc");
        let e = err(&afmt_text().replacen("subtunnels = [\"up16\"", "subtunnels = [\"nope\"", 1));
        assert_eq!(e.field, "tunnel[0].subtunnels[0]");
    }
}
