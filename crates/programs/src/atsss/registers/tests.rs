use super::*;

/// The slides' timestamp code, transliterated: `ingress_global_timestamp` is a `bit<48>`,
/// `scaledTimestamp` the same width, `shortenedTimestamp = scaledTimestamp[31:0]`.
fn slides_timestamp(ingress_global_timestamp: u64) -> u32 {
    let mask48 = (1u64 << 48) - 1;
    let mut scaled = ingress_global_timestamp & mask48;
    scaled >>= 15;
    scaled = (scaled - (scaled >> 2)) & mask48; // 17
    scaled = (scaled - (scaled >> 2)) & mask48; // 19
    scaled = (scaled - (scaled >> 1)) & mask48; // 20
    (scaled & 0xffff_ffff) as u32
}

/// The slides' RTTMon code, transliterated with P4's widths (`bit<32>` RTTs and times,
/// `bit<6>` weight); the weight written back and whether the block ran.
fn slides_rttmon(min_rtt: u32, current_rtt: u32, weight: u8, last_scheduling: u32, shortened: u32) -> (u8, bool) {
    let mut target_rtt: u32 = (u64::from(min_rtt) * 1500 % (1 << 32)) as u32 >> 10;
    if target_rtt == min_rtt {
        target_rtt = target_rtt.wrapping_add(2);
    }
    if u64::from(shortened) > (u64::from(last_scheduling) + u64::from(target_rtt)) % (1 << 32) {
        let mut current_weight: u8 = weight & 0x3f;
        if current_rtt > target_rtt && current_weight > 0 {
            current_weight -= 1;
        }
        if current_rtt <= target_rtt && current_weight < 62 {
            current_weight += 1;
        }
        return (current_weight, true);
    }
    (weight & 0x3f, false)
}

fn ue_with(min_rtt: u32, cur_rtt: u32, has_rtt: bool, weight: u8, last: u32) -> UeReg {
    let mut ue = UeReg {
        weight,
        n_paths: 2,
        last_change: last,
        ..UeReg::default()
    };
    let p = &mut ue.paths[PREFERRED];
    p.min_rtt = min_rtt;
    p.cur_rtt = cur_rtt;
    p.flags = if has_rtt { PATH_HAS_RTT } else { 0 };
    ue
}

#[test]
fn the_timestamp_scaling_equals_the_slides_for_every_small_clock_and_samples_of_all() {
    for ts in 0..(1u64 << 22) {
        assert_eq!(scaled_ticks(ts), slides_timestamp(ts), "ts {ts}");
    }
    let mut x = 0x9e37_79b9_7f4a_7c15u64;
    for _ in 0..1_000_000 {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        let ts = x & ((1 << 48) - 1);
        assert_eq!(scaled_ticks(ts), slides_timestamp(ts), "ts {ts}");
    }
    // About 116.5 µs a tick.
    assert_eq!(scaled_ticks(1_000_000_000), 8583);
}

/// Every (minimum RTT, current RTT, weight) of the range, at the instant the interval ends
/// and one tick later: the weight written and whether the step ran equal the slides'.
#[test]
fn rttmon_equals_the_slides_for_every_input_of_a_small_range() {
    let last = 1_000;
    for min in 0..256u32 {
        let target = target_rtt(min);
        for cur in 0..512u32 {
            for weight in 0..64u8 {
                for now in [last + target, last + target + 1] {
                    let mut ue = ue_with(min, cur, true, weight, last);
                    let ran = rttmon_step(&mut ue, now);
                    let (want_w, want_ran) = slides_rttmon(min, cur, weight, last, now);
                    assert_eq!(
                        (ue.weight, ran),
                        (want_w, want_ran),
                        "min {min} cur {cur} w {weight} now {now}"
                    );
                    assert_eq!(ue.last_change, if ran { now } else { last });
                }
            }
        }
    }
}

/// Every (minimum RTT, last change, now >= last change) of the range: the interval gate.
#[test]
fn rttmon_interval_gate_equals_the_slides_for_every_small_time() {
    for min in 0..64u32 {
        for last in 0..128u32 {
            for now in last..last + 128 {
                let mut ue = ue_with(min, min, true, 30, last);
                let ran = rttmon_step(&mut ue, now);
                assert_eq!(
                    ran,
                    slides_rttmon(min, min, 30, last, now).1,
                    "min {min} last {last} now {now}"
                );
            }
        }
    }
}

