//! The sender and receiver against each other over a scripted network.

use super::*;
use crate::cc::CcKind;
use crate::NS_PER_MS;

fn cfg(cc: CcKind) -> TcpConfig {
    TcpConfig {
        cc,
        mss_bytes: 1000,
        ..TcpConfig::default()
    }
}

/// Drain what the sender may send now.
fn burst(s: &mut TcpSender, now: u64) -> Vec<Segment> {
    std::iter::from_fn(|| s.poll_transmit(now)).collect()
}

/// A NewReno sender with 10 MB to send and a receiver that acknowledges every segment.
fn bulk_reno_pair() -> (TcpSender, TcpReceiver) {
    let mut s = TcpSender::new(cfg(CcKind::Reno));
    s.write(10_000_000);
    let r = TcpReceiver::new(&TcpConfig {
        delayed_ack_ns: 0,
        ..cfg(CcKind::Reno)
    });
    (s, r)
}

#[test]
fn the_initial_window_is_ten_segments_and_delayed_acks_ack_every_second() {
    let mut s = TcpSender::new(cfg(CcKind::Reno));
    s.write(1_000_000);
    let segs = burst(&mut s, 0);
    assert_eq!(segs.len(), 10);
    let mut r = TcpReceiver::new(&cfg(CcKind::Reno));
    let acks: Vec<Segment> = segs
        .iter()
        .filter_map(|g| r.on_segment(NS_PER_MS, g, false).ack)
        .collect();
    assert_eq!(acks.len(), 5);
    for a in &acks {
        s.on_ack(10 * NS_PER_MS, a);
        // Ack-clocked: each ACK releases new segments, so the window stays the limit.
        burst(&mut s, 10 * NS_PER_MS);
    }
    assert_eq!(
        s.cwnd_bytes(),
        20_000,
        "slow start: one segment per segment acknowledged"
    );
    assert_eq!(s.rtt().srtt_ns(), Some(10 * NS_PER_MS));
}

#[test]
fn a_lone_segment_is_acknowledged_by_the_delayed_ack_timer() {
    let c = cfg(CcKind::Reno);
    let mut r = TcpReceiver::new(&c);
    let seg = Segment {
        seq: 0,
        len: 100,
        ..Segment::default()
    };
    assert_eq!(r.on_segment(0, &seg, false).ack, None);
    assert_eq!(r.next_timer(), Some(40 * NS_PER_MS));
    assert_eq!(r.on_timer(39 * NS_PER_MS), None);
    assert_eq!(r.on_timer(40 * NS_PER_MS).map(|a| a.ack), Some(100));
}

#[test]
fn one_loss_is_repaired_by_fast_retransmit_and_halves_the_window() {
    let (mut s, mut r) = bulk_reno_pair();
    let segs = burst(&mut s, 0);
    // Segment 2 is lost; the others produce dupacks.
    let mut now = 10 * NS_PER_MS;
    for (i, g) in segs.iter().enumerate() {
        if i == 2 {
            continue;
        }
        if let Some(a) = r.on_segment(now, g, false).ack {
            s.on_ack(now, &a);
        }
    }
    assert!(s.in_recovery());
    assert_eq!(s.stats().fast_retransmits, 1);
    assert_eq!(
        s.ssthresh_bytes(),
        6_000,
        "cwnd was 12 segments when the third dupack arrived"
    );
    let rtx = s.poll_transmit(now).unwrap();
    assert!(rtx.retransmission);
    assert_eq!(rtx.seq, 2000);
    now += NS_PER_MS;
    let a = r.on_segment(now, &rtx, false).ack.unwrap();
    assert_eq!(a.ack, 10_000, "the hole is filled up to everything sent");
    let srtt = s.rtt().srtt_ns();
    s.on_ack(now, &a);
    assert_eq!(
        s.rtt().srtt_ns(),
        srtt,
        "Karn: no sample from an ACK covering a retransmission"
    );
    assert!(!s.in_recovery());
    assert!(s.cwnd_bytes() <= 6_000);
    assert_eq!(r.rcv_nxt(), s.acked_bytes());
}

