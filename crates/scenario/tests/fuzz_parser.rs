//! Fuzzing the scenario parser and validator: valid scenarios (the built-ins and the hardening
//! fixtures) mutated at random, line- and byte-wise, must come back as a scenario or a
//! `ScenarioError`: never a panic, never an allocation above a bound.
//!
//! In the test suite it runs for `FUZZ_SECONDS` (default 5); for a long run:
//! `FUZZ_SECONDS=600 cargo test --release -p mpsched-scenario --test fuzz_parser -- --nocapture`.
//! `FUZZ_SEED` picks the sequence. A failing input is written to the temporary folder and its
//! path printed.

use mpsched_scenario::builtin::BUILTIN;
use mpsched_scenario::Scenario;
use mpsched_testkit::fuzz::Fuzz;
use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering};

/// Bytes allocated now and at most, across the process.
static LIVE: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);

/// The system allocator, counting.
struct Counting;

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let live = LIVE.fetch_add(layout.size(), Ordering::Relaxed) + layout.size();
        PEAK.fetch_max(live, Ordering::Relaxed);
        // SAFETY: forwarded unchanged to the system allocator.
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        LIVE.fetch_sub(layout.size(), Ordering::Relaxed);
        // SAFETY: `ptr` came from `alloc` above with this layout.
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static ALLOC: Counting = Counting;

/// Most bytes the parser, the validator and the control plane (`wiring`) may hold at once for
/// inputs of a few kilobytes. The largest term is the control plane's routes and switch tables,
/// bounded at validation by `MAX_CONTROL_PLANE_BYTES` (256 MiB), which a generated fat tree
/// reaches from a one-line change (`k = 30` in the built-in fat tree held 330 MB when the bound
/// was 16 384 nodes and routes were dense).
const PEAK_BOUND_BYTES: usize = 512 << 20;

/// Values that tend to find edges: zero, huge, negative, odd units, odd names.
const SPLICES: &[&str] = &[
    "0",
    "1",
    "-1",
    "4294967296",
    "18446744073709551616",
    "1e309",
    "\"\"",
    "\"0s\"",
    "\"1ps\"",
    "\"1ns\"",
    "\"0bps\"",
    "\"1bps\"",
    "\"99999999Tbps\"",
    "\"0B\"",
    "\"4GiB\"",
    "\"../x\"",
    "\"a/b\"",
    "\"h1\"",
    "\"s1\"",
    "[]",
    "[\"\"]",
    "{}",
    "true",
    "nan",
    "inf",
    "\"rs\"",
    "\"wrr\"",
    "\"dwrr\"",
    "\"afmt\"",
    "\"tcp\"",
    "\"udp\"",
    "[[flow]]",
    "[[link]]",
    "[[node]]",
    "[[path]]",
    "[[split]]",
    "[[variant]]",
    "[[tunnel]]",
    "[tcp]",
    "[split.dwrr]",
    "name = \"x\"",
    "queue_pkts = 0",
    "flow_table_entries = 4000000000",
    "sample_interval = \"1ps\"",
    "weights = [0, 65535]",
    "shares = [100, 100]",
    "[topology]",
    "[topology.core_links]",
    "k = 64",
    "k = 30",
    "hosts_per_tor = 100000",
    "down = [[\"tor0\", \"core0\"]]",
    "routing = \"ecmp\"",
    "[[workload]]",
    "cdf = \"/dev/zero\"",
    "cdf = \"websearch\"",
    "load = 1e-9",
    "pattern = \"permutation\"",
    "[sweep]",
    "parameter = \"workload.load\"",
    "parameter = \"..\"",
    "values = []",
    "seeds = [0, 18446744073709551615]",
    "variants = [\"nope\"]",
    "routing = \"shortest\"",
    "[[failure]]",
    "at = \"1ms\"",
    "reroute_after = \"1000000s\"",
    "arrivals = \"once\"",
    "capacity = \"1bps\"",
    "kind = \"three-tier\"",
    "pods = 1000000",
    "cores = 0",
];

