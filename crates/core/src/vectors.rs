//! Conformance vectors: frames in, then the verdict, chosen path, ECN bits and registers after
//! each frame, shared by the Rust programs and the eBPF programs under `bpf/`.
//!
//! A [`VectorSet`] configures one node (a [`SwitchConfig`], egress markers, fixed RS draws) and
//! lists [`Step`]s: a frame (hex) arriving on a port (`ingress`) or leaving by one at a time
//! (`egress`). Each step's [`Expect`] holds the observable outcome ([`Observed`]) and the
//! registers that changed. [`run_rust`] replays a set through [`FrameSwitch`]; the netns crate
//! replays the same file through the eBPF programs with `BPF_PROG_TEST_RUN`. Both are compared
//! to the file with [`compare`], exactly. The format is documented in `tests/vectors/README.md`;
//! [`standard_sets`] builds the inputs of the sets kept there.

use crate::feedback::{feedback_payload, DEFAULT_FEEDBACK_PORT};
use crate::frame::{FrameAction, FrameSwitch, MarkerConfig};
use crate::marker::MarkOutcome;
use crate::packet::{Ecn, Ipv4, PacketMeta, PortId};
use crate::program::DropReason;
use crate::rng::{RawDraws, SeededRandom};
use crate::sched::{DwrrParams, SchedulerConfig};
use crate::switch::{ConfluenceConfig, SplitGroupConfig, SwitchConfig};
use crate::table::Route;
use crate::wire::{emit_udp_frame, mac_for};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Node number used for the MAC addresses of the node under test's own ports.
pub const OWN_MAC_NODE: u32 = 1;
/// Node number used for the MAC addresses of the peers behind each port.
pub const PEER_MAC_NODE: u32 = 2;

/// Which hook a step runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Hook {
    /// TC ingress: the switch program.
    Ingress,
    /// TC egress: the virtual-queue marker.
    Egress,
}

/// How a step's frame reaches the eBPF program (the Rust programs take every frame as written).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Delivery {
    /// Handed to the program as written, by `BPF_PROG_TEST_RUN`.
    #[default]
    TestRun,
    /// Sent into the port's veth peer, so the kernel's receive path runs before the program
    /// does, as on a live node: it moves an 802.1Q / 802.1ad tag out of the frame into
    /// `skb->vlan_tci`, which `BPF_PROG_TEST_RUN` cannot present (it refuses a context with
    /// `vlan_tci` set).
    Wire,
}

impl Delivery {
    fn is_test_run(&self) -> bool {
        *self == Delivery::TestRun
    }
}

/// The program a set runs when it names none: the multipath switch, which [`run_rust`] replays.
pub const MULTIPATH: &str = "multipath";

fn multipath() -> String {
    MULTIPATH.into()
}

fn is_multipath(p: &str) -> bool {
    p == MULTIPATH
}

/// One node's configuration and a sequence of frames.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct VectorSet {
    /// Short name (the file's stem).
    pub name: String,
    /// What it covers.
    pub description: String,
    /// The switch program it runs, by its registered name (`mpsched-programs`); absent:
    /// `multipath`, the switch [`run_rust`] replays. Other programs are replayed by
    /// `mpsched_programs::vectors`.
    #[serde(default = "multipath", skip_serializing_if = "is_multipath")]
    pub program: String,
    /// The program's parameters, in base units (`[programs.<name>]` of a scenario: times in
    /// ps, rates in bit/s, sizes in bytes); absent ones take their defaults.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub params: BTreeMap<String, u64>,
    /// The node's tables.
    pub config: SwitchConfig,
    /// Ports 0..n_ports exist; port p's own MAC is `mac_for(1, p)`, its peer's `mac_for(2, p)`.
    pub n_ports: usize,
    /// Egress markers.
    #[serde(default)]
    pub markers: Vec<MarkerConfig>,
    /// Raw 32-bit draws the program's random source replays, cyclically: RS's (a multipath
    /// set has at most one RS group), or another program's (LetFlow's new flowlets).
    #[serde(default)]
    pub rs_raw_draws: Vec<u32>,
    /// Registers before the first step.
    #[serde(default)]
    pub initial_registers: BTreeMap<String, u64>,
    /// The frames.
    pub steps: Vec<Step>,
}

/// One frame.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Step {
    /// What the frame is.
    pub note: String,
    /// Ingress or egress.
    pub hook: Hook,
    /// The port it arrives on (ingress) or leaves by (egress).
    pub port: PortId,
    /// The time: the egress marker's clock, and the clock of a program that reads time at
    /// ingress (LetFlow's flowlets; the multipath switch ignores it there).
    #[serde(default)]
    pub time_ns: u64,
    /// The frame, hex.
    pub frame: String,
    /// How the frame reaches the eBPF program (ingress only).
    #[serde(default, skip_serializing_if = "Delivery::is_test_run")]
    pub delivery: Delivery,
    /// The expected outcome (filled by `mpsched vectors write`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expect: Option<Expect>,
}

