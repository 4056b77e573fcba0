//! # mpsched-netns: the Linux kernel backend
//!
//! The same scenarios as the simulator, on the real data plane: a network namespace per host
//! and per switch, veth links shaped with htb at the scenario's rates and queue capacities, the
//! eBPF programs of `bpf/` on the switches (loaded and filled by [`dataplane`]), real traffic
//! from iperf3, and per-second interface counters, written in the same results schema.
//!
//! - [`layout`]: the map layouts of `bpf/mpsched.h` as Rust structs, checked at compile time.
//! - [`capture`]: `--pcap` on the kernel, with dumpcap.
//! - [`dataplane`]: load, configure, read, attach and detach one node's eBPF programs.
//! - [`hosts`]: host namespaces' addresses, routes and MPTCP path managers.
//! - [`ns`]: network namespaces and commands inside them.
//! - [`paced`]: rate-controlled UDP flows' paced sender and receiver (`[flow.rate_control]`).
//! - [`programs`]: which eBPF object each registered switch program loads, and how.
//! - [`subflows`]: kernel MPTCP subflows' figures from `ss`.
//! - [`trafficgen`]: fixed-size TCP transfers, one connection per flow.
//! - [`vectors`]: conformance vectors through `BPF_PROG_TEST_RUN`.

#![warn(missing_docs)]

pub mod backend;
pub mod bench;
pub mod capture;
pub mod dataplane;
pub mod hostclass;
pub mod hosts;
pub mod layout;
pub mod ns;
pub mod paced;
pub mod programs;
pub mod subflows;
pub mod switchplane;
pub mod tap;
pub mod trafficgen;
pub mod vectors;
