//! The conformance vectors of the baselines `dcqcn`, `tcn` and `p4qcn`
//! (`tests/vectors/dcqcn-*.json`, `tcn-*.json`, `p4qcn-*.json`): a switch of two ports, frames
//! leaving port 1
//! at egress with the queue figures the marking reads (the depth the frame found,
//! `enq_qdepth_pkts`, and its sojourn, `sojourn_ns`), out the ECN bits of the frame that
//! leaves and the counters `counter.baseline.marked` / `counter.baseline.tail_drops`.
//!
//! DCQCN's draws are fixed (`rs_raw_draws`, replayed cyclically): only an ECN-capable packet
//! whose probability lies strictly between 0 and 1 takes one, and it marks iff
//! `(draw x 10^6) >> 32 < p_ppm` (`baselines::red_draw_marks`), so the sets put draws on both
//! sides of a probability's edge. TCN's sojourns are whole microseconds, BMv2's unit: its
//! threshold in ps becomes `floor(ps / 10^6)` microseconds there, and a packet is marked iff its
//! sojourn is strictly above, so a threshold of 1700.5 us must mark 1701 us and not 1700 us.
//!
//! An ingress step also joins its port's queue (the runner calls `on_enqueue`) having found the
//! step's `enq_qdepth_pkts`: P4QCN samples there, and a packet finding `fifo_pkts` is dropped
//! (`counter.baseline.tail_drops`). The marking sets' ingress steps find an empty queue.

use super::baselines::{DCQCN, P4QCN, PPM, TCN};
use super::cp::FEEDBACK_DSCP;
use crate::SwitchProgram;
use mpsched_core::packet::{Ecn, Ipv4, PacketMeta};
use mpsched_core::switch::SwitchConfig;
use mpsched_core::table::Route;
use mpsched_core::vectors::{to_hex, Delivery, Hook, Step, VectorSet, OWN_MAC_NODE, PEER_MAC_NODE};
use mpsched_core::wire::{emit_udp_frame, mac_for};
use std::collections::BTreeMap;

const SWITCH: Ipv4 = 0x0aff_0001;
const SRC: Ipv4 = 0x0a00_0001;
const DST: Ipv4 = 0x0a00_0002;
const US: u64 = 1000;

/// `SRC` behind port 0, `DST` behind port 1.
fn switch() -> SwitchConfig {
    let route = |prefix, port| Route { prefix, len: 32, port };
    SwitchConfig::forwarding(SWITCH, vec![route(SRC, 0), route(DST, 1)])
}

/// A UDP frame from `SRC` to `DST` with ECN bits `ecn`, as it arrives on port 0 (the MACs do
/// not matter at egress).
fn udp(ecn: Ecn) -> Vec<u8> {
    let mut m = PacketMeta::udp(SRC, DST, 40_000, 5201, 0);
    m.ecn = ecn;
    let mut out = Vec::new();
    emit_udp_frame(
        &m,
        mac_for(PEER_MAC_NODE, 0),
        mac_for(OWN_MAC_NODE, 0),
        1,
        &[0u8; 64],
        &mut out,
    );
    out
}

fn ingress(note: impl Into<String>, ecn: Ecn) -> Step {
    Step {
        note: note.into(),
        hook: Hook::Ingress,
        port: 0,
        time_ns: 0,
        frame: to_hex(&udp(ecn)),
        delivery: Delivery::TestRun,
        queue: 0,
        enq_qdepth_pkts: 0,
        sojourn_ns: 0,
        writes: Vec::new(),
        expect: None,
    }
}

/// A frame of `ecn` leaving port 1 having found `depth_pkts` packets and waited `sojourn_us`.
fn leave(note: impl Into<String>, ecn: Ecn, depth_pkts: u32, sojourn_us: u64) -> Step {
    Step {
        hook: Hook::Egress,
        port: 1,
        enq_qdepth_pkts: depth_pkts,
        sojourn_ns: sojourn_us * US,
        ..ingress(note, ecn)
    }
}