/// A step's expected outcome in the file.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Expect {
    /// What can be seen of the frame.
    #[serde(flatten)]
    pub observed: Observed,
    /// Registers whose value changed in this step, with the new value.
    pub registers: BTreeMap<String, u64>,
}

/// What can be seen of a step from outside the program, on both implementations.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Observed {
    /// `redirect`, `drop`, `consume`, `to_stack` (ingress) or `transmit` (egress).
    pub action: String,
    /// The port a redirected frame leaves by.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub port: Option<PortId>,
    /// Why a dropped frame was dropped: `no_route`, `ttl_expired`, `congestion_avoidance`,
    /// `malformed`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub drop_reason: Option<String>,
    /// The split path (0-based) chosen, from the per-path packet counters.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path: Option<u8>,
    /// TTL of a redirected frame (not observed when it also triggered feedback).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ttl: Option<u8>,
    /// ECN of a redirected or transmitted IPv4 frame (same exception).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ecn: Option<Ecn>,
    /// A feedback packet generated alongside.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub emit: Option<EmitObserved>,
}

/// A feedback packet as seen on the wire.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct EmitObserved {
    /// Port it leaves by.
    pub port: PortId,
    /// Destination (the splitting point).
    pub dst_ip: Ipv4,
    /// Group.
    pub group: u8,
    /// Congested path (0-based).
    pub path: u8,
}

/// One step's outcome with the full register snapshot after it.
#[derive(Clone, Debug, PartialEq)]
pub struct StepResult {
    /// What can be seen.
    pub observed: Observed,
    /// Every register after the step.
    pub registers: BTreeMap<String, u64>,
}

/// The name of a drop reason in vectors.
pub fn drop_reason_name(r: DropReason) -> &'static str {
    match r {
        DropReason::NoRoute => "no_route",
        DropReason::TtlExpired => "ttl_expired",
        DropReason::CongestionAvoidance => "congestion_avoidance",
        DropReason::Malformed => "malformed",
    }
}

/// The split path whose packet counter rose between two snapshots.
pub fn chosen_path(before: &BTreeMap<String, u64>, after: &BTreeMap<String, u64>) -> Option<u8> {
    after.iter().find_map(|(k, v)| {
        let idx = k.strip_prefix("split")?.split_once(".path")?.1.strip_suffix("_pkts")?;
        (before.get(k).copied().unwrap_or(0) < *v).then(|| idx.parse().ok())?
    })
}

/// Parse a hex string.
pub fn from_hex(s: &str) -> Result<Vec<u8>, String> {
    if s.len() % 2 != 0 {
        return Err("odd number of hex digits".into());
    }
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).map_err(|e| format!("bad hex at {i}: {e}")))
        .collect()
}

/// Format bytes as hex.
pub fn to_hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

/// Build the Rust twin of a set's node.
pub fn rust_switch(set: &VectorSet) -> Result<FrameSwitch, String> {
    let draws = set.rs_raw_draws.clone();
    FrameSwitch::new(&set.config, &set.markers, set.n_ports, |g| {
        if draws.is_empty() {
            Box::new(SeededRandom::new(u64::from(g)))
        } else {
            Box::new(RawDraws::new(draws.clone()))
        }
    })
    .map_err(|e| format!("{}: {e}", set.name))
}

/// Replay a set of the multipath switch through the Rust programs (a set of another program
/// is refused: `mpsched_programs::vectors::run_rust` replays every program).
pub fn run_rust(set: &VectorSet) -> Result<(BTreeMap<String, u64>, Vec<StepResult>), String> {
    if set.program != MULTIPATH {
        return Err(format!(
            "{}: a set of program `{}`; mpsched_core replays `{MULTIPATH}` sets only",
            set.name, set.program
        ));
    }
    let mut sw = rust_switch(set)?;
    let initial = sw.snapshot();
    let mut prev = initial.clone();
    let mut out = Vec::new();
    for (i, st) in set.steps.iter().enumerate() {
        let mut frame = from_hex(&st.frame).map_err(|e| format!("{} step {i}: {e}", set.name))?;
        let observed = match st.hook {
            Hook::Ingress => {
                let o = sw.ingress(&frame, st.port);
                let mut obs = Observed {
                    action: String::new(),
                    port: None,
                    drop_reason: None,
                    path: None,
                    ttl: None,
                    ecn: None,
                    emit: o.emit.map(|e| EmitObserved {
                        port: e.port,
                        dst_ip: e.meta.dst_ip,
                        group: e.meta.feedback().map_or(0, |f| f.group),
                        path: e.meta.feedback().map_or(0, |f| f.path),
                    }),
                };
                match o.action {
                    FrameAction::Redirect(p) => {
                        obs.action = "redirect".into();
                        obs.port = Some(p);
                        obs.ttl = o.ttl;
                        obs.ecn = o.ecn;
                    }
                    FrameAction::Drop(r) => {
                        obs.action = "drop".into();
                        obs.drop_reason = Some(drop_reason_name(r).into());
                    }
                    FrameAction::Consume => obs.action = "consume".into(),
                    FrameAction::ToStack => obs.action = "to_stack".into(),
                }
                obs
            }
            Hook::Egress => {
                let r = sw.egress(&mut frame, st.port, st.time_ns);
                let ecn = (frame.len() >= 34 && frame[12..14] == [0x08, 0x00]).then(|| Ecn::from_bits(frame[15]));
                debug_assert!(r != MarkOutcome::Marked || ecn == Some(Ecn::Ce));
                Observed {
                    action: "transmit".into(),
                    port: None,
                    drop_reason: None,
                    path: None,
                    ttl: None,
                    ecn,
                    emit: None,
                }
            }
        };
        let regs = sw.snapshot();
        let mut observed = observed;
        observed.path = chosen_path(&prev, &regs);
        prev = regs.clone();
        out.push(StepResult {
            observed,
            registers: regs,
        });
    }
    Ok((initial, out))
}

