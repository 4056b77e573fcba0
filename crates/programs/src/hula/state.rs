//! How much state MP-HULA's tables take for a given load, from the Rust twin's layouts (the
//! figures §2.6 of the paper gives for its own: 21 MB of parsing state and 25 MB of forwarding
//! state for 100 000 connections of 6 subflows, 10 000 ToRs and 4 best hops).

use super::assoc::{AssocSlot, AuxSlot, TokenSlot};
use super::besthop::Hop;
use super::conn::ConnSlot;
use super::switch::FlowletSlot;
use std::mem::size_of;

/// Bytes of each table for `connections` connections of `subflows` subflows, `tors` ToRs and
/// `k` best hops, each table holding exactly its entries (a direct-mapped table needs slack
/// beyond this to keep collisions rare: `tables_at_load` below).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StateBytes {
    /// Keys of handshakes under way: one per connection at worst (all opening at once).
    pub aux: u64,
    /// One entry per subflow.
    pub assoc: u64,
    /// Two tokens per connection.
    pub tokens: u64,
    /// One flowlet per subflow.
    pub flowlets: u64,
    /// `k` hops per ToR.
    pub best_hops: u64,
    /// One entry per connection (its subflows' hops and times, four of them).
    pub conns: u64,
}

impl StateBytes {
    /// The tables' sizes.
    pub fn of(connections: u64, subflows: u64, tors: u64, k: u64) -> StateBytes {
        let b = |n: u64, size: usize| n * size as u64;
        StateBytes {
            aux: b(connections, size_of::<AuxSlot>()),
            assoc: b(connections * subflows, size_of::<AssocSlot>()),
            tokens: b(2 * connections, size_of::<TokenSlot>()),
            flowlets: b(connections * subflows, size_of::<FlowletSlot>()),
            best_hops: b(tors * k, size_of::<Hop>()),
            conns: b(connections, size_of::<ConnSlot>()),
        }
    }

    /// Parsing state (a ToR's): aux, assoc and tokens.
    pub fn parsing(&self) -> u64 {
        self.aux + self.assoc + self.tokens
    }

    /// Forwarding state (every switch's): flowlets, best hops, connections.
    pub fn forwarding(&self) -> u64 {
        self.flowlets + self.best_hops + self.conns
    }

    /// The same with each table's slots the next power of two at or above twice its entries
    /// (a load factor of at most one half), as the tables are sized.
    pub fn tables_at_load(connections: u64, subflows: u64, tors: u64, k: u64) -> StateBytes {
        let slots = |n: u64| (2 * n).next_power_of_two();
        let b = |n: u64, size: usize| slots(n) * size as u64;
        StateBytes {
            aux: b(connections, size_of::<AuxSlot>()),
            assoc: b(connections * subflows, size_of::<AssocSlot>()),
            tokens: b(2 * connections, size_of::<TokenSlot>()),
            flowlets: b(connections * subflows, size_of::<FlowletSlot>()),
            // Indexed by ToR id: exactly `tors` rows.
            best_hops: tors * k * size_of::<Hop>() as u64,
            conns: b(connections, size_of::<ConnSlot>()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The figures docs/reproduction.md sets beside the paper's 21 MB and 25 MB.
    #[test]
    fn state_for_the_papers_example() {
        assert_eq!(
            (
                size_of::<AuxSlot>(),
                size_of::<AssocSlot>(),
                size_of::<TokenSlot>(),
                size_of::<FlowletSlot>(),
                size_of::<Hop>(),
                size_of::<ConnSlot>()
            ),
            (24, 16, 12, 16, 16, 56)
        );
        let s = StateBytes::of(100_000, 6, 10_000, 4);
        assert_eq!((s.parsing(), s.forwarding()), (14_400_000, 15_840_000));
        let t = StateBytes::tables_at_load(100_000, 6, 10_000, 4);
        assert_eq!((t.parsing(), t.forwarding()), (46_137_344, 48_874_496));
    }
}