#[test]
fn siblings_count_a_subflow_in_fast_recovery_at_its_threshold_not_its_inflated_window() {
    let (mut s, mut r) = bulk_reno_pair();
    let now = 10 * NS_PER_MS;
    // Segment 0 lost: the other nine give dupacks, the last six inflate the window.
    for g in burst(&mut s, 0).iter().skip(1) {
        if let Some(a) = r.on_segment(now, g, false).ack {
            s.on_ack(now, &a);
        }
    }
    assert!(s.in_recovery());
    assert!(s.cwnd_bytes() > s.ssthresh_bytes(), "inflated: {}", s.cwnd_bytes());
    assert_eq!(s.coupling_window_bytes(), s.ssthresh_bytes());
    let rtx = s.poll_transmit(now).unwrap();
    let a = r.on_segment(now + NS_PER_MS, &rtx, false).ack.unwrap();
    s.on_ack(now + NS_PER_MS, &a);
    assert!(!s.in_recovery());
    assert_eq!(s.coupling_window_bytes(), s.cwnd_bytes());
}

#[test]
fn rto_goes_back_to_the_first_unacknowledged_byte_with_one_segment() {
    let mut s = TcpSender::new(cfg(CcKind::Cubic));
    s.write(100_000);
    let segs = burst(&mut s, 0);
    assert_eq!(segs.len(), 10);
    let d = s.next_timer().unwrap();
    assert_eq!(d, 1_000 * NS_PER_MS, "initial RTO of 1 s");
    s.on_timer(d);
    assert_eq!(s.stats().rtos, 1);
    assert_eq!(s.cwnd_bytes(), 1000);
    let again = burst(&mut s, d);
    assert_eq!(again.len(), 1);
    assert!(again[0].retransmission && again[0].seq == 0);
    assert_eq!(s.next_timer(), Some(d + 2_000 * NS_PER_MS), "backed off");
}

#[test]
fn nagle_holds_a_short_segment_only_while_an_earlier_short_one_is_unacknowledged() {
    for nodelay in [false, true] {
        let mut s = TcpSender::new(TcpConfig {
            nodelay,
            ..cfg(CcKind::Reno)
        });
        s.write(1500);
        assert_eq!(s.poll_transmit(0).map(|g| g.len), Some(1000));
        assert_eq!(
            s.poll_transmit(0).map(|g| g.len),
            Some(500),
            "behind full segments the short tail goes at once (Minshall, as Linux)"
        );
        s.write(300);
        assert_eq!(
            s.poll_transmit(0).map(|g| g.len),
            if nodelay { Some(300) } else { None },
            "a second short segment waits for the first's ACK"
        );
        let ack = Segment {
            ack: 1500,
            window_bytes: 1 << 20,
            ..Segment::default()
        };
        s.on_ack(NS_PER_MS, &ack);
        if !nodelay {
            assert_eq!(s.poll_transmit(NS_PER_MS).map(|g| g.len), Some(300));
        }
    }
}

/// A transfer whose short tail was lost with the rest must resend it after the RTO: the tail
/// is no longer out once the sender went back (Linux's `!after(snd_sml, snd_nxt)`); without
/// that, the sender waited for the ACK of the very segment it held, forever.
#[test]
fn after_an_rto_the_short_tail_is_resent() {
    let mut s = TcpSender::new(cfg(CcKind::Reno));
    s.write(1500);
    assert_eq!(
        burst(&mut s, 0).iter().map(|g| g.len).collect::<Vec<_>>(),
        vec![1000, 500]
    );
    let d = s.next_timer().unwrap();
    s.on_timer(d);
    let first = burst(&mut s, d);
    assert_eq!(
        (first.len(), first[0].seq, first[0].len),
        (1, 0, 1000),
        "one segment after an RTO"
    );
    let ack = Segment {
        ack: 1000,
        window_bytes: 1 << 20,
        ..Segment::default()
    };
    s.on_ack(d + NS_PER_MS, &ack);
    let tail = burst(&mut s, d + NS_PER_MS);
    assert_eq!(
        tail.iter().map(|g| (g.seq, g.len)).collect::<Vec<_>>(),
        vec![(1000, 500)]
    );
}