/// Fill a set's expectations (and initial registers) from the Rust programs.
pub fn fill_expectations(set: &mut VectorSet) -> Result<(), String> {
    let (initial, results) = run_rust(set)?;
    set_expectations(set, initial, results);
    Ok(())
}

/// Fill a set's expectations (and initial registers) from a replay's results (of any
/// program's runner).
pub fn set_expectations(set: &mut VectorSet, initial: BTreeMap<String, u64>, results: Vec<StepResult>) {
    let mut prev = initial.clone();
    set.initial_registers = initial;
    for (st, r) in set.steps.iter_mut().zip(results) {
        let changed = r
            .registers
            .iter()
            .filter(|(k, v)| prev.get(*k) != Some(v))
            .map(|(k, v)| (k.clone(), *v))
            .collect();
        prev = r.registers;
        st.expect = Some(Expect {
            observed: r.observed,
            registers: changed,
        });
    }
}

/// Compare an implementation's results with the file: every observed field and every
/// register, exactly. Returns one line per difference.
pub fn compare(set: &VectorSet, initial: &BTreeMap<String, u64>, results: &[StepResult]) -> Vec<String> {
    let mut errs = Vec::new();
    let mut expected = set.initial_registers.clone();
    diff_registers(&format!("{} initial", set.name), &expected, initial, &mut errs);
    if results.len() != set.steps.len() {
        errs.push(format!(
            "{}: {} steps in the file, {} results",
            set.name,
            set.steps.len(),
            results.len()
        ));
    }
    for (i, (st, r)) in set.steps.iter().zip(results).enumerate() {
        let Some(exp) = &st.expect else {
            errs.push(format!("{} step {i}: no expectation in the file", set.name));
            continue;
        };
        let at = format!("{} step {i} ({})", set.name, st.note);
        if exp.observed != r.observed {
            errs.push(format!("{at}: expected {:?}, got {:?}", exp.observed, r.observed));
        }
        for (k, v) in &exp.registers {
            expected.insert(k.clone(), *v);
        }
        diff_registers(&at, &expected, &r.registers, &mut errs);
    }
    errs
}

fn diff_registers(at: &str, expected: &BTreeMap<String, u64>, got: &BTreeMap<String, u64>, errs: &mut Vec<String>) {
    for (k, v) in expected {
        match got.get(k) {
            Some(g) if g == v => {}
            Some(g) => errs.push(format!("{at}: register {k} expected {v}, got {g}")),
            None => errs.push(format!("{at}: register {k} missing")),
        }
    }
    for k in got.keys().filter(|k| !expected.contains_key(*k)) {
        errs.push(format!("{at}: unexpected register {k}"));
    }
}

// ---- The standard sets -------------------------------------------------------------------

const SPLITTER: Ipv4 = 0x0aff_0001;
const CONFLUENCE: Ipv4 = 0x0aff_0004;
const STA1: Ipv4 = 0x0a00_0001;
const STA2: Ipv4 = 0x0a00_0002;
const STA3: Ipv4 = 0x0a00_0003;

fn udp(src: Ipv4, dst: Ipv4, ecn: Ecn, payload: usize) -> Vec<u8> {
    let mut m = PacketMeta::udp(src, dst, 5001, 5201, 0);
    m.ecn = ecn;
    let body: Vec<u8> = (0..payload).map(|i| i as u8).collect();
    frame_on_port0(&m, &body)
}

/// `meta`'s UDP frame with `body`, as it arrives on port 0.
fn frame_on_port0(meta: &PacketMeta, body: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    emit_udp_frame(
        meta,
        mac_for(PEER_MAC_NODE, 0),
        mac_for(OWN_MAC_NODE, 0),
        1,
        body,
        &mut out,
    );
    out
}

