//! Per-flow hashing (ECMP): the 5-tuple's CRC-32 modulo the number of paths.

use super::{check_paths, ConfigError, PathIndex};
use crate::packet::PacketMeta;

/// ECMP has no registers beyond the path count.
#[derive(Clone, Debug)]
pub struct Ecmp {
    n_paths: u8,
}

impl Ecmp {
    /// ECMP over `n_paths` paths.
    pub fn new(n_paths: usize) -> Result<Ecmp, ConfigError> {
        check_paths(n_paths)?;
        Ok(Ecmp { n_paths: n_paths as u8 })
    }

    /// CRC-32 (IEEE) over src ip, dst ip, protocol, src port, dst port, in network order.
    pub fn flow_hash(meta: &PacketMeta) -> u32 {
        let mut key = [0u8; 13];
        key[0..4].copy_from_slice(&meta.src_ip.to_be_bytes());
        key[4..8].copy_from_slice(&meta.dst_ip.to_be_bytes());
        key[8] = meta.proto;
        key[9..11].copy_from_slice(&meta.src_port.to_be_bytes());
        key[11..13].copy_from_slice(&meta.dst_port.to_be_bytes());
        crc32fast::hash(&key)
    }

    /// ECMP routing's hash at a switch seeded with `seed`: the 5-tuple's CRC-32, then xor the
    /// seed and a multiplicative finaliser (MurmurHash3's `fmix32`). CRC-32 is linear, so a seed
    /// mixed into it only permutes every flow's choice alike, and switches at two tiers would
    /// pick correlated uplinks (hash polarisation); after the finaliser, switches with different
    /// seeds choose as if independently.
    pub fn seeded_hash(meta: &PacketMeta, seed: u32) -> u32 {
        let mut h = Self::flow_hash(meta) ^ seed;
        h ^= h >> 16;
        h = h.wrapping_mul(0x85eb_ca6b);
        h ^= h >> 13;
        h = h.wrapping_mul(0xc2b2_ae35);
        h ^ (h >> 16)
    }

    /// The path of `meta`'s flow.
    #[inline]
    pub fn select(&self, meta: &PacketMeta) -> PathIndex {
        (Self::flow_hash(meta) % u32::from(self.n_paths)) as PathIndex
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_flow_always_takes_the_same_path_and_flows_spread() {
        let e = Ecmp::new(4).unwrap();
        let mut used = [0u32; 4];
        for sport in 0..4000u16 {
            let m = PacketMeta::udp(0x0a00_0001, 0x0a00_0003, sport, 5201, 1512);
            let p = e.select(&m);
            assert_eq!(p, e.select(&m));
            used[usize::from(p)] += 1;
        }
        assert!(used.iter().all(|&u| u > 800), "{used:?}");
    }
}
