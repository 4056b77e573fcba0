//! The BMv2 side of the program registry: which P4 program each registered switch program
//! runs on `simple_switch`, and the control plane that fills and reads it.
//!
//! A program names the stem of its P4 program ([`SwitchProgram::p4_program`]); `build.rs`
//! compiles `p4/mpsched.p4` and every `crates/programs/src/<name>/<stem>.p4` to `<stem>.json`.
//! [`BMV2_PROGRAMS`] maps a stem to its control plane. Adding a program to BMv2 is one line
//! there.

use crate::cli::SwitchCli;
use crate::{atsss, baselines, control, hula, letflow, pmqecn, vqwrr, Bmv2Error};
use mpsched_core::control::ControlError;
use mpsched_netns::dataplane::NodeTables;
use mpsched_programs::SwitchProgram;
use std::collections::BTreeMap;

/// A program's registers, read through the CLI and named as the Rust programs name them.
pub type SnapshotFn = fn(&mut SwitchCli, &NodeTables) -> Result<BTreeMap<String, u64>, Bmv2Error>;

/// Sets a program's test clock through the CLI (nanoseconds).
pub type ClockFn = fn(&mut SwitchCli, u64) -> Result<(), Bmv2Error>;

/// Writes entry `index` of a register the program's control listing names (`vq_weight`).
pub type WriteFn = fn(&mut SwitchCli, &str, usize, u64) -> Result<(), ControlError>;

/// Presents a vector's egress step's queue figures to the program through the CLI: the depth
/// the frame found (packets) and its sojourn (ns).
pub type TestQueueFn = fn(&mut SwitchCli, u32, u64) -> Result<(), Bmv2Error>;

/// Whether the packets a program made itself are all through (through the CLI).
pub type SettledFn = fn(&mut SwitchCli) -> Result<bool, Bmv2Error>;

/// A register of counters and the snapshot name of each index.
pub type Counters = (&'static str, fn(usize) -> Option<String>);

/// How BMv2 runs one P4 program.
pub struct Bmv2Program {
    /// The program's stem (`mpsched` for `p4/mpsched.p4`).
    pub p4: &'static str,
    /// Refuse what the program's tables and registers cannot hold, before anything starts.
    pub check: fn(&NodeTables) -> Result<(), Bmv2Error>,
    /// Fill its tables and registers from a node's tables.
    pub configure: fn(&mut SwitchCli, &NodeTables) -> Result<(), Bmv2Error>,
    /// Its registers, named as the Rust programs name them.
    pub snapshot: SnapshotFn,
    /// The registers of its counters, and the snapshot name of each index (the vector runner
    /// watches them for a frame's end).
    pub counters: &'static [Counters],
    /// Set the clock its ingress reads under a test clock (vectors), if it reads one there.
    pub set_ingress_clock: Option<ClockFn>,
    /// Write a register through the control channel, for programs whose control listing has
    /// writable registers; None: reads only.
    pub write_register: Option<WriteFn>,
    /// The registers [`Bmv2Program::write_register`] writes, as the control listing names them.
    pub writable_registers: &'static [&'static str],
    /// The register holding each port's queue count (`port_queues`, per port; 0 or 1: one),
    /// which the program clamps its priorities to ([`crate::queues`]).
    pub port_queues_register: &'static str,
    /// Whether it picks packets' priority queues itself whatever the ports' queues (vq-wrr's
    /// levels), so that its switch always starts with priority queues.
    pub own_priorities: bool,
    /// Present a vector step's `enq_qdepth_pkts` and `sojourn_ns`, for programs that read them
    /// (the baselines: at egress, and at ingress, where a packet joins its queue); None: an
    /// egress step giving them is refused (an ingress step's are the Rust runner's only for
    /// programs with an enqueue stage, the baselines).
    pub set_test_queue: Option<TestQueueFn>,
    /// Whether the packets it makes itself and sends through the switch again (PMQECN's
    /// recirculated feedback) have all been through ingress: the vector runner waits for it
    /// before it reads a step's registers. None: it makes none.
    pub settled: Option<SettledFn>,
}