/// Recompute the IPv4 header checksum of a frame whose header a vector edited.
fn fix_ipv4_checksum(frame: &mut [u8]) {
    let ihl = usize::from(frame[14] & 0x0f) * 4;
    frame[24..26].copy_from_slice(&[0, 0]);
    let c = crate::wire::internet_checksum(&frame[14..14 + ihl], 0);
    frame[24..26].copy_from_slice(&c.to_be_bytes());
}

fn feedback(group: u8, path: u8) -> Vec<u8> {
    let m = PacketMeta::udp(CONFLUENCE, SPLITTER, DEFAULT_FEEDBACK_PORT, DEFAULT_FEEDBACK_PORT, 0);
    let mut out = Vec::new();
    emit_udp_frame(
        &m,
        mac_for(PEER_MAC_NODE, 1),
        mac_for(OWN_MAC_NODE, 1),
        1,
        &feedback_payload(group, path),
        &mut out,
    );
    out
}

fn ingress(note: impl Into<String>, port: PortId, frame: &[u8]) -> Step {
    Step {
        note: note.into(),
        hook: Hook::Ingress,
        port,
        time_ns: 0,
        frame: to_hex(frame),
        delivery: Delivery::TestRun,
        expect: None,
    }
}

/// An ingress step whose frame crosses the port's veth pair into the program (see [`Delivery`]).
fn ingress_wire(note: impl Into<String>, port: PortId, frame: &[u8]) -> Step {
    Step {
        delivery: Delivery::Wire,
        ..ingress(note, port, frame)
    }
}

fn egress(note: impl Into<String>, port: PortId, time_ns: u64, frame: &[u8]) -> Step {
    Step {
        hook: Hook::Egress,
        time_ns,
        ..ingress(note, port, frame)
    }
}

fn splitter(scheduler: SchedulerConfig, n_paths: usize) -> SwitchConfig {
    let mut cfg = SwitchConfig::forwarding(
        SPLITTER,
        vec![
            Route {
                prefix: STA1,
                len: 32,
                port: 0,
            },
            Route {
                prefix: STA2,
                len: 32,
                port: 0,
            },
            Route {
                prefix: CONFLUENCE,
                len: 32,
                port: 1,
            },
        ],
    );
    cfg.splits.push(SplitGroupConfig {
        group: 0,
        src_ip: STA1,
        dst_ip: STA3,
        ports: (1..=n_paths as PortId).collect(),
        scheduler,
        feedback_ports: (1..=n_paths as PortId).collect(),
    });
    cfg
}

fn set(name: &str, description: &str, config: SwitchConfig, n_ports: usize, steps: Vec<Step>) -> VectorSet {
    VectorSet {
        name: name.into(),
        description: description.into(),
        program: multipath(),
        params: BTreeMap::new(),
        config,
        n_ports,
        markers: Vec::new(),
        rs_raw_draws: Vec::new(),
        initial_registers: BTreeMap::new(),
        steps,
    }
}

fn data_steps(n: usize, note: &str) -> Vec<Step> {
    (0..n)
        .map(|i| ingress(format!("{note} {}", i + 1), 0, &udp(STA1, STA3, Ecn::Ect0, 64)))
        .collect()
}

/// The sets kept under `tests/vectors/`, without expectations.
pub fn standard_sets() -> Vec<VectorSet> {
    let mut sets = Vec::new();
    wrr_sets(&mut sets);
    rs_sets(&mut sets);
    dwrr_sets(&mut sets);
    confluence_set(&mut sets);
    marker_set(&mut sets);
    malformed_set(&mut sets);
    vlan_set(&mut sets);
    ecmp_set(&mut sets);
    sets
}

/// WRR over two and three paths, then LPM and an ignored feedback packet.
fn wrr_sets(sets: &mut Vec<VectorSet>) {
    for (name, weights) in [
        ("wrr-2-1", vec![2u16, 1]),
        ("wrr-2-4", vec![2, 4]),
        ("wrr-3-paths", vec![3, 2, 1]),
    ] {
        let n = weights.len();
        let period: usize = weights.iter().map(|&w| usize::from(w)).sum();
        sets.push(set(
            name,
            &format!("WRR {weights:?}: two periods of the split flow, then other traffic routed by LPM"),
            splitter(SchedulerConfig::Wrr { weights }, n),
            n + 1,
            {
                let mut s = data_steps(2 * period, "split packet");
                s.push(ingress(
                    "sta2 -> confluence, routed",
                    0,
                    &udp(STA2, CONFLUENCE, Ecn::NotEct, 64),
                ));
                s.push(ingress("feedback to a WRR splitter is ignored", 1, &feedback(0, 1)));
                s
            },
        ));
    }
}