fn mutate(text: &str, rng: &mut Fuzz) -> String {
    let mut lines: Vec<String> = text.lines().map(str::to_string).collect();
    for _ in 0..1 + rng.below(4) {
        let n = lines.len().max(1);
        match rng.below(7) {
            0 if !lines.is_empty() => {
                lines.remove(rng.below(n));
            }
            1 if !lines.is_empty() => {
                let l = lines[rng.below(n)].clone();
                lines.insert(rng.below(n), l);
            }
            2 if !lines.is_empty() => {
                // Replace a value.
                let i = rng.below(n);
                if let Some((k, _)) = lines[i].split_once('=') {
                    lines[i] = format!("{k}= {}", SPLICES[rng.below(SPLICES.len())]);
                }
            }
            3 => lines.insert(rng.below(n), SPLICES[rng.below(SPLICES.len())].to_string()),
            4 if !lines.is_empty() => {
                // A byte changed, removed or repeated.
                let i = rng.below(n);
                let mut b = lines[i].clone().into_bytes();
                if !b.is_empty() {
                    let j = rng.below(b.len());
                    match rng.below(3) {
                        0 => b[j] = (rng.draw() % 128) as u8,
                        1 => {
                            b.remove(j);
                        }
                        _ => b.insert(j, b[j]),
                    }
                }
                lines[i] = String::from_utf8_lossy(&b).into_owned();
            }
            5 if lines.len() > 1 => {
                let (a, b) = (rng.below(n), rng.below(n));
                lines.swap(a, b);
            }
            _ => {
                // A block of lines repeated: duplicate tables and entries.
                let a = rng.below(n);
                let b = (a + 1 + rng.below(8)).min(lines.len());
                let block: Vec<String> = lines[a..b].to_vec();
                let at = rng.below(n);
                for (k, l) in block.into_iter().enumerate() {
                    lines.insert((at + k).min(lines.len()), l);
                }
            }
        }
    }
    lines.join("\n")
}

fn corpus() -> Vec<String> {
    let mut c: Vec<String> = BUILTIN.iter().map(|(_, _, text)| text.to_string()).collect();
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../cli/tests/fixtures/hardening");
    if let Ok(entries) = std::fs::read_dir(dir) {
        let mut paths: Vec<_> = entries.flatten().map(|e| e.path()).collect();
        paths.sort();
        c.extend(paths.iter().filter_map(|p| std::fs::read_to_string(p).ok()));
    }
    c
}

#[test]
fn mutated_scenarios_are_refused_or_accepted_never_a_panic_or_a_huge_allocation() {
    let mut rng = Fuzz::from_env(5, 0x5eed);
    let (seconds, seed) = (rng.seconds, rng.seed);
    let corpus = corpus();
    assert!(corpus.len() >= 10, "the corpus has the built-in scenarios");
    let (mut runs, mut accepted) = (0u64, 0u64);
    std::panic::set_hook(Box::new(|_| {}));
    while rng.going() {
        let input = mutate(&corpus[rng.below(corpus.len())], &mut rng);
        let base = LIVE.load(Ordering::Relaxed);
        PEAK.store(base, Ordering::Relaxed);
        let outcome = std::panic::catch_unwind(|| {
            Scenario::from_toml(&input, "fuzz.toml").map(|sc| {
                // What the CLI does next with an accepted scenario.
                let _ = sc.wiring();
                sc.variant_names().iter().all(|v| sc.with_variant(v).is_ok())
            })
        });
        let held = PEAK.load(Ordering::Relaxed).saturating_sub(base);
        let failure = match &outcome {
            Err(_) => Some("panicked".to_string()),
            Ok(_) if held > PEAK_BOUND_BYTES => Some(format!("held {held} bytes")),
            _ => None,
        };
        if let Some(what) = failure {
            let path = std::env::temp_dir().join(format!("mpsched-fuzz-{seed}-{runs}.toml"));
            std::fs::write(&path, &input).unwrap();
            let _ = std::panic::take_hook();
            panic!("input {} {what} (seed {seed}, run {runs})", path.display());
        }
        accepted += u64::from(matches!(outcome, Ok(Ok(_))));
        runs += 1;
    }
    let _ = std::panic::take_hook();
    println!("fuzz: {runs} inputs in {seconds} s, {accepted} accepted, seed {seed}");
    assert!(runs > 0);
}