/// A finished transfer gives back the records a large window grew: at data-centre scale they
/// were most of the memory (k = 8 fat tree, web-search: 707 MB peak before, 394 MB after). A
/// sender that only idles keeps them (a tunnel's subflow would reallocate at every burst).
#[test]
fn a_closed_sender_with_nothing_outstanding_keeps_little_room() {
    let c = TcpConfig {
        delayed_ack_ns: 0,
        ..cfg(CcKind::Reno)
    };
    for closed in [false, true] {
        let (mut s, mut r) = (TcpSender::new(c.clone()), TcpReceiver::new(&c));
        s.write(2_000_000);
        if closed {
            s.close();
        }
        let mut t = 0;
        while s.unacked_bytes() > 0 {
            t += NS_PER_MS;
            let acks: Vec<Segment> = burst(&mut s, t)
                .iter()
                .filter_map(|g| r.on_segment(t, g, false).ack)
                .collect();
            acks.iter().for_each(|a| s.on_ack(t, a));
            assert!(t < 10_000 * NS_PER_MS, "the transfer ends");
        }
        assert_eq!(
            s.sent_capacity() <= 64,
            closed,
            "{} records of room kept",
            s.sent_capacity()
        );
    }
}

#[test]
fn the_receive_window_limits_the_sender() {
    let mut s = TcpSender::new(cfg(CcKind::Reno));
    s.write(1_000_000);
    let segs = burst(&mut s, 0);
    let ack = Segment {
        ack: segs[0].end(),
        window_bytes: 3000,
        ..Segment::default()
    };
    s.on_ack(NS_PER_MS, &ack);
    assert!(burst(&mut s, NS_PER_MS).is_empty(), "9000 in flight > 3000 window");
}

#[test]
fn ecn_echo_reduces_once_per_round_trip_and_cwr_clears_it() {
    let c = TcpConfig {
        ecn: true,
        delayed_ack_ns: 0,
        ..cfg(CcKind::Reno)
    };
    let mut s = TcpSender::new(c.clone());
    let mut r = TcpReceiver::new(&c);
    s.write(10_000_000);
    let segs = burst(&mut s, 0);
    assert!(segs.iter().all(|g| g.ect));
    let mut now = 10 * NS_PER_MS;
    for g in &segs {
        // Every segment of the first window is marked.
        let a = r.on_segment(now, g, true).ack.unwrap();
        assert!(a.ece);
        s.on_ack(now, &a);
    }
    assert_eq!(s.stats().ecn_reductions, 1, "one reduction for the window");
    let next = burst(&mut s, now);
    assert!(next[0].cwr, "CWR on the next new data");
    assert!(!next[1].cwr);
    now += NS_PER_MS;
    let a = r.on_segment(now, &next[0], false).ack.unwrap();
    assert!(!a.ece, "CWR stops the echo");
}

#[test]
fn dctcp_echoes_each_segments_ce_state() {
    let c = TcpConfig {
        ecn: true,
        ..cfg(CcKind::Dctcp)
    };
    let mut r = TcpReceiver::new(&c);
    let seg = |i: u64| Segment {
        seq: i * 1000,
        len: 1000,
        ..Segment::default()
    };
    let o = r.on_segment(0, &seg(0), false);
    assert_eq!((o.ack, o.prior_ack), (None, None), "the first segment's ACK is delayed");
    let o = r.on_segment(0, &seg(1), true);
    // RFC 8257 3.2: the delayed ACK goes first, for segment 0 and with its (unmarked) state.
    let p = o.prior_ack.expect("the pending delayed ACK is sent first");
    assert_eq!((p.ack, p.ece), (1000, false));
    let a = o.ack.expect("state change: immediate ACK");
    assert_eq!((a.ack, a.ece), (2000, true));
    let o = r.on_segment(0, &seg(2), false);
    assert_eq!(o.prior_ack, None, "nothing was pending");
    assert!(!o.ack.expect("state change back").ece);
}

#[test]
fn out_of_order_segments_are_reassembled() {
    let c = cfg(CcKind::Reno);
    let mut r = TcpReceiver::new(&c);
    let seg = |s: u64, l: u32| Segment {
        seq: s,
        len: l,
        ..Segment::default()
    };
    assert_eq!(r.on_segment(0, &seg(3000, 1000), false).ack.unwrap().ack, 0);
    assert_eq!(r.on_segment(0, &seg(1000, 1000), false).ack.unwrap().ack, 0);
    assert_eq!(r.out_of_order_bytes(), 2000);
    let o = r.on_segment(0, &seg(2000, 1000), false);
    assert_eq!(
        o.ack.unwrap().window_bytes,
        c.receive_window_bytes - 3000,
        "[1000, 4000) is held"
    );
    let o = r.on_segment(0, &seg(0, 1000), false);
    assert_eq!(o.delivered_bytes, 4000);
    assert_eq!(o.ack.unwrap().ack, 4000);
    assert_eq!(r.out_of_order_bytes(), 0);
}

