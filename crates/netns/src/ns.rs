//! Network namespaces: create, enter, run commands in, remove.
//!
//! Namespaces are made with `ip netns add` (so they are visible to `ip netns list` and to the
//! user) and entered with `setns(2)` on a dedicated thread, since a namespace switch applies to
//! the calling thread only.

use std::fs::File;
use std::os::fd::AsRawFd;
use std::process::{Command, Output, Stdio};

/// Errors of namespace and command handling.
#[derive(Debug, thiserror::Error)]
pub enum NsError {
    /// A command could not be started.
    #[error("cannot run `{cmd}`: {source}")]
    Spawn {
        /// The command.
        cmd: String,
        /// Why.
        source: std::io::Error,
    },
    /// A command failed.
    #[error("`{cmd}` failed: {stderr}")]
    Failed {
        /// The command.
        cmd: String,
        /// What it said.
        stderr: String,
    },
    /// setns(2) failed.
    #[error("cannot enter namespace {name}: {source}")]
    Enter {
        /// Namespace.
        name: String,
        /// Why.
        source: std::io::Error,
    },
}

/// Run a command and return its output, failing with its stderr.
pub fn run(cmd: &str, args: &[&str]) -> Result<Output, NsError> {
    let shown = format!("{cmd} {}", args.join(" "));
    let out = Command::new(cmd)
        .args(args)
        .stdin(Stdio::null())
        .output()
        .map_err(|source| NsError::Spawn {
            cmd: shown.clone(),
            source,
        })?;
    if !out.status.success() {
        return Err(NsError::Failed {
            cmd: shown,
            stderr: String::from_utf8_lossy(&out.stderr).trim().to_string(),
        });
    }
    Ok(out)
}

/// `ip` with arguments.
pub fn ip(args: &[&str]) -> Result<Output, NsError> {
    run("ip", args)
}

/// Names of the namespaces `ip netns list` shows.
pub fn list() -> Vec<String> {
    ip(&["netns", "list"])
        .map(|o| {
            String::from_utf8_lossy(&o.stdout)
                .lines()
                .filter_map(|l| l.split_whitespace().next().map(str::to_string))
                .collect()
        })
        .unwrap_or_default()
}

/// A network namespace this process created; removed on drop.
#[derive(Debug)]
pub struct Netns {
    name: String,
}

impl Netns {
    /// Create namespace `name` with its loopback up.
    pub fn create(name: &str) -> Result<Netns, NsError> {
        ip(&["netns", "add", name])?;
        let ns = Netns { name: name.to_string() };
        ns.ip(&["link", "set", "lo", "up"])?;
        Ok(ns)
    }

    /// Its name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// `ip -n NAME args...`.
    pub fn ip(&self, args: &[&str]) -> Result<Output, NsError> {
        let mut a = vec!["-n", self.name.as_str()];
        a.extend_from_slice(args);
        ip(&a)
    }

    /// A command inside the namespace (`ip netns exec NAME cmd args...`).
    pub fn exec(&self, cmd: &str, args: &[&str]) -> Result<Output, NsError> {
        let mut a = vec!["netns", "exec", self.name.as_str(), cmd];
        a.extend_from_slice(args);
        ip(&a)
    }

    /// Make `ifname` carry frames as a wire would: segmentation and receive offloads (TSO, GSO,
    /// GRO) off, so no super-packet bigger than the MTU reaches a qdisc or a switch, and with
    /// `fill_checksums` transmit checksum offload off too (for switches outside the kernel,
    /// [`crate::switchplane::SwitchPlanes::needs_checksummed_frames`]). It also sizes a
    /// user-space switch's input: libpcap gives each slot of its 2 MiB receive ring room for
    /// 64 KiB while such offloads are on, which leaves 32 slots, and a burst of more frames than
    /// that is lost before the switch sees it; with them off a slot fits an MTU frame. Best
    /// effort: where ethtool cannot change a setting the interface keeps its default.
    pub fn frames_as_on_the_wire(&self, ifname: &str, fill_checksums: bool) {
        let mut args = vec!["-K", ifname, "tso", "off", "gso", "off", "gro", "off"];
        if fill_checksums {
            args.extend(["tx", "off"]);
        }
        let _ = self.exec("ethtool", &args);
    }

