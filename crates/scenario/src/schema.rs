//! The scenario file as written (TOML), before validation.
//!
//! Every table rejects unknown keys so that a typo is an error, not a silently ignored setting.

use serde::Deserialize;
use std::collections::BTreeMap;

/// A whole scenario file.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawScenario {
    /// The `[scenario]` table.
    pub scenario: RawMeta,
    /// `[[node]]` entries.
    #[serde(default)]
    pub node: Vec<RawNode>,
    /// `[[link]]` entries.
    #[serde(default)]
    pub link: Vec<RawLink>,
    /// `[[path]]` entries.
    #[serde(default)]
    pub path: Vec<RawPath>,
    /// `[[split]]` entries.
    #[serde(default)]
    pub split: Vec<RawSplit>,
    /// `[[flow]]` entries.
    #[serde(default)]
    pub flow: Vec<RawFlow>,
    /// `[[variant]]` entries.
    #[serde(default)]
    pub variant: Vec<RawVariant>,
    /// `[tcp]`: defaults for every TCP flow.
    #[serde(default)]
    pub tcp: Option<RawTcp>,
    /// `[[tunnel]]` entries.
    #[serde(default)]
    pub tunnel: Vec<RawTunnel>,
    /// `[topology]`: a generated fat tree or leaf-spine, before the `[[node]]`s and `[[link]]`s.
    #[serde(default)]
    pub topology: Option<RawTopology>,
    /// `[[workload]]` entries: TCP flows drawn from a flow-size distribution.
    #[serde(default)]
    pub workload: Vec<RawWorkload>,
    /// `[sweep]`: what `mpsched sweep` varies (ignored by a plain run).
    #[serde(default)]
    pub sweep: Option<RawSweep>,
    /// `[[failure]]` entries: links that fail during the run.
    #[serde(default)]
    pub failure: Vec<RawFailure>,
    /// `[[rate_trace]]` entries: links whose capacity follows a trace.
    #[serde(default)]
    pub rate_trace: Vec<RawRateTrace>,
    /// `[programs.<name>]`: each switch program's parameters, in the scenario's units.
    #[serde(default)]
    pub programs: BTreeMap<String, toml::Table>,
    /// `[[classify]]` entries: classifier rules at switches.
    #[serde(default)]
    pub classify: Vec<RawClassify>,
}

/// `[[classify]]`: a rule of a switch's classifier, which picks a packet's queue by its
/// source, destination and DSCP (first match first, in file order).
#[derive(Debug, Deserialize, Clone, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct RawClassify {
    /// The switch.
    pub at: String,
    /// Source: a node (any of its addresses), an address or a prefix (`10.0.1.0/24`).
    #[serde(default)]
    pub src: Option<String>,
    /// Destination, as `src`.
    #[serde(default)]
    pub dst: Option<String>,
    /// The DSCP it arrives with, 0 to 63.
    #[serde(default)]
    pub dscp: Option<u8>,
    /// The queue it picks, 0 to 7.
    pub queue: u8,
}

/// `[[failure]]`: a link fails at a time; the control plane routes around it after a delay.
#[derive(Debug, Deserialize, Clone, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct RawFailure {
    /// The link by name ...
    #[serde(default)]
    pub link: Option<String>,
    /// ... or by its two ends (the first link joining them).
    #[serde(default)]
    pub a: Option<String>,
    #[serde(default)]
    pub b: Option<String>,
    /// When it fails.
    pub at: String,
    /// How long until the control plane has routed around it (default 0 s).
    #[serde(default)]
    pub reroute_after: Option<String>,
}

/// `[[rate_trace]]`: a named link's rate follows a trace of `time_s,rate_mbps` lines.
#[derive(Debug, Deserialize, Clone, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct RawRateTrace {
    /// The link, by name.
    pub link: String,
    /// A built-in trace's name, or a CSV file beside the scenario.
    pub file: String,
    /// When the trace's time 0 is in the run (default 0 s).
    #[serde(default)]
    pub start: Option<String>,
}

/// `[sweep]`: one key of this file over a list of values, times variants, times seeds.
#[derive(Debug, Deserialize, Clone, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct RawSweep {
    /// A dotted key of this file (`workload.load`).
    #[serde(default)]
    pub parameter: Option<String>,
    /// Its values.
    #[serde(default)]
    pub values: Vec<toml::Value>,
    /// Seeds (each point sets `scenario.seed`); default the scenario's seed.
    #[serde(default)]
    pub seeds: Option<Vec<u64>>,
    /// Variants; default all of them.
    #[serde(default)]
    pub variants: Vec<String>,
}

