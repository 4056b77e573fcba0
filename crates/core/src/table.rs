//! Match-action tables filled by a control plane.

use crate::packet::{Ipv4, PortId};

/// One IPv4 route: `prefix/len -> port`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Route {
    /// Network address (host bits are ignored).
    pub prefix: Ipv4,
    /// Prefix length, 0 to 32.
    pub len: u8,
    /// Egress port.
    pub port: PortId,
}

/// An IPv4 longest-prefix-match table, as `ipv4_lpm` in P4 tutorials or a BPF LPM trie.
///
/// Entries are kept sorted longest prefix first, so lookup returns the first match.
#[derive(Clone, Debug, Default)]
pub struct Ipv4Lpm {
    routes: Vec<Route>,
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
        let m = mask(route.len);
        let r = Route {
            prefix: route.prefix & m,
            ..route
        };
        self.routes.retain(|x| !(x.len == r.len && x.prefix == r.prefix));
        let at = self.routes.partition_point(|x| x.len >= r.len);
        self.routes.insert(at, r);
    }

    /// The egress port for `dst`, longest prefix first.
    pub fn lookup(&self, dst: Ipv4) -> Option<PortId> {
        self.routes
            .iter()
            .find(|r| dst & mask(r.len) == r.prefix)
            .map(|r| r.port)
    }

    /// Number of entries.
    pub fn len(&self) -> usize {
        self.routes.len()
    }

    /// Whether the table is empty.
    pub fn is_empty(&self) -> bool {
        self.routes.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
}