/// RS with fixed raw draws.
fn rs_sets(sets: &mut Vec<VectorSet>) {
    // RS with raw draws at the range edges: 1 + (draw * 100) >> 32.
    let mut rs = set(
        "rs-fixed-draws",
        "RS 67:33 (ranges 1-67, 68-100) with raw draws at the edges of each range",
        splitter(
            SchedulerConfig::Rs {
                shares_pct: vec![67, 33],
            },
            2,
        ),
        3,
        data_steps(8, "split packet"),
    );
    rs.rs_raw_draws = vec![
        0,
        2_834_678_416,
        2_877_628_088,
        2_877_628_089,
        u32::MAX,
        1 << 31,
        42,
        4_000_000_000,
    ];
    sets.push(rs);
    let mut rs3 = set(
        "rs-three-paths",
        "RS 1:1:1 (ranges 1-34, 35-67, 68-100) over three paths",
        splitter(
            SchedulerConfig::Rs {
                shares_pct: vec![1, 1, 1],
            },
            3,
        ),
        4,
        data_steps(6, "split packet"),
    );
    rs3.rs_raw_draws = vec![0, 1_417_339_207, 1_417_339_208, 2_834_678_415, 2_834_678_416, u32::MAX];
    sets.push(rs3);
}

/// DWRR: every branch of the window's end, and the congestion avoidance.
fn dwrr_sets(sets: &mut Vec<VectorSet>) {
    // DWRR: window = period x groups. Weights 2:1 x scale 2 = 4:2, period 6, groups 2.
    let dwrr = |weights: Vec<u16>, params: DwrrParams| SchedulerConfig::Dwrr { weights, params };
    let p2 = DwrrParams {
        groups: 2,
        weight_scale: 2,
        avoidance_drop_pkts: 4,
        ..DwrrParams::default()
    };
    let mut steps = data_steps(12, "window 1, no feedback");
    steps.push(ingress("feedback: path 2 congested", 1, &feedback(0, 1)));
    steps.push(ingress("feedback: path 2 congested again", 2, &feedback(0, 1)));
    steps.extend(data_steps(12, "window 2, path 2 reported: 4:2 -> 5:1"));
    steps.extend(data_steps(12, "window 3, no feedback: weights stay"));
    steps.push(ingress("feedback: path 1", 1, &feedback(0, 0)));
    steps.push(ingress("feedback: path 2", 2, &feedback(0, 1)));
    steps.extend(data_steps(
        12,
        "window 4, both reported: congestion avoidance at its end",
    ));
    steps.extend(data_steps(6, "avoidance drops 4, then WRR resumes"));
    steps.push(ingress("feedback for an unknown group", 1, &feedback(7, 0)));
    steps.push(ingress("feedback for a path out of range", 1, &feedback(0, 5)));
    steps.push(ingress(
        "forged feedback from the sender's side (port 0): untrusted, not counted",
        0,
        &feedback(0, 0),
    ));
    let mut bad_magic = feedback(0, 1);
    let n = bad_magic.len();
    bad_magic[n - 8] = b'X';
    steps.push(ingress(
        "UDP to the feedback port without the magic: local",
        1,
        &bad_magic,
    ));
    sets.push(set(
        "dwrr-branches",
        "DWRR 2:1 (scale 2, groups 2): no feedback, some paths (weight moves, min_weight holds), every path (congestion avoidance), unknown group and path",
        splitter(dwrr(vec![2, 1], p2.clone()), 2),
        3,
        steps,
    ));

    let p3 = DwrrParams {
        groups: 1,
        weight_scale: 4,
        max_step: 0,
        ..DwrrParams::default()
    };
    let mut steps = Vec::new();
    for w in 0..4 {
        for _ in 0..3 {
            steps.push(ingress(
                format!("feedback: path 2 (window {})", w + 1),
                1,
                &feedback(0, 1),
            ));
        }
        steps.extend(data_steps(12, &format!("window {}", w + 1)));
    }
    sets.push(set(
        "dwrr-three-paths",
        "DWRR 1:1:1 (scale 4, groups 1, no step cap): path 2 keeps reporting; freed units go round robin from the cursor",
        splitter(dwrr(vec![1, 1, 1], p3), 3),
        4,
        steps,
    ));
}