/// Every P4 program BMv2 can run, by stem. The one registration line a program's BMv2 side
/// adds is here.
pub static BMV2_PROGRAMS: &[Bmv2Program] = &[
    Bmv2Program {
        p4: "mpsched",
        check: control::check,
        configure: control::configure,
        snapshot: control::snapshot,
        counters: &[("MpsIngress.counters", control::counter_name)],
        set_ingress_clock: None,
        write_register: None,
        writable_registers: &[],
        port_queues_register: control::PORT_QUEUES_REGISTER,
        own_priorities: false,
        set_test_queue: None,
        settled: None,
    },
    Bmv2Program {
        p4: "letflow",
        check: letflow::check,
        configure: letflow::configure,
        snapshot: letflow::snapshot,
        counters: &[(letflow::COUNTERS_REGISTER, letflow::counter_name)],
        set_ingress_clock: Some(letflow::set_clock),
        write_register: None,
        writable_registers: &[],
        port_queues_register: letflow::PORT_QUEUES_REGISTER,
        own_priorities: false,
        set_test_queue: None,
        settled: None,
    },
    Bmv2Program {
        p4: "hula",
        check: hula::check,
        configure: hula::configure,
        snapshot: hula::snapshot,
        counters: &[(hula::COUNTERS_REGISTER, hula::counter_name)],
        set_ingress_clock: Some(hula::set_clock),
        write_register: None,
        writable_registers: &[],
        port_queues_register: hula::PORT_QUEUES_REGISTER,
        own_priorities: false,
        set_test_queue: None,
        settled: None,
    },
    Bmv2Program {
        p4: "vqwrr",
        check: vqwrr::check,
        configure: vqwrr::configure,
        snapshot: vqwrr::snapshot,
        counters: &[
            ("MpsIngress.counters", control::counter_name),
            (vqwrr::COUNTERS_REGISTER, vqwrr::counter_name),
        ],
        set_ingress_clock: None,
        write_register: Some(vqwrr::write_register),
        writable_registers: &["vq_weight"],
        port_queues_register: control::PORT_QUEUES_REGISTER,
        own_priorities: true,
        set_test_queue: None,
        settled: None,
    },
    Bmv2Program {
        p4: "pmqecn",
        check: pmqecn::check,
        configure: pmqecn::configure,
        snapshot: pmqecn::snapshot,
        counters: &[
            ("MpsIngress.counters", control::counter_name),
            (vqwrr::COUNTERS_REGISTER, vqwrr::counter_name),
            (pmqecn::COUNTERS_REGISTER, pmqecn::counter_name),
        ],
        set_ingress_clock: Some(pmqecn::set_clock),
        write_register: Some(pmqecn::write_register),
        writable_registers: &pmqecn::WRITABLE,
        port_queues_register: control::PORT_QUEUES_REGISTER,
        own_priorities: true,
        set_test_queue: None,
        settled: Some(pmqecn::settled),
    },
    Bmv2Program {
        p4: "dcqcn",
        check: baselines::check_dcqcn,
        configure: baselines::configure_dcqcn,
        snapshot: baselines::snapshot,
        counters: &[
            ("MpsIngress.counters", control::counter_name),
            (baselines::COUNTERS_REGISTER, baselines::counter_name),
        ],
        set_ingress_clock: None,
        write_register: None,
        writable_registers: &[],
        port_queues_register: control::PORT_QUEUES_REGISTER,
        own_priorities: false,
        set_test_queue: Some(baselines::set_test_queue),
        settled: None,
    },
    Bmv2Program {
        p4: "tcn",
        check: baselines::check_tcn,
        configure: baselines::configure_tcn,
        snapshot: baselines::snapshot,
        counters: &[
            ("MpsIngress.counters", control::counter_name),
            (baselines::COUNTERS_REGISTER, baselines::counter_name),
        ],
        set_ingress_clock: None,
        write_register: None,
        writable_registers: &[],
        port_queues_register: control::PORT_QUEUES_REGISTER,
        own_priorities: false,
        set_test_queue: Some(baselines::set_test_queue),
        settled: None,
    },
    Bmv2Program {
        p4: "p4qcn",
        check: baselines::check_p4qcn,
        configure: baselines::configure_p4qcn,
        snapshot: baselines::snapshot_p4qcn,
        counters: &[
            ("MpsIngress.counters", control::counter_name),
            (baselines::COUNTERS_REGISTER, baselines::counter_name),
            (baselines::QCN_COUNTERS_REGISTER, baselines::qcn_counter_name),
        ],
        set_ingress_clock: Some(baselines::set_qcn_clock),
        write_register: None,
        writable_registers: &[],
        port_queues_register: control::PORT_QUEUES_REGISTER,
        own_priorities: false,
        set_test_queue: Some(baselines::set_test_queue),
        settled: Some(baselines::qcn_settled),
    },
    Bmv2Program {
        p4: "atsss",
        check: atsss::check,
        configure: atsss::configure,
        snapshot: atsss::snapshot,
        counters: &[(atsss::COUNTERS_REGISTER, atsss::counter_name)],
        set_ingress_clock: Some(atsss::set_clock),
        write_register: Some(atsss::write_register),
        writable_registers: &atsss::WRITABLE,
        port_queues_register: atsss::PORT_QUEUES_REGISTER,
        own_priorities: false,
        set_test_queue: None,
        settled: None,
    },
];