fn set(name: &str, description: &str, program: &dyn SwitchProgram, params: &[(&str, u64)]) -> VectorSet {
    VectorSet {
        name: name.into(),
        description: description.into(),
        program: program.name().into(),
        params: params.iter().map(|&(k, v)| (k.to_string(), v)).collect(),
        config: switch(),
        n_ports: 2,
        markers: Vec::new(),
        rs_raw_draws: Vec::new(),
        initial_registers: BTreeMap::new(),
        steps: Vec::new(),
    }
}

/// The smallest 32-bit draw whose millionth `(draw x 10^6) >> 32` is `u` (`u` = 10^6: one
/// past the largest draw).
pub fn first_draw_of(u: u64) -> u64 {
    (u << 32).div_ceil(PPM)
}

/// Every `dcqcn`, `tcn` and `p4qcn` set.
pub fn sets() -> Vec<VectorSet> {
    vec![
        dcqcn_red_set(),
        dcqcn_single_k_set(),
        tcn_sojourn_set(),
        tcn_rounding_set(),
        p4qcn_set(),
    ]
}

/// A UDP frame of DSCP `dscp` from `src` to `DST`, ECT(0), arriving on port 0 at `time_us`
/// and finding `depth_pkts` packets in port 1's queue.
fn arrive(note: impl Into<String>, src: Ipv4, dscp: u8, depth_pkts: u32, time_us: u64) -> Step {
    let mut m = PacketMeta::udp(src, DST, 40_000 + u16::from(dscp), 5201, 0);
    m.ecn = Ecn::Ect0;
    m.dscp = dscp;
    let mut out = Vec::new();
    emit_udp_frame(
        &m,
        mac_for(PEER_MAC_NODE, 0),
        mac_for(OWN_MAC_NODE, 0),
        1,
        &[0u8; 64],
        &mut out,
    );
    Step {
        frame: to_hex(&out),
        enq_qdepth_pkts: depth_pkts,
        time_ns: time_us * US,
        ..ingress(note, Ecn::Ect0)
    }
}

/// P4QCN (q_eq 11, w 2, so Fb_max 55; one sample per 2 us): no feedback below equilibrium;
/// the gap; the quantised cut on the growth and the offset, capped at 63; the tail drop before
/// any sample; the last sample's depth as Q_old; the class in the feedback; network control
/// never sampled; no route back; the switch's own packets never reflected; nothing marked.
fn p4qcn_set() -> VectorSet {
    const OTHER_SRC: Ipv4 = 0x0c00_0001;
    let mut s = set(
        "p4qcn-feedback",
        "p4qcn (q_eq 11, w 2, one sample per port per 2 us, fifo 64): Fb = -((Q - q_eq) + w (Q - Q_old)) on the depth a packet finds as it joins the queue, |Fb| quantised to 6 bits against q_eq (2w + 1) and reflected to the source as target / measured = (128 - Fb6) / 128; the gap; the cap; the tail drop before any sample; network control never sampled; no route back; the switch's own packets sampled but never reflected; egress marks nothing",
        &P4QCN,
        &[("q_eq", 11), ("w", 2), ("feedback_gap", 2_000_000), ("fifo_pkts", 64)],
    );
    s.steps = vec![
        arrive("an empty queue: sampled, Fb = 11, no feedback", SRC, 0, 0, 0),
        arrive("12 found 1 us later: within the gap, not sampled", SRC, 0, 12, 1),
        arrive(
            "12 found after the gap: Fb = -25, |Fb6| = 29, feedback 99 / 128",
            SRC,
            0,
            12,
            2,
        ),
        arrive("12 again: Fb = -1, |Fb6| = 2, feedback 126 / 128", SRC, 0, 12, 4),
        arrive(
            "60 found: Fb = -145, capped at 55: |Fb6| = 63, feedback 65 / 128",
            SRC,
            0,
            60,
            6,
        ),
        arrive("64 found (fifo_pkts): dropped before any sample", SRC, 0, 64, 8),
        arrive(
            "10 found: Q_old is 60 (the drop was not sampled), Fb = 101: none",
            SRC,
            0,
            10,
            8,
        ),
        arrive(
            "class 5, 20 found: Fb = -29, |Fb6| = 34, its class in the feedback",
            SRC,
            40,
            20,
            10,
        ),
        arrive(
            "network control (DSCP 56), 30 found: never sampled",
            SRC,
            FEEDBACK_DSCP,
            30,
            12,
        ),
        arrive(
            "30 found from a source with no route back: Fb = -39, its feedback has no route",
            OTHER_SRC,
            0,
            30,
            12,
        ),
        arrive(
            "from the switch itself, 40 found: sampled, never reflected",
            SWITCH,
            0,
            40,
            14,
        ),
        leave(
            "egress, 50 found and a long wait: p4qcn marks nothing",
            Ecn::Ect0,
            50,
            5_000,
        ),
    ];
    s
}

