//! Multipath TCP options (RFC 8684; RFC 6824's version 0 shares the wire formats used here):
//! the TCP option of kind 30 and the subtypes a switch program or a capture needs decoded.
//!
//! - `MP_CAPABLE` (the keys a connection's tokens and initial data sequence numbers derive from),
//! - `MP_JOIN` (the token that ties a new subflow to its connection, nonces, HMACs),
//! - `DSS` (data sequence mappings and the data-level acknowledgement),
//! - every other subtype kept as its subtype and length.
//!
//! [`MptcpOption::parse`] reads one option's bytes (kind and length included) and checks every
//! length before reading; [`MptcpOption::encode`] writes the same bytes back, so a parsed option
//! re-encodes to what was on the wire. [`find_in_tcp_options`] walks a TCP header's option
//! block to the MPTCP option.

pub mod crypto;

pub use crypto::{idsn, join_hmac, join_hmac_truncated, token, MptcpVersion};

/// TCP option kind of Multipath TCP.
pub const TCP_OPTION_MPTCP: u8 = 30;

/// MPTCP option subtypes (RFC 8684, section 3).
pub mod subtype {
    /// MP_CAPABLE.
    pub const MP_CAPABLE: u8 = 0x0;
    /// MP_JOIN.
    pub const MP_JOIN: u8 = 0x1;
    /// DSS.
    pub const DSS: u8 = 0x2;
}

/// The kind of MPTCP option a segment carries: what a packet's metadata says, so a program
/// can tell the handshake segments without the option's fields.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum MptcpKind {
    /// MP_CAPABLE.
    Capable,
    /// MP_JOIN.
    Join,
    /// DSS.
    Dss,
    /// Any other subtype.
    Other,
}

/// A DSS mapping: `len` bytes of the data sequence space from `data_seq` sit at relative
/// subflow sequence number `subflow_seq`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct DssMapping {
    /// Data sequence number (the low 32 bits when `dsn64` is false).
    pub data_seq: u64,
    /// Whether the data sequence number travels in 8 octets.
    pub dsn64: bool,
    /// Subflow sequence number, relative to the subflow's initial sequence number.
    pub subflow_seq: u32,
    /// Data-level length in bytes.
    pub len: u16,
    /// DSS checksum, when the connection negotiated checksums.
    pub checksum: Option<u16>,
}

/// One MPTCP option.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum MptcpOption {
    /// MP_CAPABLE: a SYN (no key in version 1), a SYN/ACK (the sender's key), the third ACK
    /// (both keys) or the first data (both keys and the data length, and a checksum).
    Capable {
        /// Protocol version: 0 (RFC 6824, SHA-1) or 1 (RFC 8684, SHA-256).
        version: u8,
        /// Flags byte (A: checksum required, B: extensibility, C: no more addresses to this
        /// address, H: HMAC-SHA256).
        flags: u8,
        /// The key of the segment's sender.
        sender_key: Option<u64>,
        /// The key of the segment's receiver (third ACK and first data).
        receiver_key: Option<u64>,
        /// Data-level length (and checksum) when the option carries data.
        data: Option<(u16, Option<u16>)>,
    },
    /// MP_JOIN on a SYN: which connection the subflow joins.
    JoinSyn {
        /// Backup flag.
        backup: bool,
        /// Address identifier of the sender's address.
        address_id: u8,
        /// The receiver's token: the connection.
        receiver_token: u32,
        /// The sender's random number.
        sender_nonce: u32,
    },
    /// MP_JOIN on a SYN/ACK.
    JoinSynAck {
        /// Backup flag.
        backup: bool,
        /// Address identifier.
        address_id: u8,
        /// The leftmost 64 bits of the sender's HMAC.
        truncated_hmac: u64,
        /// The sender's random number.
        sender_nonce: u32,
    },
    /// MP_JOIN on the third ACK: the sender's full HMAC.
    JoinAck {
        /// HMAC (160 bits).
        hmac: [u8; 20],
    },
    /// DSS: a data-level acknowledgement, a mapping, a DATA_FIN.
    Dss {
        /// Data ACK and whether it travels in 8 octets.
        data_ack: Option<(u64, bool)>,
        /// The mapping.
        mapping: Option<DssMapping>,
        /// DATA_FIN.
        data_fin: bool,
    },
    /// A subtype this module does not decode (ADD_ADDR, REMOVE_ADDR, MP_PRIO, MP_FAIL,
    /// MP_FASTCLOSE, MP_TCPRST, ...): its subtype and option length.
    Other {
        /// Subtype.
        subtype: u8,
        /// Option length in bytes.
        len: u8,
    },
}

