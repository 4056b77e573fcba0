//! `mpsched vectors`: write the conformance vectors from the Rust programs, or check the Rust
//! and eBPF programs against them.

use anyhow::Context;
use mpsched_core::vectors::{compare, fill_expectations, run_rust, standard_sets, VectorSet};
use std::path::{Path, PathBuf};

/// Arguments of `mpsched vectors`.
#[derive(clap::Args)]
pub struct VectorsArgs {
    #[command(subcommand)]
    action: Action,
}

#[derive(clap::Subcommand)]
enum Action {
    /// Write the standard sets, with expectations from the Rust programs, into DIR.
    Write {
        /// Output directory.
        #[arg(default_value = "tests/vectors")]
        dir: PathBuf,
    },
    /// Replay every set in DIR through the Rust programs and (as root) the eBPF programs.
    Check {
        /// Directory of `*.json` sets.
        #[arg(default_value = "tests/vectors")]
        dir: PathBuf,
        /// Only the Rust programs.
        #[arg(long)]
        rust_only: bool,
    },
}

/// Read every `*.json` set in `dir`, in name order.
pub fn read_sets(dir: &Path) -> anyhow::Result<Vec<VectorSet>> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .with_context(|| format!("reading {}", dir.display()))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .collect();
    files.sort();
    files
        .iter()
        .map(|f| {
            let text = std::fs::read_to_string(f).with_context(|| format!("reading {}", f.display()))?;
            serde_json::from_str(&text).with_context(|| format!("parsing {}", f.display()))
        })
        .collect()
}

pub fn vectors(a: VectorsArgs) -> anyhow::Result<()> {
    match a.action {
        Action::Write { dir } => {
            std::fs::create_dir_all(&dir)?;
            for mut set in standard_sets() {
                fill_expectations(&mut set).map_err(anyhow::Error::msg)?;
                let path = dir.join(format!("{}.json", set.name));
                std::fs::write(&path, serde_json::to_string_pretty(&set)? + "\n")?;
                outln!("wrote {} ({} steps)", path.display(), set.steps.len());
            }
            Ok(())
        }
        Action::Check { dir, rust_only } => {
            let sets = read_sets(&dir)?;
            let mut failures = 0;
            for set in &sets {
                let (init, res) = run_rust(set).map_err(anyhow::Error::msg)?;
                let errs = compare(set, &init, &res);
                report("rust", set, &errs)?;
                failures += errs.len();
                if !rust_only {
                    let (init, res) = mpsched_netns::vectors::run_ebpf(set).map_err(anyhow::Error::msg)?;
                    let errs = compare(set, &init, &res);
                    report("ebpf", set, &errs)?;
                    failures += errs.len();
                }
            }
            if failures > 0 {
                anyhow::bail!("{failures} differences");
            }
            Ok(())
        }
    }
}

fn report(who: &str, set: &VectorSet, errs: &[String]) -> anyhow::Result<()> {
    if errs.is_empty() {
        outln!("{who:<4} {:<24} {:>3} steps agree", set.name, set.steps.len());
    } else {
        outln!("{who:<4} {:<24} {} differences:", set.name, errs.len());
        for e in errs.iter().take(20) {
            outln!("     {e}");
        }
    }
    Ok(())
}
