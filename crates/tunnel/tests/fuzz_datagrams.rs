//! Fuzzing what a tunnel daemon receives from the network.
//!
//! - **Opener**: random bytes and mutated genuine datagrams (bit flips, truncations at every
//!   length, extensions, changed kind, path, reserved field, epoch and packet number, swapped
//!   tags, headers and bodies), interleaved with genuine streams in order or shuffled, against
//!   a model of the documented checks (length, header, session and replay window, tag): every
//!   answer is the model's, nothing is accepted that is not byte-identical to a genuine datagram
//!   not yet accepted, every call is counted once, and garbage moves neither the window nor the
//!   session, so a genuine stream in order still opens entirely.
//! - **Messages**: `Message::decode` of any kind and body never panics, fails exactly when the
//!   kind is unknown or the body short, and what it decodes re-encodes to the body's prefix.
//! - **End to end**: one sender and one receiver over 2 to 4 simulated paths with their own
//!   delays, jitter, losses and duplicates both ways: data and keepalives sealed, opened, fed to
//!   the paths' receivers and the reordering buffer (polled at its deadlines), acknowledgements
//!   sealed back to the paths' senders; checked against what the simulation knows happened.
//!
//! In the test suite each target runs for `FUZZ_SECONDS` (default 1); `FUZZ_SEED` picks the
//! sequence, and a failure names the seed and round that replay it.
//!
//! The end-to-end target found two bugs, in `reorder` and `path` (both fixed): the two tests at
//! the end of this file keep each in its smallest case.

use mpsched_testkit::fuzz::Fuzz;
use mpsched_tunnel::path::{wire_us, PathConfig, PathReceiver, PathSender};
use mpsched_tunnel::reorder::ReorderBuffer;
use mpsched_tunnel::seal::{
    Keys, OpenStats, Opened, Opener, Role, SealError, Sealer, HEADER_BYTES, MAX_DATAGRAM_BYTES, OVERHEAD_BYTES,
    REPLAY_WINDOW, TAG_BYTES,
};
use mpsched_tunnel::wire::{Ack, DataHeader, Keepalive, Message, WireError, KIND_ACK, KIND_DATA, KIND_KEEPALIVE};
use std::cmp::Reverse;
use std::collections::{BTreeSet, BinaryHeap, HashMap, HashSet};

/// Default seconds of each target.
const SECONDS: u64 = 1;
const US: u64 = 1_000;
const MS: u64 = 1_000_000;

/// Run `round` over and over for the run's budget (at least once), naming the seed and round of
/// a failure; then require `min_rounds` when the budget was not zero.
fn drive(name: &str, default_seed: u64, min_rounds: u64, mut round: impl FnMut(&mut Fuzz)) {
    let mut r = Fuzz::from_env(SECONDS, default_seed);
    let (seconds, seed) = (r.seconds, r.seed);
    let started = std::time::Instant::now();
    let mut runs = 0u64;
    loop {
        let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| round(&mut r)));
        assert!(
            outcome.is_ok(),
            "{name}: FUZZ_SEED={seed}, round {runs}: see the panic above"
        );
        runs += 1;
        if !r.going() {
            break;
        }
    }
    println!(
        "{name}: {runs} rounds in {:.2} s (FUZZ_SECONDS={seconds}), seed {seed}",
        started.elapsed().as_secs_f64()
    );
    assert!(
        seconds == 0 || runs >= min_rounds,
        "{name}: only {runs} rounds in {seconds} s"
    );
}

fn bytes(r: &mut Fuzz, n: usize) -> Vec<u8> {
    (0..n).map(|_| r.draw() as u8).collect()
}

fn be64(b: &[u8]) -> u64 {
    u64::from_be_bytes(b.try_into().expect("8 bytes"))
}

// ---------------------------------------------------------------------------------------------
// 1. The opener against a model.
// ---------------------------------------------------------------------------------------------

/// A datagram a sealer made.
struct Genuine {
    bytes: Vec<u8>,
    epoch: u64,
    number: u64,
    kind: u8,
    path: u8,
    payload: Vec<u8>,
}

/// What the opener must do, by the order of checks its documentation gives: length, header,
/// session and replay window, then the tag (only a genuine datagram passes it).
struct OpenerModel {
    max: usize,
    epoch: Option<u64>,
    /// Numbers accepted in the current session.
    accepted: BTreeSet<u64>,
    /// Every genuine datagram ever accepted, by index.
    ever: HashSet<usize>,
    stats: OpenStats,
    calls: u64,
}

impl OpenerModel {
    fn new(max: usize) -> OpenerModel {
        OpenerModel {
            max,
            epoch: None,
            accepted: BTreeSet::new(),
            ever: HashSet::new(),
            stats: OpenStats::default(),
            calls: 0,
        }
    }

    fn window_admits(&self, n: u64) -> bool {
        match self.accepted.last() {
            None => true,
            Some(&h) => n > h || (h - n < REPLAY_WINDOW && !self.accepted.contains(&n)),
        }
    }

    /// The expected outcome: the index of the genuine datagram opened, or the refusal.
    fn expect(&self, d: &[u8], genuine: &HashMap<Vec<u8>, usize>) -> Result<usize, SealError> {
        if d.len() < OVERHEAD_BYTES {
            return Err(SealError::Truncated);
        }
        if d.len() > self.max {
            return Err(SealError::Oversized);
        }
        if d[2..4] != [0, 0] {
            return Err(SealError::BadHeader);
        }
        let (epoch, number) = (be64(&d[4..12]), be64(&d[12..20]));
        match self.epoch {
            Some(c) if epoch < c => return Err(SealError::Replayed),
            Some(c) if epoch == c && !self.window_admits(number) => return Err(SealError::Replayed),
            _ => {}
        }
        genuine.get(d).copied().ok_or(SealError::Forged)
    }

    fn record(&mut self, outcome: Result<usize, SealError>, all: &[Genuine]) {
        self.calls += 1;
        let s = &mut self.stats;
        match outcome {
            Ok(i) => {
                s.opened += 1;
                let g = &all[i];
                if self.epoch != Some(g.epoch) {
                    self.epoch = Some(g.epoch);
                    self.accepted.clear();
                    s.sessions += 1;
                }
                self.accepted.insert(g.number);
                self.ever.insert(i);
            }
            Err(SealError::Truncated) => s.truncated += 1,
            Err(SealError::Oversized) => s.oversized += 1,
            Err(SealError::BadHeader) => s.bad_header += 1,
            Err(SealError::Forged) => s.forged += 1,
            Err(SealError::Replayed) => s.replayed += 1,
            Err(e) => panic!("the model never expects {e:?}"),
        }
    }
}