/// `[[workload]]`: TCP (or MPTCP) transfers with sizes from an empirical CDF, arriving as a
/// Poisson process at each client at a target load, or one long flow per client.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawWorkload {
    /// Flows are named `<name>-<i>`.
    pub name: String,
    /// `websearch`, `datamining`, or a CDF file (relative to the scenario's folder); Poisson
    /// arrivals need it, `once` without it starts long flows.
    #[serde(default)]
    pub cdf: Option<String>,
    /// Offered load per client, a fraction of its link rate (0 to 1, exclusive of 0); Poisson
    /// arrivals only.
    #[serde(default)]
    pub load: Option<f64>,
    /// `poisson` (default: flows arrive at `load`) or `once` (one flow per client at `start`).
    #[serde(default)]
    pub arrivals: Option<String>,
    /// The rate `load` is a fraction of, shared evenly by the clients (MP-HULA's load on the
    /// core); default: each client's own link rate.
    #[serde(default)]
    pub capacity: Option<String>,
    /// `random` (each flow to a server drawn uniformly, never the client itself) or
    /// `permutation` (each client to one fixed server, a random derangement of the hosts).
    #[serde(default)]
    pub pattern: Option<String>,
    /// Hosts that start flows (default: every host).
    #[serde(default)]
    pub clients: Option<Vec<String>>,
    /// Hosts flows go to (default: every host).
    #[serde(default)]
    pub servers: Option<Vec<String>>,
    /// Arrivals from (default 0 s) ...
    #[serde(default)]
    pub start: Option<String>,
    /// ... until (default: the scenario's end).
    #[serde(default)]
    pub stop: Option<String>,
    /// Seed of the sizes and arrivals (default: the scenario's seed).
    #[serde(default)]
    pub seed: Option<u64>,
    /// `tcp` (default), `mptcp`, or `udp`: every flow paced by the rate controller of
    /// `[workload.rate_control]`, a sized one ending when its bytes are delivered.
    #[serde(default)]
    pub protocol: Option<String>,
    /// MPTCP settings of every flow (`protocol = "mptcp"`).
    #[serde(default)]
    pub mptcp: Option<RawMptcp>,
    /// UDP: every flow's rate controller and transport (`[flow.rate_control]`'s keys).
    #[serde(default)]
    pub rate_control: Option<RawRateControl>,
    /// UDP: the most each flow sends, on payload (its controller's line rate); default the
    /// client's link rate less the headers of a full datagram.
    #[serde(default)]
    pub rate: Option<String>,
}

/// `[topology]`: a generated data-centre topology.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawTopology {
    /// `fat-tree`, `three-tier` or `leaf-spine`.
    pub kind: String,
    /// Fat tree: the switches' port count (even).
    pub k: Option<usize>,
    /// Fat tree: hosts per rack (default k/2: no oversubscription).
    pub hosts_per_tor: Option<usize>,
    /// Fat tree: hosts per rack as a multiple of k/2 (the oversubscription ratio at the racks).
    pub oversubscription: Option<usize>,
    /// Three-tier: pods, racks per pod, aggregation switches per pod, cores (with
    /// `hosts_per_tor`).
    pub pods: Option<usize>,
    pub tors_per_pod: Option<usize>,
    pub aggs_per_pod: Option<usize>,
    pub cores: Option<usize>,
    /// Leaf-spine: leaves, spines, hosts per leaf.
    pub leaves: Option<usize>,
    pub spines: Option<usize>,
    pub hosts_per_leaf: Option<usize>,
    /// Hosts to their rack's switch.
    pub host_links: RawTier,
    /// Fat tree: rack to aggregation; leaf-spine: leaf to spine.
    pub edge_links: RawTier,
    /// Fat tree: aggregation to core.
    pub core_links: Option<RawTier>,
    /// Links absent from the start: pairs of node names.
    #[serde(default)]
    pub down: Vec<[String; 2]>,
    /// Programs by tier: `tor`, `agg`, `core` (fat tree, three-tier) or `leaf`, `spine`.
    #[serde(default)]
    pub programs: BTreeMap<String, String>,
}

/// One tier's links in `[topology]`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawTier {
    pub rate: String,
    #[serde(default)]
    pub delay: Option<String>,
    #[serde(default)]
    pub queue_pkts: Option<u32>,
    /// The queue at the host end (host tier only).
    #[serde(default)]
    pub host_queue_pkts: Option<u32>,
    #[serde(default)]
    pub ecn_threshold_pkts: Option<u32>,
}

