//! `mpsched`: run multipath scheduling scenarios, trace schedulers, benchmark. The command is
//! [`main`]; the library holds it so that the Python bindings (`python/`) run scenarios and
//! write their results exactly as `mpsched run` does ([`run`]).

use clap::{Parser, Subcommand};
use std::process::ExitCode;

/// `println!` that returns [`StdoutError`] from the enclosing function instead of panicking
/// when standard output is a closed pipe or a full disk.
macro_rules! outln {
    () => {{
        use std::io::Write as _;
        writeln!(std::io::stdout()).map_err($crate::StdoutError)?
    }};
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        writeln!(std::io::stdout(), $($arg)*).map_err($crate::StdoutError)?
    }};
}

/// `eprintln!` that never panics: a message to a standard error that cannot take it (a full
/// disk, a closed pipe) is lost rather than turned into a panic, whose own report would then
/// fail too and abort the process.
macro_rules! errln {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let _ = writeln!(std::io::stderr(), $($arg)*);
    }};
}

/// `print!` as [`outln!`] is `println!`.
macro_rules! out {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        write!(std::io::stdout(), $($arg)*).map_err($crate::StdoutError)?
    }};
}

mod bench;
mod compare;
pub mod plot;
pub mod run;
pub mod sweep;
mod trace;
mod trafficgen;
mod tunnel;
mod vectors;

/// Multipath packet scheduling on programmable data planes: RS, WRR, DWRR and more, in a
/// deterministic simulator.
#[derive(Parser)]
#[command(name = "mpsched", version, about, long_about = None)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Run a scenario (a file, or a built-in name); with none, the built-in default
    /// (Motohashi et al. scenario 3b with DWRR).
    Run(run::RunArgs),
    /// Run a scenario's sweep (one key over values, times variants, times seeds) on every core,
    /// with one table and plot across it; with none, web-search flows on a k = 4 fat tree at
    /// loads 10 % to 90 %.
    Sweep(sweep::SweepArgs),
    /// Run a scenario on both backends (sim and netns) and print their results side by side.
    Compare(compare::CompareArgs),
    /// Print the path a scheduler chooses for each of a number of packets.
    Trace(trace::TraceArgs),
    /// List the built-in scenarios and the schedulers.
    List,
    /// Validate a scenario (a file, or a built-in name) without running it, and say what it
    /// holds.
    Check(run::CheckArgs),
    /// Remove what kernel runs that did not finish left behind (root): their network
    /// namespaces, the eBPF programs attached in them and the processes running in them.
    Clean,
    /// Benchmark the simulator and the scheduler programs.
    Bench(bench::BenchArgs),
    /// Conformance vectors shared by the Rust and eBPF programs.
    Vectors(vectors::VectorsArgs),
    /// The traffic generator the kernel backend runs fixed-size transfers with (a server per
    /// receiving host, a client per sending host).
    Trafficgen(trafficgen::TrafficgenArgs),
    /// One end of a multipath tunnel between two machines: a TUN device, a UDP socket per
    /// path, a tunnel scheduler, authenticated datagrams, Prometheus counters (root).
    Tunnel(tunnel::TunnelArgs),
}

/// An error the user caused with an input (exit code 2).
#[derive(Debug)]
pub struct UsageError(pub String);

impl std::fmt::Display for UsageError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for UsageError {}

/// Standard output could not be written: a reader that went away (`mpsched list | head -1`)
/// or a full disk. The first ends the program quietly, as Unix tools do; the second is an error.
#[derive(Debug)]
pub struct StdoutError(pub std::io::Error);

impl std::fmt::Display for StdoutError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "cannot write to standard output: {}", self.0)
    }
}

impl std::error::Error for StdoutError {}

/// The signals that stop a command cleanly: Ctrl-C, `kill`, a closed terminal or SSH session
/// (SIGHUP) and Ctrl-\\ (SIGQUIT). A command that makes kernel state removes it, then exits
/// with 128 + the signal's number, as a shell reports a process the signal ended.
pub const STOP_SIGNALS: [i32; 4] = [
    signal_hook::consts::SIGINT,
    signal_hook::consts::SIGTERM,
    signal_hook::consts::SIGHUP,
    signal_hook::consts::SIGQUIT,
];

/// The last of [`STOP_SIGNALS`] received (0 before any), set by the handlers [`stop_flag`]
/// installs.
fn last_stop_signal() -> &'static std::sync::Arc<std::sync::atomic::AtomicUsize> {
    static LAST: std::sync::OnceLock<std::sync::Arc<std::sync::atomic::AtomicUsize>> = std::sync::OnceLock::new();
    LAST.get_or_init(Default::default)
}

