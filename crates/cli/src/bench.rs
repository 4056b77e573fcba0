//! `mpsched bench`: simulator events per second on a high-rate scenario, scheduler decisions
//! per second, and scenario 3b's wall time, measured in one process so their ratios compare.

use mpsched_core::packet::PacketMeta;
use mpsched_core::rng::SeededRandom;
use mpsched_core::sched::{DwrrParams, Scheduler, SchedulerConfig};
use mpsched_scenario::{builtin, Scenario};
use mpsched_sim::{SimOptions, Simulation};
use std::hint::black_box;
use std::time::Instant;

/// Arguments of `mpsched bench`.
#[derive(clap::Args)]
pub struct BenchArgs {
    /// Simulated seconds of the high-rate scenario.
    #[arg(long, default_value_t = 10)]
    seconds: u64,
    /// Rate of each of the two paths in the high-rate scenario.
    #[arg(long, default_value = "10Gbps")]
    rate: String,
    /// Decisions per scheduler in the decision benchmark.
    #[arg(long, default_value_t = 100_000_000)]
    decisions: u64,
    /// Print one JSON object instead of a table.
    #[arg(long)]
    json: bool,
}

/// The high-rate scenario: the diamond with two paths at `rate`, 1500-byte IP packets, WRR 1:1,
/// offered at 95 % of the two paths' wire capacity.
pub fn high_rate_scenario(rate: &str, seconds: u64) -> anyhow::Result<Scenario> {
    let rate_bps = mpsched_scenario::units::parse_rate_bps(rate)
        .map_err(|e| crate::UsageError(format!("--rate: {e}")))?;
    let payload = 1458u64; // 1500-byte IP packet, 1514 on the wire
    let offered = rate_bps * 2 * 95 / 100 * payload / 1500;
    let host = rate_bps * 4;
    let text = format!(
        r#"
[scenario]
name = "bench-high-rate"
title = "two {rate} paths, 1500-byte packets, WRR 1:1, 95 % load"
duration = "{seconds}s"
[[node]]
name = "h1"
kind = "host"
[[node]]
name = "h2"
kind = "host"
[[node]]
name = "s1"
kind = "switch"
[[node]]
name = "s2"
kind = "switch"
[[node]]
name = "s3"
kind = "switch"
[[node]]
name = "s4"
kind = "switch"
[[link]]
a = "h1"
b = "s1"
rate = "{host}bps"
[[link]]
a = "s1"
b = "s2"
rate = "{rate_bps}bps"
delay = "1us"
[[link]]
a = "s2"
b = "s4"
rate = "{rate_bps}bps"
delay = "1us"
[[link]]
a = "s1"
b = "s3"
rate = "{rate_bps}bps"
delay = "1us"
[[link]]
a = "s3"
b = "s4"
rate = "{rate_bps}bps"
delay = "1us"
[[link]]
a = "s4"
b = "h2"
rate = "{host}bps"
[[path]]
name = "path1"
nodes = ["s1", "s2", "s4"]
[[path]]
name = "path2"
nodes = ["s1", "s3", "s4"]
[[split]]
src = "h1"
dst = "h2"
paths = ["path1", "path2"]
scheduler = "wrr"
weights = [1, 1]
[[flow]]
name = "flow1"
src = "h1"
dst = "h2"
rate = "{offered}bps"
payload = "{payload}B"
"#
    );
    Ok(Scenario::from_toml(&text, "<bench>")?)
}

fn decisions_per_s(config: &SchedulerConfig, n_paths: usize, count: u64) -> f64 {
    let mut s = Scheduler::new(config, n_paths, Box::new(SeededRandom::new(1)))
        .expect("valid bench config");
    let meta = PacketMeta::udp(0x0a00_0001, 0x0a00_0003, 40_000, 5201, 1512);
    let t = Instant::now();
    for _ in 0..count {
        black_box(s.select(black_box(&meta)));
    }
    count as f64 / t.elapsed().as_secs_f64()
}

pub fn bench(a: BenchArgs) -> anyhow::Result<()> {
    let sc = high_rate_scenario(&a.rate, a.seconds)?;
    let t = Instant::now();
    let out = Simulation::new(&sc, &SimOptions::with_seed(1))?.run()?;
    let wall = t.elapsed().as_secs_f64();
    let events_per_s = out.events as f64 / wall;
    let delivered = out.figures.flows[0].delivered_mbps;

    let (path, text) = builtin::find(builtin::DEFAULT).expect("built in");
    let s3b = Scenario::from_toml(text, path)?.with_variant("DWRR")?;
    let t = Instant::now();
    let out3b = Simulation::new(&s3b, &SimOptions::with_seed(1))?.run()?;
    let wall_3b = t.elapsed().as_secs_f64();

    let configs: [(&str, SchedulerConfig, usize); 5] = [
        (
            "wrr (2,1)",
            SchedulerConfig::Wrr {
                weights: vec![2, 1],
            },
            2,
        ),
        (
            "wrr 8 paths",
            SchedulerConfig::Wrr {
                weights: vec![8, 7, 6, 5, 4, 3, 2, 1],
            },
            8,
        ),
        (
            "dwrr (2,1)",
            SchedulerConfig::Dwrr {
                weights: vec![2, 1],
                params: DwrrParams::default(),
            },
            2,
        ),
        (
            "rs (67,33)",
            SchedulerConfig::Rs {
                shares_pct: vec![67, 33],
            },
            2,
        ),
        ("ecmp 4 paths", SchedulerConfig::Ecmp, 4),
    ];
    let decisions: Vec<(String, f64)> = configs
        .iter()
        .map(|(n, c, p)| (n.to_string(), decisions_per_s(c, *p, a.decisions)))
        .collect();

    if a.json {
        let v = serde_json::json!({
            "high_rate": {
                "scenario": sc.title, "simulated_s": a.seconds, "events": out.events, "wall_s": wall,
                "events_per_s": events_per_s, "delivered_mbps": delivered,
                "sim_s_per_wall_s": a.seconds as f64 / wall,
            },
            "scenario_3b_dwrr": { "simulated_s": 100, "events": out3b.events, "wall_s": wall_3b },
            "decisions_per_s": decisions.iter().map(|(n, d)| (n.clone(), serde_json::Value::from(*d))).collect::<serde_json::Map<_, _>>(),
        });
        println!("{}", serde_json::to_string_pretty(&v)?);
        return Ok(());
    }
    println!("simulator, {} for {} s simulated:", sc.title, a.seconds);
    println!(
        "  {} events in {:.2} s wall: {:.1} M events/s ({:.2} simulated s per wall s; flow delivered {:.0} Mbit/s)",
        out.events,
        wall,
        events_per_s / 1e6,
        a.seconds as f64 / wall,
        delivered
    );
    println!(
        "scenario 3b (DWRR), 100 s simulated: {} events in {:.3} s wall",
        out3b.events, wall_3b
    );
    println!("scheduler decisions ({} each):", a.decisions);
    for (n, d) in &decisions {
        println!(
            "  {n:<14} {:>8.1} M decisions/s  {:>6.2} ns/decision",
            d / 1e6,
            1e9 / d
        );
    }
    Ok(())
}