/// Everything a round of the opener target shares.
struct OpenerRound {
    opener: Opener,
    model: OpenerModel,
    all: Vec<Genuine>,
    index: HashMap<Vec<u8>, usize>,
}

impl OpenerRound {
    /// Open `d`, check the answer, the payload, the counters, the session and the window.
    fn open(&mut self, d: &[u8], what: &str) -> Result<Opened, SealError> {
        let mut out = vec![0xee; 5]; // stale content: open must clear it
        let want = self.model.expect(d, &self.index);
        let got = self.opener.open(d, &mut out);
        match (&got, &want) {
            (Ok(opened), Ok(i)) => {
                let g = &self.all[*i];
                let fields = Opened {
                    kind: g.kind,
                    path: g.path,
                    packet_number: g.number,
                };
                assert_eq!(*opened, fields, "{what}: header fields");
                assert_eq!(out, g.payload, "{what}: payload");
            }
            (Err(e), Err(w)) => {
                assert_eq!(e, w, "{what}: {} bytes refused for the wrong reason", d.len());
                assert!(out.is_empty(), "{what}: refused ({e:?}) but left {} bytes", out.len());
            }
            _ => panic!("{what}: {} bytes: opener said {got:?}, expected {want:?}", d.len()),
        }
        if got.is_ok() {
            // Said directly, whatever the model: only a genuine datagram, and only once.
            let i = self
                .index
                .get(d)
                .unwrap_or_else(|| panic!("{what}: a datagram no sealer made was accepted"));
            assert!(
                !self.model.ever.contains(i),
                "{what}: genuine datagram {i} accepted twice"
            );
        }
        self.model.record(want, &self.all);
        let s = self.opener.stats();
        assert_eq!(*s, self.model.stats, "{what}: counters");
        let counted = s.opened + s.truncated + s.oversized + s.bad_header + s.forged + s.replayed;
        assert_eq!(counted, self.model.calls, "{what}: every call counted exactly once");
        assert_eq!(self.opener.epoch(), self.model.epoch, "{what}: session");
        assert_eq!(
            self.opener.window().highest(),
            self.model.accepted.last().copied(),
            "{what}: replay window"
        );
        got
    }
}

/// A datagram made from genuine `g`, changed (never byte-identical to `g`).
fn mutate(r: &mut Fuzz, g: &Genuine, all: &[Genuine]) -> (Vec<u8>, &'static str) {
    let mut d = g.bytes.clone();
    let other = &all[r.below(all.len())];
    let what = match r.below(12) {
        0 => {
            for _ in 0..1 + r.below(3) {
                let i = r.below(d.len());
                d[i] ^= 1 << r.below(8);
            }
            if d == g.bytes {
                d[HEADER_BYTES] ^= 1; // two flips of one bit cancelled out
            }
            "bit flips"
        }
        1 => {
            d.truncate(r.below(d.len()));
            "truncation"
        }
        2 => {
            let n = match r.below(32) {
                0 => MAX_DATAGRAM_BYTES + 1 - d.len() + r.below(2),
                _ => 1 + r.below(64),
            };
            let tail = bytes(r, n);
            d.extend_from_slice(&tail);
            "extension"
        }
        3 => {
            d[0] = d[0].wrapping_add(1 + r.below(255) as u8);
            "kind changed"
        }
        4 => {
            d[1] = d[1].wrapping_add(1 + r.below(255) as u8);
            "path changed"
        }
        5 => {
            let v = 1 + r.below(0xffff) as u16;
            d[2..4].copy_from_slice(&v.to_be_bytes());
            "reserved set"
        }
        6 => {
            let e = g.epoch;
            let e2 = match r.below(4) {
                0 => e.wrapping_add(1 + r.below(3) as u64),
                1 => e.wrapping_sub(1 + r.below(3) as u64),
                2 => other.epoch,
                _ => r.draw(),
            };
            let e2 = if e2 == e { e ^ 1 } else { e2 };
            d[4..12].copy_from_slice(&e2.to_be_bytes());
            "epoch changed"
        }
        7 => {
            let n = g.number;
            let n2 = match r.below(4) {
                0 => n.wrapping_add(1 + r.below(3) as u64),
                1 => n.wrapping_sub(1 + r.below(3) as u64),
                2 => other.number,
                _ => r.draw(),
            };
            let n2 = if n2 == n { n ^ 1 } else { n2 };
            d[12..20].copy_from_slice(&n2.to_be_bytes());
            "packet number changed"
        }
        8 => {
            let at = d.len() - TAG_BYTES;
            d[at..].copy_from_slice(&other.bytes[other.bytes.len() - TAG_BYTES..]);
            if d == g.bytes {
                d[at] ^= 0x80;
            }
            "tag swapped"
        }
        9 => {
            d[..HEADER_BYTES].copy_from_slice(&other.bytes[..HEADER_BYTES]);
            if d == g.bytes {
                d[0] ^= 0x40;
            }
            "header swapped"
        }
        10 => {
            d.truncate(HEADER_BYTES);
            d.extend_from_slice(&other.bytes[HEADER_BYTES..]);
            if d == g.bytes {
                d[HEADER_BYTES] ^= 0x02;
            }
            "body swapped"
        }
        _ => {
            // Ciphertext and tag both changed (or the tag alone, with an empty payload).
            let tag_at = d.len() - TAG_BYTES;
            if tag_at > HEADER_BYTES {
                let i = HEADER_BYTES + r.below(tag_at - HEADER_BYTES);
                d[i] ^= 1 + r.below(255) as u8;
            }
            let j = tag_at + r.below(TAG_BYTES);
            d[j] ^= 1 + r.below(255) as u8;
            "ciphertext and tag changed"
        }
    };
    assert_ne!(d, g.bytes, "a mutation ({what}) must change the datagram");
    (d, what)
}

/// Random bytes; half the time with a header that passes the clear checks (reserved 0, an epoch
/// of the round), so that authentication is what refuses them.
fn random_datagram(r: &mut Fuzz, all: &[Genuine]) -> Vec<u8> {
    let len = match r.below(4) {
        0 => r.below(OVERHEAD_BYTES + 1),
        _ => r.below(300),
    };
    let mut d = bytes(r, len);
    if d.len() >= HEADER_BYTES && r.flip() {
        let g = &all[r.below(all.len())];
        d[2..4].fill(0);
        d[4..12].copy_from_slice(&g.epoch.to_be_bytes());
        if r.flip() {
            d[12..20].copy_from_slice(&(g.number + r.below(4) as u64).to_be_bytes());
        }
    }
    d
}

