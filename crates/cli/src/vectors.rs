//! `mpsched vectors`: write the conformance vectors from the Rust programs, or check the Rust,
//! eBPF and P4 (BMv2) programs against them, one column each.

use crate::UsageError;
use anyhow::Context;
use mpsched_core::vectors::{compare, VectorSet};
use mpsched_programs::vectors::{fill_expectations, run_rust, standard_sets};
use mpsched_scenario::files;
use std::path::{Path, PathBuf};

/// Arguments of `mpsched vectors`.
#[derive(clap::Args)]
pub struct VectorsArgs {
    #[command(subcommand)]
    action: Action,
}

#[derive(clap::Subcommand)]
enum Action {
    /// Write the standard sets (every program's), with expectations from the Rust programs,
    /// into DIR.
    Write {
        /// Output directory.
        #[arg(default_value = "tests/vectors")]
        dir: PathBuf,
    },
    /// Replay every set in DIR through the Rust programs and (as root) the eBPF programs and
    /// the P4 program on BMv2.
    Check {
        /// Directory of `*.json` sets.
        #[arg(default_value = "tests/vectors")]
        dir: PathBuf,
        /// Only the Rust programs.
        #[arg(long)]
        rust_only: bool,
        /// The implementations to check (default: all three; BMv2 is left out with a note when
        /// its toolchain is missing, unless named here).
        #[arg(long = "impl", value_enum)]
        impls: Vec<Impl>,
    },
}

/// Largest vector set file read (the standard sets are under 100 KiB each).
const MAX_SET_FILE_BYTES: u64 = 16 << 20;

/// Read every `*.json` set in `dir`, in name order; a folder without any is an input error, not
/// a check that passes having checked nothing.
pub fn read_sets(dir: &Path) -> anyhow::Result<Vec<VectorSet>> {
    let entries = std::fs::read_dir(dir)
        .map_err(|e| UsageError(format!("cannot read the vectors folder `{}`: {e}", dir.display())))?;
    let mut files: Vec<PathBuf> = entries
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .collect();
    if files.is_empty() {
        return Err(UsageError(format!(
            "no vector sets (*.json) in `{}`: `mpsched vectors write DIR` makes them",
            dir.display()
        ))
        .into());
    }
    files.sort();
    files
        .iter()
        .map(|f| {
            let text = files::read_bounded(f, MAX_SET_FILE_BYTES)
                .map_err(|e| UsageError(format!("cannot read `{}`: {e}", f.display())))?;
            serde_json::from_str(&text).with_context(|| format!("parsing {}", f.display()))
        })
        .collect()
}

/// Write the standard sets into `dir`, naming the path of whatever cannot be written.
fn write_sets(dir: &Path) -> anyhow::Result<()> {
    std::fs::create_dir_all(dir).map_err(|e| UsageError(format!("cannot create `{}`: {e}", dir.display())))?;
    for mut set in standard_sets() {
        fill_expectations(&mut set).map_err(anyhow::Error::msg)?;
        let path = dir.join(format!("{}.json", set.name));
        std::fs::write(&path, serde_json::to_string_pretty(&set)? + "\n")
            .with_context(|| format!("cannot write `{}`", path.display()))?;
        outln!("wrote {} ({} steps)", path.display(), set.steps.len());
    }
    Ok(())
}

pub fn vectors(a: VectorsArgs) -> anyhow::Result<()> {
    match a.action {
        Action::Write { dir } => write_sets(&dir),
        Action::Check { dir, rust_only, impls } => check(&dir, rust_only, impls),
    }
}

/// An implementation of the programs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Impl {
    /// The Rust reference programs (`crates/core`, `crates/programs`).
    Rust,
    /// The eBPF object of each set's program (`bpf/mpsched.bpf.c`, a program's own
    /// `<name>.bpf.c`), with `BPF_PROG_TEST_RUN`; root.
    Ebpf,
    /// The P4 program of each set's program (`p4/mpsched.p4`, a program's own `<name>.p4`) on
    /// `simple_switch`; root and the P4 toolchain.
    Bmv2,
}