/// kmin 4, kmax 12, pmax 50 %: at 8 packets p = 250 000 ppm, at 12 p = 500 000 ppm.
fn dcqcn_red_set() -> VectorSet {
    let below = |u: u64| (first_draw_of(u) - 1) as u32;
    let at = |u: u64| first_draw_of(u) as u32;
    let mut s = set(
        "dcqcn-red",
        "dcqcn (kmin 4, kmax 12, pmax 50 %) on fixed draws: below kmin and at it never marked, nothing drawn; between them one draw decides, on both sides of the probability's edge ((draw x 10^6) >> 32 < p_ppm); at kmax pmax; above it always, nothing drawn; Not-ECT never marked, counted nor drawn for; CE left; ingress marks nothing",
        &DCQCN,
        &[("kmin", 4), ("kmax", 12), ("pmax_pct", 50)],
    );
    s.rs_raw_draws = vec![
        below(250_000),
        at(250_000),
        0,
        u32::MAX,
        below(62_500),
        at(62_500),
        below(500_000),
        at(500_000),
    ];
    s.steps = vec![
        ingress("ECT(0) forwarded to port 1: ingress marks nothing", Ecn::Ect0),
        leave("3 packets found (below kmin): not marked, no draw", Ecn::Ect0, 3, 0),
        leave("4 packets found (kmin, p = 0): not marked, no draw", Ecn::Ect0, 4, 0),
        leave(
            "8 found, p = 250 000 ppm; draw 1 maps to 249 999: marked",
            Ecn::Ect0,
            8,
            0,
        ),
        leave(
            "8 found; draw 2 maps to 250 000, not below p: not marked",
            Ecn::Ect0,
            8,
            0,
        ),
        leave(
            "Not-ECT, 8 found: not marked, not counted, no draw taken",
            Ecn::NotEct,
            8,
            0,
        ),
        leave("ECT(1), 8 found; draw 3 is 0: marked", Ecn::Ect1, 8, 0),
        leave(
            "9 found, p = 312 500 ppm; draw 4 is 2^32 - 1: not marked",
            Ecn::Ect0,
            9,
            0,
        ),
        leave(
            "5 found, p = 62 500 ppm; draw 5 maps to 62 499: marked",
            Ecn::Ect0,
            5,
            0,
        ),
        leave("5 found; draw 6 maps to 62 500: not marked", Ecn::Ect0, 5, 0),
        leave(
            "12 found (kmax, p = pmax = 500 000 ppm); draw 7 maps to 499 999: marked",
            Ecn::Ect0,
            12,
            0,
        ),
        leave("12 found; draw 8 maps to 500 000: not marked", Ecn::Ect0, 12, 0),
        leave("13 found (above kmax): marked, no draw", Ecn::Ect0, 13, 0),
        ingress(
            "ECT(0) forwarded after that: ingress marks nothing (the 13 packets were the egress step's)",
            Ecn::Ect0,
        ),
        leave("CE, 13 found: left CE, not counted", Ecn::Ce, 13, 0),
        leave("Not-ECT, 13 found: not marked, not counted", Ecn::NotEct, 13, 0),
        leave("8 found: the draws wrap to draw 1, 249 999: marked", Ecn::Ect1, 8, 0),
        leave(
            "63 found, a long sojourn: marked (DCQCN reads the depth only)",
            Ecn::Ect0,
            63,
            50_000,
        ),
    ];
    s
}

