/* SPDX-License-Identifier: Apache-2.0 */
/* Headers, metadata and the parser of the mpsched switch (wire.rs in crates/core). */
#ifndef MPSCHED_HEADERS_P4
#define MPSCHED_HEADERS_P4

header ethernet_h {
    bit<48> dst;
    bit<48> src;
    bit<16> ether_type;
}

header ipv4_h {
    bit<4>  version;
    bit<4>  ihl;
    bit<8>  tos; /* DSCP << 2 | ECN */
    bit<16> total_len;
    bit<16> identification;
    bit<3>  flags;
    bit<13> frag_offset;
    bit<8>  ttl;
    bit<8>  protocol;
    bit<16> checksum;
    bit<32> src;
    bit<32> dst;
}

header ipv4_options_h {
    varbit<320> options;
}

/* The first four bytes of TCP and UDP: what ECMP hashes. */
header l4_ports_h {
    bit<16> src_port;
    bit<16> dst_port;
}

/* The rest of a UDP header. */
header udp_rest_h {
    bit<16> len;
    bit<16> checksum;
}

/* The feedback payload (feedback.rs): magic | group | path | reserved. */
header feedback_h {
    bit<32> magic;
    bit<8>  group;
    bit<8>  path;
    bit<16> reserved;
}

/* Zeros after a feedback payload, to Ethernet's 60-byte minimum. */
header feedback_pad_h {
    bit<80> zeros;
}

/* A switch's rate feedback to a paced sender (crates/core/src/rate_wire.rs, "MPRF"), the UDP
 * payload a program's feedback carries (pmqecn.p4's, p4qcn.p4's): never parsed, only built in
 * egress (MpsEgress.make_rate_feedback). */
header rate_feedback_h {
    bit<32> magic;
    bit<8>  queue;         /* the class (virtual queue) */
    bit<8>  reserved;
    bit<16> qlen_pkts;     /* its packets waiting at the port */
    bit<32> measured_kbps; /* the class's measured arrival rate */
    bit<32> target_kbps;   /* the rate it should arrive at */
}

struct headers_t {
    ethernet_h      eth;
    ipv4_h          ipv4;
    ipv4_options_h  ipv4_opts;
    l4_ports_h      l4;
    udp_rest_h      udp;
    feedback_h      fb;
    feedback_pad_h  fb_pad;
    rate_feedback_h rate_fb;
}

/* What ingress hands a feedback clone (the field lists it preserves) and what it tells egress.
 * Field list 1: the multipath feedback (mpsched.p4's send_feedback). Field list
 * MPS_FL_RATE_FEEDBACK: a program's rate feedback, from the switch (node_ip) to rf_dst_ip and
 * UDP port rf_dst_port with the body's fields; the clone goes to MPS_RECIRC_PORT, where egress
 * builds the frame and recirculates it (p4/README.md). */
struct metadata_t {
    @field_list(1) bit<32> fb_src_ip;
    @field_list(1) bit<32> fb_dst_ip;
    @field_list(1) bit<16> fb_udp_port;
    @field_list(1) bit<8>  fb_group;
    @field_list(1) bit<8>  fb_path;
    bit<1>  egress_test; /* a vector runner's egress step: ingress did nothing */
    bit<1>  own_packet;  /* a program's rate feedback, recirculated: egress cuts it to its frame */
    /* The switch's own address, set first in ingress: egress stages tell its own packets by it. */
    @field_list(MPS_FL_RATE_FEEDBACK) bit<32> node_ip;
    @field_list(MPS_FL_RATE_FEEDBACK) bit<32> rf_dst_ip;
    @field_list(MPS_FL_RATE_FEEDBACK) bit<16> rf_dst_port;
    @field_list(MPS_FL_RATE_FEEDBACK) bit<8>  rf_queue;
    @field_list(MPS_FL_RATE_FEEDBACK) bit<16> rf_qlen_pkts;
    @field_list(MPS_FL_RATE_FEEDBACK) bit<32> rf_measured_kbps;
    @field_list(MPS_FL_RATE_FEEDBACK) bit<32> rf_target_kbps;
}

parser MpsParser(packet_in pk, out headers_t h, inout metadata_t m,
                 inout standard_metadata_t sm) {
    /* A short packet stops the parser with PacketTooShort and leaves the header that did not
     * fit invalid; BMv2 still runs ingress, which judges the frame by its length, as
     * wire::parse_frame and the eBPF program do. */
    state start {
        pk.extract(h.eth);
        transition select(h.eth.ether_type) {
            0x0800: parse_ipv4;
            default: accept;
        }
    }
    state parse_ipv4 {
        pk.extract(h.ipv4);
        transition select(h.ipv4.version, h.ipv4.ihl) {
            (4, 5): parse_l4;
            (4, 6 .. 15): parse_options;
            default: accept; /* ingress counts it malformed */
        }
    }
    state parse_options {
        pk.extract(h.ipv4_opts, ((bit<32>)h.ipv4.ihl - 5) * 32);
        transition parse_l4;
    }
    state parse_l4 {
        transition select(h.ipv4.frag_offset, h.ipv4.protocol) {
            (0, 6): parse_ports;
            (0, 17): parse_udp;
            default: accept; /* non-first fragments carry no ports */
        }
    }
    state parse_ports {
        pk.extract(h.l4);
        transition accept;
    }
    state parse_udp {
        pk.extract(h.l4);
        pk.extract(h.udp);
        pk.extract(h.fb);
        transition accept;
    }
}

control MpsDeparser(packet_out pk, in headers_t h) {
    apply {
        pk.emit(h.eth);
        pk.emit(h.ipv4);
        pk.emit(h.ipv4_opts);
        pk.emit(h.l4);
        pk.emit(h.udp);
        pk.emit(h.fb);
        pk.emit(h.fb_pad);
        pk.emit(h.rate_fb);
    }
}

#endif
