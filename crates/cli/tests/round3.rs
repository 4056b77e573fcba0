//! Issue 45 (reliability round three), the items judged through the command: a shorter run is
//! the same experiment cut short (item 10), and a standard output that cannot take the help is
//! an error (item 11). Each failed on the main branch before the fix.

use std::process::{Command, Output};

fn mpsched(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_mpsched"))
        .args(args)
        .output()
        .expect("runs")
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// `mpsched run SCENARIO --variant ECMP` into `out`, with `--duration` if given; its transfers.
fn ecmp_transfers(scenario: &str, out: &std::path::Path, duration: Option<&str>) -> Vec<(String, f64)> {
    let mut args = vec![
        "run",
        scenario,
        "--variant",
        "ECMP",
        "--no-plot",
        "--out",
        out.to_str().unwrap(),
    ];
    if let Some(d) = duration {
        args.extend(["--duration", d]);
    }
    let o = mpsched(&args);
    assert!(o.status.success(), "{}", stderr(&o));
    transfers(out)
}

/// The transfers of `flows.csv` as (name, start in seconds).
fn transfers(dir: &std::path::Path) -> Vec<(String, f64)> {
    let text = std::fs::read_to_string(dir.join("flows.csv")).unwrap();
    let mut lines = text.lines();
    let header: Vec<&str> = lines.next().unwrap().split(',').collect();
    let col = |name: &str| {
        header
            .iter()
            .position(|h| *h == name)
            .unwrap_or_else(|| panic!("{name}: {header:?}"))
    };
    let (id, start) = (col("id"), col("start_s"));
    lines
        .map(|l| {
            let cells: Vec<&str> = l.split(',').collect();
            (cells[id].to_string(), cells[start].parse().unwrap())
        })
        .collect()
}

/// Item 10: `--duration` kept a workload's flows and squeezed them into the shorter run (the
/// same 351 flows at four times the offered load). Now a run cut at 0.25 s has exactly the
/// full run's transfers that start before 0.25 s, at the same times: the load is the
/// scenario's.
#[test]
fn a_shorter_run_is_the_same_experiment_cut_short() {
    let dir = tempfile::tempdir().unwrap();
    let full = ecmp_transfers("dc/websearch-k4-load", &dir.path().join("full"), None);
    let cut = ecmp_transfers("dc/websearch-k4-load", &dir.path().join("cut"), Some("0.25"));
    let before: Vec<&(String, f64)> = full.iter().filter(|(_, s)| *s < 0.25).collect();
    assert!(
        before.len() > 20 && before.len() * 2 < full.len(),
        "{} of {}",
        before.len(),
        full.len()
    );
    assert_eq!(cut.iter().collect::<Vec<_>>(), before, "the cut run's transfers");
}

/// Item 10: a longer run than the scenario's scaled the timeline up, stretching every flow.
/// Now it is the scenario as if its file said so: the same transfers as a copy of the file with
/// `duration = "2s"`, and `--help` says what the flag does.
#[test]
fn a_longer_run_is_the_file_with_its_duration_set() {
    let dir = tempfile::tempdir().unwrap();
    let text = mpsched_scenario::builtin::find("dc/websearch-k4-load").unwrap().1;
    let file = dir.path().join("two-seconds.toml");
    let edited = text.replacen("duration = \"1s\"", "duration = \"2s\"", 1);
    assert_ne!(edited, text, "the scenario's duration line");
    std::fs::write(&file, edited).unwrap();
    let flag = ecmp_transfers("dc/websearch-k4-load", &dir.path().join("flag"), Some("2"));
    let edit = ecmp_transfers(file.to_str().unwrap(), &dir.path().join("edit"), None);
    assert_eq!(flag, edit);
    let help = String::from_utf8(mpsched(&["run", "--help"]).stdout).unwrap();
    assert!(help.contains("same experiment stopped earlier"), "{help}");
}

/// Item 11: `mpsched --help >/dev/full` exited 0 having written nothing (clap drops the
/// write's error); so did `--version`. A help that reached its reader still exits 0, and a
/// usage error still exits 2.
#[test]
fn help_that_cannot_be_written_is_an_error() {
    let full = std::fs::OpenOptions::new().write(true).open("/dev/full").unwrap();
    for args in [&["--help"][..], &["--version"], &["run", "--help"]] {
        let o = Command::new(env!("CARGO_BIN_EXE_mpsched"))
            .args(args)
            .stdout(full.try_clone().unwrap())
            .output()
            .unwrap();
        assert_eq!(o.status.code(), Some(1), "{args:?}: {}", stderr(&o));
        assert!(stderr(&o).contains("cannot write to standard output"), "{}", stderr(&o));
        assert!(!stderr(&o).contains("panicked"), "{}", stderr(&o));
    }
    let o = mpsched(&["--help"]);
    assert!(o.status.success() && String::from_utf8_lossy(&o.stdout).contains("Usage"));
    assert_eq!(mpsched(&["--no-such-flag"]).status.code(), Some(2));
    assert_eq!(
        mpsched(&[]).status.code(),
        Some(2),
        "no subcommand: the help on stderr, exit 2"
    );
}
