//! What the binary writes, as other tools read it: the simulator's captures as tshark decodes
//! them. Where tshark is missing these tests are reported as ignored, with the reason; under
//! CI=true they fail instead (`common::run_or_skip`).

mod common;

use common::{mpsched, ok};
use std::process::Command;

const TESTS: &[(&str, fn())] = &[
    (
        "tshark_reads_the_pcap_with_ip_udp_and_ecn",
        tshark_reads_the_pcap_with_ip_udp_and_ecn,
    ),
    (
        "systemd_analyze_verifies_the_tunnel_unit",
        systemd_analyze_verifies_the_tunnel_unit,
    ),
];

fn main() {
    let missing = mpsched_testkit::missing_tool("tshark", &["--version"])
        .or_else(|| mpsched_testkit::missing_tool("systemd-analyze", &["--version"]));
    common::run_or_skip(TESTS, missing, "tshark and systemd-analyze").exit();
}

/// `examples/tunnel/mpsched-tunnel@.service` as `systemd-analyze verify` reads it, with the
/// binary at the path this build has (verify checks that it is executable); and a copy with
/// a mistake in it is refused, so the check can fail.
fn systemd_analyze_verifies_the_tunnel_unit() {
    let unit = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../examples/tunnel/mpsched-tunnel@.service"
    ))
    .unwrap();
    assert!(
        unit.contains("/usr/local/bin/mpsched tunnel /etc/mpsched/%i.toml"),
        "{unit}"
    );
    // `systemctl reload`: the file checked, then SIGHUP, which the daemon takes as a reload.
    assert!(unit.contains("ExecReload=/bin/kill -HUP $MAINPID"), "{unit}");
    let unit = unit.replace("/usr/local/bin/mpsched", env!("CARGO_BIN_EXE_mpsched"));
    let dir = common::scratch("mpsched-tools-test", "systemd");
    std::fs::create_dir_all(&dir).unwrap();
    let verify = |text: &str| {
        std::fs::write(dir.join("mpsched-tunnel@.service"), text).unwrap();
        Command::new("systemd-analyze")
            .arg("verify")
            .arg(dir.join("mpsched-tunnel@a.service"))
            .output()
            .unwrap()
    };
    let o = verify(&unit);
    assert!(
        o.status.success() && !String::from_utf8_lossy(&o.stderr).contains("mpsched-tunnel@"),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let o = verify(&unit.replace("ExecStart=", "ExecStrat="));
    assert!(!o.status.success(), "a unit without ExecStart passed");
    let _ = std::fs::remove_dir_all(&dir);
}

/// Scenario 3b's capture between the access points: IPv4 and UDP that tshark reads, ECT(0) from
/// the station, and CE marks that ap1 set on the way to ap3.
fn tshark_reads_the_pcap_with_ip_udp_and_ecn() {
    let dir = common::scratch("mpsched-tools-test", "tshark");
    let o = mpsched()
        .args(["run", "--duration", "25", "--out"])
        .arg(&dir)
        .args(["--pcap", "ap1:ap3", "--no-plot"])
        .output()
        .unwrap();
    ok(&o);
    let o = Command::new("tshark")
        .arg("-r")
        .arg(dir.join("ap1-ap3.pcap"))
        .args([
            "-T",
            "fields",
            "-e",
            "ip.src",
            "-e",
            "udp.dstport",
            "-e",
            "ip.dsfield.ecn",
        ])
        .output()
        .unwrap();
    ok(&o);
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(out.lines().count() > 1000);
    assert!(out.lines().any(|l| l == "10.0.0.1\t5201\t2"), "ECT(0) data from sta1");
    assert!(
        out.lines().any(|l| l == "10.0.0.1\t5201\t3"),
        "CE-marked data leaving ap1 towards ap3"
    );
    std::fs::remove_dir_all(&dir).ok();
}
