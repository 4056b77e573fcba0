//! Authentication and encryption of the tunnel daemon's UDP datagrams, with a pre-shared key.
//!
//! Both ends of a tunnel hold the same pre-shared key (PSK) and a [`Role`] each, set in their
//! configs: one end is the [`Role::Initiator`], the other the [`Role::Responder`].
//! [`Keys::derive`] turns the PSK into one base key per direction (HKDF-SHA256), so the two
//! directions never share a key. Each run of a sender is a **session**, named by an epoch the
//! sender picks when it starts (the daemon: the wall clock in nanoseconds, so a restarted end
//! has a larger one); the session's key is derived from the direction's base key and the epoch,
//! and packets are numbered from 0 within it. So a restart never reuses a nonce under a key
//! (as long as the epoch grows: the daemon refuses a clock before 2020),
//! and the peer, seeing an authentic packet of a newer session, moves to it; packets of an
//! older session are refused as replays. A [`Sealer`] seals what an end sends; an [`Opener`]
//! opens what it receives, refusing forged, replayed and malformed datagrams, each for a
//! distinct reason ([`SealError`]) that it counts ([`OpenStats`]).
//!
//! # Datagram
//!
//! ```text
//! offset  0        1        2        3        4 .. 11         12 .. 19
//!        +--------+--------+--------+--------+---------------+------------------+
//!      0 |  kind  |  path  |    reserved     | epoch (u64 BE)| packet_number BE |
//!        +--------+--------+--------+--------+---------------+------------------+
//!     20 | ciphertext of the payload (as long as the payload)                   |
//!        +----------------------------------------------------------------------+
//! len-16 | Poly1305 tag over header and ciphertext (16 bytes)                   |
//!        +----------------------------------------------------------------------+
//! ```
//!
//! - `kind` (u8): what the payload is; the daemon's to define, this module only carries it.
//! - `path` (u8): the subtunnel that carried the datagram.
//! - `reserved` (u16): 0; anything else is refused ([`SealError::BadHeader`]), to leave room for
//!   a later version.
//! - `epoch` (u64, big-endian): the sender's session.
//! - `packet_number` (u64, big-endian): per session, one counter across all the sender's paths,
//!   from 0, never reused.
//!
//! The 20-byte header travels in clear (the receiver needs epoch and number before it can open
//! the payload) and is the AEAD's associated data, so all of it is authenticated. The nonce is
//! 4 zero bytes followed by the packet number, big-endian (96 bits): unique per session key.
//! A datagram is [`OVERHEAD_BYTES`] longer than its payload.
//!
//! # Keys
//!
//! A PSK is written in a config as 64 hexadecimal digits or as standard base64 (with or without
//! its `=` padding), both for 32 bytes ([`parse_psk`]). [`Keys::derive`] takes any PSK of at
//! least [`PSK_MIN_BYTES`] bytes. Two runs of a sender must not use the same epoch (the
//! daemon's clock would have to step back to the nanosecond); a sender whose clock stepped back
//! below its previous epoch is refused by its peer until the peer restarts too.
//!
//! # In clear
//!
//! [`Sealer::clear`] and [`Opener::clear`] keep the header, the numbering, the sessions and the
//! replay window but neither encrypt nor authenticate: the payload follows the header as it is
//! and there is no tag ([`Sealer::overhead`] is [`HEADER_BYTES`]). This is the datagram a
//! data plane without cryptography writes and reads (the eBPF UPF of ATSSS, a P4 switch), on a
//! network the operator trusts, as MP-DCCP's tunnels in 5G's core are; anyone on the path can
//! read, forge and start a newer session, so a tunnel across a network nobody vouches for
//! keeps its key.

use hkdf::Hkdf;
use ring::aead::{Aad, LessSafeKey, Nonce, UnboundKey, CHACHA20_POLY1305};
use sha2::Sha256;
use std::fmt;

/// Bytes of the clear header: kind, path, reserved, epoch, packet number.
pub const HEADER_BYTES: usize = 20;
/// Bytes of the Poly1305 tag at the end of a datagram.
pub const TAG_BYTES: usize = 16;
/// Bytes a datagram has beyond its payload: the header and the tag.
pub const OVERHEAD_BYTES: usize = HEADER_BYTES + TAG_BYTES;
/// The largest UDP payload over IPv4: 65535 less the IPv4 (20) and UDP (8) headers.
pub const MAX_DATAGRAM_BYTES: usize = 65507;
/// Shortest PSK [`Keys::derive`] accepts: 128 bits, so that guessing it is out of reach.
pub const PSK_MIN_BYTES: usize = 16;
/// Bytes of a PSK as [`parse_psk`] reads it.
pub const PSK_TEXT_BYTES: usize = 32;
/// Packet numbers a [`ReplayWindow`] remembers below the highest it accepted.
///
/// The paths of a multipath tunnel differ in delay, so packets sent on a fast path overtake
/// those on a slow one: at 1 Gbit/s of 1448-byte datagrams (86 000 a second), a path 50 ms
/// slower than another is overtaken by about 4 300 packets. 16 384 covers that with room (a
/// bitmap of 2 KiB); a packet later than this is refused as a replay (and counted).
pub const REPLAY_WINDOW: u64 = 16_384;

/// HKDF salt: this project's label, so keys derived here differ from any other use of the PSK.
const HKDF_SALT: &[u8] = b"mpsched tunnel v1";
/// HKDF info of the key that seals what the initiator sends (and opens it at the responder).
const INFO_INITIATOR_TO_RESPONDER: &[u8] = b"mpsched tunnel v1 i->r";
/// HKDF info of the key that seals what the responder sends.
const INFO_RESPONDER_TO_INITIATOR: &[u8] = b"mpsched tunnel v1 r->i";
/// HKDF info of a session key, before the session's epoch (8 bytes, big-endian).
const INFO_SESSION: &[u8] = b"mpsched tunnel v1 session";

