//! The UDP payloads of rate-controlled flows (`[flow.rate_control]`) on real networks: the
//! data datagrams a paced sender sends, DCQCN's congestion notification packet (CNP) its
//! receiver returns, and a switch's rate feedback (PMQECN's, P4QCN's) to the sender. This
//! module is the specification; `bpf/mpsched.h` repeats the constants and the feedback's layout
//! for eBPF programs (checked against these at build time, `crates/netns/src/layout.rs`), and a
//! P4 program follows the same bytes.
//!
//! Every payload starts with a 4-byte magic naming its kind; all fields are big-endian. A
//! payload may be longer than its kind needs (data datagrams are padded to the flow's packet
//! size; a later version may append fields): readers check the length they need, never more.
//!
//! ```text
//! data, 24 bytes then padding (the receiver counts loss and reordering by `seq` and one-way
//! delay from `sent_ns`, the sender's CLOCK_MONOTONIC, which every namespace of one machine
//! shares):
//!  "MPRD" | reserved u32 (0) | seq u64 | sent_ns u64
//! CNP, 16 bytes, receiver -> sender (the receiver's address and port to the sender's):
//!  "MPCN" | reserved u32 (0) | seq u64 (of the CE-marked datagram that caused it)
//! rate feedback, 16 bytes, switch -> sender (to the data's source address and port; the
//! simulator's feedback is the same 12-byte body as header kind 4, crate::headers):
//!  "MPRF" | queue u8 | reserved u8 | qlen_pkts u16 | measured_kbps u32 | target_kbps u32
//! ```
//!
//! A switch sending feedback should send it from UDP port
//! `mpsched_programs::pmqecn::cp::FEEDBACK_PORT` (50011) as the simulator's does; the sender
//! takes it by its magic, from any address and port.

use crate::headers::{FeedbackHeader, Header, HeaderKind};

/// `"MPRD"`: a data datagram.
pub const DATA_MAGIC: u32 = u32::from_be_bytes(*b"MPRD");
/// `"MPCN"`: a congestion notification packet.
pub const CNP_MAGIC: u32 = u32::from_be_bytes(*b"MPCN");
/// `"MPRF"`: a switch's rate feedback.
pub const FEEDBACK_MAGIC: u32 = u32::from_be_bytes(*b"MPRF");
/// Bytes of a data datagram's header: the smallest payload a paced flow can send.
pub const DATA_HEADER_BYTES: usize = 24;
/// Bytes of a CNP.
pub const CNP_BYTES: usize = 16;
/// Bytes of a rate feedback payload.
pub const FEEDBACK_BYTES: usize = 4 + Header::body_bytes(HeaderKind::Feedback);

/// A data datagram's header.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct DataHeader {
    /// The datagram's number in its flow, from 0.
    pub seq: u64,
    /// When the sender sent it, ns of its CLOCK_MONOTONIC.
    pub sent_ns: u64,
}

/// One of the payloads a paced flow's ends read.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum RateMessage {
    /// A data datagram.
    Data(DataHeader),
    /// A CNP for the datagram numbered `seq`.
    Cnp {
        /// The CE-marked datagram's number.
        seq: u64,
    },
    /// A switch's rate feedback.
    Feedback(FeedbackHeader),
}

/// Why a payload is none of [`RateMessage`]'s.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum RateWireError {
    /// Shorter than its magic, or than its kind needs: the bytes there were.
    Short(usize),
    /// The first four bytes name no kind.
    UnknownMagic(u32),
}

impl std::fmt::Display for RateWireError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            RateWireError::Short(n) => write!(f, "a payload of {n} bytes is too short for its kind"),
            RateWireError::UnknownMagic(m) => write!(f, "unknown magic {m:#010x}"),
        }
    }
}

impl std::error::Error for RateWireError {}

fn be64(b: &[u8], at: usize) -> u64 {
    let mut a = [0u8; 8];
    a.copy_from_slice(&b[at..at + 8]);
    u64::from_be_bytes(a)
}

impl RateMessage {
    /// Read a payload.
    pub fn parse(payload: &[u8]) -> Result<RateMessage, RateWireError> {
        let short = || RateWireError::Short(payload.len());
        let magic = payload.get(..4).ok_or_else(short)?;
        let magic = u32::from_be_bytes([magic[0], magic[1], magic[2], magic[3]]);
        let need = match magic {
            DATA_MAGIC => DATA_HEADER_BYTES,
            CNP_MAGIC => CNP_BYTES,
            FEEDBACK_MAGIC => FEEDBACK_BYTES,
            m => return Err(RateWireError::UnknownMagic(m)),
        };
        if payload.len() < need {
            return Err(short());
        }
        Ok(match magic {
            DATA_MAGIC => RateMessage::Data(DataHeader {
                seq: be64(payload, 8),
                sent_ns: be64(payload, 16),
            }),
            CNP_MAGIC => RateMessage::Cnp { seq: be64(payload, 8) },
            _ => match Header::parse(HeaderKind::Feedback as u8, &payload[4..]) {
                Ok(Header::Feedback(f)) => RateMessage::Feedback(f),
                _ => return Err(short()),
            },
        })
    }
}

