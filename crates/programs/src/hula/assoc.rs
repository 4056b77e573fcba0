//! MP-HULA's MPTCP association at a ToR (§2.1 of the paper; README.md, "MPTCP association"):
//! the keys of each handshake (aux table), the connection each subflow belongs to (assoc
//! table), and the tokens new subflows name (token table). Three direct-mapped tables of the
//! same size, indexed by the canonical 5-tuple hash or by the token, each slot tagged.

use mpsched_core::mptcp::crypto::token;
use mpsched_core::mptcp::{MptcpOption, MptcpVersion};
use mpsched_core::wire::tcp_flags::{ACK, SYN};

/// `AuxSlot::flags`: key A known.
pub const AUX_A: u8 = 1;
/// `AuxSlot::flags`: key B known.
pub const AUX_B: u8 = 2;
/// `AuxSlot::flags`: the handshake is MPTCP version 1.
pub const AUX_V1: u8 = 4;

/// Subflow counts saturate here (the connection header's subflow field has 4 bits).
pub const MAX_SUBFLOW_COUNT: u8 = 15;

/// Keys seen in one handshake.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct AuxSlot {
    /// The canonical 5-tuple hash (0 with `flags` 0: empty).
    pub tag: u32,
    /// The client's key.
    pub key_a: u64,
    /// The server's key.
    pub key_b: u64,
    /// [`AUX_A`], [`AUX_B`], [`AUX_V1`]; 0: the slot is free (never used, or its handshake
    /// associated).
    pub flags: u8,
}

/// One subflow's connection.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct AssocSlot {
    /// The subflow's canonical 5-tuple hash.
    pub tag: u32,
    /// The connection: token A << 32 | token B.
    pub conn_id: u64,
    /// Its subflow number (1 for the first).
    pub subflow: u8,
    /// Subflows the connection had when this entry was made (the first subflow's counts
    /// joins).
    pub count: u8,
    /// Whether the slot holds an entry.
    pub valid: bool,
}

/// A token's first subflow.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TokenSlot {
    /// The token.
    pub token: u32,
    /// The assoc slot of the connection's first subflow.
    pub assoc_slot: u32,
    /// Whether the slot holds an entry.
    pub valid: bool,
}

/// What a segment did to the tables, for the counters.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AssocEvent {
    /// Nothing counted.
    None,
    /// A connection was associated.
    Associated,
    /// A subflow joined one.
    Joined,
    /// A join named a token the ToR does not know.
    JoinMissed,
}

/// The three tables.
#[derive(Clone, Debug)]
pub struct Association {
    /// Keys, by canonical hash.
    pub aux: Vec<AuxSlot>,
    /// Connections, by canonical hash.
    pub assoc: Vec<AssocSlot>,
    /// First subflows, by token.
    pub tokens: Vec<TokenSlot>,
}

impl Association {
    /// Tables of `entries` slots each (a power of two).
    pub fn new(entries: usize) -> Association {
        Association {
            aux: vec![AuxSlot::default(); entries],
            assoc: vec![AssocSlot::default(); entries],
            tokens: vec![TokenSlot::default(); entries],
        }
    }

    fn mask(&self) -> usize {
        self.aux.len() - 1
    }

    /// The connection of the subflow whose canonical hash is `key`, if associated: its id,
    /// subflow number and count.
    pub fn lookup(&self, key: u32) -> Option<&AssocSlot> {
        let s = &self.assoc[key as usize & self.mask()];
        (s.valid && s.tag == key).then_some(s)
    }

    /// Read a TCP segment's MPTCP option (`flags`: its TCP flags; `key`: its canonical hash).
    pub fn observe(&mut self, key: u32, flags: u8, option: &MptcpOption) -> AssocEvent {
        let (syn, ack) = (flags & SYN != 0, flags & ACK != 0);
        match *option {
            MptcpOption::Capable {
                version,
                sender_key,
                receiver_key,
                ..
            } => self.capable(key, syn, ack, version, sender_key, receiver_key),
            MptcpOption::JoinSyn { receiver_token, .. } if syn && !ack => self.join(key, receiver_token),
            _ => AssocEvent::None,
        }
    }

    fn capable(
        &mut self,
        key: u32,
        syn: bool,
        ack: bool,
        version: u8,
        sender: Option<u64>,
        receiver: Option<u64>,
    ) -> AssocEvent {
        let slot = key as usize & self.mask();
        let v1 = if version >= 1 { AUX_V1 } else { 0 };
        let aux = &mut self.aux[slot];
        match (syn, ack) {
            (true, false) => {
                *aux = AuxSlot {
                    tag: key,
                    key_a: sender.unwrap_or(0),
                    key_b: 0,
                    flags: v1 | if sender.is_some() { AUX_A } else { 0 },
                };
                AssocEvent::None
            }
            (true, true) => {
                let Some(b) = sender else { return AssocEvent::None };
                if aux.flags == 0 || aux.tag != key {
                    return AssocEvent::None;
                }
                aux.key_b = b;
                aux.flags |= AUX_B;
                if aux.flags & (AUX_A | AUX_V1) == AUX_A {
                    let (a, b) = (aux.key_a, aux.key_b);
                    return self.associate(key, MptcpVersion::V0, a, b);
                }
                AssocEvent::None
            }
            (false, true) => {
                let (Some(a), Some(b)) = (sender, receiver) else {
                    return AssocEvent::None;
                };
                if aux.flags == 0 || aux.tag != key {
                    return AssocEvent::None;
                }
                let v = if aux.flags & AUX_V1 != 0 {
                    MptcpVersion::V1
                } else {
                    MptcpVersion::V0
                };
                if self.lookup(key).is_some() {
                    return AssocEvent::None;
                }
                self.associate(key, v, a, b)
            }
            (false, false) => AssocEvent::None,
        }
    }

