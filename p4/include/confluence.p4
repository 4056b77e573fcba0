/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The confluence stage (crates/core/src/feedback.rs, Confluence): count CE-marked arrivals of a
 * split flow per path, known by its ingress port; after every `every`-th on a path, ask for one
 * feedback packet naming that path, sent back over the other path with the fewest pending
 * marks (ties to the lowest index).
 */
#ifndef MPSCHED_CONFLUENCE_P4
#define MPSCHED_CONFLUENCE_P4

struct confluence_result_t {
    bool    feedback;    /* send a feedback packet */
    bit<16> port;        /* out of this port */
    bit<8>  path;        /* naming this (congested) path */
    bit<8>  group;       /* of this splitting group */
    bit<32> splitter_ip; /* to the splitting point */
}

control ConfluenceStage(in headers_t h, in bit<16> in_port, out confluence_result_t res) {
    /* Configuration. */
    register<bit<8>>(MPS_MAX_GROUPS) conf_n_paths;
    register<bit<8>>(MPS_MAX_GROUPS) conf_group;
    register<bit<32>>(MPS_MAX_GROUPS) conf_every;
    register<bit<32>>(MPS_MAX_GROUPS) conf_splitter_ip;
    register<bit<16>>(MPS_GROUP_PATHS) conf_return_port;
    /* State. */
    register<bit<32>>(MPS_GROUP_PATHS) conf_ce_pending;
    register<bit<64>>(MPS_MAX_GROUPS) conf_ce_arrivals;
    register<bit<64>>(MPS_MAX_GROUPS) conf_feedback_sent;

    bit<32> slot = 0;
    bit<32> path = 0;

    action set_slot(bit<32> s) {
        slot = s;
    }

    action set_path(bit<32> p) {
        path = p;
    }

    /* A split flow's confluence entry: (source, destination) -> slot. */
    table confluence {
        key = {
            h.ipv4.src: exact;
            h.ipv4.dst: exact;
        }
        actions = { set_slot; NoAction; }
        default_action = NoAction;
        size = MPS_MAX_GROUPS;
    }

    /* Confluence::path_of: the path whose last hop arrives on the ingress port. */
    table confluence_path {
        key = {
            slot: exact;
            in_port: exact;
        }
        actions = { set_path; NoAction; }
        default_action = NoAction;
        size = MPS_GROUP_PATHS;
    }

    /* Confluence::return_path: the other path with the fewest pending CE marks. */
    action return_path(in bit<32> n, out bool found, out bit<32> best) {
        bit<32> best_pending = 0;
        found = false;
        best = 0;
        for (bit<32> i = 0; i < MPS_MAX_PATHS; i = i + 1) {
            bit<32> pending;
            conf_ce_pending.read(pending, slot * MPS_MAX_PATHS + i);
            if (i < n && i != path && (!found || pending < best_pending)) {
                best = i;
                best_pending = pending;
                found = true;
            }
        }
    }

    apply {
        res.feedback = false;
        res.port = 0;
        res.path = 0;
        res.group = 0;
        res.splitter_ip = 0;
        if ((h.ipv4.tos & 3) != 3 || in_port >= MPS_MAX_PORTS) {
            return;
        }
        if (!confluence.apply().hit || !confluence_path.apply().hit) {
            return;
        }
        bit<64> arrivals;
        bit<32> pending;
        bit<32> every;
        bit<32> at = slot * MPS_MAX_PATHS + path;
        conf_ce_arrivals.read(arrivals, slot);
        conf_ce_arrivals.write(slot, arrivals + 1);
        conf_ce_pending.read(pending, at);
        conf_every.read(every, slot);
        pending = pending + 1;
        if (pending < every) {
            conf_ce_pending.write(at, pending);
            return;
        }
        conf_ce_pending.write(at, 0);
        bit<8> np;
        conf_n_paths.read(np, slot);
        bool found;
        bit<32> via;
        return_path((bit<32>)np, found, via);
        if (!found) {
            return;
        }
        bit<64> sent;
        conf_feedback_sent.read(sent, slot);
        conf_feedback_sent.write(slot, sent + 1);
        res.feedback = true;
        conf_return_port.read(res.port, slot * MPS_MAX_PATHS + via);
        res.path = (bit<8>)path;
        conf_group.read(res.group, slot);
        conf_splitter_ip.read(res.splitter_ip, slot);
    }
}

#endif