/// The key of the session `epoch` under a direction's base key.
fn session_cipher(base: &[u8; 32], epoch: u64) -> LessSafeKey {
    let mut info = [0u8; INFO_SESSION.len() + 8];
    info[..INFO_SESSION.len()].copy_from_slice(INFO_SESSION);
    info[INFO_SESSION.len()..].copy_from_slice(&epoch.to_be_bytes());
    let mut key = [0u8; 32];
    // A base key is a uniformly random 32-byte PRK; 32 bytes of output always fit.
    Hkdf::<Sha256>::from_prk(base)
        .expect("a 32-byte PRK is long enough for HKDF-SHA256")
        .expand(&info, &mut key)
        .expect("32 bytes is within HKDF-SHA256's output limit");
    LessSafeKey::new(UnboundKey::new(&CHACHA20_POLY1305, &key).expect("a 32-byte key is ChaCha20-Poly1305's"))
}

/// Why a key could not be made, a datagram sealed, or a datagram opened.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SealError {
    /// The PSK is shorter than [`PSK_MIN_BYTES`].
    ShortKey,
    /// The PSK text is neither 64 hexadecimal digits nor base64 of 32 bytes.
    BadKeyText,
    /// The sender used every packet number: its key must not seal any more.
    Exhausted,
    /// The datagram is shorter than [`OVERHEAD_BYTES`].
    Truncated,
    /// The datagram is longer than the opener's maximum ([`MAX_DATAGRAM_BYTES`] by default); at
    /// sealing, the payload would make a datagram longer than [`MAX_DATAGRAM_BYTES`].
    Oversized,
    /// The reserved field is not 0.
    BadHeader,
    /// Authentication failed: damaged, forged, or sealed with another key (or the same role).
    Forged,
    /// The packet number was already accepted, or is older than the replay window, or the
    /// packet belongs to a session older than the current one.
    Replayed,
}

impl fmt::Display for SealError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            SealError::ShortKey => "pre-shared key shorter than 16 bytes",
            SealError::BadKeyText => "pre-shared key is neither 64 hex digits nor base64 of 32 bytes",
            SealError::Exhausted => "packet numbers exhausted",
            SealError::Truncated => "datagram shorter than header and tag",
            SealError::Oversized => "datagram too long",
            SealError::BadHeader => "reserved header field not zero",
            SealError::Forged => "datagram failed authentication",
            SealError::Replayed => "packet number replayed or older than the replay window",
        })
    }
}

impl std::error::Error for SealError {}

/// Which end of the tunnel this is; the two ends must be configured with different roles.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Role {
    /// One end of the tunnel; its send key is the responder's receive key.
    Initiator,
    /// The other end; its send key is the initiator's receive key.
    Responder,
}

/// The two keys of one end: one seals what it sends, the other opens what it receives.
///
/// Its `Debug` shows no key material.
#[derive(Clone)]
pub struct Keys {
    send: [u8; 32],
    receive: [u8; 32],
}

impl fmt::Debug for Keys {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Keys { .. }")
    }
}

impl Keys {
    /// The keys of the end that has `role`, derived from `psk` with HKDF-SHA256; refuses a PSK
    /// shorter than [`PSK_MIN_BYTES`].
    pub fn derive(psk: &[u8], role: Role) -> Result<Keys, SealError> {
        if psk.len() < PSK_MIN_BYTES {
            return Err(SealError::ShortKey);
        }
        let hkdf = Hkdf::<Sha256>::new(Some(HKDF_SALT), psk);
        let mut i_to_r = [0u8; 32];
        let mut r_to_i = [0u8; 32];
        // HKDF-SHA256 gives up to 255 * 32 bytes: 32 always fits, whatever the PSK.
        hkdf.expand(INFO_INITIATOR_TO_RESPONDER, &mut i_to_r)
            .expect("32 bytes is within HKDF-SHA256's output limit");
        hkdf.expand(INFO_RESPONDER_TO_INITIATOR, &mut r_to_i)
            .expect("32 bytes is within HKDF-SHA256's output limit");
        Ok(match role {
            Role::Initiator => Keys {
                send: i_to_r,
                receive: r_to_i,
            },
            Role::Responder => Keys {
                send: r_to_i,
                receive: i_to_r,
            },
        })
    }
}

/// A PSK from its config text: 64 hexadecimal digits (either case), or standard base64 (`+`,
/// `/`, with or without `=` padding), both for [`PSK_TEXT_BYTES`] bytes. Whitespace around it is
/// ignored.
pub fn parse_psk(text: &str) -> Result<Vec<u8>, SealError> {
    let text = text.trim().as_bytes();
    let bytes = if text.len() == 2 * PSK_TEXT_BYTES {
        // 64 characters can only be hex: base64 of 32 bytes is 43 or 44.
        decode_hex(text)
    } else {
        decode_base64(text)
    };
    match bytes {
        Some(b) if b.len() == PSK_TEXT_BYTES => Ok(b),
        _ => Err(SealError::BadKeyText),
    }
}

fn decode_hex(text: &[u8]) -> Option<Vec<u8>> {
    if text.len() % 2 != 0 {
        return None;
    }
    text.chunks_exact(2)
        .map(|pair| Some((hex_digit(pair[0])? << 4) | hex_digit(pair[1])?))
        .collect()
}