#[test]
fn target_rtt_is_about_one_and_a_half_times_the_minimum() {
    assert_eq!(target_rtt(0), 2);
    assert_eq!(target_rtt(1), 3);
    assert_eq!(target_rtt(2), 4);
    assert_eq!(target_rtt(3), 4);
    assert_eq!(target_rtt(100), 146);
    assert_eq!(target_rtt(1024), 1500);
}

#[test]
fn rttmon_keeps_stepping_across_the_clock_wrap() {
    let mut ue = ue_with(10, 10, true, 30, u32::MAX - 5);
    assert!(
        rttmon_step(&mut ue, 20),
        "past the wrap, 26 ticks later, beyond a 14-tick target"
    );
    assert_eq!(ue.weight, 31);
}

fn cfg() -> Config {
    Config {
        outage_floor_ticks: 100,
        initial_cwnd: 10,
    }
}

#[test]
fn weighted_draws_split_as_the_weight_says_and_the_ends_are_all_or_nothing() {
    let (c, k) = (cfg(), Kind::Wrr);
    for weight in [0u8, 1, 64, 128, 200, 255] {
        let mut ue = new_ue(&c, k, 2, weight);
        let preferred = (0..65536u32)
            .filter(|d| select(&mut ue, &c, 0, d << 16) == PREFERRED)
            .count();
        let want = (u64::from(weight) * 65536).div_ceil(255) as usize;
        assert!(
            preferred.abs_diff(want) <= 1,
            "weight {weight}: {preferred} of 65536, want {want}"
        );
    }
    let mut one = new_ue(&c, k, 1, 0);
    assert_eq!(select(&mut one, &c, 0, 0), 0, "a UE with one path has only it");
}

#[test]
fn rttmon_weights_never_leave_a_path_without_packets() {
    let (c, k) = (cfg(), Kind::RttMon);
    for (weight, share) in [(0u8, 1), (31, 32), (62, 63)] {
        // No step runs (last_change = now): only the draw decides.
        let mut ue = new_ue(&c, k, 2, weight);
        let preferred = (0..64u32)
            .filter(|d| select(&mut ue, &c, 0, d << 26) == PREFERRED)
            .count();
        assert_eq!(preferred, share, "weight {weight}");
    }
}

fn ack(ue: &mut UeReg, c: &Config, path: usize, lost: u32, rtt: u32, now: u32) {
    let acked = ue.paths[path].seq_sent;
    on_ack(ue, c, path, &AckRegs { acked, lost, rtt }, now);
}

#[test]
fn dwrr_raises_the_weight_on_success_and_cuts_it_on_loss() {
    let (c, k) = (cfg(), Kind::Dwrr);
    let mut ue = new_ue(&c, k, 2, 100);
    on_send(&mut ue, PREFERRED, 1);
    ack(&mut ue, &c, PREFERRED, 0, 5, 2);
    assert_eq!(ue.weight, 101);
    on_send(&mut ue, PREFERRED, 3);
    ack(&mut ue, &c, PREFERRED, 2, 5, 4);
    assert_eq!(ue.weight, 101 - (101 >> 3) - 1);
    on_send(&mut ue, 1, 5);
    ack(&mut ue, &c, 1, 7, 5, 6);
    assert_eq!(ue.weight, 88, "the secondary path's acknowledgements leave it");
    let mut low = new_ue(&c, k, 2, 0);
    on_send(&mut low, PREFERRED, 1);
    ack(&mut low, &c, PREFERRED, 1, 5, 2);
    assert_eq!(low.weight, 0);
}

