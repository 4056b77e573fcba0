/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The routing stage (crates/core/src/table.rs, Ecmp): IPv4 longest-prefix match to a port or
 * to an ECMP group, whose member is chosen per flow by the seeded hash of the 5-tuple.
 */
#ifndef MPSCHED_ROUTE_P4
#define MPSCHED_ROUTE_P4

control RouteStage(in headers_t h, in bit<32> hash_seed, in bit<32> l4_ports,
                   out bool found, out bit<16> port) {
    bit<16> group = 0;
    bit<32> group_size = 0;
    bit<32> member = 0;
    bool is_ecmp = false;

    action route_port(bit<16> p) {
        port = p;
        found = true;
    }

    action route_ecmp(bit<16> g) {
        group = g;
        is_ecmp = true;
    }

    table routes {
        key = { h.ipv4.dst: lpm; }
        actions = { route_port; route_ecmp; NoAction; }
        default_action = NoAction;
        size = MPS_MAX_ROUTES;
    }

    action set_group_size(bit<32> n) {
        group_size = n;
    }

    /* An ECMP group's number of members. */
    table ecmp_group {
        key = { group: exact; }
        actions = { set_group_size; NoAction; }
        default_action = NoAction;
        size = MPS_MAX_ECMP_GROUPS;
    }

    /* An ECMP group's members, by index. */
    table ecmp_member {
        key = {
            group: exact;
            member: exact;
        }
        actions = { route_port; NoAction; }
        default_action = NoAction;
        size = 1024; /* MPS_MAX_ECMP_GROUPS * MPS_MAX_PORTS */
    }

    apply {
        found = false;
        port = 0;
        routes.apply();
        if (!is_ecmp) {
            return;
        }
        ecmp_group.apply();
        if (group_size == 0 || group_size > MPS_MAX_PORTS) {
            return;
        }
        /* Ecmp::flow_hash: CRC-32 of the 13-byte 5-tuple in network order; seeded_hash: xor
         * the switch's seed, then fmix32. */
        bit<32> crc;
        hash(crc, HashAlgorithm.crc32, 32w0,
             { h.ipv4.src, h.ipv4.dst, h.ipv4.protocol, l4_ports }, 64w0x100000000);
        member = mod_small(fmix32(crc ^ hash_seed), group_size);
        ecmp_member.apply();
    }
}

#endif
