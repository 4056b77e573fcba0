use super::super::frame::{encapsulate, Encap, HEADER_AT, INNER_AT};
use super::super::registers::{scaled_ticks, target_rtt, PATH_HAS_RTT, PATH_SLOW_START};
use super::*;
use crate::vectors::{fill_expectations, run_rust};
use mpsched_core::vectors::{compare, from_hex, Observed};
use mpsched_core::wire::{internet_checksum, parse_frame};

fn filled(name: &str) -> VectorSet {
    let mut s = sets().into_iter().find(|s| s.name == name).unwrap();
    fill_expectations(&mut s).unwrap();
    s
}

fn observed(s: &VectorSet, i: usize) -> &Observed {
    &s.steps[i].expect.as_ref().unwrap().observed
}

/// The frame a step sent, if it sent one.
fn out(s: &VectorSet, i: usize) -> Option<Vec<u8>> {
    observed(s, i).frame.as_ref().map(|f| from_hex(f).unwrap())
}

/// The path byte of each step's encapsulated frame (None: no downlink frame).
fn paths(s: &VectorSet) -> Vec<Option<u8>> {
    (0..s.steps.len())
        .map(|i| {
            out(s, i)
                .filter(|f| f.len() > INNER_AT && u16::from_be_bytes([f[34], f[35]]) == frame::UPF_PORT)
                .map(|f| f[HEADER_AT + 1])
        })
        .collect()
}

/// Every register after each step.
fn registers_after(s: &VectorSet) -> Vec<BTreeMap<String, u64>> {
    run_rust(s).unwrap().1.into_iter().map(|r| r.registers).collect()
}

#[test]
fn every_set_replays_equal_to_its_expectations_and_every_kind_is_covered() {
    let mut kinds = std::collections::BTreeSet::new();
    for mut s in sets() {
        fill_expectations(&mut s).unwrap();
        let (init, res) = run_rust(&s).unwrap();
        assert!(compare(&s, &init, &res).is_empty(), "{}", s.name);
        assert!(
            s.steps.iter().all(|st| st.time_ns % 1000 == 0),
            "{}: whole microseconds",
            s.name
        );
        for ue in &s.config.upf.ues {
            kinds.insert(ue.kind as u8);
        }
        // The JSON form reads back as written.
        let back: VectorSet = serde_json::from_str(&serde_json::to_string(&s).unwrap()).unwrap();
        assert_eq!(back, s);
    }
    assert_eq!(kinds.len(), 8, "every kind in some set: {kinds:?}");
}

#[test]
fn downlink_frames_are_encapsulated_byte_for_byte() {
    let s = filled("atsss-encap");
    let f = out(&s, 0).unwrap();
    let inner = &from_hex(&s.steps[0].frame).unwrap()[14..];
    let e = Encap {
        src: UPF,
        dst: path_addr(0, 0),
        dst_port: 6000,
        tos: 0,
        header: Header {
            kind: KIND_DATA,
            path: 0,
            epoch: EPOCH,
            packet_number: 0,
        },
        path_seq: 1,
        tunnel_seq: 0,
        sent_us: 1_000,
    };
    let mut want = Vec::new();
    encapsulate(&e, inner, &mut want);
    want[0..6].copy_from_slice(&mac_for(PEER_MAC_NODE, 1));
    want[6..12].copy_from_slice(&mac_for(OWN_MAC_NODE, 1));
    assert_eq!(f, want);
    assert_eq!(internet_checksum(&f[14..34], 0), 0);
    // Paths by the draws at the weight's edge; the one-path UE; the routed frames are not ours.
    assert_eq!(
        paths(&s),
        [
            Some(0),
            Some(0),
            Some(1),
            Some(1),
            Some(0),
            Some(0),
            None,
            Some(0),
            Some(0),
            None,
            None,
            None,
            None,
            None,
            None,
            None,
            None,
            Some(0)
        ]
    );
    // TOS copied whole (EF with CE).
    let f1 = out(&s, 1).unwrap();
    assert_eq!(f1[15], 0xbb);
    // Path 1's first packet is numbered 1 there; the UE's counters run across paths.
    let f2 = out(&s, 2).unwrap();
    assert_eq!(&f2[62..66], &1u32.to_be_bytes(), "path_seq");
    assert_eq!(&f2[66..70], &2u32.to_be_bytes(), "tunnel_seq");
    assert_eq!(&f2[54..62], &2u64.to_be_bytes(), "packet_number");
    assert_eq!(&f2[70..74], &1_002u32.to_be_bytes(), "sent_us");
    // Padding is not carried: 42 bytes of frame, 28 of IPv4, 28 + 74 out.
    assert_eq!(out(&s, 5).unwrap().len(), 28 + INNER_AT);
    // The MTU's edge: 1 500 bytes of outer IPv4 leave; 1 501 would not.
    assert_eq!(out(&s, 7).unwrap().len(), 14 + 1500);
    let too_big = &s.steps[6].expect.as_ref().unwrap();
    assert_eq!(too_big.observed.drop_reason.as_deref(), Some("too_big"));
    assert_eq!(
        too_big.registers.keys().collect::<Vec<_>>(),
        ["counter.atsss.too_big", "port0.rx_pkts"],
        "nothing else moved"
    );
    // Routed: TTL - 1 with a good checksum; UE 1's packets on its only path.
    let routed = out(&s, 9).unwrap();
    let m = parse_frame(&routed, 0).unwrap();
    assert_eq!((m.ttl, internet_checksum(&routed[14..34], 0)), (63, 0));
    let r = registers_after(&s).pop().unwrap();
    assert_eq!(r["atsss.ue0.packet_number"], 8);
    assert_eq!(r["atsss.ue1.packet_number"], 1);
    assert_eq!(r["counter.atsss.encapsulated"], 9);
    assert_eq!(r["counter.atsss.path1_pkts"], 2);
    assert_eq!(
        (r["counter.no_route"], r["counter.ttl_expired"], r["counter.local"]),
        (1, 1, 2)
    );
    assert_eq!((r["counter.not_ipv4"], r["counter.malformed"]), (1, 1));
}

