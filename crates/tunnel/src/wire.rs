//! The tunnel's messages between its two ends, as bytes: data, acknowledgements and keepalives.
//!
//! Every message travels in one UDP datagram on one path. The datagram's first bytes (its kind,
//! the path and a packet number, see [`crate::seal`] for the daemon's authenticated layout) say
//! which message follows; this module encodes what follows. All integers are big-endian.
//!
//! ```text
//! Data (kind 1), 12 bytes, then the inner IP packet:
//!   0       4        8          12
//!   | path_seq | tunnel_seq | sent_us | inner IP packet ...
//!
//! Ack (kind 2), 16 bytes:
//!   0          4           8         12             16
//!   | highest_seq | received | echo_us | ack_delay_us |
//!
//! Keepalive (kind 3), 12 bytes:
//!   0       4        8            12
//!   | path_seq | sent_us | tunnel_next |
//! ```
//!
//! - `path_seq`: the sender's sequence number on this path (data and keepalives share it), so
//!   the receiver's acknowledgement says what this path delivered and lost.
//! - `tunnel_seq`: the order the packet entered the tunnel (one counter per direction across
//!   all paths): the receiver's reordering buffer restores it.
//! - `sent_us`: the sender's clock in microseconds when it sent the message (wrapping u32, 71
//!   minutes; only differences are used).
//! - `tunnel_next`: the `tunnel_seq` the sender's next data packet will carry. Paths deliver in
//!   order, so when a keepalive arrives every packet sent before it on its path has arrived or
//!   is lost: the receiver's reordering buffer need not wait for numbers below it on that path.
//! - An ack, sent back on the path it acknowledges: the highest `path_seq` received, how many
//!   messages the path delivered in all (wrapping u32), the `sent_us` of the highest one and how
//!   long the receiver held it before acknowledging. The sender's RTT sample is
//!   `now - echo_us - ack_delay_us`; its loss estimate is `highest_seq + 1 - received`.
//!
//! Sequence numbers are 32 bits on the wire and 64 bits in the state machines:
//! [`extend_seq`] recovers the 64-bit number nearest to one already known.

/// Kind of a data message.
pub const KIND_DATA: u8 = 1;
/// Kind of an acknowledgement.
pub const KIND_ACK: u8 = 2;
/// Kind of a keepalive.
pub const KIND_KEEPALIVE: u8 = 3;

/// A malformed message.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WireError {
    /// Fewer bytes than the message's header.
    Truncated,
    /// A kind this version does not know.
    UnknownKind(u8),
}

impl std::fmt::Display for WireError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            WireError::Truncated => write!(f, "message shorter than its header"),
            WireError::UnknownKind(k) => write!(f, "unknown message kind {k}"),
        }
    }
}

impl std::error::Error for WireError {}

/// The header before an inner packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DataHeader {
    /// Sequence number on the path (low 32 bits).
    pub path_seq: u32,
    /// Order of entry into the tunnel (low 32 bits).
    pub tunnel_seq: u32,
    /// Sender's clock at sending, microseconds (wrapping).
    pub sent_us: u32,
}

impl DataHeader {
    /// Encoded size.
    pub const BYTES: usize = 12;

    /// Append the header to `out`.
    pub fn encode(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.to_bytes());
    }

    /// The header's bytes (for writing in front of a packet already in a buffer).
    pub fn to_bytes(&self) -> [u8; Self::BYTES] {
        let mut b = [0; Self::BYTES];
        b[..4].copy_from_slice(&self.path_seq.to_be_bytes());
        b[4..8].copy_from_slice(&self.tunnel_seq.to_be_bytes());
        b[8..].copy_from_slice(&self.sent_us.to_be_bytes());
        b
    }

    /// The header at the start of `bytes` and the inner packet after it.
    pub fn decode(bytes: &[u8]) -> Result<(DataHeader, &[u8]), WireError> {
        let [a, b, c] = words::<3>(bytes)?;
        let h = DataHeader {
            path_seq: a,
            tunnel_seq: b,
            sent_us: c,
        };
        Ok((h, &bytes[Self::BYTES..]))
    }
}

/// An acknowledgement of one path.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct Ack {
    /// Highest path sequence number received (low 32 bits).
    pub highest_seq: u32,
    /// Messages received on the path in all (wrapping).
    pub received: u32,
    /// `sent_us` of the message numbered `highest_seq`.
    pub echo_us: u32,
    /// Microseconds between that message's arrival and this acknowledgement.
    pub ack_delay_us: u32,
}

impl Ack {
    /// Encoded size.
    pub const BYTES: usize = 16;

    /// Append the acknowledgement to `out`.
    pub fn encode(&self, out: &mut Vec<u8>) {
        for w in [self.highest_seq, self.received, self.echo_us, self.ack_delay_us] {
            out.extend_from_slice(&w.to_be_bytes());
        }
    }

    /// The acknowledgement in `bytes` (trailing bytes are ignored, for later versions).
    pub fn decode(bytes: &[u8]) -> Result<Ack, WireError> {
        let [a, b, c, d] = words::<4>(bytes)?;
        Ok(Ack {
            highest_seq: a,
            received: b,
            echo_us: c,
            ack_delay_us: d,
        })
    }
}

/// A keepalive: a message that only asks to be acknowledged, so an idle path is measured and a
/// dead one noticed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Keepalive {
    /// Sequence number on the path (low 32 bits).
    pub path_seq: u32,
    /// Sender's clock at sending, microseconds (wrapping).
    pub sent_us: u32,
    /// The tunnel sequence number of the sender's next data packet (low 32 bits).
    pub tunnel_next: u32,
}

