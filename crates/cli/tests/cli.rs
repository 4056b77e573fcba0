//! The `mpsched` command as a user runs it.

use std::path::Path;
use std::process::{Command, Output};

fn mpsched(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_mpsched"))
        .args(args)
        .output()
        .expect("runs")
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// A fresh folder under the temporary directory, removed when the guard drops.
fn tmpdir(name: &str) -> tempfile::TempDir {
    tempfile::Builder::new()
        .prefix(&format!("mpsched-cli-{name}-"))
        .tempdir()
        .unwrap()
}

fn trace_paths(args: &[&str]) -> Vec<u64> {
    let o = mpsched(args);
    assert!(o.status.success(), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_str(&stdout(&o)).expect("one JSON object");
    v["paths"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_u64().unwrap())
        .collect()
}

#[test]
fn trace_wrr_prints_the_papers_sequences() {
    assert_eq!(
        trace_paths(&[
            "trace",
            "--scheduler",
            "wrr",
            "--weights",
            "2,1",
            "--packets",
            "6",
            "--json"
        ]),
        [1, 1, 2, 1, 1, 2]
    );
    assert_eq!(
        trace_paths(&[
            "trace",
            "--scheduler",
            "wrr",
            "--weights",
            "2,4",
            "--packets",
            "12",
            "--json"
        ]),
        [2, 2, 1, 2, 1, 2, 2, 2, 1, 2, 1, 2]
    );
    let text = stdout(&mpsched(&[
        "trace",
        "--scheduler",
        "wrr",
        "--weights",
        "2,4",
        "--packets",
        "3",
    ]));
    assert_eq!(text.lines().count(), 3);
    assert!(text.lines().next().unwrap().ends_with("path 2"));
}

#[test]
fn trace_dwrr_without_congestion_is_wrr_and_rs_follows_its_seed() {
    let w = trace_paths(&[
        "trace",
        "--scheduler",
        "wrr",
        "--weights",
        "3,1,2",
        "--packets",
        "30",
        "--json",
    ]);
    let d = trace_paths(&[
        "trace",
        "--scheduler",
        "dwrr",
        "--weights",
        "3,1,2",
        "--packets",
        "30",
        "--json",
    ]);
    assert_eq!(w, d);
    let rs = |seed: &str| {
        trace_paths(&[
            "trace",
            "--scheduler",
            "rs",
            "--shares",
            "67,33",
            "--seed",
            seed,
            "--packets",
            "50",
            "--json",
        ])
    };
    let (a, b, c) = (rs("4"), rs("4"), rs("5"));
    assert_eq!(a, b);
    assert_ne!(a, c);
    assert!(a.iter().all(|&p| p == 1 || p == 2));
}

#[test]
fn trace_refuses_bad_input_with_exit_code_2() {
    let o = mpsched(&["trace", "--scheduler", "wrr", "--packets", "3"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("--weights"));
    let o = mpsched(&["trace", "--scheduler", "wfq", "--weights", "1,1"]);
    assert_eq!(o.status.code(), Some(2));
}

#[test]
fn an_invalid_scenario_names_file_and_field_and_exits_2_without_a_panic() {
    let dir_guard = tmpdir("invalid");
    let dir = dir_guard.path();
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scenarios/motohashi2022/s1-homogeneous.toml");
    let text = std::fs::read_to_string(src)
        .unwrap()
        .replacen("rate = \"4Mbps\"", "rate = \"fast\"", 1);
    let bad = dir.join("bad.toml");
    std::fs::write(&bad, text).unwrap();
    let o = mpsched(&["run", bad.to_str().unwrap(), "--out", dir.join("o").to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2));
    let e = stderr(&o);
    assert!(
        e.contains("bad.toml") && e.contains("link[2].rate") && e.contains("expected a rate"),
        "{e}"
    );
    assert!(!e.contains("panicked") && !e.contains("backtrace"), "{e}");
    let o = mpsched(&["run", "no-such-scenario"]);
    assert_eq!(o.status.code(), Some(2));
    std::fs::write(&bad, "[scenario]\nname = 3\n").unwrap();
    let o = mpsched(&["run", bad.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("bad.toml"), "{}", stderr(&o));
}

#[test]
fn run_writes_summary_timeseries_plot_and_pcap_and_repeats_byte_for_byte() {
    let dir_guard = tmpdir("run");
    let dir = dir_guard.path();
    let run = |out: &Path| {
        let o = mpsched(&[
            "run",
            // Cut after flow 2 has started (at 20 s): both flows in the series.
            "--duration",
            "24",
            "--out",
            out.to_str().unwrap(),
            "--pcap",
            "ap4:ap3",
        ]);
        assert!(o.status.success(), "{}", stderr(&o));
        stdout(&o)
    };
    let (a, b) = (dir.join("a"), dir.join("b"));
    let table = run(&a);
    assert!(table.contains("flow1") && table.contains("path2"), "{table}");
    run(&b);
    let summary = std::fs::read(a.join("summary.json")).unwrap();
    assert_eq!(
        summary,
        std::fs::read(b.join("summary.json")).unwrap(),
        "same scenario and seed, same bytes"
    );
    let v: serde_json::Value = serde_json::from_slice(&summary).unwrap();
    for k in [
        "scenario",
        "backend",
        "seed",
        "duration_s",
        "flows",
        "paths",
        "repetitions",
    ] {
        assert!(v.get(k).is_some(), "summary.json lacks `{k}`");
    }
    assert_eq!(v["backend"], "sim");
    assert_eq!(v["duration_s"], 24.0);
    for k in ["id", "offered_mbps", "delivered_mbps", "loss_pct", "mean_owd_ms"] {
        assert!(v["flows"][0].get(k).is_some(), "flow lacks `{k}`");
    }
    assert!(v["paths"][0].get("mean_mbps").is_some());
    let csv = std::fs::read_to_string(a.join("timeseries.csv")).unwrap();
    assert!(csv.starts_with("time_s,path1_mbps,path2_mbps,flow1_mbps,flow2_mbps"));
    assert_eq!(csv.lines().count(), 25);
    let png = std::fs::read(a.join("throughput.png")).unwrap();
    assert_eq!(&png[..8], b"\x89PNG\r\n\x1a\n");
    let pcap = std::fs::read(a.join("ap4-ap3.pcap")).unwrap();
    let magic = 0xa1b2_3c4du32;
    assert!(
        pcap[..4] == magic.to_be_bytes() || pcap[..4] == magic.to_le_bytes(),
        "nanosecond pcap magic"
    );
    assert!(pcap.len() > 1000);
}

#[test]
fn list_shows_scenarios_and_schedulers() {
    let o = mpsched(&["list"]);
    assert!(o.status.success());
    let s = stdout(&o);
    for x in [
        "s1-homogeneous",
        "s2-heterogeneous",
        "s3a-dwrr-input-rate",
        "s3b-dwrr-two-flows",
        "Fig. 11",
        "dwrr",
        "ecmp",
    ] {
        assert!(s.contains(x), "list lacks {x}:\n{s}");
    }
}

#[test]
fn an_unavailable_backend_is_a_clear_error() {
    let o = mpsched(&["run", "--backend", "p4"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("backend `p4`"));
}

/// Rate-controlled UDP transfers run in the simulator only: the kernel backends refuse them by
/// name before anything is made (no root needed to be told).
#[test]
fn the_kernel_backends_refuse_paced_transfers_by_name() {
    let dir = tmpdir("paced-kernel");
    let out = dir.path().join("out");
    for backend in ["netns", "bmv2"] {
        let o = mpsched(&[
            "run",
            "pmqecn2024/dc-dcqcn-fat-tree",
            "--backend",
            backend,
            "--variant",
            "DCQCN",
            "--out",
            out.to_str().unwrap(),
        ]);
        assert_eq!(o.status.code(), Some(2), "{backend}: {}", stderr(&o));
        let err = stderr(&o);
        assert!(
            err.contains("rate-controlled UDP transfer") && err.contains("`ws-0`"),
            "{backend}: {err}"
        );
    }
}

/// #11 item 5: `mpsched sweep` runs a sweep on every core and writes one table, CSV and plot;
/// shards and `--collect` give the same table as one run; a bad value is refused before
/// anything runs.
#[test]
fn a_sweep_runs_in_one_command_and_shards_collect_to_the_same_table() {
    let common = [
        "sweep",
        "--values",
        "0.2,0.6",
        "--seeds",
        "1-2",
        "--set",
        "scenario.duration=200ms",
        "--set",
        "workload.stop=100ms",
    ];
    let whole = tmpdir("sweep-whole");
    let o = mpsched(&[&common[..], &["--jobs", "2", "--out", whole.path().to_str().unwrap()]].concat());
    assert!(o.status.success(), "{}", stderr(&o));
    let table = stdout(&o);
    assert!(table.contains("8 points on 2 threads"), "{table}");
    assert!(
        table.contains("FCT mean ms") && table.contains("single-path"),
        "{table}"
    );
    for f in ["sweep.csv", "sweep_summary.csv", "sweep.png", "points/00007.json"] {
        assert!(whole.path().join(f).exists(), "{f} written");
    }
    let summary = std::fs::read_to_string(whole.path().join("sweep_summary.csv")).unwrap();
    assert_eq!(summary.lines().count(), 1 + 4, "two loads x two variants: {summary}");

    let sharded = tmpdir("sweep-shards");
    let out = sharded.path().to_str().unwrap();
    for shard in ["0/2", "1/2"] {
        let o = mpsched(&[&common[..], &["--shard", shard, "--out", out]].concat());
        assert!(o.status.success(), "{}", stderr(&o));
        assert!(stdout(&o).contains("4 points written"), "{}", stdout(&o));
    }
    let o = mpsched(&[&common[..], &["--collect", "--no-plot", "--out", out]].concat());
    assert!(o.status.success(), "{}", stderr(&o));
    let collected = std::fs::read_to_string(sharded.path().join("sweep_summary.csv")).unwrap();
    assert_eq!(collected, summary, "two shards collected give the table of one run");

    let o = mpsched(&["sweep", "--values", "0.5,1.5", "--out", out]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("workload[0].load"), "{}", stderr(&o));
    let o = mpsched(&["sweep", "--param", "workloads.load", "--values", "0.5", "--out", out]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("no `workloads`"), "{}", stderr(&o));
}

/// #29: a shortened sweep of MP-HULA's Fig. 5 (load 0.7, three seeds, arrivals for 200 ms)
/// keeps the order the full sweep shows (docs/reproduction.md): with MPTCP, MP-HULA's mean
/// completion time is below HULA's, which sends a connection's subflows to the same best hop,
/// and below ECMP's.
#[test]
fn a_shortened_mphula_sweep_orders_mp_hula_before_hula_and_ecmp_with_mptcp() {
    let dir = tmpdir("mphula-order");
    let out = dir.path().to_str().unwrap();
    let o = mpsched(&[
        "sweep",
        "mphula2018/fig5-websearch-mptcp-coupled",
        "--values",
        "0.7",
        "--seeds",
        "1-3",
        "--variant",
        "MPTCP-ECMP",
        "--variant",
        "MPTCP-HULA",
        "--variant",
        "MPTCP-MP-HULA",
        "--set",
        "workload.stop=200ms",
        "--no-plot",
        "--out",
        out,
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let csv = std::fs::read_to_string(dir.path().join("sweep_summary.csv")).unwrap();
    let header: Vec<&str> = csv.lines().next().unwrap().split(',').collect();
    let col = header
        .iter()
        .position(|h| *h == "fct_mean_ms_mean")
        .expect("fct_mean_ms_mean");
    let mean = |variant: &str| -> f64 {
        let line = csv
            .lines()
            .find(|l| l.split(',').nth(1) == Some(variant))
            .unwrap_or_else(|| panic!("{variant} in {csv}"));
        line.split(',').nth(col).unwrap().parse().unwrap()
    };
    let (ecmp, hula, mp) = (mean("MPTCP-ECMP"), mean("MPTCP-HULA"), mean("MPTCP-MP-HULA"));
    assert!(mp < hula, "MP-HULA {mp} ms against HULA {hula} ms:\n{csv}");
    assert!(mp < ecmp, "MP-HULA {mp} ms against ECMP {ecmp} ms:\n{csv}");
}

/// A scenario of many paths (40 UEs behind an ATSSS UPF: 80 paths, from the shipped
/// generator) prints at most 8 path columns and says how many more there are, so no line
/// of the run's table grows with the network.
#[test]
fn a_run_with_many_paths_folds_its_path_table() {
    let dir = tmpdir("many-paths");
    let gen = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scripts/gen-atsss-ues.py");
    let g = Command::new("python3")
        .arg(&gen)
        .arg("40")
        .output()
        .expect("python3 runs");
    assert!(g.status.success(), "{}", stderr(&g));
    let file = dir.path().join("ues.toml");
    std::fs::write(&file, &g.stdout).unwrap();
    let out = dir.path().join("out");
    let o = mpsched(&[
        "run",
        file.to_str().unwrap(),
        "--variant",
        "cmon",
        "--duration",
        "0.2",
        "--no-plot",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let text = stdout(&o);
    assert!(text.contains("... and 72 more paths (summary.json)"), "{text}");
    let widest = text.lines().map(str::len).max().unwrap_or(0);
    assert!(widest < 250, "a line of {widest} characters: {text}");
    let s: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("summary.json")).unwrap()).unwrap();
    assert_eq!(
        s["paths"].as_array().unwrap().len(),
        80,
        "every path still in summary.json"
    );
}

/// `mpsched tunnel --check` shows each path's wire number, role and weight, and refuses a
/// weight the scheduler would ignore, naming the field (exit 2).
#[test]
fn tunnel_check_shows_path_numbers_roles_and_weights() {
    let dir = tmpdir("tunnel-check");
    let text = r#"role = "initiator"
key = "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f"
scheduler = "rr"
[device]
name = "mpt0"
address = "10.99.0.1/30"
[[path]]
name = "wifi"
id = 4
local = "10.0.1.1:4789"
remote = "10.0.1.2:4789"
weight = 3
[[path]]
name = "lte"
id = 1
local = "10.0.2.1:4789"
remote = "10.0.2.2:4789"
role = "backup"
"#;
    let f = dir.path().join("a.toml");
    std::fs::write(&f, text).unwrap();
    let o = mpsched(&["tunnel", "--check", f.to_str().unwrap()]);
    assert!(o.status.success(), "{}", stderr(&o));
    let out = stdout(&o);
    assert!(
        out.contains("  path wifi (#4): 10.0.1.1:4789 -> 10.0.1.2:4789, weight 3\n"),
        "{out}"
    );
    assert!(
        out.contains("  path lte (#1): 10.0.2.1:4789 -> 10.0.2.2:4789 (backup)\n"),
        "{out}"
    );
    std::fs::write(&f, text.replace("scheduler = \"rr\"", "scheduler = \"bond\"")).unwrap();
    let o = mpsched(&["tunnel", "--check", f.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("path[0].weight"), "{}", stderr(&o));
}
