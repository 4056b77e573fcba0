//! AFMT's memory stays within the documented bound however many flows pass through it.
//!
//! A counting global allocator measures the bytes the scheduler holds (live) and the peak while
//! one million distinct flows go through a table of the default size.

use mpsched_core::tunnel::{Afmt, FlowKey, FlowTable, SubtunnelView, TunnelScheduler, DEFAULT_FLOW_TABLE_ENTRIES};
use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::sync::atomic::{AtomicIsize, Ordering};

struct Counting;
static LIVE: AtomicIsize = AtomicIsize::new(0);
static PEAK: AtomicIsize = AtomicIsize::new(0);

thread_local! {
    /// Whether this thread's allocations are counted: only the test's own, so that the test
    /// harness's threads (output capture, the slow-test timer) cannot move the figures.
    static COUNTED: Cell<bool> = const { Cell::new(false) };
}

fn counted() -> bool {
    COUNTED.try_with(Cell::get).unwrap_or(false)
}

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, l: Layout) -> *mut u8 {
        let p = System.alloc(l);
        if !p.is_null() && counted() {
            let now = LIVE.fetch_add(l.size() as isize, Ordering::SeqCst) + l.size() as isize;
            PEAK.fetch_max(now, Ordering::SeqCst);
        }
        p
    }
    unsafe fn dealloc(&self, p: *mut u8, l: Layout) {
        System.dealloc(p, l);
        if counted() {
            LIVE.fetch_sub(l.size() as isize, Ordering::SeqCst);
        }
    }
}

#[global_allocator]
static A: Counting = Counting;

#[test]
fn one_million_flows_stay_within_the_bound() {
    let mut subtunnels = [
        SubtunnelView {
            fill_bytes: 10_000,
            cwnd_bytes: 60_000,
            srtt_ns: 20_000_000,
            ..SubtunnelView::default()
        },
        SubtunnelView {
            path: 1,
            fill_bytes: 4_000,
            cwnd_bytes: 90_000,
            srtt_ns: 12_000_000,
            ..SubtunnelView::default()
        },
        SubtunnelView {
            path: 2,
            fill_bytes: 0,
            cwnd_bytes: 30_000,
            srtt_ns: 30_000_000,
            ..SubtunnelView::default()
        },
    ];
    COUNTED.with(|c| c.set(true));
    let base = LIVE.load(Ordering::SeqCst);
    PEAK.store(base, Ordering::SeqCst);
    let mut afmt = Afmt::new(DEFAULT_FLOW_TABLE_ENTRIES);
    let after_new = LIVE.load(Ordering::SeqCst) - base;
    let mut used = [0u64; 3];
    for n in 0..1_000_000u32 {
        let key = FlowKey {
            src_ip: 0x0a00_0000 | n,
            dst_ip: 0x0a01_0001,
            src_port: (n % 60_000) as u16,
            dst_port: 443,
            proto: 6,
        };
        let s = afmt.select(&key, 1500, u64::from(n) * 1000, &subtunnels);
        used[s] += 1;
        // The chosen subtunnel's queue grows; each drains at cwnd / SRTT per microsecond.
        subtunnels[s].fill_bytes += 1500;
        for v in &mut subtunnels {
            let per_us = v.cwnd_bytes * 1000 / v.srtt_ns;
            v.fill_bytes = v.fill_bytes.saturating_sub(per_us);
        }
        // Every tenth packet revisits a recent flow, so lookups hit as well as miss.
        if n % 10 == 0 && n > 100 {
            let mut old = key;
            old.src_ip -= 50;
            old.src_port = ((n - 50) % 60_000) as u16;
            afmt.select(&old, 1500, u64::from(n) * 1000, &subtunnels);
        }
    }
    let live = LIVE.load(Ordering::SeqCst) - base;
    let peak = PEAK.load(Ordering::SeqCst) - base;
    COUNTED.with(|c| c.set(false));
    let bound = FlowTable::memory_bound_bytes(DEFAULT_FLOW_TABLE_ENTRIES) as isize;
    let c: std::collections::BTreeMap<_, _> = afmt.counters().into_iter().collect();
    eprintln!(
        "after construction {after_new} B, live {live} B, peak {peak} B, bound {bound} B; {:?}; subtunnels {used:?}",
        c
    );
    assert_eq!(c["afmt_flows_held"], u64::from(DEFAULT_FLOW_TABLE_ENTRIES));
    assert!(c["afmt_evictions"] >= 1_000_000 - u64::from(DEFAULT_FLOW_TABLE_ENTRIES));
    assert_eq!(live, after_new, "no allocation after construction");
    assert!(peak <= bound, "peak {peak} B above the documented bound {bound} B");
    assert!(
        used.iter().all(|&u| u > 0),
        "new flows spread by weighted fill: {used:?}"
    );
}
