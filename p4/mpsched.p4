/* SPDX-License-Identifier: Apache-2.0 */
/*
 * mpsched switch for BMv2's v1model: the multipath switch of crates/core/src/switch.rs and
 * the twin of bpf/mpsched.bpf.c, register for register.
 *
 *   ingress: frame checks (wire::parse_frame) -> feedback addressed to this node (DWRR
 *     counting) -> TTL -> confluence (CE counting; every 16th asks for feedback, sent as an
 *     ingress-to-egress clone) -> split (RS / WRR / DWRR) -> IPv4 LPM and ECMP; forwarding
 *     rewrites the MACs.
 *   egress: a feedback clone becomes the feedback packet; other packets meet the ECN marker,
 *     on BMv2's deq_qdepth as in Motohashi et al. (EcnMarker) or on a virtual queue as the
 *     eBPF program marks (VirtualQueueMarker).
 *   queues: a forwarded packet joins the port queue (standard_metadata.priority) of its DSCP
 *     class, clamped to the port's queues (include/queues.p4). A program built on this switch
 *     replaces that stage, and adds one every packet leaving a port passes in egress, by
 *     defining MPS_QUEUE_STAGE and MPS_DEQUEUE_STAGE before it includes this file
 *     (crates/programs/src/pmqecn/vqwrr.p4, virtual-queue WRR).
 *   the switch's own packets: a program's queue stage may ask for a rate feedback to the data
 *     packet's source (pmqecn.p4, p4qcn.p4): it clones the packet to MPS_RECIRC_SESSION with
 *     the fields of field list MPS_FL_RATE_FEEDBACK (include/rate_feedback.p4); egress turns
 *     the clone into the feedback and recirculates it; ingress then routes it as the switch's
 *     own packet (no receive count, no TTL, no confluence or split: the LPM and ECMP on its
 *     own 5-tuple) and hands it to MPS_OWN_STAGE, which picks its queue (by default the
 *     port's top one; p4qcn.p4's joins the FIFO, which may drop it).
 *
 * Where v1model forces a difference from the Rust and eBPF programs, p4/README.md says so.
 * The conformance vectors under tests/vectors/ hold all three equal.
 */
#include <core.p4>
#include <v1model.p4>

#include "include/layout.p4"
#include "include/headers.p4"
#include "include/arith.p4"
#include "include/split.p4"
#include "include/confluence.p4"
#include "include/route.p4"
#include "include/queues.p4"

/* The default queue stage of p4/mpsched.p4: a forwarded packet's DSCP class, clamped to its
 * port's queues. A program of its own (vqwrr.p4) replaces it by defining MPS_QUEUE_STAGE
 * (and MPS_DEQUEUE_STAGE) before any include; its stage may also refuse the packet
 * (forward = false). */
#ifndef MPS_QUEUE_STAGE
#define MPS_QUEUE_STAGE MpsDscpQueue
control MpsDscpQueue(inout headers_t h, inout metadata_t m, inout standard_metadata_t sm,
                     in bit<16> port, in bit<8> queues, inout bool forward) {
    apply {
        sm.priority = MPS_CLAMP_QUEUE(h.ipv4.tos[7:5], queues);
    }
}
#endif

/* The default stage of the switch's own packets (a recirculated rate feedback), once routed:
 * the top queue of its port, so that it never waits behind the congestion it reports. A
 * program counts them in its own (MPS_OWN_STAGE); forward is false when no route led back,
 * and the stage may refuse the packet as a queue stage may (forward = false). */
#ifndef MPS_OWN_STAGE
#define MPS_OWN_STAGE MpsOwnTop
control MpsOwnTop(inout headers_t h, inout metadata_t m, inout standard_metadata_t sm,
                  in bit<16> port, in bit<8> queues, inout bool forward) {
    apply {
        sm.priority = MPS_CLAMP_QUEUE(7, queues);
    }
}
#endif

/* The default dequeue stage (nothing): every packet leaving a port passes it in egress. */
#ifndef MPS_DEQUEUE_STAGE
#define MPS_DEQUEUE_STAGE MpsNoDequeue
control MpsNoDequeue(inout headers_t h, inout metadata_t m, inout standard_metadata_t sm) {
    apply { }
}
#endif

