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

/// The outer destination address of subtunnel `j` of tunnel `t` in direction `dir`:
/// `10.250.t.(2 j + dir)`. The switches along the subtunnel's path route it by this address,
/// so each subtunnel keeps to its path.
pub fn subtunnel_addr(t: usize, j: usize, dir: TunnelDir) -> Ipv4 {
    0x0afa_0000 | ((t as u32 & 0xff) << 8) | ((2 * j as u32 + dir as u32) & 0xff)
}
