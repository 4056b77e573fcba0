//! The MPTCP handshakes as state machines (RFC 8684 3.1 and 3.2): MP_CAPABLE, which exchanges
//! the two ends' keys, and MP_JOIN, which ties a new subflow to the connection by the peer's
//! token and authenticates it with HMACs of the keys and two nonces. Keys and nonces come from
//! the caller (the simulator draws them from its seeded generator), so a run stays a function of
//! its seed. The options are `mpsched_core::mptcp`'s, so what these produce is what a switch
//! program parses and a capture shows.

use mpsched_core::mptcp::{idsn, join_hmac, join_hmac_truncated, token, MptcpOption, MptcpVersion};

/// Why a handshake segment was refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HandshakeError {
    /// The segment carries no MPTCP option of the kind this step needs.
    Unexpected,
    /// The peer speaks another protocol version.
    Version,
    /// The third ACK echoed keys other than the two exchanged.
    KeyMismatch,
    /// An MP_JOIN names a token that is not this connection's.
    UnknownToken,
    /// An MP_JOIN HMAC does not match the keys and nonces.
    BadHmac,
}

/// What an established connection derives from the two keys.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ConnectionKeys {
    /// Protocol version (it fixes the hash).
    pub version: MptcpVersion,
    /// This end's key.
    pub local_key: u64,
    /// The peer's key.
    pub remote_key: u64,
}

impl ConnectionKeys {
    /// This end's token: what the peer's MP_JOINs carry.
    pub fn local_token(&self) -> u32 {
        token(self.version, self.local_key)
    }
    /// The peer's token: what this end's MP_JOINs carry.
    pub fn remote_token(&self) -> u32 {
        token(self.version, self.remote_key)
    }
    /// This end's initial data sequence number.
    pub fn local_idsn(&self) -> u64 {
        idsn(self.version, self.local_key)
    }
    /// The peer's initial data sequence number.
    pub fn remote_idsn(&self) -> u64 {
        idsn(self.version, self.remote_key)
    }
}

/// MP_CAPABLE's flags byte: H (HMAC-SHA256 in version 1, HMAC-SHA1 in version 0), no checksums.
const CAPABLE_FLAGS: u8 = 0x01;

fn capable(version: MptcpVersion, sender_key: Option<u64>, receiver_key: Option<u64>) -> MptcpOption {
    MptcpOption::Capable {
        version: version.wire(),
        flags: CAPABLE_FLAGS,
        sender_key,
        receiver_key,
        data: None,
    }
}

/// The keys an MP_CAPABLE carries, after checking its version.
fn capable_keys(version: MptcpVersion, opt: &MptcpOption) -> Result<(Option<u64>, Option<u64>), HandshakeError> {
    match *opt {
        MptcpOption::Capable {
            version: v,
            sender_key,
            receiver_key,
            ..
        } if v == version.wire() => Ok((sender_key, receiver_key)),
        MptcpOption::Capable { .. } => Err(HandshakeError::Version),
        _ => Err(HandshakeError::Unexpected),
    }
}

/// The active opener's MP_CAPABLE: its SYN, then its third ACK once the SYN/ACK brings the
/// peer's key.
#[derive(Clone, Copy, Debug)]
pub struct CapableClient {
    version: MptcpVersion,
    local_key: u64,
}

impl CapableClient {
    /// A client with its key.
    pub fn new(version: MptcpVersion, local_key: u64) -> Self {
        CapableClient { version, local_key }
    }

    /// The protocol version it speaks.
    pub fn version(&self) -> MptcpVersion {
        self.version
    }

    /// The SYN's option: version 1 sends no key on the SYN, version 0 sends its own.
    pub fn syn(&self) -> MptcpOption {
        let key = (self.version == MptcpVersion::V0).then_some(self.local_key);
        capable(self.version, key, None)
    }

    /// The SYN/ACK arrived: the third ACK's option (both keys) and the connection's keys.
    pub fn on_syn_ack(&self, opt: &MptcpOption) -> Result<(MptcpOption, ConnectionKeys), HandshakeError> {
        let (peer, _) = capable_keys(self.version, opt)?;
        let remote_key = peer.ok_or(HandshakeError::Unexpected)?;
        let ack = capable(self.version, Some(self.local_key), Some(remote_key));
        Ok((
            ack,
            ConnectionKeys {
                version: self.version,
                local_key: self.local_key,
                remote_key,
            },
        ))
    }
}

impl CapableClient {
    /// Version 1's option on the first data segment (RFC 8684 3.1): both keys again, since the
    /// third ACK may be lost, and the data-level length of the segment's payload.
    pub fn first_data(&self, remote_key: u64, len: u16) -> MptcpOption {
        MptcpOption::Capable {
            version: self.version.wire(),
            flags: CAPABLE_FLAGS,
            sender_key: Some(self.local_key),
            receiver_key: Some(remote_key),
            data: Some((len, None)),
        }
    }
}