    /// A command inside the namespace, not waited for; its stdout is piped (read it as it
    /// comes, or a full pipe stalls the command), its stderr discarded.
    pub fn spawn(&self, cmd: &str, args: &[&str]) -> Result<std::process::Child, NsError> {
        let shown = format!("ip netns exec {} {cmd} {}", self.name, args.join(" "));
        Command::new("ip")
            .args(["netns", "exec", &self.name, cmd])
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .map_err(|source| NsError::Spawn { cmd: shown, source })
    }

    /// [`Netns::spawn`] with `input` written to the command's standard input (then closed).
    pub fn spawn_with_input(&self, cmd: &str, args: &[&str], input: String) -> Result<std::process::Child, NsError> {
        let shown = format!("ip netns exec {} {cmd} {}", self.name, args.join(" "));
        let mut child = Command::new("ip")
            .args(["netns", "exec", &self.name, cmd])
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .map_err(|source| NsError::Spawn { cmd: shown, source })?;
        if let Some(mut stdin) = child.stdin.take() {
            // A thread, so that a schedule larger than the pipe cannot block the caller.
            std::thread::spawn(move || {
                use std::io::Write as _;
                let _ = stdin.write_all(input.as_bytes());
            });
        }
        Ok(child)
    }

    /// A sysctl inside the namespace.
    pub fn sysctl(&self, key: &str, value: &str) -> Result<(), NsError> {
        self.exec("sysctl", &["-q", "-w", &format!("{key}={value}")])
            .map(|_| ())
    }

    /// The index of interface `ifname` in this namespace.
    pub fn ifindex(&self, ifname: &str) -> Result<u32, NsError> {
        let out = self.exec("cat", &[&format!("/sys/class/net/{ifname}/ifindex")])?;
        String::from_utf8_lossy(&out.stdout)
            .trim()
            .parse()
            .map_err(|_| NsError::Failed {
                cmd: format!("ifindex of {ifname} in {}", self.name),
                stderr: "not a number".into(),
            })
    }

    /// Run `f` with the calling thread inside this namespace, then switch it back (also if `f`
    /// panics). Netlink sockets, `/proc/thread-self/net` and interface indexes that `f` uses
    /// are this namespace's.
    pub fn enter<T>(&self, f: impl FnOnce() -> T) -> Result<T, NsError> {
        let err = |source| NsError::Enter {
            name: self.name.clone(),
            source,
        };
        let target = File::open(format!("/var/run/netns/{}", self.name)).map_err(err)?;
        enter_fd(&target, f).map_err(err)
    }

    /// Remove the namespace now.
    pub fn remove(self) {
        drop(self)
    }
}

impl Drop for Netns {
    fn drop(&mut self) {
        let _ = ip(&["netns", "del", &self.name]);
    }
}

/// Run `f` with the calling thread in the named namespace `name` (one `ip netns` lists, made
/// by this run or another owner), then switch it back; the namespace is not this call's to
/// remove.
pub fn enter_named<T>(name: &str, f: impl FnOnce() -> T) -> Result<T, NsError> {
    let err = |source| NsError::Enter {
        name: name.to_string(),
        source,
    };
    let target = File::open(format!("/var/run/netns/{name}")).map_err(err)?;
    enter_fd(&target, f).map_err(err)
}

/// A network namespace without a name: nothing in `/var/run/netns` refers to it, so it lives
/// only while this process holds its descriptor (or a process runs inside it). Whatever ends the
/// process (an error, SIGINT, SIGTERM, SIGKILL) ends the namespace, and its interfaces, qdiscs and
/// attached eBPF programs with it: nothing for `mpsched clean` to find. For scratch namespaces
/// that run no processes of their own (the conformance vectors' test nodes).
#[derive(Debug)]
pub struct AnonNetns {
    fd: File,
}

