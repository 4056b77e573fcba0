//! The P4 program on BMv2 end to end: every conformance vector agrees between the Rust, eBPF
//! and P4 programs, and a run leaves no switch process, namespace or file behind.
//!
//! These tests need root and the P4 toolchain (BMv2, p4c at build time). Without either they
//! are reported as ignored, with the reason, except under CI=true, where each of them fails
//! instead (libtest-mimic harness, as tests/netns.rs).

use libtest_mimic::{Arguments, Failed, Trial};
use std::path::PathBuf;
use std::process::Command;
use std::sync::Mutex;

/// BMv2 runs share the machine's CPU: one at a time.
static SERIAL: Mutex<()> = Mutex::new(());

/// The tests of this file.
const TESTS: &[(&str, fn())] = &[(
    "every_vector_agrees_across_rust_ebpf_and_bmv2",
    every_vector_agrees_across_rust_ebpf_and_bmv2,
)];

fn main() {
    let args = Arguments::from_args();
    let root = mpsched_netns::ns::is_root();
    let ci = std::env::var("CI").as_deref() == Ok("true");
    let toolchain = mpsched_bmv2::toolchain::find().and_then(|_| mpsched_bmv2::toolchain::program_json());
    let missing = match (&toolchain, root) {
        (Err(e), _) => Some(e.to_string()),
        (Ok(_), false) => Some("they need root (namespaces, veth, simple_switch)".to_string()),
        (Ok(_), true) => None,
    };
    if let (Some(why), false) = (&missing, ci) {
        eprintln!("{} BMv2 tests skipped (reported as ignored): {why}", TESTS.len());
    }
    let trials = TESTS
        .iter()
        .map(|&(name, f)| {
            let ignored = missing.is_some() && !ci;
            let missing = missing.clone();
            Trial::test(name, move || {
                if let Some(why) = missing {
                    return Err(Failed::from(format!(
                        "CI=true: this BMv2 test must run, not skip: {why}"
                    )));
                }
                f();
                Ok(())
            })
            .with_ignored_flag(ignored)
        })
        .collect();
    libtest_mimic::run(&args, trials).exit();
}

fn switch_processes() -> usize {
    let out = Command::new("pgrep").args(["-x", "simple_switch"]).output().unwrap();
    String::from_utf8_lossy(&out.stdout).lines().count()
}

fn our_namespaces() -> Vec<String> {
    let out = Command::new("ip").args(["netns", "list"]).output().unwrap();
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter(|l| l.starts_with(&format!("mpsb-{}-", std::process::id())))
        .map(str::to_string)
        .collect()
}

/// `mpsched vectors check` in three columns, every set agreeing in each; the switches it
/// started are gone afterwards, with their namespaces.
fn every_vector_agrees_across_rust_ebpf_and_bmv2() {
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let switches_before = switch_processes();
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/vectors");
    let out = Command::new(env!("CARGO_BIN_EXE_mpsched"))
        .args(["vectors", "check", "--impl", "rust", "--impl", "ebpf", "--impl", "bmv2"])
        .arg(&dir)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{text}\n{}", String::from_utf8_lossy(&out.stderr));
    let header = text.lines().next().unwrap();
    assert!(
        header.contains("rust") && header.contains("ebpf") && header.contains("bmv2"),
        "{text}"
    );
    let rows: Vec<&str> = text.lines().skip(1).filter(|l| !l.starts_with(' ')).collect();
    assert!(rows.len() >= 12, "{text}");
    let mut steps = 0;
    for row in &rows {
        let cells: Vec<&str> = row.split_whitespace().collect();
        assert_eq!(cells[2..], ["agree", "agree", "agree"], "{row}");
        steps += cells[1].parse::<usize>().unwrap();
    }
    assert!(steps >= 250, "only {steps} steps");
    // In-process too: the library's runner leaves nothing behind either.
    let set: mpsched_core::vectors::VectorSet =
        serde_json::from_str(&std::fs::read_to_string(dir.join("confluence-feedback.json")).unwrap()).unwrap();
    let (init, res) = mpsched_bmv2::vectors::run_bmv2(&set).unwrap();
    assert!(mpsched_core::vectors::compare(&set, &init, &res).is_empty());
    assert_eq!(switch_processes(), switches_before, "a simple_switch outlived its run");
    assert!(our_namespaces().is_empty(), "namespaces left: {:?}", our_namespaces());
}