/// The confluence point's CE counting and feedback.
fn confluence_set(sets: &mut Vec<VectorSet>) {
    // The confluence point: paths arrive on ports 1 and 2, the destination is on port 0.
    let mut conf = SwitchConfig::forwarding(
        CONFLUENCE,
        vec![
            Route {
                prefix: STA3,
                len: 32,
                port: 0,
            },
            Route {
                prefix: SPLITTER,
                len: 32,
                port: 1,
            },
        ],
    );
    conf.confluences.push(ConfluenceConfig {
        group: 0,
        src_ip: STA1,
        dst_ip: STA3,
        path_ingress_ports: vec![1, 2],
        return_ports: vec![1, 2],
        splitter_ip: SPLITTER,
        feedback_every: 16,
    });
    let mut steps = Vec::new();
    for i in 0..5 {
        steps.push(ingress(
            format!("CE on path 1 ({})", i + 1),
            1,
            &udp(STA1, STA3, Ecn::Ce, 64),
        ));
    }
    steps.push(ingress(
        "ECT(0) on path 2: not counted",
        2,
        &udp(STA1, STA3, Ecn::Ect0, 64),
    ));
    for i in 0..16 {
        steps.push(ingress(
            format!("CE on path 2 ({}); the 16th sends feedback over path 1", i + 1),
            2,
            &udp(STA1, STA3, Ecn::Ce, 64),
        ));
    }
    for i in 0..11 {
        steps.push(ingress(
            format!("CE on path 1 ({}); the 16th sends feedback over path 2", i + 6),
            1,
            &udp(STA1, STA3, Ecn::Ce, 64),
        ));
    }
    steps.push(ingress(
        "CE on an unknown port: not counted",
        3,
        &udp(STA1, STA3, Ecn::Ce, 64),
    ));
    sets.push(set(
        "confluence-feedback",
        "Confluence point: one feedback per 16 CE arrivals on a path, sent back over the path with the fewest pending marks",
        conf,
        4,
        steps,
    ));
}

/// The egress virtual-queue marker.
fn marker_set(sets: &mut Vec<VectorSet>) {
    // The egress marker: 8 Mbit/s, threshold 3000 B, capacity 6000 B; 1000-byte frames.
    let mut steps = Vec::new();
    let f = |ecn| {
        let mut v = udp(STA1, STA3, ecn, 958);
        v.truncate(1000);
        v
    };
    for i in 0..3 {
        steps.push(egress(
            format!("burst {}: below the threshold", i + 1),
            1,
            0,
            &f(Ecn::Ect0),
        ));
    }
    steps.push(egress("finds 3000 B: marked", 1, 0, &f(Ecn::Ect0)));
    steps.push(egress(
        "Not-ECT over the threshold: counted, unmarked",
        1,
        0,
        &f(Ecn::NotEct),
    ));
    steps.push(egress("ECT(1): marked", 1, 0, &f(Ecn::Ect1)));
    steps.push(egress("full: overflow, CE stays CE", 1, 0, &f(Ecn::Ce)));
    steps.push(egress("3.5 ms later 3500 B drained", 1, 3_500_000, &f(Ecn::Ect0)));
    let mut arp = f(Ecn::NotEct);
    arp[12..14].copy_from_slice(&[0x08, 0x06]);
    steps.push(egress("ARP: counted in the backlog, not marked", 1, 3_500_000, &arp));
    steps.push(egress("a second idle: queue empty", 1, 1_003_500_000, &f(Ecn::Ect0)));
    steps.push(egress("port without a marker", 2, 1_003_500_000, &f(Ecn::Ect0)));
    let mut mk = set(
        "marker-virtual-queue",
        "Egress ECN marking on a virtual queue drained at the link rate",
        splitter(SchedulerConfig::Wrr { weights: vec![1, 1] }, 2),
        3,
        steps,
    );
    mk.markers = vec![MarkerConfig {
        port: 1,
        rate_bps: 8_000_000,
        threshold_bytes: 3000,
        limit_bytes: 6000,
    }];
    sets.push(mk);
}

