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

use crate::frame::{FrameAction, FrameSwitch, MarkerConfig};
use crate::marker::MarkOutcome;
use crate::packet::{Ecn, Ipv4, PortId};
use crate::program::DropReason;
use crate::rng::{RawDraws, SeededRandom};
use crate::switch::SwitchConfig;
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
    /// TC egress: the virtual-queue marker, and a program's egress stage (HULA's transmit
    /// utilisation estimator).
    Egress,
    /// The program's periodic work is due now (a HULA ToR originates its probes); the step's
    /// frame is empty for the Rust programs, and each backend realises it its own way (see the
    /// program's README).
    Timer,
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
    /// Egress steps: the port queue (priority) the frame leaves, as BMv2's
    /// `standard_metadata.priority` names it in egress; absent: queue 0. Read by programs whose
    /// egress stage depends on it (`vq-wrr` releases the level the packet was queued at).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub queue: u8,
    /// Egress steps: packets waiting in the frame's queue when it joined it, not counting
    /// itself (`QueueMeta::enq_qdepth_pkts`, BMv2's `enq_qdepth`); absent: 0. Read by programs
    /// that mark on the queue a packet found (`dcqcn`).
    #[serde(default, skip_serializing_if = "is_zero_u32")]
    pub enq_qdepth_pkts: u32,
    /// Egress steps: how long the frame waited in its queue, ns (`QueueMeta::deq_timedelta_ps`
    /// / 1000; BMv2's `deq_timedelta` counts whole microseconds, so a step BMv2 replays gives
    /// whole microseconds); absent: 0. Read by programs that mark on sojourn (`tcn`).
    #[serde(default, skip_serializing_if = "is_zero_u64")]
    pub sojourn_ns: u64,
    /// Registers the control plane writes before the frame, in order (a `vq-wrr` weight),
    /// through the program's control channel (`ProgramControl::write_register`); absent: none.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub writes: Vec<RegisterWrite>,
    /// The expected outcome (filled by `mpsched vectors write`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expect: Option<Expect>,
}

fn is_zero(q: &u8) -> bool {
    *q == 0
}

fn is_zero_u32(v: &u32) -> bool {
    *v == 0
}

fn is_zero_u64(v: &u64) -> bool {
    *v == 0
}

/// One register entry a step's control plane writes before its frame.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct RegisterWrite {
    /// The register, as the program's control listing names it (`vq_weight`).
    pub register: String,
    /// The entry.
    pub index: usize,
    /// The value written.
    pub value: u64,
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
    /// The DSCP a redirected IPv4 frame leaves with, when it is not the one it arrived with
    /// (a classifier rule gave it a class: `crate::classify`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dscp: Option<u8>,
    /// A feedback packet generated alongside.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub emit: Option<EmitObserved>,
    /// Probes sent (originated or replicated), in port order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub probes: Vec<ProbeObserved>,
    /// The connection header (MP-HULA's) of a redirected frame, None when it has none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub conn: Option<ConnObserved>,
    /// A rate feedback sent to the packet's source alongside (PMQECN's, P4QCN's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rate_feedback: Option<RateFeedbackObserved>,
    /// The whole frame a program that rewrites frames ([`crate::program::Program::handles_frames`]:
    /// a tunnel endpoint's encapsulation) sends out of `port`, hex, its Ethernet addresses the
    /// port's; None for every other program.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub frame: Option<String>,
}

/// A rate feedback as seen on the wire: where it goes and its body (header kind 4 in the
/// simulator, the `"MPRF"` payload of `crate::rate_wire` on a real network).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct RateFeedbackObserved {
    /// Port it leaves by.
    pub port: PortId,
    /// Its destination: the data packet's source.
    pub dst_ip: Ipv4,
    /// Its UDP destination port: the data packet's source port.
    pub dst_port: u16,
    /// The class (virtual queue) it reports on.
    pub queue: u8,
    /// That class's packets waiting at the port.
    pub qlen_pkts: u16,
    /// The class's measured arrival rate, kbit/s.
    pub measured_kbps: u32,
    /// The rate it should arrive at, kbit/s.
    pub target_kbps: u32,
}

/// A probe as seen on the wire.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProbeObserved {
    /// Port it leaves by.
    pub port: PortId,
    /// The originating ToR.
    pub tor: u16,
    /// Its hop count.
    pub hops: u8,
    /// Its path utilisation (Q16).
    pub util: u32,
}

/// A connection header as seen on a redirected frame.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ConnObserved {
    /// The MPTCP connection id.
    pub conn_id: u64,
    /// The subflow number.
    pub subflow: u16,
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
        DropReason::QueueFull => "queue_full",
        DropReason::TooBig => "too_big",
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
        if !st.writes.is_empty() {
            return Err(format!(
                "{} step {i}: the multipath switch's vectors write no registers",
                set.name
            ));
        }
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
                    dscp: None,
                    emit: o.emit.map(|e| EmitObserved {
                        port: e.port,
                        dst_ip: e.meta.dst_ip,
                        group: e.meta.feedback().map_or(0, |f| f.group),
                        path: e.meta.feedback().map_or(0, |f| f.path),
                    }),
                    probes: Vec::new(),
                    conn: None,
                    rate_feedback: None,
                    frame: None,
                };
                match o.action {
                    FrameAction::Redirect(p) => {
                        obs.action = "redirect".into();
                        obs.port = Some(p);
                        obs.ttl = o.ttl;
                        obs.ecn = o.ecn;
                        obs.dscp = o.remarked_dscp;
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
                    dscp: None,
                    emit: None,
                    probes: Vec::new(),
                    conn: None,
                    rate_feedback: None,
                    frame: None,
                }
            }
            Hook::Timer => return Err(format!("{} step {i}: the multipath switch has no timer", set.name)),
        };
        record_step(&mut out, &mut prev, observed, sw.snapshot());
    }
    Ok((initial, out))
}

/// Add a step's outcome to `out`: its chosen path from the registers that moved since `prev`,
/// which become the registers after it. Every column's replay records its steps so.
pub fn record_step(
    out: &mut Vec<StepResult>,
    prev: &mut BTreeMap<String, u64>,
    mut observed: Observed,
    registers: BTreeMap<String, u64>,
) {
    observed.path = chosen_path(prev, &registers);
    prev.clone_from(&registers);
    out.push(StepResult { observed, registers });
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

mod sets;
pub use sets::standard_sets;

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
