//! One `simple_switch` process, running a P4 program (`p4/mpsched.p4`, a program's own) on
//! interfaces of a network namespace.

use crate::cli::SwitchCli;
use crate::toolchain::{self, Toolchain};
use crate::Bmv2Error;
use mpsched_netns::ns::Netns;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// How long `simple_switch` may take to load the program and open its Thrift port.
const START_TIMEOUT: Duration = Duration::from_secs(20);

/// What a switch is started with.
#[derive(Clone, Debug)]
pub struct SwitchOptions {
    /// BMv2 port number and interface, per port.
    pub ports: Vec<(u16, String)>,
    /// Thrift port of the runtime interface (inside the namespace, so 9090 can repeat).
    pub thrift_port: u16,
    /// A file for BMv2's per-packet log (`--log-file`), which costs speed; none by default.
    pub log_file: Option<PathBuf>,
    /// The stem of the P4 program to run (`mpsched`, `letflow`: [`toolchain::program_json_of`]).
    pub program: &'static str,
    /// `--priority-queues`: strict-priority queues per port ([`crate::queues`]); None: BMv2's
    /// one queue per port.
    pub priority_queues: Option<u8>,
}

/// A running switch and its CLI; stopped (and its files removed) on drop.
pub struct Bmv2Switch {
    /// The switch's runtime interface (dropped before the process).
    pub cli: SwitchCli,
    process: Process,
}

/// The `simple_switch` process and its files.
struct Process {
    child: Child,
    json: PathBuf,
    output: PathBuf,
}

impl Bmv2Switch {
    /// Start `simple_switch` inside `ns` and connect its CLI. `ns` must have `lo` up (Thrift
    /// listens on it) and the interfaces of `opts.ports`.
    pub fn start(ns: &Netns, opts: &SwitchOptions) -> Result<Bmv2Switch, Bmv2Error> {
        let tools = toolchain::find()?;
        // Named after the namespace, so `mpsched clean` finds them after a SIGKILL.
        let json = std::env::temp_dir().join(format!("{}.bmv2.json", ns.name()));
        std::fs::write(&json, toolchain::program_json_of(opts.program)?)
            .map_err(Bmv2Error::io(format!("writing {}", json.display())))?;
        let output = json.with_extension("out");
        let child = spawn(&tools, ns, opts, &json, &output);
        let mut process = Process {
            child: child.inspect_err(|_| {
                let _ = std::fs::remove_file(&json);
            })?,
            json,
            output,
        };
        process.wait_ready(ns, opts.thrift_port)?;
        let cli = SwitchCli::open(&tools.cli, ns.name(), opts.thrift_port)?;
        Ok(Bmv2Switch { cli, process })
    }

    /// The end of what the switch printed (for error messages).
    pub fn output_tail(&self) -> String {
        self.process.output_tail()
    }
}

impl Process {
    /// Wait until the Thrift port accepts connections, or the switch has ended.
    fn wait_ready(&mut self, ns: &Netns, port: u16) -> Result<(), Bmv2Error> {
        let deadline = Instant::now() + START_TIMEOUT;
        loop {
            if let Ok(Some(status)) = self.child.try_wait() {
                return Err(Bmv2Error::Switch(format!(
                    "simple_switch ended ({status}) before it was ready: {}",
                    self.output_tail()
                )));
            }
            let up = ns.enter(|| std::net::TcpStream::connect(("127.0.0.1", port)).is_ok())?;
            if up {
                return Ok(());
            }
            if Instant::now() > deadline {
                return Err(Bmv2Error::Switch(format!(
                    "simple_switch did not open its Thrift port {port} within {} s: {}",
                    START_TIMEOUT.as_secs(),
                    self.output_tail()
                )));
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// The end of what the switch printed.
    fn output_tail(&self) -> String {
        let text = std::fs::read_to_string(&self.output).unwrap_or_default();
        let lines: Vec<&str> = text.lines().collect();
        lines[lines.len().saturating_sub(10)..].join("\n")
    }
}

fn spawn(
    tools: &Toolchain,
    ns: &Netns,
    opts: &SwitchOptions,
    json: &std::path::Path,
    output: &std::path::Path,
) -> Result<Child, Bmv2Error> {
    let out = std::fs::File::create(output).map_err(Bmv2Error::io(format!("creating {}", output.display())))?;
    let err = out.try_clone().map_err(Bmv2Error::io("duplicating a file"))?;
    let mut cmd = Command::new("ip");
    cmd.args(["netns", "exec", ns.name()]).arg(&tools.simple_switch);
    cmd.args(["--thrift-port", &opts.thrift_port.to_string()]);
    for (port, ifname) in &opts.ports {
        cmd.args(["-i", &format!("{port}@{ifname}")]);
    }
    // Its own notifications socket: BMv2's default path is one per device id, shared by every
    // switch on the machine.
    cmd.arg("--notifications-addr")
        .arg(format!("ipc://{}", json.with_extension("ipc").display()));
    if let Some(log) = &opts.log_file {
        cmd.arg("--log-file").arg(log).arg("--log-flush");
    }
    cmd.arg(json);
    if let Some(n) = opts.priority_queues {
        // A target option: after `--`.
        cmd.args(["--", "--priority-queues", &n.to_string()]);
    }
    cmd.stdin(Stdio::null()).stdout(out).stderr(err);
    cmd.spawn()
        .map_err(Bmv2Error::io(format!("starting {}", tools.simple_switch.display())))
}

impl Drop for Process {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_file(&self.json);
        let _ = std::fs::remove_file(&self.output);
        let _ = std::fs::remove_file(self.json.with_extension("ipc"));
    }
}