/// Malformed and special frames at a splitter.
fn malformed_set(sets: &mut Vec<VectorSet>) {
    // Malformed and special frames at a splitter.
    let good = udp(STA1, STA3, Ecn::Ect0, 64);
    let mut steps = vec![ingress("well-formed split packet", 0, &good)];
    // BPF_PROG_TEST_RUN refuses IPv4 frames shorter than Ethernet + 20 bytes (34), so the
    // shortest truncations are pinned by the Rust unit tests of `wire` only (see the README).
    steps.push(ingress(
        "runt: 42-byte IPv4/UDP frame with no payload (under Ethernet's 60): forwarded",
        0,
        &udp(STA1, STA3, Ecn::Ect0, 0),
    ));
    let mut trunc = good[..34].to_vec();
    trunc[14] = 0x46;
    steps.push(ingress(
        "truncated IPv4 header: IHL 6, frame ends after 20 bytes",
        0,
        &trunc,
    ));
    let mut ihl = good.clone();
    ihl[14] = 0x44;
    steps.push(ingress("IHL 4 (< 5)", 0, &ihl));
    let mut ver = good.clone();
    ver[14] = 0x65;
    steps.push(ingress("version 6 under the IPv4 EtherType", 0, &ver));
    let mut long = good.clone();
    long[16..18].copy_from_slice(&2000u16.to_be_bytes());
    steps.push(ingress("total length beyond the frame", 0, &long));
    let mut short = good.clone();
    short[16..18].copy_from_slice(&16u16.to_be_bytes());
    steps.push(ingress("total length shorter than the header", 0, &short));
    let mut ihl_trunc = good[..40].to_vec();
    ihl_trunc[14] = 0x4f;
    steps.push(ingress("IHL 15 (60 bytes) in a 26-byte packet", 0, &ihl_trunc));
    // IPv4 options: IHL 6 with a 4-byte NOP option.
    let mut opt = good[..34].to_vec();
    opt[14] = 0x46;
    opt.extend_from_slice(&[1, 1, 1, 0]);
    opt.extend_from_slice(&good[34..]);
    let tl = u16::from_be_bytes([opt[16], opt[17]]) + 4;
    opt[16..18].copy_from_slice(&tl.to_be_bytes());
    fix_ipv4_checksum(&mut opt);
    steps.push(ingress("IPv4 options (IHL 6): forwarded", 0, &opt));
    let mut frag1 = good.clone();
    frag1[20..22].copy_from_slice(&0x2000u16.to_be_bytes());
    fix_ipv4_checksum(&mut frag1);
    steps.push(ingress("first fragment (MF): forwarded", 0, &frag1));
    let mut frag2 = good.clone();
    frag2[20..22].copy_from_slice(&0x00b9u16.to_be_bytes());
    fix_ipv4_checksum(&mut frag2);
    steps.push(ingress("non-first fragment: forwarded", 0, &frag2));
    let mut arp = good.clone();
    arp[12..14].copy_from_slice(&[0x08, 0x06]);
    steps.push(ingress("ARP: to the node's stack", 0, &arp));
    let mut v6 = good.clone();
    v6[12..14].copy_from_slice(&[0x86, 0xdd]);
    steps.push(ingress("IPv6: to the node's stack", 0, &v6));
    let mut ttl1 = udp(STA2, CONFLUENCE, Ecn::NotEct, 64);
    ttl1[22] = 1;
    steps.push(ingress("TTL 1: dropped", 0, &ttl1));
    let mut ttl0 = ttl1.clone();
    ttl0[22] = 0;
    steps.push(ingress("TTL 0: dropped", 0, &ttl0));
    steps.push(ingress("no route", 0, &udp(STA2, 0x0b00_0001, Ecn::NotEct, 64)));
    steps.push(ingress(
        "to this node, not feedback: to the stack",
        0,
        &udp(STA2, SPLITTER, Ecn::NotEct, 64),
    ));
    let mut padded = good.clone();
    padded.extend_from_slice(&[0; 20]);
    steps.push(ingress("Ethernet padding after the IPv4 packet: forwarded", 0, &padded));
    sets.push(set(
        "malformed",
        "Malformed and special frames: each forwarded, handed to the stack, or counted and dropped",
        splitter(SchedulerConfig::Wrr { weights: vec![1, 1] }, 2),
        3,
        steps,
    ));
}

/// ECMP routing: a route to an ECMP group of three ports; each flow's port is its 5-tuple's
/// hash with the switch's seed; what has no ports (other protocols, later fragments) hashes
/// them as zero.
fn ecmp_set(sets: &mut Vec<VectorSet>) {
    let flow = |src_port: u16, dst_port: u16| {
        let m = PacketMeta::udp(STA1, STA3, src_port, dst_port, 0);
        frame_on_port0(&m, &[0u8; 64])
    };
    let mut steps: Vec<Step> = (0..12u16)
        .map(|i| ingress(format!("UDP flow from port {}", 40_000 + i), 0, &flow(40_000 + i, 5201)))
        .collect();
    steps.push(ingress("the first flow again: the same port", 0, &flow(40_000, 5201)));
    let mut tcp = flow(40_000, 5201);
    tcp[23] = 6;
    fix_ipv4_checksum(&mut tcp);
    steps.push(ingress("TCP with the first flow's ports", 0, &tcp));
    let mut icmp = flow(40_000, 5201);
    icmp[23] = 1;
    fix_ipv4_checksum(&mut icmp);
    steps.push(ingress("ICMP: ports hashed as zero", 0, &icmp));
    let mut frag = flow(40_001, 5201);
    frag[20..22].copy_from_slice(&0x00b9u16.to_be_bytes());
    fix_ipv4_checksum(&mut frag);
    steps.push(ingress("a later fragment: ports hashed as zero", 0, &frag));
    let mut short_tcp = flow(40_002, 5201)[..14 + 20 + 12].to_vec();
    short_tcp[17] = 32;
    short_tcp[23] = 6;
    fix_ipv4_checksum(&mut short_tcp);
    steps.push(ingress(
        "TCP with 12 of its 20 header bytes: ports hashed as zero",
        0,
        &short_tcp,
    ));
    let mut cfg = SwitchConfig::forwarding(
        SPLITTER,
        vec![
            Route {
                prefix: STA1,
                len: 32,
                port: 0,
            },
            Route {
                prefix: STA3,
                len: 32,
                port: crate::table::ECMP_GROUP,
            },
        ],
    );
    cfg.ecmp_groups = vec![vec![1, 2, 3]];
    cfg.hash_seed = SPLITTER;
    sets.push(set(
        "ecmp-routing",
        "ECMP routing: a route to a group of three ports, one chosen per flow by the seeded 5-tuple hash",
        cfg,
        4,
        steps,
    ));
}

