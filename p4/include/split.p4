/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The split stage: the splitting groups' table and registers, the schedulers RS, WRR and DWRR
 * (crates/core/src/sched), and DWRR's feedback counting (MultipathSwitch::on_feedback).
 * One control owns the registers both need; `feedback` picks which of the two runs.
 *
 * p4c scopes a `for` loop's variable to the enclosing block, so the loops of one action each
 * name theirs differently.
 */
#ifndef MPSCHED_SPLIT_P4
#define MPSCHED_SPLIT_P4

/* What the split stage decided for a packet. */
struct split_result_t {
    bool    hit;     /* the packet belongs to a splitting group */
    bool    drop;    /* DWRR's congestion avoidance dropped it */
    bit<16> port;    /* the chosen path's port */
    bit<8>  counter; /* feedback: the counter to bump (MPS_C_*) */
}

control SplitStage(in headers_t h, in bool feedback, in bit<16> in_port,
                   out split_result_t res) {
    /* Configuration, written once by the control plane. */
    register<bit<8>>(MPS_MAX_GROUPS) split_sched;
    register<bit<8>>(MPS_MAX_GROUPS) split_n_paths;
    register<bit<16>>(MPS_GROUP_PATHS) split_port;
    register<bit<8>>(MPS_GROUP_PATHS) split_rs_lo;
    register<bit<8>>(MPS_GROUP_PATHS) split_rs_hi;
    register<bit<16>>(MPS_MAX_GROUPS) split_groups;
    register<bit<16>>(MPS_MAX_GROUPS) split_min_weight;
    register<bit<16>>(MPS_MAX_GROUPS) split_max_step;
    register<bit<16>>(MPS_MAX_GROUPS) split_feedback_ports; /* bit p: trusted from port p */
    register<bit<32>>(MPS_MAX_GROUPS) split_avoidance_drop_pkts;
    /* State. */
    register<bit<16>>(MPS_GROUP_PATHS) split_weight;
    register<bit<16>>(MPS_GROUP_PATHS) split_remaining;
    register<bit<32>>(MPS_GROUP_PATHS) split_adjust;
    register<bit<64>>(MPS_GROUP_PATHS) split_path_pkts;
    register<bit<8>>(MPS_MAX_GROUPS) split_cursor; /* SINGLE: the path */
    register<bit<16>>(MPS_MAX_GROUPS) split_groups_left;
    register<bit<32>>(MPS_MAX_GROUPS) split_drop_left;
    register<bit<64>>(MPS_MAX_GROUPS) split_feedback_rx;
    register<bit<64>>(MPS_MAX_GROUPS) split_windows;
    register<bit<64>>(MPS_MAX_GROUPS) split_adjustments;
    register<bit<64>>(MPS_MAX_GROUPS) split_avoidance_events;
    register<bit<64>>(MPS_MAX_GROUPS) split_avoidance_drops;
    /* Conformance tests: fixed RS draws, replayed cyclically while rs_test_draws_n > 0. */
    register<bit<32>>(MPS_TEST_DRAWS) rs_test_draws;
    register<bit<32>>(1) rs_test_draws_n;
    register<bit<32>>(1) rs_test_draw_next;

    bit<32> slot = 0;
    bit<32> n = 0;

    action set_slot(bit<32> s) {
        slot = s;
    }

    /* The splitting group of a flow: (source, destination) -> slot. */
    table split {
        key = {
            h.ipv4.src: exact;
            h.ipv4.dst: exact;
        }
        actions = { set_slot; NoAction; }
        default_action = NoAction;
        size = MPS_MAX_GROUPS;
    }

    /* The slot of a feedback packet's group id. */
    table feedback_group {
        key = { h.fb.group: exact; }
        actions = { set_slot; NoAction; }
        default_action = NoAction;
        size = MPS_MAX_GROUPS;
    }

    /* rng::RandomSource::draw_inclusive: 1 + (raw * 100) >> 32. */
    action rs_draw(out bit<32> draw) {
        bit<32> raw;
        bit<32> count;
        rs_test_draws_n.read(count, 0);
        if (count != 0) {
            bit<32> next;
            rs_test_draw_next.read(next, 0);
            if (next >= count) { next = 0; }
            rs_test_draws.read(raw, next);
            rs_test_draw_next.write(0, next + 1);
        } else {
            random(raw, 0, 0xffffffff);
        }
        bit<64> wide = (bit<64>)raw * MPS_RS_DRAW_SPAN;
        draw = MPS_RS_DRAW_MIN + (bit<32>)(wide >> 32);
    }

    /* RandomSplit::lookup: the first path whose [lo, hi] holds the draw, else the last. */
    action rs_select(out bit<32> path) {
        bit<32> draw;
        rs_draw(draw);
        path = n - 1;
        bool found = false;
        for (bit<32> i = 0; i < MPS_MAX_PATHS; i = i + 1) {
            bit<8> lo;
            bit<8> hi;
            split_rs_lo.read(lo, slot * MPS_MAX_PATHS + i);
            split_rs_hi.read(hi, slot * MPS_MAX_PATHS + i);
            if (!found && i < n && draw >= (bit<32>)lo && draw <= (bit<32>)hi) {
                path = i;
                found = true;
            }
        }
    }

    /* Wrr::select: the path with the most remaining weight (ties to the lowest) takes the
     * packet; when every remaining weight is zero the period ends and they reload. */
    action wrr_select(out bit<32> best, out bool period_done) {
        bit<32> base = slot * MPS_MAX_PATHS;
        best = 0;
        bit<16> best_rem;
        split_remaining.read(best_rem, base);
        for (bit<32> i = 1; i < MPS_MAX_PATHS; i = i + 1) {
            bit<16> rem;
            split_remaining.read(rem, base + i);
            if (i < n && rem > best_rem) {
                best = i;
                best_rem = rem;
            }
        }
        if (best_rem != 0) {
            split_remaining.write(base + best, best_rem - 1);
        }
        bool left = false;
        for (bit<32> c = 0; c < MPS_MAX_PATHS; c = c + 1) {
            bit<16> rem;
            split_remaining.read(rem, base + c);
            if (c < n && rem != 0) { left = true; }
        }
        if (!left) {
            for (bit<32> r = 0; r < MPS_MAX_PATHS; r = r + 1) {
                bit<16> w;
                split_weight.read(w, base + r);
                split_remaining.write(base + r, w);
            }
        }
        period_done = !left;
    }

    /* Dwrr::move_weight: each congested path gives up min(adjust, max_step) units (max_step 0:
     * no cap), keeping min_weight; the freed units go one at a time, round robin from the
     * cursor, to the paths that sent no feedback. Closed form, as in the eBPF program: with U
     * takers in cyclic order from the cursor, taker j gets freed / U, plus one if
     * j < freed % U, and the cursor ends just after the taker of the last unit. */
    action dwrr_move_weight() {
        bit<32> base = slot * MPS_MAX_PATHS;
        bit<16> min_weight;
        bit<16> max_step;
        split_min_weight.read(min_weight, slot);
        split_max_step.read(max_step, slot);
        bit<32> cap = (bit<32>)max_step;
        if (cap == 0) { cap = 0xffffffff; }
        bit<32> freed = 0;
        bit<32> takers = 0;
        for (bit<32> i = 0; i < MPS_MAX_PATHS; i = i + 1) {
            bit<32> a;
            bit<16> w;
            split_adjust.read(a, base + i);
            split_weight.read(w, base + i);
            if (i < n) {
                bit<32> spare = 0;
                if (w > min_weight) { spare = (bit<32>)(w - min_weight); }
                bit<32> take = min32(min32(a, cap), spare);
                split_weight.write(base + i, w - (bit<16>)take);
                freed = freed + take;
                if (a == 0) { takers = takers + 1; }
            }
        }
        if (freed == 0 || takers == 0) {
            return;
        }
        bit<64> adjustments;
        split_adjustments.read(adjustments, slot);
        split_adjustments.write(slot, adjustments + 1);
        bit<32> q = div_small(freed, takers);
        bit<32> r = freed - q * takers;
        bit<32> last = mod_small(freed - 1, takers);
        bit<8> cursor;
        split_cursor.read(cursor, slot);
        bit<8> new_cursor = cursor;
        bit<32> j = 0;
        for (bit<32> t = 0; t < MPS_MAX_PATHS; t = t + 1) {
            bit<32> k = (bit<32>)cursor + t;
            if (k >= n) { k = k - n; }
            bit<32> a;
            bit<16> w;
            split_adjust.read(a, base + k);
            split_weight.read(w, base + k);
            if (t < n && a == 0) {
                bit<32> give = q;
                if (j < r) { give = give + 1; }
                split_weight.write(base + k, (bit<16>)min32((bit<32>)w + give, 0xffff));
                if (j == last) {
                    bit<32> next = k + 1;
                    if (next >= n) { next = next - n; }
                    new_cursor = (bit<8>)next;
                }
                j = j + 1;
            }
        }
        split_cursor.write(slot, new_cursor);
        for (bit<32> p = 0; p < MPS_MAX_PATHS; p = p + 1) {
            bit<16> w;
            split_weight.read(w, base + p);
            split_remaining.write(base + p, w);
        }
    }

    /* Dwrr::end_window: every path congested starts congestion avoidance; some move weight. */
    action dwrr_end_window() {
        bit<32> base = slot * MPS_MAX_PATHS;
        bit<64> windows;
        split_windows.read(windows, slot);
        split_windows.write(slot, windows + 1);
        bit<32> congested = 0;
        for (bit<32> i = 0; i < MPS_MAX_PATHS; i = i + 1) {
            bit<32> a;
            split_adjust.read(a, base + i);
            if (i < n && a != 0) { congested = congested + 1; }
        }
        if (congested == n) {
            bit<32> drops;
            bit<64> events;
            split_avoidance_drop_pkts.read(drops, slot);
            split_drop_left.write(slot, drops);
            split_avoidance_events.read(events, slot);
            split_avoidance_events.write(slot, events + 1);
        } else if (congested > 0) {
            dwrr_move_weight();
        }
        for (bit<32> c = 0; c < MPS_MAX_PATHS; c = c + 1) {
            split_adjust.write(base + c, 0);
        }
    }

    /* Dwrr::select: congestion avoidance drops first; each WRR period ends a group, every
     * `groups` periods end a window. Returns false to drop. */
    action dwrr_select(out bit<32> path, out bool ok) {
        bit<32> drop_left;
        split_drop_left.read(drop_left, slot);
        path = 0;
        ok = false;
        if (drop_left > 0) {
            bit<64> drops;
            split_drop_left.write(slot, drop_left - 1);
            split_avoidance_drops.read(drops, slot);
            split_avoidance_drops.write(slot, drops + 1);
            return;
        }
        ok = true;
        bool period_done;
        wrr_select(path, period_done);
        if (period_done) {
            bit<16> left;
            split_groups_left.read(left, slot);
            left = left - 1;
            if (left == 0) {
                split_groups.read(left, slot);
                dwrr_end_window();
            }
            split_groups_left.write(slot, left);
        }
    }

    /* Dwrr::on_feedback, behind the port check of MultipathSwitch::on_feedback. */
    action count_feedback() {
        bit<16> trusted;
        split_feedback_ports.read(trusted, slot);
        if (in_port >= MPS_MAX_PORTS || ((trusted >> (bit<8>)in_port) & 1) == 0) {
            res.counter = MPS_C_FEEDBACK_UNTRUSTED_PORT;
            return;
        }
        bit<8> sched;
        split_sched.read(sched, slot);
        bit<32> path = (bit<32>)h.fb.path;
        if (sched != MPS_SCHED_DWRR || path >= n) {
            res.counter = MPS_C_FEEDBACK_UNKNOWN_GROUP;
            return;
        }
        bit<32> a;
        bit<64> rx;
        split_adjust.read(a, slot * MPS_MAX_PATHS + path);
        if (a != 0xffffffff) { split_adjust.write(slot * MPS_MAX_PATHS + path, a + 1); }
        split_feedback_rx.read(rx, slot);
        split_feedback_rx.write(slot, rx + 1);
        res.counter = MPS_C_FEEDBACK_RX;
    }

    apply {
        res.hit = false;
        res.drop = false;
        res.port = 0;
        res.counter = 0;
        if (feedback) {
            if (!feedback_group.apply().hit) {
                res.counter = MPS_C_FEEDBACK_UNKNOWN_GROUP;
                return;
            }
            bit<8> np;
            split_n_paths.read(np, slot);
            n = (bit<32>)np;
            count_feedback();
            return;
        }
        if (!split.apply().hit) {
            return;
        }
        res.hit = true;
        bit<8> sched;
        bit<8> np;
        split_sched.read(sched, slot);
        split_n_paths.read(np, slot);
        n = (bit<32>)np;
        bit<32> path = 0;
        bool period_done;
        if (sched == MPS_SCHED_SINGLE) {
            bit<8> c;
            split_cursor.read(c, slot);
            path = (bit<32>)c;
        } else if (sched == MPS_SCHED_RS) {
            rs_select(path);
        } else if (sched == MPS_SCHED_WRR) {
            wrr_select(path, period_done);
        } else if (sched == MPS_SCHED_DWRR) {
            bool ok;
            dwrr_select(path, ok);
            res.drop = !ok;
        } else {
            res.drop = true;
        }
        if (res.drop) {
            return;
        }
        bit<64> pkts;
        split_path_pkts.read(pkts, slot * MPS_MAX_PATHS + path);
        split_path_pkts.write(slot * MPS_MAX_PATHS + path, pkts + 1);
        split_port.read(res.port, slot * MPS_MAX_PATHS + path);
    }
}

#endif