/// The passive opener's MP_CAPABLE: its SYN/ACK, then the check of the third ACK.
#[derive(Clone, Copy, Debug)]
pub struct CapableServer {
    version: MptcpVersion,
    local_key: u64,
}

impl CapableServer {
    /// A server with its key.
    pub fn new(version: MptcpVersion, local_key: u64) -> Self {
        CapableServer { version, local_key }
    }

    /// The SYN arrived: the SYN/ACK's option (this end's key).
    pub fn on_syn(&self, opt: &MptcpOption) -> Result<MptcpOption, HandshakeError> {
        capable_keys(self.version, opt)?;
        Ok(capable(self.version, Some(self.local_key), None))
    }

    /// Version 0's SYN carries the client's key: the connection's keys from it, if it does.
    pub fn keys_from_syn(&self, opt: &MptcpOption) -> Option<ConnectionKeys> {
        let (sender, _) = capable_keys(self.version, opt).ok()?;
        Some(ConnectionKeys {
            version: self.version,
            local_key: self.local_key,
            remote_key: sender?,
        })
    }

    /// The third ACK (or version 1's first data) arrived: it must echo this end's key; the
    /// connection's keys.
    pub fn on_ack(&self, opt: &MptcpOption) -> Result<ConnectionKeys, HandshakeError> {
        let (sender, receiver) = capable_keys(self.version, opt)?;
        let remote_key = sender.ok_or(HandshakeError::Unexpected)?;
        if receiver != Some(self.local_key) {
            return Err(HandshakeError::KeyMismatch);
        }
        Ok(ConnectionKeys {
            version: self.version,
            local_key: self.local_key,
            remote_key,
        })
    }
}

/// The end that opens a new subflow (MP_JOIN's SYN, then its third ACK).
#[derive(Clone, Copy, Debug)]
pub struct JoinInitiator {
    keys: ConnectionKeys,
    nonce: u32,
    address_id: u8,
    backup: bool,
}

impl JoinInitiator {
    /// A join of the connection `keys` from address `address_id` with this end's `nonce`.
    pub fn new(keys: ConnectionKeys, nonce: u32, address_id: u8, backup: bool) -> Self {
        JoinInitiator {
            keys,
            nonce,
            address_id,
            backup,
        }
    }

    /// The SYN's option: the peer's token and this end's nonce.
    pub fn syn(&self) -> MptcpOption {
        MptcpOption::JoinSyn {
            backup: self.backup,
            address_id: self.address_id,
            receiver_token: self.keys.remote_token(),
            sender_nonce: self.nonce,
        }
    }

    /// The SYN/ACK arrived: check the peer's truncated HMAC; the third ACK's option.
    pub fn on_syn_ack(&self, opt: &MptcpOption) -> Result<MptcpOption, HandshakeError> {
        let MptcpOption::JoinSynAck {
            truncated_hmac,
            sender_nonce,
            ..
        } = *opt
        else {
            return Err(HandshakeError::Unexpected);
        };
        let k = &self.keys;
        let want = join_hmac_truncated(k.version, k.remote_key, k.local_key, sender_nonce, self.nonce);
        if truncated_hmac != want {
            return Err(HandshakeError::BadHmac);
        }
        Ok(MptcpOption::JoinAck {
            hmac: join_hmac(k.version, k.local_key, k.remote_key, self.nonce, sender_nonce),
        })
    }
}

/// The end that accepts a new subflow (MP_JOIN's SYN/ACK, then the check of the third ACK).
#[derive(Clone, Copy, Debug)]
pub struct JoinResponder {
    keys: ConnectionKeys,
    nonce: u32,
    address_id: u8,
    /// The initiator's nonce, once its SYN arrived.
    peer_nonce: Option<u32>,
}

impl JoinResponder {
    /// A responder for the connection `keys` with this end's `nonce`.
    pub fn new(keys: ConnectionKeys, nonce: u32, address_id: u8) -> Self {
        JoinResponder {
            keys,
            nonce,
            address_id,
            peer_nonce: None,
        }
    }

    /// The SYN arrived: it must name this connection's token; the SYN/ACK's option.
    pub fn on_syn(&mut self, opt: &MptcpOption) -> Result<MptcpOption, HandshakeError> {
        let MptcpOption::JoinSyn {
            receiver_token,
            sender_nonce,
            backup,
            ..
        } = *opt
        else {
            return Err(HandshakeError::Unexpected);
        };
        let k = &self.keys;
        if receiver_token != k.local_token() {
            return Err(HandshakeError::UnknownToken);
        }
        self.peer_nonce = Some(sender_nonce);
        Ok(MptcpOption::JoinSynAck {
            backup,
            address_id: self.address_id,
            truncated_hmac: join_hmac_truncated(k.version, k.local_key, k.remote_key, self.nonce, sender_nonce),
            sender_nonce: self.nonce,
        })
    }

