/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A program's request for a rate feedback to a data packet's source (crates/core/src/
 * rate_wire.rs, the "MPRF" datagram), the part PMQECN's congestion point (pmqecn.p4) and
 * P4QCN's (p4qcn.p4) share. p4/mpsched.p4 does the rest (p4/README.md): egress rebuilds the
 * clone into the 58-byte frame and recirculates it, ingress routes it as the switch's own
 * packet and hands it to the program's MPS_OWN_STAGE.
 *
 *   RateFeedbackAsk, in a queue stage: fills the fields of field list MPS_FL_RATE_FEEDBACK
 *     (the source's address and UDP/TCP port as the Rust parser gives it: 0 for a non-first
 *     fragment, a truncated header or another protocol; the class, the queue length capped at
 *     65535, the two rates) and clones the packet ingress-to-egress to MPS_RECIRC_SESSION.
 *
 * BMv2 makes one clone per ingress pass, the last one asked for: a packet that a confluence
 * point (mpsched.p4's feedback, asked after the queue stage) also clones sends only that one.
 */
#ifndef MPSCHED_RATE_FEEDBACK_P4
#define MPSCHED_RATE_FEEDBACK_P4

control RateFeedbackAsk(in headers_t h, inout metadata_t m, in bit<8> queue, in bit<32> qlen_pkts,
                        in bit<32> measured_kbps, in bit<32> target_kbps) {
    apply {
        m.rf_dst_ip = h.ipv4.src;
        /* The source port of a first fragment of UDP with its 8 header bytes, or of TCP with
         * 20, inside the total length (wire::parse_frame); else 0. */
        bit<32> need = 20;
        if (h.ipv4.protocol == 17) { need = 8; }
        m.rf_dst_port = 0;
        if (h.l4.isValid() && (bit<32>)h.ipv4.total_len >= (bit<32>)h.ipv4.ihl * 4 + need) {
            m.rf_dst_port = h.l4.src_port;
        }
        m.rf_queue = queue;
        m.rf_qlen_pkts = 0xffff;
        if (qlen_pkts < 0xffff) { m.rf_qlen_pkts = (bit<16>)qlen_pkts; }
        m.rf_measured_kbps = measured_kbps;
        m.rf_target_kbps = target_kbps;
        clone_preserving_field_list(CloneType.I2E, MPS_RECIRC_SESSION, MPS_FL_RATE_FEEDBACK);
    }
}

#endif