/// TCP settings (`[tcp]`, `[tunnel.tcp]`); every key optional, Linux's defaults otherwise.
#[derive(Debug, Deserialize, Default, Clone, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct RawTcp {
    /// `reno`, `cubic` or `dctcp`; for MPTCP also `lia` or `olia`.
    pub cc: Option<String>,
    pub mss: Option<String>,
    pub initial_window: Option<u32>,
    pub min_rto: Option<String>,
    /// Delayed-ACK timeout (`0ms` acknowledges every segment).
    pub delayed_ack: Option<String>,
    pub delayed_ack_segments: Option<u32>,
    pub nodelay: Option<bool>,
    pub receive_window: Option<String>,
    pub ecn: Option<bool>,
    /// Bytes a host's interface queue may hold before its TCP senders wait for room
    /// (simulator; default: they never wait, and the queue drops what overflows).
    pub host_queue_limit: Option<String>,
    /// RFC 3465's L: segments an ACK may grow the window by (default: no limit, as Linux).
    pub abc_limit: Option<u32>,
}

/// `[[tunnel]]`: a multipath tunnel between two nodes, switches or hosts. A node may end several
/// tunnels when each ends at a host on the other side (a gateway ending one per user device).
#[derive(Debug, Deserialize, Clone, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct RawTunnel {
    pub name: String,
    /// Where the subtunnel paths start (a switch or a host).
    pub entry: String,
    /// Where they end (a switch or a host).
    pub exit: String,
    /// Paths, each from `entry` to `exit`.
    pub subtunnels: Vec<String>,
    /// A registered tunnel scheduler (`mpsched list`).
    pub scheduler: String,
    /// The scheduler's parameters (`[tunnel.params]`), in their units; a key that no
    /// registered scheduler declares is refused, one that this scheduler does not declare is
    /// ignored (variants switch schedulers).
    #[serde(default)]
    pub params: Option<toml::Table>,
    /// `tcp` or `udp`.
    pub transport: String,
    /// Send buffer per TCP subtunnel (default 128KiB, ns-3's `TcpSocket::SndBufSize`).
    #[serde(default)]
    pub send_buffer: Option<String>,
    /// AFMT's flow-table capacity (default 65536).
    #[serde(default)]
    pub flow_table_entries: Option<u32>,
    /// TCP settings of the subtunnels (default: delayed ACK 40 ms, no Nagle).
    #[serde(default)]
    pub tcp: Option<RawTcp>,
    /// Packets the exit holds to restore the order of entry (default 0: none).
    #[serde(default)]
    pub reorder_capacity: Option<u32>,
    /// Longest a packet waits for the ones before it (default 100ms).
    #[serde(default)]
    pub reorder_timeout: Option<String>,
}

/// `[scenario]`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawMeta {
    pub name: String,
    #[serde(default)]
    pub title: String,
    /// Paper, figure or table this scenario reproduces.
    #[serde(default)]
    pub reproduces: String,
    pub duration: String,
    #[serde(default)]
    pub seed: Option<u64>,
    #[serde(default)]
    pub repetitions: Option<u32>,
    /// Default queue capacity in packets for links that do not give one.
    #[serde(default)]
    pub queue_pkts: Option<u32>,
    /// Sampling interval of the time series (default `1s`, as bwm-ng).
    #[serde(default)]
    pub sample_interval: Option<String>,
    /// Random start offset added to each flow, up to this (default `0s`).
    #[serde(default)]
    pub start_jitter: Option<String>,
    /// Random delay added to each packet's nominal send time, up to this (default `0s`): the
    /// timer and scheduling noise of a real sender, which keeps constant-bit-rate sources from
    /// phase-locking at a drop-tail queue.
    #[serde(default)]
    pub send_jitter: Option<String>,
    /// `shortest` (one path per destination) or `ecmp` (every equal-cost next hop, per-flow
    /// hash); default `ecmp` with a `[topology]`, `shortest` otherwise.
    #[serde(default)]
    pub routing: Option<String>,
    /// The program every switch runs unless its `[[node]]` or its tier says otherwise
    /// (default `multipath`).
    #[serde(default)]
    pub program: Option<String>,
}

/// `[[node]]`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawNode {
    pub name: String,
    pub kind: String,
    #[serde(default)]
    pub ip: Option<String>,
    /// A switch's program (default: `[scenario] program`).
    #[serde(default)]
    pub program: Option<String>,
}