    /// The third ACK arrived: its HMAC must be the initiator's.
    pub fn on_ack(&self, opt: &MptcpOption) -> Result<(), HandshakeError> {
        let (MptcpOption::JoinAck { hmac }, Some(peer_nonce)) = (*opt, self.peer_nonce) else {
            return Err(HandshakeError::Unexpected);
        };
        let k = &self.keys;
        if hmac != join_hmac(k.version, k.remote_key, k.local_key, peer_nonce, self.nonce) {
            return Err(HandshakeError::BadHmac);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const CLIENT_KEY: u64 = 0x0123_4567_89ab_cdef;
    const SERVER_KEY: u64 = 0x1122_3344_5566_7788;

    fn connect(version: MptcpVersion) -> (ConnectionKeys, ConnectionKeys) {
        let client = CapableClient::new(version, CLIENT_KEY);
        let server = CapableServer::new(version, SERVER_KEY);
        let syn_ack = server.on_syn(&client.syn()).unwrap();
        let (ack, client_keys) = client.on_syn_ack(&syn_ack).unwrap();
        let server_keys = server.on_ack(&ack).unwrap();
        (client_keys, server_keys)
    }

    #[test]
    fn mp_capable_exchanges_the_keys_in_both_versions() {
        for version in [MptcpVersion::V1, MptcpVersion::V0] {
            let (c, s) = connect(version);
            assert_eq!((c.local_key, c.remote_key), (CLIENT_KEY, SERVER_KEY));
            assert_eq!((s.local_key, s.remote_key), (SERVER_KEY, CLIENT_KEY));
            assert_eq!(c.remote_token(), s.local_token());
            assert_eq!(c.local_idsn(), s.remote_idsn());
        }
        // Version 1's SYN carries no key; version 0's carries the client's.
        let syn = |v| CapableClient::new(v, CLIENT_KEY).syn();
        assert!(matches!(
            syn(MptcpVersion::V1),
            MptcpOption::Capable { sender_key: None, .. }
        ));
        assert!(matches!(
            syn(MptcpVersion::V0),
            MptcpOption::Capable {
                sender_key: Some(CLIENT_KEY),
                ..
            }
        ));
    }

    #[test]
    fn mp_capable_refuses_another_version_and_a_wrong_echo() {
        let server = CapableServer::new(MptcpVersion::V1, SERVER_KEY);
        let v0_syn = CapableClient::new(MptcpVersion::V0, CLIENT_KEY).syn();
        assert_eq!(server.on_syn(&v0_syn), Err(HandshakeError::Version));
        let forged = capable(MptcpVersion::V1, Some(CLIENT_KEY), Some(SERVER_KEY ^ 1));
        assert_eq!(server.on_ack(&forged), Err(HandshakeError::KeyMismatch));
    }

    #[test]
    fn mp_join_authenticates_both_ends() {
        let (client, server) = connect(MptcpVersion::V1);
        let initiator = JoinInitiator::new(client, 0xdead_beef, 1, false);
        let mut responder = JoinResponder::new(server, 0x0bad_cafe, 0);
        let syn_ack = responder.on_syn(&initiator.syn()).unwrap();
        let ack = initiator.on_syn_ack(&syn_ack).unwrap();
        assert_eq!(responder.on_ack(&ack), Ok(()));
    }

    #[test]
    fn mp_join_refuses_a_stranger_and_a_forged_hmac() {
        let (client, server) = connect(MptcpVersion::V1);
        let mut responder = JoinResponder::new(server, 7, 0);
        // A join for another connection.
        let stranger = JoinInitiator::new(
            ConnectionKeys {
                remote_key: 42,
                ..client
            },
            1,
            1,
            false,
        );
        assert_eq!(responder.on_syn(&stranger.syn()), Err(HandshakeError::UnknownToken));
        // A SYN/ACK whose HMAC was not made with the keys.
        let initiator = JoinInitiator::new(client, 1, 1, false);
        let mut syn_ack = responder.on_syn(&initiator.syn()).unwrap();
        if let MptcpOption::JoinSynAck { truncated_hmac, .. } = &mut syn_ack {
            *truncated_hmac ^= 1;
        }
        assert_eq!(initiator.on_syn_ack(&syn_ack), Err(HandshakeError::BadHmac));
        // A third ACK with the wrong HMAC.
        let forged = MptcpOption::JoinAck { hmac: [0; 20] };
        assert_eq!(responder.on_ack(&forged), Err(HandshakeError::BadHmac));
    }
}
