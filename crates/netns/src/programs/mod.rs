//! The kernel side of the program registry: which eBPF object each registered program loads
//! into a switch, and how.
//!
//! A program names the stem of its eBPF object ([`SwitchProgram::ebpf_object`]); `build.rs`
//! compiles `bpf/mpsched.bpf.c` and every `crates/programs/src/<name>/<stem>.bpf.c` to
//! `<stem>.bpf.o`. [`KERNEL_PROGRAMS`] maps a stem to what loads it: a plane for live runs
//! ([`KernelProgram::start`]) and a replay of conformance vectors
//! ([`KernelProgram::vectors`]). Adding a program to the kernel backend is one line there.

pub mod atsss;
pub mod baseline;
pub mod hula;
pub mod letflow;
pub mod pmqecn;
pub mod vqwrr;

use crate::backend::NetnsError;
use crate::dataplane::{bpf, Dataplane, FarEnd, NodeTables, DEPARTURE_TC_PRIORITY};
use crate::switchplane::SwitchPlane;
use libbpf_rs::{ProgramMut, TcHook, TC_INGRESS};
use mpsched_core::vectors::{StepResult, VectorSet};
use mpsched_programs::SwitchProgram;
use std::collections::BTreeMap;
use std::os::fd::AsFd;

/// A replay's initial registers and each step's result.
pub type Replay = (BTreeMap<String, u64>, Vec<StepResult>);

/// How the kernel runs one eBPF object.
pub struct KernelProgram {
    /// The object's stem (`mpsched` for `mpsched.bpf.o`).
    pub object: &'static str,
    /// Load the object for one node, fill its maps from the node's tables and attach it on
    /// every port, in the calling thread's network namespace.
    pub start: fn(&NodeTables) -> Result<Box<dyn SwitchPlane>, NetnsError>,
    /// Replay a conformance vector set through the object with `BPF_PROG_TEST_RUN`.
    pub vectors: fn(&VectorSet) -> Result<Replay, String>,
    /// Whether that replay applies a step's register writes (the control plane's); sets
    /// with writes are refused by name otherwise.
    pub takes_writes: bool,
}

/// Every eBPF object the kernel backend can load, by stem. The one registration line a
/// program's kernel side adds is here.
pub static KERNEL_PROGRAMS: &[KernelProgram] = &[
    KernelProgram {
        object: "mpsched",
        start: start_mpsched,
        vectors: crate::vectors::run_mpsched,
        takes_writes: false,
    },
    KernelProgram {
        object: "letflow",
        start: letflow::start,
        vectors: letflow::run_vectors,
        takes_writes: false,
    },
    KernelProgram {
        object: "hula",
        start: hula::start,
        vectors: hula::vectors::run_vectors,
        takes_writes: false,
    },
    KernelProgram {
        object: "vqwrr",
        start: vqwrr::start,
        vectors: vqwrr::run_vectors,
        takes_writes: true,
    },
    KernelProgram {
        object: "pmqecn",
        start: pmqecn::start,
        vectors: pmqecn::run_vectors,
        takes_writes: true,
    },
    KernelProgram {
        object: "baseline",
        start: baseline::start,
        vectors: baseline::run_vectors,
        takes_writes: false,
    },
    KernelProgram {
        object: "atsss",
        start: atsss::start,
        vectors: atsss::run_vectors,
        takes_writes: true,
    },
];

/// The programs whose eBPF objects send rate feedback (`crates/core/src/rate_wire.rs`) to
/// paced senders.
pub const SEND_RATE_FEEDBACK: [&str; 2] = ["pmqecn", "p4qcn"];

/// The kernel's loader of `program`, or why there is none (for messages, without the node).
pub fn kernel_program(program: &dyn SwitchProgram) -> Result<&'static KernelProgram, String> {
    let Some(object) = program.ebpf_object() else {
        return Err(format!("program `{}` has no eBPF program", program.name()));
    };
    KERNEL_PROGRAMS.iter().find(|k| k.object == object).ok_or_else(|| {
        format!(
            "program `{}`'s eBPF object `{object}.bpf.o` has no loader on the kernel backend (crates/netns/src/programs)",
            program.name()
        )
    })
}

/// `bpf/mpsched.bpf.c`: [`Dataplane`], the marker at egress of the marking ports.
fn start_mpsched(tables: &NodeTables) -> Result<Box<dyn SwitchPlane>, NetnsError> {
    let mut dp = Dataplane::load(tables)?;
    dp.attach_ports(tables)?;
    Ok(Box::new(dp))
}