/// The paper's single threshold (kmin = kmax = 11, pmax 100 %, the defaults): 10 packets
/// found is never marked, 11 and more always, with no draw at all.
fn dcqcn_single_k_set() -> VectorSet {
    let mut s = set(
        "dcqcn-single-k",
        "dcqcn with the PMQECN paper's single threshold (kmin = kmax = 11, pmax 100 %, the defaults): 10 packets found never marked, 11 and above always, no draw; a long sojourn alone marks nothing",
        &DCQCN,
        &[],
    );
    s.steps = vec![
        leave("empty queue: not marked", Ecn::Ect0, 0, 0),
        leave("10 found (below K), a long sojourn: not marked", Ecn::Ect0, 10, 10_000),
        leave("11 found (K): marked", Ecn::Ect0, 11, 0),
        leave("ECT(1), 12 found: marked", Ecn::Ect1, 12, 0),
        leave("Not-ECT, 64 found: not marked", Ecn::NotEct, 64, 0),
        leave(
            "524 287 found (BMv2's deepest enq_qdepth): marked",
            Ecn::Ect0,
            524_287,
            0,
        ),
    ];
    s
}

/// TCN's threshold of scenarios 1 and 2, 1.7 ms: strictly above it marks.
fn tcn_sojourn_set() -> VectorSet {
    let mut s = set(
        "tcn-sojourn",
        "tcn (sojourn 1.7 ms): 0, 1 699 us and exactly 1 700 us not marked, 1 701 us and 50 ms marked; ECT(1) marked, Not-ECT never, CE left; a deep queue with a short sojourn not marked; ingress marks nothing",
        &TCN,
        &[("sojourn", 1_700_000_000)],
    );
    s.steps = vec![
        ingress("ECT(0) forwarded to port 1: ingress marks nothing", Ecn::Ect0),
        leave("no wait: not marked", Ecn::Ect0, 0, 0),
        leave("1 699 us: not marked", Ecn::Ect0, 3, 1_699),
        leave("exactly 1 700 us: not above, not marked", Ecn::Ect0, 3, 1_700),
        leave("1 701 us: marked", Ecn::Ect0, 3, 1_701),
        leave("ECT(1), 50 ms: marked", Ecn::Ect1, 3, 50_000),
        ingress(
            "ECT(0) forwarded after that: ingress marks nothing (the 50 ms were the egress step's)",
            Ecn::Ect0,
        ),
        leave("Not-ECT, 50 ms: not marked, not counted", Ecn::NotEct, 3, 50_000),
        leave("CE, 50 ms: left CE, not counted", Ecn::Ce, 3, 50_000),
        leave(
            "63 packets found, 10 us: not marked (TCN reads the sojourn only)",
            Ecn::Ect0,
            63,
            10,
        ),
    ];
    s
}