control MpsVerifyChecksum(inout headers_t h, inout metadata_t m) {
    apply { } /* wire::parse_frame does not check it either */
}

control MpsIngress(inout headers_t h, inout metadata_t m, inout standard_metadata_t sm) {
    register<bit<64>>(MPS_C_MAX) counters;
    register<bit<64>>(MPS_MAX_PORTS) port_rx_pkts;
    register<bit<64>>(MPS_MAX_PORTS) port_rx_bytes;
    register<bit<64>>(MPS_MAX_PORTS) port_tx_pkts;
    register<bit<64>>(MPS_MAX_PORTS) port_tx_bytes;
    /* Conformance tests: port + 1 sends every frame straight to that port's egress, from
     * queue test_egress_queue. */
    register<bit<16>>(1) test_egress_port;
    register<bit<8>>(1) test_egress_queue;
    /* Each port's queues (0 or 1: one), from the control plane. */
    register<bit<8>>(MPS_MAX_PORTS) port_queues;

    SplitStage() split_stage;
    ConfluenceStage() confluence_stage;
    RouteStage() route_stage;
    MPS_QUEUE_STAGE() queue_stage;
    MPS_OWN_STAGE() own_stage;

    bit<32> own_ip = 0;
    bit<16> feedback_port = 0;
    bit<32> hash_seed = 0;
    bit<16> out_port = 0;

    action set_node(bit<32> ip, bit<16> fb_port, bit<32> seed) {
        own_ip = ip;
        feedback_port = fb_port;
        hash_seed = seed;
    }

    /* The node's own address, feedback port and ECMP seed (a keyless table). */
    table node {
        actions = { set_node; }
        default_action = set_node(0, 50000, 0);
    }

    action set_macs(bit<48> own, bit<48> peer) {
        h.eth.src = own;
        h.eth.dst = peer;
    }

    /* The ports this node has, with their MACs: a port missing here cannot be sent to. */
    table port_macs {
        key = { out_port: exact; }
        actions = { set_macs; NoAction; }
        default_action = NoAction;
        size = MPS_MAX_PORTS;
    }

    action count(bit<32> which) {
        bit<64> c;
        counters.read(c, which);
        counters.write(which, c + 1);
    }

    action count_port(bit<16> port, bit<32> bytes, bool tx) {
        bit<64> pkts;
        bit<64> total;
        if (tx) {
            port_tx_pkts.read(pkts, (bit<32>)port);
            port_tx_bytes.read(total, (bit<32>)port);
            port_tx_pkts.write((bit<32>)port, pkts + 1);
            port_tx_bytes.write((bit<32>)port, total + (bit<64>)bytes);
        } else {
            port_rx_pkts.read(pkts, (bit<32>)port);
            port_rx_bytes.read(total, (bit<32>)port);
            port_rx_pkts.write((bit<32>)port, pkts + 1);
            port_rx_bytes.write((bit<32>)port, total + (bit<64>)bytes);
        }
    }

    action drop_counted(bit<32> which) {
        count(which);
        mark_to_drop(sm);
    }

    action to_stack(bit<32> which) {
        count(which);
        sm.egress_spec = MPS_STACK_PORT;
    }

    /* wire::parse_frame's IPv4 checks, on the frame's length as received. */
    action ipv4_malformed(in bit<32> len, out bool bad) {
        bit<32> ihl_bytes = (bit<32>)h.ipv4.ihl * 4;
        bit<32> total = (bit<32>)h.ipv4.total_len;
        bad = len < 34 || !h.ipv4.isValid() || h.ipv4.version != 4 || ihl_bytes < 20 ||
              len - 14 < ihl_bytes || total < ihl_bytes || total > len - 14;
    }

    /* A feedback packet: UDP, first fragment, to the feedback port, 8 payload bytes starting
     * with the magic, all inside the IPv4 total length. */
    action is_feedback(out bool yes) {
        bit<32> need = (bit<32>)h.ipv4.ihl * 4 + 16;
        yes = h.ipv4.protocol == 17 && h.ipv4.frag_offset == 0 &&
              (bit<32>)h.ipv4.total_len >= need && h.fb.isValid() &&
              h.l4.dst_port == feedback_port && h.fb.magic == MPS_FEEDBACK_MAGIC;
    }

    /* Source and destination port (sport << 16 | dport) of a first fragment of UDP with its 8
     * header bytes or TCP with 20, inside the total length; else 0. */
    action l4_ports(out bit<32> ports) {
        bit<32> need = 20;
        if (h.ipv4.protocol == 17) { need = 8; }
        ports = 0;
        if (h.l4.isValid() && (bit<32>)h.ipv4.total_len >= (bit<32>)h.ipv4.ihl * 4 + need) {
            ports = h.l4.src_port ++ h.l4.dst_port;
        }
    }

    /* TTL - 1, the checksum updated as RFC 1624 says (TTL is the high byte of its word). */
    action decrement_ttl() {
        bit<16> old = h.ipv4.ttl ++ h.ipv4.protocol;
        h.ipv4.ttl = h.ipv4.ttl - 1;
        h.ipv4.checksum = csum_replace(h.ipv4.checksum, old, h.ipv4.ttl ++ h.ipv4.protocol);
    }

    /* The classifier (mpsched_core::classify), for packets neither the switch's own nor network
     * control (CS7): the first rule the packet matches (the control
     * plane gives rule i priority i, and BMv2 takes the lowest among ternary matches) rewrites
     * its DSCP to the class selector of its queue, ECN kept; the checksum as RFC 1624 says (TOS
     * is the low byte of the header's first word). */
    action set_class(bit<6> dscp) {
        bit<16> old = h.ipv4.version ++ h.ipv4.ihl ++ h.ipv4.tos;
        h.ipv4.tos = dscp ++ h.ipv4.tos[1:0];
        h.ipv4.checksum = csum_replace(h.ipv4.checksum, old, h.ipv4.version ++ h.ipv4.ihl ++ h.ipv4.tos);
    }

    table classify {
        key = {
            h.ipv4.src: ternary;
            h.ipv4.dst: ternary;
            h.ipv4.tos: ternary; /* the DSCP bits, 0xfc, or none */
        }
        actions = { set_class; NoAction; }
        default_action = NoAction();
        size = MPS_MAX_CLASS_RULES;
    }

    /* Ask for the feedback packet: a clone to the return port's session, carrying its fields. */
    action send_feedback(in confluence_result_t c) {
        m.fb_src_ip = own_ip;
        m.fb_dst_ip = c.splitter_ip;
        m.fb_udp_port = feedback_port;
        m.fb_group = c.group;
        m.fb_path = c.path;
        count_port(c.port, MPS_FEEDBACK_FRAME_BYTES, true);
        clone_preserving_field_list(CloneType.I2E, (bit<32>)c.port + MPS_SESSION_BASE, 1);
    }

    apply {
        node.apply();
        m.node_ip = own_ip;
        bit<16> test_port;
        test_egress_port.read(test_port, 0);
        if (test_port != 0) {
            bit<8> test_queue;
            test_egress_queue.read(test_queue, 0);
            sm.egress_spec = (bit<9>)(test_port - 1);
            sm.priority = (bit<3>)test_queue;
            m.egress_test = 1;
            return;
        }
        bit<16> in_port = (bit<16>)sm.ingress_port;
        bit<32> len = sm.packet_length;
        /* A rate feedback a program asked for, back from egress: received on no port, and it
         * leaves cut to its frame (BMv2 recirculates a packet whole, what truncate() would
         * have cut of the data packet's payload included; egress cuts it on its way out). */
        bool own = sm.instance_type == BMV2_INSTANCE_RECIRC;
        if (own) {
            m.own_packet = 1;
            len = MPS_RATE_FEEDBACK_FRAME_BYTES;
        } else if (in_port < MPS_MAX_PORTS) {
            count_port(in_port, len, false);
        }
        if (len < 14 || !h.eth.isValid()) {
            drop_counted(MPS_C_MALFORMED); /* Runt */
            return;
        }
        if (h.eth.ether_type != 0x0800) {
            to_stack(MPS_C_NOT_IPV4); /* ARP, IPv6, a VLAN tag: the node's own stack */
            return;
        }
        bool bad;
        ipv4_malformed(len, bad);
        if (bad) {
            drop_counted(MPS_C_MALFORMED);
            return;
        }

        /* 1. Addressed to this node: a feedback packet is counted for its group; consumed.
         * 2. Otherwise TTL and the classifier, and 3. the confluence. The switch's own packet skips both. */
        bool fb = false;
        confluence_result_t conf = { false, 0, 0, 0, 0 };
        if (own) {
            /* routed alone, below, as the eBPF program routes its reflected feedback */
        } else if (h.ipv4.dst == own_ip) {
            is_feedback(fb);
            if (!fb) {
                to_stack(MPS_C_LOCAL);
                return;
            }
        } else {
            if (h.ipv4.ttl <= 1) {
                drop_counted(MPS_C_TTL_EXPIRED);
                return;
            }
            decrement_ttl();
            if (h.ipv4.src != own_ip && h.ipv4.tos[7:2] != MPS_NETWORK_CONTROL_DSCP) {
                classify.apply();
            }
            confluence_stage.apply(h, in_port, conf);
        }

        /* 4. Split (or count the feedback; not the switch's own packet), 5. LPM. */
        split_result_t split = { false, false, 0, 0 };
        if (!own) {
            split_stage.apply(h, fb, in_port, split);
        }
        if (fb) {
            drop_counted((bit<32>)split.counter);
            return;
        }
        bool forward = false;
        if (split.hit) {
            forward = !split.drop;
            out_port = split.port;
            if (split.drop) {
                count(MPS_C_AVOIDANCE);
            }
        } else {
            bit<32> ports;
            l4_ports(ports);
            route_stage.apply(h, hash_seed, ports, forward, out_port);
            if (!forward) {
                count(MPS_C_NO_ROUTE);
            }
        }
        if (forward && !port_macs.apply().hit) {
            count(MPS_C_REDIRECT_FAILED);
            forward = false;
        }
        /* 6. The port queue (a program's stage may refuse the packet; the switch's own packet
         * is the own stage's, routed or not, which may refuse it too). */
        bit<8> queues = 0;
        if (forward) {
            port_queues.read(queues, (bit<32>)out_port);
        }
        if (own) {
            own_stage.apply(h, m, sm, out_port, queues, forward);
        } else if (forward) {
            queue_stage.apply(h, m, sm, out_port, queues, forward);
        }
        if (forward) {
            sm.egress_spec = (bit<9>)out_port;
            count_port(out_port, len, true);
        } else {
            mark_to_drop(sm);
        }
        if (conf.feedback && conf.port < MPS_MAX_PORTS) {
            send_feedback(conf);
        }
    }
}