#[test]
fn acknowledgements_write_rtt_in_flight_and_ignore_stale_or_impossible_numbers() {
    let (c, k) = (cfg(), Kind::RttMon);
    let mut ue = new_ue(&c, k, 2, 31);
    for t in 0..5 {
        on_send(&mut ue, PREFERRED, t);
    }
    assert_eq!(in_flight(&ue.paths[0]), 5);
    assert_eq!(
        ue.paths[0].last_heard, 0,
        "silence counts from the first unanswered packet"
    );
    on_ack(
        &mut ue,
        &c,
        0,
        &AckRegs {
            acked: 3,
            lost: 0,
            rtt: 40,
        },
        50,
    );
    on_ack(
        &mut ue,
        &c,
        0,
        &AckRegs {
            acked: 2,
            lost: 0,
            rtt: 10,
        },
        51,
    );
    on_ack(
        &mut ue,
        &c,
        0,
        &AckRegs {
            acked: 9,
            lost: 0,
            rtt: 10,
        },
        52,
    );
    let p = &ue.paths[0];
    assert_eq!((p.seq_acked, p.cur_rtt, p.min_rtt, p.last_heard), (3, 40, 40, 50));
    on_ack(
        &mut ue,
        &c,
        0,
        &AckRegs {
            acked: 5,
            lost: 0,
            rtt: 30,
        },
        60,
    );
    assert_eq!((in_flight(&ue.paths[0]), ue.paths[0].min_rtt), (0, 30));
}

#[test]
fn cmon_leaves_a_silent_path_within_its_dead_time_probes_it_and_returns() {
    let (c, k) = (cfg(), Kind::CMon);
    let mut ue = new_ue(&c, k, 2, 0);
    let mut now = 0;
    // Both paths measured, the preferred one fast: everything goes to it.
    for path in [0, 1] {
        on_send(&mut ue, path, now);
        ack(&mut ue, &c, path, 0, 20, now + 20);
    }
    now = 40;
    assert_eq!(select(&mut ue, &c, now, 0), PREFERRED);
    // The preferred path goes silent with a packet in flight: CMon stays until the window is
    // full, then sends to the secondary path; the path is down after dead_after ticks.
    let dead = dead_after(&ue.paths[0], &c);
    assert_eq!(dead, 116, "4 x target 29 beats the floor of 100");
    let mut on_secondary_at = None;
    for t in now..now + 300 {
        let p = select(&mut ue, &c, t, 0);
        let seq = on_send(&mut ue, p, t);
        if p == 1 {
            on_secondary_at.get_or_insert(t);
            on_ack(
                &mut ue,
                &c,
                1,
                &AckRegs {
                    acked: seq,
                    lost: 0,
                    rtt: 20,
                },
                t,
            );
        }
    }
    let moved = on_secondary_at.expect("traffic moved");
    // Ten packets fill the window; the eleventh is the preferred path's probe (one per target
    // RTT, none sent yet); the twelfth goes to the secondary path.
    assert_eq!(moved, now + 11, "moved when the window of 10 filled");
    assert!(!path_up(&ue.paths[0], now + 300, &c));
    // Probed once per target (29 ticks) while up, then once per floor (100 ticks) while down.
    let probes = ue.paths[0].seq_sent - 1 - 10;
    assert_eq!(probes, 5, "at 50, 80, 110, 157 (down since 156), 258");
    // An acknowledgement brings it back, and the traffic with it.
    ack(&mut ue, &c, 0, 0, 20, now + 301);
    assert_eq!(select(&mut ue, &c, now + 302, 0), PREFERRED);
}

#[test]
fn cmon_cuts_the_window_once_per_target_and_grows_it_once_per_window_it_uses() {
    let (c, k) = (cfg(), Kind::CMon);
    let mut ue = new_ue(&c, k, 2, 0);
    let mut now = 10;
    // Acknowledgements that leave nothing in flight: a window not used does not grow.
    for _ in 0..30 {
        on_send(&mut ue, 0, now);
        ack(&mut ue, &c, 0, 0, 20, now);
        now += 1;
    }
    assert_eq!(ue.paths[0].cwnd, 10);
    // Keep six of the ten in flight: one more per acknowledgement in slow start...
    ue.paths[0].flags &= !PATH_SLOW_START;
    let mut slow = ue;
    slow.paths[0].flags |= PATH_SLOW_START;
    for _ in 0..6 {
        on_send(&mut slow, 0, now);
    }
    for _ in 0..5 {
        on_send(&mut slow, 0, now);
        let acked = slow.paths[0].seq_sent - 6;
        on_ack(
            &mut slow,
            &c,
            0,
            &AckRegs {
                acked,
                lost: 0,
                rtt: 20,
            },
            now,
        );
    }
    assert_eq!(
        slow.paths[0].cwnd, 13,
        "10 -> 13, then 6 in flight are less than half of 13"
    );
    // ... and after it, one more per ten.
    for _ in 0..6 {
        on_send(&mut ue, 0, now);
    }
    for _ in 0..21 {
        on_send(&mut ue, 0, now);
        let acked = ue.paths[0].seq_sent - 6;
        on_ack(
            &mut ue,
            &c,
            0,
            &AckRegs {
                acked,
                lost: 0,
                rtt: 20,
            },
            now,
        );
        now += 1;
    }
    assert_eq!(ue.paths[0].cwnd, 12, "21 acks at target grow 10 -> 11 -> 12");
    for t in 0..5 {
        on_send(&mut ue, 0, 100 + t);
        ack(&mut ue, &c, 0, 0, 50, 100 + t);
    }
    assert_eq!(ue.paths[0].cwnd, 9, "one cut of a quarter per 29-tick target");
    on_send(&mut slow, 0, now);
    ack(&mut slow, &c, 0, 0, 50, now);
    assert_eq!(slow.paths[0].flags & PATH_SLOW_START, 0, "a cut ends slow start");
}

