//! What several test files of the simulator share.

use mpsched_run::CaptureRequest;
use mpsched_scenario::results::RunFigures;
use mpsched_scenario::Scenario;
use mpsched_sim::{SimOptions, Simulation};
use std::path::Path;

/// A built-in scenario by name.
pub fn builtin(name: &str) -> Scenario {
    let (path, text) = mpsched_scenario::builtin::find(name).unwrap();
    Scenario::from_toml(text, path).unwrap()
}

/// Run `sc` to the end and return its figures.
pub fn run(sc: &Scenario, opts: &SimOptions) -> RunFigures {
    Simulation::new(sc, opts).unwrap().run().unwrap().figures
}

/// Run `sc` with `seed`, capturing the server's interface into `dir`; the figures and the
/// capture's bytes.
pub fn capture(sc: &Scenario, dir: &Path, seed: u64) -> (RunFigures, Vec<u8>) {
    let mut opts = SimOptions::with_seed(seed);
    let pcap = dir.join(format!("server-{seed}.pcap"));
    opts.captures.push(CaptureRequest {
        node: "server".into(),
        iface: "eth0".into(),
        path: pcap.clone(),
        snaplen: 128,
    });
    let r = run(sc, &opts);
    (r, std::fs::read(pcap).unwrap())
}
