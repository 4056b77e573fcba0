//! What MPTCP derives from its keys: a connection's token and initial data sequence number,
//! and the HMACs that authenticate a new subflow (MP_JOIN).
//!
//! The hash follows the protocol version carried in MP_CAPABLE: version 1 (RFC 8684, what Linux
//! speaks) uses SHA-256 and HMAC-SHA256; version 0 (RFC 6824, what MP-HULA was written against)
//! uses SHA-1 and HMAC-SHA1. Keys and nonces enter the hash in network byte order.
//!
//! - token: the most significant 32 bits of the hash of the key (RFC 8684 3.1, 3.2);
//! - IDSN: the least significant 64 bits of the same hash (RFC 8684 3.1);
//! - MP_JOIN: HMAC with key `Key-A ‖ Key-B` over `R-A ‖ R-B`, where A is the end that sends
//!   the HMAC; the SYN/ACK carries its leftmost 64 bits, the third ACK its leftmost 160 bits
//!   (RFC 8684 3.2).

use hmac::{Hmac, Mac};
use sha1::Sha1;
use sha2::{Digest, Sha256};

/// An MPTCP protocol version, which fixes the hash.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum MptcpVersion {
    /// Version 0, RFC 6824: SHA-1.
    V0,
    /// Version 1, RFC 8684: SHA-256.
    V1,
}

impl MptcpVersion {
    /// The version an MP_CAPABLE option's version field names, if known.
    pub fn from_wire(version: u8) -> Option<MptcpVersion> {
        match version {
            0 => Some(MptcpVersion::V0),
            1 => Some(MptcpVersion::V1),
            _ => None,
        }
    }

    /// The version field MP_CAPABLE carries.
    pub fn wire(self) -> u8 {
        match self {
            MptcpVersion::V0 => 0,
            MptcpVersion::V1 => 1,
        }
    }
}

/// The hash of `key` (in network byte order) under `version`: 20 bytes (SHA-1) or 32 (SHA-256).
fn key_digest(version: MptcpVersion, key: u64) -> Vec<u8> {
    let bytes = key.to_be_bytes();
    match version {
        MptcpVersion::V0 => Sha1::digest(bytes).to_vec(),
        MptcpVersion::V1 => Sha256::digest(bytes).to_vec(),
    }
}

/// The token of the connection whose end chose `key`: what its peer's MP_JOIN carries.
pub fn token(version: MptcpVersion, key: u64) -> u32 {
    let d = key_digest(version, key);
    u32::from_be_bytes([d[0], d[1], d[2], d[3]])
}

/// The initial data sequence number of the end that chose `key`.
pub fn idsn(version: MptcpVersion, key: u64) -> u64 {
    let d = key_digest(version, key);
    let tail: [u8; 8] = d[d.len() - 8..].try_into().expect("a digest has at least 8 bytes");
    u64::from_be_bytes(tail)
}

/// The MP_JOIN HMAC sent by end A: key `key_a ‖ key_b`, message `nonce_a ‖ nonce_b`, its
/// leftmost 160 bits (what the third ACK carries; [`join_hmac_truncated`] gives the SYN/ACK's
/// 64). For the SYN/ACK of the passive end B, A is B: pass B's key and nonce first.
pub fn join_hmac(version: MptcpVersion, key_a: u64, key_b: u64, nonce_a: u32, nonce_b: u32) -> [u8; 20] {
    let mut key = [0u8; 16];
    key[..8].copy_from_slice(&key_a.to_be_bytes());
    key[8..].copy_from_slice(&key_b.to_be_bytes());
    let mut msg = [0u8; 8];
    msg[..4].copy_from_slice(&nonce_a.to_be_bytes());
    msg[4..].copy_from_slice(&nonce_b.to_be_bytes());
    let full = match version {
        MptcpVersion::V0 => mac::<Hmac<Sha1>>(&key, &msg),
        MptcpVersion::V1 => mac::<Hmac<Sha256>>(&key, &msg),
    };
    full[..20].try_into().expect("an HMAC has at least 20 bytes")
}

/// The leftmost 64 bits of [`join_hmac`]: what the MP_JOIN SYN/ACK carries.
pub fn join_hmac_truncated(version: MptcpVersion, key_a: u64, key_b: u64, nonce_a: u32, nonce_b: u32) -> u64 {
    let h = join_hmac(version, key_a, key_b, nonce_a, nonce_b);
    u64::from_be_bytes(h[..8].try_into().expect("eight bytes"))
}

fn mac<M: Mac + hmac::digest::KeyInit>(key: &[u8], msg: &[u8]) -> Vec<u8> {
    let mut m = <M as Mac>::new_from_slice(key).expect("HMAC takes a key of any length");
    m.update(msg);
    m.finalize().into_bytes().to_vec()
}

#[cfg(test)]
mod tests {
    use super::*;

    // Reference values computed apart from this code (Python's hashlib and hmac).
    const KEY_A: u64 = 0x0123_4567_89ab_cdef;
    const KEY_B: u64 = 0xfedc_ba98_7654_3210;

    fn hex(s: &str) -> [u8; 20] {
        let v: Vec<u8> = (0..s.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
            .collect();
        v.try_into().unwrap()
    }

    #[test]
    fn token_and_idsn_are_the_two_ends_of_the_key_hash() {
        // sha256(01 23 45 67 89 ab cd ef)
        assert_eq!(token(MptcpVersion::V1, KEY_A), 0x55c5_3f5d);
        assert_eq!(idsn(MptcpVersion::V1, KEY_A), 0x5707_62cd_38be_9818);
        // sha1(01 23 45 67 89 ab cd ef)
        assert_eq!(token(MptcpVersion::V0, KEY_A), 0x0ca2_eadb);
        assert_eq!(idsn(MptcpVersion::V0, KEY_A), 0xe3df_8ee1_21f1_0547);
    }

    #[test]
    fn join_hmacs_follow_the_version() {
        let h1 = join_hmac(MptcpVersion::V1, KEY_A, KEY_B, 0xdead_beef, 0x0bad_cafe);
        let h0 = join_hmac(MptcpVersion::V0, KEY_A, KEY_B, 0xdead_beef, 0x0bad_cafe);
        assert_eq!(
            join_hmac_truncated(MptcpVersion::V1, KEY_A, KEY_B, 0xdead_beef, 0x0bad_cafe),
            u64::from_be_bytes(h1[..8].try_into().unwrap())
        );
        // HMAC-SHA256 / HMAC-SHA1 of (01..ef fe..10) over (de ad be ef 0b ad ca fe), 160 bits.
        assert_eq!(h1, hex("1d76a9fe92f89fe38ff082d114a487d14319c983"));
        assert_eq!(h0, hex("0c8a595346985994b0514bf4d98c4dcaa08213b3"));
    }

    #[test]
    fn the_two_ends_compute_different_hmacs() {
        let a = join_hmac(MptcpVersion::V1, KEY_A, KEY_B, 1, 2);
        let b = join_hmac(MptcpVersion::V1, KEY_B, KEY_A, 2, 1);
        assert_ne!(a, b);
        assert_eq!(MptcpVersion::from_wire(1), Some(MptcpVersion::V1));
        assert_eq!(MptcpVersion::from_wire(2), None);
        assert_eq!(MptcpVersion::V0.wire(), 0);
    }
}