fn hex_digit(c: u8) -> Option<u8> {
    match c {
        b'0'..=b'9' => Some(c - b'0'),
        b'a'..=b'f' => Some(c - b'a' + 10),
        b'A'..=b'F' => Some(c - b'A' + 10),
        _ => None,
    }
}

/// Standard base64, strict: padding only at the end and only as much as the length calls for,
/// and no stray bits in the last character (so each key has one spelling).
fn decode_base64(text: &[u8]) -> Option<Vec<u8>> {
    let data = match text {
        [rest @ .., b'=', b'='] | [rest @ .., b'='] => rest,
        _ => text,
    };
    let padding = text.len() - data.len();
    if padding > 0 && (data.len() + padding) % 4 != 0 {
        return None;
    }
    let mut out = Vec::with_capacity(data.len() * 3 / 4);
    let mut acc: u32 = 0;
    let mut bits = 0;
    for &c in data {
        let v = match c {
            b'A'..=b'Z' => c - b'A',
            b'a'..=b'z' => c - b'a' + 26,
            b'0'..=b'9' => c - b'0' + 52,
            b'+' => 62,
            b'/' => 63,
            _ => return None,
        };
        acc = ((acc << 6) | u32::from(v)) & 0xff_ffff;
        bits += 6;
        if bits >= 8 {
            bits -= 8;
            out.push((acc >> bits) as u8);
        }
    }
    // A lone last character (6 bits) is no byte; leftover bits must be zero.
    if bits >= 6 || acc & ((1 << bits) - 1) != 0 {
        return None;
    }
    Some(out)
}

/// The nonce of a packet number: 4 zero bytes and the number, big-endian.
fn nonce(packet_number: u64) -> Nonce {
    let mut n = [0u8; 12];
    n[4..].copy_from_slice(&packet_number.to_be_bytes());
    Nonce::assume_unique_for_key(n)
}

/// Seals the datagrams one end sends in one session, numbering them.
pub struct Sealer {
    /// None: in clear.
    cipher: Option<LessSafeKey>,
    epoch: u64,
    /// The number of the next datagram; [`u64::MAX`] is never used, so this never wraps.
    next: u64,
}

impl fmt::Debug for Sealer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Sealer")
            .field("next", &self.next)
            .finish_non_exhaustive()
    }
}

impl Sealer {
    /// A sealer for the session `epoch` under the send key of `keys`, numbering from 0. Each
    /// run of a sender must use a larger epoch than the last (see the module's docs).
    pub fn new(keys: &Keys, epoch: u64) -> Sealer {
        Sealer {
            cipher: Some(session_cipher(&keys.send, epoch)),
            epoch,
            next: 0,
        }
    }

    /// A sealer for the session `epoch` that writes its datagrams in clear (the module's
    /// "In clear"), numbering from 0.
    pub fn clear(epoch: u64) -> Sealer {
        Sealer {
            cipher: None,
            epoch,
            next: 0,
        }
    }

    /// Bytes its datagrams have beyond their payloads: [`OVERHEAD_BYTES`], or
    /// [`HEADER_BYTES`] in clear.
    pub fn overhead(&self) -> usize {
        overhead(self.cipher.is_some())
    }

    /// The session's epoch.
    pub fn epoch(&self) -> u64 {
        self.epoch
    }

    /// The packet number the next sealed datagram will carry.
    pub fn next_packet_number(&self) -> u64 {
        self.next
    }

    /// Seal `payload` as a datagram of `kind` on `path`: `out` is cleared and then holds the whole
    /// datagram (header, ciphertext, tag; in clear header and payload). Refuses a payload
    /// longer than [`MAX_DATAGRAM_BYTES`] less [`Sealer::overhead`] (`Oversized`), and refuses
    /// once the numbers run out (`Exhausted`) rather than reuse one; a refusal uses no number
    /// and leaves `out` empty.
    pub fn seal(&mut self, kind: u8, path: u8, payload: &[u8], out: &mut Vec<u8>) -> Result<u64, SealError> {
        out.clear();
        if self.next == u64::MAX {
            return Err(SealError::Exhausted);
        }
        if payload.len() > MAX_DATAGRAM_BYTES - self.overhead() {
            return Err(SealError::Oversized);
        }
        let number = self.next;
        let header = encode_header(kind, path, self.epoch, number);
        out.reserve(payload.len() + self.overhead());
        out.extend_from_slice(&header);
        out.extend_from_slice(payload);
        let Some(cipher) = &self.cipher else {
            self.next += 1;
            return Ok(number);
        };
        // Only a payload beyond ChaCha20's 256 GiB limit fails, far above the check above.
        let Ok(tag) = cipher.seal_in_place_separate_tag(nonce(number), Aad::from(&header), &mut out[HEADER_BYTES..])
        else {
            out.clear();
            return Err(SealError::Oversized);
        };
        out.extend_from_slice(tag.as_ref());
        self.next += 1;
        Ok(number)
    }
}

/// A header's epoch and packet number.
fn header_numbers(header: &[u8; HEADER_BYTES]) -> (u64, u64) {
    let field = |r: std::ops::Range<usize>| {
        let mut b = [0u8; 8];
        b.copy_from_slice(&header[r]);
        u64::from_be_bytes(b)
    };
    (field(4..12), field(12..20))
}

/// Bytes a datagram has beyond its payload, sealed or in clear.
fn overhead(sealed: bool) -> usize {
    if sealed {
        OVERHEAD_BYTES
    } else {
        HEADER_BYTES
    }
}

fn encode_header(kind: u8, path: u8, epoch: u64, packet_number: u64) -> [u8; HEADER_BYTES] {
    let mut h = [0u8; HEADER_BYTES];
    h[0] = kind;
    h[1] = path;
    // h[2..4]: reserved, 0.
    h[4..12].copy_from_slice(&epoch.to_be_bytes());
    h[12..].copy_from_slice(&packet_number.to_be_bytes());
    h
}