/// Why an MPTCP option could not be read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MptcpParseError {
    /// Not option kind 30, or shorter than its header.
    NotMptcp,
    /// The length byte disagrees with the bytes given or with the subtype's formats.
    BadLength,
}

impl std::fmt::Display for MptcpParseError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            MptcpParseError::NotMptcp => "not an MPTCP option",
            MptcpParseError::BadLength => "MPTCP option length does not match its subtype",
        })
    }
}

impl std::error::Error for MptcpParseError {}

fn be16(b: &[u8], at: usize) -> u16 {
    u16::from_be_bytes([b[at], b[at + 1]])
}
fn be32(b: &[u8], at: usize) -> u32 {
    u32::from_be_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]])
}
fn be64(b: &[u8], at: usize) -> u64 {
    (u64::from(be32(b, at)) << 32) | u64::from(be32(b, at + 4))
}

const DSS_HAS_ACK: u8 = 0x01;
const DSS_ACK64: u8 = 0x02;
const DSS_HAS_MAP: u8 = 0x04;
const DSS_DSN64: u8 = 0x08;
const DSS_DATA_FIN: u8 = 0x10;
const JOIN_BACKUP: u8 = 0x01;

impl MptcpOption {
    /// What kind of option this is.
    pub fn kind(&self) -> MptcpKind {
        match self {
            MptcpOption::Capable { .. } => MptcpKind::Capable,
            MptcpOption::JoinSyn { .. } | MptcpOption::JoinSynAck { .. } | MptcpOption::JoinAck { .. } => {
                MptcpKind::Join
            }
            MptcpOption::Dss { .. } => MptcpKind::Dss,
            MptcpOption::Other { .. } => MptcpKind::Other,
        }
    }

    /// Read one option: `opt` holds exactly its bytes, kind and length included. The forms of
    /// a subtype are told apart by length, as RFC 8684 lays them out (MP_JOIN: 12 bytes on a
    /// SYN, 16 on a SYN/ACK, 24 on the third ACK).
    pub fn parse(opt: &[u8]) -> Result<MptcpOption, MptcpParseError> {
        if opt.len() < 3 || opt[0] != TCP_OPTION_MPTCP {
            return Err(MptcpParseError::NotMptcp);
        }
        if usize::from(opt[1]) != opt.len() {
            return Err(MptcpParseError::BadLength);
        }
        let st = opt[2] >> 4;
        match st {
            subtype::MP_CAPABLE => parse_capable(opt),
            subtype::MP_JOIN => parse_join(opt),
            subtype::DSS => parse_dss(opt),
            _ => Ok(MptcpOption::Other {
                subtype: st,
                len: opt[1],
            }),
        }
    }

    /// Encoded length in bytes.
    pub fn len_bytes(&self) -> usize {
        match *self {
            MptcpOption::Capable {
                sender_key,
                receiver_key,
                data,
                ..
            } => {
                4 + 8 * usize::from(sender_key.is_some())
                    + 8 * usize::from(receiver_key.is_some())
                    + data.map_or(0, |(_, c)| 2 + 2 * usize::from(c.is_some()))
            }
            MptcpOption::JoinSyn { .. } => 12,
            MptcpOption::JoinSynAck { .. } => 16,
            MptcpOption::JoinAck { .. } => 24,
            MptcpOption::Dss { data_ack, mapping, .. } => {
                4 + data_ack.map_or(0, |(_, a64)| if a64 { 8 } else { 4 })
                    + mapping.map_or(0, |m| {
                        (if m.dsn64 { 8 } else { 4 }) + 4 + 2 + 2 * usize::from(m.checksum.is_some())
                    })
            }
            MptcpOption::Other { len, .. } => usize::from(len),
        }
    }