/// Set by any of [`STOP_SIGNALS`]; long runs poll it and clean up before exiting. The first
/// call installs the handlers, so a command calls it before it makes anything.
pub fn stop_flag() -> std::sync::Arc<std::sync::atomic::AtomicBool> {
    static FLAG: std::sync::OnceLock<std::sync::Arc<std::sync::atomic::AtomicBool>> = std::sync::OnceLock::new();
    FLAG.get_or_init(|| {
        let f = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        for sig in STOP_SIGNALS {
            let _ = signal_hook::flag::register_usize(sig, last_stop_signal().clone(), sig as usize);
            let _ = signal_hook::flag::register(sig, f.clone());
        }
        f
    })
    .clone()
}

/// The exit code of a command a signal stopped: 128 + the signal's number (130 for SIGINT,
/// also when the stop came from elsewhere).
fn interrupted_exit_code() -> u8 {
    match last_stop_signal().load(std::sync::atomic::Ordering::Relaxed) {
        0 => 130,
        sig => 128u8.saturating_add(sig as u8),
    }
}

/// Parse the command line as clap does, but with `--help` and `--version` written through a
/// checked handle: a standard output that cannot take them (`>/dev/full`) is an error (exit
/// 1), not a silent success.
fn parse_cli() -> Result<Cli, ExitCode> {
    use std::io::Write as _;
    let e = match Cli::try_parse() {
        Ok(cli) => return Ok(cli),
        Err(e) => e,
    };
    // clap chooses the stream (help and version to standard output, the rest to standard
    // error) and the colours; its own `exit` drops the write's error.
    let written = e.print().and_then(|()| std::io::stdout().flush());
    match written {
        Err(io) if e.exit_code() == 0 && io.kind() != std::io::ErrorKind::BrokenPipe => {
            errln!("error: cannot write to standard output: {io}");
            Err(ExitCode::from(1))
        }
        _ => Err(ExitCode::from(e.exit_code().clamp(0, 255) as u8)),
    }
}

/// The `mpsched` command: parse the arguments, run, and map the outcome to an exit code (0,
/// 1 for a failure, 2 for a bad input, 128 + the signal for a run a signal stopped).
pub fn main() -> ExitCode {
    std::panic::set_hook(Box::new(|info| {
        errln!("mpsched: internal error: {info}\nThis is a bug; please report it with the command you ran.");
    }));
    let cli = match parse_cli() {
        Ok(cli) => cli,
        Err(code) => return code,
    };
    let result = match cli.command {
        Command::Run(a) => run::run(a),
        Command::Sweep(a) => sweep::sweep(a),
        Command::Trace(a) => trace::trace(a),
        Command::Compare(a) => compare::compare(a),
        Command::List => run::list(),
        Command::Check(a) => run::check(a),
        Command::Clean => run::clean(),
        Command::Bench(a) => bench::bench(a),
        Command::Vectors(a) => vectors::vectors(a),
        Command::Trafficgen(a) => trafficgen::trafficgen(a),
        Command::Tunnel(a) => tunnel::tunnel(a),
    };
    // What a last `out!` left in the buffer is written now, where its error can be seen.
    let result = result.and_then(|()| {
        use std::io::Write as _;
        std::io::stdout().flush().map_err(|e| StdoutError(e).into())
    });
    match result {
        Ok(()) => ExitCode::SUCCESS,
        // A signal to the whole process group (a closed terminal) reaches the helpers a kernel
        // run is waiting on too (`ip`, `tc`): their failure is the signal's doing, and the run
        // has cleaned up as for an interruption.
        Err(e) if last_stop_signal().load(std::sync::atomic::Ordering::Relaxed) != 0 => {
            errln!("error: interrupted: {e}");
            ExitCode::from(interrupted_exit_code())
        }
        Err(e) => {
            if let Some(StdoutError(io)) = e.downcast_ref() {
                if io.kind() == std::io::ErrorKind::BrokenPipe {
                    return ExitCode::SUCCESS;
                }
                errln!("error: {e}");
                return ExitCode::from(1);
            }
            if let Some(mpsched_netns::backend::NetnsError::Interrupted(_)) = e.downcast_ref() {
                errln!("error: {e}");
                return ExitCode::from(interrupted_exit_code());
            }
            if e.downcast_ref::<mpsched_scenario::ScenarioError>().is_some() || e.downcast_ref::<UsageError>().is_some()
            {
                errln!("error: {e}");
                ExitCode::from(2)
            } else {
                errln!("error: {e:#}");
                ExitCode::from(1)
            }
        }
    }
}