/// What an opened datagram's header said; its payload is in the buffer given to
/// [`Opener::open`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Opened {
    /// The datagram's kind, as the sender gave it.
    pub kind: u8,
    /// The path the sender put it on.
    pub path: u8,
    /// Its packet number.
    pub packet_number: u64,
}

/// Counters of an [`Opener`]: one per outcome of [`Opener::open`].
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct OpenStats {
    /// Datagrams opened.
    pub opened: u64,
    /// Refused as [`SealError::Truncated`].
    pub truncated: u64,
    /// Refused as [`SealError::Oversized`].
    pub oversized: u64,
    /// Refused as [`SealError::BadHeader`].
    pub bad_header: u64,
    /// Refused as [`SealError::Forged`].
    pub forged: u64,
    /// Refused as [`SealError::Replayed`].
    pub replayed: u64,
    /// Sessions the peer started (the first included): authentic packets of a newer epoch.
    pub sessions: u64,
}

/// Opens the datagrams one end receives: checks, authenticates, decrypts, and refuses replays
/// and older sessions.
pub struct Opener {
    /// The receive key; None: in clear.
    base: Option<[u8; 32]>,
    /// The peer's current session; None before the first authentic packet.
    epoch: Option<u64>,
    /// Its key (None in clear).
    session: Option<LessSafeKey>,
    /// The key of the last newer epoch tried, so a burst of a new session derives it once.
    candidate: Option<(u64, LessSafeKey)>,
    window: ReplayWindow,
    max_datagram_bytes: usize,
    stats: OpenStats,
}

impl fmt::Debug for Opener {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Opener")
            .field("epoch", &self.epoch())
            .field("window", &self.window)
            .field("max_datagram_bytes", &self.max_datagram_bytes)
            .field("stats", &self.stats)
            .finish_non_exhaustive()
    }
}

impl Opener {
    /// An opener with the receive key of `keys`, taking datagrams up to [`MAX_DATAGRAM_BYTES`].
    pub fn new(keys: &Keys) -> Opener {
        Opener {
            base: Some(keys.receive),
            epoch: None,
            session: None,
            candidate: None,
            window: ReplayWindow::new(),
            max_datagram_bytes: MAX_DATAGRAM_BYTES,
            stats: OpenStats::default(),
        }
    }

    /// An opener of datagrams in clear (the module's "In clear"): the header is checked, the
    /// sessions and the replay window kept, nothing authenticated.
    pub fn clear() -> Opener {
        Opener {
            base: None,
            epoch: None,
            session: None,
            candidate: None,
            window: ReplayWindow::new(),
            max_datagram_bytes: MAX_DATAGRAM_BYTES,
            stats: OpenStats::default(),
        }
    }

    /// The same opener refusing datagrams longer than `max` bytes (for instance the paths'
    /// MTU less the outer headers).
    pub fn with_max_datagram_bytes(mut self, max: usize) -> Opener {
        self.max_datagram_bytes = max;
        self
    }

    /// Its counters.
    pub fn stats(&self) -> &OpenStats {
        &self.stats
    }

    /// The peer's current session, if one has started.
    pub fn epoch(&self) -> Option<u64> {
        self.epoch
    }

    /// Its replay window (of the current session).
    pub fn window(&self) -> &ReplayWindow {
        &self.window
    }

    /// Open `datagram`: on success `out` holds the payload (it is cleared first, and left empty
    /// on a refusal). Checks in order the length, the header, the replay window (without moving
    /// it), the tag; only then is the number marked seen, so a forged datagram never moves the
    /// window. Each outcome is counted in [`Opener::stats`].
    pub fn open(&mut self, datagram: &[u8], out: &mut Vec<u8>) -> Result<Opened, SealError> {
        out.clear();
        let result = self.open_inner(datagram, out);
        let counter = match result {
            Ok(_) => &mut self.stats.opened,
            Err(SealError::Truncated) => &mut self.stats.truncated,
            Err(SealError::Oversized) => &mut self.stats.oversized,
            Err(SealError::BadHeader) => &mut self.stats.bad_header,
            Err(SealError::Replayed) => &mut self.stats.replayed,
            // Forged is the only other outcome of open_inner.
            Err(_) => &mut self.stats.forged,
        };
        *counter += 1;
        if result.is_err() {
            out.clear();
        }
        result
    }

    fn open_inner(&mut self, datagram: &[u8], out: &mut Vec<u8>) -> Result<Opened, SealError> {
        if datagram.len() < overhead(self.base.is_some()) {
            return Err(SealError::Truncated);
        }
        if datagram.len() > self.max_datagram_bytes {
            return Err(SealError::Oversized);
        }
        let (header, rest) = datagram.split_at(HEADER_BYTES);
        let header: [u8; HEADER_BYTES] = header.try_into().map_err(|_| SealError::Truncated)?;
        if header[2..4] != [0, 0] {
            return Err(SealError::BadHeader);
        }
        let (epoch, packet_number) = header_numbers(&header);
        if self.epoch.is_some_and(|c| epoch < c) {
            return Err(SealError::Replayed);
        }
        let newer = self.epoch != Some(epoch);
        // Refuse a replay before spending the work of authentication on it.
        if !newer && !self.window.check(packet_number) {
            return Err(SealError::Replayed);
        }
        out.extend_from_slice(rest);
        if self.base.is_some() {
            self.authenticate(&header, newer, out)?;
        }
        if newer {
            // Only an authentic packet starts a session: a forged epoch moves nothing.
            self.epoch = Some(epoch);
            self.session = self.candidate.take().map(|(_, c)| c);
            self.window = ReplayWindow::new();
            self.stats.sessions += 1;
        }
        self.window.accept(packet_number);
        Ok(Opened {
            kind: header[0],
            path: header[1],
            packet_number,
        })
    }

