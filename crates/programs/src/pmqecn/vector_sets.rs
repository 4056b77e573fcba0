//! `vq-wrr`'s conformance vectors (`tests/vectors/vq-wrr-*.json`): a switch of three ports,
//! frames of a DSCP class in, the level each takes and frees out, as the registers
//! `vq_level_use`, `vq_len` and `vq_weight` (`VqWrr::vector_registers`) and the `vq.*` counters.
//!
//! An ingress step places a packet (the level is the `vq_level_use` entry that rose); an egress
//! step is a packet leaving its port from the queue the step names (`queue`), which frees a slot
//! at that level; a step's `writes` are the control plane's, before its frame. On BMv2 the
//! packets an ingress step forwards leave through egress too, where the program would release
//! them at once: the vectors' switch releases only on egress steps, as the Rust runner does
//! (`crates/bmv2/src/vqwrr.rs`).

use super::cp::{FEEDBACK_DSCP, FEEDBACK_PORT, PMQECN};
use super::vqwrr::VQ_WRR;
use crate::vectors::fix_checksum;
use crate::SwitchProgram;
use mpsched_core::packet::{Ipv4, PacketMeta, PortId};
use mpsched_core::switch::SwitchConfig;
use mpsched_core::table::Route;
use mpsched_core::vectors::{to_hex, Delivery, Hook, RegisterWrite, Step, VectorSet, OWN_MAC_NODE, PEER_MAC_NODE};
use mpsched_core::wire::{emit_udp_frame, mac_for};
use std::collections::BTreeMap;

const SWITCH: Ipv4 = 0x0aff_0001;
const SRC: Ipv4 = 0x0a00_0001;
const DST: Ipv4 = 0x0a00_0002;
const DST2: Ipv4 = 0x0a00_0003;
const NO_ROUTE: Ipv4 = 0x0b00_0001;

/// Hosts: `SRC` behind port 0, `DST` behind port 1, `DST2` behind port 2.
fn switch() -> SwitchConfig {
    let route = |prefix, port| Route { prefix, len: 32, port };
    SwitchConfig::forwarding(SWITCH, vec![route(SRC, 0), route(DST, 1), route(DST2, 2)])
}

