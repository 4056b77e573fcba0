//! Removing what runs that did not finish left behind (`mpsched clean`).

use super::{NetnsError, NS_PREFIX};
use crate::ns;
use std::time::Duration;

/// The process that made namespace `name`, from its name (`mps-PIDxRAND-NODE`, or
/// `mps-probe-PIDxRAND`); None for a name of another form (an older version's).
pub fn owner_pid(name: &str) -> Option<u32> {
    let rest = name.strip_prefix(NS_PREFIX)?;
    let rest = rest.strip_prefix("probe-").unwrap_or(rest);
    rest.split_once('x')?.0.parse().ok()
}

/// Namespaces left by runs that did not finish: this backend's names whose owning process is
/// gone (killed with SIGKILL, or the machine lost power), or that carry no owner. A run in
/// progress, this one or another, is not among them.
pub fn leftovers() -> Vec<String> {
    ns::list()
        .into_iter()
        .filter(|n| n.starts_with(NS_PREFIX))
        .filter(|n| !owner_pid(n).is_some_and(|pid| std::path::Path::new(&format!("/proc/{pid}")).exists()))
        .collect()
}

/// What [`clean`] removed.
#[derive(Debug, Default)]
pub struct Cleaned {
    /// Namespaces deleted (their interfaces, qdiscs and attached programs with them).
    pub namespaces: Vec<String>,
    /// Processes killed inside them (iperf3 servers and clients, switch processes).
    pub processes: usize,
    /// Files in the temporary directory named after them (a switch process's program, output
    /// and sockets: `NAMESPACE.*`).
    pub files: usize,
}

/// Remove the files in the temporary directory whose names start with `namespace.`.
pub(super) fn remove_files_named_after(namespace: &str) -> usize {
    let prefix = format!("{namespace}.");
    let Ok(entries) = std::fs::read_dir(std::env::temp_dir()) else {
        return 0;
    };
    entries
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().starts_with(&prefix))
        .filter(|e| std::fs::remove_file(e.path()).is_ok())
        .count()
}

/// Remove what [`leftovers`] finds: kill every process inside each namespace, then delete it,
/// which takes its interfaces, their qdiscs and the eBPF programs attached to them (the
/// programs and maps are freed once nothing holds them; nothing of ours is pinned).
pub fn clean() -> Result<Cleaned, NetnsError> {
    let mut done = Cleaned::default();
    for name in leftovers() {
        let pids = ns::ip(&["netns", "pids", &name])
            .map(|o| String::from_utf8_lossy(&o.stdout).into_owned())
            .unwrap_or_default();
        let mut killed = Vec::new();
        for pid in pids.split_whitespace().filter_map(|p| p.parse::<i32>().ok()) {
            // SAFETY: kill(2) with a pid the kernel listed in the namespace; no memory involved.
            if unsafe { libc::kill(pid, libc::SIGKILL) } == 0 {
                done.processes += 1;
                killed.push(pid);
            }
        }
        // Gone, not only signalled: a switch process with many threads takes a moment to exit.
        let deadline = std::time::Instant::now() + Duration::from_secs(5);
        while killed
            .iter()
            .any(|p| std::path::Path::new(&format!("/proc/{p}")).exists())
            && std::time::Instant::now() < deadline
        {
            std::thread::sleep(Duration::from_millis(10));
        }
        ns::ip(&["netns", "del", &name])?;
        done.files += remove_files_named_after(&name);
        done.namespaces.push(name);
    }
    Ok(done)
}