#[test]
fn uplink_is_decapsulated_and_routed_and_keepalives_are_consumed() {
    let s = filled("atsss-uplink");
    let f = out(&s, 0).unwrap();
    let sent = from_hex(&s.steps[0].frame).unwrap();
    let inner = &sent[INNER_AT..];
    assert_eq!(f.len(), 14 + inner.len());
    assert_eq!(f[14 + 8], inner[8] - 1, "TTL - 1");
    assert_eq!(internet_checksum(&f[14..34], 0), 0);
    assert_eq!(&f[14 + 12..], &inner[12..], "the rest unchanged");
    assert_eq!(out(&s, 1).unwrap(), f, "the padding is dropped");
    let actions: Vec<_> = (0..s.steps.len()).map(|i| observed(&s, i).action.clone()).collect();
    assert_eq!(
        actions,
        ["redirect", "redirect", "drop", "drop", "drop", "drop", "consume", "drop"]
    );
    let r = registers_after(&s).pop().unwrap();
    assert_eq!(
        (
            r["counter.atsss.uplink"],
            r["counter.atsss.spoofed"],
            r["counter.atsss.keepalives"]
        ),
        (5, 1, 1)
    );
    assert_eq!(r["counter.atsss.unknown_ue"], 1);
    assert_eq!(r["atsss.ue0.path0.seq_acked"], 0, "uplink moves no register");
}

#[test]
fn acknowledgements_write_rtt_loss_and_in_flight_and_ignore_the_impossible() {
    let s = filled("atsss-acks");
    let r = registers_after(&s);
    let p0 = |i: usize, f: &str| r[i][&format!("atsss.ue0.path0.{f}")];
    let t = |us: u64| u64::from(scaled_ticks(us * 1000));
    assert_eq!(
        (p0(4, "cur_rtt"), p0(4, "min_rtt"), p0(4, "seq_acked")),
        (t(390), t(390), 2)
    );
    assert_eq!(p0(4, "last_heard"), t(1_500));
    assert_eq!(
        (p0(5, "cur_rtt"), p0(5, "min_rtt"), p0(5, "lost")),
        (t(2_950), t(390), 1)
    );
    assert_eq!(r[7], {
        let mut x = r[5].clone();
        x.insert("counter.atsss.acks_ignored".into(), 2);
        x.insert("port1.rx_pkts".into(), 4);
        x
    });
    assert_eq!((p0(8, "cur_rtt"), p0(8, "min_rtt")), (0, 0));
    assert_eq!(r[9]["counter.atsss.acks_ignored"], 3);
    assert_eq!(r[10]["atsss.ue0.path1.cur_rtt"], t(500));
    assert_eq!(
        r[10]["atsss.ue0.path1.flags"],
        u64::from(PATH_HAS_RTT | PATH_SLOW_START),
        "an RTT now; CMon's window still in slow start (every path starts in it)"
    );
    assert_eq!(p0(12, "cur_rtt"), t(95), "across the wrap");
    assert_eq!(p0(13, "cur_rtt"), t(300));
    assert_eq!(&out(&s, 11).unwrap()[70..74], &5u32.to_be_bytes(), "sent_us wraps");
    assert_eq!(r[13]["counter.atsss.acks"], 6);
}