fn opener_round(r: &mut Fuzz) {
    let n = 16 + r.below(33);
    let psk = bytes(r, n);
    let send = Keys::derive(&psk, Role::Initiator).expect("a long enough PSK");
    let receive = Keys::derive(&psk, Role::Responder).expect("a long enough PSK");

    // One to three sessions of the sender, newer epochs later; now and then one long enough to
    // have packets fall out of the replay window.
    let mut all = Vec::new();
    let mut epoch = r.draw() >> 2;
    let long = r.below(16) == 0;
    for s in 0..1 + r.below(3) {
        if s > 0 {
            epoch += 1 + r.below(1000) as u64;
        }
        let mut sealer = Sealer::new(&send, epoch);
        let n = match (long, s) {
            (true, 0) => REPLAY_WINDOW as usize + r.below(600),
            _ => 1 + r.below(40),
        };
        for _ in 0..n {
            let (kind, path) = (r.draw() as u8, r.draw() as u8);
            let n = if long { r.below(8) } else { r.below(201) };
            let payload = bytes(r, n);
            let mut b = Vec::new();
            let number = sealer
                .seal(kind, path, &payload, &mut b)
                .expect("a small payload seals");
            assert_eq!(b.len(), payload.len() + OVERHEAD_BYTES);
            all.push(Genuine {
                bytes: b,
                epoch,
                number,
                kind,
                path,
                payload,
            });
        }
    }
    let index: HashMap<Vec<u8>, usize> = all.iter().enumerate().map(|(i, g)| (g.bytes.clone(), i)).collect();
    assert_eq!(index.len(), all.len(), "genuine datagrams are all distinct");

    // In order (each must open) or shuffled within a spread, with replays (the model decides).
    let in_order = r.flip();
    let longest = all.iter().map(|g| g.bytes.len()).max().unwrap_or(0);
    let max = match (in_order, r.below(3)) {
        (_, 0) => MAX_DATAGRAM_BYTES,
        (true, _) => longest + r.below(64),
        (false, _) => r.below(OVERHEAD_BYTES + 240), // below the overhead too
    };
    let opener = match max {
        MAX_DATAGRAM_BYTES => Opener::new(&receive),
        _ => Opener::new(&receive).with_max_datagram_bytes(max),
    };
    let mut order: Vec<usize> = (0..all.len()).collect();
    if !in_order {
        let spread = [2, 16, 3 * REPLAY_WINDOW as usize][r.below(3)];
        let mut keyed: Vec<(usize, usize)> = order.iter().map(|&i| (i + r.below(spread), i)).collect();
        for _ in 0..r.below(all.len() / 4 + 1) {
            let i = r.below(all.len());
            keyed.push((i + r.below(spread + 10), i)); // a replayed copy
        }
        keyed.sort();
        order = keyed.into_iter().map(|(_, i)| i).collect();
    }
    let mut t = OpenerRound {
        opener,
        model: OpenerModel::new(max),
        all,
        index,
    };

    // One datagram truncated at every length, and extended by every length up to 40.
    let g = r.below(t.all.len());
    let d = t.all[g].bytes.clone();
    for len in 0..d.len() {
        let _ = t.open(&d[..len], &format!("genuine {g} truncated to {len} bytes"));
    }
    for extra in 1..=40 {
        let mut e = d.clone();
        e.extend(std::iter::repeat_n(0u8, extra));
        let _ = t.open(&e, &format!("genuine {g} extended by {extra} bytes"));
    }

    for (pos, &i) in order.iter().enumerate() {
        for _ in 0..r.below(4) {
            let (garbage, what) = match r.below(8) {
                0 => (random_datagram(r, &t.all), "random bytes"),
                1 if pos > 0 => (t.all[order[r.below(pos)]].bytes.clone(), "replay of an earlier one"),
                _ => {
                    let j = r.below(t.all.len());
                    mutate(r, &t.all[j], &t.all)
                }
            };
            if in_order && t.index.get(&garbage).is_some_and(|j| !t.model.ever.contains(j)) {
                continue; // a genuine datagram not yet opened is no garbage
            }
            let what = format!("{what} before genuine {i} (position {pos})");
            let (window, epoch) = (t.opener.window().highest(), t.opener.epoch());
            if t.open(&garbage, &what).is_err() {
                assert_eq!(t.opener.window().highest(), window, "{what}: refused, moved the window");
                assert_eq!(t.opener.epoch(), epoch, "{what}: refused, changed the session");
            }
        }
        let what = format!("genuine {i} at position {pos} (in order: {in_order})");
        let opened = t.open(&t.all[i].bytes.clone(), &what);
        if in_order {
            assert!(
                opened.is_ok(),
                "{what}: a genuine stream in order must open: {opened:?}"
            );
        }
    }
    if in_order {
        assert_eq!(t.opener.stats().opened, t.all.len() as u64);
        let sessions = t.all.iter().map(|g| g.epoch).collect::<BTreeSet<_>>().len();
        assert_eq!(t.opener.stats().sessions, sessions as u64);
    }
}

#[test]
fn the_opener_refuses_garbage_for_the_documented_reason_and_garbage_moves_nothing() {
    drive("fuzz_datagrams/opener", 0x5ea1_0001, 20, opener_round);
}

// ---------------------------------------------------------------------------------------------
// 2. Message decoding.
// ---------------------------------------------------------------------------------------------

fn header_bytes_of(kind: u8) -> Option<usize> {
    match kind {
        KIND_DATA => Some(DataHeader::BYTES),
        KIND_ACK => Some(Ack::BYTES),
        KIND_KEEPALIVE => Some(Keepalive::BYTES),
        _ => None,
    }
}