/// `[[link]]`: a full-duplex link, one queue per direction.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawLink {
    pub a: String,
    pub b: String,
    pub rate: String,
    #[serde(default)]
    pub delay: Option<String>,
    #[serde(default)]
    pub queue_pkts: Option<u32>,
    /// The queue at a host end (its own interface queue), when it differs from `queue_pkts`.
    #[serde(default)]
    pub host_queue_pkts: Option<u32>,
    /// A name for variants to refer to.
    #[serde(default)]
    pub name: Option<String>,
    /// Mark ECN-capable packets CE when this many packets wait (both directions, at switches).
    #[serde(default)]
    pub ecn_threshold_pkts: Option<u32>,
    /// Output queues per direction (default 1).
    #[serde(default)]
    pub queues: Option<u8>,
    /// `fifo`, `strict-priority` (the default with several queues), `wrr` or `drr`.
    #[serde(default)]
    pub discipline: Option<String>,
    /// WRR: packets per round per queue; DRR: 1514-byte quanta per round per queue.
    #[serde(default)]
    pub queue_weights: Option<Vec<u32>>,
    /// The address of host `a`'s interface on this link (default: the host's own address).
    #[serde(default)]
    pub a_ip: Option<String>,
    /// The address of host `b`'s interface on this link.
    #[serde(default)]
    pub b_ip: Option<String>,
}

/// `[[path]]`: a named sequence of nodes from a splitting point to a confluence point.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawPath {
    pub name: String,
    pub nodes: Vec<String>,
}

/// DWRR constants in `[split.dwrr]`.
#[derive(Debug, Deserialize, Default, Clone, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct RawDwrr {
    pub groups: Option<u16>,
    pub avoidance_drop_pkts: Option<u32>,
    pub weight_scale: Option<u16>,
    pub min_weight: Option<u16>,
    pub max_step: Option<u16>,
}

/// `[[split]]`: traffic from `src` to `dst` is split over `paths`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawSplit {
    #[serde(default)]
    pub name: Option<String>,
    pub src: String,
    pub dst: String,
    pub paths: Vec<String>,
    pub scheduler: String,
    #[serde(default)]
    pub weights: Option<Vec<u16>>,
    #[serde(default)]
    pub shares: Option<Vec<u32>>,
    /// For `scheduler = "single"`: the path used.
    #[serde(default)]
    pub path: Option<String>,
    #[serde(default)]
    pub ecn_threshold_pkts: Option<u32>,
    #[serde(default)]
    pub feedback_every: Option<u32>,
    #[serde(default)]
    pub dwrr: Option<RawDwrr>,
}

/// `[[flow]]`: a UDP constant-bit-rate flow as iperf sends it, or a TCP connection.
#[derive(Debug, Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub struct RawFlow {
    pub name: String,
    pub src: String,
    pub dst: String,
    #[serde(default)]
    pub protocol: Option<String>,
    /// UDP only.
    #[serde(default)]
    pub rate: Option<String>,
    /// TCP: transfer this many bytes, then stop (default: bulk until `stop`); UDP with
    /// `[flow.rate_control]`: deliver this many payload bytes, then end (default: until `stop`).
    #[serde(default)]
    pub size: Option<String>,
    /// TCP request / response: request size (with `response`).
    #[serde(default)]
    pub request: Option<String>,
    /// TCP request / response: response size.
    #[serde(default)]
    pub response: Option<String>,
    /// TCP request / response: exchanges (default: until `stop`).
    #[serde(default)]
    pub requests: Option<u64>,
    /// TCP: overrides of `[tcp]`.
    #[serde(default)]
    pub tcp: Option<RawTcp>,
    /// MPTCP: subflows, scheduler, version.
    #[serde(default)]
    pub mptcp: Option<RawMptcp>,
    /// UDP: a rate controller paces the flow instead of a constant rate (`rate` is its most).
    #[serde(default)]
    pub rate_control: Option<RawRateControl>,
    #[serde(default)]
    pub payload: Option<String>,
    #[serde(default)]
    pub start: Option<String>,
    #[serde(default)]
    pub stop: Option<String>,
    #[serde(default)]
    pub ecn: Option<String>,
    /// DSCP of its packets, 0 to 63 (a port with several queues puts class `dscp >> 3` in queue
    /// `dscp >> 3` unless its program chooses).
    #[serde(default)]
    pub dscp: Option<u8>,
    /// Pin the flow's route to this path (routes for `dst` along it).
    #[serde(default)]
    pub path: Option<String>,
    #[serde(default)]
    pub src_port: Option<u16>,
    #[serde(default)]
    pub dst_port: Option<u16>,
}