impl Impl {
    fn name(self) -> &'static str {
        match self {
            Impl::Rust => "rust",
            Impl::Ebpf => "ebpf",
            Impl::Bmv2 => "bmv2",
        }
    }

    /// Why this implementation has nothing to run for `set`: its program has no eBPF object or
    /// no P4 program (yet). Such a cell reads `none`, with the reason below the table, and is
    /// no failure; a set whose program is unknown is left to [`Impl::run`] to refuse.
    fn absent(self, set: &VectorSet) -> Option<String> {
        let (program, _) = mpsched_programs::vectors::program_of(set).ok()?;
        let (what, stem) = match self {
            Impl::Rust => return None,
            Impl::Ebpf => ("eBPF program", program.ebpf_object()),
            Impl::Bmv2 => ("P4 program", program.p4_program()),
        };
        stem.is_none()
            .then(|| format!("program `{}` has no {what}", program.name()))
    }

    fn run(self, set: &VectorSet) -> Result<Vec<String>, String> {
        let (init, res) = match self {
            Impl::Rust => run_rust(set)?,
            Impl::Ebpf => mpsched_netns::vectors::run_ebpf(set)?,
            Impl::Bmv2 => mpsched_bmv2::vectors::run_bmv2(set)?,
        };
        Ok(compare(set, &init, &res))
    }
}

/// Why implementation `i` cannot run on this machine, if it cannot.
fn unavailable(i: Impl) -> Option<String> {
    match i {
        Impl::Rust => None,
        Impl::Ebpf => (!mpsched_netns::ns::is_root())
            .then(|| "the eBPF programs run with BPF_PROG_TEST_RUN, which needs root".to_string()),
        Impl::Bmv2 => mpsched_bmv2::toolchain::find()
            .and_then(|_| mpsched_bmv2::toolchain::program_json())
            .err()
            .map(|e| format!("BMv2 is not available: {e}"))
            .or_else(|| {
                (!mpsched_netns::ns::is_root()).then(|| "BMv2 runs in a network namespace, which needs root".into())
            }),
    }
}

/// The implementations to check: those named, each of which must be able to run here (a check
/// of one that cannot is refused, not reported as differences), or else every one this machine
/// can run, saying which are left out and why.
fn chosen(rust_only: bool, impls: Vec<Impl>) -> anyhow::Result<Vec<Impl>> {
    if rust_only {
        return Ok(vec![Impl::Rust]);
    }
    if !impls.is_empty() {
        if let Some(why) = impls.iter().find_map(|&i| unavailable(i)) {
            return Err(UsageError(format!("--impl: {why}")).into());
        }
        return Ok(impls);
    }
    let mut out = Vec::new();
    for i in [Impl::Rust, Impl::Ebpf, Impl::Bmv2] {
        match unavailable(i) {
            None => out.push(i),
            Some(why) => outln!("{} left out: {why}", i.name()),
        }
    }
    Ok(out)
}

fn check(dir: &Path, rust_only: bool, impls: Vec<Impl>) -> anyhow::Result<()> {
    // SIGINT / SIGTERM end the check between sets, each set's namespace and switch removed as it
    // ends, instead of killing the process in the middle of one (a simple_switch would outlive it).
    let stop = crate::stop_flag();
    let sets = read_sets(dir)?;
    let impls = chosen(rust_only, impls)?;
    let mut header = format!("{:<24} {:>5}", "set", "steps");
    for i in &impls {
        header += &format!("  {:<10}", i.name());
    }
    outln!("{header}");
    let mut failures = 0;
    let mut details = Vec::new();
    let mut absent = Vec::new();
    for set in &sets {
        let mut line = format!("{:<24} {:>5}", set.name, set.steps.len());
        for &i in &impls {
            if stop.load(std::sync::atomic::Ordering::Relaxed) {
                let run = format!("vectors check (process {})", std::process::id());
                return Err(mpsched_netns::backend::NetnsError::Interrupted(run).into());
            }
            if let Some(why) = i.absent(set) {
                let note = format!("{}: {why}", i.name());
                if !absent.contains(&note) {
                    absent.push(note);
                }
                line += &format!("  {:<10}", "none");
                continue;
            }
            let cell = match i.run(set) {
                Ok(errs) if errs.is_empty() => "agree".to_string(),
                Ok(errs) => {
                    failures += errs.len();
                    details.extend(errs.iter().take(20).map(|e| format!("{} {}: {e}", i.name(), set.name)));
                    format!("{} differ", errs.len())
                }
                Err(e) => {
                    failures += 1;
                    details.push(format!("{} {}: {e}", i.name(), set.name));
                    "error".to_string()
                }
            };
            line += &format!("  {cell:<10}");
        }
        outln!("{line}");
    }
    for d in &details {
        outln!("  {d}");
    }
    for a in &absent {
        outln!("  none: {a}");
    }
    if failures > 0 {
        anyhow::bail!("{failures} differences");
    }
    Ok(())
}