    /// Decrypt and authenticate in place `out`'s ciphertext and tag, leaving the plaintext,
    /// with the session's key or, for a newer epoch, the candidate's (derived once per epoch).
    fn authenticate(&mut self, header: &[u8; HEADER_BYTES], newer: bool, out: &mut Vec<u8>) -> Result<(), SealError> {
        let (epoch, packet_number) = header_numbers(header);
        let cipher = match (&self.session, newer, &self.base) {
            (Some(c), false, _) => c,
            (_, _, None) => return Err(SealError::Forged),
            (_, _, Some(base)) => {
                if self.candidate.as_ref().is_none_or(|(e, _)| *e != epoch) {
                    self.candidate = Some((epoch, session_cipher(base, epoch)));
                }
                let Some((_, c)) = &self.candidate else {
                    return Err(SealError::Forged);
                };
                c
            }
        };
        let plain_len = cipher
            .open_in_place(nonce(packet_number), Aad::from(header), out)
            .map_err(|_| SealError::Forged)?
            .len();
        out.truncate(plain_len);
        Ok(())
    }
}

/// Words of the window's bitmap: one more than the window needs, as in RFC 6479, so that
/// sliding clears whole words and the word of the highest number never holds a number older
/// than the window.
const WINDOW_WORDS: usize = (REPLAY_WINDOW / 64) as usize + 1;

/// Which of the last [`REPLAY_WINDOW`] packet numbers were accepted: a bitmap of `u64` words
/// used as a ring (RFC 6479), so that checking and accepting never allocate.
///
/// A number above the highest accepted is new (accepting it slides the window); one within
/// [`REPLAY_WINDOW`] below the highest is new until accepted; one further below is refused.
#[derive(Clone, Debug)]
pub struct ReplayWindow {
    bitmap: [u64; WINDOW_WORDS],
    /// The highest number accepted; None before the first.
    highest: Option<u64>,
}

impl Default for ReplayWindow {
    fn default() -> Self {
        ReplayWindow::new()
    }
}

impl ReplayWindow {
    /// A window that has accepted nothing.
    pub fn new() -> ReplayWindow {
        ReplayWindow {
            bitmap: [0; WINDOW_WORDS],
            highest: None,
        }
    }

    /// The highest number accepted, if any.
    pub fn highest(&self) -> Option<u64> {
        self.highest
    }

    fn slot(n: u64) -> (usize, u64) {
        // The modulo keeps the index below WINDOW_WORDS, so it fits a usize.
        (((n / 64) % WINDOW_WORDS as u64) as usize, 1 << (n % 64))
    }

    /// Whether `n` would be accepted: not accepted before and not older than the window. Changes
    /// nothing.
    pub fn check(&self, n: u64) -> bool {
        match self.highest {
            None => true,
            Some(h) if n > h => true,
            Some(h) if h - n >= REPLAY_WINDOW => false,
            Some(_) => {
                let (word, bit) = Self::slot(n);
                self.bitmap[word] & bit == 0
            }
        }
    }