/// A threshold that is no whole microsecond, 1 700.5 us: BMv2 compares whole microseconds
/// with `floor(1 700.5) = 1 700`, which must mark 1 701 us and not 1 700 us, as the Rust twin
/// does (rounding up or to the nearest would leave 1 701 us unmarked).
fn tcn_rounding_set() -> VectorSet {
    let mut s = set(
        "tcn-rounding",
        "tcn with a threshold of 1 700.5 us (not a whole microsecond, BMv2's unit): 1 700 us not marked, 1 701 us marked",
        &TCN,
        &[("sojourn", 1_700_500_000)],
    );
    s.steps = vec![
        leave("1 700 us: under 1 700.5, not marked", Ecn::Ect0, 0, 1_700),
        leave("1 701 us: over 1 700.5, marked", Ecn::Ect0, 0, 1_701),
    ];
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::vectors::{fill_expectations, run_rust};

    fn filled(name: &str) -> VectorSet {
        let mut s = sets().into_iter().find(|s| s.name == name).unwrap();
        fill_expectations(&mut s).unwrap();
        s
    }

    /// The ECN each step's frame left with.
    fn ecns(s: &VectorSet) -> Vec<Option<Ecn>> {
        s.steps
            .iter()
            .map(|st| st.expect.as_ref().unwrap().observed.ecn)
            .collect()
    }

    fn marked(s: &VectorSet) -> u64 {
        run_rust(s).unwrap().1.last().unwrap().registers["counter.baseline.marked"]
    }

    #[test]
    fn p4qcn_reflects_the_quantised_cut_to_the_source_once_per_gap() {
        let s = filled("p4qcn-feedback");
        let fb: Vec<Option<(u8, u16, u32)>> = s
            .steps
            .iter()
            .map(|st| {
                let f = st.expect.as_ref().unwrap().observed.rate_feedback?;
                assert_eq!((f.port, f.dst_ip, f.measured_kbps), (0, SRC, 128));
                Some((f.queue, f.qlen_pkts, f.target_kbps))
            })
            .collect();
        let want = [
            None,
            None,
            Some((0, 12, 99)),
            Some((0, 12, 126)),
            Some((0, 60, 65)),
            None,
            None,
            Some((5, 20, 94)),
            None,
            None,
            None,
            None,
        ];
        assert_eq!(fb, want);
        let drop = &s.steps[5].expect.as_ref().unwrap().observed;
        assert_eq!(drop.drop_reason.as_deref(), Some("queue_full"));
        let last = run_rust(&s).unwrap().1.last().unwrap().registers.clone();
        assert_eq!(last["counter.baseline.tail_drops"], 1);
        // Every step but the gap's, the drop, network control's and egress's was sampled.
        assert_eq!(last["counter.qcn.samples"], 8);
        assert_eq!(last["counter.qcn.feedback"], 4);
        assert_eq!(last["counter.qcn.feedback_no_route"], 1);
        assert_eq!(last["counter.baseline.marked"], 0);
    }

    #[test]
    fn first_draw_of_is_the_edge_of_its_millionth() {
        assert_eq!(first_draw_of(0), 0);
        for u in [1, 62_500, 250_000, 999_999] {
            let d = first_draw_of(u);
            assert_eq!(((d * PPM) >> 32, ((d - 1) * PPM) >> 32), (u, u - 1));
        }
        assert_eq!(first_draw_of(PPM), 1 << 32);
    }

    #[test]
    fn dcqcn_marks_by_depth_and_draw() {
        use Ecn::*;
        let s = filled("dcqcn-red");
        let want = [
            Ect0, Ect0, Ect0, Ce, Ect0, NotEct, Ce, Ect0, Ce, Ect0, Ce, Ect0, Ce, Ect0, Ce, NotEct, Ce, Ce,
        ];
        assert_eq!(ecns(&s), want.map(Some));
        assert_eq!(marked(&s), 7);
        let last = run_rust(&s).unwrap().1.last().unwrap().registers.clone();
        assert_eq!(last["counter.baseline.tail_drops"], 0);
    }

    #[test]
    fn dcqcn_with_one_threshold_marks_from_k_without_draws() {
        use Ecn::*;
        let s = filled("dcqcn-single-k");
        assert_eq!(ecns(&s), [Ect0, Ect0, Ce, Ce, NotEct, Ce].map(Some));
        assert_eq!(marked(&s), 3);
    }

    #[test]
    fn tcn_marks_strictly_above_its_threshold_in_whole_microseconds() {
        use Ecn::*;
        let s = filled("tcn-sojourn");
        assert_eq!(
            ecns(&s),
            [Ect0, Ect0, Ect0, Ect0, Ce, Ce, Ect0, NotEct, Ce, Ect0].map(Some)
        );
        assert_eq!(marked(&s), 2);
        let s = filled("tcn-rounding");
        assert_eq!(ecns(&s), [Ect0, Ce].map(Some));
    }
}
