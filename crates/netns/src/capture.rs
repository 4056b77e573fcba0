//! Captures on the kernel (`--pcap NODE:IFACE` on netns): dumpcap on the node's interface,
//! inside its namespace, writing pcap (not pcapng, as the simulator writes) from before the
//! first flow starts until the traffic has drained.
//!
//! Interfaces are named as in the simulator ([`Scenario::interface_port`]); on the kernel port
//! N is interface `eN`. dumpcap is Wireshark's capture engine (Debian's package
//! `wireshark-common`, which tshark pulls in).

use crate::backend::NetnsError;
use crate::ns::{self, Netns};
use mpsched_core::packet::PortId;
use mpsched_run::CaptureRequest;
use mpsched_scenario::Scenario;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// How long dumpcap may take to open its interface and write the file's header.
const START_TIMEOUT: Duration = Duration::from_secs(10);
/// How long dumpcap may take to flush and exit once asked to stop.
const STOP_TIMEOUT: Duration = Duration::from_secs(5);

/// Every capture's node and port, or the first one that names nothing, and dumpcap present:
/// checked before anything is made.
pub fn check(sc: &Scenario, captures: &[CaptureRequest]) -> Result<Vec<(usize, PortId)>, NetnsError> {
    let ports = captures
        .iter()
        .map(|c| sc.interface_port(&c.node, &c.iface))
        .collect::<Result<Vec<_>, String>>()
        .map_err(|e| NetnsError::Unsupported(format!("--pcap: {e}")))?;
    if !captures.is_empty() && ns::run("sh", &["-c", "command -v dumpcap"]).is_err() {
        return Err(NetnsError::Missing(
            "--pcap on netns captures with dumpcap, which is not installed (Debian's wireshark-common; \
             scripts/install-deps.sh installs it with tshark)"
                .into(),
        ));
    }
    Ok(ports)
}

/// Start dumpcap on port `port` of namespace `n` as `req` asks, and wait until it has written
/// the file's header (so that the first flow's handshake is in it).
pub fn start(n: &Netns, port: PortId, req: &CaptureRequest) -> Result<Child, NetnsError> {
    // A file left from an earlier run would look like this one's header already written.
    let _ = std::fs::remove_file(&req.path);
    let mut child = Command::new("ip")
        .args([
            "netns",
            "exec",
            n.name(),
            "dumpcap",
            "-q",
            "-P",
            "-i",
            &format!("e{port}"),
        ])
        .args(["-s", &req.snaplen.to_string(), "-w"])
        .arg(&req.path)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| NetnsError::Missing(format!("cannot start dumpcap: {e}")))?;
    let t0 = Instant::now();
    loop {
        if std::fs::metadata(&req.path).is_ok_and(|m| m.len() > 0) {
            return Ok(child);
        }
        if let Ok(Some(_)) = child.try_wait() {
            let mut why = String::new();
            if let Some(mut e) = child.stderr.take() {
                let _ = std::io::Read::read_to_string(&mut e, &mut why);
            }
            return Err(NetnsError::Traffic(format!(
                "dumpcap on {}:e{port} ended before capturing: {}",
                req.node,
                why.trim()
            )));
        }
        if t0.elapsed() > START_TIMEOUT {
            let _ = child.kill();
            let _ = child.wait();
            return Err(NetnsError::Traffic(format!(
                "dumpcap on {}:e{port} had not started after {} s",
                req.node,
                START_TIMEOUT.as_secs()
            )));
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Ask dumpcap to finish (SIGTERM: it flushes and closes the file), killing it if it takes
/// longer than a few seconds; then let everyone read the file, as the simulator's captures
/// (dumpcap makes it readable by its owner, root, only).
pub fn stop(child: &mut Child, path: &std::path::Path) {
    finish(child);
    use std::os::unix::fs::PermissionsExt;
    let _ = std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o644));
}

fn finish(child: &mut Child) {
    // SAFETY: kill(2) on the pid of a child not yet waited for (so not reused).
    unsafe { libc::kill(child.id() as libc::pid_t, libc::SIGTERM) };
    let t0 = Instant::now();
    while t0.elapsed() < STOP_TIMEOUT {
        if let Ok(Some(_)) = child.try_wait() {
            return;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let _ = child.kill();
    let _ = child.wait();
}