/// BMv2's control plane of `program`, or why there is none (for messages, without the node).
pub fn bmv2_program(program: &dyn SwitchProgram) -> Result<&'static Bmv2Program, String> {
    let Some(stem) = program.p4_program() else {
        return Err(format!("program `{}` has no P4 program", program.name()));
    };
    BMV2_PROGRAMS.iter().find(|b| b.p4 == stem).ok_or_else(|| {
        format!(
            "program `{}`'s P4 program `{stem}.p4` has no control plane on BMv2 (crates/bmv2/src/programs.rs)",
            program.name()
        )
    })
}

/// The control plane of the program a node's tables name.
pub fn of_tables(t: &NodeTables) -> Result<&'static Bmv2Program, Bmv2Error> {
    let program = t.switch_program().map_err(Bmv2Error::Config)?;
    bmv2_program(program).map_err(Bmv2Error::Config)
}

#[cfg(test)]
mod tests {
    use super::*;
    use mpsched_programs::SWITCH_PROGRAMS;

    /// Registered programs without a P4 twin yet (none). A program missing from BMv2 must be
    /// listed here on purpose.
    const NOT_YET_ON_BMV2: &[&str] = &[];

    #[test]
    fn every_registered_program_has_a_bmv2_control_plane() {
        for p in SWITCH_PROGRAMS {
            if NOT_YET_ON_BMV2.contains(&p.name()) {
                let e = bmv2_program(*p)
                    .err()
                    .expect("listed as missing, yet it has a control plane");
                assert!(e.contains("has no P4 program"), "{e}");
                continue;
            }
            let b = bmv2_program(*p).unwrap_or_else(|e| panic!("{e}"));
            assert_eq!(Some(b.p4), p.p4_program());
        }
    }

    #[test]
    fn letflow_counters_are_named_as_the_rust_runner_names_them() {
        let b = BMV2_PROGRAMS.iter().find(|b| b.p4 == "letflow").unwrap();
        assert_eq!((b.counters[0].1)(0).as_deref(), Some("counter.letflow.new_flowlets"));
        let m = BMV2_PROGRAMS.iter().find(|b| b.p4 == "mpsched").unwrap();
        assert_eq!((m.counters[0].1)(0).as_deref(), Some("counter.no_route"));
        let v = BMV2_PROGRAMS.iter().find(|b| b.p4 == "vqwrr").unwrap();
        assert_eq!((v.counters[1].1)(2).as_deref(), Some("counter.vq.drops"));
    }
}