fn decode_round(r: &mut Fuzz) {
    for _ in 0..64 {
        let kind = match r.below(4) {
            0 => r.draw() as u8,
            _ => 1 + r.below(3) as u8,
        };
        let len = match r.below(8) {
            0 => r.below(1600),
            _ => r.below(24),
        };
        let body = bytes(r, len);
        let decoded = Message::decode(kind, &body);
        match (header_bytes_of(kind), &decoded) {
            (None, _) => assert_eq!(decoded, Err(WireError::UnknownKind(kind))),
            (Some(n), Err(e)) => {
                assert_eq!(*e, WireError::Truncated, "kind {kind}, {len} bytes");
                assert!(len < n, "kind {kind}: {len} bytes is enough, yet {e:?}");
            }
            (Some(n), Ok(_)) => assert!(len >= n, "kind {kind}: decoded from {len} bytes"),
        }
        let mut again = Vec::new();
        match decoded {
            Ok(Message::Data(h, inner)) => {
                assert_eq!(kind, KIND_DATA);
                h.encode(&mut again);
                assert_eq!(h.to_bytes()[..], again[..]);
                again.extend_from_slice(inner);
                assert_eq!(again, body, "a data message is its header and the inner packet");
            }
            Ok(Message::Ack(a)) => {
                assert_eq!(kind, KIND_ACK);
                a.encode(&mut again);
                assert_eq!(again[..], body[..Ack::BYTES]);
            }
            Ok(Message::Keepalive(k)) => {
                assert_eq!(kind, KIND_KEEPALIVE);
                k.encode(&mut again);
                assert_eq!(again[..], body[..Keepalive::BYTES]);
            }
            Err(_) => {}
        }

        // And the other way: an encoded message, trailing bytes after it, decodes to itself.
        let w = [r.draw() as u32, r.draw() as u32, r.draw() as u32, r.draw() as u32];
        let n = r.below(20);
        let tail = bytes(r, n);
        let mut b = Vec::new();
        match r.below(3) {
            0 => {
                let h = DataHeader {
                    path_seq: w[0],
                    tunnel_seq: w[1],
                    sent_us: w[2],
                };
                h.encode(&mut b);
                b.extend_from_slice(&tail);
                assert_eq!(Message::decode(KIND_DATA, &b), Ok(Message::Data(h, &tail[..])));
            }
            1 => {
                let a = Ack {
                    highest_seq: w[0],
                    received: w[1],
                    echo_us: w[2],
                    ack_delay_us: w[3],
                };
                a.encode(&mut b);
                b.extend_from_slice(&tail);
                assert_eq!(Message::decode(KIND_ACK, &b), Ok(Message::Ack(a)));
            }
            _ => {
                let k = Keepalive {
                    path_seq: w[0],
                    sent_us: w[1],
                    tunnel_next: w[2],
                };
                k.encode(&mut b);
                b.extend_from_slice(&tail);
                assert_eq!(Message::decode(KIND_KEEPALIVE, &b), Ok(Message::Keepalive(k)));
            }
        }
    }
}

#[test]
fn any_message_body_decodes_or_fails_for_its_reason_and_re_encodes_to_its_prefix() {
    drive("fuzz_datagrams/messages", 0x5ea1_0002, 100, decode_round);
}

// ---------------------------------------------------------------------------------------------
// 3. End to end over simulated paths.
// ---------------------------------------------------------------------------------------------

/// One direction of one path: delay (base and jitter), loss and duplication, in thousandths.
#[derive(Clone, Copy, Debug)]
struct Link {
    base_ns: u64,
    jitter_ns: u64,
    loss: usize,
    dup: usize,
}

impl Link {
    fn random(r: &mut Fuzz) -> Link {
        Link {
            base_ns: (1 + r.below(150)) as u64 * MS + r.below(1000) as u64 * US,
            jitter_ns: match r.below(3) {
                0 => 0,
                1 => r.below(2_000) as u64 * US,
                _ => r.below(40_000) as u64 * US,
            },
            loss: [0, 0, 0, 10, 100, 300, 1000][r.below(7)],
            dup: [0, 0, 20, 200][r.below(4)],
        }
    }

    fn max_delay_ns(&self) -> u64 {
        self.base_ns + self.jitter_ns
    }

    /// The delays of the copies of one datagram that arrive (none when all are lost). Times
    /// stay whole microseconds, so the wire's microsecond clocks lose nothing.
    fn copies(&self, r: &mut Fuzz) -> Vec<u64> {
        let n = 1 + usize::from(r.below(1000) < self.dup) + usize::from(r.below(1000) < self.dup / 4);
        let mut delays = Vec::new();
        for _ in 0..n {
            if r.below(1000) >= self.loss {
                delays.push(self.base_ns + r.below((self.jitter_ns / US) as usize + 1) as u64 * US);
            }
        }
        delays
    }
}

/// A datagram in the network.
#[derive(PartialEq, Eq, PartialOrd, Ord)]
enum Event {
    /// Data or a keepalive reaching the exit on `path`; `number` is its packet number.
    AtExit { path: usize, number: u64, bytes: Vec<u8> },
    /// An acknowledgement reaching the entry.
    AtEntry { path: usize, number: u64, bytes: Vec<u8> },
}

/// What the entry sent under a packet number.
#[derive(Clone, Copy)]
enum Sent {
    /// Data: its index in the tunnel's order.
    Data(usize),
    Keepalive,
}

/// A data packet sent.
struct DataSent {
    path: usize,
    path_seq: u64,
    sent_ns: u64,
    inner: Vec<u8>,
}

/// An acknowledgement the exit sent, as it knew it.
struct AckSent {
    path: usize,
    highest: u64,
    received: u64,
    /// One-way delay of the message numbered `highest` (its first copy to open).
    fwd_ns: u64,
    generated_ns: u64,
}

/// What the entry knows of one path, beside its `PathSender`.
#[derive(Default)]
struct SenderBook {
    sent_ns: Vec<u64>,
    max_acked: Option<u64>,
    /// `received` of the acknowledgement taken last, and the most any acknowledgement reported.
    last_received: u64,
    max_received: u64,
    min_rtt_ns: Option<u64>,
    max_rtt_ns: u64,
    downs: u64,
    /// A datagram of this path (either way) was refused for being older than the window.
    window_refused: bool,
}

/// What the exit knows of one path, beside its `PathReceiver`.
#[derive(Default)]
struct ReceiverBook {
    arrival_ns: Vec<Option<u64>>,
    highest: Option<u64>,
    count: u64,
    unacked: u32,
    first_unacked_ns: u64,
}

/// Which packet numbers one direction's opener took, to judge each of its answers.
#[derive(Default)]
struct Seen {
    opened: HashSet<u64>,
    highest: Option<u64>,
}