/// A UDP frame of DSCP class `class` from `SRC` to `dst`, as it arrives on port 0 (ingress)
/// or leaves by a port (egress: the MACs do not matter there).
fn udp(class: u8, dst: Ipv4) -> Vec<u8> {
    let mut m = PacketMeta::udp(SRC, dst, 40_000 + u16::from(class), 5201, 0);
    m.dscp = class << 3;
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

fn step(note: impl Into<String>, hook: Hook, port: PortId, queue: u8, frame: &[u8]) -> Step {
    Step {
        note: note.into(),
        hook,
        port,
        time_ns: 0,
        frame: to_hex(frame),
        delivery: Delivery::TestRun,
        queue,
        enq_qdepth_pkts: 0,
        sojourn_ns: 0,
        writes: Vec::new(),
        expect: None,
    }
}

/// A UDP frame of class `class` from `src` (source port `sport`) to `DST`, arriving on port 0.
fn udp_from(src: Ipv4, sport: u16, class: u8) -> Vec<u8> {
    let mut m = PacketMeta::udp(src, DST, sport, 5201, 0);
    m.dscp = class << 3;
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

/// A packet of `class` arriving on port 0 for `dst`.
fn arrive(note: impl Into<String>, class: u8, dst: Ipv4) -> Step {
    step(note, Hook::Ingress, 0, 0, &udp(class, dst))
}

/// A packet of `class` leaving `port` from queue `queue`.
fn leave(note: impl Into<String>, class: u8, port: PortId, queue: u8) -> Step {
    step(note, Hook::Egress, port, queue, &udp(class, DST))
}

/// `then` at `time_us` microseconds (BMv2's clock counts them).
fn at_us(time_us: u64, then: Step) -> Step {
    Step {
        time_ns: time_us * 1000,
        ..then
    }
}

/// The control plane writes `register[index] = value` before `then`.
fn with_write(register: &str, index: u8, value: u64, mut then: Step) -> Step {
    then.writes.push(RegisterWrite {
        register: register.into(),
        index: usize::from(index),
        value,
    });
    then
}

/// The control plane writes `vq_weight[class] = weight` before `then`.
fn with_weight(class: u8, weight: u64, then: Step) -> Step {
    Step {
        writes: vec![RegisterWrite {
            register: "vq_weight".into(),
            index: usize::from(class),
            value: weight,
        }],
        ..then
    }
}

fn set(name: &str, description: &str, params: &[(&str, u64)], steps: Vec<Step>) -> VectorSet {
    VectorSet {
        name: name.into(),
        description: description.into(),
        program: if name.starts_with("pmqecn") {
            PMQECN.name()
        } else {
            VQ_WRR.name()
        }
        .into(),
        params: params.iter().map(|&(k, v)| (k.to_string(), v)).collect(),
        config: switch(),
        n_ports: 3,
        markers: Vec::new(),
        rs_raw_draws: Vec::new(),
        initial_registers: BTreeMap::new(),
        steps,
    }
}

/// Every `vq-wrr` and `pmqecn` set.
pub fn sets() -> Vec<VectorSet> {
    vec![levels_set(), weights_set(), feedback_set()]
}

/// Weight 2, four levels, 10 packets per virtual queue: a class fills levels 3 to 0 two at a
/// time and then stays at 0; another class starts at the top; a departure frees its level; a
/// full virtual queue drops; a departure nobody counted is an error; frames that are not
/// forwarded leave the counts alone.
fn levels_set() -> VectorSet {
    let mut steps = Vec::new();
    for (i, level) in [3, 3, 2, 2, 1, 1, 0, 0, 0].into_iter().enumerate() {
        let why = match i {
            0 => "the top level",
            1 => "the top level again: its second slot",
            2 => "level 3 holds its weight: a step down",
            6 => "every level above 0 holds its weight: level 0",
            8 => "every level full: level 0 takes the rest",
            _ => "filling the levels two by two",
        };
        steps.push(arrive(
            format!("class 0, packet {}: level {level} ({why})", i + 1),
            0,
            DST,
        ));
    }
    steps.push(arrive("class 2: its own slots, the top level", 2, DST));
    steps.push(arrive(
        "class 0 to port 2: another port's own counts, the top level",
        0,
        DST2,
    ));
    steps.push(leave(
        "class 0 leaves port 1 from queue 3: a slot at level 3 is free",
        0,
        1,
        3,
    ));
    steps.push(arrive("class 0: the freed slot at level 3", 0, DST));
    steps.push(leave("class 0 leaves port 1 from queue 0", 0, 1, 0));
    steps.push(arrive("class 0: level 0 (levels 3 to 1 full)", 0, DST));
    steps.push(arrive(
        "class 0: its tenth packet at port 1, level 0 (the virtual queue is now full)",
        0,
        DST,
    ));
    steps.push(arrive(
        "class 0: the virtual queue holds 10: dropped (queue full)",
        0,
        DST,
    ));
    steps.push(arrive("class 0 to port 2: not full there, level 3", 0, DST2));
    steps.push(leave("class 2 leaves port 1 from queue 3", 2, 1, 3));
    steps.push(leave(
        "class 2 leaves port 1 from queue 3 again: not counted there, an accounting error",
        2,
        1,
        3,
    ));
    steps.push(leave(
        "class 6 leaves port 2: a port it never used for that class, an accounting error",
        6,
        2,
        1,
    ));
    steps.push(arrive("class 2: level 3 again", 2, DST));
    steps.push(arrive("no route: dropped, nothing counted", 0, NO_ROUTE));
    let mut ttl1 = udp(0, DST);
    ttl1[22] = 1;
    fix_checksum(&mut ttl1);
    steps.push(step("TTL 1: dropped, nothing counted", Hook::Ingress, 0, 0, &ttl1));
    let mut arp = udp(0, DST);
    arp[12..14].copy_from_slice(&[0x08, 0x06]);
    steps.push(step("ARP: to the node's stack", Hook::Ingress, 0, 0, &arp));
    steps.push(arrive("to the switch itself: its stack", 0, SWITCH));
    set(
        "vq-wrr-levels",
        "vq-wrr (weight 2, 4 levels, 10 packets per virtual queue): a class fills the levels from the top two at a time and then level 0; another class and another port start at the top; a departure frees its level; a full virtual queue drops; departures nobody counted are errors; frames not forwarded are not counted",
        &[("weight", 2), ("levels", 4), ("vq_capacity", 10)],
        steps,
    )
}

/// The defaults (weight 3, 8 levels, 64 packets), and weights written by the control plane:
/// class 5 given 1 steps down after each packet, class 1 given 4 after four; a weight lowered
/// below what a level holds sends the next packet down.
fn weights_set() -> VectorSet {
    let mut steps = vec![
        arrive("class 1: the top level (7)", 1, DST),
        arrive("class 1: level 7", 1, DST),
        arrive("class 1: level 7 (its weight, 3)", 1, DST),
        arrive("class 1: level 6", 1, DST),
        with_weight(5, 1, arrive("weight of class 5 set to 1: level 7", 5, DST)),
        arrive("class 5: level 6 (weight 1)", 5, DST),
        arrive("class 5: level 5", 5, DST),
        with_weight(
            1,
            4,
            arrive("weight of class 1 set to 4: level 7 takes a fourth", 1, DST),
        ),
        arrive("class 1: level 6 (level 7 holds 4)", 1, DST),
        with_weight(
            1,
            1,
            arrive("weight of class 1 set to 1: levels 7 and 6 over it, level 5", 1, DST),
        ),
        leave("class 1 leaves from queue 7", 1, 1, 7),
        arrive("class 1: level 7 still holds 3, over the weight 1: level 4", 1, DST),
    ];
    for _ in 0..3 {
        steps.push(leave("class 1 leaves from queue 7", 1, 1, 7));
    }
    steps.push(arrive("class 1: level 7 is empty: back to the top", 1, DST));
    set(
        "vq-wrr-weights",
        "vq-wrr with its defaults (weight 3, 8 levels) and weights written by the control plane (vq_weight): a class's weight raised and lowered steps its packets down sooner or later; a level over its new weight is skipped until it drains",
        &[],
        steps,
    )
}

/// `pmqecn` (threshold 2, gap 2 us, weight 2, 4 levels, 6 packets a virtual queue): feedback
/// to the source's address and port once a class holds more than its threshold, with the
/// rates the control plane wrote; the gap per class and port; a class's own threshold; a full
/// virtual queue drops the packet and still reports; the switch's own feedback leaving is not
/// counted; no route back; frames that never reach the queue stage.
fn feedback_set() -> VectorSet {
    const OTHER_SRC: Ipv4 = 0x0c00_0001;
    let class1 = |note: &str, us| at_us(us, arrive(note, 1, DST));
    let mut steps = vec![
        with_write(
            "vq_rate_kbps",
            1,
            6_000,
            with_write(
                "vq_target_kbps",
                1,
                4_000,
                class1("class 1, rates written: 1 waiting, no feedback", 0),
            ),
        ),
        class1("class 1: 2 waiting, at the threshold: no feedback", 0),
        class1("class 1: 3 waiting, above it: feedback to the source with the rates", 0),
        class1("class 1 half a gap later: held back", 1),
        with_write(
            "vq_threshold",
            2,
            0,
            at_us(
                1,
                arrive("class 2, its threshold written 0: its own gap, feedback", 2, DST),
            ),
        ),
        class1("class 1 a gap after its last feedback: feedback (5 waiting)", 2),
        class1("class 1: 6 waiting, the virtual queue full: feedback", 4),
        class1("class 1 finds its virtual queue full: dropped, and still reported", 6),
        at_us(6, leave("class 1 leaves port 1 from level 3", 1, 1, 3)),
    ];
    let mut own = PacketMeta::udp(SWITCH, SRC, FEEDBACK_PORT, 40_001, 0);
    own.dscp = FEEDBACK_DSCP;
    let mut fb = Vec::new();
    emit_udp_frame(
        &own,
        mac_for(OWN_MAC_NODE, 0),
        mac_for(PEER_MAC_NODE, 0),
        64,
        &[0u8; 16],
        &mut fb,
    );
    steps.push(at_us(
        6,
        step(
            "the switch's own feedback leaves port 0: not counted",
            Hook::Egress,
            0,
            3,
            &fb,
        ),
    ));
    steps.push(with_write(
        "vq_threshold",
        1,
        10,
        class1("class 1, its threshold written 10: 6 waiting, no feedback", 8),
    ));
    steps.push(with_write(
        "vq_threshold",
        3,
        0,
        at_us(
            8,
            step(
                "class 3 from a source with no route back: forwarded, its feedback has no route",
                Hook::Ingress,
                0,
                0,
                &udp_from(OTHER_SRC, 7_000, 3),
            ),
        ),
    ));
    steps.push(at_us(
        8,
        step(
            "class 3 from the source at once: held back (the gap runs from the attempt)",
            Hook::Ingress,
            0,
            0,
            &udp_from(SRC, 7_001, 3),
        ),
    ));
    steps.push(at_us(
        10,
        step(
            "class 3 a gap later: feedback to its own port",
            Hook::Ingress,
            0,
            0,
            &udp_from(SRC, 7_002, 3),
        ),
    ));
    let mut ttl1 = udp(2, DST);
    ttl1[22] = 1;
    fix_checksum(&mut ttl1);
    steps.push(at_us(
        20,
        step("TTL 1: dropped before the queue stage", Hook::Ingress, 0, 0, &ttl1),
    ));
    steps.push(at_us(
        20,
        arrive("no route: dropped before the queue stage", 2, NO_ROUTE),
    ));
    set(
        "pmqecn-feedback",
        "pmqecn (threshold 2, feedback gap 2 us, weight 2, 4 levels, 6 packets a virtual queue): feedback with the written rates to the source's address and port above a class's threshold, held back within the gap per class and port, a class's own threshold, a full virtual queue's drop still reported, the switch's own feedback not counted when it leaves, no route back, frames that never reach the queue stage",
        &[
            ("threshold", 2),
            ("feedback_gap", 2_000_000),
            ("weight", 2),
            ("levels", 4),
            ("vq_capacity", 6),
            ("control_period", 0),
        ],
        steps,
    )
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

    /// The level each ingress step took: the `vq_level_use` entry that rose, as `(port, class,
    /// level)`; None for a step that placed nothing.
    fn placed(s: &VectorSet) -> Vec<Option<(usize, usize, usize)>> {
        let (init, res) = run_rust(s).unwrap();
        let mut prev = init;
        let mut out = Vec::new();
        for (st, r) in s.steps.iter().zip(res) {
            let rose = r.registers.iter().find_map(|(k, v)| {
                let i: usize = k.strip_prefix("vq_level_use")?.parse().ok()?;
                (*v > prev.get(k).copied().unwrap_or(0)).then_some((i / 64, i / 8 % 8, i % 8))
            });
            if st.hook == Hook::Ingress {
                out.push(rose);
            }
            prev = r.registers;
        }
        out
    }

    #[test]
    fn a_class_fills_the_levels_by_its_weight_and_a_departure_frees_one() {
        let s = filled("vq-wrr-levels");
        let p = placed(&s);
        let levels: Vec<usize> = p[..9].iter().map(|x| x.unwrap().2).collect();
        assert_eq!(levels, [3, 3, 2, 2, 1, 1, 0, 0, 0]);
        assert_eq!(p[9], Some((1, 2, 3)), "another class at the top");
        assert_eq!(p[10], Some((2, 0, 3)), "another port at the top");
        assert_eq!(p[11], Some((1, 0, 3)), "the freed slot");
        assert_eq!(p[12], Some((1, 0, 0)));
        assert_eq!(p[14], None, "dropped: full");
        let last = run_rust(&s).unwrap().1.last().unwrap().registers.clone();
        assert_eq!(last["counter.vq.drops"], 1);
        assert_eq!(last["counter.vq.accounting_errors"], 2);
        assert_eq!(last["vq_len8"], 10, "port 1, class 0: full");
        let drop = s
            .steps
            .iter()
            .find(|st| st.note.contains("dropped (queue full)"))
            .unwrap();
        let drop = drop.expect.as_ref().unwrap();
        assert_eq!(drop.observed.drop_reason.as_deref(), Some("queue_full"));
    }

    #[test]
    fn feedback_reaches_the_source_above_the_threshold_once_per_gap() {
        let s = filled("pmqecn-feedback");
        let expect = |i: usize| s.steps[i].expect.as_ref().unwrap();
        let sent: Vec<Option<(u16, u8, u16, u32)>> = (0..s.steps.len())
            .map(|i| {
                let f = expect(i).observed.rate_feedback?;
                assert_eq!((f.port, f.dst_ip), (0, SRC), "step {i}: to the source, by its route");
                Some((f.dst_port, f.queue, f.qlen_pkts, f.target_kbps))
            })
            .collect();
        let class1 = |qlen| Some((40_001, 1, qlen, 4_000));
        assert_eq!(
            sent[..8],
            [
                None,
                None,
                class1(3),
                None,
                Some((40_002, 2, 1, 0)),
                class1(5),
                class1(6),
                class1(6)
            ]
        );
        assert_eq!(expect(7).observed.drop_reason.as_deref(), Some("queue_full"));
        assert!(
            expect(9).registers.is_empty(),
            "the switch's own feedback is not counted"
        );
        assert_eq!(sent[11], None, "no route back");
        assert_eq!(expect(11).observed.port, Some(1), "the data packet still goes on");
        assert_eq!(expect(11).registers["counter.pmqecn.feedback_no_route"], 1);
        assert_eq!(sent[12], None, "the gap runs from the attempt");
        assert_eq!(sent[13], Some((7_002, 3, 3, 0)));
    }

    #[test]
    fn weights_written_by_the_control_plane_move_the_steps() {
        let s = filled("vq-wrr-weights");
        let levels: Vec<Option<usize>> = placed(&s).into_iter().map(|x| x.map(|x| x.2)).collect();
        assert_eq!(levels, [7, 7, 7, 6, 7, 6, 5, 7, 6, 5, 4, 7].map(Some), "{levels:?}");
        let last = run_rust(&s).unwrap().1.last().unwrap().registers.clone();
        assert_eq!((last["vq_weight1"], last["vq_weight5"], last["vq_weight0"]), (1, 1, 3));
        assert_eq!(last["counter.vq.accounting_errors"], 0);
    }
}