    /// Mark `n` seen, sliding the window if `n` is above the highest; returns whether it was
    /// new (what [`ReplayWindow::check`] said), and changes nothing if it was not.
    pub fn accept(&mut self, n: u64) -> bool {
        if !self.check(n) {
            return false;
        }
        if let Some(h) = self.highest {
            if n > h {
                // Clear the words between the old highest's and the new one's: they hold numbers
                // that fall out of the window. All of them at most, however far it jumps.
                let from = h / 64;
                let words = (n / 64 - from).min(WINDOW_WORDS as u64);
                for i in 1..=words {
                    self.bitmap[((from + i) % WINDOW_WORDS as u64) as usize] = 0;
                }
                self.highest = Some(n);
            }
        } else {
            self.highest = Some(n);
        }
        let (word, bit) = Self::slot(n);
        self.bitmap[word] |= bit;
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::collections::BTreeSet;

    const PSK: [u8; 32] = *b"0123456789abcdef0123456789abcdef";

    fn pair() -> (Sealer, Opener) {
        let i = Keys::derive(&PSK, Role::Initiator).unwrap();
        let r = Keys::derive(&PSK, Role::Responder).unwrap();
        (Sealer::new(&i, 1), Opener::new(&r))
    }

    fn sealed(sealer: &mut Sealer, payload: &[u8]) -> Vec<u8> {
        let mut d = Vec::new();
        sealer.seal(7, 2, payload, &mut d).unwrap();
        d
    }

    /// In clear: the datagram is the header and the payload as they are; numbering, the
    /// header check, replays and sessions as when sealed; a sealed end refuses it as forged.
    #[test]
    fn in_clear_the_datagram_is_header_and_payload() {
        let (mut s, mut o) = (Sealer::clear(5), Opener::clear());
        assert_eq!(s.overhead(), HEADER_BYTES);
        let mut d = Vec::new();
        let mut p = Vec::new();
        assert_eq!(s.seal(1, 3, b"inner", &mut d), Ok(0));
        let mut want = vec![1, 3, 0, 0];
        want.extend_from_slice(&5u64.to_be_bytes());
        want.extend_from_slice(&0u64.to_be_bytes());
        want.extend_from_slice(b"inner");
        assert_eq!(d, want);
        let opened = o.open(&d, &mut p).unwrap();
        assert_eq!((opened.kind, opened.path, opened.packet_number), (1, 3, 0));
        assert_eq!(p, b"inner");
        assert_eq!(o.open(&d, &mut p), Err(SealError::Replayed));
        assert!(p.is_empty());
        assert_eq!(o.open(&d[..HEADER_BYTES - 1], &mut p), Err(SealError::Truncated));
        let mut bad = d.clone();
        bad[2] = 1;
        assert_eq!(o.open(&bad, &mut p), Err(SealError::BadHeader));
        // A header alone is an empty payload (a sealed one would be truncated).
        assert_eq!(s.seal(3, 0, b"", &mut d), Ok(1));
        assert!(o.open(&d, &mut p).is_ok() && p.is_empty());
        // A newer session moves the opener; the older one is refused from then on.
        let mut later = Sealer::clear(6);
        later.seal(1, 0, b"x", &mut d).unwrap();
        assert!(o.open(&d, &mut p).is_ok());
        s.seal(1, 0, b"y", &mut d).unwrap();
        assert_eq!(o.open(&d, &mut p), Err(SealError::Replayed));
        assert_eq!(o.stats().sessions, 2);
        // Sealed and clear ends do not understand each other by accident.
        let (_, mut sealed_opener) = pair();
        later.seal(1, 0, &[0; 40], &mut d).unwrap();
        assert_eq!(sealed_opener.open(&d, &mut p), Err(SealError::Forged));
    }

    #[test]
    fn round_trip() {
        let (mut s, mut o) = pair();
        let mut d = vec![0xaa; 5]; // stale content: seal clears it
        let mut p = vec![0xbb; 3];
        for (i, payload) in [&b"hello"[..], b"", &[0x5a; 1400]].into_iter().enumerate() {
            assert_eq!(s.seal(7, 2, payload, &mut d), Ok(i as u64));
            assert_eq!(d.len(), payload.len() + OVERHEAD_BYTES);
            assert_eq!(&d[..4], &[7, 2, 0, 0]);
            assert_eq!(&d[12..20], &(i as u64).to_be_bytes());
            let opened = o.open(&d, &mut p).unwrap();
            assert_eq!(
                opened,
                Opened {
                    kind: 7,
                    path: 2,
                    packet_number: i as u64
                }
            );
            assert_eq!(p, payload);
        }
        assert_eq!(o.stats().opened, 3);
        assert_eq!(s.next_packet_number(), 3);
    }

    #[test]
    fn payload_is_encrypted() {
        let (mut s, _) = pair();
        let d = sealed(&mut s, &[0; 64]);
        assert!(d[HEADER_BYTES..HEADER_BYTES + 64].iter().any(|&b| b != 0));
    }

    #[test]
    fn truncated() {
        let (mut s, mut o) = pair();
        let d = sealed(&mut s, b"payload");
        let mut p = Vec::new();
        assert_eq!(o.open(&d[..d.len() - 1], &mut p), Err(SealError::Forged));
        assert_eq!(o.open(&[0; OVERHEAD_BYTES - 1], &mut p), Err(SealError::Truncated));
        let empty = sealed(&mut s, b"");
        assert_eq!(o.open(&empty[..empty.len() - 1], &mut p), Err(SealError::Truncated));
        assert!(p.is_empty());
        assert_eq!(o.stats().truncated, 2);
        assert_eq!(o.stats().forged, 1);
        // The genuine ones still open: the refusals moved nothing.
        assert!(o.open(&d, &mut p).is_ok());
        assert!(o.open(&empty, &mut p).is_ok());
    }

    #[test]
    fn oversized() {
        let (mut s, mut o) = pair();
        let mut d = Vec::new();
        let max_payload = MAX_DATAGRAM_BYTES - OVERHEAD_BYTES;
        assert_eq!(
            s.seal(0, 0, &vec![0; max_payload + 1], &mut d),
            Err(SealError::Oversized)
        );
        assert!(d.is_empty());
        assert_eq!(s.next_packet_number(), 0);
        let mut p = Vec::new();
        assert_eq!(
            o.open(&vec![0; MAX_DATAGRAM_BYTES + 1], &mut p),
            Err(SealError::Oversized)
        );
        s.seal(0, 0, &vec![1; max_payload], &mut d).unwrap();
        assert_eq!(d.len(), MAX_DATAGRAM_BYTES);
        assert!(o.open(&d, &mut p).is_ok());

        let (mut s, o) = pair();
        let mut o = o.with_max_datagram_bytes(1400);
        let d = sealed(&mut s, &[0; 1400 - OVERHEAD_BYTES + 1]);
        assert_eq!(o.open(&d, &mut p), Err(SealError::Oversized));
        let d = sealed(&mut s, &[0; 1400 - OVERHEAD_BYTES]);
        assert!(o.open(&d, &mut p).is_ok());
        assert_eq!(o.stats().oversized, 1);
    }

    #[test]
    fn every_flipped_bit_is_forged() {
        let (mut s, mut o) = pair();
        let d = sealed(&mut s, b"some payload");
        let mut p = Vec::new();
        for byte in 0..d.len() {
            if byte == 2 || byte == 3 {
                continue; // reserved: BadHeader, below
            }
            for bit in 0..8 {
                let mut bad = d.clone();
                bad[byte] ^= 1 << bit;
                assert_eq!(o.open(&bad, &mut p), Err(SealError::Forged), "byte {byte} bit {bit}");
                assert!(p.is_empty());
            }
        }
        assert_eq!(o.stats().forged, (d.len() as u64 - 2) * 8);
        // None moved the window, though some claimed numbers far above 0.
        assert_eq!(o.window().highest(), None);
        assert!(o.open(&d, &mut p).is_ok());
    }

    #[test]
    fn reserved_nonzero_is_bad_header() {
        let (mut s, mut o) = pair();
        let d = sealed(&mut s, b"x");
        let mut p = Vec::new();
        for (byte, value) in [(2, 1), (3, 1), (2, 0x80)] {
            let mut bad = d.clone();
            bad[byte] = value;
            assert_eq!(o.open(&bad, &mut p), Err(SealError::BadHeader));
        }
        assert_eq!(o.stats().bad_header, 3);
    }

    #[test]
    fn replay_refused() {
        let (mut s, mut o) = pair();
        let d = sealed(&mut s, b"once");
        let mut p = Vec::new();
        assert!(o.open(&d, &mut p).is_ok());
        assert_eq!(o.open(&d, &mut p), Err(SealError::Replayed));
        assert!(p.is_empty());
        assert_eq!(o.stats().replayed, 1);
    }

    #[test]
    fn older_than_window_refused() {
        let (mut s, mut o) = pair();
        let mut p = Vec::new();
        let old = sealed(&mut s, b"old"); // number 0, held back
        s.next = REPLAY_WINDOW;
        let new = sealed(&mut s, b"new");
        assert!(o.open(&new, &mut p).is_ok());
        assert_eq!(o.open(&old, &mut p), Err(SealError::Replayed));

        // Just inside the window it opens.
        let (mut s, mut o) = pair();
        let old = sealed(&mut s, b"old");
        s.next = REPLAY_WINDOW - 1;
        let new = sealed(&mut s, b"new");
        assert!(o.open(&new, &mut p).is_ok());
        assert!(o.open(&old, &mut p).is_ok());
    }

    #[test]
    fn reordered_within_window_accepted_once() {
        let (mut s, mut o) = pair();
        let datagrams: Vec<Vec<u8>> = (0..REPLAY_WINDOW).map(|_| sealed(&mut s, b"r")).collect();
        let mut p = Vec::new();
        // Newest first: every older one is still within the window.
        for d in datagrams.iter().rev() {
            assert!(o.open(d, &mut p).is_ok());
        }
        for d in &datagrams {
            assert_eq!(o.open(d, &mut p), Err(SealError::Replayed));
        }
        assert_eq!(o.stats().opened, REPLAY_WINDOW);
        assert_eq!(o.stats().replayed, REPLAY_WINDOW);
    }

    #[test]
    fn forged_huge_number_does_not_move_window() {
        let (mut s, mut o) = pair();
        let d0 = sealed(&mut s, b"zero");
        let d1 = sealed(&mut s, b"one");
        let mut p = Vec::new();
        assert!(o.open(&d0, &mut p).is_ok());
        let mut forged = d1.clone();
        forged[12..20].copy_from_slice(&(u64::MAX - 1).to_be_bytes());
        assert_eq!(o.open(&forged, &mut p), Err(SealError::Forged));
        assert_eq!(o.window().highest(), Some(0));
        assert!(o.open(&d1, &mut p).is_ok());
        assert_eq!(p, b"one");
    }

    #[test]
    fn a_restarted_sender_starts_a_newer_session_and_older_ones_are_refused() {
        let i = Keys::derive(&PSK, Role::Initiator).unwrap();
        let r = Keys::derive(&PSK, Role::Responder).unwrap();
        let mut o = Opener::new(&r);
        let mut p = Vec::new();
        let mut first = Sealer::new(&i, 100);
        let old0 = sealed(&mut first, b"run 1, packet 0");
        let old1 = sealed(&mut first, b"run 1, packet 1");
        assert!(o.open(&old0, &mut p).is_ok());
        // The restart numbers from 0 again, under another key: no nonce is reused.
        let mut second = Sealer::new(&i, 200);
        let new0 = sealed(&mut second, b"run 2, packet 0");
        assert_ne!(new0[HEADER_BYTES..], old0[HEADER_BYTES..]);
        // A forged packet of a still newer session moves nothing.
        let mut forged = new0.clone();
        forged[4..12].copy_from_slice(&300u64.to_be_bytes());
        assert_eq!(o.open(&forged, &mut p), Err(SealError::Forged));
        assert_eq!(o.epoch(), Some(100));
        assert!(o.open(&new0, &mut p).is_ok());
        assert_eq!((o.epoch(), p.as_slice()), (Some(200), &b"run 2, packet 0"[..]));
        assert_eq!(
            o.open(&old1, &mut p),
            Err(SealError::Replayed),
            "the old session is over"
        );
        assert_eq!(o.open(&new0, &mut p), Err(SealError::Replayed));
        assert_eq!((o.stats().sessions, o.stats().replayed, o.stats().forged), (2, 2, 1));
    }

    #[test]
    fn exhausted_does_not_wrap() {
        let (mut s, mut o) = pair();
        s.next = u64::MAX - 1;
        let last = sealed(&mut s, b"last");
        let mut d = vec![1];
        assert_eq!(s.seal(0, 0, b"more", &mut d), Err(SealError::Exhausted));
        assert!(d.is_empty());
        assert_eq!(s.next_packet_number(), u64::MAX);
        let mut p = Vec::new();
        assert_eq!(o.open(&last, &mut p).map(|o| o.packet_number), Ok(u64::MAX - 1));
    }

    #[test]
    fn roles_interoperate_and_directions_differ() {
        let i = Keys::derive(&PSK, Role::Initiator).unwrap();
        let r = Keys::derive(&PSK, Role::Responder).unwrap();
        let (mut si, mut oi) = (Sealer::new(&i, 1), Opener::new(&i));
        let (mut sr, mut or) = (Sealer::new(&r, 1), Opener::new(&r));
        let mut p = Vec::new();
        let to_r = sealed(&mut si, b"to responder");
        let to_i = sealed(&mut sr, b"to initiator");
        // Both start at 0: the nonces repeat across directions, the keys do not.
        assert_eq!(to_r[12..20], to_i[12..20]);
        assert_eq!(oi.open(&to_r, &mut p), Err(SealError::Forged));
        assert_eq!(or.open(&to_i, &mut p), Err(SealError::Forged));
        assert!(or.open(&to_r, &mut p).is_ok());
        assert_eq!(p, b"to responder");
        assert!(oi.open(&to_i, &mut p).is_ok());
        assert_eq!(p, b"to initiator");

        // Another PSK opens nothing.
        let other = Keys::derive(&[9; 32], Role::Responder).unwrap();
        let to_r = sealed(&mut si, b"x");
        assert_eq!(Opener::new(&other).open(&to_r, &mut p), Err(SealError::Forged));
    }

    #[test]
    fn short_psk_refused() {
        assert_eq!(
            Keys::derive(&[0; PSK_MIN_BYTES - 1], Role::Initiator).unwrap_err(),
            SealError::ShortKey
        );
        assert!(Keys::derive(&[0; PSK_MIN_BYTES], Role::Initiator).is_ok());
        assert_eq!(
            format!("{:?}", Keys::derive(&PSK, Role::Initiator).unwrap()),
            "Keys { .. }"
        );
    }

    #[test]
    fn psk_text() {
        let bytes: Vec<u8> = (0..32).collect();
        let hex = "000102030405060708090a0b0c0d0e0f101112131415161718191A1B1C1D1E1F";
        assert_eq!(parse_psk(hex), Ok(bytes.clone()));
        assert_eq!(parse_psk(&format!("  {hex}\n")), Ok(bytes.clone()));
        let b64 = "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=";
        assert_eq!(parse_psk(b64), Ok(bytes.clone()));
        assert_eq!(parse_psk(&format!("\t{b64} ")), Ok(bytes.clone()));
        assert_eq!(parse_psk(&b64[..43]), Ok(bytes.clone()));
        let b64_ff = "/////////////////////////////////////////+8=";
        let mut ff = vec![0xff; 31];
        ff.push(0xef);
        assert_eq!(parse_psk(b64_ff), Ok(ff));

        for bad in [
            "",
            &hex[..62],                                      // 31 bytes
            &format!("{hex}00"),                             // 33 bytes
            &format!("{}g", &hex[..63]),                     // not a digit
            "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8==", // too much padding
            "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh9=",  // stray bits in the last character
            "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwd",      // 30 bytes
            "AAECAwQFBgcICQoLDA0O-xAREhMUFRYXGBkaGxwdHh8=",  // URL-safe alphabet
            "AAECAwQFBgcICQoLDA0O DxAREhMUFRYXGBkaGxwdHh8=", // space inside
        ] {
            assert_eq!(parse_psk(bad), Err(SealError::BadKeyText), "{bad:?}");
        }
    }

    #[test]
    fn window_basics() {
        let mut w = ReplayWindow::new();
        assert!(w.check(5));
        assert!(w.accept(5));
        assert!(!w.check(5));
        assert!(!w.accept(5));
        assert!(w.accept(0));
        assert!(w.accept(1_000_000));
        assert!(!w.check(5));
        assert!(w.check(1_000_000 - REPLAY_WINDOW + 1));
        assert!(!w.check(1_000_000 - REPLAY_WINDOW));
        assert!(w.accept(u64::MAX));
        assert!(!w.check(u64::MAX));
        assert!(w.check(u64::MAX - 1));
        assert!(!w.check(0));
    }

    proptest! {
        #[test]
        fn arbitrary_bytes_never_open(bytes in proptest::collection::vec(any::<u8>(), 0..200)) {
            let (_, mut o) = pair();
            let mut p = Vec::new();
            let r = o.open(&bytes, &mut p);
            prop_assert!(r.is_err());
            prop_assert!(p.is_empty());
            prop_assert_eq!(o.window().highest(), None);
        }

        #[test]
        fn arbitrary_header_and_body_never_open(
            kind in any::<u8>(), path in any::<u8>(), number in any::<u64>(),
            body in proptest::collection::vec(any::<u8>(), TAG_BYTES..200),
        ) {
            // Past the length and header checks, so authentication is what refuses.
            let (_, mut o) = pair();
            let mut d = encode_header(kind, path, 1, number).to_vec();
            d.extend_from_slice(&body);
            let mut p = Vec::new();
            prop_assert_eq!(o.open(&d, &mut p), Err(SealError::Forged));
        }

        #[test]
        fn window_matches_model(
            ops in proptest::collection::vec(
                prop_oneof![
                    // Mostly near the front, some far jumps, some around the window's edge.
                    4 => 0u64..300,
                    1 => 0u64..10_000,
                    1 => 1900u64..2200,
                    1 => any::<u64>(),
                ],
                0..400,
            ),
            check_only in proptest::collection::vec(any::<bool>(), 400),
        ) {
            let mut w = ReplayWindow::new();
            let mut seen = BTreeSet::new();
            for (i, &n) in ops.iter().enumerate() {
                let expect = !seen.contains(&n)
                    && seen.last().is_none_or(|&h: &u64| n > h || h - n < REPLAY_WINDOW);
                prop_assert_eq!(w.check(n), expect, "check {} after {:?}", n, &ops[..i]);
                if !check_only[i] {
                    prop_assert_eq!(w.accept(n), expect);
                    if expect {
                        seen.insert(n);
                    }
                }
                prop_assert_eq!(w.highest(), seen.last().copied());
            }
        }
    }
}
