//! Multipath TCP (RFC 8684) as state machines, growing piece by piece for issue #12: the
//! MP_CAPABLE and MP_JOIN handshakes ([`handshake`]), the packet scheduler that chooses a subflow
//! for each segment ([`scheduler`]), the connection-level
//! send side that maps segments into the data sequence space ([`data_sender`]) and the
//! connection-level reassembly with its DATA_ACK and one receive window ([`reassembly`]). The options'
//! wire format and what derives from the keys (tokens, IDSNs, MP_JOIN HMACs) are in
//! `mpsched_core::mptcp`, where switch programs parse them too; the coupled controllers (LIA,
//! OLIA) are in [`crate::cc`].

pub mod data_sender;
pub mod handshake;
pub mod reassembly;
pub mod scheduler;

#[cfg(test)]
mod tests {
    use super::data_sender::DataSender;
    use super::reassembly::DataReceiver;
    use proptest::prelude::*;

    proptest! {
        /// The two ends agree: what the sender maps over any subflows, arriving in any order,
        /// the receiver delivers whole, and its DATA_ACK acknowledges all of it at the sender.
        #[test]
        fn a_stream_mapped_over_subflows_is_delivered_and_acknowledged(
            idsn in prop_oneof![any::<u64>(), (0u64..100_000).prop_map(|d| u64::MAX - d)],
            lens in proptest::collection::vec((1u32..2000, 0usize..4), 1..50),
            swaps in proptest::collection::vec((any::<u16>(), any::<u16>()), 0..60),
        ) {
            let mut tx = DataSender::new(idsn, 1 << 30);
            let mut rx = DataReceiver::new(idsn, 1 << 30);
            let mut sent: Vec<_> = lens.iter().map(|&(l, sub)| tx.map_new(l, sub).unwrap()).collect();
            for (a, b) in swaps {
                let n = sent.len();
                sent.swap(usize::from(a) % n, usize::from(b) % n);
            }
            let mut last = None;
            for m in &sent {
                last = Some(rx.on_data(m.dsn, m.len));
            }
            let total: u64 = lens.iter().map(|&(l, _)| u64::from(l)).sum();
            let ack = last.unwrap();
            prop_assert_eq!(ack.data_ack, tx.snd_nxt());
            prop_assert_eq!(tx.on_data_ack(ack.data_ack, ack.window_bytes), total);
            prop_assert_eq!(tx.outstanding().count(), 0);
        }
    }
}
