//! A flow table of bounded size that evicts the least recently used flow.
//!
//! Entries live in a slab allocated once at full capacity, threaded on a doubly linked recency
//! list by index; a hash map from the 5-tuple to the slab index is also allocated once, at full
//! capacity, so the table never allocates after construction. A lookup, an insertion and an
//! eviction each cost O(1). The memory it holds is at most [`FlowTable::memory_bound_bytes`].

use super::FlowKey;
use std::collections::HashMap;

/// Default capacity: 65 536 flows, the common `nf_conntrack_max` of a small Linux gateway.
pub const DEFAULT_FLOW_TABLE_ENTRIES: u32 = 65_536;

const NIL: u32 = u32::MAX;

/// What the table holds per flow: the subtunnel its last packet took, and when.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FlowEntry {
    /// Subtunnel of the flow's last packet: its number in the tunnel
    /// ([`SubtunnelView::path`](super::SubtunnelView::path)).
    pub subtunnel: u8,
    /// When the flow's last packet was sent, in nanoseconds.
    pub last_ns: u64,
}

#[derive(Clone, Copy, Debug)]
struct Slot {
    key: FlowKey,
    entry: FlowEntry,
    prev: u32,
    next: u32,
}

/// The flow table.
#[derive(Debug)]
pub struct FlowTable {
    capacity: u32,
    index: HashMap<FlowKey, u32>,
    slots: Vec<Slot>,
    /// Most recently used.
    head: u32,
    /// Least recently used.
    tail: u32,
    evictions: u64,
}

impl FlowTable {
    /// A table for `capacity` flows (at least 1), all memory allocated now.
    pub fn new(capacity: u32) -> Self {
        let capacity = capacity.max(1);
        FlowTable {
            capacity,
            // Twice the flows: removals leave tombstones, and with at most half of the map's
            // capacity in use the map cleans them up in place instead of growing.
            index: HashMap::with_capacity(2 * capacity as usize),
            slots: Vec::with_capacity(capacity as usize),
            head: NIL,
            tail: NIL,
            evictions: 0,
        }
    }

    /// Capacity in flows.
    pub fn capacity(&self) -> u32 {
        self.capacity
    }

    /// Flows held.
    pub fn len(&self) -> usize {
        self.slots.len()
    }

    /// Whether no flow is held.
    pub fn is_empty(&self) -> bool {
        self.slots.is_empty()
    }

    /// Flows evicted to make room.
    pub fn evictions(&self) -> u64 {
        self.evictions
    }

    /// An upper bound on the heap bytes a table of `capacity` flows holds, whatever it is fed:
    /// the slab (`capacity` slots of [`FlowTable::SLOT_BYTES`]) plus the hash map at its
    /// allocated capacity (a power-of-two number of buckets of at least `2 * capacity * 8 / 7`,
    /// each a key, an index and one control byte, plus one group of control bytes).
    pub fn memory_bound_bytes(capacity: u32) -> usize {
        let cap = capacity.max(1) as usize;
        let buckets = (2 * cap * 8).div_ceil(7).next_power_of_two();
        let bucket = std::mem::size_of::<(FlowKey, u32)>() + 1;
        cap * Self::SLOT_BYTES + buckets * bucket + 64
    }

    /// Bytes per slab slot.
    pub const SLOT_BYTES: usize = std::mem::size_of::<Slot>();

    /// The entry of `key`, marking it most recently used.
    pub fn get(&mut self, key: &FlowKey) -> Option<FlowEntry> {
        let i = *self.index.get(key)?;
        self.touch(i);
        Some(self.slots[i as usize].entry)
    }

    /// Set the entry of `key` (most recently used), evicting the least recently used flow if
    /// the table is full.
    pub fn insert(&mut self, key: FlowKey, entry: FlowEntry) {
        if let Some(&i) = self.index.get(&key) {
            self.slots[i as usize].entry = entry;
            self.touch(i);
            return;
        }
        let i = if self.slots.len() < self.capacity as usize {
            self.slots.push(Slot {
                key,
                entry,
                prev: NIL,
                next: NIL,
            });
            (self.slots.len() - 1) as u32
        } else {
            // Reuse the least recently used slot.
            let i = self.tail;
            self.unlink(i);
            let old = self.slots[i as usize].key;
            self.index.remove(&old);
            self.evictions += 1;
            self.slots[i as usize].key = key;
            self.slots[i as usize].entry = entry;
            i
        };
        self.index.insert(key, i);
        self.push_front(i);
    }

    fn touch(&mut self, i: u32) {
        if self.head != i {
            self.unlink(i);
            self.push_front(i);
        }
    }

    fn unlink(&mut self, i: u32) {
        let Slot { prev, next, .. } = self.slots[i as usize];
        if prev == NIL {
            self.head = next;
        } else {
            self.slots[prev as usize].next = next;
        }
        if next == NIL {
            self.tail = prev;
        } else {
            self.slots[next as usize].prev = prev;
        }
    }

    fn push_front(&mut self, i: u32) {
        self.slots[i as usize].prev = NIL;
        self.slots[i as usize].next = self.head;
        if self.head != NIL {
            self.slots[self.head as usize].prev = i;
        }
        self.head = i;
        if self.tail == NIL {
            self.tail = i;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(n: u32) -> FlowKey {
        FlowKey {
            src_ip: n,
            dst_ip: 7,
            src_port: 1,
            dst_port: 2,
            proto: 6,
        }
    }

    fn e(s: u8) -> FlowEntry {
        FlowEntry {
            subtunnel: s,
            last_ns: u64::from(s),
        }
    }

    #[test]
    fn the_least_recently_used_flow_is_evicted() {
        let mut t = FlowTable::new(3);
        for n in 0..3 {
            t.insert(key(n), e(n as u8));
        }
        assert_eq!(t.get(&key(0)), Some(e(0)), "0 is now the most recent");
        t.insert(key(3), e(3));
        assert_eq!(t.get(&key(1)), None, "1 was the least recently used");
        assert_eq!(t.evictions(), 1);
        assert_eq!(t.len(), 3);
        for n in [0, 2, 3] {
            assert_eq!(t.get(&key(n)).map(|x| x.subtunnel), Some(n as u8));
        }
        t.insert(key(2), e(9));
        assert_eq!(t.get(&key(2)), Some(e(9)), "an update replaces in place");
        assert_eq!(t.len(), 3);
    }

    #[test]
    fn never_grows_past_its_capacity() {
        let mut t = FlowTable::new(1000);
        let cap = t.slots.capacity();
        for n in 0..100_000 {
            t.insert(key(n), e(1));
        }
        assert_eq!(t.len(), 1000);
        assert_eq!(
            t.slots.capacity(),
            cap,
            "no reallocation (the allocator-level check is tests/afmt_memory.rs)"
        );
        assert_eq!(t.evictions(), 99_000);
        for n in 99_000..100_000 {
            assert!(t.get(&key(n)).is_some());
        }
    }
}
