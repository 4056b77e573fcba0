/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A port's queues on BMv2: which of the port's strict-priority queues (simple_switch
 * --priority-queues 8, standard_metadata.priority; BMv2 serves the highest first) a packet
 * joins. Every program that forwards sets it; the control plane tells each program how many
 * queues each port has (a register per port, 0 or 1: one queue, priority 0, which is all a
 * switch started without priority queues takes: BMv2 drops a packet of a priority it does not
 * have).
 *
 * Without a program's own choice a packet joins the queue of its DSCP class, dscp >> 3 (the
 * IPv4 TOS byte's top three bits), clamped to the port's last queue: the simulator's default
 * classification (crates/sim, datapath.rs) and the kernel's u32 filters
 * (crates/netns/src/backend/queues.rs).
 */
#ifndef MPSCHED_QUEUES_P4
#define MPSCHED_QUEUES_P4

/* A priority `choice` clamped to a port of `queues` queues (0 or 1: priority 0). */
#define MPS_CLAMP_QUEUE(choice, queues) \
    ((queues) <= 1 ? 3w0 : ((bit<8>)(choice) < (queues) - 1 ? (bit<3>)(choice) : (bit<3>)((queues) - 1)))


#endif
