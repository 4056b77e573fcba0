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
    pub ue_index_bits: u16,
    pub path_index_bits: u16,
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

/// `struct atsss_slot`: the lock (the kernel's; 0 from user space), the UE's counters, paths 0
/// and 1, the registers, the UE's address, paths 2 and 3.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
#[allow(missing_docs)]
pub struct Slot {
    pub lock: u32,
    pub tunnel_seq: u32,
    pub packet_number: u64,
    pub near: [PathCfgC; 2],
    pub regs: UeReg,
    pub ip: u32,
    pub far: [PathCfgC; 2],
    pub pad: [u8; 28],
}

/// `struct atsss_index_entry`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[allow(missing_docs)]
pub struct IndexEntry {
    /// The address, network order (0: empty).
    pub key: u32,
    pub value: u32,
}

/// An address index as `atsss.h` lays it out: `1 << bits` entries, `address` (host order)
/// starting at `(address x ATSSS_INDEX_MULT) >> (32 - bits)`, linear probing, every address
/// within `ATSSS_INDEX_PROBES` of its start; the smallest such table at least twice the
/// entries (at most `1 << ATSSS_INDEX_MAX_BITS`). `entries`: (address, value), addresses
/// non-zero and distinct.
pub fn build_index(entries: &[(u32, u32)]) -> Result<(u16, Vec<IndexEntry>), String> {
    let mut bits = 1u32;
    while (1usize << bits) < 2 * entries.len() {
        bits += 1;
    }
    'size: while bits <= h::INDEX_MAX_BITS as u32 {
        let size = 1usize << bits;
        let mut table = vec![IndexEntry::default(); size];
        for &(addr, value) in entries {
            let start = index_start(addr, bits);
            let Some(k) = (0..h::INDEX_PROBES as usize)
                .map(|i| (start + i) & (size - 1))
                .find(|&k| table[k].key == 0)
            else {
                bits += 1;
                continue 'size;
            };
            table[k] = IndexEntry {
                key: u32::from_ne_bytes(addr.to_be_bytes()),
                value,
            };
        }
        return Ok((bits as u16, table));
    }
    Err(format!(
        "no address index of up to {} entries holds these {} addresses within {} probes",
        1u64 << h::INDEX_MAX_BITS,
        entries.len(),
        h::INDEX_PROBES
    ))
}

/// Where `address` (host order) starts in an index of `1 << bits` entries.
pub fn index_start(address: u32, bits: u32) -> usize {
    (address.wrapping_mul(h::INDEX_MULT as u32) >> (32 - bits)) as usize
}

/// `address`'s value in an index built by [`build_index`] (as `index_lookup` in atsss.bpf.c).
pub fn index_lookup(table: &[IndexEntry], bits: u32, address: u32) -> Option<u32> {
    let key = u32::from_ne_bytes(address.to_be_bytes());
    let start = index_start(address, bits);
    for i in 0..h::INDEX_PROBES as usize {
        let e = table.get((start + i) & (table.len() - 1))?;
        if e.key == 0 {
            return None;
        }
        if e.key == key {
            return Some(e.value);
        }
    }
    None
}

impl From<&UeSlot> for Slot {
    fn from(s: &UeSlot) -> Slot {
        let c = |p: &PathCfg| PathCfgC {
            addr: p.addr,
            port: p.port,
            egress_port: p.egress_port,
        };
        Slot {
            lock: 0,
            tunnel_seq: s.tunnel_seq,
            packet_number: s.packet_number,
            near: [c(&s.paths[0]), c(&s.paths[1])],
            regs: s.regs,
            ip: s.ip,
            far: [c(&s.paths[2]), c(&s.paths[3])],
            pad: [0; 28],
        }
    }
}

impl From<&Slot> for UeSlot {
    fn from(s: &Slot) -> UeSlot {
        let c = |p: &PathCfgC| PathCfg {
            addr: p.addr,
            port: p.port,
            egress_port: p.egress_port,
        };
        UeSlot {
            regs: s.regs,
            ip: s.ip,
            paths: [c(&s.near[0]), c(&s.near[1]), c(&s.far[0]), c(&s.far[1])],
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
    assert!(offset_of!(Slot, packet_number) as u64 == h::OFFSETOF_SLOT_PACKET_NUMBER);
    assert!(offset_of!(Slot, near) as u64 == h::OFFSETOF_SLOT_NEAR);
    assert!(offset_of!(Slot, regs) as u64 == h::OFFSETOF_SLOT_REGS);
    assert!(offset_of!(Slot, ip) as u64 == h::OFFSETOF_SLOT_IP);
    assert!(offset_of!(Slot, far) as u64 == h::OFFSETOF_SLOT_FAR);
    assert!(size_of::<IndexEntry>() as u64 == h::SIZEOF_INDEX_ENTRY);
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
    assert!(h::PATH_SLOW_START == registers::PATH_SLOW_START as u64);
    assert!(h::MAX_PROBE_BACKOFF == registers::MAX_PROBE_BACKOFF as u64);
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
// SAFETY: as Node.
unsafe impl Pod for IndexEntry {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_index_finds_every_address_within_its_probes_and_misses_the_others() {
        for n in [0usize, 1, 2, 3, 100, 10_000, 70_000] {
            let entries: Vec<(u32, u32)> = (0..n as u32).map(|i| (0x0a40_0000 + i * 7, i)).collect();
            let (bits, table) = build_index(&entries).unwrap();
            assert_eq!(table.len(), 1 << bits);
            assert!(table.len() >= 2 * n && table.len() >= 2);
            for &(a, v) in &entries {
                assert_eq!(index_lookup(&table, u32::from(bits), a), Some(v), "{a:#x}");
            }
            assert_eq!(index_lookup(&table, u32::from(bits), 0x0b00_0001), None);
        }
    }

    #[test]
    fn addresses_that_crowd_one_start_grow_the_table() {
        // Addresses whose products share their top bits in a small table.
        let entries: Vec<(u32, u32)> = (0..40u32).map(|i| (i << 26 | 1, i)).collect();
        let (bits, table) = build_index(&entries).unwrap();
        for &(a, v) in &entries {
            assert_eq!(index_lookup(&table, u32::from(bits), a), Some(v));
        }
    }
}