    /// Append the option's bytes (kind and length included) to `out`. An [`MptcpOption::Other`]
    /// is written as its header followed by zeros.
    pub fn encode(&self, out: &mut Vec<u8>) {
        let start = out.len();
        out.extend_from_slice(&[TCP_OPTION_MPTCP, self.len_bytes() as u8]);
        match *self {
            MptcpOption::Capable {
                version,
                flags,
                sender_key,
                receiver_key,
                data,
            } => {
                out.extend_from_slice(&[(subtype::MP_CAPABLE << 4) | (version & 0x0f), flags]);
                for k in [sender_key, receiver_key].into_iter().flatten() {
                    out.extend_from_slice(&k.to_be_bytes());
                }
                if let Some((len, csum)) = data {
                    out.extend_from_slice(&len.to_be_bytes());
                    if let Some(c) = csum {
                        out.extend_from_slice(&c.to_be_bytes());
                    }
                }
            }
            MptcpOption::JoinSyn {
                backup,
                address_id,
                receiver_token,
                sender_nonce,
            } => {
                out.extend_from_slice(&[(subtype::MP_JOIN << 4) | u8::from(backup), address_id]);
                out.extend_from_slice(&receiver_token.to_be_bytes());
                out.extend_from_slice(&sender_nonce.to_be_bytes());
            }
            MptcpOption::JoinSynAck {
                backup,
                address_id,
                truncated_hmac,
                sender_nonce,
            } => {
                out.extend_from_slice(&[(subtype::MP_JOIN << 4) | u8::from(backup), address_id]);
                out.extend_from_slice(&truncated_hmac.to_be_bytes());
                out.extend_from_slice(&sender_nonce.to_be_bytes());
            }
            MptcpOption::JoinAck { hmac } => {
                out.extend_from_slice(&[subtype::MP_JOIN << 4, 0]);
                out.extend_from_slice(&hmac);
            }
            MptcpOption::Dss {
                data_ack,
                mapping,
                data_fin,
            } => encode_dss(data_ack, mapping, data_fin, out),
            MptcpOption::Other { subtype, len } => {
                out.push(subtype << 4);
                out.resize(start + usize::from(len).max(3), 0);
            }
        }
        debug_assert_eq!(out.len() - start, self.len_bytes().max(3));
    }
}

fn parse_capable(opt: &[u8]) -> Result<MptcpOption, MptcpParseError> {
    let (version, flags) = (opt[2] & 0x0f, *opt.get(3).ok_or(MptcpParseError::BadLength)?);
    let (sender_key, receiver_key, data) = match opt.len() {
        4 => (None, None, None),
        12 => (Some(be64(opt, 4)), None, None),
        20 => (Some(be64(opt, 4)), Some(be64(opt, 12)), None),
        22 => (Some(be64(opt, 4)), Some(be64(opt, 12)), Some((be16(opt, 20), None))),
        24 => (
            Some(be64(opt, 4)),
            Some(be64(opt, 12)),
            Some((be16(opt, 20), Some(be16(opt, 22)))),
        ),
        _ => return Err(MptcpParseError::BadLength),
    };
    Ok(MptcpOption::Capable {
        version,
        flags,
        sender_key,
        receiver_key,
        data,
    })
}

fn parse_join(opt: &[u8]) -> Result<MptcpOption, MptcpParseError> {
    let backup = opt[2] & JOIN_BACKUP != 0;
    match opt.len() {
        12 => Ok(MptcpOption::JoinSyn {
            backup,
            address_id: opt[3],
            receiver_token: be32(opt, 4),
            sender_nonce: be32(opt, 8),
        }),
        16 => Ok(MptcpOption::JoinSynAck {
            backup,
            address_id: opt[3],
            truncated_hmac: be64(opt, 4),
            sender_nonce: be32(opt, 12),
        }),
        24 => {
            let mut hmac = [0; 20];
            hmac.copy_from_slice(&opt[4..24]);
            Ok(MptcpOption::JoinAck { hmac })
        }
        _ => Err(MptcpParseError::BadLength),
    }
}

