//! What several test files of the simulator share.

use std::process::Command;

/// Whether tshark is installed; under CI it must be (scripts/install-deps.sh installs it), and a
/// test that needs it fails instead of skipping.
pub fn have_tshark() -> bool {
    let ok = Command::new("tshark")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if !ok {
        assert!(
            std::env::var("CI").is_err(),
            "tshark is installed by scripts/install-deps.sh; CI must have it"
        );
        eprintln!("skipping: tshark not installed (scripts/install-deps.sh installs it)");
    }
    ok
}
