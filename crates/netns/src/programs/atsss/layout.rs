//! `atsss.h`'s map layouts as `#[repr(C)]` Rust structs, each pinned to the header's
//! `ATSSS_SIZEOF_*` and `ATSSS_OFFSETOF_*` (read from the header by `build.rs`) by a
//! compile-time assertion; the C side asserts the same constants. The UE's registers are the
//! Rust twin's own `UeReg` and `PathReg`, so the header's `struct atsss_ue` is held to them.

use crate::layout::Pod;
use mpsched_programs::atsss::frame;
use mpsched_programs::atsss::registers::{self, Kind, PathReg, UeReg};
use mpsched_programs::atsss::upf::{PathCfg, UeSlot, COUNTER_NAMES};
use std::mem::{offset_of, size_of};

/// Constants generated from `crates/programs/src/atsss/atsss.h`.
#[allow(missing_docs)]
pub mod h {
    include!(concat!(env!("OUT_DIR"), "/atsss_h.rs"));
}

/// `ATSSS_F_TEST_CLOCK`.
pub const F_TEST_CLOCK: u32 = h::F_TEST_CLOCK as u32;
/// `ATSSS_F_TEST_DRAWS`.
pub const F_TEST_DRAWS: u32 = h::F_TEST_DRAWS as u32;
/// `ATSSS_F_BENCH`.
pub const F_BENCH: u32 = h::F_BENCH as u32;
/// `ATSSS_TEST_DRAWS`.
pub const TEST_DRAWS: u32 = h::TEST_DRAWS as u32;

/// `struct atsss_node`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
#[allow(missing_docs)]
pub struct Node {
    pub own_ip: u32,
    pub flags: u32,
    pub epoch: u64,
    pub mtu: u32,
    pub outage_floor_ticks: u32,
    pub initial_cwnd: u16,
    pub pad: u16,
    pub n_ues: u32,
    pub test_clock_ns: u64,
    pub test_draws_n: u32,
    pub pad2: u32,
}

/// `struct atsss_path_cfg`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
#[allow(missing_docs)]
pub struct PathCfgC {
    pub addr: u32,
    pub port: u16,
    pub egress_port: u16,
}

/// `struct atsss_slot`: the registers, the lock (the kernel's; 0 from user space), the UE's
/// counters and its paths.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
#[allow(missing_docs)]
pub struct Slot {
    pub regs: UeReg,
    pub lock: u32,
    pub ip: u32,
    pub packet_number: u64,
    pub tunnel_seq: u32,
    pub pad: u32,
    pub paths: [PathCfgC; registers::MAX_PATHS],
}

impl From<&UeSlot> for Slot {
    fn from(s: &UeSlot) -> Slot {
        Slot {
            regs: s.regs,
            lock: 0,
            ip: s.ip,
            packet_number: s.packet_number,
            tunnel_seq: s.tunnel_seq,
            pad: 0,
            paths: s.paths.map(|p| PathCfgC {
                addr: p.addr,
                port: p.port,
                egress_port: p.egress_port,
            }),
        }
    }
}

impl From<&Slot> for UeSlot {
    fn from(s: &Slot) -> UeSlot {
        UeSlot {
            regs: s.regs,
            ip: s.ip,
            paths: s.paths.map(|p| PathCfg {
                addr: p.addr,
                port: p.port,
                egress_port: p.egress_port,
            }),
            packet_number: s.packet_number,
            tunnel_seq: s.tunnel_seq,
        }
    }
}

/// `enum atsss_counter`, in order, named as the Rust runner names the registers.
pub fn counter_names() -> Vec<String> {
    let mut out: Vec<String> = COUNTER_NAMES.iter().map(|c| format!("counter.{c}")).collect();
    out.extend(["counter.not_ipv4", "counter.malformed", "counter.redirect_failed"].map(String::from));
    out
}

const _: () = {
    assert!(size_of::<Node>() as u64 == h::SIZEOF_NODE);
    assert!(size_of::<PathReg>() as u64 == h::SIZEOF_PATH);
    assert!(offset_of!(PathReg, cwnd) as u64 == h::OFFSETOF_PATH_CWND);
    assert!(size_of::<UeReg>() as u64 == h::SIZEOF_UE);
    assert!(offset_of!(UeReg, paths) as u64 == h::OFFSETOF_UE_PATHS);
    assert!(size_of::<PathCfgC>() as u64 == h::SIZEOF_PATH_CFG);
    assert!(size_of::<Slot>() as u64 == h::SIZEOF_SLOT);
    assert!(offset_of!(Slot, ip) as u64 == h::OFFSETOF_SLOT_IP);
    assert!(offset_of!(Slot, packet_number) as u64 == h::OFFSETOF_SLOT_PACKET_NUMBER);
    assert!(offset_of!(Slot, paths) as u64 == h::OFFSETOF_SLOT_PATHS);
    assert!(h::MAX_PATHS as usize == registers::MAX_PATHS);
    assert!(h::MAX_UES as usize == mpsched_core::upf::MAX_UES);
    assert!(COUNTER_NAMES.len() + 3 == h::C_MAX as usize);
    assert!(h::UDP_PORT == frame::UPF_PORT as u64);
    assert!(h::ENCAP_BYTES as usize == frame::ENCAP_BYTES);
    assert!(h::HEADER_BYTES as usize == frame::HEADER_BYTES);
    assert!(h::DATA_BYTES as usize == frame::DATA_BYTES);
    assert!(h::ACK_BYTES as usize == frame::ACK_BYTES);
    assert!(h::KEEPALIVE_BYTES as usize == frame::KEEPALIVE_BYTES);
    assert!(h::OUTER_TTL == frame::OUTER_TTL as u64);
    assert!(h::MSG_DATA == frame::KIND_DATA as u64);
    assert!(h::MSG_ACK == frame::KIND_ACK as u64);
    assert!(h::MSG_KEEPALIVE == frame::KIND_KEEPALIVE as u64);
    assert!(h::PATH_HAS_RTT == registers::PATH_HAS_RTT as u64);
    assert!(h::RTTMON_MAX_WEIGHT == registers::RTTMON_MAX_WEIGHT as u64);
    assert!(h::WRR_MAX_WEIGHT == registers::WRR_MAX_WEIGHT as u64);
    assert!(h::CMON_MIN_CWND == registers::CMON_MIN_CWND as u64);
    assert!(h::CMON_MAX_CWND == registers::CMON_MAX_CWND as u64);
    assert!(h::KIND_WRR == Kind::Wrr as u64);
    assert!(h::KIND_DWRR == Kind::Dwrr as u64);
    assert!(h::KIND_RTTMON == Kind::RttMon as u64);
    assert!(h::KIND_CMON == Kind::CMon as u64);
    assert!(h::KIND_ACTIVE_STANDBY == Kind::ActiveStandby as u64);
    assert!(h::KIND_SMALLEST_DELAY == Kind::SmallestDelay as u64);
    assert!(h::KIND_LOAD_BALANCING == Kind::LoadBalancing as u64);
    assert!(h::KIND_PRIORITY == Kind::Priority as u64);
};

// SAFETY: repr(C) structs of integers and integer arrays, without implicit padding (their
// sizes are pinned to the header's above, which has explicit padding fields); every bit
// pattern is a value.
unsafe impl Pod for Node {}
// SAFETY: as Node.
unsafe impl Pod for Slot {}
// SAFETY: as Node.
unsafe impl Pod for PathCfgC {}
