//! MP-HULA's connection table at every switch (§2.4-2.5 of the paper; README.md, "Sub-flowlet
//! choice"): for each connection, the next hop each of its subflows last took here and when,
//! so that a new sub-flowlet avoids the hops its siblings hold.

use super::besthop::Hop;
use super::{MAX_SUBFLOWS, NO_PORT};
use mpsched_core::packet::PortId;

/// One connection's hops.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ConnSlot {
    /// The connection id.
    pub conn_id: u64,
    /// Per subflow 1..=4, the port it last took ([`NO_PORT`]: none).
    pub port: [PortId; MAX_SUBFLOWS],
    /// Per subflow, when it last sent through this switch, µs.
    pub last_us: [u64; MAX_SUBFLOWS],
    /// Round-robin counter for when every candidate is held.
    pub rr: u8,
    /// Whether the slot holds a connection.
    pub valid: bool,
}

impl Default for ConnSlot {
    fn default() -> Self {
        ConnSlot {
            conn_id: 0,
            port: [NO_PORT; MAX_SUBFLOWS],
            last_us: [0; MAX_SUBFLOWS],
            rr: 0,
            valid: false,
        }
    }
}

impl ConnSlot {
    /// Whether subflow index `j` (0-based) sent less than `gap_us` ago on `port`.
    fn holds(&self, j: usize, port: PortId, now_us: u64, gap_us: u64) -> bool {
        self.port[j] == port && now_us.saturating_sub(self.last_us[j]) < gap_us
    }

    /// Whether any of its subflows sent less than `gap_us` ago.
    pub fn active(&self, now_us: u64, gap_us: u64) -> bool {
        self.valid
            && (0..MAX_SUBFLOWS).any(|j| self.port[j] != NO_PORT && now_us.saturating_sub(self.last_us[j]) < gap_us)
    }
}

/// The `conn_entries`-slot table.
#[derive(Clone, Debug)]
pub struct ConnTable {
    /// The slots.
    pub slots: Vec<ConnSlot>,
}

/// The slot index of connection `conn_id` in a table of `n` slots (a power of two).
#[inline]
pub fn conn_slot(conn_id: u64, n: usize) -> usize {
    ((conn_id ^ (conn_id >> 32)) as u32 as usize) & (n - 1)
}

/// How a sub-flowlet's hop was chosen, for the counters.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Choice {
    /// The hop, None when no candidate was live.
    pub port: Option<PortId>,
    /// Candidates passed over because a sibling held them.
    pub skipped: u64,
    /// Every candidate was held: round robin.
    pub round_robin: bool,
}

impl ConnTable {
    /// A table of `n` empty slots.
    pub fn new(n: usize) -> ConnTable {
        ConnTable {
            slots: vec![ConnSlot::default(); n],
        }
    }

    /// The slot of `conn_id`, reset for it when it held another connection whose subflows
    /// are all idle; None when another connection is active there.
    pub fn claim(&mut self, conn_id: u64, now_us: u64, gap_us: u64) -> Option<usize> {
        let i = conn_slot(conn_id, self.slots.len());
        let s = &mut self.slots[i];
        if s.valid && s.conn_id == conn_id {
            return Some(i);
        }
        if s.active(now_us, gap_us) {
            return None;
        }
        *s = ConnSlot {
            conn_id,
            valid: true,
            ..ConnSlot::default()
        };
        Some(i)
    }

    /// Choose the hop of a new sub-flowlet of subflow `s` (1-based, at most
    /// [`MAX_SUBFLOWS`]) of the connection in slot `i`, among `hops` (the destination's best
    /// k, best first), only the live ones counting.
    pub fn choose(&mut self, i: usize, s: usize, hops: &[Hop], now_us: u64, ageing_us: u64, gap_us: u64) -> Choice {
        let slot = &mut self.slots[i];
        let mut live = [NO_PORT; super::MAX_BEST_K];
        let mut n = 0;
        for h in hops.iter().filter(|h| h.live(now_us, ageing_us)) {
            live[n] = h.port;
            n += 1;
        }
        let mut c = Choice::default();
        if n == 0 {
            return c;
        }
        for &p in &live[..n] {
            let held = (0..MAX_SUBFLOWS).any(|j| j + 1 != s && slot.holds(j, p, now_us, gap_us));
            if !held {
                c.port = Some(p);
                return c;
            }
            c.skipped += 1;
        }
        c.port = Some(live[usize::from(slot.rr) % n]);
        c.round_robin = true;
        slot.rr = slot.rr.wrapping_add(1);
        c
    }

    /// Subflow `s` (1-based) of the connection in slot `i` sent on `port` at `now_us`.
    pub fn record(&mut self, i: usize, s: usize, port: PortId, now_us: u64) {
        let slot = &mut self.slots[i];
        slot.port[s - 1] = port;
        slot.last_us[s - 1] = now_us;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const GAP: u64 = 100;
    const AGE: u64 = 1000;

    fn hops(ports: &[PortId]) -> Vec<Hop> {
        ports
            .iter()
            .enumerate()
            .map(|(i, &port)| Hop {
                port,
                util: i as u32,
                time_us: 0,
            })
            .collect()
    }

    #[test]
    fn the_second_subflow_avoids_the_hop_the_first_holds() {
        let mut t = ConnTable::new(16);
        let i = t.claim(42, 0, GAP).unwrap();
        let h = hops(&[3, 4]);
        let c1 = t.choose(i, 1, &h, 0, AGE, GAP);
        assert_eq!(c1.port, Some(3));
        t.record(i, 1, 3, 0);
        let c2 = t.choose(i, 2, &h, 10, AGE, GAP);
        assert_eq!((c2.port, c2.skipped), (Some(4), 1));
        t.record(i, 2, 4, 10);
        // Once the first subflow idles past the gap, its hop is free again.
        let c3 = t.choose(i, 2, &h, 10 + GAP, AGE, GAP);
        assert_eq!(c3.port, Some(3));
    }

    #[test]
    fn every_candidate_held_falls_back_to_round_robin() {
        let mut t = ConnTable::new(16);
        let i = t.claim(7, 0, GAP).unwrap();
        let h = hops(&[3, 4]);
        t.record(i, 1, 3, 0);
        t.record(i, 2, 4, 0);
        let a = t.choose(i, 3, &h, 1, AGE, GAP);
        let b = t.choose(i, 3, &h, 1, AGE, GAP);
        assert!(a.round_robin && b.round_robin);
        assert_eq!((a.port, b.port), (Some(3), Some(4)));
    }

    #[test]
    fn an_active_connection_keeps_its_slot_from_another() {
        let mut t = ConnTable::new(1);
        let i = t.claim(1, 0, GAP).unwrap();
        t.record(i, 1, 2, 0);
        assert_eq!(t.claim(2, 50, GAP), None);
        assert_eq!(t.claim(2, GAP, GAP), Some(0));
        assert_eq!(t.slots[0].conn_id, 2);
    }
}
