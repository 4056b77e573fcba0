//! `mpsched trace`: the path each packet takes under a scheduler, with no congestion.

use crate::UsageError;
use mpsched_core::packet::PacketMeta;
use mpsched_core::rng::SeededRandom;
use mpsched_core::sched::{Decision, DwrrParams, Scheduler, SchedulerConfig};
use std::io::Write;

/// Arguments of `mpsched trace`.
#[derive(clap::Args)]
pub struct TraceArgs {
    /// rs, wrr, dwrr, ecmp or single.
    #[arg(long)]
    scheduler: String,
    /// Per-path weights (wrr, dwrr), e.g. 2,4.
    #[arg(long, value_delimiter = ',')]
    weights: Vec<u16>,
    /// Per-path shares in percent (rs), e.g. 67,33.
    #[arg(long, value_delimiter = ',')]
    shares: Vec<u32>,
    /// Number of paths when neither weights nor shares give it.
    #[arg(long)]
    paths: Option<usize>,
    /// Number of packets (written as they are decided, so any number runs in constant memory).
    #[arg(long, default_value_t = 12)]
    packets: u64,
    /// Seed of RS's random source.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Print one JSON object (`paths`: the 1-based path of each packet).
    #[arg(long)]
    json: bool,
}

pub fn trace(a: TraceArgs) -> anyhow::Result<()> {
    let (config, n) = match a.scheduler.as_str() {
        "wrr" | "dwrr" => {
            if a.weights.is_empty() {
                return Err(UsageError(format!(
                    "--scheduler {} needs --weights, e.g. --weights 2,1",
                    a.scheduler
                ))
                .into());
            }
            let n = a.weights.len();
            if a.scheduler == "wrr" {
                (
                    SchedulerConfig::Wrr {
                        weights: a.weights.clone(),
                    },
                    n,
                )
            } else {
                (
                    SchedulerConfig::Dwrr {
                        weights: a.weights.clone(),
                        params: DwrrParams::default(),
                    },
                    n,
                )
            }
        }
        "rs" => {
            let shares = if a.shares.is_empty() {
                vec![1; a.paths.unwrap_or(2)]
            } else {
                a.shares.clone()
            };
            let n = shares.len();
            (SchedulerConfig::Rs { shares_pct: shares }, n)
        }
        "ecmp" => (SchedulerConfig::Ecmp, a.paths.unwrap_or(2)),
        "single" => (SchedulerConfig::Single { path: 0 }, a.paths.unwrap_or(2)),
        s => {
            return Err(UsageError(format!(
                "unknown scheduler `{s}`: expected rs, wrr, dwrr, ecmp or single"
            ))
            .into())
        }
    };
    let mut sched =
        Scheduler::new(&config, n, Box::new(SeededRandom::new(a.seed))).map_err(|e| UsageError(e.to_string()))?;
    let rs_ranges = match &sched {
        Scheduler::Rs(rs) => Some(rs.ranges().to_vec()),
        _ => None,
    };
    let meta = PacketMeta::udp(0x0a00_0001, 0x0a00_0003, 40_000, 5201, 1512);
    // Each packet's path is written as it is decided: any --packets runs in constant memory.
    let mut next_path = || match sched.select(&meta) {
        Decision::Path(p) => u32::from(p) + 1,
        Decision::Drop => 0,
    };
    let mut w = std::io::BufWriter::new(std::io::stdout().lock());
    let io = crate::StdoutError;
    if a.json {
        let mut head = serde_json::Map::new();
        head.insert("scheduler".into(), a.scheduler.clone().into());
        if !a.weights.is_empty() {
            head.insert("weights".into(), serde_json::to_value(&a.weights)?);
        }
        if let Some(ranges) = &rs_ranges {
            head.insert("ranges".into(), serde_json::to_value(ranges)?);
            head.insert("seed".into(), a.seed.into());
        }
        // The object's other members, then `"paths": [...]` written number by number.
        let head = serde_json::Value::Object(head).to_string();
        let head = head.strip_suffix('}').unwrap_or(&head);
        write!(w, "{head},\"paths\":[").map_err(io)?;
        for i in 0..a.packets {
            let sep = if i == 0 { "" } else { "," };
            write!(w, "{sep}{}", next_path()).map_err(io)?;
        }
        writeln!(w, "]}}").map_err(io)?;
    } else {
        for i in 0..a.packets {
            writeln!(w, "packet {:>4}  path {}", i + 1, next_path()).map_err(io)?;
        }
    }
    w.flush().map_err(io)?;
    Ok(())
}
