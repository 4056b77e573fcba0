//! Frames of a real kernel MPTCP (v1) handshake and MP_JOIN, captured on Linux 6.18 between two
//! namespaces (Python sockets with IPPROTO_MPTCP, a `subflow` endpoint on the client, dumpcap on
//! the server's veth): `fixtures/kernel-mptcp-v1.pcap` holds the same frames. Client 10.9.0.1 and
//! 10.9.0.3 (the join), server 10.9.0.2:5201. Options as Linux orders them: MSS, SACK-permitted,
//! timestamps, NOP, window scale, MPTCP on SYNs; NOP, NOP, timestamps, MPTCP on the third ACK.

/// The MP_CAPABLE SYN (version 1: no key).
pub const SYN: &str = "3298771ebb1732cee2c034e5080045000040bcc34000400669e00a0900010a090002e4671451fff04a6300000000b002faf014470000020405b40402080a73bfc931000000000103030a1e040101";
/// The MP_CAPABLE SYN/ACK (the server's key).
pub const SYN_ACK: &str = "32cee2c034e53298771ebb17080045000048000040004006269c0a0900020a0900011451e467df04daf3fff04a64d012fe88144f0000020405b40402080a4efb9a7673bfc9310103030a1e0c010152ae31e35a717bdb";
/// The third ACK (MP_CAPABLE with both keys).
pub const ACK: &str = "3298771ebb1732cee2c034e5080045000048bcc44000400669d70a0900010a090002e4671451fff04a64df04daf4d010003f144f00000101080a73bfc9314efb9a761e14010133f919050aed507652ae31e35a717bdb";
/// The MP_JOIN SYN of the second subflow (the server's token).
pub const JOIN_SYN: &str = "3298771ebb1732cee2c034e5080045000048da9a400040064bff0a0900030a090002ce09145177f7d0f800000000d002faf014510000020405b40402080a1d72c263000000000103030a1e0c1001df8c25a0a3bf1a67";
/// The MP_JOIN SYN/ACK.
pub const JOIN_SYN_ACK: &str = "32cee2c034e53298771ebb1708004500004c00004000400626960a0900020a0900031451ce094ced69e477f7d0f9e012fe8814550000020405b40402080a4c11155b1d72c2630103030a1e101000817ded7a1ee6b9be41065744";