fn parse_dss(opt: &[u8]) -> Result<MptcpOption, MptcpParseError> {
    let flags = *opt.get(3).ok_or(MptcpParseError::BadLength)?;
    let (has_ack, ack64) = (flags & DSS_HAS_ACK != 0, flags & DSS_ACK64 != 0);
    let (has_map, dsn64) = (flags & DSS_HAS_MAP != 0, flags & DSS_DSN64 != 0);
    let ack_bytes = if !has_ack {
        0
    } else if ack64 {
        8
    } else {
        4
    };
    let map_bytes = if !has_map {
        0
    } else if dsn64 {
        8 + 4 + 2
    } else {
        4 + 4 + 2
    };
    // The flags fix the length, but for the mapping's checksum: there exactly when two more
    // bytes are.
    let bare = 4 + ack_bytes + map_bytes;
    let with_checksum = has_map && opt.len() == bare + 2;
    if opt.len() != bare && !with_checksum {
        return Err(MptcpParseError::BadLength);
    }
    let data_ack = has_ack.then(|| (if ack64 { be64(opt, 4) } else { u64::from(be32(opt, 4)) }, ack64));
    let mapping = has_map.then(|| {
        let at = 4 + ack_bytes;
        let (data_seq, at) = if dsn64 {
            (be64(opt, at), at + 8)
        } else {
            (u64::from(be32(opt, at)), at + 4)
        };
        DssMapping {
            data_seq,
            dsn64,
            subflow_seq: be32(opt, at),
            len: be16(opt, at + 4),
            checksum: with_checksum.then(|| be16(opt, at + 6)),
        }
    });
    Ok(MptcpOption::Dss {
        data_ack,
        mapping,
        data_fin: flags & DSS_DATA_FIN != 0,
    })
}

fn encode_dss(data_ack: Option<(u64, bool)>, mapping: Option<DssMapping>, data_fin: bool, out: &mut Vec<u8>) {
    let mut flags = 0;
    if let Some((_, a64)) = data_ack {
        flags |= DSS_HAS_ACK | if a64 { DSS_ACK64 } else { 0 };
    }
    if let Some(m) = mapping {
        flags |= DSS_HAS_MAP | if m.dsn64 { DSS_DSN64 } else { 0 };
    }
    if data_fin {
        flags |= DSS_DATA_FIN;
    }
    out.extend_from_slice(&[subtype::DSS << 4, flags]);
    if let Some((ack, a64)) = data_ack {
        if a64 {
            out.extend_from_slice(&ack.to_be_bytes());
        } else {
            out.extend_from_slice(&(ack as u32).to_be_bytes());
        }
    }
    if let Some(m) = mapping {
        if m.dsn64 {
            out.extend_from_slice(&m.data_seq.to_be_bytes());
        } else {
            out.extend_from_slice(&(m.data_seq as u32).to_be_bytes());
        }
        out.extend_from_slice(&m.subflow_seq.to_be_bytes());
        out.extend_from_slice(&m.len.to_be_bytes());
        if let Some(c) = m.checksum {
            out.extend_from_slice(&c.to_be_bytes());
        }
    }
}

