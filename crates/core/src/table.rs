//! Match-action tables filled by a control plane.

use crate::packet::{Ipv4, PortId};

/// A route's `port` with this bit set names an ECMP group (the rest of the bits its index in
/// [`crate::switch::SwitchConfig::ecmp_groups`]) instead of a port, as a P4 route action
/// `set_ecmp_group` beside `set_nhop`.
pub const ECMP_GROUP: PortId = 0x8000;

/// One IPv4 route: `prefix/len -> port`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Route {
    /// Network address (host bits are ignored).
    pub prefix: Ipv4,
    /// Prefix length, 0 to 32.
    pub len: u8,
    /// Egress port, or an ECMP group ([`ECMP_GROUP`] set).
    pub port: PortId,
}

/// An IPv4 longest-prefix-match table, as `ipv4_lpm` in P4 tutorials or a BPF LPM trie.
///
/// Host routes (/32), which are most of a table that routes to every host, sit in an
/// exact-match table, so a lookup that hits one costs one probe however many hosts there are;
/// shorter prefixes are kept longest first and scanned after a miss. The answer is the same as
/// a scan of every entry longest first (a property test holds the two equal).
#[derive(Clone, Debug, Default)]
pub struct Ipv4Lpm {
    hosts: HostTable,
    prefixes: Vec<Route>,
}

/// An exact-match table from address to port: open addressing with linear probing, at most
/// half full, each slot one word (address and port), found by a multiplicative hash. Host
/// addresses come in runs (10.0.0.1, .2, ...), which the hash spreads one slot apart, so a hit
/// is one load and one compare: a forwarding lookup on every packet at every switch, where a
/// general hash map's group probing cost about 6 % of a dumbbell run (docs/performance.md).
#[derive(Clone, Debug, Default)]
struct HostTable {
    /// `address << 16 | port`, or [`HostTable::EMPTY`].
    slots: Vec<u64>,
    len: usize,
}

impl HostTable {
    const EMPTY: u64 = u64::MAX;

    #[inline]
    fn home(&self, ip: Ipv4) -> usize {
        // Fibonacci hashing: the top bits of the product, as many as the table needs.
        let bits = self.slots.len().trailing_zeros();
        (u64::from(ip).wrapping_mul(0x9E37_79B9_7F4A_7C15) >> (64 - bits)) as usize
    }

    #[inline]
    fn get(&self, ip: Ipv4) -> Option<PortId> {
        if self.slots.is_empty() {
            return None;
        }
        let mask = self.slots.len() - 1;
        let mut i = self.home(ip);
        loop {
            let slot = self.slots[i];
            if slot >> 16 == u64::from(ip) {
                return Some(slot as PortId);
            }
            if slot == Self::EMPTY {
                return None;
            }
            i = (i + 1) & mask;
        }
    }

    fn insert(&mut self, ip: Ipv4, port: PortId) {
        if (self.len + 1) * 2 > self.slots.len() {
            self.grow();
        }
        let mask = self.slots.len() - 1;
        let mut i = self.home(ip);
        loop {
            let slot = self.slots[i];
            if slot == Self::EMPTY {
                self.len += 1;
                break;
            }
            if slot >> 16 == u64::from(ip) {
                break;
            }
            i = (i + 1) & mask;
        }
        self.slots[i] = (u64::from(ip) << 16) | u64::from(port);
    }

    /// Remove the entry of `ip`: whether there was one. Rebuilds the table (a control-plane
    /// operation, not a per-packet one), so probe chains stay unbroken.
    fn remove(&mut self, ip: Ipv4) -> bool {
        if self.get(ip).is_none() {
            return false;
        }
        let size = self.slots.len();
        let old = std::mem::replace(&mut self.slots, vec![Self::EMPTY; size]);
        self.len = 0;
        for slot in old
            .into_iter()
            .filter(|&s| s != Self::EMPTY && s >> 16 != u64::from(ip))
        {
            self.insert((slot >> 16) as Ipv4, slot as PortId);
        }
        true
    }

    fn grow(&mut self) {
        let size = (self.slots.len() * 2).max(8);
        let old = std::mem::replace(&mut self.slots, vec![Self::EMPTY; size]);
        self.len = 0;
        for slot in old.into_iter().filter(|&s| s != Self::EMPTY) {
            self.insert((slot >> 16) as Ipv4, slot as PortId);
        }
    }
}

fn mask(len: u8) -> u32 {
    if len == 0 {
        0
    } else {
        u32::MAX << (32 - u32::from(len.min(32)))
    }
}

impl Ipv4Lpm {
    /// An empty table.
    pub fn new() -> Self {
        Self::default()
    }

    /// Insert or replace the route for `prefix/len`.
    pub fn insert(&mut self, route: Route) {
        if route.len >= 32 {
            self.hosts.insert(route.prefix, route.port);
            return;
        }
        let r = Route {
            prefix: route.prefix & mask(route.len),
            ..route
        };
        self.prefixes.retain(|x| !(x.len == r.len && x.prefix == r.prefix));
        let at = self.prefixes.partition_point(|x| x.len >= r.len);
        self.prefixes.insert(at, r);
    }

