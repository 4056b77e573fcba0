//! HULA's and MP-HULA's conformance vectors through `BPF_PROG_TEST_RUN`, in a namespace of
//! their own with a veth per port and the trigger veth pair:
//! - `ingress` steps run `hula_ingress` on the step's port; `egress` steps run `hula_egress`
//!   on it; `timer` steps run `hula_ingress` on the trigger interface, the origination path a
//!   live ToR's prober drives (the step's frame is empty; a 64-byte frame of zeros stands for
//!   the trigger);
//! - a redirected frame is read from the test run's output (its destination MAC names the
//!   port; its connection header, if any, is [`ConnObserved`]); probes, which leave by
//!   `bpf_clone_redirect`, are read where they arrive, at each port's veth peer, as many from
//!   each as the port's transmit counter says were sent;
//! - a drop's reason is the counter that moved;
//! - a frame `BPF_PROG_TEST_RUN` refuses (Linux 6.18 answers `EINVAL` for a 30-byte frame with
//!   a cut IPv4 header) is sent on the wire instead, into its port's veth peer, with the
//!   program attached at the ports' ingress (ingress alone: an egress hook would count the
//!   probes' clones into the estimator), and its outcome read from the counters.

use super::layout::PROBE_FRAME_BYTES;
use super::{create_trigger, HulaPlane, EGRESS, INGRESS};
use crate::dataplane::NodeTables;
use crate::programs::Replay;
use crate::tap::Tap;
use crate::vectors::{check_ipv4_checksum, delta_of, observed, port_of_mac, shot, test_run_prog, TestNode};
use mpsched_core::packet::PortId;
use mpsched_core::vectors::{
    chosen_path, from_hex, ConnObserved, Hook, Observed, ProbeObserved, Step, StepResult, VectorSet,
};
use mpsched_core::wire::{parse_frame_with_headers, parse_shims};
use std::collections::BTreeMap;

const TC_ACT_OK: u32 = 0;
const TC_ACT_SHOT: u32 = 2;
const TC_ACT_REDIRECT: u32 = 7;

/// [`crate::programs::KernelProgram::vectors`] for `hula` and `mphula`.
pub fn run_vectors(set: &VectorSet) -> Result<Replay, String> {
    let node = TestNode::create(set.n_ports)?;
    let tables = node.tables(set)?;
    node.enter(|| -> Result<Replay, String> {
        let (_, trigger) = create_trigger()?;
        let mut plane = HulaPlane::load(&tables, trigger).map_err(|e| e.to_string())?;
        for p in &tables.ports {
            plane.attach_ingress(p.ifindex).map_err(|e| e.to_string())?;
        }
        let taps = node
            .peer_ifindexes
            .iter()
            .map(|&i| Tap::open(i))
            .collect::<Result<Vec<_>, _>>()?;
        let run = Runner {
            set,
            plane: &plane,
            tables: &tables,
            taps: &taps,
            trigger,
        };
        run.replay()
    })?
}

/// One replay's fixed parts.
pub(crate) struct Runner<'a> {
    pub set: &'a VectorSet,
    pub plane: &'a HulaPlane,
    pub tables: &'a NodeTables,
    pub taps: &'a [Tap],
    pub trigger: u32,
}

