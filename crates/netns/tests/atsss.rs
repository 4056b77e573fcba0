//! The ATSSS UPF on two CPUs at once: one UE's packets numbered by both without a number
//! handed out twice or lost (`atsss.bpf.c`, `downlink`: the numbers by atomic adds, RTTMon's
//! steps and the probes under the UE's lock). Each scheduler of the slides' table, both CPUs
//! running the UPF a million times under `BPF_PROG_TEST_RUN` against the same UE. Needs root;
//! without it the test is reported ignored with the reason, and under CI=true it fails instead.

use mpsched_core::upf::SteeringKind;
use mpsched_netns::programs::atsss::bench::{concurrent_numbering, KINDS};

const RUNS_PER_CPU: u32 = 1_000_000;

fn two_cpus_number_one_ues_packets_once_each() {
    for kind in KINDS {
        let c = concurrent_numbering(kind, 1, 2, RUNS_PER_CPU).unwrap_or_else(|e| panic!("{}: {e}", kind.name()));
        println!("{}: {c:?}", kind.name());
        let sent = 2 * u64::from(RUNS_PER_CPU);
        assert_eq!(c.encapsulated, sent, "{}: {c:?}", kind.name());
        assert_eq!(
            (c.packet_numbers, c.tunnel_seqs, c.path_seqs),
            (sent, sent, sent),
            "{}: every packet one number of each kind, none twice",
            kind.name()
        );
        if matches!(kind, SteeringKind::Wrr | SteeringKind::Dwrr) {
            assert!((c.preferred_share - 0.5).abs() < 0.01, "{}: {c:?}", kind.name());
        }
    }
}

fn main() {
    let missing = match mpsched_netns::ns::is_root() {
        true => None,
        false => Some("it needs root (namespaces, BPF_PROG_TEST_RUN)".to_string()),
    };
    let tests: &[(&str, fn())] = &[(
        "two_cpus_number_one_ues_packets_once_each",
        two_cpus_number_one_ues_packets_once_each,
    )];
    mpsched_testkit::run_or_skip(tests, missing, "kernel ATSSS").exit();
}