/// The departure stage `program` of `dp`'s object at TC ingress of each far end, in that end's
/// namespace, ahead of the program there ([`DEPARTURE_TC_PRIORITY`]). Nothing to detach later:
/// the run removes those namespaces, and the filters with them.
pub(crate) fn attach_far_ends(dp: &Dataplane, program: &str, far_ends: &[FarEnd]) -> Result<(), NetnsError> {
    for far in far_ends {
        let prog = dp.program(program)?;
        crate::ns::enter_named(&far.netns, || attach_departure(prog, far))??;
    }
    Ok(())
}

/// `frame` as `port` sends it: its MACs the port's (a departure stage knows the port by its
/// source MAC).
pub(crate) fn as_sent_by(port: &crate::dataplane::PortBinding, frame: &[u8]) -> Result<Vec<u8>, String> {
    if frame.len() < 14 {
        return Err("an egress frame shorter than its Ethernet header".into());
    }
    let mut sent = frame.to_vec();
    sent[0..6].copy_from_slice(&port.peer_mac);
    sent[6..12].copy_from_slice(&port.own_mac);
    Ok(sent)
}

/// `prog` at TC ingress of `far`'s interface, in the calling thread's namespace (`far`'s).
fn attach_departure(prog: ProgramMut<'_>, far: &FarEnd) -> Result<(), NetnsError> {
    let name = std::ffi::CString::new(far.ifname.as_str())
        .map_err(|_| NetnsError::Unsupported(format!("interface name {:?}", far.ifname)))?;
    // SAFETY: a NUL-terminated name, only read.
    let ifindex = unsafe { libc::if_nametoindex(name.as_ptr()) };
    if ifindex == 0 {
        return Err(NetnsError::Unsupported(format!(
            "no interface {} in namespace {} for a departure stage",
            far.ifname, far.netns
        )));
    }
    let what = || format!("attach a departure stage to {} in {}", far.ifname, far.netns);
    crate::dataplane::ensure_clsact(&prog, ifindex)?;
    let mut hook = TcHook::new(prog.as_fd());
    hook.ifindex(ifindex as i32)
        .replace(true)
        .handle(1)
        .priority(DEPARTURE_TC_PRIORITY)
        .attach_point(TC_INGRESS);
    bpf(what, hook.attach())?;
    Ok(())
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use mpsched_core::program::Program;
    use mpsched_core::sched::ConfigError;
    use mpsched_programs::{BuildInput, TablesNeed, SWITCH_PROGRAMS};

    /// A program as a later one might be registered: its objects named or not.
    pub(crate) struct Unloadable {
        pub ebpf: Option<&'static str>,
        pub p4: Option<&'static str>,
    }

    impl SwitchProgram for Unloadable {
        fn name(&self) -> &'static str {
            "unloadable"
        }
        fn summary(&self) -> &'static str {
            "a test program"
        }
        fn tables_need(&self) -> TablesNeed {
            TablesNeed::ShortestPath
        }
        fn build(&self, _: &BuildInput<'_>) -> Result<Box<dyn Program>, ConfigError> {
            unreachable!("never built")
        }
        fn ebpf_object(&self) -> Option<&'static str> {
            self.ebpf
        }
        fn p4_program(&self) -> Option<&'static str> {
            self.p4
        }
    }

    /// Registered programs that have no eBPF program yet (issue #30 is building them): run on
    /// the simulator, refused by name here. A new program missing from the kernel must be
    /// listed here on purpose.
    const NOT_YET_ON_THE_KERNEL: &[&str] = &[];

    #[test]
    fn every_registered_program_has_a_kernel_loader() {
        for p in SWITCH_PROGRAMS {
            if NOT_YET_ON_THE_KERNEL.contains(&p.name()) {
                let e = kernel_program(*p)
                    .err()
                    .expect("listed as missing, yet it has a loader");
                assert!(e.contains("has no eBPF program"), "{e}");
                continue;
            }
            let k = kernel_program(*p).unwrap_or_else(|e| panic!("{e}"));
            assert_eq!(Some(k.object), p.ebpf_object());
        }
        assert_eq!(KERNEL_PROGRAMS.iter().filter(|k| k.object == "letflow").count(), 1);
    }

    #[test]
    fn a_program_without_an_object_or_a_loader_is_refused_by_name() {
        let none = kernel_program(&Unloadable { ebpf: None, p4: None }).err().unwrap();
        assert!(none.contains("`unloadable` has no eBPF program"), "{none}");
        let unknown = kernel_program(&Unloadable {
            ebpf: Some("nope"),
            p4: None,
        })
        .err()
        .unwrap();
        assert!(unknown.contains("`nope.bpf.o` has no loader"), "{unknown}");
    }
}
