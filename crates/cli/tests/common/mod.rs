//! What the root-only test files share: a harness that reports a test as ignored, with the
//! reason, where this machine cannot run it, and fails it instead under CI=true (libtest-mimic:
//! the standard harness cannot skip at run time, and a test that returns early counts as
//! passed); the binary; scratch folders.

#![allow(dead_code)] // each test file uses its own part

pub use mpsched_testkit::run_or_skip;
use std::path::PathBuf;
use std::process::{Command, Output};

/// Whether run namespace `name` is this test binary's to account for: made by this process or
/// by a child it started (an `mpsched` run), or left by an owner that is gone. Another user's
/// run in progress on the same machine is not, so it cannot fail a leak check.
pub fn made_by_this_test(name: &str) -> bool {
    let Some(pid) = mpsched_netns::backend::owner_pid(name) else {
        return false;
    };
    let me = std::process::id();
    if pid == me {
        return true;
    }
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    // The fields after the command name, which is in parentheses: state, then the parent.
    let ppid = stat.rsplit(") ").next().and_then(|r| r.split_whitespace().nth(1));
    stat.is_empty() || ppid == Some(me.to_string().as_str())
}

/// Remove what earlier runs that never finished left behind (one killed with SIGKILL, a machine
/// that lost power), as `mpsched clean` does, and say so. The root tests count every namespace of
/// ours as a leak of the test that made it; these are no test's of this binary. Runs in progress
/// are never touched; without root, nothing to do.
pub fn clean_leftovers_of_earlier_runs() {
    if !mpsched_netns::ns::is_root() {
        return;
    }
    match mpsched_netns::backend::clean() {
        Ok(done) if !done.namespaces.is_empty() => eprintln!(
            "before the tests: removed {} namespaces left by earlier runs that did not finish, {} processes and \
             {} files with them: {}",
            done.namespaces.len(),
            done.processes,
            done.files,
            done.namespaces.join(", ")
        ),
        Ok(_) => {}
        Err(e) => eprintln!("before the tests: could not remove what earlier runs left: {e}"),
    }
}

/// The `mpsched` binary under test.
pub fn mpsched() -> Command {
    Command::new(env!("CARGO_BIN_EXE_mpsched"))
}

/// An empty scratch path `TMP/PREFIX-PID-NAME` (not created).
pub fn scratch(prefix: &str, name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("{prefix}-{}-{}", std::process::id(), name.replace('/', "_")));
    let _ = std::fs::remove_dir_all(&d);
    d
}

/// Assert that `mpsched` succeeded, showing what it printed if not.
pub fn ok(out: &Output) {
    assert!(
        out.status.success(),
        "mpsched failed: {}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Each flow's mean goodput (Mbit/s) over the samples after `from_s`, from a run's
/// `timeseries.csv`: the steady window, without the first second's fill and without what
/// iperf3 counts after its senders stop (the queues draining, up to 512 packets a class).
#[allow(dead_code)] // not every test binary uses it
pub fn steady_goodput(dir: &std::path::Path, from_s: f64) -> std::collections::BTreeMap<String, f64> {
    let text = std::fs::read_to_string(dir.join("timeseries.csv")).unwrap();
    let mut lines = text.lines();
    let header: Vec<&str> = lines.next().unwrap().split(',').collect();
    let mut sums = vec![0.0; header.len()];
    let mut n = 0.0;
    for line in lines {
        let cells: Vec<f64> = line.split(',').map(|c| c.parse().unwrap_or(0.0)).collect();
        if cells[0] > from_s {
            n += 1.0;
            for (s, c) in sums.iter_mut().zip(&cells) {
                *s += c;
            }
        }
    }
    assert!(n >= 4.0, "{} samples after {from_s} s:\n{text}", n);
    // Goodput columns only (`<flow>_mbps`), not a paced flow's rate nor a link's queue.
    header
        .iter()
        .zip(sums)
        .skip(1)
        .filter(|(h, _)| h.ends_with("_mbps") && !h.ends_with("_rate_mbps"))
        .map(|(h, s)| (h.trim_end_matches("_mbps").to_string(), s / n))
        .collect()
}