/// `frame` with a VLAN tag (TPID, then PCP 0 / DEI 0 / `vid`) after the MAC addresses.
fn tagged(frame: &[u8], tpid: u16, vid: u16) -> Vec<u8> {
    let mut out = frame[..12].to_vec();
    out.extend_from_slice(&tpid.to_be_bytes());
    out.extend_from_slice(&(vid & 0x0fff).to_be_bytes());
    out.extend_from_slice(&frame[12..]);
    out
}

/// 802.1Q and 802.1ad frames: the switch routes untagged IPv4 only (as the papers' P4 parsers,
/// Ethernet then IPv4); a tagged frame is not its to split, wherever the tag is held.
fn vlan_set(sets: &mut Vec<VectorSet>) {
    let good = udp(STA1, STA3, Ecn::Ect0, 64);
    let q = tagged(&good, 0x8100, 10);
    let steps = vec![
        ingress("untagged split packet, handed to the program: path 1", 0, &good),
        ingress_wire(
            "untagged split packet across the veth pair: path 2 (the live path reaches the program)",
            0,
            &good,
        ),
        ingress("802.1Q (VID 10) in the frame: to the node's stack", 0, &q),
        ingress_wire(
            "802.1Q (VID 10) across the veth pair: the kernel moves the tag to skb->vlan_tci; still to the stack",
            0,
            &q,
        ),
        ingress_wire(
            "802.1Q priority tag (VID 0) across the veth pair: to the stack",
            0,
            &tagged(&good, 0x8100, 0),
        ),
        ingress_wire(
            "802.1ad outer tag (VID 20) over 802.1Q (VID 10) across the veth pair: to the stack",
            0,
            &tagged(&q, 0x88a8, 20),
        ),
        ingress_wire("untagged again: WRR resumes where it was (path 1)", 0, &good),
    ];
    sets.push(set(
        "vlan",
        "802.1Q / 802.1ad frames are not split: to the node's stack, whether the tag is in the frame or the kernel has moved it to skb->vlan_tci",
        splitter(SchedulerConfig::Wrr { weights: vec![1, 1] }, 2),
        3,
        steps,
    ));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wrr_2_1_vector_picks_the_papers_paths() {
        let mut s = standard_sets().into_iter().find(|s| s.name == "wrr-2-1").unwrap();
        fill_expectations(&mut s).unwrap();
        let paths: Vec<_> = s.steps[..6]
            .iter()
            .map(|st| st.expect.as_ref().unwrap().observed.path.unwrap() + 1)
            .collect();
        assert_eq!(paths, [1, 1, 2, 1, 1, 2]);
    }

    #[test]
    fn compare_reports_a_changed_register() {
        let mut s = standard_sets().into_iter().find(|s| s.name == "wrr-2-1").unwrap();
        fill_expectations(&mut s).unwrap();
        let (init, mut res) = run_rust(&s).unwrap();
        assert!(compare(&s, &init, &res).is_empty());
        res[2].registers.insert("split0.weight0".into(), 9);
        let errs = compare(&s, &init, &res);
        assert_eq!(errs.len(), 1, "{errs:?}");
        assert!(errs[0].contains("split0.weight0"));
    }

    #[test]
    fn every_standard_set_runs_and_the_branches_it_names_are_taken() {
        let mut sets = standard_sets();
        for s in &mut sets {
            fill_expectations(s).unwrap();
        }
        let last = |name: &str| -> BTreeMap<String, u64> {
            let s = sets.iter().find(|s| s.name == name).unwrap();
            run_rust(s).unwrap().1.last().unwrap().registers.clone()
        };
        let d = last("dwrr-branches");
        assert_eq!(d["split0.adjustments"], 1);
        assert_eq!(d["split0.avoidance_events"], 1);
        assert_eq!(d["split0.avoidance_drops"], 4);
        assert_eq!(d["counter.feedback_unknown_group"], 2);
        let c = last("confluence-feedback");
        assert_eq!(c["confluence0.feedback_sent"], 2);
        let m = last("marker-virtual-queue");
        assert_eq!(m["marker1.marked"], 2);
        assert_eq!(m["marker1.overflow"], 1);
        let bad = last("malformed");
        assert_eq!(bad["counter.malformed"], 6);
        assert_eq!(bad["counter.not_ipv4"], 2);
    }
}