#[test]
fn probes_into_a_dead_path_back_off_and_an_answer_resets_them() {
    let (c, k) = (cfg(), Kind::ActiveStandby);
    let mut ue = new_ue(&c, k, 2, 0);
    on_send(&mut ue, 0, 0);
    let probes: Vec<u32> = (1..5000u32)
        .filter(|&t| {
            let p = select(&mut ue, &c, t, 0);
            on_send(&mut ue, p, t);
            p == PREFERRED && t > 100
        })
        .collect();
    // Down after 100 ticks (the floor): a probe at once, then 200, 400, 800 and 1600 ticks
    // apart, and never further apart than 16 floors.
    assert_eq!(probes, [101, 302, 703, 1504, 3105, 4706]);
    assert_eq!(ue.probe_backoff, MAX_PROBE_BACKOFF);
    ack(&mut ue, &c, 0, 0, 20, 5000);
    assert_eq!(ue.probe_backoff, 0);
}

#[test]
fn steering_modes_pick_as_ts_23_501_describes() {
    // Active-Standby: the active path while up.
    let (c, k) = (cfg(), Kind::ActiveStandby);
    let mut ue = new_ue(&c, k, 2, 0);
    assert_eq!(select(&mut ue, &c, 0, 0), 0);
    on_send(&mut ue, 0, 0);
    assert_eq!(select(&mut ue, &c, 100, 0), 0, "silent for the floor: still up");
    assert_eq!(select(&mut ue, &c, 101, 0), 0, "silent past it: down, and due a probe");
    assert_eq!(select(&mut ue, &c, 102, 0), 1, "then the standby");
    assert_eq!(select(&mut ue, &c, 301, 0), 1);
    assert_eq!(
        select(&mut ue, &c, 302, 0),
        0,
        "the next probe two floors later (backed off)"
    );
    // Smallest Delay: unmeasured first, then the smaller RTT.
    let (c, k) = (cfg(), Kind::SmallestDelay);
    let mut ue = new_ue(&c, k, 3, 0);
    for (path, rtt) in [(0, 30), (1, 20)] {
        on_send(&mut ue, path, 0);
        ack(&mut ue, &c, path, 0, rtt, 1);
    }
    assert_eq!(select(&mut ue, &c, 2, 0), 2, "the unmeasured path is tried");
    on_send(&mut ue, 2, 2);
    ack(&mut ue, &c, 2, 0, 25, 3);
    assert_eq!(select(&mut ue, &c, 4, 0), 1);
    // Priority: the first path while neither congested nor down.
    let (c, k) = (cfg(), Kind::Priority);
    let mut ue = new_ue(&c, k, 2, 0);
    on_send(&mut ue, 0, 0);
    ack(&mut ue, &c, 0, 0, 20, 1);
    assert_eq!(select(&mut ue, &c, 2, 0), 0);
    on_send(&mut ue, 0, 2);
    ack(&mut ue, &c, 0, 0, 40, 3);
    assert_eq!(select(&mut ue, &c, 4, 0), 1, "RTT 40 above the target 29");
}

#[test]
fn register_rows_have_the_sizes_the_c_header_fixes() {
    assert_eq!(std::mem::size_of::<PathReg>(), 40);
    assert_eq!(std::mem::size_of::<UeReg>(), 176);
}
