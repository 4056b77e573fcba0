//! Multipath TCP (RFC 8684) as state machines, growing piece by piece for issue #12: the
//! packet scheduler that chooses a subflow for each segment ([`scheduler`]) and the
//! connection-level reassembly with its DATA_ACK and one receive window ([`reassembly`]). The options'
//! wire format and what derives from the keys (tokens, IDSNs, MP_JOIN HMACs) are in
//! `mpsched_core::mptcp`, where switch programs parse them too; the coupled controllers (LIA,
//! OLIA) are in [`crate::cc`].

pub mod reassembly;
pub mod scheduler;