    fn associate(&mut self, key: u32, v: MptcpVersion, key_a: u64, key_b: u64) -> AssocEvent {
        let mask = self.mask();
        let slot = key as usize & mask;
        let (ta, tb) = (token(v, key_a), token(v, key_b));
        self.assoc[slot] = AssocSlot {
            tag: key,
            conn_id: (u64::from(ta) << 32) | u64::from(tb),
            subflow: 1,
            count: 1,
            valid: true,
        };
        for t in [ta, tb] {
            self.tokens[t as usize & mask] = TokenSlot {
                token: t,
                assoc_slot: slot as u32,
                valid: true,
            };
        }
        // Done with the keys: the slot is free for the next handshake (flags 0); its other
        // fields stay until then, as a data plane's registers would.
        self.aux[slot].flags = 0;
        AssocEvent::Associated
    }

    fn join(&mut self, key: u32, receiver_token: u32) -> AssocEvent {
        let mask = self.mask();
        let t = self.tokens[receiver_token as usize & mask];
        if !t.valid || t.token != receiver_token {
            return AssocEvent::JoinMissed;
        }
        let first = &mut self.assoc[t.assoc_slot as usize];
        if !first.valid {
            return AssocEvent::JoinMissed;
        }
        first.count = (first.count + 1).min(MAX_SUBFLOW_COUNT);
        let (conn_id, count) = (first.conn_id, first.count);
        self.assoc[key as usize & mask] = AssocSlot {
            tag: key,
            conn_id,
            subflow: count,
            count,
            valid: true,
        };
        AssocEvent::Joined
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn capable(sender: Option<u64>, receiver: Option<u64>, version: u8) -> MptcpOption {
        MptcpOption::Capable {
            version,
            flags: 0x81,
            sender_key: sender,
            receiver_key: receiver,
            data: None,
        }
    }

    fn join(t: u32) -> MptcpOption {
        MptcpOption::JoinSyn {
            backup: false,
            address_id: 1,
            receiver_token: t,
            sender_nonce: 7,
        }
    }

    const A: u64 = 0x1111_2222_3333_4444;
    const B: u64 = 0x5555_6666_7777_8888;

    #[test]
    fn version_0_associates_on_the_syn_ack_and_a_join_takes_subflow_2() {
        let mut t = Association::new(64);
        assert_eq!(t.observe(5, SYN, &capable(Some(A), None, 0)), AssocEvent::None);
        assert_eq!(
            t.observe(5, SYN | ACK, &capable(Some(B), None, 0)),
            AssocEvent::Associated
        );
        let c = *t.lookup(5).unwrap();
        let (ta, tb) = (token(MptcpVersion::V0, A), token(MptcpVersion::V0, B));
        assert_eq!(c.conn_id, (u64::from(ta) << 32) | u64::from(tb));
        assert_eq!((c.subflow, c.count), (1, 1));
        assert_eq!(t.observe(9, SYN, &join(tb)), AssocEvent::Joined);
        let j = *t.lookup(9).unwrap();
        assert_eq!((j.conn_id, j.subflow, j.count), (c.conn_id, 2, 2));
        assert_eq!(t.lookup(5).unwrap().count, 2);
        assert_eq!(t.observe(10, SYN, &join(0xdead)), AssocEvent::JoinMissed);
    }

    #[test]
    fn version_1_associates_on_the_third_ack_with_sha256_tokens() {
        let mut t = Association::new(64);
        t.observe(3, SYN, &capable(None, None, 1));
        assert_eq!(t.observe(3, SYN | ACK, &capable(Some(B), None, 1)), AssocEvent::None);
        assert_eq!(t.observe(3, ACK, &capable(Some(A), Some(B), 1)), AssocEvent::Associated);
        let (ta, tb) = (token(MptcpVersion::V1, A), token(MptcpVersion::V1, B));
        assert_eq!(t.lookup(3).unwrap().conn_id, (u64::from(ta) << 32) | u64::from(tb));
        // A repeated third ACK changes nothing.
        assert_eq!(t.observe(3, ACK, &capable(Some(A), Some(B), 1)), AssocEvent::None);
    }

    #[test]
    fn a_syn_ack_of_another_flow_in_the_slot_is_ignored() {
        let mut t = Association::new(1);
        t.observe(3, SYN, &capable(Some(A), None, 0));
        assert_eq!(t.observe(4, SYN | ACK, &capable(Some(B), None, 0)), AssocEvent::None);
        assert!(t.lookup(3).is_none());
    }
}