impl DataHeader {
    /// Write the header at the start of `datagram` (the rest is left as it is: padding).
    /// Returns false, writing nothing, when `datagram` is shorter than [`DATA_HEADER_BYTES`].
    pub fn write(&self, datagram: &mut [u8]) -> bool {
        let Some(h) = datagram.get_mut(..DATA_HEADER_BYTES) else {
            return false;
        };
        h[..4].copy_from_slice(&DATA_MAGIC.to_be_bytes());
        h[4..8].fill(0);
        h[8..16].copy_from_slice(&self.seq.to_be_bytes());
        h[16..24].copy_from_slice(&self.sent_ns.to_be_bytes());
        true
    }
}

/// A CNP for the CE-marked datagram numbered `seq`.
pub fn cnp(seq: u64) -> [u8; CNP_BYTES] {
    let mut b = [0u8; CNP_BYTES];
    b[..4].copy_from_slice(&CNP_MAGIC.to_be_bytes());
    b[8..].copy_from_slice(&seq.to_be_bytes());
    b
}

/// A rate feedback payload carrying `f`.
pub fn feedback(f: &FeedbackHeader) -> [u8; FEEDBACK_BYTES] {
    let mut body = Vec::with_capacity(FEEDBACK_BYTES);
    body.extend_from_slice(&FEEDBACK_MAGIC.to_be_bytes());
    Header::Feedback(*f).write_body(&mut body);
    let mut b = [0u8; FEEDBACK_BYTES];
    b.copy_from_slice(&body);
    b
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_kind_round_trips_and_has_the_documented_bytes() {
        let mut d = [0xAAu8; 40];
        let h = DataHeader {
            seq: 0x0102_0304_0506_0708,
            sent_ns: 42,
        };
        assert!(h.write(&mut d));
        assert_eq!(&d[..4], b"MPRD");
        assert_eq!(&d[8..16], &[1, 2, 3, 4, 5, 6, 7, 8]);
        assert_eq!(d[24], 0xAA, "the padding is left alone");
        assert_eq!(RateMessage::parse(&d), Ok(RateMessage::Data(h)));

        let c = cnp(7);
        assert_eq!(&c[..4], b"MPCN");
        assert_eq!(RateMessage::parse(&c), Ok(RateMessage::Cnp { seq: 7 }));

        let f = FeedbackHeader {
            queue: 2,
            qlen_pkts: 300,
            measured_kbps: 8_000,
            target_kbps: 2_000,
        };
        let b = feedback(&f);
        assert_eq!(
            b,
            [b'M', b'P', b'R', b'F', 2, 0, 1, 44, 0, 0, 0x1f, 0x40, 0, 0, 0x07, 0xd0]
        );
        assert_eq!(RateMessage::parse(&b), Ok(RateMessage::Feedback(f)));
    }

    #[test]
    fn short_and_unknown_payloads_are_errors_not_panics() {
        assert_eq!(RateMessage::parse(&[]), Err(RateWireError::Short(0)));
        assert_eq!(RateMessage::parse(b"MPR"), Err(RateWireError::Short(3)));
        for n in 0..DATA_HEADER_BYTES {
            let mut d = [0u8; DATA_HEADER_BYTES];
            DataHeader { seq: 1, sent_ns: 2 }.write(&mut d);
            assert!(RateMessage::parse(&d[..n]).is_err(), "{n} bytes");
        }
        assert!(RateMessage::parse(&cnp(1)[..15]).is_err());
        assert!(RateMessage::parse(&feedback(&FeedbackHeader::default())[..15]).is_err());
        assert_eq!(
            RateMessage::parse(b"XXXXyyyyzzzz"),
            Err(RateWireError::UnknownMagic(u32::from_be_bytes(*b"XXXX")))
        );
        assert!(!DataHeader { seq: 0, sent_ns: 0 }.write(&mut [0u8; 23]));
    }

    /// Every prefix and every byte value at every position parses or errs, never panics.
    #[test]
    fn arbitrary_bytes_never_panic() {
        let mut seed = 0x1234_5678_9abc_def0u64;
        for _ in 0..20_000 {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            let n = (seed % 40) as usize;
            let mut b: Vec<u8> = (0..n).map(|i| (seed >> (i % 8 * 8)) as u8).collect();
            if n >= 4 && seed % 3 == 0 {
                b[..4].copy_from_slice([b"MPRD", b"MPCN", b"MPRF"][(seed % 9 / 3) as usize]);
            }
            let _ = RateMessage::parse(&b);
        }
    }
}
