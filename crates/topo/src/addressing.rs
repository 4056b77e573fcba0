//! Addresses the control plane hands out beyond the nodes' own.

use mpsched_core::packet::Ipv4;

/// Direction of a subtunnel: entry to exit as the tunnel declares it, or back.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum TunnelDir {
    /// Entry to exit, along the path.
    Down = 0,
    /// Exit to entry, along the path reversed.
    Up = 1,
}

impl TunnelDir {
    /// The other direction.
    pub fn reverse(self) -> TunnelDir {
        match self {
            TunnelDir::Down => TunnelDir::Up,
            TunnelDir::Up => TunnelDir::Down,
        }
    }
}

/// The block subtunnel addresses come from: 100.64.0.0/10 (RFC 6598's shared address space),
/// which no node's default address uses (hosts 10.0.0.N, switches 10.255.0.N).
pub const SUBTUNNEL_NET: Ipv4 = 0x6440_0000;

/// The prefix length of [`SUBTUNNEL_NET`].
pub const SUBTUNNEL_PREFIX_LEN: u8 = 10;

/// The most subtunnels a tunnel may have (three bits of the address).
pub const MAX_SUBTUNNELS: usize = 8;

/// The most tunnels a network may have: the 22 bits of [`SUBTUNNEL_NET`]'s hosts give each
/// tunnel 16 addresses (8 subtunnels, 2 directions).
pub const MAX_TUNNELS: usize = 1 << 18;

/// The outer destination address of subtunnel `j` of tunnel `t` in direction `dir`:
/// `100.64.0.0 + 16 t + 2 j + dir`, unique for `t` below [`MAX_TUNNELS`] and `j` below
/// [`MAX_SUBTUNNELS`] (larger values wrap; validation refuses them). The switches along the
/// subtunnel's path route it by this address, so each subtunnel keeps to its path, and the
/// node that ends it finds the tunnel and direction again with [`subtunnel_of`].
pub fn subtunnel_addr(t: usize, j: usize, dir: TunnelDir) -> Ipv4 {
    let t = t as u32 & (MAX_TUNNELS as u32 - 1);
    let j = j as u32 & (MAX_SUBTUNNELS as u32 - 1);
    SUBTUNNEL_NET | (t << 4) | (j << 1) | dir as u32
}

/// Whether `ip` lies in [`SUBTUNNEL_NET`] (a node's address there could be mistaken for a
/// subtunnel's).
pub fn is_subtunnel_addr(ip: Ipv4) -> bool {
    ip >> (32 - SUBTUNNEL_PREFIX_LEN) == SUBTUNNEL_NET >> (32 - SUBTUNNEL_PREFIX_LEN)
}

/// The tunnel, subtunnel and direction [`subtunnel_addr`] gave `ip`, if it is one.
pub fn subtunnel_of(ip: Ipv4) -> Option<(usize, usize, TunnelDir)> {
    if !is_subtunnel_addr(ip) {
        return None;
    }
    let low = ip & !(u32::MAX << (32 - SUBTUNNEL_PREFIX_LEN));
    let dir = if low & 1 == 0 { TunnelDir::Down } else { TunnelDir::Up };
    Some(((low >> 4) as usize, ((low >> 1) & 7) as usize, dir))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    #[test]
    fn every_tunnel_subtunnel_and_direction_has_its_own_address_and_maps_back() {
        let mut seen = HashSet::new();
        let ts: std::collections::BTreeSet<usize> = (0..MAX_TUNNELS)
            .step_by(7)
            .chain([65_535, 65_536, MAX_TUNNELS - 1])
            .collect();
        for t in ts {
            for j in 0..MAX_SUBTUNNELS {
                for dir in [TunnelDir::Down, TunnelDir::Up] {
                    let a = subtunnel_addr(t, j, dir);
                    assert!(seen.insert(a), "tunnel {t} subtunnel {j} {dir:?} reuses {a:#x}");
                    assert_eq!(subtunnel_of(a), Some((t, j, dir)));
                }
            }
        }
        // All 65 536 x 8 x 2 of the bound, exhaustively.
        let all: HashSet<Ipv4> = (0..65_536)
            .flat_map(|t| (0..8).flat_map(move |j| [TunnelDir::Down, TunnelDir::Up].map(|d| subtunnel_addr(t, j, d))))
            .collect();
        assert_eq!(all.len(), 65_536 * 16);
    }

    #[test]
    fn the_block_is_100_64_0_0_10_and_default_node_addresses_lie_outside_it() {
        assert_eq!(subtunnel_addr(0, 0, TunnelDir::Down), 0x6440_0000);
        assert_eq!(subtunnel_addr(MAX_TUNNELS - 1, 7, TunnelDir::Up), 0x647f_ffff);
        assert!(!is_subtunnel_addr(0x6480_0000) && !is_subtunnel_addr(0x643f_ffff));
        assert!(!is_subtunnel_addr(0x0a00_0001) && !is_subtunnel_addr(0x0aff_0001));
        assert_eq!(subtunnel_of(0x0a00_0001), None);
    }
}
