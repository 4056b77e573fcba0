//! What the binary writes, as other tools read it: the simulator's captures as tshark decodes
//! them. Where tshark is missing these tests are reported as ignored, with the reason; under
//! CI=true they fail instead (`common::run_or_skip`).

mod common;

use common::{mpsched, ok};
use std::process::Command;

const TESTS: &[(&str, fn())] = &[(
    "tshark_reads_the_pcap_with_ip_udp_and_ecn",
    tshark_reads_the_pcap_with_ip_udp_and_ecn,
)];

fn main() {
    let missing = mpsched_testkit::missing_tool("tshark", &["--version"]);
    common::run_or_skip(TESTS, missing, "tshark").exit();
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