impl Keepalive {
    /// Encoded size.
    pub const BYTES: usize = 12;

    /// Append the keepalive to `out`.
    pub fn encode(&self, out: &mut Vec<u8>) {
        for w in [self.path_seq, self.sent_us, self.tunnel_next] {
            out.extend_from_slice(&w.to_be_bytes());
        }
    }

    /// The keepalive in `bytes`.
    pub fn decode(bytes: &[u8]) -> Result<Keepalive, WireError> {
        let [a, b, c] = words::<3>(bytes)?;
        Ok(Keepalive {
            path_seq: a,
            sent_us: b,
            tunnel_next: c,
        })
    }
}

/// A decoded message.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Message<'a> {
    /// An inner packet.
    Data(DataHeader, &'a [u8]),
    /// An acknowledgement.
    Ack(Ack),
    /// A keepalive.
    Keepalive(Keepalive),
}

impl<'a> Message<'a> {
    /// Decode the body of a message of `kind`.
    pub fn decode(kind: u8, body: &'a [u8]) -> Result<Message<'a>, WireError> {
        match kind {
            KIND_DATA => DataHeader::decode(body).map(|(h, p)| Message::Data(h, p)),
            KIND_ACK => Ack::decode(body).map(Message::Ack),
            KIND_KEEPALIVE => Keepalive::decode(body).map(Message::Keepalive),
            k => Err(WireError::UnknownKind(k)),
        }
    }
}

/// The first `N` big-endian u32 words of `bytes`.
fn words<const N: usize>(bytes: &[u8]) -> Result<[u32; N], WireError> {
    let mut w = [0u32; N];
    for (i, x) in w.iter_mut().enumerate() {
        let b = bytes.get(4 * i..4 * i + 4).ok_or(WireError::Truncated)?;
        *x = u32::from_be_bytes([b[0], b[1], b[2], b[3]]);
    }
    Ok(w)
}

/// The 64-bit sequence number whose low 32 bits are `wire` and which is nearest to `near`
/// (a number already known: the highest received, or the next expected). Numbers below zero
/// are not representable, so near the start the answer is the non-negative candidate.
pub fn extend_seq(wire: u32, near: u64) -> u64 {
    const HALF: u64 = 1 << 31;
    let base = near & !0xffff_ffff;
    let candidate = base | u64::from(wire);
    if candidate + HALF < near {
        candidate + (1 << 32)
    } else if candidate > near + HALF && candidate >= 1 << 32 {
        candidate - (1 << 32)
    } else {
        candidate
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn each_message_decodes_to_what_was_encoded() {
        let d = DataHeader {
            path_seq: 7,
            tunnel_seq: 0xdead_beef,
            sent_us: 3,
        };
        let mut b = Vec::new();
        d.encode(&mut b);
        b.extend_from_slice(b"inner");
        assert_eq!(
            Message::decode(KIND_DATA, &b),
            Ok(Message::Data(d, b"inner".as_slice()))
        );
        let a = Ack {
            highest_seq: 1,
            received: 2,
            echo_us: 3,
            ack_delay_us: 4,
        };
        b.clear();
        a.encode(&mut b);
        assert_eq!(b.len(), Ack::BYTES);
        assert_eq!(Message::decode(KIND_ACK, &b), Ok(Message::Ack(a)));
        let k = Keepalive {
            path_seq: 9,
            sent_us: 10,
            tunnel_next: 11,
        };
        b.clear();
        k.encode(&mut b);
        assert_eq!(Message::decode(KIND_KEEPALIVE, &b), Ok(Message::Keepalive(k)));
        assert_eq!(Message::decode(9, &b), Err(WireError::UnknownKind(9)));
    }

    #[test]
    fn short_bodies_are_truncated() {
        assert_eq!(Message::decode(KIND_DATA, &[0; 11]), Err(WireError::Truncated));
        assert_eq!(Message::decode(KIND_ACK, &[0; 15]), Err(WireError::Truncated));
        assert_eq!(Message::decode(KIND_KEEPALIVE, &[0; 11]), Err(WireError::Truncated));
        assert!(
            Message::decode(KIND_DATA, &[0; 12]).is_ok(),
            "an empty inner packet decodes"
        );
    }

    #[test]
    fn sequence_numbers_extend_across_the_wrap() {
        assert_eq!(extend_seq(5, 0), 5);
        assert_eq!(extend_seq(0xffff_fff0, 3), 0xffff_fff0, "no negative numbers");
        assert_eq!(extend_seq(2, 0xffff_fff0), 0x1_0000_0002);
        assert_eq!(extend_seq(0xffff_fff0, 0x1_0000_0002), 0xffff_fff0);
        assert_eq!(extend_seq(7, 0x5_0000_0009), 0x5_0000_0007);
    }

    proptest! {
        #[test]
        fn extension_inverts_truncation_within_half_the_space(
            near in 0u64..(1 << 50),
            delta in -(1i64 << 31) + 1..(1i64 << 31),
        ) {
            let seq = near as i64 + delta;
            prop_assume!(seq >= 0);
            prop_assert_eq!(extend_seq(seq as u32, near), seq as u64);
        }

        #[test]
        fn any_bytes_decode_or_fail_without_panicking(kind: u8, body in proptest::collection::vec(any::<u8>(), 0..64)) {
            let _ = Message::decode(kind, &body);
        }
    }
}
