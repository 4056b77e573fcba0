//! `mpsched bench`: simulator events per second on a high-rate scenario, scheduler decisions
//! per second, and scenario 3b's wall time, measured in one process so their ratios compare.

use mpsched_core::packet::PacketMeta;
use mpsched_core::rng::SeededRandom;
use mpsched_core::sched::{benchmark_configs, Scheduler, SchedulerConfig};
use mpsched_scenario::{builtin, Scenario};
use mpsched_sim::experiment::high_rate_scenario;
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

fn decisions_per_s(config: &SchedulerConfig, n_paths: usize, count: u64) -> f64 {
    let mut s = Scheduler::new(config, n_paths, Box::new(SeededRandom::new(1))).expect("valid bench config");
    let meta = PacketMeta::udp(0x0a00_0001, 0x0a00_0003, 40_000, 5201, 1512);
    let t = Instant::now();
    for _ in 0..count {
        black_box(s.select(black_box(&meta)));
    }
    count as f64 / t.elapsed().as_secs_f64()
}

pub fn bench(a: BenchArgs) -> anyhow::Result<()> {
    let rate_bps =
        mpsched_scenario::units::parse_rate_bps(&a.rate).map_err(|e| crate::UsageError(format!("--rate: {e}")))?;
    let sc = high_rate_scenario(rate_bps, a.seconds)?;
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

    let configs = benchmark_configs();
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
        println!("  {n:<14} {:>8.1} M decisions/s  {:>6.2} ns/decision", d / 1e6, 1e9 / d);
    }
    Ok(())
}
