//! A port's queues on BMv2: `simple_switch --priority-queues 8`, each queue's depth set through
//! the CLI, and each program told how many queues each port has (it clamps the priority it
//! gives a packet to them, `p4/include/queues.p4`).
//!
//! Only ports with several queues in strict priority are BMv2's own
//! ([`crate::plane::Bmv2Planes`] refuses weighted ones): BMv2's traffic manager serves the
//! highest non-empty priority first, and has no weights. It has a rate limit, but per priority
//! queue (`set_queue_rate <pps> <port> <priority>` gives each queue its own rate, computed when
//! a packet is queued), not per port: with three classes of 6.2 Mbit/s and every queue of a
//! port limited to the 10 Mbit/s link's 827 frames/s, 18.6 Mbit/s left the port (measured,
//! `docs/performance.md`, "Strict priority on BMv2"). So the port's rate is the kernel's: the
//! interface after BMv2 keeps its htb at the link's rate with one deep queue
//! ([`mpsched_netns::backend::OWN_QUEUES_SHAPER_PKTS`]), BMv2's transmit blocks once the frames
//! it has written fill its socket's send buffer, and its priority queues fill behind it.
//! No `set_queue_rate` is given.

use crate::cli::SwitchCli;
use crate::programs::Bmv2Program;
use crate::Bmv2Error;
use mpsched_netns::dataplane::NodeTables;

/// Priority queues per port of a switch that has any (the most a scenario's port has).
pub const PRIORITY_QUEUES: u8 = 8;

/// The `--priority-queues` of the switch running `prog` on `t`: [`PRIORITY_QUEUES`] when a port
/// has several queues or the program picks priorities itself; None: one queue per port, as
/// BMv2 starts by default.
pub fn priority_queues(prog: &Bmv2Program, t: &NodeTables) -> Option<u8> {
    (prog.own_priorities || t.port_queues.iter().any(|q| q.queues > 1)).then_some(PRIORITY_QUEUES)
}

/// Refuse ports of more queues than the switch has, before anything starts.
pub fn check(t: &NodeTables) -> Result<(), Bmv2Error> {
    match t.port_queues.iter().position(|q| q.queues > PRIORITY_QUEUES) {
        Some(p) => Err(Bmv2Error::Config(format!(
            "port {p} has {} queues; BMv2 runs at most {PRIORITY_QUEUES}",
            t.port_queues[p].queues
        ))),
        None => Ok(()),
    }
}

/// Tell the program each port's queue count and give each queue of a port of several its
/// depth (`set_queue_depth <pkts> <port> <priority>`); ports of one queue keep BMv2's.
pub fn configure(cli: &mut SwitchCli, prog: &Bmv2Program, t: &NodeTables) -> Result<(), Bmv2Error> {
    check(t)?;
    for (p, q) in t.port_queues.iter().enumerate().filter(|(_, q)| q.queues > 1) {
        cli.register_write(prog.port_queues_register, p, u64::from(q.queues))?;
        for priority in 0..q.queues {
            cli.run(&format!("set_queue_depth {} {p} {priority}", q.queue_pkts.max(1)))?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use mpsched_netns::dataplane::PortQueues;

    #[test]
    fn priority_queues_start_only_where_a_port_or_the_program_needs_them() {
        let prog = |p4: &str| crate::programs::BMV2_PROGRAMS.iter().find(|b| b.p4 == p4).unwrap();
        let mut t = NodeTables::multipath(
            mpsched_core::switch::SwitchConfig::forwarding(0, Vec::new()),
            Vec::new(),
        );
        assert_eq!(priority_queues(prog("mpsched"), &t), None);
        assert_eq!(
            priority_queues(prog("vqwrr"), &t),
            Some(8),
            "vq-wrr's levels are priorities"
        );
        t.port_queues = vec![
            PortQueues {
                queues: 1,
                queue_pkts: 64,
            },
            PortQueues {
                queues: 3,
                queue_pkts: 512,
            },
        ];
        assert_eq!(priority_queues(prog("mpsched"), &t), Some(8));
        check(&t).unwrap();
        t.port_queues[0].queues = 9;
        assert!(check(&t).unwrap_err().to_string().contains("at most 8"));
    }
}