impl Seen {
    /// Check the answer to a genuine datagram numbered `n`; returns whether it was refused for
    /// being older than the window (a copy not opened before).
    fn judge(&mut self, n: u64, result: &Result<Opened, SealError>, what: &str) -> bool {
        let too_old = self.highest.is_some_and(|h| h >= n + REPLAY_WINDOW);
        match result {
            Ok(o) => {
                assert_eq!(o.packet_number, n, "{what}");
                assert!(
                    !too_old,
                    "{what}: packet {n} opened, older than the window ({:?})",
                    self.highest
                );
                assert!(self.opened.insert(n), "{what}: packet {n} opened twice");
                self.highest = self.highest.max(Some(n));
                false
            }
            Err(SealError::Replayed) => {
                let again = self.opened.contains(&n);
                assert!(
                    again || too_old,
                    "{what}: packet {n} refused as a replay, neither opened before nor older than the window (highest {:?})",
                    self.highest
                );
                !again
            }
            Err(e) => panic!("{what}: genuine packet {n} refused: {e:?}"),
        }
    }
}

struct Tunnel {
    cfg: PathConfig,
    fwd: Vec<Link>,
    rev: Vec<Link>,
    now: u64,
    start_tunnel_seq: u32,
    // The entry: it sends data and keepalives, and takes acknowledgements.
    sealer: Sealer,
    senders: Vec<PathSender>,
    ack_opener: Opener,
    // The exit: it opens, acknowledges and reorders.
    opener: Opener,
    receivers: Vec<PathReceiver>,
    reorder: ReorderBuffer<usize>,
    capacity: u64,
    timeout_ns: u64,
    ack_sealer: Sealer,
    // The network.
    queue: BinaryHeap<Reverse<(u64, u64, Event)>>,
    scheduled: u64,
    // What the simulation knows.
    sent: Vec<Sent>,
    data: Vec<DataSent>,
    acks: Vec<AckSent>,
    sender_books: Vec<SenderBook>,
    receiver_books: Vec<ReceiverBook>,
    exit_seen: Seen,
    entry_seen: Seen,
    /// Per data packet: opened at the exit, pushed into the buffer, delivered (times).
    opened: Vec<bool>,
    pushed_ns: Vec<Option<u64>>,
    delivered_ns: Vec<Option<u64>>,
    waiting: BTreeSet<usize>,
    delivered: u64,
    max_delivered: Option<usize>,
    backwards: u64,
}

impl Tunnel {
    fn new(r: &mut Fuzz) -> Tunnel {
        let paths = 2 + r.below(3);
        let cfg = PathConfig {
            ack_every: 1 + r.below(4) as u32,
            ack_delay_max_ns: (1 + r.below(10_000)) as u64 * US,
            dead_after_ns: (200 + r.below(600)) as u64 * MS,
            ..PathConfig::default()
        };
        let psk = bytes(r, 32);
        let entry_keys = Keys::derive(&psk, Role::Initiator).expect("32 bytes");
        let exit_keys = Keys::derive(&psk, Role::Responder).expect("32 bytes");
        let capacity = [1, 2, 4, 16, 64, 256, 1024][r.below(7)];
        let timeout_ns = match r.below(3) {
            0 => (1 + r.below(400_000)) as u64 * US, // beyond the paths' delay differences
            _ => (1 + r.below(50_000)) as u64 * US,
        };
        // The microsecond clock on the wire wraps every 2^32 us: start a few seconds before.
        let now = ((1 + r.below(3)) as u64 * (1 << 32) - r.below(5_000_000) as u64) * US;
        Tunnel {
            cfg,
            fwd: (0..paths).map(|_| Link::random(r)).collect(),
            rev: (0..paths).map(|_| Link::random(r)).collect(),
            now,
            start_tunnel_seq: match r.flip() {
                true => u32::MAX - r.below(3000) as u32,
                false => r.draw() as u32,
            },
            sealer: Sealer::new(&entry_keys, r.draw() >> 1),
            senders: (0..paths).map(|_| PathSender::new(cfg)).collect(),
            ack_opener: Opener::new(&entry_keys),
            opener: Opener::new(&exit_keys),
            receivers: (0..paths).map(|_| PathReceiver::new(&cfg)).collect(),
            reorder: ReorderBuffer::new(capacity, timeout_ns),
            capacity: capacity as u64,
            timeout_ns,
            ack_sealer: Sealer::new(&exit_keys, r.draw() >> 1),
            queue: BinaryHeap::new(),
            scheduled: 0,
            sent: Vec::new(),
            data: Vec::new(),
            acks: Vec::new(),
            sender_books: (0..paths).map(|_| SenderBook::default()).collect(),
            receiver_books: (0..paths).map(|_| ReceiverBook::default()).collect(),
            exit_seen: Seen::default(),
            entry_seen: Seen::default(),
            opened: Vec::new(),
            pushed_ns: Vec::new(),
            delivered_ns: Vec::new(),
            waiting: BTreeSet::new(),
            delivered: 0,
            max_delivered: None,
            backwards: 0,
        }
    }

    fn paths(&self) -> usize {
        self.senders.len()
    }

    fn schedule(&mut self, at: u64, e: Event) {
        self.scheduled += 1;
        self.queue.push(Reverse((at, self.scheduled, e)));
    }

    /// The entry sends data (or now and then a keepalive) on a random path.
    fn send(&mut self, r: &mut Fuzz) {
        let now = self.now;
        let p = r.below(self.paths());
        let keepalive = r.below(20) == 0;
        let (path_seq, sent_us) = self.senders[p].on_send(now);
        let book = &mut self.sender_books[p];
        assert_eq!(
            u64::from(path_seq),
            book.sent_ns.len() as u64,
            "path {p} numbers from 0 up"
        );
        assert_eq!(sent_us, wire_us(now));
        book.sent_ns.push(now);
        let mut body = Vec::new();
        let kind = if keepalive {
            Keepalive {
                path_seq,
                sent_us,
                tunnel_next: self.data.len() as u32,
            }
            .encode(&mut body);
            self.sent.push(Sent::Keepalive);
            KIND_KEEPALIVE
        } else {
            let k = self.data.len();
            let h = DataHeader {
                path_seq,
                tunnel_seq: self.start_tunnel_seq.wrapping_add(k as u32),
                sent_us,
            };
            let mut inner = (k as u64).to_be_bytes().to_vec();
            let n = r.below(64);
            inner.extend(bytes(r, n));
            h.encode(&mut body);
            body.extend_from_slice(&inner);
            self.data.push(DataSent {
                path: p,
                path_seq: u64::from(path_seq),
                sent_ns: now,
                inner,
            });
            self.opened.push(false);
            self.pushed_ns.push(None);
            self.delivered_ns.push(None);
            self.sent.push(Sent::Data(k));
            KIND_DATA
        };
        let mut d = Vec::new();
        let number = self.sealer.seal(kind, p as u8, &body, &mut d).expect("seals");
        assert_eq!(number as usize, self.sent.len() - 1, "packet numbers count from 0");
        for delay in self.fwd[p].copies(r) {
            let bytes = d.clone();
            self.schedule(now + delay, Event::AtExit { path: p, number, bytes });
        }
        self.check_sender(p);
    }