    /// Remove the route for `prefix/len`: whether there was one.
    pub fn remove(&mut self, prefix: Ipv4, len: u8) -> bool {
        if len >= 32 {
            return self.hosts.remove(prefix);
        }
        let p = prefix & mask(len);
        let before = self.prefixes.len();
        self.prefixes.retain(|x| !(x.len == len && x.prefix == p));
        self.prefixes.len() != before
    }

    /// The egress port for `dst`, longest prefix first.
    #[inline]
    pub fn lookup(&self, dst: Ipv4) -> Option<PortId> {
        if let Some(port) = self.hosts.get(dst) {
            return Some(port);
        }
        self.prefixes
            .iter()
            .find(|r| dst & mask(r.len) == r.prefix)
            .map(|r| r.port)
    }

    /// Number of entries.
    pub fn len(&self) -> usize {
        self.hosts.len + self.prefixes.len()
    }

    /// Whether the table is empty.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn remove_takes_out_one_route_and_keeps_the_others() {
        let mut t = Ipv4Lpm::new();
        for i in 0..20 {
            t.insert(Route {
                prefix: 0x0a00_0000 + i,
                len: 32,
                port: i as PortId,
            });
        }
        t.insert(Route {
            prefix: 0x0a00_0000,
            len: 8,
            port: 99,
        });
        assert!(t.remove(0x0a00_0005, 32));
        assert!(!t.remove(0x0a00_0005, 32));
        assert_eq!(t.lookup(0x0a00_0005), Some(99));
        assert!((0..20)
            .filter(|&i| i != 5)
            .all(|i| t.lookup(0x0a00_0000 + i) == Some(i as PortId)));
        assert!(t.remove(0x0a01_0203, 8), "host bits ignored");
        assert_eq!(t.lookup(0x0a00_0005), None);
        assert_eq!(t.len(), 19);
    }

    #[test]
    fn longest_prefix_wins_regardless_of_insertion_order() {
        let mut t = Ipv4Lpm::new();
        t.insert(Route {
            prefix: 0,
            len: 0,
            port: 9,
        });
        t.insert(Route {
            prefix: 0x0a00_0003,
            len: 32,
            port: 3,
        });
        t.insert(Route {
            prefix: 0x0a00_0000,
            len: 24,
            port: 1,
        });
        assert_eq!(t.lookup(0x0a00_0003), Some(3));
        assert_eq!(t.lookup(0x0a00_0004), Some(1));
        assert_eq!(t.lookup(0x0b00_0004), Some(9));
    }

    #[test]
    fn reinsert_replaces() {
        let mut t = Ipv4Lpm::new();
        t.insert(Route {
            prefix: 0x0a00_0003,
            len: 32,
            port: 3,
        });
        t.insert(Route {
            prefix: 0x0a00_0003,
            len: 32,
            port: 4,
        });
        assert_eq!(t.len(), 1);
        assert_eq!(t.lookup(0x0a00_0003), Some(4));
    }

    proptest::proptest! {
        /// The host table answers as a map does, through growth and collisions, for any
        /// addresses (0.0.0.0 and 255.255.255.255 included) and ports.
        #[test]
        fn host_table_equals_a_map(
            entries in proptest::collection::vec((proptest::prop_oneof![0u32..64, proptest::num::u32::ANY], proptest::num::u16::ANY), 0..600),
            probes in proptest::collection::vec(proptest::prop_oneof![0u32..64, proptest::num::u32::ANY], 1..100),
        ) {
            let mut t = HostTable::default();
            let mut m = std::collections::HashMap::new();
            for &(ip, port) in &entries {
                t.insert(ip, port);
                m.insert(ip, port);
            }
            proptest::prop_assert_eq!(t.len, m.len());
            for ip in probes.iter().chain(m.keys()) {
                proptest::prop_assert_eq!(t.get(*ip), m.get(ip).copied());
            }
        }

        /// The table answers as a scan of every route, longest prefix first, last insert wins.
        #[test]
        fn lookup_equals_a_longest_first_scan(
            routes in proptest::collection::vec((0u32..16, 0u8..=32, 0u16..8), 0..40),
            probes in proptest::collection::vec(0u32..16, 1..40),
        ) {
            // Addresses from a small space (spread over the top and bottom bits) so that
            // routes overlap.
            let addr = |x: u32| (x << 28) | x;
            let mut t = Ipv4Lpm::new();
            let mut all: Vec<Route> = Vec::new();
            for &(a, len, port) in &routes {
                let r = Route { prefix: addr(a), len, port };
                t.insert(r);
                let m = mask(len);
                all.retain(|x| !(x.len == len && x.prefix & mask(x.len) == r.prefix & m));
                all.push(r);
            }
            for &p in &probes {
                let dst = addr(p);
                let want = all
                    .iter()
                    .filter(|r| dst & mask(r.len) == r.prefix & mask(r.len))
                    .max_by_key(|r| r.len)
                    .map(|r| r.port);
                proptest::prop_assert_eq!(t.lookup(dst), want);
            }
        }
    }
}