impl Runner<'_> {
    fn replay(&self) -> Result<Replay, String> {
        let initial = self.plane.snapshot().map_err(|e| e.to_string())?;
        let mut prev = initial.clone();
        let mut results = Vec::new();
        for (i, st) in self.set.steps.iter().enumerate() {
            let at = format!("{} step {i} ({})", self.set.name, st.note);
            let (obs, regs) = self.step(st, &prev).map_err(|e| format!("{at}: {e}"))?;
            prev = regs.clone();
            results.push(StepResult {
                observed: obs,
                registers: regs,
            });
        }
        Ok((initial, results))
    }

    /// Run one step: what it did and the registers after it.
    pub(crate) fn step(
        &self,
        st: &Step,
        prev: &BTreeMap<String, u64>,
    ) -> Result<(Observed, BTreeMap<String, u64>), String> {
        if st.delivery != mpsched_core::vectors::Delivery::TestRun {
            return Err("HULA's vectors run through BPF_PROG_TEST_RUN only".into());
        }
        let port_ifindex = || {
            self.tables
                .ports
                .get(usize::from(st.port))
                .map(|p| p.ifindex)
                .ok_or_else(|| format!("port {} does not exist", st.port))
        };
        let (prog, ifindex, frame) = match st.hook {
            Hook::Ingress => (INGRESS, port_ifindex()?, from_hex(&st.frame)?),
            Hook::Egress => (EGRESS, port_ifindex()?, from_hex(&st.frame)?),
            Hook::Timer => (INGRESS, self.trigger, vec![0u8; PROBE_FRAME_BYTES]),
        };
        self.plane.set_test_clock(st.time_ns).map_err(|e| e.to_string())?;
        self.taps.iter().for_each(Tap::drain);
        let p = self.plane.program(prog).map_err(|e| e.to_string())?;
        let (retval, out, _) = match test_run_prog(&p, ifindex, &frame, 1) {
            Err(e) if st.hook == Hook::Ingress && e.contains("Invalid argument") => {
                return self.on_the_wire(st.port, &frame, prev);
            }
            r => r?,
        };
        let regs = self.plane.snapshot().map_err(|e| e.to_string())?;
        let obs = self.observe(st.hook, retval, &out, prev, &regs)?;
        Ok((obs, regs))
    }

    /// A frame sent into port `port`'s veth peer: the outcome its counters show (a frame the
    /// test run refuses is malformed or not IPv4).
    fn on_the_wire(
        &self,
        port: PortId,
        frame: &[u8],
        prev: &BTreeMap<String, u64>,
    ) -> Result<(Observed, BTreeMap<String, u64>), String> {
        self.taps.get(usize::from(port)).ok_or("no such port")?.send(frame)?;
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(2);
        loop {
            let regs = self.plane.snapshot().map_err(|e| e.to_string())?;
            let delta = |k: &str| delta_of(prev, &regs, k);
            let mut obs = observed(chosen_path(prev, &regs));
            if delta("counter.not_ipv4") > 0 {
                obs.action = "to_stack".into();
                return Ok((obs, regs));
            }
            if delta("counter.malformed") > 0 {
                shot(&mut obs, &delta);
                return Ok((obs, regs));
            }
            if std::time::Instant::now() > deadline {
                return Err("sent on the wire (the test run refused it), but no outcome within 2 s".into());
            }
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
    }

    fn observe(
        &self,
        hook: Hook,
        retval: u32,
        out: &[u8],
        prev: &BTreeMap<String, u64>,
        regs: &BTreeMap<String, u64>,
    ) -> Result<Observed, String> {
        let delta = |k: &str| delta_of(prev, regs, k);
        let mut obs = observed(chosen_path(prev, regs));
        match (hook, retval) {
            // The estimator changes nothing of the frame: nothing to observe but the action.
            (Hook::Egress, TC_ACT_OK) => obs.action = "transmit".into(),
            (Hook::Ingress, TC_ACT_REDIRECT) => self.redirected(out, &mut obs)?,
            (Hook::Ingress, TC_ACT_OK) => obs.action = "to_stack".into(),
            (Hook::Timer, TC_ACT_SHOT) => {
                obs.action = "timer".into();
                obs.probes = self.probes_sent(&delta)?;
            }
            (Hook::Ingress, TC_ACT_SHOT) if delta("counter.hula.probes_in") > 0 => {
                obs.action = "consume".into();
                obs.probes = self.probes_sent(&delta)?;
            }
            // The twin refuses a probe with Verdict::Drop(Malformed).
            (Hook::Ingress, TC_ACT_SHOT) if delta("counter.hula.probes_refused") > 0 => {
                obs.action = "drop".into();
                obs.drop_reason = Some("malformed".into());
            }
            (Hook::Ingress, TC_ACT_SHOT) => shot(&mut obs, &delta),
            (_, r) => return Err(format!("unexpected return code {r}")),
        }
        Ok(obs)
    }

    /// A redirected data packet: its port, TTL, ECN and connection header.
    fn redirected(&self, out: &[u8], obs: &mut Observed) -> Result<(), String> {
        check_ipv4_checksum(out)?;
        let p = port_of_mac(out).ok_or("output frame to an unknown MAC")?;
        if out[6..12] != self.tables.ports[usize::from(p)].own_mac {
            return Err(format!("output frame's source MAC is not port {p}'s"));
        }
        let (m, _, stack) =
            parse_frame_with_headers(out, self.set.config.feedback_port).map_err(|e| format!("output frame: {e:?}"))?;
        obs.action = "redirect".into();
        obs.port = Some(p);
        obs.ttl = Some(m.ttl);
        obs.ecn = Some(m.ecn);
        obs.conn = stack.routing().map(|r| ConnObserved {
            conn_id: r.conn_id,
            subflow: r.path,
        });
        Ok(())
    }

    /// The probes this step sent, in port order: as many from each port's peer as its
    /// transmit counter rose.
    fn probes_sent(&self, delta: &impl Fn(&str) -> u64) -> Result<Vec<ProbeObserved>, String> {
        let mut probes = Vec::new();
        for p in 0..self.set.n_ports as PortId {
            for _ in 0..delta(&format!("port{p}.tx_pkts")) {
                let f = self.taps[usize::from(p)]
                    .next(1000)
                    .ok_or_else(|| format!("a probe sent by port {p} did not arrive at its peer"))?;
                probes.push(probe_of(&f, p)?);
            }
        }
        Ok(probes)
    }
}

/// The probe a frame carries, as seen leaving port `p`.
pub fn probe_of(frame: &[u8], p: PortId) -> Result<ProbeObserved, String> {
    let (stack, _) = parse_shims(frame).map_err(|e| format!("probe frame at port {p}: {e:?}"))?;
    let h = stack
        .probe()
        .ok_or_else(|| format!("a frame at port {p}'s peer is not a probe"))?;
    Ok(ProbeObserved {
        port: p,
        tor: h.tor,
        hops: h.hops,
        util: h.util,
    })
}