    /// A datagram reaches the exit.
    fn at_exit(&mut self, r: &mut Fuzz, path: usize, number: u64, d: &[u8]) {
        let mut payload = Vec::new();
        let result = self.opener.open(d, &mut payload);
        let what = format!("exit, path {path}, packet {number}");
        if self.exit_seen.judge(number, &result, &what) {
            self.sender_books[path].window_refused = true;
        }
        let Ok(opened) = result else { return };
        assert_eq!(usize::from(opened.path), path, "{what}");
        let message = Message::decode(opened.kind, &payload).expect("a genuine message decodes");
        match (self.sent[number as usize], message) {
            (Sent::Data(k), Message::Data(h, inner)) => {
                let s = &self.data[k];
                let want = DataHeader {
                    path_seq: s.path_seq as u32,
                    tunnel_seq: self.start_tunnel_seq.wrapping_add(k as u32),
                    sent_us: wire_us(s.sent_ns),
                };
                assert_eq!((s.path, h), (path, want), "{what}");
                assert_eq!(inner, s.inner, "{what}: inner packet");
                assert!(!self.opened[k], "{what}: data {k} opened twice");
                self.opened[k] = true;
                self.receive(r, path, h.path_seq, h.sent_us, false);
                self.push(h.tunnel_seq, k);
            }
            (Sent::Keepalive, Message::Keepalive(ka)) => {
                assert_eq!(
                    wire_us(self.sender_books[path].sent_ns[ka.path_seq as usize]),
                    ka.sent_us
                );
                self.receive(r, path, ka.path_seq, ka.sent_us, true);
            }
            (_, m) => panic!("{what}: opened as {m:?}, not what was sent"),
        }
    }

    /// The exit's path receiver takes a message; it acknowledges when due.
    fn receive(&mut self, r: &mut Fuzz, path: usize, path_seq: u32, sent_us: u32, keepalive: bool) {
        let now = self.now;
        let b = &mut self.receiver_books[path];
        let seq = u64::from(path_seq);
        if b.arrival_ns.len() <= seq as usize {
            b.arrival_ns.resize(seq as usize + 1, None);
        }
        assert!(
            b.arrival_ns[seq as usize].is_none(),
            "path {path}: message {seq} received twice"
        );
        b.arrival_ns[seq as usize] = Some(now);
        b.highest = b.highest.max(Some(seq));
        b.count += 1;
        if b.unacked == 0 {
            b.first_unacked_ns = now;
        }
        b.unacked += 1;
        let due = self.receivers[path].on_message(path_seq, sent_us, now, keepalive);
        assert_eq!(
            due,
            keepalive || b.unacked >= self.cfg.ack_every,
            "path {path}: acknowledgement due after {} messages (keepalive {keepalive})",
            b.unacked
        );
        assert_eq!(
            self.receivers[path].ack_deadline_ns(),
            Some(b.first_unacked_ns + self.cfg.ack_delay_max_ns),
            "path {path}: acknowledgement deadline"
        );
        if due {
            self.send_ack(r, path);
        }
    }

    /// The exit acknowledges `path`.
    fn send_ack(&mut self, r: &mut Fuzz, path: usize) {
        let now = self.now;
        let ack = self.receivers[path]
            .ack(now)
            .expect("an acknowledgement falls due after a message");
        let b = &mut self.receiver_books[path];
        b.unacked = 0;
        let h = b.highest.expect("a message arrived");
        let arrived = b.arrival_ns[h as usize].expect("the highest arrived");
        let sent = self.sender_books[path].sent_ns[h as usize];
        let want = Ack {
            highest_seq: h as u32,
            received: b.count as u32,
            echo_us: wire_us(sent),
            ack_delay_us: ((now - arrived) / US) as u32,
        };
        assert_eq!(ack, want, "path {path}: acknowledgement at {now}");
        assert_eq!(
            self.receivers[path].ack_deadline_ns(),
            None,
            "path {path}: acknowledged"
        );
        let mut body = Vec::new();
        ack.encode(&mut body);
        let mut d = Vec::new();
        let number = self
            .ack_sealer
            .seal(KIND_ACK, path as u8, &body, &mut d)
            .expect("seals");
        assert_eq!(number as usize, self.acks.len());
        self.acks.push(AckSent {
            path,
            highest: h,
            received: b.count,
            fwd_ns: arrived - sent,
            generated_ns: now,
        });
        for delay in self.rev[path].copies(r) {
            let bytes = d.clone();
            self.schedule(now + delay, Event::AtEntry { path, number, bytes });
        }
    }

    /// An acknowledgement reaches the entry.
    fn at_entry(&mut self, path: usize, number: u64, d: &[u8]) {
        let now = self.now;
        let mut payload = Vec::new();
        let result = self.ack_opener.open(d, &mut payload);
        let what = format!("entry, path {path}, acknowledgement {number}");
        if self.entry_seen.judge(number, &result, &what) {
            self.sender_books[path].window_refused = true;
        }
        let Ok(opened) = result else { return };
        assert_eq!((usize::from(opened.path), opened.kind), (path, KIND_ACK), "{what}");
        let Ok(Message::Ack(ack)) = Message::decode(opened.kind, &payload) else {
            panic!("{what}: not an acknowledgement")
        };
        let info = &self.acks[number as usize];
        assert_eq!((info.path, u64::from(ack.highest_seq)), (path, info.highest), "{what}");
        let b = &mut self.sender_books[path];
        // Taken unless it reports less than one taken before: a lower highest number, or the
        // same with fewer received (an older acknowledgement overtaken by a newer one).
        let fresh = b
            .max_acked
            .is_none_or(|m| info.highest > m || (info.highest == m && info.received >= b.max_received));
        let took = self.senders[path].on_ack(&ack, now);
        assert_eq!(
            took, fresh,
            "{what}: highest {} after {:?}: taken {took}",
            info.highest, b.max_acked
        );
        if took {
            b.max_acked = Some(info.highest);
            b.last_received = info.received;
            b.max_received = b.max_received.max(info.received);
            let rtt = info.fwd_ns + (now - info.generated_ns);
            b.min_rtt_ns = Some(b.min_rtt_ns.map_or(rtt, |m| m.min(rtt)));
            b.max_rtt_ns = b.max_rtt_ns.max(rtt);
            let v = self.senders[path].view();
            assert_eq!(v.latest_rtt_ns, rtt, "{what}: RTT sample (both one-way delays)");
            assert_eq!(Some(v.min_rtt_ns), b.min_rtt_ns, "{what}: minimum RTT");
            assert!(
                (v.min_rtt_ns..=b.max_rtt_ns).contains(&v.srtt_ns),
                "{what}: smoothed RTT {} outside the samples' range",
                v.srtt_ns
            );
            assert!(
                self.senders[path].is_up(),
                "{what}: an acknowledgement brings the path up"
            );
        }
        self.check_sender(path);
    }

