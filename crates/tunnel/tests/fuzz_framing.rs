//! Fuzzing the TCP subtunnels' framing: streams of records (a `FrameHeader`, then the packet)
//! written back to back, cut into chunks of random sizes as a TCP receiver gets them, must read
//! back record by record; random bytes must decode as a header exactly when there are enough
//! of them, never panic; and the record queue that tells the exit which packets a stream has
//! delivered must agree with a plain model under random writes and deliveries, in order and
//! out of it.
//!
//! In the test suite it runs for `FUZZ_SECONDS` (default 2); `FUZZ_SEED` picks the sequence.

use mpsched_testkit::fuzz::Fuzz;
use mpsched_tunnel::framing::{FrameHeader, RecordQueue};
use std::collections::VecDeque;

/// Read records from a stream that arrives in `chunks`, as a subtunnel's exit would: keep what
/// came, take a header once 8 bytes are there, its packet once its length is there.
fn read_records(chunks: &[Vec<u8>]) -> Vec<(FrameHeader, Vec<u8>)> {
    let (mut held, mut out) = (Vec::new(), Vec::new());
    for c in chunks {
        held.extend_from_slice(c);
        while let Some(h) = FrameHeader::decode(&held) {
            let end = FrameHeader::BYTES + h.len as usize;
            if held.len() < end {
                break;
            }
            out.push((h, held[FrameHeader::BYTES..end].to_vec()));
            held.drain(..end);
        }
    }
    assert!(held.is_empty(), "{} bytes left over", held.len());
    out
}

/// One stream: records of random lengths (0 to 1 600 bytes) and orders, cut at random.
fn stream_round_trip(r: &mut Fuzz) {
    let records: Vec<(FrameHeader, Vec<u8>)> = (0..1 + r.below(20))
        .map(|_| {
            let body: Vec<u8> = (0..r.below(1601)).map(|_| r.draw() as u8).collect();
            let h = FrameHeader {
                len: body.len() as u32,
                entry_seq: r.draw() as u32,
            };
            (h, body)
        })
        .collect();
    let mut bytes = Vec::new();
    for (h, body) in &records {
        bytes.extend_from_slice(&h.encode());
        bytes.extend_from_slice(body);
    }
    let mut chunks = Vec::new();
    while !bytes.is_empty() {
        let n = (1 + r.below(2000)).min(bytes.len());
        chunks.push(bytes.drain(..n).collect());
    }
    assert_eq!(read_records(&chunks), records);
}

/// Random bytes: a header exactly when 8 or more, and its fields are those bytes.
fn random_header_bytes(r: &mut Fuzz) {
    let bytes: Vec<u8> = (0..r.below(17)).map(|_| r.draw() as u8).collect();
    match FrameHeader::decode(&bytes) {
        Some(h) => {
            assert!(bytes.len() >= FrameHeader::BYTES);
            assert_eq!(h.encode(), bytes[..FrameHeader::BYTES]);
        }
        None => assert!(bytes.len() < FrameHeader::BYTES),
    }
}

/// The record queue against a model: a record comes out once, in order, and only when the
/// stream is delivered past its end.
fn record_queue_against_a_model(r: &mut Fuzz) {
    let mut q = RecordQueue::default();
    let mut model: VecDeque<(u64, u32)> = VecDeque::new();
    let (mut written, mut delivered, mut next) = (0u64, 0u64, 0u32);
    for _ in 0..200 {
        if r.below(2) == 0 {
            let bytes = FrameHeader::BYTES as u64 + r.below(1601) as u64;
            written += bytes;
            assert_eq!(q.push(bytes, next), written);
            model.push_back((written, next));
            next += 1;
        } else {
            // Deliveries move forward within what was written; a stale one (smaller) is legal.
            delivered = match r.below(4) {
                0 => delivered.saturating_sub(r.below(3000) as u64),
                _ => (delivered + r.below(3000) as u64).min(written),
            };
            let want = match model.front() {
                Some(&(end, id)) if end <= delivered => {
                    model.pop_front();
                    Some(id)
                }
                _ => None,
            };
            assert_eq!(q.pop_complete(delivered), want);
        }
        assert_eq!(q.len(), model.len());
    }
}

#[test]
fn framed_streams_read_back_in_any_cut_and_the_record_queue_follows_its_model() {
    let mut r = Fuzz::from_env(2, 0xf4a3);
    let (seconds, seed) = (r.seconds, r.seed);
    let mut runs = 0u64;
    while r.going() {
        let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            stream_round_trip(&mut r);
            random_header_bytes(&mut r);
            record_queue_against_a_model(&mut r);
        }));
        assert!(outcome.is_ok(), "seed {seed}, run {runs}: see the panic above");
        runs += 1;
    }
    println!("fuzz_framing: {runs} rounds in {seconds} s, seed {seed}");
    assert!(runs > 100, "only {runs} rounds in {seconds} s");
}