mod prop {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        /// Whatever the network drops, reorders or duplicates, the receiver delivers each byte
        /// once and in order, and the sender never believes more was received than was.
        #[test]
        fn any_loss_pattern_delivers_every_byte_once(
            drops in proptest::collection::vec(any::<bool>(), 200),
            cc in prop_oneof![Just(CcKind::Reno), Just(CcKind::Cubic), Just(CcKind::Dctcp)],
        ) {
            let c = cfg(cc);
            let mut s = TcpSender::new(c.clone());
            let mut r = TcpReceiver::new(&c);
            let total = 150_000u64;
            s.write(total);
            let mut now = 0u64;
            let mut delivered = 0u64;
            let mut k = 0usize;
            for _round in 0..2000 {
                let segs = burst(&mut s, now);
                now += 5 * NS_PER_MS;
                let mut acks = Vec::new();
                for g in segs.iter().rev() {
                    let lost = drops[k % drops.len()];
                    k += 1;
                    if lost { continue; }
                    let o = r.on_segment(now, g, false);
                    delivered += o.delivered_bytes;
                    acks.extend(o.ack);
                }
                if let Some(a) = r.on_timer(now + c.delayed_ack_ns) { acks.push(a); }
                now += 5 * NS_PER_MS;
                for a in &acks {
                    s.on_ack(now, a);
                    prop_assert!(s.acked_bytes() <= r.rcv_nxt());
                }
                if let Some(t) = s.next_timer() { if t <= now + 5 * NS_PER_MS || acks.is_empty() { now = now.max(t); s.on_timer(now); } }
                if s.acked_bytes() == total { break; }
            }
            prop_assert_eq!(delivered, r.rcv_nxt());
            prop_assert!(delivered <= total);
            prop_assert_eq!(s.acked_bytes(), total, "the transfer completes");
        }
    }
}

/// RFC 3465's L (`abc_limit_segments`): an ACK that acknowledges ten segments at once grows a
/// slow-starting window by ten segments without a limit (Linux), by one with L = 1 (htsim).
#[test]
fn an_abc_limit_caps_what_one_ack_grows_the_window_by() {
    let grown_by = |limit: Option<u32>| {
        let c = TcpConfig {
            abc_limit_segments: limit,
            ..cfg(CcKind::Reno)
        };
        let mut s = TcpSender::new(c);
        s.write(1_000_000);
        let segs = burst(&mut s, 0);
        assert_eq!(segs.len(), 10);
        let before = s.cwnd_bytes();
        let last = segs.last().unwrap();
        let ack = Segment {
            ack: last.seq + u64::from(last.len),
            window_bytes: 1 << 20,
            ..Segment::default()
        };
        s.on_ack(NS_PER_MS, &ack);
        s.cwnd_bytes() - before
    };
    assert_eq!(grown_by(None), 10_000);
    assert_eq!(grown_by(Some(1)), 1_000);
    assert_eq!(grown_by(Some(2)), 2_000);
}

/// A segment never carries bytes of two records (an MPTCP subflow's mappings), new or
/// retransmitted; records merge nothing, and the boundary goes once it is acknowledged.
#[test]
fn segments_end_at_record_boundaries_sent_and_retransmitted() {
    let cfg = TcpConfig {
        nodelay: true,
        ..TcpConfig::default()
    };
    let mss = u64::from(cfg.mss_bytes);
    let mut s = TcpSender::new(cfg);
    s.write_record(500);
    s.write_record(mss);
    let a = s.poll_transmit(0).unwrap();
    let b = s.poll_transmit(0).unwrap();
    assert_eq!((a.seq, u64::from(a.len)), (0, 500));
    assert_eq!((b.seq, u64::from(b.len)), (500, mss));
    // The RTO goes back to 0: the retransmission stops at the first record's end too.
    let at = s.next_timer().unwrap();
    s.on_timer(at);
    let r = s.poll_transmit(at).unwrap();
    assert_eq!((r.seq, u64::from(r.len)), (0, 500));
}