    /// The sender's view of `path` against what was sent and acknowledged.
    fn check_sender(&self, path: usize) {
        let v = self.senders[path].view();
        let b = &self.sender_books[path];
        let sent = b.sent_ns.len() as u64;
        assert_eq!(v.sent, sent, "path {path}: sent");
        assert!(
            v.in_flight <= v.sent,
            "path {path}: in flight {} > sent {}",
            v.in_flight,
            v.sent
        );
        assert!(v.lost <= v.sent, "path {path}: lost {} > sent {}", v.lost, v.sent);
        assert!(v.acked + v.lost <= v.sent, "path {path}: acked + lost > sent ({v:?})");
        let acked_through = b.max_acked.map_or(0, |h| h + 1);
        assert_eq!(v.in_flight, sent - acked_through, "path {path}: in flight");
        assert_eq!(v.acked, b.last_received, "path {path}: acked");
        assert_eq!(v.lost, acked_through - b.last_received, "path {path}: lost");
        // An older acknowledgement arriving after a newer one takes nothing back.
        assert_eq!(v.acked, b.max_received, "path {path}: acked went back");
    }

    /// The exit's reordering buffer takes data packet `k`.
    fn push(&mut self, tunnel_seq: u32, k: usize) {
        let now = self.now;
        assert!(self.pushed_ns[k].is_none());
        self.pushed_ns[k] = Some(now);
        self.waiting.insert(k);
        let mut out = Vec::new();
        self.reorder.push(tunnel_seq, now, k, &mut out);
        self.deliver(out, &format!("push of {k}"));
    }

    /// The buffer's timeout, polled at its deadline.
    fn poll(&mut self) {
        let now = self.now;
        let mut out = Vec::new();
        self.reorder.poll(now, &mut out);
        self.deliver(out, &format!("poll at {now}"));
        let next = self.reorder.deadline_ns();
        assert!(
            next.is_none_or(|d| d > now),
            "a poll at its deadline {now} left {next:?}"
        );
    }

    fn deliver(&mut self, out: Vec<usize>, what: &str) {
        let now = self.now;
        for k in out {
            let pushed = self.pushed_ns[k].unwrap_or_else(|| panic!("{what}: {k} delivered, never pushed"));
            assert!(self.delivered_ns[k].is_none(), "{what}: {k} delivered twice");
            self.delivered_ns[k] = Some(now);
            self.waiting.remove(&k);
            self.delivered += 1;
            assert!(
                now - pushed <= self.timeout_ns,
                "{what}: {k} waited {} ns, timeout {} ns",
                now - pushed,
                self.timeout_ns
            );
            if self.max_delivered.is_some_and(|m| k < m) {
                self.backwards += 1;
            }
            self.max_delivered = self.max_delivered.max(Some(k));
        }
        let s = self.reorder.stats();
        assert_eq!(s.occupancy, self.waiting.len() as u64, "{what}: occupancy");
        assert!(
            s.max_occupancy <= self.capacity,
            "{what}: occupancy {} > capacity",
            s.max_occupancy
        );
        assert_eq!(
            s.in_order + s.held + s.late,
            self.delivered,
            "{what}: deliveries counted"
        );
        assert_eq!(s.duplicates, 0, "{what}: no duplicate reaches the buffer");
        assert!(
            self.backwards <= s.late,
            "{what}: {} out of order, {} late",
            self.backwards,
            s.late
        );
        assert!(s.held_ns_max <= self.timeout_ns, "{what}: held {} ns", s.held_ns_max);
        // A packet waits only behind a gap: a number after everything delivered and before it
        // that has not arrived. (The first packet always leaves at once.)
        if let Some(&w) = self.waiting.first() {
            let m = self
                .max_delivered
                .unwrap_or_else(|| panic!("{what}: {w} waits, nothing left yet"));
            assert!(
                (m + 1..w).any(|n| self.pushed_ns[n].is_none()),
                "{what}: packet {w} waits with no gap before it (everything after {m}, the last delivered, has arrived)"
            );
        }
    }

    fn run(&mut self, r: &mut Fuzz) {
        let burst = r.below(8) == 0;
        let mut to_send = match burst {
            true => 1 + r.below(3000),
            false => 1 + r.below(1200),
        };
        let gap = |r: &mut Fuzz| match burst {
            true => r.below(20) as u64 * US,
            false => r.below(2_000) as u64 * US,
        };
        let mut next_send = self.now;
        let mut steps = 0u64;
        loop {
            steps += 1;
            assert!(steps < 1_000_000, "the simulation does not end");
            let t_send = (to_send > 0).then_some(next_send);
            let t_net = self.queue.peek().map(|Reverse((t, _, _))| *t);
            let t_ack = self.receivers.iter().filter_map(|x| x.ack_deadline_ns()).min();
            let t_reorder = self.reorder.deadline_ns();
            let Some(now) = [t_reorder, t_ack, t_net, t_send].into_iter().flatten().min() else {
                break;
            };
            assert!(now >= self.now, "time went back: {now} < {}", self.now);
            self.now = now;
            for p in 0..self.paths() {
                if self.senders[p].poll_liveness(now) {
                    self.sender_books[p].downs += 1;
                }
            }
            if t_reorder == Some(now) {
                self.poll();
            } else if t_ack == Some(now) {
                for p in 0..self.paths() {
                    if self.receivers[p].ack_deadline_ns() == Some(now) {
                        self.send_ack(r, p);
                    }
                }
            } else if t_net == Some(now) {
                let Some(Reverse((_, _, e))) = self.queue.pop() else {
                    unreachable!()
                };
                match e {
                    Event::AtExit { path, number, bytes } => self.at_exit(r, path, number, &bytes),
                    Event::AtEntry { path, number, bytes } => self.at_entry(path, number, &bytes),
                }
            } else {
                self.send(r);
                to_send -= 1;
                next_send = now + gap(r);
            }
        }
        self.finish();
    }