#[test]
fn malformed_tunnel_frames_are_counted_and_move_nothing() {
    let s = filled("atsss-malformed");
    let r = registers_after(&s);
    assert_eq!(r[17]["counter.atsss.malformed"], 14);
    assert_eq!(r[17]["counter.atsss.unknown_ue"], 2);
    assert_eq!(r[17]["counter.local"], 1);
    for f in ["seq_acked", "cur_rtt", "last_heard"] {
        assert_eq!(
            r[17][&format!("atsss.ue0.path0.{f}")],
            r[0][&format!("atsss.ue0.path0.{f}")]
        );
    }
    assert_eq!(r[18]["atsss.ue0.path0.seq_acked"], 1);
    assert_eq!(r[18]["counter.atsss.acks"], 1);
}

#[test]
fn rttmon_steps_once_per_target_and_holds_its_bounds() {
    let s = filled("atsss-rttmon");
    let w: Vec<u64> = registers_after(&s).iter().map(|r| r["atsss.ue0.weight"]).collect();
    assert_eq!(w, [32, 32, 32, 32, 32, 33, 33, 33, 32, 62, 62, 0, 0]);
    assert_eq!(target_rtt(scaled_ticks(2_000_000)), 26);
    assert_eq!(
        paths(&s),
        [
            Some(0),
            Some(1),
            None,
            Some(0),
            Some(0),
            Some(0),
            None,
            Some(0),
            Some(0),
            None,
            Some(1),
            None,
            Some(1)
        ]
    );
}

#[test]
fn dwrr_moves_its_weight_on_the_preferred_paths_acknowledgements() {
    let s = filled("atsss-dwrr");
    let w: Vec<u64> = registers_after(&s).iter().map(|r| r["atsss.ue0.weight"]).collect();
    assert_eq!(w, [100, 100, 100, 101, 88, 89, 89, 89, 255, 255, 2, 2, 0, 0]);
}

#[test]
fn cmon_fills_probes_cuts_grows_and_leaves_silent_paths() {
    let s = filled("atsss-cmon");
    let p: Vec<Option<u8>> = paths(&s);
    let sent: Vec<u8> = p.iter().flatten().copied().collect();
    assert_eq!(
        sent,
        [0, 0, 0, 0, 0, 0, 1, 1, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 0, 2, 0]
    );
    let r = registers_after(&s);
    let cwnd: Vec<u64> = r.iter().map(|r| r["atsss.ue0.path0.cwnd"]).collect();
    // Slow start (+1 at half the window in flight, none with nothing in flight), the cut, one
    // per window of counted acks after it, an ack under half the window not counted.
    assert_eq!((cwnd[9], cwnd[10], cwnd[11]), (4, 5, 5));
    assert_eq!((cwnd[13], cwnd[26], cwnd[27], cwnd[28]), (4, 4, 5, 5));
    let flags = |i: usize| r[i]["atsss.ue0.path0.flags"];
    assert_eq!(
        (flags(12), flags(13)),
        (u64::from(PATH_HAS_RTT | PATH_SLOW_START), u64::from(PATH_HAS_RTT))
    );
    // Probes into the dead path back off, and an acknowledgement resets them.
    let backoff: Vec<u64> = [32, 33, 37, 38, 40]
        .iter()
        .map(|&i| r[i]["atsss.ue0.probe_backoff"])
        .collect();
    assert_eq!(backoff, [0, 1, 1, 2, 0]);
    assert_eq!(r.last().unwrap()["atsss.ue0.path2.seq_sent"], 1);
}

#[test]
fn the_steering_modes_pick_as_3gpp_describes() {
    let s = filled("atsss-steering");
    assert_eq!(
        paths(&s).into_iter().flatten().collect::<Vec<_>>(),
        [0, 0, 0, 1, 0, 0, 0, 1, 2, 0, 1, 0, 1, 0, 0, 0, 1, 0]
    );
}