/// Run `f` with the calling thread in the network namespace `target` (an open namespace file),
/// then switch it back, also if `f` panics.
fn enter_fd<T>(target: &File, f: impl FnOnce() -> T) -> std::io::Result<T> {
    let home = File::open("/proc/thread-self/ns/net")?;
    // SAFETY: setns on a valid namespace fd affects only the calling thread.
    if unsafe { libc::setns(target.as_raw_fd(), libc::CLONE_NEWNET) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    struct Back(File);
    impl Drop for Back {
        fn drop(&mut self) {
            // SAFETY: as above; the thread's original namespace.
            unsafe { libc::setns(self.0.as_raw_fd(), libc::CLONE_NEWNET) };
        }
    }
    let _back = Back(home);
    Ok(f())
}

impl AnonNetns {
    /// A new namespace with its loopback up.
    pub fn create() -> Result<AnonNetns, NsError> {
        let err = |source| NsError::Enter {
            name: "a new unnamed namespace".into(),
            source,
        };
        // A thread of its own, which ends there: unshare(2) moves the calling thread only.
        let fd = std::thread::spawn(|| -> std::io::Result<File> {
            // SAFETY: unshare with CLONE_NEWNET affects the calling thread only.
            if unsafe { libc::unshare(libc::CLONE_NEWNET) } != 0 {
                return Err(std::io::Error::last_os_error());
            }
            File::open("/proc/thread-self/ns/net")
        })
        .join()
        .map_err(|_| err(std::io::Error::other("the thread making it panicked")))?
        .map_err(err)?;
        let ns = AnonNetns { fd };
        ns.ip(&["link", "set", "lo", "up"])?;
        Ok(ns)
    }

    /// Run `f` with the calling thread inside the namespace, then switch it back. A process
    /// `f` starts runs inside it too (a child takes its namespaces from the thread that made
    /// it).
    pub fn enter<T>(&self, f: impl FnOnce() -> T) -> Result<T, NsError> {
        enter_fd(&self.fd, f).map_err(|source| NsError::Enter {
            name: "an unnamed namespace".into(),
            source,
        })
    }

    /// `ip args...` inside the namespace.
    pub fn ip(&self, args: &[&str]) -> Result<Output, NsError> {
        self.enter(|| ip(args))?
    }

    /// A sysctl of the namespace's (`net.ipv6.conf.all.disable_ipv6`), written directly: the
    /// files under `/proc/sys/net` are those of the namespace of the thread that opens them.
    pub fn sysctl(&self, key: &str, value: &str) -> Result<(), NsError> {
        let path = format!("/proc/sys/{}", key.replace('.', "/"));
        self.enter(|| std::fs::write(&path, value))?
            .map_err(|e| NsError::Failed {
                cmd: format!("sysctl {key}={value}"),
                stderr: e.to_string(),
            })
    }

    /// The index of interface `ifname` in the namespace.
    pub fn ifindex(&self, ifname: &str) -> Result<u32, NsError> {
        let name = std::ffi::CString::new(ifname).map_err(|_| NsError::Failed {
            cmd: format!("ifindex of {ifname}"),
            stderr: "a NUL in the name".into(),
        })?;
        // SAFETY: a valid NUL-terminated string.
        let i = self.enter(|| unsafe { libc::if_nametoindex(name.as_ptr()) })?;
        if i == 0 {
            return Err(NsError::Failed {
                cmd: format!("ifindex of {ifname}"),
                stderr: std::io::Error::last_os_error().to_string(),
            });
        }
        Ok(i)
    }
}

/// Whether this process runs as root (namespaces and eBPF need it).
pub fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions.
    unsafe { libc::geteuid() == 0 }
}