    /// After the last event: what opened was delivered, the paths' final accounts.
    fn finish(&mut self) {
        for (k, d) in self.data.iter().enumerate() {
            assert_eq!(
                self.delivered_ns[k].is_some(),
                self.opened[k],
                "data {k} (path {}, sent at {}): opened {}, delivered {:?}",
                d.path,
                d.sent_ns,
                self.opened[k],
                self.delivered_ns[k]
            );
        }
        assert!(self.waiting.is_empty() && self.reorder.deadline_ns().is_none());
        let s = self.opener.stats();
        let refused = s.truncated + s.oversized + s.bad_header + s.forged;
        assert_eq!(refused, 0, "the network damages nothing: {s:?}");

        let now = self.now + MS;
        for p in 0..self.paths() {
            let b = &self.sender_books[p];
            let sent = b.sent_ns.len() as u64;
            // A path never acknowledged goes down once, `dead_after` after its first message.
            if b.max_acked.is_none() && sent > 0 {
                let at = now.max(b.sent_ns[0] + self.cfg.dead_after_ns);
                if self.senders[p].poll_liveness(at) {
                    self.sender_books[p].downs += 1;
                }
                assert!(!self.senders[p].is_up(), "path {p}: never acknowledged, still up");
            }
            let b = &self.sender_books[p];
            let v = self.senders[p].view();
            assert_eq!(v.downs, b.downs, "path {p}: downs counted as reported");
            // A path that loses nothing either way, and whose acknowledgements come back well
            // within `dead_after`, never goes down.
            let bound = self.fwd[p].max_delay_ns() + self.cfg.ack_delay_max_ns + self.rev[p].max_delay_ns();
            let clean = self.fwd[p].loss == 0 && self.rev[p].loss == 0 && !b.window_refused;
            if clean && bound < self.cfg.dead_after_ns {
                assert_eq!(
                    v.downs, 0,
                    "path {p} lost nothing, yet went down (acks within {bound} ns)"
                );
            }
            // A last acknowledgement, delivered at once: the sender's account is exact.
            let rb = &self.receiver_books[p];
            if let Some(ack) = self.receivers[p].ack(now) {
                let h = rb.highest.expect("something arrived");
                assert!(
                    self.senders[p].on_ack(&ack, now),
                    "path {p}: the newest acknowledgement"
                );
                let v = self.senders[p].view();
                let never = (0..=h as usize).filter(|&s| rb.arrival_ns[s].is_none()).count() as u64;
                assert_eq!(
                    (v.acked, v.lost, v.in_flight),
                    (rb.count, never, sent - h - 1),
                    "path {p}"
                );
                assert!(v.up, "path {p}: acknowledged");
            }
        }
    }
}

fn end_to_end_round(r: &mut Fuzz) {
    let mut t = Tunnel::new(r);
    t.run(r);
}

#[test]
fn over_lossy_reordering_paths_each_packet_leaves_once_in_order_or_late_within_the_timeout() {
    drive("fuzz_datagrams/end-to-end", 0x5ea1_0003, 10, end_to_end_round);
}

// ---------------------------------------------------------------------------------------------
// Bugs the targets above found (fixed), as the smallest cases that showed them.
// ---------------------------------------------------------------------------------------------

/// Found (reorder.rs, `ReorderBuffer::push`, fixed): when a packet a ring ahead of the gap makes room, and
/// giving up the gap delivers everything up to it, the packet itself is stored in the ring at
/// the next expected number instead of being delivered: it waits for the timeout (or for a
/// duplicate of it) with nothing missing before it.
#[test]
fn a_packet_that_makes_room_is_delivered_when_nothing_is_missing_before_it() {
    let mut b = ReorderBuffer::new(4, 100 * MS);
    let mut out = Vec::new();
    for seq in [0, 2, 3, 4] {
        b.push(seq, 0, seq, &mut out);
    }
    assert_eq!(out, [0], "2, 3 and 4 wait for 1");
    out.clear();
    // 5 needs the ring to start at 2: 1 is given up, 2, 3 and 4 leave, and 5 is next.
    b.push(5, MS, 5, &mut out);
    assert_eq!(
        (out.as_slice(), b.stats().occupancy, b.deadline_ns()),
        (&[2, 3, 4, 5][..], 0, None),
        "5 is the next expected number once 1 is given up: it must leave at once, not wait"
    );
}

/// Found (path.rs, `PathSender::on_ack`, fixed): an acknowledgement with the same highest number as the
/// one taken last, but sent before it (a smaller count received), is taken when the two arrive
/// out of order: `acked` goes back, and `lost` counts a message the receiver already reported.
#[test]
fn a_reordered_acknowledgement_does_not_take_back_what_a_newer_one_reported() {
    let cfg = PathConfig::default();
    let (mut tx, mut rx) = (PathSender::new(cfg), PathReceiver::new(&cfg));
    let sent: Vec<(u32, u32)> = (0..3).map(|i| tx.on_send(i * MS)).collect();
    // 0 and 2 arrive, then 1 (overtaken on the path): one acknowledgement after 2, one after 1.
    rx.on_message(sent[0].0, sent[0].1, 10 * MS, false);
    rx.on_message(sent[2].0, sent[2].1, 12 * MS, false);
    let older = rx.ack(12 * MS).expect("two messages arrived");
    rx.on_message(sent[1].0, sent[1].1, 13 * MS, false);
    let newer = rx.ack(18 * MS).expect("a message arrived");
    assert_eq!(
        (older.highest_seq, older.received, newer.highest_seq, newer.received),
        (2, 2, 2, 3)
    );
    // The newer overtakes the older on the way back.
    assert!(tx.on_ack(&newer, 30 * MS));
    assert_eq!((tx.view().acked, tx.view().lost), (3, 0));
    tx.on_ack(&older, 31 * MS);
    let v = tx.view();
    assert_eq!(
        (v.acked, v.lost),
        (3, 0),
        "the older acknowledgement (received 2) must not undo the newer (received 3)"
    );
}