/// The MPTCP option in a TCP header's option block (the bytes after the fixed 20-byte header),
/// if there is one: None when there is none, an error when the block or the option is
/// malformed. The first MPTCP option counts, as a segment carries at most one of each kind
/// that matters here.
pub fn find_in_tcp_options(options: &[u8]) -> Option<Result<MptcpOption, MptcpParseError>> {
    let mut at = 0;
    while at < options.len() {
        match options[at] {
            0 => return None, // end of option list
            1 => at += 1,     // no-operation
            kind => {
                let len = usize::from(*options.get(at + 1)?);
                if len < 2 || at + len > options.len() {
                    return (kind == TCP_OPTION_MPTCP).then_some(Err(MptcpParseError::BadLength));
                }
                if kind == TCP_OPTION_MPTCP {
                    return Some(MptcpOption::parse(&options[at..at + len]));
                }
                at += len;
            }
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// An MP_CAPABLE SYN/ACK as Linux 6.x sends it (version 1, flag H, the sender's key).
    #[test]
    fn parses_a_linux_syn_ack_mp_capable() {
        let bytes = [30, 12, 0x01, 0x01, 0xde, 0xad, 0xbe, 0xef, 0x01, 0x02, 0x03, 0x04];
        let o = MptcpOption::parse(&bytes).unwrap();
        assert_eq!(
            o,
            MptcpOption::Capable {
                version: 1,
                flags: 0x01,
                sender_key: Some(0xdead_beef_0102_0304),
                receiver_key: None,
                data: None
            }
        );
        let mut out = Vec::new();
        o.encode(&mut out);
        assert_eq!(out, bytes);
    }

    #[test]
    fn finds_the_option_behind_others_in_a_tcp_option_block() {
        let mut block = vec![2, 4, 0x05, 0xb4, 1, 1, 8, 10, 0, 0, 0, 1, 0, 0, 0, 0];
        MptcpOption::JoinSyn {
            backup: false,
            address_id: 2,
            receiver_token: 0x1234_5678,
            sender_nonce: 9,
        }
        .encode(&mut block);
        match find_in_tcp_options(&block) {
            Some(Ok(MptcpOption::JoinSyn { receiver_token, .. })) => assert_eq!(receiver_token, 0x1234_5678),
            other => panic!("{other:?}"),
        }
        assert_eq!(find_in_tcp_options(&block[..16]), None, "no MPTCP option");
        assert_eq!(
            find_in_tcp_options(&block[..20]),
            Some(Err(MptcpParseError::BadLength)),
            "a truncated MPTCP option is an error"
        );
    }

    #[test]
    fn wrong_lengths_are_errors() {
        assert_eq!(
            MptcpOption::parse(&[30, 8, 0x01, 0, 0, 0, 0, 0]),
            Err(MptcpParseError::BadLength)
        );
        assert_eq!(
            MptcpOption::parse(&[30, 13, 0x10, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]),
            Err(MptcpParseError::BadLength)
        );
        assert_eq!(
            MptcpOption::parse(&[30, 4, 0x20, DSS_HAS_ACK]),
            Err(MptcpParseError::BadLength)
        );
        assert_eq!(MptcpOption::parse(&[2, 4, 5, 180]), Err(MptcpParseError::NotMptcp));
    }

    fn any_option() -> impl Strategy<Value = MptcpOption> {
        let key = proptest::option::of(any::<u64>());
        let capable = (
            0u8..2,
            any::<u8>(),
            key,
            any::<u64>(),
            proptest::option::of((any::<u16>(), proptest::option::of(any::<u16>()))),
        )
            .prop_map(|(version, flags, sk, rk, data)| {
                // Keys and data come in the formats' order: none, sender's, both (+ data).
                let (sender_key, receiver_key, data) = match (sk, data) {
                    (None, _) => (None, None, None),
                    (Some(s), None) => (Some(s), None, None),
                    (Some(s), d) => (Some(s), Some(rk), d),
                };
                MptcpOption::Capable {
                    version,
                    flags,
                    sender_key,
                    receiver_key,
                    data,
                }
            });
        let join = prop_oneof![
            (any::<bool>(), any::<u8>(), any::<u32>(), any::<u32>()).prop_map(
                |(backup, address_id, receiver_token, sender_nonce)| {
                    MptcpOption::JoinSyn {
                        backup,
                        address_id,
                        receiver_token,
                        sender_nonce,
                    }
                }
            ),
            (any::<bool>(), any::<u8>(), any::<u64>(), any::<u32>()).prop_map(
                |(backup, address_id, truncated_hmac, sender_nonce)| {
                    MptcpOption::JoinSynAck {
                        backup,
                        address_id,
                        truncated_hmac,
                        sender_nonce,
                    }
                }
            ),
            any::<[u8; 20]>().prop_map(|hmac| MptcpOption::JoinAck { hmac }),
        ];
        let mapping = (
            any::<u64>(),
            any::<bool>(),
            any::<u32>(),
            any::<u16>(),
            proptest::option::of(any::<u16>()),
        )
            .prop_map(|(dsn, dsn64, subflow_seq, len, checksum)| DssMapping {
                data_seq: if dsn64 { dsn } else { dsn & 0xffff_ffff },
                dsn64,
                subflow_seq,
                len,
                checksum,
            });
        let dss = (
            proptest::option::of((any::<u64>(), any::<bool>())),
            proptest::option::of(mapping),
            any::<bool>(),
        )
            .prop_map(|(ack, mapping, data_fin)| MptcpOption::Dss {
                data_ack: ack.map(|(a, a64)| (if a64 { a } else { a & 0xffff_ffff }, a64)),
                mapping,
                data_fin,
            });
        prop_oneof![capable, join, dss]
    }

    proptest! {
        #[test]
        fn every_option_round_trips(o in any_option()) {
            let mut out = Vec::new();
            o.encode(&mut out);
            prop_assert_eq!(out.len(), o.len_bytes());
            prop_assert_eq!(MptcpOption::parse(&out), Ok(o));
        }

        #[test]
        fn parsing_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..48)) {
            let _ = MptcpOption::parse(&bytes);
            let _ = find_in_tcp_options(&bytes);
        }
    }
}