control MpsEgress(inout headers_t h, inout metadata_t m, inout standard_metadata_t sm) {
    /* Markers, per port: the paper's (threshold in packets of deq_qdepth, 0: off) and the
     * virtual queue (threshold_scaled 0: off; units as struct mps_marker). */
    register<bit<32>>(MPS_MAX_PORTS) marker_qdepth_threshold;
    register<bit<64>>(MPS_MAX_PORTS) marker_rate_bps;
    register<bit<64>>(MPS_MAX_PORTS) marker_max_elapsed_ns;
    register<bit<64>>(MPS_MAX_PORTS) marker_threshold_scaled;
    register<bit<64>>(MPS_MAX_PORTS) marker_limit_scaled;
    register<bit<64>>(MPS_MAX_PORTS) marker_backlog_scaled;
    register<bit<64>>(MPS_MAX_PORTS) marker_last_ns;
    register<bit<64>>(MPS_MAX_PORTS) marker_marked;
    register<bit<64>>(MPS_MAX_PORTS) marker_not_ect_over_threshold;
    register<bit<64>>(MPS_MAX_PORTS) marker_overflow;
    /* Conformance tests: a clock set from outside (test_clock_on 1). */
    register<bit<8>>(1) test_clock_on;
    register<bit<64>>(1) test_clock_ns;

    MPS_DEQUEUE_STAGE() dequeue_stage;

    action set_macs(bit<48> own, bit<48> peer) {
        h.eth.src = own;
        h.eth.dst = peer;
    }

    /* The feedback clone's MACs, by the port it leaves (the entries of port_macs). */
    table feedback_macs {
        key = { sm.egress_port: exact; }
        actions = { set_macs; NoAction; }
        default_action = NoAction;
        size = MPS_MAX_PORTS;
    }

    /* feedback.rs: IPv4 / UDP from this node to the splitting point, both UDP ports the
     * feedback port, payload magic | group | path | 0, zeros to 60 bytes. */
    action make_feedback() {
        h.eth.ether_type = 0x0800;
        h.ipv4.setValid();
        h.ipv4.version = 4;
        h.ipv4.ihl = 5;
        h.ipv4.tos = 0;
        h.ipv4.total_len = 36;
        h.ipv4.identification = 0;
        h.ipv4.flags = 0;
        h.ipv4.frag_offset = 0;
        h.ipv4.ttl = 64;
        h.ipv4.protocol = 17;
        h.ipv4.checksum = 0; /* MpsComputeChecksum */
        h.ipv4.src = m.fb_src_ip;
        h.ipv4.dst = m.fb_dst_ip;
        h.ipv4_opts.setInvalid();
        h.l4.setValid();
        h.l4.src_port = m.fb_udp_port;
        h.l4.dst_port = m.fb_udp_port;
        h.udp.setValid();
        h.udp.len = 16;
        h.udp.checksum = 0;
        h.fb.setValid();
        h.fb.magic = MPS_FEEDBACK_MAGIC;
        h.fb.group = m.fb_group;
        h.fb.path = m.fb_path;
        h.fb.reserved = 0;
        h.fb_pad.setValid();
        h.fb_pad.zeros = 0;
        truncate(MPS_FEEDBACK_FRAME_BYTES); /* the original's payload after the headers */
    }

    /* A program's rate feedback (rate_wire.rs), from the clone of the data packet that asked for
     * it: IPv4 from this node to rf_dst_ip, DSCP MPS_RATE_FEEDBACK_DSCP and CE, TTL 64, UDP from
     * MPS_RATE_FEEDBACK_PORT to rf_dst_port, the 16-byte "MPRF" payload. Its MACs are set when
     * it is routed, after recirculation; what follows the payload (the rest of the data
     * packet's) is cut when it leaves (m.own_packet): BMv2 recirculates a packet untruncated. */
    action make_rate_feedback() {
        h.eth.ether_type = 0x0800;
        h.ipv4.setValid();
        h.ipv4.version = 4;
        h.ipv4.ihl = 5;
        h.ipv4.tos = (bit<8>)MPS_RATE_FEEDBACK_DSCP << 2 | 3;
        h.ipv4.total_len = MPS_RATE_FEEDBACK_FRAME_BYTES - 14;
        h.ipv4.identification = 0;
        h.ipv4.flags = 0;
        h.ipv4.frag_offset = 0;
        h.ipv4.ttl = 64;
        h.ipv4.protocol = 17;
        h.ipv4.checksum = 0; /* MpsComputeChecksum */
        h.ipv4.src = m.node_ip;
        h.ipv4.dst = m.rf_dst_ip;
        h.ipv4_opts.setInvalid();
        h.l4.setValid();
        h.l4.src_port = MPS_RATE_FEEDBACK_PORT;
        h.l4.dst_port = m.rf_dst_port;
        h.udp.setValid();
        h.udp.len = 8 + MPS_SIZEOF_RATE_FEEDBACK;
        h.udp.checksum = 0;
        h.fb.setInvalid();
        h.fb_pad.setInvalid();
        h.rate_fb.setValid();
        h.rate_fb.magic = MPS_RATE_FEEDBACK_MAGIC;
        h.rate_fb.queue = m.rf_queue;
        h.rate_fb.reserved = 0;
        h.rate_fb.qlen_pkts = m.rf_qlen_pkts;
        h.rate_fb.measured_kbps = m.rf_measured_kbps;
        h.rate_fb.target_kbps = m.rf_target_kbps;
    }

    /* The virtual queue (VirtualQueueMarker::on_frame): drain by the time since the last
     * frame, add this one unless it overflows; over says the backlog it found was at or above
     * the threshold. */
    action virtual_queue(in bit<32> p, in bit<64> now, out bool over) {
        bit<64> rate;
        bit<64> max_elapsed;
        bit<64> threshold;
        bit<64> limit;
        bit<64> backlog;
        bit<64> last;
        bit<64> overflow;
        marker_rate_bps.read(rate, p);
        marker_max_elapsed_ns.read(max_elapsed, p);
        marker_threshold_scaled.read(threshold, p);
        marker_limit_scaled.read(limit, p);
        marker_backlog_scaled.read(backlog, p);
        marker_last_ns.read(last, p);
        bit<64> elapsed = 0;
        if (now > last) { elapsed = now - last; }
        bit<64> drain = 0xffffffffffffffff;
        if (elapsed < max_elapsed) { drain = elapsed * rate; }
        if (backlog > drain) { backlog = backlog - drain; } else { backlog = 0; }
        if (now > last) { marker_last_ns.write(p, now); }
        bit<64> add = (bit<64>)sm.packet_length * 8000000000;
        over = backlog >= threshold;
        if (backlog + add <= limit) {
            backlog = backlog + add;
        } else {
            marker_overflow.read(overflow, p);
            marker_overflow.write(p, overflow + 1);
        }
        marker_backlog_scaled.write(p, backlog);
    }

    /* Over the threshold: an ECT packet is marked CE, a Not-ECT one counted, CE left. */
    action mark(in bit<32> p) {
        bit<64> c;
        bit<2> ecn = (bit<2>)h.ipv4.tos;
        if (ecn == 1 || ecn == 2) {
            bit<16> old = h.ipv4.version ++ h.ipv4.ihl ++ h.ipv4.tos;
            h.ipv4.tos = h.ipv4.tos | 3;
            h.ipv4.checksum = csum_replace(h.ipv4.checksum, old,
                                           h.ipv4.version ++ h.ipv4.ihl ++ h.ipv4.tos);
            marker_marked.read(c, p);
            marker_marked.write(p, c + 1);
        } else if (ecn == 0) {
            marker_not_ect_over_threshold.read(c, p);
            marker_not_ect_over_threshold.write(p, c + 1);
        }
    }

    apply {
        /* A rate feedback's clone, at the port of none: built, and back to ingress to be routed. */
        if (sm.instance_type == BMV2_INSTANCE_CLONE_I2E && (bit<16>)sm.egress_port == MPS_RECIRC_PORT) {
            make_rate_feedback();
            recirculate_preserving_field_list(MPS_FL_RATE_FEEDBACK);
            return;
        }
        if (m.own_packet == 1) {
            truncate(MPS_RATE_FEEDBACK_FRAME_BYTES);
        }
        if (sm.instance_type != BMV2_INSTANCE_CLONE_I2E) {
            dequeue_stage.apply(h, m, sm);
        }
        if (sm.instance_type == BMV2_INSTANCE_CLONE_I2E) {
            if (feedback_macs.apply().hit) {
                make_feedback();
            } else {
                mark_to_drop(sm);
            }
            return;
        }
        bit<32> p = (bit<32>)sm.egress_port;
        if (p >= MPS_MAX_PORTS) {
            return;
        }
        bool over = false;
        bit<64> threshold;
        marker_threshold_scaled.read(threshold, p);
        if (threshold != 0) {
            bit<8> test;
            bit<64> now = (bit<64>)sm.egress_global_timestamp * 1000; /* BMv2: microseconds */
            test_clock_on.read(test, 0);
            if (test != 0) {
                test_clock_ns.read(now, 0);
            }
            virtual_queue(p, now, over);
        }
        bit<32> qdepth_threshold;
        marker_qdepth_threshold.read(qdepth_threshold, p);
        if (qdepth_threshold != 0 && (bit<32>)sm.deq_qdepth >= qdepth_threshold) {
            over = true;
        }
        if (over && h.ipv4.isValid()) {
            mark(p);
        }
    }
}

control MpsComputeChecksum(inout headers_t h, inout metadata_t m) {
    apply {
        /* Only the feedback packets are built whole; forwarding updates checksums in place. */
        update_checksum(h.fb_pad.isValid() || h.rate_fb.isValid(),
                        { h.ipv4.version, h.ipv4.ihl, h.ipv4.tos, h.ipv4.total_len,
                          h.ipv4.identification, h.ipv4.flags, h.ipv4.frag_offset,
                          h.ipv4.ttl, h.ipv4.protocol, h.ipv4.src, h.ipv4.dst },
                        h.ipv4.checksum, HashAlgorithm.csum16);
    }
}

V1Switch(MpsParser(), MpsVerifyChecksum(), MpsIngress(), MpsEgress(), MpsComputeChecksum(),
         MpsDeparser()) main;