/// `[flow.rate_control]`: a UDP flow paced by a rate controller; every key but `cc` optional.
#[derive(Debug, Deserialize, Default, Clone, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct RawRateControl {
    /// `dcqcn` (DCQCN's reaction point, notified by the receiver's CNPs) or `pmqecn` (PMQECN's
    /// reaction point, Algorithm 3, notified by switches' feedback).
    pub cc: String,
    /// The rate a cut never goes below (default a thousandth of `rate`).
    pub min_rate: Option<String>,
    /// `pmqecn`: the starting rate (default 1Mbps).
    pub initial_rate: Option<String>,
    /// `pmqecn`: the cycle (default 10ms).
    pub cycle: Option<String>,
    /// `pmqecn`: fast recovery cycles after a cut (NC, default 5); `dcqcn`: fast recovery
    /// steps (F, default 5).
    pub fast_recovery: Option<u32>,
    /// `pmqecn`: the target's active increase per cycle (R_A, default 5Mbps).
    pub active_increase: Option<String>,
    /// `dcqcn`: the rate-increase timer (T, default 55us).
    pub increase_period: Option<String>,
    /// `dcqcn`: alpha's decay period (K, default 55us).
    pub alpha_period: Option<String>,
    /// `dcqcn`: alpha's gain is 1 / 2^g_shift (default 8: 1/256).
    pub g_shift: Option<u32>,
    /// `dcqcn`: the byte counter (B, default 10MiB).
    pub byte_counter: Option<String>,
    /// `dcqcn`: additive increase (R_AI, default a thousandth of `rate`).
    pub additive_increase: Option<String>,
    /// `dcqcn`: hyper increase (R_HAI, default a hundredth of `rate`).
    pub hyper_increase: Option<String>,
    /// `dcqcn`: the receiver sends at most one CNP per this (default 50us).
    pub cnp_interval: Option<String>,
    /// A flow of a `size`: how long its sender, having sent its last packet, waits for the
    /// receiver's completion before it sends that packet again (default 1ms; simulator).
    pub retransmit_timeout: Option<String>,
    /// Bytes the sending host's interface queue may hold before the sender waits for room
    /// (default: it never waits; simulator), as `[tcp] host_queue_limit`.
    pub host_queue_limit: Option<String>,
}

/// `[flow.mptcp]`: an MPTCP flow's settings; every key optional.
#[derive(Debug, Deserialize, Default, Clone, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct RawMptcp {
    /// Subflows (default 2).
    pub subflows: Option<u8>,
    /// `default` (lowest RTT with room, Linux's) or `roundrobin`.
    pub scheduler: Option<String>,
    /// 1 (RFC 8684, default) or 0 (RFC 6824).
    pub version: Option<u8>,
}

/// `[[variant]]`: one configuration of the experiment, overriding the split and flow rates.
#[derive(Debug, Deserialize, Clone, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct RawVariant {
    pub name: String,
    /// Which split to override (default: the first).
    #[serde(default)]
    pub split: Option<String>,
    #[serde(default)]
    pub scheduler: Option<String>,
    #[serde(default)]
    pub weights: Option<Vec<u16>>,
    #[serde(default)]
    pub shares: Option<Vec<u32>>,
    #[serde(default)]
    pub path: Option<String>,
    #[serde(default)]
    pub dwrr: Option<RawDwrr>,
    /// Flow name -> rate.
    #[serde(default)]
    pub rates: BTreeMap<String, String>,
    /// Link name -> rate.
    #[serde(default)]
    pub link_rates: BTreeMap<String, String>,
    /// Congestion control of every TCP flow (a coupled one, `lia` or `olia`: of every MPTCP flow).
    #[serde(default)]
    pub cc: Option<String>,
    /// Subflows of every MPTCP flow.
    #[serde(default)]
    pub subflows: Option<u8>,
    /// `tcp`: every MPTCP flow runs as single-path TCP instead (its coupled congestion control
    /// becomes Reno, which is what a coupled controller is on one path), and every
    /// rate-controlled UDP flow as a TCP flow with `[tcp]`'s settings (a sized one as a
    /// transfer of its size).
    #[serde(default)]
    pub protocol: Option<String>,
    /// Scheduler of every tunnel.
    #[serde(default)]
    pub tunnel_scheduler: Option<String>,
    /// Subtunnel transport of every tunnel.
    #[serde(default)]
    pub tunnel_transport: Option<String>,
    /// Scheduler parameters of every tunnel, over each tunnel's own `params`.
    #[serde(default)]
    pub tunnel_params: Option<toml::Table>,
    /// Routing of what no split decides: `ecmp` or `shortest`.
    #[serde(default)]
    pub routing: Option<String>,
    /// The program every switch runs in this variant.
    #[serde(default)]
    pub program: Option<String>,
}
